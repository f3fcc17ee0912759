//! Packet builders and checks for the stateful elements' tests.

use crate::standard::test_support::{push_at, run_task};
use crate::{Control, Element};
use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
use pronto_packet::{Packet, Pool};

/// Time of the tests' first packet: 2026-11-22T10:00:00.123Z.
pub const T0: i64 = 1_795_341_600_123_000_000;
/// One second in nanoseconds.
pub const SEC: i64 = 1_000_000_000;

/// An IPv4 address from dotted text.
pub fn a(s: &str) -> [u8; 4] {
    s.parse::<std::net::Ipv4Addr>().expect("address").octets()
}

fn ip_header(proto: u8, src: [u8; 4], dst: [u8; 4], l4len: usize) -> Vec<u8> {
    let total = (20 + l4len) as u16;
    let mut h = vec![
        0x45, 0, // version 4, IHL 5; TOS 0
    ];
    h.extend_from_slice(&total.to_be_bytes()); // total length
    h.extend_from_slice(&[0, 1, 0, 0]); // ID 1, no fragment
    h.extend_from_slice(&[64, proto, 0, 0]); // TTL 64, protocol, checksum (later)
    h.extend_from_slice(&src);
    h.extend_from_slice(&dst);
    let c = checksum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

fn l4_checksum(proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> u16 {
    !fold(ones_sum(l4, pseudo_header_sum(&src, &dst, proto, l4.len())))
}

/// A UDP packet with a 4-byte payload and a correct checksum.
pub fn udp(src: &str, sport: u16, dst: &str, dport: u16) -> Vec<u8> {
    let (s, d) = (a(src), a(dst));
    let mut l4 = Vec::new();
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    l4.extend_from_slice(&12u16.to_be_bytes()); // length
    l4.extend_from_slice(&[0, 0]); // checksum (later)
    l4.extend_from_slice(b"ping");
    let c = l4_checksum(17, s, d, &l4);
    l4[6..8].copy_from_slice(&c.to_be_bytes());
    let mut p = ip_header(17, s, d, l4.len());
    p.extend_from_slice(&l4);
    p
}

/// A TCP segment without payload, flags `flags`, correct checksum.
pub fn tcp(src: &str, sport: u16, dst: &str, dport: u16, flags: u8) -> Vec<u8> {
    let (s, d) = (a(src), a(dst));
    let mut l4 = Vec::new();
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    l4.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]); // seq 1, ack 0
    l4.extend_from_slice(&[0x50, flags]); // data offset 5, flags
    l4.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]); // window, checksum, urgent
    let c = l4_checksum(6, s, d, &l4);
    l4[16..18].copy_from_slice(&c.to_be_bytes());
    let mut p = ip_header(6, s, d, l4.len());
    p.extend_from_slice(&l4);
    p
}

/// An ICMP echo request (`ty` 8) or reply (0) with identifier `id`.
pub fn icmp(src: &str, dst: &str, ty: u8, id: u16) -> Vec<u8> {
    let mut l4 = vec![ty, 0, 0, 0];
    l4.extend_from_slice(&id.to_be_bytes());
    l4.extend_from_slice(&[0, 7]); // sequence 7
    let c = checksum(&l4);
    l4[2..4].copy_from_slice(&c.to_be_bytes());
    let mut p = ip_header(1, a(src), a(dst), l4.len());
    p.extend_from_slice(&l4);
    p
}

/// An ICMP error of type `ty` from `src` to `dst` quoting `quoted`.
pub fn icmp_error(src: &str, dst: &str, ty: u8, quoted: &[u8]) -> Vec<u8> {
    icmp_error_with(src, dst, ty, 0, [0; 4], &quoted[..quoted.len().min(28)])
}

/// An ICMP error of type `ty`, code `code`, with `rest` in bytes 4-7 (the
/// MTU of a packet-too-big error), quoting all of `quoted`.
pub fn icmp_error_with(
    src: &str,
    dst: &str,
    ty: u8,
    code: u8,
    rest: [u8; 4],
    quoted: &[u8],
) -> Vec<u8> {
    let mut l4 = icmp_message(ty, code, rest, quoted);
    let c = checksum(&l4);
    l4[2..4].copy_from_slice(&c.to_be_bytes());
    let mut p = ip_header(1, a(src), a(dst), l4.len());
    p.extend_from_slice(&l4);
    p
}

/// An ICMP or ICMPv6 message, checksum 0: type, code, `rest` (bytes 4-7),
/// then `body`.
fn icmp_message(ty: u8, code: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut m = vec![ty, code, 0, 0];
    m.extend_from_slice(&rest);
    m.extend_from_slice(body);
    m
}

/// A packet holding `data` with its IP header annotated at the start.
pub fn pkt(pool: &Pool, data: &[u8]) -> Packet {
    let mut p = pool.alloc_from(data).expect("pool has room");
    p.set_network_header(0, 20);
    p
}

/// True if the IP header checksum and the transport checksum verify.
pub fn checksums_ok(p: &[u8]) -> bool {
    if checksum(&p[..20]) != 0 {
        return false;
    }
    let (s, d) = ([p[12], p[13], p[14], p[15]], [p[16], p[17], p[18], p[19]]);
    let l4 = &p[20..];
    match p[9] {
        6 | 17 => fold(ones_sum(l4, pseudo_header_sum(&s, &d, p[9], l4.len()))) == 0xffff,
        _ => checksum(l4) == 0,
    }
}

/// Source address, source port, destination address, destination port
/// (ICMP: identifier in both ports).
pub fn tuple(p: &[u8]) -> (String, u16, String, u16) {
    let s = std::net::Ipv4Addr::from([p[12], p[13], p[14], p[15]]).to_string();
    let d = std::net::Ipv4Addr::from([p[16], p[17], p[18], p[19]]).to_string();
    let be = |o: usize| u16::from_be_bytes([p[o], p[o + 1]]);
    if p[9] == 1 {
        (s, be(24), d, be(24))
    } else {
        (s, be(20), d, be(22))
    }
}

/// Pushes one packet holding `data` into input `port` of `e` (3 outputs)
/// at `now`; the output it left on and its bytes, if it left.
pub fn send(
    e: &mut dyn Element,
    pool: &Pool,
    port: usize,
    data: &[u8],
    now: i64,
) -> Option<(usize, Vec<u8>)> {
    let mut ctrl = Control::default();
    let outs = push_at(e, pool, port, vec![pkt(pool, data)], 3, now, &mut ctrl);
    outs.iter()
        .enumerate()
        .find(|(_, v)| !v.is_empty())
        .map(|(o, v)| (o, v[0].data().to_vec()))
}

/// [`send`] for a packet that must leave.
pub fn sent(
    e: &mut dyn Element,
    pool: &Pool,
    port: usize,
    data: &[u8],
    now: i64,
) -> (usize, Vec<u8>) {
    send(e, pool, port, data, now).expect("the packet left")
}

/// Pushes 400 rounds of 8 random packets (half of the longer ones with
/// IPv4/ICMP/TCP/UDP-looking headers from 100.64.x.x) into `e`'s inputs 0
/// and 1 in turn, 0.1 s apart, running its task after each round (3
/// outputs); then reads its handler `table`. Nothing may panic.
pub fn push_random_packets(e: &mut dyn Element, pool: &Pool, table: &str) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut ctrl = Control::default();
    for round in 0..400 {
        let mut pkts = Vec::new();
        for _ in 0..8 {
            let len = (next() % 70) as usize;
            let mut d: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if len > 20 && next() % 2 == 0 {
                // Mostly valid-looking headers, to reach the tables.
                d[0] = 0x45;
                d[6] = 0;
                d[7] = 0;
                d[9] = [1u8, 6, 17][(next() % 3) as usize];
                d[12] = 100;
                d[13] = 64;
            }
            pkts.push(pkt(pool, &d));
        }
        let now = T0 + round * SEC / 10;
        push_at(e, pool, (round % 2) as usize, pkts, 3, now, &mut ctrl);
        run_task(e, pool, vec![], 3, now, &mut ctrl);
    }
    let _ = e.read_handler(table).expect("table handler");
}

/// An IPv6 address from text.
pub fn a6(s: &str) -> [u8; 16] {
    s.parse::<std::net::Ipv6Addr>().expect("address").octets()
}

/// An IPv6 packet (traffic class and flow label 0, hop limit 64) from
/// `src` to `dst` carrying `l4` of protocol `nh`, whose checksum at
/// `csum` (if any) is computed with the IPv6 pseudo-header.
pub fn ip6(nh: u8, src: &str, dst: &str, mut l4: Vec<u8>, csum: Option<usize>) -> Vec<u8> {
    let (s, d) = (a6(src), a6(dst));
    if let Some(o) = csum {
        l4[o..o + 2].copy_from_slice(&[0, 0]);
        let c = !fold(ones_sum(&l4, pseudo_header_sum(&s, &d, nh, l4.len())));
        l4[o..o + 2].copy_from_slice(&c.to_be_bytes());
    }
    let mut p = vec![0x60, 0, 0, 0]; // version 6, traffic class 0, flow label 0
    p.extend_from_slice(&(l4.len() as u16).to_be_bytes()); // payload length
    p.extend_from_slice(&[nh, 64]); // next header, hop limit 64
    p.extend_from_slice(&s);
    p.extend_from_slice(&d);
    p.extend_from_slice(&l4);
    p
}

/// The transport part of `udp`/`tcp`/`icmp`'s IPv4 packet, for the same
/// segment in IPv6.
fn l4_of(v4: &[u8]) -> Vec<u8> {
    v4[20..].to_vec()
}

/// `udp`'s datagram over IPv6.
pub fn udp6(src: &str, sport: u16, dst: &str, dport: u16) -> Vec<u8> {
    ip6(
        17,
        src,
        dst,
        l4_of(&udp("0.0.0.0", sport, "0.0.0.0", dport)),
        Some(6),
    )
}

/// `tcp`'s segment over IPv6.
pub fn tcp6(src: &str, sport: u16, dst: &str, dport: u16, flags: u8) -> Vec<u8> {
    let seg = l4_of(&tcp("0.0.0.0", sport, "0.0.0.0", dport, flags));
    ip6(6, src, dst, seg, Some(16))
}

/// An ICMPv6 echo request (`ty` 128) or reply (129), identifier `id`,
/// sequence 7.
pub fn icmp6(src: &str, dst: &str, ty: u8, id: u16) -> Vec<u8> {
    let mut m = vec![ty, 0, 0, 0];
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[0, 7]);
    ip6(58, src, dst, m, Some(2))
}

/// An ICMPv6 error of type `ty`, code `code`, `rest` in bytes 4-7,
/// quoting `quoted`.
pub fn icmp6_error(
    src: &str,
    dst: &str,
    ty: u8,
    code: u8,
    rest: [u8; 4],
    quoted: &[u8],
) -> Vec<u8> {
    ip6(58, src, dst, icmp_message(ty, code, rest, quoted), Some(2))
}

/// `p` (an IPv4 packet of these builders) as RFC 7915's translation from
/// IPv6 writes its header: ID 0, Don't Fragment (checksum recomputed),
/// and the same for a packet an ICMP error quotes.
pub fn as_translated(p: &[u8]) -> Vec<u8> {
    let mut p = p.to_vec();
    let fix = |h: &mut [u8]| {
        h[4..8].copy_from_slice(&[0, 0, 0x40, 0]);
        h[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&h[..20]);
        h[10..12].copy_from_slice(&c.to_be_bytes());
    };
    fix(&mut p);
    if p[9] == 1 && p.len() >= 48 && matches!(p[20], 3 | 11 | 12) {
        fix(&mut p[28..]);
        p[22..24].copy_from_slice(&[0, 0]);
        let c = checksum(&p[20..]);
        p[22..24].copy_from_slice(&c.to_be_bytes());
    }
    p
}

/// An ICMPv6 message of type `ty`, code 0, with `rest` in bytes 4-7
/// (an echo's identifier and sequence) and then `body`.
pub fn icmp6_msg(src: &str, dst: &str, ty: u8, rest: [u8; 4], body: &[u8]) -> Vec<u8> {
    let mut l4 = vec![ty, 0, 0, 0];
    l4.extend_from_slice(&rest);
    l4.extend_from_slice(body);
    ip6(58, src, dst, l4, Some(2))
}

/// An ICMPv6 echo request (`ty` 128) or reply (129) with identifier `id`.
pub fn echo6(src: &str, dst: &str, ty: u8, id: u16) -> Vec<u8> {
    let i = id.to_be_bytes();
    icmp6_msg(src, dst, ty, [i[0], i[1], 0, 7], b"ping")
}

/// `p` with `n` 8-byte Destination Options headers (PadN) inserted after
/// its fixed header.
pub fn with_dest_opts(p: &[u8], n: usize) -> Vec<u8> {
    let mut q = p[..40].to_vec();
    let upper = q[6];
    q[6] = if n > 0 { 60 } else { upper };
    for i in 0..n {
        let nh = if i + 1 == n { upper } else { 60 };
        q.extend_from_slice(&[nh, 0, 1, 4, 0, 0, 0, 0]);
    }
    q.extend_from_slice(&p[40..]);
    let plen = (q.len() - 40) as u16;
    q[4..6].copy_from_slice(&plen.to_be_bytes());
    q
}

/// `p` carried as one fragment: a fragment header (offset `off` bytes, M
/// flag `more`) after the fixed header.
pub fn as_fragment6(p: &[u8], off: u16, more: bool) -> Vec<u8> {
    let mut q = p[..40].to_vec();
    let upper = q[6];
    q[6] = 44;
    let fo = ((off & 0xfff8) | more as u16).to_be_bytes();
    q.extend_from_slice(&[upper, 0, fo[0], fo[1], 0, 0, 0, 9]);
    q.extend_from_slice(&p[40..]);
    let plen = (q.len() - 40) as u16;
    q[4..6].copy_from_slice(&plen.to_be_bytes());
    q
}
