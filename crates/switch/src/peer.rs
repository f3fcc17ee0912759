//! A port's peer end: sends frames from its own slots, lends slots to the
//! switch for receiving, and sleeps on its doorbell.

use std::time::Duration;

use pronto_ring::{Consumer, Desc, Producer};

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
    rx: Producer,
    fill: Producer,
    tx: Consumer,
    done: Consumer,
    free: Vec<u32>,
    descs: [Desc; BATCH],
    buf: [u8; SLOT_STRIDE as usize],
    counters: PeerCounters,
}

impl Peer {
    /// The peer end of `shm`, lending its first `lend` slots (at most the
    /// ring capacity) to the switch for receiving and keeping the rest for
    /// sending.
    pub fn new(shm: PortShm, lend: u32) -> Result<Peer, PortError> {
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
            buf: [0; SLOT_STRIDE as usize],
            counters: PeerCounters::default(),
            shm,
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
            for d in &self.descs[..k] {
                // A switch returning a slot it was never given is refused.
                if d.slot < slots && self.free.len() < self.free.capacity() {
                    self.free.push(d.slot);
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
        self.reclaim();
        let g = self.shm.geometry;
        let mut total = 0;
        for chunk in frames.chunks(BATCH) {
            let mut n = 0;
            for f in chunk {
                if !(MIN_FRAME as usize..=MAX_FRAME as usize).contains(&f.len()) {
                    self.counters.bad_length += 1;
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
                let _ = self.shm.to_switch.ring();
            }
        }
        total
    }

    /// Pushes raw descriptors onto the port's rx ring, unchecked: for
    /// tests that play a hostile peer. Returns how many were queued.
    pub fn send_raw(&mut self, descs: &[Desc]) -> usize {
        let k = self.rx.push(descs);
        if k > 0 && self.rx.consumer_wants_wakeup() {
            let _ = self.shm.to_switch.ring();
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
    pub fn recv(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        let g = self.shm.geometry;
        let k = self.tx.pop(&mut self.descs);
        for i in 0..k {
            let d = self.descs[i];
            if d.check(g.slots, SLOT_RESERVED as u32, SLOT_STRIDE, MAX_FRAME as u32)
                .is_err()
            {
                self.counters.bad_desc += 1;
                continue;
            }
            let buf = &mut self.buf[..d.len as usize];
            self.shm
                .region
                .read_bytes(g.slot_offset(d.slot) + d.off as usize, buf);
            f(buf);
        }
        self.relend(k)
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
            if self.free.len() < self.free.capacity() {
                self.free.push(s);
            }
        }
        self.counters.received += k as u64;
        k
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
        let _ = self.shm.to_peer.wait(timeout);
        self.tx.woke();
        self.done.woke();
    }
}
