//! `AddressInfo`: names for Ethernet and IP addresses.

use crate::ip::route_table::parse_prefix;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip6, Spec};

/// What one name stands for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressDef {
    /// The name.
    pub name: String,
    /// Its Ethernet address, if one was given.
    pub ether: Option<[u8; 6]>,
    /// Its IPv4 address (a bare address, or the address part of
    /// `ADDR/LEN` when host bits are set).
    pub ip: Option<[u8; 4]>,
    /// Its IPv4 prefix (`ADDR/LEN` or `ADDR/MASK`), as (address, mask).
    pub prefix: Option<([u8; 4], [u8; 4])>,
    /// Its IPv6 address (a bare address, or the address part of
    /// `ADDR/LEN` when host bits are set).
    pub ip6: Option<[u8; 16]>,
    /// Its IPv6 prefix, as (address, mask).
    pub prefix6: Option<([u8; 16], [u8; 16])>,
}

/// Defines address names for the configuration; has no ports.
pub struct AddressInfo {
    defs: Vec<AddressDef>,
}

impl AddressInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AddressInfo")
        .phase(crate::PHASE_INFO)
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "AddressInfo(NAME ADDRESS [ADDRESS...], ...)\n\n\
             Gives names to addresses. Each argument is a name followed by one or more\n\
             addresses: an Ethernet address (00:01:02:03:04:05), an IPv4 address\n\
             (18.26.4.9) or an IPv4 prefix (18.26.4.9/24, which defines both the prefix\n\
             and, since host bits are set, the address), an IPv6 address (2001:db8::1) or\n\
             an IPv6 prefix (2001:db8::1/64, likewise also the address). Later\n\
             single-kind addresses replace earlier ones of the same kind. Elements\n\
             configured later in the same compound (or below it) accept the name\n\
             wherever they read such an address: NAME, or with a suffix naming the\n\
             kind, NAME:eth, NAME:ip, NAME:ipnet, NAME:bcast, NAME:gw, NAME:ip6,\n\
             NAME:ip6net; an IPv6 prefix argument also takes NAME/LEN.\n\n\
             Ports: none.\n\
             Handlers:\n  table (read)  NAME<TAB>ADDRESS lines",
        );

    /// Configures an `AddressInfo`.
    /// Configures an `AddressInfo` and makes its names visible to the
    /// arguments of elements configured after it, within its compound
    /// (see [`pronto_lang::names`]).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let defs = Self::parse_definitions(ctx.config)?;
        for d in &defs {
            pronto_lang::names::define(
                ctx.name,
                &d.name,
                pronto_lang::names::AddressName {
                    ether: d.ether,
                    ip: d.ip,
                    prefix: d.prefix,
                    ip6: d.ip6,
                    prefix6: d.prefix6,
                    device: false,
                },
            );
        }
        Ok(Box::new(AddressInfo { defs }))
    }

    /// Parses AddressInfo arguments into definitions (for a runtime that
    /// resolves names before configuring other elements).
    pub fn parse_definitions(config: &str) -> Result<Vec<AddressDef>, ConfigError> {
        let mut defs: Vec<AddressDef> = Vec::new();
        for arg in pronto_lang::args::split_args(config) {
            let words: Vec<String> = pronto_lang::args::split_words(&arg)
                .into_iter()
                .map(|w| pronto_lang::args::unquote(&w))
                .collect();
            let Some((name, addrs)) = words.split_first() else {
                continue;
            };
            if addrs.is_empty() {
                return Err(ConfigError::new("expected 'NAME [ADDRS]'"));
            }
            let mut d = AddressDef {
                name: name.clone(),
                ..AddressDef::default()
            };
            for w in addrs {
                let ether = pronto_lang::args::parse_ether_literal(w).ok();
                let mut ip = pronto_lang::args::parse_ip4_literal(w).ok();
                let mut prefix = None;
                if ip.is_none() {
                    if let Some((a, m)) = w.contains('/').then(|| parse_prefix(w, false)).flatten()
                    {
                        prefix = Some((a.to_be_bytes(), m.to_be_bytes()));
                        if a & !m != 0 {
                            ip = Some(a.to_be_bytes());
                        }
                    }
                }
                let mut ip6 = pronto_lang::args::parse_ip6_literal(w).ok();
                let mut prefix6 = None;
                if ip6.is_none() && w.contains('/') {
                    if let Ok((a, m)) = pronto_lang::args::parse_ip6_prefix(w) {
                        prefix6 = Some((a, m));
                        if (0..16).any(|i| a[i] & !m[i] != 0) {
                            ip6 = Some(a);
                        }
                    }
                }
                let kinds = ether.is_some() as u8
                    + ip.is_some() as u8
                    + prefix.is_some() as u8
                    + ip6.is_some() as u8
                    + prefix6.is_some() as u8;
                if kinds == 0 {
                    return Err(ConfigError::new(format!(
                        "'{w}' is not a recognizable address"
                    )));
                }
                let one = kinds == 1;
                if ether.is_some() && (one || d.ether.is_none()) {
                    d.ether = ether;
                }
                if ip.is_some() && (one || d.ip.is_none()) {
                    d.ip = ip;
                }
                if prefix.is_some() && (one || d.prefix.is_none()) {
                    d.prefix = prefix;
                }
                if ip6.is_some() && (one || d.ip6.is_none()) {
                    d.ip6 = ip6;
                }
                if prefix6.is_some() && (one || d.prefix6.is_none()) {
                    d.prefix6 = prefix6;
                }
            }
            match defs.iter_mut().find(|x| x.name == d.name) {
                Some(old) => *old = d,
                None => defs.push(d),
            }
        }
        Ok(defs)
    }

    /// The definitions.
    pub fn definitions(&self) -> &[AddressDef] {
        &self.defs
    }
}

impl Element for AddressInfo {
    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("table")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if name != "table" {
            return Err(HandlerError::NoSuchHandler(name.into()));
        }
        let mut s = String::new();
        for d in &self.defs {
            if let Some(e) = d.ether {
                s.push_str(&format!(
                    "{}\t{:02X}-{:02X}-{:02X}-{:02X}-{:02X}-{:02X}\n",
                    d.name, e[0], e[1], e[2], e[3], e[4], e[5]
                ));
            }
            if let Some(a) = d.ip {
                s.push_str(&format!(
                    "{}\t{}.{}.{}.{}\n",
                    d.name, a[0], a[1], a[2], a[3]
                ));
            }
            if let Some((a, m)) = d.prefix {
                let m32 = u32::from_be_bytes(m);
                let ms = match crate::ip::route_table::prefix_len(m32) {
                    Some(l) => l.to_string(),
                    None => format!("{}.{}.{}.{}", m[0], m[1], m[2], m[3]),
                };
                s.push_str(&format!(
                    "{}\t{}.{}.{}.{}/{}\n",
                    d.name, a[0], a[1], a[2], a[3], ms
                ));
            }
            if let Some(a) = d.ip6 {
                s.push_str(&format!("{}\t{}\n", d.name, Ip6(a)));
            }
            if let Some((a, m)) = d.prefix6 {
                let ms = match pronto_lang::args::mask6_len(&m) {
                    Some(l) => l.to_string(),
                    None => Ip6(m).to_string(),
                };
                s.push_str(&format!("{}\t{}/{}\n", d.name, Ip6(a), ms));
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_definitions() {
        let d = AddressInfo::parse_definitions(
            "eth0 18.26.4.9/24 00:0a:95:9d:68:16, gw 18.26.4.1, , net 10.0.0.0/8",
        )
        .expect("ok");
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].ip, Some([18, 26, 4, 9]));
        assert_eq!(d[0].prefix, Some(([18, 26, 4, 9], [255, 255, 255, 0])));
        assert_eq!(d[0].ether, Some([0, 0x0a, 0x95, 0x9d, 0x68, 0x16]));
        assert_eq!(d[1].ip, Some([18, 26, 4, 1]));
        assert_eq!(d[2].ip, None);
        let d = AddressInfo::parse_definitions(
            "n 2001:db8::1/64, net 2001:db8::/48, h fe80::1 00:01:02:03:04:05, m ::1/ffff::",
        )
        .expect("IPv6");
        let a = |s: &str| pronto_lang::args::parse_ip6(s).expect("address");
        assert_eq!(d[0].ip6, Some(a("2001:db8::1")));
        assert_eq!(
            d[0].prefix6,
            Some((a("2001:db8::1"), pronto_lang::args::prefix_mask6(64)))
        );
        assert_eq!(d[0].ip, None);
        assert_eq!(d[1].ip6, None);
        assert_eq!(
            d[1].prefix6,
            Some((a("2001:db8::"), pronto_lang::args::prefix_mask6(48)))
        );
        assert_eq!(d[2].ip6, Some(a("fe80::1")));
        assert_eq!(d[2].ether, Some([0, 1, 2, 3, 4, 5]));
        assert_eq!(d[2].prefix6, None);
        let e = AddressInfo { defs: d };
        assert_eq!(
            e.read_handler("table").expect("table"),
            "n\t2001:db8::1\nn\t2001:db8::1/64\nnet\t2001:db8::/48\n\
             h\t00-01-02-03-04-05\nh\tfe80::1\nm\t::0.0.0.1\nm\t::0.0.0.1/16\n"
        );
        assert_eq!(
            AddressInfo::parse_definitions("x 1.2.3")
                .expect_err("bad")
                .message,
            "'1.2.3' is not a recognizable address"
        );
        assert_eq!(
            AddressInfo::parse_definitions("x")
                .expect_err("bad")
                .message,
            "expected 'NAME [ADDRS]'"
        );
    }
}
