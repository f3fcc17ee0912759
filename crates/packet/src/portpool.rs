//! A port pool: packets that live in a switch port's own slots.
//!
//! A sandboxed instance's port is a shared region whose slots have the
//! packet pool's stride and leave their first 128 bytes to the peer
//! (`pronto_switch::layout`). A [`PortPool`] makes those slots packets:
//! a frame the switch wrote into a slot the instance lent it becomes a
//! [`Packet`] where it lies (no copy in), and a packet of the pool sent
//! out of the same port goes as a descriptor of its slot (no copy out).
//! A packet of a port pool is freed like any other; its slot comes back
//! to the port pool, to be lent to the switch again.
//!
//! Every slot is in one of four states — free, lent (the switch may
//! write it), a packet, sent (the switch reads it until it hands the slot
//! back) — and every change is checked against it, so that a descriptor
//! the switch gets wrong (a slot it was never lent, one handed back
//! twice) is refused instead of making two packets of one slot.
//!
//! Frees and packets alive are charged to the router's own pool
//! ([`PortPool::charge_to`]): its per-element accounts and
//! [`Pool::in_use`] count a port packet like one of its own, so the
//! router's packet conservation holds whatever pool a packet lives in.
//!
//! A port pool belongs to one thread, the first that uses it (the
//! instance's router thread): its packets are made and freed there
//! (`Packet` is not `Send`), and every method called from another thread
//! refuses (returns `None`/`false`), so the pool may sit in a structure
//! shared between threads.

use std::any::Any;
use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;
use std::thread::ThreadId;

use crate::packet::{Packet, SlotHeader};
use crate::pool::{Account, Pool, PoolInner, HEADER_SIZE, SLOT_STRIDE};

// A port's slot leaves its first 128 bytes to its peer: the packet
// header must fit there.
const _: () = assert!(HEADER_SIZE <= 128);

const FREE: u8 = 0;
const LENT: u8 = 1;
const PACKET: u8 = 2;
const SENT: u8 = 3;

/// What a port pool keeps beyond a pool's fields.
pub(crate) struct PortState {
    /// Per slot: FREE, LENT, PACKET or SENT.
    states: UnsafeCell<Vec<u8>>,
    /// The pool charged with this pool's frees and packets (null: this
    /// one).
    acct: Cell<*const PoolInner>,
    /// The thread that owns the pool (set by the first call).
    owner: Cell<Option<ThreadId>>,
    /// Keeps the region mapped while the pool lives.
    _keep: Box<dyn Any + Send>,
}

thread_local! {
    static ME: ThreadId = std::thread::current().id();
}

/// Packets in a switch port's slots (see the module's documentation).
pub struct PortPool {
    inner: std::mem::ManuallyDrop<Box<PoolInner>>,
}

// SAFETY: the pool's cells are only touched on its owner thread: every
// public method checks the calling thread first (`here`) and refuses on
// any other, its packets are made on that thread and cannot leave it
// (`Packet` is not `Send`), and `Drop` on another thread leaks the pool
// rather than read its state.
unsafe impl Send for PortPool {}

impl PortPool {
    /// A pool over the `nslots` slots of a port's region from byte
    /// `offset` (of which the first `lent` are lent to the switch already),
    /// keeping the region mapped while the pool lives. `None` if they do
    /// not lie inside the region or are not 64-byte aligned.
    ///
    /// The port's peer end reaches its slots through the region too: it
    /// may copy a frame out of a slot the pool has lent and the switch
    /// filled, and into a slot the pool gave it to send
    /// ([`PortPool::take_for_send`]), never into a packet's.
    pub fn over_region(
        region: std::sync::Arc<pronto_ring::SharedRegion>,
        offset: usize,
        nslots: u32,
        lent: u32,
    ) -> Option<PortPool> {
        let len = (nslots as usize).checked_mul(SLOT_STRIDE)?;
        if nslots == 0 || offset.checked_add(len)? > region.len() {
            return None;
        }
        let base = NonNull::new(region.as_ptr().wrapping_add(offset))?;
        if !(base.as_ptr() as usize).is_multiple_of(64) {
            return None;
        }
        // SAFETY: the slots lie inside the region (checked above), which
        // is mapped shared, readable and writable while the `Arc` kept by
        // the pool lives; they are 64-byte aligned (checked). Within this
        // process the region's other user is the port's peer end, which
        // touches a slot only while the pool has lent it or handed it out
        // to send (see above); the switch writes only lent slots, past
        // their reserved first 128 bytes (the header's size, checked by
        // the assertion below).
        Some(unsafe { PortPool::new(base, nslots, lent, Box::new(region)) })
    }

    /// A pool over `nslots` slots of [`SLOT_STRIDE`] bytes from `base`,
    /// of which the first `lent` are lent to the switch already and the
    /// rest free. A slot's header (its first [`HEADER_SIZE`] bytes) is
    /// written when it becomes a packet.
    ///
    /// # Safety
    /// `base .. base + nslots * SLOT_STRIDE` must be mapped readable and
    /// writable, 64-byte aligned, and stay mapped while `keep` lives; no
    /// one in this process may touch it but this pool; the other side
    /// (the switch) may write a slot only while it is lent, and never
    /// its first [`HEADER_SIZE`] bytes.
    pub unsafe fn new(
        base: NonNull<u8>,
        nslots: u32,
        lent: u32,
        keep: Box<dyn Any + Send>,
    ) -> PortPool {
        let n = nslots as usize;
        let lent = lent.min(nslots);
        let mut states = vec![FREE; n];
        states[..lent as usize].fill(LENT);
        let inner = Box::new(PoolInner {
            base,
            nslots: Cell::new(n),
            limit: Cell::new(n),
            reserved: n,
            reserved_bytes: n * SLOT_STRIDE,
            mapped: Cell::new(n * SLOT_STRIDE),
            // Low slots first, as a pool hands them out.
            free: UnsafeCell::new({
                let mut f = Vec::with_capacity(n);
                f.extend((lent..nslots).rev());
                f
            }),
            refused: Cell::new(0),
            owner: Cell::new(0),
            accounts: UnsafeCell::new(vec![Account::default()]),
            fd: None,
            ext: Cell::new(0),
            chargers: UnsafeCell::new(Vec::new()),
            port: Some(Box::new(PortState {
                states: UnsafeCell::new(states),
                acct: Cell::new(std::ptr::null()),
                owner: Cell::new(None),
                _keep: keep,
            })),
        });
        // Slot headers are written when a slot becomes a packet
        // (`receive`), not here: a port's slots are touched only as they
        // are used, and an idle instance's stay unmapped.
        PortPool {
            inner: std::mem::ManuallyDrop::new(inner),
        }
    }

    fn state(&self) -> &PortState {
        self.inner
            .port
            .as_deref()
            .expect("a port pool has its port state")
    }

    /// True on the pool's owner thread (the first to call).
    fn here(&self) -> bool {
        let me = ME.with(|t| *t);
        let st = self.state();
        match st.owner.get() {
            Some(o) => o == me,
            None => {
                st.owner.set(Some(me));
                true
            }
        }
    }

    /// Slot `idx`'s state (`None` past the last slot).
    #[inline]
    fn get(&self, idx: u32) -> Option<u8> {
        // SAFETY: called only after `here` (one thread), and no reference
        // to the states outlives this statement.
        unsafe { (&*self.state().states.get()).get(idx as usize).copied() }
    }

    /// Sets slot `idx`'s state (a slot that exists).
    #[inline]
    fn set(&self, idx: u32, v: u8) {
        // SAFETY: as in `get`.
        unsafe { (&mut *self.state().states.get())[idx as usize] = v }
    }

    /// Slots in the pool.
    pub fn slots(&self) -> u32 {
        self.inner.nslots.get() as u32
    }

    /// Free slots (neither lent, nor a packet, nor sent); 0 off the
    /// owner thread.
    pub fn free_slots(&self) -> usize {
        if !self.here() {
            return 0;
        }
        self.inner.free_len()
    }

    /// Charges this pool's frees and packets to `pool` from now on (the
    /// router's pool: call it before each batch, it is one compare when
    /// nothing changed). False off the owner thread.
    pub fn charge_to(&self, pool: &Pool) -> bool {
        if !self.here() {
            return false;
        }
        let st = self.state();
        let target: *const PoolInner = pool.inner();
        let old = st.acct.get();
        if old == target {
            return true;
        }
        let me: *const PoolInner = &**self.inner;
        if !old.is_null() {
            // SAFETY: a pool tells its chargers before it goes
            // (`forget_charge`), so a non-null target is alive; it is
            // single-threaded, as this pool is.
            unsafe { (*(*old).chargers.get()).retain(|&c| c != me) };
        }
        // SAFETY: as above; `pool` is alive now and clears this entry when
        // it goes.
        unsafe { (*pool.inner().chargers.get()).push(me) };
        st.acct.set(target);
        true
    }

    /// A free slot to lend to the switch, or `None` (none free, or off
    /// the owner thread).
    #[inline]
    pub fn lend(&self) -> Option<u32> {
        self.take_free(LENT)
    }

    /// Pops a free slot and gives it state `to` (`None` if none is free or
    /// off the owner thread).
    #[inline]
    fn take_free(&self, to: u8) -> Option<u32> {
        if !self.here() {
            return None;
        }
        // SAFETY: on the owner thread (checked above), and no reference to
        // the free list outlives this statement.
        let idx = unsafe { (*self.inner.free.get()).pop() }?;
        self.set(idx, to);
        Some(idx)
    }

    /// True if slot `idx` is lent to the switch (false off the owner
    /// thread).
    #[inline]
    pub fn is_lent(&self, idx: u32) -> bool {
        self.here() && self.get(idx) == Some(LENT)
    }

    /// Takes back slot `idx`, lent and not used (the fill ring had no
    /// room, or the switch's descriptor of it was bad). False if it was
    /// not lent.
    pub fn unlend(&self, idx: u32) -> bool {
        self.back(idx, LENT)
    }

    /// Takes back slot `idx`, sent and handed back by the switch (or never
    /// published). False if it was not sent.
    #[inline]
    pub fn returned(&self, idx: u32) -> bool {
        self.back(idx, SENT)
    }

    fn back(&self, idx: u32, from: u8) -> bool {
        if !self.here() {
            return false;
        }
        match self.get(idx) {
            Some(s) if s == from => {
                self.set(idx, FREE);
                // SAFETY: as in `take_free`; capacity is nslots and each slot is
                // on the list at most once (its state was not FREE).
                unsafe { (*self.inner.free.get()).push(idx) };
                true
            }
            _ => false,
        }
    }

    /// A free slot to copy a frame into and send, or `None`.
    pub fn take_for_send(&self) -> Option<u32> {
        self.take_free(SENT)
    }

    /// The frame of `len` bytes the switch wrote at byte `off` of lent slot
    /// `idx`, as a packet in place (its link header at the start,
    /// timestamped), charged to the pool of [`PortPool::charge_to`].
    /// `None` if the slot was not lent, the frame does not lie inside the
    /// slot's buffer, or off the owner thread.
    #[inline]
    pub fn receive(&self, idx: u32, off: usize, len: usize, timestamp_ns: i64) -> Option<Packet> {
        if !self.here()
            || off < HEADER_SIZE
            || off + len > SLOT_STRIDE
            || self.get(idx) != Some(LENT)
        {
            return None;
        }
        self.set(idx, PACKET);
        self.charged().ext.set(self.charged().ext.get() + 1);
        let slot = self.inner.slot(idx);
        // SAFETY: the slot was lent and is now a packet, so no other
        // Packet refers to it; its header is this process's alone and is
        // rewritten whole here (pool pointer and index included).
        unsafe {
            let h = slot.cast::<SlotHeader>().as_ptr();
            h.write(SlotHeader::new(&**self.inner, idx));
            (*h).frame_at(off - HEADER_SIZE, len, timestamp_ns);
            Some(Packet::from_slot(slot))
        }
    }

    /// Hands `p` to the switch as it lies, when it is a packet of this
    /// pool: its slot becomes sent and the packet is charged as freed (to
    /// the element charged now). Returns the slot, and the frame's byte
    /// offset in it and length; or the packet back when it is another
    /// pool's (or off the owner thread).
    #[inline]
    pub fn send(&self, p: Packet) -> Result<(u32, usize, usize), Packet> {
        let me: *const PoolInner = &**self.inner;
        if p.pool_ptr() != me || !self.here() {
            return Err(p);
        }
        let idx = p.slot_index();
        if self.get(idx) != Some(PACKET) {
            return Err(p);
        }
        let off = HEADER_SIZE + p.headroom();
        let len = p.len();
        std::mem::forget(p);
        self.set(idx, SENT);
        let c = self.charged();
        c.charge(|a| a.freed += 1);
        c.ext.set(c.ext.get() - 1);
        Ok((idx, off, len))
    }

    /// The pool charged with this one's packets.
    fn charged(&self) -> &PoolInner {
        let t = self.state().acct.get();
        if t.is_null() {
            &self.inner
        } else {
            // SAFETY: a charged pool clears `acct` before it goes.
            unsafe { &*t }
        }
    }
}

impl PoolInner {
    /// Frees packets of a port pool (see [`PoolInner::push`]).
    #[inline(never)]
    pub(crate) fn port_free(&self, idx: &[u32]) {
        let Some(st) = self.port.as_deref() else {
            return;
        };
        let t = st.acct.get();
        let c: &PoolInner = if t.is_null() {
            self
        } else {
            // SAFETY: a charged pool clears `acct` before it goes.
            unsafe { &*t }
        };
        c.charge(|a| a.freed += idx.len() as u64);
        c.ext.set(c.ext.get() - idx.len() as isize);
        // SAFETY: packets are freed on the pool's owner thread (they never
        // leave it), where nothing else holds these references.
        let states = unsafe { &mut *st.states.get() };
        // SAFETY: as above.
        let free = unsafe { &mut *self.free.get() };
        for &i in idx {
            states[i as usize] = FREE;
            free.push(i);
        }
    }

    /// `pool` is going: a port pool charging it charges itself from now
    /// on.
    pub(crate) fn forget_charge(&self, pool: &PoolInner) {
        if let Some(st) = self.port.as_deref() {
            if std::ptr::eq(st.acct.get(), pool) {
                st.acct.set(std::ptr::null());
            }
        }
    }
}

impl Drop for PortPool {
    fn drop(&mut self) {
        // Off its thread, or with packets alive (they point at the pool):
        // leak it, region included.
        // SAFETY: on the owner thread (checked first); no reference kept.
        if !self.here() || unsafe { (*self.state().states.get()).contains(&PACKET) } {
            return;
        }
        let st = self.state();
        let t = st.acct.get();
        if !t.is_null() {
            let me: *const PoolInner = &**self.inner;
            // SAFETY: the charged pool is alive (it clears `acct` before it
            // goes) and on this thread.
            unsafe { (*(*t).chargers.get()).retain(|&c| c != me) };
        }
        // SAFETY: no packet refers to the pool; the region is not ours to
        // unmap (the box's `_keep` releases it).
        unsafe { std::mem::ManuallyDrop::drop(&mut self.inner) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Batch;

    /// A port pool over plain memory (what a port's slot area is to it).
    fn port_pool(n: u32, lent: u32) -> PortPool {
        let layout =
            std::alloc::Layout::from_size_align(n as usize * SLOT_STRIDE, 4096).expect("layout");
        // SAFETY: a non-zero size.
        let mem = unsafe { std::alloc::alloc_zeroed(layout) };
        struct Keep(*mut u8, std::alloc::Layout);
        // SAFETY: only freed, from whichever thread drops it.
        unsafe impl Send for Keep {}
        impl Drop for Keep {
            fn drop(&mut self) {
                // SAFETY: allocated above with this layout.
                unsafe { std::alloc::dealloc(self.0, self.1) }
            }
        }
        let base = NonNull::new(mem).expect("memory");
        // SAFETY: the allocation is ours, aligned, and lives as long as
        // the pool (`Keep`).
        unsafe { PortPool::new(base, n, lent, Box::new(Keep(mem, layout))) }
    }

    fn write_frame(pp: &PortPool, idx: u32, off: usize, bytes: &[u8]) {
        let slot = pp.inner.slot(idx);
        // SAFETY: inside the slot, past its header (test only).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), slot.as_ptr().add(off), bytes.len())
        };
    }

    #[test]
    fn a_lent_slot_becomes_a_packet_in_place_and_is_charged_to_the_router_pool() {
        let router = Pool::new(8).expect("pool");
        router.set_accounts(3);
        let pp = port_pool(8, 4);
        assert_eq!(pp.free_slots(), 4);
        assert!(pp.charge_to(&router));
        let frame: Vec<u8> = (0..60u8).collect();
        write_frame(&pp, 2, 256, &frame);
        router.set_owner(0);
        let p = pp.receive(2, 256, 60, 77).expect("lent slot");
        assert_eq!(p.data(), &frame[..]);
        assert_eq!(p.headroom(), 256 - HEADER_SIZE);
        assert_eq!(p.timestamp_ns(), 77);
        assert_eq!(router.in_use(), 1, "a port packet counts as alive");
        // Not lent (free, or a packet already): refused.
        assert!(pp.receive(5, 256, 60, 0).is_none());
        assert!(pp.receive(2, 256, 60, 0).is_none());
        // Out of the slot's buffer: refused, the slot stays lent.
        assert!(pp.receive(1, 64, 60, 0).is_none());
        assert!(pp.receive(1, SLOT_STRIDE - 10, 60, 0).is_none());
        router.set_owner(1);
        drop(p);
        assert_eq!(router.in_use(), 0);
        assert_eq!(router.account(1).freed, 1, "freed by the element charged");
        assert_eq!(pp.free_slots(), 5);
    }

    #[test]
    fn a_port_packet_sends_as_its_slot_and_comes_back_free() {
        let router = Pool::new(8).expect("pool");
        let pp = port_pool(4, 2);
        pp.charge_to(&router);
        let mut p = pp.receive(0, 256, 100, 0).expect("as set up");
        p.pull(14);
        let other = router.alloc_from(&[1; 60]).expect("as set up");
        let other = pp
            .send(other)
            .expect_err("another pool's packet is not sent in place");
        let (idx, off, len) = pp.send(p).expect("sent in place");
        assert_eq!((idx, off, len), (0, 256 + 14, 86));
        assert_eq!(router.in_use(), 1, "only the router's own packet is alive");
        assert_eq!(router.account(0).freed, 1);
        assert!(!pp.unlend(0), "a sent slot is not lent");
        assert!(pp.returned(0));
        assert!(!pp.returned(0), "handed back twice");
        drop(other);
        assert_eq!(pp.free_slots(), 3);
        // Every free slot can be lent, then none.
        let lent: Vec<u32> = std::iter::from_fn(|| pp.lend()).collect();
        assert_eq!(lent.len(), 3);
        assert!(pp.lend().is_none());
        assert!(pp.take_for_send().is_none());
        assert!(pp.unlend(lent[0]));
        assert_eq!(pp.take_for_send(), Some(lent[0]));
    }

    #[test]
    fn a_batch_of_port_and_router_packets_frees_each_into_its_own_pool() {
        let router = Pool::new(8).expect("pool");
        let pp = port_pool(8, 8);
        pp.charge_to(&router);
        let mut b = Batch::new();
        for i in 0..4 {
            b.push(pp.receive(i, 256, 60, 0).expect("as set up"))
                .expect("as set up");
            b.push(router.alloc_from(&[0; 60]).expect("as set up"))
                .expect("as set up");
        }
        assert_eq!(router.in_use(), 8);
        drop(b);
        assert_eq!(router.in_use(), 0);
        assert_eq!(router.account(0).freed, 8);
        assert_eq!(pp.free_slots(), 4);
    }

    #[test]
    fn a_router_pool_that_goes_leaves_the_port_pool_charging_itself() {
        let pp = port_pool(4, 4);
        let p;
        {
            let router = Pool::new(2).expect("pool");
            pp.charge_to(&router);
            p = pp.receive(3, 256, 60, 0).expect("as set up");
            // The router's pool goes while a port packet is alive (it was
            // not adopted): its frees fall back on the port pool.
        }
        drop(p);
        assert_eq!(pp.free_slots(), 1);
        let next = Pool::new(2).expect("pool");
        assert!(pp.charge_to(&next));
        let q = pp.receive(2, 256, 60, 0).expect("as set up");
        assert_eq!(next.in_use(), 1);
        drop(q);
        assert_eq!(next.in_use(), 0);
    }

    #[test]
    fn another_thread_is_refused() {
        let pp = port_pool(4, 2);
        assert_eq!(pp.free_slots(), 2);
        let pp = std::thread::spawn(move || {
            assert_eq!(pp.free_slots(), 0);
            assert!(pp.lend().is_none());
            assert!(pp.take_for_send().is_none());
            assert!(!pp.unlend(0));
            assert!(pp.receive(0, 256, 60, 0).is_none());
            pp
        })
        .join()
        .expect("as set up");
        assert!(pp.lend().is_some());
    }
}
