//! The mapping table of the address-only and ping rewriters
//! (`IPAddrRewriter`, `IPAddrPairRewriter`, `ICMPPingRewriter`), and the
//! interface through which `ICMPRewriter` finds the flows of the rewriters
//! it names.
//!
//! A flow owns two entries: the forward entry, keyed by the packet's
//! original flow identifier, and the reply entry, keyed by the reverse of
//! the rewritten identifier. Lookups go through a hash map; a second,
//! bucket-ordered view of the entries reproduces the order in which the
//! `table` handler lists them (chained buckets, newest entry first, one
//! bucket growing to 3, 7, 15, ... when there are more than two entries
//! per bucket).
//!
//! IPv4 flows are keyed by the compact 12-byte `FlowId`, as Click keys
//! them. IPv6 flows (pronto's extension; Click's rewriters are IPv4-only)
//! live in a second map keyed by `wire::flow::FiveTuple`, as in `rwcore`
//! (see its module doc for the choice): a slot of the flow slab holds
//! either family, an IPv6 slot's two keys live in a side array, and the
//! IPv4 path pays one version test. IPv6 entries are not in the
//! bucket-ordered view (Click has no order for them to reproduce); the
//! `table` handler lists them after the IPv4 ones, in slot order. A
//! pattern never maps a packet of the other family (a mapping failure);
//! IPv6 has no header checksum, and the transport checksums (TCP, UDP,
//! ICMPv6, all over a pseudo-header) are updated incrementally.

use std::sync::{Arc, Mutex};

use pronto_packet::wire::flow::{FiveTuple, Flow as WireFlow, Fragment};
use pronto_packet::wire::{addr4, be16, set_be16, IP_PROTO_ICMP, IP_PROTO_TCP, IP_PROTO_UDP};
use pronto_packet::{Batch, Packet};

use crate::tcpudp::rwcore::{
    apply_delta, ip6_str, ip_str, lock, parse_anno, rewriter_spec, secs, update_in_cksum, Core,
    FlowId, FlowMap, FlowMap6, Inputs, MappingTable, HZ,
};
use crate::{
    push_each, Args, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Shared,
    FIELD_DST_IP, FIELD_OTHER, FIELD_SRC_IP,
};

/// ICMP echo request type.
const ICMP_ECHO: u8 = 8;
/// ICMP echo reply type.
const ICMP_ECHOREPLY: u8 = 0;
/// IP protocol number of ICMPv6.
pub(crate) const IP_PROTO_ICMPV6: u8 = 58;
/// ICMPv6 echo request type.
const ICMP6_ECHO: u8 = 128;
/// ICMPv6 echo reply type.
const ICMP6_ECHOREPLY: u8 = 129;

/// The checksum delta of rewriting IPv6 addresses `from` to `to` (source
/// and destination: the pseudo-header's), plus, for a ping flow, its
/// identifier (`sport`).
fn delta6(from: &FiveTuple, to: &FiveTuple, with_id: bool) -> u16 {
    let mut d = 0u16;
    for (a, b) in [(&from.src, &to.src), (&from.dst, &to.dst)] {
        for i in 0..8 {
            let o = u16::from_be_bytes([a[2 * i], a[2 * i + 1]]);
            let n = u16::from_be_bytes([b[2 * i], b[2 * i + 1]]);
            d = update_in_cksum(d, o, n);
        }
    }
    if with_id {
        d = update_in_cksum(d, from.sport, to.sport);
    }
    d
}

/// Keywords every table rewriter accepts.
pub const TABLE_KEYWORDS: [&str; 7] = [
    "CAPACITY",
    "MAPPING_CAPACITY",
    "TIMEOUT",
    "GUARANTEE",
    "REAP_INTERVAL",
    "REAP_TIME",
    "REPLY_ANNO",
];

/// A ping identifier plus one, computed as the reference does on its
/// little-endian hosts: one is added to the identifier's wire bytes read
/// in host order.
#[inline]
pub fn plus1(v: u16) -> u16 {
    v.swap_bytes().wrapping_add(1).swap_bytes()
}

/// The reference's hash of a flow identifier (addresses read in host order
/// from the wire bytes, ports as numbers), which decides the table order.
fn click_hash(f: &FlowId) -> u32 {
    let s = f.sport as u32;
    let d = f.dport as u32;
    let sx = f.saddr.swap_bytes();
    let dx = f.daddr.swap_bytes();
    sx.rotate_left(s % 16 + 1) ^ dx.rotate_left(31 - d % 16) ^ ((d << 16) | s)
}

/// What a rewriter returns to `ICMPRewriter` for an embedded flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpMatch {
    /// The flow the entry rewrites to (the entry's rewritten identifier).
    pub rewritten: FlowId,
    /// True when the entry found is the flow's reply entry.
    pub reply: bool,
    /// The entry's output port on its rewriter.
    pub output: usize,
    /// The flow's saved reply annotation byte.
    pub reply_anno: u8,
}

/// What a rewriter returns to `ICMPRewriter` for an embedded IPv6 flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpMatch6 {
    /// The flow the entry rewrites to (the entry's rewritten identifier).
    pub rewritten: FiveTuple,
    /// True when the entry found is the flow's reply entry.
    pub reply: bool,
    /// The entry's output port on its rewriter.
    pub output: usize,
    /// The flow's saved reply annotation byte.
    pub reply_anno: u8,
}

/// A rewriter's mapping table as `ICMPRewriter` sees it.
pub trait IcmpLookup: Send {
    /// Finds the entry for `search`, the reverse of a flow embedded in an
    /// ICMP error, whose transport protocol is `proto` (the reference's
    /// `get_entry(proto, flowid, get_entry_reply)`: lookup only, no new
    /// mapping).
    fn icmp_lookup(&mut self, proto: u8, search: FlowId) -> Option<IcmpMatch>;

    /// As [`IcmpLookup::icmp_lookup`], for the reverse of an IPv6 flow
    /// embedded in an ICMPv6 error (`search.proto`: its upper-layer
    /// protocol; for an embedded echo request, `sport` is the identifier
    /// and `dport` 0).
    fn icmp_lookup6(&mut self, search: &FiveTuple) -> Option<IcmpMatch6>;
}

/// What a rewriter shares (its [`crate::Element::shared`] object) so that
/// `ICMPRewriter` elements naming it can look up its flows.
pub struct IcmpMapHandle {
    /// The rewriter's number of outputs (for port offsets).
    pub noutputs: usize,
    /// The rewriter's table.
    pub table: Arc<Mutex<dyn IcmpLookup>>,
}

/// Which rewriter a [`Table`] serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `IPAddrRewriter`: flows keyed by source address; replies by
    /// destination address.
    Addr,
    /// `IPAddrPairRewriter`: flows keyed by address pair.
    Pair,
    /// `ICMPPingRewriter`: echo flows keyed by addresses and identifier.
    Ping,
}

#[derive(Clone, Copy, Debug)]
struct Flow {
    /// Entry keys: forward (original id) and reply (reverse of rewritten);
    /// unused for an IPv6 flow (its keys are in `Table::keys6`).
    keys: [FlowId; 2],
    /// An IPv6 flow.
    v6: bool,
    outputs: [u32; 2],
    ip_delta: u16,
    l4_delta: u16,
    /// Expiry in jiffies.
    expiry: i64,
    guaranteed: bool,
    reply_anno: u8,
    input: u32,
    live: bool,
}

/// The mapping table and everything around it.
pub struct Table {
    kind: Kind,
    /// Input specifications, one per input.
    pub inputs: Inputs,
    flows: Vec<Flow>,
    free: Vec<u32>,
    map: FlowMap,
    /// The IPv6 entries.
    map6: FlowMap6,
    /// An IPv6 flow's two keys, at its slot's index.
    keys6: Vec<[FiveTuple; 2]>,
    /// Entry handles (`flow << 1 | direction`) per bucket, oldest first.
    buckets: Vec<Vec<u32>>,
    nentries: usize,
    live: usize,
    capacity: i64,
    timeout: i64,
    guarantee: i64,
    reap_interval: i64,
    next_reap: Option<i64>,
    last_now: i64,
    dst_anno: bool,
    reply_anno: Option<usize>,
}

impl Table {
    /// Reads the table keywords and the input specifications. `dst_anno`
    /// is read by the caller (only `ICMPPingRewriter` has the keyword);
    /// `timeout` is the class's default timeout in seconds.
    pub fn configure(
        ctx: &ConfigCtx<'_>,
        mut a: Args,
        kind: Kind,
        timeout: i64,
        dst_anno: bool,
    ) -> Result<Table, ConfigError> {
        let reply_anno = match a.read::<String>("REPLY_ANNO")? {
            Some(s) => Some(parse_anno(&s)?),
            None => None,
        };
        let mut cap_word = a.read::<String>("CAPACITY")?;
        if let Some(w) = a.read::<String>("MAPPING_CAPACITY")? {
            cap_word = Some(w);
        }
        let timeout = secs(a.read("TIMEOUT")?).unwrap_or(timeout * HZ);
        let guarantee = secs(a.read("GUARANTEE")?).unwrap_or(5 * HZ);
        let mut reap = secs(a.read("REAP_INTERVAL")?).unwrap_or(900 * HZ);
        if let Some(v) = secs(a.read("REAP_TIME")?) {
            reap = v;
        }
        let capacity = match cap_word {
            None => 0x7fff_ffff,
            Some(w) => match pronto_lang::args::parse_i64(&w) {
                Ok(v) if (-0x8000_0000..=0x7fff_ffff).contains(&v) => v,
                _ => return Err(ConfigError::new("bad MAPPING_CAPACITY")),
            },
        };
        let specs = a.rest();
        a.finish()?;
        let inputs = Inputs::configure(ctx, &specs)?;
        let reserve = (capacity.max(0) as usize).min(4096);
        Ok(Table {
            kind,
            inputs,
            flows: Vec::with_capacity(reserve),
            free: Vec::with_capacity(reserve),
            map: pronto_hash::map_with_capacity(2 * reserve),
            map6: pronto_hash::map(),
            keys6: Vec::new(),
            buckets: vec![Vec::new(); 1],
            nentries: 0,
            live: 0,
            capacity,
            timeout,
            guarantee,
            reap_interval: reap,
            next_reap: None,
            last_now: 0,
            dst_anno,
            reply_anno,
        })
    }

    /// Number of live flows.
    pub fn size(&self) -> usize {
        self.live
    }

    // ----------------------------------------------------------- buckets

    fn key_of(&self, h: u32) -> FlowId {
        self.flows[(h >> 1) as usize].keys[(h & 1) as usize]
    }

    fn bucket_of(&self, key: &FlowId) -> usize {
        click_hash(key) as usize % self.buckets.len()
    }

    /// Adds an entry at the head of its bucket.
    fn bucket_insert(&mut self, h: u32) {
        let b = self.bucket_of(&self.key_of(h));
        self.buckets[b].push(h);
        self.nentries += 1;
    }

    /// Puts entry `new` where entry `old` (same key) was.
    fn bucket_replace(&mut self, old: u32, new: u32) {
        let b = self.bucket_of(&self.key_of(new));
        if let Some(slot) = self.buckets[b].iter_mut().find(|h| **h == old) {
            *slot = new;
        }
    }

    fn bucket_remove(&mut self, h: u32) {
        let b = self.bucket_of(&self.key_of(h));
        if let Some(i) = self.buckets[b].iter().position(|x| *x == h) {
            self.buckets[b].remove(i);
            self.nentries -= 1;
        }
    }

    /// Grows the bucket array when there are over two entries per bucket,
    /// relinking entries the way the reference does.
    fn maybe_rehash(&mut self) {
        let nb = self.buckets.len();
        if self.nentries <= 2 * nb || nb >= (1 << 30) {
            return;
        }
        let mut n = 1usize;
        while n < nb + 1 {
            n = ((n + 1) << 1) - 1;
        }
        let old = std::mem::replace(&mut self.buckets, vec![Vec::new(); n]);
        for b in old {
            for &h in b.iter().rev() {
                let nb = self.bucket_of(&self.key_of(h));
                self.buckets[nb].push(h);
            }
        }
    }

    // ----------------------------------------------------------- flows

    fn lookup(&self, key: &FlowId) -> Option<u32> {
        self.map.get(key).copied()
    }

    /// Installs a flow from `flowid` to `rewritten` for input `port`;
    /// `None` when the class refuses the rewritten identifier or the table
    /// is full of guaranteed flows.
    fn add_flow(
        &mut self,
        port: usize,
        flowid: FlowId,
        rewritten: FlowId,
        (fo, ro): (usize, usize),
        now: i64,
    ) -> Option<u32> {
        let ok = match self.kind {
            Kind::Addr => rewritten.sport == 0 && rewritten.dport == 0 && rewritten.daddr == 0,
            Kind::Pair => rewritten.sport == 0 && rewritten.dport == 0,
            Kind::Ping => {
                plus1(flowid.sport) == flowid.dport && plus1(rewritten.sport) == rewritten.dport
            }
        };
        if !ok {
            return None;
        }
        if fo >= self.inputs.noutputs() || ro >= self.inputs.noutputs() {
            return None;
        }
        let w = |f: FlowId| {
            [
                (f.saddr >> 16) as u16,
                f.saddr as u16,
                (f.daddr >> 16) as u16,
                f.daddr as u16,
                f.sport,
                f.dport,
            ]
        };
        let (sw, dw) = (w(flowid), w(rewritten));
        let mut ip_delta = 0u16;
        for i in 0..4 {
            ip_delta = update_in_cksum(ip_delta, sw[i], dw[i]);
        }
        let l4_delta = if self.kind == Kind::Ping {
            update_in_cksum(0, flowid.sport, rewritten.sport)
        } else {
            let mut d = ip_delta;
            for i in 4..6 {
                d = update_in_cksum(d, sw[i], dw[i]);
            }
            d
        };
        let guaranteed = self.guarantee != 0;
        let flow = Flow {
            keys: [flowid, rewritten.reverse()],
            outputs: [fo as u32, ro as u32],
            ip_delta,
            l4_delta,
            expiry: now
                + if guaranteed {
                    self.guarantee
                } else {
                    self.timeout
                },
            guaranteed,
            reply_anno: 0,
            input: port as u32,
            live: true,
            v6: false,
        };
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
        let fwd = idx << 1;
        let rep = fwd | 1;
        self.map.insert(flowid, fwd);
        self.bucket_insert(fwd);
        match self.map.insert(flow.keys[1], rep) {
            Some(old) => {
                self.bucket_replace(old, rep);
                if old >> 1 != idx {
                    self.destroy((old >> 1) as usize);
                }
            }
            None => self.bucket_insert(rep),
        }
        self.live += 1;
        self.inputs[port].count += 1;
        if self.live as i64 > self.capacity && self.shrink_for_new_flow(idx as usize, now) {
            self.inputs[port].failures += 1;
            return None;
        }
        self.maybe_rehash();
        Some(fwd)
    }

    fn best_effort_expiry(&self, f: &Flow) -> i64 {
        f.expiry + self.timeout - self.guarantee
    }

    // ----------------------------------------------------------- packets

    /// Rewrites `flowid` as input `port` says and installs the flow.
    /// `Err(output)` when there is no mapping: the packet goes to that
    /// output, or is dropped when `None`.
    fn new_flow(
        &mut self,
        port: usize,
        flowid: FlowId,
        proto: u8,
        now: i64,
    ) -> Result<u32, Option<usize>> {
        let map = &self.map;
        let (mut rewritten, fo, ro) = self
            .inputs
            .choose(port, flowid, proto, |k| map.contains_key(k))?;
        if self.kind == Kind::Ping {
            rewritten.dport = plus1(rewritten.sport);
        }
        self.add_flow(port, flowid, rewritten, (fo, ro), now)
            .ok_or(None)
    }

    /// Processes one packet that arrived on `port`; returns its output, or
    /// `None` to drop it.
    pub fn process(&mut self, port: usize, p: &mut Packet, now_ns: i64) -> Option<usize> {
        let now = now_ns.div_euclid(1_000_000);
        self.last_now = now;
        match self.next_reap {
            None => self.next_reap = Some(now + self.reap_interval),
            Some(t) if self.reap_interval > 0 && now >= t => {
                self.shrink(false, now);
                self.next_reap = Some(now + self.reap_interval);
            }
            _ => {}
        }
        let nh = match p.network_header_offset() {
            Some(o) if o >= 0 => o as usize,
            _ => return self.inputs.no_mapping_output(port),
        };
        let data = p.data();
        if data.len() < nh + 20 {
            return self.inputs.no_mapping_output(port);
        }
        let ip = &data[nh..];
        if ip[0] >> 4 != 4 {
            return self.process6(port, p, nh, now);
        }
        let th = match p.transport_header_offset() {
            Some(t) if t >= 0 => t as usize,
            _ => nh + ((ip[0] & 15) as usize) * 4,
        };
        let saddr = u32::from_be_bytes(addr4(ip, 12));
        let daddr = u32::from_be_bytes(addr4(ip, 16));
        let first_frag = be16(ip, 6) & 0x1fff == 0;
        let (flowid, found, may_create) = match self.kind {
            Kind::Addr => {
                let f = FlowId {
                    saddr,
                    ..FlowId::default()
                };
                let r = FlowId {
                    daddr,
                    ..FlowId::default()
                };
                (f, self.lookup(&f).or_else(|| self.lookup(&r)), true)
            }
            Kind::Pair => {
                let f = FlowId {
                    saddr,
                    daddr,
                    ..FlowId::default()
                };
                (f, self.lookup(&f), true)
            }
            Kind::Ping => {
                let ok = ip[9] == IP_PROTO_ICMP && first_frag && data.len() >= th + 6;
                let ty = if ok { data[th] } else { 0xff };
                if ty != ICMP_ECHO && ty != ICMP_ECHOREPLY {
                    return self.inputs.no_mapping_output(port);
                }
                let echo = ty == ICMP_ECHO;
                let id = be16(data, th + 4);
                let f = FlowId {
                    saddr,
                    daddr,
                    sport: if echo { id } else { plus1(id) },
                    dport: if echo { plus1(id) } else { id },
                };
                (f, self.lookup(&f), echo)
            }
        };
        let entry = match found {
            Some(e) => e,
            None if !may_create => return self.inputs.no_mapping_output(port),
            None => match self.new_flow(port, flowid, ip[9], now) {
                Ok(e) => {
                    if let Some(off) = self.reply_anno {
                        let v = p.anno_bytes()[off];
                        self.flows[(e >> 1) as usize].reply_anno = v;
                    }
                    e
                }
                Err(out) => return out,
            },
        };
        let idx = (entry >> 1) as usize;
        let reply = entry & 1 == 1;
        let flow = self.flows[idx];
        self.apply(&flow, p, nh, th, reply);
        let f = &mut self.flows[idx];
        f.guaranteed = self.guarantee != 0;
        f.expiry = now
            + if f.guaranteed {
                self.guarantee
            } else {
                self.timeout
            };
        Some(flow.outputs[reply as usize] as usize)
    }

    /// [`Table::process`] for a packet that is not IPv4: an IPv6 packet's
    /// flow read by `Flow::parse_ipv6` (extension headers walked) and
    /// looked up in the IPv6 map; any other version or a malformed header
    /// gets no mapping, as does, for `ICMPPingRewriter`, anything but an
    /// ICMPv6 echo request or reply that is not a later fragment.
    #[cold]
    #[inline(never)]
    fn process6(&mut self, port: usize, p: &mut Packet, nh: usize, now: i64) -> Option<usize> {
        let l3 = &p.data()[nh..];
        if l3[0] >> 4 != 6 {
            return self.inputs.no_mapping_output(port);
        }
        let Ok(wf) = WireFlow::parse_ipv6(l3) else {
            return self.inputs.no_mapping_output(port);
        };
        let t = wf.tuple;
        let none = FiveTuple::v6(0, [0; 16], 0, [0; 16], 0);
        let (key, found, may_create) = match self.kind {
            Kind::Addr => {
                let f = FiveTuple { src: t.src, ..none };
                let r = FiveTuple { dst: t.dst, ..none };
                let found = self.map6.get(&f).or_else(|| self.map6.get(&r)).copied();
                (f, found, true)
            }
            Kind::Pair => {
                let f = FiveTuple {
                    src: t.src,
                    dst: t.dst,
                    ..none
                };
                (f, self.map6.get(&f).copied(), true)
            }
            Kind::Ping => {
                let ty = wf.icmp_type;
                if t.proto != IP_PROTO_ICMPV6
                    || wf.fragment == Fragment::Later
                    || (ty != ICMP6_ECHO && ty != ICMP6_ECHOREPLY)
                {
                    return self.inputs.no_mapping_output(port);
                }
                let echo = ty == ICMP6_ECHO;
                let id = t.sport;
                let f = FiveTuple {
                    sport: if echo { id } else { plus1(id) },
                    dport: if echo { plus1(id) } else { id },
                    ..t
                };
                (f, self.map6.get(&f).copied(), echo)
            }
        };
        let entry = match found {
            Some(e) => e,
            None if !may_create => return self.inputs.no_mapping_output(port),
            None => match self.new_flow6(port, key, now) {
                Ok(e) => {
                    if let Some(off) = self.reply_anno {
                        let v = p.anno_bytes()[off];
                        self.flows[(e >> 1) as usize].reply_anno = v;
                    }
                    e
                }
                Err(out) => return out,
            },
        };
        let idx = (entry >> 1) as usize;
        let reply = entry & 1 == 1;
        let flow = self.flows[idx];
        let transport = (wf.fragment != Fragment::Later).then_some(t.proto);
        self.apply6(&flow, idx, p, nh, nh + wf.l4_offset, transport, reply);
        let f = &mut self.flows[idx];
        f.guaranteed = self.guarantee != 0;
        f.expiry = now
            + if f.guaranteed {
                self.guarantee
            } else {
                self.timeout
            };
        Some(flow.outputs[reply as usize] as usize)
    }

    /// [`Table::new_flow`] for an IPv6 flow.
    fn new_flow6(&mut self, port: usize, key: FiveTuple, now: i64) -> Result<u32, Option<usize>> {
        let map = &self.map6;
        let (mut rewritten, fo, ro) = self.inputs.choose6(port, key, |k| map.contains_key(k))?;
        if self.kind == Kind::Ping {
            rewritten.dport = plus1(rewritten.sport);
        }
        let ok = match self.kind {
            Kind::Addr => rewritten.sport == 0 && rewritten.dport == 0 && rewritten.dst == [0; 16],
            Kind::Pair => rewritten.sport == 0 && rewritten.dport == 0,
            Kind::Ping => plus1(key.sport) == key.dport,
        };
        if !ok || fo >= self.inputs.noutputs() || ro >= self.inputs.noutputs() {
            return Err(None);
        }
        let guaranteed = self.guarantee != 0;
        let flow = Flow {
            keys: [FlowId::default(); 2],
            v6: true,
            outputs: [fo as u32, ro as u32],
            ip_delta: 0,
            l4_delta: delta6(&key, &rewritten, self.kind == Kind::Ping),
            expiry: now
                + if guaranteed {
                    self.guarantee
                } else {
                    self.timeout
                },
            guaranteed,
            reply_anno: 0,
            input: port as u32,
            live: true,
        };
        let keys = [key, rewritten.reverse()];
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
        let fwd = idx << 1;
        self.map6.insert(key, fwd);
        if let Some(old) = self.map6.insert(keys[1], fwd | 1) {
            if old >> 1 != idx {
                self.destroy((old >> 1) as usize);
            }
        }
        self.live += 1;
        self.inputs[port].count += 1;
        if self.live as i64 > self.capacity && self.shrink_for_new_flow(idx as usize, now) {
            self.inputs[port].failures += 1;
            return Err(None);
        }
        Ok(fwd)
    }

    /// Rewrites an IPv6 packet along flow `idx` (the reply direction if
    /// `reply`); `transport` is the upper-layer protocol whose header
    /// starts at `th`, `None` for a later fragment (addresses only).
    #[allow(clippy::too_many_arguments)]
    fn apply6(
        &self,
        flow: &Flow,
        idx: usize,
        p: &mut Packet,
        nh: usize,
        th: usize,
        transport: Option<u8>,
        reply: bool,
    ) {
        let rev = self.keys6[idx][!reply as usize];
        let set_dst = match self.kind {
            Kind::Addr => reply,
            Kind::Pair => true,
            Kind::Ping => self.dst_anno,
        };
        if set_dst {
            p.set_dst_ip6_anno(rev.src);
        }
        if reply {
            if let Some(off) = self.reply_anno {
                p.anno_bytes_mut()[off] = flow.reply_anno;
            }
        }
        let data = p.data_mut();
        let ip = &mut data[nh..];
        if self.kind != Kind::Addr || !reply {
            ip[8..24].copy_from_slice(&rev.dst);
        }
        if self.kind != Kind::Addr || reply {
            ip[24..40].copy_from_slice(&rev.src);
        }
        let Some(proto) = transport else {
            return;
        };
        let l4 = &mut data[th..];
        let d = flow.l4_delta;
        // `Flow::parse_ipv6` checked the transport header's length (TCP
        // 20 bytes, UDP and ICMPv6 8).
        match proto {
            IP_PROTO_ICMPV6 => {
                if self.kind == Kind::Ping {
                    set_be16(l4, 4, if reply { rev.sport } else { rev.dport });
                }
                // An ICMPv6 message's sum includes the pseudo-header's
                // next header (58), so it is never +0: no 0xffff case.
                set_be16(l4, 2, apply_delta(be16(l4, 2), reply, d));
            }
            IP_PROTO_TCP => set_be16(l4, 16, apply_delta(be16(l4, 16), reply, d)),
            IP_PROTO_UDP if be16(l4, 6) != 0 => {
                let c = apply_delta(be16(l4, 6), reply, d);
                set_be16(l4, 6, if c == 0 { 0xffff } else { c });
            }
            _ => {}
        }
    }

    /// Rewrites a packet along `flow` (the reply direction if `reply`).
    fn apply(&self, flow: &Flow, p: &mut Packet, nh: usize, th: usize, reply: bool) {
        let rev = flow.keys[!reply as usize];
        let set_dst = match self.kind {
            Kind::Addr => reply,
            Kind::Pair => true,
            Kind::Ping => self.dst_anno,
        };
        if set_dst {
            p.set_dst_ip_anno(rev.saddr.to_be_bytes());
        }
        if reply {
            if let Some(off) = self.reply_anno {
                p.anno_bytes_mut()[off] = flow.reply_anno;
            }
        }
        let delta = |csum: u16, d: u16| {
            if d == 0 {
                csum
            } else {
                update_in_cksum(csum, 0, if reply { d } else { !d })
            }
        };
        let data = p.data_mut();
        let tlen = data.len().saturating_sub(th);
        let ip = &mut data[nh..];
        if self.kind != Kind::Addr || !reply {
            ip[12..16].copy_from_slice(&rev.daddr.to_be_bytes());
        }
        if self.kind != Kind::Addr || reply {
            ip[16..20].copy_from_slice(&rev.saddr.to_be_bytes());
        }
        let s = delta(be16(ip, 10), flow.ip_delta);
        set_be16(ip, 10, s);
        if be16(ip, 6) & 0x1fff != 0 {
            return;
        }
        let proto = ip[9];
        if th > data.len() {
            return;
        }
        let l4 = &mut data[th..];
        match self.kind {
            Kind::Ping => {
                if tlen < 6 {
                    return;
                }
                set_be16(l4, 4, if reply { rev.sport } else { rev.dport });
                let mut c = delta(be16(l4, 2), flow.l4_delta);
                // An all-zero message sums to +0, whose checksum is
                // 0xffff, not the 0 an incremental update can leave (the
                // checksum field itself still holds the old value here).
                let zero = |b: &[u8]| b.iter().all(|x| *x == 0);
                if c == 0 && zero(&l4[..2]) && zero(&l4[4..]) {
                    c = 0xffff;
                }
                set_be16(l4, 2, c);
            }
            _ => {
                if proto == IP_PROTO_TCP && tlen >= 18 {
                    let s = delta(be16(l4, 16), flow.l4_delta);
                    set_be16(l4, 16, s);
                } else if proto == IP_PROTO_UDP && tlen >= 8 && be16(l4, 6) != 0 {
                    let s = delta(be16(l4, 6), flow.l4_delta);
                    set_be16(l4, 6, s);
                }
            }
        }
    }

    // ----------------------------------------------------------- handlers

    /// The `table` handler: one line per entry, IPv4 entries in table
    /// order, then IPv6 entries in slot order (forward entry first).
    pub fn table(&self) -> String {
        let mut s = String::new();
        let now = self.last_now;
        let v6 = self
            .flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.live && f.v6);
        let v6 = v6.flat_map(|(i, _)| {
            let fwd = (i as u32) << 1;
            [fwd, fwd | 1]
                .into_iter()
                .filter(move |h| self.map6.get(&self.keys6[i][(h & 1) as usize]) == Some(h))
        });
        for h in self
            .buckets
            .iter()
            .flat_map(|b| b.iter().rev().copied())
            .chain(v6)
        {
            let f = &self.flows[(h >> 1) as usize];
            let d = (h & 1) as usize;
            if f.v6 {
                s.push_str(&self.entry6_text(h));
            } else {
                let key = f.keys[d];
                let other = f.keys[1 - d];
                match self.kind {
                    Kind::Addr => {
                        s.push_str(&format!("{} => {}", ip_str(key.saddr), ip_str(other.daddr)))
                    }
                    Kind::Pair => s.push_str(&format!(
                        "({}, {}) => ({}, {})",
                        ip_str(key.saddr),
                        ip_str(key.daddr),
                        ip_str(other.daddr),
                        ip_str(other.saddr)
                    )),
                    Kind::Ping => {
                        let r = other.reverse();
                        s.push_str(&format!(
                            "({}, {}, {}) => ({}, {}, {})",
                            ip_str(key.saddr),
                            ip_str(key.daddr),
                            key.sport,
                            ip_str(r.saddr),
                            ip_str(r.daddr),
                            r.sport
                        ))
                    }
                }
            }
            let expiry = if f.guaranteed {
                self.best_effort_expiry(f)
            } else {
                f.expiry
            };
            let exp = (expiry + HZ / 2 - now).div_euclid(HZ);
            let (a, b) = if d == 0 { ("*", "") } else { ("", "*") };
            s.push_str(&format!(
                " [{}{} {}{}] i{} exp{}\n",
                a, f.outputs[0], b, f.outputs[1], f.input, exp
            ));
        }
        s
    }

    /// An IPv6 entry (`h`: `flow << 1 | direction`) as the `table` handler
    /// prints it, in the IPv4 entries' shape with RFC 5952 addresses.
    fn entry6_text(&self, h: u32) -> String {
        let keys = &self.keys6[(h >> 1) as usize];
        let d = (h & 1) as usize;
        let (key, other) = (keys[d], keys[1 - d]);
        match self.kind {
            Kind::Addr => format!("{} => {}", ip6_str(&key.src), ip6_str(&other.dst)),
            Kind::Pair => format!(
                "({}, {}) => ({}, {})",
                ip6_str(&key.src),
                ip6_str(&key.dst),
                ip6_str(&other.dst),
                ip6_str(&other.src)
            ),
            Kind::Ping => {
                let r = other.reverse();
                format!(
                    "({}, {}, {}) => ({}, {}, {})",
                    ip6_str(&key.src),
                    ip6_str(&key.dst),
                    key.sport,
                    ip6_str(&r.src),
                    ip6_str(&r.dst),
                    r.sport
                )
            }
        }
    }

    /// Reads a handler; `None` if there is no such handler.
    pub fn read(&self, name: &str) -> Option<String> {
        match name {
            "table" | "mappings" => Some(self.table()),
            _ => self.read_common(name),
        }
    }

    /// Writes a handler; `None` if there is no such handler.
    pub fn write(&mut self, name: &str, value: &str) -> Option<Result<(), HandlerError>> {
        self.write_common(name, value)
    }
}

impl MappingTable for Table {
    fn nslots(&self) -> usize {
        self.flows.len()
    }

    fn expiry_of(&self, i: usize) -> Option<(bool, i64)> {
        let f = &self.flows[i];
        f.live.then_some((f.guaranteed, f.expiry))
    }

    fn to_best_effort(&mut self, i: usize) {
        self.flows[i].expiry = self.best_effort_expiry(&self.flows[i]);
        self.flows[i].guaranteed = false;
    }

    /// Removes a flow and whichever of its entries are still in the table.
    fn destroy(&mut self, idx: usize) {
        let f = self.flows[idx];
        if !f.live {
            return;
        }
        for d in 0..2u32 {
            let h = ((idx as u32) << 1) | d;
            if f.v6 {
                let key = self.keys6[idx][d as usize];
                if self.map6.get(&key) == Some(&h) {
                    self.map6.remove(&key);
                }
                continue;
            }
            let key = f.keys[d as usize];
            if self.map.get(&key) == Some(&h) {
                self.bucket_remove(h);
                self.map.remove(&key);
            }
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
        self.capacity
    }

    fn set_capacity(&mut self, c: i64) {
        self.capacity = c;
    }

    fn parse_capacity(value: &str) -> Option<i64> {
        let mut words = value.split_whitespace();
        match (words.next(), words.next()) {
            (Some(w), None) => pronto_lang::args::parse_i64(w).ok(),
            _ => None,
        }
        .filter(|c| (-0x8000_0000..=0x7fff_ffff).contains(c))
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

impl IcmpLookup for Core {
    fn icmp_lookup6(&mut self, search: &FiveTuple) -> Option<IcmpMatch6> {
        let (reply, rewritten, output, reply_anno) = self.entry6(search)?;
        Some(IcmpMatch6 {
            rewritten,
            reply,
            output,
            reply_anno,
        })
    }

    /// A lookup only: the entry must belong to a flow of protocol `proto`.
    fn icmp_lookup(&mut self, proto: u8, search: FlowId) -> Option<IcmpMatch> {
        let e = self.get_entry(proto, search, None, 0)?;
        Some(IcmpMatch {
            rewritten: e.rewritten,
            reply: e.reply,
            output: e.output,
            reply_anno: self.reply_anno_of(&e),
        })
    }
}

impl IcmpLookup for Table {
    fn icmp_lookup6(&mut self, s: &FiveTuple) -> Option<IcmpMatch6> {
        let none = FiveTuple::v6(0, [0; 16], 0, [0; 16], 0);
        let h = match self.kind {
            Kind::Addr => self
                .map6
                .get(&FiveTuple { src: s.src, ..none })
                .or_else(|| self.map6.get(&FiveTuple { dst: s.dst, ..none })),
            Kind::Pair => self.map6.get(&FiveTuple {
                src: s.src,
                dst: s.dst,
                ..none
            }),
            Kind::Ping if s.proto == IP_PROTO_ICMPV6 => self.map6.get(&FiveTuple {
                sport: plus1(s.sport),
                dport: s.sport,
                ..*s
            }),
            Kind::Ping => None,
        }
        .copied()?;
        let idx = (h >> 1) as usize;
        let d = (h & 1) as usize;
        let f = &self.flows[idx];
        let r = self.keys6[idx][1 - d].reverse();
        // An address rewriter's flows key only the addresses they map:
        // the rest of the embedded flow is kept (Click's IPv4 path writes
        // the entry's flow whole, zeros and all; the IPv4 path here does
        // as Click does).
        let rewritten = match (self.kind, d) {
            (Kind::Addr, 0) => FiveTuple { src: r.src, ..*s },
            (Kind::Addr, _) => FiveTuple { dst: r.dst, ..*s },
            (Kind::Pair, _) => FiveTuple {
                src: r.src,
                dst: r.dst,
                ..*s
            },
            (Kind::Ping, _) => r,
        };
        Some(IcmpMatch6 {
            rewritten,
            reply: d == 1,
            output: f.outputs[d] as usize,
            reply_anno: f.reply_anno,
        })
    }

    fn icmp_lookup(&mut self, proto: u8, s: FlowId) -> Option<IcmpMatch> {
        let h = match self.kind {
            Kind::Addr => self
                .lookup(&FlowId {
                    saddr: s.saddr,
                    ..FlowId::default()
                })
                .or_else(|| {
                    self.lookup(&FlowId {
                        daddr: s.daddr,
                        ..FlowId::default()
                    })
                }),
            Kind::Pair => self.lookup(&FlowId {
                saddr: s.saddr,
                daddr: s.daddr,
                ..FlowId::default()
            }),
            Kind::Ping if proto == IP_PROTO_ICMP => self.lookup(&FlowId {
                saddr: s.saddr,
                sport: plus1(s.sport),
                daddr: s.daddr,
                dport: s.sport,
            }),
            Kind::Ping => None,
        }?;
        let f = &self.flows[(h >> 1) as usize];
        let d = (h & 1) as usize;
        Some(IcmpMatch {
            rewritten: f.keys[1 - d].reverse(),
            reply: d == 1,
            output: f.outputs[d] as usize,
            reply_anno: f.reply_anno,
        })
    }
}

/// The handlers of every table rewriter (`patternN` for inputs 0 to 7).
pub const HANDLERS: &[crate::HandlerInfo] = &[
    crate::HandlerInfo::read("table"),
    crate::HandlerInfo::read("mappings"),
    crate::HandlerInfo::read("table_size"),
    crate::HandlerInfo::read("nmappings"),
    crate::HandlerInfo::read("mapping_failures"),
    crate::HandlerInfo::read("patterns"),
    crate::HandlerInfo::read("size"),
    crate::HandlerInfo::rw("capacity"),
    crate::HandlerInfo::write("clear"),
    crate::HandlerInfo::rw("pattern0"),
    crate::HandlerInfo::rw("pattern1"),
    crate::HandlerInfo::rw("pattern2"),
    crate::HandlerInfo::rw("pattern3"),
    crate::HandlerInfo::rw("pattern4"),
    crate::HandlerInfo::rw("pattern5"),
    crate::HandlerInfo::rw("pattern6"),
    crate::HandlerInfo::rw("pattern7"),
];

/// A table rewriter class's description `spec` with the ports, processing
/// and profile they share.
pub const fn table_spec(spec: crate::Spec) -> crate::Spec {
    rewriter_spec(spec, FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER)
}

/// The element `IPAddrRewriter`, `IPAddrPairRewriter` and
/// `ICMPPingRewriter` configure: a [`Table`] of their kind, shared with the
/// `ICMPRewriter` elements that name it.
pub struct TableRewriter {
    table: Arc<Mutex<Table>>,
    noutputs: usize,
    /// Packets dropped: no mapping (and a dropping input), or no header
    /// to rewrite.
    drops: u64,
}

impl TableRewriter {
    /// Configures a table rewriter (see [`Table::configure`]).
    pub fn configure(
        ctx: &ConfigCtx<'_>,
        a: Args,
        kind: Kind,
        timeout: i64,
        dst_anno: bool,
    ) -> Result<Box<dyn Element>, ConfigError> {
        let table = Table::configure(ctx, a, kind, timeout, dst_anno)?;
        Ok(Box::new(TableRewriter {
            table: Arc::new(Mutex::new(table)),
            noutputs: ctx.noutputs,
            drops: 0,
        }))
    }
}

impl TableRewriter {
    /// Rewrites `batch`, packet `i` from input `input_of(i)`.
    #[inline]
    fn rewrite(&mut self, batch: &mut Batch, out: &mut Out<'_>, input_of: impl Fn(usize) -> usize) {
        let now = out.now;
        let mut t = lock(&self.table);
        let drops = &mut self.drops;
        let mut i = 0;
        push_each(batch, out, |p, _| {
            let r = t.process(input_of(i), p, now);
            i += 1;
            if r.is_none() {
                *drops += 1;
            }
            r
        });
    }
}

impl Element for TableRewriter {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.rewrite(batch, out, |_| port);
    }

    fn push_inputs(&mut self, inputs: &[u16], batch: &mut Batch, out: &mut Out<'_>) {
        self.rewrite(batch, out, |i| inputs.get(i).copied().unwrap_or(0) as usize);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_mapping", self.drops);
        lock(&self.table).counters_common(c);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        lock(&self.table)
            .read(name)
            .ok_or_else(|| HandlerError::NoSuchHandler(name.into()))
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        lock(&self.table)
            .write(name, value)
            .unwrap_or_else(|| Err(HandlerError::NoSuchHandler(name.into())))
    }

    fn shared(&self) -> Option<Shared> {
        Some(Arc::new(IcmpMapHandle {
            noutputs: self.noutputs,
            table: self.table.clone(),
        }))
    }
}
