//! `BandwidthRatedSplitter`: sends up to RATE bytes per second to output 0
//! and the rest to output 1.

use super::ratedsplitter::RatedSplitter;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec, FIELD_OTHER};

/// Splits a packet stream by bandwidth.
pub struct BandwidthRatedSplitter;

impl BandwidthRatedSplitter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("BandwidthRatedSplitter")
        .ports("1/1-2")
        .processing("h/h")
        .keywords(&["RATE", "BURST_DURATION", "BURST_BYTES"])
        // Counts bytes: observes the length, which added or removed headers change.
        .profile(ActionProfile::reads(FIELD_OTHER))
        .doc(
            "BandwidthRatedSplitter(RATE [, KEYWORDS])\n\n\
             Sends packets out output 0 at up to RATE (a bandwidth) and the\n\
             rest out output 1 (dropped if there is no output 1). A packet goes\n\
             to output 0 while the token bucket holds at least 131072 bytes; it\n\
             then takes its length in tokens. The bucket holds 20 ms worth of\n\
             bytes plus 131072 by default (Click's rule).\n\n\
             Ports: 1 push input, 1 or 2 push outputs.\n\
             Keywords:\n  BURST_DURATION  time; capacity is RATE * BURST_DURATION (+131072)\n  \
             BURST_BYTES     integer; capacity in bytes (+131072)\n\
             Handlers:\n  rate (read/write), config (read)",
        );

    /// Configures a `BandwidthRatedSplitter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        RatedSplitter::build(ctx, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    const T0: i64 = 1_000_000_000_000_000_000;

    #[test]
    fn bytes_split() {
        let pool = Pool::new(64).expect("pool");
        // 10000 B/s, BURST_BYTES 100: a full bucket holds the threshold
        // plus 100 bytes plus a fraction, so two packets pass.
        let mut e = t::configure(
            BandwidthRatedSplitter::SPEC.keywords,
            BandwidthRatedSplitter::configure,
            "RATE 10000Bps, BURST_BYTES 100",
            1,
            2,
        )
        .expect("ok");
        let mut ctrl = Control::default();
        let pk = (0..3).map(|_| t::pkt(&pool, &[0; 100])).collect();
        let out = t::push_at(e.as_mut(), &pool, 0, pk, 2, T0, &mut ctrl);
        assert_eq!((out[0].len(), out[1].len()), (2, 1));
        assert_eq!(t::read(e.as_ref(), "rate"), "80.04kbps");
    }
}
