//! Shared memory regions: a memfd mapped read-write and shared, so that
//! another process can map the same pages from the file descriptor.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

/// A memfd-backed region mapped shared into this process.
pub struct SharedRegion {
    fd: OwnedFd,
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
    /// `/proc/PID/maps`).
    pub fn create(name: &str, len: usize) -> std::io::Result<SharedRegion> {
        if len == 0 {
            return Err(std::io::Error::other("shared region of zero bytes"));
        }
        let fd = rustix::fs::memfd_create(name, rustix::fs::MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&fd, len as u64)?;
        Self::map(fd, len)
    }

    /// Maps a region another process created, checking that the file is
    /// exactly `len` bytes long (a peer could hand over a shorter file,
    /// and touching pages beyond its end would raise `SIGBUS`).
    pub fn attach(fd: OwnedFd, len: usize) -> std::io::Result<SharedRegion> {
        let st = rustix::fs::fstat(&fd)?;
        if st.st_size != len as i64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("shared region is {} bytes, expected {len}", st.st_size),
            ));
        }
        // A peer that could shrink the file later would make our pages
        // vanish: only accept files sealed against shrinking where the
        // kernel supports seals; otherwise rely on the size check above.
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
        Ok(SharedRegion { fd, ptr, len })
    }

    /// Another descriptor for the same file, to hand to a peer.
    pub fn dup_fd(&self) -> std::io::Result<OwnedFd> {
        Ok(rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)?)
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

    /// Loads the 32-bit value at byte offset `off` (4-aligned, in bounds).
    pub fn load_u32(&self, off: usize) -> Option<u32> {
        self.atomic_u32(off)
            .map(|a| a.load(std::sync::atomic::Ordering::SeqCst))
    }
}

impl AsFd for SharedRegion {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for SharedRegion {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`; the ring types
        // that point into it hold the region and drop before it.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
