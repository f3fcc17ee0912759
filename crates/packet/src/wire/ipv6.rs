//! IPv6 (RFC 8200): the fixed header, the extension-header chain, ICMPv6
//! (RFC 4443) and Neighbor Discovery (RFC 4861) messages and options.
//!
//! Views in the style of smoltcp's wire module: a view wraps a byte slice,
//! `new_checked` verifies once that every fixed field is inside it, and the
//! accessors then read at fixed offsets without further checks that can
//! fail. pronto writes its own instead of using smoltcp's because Click's
//! elements check in their own order and count their own reasons (a
//! `CheckIP6Header` reports *which* check failed), and because a walk over
//! the extension-header chain on the hot path must be bounded and must not
//! allocate.

use super::{be16, fold, ones_sum, set_be16, WireError};

/// Length of the fixed IPv6 header.
pub const IP6_HEADER_LEN: usize = 40;
/// EtherType of IPv6.
pub const ETHERTYPE_IP6: u16 = 0x86dd;

/// Next-header values pronto knows.
pub mod next_header {
    /// Hop-by-Hop Options (must come first).
    pub const HOP_BY_HOP: u8 = 0;
    /// ICMP (IPv4), as in a translated packet.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 in IPv6 (a tunnel; also SRv6 encapsulation).
    pub const IPV6: u8 = 41;
    /// Routing header (type 0 deprecated by RFC 5095, type 4 is SRv6's).
    pub const ROUTING: u8 = 43;
    /// Fragment header.
    pub const FRAGMENT: u8 = 44;
    /// Encapsulating Security Payload: what follows is encrypted.
    pub const ESP: u8 = 50;
    /// Authentication Header (length in 4-octet units).
    pub const AH: u8 = 51;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// No next header.
    pub const NO_NEXT: u8 = 59;
    /// Destination Options.
    pub const DEST_OPTS: u8 = 60;
    /// Mobility header (RFC 6275).
    pub const MOBILITY: u8 = 135;
    /// Host Identity Protocol (RFC 7401).
    pub const HIP: u8 = 139;
    /// Shim6 (RFC 5533).
    pub const SHIM6: u8 = 140;

    /// True for the next-header values that are IPv6 extension headers
    /// (RFC 8200 section 4 and the IANA list), ESP excepted: nothing after
    /// ESP can be read.
    #[inline]
    pub fn is_extension(nh: u8) -> bool {
        matches!(
            nh,
            HOP_BY_HOP | ROUTING | FRAGMENT | AH | DEST_OPTS | MOBILITY | HIP | SHIM6
        )
    }
}

/// A view of an IPv6 header (the fixed 40 bytes and whatever follows).
#[derive(Debug, Clone, Copy)]
pub struct Ipv6Header<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Header<T> {
    /// Wraps `buffer` without checks: accessors panic if it is shorter
    /// than 40 bytes.
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        Ipv6Header { buffer }
    }

    /// Wraps `buffer` after checking that it holds a fixed header whose
    /// version is 6.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < IP6_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[0] >> 4 != 6 {
            return Err(WireError::BadVersion);
        }
        Ok(Ipv6Header { buffer })
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The header and what follows it.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The version field (6 for a header `new_checked` accepted).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// The traffic class (DSCP in its top six bits, ECN in the low two).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        let b = self.buffer.as_ref();
        (b[0] << 4) | (b[1] >> 4)
    }

    /// The DSCP (the traffic class's top six bits).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// The ECN field (the traffic class's low two bits).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 3
    }

    /// The 20-bit flow label.
    #[inline]
    pub fn flow_label(&self) -> u32 {
        let b = self.buffer.as_ref();
        ((b[1] as u32 & 0x0f) << 16) | ((b[2] as u32) << 8) | b[3] as u32
    }

    /// The first 32 bits (version, traffic class, flow label) as one word.
    #[inline]
    pub fn vtcfl(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[0], b[1], b[2], b[3]])
    }

    /// The payload length: the bytes after the fixed header (0 in a
    /// jumbogram, whose length is in a Hop-by-Hop option).
    #[inline]
    pub fn payload_len(&self) -> u16 {
        be16(self.buffer.as_ref(), 4)
    }

    /// The next header: the first extension header or the upper layer.
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[6]
    }

    /// The hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[7]
    }

    /// The source address.
    #[inline]
    pub fn src_addr(&self) -> [u8; 16] {
        addr16(self.buffer.as_ref(), 8)
    }

    /// The destination address.
    #[inline]
    pub fn dst_addr(&self) -> [u8; 16] {
        addr16(self.buffer.as_ref(), 24)
    }

    /// The bytes after the fixed header, as far as the buffer holds them
    /// (not cut to the payload length).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[IP6_HEADER_LEN..]
    }

    /// The one's-complement sum of the upper-layer pseudo-header (RFC 8200
    /// section 8.1) for an upper-layer packet of `len` bytes with protocol
    /// `next` (not folded).
    #[inline]
    pub fn pseudo_header_sum(&self, next: u8, len: u32) -> u64 {
        let b = self.buffer.as_ref();
        ones_sum(&b[8..40], 0) + len as u64 + next as u64
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Header<T> {
    /// Sets version 6, the traffic class and the flow label.
    #[inline]
    pub fn set_vtcfl(&mut self, traffic_class: u8, flow_label: u32) {
        let w = (6u32 << 28) | ((traffic_class as u32) << 20) | (flow_label & 0xf_ffff);
        self.buffer.as_mut()[0..4].copy_from_slice(&w.to_be_bytes());
    }

    /// Sets the traffic class, leaving version and flow label.
    #[inline]
    pub fn set_traffic_class(&mut self, tc: u8) {
        let b = self.buffer.as_mut();
        b[0] = (b[0] & 0xf0) | (tc >> 4);
        b[1] = (b[1] & 0x0f) | (tc << 4);
    }

    /// Sets the flow label, leaving version and traffic class.
    #[inline]
    pub fn set_flow_label(&mut self, fl: u32) {
        let b = self.buffer.as_mut();
        b[1] = (b[1] & 0xf0) | ((fl >> 16) as u8 & 0x0f);
        b[2] = (fl >> 8) as u8;
        b[3] = fl as u8;
    }

    /// Sets the payload length.
    #[inline]
    pub fn set_payload_len(&mut self, len: u16) {
        set_be16(self.buffer.as_mut(), 4, len);
    }

    /// Sets the next header.
    #[inline]
    pub fn set_next_header(&mut self, nh: u8) {
        self.buffer.as_mut()[6] = nh;
    }

    /// Sets the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, hlim: u8) {
        self.buffer.as_mut()[7] = hlim;
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: [u8; 16]) {
        self.buffer.as_mut()[8..24].copy_from_slice(&a);
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: [u8; 16]) {
        self.buffer.as_mut()[24..40].copy_from_slice(&a);
    }

    /// The bytes after the fixed header, writable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[IP6_HEADER_LEN..]
    }
}

/// Reads 16 bytes at `off`.
#[inline]
pub fn addr16(b: &[u8], off: usize) -> [u8; 16] {
    let mut a = [0u8; 16];
    a.copy_from_slice(&b[off..off + 16]);
    a
}

/// The longest extension-header chain the walker follows by default.
/// RFC 8200 recommends each header at most once (Destination Options
/// twice), so a legitimate chain has fewer than ten; longer ones are a
/// known way to hide the upper layer from filters (RFC 7112).
pub const MAX_EXT_HEADERS: usize = 16;

/// What a fragment header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentInfo {
    /// Offset of the fragment header from the start of the IPv6 header.
    pub header_offset: usize,
    /// Fragment offset in bytes (a multiple of 8).
    pub offset: u16,
    /// The M (more fragments) flag.
    pub more: bool,
    /// The identification.
    pub ident: u32,
}

impl FragmentInfo {
    /// True for a first fragment or an unfragmented packet carried with a
    /// fragment header (an atomic fragment): its upper-layer header is here.
    #[inline]
    pub fn is_first(&self) -> bool {
        self.offset == 0
    }
}

/// The result of walking an IPv6 packet's extension headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ip6Walk {
    /// The upper-layer protocol: the next-header value after the last
    /// extension header (`NO_NEXT`, `ESP`, or an upper layer such as TCP).
    pub protocol: u8,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub offset: usize,
    /// Number of extension headers walked.
    pub ext_headers: usize,
    /// The fragment header, if any. For a non-first fragment, `protocol`
    /// names the upper layer but `offset` points at a fragment of its data,
    /// not at its header.
    pub fragment: Option<FragmentInfo>,
    /// Offset and routing type of the first routing header, if any.
    pub routing: Option<(usize, u8)>,
}

impl Ip6Walk {
    /// True if the upper-layer header is in this packet (no fragment
    /// header, or a first fragment).
    #[inline]
    pub fn has_upper_header(&self) -> bool {
        self.fragment.is_none_or(|f| f.is_first())
    }
}

/// Walks the extension-header chain of the IPv6 packet `pkt` (starting at
/// its fixed header), following at most `max_headers` extension headers.
///
/// Errors: `Truncated` when the fixed header or an extension header runs
/// past `pkt`, `TooManyHeaders` when the chain is longer than
/// `max_headers`, `Malformed` for a Hop-by-Hop header anywhere but first
/// (RFC 8200 section 4.1).
pub fn walk(pkt: &[u8], max_headers: usize) -> Result<Ip6Walk, WireError> {
    if pkt.len() < IP6_HEADER_LEN {
        return Err(WireError::Truncated);
    }
    let mut nh = pkt[6];
    let mut off = IP6_HEADER_LEN;
    let mut w = Ip6Walk {
        protocol: nh,
        offset: off,
        ext_headers: 0,
        fragment: None,
        routing: None,
    };
    while next_header::is_extension(nh) {
        if w.ext_headers == max_headers {
            return Err(WireError::TooManyHeaders);
        }
        if nh == next_header::HOP_BY_HOP && w.ext_headers != 0 {
            return Err(WireError::Malformed);
        }
        if pkt.len() < off + 8 {
            return Err(WireError::Truncated);
        }
        let h = &pkt[off..];
        let len = match nh {
            next_header::FRAGMENT => 8,
            next_header::AH => (h[1] as usize + 2) * 4,
            _ => (h[1] as usize + 1) * 8,
        };
        if pkt.len() < off + len {
            return Err(WireError::Truncated);
        }
        match nh {
            next_header::FRAGMENT => {
                let fo = be16(h, 2);
                w.fragment = Some(FragmentInfo {
                    header_offset: off,
                    offset: fo & 0xfff8,
                    more: fo & 1 != 0,
                    ident: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
                });
            }
            next_header::ROUTING if w.routing.is_none() => w.routing = Some((off, h[2])),
            _ => {}
        }
        w.ext_headers += 1;
        nh = h[0];
        off += len;
        // Nothing after a non-first fragment's header is a header.
        if w.fragment.is_some_and(|f| !f.is_first()) {
            break;
        }
    }
    w.protocol = nh;
    w.offset = off;
    Ok(w)
}

/// ICMPv6 message types pronto uses.
pub mod icmp6_type {
    /// Destination unreachable.
    pub const DST_UNREACHABLE: u8 = 1;
    /// Packet too big.
    pub const PACKET_TOO_BIG: u8 = 2;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 3;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 4;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 128;
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 129;
    /// Router solicitation.
    pub const ROUTER_SOLICIT: u8 = 133;
    /// Router advertisement.
    pub const ROUTER_ADVERT: u8 = 134;
    /// Neighbor solicitation.
    pub const NEIGHBOR_SOLICIT: u8 = 135;
    /// Neighbor advertisement.
    pub const NEIGHBOR_ADVERT: u8 = 136;
    /// Redirect.
    pub const REDIRECT: u8 = 137;

    /// True for error messages (types below 128, RFC 4443 section 2.1).
    #[inline]
    pub fn is_error(t: u8) -> bool {
        t < 128
    }
}

/// A view of an ICMPv6 message (header and body).
#[derive(Debug, Clone, Copy)]
pub struct Icmp6Header<T: AsRef<[u8]>> {
    buffer: T,
}

/// Length of the ICMPv6 header (type, code, checksum, four bytes of
/// message-specific data).
pub const ICMP6_HEADER_LEN: usize = 8;

impl<T: AsRef<[u8]>> Icmp6Header<T> {
    /// Wraps `buffer` after checking it holds the 8-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < ICMP6_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Icmp6Header { buffer })
    }

    /// Wraps `buffer` without checks.
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        Icmp6Header { buffer }
    }

    /// The message type.
    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[0]
    }

    /// The code.
    #[inline]
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[1]
    }

    /// The checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }

    /// Bytes 4..8: identifier and sequence of an echo, the MTU of a
    /// packet-too-big, the pointer of a parameter problem, the flags of a
    /// neighbor advertisement.
    #[inline]
    pub fn rest(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[4], b[5], b[6], b[7]])
    }

    /// The message (header and body).
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// True if the checksum verifies with the pseudo-header of `src` and
    /// `dst`.
    #[inline]
    pub fn checksum_ok(&self, src: &[u8; 16], dst: &[u8; 16]) -> bool {
        let b = self.buffer.as_ref();
        let acc = ones_sum(src, ones_sum(dst, 0)) + b.len() as u64 + next_header::ICMPV6 as u64;
        fold(ones_sum(b, acc)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmp6Header<T> {
    /// Sets type and code.
    #[inline]
    pub fn set_type_code(&mut self, t: u8, code: u8) {
        let b = self.buffer.as_mut();
        b[0] = t;
        b[1] = code;
    }

    /// Sets bytes 4..8.
    #[inline]
    pub fn set_rest(&mut self, v: u32) {
        self.buffer.as_mut()[4..8].copy_from_slice(&v.to_be_bytes());
    }

    /// Computes and stores the checksum over the whole buffer with the
    /// pseudo-header of `src` and `dst`.
    #[inline]
    pub fn fill_checksum(&mut self, src: &[u8; 16], dst: &[u8; 16]) {
        let b = self.buffer.as_mut();
        b[2] = 0;
        b[3] = 0;
        let acc = ones_sum(src, ones_sum(dst, 0)) + b.len() as u64 + next_header::ICMPV6 as u64;
        let c = !fold(ones_sum(b, acc));
        set_be16(b, 2, c);
    }

    /// The message, writable.
    #[inline]
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        self.buffer.as_mut()
    }
}

/// Neighbor Discovery option types (RFC 4861 section 4.6).
pub mod nd_option {
    /// Source link-layer address.
    pub const SOURCE_LL_ADDR: u8 = 1;
    /// Target link-layer address.
    pub const TARGET_LL_ADDR: u8 = 2;
    /// Prefix information.
    pub const PREFIX_INFO: u8 = 3;
    /// Redirected header.
    pub const REDIRECTED_HEADER: u8 = 4;
    /// MTU.
    pub const MTU: u8 = 5;
}

/// Neighbor advertisement flags (in `Icmp6Header::rest`).
pub mod na_flags {
    /// Router.
    pub const ROUTER: u32 = 0x8000_0000;
    /// Solicited.
    pub const SOLICITED: u32 = 0x4000_0000;
    /// Override.
    pub const OVERRIDE: u32 = 0x2000_0000;
}

/// Offset of the target address in a neighbor solicitation or
/// advertisement (after the 8-byte ICMPv6 header).
pub const ND_TARGET_OFFSET: usize = 8;
/// Offset of the options in a neighbor solicitation or advertisement.
pub const ND_OPTIONS_OFFSET: usize = 24;

/// One Neighbor Discovery option: its type and its bytes after the
/// type and length octets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NdOption<'a> {
    /// The option type.
    pub kind: u8,
    /// The option's data (its whole length less two bytes).
    pub data: &'a [u8],
}

impl NdOption<'_> {
    /// The link-layer address of a source/target link-layer address
    /// option on Ethernet.
    #[inline]
    pub fn ethernet_addr(&self) -> Option<[u8; 6]> {
        self.data
            .get(..6)
            .map(|d| [d[0], d[1], d[2], d[3], d[4], d[5]])
    }
}

/// An iterator over Neighbor Discovery options; yields
/// `Err(WireError::Malformed)` once (and then stops) for an option of
/// length zero or one that runs past the buffer (RFC 4861 section 4.6:
/// such a message is discarded).
#[derive(Debug, Clone)]
pub struct NdOptions<'a> {
    rest: &'a [u8],
}

impl<'a> NdOptions<'a> {
    /// The options in `b` (the bytes after a message's fixed part).
    #[inline]
    pub fn new(b: &'a [u8]) -> Self {
        NdOptions { rest: b }
    }
}

impl<'a> Iterator for NdOptions<'a> {
    type Item = Result<NdOption<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let r = self.rest;
        let len = r.get(1).map_or(0, |&l| l as usize * 8);
        if len == 0 || len > r.len() {
            self.rest = &[];
            return Some(Err(WireError::Malformed));
        }
        self.rest = &r[len..];
        Some(Ok(NdOption {
            kind: r[0],
            data: &r[2..len],
        }))
    }
}

/// Finds the Ethernet address in the first option of `kind` (source or
/// target link-layer address) among `options`; `Err` if the options are
/// malformed.
pub fn nd_find_ethernet(options: &[u8], kind: u8) -> Result<Option<[u8; 6]>, WireError> {
    for o in NdOptions::new(options) {
        let o = o?;
        if o.kind == kind {
            return Ok(o.ethernet_addr());
        }
    }
    Ok(None)
}

/// The solicited-node multicast address of `target` (RFC 4291 section
/// 2.7.1): ff02::1:ffXX:XXXX with the target's low 24 bits.
#[inline]
pub fn solicited_node(target: &[u8; 16]) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[0] = 0xff;
    a[1] = 0x02;
    a[11] = 0x01;
    a[12] = 0xff;
    a[13..].copy_from_slice(&target[13..]);
    a
}

/// The Ethernet multicast address of IPv6 multicast address `a` (RFC 2464
/// section 7): 33:33 and its low 32 bits.
#[inline]
pub fn multicast_ethernet(a: &[u8; 16]) -> [u8; 6] {
    [0x33, 0x33, a[12], a[13], a[14], a[15]]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv6/UDP packet: 2001:db8::1 -> 2001:db8::2, hop limit 64,
    /// traffic class 0xb8, flow label 0x12345, with the extension headers
    /// `ext` (already chained) before an 8-byte UDP header.
    fn packet(first: u8, ext: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        let mut h = Ipv6Header::new_unchecked(&mut p[..]);
        h.set_vtcfl(0xb8, 0x12345);
        h.set_payload_len((ext.len() + 8) as u16);
        h.set_next_header(first);
        h.set_hop_limit(64);
        let mut s = [0u8; 16];
        s[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        let mut d = s;
        s[15] = 1;
        d[15] = 2;
        h.set_src_addr(s);
        h.set_dst_addr(d);
        p.extend_from_slice(ext);
        p.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00]);
        p
    }

    #[test]
    fn fixed_header_fields_read_back() {
        let p = packet(next_header::UDP, &[]);
        let h = Ipv6Header::new_checked(&p[..]).expect("accepted");
        assert_eq!(h.version(), 6);
        assert_eq!(h.traffic_class(), 0xb8);
        assert_eq!(h.dscp(), 46);
        assert_eq!(h.ecn(), 0);
        assert_eq!(h.flow_label(), 0x12345);
        assert_eq!(h.payload_len(), 8);
        assert_eq!(h.next_header(), 17);
        assert_eq!(h.hop_limit(), 64);
        assert_eq!(h.src_addr()[15], 1);
        assert_eq!(h.dst_addr()[15], 2);
        assert_eq!(&p[..4], &[0x6b, 0x81, 0x23, 0x45]);
        assert_eq!(
            Ipv6Header::new_checked(&p[..39]).expect_err("refused"),
            WireError::Truncated
        );
        let mut v4 = p.clone();
        v4[0] = 0x45;
        assert_eq!(
            Ipv6Header::new_checked(&v4[..]).expect_err("refused"),
            WireError::BadVersion
        );
    }

    #[test]
    fn setters_leave_neighbouring_fields() {
        let mut p = packet(next_header::UDP, &[]);
        let mut h = Ipv6Header::new_unchecked(&mut p[..]);
        h.set_traffic_class(0x03);
        assert_eq!(h.flow_label(), 0x12345);
        assert_eq!(h.version(), 6);
        h.set_flow_label(0xfffff);
        assert_eq!(h.traffic_class(), 0x03);
        assert_eq!(&p[..4], &[0x60, 0x3f, 0xff, 0xff]);
    }

    #[test]
    fn walk_finds_the_upper_layer_through_extension_headers() {
        // Hop-by-hop (8 bytes, PadN), destination options (16), routing
        // type 4 (8), then UDP.
        let mut ext = vec![next_header::DEST_OPTS, 0, 1, 4, 0, 0, 0, 0];
        ext.extend_from_slice(&[next_header::ROUTING, 1, 1, 12]);
        ext.extend_from_slice(&[0; 12]);
        ext.extend_from_slice(&[next_header::UDP, 0, 4, 0, 0, 0, 0, 0]);
        let p = packet(next_header::HOP_BY_HOP, &ext);
        let w = walk(&p, MAX_EXT_HEADERS).expect("accepted");
        assert_eq!(w.protocol, next_header::UDP);
        assert_eq!(w.offset, 40 + 32);
        assert_eq!(w.ext_headers, 3);
        assert_eq!(w.routing, Some((40 + 24, 4)));
        assert!(w.has_upper_header());
        assert_eq!(&p[w.offset..w.offset + 2], &[0x30, 0x39]);
        // Too long a chain for the limit, and cut short.
        assert_eq!(walk(&p, 2).expect_err("refused"), WireError::TooManyHeaders);
        assert_eq!(
            walk(&p[..40 + 20], 16).expect_err("refused"),
            WireError::Truncated
        );
    }

    #[test]
    fn walk_stops_at_a_later_fragment_and_rejects_late_hop_by_hop() {
        // Fragment at offset 1448 (181 * 8), more fragments, ident 7.
        let frag = [next_header::UDP, 0, 0x05, 0xa9, 0, 0, 0, 7];
        let p = packet(next_header::FRAGMENT, &frag);
        let w = walk(&p, MAX_EXT_HEADERS).expect("accepted");
        let f = w.fragment.expect("accepted");
        assert_eq!(
            (f.offset, f.more, f.ident, f.header_offset),
            (1448, true, 7, 40)
        );
        assert!(!w.has_upper_header());
        assert_eq!(w.protocol, next_header::UDP);
        // An atomic fragment (offset 0, no M) still has its header.
        let p = packet(
            next_header::FRAGMENT,
            &[next_header::UDP, 0, 0, 0, 0, 0, 0, 9],
        );
        let w = walk(&p, MAX_EXT_HEADERS).expect("accepted");
        assert!(w.has_upper_header());
        assert_eq!(w.offset, 48);
        // Hop-by-hop after a destination-options header.
        let ext = [
            next_header::HOP_BY_HOP,
            0,
            1,
            4,
            0,
            0,
            0,
            0,
            next_header::UDP,
            0,
            1,
            4,
            0,
            0,
            0,
            0,
        ];
        let p = packet(next_header::DEST_OPTS, &ext);
        assert_eq!(
            walk(&p, MAX_EXT_HEADERS).expect_err("refused"),
            WireError::Malformed
        );
    }

    #[test]
    fn walk_sizes_an_authentication_header_in_four_octet_units() {
        // AH with payload length 4: (4 + 2) * 4 = 24 bytes.
        let mut ah = vec![next_header::UDP, 4, 0, 0];
        ah.extend_from_slice(&[0; 20]);
        let p = packet(next_header::AH, &ah);
        let w = walk(&p, MAX_EXT_HEADERS).expect("accepted");
        assert_eq!((w.protocol, w.offset), (next_header::UDP, 64));
    }

    #[test]
    fn icmp6_checksum_round_trips() {
        let src = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let dst = solicited_node(&[
            0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xab, 0xcd, 0xef,
        ]);
        assert_eq!(&dst[11..], &[0x01, 0xff, 0xab, 0xcd, 0xef]);
        assert_eq!(
            multicast_ethernet(&dst),
            [0x33, 0x33, 0xff, 0xab, 0xcd, 0xef]
        );
        let mut m = [0u8; 32];
        let mut h = Icmp6Header::new_checked(&mut m[..]).expect("accepted");
        h.set_type_code(icmp6_type::NEIGHBOR_SOLICIT, 0);
        h.fill_checksum(&src, &dst);
        assert!(h.checksum_ok(&src, &dst));
        assert_ne!(h.checksum(), 0);
        m[9] ^= 1;
        assert!(!Icmp6Header::new_unchecked(&m[..]).checksum_ok(&src, &dst));
    }

    #[test]
    fn nd_options_are_walked_and_bad_lengths_refused() {
        let opts = [
            nd_option::PREFIX_INFO,
            1,
            0,
            0,
            0,
            0,
            0,
            0,
            nd_option::SOURCE_LL_ADDR,
            1,
            0x02,
            0,
            0,
            0,
            0,
            0x01,
        ];
        assert_eq!(
            nd_find_ethernet(&opts, nd_option::SOURCE_LL_ADDR),
            Ok(Some([2, 0, 0, 0, 0, 1]))
        );
        assert_eq!(nd_find_ethernet(&opts, nd_option::TARGET_LL_ADDR), Ok(None));
        let mut bad = opts;
        bad[9] = 0;
        assert_eq!(
            nd_find_ethernet(&bad, nd_option::SOURCE_LL_ADDR),
            Err(WireError::Malformed)
        );
        bad[9] = 2;
        assert_eq!(NdOptions::new(&bad).last(), Some(Err(WireError::Malformed)));
    }
}
