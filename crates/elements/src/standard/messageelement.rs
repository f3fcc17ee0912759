//! `Message`: prints a message when the configuration is set up.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Prints MESSAGE (or a warning, or fails with an error) while the router
/// is configured.
pub struct MessageElement {
    message: Option<(bool, String)>,
}

impl MessageElement {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Message")
        .ports("0/0")
        .processing("a/a")
        .keywords(&["MESSAGE", "TYPE"])
        .profile(ActionProfile::NONE)
        .doc(
            "Message(MESSAGE [, TYPE])\n\n\
             Prints MESSAGE on standard error when the router is configured, with\n\
             Click's `While configuring` context. TYPE is MESSAGE (the default),\n\
             WARNING (printed as a warning) or ERROR (the configuration fails with\n\
             MESSAGE as its error).\n\n\
             Ports: none.",
        );

    /// Configures a `Message`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let message: String = a.read_mp("MESSAGE")?;
        let kind: String = a.read_p("TYPE")?.unwrap_or_else(|| "MESSAGE".into());
        a.finish()?;
        match kind.as_str() {
            "MESSAGE" => Ok(Box::new(MessageElement {
                message: Some((false, message)),
            })),
            "WARNING" => Ok(Box::new(MessageElement {
                message: Some((true, message)),
            })),
            "ERROR" => Err(ConfigError::new(message)),
            _ => Err(ConfigError::new("unrecognized message type")),
        }
    }
}

impl Element for MessageElement {
    fn config_messages(&mut self) -> Vec<(bool, String)> {
        self.message.take().into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    fn msg(cfg: &str) -> Result<Box<dyn Element>, ConfigError> {
        t::configure(
            MessageElement::SPEC.keywords,
            MessageElement::configure,
            cfg,
            0,
            0,
        )
    }

    #[test]
    fn message_warning_error() {
        let mut e = msg("\"hello there\"").expect("configures");
        assert_eq!(
            e.config_messages(),
            vec![(false, "hello there".to_string())]
        );
        assert!(e.config_messages().is_empty(), "said once");
        let mut e = msg("careful, WARNING").expect("configures");
        assert_eq!(e.config_messages(), vec![(true, "careful".to_string())]);
        assert_eq!(t::config_err(msg("bad, ERROR")), "bad");
        assert_eq!(t::config_err(msg("x, LOUD")), "unrecognized message type");
        assert_eq!(t::config_err(msg("")), "missing mandatory MESSAGE argument");
    }
}
