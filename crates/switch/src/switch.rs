//! The switching engine.
//!
//! One thread services every port. Ports with traffic are *hot*: each
//! round takes up to [`BATCH`] frames from each hot port's rx ring, checks
//! each descriptor, looks the destination up, copies the frame into a slot
//! the destination lent on its fill ring, and queues it; after the batch
//! each destination's queue is published on its tx ring with one store,
//! and the sender's slots go back on its done ring with one more.
//!
//! A hot port that stays empty for [`PARK_AFTER`] polls is *parked*: its
//! rx ring's "consumer sleeping" flag is set, so its peer rings the
//! switch's doorbell on its next send, and the switch stops polling it.
//! When the whole switch has come up empty for [`IDLE_ROUNDS`] rounds
//! (spinning for the first [`SPIN_ROUNDS`], then yielding), every port is
//! parked at once. Doorbells are watched with one epoll set, checked without blocking
//! every [`EPOLL_EVERY`] rounds while some port is hot, and blocked on
//! when none is. A round's cost is thus proportional to the busy ports,
//! not to the attached ones, and an idle switch sleeps in `epoll_wait`.
//! Between a busy round and parking, empty rounds back off (spin, then
//! yield).
//!
//! Nothing here allocates per packet: descriptor batches, fill caches and
//! per-port output queues are fixed arrays, the dirty-port list and the
//! MAC table reserve their capacity up front.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pronto_ring::{Consumer, Desc, Doorbell, Producer};
use rustix::event::epoll;

use crate::layout::{
    Geometry, PortShm, RingId, MAX_FRAME, MIN_FRAME, RX_OFFSET, SLOT_RESERVED, SLOT_STRIDE,
};
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
/// Rounds between non-blocking doorbell checks while ports are hot.
pub const EPOLL_EVERY: u64 = 32;
/// The most ports a switch holds (port numbers are `u16`).
pub const MAX_PORTS: usize = 1 << 16;

const FILL_CACHE: usize = 64;
const CONTROL_KEY: u64 = u64::MAX;
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
    /// The CPU the switching thread is pinned to, if any.
    pub cpu: Option<usize>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            learning: true,
            aging: Duration::from_secs(300),
            table_size: 1 << 16,
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
    }
}

/// A port's counters, published by the switch thread after each batch
/// that touches the port.
#[derive(Default, Debug)]
pub struct PortStats {
    v: [AtomicU64; 10],
}

impl PortStats {
    fn publish(&self, c: &PortCounters) {
        let a = [
            c.rx_packets,
            c.rx_bytes,
            c.tx_packets,
            c.tx_bytes,
            c.drop_bad_desc,
            c.drop_bad_ring,
            c.drop_bad_fill,
            c.drop_no_route,
            c.drop_no_buffer,
            c.drop_ring_full,
        ];
        for (d, s) in self.v.iter().zip(a) {
            d.store(s, Ordering::Relaxed);
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
            drop_bad_ring: l(5),
            drop_bad_fill: l(6),
            drop_no_route: l(7),
            drop_no_buffer: l(8),
            drop_ring_full: l(9),
        }
    }
}

struct Port {
    id: u16,
    geometry: Geometry,
    shm: PortShm,
    rx: Consumer,
    fill: Consumer,
    tx: Producer,
    done: Producer,
    fill_cache: [Desc; FILL_CACHE],
    fill_n: usize,
    pending: [Desc; BATCH],
    pending_n: usize,
    tx_room: u32,
    dirty: bool,
    idle: u32,
    parked: bool,
    c: PortCounters,
    stats: Arc<PortStats>,
}

impl Port {
    fn new(id: u16, shm: PortShm) -> Result<Port, SwitchError> {
        let g = shm.geometry;
        let r = &shm.region;
        Ok(Port {
            id,
            geometry: g,
            rx: Consumer::attach_at(r.clone(), g.ring_offset(RingId::Rx), g.ring)
                .map_err(crate::layout::PortError::from)?,
            fill: Consumer::attach_at(r.clone(), g.ring_offset(RingId::Fill), g.ring)
                .map_err(crate::layout::PortError::from)?,
            tx: Producer::attach_at(r.clone(), g.ring_offset(RingId::Tx), g.ring)
                .map_err(crate::layout::PortError::from)?,
            done: Producer::attach_at(r.clone(), g.ring_offset(RingId::Done), g.ring)
                .map_err(crate::layout::PortError::from)?,
            shm,
            fill_cache: [Desc::default(); FILL_CACHE],
            fill_n: 0,
            pending: [Desc::default(); BATCH],
            pending_n: 0,
            tx_room: 0,
            dirty: false,
            idle: 0,
            parked: false,
            c: PortCounters::default(),
            stats: Arc::new(PortStats::default()),
        })
    }

    fn publish(&mut self) {
        self.c.drop_bad_ring = self.rx.faults().bad_position
            + self.fill.faults().bad_position
            + self.tx.faults().bad_position
            + self.done.faults().bad_position;
        self.stats.publish(&self.c);
    }

    /// Refills the slot cache from the fill ring; false if still empty.
    #[inline]
    fn refill(&mut self) -> bool {
        let k = self.fill.pop(&mut self.fill_cache);
        let slots = self.geometry.slots;
        let mut n = 0;
        for i in 0..k {
            let d = self.fill_cache[i];
            if d.slot < slots {
                self.fill_cache[n] = d;
                n += 1;
            } else {
                self.c.drop_bad_fill += 1;
            }
        }
        self.fill_n = n;
        n > 0
    }
}

/// Two distinct ports, one shared and one mutable.
#[inline]
fn pair(ports: &mut [Port], a: usize, b: usize) -> (&Port, &mut Port) {
    if a < b {
        let (x, y) = ports.split_at_mut(b);
        (&x[a], &mut y[0])
    } else {
        let (x, y) = ports.split_at_mut(a);
        (&y[0], &mut x[b])
    }
}

/// Copies one frame into `dst`'s next lent slot and queues it.
#[inline]
fn deliver(src: &Port, dst: &mut Port, at: usize, len: u16, dirty: &mut Vec<u32>, di: usize) {
    if !dst.dirty {
        dst.dirty = true;
        dst.tx_room = dst.tx.room(BATCH as u32);
        dirty.push(di as u32);
    }
    if dst.fill_n == 0 && !dst.refill() {
        dst.c.drop_no_buffer += 1;
        return;
    }
    if dst.pending_n as u32 >= dst.tx_room {
        dst.c.drop_ring_full += 1;
        return;
    }
    dst.fill_n -= 1;
    let slot = dst.fill_cache[dst.fill_n].slot;
    let to = dst.geometry.slot_offset(slot) + RX_OFFSET as usize;
    if !src
        .shm
        .region
        .copy_to(at, &dst.shm.region, to, len as usize)
    {
        // Unreachable with checked descriptors and slots; counted anyway.
        dst.c.drop_no_buffer += 1;
        dst.fill_n += 1;
        return;
    }
    dst.pending[dst.pending_n] = Desc::new(slot, RX_OFFSET, len);
    dst.pending_n += 1;
    dst.c.tx_packets += 1;
    dst.c.tx_bytes += len as u64;
}

enum Cmd {
    Attach(
        u16,
        PortShm,
        mpsc::SyncSender<Result<Arc<PortStats>, SwitchError>>,
    ),
    Detach(u16, mpsc::SyncSender<bool>),
    Static(Mac, u16),
    Stop,
}

/// Loop counters shared with the handle.
#[derive(Default, Debug)]
pub struct LoopStats {
    /// Rounds of the switching loop.
    pub rounds: AtomicU64,
    /// Times the loop blocked on the doorbells.
    pub sleeps: AtomicU64,
}

/// The switch: ports, MAC table, and the loop's state.
pub struct Switch {
    ports: Vec<Port>,
    index: Vec<u32>,
    hot: Vec<u32>,
    dirty: Vec<u32>,
    descs: [Desc; BATCH],
    table: MacTable,
    cfg: Config,
    epoll: rustix::fd::OwnedFd,
    start: Instant,
    now_ms: u32,
    last_expire: u32,
    rounds: u64,
    empty: u32,
    control: Option<(mpsc::Receiver<Cmd>, Arc<Doorbell>)>,
    loop_stats: Arc<LoopStats>,
    stop: bool,
}

impl Switch {
    /// An empty switch.
    pub fn new(cfg: Config) -> Result<Switch, SwitchError> {
        let aging = cfg.aging.as_millis().min(u32::MAX as u128 / 2) as u32;
        Ok(Switch {
            ports: Vec::new(),
            index: vec![0; MAX_PORTS],
            hot: Vec::new(),
            dirty: Vec::new(),
            descs: [Desc::default(); BATCH],
            table: MacTable::new(cfg.table_size, aging.max(1)),
            cfg,
            epoll: epoll::create(epoll::CreateFlags::CLOEXEC)?,
            start: Instant::now(),
            now_ms: 0,
            last_expire: 0,
            rounds: 0,
            empty: 0,
            control: None,
            loop_stats: Arc::new(LoopStats::default()),
            stop: false,
        })
    }

    /// Attaches `shm` as port `id`; returns its counters.
    pub fn attach(&mut self, id: u16, shm: PortShm) -> Result<Arc<PortStats>, SwitchError> {
        if self.index[id as usize] != 0 {
            return Err(SwitchError::PortTaken(id));
        }
        let port = Port::new(id, shm)?;
        epoll::add(
            &self.epoll,
            &*port.shm.to_switch,
            epoll::EventData::new_u64(id as u64),
            epoll::EventFlags::IN,
        )?;
        let stats = port.stats.clone();
        self.ports.push(port);
        let di = self.ports.len() - 1;
        self.index[id as usize] = di as u32 + 1;
        self.hot.push(di as u32);
        // Room for every port at once, so that the hot path never grows
        // these.
        self.dirty
            .reserve(self.ports.len().saturating_sub(self.dirty.len()));
        self.hot
            .reserve(self.ports.len().saturating_sub(self.hot.len()));
        Ok(stats)
    }

    /// Detaches port `id` (its MAC entries go too); false if not attached.
    pub fn detach(&mut self, id: u16) -> bool {
        let di = match self.index[id as usize] {
            0 => return false,
            n => (n - 1) as usize,
        };
        let last = self.ports.len() - 1;
        let port = self.ports.swap_remove(di);
        let _ = epoll::delete(&self.epoll, &*port.shm.to_switch);
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
        self.table.remove_port(id);
        true
    }

    /// Adds a static MAC → port entry.
    pub fn add_static(&mut self, m: [u8; 6], port: u16) -> bool {
        self.table.add_static(mac(&m), port)
    }

    /// Ports attached.
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
    /// number of descriptors taken.
    fn service(&mut self, s: usize) -> usize {
        let Switch {
            ports,
            descs,
            table,
            dirty,
            cfg,
            now_ms,
            ..
        } = self;
        let now = *now_ms;
        let src = &mut ports[s];
        let want = (src.done.room(BATCH as u32) as usize).min(BATCH);
        if want == 0 {
            return 0;
        }
        let n = src.rx.pop(&mut descs[..want]);
        if n == 0 {
            if src.rx.faults().bad_position > src.c.drop_bad_ring {
                src.publish();
            }
            return 0;
        }
        let g = src.geometry;
        let src_id = src.id;
        for d in &descs[..n] {
            let src = &mut ports[s];
            if d.len < MIN_FRAME
                || d.check(g.slots, SLOT_RESERVED as u32, SLOT_STRIDE, MAX_FRAME as u32)
                    .is_err()
            {
                src.c.drop_bad_desc += 1;
                continue;
            }
            let at = g.slot_offset(d.slot) + d.off as usize;
            let mut hdr = [0u8; 12];
            src.shm.region.read_bytes(at, &mut hdr);
            src.c.rx_packets += 1;
            src.c.rx_bytes += d.len as u64;
            let dst_mac = mac(&[hdr[0], hdr[1], hdr[2], hdr[3], hdr[4], hdr[5]]);
            let src_mac = mac(&[hdr[6], hdr[7], hdr[8], hdr[9], hdr[10], hdr[11]]);
            if cfg.learning && !is_group(src_mac) {
                table.learn(src_mac, src_id, now);
            }
            let target = if is_group(dst_mac) {
                None
            } else {
                table.lookup(dst_mac, now)
            };
            match target {
                Some(t) => {
                    let ti = self_index(&self.index, t);
                    match ti {
                        Some(ti) if ti != s => {
                            let (src, dst) = pair(ports, s, ti);
                            deliver(src, dst, at, d.len, dirty, ti);
                        }
                        _ => ports[s].c.drop_no_route += 1,
                    }
                }
                None => {
                    for ti in 0..ports.len() {
                        if ti != s {
                            let (src, dst) = pair(ports, s, ti);
                            deliver(src, dst, at, d.len, dirty, ti);
                        }
                    }
                }
            }
        }
        for &t in dirty.iter() {
            let p = &mut ports[t as usize];
            if p.pending_n > 0 {
                p.tx.push(&p.pending[..p.pending_n]);
                p.pending_n = 0;
                if p.tx.consumer_wants_wakeup() {
                    let _ = p.shm.to_peer.ring();
                }
            }
            p.dirty = false;
            p.publish();
        }
        dirty.clear();
        let src = &mut ports[s];
        src.done.push(&descs[..n]);
        if src.done.consumer_wants_wakeup() {
            let _ = src.shm.to_peer.ring();
        }
        src.publish();
        n
    }

    /// One round over the hot ports; returns descriptors taken.
    pub fn poll_once(&mut self) -> usize {
        self.rounds += 1;
        if self.rounds.is_multiple_of(64) {
            self.tick();
        }
        let mut moved = 0;
        let mut i = 0;
        while i < self.hot.len() {
            let p = self.hot[i] as usize;
            let k = self.service(p);
            moved += k;
            let port = &mut self.ports[p];
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
        self.loop_stats.rounds.store(self.rounds, Ordering::Relaxed);
        moved
    }

    /// Parks every hot port that is still empty (the whole switch has
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
        self.now_ms = self.start.elapsed().as_millis() as u32;
        if self.cfg.learning && self.now_ms.wrapping_sub(self.last_expire) >= 1000 {
            self.last_expire = self.now_ms;
            self.table.expire(self.now_ms);
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
            &self.epoll,
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
                p.shm.to_switch.clear();
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
                Cmd::Detach(id, reply) => {
                    let _ = reply.send(self.detach(id));
                }
                Cmd::Static(m, port) => {
                    self.table.add_static(m, port);
                }
                Cmd::Stop => self.stop = true,
            }
        }
        self.control = Some((rx, bell));
    }

    /// Runs until stopped through the control channel: polls while busy,
    /// backs off when rounds come up empty, sleeps on the doorbells when
    /// every port is parked.
    fn run(&mut self) -> std::io::Result<()> {
        // Event records hold a pointer-sized union (not `Send`), so the
        // buffer lives on the switch thread's stack frame.
        let mut events = Vec::with_capacity(EVENTS);
        while !self.stop {
            let moved = self.poll_once();
            if self.hot.is_empty() {
                let timeout = self.cfg.learning.then_some(Duration::from_secs(1));
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
            } else {
                self.empty = self.empty.saturating_add(1);
                if self.empty < SPIN_ROUNDS {
                    std::hint::spin_loop();
                } else if self.empty < IDLE_ROUNDS {
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

/// A switch running on its own thread, driven through a control channel.
pub struct SwitchHandle {
    tx: mpsc::Sender<Cmd>,
    bell: Arc<Doorbell>,
    loop_stats: Arc<LoopStats>,
    stats: Mutex<std::collections::HashMap<u16, Arc<PortStats>>>,
    thread: Option<std::thread::JoinHandle<std::io::Result<()>>>,
}

impl SwitchHandle {
    /// Starts a switch thread.
    pub fn spawn(cfg: Config) -> Result<SwitchHandle, SwitchError> {
        let mut sw = Switch::new(cfg)?;
        let bell = Arc::new(Doorbell::new()?);
        epoll::add(
            &sw.epoll,
            &*bell,
            epoll::EventData::new_u64(CONTROL_KEY),
            epoll::EventFlags::IN,
        )?;
        let (tx, rx) = mpsc::channel();
        sw.control = Some((rx, bell.clone()));
        let loop_stats = sw.loop_stats.clone();
        let cpu = cfg.cpu;
        let thread = std::thread::Builder::new()
            .name("pronto-switch".into())
            .spawn(move || {
                if let Some(c) = cpu {
                    crate::pin_current_thread(c)?;
                }
                sw.run()
            })?;
        Ok(SwitchHandle {
            tx,
            bell,
            loop_stats,
            stats: Mutex::new(Default::default()),
            thread: Some(thread),
        })
    }

    fn send(&self, cmd: Cmd) -> Result<(), SwitchError> {
        self.tx.send(cmd).map_err(|_| SwitchError::Stopped)?;
        self.bell.ring()?;
        Ok(())
    }

    /// Attaches `shm` as port `id` while the switch runs.
    pub fn attach(&self, id: u16, shm: PortShm) -> Result<(), SwitchError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(Cmd::Attach(id, shm, tx))?;
        let stats = rx.recv().map_err(|_| SwitchError::Stopped)??;
        self.stats
            .lock()
            .map_err(|_| SwitchError::Stopped)?
            .insert(id, stats);
        Ok(())
    }

    /// Detaches port `id` while the switch runs.
    pub fn detach(&self, id: u16) -> Result<(), SwitchError> {
        let (tx, rx) = mpsc::sync_channel(1);
        self.send(Cmd::Detach(id, tx))?;
        if rx.recv().map_err(|_| SwitchError::Stopped)? {
            Ok(())
        } else {
            Err(SwitchError::NoPort(id))
        }
    }

    /// Adds a static MAC → port entry.
    pub fn add_static(&self, m: [u8; 6], port: u16) -> Result<(), SwitchError> {
        self.send(Cmd::Static(mac(&m), port))
    }

    /// Counters of port `id` (kept after a detach, frozen).
    pub fn counters(&self, id: u16) -> Option<PortCounters> {
        self.stats.lock().ok()?.get(&id).map(|s| s.get())
    }

    /// Rounds the loop has run.
    pub fn rounds(&self) -> u64 {
        self.loop_stats.rounds.load(Ordering::Relaxed)
    }

    /// Times the loop blocked on the doorbells.
    pub fn sleeps(&self) -> u64 {
        self.loop_stats.sleeps.load(Ordering::Relaxed)
    }

    /// Stops the switch thread and waits for it.
    pub fn stop(mut self) -> Result<(), SwitchError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), SwitchError> {
        let Some(t) = self.thread.take() else {
            return Ok(());
        };
        let _ = self.send(Cmd::Stop);
        match t.join() {
            Ok(r) => Ok(r?),
            Err(_) => Err(SwitchError::Stopped),
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

    fn frame(dst: [u8; 6], src: [u8; 6], fill: u8, len: usize) -> Vec<u8> {
        let mut f = vec![fill; len];
        f[..6].copy_from_slice(&dst);
        f[6..12].copy_from_slice(&src);
        f
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
}
