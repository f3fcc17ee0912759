//! Read-only file mappings, for elements that stream trace files
//! (`FromDump`) without copying them into memory first.
//!
//! A mapping is private and read-only. If another process truncates the
//! file while it is mapped, reading the vanished pages raises `SIGBUS`;
//! trace files are not expected to change while they are read. Pages are
//! read in when the file is mapped, so streaming it takes no page faults.

use std::fs::File;
use std::path::Path;
use std::ptr::NonNull;

/// A whole file mapped read-only into memory.
pub struct MappedFile {
    ptr: Option<NonNull<u8>>,
    len: usize,
}

impl MappedFile {
    /// An empty mapping (of no file).
    pub const fn empty() -> MappedFile {
        MappedFile { ptr: None, len: 0 }
    }

    /// Maps the file at `path`. An empty file gives an empty mapping.
    pub fn open(path: &Path) -> std::io::Result<MappedFile> {
        let file = File::open(path)?;
        Self::map(&file)
    }

    /// Maps an open file, from its start to its current end.
    pub fn map(file: &File) -> std::io::Result<MappedFile> {
        let len = file.metadata()?.len();
        let len = usize::try_from(len).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, "file too large to map")
        })?;
        if len == 0 {
            return Ok(MappedFile { ptr: None, len: 0 });
        }
        // SAFETY: a fresh private read-only mapping of `len` bytes of an open
        // file; the kernel picks the address, so no existing memory is
        // affected. The mapping outlives the file descriptor on its own.
        let ptr = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ,
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::POPULATE,
                file,
                0,
            )
        }
        .map_err(std::io::Error::from)?;
        // SAFETY: `ptr`/`len` are exactly the mapping just made; the advice
        // only tunes read-ahead and cannot change the memory's contents.
        let _ = unsafe { rustix::mm::madvise(ptr, len, rustix::mm::Advice::Sequential) };
        Ok(MappedFile {
            ptr: NonNull::new(ptr.cast::<u8>()),
            len,
        })
    }

    /// The file's bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match self.ptr {
            // SAFETY: the mapping is `len` readable bytes, stays mapped until
            // `self` is dropped, and is never written through (it is private
            // and read-only).
            Some(p) => unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) },
            None => &[],
        }
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty file.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

// SAFETY: the mapping is read-only memory owned by the value; nothing
// else writes it, so it may move to and be read from any thread.
unsafe impl Send for MappedFile {}
// SAFETY: as above: shared access only reads immutable memory.
unsafe impl Sync for MappedFile {}

impl std::ops::Deref for MappedFile {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        self.bytes()
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        if let Some(p) = self.ptr {
            // SAFETY: `p`/`len` are exactly what mmap returned, and no slice
            // borrowed from `self` outlives it.
            let _ = unsafe { rustix::mm::munmap(p.as_ptr().cast(), self.len) };
        }
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_file_contents() {
        let dir = std::env::temp_dir().join(format!("pronto-mmap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = dir.join("a.bin");
        std::fs::write(&f, b"hello trace").expect("write");
        let m = MappedFile::open(&f).expect("map");
        assert_eq!(&m[..], b"hello trace");
        let e = dir.join("empty.bin");
        std::fs::write(&e, b"").expect("write");
        let m = MappedFile::open(&e).expect("map");
        assert!(m.is_empty());
        assert!(MappedFile::open(&dir.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
