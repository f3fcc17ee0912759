//! Large lookup tables backed by transparent huge pages.
//!
//! A DIR-24-8 route table is 2^24 slots; a lookup with a random destination
//! touches one slot somewhere in tens of megabytes, so with 4 KiB pages
//! nearly every lookup also misses the TLB. A [`HugeTable`] is an anonymous
//! mapping aligned to 2 MiB and marked `MADV_HUGEPAGE`, so the kernel backs
//! it with huge pages where it can (this is advice: where huge pages are
//! unavailable the table works the same, only slower).
//!
//! The same mapping holds any plain `Copy` slot type through
//! [`HugeTable::filled`] (the flow tables of the stateful elements: a
//! million flows are over 100 MB of slots, read at random); tables smaller
//! than two huge pages are not advised, so that a small table does not
//! cost a 2 MiB page.

use std::ptr::NonNull;

/// Element types a table can hold: plain integers (and fixed arrays of
/// them), valid when all bytes are zero.
pub trait TableItem: Copy + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! items {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl TableItem for $t {}
    )*};
}
items!(u8, u16, u32, u64, [u64; 4]);

const HUGE: usize = 2 << 20;

/// A fixed-length array in its own huge-page mapping.
pub struct HugeTable<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    map_base: *mut std::ffi::c_void,
    map_len: usize,
}

// SAFETY: the table owns its mapping exclusively and its items by value.
unsafe impl<T: Copy + Send> Send for HugeTable<T> {}
// SAFETY: shared access is read-only through `&[T]`.
unsafe impl<T: Copy + Sync> Sync for HugeTable<T> {}

impl<T: TableItem> HugeTable<T> {
    /// A table of `len` zeroed items.
    pub fn zeroed(len: usize) -> std::io::Result<HugeTable<T>> {
        Self::map(len, true)
    }

    /// A table of `len` zeroed items in ordinary pages, not advised onto
    /// huge pages (unless it spans two of them): a page that is never
    /// written is never given memory (reading it maps the kernel's zero
    /// page), so a table that is mostly zeros costs only its other pages.
    pub fn zeroed_sparse(len: usize) -> std::io::Result<HugeTable<T>> {
        Self::map(len, false)
    }
}

impl<T: Copy> HugeTable<T> {
    /// A table of `len` copies of `v`.
    pub fn filled(len: usize, v: T) -> std::io::Result<HugeTable<T>> {
        let t = Self::map(len, false)?;
        for i in 0..len {
            // SAFETY: `i < len`, inside the mapping `map` made for `len`
            // items of `T`, aligned to 2 MiB; a `Copy` type has no drop
            // glue, so writing over the zero bytes drops nothing.
            unsafe { t.ptr.as_ptr().add(i).write(v) };
        }
        Ok(t)
    }

    /// Maps room for `len` items (zero bytes), advised onto huge pages
    /// when `always` or when it spans at least two of them.
    fn map(len: usize, always: bool) -> std::io::Result<HugeTable<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .filter(|b| *b <= isize::MAX as usize / 2)
            .ok_or_else(|| std::io::Error::other("table too large"))?;
        if bytes == 0 {
            return Ok(HugeTable {
                ptr: NonNull::dangling(),
                len: 0,
                map_base: std::ptr::null_mut(),
                map_len: 0,
            });
        }
        // Over-allocate by one huge page so that the table can start on a
        // 2 MiB boundary.
        let map_len = bytes + HUGE;
        // SAFETY: a fresh private anonymous mapping; nothing else refers to
        // the range.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                map_len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }?;
        let aligned = (base as usize).next_multiple_of(HUGE);
        let start = aligned as *mut std::ffi::c_void;
        if always || bytes >= 2 * HUGE {
            // SAFETY: [start, start + bytes) lies inside the mapping made
            // above; the advice changes only how the kernel backs it.
            let _ = unsafe { rustix::mm::madvise(start, bytes, rustix::mm::Advice::LinuxHugepage) };
        }
        let ptr = NonNull::new(start.cast::<T>()).ok_or_else(|| std::io::Error::other("null"))?;
        Ok(HugeTable {
            ptr,
            len,
            map_base: base,
            map_len,
        })
    }
}

impl<T: Copy> std::ops::Deref for HugeTable<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` is aligned (2 MiB) and points at `len` initialised
        // items that this table owns (zero-filled anonymous memory, valid
        // for the integers `zeroed` takes; written one by one by `filled`).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for HugeTable<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for HugeTable<T> {
    fn drop(&mut self) {
        if self.map_len != 0 {
            // SAFETY: unmaps exactly the mapping made in `zeroed`; no slice
            // borrowed from the table outlives it.
            let _ = unsafe { rustix::mm::munmap(self.map_base, self.map_len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_aligned_writable() {
        let mut t: HugeTable<u32> = HugeTable::zeroed(1 << 22).expect("map");
        assert_eq!(t.len(), 1 << 22);
        assert_eq!(t.as_ptr() as usize % HUGE, 0);
        assert!(t.iter().all(|&v| v == 0));
        t[12345] = 7;
        t[(1 << 22) - 1] = 9;
        assert_eq!(t[12345] + t[(1 << 22) - 1], 16);
        let e: HugeTable<u16> = HugeTable::zeroed(0).expect("empty");
        assert!(e.is_empty());
        let mut s: HugeTable<u8> = HugeTable::zeroed_sparse(65_536).expect("map");
        assert!(s.iter().all(|&v| v == 0));
        s[40_000] = 3;
        assert_eq!(s.iter().map(|&v| u32::from(v)).sum::<u32>(), 3);
    }

    #[test]
    fn filled_with_a_slot_type() {
        #[derive(Clone, Copy, PartialEq, Debug)]
        #[repr(C, align(64))]
        struct Slot {
            key: u128,
            entry: u32,
        }
        let free = Slot {
            key: 0,
            entry: u32::MAX,
        };
        let mut t = HugeTable::filled(100_000, free).expect("map");
        assert_eq!(t.len(), 100_000);
        assert_eq!(t.as_ptr() as usize % HUGE, 0);
        assert!(t.iter().all(|s| *s == free));
        t[99_999].entry = 3;
        t.fill(free);
        assert!(t.iter().all(|s| *s == free));
    }
}
