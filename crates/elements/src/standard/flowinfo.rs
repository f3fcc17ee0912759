//! `FlowInfo`: overrides elements' flow codes.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec, PHASE_INFO};

/// `ELEMENT CODE` pairs: the named element's flow code becomes CODE. The
/// runtime reads them when it resolves push and pull and searches for
/// notifiers; the element itself only checks them.
pub struct FlowInfo;

impl FlowInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FlowInfo")
        .ports("0/0")
        .processing("a/a")
        .phase(PHASE_INFO)
        .profile(ActionProfile::NONE)
        .doc(
            "FlowInfo(ELEMENT CODE, ...)\n\n\
             Gives the named elements another flow code (Click's `x/x` notation:\n\
             which inputs' packets may leave on which outputs). The flow codes\n\
             decide which agnostic ports share a push or pull mode and where\n\
             notifier searches go.\n\n\
             Ports: none.",
        );

    /// Configures a `FlowInfo`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        // The names are resolved by the runtime, which sees every element;
        // here only the form is checked.
        parse(ctx.config)?;
        Ok(Box::new(FlowInfo))
    }
}

/// The `(ELEMENT, CODE)` pairs of a FlowInfo configuration.
pub fn parse(config: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for arg in pronto_lang::args::split_args(config) {
        let w = pronto_lang::args::split_words(&arg);
        match w.as_slice() {
            [name, code] if code.contains('/') => out.push((name.clone(), code.clone())),
            _ => return Err(ConfigError::new("expected 'ELEMENT CODE'")),
        }
    }
    Ok(out)
}

impl Element for FlowInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn parses_pairs() {
        assert_eq!(
            parse("a x/y, b #/#").expect("parses"),
            vec![("a".into(), "x/y".into()), ("b".into(), "#/#".into())]
        );
        let r = t::configure(FlowInfo::SPEC.keywords, FlowInfo::configure, "a", 0, 0);
        assert_eq!(t::config_err(r), "expected 'ELEMENT CODE'");
    }
}
