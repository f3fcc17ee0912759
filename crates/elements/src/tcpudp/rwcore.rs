//! The shared core of `IPRewriter`, `TCPRewriter` and `UDPRewriter`: flow
//! identifiers, rewrite patterns, input specifications, the mapping table
//! with its expiry rules, and the handlers the three elements share.
//!
//! A flow owns two table entries: the forward entry, keyed by the packet's
//! original flow identifier, and the reply entry, keyed by the reverse of
//! the rewritten identifier. Both live in the same table (per protocol
//! class), so a reply arriving on any input finds its mapping. Existing
//! flows are handled without allocation; new flows go into a slab and a
//! pre-reserved hash table.
//!
//! Both address families are mapped, each in its own tables. IPv4 flows
//! are keyed by [`FlowId`] (12 bytes: two addresses as numbers, two ports),
//! read where Click reads them (the ports where the transport-header
//! annotation points), in one table per protocol class, exactly as before
//! IPv6 was added. IPv6 flows are keyed by `wire::flow::FiveTuple`, read by
//! `Flow::parse` (extension headers walked; the protocol is part of the
//! key), in a second table. A slot of the flow slab holds either family;
//! an IPv6 slot's two keys live in a side array beside the slab, so that
//! the IPv4 flow record and key stay as compact as they were (36-byte keys
//! hashed for every IPv4 packet cost instructions; a second table costs
//! the IPv4 path one version test). A pattern or a mapper never translates
//! between families: a packet of the family its input's pattern lacks is a
//! mapping failure (counted in `mapping_failures`, dropped), and the same
//! goes for a mapper with no backend of the packet's family. IPv6 has no
//! header checksum; TCP and UDP checksums are updated incrementally for the
//! addresses (their pseudo-header) and ports.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};

use pronto_packet::wire::flow::{Family, FiveTuple, Flow as WireFlow, Fragment};
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::udp::UdpPacket;
use pronto_packet::wire::{be16, set_be16};
use pronto_packet::{Batch, Packet, BATCH_MAX};

use crate::{
    push_each, ActionProfile, Args, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo,
    Out, Seconds, Spec, TaskStatus,
};

/// Jiffies per second (the mapping tables keep time in milliseconds).
pub(crate) const HZ: i64 = 1000;

/// IP protocol number of DCCP (ports in the UDP positions).
const IP_PROTO_DCCP: u8 = 33;

/// A flow identifier: addresses and ports, as numbers (the wire values read
/// big-endian).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FlowId {
    /// Source address.
    pub saddr: u32,
    /// Destination address.
    pub daddr: u32,
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
}

impl Hash for FlowId {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(((self.saddr as u64) << 32) | self.daddr as u64);
        state.write_u32(((self.sport as u32) << 16) | self.dport as u32);
    }
}

impl FlowId {
    /// The identifier of an IPv4 packet (`ip`) whose transport header,
    /// TCP or UDP (ports at the same offsets), starts `l4` (at least its
    /// first 4 bytes). Click's rewriters read the ports where the
    /// transport-header annotation points, not where the IHL says, so
    /// this is not `wire::flow::Flow`. Always inlined: left to itself the
    /// compiler kept it out of line, and the rewriter's per-batch lookup
    /// loop (`lookup_batch`) was then measurably slower on d_nat.
    #[inline(always)]
    pub fn of<T: AsRef<[u8]>>(ip: &Ipv4Packet<T>, l4: &[u8]) -> FlowId {
        let u = UdpPacket::new_unchecked(l4);
        FlowId {
            saddr: ip.src_u32(),
            daddr: ip.dst_u32(),
            sport: u.src_port(),
            dport: u.dst_port(),
        }
    }

    /// The identifier of the opposite direction.
    #[inline]
    pub fn reverse(self) -> FlowId {
        FlowId {
            saddr: self.daddr,
            daddr: self.saddr,
            sport: self.dport,
            dport: self.sport,
        }
    }

    /// The 16-bit words Click's checksum deltas run over: source address,
    /// destination address, source port, destination port.
    fn words(self) -> [u16; 6] {
        [
            (self.saddr >> 16) as u16,
            self.saddr as u16,
            (self.daddr >> 16) as u16,
            self.daddr as u16,
            self.sport,
            self.dport,
        ]
    }
}

impl std::fmt::Display for FlowId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "({}, {}, {}, {})",
            ip_str(self.saddr),
            self.sport,
            ip_str(self.daddr),
            self.dport
        )
    }
}

/// An address in dotted-quad form.
pub(crate) fn ip_str(a: u32) -> String {
    let b = a.to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// An IPv6 address in RFC 5952 form.
pub(crate) fn ip6_str(a: &[u8; 16]) -> String {
    pronto_lang::args::format_ip6(a)
}

/// An IPv6 flow as the table handlers print it, like [`FlowId`]'s
/// `(saddr, sport, daddr, dport)`.
pub(crate) fn tuple_str(t: &FiveTuple) -> String {
    format!(
        "({}, {}, {}, {})",
        ip6_str(&t.src),
        t.sport,
        ip6_str(&t.dst),
        t.dport
    )
}

/// The 16-bit words an IPv6 flow's checksum delta runs over: the source
/// and destination addresses (the pseudo-header's), then the ports.
fn words6(t: &FiveTuple) -> [u16; 18] {
    let mut w = [0u16; 18];
    for i in 0..8 {
        w[i] = u16::from_be_bytes([t.src[2 * i], t.src[2 * i + 1]]);
        w[8 + i] = u16::from_be_bytes([t.dst[2 * i], t.dst[2 * i + 1]]);
    }
    w[16] = t.sport;
    w[17] = t.dport;
    w
}

/// The TCP/UDP checksum delta of rewriting IPv6 flow `from` to `to`.
fn delta6(from: &FiveTuple, to: &FiveTuple) -> u16 {
    let (a, b) = (words6(from), words6(to));
    a.iter()
        .zip(b.iter())
        .fold(0u16, |d, (o, n)| update_in_cksum(d, *o, *n))
}

/// Hashes flow identifiers with a fixed function: a multiply-rotate mix
/// finished by a 64-bit avalanche. Used where every process must agree
/// (`MaglevIPMapper`'s choice of backend), never for a table's buckets:
/// mapping tables hash with a keyed hasher ([`FlowMap`]).
#[derive(Clone, Copy, Default)]
pub struct FlowHasher(u64);

impl Hasher for FlowHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(23) ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

/// A mapping table: flow identifier to `flow index << 1 | direction`,
/// hashed with a per-table secret key (flow identifiers are chosen by the
/// packets' senders; see `pronto_hash`).
pub(crate) type FlowMap = pronto_hash::KeyedMap<FlowId, u32>;

/// The IPv6 mapping table: an IPv6 five-tuple (protocol included) to
/// `flow index << 1 | direction`, keyed-hashed like [`FlowMap`].
pub(crate) type FlowMap6 = pronto_hash::KeyedMap<FiveTuple, u32>;

/// Click's incremental checksum step (RFC 1624): `csum` after a 16-bit
/// word changes from `old` to `new`.
#[inline]
pub fn update_in_cksum(csum: u16, old: u16, new: u16) -> u16 {
    let mut sum = (!csum as u32 & 0xffff) + (!old as u32 & 0xffff) + new as u32;
    sum = (sum & 0xffff) + (sum >> 16);
    !((sum + (sum >> 16)) as u16)
}

/// Applies a flow's checksum delta in one direction.
#[inline]
pub(crate) fn apply_delta(csum: u16, reply: bool, delta: u16) -> u16 {
    if delta == 0 {
        csum
    } else {
        update_in_cksum(csum, 0, if reply { delta } else { !delta })
    }
}

// ---------------------------------------------------------------------------
// Patterns

/// A rewrite pattern, `SADDR SPORT DADDR DPORT`, with an optional range of
/// source addresses or ports to allocate from. Its addresses are IPv4 or
/// IPv6 (not both); a pattern that names no address maps both families.
/// An IPv6 source range or prefix is taken by patterns of addresses only
/// (`SADDR DADDR`, the address rewriters'); in a pattern with ports an
/// IPv6 address is a single address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    saddr: u32,
    sport: u16,
    daddr: u32,
    dport: u16,
    /// IPv6 source address (all zero: kept).
    saddr6: [u8; 16],
    /// IPv6 destination address (all zero: kept).
    daddr6: [u8; 16],
    /// The family of the pattern's addresses; `None` when it has none.
    family: Option<Family>,
    variation_top: u32,
    next_variation: u32,
    is_napt: bool,
    sequential: bool,
    same_first: bool,
}

fn parse_ip(s: &str) -> Option<u32> {
    pronto_lang::args::parse_ip4(s).ok().map(u32::from_be_bytes)
}

/// An IPv6 address, not the unspecified one (which a pattern cannot
/// rewrite to).
fn parse_ip6(s: &str) -> Option<[u8; 16]> {
    pronto_lang::args::parse_ip6(s)
        .ok()
        .filter(|a| *a != [0; 16])
}

fn parse_int(s: &str) -> Option<i64> {
    pronto_lang::args::parse_i64(s).ok()
}

/// Splits off a trailing `#` (sequential) or `?` (random) marker.
fn strip_marker<'a>(s: &'a str, sequential: &mut bool, same_first: &mut bool) -> &'a str {
    if let Some(r) = s.strip_suffix('#') {
        *sequential = true;
        *same_first = false;
        r
    } else if let Some(r) = s.strip_suffix('?') {
        *same_first = false;
        r
    } else {
        s
    }
}

fn address_variation(
    s: &str,
    addr: &mut u32,
    variation: &mut u32,
    sequential: &mut bool,
    same_first: &mut bool,
) -> bool {
    let (mut seq, mut same) = (*sequential, *same_first);
    let body = strip_marker(s, &mut seq, &mut same);
    let ok = if let Some((a, b)) = body.split_once('-') {
        match (parse_ip(a), parse_ip(b)) {
            (Some(a), Some(b)) if b >= a => {
                *addr = a;
                *variation = b - a;
                true
            }
            _ => false,
        }
    } else {
        match pronto_lang::args::parse_ip_prefix(body) {
            Ok((a, m)) => {
                let (a, m) = (u32::from_be_bytes(a), u32::from_be_bytes(m));
                let is_prefix = m.leading_ones() + m.trailing_zeros() == 32;
                if a == 0 || m == 0 || !is_prefix {
                    false
                } else {
                    if m == 0xffff_ffff {
                        *addr = a;
                        *variation = 0;
                    } else if m == 0xffff_fffe {
                        *addr = a & m;
                        *variation = 1;
                    } else {
                        // The network and broadcast addresses are left out.
                        *addr = (a & m) | 1;
                        *variation = (!m).wrapping_sub(2);
                    }
                    true
                }
            }
            Err(_) => false,
        }
    };
    if ok {
        *sequential = seq;
        *same_first = same;
    }
    ok
}

/// Most addresses an IPv6 range may hold (the variation is a `u32`, as
/// IPv4's): a prefix is /96 or longer.
const MAX_V6_RANGE: u128 = 1 << 32;

/// An IPv6 source address range, `A-B` (at most 2^32 addresses) or
/// `PREFIX/LEN` (LEN 96 to 128), with an optional `#`/`?` marker: the base
/// address and the variation (the range's size less one). A prefix leaves
/// out its first address (RFC 4291's subnet-router anycast address)
/// unless it is a /127 (RFC 6164: both addresses) or /128; IPv6 has no
/// broadcast address, so the last one is used. `Err` names what is wrong.
fn address_variation6(
    s: &str,
    addr: &mut [u8; 16],
    variation: &mut u32,
    sequential: &mut bool,
    same_first: &mut bool,
) -> Result<(), &'static str> {
    let (mut seq, mut same) = (*sequential, *same_first);
    let body = strip_marker(s, &mut seq, &mut same);
    let ip6 = |w: &str| {
        pronto_lang::args::parse_ip6(w)
            .ok()
            .map(u128::from_be_bytes)
    };
    let (base, var) = if let Some((a, b)) = body.split_once('-') {
        match (ip6(a), ip6(b)) {
            (Some(a), Some(b)) if a != 0 && b >= a && b - a < MAX_V6_RANGE => (a, b - a),
            (Some(a), Some(b)) if a != 0 && b >= a => {
                return Err("bad source address (an IPv6 range holds at most 2^32 addresses)")
            }
            _ => return Err("bad source address (an IPv6 range is ADDR1-ADDR2, ADDR1 <= ADDR2)"),
        }
    } else if let Some((a, len)) = body.split_once('/') {
        let len = parse_int(len).filter(|l| (96..=128).contains(l));
        match (ip6(a), len) {
            (Some(0), _) => return Err("bad source address"),
            (Some(a), Some(len)) => {
                let size = 1u128 << (128 - len);
                let net = a & !(size - 1);
                match len {
                    128 => (a, 0),
                    127 => (net, 1),
                    _ => (net | 1, size - 2),
                }
            }
            _ => return Err("bad source address (an IPv6 prefix is ADDR/LEN, LEN 96 to 128)"),
        }
    } else {
        return Err("bad source address");
    };
    if base == 0 {
        return Err("bad source address");
    }
    *addr = base.to_be_bytes();
    *variation = var as u32;
    *sequential = seq;
    *same_first = same;
    Ok(())
}

fn port_variation(
    s: &str,
    port: &mut u16,
    variation: &mut u32,
    sequential: &mut bool,
    same_first: &mut bool,
) -> bool {
    let (mut seq, mut same) = (*sequential, *same_first);
    let body = strip_marker(s, &mut seq, &mut same);
    let Some((a, b)) = body.split_once('-') else {
        return false;
    };
    match (parse_int(a), parse_int(b)) {
        (Some(a), Some(b)) if a >= 0 && b >= a && b < 65536 => {
            *port = a as u16;
            *variation = (b - a) as u32;
            *sequential = seq;
            *same_first = same;
            true
        }
        _ => false,
    }
}

impl Pattern {
    /// Parses a pattern's words: `SADDR SPORT DADDR DPORT`, `SADDR DADDR`,
    /// or `SADDR DADDR SPORT` (a single word names a pattern; that is
    /// resolved by the caller). Errors are Click's texts.
    pub fn parse(words: &[&str]) -> Result<Pattern, String> {
        if words.is_empty() || words.len() > 4 {
            return Err("syntax error".into());
        }
        let mut p = Pattern {
            saddr: 0,
            sport: 0,
            daddr: 0,
            dport: 0,
            saddr6: [0; 16],
            daddr6: [0; 16],
            family: None,
            variation_top: 0,
            next_variation: 0,
            is_napt: words.len() >= 3,
            sequential: false,
            same_first: true,
        };
        let mut variation = 0u32;
        let w = words[0];
        if w != "-" {
            if let Some(a) = parse_ip(w) {
                p.saddr = a;
                p.family = Some(Family::V4);
            } else if let Some(a) = parse_ip6(w) {
                p.saddr6 = a;
                p.family = Some(Family::V6);
            } else if w.contains(':') {
                if words.len() >= 3 {
                    return Err(
                        "bad source address (an IPv6 range or prefix needs a pattern \
                                of addresses only, SADDR DADDR)"
                            .into(),
                    );
                }
                address_variation6(
                    w,
                    &mut p.saddr6,
                    &mut variation,
                    &mut p.sequential,
                    &mut p.same_first,
                )?;
                p.family = Some(Family::V6);
            } else if !address_variation(
                w,
                &mut p.saddr,
                &mut variation,
                &mut p.sequential,
                &mut p.same_first,
            ) {
                return Err("bad source address".into());
            } else {
                p.family = Some(Family::V4);
            }
        }
        let mut i = 0;
        if words.len() >= 3 {
            i = if words.len() == 3 { 2 } else { 1 };
            let w = words[i];
            if w != "-" {
                match parse_int(w) {
                    Some(v) if v > 0 && v < 65536 => p.sport = v as u16,
                    _ => {
                        if !port_variation(
                            w,
                            &mut p.sport,
                            &mut variation,
                            &mut p.sequential,
                            &mut p.same_first,
                        ) {
                            return Err("bad source port".into());
                        }
                    }
                }
            }
            i = if words.len() == 3 { 0 } else { 1 };
        }
        i += 1;
        if i >= words.len() {
            return Err("syntax error".into());
        }
        let w = words[i];
        if w != "-" {
            let fam = if let Some(a) = parse_ip(w) {
                p.daddr = a;
                Family::V4
            } else if let Some(a) = parse_ip6(w) {
                p.daddr6 = a;
                Family::V6
            } else {
                return Err("bad destination address".into());
            };
            if p.family.is_some_and(|f| f != fam) {
                return Err("IPv4 and IPv6 addresses in one pattern (patterns never translate between families)".into());
            }
            p.family = Some(fam);
        }
        if words.len() == 4 {
            let w = words[3];
            if w != "-" {
                match parse_int(w) {
                    Some(v) if v > 0 && v < 65536 => p.dport = v as u16,
                    _ => return Err("bad destination port".into()),
                }
            }
        }
        p.variation_top = variation;
        Ok(p)
    }

    /// The pattern as Click prints it in the `patterns` handler.
    pub fn unparse(&self) -> String {
        let mut s = String::new();
        if !self.is_napt && self.variation_top != 0 && self.family == Some(Family::V6) {
            let top = u128::from_be_bytes(self.saddr6) + self.variation_top as u128;
            s.push_str(&format!(
                "{}-{}",
                ip6_str(&self.saddr6),
                ip6_str(&top.to_be_bytes())
            ));
        } else if !self.is_napt && self.variation_top != 0 {
            s.push_str(&format!(
                "{}-{}",
                ip_str(self.saddr),
                ip_str(self.saddr.wrapping_add(self.variation_top))
            ));
        } else if self.saddr != 0 {
            s.push_str(&ip_str(self.saddr));
        } else if self.saddr6 != [0; 16] {
            s.push_str(&ip6_str(&self.saddr6));
        } else {
            s.push('-');
        }
        if self.is_napt {
            if self.sport == 0 {
                s.push_str(" -");
            } else if self.variation_top != 0 {
                s.push_str(&format!(
                    " {}-{}",
                    self.sport,
                    self.sport as u32 + self.variation_top
                ));
            } else {
                s.push_str(&format!(" {}", self.sport));
            }
        }
        if self.daddr != 0 {
            s.push_str(&format!(" {}", ip_str(self.daddr)));
        } else if self.daddr6 != [0; 16] {
            s.push_str(&format!(" {}", ip6_str(&self.daddr6)));
        } else {
            s.push_str(" -");
        }
        if self.is_napt {
            if self.dport == 0 {
                s.push_str(" -");
            } else {
                s.push_str(&format!(" {}", self.dport));
            }
        }
        s
    }

    /// Rewrites `flow`, choosing a free source port (or address) from the
    /// pattern's range when it has one: `None` when the range is used up.
    /// `taken` says whether a reply key is in use already (the rewriter's
    /// reply table). A random choice draws from Click's generator
    /// ([`crate::random::click_random_range`]), so `RandomSeed` makes it
    /// Click's choice.
    pub fn rewrite_with(
        &mut self,
        flow: FlowId,
        taken: impl Fn(&FlowId) -> bool,
    ) -> Option<FlowId> {
        if self.family == Some(Family::V6) {
            return None;
        }
        let mut r = flow;
        if self.saddr != 0 {
            r.saddr = self.saddr;
        }
        if self.sport != 0 {
            r.sport = self.sport;
        }
        if self.daddr != 0 {
            r.daddr = self.daddr;
        }
        if self.dport != 0 {
            r.dport = self.dport;
        }
        if self.variation_top == 0 {
            return Some(r);
        }
        let top = self.variation_top;
        let mut lookup = r.reverse();
        let base = if self.is_napt {
            self.sport as u32
        } else {
            self.saddr
        };
        let mut val = (flow.sport as u32).wrapping_sub(base);
        let mut found = false;
        if self.same_first && val <= top {
            lookup.dport = flow.sport;
            found = !taken(&lookup);
        }
        if !found {
            val = if self.sequential {
                if self.next_variation > top {
                    0
                } else {
                    self.next_variation
                }
            } else {
                crate::random::click_random_range(0, top)
            };
            let mut count = 0u32;
            loop {
                if self.is_napt {
                    lookup.dport = base.wrapping_add(val) as u16;
                } else {
                    lookup.daddr = base.wrapping_add(val);
                }
                if !taken(&lookup) {
                    found = true;
                    break;
                }
                if count >= top {
                    break;
                }
                count += 1;
                val = if val == top { 0 } else { val + 1 };
            }
        }
        if !found {
            return None;
        }
        if self.is_napt {
            r.sport = lookup.dport;
        } else {
            r.saddr = lookup.daddr;
        }
        self.next_variation = val.wrapping_add(1);
        Some(r)
    }

    /// [`Pattern::rewrite6`] for a pattern of addresses with an IPv6
    /// source range: the first free address from the pattern's next one
    /// (sequential) or a random one, as IPv4 address ranges are chosen.
    fn vary_address6(
        &mut self,
        mut r: FiveTuple,
        taken: impl Fn(&FiveTuple) -> bool,
    ) -> Option<FiveTuple> {
        let top = self.variation_top;
        let base = u128::from_be_bytes(self.saddr6);
        let mut lookup = r.reverse();
        let mut val = if self.sequential {
            if self.next_variation > top {
                0
            } else {
                self.next_variation
            }
        } else {
            crate::random::click_random_range(0, top)
        };
        let mut count = 0u32;
        loop {
            lookup.dst = (base + val as u128).to_be_bytes();
            if !taken(&lookup) {
                break;
            }
            if count >= top {
                return None;
            }
            count += 1;
            val = if val == top { 0 } else { val + 1 };
        }
        r.src = lookup.dst;
        self.next_variation = val.wrapping_add(1);
        Some(r)
    }

    /// The family of the pattern's addresses (`None`: it names none, and
    /// maps both families).
    pub fn family(&self) -> Option<Family> {
        self.family
    }

    /// Rewrites the IPv6 flow `flow` as [`Pattern::rewrite_with`] does an
    /// IPv4 one (`None` for a pattern with IPv4 addresses: no translation
    /// between families). The range, if any, is of source ports.
    pub fn rewrite6(
        &mut self,
        flow: FiveTuple,
        taken: impl Fn(&FiveTuple) -> bool,
    ) -> Option<FiveTuple> {
        if self.family == Some(Family::V4) {
            return None;
        }
        let mut r = flow;
        if self.saddr6 != [0; 16] {
            r.src = self.saddr6;
        }
        if self.sport != 0 {
            r.sport = self.sport;
        }
        if self.daddr6 != [0; 16] {
            r.dst = self.daddr6;
        }
        if self.dport != 0 {
            r.dport = self.dport;
        }
        if self.variation_top == 0 {
            return Some(r);
        }
        if !self.is_napt {
            return self.vary_address6(r, taken);
        }
        let top = self.variation_top;
        let base = self.sport as u32;
        let mut lookup = r.reverse();
        let mut val = (flow.sport as u32).wrapping_sub(base);
        let mut found = false;
        if self.same_first && val <= top {
            lookup.dport = flow.sport;
            found = !taken(&lookup);
        }
        if !found {
            val = if self.sequential {
                if self.next_variation > top {
                    0
                } else {
                    self.next_variation
                }
            } else {
                crate::random::click_random_range(0, top)
            };
            let mut count = 0u32;
            loop {
                lookup.dport = base.wrapping_add(val) as u16;
                if !taken(&lookup) {
                    found = true;
                    break;
                }
                if count >= top {
                    break;
                }
                count += 1;
                val = if val == top { 0 } else { val + 1 };
            }
        }
        if !found {
            return None;
        }
        r.sport = lookup.dport;
        self.next_variation = val.wrapping_add(1);
        Some(r)
    }
}

// ---------------------------------------------------------------------------
// Input specifications

/// Locks a mutex, going on with the data if a holder panicked.
pub fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A named pattern: one object shared by every rewriter and mapper that
/// names it, so that sequential allocation goes on where the last user left
/// it (as Click shares one pattern object).
pub type SharedPattern = Arc<Mutex<Pattern>>;

/// What an `IPRewriterPatterns` element shares: its named patterns.
#[derive(Debug, Default)]
pub struct PatternTable {
    /// Names and patterns, in configuration order.
    pub patterns: Vec<(String, SharedPattern)>,
}

/// The named patterns of every `IPRewriterPatterns` configured so far
/// (names are configuration-wide).
pub fn named_patterns(ctx: &ConfigCtx<'_>) -> Vec<(String, SharedPattern)> {
    let mut v = Vec::new();
    for peer in ctx.peers.of_class("IPRewriterPatterns") {
        if let Some(t) = peer.shared.and_then(|s| s.downcast::<PatternTable>().ok()) {
            v.extend(t.patterns.iter().cloned());
        }
    }
    v
}

/// A pattern an input or a mapper uses: its own, or a named one.
#[derive(Clone, Debug)]
pub enum PatternSlot {
    /// Written out in the specification.
    Own(Pattern),
    /// Named in an `IPRewriterPatterns`.
    Named(SharedPattern),
}

impl PatternSlot {
    /// Rewrites a new flow (see [`Pattern::rewrite_with`]).
    #[inline]
    pub fn rewrite(&mut self, flow: FlowId, taken: impl Fn(&FlowId) -> bool) -> Option<FlowId> {
        match self {
            PatternSlot::Own(p) => p.rewrite_with(flow, taken),
            PatternSlot::Named(p) => lock(p).rewrite_with(flow, taken),
        }
    }

    /// Rewrites a new IPv6 flow (see [`Pattern::rewrite6`]).
    pub fn rewrite6(
        &mut self,
        flow: FiveTuple,
        taken: impl Fn(&FiveTuple) -> bool,
    ) -> Option<FiveTuple> {
        match self {
            PatternSlot::Own(p) => p.rewrite6(flow, taken),
            PatternSlot::Named(p) => lock(p).rewrite6(flow, taken),
        }
    }

    /// The family of the pattern's addresses (see [`Pattern::family`]).
    pub fn family(&self) -> Option<Family> {
        match self {
            PatternSlot::Own(p) => p.family(),
            PatternSlot::Named(p) => lock(p).family(),
        }
    }

    /// The pattern as Click prints it.
    pub fn unparse(&self) -> String {
        match self {
            PatternSlot::Own(p) => p.unparse(),
            PatternSlot::Named(p) => lock(p).unparse(),
        }
    }

    /// Parses pattern words: a single word names a pattern of `named`.
    pub fn parse(words: &[&str], named: &[(String, SharedPattern)]) -> Result<PatternSlot, String> {
        if words.len() == 1 {
            return named
                .iter()
                .find(|(n, _)| n == words[0])
                .map(|(_, p)| PatternSlot::Named(p.clone()))
                .ok_or_else(|| format!("no such pattern '{}'", words[0]));
        }
        Pattern::parse(words).map(PatternSlot::Own)
    }

    /// Parses `PATTERN FOUTPUT ROUTPUT` (Click's `parse_with_ports`).
    pub fn parse_with_ports(
        line: &str,
        named: &[(String, SharedPattern)],
    ) -> Result<(PatternSlot, usize, usize), String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() <= 2 {
            return Err("syntax error".into());
        }
        let (pw, ports) = words.split_at(words.len() - 2);
        let pat = PatternSlot::parse(pw, named)?;
        let (f, r) = parse_ports(ports)?;
        Ok((pat, f, r))
    }
}

/// The rewrite a mapper chose for a new flow, and the outputs of its two
/// directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapperChoice<K = FlowId> {
    /// The rewritten flow identifier.
    pub flow: K,
    /// Output of the flow's packets.
    pub foutput: usize,
    /// Output of its replies.
    pub routput: usize,
}

/// Chooses the rewrite of new flows for rewriter inputs that name it
/// (Click's `IPMapper`). A mapper is shared by the rewriters that use it and
/// by its own element (whose write handlers change it at run time), so it
/// keeps its state behind a lock or in atomics; rewriters only consult it
/// for packets that have no mapping yet.
pub trait IPMapper: Send + Sync {
    /// The rewrite of the new flow `flow` of IP protocol `proto`. `taken`
    /// says whether a reply key is in use in the asking rewriter's table.
    /// `None` drops the packet (a mapping failure).
    fn rewrite_flowid(
        &self,
        flow: FlowId,
        proto: u8,
        taken: &dyn Fn(&FlowId) -> bool,
    ) -> Option<MapperChoice>;

    /// The rewrite of the new IPv6 flow `flow` (its protocol in
    /// `flow.proto`), from the mapper's IPv6 (or family-less) patterns
    /// only. `None` drops the packet (a mapping failure).
    fn rewrite_flowid6(
        &self,
        flow: FiveTuple,
        taken: &dyn Fn(&FiveTuple) -> bool,
    ) -> Option<MapperChoice<FiveTuple>>;

    /// The (forward, reply) outputs of each of the mapper's patterns, so
    /// that a rewriter can check them against its outputs.
    fn outputs(&self) -> Vec<(usize, usize)>;
}

/// What a mapper element shares ([`crate::Element::shared`]).
pub struct MapperHandle(pub Arc<dyn IPMapper>);

/// A mapper class's description `spec` with what every mapper has: no
/// ports, configured before the rewriters that name it.
pub const fn mapper_spec(spec: Spec) -> Spec {
    spec.ports("0/0")
        .processing("a/a")
        .phase(crate::PHASE_INFO + 10)
        .profile(ActionProfile::NONE)
}

/// A mapper's configuration arguments, empty ones left out.
pub fn mapper_args(ctx: &ConfigCtx<'_>) -> Vec<String> {
    pronto_lang::args::split_args(ctx.config)
        .into_iter()
        .filter(|a| !a.trim().is_empty())
        .collect()
}

/// The element of a mapper class without handlers: it only hands its
/// mapper to the rewriters that name it.
pub struct MapperElement(Arc<dyn IPMapper>);

impl MapperElement {
    /// Wraps a configured mapper.
    pub fn boxed(mapper: Arc<dyn IPMapper>) -> Box<dyn Element> {
        Box::new(MapperElement(mapper))
    }
}

impl Element for MapperElement {
    fn shared(&self) -> Option<crate::Shared> {
        Some(Arc::new(MapperHandle(self.0.clone())))
    }
}

/// A mapper an input names.
#[derive(Clone)]
pub struct MapperRef {
    /// The mapper element's name.
    pub name: String,
    /// The mapper.
    pub mapper: Arc<dyn IPMapper>,
}

impl std::fmt::Debug for MapperRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MapperRef({})", self.name)
    }
}

/// Classes whose elements are mappers.
pub const MAPPER_CLASSES: [&str; 3] =
    ["RoundRobinIPMapper", "SourceIPHashMapper", "MaglevIPMapper"];

/// What a rewriter input does with a packet that has no mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RwKind {
    /// `drop` / `discard`.
    Drop,
    /// `pass OUTPUT` / `passthrough` / `nochange`: no mapping.
    NoChange,
    /// `keep FOUTPUT ROUTPUT`: mappings that change nothing.
    Keep,
    /// `pattern ... FOUTPUT ROUTPUT`: index into the core's patterns.
    Pattern(usize),
    /// `ELEMENTNAME`: a mapper element, index into the core's mappers.
    Mapper(usize),
}

/// One rewriter input's specification and counters.
#[derive(Clone, Debug)]
pub struct RwInput {
    /// The kind.
    pub kind: RwKind,
    /// Forward output.
    pub foutput: usize,
    /// Reply output.
    pub routput: usize,
    /// Live flows this input created.
    pub count: u32,
    /// Mapping failures.
    pub failures: u32,
}

fn parse_ports(words: &[&str]) -> Result<(usize, usize), String> {
    let f = match words {
        [f, _] => parse_int(f).filter(|v| *v >= 0),
        _ => None,
    }
    .ok_or_else(|| "bad forward port".to_string())?;
    let r = parse_int(words[1])
        .filter(|v| *v >= 0)
        .ok_or_else(|| "bad reply port".to_string())?;
    Ok((f as usize, r as usize))
}

/// What an element name in an input specification is.
pub enum ElementLookup {
    /// No element of that name.
    Unknown,
    /// An element that is not a mapper.
    NotMapper,
    /// A mapper.
    Mapper(MapperRef),
}

/// A parsed input specification, before its pattern or mapper is stored.
pub(crate) enum ParsedSpec {
    /// `drop`, `pass`, `keep`.
    Plain(RwInput),
    /// `pattern ...`.
    Pattern(RwInput, PatternSlot),
    /// A mapper element's name.
    Mapper(RwInput, MapperRef),
}

/// Parses one input specification; `named` holds the named patterns and
/// `element` resolves element names (mappers).
pub(crate) fn parse_spec(
    line: &str,
    noutputs: usize,
    named: &[(String, SharedPattern)],
    element: &dyn Fn(&str) -> ElementLookup,
) -> Result<ParsedSpec, String> {
    let mut words = line.split_whitespace();
    let Some(word) = words.next() else {
        return Err("empty argument".into());
    };
    let rest: Vec<&str> = words.collect();
    let mut is = RwInput {
        kind: RwKind::Drop,
        foutput: usize::MAX,
        routput: usize::MAX,
        count: 0,
        failures: 0,
    };
    match word {
        "pass" | "passthrough" | "nochange" => {
            let out = match rest.as_slice() {
                [] => 0,
                [o] => parse_int(o)
                    .ok_or_else(|| "syntax error, expected 'nochange [OUTPUT]'".to_string())?,
                _ => return Err("syntax error, expected 'nochange [OUTPUT]'".into()),
            };
            if out < 0 || out as usize >= noutputs {
                return Err("output port out of range".into());
            }
            is.kind = RwKind::NoChange;
            is.foutput = out as usize;
        }
        "keep" => {
            let (f, r) = parse_ports(&rest)?;
            if f >= noutputs || r >= noutputs {
                return Err("output port out of range".into());
            }
            is.kind = RwKind::Keep;
            is.foutput = f;
            is.routput = r;
        }
        "drop" | "discard" => {
            if !rest.is_empty() {
                return Err(format!("syntax error, expected '{word}'"));
            }
        }
        "pattern" | "xpattern" => {
            let (pat, f, r) = PatternSlot::parse_with_ports(&rest.join(" "), named)?;
            if f >= noutputs || r >= noutputs {
                return Err("output port out of range".into());
            }
            is.kind = RwKind::Pattern(usize::MAX);
            is.foutput = f;
            is.routput = r;
            return Ok(ParsedSpec::Pattern(is, pat));
        }
        _ => match element(word) {
            ElementLookup::Unknown => return Err("unknown specification".into()),
            ElementLookup::NotMapper | ElementLookup::Mapper(_) if !rest.is_empty() => {
                return Err("syntax error, expected element name".into())
            }
            ElementLookup::NotMapper => return Err("element is not an IPMapper".into()),
            ElementLookup::Mapper(m) => {
                is.kind = RwKind::Mapper(usize::MAX);
                return Ok(ParsedSpec::Mapper(is, m));
            }
        },
    }
    Ok(ParsedSpec::Plain(is))
}

/// Checks a mapper's outputs against the rewriter's (Click's
/// `notify_rewriter`).
pub(crate) fn check_mapper(m: &MapperRef, noutputs: usize) -> Result<(), String> {
    for (i, (f, r)) in m.mapper.outputs().into_iter().enumerate() {
        if f >= noutputs || r >= noutputs {
            return Err(format!(
                "output port out of range in {} pattern {i}",
                m.name
            ));
        }
    }
    Ok(())
}

/// A rewriter's input specifications, with the patterns and mappers they
/// use, and the named patterns and mapper elements that a `patternN` write
/// may name.
pub struct Inputs {
    specs: Vec<RwInput>,
    patterns: Vec<PatternSlot>,
    mappers: Vec<MapperRef>,
    named: Vec<(String, SharedPattern)>,
    known_mappers: Vec<MapperRef>,
    noutputs: usize,
}

impl std::ops::Index<usize> for Inputs {
    type Output = RwInput;
    #[inline]
    fn index(&self, i: usize) -> &RwInput {
        &self.specs[i]
    }
}

impl std::ops::IndexMut<usize> for Inputs {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut RwInput {
        &mut self.specs[i]
    }
}

impl Inputs {
    /// Parses `specs`, one specification per input of the element `ctx`
    /// configures.
    pub(crate) fn configure(ctx: &ConfigCtx<'_>, specs: &[String]) -> Result<Inputs, ConfigError> {
        if specs.len() != ctx.ninputs {
            return Err(ConfigError::new(format!(
                "need {} arguments, one per input port",
                ctx.ninputs
            )));
        }
        let named = named_patterns(ctx);
        let known_mappers: Vec<MapperRef> = MAPPER_CLASSES
            .iter()
            .flat_map(|c| ctx.peers.of_class(c))
            .filter_map(|p| {
                let h = p.shared?.downcast::<MapperHandle>().ok()?;
                Some(MapperRef {
                    name: p.name,
                    mapper: h.0.clone(),
                })
            })
            .collect();
        let element = |w: &str| match ctx.peer(w) {
            None => ElementLookup::Unknown,
            Some(p) => match p.shared.and_then(|s| s.downcast::<MapperHandle>().ok()) {
                Some(h) => ElementLookup::Mapper(MapperRef {
                    name: format!("{} :: {}", p.name, p.class),
                    mapper: h.0.clone(),
                }),
                None => ElementLookup::NotMapper,
            },
        };
        let mut inputs = Inputs {
            specs: Vec::with_capacity(specs.len()),
            patterns: Vec::new(),
            mappers: Vec::new(),
            named,
            known_mappers,
            noutputs: ctx.noutputs,
        };
        // Click checks every specification and reports each bad one.
        let mut errors = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            let parsed = match parse_spec(s, ctx.noutputs, &inputs.named, &element) {
                Ok(p) => p,
                Err(e) => {
                    errors.push(format!("input spec {i}: {e}"));
                    continue;
                }
            };
            let is = inputs.store(parsed);
            if let RwKind::Mapper(mi) = is.kind {
                if let Err(e) = check_mapper(&inputs.mappers[mi], ctx.noutputs) {
                    errors.push(format!("input spec {i}: {e}"));
                }
            }
            inputs.specs.push(is);
        }
        if !errors.is_empty() {
            return Err(ConfigError::new(errors.join("\n")));
        }
        Ok(inputs)
    }

    /// Number of inputs.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// True for a rewriter without inputs.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Input `port`'s specification.
    #[inline]
    pub fn get(&self, port: usize) -> Option<&RwInput> {
        self.specs.get(port)
    }

    /// Input `port`'s specification, to count in.
    #[inline]
    pub fn get_mut(&mut self, port: usize) -> Option<&mut RwInput> {
        self.specs.get_mut(port)
    }

    /// The rewriter's number of outputs.
    pub fn noutputs(&self) -> usize {
        self.noutputs
    }

    /// The output of a packet that gets no mapping on input `port`, or
    /// `None` to drop it.
    #[inline]
    pub fn no_mapping_output(&self, port: usize) -> Option<usize> {
        match self.specs.get(port) {
            Some(is) if is.kind == RwKind::NoChange => Some(is.foutput),
            _ => None,
        }
    }

    /// The rewrite of the new flow `flowid` (of IP protocol `proto`) that
    /// input `port`'s specification chooses, with the outputs of its two
    /// directions. `taken` says whether a reply key is in use. `Err` when
    /// there is none: `Some(output)` for a packet passed unchanged, `None`
    /// for one dropped (a mapping failure is counted first; a mapper's
    /// choice of outputs the rewriter lacks is not).
    #[inline]
    pub(crate) fn choose(
        &mut self,
        port: usize,
        flowid: FlowId,
        proto: u8,
        taken: impl Fn(&FlowId) -> bool,
    ) -> Result<(FlowId, usize, usize), Option<usize>> {
        let Some(is) = self.specs.get(port) else {
            return Err(None);
        };
        let (f, r) = (is.foutput, is.routput);
        let chosen = match is.kind {
            RwKind::Drop => return Err(None),
            RwKind::NoChange => return Err(Some(f)),
            RwKind::Keep => Some((flowid, f, r)),
            RwKind::Pattern(pi) => self.patterns[pi].rewrite(flowid, taken).map(|x| (x, f, r)),
            RwKind::Mapper(mi) => {
                match self.mappers[mi]
                    .mapper
                    .rewrite_flowid(flowid, proto, &taken)
                {
                    // A flow whose outputs do not exist is dropped.
                    Some(c) if c.foutput < self.noutputs && c.routput < self.noutputs => {
                        Some((c.flow, c.foutput, c.routput))
                    }
                    Some(_) => return Err(None),
                    None => None,
                }
            }
        };
        chosen.ok_or_else(|| {
            self.specs[port].failures += 1;
            None
        })
    }

    /// As [`Inputs::choose`], for a new IPv6 flow: `keep` maps it
    /// unchanged, a pattern or mapper of IPv4 addresses does not map it
    /// (a mapping failure).
    pub(crate) fn choose6(
        &mut self,
        port: usize,
        flow: FiveTuple,
        taken: impl Fn(&FiveTuple) -> bool,
    ) -> Result<(FiveTuple, usize, usize), Option<usize>> {
        let Some(is) = self.specs.get(port) else {
            return Err(None);
        };
        let (f, r) = (is.foutput, is.routput);
        let chosen = match is.kind {
            RwKind::Drop => return Err(None),
            RwKind::NoChange => return Err(Some(f)),
            RwKind::Keep => Some((flow, f, r)),
            RwKind::Pattern(pi) => self.patterns[pi].rewrite6(flow, taken).map(|x| (x, f, r)),
            RwKind::Mapper(mi) => match self.mappers[mi].mapper.rewrite_flowid6(flow, &taken) {
                Some(c) if c.foutput < self.noutputs && c.routput < self.noutputs => {
                    Some((c.flow, c.foutput, c.routput))
                }
                Some(_) => return Err(None),
                None => None,
            },
        };
        chosen.ok_or_else(|| {
            self.specs[port].failures += 1;
            None
        })
    }

    /// Stores a parsed specification's pattern or mapper and returns the
    /// input specification that refers to it.
    fn store(&mut self, parsed: ParsedSpec) -> RwInput {
        match parsed {
            ParsedSpec::Plain(is) => is,
            ParsedSpec::Pattern(mut is, slot) => {
                self.patterns.push(slot);
                is.kind = RwKind::Pattern(self.patterns.len() - 1);
                is
            }
            ParsedSpec::Mapper(mut is, m) => {
                self.mappers.push(m);
                is.kind = RwKind::Mapper(self.mappers.len() - 1);
                is
            }
        }
    }

    /// `patterns` (all inputs) or `patternN` (one input).
    pub fn patterns_text(&self, which: Option<usize>) -> String {
        let mut s = String::new();
        for (i, is) in self.specs.iter().enumerate() {
            if which.is_some_and(|w| w != i) {
                continue;
            }
            match is.kind {
                RwKind::Drop => s.push_str("<drop>"),
                RwKind::NoChange => s.push_str("<nochange>"),
                RwKind::Keep => s.push_str("<keep>"),
                RwKind::Pattern(pi) => s.push_str(&self.patterns[pi].unparse()),
                RwKind::Mapper(_) => s.push_str("<mapper>"),
            }
            if is.count != 0 {
                s.push_str(&format!(" [{}]", is.count));
            }
            s.push('\n');
        }
        s
    }

    /// The input a `patternN` handler names, if there is one.
    fn pattern_handler(&self, name: &str) -> Option<usize> {
        let n: usize = name.strip_prefix("pattern")?.parse().ok()?;
        (n < self.specs.len()).then_some(n)
    }

    /// Reads the handlers about the inputs: `table_size` (`nmappings`),
    /// `mapping_failures`, `patterns` and `patternN`.
    fn read(&self, name: &str) -> Option<String> {
        Some(match name {
            "table_size" | "nmappings" => self
                .specs
                .iter()
                .fold(0u32, |a, is| a.wrapping_add(is.count))
                .to_string(),
            "mapping_failures" => self
                .specs
                .iter()
                .fold(0u32, |a, is| a.wrapping_add(is.failures))
                .to_string(),
            "patterns" => self.patterns_text(None),
            _ => self.patterns_text(Some(self.pattern_handler(name)?)),
        })
    }

    /// Parses a `patternN` write: the input and its new specification.
    fn parse_write(&self, n: usize, value: &str) -> Result<ParsedSpec, HandlerError> {
        let known = &self.known_mappers;
        let element = |w: &str| match known.iter().find(|m| m.name == w) {
            Some(m) => ElementLookup::Mapper(m.clone()),
            None => ElementLookup::Unknown,
        };
        parse_spec(value, self.noutputs, &self.named, &element)
            .map_err(|e| HandlerError::BadValue(format!("input spec {n}: {e}")))
    }

    /// Makes `parsed` input `n`'s specification (the input's flows are gone
    /// already).
    fn replace(&mut self, n: usize, parsed: ParsedSpec) -> Result<(), HandlerError> {
        let is = self.store(parsed);
        if let RwKind::Mapper(mi) = is.kind {
            check_mapper(&self.mappers[mi], self.noutputs)
                .map_err(|e| HandlerError::BadValue(format!("input spec {n}: {e}")))?;
        }
        self.specs[n] = is;
        Ok(())
    }
}

/// What the two mapping tables ([`Core`] and the address and ping
/// rewriters' table) share: flows in slots that expire, guaranteed for a
/// while after each packet and best effort after that, a capacity, input
/// specifications, and the handlers about them.
pub(crate) trait MappingTable {
    /// Number of flow slots, live or not.
    fn nslots(&self) -> usize;
    /// Whether the flow in slot `i` is guaranteed, and its expiry, if it is
    /// live.
    fn expiry_of(&self, i: usize) -> Option<(bool, i64)>;
    /// Moves the flow in slot `i`, whose guarantee ran out, to best effort.
    fn to_best_effort(&mut self, i: usize);
    /// Removes the flow in slot `i` and its table entries.
    fn destroy(&mut self, i: usize);
    /// The input that made the flow in slot `i`, if it is live.
    fn input_of(&self, i: usize) -> Option<usize>;
    /// Number of live flows.
    fn nlive(&self) -> usize;
    /// The `size` handler: live flows, with those of the rewriters this one
    /// shares its capacity with.
    fn size(&self) -> usize {
        self.nlive()
    }
    /// Most live flows.
    fn capacity(&self) -> i64;
    /// Sets the capacity.
    fn set_capacity(&mut self, c: i64);
    /// A `capacity` write's value, if it is valid.
    fn parse_capacity(value: &str) -> Option<i64>;
    /// The time of the last packet or timer, in jiffies.
    fn last_now(&self) -> i64;
    /// The input specifications.
    fn inputs(&self) -> &Inputs;
    /// The input specifications, to change.
    fn inputs_mut(&mut self) -> &mut Inputs;

    /// Moves flows whose guarantee has run out to best effort.
    fn shift_best_effort(&mut self, now: i64) {
        for i in 0..self.nslots() {
            if let Some((true, e)) = self.expiry_of(i) {
                if now >= e {
                    self.to_best_effort(i);
                }
            }
        }
    }

    /// The live flow that expires first among guaranteed or best-effort
    /// ones (the lowest slot among equals).
    fn first_to_expire(&self, guaranteed: bool) -> Option<usize> {
        let mut first: Option<(i64, usize)> = None;
        for i in 0..self.nslots() {
            match self.expiry_of(i) {
                Some((g, e)) if g == guaranteed && first.is_none_or(|(f, _)| e < f) => {
                    first = Some((e, i))
                }
                _ => {}
            }
        }
        first.map(|(_, i)| i)
    }

    /// Makes room for the new flow `idx`; true if `idx` itself was removed.
    fn shrink_for_new_flow(&mut self, idx: usize, now: i64) -> bool {
        self.shift_best_effort(now);
        let dead = self.first_to_expire(false).unwrap_or(idx);
        self.destroy(dead);
        dead == idx
    }

    /// Removes expired flows, then flows beyond the capacity (all flows
    /// when `clear_all`).
    fn shrink(&mut self, clear_all: bool, now: i64) {
        self.shift_best_effort(now);
        for i in 0..self.nslots() {
            if let Some((false, e)) = self.expiry_of(i) {
                if now >= e {
                    self.destroy(i);
                }
            }
        }
        let cap = if clear_all { 0 } else { self.capacity() };
        while self.nlive() as i64 > cap {
            match self
                .first_to_expire(false)
                .or_else(|| self.first_to_expire(true))
            {
                Some(i) => self.destroy(i),
                None => break,
            }
        }
    }

    /// Reads a handler every rewriter has: `table_size` (`nmappings`),
    /// `mapping_failures`, `patterns`, `patternN`, `size`, `capacity`.
    fn read_common(&self, name: &str) -> Option<String> {
        match name {
            "size" => Some(self.size().to_string()),
            "capacity" => Some(self.capacity().to_string()),
            _ => self.inputs().read(name),
        }
    }

    /// Reports what every rewriter counts (see [`crate::Counters`]): live
    /// flows (`nmappings`, `size`) and the new flows no mapping was found
    /// for (`mapping_failures`).
    fn counters_common(&self, c: &mut crate::Counters) {
        let specs = &self.inputs().specs;
        c.count(
            "nmappings",
            specs.iter().map(|is| u64::from(is.count)).sum(),
        );
        c.count(
            "mapping_failures",
            specs.iter().map(|is| u64::from(is.failures)).sum(),
        );
        c.count("size", self.size() as u64);
    }

    /// Writes a handler every rewriter has (`capacity`, `clear`,
    /// `patternN`); `None` if `name` is not one.
    fn write_common(&mut self, name: &str, value: &str) -> Option<Result<(), HandlerError>> {
        let now = self.last_now();
        match name {
            "capacity" => Some(match Self::parse_capacity(value) {
                Some(c) => {
                    self.set_capacity(c);
                    self.shrink(false, now);
                    Ok(())
                }
                None => Err(HandlerError::BadValue("CAPACITY: expected integer".into())),
            }),
            "clear" => {
                self.shrink(true, now);
                Some(Ok(()))
            }
            _ => {
                let n = self.inputs().pattern_handler(name)?;
                Some(self.inputs().parse_write(n, value).and_then(|parsed| {
                    for i in 0..self.nslots() {
                        if self.input_of(i) == Some(n) {
                            self.destroy(i);
                        }
                    }
                    self.inputs_mut().replace(n, parsed)
                }))
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Sequence-number deltas

/// One sequence-number delta transition of a TCP flow (newest first in a
/// flow's list): from `trigger[d]` on, direction `d`'s sequence numbers
/// move by `delta[d]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqDelta {
    delta: [i32; 2],
    trigger: [u32; 2],
    has: [bool; 2],
}

#[inline]
fn seq_geq(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) >= 0
}

/// Records that direction `dir`'s sequence numbers from `trigger` on move by
/// `d` more (Click's `update_seqno_delta`); false if `trigger` is behind
/// the newest transition.
fn update_seqno_delta(list: &mut Vec<SeqDelta>, dir: usize, trigger: u32, d: i32) -> bool {
    let o = 1 - dir;
    if let Some(h) = list.first() {
        if h.has[dir] && !seq_geq(trigger, h.trigger[dir]) {
            return false;
        }
    }
    let need_new = match list.first() {
        None => true,
        Some(h) if h.has[dir] => trigger != h.trigger[dir],
        Some(h) => h.delta[dir] != 0,
    };
    if need_new {
        list.insert(0, SeqDelta::default());
        // The other direction's transitions move one step toward the head.
        let mut cur = 0;
        while cur + 1 < list.len() {
            let x = list[cur + 1];
            list[cur].delta[o] = x.delta[o];
            list[cur].trigger[o] = x.trigger[o];
            if x.has[o] {
                list[cur].has[o] = true;
                cur += 1;
            } else {
                list[cur].has[o] = false;
                break;
            }
        }
    }
    let next_delta = list.get(1).map_or(0, |n| n.delta[dir]);
    list[0].trigger[dir] = trigger;
    list[0].delta[dir] = next_delta.wrapping_add(d);
    list[0].has[dir] = true;
    // Forget transitions a gigabyte behind this one.
    let mut k = 1;
    while k < list.len()
        && list[k].has[dir]
        && !seq_geq(trigger, list[k].trigger[dir].wrapping_add(1 << 30))
    {
        k += 1;
    }
    if k < list.len() && list[k].has[dir] {
        list[k].has[dir] = false;
        if !list[k].has[0] && !list[k].has[1] {
            list.truncate(k + 1);
        }
    }
    true
}

fn new_seq(list: &[SeqDelta], dir: usize, seq: u32) -> u32 {
    let mut i = 0;
    while i < list.len() && list[i].has[dir] && !seq_geq(seq, list[i].trigger[dir]) {
        i += 1;
    }
    match list.get(i) {
        Some(t) => seq.wrapping_add(t.delta[dir] as u32),
        None => seq,
    }
}

fn new_ack(list: &[SeqDelta], dir: usize, ack: u32) -> u32 {
    let o = 1 - dir;
    let mut i = 0;
    while i < list.len()
        && list[i].has[o]
        && !seq_geq(
            ack.wrapping_sub(list[i].delta[o] as u32),
            list[i].trigger[o],
        )
    {
        i += 1;
    }
    match list.get(i) {
        Some(t) => ack.wrapping_sub(t.delta[o] as u32),
        None => ack,
    }
}

/// Replaces the 32-bit word at `off` of `l4` (a TCP header) and updates the
/// TCP checksum the way Click does (low half-word first).
fn set_seq_word(l4: &mut [u8], off: usize, new: u32) {
    let old = u32::from_be_bytes([l4[off], l4[off + 1], l4[off + 2], l4[off + 3]]);
    let mut c = be16(l4, 16);
    c = update_in_cksum(c, old as u16, new as u16);
    c = update_in_cksum(c, (old >> 16) as u16, (new >> 16) as u16);
    set_be16(l4, 16, c);
    l4[off..off + 4].copy_from_slice(&new.to_be_bytes());
}

/// Rewrites the SACK blocks of a TCP header's options along `list`.
fn apply_sack(list: &[SeqDelta], dir: usize, l4: &mut [u8]) {
    let hlen = ((l4[12] >> 4) as usize) * 4;
    let end = hlen.min(l4.len());
    let begin = 20;
    let mut csum_delta: u32 = 0;
    let word = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]) as u32;
    let mut opt = begin;
    while opt < end {
        match l4[opt] {
            0 => break,
            1 => opt += 1,
            5 => {
                if opt + 1 >= end {
                    break;
                }
                let olen = l4[opt + 1] as usize;
                if opt + olen > end || olen % 8 != 2 {
                    break;
                }
                let end_sack = opt + olen;
                let cbegin = begin + ((opt + 2 - begin) & !1);
                let mut c = cbegin;
                while c < end_sack {
                    if c + 1 < l4.len() {
                        csum_delta += !word(l4, c) & 0xffff;
                    }
                    c += 2;
                }
                let mut b = opt + 2;
                while b + 8 <= end_sack {
                    for k in [b, b + 4] {
                        let v = u32::from_be_bytes([l4[k], l4[k + 1], l4[k + 2], l4[k + 3]]);
                        l4[k..k + 4].copy_from_slice(&new_ack(list, dir, v).to_be_bytes());
                    }
                    b += 8;
                }
                let mut c = cbegin;
                while c < end_sack {
                    if c + 1 < l4.len() {
                        csum_delta += word(l4, c);
                    }
                    c += 2;
                }
                opt = end_sack;
            }
            _ => {
                if opt + 1 >= end || l4[opt + 1] < 2 {
                    break;
                }
                opt += l4[opt + 1] as usize;
            }
        }
    }
    if csum_delta != 0 {
        let th_sum = word(l4, 16);
        let mut sum = (!th_sum & 0xffff).wrapping_add(csum_delta);
        sum = (sum & 0xffff) + (sum >> 16);
        let v = !(sum.wrapping_add(sum >> 16)) as u16;
        l4[16..18].copy_from_slice(&v.to_le_bytes());
    }
}

/// Applies a TCP flow's sequence-number deltas to a packet in direction
/// `dir` (Click's `TCPFlow::apply`, after the addresses).
fn apply_seq(list: &mut Vec<SeqDelta>, dir: usize, l4: &mut [u8]) {
    let o = 1 - dir;
    let seq = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]);
    if let Some(h) = list.first_mut() {
        if h.has[dir] && seq_geq(seq, h.trigger[dir].wrapping_add(1 << 30)) {
            h.has[dir] = false;
            if !h.has[0] && !h.has[1] {
                list.truncate(1);
            }
        }
    }
    let Some(&h) = list.first() else { return };
    if h.delta[dir] != 0 || h.has[dir] {
        let n = new_seq(list, dir, seq);
        set_seq_word(l4, 4, n);
    }
    if h.delta[o] != 0 || h.has[o] {
        let ack = u32::from_be_bytes([l4[8], l4[9], l4[10], l4[11]]);
        let n = new_ack(list, dir, ack);
        set_seq_word(l4, 8, n);
        let off = l4[12] >> 4;
        let ts_only = off == 8 && l4.len() >= 24 && l4[20..24] == [1, 1, 8, 10];
        if off > 8 || (off == 8 && !ts_only) {
            apply_sack(list, dir, l4);
        }
    }
}

// ---------------------------------------------------------------------------
// Flows

/// Which rewriter the core serves: it decides which protocols have
/// mappings, which tables they use, and how packets are rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `IPRewriter`: TCP and UDP, in separate tables.
    Ip,
    /// `TCPRewriter`: TCP only.
    Tcp,
    /// `UDPRewriter`: TCP, UDP and DCCP in one table, rewritten UDP-style.
    Udp,
}

#[derive(Clone, Copy, Debug)]
struct Flow {
    /// Entry keys: forward (original id) and reply (reverse of rewritten).
    keys: [FlowId; 2],
    outputs: [u32; 2],
    ip_delta: u16,
    l4_delta: u16,
    /// Expiry in jiffies (ms).
    expiry: i64,
    guaranteed: bool,
    /// Rewritten TCP-style (sequence/state tracking) or UDP-style.
    tcp_style: bool,
    /// Table index (0 or 1), plus [`V6_FLOW`] for an IPv6 flow (whose keys
    /// are in the core's `keys6`, `keys` unused): a bit here rather than a
    /// field of its own keeps the record at 56 bytes, as it was before
    /// IPv6.
    map: u8,
    /// The IP protocol the flow was made for (0: any), which lookups on
    /// behalf of other elements must match.
    proto: u8,
    tflags: u8,
    reply_anno: u8,
    input: u32,
    live: bool,
    /// Has sequence-number deltas (in the core's side table).
    has_dt: bool,
}

/// The bit of [`Flow::map`] that marks an IPv6 flow.
const V6_FLOW: u8 = 0x80;

impl Flow {
    /// The index of the table (TCP or UDP class) the flow's entries are in.
    #[inline(always)]
    fn table(&self) -> usize {
        (self.map & !V6_FLOW) as usize
    }

    /// True for an IPv6 flow.
    #[inline(always)]
    fn is_v6(&self) -> bool {
        self.map & V6_FLOW != 0
    }
}

const S_FORWARD_DONE: u8 = 1;
const S_BOTH_DONE: u8 = 3;
const S_FORWARD_DATA: u8 = 4;
const S_BOTH_DATA: u8 = 12;

/// A flow's table entry, as [`Core::get_entry`] returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The flow's slot.
    pub index: u32,
    /// The reply direction's entry.
    pub reply: bool,
    /// What the entry's packets are rewritten to.
    pub rewritten: FlowId,
    /// The rewriter output the entry's packets go to.
    pub output: usize,
}

/// Timeouts, in jiffies.
#[derive(Clone, Copy, Debug)]
struct Timeouts {
    tcp_nodata: i64,
    tcp_data: i64,
    tcp_done: i64,
    tcp_guarantee: i64,
    udp: i64,
    udp_streaming: i64,
    udp_guarantee: i64,
}

/// The mapping table and everything around it.
pub struct Core {
    flavor: Flavor,
    /// Input specifications, one per input.
    pub inputs: Inputs,
    /// Sequence-number delta transitions of flows that have them.
    seq: pronto_hash::KeyedMap<u32, Vec<SeqDelta>>,
    flows: Vec<Flow>,
    free: Vec<u32>,
    maps: [FlowMap; 2],
    /// The IPv6 flows' entries (all protocols: the key holds it).
    map6: FlowMap6,
    /// The keys of the IPv6 flows, by slot (forward, reply); only the
    /// slots of IPv6 flows mean anything.
    keys6: Vec<[FiveTuple; 2]>,
    live: usize,
    capacity: i64,
    to: Timeouts,
    reap_interval: i64,
    /// When the reaping timer fires next (ms), once it is started.
    next_reap: Option<i64>,
    last_now: i64,
    dst_anno: bool,
    reply_anno: Option<usize>,
    /// Changes whenever a flow is made or removed, so that lookups done
    /// ahead for a batch ([`Core::lookup_batch`]) are known to be stale.
    generation: u32,
    /// Packets dropped (no mapping and a dropping input, non-TCP/UDP,
    /// fragments, bad headers).
    pub drops: u64,
    /// The capacity this rewriter shares with others (`MAPPING_CAPACITY
    /// OTHER`), and its place among the group's members.
    group: Option<(Arc<CapacityGroup>, usize)>,
    /// While configuring: the rewriter whose capacity to share, joined
    /// once this core is in its cell ([`CoreCell::new`]).
    join: Option<Arc<Mutex<Core>>>,
}

/// Rewriters that share one mapping capacity, as Click's `MAPPING_CAPACITY
/// OTHER` makes them: the flows of all members count against it, and a
/// member that needs room evicts the group's first best-effort flow to
/// expire, whichever member holds it (admission control when there is
/// none).
pub struct CapacityGroup {
    capacity: std::sync::atomic::AtomicI64,
    /// The members' cores; weak, so that the group keeps none alive.
    members: Mutex<Vec<std::sync::Weak<Mutex<Core>>>>,
}

impl CapacityGroup {
    /// The other members' cores (not member `me`), as they can be had now.
    fn others(&self, me: usize) -> Vec<Arc<Mutex<Core>>> {
        lock(&self.members)
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != me)
            .filter_map(|(_, w)| w.upgrade())
            .collect()
    }
}

/// A lookup done ahead that found no entry (see [`Core::lookup_batch`]).
pub const NO_ENTRY: u32 = u32::MAX;

/// Keywords every rewriter accepts.
pub const BASE_KEYWORDS: [&str; 8] = [
    "CAPACITY",
    "MAPPING_CAPACITY",
    "TIMEOUT",
    "GUARANTEE",
    "REAP_INTERVAL",
    "REAP_TIME",
    "DST_ANNO",
    "REPLY_ANNO",
];

/// The rewriter `MAPPING_CAPACITY NAME` names, whose capacity to share:
/// an `IPRewriter`, `TCPRewriter` or `UDPRewriter` (one declared later is
/// waited for).
fn capacity_peer(ctx: &ConfigCtx<'_>, name: &str) -> Result<Arc<Mutex<Core>>, ConfigError> {
    let name = pronto_lang::args::unquote(name);
    let Some(peer) = ctx.peer(&name) else {
        return Err(if ctx.declared(&name) {
            ConfigError::later(format!(
                "MAPPING_CAPACITY: `{name}` shares this rewriter's capacity in turn (a \
                 cycle): give one of them a number"
            ))
        } else {
            ConfigError::new(format!(
                "MAPPING_CAPACITY: `{name}` is neither a number nor the name of a rewriter \
                 (IPRewriter, TCPRewriter, UDPRewriter) whose capacity to share"
            ))
        });
    };
    peer.shared
        .and_then(|s| s.downcast::<Mutex<Core>>().ok())
        .ok_or_else(|| {
            ConfigError::new(format!(
                "MAPPING_CAPACITY: `{}` is a {}; pronto shares the capacity of an IPRewriter, \
                 TCPRewriter or UDPRewriter only",
                peer.name, peer.class
            ))
        })
}

/// A time keyword's value in jiffies (whole seconds, rounded).
pub(crate) fn secs(s: Option<Seconds>) -> Option<i64> {
    s.map(|s| s.0.round().max(0.0) as i64 * HZ)
}

pub(crate) fn parse_anno(s: &str) -> Result<usize, ConfigError> {
    let t = pronto_lang::args::unquote(s);
    let off = match t.as_str() {
        "PAINT" => Some(pronto_packet::PAINT_ANNO_OFFSET),
        "ICMP_PARAMPROB" => Some(pronto_packet::ICMP_PARAMPROB_ANNO_OFFSET),
        "FIX_IP_SRC" => Some(pronto_packet::FIX_IP_SRC_ANNO_OFFSET),
        _ => parse_int(&t)
            .filter(|v| *v >= 0 && (*v as usize) < pronto_packet::ANNO_SIZE)
            .map(|v| v as usize),
    };
    off.ok_or_else(|| ConfigError::new(format!("REPLY_ANNO: expected annotation, found `{s}`")))
}

impl Core {
    /// Reads the keywords of `flavor` and the input specifications.
    pub fn configure(ctx: &ConfigCtx<'_>, flavor: Flavor) -> Result<Core, ConfigError> {
        let mut a: Args = ctx.args();
        let mut to = Timeouts {
            tcp_nodata: 300 * HZ,
            tcp_data: 86400 * HZ,
            tcp_done: 240 * HZ,
            tcp_guarantee: 5 * HZ,
            udp: 300 * HZ,
            udp_streaming: 300 * HZ,
            udp_guarantee: 5 * HZ,
        };
        let mut udp_streaming = None;
        match flavor {
            Flavor::Ip | Flavor::Tcp => {
                if flavor == Flavor::Ip {
                    if let Some(v) = secs(a.read("UDP_TIMEOUT")?) {
                        to.udp = v;
                    }
                    udp_streaming = secs(a.read("UDP_STREAMING_TIMEOUT")?);
                    if let Some(v) = secs(a.read("UDP_GUARANTEE")?) {
                        to.udp_guarantee = v;
                    }
                }
                if let Some(v) = secs(a.read("TCP_NODATA_TIMEOUT")?) {
                    to.tcp_nodata = v;
                }
                if let Some(v) = secs(a.read("TCP_GUARANTEE")?) {
                    to.tcp_guarantee = v;
                }
                if let Some(v) = secs(a.read("TIMEOUT")?) {
                    to.tcp_data = v;
                }
                if let Some(v) = secs(a.read("TCP_TIMEOUT")?) {
                    to.tcp_data = v;
                }
                if let Some(v) = secs(a.read("TCP_DONE_TIMEOUT")?) {
                    to.tcp_done = v;
                }
                if let Some(v) = secs(a.read("GUARANTEE")?) {
                    to.tcp_guarantee = v;
                }
            }
            Flavor::Udp => {
                if let Some(v) = secs(a.read("UDP_TIMEOUT")?) {
                    to.udp = v;
                }
                if let Some(v) = secs(a.read("TIMEOUT")?) {
                    to.udp = v;
                }
                udp_streaming = secs(a.read("UDP_STREAMING_TIMEOUT")?);
                if let Some(v) = secs(a.read("STREAMING_TIMEOUT")?) {
                    udp_streaming = Some(v);
                }
                if let Some(v) = secs(a.read("UDP_GUARANTEE")?) {
                    to.udp_guarantee = v;
                }
                if let Some(v) = secs(a.read("GUARANTEE")?) {
                    to.udp_guarantee = v;
                }
            }
        }
        to.udp_streaming = udp_streaming.unwrap_or(to.udp);
        let dst_anno = a.read_or("DST_ANNO", true)?;
        let reply_anno = match a.read::<String>("REPLY_ANNO")? {
            Some(s) => Some(parse_anno(&s)?),
            None => None,
        };
        let mut cap_word = a.read::<String>("CAPACITY")?;
        if let Some(w) = a.read::<String>("MAPPING_CAPACITY")? {
            cap_word = Some(w);
        }
        let mut reap = secs(a.read("REAP_TIME")?).unwrap_or(900 * HZ);
        if let Some(v) = secs(a.read("REAP_INTERVAL")?) {
            reap = v;
        }
        let mut join = None;
        let capacity = match cap_word {
            None => 0x7fff_ffff,
            Some(w) => match parse_int(&w) {
                Some(v) if (0..=0x7fff_ffff).contains(&v) => v,
                Some(_) => return Err(ConfigError::new("bad MAPPING_CAPACITY")),
                // Another rewriter's name: share its capacity.
                None => {
                    join = Some(capacity_peer(ctx, &w)?);
                    0x7fff_ffff
                }
            },
        };
        let specs = a.rest();
        a.finish()?;
        let inputs = Inputs::configure(ctx, &specs)?;
        let reserve = (capacity as usize).min(4096);
        Ok(Core {
            flavor,
            inputs,
            seq: pronto_hash::map(),
            flows: Vec::with_capacity(reserve),
            free: Vec::with_capacity(reserve),
            maps: [
                pronto_hash::map_with_capacity(2 * reserve),
                pronto_hash::map_with_capacity(if flavor == Flavor::Ip { 2 * reserve } else { 0 }),
            ],
            map6: pronto_hash::map(),
            keys6: Vec::new(),
            live: 0,
            capacity,
            to,
            reap_interval: reap,
            next_reap: None,
            last_now: 0,
            dst_anno,
            reply_anno,
            generation: 0,
            drops: 0,
            group: None,
            join,
        })
    }

    /// Flows of this rewriter and of those it shares its capacity with.
    fn total_live(&self) -> usize {
        match &self.group {
            None => self.live,
            Some((g, me)) => {
                self.live
                    + g.others(*me)
                        .iter()
                        .filter_map(|c| c.try_lock().ok().map(|c| c.live))
                        .sum::<usize>()
            }
        }
    }

    /// Whether the flows (of the group) are more than the capacity.
    #[inline]
    fn over_capacity(&self) -> bool {
        match &self.group {
            None => self.live as i64 > self.capacity,
            Some(_) => self.total_live() as i64 > self.capacity(),
        }
    }

    /// Makes room for the new flow `idx` in a shared capacity: the
    /// group's first best-effort flow to expire goes, or, with none, `idx`
    /// itself (true then).
    fn make_room_shared(&mut self, idx: usize, now: i64) -> bool {
        let Some((g, me)) = self.group.clone() else {
            return self.shrink_for_new_flow(idx, now);
        };
        self.shift_best_effort(now);
        let others = g.others(me);
        let mut best: Option<(i64, Option<usize>, usize)> = self
            .first_to_expire(false)
            .and_then(|i| self.expiry_of(i).map(|(_, e)| (e, None, i)));
        for (k, c) in others.iter().enumerate() {
            let Ok(mut c) = c.try_lock() else { continue };
            c.shift_best_effort(now);
            if let Some(i) = c.first_to_expire(false) {
                if let Some((_, e)) = c.expiry_of(i) {
                    if best.is_none_or(|(b, _, _)| e < b) {
                        best = Some((e, Some(k), i));
                    }
                }
            }
        }
        match best {
            Some((_, None, i)) => {
                self.destroy(i);
                false
            }
            Some((_, Some(k), i)) => {
                if let Ok(mut c) = others[k].try_lock() {
                    c.destroy(i);
                }
                false
            }
            None => {
                self.destroy(idx);
                true
            }
        }
    }

    /// The table a protocol's flows live in, or `None` if the flavor does
    /// not map that protocol.
    #[inline]
    fn map_index(&self, proto: u8) -> Option<usize> {
        match (self.flavor, proto) {
            (Flavor::Ip, pronto_packet::wire::IP_PROTO_TCP) => Some(0),
            (Flavor::Ip, pronto_packet::wire::IP_PROTO_UDP) => Some(1),
            (Flavor::Tcp, pronto_packet::wire::IP_PROTO_TCP) => Some(0),
            (
                Flavor::Udp,
                pronto_packet::wire::IP_PROTO_TCP
                | pronto_packet::wire::IP_PROTO_UDP
                | IP_PROTO_DCCP,
            ) => Some(0),
            _ => None,
        }
    }

    fn guarantee(&self, f: &Flow) -> i64 {
        if f.tcp_style {
            self.to.tcp_guarantee
        } else {
            self.to.udp_guarantee
        }
    }

    fn flow_timeout(&self, f: &Flow) -> i64 {
        if f.tcp_style {
            if f.tflags & S_BOTH_DONE == S_BOTH_DONE {
                self.to.tcp_done
            } else if f.tflags & S_BOTH_DATA == S_BOTH_DATA {
                self.to.tcp_data
            } else {
                self.to.tcp_nodata
            }
        } else if f.tflags > 6 {
            self.to.udp_streaming
        } else {
            self.to.udp
        }
    }

    fn best_effort_expiry(&self, f: &Flow) -> i64 {
        f.expiry + self.flow_timeout(f) - self.guarantee(f)
    }

    /// Number of live flows.
    pub fn size(&self) -> usize {
        self.live
    }

    /// The rewriter's number of outputs.
    pub fn noutputs(&self) -> usize {
        self.inputs.noutputs()
    }

    /// Takes `old`'s flows (hot-swap), when `old` is the same kind of
    /// rewriter with as many inputs and this one has no flows yet; flows
    /// that leave by an output this rewriter lacks are removed. Returns
    /// the flows kept, or `None` when nothing was taken.
    pub fn take_flows(&mut self, old: &mut Core) -> Option<usize> {
        if old.flavor != self.flavor
            || old.inputs.specs.len() != self.inputs.specs.len()
            || self.live != 0
            || old.live == 0
        {
            return None;
        }
        std::mem::swap(&mut self.seq, &mut old.seq);
        std::mem::swap(&mut self.flows, &mut old.flows);
        std::mem::swap(&mut self.free, &mut old.free);
        std::mem::swap(&mut self.maps, &mut old.maps);
        std::mem::swap(&mut self.map6, &mut old.map6);
        std::mem::swap(&mut self.keys6, &mut old.keys6);
        std::mem::swap(&mut self.live, &mut old.live);
        self.generation = self.generation.wrapping_add(1);
        old.generation = old.generation.wrapping_add(1);
        self.last_now = self.last_now.max(old.last_now);
        for is in self
            .inputs
            .specs
            .iter_mut()
            .chain(old.inputs.specs.iter_mut())
        {
            is.count = 0;
        }
        let nout = self.noutputs() as u32;
        for i in 0..self.flows.len() {
            let f = self.flows[i];
            if !f.live {
                continue;
            }
            if f.outputs.iter().any(|&o| o >= nout) {
                // `destroy` decrements the input's count: count it first.
                if let Some(is) = self.inputs.specs.get_mut(f.input as usize) {
                    is.count = is.count.wrapping_add(1);
                }
                self.destroy(i);
            } else if let Some(is) = self.inputs.specs.get_mut(f.input as usize) {
                is.count = is.count.wrapping_add(1);
            }
        }
        Some(self.live)
    }

    /// The table [`Core::get_entry`] searches for protocol `proto` (0: any
    /// protocol, as other elements may ask): the rewriter's own table for
    /// that protocol, or the single table of `TCPRewriter` and
    /// `UDPRewriter`, whose flows then must match `proto` themselves.
    #[inline]
    fn entry_map_index(&self, proto: u8) -> Option<usize> {
        match self.flavor {
            Flavor::Tcp | Flavor::Udp => Some(0),
            Flavor::Ip => self.map_index(proto),
        }
    }

    /// The reaping timer (Click's gc timer): call from the element's task.
    /// Removes expired flows every `REAP_INTERVAL` and says when to run
    /// again.
    pub fn run_timer(&mut self, now_ns: i64) -> TaskStatus {
        if self.reap_interval <= 0 {
            return TaskStatus::Done;
        }
        let now = now_ns.div_euclid(1_000_000);
        match self.next_reap {
            None => self.next_reap = Some(now + self.reap_interval),
            Some(t) if now >= t => {
                self.last_now = self.last_now.max(now);
                self.shrink(false, now);
                self.next_reap = Some(now + self.reap_interval);
            }
            Some(_) => {}
        }
        let next = self.next_reap.unwrap_or(now + self.reap_interval);
        TaskStatus::SleepUntil(next.saturating_mul(1_000_000))
    }

    /// The entry of flow `flowid` of IP protocol `proto` (Click's
    /// `get_entry`): the existing one, or, if there is none and `input` is
    /// given, one made the way a packet arriving on `input` would make it.
    /// A flow made for another protocol does not match (`proto` 0 matches
    /// any). `None` if there is no entry and none could be made.
    pub fn get_entry(
        &mut self,
        proto: u8,
        flowid: FlowId,
        input: Option<usize>,
        now_ns: i64,
    ) -> Option<Entry> {
        let mi = self.entry_map_index(proto)?;
        let e = match self.maps[mi].get(&flowid) {
            Some(&e) => {
                let fp = self.flows[(e >> 1) as usize].proto;
                if proto != 0 && fp != 0 && fp != proto {
                    return None;
                }
                e
            }
            None => {
                let port = input?;
                let now = now_ns.div_euclid(1_000_000);
                self.last_now = self.last_now.max(now);
                self.new_flow(port, flowid, mi, proto, now)?
            }
        };
        let f = &self.flows[(e >> 1) as usize];
        let reply = e & 1 == 1;
        Some(Entry {
            index: e >> 1,
            reply,
            rewritten: f.keys[!reply as usize].reverse(),
            output: f.outputs[reply as usize] as usize,
        })
    }

    /// Adds a sequence-number delta to the direction of `entry`'s flow:
    /// from sequence number `trigger` on, that direction's data moves by
    /// `delta` bytes (Click's `TCPFlow::update_seqno_delta`). False if the
    /// flow is not rewritten TCP-style or `trigger` is behind the last one.
    pub fn update_seqno_delta(&mut self, entry: &Entry, trigger: u32, delta: i32) -> bool {
        let idx = entry.index as usize;
        match self.flows.get(idx) {
            Some(f) if f.live && f.tcp_style => {}
            _ => return false,
        }
        let list = self.seq.entry(entry.index).or_default();
        let ok = update_seqno_delta(list, entry.reply as usize, trigger, delta);
        self.flows[idx].has_dt = !list.is_empty();
        ok
    }

    /// The reply annotation byte kept with `entry`'s flow.
    pub fn reply_anno_of(&self, entry: &Entry) -> u8 {
        self.flows
            .get(entry.index as usize)
            .map_or(0, |f| f.reply_anno)
    }

    /// The IPv6 entry keyed `key`, a lookup only (for `ICMPRewriter`):
    /// whether it is the flow's reply entry, the flow it rewrites to, its
    /// output, and the flow's saved reply annotation byte.
    pub(crate) fn entry6(&self, key: &FiveTuple) -> Option<(bool, FiveTuple, usize, u8)> {
        let &e = self.map6.get(key)?;
        let idx = (e >> 1) as usize;
        let reply = e & 1 == 1;
        let f = self.flows.get(idx)?;
        let keys = self.keys6.get(idx)?;
        Some((
            reply,
            keys[!reply as usize].reverse(),
            f.outputs[reply as usize] as usize,
            f.reply_anno,
        ))
    }

    /// Sets the reply annotation byte of `entry`'s flow.
    pub fn set_reply_anno_of(&mut self, entry: &Entry, v: u8) {
        if let Some(f) = self.flows.get_mut(entry.index as usize) {
            f.reply_anno = v;
        }
    }

    /// Processes one packet that arrived on `port`; returns the output.
    pub fn process(&mut self, port: usize, p: &mut Packet, now_ns: i64) -> Option<usize> {
        self.process_hinted(port, p, now_ns, None)
    }

    /// The table and flow identifier a packet is looked up with, or `None`
    /// when it gets no lookup (not TCP/UDP for this rewriter, a later
    /// fragment, too short, no IP header), for an IPv4 packet.
    #[inline]
    fn flow_key(&self, p: &Packet) -> Option<(usize, FlowId)> {
        let nh = usize::try_from(p.network_header_offset()?).ok()?;
        let data = p.data();
        if data.len() < nh + 20 {
            return None;
        }
        // No version test here: an IPv6 packet read as IPv4 looks up
        // garbage, which `process_inner` ignores (it tests the version
        // before it trusts a lookup done ahead), and IPv4 packets are
        // spared the test.
        let ip = Ipv4Packet::new_unchecked(&data[nh..]);
        let th = match p.transport_header_offset() {
            Some(t) if t >= 0 => t as usize,
            _ => nh + ip.header_len(),
        };
        if ip.is_later_fragment() || data.len() < th + 8 {
            return None;
        }
        let mi = self.map_index(ip.protocol())?;
        Some((mi, FlowId::of(&ip, &data[th..])))
    }

    /// The first of a batch's two passes: looks up every packet's entry
    /// (independent loads, so that their cache misses overlap) into
    /// `entries` ([`NO_ENTRY`] when there is none or no lookup), touching
    /// each found flow. Returns the table generation the lookups hold for;
    /// hand both to [`Core::process_hinted`].
    pub fn lookup_batch(&self, pkts: &[Packet], entries: &mut [u32]) -> u32 {
        for (p, e) in pkts.iter().zip(entries.iter_mut()) {
            *e = match self.flow_key(p) {
                Some((mi, id)) => match self.maps[mi].get(&id) {
                    Some(&x) => {
                        if let Some(f) = self.flows.get((x >> 1) as usize) {
                            std::hint::black_box(f.expiry);
                        }
                        x
                    }
                    None => NO_ENTRY,
                },
                None => NO_ENTRY,
            };
        }
        self.generation
    }

    /// As [`Core::process`], with the packet's entry looked up ahead:
    /// `ahead` is `(generation, entry)` from [`Core::lookup_batch`], used
    /// only while no flow has been made or removed since.
    #[inline]
    pub fn process_hinted(
        &mut self,
        port: usize,
        p: &mut Packet,
        now_ns: i64,
        ahead: Option<(u32, u32)>,
    ) -> Option<usize> {
        let now = now_ns.div_euclid(1_000_000);
        self.last_now = now;
        let ahead = ahead.and_then(|(g, e)| (g == self.generation).then_some(e));
        let r = self.process_inner(port, p, now, ahead);
        if r.is_none() {
            self.drops += 1;
        }
        r
    }

    fn process_inner(
        &mut self,
        port: usize,
        p: &mut Packet,
        now: i64,
        ahead: Option<u32>,
    ) -> Option<usize> {
        let nh = p.network_header_offset()?;
        if nh < 0 {
            return None;
        }
        let nh = nh as usize;
        let th_set = p.transport_header_offset();
        let data = p.data();
        if data.len() < nh + 20 {
            return self.inputs.no_mapping_output(port);
        }
        let ip = Ipv4Packet::new_unchecked(&data[nh..]);
        if ip.version() != 4 {
            return self.process6(port, p, nh, now);
        }
        let th = match th_set {
            Some(t) if t >= 0 => t as usize,
            _ => nh + ip.header_len(),
        };
        let tlen = data.len() as isize - th as isize;
        let proto = ip.protocol();
        let first_frag = !ip.is_later_fragment();
        let mi = match self.map_index(proto) {
            Some(mi) if first_frag && tlen >= 8 => mi,
            _ => return self.inputs.no_mapping_output(port),
        };
        let flowid = FlowId::of(&ip, &data[th..]);
        let found = match ahead {
            Some(NO_ENTRY) => None,
            Some(e) => Some(e),
            None => self.maps[mi].get(&flowid).copied(),
        };
        let entry = match found {
            Some(e) => e,
            None => {
                let Some(e) = self.new_flow(port, flowid, mi, proto, now) else {
                    return self.inputs.no_mapping_output(port);
                };
                if let Some(off) = self.reply_anno {
                    let v = p.anno_bytes()[off];
                    self.flows[(e >> 1) as usize].reply_anno = v;
                }
                e
            }
        };
        let idx = (entry >> 1) as usize;
        let reply = entry & 1 == 1;
        let dst_anno = self.dst_anno;
        let reply_anno = self.reply_anno;
        let flow = &mut self.flows[idx];
        let seq = apply(flow, p, nh, th, reply, dst_anno, reply_anno);
        if seq && flow.has_dt {
            if let Some(list) = self.seq.get_mut(&(idx as u32)) {
                apply_seq(list, reply as usize, &mut p.data_mut()[th..]);
            }
        }
        Some(self.touch(idx, reply, now))
    }

    /// Renews flow `idx`'s guarantee (or timeout) after a packet; returns
    /// the output of the packet's direction.
    #[inline(always)]
    fn touch(&mut self, idx: usize, reply: bool, now: i64) -> usize {
        let flow = self.flows[idx];
        let g = self.guarantee(&flow);
        let (guaranteed, expiry) = if g != 0 {
            (true, now + g)
        } else {
            (false, now + self.flow_timeout(&flow))
        };
        let f = &mut self.flows[idx];
        f.guaranteed = guaranteed;
        f.expiry = expiry;
        f.outputs[reply as usize] as usize
    }

    /// [`Core::process`] for a packet that is not IPv4: an IPv6 packet's
    /// flow read by `Flow::parse` and looked up in the IPv6 table; any
    /// other version, a malformed header, a later fragment or a protocol
    /// without mappings gets no mapping.
    #[cold]
    #[inline(never)]
    fn process6(&mut self, port: usize, p: &mut Packet, nh: usize, now: i64) -> Option<usize> {
        let l3 = &p.data()[nh..];
        if l3[0] >> 4 != 6 {
            return self.inputs.no_mapping_output(port);
        }
        let wf = match WireFlow::parse_ipv6(l3) {
            Ok(f) if f.fragment != Fragment::Later => f,
            _ => return self.inputs.no_mapping_output(port),
        };
        let key = wf.tuple;
        let Some(mi) = self.map_index(key.proto) else {
            return self.inputs.no_mapping_output(port);
        };
        let entry = match self.map6.get(&key) {
            Some(&e) => e,
            None => {
                let Some(e) = self.new_flow6(port, key, mi, now) else {
                    return self.inputs.no_mapping_output(port);
                };
                if let Some(off) = self.reply_anno {
                    let v = p.anno_bytes()[off];
                    self.flows[(e >> 1) as usize].reply_anno = v;
                }
                e
            }
        };
        let idx = (entry >> 1) as usize;
        let reply = entry & 1 == 1;
        let keys = self.keys6[idx];
        let th = nh + wf.l4_offset;
        let (dst_anno, reply_anno) = (self.dst_anno, self.reply_anno);
        let flow = &mut self.flows[idx];
        let seq = apply6(flow, &keys, p, nh, th, reply, dst_anno, reply_anno);
        if seq && flow.has_dt {
            if let Some(list) = self.seq.get_mut(&(idx as u32)) {
                apply_seq(list, reply as usize, &mut p.data_mut()[th..]);
            }
        }
        Some(self.touch(idx, reply, now))
    }

    /// [`Core::new_flow`] for an IPv6 flow.
    fn new_flow6(&mut self, port: usize, key: FiveTuple, mi: usize, now: i64) -> Option<u32> {
        let map = &self.map6;
        let (rewritten, f, r) = self
            .inputs
            .choose6(port, key, |k| map.contains_key(k))
            .ok()?;
        let proto = key.proto;
        let tcp_style = match self.flavor {
            Flavor::Ip => proto == pronto_packet::wire::IP_PROTO_TCP,
            Flavor::Tcp => true,
            Flavor::Udp => false,
        };
        let keys = [key, rewritten.reverse()];
        let mut flow = Flow {
            keys: [FlowId::default(); 2],
            outputs: [f as u32, r as u32],
            ip_delta: 0,
            l4_delta: delta6(&key, &rewritten),
            expiry: 0,
            guaranteed: false,
            tcp_style,
            map: mi as u8 | V6_FLOW,
            proto,
            tflags: 0,
            reply_anno: 0,
            input: port as u32,
            live: true,
            has_dt: false,
        };
        let g = self.guarantee(&flow);
        flow.guaranteed = g != 0;
        flow.expiry = now + if g != 0 { g } else { self.flow_timeout(&flow) };
        let idx = match self.free.pop() {
            Some(i) => {
                self.flows[i as usize] = flow;
                i
            }
            None => {
                self.flows.push(flow);
                (self.flows.len() - 1) as u32
            }
        };
        if self.keys6.len() <= idx as usize {
            self.keys6.resize(idx as usize + 1, keys);
        }
        self.keys6[idx as usize] = keys;
        self.generation = self.generation.wrapping_add(1);
        self.map6.insert(key, idx << 1);
        if let Some(old) = self.map6.insert(keys[1], (idx << 1) | 1) {
            if old >> 1 != idx {
                self.destroy((old >> 1) as usize);
            }
        }
        self.live += 1;
        self.inputs[port].count += 1;
        if self.over_capacity() && self.make_room_shared(idx as usize, now) {
            self.inputs[port].failures += 1;
            return None;
        }
        Some(idx << 1)
    }

    /// Installs a mapping for a packet without one, as its input says.
    /// Returns the forward entry, or `None` (after counting what Click
    /// counts) when the packet is dropped or passed.
    fn new_flow(
        &mut self,
        port: usize,
        flowid: FlowId,
        mi: usize,
        proto: u8,
        now: i64,
    ) -> Option<u32> {
        let map = &self.maps[mi];
        let (rewritten, f, r) = self
            .inputs
            .choose(port, flowid, proto, |k| map.contains_key(k))
            .ok()?;
        let tcp_style = match self.flavor {
            Flavor::Ip => proto == pronto_packet::wire::IP_PROTO_TCP,
            Flavor::Tcp => true,
            Flavor::Udp => false,
        };
        let (sw, dw) = (flowid.words(), rewritten.words());
        let mut ip_delta = 0u16;
        for i in 0..4 {
            ip_delta = update_in_cksum(ip_delta, sw[i], dw[i]);
        }
        let mut l4_delta = ip_delta;
        for i in 4..6 {
            l4_delta = update_in_cksum(l4_delta, sw[i], dw[i]);
        }
        let mut flow = Flow {
            keys: [flowid, rewritten.reverse()],
            outputs: [f as u32, r as u32],
            ip_delta,
            l4_delta,
            expiry: 0,
            guaranteed: false,
            tcp_style,
            map: mi as u8,
            proto: if self.flavor == Flavor::Tcp {
                pronto_packet::wire::IP_PROTO_TCP
            } else {
                proto
            },
            tflags: 0,
            reply_anno: 0,
            input: port as u32,
            live: true,
            has_dt: false,
        };
        let g = self.guarantee(&flow);
        flow.guaranteed = g != 0;
        flow.expiry = now + if g != 0 { g } else { self.flow_timeout(&flow) };
        let idx = match self.free.pop() {
            Some(i) => {
                self.flows[i as usize] = flow;
                i
            }
            None => {
                self.flows.push(flow);
                (self.flows.len() - 1) as u32
            }
        };
        self.generation = self.generation.wrapping_add(1);
        self.maps[mi].insert(flowid, idx << 1);
        if let Some(old) = self.maps[mi].insert(flow.keys[1], (idx << 1) | 1) {
            if old >> 1 != idx {
                self.destroy((old >> 1) as usize);
            }
        }
        self.live += 1;
        self.inputs[port].count += 1;
        if self.over_capacity() && self.make_room_shared(idx as usize, now) {
            self.inputs[port].failures += 1;
            return None;
        }
        Some(idx << 1)
    }

    /// The mapping table of table `mi`, one line per entry, as Click prints
    /// it (entries in flow-creation slot order).
    pub fn table(&self, mi: usize) -> String {
        let mut s = String::new();
        let now = self.last_now;
        for (i, f) in self.flows.iter().enumerate() {
            if !f.live || f.table() != mi {
                continue;
            }
            for d in 0..2usize {
                let h = ((i as u32) << 1) | d as u32;
                let (key, rewritten) = if f.is_v6() {
                    let k = &self.keys6[i];
                    if self.map6.get(&k[d]) != Some(&h) {
                        continue;
                    }
                    (tuple_str(&k[d]), tuple_str(&k[1 - d].reverse()))
                } else {
                    if self.maps[mi].get(&f.keys[d]) != Some(&h) {
                        continue;
                    }
                    (f.keys[d].to_string(), f.keys[1 - d].reverse().to_string())
                };
                let expiry = if f.guaranteed {
                    self.best_effort_expiry(f)
                } else {
                    f.expiry
                };
                let exp = (expiry + HZ / 2 - now) / HZ;
                let (a, b) = if d == 0 { ("*", "") } else { ("", "*") };
                let delta = match self.seq.get(&(i as u32)).and_then(|l| l.first()) {
                    Some(h) if f.has_dt && h.delta[d] != 0 => {
                        format!(
                            " seq {}{}",
                            if h.delta[d] > 0 { "+" } else { "" },
                            h.delta[d]
                        )
                    }
                    _ => String::new(),
                };
                s.push_str(&format!(
                    "{} => {}{} [{}{} {}{}] i{} exp{}\n",
                    key, rewritten, delta, a, f.outputs[0], b, f.outputs[1], f.input, exp
                ));
            }
        }
        s
    }
}

impl Core {
    /// The `lookup` (`tcp_lookup`) read handler: `SADDR SPORT DADDR DPORT`
    /// looked up in table `mi`, answered with the flow identifier the
    /// packet would be rewritten to (`SADDR SPORT DADDR DPORT`), or with
    /// nothing when no mapping matches.
    pub fn lookup_text(&self, mi: usize, arg: &str) -> Result<String, HandlerError> {
        let bad = || {
            HandlerError::BadValue(
                "expected `SADDR SPORT DADDR DPORT` (addresses and ports 0-65535)".into(),
            )
        };
        let w: Vec<&str> = arg.split_whitespace().collect();
        let [sa, sp, da, dp] = w.as_slice() else {
            return Err(bad());
        };
        let port = |s: &str| parse_int(s).and_then(|v| u16::try_from(v).ok());
        if let (Some(s6), Some(d6)) = (parse_ip6(sa), parse_ip6(da)) {
            let proto = match (self.flavor, mi) {
                (Flavor::Ip, 1) => pronto_packet::wire::IP_PROTO_UDP,
                _ => pronto_packet::wire::IP_PROTO_TCP,
            };
            let t = FiveTuple::v6(
                proto,
                s6,
                port(sp).ok_or_else(bad)?,
                d6,
                port(dp).ok_or_else(bad)?,
            );
            let Some(&e) = self.map6.get(&t) else {
                return Ok(String::new());
            };
            let r = self.keys6[(e >> 1) as usize][(e & 1 == 0) as usize].reverse();
            return Ok(format!(
                "{} {} {} {}",
                ip6_str(&r.src),
                r.sport,
                ip6_str(&r.dst),
                r.dport
            ));
        }
        let flow = FlowId {
            saddr: parse_ip(sa).ok_or_else(bad)?,
            sport: port(sp).ok_or_else(bad)?,
            daddr: parse_ip(da).ok_or_else(bad)?,
            dport: port(dp).ok_or_else(bad)?,
        };
        let Some(&e) = self.maps.get(mi).and_then(|m| m.get(&flow)) else {
            return Ok(String::new());
        };
        let f = &self.flows[(e >> 1) as usize];
        let r = f.keys[(e & 1 == 0) as usize].reverse();
        Ok(format!(
            "{} {} {} {}",
            ip_str(r.saddr),
            r.sport,
            ip_str(r.daddr),
            r.dport
        ))
    }
}

impl MappingTable for Core {
    fn nslots(&self) -> usize {
        self.flows.len()
    }

    fn expiry_of(&self, i: usize) -> Option<(bool, i64)> {
        let f = &self.flows[i];
        f.live.then_some((f.guaranteed, f.expiry))
    }

    fn to_best_effort(&mut self, i: usize) {
        let f = self.flows[i];
        self.flows[i].expiry = self.best_effort_expiry(&f);
        self.flows[i].guaranteed = false;
    }

    /// Removes a flow and its table entries.
    fn destroy(&mut self, idx: usize) {
        let f = self.flows[idx];
        if !f.live {
            return;
        }
        self.generation = self.generation.wrapping_add(1);
        if f.is_v6() {
            let keys = self.keys6[idx];
            for d in 0..2u32 {
                if self.map6.get(&keys[d as usize]) == Some(&(((idx as u32) << 1) | d)) {
                    self.map6.remove(&keys[d as usize]);
                }
            }
        } else {
            let map = &mut self.maps[f.table()];
            for d in 0..2u32 {
                if map.get(&f.keys[d as usize]) == Some(&(((idx as u32) << 1) | d)) {
                    map.remove(&f.keys[d as usize]);
                }
            }
        }
        if f.has_dt {
            self.seq.remove(&(idx as u32));
            self.flows[idx].has_dt = false;
        }
        self.flows[idx].live = false;
        self.free.push(idx as u32);
        self.live -= 1;
        if let Some(is) = self.inputs.get_mut(f.input as usize) {
            is.count = is.count.wrapping_sub(1);
        }
    }

    fn input_of(&self, i: usize) -> Option<usize> {
        let f = &self.flows[i];
        f.live.then_some(f.input as usize)
    }

    fn nlive(&self) -> usize {
        self.live
    }

    fn capacity(&self) -> i64 {
        match &self.group {
            Some((g, _)) => g.capacity.load(std::sync::atomic::Ordering::Relaxed),
            None => self.capacity,
        }
    }

    fn set_capacity(&mut self, c: i64) {
        match &self.group {
            Some((g, _)) => g.capacity.store(c, std::sync::atomic::Ordering::Relaxed),
            None => self.capacity = c,
        }
    }

    fn size(&self) -> usize {
        self.total_live()
    }

    fn parse_capacity(value: &str) -> Option<i64> {
        value
            .split_whitespace()
            .next()
            .and_then(parse_int)
            .filter(|c| (0..=0x7fff_ffff).contains(c))
    }

    fn last_now(&self) -> i64 {
        self.last_now
    }

    fn inputs(&self) -> &Inputs {
        &self.inputs
    }

    fn inputs_mut(&mut self) -> &mut Inputs {
        &mut self.inputs
    }
}

// ---------------------------------------------------------------------------
// Sharing a core

/// Holds a rewriter's [`Core`]. Elements such as `FTPPortMapper` reach into
/// a rewriter's table, so the core starts out shared (`Arc<Mutex<Core>>`,
/// handed out by [`CoreCell::shared`] while configuring). At the first
/// packet, a core nobody else kept is taken out of its lock for good, so the
/// packet path of such a rewriter never locks; a core another element holds
/// is locked once per batch.
pub struct CoreCell {
    local: Option<Box<Core>>,
    shared: Option<Arc<Mutex<Core>>>,
}

/// A core borrowed from a [`CoreCell`].
pub enum CoreMut<'a> {
    /// Owned by the rewriter alone.
    Local(&'a mut Core),
    /// Shared, and locked.
    Locked(MutexGuard<'a, Core>),
}

impl std::ops::Deref for CoreMut<'_> {
    type Target = Core;
    #[inline]
    fn deref(&self) -> &Core {
        match self {
            CoreMut::Local(c) => c,
            CoreMut::Locked(g) => g,
        }
    }
}

impl std::ops::DerefMut for CoreMut<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Core {
        match self {
            CoreMut::Local(c) => c,
            CoreMut::Locked(g) => &mut *g,
        }
    }
}

/// A core read through a [`CoreCell`].
pub enum CoreRef<'a> {
    /// Owned by the rewriter alone.
    Local(&'a Core),
    /// Shared, and locked.
    Locked(MutexGuard<'a, Core>),
}

impl std::ops::Deref for CoreRef<'_> {
    type Target = Core;
    #[inline]
    fn deref(&self) -> &Core {
        match self {
            CoreRef::Local(c) => c,
            CoreRef::Locked(g) => g,
        }
    }
}

impl CoreCell {
    /// Wraps a freshly configured core; one that shares another
    /// rewriter's capacity joins its group now.
    pub fn new(mut core: Core) -> CoreCell {
        let join = core.join.take();
        let me = Arc::new(Mutex::new(core));
        if let Some(peer) = join {
            let group = {
                let mut p = lock(&peer);
                match &p.group {
                    Some((g, _)) => g.clone(),
                    None => {
                        let g = Arc::new(CapacityGroup {
                            capacity: std::sync::atomic::AtomicI64::new(p.capacity),
                            members: Mutex::new(vec![Arc::downgrade(&peer)]),
                        });
                        p.group = Some((g.clone(), 0));
                        g
                    }
                }
            };
            let idx = {
                let mut m = lock(&group.members);
                m.push(Arc::downgrade(&me));
                m.len() - 1
            };
            lock(&me).group = Some((group, idx));
        }
        CoreCell {
            local: None,
            shared: Some(me),
        }
    }

    /// The shared core (an `Arc<Mutex<Core>>`), for `Element::shared`.
    pub fn shared(&self) -> Option<crate::Shared> {
        self.shared.as_ref().map(|a| a.clone() as crate::Shared)
    }

    /// The core, for packets, tasks and handler writes.
    #[inline]
    pub fn get(&mut self) -> CoreMut<'_> {
        if self.local.is_none() {
            self.localize();
        }
        if let Some(c) = self.local.as_deref_mut() {
            return CoreMut::Local(c);
        }
        CoreMut::Locked(lock(
            self.shared.as_ref().expect("a core is local or shared"),
        ))
    }

    /// The core, for handler reads.
    pub fn read(&self) -> CoreRef<'_> {
        if let Some(c) = self.local.as_deref() {
            return CoreRef::Local(c);
        }
        CoreRef::Locked(lock(
            self.shared.as_ref().expect("a core is local or shared"),
        ))
    }

    #[cold]
    fn localize(&mut self) {
        if self
            .shared
            .as_ref()
            .is_some_and(|a| Arc::strong_count(a) == 1 && Arc::weak_count(a) == 0)
        {
            if let Some(a) = self.shared.take() {
                match Arc::try_unwrap(a) {
                    Ok(m) => {
                        self.local =
                            Some(Box::new(m.into_inner().unwrap_or_else(|e| e.into_inner())))
                    }
                    Err(a) => self.shared = Some(a),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The elements

/// A rewriter class's description `spec` with what every rewriter has:
/// any number of push inputs and outputs, reading and writing the header
/// `fields`, dropping packets without a mapping.
pub const fn rewriter_spec(spec: Spec, fields: u8) -> Spec {
    spec.ports("1-/1-")
        .processing("h/h")
        .profile(ActionProfile::reads(fields).writes(fields).dropping())
}

/// The element `IPRewriter`, `TCPRewriter` and `UDPRewriter` configure: a
/// [`Core`] of their flavor, with its reaping timer and handlers.
pub struct CoreRewriter {
    core: CoreCell,
    flavor: Flavor,
}

/// `IPRewriter`'s handlers (a TCP and a UDP table).
const IP_HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("tcp_table"),
    HandlerInfo::read("udp_table"),
    HandlerInfo::read("tcp_mappings"),
    HandlerInfo::read("udp_mappings"),
    HandlerInfo::read("table_size"),
    HandlerInfo::read("nmappings"),
    HandlerInfo::read("mapping_failures"),
    HandlerInfo::read("patterns"),
    HandlerInfo::read("size"),
    HandlerInfo::rw("capacity"),
    HandlerInfo::write("clear"),
    HandlerInfo::rw("pattern0"),
    HandlerInfo::rw("pattern1"),
    HandlerInfo::rw("pattern2"),
    HandlerInfo::rw("pattern3"),
    HandlerInfo::read("tcp_lookup"),
];

/// `TCPRewriter`'s handlers (one table, and `lookup`).
const TCP_HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("table"),
    HandlerInfo::read("mappings"),
    HandlerInfo::read("table_size"),
    HandlerInfo::read("nmappings"),
    HandlerInfo::read("mapping_failures"),
    HandlerInfo::read("patterns"),
    HandlerInfo::read("size"),
    HandlerInfo::rw("capacity"),
    HandlerInfo::write("clear"),
    HandlerInfo::rw("pattern0"),
    HandlerInfo::rw("pattern1"),
    HandlerInfo::rw("pattern2"),
    HandlerInfo::rw("pattern3"),
    HandlerInfo::read("lookup"),
];

/// `UDPRewriter`'s handlers (one table).
const ONE_TABLE_HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::read("table"),
    HandlerInfo::read("mappings"),
    HandlerInfo::read("table_size"),
    HandlerInfo::read("nmappings"),
    HandlerInfo::read("mapping_failures"),
    HandlerInfo::read("patterns"),
    HandlerInfo::read("size"),
    HandlerInfo::rw("capacity"),
    HandlerInfo::write("clear"),
    HandlerInfo::rw("pattern0"),
    HandlerInfo::rw("pattern1"),
    HandlerInfo::rw("pattern2"),
    HandlerInfo::rw("pattern3"),
];

impl CoreRewriter {
    /// Configures a rewriter of `flavor`.
    pub fn configure(ctx: &ConfigCtx<'_>, flavor: Flavor) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(CoreRewriter {
            core: CoreCell::new(Core::configure(ctx, flavor)?),
            flavor,
        }))
    }

    /// Rewrites `batch`, packet `i` from input `input_of(i)`. Two passes:
    /// every packet's entry first, then the rewrites.
    #[inline]
    fn rewrite(&mut self, batch: &mut Batch, out: &mut Out<'_>, input_of: impl Fn(usize) -> usize) {
        let now = out.now;
        let mut core = self.core.get();
        if batch.len() < crate::util::BATCH_WALK_MIN {
            // A few packets (one at a time where the runtime keeps Click's
            // order): each looks its entry up itself, without the batch
            // pass and its array.
            let mut i = 0;
            push_each(batch, out, |p, _| {
                let port = input_of(i);
                i += 1;
                core.process_hinted(port, p, now, None)
            });
            return;
        }
        let mut ahead = [NO_ENTRY; BATCH_MAX];
        let generation = core.lookup_batch(batch.as_slice(), &mut ahead);
        let mut i = 0;
        push_each(batch, out, |p, _| {
            let e = ahead.get(i).copied().unwrap_or(NO_ENTRY);
            let port = input_of(i);
            i += 1;
            core.process_hinted(port, p, now, Some((generation, e)))
        });
    }

    /// The table a `table`-like read handler prints.
    fn table_of(&self, name: &str) -> Option<usize> {
        match (self.flavor, name) {
            (Flavor::Ip, "tcp_table" | "tcp_mappings") => Some(0),
            (Flavor::Ip, "udp_table" | "udp_mappings") => Some(1),
            (Flavor::Tcp | Flavor::Udp, "table" | "mappings") => Some(0),
            _ => None,
        }
    }
}

impl Element for CoreRewriter {
    fn one_for_one(&self) -> bool {
        true
    }

    /// Click's `IPRewriterBase::take_state`: the old rewriter's flows,
    /// when it is the same class with as many inputs.
    fn take_state(&mut self, old: &mut dyn Element, _ctx: &crate::TakeCtx<'_>) -> Option<String> {
        let old = crate::old_as::<CoreRewriter>(old)?;
        if old.flavor != self.flavor {
            return None;
        }
        let mut old_core = old.core.get();
        let n = self.core.get().take_flows(&mut old_core)?;
        Some(format!("{n} flows"))
    }

    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.rewrite(batch, out, |_| port);
    }

    fn push_inputs(&mut self, inputs: &[u16], batch: &mut Batch, out: &mut Out<'_>) {
        self.rewrite(batch, out, |i| inputs.get(i).copied().unwrap_or(0) as usize);
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        self.core.get().run_timer(out.now)
    }

    fn shared(&self) -> Option<crate::Shared> {
        self.core.shared()
    }

    fn counters(&self, c: &mut crate::Counters) {
        let core = self.core.read();
        c.drop("no_mapping", core.drops);
        core.counters_common(c);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        match self.flavor {
            Flavor::Ip => IP_HANDLERS,
            Flavor::Tcp => TCP_HANDLERS,
            Flavor::Udp => ONE_TABLE_HANDLERS,
        }
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let core = self.core.read();
        let lookup = match self.flavor {
            Flavor::Ip => "tcp_lookup",
            Flavor::Tcp => "lookup",
            Flavor::Udp => "",
        };
        if let Some(arg) = name.strip_prefix(lookup).filter(|_| !lookup.is_empty()) {
            if arg.is_empty() || arg.starts_with(char::is_whitespace) {
                // The TCP table (IPRewriter's first).
                return core.lookup_text(0, arg);
            }
        }
        match self.table_of(name) {
            Some(mi) => Ok(core.table(mi)),
            None => core
                .read_common(name)
                .ok_or_else(|| HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        self.core
            .get()
            .write_common(name, value)
            .unwrap_or_else(|| Err(HandlerError::NoSuchHandler(name.into())))
    }
}

/// Rewrites a packet along `flow`, in the reply direction if `reply`.
/// True if the packet is a TCP segment whose sequence numbers the flow's
/// deltas (if any) apply to.
#[inline]
fn apply(
    flow: &mut Flow,
    p: &mut Packet,
    nh: usize,
    th: usize,
    reply: bool,
    dst_anno: bool,
    reply_anno: Option<usize>,
) -> bool {
    let rev = flow.keys[!reply as usize];
    if dst_anno {
        p.set_dst_ip_anno(rev.saddr.to_be_bytes());
    }
    if reply {
        if let Some(off) = reply_anno {
            p.anno_bytes_mut()[off] = flow.reply_anno;
        }
    }
    let data = p.data_mut();
    let tlen = data.len() - th;
    let ip = &mut data[nh..];
    ip[12..16].copy_from_slice(&rev.daddr.to_be_bytes());
    ip[16..20].copy_from_slice(&rev.saddr.to_be_bytes());
    let s = apply_delta(be16(ip, 10), reply, flow.ip_delta);
    set_be16(ip, 10, s);
    let ip_len = be16(ip, 2) as usize;
    let ip_hl = (ip[0] & 15) as usize;
    let proto = ip[9];
    let l4 = &mut data[th..];
    if flow.tcp_style {
        if tlen < 18 {
            return false;
        }
        set_be16(l4, 0, rev.dport);
        set_be16(l4, 2, rev.sport);
        let s = apply_delta(be16(l4, 16), reply, flow.l4_delta);
        set_be16(l4, 16, s);
        let th_off = (l4[12] >> 4) as usize;
        let flags = l4[13];
        let have_payload = (ip_hl + th_off) << 2 < ip_len;
        track_tcp(flow, flags, have_payload, reply);
        tlen >= th_off << 2
    } else {
        set_be16(l4, 0, rev.dport);
        set_be16(l4, 2, rev.sport);
        if proto == pronto_packet::wire::IP_PROTO_TCP {
            if tlen >= 18 {
                let s = apply_delta(be16(l4, 16), reply, flow.l4_delta);
                set_be16(l4, 16, s);
            }
        } else if proto == pronto_packet::wire::IP_PROTO_UDP && be16(l4, 6) != 0 {
            // A zero UDP checksum means "no checksum" and stays zero.
            let s = apply_delta(be16(l4, 6), reply, flow.l4_delta);
            set_be16(l4, 6, s);
        }
        track_udp(flow, reply);
        false
    }
}

/// Rewrites an IPv6 packet along `flow`, whose keys are `keys`, in the
/// reply direction if `reply` (as [`apply`] does an IPv4 one: addresses,
/// ports, the TCP or UDP checksum; IPv6 has no header checksum). `th` is
/// where `Flow::parse` found the transport header, which is whole (TCP 20
/// bytes, UDP and DCCP 8 or more). A UDP checksum of zero (none, which
/// RFC 8200 forbids over IPv6) stays zero; an updated one that comes out
/// zero is sent as 0xffff (RFC 768).
#[allow(clippy::too_many_arguments)]
fn apply6(
    flow: &mut Flow,
    keys: &[FiveTuple; 2],
    p: &mut Packet,
    nh: usize,
    th: usize,
    reply: bool,
    dst_anno: bool,
    reply_anno: Option<usize>,
) -> bool {
    let rev = keys[!reply as usize];
    if dst_anno {
        p.set_dst_ip6_anno(rev.src);
    }
    if reply {
        if let Some(off) = reply_anno {
            p.anno_bytes_mut()[off] = flow.reply_anno;
        }
    }
    let data = p.data_mut();
    let tlen = data.len() - th;
    let ip = &mut data[nh..];
    ip[8..24].copy_from_slice(&rev.dst);
    ip[24..40].copy_from_slice(&rev.src);
    let end = 40 + be16(ip, 4) as usize;
    let proto = rev.proto;
    let l4 = &mut data[th..];
    set_be16(l4, 0, rev.dport);
    set_be16(l4, 2, rev.sport);
    if proto == pronto_packet::wire::IP_PROTO_TCP {
        if tlen >= 18 {
            let s = apply_delta(be16(l4, 16), reply, flow.l4_delta);
            set_be16(l4, 16, s);
        }
    } else if proto == pronto_packet::wire::IP_PROTO_UDP && be16(l4, 6) != 0 {
        let s = apply_delta(be16(l4, 6), reply, flow.l4_delta);
        set_be16(l4, 6, if s == 0 { 0xffff } else { s });
    }
    if flow.tcp_style {
        if tlen < 18 {
            return false;
        }
        let th_off = (l4[12] >> 4) as usize;
        let have_payload = (th - nh) + (th_off << 2) < end;
        track_tcp(flow, l4[13], have_payload, reply);
        tlen >= th_off << 2
    } else {
        track_udp(flow, reply);
        false
    }
}

/// Follows a TCP flow's state (Click's `TCPFlow` flags) after a segment
/// with `flags` in direction `reply`.
#[inline(always)]
fn track_tcp(flow: &mut Flow, flags: u8, have_payload: bool, reply: bool) {
    let dir = reply as u8;
    if flags & 0x04 != 0 {
        flow.tflags |= S_BOTH_DONE;
    } else if flags & 0x01 != 0 {
        flow.tflags |= S_FORWARD_DONE << dir;
    } else if flags & 0x02 != 0 || have_payload {
        flow.tflags &= !(S_FORWARD_DONE << dir);
    }
    if have_payload {
        flow.tflags |= S_FORWARD_DATA << dir;
    }
}

/// Counts a UDP-style flow's packets toward streaming (Click's `UDPFlow`).
#[inline(always)]
fn track_udp(flow: &mut Flow, reply: bool) {
    if reply {
        flow.tflags |= 1;
    }
    if flow.tflags < 6 {
        flow.tflags += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_parsing_and_unparse() {
        let p = Pattern::parse(&["10.0.0.1", "1024-65535#", "-", "-"]).expect("ok");
        assert_eq!(p.unparse(), "10.0.0.1 1024-65535 - -");
        assert!(p.sequential && !p.same_first && p.is_napt);
        assert_eq!(p.variation_top, 64511);
        let p = Pattern::parse(&["1.0.0.0/24", "-"]).expect("ok");
        assert_eq!(p.unparse(), "1.0.0.1-1.0.0.254 -");
        let p = Pattern::parse(&["1.0.0.1-1.0.0.9?", "2.0.0.2"]).expect("ok");
        assert!(!p.same_first && !p.sequential);
        assert_eq!(p.unparse(), "1.0.0.1-1.0.0.9 2.0.0.2");
        assert_eq!(
            Pattern::parse(&["x", "-", "-", "-"]).expect_err("error"),
            "bad source address"
        );
        assert_eq!(
            Pattern::parse(&["-", "0", "-", "-"]).expect_err("error"),
            "bad source port"
        );
        assert_eq!(
            Pattern::parse(&["-", "80#", "-", "-"]).expect_err("error"),
            "bad source port"
        );
        assert_eq!(
            Pattern::parse(&["-", "-", "1.2", "-"]).expect_err("error"),
            "bad destination address"
        );
        assert_eq!(
            Pattern::parse(&["-", "-", "-", "70000"]).expect_err("error"),
            "bad destination port"
        );
    }

    #[test]
    fn ipv6_patterns() {
        let p = Pattern::parse(&["2001:DB8:0:0:0:0:0:1", "1024-2047#", "-", "-"]).expect("ok");
        assert_eq!(p.unparse(), "2001:db8::1 1024-2047 - -");
        assert_eq!(p.family(), Some(Family::V6));
        let p = Pattern::parse(&["-", "-", "2001:db8::a", "80"]).expect("ok");
        assert_eq!(p.unparse(), "- - 2001:db8::a 80");
        let p = Pattern::parse(&["-", "5000", "-", "-"]).expect("ok");
        assert_eq!(p.family(), None);
        assert_eq!(
            Pattern::parse(&["2001:db8::/120", "-", "-", "-"]).expect_err("error"),
            "bad source address (an IPv6 range or prefix needs a pattern of addresses only, \
             SADDR DADDR)"
        );
        assert_eq!(
            Pattern::parse(&["-", "-", "2001:db8::/64", "-"]).expect_err("error"),
            "bad destination address"
        );
        // A port range over IPv6: the flow's own port first, then the next
        // free one.
        let mut p = Pattern::parse(&["2001:db8::1", "1000-1001", "-", "-"]).expect("ok");
        let f = FiveTuple::v6(17, [7; 16], 1000, [9; 16], 53);
        let mut taken: Vec<FiveTuple> = Vec::new();
        let r = p.rewrite6(f, |k| taken.contains(k)).expect("port");
        assert_eq!((r.src[15], r.sport, r.dst, r.dport), (1, 1000, [9; 16], 53));
        taken.push(r.reverse());
        let r = p.rewrite6(f, |k| taken.contains(k)).expect("port");
        assert_eq!(r.sport, 1001);
        taken.push(r.reverse());
        assert_eq!(p.rewrite6(f, |k| taken.contains(k)), None);
        // An IPv4 pattern maps no IPv6 flow, and the other way round.
        let mut p4 = Pattern::parse(&["10.0.0.1", "-", "-", "-"]).expect("ok");
        assert_eq!(p4.rewrite6(f, |_| false), None);
        let mut p6 = Pattern::parse(&["2001:db8::1", "-", "-", "-"]).expect("ok");
        assert_eq!(p6.rewrite_with(FlowId::default(), |_| false), None);
    }

    #[test]
    fn ipv6_address_ranges_and_prefixes() {
        let a = |last: u16| {
            let mut v = [0u8; 16];
            v[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
            v[14..].copy_from_slice(&last.to_be_bytes());
            v
        };
        // A /120: all but the first address, the last one included.
        let p = Pattern::parse(&["2001:db8::77/120#", "-"]).expect("ok");
        assert_eq!(p.unparse(), "2001:db8::1-2001:db8::ff -");
        assert_eq!((p.saddr6, p.variation_top), (a(1), 254));
        let p = Pattern::parse(&["2001:db8::5/127", "-"]).expect("ok");
        assert_eq!(p.unparse(), "2001:db8::4-2001:db8::5 -");
        let p = Pattern::parse(&["2001:db8::5/128", "2001:db8::9"]).expect("ok");
        assert_eq!(p.unparse(), "2001:db8::5 2001:db8::9");
        let p = Pattern::parse(&["2001:db8::10-2001:db8::12#", "-"]).expect("ok");
        assert_eq!(p.unparse(), "2001:db8::10-2001:db8::12 -");
        let p = Pattern::parse(&["2001:db8::/96", "-"]).expect("ok");
        assert_eq!(p.variation_top, u32::MAX - 1);
        for (bad, why) in [
            ("2001:db8::/64", "an IPv6 prefix is ADDR/LEN, LEN 96 to 128"),
            (
                "2001:db8::9-2001:db8::1",
                "an IPv6 range is ADDR1-ADDR2, ADDR1 <= ADDR2",
            ),
            (
                "2001:db8::-2001:db9::",
                "an IPv6 range holds at most 2^32 addresses",
            ),
        ] {
            assert_eq!(
                Pattern::parse(&[bad, "-"]).expect_err("error"),
                format!("bad source address ({why})")
            );
        }
        assert_eq!(
            Pattern::parse(&["::/120", "-"]).expect_err("error"),
            "bad source address"
        );
        assert_eq!(
            Pattern::parse(&["2001:db8::1-2001:db8::2", "10.0.0.1"]).expect_err("error"),
            "IPv4 and IPv6 addresses in one pattern (patterns never translate between families)"
        );
        // Sequential: the next free address, wrapping round; none when all
        // are taken.
        let mut p = Pattern::parse(&["2001:db8::10-2001:db8::12#", "-"]).expect("ok");
        let f = FiveTuple::v6(0, [7; 16], 0, [0; 16], 0);
        let mut taken: Vec<FiveTuple> = Vec::new();
        for want in [0x10, 0x11, 0x12] {
            let r = p.rewrite6(f, |k| taken.contains(k)).expect("address");
            assert_eq!(r.src, a(want));
            taken.push(r.reverse());
        }
        assert_eq!(p.rewrite6(f, |k| taken.contains(k)), None);
        taken.remove(1);
        let r = p.rewrite6(f, |k| taken.contains(k)).expect("address");
        assert_eq!(r.src, a(0x11));
    }

    #[test]
    fn ipv6_checksum_delta_matches_a_full_computation() {
        // UDP 2001:db8::1:1234 -> 2001:db8::2:53, rewritten to
        // 2001:db8:ffff::7:4000 -> 2001:db8::2:53.
        let from = FiveTuple::v6(
            17,
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            1234,
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
            53,
        );
        let mut to = from;
        to.src = [0x20, 1, 0xd, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7];
        to.sport = 4000;
        let sum = |t: &FiveTuple| {
            let mut udp = [0u8; 10];
            udp[0..2].copy_from_slice(&t.sport.to_be_bytes());
            udp[2..4].copy_from_slice(&t.dport.to_be_bytes());
            udp[4..6].copy_from_slice(&10u16.to_be_bytes());
            udp[8..10].copy_from_slice(b"hi");
            let ps = pronto_packet::wire::pseudo_header_sum(&t.src, &t.dst, 17, 10);
            !pronto_packet::wire::fold(pronto_packet::wire::ones_sum(&udp, ps))
        };
        let d = delta6(&from, &to);
        assert_eq!(apply_delta(sum(&from), false, d), sum(&to));
        assert_eq!(apply_delta(sum(&to), true, d), sum(&from));
    }

    #[test]
    fn mapping_tables_hash_the_same_flow_differently() {
        use std::hash::BuildHasher;
        // With a fixed hash, flows that collide in one table collide in
        // every table of every process; keyed tables disagree.
        let (a, b): (FlowMap, FlowMap) = (pronto_hash::map(), pronto_hash::map());
        let f = FlowId {
            saddr: 0xc0a80001,
            daddr: 0x08080808,
            sport: 5000,
            dport: 53,
        };
        assert_ne!(a.hasher().hash_one(f), b.hasher().hash_one(f));
    }

    #[test]
    fn sequential_allocation_skips_used_ports() {
        let mut p = Pattern::parse(&["10.0.0.1", "1024-1026#", "-", "-"]).expect("ok");
        let mut map: FlowMap = pronto_hash::map();
        let f = FlowId {
            saddr: 0xc0a80001,
            daddr: 0x08080808,
            sport: 5000,
            dport: 53,
        };
        let r = p.rewrite_with(f, |k| map.contains_key(k)).expect("port");
        assert_eq!((r.saddr, r.sport), (0x0a000001, 1024));
        // Port 1025 is taken by some reply entry already.
        map.insert(
            FlowId {
                saddr: 0x08080808,
                sport: 53,
                daddr: 0x0a000001,
                dport: 1025,
            },
            0,
        );
        assert_eq!(
            p.rewrite_with(f, |k| map.contains_key(k))
                .expect("port")
                .sport,
            1026
        );
        assert_eq!(
            p.rewrite_with(f, |k| map.contains_key(k))
                .expect("port")
                .sport,
            1024
        );
    }

    #[test]
    fn the_flow_record_stays_56_bytes() {
        assert_eq!(std::mem::size_of::<Flow>(), 56);
    }

    #[test]
    fn incremental_checksum_step() {
        // RFC 1624 example: changing 0x5555 to 0x3285 in a header whose
        // checksum was 0xdd2f gives 0x0000 under eqn. 3.
        assert_eq!(update_in_cksum(0xdd2f, 0x5555, 0x3285), 0x0000);
    }
}
