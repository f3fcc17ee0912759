//! A VXLAN uplink (RFC 7348): the daemon's switch joined to other VTEPs
//! (other nodes' switches, Linux `vxlan` devices) over UDP.
//!
//! `pronto daemon --vxlan LOCAL_IP[:PORT],vni=N` attaches a switch port
//! named `vxlan/N` whose other end is a UDP socket bound to `LOCAL_IP:PORT`
//! (port 4789 unless given). One thread moves frames both ways:
//!
//! - switch → VTEPs: each frame gets the 8-byte VXLAN header (I flag, the
//!   VNI) and leaves in one UDP datagram to the VTEP that owns its
//!   destination MAC in the remote table ([`Remotes`]). Broadcast,
//!   multicast and unknown-unicast frames are replicated head-end to the
//!   VTEPs of the flood list only, each copy counted; with an empty flood
//!   list (the default) nothing is flooded, and the switch is told not to
//!   send broadcasts to the port at all (`set_broadcast`). The UDP source
//!   port comes from a hash of the inner frame's addresses (RFC 7348
//!   section 5: one of a few sending sockets is picked by it), so that
//!   the underlay's ECMP can spread flows; the destination port is the
//!   VTEP's own (the configured port unless the remote names another).
//! - VTEPs → switch: each datagram's header is checked (the I flag set,
//!   the VNI ours; RFC 7348 has other bits ignored on receipt), the inner
//!   frame must be an Ethernet frame (14 bytes or more) that fits a switch
//!   slot, and with `strict` the sender must be a known VTEP; then the
//!   inner frame enters the switch.
//!
//! The remote MACs are static entries of the switch pointing at the port,
//! so frames for them are switched there and never flooded; their IP
//! addresses, when given, are answered by the switch itself (ARP and
//! Neighbor Solicitations, `add_arp`/`add_nd`), as for local instances.
//! The table has two parts ([`Origin`]): the operator's (`--vxlan-remote`,
//! fixed at start-up) and, in a cluster, the cluster's (the instances of
//! other nodes, from etcd's `macs/`), replaced at run time
//! ([`Vxlan::set_cluster`]); an operator's entry wins over the cluster's
//! for the same MAC.
//!
//! Every frame either crosses or is counted by reason ([`Reason`]), in
//! `GET /metrics` as `pronto_vxlan_dropped_total{vxlan,reason}`.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use pronto_switch::{Peer, PortShm};

/// The IANA port for VXLAN.
pub const DEFAULT_PORT: u16 = 4789;
/// The VXLAN header's length.
pub const HEADER: usize = 8;
/// The I flag: the VNI is valid (RFC 7348 section 5).
const FLAG_I: u8 = 0x08;
/// The largest VNI (24 bits).
pub const MAX_VNI: u32 = (1 << 24) - 1;
/// The shortest inner frame: an Ethernet header.
const MIN_INNER: usize = 14;
/// The longest inner frame: what a switch slot holds.
const MAX_INNER: usize = pronto_switch::layout::MAX_FRAME as usize;
/// Frames moved per pass each way.
const BURST: usize = 64;
/// Empty passes before the thread sleeps.
const SPIN: u32 = 256;
/// The longest sleep: how soon a stop is seen when nothing moves.
const SLEEP: Duration = Duration::from_millis(100);
/// Sockets frames leave by, one picked per flow (their source ports
/// differ).
const SENDERS: usize = 4;

/// Why a frame did not cross.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A datagram shorter than the header, or without the I flag.
    BadHeader,
    /// An inner frame shorter than an Ethernet header or longer than a
    /// switch slot.
    BadLength,
    /// A datagram for another VNI.
    WrongVni,
    /// A datagram from a VTEP not in the table (strict mode only).
    UnknownVtep,
    /// A unicast frame for a MAC no VTEP owns, with an empty flood list.
    NoRemote,
    /// The switch's port had no room.
    SwitchPortFull,
    /// The socket refused a datagram (buffer full, no route).
    SocketRefused,
}

impl Reason {
    /// Every reason, in the order `/metrics` lists them.
    pub const ALL: [Reason; 7] = [
        Reason::BadHeader,
        Reason::BadLength,
        Reason::WrongVni,
        Reason::UnknownVtep,
        Reason::NoRemote,
        Reason::SwitchPortFull,
        Reason::SocketRefused,
    ];

    /// Its label in `/metrics` and the API.
    pub fn label(self) -> &'static str {
        match self {
            Reason::BadHeader => "bad_header",
            Reason::BadLength => "bad_length",
            Reason::WrongVni => "wrong_vni",
            Reason::UnknownVtep => "unknown_vtep",
            Reason::NoRemote => "no_remote",
            Reason::SwitchPortFull => "switch_port_full",
            Reason::SocketRefused => "socket_refused",
        }
    }
}

/// Writes the VXLAN header for `vni` and `frame` into `out`; returns the
/// datagram's length (`HEADER + frame.len()`).
///
/// # Panics
/// If `out` is shorter than that (the caller sizes it for a slot).
pub fn encap(vni: u32, frame: &[u8], out: &mut [u8]) -> usize {
    let v = vni.to_be_bytes();
    out[..HEADER].copy_from_slice(&[FLAG_I, 0, 0, 0, v[1], v[2], v[3], 0]);
    out[HEADER..HEADER + frame.len()].copy_from_slice(frame);
    HEADER + frame.len()
}

/// The inner frame of datagram `d` if it is a VXLAN packet for `vni`
/// carrying an Ethernet frame a switch slot holds.
pub fn decap(vni: u32, d: &[u8]) -> Result<&[u8], Reason> {
    if d.len() < HEADER || d[0] & FLAG_I == 0 {
        return Err(Reason::BadHeader);
    }
    if u32::from_be_bytes([0, d[4], d[5], d[6]]) != vni {
        return Err(Reason::WrongVni);
    }
    let inner = &d[HEADER..];
    if !(MIN_INNER..=MAX_INNER).contains(&inner.len()) {
        return Err(Reason::BadLength);
    }
    Ok(inner)
}

/// A hash of the inner frame's flow (its addresses, and with IPv4 or IPv6
/// the IP addresses and protocol), for the source port: the frames of one
/// flow leave by one socket, so they stay in order on the underlay.
pub fn flow_hash(frame: &[u8]) -> u32 {
    // FNV-1a over the fields: stable across processes, no state.
    let mut h: u32 = 0x811c_9dc5;
    let mut mix = |b: &[u8]| {
        for &x in b {
            h = (h ^ u32::from(x)).wrapping_mul(0x0100_0193);
        }
    };
    mix(frame.get(..12).unwrap_or(frame));
    match frame.get(12..14) {
        Some([0x08, 0x00]) => mix(frame.get(23..34).unwrap_or(&[])),
        Some([0x86, 0xdd]) => mix(frame.get(20..54).unwrap_or(&[])),
        _ => {}
    }
    h
}

/// Where a remote entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// `--vxlan-remote`, given at start-up.
    Operator,
    /// The cluster's store: an instance running on another node.
    Cluster,
}

/// One remote MAC: the VTEP that owns it and, optionally, its addresses
/// (answered by the switch for ARP / Neighbor Solicitations).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remote {
    /// The MAC.
    pub mac: [u8; 6],
    /// The VTEP's address and UDP port.
    pub vtep: SocketAddr,
    /// The MAC's IP addresses.
    pub ips: Vec<IpAddr>,
}

/// The VXLAN uplink's settings (`--vxlan`, `--vxlan-remote`,
/// `--vxlan-flood`, `--vxlan-strict`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VxlanSpec {
    /// The local address and port the socket is bound to.
    pub local: SocketAddr,
    /// The VXLAN network identifier.
    pub vni: u32,
    /// Remote MACs.
    pub remotes: Vec<Remote>,
    /// VTEPs that get broadcast, multicast and unknown-unicast frames.
    pub flood: Vec<SocketAddr>,
    /// Datagrams only from VTEPs of the table or the flood list.
    pub strict: bool,
}

impl VxlanSpec {
    /// Parses `LOCAL_IP[:PORT],vni=N` (an IPv6 address with a port in
    /// brackets: `[fd00::1]:4789,vni=42`).
    pub fn parse(s: &str) -> Result<VxlanSpec, String> {
        let (addr, rest) = s.split_once(',').ok_or_else(|| {
            format!("expected LOCAL_IP[:PORT],vni=N (10.0.0.1,vni=42), found `{s}`")
        })?;
        let local =
            parse_vtep(addr, DEFAULT_PORT).map_err(|e| format!("the local address: {e}"))?;
        let v = rest
            .strip_prefix("vni=")
            .or_else(|| rest.strip_prefix("VNI="))
            .ok_or_else(|| format!("expected vni=N after the address, found `{rest}`"))?;
        let vni = match v.parse::<u32>() {
            Ok(n) if n <= MAX_VNI => n,
            _ => {
                return Err(format!(
                    "vni: expected a number from 0 to {MAX_VNI}, found `{v}`"
                ))
            }
        };
        Ok(VxlanSpec {
            local,
            vni,
            remotes: Vec::new(),
            flood: Vec::new(),
            strict: false,
        })
    }

    /// Parses a remote, `MAC,VTEP[:PORT][,IP...]`, the VTEP's port
    /// defaulting to this uplink's.
    pub fn parse_remote(&self, s: &str) -> Result<Remote, String> {
        let mut parts = s.split(',');
        let m = parts.next().unwrap_or_default();
        let mac = pronto_switch::control::parse_mac(m)
            .ok_or_else(|| format!("expected MAC,VTEP[,IP...]: `{m}` is not a MAC address"))?;
        let v = parts
            .next()
            .ok_or_else(|| format!("expected MAC,VTEP[,IP...], found `{s}`"))?;
        let vtep = parse_vtep(v, self.local.port()).map_err(|e| format!("the VTEP: {e}"))?;
        let ips = parts
            .map(|ip| {
                ip.parse::<IpAddr>()
                    .map_err(|_| format!("`{ip}` is not an IP address"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Remote { mac, vtep, ips })
    }

    /// Parses a flood-list VTEP, `VTEP[:PORT]`.
    pub fn parse_flood(&self, s: &str) -> Result<SocketAddr, String> {
        parse_vtep(s, self.local.port())
    }
}

/// A MAC as text, `02:00:00:00:2a:01`.
pub fn mac_text(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// `IP`, `IPV4:PORT` or `[IPV6]:PORT`.
fn parse_vtep(s: &str, port: u16) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    s.parse::<IpAddr>()
        .map(|ip| SocketAddr::new(ip, port))
        .map_err(|_| format!("expected IP or IP:PORT ([IPV6]:PORT), found `{s}`"))
}

/// The table the moving thread reads: MAC → VTEP, the flood list and the
/// known VTEPs. Replaced whole, never changed in place.
#[derive(Debug, Default)]
pub struct Remotes {
    /// The operator's remotes, as given (for the API).
    remotes: Vec<Remote>,
    /// The cluster's remotes, by MAC (for the API and the next change).
    cluster: Vec<Remote>,
    by_mac: HashMap<[u8; 6], SocketAddr>,
    flood: Vec<SocketAddr>,
    known: HashSet<IpAddr>,
}

impl Remotes {
    /// The table of `spec`'s remotes and flood list.
    pub fn new(remotes: &[Remote], flood: &[SocketAddr]) -> Remotes {
        Remotes::with_cluster(remotes, Vec::new(), flood)
    }

    /// The table of the operator's `remotes`, the cluster's `cluster` (an
    /// operator's entry wins for the same MAC) and the flood list.
    fn with_cluster(remotes: &[Remote], mut cluster: Vec<Remote>, flood: &[SocketAddr]) -> Remotes {
        cluster.sort_by_key(|r| r.mac);
        cluster.dedup_by_key(|r| r.mac);
        let by_mac = cluster
            .iter()
            .chain(remotes)
            .map(|r| (r.mac, r.vtep))
            .collect();
        let known = remotes
            .iter()
            .chain(&cluster)
            .map(|r| r.vtep.ip())
            .chain(flood.iter().map(|a| a.ip()))
            .collect();
        Remotes {
            remotes: remotes.to_vec(),
            cluster,
            by_mac,
            flood: flood.to_vec(),
            known,
        }
    }

    /// Whether the operator gave an entry for `mac`.
    fn operator_has(&self, mac: &[u8; 6]) -> bool {
        self.remotes.iter().any(|r| r.mac == *mac)
    }
}

/// What the switch must change when the cluster's part of the table
/// changes ([`Vxlan::set_cluster`]): entries whose static MAC and
/// addresses go (`gone`: removed, or changed and given again in `came`),
/// and entries to add. MACs the operator gave are in neither (their switch
/// entries are the operator's).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ClusterChange {
    /// Entries no longer the cluster's as they were.
    pub gone: Vec<Remote>,
    /// Entries new or changed.
    pub came: Vec<Remote>,
}

/// What the uplink moved and dropped.
#[derive(Debug, Default)]
pub struct VxlanCounters {
    /// Frames from VTEPs into the switch.
    pub to_switch: AtomicU64,
    /// Datagrams sent to VTEPs (each flooded copy counted).
    pub to_vteps: AtomicU64,
    /// Of those, copies sent for broadcast, multicast and unknown-unicast
    /// frames.
    pub flooded: AtomicU64,
    /// Drops, by [`Reason`] (in `Reason::ALL` order).
    pub dropped: [AtomicU64; 7],
}

impl VxlanCounters {
    fn count_drop(&self, r: Reason, n: u64) {
        let i = Reason::ALL.iter().position(|&x| x == r).unwrap_or(0);
        self.dropped[i].fetch_add(n, Ordering::Relaxed);
    }
}

/// A snapshot of the uplink, for the API and `/metrics`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct VxlanView {
    /// The VNI.
    pub vni: u32,
    /// The local address.
    pub local: String,
    /// Its switch port.
    pub port: u16,
    /// Frames from VTEPs into the switch.
    pub to_switch: u64,
    /// Datagrams sent to VTEPs.
    pub to_vteps: u64,
    /// Of those, flooded copies.
    pub flooded: u64,
    /// Drops by reason label.
    pub dropped: Vec<(&'static str, u64)>,
    /// The remote table: MAC, VTEP, addresses and origin (the
    /// operator's entries first, then the cluster's, by MAC).
    pub remotes: Vec<RemoteView>,
    /// The flood list.
    pub flood: Vec<String>,
    /// Whether datagrams are taken from known VTEPs only.
    pub strict: bool,
    /// How many times the cluster's part of the table was replaced (in
    /// a cluster: once per batch of `macs/` changes a watch delivered).
    pub cluster_rebuilds: u64,
}

/// One remote MAC, for the API.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RemoteView {
    /// The MAC.
    pub mac: String,
    /// The VTEP, `IP:PORT`.
    pub vtep: String,
    /// Its IP addresses (answered by the switch).
    pub ips: Vec<String>,
    /// Where the entry came from: `operator` or `cluster`.
    pub origin: Origin,
}

/// A running VXLAN uplink; stops (and its thread ends) when dropped.
pub(crate) struct Vxlan {
    pub(crate) vni: u32,
    pub(crate) local: SocketAddr,
    pub(crate) port: u16,
    strict: bool,
    counters: Arc<VxlanCounters>,
    table: Arc<RwLock<Arc<Remotes>>>,
    /// Replacements of the table's cluster part.
    rebuilds: AtomicU64,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Vxlan {
    /// Binds the sockets and starts moving frames between them and the
    /// port whose peer end is `shm`.
    pub(crate) fn start(spec: &VxlanSpec, port: u16, shm: PortShm) -> Result<Vxlan, String> {
        let local = spec.local;
        let err = |e: &dyn std::fmt::Display| format!("{local}: {e}");
        let rx = UdpSocket::bind(local).map_err(|e| err(&e))?;
        let mut senders = Vec::with_capacity(SENDERS);
        for _ in 0..SENDERS {
            senders.push(UdpSocket::bind(SocketAddr::new(local.ip(), 0)).map_err(|e| err(&e))?);
        }
        for s in senders.iter().chain([&rx]) {
            s.set_nonblocking(true).map_err(|e| err(&e))?;
        }
        let lend = (shm.geometry.slots / 2).max(1);
        let peer = Peer::new(shm, lend).map_err(|e| err(&e))?;
        let counters = Arc::new(VxlanCounters::default());
        let table = Arc::new(RwLock::new(Arc::new(Remotes::new(
            &spec.remotes,
            &spec.flood,
        ))));
        let stop = Arc::new(AtomicBool::new(false));
        let mut m = Mover {
            vni: spec.vni,
            strict: spec.strict,
            rx,
            senders,
            peer,
            table: table.clone(),
            counters: counters.clone(),
            buf: vec![0; HEADER + MAX_INNER + 1],
        };
        let st = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("vxlan-{}", spec.vni))
            .spawn(move || m.run(&st))
            .map_err(|e| format!("vxlan/{}: cannot start its thread: {e}", spec.vni))?;
        Ok(Vxlan {
            vni: spec.vni,
            local,
            port,
            strict: spec.strict,
            counters,
            table,
            rebuilds: AtomicU64::new(0),
            stop,
            thread: Some(thread),
        })
    }

    /// Its counters now.
    pub(crate) fn view(&self) -> VxlanView {
        let c = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let t = match self.table.read() {
            Ok(t) => t.clone(),
            Err(p) => p.into_inner().clone(),
        };
        let mac = mac_text;
        VxlanView {
            remotes: t
                .remotes
                .iter()
                .map(|r| (r, Origin::Operator))
                .chain(t.cluster.iter().map(|r| (r, Origin::Cluster)))
                .map(|(r, origin)| RemoteView {
                    mac: mac(&r.mac),
                    vtep: r.vtep.to_string(),
                    ips: r.ips.iter().map(|i| i.to_string()).collect(),
                    origin,
                })
                .collect(),
            flood: t.flood.iter().map(|a| a.to_string()).collect(),
            strict: self.strict,
            cluster_rebuilds: l(&self.rebuilds),
            vni: self.vni,
            local: self.local.to_string(),
            port: self.port,
            to_switch: l(&c.to_switch),
            to_vteps: l(&c.to_vteps),
            flooded: l(&c.flooded),
            dropped: Reason::ALL
                .iter()
                .zip(&c.dropped)
                .map(|(r, n)| (r.label(), l(n)))
                .collect(),
        }
    }
}

impl Vxlan {
    fn table(&self) -> Arc<Remotes> {
        match self.table.read() {
            Ok(t) => t.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// The cluster's entries now, by MAC.
    pub(crate) fn cluster(&self) -> Vec<Remote> {
        self.table().cluster.clone()
    }

    /// Replaces the cluster's part of the table with `cluster` (one entry
    /// per MAC: the first given wins); the moving thread takes the new
    /// table at its next pass. Returns what the switch must change.
    pub(crate) fn set_cluster(&self, cluster: Vec<Remote>) -> ClusterChange {
        let mut w = match self.table.write() {
            Ok(w) => w,
            Err(p) => p.into_inner(),
        };
        let next = Remotes::with_cluster(&w.remotes, cluster, &w.flood);
        let change = cluster_change(&w, &next);
        *w = Arc::new(next);
        self.rebuilds.fetch_add(1, Ordering::Relaxed);
        change
    }
}

/// What the switch must change from table `old` to table `next` (their
/// cluster parts; the operator's are the same).
fn cluster_change(old: &Remotes, next: &Remotes) -> ClusterChange {
    let mut change = ClusterChange::default();
    let same = |a: &Remote, t: &Remotes| {
        t.cluster
            .binary_search_by_key(&a.mac, |r| r.mac)
            .is_ok_and(|i| t.cluster[i] == *a)
    };
    for o in old.cluster.iter().filter(|r| !next.operator_has(&r.mac)) {
        if !same(o, next) {
            change.gone.push(o.clone());
        }
    }
    for n in next.cluster.iter().filter(|r| !next.operator_has(&r.mac)) {
        if !same(n, old) {
            change.came.push(n.clone());
        }
    }
    change
}

impl Drop for Vxlan {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Mover {
    vni: u32,
    strict: bool,
    rx: UdpSocket,
    senders: Vec<UdpSocket>,
    peer: Peer,
    table: Arc<RwLock<Arc<Remotes>>>,
    counters: Arc<VxlanCounters>,
    /// One datagram, received or being sent.
    buf: Vec<u8>,
}

impl Mover {
    fn run(&mut self, stop: &AtomicBool) {
        let mut idle = 0u32;
        while !stop.load(Ordering::Relaxed) {
            let table = match self.table.read() {
                Ok(t) => t.clone(),
                Err(p) => p.into_inner().clone(),
            };
            let moved = self.vteps_to_switch(&table) + self.switch_to_vteps(&table);
            if moved > 0 {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle >= SPIN {
                self.sleep();
                idle = 0;
            }
        }
        self.peer.flush();
    }

    /// Socket → switch: up to a burst of datagrams, checked and their
    /// inner frames queued into the port.
    fn vteps_to_switch(&mut self, table: &Remotes) -> usize {
        let c = &self.counters;
        let mut n = 0;
        let (mut crossed, mut full) = (0u64, 0u64);
        while n < BURST {
            let (len, from) = match self.rx.recv_from(&mut self.buf) {
                Ok(r) => r,
                Err(_) => break,
            };
            n += 1;
            if self.strict && !table.known.contains(&from.ip()) {
                c.count_drop(Reason::UnknownVtep, 1);
                continue;
            }
            match decap(self.vni, &self.buf[..len]) {
                Ok(inner) => {
                    if self.peer.queue(inner) {
                        crossed += 1;
                    } else {
                        full += 1;
                    }
                }
                Err(r) => c.count_drop(r, 1),
            }
        }
        let before = self.peer.counters().no_room;
        self.peer.flush();
        // Frames the ring had no room for at the flush were queued, not
        // sent.
        let no_room = self.peer.counters().no_room - before;
        let crossed = crossed.saturating_sub(no_room);
        c.to_switch.fetch_add(crossed, Ordering::Relaxed);
        c.count_drop(Reason::SwitchPortFull, full + no_room);
        n
    }

    /// Switch → VTEPs: a burst of frames from the port, each sent to its
    /// MAC's VTEP or replicated to the flood list.
    fn switch_to_vteps(&mut self, table: &Remotes) -> usize {
        let (vni, c, buf, senders) = (self.vni, &self.counters, &mut self.buf, &self.senders);
        self.peer.recv_max(BURST, |f| {
            if f.len() < MIN_INNER || f.len() > MAX_INNER {
                c.count_drop(Reason::BadLength, 1);
                return;
            }
            let dst: [u8; 6] = [f[0], f[1], f[2], f[3], f[4], f[5]];
            let unicast = dst[0] & 1 == 0;
            let one = if unicast {
                table.by_mac.get(&dst)
            } else {
                None
            };
            let len = encap(vni, f, buf);
            let s = &senders[flow_hash(f) as usize % senders.len()];
            let send = |to: &SocketAddr| {
                if s.send_to(&buf[..len], to).is_ok() {
                    c.to_vteps.fetch_add(1, Ordering::Relaxed);
                    true
                } else {
                    c.count_drop(Reason::SocketRefused, 1);
                    false
                }
            };
            match one {
                Some(to) => {
                    send(to);
                }
                None if table.flood.is_empty() => c.count_drop(Reason::NoRemote, 1),
                None => {
                    for to in &table.flood {
                        if send(to) {
                            c.flooded.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
        })
    }

    /// Sleeps until the socket or the switch has frames, or `SLEEP`.
    fn sleep(&mut self) {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        if !self.peer.prepare_sleep() {
            return;
        }
        let ts = Timespec {
            tv_sec: 0,
            tv_nsec: SLEEP.as_nanos() as i64,
        };
        {
            let b = self.peer.doorbell();
            let mut fds = [
                PollFd::new(&self.rx, PollFlags::IN),
                PollFd::new(&b, PollFlags::IN),
            ];
            let _ = poll(&mut fds, Some(&ts));
        }
        self.peer.woke();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An ARP request from 02:00:00:00:00:01, 14 + 28 bytes.
    const ARP: [u8; 42] = [
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // destination: broadcast
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // source
        0x08, 0x06, // ARP
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // Ethernet/IPv4, request
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 10, 0, 0, 1, // sender
        0, 0, 0, 0, 0, 0, 10, 0, 0, 2, // target
    ];

    #[test]
    fn encap_writes_the_header_then_the_frame() {
        let mut out = [0u8; 64];
        let n = encap(0x00ab_cdef, &ARP, &mut out);
        assert_eq!(n, 50);
        assert_eq!(
            out[..8],
            [
                0x08, 0, 0, 0, // flags: I; reserved
                0xab, 0xcd, 0xef, // VNI
                0,    // reserved
            ]
        );
        assert_eq!(out[8..50], ARP);
    }

    #[test]
    fn decap_checks_flags_vni_and_length() {
        let mut d = [0u8; 50];
        encap(42, &ARP, &mut d);
        assert_eq!(decap(42, &d), Ok(&ARP[..]));
        assert_eq!(decap(43, &d), Err(Reason::WrongVni));
        // Reserved bits are ignored on receipt (RFC 7348 section 5).
        let mut r = d;
        r[1] = 0xff;
        r[7] = 0xff;
        r[0] |= 0x80;
        assert_eq!(decap(42, &r), Ok(&ARP[..]));
        let mut noi = d;
        noi[0] = 0;
        assert_eq!(decap(42, &noi), Err(Reason::BadHeader));
        assert_eq!(decap(42, &d[..7]), Err(Reason::BadHeader));
        assert_eq!(decap(42, &d[..8 + 13]), Err(Reason::BadLength));
        assert_eq!(decap(42, &d[..8 + 14]), Ok(&ARP[..14]));
        let big = vec![0x08, 0, 0, 0, 0, 0, 42, 0]
            .into_iter()
            .chain(std::iter::repeat_n(0u8, MAX_INNER + 1))
            .collect::<Vec<_>>();
        assert_eq!(decap(42, &big), Err(Reason::BadLength));
        assert_eq!(
            decap(42, &big[..8 + MAX_INNER]).map(|f| f.len()),
            Ok(MAX_INNER)
        );
    }

    #[test]
    fn flows_hash_by_addresses_only() {
        let a = ARP;
        let mut b = ARP;
        b[41] = 9; // the ARP target: not a flow field
        assert_eq!(flow_hash(&a), flow_hash(&b));
        b[11] = 9; // the source MAC
        assert_ne!(flow_hash(&a), flow_hash(&b));
    }

    fn remote(last: u8, vtep: &str, ip: &str) -> Remote {
        Remote {
            mac: [2, 0, 0, 0, 0, last],
            vtep: vtep.parse().expect("vtep"),
            ips: vec![ip.parse().expect("ip")],
        }
    }

    #[test]
    fn the_cluster_part_changes_only_what_moved_and_never_the_operators() {
        let op = remote(1, "10.0.0.9:4789", "192.168.0.1");
        let t0 = Remotes::new(std::slice::from_ref(&op), &[]);
        let (a, b) = (
            remote(2, "10.0.0.2:4789", "192.168.0.2"),
            remote(3, "10.0.0.3:4789", "192.168.0.3"),
        );
        // The operator's MAC given by the cluster too: the operator's wins.
        let shadow = remote(1, "10.0.0.3:4789", "192.168.0.1");
        let t1 = Remotes::with_cluster(
            std::slice::from_ref(&op),
            vec![b.clone(), a.clone(), shadow],
            &[],
        );
        assert_eq!(t1.by_mac[&op.mac], op.vtep);
        assert_eq!(t1.cluster.len(), 3, "sorted by MAC");
        assert_eq!(t1.cluster[1], a);
        assert!(t1.known.contains(&b.vtep.ip()));
        assert_eq!(
            cluster_change(&t0, &t1),
            ClusterChange {
                gone: vec![],
                came: vec![a.clone(), b.clone()]
            }
        );
        // `a` moves to another VTEP, `b` goes.
        let moved = remote(2, "10.0.0.4:4789", "192.168.0.2");
        let t2 = Remotes::with_cluster(std::slice::from_ref(&op), vec![moved.clone()], &[]);
        assert_eq!(t2.by_mac[&moved.mac], moved.vtep);
        assert!(!t2.by_mac.contains_key(&b.mac));
        assert_eq!(
            cluster_change(&t1, &t2),
            ClusterChange {
                gone: vec![a, b],
                came: vec![moved]
            }
        );
        assert_eq!(cluster_change(&t2, &t2), ClusterChange::default());
    }

    #[test]
    fn options_parse_and_name_what_is_wrong() {
        let s = VxlanSpec::parse("10.0.0.1,vni=42").expect("spec");
        assert_eq!(s.local, "10.0.0.1:4789".parse().expect("addr"));
        assert_eq!(s.vni, 42);
        let s6 = VxlanSpec::parse("[fd00::1]:8472,VNI=16777215").expect("spec");
        assert_eq!(s6.local, "[fd00::1]:8472".parse().expect("addr"));
        assert_eq!(
            VxlanSpec::parse("10.0.0.1"),
            Err("expected LOCAL_IP[:PORT],vni=N (10.0.0.1,vni=42), found `10.0.0.1`".to_string())
        );
        assert_eq!(
            VxlanSpec::parse("10.0.0.1,vni=16777216"),
            Err("vni: expected a number from 0 to 16777215, found `16777216`".to_string())
        );
        assert_eq!(
            VxlanSpec::parse("host,vni=1"),
            Err(
                "the local address: expected IP or IP:PORT ([IPV6]:PORT), found `host`".to_string()
            )
        );
        let r = s
            .parse_remote("02:00:00:00:00:09,10.0.0.2,192.168.1.9")
            .expect("remote");
        assert_eq!(r.mac, [2, 0, 0, 0, 0, 9]);
        assert_eq!(r.vtep, "10.0.0.2:4789".parse().expect("addr"));
        assert_eq!(r.ips, vec!["192.168.1.9".parse::<IpAddr>().expect("ip")]);
        assert_eq!(
            s.parse_remote("02:00:00:00:00:09,10.0.0.2,x"),
            Err("`x` is not an IP address".to_string())
        );
        assert_eq!(
            s.parse_remote("nomac,10.0.0.2"),
            Err("expected MAC,VTEP[,IP...]: `nomac` is not a MAC address".to_string())
        );
        assert_eq!(
            s.parse_flood("10.0.0.3:9").expect("flood"),
            "10.0.0.3:9".parse().expect("addr")
        );
    }
}
