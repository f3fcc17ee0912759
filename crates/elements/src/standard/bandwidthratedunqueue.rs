//! `BandwidthRatedUnqueue`: pulls packets at a fixed bandwidth and pushes
//! them on.

use super::ratedunqueue::RatedUnqueue;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec, FIELD_OTHER};

/// A pull-to-push converter limited to RATE bytes per second.
pub struct BandwidthRatedUnqueue;

impl BandwidthRatedUnqueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("BandwidthRatedUnqueue")
        .ports("1/1")
        .processing("l/h")
        .keywords(&["RATE", "BURST_DURATION", "BURST_BYTES"])
        // Counts bytes: observes the length, which added or removed headers change.
        .profile(ActionProfile::reads(FIELD_OTHER))
        .doc(
            "BandwidthRatedUnqueue(RATE [, KEYWORDS])\n\n\
             Pulls packets at RATE bytes per second (a bandwidth such as\n\
             `384kbps` or `2000Bps`) and pushes them out its output. The token\n\
             bucket holds 20 ms worth of bytes by default, plus 131072 bytes;\n\
             a packet is pulled only while the bucket holds at least 131072\n\
             bytes, and it then takes its length in tokens (Click's rule).\n\n\
             Ports: 1 pull input, 1 push output.\n\
             Keywords:\n  BURST_DURATION  time; capacity is RATE * BURST_DURATION (+131072)\n  \
             BURST_BYTES     integer; capacity in bytes (+131072)\n\
             Handlers:\n  rate (read/write), active (read/write), calls (read), config (read)",
        );

    /// Configures a `BandwidthRatedUnqueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        RatedUnqueue::build(ctx, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::{Control, TaskStatus};
    use pronto_packet::Pool;

    const T0: i64 = 1_000_000_000_000_000_000;
    const MS: i64 = 1_000_000;

    #[test]
    fn bytes_paced() {
        let pool = Pool::new(64).expect("pool");
        // 200 B/s, capacity 4 + 131072 bytes: the first run may send
        // packets while 131072 bytes remain, i.e. 4 bytes' worth = 1 packet.
        let mut e = t::configure_with(
            BandwidthRatedUnqueue::SPEC.keywords,
            BandwidthRatedUnqueue::configure,
            "RATE 200Bps",
            &[false],
            &[true],
        )
        .expect("ok");
        assert_eq!(t::read(e.as_ref(), "rate"), "1.6kbps");
        assert_eq!(e.task_pull(T0), Some((0, 1)));
        let mut ctrl = Control::default();
        let pk = vec![t::pkt(&pool, &[0; 100])];
        let (st, out) = t::run_task(e.as_mut(), &pool, pk, 1, T0, &mut ctrl);
        assert_eq!(st, TaskStatus::Busy);
        assert_eq!(out[0].len(), 1);
        drop(out);
        // 96 bytes (and a fraction) short at 0.2 bytes per jiffy: 481 ms.
        assert_eq!(e.task_pull(T0), None);
        let (st, _) = t::run_task(e.as_mut(), &pool, vec![], 1, T0, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(T0 + 481 * MS));
        assert_eq!(e.task_pull(T0 + 480 * MS), None);
        assert_eq!(e.task_pull(T0 + 481 * MS), Some((0, 1)));
    }
}
