//! `Burster`: a TimedUnqueue whose BURST defaults to 8.

use super::timedunqueue::TimedUnqueue;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `Burster`: TimedUnqueue with a default burst of 8.
pub struct Burster;

impl Burster {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Burster")
        .ports("1/1")
        .processing("l/h")
        .keywords(&["INTERVAL", "BURST"])
        .profile(ActionProfile::NONE)
        .doc(
            "Burster(INTERVAL [, BURST])\n\n\
             Every INTERVAL seconds, pulls up to BURST packets (default 8) from its\n\
             input and pushes them out: TimedUnqueue with a larger default burst.\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Handlers:\n  count (read)  packets pushed",
        );

    /// Configures a `Burster`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        TimedUnqueue::build(ctx, 8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn bursts_eight_by_default() {
        let mut e = t::configure_with(
            Burster::SPEC.keywords,
            Burster::configure,
            "0.1",
            &[false],
            &[true],
        )
        .expect("ok");
        assert_eq!(e.task_pull(0), Some((0, 8)));
    }
}
