//! `FlowMonitor`: flow records by five-tuple, IPv4 and IPv6, with active
//! and inactive timeouts, exported as IPFIX (RFC 7011) or NetFlow v9
//! (RFC 3954) messages on its second output — the flow monitor of an
//! operator's edge, in front of the collectors they already run (nfcapd,
//! pmacct, a SIEM).
//!
//! Packets pass through untouched on output 0. Each one is counted into
//! its flow's record (or, with `SAMPLING N`, one packet in N is); a flow
//! is exported when it has been idle for `INACTIVE_TIMEOUT`, and every
//! `ACTIVE_TIMEOUT` while it lasts (the record then starts again from
//! zero). Records are packed into messages of at most `MTU` bytes, the
//! templates first and again every `TEMPLATE_INTERVAL`; each message is one
//! packet on output 1 holding the message alone, ready for `Socket(UDP,
//! COLLECTOR, 4739)` or for UDP/IP/Ethernet encapsulation.
//!
//! The flow cache is allocated once, one per family (`CAPACITY` IPv4
//! flows, `CAPACITY6` IPv6 flows): an open-addressing table with a
//! per-table secret hash key whose slot holds the flow's key *and* what a
//! packet updates (counts, times, flags), so that a packet of a known flow
//! reads and writes one cache line (IPv4: 64-byte slots keyed by one
//! `u128`); a slab of what expiry needs (the key, the period's start) and a
//! timer wheel of 100 ms units that refreshing a flow never touches. A
//! batch hashes its flows and loads their slots first, all loads
//! independent, then counts. A packet of a new flow when the cache is full
//! passes uncounted and is counted as `cache_full`. Nothing is allocated
//! per packet.

use std::fmt::Write as _;

use pronto_packet::wire::flow::{Family, Flow};
use pronto_packet::{Batch, Packet, BATCH_MAX};

use super::table::{Key, Slab, SlotTable, TableSlot, TimerWheel};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, Spec,
    TaskStatus, FIELDS_5TUPLE,
};

/// Template IDs: IPv4 flows, IPv6 flows, the exporter's options.
const TPL_V4: u16 = 256;
const TPL_V6: u16 = 257;
const TPL_OPTIONS: u16 = 258;

/// Timer wheel unit (100 ms) and size (about 109 minutes a turn).
const WHEEL_UNIT: i64 = 100_000_000;
const WHEEL_BUCKETS: usize = 65_536;
/// Flows a task run examines at most.
const EXPIRE_BUDGET: usize = 4096;

/// IPFIX information elements (IANA), with their lengths, as exported.
/// `(id, length)`; the record layouts below follow these lists.
const IPFIX_V4: &[(u16, u16)] = &[
    (8, 4),   // sourceIPv4Address
    (12, 4),  // destinationIPv4Address
    (7, 2),   // sourceTransportPort
    (11, 2),  // destinationTransportPort
    (4, 1),   // protocolIdentifier
    (5, 1),   // ipClassOfService
    (6, 2),   // tcpControlBits
    (136, 1), // flowEndReason
    (2, 8),   // packetDeltaCount
    (1, 8),   // octetDeltaCount
    (152, 8), // flowStartMilliseconds
    (153, 8), // flowEndMilliseconds
    (32, 2),  // icmpTypeCodeIPv4 (type * 256 + code; 0 for other protocols)
];
const IPFIX_V6: &[(u16, u16)] = &[
    (27, 16), // sourceIPv6Address
    (28, 16), // destinationIPv6Address
    (7, 2),
    (11, 2),
    (4, 1),
    (5, 1),
    (6, 2),
    (136, 1),
    (2, 8),
    (1, 8),
    (152, 8),
    (153, 8),
    (139, 2), // icmpTypeCodeIPv6
];
/// The options record: scope observationDomainId (149), then
/// exportedMessageTotalCount (41), exportedFlowRecordTotalCount (42),
/// ignoredPacketTotalCount (164: packets of flows the full cache could not
/// take), samplingPacketInterval (305).
const IPFIX_OPTIONS_SCOPE: &[(u16, u16)] = &[(149, 4)];
const IPFIX_OPTIONS: &[(u16, u16)] = &[(41, 8), (42, 8), (164, 8), (305, 4)];

/// NetFlow v9 field types, with their lengths.
const V9_V4: &[(u16, u16)] = &[
    (8, 4),  // IPV4_SRC_ADDR
    (12, 4), // IPV4_DST_ADDR
    (7, 2),  // L4_SRC_PORT
    (11, 2), // L4_DST_PORT
    (4, 1),  // PROTOCOL
    (5, 1),  // SRC_TOS
    (6, 1),  // TCP_FLAGS
    (2, 8),  // IN_PKTS
    (1, 8),  // IN_BYTES
    (22, 4), // FIRST_SWITCHED
    (21, 4), // LAST_SWITCHED
    (32, 2), // ICMP_TYPE (type * 256 + code; 0 for other protocols)
];
const V9_V6: &[(u16, u16)] = &[
    (27, 16), // IPV6_SRC_ADDR
    (28, 16), // IPV6_DST_ADDR
    (7, 2),
    (11, 2),
    (4, 1),
    (5, 1),
    (6, 1),
    (2, 8),
    (1, 8),
    (22, 4),
    (21, 4),
    (32, 2),
];
/// v9 options: scope System (1, the source ID), then SAMPLING_INTERVAL
/// (34) and SAMPLING_ALGORITHM (35: 1, deterministic).
const V9_OPTIONS_SCOPE: &[(u16, u16)] = &[(1, 4)];
const V9_OPTIONS: &[(u16, u16)] = &[(34, 4), (35, 1)];

/// Why a record was exported (IPFIX flowEndReason).
const END_IDLE: u8 = 1;
const END_ACTIVE: u8 = 2;
const END_FORCED: u8 = 4;

/// An ICMP or ICMPv6 flow's type * 256 + code (its destination port), 0
/// for other protocols.
fn icmp_type_code(k: &FlowKey) -> u16 {
    if k.proto == 1 || k.proto == 58 {
        k.dport
    } else {
        0
    }
}

/// The uptime NetFlow v9 counts from: one second before the first packet,
/// so that no record carries a time of 0, which collectors read as unset.
const V9_BOOT_LEAD: i64 = 1_000_000_000;

fn record_len(fields: &[(u16, u16)]) -> usize {
    fields.iter().map(|f| f.1 as usize).sum()
}

/// A flow's key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct FlowKey {
    src: u128,
    dst: u128,
    sport: u16,
    dport: u16,
    proto: u8,
    v6: bool,
}

impl Key for FlowKey {}

impl std::hash::Hash for FlowKey {
    /// Only the words a family uses: an IPv4 key hashes as two `u64`s.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let tail = ((self.sport as u64) << 48)
            | ((self.dport as u64) << 32)
            | ((self.proto as u64) << 8)
            | self.v6 as u64;
        if self.v6 {
            state.write_u128(self.src);
            state.write_u128(self.dst);
        } else {
            state.write_u64((((self.src >> 96) as u64) << 32) | (self.dst >> 96) as u64);
        }
        state.write_u64(tail);
    }
}

/// What one packet contributes to its flow.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    key: FlowKey,
    len: u64,
    tos: u8,
    flags: u8,
}

/// A flow's record.
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    key: FlowKey,
    tos: u8,
    tcp_flags: u8,
    packets: u64,
    bytes: u64,
    /// First and last packet of this record (ns since the epoch).
    first: i64,
    last: i64,
    /// When the record's period began (its active timeout counts from
    /// here).
    start: i64,
}

/// What a packet updates in its flow's slot.
#[derive(Clone, Copy, Debug, Default)]
struct Hot {
    packets: u64,
    bytes: u64,
    /// First and last packet of the period (ns since the epoch).
    first: i64,
    last: i64,
    /// The flow's entry in its cache's slab; `u32::MAX` marks a free slot.
    entry: u32,
    tos: u8,
    flags: u8,
}

const FREE: u32 = u32::MAX;

/// A slot of a family's flow table: the family's key and the flow's
/// [`Hot`] part.
trait FlowSlot: TableSlot {
    fn with(key: Self::Key, hot: Hot) -> Self;
    fn hot(&self) -> &Hot;
    fn hot_mut(&mut self) -> &mut Hot;
    /// The key as the exporter writes it.
    fn flow_key(k: Self::Key) -> FlowKey;
}

/// An IPv4 flow: source, destination, ports and protocol packed into one
/// `u128` (bits 127-96, 95-64, 63-48, 47-32, 31-24), the counts beside it;
/// 64 bytes, aligned, so a packet of the flow touches one cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct Slot4 {
    key: u128,
    hot: Hot,
}

#[inline]
fn key4(k: &FlowKey) -> u128 {
    ((k.src >> 96) << 96)
        | ((k.dst >> 96) << 64)
        | ((k.sport as u128) << 48)
        | ((k.dport as u128) << 32)
        | ((k.proto as u128) << 24)
}

/// An IPv6 flow's key: both addresses, then ports and protocol
/// (`sport << 48 | dport << 32 | proto`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Key6 {
    src: u128,
    dst: u128,
    rest: u64,
}

impl Key for Key6 {}

#[inline]
fn key6(k: &FlowKey) -> Key6 {
    Key6 {
        src: k.src,
        dst: k.dst,
        rest: ((k.sport as u64) << 48) | ((k.dport as u64) << 32) | k.proto as u64,
    }
}

/// An IPv6 flow's slot (96 bytes).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
struct Slot6 {
    key: Key6,
    hot: Hot,
}

macro_rules! flow_slot {
    ($slot:ty, $key:ty, |$k:ident| $flow:expr) => {
        impl TableSlot for $slot {
            type Key = $key;
            #[inline]
            fn free() -> Self {
                Self {
                    key: <$key>::default(),
                    hot: Hot {
                        entry: FREE,
                        ..Hot::default()
                    },
                }
            }
            #[inline]
            fn is_free(&self) -> bool {
                self.hot.entry == FREE
            }
            #[inline]
            fn key(&self) -> $key {
                self.key
            }
        }
        impl FlowSlot for $slot {
            #[inline]
            fn with(key: $key, hot: Hot) -> Self {
                Self { key, hot }
            }
            #[inline]
            fn hot(&self) -> &Hot {
                &self.hot
            }
            #[inline]
            fn hot_mut(&mut self) -> &mut Hot {
                &mut self.hot
            }
            fn flow_key($k: $key) -> FlowKey {
                $flow
            }
        }
    };
}

flow_slot!(Slot4, u128, |k| FlowKey {
    src: (k >> 96) << 96,
    dst: ((k >> 64) as u32 as u128) << 96,
    sport: (k >> 48) as u16,
    dport: (k >> 32) as u16,
    proto: (k >> 24) as u8,
    v6: false,
});
flow_slot!(Slot6, Key6, |k| FlowKey {
    src: k.src,
    dst: k.dst,
    sport: (k.rest >> 48) as u16,
    dport: (k.rest >> 32) as u16,
    proto: k.rest as u8,
    v6: true,
});

/// What expiry needs of a flow, off the packet path.
#[derive(Clone, Copy, Debug, Default)]
struct Cold<K> {
    key: K,
    /// When the record's period began (its active timeout counts from
    /// here).
    start: i64,
}

/// One family's flow cache.
struct Cache<S: FlowSlot> {
    table: SlotTable<S>,
    cold: Slab<Cold<S::Key>>,
    wheel: TimerWheel,
}

impl<S: FlowSlot> Cache<S> {
    fn new(capacity: usize) -> Self {
        Cache {
            table: SlotTable::new(capacity),
            cold: Slab::new(capacity),
            wheel: TimerWheel::new(capacity, WHEEL_UNIT, WHEEL_BUCKETS),
        }
    }

    fn len(&self) -> usize {
        self.table.len()
    }

    /// Counts `s` into flow `k` (whose probe run starts at `home`); false
    /// when it is a new flow and the cache is full.
    #[inline]
    fn count(&mut self, k: S::Key, home: usize, s: &Seen, now: i64, tm: (i64, i64)) -> bool {
        if let Some(pos) = self.table.find_from(k, home) {
            let h = self.table.slot_mut(pos).hot_mut();
            if h.packets == 0 {
                h.first = now;
                h.tos = s.tos;
            }
            h.packets += 1;
            h.bytes += s.len;
            h.flags |= s.flags;
            h.last = now;
            return true;
        }
        let Some(i) = self.cold.alloc(Cold { key: k, start: now }) else {
            return false;
        };
        let hot = Hot {
            packets: 1,
            bytes: s.len,
            first: now,
            last: now,
            entry: i,
            tos: s.tos,
            flags: s.flags,
        };
        if !self.table.insert(S::with(k, hot)) {
            self.cold.free(i);
            return false;
        }
        self.wheel.insert(i, due(now, now, tm), now);
        true
    }

    /// Entry `i`'s record.
    fn record(&self, i: u32) -> Record {
        let c = self.cold.get(i);
        let h = self
            .table
            .find(c.key)
            .map(|p| *self.table.slot(p).hot())
            .unwrap_or_default();
        Record {
            key: S::flow_key(c.key),
            tos: h.tos,
            tcp_flags: h.flags,
            packets: h.packets,
            bytes: h.bytes,
            first: h.first,
            last: h.last,
            start: c.start,
        }
    }

    /// Forgets entry `i`.
    fn remove(&mut self, i: u32) {
        let k = self.cold.get(i).key;
        self.wheel.unlink(i);
        self.table.remove(k);
        self.cold.free(i);
    }

    /// Starts entry `i`'s next period at `now` (counts from zero).
    fn restart(&mut self, i: u32, now: i64, tm: (i64, i64)) {
        let c = self.cold.get_mut(i);
        c.start = now;
        let k = c.key;
        let mut last = now;
        if let Some(p) = self.table.find(k) {
            let h = self.table.slot_mut(p).hot_mut();
            h.packets = 0;
            h.bytes = 0;
            h.flags = 0;
            last = h.last;
        }
        self.wheel.insert(i, due(last, now, tm), now);
    }

    /// The entries in table order.
    fn entries(&self) -> impl Iterator<Item = u32> + '_ {
        self.table.iter().map(|s| s.hot().entry)
    }
}

/// When a flow last seen at `last`, whose period began at `start`, next
/// needs a look: its idle time or its active timeout, whichever comes
/// first (`tm`: the inactive and active timeouts).
#[inline]
fn due(last: i64, start: i64, tm: (i64, i64)) -> i64 {
    (last + tm.0).min(start + tm.1)
}

/// The export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Ipfix,
    NetflowV9,
}

/// A message being filled.
struct Message {
    buf: Vec<u8>,
    /// Where the current data set's header is, and its template.
    set_at: usize,
    set_tpl: u16,
    /// Records (IPFIX: data records; v9: all records) in it.
    records: u32,
    v9_records: u16,
}

/// Flow records with timeouts, exported as IPFIX or NetFlow v9.
pub struct FlowMonitor {
    format: Format,
    active: i64,
    inactive: i64,
    template_every: i64,
    sampling: u64,
    domain: u32,
    mtu: usize,
    v4: Cache<Slot4>,
    v6: Cache<Slot6>,
    /// When the templates were last sent (`i64::MIN`: never).
    templates_at: i64,
    /// When the first packet was seen (v9 sysUptime counts from here).
    boot: Option<i64>,
    msg: Message,
    /// A batch's parsed packets by family, with their keys and where their
    /// probe runs start (kept, not zeroed per batch).
    seen4: Box<[(Seen, u128, usize); BATCH_MAX]>,
    seen6: Box<[(Seen, Key6, usize); BATCH_MAX]>,
    /// Messages ready to go out on output 1 (bytes each), in order.
    ready: Vec<Vec<u8>>,
    /// Finished messages' buffers, for reuse.
    spare: Vec<Vec<u8>>,
    // Counters.
    packets: u64,
    sampled_out: u64,
    not_ip: u64,
    cache_full: u64,
    exported_records: u64,
    exported_messages: u64,
    /// IPFIX: data records exported before the message being filled.
    sequence: u32,
    export_refused: u64,
    last_now: i64,
}

impl FlowMonitor {
    /// The class description.
    pub const SPEC: Spec = Spec::new("FlowMonitor")
        .ports("1/2")
        .processing("h/h")
        .keywords(&[
            "EXPORT",
            "ACTIVE_TIMEOUT",
            "INACTIVE_TIMEOUT",
            "CAPACITY",
            "CAPACITY6",
            "SAMPLING",
            "DOMAIN",
            "MTU",
            "TEMPLATE_INTERVAL",
        ])
        .profile(ActionProfile::reads(FIELDS_5TUPLE))
        .doc(
            "FlowMonitor([KEYWORDS])\n\n\
             Keeps flow records by five-tuple (protocol, addresses, ports; ICMP and ICMPv6:\n\
             source port 0, destination port type * 256 + code, as NetFlow collectors\n\
             expect) for IPv4 and IPv6 and exports them as IPFIX (RFC 7011) or NetFlow\n\
             v9 (RFC 3954) messages. Packets need their IP header annotated (CheckIPHeader,\n\
             CheckIP6Header or MarkIPHeader before it) and leave on output 0 unchanged;\n\
             packets that are not IP pass uncounted (not_ip).\n\n\
             A record holds packets, bytes (of the IP packet), the OR of TCP flags, the IP\n\
             TOS/traffic class of the first packet and the first and last packet's time. A\n\
             flow is exported when no packet came for INACTIVE_TIMEOUT (flowEndReason 1),\n\
             and every ACTIVE_TIMEOUT while it lasts (reason 2; the record starts again from\n\
             zero); the write handler `flush` exports every flow at once (reason 4).\n\n\
             Output 1 gets the export messages, one packet each holding the message alone\n\
             (for Socket(UDP, COLLECTOR, PORT), or UDPIPEncap and EtherEncap before a\n\
             device), at most MTU bytes, records packed as they expire. IPFIX messages carry\n\
             the templates (256: IPv4 flows, 257: IPv6 flows; set 2) and the options\n\
             template (258, set 3: observationDomainId scope; exported messages, exported\n\
             records, packets of flows the full cache refused, sampling interval) in the\n\
             first message and again every TEMPLATE_INTERVAL, each followed by an options\n\
             record; sequence numbers count data records (RFC 7011 3.1). NetFlow v9: the\n\
             same templates in FlowSet 0, options template 258 in FlowSet 1 (scope System;\n\
             SAMPLING_INTERVAL, SAMPLING_ALGORITHM), sequence numbers count messages, times\n\
             in sysUptime counted from one second before the first packet seen. ICMP\n\
             and ICMPv6 records also carry type * 256 + code in icmpTypeCodeIPv4/IPv6\n\
             (v9: ICMP_TYPE).\n\n\
             The flow cache holds CAPACITY IPv4 and CAPACITY6 IPv6 flows, allocated once\n\
             (a table per family whose slot holds the key and the counts: a packet of a\n\
             known IPv4 flow touches one 64-byte line); a packet of a new flow when it is\n\
             full passes uncounted (cache_full). Expiry runs from a timer wheel of 100 ms\n\
             units that refreshing packets never touch.\n\n\
             Ports: input 0 (push) to output 0 (push, every packet unchanged); output 1\n\
             (push) the export messages.\n\n\
             Keywords:\n\
             \x20 EXPORT            ipfix (default) or netflow9\n\
             \x20 ACTIVE_TIMEOUT    seconds, default 60\n\
             \x20 INACTIVE_TIMEOUT  seconds, default 15\n\
             \x20 CAPACITY          IPv4 flows in the cache, default 65536 (at most 16777216)\n\
             \x20 CAPACITY6         IPv6 flows in the cache, default CAPACITY (0: none)\n\
             \x20 SAMPLING          count one packet in N (deterministic), default 1\n\
             \x20 DOMAIN            observation domain (IPFIX) or source ID (v9), default 0\n\
             \x20 MTU               largest message, bytes, 512 to 65000, default 1400\n\
             \x20 TEMPLATE_INTERVAL seconds between template refreshes, default 30\n\n\
             Handlers:\n\
             \x20 nflows (read)             flows in the cache\n\
             \x20 capacity, capacity6 (read) CAPACITY, CAPACITY6\n\
             \x20 table (read)              one line per flow: `PROTO SRC:PORT DST:PORT\n\
             \x20                           packets=N bytes=N`, IPv6 addresses in brackets\n\
             \x20 packets (read)            packets seen\n\
             \x20 exported_records, exported_messages (read)\n\
             \x20 cache_full (read)         packets of new flows the full cache refused\n\
             \x20 not_ip (read)             packets that were not IP\n\
             \x20 flush (write)             export every flow now",
        );

    /// Configures a `FlowMonitor`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let export: String = a.read_or("EXPORT", "ipfix".to_string())?;
        let active: Seconds = a.read_or("ACTIVE_TIMEOUT", Seconds(60.0))?;
        let inactive: Seconds = a.read_or("INACTIVE_TIMEOUT", Seconds(15.0))?;
        let capacity: usize = a.read_or("CAPACITY", 65_536usize)?;
        let capacity6: Option<usize> = a.read("CAPACITY6")?;
        let sampling: u64 = a.read_or("SAMPLING", 1u64)?;
        let domain: u32 = a.read_or("DOMAIN", 0u32)?;
        let mtu: usize = a.read_or("MTU", 1400usize)?;
        let tpl: Seconds = a.read_or("TEMPLATE_INTERVAL", Seconds(30.0))?;
        a.finish()?;
        let format = match export.to_ascii_lowercase().as_str() {
            "ipfix" => Format::Ipfix,
            "netflow9" | "netflow" | "v9" => Format::NetflowV9,
            other => {
                return Err(ConfigError::new(format!(
                    "EXPORT: expected ipfix or netflow9, found `{other}`"
                )))
            }
        };
        for (kw, s) in [
            ("ACTIVE_TIMEOUT", active),
            ("INACTIVE_TIMEOUT", inactive),
            ("TEMPLATE_INTERVAL", tpl),
        ] {
            if !(s.0 > 0.0 && s.0 <= 86_400.0) {
                return Err(ConfigError::new(format!(
                    "{kw}: expected a time from 0 to 86400 seconds (not 0)"
                )));
            }
        }
        if capacity == 0 || capacity > 1 << 24 {
            return Err(ConfigError::new("CAPACITY: expected 1 to 16777216"));
        }
        let capacity6 = capacity6.unwrap_or(capacity);
        if capacity6 > 1 << 24 {
            return Err(ConfigError::new("CAPACITY6: expected 0 to 16777216"));
        }
        if sampling == 0 || sampling > u32::MAX as u64 {
            return Err(ConfigError::new("SAMPLING: expected 1 to 4294967295"));
        }
        if !(512..=65_000).contains(&mtu) {
            return Err(ConfigError::new("MTU: expected 512 to 65000 bytes"));
        }
        let ns = |s: Seconds| (s.0 * 1e9) as i64;
        Ok(Box::new(FlowMonitor {
            format,
            active: ns(active),
            inactive: ns(inactive),
            template_every: ns(tpl),
            sampling,
            domain,
            mtu,
            v4: Cache::new(capacity),
            v6: Cache::new(capacity6),
            templates_at: i64::MIN,
            boot: None,
            msg: Message {
                buf: Vec::with_capacity(mtu),
                set_at: 0,
                set_tpl: 0,
                records: 0,
                v9_records: 0,
            },
            seen4: Box::new([(Seen::default(), 0, 0); BATCH_MAX]),
            seen6: Box::new([(Seen::default(), Key6::default(), 0); BATCH_MAX]),
            ready: Vec::new(),
            spare: Vec::new(),
            packets: 0,
            sampled_out: 0,
            not_ip: 0,
            cache_full: 0,
            exported_records: 0,
            exported_messages: 0,
            sequence: 0,
            export_refused: 0,
            last_now: 0,
        }))
    }

    /// What packet `p` contributes, if it is IP and sampled.
    #[inline]
    fn parse(&mut self, p: &Packet) -> Option<Seen> {
        let Some(d) = p.network_data() else {
            self.not_ip += 1;
            return None;
        };
        let Ok(f) = Flow::parse(d) else {
            self.not_ip += 1;
            return None;
        };
        self.packets += 1;
        if self.sampling > 1 && !(self.packets - 1).is_multiple_of(self.sampling) {
            self.sampled_out += 1;
            return None;
        }
        let t = &f.tuple;
        let v6 = t.family == Family::V6;
        let (len, tos) = if v6 {
            (
                40 + u16::from_be_bytes([d[4], d[5]]) as u64,
                (d[0] << 4) | (d[1] >> 4),
            )
        } else {
            (u16::from_be_bytes([d[2], d[3]]) as u64, d[1])
        };
        // ICMP and ICMPv6 as flow exporters key them (and collectors show
        // them): source port 0, destination port type * 256 + code.
        let (sport, dport) = if t.proto == 1 || t.proto == 58 {
            let code = d.get(f.l4_offset + 1).copied().unwrap_or(0);
            (0, (u16::from(f.icmp_type) << 8) | u16::from(code))
        } else {
            (t.sport, t.dport)
        };
        Some(Seen {
            key: FlowKey {
                src: u128::from_be_bytes(t.src),
                dst: u128::from_be_bytes(t.dst),
                sport,
                dport,
                proto: t.proto,
                v6,
            },
            len,
            tos,
            flags: f.tcp_flags,
        })
    }

    /// The timeouts, as [`due`] takes them.
    fn timeouts(&self) -> (i64, i64) {
        (self.inactive, self.active)
    }

    /// Counts a batch: parses every packet, hashes its flow and prefetches
    /// the slot its probe run starts at; then counts each packet into that
    /// slot. A prefetch does not wait for its line, so the batch's misses
    /// overlap and a large cache costs about one memory latency per batch
    /// rather than one per packet.
    fn account(&mut self, batch: &Batch, now: i64) {
        let (mut n4, mut n6) = (0, 0);
        for p in batch.iter() {
            let Some(s) = self.parse(p) else { continue };
            if s.key.v6 {
                let k = key6(&s.key);
                let h = self.v6.table.home_of(&k);
                self.v6.table.prefetch_at(h);
                self.seen6[n6] = (s, k, h);
                n6 += 1;
            } else {
                let k = key4(&s.key);
                let h = self.v4.table.home_of(&k);
                self.v4.table.prefetch_at(h);
                self.seen4[n4] = (s, k, h);
                n4 += 1;
            }
        }
        let tm = self.timeouts();
        for j in 0..n4 {
            let (s, k, h) = self.seen4[j];
            if !self.v4.count(k, h, &s, now, tm) {
                self.cache_full += 1;
            }
        }
        for j in 0..n6 {
            let (s, k, h) = self.seen6[j];
            if !self.v6.count(k, h, &s, now, tm) {
                self.cache_full += 1;
            }
        }
    }

    /// Exports what is due at `now` in the cache `which` picks, at most
    /// `budget` flows; the flows left to look at.
    fn expire_in<S: FlowSlot>(
        &mut self,
        which: fn(&mut FlowMonitor) -> &mut Cache<S>,
        now: i64,
        mut budget: usize,
    ) -> usize {
        let tm = self.timeouts();
        while budget > 0 {
            let Some(i) = which(self).wheel.pop_due(now) else {
                break;
            };
            budget -= 1;
            let r = which(self).record(i);
            if now >= r.last + self.inactive {
                if r.packets > 0 {
                    self.add_record(&r, END_IDLE, now);
                }
                which(self).remove(i);
            } else if now >= r.start + self.active {
                if r.packets > 0 {
                    self.add_record(&r, END_ACTIVE, now);
                }
                which(self).restart(i, now, tm);
            } else {
                which(self).wheel.insert(i, due(r.last, r.start, tm), now);
            }
        }
        budget
    }

    /// Exports what is due at `now`, at most `budget` flows; the flows
    /// left to look at.
    fn expire(&mut self, now: i64, budget: usize) -> usize {
        let budget = self.expire_in(|m| &mut m.v4, now, budget);
        self.expire_in(|m| &mut m.v6, now, budget)
    }

    /// Exports every flow of the cache `which` picks now (and empties it).
    fn flush_in<S: FlowSlot>(&mut self, which: fn(&mut FlowMonitor) -> &mut Cache<S>, now: i64) {
        let all: Vec<u32> = which(self).entries().collect();
        for i in all {
            let r = which(self).record(i);
            if r.packets > 0 {
                self.add_record(&r, END_FORCED, now);
            }
            which(self).remove(i);
        }
    }

    /// Exports every flow now (and empties the cache).
    fn flush(&mut self, now: i64) {
        self.flush_in(|m| &mut m.v4, now);
        self.flush_in(|m| &mut m.v6, now);
        self.finish_message(now);
    }

    fn nflows(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    // ---- messages ---------------------------------------------------

    fn header_len(&self) -> usize {
        match self.format {
            Format::Ipfix => 16,
            Format::NetflowV9 => 20,
        }
    }

    /// Starts a message if none is open (the templates first when due).
    fn open(&mut self, now: i64) {
        if !self.msg.buf.is_empty() {
            return;
        }
        let h = self.header_len();
        self.msg.buf.resize(h, 0);
        self.msg.set_at = 0;
        self.msg.set_tpl = 0;
        self.msg.records = 0;
        self.msg.v9_records = 0;
        if self.templates_at == i64::MIN || now - self.templates_at >= self.template_every {
            self.templates_at = now;
            self.write_templates();
            self.write_options();
        }
    }

    fn put16(&mut self, v: u16) {
        self.msg.buf.extend_from_slice(&v.to_be_bytes());
    }

    fn write_templates(&mut self) {
        let (set_id, v4, v6) = match self.format {
            Format::Ipfix => (2u16, IPFIX_V4, IPFIX_V6),
            Format::NetflowV9 => (0u16, V9_V4, V9_V6),
        };
        let at = self.msg.buf.len();
        self.put16(set_id);
        self.put16(0);
        for (id, fields) in [(TPL_V4, v4), (TPL_V6, v6)] {
            self.put16(id);
            self.put16(fields.len() as u16);
            for &(ie, len) in fields {
                self.put16(ie);
                self.put16(len);
            }
            self.msg.v9_records += 1;
        }
        let len = (self.msg.buf.len() - at) as u16;
        self.msg.buf[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
        // The options template.
        let at = self.msg.buf.len();
        match self.format {
            Format::Ipfix => {
                self.put16(3);
                self.put16(0);
                self.put16(TPL_OPTIONS);
                self.put16((IPFIX_OPTIONS_SCOPE.len() + IPFIX_OPTIONS.len()) as u16);
                self.put16(IPFIX_OPTIONS_SCOPE.len() as u16);
                for &(ie, len) in IPFIX_OPTIONS_SCOPE.iter().chain(IPFIX_OPTIONS) {
                    self.put16(ie);
                    self.put16(len);
                }
            }
            Format::NetflowV9 => {
                self.put16(1);
                self.put16(0);
                self.put16(TPL_OPTIONS);
                self.put16((V9_OPTIONS_SCOPE.len() * 4) as u16);
                self.put16((V9_OPTIONS.len() * 4) as u16);
                for &(ie, len) in V9_OPTIONS_SCOPE.iter().chain(V9_OPTIONS) {
                    self.put16(ie);
                    self.put16(len);
                }
                // v9 FlowSets are padded to 4 bytes.
                while !(self.msg.buf.len() - at).is_multiple_of(4) {
                    self.msg.buf.push(0);
                }
            }
        }
        self.msg.v9_records += 1;
        let len = (self.msg.buf.len() - at) as u16;
        self.msg.buf[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
    }

    /// One options data record (in a set of its own).
    fn write_options(&mut self) {
        let at = self.msg.buf.len();
        self.put16(TPL_OPTIONS);
        self.put16(0);
        let b = &mut self.msg.buf;
        b.extend_from_slice(&self.domain.to_be_bytes());
        match self.format {
            Format::Ipfix => {
                b.extend_from_slice(&self.exported_messages.to_be_bytes());
                b.extend_from_slice(&self.exported_records.to_be_bytes());
                b.extend_from_slice(&self.cache_full.to_be_bytes());
                b.extend_from_slice(&(self.sampling as u32).to_be_bytes());
            }
            Format::NetflowV9 => {
                b.extend_from_slice(&(self.sampling as u32).to_be_bytes());
                b.push(1);
                while !(b.len() - at).is_multiple_of(4) {
                    b.push(0);
                }
            }
        }
        self.msg.v9_records += 1;
        let len = (self.msg.buf.len() - at) as u16;
        self.msg.buf[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
    }

    /// Closes the open data set (its length; v9: padding).
    fn close_set(&mut self) {
        if self.msg.set_tpl == 0 {
            return;
        }
        let at = self.msg.set_at;
        if self.format == Format::NetflowV9 {
            while !(self.msg.buf.len() - at).is_multiple_of(4) {
                self.msg.buf.push(0);
            }
        }
        let len = (self.msg.buf.len() - at) as u16;
        self.msg.buf[at + 2..at + 4].copy_from_slice(&len.to_be_bytes());
        self.msg.set_tpl = 0;
    }

    /// Appends `r`'s record, ending the message first if it is full.
    fn add_record(&mut self, r: &Record, reason: u8, now: i64) {
        let (tpl, fields) = match (self.format, r.key.v6) {
            (Format::Ipfix, false) => (TPL_V4, IPFIX_V4),
            (Format::Ipfix, true) => (TPL_V6, IPFIX_V6),
            (Format::NetflowV9, false) => (TPL_V4, V9_V4),
            (Format::NetflowV9, true) => (TPL_V6, V9_V6),
        };
        let need = record_len(fields) + if self.msg.set_tpl == tpl { 0 } else { 4 + 3 };
        if !self.msg.buf.is_empty() && self.msg.buf.len() + need > self.mtu {
            self.finish_message(now);
        }
        self.open(now);
        if self.msg.set_tpl != tpl {
            self.close_set();
            self.msg.set_at = self.msg.buf.len();
            self.msg.set_tpl = tpl;
            self.put16(tpl);
            self.put16(0);
        }
        let boot = self.boot.unwrap_or(r.first - V9_BOOT_LEAD);
        let b = &mut self.msg.buf;
        let k = &r.key;
        if k.v6 {
            b.extend_from_slice(&k.src.to_be_bytes());
            b.extend_from_slice(&k.dst.to_be_bytes());
        } else {
            b.extend_from_slice(&(k.src >> 96).to_be_bytes()[12..]);
            b.extend_from_slice(&(k.dst >> 96).to_be_bytes()[12..]);
        }
        b.extend_from_slice(&k.sport.to_be_bytes());
        b.extend_from_slice(&k.dport.to_be_bytes());
        b.push(k.proto);
        b.push(r.tos);
        match self.format {
            Format::Ipfix => {
                b.extend_from_slice(&(r.tcp_flags as u16).to_be_bytes());
                b.push(reason);
                b.extend_from_slice(&r.packets.to_be_bytes());
                b.extend_from_slice(&r.bytes.to_be_bytes());
                b.extend_from_slice(&((r.first / 1_000_000) as u64).to_be_bytes());
                b.extend_from_slice(&((r.last / 1_000_000) as u64).to_be_bytes());
                b.extend_from_slice(&icmp_type_code(k).to_be_bytes());
            }
            Format::NetflowV9 => {
                b.push(r.tcp_flags);
                b.extend_from_slice(&r.packets.to_be_bytes());
                b.extend_from_slice(&r.bytes.to_be_bytes());
                let up = |t: i64| (((t - boot).max(0) / 1_000_000) as u32).to_be_bytes();
                b.extend_from_slice(&up(r.first));
                b.extend_from_slice(&up(r.last));
                b.extend_from_slice(&icmp_type_code(k).to_be_bytes());
            }
        }
        self.msg.records += 1;
        self.msg.v9_records += 1;
    }

    /// Ends the open message (if any): writes its header and queues it.
    fn finish_message(&mut self, now: i64) {
        if self.msg.buf.is_empty() {
            return;
        }
        self.close_set();
        let len = self.msg.buf.len() as u16;
        let secs = (now.max(0) / 1_000_000_000) as u32;
        let b = &mut self.msg.buf;
        match self.format {
            Format::Ipfix => {
                b[0..2].copy_from_slice(&10u16.to_be_bytes());
                b[2..4].copy_from_slice(&len.to_be_bytes());
                b[4..8].copy_from_slice(&secs.to_be_bytes());
                b[8..12].copy_from_slice(&self.sequence.to_be_bytes());
                b[12..16].copy_from_slice(&self.domain.to_be_bytes());
                self.sequence = self.sequence.wrapping_add(self.msg.records);
            }
            Format::NetflowV9 => {
                let boot = self.boot.unwrap_or(now - V9_BOOT_LEAD);
                let up = ((now - boot).max(0) / 1_000_000) as u32;
                b[0..2].copy_from_slice(&9u16.to_be_bytes());
                b[2..4].copy_from_slice(&self.msg.v9_records.to_be_bytes());
                b[4..8].copy_from_slice(&up.to_be_bytes());
                b[8..12].copy_from_slice(&secs.to_be_bytes());
                b[12..16].copy_from_slice(&(self.exported_messages as u32).to_be_bytes());
                b[16..20].copy_from_slice(&self.domain.to_be_bytes());
            }
        }
        self.exported_records += self.msg.records as u64;
        self.exported_messages += 1;
        let next = self
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(self.mtu));
        let done = std::mem::replace(&mut self.msg.buf, next);
        self.ready.push(done);
    }

    /// Emits what is ready on output 1, at most one batch's worth; true if
    /// more is left.
    fn emit_ready(&mut self, out: &mut Out<'_>) -> bool {
        let n = self.ready.len().min(BATCH_MAX / 8);
        for mut m in self.ready.drain(..n) {
            match out.pool.alloc_from(&m) {
                Some(p) => out.emit(1, p),
                None => self.export_refused += 1,
            }
            m.clear();
            if self.spare.len() < 8 {
                self.spare.push(m);
            }
        }
        !self.ready.is_empty()
    }

    fn table_text(&self) -> String {
        let mut v: Vec<Record> = (self.v4.entries().map(|i| self.v4.record(i)))
            .chain(self.v6.entries().map(|i| self.v6.record(i)))
            .collect();
        v.sort_by_key(|r| (r.key.v6, r.key.proto, r.key.src, r.key.dst, r.key.sport));
        let mut s = String::new();
        for r in v {
            let k = &r.key;
            let proto = match k.proto {
                6 => "tcp".to_string(),
                17 => "udp".to_string(),
                1 => "icmp".to_string(),
                58 => "icmp6".to_string(),
                p => format!("proto{p}"),
            };
            let (a, b) = if k.v6 {
                (
                    format!("[{}]", std::net::Ipv6Addr::from(k.src)),
                    format!("[{}]", std::net::Ipv6Addr::from(k.dst)),
                )
            } else {
                (
                    std::net::Ipv4Addr::from((k.src >> 96) as u32).to_string(),
                    std::net::Ipv4Addr::from((k.dst >> 96) as u32).to_string(),
                )
            };
            let _ = writeln!(
                s,
                "{proto} {a}:{} {b}:{} packets={} bytes={}",
                k.sport, k.dport, r.packets, r.bytes
            );
        }
        s
    }
}

impl Element for FlowMonitor {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        self.last_now = now;
        if self.boot.is_none() {
            self.boot = Some(now - V9_BOOT_LEAD);
        }
        self.account(batch, now);
        out.pass(0);
        if !self.ready.is_empty() {
            self.emit_ready(out);
        }
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        self.last_now = now;
        let left = self.expire(now, EXPIRE_BUDGET);
        if left == 0 {
            self.emit_ready(out);
            return TaskStatus::Busy;
        }
        // What expired in this run goes out now rather than waiting for
        // the message to fill.
        self.finish_message(now);
        if self.emit_ready(out) {
            return TaskStatus::Busy;
        }
        let (w4, w6) = (&self.v4.wheel, &self.v6.wheel);
        let mut next = now + WHEEL_UNIT.max(self.inactive.min(self.active));
        for w in [w4, w6] {
            if !w.is_empty() {
                next = next.min(w.next_due(now));
            }
        }
        TaskStatus::SleepUntil(next)
    }

    fn after_write(&mut self, out: &mut Out<'_>) -> bool {
        self.emit_ready(out)
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("packets", self.packets);
        c.count("nflows", self.nflows() as u64);
        c.count("exported_records", self.exported_records);
        c.count("exported_messages", self.exported_messages);
        c.count("cache_full", self.cache_full);
        c.count("not_ip", self.not_ip);
        c.count("sampled_out", self.sampled_out);
        c.count("export_refused", self.export_refused);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("nflows"),
            HandlerInfo::read("capacity"),
            HandlerInfo::read("capacity6"),
            HandlerInfo::read("table"),
            HandlerInfo::read("packets"),
            HandlerInfo::read("exported_records"),
            HandlerInfo::read("exported_messages"),
            HandlerInfo::read("cache_full"),
            HandlerInfo::read("not_ip"),
            HandlerInfo::write("flush"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "nflows" => Ok(self.nflows().to_string()),
            "capacity" => Ok(self.v4.cold.capacity().to_string()),
            "capacity6" => Ok(self.v6.cold.capacity().to_string()),
            "table" => Ok(self.table_text()),
            "packets" => Ok(self.packets.to_string()),
            "exported_records" => Ok(self.exported_records.to_string()),
            "exported_messages" => Ok(self.exported_messages.to_string()),
            "cache_full" => Ok(self.cache_full.to_string()),
            "not_ip" => Ok(self.not_ip.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "flush" => {
                let now = self.last_now;
                self.flush(now);
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

    const SEC: i64 = 1_000_000_000;
    /// 2026-11-27T00:00:00Z.
    const T0: i64 = 1_795_737_600 * SEC;

    fn make(config: &str) -> Box<dyn Element> {
        configure(
            FlowMonitor::SPEC.keywords,
            FlowMonitor::configure,
            config,
            1,
            2,
        )
        .expect("configures")
    }

    fn send(e: &mut dyn Element, pool: &Pool, data: &[u8], now: i64) -> Vec<Vec<u8>> {
        let mut ctrl = Control::default();
        let outs = push_at(e, pool, 0, vec![pkt(pool, data)], 2, now, &mut ctrl);
        assert_eq!(outs[0].len(), 1, "the packet passes");
        assert_eq!(outs[0][0].data(), data, "unchanged");
        outs[1].iter().map(|p| p.data().to_vec()).collect()
    }

    fn tick(e: &mut dyn Element, pool: &Pool, now: i64) -> Vec<Vec<u8>> {
        let mut ctrl = Control::default();
        let (_, outs) = run_task(e, pool, vec![], 2, now, &mut ctrl);
        outs[1].iter().map(|p| p.data().to_vec()).collect()
    }

    fn be16(b: &[u8], o: usize) -> u16 {
        u16::from_be_bytes([b[o], b[o + 1]])
    }
    fn be32(b: &[u8], o: usize) -> u32 {
        u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
    }
    fn be64(b: &[u8], o: usize) -> u64 {
        u64::from_be_bytes(b[o..o + 8].try_into().expect("8 bytes"))
    }

    /// The sets of an IPFIX message: (set id, body).
    fn sets(m: &[u8], header: usize) -> Vec<(u16, Vec<u8>)> {
        let mut v = Vec::new();
        let mut at = header;
        while at < m.len() {
            let (id, len) = (be16(m, at), be16(m, at + 2) as usize);
            assert!(len >= 4 && at + len <= m.len(), "set at {at}: length {len}");
            v.push((id, m[at + 4..at + len].to_vec()));
            at += len;
        }
        v
    }

    #[test]
    fn an_idle_flow_is_exported_as_ipfix_with_its_templates() {
        let pool = Pool::new(64).expect("pool");
        let mut e = make("INACTIVE_TIMEOUT 2, DOMAIN 7");
        let a = udp("10.0.0.1", 1000, "192.0.2.9", 53);
        let b = tcp("10.0.0.2", 40000, "192.0.2.10", 443, 0x02);
        assert!(send(&mut *e, &pool, &a, T0).is_empty());
        assert!(send(&mut *e, &pool, &a, T0 + SEC).is_empty());
        assert!(send(&mut *e, &pool, &b, T0 + SEC).is_empty());
        assert_eq!(read(&*e, "nflows"), "2");
        assert_eq!(
            read(&*e, "table"),
            "tcp 10.0.0.2:40000 192.0.2.10:443 packets=1 bytes=40\n\
             udp 10.0.0.1:1000 192.0.2.9:53 packets=2 bytes=64\n"
        );
        // Not idle long enough yet.
        assert!(tick(&mut *e, &pool, T0 + 2 * SEC).is_empty());
        let msgs = tick(&mut *e, &pool, T0 + 4 * SEC);
        assert_eq!(msgs.len(), 1);
        let m = &msgs[0];
        // The header: version 10, length, export time, sequence 0, domain.
        assert_eq!(be16(m, 0), 10);
        assert_eq!(be16(m, 2) as usize, m.len());
        assert_eq!(be32(m, 4) as i64, (T0 + 4 * SEC) / SEC);
        assert_eq!(be32(m, 8), 0);
        assert_eq!(be32(m, 12), 7);
        let s = sets(m, 16);
        let ids: Vec<u16> = s.iter().map(|x| x.0).collect();
        assert_eq!(ids, [2, 3, TPL_OPTIONS, TPL_V4]);
        // Template 256: 13 fields, the first sourceIPv4Address/4.
        let t = &s[0].1;
        assert_eq!((be16(t, 0), be16(t, 2)), (TPL_V4, 13));
        assert_eq!((be16(t, 4), be16(t, 6)), (8, 4));
        // Options: scope domain 7, 0 messages and records before, 0
        // refused, sampling 1.
        let o = &s[2].1;
        assert_eq!(be32(o, 0), 7);
        assert_eq!((be64(o, 4), be64(o, 12), be64(o, 20)), (0, 0, 0));
        assert_eq!(be32(o, 28), 1);
        // Two IPv4 records of 51 bytes.
        let d = &s[3].1;
        assert_eq!(d.len(), 2 * record_len(IPFIX_V4));
        let rec = |r: &[u8]| {
            (
                std::net::Ipv4Addr::from(be32(r, 0)).to_string(),
                be16(r, 8),
                be16(r, 10),
                r[12],
                be16(r, 14),
                r[16],
                be64(r, 17),
                be64(r, 25),
                be64(r, 33) as i64,
                be64(r, 41) as i64,
            )
        };
        let mut recs = vec![rec(&d[..51]), rec(&d[51..])];
        recs.sort();
        assert_eq!(
            recs,
            [
                (
                    "10.0.0.1".into(),
                    1000,
                    53,
                    17,
                    0,
                    END_IDLE,
                    2,
                    64,
                    T0 / 1_000_000,
                    (T0 + SEC) / 1_000_000
                ),
                (
                    "10.0.0.2".into(),
                    40000,
                    443,
                    6,
                    0x02,
                    END_IDLE,
                    1,
                    40,
                    (T0 + SEC) / 1_000_000,
                    (T0 + SEC) / 1_000_000
                ),
            ]
        );
        assert_eq!(read(&*e, "nflows"), "0");
        assert_eq!(read(&*e, "exported_records"), "2");
        // The next message counts the two records before it, and carries
        // no templates (not due for 30 s).
        send(&mut *e, &pool, &a, T0 + 5 * SEC);
        let m = &tick(&mut *e, &pool, T0 + 8 * SEC)[0];
        assert_eq!(be32(m, 8), 2);
        let ids: Vec<u16> = sets(m, 16).iter().map(|x| x.0).collect();
        assert_eq!(ids, [TPL_V4]);
    }

    #[test]
    fn a_long_flow_is_exported_every_active_timeout_and_ipv6_has_its_template() {
        let pool = Pool::new(64).expect("pool");
        let mut e = make("ACTIVE_TIMEOUT 10, INACTIVE_TIMEOUT 5");
        let p = udp6("2001:db8::1", 5000, "2001:db8::2", 6000);
        let mut got = Vec::new();
        for s in 0..25 {
            send(&mut *e, &pool, &p, T0 + s * SEC);
            got.extend(tick(&mut *e, &pool, T0 + s * SEC + SEC / 2));
        }
        // Active exports: at 10.5 s the packets of 0..=10 s; the record
        // starts again then and is exported at 20.5 s with those of
        // 11..=20 s (the flow's idle check at 20 s came due in the same
        // tick).
        assert_eq!(got.len(), 2);
        for (m, (n, first, last)) in got.iter().zip([(11, 0, 10), (10, 11, 20)]) {
            let s = sets(m, 16);
            let d = &s.iter().find(|x| x.0 == TPL_V6).expect("IPv6 data").1;
            assert_eq!(d.len(), record_len(IPFIX_V6));
            assert_eq!(
                std::net::Ipv6Addr::from(u128::from_be_bytes(d[..16].try_into().expect("16")))
                    .to_string(),
                "2001:db8::1"
            );
            assert_eq!((be16(d, 32), be16(d, 34), d[36]), (5000, 6000, 17));
            assert_eq!(d[40], END_ACTIVE);
            assert_eq!(be64(d, 41), n);
            let ms = |o: usize| (be64(d, o) as i64 - T0 / 1_000_000) / 1000;
            assert_eq!((ms(57), ms(65)), (first, last));
        }
    }

    #[test]
    fn netflow_v9_counts_messages_and_flush_exports_everything() {
        let pool = Pool::new(64).expect("pool");
        let mut e = make("EXPORT netflow9, SAMPLING 2, DOMAIN 3");
        let a = udp("10.0.0.1", 1000, "192.0.2.9", 53);
        for s in 0..4 {
            send(&mut *e, &pool, &a, T0 + s * SEC);
        }
        // Every second packet is counted.
        assert_eq!(
            read(&*e, "table"),
            "udp 10.0.0.1:1000 192.0.2.9:53 packets=2 bytes=64\n"
        );
        e.write_handler("flush", "").expect("flush");
        let mut bufs = vec![Batch::new(), Batch::new()];
        let mut ctrl = Control::default();
        let more = {
            let mut out = Out::new(&mut bufs, &pool, T0 + 4 * SEC, &mut ctrl);
            e.after_write(&mut out)
        };
        assert!(!more);
        let m: Vec<Vec<u8>> = bufs[1].drain().map(|p| p.data().to_vec()).collect();
        assert_eq!(m.len(), 1);
        let m = &m[0];
        assert_eq!(be16(m, 0), 9);
        // Records: two templates, the options template, the options record
        // and one flow.
        assert_eq!(be16(m, 2), 5);
        assert_eq!(be32(m, 12), 0, "the first message");
        assert_eq!(be32(m, 16), 3);
        let s = sets(m, 20);
        let ids: Vec<u16> = s.iter().map(|x| x.0).collect();
        assert_eq!(ids, [0, 1, TPL_OPTIONS, TPL_V4]);
        for (_, body) in &s {
            assert!((body.len() + 4).is_multiple_of(4), "padded");
        }
        let o = &s[2].1;
        assert_eq!((be32(o, 0), be32(o, 4), o[8]), (3, 2, 1));
        let d = &s[3].1;
        assert_eq!((be16(d, 8), be16(d, 10), d[12]), (1000, 53, 17));
        assert_eq!((be64(d, 15), be64(d, 23)), (2, 64));
        // FIRST and LAST from one second before the first packet seen.
        assert_eq!((be32(d, 31), be32(d, 35)), (1000, 3000));
        assert_eq!(read(&*e, "nflows"), "0");
    }

    #[test]
    fn a_full_cache_counts_what_it_refuses_and_the_packets_still_pass() {
        let pool = Pool::new(64).expect("pool");
        let mut e = make("CAPACITY 2");
        for port in 1..=4 {
            send(&mut *e, &pool, &udp("10.0.0.1", port, "192.0.2.9", 53), T0);
        }
        assert_eq!(read(&*e, "nflows"), "2");
        assert_eq!(read(&*e, "cache_full"), "2");
        assert_eq!(read(&*e, "packets"), "4");
    }

    #[test]
    fn each_family_has_its_own_capacity() {
        let pool = Pool::new(64).expect("pool");
        let mut e = make("CAPACITY 1, CAPACITY6 0");
        send(
            &mut *e,
            &pool,
            &udp6("2001:db8::1", 1000, "2001:db8::2", 53),
            T0,
        );
        send(&mut *e, &pool, &udp("10.0.0.1", 1000, "192.0.2.9", 53), T0);
        send(&mut *e, &pool, &udp("10.0.0.1", 1000, "192.0.2.9", 53), T0);
        send(&mut *e, &pool, &udp("10.0.0.2", 1000, "192.0.2.9", 53), T0);
        assert_eq!(read(&*e, "capacity"), "1");
        assert_eq!(read(&*e, "capacity6"), "0");
        assert_eq!(read(&*e, "cache_full"), "2");
        assert_eq!(
            read(&*e, "table"),
            "udp 10.0.0.1:1000 192.0.2.9:53 packets=2 bytes=64\n"
        );
        let mut e = make("CAPACITY 1, CAPACITY6 2");
        for port in [1000, 1000, 1001, 1002] {
            send(
                &mut *e,
                &pool,
                &udp6("2001:db8::1", port, "2001:db8::2", 53),
                T0,
            );
        }
        assert_eq!(read(&*e, "cache_full"), "1");
        assert_eq!(
            read(&*e, "table"),
            "udp [2001:db8::1]:1000 [2001:db8::2]:53 packets=2 bytes=104\n\
             udp [2001:db8::1]:1001 [2001:db8::2]:53 packets=1 bytes=52\n"
        );
    }

    #[test]
    fn icmp_flows_are_keyed_by_type_and_code() {
        let pool = Pool::new(64).expect("pool");
        let mut e = make("");
        send(&mut *e, &pool, &icmp("10.0.0.1", "192.0.2.9", 8, 77), T0);
        send(&mut *e, &pool, &icmp("10.0.0.1", "192.0.2.9", 8, 78), T0);
        send(&mut *e, &pool, &icmp("192.0.2.9", "10.0.0.1", 0, 77), T0);
        assert_eq!(
            read(&*e, "table"),
            "icmp 10.0.0.1:0 192.0.2.9:2048 packets=2 bytes=56\n\
             icmp 192.0.2.9:0 10.0.0.1:0 packets=1 bytes=28\n"
        );
    }

    #[test]
    fn bad_keywords_are_refused_by_name() {
        let c = |s: &str| {
            config_err(configure(
                FlowMonitor::SPEC.keywords,
                FlowMonitor::configure,
                s,
                1,
                2,
            ))
        };
        assert_eq!(
            c("EXPORT sflow"),
            "EXPORT: expected ipfix or netflow9, found `sflow`"
        );
        assert_eq!(c("CAPACITY 0"), "CAPACITY: expected 1 to 16777216");
        assert_eq!(c("CAPACITY6 16777217"), "CAPACITY6: expected 0 to 16777216");
        assert_eq!(c("MTU 100"), "MTU: expected 512 to 65000 bytes");
        assert_eq!(
            c("INACTIVE_TIMEOUT 0"),
            "INACTIVE_TIMEOUT: expected a time from 0 to 86400 seconds (not 0)"
        );
    }
}
