//! The system calls behind [`crate::RxDevice`] and [`crate::TxDevice`]:
//! the packet socket, its options, and the shared ring mapping. All of
//! this crate's `unsafe` is here; each block says why it is sound.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

/// `SOL_PACKET` socket option level.
const SOL_PACKET: libc::c_int = 263;
/// Option numbers of `<linux/if_packet.h>`.
pub(crate) const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
pub(crate) const PACKET_RX_RING: libc::c_int = 5;
pub(crate) const PACKET_STATISTICS: libc::c_int = 6;
pub(crate) const PACKET_VERSION: libc::c_int = 10;
pub(crate) const PACKET_TX_RING: libc::c_int = 13;
pub(crate) const PACKET_LOSS: libc::c_int = 14;
pub(crate) const PACKET_VNET_HDR: libc::c_int = 15;
pub(crate) const PACKET_QDISC_BYPASS: libc::c_int = 20;
pub(crate) const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
pub(crate) const PACKET_FANOUT: libc::c_int = 18;
/// Fanout by flow hash, IP fragments reassembled first so that they hash
/// like their flow.
pub(crate) const PACKET_FANOUT_HASH_DEFRAG: u32 = 0x8000;
/// `PACKET_MR_PROMISC` membership type.
pub(crate) const PACKET_MR_PROMISC: u16 = 1;
/// `sll_pkttype` of a packet the host sent.
pub(crate) const PACKET_OUTGOING: u8 = 4;
/// `ETH_P_ALL`, host order.
pub(crate) const ETH_P_ALL: u16 = 0x0003;

/// `struct tpacket_req`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct TpacketReq {
    pub block_size: u32,
    pub block_nr: u32,
    pub frame_size: u32,
    pub frame_nr: u32,
}

/// `struct packet_mreq`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct PacketMreq {
    pub ifindex: i32,
    pub kind: u16,
    pub alen: u16,
    pub address: [u8; 8],
}

fn check(r: libc::c_int) -> io::Result<()> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A non-blocking `AF_PACKET`/`SOCK_RAW` socket listening to protocol
/// `proto` (host order; 0 receives nothing until bound otherwise).
pub(crate) fn packet_socket(proto: u16) -> io::Result<OwnedFd> {
    // SAFETY: plain system call with constant arguments; no memory is
    // passed.
    let fd = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            proto.to_be() as libc::c_int,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket() and is owned by nobody
    // else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sets a `SOL_PACKET` option to the plain value `v`.
pub(crate) fn set_opt<T: Copy>(fd: &OwnedFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` points at a live `T` of exactly the length passed; the
    // kernel only reads it. `T` is one of this module's `repr(C)` option
    // structs or a `c_int`, as the option expects.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            SOL_PACKET,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
}

/// Binds the socket to interface `ifindex`, protocol `proto` (host order).
pub(crate) fn bind(fd: &OwnedFd, ifindex: i32, proto: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto.to_be();
    sll.sll_ifindex = ifindex;
    // SAFETY: `sll` is a valid sockaddr_ll of the length passed.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
}

/// Receives one frame into `buf` without blocking: `(full length, packet
/// type)`; the length may exceed `buf.len()` (the frame was cut).
pub(crate) fn recv(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<(usize, u8)> {
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    let mut alen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    // SAFETY: `buf` is writable for `buf.len()` bytes and `sll` for `alen`
    // bytes; the kernel writes at most that much to each.
    let n = unsafe {
        libc::recvfrom(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            (&mut sll as *mut libc::sockaddr_ll).cast(),
            &mut alen,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize, sll.sll_pkttype))
}

/// Sends one frame on the bound interface without blocking.
pub(crate) fn send(fd: &OwnedFd, data: &[u8]) -> io::Result<usize> {
    // SAFETY: `data` is readable for its length; the kernel only reads it.
    let n = unsafe {
        libc::send(
            fd.as_raw_fd(),
            data.as_ptr().cast(),
            data.len(),
            libc::MSG_DONTWAIT,
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Asks the kernel to transmit every frame marked ready in the TX ring.
pub(crate) fn kick(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: a zero-length send with a null buffer reads no memory; with a
    // TX ring it only makes the kernel walk the ring.
    let n = unsafe { libc::send(fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads (and so resets) the socket's `(packets, drops)` statistics.
pub(crate) fn stats(fd: &OwnedFd) -> io::Result<(u32, u32)> {
    // Large enough for tpacket_stats and tpacket_stats_v3.
    let mut s = [0u32; 3];
    let mut len = std::mem::size_of_val(&s) as libc::socklen_t;
    // SAFETY: `s` is writable for `len` bytes; the kernel writes at most
    // `len` and updates it.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            SOL_PACKET,
            PACKET_STATISTICS,
            s.as_mut_ptr().cast(),
            &mut len,
        )
    })?;
    Ok((s[0], s[1]))
}

/// A ring shared with the kernel: the socket's `mmap`ed RX or TX ring.
///
/// The kernel writes the ring concurrently. Status words are read and
/// written only as atomics; the bytes of a frame slot are viewed as
/// slices only while the ring protocol makes them ours (status says
/// user-owned, or available for sending), which the `unsafe` accessors
/// require of their callers.
pub(crate) struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps `len` bytes of the socket's ring.
    pub(crate) fn new(fd: &OwnedFd, len: usize) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping of the socket's ring; the kernel
        // checks `len` against the ring it set up. Nothing aliases it yet.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED | libc::MAP_POPULATE,
                fd.as_raw_fd(),
                0,
            )
        };
        let p = if p == libc::MAP_FAILED {
            // MAP_LOCKED needs a memlock allowance; retry without it.
            // SAFETY: as above.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd.as_raw_fd(),
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            p
        } else {
            p
        };
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap: null"))?;
        Ok(Mapping { base, len })
    }

    /// Length of the mapping in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn word(&self, off: usize) -> Option<&AtomicU32> {
        if !off.is_multiple_of(4) || off.checked_add(4)? > self.len {
            return None;
        }
        // SAFETY: `off` is 4-aligned (the mapping is page-aligned) and the
        // word lies inside the mapping, which lives as long as `self`. The
        // kernel accesses status words atomically too.
        Some(unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU32>() })
    }

    /// Reads the status word at `off` (acquire: what the kernel wrote
    /// before setting it is visible after). 0 if out of range.
    pub(crate) fn load(&self, off: usize) -> u32 {
        self.word(off).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Writes the status word at `off` (release: what we wrote before is
    /// visible to the kernel once it sees the new status).
    pub(crate) fn store(&self, off: usize, v: u32) {
        if let Some(w) = self.word(off) {
            w.store(v, Ordering::Release);
        }
    }

    /// The bytes `off..off + len` for writing, if inside the mapping.
    ///
    /// # Safety
    /// The caller must own those bytes under the ring protocol (a receive
    /// frame the kernel handed over and that is not yet given back, a
    /// transmit frame not marked for sending), so that the kernel does not
    /// touch them while the slice lives, and hold no other view of them.
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

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: base/len are exactly what mmap returned, and no slice of
        // the mapping outlives `self` (they borrow it).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
