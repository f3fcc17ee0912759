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

use std::cell::UnsafeCell;
use std::ptr::NonNull;

use crate::packet::{Packet, SlotHeader};

/// Bytes between the starts of consecutive slots.
pub const SLOT_STRIDE: usize = 2176;
/// Bytes of slot header (metadata and annotations) at the start of each slot.
pub const HEADER_SIZE: usize = std::mem::size_of::<SlotHeader>();
/// Bytes of packet buffer per slot (headroom + data + tailroom).
pub const BUFFER_SIZE: usize = SLOT_STRIDE - HEADER_SIZE;
/// Headroom left in front of a freshly made packet, for `EtherEncap`, `Unstrip`, ...
pub const DEFAULT_HEADROOM: usize = 128;
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
    base: NonNull<u8>,
    nslots: usize,
    free: UnsafeCell<Vec<u32>>,
    fd: rustix::fd::OwnedFd,
}

/// A pool of packet slots in one shared-memory region.
///
/// Dropping the pool while packets from it are still alive leaks the region
/// (it is never unmapped under a live packet).
pub struct Pool {
    inner: std::mem::ManuallyDrop<Box<PoolInner>>,
}

impl Pool {
    /// Makes a pool of `nslots` slots backed by a fresh memfd.
    pub fn new(nslots: usize) -> Result<Pool, PoolError> {
        if nslots == 0 || nslots > u32::MAX as usize {
            return Err(PoolError::Size(nslots));
        }
        let bytes = nslots * SLOT_STRIDE;
        let fd = rustix::fs::memfd_create("pronto-pool", rustix::fs::MemfdFlags::CLOEXEC)
            .map_err(|e| PoolError::Memfd(nslots, e))?;
        rustix::fs::ftruncate(&fd, bytes as u64).map_err(|e| PoolError::Memfd(nslots, e))?;
        // SAFETY: mapping a fresh memfd of exactly `bytes` bytes; nothing else
        // refers to this memory yet.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                bytes,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED | rustix::mm::MapFlags::POPULATE,
                &fd,
                0,
            )
        }
        .map_err(|e| PoolError::Map(bytes, e))?;
        let base = NonNull::new(ptr.cast::<u8>()).ok_or(PoolError::Size(nslots))?;
        // Hand out low slots first: the stack pops from the end.
        let free: Vec<u32> = (0..nslots as u32).rev().collect();
        let inner = Box::new(PoolInner {
            base,
            nslots,
            free: UnsafeCell::new(free),
            fd,
        });
        for idx in 0..nslots as u32 {
            let slot = inner.slot(idx);
            // SAFETY: the slot lies inside the fresh mapping, is 64-byte
            // aligned, and nothing refers to it yet. A slot's pool pointer
            // and index are written once here and never change.
            unsafe {
                slot.cast::<SlotHeader>()
                    .as_ptr()
                    .write(SlotHeader::new(&*inner, idx));
            }
        }
        Ok(Pool {
            inner: std::mem::ManuallyDrop::new(inner),
        })
    }

    /// Number of slots in the pool.
    pub fn capacity(&self) -> usize {
        self.inner.nslots
    }

    /// Number of free slots.
    pub fn available(&self) -> usize {
        self.inner.free_len()
    }

    /// The memfd behind the pool, to share it with another process.
    pub fn memfd(&self) -> rustix::fd::BorrowedFd<'_> {
        use rustix::fd::AsFd;
        self.inner.fd.as_fd()
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

    /// Allocates a packet holding a copy of `data` (truncated to
    /// [`MAX_PACKET`]; callers that care check the length first).
    #[inline]
    pub fn alloc_from(&self, data: &[u8]) -> Option<Packet> {
        let mut p = self.alloc()?;
        let n = data.len().min(MAX_PACKET);
        crate::packet::copy_small(p.put_uninit(n), &data[..n]);
        Some(p)
    }

    /// A copy of `p` (bytes, header offsets and annotations) in a new slot.
    #[inline]
    pub fn clone_packet(&self, p: &Packet) -> Option<Packet> {
        let mut q = self.alloc()?;
        q.copy_from(p);
        Some(q)
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
    fn free_len(&self) -> usize {
        // SAFETY: the pool is single-threaded (not Sync) and no reference to
        // the free list outlives any method of PoolInner.
        unsafe { (*self.free.get()).len() }
    }

    #[inline]
    fn pop(&self) -> Option<u32> {
        // SAFETY: as in free_len.
        unsafe { (*self.free.get()).pop() }
    }

    #[inline]
    pub(crate) fn push(&self, idx: u32) {
        debug_assert!((idx as usize) < self.nslots);
        // SAFETY: as in free_len. The vector's capacity is nslots and every
        // index is pushed at most once per pop, so this never reallocates.
        unsafe { (*self.free.get()).push(idx) }
    }

    /// Returns several slots at once (one capacity check).
    #[inline]
    pub(crate) fn push_many(&self, idx: &[u32]) {
        // SAFETY: as in free_len; capacity is nslots and each index was
        // popped once, so this never reallocates.
        unsafe { (*self.free.get()).extend_from_slice(idx) }
    }

    #[inline]
    fn slot(&self, idx: u32) -> NonNull<u8> {
        debug_assert!((idx as usize) < self.nslots);
        // SAFETY: idx < nslots, so the offset stays inside the mapping.
        unsafe { self.base.add(idx as usize * SLOT_STRIDE) }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.inner.free_len() != self.inner.nslots {
            // Packets are still alive and point into the region and at the
            // inner state: leak both rather than leave them dangling.
            return;
        }
        // SAFETY: every slot is back on the free list, so nothing refers to
        // the mapping; base/len are exactly what mmap returned.
        unsafe {
            let _ = rustix::mm::munmap(
                self.inner.base.as_ptr().cast(),
                self.inner.nslots * SLOT_STRIDE,
            );
            // SAFETY: inner is not used after this point.
            std::mem::ManuallyDrop::drop(&mut self.inner);
        }
    }
}
