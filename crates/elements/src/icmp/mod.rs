//! Click's `icmp` elements: ICMP error generation and ICMP-aware rewriters.
// (one `pub mod` line per element file)
pub mod icmperror;
pub mod icmpipencap;
pub mod icmppingencap;
pub mod icmppingrewriter;
pub mod icmppingsource;
pub mod icmprewriter;

use pronto_packet::Packet;

/// The fields of the IP and ICMP headers an encapsulating element writes.
pub(crate) struct IcmpEncapHeader {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub icmp_type: u8,
    pub code: u8,
    pub identifier: u16,
}

/// ICMP types whose header carries an identifier and a sequence number.
pub(crate) fn has_identifier(t: u8) -> bool {
    matches!(t, 0 | 8 | 13 | 14 | 15 | 16)
}

/// Length of the ICMP header Click writes for type `t`: 20 bytes for
/// timestamp requests and replies, 8 for the rest.
pub(crate) fn icmp_header_len(t: u8) -> usize {
    if matches!(t, 13 | 14) {
        20
    } else {
        8
    }
}

/// Prepends a 20-byte IP header (TTL 255, ID `ip_id`) and a zeroed ICMP
/// header of type `h.icmp_type`, with the identifier and sequence number
/// (`ip_id`) for types that have them; both checksums computed. Sets the
/// IP header and destination annotations. False when the packet has no
/// headroom left (or would grow past an IP length).
pub(crate) fn icmp_encap(p: &mut Packet, h: &IcmpEncapHeader, ip_id: u16) -> bool {
    use pronto_packet::wire::checksum;
    let hl = icmp_header_len(h.icmp_type);
    let total = p.len() + 20 + hl;
    if total > 0xffff || p.push(20 + hl).is_none() {
        return false;
    }
    let d = p.data_mut();
    d[..20].copy_from_slice(&[
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        (ip_id >> 8) as u8,
        ip_id as u8,
        0,
        0,
        255,
        1,
        0,
        0,
        h.src[0],
        h.src[1],
        h.src[2],
        h.src[3],
        h.dst[0],
        h.dst[1],
        h.dst[2],
        h.dst[3],
    ]);
    let icmp = &mut d[20..20 + hl];
    icmp.fill(0);
    icmp[0] = h.icmp_type;
    icmp[1] = h.code;
    if has_identifier(h.icmp_type) {
        icmp[4..6].copy_from_slice(&h.identifier.to_be_bytes());
        icmp[6..8].copy_from_slice(&ip_id.to_be_bytes());
    }
    let c = checksum(&d[..20]);
    d[10..12].copy_from_slice(&c.to_be_bytes());
    let c = checksum(&d[20..]);
    d[22..24].copy_from_slice(&c.to_be_bytes());
    p.set_dst_ip_anno(h.dst);
    p.set_network_header(0, 20);
    p.set_transport_header(20);
    true
}

/// The IP ID after `id`: IDs run 1, 2, ..., 0xFFFF, 1 (0 is skipped).
pub(crate) fn next_ip_id(id: u16) -> u16 {
    if id == 0xffff {
        1
    } else {
        id + 1
    }
}
