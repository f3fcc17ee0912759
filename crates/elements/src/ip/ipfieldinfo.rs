//! `IPFieldInfo`: the names of IP header fields.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Stands for Click's table of IP field names, which pronto has built in.
pub struct IPFieldInfo;

impl IPFieldInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPFieldInfo")
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "IPFieldInfo()\n\n\
             The names of IP, TCP, UDP and ICMP header fields (ip tos, tcp win,\n\
             icmp type, ...) that IPClassifier and IPFilter accept. pronto has\n\
             this table built in; the element exists so that configurations naming\n\
             it run, and does nothing.\n\n\
             Ports: none.",
        );

    /// Configures an `IPFieldInfo`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(IPFieldInfo))
    }
}

impl Element for IPFieldInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure};

    #[test]
    fn takes_no_arguments() {
        assert!(configure(&[], IPFieldInfo::configure, "", 0, 0).is_ok());
        assert_eq!(
            config_err(configure(&[], IPFieldInfo::configure, "x", 0, 0)),
            "too many arguments: `x` was not expected"
        );
    }
}
