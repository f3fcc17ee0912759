//! `AddressInfo`: names for Ethernet and IP addresses.

use crate::ip::route_table::parse_prefix;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Spec};

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
             and, since host bits are set, the address). Later single-kind addresses\n\
             replace earlier ones of the same kind. IPv6 addresses are accepted but not\n\
             recorded.\n\n\
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
                let kinds = ether.is_some() as u8 + ip.is_some() as u8 + prefix.is_some() as u8;
                if kinds == 0 {
                    if w.contains(':')
                        && w.bytes()
                            .all(|c| c.is_ascii_hexdigit() || b":./".contains(&c))
                    {
                        continue; // IPv6: accepted, not recorded
                    }
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
