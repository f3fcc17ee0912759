//! `IPAddrRewriter`: basic NAT, rewriting source addresses (and replies'
//! destination addresses) for any IP protocol.

use crate::tcpudp::rwtable::{table_spec, Kind, TableRewriter, TABLE_KEYWORDS};
use crate::{ConfigCtx, ConfigError, Element, Spec};

/// Rewrites IP packets' source addresses along a mapping table keyed by
/// address; packets to a rewritten address are mapped back.
pub struct IPAddrRewriter;

impl IPAddrRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = table_spec(Spec::new("IPAddrRewriter"))
        .keywords(&TABLE_KEYWORDS)
        .doc(
            "IPAddrRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])\n\n\
             Basic NAT: rewrites the source address of IP packets of any protocol,\n\
             and the destination address of packets sent back to a rewritten\n\
             address, updating the IP checksum and the TCP/UDP checksum of first\n\
             fragments (a zero UDP checksum stays zero). A packet is looked up by\n\
             source address (forward mapping), then by destination address (reply\n\
             mapping); with no mapping, its input's specification decides. Input\n\
             packets need their IP header annotation. Replies get the destination\n\
             address annotation.\n\n\
             Input specifications (one per input):\n  \
             drop | discard                drop the packet\n  \
             pass OUTPUT                   send it to OUTPUT unchanged\n  \
             keep FOUTPUT ROUTPUT          map the address to itself\n  \
             pattern SADDR[-SADDR2] - FOUTPUT ROUTPUT\n      \
             new source address from SADDR, a range L-H or a prefix (a '#'\n      \
             suffix allocates sequentially, otherwise randomly); '-' keeps it;\n      \
             the destination must be '-'\n  \
             pattern NAME FOUTPUT ROUTPUT  a pattern from IPRewriterPatterns\n\
             Packets from the old address go to FOUTPUT, packets to the new one\n\
             to ROUTPUT.\n\n\
             IPv6 (pronto's own; Click's is IPv4-only): a pattern's address may be\n\
             an IPv6 address, range (at most 2^32 addresses) or prefix (/96 to\n\
             /128; all its addresses but the first, the subnet-router anycast\n\
             address, except in a /127), e.g. 'pattern 2001:db8::/120# - 0 1';\n\
             IPv6 packets are mapped the same way, in a table of their own, after\n\
             their extension headers are walked. IPv6 has no header checksum; the\n\
             TCP, UDP and ICMPv6 checksums cover the addresses (pseudo-header) and\n\
             are updated incrementally, in unfragmented packets and first fragments\n\
             (a zero UDP checksum stays zero). A pattern never maps a packet of the\n\
             other family (a mapping failure). 'table' lists IPv6 entries after the\n\
             IPv4 ones.\n\n\
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

    /// Configures an `IPAddrRewriter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        TableRewriter::configure(ctx, ctx.args(), Kind::Addr, 7200, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{configure, ip6, packet, run};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    /// A UDP packet 192.168.1.2:5000 -> 8.8.8.8:53 with UDP checksum 0.
    fn udp_out() -> Vec<u8> {
        let mut v = vec![
            0x45, 0x00, 0x00, 0x20, // version/IHL, TOS, total length 32
            0x12, 0x34, 0x00, 0x00, // id, no fragment
            0x40, 0x11, 0x00, 0x00, // TTL 64, UDP, checksum (below)
            192, 168, 1, 2, // source
            8, 8, 8, 8, // destination
            0x13, 0x88, 0x00, 0x35, // ports 5000 -> 53
            0x00, 0x0c, 0x00, 0x00, // UDP length 12, no checksum
            1, 2, 3, 4, // payload
        ];
        let c = checksum(&v[..20]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        v
    }

    #[test]
    fn maps_source_and_reply() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            IPAddrRewriter::configure,
            &IPAddrRewriter::SPEC,
            "pattern 10.0.0.1-10.0.0.2# - 0 1, drop",
            2,
            2,
        )
        .expect("configures");
        let p = packet(&pool, &udp_out(), Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 1_000_000_000);
        let mut want = udp_out();
        want[12..16].copy_from_slice(&[10, 0, 0, 1]);
        want[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&want[..20]);
        want[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(o[0], vec![want]);
        // The reply to 10.0.0.1 goes back to 192.168.1.2 on output 1.
        let mut reply = udp_out();
        reply[12..16].copy_from_slice(&[8, 8, 8, 8]);
        reply[16..20].copy_from_slice(&[10, 0, 0, 1]);
        reply[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&reply[..20]);
        reply[10..12].copy_from_slice(&c.to_be_bytes());
        let p = packet(&pool, &reply, Some((0, 20)));
        let o = run(e.as_mut(), 1, vec![p], 2, &pool, 2_000_000_000);
        assert_eq!(&o[1][0][16..20], &[192, 168, 1, 2]);
        assert_eq!(checksum(&o[1][0][..20]), 0);
        assert_eq!(e.read_handler("table_size").expect("h"), "1");
        assert_eq!(
            e.read_handler("patterns").expect("h"),
            "10.0.0.1-10.0.0.2 - [1]\n<drop>\n"
        );
        // One bucket, newest entry first.
        assert_eq!(
            e.read_handler("table").expect("h"),
            "0.0.0.0 => 0.0.0.0 [0 *1] i0 exp7200\n\
             192.168.1.2 => 10.0.0.1 [*0 1] i0 exp7200\n"
        );
        e.write_handler("clear", "").expect("clear");
        assert_eq!(e.read_handler("size").expect("h"), "0");
    }

    /// `2001:db8:<a>::<b>`.
    fn a6(a: u16, b: u16) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        v[4..6].copy_from_slice(&a.to_be_bytes());
        v[14..].copy_from_slice(&b.to_be_bytes());
        v
    }

    /// A UDP datagram 5000 -> 53 (`csum`: with its checksum, computed
    /// from scratch, or 0), behind the fragment header `ext` if any.
    fn udp6(src: [u8; 16], dst: [u8; 16], ext: &[u8], csum: bool) -> Vec<u8> {
        let mut m = ext.to_vec();
        m.extend_from_slice(&[0x13, 0x88, 0x00, 0x35, 0x00, 0x0c, 0x00, 0x00, 1, 2, 3, 4]);
        let next = if ext.is_empty() { 17 } else { 44 };
        ip6(src, dst, next, &m, (17, ext.len()), csum.then_some(6))
    }

    /// A TCP segment 40000 -> 443 with its checksum.
    fn tcp6(src: [u8; 16], dst: [u8; 16]) -> Vec<u8> {
        let mut m = vec![
            0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff,
        ];
        m.extend_from_slice(&[0, 0, 0, 0]);
        ip6(src, dst, 6, &m, (6, 0), Some(16))
    }

    /// An ICMPv6 echo request with its checksum.
    fn echo6(src: [u8; 16], dst: [u8; 16]) -> Vec<u8> {
        let m = [128, 0, 0, 0, 0x12, 0x34, 0, 1, b'h', b'i'];
        ip6(src, dst, 58, &m, (58, 0), Some(2))
    }

    #[test]
    fn maps_ipv6_sources_and_replies() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            IPAddrRewriter::configure,
            &IPAddrRewriter::SPEC,
            "pattern 2001:db8:ffff::1 - 0 1, pass 1",
            2,
            2,
        )
        .expect("configures");
        let (inside, nat, srv) = (a6(1, 2), a6(0xffff, 1), a6(3, 9));
        let send = |e: &mut Box<dyn crate::Element>, port: usize, bytes: &[u8]| {
            let p = packet(&pool, bytes, Some((0, 40)));
            run(e.as_mut(), port, vec![p], 2, &pool, 0)
        };
        // UDP, TCP and ICMPv6 from the inside host: the source rewritten,
        // the transport checksum updated for the pseudo-header.
        for (before, after) in [
            (udp6(inside, srv, &[], true), udp6(nat, srv, &[], true)),
            (udp6(inside, srv, &[], false), udp6(nat, srv, &[], false)),
            (tcp6(inside, srv), tcp6(nat, srv)),
            (echo6(inside, srv), echo6(nat, srv)),
        ] {
            assert_eq!(send(&mut e, 0, &before)[0], vec![after]);
        }
        // Replies to the new address go back to the inside host.
        let o = send(&mut e, 1, &udp6(srv, nat, &[], true));
        assert_eq!(o[1], vec![udp6(srv, inside, &[], true)]);
        let o = send(&mut e, 1, &tcp6(srv, nat));
        assert_eq!(o[1], vec![tcp6(srv, inside)]);
        // A first fragment carries the checksum; a later one only has its
        // addresses changed (its bytes where a checksum would be stay).
        let first = [17, 0, 0x00, 0x01, 0, 0, 0, 7];
        let o = send(&mut e, 0, &udp6(inside, srv, &first, true));
        assert_eq!(o[0], vec![udp6(nat, srv, &first, true)]);
        let later = [17, 0, 0x00, 0x08, 0, 0, 0, 7];
        let mut frag = udp6(inside, srv, &later, true);
        let o = send(&mut e, 0, &frag);
        frag[8..24].copy_from_slice(&nat);
        assert_eq!(o[0], vec![frag]);
        // An IPv4 packet on the IPv6 pattern's input is a mapping failure.
        let o = send(&mut e, 0, &udp_out());
        assert!(o[0].is_empty() && o[1].is_empty());
        assert_eq!(e.read_handler("mapping_failures").expect("h"), "1");
        assert_eq!(e.read_handler("table_size").expect("h"), "1");
        assert_eq!(
            e.read_handler("patterns").expect("h"),
            "2001:db8:ffff::1 - [1]\n<nochange>\n"
        );
        assert_eq!(
            e.read_handler("table").expect("h"),
            "2001:db8:1::2 => 2001:db8:ffff::1 [*0 1] i0 exp7200\n\
             :: => :: [0 *1] i0 exp7200\n"
        );
    }

    #[test]
    fn ipv6_address_range_sequential() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            IPAddrRewriter::configure,
            &IPAddrRewriter::SPEC,
            "pattern 2001:db8:ffff::1-2001:db8:ffff::2# - 0 1, drop",
            2,
            2,
        )
        .expect("configures");
        let srv = a6(3, 9);
        for (host, public) in [(1, Some(1)), (2, Some(2)), (3, None)] {
            let p = packet(&pool, &udp6(a6(1, host), srv, &[], true), Some((0, 40)));
            let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
            match public {
                Some(n) => assert_eq!(o[0], vec![udp6(a6(0xffff, n), srv, &[], true)]),
                None => assert!(o[0].is_empty() && o[1].is_empty()),
            }
        }
        assert_eq!(e.read_handler("mapping_failures").expect("h"), "1");
        assert_eq!(
            e.read_handler("patterns").expect("h"),
            "2001:db8:ffff::1-2001:db8:ffff::2 - [2]\n<drop>\n"
        );
    }
}
