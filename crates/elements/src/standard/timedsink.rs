//! `TimedSink`: pulls one packet every INTERVAL and drops it.

use pronto_packet::Batch;

use super::shared::unparse_interval;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, Spec,
    TaskStatus,
};

/// Pulls a packet from its input every INTERVAL and drops it, counting.
pub struct TimedSink {
    interval: i64,
    next: Option<i64>,
    count: u64,
}

impl TimedSink {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TimedSink")
        .ports("1/0")
        .processing("l/")
        .keywords(&["INTERVAL"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "TimedSink([INTERVAL])\n\n\
             Pulls one packet from its input every INTERVAL seconds (default 0.5)\n\
             and drops it. The first pull is INTERVAL after the router starts.\n\n\
             Ports: 1 pull input, no outputs.\n\
             Handlers:\n  \
             interval (read/write)  the interval\n  \
             count (read)           packets pulled and dropped",
        );

    /// Configures a `TimedSink`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let interval: Option<Seconds> = a.read_p("INTERVAL")?;
        a.finish()?;
        let interval = interval.map_or(500_000_000, |s| (s.0 * 1e9).round() as i64);
        Ok(Box::new(TimedSink {
            interval,
            next: None,
            count: 0,
        }))
    }
}

impl Element for TimedSink {
    fn has_task(&self) -> bool {
        true
    }

    fn task_pull(&mut self, now: i64) -> Option<(usize, usize)> {
        match self.next {
            Some(t) if now >= t => Some((0, 1)),
            _ => None,
        }
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        self.count += batch.len() as u64;
        batch.clear();
        let next = match self.next {
            // The first run: the timer is set INTERVAL from now.
            None => out.now + self.interval,
            Some(t) => t.max(out.now - self.interval) + self.interval,
        };
        self.next = Some(next);
        TaskStatus::SleepUntil(next)
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("discarded", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("interval"), HandlerInfo::read("count")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "interval" => Ok(unparse_interval(self.interval)),
            "count" => Ok(self.count.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "interval" => {
                let s = pronto_lang::args::parse_seconds(value.trim())
                    .ok()
                    .filter(|s| *s > 0.0)
                    .ok_or_else(|| HandlerError::BadValue("bad interval".into()))?;
                self.interval = (s * 1e9).round() as i64;
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

    #[test]
    fn pulls_one_packet_per_interval() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            TimedSink::SPEC.keywords,
            TimedSink::configure,
            "1ms",
            &[false],
            &[],
        )
        .expect("ok");
        let mut ctrl = Control::default();
        // First run: no pull, a timer 1 ms later.
        assert_eq!(e.task_pull(0), None);
        let (st, _) = t::run_task(e.as_mut(), &pool, vec![], 0, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(1_000_000));
        assert_eq!(e.task_pull(1_000_000), Some((0, 1)));
        let (st, _) = t::run_task(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1])],
            0,
            1_000_000,
            &mut ctrl,
        );
        assert_eq!(st, TaskStatus::SleepUntil(2_000_000));
        assert_eq!(t::read(e.as_ref(), "count"), "1");
        assert_eq!(t::read(e.as_ref(), "interval"), "1ms");
        assert!(e.write_handler("interval", "0").is_err());
    }
}
