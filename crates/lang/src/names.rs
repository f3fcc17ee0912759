//! Address names defined by `AddressInfo` elements, as other elements'
//! arguments see them.
//!
//! Click lets any address argument be a name (`IPEncap(6, mauer, mazu)`),
//! resolved from the `AddressInfo` elements of the configuration; names are
//! local to the compound element that defines them. The runtime configures
//! `AddressInfo` first, [`define`]s its names here, and names the element
//! being configured with [`set_current`] before configuring it; the value
//! parsers in [`crate::args`] ([`crate::args::parse_ip4`],
//! [`crate::args::parse_ip_prefix`], [`crate::args::parse_ether`]) fall back
//! to these names when a word is not a literal address. The table is per
//! thread: configuration happens on one thread, and [`clear`] ends it.
//!
//! Suffixes make the kind explicit, as in Click: `NAME:ip`, `NAME:ipnet`,
//! `NAME:eth`, `NAME:bcast` (all host bits of the prefix set) and `NAME:gw`
//! (the prefix's network address with its lowest bit set); for IPv6,
//! `NAME:ip6` and `NAME:ip6net` ([`crate::args::parse_ip6`] and
//! [`crate::args::parse_ip6_prefix`] fall back to [`ip6`] and [`prefix6`]).

use std::cell::RefCell;
use std::collections::HashMap;

/// What one name stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddressName {
    /// Ethernet address.
    pub ether: Option<[u8; 6]>,
    /// IPv4 address.
    pub ip: Option<[u8; 4]>,
    /// IPv4 prefix, as (address, mask).
    pub prefix: Option<([u8; 4], [u8; 4])>,
    /// IPv6 address.
    pub ip6: Option<[u8; 16]>,
    /// IPv6 prefix, as (address, mask).
    pub prefix6: Option<([u8; 16], [u8; 16])>,
    /// A network interface's addresses, not an `AddressInfo` entry: as a
    /// prefix the bare name is the interface's network (address and
    /// netmask), as in Click.
    pub device: bool,
}

/// The other kinds of names Click's `NameInfo` keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NameKind {
    /// TCP port names (`PortInfo`).
    TcpPort,
    /// UDP port names (`PortInfo`).
    UdpPort,
    /// Annotation names (`AnnotationInfo`): offset in the low 16 bits,
    /// size (0: unknown) in the high 16.
    Annotation,
    /// Spinlock names (`SpinlockInfo`); the value is unused.
    Spinlock,
}

#[derive(Default)]
struct Table {
    /// Keyed by the defining compound's prefix ("" at top level, "c/d"
    /// inside compounds) and the name.
    names: HashMap<(String, String), AddressName>,
    /// Names of other kinds, keyed the same way.
    values: HashMap<(NameKind, String, String), u32>,
    /// Full name of the element being configured.
    current: String,
}

thread_local! {
    static TABLE: RefCell<Table> = RefCell::new(Table::default());
}

/// How a word that no `AddressInfo` defines is tried as a network
/// interface: Click at user level reads a device's addresses when an
/// address argument names it (`ARPQuerier(eth0)`, `$DEV:gw`). Set by the
/// element library, which can ask the kernel; unset, no word is a device.
static DEVICES: std::sync::OnceLock<fn(&str) -> Option<AddressName>> = std::sync::OnceLock::new();

/// Makes `f` the lookup of device names (the first call wins).
pub fn set_device_resolver(f: fn(&str) -> Option<AddressName>) {
    let _ = DEVICES.set(f);
}

fn device(name: &str) -> Option<AddressName> {
    DEVICES.get().and_then(|f| f(name))
}

/// The compound prefix of a full element name (`"a/b/x"` -> `"a/b"`).
fn scope_of(element: &str) -> &str {
    element.rfind('/').map_or("", |k| &element[..k])
}

/// Defines `name` in the scope of the element called `element` (the
/// `AddressInfo` that defines it). A later definition of the same name in
/// the same scope replaces the earlier one.
pub fn define(element: &str, name: &str, def: AddressName) {
    TABLE.with(|t| {
        t.borrow_mut()
            .names
            .insert((scope_of(element).to_string(), name.to_string()), def);
    });
}

/// Names the element whose arguments are parsed next (names resolve in its
/// compound, then each enclosing one).
pub fn set_current(element: &str) {
    TABLE.with(|t| {
        let mut t = t.borrow_mut();
        t.current.clear();
        t.current.push_str(element);
    });
}

/// Forgets every name (end of configuration).
pub fn clear() {
    TABLE.with(|t| *t.borrow_mut() = Table::default());
}

/// Defines a name of another kind (a port, an annotation) in the scope of
/// the element called `element`.
pub fn define_value(kind: NameKind, element: &str, name: &str, value: u32) {
    TABLE.with(|t| {
        t.borrow_mut().values.insert(
            (kind, scope_of(element).to_string(), name.to_string()),
            value,
        );
    });
}

/// The value of a name of another kind visible from the current element:
/// its compound first, then each enclosing one.
pub fn value(kind: NameKind, name: &str) -> Option<u32> {
    TABLE.with(|t| {
        let t = t.borrow();
        if t.values.is_empty() {
            return None;
        }
        let mut scope = scope_of(&t.current);
        loop {
            if let Some(v) = t.values.get(&(kind, scope.to_string(), name.to_string())) {
                return Some(*v);
            }
            if scope.is_empty() {
                return None;
            }
            scope = scope_of(scope);
        }
    })
}

/// The definition of `name` visible from the current element.
pub fn lookup(name: &str) -> Option<AddressName> {
    if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return None;
    }
    let defined = TABLE.with(|t| {
        let t = t.borrow();
        if t.names.is_empty() {
            return None;
        }
        let mut scope = scope_of(&t.current);
        loop {
            if let Some(d) = t.names.get(&(scope.to_string(), name.to_string())) {
                return Some(*d);
            }
            if scope.is_empty() {
                return None;
            }
            scope = scope_of(scope);
        }
    });
    defined.or_else(|| device(name))
}

/// Every name visible from the current element (a compound's names hide
/// those of enclosing compounds), for elements that parse addresses again
/// after configuration (a reconfiguring write handler): they keep this
/// list and parse inside [`with_names`].
pub fn visible() -> Vec<(String, AddressName)> {
    TABLE.with(|t| {
        let t = t.borrow();
        let mut out: Vec<(String, AddressName)> = Vec::new();
        let mut scope = scope_of(&t.current);
        loop {
            for ((sc, name), d) in &t.names {
                if sc == scope && !out.iter().any(|(n, _)| n == name) {
                    out.push((name.clone(), *d));
                }
            }
            if scope.is_empty() {
                break;
            }
            scope = scope_of(scope);
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    })
}

/// Runs `f` with exactly `names` defined (as [`visible`] returned them),
/// then puts the previous table back.
pub fn with_names<R>(names: &[(String, AddressName)], f: impl FnOnce() -> R) -> R {
    let mut t = Table::default();
    for (n, d) in names {
        t.names.insert((String::new(), n.clone()), *d);
    }
    let old = TABLE.with(|cell| std::mem::replace(&mut *cell.borrow_mut(), t));
    let r = f();
    TABLE.with(|cell| *cell.borrow_mut() = old);
    r
}

fn split_suffix(s: &str) -> (&str, &str) {
    match s.rsplit_once(':') {
        Some((n, suf)) if !n.is_empty() && suf.bytes().all(|c| c.is_ascii_alphanumeric()) => {
            (n, suf)
        }
        _ => (s, ""),
    }
}

fn or(a: [u8; 4], b: [u8; 4]) -> [u8; 4] {
    [a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]]
}

fn and(a: [u8; 4], b: [u8; 4]) -> [u8; 4] {
    [a[0] & b[0], a[1] & b[1], a[2] & b[2], a[3] & b[3]]
}

/// `NAME`, `NAME:ip`, `NAME:bcast` or `NAME:gw` as an IPv4 address.
pub fn ip(s: &str) -> Option<[u8; 4]> {
    let (name, suffix) = split_suffix(s.trim());
    let d = lookup(name)?;
    match suffix {
        "" | "ip" => d.ip,
        "bcast" => d.prefix.map(|(a, m)| or(and(a, m), m.map(|b| !b))),
        "gw" => d.prefix.map(|(a, m)| {
            let mut n = and(a, m);
            n[3] |= 1;
            n
        }),
        _ => None,
    }
}

/// `NAME` (its address as a /32 if it has one, else its prefix) or
/// `NAME:ipnet` as an IPv4 prefix.
pub fn prefix(s: &str) -> Option<([u8; 4], [u8; 4])> {
    let (name, suffix) = split_suffix(s.trim());
    let d = lookup(name)?;
    match suffix {
        "" if d.device => d.prefix,
        "" => d.ip.map(|a| (a, [255; 4])).or(d.prefix),
        "ipnet" => d.prefix,
        "ip" | "bcast" | "gw" => ip(s).map(|a| (a, [255; 4])),
        _ => None,
    }
}

/// `NAME` or `NAME:ip6` as an IPv6 address.
pub fn ip6(s: &str) -> Option<[u8; 16]> {
    let (name, suffix) = split_suffix(s.trim());
    let d = lookup(name)?;
    match suffix {
        "" | "ip6" => d.ip6,
        _ => None,
    }
}

/// `NAME` (its IPv6 address as a /128 if it has one, else its IPv6
/// prefix), `NAME:ip6` (the address as a /128) or `NAME:ip6net` (the
/// prefix) as an IPv6 prefix, as Click's prefix arguments that accept bare
/// addresses resolve them. The prefix form `NAME/LEN` resolves through
/// [`ip6`] in [`crate::args::parse_ip6_prefix`].
pub fn prefix6(s: &str) -> Option<([u8; 16], [u8; 16])> {
    let (name, suffix) = split_suffix(s.trim());
    let d = lookup(name)?;
    match suffix {
        "" => d.ip6.map(|a| (a, [0xff; 16])).or(d.prefix6),
        "ip6" => d.ip6.map(|a| (a, [0xff; 16])),
        "ip6net" => d.prefix6,
        _ => None,
    }
}

/// `NAME` or `NAME:eth` as an Ethernet address.
pub fn ether(s: &str) -> Option<[u8; 6]> {
    let (name, suffix) = split_suffix(s.trim());
    let d = lookup(name)?;
    match suffix {
        "" | "eth" => d.ether,
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scoped_names_and_suffixes() {
        clear();
        define(
            "ai",
            "mauer",
            AddressName {
                ip: Some([10, 0, 0, 1]),
                prefix: Some(([10, 0, 0, 1], [255, 255, 255, 0])),
                ether: Some([0, 0x50, 0xba, 0x85, 0x84, 0xa9]),
                ..AddressName::default()
            },
        );
        define(
            "c/ai",
            "mazu",
            AddressName {
                ip: Some([10, 0, 0, 10]),
                ..AddressName::default()
            },
        );
        set_current("enc");
        assert_eq!(ip("mauer"), Some([10, 0, 0, 1]));
        assert_eq!(ip("mauer:bcast"), Some([10, 0, 0, 255]));
        assert_eq!(ip("mauer:gw"), Some([10, 0, 0, 1]));
        assert_eq!(prefix("mauer"), Some(([10, 0, 0, 1], [255; 4])));
        assert_eq!(
            prefix("mauer:ipnet"),
            Some(([10, 0, 0, 1], [255, 255, 255, 0]))
        );
        assert_eq!(ether("mauer:eth"), Some([0, 0x50, 0xba, 0x85, 0x84, 0xa9]));
        assert_eq!(ip("mazu"), None, "defined inside compound c only");
        set_current("c/d/enc");
        assert_eq!(ip("mazu"), Some([10, 0, 0, 10]));
        assert_eq!(ip("mauer"), Some([10, 0, 0, 1]));
        assert_eq!(ip("mauer:eth"), None);
        assert_eq!(crate::args::parse_ip4("mazu"), Ok([10, 0, 0, 10]));
        assert_eq!(
            crate::args::parse_ip_prefix("mauer:ipnet"),
            Ok(([10, 0, 0, 1], [255, 255, 255, 0]))
        );
        clear();
        assert_eq!(
            crate::args::parse_ip4("mazu"),
            Err("expected IP address".to_string())
        );
    }

    #[test]
    fn device_names_come_after_addressinfo_names() {
        clear();
        set_device_resolver(|n| {
            (n == "tdev0").then_some(AddressName {
                ether: Some([2, 0, 0, 0, 0, 7]),
                ip: Some([192, 0, 2, 7]),
                prefix: Some(([192, 0, 2, 7], [255, 255, 255, 0])),
                device: true,
                ..AddressName::default()
            })
        });
        assert_eq!(ip("tdev0"), Some([192, 0, 2, 7]));
        assert_eq!(ip("tdev0:gw"), Some([192, 0, 2, 1]));
        assert_eq!(ip("tdev0:bcast"), Some([192, 0, 2, 255]));
        assert_eq!(prefix("tdev0"), Some(([192, 0, 2, 7], [255, 255, 255, 0])));
        assert_eq!(ether("tdev0"), Some([2, 0, 0, 0, 0, 7]));
        assert_eq!(ip("tdev1"), None);
        // An AddressInfo name hides the device of the same name.
        define(
            "ai",
            "tdev0",
            AddressName {
                ip: Some([10, 0, 0, 1]),
                ..AddressName::default()
            },
        );
        set_current("x");
        assert_eq!(ip("tdev0"), Some([10, 0, 0, 1]));
        assert_eq!(ether("tdev0"), None);
        clear();
    }

    #[test]
    fn ip6_names_and_suffixes() {
        clear();
        let a = crate::args::parse_ip6("2001:db8::1").expect("address");
        let net = crate::args::prefix_mask6(64);
        define(
            "ai",
            "n",
            AddressName {
                ip6: Some(a),
                prefix6: Some((a, net)),
                ..AddressName::default()
            },
        );
        define(
            "ai",
            "lan",
            AddressName {
                prefix6: Some((a, net)),
                ..AddressName::default()
            },
        );
        set_current("x");
        assert_eq!(crate::args::parse_ip6("n"), Ok(a));
        assert_eq!(crate::args::parse_ip6("n:ip6"), Ok(a));
        assert_eq!(crate::args::parse_ip6("n:ip6net").ok(), None);
        assert_eq!(crate::args::parse_ip6("lan").ok(), None);
        assert_eq!(crate::args::parse_ip6_prefix("n"), Ok((a, [0xff; 16])));
        assert_eq!(crate::args::parse_ip6_prefix("n:ip6net"), Ok((a, net)));
        assert_eq!(crate::args::parse_ip6_prefix("lan"), Ok((a, net)));
        assert_eq!(
            crate::args::parse_ip6_prefix("n/48"),
            Ok((a, crate::args::prefix_mask6(48)))
        );
        assert_eq!(ip("n"), None, "no IPv4 address");
        clear();
        assert!(crate::args::parse_ip6("n").is_err());
    }

    #[test]
    fn visible_names_outlive_configuration() {
        clear();
        let a = AddressName {
            ip: Some([1, 0, 0, 2]),
            ..AddressName::default()
        };
        let b = AddressName {
            ip: Some([9, 9, 9, 9]),
            ..AddressName::default()
        };
        define("ai", "a", a);
        define("c/ai", "a", b);
        define("d/ai", "x", b);
        set_current("c/e");
        let seen = visible();
        assert_eq!(seen, vec![("a".to_string(), b)]);
        clear();
        assert_eq!(ip("a"), None);
        assert_eq!(with_names(&seen, || ip("a")), Some([9, 9, 9, 9]));
        assert_eq!(ip("a"), None);
    }
}
