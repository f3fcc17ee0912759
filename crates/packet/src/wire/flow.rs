//! The five-tuple of an IP packet, for IPv4 and IPv6, parsed in one place.
//!
//! [`Flow::parse`] reads a packet starting at its network header and
//! returns its [`FiveTuple`] (protocol, addresses, ports) together with
//! what a connection tracker needs next to it: where the transport header
//! is, TCP flags or the ICMP type, and whether the packet is a fragment.
//! Every element that keys a table by flow reads the tuple here, so that
//! they agree on what a flow is.
//!
//! What the tuple holds:
//! - TCP, UDP, UDP-Lite, SCTP, DCCP: the ports.
//! - ICMP echo request/reply, ICMPv6 echo request/reply: the identifier as
//!   both ports (so that a request and its reply have reversed tuples).
//! - Every other ICMP/ICMPv6 message and every other protocol: ports 0.
//! - A fragment other than the first (IPv4 offset not zero; IPv6 fragment
//!   header with offset not zero): no transport header is there, so the
//!   ports are 0 and [`Flow::fragment`] is [`Fragment::Later`]. Such a
//!   tuple is the datagram's three-tuple; it aliases a port-0 packet of the
//!   same protocol, which is why an element must look at `fragment` before
//!   it trusts the ports. The stateful firewall and CGNAT drop every
//!   fragment, first or later (they do not reassemble).
//! - A first fragment ([`Fragment::First`]) has its ports, like a whole
//!   packet; a first fragment too short for the transport header (RFC 1858
//!   "tiny fragment") is `Truncated`, like any other truncated packet.
//!
//! The transport header must be whole for the protocols whose fields the
//! flow reads (TCP 20 bytes, UDP/UDP-Lite/ICMP/ICMPv6 8, SCTP/DCCP 12);
//! the TCP data offset and the IP total length are not checked here
//! (`CheckIPHeader`/`CheckTCPHeader` validate; a flow lookup only needs
//! the fields).
//!
//! IPv6 extension headers are walked by [`ipv6::walk`] up to
//! [`ipv6::MAX_EXT_HEADERS`]; a longer chain is `TooManyHeaders`.

use super::icmp::icmp_type;
use super::ipv4::Ipv4Packet;
use super::ipv6::{self, icmp6_type, next_header, Ipv6Header};
use super::{be16, WireError};

/// IP protocol numbers the flow parser reads ports for.
pub mod proto {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// DCCP (ports in the UDP positions).
    pub const DCCP: u8 = 33;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// SCTP (ports in the UDP positions).
    pub const SCTP: u8 = 132;
    /// UDP-Lite.
    pub const UDPLITE: u8 = 136;
}

/// The address family of a tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Family {
    /// IPv4: the addresses are the first 4 bytes of `src`/`dst`, the rest
    /// zero.
    V4 = 4,
    /// IPv6.
    V6 = 6,
}

/// Where a packet stands in a fragmented datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fragment {
    /// Not a fragment (for IPv6 also an atomic fragment: a fragment
    /// header with offset 0 and M clear).
    Unfragmented,
    /// The first fragment of several: the transport header is here.
    First,
    /// A later fragment: no transport header, ports 0.
    Later,
}

/// A flow's identity: protocol, addresses, ports (see the module doc for
/// what the ports are per protocol).
///
/// One layout for both families: addresses are 16 bytes, an IPv4 address
/// in the first 4 with the rest zero, and `Hash` writes only the bytes a
/// family uses (two words for IPv4, five for IPv6) so that keyed hashing
/// of an IPv4 tuple costs what hashing a `(u32, u32, u16, u16, u8)` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FiveTuple {
    /// The source address.
    pub src: [u8; 16],
    /// The destination address.
    pub dst: [u8; 16],
    /// The source port (ICMP echo: the identifier).
    pub sport: u16,
    /// The destination port (ICMP echo: the identifier).
    pub dport: u16,
    /// The transport protocol (for IPv6 the upper layer after the
    /// extension headers).
    pub proto: u8,
    /// The address family.
    pub family: Family,
}

impl std::hash::Hash for FiveTuple {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let tail = ((self.sport as u64) << 48)
            | ((self.dport as u64) << 32)
            | ((self.proto as u64) << 8)
            | self.family as u64;
        match self.family {
            Family::V4 => {
                state.write_u64(((self.src_v4() as u64) << 32) | self.dst_v4() as u64);
            }
            Family::V6 => {
                state.write_u128(u128::from_be_bytes(self.src));
                state.write_u128(u128::from_be_bytes(self.dst));
            }
        }
        state.write_u64(tail);
    }
}

impl FiveTuple {
    /// An IPv4 tuple.
    #[inline(always)]
    pub fn v4(proto: u8, src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16) -> FiveTuple {
        let mut s = [0u8; 16];
        let mut d = [0u8; 16];
        s[..4].copy_from_slice(&src);
        d[..4].copy_from_slice(&dst);
        FiveTuple {
            src: s,
            dst: d,
            sport,
            dport,
            proto,
            family: Family::V4,
        }
    }

    /// An IPv6 tuple.
    #[inline]
    pub fn v6(proto: u8, src: [u8; 16], sport: u16, dst: [u8; 16], dport: u16) -> FiveTuple {
        FiveTuple {
            src,
            dst,
            sport,
            dport,
            proto,
            family: Family::V6,
        }
    }

    /// The tuple of the packet starting at `l3` (see [`Flow::parse`]).
    #[inline]
    pub fn parse(l3: &[u8]) -> Result<FiveTuple, WireError> {
        Flow::parse(l3).map(|f| f.tuple)
    }

    /// The tuple of the opposite direction.
    #[inline]
    pub fn reverse(&self) -> FiveTuple {
        FiveTuple {
            src: self.dst,
            dst: self.src,
            sport: self.dport,
            dport: self.sport,
            proto: self.proto,
            family: self.family,
        }
    }

    /// The IPv4 source address as a host-order number (meaningful for
    /// [`Family::V4`]).
    #[inline(always)]
    pub fn src_v4(&self) -> u32 {
        u32::from_be_bytes([self.src[0], self.src[1], self.src[2], self.src[3]])
    }

    /// The IPv4 destination address as a host-order number.
    #[inline(always)]
    pub fn dst_v4(&self) -> u32 {
        u32::from_be_bytes([self.dst[0], self.dst[1], self.dst[2], self.dst[3]])
    }

    /// The source address as `std::net::IpAddr`.
    pub fn src_addr(&self) -> std::net::IpAddr {
        addr(self.family, &self.src)
    }

    /// The destination address as `std::net::IpAddr`.
    pub fn dst_addr(&self) -> std::net::IpAddr {
        addr(self.family, &self.dst)
    }
}

fn addr(f: Family, a: &[u8; 16]) -> std::net::IpAddr {
    match f {
        Family::V4 => std::net::Ipv4Addr::new(a[0], a[1], a[2], a[3]).into(),
        Family::V6 => std::net::Ipv6Addr::from(*a).into(),
    }
}

impl std::fmt::Display for FiveTuple {
    /// `PROTO SRC:SPORT DST:DPORT` (IPv6 addresses in brackets).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (s, d) = (self.src_addr(), self.dst_addr());
        match self.family {
            Family::V4 => write!(f, "{} {s}:{} {d}:{}", self.proto, self.sport, self.dport),
            Family::V6 => write!(
                f,
                "{} [{s}]:{} [{d}]:{}",
                self.proto, self.sport, self.dport
            ),
        }
    }
}

/// A parsed packet's flow: its tuple and what a tracker reads beside it.
///
/// The IPv4 path is `#[inline(always)]` down to the byte reads: inlined
/// into the caller, the unused address bytes and fields compile away; out
/// of line, the 48-byte result went through memory and the stateful
/// firewall ran about 85 more instructions per packet (callgrind, a
/// 3-million-packet trace). Inlined, it still costs the firewall and CGNAT
/// some 15-30 instructions per packet more than their own parsers did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flow {
    /// The five-tuple.
    pub tuple: FiveTuple,
    /// Offset of the transport header from the network header (for a
    /// later fragment, of the fragment's data).
    pub l4_offset: usize,
    /// Whether the packet is a fragment, and which.
    pub fragment: Fragment,
    /// The TCP flags byte (TCP only; 0 otherwise and in a quote).
    pub tcp_flags: u8,
    /// The ICMP or ICMPv6 type (those protocols only; 0 otherwise).
    pub icmp_type: u8,
}

/// Fills ports, flags and type from the transport header `l4`, one match
/// on the protocol that also checks the length it needs (`full`: a packet;
/// otherwise a quote, of which RFC 792 promises 8 bytes, and TCP flags are
/// not read). `Truncated` if `l4` is shorter than what the protocol's
/// fields need (TCP 20, SCTP/DCCP 12, UDP/UDP-Lite/ICMP/ICMPv6 8).
#[inline(always)]
fn read_l4(f: &mut Flow, l4: &[u8], full: bool) -> Result<(), WireError> {
    let need = |n: usize| {
        if l4.len() < if full { n } else { 8 } {
            Err(WireError::Truncated)
        } else {
            Ok(())
        }
    };
    match f.tuple.proto {
        proto::TCP => {
            need(20)?;
            f.tuple.sport = be16(l4, 0);
            f.tuple.dport = be16(l4, 2);
            if full {
                f.tcp_flags = l4[13];
            }
        }
        proto::UDP | proto::UDPLITE => {
            need(8)?;
            f.tuple.sport = be16(l4, 0);
            f.tuple.dport = be16(l4, 2);
        }
        proto::ICMP | proto::ICMPV6 => {
            need(8)?;
            let t = l4[0];
            let echo = if f.tuple.family == Family::V4 {
                f.tuple.proto == proto::ICMP && icmp_type::is_echo(t)
            } else {
                f.tuple.proto == proto::ICMPV6
                    && (t == icmp6_type::ECHO_REQUEST || t == icmp6_type::ECHO_REPLY)
            };
            let ours = (f.tuple.family == Family::V4) == (f.tuple.proto == proto::ICMP);
            if ours {
                f.icmp_type = t;
            }
            if echo {
                let id = be16(l4, 4);
                (f.tuple.sport, f.tuple.dport) = (id, id);
            }
        }
        proto::SCTP | proto::DCCP => {
            need(12)?;
            f.tuple.sport = be16(l4, 0);
            f.tuple.dport = be16(l4, 2);
        }
        _ => {}
    }
    Ok(())
}

impl Flow {
    /// The flow of the IP packet starting at `l3`, IPv4 or IPv6 by its
    /// version nibble. Errors: `Truncated` (a header, the transport header
    /// of an unfragmented or first-fragment packet, or an extension header
    /// runs past `l3`), `BadVersion` (neither 4 nor 6), `BadLength` (IPv4
    /// IHL under 5), `TooManyHeaders`/`Malformed` from the IPv6 walk.
    #[inline(always)]
    pub fn parse(l3: &[u8]) -> Result<Flow, WireError> {
        match l3.first().map(|b| b >> 4) {
            Some(4) => Flow::from_ipv4(&Ipv4Packet::new_checked(l3)?),
            Some(6) => Flow::parse_ipv6(l3),
            Some(_) => Err(WireError::BadVersion),
            None => Err(WireError::Truncated),
        }
    }

    /// The flow of a checked IPv4 packet (the caller may have looked at
    /// the header first, e.g. to count fragments apart).
    #[inline(always)]
    pub fn from_ipv4<T: AsRef<[u8]>>(ip: &Ipv4Packet<T>) -> Result<Flow, WireError> {
        Self::v4(ip, true)
    }

    /// The flow of the IPv4 datagram an ICMP error quotes (`q`: from the
    /// quoted IP header to the end of the ICMP message). The quote holds
    /// the IP header and at least 8 bytes of what followed: the ports of
    /// TCP/UDP, an echo's identifier; TCP flags are not read.
    #[inline(always)]
    pub fn parse_ipv4_quote(q: &[u8]) -> Result<Flow, WireError> {
        Self::v4(&Ipv4Packet::new_checked(q)?, false)
    }

    #[inline(always)]
    fn v4<T: AsRef<[u8]>>(ip: &Ipv4Packet<T>, full: bool) -> Result<Flow, WireError> {
        let hl = ip.header_len();
        let l4 = ip.rest();
        let p = ip.protocol();
        if !full && l4.len() < 8 {
            return Err(WireError::Truncated);
        }
        let mut f = Flow {
            tuple: FiveTuple::v4(p, ip.src_addr(), 0, ip.dst_addr(), 0),
            l4_offset: hl,
            fragment: Fragment::Unfragmented,
            tcp_flags: 0,
            icmp_type: 0,
        };
        if ip.is_fragment() {
            if ip.is_later_fragment() {
                f.fragment = Fragment::Later;
                return Ok(f);
            }
            f.fragment = Fragment::First;
        }
        read_l4(&mut f, l4, full)?;
        Ok(f)
    }

    /// The flow of an IPv6 packet, its extension headers walked (at most
    /// [`ipv6::MAX_EXT_HEADERS`]).
    #[inline]
    pub fn parse_ipv6(l3: &[u8]) -> Result<Flow, WireError> {
        Self::v6(l3, true)
    }

    /// The flow of the IPv6 packet an ICMPv6 error quotes (`q`: from the
    /// quoted fixed header to the end of the ICMPv6 message; RFC 4443 cuts
    /// the quote at the minimum MTU, so its payload length may exceed what
    /// is there). The extension headers are walked as in a packet (a
    /// header cut off by the quote is `Truncated`); after them, 8 bytes
    /// are enough for the ports or an echo's identifier; TCP flags are
    /// not read.
    #[inline]
    pub fn parse_ipv6_quote(q: &[u8]) -> Result<Flow, WireError> {
        Self::v6(q, false)
    }

    #[inline(always)]
    fn v6(l3: &[u8], full: bool) -> Result<Flow, WireError> {
        let ip = Ipv6Header::new_checked(l3)?;
        // Most packets carry no extension header: their walk is known
        // without calling the walker (out of line, it cost about 50
        // instructions a packet for nothing to walk).
        let nh = ip.next_header();
        let w = if next_header::is_extension(nh) {
            ipv6::walk(l3, ipv6::MAX_EXT_HEADERS)?
        } else {
            ipv6::Ip6Walk {
                protocol: nh,
                offset: ipv6::IP6_HEADER_LEN,
                ext_headers: 0,
                fragment: None,
                routing: None,
            }
        };
        let mut f = Flow {
            tuple: FiveTuple::v6(w.protocol, ip.src_addr(), 0, ip.dst_addr(), 0),
            l4_offset: w.offset,
            fragment: Fragment::Unfragmented,
            tcp_flags: 0,
            icmp_type: 0,
        };
        if let Some(fr) = w.fragment {
            if !fr.is_first() {
                f.fragment = Fragment::Later;
                return Ok(f);
            }
            if fr.more {
                f.fragment = Fragment::First;
            }
        }
        if matches!(w.protocol, next_header::ESP | next_header::NO_NEXT) {
            return Ok(f);
        }
        let l4 = &l3[w.offset..];
        if !full && l4.len() < 8 {
            return Err(WireError::Truncated);
        }
        read_l4(&mut f, l4, full)?;
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash, Hasher};

    /// IPv4 10.0.0.1 -> 10.0.0.2, protocol `p`, then `l4`.
    fn v4(p: u8, frag: u16, l4: &[u8]) -> Vec<u8> {
        let mut b = vec![
            0x45, 0, 0, 0, 0, 7, 0, 0, 64, p, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        b[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        b[6..8].copy_from_slice(&frag.to_be_bytes());
        b.extend_from_slice(l4);
        b
    }

    /// A TCP header 40000 -> 80 with `flags`.
    fn tcp(flags: u8) -> [u8; 20] {
        let mut t = [0u8; 20];
        t[..4].copy_from_slice(&[0x9c, 0x40, 0x00, 0x50]);
        t[12] = 0x50;
        t[13] = flags;
        t
    }

    const UDP: [u8; 8] = [0x04, 0xd2, 0x00, 0x35, 0x00, 0x08, 0x00, 0x00]; // 1234 -> 53

    #[test]
    fn ipv4_tcp_udp_icmp() {
        let f = Flow::parse(&v4(6, 0, &tcp(0x12))).expect("tcp");
        assert_eq!(
            f.tuple,
            FiveTuple::v4(6, [10, 0, 0, 1], 40000, [10, 0, 0, 2], 80)
        );
        assert_eq!((f.l4_offset, f.tcp_flags, f.icmp_type), (20, 0x12, 0));
        assert_eq!(f.fragment, Fragment::Unfragmented);
        assert_eq!(f.tuple.src_v4(), 0x0a00_0001);
        assert_eq!(f.tuple.to_string(), "6 10.0.0.1:40000 10.0.0.2:80");

        let f = Flow::parse(&v4(17, 0, &UDP)).expect("udp");
        assert_eq!(
            (f.tuple.sport, f.tuple.dport, f.tuple.proto),
            (1234, 53, 17)
        );

        // Echo request id 0x1234: the identifier is both ports.
        let echo = [8, 0, 0, 0, 0x12, 0x34, 0, 1];
        let f = Flow::parse(&v4(1, 0, &echo)).expect("echo");
        assert_eq!(
            (f.tuple.sport, f.tuple.dport, f.icmp_type),
            (0x1234, 0x1234, 8)
        );
        // An error carries no identifier: ports 0.
        let unreach = [3, 1, 0, 0, 0x12, 0x34, 0, 1];
        let f = Flow::parse(&v4(1, 0, &unreach)).expect("unreach");
        assert_eq!((f.tuple.sport, f.tuple.dport, f.icmp_type), (0, 0, 3));

        // GRE: no ports, no transport header needed.
        let f = Flow::parse(&v4(47, 0, &[])).expect("gre");
        assert_eq!((f.tuple.proto, f.tuple.sport, f.tuple.dport), (47, 0, 0));

        // SCTP and UDP-Lite ports.
        let mut sctp = [0u8; 12];
        sctp[..4].copy_from_slice(&[0x0b, 0x59, 0x0b, 0x5a]);
        let f = Flow::parse(&v4(132, 0, &sctp)).expect("sctp");
        assert_eq!((f.tuple.sport, f.tuple.dport), (2905, 2906));
        let f = Flow::parse(&v4(136, 0, &UDP)).expect("udplite");
        assert_eq!((f.tuple.sport, f.tuple.dport), (1234, 53));
    }

    #[test]
    fn ipv4_truncations_and_bad_headers() {
        // TCP header of 19 bytes; UDP of 7; ICMP of 7.
        assert_eq!(
            Flow::parse(&v4(6, 0, &tcp(2)[..19])),
            Err(WireError::Truncated)
        );
        assert_eq!(
            Flow::parse(&v4(17, 0, &UDP[..7])),
            Err(WireError::Truncated)
        );
        assert_eq!(Flow::parse(&v4(1, 0, &[8; 7])), Err(WireError::Truncated));
        let mut ihl4 = v4(17, 0, &UDP);
        ihl4[0] = 0x44;
        assert_eq!(Flow::parse(&ihl4), Err(WireError::BadLength));
        let mut ihl6 = v4(17, 0, &UDP[..2]);
        ihl6[0] = 0x46; // 24-byte header in 22 bytes
        assert_eq!(Flow::parse(&ihl6), Err(WireError::Truncated));
        assert_eq!(Flow::parse(&[]), Err(WireError::Truncated));
        assert_eq!(Flow::parse(&[0x55; 40]), Err(WireError::BadVersion));
        // Options move the transport header.
        let mut opt = v4(17, 0, &[1, 1, 1, 1]);
        opt[0] = 0x46;
        opt.extend_from_slice(&UDP);
        let f = Flow::parse(&opt).expect("options");
        assert_eq!((f.l4_offset, f.tuple.sport), (24, 1234));
    }

    #[test]
    fn ipv4_fragments() {
        // First fragment (MF, offset 0): ports read, marked First.
        let f = Flow::parse(&v4(17, 0x2000, &UDP)).expect("first");
        assert_eq!(f.fragment, Fragment::First);
        assert_eq!((f.tuple.sport, f.tuple.dport), (1234, 53));
        // A tiny first fragment is truncated.
        assert_eq!(
            Flow::parse(&v4(6, 0x2000, &tcp(2)[..8])),
            Err(WireError::Truncated)
        );
        // Later fragments (offset 8; the last one, MF clear): no ports,
        // even where the data looks like a header, and none needed.
        for frag in [0x2001, 0x0001] {
            let f = Flow::parse(&v4(17, frag, &UDP)).expect("later");
            assert_eq!(f.fragment, Fragment::Later, "{frag:#x}");
            assert_eq!(
                f.tuple,
                FiveTuple::v4(17, [10, 0, 0, 1], 0, [10, 0, 0, 2], 0)
            );
            let f = Flow::parse(&v4(6, frag, &[1, 2, 3])).expect("short later");
            assert_eq!(f.fragment, Fragment::Later);
        }
        // DF alone is not a fragment.
        let f = Flow::parse(&v4(17, 0x4000, &UDP)).expect("df");
        assert_eq!(f.fragment, Fragment::Unfragmented);
    }

    #[test]
    fn ipv4_quotes_need_eight_bytes() {
        // A quoted TCP header of 8 bytes is enough for its ports.
        let q = v4(6, 0, &tcp(2)[..8]);
        let f = Flow::parse_ipv4_quote(&q).expect("quote");
        assert_eq!((f.tuple.sport, f.tuple.dport, f.tcp_flags), (40000, 80, 0));
        assert_eq!(
            Flow::parse_ipv4_quote(&v4(6, 0, &tcp(2)[..7])),
            Err(WireError::Truncated)
        );
        // Also for a protocol without ports.
        assert_eq!(
            Flow::parse_ipv4_quote(&v4(47, 0, &[0; 4])),
            Err(WireError::Truncated)
        );
        let f = Flow::parse_ipv4_quote(&v4(17, 0x0002, &UDP)).expect("later");
        assert_eq!((f.fragment, f.tuple.sport), (Fragment::Later, 0));
    }

    /// IPv6 2001:db8::1 -> 2001:db8::2 with next header `nh`, then `rest`.
    fn v6(nh: u8, rest: &[u8]) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[4..6].copy_from_slice(&(rest.len() as u16).to_be_bytes());
        p[6] = nh;
        p[7] = 64;
        p[8..12].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p[24..28].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p[23] = 1;
        p[39] = 2;
        p.extend_from_slice(rest);
        p
    }

    fn a6(last: u8) -> [u8; 16] {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = last;
        a
    }

    /// An 8-byte extension header (Hop-by-Hop / Destination Options /
    /// Routing) with next header `nh`, padded with PadN.
    fn ext8(nh: u8) -> [u8; 8] {
        [nh, 0, 1, 4, 0, 0, 0, 0]
    }

    /// A fragment header with next header `nh`, offset `off` (bytes), M.
    fn frag6(nh: u8, off: u16, more: bool) -> [u8; 8] {
        let fo = (off & 0xfff8) | more as u16;
        let f = fo.to_be_bytes();
        [nh, 0, f[0], f[1], 0, 0, 0, 9]
    }

    #[test]
    fn ipv6_tcp_udp_icmp6() {
        let f = Flow::parse(&v6(6, &tcp(0x02))).expect("tcp");
        assert_eq!(f.tuple, FiveTuple::v6(6, a6(1), 40000, a6(2), 80));
        assert_eq!((f.l4_offset, f.tcp_flags), (40, 0x02));
        assert_eq!(
            f.tuple.to_string(),
            "6 [2001:db8::1]:40000 [2001:db8::2]:80"
        );
        let f = Flow::parse(&v6(17, &UDP)).expect("udp");
        assert_eq!((f.tuple.sport, f.tuple.dport), (1234, 53));
        // Echo request id 7.
        let f = Flow::parse(&v6(58, &[128, 0, 0, 0, 0, 7, 0, 1])).expect("echo");
        assert_eq!((f.tuple.proto, f.tuple.sport, f.tuple.dport), (58, 7, 7));
        assert_eq!(f.icmp_type, 128);
        // Neighbor solicitation: no identifier.
        let mut ns = [0u8; 24];
        ns[0] = 135;
        let f = Flow::parse(&v6(58, &ns)).expect("ns");
        assert_eq!((f.tuple.sport, f.icmp_type), (0, 135));
        // ICMP (v4's protocol number) inside IPv6 reads no identifier.
        let f = Flow::parse(&v6(1, &[8, 0, 0, 0, 0, 7, 0, 1])).expect("icmp in v6");
        assert_eq!((f.tuple.sport, f.icmp_type), (0, 0));
    }

    #[test]
    fn ipv6_extension_headers_are_walked() {
        // Hop-by-Hop, Destination Options, Routing, then UDP.
        let mut rest = ext8(60).to_vec();
        rest.extend_from_slice(&ext8(43));
        rest.extend_from_slice(&[17, 0, 0, 0, 0, 0, 0, 0]); // routing type 0, 0 left
        rest.extend_from_slice(&UDP);
        let f = Flow::parse(&v6(0, &rest)).expect("chain");
        assert_eq!((f.tuple.proto, f.l4_offset), (17, 64));
        assert_eq!((f.tuple.sport, f.tuple.dport), (1234, 53));
        assert_eq!(f.fragment, Fragment::Unfragmented);
        // Transport header cut short behind the chain.
        let short = v6(0, &rest[..rest.len() - 1]);
        assert_eq!(Flow::parse(&short), Err(WireError::Truncated));
        // An extension header cut short.
        assert_eq!(Flow::parse(&v6(0, &rest[..5])), Err(WireError::Truncated));
        // The fixed header cut short.
        assert_eq!(Flow::parse(&v6(17, &UDP)[..39]), Err(WireError::Truncated));
        // ESP: nothing after it is readable; ports 0, no error.
        let f = Flow::parse(&v6(50, &[0, 0, 1, 0, 0, 0, 0, 1])).expect("esp");
        assert_eq!((f.tuple.proto, f.tuple.sport), (50, 0));
    }

    #[test]
    fn ipv6_chain_longer_than_the_limit() {
        // MAX_EXT_HEADERS Destination Options headers then UDP: accepted;
        // one more: refused.
        let chain = |n: usize| {
            let mut rest = Vec::new();
            for i in 0..n {
                rest.extend_from_slice(&ext8(if i + 1 == n { 17 } else { 60 }));
            }
            rest.extend_from_slice(&UDP);
            v6(60, &rest)
        };
        let f = Flow::parse(&chain(ipv6::MAX_EXT_HEADERS)).expect("at the limit");
        assert_eq!(f.tuple.sport, 1234);
        assert_eq!(
            Flow::parse(&chain(ipv6::MAX_EXT_HEADERS + 1)),
            Err(WireError::TooManyHeaders)
        );
    }

    #[test]
    fn ipv6_fragments() {
        // First fragment of several: ports, First.
        let mut rest = frag6(6, 0, true).to_vec();
        rest.extend_from_slice(&tcp(0x02));
        let f = Flow::parse(&v6(44, &rest)).expect("first");
        assert_eq!(f.fragment, Fragment::First);
        assert_eq!((f.tuple.proto, f.tuple.sport, f.l4_offset), (6, 40000, 48));
        // An atomic fragment (offset 0, M clear) is whole.
        let mut rest = frag6(17, 0, false).to_vec();
        rest.extend_from_slice(&UDP);
        let f = Flow::parse(&v6(44, &rest)).expect("atomic");
        assert_eq!(f.fragment, Fragment::Unfragmented);
        assert_eq!(f.tuple.sport, 1234);
        // A later fragment: the protocol from the fragment header, no
        // ports, and what follows is not read.
        let mut rest = frag6(17, 1232, true).to_vec();
        rest.extend_from_slice(&UDP[..3]);
        let f = Flow::parse(&v6(44, &rest)).expect("later");
        assert_eq!(f.fragment, Fragment::Later);
        assert_eq!(f.tuple, FiveTuple::v6(17, a6(1), 0, a6(2), 0));
    }

    #[test]
    fn ipv6_quotes_need_eight_bytes_after_the_chain() {
        // A quoted TCP header of 8 bytes behind a Destination Options
        // header: ports, no flags; the payload length says more follows.
        let mut rest = ext8(6).to_vec();
        rest.extend_from_slice(&tcp(0x02));
        let mut q = v6(60, &rest);
        q.truncate(40 + 8 + 8);
        let f = Flow::parse_ipv6_quote(&q).expect("quote");
        assert_eq!(f.tuple, FiveTuple::v6(6, a6(1), 40000, a6(2), 80));
        assert_eq!((f.tcp_flags, f.l4_offset), (0, 48));
        // As a packet, the same bytes are a truncated TCP header.
        assert_eq!(Flow::parse_ipv6(&q), Err(WireError::Truncated));
        q.pop();
        assert_eq!(Flow::parse_ipv6_quote(&q), Err(WireError::Truncated));
        // An echo request's identifier; a protocol without ports still
        // needs its 8 bytes.
        let echo = v6(58, &[128, 0, 0, 0, 0, 7, 0, 1]);
        let f = Flow::parse_ipv6_quote(&echo).expect("echo");
        assert_eq!((f.tuple.sport, f.icmp_type), (7, 128));
        assert_eq!(
            Flow::parse_ipv6_quote(&v6(47, &[0; 4])),
            Err(WireError::Truncated)
        );
        // A chain cut by the quote.
        assert_eq!(
            Flow::parse_ipv6_quote(&v6(60, &ext8(6)[..4])),
            Err(WireError::Truncated)
        );
    }

    #[test]
    fn reverse_swaps_ends() {
        let t = FiveTuple::v4(6, [10, 0, 0, 1], 40000, [10, 0, 0, 2], 80);
        let r = t.reverse();
        assert_eq!(r, FiveTuple::v4(6, [10, 0, 0, 2], 80, [10, 0, 0, 1], 40000));
        assert_eq!(r.reverse(), t);
        // An echo request and its reply have reversed tuples.
        let mut req = v4(1, 0, &[8, 0, 0, 0, 0, 9, 0, 1]);
        let q = Flow::parse(&req).expect("request").tuple;
        req[12..20].copy_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1]);
        req[20] = 0;
        assert_eq!(Flow::parse(&req).expect("reply").tuple, q.reverse());
        let t6 = FiveTuple::v6(17, a6(1), 1, a6(2), 2);
        assert_eq!(t6.reverse().src, a6(2));
    }

    /// Collects what `Hash` writes.
    #[derive(Default)]
    struct Words(Vec<u128>);
    impl Hasher for Words {
        fn finish(&self) -> u64 {
            0
        }
        fn write(&mut self, _: &[u8]) {
            unreachable!("FiveTuple writes whole words");
        }
        fn write_u64(&mut self, v: u64) {
            self.0.push(v as u128);
        }
        fn write_u128(&mut self, v: u128) {
            self.0.push(v);
        }
    }

    #[test]
    fn hash_writes_the_family_s_words_only() {
        let t = FiveTuple::v4(6, [10, 0, 0, 1], 0x1234, [10, 0, 0, 2], 80);
        let mut w = Words::default();
        t.hash(&mut w);
        assert_eq!(w.0, vec![0x0a00_0001_0a00_0002, 0x1234_0050_0000_0604]);
        let t6 = FiveTuple::v6(17, a6(1), 1, a6(2), 2);
        let mut w = Words::default();
        t6.hash(&mut w);
        assert_eq!(w.0.len(), 3);
        assert_eq!(w.0[2], 0x0001_0002_0000_1106);
        // A v4 tuple and a v6 tuple with the same leading bytes differ.
        let h = pronto_hash_like();
        let mut v6_like = t;
        v6_like.family = Family::V6;
        assert_ne!(h.hash_one(t), h.hash_one(v6_like));
        assert_ne!(t, v6_like);
    }

    fn pronto_hash_like() -> std::collections::hash_map::RandomState {
        std::collections::hash_map::RandomState::new()
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(proptest::num::u8::ANY, 0..120), v6 in proptest::bool::ANY) {
            let mut b = b;
            if let Some(x) = b.first_mut() {
                *x = (*x & 0x0f) | if v6 { 0x60 } else { 0x40 };
            }
            if let Ok(f) = Flow::parse(&b) {
                proptest::prop_assert!(f.l4_offset <= b.len());
            }
            let _ = Flow::parse_ipv4_quote(&b);
            let _ = Flow::parse_ipv6_quote(&b);
        }
    }
}
