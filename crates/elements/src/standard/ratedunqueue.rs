//! `RatedUnqueue`: pulls packets at a fixed rate and pushes them on.

use pronto_packet::{Batch, BATCH_MAX, MAX_PACKET};

use super::shared::handler_value;
use super::tokenbucket::{burst_tokens, unparse_bandwidth, ClickTokenBucket};
use crate::{
    ActionProfile, Bandwidth, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Listen,
    Out, Seconds, Spec, TaskStatus,
};

/// Tokens (bytes) a bandwidth bucket must hold before a packet may go
/// (Click's `tb_bandwidth_thresh`).
pub const BANDWIDTH_THRESH: u32 = 131_072;

/// A token bucket configured Click's `RatedUnqueue` way: RATE, then
/// BURST_DURATION or BURST_SIZE (BURST_BYTES for bandwidth classes).
#[derive(Clone, Copy, Debug)]
pub struct RateConfig {
    /// Packets (or bytes) per second.
    pub rate: u32,
    /// Bucket capacity in tokens.
    pub tokens: u32,
    /// True for the bandwidth classes (bytes, not packets).
    pub bandwidth: bool,
    dur_ms: u32,
    size: Option<u32>,
}

impl RateConfig {
    /// Reads RATE, BURST_DURATION and BURST_SIZE/BURST_BYTES.
    pub fn read(ctx: &ConfigCtx<'_>, bandwidth: bool) -> Result<RateConfig, ConfigError> {
        let mut a = ctx.args();
        let rate: u32 = if bandwidth {
            let b: Bandwidth = a.read_mp("RATE")?;
            b.0.clamp(0.0, f64::from(u32::MAX)) as u32
        } else {
            a.read_mp("RATE")?
        };
        let dur: Option<Seconds> = a.read("BURST_DURATION")?;
        let size: Option<u32> = a.read(if bandwidth {
            "BURST_BYTES"
        } else {
            "BURST_SIZE"
        })?;
        a.finish()?;
        if dur.is_some() && size.is_some() {
            return Err(ConfigError::new(
                "cannot specify both BURST_DURATION and BURST_SIZE",
            ));
        }
        let dur_ms = dur.map_or(20, |d| {
            (d.0 * 1000.0).round().clamp(0.0, f64::from(u32::MAX)) as u32
        });
        Ok(RateConfig {
            rate,
            tokens: burst_tokens(rate, dur_ms, size, bandwidth),
            bandwidth,
            dur_ms,
            size,
        })
    }

    /// The configuration with a new RATE (the `rate` write handler).
    pub fn with_rate(mut self, rate: u32) -> RateConfig {
        self.rate = rate;
        self.tokens = burst_tokens(rate, self.dur_ms, self.size, self.bandwidth);
        self
    }

    /// A bucket for this configuration.
    pub fn bucket(&self) -> ClickTokenBucket {
        ClickTokenBucket::new(self.rate, self.tokens)
    }

    /// Parses a new RATE written to a handler.
    pub fn parse_rate(&self, value: &str) -> Result<u32, HandlerError> {
        if self.bandwidth {
            let b: Bandwidth = handler_value(value, "RATE: expected bandwidth")?;
            Ok(b.0.clamp(0.0, f64::from(u32::MAX)) as u32)
        } else {
            handler_value(value, "RATE: expected unsigned integer")
        }
    }

    /// The rate as Click's `rate` handler prints it.
    pub fn unparse(&self, tb: &ClickTokenBucket) -> String {
        if self.bandwidth {
            unparse_bandwidth(tb.rate())
        } else {
            tb.rate().to_string()
        }
    }
}

/// A pull-to-push converter limited to RATE packets per second by Click's
/// jiffy token bucket (also serves `BandwidthRatedUnqueue`).
pub struct RatedUnqueue {
    cfg: RateConfig,
    tb: ClickTokenBucket,
    active: bool,
    wake: Option<i64>,
    runs: u64,
    empty_runs: u64,
    pushes: u64,
    failed_pulls: u64,
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
             default (refilled once per millisecond, as in Click).\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Keywords:\n  BURST_DURATION  time; bucket capacity is RATE * BURST_DURATION\n  \
             BURST_SIZE      integer; bucket capacity\n\
             Handlers:\n  rate (read/write), active (read/write), calls (read), config (read)",
        );

    /// Configures a `RatedUnqueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Self::build(ctx, false)
    }

    /// Configures the packet or the bandwidth variant.
    pub fn build(ctx: &ConfigCtx<'_>, bandwidth: bool) -> Result<Box<dyn Element>, ConfigError> {
        let cfg = RateConfig::read(ctx, bandwidth)?;
        Ok(Box::new(RatedUnqueue {
            cfg,
            tb: cfg.bucket(),
            active: true,
            wake: None,
            runs: 0,
            empty_runs: 0,
            pushes: 0,
            failed_pulls: 0,
        }))
    }

    /// Packets that may be pulled now: every one of them passes Click's
    /// per-packet test.
    fn allowed(&self) -> usize {
        if self.cfg.bandwidth {
            let size = self.tb.size();
            if size < BANDWIDTH_THRESH {
                0
            } else {
                ((size - BANDWIDTH_THRESH) as usize) / MAX_PACKET.max(1) + 1
            }
        } else {
            self.tb.size() as usize
        }
    }

    fn need(&self) -> u32 {
        if self.cfg.bandwidth {
            BANDWIDTH_THRESH
        } else {
            1
        }
    }
}

impl Element for RatedUnqueue {
    fn has_task(&self) -> bool {
        true
    }

    fn listens(&self) -> Option<Listen> {
        Some(Listen::UpstreamEmpty(0))
    }

    fn task_pull(&mut self, now: i64) -> Option<(usize, usize)> {
        self.runs += 1;
        self.wake = None;
        if !self.active {
            return None;
        }
        self.tb.refill(now);
        let n = self.allowed().min(BATCH_MAX);
        if n == 0 {
            self.empty_runs += 1;
            let ticks = self.tb.time_until_contains(self.need());
            self.wake = Some(if ticks == u32::MAX {
                i64::MAX
            } else {
                (now / 1_000_000 + i64::from(ticks)) * 1_000_000
            });
            return None;
        }
        Some((0, n))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if let Some(t) = self.wake.take() {
            return TaskStatus::SleepUntil(t);
        }
        if batch.is_empty() {
            if !self.active {
                // Rescheduled by a write to `active`.
                return TaskStatus::Done;
            }
            self.failed_pulls += 1;
            self.empty_runs += 1;
            return TaskStatus::Idle;
        }
        for p in batch.iter() {
            let n = if self.cfg.bandwidth {
                p.len() as u32
            } else {
                1
            };
            self.tb.remove(n);
        }
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
            "rate" | "config" => Ok(self.cfg.unparse(&self.tb)),
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
                let r = self.cfg.parse_rate(value)?;
                self.cfg = self.cfg.with_rate(r);
                self.tb.assign(self.cfg.rate, self.cfg.tokens);
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

    const T0: i64 = 1_000_000_000_000_000_000;
    const MS: i64 = 1_000_000;

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
        assert_eq!(e.task_pull(T0), Some((0, 20)));
        let pk = (0..20).map(|_| t::pkt(&pool, &[0])).collect();
        let (st, out) = t::run_task(e.as_mut(), &pool, pk, 1, T0, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(out[0].len(), 20);
        drop(out);
        // Empty: sleep until the next jiffy refills one token.
        assert_eq!(e.task_pull(T0), None);
        let (st, _) = t::run_task(e.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(T0 + MS));
        // After 5 ms, 5 tokens.
        assert_eq!(e.task_pull(T0 + 5 * MS), Some((0, 5)));
        assert_eq!(
            t::read(e.as_ref(), "calls"),
            "3 calls to run_task()\n1 empty runs\n20 pushes\n0 failed pulls\n"
        );
    }

    #[test]
    fn burst_size_and_errors() {
        let mut e = ru("100, BURST_SIZE 3");
        assert_eq!(e.task_pull(T0), Some((0, 3)));
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
