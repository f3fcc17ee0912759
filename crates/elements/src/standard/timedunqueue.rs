//! `TimedUnqueue`: pulls up to BURST packets every INTERVAL.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Listen, Out,
    Seconds, Spec, TaskStatus,
};

/// Every INTERVAL, pulls up to BURST packets and pushes them on.
pub struct TimedUnqueue {
    interval: i64,
    burst: usize,
    signal: bool,
    next: Option<i64>,
    count: u64,
}

impl TimedUnqueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TimedUnqueue")
        .ports("1/1")
        .processing("l/h")
        .keywords(&["INTERVAL", "BURST"])
        .profile(ActionProfile::NONE)
        .doc(
            "TimedUnqueue(INTERVAL [, BURST])\n\n\
             Every INTERVAL seconds (to the millisecond), pulls up to BURST packets\n\
             (default 1) from its input and pushes them out. When its input's\n\
             notifiers say it is empty it stops until they wake.\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Handlers:\n  count (read)  packets pushed",
        );

    /// Configures a `TimedUnqueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Self::build(ctx, 1)
    }

    /// Builds the element with `default_burst` (also used by `Burster`).
    pub fn build(ctx: &ConfigCtx<'_>, default_burst: i64) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let interval: Seconds = a.read_mp("INTERVAL")?;
        let burst: i64 = a.read_p("BURST")?.unwrap_or(default_burst);
        a.finish()?;
        if burst <= 0 {
            return Err(ConfigError::new("bad BURST"));
        }
        Ok(Box::new(TimedUnqueue {
            interval: ((interval.0 * 1000.0).round() as i64).max(0) * 1_000_000,
            burst: usize::try_from(burst)
                .unwrap_or(usize::MAX)
                .min(pronto_packet::BATCH_MAX),
            signal: true,
            next: None,
            count: 0,
        }))
    }
}

impl Element for TimedUnqueue {
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

    fn task_pull(&mut self, now: i64) -> Option<(usize, usize)> {
        match self.next {
            Some(t) if t > now => None,
            _ => Some((0, self.burst)),
        }
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        if self.next.is_some_and(|t| t > now) {
            return TaskStatus::SleepUntil(self.next.unwrap_or(now));
        }
        if batch.is_empty() && !self.signal {
            // Nothing upstream: wait for the notifier, timer cleared.
            self.next = None;
            return TaskStatus::Idle;
        }
        self.count += batch.len() as u64;
        out.pass(0);
        let next = match self.next {
            Some(t) => t + self.interval,
            None => now + self.interval,
        };
        self.next = Some(next);
        TaskStatus::SleepUntil(next)
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("count")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
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

    #[test]
    fn bursts_every_interval() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            TimedUnqueue::SPEC.keywords,
            TimedUnqueue::configure,
            "0.01, 2",
            &[false],
            &[true],
        )
        .expect("ok");
        let mut ctrl = Control::default();
        assert_eq!(e.task_pull(0), Some((0, 2)));
        let two = vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[2])];
        let (st, out) = t::run_task(e.as_mut(), &pool, two, 1, 0, &mut ctrl);
        assert_eq!(out[0].len(), 2);
        assert_eq!(st, TaskStatus::SleepUntil(10_000_000));
        assert_eq!(e.task_pull(5_000_000), None);
        assert_eq!(t::read(e.as_ref(), "count"), "2");
        let r = t::configure_with(
            TimedUnqueue::SPEC.keywords,
            TimedUnqueue::configure,
            "1, 0",
            &[false],
            &[true],
        );
        assert_eq!(t::config_err(r), "bad BURST");
    }
}
