//! `PortInfo`: names TCP and UDP ports for other elements' arguments.

use pronto_lang::names::{define_value, NameKind};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec, PHASE_INFO};

/// Defines port names, visible in its compound and below.
pub struct PortInfo;

impl PortInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("PortInfo")
        .ports("0/0")
        .processing("a/a")
        .phase(PHASE_INFO)
        .profile(ActionProfile::NONE)
        .doc(
            "PortInfo(NAME PORT[/PROTOCOL] [NAME...], ...)\n\n\
             Defines names for TCP and UDP ports, for the port arguments of other\n\
             elements in the same compound and below. Each argument is a name, a\n\
             port number with an optional /tcp or /udp (default both), and more\n\
             names for the same port. Empty arguments and arguments starting with\n\
             `#` are ignored.\n\n\
             Ports: none.",
        );

    /// Configures a `PortInfo`, defining its names.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        for arg in pronto_lang::args::split_args(ctx.config) {
            let words = pronto_lang::args::split_words(&arg);
            let Some(first) = words.first() else { continue };
            if first.starts_with('#') {
                continue;
            }
            let Some(port_str) = words.get(1) else {
                return Err(ConfigError::new("expected 'NAME PORT/PROTO'"));
            };
            let (num, proto) = match port_str.split_once('/') {
                Some((n, p)) => (n, Some(p)),
                None => (port_str.as_str(), None),
            };
            let port: u16 = match num.parse() {
                Ok(p) => p,
                Err(_) => return Err(ConfigError::new("expected 'NAME PORT/PROTO'")),
            };
            let kinds: &[NameKind] = match proto {
                None => &[NameKind::TcpPort, NameKind::UdpPort],
                Some("tcp") => &[NameKind::TcpPort],
                Some("udp") => &[NameKind::UdpPort],
                // Another protocol: nothing to define for TCP or UDP.
                Some(_) => continue,
            };
            for name in std::iter::once(first).chain(words.iter().skip(2)) {
                if name.starts_with('#') {
                    break;
                }
                for &k in kinds {
                    define_value(k, ctx.name, name, u32::from(port));
                }
            }
        }
        Ok(Box::new(PortInfo))
    }
}

impl Element for PortInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_lang::names;

    #[test]
    fn defines_port_names() {
        names::clear();
        t::configure(
            PortInfo::SPEC.keywords,
            PortInfo::configure,
            "foo 79/udp # ssh 25/udp comment, # ssh 26/udp comment, bar 8080 baz, web 81/tcp",
            0,
            0,
        )
        .expect("configures");
        names::set_current("x");
        assert_eq!(names::value(NameKind::UdpPort, "foo"), Some(79));
        assert_eq!(names::value(NameKind::TcpPort, "foo"), None);
        assert_eq!(names::value(NameKind::UdpPort, "ssh"), None);
        assert_eq!(names::value(NameKind::TcpPort, "baz"), Some(8080));
        assert_eq!(names::value(NameKind::UdpPort, "bar"), Some(8080));
        assert_eq!(names::value(NameKind::TcpPort, "web"), Some(81));
        let r = t::configure(PortInfo::SPEC.keywords, PortInfo::configure, "foo", 0, 0);
        assert_eq!(t::config_err(r), "expected 'NAME PORT/PROTO'");
        names::clear();
    }
}
