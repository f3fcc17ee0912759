//! `IPRewriter`: network address and port translation for TCP and UDP.

use crate::tcpudp::rwcore::{rewriter_spec, CoreRewriter, Flavor, BASE_KEYWORDS};
use crate::{ConfigCtx, ConfigError, Element, Spec, FIELDS_5TUPLE, FIELD_OTHER};

/// Rewrites TCP and UDP flows' addresses and ports along a mapping table
/// (NAPT), with replies mapped back.
pub struct IPRewriter;

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
    "UDP_TIMEOUT",
    "UDP_STREAMING_TIMEOUT",
    "UDP_GUARANTEE",
];

impl IPRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = rewriter_spec(Spec::new("IPRewriter"), FIELDS_5TUPLE | FIELD_OTHER)
        .keywords(KEYWORDS)
        .doc(
            "IPRewriter(INPUTSPEC1, ..., INPUTSPECn [, KEYWORDS])\n\n\
             Rewrites the source and destination addresses and ports of TCP and UDP\n\
             packets (NAPT), with incremental IP, TCP and UDP checksum updates (a zero\n\
             UDP checksum stays zero). Flows are keyed by (saddr, sport, daddr, dport)\n\
             in one table for TCP and one for UDP. Other protocols, non-first\n\
             fragments and packets with under 8 transport bytes are dropped unless\n\
             their input is 'pass'. Input packets need their IP header annotation.\n\n\
             IPv6 (beyond Click): IPv6 packets are mapped too, in a table of their own\n\
             (flows read past the extension headers; no header checksum; TCP and UDP\n\
             checksums updated for the new addresses and ports, an all-zero UDP\n\
             checksum left alone). Pattern addresses may be IPv6 (single addresses\n\
             with ports, a range being of ports; a pattern of addresses only,\n\
             'SADDR DADDR', takes an IPv6 source range or /96-/128 prefix). A\n\
             pattern never translates between families: a\n\
             packet of the family its pattern (or mapper) lacks is a mapping failure,\n\
             counted and dropped; a pattern with no address, 'keep' and 'pass' serve\n\
             both. Tables list IPv6 flows with RFC 5952 addresses.\n\n\
             Input specifications (one per input; used for packets with no mapping):\n  \
             drop | discard                drop the packet\n  \
             pass OUTPUT | passthrough     send it to OUTPUT unchanged, no mapping\n  \
             keep FOUTPUT ROUTPUT          map the flow unchanged both ways\n  \
             pattern SADDR SPORT DADDR DPORT FOUTPUT ROUTPUT\n      \
             rewrite along the pattern: '-' keeps a field; SADDR may be a range A-B\n      \
             or a prefix, SPORT a range L-H; a '#' suffix allocates sequentially,\n      \
             '?' randomly, otherwise the packet's own port is preferred\n  \
             pattern NAME FOUTPUT ROUTPUT  a pattern named by IPRewriterPatterns\n\
             A packet with a mapping is rewritten and sent to the mapping's output,\n\
             FOUTPUT for the flow and ROUTPUT for its replies, whatever input it\n\
             arrives on.\n\n\
             Ports: any number of push inputs and outputs.\n\
             Keywords:\n  \
             TCP_TIMEOUT / TIMEOUT   TCP flows with data both ways (default 24h)\n  \
             TCP_DONE_TIMEOUT        closed TCP flows (default 4min)\n  \
             TCP_NODATA_TIMEOUT      other TCP flows (default 5min)\n  \
             TCP_GUARANTEE / GUARANTEE  TCP guarantee after each packet (default 5s)\n  \
             UDP_TIMEOUT             (default 5min)\n  \
             UDP_STREAMING_TIMEOUT   flows of 3+ packets both ways (default UDP_TIMEOUT)\n  \
             UDP_GUARANTEE           (default 5s)\n  \
             REAP_INTERVAL / REAP_TIME  reap expired flows this often (default 15min)\n  \
             MAPPING_CAPACITY / CAPACITY  most flows: an integer, or the name of another\n  \
                                     IPRewriter/TCPRewriter/UDPRewriter whose capacity\n  \
                                     this one shares (their flows count together; one\n  \
                                     that needs room evicts the group's first\n  \
                                     best-effort flow to expire)\n  \
             DST_ANNO                set the destination address annotation (default true)\n  \
             REPLY_ANNO              annotation byte restored on replies\n\
             Handlers: tcp_table, udp_table (tcp_mappings, udp_mappings), table_size,\n\
             nmappings, mapping_failures, patterns, patternN (rw), size, capacity (rw),\n\
             clear (w).",
        );

    /// Configures an `IPRewriter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        CoreRewriter::configure(ctx, Flavor::Ip)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{config_error, configure, packet, run, run_packets};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    fn rw(config: &str, nin: usize, nout: usize) -> Box<dyn Element> {
        configure(IPRewriter::configure, &IPRewriter::SPEC, config, nin, nout).expect("configures")
    }

    /// A UDP packet 192.168.1.2:5000 -> 8.8.8.8:53, 4 payload bytes.
    fn udp_out(csum: bool) -> Vec<u8> {
        let mut v = vec![
            0x45, 0x00, 0x00, 0x20, // version/IHL, TOS, total length 32
            0x12, 0x34, 0x00, 0x00, // id, no fragment
            0x40, 0x11, 0x00, 0x00, // TTL 64, UDP, checksum (filled below)
            192, 168, 1, 2, // source
            8, 8, 8, 8, // destination
            0x13, 0x88, 0x00, 0x35, // ports 5000 -> 53
            0x00, 0x0c, 0x00, 0x00, // UDP length 12, checksum (below)
            1, 2, 3, 4, // payload
        ];
        fix(&mut v, csum);
        v
    }

    /// Fills in the IP checksum and (if `l4`) the UDP/TCP checksum.
    fn fix(v: &mut [u8], l4: bool) {
        v[10] = 0;
        v[11] = 0;
        let c = checksum(&v[..20]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        if l4 {
            let proto = v[9];
            let off = if proto == 6 { 36 } else { 26 };
            v[off] = 0;
            v[off + 1] = 0;
            let ps =
                pronto_packet::wire::pseudo_header_sum(&v[12..16], &v[16..20], proto, v.len() - 20);
            let c = !pronto_packet::wire::fold(pronto_packet::wire::ones_sum(&v[20..], ps));
            let c = if c == 0 && proto == 17 { 0xffff } else { c };
            v[off..off + 2].copy_from_slice(&c.to_be_bytes());
        }
    }

    fn verify(v: &[u8]) {
        assert_eq!(checksum(&v[..20]), 0, "IP checksum");
        let proto = v[9];
        let off = if proto == 6 { 36 } else { 26 };
        if proto == 17 && v[off] == 0 && v[off + 1] == 0 {
            return;
        }
        let ps =
            pronto_packet::wire::pseudo_header_sum(&v[12..16], &v[16..20], proto, v.len() - 20);
        assert_eq!(
            pronto_packet::wire::fold(pronto_packet::wire::ones_sum(&v[20..], ps)),
            0xffff,
            "L4 checksum"
        );
    }

    const NAT: &str = "pattern 10.0.0.1 1024-65535# - - 0 1, drop";

    /// An IPv6 address from its text.
    fn a6(s: &str) -> [u8; 16] {
        s.parse::<std::net::Ipv6Addr>().expect("address").octets()
    }

    /// An IPv6 packet `src` -> `dst` of protocol `proto` carrying `l4`
    /// (a TCP or UDP header and payload), its checksum computed whole.
    fn v6(proto: u8, src: &str, dst: &str, l4: &[u8]) -> Vec<u8> {
        let mut v = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
        v[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
        v.extend_from_slice(&a6(src));
        v.extend_from_slice(&a6(dst));
        v.extend_from_slice(l4);
        fix6(&mut v);
        v
    }

    /// Recomputes an IPv6 packet's TCP or UDP checksum from scratch.
    fn fix6(v: &mut [u8]) {
        let off = if v[6] == 6 { 56 } else { 46 };
        v[off] = 0;
        v[off + 1] = 0;
        let ps = pronto_packet::wire::pseudo_header_sum(&v[8..24], &v[24..40], v[6], v.len() - 40);
        let c = !pronto_packet::wire::fold(pronto_packet::wire::ones_sum(&v[40..], ps));
        let c = if c == 0 && v[6] == 17 { 0xffff } else { c };
        v[off..off + 2].copy_from_slice(&c.to_be_bytes());
    }

    /// A UDP header `sport` -> `dport` with 4 payload bytes.
    fn udp6(sport: u16, dport: u16) -> Vec<u8> {
        let mut u = vec![0, 0, 0, 0, 0, 12, 0, 0, 0xde, 0xad, 0xbe, 0xef];
        u[0..2].copy_from_slice(&sport.to_be_bytes());
        u[2..4].copy_from_slice(&dport.to_be_bytes());
        u
    }

    /// A TCP header `sport` -> `dport` with `flags` and 3 payload bytes.
    fn tcp6(sport: u16, dport: u16, flags: u8) -> Vec<u8> {
        let mut t = vec![0u8; 23];
        t[0..2].copy_from_slice(&sport.to_be_bytes());
        t[2..4].copy_from_slice(&dport.to_be_bytes());
        t[4..8].copy_from_slice(&0x0102_0304u32.to_be_bytes());
        t[12] = 0x50;
        t[13] = flags;
        t[14] = 0x20;
        t[20..23].copy_from_slice(b"abc");
        t
    }

    #[test]
    fn ipv6_source_napt_both_directions_with_checksums() {
        let pool = Pool::new(64).expect("pool");
        let mut e = rw("pattern 2001:db8:ffff::1 1024-65535# - - 0 1, drop", 2, 2);
        // UDP out: 2001:db8:1::2:5000 -> 2001:db8:2::53:53.
        let out = v6(17, "2001:db8:1::2", "2001:db8:2::53", &udp6(5000, 53));
        let p = packet(&pool, &out, Some((0, 40)));
        let o = run_packets(e.as_mut(), 0, vec![p], 2, &pool, 0);
        let want = v6(17, "2001:db8:ffff::1", "2001:db8:2::53", &udp6(1024, 53));
        assert_eq!(o[0][0].data(), &want[..]);
        assert_eq!(o[0][0].dst_ip6_anno(), a6("2001:db8:2::53"));
        // Its reply on input 1 comes back to the client on output 1.
        let back = v6(17, "2001:db8:2::53", "2001:db8:ffff::1", &udp6(53, 1024));
        let p = packet(&pool, &back, Some((0, 40)));
        let o = run_packets(e.as_mut(), 1, vec![p], 2, &pool, 0);
        let want = v6(17, "2001:db8:2::53", "2001:db8:1::2", &udp6(53, 5000));
        assert_eq!(o[1][0].data(), &want[..]);
        assert_eq!(o[1][0].dst_ip6_anno(), a6("2001:db8:1::2"));

        // TCP takes the next port (one sequence for both protocols).
        let syn = v6(6, "2001:db8:1::2", "2001:db8:2::80", &tcp6(40000, 80, 0x02));
        let p = packet(&pool, &syn, Some((0, 40)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        let want = v6(
            6,
            "2001:db8:ffff::1",
            "2001:db8:2::80",
            &tcp6(1025, 80, 0x02),
        );
        assert_eq!(o[0], vec![want]);
        let synack = v6(
            6,
            "2001:db8:2::80",
            "2001:db8:ffff::1",
            &tcp6(80, 1025, 0x12),
        );
        let p = packet(&pool, &synack, Some((0, 40)));
        let o = run(e.as_mut(), 1, vec![p], 2, &pool, 0);
        let want = v6(6, "2001:db8:2::80", "2001:db8:1::2", &tcp6(80, 40000, 0x12));
        assert_eq!(o[1], vec![want]);

        // Data went both ways: the TCP flow has the data timeout (24h).
        assert_eq!(e.read_handler("nmappings").expect("h"), "2");
        assert_eq!(
            e.read_handler("udp_table").expect("h"),
            "(2001:db8:1::2, 5000, 2001:db8:2::53, 53) => (2001:db8:ffff::1, 1024, 2001:db8:2::53, 53) [*0 1] i0 exp300\n\
             (2001:db8:2::53, 53, 2001:db8:ffff::1, 1024) => (2001:db8:2::53, 53, 2001:db8:1::2, 5000) [0 *1] i0 exp300\n"
        );
        assert_eq!(
            e.read_handler("tcp_table").expect("h"),
            "(2001:db8:1::2, 40000, 2001:db8:2::80, 80) => (2001:db8:ffff::1, 1025, 2001:db8:2::80, 80) [*0 1] i0 exp86400\n\
             (2001:db8:2::80, 80, 2001:db8:ffff::1, 1025) => (2001:db8:2::80, 80, 2001:db8:1::2, 40000) [0 *1] i0 exp86400\n"
        );
        assert_eq!(
            e.read_handler("patterns").expect("h"),
            "2001:db8:ffff::1 1024-65535 - - [2]\n<drop>\n"
        );
        assert_eq!(
            e.read_handler("tcp_lookup 2001:db8:1::2 40000 2001:db8:2::80 80")
                .expect("h"),
            "2001:db8:ffff::1 1025 2001:db8:2::80 80"
        );
    }

    #[test]
    fn ipv6_extension_headers_and_zero_udp_checksum() {
        let pool = Pool::new(64).expect("pool");
        let mut e = rw("pattern - - 2001:db8::99 8080 0 1", 1, 2);
        // A hop-by-hop options header (8 bytes of padding) before UDP.
        let mut pkt = vec![0x60, 0, 0, 0, 0, 20, 0, 64];
        pkt.extend_from_slice(&a6("2001:db8::1"));
        pkt.extend_from_slice(&a6("2001:db8::2"));
        pkt.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
        let mut u = udp6(7, 80);
        let ps = pronto_packet::wire::pseudo_header_sum(&pkt[8..24], &pkt[24..40], 17, u.len());
        let c = !pronto_packet::wire::fold(pronto_packet::wire::ones_sum(&u, ps));
        u[6..8].copy_from_slice(&c.to_be_bytes());
        pkt.extend_from_slice(&u);
        let p = packet(&pool, &pkt, Some((0, 40)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        let got = &o[0][0];
        assert_eq!(&got[24..40], &a6("2001:db8::99"));
        assert_eq!(&got[48..52], &[0, 7, 0x1f, 0x90]);
        let ps = pronto_packet::wire::pseudo_header_sum(&got[8..24], &got[24..40], 17, 12);
        assert_eq!(
            pronto_packet::wire::fold(pronto_packet::wire::ones_sum(&got[48..], ps)),
            0xffff
        );
        // A zero UDP checksum (none) stays zero.
        let mut z = v6(17, "2001:db8::1", "2001:db8::2", &udp6(9, 80));
        z[46..48].copy_from_slice(&[0, 0]);
        let p = packet(&pool, &z, Some((0, 40)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(&o[0][0][46..48], &[0, 0]);
        assert_eq!(&o[0][0][42..44], &8080u16.to_be_bytes());
    }

    #[test]
    fn a_pattern_never_maps_the_other_family() {
        let pool = Pool::new(64).expect("pool");
        // Input 0 has an IPv4 pattern, input 1 an IPv6 one, input 2 passes,
        // input 3 keeps (both families).
        let mut e = rw(
            "pattern 10.0.0.1 - - - 0 1, pattern 2001:db8::1 - - - 0 1, pass 1, keep 0 1",
            4,
            2,
        );
        let six = v6(17, "2001:db8:1::2", "2001:db8:2::53", &udp6(5000, 53));
        let p = packet(&pool, &six, Some((0, 40)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        let p = packet(&pool, &udp_out(true), Some((0, 20)));
        let o = run(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        assert_eq!(e.read_handler("mapping_failures").expect("h"), "2");
        assert_eq!(e.read_handler("nmappings").expect("h"), "0");
        let p = packet(&pool, &six, Some((0, 40)));
        let o = run(e.as_mut(), 2, vec![p], 2, &pool, 0);
        assert_eq!(o[1], vec![six.clone()]);
        let p = packet(&pool, &six, Some((0, 40)));
        let o = run(e.as_mut(), 3, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![six.clone()]);
        assert_eq!(e.read_handler("nmappings").expect("h"), "1");
        // A truncated IPv6 header, an ICMPv6 message and a later fragment
        // get no mapping: passed on the pass input.
        let icmp = v6(
            58,
            "2001:db8::1",
            "2001:db8::2",
            &[128, 0, 0, 0, 0, 1, 0, 1],
        );
        let mut frag = v6(44, "2001:db8::1", "2001:db8::2", &[17, 0, 0, 8, 0, 0, 0, 1]);
        frag.extend_from_slice(&[0; 8]);
        for b in [&six[..30], &icmp[..], &frag[..]] {
            let p = packet(&pool, b, Some((0, 40)));
            let o = run(e.as_mut(), 2, vec![p], 2, &pool, 0);
            assert_eq!(o[1], vec![b.to_vec()]);
            let p = packet(&pool, b, Some((0, 40)));
            let o = run(e.as_mut(), 1, vec![p], 2, &pool, 0);
            assert!(o[0].is_empty() && o[1].is_empty());
        }
        let err = config_error(configure(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern 10.0.0.1 - 2001:db8::1 - 0 0",
            1,
            1,
        ));
        assert_eq!(
            err.message,
            "input spec 0: IPv4 and IPv6 addresses in one pattern (patterns never translate between families)"
        );
        let err = config_error(configure(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern 2001:db8::/64 - - - 0 0",
            1,
            1,
        ));
        assert_eq!(
            err.message,
            "input spec 0: bad source address (an IPv6 range or prefix needs a pattern of \
             addresses only, SADDR DADDR)"
        );
    }

    #[test]
    fn source_napt_and_reply() {
        let pool = Pool::new(64).expect("pool");
        let mut e = rw(NAT, 2, 2);
        let p = packet(&pool, &udp_out(true), Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 1_000_000_000);
        assert_eq!(o[1].len(), 0);
        let mut want = udp_out(true);
        want[12..16].copy_from_slice(&[10, 0, 0, 1]); // new source
        want[20..22].copy_from_slice(&1024u16.to_be_bytes()); // new port
        fix(&mut want, true);
        assert_eq!(o[0], vec![want.clone()]);
        verify(&o[0][0]);

        // The reply 8.8.8.8:53 -> 10.0.0.1:1024 on input 1 goes back to
        // 192.168.1.2:5000 on output 1.
        let mut reply = vec![
            0x45, 0x00, 0x00, 0x20, 0x00, 0x01, 0x00, 0x00, 0x40, 0x11, 0, 0, // header
            8, 8, 8, 8, 10, 0, 0, 1, // addresses
            0x00, 0x35, 0x04, 0x00, 0x00, 0x0c, 0, 0, // 53 -> 1024
            9, 9, 9, 9,
        ];
        fix(&mut reply, true);
        let p = packet(&pool, &reply, Some((0, 20)));
        let out = run_packets(e.as_mut(), 1, vec![p], 2, &pool, 2_000_000_000);
        assert_eq!(out[0].len(), 0);
        let got = out[1][0].data().to_vec();
        assert_eq!(&got[16..20], &[192, 168, 1, 2]);
        assert_eq!(&got[22..24], &5000u16.to_be_bytes());
        verify(&got);
        assert_eq!(out[1][0].dst_ip_anno(), [192, 168, 1, 2]);
        assert_eq!(e.read_handler("nmappings").expect("h"), "1");
        assert_eq!(e.read_handler("size").expect("h"), "1");
        assert_eq!(
            e.read_handler("udp_table").expect("h"),
            "(192.168.1.2, 5000, 8.8.8.8, 53) => (10.0.0.1, 1024, 8.8.8.8, 53) [*0 1] i0 exp300\n\
             (8.8.8.8, 53, 10.0.0.1, 1024) => (8.8.8.8, 53, 192.168.1.2, 5000) [0 *1] i0 exp300\n"
        );
        assert_eq!(e.read_handler("tcp_table").expect("h"), "");
        assert_eq!(
            e.read_handler("patterns").expect("h"),
            "10.0.0.1 1024-65535 - - [1]\n<drop>\n"
        );
    }

    #[test]
    fn zero_udp_checksum_stays_zero_and_ports_are_sequential_across_protocols() {
        let pool = Pool::new(64).expect("pool");
        let mut e = rw(NAT, 2, 2);
        let p = packet(&pool, &udp_out(false), Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(&o[0][0][26..28], &[0, 0]);
        assert_eq!(&o[0][0][20..22], &1024u16.to_be_bytes());
        verify(&o[0][0]);
        // A TCP SYN takes the next port: one counter for both protocols.
        let mut tcp = vec![
            0x45, 0x00, 0x00, 0x28, 0, 0, 0x40, 0x00, 0x40, 0x06, 0, 0, // header
            192, 168, 1, 3, 1, 2, 3, 4, // addresses
            0x9c, 0x40, 0x00, 0x50, // 40000 -> 80
            0, 0, 0, 1, 0, 0, 0, 0, // seq, ack
            0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0, // offset 5, SYN, window, checksum, urg
        ];
        fix(&mut tcp, true);
        let p = packet(&pool, &tcp, Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(&o[0][0][20..22], &1025u16.to_be_bytes());
        assert_eq!(&o[0][0][12..16], &[10, 0, 0, 1]);
        verify(&o[0][0]);
        assert_eq!(e.read_handler("table_size").expect("h"), "2");
    }

    #[test]
    fn unmapped_and_non_tcp_udp_packets() {
        let pool = Pool::new(64).expect("pool");
        let mut e = rw("pattern 10.0.0.1 1024-65535# - - 0 1, drop, pass 1", 3, 2);
        // A reply with no mapping on the 'drop' input is dropped.
        let p = packet(&pool, &udp_out(true), Some((0, 20)));
        let o = run(e.as_mut(), 1, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        // ICMP on a pattern input is dropped; on a pass input it passes.
        let mut icmp = udp_out(false);
        icmp[9] = 1;
        fix(&mut icmp, false);
        let p = packet(&pool, &icmp, Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
        let p = packet(&pool, &icmp, Some((0, 20)));
        let o = run(e.as_mut(), 2, vec![p], 2, &pool, 0);
        assert_eq!(o[1], vec![icmp.clone()]);
        // A non-first fragment is dropped too.
        let mut frag = udp_out(true);
        frag[6] = 0x00;
        frag[7] = 0x10;
        fix(&mut frag, false);
        let p = packet(&pool, &frag, Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty());
        // A UDP packet passed on input 2 makes no mapping.
        let p = packet(&pool, &udp_out(true), Some((0, 20)));
        let o = run(e.as_mut(), 2, vec![p], 2, &pool, 0);
        assert_eq!(o[1], vec![udp_out(true)]);
        assert_eq!(e.read_handler("nmappings").expect("h"), "0");
        // No network header: dropped, no panic.
        let p = packet(&pool, &udp_out(true), None);
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty() && o[1].is_empty());
    }

    #[test]
    fn a_flow_made_early_in_a_batch_serves_its_later_packets() {
        // Entries are looked up for the whole batch first (a batch of at
        // least eight: fewer are looked up packet by packet): the packets
        // after the one that makes the flow must still find it.
        let pool = Pool::new(64).expect("pool");
        let mut e = rw(NAT, 2, 2);
        let mut other = udp_out(true);
        other[15] = 9; // another destination: another flow
        fix(&mut other, true);
        let mut frames = vec![udp_out(true), udp_out(true), other.clone()];
        frames.extend(std::iter::repeat_n(udp_out(true), 9));
        let pkts = frames
            .iter()
            .map(|b| packet(&pool, b, Some((0, 20))))
            .collect();
        let o = run(e.as_mut(), 0, pkts, 2, &pool, 0);
        let ports: Vec<u16> = o[0]
            .iter()
            .map(|v| u16::from_be_bytes([v[20], v[21]]))
            .collect();
        let mut want = vec![1024, 1024, 1025];
        want.extend([1024; 9]);
        assert_eq!(ports, want);
        o[0].iter().for_each(|v| verify(v));
        assert_eq!(e.read_handler("nmappings").expect("h"), "2");
        // The same packets one at a time (the path without the batch
        // pass) come out the same, byte for byte.
        let mut one = rw(NAT, 2, 2);
        let mut each = Vec::new();
        for b in &frames {
            let p = packet(&pool, b, Some((0, 20)));
            let o1 = run(one.as_mut(), 0, vec![p], 2, &pool, 0);
            assert!(o1[1].is_empty());
            each.extend(o1[0].iter().cloned());
        }
        assert_eq!(each, o[0]);
        assert_eq!(one.read_handler("nmappings").expect("h"), "2");
    }

    #[test]
    fn keep_and_clear_and_capacity() {
        let pool = Pool::new(64).expect("pool");
        let mut e = rw("keep 0 1, MAPPING_CAPACITY 1", 1, 2);
        let p = packet(&pool, &udp_out(true), Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![udp_out(true)]);
        assert_eq!(e.read_handler("capacity").expect("h"), "1");
        // A second flow does not fit: all flows are guaranteed, so the new
        // one fails.
        let mut other = udp_out(true);
        other[15] = 9;
        fix(&mut other, true);
        let p = packet(&pool, &other, Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert!(o[0].is_empty());
        assert_eq!(e.read_handler("mapping_failures").expect("h"), "1");
        assert_eq!(e.read_handler("size").expect("h"), "1");
        e.write_handler("clear", "").expect("clear");
        assert_eq!(e.read_handler("size").expect("h"), "0");
        assert_eq!(e.read_handler("nmappings").expect("h"), "0");
        e.write_handler("pattern0", "pattern 1.1.1.1 - - - 1 0")
            .expect("pattern");
        assert_eq!(e.read_handler("pattern0").expect("h"), "1.1.1.1 - - -\n");
    }

    #[test]
    fn configuration_errors() {
        let err = |c: &str, nin: usize| {
            config_error(configure(
                IPRewriter::configure,
                &IPRewriter::SPEC,
                c,
                nin,
                2,
            ))
            .message
        };
        assert_eq!(err("drop", 2), "need 2 arguments, one per input port");
        assert_eq!(
            err("pattern 10.0.0.1 1024-65535# - - 0 2", 1),
            "input spec 0: output port out of range"
        );
        assert_eq!(
            err("pattern x - - - 0 1", 1),
            "input spec 0: bad source address"
        );
        assert_eq!(err("pattern 0 1", 1), "input spec 0: syntax error");
        assert_eq!(
            err("pattern NAT 0 1", 1),
            "input spec 0: no such pattern 'NAT'"
        );
        assert_eq!(
            err("drop 1", 1),
            "input spec 0: syntax error, expected 'drop'"
        );
        assert_eq!(err("keep 0", 1), "input spec 0: bad forward port");
        assert_eq!(err("frob", 1), "input spec 0: unknown specification");
        assert_eq!(err("pass 3", 1), "input spec 0: output port out of range");
        assert_eq!(
            err("drop, MAPPING_CAPACITY x", 1),
            "MAPPING_CAPACITY: `x` is neither a number nor the name of a rewriter \
             (IPRewriter, TCPRewriter, UDPRewriter) whose capacity to share"
        );
        assert_eq!(err("drop, MAPPING_CAPACITY -1", 1), "bad MAPPING_CAPACITY");
        // Every bad specification is reported, not only the first.
        assert_eq!(
            err(
                "pattern 1.0.0.1 1x - - 0 1, pattern 1.0.0.0 0-255 - - 0 1, \
                 pattern 1.0.0.0 456-19 - - 0 1, pattern 1.0.0.0 456-65536 - - 0 1",
                4
            ),
            "input spec 0: bad source port\ninput spec 2: bad source port\n\
             input spec 3: bad source port"
        );
    }
    #[test]
    fn tcp_lookup_answers_the_rewritten_flow() {
        let pool = Pool::new(64).expect("pool");
        let mut e = rw(NAT, 2, 2);
        let mut v = udp_out(true);
        v[9] = 6; // the same ports and addresses as TCP
        v.extend_from_slice(&[0; 8]);
        v[2..4].copy_from_slice(&40u16.to_be_bytes());
        v[32] = 0x50; // data offset 5
        fix(&mut v, true);
        let p = packet(&pool, &v, Some((0, 20)));
        let o = run(e.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0].len(), 1);
        let look = |e: &dyn Element, q: &str| e.read_handler(&format!("tcp_lookup {q}"));
        assert_eq!(
            look(e.as_ref(), "192.168.1.2 5000 8.8.8.8 53").expect("h"),
            "10.0.0.1 1024 8.8.8.8 53"
        );
        assert_eq!(
            look(e.as_ref(), "8.8.8.8 53 10.0.0.1 1024").expect("h"),
            "8.8.8.8 53 192.168.1.2 5000"
        );
        assert_eq!(look(e.as_ref(), "8.8.8.8 53 10.0.0.1 1025").expect("h"), "");
        assert!(look(e.as_ref(), "8.8.8.8 53 10.0.0.1").is_err());
        assert!(look(e.as_ref(), "8.8.8.8 53 10.0.0.1 65536").is_err());
    }
}

#[cfg(test)]
mod conformance {
    //! Replays IP packets of the `07_nat_source` conformance case through
    //! `IPRewriter(pattern 10.0.0.1 1024-65535# - - 0 1, drop)`.

    use super::*;
    use crate::tcpudp::testutil::{configure, packet, run};
    use pronto_packet::Pool;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
            .collect()
    }

    /// Pushes every `I port hlen hex` line; returns what came out of each
    /// output, and the expected `O port hex` lines.
    /// Packets per output, as bytes.
    type PerOutput = Vec<Vec<Vec<u8>>>;

    pub(super) fn replay(text: &str) -> (PerOutput, PerOutput, Box<dyn Element>) {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern 10.0.0.1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("configures");
        let mut got = vec![Vec::new(), Vec::new()];
        let mut want = vec![Vec::new(), Vec::new()];
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                ["I", port, hl, h] => {
                    let port: usize = port.parse().expect("port");
                    let hl: usize = hl.parse().expect("hlen");
                    let p = packet(&pool, &hex(h), Some((0, hl)));
                    let o = run(
                        e.as_mut(),
                        port,
                        vec![p],
                        2,
                        &pool,
                        1_600_000_000_000_000_000,
                    );
                    for (i, v) in o.into_iter().enumerate() {
                        got[i].extend(v);
                    }
                }
                ["O", port, h] => want[port.parse::<usize>().expect("port")].push(hex(h)),
                _ => {}
            }
        }
        (got, want, e)
    }

    #[test]
    fn first_packets_of_nat_source() {
        let (got, want, e) = replay(include_str!("../../tests/data/nat_source_head.txt"));
        for port in 0..2 {
            for (i, (g, w)) in got[port].iter().zip(&want[port]).enumerate() {
                assert_eq!(g, w, "output {port}, packet {i}");
            }
        }
        assert_eq!((got[0].len(), got[1].len()), (NAT_HEAD_OUT, NAT_HEAD_IN));
        assert_eq!(e.read_handler("nmappings").expect("h"), NAT_HEAD_MAPPINGS);
    }

    /// Set `PRONTO_NAT_FULL` to a full vector file to replay the whole case.
    #[test]
    fn full_nat_source_when_available() {
        let Ok(path) = std::env::var("PRONTO_NAT_FULL") else {
            return;
        };
        let text = std::fs::read_to_string(path).expect("vector file");
        let (got, want, e) = replay(&text);
        for port in 0..2 {
            for (i, (g, w)) in got[port].iter().zip(&want[port]).enumerate() {
                assert_eq!(g, w, "output {port}, packet {i}");
            }
            assert_eq!(got[port].len(), want[port].len(), "output {port} count");
        }
        assert_eq!(e.read_handler("nmappings").expect("h"), "238");
    }

    const NAT_HEAD_OUT: usize = 46;
    const NAT_HEAD_IN: usize = 33;
    const NAT_HEAD_MAPPINGS: &str = "25";
}
