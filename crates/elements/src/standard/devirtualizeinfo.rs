//! `DevirtualizeInfo`: information for a Click tool; the router ignores it.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Accepts any arguments and does nothing, as Click's drivers do.
pub struct DevirtualizeInfo;

impl DevirtualizeInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DevirtualizeInfo")
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc("DevirtualizeInfo([ARGUMENTS])\n\nCarries information for click-devirtualize, a tool that compiles a configuration's\nelements into specialized code. pronto does not devirtualize; it ignores the\narguments.\n\nPorts: none.");

    /// Configures the element (any arguments are accepted).
    pub fn configure(_ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(DevirtualizeInfo))
    }
}

impl Element for DevirtualizeInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn accepts_anything() {
        let e = t::configure(
            DevirtualizeInfo::SPEC.keywords,
            DevirtualizeInfo::configure,
            "a b, c, 1 2 3",
            0,
            0,
        )
        .expect("configures");
        assert!(e.handlers().is_empty());
    }
}
