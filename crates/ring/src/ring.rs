//! Single-producer/single-consumer rings of packet descriptors in shared
//! memory.
//!
//! Layout of a ring region (every field on its own cache line, so the
//! producer's and the consumer's writes never share a line):
//!
//! ```text
//!   0   header   magic "PRONTORG", version, capacity
//!  64   producer head      (descriptors published, wrapping u32)
//! 128   consumer tail      (descriptors consumed, wrapping u32)
//! 192   consumer sleeping  (1 while the consumer waits on its doorbell)
//! 256   descriptors        (capacity x 8 bytes: slot u32, offset u16, length u16)
//! ```
//!
//! A ring may sit at any 64-aligned offset of a larger region
//! ([`init_at`], [`Producer::attach_at`], [`Consumer::attach_at`]), so that
//! one memfd can hold several rings and a packet pool (the switch's ports).
//!
//! Each side keeps its own copy of the capacity and its own position, and
//! publishes a whole batch with one release store. Everything read from
//! the region was written by the peer and is untrusted: a head or tail that
//! claims more than `capacity` outstanding descriptors is counted and
//! ignored, and descriptor contents are checked by [`Desc::check`] before a
//! slot is touched. Contents are accessed only through atomics, so a peer
//! writing garbage concurrently is a wrong value, never undefined
//! behaviour.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::shm::SharedRegion;

const MAGIC: u64 = u64::from_le_bytes(*b"PRONTORG");
const VERSION: u32 = 2;
/// Byte offset of the producer's head in a ring region.
pub const OFF_HEAD: usize = 64;
/// Byte offset of the consumer's tail.
pub const OFF_TAIL: usize = 128;
/// Byte offset of the consumer's sleeping flag.
pub const OFF_SLEEPING: usize = 192;
/// Byte offset of the first descriptor (8 bytes each: slot, offset, length).
pub const OFF_DESCS: usize = 256;

/// Largest ring (descriptors).
pub const MAX_CAPACITY: u32 = 1 << 20;

/// One packet: a slot index in a pool, where in the slot the packet's
/// bytes start, and how many there are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Desc {
    /// Slot index in the pool the ring's packets live in.
    pub slot: u32,
    /// Byte offset of the packet's first byte from the start of the slot.
    pub off: u16,
    /// Packet length in bytes.
    pub len: u16,
}

/// Why a descriptor was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DescError {
    /// The slot index is outside the pool.
    #[error("slot index {0} outside the pool")]
    BadSlot(u32),
    /// The length is zero or larger than a slot holds.
    #[error("length {0} outside 1..=slot size")]
    BadLength(u32),
    /// The offset lies in the slot's reserved header, or the packet runs
    /// past the end of the slot.
    #[error("offset {0} (+ length) outside the slot's data area")]
    BadOffset(u32),
}

impl Desc {
    /// A descriptor of `len` bytes at offset `off` of slot `slot`.
    #[inline]
    pub const fn new(slot: u32, off: u16, len: u16) -> Desc {
        Desc { slot, off, len }
    }

    #[inline]
    fn pack(self) -> u64 {
        (self.slot as u64) | ((self.off as u64) << 32) | ((self.len as u64) << 48)
    }

    #[inline]
    fn unpack(v: u64) -> Desc {
        Desc {
            slot: v as u32,
            off: (v >> 32) as u16,
            len: (v >> 48) as u16,
        }
    }

    /// Checks the descriptor against a pool of `slots` slots of
    /// `slot_size` bytes whose first `reserved` bytes are not packet data:
    /// the slot exists, the length is 1 to `max_len`, and the bytes lie in
    /// `reserved..slot_size` of the slot.
    #[inline]
    pub fn check(
        &self,
        slots: u32,
        reserved: u32,
        slot_size: u32,
        max_len: u32,
    ) -> Result<(), DescError> {
        if self.slot >= slots {
            Err(DescError::BadSlot(self.slot))
        } else if self.len == 0 || self.len as u32 > max_len {
            Err(DescError::BadLength(self.len as u32))
        } else if (self.off as u32) < reserved || self.off as u32 + self.len as u32 > slot_size {
            Err(DescError::BadOffset(self.off as u32))
        } else {
            Ok(())
        }
    }
}

/// Errors attaching to a ring region.
#[derive(Debug, thiserror::Error)]
pub enum RingError {
    /// Capacity not a power of two in 2..=MAX_CAPACITY.
    #[error("ring capacity {0} is not a power of two between 2 and {MAX_CAPACITY}")]
    BadCapacity(u32),
    /// The region's header is not a ring of the expected capacity.
    #[error("shared region is not a pronto ring of capacity {0}")]
    BadHeader(u32),
    /// Creating or mapping the region failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Bytes a ring of `capacity` descriptors occupies.
pub fn region_len(capacity: u32) -> usize {
    OFF_DESCS + capacity as usize * 8
}

/// Counters of peer misbehaviour seen by one side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingFaults {
    /// Times the peer's position claimed more than `capacity` outstanding
    /// descriptors (the read was ignored).
    pub bad_position: u64,
}

struct View {
    region: Arc<SharedRegion>,
    base: usize,
    cap: u32,
    mask: u32,
}

impl View {
    fn new(
        region: Arc<SharedRegion>,
        base: usize,
        cap: u32,
        init: bool,
    ) -> Result<View, RingError> {
        if !(2..=MAX_CAPACITY).contains(&cap) || !cap.is_power_of_two() {
            return Err(RingError::BadCapacity(cap));
        }
        if !base.is_multiple_of(64)
            || base
                .checked_add(region_len(cap))
                .is_none_or(|end| end > region.len())
        {
            return Err(RingError::BadHeader(cap));
        }
        let v = View {
            region,
            base,
            cap,
            mask: cap - 1,
        };
        if init {
            v.u64_at(0).store(MAGIC, Ordering::Relaxed);
            v.u32_at(8).store(VERSION, Ordering::Relaxed);
            v.u32_at(12).store(cap, Ordering::Release);
        } else if v.u64_at(0).load(Ordering::Relaxed) != MAGIC
            || v.u32_at(8).load(Ordering::Relaxed) != VERSION
            || v.u32_at(12).load(Ordering::Acquire) != cap
        {
            return Err(RingError::BadHeader(cap));
        }
        Ok(v)
    }

    #[inline]
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        let off = self.base + off;
        debug_assert!(off.is_multiple_of(4) && off + 4 <= self.region.len());
        // SAFETY: `off` is a 4-aligned offset inside the mapping (all
        // callers use the fixed header offsets below `region_len(cap)`,
        // and `new` checked that base + region_len(cap) fits the region
        // and that base is 64-aligned); the mapping lives as long as
        // `self`; AtomicU32 has u32's layout and every access to these
        // bytes, here and in the peer, is atomic.
        unsafe { &*(self.region.as_ptr().add(off).cast::<AtomicU32>()) }
    }

    #[inline]
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        let off = self.base + off;
        debug_assert!(off.is_multiple_of(8) && off + 8 <= self.region.len());
        // SAFETY: as in `u32_at`, for an 8-aligned offset (the mapping is
        // page-aligned, `base` 64-aligned, descriptor slots masked to the
        // capacity).
        unsafe { &*(self.region.as_ptr().add(off).cast::<AtomicU64>()) }
    }

    #[inline]
    fn desc(&self, pos: u32) -> &AtomicU64 {
        self.u64_at(OFF_DESCS + ((pos & self.mask) as usize) * 8)
    }
}

/// The producing end of a ring.
pub struct Producer {
    v: View,
    head: u32,
    tail_cache: u32,
    faults: RingFaults,
}

/// The consuming end of a ring.
pub struct Consumer {
    v: View,
    tail: u32,
    head_cache: u32,
    faults: RingFaults,
}

/// Makes a ring of `capacity` descriptors in a new shared region and
/// returns the region (to hand its descriptor to the peer) and the
/// producing end.
pub fn create(name: &str, capacity: u32) -> Result<(Arc<SharedRegion>, Producer), RingError> {
    if !(2..=MAX_CAPACITY).contains(&capacity) || !capacity.is_power_of_two() {
        return Err(RingError::BadCapacity(capacity));
    }
    let region = Arc::new(SharedRegion::create(name, region_len(capacity))?);
    let p = Producer {
        v: View::new(region.clone(), 0, capacity, true)?,
        head: 0,
        tail_cache: 0,
        faults: RingFaults::default(),
    };
    Ok((region, p))
}

/// Writes an empty ring of `capacity` descriptors at byte `offset`
/// (64-aligned) of `region`, which must hold `region_len(capacity)` bytes
/// from there. Both ends then attach with `attach_at`.
pub fn init_at(region: &Arc<SharedRegion>, offset: usize, capacity: u32) -> Result<(), RingError> {
    let v = View::new(region.clone(), offset, capacity, true)?;
    v.u32_at(OFF_HEAD).store(0, Ordering::Relaxed);
    v.u32_at(OFF_TAIL).store(0, Ordering::Relaxed);
    v.u32_at(OFF_SLEEPING).store(0, Ordering::Release);
    Ok(())
}

impl Producer {
    /// The producing end of an existing ring region.
    pub fn attach(region: Arc<SharedRegion>, capacity: u32) -> Result<Producer, RingError> {
        Self::attach_at(region, 0, capacity)
    }

    /// The producing end of a ring at byte `offset` of `region`.
    pub fn attach_at(
        region: Arc<SharedRegion>,
        offset: usize,
        capacity: u32,
    ) -> Result<Producer, RingError> {
        let v = View::new(region, offset, capacity, false)?;
        let head = v.u32_at(OFF_HEAD).load(Ordering::Relaxed);
        let tail = v.u32_at(OFF_TAIL).load(Ordering::Acquire);
        Ok(Producer {
            v,
            head,
            tail_cache: tail,
            faults: RingFaults::default(),
        })
    }

    /// Free room, refreshing the consumer's position only when the cached
    /// one says the ring is too full for `want` more (so the answer is
    /// exact only below `want`; 0 if the consumer's position is
    /// implausible, which is counted).
    #[inline]
    pub fn room(&mut self, want: u32) -> u32 {
        let used = self.head.wrapping_sub(self.tail_cache);
        if self.v.cap - used.min(self.v.cap) >= want {
            return self.v.cap - used;
        }
        let tail = self.v.u32_at(OFF_TAIL).load(Ordering::Acquire);
        let used = self.head.wrapping_sub(tail);
        if used > self.v.cap {
            self.faults.bad_position += 1;
            return 0;
        }
        self.tail_cache = tail;
        self.v.cap - used
    }

    /// Free room for descriptors (re-reads the consumer's position; 0 if
    /// that position is implausible, which is counted).
    #[inline]
    pub fn free(&mut self) -> u32 {
        self.room(self.v.cap)
    }

    /// Queues as many of `descs` as fit and publishes them with one store;
    /// returns how many were queued.
    #[inline]
    pub fn push(&mut self, descs: &[Desc]) -> usize {
        let n = (self.room(descs.len().min(u32::MAX as usize) as u32) as usize).min(descs.len());
        for (i, d) in descs[..n].iter().enumerate() {
            self.v
                .desc(self.head.wrapping_add(i as u32))
                .store(d.pack(), Ordering::Relaxed);
        }
        if n > 0 {
            self.head = self.head.wrapping_add(n as u32);
            self.v.u32_at(OFF_HEAD).store(self.head, Ordering::Release);
        }
        n
    }

    /// After a push: true if the consumer said it is going to sleep, in
    /// which case the caller rings its doorbell. Clears the flag.
    #[inline]
    pub fn consumer_wants_wakeup(&self) -> bool {
        // Orders the head store above before the flag load, pairing with
        // the consumer's flag store before its head load (Dekker).
        fence(Ordering::SeqCst);
        let s = self.v.u32_at(OFF_SLEEPING);
        s.load(Ordering::Relaxed) != 0 && s.swap(0, Ordering::AcqRel) != 0
    }

    /// Descriptors queued and not yet taken (as last seen).
    pub fn queued(&self) -> u32 {
        self.head.wrapping_sub(self.tail_cache).min(self.v.cap)
    }

    /// The ring's capacity.
    pub fn capacity(&self) -> u32 {
        self.v.cap
    }

    /// Peer misbehaviour seen so far.
    pub fn faults(&self) -> RingFaults {
        self.faults
    }
}

impl Consumer {
    /// The consuming end of an existing ring region.
    pub fn attach(region: Arc<SharedRegion>, capacity: u32) -> Result<Consumer, RingError> {
        Self::attach_at(region, 0, capacity)
    }

    /// The consuming end of a ring at byte `offset` of `region`.
    pub fn attach_at(
        region: Arc<SharedRegion>,
        offset: usize,
        capacity: u32,
    ) -> Result<Consumer, RingError> {
        let v = View::new(region, offset, capacity, false)?;
        let tail = v.u32_at(OFF_TAIL).load(Ordering::Relaxed);
        Ok(Consumer {
            v,
            tail,
            head_cache: tail,
            faults: RingFaults::default(),
        })
    }

    /// Takes up to `out.len()` descriptors; releases their room to the
    /// producer with one store. Returns how many were taken.
    #[inline]
    pub fn pop(&mut self, out: &mut [Desc]) -> usize {
        let mut avail = self.head_cache.wrapping_sub(self.tail);
        if avail == 0 {
            let head = self.v.u32_at(OFF_HEAD).load(Ordering::Acquire);
            avail = head.wrapping_sub(self.tail);
            if avail > self.v.cap {
                self.faults.bad_position += 1;
                return 0;
            }
            self.head_cache = head;
        }
        let n = (avail as usize).min(out.len());
        for (i, o) in out[..n].iter_mut().enumerate() {
            *o = Desc::unpack(
                self.v
                    .desc(self.tail.wrapping_add(i as u32))
                    .load(Ordering::Relaxed),
            );
        }
        if n > 0 {
            self.tail = self.tail.wrapping_add(n as u32);
            self.v.u32_at(OFF_TAIL).store(self.tail, Ordering::Release);
        }
        n
    }

    /// True if descriptors are waiting (reads the producer's position).
    #[inline]
    pub fn has_work(&mut self) -> bool {
        if self.head_cache != self.tail {
            return true;
        }
        let head = self.v.u32_at(OFF_HEAD).load(Ordering::Acquire);
        let avail = head.wrapping_sub(self.tail);
        if avail > self.v.cap {
            self.faults.bad_position += 1;
            return false;
        }
        self.head_cache = head;
        avail != 0
    }

    /// Announces that the consumer is about to sleep. Returns false (and
    /// withdraws the announcement) if work arrived meanwhile; on true, the
    /// caller waits on its doorbell, which the producer rings after its
    /// next push.
    pub fn prepare_sleep(&mut self) -> bool {
        self.v.u32_at(OFF_SLEEPING).store(1, Ordering::Relaxed);
        // Pairs with the producer's fence between its head store and its
        // flag load: one of the two sees the other's write.
        fence(Ordering::SeqCst);
        if self.has_work() {
            self.woke();
            return false;
        }
        true
    }

    /// Withdraws a sleep announcement (after waking up).
    pub fn woke(&self) {
        self.v.u32_at(OFF_SLEEPING).store(0, Ordering::Relaxed);
    }

    /// The ring's capacity.
    pub fn capacity(&self) -> u32 {
        self.v.cap
    }

    /// Peer misbehaviour seen so far.
    pub fn faults(&self) -> RingFaults {
        self.faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_pop_wraps_and_batches() {
        let (region, mut p) = create("t", 8).expect("ring");
        let mut c = Consumer::attach(region, 8).expect("attach");
        let descs: Vec<Desc> = (0..12).map(|i| Desc::new(i, 128, 60 + i as u16)).collect();
        assert_eq!(p.push(&descs), 8, "only capacity fits");
        assert_eq!(p.push(&descs[8..]), 0);
        let mut out = [Desc::default(); 5];
        assert_eq!(c.pop(&mut out), 5);
        assert_eq!(out[4], Desc::new(4, 128, 64));
        assert_eq!(p.push(&descs[8..]), 4, "room refreshed from the tail");
        let mut all = [Desc::default(); 16];
        assert_eq!(c.pop(&mut all), 3, "cached head first");
        assert_eq!(c.pop(&mut all), 4);
        assert_eq!(all[..4], descs[8..]);
        assert_eq!(c.pop(&mut all), 0);
        assert!(!c.has_work());
    }

    #[test]
    fn attach_checks_header_and_capacity() {
        let (region, _p) = create("t", 16).expect("ring");
        assert!(matches!(
            Consumer::attach(region.clone(), 32),
            Err(RingError::BadHeader(32))
        ));
        assert!(matches!(create("t", 3), Err(RingError::BadCapacity(3))));
        let other = Arc::new(SharedRegion::create("x", region_len(16)).expect("region"));
        assert!(matches!(
            Consumer::attach(other, 16),
            Err(RingError::BadHeader(16))
        ));
    }

    #[test]
    fn descriptor_checks() {
        let ok = |d: Desc| d.check(4, 128, 2176, 1920);
        assert_eq!(ok(Desc::new(3, 256, 64)), Ok(()));
        assert_eq!(ok(Desc::new(3, 128, 1920)), Ok(()));
        assert_eq!(ok(Desc::new(4, 256, 64)), Err(DescError::BadSlot(4)));
        assert_eq!(ok(Desc::new(0, 256, 0)), Err(DescError::BadLength(0)));
        assert_eq!(ok(Desc::new(0, 128, 1921)), Err(DescError::BadLength(1921)));
        assert_eq!(ok(Desc::new(0, 127, 64)), Err(DescError::BadOffset(127)));
        assert_eq!(ok(Desc::new(0, 2000, 200)), Err(DescError::BadOffset(2000)));
        assert_eq!(
            ok(Desc::new(0, u16::MAX, u16::MAX)),
            Err(DescError::BadLength(65535))
        );
        // Round trip through the packed form keeps every field.
        let d = Desc::new(0xdead_beef, 0x1234, 0xfedc);
        assert_eq!(Desc::unpack(d.pack()), d);
    }

    #[test]
    fn rings_at_offsets_share_one_region() {
        let region = Arc::new(SharedRegion::create("t", 4096 * 3).expect("region"));
        init_at(&region, 4096, 8).expect("ring at 4096");
        init_at(&region, 8192, 16).expect("ring at 8192");
        assert!(matches!(
            init_at(&region, 4096 + 8, 8),
            Err(RingError::BadHeader(8))
        ));
        assert!(matches!(
            init_at(&region, 8192, 1024),
            Err(RingError::BadHeader(1024))
        ));
        let mut p1 = Producer::attach_at(region.clone(), 4096, 8).expect("p1");
        let mut c1 = Consumer::attach_at(region.clone(), 4096, 8).expect("c1");
        let mut p2 = Producer::attach_at(region.clone(), 8192, 16).expect("p2");
        let mut c2 = Consumer::attach_at(region.clone(), 8192, 16).expect("c2");
        assert!(
            Consumer::attach_at(region.clone(), 0, 8).is_err(),
            "no ring at 0"
        );
        assert_eq!(p1.push(&[Desc::new(1, 2, 3)]), 1);
        assert_eq!(p2.push(&[Desc::new(4, 5, 6), Desc::new(7, 8, 9)]), 2);
        assert_eq!(p1.free(), 7);
        let mut out = [Desc::default(); 4];
        assert_eq!(c1.pop(&mut out), 1);
        assert_eq!(out[0], Desc::new(1, 2, 3));
        assert_eq!(c2.pop(&mut out), 2);
        assert_eq!(out[1], Desc::new(7, 8, 9));
        assert_eq!(p2.free(), 16);
    }

    #[test]
    fn hostile_positions_and_descriptors_are_contained() {
        let (region, _p) = create("t", 8).expect("ring");
        let mut c = Consumer::attach(region.clone(), 8).expect("attach");
        let mut out = [Desc::default(); 16];
        // A head claiming more than the ring holds: ignored and counted.
        assert!(region.store_u32(OFF_HEAD, 9));
        assert_eq!(c.pop(&mut out), 0);
        assert!(!c.has_work());
        assert_eq!(c.faults().bad_position, 2);
        // A head going backwards (wraps to a huge count): same.
        assert!(region.store_u32(OFF_HEAD, u32::MAX));
        assert_eq!(c.pop(&mut out), 0);
        assert_eq!(c.faults().bad_position, 3);
        // Plausible head, garbage descriptors: delivered, and refused by
        // the bounds check before any slot is touched.
        assert!(region.store_u32(OFF_DESCS, u32::MAX));
        assert!(region.store_u32(OFF_DESCS + 4, 0));
        assert!(region.store_u32(OFF_DESCS + 8, 3));
        assert!(region.store_u32(OFF_DESCS + 12, u32::MAX));
        assert!(region.store_u32(OFF_HEAD, 2));
        assert_eq!(c.pop(&mut out), 2);
        assert_eq!(
            out[0].check(1024, 128, 2176, 1920),
            Err(DescError::BadSlot(u32::MAX))
        );
        assert_eq!(
            out[1].check(1024, 128, 2176, 1920),
            Err(DescError::BadLength(u32::from(u16::MAX)))
        );
        // A consumer tail claiming more consumed than produced: once the
        // producer needs the consumer's position, it sees no room and
        // counts it.
        let (region, mut p) = create("t", 8).expect("ring");
        let d = [Desc::new(1, 128, 60); 8];
        assert_eq!(p.push(&d), 8);
        assert!(region.store_u32(OFF_TAIL, 100));
        assert_eq!(p.push(&d), 0);
        assert_eq!(p.faults().bad_position, 1);
        // Out-of-bounds scribbles are refused by the region itself.
        assert!(!region.store_u32(region.len(), 1));
        assert!(!region.store_u32(OFF_HEAD + 1, 1));
    }

    #[test]
    fn sleep_handshake() {
        let (region, mut p) = create("t", 8).expect("ring");
        let mut c = Consumer::attach(region, 8).expect("attach");
        assert!(c.prepare_sleep());
        assert_eq!(p.push(&[Desc::new(1, 128, 1)]), 1);
        assert!(p.consumer_wants_wakeup());
        assert!(!p.consumer_wants_wakeup(), "rung once");
        c.woke();
        assert!(!c.prepare_sleep(), "work is waiting");
    }
}
