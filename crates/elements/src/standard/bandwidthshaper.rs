//! `BandwidthShaper`: lets at most RATE bytes per second through a pull
//! path.

use super::shaper::Shaper;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec, FIELD_OTHER};

/// A pull shaper counting bytes.
pub struct BandwidthShaper;

impl BandwidthShaper {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("BandwidthShaper")
        .ports("1/1-2")
        .processing("l/l")
        .keywords(&["RATE"])
        // Counts bytes: observes the length, which added or removed headers change.
        .profile(ActionProfile::reads(FIELD_OTHER))
        .doc(
            "BandwidthShaper(RATE)\n\n\
             A pull element that lets at most RATE (a bandwidth) through: a\n\
             pull pulls the input only when the per-second byte counter allows\n\
             it, then charges the packet's length. (As in Click, a pull on\n\
             output 1 behaves like one on output 0.)\n\n\
             Ports: 1 pull input, 1 or 2 pull outputs.\n\
             Handlers:\n  rate (read/write), config (read), reset (write)\n\n\
             In pronto's current pull path, a batch pulled through the shaper\n\
             is filtered packet by packet; packets over the rate are dropped\n\
             and counted (`drops`).",
        );

    /// Configures a `BandwidthShaper`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Shaper::build(ctx, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn bytes_per_second() {
        let pool = Pool::new(64).expect("pool");
        // 1000 B/s and 100-byte packets: 10 packets a second, spaced.
        let mut e =
            t::configure(&["RATE"], BandwidthShaper::configure, "1000Bps", 1, 1).expect("ok");
        assert_eq!(t::read(e.as_ref(), "rate"), "8kbps");
        let mut ctrl = Control::default();
        let s = 3_000_000_000;
        let pk = (0..3).map(|_| t::pkt(&pool, &[0; 100])).collect();
        let out = t::push_at(e.as_mut(), &pool, 0, pk, 1, s, &mut ctrl);
        assert_eq!(out[0].len(), 1);
        drop(out);
        let pk = (0..3).map(|_| t::pkt(&pool, &[0; 100])).collect();
        let out = t::push_at(e.as_mut(), &pool, 0, pk, 1, s + 100_000_000, &mut ctrl);
        assert_eq!(out[0].len(), 1);
    }
}
