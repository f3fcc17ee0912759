//! A batch: up to [`BATCH_MAX`] packet handles, processed together.
//!
//! A batch is a fixed array on the stack or in an element, never a heap
//! allocation per use. Handles are one pointer each, so moving packets
//! between batches copies 8 bytes per packet.

use std::mem::MaybeUninit;

use crate::packet::Packet;

/// The most packets a batch holds.
pub const BATCH_MAX: usize = 256;

/// Up to [`BATCH_MAX`] packets.
pub struct Batch {
    len: usize,
    pkts: [MaybeUninit<Packet>; BATCH_MAX],
}

impl Default for Batch {
    fn default() -> Self {
        Self::new()
    }
}

impl Batch {
    /// An empty batch.
    #[inline]
    pub const fn new() -> Batch {
        Batch {
            len: 0,
            pkts: [const { MaybeUninit::uninit() }; BATCH_MAX],
        }
    }

    /// Number of packets.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the batch holds no packet.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when the batch holds [`BATCH_MAX`] packets.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.len == BATCH_MAX
    }

    /// Free places left.
    #[inline]
    pub fn room(&self) -> usize {
        BATCH_MAX - self.len
    }

    /// Appends a packet; gives it back if the batch is full.
    #[inline]
    pub fn push(&mut self, p: Packet) -> Result<(), Packet> {
        if self.len == BATCH_MAX {
            return Err(p);
        }
        self.pkts[self.len].write(p);
        self.len += 1;
        Ok(())
    }

    /// Removes and returns the last packet.
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        // SAFETY: slots below the old len are initialized; we shrink len
        // first so the slot is not read again.
        Some(unsafe { self.pkts[self.len].assume_init_read() })
    }

    /// The packets, as a slice.
    #[inline]
    pub fn as_slice(&self) -> &[Packet] {
        // SAFETY: the first len slots are initialized, and MaybeUninit<T>
        // has T's layout.
        unsafe { std::slice::from_raw_parts(self.pkts.as_ptr().cast::<Packet>(), self.len) }
    }

    /// The packets, as a mutable slice.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [Packet] {
        // SAFETY: as in as_slice, with exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.pkts.as_mut_ptr().cast::<Packet>(), self.len) }
    }

    /// Iterates over the packets.
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, Packet> {
        self.as_slice().iter()
    }

    /// Iterates over the packets, mutably.
    #[inline]
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Packet> {
        self.as_mut_slice().iter_mut()
    }

    /// Drops every packet (returning their slots to the pool). Runs of
    /// packets from one pool go back in one step.
    #[inline]
    pub fn clear(&mut self) {
        let n = self.len;
        self.len = 0;
        // Slots go back in runs of up to 32 from one pool (a small array:
        // zeroing a batch-sized one would cost more than freeing one
        // packet). The inner loop tests only the pool: the run's length is
        // bounded by the zip.
        let mut idx = [0u32; 32];
        let mut i = 0;
        while i < n {
            // SAFETY: slots below the old len were initialized; len is 0 now
            // so none is read again; each packet is taken exactly once.
            let (pool, first) = unsafe { self.pkts[i].assume_init_read() }.into_slot();
            i += 1;
            idx[0] = first;
            let mut k = 1;
            let end = n.min(i + idx.len() - 1);
            for (s, slot) in self.pkts[i..end].iter().zip(&mut idx[1..]) {
                // SAFETY: as above; the packet is only looked at here.
                let p = unsafe { s.assume_init_ref() };
                if p.pool_ptr() != pool {
                    break;
                }
                // SAFETY: as above: taken once, never read again.
                *slot = unsafe { s.assume_init_read() }.into_slot().1;
                k += 1;
            }
            i += k - 1;
            // SAFETY: the indices came from into_slot on this pool.
            unsafe { Packet::free_slots(pool, &idx[..k]) };
        }
    }

    /// Room for `n` more packets written in place: the batch's free
    /// places, to be followed by [`Batch::grow`].
    #[inline]
    pub(crate) fn spare(&mut self) -> &mut [MaybeUninit<Packet>] {
        &mut self.pkts[self.len..]
    }

    /// Counts `n` more packets as held, after they were written into the
    /// first `n` places of [`Batch::spare`].
    ///
    /// # Safety
    /// Those places must hold initialized packets owned by nobody else.
    #[inline]
    pub(crate) unsafe fn grow(&mut self, n: usize) {
        debug_assert!(self.len + n <= BATCH_MAX);
        self.len += n;
    }

    /// Keeps the packets for which `f` returns true, in order; the others
    /// are handed to `rejected` (which may drop them or route them
    /// elsewhere).
    #[inline]
    pub fn retain_or<F, R>(&mut self, mut f: F, mut rejected: R)
    where
        F: FnMut(&mut Packet) -> bool,
        R: FnMut(Packet),
    {
        let n = self.len;
        self.len = 0;
        let mut kept = 0;
        for i in 0..n {
            // SAFETY: slot i < n is initialized and is read exactly once:
            // it is either moved down to `kept` or handed away.
            let mut p = unsafe { self.pkts[i].assume_init_read() };
            if f(&mut p) {
                self.pkts[kept].write(p);
                kept += 1;
            } else {
                rejected(p);
            }
        }
        self.len = kept;
    }

    /// Routes every packet: `f` returns the output port for it, or `None`
    /// to drop it. Packets bound for the first routed packet's port stay
    /// in the batch, in order, and that port is returned; packets for any
    /// other port are handed to `elsewhere(port, packet)`, in order. A batch
    /// whose packets all go one way is therefore never copied, whichever
    /// port that is.
    #[inline]
    pub fn route<F, E>(&mut self, mut f: F, mut elsewhere: E) -> Option<usize>
    where
        F: FnMut(&mut Packet) -> Option<usize>,
        E: FnMut(usize, Packet),
    {
        let n = self.len;
        self.len = 0;
        let mut kept = 0;
        let mut keep: Option<usize> = None;
        for i in 0..n {
            // SAFETY: slot i < n is initialized and is read exactly once:
            // it is moved down to `kept`, handed away, or dropped.
            let mut p = unsafe { self.pkts[i].assume_init_read() };
            match f(&mut p) {
                None => drop(p),
                Some(port) if keep == Some(port) || keep.is_none() => {
                    keep = Some(port);
                    self.pkts[kept].write(p);
                    kept += 1;
                }
                Some(port) => elsewhere(port, p),
            }
        }
        self.len = kept;
        keep
    }

    /// Moves every packet out, in order, leaving the batch empty.
    #[inline]
    pub fn drain(&mut self) -> Drain<'_> {
        let n = self.len;
        self.len = 0;
        Drain {
            batch: self,
            next: 0,
            end: n,
        }
    }

    /// Moves all packets of `other` to the end of `self`, as many as fit;
    /// returns how many were moved.
    pub fn append(&mut self, other: &mut Batch) -> usize {
        let n = other.len.min(self.room());
        for i in 0..n {
            // SAFETY: slot i of other is initialized; after the loop the
            // remaining packets are moved down and other's len adjusted so
            // each packet is owned exactly once.
            let p = unsafe { other.pkts[i].assume_init_read() };
            self.pkts[self.len].write(p);
            self.len += 1;
        }
        let rest = other.len - n;
        // SAFETY: slots n..n+rest are initialized; a bitwise move down is
        // a move of ownership since slots 0..n were already moved out.
        unsafe {
            std::ptr::copy(other.pkts.as_ptr().add(n), other.pkts.as_mut_ptr(), rest);
        }
        other.len = rest;
        n
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        self.clear();
    }
}

/// Draining iterator over a batch's packets.
pub struct Drain<'a> {
    batch: &'a mut Batch,
    next: usize,
    end: usize,
}

impl Iterator for Drain<'_> {
    type Item = Packet;

    #[inline]
    fn next(&mut self) -> Option<Packet> {
        if self.next == self.end {
            return None;
        }
        let i = self.next;
        self.next += 1;
        // SAFETY: slots next..end are initialized and each is read once;
        // the batch's len was set to 0 when draining began.
        Some(unsafe { self.batch.pkts[i].assume_init_read() })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        for i in self.next..self.end {
            // SAFETY: packets not yet yielded are still initialized.
            unsafe { self.batch.pkts[i].assume_init_drop() }
        }
    }
}
