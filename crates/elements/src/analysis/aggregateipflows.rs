//! `AggregateIPFlows`: numbers TCP and UDP flows in the aggregate
//! annotation and marks each packet's direction in the paint annotation.

use std::collections::{HashMap, VecDeque};
use std::io::Write;

use pronto_packet::{Batch, Packet};

use super::{aggregate, set_aggregate, unparse_time};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, Spec,
    FIELDS_5TUPLE,
};

const NS: i64 = 1_000_000_000;

/// One flow between a host pair.
#[derive(Clone, Copy, Debug)]
struct FlowInfo {
    /// The ports word as Click holds it: the four port bytes read as a
    /// little-endian word, in the flow's canonical direction.
    ports: u32,
    aggregate: u32,
    last: i64,
    /// FIN seen on subflow 0 (bit 0) and 1 (bit 1); 3 also after a RST.
    over: u8,
    reverse: bool,
    first: i64,
    packets: [u32; 2],
}

/// The flows of one host pair (most recently used first) and the
/// fragments held for it, oldest first.
#[derive(Default)]
struct HostPairInfo {
    flows: Vec<FlowInfo>,
    frags: VecDeque<Packet>,
}

/// The two addresses of a pair, smaller first (compared as Click compares
/// them: the address bytes read as a little-endian word).
type HostPair = (u32, u32);

/// Flow numbering.
/// Click's AggregateNotifier: tells the elements that name an
/// AggregateIPFlows as their `NOTIFIER` (ToIPFlowDumps, IPFlowRawSockets)
/// which aggregates it has forgotten. Each of them subscribes and gets a
/// queue of its own; nothing is kept while none subscribes.
#[derive(Default)]
pub struct AggregateNotifier {
    /// Whether any subscription was ever made (checked without the lock).
    listening: std::sync::atomic::AtomicBool,
    subscribers: std::sync::Mutex<Vec<std::sync::Weak<Subscriber>>>,
}

/// One subscriber's deleted aggregates, oldest first.
#[derive(Default)]
struct Subscriber {
    pending: std::sync::atomic::AtomicBool,
    deleted: std::sync::Mutex<Vec<u32>>,
}

/// A subscription to an [`AggregateNotifier`]: the aggregates deleted
/// since it was made, each seen once. Dropping it ends it.
pub struct AggregateSubscription(std::sync::Arc<Subscriber>);

impl AggregateSubscription {
    /// Whether aggregates were deleted since the last [`take`](Self::take)
    /// (one atomic load: cheap enough for a timer check).
    pub fn pending(&self) -> bool {
        self.0.pending.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Moves the aggregates deleted since the last call into `into`,
    /// oldest first.
    pub fn take(&self, into: &mut Vec<u32>) {
        if let Ok(mut d) = self.0.deleted.lock() {
            into.append(&mut d);
            self.0
                .pending
                .store(false, std::sync::atomic::Ordering::Release);
        }
    }
}

impl AggregateNotifier {
    /// Starts telling a new subscriber about every aggregate deleted from
    /// now on.
    pub fn subscribe(&self) -> AggregateSubscription {
        let sub = std::sync::Arc::new(Subscriber::default());
        if let Ok(mut s) = self.subscribers.lock() {
            s.push(std::sync::Arc::downgrade(&sub));
        }
        self.listening
            .store(true, std::sync::atomic::Ordering::Release);
        AggregateSubscription(sub)
    }

    pub(crate) fn deleted(&self, agg: u32) {
        if !self.listening.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        let Ok(mut subs) = self.subscribers.lock() else {
            return;
        };
        subs.retain(|w| match w.upgrade() {
            Some(sub) => {
                if let Ok(mut d) = sub.deleted.lock() {
                    d.push(agg);
                    sub.pending
                        .store(true, std::sync::atomic::Ordering::Release);
                }
                true
            }
            None => false,
        });
    }
}

pub struct AggregateIPFlows {
    tcp: HashMap<HostPair, HostPairInfo>,
    udp: HashMap<HostPair, HostPairInfo>,
    next: u32,
    active_sec: u32,
    gc_sec: u32,
    tcp_timeout: u32,
    tcp_done_timeout: u32,
    udp_timeout: u32,
    fragment_timeout: u32,
    gc_interval: u32,
    smallest_timeout: u32,
    icmp: bool,
    fragments: bool,
    timestamp_warned: bool,
    name: String,
    traceinfo: Option<Box<dyn Write>>,
    /// Packets released by a handler, waiting for `after_write`.
    released: VecDeque<Packet>,
    /// Packets dropped for want of output 1.
    drops: u64,
    has_out1: bool,
    notifier: std::sync::Arc<AggregateNotifier>,
}

/// The IP header the flow is read from: the packet's own, or for ICMP
/// errors (paint 2 and 3) the one the error quotes. `(offset, length)`
/// of the header and what follows it in the packet.
fn flow_header(p: &Packet, icmp: bool) -> Option<usize> {
    let nh = crate::ip::ip_header_at(p, 20)?;
    let d = p.data();
    if icmp && d[nh + 9] == 1 {
        let hl = (d[nh] & 0xf) as usize * 4;
        let th = nh + hl;
        let t = *d.get(th)?;
        if !matches!(t, 3 | 4 | 5 | 11 | 12) {
            return None;
        }
        let inner = th + 8;
        let ihl = (*d.get(inner)? & 0xf) as usize * 4;
        (ihl >= 20 && d.len() >= inner + ihl).then_some(inner)
    } else {
        Some(nh)
    }
}

fn is_frag(d: &[u8], ip: usize) -> bool {
    u16::from_be_bytes([d[ip + 6], d[ip + 7]]) & 0x3fff != 0
}

fn first_frag(d: &[u8], ip: usize) -> bool {
    u16::from_be_bytes([d[ip + 6], d[ip + 7]]) & 0x1fff == 0
}

fn le32(d: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

fn flip_ports(ports: u32) -> u32 {
    ports.rotate_left(16)
}

fn ports_reverse_order(ports: u32) -> bool {
    ((ports << 16).wrapping_sub(ports) as i32) < 0
}

fn sec(t: i64) -> u32 {
    t.div_euclid(NS) as u32
}

const KEYWORDS: &[&str] = &[
    "TCP_TIMEOUT",
    "TCP_DONE_TIMEOUT",
    "UDP_TIMEOUT",
    "FRAGMENT_TIMEOUT",
    "REAP",
    "ICMP",
    "TRACEINFO",
    "SOURCE",
    "FRAGMENTS",
];

impl AggregateIPFlows {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregateIPFlows")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(KEYWORDS)
        .profile(ActionProfile::reads(FIELDS_5TUPLE).dropping())
        .doc(
            "AggregateIPFlows([keywords TCP_TIMEOUT, TCP_DONE_TIMEOUT, UDP_TIMEOUT,\n\
             FRAGMENT_TIMEOUT, REAP, ICMP, TRACEINFO, SOURCE, FRAGMENTS])\n\n\
             Sets each TCP and UDP packet's aggregate annotation to a flow number\n\
             (from 1, in order of first appearance; a flow is its addresses and\n\
             ports, both directions) and its paint annotation to 0 for packets in\n\
             the flow's first direction, 1 for replies. Other packets, and short\n\
             ones, go to output 1 (dropped and counted without one). A flow idle\n\
             longer than its timeout (TCP_TIMEOUT, default 24 h; TCP_DONE_TIMEOUT,\n\
             default 30 s, once both sides sent FIN or one sent RST; UDP_TIMEOUT,\n\
             default 1 min; in packet time) gets a new number when it is seen\n\
             again, as does a finished TCP flow on a SYN. Idle flows are forgotten\n\
             every REAP seconds of packet time (default 20 min). With ICMP true,\n\
             ICMP errors about a flow get its number and paint 2 or 3. With\n\
             FRAGMENTS true (the default when pushed), later fragments are held\n\
             until their first fragment gives the ports, and get its annotations;\n\
             fragments whose first fragment does not come within FRAGMENT_TIMEOUT\n\
             (default 30 s) leave on output 1. Packets between one address pair\n\
             keep their order. TRACEINFO FILE writes each flow as XML when it is\n\
             forgotten (`-': standard output); SOURCE is accepted (pronto records\n\
             no file positions).\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  clear (write)  forgets every flow, releasing held fragments\n  \
             drops (read)  packets dropped for want of output 1",
        );

    /// Configures an `AggregateIPFlows`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let secs = |v: Option<Seconds>, d: u32| v.map_or(d, |s| s.0.min(u32::MAX as f64) as u32);
        let tcp_timeout = secs(a.read("TCP_TIMEOUT")?, 24 * 60 * 60);
        let tcp_done_timeout = secs(a.read("TCP_DONE_TIMEOUT")?, 30);
        let udp_timeout = secs(a.read("UDP_TIMEOUT")?, 60);
        let fragment_timeout = secs(a.read("FRAGMENT_TIMEOUT")?, 30);
        let gc_interval = secs(a.read("REAP")?, 20 * 60);
        let icmp = a.read_or("ICMP", false)?;
        let traceinfo: Option<String> = a.read("TRACEINFO")?;
        let _source: Option<String> = a.read("SOURCE")?;
        let fragments: Option<bool> = a.read("FRAGMENTS")?;
        a.finish()?;
        let pull_input = !ctx.input_push.first().copied().unwrap_or(true);
        let fragments = match fragments {
            None => !pull_input,
            Some(true) if pull_input => return Err(ConfigError::new(
                "'FRAGMENTS true' is incompatible with pull; run this element in a push context",
            )),
            Some(f) => f,
        };
        let traceinfo: Option<Box<dyn Write>> = match traceinfo.as_deref() {
            None => None,
            Some("-") => Some(Box::new(std::io::stdout())),
            Some(f) => {
                let path = ctx.path(f);
                let file = std::fs::File::create(&path)
                    .map_err(|e| ConfigError::new(format!("TRACEINFO: {}: {e}", path.display())))?;
                Some(Box::new(std::io::BufWriter::new(file)))
            }
        };
        let mut e = AggregateIPFlows {
            tcp: HashMap::with_capacity(1024),
            udp: HashMap::with_capacity(1024),
            next: 1,
            active_sec: 0,
            gc_sec: 0,
            tcp_timeout,
            tcp_done_timeout,
            udp_timeout,
            fragment_timeout,
            gc_interval,
            smallest_timeout: tcp_timeout.min(tcp_done_timeout).min(udp_timeout),
            icmp,
            fragments,
            timestamp_warned: false,
            name: ctx.name.to_string(),
            traceinfo,
            released: VecDeque::new(),
            drops: 0,
            has_out1: ctx.noutputs > 1,
            notifier: std::sync::Arc::default(),
        };
        if let Some(t) = e.traceinfo.as_mut() {
            let _ = t.write_all(b"<?xml version='1.0' standalone='yes'?>\n<trace>\n");
        }
        Ok(Box::new(e))
    }

    fn trace_flow(&mut self, hp: HostPair, f: &FlowInfo) {
        self.notifier.deleted(f.aggregate);
        let Some(t) = self.traceinfo.as_mut() else {
            return;
        };
        let ip = |a: u32| {
            let b = a.to_le_bytes();
            format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
        };
        let pb = f.ports.to_le_bytes();
        let (p0, p1) = (
            u16::from_be_bytes([pb[0], pb[1]]),
            u16::from_be_bytes([pb[2], pb[3]]),
        );
        let (src, sport, dst, dport) = if f.reverse {
            (hp.1, p1, hp.0, p0)
        } else {
            (hp.0, p0, hp.1, p1)
        };
        let _ = write!(
            t,
            "<flow aggregate='{}' src='{}' sport='{sport}' dst='{}' dport='{dport}' begin='{}' duration='{}'>\n  <stream dir='0' packets='{}' /><stream dir='1' packets='{}' />\n</flow>\n",
            f.aggregate,
            ip(src),
            ip(dst),
            unparse_time(f.first),
            unparse_time(f.last - f.first),
            f.packets[0],
            f.packets[1]
        );
    }

    /// Updates the flow's state for a packet about to leave.
    fn emit_hook(p: &Packet, f: &mut FlowInfo, tracing: bool) {
        f.last = p.timestamp_ns();
        let paint = p.paint_anno();
        let d = p.data();
        if paint < 2 {
            if let Some(nh) = crate::ip::ip_header_at(p, 20) {
                let hl = (d[nh] & 0xf) as usize * 4;
                if d[nh + 9] == 6 && first_frag(d, nh) && d.len() >= nh + hl + 14 {
                    let flags = d[nh + hl + 13];
                    if flags & 0x04 != 0 {
                        f.over = 3;
                    } else if flags & 0x01 != 0 {
                        f.over |= 1 << paint;
                    } else if flags & 0x02 != 0 {
                        f.over = 0;
                    }
                }
            }
            if tracing {
                f.packets[paint as usize] = f.packets[paint as usize].wrapping_add(1);
            }
        }
    }

    /// Finds or makes the flow of `ports` (move to front), renewing a dead
    /// one; its index (0).
    fn find_flow(
        &mut self,
        tcp: bool,
        hp: HostPair,
        ports: u32,
        flipped: bool,
        p: &Packet,
    ) -> usize {
        let t = p.timestamp_ns();
        let syn = {
            let d = p.data();
            crate::ip::ip_header_at(p, 20).is_some_and(|nh| {
                let hl = (d[nh] & 0xf) as usize * 4;
                d[nh + 9] == 6 && d.get(nh + hl + 13).is_some_and(|f| f & 0x02 != 0)
            })
        };
        let tracing = self.traceinfo.is_some();
        let map = if tcp { &mut self.tcp } else { &mut self.udp };
        let info = map.entry(hp).or_default();
        if let Some(i) = info.flows.iter().position(|f| f.ports == ports) {
            let mut f = info.flows.remove(i);
            let age = sec(t).wrapping_sub(sec(f.last)) as i32;
            // The flow's own timeout: UDP, finished TCP, or active TCP.
            let timeout = if !tcp {
                self.udp_timeout
            } else if f.over == 3 {
                self.tcp_done_timeout
            } else {
                self.tcp_timeout
            };
            let dead = (age > self.smallest_timeout as i32 && age > timeout as i32)
                || (f.over == 3 && tcp && syn);
            if dead {
                let old = f;
                f.aggregate = self.next;
                self.next = self.next.wrapping_add(1);
                f.reverse = flipped;
                f.over = 0;
                if tracing {
                    f.first = t;
                    f.packets = [0, 0];
                }
                let map = if tcp { &mut self.tcp } else { &mut self.udp };
                map.entry(hp).or_default().flows.insert(0, f);
                self.trace_flow(hp, &old);
                return 0;
            }
            info.flows.insert(0, f);
            return 0;
        }
        info.flows.insert(
            0,
            FlowInfo {
                ports,
                aggregate: self.next,
                last: 0,
                over: 0,
                reverse: flipped,
                first: t,
                packets: [0, 0],
            },
        );
        self.next = self.next.wrapping_add(1);
        0
    }

    /// Emits the oldest held fragment of `info` (to `sink`), giving it
    /// (or taking from) the annotations of a fragment of the same IP
    /// datagram; a fragment no other fragment identifies is dropped.
    fn emit_fragment_head(
        info: &mut HostPairInfo,
        icmp: bool,
        tracing: bool,
        sink: &mut dyn FnMut(Packet, usize),
    ) {
        let Some(mut head) = info.frags.pop_front() else {
            return;
        };
        let id_of = |p: &Packet| {
            flow_header(p, icmp && p.paint_anno() >= 2).map(|ip| {
                let d = p.data();
                [d[ip + 4], d[ip + 5]]
            })
        };
        let id = id_of(&head);
        let agg = aggregate(&head);
        if agg != 0 {
            let paint = head.paint_anno();
            for p in info.frags.iter_mut() {
                if id_of(p) == id {
                    set_aggregate(p, agg);
                    p.set_paint_anno(paint);
                }
            }
        } else {
            let found = info
                .frags
                .iter()
                .find(|p| id_of(p) == id && aggregate(p) != 0)
                .map(|p| (aggregate(p), p.paint_anno()));
            match found {
                Some((a, paint)) => {
                    set_aggregate(&mut head, a);
                    head.set_paint_anno(paint);
                }
                None => {
                    sink(head, usize::MAX);
                    return;
                }
            }
        }
        let agg = aggregate(&head);
        if let Some(i) = info.flows.iter().position(|f| f.aggregate == agg) {
            let mut f = info.flows.remove(i);
            Self::emit_hook(&head, &mut f, tracing);
            info.flows.insert(0, f);
        }
        sink(head, 0);
    }

    fn handle_fragment(
        &mut self,
        p: Packet,
        tcp: bool,
        hp: HostPair,
        sink: &mut dyn FnMut(Packet, usize),
    ) {
        self.active_sec = sec(p.timestamp_ns());
        let frag_timeout = self.active_sec.wrapping_sub(self.fragment_timeout) as i32;
        let (icmp, tracing) = (self.icmp, self.traceinfo.is_some());
        let map = if tcp { &mut self.tcp } else { &mut self.udp };
        let info = map.entry(hp).or_default();
        info.frags.push_back(p);
        while let Some(head) = info.frags.front() {
            let ip = flow_header(head, icmp && head.paint_anno() >= 2);
            let still_frag = ip.is_some_and(|ip| is_frag(head.data(), ip));
            if (sec(head.timestamp_ns()) as i32) < frag_timeout || !still_frag {
                Self::emit_fragment_head(info, icmp, tracing, sink);
            } else {
                break;
            }
        }
    }

    /// Classifies and annotates one packet.
    fn handle_packet(&mut self, mut p: Packet, now: i64, sink: &mut dyn FnMut(Packet, usize)) {
        if p.timestamp_ns() == 0 {
            if !self.timestamp_warned {
                eprintln!("{}: warning: packet received without timestamp", self.name);
                self.timestamp_warned = true;
            }
            p.set_timestamp_ns(now);
        }
        let Some(nh) = crate::ip::ip_header_at(&p, 20) else {
            return sink(p, 1);
        };
        let mut paint = 0u8;
        let outer_icmp = p.data()[nh + 9] == 1 && first_frag(p.data(), nh);
        let ip = if outer_icmp && self.icmp {
            paint = 2;
            match flow_header(&p, true) {
                Some(ip) => ip,
                None => return sink(p, 1),
            }
        } else {
            nh
        };
        let d = p.data();
        let proto = d[ip + 9];
        let (src, dst) = (le32(d, ip + 12), le32(d, ip + 16));
        if !matches!(proto, 6 | 17) || (src == 0 && dst == 0) {
            return sink(p, 1);
        }
        let tcp = proto == 6;
        let hp = if src > dst { (dst, src) } else { (src, dst) };
        if hp.0 != src {
            paint ^= 1;
        }
        let frag = is_frag(d, ip);
        let mut agg = None;
        if first_frag(d, ip) {
            let up = ip + (d[ip] & 0xf) as usize * 4;
            if up + 4 > d.len() {
                return sink(p, 1);
            }
            let mut ports = le32(d, up);
            if hp.0 == hp.1 && ports_reverse_order(ports) {
                paint ^= 1;
            }
            if paint & 1 != 0 {
                ports = flip_ports(ports);
            }
            self.find_flow(tcp, hp, ports, paint & 1 != 0, &p);
            let map = if tcp { &self.tcp } else { &self.udp };
            let f = map.get(&hp).and_then(|i| i.flows.first()).copied();
            if let Some(f) = f {
                if f.reverse {
                    paint ^= 1;
                }
                set_aggregate(&mut p, f.aggregate);
                agg = Some(f.aggregate);
            }
        } else {
            set_aggregate(&mut p, 0);
        }
        p.set_paint_anno(paint);
        let holding = {
            let map = if tcp { &self.tcp } else { &self.udp };
            map.get(&hp).is_some_and(|i| !i.frags.is_empty())
        };
        if (self.fragments && frag) || holding {
            return self.handle_fragment(p, tcp, hp, sink);
        }
        if agg.is_none() {
            return sink(p, 1);
        }
        self.active_sec = sec(p.timestamp_ns());
        let tracing = self.traceinfo.is_some();
        let map = if tcp { &mut self.tcp } else { &mut self.udp };
        if let Some(f) = map.get_mut(&hp).and_then(|i| i.flows.first_mut()) {
            Self::emit_hook(&p, f, tracing);
        }
        sink(p, 0)
    }

    /// Forgets idle flows and releases timed-out fragments.
    fn reap_map(&mut self, tcp: bool, sink: &mut dyn FnMut(Packet, usize)) {
        let timeout = self.active_sec.wrapping_sub(if tcp {
            self.tcp_timeout
        } else {
            self.udp_timeout
        });
        let done_timeout = self.active_sec.wrapping_sub(if tcp {
            self.tcp_done_timeout
        } else {
            self.udp_timeout
        });
        let frag_timeout = self.active_sec.wrapping_sub(self.fragment_timeout) as i32;
        let (icmp, tracing) = (self.icmp, self.traceinfo.is_some());
        let mut dead: Vec<(HostPair, FlowInfo)> = Vec::new();
        let map = if tcp { &mut self.tcp } else { &mut self.udp };
        let mut keys: Vec<HostPair> = map.keys().copied().collect();
        keys.sort_unstable();
        for hp in keys {
            let Some(info) = map.get_mut(&hp) else {
                continue;
            };
            while let Some(head) = info.frags.front() {
                let ip = flow_header(head, icmp && head.paint_anno() >= 2);
                let still_frag = ip.is_some_and(|ip| is_frag(head.data(), ip));
                if (sec(head.timestamp_ns()) as i32) < frag_timeout || !still_frag {
                    Self::emit_fragment_head(info, icmp, tracing, sink);
                } else {
                    break;
                }
            }
            if !info.frags.is_empty() {
                continue;
            }
            info.flows.retain(|f| {
                let limit = if f.over == 3 { done_timeout } else { timeout };
                let old = (sec(f.last).wrapping_sub(limit) as i32) < 0;
                if old {
                    dead.push((hp, *f));
                }
                !old
            });
        }
        for (hp, f) in dead {
            self.trace_flow(hp, &f);
        }
    }

    fn reap(&mut self, sink: &mut dyn FnMut(Packet, usize)) {
        if self.gc_sec != 0 {
            self.reap_map(true, sink);
            self.reap_map(false, sink);
        }
        self.gc_sec = self.active_sec.wrapping_add(self.gc_interval);
    }

    /// Sends a packet to `port`: 0, 1 (or dropped without output 1), or
    /// `usize::MAX` for a fragment dropped outright.
    fn route(out: &mut Out<'_>, has_out1: bool, drops: &mut u64, p: Packet, port: usize) {
        match port {
            0 => out.emit(0, p),
            1 if has_out1 => out.emit(1, p),
            _ => {
                *drops += 1;
                drop(p);
            }
        }
    }
}

impl Element for AggregateIPFlows {
    fn shared(&self) -> Option<crate::Shared> {
        Some(self.notifier.clone())
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        let has_out1 = self.has_out1;
        let mut drops = 0;
        for p in batch.drain() {
            let mut sink = |q: Packet, port: usize| Self::route(out, has_out1, &mut drops, q, port);
            self.handle_packet(p, now, &mut sink);
            if self.active_sec >= self.gc_sec {
                self.reap(&mut sink);
            }
        }
        self.drops += drops;
    }

    fn held(&self) -> usize {
        self.tcp
            .values()
            .chain(self.udp.values())
            .map(|i| i.frags.len())
            .sum::<usize>()
            + self.released.len()
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_flow", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::write("clear"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "clear" => {
                let (active, gc) = (self.active_sec, self.gc_sec);
                self.active_sec = 0x7fff_ffff;
                self.gc_sec = 0x7fff_ffff;
                let mut released = std::mem::take(&mut self.released);
                let mut drops = 0;
                // Fragments leave on output 0 once a fragment of their
                // datagram identifies them; the others are dropped.
                let mut sink = |q: Packet, port: usize| {
                    if port == 0 {
                        released.push_back(q);
                    } else {
                        drops += 1;
                        drop(q);
                    }
                };
                self.reap(&mut sink);
                self.released = released;
                self.drops += drops;
                self.active_sec = active;
                self.gc_sec = gc;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn after_write(&mut self, out: &mut Out<'_>) -> bool {
        let mut n = 0;
        while n < pronto_packet::BATCH_MAX {
            let Some(p) = self.released.pop_front() else {
                break;
            };
            out.emit(0, p);
            n += 1;
        }
        !self.released.is_empty()
    }

    fn cleanup(&mut self) {
        let mut flows: Vec<(HostPair, FlowInfo)> = Vec::new();
        for map in [&self.tcp, &self.udp] {
            let mut keys: Vec<&HostPair> = map.keys().collect();
            keys.sort_unstable();
            for hp in keys {
                flows.extend(map[hp].flows.iter().map(|f| (*hp, *f)));
            }
        }
        for (hp, f) in flows {
            self.trace_flow(hp, &f);
        }
        if let Some(t) = self.traceinfo.as_mut() {
            let _ = t.write_all(b"</trace>\n");
            let _ = t.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::Pool;

    /// A UDP packet, `frag` the fragment field.
    #[allow(clippy::too_many_arguments)]
    fn udp(
        pool: &Pool,
        src: [u8; 4],
        sp: u16,
        dst: [u8; 4],
        dp: u16,
        id: u16,
        frag: u16,
        t: i64,
    ) -> Packet {
        let mut d = vec![
            0x45,
            0,
            0,
            28,
            (id >> 8) as u8,
            id as u8,
            (frag >> 8) as u8,
            frag as u8,
            64,
            17,
            0,
            0,
        ];
        d.extend_from_slice(&src);
        d.extend_from_slice(&dst);
        d.extend_from_slice(&sp.to_be_bytes());
        d.extend_from_slice(&dp.to_be_bytes());
        d.extend_from_slice(&[0, 8, 0, 0]);
        let mut p = pkt(pool, &d);
        p.set_network_header(0, 20);
        p.set_transport_header(20);
        p.set_timestamp_ns(t);
        p
    }

    /// Each subscriber sees every deletion made after it subscribed, once;
    /// one that is dropped stops receiving.
    #[test]
    fn every_subscriber_sees_every_deletion() {
        let n = AggregateNotifier::default();
        n.deleted(1); // nobody listens: kept nowhere
        let a = n.subscribe();
        n.deleted(2);
        let b = n.subscribe();
        assert!(a.pending() && !b.pending());
        n.deleted(3);
        let (mut va, mut vb) = (Vec::new(), Vec::new());
        a.take(&mut va);
        b.take(&mut vb);
        assert_eq!((va.as_slice(), vb.as_slice()), (&[2, 3][..], &[3][..]));
        assert!(!a.pending() && !b.pending());
        drop(b);
        n.deleted(4);
        a.take(&mut va);
        assert_eq!(va, [2, 3, 4]);
        assert_eq!(n.subscribers.lock().expect("lock").len(), 1);
    }

    #[test]
    fn numbers_flows_and_holds_fragments() {
        let pool = Pool::new(32).expect("pool");
        let mut e = configure(KEYWORDS, AggregateIPFlows::configure, "", 1, 2).expect("ok");
        let (a, b) = ([18, 26, 4, 44], [10, 0, 0, 4]);
        let s = NS;
        let pkts = vec![
            udp(&pool, a, 30, b, 40, 1, 0, s),
            udp(&pool, a, 30, a, 41, 2, 0, s),
            udp(&pool, b, 40, a, 30, 3, 0, s),
            udp(&pool, a, 41, a, 30, 4, 0, s),
            udp(&pool, a, 41, a, 30, 5, 3, s),
            udp(&pool, a, 30, a, 41, 6, 3, s),
            udp(&pool, a, 41, a, 30, 5, 0x2000, s),
            udp(&pool, a, 30, a, 41, 6, 0x2000, s),
        ];
        let mut ctrl = Control::default();
        let outs = push_at(e.as_mut(), &pool, 0, pkts, 2, s, &mut ctrl);
        let got: Vec<(u32, u8)> = outs[0]
            .iter()
            .map(|p| (aggregate(p), p.paint_anno()))
            .collect();
        assert_eq!(got, [(1, 0), (2, 0), (1, 1), (2, 1)]);
        assert_eq!(e.held(), 4);
        e.write_handler("clear", "").expect("clear");
        let mut bufs = vec![Batch::new(), Batch::new()];
        let mut ctrl = Control::default();
        let more = {
            let mut out = Out::new(&mut bufs, &pool, s, &mut ctrl);
            e.after_write(&mut out)
        };
        assert!(!more);
        let got: Vec<(u32, u8, u8)> = bufs[0]
            .iter()
            .map(|p| (aggregate(p), p.paint_anno(), p.data()[5]))
            .collect();
        assert_eq!(got, [(2, 1, 5), (2, 0, 6), (2, 1, 5), (2, 0, 6)]);
        assert_eq!(e.held(), 0);
        // Non-IP and ICMP packets leave on output 1.
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![pkt(&pool, &[1, 2, 3])],
            2,
            s,
            &mut ctrl,
        );
        assert_eq!(outs[1].len(), 1);
        assert_eq!(read(e.as_ref(), "drops"), "0");
    }

    #[test]
    fn timeouts_renumber() {
        let pool = Pool::new(32).expect("pool");
        let mut e =
            configure(KEYWORDS, AggregateIPFlows::configure, "UDP_TIMEOUT 5", 1, 1).expect("ok");
        let (a, b) = ([1, 0, 0, 1], [2, 0, 0, 2]);
        let mut ctrl = Control::default();
        let pkts = vec![
            udp(&pool, a, 1, b, 2, 1, 0, NS),
            udp(&pool, b, 2, a, 1, 2, 0, 3 * NS),
            udp(&pool, a, 1, b, 2, 3, 0, 100 * NS),
        ];
        let outs = push_at(e.as_mut(), &pool, 0, pkts, 1, 0, &mut ctrl);
        let got: Vec<(u32, u8)> = outs[0]
            .iter()
            .map(|p| (aggregate(p), p.paint_anno()))
            .collect();
        assert_eq!(got, [(1, 0), (1, 1), (2, 0)]);
    }
}
