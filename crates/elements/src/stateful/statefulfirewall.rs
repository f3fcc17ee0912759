//! `StatefulFirewall`: connection tracking with the TCP state machine;
//! only traffic of connections opened from the trusted side comes in.

use pronto_packet::wire::be16;
use pronto_packet::wire::flow::Flow;
use pronto_packet::wire::icmp::ICMP_HEADER_LEN;
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::{Batch, Packet};

use super::table::{ip, Slab, SlotTable, TableSlot, TimerWheel};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Seconds, Spec, TaskStatus, FIELDS_5TUPLE,
};

const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;

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
}

const REASON_HANDLERS: [&str; 6] = [
    "unsolicited_drops",
    "no_connection_drops",
    "invalid_drops",
    "malformed_drops",
    "fragment_drops",
    "table_full_drops",
];

/// A connection's entry, which the timer wheel refers to by number.
#[derive(Clone, Copy, Default)]
struct Conn {
    /// The connection key.
    key: u128,
    /// When the timer wheel will look at the connection next; never later
    /// than the expiry in the connection's slot.
    queued: i64,
}

/// A slot of the connection table: the key with the connection's state and
/// expiry, so that a packet of a known connection reads (and, when its
/// expiry moves, writes) this one 32-byte slot and nothing else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(32))]
struct ConnSlot {
    key: u128,
    /// When the connection expires unless refreshed (ns since the epoch).
    expiry: i64,
    /// The entry number; `u32::MAX` marks a free slot.
    entry: u32,
    state: u8,
    fins: u8,
}

const FREE: u32 = u32::MAX;

impl TableSlot for ConnSlot {
    type Key = u128;
    #[inline]
    fn free() -> Self {
        ConnSlot {
            key: 0,
            expiry: 0,
            entry: FREE,
            state: 0,
            fins: 0,
        }
    }
    #[inline]
    fn is_free(&self) -> bool {
        self.entry == FREE
    }
    #[inline]
    fn key(&self) -> u128 {
        self.key
    }
}

/// The connection key: protocol, trusted-side address and port (ICMP echo:
/// identifier), untrusted-side address and port, in sort order.
#[inline]
fn conn_key(proto: u8, a: u32, ap: u16, b: u32, bp: u16) -> u128 {
    ((proto as u128) << 96)
        | ((a as u128) << 64)
        | ((ap as u128) << 48)
        | ((b as u128) << 16)
        | bp as u128
}

/// The parts of a connection key: protocol, trusted address and port,
/// untrusted address and port.
fn key_parts(k: u128) -> (u8, u32, u16, u32, u16) {
    (
        (k >> 96) as u8,
        (k >> 64) as u32,
        (k >> 48) as u16,
        (k >> 16) as u32,
        k as u16,
    )
}

/// A connection-tracking firewall (see [`StatefulFirewall::SPEC`]).
pub struct StatefulFirewall {
    timeouts: [i64; NSTATES],
    drop_port: Option<usize>,
    conns: Slab<Conn>,
    table: SlotTable<ConnSlot>,
    /// Whether batches warm the table first: only when it is too large to
    /// stay in the cache (for a small one the extra pass costs more).
    warm: bool,
    wheel: TimerWheel,
    drops: [u64; 6],
    passed: [u64; 2],
    related: u64,
    untracked: u64,
    last_now: i64,
}

/// The parts of a packet the firewall looks at.
struct Parsed {
    proto: u8,
    src: u32,
    dst: u32,
    sport: u16,
    dport: u16,
    /// TCP flags or ICMP type.
    flags: u8,
    /// For ICMP errors: the key of the connection the quoted packet
    /// belongs to (trusted-side source first), if it quotes enough.
    related: Option<u128>,
}

fn addr(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

fn parse(p: &Packet) -> Result<Parsed, Reason> {
    let iph = p.network_data().ok_or(Reason::Malformed)?;
    let ip = Ipv4Packet::new_checked(iph).map_err(|_| Reason::Malformed)?;
    if ip.is_fragment() {
        return Err(Reason::Fragment);
    }
    let f = Flow::from_ipv4(&ip).map_err(|_| Reason::Malformed)?;
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
        if matches!(f.icmp_type, 3 | 4 | 5 | 11 | 12) {
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

/// The key of the connection a packet entering on `port` would belong to,
/// read with as few checks as possible: it only picks the table slot to
/// warm (see [`StatefulFirewall::warm`]).
#[inline]
fn hint_key(port: usize, p: &Packet) -> Option<u128> {
    let d = p.network_data()?;
    let hl = ((*d.first()? & 15) as usize) * 4;
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

impl StatefulFirewall {
    /// The class description.
    pub const SPEC: Spec = Spec::new("StatefulFirewall")
        .ports("2/2-3")
        .processing("h/h")
        .keywords(&[
            "CAPACITY",
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
             opened from the trusted side. Packets must have their IP header annotated\n\
             (CheckIPHeader or MarkIPHeader before it); they are not modified.\n\n\
             Input 0 receives packets from the trusted side. They may open connections\n\
             (put an IPFilter in front of input 0 for the policy): a TCP SYN opens a TCP\n\
             connection, any UDP packet a UDP pseudo-connection, an ICMP echo request\n\
             an ICMP one (keyed by identifier), SCTP, DCCP and UDP-Lite a pseudo-\n\
             connection keyed by ports, any other IP protocol a pseudo-connection\n\
             between the two addresses. Other ICMP messages from the\n\
             trusted side pass untracked. Input 1 receives packets from the untrusted\n\
             side: only packets of tracked connections pass (TCP segments in state,\n\
             UDP replies, echo replies, and ICMP errors quoting a packet of a tracked\n\
             connection, counted as related).\n\n\
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
             dropped) and later ones, are dropped (reassemble first).\n\n\
             Each state has a timeout (keywords below); the connection expires when no\n\
             packet refreshed it in that time. Expiry runs from a timer wheel of\n\
             100 ms units that refreshing packets never touch (no table scan); expired\n\
             connections are collected within about 100 ms, and a packet finding an\n\
             expired connection treats it as gone. The table is allocated once for\n\
             CAPACITY connections (open addressing, no allocation per packet); new\n\
             connections beyond it are dropped (table_full_drops).\n\n\
             Ports: input 0 (trusted) to output 0, input 1 (untrusted) to output 1;\n\
             optional output 2 gets dropped packets (else they are freed). All push.\n\n\
             Keywords (timeouts in seconds):\n\
             \x20 CAPACITY  maximum tracked connections (default 65536)\n\
             \x20 TCP_SYN_SENT 120, TCP_SYN_RECV 60, TCP_ESTABLISHED 432000,\n\
             \x20 TCP_FIN_WAIT 120, TCP_CLOSING 60, TCP_TIME_WAIT 120, TCP_CLOSED 10,\n\
             \x20 UDP 30 (no reply seen yet), UDP_STREAM 180 (replied), ICMP 30, OTHER 600\n\n\
             Handlers:\n\
             \x20 nconnections (read)  tracked connections\n\
             \x20 capacity (read)      CAPACITY\n\
             \x20 table (read)         one line per connection, by protocol and addresses:\n\
             \x20                      `PROTO TRUSTED:PORT UNTRUSTED:PORT STATE expires=+SECS`\n\
             \x20 trusted_packets, untrusted_packets (read)  packets passed per input\n\
             \x20 related (read)       ICMP errors let in as related\n\
             \x20 untracked (read)     trusted-side ICMP passed without state\n\
             \x20 unsolicited_drops, no_connection_drops, invalid_drops, malformed_drops,\n\
             \x20 fragment_drops, table_full_drops (read)  drops by reason\n\
             \x20 drops (read)         all drops\n\
             \x20 reset (write)        forget every connection and zero the counters",
        );

    /// Configures a `StatefulFirewall`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let capacity: usize = a.read_or("CAPACITY", 65_536usize)?;
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
        Ok(Box::new(StatefulFirewall {
            timeouts,
            drop_port: (ctx.noutputs > 2).then_some(2),
            conns: Slab::new(capacity),
            table: SlotTable::new(capacity),
            warm: capacity > WARM_ABOVE,
            wheel: TimerWheel::new(capacity, WHEEL_UNIT, WHEEL_BUCKETS),
            drops: [0; 6],
            passed: [0; 2],
            related: 0,
            untracked: 0,
            last_now: 0,
        }))
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
    fn lookup(&mut self, k: u128, now: i64) -> Option<usize> {
        let pos = self.table.find(k)?;
        let s = self.table.slot(pos);
        if s.expiry <= now {
            self.remove(s.entry);
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
    fn set_state(&mut self, pos: usize, state: u8, fins: u8, now: i64) {
        let expiry = now + self.timeouts[state as usize];
        let s = self.table.slot_mut(pos);
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

    fn open(&mut self, k: u128, state: u8, now: i64) -> Result<(), Reason> {
        let expiry = now + self.timeouts[state as usize];
        let i = self
            .conns
            .alloc(Conn {
                key: k,
                queued: expiry,
            })
            .ok_or(Reason::TableFull)?;
        self.table.insert(ConnSlot {
            key: k,
            expiry,
            entry: i,
            state,
            fins: 0,
        });
        self.wheel.insert(i, expiry, now);
        Ok(())
    }

    fn trusted(&mut self, h: &Parsed, now: i64) -> Result<(), Reason> {
        let (ap, bp) = match h.proto {
            ICMP if h.flags == 8 => (h.sport, 0),
            ICMP => {
                self.untracked += 1;
                return Ok(());
            }
            _ => (h.sport, h.dport),
        };
        let k = conn_key(h.proto, h.src, ap, h.dst, bp);
        let Some(pos) = self.lookup(k, now) else {
            let state = match h.proto {
                TCP if h.flags & (TH_SYN | TH_ACK | TH_RST) == TH_SYN => SYN_SENT,
                TCP => return Err(Reason::NoConnection),
                UDP => UDP_UNREPLIED,
                ICMP => ICMP_ECHO,
                _ => OTHER,
            };
            return self.open(k, state, now);
        };
        let c = *self.table.slot(pos);
        let (state, fins) = if h.proto == TCP {
            tcp_next(c.state, c.fins, true, h.flags).ok_or(Reason::Invalid)?
        } else {
            (c.state, c.fins)
        };
        self.set_state(pos, state, fins, now);
        Ok(())
    }

    fn untrusted(&mut self, h: &Parsed, now: i64) -> Result<(), Reason> {
        let k = match h.proto {
            ICMP => match h.flags {
                0 => conn_key(ICMP, h.dst, h.sport, h.src, 0),
                3 | 4 | 5 | 11 | 12 => {
                    let k = h.related.ok_or(Reason::NoConnection)?;
                    self.lookup(k, now).ok_or(Reason::NoConnection)?;
                    self.related += 1;
                    return Ok(());
                }
                _ => return Err(Reason::Unsolicited),
            },
            _ => conn_key(h.proto, h.dst, h.dport, h.src, h.sport),
        };
        let Some(pos) = self.lookup(k, now) else {
            return Err(match h.proto {
                TCP if h.flags & (TH_SYN | TH_ACK | TH_RST) == TH_SYN => Reason::Unsolicited,
                TCP | ICMP => Reason::NoConnection,
                _ => Reason::Unsolicited,
            });
        };
        let c = *self.table.slot(pos);
        let (state, fins) = match h.proto {
            TCP => tcp_next(c.state, c.fins, false, h.flags).ok_or(Reason::Invalid)?,
            UDP => (UDP_REPLIED, 0),
            _ => (c.state, c.fins),
        };
        self.set_state(pos, state, fins, now);
        Ok(())
    }

    #[inline]
    fn action(&mut self, port: usize, p: &Packet, now: i64) -> Option<usize> {
        let r = parse(p).and_then(|h| {
            if port == 0 {
                self.trusted(&h, now)
            } else {
                self.untrusted(&h, now)
            }
        });
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

    /// Brings the table slots a batch needs into the cache before the
    /// packets are processed, all loads independent of each other, so that
    /// a large table costs about one memory latency per batch rather than
    /// one per packet. A packet of a known connection in a steady state
    /// touches no other line of the table.
    fn warm(&self, port: usize, batch: &Batch) {
        let mut acc = 0u128;
        for p in batch.iter() {
            if let Some(k) = hint_key(port, p) {
                acc ^= self.table.touch(k);
            }
        }
        std::hint::black_box(acc);
    }

    fn table_text(&self) -> String {
        use std::fmt::Write as _;
        // Key order is protocol, then trusted and untrusted address and port.
        let mut v: Vec<ConnSlot> = self.table.iter().copied().collect();
        v.sort_by_key(|c| c.key);
        let mut s = String::new();
        for c in v {
            let (proto, a, ap, b, bp) = key_parts(c.key);
            let proto = match proto {
                TCP => "tcp".to_string(),
                UDP => "udp".to_string(),
                ICMP => "icmp".to_string(),
                p => format!("proto{p}"),
            };
            let left = (c.expiry - self.last_now) as f64 / 1e9;
            let _ = writeln!(
                s,
                "{proto} {}:{} {}:{} {} expires=+{left:.3}",
                ip(a),
                ap,
                ip(b),
                bp,
                STATE_NAMES[c.state as usize]
            );
        }
        s
    }
}

impl Element for StatefulFirewall {
    /// Hot-swap: the old firewall's connections, when its table has the
    /// same size (the new rules and timeouts apply from now on; the
    /// counters start again from zero).
    fn take_state(&mut self, old: &mut dyn Element, _ctx: &crate::TakeCtx<'_>) -> Option<String> {
        let old = crate::old_as::<StatefulFirewall>(old)?;
        if old.conns.capacity() != self.conns.capacity() || old.conns.is_empty() {
            return None;
        }
        std::mem::swap(&mut self.conns, &mut old.conns);
        std::mem::swap(&mut self.table, &mut old.table);
        std::mem::swap(&mut self.wheel, &mut old.wheel);
        self.last_now = self.last_now.max(old.last_now);
        Some(format!("{} connections", self.conns.len()))
    }

    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.last_now = now;
        if self.warm && batch.len() > 1 {
            self.warm(port, batch);
        }
        push_each(batch, out, |p, _| self.action(port, p, now));
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        self.last_now = now;
        for _ in 0..EXPIRE_BUDGET {
            let Some(i) = self.wheel.pop_due(now) else {
                return if self.wheel.is_empty() {
                    let t = self.timeouts.iter().copied().min().unwrap_or(WHEEL_UNIT);
                    TaskStatus::SleepUntil(now + t.max(WHEEL_UNIT))
                } else {
                    TaskStatus::SleepUntil(self.wheel.next_due(now))
                };
            };
            let k = self.conns.get(i).key;
            let e = self
                .table
                .find(k)
                .map_or(i64::MIN, |pos| self.table.slot(pos).expiry);
            if e <= now {
                self.remove(i);
            } else {
                self.conns.get_mut(i).queued = e;
                self.wheel.insert(i, e, now);
            }
        }
        TaskStatus::Busy
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("nconnections"),
            HandlerInfo::read("capacity"),
            HandlerInfo::read("table"),
            HandlerInfo::read("trusted_packets"),
            HandlerInfo::read("untrusted_packets"),
            HandlerInfo::read("related"),
            HandlerInfo::read("untracked"),
            HandlerInfo::read("unsolicited_drops"),
            HandlerInfo::read("no_connection_drops"),
            HandlerInfo::read("invalid_drops"),
            HandlerInfo::read("malformed_drops"),
            HandlerInfo::read("fragment_drops"),
            HandlerInfo::read("table_full_drops"),
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
            "nconnections" => Ok(self.conns.len().to_string()),
            "capacity" => Ok(self.conns.capacity().to_string()),
            "table" => Ok(self.table_text()),
            "trusted_packets" => Ok(self.passed[0].to_string()),
            "untrusted_packets" => Ok(self.passed[1].to_string()),
            "related" => Ok(self.related.to_string()),
            "untracked" => Ok(self.untracked.to_string()),
            "drops" => Ok(self.drops.iter().sum::<u64>().to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset" => {
                self.conns.clear();
                self.table.clear();
                self.wheel.clear();
                self.drops = [0; 6];
                self.passed = [0; 2];
                self.related = 0;
                self.untracked = 0;
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
}
