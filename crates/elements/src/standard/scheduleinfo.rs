//! `ScheduleInfo`: scheduling parameters for tasks.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec, PHASE_INFO};

/// Checks and keeps `ELEMENT PARAM` scheduling parameters. pronto runs
/// tasks round-robin, each one batch per turn, so the parameters (Click's
/// stride-scheduling tickets) do not change the order; they are accepted
/// so that Click configurations run unchanged.
pub struct ScheduleInfo;

impl ScheduleInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ScheduleInfo")
        .ports("0/0")
        .processing("a/a")
        .phase(PHASE_INFO)
        .profile(ActionProfile::NONE)
        .doc(
            "ScheduleInfo(ELEMENT PARAM, ...)\n\n\
             Gives tasks scheduling parameters: ELEMENT's task gets PARAM times the\n\
             default share (a real number). pronto checks the arguments; its task\n\
             loop runs every ready task once per round, so the shares do not change\n\
             the order in which tasks run.\n\n\
             Ports: none.",
        );

    /// Configures a `ScheduleInfo`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        for arg in pronto_lang::args::split_args(ctx.config) {
            let words = pronto_lang::args::split_words(&arg);
            match words.as_slice() {
                [] => {}
                [_, p] if pronto_lang::args::parse_f64(p).is_ok_and(|v| v >= 0.0) => {}
                _ => return Err(ConfigError::new("expected 'ELEMENTNAME PARAM'")),
            }
        }
        Ok(Box::new(ScheduleInfo))
    }
}

impl Element for ScheduleInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn checks_entries() {
        assert!(t::configure(
            ScheduleInfo::SPEC.keywords,
            ScheduleInfo::configure,
            "unq 1, src 2.5, ",
            0,
            0
        )
        .is_ok());
        let r = t::configure(
            ScheduleInfo::SPEC.keywords,
            ScheduleInfo::configure,
            "unq",
            0,
            0,
        );
        assert_eq!(t::config_err(r), "expected 'ELEMENTNAME PARAM'");
    }
}
