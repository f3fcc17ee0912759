//! The packet pool: one memory region cut into fixed slots.
//!
//! The region is a memfd mapped shared, so that a switch process can later map
//! the same pages. Each slot is [`SLOT_STRIDE`] bytes: a 64-byte header (data
//! offset, length, header offsets, annotations) followed by the buffer. The
//! stride is deliberately not a power of two: with 2,048-byte slots every
//! packet header maps to the same few cache sets and forwarding measured 20%
//! slower than with 2,176-byte slots.
//!
//! A pool belongs to one thread (it is neither `Send` nor `Sync`); its free
//! list is a plain stack of slot indices, so allocating and freeing a packet
//! is a handful of instructions.
//!
//! A pool may grow ([`Pool::growable`]): the address space for its limit is
//! reserved when it is made, and when the free list runs dry the next part of
//! the memfd is mapped into that reservation, so slots never move and a slot
//! is still `base + index * SLOT_STRIDE`. Click allocates every packet with
//! `malloc` and has no cap; a growable pool holds what a configuration keeps
//! (a `Queue(100000)`) up to its limit. Every allocation refused at the limit
//! is counted ([`Pool::refused`]), and the runtime charges it to the element
//! that asked.

use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;

use crate::batch::Batch;
use crate::packet::{Packet, SlotHeader};

/// Bytes between the starts of consecutive slots.
pub const SLOT_STRIDE: usize = 2176;
/// Bytes of slot header (metadata and annotations) at the start of each slot.
pub const HEADER_SIZE: usize = std::mem::size_of::<SlotHeader>();
/// Bytes of packet buffer per slot (headroom + data + tailroom).
pub const BUFFER_SIZE: usize = SLOT_STRIDE - HEADER_SIZE;
/// Headroom left in front of a freshly made packet, for `EtherEncap`, `Unstrip`, ...
pub const DEFAULT_HEADROOM: usize = 128;
/// Granularity of the pool's mappings.
const PAGE: usize = 4096;
/// The longest packet a freshly made packet can hold.
pub const MAX_PACKET: usize = BUFFER_SIZE - DEFAULT_HEADROOM;

/// Why a pool could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// `memfd_create` or `ftruncate` failed.
    #[error("cannot create packet pool memory ({0} slots): {1}")]
    Memfd(usize, rustix::io::Errno),
    /// `mmap` failed.
    #[error("cannot map packet pool memory ({0} bytes): {1}")]
    Map(usize, rustix::io::Errno),
    /// A pool of zero slots, or one too big to index with `u32`.
    #[error("bad packet pool size {0}: must be between 1 and {max}", max = u32::MAX)]
    Size(usize),
}

pub(crate) struct PoolInner {
    pub(crate) base: NonNull<u8>,
    /// Slots mapped and usable.
    pub(crate) nslots: Cell<usize>,
    /// Slots the reservation has room for: the pool never grows past it.
    pub(crate) limit: Cell<usize>,
    /// Slots reserved at `base`.
    pub(crate) reserved: usize,
    /// Bytes reserved at `base` (what is unmapped when the pool goes).
    pub(crate) reserved_bytes: usize,
    /// Bytes from `base` mapped to the memfd (whole pages, so it may run a
    /// little past the last slot).
    pub(crate) mapped: Cell<usize>,
    pub(crate) free: UnsafeCell<Vec<u32>>,
    /// Allocations refused because the pool was at its limit.
    pub(crate) refused: Cell<u64>,
    /// Who frees and refusals are charged to now: an index into
    /// `accounts` (the last account when out of range).
    pub(crate) owner: Cell<usize>,
    /// Per owner (for a router: per element, and one for the runtime).
    /// Never empty.
    pub(crate) accounts: UnsafeCell<Vec<Account>>,
    /// The memfd behind the region (`None` for a port pool, whose region
    /// is the port's).
    pub(crate) fd: Option<rustix::fd::OwnedFd>,
    /// Packets of port pools charged to this pool, alive now: part of
    /// what [`Pool::in_use`] counts.
    pub(crate) ext: Cell<isize>,
    /// The port pools charging this pool now (told when it goes).
    pub(crate) chargers: UnsafeCell<Vec<*const PoolInner>>,
    /// Set for a port pool ([`crate::PortPool`]): its slots' states and
    /// the pool its packets are charged to.
    pub(crate) port: Option<Box<crate::portpool::PortState>>,
}

/// What the pool did for one owner (see [`Pool::set_owner`]). Frees are
/// counted here (batch by batch); allocations are not, to keep
/// allocating a packet as cheap as popping an index: an owner's
/// allocations are its frees plus the change in packets alive while it
/// was charged, which the runtime reads around each call
/// ([`Pool::in_use`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// Packets freed (their slots returned).
    pub freed: u64,
    /// Allocations refused because the pool was at its limit.
    pub refused: u64,
    /// Packets the account's element sent to an output it does not have
    /// (dropped; see [`Pool::note_no_output`]).
    pub no_output: u64,
}

/// A snapshot of a pool's counters (see [`Pool::counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolCounters {
    /// Packets alive now (in this pool's slots and in the port slots
    /// charged to it).
    pub in_use: usize,
    /// Of them, packets in switch ports' slots charged to this pool
    /// ([`crate::PortPool`]): they take none of this pool's slots.
    pub in_ports: usize,
    /// Allocations refused, ever.
    pub refused: u64,
}

/// A pool of packet slots in one shared-memory region.
///
/// Dropping the pool while packets from it are still alive leaks the region
/// (it is never unmapped under a live packet).
pub struct Pool {
    inner: std::mem::ManuallyDrop<Box<PoolInner>>,
}

impl Pool {
    /// Makes a pool of `nslots` slots backed by a fresh memfd; it never
    /// grows.
    pub fn new(nslots: usize) -> Result<Pool, PoolError> {
        Pool::growable(nslots, nslots)
    }

    /// Makes a pool of `initial` slots that grows, as packets are needed,
    /// up to `limit` slots (the address space for `limit` is reserved now;
    /// memory is used only for what is mapped).
    pub fn growable(initial: usize, limit: usize) -> Result<Pool, PoolError> {
        let limit = limit.max(initial);
        if initial == 0 || limit > u32::MAX as usize {
            return Err(PoolError::Size(initial.max(limit)));
        }
        let reserve = limit
            .checked_mul(SLOT_STRIDE)
            .and_then(|b| b.checked_next_multiple_of(PAGE))
            .ok_or(PoolError::Size(limit))?;
        let fd = rustix::fs::memfd_create("pronto-pool", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| PoolError::Memfd(initial, e))?;
        // SAFETY: a fresh anonymous, inaccessible mapping: it only reserves
        // address space, nothing refers to it yet.
        let ptr = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                reserve,
                rustix::mm::ProtFlags::empty(),
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::NORESERVE,
            )
        }
        .map_err(|e| PoolError::Map(reserve, e))?;
        let base = NonNull::new(ptr.cast::<u8>()).ok_or(PoolError::Size(initial))?;
        let inner = Box::new(PoolInner {
            base,
            nslots: Cell::new(0),
            limit: Cell::new(limit),
            reserved: limit,
            reserved_bytes: reserve,
            mapped: Cell::new(0),
            free: UnsafeCell::new(Vec::new()),
            refused: Cell::new(0),
            owner: Cell::new(0),
            accounts: UnsafeCell::new(vec![Account::default()]),
            fd: Some(fd),
            ext: Cell::new(0),
            chargers: UnsafeCell::new(Vec::new()),
            port: None,
        });
        if let Err(e) = inner.map_more(initial) {
            // SAFETY: the reservation made above; nothing refers to it.
            unsafe {
                let _ = rustix::mm::munmap(base.as_ptr().cast(), reserve);
            }
            return Err(e);
        }
        Ok(Pool {
            inner: std::mem::ManuallyDrop::new(inner),
        })
    }

    /// Number of slots in the pool now (it may grow up to [`Pool::limit`]).
    pub fn capacity(&self) -> usize {
        self.inner.nslots.get()
    }

    /// The most slots the pool will ever have.
    pub fn limit(&self) -> usize {
        self.inner.limit.get()
    }

    /// Lowers or raises the limit (within what was reserved when the pool
    /// was made, and never below the slots it has).
    pub fn set_limit(&self, limit: usize) {
        let l = limit.min(self.inner.reserved).max(self.inner.nslots.get());
        self.inner.limit.set(l);
    }

    /// Allocations refused so far because the pool was at its limit.
    pub fn refused(&self) -> u64 {
        self.inner.refused.get()
    }

    /// Allocations, packets alive and refusals.
    pub fn counters(&self) -> PoolCounters {
        PoolCounters {
            in_use: self.in_use(),
            in_ports: self.inner.ext.get().max(0) as usize,
            refused: self.inner.refused.get(),
        }
    }

    /// Keeps `n` separate accounts (at least one), all zero, and charges
    /// the last one from now on. A router keeps one per element and one
    /// for itself.
    pub fn set_accounts(&self, n: usize) {
        // SAFETY: the pool is single-threaded and no reference to the
        // accounts outlives a method of the pool.
        let a = unsafe { &mut *self.inner.accounts.get() };
        a.clear();
        a.resize(n.max(1), Account::default());
        self.inner.owner.set(a.len() - 1);
    }

    /// Charges frees and refusals to account `i` from now on (the last
    /// one if `i` is out of range); returns the account charged until now.
    /// One store: the runtime calls it around every element call.
    #[inline]
    pub fn set_owner(&self, i: usize) -> usize {
        self.inner.owner.replace(i)
    }

    /// Packets alive now (allocated and not yet freed).
    #[inline]
    pub fn in_use(&self) -> usize {
        (self.inner.nslots.get() - self.inner.free_len()).wrapping_add_signed(self.inner.ext.get())
    }

    /// Counts `n` packets the element being charged sent to an output it
    /// does not have (they are dropped with it): a drop reason the
    /// element's own counters do not see.
    #[cold]
    pub fn note_no_output(&self, n: u64) {
        self.inner.charge(|a| a.no_output += n);
    }

    /// Account `i` (zero if there is no such account).
    pub fn account(&self, i: usize) -> Account {
        self.inner.accounts().get(i).copied().unwrap_or_default()
    }

    /// Number of free slots.
    pub fn available(&self) -> usize {
        self.inner.free_len()
    }

    /// The memfd behind the pool, to share it with another process.
    pub fn memfd(&self) -> rustix::fd::BorrowedFd<'_> {
        use rustix::fd::AsFd;
        self.inner
            .fd
            .as_ref()
            .expect("a pool made by Pool::growable has its memfd")
            .as_fd()
    }

    /// Allocates an empty packet (length 0, default headroom, cleared
    /// annotations), or `None` when the pool is exhausted.
    #[inline]
    pub fn alloc(&self) -> Option<Packet> {
        let idx = self.inner.pop()?;
        let slot = self.inner.slot(idx);
        // SAFETY: the slot was on the free list, so no live Packet refers to
        // it; its header was initialized when the pool was made (the pool
        // pointer and index never change), and `reset` rewrites the rest.
        unsafe {
            let h = slot.cast::<SlotHeader>().as_ptr();
            (*h).reset();
            Some(Packet::from_slot(slot))
        }
    }

    /// Allocates a packet holding a copy of `data` (at most
    /// [`MAX_PACKET`] bytes, or `None`) with its timestamp annotation set
    /// and its link header marked at the start: what a trace reader or a
    /// device receive path makes, in one step.
    #[inline]
    pub fn alloc_frame(&self, data: &[u8], timestamp_ns: i64) -> Option<Packet> {
        if data.len() > MAX_PACKET {
            return None;
        }
        let idx = self.inner.pop()?;
        let slot = self.inner.slot(idx);
        // SAFETY: as in `alloc`: the slot was free and its header is
        // initialized; `frame` rewrites every per-packet field.
        unsafe {
            let h = slot.cast::<SlotHeader>().as_ptr();
            (*h).frame(data.len(), timestamp_ns);
            let mut p = Packet::from_slot(slot);
            crate::packet::copy_small(p.data_mut(), data);
            Some(p)
        }
    }

    /// Like [`Pool::alloc_frame`] for a frame of `len` bytes that is not a
    /// slice of this process's memory: `fill` writes it into the packet's
    /// `len` bytes (a frame in a switch port's shared slot, copied once,
    /// straight into the packet). `None` past [`MAX_PACKET`] bytes or when
    /// the pool is exhausted (`fill` is then not called).
    #[inline]
    pub fn alloc_frame_with(
        &self,
        len: usize,
        timestamp_ns: i64,
        fill: impl FnOnce(&mut [u8]),
    ) -> Option<Packet> {
        if len > MAX_PACKET {
            return None;
        }
        let idx = self.inner.pop()?;
        let slot = self.inner.slot(idx);
        // SAFETY: as in `alloc_frame`.
        let mut p = unsafe {
            let h = slot.cast::<SlotHeader>().as_ptr();
            (*h).frame(len, timestamp_ns);
            Packet::from_slot(slot)
        };
        fill(p.data_mut());
        Some(p)
    }

    /// Allocates a packet holding a copy of `data` (truncated to
    /// [`MAX_PACKET`]; callers that care check the length first).
    #[inline]
    pub fn alloc_from(&self, data: &[u8]) -> Option<Packet> {
        let mut p = self.alloc()?;
        let n = data.len().min(MAX_PACKET);
        crate::packet::copy_small(p.put_uninit(n), &data[..n]);
        Some(p)
    }

    /// Appends up to `n` fresh packets to `batch` (no more than its room),
    /// each a copy of `data` (at most [`MAX_PACKET`] bytes) with timestamp
    /// annotation `timestamp_ns` (0: unset); returns how many. What a
    /// source makes, a batch at a time: the free list is checked once for
    /// the whole run, not once per packet. Fewer than `n` only when the
    /// pool is at its limit (each refused allocation counted, as
    /// [`Pool::alloc`] counts it).
    #[inline]
    pub fn alloc_copies(
        &self,
        data: &[u8],
        n: usize,
        timestamp_ns: i64,
        batch: &mut Batch,
    ) -> usize {
        let len = data.len().min(MAX_PACKET);
        let data = &data[..len];
        let n = n.min(batch.room());
        // SAFETY: as in free_len; the borrow ends before anything else
        // touches the free list.
        let free = unsafe { &mut *self.inner.free.get() };
        if free.len() < n {
            return self.alloc_copies_slow(data, n, timestamp_ns, batch);
        }
        let start = free.len() - n;
        // The last index first, as `alloc` pops them.
        for (place, &idx) in batch.spare().iter_mut().zip(free[start..].iter().rev()) {
            let slot = self.inner.slot(idx);
            // SAFETY: as in `alloc`: the slot was on the free list (it is
            // taken off below, before anything can pop it again), so no
            // live Packet refers to it, and its header is initialized.
            let mut p = unsafe {
                let h = slot.cast::<SlotHeader>().as_ptr();
                (*h).reset();
                (*h).anno.timestamp_ns = timestamp_ns;
                Packet::from_slot(slot)
            };
            crate::packet::copy_small(p.put_uninit(len), data);
            place.write(p);
        }
        free.truncate(start);
        // SAFETY: the first n spare places were written just above.
        unsafe { batch.grow(n) };
        n
    }

    /// `alloc_copies` when the free list has fewer than `n` slots: one at
    /// a time, so that the pool grows or counts its refusal.
    #[cold]
    fn alloc_copies_slow(
        &self,
        data: &[u8],
        n: usize,
        timestamp_ns: i64,
        batch: &mut Batch,
    ) -> usize {
        let mut made = 0;
        while made < n {
            let Some(mut p) = self.alloc() else { break };
            crate::packet::copy_small(p.put_uninit(data.len()), data);
            p.set_timestamp_ns(timestamp_ns);
            if batch.push(p).is_err() {
                break;
            }
            made += 1;
        }
        made
    }

    /// A copy of `p` (bytes, header offsets and annotations) in a new slot.
    #[inline]
    pub fn clone_packet(&self, p: &Packet) -> Option<Packet> {
        let mut q = self.alloc()?;
        q.copy_from(p);
        Some(q)
    }

    /// The pool's shared state (for a port pool charging it).
    pub(crate) fn inner(&self) -> &PoolInner {
        &self.inner
    }

    /// True if `p` lives in this pool.
    #[inline]
    pub fn owns(&self, p: &Packet) -> bool {
        std::ptr::eq(p.pool_ptr(), &**self.inner)
    }

    /// `p` as a packet of this pool: itself if it already is one, else a
    /// copy (the original is freed into its own pool), or `None` when this
    /// pool is exhausted. Used when a packet outlives the configuration
    /// whose pool it came from (hot-swap: a queue's packets move to the new
    /// configuration's queue), so that the old pool can be released.
    pub fn adopt(&self, p: Packet) -> Option<Packet> {
        if self.owns(&p) {
            return Some(p);
        }
        self.clone_packet(&p)
    }
}

impl PoolInner {
    #[inline]
    pub(crate) fn free_len(&self) -> usize {
        // SAFETY: the pool is single-threaded (not Sync) and no reference to
        // the free list outlives any method of PoolInner.
        unsafe { (*self.free.get()).len() }
    }

    fn accounts(&self) -> &[Account] {
        // SAFETY: as in free_len.
        unsafe { &*self.accounts.get() }
    }

    /// Updates the account charged now (frees are charged batch by
    /// batch, so this is not per packet).
    #[inline(always)]
    pub(crate) fn charge(&self, f: impl FnOnce(&mut Account)) {
        // SAFETY: as in free_len; the reference lives for one counter
        // update.
        let a = unsafe { &mut *self.accounts.get() };
        let last = a.len() - 1;
        let i = self.owner.get().min(last);
        f(&mut a[i]);
    }

    #[inline]
    fn pop(&self) -> Option<u32> {
        // SAFETY: as in free_len.
        match unsafe { (*self.free.get()).pop() } {
            Some(i) => Some(i),
            None => self.grow_and_pop(),
        }
    }

    /// The free list ran dry: maps more slots (doubling, up to the limit)
    /// and pops one, or counts a refusal.
    #[cold]
    #[inline(never)]
    fn grow_and_pop(&self) -> Option<u32> {
        let n = self.nslots.get();
        let more = n.max(64).min(self.limit.get() - n);
        if more == 0 || self.map_more(more).is_err() {
            // At the limit, or the system has no memory to give: the pool
            // stays as it is and refuses (counted).
            self.limit.set(self.nslots.get());
            self.refused.set(self.refused.get() + 1);
            self.charge(|a| a.refused += 1);
            return None;
        }
        // SAFETY: as in free_len.
        unsafe { (*self.free.get()).pop() }
    }

    /// Maps `more` slots after the current ones (inside the reservation),
    /// writes their headers and puts them on the free list.
    fn map_more(&self, more: usize) -> Result<(), PoolError> {
        let old = self.nslots.get();
        let new = old + more;
        debug_assert!(new <= self.reserved);
        // Mappings are made of whole pages: map from where the last one
        // ended to the page that holds the new last slot's end.
        let off = self.mapped.get();
        let end = (new * SLOT_STRIDE)
            .next_multiple_of(PAGE)
            .min(self.reserved_bytes);
        if end > off {
            // A port pool (no memfd of its own) never grows.
            let fd = self.fd.as_ref().ok_or(PoolError::Size(new))?;
            rustix::fs::ftruncate(fd, end as u64).map_err(|e| PoolError::Memfd(new, e))?;
            // SAFETY: [off, end) lies inside the reservation made when the
            // pool was made (end <= reserved_bytes) and past every mapped
            // page, so it holds no slot ever handed out: replacing that part
            // of the inaccessible reservation with the memfd's pages affects
            // nothing in use.
            unsafe {
                rustix::mm::mmap(
                    self.base.as_ptr().add(off).cast(),
                    end - off,
                    rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                    rustix::mm::MapFlags::SHARED
                        | rustix::mm::MapFlags::FIXED
                        | rustix::mm::MapFlags::POPULATE,
                    fd,
                    off as u64,
                )
            }
            .map_err(|e| PoolError::Map(end - off, e))?;
            self.mapped.set(end);
        }
        for idx in old as u32..new as u32 {
            let slot = self.slot(idx);
            // SAFETY: the slot lies inside the mapping, is 64-byte aligned,
            // and nothing refers to it yet. A slot's pool pointer and index
            // are written once here and never change.
            unsafe {
                slot.cast::<SlotHeader>()
                    .as_ptr()
                    .write(SlotHeader::new(self, idx));
            }
        }
        self.nslots.set(new);
        // SAFETY: as in free_len. Low slots are handed out first: the stack
        // pops from the end.
        let free = unsafe { &mut *self.free.get() };
        free.reserve_exact(new - free.len());
        free.extend((old as u32..new as u32).rev());
        Ok(())
    }

    #[inline]
    pub(crate) fn push(&self, idx: u32) {
        if self.port.is_some() {
            self.port_free(&[idx]);
            return;
        }
        debug_assert!((idx as usize) < self.nslots.get());
        self.charge(|a| a.freed += 1);
        // SAFETY: as in free_len. The vector's capacity is nslots and every
        // index is pushed at most once per pop, so this never reallocates.
        unsafe { (*self.free.get()).push(idx) }
    }

    /// Returns several slots at once (one capacity check).
    #[inline]
    pub(crate) fn push_many(&self, idx: &[u32]) {
        if self.port.is_some() {
            self.port_free(idx);
            return;
        }
        self.charge(|a| a.freed += idx.len() as u64);
        // SAFETY: as in free_len; capacity is nslots and each index was
        // popped once, so this never reallocates.
        unsafe { (*self.free.get()).extend_from_slice(idx) }
    }

    #[inline]
    pub(crate) fn slot(&self, idx: u32) -> NonNull<u8> {
        debug_assert!((idx as usize) < self.reserved);
        // SAFETY: idx < nslots <= reserved, so the offset stays inside the
        // mapping.
        unsafe { self.base.add(idx as usize * SLOT_STRIDE) }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.inner.free_len() != self.inner.nslots.get() {
            // Packets are still alive and point into the region and at the
            // inner state: leak both rather than leave them dangling.
            return;
        }
        // Port pools charging this one charge themselves from now on.
        // SAFETY: as in free_len; each charger is a live port pool (a port
        // pool leaves this list before it goes).
        for &c in unsafe { &*self.inner.chargers.get() } {
            // SAFETY: as above: `c` is a live port pool on this thread.
            unsafe { (*c).forget_charge(&self.inner) };
        }
        // SAFETY: every slot is back on the free list, so nothing refers to
        // the mapping; base and the reserved length are exactly what the
        // reserving mmap returned.
        unsafe {
            let _ = rustix::mm::munmap(self.inner.base.as_ptr().cast(), self.inner.reserved_bytes);
            // SAFETY: inner is not used after this point.
            std::mem::ManuallyDrop::drop(&mut self.inner);
        }
    }
}
