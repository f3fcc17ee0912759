//! `IPFlowRawSockets`: one raw IP socket per TCP or UDP flow, flows told
//! apart by their aggregate annotation (set upstream by `AggregateIPFlows`).
//!
//! How a flow's replies are caught. Click opens a libpcap capture on every
//! interface per flow, with a filter on the flow's address and ports.
//! pronto receives on the flow's own raw IP socket (`SOCK_RAW` of the
//! flow's protocol, the one it sends on) with a classic BPF program
//! attached (`pronto_netdev::rawip::flow_reply_filter`), for these
//! reasons:
//! - a raw IP socket receives what the host delivers to itself from its
//!   IP header on, whatever the interface (no link header to strip, and
//!   none of the copies of outgoing packets a packet socket sees on
//!   loopback);
//! - the kernel runs the filter before it queues a datagram, so a flow's
//!   socket holds its flow's replies only, and one descriptor per flow
//!   serves both directions;
//! - every flow's socket is in one epoll set, the element's one wait
//!   descriptor, so the runtime waits on one descriptor however many
//!   flows are open.
//!
//! What the kernel queues is checked once more in userspace (the socket
//! may queue a datagram in the moment between its creation and the
//! filter's attachment); with `PCAP false` no filter is attached and that
//! check alone picks the flow's replies out of every datagram of the
//! protocol (Click's mode without libpcap).

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};

use pronto_hash::KeyedMap;
use pronto_packet::wire::flow::{proto, Flow, Fragment};
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::{Batch, Packet, DEFAULT_HEADROOM, EXTRA_LENGTH_ANNO_OFFSET, MAX_PACKET};
use rustix::event::epoll;
use rustix::io::Errno;
use rustix::net::{
    AddressFamily, Protocol, RecvFlags, SendFlags, SocketAddrAny, SocketFlags, SocketType,
};

use super::socket::strerror;
use crate::analysis::aggregateipflows::{AggregateNotifier, AggregateSubscription};
use crate::analysis::{aggregate, set_aggregate};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, PullFrom,
    Seconds, Spec, TaskStatus, WaitFd,
};

/// How long after its aggregate's deletion a flow's socket closes (Click's
/// quarter second: packets of the flow already on their way still go).
const GC_DELAY: i64 = 250_000_000;

/// Ready sockets read from the epoll set per task run.
const EVENTS: usize = 64;

/// The idle timeout without a NOTIFIER, in seconds.
const DEFAULT_TIMEOUT_S: i64 = 300;

/// Most flows MAX_FLOWS may allow.
const MAX_FLOWS_LIMIT: u32 = 65536;

/// The keywords of `IPFlowRawSockets`.
const KEYWORDS: &[&str] = &[
    "NOTIFIER",
    "SNAPLEN",
    "PCAP",
    "HEADROOM",
    "MAX_FLOWS",
    "TIMEOUT",
    "BURST",
];

/// One open flow.
struct FlowSock {
    fd: OwnedFd,
    aggregate: u32,
    /// TCP or UDP.
    proto: u8,
    /// The far end: where the flow's packets go, where its replies come
    /// from.
    peer: Ipv4Addr,
    peer_port: u16,
    /// The flow's source port: where its replies go.
    local_port: u16,
    /// When a packet last went or came.
    last: i64,
}

/// Why an input packet was dropped.
enum Refused {
    /// Not an IPv4 TCP or UDP packet whose ports can be read, or not the
    /// protocol of its flow.
    Bad,
    /// A new flow while MAX_FLOWS are open.
    OverLimit,
    /// The kernel refused (opening the flow's socket, or sending).
    Error,
}

/// One raw socket per flow.
pub struct IPFlowRawSockets {
    decl: String,
    epoll: Option<OwnedFd>,
    events: Vec<epoll::Event>,
    /// Open flows by slot; a slot's number is its socket's epoll data.
    slots: Vec<Option<FlowSock>>,
    free: Vec<usize>,
    by_aggregate: KeyedMap<u32, usize>,
    max_flows: usize,
    snaplen: usize,
    filter: bool,
    burst: usize,
    /// Idle timeout in nanoseconds; 0: none.
    timeout: i64,
    pull: bool,
    notifier: Option<AggregateSubscription>,
    deleted: Vec<u32>,
    /// Deleted aggregates and when their flows close, oldest first.
    gc: VecDeque<(u32, i64)>,
    /// When the next idle flow may be due.
    next_idle_check: Option<i64>,
    /// The packet the next read goes into, kept between task runs.
    spare: Option<Packet>,
    empty_polls: u32,
    sent: u64,
    received: u64,
    no_aggregate: u64,
    bad: u64,
    over_limit: u64,
    errors: u64,
    truncated: u64,
    ignored: u64,
    opened: u64,
    reported: bool,
}

impl IPFlowRawSockets {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPFlowRawSockets")
        .ports("1/1")
        .processing("a/h")
        .flow("x/y")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "IPFlowRawSockets([KEYWORDS])\n\n\
             Sends and receives the packets of TCP and UDP flows through raw IP\n\
             sockets, one socket per flow; flows are told apart by the aggregate\n\
             annotation, so AggregateIPFlows usually runs upstream. Input packets\n\
             must start with an IPv4 header; each goes out (IP_HDRINCL: its header\n\
             as it is, the kernel filling in a zero source address, a zero IP ID\n\
             and the checksum) through its flow's socket, to the flow's\n\
             destination. The flow is the first packet's five-tuple, reversed when\n\
             that packet's paint annotation is odd (as AggregateIPFlows paints\n\
             the reverse direction). Datagrams the host receives from the flow's\n\
             destination address and port to its source port come out of the push\n\
             output, IP header marked, destination IP annotation, receive time\n\
             (pronto's clock) and the flow's aggregate annotation set (pronto's;\n\
             Click leaves it zero). Packets do not flow through the element.\n\n\
             A flow's replies are caught on its own raw socket: with PCAP true\n\
             (the default) a classic BPF filter attached to the socket lets the\n\
             kernel queue only the flow's replies (Click uses libpcap on every\n\
             interface instead); with PCAP false every flow's socket receives each\n\
             datagram of its protocol and pronto keeps the flow's own, as Click\n\
             does without libpcap (costlier with many flows). Only datagrams\n\
             delivered to this host are seen (a raw socket sees no forwarded\n\
             traffic). The host's stack sees them too: as Click advises, firewall\n\
             the source ports the flows use (iptables -A INPUT -p udp --dport\n\
             50000:65535 -j DROP, and the same for TCP) and keep them out of\n\
             ip_local_port_range, or the host answers them with resets and port\n\
             unreachables.\n\n\
             At most MAX_FLOWS flows are open at once, one descriptor each (the\n\
             process's descriptor limit must allow them); a packet that would open\n\
             one more is dropped and counted in `over_limit'. A flow's socket\n\
             closes a quarter of a second after the NOTIFIER deletes its aggregate\n\
             (a flow's timeout in AggregateIPFlows, or its end), after TIMEOUT\n\
             without a packet either way, on `clear', and when the router stops;\n\
             a later packet of the same aggregate opens it again.\n\n\
             Dropped and counted (`drops' is their sum): an input packet without\n\
             an aggregate annotation (`no_aggregate'); one that is not IPv4, not\n\
             TCP or UDP with readable ports when it opens a flow, or not its\n\
             flow's protocol (`bad'); one over MAX_FLOWS (`over_limit'); one the\n\
             kernel refused, or that found no room to be sent after a second\n\
             (`errors'). Received datagrams that are not the flow's replies are\n\
             counted in `ignored'; one longer than SNAPLEN is cut to it, its\n\
             extra length annotation set, and counted in `truncated'. Opening a\n\
             raw socket needs CAP_NET_RAW (root): configuration fails without it,\n\
             and in a sandboxed instance (pronto daemon). No socket is opened by\n\
             `pronto check`.\n\n\
             Ports: 1 input, push or pull; 1 push output.\n\n\
             Keywords:\n  \
             NOTIFIER   an AggregateIPFlows element, whose deletions close flows\n  \
             SNAPLEN    bytes kept per received packet, at least 1 (default 2046;\n             \
             at most 1,920 are kept)\n  \
             PCAP       bool: a kernel filter per flow (default true)\n  \
             HEADROOM   bytes, at most 128 (accepted; packets have 128)\n  \
             MAX_FLOWS  flows open at once, 1 to 65536 (default 1024; pronto's)\n  \
             TIMEOUT    seconds without a packet after which a flow's socket\n             \
             closes; 0 never (default 0 with NOTIFIER, else 300;\n             \
             pronto's)\n  \
             BURST      packets read (and pulled) per task run, at least 1\n             \
             (default 1; pronto's)\n\
             Handlers:\n  \
             clear (write): closes every flow's socket (Click's)\n  \
             flows (read): flows open now\n  \
             opened, sent, received, ignored, truncated (read)\n  \
             drops, no_aggregate, bad, over_limit, errors (read) (all pronto's)",
        );

    /// Configures an `IPFlowRawSockets`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let notifier: Option<String> = a.read("NOTIFIER")?;
        let snaplen: u32 = a.read_or("SNAPLEN", 2046)?;
        let pcap: bool = a.read_or("PCAP", true)?;
        let headroom: Option<u32> = a.read("HEADROOM")?;
        let max_flows: u32 = a.read_or("MAX_FLOWS", 1024)?;
        let timeout: Option<Seconds> = a.read("TIMEOUT")?;
        let burst: u32 = a.read_or("BURST", 1)?;
        a.finish()?;
        if snaplen == 0 {
            return Err(cfg_err("SNAPLEN must be at least 1"));
        }
        if headroom.is_some_and(|h| h as usize > DEFAULT_HEADROOM) {
            return Err(cfg_err(format!(
                "HEADROOM too large: pronto packets have {DEFAULT_HEADROOM} bytes of headroom"
            )));
        }
        if max_flows == 0 || max_flows > MAX_FLOWS_LIMIT {
            return Err(cfg_err(format!(
                "MAX_FLOWS must be 1 to {MAX_FLOWS_LIMIT}, found {max_flows}"
            )));
        }
        if burst == 0 {
            return Err(cfg_err("BURST must be at least 1"));
        }
        let timeout = match timeout {
            Some(Seconds(s)) if !(0.0..=1e9).contains(&s) => {
                return Err(cfg_err(format!(
                    "TIMEOUT must be 0 (never) or at most 1000000000 seconds, found {s}"
                )));
            }
            Some(Seconds(s)) => (s * 1e9) as i64,
            None if notifier.is_some() => 0,
            None => DEFAULT_TIMEOUT_S * 1_000_000_000,
        };
        let notifier = match notifier {
            None => None,
            Some(n) => {
                if ctx.peer(&n).is_none() && ctx.declared(&n) {
                    return Err(ConfigError::later(format!(
                        "NOTIFIER: `{n}` is not configured yet"
                    )));
                }
                let agg = ctx
                    .shared::<AggregateNotifier>(&n, "an AggregateNotifier (AggregateIPFlows)")
                    .map_err(|e| cfg_err(format!("NOTIFIER: {}", e.message)))?;
                Some(agg)
            }
        };
        let max_flows = max_flows as usize;
        let mut e = IPFlowRawSockets {
            decl: format!("{} :: IPFlowRawSockets", ctx.name),
            epoll: None,
            events: Vec::with_capacity(EVENTS),
            slots: Vec::with_capacity(max_flows),
            free: Vec::with_capacity(max_flows),
            by_aggregate: pronto_hash::map_with_capacity(max_flows),
            max_flows,
            snaplen: (snaplen as usize).min(MAX_PACKET),
            filter: pcap,
            burst: (burst as usize).min(pronto_packet::BATCH_MAX),
            timeout,
            pull: ctx.ninputs > 0 && !ctx.input_push.first().copied().unwrap_or(true),
            notifier: None,
            deleted: Vec::new(),
            gc: VecDeque::new(),
            next_idle_check: None,
            spare: None,
            empty_polls: 0,
            sent: 0,
            received: 0,
            no_aggregate: 0,
            bad: 0,
            over_limit: 0,
            errors: 0,
            truncated: 0,
            ignored: 0,
            opened: 0,
            reported: false,
        };
        if crate::world::check_only() {
            return Ok(Box::new(e));
        }
        let sys = |what: &str, e: Errno| cfg_err(format!("{what}: {}", strerror(e)));
        // Flows open their sockets as they come; one opened now tells at
        // configuration whether they can be (CAP_NET_RAW).
        drop(raw_socket(proto::UDP).map_err(|e| sys("socket", e))?);
        e.epoll = Some(epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| sys("epoll", e))?);
        e.notifier = notifier.map(|n| n.subscribe());
        Ok(Box::new(e))
    }

    fn drops(&self) -> u64 {
        self.no_aggregate + self.bad + self.over_limit + self.errors
    }

    fn report(&mut self, what: std::fmt::Arguments<'_>) {
        if !self.reported {
            self.reported = true;
            eprintln!("{}: {what}", self.decl);
        }
    }

    /// Sends one input packet through its flow's socket, opening it if
    /// needed, and counts the outcome.
    fn send(&mut self, p: &Packet, now: i64) {
        let r = self.try_send(p, now);
        match r {
            Ok(()) => self.sent += 1,
            Err(Refused::Bad) => self.bad += 1,
            Err(Refused::OverLimit) => self.over_limit += 1,
            Err(Refused::Error) => self.errors += 1,
        }
    }

    fn try_send(&mut self, p: &Packet, now: i64) -> Result<(), Refused> {
        let d = p.data();
        let ip = Ipv4Packet::new_checked(d).map_err(|_| Refused::Bad)?;
        let agg = aggregate(p);
        let slot = match self.by_aggregate.get(&agg) {
            Some(&s) => s,
            None => self.open_flow(agg, &ip, p.paint_anno(), now)?,
        };
        let Some(f) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
            return Err(Refused::Error);
        };
        if ip.protocol() != f.proto {
            return Err(Refused::Bad);
        }
        f.last = now;
        let to = SocketAddrAny::from(SocketAddrV4::new(f.peer, 0));
        let mut waited = false;
        loop {
            let fd = self.slots.get(slot).and_then(Option::as_ref).map(|f| &f.fd);
            let Some(fd) = fd else {
                return Err(Refused::Error);
            };
            match rustix::net::sendto(fd, d, SendFlags::NOSIGNAL, &to) {
                Ok(_) => return Ok(()),
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN | Errno::NOBUFS) if !waited => {
                    waited = true;
                    if !super::wait_writable(Some(fd), super::PUSH_WAIT_MS) {
                        return Err(Refused::Error);
                    }
                }
                Err(Errno::AGAIN | Errno::NOBUFS) => return Err(Refused::Error),
                Err(e) => {
                    self.report(format_args!("sendto: {}", strerror(e)));
                    return Err(Refused::Error);
                }
            }
        }
    }

    /// Opens the socket of aggregate `agg`, whose first packet is `ip`;
    /// returns its slot.
    fn open_flow(
        &mut self,
        agg: u32,
        ip: &Ipv4Packet<&[u8]>,
        paint: u8,
        now: i64,
    ) -> Result<usize, Refused> {
        let f = Flow::from_ipv4(ip).map_err(|_| Refused::Bad)?;
        let mut t = f.tuple;
        if !matches!(t.proto, proto::TCP | proto::UDP) || f.fragment == Fragment::Later {
            return Err(Refused::Bad);
        }
        if self.by_aggregate.len() >= self.max_flows {
            return Err(Refused::OverLimit);
        }
        if paint & 1 != 0 {
            t = t.reverse();
        }
        if self.epoll.is_none() {
            return Err(Refused::Error);
        }
        let peer = Ipv4Addr::from(t.dst_v4());
        let fd = match raw_socket(t.proto) {
            Ok(fd) => fd,
            Err(e) => {
                self.report(format_args!("socket: {}", strerror(e)));
                return Err(Refused::Error);
            }
        };
        let setup = pronto_netdev::rawip::set_ip_hdrincl(fd.as_fd(), true).and_then(|()| {
            if self.filter {
                let prog = pronto_netdev::rawip::flow_reply_filter(t.proto, peer, t.dport, t.sport);
                pronto_netdev::rawip::attach_filter(fd.as_fd(), &prog)
            } else {
                Ok(())
            }
        });
        if let Err(e) = setup {
            self.report(format_args!("socket options: {e}"));
            return Err(Refused::Error);
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(None);
                self.slots.len() - 1
            }
        };
        let added = match &self.epoll {
            Some(ep) => epoll::add(
                ep,
                &fd,
                epoll::EventData::new_u64(slot as u64),
                epoll::EventFlags::IN,
            ),
            None => Err(Errno::BADF),
        };
        if let Err(e) = added {
            self.free.push(slot);
            self.report(format_args!("epoll: {}", strerror(e)));
            return Err(Refused::Error);
        }
        self.slots[slot] = Some(FlowSock {
            fd,
            aggregate: agg,
            proto: t.proto,
            peer,
            peer_port: t.dport,
            local_port: t.sport,
            last: now,
        });
        self.by_aggregate.insert(agg, slot);
        self.opened += 1;
        if self.timeout > 0 && self.next_idle_check.is_none() {
            self.next_idle_check = Some(now.saturating_add(self.timeout));
        }
        Ok(slot)
    }

    /// Closes the socket in `slot`.
    fn close_slot(&mut self, slot: usize) {
        let Some(f) = self.slots.get_mut(slot).and_then(Option::take) else {
            return;
        };
        if let Some(ep) = &self.epoll {
            let _ = epoll::delete(ep, &f.fd);
        }
        self.by_aggregate.remove(&f.aggregate);
        self.free.push(slot);
    }

    fn close_all(&mut self) {
        for slot in 0..self.slots.len() {
            self.close_slot(slot);
        }
        self.gc.clear();
        self.next_idle_check = None;
    }

    /// Takes the NOTIFIER's deletions; closes the flows deleted a quarter
    /// of a second or more before `now`.
    fn collect_garbage(&mut self, now: i64) {
        if let Some(n) = &self.notifier {
            n.take(&mut self.deleted);
        }
        for k in 0..self.deleted.len() {
            let agg = self.deleted[k];
            if self.by_aggregate.contains_key(&agg) {
                self.gc.push_back((agg, now.saturating_add(GC_DELAY)));
            }
        }
        self.deleted.clear();
        while let Some(&(agg, due)) = self.gc.front() {
            if due > now {
                break;
            }
            self.gc.pop_front();
            if let Some(&slot) = self.by_aggregate.get(&agg) {
                self.close_slot(slot);
            }
        }
    }

    /// Closes the flows idle for TIMEOUT; notes when the next may be due.
    fn expire_idle(&mut self, now: i64) {
        if self.timeout == 0 || self.next_idle_check.is_none_or(|t| t > now) {
            return;
        }
        let mut oldest = None::<i64>;
        for slot in 0..self.slots.len() {
            let Some(last) = self.slots[slot].as_ref().map(|f| f.last) else {
                continue;
            };
            if last.saturating_add(self.timeout) <= now {
                self.close_slot(slot);
            } else {
                oldest = Some(oldest.map_or(last, |o| o.min(last)));
            }
        }
        self.next_idle_check = oldest.map(|o| o.saturating_add(self.timeout));
    }

    /// Reads up to BURST datagrams from the flows' sockets that are ready
    /// and emits their flows' replies. True if any datagram came.
    fn receive(&mut self, out: &mut Out<'_>) -> bool {
        let Some(ep) = &self.epoll else {
            return false;
        };
        self.events.clear();
        let zero = rustix::time::Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        if epoll::wait(
            ep,
            rustix::buffer::spare_capacity(&mut self.events),
            Some(&zero),
        )
        .is_err()
        {
            return false;
        }
        let mut budget = self.burst;
        let mut got = false;
        for k in 0..self.events.len() {
            let slot = self.events[k].data.u64() as usize;
            while budget > 0 && self.receive_one(slot, out) {
                budget -= 1;
                got = true;
            }
            if budget == 0 {
                break;
            }
        }
        got
    }

    /// Reads one datagram from the socket in `slot`; emits it if it is the
    /// flow's reply. False when nothing was read.
    fn receive_one(&mut self, slot: usize, out: &mut Out<'_>) -> bool {
        let Some((fproto, peer, peer_port, local_port, agg)) = self
            .slots
            .get(slot)
            .and_then(Option::as_ref)
            .map(|f| (f.proto, f.peer, f.peer_port, f.local_port, f.aggregate))
        else {
            return false;
        };
        let Some(mut p) = self.spare.take().or_else(|| out.pool.alloc()) else {
            return false;
        };
        p.take(p.len());
        p.anno_bytes_mut().fill(0);
        let buf = p.put_uninit(self.snaplen);
        let r = match self.slots.get(slot).and_then(Option::as_ref) {
            Some(f) => rustix::net::recv(&f.fd, &mut *buf, RecvFlags::TRUNC),
            None => Err(Errno::BADF),
        };
        let n = match r {
            Ok((_, n)) => n,
            Err(e) => {
                self.spare = Some(p);
                if !matches!(e, Errno::AGAIN | Errno::INTR) {
                    self.report(format_args!("recv: {}", strerror(e)));
                }
                return false;
            }
        };
        if n > self.snaplen {
            let extra = (n - self.snaplen) as u32;
            p.anno_bytes_mut()[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
                .copy_from_slice(&extra.to_ne_bytes());
        } else {
            p.take(self.snaplen - n);
        }
        // The flow's reply: from its peer's address and port to its own
        // port, of its protocol, not a later fragment.
        let reply = Ipv4Packet::new_checked(p.data()).ok().and_then(|ip| {
            let fl = Flow::from_ipv4(&ip).ok()?;
            let t = fl.tuple;
            let ours = t.proto == fproto
                && Ipv4Addr::from(t.src_v4()) == peer
                && t.sport == peer_port
                && t.dport == local_port
                && fl.fragment != Fragment::Later;
            ours.then(|| (ip.header_len(), ip.dst_addr()))
        });
        let Some((hl, dst)) = reply else {
            self.ignored += 1;
            self.spare = Some(p);
            return true;
        };
        if n > self.snaplen {
            self.truncated += 1;
        }
        if let Some(f) = self.slots.get_mut(slot).and_then(Option::as_mut) {
            f.last = out.now;
        }
        p.set_network_header(0, hl);
        p.set_dst_ip_anno(dst);
        p.set_timestamp_ns(out.now);
        set_aggregate(&mut p, agg);
        self.received += 1;
        out.emit(0, p);
        true
    }
}

/// A non-blocking raw IPv4 socket of protocol `proto`.
fn raw_socket(proto: u8) -> Result<OwnedFd, Errno> {
    rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::RAW,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        Some(Protocol::from_raw(
            std::num::NonZeroU32::new(u32::from(proto)).ok_or(Errno::INVAL)?,
        )),
    )
}

impl Element for IPFlowRawSockets {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        for p in batch.drain() {
            if aggregate(&p) == 0 {
                self.no_aggregate += 1;
                continue;
            }
            self.send(&p, now);
        }
    }

    fn has_task(&self) -> bool {
        true
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        self.pull.then_some((0, self.burst))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let mut busy = false;
        if self.pull && !batch.is_empty() {
            busy = true;
            self.push(0, batch, out);
        }
        busy |= self.receive(out);
        super::poll_status(busy, &mut self.empty_polls)
    }

    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        self.epoll.as_ref().map(|fd| WaitFd {
            fd: fd.as_fd(),
            writable: false,
        })
    }

    fn has_timer(&self) -> bool {
        self.notifier.is_some() || self.timeout > 0
    }

    fn timer(&self) -> Option<i64> {
        if self.notifier.as_ref().is_some_and(|n| n.pending()) {
            return Some(i64::MIN);
        }
        match (self.gc.front().map(|&(_, due)| due), self.next_idle_check) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn run_timer(&mut self, now: i64) {
        self.collect_garbage(now);
        self.expire_idle(now);
    }

    fn held(&self) -> usize {
        usize::from(self.spare.is_some())
    }

    fn pull_from(&mut self, _port: usize) -> PullFrom {
        PullFrom::Nothing
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_aggregate", self.no_aggregate);
        c.drop("malformed", self.bad);
        c.drop("over_limit", self.over_limit);
        c.drop("send_failed", self.errors);
        c.count("flows", self.by_aggregate.len() as u64);
        c.count("opened", self.opened);
        c.count("sent", self.sent);
        c.count("received", self.received);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::write("clear"),
            HandlerInfo::read("flows"),
            HandlerInfo::read("opened"),
            HandlerInfo::read("sent"),
            HandlerInfo::read("received"),
            HandlerInfo::read("ignored"),
            HandlerInfo::read("truncated"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("no_aggregate"),
            HandlerInfo::read("bad"),
            HandlerInfo::read("over_limit"),
            HandlerInfo::read("errors"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let v = match name {
            "flows" => self.by_aggregate.len() as u64,
            "opened" => self.opened,
            "sent" => self.sent,
            "received" => self.received,
            "ignored" => self.ignored,
            "truncated" => self.truncated,
            "drops" => self.drops(),
            "no_aggregate" => self.no_aggregate,
            "bad" => self.bad,
            "over_limit" => self.over_limit,
            "errors" => self.errors,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        };
        Ok(v.to_string())
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "clear" => {
                self.close_all();
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.close_all();
        self.spare = None;
        self.epoll = None;
        if self.no_aggregate > 0 && self.opened == 0 {
            eprintln!("{}: saw no packets with aggregate annotations", self.decl);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::time::{Duration, Instant};

    use pronto_packet::Pool;

    use super::*;
    use crate::app::testing::{config_err, push_batch, run_task};
    use crate::standard::test_support::loopback_udp;

    const MS: i64 = 1_000_000;

    /// The element `agg` named in `NOTIFIER agg` stands for.
    struct OnePeer(std::sync::Arc<AggregateNotifier>);

    impl crate::Peers for OnePeer {
        fn lookup(&self, name: &str) -> Option<crate::Peer> {
            (name == "agg").then(|| crate::Peer {
                name: "agg".into(),
                class: "AggregateIPFlows",
                shared: Some(self.0.clone()),
            })
        }

        fn of_class(&self, _class: &str) -> Vec<crate::Peer> {
            Vec::new()
        }
    }

    fn configure_with(
        conf: &str,
        peers: &dyn crate::Peers,
    ) -> Result<Box<dyn Element>, ConfigError> {
        let ctx = ConfigCtx {
            name: "e",
            config: conf,
            ninputs: 1,
            noutputs: 1,
            base_dir: std::path::Path::new("."),
            keywords: KEYWORDS,
            output_push: &[true],
            input_push: &[true],
            peers,
        };
        IPFlowRawSockets::configure(&ctx)
    }

    /// The element, or `None` (said loudly) without CAP_NET_RAW.
    fn open(conf: &str, peers: &dyn crate::Peers) -> Option<Box<dyn Element>> {
        match configure_with(conf, peers) {
            Ok(e) => Some(e),
            Err(e) if e.message.starts_with("socket: Operation not permitted") => {
                eprintln!("SKIPPED: raw sockets need CAP_NET_RAW ({})", e.message);
                None
            }
            Err(e) => panic!("{conf}: {}", e.message),
        }
    }

    fn err(conf: &str) -> String {
        config_err(configure_with(conf, &crate::NoPeers))
    }

    fn handler(e: &dyn Element, name: &str) -> String {
        e.read_handler(name).expect("handler")
    }

    /// Pushes `frames`, each with its aggregate annotation, at `now`.
    fn push(e: &mut dyn Element, pool: &Pool, frames: &[(&[u8], u32)], now: i64) {
        let mut b = Batch::new();
        for &(f, agg) in frames {
            let mut p = pool.alloc_from(f).expect("pool has room");
            set_aggregate(&mut p, agg);
            let _ = b.push(p);
        }
        let outs = push_batch(e, pool, &mut b, 1, now);
        assert!(outs[0].is_empty(), "nothing flows through");
    }

    /// A UDP socket on a free loopback port: the port a flow sends from,
    /// held so that the host neither hands it to another socket nor
    /// answers the flow's replies with port unreachables.
    fn port_holder() -> (UdpSocket, u16) {
        let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let port = s.local_addr().expect("addr").port();
        (s, port)
    }

    /// What `peer` receives within `wait` after the first datagram:
    /// (payload, sender's port), sorted.
    fn received(peer: &UdpSocket, wait: Duration) -> Vec<(Vec<u8>, u16)> {
        peer.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = peer.recv_from(&mut buf) {
            got.push((buf[..n].to_vec(), from.port()));
            peer.set_read_timeout(Some(wait)).expect("timeout");
        }
        got.sort();
        got
    }

    /// Runs the task until `n` packets came out or two seconds passed.
    fn collect(e: &mut dyn Element, pool: &Pool, n: usize, now: i64) -> Vec<Packet> {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut got = Vec::new();
        while got.len() < n && Instant::now() < deadline {
            let (_, mut outs, _) = run_task(e, pool, 1, now);
            got.append(&mut outs[0]);
            if got.len() < n {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        got
    }

    #[test]
    fn config_errors() {
        assert_eq!(err("SNAPLEN 0"), "SNAPLEN must be at least 1");
        assert_eq!(err("BURST 0"), "BURST must be at least 1");
        assert_eq!(err("MAX_FLOWS 0"), "MAX_FLOWS must be 1 to 65536, found 0");
        assert_eq!(
            err("MAX_FLOWS 70000"),
            "MAX_FLOWS must be 1 to 65536, found 70000"
        );
        assert_eq!(
            err("HEADROOM 200"),
            "HEADROOM too large: pronto packets have 128 bytes of headroom"
        );
        assert_eq!(
            err("TIMEOUT -1"),
            "TIMEOUT: expected time in seconds, found `-1`"
        );
        assert_eq!(
            err("TIMEOUT 2000000000"),
            "TIMEOUT must be 0 (never) or at most 1000000000 seconds, found 2000000000"
        );
        assert_eq!(err("NOTIFIER af"), "NOTIFIER: no element named `af`");
        assert_eq!(err("3"), "too many arguments: `3` was not expected");
    }

    /// Two flows: each packet reaches a real UDP peer byte for byte from
    /// its flow's port; the peer's replies come out as IP packets with
    /// their flow's aggregate annotation; a datagram to a flow's port
    /// from another port is not the flow's reply and stays out.
    #[test]
    fn two_flows_out_and_their_replies_back() {
        let Some(mut e) = open("BURST 8", &crate::NoPeers) else {
            return;
        };
        let pool = Pool::new(64).expect("pool");
        let (peer, pp) = port_holder();
        let (ra, a) = port_holder();
        let (_rb, b) = port_holder();
        let (one_a, one_b, two_a) = (
            loopback_udp(a, pp, b"one a"),
            loopback_udp(b, pp, b"one b"),
            loopback_udp(a, pp, b"two a"),
        );
        push(
            e.as_mut(),
            &pool,
            &[(&one_a, 7), (&one_b, 9), (&two_a, 7)],
            5 * MS,
        );
        assert_eq!(
            received(&peer, Duration::from_millis(200)),
            vec![
                (b"one a".to_vec(), a),
                (b"one b".to_vec(), b),
                (b"two a".to_vec(), a)
            ]
        );
        for (h, v) in [
            ("sent", "3"),
            ("flows", "2"),
            ("opened", "2"),
            ("drops", "0"),
        ] {
            assert_eq!(handler(e.as_ref(), h), v, "{h}");
        }
        // Replies, and a stranger writing to flow a's port.
        let (stranger, sp) = port_holder();
        stranger
            .send_to(b"not the flow", ("127.0.0.1", a))
            .expect("send");
        peer.send_to(b"re a", ("127.0.0.1", a)).expect("send");
        peer.send_to(b"re b!", ("127.0.0.1", b)).expect("send");
        let mut got = collect(e.as_mut(), &pool, 2, 42 * MS);
        // Nothing more comes.
        std::thread::sleep(Duration::from_millis(50));
        got.append(&mut collect(e.as_mut(), &pool, 1, 43 * MS));
        got.sort_by_key(aggregate);
        assert_eq!(got.len(), 2, "the two replies, not the stranger's ({sp})");
        for (p, agg, dport, payload) in [
            (&got[0], 7, a, &b"re a"[..]),
            (&got[1], 9, b, &b"re b!"[..]),
        ] {
            let d = p.data();
            let len = 28 + payload.len();
            assert_eq!(d.len(), len);
            assert_eq!(d[0], 0x45);
            assert_eq!(&d[2..4], &(len as u16).to_be_bytes());
            assert_eq!(d[9], 17);
            assert_eq!(&d[12..20], &[127, 0, 0, 1, 127, 0, 0, 1]);
            assert_eq!(&d[20..22], &pp.to_be_bytes());
            assert_eq!(&d[22..24], &dport.to_be_bytes());
            assert_eq!(&d[24..26], &((len - 20) as u16).to_be_bytes());
            assert_eq!(&d[28..], payload);
            assert_eq!(aggregate(p), agg);
            assert_eq!(p.network_header_offset(), Some(0));
            assert_eq!(p.network_header_len(), Some(20));
            assert_eq!(p.dst_ip_anno(), [127, 0, 0, 1]);
            assert_eq!(p.timestamp_ns(), 42 * MS);
        }
        for (h, v) in [("received", "2"), ("ignored", "0"), ("truncated", "0")] {
            assert_eq!(handler(e.as_ref(), h), v, "{h}");
        }
        drop(ra);
        e.cleanup();
        assert_eq!(handler(e.as_ref(), "flows"), "0");
    }

    /// A packet that would open a flow beyond MAX_FLOWS is dropped and
    /// counted; the open flows go on.
    #[test]
    fn a_flow_beyond_max_flows_is_counted_and_dropped() {
        let Some(mut e) = open("MAX_FLOWS 2", &crate::NoPeers) else {
            return;
        };
        let pool = Pool::new(64).expect("pool");
        let (peer, pp) = port_holder();
        let ports: Vec<(UdpSocket, u16)> = (0..3).map(|_| port_holder()).collect();
        let f: Vec<Vec<u8>> = ports
            .iter()
            .enumerate()
            .map(|(i, (_, p))| loopback_udp(*p, pp, format!("flow {i}").as_bytes()))
            .collect();
        push(
            e.as_mut(),
            &pool,
            &[(&f[0], 1), (&f[1], 2), (&f[2], 3), (&f[0], 1)],
            0,
        );
        let mut want = vec![
            (b"flow 0".to_vec(), ports[0].1),
            (b"flow 0".to_vec(), ports[0].1),
            (b"flow 1".to_vec(), ports[1].1),
        ];
        want.sort();
        assert_eq!(received(&peer, Duration::from_millis(200)), want);
        for (h, v) in [
            ("sent", "3"),
            ("flows", "2"),
            ("over_limit", "1"),
            ("drops", "1"),
        ] {
            assert_eq!(handler(e.as_ref(), h), v, "{h}");
        }
    }

    /// Packets that cannot be sent are counted by reason, and none opens a
    /// flow.
    #[test]
    fn bad_input_is_counted_and_dropped() {
        let Some(mut e) = open("", &crate::NoPeers) else {
            return;
        };
        let pool = Pool::new(64).expect("pool");
        let good = loopback_udp(9, 9, b"x");
        let mut icmp = good.clone();
        icmp[9] = 1;
        let mut later = good.clone();
        later[6..8].copy_from_slice(&[0, 5]); // offset 40 bytes
        let mut v6 = good.clone();
        v6[0] = 0x60;
        push(
            e.as_mut(),
            &pool,
            &[
                (&good, 0),
                (&icmp, 1),
                (&later, 2),
                (&v6, 3),
                (&good[..10], 4),
                (&good[..24], 5),
            ],
            0,
        );
        for (h, v) in [
            ("no_aggregate", "1"),
            ("bad", "5"),
            ("drops", "6"),
            ("sent", "0"),
            ("opened", "0"),
        ] {
            assert_eq!(handler(e.as_ref(), h), v, "{h}");
        }
    }

    /// The NOTIFIER's deletion closes a flow a quarter of a second later;
    /// the flow's next packet opens it again; `clear' closes them all.
    #[test]
    fn notified_flows_close_a_quarter_second_later() {
        let n = std::sync::Arc::new(AggregateNotifier::default());
        let Some(mut e) = open("NOTIFIER agg", &OnePeer(n.clone())) else {
            return;
        };
        let pool = Pool::new(64).expect("pool");
        let (_peer, pp) = port_holder();
        let (_ra, a) = port_holder();
        let (_rb, b) = port_holder();
        let (fa, fb) = (loopback_udp(a, pp, b"a"), loopback_udp(b, pp, b"b"));
        push(e.as_mut(), &pool, &[(&fa, 5), (&fb, 6)], 0);
        assert_eq!(handler(e.as_ref(), "flows"), "2");
        assert!(e.has_timer());
        assert_eq!(e.timer(), None, "no idle timeout with a NOTIFIER");
        n.deleted(5);
        n.deleted(77); // not a flow here
        assert_eq!(e.timer(), Some(i64::MIN));
        e.run_timer(10 * MS);
        assert_eq!(e.timer(), Some(260 * MS));
        assert_eq!(handler(e.as_ref(), "flows"), "2");
        e.run_timer(260 * MS - 1);
        assert_eq!(handler(e.as_ref(), "flows"), "2");
        e.run_timer(260 * MS);
        assert_eq!(handler(e.as_ref(), "flows"), "1");
        assert_eq!(e.timer(), None);
        push(e.as_mut(), &pool, &[(&fa, 5)], 300 * MS);
        assert_eq!(handler(e.as_ref(), "flows"), "2");
        assert_eq!(handler(e.as_ref(), "opened"), "3");
        e.write_handler("clear", "").expect("clear");
        assert_eq!(handler(e.as_ref(), "flows"), "0");
        assert_eq!(handler(e.as_ref(), "sent"), "3");
    }

    /// Without a NOTIFIER, flows idle for TIMEOUT close.
    #[test]
    fn idle_flows_close_after_timeout() {
        let Some(mut e) = open("TIMEOUT 2", &crate::NoPeers) else {
            return;
        };
        let pool = Pool::new(64).expect("pool");
        let (_peer, pp) = port_holder();
        let (_ra, a) = port_holder();
        let (_rb, b) = port_holder();
        let s = 1000 * MS;
        push(e.as_mut(), &pool, &[(&loopback_udp(a, pp, b"a"), 1)], 0);
        push(e.as_mut(), &pool, &[(&loopback_udp(b, pp, b"b"), 2)], s);
        assert_eq!(e.timer(), Some(2 * s));
        e.run_timer(2 * s);
        assert_eq!(handler(e.as_ref(), "flows"), "1");
        assert_eq!(e.timer(), Some(3 * s));
        push(
            e.as_mut(),
            &pool,
            &[(&loopback_udp(b, pp, b"b"), 2)],
            2 * s + 1,
        );
        e.run_timer(3 * s);
        assert_eq!(handler(e.as_ref(), "flows"), "1");
        assert_eq!(e.timer(), Some(4 * s + 1));
        e.run_timer(4 * s + 1);
        assert_eq!(handler(e.as_ref(), "flows"), "0");
        assert_eq!(e.timer(), None);
    }

    /// Without the kernel filter (PCAP false) the flow's socket reads
    /// every UDP datagram the host receives; only the flow's reply comes
    /// out.
    #[test]
    fn without_pcap_the_reply_is_picked_in_userspace() {
        let Some(mut e) = open("PCAP false, BURST 64", &crate::NoPeers) else {
            return;
        };
        let pool = Pool::new(256).expect("pool");
        let (peer, pp) = port_holder();
        let (_ra, a) = port_holder();
        let (stranger, _) = port_holder();
        push(e.as_mut(), &pool, &[(&loopback_udp(a, pp, b"hello"), 3)], 0);
        assert_eq!(
            received(&peer, Duration::from_millis(50)),
            vec![(b"hello".to_vec(), a)]
        );
        stranger
            .send_to(b"not the flow", ("127.0.0.1", a))
            .expect("send");
        peer.send_to(b"reply", ("127.0.0.1", a)).expect("send");
        let got = collect(e.as_mut(), &pool, 1, 0);
        assert_eq!(got.len(), 1);
        assert!(got[0].data().ends_with(b"reply"));
        assert_eq!(aggregate(&got[0]), 3);
        let ignored: u64 = handler(e.as_ref(), "ignored").parse().expect("number");
        assert!(
            ignored >= 2,
            "the element's own datagram and the stranger's: {ignored}"
        );
    }
}
