//! `ErrorElement`: an element that never initializes.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Accepts any ports and arguments, then fails, so that a configuration
/// holding it cannot run (Click uses it in place of elements it could not
/// create).
pub struct ErrorElement;

impl ErrorElement {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ErrorElement")
        .ports("-/-")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "ErrorElement(...)\n\n\
             Accepts any number of ports and any arguments, then fails to\n\
             initialize: a configuration that holds one never runs.\n\n\
             Ports: any number of inputs and outputs (agnostic).",
        );

    /// Always fails.
    pub fn configure(_ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Err(ConfigError::new(
            "ErrorElement never initializes (it stands for an element that could not be created)",
        ))
    }
}

impl Element for ErrorElement {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn never_configures() {
        let r = t::configure(
            ErrorElement::SPEC.keywords,
            ErrorElement::configure,
            "x",
            1,
            1,
        );
        assert_eq!(
            t::config_err(r),
            "ErrorElement never initializes (it stands for an element that could not be created)"
        );
    }
}
