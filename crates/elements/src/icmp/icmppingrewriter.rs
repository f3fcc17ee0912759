//! `ICMPPingRewriter`: NAT for ICMP echo requests and replies.

use crate::tcpudp::rwtable::{table_spec, Kind, TableRewriter, TABLE_KEYWORDS};
use crate::{ConfigCtx, ConfigError, Element, Spec};

const KEYWORDS: &[&str] = &[
    TABLE_KEYWORDS[0],
    TABLE_KEYWORDS[1],
    TABLE_KEYWORDS[2],
    TABLE_KEYWORDS[3],
    TABLE_KEYWORDS[4],
    TABLE_KEYWORDS[5],
    TABLE_KEYWORDS[6],
    "DST_ANNO",
];

/// Rewrites ICMP and ICMPv6 echo requests' addresses and identifiers along
/// a mapping table; echo replies to a rewritten request are mapped back.
pub struct ICMPPingRewriter;

impl ICMPPingRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = table_spec(Spec::new("ICMPPingRewriter"))
        .keywords(KEYWORDS)
        .doc(
            "ICMPPingRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])\n\n\
             Rewrites ICMP echo requests' source/destination addresses and\n\
             identifiers so that pings pass through a NAT, and maps the echo replies\n\
             back, updating the IP and ICMP checksums. A new request (SRC, DST, ID)\n\
             is rewritten by its input's specification to (SRC2, DST2, ID2), usually\n\
             a pattern with an identifier range, e.g. 'pattern 10.0.0.1 1024-65535#\n\
             - - 0 1'. Requests of the flow go to FOUTPUT, replies to ROUTPUT.\n\
             Unexpected echo replies, other ICMP types, non-first fragments and\n\
             other protocols are dropped unless the input is 'pass OUTPUT'. Input\n\
             packets need their IP header annotation.\n\n\
             IPv6 (pronto's own; Click's is IPv4-only): ICMPv6 echo requests (128)\n\
             and replies (129), after any extension headers, are mapped the same\n\
             way by patterns with IPv6 addresses (single addresses, e.g. 'pattern\n\
             2001:db8::1 1024-65535# - - 0 1'), in a table of their own; the\n\
             ICMPv6 checksum covers the pseudo-header, so it is updated for the\n\
             addresses as well as the identifier (incrementally). A pattern\n\
             never maps a packet of the other family (a mapping failure, dropped);\n\
             'table' lists IPv6 entries after the IPv4 ones, addresses in RFC\n\
             5952 form.\n\n\
             Input specifications: drop, pass OUTPUT, keep FOUTPUT ROUTPUT,\n\
             pattern SADDR SPORT DADDR DPORT FOUTPUT ROUTPUT, pattern NAME FOUTPUT\n\
             ROUTPUT (see IPRewriter).\n\n\
             Ports: any number of push inputs and outputs.\n\
             Keywords:\n  \
             DST_ANNO       set the destination address annotation (default true)\n  \
             TIMEOUT        idle mappings expire after this (default 5min)\n  \
             GUARANTEE      keep mappings at least this long after each packet\n                 \
             (default 5s)\n  \
             REAP_INTERVAL / REAP_TIME  reap expired mappings this often\n                 (default 15min)\n  \
             MAPPING_CAPACITY / CAPACITY  most mappings (integer)\n  \
             REPLY_ANNO     annotation byte restored on replies\n\
             Handlers: table (mappings), table_size (nmappings), mapping_failures,\n\
             patterns, patternN (rw), size, capacity (rw), clear (w).",
        );

    /// Configures an `ICMPPingRewriter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let dst_anno = a.read_or("DST_ANNO", true)?;
        TableRewriter::configure(ctx, a, Kind::Ping, 300, dst_anno)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{configure, ip6, packet, run, run_packets};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    /// An ICMP echo of `ty` from `src` to `dst`, identifier `id`.
    fn echo(ty: u8, src: [u8; 4], dst: [u8; 4], id: u16) -> Vec<u8> {
        let mut v = vec![
            0x45, 0x00, 0x00, 0x20, // version/IHL, TOS, total length 32
            0x00, 0x01, 0x00, 0x00, // id, no fragment
            0x40, 0x01, 0x00, 0x00, // TTL 64, ICMP, checksum (below)
        ];
        v.extend_from_slice(&src);
        v.extend_from_slice(&dst);
        v.extend_from_slice(&[ty, 0, 0, 0]); // type, code, checksum (below)
        v.extend_from_slice(&id.to_be_bytes()); // identifier
        v.extend_from_slice(&[0, 1, b'p', b'i', b'n', b'g']); // sequence, data
        let c = checksum(&v[..20]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        let c = checksum(&v[20..]);
        v[22..24].copy_from_slice(&c.to_be_bytes());
        v
    }

    #[test]
    fn request_and_reply() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            ICMPPingRewriter::configure,
            &ICMPPingRewriter::SPEC,
            "pattern 10.0.0.1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("configures");
        let p = packet(
            &pool,
            &echo(8, [192, 168, 1, 2], [8, 8, 8, 8], 7),
            Some((0, 20)),
        );
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![echo(8, [10, 0, 0, 1], [8, 8, 8, 8], 1024)]);
        let p = packet(
            &pool,
            &echo(0, [8, 8, 8, 8], [10, 0, 0, 1], 1024),
            Some((0, 20)),
        );
        let o = run(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert_eq!(o[1], vec![echo(0, [8, 8, 8, 8], [192, 168, 1, 2], 7)]);
        // An unexpected reply is dropped.
        let p = packet(
            &pool,
            &echo(0, [8, 8, 8, 8], [10, 0, 0, 1], 99),
            Some((0, 20)),
        );
        let o = run(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        // Reply keys print the identifier plus one as the reference's hosts
        // compute it (1024 = 0x0400 becomes 0x0500, 7 becomes 0x0107).
        assert_eq!(
            e.read_handler("table").expect("h"),
            "(8.8.8.8, 10.0.0.1, 1280) => (8.8.8.8, 192.168.1.2, 263) [0 *1] i0 exp300\n\
             (192.168.1.2, 8.8.8.8, 7) => (10.0.0.1, 8.8.8.8, 1024) [*0 1] i0 exp300\n"
        );
    }

    /// An IPv6 address `2001:db8:<a>::<b>`.
    fn a6(a: u16, b: u16) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        v[4..6].copy_from_slice(&a.to_be_bytes());
        v[14..].copy_from_slice(&b.to_be_bytes());
        v
    }

    /// An ICMPv6 echo of `ty` from `src` to `dst`, identifier `id`, after
    /// the extension headers `ext` (whose last names ICMPv6), its checksum
    /// computed from scratch over the pseudo-header.
    fn echo6(ty: u8, src: [u8; 16], dst: [u8; 16], id: u16, ext: &[u8]) -> Vec<u8> {
        let mut m = ext.to_vec();
        m.extend_from_slice(&[ty, 0, 0, 0]); // type, code, checksum (below)
        m.extend_from_slice(&id.to_be_bytes()); // identifier
        m.extend_from_slice(&[0, 9, b'p', b'i', b'n', b'g', b'6']); // sequence, data
        let next = if ext.is_empty() { 58 } else { 0 };
        ip6(src, dst, next, &m, (58, ext.len()), Some(2))
    }

    fn v6_rewriter() -> Box<dyn crate::Element> {
        configure(
            ICMPPingRewriter::configure,
            &ICMPPingRewriter::SPEC,
            "pattern 2001:db8:ffff::1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("configures")
    }

    #[test]
    fn icmpv6_request_and_reply() {
        let pool = Pool::new(64).expect("pool");
        let mut e = v6_rewriter();
        let (inside, outside, public) = (a6(1, 2), a6(2, 8), a6(0xffff, 1));
        let p = packet(&pool, &echo6(128, inside, outside, 7, &[]), Some((0, 40)));
        let o = run_packets(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0].len(), 1);
        assert_eq!(o[0][0].data(), &echo6(128, public, outside, 1024, &[])[..]);
        assert_eq!(o[0][0].dst_ip6_anno(), outside);
        // The reply comes back with the public identifier, and leaves with
        // the inside host's address and identifier, on output 1.
        let p = packet(
            &pool,
            &echo6(129, outside, public, 1024, &[]),
            Some((0, 40)),
        );
        let o = run_packets(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert_eq!(o[1].len(), 1);
        assert_eq!(o[1][0].data(), &echo6(129, outside, inside, 7, &[])[..]);
        assert_eq!(o[1][0].dst_ip6_anno(), inside);
        // A second inside host with the same identifier gets the next one.
        let p = packet(&pool, &echo6(128, a6(1, 3), outside, 7, &[]), Some((0, 40)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![echo6(128, public, outside, 1025, &[])]);
        // An unexpected reply is dropped.
        let p = packet(&pool, &echo6(129, outside, public, 99, &[]), Some((0, 40)));
        let o = run(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        assert_eq!(
            e.read_handler("table").expect("h"),
            "(2001:db8:1::2, 2001:db8:2::8, 7) => (2001:db8:ffff::1, 2001:db8:2::8, 1024) [*0 1] i0 exp300\n\
             (2001:db8:2::8, 2001:db8:ffff::1, 1280) => (2001:db8:2::8, 2001:db8:1::2, 263) [0 *1] i0 exp300\n\
             (2001:db8:1::3, 2001:db8:2::8, 7) => (2001:db8:ffff::1, 2001:db8:2::8, 1025) [*0 1] i0 exp300\n\
             (2001:db8:2::8, 2001:db8:ffff::1, 1281) => (2001:db8:2::8, 2001:db8:1::3, 263) [0 *1] i0 exp300\n"
        );
        assert_eq!(e.read_handler("table_size").expect("h"), "2");
    }

    #[test]
    fn icmpv6_echo_after_extension_headers() {
        let pool = Pool::new(64).expect("pool");
        let mut e = v6_rewriter();
        // Hop-by-hop options: next header ICMPv6, length 0, a PadN of 4.
        let hbh = [58, 0, 1, 4, 0, 0, 0, 0];
        let (inside, outside, public) = (a6(1, 2), a6(2, 8), a6(0xffff, 1));
        let p = packet(
            &pool,
            &echo6(128, inside, outside, 0xbeef, &hbh),
            Some((0, 40)),
        );
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![echo6(128, public, outside, 1024, &hbh)]);
        let p = packet(
            &pool,
            &echo6(129, outside, public, 1024, &hbh),
            Some((0, 40)),
        );
        let o = run(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert_eq!(o[1], vec![echo6(129, outside, inside, 0xbeef, &hbh)]);
    }

    #[test]
    fn icmpv6_other_messages_and_families_are_not_mapped() {
        let pool = Pool::new(64).expect("pool");
        let mut e = v6_rewriter();
        // A neighbour solicitation (135) is not an echo: input 0 drops it.
        let mut ns = echo6(128, a6(1, 2), a6(2, 8), 7, &[]);
        ns[40] = 135;
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &ns, Some((0, 40)))],
            2,
            &pool,
            0,
        );
        assert!(o[0].is_empty() && o[1].is_empty());
        // An IPv4 echo meets an IPv6 pattern: no translation, a failure.
        let p = packet(
            &pool,
            &echo(8, [192, 168, 1, 2], [8, 8, 8, 8], 7),
            Some((0, 20)),
        );
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        assert_eq!(e.read_handler("mapping_failures").expect("h"), "1");
        assert_eq!(e.read_handler("table_size").expect("h"), "0");
        // And an IPv6 echo meets an IPv4 pattern the same way.
        let mut e = configure(
            ICMPPingRewriter::configure,
            &ICMPPingRewriter::SPEC,
            "pattern 10.0.0.1 1024-65535# - - 0 1, pass 1",
            2,
            2,
        )
        .expect("configures");
        let p = packet(
            &pool,
            &echo6(128, a6(1, 2), a6(2, 8), 7, &[]),
            Some((0, 40)),
        );
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        assert_eq!(e.read_handler("mapping_failures").expect("h"), "1");
        // `pass` sends an unexpected IPv6 reply on unchanged.
        let r = echo6(129, a6(2, 8), a6(1, 2), 7, &[]);
        let o = run(
            e.as_mut(),
            1,
            vec![packet(&pool, &r, Some((0, 40)))],
            2,
            &pool,
            0,
        );
        assert_eq!(o[1], vec![r]);
    }

    #[test]
    fn all_zero_reply_gets_checksum_ffff() {
        // An echo reply with identifier 0, sequence 0 and no data sums to
        // +0: its checksum is 0xffff, which the incremental update from
        // identifier 1 must give (not 0).
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            ICMPPingRewriter::configure,
            &ICMPPingRewriter::SPEC,
            "pattern 2.0.0.2 - 0-65535# 0 1, drop",
            2,
            2,
        )
        .expect("configures");
        let bare = |ty: u8, src: [u8; 4], dst: [u8; 4], id: u16| {
            let mut v = echo(ty, src, dst, id);
            v.truncate(28);
            v[2..4].copy_from_slice(&28u16.to_be_bytes());
            v[26..28].copy_from_slice(&[0, 0]);
            v[10..12].copy_from_slice(&[0, 0]);
            let c = checksum(&v[..20]);
            v[10..12].copy_from_slice(&c.to_be_bytes());
            v[22..24].copy_from_slice(&[0, 0]);
            let c = checksum(&v[20..]);
            v[22..24].copy_from_slice(&c.to_be_bytes());
            v
        };
        // Identifier 0 is taken first, so the flow of 1.0.0.2 gets 1.
        let first = bare(8, [1, 0, 0, 1], [5, 0, 0, 5], 10230);
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &first, Some((0, 20)))],
            2,
            &pool,
            0,
        );
        assert_eq!(o[0], vec![bare(8, [2, 0, 0, 2], [5, 0, 0, 5], 0)]);
        let second = bare(8, [1, 0, 0, 2], [5, 0, 0, 5], 0);
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &second, Some((0, 20)))],
            2,
            &pool,
            0,
        );
        assert_eq!(o[0], vec![bare(8, [2, 0, 0, 2], [5, 0, 0, 5], 1)]);
        let reply = bare(0, [5, 0, 0, 5], [2, 0, 0, 2], 1);
        let o = run(
            e.as_mut(),
            1,
            vec![packet(&pool, &reply, Some((0, 20)))],
            2,
            &pool,
            0,
        );
        let want = bare(0, [5, 0, 0, 5], [1, 0, 0, 2], 0);
        assert_eq!(&want[22..24], &[0xff, 0xff]);
        assert_eq!(o[1], vec![want]);
    }
}
