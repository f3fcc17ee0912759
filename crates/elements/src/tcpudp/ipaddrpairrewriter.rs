//! `IPAddrPairRewriter`: NAT per address pair, rewriting source and
//! destination addresses of any IP protocol.

use crate::tcpudp::rwtable::{table_spec, Kind, TableRewriter, TABLE_KEYWORDS};
use crate::{ConfigCtx, ConfigError, Element, Spec};

/// Rewrites IP packets' source and destination addresses along a mapping
/// table keyed by address pair, with replies mapped back.
pub struct IPAddrPairRewriter;

impl IPAddrPairRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = table_spec(Spec::new("IPAddrPairRewriter"))
        .keywords(&TABLE_KEYWORDS)
        .doc(
            "IPAddrPairRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])\n\n\
             NAT per address pair: rewrites the source and destination addresses of\n\
             IP packets of any protocol along a table keyed by (source, destination),\n\
             updating the IP checksum and the TCP/UDP checksum of first fragments (a\n\
             zero UDP checksum stays zero), and sets the destination address\n\
             annotation. A new pair (SA, DA) rewritten to (SA', DA') installs\n\
             (SA, DA) => (SA', DA') [FOUTPUT] and (DA', SA') => (DA, SA) [ROUTPUT].\n\
             With no mapping, the packet's input specification decides. Input\n\
             packets need their IP header annotation.\n\n\
             Input specifications (one per input):\n  \
             drop | discard                drop the packet\n  \
             pass OUTPUT                   send it to OUTPUT unchanged\n  \
             keep FOUTPUT ROUTPUT          map the pair to itself\n  \
             pattern SADDR[-SADDR2] DADDR FOUTPUT ROUTPUT\n      \
             '-' keeps a field; SADDR may be a range L-H or a prefix (a '#'\n      \
             suffix allocates sequentially, otherwise randomly)\n  \
             pattern NAME FOUTPUT ROUTPUT  a pattern from IPRewriterPatterns\n\n\
             IPv6 (pronto's own; Click's is IPv4-only): a pattern's addresses may\n\
             be IPv6 addresses (one family per pattern; SADDR may be a range or a\n\
             /96 to /128 prefix, as in IPAddrRewriter, e.g. 'pattern\n\
             2001:db8::1 2001:db8:2::5 0 1'); IPv6 packets are mapped the\n\
             same way, in a table of their own, after their extension headers are\n\
             walked. IPv6 has no header checksum; the TCP, UDP and ICMPv6\n\
             checksums cover the addresses (pseudo-header) and are updated\n\
             incrementally, in unfragmented packets and first fragments (a zero UDP\n\
             checksum stays zero). A pattern never maps a packet of the other\n\
             family (a mapping failure). 'table' lists IPv6 entries after the IPv4\n\
             ones.\n\n\
             Ports: any number of push inputs and outputs.\n\
             Keywords:\n  \
             TIMEOUT        idle mappings expire after this (default 2 hours)\n  \
             GUARANTEE      keep mappings at least this long after each packet\n                 \
             (default 5s)\n  \
             REAP_INTERVAL / REAP_TIME  reap expired mappings this often\n                 (default 15min)\n  \
             MAPPING_CAPACITY / CAPACITY  most mappings (integer)\n  \
             REPLY_ANNO     annotation byte saved from the first packet and\n                 \
             restored on replies\n\
             Handlers: table (mappings), table_size (nmappings), mapping_failures,\n\
             patterns, patternN (rw), size, capacity (rw), clear (w).",
        );

    /// Configures an `IPAddrPairRewriter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        TableRewriter::configure(ctx, ctx.args(), Kind::Pair, 7200, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{configure, ip6, packet, run_packets};
    use pronto_packet::Pool;

    /// `2001:db8:<a>::<b>`.
    fn a6(a: u16, b: u16) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        v[4..6].copy_from_slice(&a.to_be_bytes());
        v[14..].copy_from_slice(&b.to_be_bytes());
        v
    }

    /// A TCP segment 40000 -> 80 behind a destination-options header,
    /// its checksum computed from scratch.
    fn tcp6(src: [u8; 16], dst: [u8; 16]) -> Vec<u8> {
        let mut m = vec![6, 0, 1, 4, 0, 0, 0, 0]; // destination options: PadN
        m.extend_from_slice(&[0x9c, 0x40, 0x00, 0x50, 0, 0, 0, 1, 0, 0, 0, 0]);
        m.extend_from_slice(&[0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]);
        ip6(src, dst, 60, &m, (6, 8), Some(16))
    }

    #[test]
    fn maps_ipv6_address_pairs_both_ways() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            IPAddrPairRewriter::configure,
            &IPAddrPairRewriter::SPEC,
            "pattern 2001:db8:ffff::1 2001:db8:2::5 0 1, drop",
            2,
            2,
        )
        .expect("configures");
        let (client, nat, vip, backend) = (a6(1, 2), a6(0xffff, 1), a6(0, 0x80), a6(2, 5));
        let p = packet(&pool, &tcp6(client, vip), Some((0, 40)));
        let o = run_packets(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0].len(), 1);
        assert_eq!(o[0][0].data(), &tcp6(nat, backend)[..]);
        assert_eq!(o[0][0].dst_ip6_anno(), backend);
        let p = packet(&pool, &tcp6(backend, nat), Some((0, 40)));
        let o = run_packets(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert_eq!(o[1].len(), 1);
        assert_eq!(o[1][0].data(), &tcp6(vip, client)[..]);
        assert_eq!(o[1][0].dst_ip6_anno(), client);
        // A pair nobody mapped on the `drop` input is dropped.
        let p = packet(&pool, &tcp6(backend, client), Some((0, 40)));
        let o = run_packets(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        assert_eq!(
            e.read_handler("table").expect("h"),
            "(2001:db8:1::2, 2001:db8::80) => (2001:db8:ffff::1, 2001:db8:2::5) [*0 1] i0 exp7200\n\
             (2001:db8:2::5, 2001:db8:ffff::1) => (2001:db8::80, 2001:db8:1::2) [0 *1] i0 exp7200\n"
        );
        // One family per pattern.
        let err = crate::tcpudp::testutil::config_error(configure(
            IPAddrPairRewriter::configure,
            &IPAddrPairRewriter::SPEC,
            "pattern 2001:db8::1 10.0.0.1 0 1",
            1,
            2,
        ));
        assert!(err.message.contains("IPv4 and IPv6"), "{}", err.message);
    }
}
