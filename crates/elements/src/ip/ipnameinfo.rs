//! `IPNameInfo`: the IP name tables (protocols, ports, ICMP types and
//! codes).

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Stands for Click's IP name tables, which pronto has built in.
pub struct IPNameInfo;

impl IPNameInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPNameInfo")
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "IPNameInfo()\n\n\
             The names other IP elements accept: IP protocols (icmp, igmp, ipip,\n\
             tcp, udp, tcpudp, transp, payload, dccp, sctp), TCP/UDP ports (www,\n\
             ssh, dns, ...), ICMP types (echo, unreachable, ...) and codes (net,\n\
             host, needfrag, ...). pronto has these tables built in; the element\n\
             exists so that configurations naming it run, and does nothing. Click\n\
             says not to use it in configurations.\n\n\
             Ports: none.",
        );

    /// Configures an `IPNameInfo`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(IPNameInfo))
    }
}

impl Element for IPNameInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure};

    #[test]
    fn takes_no_arguments() {
        assert!(configure(&[], IPNameInfo::configure, "", 0, 0).is_ok());
        assert_eq!(
            config_err(configure(&[], IPNameInfo::configure, "x", 0, 0)),
            "too many arguments: `x` was not expected"
        );
    }
}
