//! A port's peer end: sends frames from its own slots, lends slots to the
//! switch for receiving, and sleeps on its doorbell.

use std::sync::Arc;
use std::time::Duration;

use pronto_ring::{Consumer, Desc, Doorbell, Producer};

use crate::layout::{
    Geometry, PortError, PortShm, RingId, MAX_FRAME, MIN_FRAME, RX_OFFSET, SLOT_RESERVED,
    SLOT_STRIDE,
};

const BATCH: usize = 64;

/// Counters of one peer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerCounters {
    /// Frames queued to the switch.
    pub sent: u64,
    /// Frames received from the switch.
    pub received: u64,
    /// Frames not sent: no free slot or no ring room.
    pub no_room: u64,
    /// Frames not sent: length outside `MIN_FRAME..=MAX_FRAME`.
    pub bad_length: u64,
    /// Descriptors from the switch that failed the bounds check.
    pub bad_desc: u64,
}

/// The peer end of a port.
pub struct Peer {
    shm: PortShm,
    /// The switch's doorbell (rung when it sleeps).
    to_switch: Arc<Doorbell>,
    /// This peer's doorbell (the switch rings it when this peer sleeps).
    bell: Arc<Doorbell>,
    rx: Producer,
    fill: Producer,
    tx: Consumer,
    done: Consumer,
    free: Vec<u32>,
    descs: [Desc; BATCH],
    /// Frames written by [`Peer::queue`], not yet on the rx ring.
    staged: [Desc; BATCH],
    nstaged: usize,
    /// Where [`Peer::recv_max`] copies each frame (made once; taken out
    /// of the peer for the call and put back).
    buf: Vec<u8>,
    counters: PeerCounters,
    /// Slots lent to the switch when the peer was made (`0..lent`).
    lent: u32,
    /// The slots are a packet pool's ([`Peer::hand_slots_over`]): slots
    /// the switch hands back wait in `returned` for it.
    pool_mode: bool,
    returned: Vec<u32>,
}

/// A frame the switch delivered, still in its shared slot (see
/// [`Peer::recv_frames`]). The switch may not write a slot it has handed
/// over, but nothing stops a misbehaving one: the frame is only ever
/// copied out, never read in place.
pub struct Frame<'a> {
    shm: &'a PortShm,
    /// The slot, and the frame's byte offset in it.
    slot: u32,
    in_slot: usize,
    /// Byte offset of the frame in the region (checked against the
    /// port's geometry: inside a slot, past its reserved bytes).
    off: usize,
    len: usize,
}

impl Frame<'_> {
    /// The frame's length in bytes: 1 to [`MAX_FRAME`] (checked; the
    /// switch only sends frames of [`MIN_FRAME`] or more, which is not).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a frame of no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot the frame lies in.
    #[inline]
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The frame's byte offset in its slot (checked: past the slot's
    /// reserved bytes, the frame inside the slot).
    #[inline]
    pub fn offset_in_slot(&self) -> usize {
        self.in_slot
    }

    /// Copies the frame into the first [`Frame::len`] bytes of `dst`
    /// (which must be at least that long).
    #[inline]
    pub fn copy_to(&self, dst: &mut [u8]) {
        let copied = self.shm.region.read_bytes(self.off, &mut dst[..self.len]);
        // `recv_frames` made the frame only for a range inside the region.
        debug_assert!(copied);
    }
}

impl Peer {
    /// The peer end of `shm`, lending its first `lend` slots (at most the
    /// ring capacity) to the switch for receiving and keeping the rest for
    /// sending. `shm` must hold both doorbells (not the switch's copy of
    /// a port).
    pub fn new(shm: PortShm, lend: u32) -> Result<Peer, PortError> {
        let to_switch = shm
            .to_switch
            .clone()
            .ok_or(PortError::NoDoorbell("switch's doorbell"))?;
        let bell = shm
            .to_peer
            .doorbell()
            .cloned()
            .ok_or(PortError::NoDoorbell("peer's doorbell"))?;
        let g = shm.geometry;
        let lend = lend.min(g.ring).min(g.slots);
        let r = &shm.region;
        let mut free = Vec::with_capacity(g.slots as usize);
        free.extend((lend..g.slots).rev());
        let mut p = Peer {
            rx: Producer::attach_at(r.clone(), g.ring_offset(RingId::Rx), g.ring)?,
            fill: Producer::attach_at(r.clone(), g.ring_offset(RingId::Fill), g.ring)?,
            tx: Consumer::attach_at(r.clone(), g.ring_offset(RingId::Tx), g.ring)?,
            done: Consumer::attach_at(r.clone(), g.ring_offset(RingId::Done), g.ring)?,
            free,
            descs: [Desc::default(); BATCH],
            staged: [Desc::default(); BATCH],
            nstaged: 0,
            buf: vec![0; SLOT_STRIDE as usize],
            counters: PeerCounters::default(),
            lent: lend,
            pool_mode: false,
            returned: Vec::new(),
            shm,
            to_switch,
            bell,
        };
        for start in (0..lend).step_by(BATCH) {
            let end = (start + BATCH as u32).min(lend);
            for (d, s) in p.descs.iter_mut().zip(start..end) {
                *d = Desc::new(s, RX_OFFSET, 0);
            }
            p.fill.push(&p.descs[..(end - start) as usize]);
        }
        Ok(p)
    }

    /// The port's geometry.
    pub fn geometry(&self) -> Geometry {
        self.shm.geometry
    }

    /// The port's shared memory.
    pub fn shm(&self) -> &PortShm {
        &self.shm
    }

    /// Counters so far.
    pub fn counters(&self) -> PeerCounters {
        self.counters
    }

    /// Slots free for sending (after taking back the ones the switch is
    /// done with).
    pub fn free_slots(&mut self) -> usize {
        self.reclaim();
        self.free.len()
    }

    fn reclaim(&mut self) {
        let slots = self.shm.geometry.slots;
        loop {
            let k = self.done.pop(&mut self.descs);
            let back = if self.pool_mode {
                &mut self.returned
            } else {
                &mut self.free
            };
            for d in &self.descs[..k] {
                // A switch returning a slot it was never given is refused.
                if d.slot < slots && back.len() < back.capacity() {
                    back.push(d.slot);
                }
            }
            if k < BATCH {
                break;
            }
        }
    }

    /// Sends `frames` (each copied into a slot of this peer's pool), as
    /// many as there are slots and ring room for; returns how many went.
    pub fn send(&mut self, frames: &[&[u8]]) -> usize {
        self.send_iter(frames.iter().copied())
    }

    /// Sends each frame `frames` yields, like [`Peer::send`] (in ring
    /// batches of 64, with no allocation); returns how many went.
    pub fn send_iter<'a>(&mut self, frames: impl IntoIterator<Item = &'a [u8]>) -> usize {
        self.reclaim();
        let g = self.shm.geometry;
        let mut total = 0;
        let mut frames = frames.into_iter().peekable();
        while frames.peek().is_some() {
            // Copy only what the ring can take now: a frame copied into a
            // slot and then refused by a full ring is wasted work.
            let room = (self.rx.room(BATCH as u32) as usize).min(BATCH);
            let mut n = 0;
            for f in frames.by_ref().take(BATCH) {
                if !(MIN_FRAME as usize..=MAX_FRAME as usize).contains(&f.len()) {
                    self.counters.bad_length += 1;
                    continue;
                }
                if n == room {
                    self.counters.no_room += 1;
                    continue;
                }
                let Some(slot) = self.free.pop() else {
                    self.counters.no_room += 1;
                    continue;
                };
                self.shm
                    .region
                    .write_bytes(g.slot_offset(slot) + RX_OFFSET as usize, f);
                self.descs[n] = Desc::new(slot, RX_OFFSET, f.len() as u16);
                n += 1;
            }
            let k = self.rx.push(&self.descs[..n]);
            for d in &self.descs[k..n] {
                self.free.push(d.slot);
            }
            self.counters.no_room += (n - k) as u64;
            self.counters.sent += k as u64;
            total += k;
            if k > 0 && self.rx.consumer_wants_wakeup() {
                let _ = self.to_switch.ring();
            }
        }
        total
    }

    /// Copies `frame` into a free slot and stages it for the switch; it
    /// goes out at the next [`Peer::flush`] (or when 64 are staged).
    /// False when it cannot: length outside `MIN_FRAME..=MAX_FRAME`
    /// (counted in `bad_length`) or no free slot even after taking back
    /// the ones the switch is done with (not counted: the caller decides).
    pub fn queue(&mut self, frame: &[u8]) -> bool {
        if !(MIN_FRAME as usize..=MAX_FRAME as usize).contains(&frame.len()) {
            self.counters.bad_length += 1;
            return false;
        }
        if self.free.is_empty() {
            self.flush();
            self.reclaim();
        }
        let Some(slot) = self.free.pop() else {
            return false;
        };
        let g = self.shm.geometry;
        self.shm
            .region
            .write_bytes(g.slot_offset(slot) + RX_OFFSET as usize, frame);
        self.staged[self.nstaged] = Desc::new(slot, RX_OFFSET, frame.len() as u16);
        self.nstaged += 1;
        if self.nstaged == BATCH {
            self.flush();
        }
        true
    }

    /// Publishes the staged frames on the rx ring (one store) and rings
    /// the switch if it sleeps. Frames the ring has no room for are
    /// dropped and counted in `no_room`.
    pub fn flush(&mut self) {
        let n = self.nstaged;
        if n == 0 {
            return;
        }
        self.nstaged = 0;
        let k = self.rx.push(&self.staged[..n]);
        let back = if self.pool_mode {
            &mut self.returned
        } else {
            &mut self.free
        };
        for d in &self.staged[k..n] {
            back.push(d.slot);
        }
        self.counters.no_room += (n - k) as u64;
        self.counters.sent += k as u64;
        if k > 0 && self.rx.consumer_wants_wakeup() {
            let _ = self.to_switch.ring();
        }
    }

    /// Flushes staged frames and waits, at most `timeout`, until the
    /// switch has taken every frame sent (before a peer goes away: frames
    /// still on the ring when the port detaches are lost). True if it did.
    pub fn drain(&mut self, timeout: Duration) -> bool {
        self.flush();
        let end = std::time::Instant::now() + timeout;
        while self.rx.queued() > 0 {
            if std::time::Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        true
    }

    /// Writes `frame` into every slot this peer sends from, once, for
    /// [`Peer::send_written`] (benchmarks: a producer that, like a NIC
    /// writing by DMA, costs the switch's core nothing per byte).
    pub fn prefill(&mut self, frame: &[u8]) {
        self.reclaim();
        let g = self.shm.geometry;
        for &slot in &self.free {
            self.shm
                .region
                .write_bytes(g.slot_offset(slot) + RX_OFFSET as usize, frame);
        }
    }

    /// Sends up to `n` (at most 64) frames of `len` bytes whose bytes are
    /// already in their slots ([`Peer::prefill`]); returns how many went.
    pub fn send_written(&mut self, len: u16, n: usize) -> usize {
        self.reclaim();
        let room = (self.rx.room(BATCH as u32) as usize).min(n).min(BATCH);
        let mut k = 0;
        while k < room {
            let Some(slot) = self.free.pop() else { break };
            self.descs[k] = Desc::new(slot, RX_OFFSET, len);
            k += 1;
        }
        let sent = self.rx.push(&self.descs[..k]);
        for d in &self.descs[sent..k] {
            self.free.push(d.slot);
        }
        self.counters.sent += sent as u64;
        if sent > 0 && self.rx.consumer_wants_wakeup() {
            let _ = self.to_switch.ring();
        }
        sent
    }

    /// Pushes raw descriptors onto the port's rx ring, unchecked: for
    /// tests that play a hostile peer. Returns how many were queued.
    pub fn send_raw(&mut self, descs: &[Desc]) -> usize {
        let k = self.rx.push(descs);
        if k > 0 && self.rx.consumer_wants_wakeup() {
            let _ = self.to_switch.ring();
        }
        k
    }

    /// Pushes raw descriptors onto the port's fill ring, unchecked (for
    /// hostile-peer tests).
    pub fn fill_raw(&mut self, descs: &[Desc]) -> usize {
        self.fill.push(descs)
    }

    /// Receives up to 64 frames, calling `f` with each one's bytes (copied
    /// out of the shared slot, so that the switch cannot change them under
    /// `f`), and lends their slots back to the switch. Returns how many
    /// arrived.
    pub fn recv(&mut self, f: impl FnMut(&[u8])) -> usize {
        self.recv_max(BATCH, f)
    }

    /// Like [`Peer::recv`], taking at most `max` (at most 64) frames.
    pub fn recv_max(&mut self, max: usize, mut f: impl FnMut(&[u8])) -> usize {
        let mut buf = std::mem::take(&mut self.buf);
        let k = self.recv_frames(max, |frame| {
            let b = &mut buf[..frame.len()];
            frame.copy_to(b);
            f(b)
        });
        self.buf = buf;
        k
    }

    /// Receives up to `max` (at most 64) frames, calling `f` with each one
    /// still in its shared slot: `f` copies it once, straight to where it
    /// is wanted (a pool packet), where [`Peer::recv_max`] copies it into a
    /// buffer of the peer's first. Lends the slots back to the switch
    /// after the last call. Returns how many arrived.
    pub fn recv_frames(&mut self, max: usize, mut f: impl FnMut(Frame<'_>)) -> usize {
        let k = self.take_frames(max, |r| {
            if let Ok(frame) = r {
                f(frame)
            }
        });
        self.relend(k)
    }

    /// Pops up to `max` (at most 64) descriptors from the tx ring and
    /// calls `f` with each checked frame (`Ok`) or with the slot of a
    /// descriptor that failed the check (`Err`, counted in `bad_desc`; a
    /// slot outside the port is not passed on). The descriptors stay in
    /// `descs[..k]`; returns `k`.
    fn take_frames(&mut self, max: usize, mut f: impl FnMut(Result<Frame<'_>, u32>)) -> usize {
        let shm = &self.shm;
        let g = shm.geometry;
        let k = self.tx.pop(&mut self.descs[..max.min(BATCH)]);
        // The switch wrote these frames on its CPU: ask for every frame's
        // first line before reading the first (the region ignores an
        // offset outside it; the descriptors are checked below).
        for d in &self.descs[..k] {
            shm.region
                .prefetch(g.slot_offset(d.slot.min(g.slots)) + d.off as usize);
        }
        for d in &self.descs[..k] {
            let off = g.slot_offset(d.slot) + d.off as usize;
            // Inside the geometry, and so inside the region (`PortShm` maps
            // every slot of it); the second test keeps `Frame::copy_to`
            // infallible whatever the geometry claims.
            if d.check(g.slots, SLOT_RESERVED as u32, SLOT_STRIDE, MAX_FRAME as u32)
                .is_err()
                || off + d.len as usize > shm.region.len()
            {
                self.counters.bad_desc += 1;
                if d.slot < g.slots {
                    f(Err(d.slot));
                }
                continue;
            }
            f(Ok(Frame {
                shm,
                slot: d.slot,
                in_slot: d.off as usize,
                off,
                len: d.len as usize,
            }));
        }
        k
    }

    // ---- a port whose slots are a packet pool's --------------------------

    /// Gives up this peer's slots to a packet pool (`pronto_packet::PortPool`):
    /// from now on the slots `0..lent` ([`Peer::lent_at_start`]) are lent
    /// and the rest the pool's; the peer no longer keeps free slots, lends
    /// only what [`Peer::lend`] gives it, and keeps the slots the switch
    /// hands back for [`Peer::take_returned`]. Returns the first
    /// slot's offset in the region and the slots' total length (checked
    /// against the region).
    pub fn hand_slots_over(&mut self) -> Option<(usize, usize)> {
        let g = self.shm.geometry;
        let start = g.slot_offset(0);
        let len = g.slots as usize * SLOT_STRIDE as usize;
        if start + len > self.shm.region.len() {
            return None;
        }
        self.pool_mode = true;
        self.free.clear();
        self.returned = Vec::with_capacity(g.slots as usize);
        Some((start, len))
    }

    /// Slots `0..n` were lent to the switch when the peer was made.
    pub fn lent_at_start(&self) -> u32 {
        self.lent
    }

    /// Calls `f` with every slot the switch handed back since the last
    /// call (after sending it, or never published: the rx ring was full);
    /// only after [`Peer::hand_slots_over`].
    pub fn take_returned(&mut self, mut f: impl FnMut(u32)) {
        self.reclaim();
        for s in self.returned.drain(..) {
            f(s);
        }
    }

    /// Receives up to `max` (at most 64) frames in place: calls `f` with
    /// each checked frame (`Ok`) or with the slot of a descriptor that
    /// failed the check (`Err`, counted in `bad_desc`; a slot outside the
    /// port is not passed on). Lends nothing back: the caller lends
    /// ([`Peer::lend`]). Returns how many descriptors arrived.
    pub fn recv_in_place(&mut self, max: usize, f: impl FnMut(Result<Frame<'_>, u32>)) -> usize {
        let k = self.take_frames(max, f);
        self.counters.received += k as u64;
        k
    }

    /// Lends `slots` to the switch for receiving; returns how many the
    /// fill ring took (the first ones).
    pub fn lend(&mut self, slots: &[u32]) -> usize {
        let mut total = 0;
        for chunk in slots.chunks(BATCH) {
            for (d, &s) in self.descs.iter_mut().zip(chunk) {
                *d = Desc::new(s, RX_OFFSET, 0);
            }
            let k = self.fill.push(&self.descs[..chunk.len()]);
            total += k;
            if k < chunk.len() {
                break;
            }
        }
        total
    }

    /// Stages the frame of `len` bytes at byte `off` of `slot` (a slot the
    /// caller owns and wrote) for the switch, like [`Peer::queue`] without
    /// the copy. False, with nothing staged, for a length outside
    /// `MIN_FRAME..=MAX_FRAME` (counted in `bad_length`) or a frame that
    /// does not lie in the slot past its reserved bytes.
    pub fn stage(&mut self, slot: u32, off: usize, len: usize) -> bool {
        if !(MIN_FRAME as usize..=MAX_FRAME as usize).contains(&len) {
            self.counters.bad_length += 1;
            return false;
        }
        if slot >= self.shm.geometry.slots
            || off < SLOT_RESERVED as usize
            || off + len > SLOT_STRIDE as usize
        {
            return false;
        }
        self.staged[self.nstaged] = Desc::new(slot, off as u16, len as u16);
        self.nstaged += 1;
        if self.nstaged == BATCH {
            self.flush();
        }
        true
    }

    /// Writes `frame` at [`RX_OFFSET`] of `slot` (a slot the caller owns),
    /// to [`Peer::stage`] it; false if it does not fit.
    pub fn write_slot(&mut self, slot: u32, frame: &[u8]) -> bool {
        let g = self.shm.geometry;
        slot < g.slots
            && RX_OFFSET as usize + frame.len() <= SLOT_STRIDE as usize
            && self
                .shm
                .region
                .write_bytes(g.slot_offset(slot) + RX_OFFSET as usize, frame)
    }

    /// Room on the rx ring now (frames that can be handed to the switch).
    pub fn send_room(&mut self) -> usize {
        self.rx.room(self.shm.geometry.ring) as usize
    }

    /// Receives up to 64 frames without reading them (benchmarks); returns
    /// how many arrived.
    pub fn recv_discard(&mut self) -> usize {
        let k = self.tx.pop(&mut self.descs);
        self.relend(k)
    }

    fn relend(&mut self, k: usize) -> usize {
        let slots = self.shm.geometry.slots;
        let mut n = 0;
        for i in 0..k {
            let s = self.descs[i].slot;
            if s < slots {
                self.descs[n] = Desc::new(s, RX_OFFSET, 0);
                n += 1;
            }
        }
        let lent = self.fill.push(&self.descs[..n]);
        for i in lent..n {
            let s = self.descs[i].slot;
            // A pool's slots stay lent in its books: never the peer's own.
            if !self.pool_mode && self.free.len() < self.free.capacity() {
                self.free.push(s);
            }
        }
        self.counters.received += k as u64;
        k
    }

    /// Announces that this peer is about to sleep on its doorbell until
    /// frames arrive: false if frames are already waiting (do not sleep).
    /// After waking (the doorbell's descriptor became readable), call
    /// [`Peer::woke`].
    pub fn prepare_sleep(&mut self) -> bool {
        self.tx.prepare_sleep()
    }

    /// Ends a sleep begun with [`Peer::prepare_sleep`]: withdraws the
    /// announcement and clears the doorbell.
    pub fn woke(&mut self) {
        self.tx.woke();
        self.bell.clear();
    }

    /// The doorbell the switch rings for this peer, to duplicate.
    pub fn bell(&self) -> &Arc<Doorbell> {
        &self.bell
    }

    /// The doorbell the switch rings for this peer (poll it for reading).
    pub fn doorbell(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.bell.as_fd()
    }

    /// Sleeps on the doorbell until the switch delivers frames or returns
    /// slots, or `timeout` passes; returns at once if either is waiting.
    pub fn wait(&mut self, timeout: Option<Duration>) {
        if !self.tx.prepare_sleep() {
            return;
        }
        if !self.done.prepare_sleep() {
            self.tx.woke();
            return;
        }
        let _ = self.bell.wait(timeout);
        self.tx.woke();
        self.done.woke();
    }
}
