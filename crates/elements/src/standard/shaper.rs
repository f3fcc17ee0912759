//! `Shaper`: lets at most RATE packets per second through a pull path.

use pronto_packet::{Batch, Packet};

use super::tokenbucket::{unparse_bandwidth, GapRate};
use crate::{
    push_each, ActionProfile, Bandwidth, ConfigCtx, ConfigError, Element, HandlerError,
    HandlerInfo, Out, Spec,
};
use crate::{PullInputs, PullOne};

/// A pull shaper driven by Click's `GapRate` (also serves
/// `BandwidthShaper`, which counts bytes).
pub struct Shaper {
    bandwidth: bool,
    rate: GapRate,
    last_now: i64,
    drops: u64,
}

impl Shaper {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Shaper")
        .ports("1/1-2")
        .processing("l/l")
        .keywords(&["RATE"])
        .profile(ActionProfile::NONE)
        .doc(
            "Shaper(RATE)\n\n\
             A pull element that lets at most RATE packets per second through:\n\
             a pull on output 0 pulls the input only when the per-second gap\n\
             counter allows it. A pull on optional output 1 returns a packet\n\
             only when output 0 would not.\n\n\
             Ports: 1 pull input, 1 or 2 pull outputs.\n\
             Handlers:\n  rate (read/write), config (read), reset (write)\n\n\
             In pronto's current pull path, a batch pulled through the shaper\n\
             is filtered packet by packet; packets over the rate are dropped\n\
             and counted (`drops`).",
        );

    /// Configures a `Shaper`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Self::build(ctx, false)
    }

    /// Configures the packet or the bandwidth variant.
    pub fn build(ctx: &ConfigCtx<'_>, bandwidth: bool) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let rate = read_rate(&mut a, bandwidth)?;
        a.finish()?;
        Ok(Box::new(Shaper {
            bandwidth,
            rate: GapRate::new(rate),
            last_now: 0,
            drops: 0,
        }))
    }

    fn admit(&mut self, p: &Packet, now: i64) -> bool {
        if self.rate.need_update(now) {
            self.charge(p);
            true
        } else {
            false
        }
    }

    fn charge(&mut self, p: &Packet) {
        if self.bandwidth {
            self.rate.update_with(p.len() as i32);
        } else {
            self.rate.update();
        }
    }
}

fn read_rate(a: &mut crate::Args, bandwidth: bool) -> Result<u32, ConfigError> {
    Ok(if bandwidth {
        let b: Bandwidth = a.read_mp("RATE")?;
        b.0.clamp(0.0, f64::from(u32::MAX)) as u32
    } else {
        a.read_mp("RATE")?
    })
}

impl PullOne for Shaper {
    fn pull_one(&mut self, port: usize, now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        self.last_now = now;
        let need = self.rate.need_update(now);
        if (port == 0 || self.bandwidth) && need {
            let p = inputs.pull_input(0)?;
            self.charge(&p);
            Some(p)
        } else if port == 1 && !need && !self.bandwidth {
            inputs.pull_input(0)
        } else {
            None
        }
    }
}

impl Element for Shaper {
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.last_now = now;
        let mut drops = 0;
        push_each(batch, out, |p, _| {
            if self.admit(p, now) {
                Some(0)
            } else {
                drops += 1;
                None
            }
        });
        self.drops += drops;
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("rate_limited", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("rate"),
            HandlerInfo::read("config"),
            HandlerInfo::write("reset"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "rate" | "config" => Ok(if self.bandwidth {
                unparse_bandwidth(self.rate.rate())
            } else {
                self.rate.rate().to_string()
            }),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "rate" => {
                let mut a = crate::Args::new(value, &["RATE"]);
                let r = read_rate(&mut a, self.bandwidth)
                    .and_then(|r| a.finish().map(|_| r))
                    .map_err(|e| HandlerError::BadValue(e.message))?;
                self.rate.set_rate(r, self.last_now);
                Ok(())
            }
            "reset" => {
                self.rate.reset();
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::pullinputs::testing::Queues;
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    const S: i64 = 1_000_000_000;
    const MS: i64 = 1_000_000;

    #[test]
    fn shapes_pulls() {
        let pool = Pool::new(64).expect("pool");
        let mut e = Shaper {
            bandwidth: false,
            rate: GapRate::new(10),
            last_now: 0,
            drops: 0,
        };
        let q = (0..5).map(|i| t::pkt(&pool, &[i])).collect();
        let mut qs = Queues(vec![q]);
        let t0 = 7 * S;
        assert!(e.pull_one(0, t0, &mut qs).is_some());
        assert!(e.pull_one(0, t0 + MS, &mut qs).is_none());
        // Output 1 gets what output 0 may not take now.
        assert_eq!(
            e.pull_one(1, t0 + MS, &mut qs).map(|p| p.data()[0]),
            Some(1)
        );
        assert!(e.pull_one(0, t0 + 100 * MS, &mut qs).is_some());
        // Both pulls at the same instant: output 0 took this slot, so
        // output 1 may pull.
        assert!(e.pull_one(1, t0 + 100 * MS, &mut qs).is_some());
        assert!(e.pull_one(0, t0 + 150 * MS, &mut qs).is_none());
    }

    #[test]
    fn pulled_batches_and_handlers() {
        let pool = Pool::new(64).expect("pool");
        let mut e = t::configure(&["RATE"], Shaper::configure, "10", 1, 1).expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            (0..4).map(|i| t::pkt(&pool, &[i])).collect(),
            1,
        );
        assert_eq!(out[0].len(), 1);
        assert_eq!(t::read(e.as_ref(), "drops"), "3");
        e.write_handler("rate", "20").expect("writes");
        assert_eq!(t::read(e.as_ref(), "rate"), "20");
        assert!(e.write_handler("rate", "x").is_err());
    }
}
