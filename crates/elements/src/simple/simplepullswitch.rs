//! `SimplePullSwitch`: answers pulls from one chosen input.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, PullFrom, Spec,
};

/// Answers each pull by pulling the chosen input (or nothing, for -1).
pub struct SimplePullSwitch {
    input: i64,
    ninputs: usize,
}

impl SimplePullSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SimplePullSwitch")
        .ports("-/1")
        .processing("l/l")
        .keywords(&["INPUT"])
        .profile(ActionProfile::NONE)
        .doc(
            "SimplePullSwitch([INPUT])\n\n\
             Answers each pull by pulling input INPUT (default 0). INPUT -1, or an\n\
             input that does not exist, answers nothing. Unlike PullSwitch it offers\n\
             no notifier: a puller behind it listens to what is upstream of all its\n\
             inputs.\n\n\
             Ports: any number of pull inputs, 1 pull output.\n\
             Handlers:\n  switch (read/write)  the input pulled\n  config (read)        the same",
        );

    /// Configures a `SimplePullSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let input: i64 = a.read_p("INPUT")?.unwrap_or(0);
        a.finish()?;
        let mut s = SimplePullSwitch {
            input: -1,
            ninputs: ctx.ninputs,
        };
        s.set_input(input);
        Ok(Box::new(s))
    }

    fn set_input(&mut self, input: i64) {
        self.input = if input < 0 || input >= self.ninputs as i64 {
            -1
        } else {
            input
        };
    }
}

impl Element for SimplePullSwitch {
    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }

    fn pull_from(&mut self, _port: usize) -> PullFrom {
        match usize::try_from(self.input) {
            Ok(i) => PullFrom::Input(i),
            Err(_) => PullFrom::Nothing,
        }
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("switch"), HandlerInfo::read("config")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "switch" | "config" => Ok(self.input.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "switch" => {
                let v = pronto_lang::args::parse_i64(value.trim())
                    .map_err(|_| HandlerError::BadValue("syntax error".into()))?;
                self.set_input(v);
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn pulls_the_chosen_input() {
        let mut e = t::configure_with(
            SimplePullSwitch::SPEC.keywords,
            SimplePullSwitch::configure,
            "1",
            &[false, false],
            &[false],
        )
        .expect("configures");
        assert_eq!(e.pull_from(0), PullFrom::Input(1));
        e.write_handler("switch", "7").expect("switch");
        assert_eq!(t::read(e.as_ref(), "switch"), "-1");
        assert_eq!(e.pull_from(0), PullFrom::Nothing);
        e.write_handler("switch", "0").expect("switch");
        assert_eq!(e.pull_from(0), PullFrom::Input(0));
        assert!(e.write_handler("switch", "x").is_err());
    }
}
