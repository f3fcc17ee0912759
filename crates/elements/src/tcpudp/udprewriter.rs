//! `UDPRewriter`: address and port translation, UDP-style.

use crate::tcpudp::rwcore::{rewriter_spec, CoreRewriter, Flavor, BASE_KEYWORDS};
use crate::{ConfigCtx, ConfigError, Element, Spec, FIELDS_5TUPLE, FIELD_OTHER};

/// Rewrites UDP (and TCP and DCCP) flows along one mapping table, with no
/// TCP state tracking.
pub struct UDPRewriter;

const KEYWORDS: &[&str] = &[
    BASE_KEYWORDS[0],
    BASE_KEYWORDS[1],
    BASE_KEYWORDS[2],
    BASE_KEYWORDS[3],
    BASE_KEYWORDS[4],
    BASE_KEYWORDS[5],
    BASE_KEYWORDS[6],
    BASE_KEYWORDS[7],
    "UDP_TIMEOUT",
    "UDP_STREAMING_TIMEOUT",
    "STREAMING_TIMEOUT",
    "UDP_GUARANTEE",
];

impl UDPRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = rewriter_spec(Spec::new("UDPRewriter"), FIELDS_5TUPLE | FIELD_OTHER)
        .keywords(KEYWORDS)
        .doc(
            "UDPRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])\n\n\
             Rewrites UDP packets' addresses and ports along a mapping table (see\n\
             IPRewriter for the input specifications). TCP and DCCP packets are\n\
             rewritten too, in the same table keyed by addresses and ports only.\n\
             Other protocols and non-first fragments are dropped unless their input\n\
             is 'pass'. A zero UDP checksum stays zero. IPv6 packets are mapped as\n\
             IPRewriter maps them (in an IPv6 table whose key holds the protocol).\n\n\
             Ports: any number of push inputs and outputs.\n\
             Keywords: UDP_TIMEOUT/TIMEOUT (5min), UDP_STREAMING_TIMEOUT/\n\
             STREAMING_TIMEOUT (default UDP_TIMEOUT), UDP_GUARANTEE/GUARANTEE (5s),\n\
             REAP_INTERVAL/REAP_TIME, MAPPING_CAPACITY (a number, or a rewriter\n\
             whose capacity to share), DST_ANNO, REPLY_ANNO.\n\
             Handlers: table (mappings), table_size, nmappings, mapping_failures,\n\
             patterns, patternN (rw), size, capacity (rw), clear (w).",
        );

    /// Configures an `UDPRewriter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        CoreRewriter::configure(ctx, Flavor::Udp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{configure, packet, run};
    use crate::{Out, TaskStatus};
    use pronto_packet::{Batch, Pool};

    #[test]
    fn expiry_after_timeout_and_reap() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            UDPRewriter::configure,
            &UDPRewriter::SPEC,
            "pattern 10.0.0.1 - - - 0 0, UDP_TIMEOUT 10, UDP_GUARANTEE 0, REAP_INTERVAL 5",
            1,
            1,
        )
        .expect("configures");
        let udp = [
            0x45, 0x00, 0x00, 0x1c, 0, 0, 0, 0, 0x40, 0x11, 0,
            0, // header (checksum unchecked)
            192, 168, 0, 2, 1, 2, 3, 4, // addresses
            0x00, 0x07, 0x00, 0x07, 0x00, 0x08, 0x00, 0x00, // ports 7 -> 7, no checksum
        ];
        let s = 1_000_000_000i64;
        let pool2 = Pool::new(4).expect("pool");
        let tick = |e: &mut dyn Element, now: i64| {
            let mut bufs = [Batch::new()];
            let mut ctrl = crate::Control::default();
            let mut out = Out::new(&mut bufs, &pool2, now, &mut ctrl);
            e.run_task(&mut Batch::new(), &mut out)
        };
        assert!(e.has_task());
        // The reaping timer starts with the router.
        assert_eq!(tick(e.as_mut(), 0), TaskStatus::SleepUntil(5 * s));
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &udp, Some((0, 20)))],
            1,
            &pool,
            0,
        );
        assert_eq!(&o[0][0][12..16], &[10, 0, 0, 1]);
        assert_eq!(&o[0][0][26..28], &[0, 0]);
        assert_eq!(e.read_handler("size").expect("h"), "1");
        // At 6 s the reap runs, but the flow lives 10 s.
        let mut other = udp;
        other[19] = 5;
        run(
            e.as_mut(),
            0,
            vec![packet(&pool, &other, Some((0, 20)))],
            1,
            &pool,
            6 * s,
        );
        assert_eq!(tick(e.as_mut(), 6 * s), TaskStatus::SleepUntil(11 * s));
        assert_eq!(e.read_handler("size").expect("h"), "2");
        // Packets alone reap nothing; the timer at 11 s removes the first
        // flow, the second lives until 16 s.
        run(
            e.as_mut(),
            0,
            vec![packet(&pool, &other, Some((0, 20)))],
            1,
            &pool,
            12 * s,
        );
        assert_eq!(e.read_handler("size").expect("h"), "2");
        assert_eq!(tick(e.as_mut(), 12 * s), TaskStatus::SleepUntil(17 * s));
        assert_eq!(e.read_handler("size").expect("h"), "1");
        assert_eq!(e.read_handler("nmappings").expect("h"), "1");
        // With no packets at all, the timer empties the table.
        assert_eq!(tick(e.as_mut(), 40 * s), TaskStatus::SleepUntil(45 * s));
        assert_eq!(e.read_handler("size").expect("h"), "0");
    }
}
