//! Stateless IPv4/IPv6 translation: IPv4-embedded IPv6 addresses (RFC 6052)
//! and the IP/ICMP header translation of RFC 7915, with the choices Click's
//! `ProtocolTranslator46`/`ProtocolTranslator64` make where the RFC leaves
//! room (see [`v4_to_v6`] and [`v6_to_v4`]).
//!
//! The translators read one packet (starting at its IP header) and write the
//! translated packet into a caller's buffer, which must hold at least
//! [`MAX_GROWTH`] bytes more than the input; they never panic on any input.

use super::ipv6::{self, next_header, IP6_HEADER_LEN, MAX_EXT_HEADERS};
use super::{be16, checksum, fold, ones_sum, pseudo_header_sum, set_be16};

/// The most a translation adds to a packet: an IPv6 header for an IPv4 one
/// (20) and a fragment header (8), twice (outer and quoted packet).
pub const MAX_GROWTH: usize = 56;

/// The largest ICMPv6 error a 4-to-6 translation emits (RFC 7915 section
/// 4.2: the IPv6 minimum MTU).
pub const MAX_ICMP6_ERROR: usize = 1280;

/// An IPv6 prefix that IPv4 addresses are embedded in (RFC 6052 section
/// 2.2): 32, 40, 48, 56, 64 or 96 bits long. Bits 64 to 71 (the `u` octet)
/// are left zero and the suffix after the IPv4 address is zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prefix6052 {
    addr: [u8; 16],
    len: u8,
}

impl Prefix6052 {
    /// The well-known prefix `64:ff9b::/96` (RFC 6052 section 2.1).
    pub const WELL_KNOWN: Prefix6052 = Prefix6052 {
        addr: [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        len: 96,
    };

    /// IPv4-mapped addresses, `::ffff:0:0/96`: the form Click's
    /// translators use.
    pub const IPV4_MAPPED: Prefix6052 = Prefix6052 {
        addr: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0],
        len: 96,
    };

    /// A prefix of `len` bits taken from `addr` (bits past `len` are
    /// ignored). Errors if `len` is not one of RFC 6052's lengths, or if a
    /// prefix shorter than 96 bits has bits 64 to 71 set.
    pub fn new(addr: [u8; 16], len: u8) -> Result<Prefix6052, &'static str> {
        if ![32, 40, 48, 56, 64, 96].contains(&len) {
            return Err("prefix length must be 32, 40, 48, 56, 64 or 96");
        }
        let mut a = [0u8; 16];
        let n = len as usize / 8;
        a[..n].copy_from_slice(&addr[..n]);
        if len == 96 && a[8] != 0 {
            return Err("bits 64 to 71 of the prefix must be zero");
        }
        Ok(Prefix6052 { addr: a, len })
    }

    /// The prefix length in bits.
    pub fn prefix_len(&self) -> u8 {
        self.len
    }

    /// The prefix bits (the rest zero).
    pub fn addr(&self) -> [u8; 16] {
        self.addr
    }

    /// Where the four bytes of the IPv4 address go.
    fn positions(&self) -> [usize; 4] {
        match self.len {
            32 => [4, 5, 6, 7],
            40 => [5, 6, 7, 9],
            48 => [6, 7, 9, 10],
            56 => [7, 9, 10, 11],
            64 => [9, 10, 11, 12],
            _ => [12, 13, 14, 15],
        }
    }

    /// The IPv4-embedded IPv6 address of `v4` (RFC 6052 section 2.2).
    pub fn embed(&self, v4: [u8; 4]) -> [u8; 16] {
        let mut a = self.addr;
        for (b, &i) in v4.iter().zip(self.positions().iter()) {
            a[i] = *b;
        }
        a
    }

    /// The IPv4 address embedded in `v6`, if `v6` starts with this prefix
    /// (RFC 6052 section 2.3; the `u` octet and the suffix are not checked).
    pub fn extract(&self, v6: &[u8; 16]) -> Option<[u8; 4]> {
        let n = self.len as usize / 8;
        if v6[..n] != self.addr[..n] {
            return None;
        }
        let p = self.positions();
        Some([v6[p[0]], v6[p[1]], v6[p[2]], v6[p[3]]])
    }
}

/// Why a packet was not translated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XlatError {
    /// The packet (or the packet an ICMP error quotes) is shorter than its
    /// headers or its length fields say.
    Truncated,
    /// A header is malformed: wrong version, header length, length fields,
    /// an extension-header chain the walk refuses.
    Malformed,
    /// An address has no IPv4 form under the prefix in use.
    Unmappable,
    /// An unexpired IPv4 source route option or an IPv6 routing header with
    /// segments left: the packet must not be translated (RFC 7915).
    SourceRoute,
    /// A fragmented ICMP message (its checksum cannot be recomputed).
    FragmentedIcmp,
    /// A UDP fragment with checksum 0 (it cannot be computed).
    UdpZeroChecksum,
    /// An ICMP message whose checksum is wrong.
    BadChecksum,
    /// An ICMP type or code that has no translation (RFC 7915: silently
    /// dropped), or an ICMP error quoting another ICMP error.
    Untranslatable,
}

impl XlatError {
    /// Every error, in the order of [`XlatError::index`].
    pub const ALL: [XlatError; 8] = [
        XlatError::Truncated,
        XlatError::Malformed,
        XlatError::Unmappable,
        XlatError::SourceRoute,
        XlatError::FragmentedIcmp,
        XlatError::UdpZeroChecksum,
        XlatError::BadChecksum,
        XlatError::Untranslatable,
    ];

    /// A dense index, for counters.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The reason as handlers print it.
    pub fn as_str(self) -> &'static str {
        match self {
            XlatError::Truncated => "truncated",
            XlatError::Malformed => "malformed",
            XlatError::Unmappable => "unmappable address",
            XlatError::SourceRoute => "source route",
            XlatError::FragmentedIcmp => "fragmented ICMP",
            XlatError::UdpZeroChecksum => "UDP fragment without checksum",
            XlatError::BadChecksum => "bad ICMP checksum",
            XlatError::Untranslatable => "untranslatable ICMP",
        }
    }
}

type R<T> = Result<T, XlatError>;

/// Changes checksum `old` for a pseudo-header whose address sum goes from
/// `minus` to `plus` (RFC 1624, eqn. 3).
fn adjust(old: u16, minus: u64, plus: u64) -> u16 {
    !fold((!old) as u64 + plus + (!fold(minus)) as u64)
}

/// The fields of an IPv4 header.
struct V4 {
    ihl: usize,
    total: usize,
    id: u16,
    mf: bool,
    frag_off: u16,
    ttl: u8,
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
}

impl V4 {
    fn parse(p: &[u8]) -> R<V4> {
        if p.len() < 20 {
            return Err(XlatError::Truncated);
        }
        if p[0] >> 4 != 4 {
            return Err(XlatError::Malformed);
        }
        let ihl = (p[0] & 15) as usize * 4;
        let total = be16(p, 2) as usize;
        if ihl < 20 || total < ihl {
            return Err(XlatError::Malformed);
        }
        if p.len() < ihl {
            return Err(XlatError::Truncated);
        }
        let fo = be16(p, 6);
        Ok(V4 {
            ihl,
            total,
            id: be16(p, 4),
            mf: fo & 0x2000 != 0,
            frag_off: fo & 0x1fff,
            ttl: p[8],
            proto: p[9],
            src: [p[12], p[13], p[14], p[15]],
            dst: [p[16], p[17], p[18], p[19]],
        })
    }

    fn is_fragment(&self) -> bool {
        self.mf || self.frag_off != 0
    }

    fn addr_sum(&self) -> u64 {
        ones_sum(&self.dst, ones_sum(&self.src, 0))
    }
}

/// True if the IPv4 options hold an unexpired loose or strict source route.
fn unexpired_source_route(opts: &[u8]) -> bool {
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return false,
            1 => i += 1,
            t => {
                if i + 1 >= opts.len() || opts[i + 1] < 2 {
                    return false;
                }
                let len = opts[i + 1] as usize;
                if (t == 131 || t == 137) && i + 2 < opts.len() && (opts[i + 2] as usize) <= len {
                    return true;
                }
                i += len;
            }
        }
    }
    false
}

/// Writes the IPv6 header (and a fragment header for a fragment) that
/// translates `h`, with upper-layer length `ulen`; returns its length.
fn write_v6_header(h: &V4, src: &[u8; 16], dst: &[u8; 16], ulen: usize, out: &mut [u8]) -> usize {
    let frag = h.is_fragment();
    let hl = if frag { 48 } else { 40 };
    let nh = if h.proto == 1 {
        next_header::ICMPV6
    } else {
        h.proto
    };
    out[..4].copy_from_slice(&[0x60, 0, 0, 0]);
    set_be16(out, 4, (ulen + hl - 40).min(0xffff) as u16);
    out[6] = if frag { next_header::FRAGMENT } else { nh };
    out[7] = h.ttl;
    out[8..24].copy_from_slice(src);
    out[24..40].copy_from_slice(dst);
    if frag {
        out[40] = nh;
        out[41] = 0;
        set_be16(out, 42, (h.frag_off << 3) | h.mf as u16);
        out[44..46].copy_from_slice(&[0, 0]);
        set_be16(out, 46, h.id);
    }
    hl
}

/// Translates the IPv4 packet `inp` (from its IP header; bytes past its
/// total length are ignored) into IPv6 in `out`, embedding addresses with
/// `pfx`; returns the translated packet's length.
///
/// RFC 7915 section 4, with Click's choices: traffic class and flow label
/// 0, hop limit copied from the TTL (not decremented), IPv4 options
/// ignored. A fragment gets a fragment header (identification: the IPv4
/// ID); an unfragmented packet without DF gets none (it is not fragmented
/// to 1280 bytes). TCP and UDP checksums are adjusted for the new
/// pseudo-header (a UDP checksum of 0 is computed, except in a fragment:
/// dropped). ICMPv4 becomes ICMPv6 with its checksum computed afresh (a
/// bad ICMPv4 checksum is refused first), errors with their quoted packet
/// translated too and the whole packet cut to [`MAX_ICMP6_ERROR`] bytes.
pub fn v4_to_v6(pfx: &Prefix6052, inp: &[u8], out: &mut [u8]) -> R<usize> {
    let h = V4::parse(inp)?;
    if inp.len() < h.total {
        return Err(XlatError::Truncated);
    }
    if unexpired_source_route(&inp[20..h.ihl]) {
        return Err(XlatError::SourceRoute);
    }
    if out.len() < h.total + MAX_GROWTH {
        return Err(XlatError::Truncated);
    }
    let payload = &inp[h.ihl..h.total];
    let (src, dst) = (pfx.embed(h.src), pfx.embed(h.dst));
    if h.proto == 1 {
        if h.is_fragment() {
            return Err(XlatError::FragmentedIcmp);
        }
        let n = icmp4_to_6(pfx, payload, &src, &dst, &mut out[40..])?;
        write_v6_header(&h, &src, &dst, n, out);
        return Ok(40 + n);
    }
    let hl = write_v6_header(&h, &src, &dst, payload.len(), out);
    let body = &mut out[hl..hl + payload.len()];
    body.copy_from_slice(payload);
    if h.frag_off == 0 {
        let plus = ones_sum(&dst, ones_sum(&src, 0));
        match h.proto {
            6 if body.len() >= 18 => {
                let c = adjust(be16(body, 16), h.addr_sum(), plus);
                set_be16(body, 16, c);
            }
            17 if body.len() >= 8 => {
                let old = be16(body, 6);
                let c = if old != 0 {
                    adjust(old, h.addr_sum(), plus)
                } else if h.is_fragment() {
                    return Err(XlatError::UdpZeroChecksum);
                } else {
                    !fold(ones_sum(body, plus + 17 + body.len() as u64))
                };
                set_be16(body, 6, if c == 0 { 0xffff } else { c });
            }
            _ => {}
        }
    }
    Ok(hl + payload.len())
}

/// The greatest RFC 1191 plateau MTU below `total`.
fn plateau(total: usize) -> u32 {
    const P: [u32; 11] = [
        65535, 32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68,
    ];
    P.iter()
        .copied()
        .find(|&p| (p as usize) < total)
        .unwrap_or(68)
}

/// ICMPv4 message `m` to ICMPv6 in `out`; returns its length.
fn icmp4_to_6(
    pfx: &Prefix6052,
    m: &[u8],
    src: &[u8; 16],
    dst: &[u8; 16],
    out: &mut [u8],
) -> R<usize> {
    if m.len() < 8 {
        return Err(XlatError::Truncated);
    }
    if checksum(m) != 0 {
        return Err(XlatError::BadChecksum);
    }
    let (t, c) = (m[0], m[1]);
    let mut rest = [0u8; 4];
    let (t6, c6) = match (t, c) {
        (8, _) | (0, _) => {
            rest.copy_from_slice(&m[4..8]);
            (if t == 8 { 128 } else { 129 }, 0)
        }
        (3, 0 | 1 | 6 | 7 | 8 | 11 | 12) => (1, 0),
        (3, 2) => {
            rest = [0, 0, 0, 6];
            (4, 1)
        }
        (3, 3) => (1, 4),
        (3, 4) => {
            let quoted_total = if m.len() >= 12 {
                be16(m, 10) as usize
            } else {
                0
            };
            let mut mtu = be16(m, 6) as u32;
            if mtu == 0 {
                mtu = plateau(quoted_total);
            }
            let frag = m.len() >= 16 && be16(m, 14) & 0x3fff != 0;
            rest = (mtu + 20 + if frag { 8 } else { 0 }).to_be_bytes();
            (2, 0)
        }
        (3, 5) => (1, 2),
        (3, 9 | 10 | 13 | 15) => (1, 1),
        (11, _) => (3, c),
        (12, 0 | 2) => {
            let p = match m[4] {
                0 | 1 => m[4],
                2 | 3 => 4,
                8 => 7,
                9 => 6,
                12..=15 => 8,
                16..=19 => 24,
                _ => return Err(XlatError::Untranslatable),
            };
            rest = [0, 0, 0, p];
            (4, 0)
        }
        _ => return Err(XlatError::Untranslatable),
    };
    out[0] = t6;
    out[1] = c6;
    out[2] = 0;
    out[3] = 0;
    out[4..8].copy_from_slice(&rest);
    let mut n = 8;
    if t6 < 128 {
        n += inner_v4_to_v6(pfx, &m[8..], &mut out[8..])?;
        n = n.min(MAX_ICMP6_ERROR - IP6_HEADER_LEN);
    } else {
        out[8..m.len()].copy_from_slice(&m[8..]);
        n = m.len();
    }
    let c = !fold(ones_sum(&out[..n], pseudo_header_sum(src, dst, 58, n)));
    set_be16(out, 2, c);
    Ok(n)
}

/// The IPv4 packet quoted in an ICMPv4 error, to IPv6; returns its length.
fn inner_v4_to_v6(pfx: &Prefix6052, q: &[u8], out: &mut [u8]) -> R<usize> {
    let h = V4::parse(q)?;
    let (src, dst) = (pfx.embed(h.src), pfx.embed(h.dst));
    let ulen = h.total - h.ihl;
    let payload = &q[h.ihl..q.len().min(h.total).max(h.ihl)];
    let hl = write_v6_header(&h, &src, &dst, ulen, out);
    let body = &mut out[hl..hl + payload.len()];
    body.copy_from_slice(payload);
    if h.frag_off == 0 {
        let plus = ones_sum(&dst, ones_sum(&src, 0));
        match h.proto {
            1 if body.len() >= 4 => {
                let t6 = match body[0] {
                    8 => 128,
                    0 => 129,
                    _ => return Err(XlatError::Untranslatable),
                };
                let old_word = be16(body, 0);
                body[0] = t6;
                let c = adjust(
                    be16(body, 2),
                    old_word as u64,
                    be16(body, 0) as u64 + pseudo_header_sum(&src, &dst, 58, ulen),
                );
                set_be16(body, 2, c);
            }
            1 => return Err(XlatError::Truncated),
            6 if body.len() >= 18 => {
                let c = adjust(be16(body, 16), h.addr_sum(), plus);
                set_be16(body, 16, c);
            }
            17 if body.len() >= 8 && be16(body, 6) != 0 => {
                let c = adjust(be16(body, 6), h.addr_sum(), plus);
                set_be16(body, 6, if c == 0 { 0xffff } else { c });
            }
            _ => {}
        }
    }
    Ok(hl + payload.len())
}

/// The parts of an IPv6 packet a 6-to-4 translation needs.
struct V6 {
    src4: [u8; 4],
    dst4: [u8; 4],
    sum6: u64,
    hlim: u8,
    /// Upper-layer protocol and offset.
    proto: u8,
    offset: usize,
    /// Upper-layer length from the payload length field.
    ulen: usize,
    frag: Option<ipv6::FragmentInfo>,
}

impl V6 {
    fn parse(pfx: &Prefix6052, p: &[u8]) -> R<V6> {
        if p.len() < IP6_HEADER_LEN {
            return Err(XlatError::Truncated);
        }
        if p[0] >> 4 != 6 {
            return Err(XlatError::Malformed);
        }
        let w = ipv6::walk(p, MAX_EXT_HEADERS).map_err(|e| match e {
            super::WireError::Truncated => XlatError::Truncated,
            _ => XlatError::Malformed,
        })?;
        if let Some((off, _)) = w.routing {
            if p[off + 3] != 0 {
                return Err(XlatError::SourceRoute);
            }
        }
        let plen = be16(p, 4) as usize;
        let ulen = (plen + IP6_HEADER_LEN)
            .checked_sub(w.offset)
            .ok_or(XlatError::Malformed)?;
        let src = ipv6::addr16(p, 8);
        let dst = ipv6::addr16(p, 24);
        Ok(V6 {
            src4: pfx.extract(&src).ok_or(XlatError::Unmappable)?,
            dst4: pfx.extract(&dst).ok_or(XlatError::Unmappable)?,
            sum6: ones_sum(&dst, ones_sum(&src, 0)),
            hlim: p[7],
            proto: w.protocol,
            offset: w.offset,
            ulen,
            frag: w.fragment,
        })
    }

    fn is_fragment(&self) -> bool {
        self.frag.is_some_and(|f| f.offset != 0 || f.more)
    }

    fn sum4(&self) -> u64 {
        ones_sum(&self.dst4, ones_sum(&self.src4, 0))
    }

    /// Writes the translating IPv4 header (20 bytes, no options).
    fn write_v4_header(&self, ulen: usize, out: &mut [u8]) {
        out[0] = 0x45;
        out[1] = 0;
        set_be16(out, 2, (20 + ulen).min(0xffff) as u16);
        match self.frag {
            Some(f) => {
                set_be16(out, 4, f.ident as u16);
                set_be16(out, 6, (f.offset >> 3) | if f.more { 0x2000 } else { 0 });
            }
            None => {
                set_be16(out, 4, 0);
                set_be16(out, 6, 0x4000);
            }
        }
        out[8] = self.hlim;
        out[9] = if self.proto == next_header::ICMPV6 {
            1
        } else {
            self.proto
        };
        out[10] = 0;
        out[11] = 0;
        out[12..16].copy_from_slice(&self.src4);
        out[16..20].copy_from_slice(&self.dst4);
        let c = checksum(&out[..20]);
        set_be16(out, 10, c);
    }
}

/// Translates the IPv6 packet `inp` (from its IPv6 header; bytes past its
/// payload length are ignored) into IPv4 in `out`, extracting the IPv4
/// addresses with `pfx`; returns the translated packet's length.
///
/// RFC 7915 section 5, with Click's choices: both addresses must carry
/// the prefix (else the packet is dropped); TOS 0; TTL copied from the hop
/// limit (not decremented); an unfragmented packet gets ID 0 and DF (as in
/// RFC 2765, which Click follows); a fragment's ID, MF and offset come from
/// its fragment header (DF clear). Hop-by-hop, destination options and
/// routing headers with no segments left are skipped. TCP and UDP
/// checksums are adjusted; ICMPv6 becomes ICMPv4 with its checksum
/// computed afresh (a bad ICMPv6 checksum is refused first), errors with
/// their quoted packet translated too.
pub fn v6_to_v4(pfx: &Prefix6052, inp: &[u8], out: &mut [u8]) -> R<usize> {
    if inp.len() < IP6_HEADER_LEN {
        return Err(XlatError::Truncated);
    }
    let plen = be16(inp, 4) as usize;
    if plen == 0 {
        return Err(XlatError::Malformed);
    }
    let inp = inp
        .get(..IP6_HEADER_LEN + plen)
        .ok_or(XlatError::Truncated)?;
    if out.len() < inp.len() + MAX_GROWTH {
        return Err(XlatError::Truncated);
    }
    let h = V6::parse(pfx, inp)?;
    let payload = &inp[h.offset..];
    if h.proto == next_header::ICMPV6 {
        if h.is_fragment() {
            return Err(XlatError::FragmentedIcmp);
        }
        let src = ipv6::addr16(inp, 8);
        let dst = ipv6::addr16(inp, 24);
        let n = icmp6_to_4(pfx, payload, &src, &dst, &mut out[20..])?;
        h.write_v4_header(n, out);
        return Ok(20 + n);
    }
    h.write_v4_header(payload.len(), out);
    let body = &mut out[20..20 + payload.len()];
    body.copy_from_slice(payload);
    if h.frag.is_none_or(|f| f.offset == 0) {
        match h.proto {
            6 if body.len() >= 18 => {
                let c = adjust(be16(body, 16), h.sum6, h.sum4());
                set_be16(body, 16, c);
            }
            17 if body.len() >= 8 && be16(body, 6) != 0 => {
                let c = adjust(be16(body, 6), h.sum6, h.sum4());
                set_be16(body, 6, if c == 0 { 0xffff } else { c });
            }
            _ => {}
        }
    }
    Ok(20 + payload.len())
}

/// [`v6_to_v4`] in place, for a packet whose upper layer is not ICMPv6
/// (TCP, UDP, others; an ICMPv6 packet is refused with
/// [`XlatError::Malformed`]: translate it with `v6_to_v4`): the IPv4
/// header is written over the end of the IPv6 headers, and the payload
/// stays where it is. Returns where the IPv4 packet starts in `d` and its
/// length; the same translation as `v6_to_v4`, without copying the
/// payload.
pub fn v6_to_v4_in_place(pfx: &Prefix6052, d: &mut [u8]) -> R<(usize, usize)> {
    if d.len() < IP6_HEADER_LEN {
        return Err(XlatError::Truncated);
    }
    let plen = be16(d, 4) as usize;
    if plen == 0 {
        return Err(XlatError::Malformed);
    }
    let d = d
        .get_mut(..IP6_HEADER_LEN + plen)
        .ok_or(XlatError::Truncated)?;
    let h = V6::parse(pfx, d)?;
    if h.proto == next_header::ICMPV6 {
        return Err(XlatError::Malformed);
    }
    let (head, body) = d.split_at_mut(h.offset);
    if h.frag.is_none_or(|f| f.offset == 0) {
        match h.proto {
            6 if body.len() >= 18 => {
                let c = adjust(be16(body, 16), h.sum6, h.sum4());
                set_be16(body, 16, c);
            }
            17 if body.len() >= 8 && be16(body, 6) != 0 => {
                let c = adjust(be16(body, 6), h.sum6, h.sum4());
                set_be16(body, 6, if c == 0 { 0xffff } else { c });
            }
            _ => {}
        }
    }
    // The upper layer starts at 40 or later: the IPv4 header fits in the
    // 20 bytes before it.
    let start = h.offset - 20;
    h.write_v4_header(body.len(), &mut head[start..]);
    Ok((start, 20 + body.len()))
}

/// ICMPv6 message `m` to ICMPv4 in `out`; returns its length.
fn icmp6_to_4(
    pfx: &Prefix6052,
    m: &[u8],
    src: &[u8; 16],
    dst: &[u8; 16],
    out: &mut [u8],
) -> R<usize> {
    if m.len() < 8 {
        return Err(XlatError::Truncated);
    }
    if fold(ones_sum(m, pseudo_header_sum(src, dst, 58, m.len()))) != 0xffff {
        return Err(XlatError::BadChecksum);
    }
    let (t, c) = (m[0], m[1]);
    let mut rest = [0u8; 4];
    let (t4, c4) = match (t, c) {
        (128, _) | (129, _) => {
            rest.copy_from_slice(&m[4..8]);
            (if t == 128 { 8 } else { 0 }, 0)
        }
        (1, 0) => (3, 0),
        (1, 1) => (3, 10),
        (1, 2) => (3, 5),
        (1, 3) => (3, 1),
        (1, 4) => (3, 3),
        (2, _) => {
            let mtu = u32::from_be_bytes([m[4], m[5], m[6], m[7]]).saturating_sub(20);
            let mtu = mtu.min(0xffff) as u16;
            rest[2..4].copy_from_slice(&mtu.to_be_bytes());
            (3, 4)
        }
        (3, _) => (11, c),
        (4, 0) => {
            let p = u32::from_be_bytes([m[4], m[5], m[6], m[7]]);
            let p4 = match p {
                0 | 1 => p as u8,
                4 | 5 => 2,
                6 => 9,
                7 => 8,
                8..=23 => 12,
                24..=39 => 16,
                _ => return Err(XlatError::Untranslatable),
            };
            rest[0] = p4;
            (12, 0)
        }
        (4, 1) => (3, 2),
        _ => return Err(XlatError::Untranslatable),
    };
    out[0] = t4;
    out[1] = c4;
    out[2] = 0;
    out[3] = 0;
    out[4..8].copy_from_slice(&rest);
    let n = if t4 == 8 || t4 == 0 {
        out[8..m.len()].copy_from_slice(&m[8..]);
        m.len()
    } else {
        8 + inner_v6_to_v4(pfx, &m[8..], &mut out[8..])?
    };
    let c = checksum(&out[..n]);
    set_be16(out, 2, c);
    Ok(n)
}

/// The IPv6 packet quoted in an ICMPv6 error, to IPv4; returns its length.
fn inner_v6_to_v4(pfx: &Prefix6052, q: &[u8], out: &mut [u8]) -> R<usize> {
    let h = V6::parse(pfx, q)?;
    let payload = &q[h.offset..];
    h.write_v4_header(h.ulen, out);
    let body = &mut out[20..20 + payload.len()];
    body.copy_from_slice(payload);
    if h.frag.is_none_or(|f| f.offset == 0) {
        match h.proto {
            next_header::ICMPV6 if body.len() >= 4 => {
                let t4 = match body[0] {
                    128 => 8,
                    129 => 0,
                    _ => return Err(XlatError::Untranslatable),
                };
                let old_word = be16(body, 0) as u64;
                let src = ipv6::addr16(q, 8);
                let dst = ipv6::addr16(q, 24);
                body[0] = t4;
                let c = adjust(
                    be16(body, 2),
                    old_word + pseudo_header_sum(&src, &dst, 58, h.ulen),
                    be16(body, 0) as u64,
                );
                set_be16(body, 2, c);
            }
            next_header::ICMPV6 => return Err(XlatError::Truncated),
            6 if body.len() >= 18 => {
                let c = adjust(be16(body, 16), h.sum6, h.sum4());
                set_be16(body, 16, c);
            }
            17 if body.len() >= 8 && be16(body, 6) != 0 => {
                let c = adjust(be16(body, 6), h.sum6, h.sum4());
                set_be16(body, 6, if c == 0 { 0xffff } else { c });
            }
            _ => {}
        }
    }
    Ok(20 + payload.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a6(s: &str) -> [u8; 16] {
        s.parse::<std::net::Ipv6Addr>().expect("address").octets()
    }

    #[test]
    fn rfc6052_examples_table() {
        // RFC 6052 section 2.4, IPv4 address 192.0.2.33.
        let v4 = [192, 0, 2, 33];
        let rows = [
            ("2001:db8::", 32, "2001:db8:c000:221::"),
            ("2001:db8:100::", 40, "2001:db8:1c0:2:21::"),
            ("2001:db8:122::", 48, "2001:db8:122:c000:2:2100::"),
            ("2001:db8:122:300::", 56, "2001:db8:122:3c0:0:221::"),
            ("2001:db8:122:344::", 64, "2001:db8:122:344:c0:2:2100:0"),
            ("2001:db8:122:344::", 96, "2001:db8:122:344::c000:221"),
        ];
        for (p, len, want) in rows {
            let pfx = Prefix6052::new(a6(p), len).expect("valid prefix");
            assert_eq!(pfx.embed(v4), a6(want), "/{len}");
            assert_eq!(pfx.extract(&a6(want)), Some(v4), "/{len}");
        }
        assert_eq!(
            Prefix6052::WELL_KNOWN.embed(v4),
            a6("64:ff9b::c000:221"),
            "64:ff9b::192.0.2.33"
        );
        assert_eq!(Prefix6052::IPV4_MAPPED.embed(v4), a6("::ffff:192.0.2.33"));
        assert_eq!(
            Prefix6052::WELL_KNOWN.extract(&a6("64:ff9a::c000:221")),
            None
        );
        assert_eq!(Prefix6052::IPV4_MAPPED.extract(&a6("::192.0.2.33")), None);
        assert!(Prefix6052::new(a6("2001:db8::"), 33).is_err());
        assert!(Prefix6052::new(a6("2001:db8::ff00:0:0:0"), 96).is_err());
        // Bits past the length are ignored.
        let p = Prefix6052::new(a6("2001:db8::1"), 32).expect("valid");
        assert_eq!(p.addr(), a6("2001:db8::"));
        assert_eq!(p.prefix_len(), 32);
    }

    fn ip4(proto: u8, flags_off: u16, id: u16, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, proto, 0, 0, 192, 0, 2, 1, 198, 51, 100, 7,
        ];
        let total = (20 + payload.len()) as u16;
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p[4..6].copy_from_slice(&id.to_be_bytes());
        p[6..8].copy_from_slice(&flags_off.to_be_bytes());
        let c = checksum(&p);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p.extend_from_slice(payload);
        p
    }

    fn l4_sum_ok4(p: &[u8], proto: u8) -> bool {
        let ps = pseudo_header_sum(&p[12..16], &p[16..20], proto, p.len() - 20);
        fold(ones_sum(&p[20..], ps)) == 0xffff
    }

    fn l4_sum_ok6(p: &[u8], off: usize, proto: u8) -> bool {
        let ps = pseudo_header_sum(&p[8..24], &p[24..40], proto, p.len() - off);
        fold(ones_sum(&p[off..], ps)) == 0xffff
    }

    /// A UDP datagram from 192.0.2.1:1000 to 198.51.100.7:53 with a valid
    /// checksum (or 0).
    fn udp4(data: &[u8], zero: bool) -> Vec<u8> {
        let mut u = vec![0x03, 0xe8, 0, 53, 0, 0, 0, 0];
        let l = (8 + data.len()) as u16;
        u[4..6].copy_from_slice(&l.to_be_bytes());
        u.extend_from_slice(data);
        if !zero {
            let ps = pseudo_header_sum(&[192, 0, 2, 1], &[198, 51, 100, 7], 17, u.len());
            let c = !fold(ones_sum(&u, ps));
            u[6..8].copy_from_slice(&c.to_be_bytes());
        }
        ip4(17, 0x4000, 7, &u)
    }

    #[test]
    fn udp_both_ways_round_trip() {
        let pfx = Prefix6052::WELL_KNOWN;
        let p = udp4(b"hello", false);
        let mut o = [0u8; 256];
        let n = v4_to_v6(&pfx, &p, &mut o).expect("translates");
        assert_eq!(n, p.len() + 20);
        assert_eq!(&o[..8], &[0x60, 0, 0, 0, 0, 13, 17, 64]);
        assert_eq!(&o[8..24], &a6("64:ff9b::192.0.2.1"));
        assert_eq!(&o[24..40], &a6("64:ff9b::198.51.100.7"));
        assert!(l4_sum_ok6(&o[..n], 40, 17));
        let mut back = [0u8; 256];
        let m = v6_to_v4(&pfx, &o[..n], &mut back).expect("translates back");
        // ID 0 and DF (Click's choice); TTL kept; the rest as sent.
        assert_eq!(&back[..10], &[0x45, 0, 0, 33, 0, 0, 0x40, 0, 64, 17]);
        assert_eq!(checksum(&back[..20]), 0);
        assert_eq!(&back[20..m], &p[20..]);
    }

    #[test]
    fn udp_zero_checksum_is_computed_unless_fragment() {
        let pfx = Prefix6052::IPV4_MAPPED;
        let mut o = [0u8; 256];
        let n = v4_to_v6(&pfx, &udp4(b"abc", true), &mut o).expect("translates");
        assert_ne!(&o[46..48], &[0, 0]);
        assert!(l4_sum_ok6(&o[..n], 40, 17));
        let mut f = udp4(b"abc", true);
        f[6] = 0x20; // MF
        f[10] = 0;
        f[11] = 0;
        assert_eq!(v4_to_v6(&pfx, &f, &mut o), Err(XlatError::UdpZeroChecksum));
    }

    #[test]
    fn fragments_carry_their_fields() {
        let pfx = Prefix6052::IPV4_MAPPED;
        let mut o = [0u8; 256];
        // A later fragment: offset 185 (1480 bytes), MF, ID 0x1234.
        let p = ip4(6, 0x2000 | 185, 0x1234, &[0xaa; 16]);
        let n = v4_to_v6(&pfx, &p, &mut o).expect("translates");
        assert_eq!(n, 40 + 8 + 16);
        assert_eq!(&o[4..8], &[0, 24, 44, 64]);
        assert_eq!(&o[40..48], &[6, 0, 0x05, 0xc9, 0, 0, 0x12, 0x34]);
        assert_eq!(&o[48..n], &[0xaa; 16]);
        let mut back = [0u8; 256];
        let m = v6_to_v4(&pfx, &o[..n], &mut back).expect("translates back");
        assert_eq!(&back[..10], &[0x45, 0, 0, 36, 0x12, 0x34, 0x20, 185, 64, 6]);
        assert_eq!(&back[20..m], &[0xaa; 16]);
    }

    #[test]
    fn icmp_echo_and_errors_both_ways() {
        let pfx = Prefix6052::IPV4_MAPPED;
        let mut echo = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g'];
        let c = checksum(&echo);
        echo[2..4].copy_from_slice(&c.to_be_bytes());
        let p = ip4(1, 0, 1, &echo);
        let mut o = [0u8; 512];
        let n = v4_to_v6(&pfx, &p, &mut o).expect("translates");
        assert_eq!(o[6], 58);
        assert_eq!(&o[40..42], &[128, 0]);
        assert_eq!(&o[44..n], &echo[4..]);
        assert!(l4_sum_ok6(&o[..n], 40, 58));

        // Port unreachable quoting the UDP datagram: quote translated.
        let quoted = udp4(b"hello", false);
        let mut err = vec![3, 3, 0, 0, 0, 0, 0, 0];
        err.extend_from_slice(&quoted);
        let c = checksum(&err);
        err[2..4].copy_from_slice(&c.to_be_bytes());
        let p = ip4(1, 0, 2, &err);
        let n = v4_to_v6(&pfx, &p, &mut o).expect("translates");
        assert_eq!(&o[40..42], &[1, 4]);
        assert_eq!(n, 40 + 8 + 40 + 13);
        assert_eq!(&o[48..56], &[0x60, 0, 0, 0, 0, 13, 17, 64]);
        assert!(l4_sum_ok6(&o[..n], 40, 58));
        assert!(
            l4_sum_ok6(&o[48..n], 40, 17),
            "quoted UDP checksum adjusted"
        );
        let mut back = [0u8; 512];
        let m = v6_to_v4(&pfx, &o[..n], &mut back).expect("translates back");
        assert_eq!(&back[20..22], &[3, 3]);
        assert_eq!(checksum(&back[20..m]), 0);
        // The quote comes back with ID 0 (Click's choice) and its fields.
        assert_eq!(&back[28..m][12..], &quoted[12..]);
        assert_eq!(&back[28..m][..6], &[0x45, 0, 0, 33, 0, 0]);
        assert_eq!(checksum(&back[28..48]), 0);
        assert!(l4_sum_ok4(&back[28..m], 17));

        // A bad ICMP checksum and an untranslatable type are refused.
        let mut bad = err.clone();
        bad[2] ^= 1;
        assert_eq!(
            v4_to_v6(&pfx, &ip4(1, 0, 3, &bad), &mut o),
            Err(XlatError::BadChecksum)
        );
        let mut ts = vec![13, 0, 0, 0, 0, 0, 0, 0];
        let c = checksum(&ts);
        ts[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(
            v4_to_v6(&pfx, &ip4(1, 0, 4, &ts), &mut o),
            Err(XlatError::Untranslatable)
        );
    }

    #[test]
    fn packet_too_big_mtu() {
        let pfx = Prefix6052::IPV4_MAPPED;
        let quoted = udp4(&[0; 40], false);
        for (mtu4, want6) in [(1400u16, 1420u32), (0, 1492 + 20)] {
            let mut err = vec![3, 4, 0, 0, 0, 0, 0, 0];
            err[6..8].copy_from_slice(&mtu4.to_be_bytes());
            let mut q = quoted.clone();
            q[2..4].copy_from_slice(&1500u16.to_be_bytes());
            err.extend_from_slice(&q[..28]);
            let c = checksum(&err);
            err[2..4].copy_from_slice(&c.to_be_bytes());
            let mut o = [0u8; 512];
            let n = v4_to_v6(&pfx, &ip4(1, 0, 1, &err), &mut o).expect("translates");
            assert_eq!(&o[40..42], &[2, 0]);
            assert_eq!(&o[44..48], &want6.to_be_bytes());
            // The quoted length is the original one (1500 - 20).
            assert_eq!(&o[52..54], &1480u16.to_be_bytes());
            let mut back = [0u8; 512];
            let m = v6_to_v4(&pfx, &o[..n], &mut back).expect("back");
            assert_eq!(m, 20 + 8 + 28);
            assert_eq!(&back[20..22], &[3, 4]);
            assert_eq!(&back[26..28], &((want6 - 20) as u16).to_be_bytes());
            assert_eq!(&back[30..32], &1500u16.to_be_bytes());
        }
    }

    #[test]
    fn in_place_gives_the_copying_translation() {
        let pfx = Prefix6052::IPV4_MAPPED;
        let mut tcp = vec![0u8; 24];
        tcp[12] = 0x50;
        tcp[13] = 0x02;
        tcp[20..].copy_from_slice(b"data");
        let cases = [
            ip4(17, 0x4000, 7, &udp4(b"hello", false)[20..]),
            ip4(6, 0x4000, 9, &tcp),
            // A later fragment: the payload is copied as it is.
            ip4(6, 0x2000 | 185, 0x1234, &[0xaa; 16]),
        ];
        for p in cases {
            let mut o = [0u8; 256];
            let n = v4_to_v6(&pfx, &p, &mut o).expect("translates");
            let mut want = [0u8; 256];
            let m = v6_to_v4(&pfx, &o[..n], &mut want).expect("copies");
            // With trailing bytes past the payload length, as a padded frame.
            let mut d = o[..n].to_vec();
            d.extend_from_slice(&[0xee; 6]);
            let (start, len) = v6_to_v4_in_place(&pfx, &mut d).expect("in place");
            assert_eq!(&d[start..start + len], &want[..m]);
        }
        // ICMPv6 is left to the copying translation.
        let echo = [8, 0, 0xf7, 0xfe, 0, 1, 0, 0];
        let mut o = [0u8; 256];
        let n = v4_to_v6(&pfx, &ip4(1, 0, 1, &echo), &mut o).expect("translates");
        assert_eq!(
            v6_to_v4_in_place(&pfx, &mut o[..n]),
            Err(XlatError::Malformed)
        );
        for cut in 0..n {
            let mut c = o;
            let _ = v6_to_v4_in_place(&pfx, &mut c[..cut]);
        }
    }

    #[test]
    fn refusals() {
        let pfx = Prefix6052::IPV4_MAPPED;
        let mut o = [0u8; 256];
        let p = udp4(b"x", false);
        assert_eq!(v4_to_v6(&pfx, &p[..25], &mut o), Err(XlatError::Truncated));
        let mut lsrr = ip4(17, 0, 0, &[]);
        lsrr[0] = 0x47;
        lsrr[3] = 28;
        lsrr.extend_from_slice(&[131, 7, 4, 1, 2, 3, 4, 0]);
        assert_eq!(v4_to_v6(&pfx, &lsrr, &mut o), Err(XlatError::SourceRoute));
        let n = v4_to_v6(&pfx, &p, &mut o).expect("translates");
        // Not IPv4-mapped: Click drops it.
        assert_eq!(
            v6_to_v4(&Prefix6052::WELL_KNOWN, &o[..n], &mut [0u8; 256]),
            Err(XlatError::Unmappable)
        );
        let mut tiny = [0u8; 8];
        assert_eq!(
            v6_to_v4(&pfx, &o[..n], &mut tiny),
            Err(XlatError::Truncated)
        );
        for cut in 0..n {
            let _ = v6_to_v4(&pfx, &o[..cut], &mut [0u8; 256]);
            let _ = v4_to_v6(&pfx, &p[..cut.min(p.len())], &mut [0u8; 256]);
        }
    }
}
