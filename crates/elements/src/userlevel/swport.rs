//! Switch ports as network interfaces.
//!
//! Under `pronto run --switch SOCKET`, `FromDevice(eth0)` and
//! `ToDevice(eth0)` name the middlebox's virtual interface `eth0`: a port
//! of pronto's shared-memory switch (`pronto switch`), asked for over the
//! switch's control socket as `INSTANCE/eth0`. A `FromDevice` and a
//! `ToDevice` naming the same interface share one port, as they share one
//! device in Click. So one configuration runs unchanged against a Linux
//! interface or on the switch.
//!
//! Receiving copies each frame out of the port's shared slot into a pool
//! packet, once (the switch cannot change it afterwards); sending copies the
//! packet into one of the port's slots and publishes a batch at a time.
//!
//! In a sandboxed instance the daemon hands the interfaces' port memory
//! over instead ([`give_port`]); the configuration then names only those
//! interfaces, and a port's slots are packets themselves (a
//! [`PortPool`]): a frame the switch delivers becomes a packet where it
//! lies, and a packet received on a port and sent out of the same port
//! goes as its slot, with no copy either way. A frame is copied into the
//! router's pool only when the port has no free slot to lend in its
//! place (the configuration holds them: a queue), so the port keeps
//! receiving; a packet of another pool is copied into a free slot to be
//! sent. The switch is trusted not to write a slot it has handed over
//! (docs/threat-model.md).
//!
//! The registry of open ports is process-wide, so a `FromDevice(eth0)`
//! on one thread of `pronto run --threads N` and a `ToDevice(eth0)` on
//! another share one port behind a mutex: receiving locks it once per
//! batch, sending once per frame (`ToDevice` hands frames over one at a
//! time) and once per flush; on one thread the lock is never contended.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use pronto_netdev::{RxDevice, RxStats, Sent, TxDevice};
use pronto_packet::{Batch, Packet, Pool, PortPool};
use pronto_switch::layout::{MAX_FRAME, MIN_FRAME, RX_OFFSET};
use pronto_switch::Peer;

/// Where a process's interfaces attach, when they are switch ports.
#[derive(Clone, Debug)]
pub struct SwitchAttach {
    /// The switch's control socket.
    pub socket: PathBuf,
    /// This middlebox's name: its ports are `INSTANCE/IFNAME`.
    pub instance: String,
    /// MAC addresses to route to interfaces (`IFNAME`, MAC): the switch
    /// sends frames for them to that port (a static entry).
    pub macs: Vec<(String, [u8; 6])>,
}

static SWITCH: Mutex<Option<SwitchAttach>> = Mutex::new(None);

/// Makes every `FromDevice`/`ToDevice` configured after this call in
/// this process open switch ports (`Some`) or Linux interfaces (`None`).
pub fn set_switch(attach: Option<SwitchAttach>) {
    if let Ok(mut s) = SWITCH.lock() {
        *s = attach;
    }
}

fn current() -> Option<SwitchAttach> {
    SWITCH.lock().ok().and_then(|s| s.clone())
}

static SANDBOXED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Marks this process as a sandboxed instance: its interfaces are only
/// ever the ports the daemon hands over.
pub fn set_sandboxed() {
    SANDBOXED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Whether this process is a sandboxed instance ([`set_sandboxed`]).
pub fn sandboxed() -> bool {
    SANDBOXED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Whether interfaces are switch ports in this process (`pronto run
/// --switch`, or a sandboxed instance).
pub fn ports_in_use() -> bool {
    SANDBOXED.load(std::sync::atomic::Ordering::Relaxed)
        || current().is_some()
        || GIVEN
            .lock()
            .map(|g| g.as_ref().is_some_and(|m| !m.is_empty()))
            .unwrap_or(true)
}

/// One attached port, shared by the elements naming its interface.
struct Port {
    peer: Peer,
    /// The port's slots as packets (a port handed over by the daemon:
    /// one router thread uses it).
    zc: Option<PortPool>,
    /// Keeps the port attached; the switch detaches it when this closes
    /// (`None`: a port handed over by the daemon, which detaches it).
    _conn: Option<UnixStream>,
}

/// Ports handed to this process by the daemon (a sandboxed instance has
/// no way to reach the switch's socket: its interfaces' port memory and
/// doorbells arrive over its control socket), by interface name. Held
/// strongly: they outlive reconfigurations, which find them again.
static GIVEN: Mutex<Option<HashMap<String, Arc<Mutex<Port>>>>> = Mutex::new(None);

/// Makes `shm` this process's interface `ifname`: from now on every
/// `FromDevice`/`ToDevice` names one of the given interfaces (and only
/// those).
pub fn give_port(ifname: &str, shm: pronto_switch::PortShm) -> Result<(), String> {
    let lent = lend(shm.geometry);
    let region = shm.region.clone();
    let mut peer = Peer::new(shm, lent).map_err(|e| format!("{ifname}: {e}"))?;
    let zc = peer.hand_slots_over().and_then(|(off, _)| {
        let g = peer.geometry();
        PortPool::over_region(region, off, g.slots, peer.lent_at_start())
    });
    if zc.is_none() {
        return Err(format!(
            "{ifname}: the port's slots do not lie in its shared region"
        ));
    }
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let given = given.get_or_insert_with(HashMap::new);
    if given.contains_key(ifname) {
        return Err(format!("interface {ifname} was already given"));
    }
    given.insert(
        ifname.to_string(),
        Arc::new(Mutex::new(Port {
            peer,
            zc,
            _conn: None,
        })),
    );
    Ok(())
}

/// A given port for `ifname`, if ports were given at all.
fn given(ifname: &str) -> Option<Result<Arc<Mutex<Port>>, String>> {
    let given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    let given = given.as_ref()?;
    Some(match given.get(ifname) {
        Some(p) => Ok(p.clone()),
        None => {
            let mut names: Vec<&str> = given.keys().map(String::as_str).collect();
            names.sort_unstable();
            Err(format!(
                "{ifname}: this instance has no interface {ifname} (its interfaces: {})",
                names.join(", ")
            ))
        }
    })
}

impl Drop for Port {
    fn drop(&mut self) {
        // Frames still on the ring when the connection closes are lost
        // with the port: give the switch a moment to take them.
        self.peer.drain(std::time::Duration::from_millis(200));
    }
}

/// Ports attached so far, by interface name (weak: a port detaches when
/// the last element using it goes).
static OPEN: Mutex<Option<HashMap<String, Weak<Mutex<Port>>>>> = Mutex::new(None);

/// Locks a port. A thread that panicked while holding it left the port's
/// rings consistent (every ring update is one published position), so a
/// poisoned lock is used as is.
fn lock(port: &Mutex<Port>) -> MutexGuard<'_, Port> {
    port.lock().unwrap_or_else(|e| e.into_inner())
}

/// Half of a port's slots are lent to the switch for receiving (at most
/// a ring's worth), the rest send: a port's receive buffering is set by
/// the switch's `--slots` and `--ring`.
fn lend(g: pronto_switch::Geometry) -> u32 {
    (g.slots / 2).max(1).min(g.ring)
}

/// A shared port and a descriptor of its doorbell.
type PortAndBell = (Arc<Mutex<Port>>, OwnedFd);

/// The port for `ifname` when interfaces are switch ports (attaching it
/// on first use), `Ok(None)` when they are Linux interfaces.
fn port(ifname: &str) -> Result<Option<PortAndBell>, String> {
    if let Some(p) = given(ifname) {
        let port = p?;
        let bell = doorbell(ifname, &port)?;
        return Ok(Some((port, bell)));
    }
    let Some(sw) = current() else {
        return Ok(None);
    };
    // Held across the attach, so that two threads configuring the two
    // ends of one interface at once attach it once.
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    let open = open.get_or_insert_with(HashMap::new);
    let existing = open.get(ifname).and_then(Weak::upgrade);
    let port = match existing {
        Some(p) => p,
        None => {
            let name = format!("{}/{ifname}", sw.instance);
            let mac = sw.macs.iter().find(|(i, _)| i == ifname).map(|(_, m)| *m);
            let a = pronto_switch::control::attach(&sw.socket, &name, mac).map_err(|e| {
                let hint = if e.to_string().contains("already attached") {
                    " (another middlebox has this name: give this one another with --name)"
                } else {
                    ""
                };
                format!("{ifname}: {e}{hint}")
            })?;
            let lent = lend(a.shm.geometry);
            let peer = Peer::new(a.shm, lent).map_err(|e| format!("{ifname}: {e}"))?;
            let p = Arc::new(Mutex::new(Port {
                peer,
                zc: None,
                _conn: Some(a.conn),
            }));
            open.insert(ifname.to_string(), Arc::downgrade(&p));
            p
        }
    };
    let bell = doorbell(ifname, &port)?;
    Ok(Some((port, bell)))
}

/// A descriptor of `port`'s doorbell to the peer (the element polls it).
fn doorbell(ifname: &str, port: &Mutex<Port>) -> Result<OwnedFd, String> {
    lock(port)
        .peer
        .bell()
        .dup_fd()
        .map_err(|e| format!("{ifname}: cannot duplicate the port's doorbell: {e}"))
}

/// Receiving end of a switch port.
pub struct SwRx {
    port: Arc<Mutex<Port>>,
    bell: OwnedFd,
    stats: RxStats,
    asleep: bool,
}

impl SwRx {
    fn recv(&mut self, pool: &Pool, batch: &mut Batch, max: usize, now: i64) -> usize {
        let mut port = lock(&self.port);
        if self.asleep {
            self.asleep = false;
            port.peer.woke();
        }
        let before = batch.len();
        let room = (before + max).min(pronto_packet::BATCH_MAX) - before;
        let stats = &mut self.stats;
        let Port { peer, zc, .. } = &mut *port;
        if let Some(zc) = zc.as_ref().filter(|z| z.charge_to(pool)) {
            recv_in_place(peer, zc, pool, batch, room, now, stats);
            return batch.len() - before;
        }
        // Each frame is copied once, from its slot straight into a pool
        // packet (which the switch cannot change afterwards).
        peer.recv_frames(room, |frame| {
            if frame.len() > pronto_packet::MAX_PACKET {
                stats.oversize += 1;
                return;
            }
            copy_in(&frame, pool, batch, now, stats);
        });
        batch.len() - before
    }
}

/// Copies `frame` (at most `MAX_PACKET` bytes) into a packet of `pool`
/// at the end of `batch`, counting it, or the allocation that failed.
#[inline]
fn copy_in(
    frame: &pronto_switch::Frame<'_>,
    pool: &Pool,
    batch: &mut Batch,
    now: i64,
    stats: &mut RxStats,
) {
    match pool.alloc_frame_with(frame.len(), now, |d| frame.copy_to(d)) {
        Some(p) => {
            if batch.push(p).is_ok() {
                stats.packets += 1;
            } else {
                stats.nomem += 1;
            }
        }
        None => stats.nomem += 1,
    }
}

/// Receives up to `room` frames of a port whose slots are packets: each
/// frame stays where it lies and becomes a packet when the port has a
/// free slot to lend the switch in its place; otherwise (the
/// configuration holds every slot) it is copied into `pool`'s packet and
/// its own slot is lent again, so the switch always has the same number
/// of slots to write.
fn recv_in_place(
    peer: &mut Peer,
    zc: &PortPool,
    pool: &Pool,
    batch: &mut Batch,
    room: usize,
    now: i64,
    stats: &mut RxStats,
) {
    // Slots the switch has sent and handed back are free again.
    peer.take_returned(|s| {
        zc.returned(s);
    });
    let reserve = send_reserve(peer.geometry(), peer.lent_at_start());
    let mut lend = [0u32; 64];
    let mut n = 0;
    peer.recv_in_place(room, |f| {
        let frame = match f {
            Ok(frame) => frame,
            // A bad descriptor of a lent slot: lend the slot again.
            Err(slot) => {
                if zc.is_lent(slot) {
                    lend[n] = slot;
                    n += 1;
                }
                return;
            }
        };
        let slot = frame.slot();
        if !zc.is_lent(slot) {
            // The switch wrote a slot it was not lent: never a packet.
            stats.bad += 1;
            return;
        }
        if frame.len() > pronto_packet::MAX_PACKET {
            stats.oversize += 1;
            lend[n] = slot;
            n += 1;
            return;
        }
        // Stay above the reserve: a packet of the router's pool sent out
        // of this port needs a free slot to be copied into, so the
        // configuration may hold only so many of the port's slots.
        let other = if zc.free_slots() > reserve {
            zc.lend()
        } else {
            None
        };
        if let Some(other) = other {
            match zc.receive(slot, frame.offset_in_slot(), frame.len(), now) {
                Some(p) => {
                    lend[n] = other;
                    n += 1;
                    if batch.push(p).is_ok() {
                        stats.packets += 1;
                        stats.in_place += 1;
                    } else {
                        stats.nomem += 1;
                    }
                }
                None => {
                    // Outside the slot's buffer (checked by the peer
                    // already): lend the slot again, keep the other.
                    zc.unlend(other);
                    stats.bad += 1;
                    lend[n] = slot;
                    n += 1;
                }
            }
            return;
        }
        lend[n] = slot;
        n += 1;
        copy_in(&frame, pool, batch, now, stats);
    });
    let k = peer.lend(&lend[..n]);
    for &s in &lend[k..n] {
        zc.unlend(s);
    }
}

/// Free slots a port whose slots are packets keeps for copies out (of
/// packets from the router's pool): a quarter of the slots it does not
/// lend, at most 32 (a burst), at least 1; frames arriving when no more
/// are free are copied in instead of held where they lie.
fn send_reserve(g: pronto_switch::Geometry, lent: u32) -> usize {
    ((g.slots.saturating_sub(lent) / 4) as usize).clamp(1, 32)
}

/// Copies `frame` into a free slot of a port whose slots are packets and
/// stages it (flushing and taking back what the switch returned when no
/// slot is free); false if none is, or the frame's length is not one the
/// switch moves.
fn copy_out(peer: &mut Peer, zc: &PortPool, frame: &[u8]) -> bool {
    if !(MIN_FRAME as usize..=MAX_FRAME as usize).contains(&frame.len()) {
        // Counted by the peer, as a copying port counts it.
        return peer.stage(0, RX_OFFSET as usize, frame.len());
    }
    let slot = match zc.take_for_send() {
        Some(s) => s,
        None => {
            peer.flush();
            peer.take_returned(|s| {
                zc.returned(s);
            });
            match zc.take_for_send() {
                Some(s) => s,
                None => return false,
            }
        }
    };
    if peer.write_slot(slot, frame) && peer.stage(slot, RX_OFFSET as usize, frame.len()) {
        return true;
    }
    zc.returned(slot);
    false
}

/// Where a `FromDevice` receives from.
pub enum RxBackend {
    /// A Linux interface.
    Dev(RxDevice),
    /// A switch port.
    Switch(SwRx),
}

impl RxBackend {
    /// Opens `ifname`: a switch port under `pronto run --switch`, else a
    /// Linux interface with `open`.
    pub fn open(
        ifname: &str,
        open: impl FnOnce() -> Result<RxDevice, String>,
    ) -> Result<RxBackend, String> {
        match port(ifname)? {
            Some((port, bell)) => Ok(RxBackend::Switch(SwRx {
                port,
                bell,
                stats: RxStats::default(),
                asleep: false,
            })),
            None => open().map(RxBackend::Dev),
        }
    }

    /// True for a switch port.
    pub fn is_switch(&self) -> bool {
        matches!(self, RxBackend::Switch(_))
    }

    /// Receives up to `max` packets into `batch` without blocking.
    pub fn recv(&mut self, pool: &Pool, batch: &mut Batch, max: usize, now: i64) -> usize {
        match self {
            RxBackend::Dev(d) => d.recv(pool, batch, max, now),
            RxBackend::Switch(s) => s.recv(pool, batch, max, now),
        }
    }

    /// Called before the task reports itself idle: a switch port asks to
    /// be woken by its doorbell, and says false if frames already wait.
    pub fn prepare_idle(&mut self) -> bool {
        match self {
            RxBackend::Dev(_) => true,
            RxBackend::Switch(s) => {
                if s.asleep {
                    return true;
                }
                let ok = lock(&s.port).peer.prepare_sleep();
                s.asleep = ok;
                ok
            }
        }
    }

    /// What to poll for readability while idle.
    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            RxBackend::Dev(d) => d.fd(),
            RxBackend::Switch(s) => s.bell.as_fd(),
        }
    }

    /// Receive counters.
    pub fn stats(&self) -> &RxStats {
        match self {
            RxBackend::Dev(d) => d.stats(),
            RxBackend::Switch(s) => &s.stats,
        }
    }

    /// Zeroes the receive counters.
    pub fn reset_stats(&mut self) {
        match self {
            RxBackend::Dev(d) => d.reset_stats(),
            RxBackend::Switch(s) => s.stats = RxStats::default(),
        }
    }

    /// Frames the kernel dropped since the last call (devices only).
    pub fn take_kernel_drops(&self) -> Option<u64> {
        match self {
            RxBackend::Dev(d) => d.take_kernel_drops(),
            RxBackend::Switch(_) => None,
        }
    }
}

/// Where a `ToDevice` sends to.
pub enum TxBackend {
    /// A Linux interface.
    Dev(TxDevice),
    /// A switch port.
    Switch(SwTx),
}

/// Sending end of a switch port.
pub struct SwTx {
    port: Arc<Mutex<Port>>,
    bell: OwnedFd,
    /// Frames sent as they lay in the port's slots.
    in_place: u64,
}

impl TxBackend {
    /// Opens `ifname`: a switch port under `pronto run --switch`, else a
    /// Linux interface with `open`.
    pub fn open(
        ifname: &str,
        open: impl FnOnce() -> Result<TxDevice, String>,
    ) -> Result<TxBackend, String> {
        match port(ifname)? {
            Some((port, bell)) => Ok(TxBackend::Switch(SwTx {
                port,
                bell,
                in_place: 0,
            })),
            None => open().map(TxBackend::Dev),
        }
    }

    /// True for a switch port.
    pub fn is_switch(&self) -> bool {
        matches!(self, TxBackend::Switch(_))
    }

    /// Sends (or queues until [`TxBackend::flush`]) one frame.
    pub fn send(&mut self, data: &[u8]) -> Sent {
        match self {
            TxBackend::Dev(d) => d.send(data),
            TxBackend::Switch(t) => {
                let mut p = lock(&t.port);
                let Port { peer, zc, .. } = &mut *p;
                let ok = match zc {
                    Some(zc) => copy_out(peer, zc, data),
                    None => peer.queue(data),
                };
                if ok {
                    Sent::Ok
                } else if (MIN_FRAME as usize..=MAX_FRAME as usize).contains(&data.len()) {
                    Sent::Full
                } else {
                    Sent::Failed
                }
            }
        }
    }

    /// Sends every packet of `batch`, in order (a frame that finds the
    /// ring full has it handed over and is tried once more), then hands
    /// them over; `done` gets each packet and whether it went. A switch
    /// port is locked once for the batch, not once a frame: a locked
    /// instruction waits for the stores before it, so one per frame would
    /// make each frame's copy wait for the one before.
    ///
    /// With `consume`, a packet that lives in the port's own slots (a
    /// sandboxed instance's port) is sent as it lies, and `done` gets
    /// `None` for it: the packet is gone to the switch.
    pub fn send_batch(
        &mut self,
        batch: &mut Batch,
        consume: bool,
        mut done: impl FnMut(Option<Packet>, bool),
    ) {
        match self {
            TxBackend::Dev(d) => {
                for p in batch.drain() {
                    let mut r = d.send(p.data());
                    if r == Sent::Full {
                        d.flush();
                        r = d.send(p.data());
                    }
                    done(Some(p), r == Sent::Ok);
                }
                d.flush();
            }
            TxBackend::Switch(t) => {
                let mut port = lock(&t.port);
                let Port { peer, zc, .. } = &mut *port;
                if let Some(zc) = zc {
                    peer.take_returned(|s| {
                        zc.returned(s);
                    });
                    for p in batch.drain() {
                        let len = p.len();
                        let p = if consume
                            && (MIN_FRAME as usize..=MAX_FRAME as usize).contains(&len)
                        {
                            match zc.send(p) {
                                Ok((slot, off, len)) => {
                                    let ok = peer.stage(slot, off, len);
                                    if ok {
                                        t.in_place += 1;
                                    } else {
                                        zc.returned(slot);
                                    }
                                    done(None, ok);
                                    continue;
                                }
                                Err(p) => p,
                            }
                        } else {
                            p
                        };
                        let ok = copy_out(peer, zc, p.data());
                        done(Some(p), ok);
                    }
                    peer.flush();
                    return;
                }
                for p in batch.drain() {
                    let mut ok = peer.queue(p.data());
                    let len = p.data().len();
                    if !ok && (MIN_FRAME as usize..=MAX_FRAME as usize).contains(&len) {
                        peer.flush();
                        ok = peer.queue(p.data());
                    }
                    done(Some(p), ok);
                }
                peer.flush();
            }
        }
    }

    /// Frames sent as they lay in the port's slots, without a copy.
    pub fn sent_in_place(&self) -> u64 {
        match self {
            TxBackend::Dev(_) => 0,
            TxBackend::Switch(t) => t.in_place,
        }
    }

    /// Hands queued frames over.
    pub fn flush(&mut self) {
        match self {
            TxBackend::Dev(d) => d.flush(),
            TxBackend::Switch(t) => lock(&t.port).peer.flush(),
        }
    }

    /// How many of `max` frames could be sent now.
    pub fn room(&mut self, max: usize) -> usize {
        match self {
            TxBackend::Dev(d) => d.room(max),
            TxBackend::Switch(t) => {
                let mut p = lock(&t.port);
                let Port { peer, zc, .. } = &mut *p;
                match zc {
                    // As a copying port: what its free slots take (the
                    // reserve keeps some free while the configuration
                    // holds the port's packets; one sent as it lies needs
                    // none, and frees its slot once the switch is done).
                    Some(zc) => {
                        peer.take_returned(|s| {
                            zc.returned(s);
                        });
                        peer.send_room().min(zc.free_slots()).min(max)
                    }
                    None => peer.free_slots().min(max),
                }
            }
        }
    }

    /// What to poll while the transmit side is full.
    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            TxBackend::Dev(d) => d.fd(),
            TxBackend::Switch(t) => t.bell.as_fd(),
        }
    }

    /// Send errors so far, and the last one (devices only).
    pub fn errors(&self) -> (u64, Option<&std::io::Error>) {
        match self {
            TxBackend::Dev(d) => (d.errors, d.last_error.as_ref()),
            TxBackend::Switch(_) => (0, None),
        }
    }
}
