//! Shared memory regions: a memfd mapped read-write and shared, so that
//! another process can map the same pages from the file descriptor.

use std::os::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::Mutex;

/// A memfd-backed region mapped shared into this process. The mapping
/// keeps the memory; the descriptor is needed only to hand the region to
/// a peer and may be closed once that is done ([`SharedRegion::close_fd`]),
/// so that a process holding thousands of regions holds no descriptor
/// for them.
pub struct SharedRegion {
    fd: Mutex<Option<OwnedFd>>,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory; every access to its contents goes
// through atomics (see `ring`), which are valid from any thread.
unsafe impl Send for SharedRegion {}
// SAFETY: as above.
unsafe impl Sync for SharedRegion {}

impl SharedRegion {
    /// A new zero-filled region of `len` bytes (`name` shows in
    /// `/proc/PID/maps`). The file is sealed against shrinking and growing,
    /// so that no holder of its descriptor can make mapped pages vanish
    /// (touching them would raise `SIGBUS`).
    pub fn create(name: &str, len: usize) -> std::io::Result<SharedRegion> {
        if len == 0 {
            return Err(std::io::Error::other("shared region of zero bytes"));
        }
        let fd = rustix::fs::memfd_create(
            name,
            rustix::fs::MemfdFlags::CLOEXEC | rustix::fs::MemfdFlags::ALLOW_SEALING,
        )?;
        rustix::fs::ftruncate(&fd, len as u64)?;
        rustix::fs::fcntl_add_seals(
            &fd,
            rustix::fs::SealFlags::SHRINK
                | rustix::fs::SealFlags::GROW
                | rustix::fs::SealFlags::SEAL,
        )?;
        Self::map(fd, len)
    }

    /// Maps a region another process created, checking that the file is
    /// exactly `len` bytes long and sealed against shrinking (a peer could
    /// hand over a shorter file, or shrink it later, and touching pages
    /// beyond its end would raise `SIGBUS`).
    pub fn attach(fd: OwnedFd, len: usize) -> std::io::Result<SharedRegion> {
        let st = rustix::fs::fstat(&fd)?;
        if st.st_size != len as i64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("shared region is {} bytes, expected {len}", st.st_size),
            ));
        }
        let seals = rustix::fs::fcntl_get_seals(&fd).unwrap_or(rustix::fs::SealFlags::empty());
        if !seals.contains(rustix::fs::SealFlags::SHRINK) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "shared region is not sealed against shrinking",
            ));
        }
        Self::map(fd, len)
    }

    fn map(fd: OwnedFd, len: usize) -> std::io::Result<SharedRegion> {
        // SAFETY: a fresh shared mapping of `len` bytes of a file that is
        // `len` bytes long; nothing in this process refers to the range yet.
        let p = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
                &fd,
                0,
            )
        }?;
        let ptr = NonNull::new(p.cast::<u8>())
            .ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(SharedRegion {
            fd: Mutex::new(Some(fd)),
            ptr,
            len,
        })
    }

    /// Another descriptor for the same file, to hand to a peer (an error
    /// once [`SharedRegion::close_fd`] was called).
    pub fn dup_fd(&self) -> std::io::Result<OwnedFd> {
        let fd = self.fd.lock().unwrap_or_else(|e| e.into_inner());
        match fd.as_ref() {
            Some(fd) => Ok(rustix::io::fcntl_dupfd_cloexec(fd, 0)?),
            None => Err(std::io::Error::other(
                "the shared region's descriptor was closed after it was handed over",
            )),
        }
    }

    /// Closes this process's descriptor of the region; the mapping (and
    /// the peers' descriptors) stay. After this the region can no longer
    /// be handed to another peer.
    pub fn close_fd(&self) {
        self.fd.lock().unwrap_or_else(|e| e.into_inner()).take();
    }

    /// True while this process holds a descriptor of the region.
    pub fn has_fd(&self) -> bool {
        self.fd.lock().unwrap_or_else(|e| e.into_inner()).is_some()
    }

    /// The region's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length region (never: `create` refuses them).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The region's first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn atomic_u32(&self, off: usize) -> Option<&std::sync::atomic::AtomicU32> {
        if !off.is_multiple_of(4) || off.checked_add(4)? > self.len {
            return None;
        }
        // SAFETY: a 4-aligned offset inside the mapping (checked above),
        // which lives as long as `self`; every access to region bytes is
        // atomic.
        Some(unsafe {
            &*(self
                .ptr
                .as_ptr()
                .add(off)
                .cast::<std::sync::atomic::AtomicU32>())
        })
    }

    /// Stores `v` at byte offset `off` (4-aligned, in bounds; else
    /// nothing happens and false is returned). For tools and tests that
    /// play a misbehaving peer.
    pub fn store_u32(&self, off: usize, v: u32) -> bool {
        self.atomic_u32(off)
            .map(|a| a.store(v, std::sync::atomic::Ordering::SeqCst))
            .is_some()
    }

    /// Copies `src` to byte offset `off`; false (and nothing written) if
    /// the range is not inside the region.
    #[inline]
    pub fn write_bytes(&self, off: usize, src: &[u8]) -> bool {
        if off.checked_add(src.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: the destination range is inside the mapping (checked
        // above), which lives as long as `self`; `src` is a Rust slice and
        // cannot overlap a range we only reach through raw pointers. No
        // reference to region bytes is created: the peer may write the
        // same bytes concurrently, which can only make the copied values
        // wrong (packet bytes are data, never trusted for control).
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(off), src.len())
        };
        true
    }

    /// Asks the CPU to bring in the cache line at byte offset `off`,
    /// without waiting for it (nothing if `off` is outside the region): a
    /// consumer that will read the frames of a whole batch, written on
    /// another CPU, asks for all of them first, so that their misses
    /// overlap instead of following one another. A hint: nothing a
    /// program can see changes.
    #[inline(always)]
    pub fn prefetch(&self, off: usize) {
        if off >= self.len {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `off` is inside the mapping (checked above), so the
        // pointer is in bounds; PREFETCHT0 is in the x86-64 baseline (SSE),
        // reads nothing a program can observe and never faults.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                self.ptr.as_ptr().add(off).cast::<i8>(),
            );
        }
    }

    /// Copies `dst.len()` bytes from byte offset `off` into `dst`; false
    /// (and `dst` untouched) if the range is not inside the region.
    #[inline]
    pub fn read_bytes(&self, off: usize, dst: &mut [u8]) -> bool {
        if off.checked_add(dst.len()).is_none_or(|end| end > self.len) {
            return false;
        }
        // SAFETY: as in `write_bytes`, with the roles swapped.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr().add(off), dst.as_mut_ptr(), dst.len())
        };
        true
    }

    /// Copies `len` bytes from byte offset `off` of this region to byte
    /// offset `dst_off` of `dst` (the switch's one copy per delivered
    /// packet); false (and nothing copied) unless both ranges are inside
    /// their regions and, within one region, do not overlap.
    #[inline]
    pub fn copy_to(&self, off: usize, dst: &SharedRegion, dst_off: usize, len: usize) -> bool {
        let (Some(end), Some(dst_end)) = (off.checked_add(len), dst_off.checked_add(len)) else {
            return false;
        };
        if end > self.len || dst_end > dst.len {
            return false;
        }
        if std::ptr::eq(self, dst) && off < dst_end && dst_off < end {
            return false;
        }
        // SAFETY: both ranges lie inside live mappings (checked above)
        // and do not overlap (distinct regions are distinct mappings, and
        // ranges of one region were checked); raw pointers only, as in
        // `write_bytes`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.ptr.as_ptr().add(off),
                dst.ptr.as_ptr().add(dst_off),
                len,
            )
        };
        true
    }

    /// Loads the 32-bit value at byte offset `off` (4-aligned, in bounds).
    pub fn load_u32(&self, off: usize) -> Option<u32> {
        self.atomic_u32(off)
            .map(|a| a.load(std::sync::atomic::Ordering::SeqCst))
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`; the ring types
        // that point into it hold the region and drop before it.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_copies_are_bounds_checked() {
        let a = SharedRegion::create("a", 4096).expect("a");
        let b = SharedRegion::create("b", 4096).expect("b");
        assert!(a.write_bytes(100, b"hello"));
        assert!(!a.write_bytes(4093, b"hello"));
        assert!(!a.write_bytes(usize::MAX, b"x"));
        assert!(a.copy_to(100, &b, 4091, 5));
        assert!(!a.copy_to(100, &b, 4092, 5));
        assert!(!a.copy_to(usize::MAX - 1, &b, 0, 5));
        assert!(!a.copy_to(100, &a, 102, 5), "overlapping within one region");
        assert!(a.copy_to(100, &a, 105, 5));
        let mut out = [0u8; 5];
        assert!(b.read_bytes(4091, &mut out));
        assert_eq!(&out, b"hello");
        assert!(!b.read_bytes(4092, &mut out));
    }

    #[test]
    fn attach_refuses_unsealed_or_resized_files() {
        let a = SharedRegion::create("a", 4096).expect("a");
        assert!(
            rustix::fs::ftruncate(a.dup_fd().expect("dup"), 1024).is_err(),
            "sealed against shrinking"
        );
        let b = SharedRegion::attach(a.dup_fd().expect("dup"), 4096).expect("attach");
        // Closing the descriptor keeps the mapping: what one side writes
        // the other still reads.
        a.close_fd();
        assert!(!a.has_fd() && a.dup_fd().is_err());
        assert!(a.write_bytes(8, b"after"));
        let mut out = [0u8; 5];
        assert!(b.read_bytes(8, &mut out));
        assert_eq!(&out, b"after");
        let plain =
            rustix::fs::memfd_create("plain", rustix::fs::MemfdFlags::CLOEXEC).expect("memfd");
        rustix::fs::ftruncate(&plain, 4096).expect("truncate");
        assert!(SharedRegion::attach(plain, 4096).is_err());
    }
}
