//! Raw IPv4 sockets (`SOCK_RAW`): the one socket option rustix does not
//! offer, for the `RawSocket` elements.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Sets `IP_HDRINCL`: packets written to the raw socket carry their own IP
/// header.
pub fn set_ip_hdrincl(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let v: libc::c_int = on.into();
    // SAFETY: `v` is a live c_int of the length passed; the kernel only
    // reads it. `fd` is a valid descriptor for the duration of the call.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_HDRINCL,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
