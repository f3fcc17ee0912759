//! `DelayShaper`: holds each pulled packet until its timestamp plus a delay.

use pronto_packet::{Batch, Packet};

use super::shared::unparse_interval;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, NotifierKind,
    NotifierRole, Out, PullInputs, PullOne, Seconds, Spec,
};

/// A pull element that releases each packet DELAY after its timestamp
/// annotation (or after it was pulled, when it has none).
pub struct DelayShaper {
    delay: i64,
    held: Option<Packet>,
    /// Click's notifier state: asleep while the held packet is not due.
    active: bool,
    timer: Option<i64>,
}

/// How early a timer may fire before a packet is due. Click's real-time
/// timers fire up to 0.5 ms early and then spin (`Timer::adjustment`);
/// pronto's wake exactly on time, as Click's do under simulated time.
const ADJUSTMENT: i64 = 0;

impl DelayShaper {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DelayShaper")
        .ports("1/1")
        .processing("l/l")
        .keywords(&["DELAY"])
        .profile(ActionProfile::NONE)
        .doc(
            "DelayShaper(DELAY)\n\n\
             Pulls packets from its input and hands each out only once DELAY has\n\
             passed since its timestamp annotation (a packet without one is\n\
             stamped when pulled); the packet leaves with the current time as its\n\
             timestamp. It holds at most one packet. Its empty notifier sleeps\n\
             while the held packet is not due and wakes when it is, or when its\n\
             input may have packets.\n\n\
             Ports: 1 pull input, 1 pull output.\n\
             Handlers:\n  delay (read/write)",
        );

    /// Configures a `DelayShaper`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let delay: Seconds = a.read_mp("DELAY")?;
        a.finish()?;
        Ok(Box::new(DelayShaper {
            delay: (delay.0 * 1e9).round() as i64,
            held: None,
            active: true,
            timer: None,
        }))
    }
}

impl PullOne for DelayShaper {
    fn pull_one(&mut self, _port: usize, now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        if self.held.is_none() {
            if let Some(mut p) = inputs.pull_input(0) {
                if p.timestamp_ns().div_euclid(1_000_000_000) == 0 {
                    p.set_timestamp_ns(now);
                }
                p.set_timestamp_ns(p.timestamp_ns().saturating_add(self.delay));
                self.held = Some(p);
            }
        }
        match &self.held {
            Some(p) if p.timestamp_ns() <= now => {
                let mut p = self.held.take()?;
                p.set_timestamp_ns(now);
                Some(p)
            }
            Some(p) => {
                let expiry = p.timestamp_ns() - ADJUSTMENT;
                if expiry <= now {
                    self.active = true;
                } else {
                    self.timer = Some(expiry);
                    self.active = false;
                }
                None
            }
            None => {
                if !inputs.input_active(0) {
                    self.active = false;
                }
                None
            }
        }
    }
}

impl Element for DelayShaper {
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }

    fn held(&self) -> usize {
        usize::from(self.held.is_some())
    }

    fn notifier(&self, kind: NotifierKind, port: usize) -> NotifierRole {
        match (kind, port) {
            (NotifierKind::Empty, 0) => NotifierRole::Derived,
            _ => NotifierRole::None,
        }
    }

    fn signal(&self, _kind: NotifierKind, _port: usize, upstream: &dyn Fn(usize) -> bool) -> bool {
        // It wakes when its timer fires and whenever its input's notifiers do.
        self.active || upstream(0)
    }

    fn has_timer(&self) -> bool {
        true
    }

    fn timer(&self) -> Option<i64> {
        self.timer
    }

    fn run_timer(&mut self, _now: i64) {
        self.timer = None;
        self.active = true;
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("delay")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "delay" => Ok(unparse_interval(self.delay)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "delay" => {
                let s = pronto_lang::args::parse_seconds(value.trim())
                    .map_err(|_| HandlerError::BadValue("delay must be a timestamp".into()))?;
                self.delay = (s * 1e9).round() as i64;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::pullinputs::testing::Queues;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    const S: i64 = 1_000_000_000;

    #[test]
    fn releases_after_the_delay() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            DelayShaper::SPEC.keywords,
            DelayShaper::configure,
            "0.5s",
            &[false],
            &[false],
        )
        .expect("ok");
        let mut p = t::pkt(&pool, &[1]);
        p.set_timestamp_ns(10 * S);
        let mut q = Queues(vec![[p].into()]);
        let d = e.as_pull_one().expect("pull one");
        assert!(d.pull_one(0, 10 * S, &mut q).is_none());
        let got = d.pull_one(0, 10 * S + S / 2, &mut q).expect("due");
        assert_eq!(got.timestamp_ns(), 10 * S + S / 2);
        assert_eq!(t::read(e.as_ref(), "delay"), "500ms");
    }

    #[test]
    fn notifier_sleeps_until_the_timer() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            DelayShaper::SPEC.keywords,
            DelayShaper::configure,
            "1s",
            &[false],
            &[false],
        )
        .expect("ok");
        let mut p = t::pkt(&pool, &[1]);
        p.set_timestamp_ns(5 * S);
        let mut q = Queues(vec![[p].into()]);
        assert!(e
            .as_pull_one()
            .expect("pull one")
            .pull_one(0, 5 * S, &mut q)
            .is_none());
        assert_eq!(e.held(), 1);
        let idle = |_: usize| false;
        assert!(!e.signal(NotifierKind::Empty, 0, &idle));
        assert_eq!(e.timer(), Some(6 * S - ADJUSTMENT));
        e.run_timer(6 * S);
        assert!(e.signal(NotifierKind::Empty, 0, &idle));
    }
}
