//! `ClickyInfo`: information for a Click tool; the router ignores it.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Accepts any arguments and does nothing, as Click's drivers do.
pub struct ClickyInfo;

impl ClickyInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ClickyInfo")
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc("ClickyInfo(STYLE ...)\n\nCarries styles for the Clicky graphical interface. pronto ignores the\narguments, as Click's drivers do.\n\nPorts: none.");

    /// Configures the element (any arguments are accepted).
    pub fn configure(_ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(ClickyInfo))
    }
}

impl Element for ClickyInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn accepts_anything() {
        let e = t::configure(
            ClickyInfo::SPEC.keywords,
            ClickyInfo::configure,
            "a b, c, 1 2 3",
            0,
            0,
        )
        .expect("configures");
        assert!(e.handlers().is_empty());
    }
}
