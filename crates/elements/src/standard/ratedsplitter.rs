//! `RatedSplitter`: sends up to RATE packets per second to output 0 and
//! the rest to output 1.

use pronto_packet::{Batch, Packet};

use super::ratedunqueue::{RateConfig, BANDWIDTH_THRESH};
use super::tokenbucket::ClickTokenBucket;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Splits a packet stream by rate with Click's jiffy token bucket (also
/// serves `BandwidthRatedSplitter`).
pub struct RatedSplitter {
    cfg: RateConfig,
    tb: ClickTokenBucket,
    drops: u64,
}

impl RatedSplitter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RatedSplitter")
        .ports("1/1-2")
        .processing("h/h")
        .keywords(&["RATE", "BURST_DURATION", "BURST_SIZE"])
        .profile(ActionProfile::NONE)
        .doc(
            "RatedSplitter(RATE [, KEYWORDS])\n\n\
             Sends up to RATE packets per second out output 0 and the remaining\n\
             packets out output 1 (dropped if there is no output 1). A token\n\
             bucket holding 20 ms worth of packets by default, refilled once per\n\
             millisecond, decides (Click's arithmetic).\n\n\
             Ports: 1 push input, 1 or 2 push outputs.\n\
             Keywords:\n  BURST_DURATION  time; bucket capacity is RATE * BURST_DURATION\n  \
             BURST_SIZE      integer; bucket capacity\n\
             Handlers:\n  rate (read/write), config (read)",
        );

    /// Configures a `RatedSplitter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Self::build(ctx, false)
    }

    /// Configures the packet or the bandwidth variant.
    pub fn build(ctx: &ConfigCtx<'_>, bandwidth: bool) -> Result<Box<dyn Element>, ConfigError> {
        let cfg = RateConfig::read(ctx, bandwidth)?;
        Ok(Box::new(RatedSplitter {
            cfg,
            tb: cfg.bucket(),
            drops: 0,
        }))
    }

    fn action(&mut self, p: &Packet, nout: usize) -> Option<usize> {
        let pass = if self.cfg.bandwidth {
            if self.tb.contains(BANDWIDTH_THRESH) {
                self.tb.remove(p.len() as u32);
                true
            } else {
                false
            }
        } else {
            self.tb.remove_if(1)
        };
        if pass {
            Some(0)
        } else if nout > 1 {
            Some(1)
        } else {
            self.drops += 1;
            None
        }
    }
}

impl Element for RatedSplitter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        // One clock reading per batch: every packet of a batch arrives at
        // the same instant.
        self.tb.refill(out.now);
        let nout = out.noutputs();
        push_each(batch, out, |p, _| self.action(p, nout));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("rate_limited", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("rate"), HandlerInfo::read("config")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "rate" | "config" => Ok(self.cfg.unparse(&self.tb)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "rate" => {
                let r = self.cfg.parse_rate(value)?;
                self.cfg = self.cfg.with_rate(r);
                self.tb.assign(self.cfg.rate, self.cfg.tokens);
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

    const T0: i64 = 1_000_000_000_000_000_000;
    const MS: i64 = 1_000_000;

    #[test]
    fn splits_by_rate() {
        let pool = Pool::new(128).expect("pool");
        // 100 packets/s, 20 ms -> 2 tokens.
        let mut e = t::configure(
            RatedSplitter::SPEC.keywords,
            RatedSplitter::configure,
            "100",
            1,
            2,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let pk = (0..5).map(|i| t::pkt(&pool, &[i])).collect();
        let out = t::push_at(e.as_mut(), &pool, 0, pk, 2, T0, &mut ctrl);
        assert_eq!(t::bytes(&out[0]), vec![vec![0], vec![1]]);
        assert_eq!(out[1].len(), 3);
        drop(out);
        // Just under 0.1 token per jiffy: one more after 11 ms.
        let pk = (0..2).map(|i| t::pkt(&pool, &[i])).collect();
        let out = t::push_at(e.as_mut(), &pool, 0, pk, 2, T0 + 10 * MS, &mut ctrl);
        assert_eq!((out[0].len(), out[1].len()), (0, 2));
        drop(out);
        let pk = (0..2).map(|i| t::pkt(&pool, &[i])).collect();
        let out = t::push_at(e.as_mut(), &pool, 0, pk, 2, T0 + 11 * MS, &mut ctrl);
        assert_eq!((out[0].len(), out[1].len()), (1, 1));
        assert_eq!(t::read(e.as_ref(), "rate"), "100");
    }

    #[test]
    fn one_output_drops() {
        let pool = Pool::new(64).expect("pool");
        let mut e = t::configure(
            RatedSplitter::SPEC.keywords,
            RatedSplitter::configure,
            "RATE 10, BURST_SIZE 1",
            1,
            1,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let pk = (0..3).map(|i| t::pkt(&pool, &[i])).collect();
        let out = t::push_at(e.as_mut(), &pool, 0, pk, 1, T0, &mut ctrl);
        assert_eq!(out[0].len(), 1);
        e.write_handler("rate", "20").expect("writes");
        assert_eq!(t::read(e.as_ref(), "config"), "20");
    }
}
