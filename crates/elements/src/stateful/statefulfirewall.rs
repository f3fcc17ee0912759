//! `StatefulFirewall`: connection tracking with the TCP state machine, for
//! IPv4 and IPv6; only traffic of connections opened from the trusted
//! side comes in.

use pronto_lang::args::format_ip6;
use pronto_packet::wire::be16;
use pronto_packet::wire::flow::{Flow, Fragment};
use pronto_packet::wire::icmp::ICMP_HEADER_LEN;
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::ipv6::ICMP6_HEADER_LEN;
use pronto_packet::wire::WireError;
use pronto_packet::{Batch, Packet};

use super::table::{ip, Key, Slab, SlotTable, TableSlot, TimerWheel};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Seconds, Spec, TaskStatus, FIELDS_5TUPLE,
};

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;

const TH_FIN: u8 = 0x01;
const TH_SYN: u8 = 0x02;
const TH_RST: u8 = 0x04;
const TH_ACK: u8 = 0x10;

/// Connection states; each is also a timeout class.
const SYN_SENT: u8 = 0;
const SYN_RECV: u8 = 1;
const ESTABLISHED: u8 = 2;
const FIN_WAIT: u8 = 3;
const CLOSING: u8 = 4;
const TIME_WAIT: u8 = 5;
const CLOSED: u8 = 6;
const UDP_UNREPLIED: u8 = 7;
const UDP_REPLIED: u8 = 8;
const ICMP_ECHO: u8 = 9;
const OTHER: u8 = 10;
const NSTATES: usize = 11;

const STATE_NAMES: [&str; NSTATES] = [
    "SYN_SENT",
    "SYN_RECV",
    "ESTABLISHED",
    "FIN_WAIT",
    "CLOSING",
    "TIME_WAIT",
    "CLOSED",
    "UDP_UNREPLIED",
    "UDP_REPLIED",
    "ICMP_ECHO",
    "OTHER",
];

/// Timeout keywords, in state order, with their defaults in seconds.
const TIMEOUTS: [(&str, f64); NSTATES] = [
    ("TCP_SYN_SENT", 120.0),
    ("TCP_SYN_RECV", 60.0),
    ("TCP_ESTABLISHED", 432_000.0),
    ("TCP_FIN_WAIT", 120.0),
    ("TCP_CLOSING", 60.0),
    ("TCP_TIME_WAIT", 120.0),
    ("TCP_CLOSED", 10.0),
    ("UDP", 30.0),
    ("UDP_STREAM", 180.0),
    ("ICMP", 30.0),
    ("OTHER", 600.0),
];

/// FIN seen from the trusted (originating) side.
const FIN_ORIG: u8 = 1;
/// FIN seen from the untrusted (replying) side.
const FIN_REPLY: u8 = 2;

/// Timer wheel unit (100 ms) and size (about 109 minutes a turn).
const WHEEL_UNIT: i64 = 100_000_000;
const WHEEL_BUCKETS: usize = 65_536;

/// Tables for more connections than this (1 MiB of slots or more) are
/// warmed a batch at a time.
const WARM_ABOVE: usize = 16_384;

/// Connections expired per task run at most.
const EXPIRE_BUDGET: usize = 65_536;

/// Why a packet was dropped (index into the drop counters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reason {
    Unsolicited = 0,
    NoConnection = 1,
    Invalid = 2,
    Malformed = 3,
    Fragment = 4,
    TableFull = 5,
    Nd = 6,
}

const NREASONS: usize = 7;

const REASON_HANDLERS: [&str; NREASONS] = [
    "unsolicited_drops",
    "no_connection_drops",
    "invalid_drops",
    "malformed_drops",
    "fragment_drops",
    "table_full_drops",
    "nd_drops",
];

/// A connection's entry, which the timer wheel refers to by number.
#[derive(Clone, Copy, Default)]
struct Conn<K> {
    /// The connection key.
    key: K,
    /// When the timer wheel will look at the connection next; never later
    /// than the expiry in the connection's slot.
    queued: i64,
}

/// What a table slot keeps beside its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
struct Meta {
    /// When the connection expires unless refreshed (ns since the epoch).
    expiry: i64,
    /// The entry number; `u32::MAX` marks a free slot.
    entry: u32,
    state: u8,
    fins: u8,
}

const FREE: u32 = u32::MAX;

const FREE_META: Meta = Meta {
    expiry: 0,
    entry: FREE,
    state: 0,
    fins: 0,
};

/// A slot of the IPv4 connection table: the key with the connection's
/// state and expiry, so that a packet of a known connection reads (and,
/// when its expiry moves, writes) this one 32-byte slot and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(32))]
struct ConnSlot {
    key: u128,
    m: Meta,
}

/// A slot of the IPv6 connection table: one 64-byte cache line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
struct ConnSlot6 {
    key: Key6,
    m: Meta,
}

/// A connection-table slot of either family.
trait Slot: TableSlot {
    fn new(key: Self::Key, m: Meta) -> Self;
    fn meta(&self) -> &Meta;
    fn meta_mut(&mut self) -> &mut Meta;
}

macro_rules! conn_slot {
    ($slot:ident, $key:ty) => {
        impl TableSlot for $slot {
            type Key = $key;
            #[inline]
            fn free() -> Self {
                $slot {
                    key: <$key>::default(),
                    m: FREE_META,
                }
            }
            #[inline]
            fn is_free(&self) -> bool {
                self.m.entry == FREE
            }
            #[inline]
            fn key(&self) -> $key {
                self.key
            }
        }
        impl Slot for $slot {
            #[inline]
            fn new(key: $key, m: Meta) -> Self {
                $slot { key, m }
            }
            #[inline]
            fn meta(&self) -> &Meta {
                &self.m
            }
            #[inline]
            fn meta_mut(&mut self) -> &mut Meta {
                &mut self.m
            }
        }
    };
}

conn_slot!(ConnSlot, u128);
conn_slot!(ConnSlot6, Key6);

/// The IPv4 connection key: protocol, trusted-side address and port (ICMP
/// echo: identifier), untrusted-side address and port, in sort order.
#[inline]
fn conn_key(proto: u8, a: u32, ap: u16, b: u32, bp: u16) -> u128 {
    ((proto as u128) << 96)
        | ((a as u128) << 64)
        | ((ap as u128) << 48)
        | ((b as u128) << 16)
        | bp as u128
}

/// The parts of an IPv4 connection key: protocol, trusted address and
/// port, untrusted address and port.
fn key_parts(k: u128) -> (u8, u32, u16, u32, u16) {
    (
        (k >> 96) as u8,
        (k >> 64) as u32,
        (k >> 48) as u16,
        (k >> 16) as u32,
        k as u16,
    )
}

/// The IPv6 connection key: protocol, trusted address and port,
/// untrusted address and port; 48 bytes. The addresses hold the packet's
/// bytes in native order (`u128::from_ne_bytes`: no byte swap per packet);
/// [`Key6::sort_key`] gives the order the `table` handler lists.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Key6 {
    proto: u8,
    a: u128,
    ap: u16,
    b: u128,
    bp: u16,
}

impl std::hash::Hash for Key6 {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u128(self.a);
        state.write_u128(self.b);
        state.write_u64(((self.ap as u64) << 32) | ((self.bp as u64) << 16) | self.proto as u64);
    }
}

impl Key for Key6 {}

impl Key6 {
    /// Protocol, then trusted and untrusted address (as numbers) and port.
    fn sort_key(&self) -> (u8, u128, u16, u128, u16) {
        let be = |a: u128| u128::from_be_bytes(a.to_ne_bytes());
        (self.proto, be(self.a), self.ap, be(self.b), self.bp)
    }
}

/// What differs between the families: addresses, keys, slots and the
/// ICMP messages the firewall reads.
trait Family {
    type Addr: Copy;
    type Slot: Slot;
    /// The ICMP protocol of the family (1 or 58).
    const ICMP: u8;
    /// The echo request type.
    const ECHO_REQUEST: u8;
    /// The echo reply type.
    const ECHO_REPLY: u8;
    fn key(
        proto: u8,
        a: Self::Addr,
        ap: u16,
        b: Self::Addr,
        bp: u16,
    ) -> <Self::Slot as TableSlot>::Key;
    /// True for the error messages that quote a packet.
    fn is_error(icmp_type: u8) -> bool;
}

/// IPv4.
struct V4;
/// IPv6.
struct V6;

impl Family for V4 {
    type Addr = u32;
    type Slot = ConnSlot;
    const ICMP: u8 = ICMP;
    const ECHO_REQUEST: u8 = 8;
    const ECHO_REPLY: u8 = 0;
    #[inline(always)]
    fn key(proto: u8, a: u32, ap: u16, b: u32, bp: u16) -> u128 {
        conn_key(proto, a, ap, b, bp)
    }
    #[inline(always)]
    fn is_error(t: u8) -> bool {
        // Unreachable, source quench, redirect, time exceeded, parameter
        // problem.
        matches!(t, 3 | 4 | 5 | 11 | 12)
    }
}

impl Family for V6 {
    type Addr = u128;
    type Slot = ConnSlot6;
    const ICMP: u8 = ICMPV6;
    const ECHO_REQUEST: u8 = 128;
    const ECHO_REPLY: u8 = 129;
    #[inline]
    fn key(proto: u8, a: u128, ap: u16, b: u128, bp: u16) -> Key6 {
        Key6 {
            proto,
            a,
            ap,
            b,
            bp,
        }
    }
    #[inline]
    fn is_error(t: u8) -> bool {
        // Destination unreachable, packet too big, time exceeded,
        // parameter problem.
        matches!(t, 1..=4)
    }
}

/// The parts of a packet the firewall looks at.
struct Parsed<F: Family> {
    proto: u8,
    src: F::Addr,
    dst: F::Addr,
    sport: u16,
    dport: u16,
    /// TCP flags or ICMP type.
    flags: u8,
    /// For ICMP errors: the key of the connection the quoted packet
    /// belongs to (trusted-side source first), if it quotes enough.
    related: Option<<F::Slot as TableSlot>::Key>,
}

/// The connections of one family: entries, their table and timer wheel,
/// and the counters of what passed without opening state.
struct Tracker<F: Family> {
    conns: Slab<Conn<<F::Slot as TableSlot>::Key>>,
    table: SlotTable<F::Slot>,
    wheel: TimerWheel,
    related: u64,
    untracked: u64,
}

impl<F: Family> Tracker<F> {
    fn new(capacity: usize) -> Self {
        Tracker {
            conns: Slab::new(capacity),
            table: SlotTable::new(capacity),
            wheel: TimerWheel::new(capacity, WHEEL_UNIT, WHEEL_BUCKETS),
            related: 0,
            untracked: 0,
        }
    }

    fn clear(&mut self) {
        self.conns.clear();
        self.table.clear();
        self.wheel.clear();
        self.related = 0;
        self.untracked = 0;
    }

    /// Takes `old`'s connections when its table has the same size.
    fn take(&mut self, old: &mut Tracker<F>) -> bool {
        if old.conns.capacity() != self.conns.capacity() || old.conns.is_empty() {
            return false;
        }
        std::mem::swap(&mut self.conns, &mut old.conns);
        std::mem::swap(&mut self.table, &mut old.table);
        std::mem::swap(&mut self.wheel, &mut old.wheel);
        true
    }

    fn remove(&mut self, i: u32) {
        let c = *self.conns.get(i);
        self.table.remove(c.key);
        self.wheel.unlink(i);
        self.conns.free(i);
    }

    /// The slot position of the live connection under `k`; an expired one
    /// is removed.
    #[inline]
    fn lookup(&mut self, k: <F::Slot as TableSlot>::Key, now: i64) -> Option<usize> {
        let pos = self.table.find(k)?;
        let s = self.table.slot(pos).meta();
        if s.expiry <= now {
            let i = s.entry;
            self.remove(i);
            return None;
        }
        Some(pos)
    }

    /// Sets the state of the connection in slot `pos` and its expiry from
    /// it. A packet that changes neither (the same clock) writes nothing;
    /// one that only moves the expiry later writes the slot alone. The
    /// entry and the wheel are touched only when the expiry moves earlier
    /// than where the connection is queued (a state with a shorter
    /// timeout): it is queued no later than its old expiry.
    #[inline]
    fn set_state(&mut self, tm: &[i64; NSTATES], pos: usize, state: u8, fins: u8, now: i64) {
        let expiry = now + tm[state as usize];
        let s = self.table.slot_mut(pos).meta_mut();
        if s.expiry == expiry && s.state == state && s.fins == fins {
            return;
        }
        let earlier = expiry < s.expiry;
        s.state = state;
        s.fins = fins;
        s.expiry = expiry;
        if earlier {
            let i = s.entry;
            let c = self.conns.get_mut(i);
            if expiry < c.queued {
                c.queued = expiry;
                self.wheel.unlink(i);
                self.wheel.insert(i, expiry, now);
            }
        }
    }

    fn open(
        &mut self,
        tm: &[i64; NSTATES],
        k: <F::Slot as TableSlot>::Key,
        state: u8,
        now: i64,
    ) -> Result<(), Reason> {
        let expiry = now + tm[state as usize];
        let i = self
            .conns
            .alloc(Conn {
                key: k,
                queued: expiry,
            })
            .ok_or(Reason::TableFull)?;
        self.table.insert(F::Slot::new(
            k,
            Meta {
                expiry,
                entry: i,
                state,
                fins: 0,
            },
        ));
        self.wheel.insert(i, expiry, now);
        Ok(())
    }

    #[inline]
    fn trusted(&mut self, tm: &[i64; NSTATES], h: &Parsed<F>, now: i64) -> Result<(), Reason> {
        let icmp = h.proto == F::ICMP;
        let (ap, bp) = if icmp {
            if h.flags != F::ECHO_REQUEST {
                self.untracked += 1;
                return Ok(());
            }
            (h.sport, 0)
        } else {
            (h.sport, h.dport)
        };
        let k = F::key(h.proto, h.src, ap, h.dst, bp);
        let Some(pos) = self.lookup(k, now) else {
            let state = match h.proto {
                TCP if h.flags & (TH_SYN | TH_ACK | TH_RST) == TH_SYN => SYN_SENT,
                TCP => return Err(Reason::NoConnection),
                UDP => UDP_UNREPLIED,
                _ if icmp => ICMP_ECHO,
                _ => OTHER,
            };
            return self.open(tm, k, state, now);
        };
        let c = *self.table.slot(pos).meta();
        let (state, fins) = if h.proto == TCP {
            tcp_next(c.state, c.fins, true, h.flags).ok_or(Reason::Invalid)?
        } else {
            (c.state, c.fins)
        };
        self.set_state(tm, pos, state, fins, now);
        Ok(())
    }

    #[inline]
    fn untrusted(&mut self, tm: &[i64; NSTATES], h: &Parsed<F>, now: i64) -> Result<(), Reason> {
        let icmp = h.proto == F::ICMP;
        let k = if icmp {
            if h.flags == F::ECHO_REPLY {
                F::key(h.proto, h.dst, h.sport, h.src, 0)
            } else if F::is_error(h.flags) {
                let k = h.related.ok_or(Reason::NoConnection)?;
                self.lookup(k, now).ok_or(Reason::NoConnection)?;
                self.related += 1;
                return Ok(());
            } else {
                return Err(Reason::Unsolicited);
            }
        } else {
            F::key(h.proto, h.dst, h.dport, h.src, h.sport)
        };
        let Some(pos) = self.lookup(k, now) else {
            return Err(match h.proto {
                TCP if h.flags & (TH_SYN | TH_ACK | TH_RST) == TH_SYN => Reason::Unsolicited,
                TCP => Reason::NoConnection,
                _ if icmp => Reason::NoConnection,
                _ => Reason::Unsolicited,
            });
        };
        let c = *self.table.slot(pos).meta();
        let (state, fins) = match h.proto {
            TCP => tcp_next(c.state, c.fins, false, h.flags).ok_or(Reason::Invalid)?,
            UDP => (UDP_REPLIED, 0),
            _ => (c.state, c.fins),
        };
        self.set_state(tm, pos, state, fins, now);
        Ok(())
    }

    /// Collects up to `budget` due connections; returns how many budget
    /// units are left, and when the wheel is due next (`None`: empty).
    fn expire(&mut self, now: i64, mut budget: usize) -> (usize, Option<i64>) {
        while budget > 0 {
            let Some(i) = self.wheel.pop_due(now) else {
                break;
            };
            budget -= 1;
            let k = self.conns.get(i).key;
            let e = self
                .table
                .find(k)
                .map_or(i64::MIN, |pos| self.table.slot(pos).meta().expiry);
            if e <= now {
                self.remove(i);
            } else {
                self.conns.get_mut(i).queued = e;
                self.wheel.insert(i, e, now);
            }
        }
        let next = (!self.wheel.is_empty()).then(|| self.wheel.next_due(now));
        (budget, next)
    }

    /// The table's slots, in table order.
    fn slots(&self) -> Vec<F::Slot> {
        self.table.iter().copied().collect()
    }
}

fn addr(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// The parts of the checked IPv4 packet `ip` (over `iph`).
#[inline(always)]
fn parse(iph: &[u8], ip: &Ipv4Packet<&[u8]>) -> Result<Parsed<V4>, Reason> {
    if ip.is_fragment() {
        return Err(Reason::Fragment);
    }
    let f = Flow::from_ipv4(ip).map_err(|_| Reason::Malformed)?;
    let t = &f.tuple;
    let mut h = Parsed {
        proto: t.proto,
        src: t.src_v4(),
        dst: t.dst_v4(),
        sport: t.sport,
        dport: t.dport,
        flags: f.tcp_flags,
        related: None,
    };
    if t.proto == ICMP {
        h.flags = f.icmp_type;
        if V4::is_error(f.icmp_type) {
            h.related = quoted_key(&iph[f.l4_offset + ICMP_HEADER_LEN..], h.dst);
        }
    }
    Ok(h)
}

/// The connection key of the packet quoted in an ICMP error sent to
/// `to`: the quoted packet went from `to` (trusted side) outwards.
fn quoted_key(q: &[u8], to: u32) -> Option<u128> {
    let f = Flow::parse_ipv4_quote(q).ok()?;
    let t = &f.tuple;
    let (s, d) = (t.src_v4(), t.dst_v4());
    if s != to {
        return None;
    }
    Some(match t.proto {
        ICMP if f.icmp_type == 8 => conn_key(ICMP, s, t.sport, d, 0),
        ICMP => return None,
        _ => conn_key(t.proto, s, t.sport, d, t.dport),
    })
}

/// What an IPv6 packet is to the firewall: a packet to track, or a
/// Neighbor Discovery / MLD message for the ND policy (`true`: a hop
/// limit that ND allows).
enum Parsed6 {
    Track(Parsed<V6>),
    Nd(bool),
}

/// ICMPv6 types of Neighbor Discovery (RFC 4861: router solicitation and
/// advertisement, neighbor solicitation and advertisement, redirect).
fn is_nd(t: u8) -> bool {
    matches!(t, 133..=137)
}

/// ICMPv6 types of Multicast Listener Discovery (RFC 2710 query, report,
/// done; RFC 3810 version 2 report).
fn is_mld(t: u8) -> bool {
    matches!(t, 130..=132 | 143)
}

fn parse6(iph: &[u8]) -> Result<Parsed6, Reason> {
    let f = Flow::parse_ipv6(iph).map_err(|_| Reason::Malformed)?;
    if f.fragment != Fragment::Unfragmented {
        return Err(Reason::Fragment);
    }
    let t = &f.tuple;
    let mut h = Parsed {
        proto: t.proto,
        src: u128::from_ne_bytes(t.src),
        dst: u128::from_ne_bytes(t.dst),
        sport: t.sport,
        dport: t.dport,
        flags: f.tcp_flags,
        related: None,
    };
    if t.proto == ICMPV6 {
        let ty = f.icmp_type;
        if is_nd(ty) {
            // RFC 4861: a node drops ND messages whose hop limit is not
            // 255 (they came from off the link).
            return Ok(Parsed6::Nd(iph[7] == 255));
        }
        if is_mld(ty) {
            return Ok(Parsed6::Nd(true));
        }
        h.flags = ty;
        if V6::is_error(ty) {
            h.related = quoted_key6(&iph[f.l4_offset + ICMP6_HEADER_LEN..], h.dst);
        }
    }
    Ok(Parsed6::Track(h))
}

/// The connection key of the IPv6 packet quoted in an ICMPv6 error sent
/// to `to` (see [`quoted_key`]).
fn quoted_key6(q: &[u8], to: u128) -> Option<Key6> {
    let f = Flow::parse_ipv6_quote(q).ok()?;
    if f.fragment == Fragment::Later {
        return None;
    }
    let t = &f.tuple;
    let (s, d) = (u128::from_ne_bytes(t.src), u128::from_ne_bytes(t.dst));
    if s != to {
        return None;
    }
    Some(match t.proto {
        ICMPV6 if f.icmp_type == V6::ECHO_REQUEST => V6::key(ICMPV6, s, t.sport, d, 0),
        ICMPV6 => return None,
        _ => V6::key(t.proto, s, t.sport, d, t.dport),
    })
}

/// The key of the connection an IPv4 packet entering on `port` would
/// belong to, read with as few checks as possible: it only picks the
/// table slot to warm (see [`StatefulFirewall::warm`]).
#[inline]
fn hint_key(port: usize, d: &[u8], first: u8) -> Option<u128> {
    let hl = ((first & 15) as usize) * 4;
    let iph = d.get(..20)?;
    let l4 = d.get(hl..hl + 8)?;
    let (proto, src, dst) = (iph[9], addr(iph, 12), addr(iph, 16));
    let (a, b) = if port == 0 { (src, dst) } else { (dst, src) };
    Some(match proto {
        TCP | UDP => {
            let (sp, dp) = (be16(l4, 0), be16(l4, 2));
            let (ap, bp) = if port == 0 { (sp, dp) } else { (dp, sp) };
            conn_key(proto, a, ap, b, bp)
        }
        ICMP => conn_key(ICMP, a, be16(l4, 4), b, 0),
        _ => conn_key(proto, a, 0, b, 0),
    })
}

/// The same for an IPv6 packet without extension headers (others are not
/// warmed).
#[inline]
fn hint_key6(port: usize, d: &[u8]) -> Option<Key6> {
    let iph = d.get(..40)?;
    let l4 = d.get(40..48)?;
    let proto = iph[6];
    let word = |o: usize| u128::from_ne_bytes(iph[o..o + 16].try_into().unwrap_or([0; 16]));
    let (src, dst) = (word(8), word(24));
    let (a, b) = if port == 0 { (src, dst) } else { (dst, src) };
    Some(match proto {
        TCP | UDP => {
            let (sp, dp) = (be16(l4, 0), be16(l4, 2));
            let (ap, bp) = if port == 0 { (sp, dp) } else { (dp, sp) };
            V6::key(proto, a, ap, b, bp)
        }
        ICMPV6 => V6::key(ICMPV6, a, be16(l4, 4), b, 0),
        _ => V6::key(proto, a, 0, b, 0),
    })
}

/// The TCP state after a packet with `flags` from the trusted side
/// (`orig`) or the other; `None` if the packet is out of state.
fn tcp_next(state: u8, fins: u8, orig: bool, flags: u8) -> Option<(u8, u8)> {
    let syn = flags & TH_SYN != 0;
    let ack = flags & TH_ACK != 0;
    let fin = flags & TH_FIN != 0;
    if flags & TH_RST != 0 {
        return Some((CLOSED, fins));
    }
    let my_fin = if orig { FIN_ORIG } else { FIN_REPLY };
    let with_fin = |st: u8| {
        if !fin {
            return (st, fins);
        }
        let f = fins | my_fin;
        (
            if f == FIN_ORIG | FIN_REPLY {
                CLOSING
            } else {
                FIN_WAIT
            },
            f,
        )
    };
    match state {
        SYN_SENT => match (orig, syn, ack) {
            (true, true, false) => Some((SYN_SENT, 0)),
            (false, true, true) => Some((SYN_RECV, 0)),
            _ => None,
        },
        SYN_RECV => match (orig, syn, ack) {
            (true, false, true) => Some(with_fin(ESTABLISHED)),
            (true, true, false) | (false, true, true) => Some((SYN_RECV, 0)),
            _ => None,
        },
        ESTABLISHED | FIN_WAIT => (!syn).then(|| with_fin(state)),
        CLOSING => {
            if syn {
                None
            } else if ack && !fin {
                Some((TIME_WAIT, fins))
            } else {
                Some((CLOSING, fins))
            }
        }
        TIME_WAIT | CLOSED => match (orig, syn, ack) {
            (true, true, false) => Some((SYN_SENT, 0)),
            (_, false, _) if state == TIME_WAIT => Some((TIME_WAIT, fins)),
            _ => None,
        },
        _ => None,
    }
}

/// A connection-tracking firewall (see [`StatefulFirewall::SPEC`]).
pub struct StatefulFirewall {
    timeouts: [i64; NSTATES],
    drop_port: Option<usize>,
    /// IPv4 connections: 32-byte slots keyed by a `u128`, untouched by
    /// IPv6 traffic.
    v4: Tracker<V4>,
    /// IPv6 connections: 64-byte slots keyed by the two full addresses.
    v6: Tracker<V6>,
    /// Whether batches warm the tables first: only when they are too large
    /// to stay in the cache (for a small one the extra pass costs more).
    warm: bool,
    /// Whether Neighbor Discovery and MLD pass (the `ND` keyword).
    nd: bool,
    nd_packets: u64,
    drops: [u64; NREASONS],
    passed: [u64; 2],
    last_now: i64,
}

impl StatefulFirewall {
    /// The class description.
    pub const SPEC: Spec = Spec::new("StatefulFirewall")
        .ports("2/2-3")
        .processing("h/h")
        .keywords(&[
            "CAPACITY",
            "CAPACITY6",
            "ND",
            "TCP_SYN_SENT",
            "TCP_SYN_RECV",
            "TCP_ESTABLISHED",
            "TCP_FIN_WAIT",
            "TCP_CLOSING",
            "TCP_TIME_WAIT",
            "TCP_CLOSED",
            "UDP",
            "UDP_STREAM",
            "ICMP",
            "OTHER",
        ])
        .profile(
            ActionProfile::reads(FIELDS_5TUPLE | crate::FIELD_PAYLOAD | crate::FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "StatefulFirewall([KEYWORDS])\n\n\
             Tracks connections and lets in only traffic that belongs to connections\n\
             opened from the trusted side, for IPv4 and IPv6 alike. Packets must have\n\
             their IP header annotated (CheckIPHeader, CheckIP6Header or MarkIPHeader\n\
             before it); the version nibble picks the family. Packets are not modified.\n\n\
             Input 0 receives packets from the trusted side. They may open connections\n\
             (put an IPFilter in front of input 0 for the policy): a TCP SYN opens a TCP\n\
             connection, any UDP packet a UDP pseudo-connection, an ICMP or ICMPv6 echo\n\
             request an ICMP one (keyed by identifier), SCTP, DCCP and UDP-Lite a pseudo-\n\
             connection keyed by ports, any other IP protocol a pseudo-connection\n\
             between the two addresses. Other ICMP and ICMPv6 messages from the\n\
             trusted side pass without state (untracked). Input 1 receives packets from\n\
             the untrusted side; only those of tracked connections pass (TCP segments in\n\
             state, UDP replies, echo replies, and ICMP errors quoting a packet of a\n\
             tracked connection, counted as related: ICMP destination unreachable,\n\
             source quench, redirect, time exceeded, parameter problem; ICMPv6\n\
             destination unreachable, packet too big, time exceeded, parameter\n\
             problem). Other ICMP and ICMPv6 messages from the untrusted side are\n\
             dropped as unsolicited.\n\n\
             IPv6: the extension-header chain is walked (at most 16 headers) to the\n\
             transport header; a longer chain, a Hop-by-Hop header anywhere but first,\n\
             or a header cut short is dropped as malformed. Neighbor Discovery (ICMPv6\n\
             133-137) and MLD (130-132, 143) follow the ND keyword on both inputs: by\n\
             default they pass without state (nd_packets), since a dual-stack network\n\
             does not work without them; ND with a hop limit other than 255 (sent from\n\
             off the link, RFC 4861) is dropped as invalid. With ND false they are\n\
             dropped (nd_drops). IPv6 connections live in a table of their own (64-byte\n\
             slots holding both addresses), so that the IPv4 table keeps its 32-byte\n\
             slots and IPv4 traffic never reads an IPv6 slot.\n\n\
             TCP states: SYN_SENT (SYN from the trusted side), SYN_RECV (SYN-ACK back),\n\
             ESTABLISHED (the trusted side's ACK), FIN_WAIT (FIN from one side),\n\
             CLOSING (FIN from both), TIME_WAIT (an ACK after both FINs), CLOSED (a RST\n\
             from either side). A SYN from the trusted side reopens a connection in\n\
             TIME_WAIT or CLOSED. Out-of-state segments (a SYN on an established\n\
             connection, data before the handshake completes, a SYN-ACK from the\n\
             trusted side) are dropped as invalid. Sequence numbers are not checked.\n\
             Non-SYN TCP segments of unknown connections (a bare ACK, a RST, a FIN)\n\
             are dropped as no_connection on either input; new connections from the\n\
             untrusted side (SYN, UDP, echo request) as unsolicited. Fragments, the\n\
             first (which alone would open state for a datagram whose rest is\n\
             dropped) and later ones, IPv4 or IPv6 (a fragment header with an offset or\n\
             the M flag; an atomic fragment is whole), are dropped (reassemble first).\n\n\
             Each state has a timeout (keywords below); the connection expires when no\n\
             packet refreshed it in that time. Expiry runs from a timer wheel of\n\
             100 ms units that refreshing packets never touch (no table scan); expired\n\
             connections are collected within about 100 ms, and a packet finding an\n\
             expired connection treats it as gone. The tables are allocated once for\n\
             CAPACITY IPv4 and CAPACITY6 IPv6 connections (open addressing, no\n\
             allocation per packet); new connections beyond them are dropped\n\
             (table_full_drops).\n\n\
             Ports: input 0 (trusted) to output 0, input 1 (untrusted) to output 1;\n\
             optional output 2 gets dropped packets (else they are freed). All push.\n\n\
             Keywords (timeouts in seconds):\n\
             \x20 CAPACITY  maximum tracked IPv4 connections (default 65536)\n\
             \x20 CAPACITY6 maximum tracked IPv6 connections (default CAPACITY; 0: none,\n\
             \x20           every IPv6 connection is refused as table_full)\n\
             \x20 ND        bool: pass Neighbor Discovery and MLD (default true)\n\
             \x20 TCP_SYN_SENT 120, TCP_SYN_RECV 60, TCP_ESTABLISHED 432000,\n\
             \x20 TCP_FIN_WAIT 120, TCP_CLOSING 60, TCP_TIME_WAIT 120, TCP_CLOSED 10,\n\
             \x20 UDP 30 (no reply seen yet), UDP_STREAM 180 (replied), ICMP 30 (ICMP and\n\
             \x20 ICMPv6 echo), OTHER 600\n\n\
             Handlers:\n\
             \x20 nconnections (read)  tracked connections, both families\n\
             \x20 nconnections6 (read) tracked IPv6 connections\n\
             \x20 capacity, capacity6 (read)  CAPACITY, CAPACITY6\n\
             \x20 table (read)         one line per connection, IPv4 then IPv6, each by\n\
             \x20                      protocol and addresses:\n\
             \x20                      `PROTO TRUSTED:PORT UNTRUSTED:PORT STATE expires=+SECS`,\n\
             \x20                      IPv6 addresses in RFC 5952 form in brackets,\n\
             \x20                      PROTO tcp, udp, icmp, icmp6 or protoN\n\
             \x20 trusted_packets, untrusted_packets (read)  packets passed per input\n\
             \x20 related (read)       ICMP and ICMPv6 errors let in as related\n\
             \x20 untracked (read)     trusted-side ICMP and ICMPv6 passed without state\n\
             \x20 nd_packets (read)    Neighbor Discovery and MLD messages passed\n\
             \x20 unsolicited_drops, no_connection_drops, invalid_drops, malformed_drops,\n\
             \x20 fragment_drops, table_full_drops, nd_drops (read)  drops by reason\n\
             \x20 drops (read)         all drops\n\
             \x20 reset (write)        forget every connection and zero the counters",
        );

    /// Configures a `StatefulFirewall`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let capacity: usize = a.read_or("CAPACITY", 65_536usize)?;
        let capacity6: Option<usize> = a.read("CAPACITY6")?;
        let nd: bool = a.read_or("ND", true)?;
        let mut timeouts = [0i64; NSTATES];
        for (t, (kw, def)) in timeouts.iter_mut().zip(TIMEOUTS) {
            let s: Seconds = a.read_or(kw, Seconds(def))?;
            if s.0 <= 0.0 {
                return Err(ConfigError::new(format!("{kw}: expected a positive time")));
            }
            *t = (s.0 * 1e9) as i64;
        }
        a.finish()?;
        if capacity == 0 || capacity > 1 << 26 {
            return Err(ConfigError::new("CAPACITY: expected 1 to 67108864"));
        }
        let capacity6 = capacity6.unwrap_or(capacity);
        if capacity6 > 1 << 26 {
            return Err(ConfigError::new("CAPACITY6: expected 0 to 67108864"));
        }
        Ok(Box::new(StatefulFirewall {
            timeouts,
            drop_port: (ctx.noutputs > 2).then_some(2),
            v4: Tracker::new(capacity),
            v6: Tracker::new(capacity6),
            warm: capacity.max(capacity6) > WARM_ABOVE,
            nd,
            nd_packets: 0,
            drops: [0; NREASONS],
            passed: [0; 2],
            last_now: 0,
        }))
    }

    /// An IPv6 packet (kept out of line: the IPv4 path does not carry it).
    #[inline(never)]
    fn action6(&mut self, port: usize, d: &[u8], now: i64) -> Result<(), Reason> {
        match parse6(d)? {
            Parsed6::Track(h) if port == 0 => self.v6.trusted(&self.timeouts, &h, now),
            Parsed6::Track(h) => self.v6.untrusted(&self.timeouts, &h, now),
            Parsed6::Nd(_) if !self.nd => Err(Reason::Nd),
            Parsed6::Nd(false) => Err(Reason::Invalid),
            Parsed6::Nd(true) => {
                self.nd_packets += 1;
                Ok(())
            }
        }
    }

    #[inline]
    fn action(&mut self, port: usize, p: &Packet, now: i64) -> Option<usize> {
        // IPv4 first: the version test IPv6 needs is on its error path.
        let r = match p.network_data() {
            Some(d) => match Ipv4Packet::new_checked(d) {
                Ok(ip) => parse(d, &ip).and_then(|h| {
                    if port == 0 {
                        self.v4.trusted(&self.timeouts, &h, now)
                    } else {
                        self.v4.untrusted(&self.timeouts, &h, now)
                    }
                }),
                Err(WireError::BadVersion) if d[0] >> 4 == 6 => self.action6(port, d, now),
                Err(_) => Err(Reason::Malformed),
            },
            None => Err(Reason::Malformed),
        };
        match r {
            Ok(()) => {
                let o = port.min(1);
                self.passed[o] += 1;
                Some(o)
            }
            Err(why) => {
                self.drops[why as usize] += 1;
                self.drop_port
            }
        }
    }

    /// Prefetches the table slots a batch needs before the packets are
    /// processed, none waiting for another, so that a large table costs
    /// about one memory latency per batch rather than one per packet. A
    /// packet of a known connection in a steady state touches no other
    /// line of the table.
    fn warm(&self, port: usize, batch: &Batch) {
        for p in batch.iter() {
            self.warm_one(port, p);
        }
    }

    /// Prefetches the table entry packet `p` from input `port` will look
    /// up.
    #[inline]
    fn warm_one(&self, port: usize, p: &Packet) {
        let Some(d) = p.network_data() else { return };
        let Some(&first) = d.first() else { return };
        if first >> 4 == 6 {
            if let Some(k) = hint_key6(port, d) {
                self.v6.table.prefetch(k);
            }
        } else if let Some(k) = hint_key(port, d, first) {
            self.v4.table.prefetch(k);
        }
    }

    fn table_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        // Key order is protocol, then trusted and untrusted address and port.
        let mut v4 = self.v4.slots();
        v4.sort_by_key(|c| c.key);
        for c in v4 {
            let (proto, a, ap, b, bp) = key_parts(c.key);
            let proto = match proto {
                TCP => "tcp".to_string(),
                UDP => "udp".to_string(),
                ICMP => "icmp".to_string(),
                p => format!("proto{p}"),
            };
            let left = (c.m.expiry - self.last_now) as f64 / 1e9;
            let _ = writeln!(
                s,
                "{proto} {}:{} {}:{} {} expires=+{left:.3}",
                ip(a),
                ap,
                ip(b),
                bp,
                STATE_NAMES[c.m.state as usize]
            );
        }
        let mut v6 = self.v6.slots();
        v6.sort_by_key(|c| c.key.sort_key());
        for c in v6 {
            let k = c.key;
            let proto = match k.proto {
                TCP => "tcp".to_string(),
                UDP => "udp".to_string(),
                ICMPV6 => "icmp6".to_string(),
                p => format!("proto{p}"),
            };
            let left = (c.m.expiry - self.last_now) as f64 / 1e9;
            let _ = writeln!(
                s,
                "{proto} [{}]:{} [{}]:{} {} expires=+{left:.3}",
                format_ip6(&k.a.to_ne_bytes()),
                k.ap,
                format_ip6(&k.b.to_ne_bytes()),
                k.bp,
                STATE_NAMES[c.m.state as usize]
            );
        }
        s
    }
}

impl Element for StatefulFirewall {
    fn one_for_one(&self) -> bool {
        true
    }

    /// Hot-swap: the old firewall's connections of each family whose table
    /// has the same size (the new rules and timeouts apply from now on; the
    /// counters start again from zero).
    fn take_state(&mut self, old: &mut dyn Element, _ctx: &crate::TakeCtx<'_>) -> Option<String> {
        let old = crate::old_as::<StatefulFirewall>(old)?;
        let took4 = self.v4.take(&mut old.v4);
        let took6 = self.v6.take(&mut old.v6);
        if !took4 && !took6 {
            return None;
        }
        self.last_now = self.last_now.max(old.last_now);
        Some(format!(
            "{} connections",
            self.v4.conns.len() + self.v6.conns.len()
        ))
    }

    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.last_now = now;
        if self.warm && batch.len() > 1 {
            self.warm(port, batch);
        }
        push_each(batch, out, |p, _| self.action(port, p, now));
    }

    fn push_inputs(&mut self, inputs: &[u16], batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.last_now = now;
        if self.warm {
            for (p, &port) in batch.iter().zip(inputs) {
                self.warm_one(port as usize, p);
            }
        }
        let mut i = 0;
        push_each(batch, out, |p, _| {
            let port = inputs.get(i).copied().unwrap_or(0) as usize;
            i += 1;
            self.action(port, p, now)
        });
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        self.last_now = now;
        let (left, next4) = self.v4.expire(now, EXPIRE_BUDGET);
        if left == 0 {
            return TaskStatus::Busy;
        }
        let (left, next6) = self.v6.expire(now, left);
        if left == 0 {
            return TaskStatus::Busy;
        }
        match (next4, next6) {
            (None, None) => {
                let t = self.timeouts.iter().copied().min().unwrap_or(WHEEL_UNIT);
                TaskStatus::SleepUntil(now + t.max(WHEEL_UNIT))
            }
            (a, b) => TaskStatus::SleepUntil(a.unwrap_or(i64::MAX).min(b.unwrap_or(i64::MAX))),
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        // In `Reason` order.
        const REASONS: [&str; NREASONS] = [
            "unsolicited",
            "no_connection",
            "invalid_state",
            "malformed",
            "fragment",
            "table_full",
            "nd_refused",
        ];
        for (n, r) in self.drops.iter().zip(REASONS) {
            c.drop(r, *n);
        }
        c.count("trusted_packets", self.passed[0]);
        c.count("untrusted_packets", self.passed[1]);
        c.count("related", self.v4.related + self.v6.related);
        c.count("untracked", self.v4.untracked + self.v6.untracked);
        c.count("nd_packets", self.nd_packets);
        c.count(
            "nconnections",
            (self.v4.conns.len() + self.v6.conns.len()) as u64,
        );
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("nconnections"),
            HandlerInfo::read("nconnections6"),
            HandlerInfo::read("capacity"),
            HandlerInfo::read("capacity6"),
            HandlerInfo::read("table"),
            HandlerInfo::read("trusted_packets"),
            HandlerInfo::read("untrusted_packets"),
            HandlerInfo::read("related"),
            HandlerInfo::read("untracked"),
            HandlerInfo::read("nd_packets"),
            HandlerInfo::read("unsolicited_drops"),
            HandlerInfo::read("no_connection_drops"),
            HandlerInfo::read("invalid_drops"),
            HandlerInfo::read("malformed_drops"),
            HandlerInfo::read("fragment_drops"),
            HandlerInfo::read("table_full_drops"),
            HandlerInfo::read("nd_drops"),
            HandlerInfo::read("drops"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if let Some(k) = REASON_HANDLERS.iter().position(|&r| r == name) {
            return Ok(self.drops[k].to_string());
        }
        match name {
            "nconnections" => Ok((self.v4.conns.len() + self.v6.conns.len()).to_string()),
            "nconnections6" => Ok(self.v6.conns.len().to_string()),
            "capacity" => Ok(self.v4.conns.capacity().to_string()),
            "capacity6" => Ok(self.v6.conns.capacity().to_string()),
            "table" => Ok(self.table_text()),
            "trusted_packets" => Ok(self.passed[0].to_string()),
            "untrusted_packets" => Ok(self.passed[1].to_string()),
            "related" => Ok((self.v4.related + self.v6.related).to_string()),
            "untracked" => Ok((self.v4.untracked + self.v6.untracked).to_string()),
            "nd_packets" => Ok(self.nd_packets.to_string()),
            "drops" => Ok(self.drops.iter().sum::<u64>().to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.v4.clear();
                self.v6.clear();
                self.drops = [0; NREASONS];
                self.passed = [0; 2];
                self.nd_packets = 0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, push_at, read, run_task};
    use crate::stateful::testpkt::*;
    use crate::Control;
    use pronto_packet::Pool;

    const IN: &str = "10.0.0.5";
    const OUT: &str = "93.184.216.34";

    fn fw(config: &str) -> Box<dyn Element> {
        configure(
            StatefulFirewall::SPEC.keywords,
            StatefulFirewall::configure,
            config,
            2,
            3,
        )
        .expect("configures")
    }

    /// Pushes one packet into `port` at `now`; returns the output it left
    /// on (2: dropped), checking the bytes were not changed.
    fn send(e: &mut dyn Element, pool: &Pool, port: usize, data: &[u8], now: i64) -> usize {
        let mut ctrl = Control::default();
        let outs = push_at(e, pool, port, vec![pkt(pool, data)], 3, now, &mut ctrl);
        let (o, v) = outs
            .iter()
            .enumerate()
            .find(|(_, v)| !v.is_empty())
            .expect("the packet leaves somewhere");
        assert_eq!(v[0].data(), data, "packets are not modified");
        o
    }

    #[test]
    fn tcp_handshake_data_and_teardown() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("");
        let e = e.as_mut();
        // SYN out, SYN-ACK back, ACK out: established.
        assert_eq!(send(e, &pool, 0, &tcp(IN, 40000, OUT, 443, 0x02), T0), 0);
        assert_eq!(
            read(e, "table"),
            "tcp 10.0.0.5:40000 93.184.216.34:443 SYN_SENT expires=+120.000\n"
        );
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 443, IN, 40000, 0x12), T0), 1);
        assert_eq!(
            read(e, "table"),
            "tcp 10.0.0.5:40000 93.184.216.34:443 SYN_RECV expires=+60.000\n"
        );
        assert_eq!(send(e, &pool, 0, &tcp(IN, 40000, OUT, 443, 0x10), T0), 0);
        assert_eq!(
            read(e, "table"),
            "tcp 10.0.0.5:40000 93.184.216.34:443 ESTABLISHED expires=+432000.000\n"
        );
        // Data both ways.
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 443, IN, 40000, 0x18), T0), 1);
        assert_eq!(send(e, &pool, 0, &tcp(IN, 40000, OUT, 443, 0x18), T0), 0);
        // A SYN on the established connection is out of state.
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 443, IN, 40000, 0x02), T0), 2);
        assert_eq!(read(e, "invalid_drops"), "1");
        // FIN from outside, FIN-ACK from inside, final ACK.
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 443, IN, 40000, 0x11), T0), 1);
        assert!(read(e, "table").contains(" FIN_WAIT expires=+120.000"));
        assert_eq!(send(e, &pool, 0, &tcp(IN, 40000, OUT, 443, 0x11), T0), 0);
        assert!(read(e, "table").contains(" CLOSING expires=+60.000"));
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 443, IN, 40000, 0x10), T0), 1);
        assert!(read(e, "table").contains(" TIME_WAIT expires=+120.000"));
        // A new SYN from inside reopens it.
        assert_eq!(
            send(e, &pool, 0, &tcp(IN, 40000, OUT, 443, 0x02), T0 + SEC),
            0
        );
        assert!(read(e, "table").contains(" SYN_SENT "));
        // RST from outside closes; after that, data is out of state.
        assert_eq!(
            send(e, &pool, 1, &tcp(OUT, 443, IN, 40000, 0x14), T0 + SEC),
            1
        );
        assert!(read(e, "table").contains(" CLOSED expires=+10.000"));
        assert_eq!(
            send(e, &pool, 1, &tcp(OUT, 443, IN, 40000, 0x18), T0 + SEC),
            2
        );
        assert_eq!(read(e, "invalid_drops"), "2");
        assert_eq!(read(e, "trusted_packets"), "5");
        assert_eq!(read(e, "untrusted_packets"), "5");
        assert_eq!(read(e, "nconnections"), "1");
    }

    #[test]
    fn hot_swap_keeps_connections_of_a_same_sized_table() {
        let pool = Pool::new(64).expect("pool");
        let mut old = fw("");
        assert_eq!(
            send(old.as_mut(), &pool, 0, &tcp(IN, 40000, OUT, 443, 0x02), T0),
            0
        );
        let ctx = crate::TakeCtx {
            pool: &pool,
            ninputs: 2,
            noutputs: 3,
        };
        let mut new = fw("");
        assert_eq!(
            new.take_state(old.as_mut(), &ctx).as_deref(),
            Some("1 connections")
        );
        assert_eq!(read(old.as_mut(), "table"), "");
        // The reply is part of the connection the new firewall took over.
        assert_eq!(
            send(new.as_mut(), &pool, 1, &tcp(OUT, 443, IN, 40000, 0x12), T0),
            1
        );
        // A table of another size takes nothing.
        let mut small = fw("CAPACITY 2");
        assert_eq!(small.take_state(new.as_mut(), &ctx), None);
        assert_eq!(
            send(
                small.as_mut(),
                &pool,
                1,
                &tcp(OUT, 443, IN, 40000, 0x12),
                T0
            ),
            2
        );
    }

    #[test]
    fn handshake_violations_are_invalid() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("");
        let e = e.as_mut();
        assert_eq!(send(e, &pool, 0, &tcp(IN, 1, OUT, 80, 0x02), T0), 0);
        // Data from outside before the SYN-ACK.
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 80, IN, 1, 0x18), T0), 2);
        // A SYN-ACK from the trusted side.
        assert_eq!(send(e, &pool, 0, &tcp(IN, 1, OUT, 80, 0x12), T0), 2);
        // Retransmitted SYN is fine.
        assert_eq!(send(e, &pool, 0, &tcp(IN, 1, OUT, 80, 0x02), T0), 0);
        assert_eq!(read(e, "invalid_drops"), "2");
    }

    #[test]
    fn unsolicited_and_unknown_packets_are_dropped_by_reason() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("");
        let e = e.as_mut();
        // New connections from outside.
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 5555, IN, 22, 0x02), T0), 2);
        assert_eq!(send(e, &pool, 1, &udp(OUT, 53, IN, 5353), T0), 2);
        assert_eq!(send(e, &pool, 1, &icmp(OUT, IN, 8, 1), T0), 2);
        assert_eq!(read(e, "unsolicited_drops"), "3");
        // Segments of unknown connections (bare ACK, RST, FIN), an echo
        // reply nobody asked for, an ICMP error about nothing.
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 80, IN, 1234, 0x10), T0), 2);
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 80, IN, 1234, 0x04), T0), 2);
        assert_eq!(send(e, &pool, 1, &tcp(OUT, 80, IN, 1234, 0x11), T0), 2);
        assert_eq!(send(e, &pool, 1, &icmp(OUT, IN, 0, 9), T0), 2);
        let q = udp(IN, 5000, OUT, 53);
        assert_eq!(send(e, &pool, 1, &icmp_error(OUT, IN, 3, &q), T0), 2);
        // From the trusted side, a bare ACK opens nothing either.
        assert_eq!(send(e, &pool, 0, &tcp(IN, 1234, OUT, 80, 0x10), T0), 2);
        assert_eq!(read(e, "no_connection_drops"), "6");
        // Malformed and fragments.
        let mut short = udp(IN, 1, OUT, 2);
        short.truncate(25);
        assert_eq!(send(e, &pool, 0, &short, T0), 2);
        let mut frag = udp(IN, 1, OUT, 2);
        frag[7] = 10; // fragment offset 80 bytes
        assert_eq!(send(e, &pool, 1, &frag, T0), 2);
        assert_eq!(read(e, "malformed_drops"), "1");
        assert_eq!(read(e, "fragment_drops"), "1");
        assert_eq!(read(e, "drops"), "11");
        assert_eq!(read(e, "nconnections"), "0");
        // The counters name each reason, as the handlers count them.
        assert_eq!(
            crate::standard::test_support::drop_counters(e),
            vec![
                ("unsolicited", 3),
                ("no_connection", 6),
                ("invalid_state", 0),
                ("malformed", 1),
                ("fragment", 1),
                ("table_full", 0),
                ("nd_refused", 0),
            ]
        );
        let counts = crate::standard::test_support::count_counters(e);
        assert!(counts.contains(&("untrusted_packets", 0)), "{counts:?}");
        assert!(counts.contains(&("nconnections", 0)), "{counts:?}");
    }

    #[test]
    fn every_fragment_is_dropped_and_counted() {
        // A first fragment (MF, offset 0) carries the UDP header but would
        // open state for a datagram whose later fragments are dropped: it
        // is dropped as a fragment too, before any state is made, and the
        // same whatever its transport header holds (a tiny first fragment).
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("");
        let e = e.as_mut();
        let mut first = udp(IN, 1, OUT, 2);
        first[6] = 0x20;
        assert_eq!(send(e, &pool, 0, &first, T0), 2);
        let mut tiny = tcp(IN, 1, OUT, 2, TH_SYN);
        tiny[6] = 0x20;
        tiny.truncate(28);
        assert_eq!(send(e, &pool, 0, &tiny, T0), 2);
        let mut last = udp(IN, 1, OUT, 2);
        last[7] = 1; // offset 8, MF clear
        assert_eq!(send(e, &pool, 0, &last, T0), 2);
        assert_eq!(read(e, "fragment_drops"), "3");
        assert_eq!(read(e, "malformed_drops"), "0");
        assert_eq!(read(e, "nconnections"), "0");
        // DF alone is not a fragment.
        let mut df = udp(IN, 1, OUT, 2);
        df[6] = 0x40;
        assert_eq!(send(e, &pool, 0, &df, T0), 0);
    }

    #[test]
    fn sctp_is_keyed_by_ports() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("");
        let e = e.as_mut();
        // SCTP common header: ports 2905 -> 2906, verification tag, checksum.
        let sctp = |src: &str, sp: u16, dst: &str, dp: u16| {
            let mut p = udp(src, sp, dst, dp);
            p[9] = 132;
            p.extend_from_slice(&[0, 0, 0, 0]);
            p
        };
        assert_eq!(send(e, &pool, 0, &sctp(IN, 2905, OUT, 2906), T0), 0);
        assert_eq!(send(e, &pool, 0, &sctp(IN, 2907, OUT, 2906), T0), 0);
        assert_eq!(read(e, "nconnections"), "2");
        assert_eq!(send(e, &pool, 1, &sctp(OUT, 2906, IN, 2905), T0), 1);
        assert_eq!(send(e, &pool, 1, &sctp(OUT, 2906, IN, 2909), T0), 2);
        assert_eq!(read(e, "unsolicited_drops"), "1");
        assert!(read(e, "table")
            .contains("proto132 10.0.0.5:2905 93.184.216.34:2906 OTHER expires=+600.000"));
        // An SCTP header cut short of its 12 bytes is malformed.
        let short = sctp(IN, 1, OUT, 2);
        assert_eq!(send(e, &pool, 0, &short[..31], T0), 2);
        assert_eq!(read(e, "malformed_drops"), "1");
    }

    #[test]
    fn udp_icmp_and_related_errors() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("UDP 20, UDP_STREAM 100, ICMP 5");
        let e = e.as_mut();
        let q = udp(IN, 5000, "8.8.8.8", 53);
        assert_eq!(send(e, &pool, 0, &q, T0), 0);
        assert_eq!(
            read(e, "table"),
            "udp 10.0.0.5:5000 8.8.8.8:53 UDP_UNREPLIED expires=+20.000\n"
        );
        assert_eq!(send(e, &pool, 1, &udp("8.8.8.8", 53, IN, 5000), T0), 1);
        assert_eq!(
            read(e, "table"),
            "udp 10.0.0.5:5000 8.8.8.8:53 UDP_REPLIED expires=+100.000\n"
        );
        // Another source port of the same server is not a reply.
        assert_eq!(send(e, &pool, 1, &udp("8.8.8.8", 54, IN, 5000), T0), 2);
        // A port-unreachable about the flow is related.
        assert_eq!(send(e, &pool, 1, &icmp_error("8.8.8.8", IN, 3, &q), T0), 1);
        assert_eq!(read(e, "related"), "1");
        // Ping.
        assert_eq!(send(e, &pool, 0, &icmp(IN, "1.1.1.1", 8, 77), T0), 0);
        assert_eq!(send(e, &pool, 1, &icmp("1.1.1.1", IN, 0, 77), T0), 1);
        assert_eq!(send(e, &pool, 1, &icmp("1.1.1.1", IN, 0, 78), T0), 2);
        // Other ICMP from inside passes untracked.
        assert_eq!(
            send(
                e,
                &pool,
                0,
                &icmp_error(IN, "8.8.8.8", 3, &udp("8.8.8.8", 1, IN, 2)),
                T0
            ),
            0
        );
        assert_eq!(read(e, "untracked"), "1");
        assert_eq!(read(e, "nconnections"), "2");
        // The echo expires after 5 s (collected by the timer within 100 ms),
        // the UDP flow after 100 s.
        let mut ctrl = Control::default();
        let (st, _) = run_task(e, &pool, vec![], 3, T0 + 6 * SEC, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(T0 + 6 * SEC + 77_000_000));
        assert_eq!(read(e, "nconnections"), "1");
        assert_eq!(
            send(e, &pool, 1, &icmp("1.1.1.1", IN, 0, 77), T0 + 6 * SEC),
            2
        );
        // A packet finding an expired flow treats it as gone.
        assert_eq!(
            send(e, &pool, 1, &udp("8.8.8.8", 53, IN, 5000), T0 + 100 * SEC),
            2
        );
        assert_eq!(read(e, "nconnections"), "0");
    }

    #[test]
    fn table_full_and_reset() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("CAPACITY 2");
        let e = e.as_mut();
        assert_eq!(send(e, &pool, 0, &udp(IN, 1, OUT, 53), T0), 0);
        assert_eq!(send(e, &pool, 0, &udp(IN, 2, OUT, 53), T0), 0);
        assert_eq!(send(e, &pool, 0, &udp(IN, 3, OUT, 53), T0), 2);
        assert_eq!(read(e, "table_full_drops"), "1");
        assert_eq!(read(e, "capacity"), "2");
        e.write_handler("reset", "").expect("reset");
        assert_eq!(read(e, "nconnections"), "0");
        assert_eq!(read(e, "drops"), "0");
        assert_eq!(read(e, "table"), "");
        assert_eq!(send(e, &pool, 0, &udp(IN, 3, OUT, 53), T0), 0);
        // Other protocols: a pseudo-connection between the addresses.
        let mut gre = udp(IN, 0, OUT, 0);
        gre[9] = 47;
        assert_eq!(send(e, &pool, 0, &gre, T0), 0);
        let mut back = udp(OUT, 0, IN, 0);
        back[9] = 47;
        assert_eq!(send(e, &pool, 1, &back, T0), 1);
        assert!(
            read(e, "table").contains("proto47 10.0.0.5:0 93.184.216.34:0 OTHER expires=+600.000")
        );
    }

    #[test]
    fn configuration_errors_name_the_argument() {
        let err = |c: &str| {
            config_err(configure(
                StatefulFirewall::SPEC.keywords,
                StatefulFirewall::configure,
                c,
                2,
                2,
            ))
        };
        assert_eq!(
            err("TCP_ESTABLISHED 0"),
            "TCP_ESTABLISHED: expected a positive time"
        );
        assert_eq!(err("CAPACITY 0"), "CAPACITY: expected 1 to 67108864");
        assert_eq!(err("UDP x"), "UDP: expected time in seconds, found `x`");
        assert_eq!(err("5"), "too many arguments: `5` was not expected");
    }

    #[test]
    fn connection_slots_are_one_line() {
        assert_eq!(std::mem::size_of::<ConnSlot>(), 32);
        assert_eq!(std::mem::align_of::<ConnSlot>(), 32);
        let k = conn_key(TCP, 0x0a00_0005, 40000, 0x5db8_d822, 443);
        assert_eq!(key_parts(k), (TCP, 0x0a00_0005, 40000, 0x5db8_d822, 443));
        assert_eq!(std::mem::size_of::<ConnSlot6>(), 64);
        assert_eq!(std::mem::align_of::<ConnSlot6>(), 64);
    }

    /// Pushes a batch into `port` at `now`; returns how many packets left
    /// on each of the three outputs.
    fn send_batch(
        e: &mut dyn Element,
        pool: &Pool,
        port: usize,
        v: &[Vec<u8>],
        now: i64,
    ) -> [usize; 3] {
        let mut ctrl = Control::default();
        let pkts = v.iter().map(|d| pkt(pool, d)).collect();
        let outs = push_at(e, pool, port, pkts, 3, now, &mut ctrl);
        [outs[0].len(), outs[1].len(), outs[2].len()]
    }

    #[test]
    fn batches_of_mixed_packets() {
        let pool = Pool::new(64).expect("pool");
        // Large enough for batches to warm the table first.
        let mut e = fw("CAPACITY 20000");
        let e = e.as_mut();
        let mut gre = udp(IN, 0, OUT, 0);
        gre[9] = 47;
        let mut gre_back = udp(OUT, 0, IN, 0);
        gre_back[9] = 47;
        let mut short = udp(IN, 1, OUT, 2);
        short.truncate(25);
        let syn = tcp(IN, 40000, OUT, 443, 0x02);
        let ack = tcp(IN, 40000, OUT, 443, 0x10);
        let batch = [
            syn.clone(),
            udp(IN, 5000, OUT, 53),
            icmp(IN, OUT, 8, 7),
            gre,
            short,
            tcp(IN, 40001, OUT, 443, 0x10),
        ];
        assert_eq!(send_batch(e, &pool, 0, &batch, T0), [4, 0, 2]);
        let batch = [
            tcp(OUT, 443, IN, 40000, 0x12),
            udp(OUT, 53, IN, 5000),
            icmp(OUT, IN, 0, 7),
            gre_back,
            udp(OUT, 53, IN, 5001),
        ];
        assert_eq!(send_batch(e, &pool, 1, &batch, T0), [0, 4, 1]);
        // The handshake completes and data follows in the same batch.
        let batch = [ack.clone(), ack.clone(), syn, ack.clone()];
        assert_eq!(send_batch(e, &pool, 0, &batch, T0 + SEC), [3, 0, 1]);
        assert_eq!(
            read(e, "table"),
            "icmp 10.0.0.5:7 93.184.216.34:0 ICMP_ECHO expires=+29.000\n\
             tcp 10.0.0.5:40000 93.184.216.34:443 ESTABLISHED expires=+432000.000\n\
             udp 10.0.0.5:5000 93.184.216.34:53 UDP_REPLIED expires=+179.000\n\
             proto47 10.0.0.5:0 93.184.216.34:0 OTHER expires=+599.000\n"
        );
        assert_eq!(read(e, "invalid_drops"), "1");
        assert_eq!(read(e, "no_connection_drops"), "1");
        assert_eq!(read(e, "unsolicited_drops"), "1");
        assert_eq!(read(e, "malformed_drops"), "1");
        // A packet stamped earlier than the last one moves the expiry
        // earlier, and the timer collects the connection then.
        let mut ctrl = Control::default();
        let day = 86_400 * SEC;
        run_task(e, &pool, vec![], 3, T0 + day, &mut ctrl);
        assert_eq!(read(e, "nconnections"), "1");
        assert_eq!(send(e, &pool, 0, &ack, T0 + 20 * SEC), 0);
        run_task(e, &pool, vec![], 3, T0 + 5 * day + SEC, &mut ctrl);
        assert_eq!(read(e, "nconnections"), "1");
        assert_eq!(
            send(e, &pool, 1, &tcp(OUT, 443, IN, 40000, 0x10), T0 + 5 * SEC),
            1
        );
        run_task(e, &pool, vec![], 3, T0 + 5 * day + 6 * SEC, &mut ctrl);
        assert_eq!(read(e, "nconnections"), "0");
        assert_eq!(read(e, "table"), "");
    }

    #[test]
    fn random_packets_never_panic() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("CAPACITY 64");
        push_random_packets(e.as_mut(), &pool, "table");
    }

    const IN6: &str = "2001:db8:1::5";
    const OUT6: &str = "2001:db8:ff::34";

    #[test]
    fn ipv6_tcp_handshake_data_and_teardown() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("");
        let e = e.as_mut();
        let out = |f| tcp6(OUT6, 443, IN6, 40000, f);
        let inn = |f| tcp6(IN6, 40000, OUT6, 443, f);
        assert_eq!(send(e, &pool, 0, &inn(0x02), T0), 0);
        assert_eq!(
            read(e, "table"),
            "tcp [2001:db8:1::5]:40000 [2001:db8:ff::34]:443 SYN_SENT expires=+120.000\n"
        );
        assert_eq!(send(e, &pool, 1, &out(0x12), T0), 1);
        assert_eq!(send(e, &pool, 0, &inn(0x10), T0), 0);
        assert!(read(e, "table").contains(" ESTABLISHED expires=+432000.000"));
        assert_eq!(send(e, &pool, 1, &out(0x18), T0), 1);
        assert_eq!(send(e, &pool, 0, &inn(0x18), T0), 0);
        // Out of state: a SYN on the established connection.
        assert_eq!(send(e, &pool, 1, &out(0x02), T0), 2);
        // Another port of the same server is no connection; a SYN from
        // outside to a new port is unsolicited.
        assert_eq!(send(e, &pool, 1, &tcp6(OUT6, 444, IN6, 40000, 0x10), T0), 2);
        assert_eq!(send(e, &pool, 1, &tcp6(OUT6, 5555, IN6, 22, 0x02), T0), 2);
        // Teardown.
        assert_eq!(send(e, &pool, 1, &out(0x11), T0), 1);
        assert_eq!(send(e, &pool, 0, &inn(0x11), T0), 0);
        assert_eq!(send(e, &pool, 1, &out(0x10), T0), 1);
        assert_eq!(
            read(e, "table"),
            "tcp [2001:db8:1::5]:40000 [2001:db8:ff::34]:443 TIME_WAIT expires=+120.000\n"
        );
        assert_eq!(read(e, "invalid_drops"), "1");
        assert_eq!(read(e, "no_connection_drops"), "1");
        assert_eq!(read(e, "unsolicited_drops"), "1");
        assert_eq!(read(e, "trusted_packets"), "4");
        assert_eq!(read(e, "untrusted_packets"), "4");
        assert_eq!(read(e, "nconnections"), "1");
        assert_eq!(read(e, "nconnections6"), "1");
    }

    #[test]
    fn ipv6_udp_echo_and_related_icmp6_errors() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("UDP 20, UDP_STREAM 100, ICMP 5");
        let e = e.as_mut();
        let dns = "2001:4860:4860::8888";
        let q = udp6(IN6, 5000, dns, 53);
        assert_eq!(send(e, &pool, 0, &q, T0), 0);
        assert_eq!(send(e, &pool, 1, &udp6(dns, 53, IN6, 5000), T0), 1);
        assert_eq!(send(e, &pool, 1, &udp6(dns, 54, IN6, 5000), T0), 2);
        // Packet too big (MTU 1280) and port unreachable quoting the flow,
        // from a router on the way: related.
        let router = "2001:db8:ff::1";
        let ptb = icmp6_msg(router, IN6, 2, [0, 0, 5, 0], &q);
        assert_eq!(send(e, &pool, 1, &ptb, T0), 1);
        assert_eq!(
            send(e, &pool, 1, &icmp6_msg(dns, IN6, 1, [0; 4], &q), T0),
            1
        );
        // Time exceeded and parameter problem quoting a flow nobody
        // opened, or quoting a packet another host sent: no connection.
        let other = udp6(IN6, 5001, dns, 53);
        assert_eq!(
            send(e, &pool, 1, &icmp6_msg(router, IN6, 3, [0; 4], &other), T0),
            2
        );
        let q2 = udp6("2001:db8:1::6", 5000, dns, 53);
        assert_eq!(
            send(e, &pool, 1, &icmp6_msg(router, IN6, 4, [0; 4], &q2), T0),
            2
        );
        // A quote cut inside the UDP header.
        assert_eq!(
            send(
                e,
                &pool,
                1,
                &icmp6_msg(router, IN6, 1, [0; 4], &q[..47]),
                T0
            ),
            2
        );
        assert_eq!(read(e, "related"), "2");
        assert_eq!(read(e, "no_connection_drops"), "3");
        // Ping: the identifier keys it; an error quoting the request is
        // related.
        let req = echo6(IN6, OUT6, 128, 77);
        assert_eq!(send(e, &pool, 0, &req, T0), 0);
        assert_eq!(send(e, &pool, 1, &echo6(OUT6, IN6, 129, 77), T0), 1);
        assert_eq!(send(e, &pool, 1, &echo6(OUT6, IN6, 129, 78), T0), 2);
        assert_eq!(
            send(e, &pool, 1, &icmp6_msg(router, IN6, 3, [0; 4], &req), T0),
            1
        );
        assert_eq!(read(e, "related"), "3");
        // An echo request from outside, and an unknown informational
        // message, are unsolicited; from inside, other ICMPv6 is untracked.
        assert_eq!(send(e, &pool, 1, &echo6(OUT6, IN6, 128, 9), T0), 2);
        assert_eq!(
            send(e, &pool, 1, &icmp6_msg(OUT6, IN6, 200, [0; 4], &[]), T0),
            2
        );
        assert_eq!(read(e, "unsolicited_drops"), "3");
        let unreach = icmp6_msg(IN6, dns, 1, [0; 4], &udp6(dns, 1, IN6, 2));
        assert_eq!(send(e, &pool, 0, &unreach, T0), 0);
        assert_eq!(read(e, "untracked"), "1");
        assert_eq!(
            read(e, "table"),
            "udp [2001:db8:1::5]:5000 [2001:4860:4860::8888]:53 UDP_REPLIED expires=+100.000\n\
             icmp6 [2001:db8:1::5]:77 [2001:db8:ff::34]:0 ICMP_ECHO expires=+5.000\n"
        );
        // The echo expires after 5 s, the UDP flow after 100 s.
        let mut ctrl = Control::default();
        let (st, _) = run_task(e, &pool, vec![], 3, T0 + 6 * SEC, &mut ctrl);
        assert_eq!(st, TaskStatus::SleepUntil(T0 + 6 * SEC + 77_000_000));
        assert_eq!(read(e, "nconnections6"), "1");
        run_task(e, &pool, vec![], 3, T0 + 101 * SEC, &mut ctrl);
        assert_eq!(read(e, "nconnections"), "0");
    }

    #[test]
    fn neighbor_discovery_and_mld_follow_the_nd_keyword() {
        let pool = Pool::new(64).expect("pool");
        let nd = |ty: u8, hlim: u8| {
            let mut p = icmp6_msg("fe80::1", "ff02::1:ff00:5", ty, [0; 4], &a6(IN6));
            p[7] = hlim;
            p
        };
        let mut e = fw("");
        let e = e.as_mut();
        for ty in 133..=137 {
            assert_eq!(send(e, &pool, 1, &nd(ty, 255), T0), 1, "type {ty}");
            assert_eq!(send(e, &pool, 0, &nd(ty, 255), T0), 0, "type {ty}");
        }
        // MLDv2 report and query (hop limit 1).
        assert_eq!(send(e, &pool, 0, &nd(143, 1), T0), 0);
        assert_eq!(send(e, &pool, 1, &nd(130, 1), T0), 1);
        assert_eq!(read(e, "nd_packets"), "12");
        // ND from off the link (hop limit below 255) is invalid.
        assert_eq!(send(e, &pool, 1, &nd(136, 254), T0), 2);
        assert_eq!(read(e, "invalid_drops"), "1");
        assert_eq!(read(e, "nconnections"), "0");
        assert_eq!(read(e, "trusted_packets"), "6");
        assert_eq!(read(e, "untrusted_packets"), "6");
        // ND false: every one dropped and counted as nd_drops.
        let mut e = fw("ND false");
        let e = e.as_mut();
        assert_eq!(send(e, &pool, 1, &nd(135, 255), T0), 2);
        assert_eq!(send(e, &pool, 0, &nd(136, 255), T0), 2);
        assert_eq!(send(e, &pool, 0, &nd(131, 1), T0), 2);
        assert_eq!(read(e, "nd_drops"), "3");
        assert_eq!(read(e, "nd_packets"), "0");
        assert_eq!(read(e, "drops"), "3");
        // Echo still works.
        assert_eq!(send(e, &pool, 0, &echo6(IN6, OUT6, 128, 1), T0), 0);
    }

    #[test]
    fn ipv6_fragments_and_extension_header_chains() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("");
        let e = e.as_mut();
        let u = udp6(IN6, 1, OUT6, 2);
        // First and later fragments are dropped before any state.
        assert_eq!(send(e, &pool, 0, &as_fragment6(&u, 0, true), T0), 2);
        assert_eq!(send(e, &pool, 0, &as_fragment6(&u, 1232, true), T0), 2);
        assert_eq!(send(e, &pool, 1, &as_fragment6(&u, 1232, false), T0), 2);
        assert_eq!(read(e, "fragment_drops"), "3");
        assert_eq!(read(e, "nconnections"), "0");
        // An atomic fragment is a whole datagram.
        assert_eq!(send(e, &pool, 0, &as_fragment6(&u, 0, false), T0), 0);
        // Ports through a chain of 16 headers; the reply without any.
        let syn = tcp6(IN6, 40000, OUT6, 80, 0x02);
        assert_eq!(send(e, &pool, 0, &with_dest_opts(&syn, 16), T0), 0);
        assert_eq!(send(e, &pool, 1, &tcp6(OUT6, 80, IN6, 40000, 0x12), T0), 1);
        // 17 headers, a Hop-by-Hop header second, a chain cut short, a
        // fixed header cut short: malformed.
        assert_eq!(send(e, &pool, 0, &with_dest_opts(&syn, 17), T0), 2);
        let mut hbh = with_dest_opts(&syn, 2);
        hbh[40] = 0;
        assert_eq!(send(e, &pool, 0, &hbh, T0), 2);
        assert_eq!(send(e, &pool, 0, &with_dest_opts(&syn, 2)[..52], T0), 2);
        assert_eq!(send(e, &pool, 0, &syn[..39], T0), 2);
        assert_eq!(read(e, "malformed_drops"), "4");
        // A version nibble neither 4 nor 6.
        let mut v5 = syn.clone();
        v5[0] = 0x50;
        assert_eq!(send(e, &pool, 0, &v5, T0), 2);
        assert_eq!(read(e, "malformed_drops"), "5");
        assert_eq!(read(e, "nconnections6"), "2");
    }

    #[test]
    fn families_keep_separate_tables() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("CAPACITY 2, CAPACITY6 1");
        let e = e.as_mut();
        assert_eq!(read(e, "capacity"), "2");
        assert_eq!(read(e, "capacity6"), "1");
        assert_eq!(send(e, &pool, 0, &udp(IN, 1, OUT, 53), T0), 0);
        assert_eq!(send(e, &pool, 0, &udp6(IN6, 1, OUT6, 53), T0), 0);
        assert_eq!(send(e, &pool, 0, &udp6(IN6, 2, OUT6, 53), T0), 2);
        assert_eq!(read(e, "table_full_drops"), "1");
        assert_eq!(send(e, &pool, 0, &udp(IN, 2, OUT, 53), T0), 0);
        // An IPv4 reply does not match the IPv6 connection, nor the other
        // way round (the IPv4-mapped form of the address included).
        assert_eq!(
            send(
                e,
                &pool,
                1,
                &udp6("::ffff:93.184.216.34", 53, "::ffff:10.0.0.5", 1),
                T0
            ),
            2
        );
        assert_eq!(send(e, &pool, 1, &udp(OUT, 53, IN, 1), T0), 1);
        assert_eq!(send(e, &pool, 1, &udp6(OUT6, 53, IN6, 1), T0), 1);
        assert_eq!(
            read(e, "table"),
            "udp 10.0.0.5:1 93.184.216.34:53 UDP_REPLIED expires=+180.000\n\
             udp 10.0.0.5:2 93.184.216.34:53 UDP_UNREPLIED expires=+30.000\n\
             udp [2001:db8:1::5]:1 [2001:db8:ff::34]:53 UDP_REPLIED expires=+180.000\n"
        );
        assert_eq!(read(e, "nconnections"), "3");
        assert_eq!(read(e, "nconnections6"), "1");
        // Hot swap moves each family whose table has the same size.
        let ctx = crate::TakeCtx {
            pool: &pool,
            ninputs: 2,
            noutputs: 3,
        };
        let mut new = fw("CAPACITY 3, CAPACITY6 1");
        assert_eq!(new.take_state(e, &ctx).as_deref(), Some("1 connections"));
        assert_eq!(read(new.as_mut(), "nconnections6"), "1");
        assert_eq!(read(e, "nconnections"), "2");
        e.write_handler("reset", "").expect("reset");
        assert_eq!(read(e, "nconnections"), "0");
        assert_eq!(read(e, "table"), "");
        // CAPACITY6 0: no IPv6 state at all.
        let mut none = fw("CAPACITY6 0");
        let none = none.as_mut();
        assert_eq!(send(none, &pool, 0, &udp6(IN6, 1, OUT6, 53), T0), 2);
        assert_eq!(read(none, "table_full_drops"), "1");
        assert_eq!(send(none, &pool, 0, &udp(IN, 1, OUT, 53), T0), 0);
    }

    #[test]
    fn batches_of_both_families_warm_both_tables() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("CAPACITY 20000");
        let e = e.as_mut();
        let batch = [
            tcp6(IN6, 40000, OUT6, 443, 0x02),
            udp(IN, 5000, OUT, 53),
            with_dest_opts(&udp6(IN6, 5000, OUT6, 53), 1),
            echo6(IN6, OUT6, 128, 3),
            udp6(IN6, 5000, OUT6, 53)[..44].to_vec(),
        ];
        assert_eq!(send_batch(e, &pool, 0, &batch, T0), [4, 0, 1]);
        let batch = [
            tcp6(OUT6, 443, IN6, 40000, 0x12),
            udp(OUT, 53, IN, 5000),
            udp6(OUT6, 53, IN6, 5000),
            echo6(OUT6, IN6, 129, 3),
            echo6(OUT6, IN6, 129, 4),
        ];
        assert_eq!(send_batch(e, &pool, 1, &batch, T0), [0, 4, 1]);
        assert_eq!(read(e, "nconnections6"), "3");
        assert_eq!(read(e, "nconnections"), "4");
    }

    #[test]
    fn random_ipv6_packets_never_panic() {
        let pool = Pool::new(64).expect("pool");
        let mut e = fw("CAPACITY 64");
        let e = e.as_mut();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut ctrl = Control::default();
        for round in 0..400i64 {
            let mut pkts = Vec::new();
            for _ in 0..8 {
                let len = (next() % 120) as usize;
                let mut d: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                if let Some(b) = d.first_mut() {
                    *b = 0x60;
                }
                if len > 48 && next() % 2 == 0 {
                    // Mostly transport or extension headers, one prefix.
                    d[6] = [0u8, 6, 17, 44, 58, 60][(next() % 6) as usize];
                    d[8..16].copy_from_slice(&[0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0]);
                    d[24..32].copy_from_slice(&[0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0]);
                    if d[6] == 58 && next() % 2 == 0 {
                        d[40] = [1u8, 2, 3, 4, 128, 129, 135][(next() % 7) as usize];
                    }
                }
                pkts.push(pkt(&pool, &d));
            }
            let now = T0 + round * SEC / 10;
            push_at(e, &pool, (round % 2) as usize, pkts, 3, now, &mut ctrl);
            run_task(e, &pool, vec![], 3, now, &mut ctrl);
        }
        let _ = e.read_handler("table").expect("table");
    }
}
