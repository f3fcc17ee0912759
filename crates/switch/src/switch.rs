//! The switching engine.
//!
//! A switch runs one or more switching threads ([`Config::threads`]);
//! each port's *receive side* (its rx and done rings, its doorbell) belongs
//! to one thread, ports spread over the threads as they attach (the least
//! loaded thread takes the next one). Each port's *transmit side* (its
//! fill and tx rings) may be written by any thread and is guarded by a
//! lock taken once per batch and destination, the way VALE locks a
//! destination ring; the MAC table and the port table are shared behind a
//! read-write lock, read once per batch, written only to learn a new or
//! moved address (or refresh an old one, at most every second; before the
//! batch is delivered, so that an immediate reply finds the sender known),
//! to attach or detach a port, and to age entries.
//!
//! Ports with traffic are *hot*: each round a thread takes up to [`BATCH`]
//! frames from each of its hot ports' rx rings, checks each descriptor,
//! looks the destination up, then visits each destination once: it copies
//! that destination's frames, in order, into slots the destination lent
//! on its fill ring and publishes them on its tx ring with one store.
//! The sender's slots then go back on its done ring with one more.
//!
//! A hot port that stays empty for [`PARK_AFTER`] polls is *parked*: its
//! rx ring's "consumer sleeping" flag is set, so its peer rings the
//! switch's doorbell on its next send, and the thread stops polling it.
//! When a thread has come up empty for [`IDLE_ROUNDS`] rounds
//! (spinning for the first [`SPIN_ROUNDS`], then yielding), all its ports
//! are parked at once; a thread that has moved fewer than [`BUSY_FRAMES`]
//! frames since it last slept (single packets, far apart) waits only
//! [`SHORT_IDLE_ROUNDS`], so that its spinning does not hold a CPU the
//! processes it just woke need. Doorbells are watched with one epoll set per
//! thread, checked without blocking every [`EPOLL_EVERY`] rounds while
//! some port is hot, and blocked on when none is. A round's cost is thus
//! proportional to the busy ports, not to the attached ones, and an idle
//! switch sleeps in `epoll_wait`.
//!
//! Nothing here allocates per packet: descriptor batches, fill caches and
//! per-port output queues are fixed arrays, the hot lists and the MAC
//! table reserve their capacity up front.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use pronto_ring::{Consumer, Desc, Doorbell, Producer, SharedRegion};
use rustix::event::epoll;

use crate::layout::{
    Geometry, PortShm, RingId, MAX_FRAME, MIN_FRAME, RX_OFFSET, SLOT_RESERVED, SLOT_STRIDE,
};
use crate::police::Policer;
use crate::table::{is_group, mac, Mac, MacTable};

/// Frames taken from one port per round.
pub const BATCH: usize = 32;
/// Empty polls after which a port is parked.
pub const PARK_AFTER: u32 = 2048;
/// Empty rounds of the whole switch spent spinning before yielding.
pub const SPIN_ROUNDS: u32 = 64;
/// Empty rounds of the whole switch after which every port is parked and
/// the switch sleeps.
pub const IDLE_ROUNDS: u32 = 512;
/// Frames moved since the thread last slept from which it counts as busy
/// (waits [`IDLE_ROUNDS`] before sleeping, not [`SHORT_IDLE_ROUNDS`]).
pub const BUSY_FRAMES: u32 = 64;
/// Empty rounds after which a thread that is not busy sleeps (spinning
/// for the first half).
pub const SHORT_IDLE_ROUNDS: u32 = 16;
/// Rounds between non-blocking doorbell checks while ports are hot.
pub const EPOLL_EVERY: u64 = 32;
/// A port's share of a switching thread, when none is set: ports are
/// served by deficit round robin in bytes, each round adding
/// `QUANTUM * weight / DEFAULT_WEIGHT` bytes of credit to a port.
pub const DEFAULT_WEIGHT: u32 = 100;
/// The largest weight a port may have.
pub const MAX_WEIGHT: u32 = 10_000;
/// Bytes of credit a port of the default weight gets per round: one full
/// batch of minimum-size frames, so that with 64-byte frames every port
/// sends one batch a round (as plain round robin would), and a port of
/// 1,500-byte frames one batch every 23 rounds.
pub const QUANTUM: i64 = (BATCH * 64) as i64;
/// Most batches one port sends in a round (a port of a large weight).
const MAX_BATCHES: usize = 16;
/// The most ports a switch holds (port numbers are `u16`).
pub const MAX_PORTS: usize = 1 << 16;
/// The most switching threads.
pub const MAX_THREADS: usize = 64;

const FILL_CACHE: usize = 64;
const CONTROL_KEY: u64 = u64::MAX;
/// ff:ff:ff:ff:ff:ff as the MAC table keys it.
const BROADCAST: Mac = 0xffff_ffff_ffff;
const EVENTS: usize = 256;

/// Switch settings.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    /// Learn source MACs (else only static entries route; the rest floods).
    pub learning: bool,
    /// How long a learned entry lives without traffic.
    pub aging: Duration,
    /// Most MAC table entries.
    pub table_size: usize,
    /// Switching threads (at least 1, at most [`MAX_THREADS`]).
    pub threads: usize,
    /// Pin switching thread `i` to CPU `cpu + i`, if set.
    pub cpu: Option<usize>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            learning: true,
            aging: Duration::from_secs(300),
            table_size: 1 << 16,
            threads: 1,
            cpu: None,
        }
    }
}

/// Errors of the control interface.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    /// The port number is taken.
    #[error("port {0} is already attached")]
    PortTaken(u16),
    /// No such port.
    #[error("port {0} is not attached")]
    NoPort(u16),
    /// The port's rings could not be attached.
    #[error(transparent)]
    Port(#[from] crate::layout::PortError),
    /// The switch thread is gone.
    #[error("the switch has stopped")]
    Stopped,
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// A system call failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A system call failed.
    #[error(transparent)]
    Sys(#[from] rustix::io::Errno),
}

/// A port's counters, as a snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Frames taken from the port (valid descriptors).
    pub rx_packets: u64,
    /// Their bytes.
    pub rx_bytes: u64,
    /// Frames delivered to the port.
    pub tx_packets: u64,
    /// Their bytes.
    pub tx_bytes: u64,
    /// Descriptors from the port that failed the bounds check (slot,
    /// offset, length).
    pub drop_bad_desc: u64,
    /// Ring positions from the port that were implausible (reads ignored).
    pub drop_bad_ring: u64,
    /// Slots the port lent that do not exist (ignored).
    pub drop_bad_fill: u64,
    /// Frames from the port to a destination that is not attached (a
    /// static entry naming a missing port) or is the port itself.
    pub drop_no_route: u64,
    /// Frames for the port dropped because it lent no free slot.
    pub drop_no_buffer: u64,
    /// Frames for the port dropped because its tx ring was full.
    pub drop_ring_full: u64,
    /// ARP requests from the port the switch answered itself (for an
    /// address registered with [`SwitchHandle::add_arp`]) instead of
    /// flooding them.
    pub arp_answered: u64,
    /// Frames from the port over its rate limit (see
    /// [`PortStats::set_rate_limit`]), dropped before they were switched.
    pub drop_rate_limit_rx: u64,
    /// Frames for the port over its rate limit, dropped before the copy.
    pub drop_rate_limit_tx: u64,
    /// IPv6 Neighbor Solicitations from the port the switch answered
    /// itself (for an address registered with [`SwitchHandle::add_nd`]).
    pub nd_answered: u64,
    /// Copies of the port's broadcast and multicast frames not made:
    /// one per frame and port that does not take broadcasts
    /// ([`SwitchHandle::set_broadcast`]).
    pub flood_skipped: u64,
}

impl PortCounters {
    /// Every drop, whatever the reason.
    pub fn drops(&self) -> u64 {
        self.drop_bad_desc
            + self.drop_bad_ring
            + self.drop_bad_fill
            + self.drop_no_route
            + self.drop_no_buffer
            + self.drop_ring_full
            + self.drop_rate_limit_rx
            + self.drop_rate_limit_tx
    }
}

/// A port's counters, published by the switching threads after each
/// batch that touches the port: the receive side's by the thread that
/// owns it, the transmit side's by whichever thread delivered.
#[derive(Default, Debug)]
pub struct PortStats {
    v: [AtomicU64; 16],
    /// The port's weight (0: [`DEFAULT_WEIGHT`]), read by the thread that
    /// serves its receive side once a round.
    weight: AtomicU32,
    /// The port's rate limit (0: none of that kind), and a generation
    /// number that the switching threads compare with the one they last
    /// built their policers from.
    limit_pps: AtomicU64,
    limit_bps: AtomicU64,
    limit_gen: AtomicU32,
    /// A capture's tap (`pronto capture`), looked at once a batch.
    tap: Arc<crate::capture::TapSlot>,
}

impl PortStats {
    /// Sets the port's weight, 1 to [`MAX_WEIGHT`] (clamped): its share,
    /// in bytes, of the switching thread that serves it, against the
    /// other busy ports of that thread ([`DEFAULT_WEIGHT`] each unless
    /// set). The thread takes it up within 64 rounds.
    pub fn set_weight(&self, weight: u32) {
        self.weight
            .store(weight.clamp(1, MAX_WEIGHT), Ordering::Relaxed);
    }

    /// Sets the port's rate limit (each direction on its own; see
    /// [`crate::police`]); [`RateLimit::NONE`](crate::police::RateLimit::NONE) lifts it. The receive side
    /// takes it up within 64 rounds of its thread, the transmit side at
    /// its next delivery. Limits out of bounds are clamped (check them
    /// with [`RateLimit::check`](crate::police::RateLimit::check) first).
    pub fn set_rate_limit(&self, limit: crate::RateLimit) {
        self.limit_pps
            .store(limit.pps.unwrap_or(0), Ordering::Relaxed);
        self.limit_bps
            .store(limit.bps.unwrap_or(0), Ordering::Relaxed);
        self.limit_gen.fetch_add(1, Ordering::Release);
    }

    /// The port's rate limit.
    pub fn rate_limit(&self) -> crate::RateLimit {
        let opt = |v: u64| (v != 0).then_some(v);
        crate::RateLimit {
            pps: opt(self.limit_pps.load(Ordering::Relaxed)),
            bps: opt(self.limit_bps.load(Ordering::Relaxed)),
        }
    }

    /// The policer for the current limit if it changed since generation
    /// `seen` (which is updated).
    #[inline]
    fn policer_if_changed(&self, seen: &mut u32) -> Option<Option<Policer>> {
        let g = self.limit_gen.load(Ordering::Acquire);
        if g == *seen {
            return None;
        }
        *seen = g;
        Some(Policer::new(self.rate_limit()))
    }

    /// Starts copying the port's frames for a capture (see
    /// [`crate::capture`]); an error when a capture is on already.
    pub fn capture(&self, spec: crate::CaptureSpec) -> Result<crate::Capture, String> {
        self.tap.start(spec)
    }

    /// The port's weight.
    pub fn weight(&self) -> u32 {
        match self.weight.load(Ordering::Relaxed) {
            0 => DEFAULT_WEIGHT,
            w => w,
        }
    }

    /// Bytes of credit the port gets per round.
    #[inline]
    fn quantum(&self) -> i64 {
        QUANTUM * i64::from(self.weight()) / i64::from(DEFAULT_WEIGHT)
    }

    fn store(&self, pairs: &[(usize, u64)]) {
        for &(i, x) in pairs {
            self.v[i].store(x, Ordering::Relaxed);
        }
    }

    /// The receive side's counters (rx and done rings).
    fn publish_rx(&self, c: &PortCounters) {
        self.store(&[
            (0, c.rx_packets),
            (1, c.rx_bytes),
            (4, c.drop_bad_desc),
            (5, c.drop_bad_ring),
            (7, c.drop_no_route),
            (11, c.arp_answered),
            (12, c.drop_rate_limit_rx),
            (14, c.nd_answered),
            (15, c.flood_skipped),
        ]);
    }

    /// The transmit side's counters (fill and tx rings).
    fn publish_tx(&self, c: &PortCounters) {
        self.store(&[
            (2, c.tx_packets),
            (3, c.tx_bytes),
            (6, c.drop_bad_fill),
            (8, c.drop_no_buffer),
            (9, c.drop_ring_full),
            (10, c.drop_bad_ring),
            (13, c.drop_rate_limit_tx),
        ]);
    }

    /// The receive side's counters as last published: where a new
    /// switching thread that adopts the port goes on counting from.
    fn rx_counters(&self) -> PortCounters {
        let l = |i: usize| self.v[i].load(Ordering::Relaxed);
        PortCounters {
            rx_packets: l(0),
            rx_bytes: l(1),
            drop_bad_desc: l(4),
            drop_bad_ring: l(5),
            drop_no_route: l(7),
            arp_answered: l(11),
            drop_rate_limit_rx: l(12),
            nd_answered: l(14),
            flood_skipped: l(15),
            ..PortCounters::default()
        }
    }

    /// A snapshot.
    pub fn get(&self) -> PortCounters {
        let l = |i: usize| self.v[i].load(Ordering::Relaxed);
        PortCounters {
            rx_packets: l(0),
            rx_bytes: l(1),
            tx_packets: l(2),
            tx_bytes: l(3),
            drop_bad_desc: l(4),
            drop_bad_ring: l(5) + l(10),
            drop_bad_fill: l(6),
            drop_no_route: l(7),
            drop_no_buffer: l(8),
            drop_ring_full: l(9),
            arp_answered: l(11),
            drop_rate_limit_rx: l(12),
            drop_rate_limit_tx: l(13),
            nd_answered: l(14),
            flood_skipped: l(15),
        }
    }
}

/// A port's receive side (rx and done rings): owned by one switching
/// thread.
struct RxSide {
    id: u16,
    geometry: Geometry,
    shm: PortShm,
    rx: Consumer,
    done: Producer,
    idle: u32,
    parked: bool,
    /// Deficit round robin: bytes the port may still send (negative: it
    /// sent a batch larger than its credit and sits out rounds until its
    /// quanta pay that back).
    credit: i64,
    /// Bytes of credit a round: the port's weight as last read (the
    /// weight is read again every 64 rounds).
    quantum: i64,
    /// The rate limit on frames from the port, if any, and the limit's
    /// generation it was built from.
    police: Option<Policer>,
    limit_gen: u32,
    c: PortCounters,
    stats: Arc<PortStats>,
}

impl RxSide {
    fn publish(&mut self) {
        self.c.drop_bad_ring = self.rx.faults().bad_position + self.done.faults().bad_position;
        self.stats.publish_rx(&self.c);
    }
}

/// A port's transmit side (fill and tx rings): written by whichever
/// switching thread has frames for the port, under the port's lock.
struct TxSide {
    geometry: Geometry,
    shm: PortShm,
    fill: Consumer,
    tx: Producer,
    fill_cache: [Desc; FILL_CACHE],
    fill_n: usize,
    pending: [Desc; BATCH],
    pending_n: usize,
    tx_room: u32,
    /// The port's tap during a visit, when a capture is on.
    tap: Option<Arc<crate::capture::Tap>>,
    /// The rate limit on frames for the port, if any; the limit's
    /// generation it was built from; the time of the visit (read once a
    /// visit, only while a limit is set) and what it counts from.
    police: Option<Policer>,
    limit_gen: u32,
    now: u64,
    epoch: Instant,
    c: PortCounters,
    stats: Arc<PortStats>,
}

impl TxSide {
    /// Refills the slot cache from the fill ring; false if still empty.
    #[inline]
    fn refill(&mut self) -> bool {
        let k = self.fill.pop(&mut self.fill_cache);
        let slots = self.geometry.slots;
        let mut n = 0;
        for i in 0..k {
            let d = self.fill_cache[i];
            if d.slot < slots {
                // The peer read this slot last, on its CPU: the copy into
                // it will find its first line sooner.
                let at = self.geometry.slot_offset(d.slot) + RX_OFFSET as usize;
                self.shm.region.prefetch(at);
                self.fill_cache[n] = d;
                n += 1;
            } else {
                self.c.drop_bad_fill += 1;
            }
        }
        self.fill_n = n;
        n > 0
    }

    /// Starts a visit: at most one batch of frames follows.
    #[inline]
    fn begin(&mut self) {
        self.tx_room = self.tx.room(BATCH as u32);
        self.tap = self.stats.tap.get();
        if let Some(p) = self.stats.policer_if_changed(&mut self.limit_gen) {
            self.police = p;
        }
        if self.police.is_some() {
            self.now = crate::police::units_since(self.epoch);
        }
    }

    /// Copies one frame from `src` at `at` into the next lent slot and
    /// queues it.
    #[inline]
    fn deliver(&mut self, src: &SharedRegion, at: usize, len: u16) {
        if self.fill_n == 0 && !self.refill() {
            self.c.drop_no_buffer += 1;
            return;
        }
        if self.pending_n as u32 >= self.tx_room {
            self.c.drop_ring_full += 1;
            return;
        }
        if let Some(p) = &mut self.police {
            if !p.admit(self.now, len) {
                self.c.drop_rate_limit_tx += 1;
                return;
            }
        }
        self.fill_n -= 1;
        let slot = self.fill_cache[self.fill_n].slot;
        let to = self.geometry.slot_offset(slot) + RX_OFFSET as usize;
        if !src.copy_to(at, &self.shm.region, to, len as usize) {
            // Unreachable with checked descriptors and slots; counted anyway.
            self.c.drop_no_buffer += 1;
            self.fill_n += 1;
            return;
        }
        self.pending[self.pending_n] = Desc::new(slot, RX_OFFSET, len);
        self.pending_n += 1;
        self.c.tx_packets += 1;
        self.c.tx_bytes += len as u64;
        if let Some(t) = &self.tap {
            t.offer(src, at, len, crate::Direction::ToPort);
        }
    }

    /// Writes `frame` (made by the switch: an ARP or ND answer) into the next
    /// lent slot and queues it.
    fn deliver_bytes(&mut self, frame: &[u8]) {
        if self.fill_n == 0 && !self.refill() {
            self.c.drop_no_buffer += 1;
            return;
        }
        if self.pending_n as u32 >= self.tx_room {
            self.c.drop_ring_full += 1;
            return;
        }
        self.fill_n -= 1;
        let slot = self.fill_cache[self.fill_n].slot;
        let to = self.geometry.slot_offset(slot) + RX_OFFSET as usize;
        if !self.shm.region.write_bytes(to, frame) {
            self.c.drop_no_buffer += 1;
            self.fill_n += 1;
            return;
        }
        self.pending[self.pending_n] = Desc::new(slot, RX_OFFSET, frame.len() as u16);
        self.pending_n += 1;
        self.c.tx_packets += 1;
        self.c.tx_bytes += frame.len() as u64;
        if let Some(t) = &self.tap {
            t.offer_frame(frame, crate::Direction::ToPort);
        }
    }

    /// Ends a visit: publishes the queued frames with one store, wakes
    /// the peer if it sleeps, publishes the counters.
    #[inline]
    fn finish(&mut self) {
        if self.pending_n > 0 {
            self.tx.push(&self.pending[..self.pending_n]);
            self.pending_n = 0;
            if self.tx.consumer_wants_wakeup() {
                let _ = self.shm.to_peer.ring();
            }
        }
        self.c.drop_bad_ring = self.fill.faults().bad_position + self.tx.faults().bad_position;
        self.stats.publish_tx(&self.c);
        self.tap = None;
    }
}

/// What the switching threads share: the MAC table and every port's
/// transmit side, by port number.
struct Fabric {
    table: MacTable,
    /// IPv4 addresses the switch answers ARP requests for itself: the
    /// address's MAC and the port it is behind (static entries the daemon
    /// registers with an instance interface's address), so that an ARP
    /// broadcast for them does not wake every port. At most as many as the
    /// MAC table holds.
    arp: pronto_hash::KeyedMap<[u8; 4], ([u8; 6], u16)>,
    /// IPv6 addresses it answers Neighbor Solicitations for, likewise.
    nd: pronto_hash::KeyedMap<[u8; 16], ([u8; 6], u16)>,
    arp_limit: usize,
    /// Ports that do not take broadcast and multicast frames (those the
    /// switch does not answer itself), by port number.
    quiet: Vec<bool>,
    tx: Vec<Option<Arc<Mutex<TxSide>>>>,
    /// Attached port numbers (flooding visits them in this order).
    attached: Vec<u16>,
}

type SharedFabric = Arc<RwLock<Fabric>>;

impl Fabric {
    fn new(cfg: &Config) -> Fabric {
        let aging = cfg.aging.as_millis().min(u32::MAX as u128 / 2) as u32;
        Fabric {
            table: MacTable::new(cfg.table_size, aging.max(1)),
            arp: pronto_hash::map(),
            nd: pronto_hash::map(),
            arp_limit: cfg.table_size,
            quiet: vec![false; MAX_PORTS],
            tx: (0..MAX_PORTS).map(|_| None).collect(),
            attached: Vec::with_capacity(64),
        }
    }
}

/// The first port to register an address keeps it (another port's claim
/// is refused, so that no one takes over an address by registering it
/// again) until it is forgotten.
fn add_arp(f: &mut Fabric, ip: [u8; 4], m: [u8; 6], port: u16) -> bool {
    match f.arp.get(&ip) {
        Some(&(_, p)) if p != port => return false,
        None if f.arp.len() >= f.arp_limit => return false,
        _ => {}
    }
    f.arp.insert(ip, (m, port));
    true
}

/// As [`add_arp`], for an IPv6 address (Neighbor Discovery).
fn add_nd(f: &mut Fabric, ip: [u8; 16], m: [u8; 6], port: u16) -> bool {
    match f.nd.get(&ip) {
        Some(&(_, p)) if p != port => return false,
        None if f.nd.len() >= f.arp_limit => return false,
        _ => {}
    }
    f.nd.insert(ip, (m, port));
    true
}

/// Forgets what port `id` registered: its ARP and ND answers, and its
/// choice about broadcasts.
fn forget_port(f: &mut Fabric, id: u16) {
    f.arp.retain(|_, v| v.1 != id);
    f.nd.retain(|_, v| v.1 != id);
    f.quiet[id as usize] = false;
}

/// Longest frame the switch makes (a Neighbor Advertisement).
const ANSWER_MAX: usize = 86;

/// Sums 16-bit big-endian words (one's complement, not yet folded).
fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut it = data.chunks_exact(2);
    for w in &mut it {
        acc += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [b] = it.remainder() {
        acc += u32::from(*b) << 8;
    }
    acc
}

/// The switch's answer to an IPv6 Neighbor Solicitation (`req`: a
/// frame's first 86 bytes, `len` of them valid) for an address it answers
/// for: an 86-byte Neighbor Advertisement (solicited, override, with the
/// target's link-layer address) to the asker. None for anything else: not
/// a solicitation (Ethernet, IPv6 without extension headers, hop limit
/// 255, ICMPv6 135/0), an unknown target, the address's owner asking, or
/// duplicate address detection (an unspecified source), which goes on as
/// a multicast.
fn nd_answer(
    nd: &pronto_hash::KeyedMap<[u8; 16], ([u8; 6], u16)>,
    req: &[u8; ANSWER_MAX],
    len: usize,
) -> Option<[u8; ANSWER_MAX]> {
    if len < 78
        || req[12..14] != [0x86, 0xdd]
        || req[14] >> 4 != 6
        || req[20] != 58
        || req[21] != 255
        || req[54] != 135
        || req[55] != 0
        || u16::from_be_bytes([req[18], req[19]]) < 24
    {
        return None;
    }
    let mut target = [0u8; 16];
    target.copy_from_slice(&req[62..78]);
    let &(m, _) = nd.get(&target)?;
    let asker = &req[6..12];
    if asker == m || req[22..38] == [0u8; 16] {
        return None;
    }
    let mut r = [0u8; ANSWER_MAX];
    r[..6].copy_from_slice(asker);
    r[6..12].copy_from_slice(&m);
    r[12..14].copy_from_slice(&[0x86, 0xdd]);
    r[14] = 0x60;
    r[18..20].copy_from_slice(&32u16.to_be_bytes());
    r[20] = 58;
    r[21] = 255;
    r[22..38].copy_from_slice(&target);
    r[38..54].copy_from_slice(&req[22..38]);
    r[54] = 136;
    r[58] = 0x60; // solicited, override
    r[62..78].copy_from_slice(&target);
    r[78] = 2; // target link-layer address, 8 bytes
    r[79] = 1;
    r[80..86].copy_from_slice(&m);
    // Pseudo-header (addresses, length 32, next header 58), then the
    // message.
    let acc = sum16(&r[22..54], 32 + 58);
    let mut acc = sum16(&r[54..86], acc);
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    r[56..58].copy_from_slice(&(!(acc as u16)).to_be_bytes());
    Some(r)
}

/// The switch's answer to an ARP request (`req`: a frame's first 42
/// bytes) for an address it answers for: a 60-byte reply to the asker.
/// None for anything else, and for the address's owner asking about
/// itself (a probe or a gratuitous ARP goes on as a broadcast).
fn arp_reply(
    arp: &pronto_hash::KeyedMap<[u8; 4], ([u8; 6], u16)>,
    req: &[u8; 42],
) -> Option<[u8; 60]> {
    // Ethernet/IPv4, 6- and 4-byte addresses, a request.
    if req[12..14] != [0x08, 0x06] || req[14..22] != [0, 1, 0x08, 0, 6, 4, 0, 1] {
        return None;
    }
    let tpa = [req[38], req[39], req[40], req[41]];
    let &(m, _) = arp.get(&tpa)?;
    let sha = &req[22..28];
    if sha == m {
        return None;
    }
    let mut r = [0u8; 60];
    r[..6].copy_from_slice(sha);
    r[6..12].copy_from_slice(&m);
    r[12..14].copy_from_slice(&[0x08, 0x06]);
    r[14..22].copy_from_slice(&[0, 1, 0x08, 0, 6, 4, 0, 2]);
    r[22..28].copy_from_slice(&m);
    r[28..32].copy_from_slice(&tpa);
    r[32..38].copy_from_slice(sha);
    r[38..42].copy_from_slice(&req[28..32]);
    Some(r)
}

// A thread that panicked while holding a lock leaves counters and rings in
// a consistent state (every update is a single store), so a poisoned lock
// is taken as it is.
fn read(f: &RwLock<Fabric>) -> RwLockReadGuard<'_, Fabric> {
    f.read().unwrap_or_else(|e| e.into_inner())
}

fn write(f: &RwLock<Fabric>) -> RwLockWriteGuard<'_, Fabric> {
    f.write().unwrap_or_else(|e| e.into_inner())
}

fn lock(t: &Mutex<TxSide>) -> MutexGuard<'_, TxSide> {
    t.lock().unwrap_or_else(|e| e.into_inner())
}

/// Target of a frame in a batch: a port number, or one of these.
const TO_NOBODY: u32 = u32::MAX;
/// Every other port (a unicast frame for an unknown address).
const TO_ALL: u32 = u32::MAX - 1;
/// Every other port that takes broadcasts (a broadcast or multicast).
const TO_GROUP: u32 = u32::MAX - 2;

enum Cmd {
    Attach(
        u16,
        PortShm,
        mpsc::SyncSender<Result<Arc<PortStats>, SwitchError>>,
    ),
    /// Detach a port; `true`: keep the MAC entries that point at it.
    Detach(u16, bool, mpsc::SyncSender<bool>),
    /// Serve the receive side of a port whose transmit side is already in
    /// the fabric (a restarted thread taking over its ports).
    Adopt(
        u16,
        PortShm,
        Arc<PortStats>,
        mpsc::SyncSender<Result<(), SwitchError>>,
    ),
    /// Move a device's frames in this thread's loop.
    Local(Box<dyn Local>),
    Stop,
    /// Panic the thread (the tests' stand-in for a bug).
    #[cfg(test)]
    Crash,
}

/// A device whose frames a switching thread moves itself, in its own
/// loop, once per round: the side a NIC served by the switching thread
/// would be on (`pronto bench chain`'s generator and sink), so that no
/// other thread hands the switch frames a few at a time through a ring
/// whose indices bounce between two CPUs. It reaches the switch through
/// the peer ends of ports ([`crate::Peer`]), like any other party. While
/// a thread serves one, it sleeps at most a millisecond at a time (a
/// device has no doorbell).
pub trait Local: Send {
    /// Moves what it can now: `Some(frames moved)`, or `None` once it is
    /// done (the thread drops it).
    fn poll(&mut self) -> Option<usize>;
}

/// Loop counters shared with the handle.
#[derive(Default, Debug)]
pub struct LoopStats {
    /// Rounds of the switching loop.
    pub rounds: AtomicU64,
    /// Times the loop blocked on the doorbells.
    pub sleeps: AtomicU64,
}

/// One switching thread's engine: the receive sides of its ports, its
/// hot list, its doorbells; the fabric is shared with the other threads.
/// On its own (`Switch::new`) it is a whole one-threaded switch, driven
/// by [`Switch::poll_once`].
pub struct Switch {
    fabric: SharedFabric,
    ports: Vec<RxSide>,
    index: Vec<u32>,
    hot: Vec<u32>,
    descs: [Desc; BATCH],
    target: [u32; BATCH],
    learn: [Mac; BATCH],
    cfg: Config,
    /// This thread ages the MAC table (thread 0).
    ages: bool,
    /// The doorbells' epoll set: kept by a restarted thread (the ports'
    /// doorbells are registered once, at attach, and the switch keeps no
    /// descriptor of them to register them again).
    epoll: Arc<rustix::fd::OwnedFd>,
    start: Instant,
    now_ms: u32,
    last_expire: u32,
    rounds: u64,
    empty: u32,
    /// Frames moved since the thread last slept.
    since_sleep: u32,
    control: Option<(mpsc::Receiver<Cmd>, Arc<Doorbell>)>,
    /// Devices this thread moves frames for ([`Local`]).
    locals: Vec<Box<dyn Local>>,
    loop_stats: Arc<LoopStats>,
    stop: bool,
}

impl Switch {
    /// An empty one-threaded switch.
    pub fn new(cfg: Config) -> Result<Switch, SwitchError> {
        let fabric = Arc::new(RwLock::new(Fabric::new(&cfg)));
        Switch::engine(cfg, fabric, true, Instant::now(), None)
    }

    /// Another engine over the same ports table and MAC table, to be
    /// driven by another thread: ports attached to it have their receive
    /// side served there, and frames flow between the engines' ports.
    /// (Only the first engine ages the MAC table.)
    pub fn sibling(&self) -> Result<Switch, SwitchError> {
        Switch::engine(self.cfg, self.fabric.clone(), false, self.start, None)
    }

    fn engine(
        cfg: Config,
        fabric: SharedFabric,
        ages: bool,
        start: Instant,
        epoll: Option<Arc<rustix::fd::OwnedFd>>,
    ) -> Result<Switch, SwitchError> {
        let epoll = match epoll {
            Some(e) => e,
            None => Arc::new(epoll::create(epoll::CreateFlags::CLOEXEC)?),
        };
        Ok(Switch {
            fabric,
            ports: Vec::new(),
            index: vec![0; MAX_PORTS],
            hot: Vec::new(),
            descs: [Desc::default(); BATCH],
            target: [TO_NOBODY; BATCH],
            learn: [0; BATCH],
            cfg,
            ages,
            epoll,
            start,
            now_ms: 0,
            last_expire: 0,
            rounds: 0,
            empty: 0,
            since_sleep: 0,
            control: None,
            locals: Vec::new(),
            loop_stats: Arc::new(LoopStats::default()),
            stop: false,
        })
    }

    /// Attaches `shm` as port `id` (its receive side served by this
    /// engine); returns its counters. The port's doorbell to the switch
    /// goes into this engine's epoll set, edge-triggered (it is never
    /// read: each ring is an edge), and the switch keeps no descriptor of
    /// it: the registration lasts as long as some process (the peer)
    /// holds one, and goes when the last is closed.
    pub fn attach(&mut self, id: u16, mut shm: PortShm) -> Result<Arc<PortStats>, SwitchError> {
        let bell = shm.to_switch.take();
        let g = shm.geometry;
        let r = &shm.region;
        let ring = |id: RingId| g.ring_offset(id);
        let e = crate::layout::PortError::from;
        let stats = Arc::new(PortStats::default());
        let rx = Self::rx_side(id, &shm, stats.clone())?;
        let tx = TxSide {
            geometry: g,
            fill: Consumer::attach_at(r.clone(), ring(RingId::Fill), g.ring).map_err(e)?,
            tx: Producer::attach_at(r.clone(), ring(RingId::Tx), g.ring).map_err(e)?,
            shm,
            fill_cache: [Desc::default(); FILL_CACHE],
            fill_n: 0,
            pending: [Desc::default(); BATCH],
            pending_n: 0,
            tx_room: 0,
            tap: None,
            police: None,
            limit_gen: 0,
            now: 0,
            epoch: Instant::now(),
            c: PortCounters::default(),
            stats: stats.clone(),
        };
        {
            let mut f = write(&self.fabric);
            if f.tx[id as usize].is_some() {
                return Err(SwitchError::PortTaken(id));
            }
            if let Some(bell) = &bell {
                let (key, flags) = (
                    epoll::EventData::new_u64(id as u64),
                    epoll::EventFlags::IN | epoll::EventFlags::ET,
                );
                match epoll::add(&*self.epoll, &**bell, key, flags) {
                    // Attached before, detached since: still registered.
                    Err(rustix::io::Errno::EXIST) => {
                        epoll::modify(&*self.epoll, &**bell, key, flags)?
                    }
                    r => r?,
                }
            }
            f.tx[id as usize] = Some(Arc::new(Mutex::new(tx)));
            f.attached.push(id);
        }
        self.serve(rx);
        Ok(stats)
    }

    /// A port's receive side, counting on from what `stats` holds.
    fn rx_side(id: u16, shm: &PortShm, stats: Arc<PortStats>) -> Result<RxSide, SwitchError> {
        let g = shm.geometry;
        let r = &shm.region;
        let ring = |id: RingId| g.ring_offset(id);
        let e = crate::layout::PortError::from;
        Ok(RxSide {
            id,
            geometry: g,
            rx: Consumer::attach_at(r.clone(), ring(RingId::Rx), g.ring).map_err(e)?,
            done: Producer::attach_at(r.clone(), ring(RingId::Done), g.ring).map_err(e)?,
            shm: shm.clone(),
            idle: 0,
            parked: false,
            credit: 0,
            quantum: stats.quantum(),
            police: None,
            limit_gen: 0,
            c: stats.rx_counters(),
            stats,
        })
    }

    /// Takes over the receive side of port `id`, whose transmit side is in
    /// the fabric already: what a restarted switching thread does for the
    /// ports its predecessor served. The rings' positions are in the
    /// shared region, so frames waiting in the port's rx ring are read
    /// where the old thread left them, and the counters go on from `stats`;
    /// the doorbell is still in the epoll set, which the new thread
    /// inherits.
    fn adopt(&mut self, id: u16, shm: PortShm, stats: Arc<PortStats>) -> Result<(), SwitchError> {
        if self.index[id as usize] != 0 || read(&self.fabric).tx[id as usize].is_none() {
            return Err(SwitchError::NoPort(id));
        }
        let rx = Self::rx_side(id, &shm, stats)?;
        self.serve(rx);
        Ok(())
    }

    /// Adds `rx` to the ports this engine polls (hot to begin with).
    fn serve(&mut self, rx: RxSide) {
        let id = rx.id;
        self.ports.push(rx);
        let di = self.ports.len() - 1;
        self.index[id as usize] = di as u32 + 1;
        self.hot.push(di as u32);
        // Room for every port at once, so that the hot path never grows
        // the hot list.
        self.hot
            .reserve(self.ports.len().saturating_sub(self.hot.len()));
    }

    /// Detaches port `id` (its MAC entries go too); false if this engine
    /// does not serve it.
    pub fn detach(&mut self, id: u16) -> bool {
        self.detach_keeping(id, false)
    }

    /// Detaches port `id` but keeps the MAC entries that point at it:
    /// until it is attached again (or [`Switch::forget`] removes them),
    /// frames for those addresses are dropped and counted (`no_route`, at
    /// the port they came from) instead of flooded to every other port.
    /// False if this engine does not serve it.
    pub fn suspend(&mut self, id: u16) -> bool {
        self.detach_keeping(id, true)
    }

    /// Removes every MAC entry (and ARP answer) that points at port `id`.
    pub fn forget(&mut self, id: u16) {
        let mut f = write(&self.fabric);
        f.table.remove_port(id);
        forget_port(&mut f, id);
    }

    fn detach_keeping(&mut self, id: u16, keep_entries: bool) -> bool {
        let di = match self.index[id as usize] {
            0 => return false,
            n => (n - 1) as usize,
        };
        {
            let mut f = write(&self.fabric);
            f.tx[id as usize] = None;
            f.attached.retain(|&p| p != id);
            if !keep_entries {
                f.table.remove_port(id);
                forget_port(&mut f, id);
            }
        }
        let last = self.ports.len() - 1;
        // The doorbell stays in the epoll set until its peer closes it; a
        // ring meanwhile is a spurious wake-up of whatever port has the
        // number then (it finds nothing to do).
        self.ports.swap_remove(di);
        self.index[id as usize] = 0;
        self.hot.retain(|&h| h as usize != di);
        if di != last {
            let moved = self.ports[di].id;
            self.index[moved as usize] = di as u32 + 1;
            for h in &mut self.hot {
                if *h as usize == last {
                    *h = di as u32;
                }
            }
        }
        true
    }

    /// Adds a static MAC → port entry.
    pub fn add_static(&mut self, m: [u8; 6], port: u16) -> bool {
        write(&self.fabric).table.add_static(mac(&m), port)
    }

    /// Answers ARP requests for `ip` with `m` (behind `port`) from now on
    /// (see [`SwitchHandle::add_arp`]).
    pub fn add_arp(&mut self, ip: [u8; 4], m: [u8; 6], port: u16) -> bool {
        add_arp(&mut write(&self.fabric), ip, m, port)
    }

    /// Answers Neighbor Solicitations for `ip` (see [`SwitchHandle::add_nd`]).
    pub fn add_nd(&mut self, ip: [u8; 16], m: [u8; 6], port: u16) -> bool {
        add_nd(&mut write(&self.fabric), ip, m, port)
    }

    /// Whether port `port` takes broadcasts (see
    /// [`SwitchHandle::set_broadcast`]).
    pub fn set_broadcast(&mut self, port: u16, on: bool) {
        write(&self.fabric).quiet[port as usize] = !on;
    }

    /// Ports this engine serves.
    pub fn ports(&self) -> usize {
        self.ports.len()
    }

    /// Counters of port `id`, as last published.
    pub fn counters(&self, id: u16) -> Option<PortCounters> {
        match self.index[id as usize] {
            0 => None,
            n => Some(self.ports[(n - 1) as usize].stats.get()),
        }
    }

    /// Takes one batch from dense port `s` and forwards it; returns the
    /// number of descriptors taken and the bytes charged for them (each
    /// frame's length; a malformed descriptor costs 64).
    fn service(&mut self, s: usize) -> (usize, i64) {
        let Switch {
            fabric,
            ports,
            descs,
            target,
            learn,
            cfg,
            now_ms,
            start,
            ..
        } = self;
        let now = *now_ms;
        let src = &mut ports[s];
        let want = (src.done.room(BATCH as u32) as usize).min(BATCH);
        if want == 0 {
            return (0, 0);
        }
        let n = src.rx.pop(&mut descs[..want]);
        if n == 0 {
            if src.rx.faults().bad_position > src.c.drop_bad_ring {
                src.publish();
            }
            return (0, 0);
        }
        let (bytes0, bad0) = (src.c.rx_bytes, src.c.drop_bad_desc);
        let g = src.geometry;
        let src_id = src.id;
        let region = &src.shm.region;
        // The peer wrote these frames on its CPU: ask for every header
        // before reading the first (the region ignores an offset outside
        // it; the descriptors are checked below).
        for d in &descs[..n] {
            region.prefetch(g.slot_offset(d.slot.min(g.slots)) + d.off as usize);
        }
        let tap = src.stats.tap.get();
        let police_now = match src.police {
            Some(_) => crate::police::units_since(*start),
            None => 0,
        };
        let f = read(fabric);
        let mut flood = false;
        let mut learn_n = 0;
        let answers_arp = !f.arp.is_empty();
        let answers_nd = !f.nd.is_empty();
        let mut replies = [[0u8; ANSWER_MAX]; BATCH];
        let mut reply_len = [0u8; BATCH];
        let mut replies_n = 0;
        let mut groups = 0u64;
        for (i, d) in descs[..n].iter().enumerate() {
            target[i] = TO_NOBODY;
            if d.len < MIN_FRAME
                || d.check(g.slots, SLOT_RESERVED as u32, SLOT_STRIDE, MAX_FRAME as u32)
                    .is_err()
            {
                src.c.drop_bad_desc += 1;
                continue;
            }
            let at = g.slot_offset(d.slot) + d.off as usize;
            let mut hdr = [0u8; 12];
            region.read_bytes(at, &mut hdr);
            src.c.rx_packets += 1;
            src.c.rx_bytes += d.len as u64;
            if let Some(t) = &tap {
                t.offer(region, at, d.len, crate::Direction::FromPort);
            }
            if let Some(p) = &mut src.police {
                if !p.admit(police_now, d.len) {
                    src.c.drop_rate_limit_rx += 1;
                    continue;
                }
            }
            let dst_mac = mac(&[hdr[0], hdr[1], hdr[2], hdr[3], hdr[4], hdr[5]]);
            let src_mac = mac(&[hdr[6], hdr[7], hdr[8], hdr[9], hdr[10], hdr[11]]);
            if cfg.learning
                && !is_group(src_mac)
                && (learn_n == 0 || learn[learn_n - 1] != src_mac)
                && f.table.needs_learn(src_mac, src_id, now)
            {
                learn[learn_n] = src_mac;
                learn_n += 1;
            }
            let to = if is_group(dst_mac) {
                if answers_arp && dst_mac == BROADCAST && d.len >= 42 {
                    let mut req = [0u8; 42];
                    region.read_bytes(at, &mut req);
                    if let Some(r) = arp_reply(&f.arp, &req) {
                        // Answered here; not flooded.
                        replies[replies_n][..60].copy_from_slice(&r);
                        reply_len[replies_n] = 60;
                        replies_n += 1;
                        src.c.arp_answered += 1;
                        continue;
                    }
                } else if answers_nd && dst_mac >> 32 == 0x3333 && d.len >= 78 {
                    let mut req = [0u8; ANSWER_MAX];
                    let len = (d.len as usize).min(ANSWER_MAX);
                    region.read_bytes(at, &mut req[..len]);
                    if let Some(r) = nd_answer(&f.nd, &req, len) {
                        replies[replies_n] = r;
                        reply_len[replies_n] = ANSWER_MAX as u8;
                        replies_n += 1;
                        src.c.nd_answered += 1;
                        continue;
                    }
                }
                target[i] = TO_GROUP;
                groups += 1;
                flood = true;
                continue;
            } else {
                f.table.lookup(dst_mac, now)
            };
            match to {
                Some(t) if t != src_id && f.tx[t as usize].is_some() => target[i] = t as u32,
                Some(_) => src.c.drop_no_route += 1,
                None => {
                    target[i] = TO_ALL;
                    flood = true;
                }
            }
        }
        // Learn before delivering: a reply the destination sends at once,
        // served by another switching thread, must find the sender's
        // address already known (else it would be flooded). Learning is
        // rare (a new or moved address, or a refresh at most every
        // second), so the extra lock round trip is too.
        let f = if learn_n > 0 {
            drop(f);
            let mut w = write(fabric);
            for &m in &learn[..learn_n] {
                w.table.learn(m, src_id, now);
            }
            drop(w);
            read(fabric)
        } else {
            f
        };
        // Each destination is visited once, under its lock, and gets its
        // frames in the order they came.
        let at = |d: &Desc| g.slot_offset(d.slot) + d.off as usize;
        if flood {
            let unknown = target[..n].contains(&TO_ALL);
            for &t in &f.attached {
                if t == src_id {
                    continue;
                }
                let Some(dst) = &f.tx[t as usize] else {
                    continue;
                };
                let takes_groups = !f.quiet[t as usize];
                if !takes_groups {
                    src.c.flood_skipped += groups;
                    if !unknown && !target[..n].contains(&(t as u32)) {
                        // Nothing for it: not even locked.
                        continue;
                    }
                }
                let mut dst = lock(dst);
                dst.begin();
                for (i, d) in descs[..n].iter().enumerate() {
                    let to = target[i];
                    if to == t as u32 || to == TO_ALL || (to == TO_GROUP && takes_groups) {
                        dst.deliver(region, at(d), d.len);
                    }
                }
                dst.finish();
            }
        } else {
            for i in 0..n {
                let t = target[i];
                if t == TO_NOBODY {
                    continue;
                }
                let Some(dst) = &f.tx[t as usize] else {
                    continue;
                };
                let mut dst = lock(dst);
                dst.begin();
                for j in i..n {
                    if target[j] == t {
                        dst.deliver(region, at(&descs[j]), descs[j].len);
                        target[j] = TO_NOBODY;
                    }
                }
                dst.finish();
            }
        }
        if replies_n > 0 {
            if let Some(me) = &f.tx[src_id as usize] {
                let mut me = lock(me);
                me.begin();
                for (r, &len) in replies[..replies_n].iter().zip(&reply_len) {
                    me.deliver_bytes(&r[..len as usize]);
                }
                me.finish();
            }
        }
        drop(f);
        src.done.push(&descs[..n]);
        if src.done.consumer_wants_wakeup() {
            let _ = src.shm.to_peer.ring();
        }
        src.publish();
        // Each frame's bytes; a malformed descriptor costs a minimum frame.
        let charge = (src.c.rx_bytes - bytes0) + 64 * (src.c.drop_bad_desc - bad0);
        (n, charge as i64)
    }

    /// One round over the hot ports; returns descriptors taken.
    ///
    /// Ports are served by deficit round robin in bytes: each round a port
    /// gets its quantum of credit ([`QUANTUM`] times its weight over
    /// [`DEFAULT_WEIGHT`]) and sends batches while its credit lasts; a
    /// batch may overdraw it (batches are not split), and a port in debt
    /// sits out rounds until its quanta pay the debt back. A port of
    /// large frames therefore sends as many bytes as a port of small ones,
    /// not as many frames, and no backlog, however deep, takes more than
    /// its share of the thread. When every port with frames is in debt,
    /// the round is repeated with the rounds they would have sat out
    /// credited at once, so that a lone busy port never waits for
    /// nothing.
    pub fn poll_once(&mut self) -> usize {
        self.rounds += 1;
        if self.rounds.is_multiple_of(64) {
            self.tick();
        }
        loop {
            let (moved, in_debt) = self.round();
            if moved > 0 || !in_debt {
                self.loop_stats.rounds.store(self.rounds, Ordering::Relaxed);
                return moved;
            }
            // Every port with frames is in debt: credit the rounds the
            // first of them to get out would sit out.
            let r = self
                .hot
                .iter()
                .map(|&p| &self.ports[p as usize])
                .filter(|port| port.credit < 0)
                .map(|port| {
                    let q = port.quantum.max(1);
                    (-port.credit + q - 1) / q
                })
                .min()
                .unwrap_or(0);
            if r == 0 {
                // A port came out at exactly zero: the next round's quantum
                // lets it send.
                self.loop_stats.rounds.store(self.rounds, Ordering::Relaxed);
                return 0;
            }
            for &p in &self.hot {
                let port = &mut self.ports[p as usize];
                if port.credit < 0 {
                    port.credit += r * port.quantum;
                }
            }
        }
    }

    /// One deficit round robin pass over the hot ports: descriptors taken,
    /// and whether a port sat the round out in debt.
    fn round(&mut self) -> (usize, bool) {
        let mut moved = 0;
        let mut in_debt = false;
        let mut i = 0;
        while i < self.hot.len() {
            let p = self.hot[i] as usize;
            let port = &mut self.ports[p];
            let quantum = port.quantum;
            port.credit += quantum;
            if port.credit <= 0 {
                in_debt = true;
                i += 1;
                continue;
            }
            let mut k = 0;
            for _ in 0..MAX_BATCHES {
                let (n, charge) = self.service(p);
                k += n;
                let port = &mut self.ports[p];
                port.credit -= charge;
                if n < BATCH || port.credit <= 0 {
                    break;
                }
            }
            moved += k;
            let port = &mut self.ports[p];
            // Credit unspent because the port ran dry is not kept (an idle
            // port saves nothing up), nor more than a quantum of it.
            port.credit = if k == 0 { 0 } else { port.credit.min(quantum) };
            if k > 0 {
                port.idle = 0;
            } else {
                port.idle += 1;
                if port.idle >= PARK_AFTER {
                    port.idle = 0;
                    if port.rx.prepare_sleep() {
                        port.parked = true;
                        self.hot.swap_remove(i);
                        continue;
                    }
                }
            }
            i += 1;
        }
        (moved, in_debt)
    }

    /// Parks every hot port that is still empty (the whole thread has
    /// been idle for a while).
    fn park_all(&mut self) {
        let mut i = 0;
        while i < self.hot.len() {
            let p = &mut self.ports[self.hot[i] as usize];
            if p.rx.prepare_sleep() {
                p.parked = true;
                p.idle = 0;
                self.hot.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    fn tick(&mut self) {
        for p in &mut self.ports {
            p.quantum = p.stats.quantum();
            if let Some(police) = p.stats.policer_if_changed(&mut p.limit_gen) {
                p.police = police;
            }
        }
        self.now_ms = self.start.elapsed().as_millis() as u32;
        if self.ages && self.cfg.learning && self.now_ms.wrapping_sub(self.last_expire) >= 1000 {
            self.last_expire = self.now_ms;
            write(&self.fabric).table.expire(self.now_ms);
        }
    }

    /// Reads the doorbells (blocking up to `timeout` if given and not
    /// zero), unparks the ports that rang and serves control commands.
    fn events(
        &mut self,
        events: &mut Vec<epoll::Event>,
        timeout: Option<Duration>,
    ) -> std::io::Result<()> {
        let ts = timeout.map(|t| rustix::time::Timespec {
            tv_sec: t.as_secs() as i64,
            tv_nsec: t.subsec_nanos() as i64,
        });
        events.clear();
        match epoll::wait(
            &*self.epoll,
            rustix::buffer::spare_capacity(events),
            ts.as_ref(),
        ) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let mut control = false;
        for ev in events.iter() {
            let key = ev.data.u64();
            if key == CONTROL_KEY {
                control = true;
                continue;
            }
            if let Some(di) = self_index(&self.index, key as u16) {
                let p = &mut self.ports[di];
                if p.parked {
                    p.parked = false;
                    p.idle = 0;
                    p.rx.woke();
                    self.hot.push(di as u32);
                }
            }
        }
        if control {
            self.commands();
        }
        Ok(())
    }

    fn commands(&mut self) {
        let Some((rx, bell)) = self.control.take() else {
            return;
        };
        bell.clear();
        while let Ok(cmd) = rx.try_recv() {
            match cmd {
                Cmd::Attach(id, shm, reply) => {
                    let _ = reply.send(self.attach(id, shm));
                }
                Cmd::Detach(id, keep, reply) => {
                    let _ = reply.send(self.detach_keeping(id, keep));
                }
                Cmd::Adopt(id, shm, stats, reply) => {
                    let _ = reply.send(self.adopt(id, shm, stats));
                }
                Cmd::Local(l) => self.locals.push(l),
                Cmd::Stop => self.stop = true,
                #[cfg(test)]
                Cmd::Crash => panic!("injected"),
            }
        }
        self.control = Some((rx, bell));
    }

    /// Polls the devices this thread serves (dropping those that are
    /// done); frames they moved.
    fn poll_locals(&mut self) -> usize {
        if self.locals.is_empty() {
            return 0;
        }
        let mut moved = 0;
        self.locals.retain_mut(|l| match l.poll() {
            Some(n) => {
                moved += n;
                true
            }
            None => false,
        });
        moved
    }

    /// Runs until stopped through the control channel: polls while busy,
    /// backs off when rounds come up empty, sleeps on the doorbells when
    /// every port is parked.
    fn run(&mut self) -> std::io::Result<()> {
        // Event records hold a pointer-sized union (not `Send`), so the
        // buffer lives on the switch thread's stack frame.
        let mut events = Vec::with_capacity(EVENTS);
        while !self.stop {
            let local = self.poll_locals();
            let moved = self.poll_once() + local;
            if self.hot.is_empty() {
                if local > 0 {
                    // A device sent to a parked port (which rang): take
                    // the port back without sleeping.
                    self.events(&mut events, Some(Duration::ZERO))?;
                    continue;
                }
                self.since_sleep = 0;
                self.empty = 0;
                let timeout = if !self.locals.is_empty() {
                    Some(Duration::from_millis(1))
                } else {
                    (self.ages && self.cfg.learning).then_some(Duration::from_secs(1))
                };
                self.loop_stats.sleeps.fetch_add(1, Ordering::Relaxed);
                self.events(&mut events, timeout)?;
                self.tick();
                continue;
            }
            if self.rounds.is_multiple_of(EPOLL_EVERY) {
                self.events(&mut events, Some(Duration::ZERO))?;
            }
            if moved > 0 {
                self.empty = 0;
                self.since_sleep = self.since_sleep.saturating_add(moved as u32);
            } else {
                self.empty = self.empty.saturating_add(1);
                let (spin, idle) = if self.since_sleep >= BUSY_FRAMES {
                    (SPIN_ROUNDS, IDLE_ROUNDS)
                } else {
                    (SHORT_IDLE_ROUNDS / 2, SHORT_IDLE_ROUNDS)
                };
                if self.empty < spin {
                    std::hint::spin_loop();
                } else if self.empty < idle {
                    std::thread::yield_now();
                } else {
                    self.empty = 0;
                    self.park_all();
                }
            }
        }
        Ok(())
    }
}

#[inline]
fn self_index(index: &[u32], id: u16) -> Option<usize> {
    match index[id as usize] {
        0 => None,
        n => Some((n - 1) as usize),
    }
}

/// One switching thread, as the handle sees it.
struct Worker {
    tx: mpsc::Sender<Cmd>,
    bell: Arc<Doorbell>,
    epoll: Arc<rustix::fd::OwnedFd>,
    loop_stats: Arc<LoopStats>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
    restarts: u64,
}

/// Where each port lives and what it counted.
#[derive(Default)]
struct Placement {
    /// Port number → switching thread.
    owner: std::collections::HashMap<u16, usize>,
    /// Ports per thread.
    load: Vec<usize>,
    /// Counters of every port attached so far (kept after a detach).
    stats: std::collections::HashMap<u16, Arc<PortStats>>,
    /// The shared memory of every attached port, for a restarted thread
    /// to take its ports over.
    shms: std::collections::HashMap<u16, PortShm>,
}

/// A switching thread, as [`SwitchHandle::threads_info`] reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadInfo {
    /// The thread's number.
    pub thread: usize,
    /// Ports it serves.
    pub ports: usize,
    /// False if it ended (a panic or an error) and was not restarted yet.
    pub alive: bool,
    /// Times it was restarted.
    pub restarts: u64,
    /// Rounds of its loop.
    pub rounds: u64,
}

/// Why a switching thread ended, for [`SwitchHandle::revive`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revived {
    /// The thread's number.
    pub thread: usize,
    /// How it had ended: "panicked: ...", "failed: ...", or "stopped".
    pub reason: String,
    /// Ports the new thread took over.
    pub ports: usize,
}

/// A switch running on its own threads, driven through control channels.
pub struct SwitchHandle {
    fabric: SharedFabric,
    cfg: Config,
    start: Instant,
    workers: Mutex<Vec<Worker>>,
    placement: Mutex<Placement>,
}

impl SwitchHandle {
    /// Starts the switching threads.
    pub fn spawn(cfg: Config) -> Result<SwitchHandle, SwitchError> {
        if cfg.threads == 0 || cfg.threads > MAX_THREADS {
            return Err(SwitchError::Config(format!(
                "switching threads: {} is out of range (1 to {MAX_THREADS})",
                cfg.threads
            )));
        }
        let fabric = Arc::new(RwLock::new(Fabric::new(&cfg)));
        let start = Instant::now();
        let handle = SwitchHandle {
            fabric: fabric.clone(),
            cfg,
            start,
            workers: Mutex::new(Vec::new()),
            placement: Mutex::new(Placement {
                load: vec![0; cfg.threads],
                ..Placement::default()
            }),
        };
        for t in 0..cfg.threads {
            // Started threads are stopped by the handle's drop if a later
            // one fails to start.
            let w = handle.start_worker(t, None)?;
            handle.workers().push(w);
        }
        Ok(handle)
    }

    /// Starts switching thread `t` with no ports (with the epoll set of
    /// the thread it replaces, if any: its ports' doorbells are in it).
    fn start_worker(
        &self,
        t: usize,
        epoll: Option<Arc<rustix::fd::OwnedFd>>,
    ) -> Result<Worker, SwitchError> {
        let cfg = self.cfg;
        let mut sw = Switch::engine(cfg, self.fabric.clone(), t == 0, self.start, epoll)?;
        let bell = Arc::new(Doorbell::new()?);
        epoll::add(
            &*sw.epoll,
            &*bell,
            epoll::EventData::new_u64(CONTROL_KEY),
            epoll::EventFlags::IN,
        )?;
        let (tx, rx) = mpsc::channel();
        sw.control = Some((rx, bell.clone()));
        let loop_stats = sw.loop_stats.clone();
        let epoll = sw.epoll.clone();
        let cpu = cfg.cpu.map(|c| c + t);
        let (pinned_tx, pinned) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name(format!("pronto-switch-{t}"))
            .spawn(move || {
                if let Some(c) = cpu {
                    if let Err(e) = crate::pin_current_thread(c) {
                        let _ = pinned_tx.send(Err(e));
                        return Ok(());
                    }
                }
                let _ = pinned_tx.send(Ok(()));
                sw.run()
            })?;
        let mut w = Worker {
            tx,
            bell,
            epoll,
            loop_stats,
            thread: Some(thread),
            restarts: 0,
        };
        if let Ok(Err(e)) = pinned.recv() {
            let _ = stop_worker(&mut w);
            return Err(SwitchError::Config(format!(
                "cannot pin switching thread {t} to CPU {}: {e}",
                cpu.unwrap_or_default()
            )));
        }
        Ok(w)
    }

    fn workers(&self) -> MutexGuard<'_, Vec<Worker>> {
        self.workers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops switching thread `t` (if it still runs) and starts a new one
    /// that takes over its ports: their rings, MAC entries and counters
    /// stay as they were, frames waiting in their rings are switched by
    /// the new thread. Attaching and detaching wait meanwhile. Returns how
    /// the old thread had ended (see [`Revived`]).
    pub fn restart_thread(&self, t: usize) -> Result<Revived, SwitchError> {
        let p = self.placement();
        let mut workers = self.workers();
        if t >= workers.len() {
            return Err(SwitchError::Config(format!(
                "switching thread {t} does not exist (0 to {})",
                workers.len() - 1
            )));
        }
        let reason = stop_worker(&mut workers[t]);
        let restarts = workers[t].restarts + 1;
        let mut w = self.start_worker(t, Some(workers[t].epoll.clone()))?;
        w.restarts = restarts;
        workers[t] = w;
        drop(workers);
        let mut ports = 0;
        for (&id, _) in p.owner.iter().filter(|(_, &o)| o == t) {
            let (Some(shm), Some(stats)) = (p.shms.get(&id), p.stats.get(&id)) else {
                continue;
            };
            let (tx, rx) = mpsc::sync_channel(1);
            self.send(t, Cmd::Adopt(id, shm.clone(), stats.clone(), tx))?;
            rx.recv().map_err(|_| SwitchError::Stopped)??;
            ports += 1;
        }
        Ok(Revived {
            thread: t,
            reason,
            ports,
        })
    }

    /// Restarts every switching thread that has ended (a panic, or an
    /// error from the kernel), each taking over its ports; for the
    /// daemon's watchdog. Returns what was restarted and why.
    pub fn revive(&self) -> Vec<Result<Revived, SwitchError>> {
        let dead: Vec<usize> = self
            .workers()
            .iter()
            .enumerate()
            .filter(|(_, w)| w.thread.as_ref().is_some_and(|h| h.is_finished()))
            .map(|(t, _)| t)
            .collect();
        dead.into_iter().map(|t| self.restart_thread(t)).collect()
    }

    /// Each switching thread: ports, whether it runs, restarts, rounds.
    pub fn threads_info(&self) -> Vec<ThreadInfo> {
        let p = self.placement();
        self.workers()
            .iter()
            .enumerate()
            .map(|(t, w)| ThreadInfo {
                thread: t,
                ports: p.load.get(t).copied().unwrap_or(0),
                alive: w.thread.as_ref().is_some_and(|h| !h.is_finished()),
                restarts: w.restarts,
                rounds: w.loop_stats.rounds.load(Ordering::Relaxed),
            })
            .collect()
    }

    fn send(&self, t: usize, cmd: Cmd) -> Result<(), SwitchError> {
        let workers = self.workers();
        let w = &workers[t];
        w.tx.send(cmd).map_err(|_| SwitchError::Stopped)?;
        w.bell.ring()?;
        Ok(())
    }

    fn placement(&self) -> MutexGuard<'_, Placement> {
        self.placement.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Switching threads.
    pub fn threads(&self) -> usize {
        self.workers().len()
    }

    /// Attaches `shm` as port `id` while the switch runs, on the thread
    /// serving the fewest ports; returns that thread.
    pub fn attach(&self, id: u16, shm: PortShm) -> Result<usize, SwitchError> {
        let mut p = self.placement();
        if p.owner.contains_key(&id) {
            return Err(SwitchError::PortTaken(id));
        }
        let t = (0..p.load.len()).min_by_key(|&t| p.load[t]).unwrap_or(0);
        let (tx, rx) = mpsc::sync_channel(1);
        let mut shm_copy = shm.clone();
        shm_copy.to_switch = None;
        self.send(t, Cmd::Attach(id, shm, tx))?;
        let stats = rx.recv().map_err(|_| SwitchError::Stopped)??;
        p.owner.insert(id, t);
        p.load[t] += 1;
        p.stats.insert(id, stats);
        p.shms.insert(id, shm_copy);
        Ok(t)
    }

    /// Has the switching thread that serves port `port` move `local`'s
    /// frames in its own loop ([`Local`]) until it reports itself done;
    /// returns that thread. A device is not carried over to a restarted
    /// thread.
    pub fn serve_local(&self, port: u16, local: Box<dyn Local>) -> Result<usize, SwitchError> {
        let p = self.placement();
        let t = *p.owner.get(&port).ok_or(SwitchError::NoPort(port))?;
        self.send(t, Cmd::Local(local))?;
        Ok(t)
    }

    /// Detaches port `id` while the switch runs (its MAC entries go too).
    pub fn detach(&self, id: u16) -> Result<(), SwitchError> {
        self.detach_keeping(id, false)
    }

    /// Detaches port `id` while the switch runs, keeping the MAC entries
    /// that point at it (see [`Switch::suspend`]): for a port whose
    /// process restarts, so that frames for it are dropped and counted
    /// meanwhile rather than flooded to every other port.
    pub fn suspend(&self, id: u16) -> Result<(), SwitchError> {
        self.detach_keeping(id, true)
    }

    /// Removes every MAC entry (and ARP answer) that points at port `id`
    /// (after [`SwitchHandle::suspend`], when the port is not coming
    /// back).
    pub fn forget(&self, id: u16) {
        let mut f = write(&self.fabric);
        f.table.remove_port(id);
        forget_port(&mut f, id);
    }

    /// Answers ARP requests for IPv4 address `ip` itself, with MAC `m`
    /// (behind port `port`: the answer goes when the port goes), instead
    /// of flooding them to every port: one broadcast no longer wakes every
    /// instance. False when another port has the address, or the table is
    /// full (as many entries as the MAC table holds).
    pub fn add_arp(&self, ip: [u8; 4], m: [u8; 6], port: u16) -> bool {
        add_arp(&mut write(&self.fabric), ip, m, port)
    }

    /// Answers IPv6 Neighbor Solicitations for `ip` itself, with MAC `m`
    /// (behind port `port`), as [`SwitchHandle::add_arp`] does ARP.
    pub fn add_nd(&self, ip: [u8; 16], m: [u8; 6], port: u16) -> bool {
        add_nd(&mut write(&self.fabric), ip, m, port)
    }

    /// Whether port `port` takes broadcast and multicast frames (those
    /// the switch does not answer itself); every port does until told
    /// otherwise, and again once forgotten. A port that does not is still
    /// sent unicast frames, including those for unknown addresses; what
    /// it was not sent is counted at the sender (`flood_skipped`).
    pub fn set_broadcast(&self, port: u16, on: bool) {
        write(&self.fabric).quiet[port as usize] = !on;
    }

    /// Whether port `port` takes broadcasts.
    pub fn broadcast(&self, port: u16) -> bool {
        !read(&self.fabric).quiet[port as usize]
    }

    fn detach_keeping(&self, id: u16, keep: bool) -> Result<(), SwitchError> {
        let mut p = self.placement();
        let t = *p.owner.get(&id).ok_or(SwitchError::NoPort(id))?;
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(t, Cmd::Detach(id, keep, tx))?;
        if !rx.recv().map_err(|_| SwitchError::Stopped)? {
            return Err(SwitchError::NoPort(id));
        }
        p.owner.remove(&id);
        p.shms.remove(&id);
        p.load[t] -= 1;
        Ok(())
    }

    /// Adds a static MAC → port entry (false if the table is full).
    pub fn add_static(&self, m: [u8; 6], port: u16) -> Result<bool, SwitchError> {
        Ok(write(&self.fabric).table.add_static(mac(&m), port))
    }

    /// Removes the static entry for `m` if it points at `port` (false if
    /// none does: another port's entry for `m` stays).
    pub fn remove_static(&self, m: [u8; 6], port: u16) -> bool {
        write(&self.fabric).table.remove_static(mac(&m), port)
    }

    /// Stops answering ARP for `ip` if port `port` registered it (false
    /// otherwise: another port's answer stays).
    pub fn remove_arp(&self, ip: [u8; 4], port: u16) -> bool {
        let mut f = write(&self.fabric);
        match f.arp.get(&ip) {
            Some(&(_, p)) if p == port => f.arp.remove(&ip).is_some(),
            _ => false,
        }
    }

    /// Stops answering Neighbor Solicitations for `ip` if port `port`
    /// registered it, as [`SwitchHandle::remove_arp`].
    pub fn remove_nd(&self, ip: [u8; 16], port: u16) -> bool {
        let mut f = write(&self.fabric);
        match f.nd.get(&ip) {
            Some(&(_, p)) if p == port => f.nd.remove(&ip).is_some(),
            _ => false,
        }
    }

    /// Counters of port `id` (kept after a detach, frozen).
    pub fn counters(&self, id: u16) -> Option<PortCounters> {
        self.placement().stats.get(&id).map(|s| s.get())
    }

    /// Sets port `id`'s weight (see [`PortStats::set_weight`]); false
    /// when there is no such port. A port attached again starts at
    /// [`DEFAULT_WEIGHT`].
    pub fn set_weight(&self, id: u16, weight: u32) -> bool {
        let p = self.placement();
        match (p.owner.get(&id), p.stats.get(&id)) {
            (Some(_), Some(s)) => {
                s.set_weight(weight);
                true
            }
            _ => false,
        }
    }

    /// Port `id`'s weight.
    pub fn weight(&self, id: u16) -> Option<u32> {
        self.placement().stats.get(&id).map(|s| s.weight())
    }

    /// Port `id`'s geometry, while attached.
    pub fn geometry(&self, id: u16) -> Option<crate::Geometry> {
        self.placement().shms.get(&id).map(|s| s.geometry)
    }

    /// Sets port `id`'s rate limit (see [`PortStats::set_rate_limit`]);
    /// false when there is no such port. A port attached again starts
    /// without one.
    pub fn set_rate_limit(&self, id: u16, limit: crate::RateLimit) -> bool {
        let p = self.placement();
        match (p.owner.get(&id), p.stats.get(&id)) {
            (Some(_), Some(s)) => {
                s.set_rate_limit(limit);
                true
            }
            _ => false,
        }
    }

    /// Port `id`'s rate limit.
    pub fn rate_limit(&self, id: u16) -> Option<crate::RateLimit> {
        self.placement().stats.get(&id).map(|s| s.rate_limit())
    }

    /// Starts a capture on port `id` (see [`crate::capture`]).
    pub fn capture(&self, id: u16, spec: crate::CaptureSpec) -> Result<crate::Capture, String> {
        let p = self.placement();
        match (p.owner.get(&id), p.stats.get(&id)) {
            (Some(_), Some(s)) => s.capture(spec),
            _ => Err(format!("no port {id} on the switch")),
        }
    }

    /// The switching thread serving port `id`.
    pub fn thread_of(&self, id: u16) -> Option<usize> {
        self.placement().owner.get(&id).copied()
    }

    /// Rounds the loops have run, over every thread.
    pub fn rounds(&self) -> u64 {
        let r = |w: &Worker| w.loop_stats.rounds.load(Ordering::Relaxed);
        self.workers().iter().map(r).sum()
    }

    /// Times the loops blocked on the doorbells, over every thread.
    pub fn sleeps(&self) -> u64 {
        let s = |w: &Worker| w.loop_stats.sleeps.load(Ordering::Relaxed);
        self.workers().iter().map(s).sum()
    }

    /// Stops the switching threads and waits for them.
    pub fn stop(mut self) -> Result<(), SwitchError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), SwitchError> {
        let mut result = Ok(());
        for w in self.workers().iter_mut() {
            let Some(thread) = w.thread.take() else {
                continue;
            };
            let _ = w.tx.send(Cmd::Stop);
            let _ = w.bell.ring();
            let r = match thread.join() {
                Ok(r) => r.map_err(SwitchError::from),
                Err(_) => Err(SwitchError::Stopped),
            };
            if result.is_ok() {
                result = r;
            }
        }
        result
    }
}

/// Stops a switching thread and waits for it; says how it ended.
fn stop_worker(w: &mut Worker) -> String {
    let Some(thread) = w.thread.take() else {
        return "stopped".into();
    };
    let was_running = !thread.is_finished();
    let _ = w.tx.send(Cmd::Stop);
    let _ = w.bell.ring();
    match thread.join() {
        Ok(Ok(())) if was_running => "running".into(),
        Ok(Ok(())) => "stopped".into(),
        Ok(Err(e)) => format!("failed: {e}"),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            format!("panicked: {what}")
        }
    }
}

impl Drop for SwitchHandle {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::Peer;
    use crate::RateLimit;

    /// An ARP request from `sha`/`spa` for `tpa`.
    fn arp_request(sha: [u8; 6], spa: [u8; 4], tpa: [u8; 4]) -> Vec<u8> {
        let mut f = vec![0xff; 6];
        f.extend_from_slice(&sha);
        f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&sha);
        f.extend_from_slice(&spa);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&tpa);
        f.resize(60, 0);
        f
    }

    #[test]
    fn the_switch_answers_arp_for_registered_addresses_instead_of_flooding() {
        let mut sw = Switch::new(Config::default()).expect("switch");
        let g = Geometry::new(256, 128).expect("g");
        let (a, b, c) = (
            PortShm::create("a", g).expect("a"),
            PortShm::create("b", g).expect("b"),
            PortShm::create("c", g).expect("c"),
        );
        sw.attach(1, a.clone()).expect("attach");
        sw.attach(2, b.clone()).expect("attach");
        sw.attach(3, c.clone()).expect("attach");
        let mut pa = Peer::new(a, 64).expect("peer a");
        let mut pb = Peer::new(b, 64).expect("peer b");
        let mut pc = Peer::new(c, 64).expect("peer c");
        let (ma, mb) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        sw.add_static(mb, 2);
        assert!(sw.add_arp([10, 0, 0, 2], mb, 2));
        // Another port cannot take the address over.
        assert!(!sw.add_arp([10, 0, 0, 2], [2, 0, 0, 0, 0, 3], 3));
        // a asks who has 10.0.0.2: the switch answers, nobody else hears.
        pa.send(&[&arp_request(ma, [10, 0, 0, 1], [10, 0, 0, 2])]);
        sw.poll_once();
        let mut got = Vec::new();
        assert_eq!(pa.recv(|x| got.push(x.to_vec())), 1);
        let mut want = ma.to_vec();
        want.extend_from_slice(&mb);
        want.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 2]);
        want.extend_from_slice(&mb);
        want.extend_from_slice(&[10, 0, 0, 2]);
        want.extend_from_slice(&ma);
        want.extend_from_slice(&[10, 0, 0, 1]);
        want.resize(60, 0);
        assert_eq!(got, vec![want]);
        assert_eq!((pb.recv(|_| {}), pc.recv(|_| {})), (0, 0));
        assert_eq!(sw.counters(1).expect("a").arp_answered, 1);
        // Another address, and the owner probing for its own: flooded.
        pa.send(&[&arp_request(ma, [10, 0, 0, 1], [10, 0, 0, 9])]);
        pb.send(&[&arp_request(mb, [10, 0, 0, 2], [10, 0, 0, 2])]);
        sw.poll_once();
        sw.poll_once();
        assert_eq!((pb.recv(|_| {}), pc.recv(|_| {})), (1, 2));
        assert_eq!(pa.recv(|_| {}), 1);
        // The port gone, its answers go too.
        sw.forget(2);
        pa.send(&[&arp_request(ma, [10, 0, 0, 1], [10, 0, 0, 2])]);
        sw.poll_once();
        assert_eq!((pb.recv(|_| {}), pc.recv(|_| {})), (1, 1));
        assert_eq!(sw.counters(1).expect("a").arp_answered, 1);
    }

    /// A Neighbor Solicitation from `sha`/`src` for `target`, to its
    /// solicited-node multicast address, with the source's link-layer
    /// address option.
    fn solicitation(sha: [u8; 6], src: [u8; 16], target: [u8; 16]) -> Vec<u8> {
        let mut f = vec![0x33, 0x33, 0xff, target[13], target[14], target[15]];
        f.extend_from_slice(&sha);
        f.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 32, 58, 255]);
        f.extend_from_slice(&src);
        f.extend_from_slice(&[0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff]);
        f.extend_from_slice(&target[13..16]);
        f.extend_from_slice(&[135, 0, 0, 0, 0, 0, 0, 0]);
        f.extend_from_slice(&target);
        f.extend_from_slice(&[1, 1]);
        f.extend_from_slice(&sha);
        f
    }

    /// True if an IPv6 frame's ICMPv6 checksum is right.
    fn icmp6_checksum_ok(f: &[u8]) -> bool {
        let len = u16::from_be_bytes([f[18], f[19]]) as usize;
        let mut words: Vec<u8> = f[22..54].to_vec();
        words.extend_from_slice(&(len as u32).to_be_bytes());
        words.extend_from_slice(&[0, 0, 0, 58]);
        words.extend_from_slice(&f[54..54 + len]);
        let mut acc: u64 = words
            .chunks(2)
            .map(|w| u64::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
            .sum();
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        acc == 0xffff
    }

    #[test]
    fn broadcasts_go_only_to_ports_that_take_them_and_solicitations_are_answered() {
        let mut sw = Switch::new(Config::default()).expect("switch");
        let g = Geometry::new(256, 128).expect("g");
        let (a, b, c) = (
            PortShm::create("a", g).expect("a"),
            PortShm::create("b", g).expect("b"),
            PortShm::create("c", g).expect("c"),
        );
        sw.attach(1, a.clone()).expect("attach");
        sw.attach(2, b.clone()).expect("attach");
        sw.attach(3, c.clone()).expect("attach");
        let mut pa = Peer::new(a, 64).expect("peer a");
        let mut pb = Peer::new(b, 64).expect("peer b");
        let mut pc = Peer::new(c, 64).expect("peer c");
        let (ma, mb, mc) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 3]);
        sw.add_static(mc, 3);
        sw.set_broadcast(3, false);
        let counts = |pb: &mut Peer, pc: &mut Peer| (pb.recv(|_| {}), pc.recv(|_| {}));
        // A broadcast reaches b only; c's copy is counted at a.
        pa.send(&[&arp_request(ma, [10, 0, 0, 1], [10, 0, 0, 9])]);
        sw.poll_once();
        assert_eq!(counts(&mut pb, &mut pc), (1, 0));
        assert_eq!(sw.counters(1).expect("a").flood_skipped, 1);
        // Unicast to c, and to an address nobody has, reach c all the same.
        let mut uni = arp_request(ma, [10, 0, 0, 1], [10, 0, 0, 3]);
        uni[..6].copy_from_slice(&mc);
        let mut unknown = uni.clone();
        unknown[..6].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        pa.send(&[&uni, &unknown]);
        sw.poll_once();
        assert_eq!(counts(&mut pb, &mut pc), (1, 2));
        // A solicitation for a registered address is answered by the
        // switch, byte for byte, and heard by nobody else.
        let ip_a = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let ip_b = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
        assert!(sw.add_nd(ip_b, mb, 2));
        assert!(!sw.add_nd(ip_b, mc, 3), "another port cannot take it over");
        pa.send(&[&solicitation(ma, ip_a, ip_b)]);
        sw.poll_once();
        let mut got = Vec::new();
        assert_eq!(pa.recv(|x| got.push(x.to_vec())), 1);
        let mut want = ma.to_vec();
        want.extend_from_slice(&mb);
        want.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0, 0, 32, 58, 255]);
        want.extend_from_slice(&ip_b);
        want.extend_from_slice(&ip_a);
        want.extend_from_slice(&[136, 0, got[0][56], got[0][57], 0x60, 0, 0, 0]);
        want.extend_from_slice(&ip_b);
        want.extend_from_slice(&[2, 1]);
        want.extend_from_slice(&mb);
        assert_eq!(got, vec![want]);
        assert!(icmp6_checksum_ok(&got[0]), "{:02x?}", got[0]);
        assert_eq!(counts(&mut pb, &mut pc), (0, 0));
        assert_eq!(sw.counters(1).expect("a").nd_answered, 1);
        // An unknown target, duplicate address detection (from ::) and
        // the owner asking about itself go on as multicasts, to b only.
        pa.send(&[
            &solicitation(
                ma,
                ip_a,
                [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9],
            ),
            &solicitation(ma, [0; 16], ip_b),
        ]);
        pb.send(&[&solicitation(mb, ip_b, ip_b)]);
        sw.poll_once();
        sw.poll_once();
        assert_eq!(counts(&mut pb, &mut pc), (2, 0));
        assert_eq!(pa.recv(|_| {}), 1);
        let (ca, cb) = (sw.counters(1).expect("a"), sw.counters(2).expect("b"));
        assert_eq!((ca.nd_answered, ca.flood_skipped), (1, 3));
        assert_eq!((cb.nd_answered, cb.flood_skipped), (0, 1));
        // Forgotten, the port takes broadcasts again and its answers go.
        sw.forget(3);
        sw.forget(2);
        pa.send(&[&solicitation(ma, ip_a, ip_b)]);
        sw.poll_once();
        assert_eq!(counts(&mut pb, &mut pc), (1, 1));
        assert_eq!(sw.counters(1).expect("a").nd_answered, 1);
    }

    #[test]
    fn a_capture_copies_what_a_port_sends_and_receives_and_stops_at_its_count() {
        use crate::{CaptureSpec, Direction};
        let mut sw = Switch::new(Config::default()).expect("switch");
        let g = Geometry::new(256, 128).expect("g");
        let a = PortShm::create("a", g).expect("a");
        let b = PortShm::create("b", g).expect("b");
        let sa = sw.attach(1, a.clone()).expect("attach");
        let sb = sw.attach(2, b.clone()).expect("attach");
        let mut pa = Peer::new(a, 64).expect("peer a");
        let mut pb = Peer::new(b, 64).expect("peer b");
        let (ma, mb) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        sw.add_static(ma, 1);
        sw.add_static(mb, 2);
        let spec = |count, from_port, to_port| CaptureSpec {
            // Frames whose 13th byte is 7 (the fill below).
            filter: Some(Box::new(|f: &[u8]| f[12] == 7)),
            snaplen: 40,
            count,
            from_port,
            to_port,
            queue: 16,
        };
        let on_a = sa.capture(spec(3, true, false)).expect("capture a");
        assert_eq!(
            sa.capture(spec(1, true, true))
                .err()
                .expect("one at a time"),
            "the port is being captured already; one capture at a time"
        );
        let on_b = sb.capture(spec(100, false, true)).expect("capture b");
        let f7 = frame(mb, ma, 7, 100);
        let f9 = frame(mb, ma, 9, 100);
        assert_eq!(pa.send(&[&f7, &f9, &f7, &f7, &f7]), 5);
        sw.poll_once();
        assert_eq!(pb.recv(|_| {}), 5);
        // b answers: not captured on a (to_port is off there).
        pb.send(&[&frame(ma, mb, 7, 60)]);
        sw.poll_once();
        let wait = Duration::from_millis(10);
        let mut seen = Vec::new();
        while let Some(c) = on_a.next(wait) {
            seen.push(c);
        }
        // Three of the four matching frames: the count.
        assert_eq!(seen.len(), 3);
        for c in &seen {
            assert_eq!((c.dir, c.len), (Direction::FromPort, 100));
            assert_eq!(c.bytes, f7[..40].to_vec());
        }
        let mut on_b_seen = 0;
        while let Some(c) = on_b.next(wait) {
            assert_eq!((c.dir, c.len, c.bytes.len()), (Direction::ToPort, 100, 40));
            on_b_seen += 1;
        }
        assert_eq!((on_b_seen, on_b.dropped()), (4, 0));
        // Ended: the port can be captured again, and frames flow as before.
        drop(on_a);
        let again = sa.capture(spec(1, true, true)).expect("captured again");
        // A reader that does not keep up: frames beyond the queue are
        // counted, not waited for.
        drop(on_b);
        let slow = sb
            .capture(CaptureSpec {
                filter: None,
                snaplen: 64,
                count: 1000,
                from_port: false,
                to_port: true,
                queue: 2,
            })
            .expect("capture b");
        let batch: Vec<&[u8]> = (0..10).map(|_| &f9[..]).collect();
        pa.send(&batch);
        sw.poll_once();
        assert_eq!(pb.recv(|_| {}), 10);
        assert_eq!(slow.dropped(), 8);
        drop(again);
        assert_eq!(sw.counters(2).expect("b").tx_packets, 15);
    }

    fn frame(dst: [u8; 6], src: [u8; 6], fill: u8, len: usize) -> Vec<u8> {
        let mut f = vec![fill; len];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f
    }

    #[test]
    fn a_switching_thread_that_panicked_is_revived_with_its_ports() {
        let sw = SwitchHandle::spawn(Config {
            threads: 2,
            ..Config::default()
        })
        .expect("switch");
        let g = Geometry::new(256, 128).expect("g");
        let a = PortShm::create("a", g).expect("a");
        let b = PortShm::create("b", g).expect("b");
        assert_eq!(sw.attach(1, a.clone()).expect("attach"), 0);
        assert_eq!(sw.attach(2, b.clone()).expect("attach"), 1);
        let (ma, mb) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        sw.add_static(mb, 2).expect("static");
        let mut pa = Peer::new(a, 64).expect("peer a");
        let mut pb = Peer::new(b, 64).expect("peer b");
        let f = frame(mb, ma, 7, 100);
        let deliver = |pa: &mut Peer, pb: &mut Peer, n: usize| {
            for _ in 0..n {
                assert_eq!(pa.send(&[&f]), 1);
            }
            let mut got = 0;
            let t0 = std::time::Instant::now();
            while got < n && t0.elapsed() < Duration::from_secs(10) {
                got += pb.recv(|x| assert_eq!(x, &f[..]));
                std::thread::sleep(Duration::from_millis(1));
            }
            got
        };
        assert_eq!(deliver(&mut pa, &mut pb, 3), 3);
        assert!(sw.revive().is_empty(), "nothing to revive");
        sw.send(0, Cmd::Crash).expect("crash");
        let t0 = std::time::Instant::now();
        while sw.threads_info()[0].alive {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "thread 0 still runs"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        // Frames sent while thread 0 is dead wait in a's ring.
        for _ in 0..2 {
            assert_eq!(pa.send(&[&f]), 1);
        }
        let r: Vec<Revived> = sw
            .revive()
            .into_iter()
            .map(|r| r.expect("revived"))
            .collect();
        assert_eq!(
            r,
            vec![Revived {
                thread: 0,
                reason: "panicked: injected".into(),
                ports: 1
            }]
        );
        let mut got = 0;
        let t0 = std::time::Instant::now();
        while got < 2 && t0.elapsed() < Duration::from_secs(10) {
            got += pb.recv(|x| assert_eq!(x, &f[..]));
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(got, 2, "the frames that waited were switched");
        assert_eq!(deliver(&mut pa, &mut pb, 4), 4);
        let c = sw.counters(1).expect("a");
        assert_eq!((c.rx_packets, c.drops()), (9, 0));
        let info = sw.threads_info();
        assert_eq!(
            (info[0].alive, info[0].restarts, info[0].ports),
            (true, 1, 1)
        );
        assert_eq!((info[1].alive, info[1].restarts), (true, 0));
    }

    /// Ports `1..=n` sending to a sink on port `n + 1`; the peers.
    fn fan_in(sw: &mut Switch, n: u16) -> (Vec<Peer>, Peer, [u8; 6]) {
        let g = Geometry::new(512, 256).expect("g");
        let sink_mac = [2, 0, 0, 0, 0, 0xfe];
        let mut senders = Vec::new();
        for i in 1..=n {
            let shm = PortShm::create(&format!("s{i}"), g).expect("port");
            sw.attach(i, shm.clone()).expect("attach");
            senders.push(Peer::new(shm, 16).expect("peer"));
        }
        let shm = PortShm::create("sink", g).expect("port");
        sw.attach(n + 1, shm.clone()).expect("attach");
        sw.add_static(sink_mac, n + 1);
        (senders, Peer::new(shm, 256).expect("sink"), sink_mac)
    }

    /// Runs `rounds` rounds with every sender's ring kept full of its
    /// frames; returns the bytes and frames the sink got from each sender
    /// (by the last byte of the source MAC).
    fn drive(
        sw: &mut Switch,
        senders: &mut [Peer],
        sink: &mut Peer,
        frames: &[Vec<u8>],
        rounds: usize,
    ) -> Vec<(u64, u64)> {
        let mut got = vec![(0u64, 0u64); senders.len()];
        for _ in 0..rounds {
            for (p, f) in senders.iter_mut().zip(frames) {
                while p.send_iter(std::iter::repeat_n(&f[..], 64)) > 0 {}
            }
            sw.poll_once();
            while sink.recv(|f| {
                let g = &mut got[usize::from(f[11]) - 1];
                g.0 += f.len() as u64;
                g.1 += 1;
            }) > 0
            {}
        }
        got
    }

    #[test]
    fn ports_share_a_thread_in_bytes_by_deficit_round_robin() {
        let mut sw = Switch::new(Config::default()).expect("switch");
        let (mut senders, mut sink, to) = fan_in(&mut sw, 2);
        let big = frame(to, [2, 0, 0, 0, 0, 1], 1, 1500);
        let small = frame(to, [2, 0, 0, 0, 0, 2], 2, 64);
        let got = drive(&mut sw, &mut senders, &mut sink, &[big, small], 240);
        // Round robin by frames would give the big port 23 times the
        // bytes; by bytes, the small port sends a batch (2,048 bytes) a
        // round and the big one a batch (48,000) on its first round, then
        // one whenever its quanta have paid it back (every 23.4 rounds):
        // 11 batches in 240 rounds, the same bytes but for the first.
        assert_eq!(got[1], (240 * 2048, 240 * 32));
        assert_eq!(got[0], (11 * 48_000, 11 * 32));
        let c = sw.counters(1).expect("big");
        assert_eq!((c.rx_packets, c.drops()), (352, 0));
    }

    #[test]
    fn a_rate_limit_drops_and_counts_what_is_over_it_each_way() {
        let t0 = Instant::now();
        let mut sw = Switch::new(Config::default()).expect("switch");
        let (mut senders, mut sink, to) = fan_in(&mut sw, 2);
        let of = |id: u16| sw.ports[sw.index[id as usize] as usize - 1].stats.clone();
        let s = [of(1), of(2), of(3)];
        let stats = |id: u16| s[id as usize - 1].clone();
        // Port 1 may send one frame a second: its burst tolerance is 64
        // frames' worth of time, so the first 65 pass at once, then one a
        // second.
        let one = RateLimit {
            pps: Some(1),
            bps: None,
        };
        stats(1).set_rate_limit(one);
        assert_eq!(stats(1).rate_limit(), one);
        assert_eq!(stats(2).rate_limit(), RateLimit::NONE);
        sw.tick();
        let frames: Vec<Vec<u8>> = (1..=2)
            .map(|i| frame(to, [2, 0, 0, 0, 0, i], i, 64))
            .collect();
        let got = drive(&mut sw, &mut senders, &mut sink, &frames, 20);
        let secs = t0.elapsed().as_secs();
        let c1 = stats(1).get();
        assert!((65..=65 + secs).contains(&got[0].1), "{got:?}");
        assert_eq!(c1.drop_rate_limit_rx, c1.rx_packets - got[0].1);
        assert_eq!(c1.drops(), c1.drop_rate_limit_rx);
        assert_eq!(got[1].1, 20 * 32, "the other port is not limited");
        assert_eq!(stats(2).get().drops(), 0);

        // The sink may take one frame a second: what the switch would
        // deliver beyond that is dropped before the copy, counted on the
        // sink's port; lifting the limit lets everything through again.
        let t0 = Instant::now();
        stats(1).set_rate_limit(RateLimit::NONE);
        stats(3).set_rate_limit(one);
        sw.tick();
        let before = stats(3).get();
        let got = drive(&mut sw, &mut senders, &mut sink, &frames, 20);
        let secs = t0.elapsed().as_secs();
        let c3 = stats(3).get();
        let delivered = got[0].1 + got[1].1;
        assert!((65..=65 + secs).contains(&delivered), "{got:?}");
        assert_eq!(
            c3.drop_rate_limit_tx - before.drop_rate_limit_tx,
            2 * 20 * 32 - delivered
        );
        stats(3).set_rate_limit(RateLimit::NONE);
        let got = drive(&mut sw, &mut senders, &mut sink, &frames, 5);
        assert_eq!((got[0].1, got[1].1), (5 * 32, 5 * 32));
    }

    #[test]
    fn a_port_of_three_times_the_weight_gets_three_times_the_bytes() {
        let mut sw = Switch::new(Config::default()).expect("switch");
        let (mut senders, mut sink, to) = fan_in(&mut sw, 3);
        let stats = |id: u16| sw.ports[sw.index[id as usize] as usize - 1].stats.clone();
        stats(1).set_weight(300);
        assert_eq!(
            (stats(1).weight(), stats(2).weight()),
            (300, DEFAULT_WEIGHT)
        );
        stats(3).set_weight(0);
        assert_eq!(stats(3).weight(), 1, "clamped to 1");
        stats(3).set_weight(DEFAULT_WEIGHT);
        // A thread reads the weights again every 64 rounds.
        sw.tick();
        let frames: Vec<Vec<u8>> = (1..=3)
            .map(|i| frame(to, [2, 0, 0, 0, 0, i], i, 64))
            .collect();
        let got = drive(&mut sw, &mut senders, &mut sink, &frames, 100);
        assert_eq!(got[0].1, 3 * 100 * 32);
        assert_eq!((got[1].1, got[2].1), (100 * 32, 100 * 32));
    }

    #[test]
    fn a_lone_port_of_large_frames_never_waits_for_nothing() {
        let mut sw = Switch::new(Config::default()).expect("switch");
        let (mut senders, mut sink, to) = fan_in(&mut sw, 1);
        let big = frame(to, [2, 0, 0, 0, 0, 1], 1, 1500);
        for _ in 0..50 {
            while senders[0].send_iter(std::iter::repeat_n(&big[..], 64)) > 0 {}
            assert_eq!(sw.poll_once(), BATCH, "a batch every round, debt or not");
            sink.recv_discard();
            while sink.recv_discard() > 0 {}
        }
    }

    #[test]
    fn forwards_between_two_ports_in_one_thread() {
        let mut sw = Switch::new(Config::default()).expect("switch");
        let g = Geometry::new(256, 128).expect("g");
        let a = PortShm::create("a", g).expect("a");
        let b = PortShm::create("b", g).expect("b");
        sw.attach(1, a.clone()).expect("attach");
        sw.attach(2, b.clone()).expect("attach");
        assert!(sw.attach(2, b.clone()).is_err());
        let mut pa = Peer::new(a, 64).expect("peer a");
        let mut pb = Peer::new(b, 64).expect("peer b");
        let (ma, mb) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        sw.add_static(mb, 2);
        let f = frame(mb, ma, 7, 100);
        assert_eq!(pa.send(&[&f, &f[..13]]), 1);
        assert_eq!(sw.poll_once(), 1);
        let mut got = Vec::new();
        assert_eq!(pb.recv(|x| got.push(x.to_vec())), 1);
        assert_eq!(got, vec![f.clone()]);
        // b answers; a was learned from its frame.
        let r = frame(ma, mb, 9, 60);
        pb.send(&[&r]);
        sw.poll_once();
        got.clear();
        pa.recv(|x| got.push(x.to_vec()));
        assert_eq!(got, vec![r]);
        let ca = sw.counters(1).expect("a");
        assert_eq!((ca.rx_packets, ca.tx_packets, ca.drops()), (1, 1, 0));
        assert!(sw.detach(2));
        assert!(!sw.detach(2));
        assert_eq!(sw.ports(), 1);
        // To a detached port with a static entry gone: floods to nobody.
        pa.send(&[&f]);
        sw.poll_once();
        assert_eq!(sw.counters(1).expect("a").rx_packets, 2);
    }

    #[test]
    fn a_suspended_port_keeps_its_addresses_and_frames_for_it_are_counted_not_flooded() {
        let mut sw = Switch::new(Config::default()).expect("switch");
        let g = Geometry::new(256, 128).expect("g");
        let (a, b, c) = (
            PortShm::create("a", g).expect("a"),
            PortShm::create("b", g).expect("b"),
            PortShm::create("c", g).expect("c"),
        );
        sw.attach(1, a.clone()).expect("attach");
        sw.attach(2, b.clone()).expect("attach");
        sw.attach(3, c.clone()).expect("attach");
        let mut pa = Peer::new(a, 64).expect("peer a");
        let mut pb = Peer::new(b.clone(), 64).expect("peer b");
        let mut pc = Peer::new(c, 64).expect("peer c");
        let (ma, mb) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        sw.add_static(mb, 2);
        // b restarts: while it is away, a's frames for it are dropped at
        // a's port (no route), and c, a bystander, sees none of them.
        assert!(sw.suspend(2));
        assert!(!sw.suspend(2));
        let f = frame(mb, ma, 7, 100);
        assert_eq!(pa.send(&[&f, &f, &f]), 3);
        assert_eq!(sw.poll_once(), 3);
        let ca = sw.counters(1).expect("a");
        assert_eq!((ca.rx_packets, ca.drop_no_route), (3, 3));
        assert_eq!(pc.recv(|_| {}), 0, "nothing flooded to a bystander");
        // Back under the same number, its address still routes to it.
        sw.attach(2, b).expect("attach again");
        pa.send(&[&f]);
        sw.poll_once();
        assert_eq!(pb.recv(|_| {}), 1);
        assert_eq!(pc.recv(|_| {}), 0);
        // Detached and forgotten: the address is unknown again (flooded).
        assert!(sw.suspend(2));
        sw.forget(2);
        pa.send(&[&f]);
        sw.poll_once();
        assert_eq!(pc.recv(|_| {}), 1);
        assert_eq!(sw.counters(1).expect("a").drop_no_route, 3);
    }

    #[test]
    fn sibling_engines_share_ports_and_macs() {
        let mut s0 = Switch::new(Config::default()).expect("switch");
        let mut s1 = s0.sibling().expect("sibling");
        let g = Geometry::new(256, 128).expect("g");
        let a = PortShm::create("a", g).expect("a");
        let b = PortShm::create("b", g).expect("b");
        s0.attach(1, a.clone()).expect("attach");
        s1.attach(2, b.clone()).expect("attach");
        assert!(
            matches!(s1.attach(1, a.clone()), Err(SwitchError::PortTaken(1))),
            "port numbers are switch-wide"
        );
        let mut pa = Peer::new(a, 64).expect("peer a");
        let mut pb = Peer::new(b, 64).expect("peer b");
        let (ma, mb) = ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        // Unknown destination: engine 0 floods into engine 1's port, and
        // learns a.
        let f = frame(mb, ma, 7, 100);
        pa.send(&[&f]);
        assert_eq!((s1.poll_once(), s0.poll_once()), (0, 1));
        let mut got = Vec::new();
        pb.recv(|x| got.push(x.to_vec()));
        assert_eq!(got, vec![f]);
        // b answers through engine 1, unicast to the learned a.
        let r = frame(ma, mb, 9, 60);
        pb.send(&[&r]);
        assert_eq!(s1.poll_once(), 1);
        got.clear();
        pa.recv(|x| got.push(x.to_vec()));
        assert_eq!(got, vec![r]);
        assert_eq!(s0.counters(1).expect("a").tx_packets, 1);
        assert_eq!(s1.counters(2).expect("b").rx_packets, 1);
        assert!(!s0.detach(2), "engine 0 does not serve port 2");
        assert!(s1.detach(2));
    }
}
