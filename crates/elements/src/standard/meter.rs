//! `Meter`: classifies a packet stream by its arrival rate in packets per
//! second.

use super::bandwidthmeter::BandwidthMeter;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Sends each packet to the output matching the current packet rate.
pub struct Meter;

impl Meter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Meter")
        .ports("1/2-")
        .processing("h/h")
        .profile(ActionProfile::NONE)
        .doc(
            "Meter(RATE1, RATE2, ..., RATEn)\n\n\
             Measures the arrival rate in packets per second with an\n\
             exponentially weighted moving average (per 1 ms jiffy, stability\n\
             shift 4) and sends each packet to output 0 if the rate is below\n\
             RATE1, output 1 if it is below RATE2, ..., output n otherwise.\n\
             RATEs must increase. (As in Click, they are read as bandwidths, so\n\
             a bare number is meant.)\n\n\
             Ports: 1 push input, n+1 push outputs.\n\
             Handlers:\n  rate (read): the current rate\n  meters (read): the RATEs",
        );

    /// Configures a `Meter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        BandwidthMeter::build(ctx, true)
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
    fn counts_packets() {
        let pool = Pool::new(64).expect("pool");
        // Threshold 500 packets/s = 0.5 per jiffy (512 scaled).
        let mut e = t::configure(&[], Meter::configure, "500, 5000", 1, 3).expect("ok");
        let mut ctrl = Control::default();
        let mut ports = Vec::new();
        for i in 0..20 {
            let out = t::push_at(
                e.as_mut(),
                &pool,
                0,
                vec![t::pkt(&pool, &[0; 1500])],
                3,
                T0 + i * MS,
                &mut ctrl,
            );
            ports.push(out.iter().position(|o| !o.is_empty()).expect("sent"));
        }
        // One packet per ms is 1000/s: the average passes 500/s once
        // enough epochs have been folded in, and never reaches 5000/s.
        assert_eq!(
            ports,
            vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1]
        );
        assert_eq!(t::read(e.as_ref(), "meters"), "5005000");
    }
}
