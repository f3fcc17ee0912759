//! The system calls behind `METHOD XDP` ([`crate::xdp`]): `bpf(2)` (map,
//! program, link), the `AF_XDP` socket and its options, and the mappings
//! of its four rings and its UMEM. All of the XDP path's `unsafe` is here;
//! each block says why it is sound.
//!
//! Everything the kernel writes into shared memory (ring positions,
//! descriptors, frame bytes) is read here as plain integers or bytes,
//! which any bit pattern makes valid; [`crate::xdp`] checks each value
//! before it uses it as an index.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// `AF_XDP` address family.
pub(crate) const AF_XDP: libc::c_int = 44;
/// `SOL_XDP` socket option level.
const SOL_XDP: libc::c_int = 283;
/// Option numbers of `<linux/if_xdp.h>`.
const XDP_MMAP_OFFSETS: libc::c_int = 1;
const XDP_RX_RING: libc::c_int = 2;
const XDP_TX_RING: libc::c_int = 3;
const XDP_UMEM_REG: libc::c_int = 4;
const XDP_UMEM_FILL_RING: libc::c_int = 5;
const XDP_UMEM_COMPLETION_RING: libc::c_int = 6;
const XDP_STATISTICS: libc::c_int = 7;
/// `mmap` page offsets selecting a ring.
const XDP_PGOFF_RX_RING: i64 = 0;
const XDP_PGOFF_TX_RING: i64 = 0x8000_0000;
const XDP_UMEM_PGOFF_FILL_RING: i64 = 0x1_0000_0000;
const XDP_UMEM_PGOFF_COMPLETION_RING: i64 = 0x1_8000_0000;
/// `sxdp_flags`: copy mode, and wake-ups only when the kernel asks.
pub(crate) const XDP_COPY: u16 = 1 << 1;
pub(crate) const XDP_USE_NEED_WAKEUP: u16 = 1 << 3;
/// A ring's flag word: the kernel wants a system call to make progress.
pub(crate) const XDP_RING_NEED_WAKEUP: u32 = 1;

/// `bpf(2)` commands.
const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_LINK_CREATE: libc::c_int = 28;
/// `BPF_MAP_TYPE_XSKMAP`.
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
/// `BPF_PROG_TYPE_XDP`.
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `BPF_XDP` attach type.
const BPF_XDP: u32 = 37;
/// `XDP_FLAGS_SKB_MODE` (generic) and `XDP_FLAGS_DRV_MODE` (native).
pub(crate) const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
pub(crate) const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Wraps a descriptor a system call just returned.
fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = RawFd::try_from(fd).map_err(|_| io::Error::other("descriptor out of range"))?;
    // SAFETY: `fd` was just returned by the kernel as a new descriptor and
    // is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Calls `bpf(cmd, attr, size_of::<T>())`.
fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> libc::c_long {
    // SAFETY: `attr` is a live, writable `repr(C)` prefix of `union
    // bpf_attr` for `cmd`, of exactly the size passed; the kernel copies
    // at most that many bytes in (and, for some commands, out), and reads
    // only the memory its pointer fields name, which the callers keep
    // alive for the call.
    unsafe {
        libc::syscall(
            libc::SYS_bpf,
            cmd,
            (attr as *mut T).cast::<libc::c_void>(),
            std::mem::size_of::<T>() as libc::c_uint,
        )
    }
}

#[repr(C)]
#[derive(Default)]
struct MapCreateAttr {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

/// Creates an `XSKMAP` of `entries` slots (queue index → socket).
pub(crate) fn xskmap_create(entries: u32) -> io::Result<OwnedFd> {
    let mut name = [0u8; 16];
    name[..10].copy_from_slice(b"pronto_xsk");
    let mut attr = MapCreateAttr {
        map_type: BPF_MAP_TYPE_XSKMAP,
        key_size: 4,
        value_size: 4,
        max_entries: entries,
        map_name: name,
        ..Default::default()
    };
    owned(bpf(BPF_MAP_CREATE, &mut attr))
}

#[repr(C)]
#[derive(Default)]
struct MapElemAttr {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

/// Sets `map[key] = value` (both `u32`).
pub(crate) fn map_update(map: &OwnedFd, key: u32, value: u32) -> io::Result<()> {
    let mut attr = MapElemAttr {
        map_fd: map.as_raw_fd() as u32,
        key: &key as *const u32 as u64,
        value: &value as *const u32 as u64,
        ..Default::default()
    };
    check(bpf(BPF_MAP_UPDATE_ELEM, &mut attr) as libc::c_int)
}

#[repr(C)]
#[derive(Default)]
struct ProgLoadAttr {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

/// Loads an XDP program of raw instructions (8 bytes each, as
/// `struct bpf_insn`); on failure the verifier's log is returned beside
/// the error.
pub(crate) fn prog_load_xdp(insns: &[u64]) -> Result<OwnedFd, (io::Error, String)> {
    let license = b"GPL\0";
    let mut log = vec![0u8; 64 * 1024];
    let mut name = [0u8; 16];
    name[..10].copy_from_slice(b"pronto_xsk");
    let mut attr = ProgLoadAttr {
        prog_type: BPF_PROG_TYPE_XDP,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: license.as_ptr() as u64,
        log_level: 1,
        log_size: log.len() as u32,
        log_buf: log.as_mut_ptr() as u64,
        prog_name: name,
        expected_attach_type: BPF_XDP,
        ..Default::default()
    };
    let r = bpf(BPF_PROG_LOAD, &mut attr);
    let err = io::Error::last_os_error();
    if r >= 0 {
        return owned(r).map_err(|e| (e, String::new()));
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    Err((err, String::from_utf8_lossy(&log[..end]).trim().to_string()))
}

#[repr(C)]
#[derive(Default)]
struct LinkCreateAttr {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// Attaches an XDP program to interface `ifindex` through a BPF link
/// (`flags`: native or generic mode). Closing the returned descriptor,
/// which the kernel also does when the process dies, detaches it.
pub(crate) fn xdp_link_create(prog: &OwnedFd, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut attr = LinkCreateAttr {
        prog_fd: prog.as_raw_fd() as u32,
        target_ifindex: ifindex,
        attach_type: BPF_XDP,
        flags,
    };
    owned(bpf(BPF_LINK_CREATE, &mut attr))
}

/// A new `AF_XDP` socket.
pub(crate) fn xsk_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call with constant arguments; no memory is
    // passed.
    let fd = unsafe { libc::socket(AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
    owned(fd as libc::c_long)
}

fn set_xdp_opt<T: Copy>(fd: &OwnedFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` points at a live `T` of exactly the length passed; the
    // kernel only reads it. `T` is a `c_int` ring size or `UmemReg`, as the
    // option expects.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            SOL_XDP,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
}

/// `struct xdp_umem_reg`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct UmemReg {
    addr: u64,
    len: u64,
    chunk_size: u32,
    headroom: u32,
    flags: u32,
    tx_metadata_len: u32,
}

/// Registers `umem` as the socket's UMEM, cut into `chunk`-byte frames.
pub(crate) fn umem_register(fd: &OwnedFd, umem: &Umem, chunk: u32) -> io::Result<()> {
    let reg = UmemReg {
        addr: umem.base.as_ptr() as u64,
        len: umem.len as u64,
        chunk_size: chunk,
        ..Default::default()
    };
    set_xdp_opt(fd, XDP_UMEM_REG, &reg)
}

/// Which of the socket's four rings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RingKind {
    /// Frames received (descriptors: address, length, options).
    Rx,
    /// Frames to send (descriptors).
    Tx,
    /// Free frames given to the kernel to receive into (addresses).
    Fill,
    /// Sent frames given back (addresses).
    Completion,
}

impl RingKind {
    fn opt(self) -> libc::c_int {
        match self {
            RingKind::Rx => XDP_RX_RING,
            RingKind::Tx => XDP_TX_RING,
            RingKind::Fill => XDP_UMEM_FILL_RING,
            RingKind::Completion => XDP_UMEM_COMPLETION_RING,
        }
    }

    fn pgoff(self) -> i64 {
        match self {
            RingKind::Rx => XDP_PGOFF_RX_RING,
            RingKind::Tx => XDP_PGOFF_TX_RING,
            RingKind::Fill => XDP_UMEM_PGOFF_FILL_RING,
            RingKind::Completion => XDP_UMEM_PGOFF_COMPLETION_RING,
        }
    }

    /// Bytes per entry: `struct xdp_desc` or a `u64` address.
    pub(crate) fn entry_size(self) -> usize {
        match self {
            RingKind::Rx | RingKind::Tx => 16,
            RingKind::Fill | RingKind::Completion => 8,
        }
    }
}

/// Asks for a ring of `entries` (a power of two).
pub(crate) fn ring_size(fd: &OwnedFd, kind: RingKind, entries: u32) -> io::Result<()> {
    let n = entries as libc::c_int;
    set_xdp_opt(fd, kind.opt(), &n)
}

/// `struct xdp_ring_offset`: where a ring's fields lie in its mapping.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RingOffsets {
    pub producer: u64,
    pub consumer: u64,
    pub desc: u64,
    pub flags: u64,
}

/// `struct xdp_mmap_offsets`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MmapOffsets {
    pub rx: RingOffsets,
    pub tx: RingOffsets,
    pub fill: RingOffsets,
    pub completion: RingOffsets,
}

impl MmapOffsets {
    pub(crate) fn of(&self, kind: RingKind) -> RingOffsets {
        match kind {
            RingKind::Rx => self.rx,
            RingKind::Tx => self.tx,
            RingKind::Fill => self.fill,
            RingKind::Completion => self.completion,
        }
    }
}

/// Reads the ring layout of the socket.
pub(crate) fn mmap_offsets(fd: &OwnedFd) -> io::Result<MmapOffsets> {
    let mut off = MmapOffsets::default();
    let mut len = std::mem::size_of::<MmapOffsets>() as libc::socklen_t;
    // SAFETY: `off` is writable for `len` bytes; the kernel writes at most
    // `len` and updates it.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_XDP,
            XDP_MMAP_OFFSETS,
            (&mut off as *mut MmapOffsets).cast(),
            &mut len,
        )
    })?;
    if (len as usize) < std::mem::size_of::<MmapOffsets>() {
        return Err(io::Error::other(
            "XDP_MMAP_OFFSETS: the kernel's layout is older than Linux 5.4",
        ));
    }
    Ok(off)
}

/// `struct xdp_statistics` (the fields pronto reads).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct XdpStats {
    pub rx_dropped: u64,
    pub rx_invalid_descs: u64,
    pub tx_invalid_descs: u64,
    pub rx_ring_full: u64,
    pub rx_fill_ring_empty_descs: u64,
    pub tx_ring_empty_descs: u64,
}

/// The socket's cumulative counters.
pub(crate) fn xdp_stats(fd: &OwnedFd) -> io::Result<XdpStats> {
    let mut s = XdpStats::default();
    let mut len = std::mem::size_of::<XdpStats>() as libc::socklen_t;
    // SAFETY: `s` is writable for `len` bytes; the kernel writes at most
    // `len` and updates it.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_XDP,
            XDP_STATISTICS,
            (&mut s as *mut XdpStats).cast(),
            &mut len,
        )
    })?;
    Ok(s)
}

/// `struct sockaddr_xdp`.
#[repr(C)]
struct SockaddrXdp {
    family: u16,
    flags: u16,
    ifindex: u32,
    queue_id: u32,
    shared_umem_fd: u32,
}

/// Binds the socket to queue `queue` of interface `ifindex`.
pub(crate) fn xsk_bind(fd: &OwnedFd, ifindex: u32, queue: u32, flags: u16) -> io::Result<()> {
    let sa = SockaddrXdp {
        family: AF_XDP as u16,
        flags,
        ifindex,
        queue_id: queue,
        shared_umem_fd: 0,
    };
    // SAFETY: `sa` is a valid sockaddr_xdp of the length passed; the kernel
    // only reads it.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sa as *const SockaddrXdp).cast(),
            std::mem::size_of::<SockaddrXdp>() as libc::socklen_t,
        )
    })
}

/// Asks the kernel to send what the TX ring holds (copy mode sends a
/// bounded number of frames per call).
pub(crate) fn kick_tx(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: a zero-length send with null buffer and address reads no
    // memory; on an AF_XDP socket it only makes the kernel walk its TX
    // ring.
    let n = unsafe {
        libc::sendto(
            fd.as_raw_fd(),
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Wakes the kernel's receive side after the fill ring was refilled.
pub(crate) fn kick_rx(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: a zero-length receive with null buffer and address writes no
    // memory; on an AF_XDP socket it only wakes the driver.
    let n = unsafe {
        libc::recvfrom(
            fd.as_raw_fd(),
            std::ptr::null_mut(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An epoll descriptor readable when any of `fds` is.
pub(crate) fn epoll_readable(fds: &[&OwnedFd]) -> io::Result<OwnedFd> {
    // SAFETY: plain system call with a constant flag.
    let ep = owned(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) } as libc::c_long)?;
    for (i, fd) in fds.iter().enumerate() {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: i as u64,
        };
        // SAFETY: `ev` is a valid epoll_event the kernel only reads; both
        // descriptors are open.
        check(unsafe {
            libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd.as_raw_fd(), &mut ev)
        })?;
    }
    Ok(ep)
}

/// The UMEM: an anonymous, page-aligned area the kernel copies frames
/// into (receive) and out of (transmit).
///
/// Frames are owned, by the ring protocol, either by pronto (not in any
/// ring) or by the kernel (in the fill or TX ring, until it comes back on
/// the RX or completion ring). [`Umem::bytes`] and [`Umem::bytes_mut`]
/// require their callers to view only frames pronto owns.
pub(crate) struct Umem {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; every access
// goes through `&self` methods whose callers own the frames they touch
// (the receive and transmit sides use disjoint frames), so moving or
// sharing the handle between threads adds no aliasing.
unsafe impl Send for Umem {}
// SAFETY: as above.
unsafe impl Sync for Umem {}

impl Umem {
    /// Maps `len` bytes (a multiple of the page size) of zeroed memory.
    pub(crate) fn new(len: usize) -> io::Result<Umem> {
        // SAFETY: a fresh private anonymous mapping; nothing aliases it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap: null"))?;
        Ok(Umem { base, len })
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes `off..off + len`, if inside the area.
    ///
    /// # Safety
    /// The caller must own those bytes under the ring protocol (a frame
    /// the kernel handed back on the RX ring and that is not yet on the
    /// fill ring), so that the kernel does not write them while the slice
    /// lives.
    pub(crate) unsafe fn bytes(&self, off: usize, len: usize) -> Option<&[u8]> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: in range (checked above); not written by anyone while the
        // slice lives, by the caller's contract.
        Some(unsafe { std::slice::from_raw_parts(self.base.as_ptr().add(off), len) })
    }

    /// The bytes `off..off + len` for writing, if inside the area.
    ///
    /// # Safety
    /// The caller must own those bytes under the ring protocol (a transmit
    /// frame not on the TX ring) and hold no other view of them.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn bytes_mut(&self, off: usize, len: usize) -> Option<&mut [u8]> {
        if off.checked_add(len)? > self.len {
            return None;
        }
        // SAFETY: in range (checked above); exclusive by the caller's
        // contract.
        Some(unsafe { std::slice::from_raw_parts_mut(self.base.as_ptr().add(off), len) })
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned; no slice of the
        // area outlives `self` (they borrow it). The socket that registered
        // it is closed before (see `Xsk`'s field order), and the kernel
        // holds its own pin on the pages until then.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}

/// One of the socket's rings, mapped: two positions, a flag word and
/// `size` entries, all shared with the kernel.
///
/// Positions and flags are read and written as atomics; entries as plain
/// integers (volatile). Which side may write what is the ring protocol,
/// which [`crate::xdp`] keeps; a value the kernel wrote is only ever data
/// to check here, never trusted as an index.
pub(crate) struct RingMap {
    base: NonNull<u8>,
    map_len: usize,
    producer: usize,
    consumer: usize,
    flags: usize,
    desc: usize,
    size: u32,
    kind: RingKind,
}

// SAFETY: the mapping is owned by this value and accessed only through
// atomics and volatile reads/writes of plain integers at checked offsets;
// sharing it between threads is as sound as sharing it with the kernel.
unsafe impl Send for RingMap {}
// SAFETY: as above.
unsafe impl Sync for RingMap {}

impl RingMap {
    /// Maps the socket's ring `kind` of `size` entries (set before with
    /// [`ring_size`]), at the offsets the kernel reported.
    pub(crate) fn new(
        fd: &OwnedFd,
        kind: RingKind,
        size: u32,
        off: RingOffsets,
    ) -> io::Result<RingMap> {
        let bad = || io::Error::other(format!("{kind:?} ring: offsets out of range"));
        let desc = usize::try_from(off.desc).map_err(|_| bad())?;
        let map_len = desc
            .checked_add(size as usize * kind.entry_size())
            .ok_or_else(bad)?;
        let word = |o: u64| -> io::Result<usize> {
            let o = usize::try_from(o).map_err(|_| bad())?;
            if !o.is_multiple_of(4) || o.checked_add(4).is_none_or(|e| e > map_len) {
                return Err(bad());
            }
            Ok(o)
        };
        let producer = word(off.producer)?;
        let consumer = word(off.consumer)?;
        let flags = word(off.flags)?;
        if !size.is_power_of_two() || !desc.is_multiple_of(8) {
            return Err(bad());
        }
        // SAFETY: a fresh shared mapping of the socket's ring at the page
        // offset that selects it; the kernel checks the length against the
        // ring it made. Nothing aliases it yet.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                kind.pgoff(),
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap: null"))?;
        Ok(RingMap {
            base,
            map_len,
            producer,
            consumer,
            flags,
            desc,
            size,
            kind,
        })
    }

    /// Entries in the ring.
    pub(crate) fn size(&self) -> u32 {
        self.size
    }

    fn word(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` was checked in `new` to be 4-aligned with the word
        // inside the mapping (which is page-aligned and lives as long as
        // `self`); the kernel accesses these words atomically too.
        unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU32>() }
    }

    /// The producer position (acquire: entries written before it was
    /// published are visible).
    pub(crate) fn producer(&self) -> u32 {
        self.word(self.producer).load(Ordering::Acquire)
    }

    /// The consumer position (acquire: the kernel is done with entries
    /// before it).
    pub(crate) fn consumer(&self) -> u32 {
        self.word(self.consumer).load(Ordering::Acquire)
    }

    /// Publishes entries up to `v` (release: what was written before is
    /// visible to the kernel once it sees the position).
    pub(crate) fn set_producer(&self, v: u32) {
        self.word(self.producer).store(v, Ordering::Release);
    }

    /// Gives entries up to `v` back (release: our reads of them are done).
    pub(crate) fn set_consumer(&self, v: u32) {
        self.word(self.consumer).store(v, Ordering::Release);
    }

    /// The ring's flag word.
    pub(crate) fn flags(&self) -> u32 {
        self.word(self.flags).load(Ordering::Acquire)
    }

    /// Pointer to entry `pos` (taken modulo the size, so always inside).
    fn entry(&self, pos: u32) -> *mut u8 {
        let i = (pos & (self.size - 1)) as usize;
        let off = self.desc + i * self.kind.entry_size();
        debug_assert!(off + self.kind.entry_size() <= self.map_len);
        // SAFETY: `off` plus one entry lies inside the mapping: `desc +
        // size * entry_size == map_len` (checked in `new`) and `i < size`.
        unsafe { self.base.as_ptr().add(off) }
    }

    /// Reads an address entry (fill or completion ring).
    pub(crate) fn read_addr(&self, pos: u32) -> u64 {
        // SAFETY: the entry is inside the mapping and 8-aligned (`desc` is
        // 8-aligned, entries are 8 or 16 bytes); any bit pattern is a valid
        // u64.
        unsafe { self.entry(pos).cast::<u64>().read_volatile() }
    }

    /// Writes an address entry (fill ring).
    pub(crate) fn write_addr(&self, pos: u32, addr: u64) {
        // SAFETY: as in `read_addr`; writing an integer into memory shared
        // with the kernel, which reads it only after the producer position
        // is published.
        unsafe { self.entry(pos).cast::<u64>().write_volatile(addr) }
    }

    /// Reads a descriptor entry (RX ring): address, length, options.
    pub(crate) fn read_desc(&self, pos: u32) -> (u64, u32, u32) {
        let p = self.entry(pos);
        // SAFETY: a 16-byte, 8-aligned entry inside the mapping; plain
        // integers.
        unsafe {
            (
                p.cast::<u64>().read_volatile(),
                p.add(8).cast::<u32>().read_volatile(),
                p.add(12).cast::<u32>().read_volatile(),
            )
        }
    }

    /// Writes a descriptor entry (TX ring).
    pub(crate) fn write_desc(&self, pos: u32, addr: u64, len: u32, options: u32) {
        let p = self.entry(pos);
        // SAFETY: as in `read_desc`; the kernel reads the entry only after
        // the producer position is published.
        unsafe {
            p.cast::<u64>().write_volatile(addr);
            p.add(8).cast::<u32>().write_volatile(len);
            p.add(12).cast::<u32>().write_volatile(options);
        }
    }
}

impl Drop for RingMap {
    fn drop(&mut self) {
        // SAFETY: base/map_len are exactly what mmap returned; no reference
        // into the mapping outlives `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.map_len);
        }
    }
}
