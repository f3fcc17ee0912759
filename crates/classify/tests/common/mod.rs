//! Packet builders shared by the integration tests.
#![allow(dead_code)]

pub const TCP: u8 = 6;
pub const UDP: u8 = 17;
pub const ICMP: u8 = 1;

/// IPv4 header (20 bytes, no options) followed by `l4`.
pub fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
    let total = (20 + l4.len()) as u16;
    let mut p = vec![
        0x45, // version 4, IHL 5
        0x00, // TOS
        (total >> 8) as u8,
        total as u8, // total length
        0x12,
        0x34, // identification
        0x00,
        0x00,  // flags + fragment offset
        64,    // TTL
        proto, // protocol
        0x00,
        0x00, // header checksum (unchecked)
    ];
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(l4);
    p
}

/// 20-byte TCP header.
pub fn tcp(sport: u16, dport: u16, flags: u8, win: u16) -> Vec<u8> {
    let mut t = vec![0u8; 20];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[12] = 0x50; // data offset 5
    t[13] = flags;
    t[14..16].copy_from_slice(&win.to_be_bytes());
    t
}

/// 8-byte UDP header.
pub fn udp(sport: u16, dport: u16) -> Vec<u8> {
    let mut u = vec![0u8; 8];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&8u16.to_be_bytes());
    u
}

/// 8-byte ICMP header.
pub fn icmp(ty: u8, code: u8) -> Vec<u8> {
    vec![ty, code, 0, 0, 0, 0, 0, 0]
}

pub fn tcp_pkt(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    ipv4(TCP, src, dst, &tcp(sport, dport, 0x10, 1000))
}

pub fn udp_pkt(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    ipv4(UDP, src, dst, &udp(sport, dport))
}

pub fn icmp_pkt(ty: u8) -> Vec<u8> {
    ipv4(ICMP, [1, 2, 3, 4], [5, 6, 7, 8], &icmp(ty, 0))
}

/// Set the flags/fragment-offset field.
pub fn with_frag(mut p: Vec<u8>, frag: u16) -> Vec<u8> {
    p[6..8].copy_from_slice(&frag.to_be_bytes());
    p
}

/// Prepend an Ethernet header; the IP header then starts at offset 14.
pub fn eth(ip: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0, 1, 2, 3, 4, 5, // destination MAC
        6, 7, 8, 9, 10, 11, // source MAC
        0x08, 0x00, // ethertype IPv4
    ];
    f.extend_from_slice(ip);
    f
}
