//! What `IP6NDSolicitor` and `IP6NDAdvertiser` share: the validity checks
//! of RFC 4861 on a received neighbor solicitation or advertisement (with
//! its Ethernet header), and the 86-byte messages they send.

use pronto_packet::wire::ipv6::{
    icmp6_type, nd_option, next_header, Icmp6Header, Ipv6Header, NdOptions, ETHERTYPE_IP6,
    IP6_HEADER_LEN, ND_OPTIONS_OFFSET, ND_TARGET_OFFSET,
};

/// Length of an Ethernet header.
pub const ETHER_LEN: usize = 14;
/// Length of the solicitations and advertisements pronto sends: Ethernet,
/// IPv6, the 24-byte message and one 8-byte link-layer address option.
pub const ND_FRAME_LEN: usize = ETHER_LEN + IP6_HEADER_LEN + ND_OPTIONS_OFFSET + 8;

/// A neighbor solicitation or advertisement that passed the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdMessage {
    /// The Ethernet source.
    pub ether_src: [u8; 6],
    /// The IPv6 source.
    pub src: [u8; 16],
    /// The IPv6 destination.
    pub dst: [u8; 16],
    /// Bytes 4..8 of the message (an advertisement's flags).
    pub flags: u32,
    /// The target address.
    pub target: [u8; 16],
    /// The source (solicitation) or target (advertisement) link-layer
    /// address option's Ethernet address.
    pub lladdr: Option<[u8; 6]>,
}

/// True for a multicast address (ff00::/8).
#[inline]
pub fn is_multicast(a: &[u8; 16]) -> bool {
    a[0] == 0xff
}

/// Checks `frame` (Ethernet header first) as a neighbor message of type
/// `kind` (`NEIGHBOR_SOLICIT` or `NEIGHBOR_ADVERT`) by RFC 4861 sections
/// 7.1.1 and 7.1.2: IPv6 carrying ICMPv6 directly, hop limit 255, code 0,
/// a good checksum, at least 24 bytes, a target that is not multicast,
/// options of nonzero length inside the message; a solicitation from the
/// unspecified address goes to a solicited-node address and has no source
/// link-layer option; an advertisement to a multicast address is not
/// solicited. Trailing bytes past the IPv6 payload (Ethernet padding) are
/// ignored. `Err` says which check failed.
pub fn check(frame: &[u8], kind: u8) -> Result<NdMessage, &'static str> {
    if frame.len() < ETHER_LEN || frame[12..14] != ETHERTYPE_IP6.to_be_bytes() {
        return Err("not IPv6");
    }
    let ip = Ipv6Header::new_checked(&frame[ETHER_LEN..]).map_err(|e| e.as_str())?;
    if ip.next_header() != next_header::ICMPV6 {
        return Err("not ICMPv6");
    }
    let plen = usize::from(ip.payload_len());
    let payload = ip.payload();
    if plen > payload.len() {
        return Err("truncated");
    }
    let msg = &payload[..plen];
    if msg.len() < ND_OPTIONS_OFFSET {
        return Err("too short");
    }
    let icmp = Icmp6Header::new_unchecked(msg);
    if icmp.msg_type() != kind {
        return Err("wrong type");
    }
    if ip.hop_limit() != 255 {
        return Err("hop limit not 255");
    }
    if icmp.code() != 0 {
        return Err("code not 0");
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    if !icmp.checksum_ok(&src, &dst) {
        return Err("bad checksum");
    }
    let mut target = [0u8; 16];
    target.copy_from_slice(&msg[ND_TARGET_OFFSET..ND_TARGET_OFFSET + 16]);
    if is_multicast(&target) {
        return Err("multicast target");
    }
    let want = if kind == icmp6_type::NEIGHBOR_SOLICIT {
        nd_option::SOURCE_LL_ADDR
    } else {
        nd_option::TARGET_LL_ADDR
    };
    let mut lladdr = None;
    for o in NdOptions::new(&msg[ND_OPTIONS_OFFSET..]) {
        let o = o.map_err(|_| "bad option length")?;
        if o.kind == want && lladdr.is_none() {
            lladdr = o.ethernet_addr();
        }
    }
    let flags = icmp.rest();
    if kind == icmp6_type::NEIGHBOR_SOLICIT && src == [0; 16] {
        let sn = pronto_packet::wire::ipv6::solicited_node(&target);
        if dst != sn {
            return Err("unspecified source, not to the solicited-node address");
        }
        if lladdr.is_some() {
            return Err("unspecified source with a link-layer option");
        }
    }
    if kind == icmp6_type::NEIGHBOR_ADVERT
        && is_multicast(&dst)
        && flags & pronto_packet::wire::ipv6::na_flags::SOLICITED != 0
    {
        return Err("solicited advertisement to a multicast address");
    }
    let mut ether_src = [0u8; 6];
    ether_src.copy_from_slice(&frame[6..12]);
    Ok(NdMessage {
        ether_src,
        src,
        dst,
        flags,
        target,
        lladdr,
    })
}

/// Writes an 86-byte neighbor message into `d`: Ethernet `edst` <- `esrc`,
/// IPv6 `src` -> `dst` with hop limit 255, ICMPv6 `kind` with bytes 4..8
/// `flags`, `target`, one link-layer option `opt` carrying `lladdr`, and
/// the checksum.
#[allow(clippy::too_many_arguments)]
pub fn write_message(
    d: &mut [u8],
    edst: [u8; 6],
    esrc: [u8; 6],
    src: [u8; 16],
    dst: [u8; 16],
    kind: u8,
    flags: u32,
    target: [u8; 16],
    opt: u8,
    lladdr: [u8; 6],
) {
    let d = &mut d[..ND_FRAME_LEN];
    d[0..6].copy_from_slice(&edst);
    d[6..12].copy_from_slice(&esrc);
    d[12..14].copy_from_slice(&ETHERTYPE_IP6.to_be_bytes());
    let mut ip = Ipv6Header::new_unchecked(&mut d[ETHER_LEN..]);
    ip.set_vtcfl(0, 0);
    ip.set_payload_len((ND_OPTIONS_OFFSET + 8) as u16);
    ip.set_next_header(next_header::ICMPV6);
    ip.set_hop_limit(255);
    ip.set_src_addr(src);
    ip.set_dst_addr(dst);
    let m = &mut d[ETHER_LEN + IP6_HEADER_LEN..];
    m[ND_TARGET_OFFSET..ND_TARGET_OFFSET + 16].copy_from_slice(&target);
    m[ND_OPTIONS_OFFSET] = opt;
    m[ND_OPTIONS_OFFSET + 1] = 1; // length in units of 8 bytes
    m[ND_OPTIONS_OFFSET + 2..ND_OPTIONS_OFFSET + 8].copy_from_slice(&lladdr);
    let mut icmp = Icmp6Header::new_unchecked(m);
    icmp.set_type_code(kind, 0);
    icmp.set_rest(flags);
    icmp.fill_checksum(&src, &dst);
}

#[cfg(test)]
mod tests {
    use super::*;
    use pronto_packet::wire::ipv6::{na_flags, solicited_node};

    fn a(s: &str) -> [u8; 16] {
        pronto_lang::args::parse_ip6(s).expect("address")
    }

    fn ns(src: [u8; 16], target: [u8; 16]) -> Vec<u8> {
        let mut d = vec![0u8; ND_FRAME_LEN];
        let dst = solicited_node(&target);
        write_message(
            &mut d,
            [0x33, 0x33, 0xff, target[13], target[14], target[15]],
            [0, 1, 2, 3, 4, 5],
            src,
            dst,
            icmp6_type::NEIGHBOR_SOLICIT,
            0,
            target,
            nd_option::SOURCE_LL_ADDR,
            [0, 1, 2, 3, 4, 5],
        );
        d
    }

    /// A solicitation as bytes, field by field; the checksum is the one
    /// scapy computes for the same message.
    #[test]
    fn writes_a_solicitation() {
        let d = ns(a("fe80::1"), a("fe80::2"));
        let want: Vec<u8> = [
            &[0x33, 0x33, 0xff, 0, 0, 2][..], // solicited-node multicast MAC
            &[0, 1, 2, 3, 4, 5],              // source MAC
            &[0x86, 0xdd],                    // IPv6
            &[0x60, 0, 0, 0, 0, 32, 58, 255], // version, length 32, ICMPv6, hop limit 255
            &a("fe80::1"),
            &a("ff02::1:ff00:2"),
            &[135, 0],                 // NS, code 0
            &[0x76, 0x8f],             // checksum (scapy computes the same)
            &[0, 0, 0, 0],             // reserved
            &a("fe80::2"),             // target
            &[1, 1, 0, 1, 2, 3, 4, 5], // source link-layer address option
        ]
        .concat();
        assert_eq!(d, want);
        let m = check(&d, icmp6_type::NEIGHBOR_SOLICIT).expect("valid");
        assert_eq!(m.target, a("fe80::2"));
        assert_eq!(m.lladdr, Some([0, 1, 2, 3, 4, 5]));
    }

    #[test]
    fn rfc4861_checks() {
        let good = ns(a("fe80::1"), a("fe80::2"));
        let bad = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut d = good.clone();
            f(&mut d);
            check(&d, icmp6_type::NEIGHBOR_SOLICIT).expect_err("invalid")
        };
        // Field offsets: IPv6 at 14, the message at 54.
        assert_eq!(bad(&|d| d[21] = 64), "hop limit not 255");
        assert_eq!(bad(&|d| d[55] = 1), "code not 0");
        assert_eq!(bad(&|d| d[70] ^= 1), "bad checksum");
        assert_eq!(bad(&|d| d.truncate(80)), "truncated");
        assert_eq!(bad(&|d| d[12] = 8), "not IPv6");
        assert_eq!(bad(&|d| d[20] = 17), "not ICMPv6");
        assert_eq!(bad(&|d| d[54] = 136), "wrong type");
        assert_eq!(bad(&|d| d[14] = 0x40), "bad-version");
        // A zero-length option (checksum fixed so that only it fails).
        let mut d = good.clone();
        d[79] = 0;
        let (s, t) = (a("fe80::1"), a("ff02::1:ff00:2"));
        Icmp6Header::new_unchecked(&mut d[54..]).fill_checksum(&s, &t);
        assert_eq!(
            check(&d, icmp6_type::NEIGHBOR_SOLICIT),
            Err("bad option length")
        );
        // Too short: payload length 16.
        let mut d = good.clone();
        d[19] = 16;
        d.truncate(70);
        assert_eq!(check(&d, icmp6_type::NEIGHBOR_SOLICIT), Err("too short"));
        // Duplicate address detection: no source link-layer option allowed.
        let d = ns([0; 16], a("fe80::2"));
        assert_eq!(
            check(&d, icmp6_type::NEIGHBOR_SOLICIT),
            Err("unspecified source with a link-layer option")
        );
        // Padding after the payload is ignored.
        let mut d = good.clone();
        d.extend_from_slice(&[0xee; 10]);
        assert!(check(&d, icmp6_type::NEIGHBOR_SOLICIT).is_ok());
        // A solicited advertisement to a multicast address.
        let mut na = vec![0u8; ND_FRAME_LEN];
        write_message(
            &mut na,
            [0x33, 0x33, 0, 0, 0, 1],
            [0, 1, 2, 3, 4, 5],
            a("fe80::2"),
            a("ff02::1"),
            icmp6_type::NEIGHBOR_ADVERT,
            na_flags::SOLICITED,
            a("fe80::2"),
            nd_option::TARGET_LL_ADDR,
            [0, 1, 2, 3, 4, 5],
        );
        assert_eq!(
            check(&na, icmp6_type::NEIGHBOR_ADVERT),
            Err("solicited advertisement to a multicast address")
        );
    }
}
