//! IPv6 in IPClassifier / IPFilter: dual-stack rule lists on hand-built
//! IPv4 and IPv6 packets (extension headers, fragments, hostile chains),
//! and the errors that keep the families apart.

use pronto_classify::Program;

const SRC: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5];
const DST: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

/// An IPv6 packet: traffic class 0, flow label `flow`, hop limit `hlim`,
/// `SRC` -> `DST` (or `src`), the extension headers `ext` (each `(next
/// header value of the header, its bytes)`), then `upper` (protocol
/// `proto`).
fn v6(
    src: [u8; 16],
    hlim: u8,
    flow: u32,
    ext: &[(u8, Vec<u8>)],
    proto: u8,
    upper: &[u8],
) -> Vec<u8> {
    let mut p = vec![0u8; 40];
    p[..4].copy_from_slice(&((6u32 << 28) | flow).to_be_bytes());
    let plen: usize = ext.iter().map(|e| e.1.len()).sum::<usize>() + upper.len();
    p[4..6].copy_from_slice(&(plen as u16).to_be_bytes());
    p[7] = hlim;
    p[8..24].copy_from_slice(&src);
    p[24..40].copy_from_slice(&DST);
    let mut nh_at = 6;
    for (kind, bytes) in ext {
        p[nh_at] = *kind;
        nh_at = p.len();
        p.extend_from_slice(bytes);
    }
    p[nh_at] = proto;
    p.extend_from_slice(upper);
    p
}

/// A TCP header with ports and flags.
fn tcp(sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut t = vec![0u8; 20];
    t[..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[12] = 0x50;
    t[13] = flags;
    t
}

fn udp(sport: u16, dport: u16) -> Vec<u8> {
    let mut u = vec![0u8; 8];
    u[..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u
}

/// An IPv4 packet `src` -> 10.0.0.1 with protocol `proto` and `upper`.
fn v4(src: [u8; 4], proto: u8, upper: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&((20 + upper.len()) as u16).to_be_bytes());
    p[8] = 64;
    p[9] = proto;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&[10, 0, 0, 1]);
    p.extend_from_slice(upper);
    p
}

/// An 8-byte options header (hop-by-hop or destination options: PadN).
fn opts() -> Vec<u8> {
    vec![0, 0, 1, 4, 0, 0, 0, 0]
}

/// A fragment header at `offset` bytes, more fragments `more`.
fn frag(offset: u16, more: bool) -> Vec<u8> {
    let fo = (offset & 0xfff8) | u16::from(more);
    let [a, b] = fo.to_be_bytes();
    vec![0, 0, a, b, 0, 0, 0, 9]
}

const RULES: &[&str] = &[
    "deny src net 2001:db8:bad::/48",
    "allow src net 2001:db8::/32 and tcp dst port 22",
    "allow src net 10.0.0.0/8 and tcp dst port 22",
    "1 icmp6 type echo-request",
    "2 udp dst port 53",
    "3 ip6 hlim 255",
    "deny all",
];

#[test]
fn one_rule_list_serves_both_families() {
    let p = Program::ip_filter(RULES).expect("compiles");
    assert_eq!(p.noutputs(), 4);
    let ssh = tcp(40000, 22, 0x02);
    // IPv6 from the allowed net, TCP to port 22: allowed.
    assert_eq!(p.classify(&v6(SRC, 64, 0, &[], 6, &ssh), 0), Some(0));
    // The same through hop-by-hop, destination options and routing
    // headers: the ports are found after them.
    let mut routing = vec![0u8, 2, 4, 0, 0, 0, 0, 0];
    routing.extend_from_slice(&[0; 16]);
    let chain = [(0u8, opts()), (60, opts()), (43, routing)];
    assert_eq!(p.classify(&v6(SRC, 64, 0, &chain, 6, &ssh), 0), Some(0));
    // From outside 2001:db8::/32, and from the denied /48.
    let mut other = SRC;
    other[3] = 0xb9;
    assert_eq!(p.classify(&v6(other, 64, 0, &[], 6, &ssh), 0), None);
    let mut bad = SRC;
    bad[4..6].copy_from_slice(&[0x0b, 0xad]);
    assert_eq!(p.classify(&v6(bad, 64, 0, &[], 6, &ssh), 0), None);
    // IPv4 keeps its own rule.
    assert_eq!(p.classify(&v4([10, 1, 2, 3], 6, &ssh), 0), Some(0));
    assert_eq!(p.classify(&v4([11, 1, 2, 3], 6, &ssh), 0), None);
    // ICMPv6 echo request (type 128) after a destination-options header.
    let echo = [128u8, 0, 0, 0, 0, 1, 0, 1];
    assert_eq!(
        p.classify(&v6(other, 64, 0, &[(60, opts())], 58, &echo), 0),
        Some(1)
    );
    // An ICMPv4 echo (type 8) is not ICMPv6.
    assert_eq!(
        p.classify(&v4([11, 0, 0, 1], 1, &[8, 0, 0, 0, 0, 0, 0, 0]), 0),
        None
    );
    // `udp dst port 53` names no family: both match.
    assert_eq!(
        p.classify(&v6(other, 64, 0, &[], 17, &udp(5353, 53)), 0),
        Some(2)
    );
    assert_eq!(
        p.classify(&v4([11, 0, 0, 1], 17, &udp(5353, 53)), 0),
        Some(2)
    );
    // Hop limit 255.
    assert_eq!(p.classify(&v6(other, 255, 0, &[], 59, &[]), 0), Some(3));
}

#[test]
fn fragments_and_hostile_chains_match_no_port_rule() {
    let p = Program::ip_filter(RULES).expect("compiles");
    // A first fragment carries the UDP header: port rules see it.
    let first = v6(SRC, 64, 0, &[(44, frag(0, true))], 17, &udp(1, 53));
    assert_eq!(p.classify(&first, 0), Some(2));
    // A later fragment has no header: no port rule matches it.
    let later = v6(SRC, 64, 0, &[(44, frag(1448, false))], 17, &udp(1, 53));
    assert_eq!(p.classify(&later, 0), None);
    // A chain longer than the walk follows (17 destination-options
    // headers) hides the upper layer: it matches no protocol rule.
    let long: Vec<(u8, Vec<u8>)> = (0..17).map(|_| (60, opts())).collect();
    assert_eq!(p.classify(&v6(SRC, 64, 0, &long, 17, &udp(1, 53)), 0), None);
    // Sixteen are followed.
    let ok: Vec<(u8, Vec<u8>)> = (0..16).map(|_| (60, opts())).collect();
    assert_eq!(
        p.classify(&v6(SRC, 64, 0, &ok, 17, &udp(1, 53)), 0),
        Some(2)
    );
    // An extension header that runs past the packet, and a truncated
    // fixed header.
    let mut cut = v6(
        SRC,
        64,
        0,
        &[(60, vec![0, 9, 1, 4, 0, 0, 0, 0])],
        17,
        &udp(1, 53),
    );
    cut[41] = 9;
    assert_eq!(p.classify(&cut, 0), None);
    let short = v6(SRC, 64, 0, &[], 17, &udp(1, 53));
    assert_eq!(p.classify(&short[..30], 0), None);
    // The hop-by-hop header anywhere but first is malformed.
    let late_hbh = [(60u8, opts()), (0, opts())];
    assert_eq!(
        p.classify(&v6(SRC, 64, 0, &late_hbh, 17, &udp(1, 53)), 0),
        None
    );
}

#[test]
fn ipv6_header_fields() {
    let one = |expr: &str, pkt: &[u8]| {
        let p = Program::ip_classifier(&[expr]).unwrap_or_else(|e| panic!("{expr}: {e}"));
        p.classify(pkt, 0) == Some(0)
    };
    let plain = v6(SRC, 64, 0x12345, &[], 6, &tcp(1, 80, 0x02));
    assert!(one("ip6", &plain));
    assert!(!one("ip6", &v4([1, 2, 3, 4], 6, &tcp(1, 80, 0x02))));
    assert!(one("ip6 flow 0x12345", &plain));
    assert!(!one("ip6 flow 0x12346", &plain));
    assert!(one("ip6 hlim > 63 and ip6 hlim < 65", &plain));
    assert!(one("ip6 plen 20", &plain));
    assert!(one("ip6 nxt 6 and tcp opt syn", &plain));
    let hbh = v6(SRC, 64, 0, &[(0, opts())], 6, &tcp(1, 80, 0x12));
    assert!(one("ip6 nxt 0 and tcp and tcp opt ack", &hbh));
    assert!(!one("ip6 nxt 6", &hbh));
    assert!(one("src host 2001:db8::5 and dst host 2001:db8::1", &plain));
    assert!(one("src net 2001:db8::/32", &plain));
    assert!(!one("src net 2001:db9::/32", &plain));
    assert!(one("ip6 src net 2001:db8::/ffff:ffff::", &plain));
    assert!(one("not ip6 frag", &plain));
    let f = v6(SRC, 64, 0, &[(44, frag(8, false))], 17, &[0; 8]);
    assert!(one("ip6 frag", &f));
    assert!(one(
        "ip6 unfrag",
        &v6(SRC, 64, 0, &[(44, frag(0, false))], 17, &udp(1, 2))
    ));
    let mut tc = plain.clone();
    tc[0] = 0x6b;
    tc[1] = 0x80 | (tc[1] & 0x0f);
    assert!(one("ip6 dscp 46", &tc));
    assert!(one("ip6 tclass 0xb8", &tc));
    assert!(one(
        "icmp6 type neighbor-solicit",
        &v6(SRC, 255, 0, &[], 58, &[135, 0, 0, 0])
    ));
    assert!(one(
        "icmp6 type 135",
        &v6(SRC, 255, 0, &[], 58, &[135, 0, 0, 0])
    ));
    assert!(!one("icmp6", &v6(SRC, 255, 0, &[], 17, &udp(1, 2))));
}

#[test]
fn families_are_not_mixed_up() {
    let err = |args: &[&str]| match Program::ip_filter(args) {
        Err(e) => e.message,
        Ok(_) => panic!("{args:?} should not compile"),
    };
    assert_eq!(
        err(&["allow ip hlim 3"]),
        "IPFilter pattern 0: `ip hlim`: an IPv6 field; write `ip6 hlim`"
    );
    assert_eq!(
        err(&["allow ip6 ttl 3"]),
        "IPFilter pattern 0: `ip6 ttl`: not an IPv6 header field (IPv6 has hlim, flow, nxt, plen, tclass, dscp)"
    );
    assert_eq!(
        err(&["allow ip6 host 10.0.0.1"]),
        "IPFilter pattern 0: `ip6 host`: an IPv4 address; write `ip host` or an IPv6 address"
    );
    assert_eq!(
        err(&["allow ip src host 2001:db8::1"]),
        "IPFilter pattern 0: `ip host`: an IPv6 address; write `ip6 host`"
    );
    assert_eq!(
        err(&["allow src net 2001:db8::/129"]),
        "IPFilter pattern 0: `2001:db8::/129`: not an IPv6 address or prefix"
    );
    // An IPv4 field in a dual-stack list is about IPv4 packets only.
    let p = Program::ip_filter(&["allow ip ttl 64", "1 ip6"]).expect("compiles");
    assert_eq!(p.classify(&v6(SRC, 64, 0, &[], 59, &[]), 0), Some(1));
    assert_eq!(p.classify(&v4([1, 1, 1, 1], 6, &tcp(1, 2, 0)), 0), Some(0));
}
