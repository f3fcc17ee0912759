//! `DelayUnqueue`: pulls packets and pushes each once a delay has passed.

use std::collections::VecDeque;

use pronto_packet::{Batch, Packet};

use super::shared::unparse_interval;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Listen, Out,
    Seconds, Spec, TaskStatus,
};

/// Pulls packets and pushes each DELAY after its timestamp annotation (or
/// after it was pulled, when it has none).
pub struct DelayUnqueue {
    delay: i64,
    held: VecDeque<Packet>,
    signal: bool,
}

/// How early the task may wake before a packet is due. Click's real-time
/// timers fire up to 0.5 ms early and then spin (`Timer::adjustment`);
/// pronto's wake exactly on time, as Click's do under simulated time.
const ADJUSTMENT: i64 = 0;

impl DelayUnqueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DelayUnqueue")
        .ports("1/1")
        .processing("l/h")
        .keywords(&["DELAY"])
        .profile(ActionProfile::NONE)
        .doc(
            "DelayUnqueue(DELAY)\n\n\
             Pulls packets from its input and pushes each out once DELAY has passed\n\
             since its timestamp annotation (a packet without one is stamped when\n\
             pulled). It holds at most one packet, as Click's does.\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Handlers:\n  delay (read/write)",
        );

    /// Configures a `DelayUnqueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let delay: Seconds = a.read_mp("DELAY")?;
        a.finish()?;
        Ok(Box::new(DelayUnqueue {
            delay: (delay.0 * 1e9).round() as i64,
            held: VecDeque::with_capacity(1),
            signal: true,
        }))
    }
}

impl Element for DelayUnqueue {
    fn has_task(&self) -> bool {
        true
    }

    fn listens(&self) -> Option<Listen> {
        Some(Listen::UpstreamEmpty(0))
    }

    fn set_signal(&mut self, active: bool) {
        self.signal = active;
    }

    fn manages_signal(&self) -> bool {
        true
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        self.held.is_empty().then_some((0, 1))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        let pulled = !batch.is_empty();
        for mut p in batch.drain() {
            if p.timestamp_ns().div_euclid(1_000_000_000) == 0 {
                p.set_timestamp_ns(now);
            }
            p.set_timestamp_ns(p.timestamp_ns().saturating_add(self.delay));
            self.held.push_back(p);
        }
        match self.held.front().map(Packet::timestamp_ns) {
            Some(t) if t <= now => {
                if let Some(p) = self.held.pop_front() {
                    out.emit(0, p);
                }
                TaskStatus::Busy
            }
            Some(t) if t - ADJUSTMENT > now => TaskStatus::SleepUntil(t - ADJUSTMENT),
            Some(_) => TaskStatus::Idle,
            None if pulled => TaskStatus::Busy,
            None => TaskStatus::Idle,
        }
    }

    fn held(&self) -> usize {
        self.held.len()
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
                    .map_err(|_| HandlerError::BadValue("delay must be a time".into()))?;
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
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    const S: i64 = 1_000_000_000;

    #[test]
    fn pushes_after_the_delay() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            DelayUnqueue::SPEC.keywords,
            DelayUnqueue::configure,
            "2s",
            &[false],
            &[true],
        )
        .expect("ok");
        let mut ctrl = Control::default();
        assert_eq!(e.task_pull(3 * S), Some((0, 1)));
        let mut p = t::pkt(&pool, &[7]);
        p.set_timestamp_ns(3 * S);
        let (st, out) = t::run_task(e.as_mut(), &pool, vec![p], 1, 3 * S, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(5 * S - ADJUSTMENT));
        assert!(out[0].is_empty());
        assert_eq!(e.held(), 1);
        assert_eq!(e.task_pull(5 * S), None, "holds one packet at a time");
        let (st, out) = t::run_task(e.as_mut(), &pool, vec![], 1, 5 * S, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(t::bytes(&out[0]), vec![vec![7]]);
    }
}
