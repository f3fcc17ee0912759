//! `TCPRewriter`: address and port translation for TCP.

use crate::tcpudp::rwcore::{rewriter_spec, CoreRewriter, Flavor, BASE_KEYWORDS};
use crate::{ConfigCtx, ConfigError, Element, Spec, FIELDS_5TUPLE, FIELD_OTHER};

/// Rewrites TCP flows along a mapping table, like `IPRewriter` restricted
/// to TCP. Sequence-number deltas that `FTPPortMapper` installs are applied
/// to later segments (and SACK blocks) of the flow.
pub struct TCPRewriter;

const KEYWORDS: &[&str] = &[
    BASE_KEYWORDS[0],
    BASE_KEYWORDS[1],
    BASE_KEYWORDS[2],
    BASE_KEYWORDS[3],
    BASE_KEYWORDS[4],
    BASE_KEYWORDS[5],
    BASE_KEYWORDS[6],
    BASE_KEYWORDS[7],
    "TCP_NODATA_TIMEOUT",
    "TCP_GUARANTEE",
    "TCP_TIMEOUT",
    "TCP_DONE_TIMEOUT",
];

impl TCPRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = rewriter_spec(Spec::new("TCPRewriter"), FIELDS_5TUPLE | FIELD_OTHER)
        .keywords(KEYWORDS)
        .doc(
            "TCPRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])\n\n\
             Rewrites TCP packets' addresses and ports along a mapping table, as\n\
             IPRewriter does for TCP (see IPRewriter for the input specifications).\n\
             Non-TCP packets and non-first fragments are dropped unless their input\n\
             is 'pass'. IPv6 packets are mapped as IPRewriter maps them.\n\n\
             Ports: any number of push inputs and outputs.\n\
             Keywords: TCP_TIMEOUT/TIMEOUT (24h), TCP_DONE_TIMEOUT (4min),\n\
             TCP_NODATA_TIMEOUT (5min), TCP_GUARANTEE/GUARANTEE (5s), REAP_INTERVAL/REAP_TIME,\n\
             MAPPING_CAPACITY (a number, or a rewriter\n\
             whose capacity to share), DST_ANNO, REPLY_ANNO.\n\
             Handlers: table (mappings), table_size, nmappings, mapping_failures,\n\
             patterns, patternN (rw), size, capacity (rw), clear (w).",
        );

    /// Configures a `TCPRewriter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        CoreRewriter::configure(ctx, Flavor::Tcp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{configure, packet, run};
    use pronto_packet::Pool;

    #[test]
    fn rewrites_tcp_and_drops_udp() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            TCPRewriter::configure,
            &TCPRewriter::SPEC,
            "pattern - - 10.1.1.1 8080 0 1",
            1,
            2,
        )
        .expect("configures");
        let syn = [
            0x45, 0x00, 0x00, 0x28, 0, 0, 0x40, 0x00, 0x40, 0x06, 0x76,
            0x20, // header, checksum
            192, 168, 0, 2, 1, 2, 3, 4, // 192.168.0.2 -> 1.2.3.4
            0x9c, 0x40, 0x00, 0x50, // 40000 -> 80
            0, 0, 0, 1, 0, 0, 0, 0, // seq 1, ack 0
            0x50, 0x02, 0xff, 0xff, 0x4e, 0xa1, 0, 0, // SYN, window, checksum
        ];
        assert_eq!(pronto_packet::wire::checksum(&syn[..20]), 0);
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &syn, Some((0, 20)))],
            2,
            &pool,
            0,
        );
        let got = &o[0][0];
        assert_eq!(&got[16..20], &[10, 1, 1, 1]);
        assert_eq!(&got[22..24], &8080u16.to_be_bytes());
        assert_eq!(pronto_packet::wire::checksum(&got[..20]), 0);
        let ps = pronto_packet::wire::pseudo_header_sum(&got[12..16], &got[16..20], 6, 20);
        assert_eq!(
            pronto_packet::wire::fold(pronto_packet::wire::ones_sum(&got[20..], ps)),
            0xffff
        );
        assert_eq!(
            e.read_handler("table").expect("h"),
            "(192.168.0.2, 40000, 1.2.3.4, 80) => (192.168.0.2, 40000, 10.1.1.1, 8080) [*0 1] i0 exp300\n\
             (10.1.1.1, 8080, 192.168.0.2, 40000) => (1.2.3.4, 80, 192.168.0.2, 40000) [0 *1] i0 exp300\n"
        );
        // A RST closes the flow both ways: the done timeout (4 min) applies.
        let mut rst = syn;
        rst[33] = 0x04;
        run(
            e.as_mut(),
            0,
            vec![packet(&pool, &rst, Some((0, 20)))],
            2,
            &pool,
            0,
        );
        assert!(e
            .read_handler("table")
            .expect("h")
            .starts_with("(192.168.0.2, 40000, 1.2.3.4, 80) => (192.168.0.2, 40000, 10.1.1.1, 8080) [*0 1] i0 exp240\n"));
        let mut udp = syn;
        udp[9] = 17;
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &udp, Some((0, 20)))],
            2,
            &pool,
            0,
        );
        assert!(o[0].is_empty() && o[1].is_empty());
    }
}
