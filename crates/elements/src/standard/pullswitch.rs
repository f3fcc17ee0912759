//! `PullSwitch`: answers pulls from one chosen input, with a notifier.

use pronto_packet::{Batch, Packet};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, NotifierKind,
    NotifierRole, Out, PullInputs, PullOne, Spec,
};

/// Answers each pull by pulling the chosen input. Its empty notifier says
/// whether the chosen input may have packets, so that a puller behind it
/// sleeps while the switch points at an empty or idle input.
pub struct PullSwitch {
    input: i64,
    ninputs: usize,
    /// Click's notifier state: set by a successful pull, cleared by a
    /// failed one (or by choosing no input).
    active: bool,
}

impl PullSwitch {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("PullSwitch")
        .ports("-/1")
        .processing("l/l")
        .keywords(&["INPUT"])
        .profile(ActionProfile::NONE)
        .doc(
            "PullSwitch([INPUT])\n\n\
             Answers each pull by pulling input INPUT (default 0). INPUT -1, or an\n\
             input that does not exist, answers nothing. PullSwitch offers an empty\n\
             notifier: a puller behind it sleeps while the chosen input has nothing\n\
             (its upstream notifiers are inactive) and wakes when it may, or when\n\
             `switch` chooses an input that may.\n\n\
             Ports: any number of pull inputs, 1 pull output.\n\
             Handlers:\n  switch (read/write)  the input pulled\n  config (read)        the same",
        );

    /// Configures a `PullSwitch`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let input: i64 = a.read_p("INPUT")?.unwrap_or(0);
        a.finish()?;
        let mut s = PullSwitch {
            input: -1,
            ninputs: ctx.ninputs,
            active: false,
        };
        s.set_input(input);
        s.active = s.input >= 0;
        Ok(Box::new(s))
    }

    fn set_input(&mut self, input: i64) {
        self.input = if input < 0 || input >= self.ninputs as i64 {
            -1
        } else {
            input
        };
        if self.input < 0 {
            self.active = false;
        }
        // Choosing an input whose upstream is active wakes the notifier:
        // `signal` sees that upstream state when it is asked.
    }
}

impl Element for PullSwitch {
    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }

    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn notifier(&self, kind: NotifierKind, port: usize) -> NotifierRole {
        match (kind, port) {
            (NotifierKind::Empty, 0) => NotifierRole::Derived,
            _ => NotifierRole::None,
        }
    }

    fn signal(&self, _kind: NotifierKind, _port: usize, upstream: &dyn Fn(usize) -> bool) -> bool {
        // Active once set, until a failed pull; woken when the chosen
        // input's upstream is active.
        self.active || usize::try_from(self.input).is_ok_and(upstream)
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

impl PullOne for PullSwitch {
    fn pull_one(&mut self, _port: usize, _now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        let Ok(i) = usize::try_from(self.input) else {
            self.active = false;
            return None;
        };
        let p = inputs.pull_input(i);
        self.active = p.is_some();
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::pullinputs::testing::Queues;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn switches_and_notifies() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            PullSwitch::SPEC.keywords,
            PullSwitch::configure,
            "1",
            &[false, false],
            &[false],
        )
        .expect("configures");
        assert_eq!(e.notifier(NotifierKind::Empty, 0), NotifierRole::Derived);
        let idle = |_: usize| false;
        assert!(e.signal(NotifierKind::Empty, 0, &idle), "active at first");
        let mut q = Queues(vec![
            [t::pkt(&pool, &[0])].into(),
            [t::pkt(&pool, &[1])].into(),
        ]);
        {
            let p1 = e.as_pull_one().expect("pull one");
            assert_eq!(p1.pull_one(0, 0, &mut q).map(|p| p.data()[0]), Some(1));
            assert!(p1.pull_one(0, 0, &mut q).is_none());
        }
        // A failed pull with nothing upstream: asleep.
        assert!(!e.signal(NotifierKind::Empty, 0, &idle));
        // Switching to an input whose upstream is active wakes it.
        e.write_handler("switch", "0").expect("switch");
        assert!(e.signal(NotifierKind::Empty, 0, &|i| i == 0));
        e.write_handler("switch", "-1").expect("switch");
        assert!(!e.signal(NotifierKind::Empty, 0, &|_| true));
        assert_eq!(t::read(e.as_ref(), "config"), "-1");
    }
}
