//! `StaticPullSwitch`: answers pulls from one input fixed at configuration.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, PullFrom, Spec};

/// Answers each pull by pulling input INPUT.
pub struct StaticPullSwitch {
    input: Option<usize>,
}

impl StaticPullSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StaticPullSwitch")
        .ports("-/1")
        .processing("l/l")
        .keywords(&["INPUT"])
        .profile(ActionProfile::NONE)
        .doc(
            "StaticPullSwitch(INPUT)\n\n\
             Answers each pull by pulling input INPUT; a negative INPUT, or one that\n\
             does not exist, answers nothing. The other inputs are never pulled.\n\n\
             Ports: any number of pull inputs, 1 pull output.",
        );

    /// Configures a `StaticPullSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let input: i64 = a.read_mp("INPUT")?;
        a.finish()?;
        let input = usize::try_from(input).ok().filter(|&i| i < ctx.ninputs);
        Ok(Box::new(StaticPullSwitch { input }))
    }
}

impl Element for StaticPullSwitch {
    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }

    fn pull_from(&mut self, _port: usize) -> PullFrom {
        self.input.map_or(PullFrom::Nothing, PullFrom::Input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn pulls_its_fixed_input() {
        let c = |cfg: &str| {
            t::configure_with(
                StaticPullSwitch::SPEC.keywords,
                StaticPullSwitch::configure,
                cfg,
                &[false, false],
                &[false],
            )
        };
        assert_eq!(c("1").expect("ok").pull_from(0), PullFrom::Input(1));
        assert_eq!(c("2").expect("ok").pull_from(0), PullFrom::Nothing);
        assert_eq!(c("-1").expect("ok").pull_from(0), PullFrom::Nothing);
        assert_eq!(t::config_err(c("")), "missing mandatory INPUT argument");
    }
}
