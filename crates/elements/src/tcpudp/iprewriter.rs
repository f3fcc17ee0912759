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
             MAPPING_CAPACITY / CAPACITY  most flows (integer)\n  \
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
        // Entries are looked up for the whole batch first: the packets
        // after the one that makes the flow must still find it.
        let pool = Pool::new(64).expect("pool");
        let mut e = rw(NAT, 2, 2);
        let mut other = udp_out(true);
        other[15] = 9; // another destination: another flow
        fix(&mut other, true);
        let pkts = [udp_out(true), udp_out(true), other.clone(), udp_out(true)]
            .iter()
            .map(|b| packet(&pool, b, Some((0, 20))))
            .collect();
        let o = run(e.as_mut(), 0, pkts, 2, &pool, 0);
        let ports: Vec<u16> = o[0]
            .iter()
            .map(|v| u16::from_be_bytes([v[20], v[21]]))
            .collect();
        assert_eq!(ports, vec![1024, 1024, 1025, 1024]);
        o[0].iter().for_each(|v| verify(v));
        assert_eq!(e.read_handler("nmappings").expect("h"), "2");
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
        assert_eq!(err("drop, MAPPING_CAPACITY x", 1), "bad MAPPING_CAPACITY");
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
