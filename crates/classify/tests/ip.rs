//! IPClassifier / IPFilter behaviour on hand-built packets.

mod common;
use common::*;
use pronto_classify::Program;

/// Does the single IPClassifier expression match `pkt` (IP header at 0)?
fn m(expr: &str, pkt: &[u8]) -> bool {
    let p = Program::ip_classifier(&[expr]).unwrap_or_else(|e| panic!("{expr}: {e}"));
    p.classify(pkt, 0) == Some(0)
}

fn err(args: &[&str]) -> pronto_classify::CompileError {
    match Program::ip_filter(args) {
        Err(e) => e,
        Ok(_) => panic!("{args:?} should not compile"),
    }
}

const A: [u8; 4] = [1, 2, 3, 4];
const B: [u8; 4] = [5, 6, 7, 8];
const C: [u8; 4] = [9, 9, 9, 9];

#[test]
fn literal_tcp_packet() {
    // A complete IPv4/TCP SYN packet written out field by field.
    let pkt: [u8; 40] = [
        0x45, // version 4, IHL 5 (20 bytes)
        0x10, // TOS 0x10 (DSCP 4, ECN 0)
        0x00, 0x28, // total length 40
        0xAB, 0xCD, // identification 0xABCD
        0x40, 0x00, // flags DF, fragment offset 0
        0x20, // TTL 32
        0x06, // protocol TCP
        0x00, 0x00, // checksum
        10, 0, 0, 1, // source 10.0.0.1
        192, 168, 1, 20, // destination 192.168.1.20
        0x30, 0x39, // source port 12345
        0x00, 0x50, // destination port 80
        0, 0, 0, 1, // sequence number
        0, 0, 0, 0,    // acknowledgement number
        0x50, // data offset 5
        0x02, // flags SYN
        0x20, 0x00, // window 8192
        0x00, 0x00, // checksum
        0x00, 0x00, // urgent pointer
    ];
    assert!(m("tcp", &pkt));
    assert!(m("src host 10.0.0.1", &pkt));
    assert!(m("dst net 192.168.1.0/24", &pkt));
    assert!(m("tcp dst port www", &pkt));
    assert!(m("src port 12345", &pkt));
    assert!(m("tcp opt syn and not tcp opt ack", &pkt));
    assert!(m("ip ttl 32 and ip id 0xabcd and ip len 40", &pkt));
    assert!(m("ip tos 16 and ip dscp 4 and not ip ect", &pkt));
    assert!(m("ip unfrag", &pkt)); // DF alone is not fragmentation
    assert!(m("tcp win 8192", &pkt));
    assert!(!m("udp", &pkt));
}

#[test]
fn literal_udp_and_icmp_packets() {
    let udp_pkt: [u8; 28] = [
        0x45, 0x00, 0x00, 0x1C, // v4 IHL5, TOS 0, total length 28
        0x00, 0x01, 0x00, 0x00, // id 1, no fragmentation
        0x40, 0x11, 0x00, 0x00, // TTL 64, protocol UDP, checksum
        192, 168, 1, 9, // source 192.168.1.9
        8, 8, 4, 4, // destination 8.8.4.4
        0xC0, 0x00, // source port 49152
        0x00, 0x35, // destination port 53
        0x00, 0x08, 0x00, 0x00, // length 8, checksum
    ];
    assert!(m("udp dst port domain and dst net 8.8.0.0/16", &udp_pkt));
    assert!(m("udp and (src port domain or dst port domain)", &udp_pkt));
    assert!(m("src net 192.168.1.0/24", &udp_pkt));
    let icmp_pkt: [u8; 28] = [
        0x45, 0x00, 0x00, 0x1C, // v4 IHL5, TOS 0, total length 28
        0x00, 0x02, 0x00, 0x00, // id 2, no fragmentation
        0x40, 0x01, 0x00, 0x00, // TTL 64, protocol ICMP, checksum
        1, 2, 3, 4, // source
        5, 6, 7, 8, // destination
        0x08, 0x00, // type 8 (echo), code 0
        0x00, 0x00, 0x00, 0x01, 0x00, 0x01, // checksum, id, sequence
    ];
    assert!(m("icmp type echo", &icmp_pkt));
    assert!(!m("icmp type echo-reply", &icmp_pkt));
    assert!(m("icmp", &icmp_pkt));
}

#[test]
fn host_primitives() {
    let p = tcp_pkt(A, B, 1000, 80);
    assert!(m("host 1.2.3.4", &p));
    assert!(m("host 5.6.7.8", &p));
    assert!(!m("host 9.9.9.9", &p));
    assert!(m("src host 1.2.3.4", &p));
    assert!(!m("src host 5.6.7.8", &p));
    assert!(m("dst host 5.6.7.8", &p));
    assert!(m("dest host 5.6.7.8", &p));
    assert!(!m("dst host 1.2.3.4", &p));
    assert!(m("src or dst host 5.6.7.8", &p));
    assert!(!m("src and dst host 1.2.3.4", &p));
    assert!(m("src and dst host 1.2.3.4", &tcp_pkt(A, A, 1, 2)));
    assert!(m("1.2.3.4", &p)); // bare address = host
    assert!(m("host == 1.2.3.4", &p));
    assert!(!m("host != 1.2.3.4", &p));
    assert!(m("host != 9.9.9.9", &p));
    assert!(m("src host != 5.6.7.8", &p));
    // Address mask (DIRECTIVE & MASK [OP] VALUE).
    assert!(m("src host & 255.255.0.0 1.2.0.0", &p));
    assert!(m("src host & 255.255.0.0 == 1.2.99.99", &p));
    assert!(!m("src host & 255.255.0.0 1.3.0.0", &p));
}

#[test]
fn net_primitives() {
    let p = tcp_pkt([10, 1, 2, 3], [93, 184, 216, 34], 1000, 80);
    assert!(m("net 10.0.0.0/8", &p));
    assert!(m("src net 10.0.0.0/8", &p));
    assert!(!m("dst net 10.0.0.0/8", &p));
    assert!(m("dst net 93.184.0.0/16", &p));
    assert!(m("src net 10.0.0.0 mask 255.0.0.0", &p));
    assert!(m("10.0.0.0/8", &p));
    assert!(m("10/8", &p));
    assert!(m("src net 10.1.2.3/32", &p));
    assert!(!m("src net 10.1.2.4/32", &p));
    assert!(m("src net 10.1.2.200/24", &p)); // host bits are ignored
    assert!(m("src net 0.0.0.0/0", &p));
    assert!(m("src net 10.0.0.0/255.0.0.0", &p));
    assert!(!m("src net 10.0.0.0/23", &tcp_pkt([10, 0, 2, 0], B, 1, 2)));
    assert!(m("src net 10.0.0.0/23", &tcp_pkt([10, 0, 1, 255], B, 1, 2)));
    assert!(m("src net 1.2.3.0/24 or 10.0.0.0/8", &p)); // inherited src
    assert!(!m("src net 1.2.3.0/24 or 11.0.0.0/8", &p));
    assert!(!m("src net != 10.0.0.0/8", &p));
}

#[test]
fn implicit_qualifiers() {
    // `src host X or Y` repeats `src host`.
    assert!(m("src host 1.2.3.4 or 5.6.7.8", &tcp_pkt(B, C, 1, 2)));
    assert!(!m("src host 1.2.3.4 or 5.6.7.8", &tcp_pkt(C, B, 1, 2)));
    // `tcp port 80 or 443` repeats `tcp port`.
    assert!(m("tcp port 80 or 443", &tcp_pkt(A, B, 1, 443)));
    assert!(!m("tcp port 80 or 443", &udp_pkt(A, B, 1, 443)));
    assert!(m("src port 80 or 81", &tcp_pkt(A, B, 81, 2)));
    assert!(!m("src port 80 or 81", &tcp_pkt(A, B, 2, 81)));
    assert!(m("tcp dst port www or https", &tcp_pkt(A, B, 1, 443)));
    // A bare port name after a protocol inherits the protocol.
    assert!(m("udp and www", &udp_pkt(A, B, 1, 80)));
    assert!(!m("udp and www", &tcp_pkt(A, B, 1, 80)));
    assert!(m("www", &tcp_pkt(A, B, 80, 1)));
    // Juxtaposition means `and`.
    assert!(m("tcp syn", &ipv4(TCP, A, B, &tcp(1, 2, 0x02, 0))));
    assert!(m("syn ack", &ipv4(TCP, A, B, &tcp(1, 2, 0x12, 0))));
    assert!(!m("syn ack", &ipv4(TCP, A, B, &tcp(1, 2, 0x02, 0))));
    assert!(m("ip ttl > 100 or 64", &tcp_pkt(A, B, 1, 2)));
}

#[test]
fn ports() {
    let t = tcp_pkt(A, B, 1000, 80);
    let u = udp_pkt(A, B, 1000, 80);
    let i = icmp_pkt(8);
    assert!(m("port 80", &t) && m("port 80", &u) && !m("port 80", &i));
    assert!(m("tcp port 80", &t) && !m("tcp port 80", &u));
    assert!(!m("udp port 80", &t) && m("udp port 80", &u));
    assert!(m("dst port 80", &t) && !m("src port 80", &t));
    assert!(m("src port 1000", &t));
    assert!(m("src or dst port 1000", &t));
    assert!(!m("src and dst port 1000", &t));
    assert!(m("src and dst port 7", &tcp_pkt(A, B, 7, 7)));
    assert!(m("tcp dst port 80", &t));
    assert!(m("dst tcp port 80", &t));
    // Relations.
    assert!(m("dst port > 79", &t) && !m("dst port > 80", &t));
    assert!(m("dst port < 81", &t) && !m("dst port < 80", &t));
    assert!(m("dst port >= 80", &t) && !m("dst port >= 81", &t));
    assert!(m("dst port <= 80", &t) && !m("dst port <= 79", &t));
    assert!(m("dst port != 81", &t) && !m("dst port != 80", &t));
    assert!(m("dst port == 80", &t) && m("dst port = 80", &t));
    assert!(m("src tcp port > 1023", &tcp_pkt(A, B, 1024, 1)));
    assert!(!m("src tcp port > 1023", &tcp_pkt(A, B, 1023, 1)));
    // `port != X` only matches TCP/UDP, unlike `not port X`.
    assert!(!m("dst port != 81", &i));
    assert!(m("not dst port 81", &i));
    assert!(!m("dst port > 10", &i));
    // Masks.
    assert!(m("dst port & 0xff00 == 0x100", &tcp_pkt(A, B, 1, 0x1ff)));
    assert!(m("src tcp port & 10 == 8", &tcp_pkt(A, B, 8, 1)));
    // Range extension.
    assert!(m("dst port 1000-2000", &tcp_pkt(A, B, 1, 1000)));
    assert!(m("dst port 1000-2000", &udp_pkt(A, B, 1, 2000)));
    assert!(!m("dst port 1000-2000", &tcp_pkt(A, B, 1, 999)));
    assert!(!m("dst port 1000-2000", &tcp_pkt(A, B, 1, 2001)));
    assert!(m("dst port != 1000-2000", &tcp_pkt(A, B, 1, 2001)));
    assert!(m("tcp port 80 or 1000-2000", &tcp_pkt(A, B, 1500, 1)));
    // Always-true / always-false relations still require TCP/UDP.
    assert!(m("dst port < 70000", &t) && !m("dst port < 70000", &i));
    assert!(!m("dst port > 65535", &t));
    assert!(m("dst port >= 0", &t));
}

#[test]
fn port_names() {
    for (name, port) in [
        ("www", 80),
        ("http", 80),
        ("https", 443),
        ("domain", 53),
        ("dns", 53),
        ("ssh", 22),
        ("telnet", 23),
        ("smtp", 25),
        ("ftp", 21),
        ("ftp-data", 20),
        ("ntp", 123),
        ("snmp", 161),
        ("snmp-trap", 162),
        ("tftp", 69),
        ("bgp", 179),
        ("imap", 143),
        ("imap3", 220),
        ("imaps", 993),
        ("pop3", 110),
        ("pop3s", 995),
        ("irc", 194),
        ("finger", 79),
        ("auth", 113),
        ("nntp", 119),
        ("sunrpc", 111),
        ("bootps", 67),
        ("bootpc", 68),
        ("rip", 520),
        ("route", 520),
        ("netbios-ns", 137),
        ("netbios-dgm", 138),
        ("netbios-ssn", 139),
        ("pptp", 1723),
        ("daytime", 13),
        ("discard", 9),
        ("chargen", 19),
    ] {
        let e = format!("dst port {name}");
        assert!(m(&e, &tcp_pkt(A, B, 1, port)), "{e}");
        assert!(!m(&e, &tcp_pkt(A, B, 1, port + 1)), "{e}");
        let u = format!("udp dst port {name}");
        assert!(m(&u, &udp_pkt(A, B, 1, port)), "{u}");
    }
    // `echo` is both a port and an ICMP type: it resolves in context.
    assert!(m("port echo", &udp_pkt(A, B, 1, 7)));
    assert!(m("icmp type echo", &icmp_pkt(8)));
}

#[test]
fn protocols() {
    for (name, num) in [
        ("tcp", 6u8),
        ("udp", 17),
        ("icmp", 1),
        ("igmp", 2),
        ("ipip", 4),
        ("gre", 47),
        ("esp", 50),
        ("ah", 51),
        ("ospf", 89),
        ("sctp", 132),
        ("dccp", 33),
    ] {
        let p = ipv4(num, A, B, &[0; 20]);
        let q = ipv4(num.wrapping_add(1), A, B, &[0; 20]);
        assert!(m(name, &p), "{name}");
        assert!(!m(name, &q), "{name}");
        assert!(m(&format!("ip proto {name}"), &p), "ip proto {name}");
        assert!(m(&format!("ip proto {num}"), &p));
        assert!(!m(&format!("ip proto {num}"), &q));
    }
    let gre = ipv4(47, A, B, &[0; 8]);
    assert!(m("ip proto 47 or ip proto 89", &gre));
    assert!(m("ip proto != 6", &gre));
    assert!(!m("ip proto != 47", &gre));
    assert!(m("ip proto > 46 and ip proto < 48", &gre));
    assert!(m("tcpudp", &udp_pkt(A, B, 1, 2)));
    assert!(!m("tcpudp", &gre));
    assert!(m("not tcp", &gre));
    assert!(m("ip proto tcp or udp", &udp_pkt(A, B, 1, 2)));
}

#[test]
fn ip_header_fields() {
    let mut p = tcp_pkt(A, B, 1, 2);
    p[1] = 0xB9; // DSCP 46, ECN 1
    p[8] = 17; // TTL
    assert!(m("ip vers 4", &p) && !m("ip vers 6", &p));
    assert!(m("ip hl 5", &p) && m("ip hl > 4", &p));
    assert!(m("ip id 0x1234", &p) && m("ip id 4660", &p) && !m("ip id 1", &p));
    assert!(m("ip tos 0xb9", &p) && m("ip tos > 0xb8", &p));
    assert!(m("ip dscp 46", &p) && !m("ip dscp 45", &p));
    assert!(m("ip ect", &p) && !m("ip ce", &p));
    assert!(m("ip ect 1", &p) && !m("ip ect 2", &p));
    p[1] = 0xBB;
    assert!(m("ip ce", &p) && m("ip ect", &p));
    p[1] = 0xB8;
    assert!(!m("ip ect", &p) && !m("ip ce", &p));
    assert!(m("ip ttl 17", &p));
    assert!(m("ip ttl > 5", &p) && !m("ip ttl > 17", &p));
    assert!(m("ip ttl < 18", &p) && !m("ip ttl < 17", &p));
    assert!(m("ip ttl >= 17", &p) && m("ip ttl <= 17", &p));
    assert!(m("ip ttl != 5", &p) && !m("ip ttl != 17", &p));
    assert!(m("ip ttl == 17", &p));
    assert!(m("ip len 40", &p) && m("ip len < 100", &p) && !m("ip len > 40", &p));
    assert!(m("ip ttl & 0xf0 == 0x10", &p));
    assert!(m("ip ttl & 0xf0 > 0x0f", &p));
    // `ttl` etc. also work without `ip`.
    assert!(m("ttl 17", &p));
}

#[test]
fn fragments() {
    let whole = udp_pkt(A, B, 1, 53);
    let first = with_frag(udp_pkt(A, B, 1, 53), 0x2000); // MF, offset 0
    let later = with_frag(udp_pkt(A, B, 1, 53), 0x0010); // offset 16
    let last = with_frag(udp_pkt(A, B, 1, 53), 0x0020);
    let df = with_frag(udp_pkt(A, B, 1, 53), 0x4000);
    assert!(!m("ip frag", &whole) && m("ip unfrag", &whole));
    assert!(m("ip frag", &first) && m("ip frag", &later) && m("ip frag", &last));
    assert!(!m("ip frag", &df) && m("unfrag", &df));
    assert!(m("frag", &later));
    // Transport tests match first fragments only.
    assert!(m("udp dst port 53", &first));
    assert!(!m("udp dst port 53", &later));
    assert!(!m("dst port != 54", &later));
    assert!(m("udp", &later));
    assert!(!m("transp[2:2] = 53", &later));
    assert!(m("ip[9] = 17", &later));
    let icmp_later = with_frag(icmp_pkt(8), 0x0001);
    assert!(!m("icmp type echo", &icmp_later));
    let tcp_later = with_frag(ipv4(TCP, A, B, &tcp(1, 2, 0x02, 0)), 0x0001);
    assert!(!m("tcp opt syn", &tcp_later));
}

#[test]
fn tcp_options_and_window() {
    for (name, bit) in [
        ("fin", 1u8),
        ("syn", 2),
        ("rst", 4),
        ("psh", 8),
        ("ack", 16),
        ("urg", 32),
    ] {
        let on = ipv4(TCP, A, B, &tcp(1, 2, bit, 0));
        let off = ipv4(TCP, A, B, &tcp(1, 2, !bit, 0));
        assert!(m(&format!("tcp opt {name}"), &on), "{name}");
        assert!(!m(&format!("tcp opt {name}"), &off), "{name}");
        assert!(m(name, &on), "{name}");
        // Not TCP: never matches.
        let mut u = udp_pkt(A, B, 1, 2);
        u.resize(40, bit);
        assert!(!m(&format!("tcp opt {name}"), &u));
    }
    let synack = ipv4(TCP, A, B, &tcp(1, 2, 0x12, 500));
    assert!(!m("tcp opt syn and not tcp opt ack", &synack));
    assert!(m("tcp opt syn && tcp opt ack", &synack));
    assert!(m("tcp win 500", &synack) && !m("tcp win 501", &synack));
    assert!(m("tcp win > 100", &synack) && m("win < 501", &synack));
}

#[test]
fn icmp_types() {
    for (name, ty) in [
        ("echo-reply", 0u8),
        ("unreachable", 3),
        ("sourcequench", 4),
        ("redirect", 5),
        ("echo", 8),
        ("routeradvert", 9),
        ("routersolicit", 10),
        ("timeexceeded", 11),
        ("time-exceeded", 11),
        ("parameterproblem", 12),
        ("timestamp", 13),
        ("timestamp-reply", 14),
        ("inforeq", 15),
        ("inforeq-reply", 16),
        ("maskreq", 17),
        ("maskreq-reply", 18),
    ] {
        let e = format!("icmp type {name}");
        assert!(m(&e, &icmp_pkt(ty)), "{e}");
        assert!(!m(&e, &icmp_pkt(ty + 1)), "{e}");
        assert!(m(&format!("icmp type {ty}"), &icmp_pkt(ty)));
    }
    assert!(m("icmp type echo or icmp type echo-reply", &icmp_pkt(0)));
    assert!(m("icmp type echo or echo-reply", &icmp_pkt(0)));
    assert!(m("icmp type > 10", &icmp_pkt(11)));
    assert!(m("icmp type != 3", &icmp_pkt(8)));
    // Not ICMP: the type test fails even for `!=`.
    let mut t = tcp_pkt(A, B, 0x0800, 2);
    t[20] = 8;
    assert!(!m("icmp type echo", &t));
    assert!(!m("icmp type != 3", &t));
}

#[test]
fn raw_offsets() {
    let p = tcp_pkt(A, B, 0x1234, 80);
    assert!(m("ip[9] = 6", &p));
    assert!(m("ip[9] == 6", &p) && !m("ip[9] = 17", &p));
    assert!(m("ip[9]=6", &p));
    assert!(m("ip[12:4] = 0x01020304", &p));
    assert!(m("ip[12,15] = 0x01020304", &p));
    assert!(m("ip[0] & 0xf0 = 0x40", &p));
    assert!(m("ip[2:2] > 39 and ip[2:2] < 41", &p));
    assert!(m("transp[0:2] = 0x1234", &p));
    assert!(m("transp[0:2] & 0xFF00 != 0", &p));
    assert!(!m("transp[0:2] & 0xFF00 == 0", &p));
    assert!(m("tcp[2:2] = 80", &p) && !m("udp[2:2] = 80", &p));
    assert!(m("tcp[13] & 0x10 != 0", &p));
    assert!(m("transp[13] & 0x10 != 0", &p));
}

#[test]
fn combinators() {
    let t = tcp_pkt(A, B, 1, 80);
    let u = udp_pkt(A, B, 1, 53);
    assert!(m("true", &t) && !m("false", &t));
    assert!(m("tcp and dst port 80", &t) && m("tcp && dst port 80", &t));
    assert!(m("udp or tcp", &t) && m("udp || tcp", &t));
    assert!(m("not udp", &t) && m("! udp", &t) && m("!udp", &t));
    assert!(!m("not not udp", &t));
    assert!(m("(udp or tcp) and dst port 80", &t));
    assert!(m("udp or (tcp and dst port 80)", &t));
    assert!(!m("udp and (tcp or dst port 80)", &t));
    assert!(m("not (udp or icmp)", &t));
    assert!(m("tcp and not false", &t));
    assert!(m("tcp ? dst port 80 : dst port 53", &t));
    assert!(m("tcp ? dst port 80 : dst port 53", &u));
    assert!(!m("tcp ? dst port 53 : dst port 80", &u));
    assert!(m("udp ? false : tcp ? true : false", &t));
    // and binds tighter than or.
    assert!(m("udp and false or tcp", &t));
    assert!(m("-", &t) && m("any", &t) && m("all", &u));
}

#[test]
fn short_packets() {
    let full = tcp_pkt(A, B, 80, 443);
    // Only 2 bytes of TCP header: the source port is present, the
    // destination port is not.
    let t2 = &full[..22];
    assert!(m("src port 80", t2));
    assert!(!m("dst port 443", t2));
    assert!(m("not dst port 443", t2));
    assert!(!m("dst port != 443", t2));
    assert!(!m("dst port != 1", t2));
    assert!(m("src or dst port 80", t2));
    // IP header only: transport tests fail, IP tests work.
    let h = &full[..20];
    assert!(m("tcp", h) && m("src host 1.2.3.4", h));
    assert!(!m("tcp port 80", h) && m("not tcp port 80", h));
    assert!(!m("tcp opt ack", h) && !m("transp[0] = 0", h));
    // Truncated IP header: fields past the end fail.
    let h10 = &full[..10];
    assert!(m("ip ttl 64", h10) && m("tcp", h10));
    assert!(!m("src host 1.2.3.4", h10) && !m("src host != 1.2.3.4", h10));
    assert!(m("not src host 1.2.3.4", h10));
    assert!(!m("ip frag", h10) && m("ip frag", &with_frag(full.clone(), 1)[..8]));
    // Empty packet.
    assert!(!m("tcp", &[]) && m("true", &[]) && m("-", &[]) && m("not tcp", &[]));
    // Header offset beyond the data.
    let p = Program::ip_classifier(&["tcp", "not tcp"]).expect("compiles");
    assert_eq!(p.classify(&full, 100), Some(1));
}

#[test]
fn ip_options_and_network_offset() {
    // IHL 6: 4 bytes of options move the transport header to offset 24.
    let mut p = vec![
        0x46, 0x00, 0x00, 0x2C, // v4, IHL 6, total length 44
        0x00, 0x00, 0x00, 0x00, // id, fragment
        0x40, 0x06, 0x00, 0x00, // TTL 64, TCP
        1, 2, 3, 4, 5, 6, 7, 8, // addresses
        0x01, 0x01, 0x01, 0x00, // options: NOP NOP NOP EOL
    ];
    p.extend_from_slice(&tcp(1111, 22, 0x02, 0));
    assert!(m("tcp dst port 22 and src port 1111", &p));
    assert!(m("ip hl 6", &p));
    assert!(m("syn", &p));
    // Behind an Ethernet header: nh = 14.
    let f = eth(&tcp_pkt(A, B, 1, 443));
    let prog = Program::ip_classifier(&["tcp dst port 443", "-"]).expect("compiles");
    assert_eq!(prog.classify(&f, 14), Some(0));
    assert_eq!(prog.classify(&f, 0), Some(1));
}

#[test]
fn ipclassifier_project_rules() {
    let p = Program::ip_classifier(&[
        "tcp dst port www or tcp dst port 443",
        "udp and (src port domain or dst port domain)",
        "icmp type echo",
        "icmp",
        "tcp opt syn and not tcp opt ack",
        "ip proto 47 or ip proto 89",
        "src net 192.168.1.0/24",
        "-",
    ])
    .expect("compiles");
    assert_eq!(p.noutputs(), 8);
    assert_eq!(p.classify(&tcp_pkt(A, B, 1, 80), 0), Some(0));
    assert_eq!(p.classify(&tcp_pkt(A, B, 1, 443), 0), Some(0));
    assert_eq!(p.classify(&udp_pkt(A, B, 53, 9), 0), Some(1));
    assert_eq!(p.classify(&udp_pkt(A, B, 9, 53), 0), Some(1));
    assert_eq!(p.classify(&icmp_pkt(8), 0), Some(2));
    assert_eq!(p.classify(&icmp_pkt(0), 0), Some(3));
    assert_eq!(
        p.classify(&ipv4(TCP, A, B, &tcp(1, 5555, 0x02, 0)), 0),
        Some(4)
    );
    assert_eq!(
        p.classify(&ipv4(TCP, A, B, &tcp(1, 5555, 0x12, 0)), 0),
        Some(7)
    );
    assert_eq!(p.classify(&ipv4(47, A, B, &[0; 8]), 0), Some(5));
    assert_eq!(p.classify(&ipv4(89, A, B, &[0; 8]), 0), Some(5));
    assert_eq!(p.classify(&udp_pkt([192, 168, 1, 3], B, 9, 9), 0), Some(6));
    assert_eq!(p.classify(&udp_pkt(A, B, 9, 9), 0), Some(7));
    // Substituted `$proto dst port $port`.
    let q = Program::ip_classifier(&["tcp dst port 80"]).expect("compiles");
    assert_eq!(q.classify(&tcp_pkt(A, B, 1, 80), 0), Some(0));
    assert_eq!(q.classify(&udp_pkt(A, B, 1, 80), 0), None);
}

pub const FIREWALL: &[&str] = &[
    "deny src net 0.0.0.0/8 or src net 127.0.0.0/8",
    "1 ip frag",
    "allow tcp dst port 80 and dst net 93.184.0.0/16",
    "allow tcp dst port 443",
    "deny tcp dst port 22 and not src net 10.0.0.0/23",
    "allow tcp dst port 22",
    "allow udp dst port 53 and dst net 8.8.0.0/16",
    "allow udp dst port 123",
    "allow icmp type echo or icmp type echo-reply",
    "deny udp dst port 161",
    "allow src net 192.168.1.0/24 and tcp",
    "deny all",
];

#[test]
fn ipfilter_firewall() {
    let fw = Program::ip_filter(FIREWALL).expect("compiles");
    assert_eq!(fw.noutputs(), 2);
    let web = [93, 184, 216, 34];
    let c = |p: Vec<u8>| fw.classify(&eth(&p), 14);
    assert_eq!(c(tcp_pkt(A, web, 40000, 80)), Some(0));
    assert_eq!(c(tcp_pkt(A, B, 40000, 80)), None);
    assert_eq!(c(tcp_pkt(A, B, 40000, 443)), Some(0));
    assert_eq!(c(udp_pkt(A, B, 40000, 443)), None);
    assert_eq!(c(tcp_pkt([10, 0, 1, 5], B, 40000, 22)), Some(0));
    assert_eq!(c(tcp_pkt([10, 0, 2, 5], B, 40000, 22)), None);
    assert_eq!(c(udp_pkt(A, [8, 8, 8, 8], 5353, 53)), Some(0));
    assert_eq!(c(udp_pkt(A, C, 5353, 53)), None);
    assert_eq!(c(udp_pkt(A, C, 123, 123)), Some(0));
    assert_eq!(c(icmp_pkt(8)), Some(0));
    assert_eq!(c(icmp_pkt(0)), Some(0));
    assert_eq!(c(icmp_pkt(3)), None);
    assert_eq!(c(udp_pkt(A, C, 1, 161)), None);
    assert_eq!(c(tcp_pkt([192, 168, 1, 7], C, 1, 5555)), Some(0));
    assert_eq!(c(udp_pkt([192, 168, 1, 7], C, 1, 5555)), None);
    assert_eq!(c(tcp_pkt([127, 0, 0, 1], web, 1, 80)), None);
    assert_eq!(c(tcp_pkt([0, 1, 2, 3], web, 1, 80)), None);
    assert_eq!(c(with_frag(udp_pkt(A, C, 1, 9999), 0x2000)), Some(1));
    assert_eq!(c(with_frag(tcp_pkt(A, B, 1, 443), 0x0100)), Some(1));
    assert_eq!(
        c(with_frag(tcp_pkt([127, 0, 0, 1], B, 1, 443), 0x0100)),
        None
    );
    assert_eq!(c(ipv4(47, A, B, &[])), None);
}

#[test]
fn ipfilter_actions() {
    let p = Program::ip_filter(&["2 tcp", "drop udp", "deny icmp", "0 ip proto 47", "allow"])
        .expect("compiles");
    assert_eq!(p.noutputs(), 3);
    assert_eq!(p.classify(&tcp_pkt(A, B, 1, 2), 0), Some(2));
    assert_eq!(p.classify(&udp_pkt(A, B, 1, 2), 0), None);
    assert_eq!(p.classify(&icmp_pkt(8), 0), None);
    assert_eq!(p.classify(&ipv4(47, A, B, &[]), 0), Some(0));
    assert_eq!(p.classify(&ipv4(89, A, B, &[]), 0), Some(0)); // bare `allow`
    let q = Program::ip_filter(&["deny tcp", "allow -"]).expect("compiles");
    assert_eq!(q.noutputs(), 1);
    assert_eq!(q.classify(&udp_pkt(A, B, 1, 2), 0), Some(0));
    assert_eq!(q.classify(&tcp_pkt(A, B, 1, 2), 0), None);
    let r = Program::ip_filter(&["allow tcp"]).expect("compiles");
    assert_eq!(r.classify(&udp_pkt(A, B, 1, 2), 0), None);
    let empty = Program::ip_filter(&[]).expect("compiles");
    assert_eq!(empty.noutputs(), 1);
    assert_eq!(empty.classify(&udp_pkt(A, B, 1, 2), 0), None);
    // Quoted expressions.
    let q = Program::ip_filter(&["allow \"tcp and dst port 80\""]).expect("compiles");
    assert_eq!(q.classify(&tcp_pkt(A, B, 1, 80), 0), Some(0));
}

#[test]
fn errors() {
    let e = err(&["allow tcp", "allow foo"]);
    assert_eq!(e.arg, 1);
    assert_eq!(e.message, "IPFilter pattern 1: unknown word `foo`");
    let e = Program::ip_classifier(&["tcp", "udp", "frobnicate 3"]).expect_err("bad");
    assert_eq!(e.arg, 2);
    assert!(
        e.message.starts_with("IPClassifier pattern 2:") && e.message.contains("`frobnicate`"),
        "{}",
        e.message
    );
    for (args, needle) in [
        (&["allow icmp type echo or echo"][..], "ambiguous"),
        (&["allow echo"], "ambiguous"),
        (&["allow tcp opt www"], "meaningless"),
        (&["allow tcp port 80 )"], "garbage after expression at `)`"),
        (&["allow (tcp"], "missing `)`"),
        (&["allow tcp and"], "missing expression"),
        (&["allow not"], "missing expression after `not`"),
        (&["allow ()"], "missing expression after `(`"),
        (&["allow tcp ? udp"], "missing `:`"),
        (&["5x tcp"], "unknown slot ID `5x`"),
        (&["-1 tcp"], "slot `-1` out of range"),
        (&[""], "empty pattern"),
        (&["allow ip ttl 256"], "out of range"),
        (&["allow dst port 65536"], "out of range"),
        (&["allow ip[1:4] = 0"], "does not fit"),
        (&["allow ip[0:5] = 0"], "out of range"),
        (&["allow ip[8]"], "value missing"),
        (&["allow ip[8"], "missing `]`"),
        (&["allow ip[x] = 1"], "syntax error"),
        (&["allow net 1.2.3.4"], "address missing"),
        (&["allow host 1.2.3.0/24"], "address missing"),
        (&["allow host > 1.2.3.4"], "operator not supported"),
        (&["allow tcp opt != syn"], "not supported"),
        (&["allow tcp opt syn != 1"], "specify header field"),
        (
            &["allow src host 1.2.0.0 & 255.255.0.0"],
            "partial directive",
        ),
        (&["allow ether host 1.2.3.4"], "Ethernet address missing"),
        (&["allow ether src > 00:01:02:03:04:05"], "operator or mask"),
        (&["allow src dst host 1.2.3.4"], "specified twice"),
        (&["allow port port 80"], "type specified twice"),
        (&["allow tcp udp port 80"], "specified twice"),
        (&["allow ip ttl & 0 = 1"], "zero mask"),
        (&["allow ip ttl & 0x100 = 1"], "mask out of range"),
        (&["allow ip ttl >"], "ip ttl"),
        (&["allow ip ttl > foo"], "dangling operator near `foo`"),
        (&["allow 80"], "specify header field"),
        (&["allow icmp port 80"], "bad protocol"),
        (&["allow ip ttl 5-10"], "only supported for `port`"),
        (&["allow dst port 2000-1000"], "bad port range"),
    ] {
        let e = err(args);
        assert_eq!(e.arg, 0);
        assert!(
            e.message.starts_with("IPFilter pattern 0: "),
            "{}",
            e.message
        );
        assert!(e.message.contains(needle), "{args:?}: {}", e.message);
    }
    let deep = format!("allow {}tcp{}", "(".repeat(500), ")".repeat(500));
    assert!(err(&[&deep]).message.contains("nested too deeply"));
    let e = Program::ip_classifier(&["tcp", "  "]).expect_err("empty");
    assert_eq!(e.arg, 1);
}

#[test]
fn ether_addresses_read_the_link_header() {
    let p = Program::ip_filter(&["allow ether src 0:1:2:3:4:5", "1 dst 6:7:8:9:a:b"]).expect("ok");
    assert!(p.uses_link());
    let ip = [0x45u8; 20];
    let mut mac = [0u8; 14];
    mac[6..12].copy_from_slice(&[0, 1, 2, 3, 4, 5]);
    assert_eq!(p.classify_link(&ip, 0, &mac), Some(0));
    mac[6..12].copy_from_slice(&[0, 1, 2, 3, 4, 6]);
    assert_eq!(p.classify_link(&ip, 0, &mac), None);
    mac[..6].copy_from_slice(&[6, 7, 8, 9, 0xa, 0xb]);
    assert_eq!(p.classify_link(&ip, 0, &mac), Some(1));
    // No link header (or a short one): no Ethernet test matches.
    assert_eq!(p.classify_link(&ip, 0, &[]), None);
    assert_eq!(p.classify_link(&ip, 0, &mac[..5]), None);
    assert_eq!(p.classify(&ip, 0), None);
    // `not ether src` matches a packet with no link header, as any negated
    // test of bytes that are not there.
    let n = Program::ip_classifier(&["not ether src 0:1:2:3:4:5", "-"]).expect("ok");
    assert_eq!(n.classify_link(&ip, 0, &[]), Some(0));
    assert!(!Program::ip_filter(&["allow tcp"]).expect("ok").uses_link());
}
