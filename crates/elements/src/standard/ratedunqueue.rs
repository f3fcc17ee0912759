//! `RatedUnqueue`: pulls packets at a fixed rate and pushes them on.

use pronto_packet::{Batch, BATCH_MAX};

use super::shared::{handler_value, TokenBucket};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, Spec,
    TaskStatus,
};

/// A pull-to-push converter limited to RATE packets per second by a token
/// bucket.
pub struct RatedUnqueue {
    rate: u32,
    capacity: u32,
    dur_ms: Option<u32>,
    size_given: bool,
    tb: TokenBucket,
    active: bool,
    wake: Option<i64>,
    runs: u64,
    empty_runs: u64,
    pushes: u64,
    failed_pulls: u64,
}

fn bucket_size(rate: u32, dur_ms: u32) -> u32 {
    let t = u64::from(rate) * u64::from(dur_ms) / 1000;
    t.min(u64::from(u32::MAX)).max(1) as u32
}

impl RatedUnqueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RatedUnqueue")
        .ports("1/1")
        .processing("l/h")
        .keywords(&["RATE", "BURST_DURATION", "BURST_SIZE"])
        .profile(ActionProfile::NONE)
        .doc(
            "RatedUnqueue(RATE [, KEYWORDS])\n\n\
             Pulls packets at RATE packets per second and pushes them out its\n\
             output, using a token bucket that holds 20 ms worth of tokens by\n\
             default.\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Keywords:\n  BURST_DURATION  time; bucket capacity is RATE * BURST_DURATION\n  \
             BURST_SIZE      integer; bucket capacity\n\
             Handlers:\n  rate (read/write), active (read/write), calls (read), config (read)",
        );

    /// Configures a `RatedUnqueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let rate: u32 = a.read_mp("RATE")?;
        let dur: Option<Seconds> = a.read("BURST_DURATION")?;
        let size: Option<u32> = a.read("BURST_SIZE")?;
        a.finish()?;
        if dur.is_some() && size.is_some() {
            return Err(ConfigError::new(
                "cannot specify both BURST_DURATION and BURST_SIZE",
            ));
        }
        let dur_ms = dur.map(|d| (d.0 * 1000.0).round().min(f64::from(u32::MAX)) as u32);
        let capacity = match size {
            Some(s) => s.max(1),
            None => bucket_size(rate, dur_ms.unwrap_or(20)),
        };
        Ok(Box::new(RatedUnqueue {
            rate,
            capacity,
            dur_ms,
            size_given: size.is_some(),
            tb: TokenBucket::new(f64::from(rate), f64::from(capacity), f64::from(capacity)),
            active: true,
            wake: None,
            runs: 0,
            empty_runs: 0,
            pushes: 0,
            failed_pulls: 0,
        }))
    }
}

impl Element for RatedUnqueue {
    fn has_task(&self) -> bool {
        true
    }

    fn task_pull(&mut self, now: i64) -> Option<(usize, usize)> {
        self.runs += 1;
        self.wake = None;
        if !self.active {
            return None;
        }
        self.tb.refill(now);
        let n = self.tb.available().min(BATCH_MAX as u64) as usize;
        if n == 0 {
            self.empty_runs += 1;
            self.wake = Some(self.tb.time_until_one(now));
            return None;
        }
        Some((0, n))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if let Some(t) = self.wake.take() {
            return TaskStatus::SleepUntil(t);
        }
        if batch.is_empty() {
            if self.active {
                self.failed_pulls += 1;
            }
            return TaskStatus::Idle;
        }
        self.tb.remove(batch.len() as u64);
        self.pushes += batch.len() as u64;
        out.pass(0);
        TaskStatus::Busy
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("rate"),
            HandlerInfo::rw("active"),
            HandlerInfo::read("calls"),
            HandlerInfo::read("config"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "rate" | "config" => Ok(self.rate.to_string()),
            "active" => Ok(self.active.to_string()),
            "calls" => Ok(format!(
                "{} calls to run_task()\n{} empty runs\n{} pushes\n{} failed pulls\n",
                self.runs, self.empty_runs, self.pushes, self.failed_pulls
            )),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "rate" => {
                let r: u32 = handler_value(value, "RATE: expected unsigned integer")?;
                self.rate = r;
                if !self.size_given {
                    self.capacity = bucket_size(r, self.dur_ms.unwrap_or(20));
                }
                self.tb.rate = f64::from(r);
                self.tb.capacity = f64::from(self.capacity);
            }
            "active" => self.active = handler_value(value, "active: expected boolean")?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    fn ru(cfg: &str) -> Box<dyn Element> {
        t::configure_with(
            RatedUnqueue::SPEC.keywords,
            RatedUnqueue::configure,
            cfg,
            &[false],
            &[true],
        )
        .expect("ok")
    }

    #[test]
    fn token_bucket_paces() {
        let pool = Pool::new(64).expect("pool");
        // 1000 packets/s, 20 ms bucket = 20 tokens, full at start.
        let mut e = ru("1000");
        let mut ctrl = Control::default();
        assert_eq!(e.task_pull(0), Some((0, 20)));
        let pk = (0..20).map(|_| t::pkt(&pool, &[0])).collect();
        let (st, out) = t::run_task(e.as_mut(), &pool, pk, 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(out[0].len(), 20);
        drop(out);
        // Empty: sleep until one token (1 ms).
        assert_eq!(e.task_pull(0), None);
        let (st, _) = t::run_task(e.as_mut(), &pool, vec![], 1, 0, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(1_000_000));
        // After 5 ms, 5 tokens.
        assert_eq!(e.task_pull(5_000_000), Some((0, 5)));
    }

    #[test]
    fn burst_size_and_errors() {
        let mut e = ru("100, BURST_SIZE 3");
        assert_eq!(e.task_pull(0), Some((0, 3)));
        assert_eq!(t::read(e.as_ref(), "rate"), "100");
        let r = t::configure(
            RatedUnqueue::SPEC.keywords,
            RatedUnqueue::configure,
            "1, BURST_SIZE 3, BURST_DURATION 1",
            1,
            1,
        );
        assert_eq!(
            t::config_err(r),
            "cannot specify both BURST_DURATION and BURST_SIZE"
        );
        let r = t::configure(
            RatedUnqueue::SPEC.keywords,
            RatedUnqueue::configure,
            "",
            1,
            1,
        );
        assert_eq!(t::config_err(r), "missing mandatory RATE argument");
    }
}
