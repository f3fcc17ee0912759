//! Passing file descriptors (ring regions, pools, doorbells) to another
//! process over a unix socket (`SCM_RIGHTS`), with a message beside them.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// Most descriptors one message carries.
pub const MAX_FDS: usize = 16;

/// A connected pair of unix stream sockets (close-on-exec).
pub fn socket_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::STREAM,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )?)
}

/// Sends `bytes` (at least one) with `fds` attached.
pub fn send(sock: impl AsFd, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> std::io::Result<()> {
    if bytes.is_empty() || fds.len() > MAX_FDS {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "a message needs 1 or more bytes and at most 16 descriptors",
        ));
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(rustix::net::SendAncillaryMessage::ScmRights(fds)) {
        return Err(std::io::Error::other(
            "descriptors do not fit the control buffer",
        ));
    }
    let mut sent = rustix::net::sendmsg(
        &sock,
        &[IoSlice::new(bytes)],
        &mut control,
        rustix::net::SendFlags::NOSIGNAL,
    )?;
    // The descriptors went with the first byte; send what remains plainly.
    while sent < bytes.len() {
        sent += rustix::net::send(&sock, &bytes[sent..], rustix::net::SendFlags::NOSIGNAL)?;
    }
    Ok(())
}

/// Receives up to `buf.len()` bytes and the descriptors attached to them;
/// returns the byte count (0 at end of stream). Descriptors arrive
/// close-on-exec.
pub fn recv(sock: impl AsFd, buf: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let msg = rustix::net::recvmsg(
        &sock,
        &mut [IoSliceMut::new(buf)],
        &mut control,
        rustix::net::RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for m in control.drain() {
        if let rustix::net::RecvAncillaryMessage::ScmRights(it) = m {
            fds.extend(it);
        }
    }
    if msg.flags.contains(rustix::net::ReturnFlags::CTRUNC) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "peer sent more descriptors than a message may carry",
        ));
    }
    Ok((msg.bytes, fds))
}

/// Lets a child process inherit `fd` across `exec` (clears close-on-exec
/// on this descriptor; give the child a duplicate, not a descriptor the
/// parent keeps using).
pub fn inheritable(fd: &OwnedFd) -> std::io::Result<()> {
    rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?;
    Ok(())
}

/// Takes ownership of descriptor number `raw`, inherited from the parent
/// (named in an environment variable or argument). Fails unless it is an
/// open descriptor.
pub fn take_inherited(raw: i32) -> std::io::Result<OwnedFd> {
    use std::os::fd::FromRawFd;
    if raw < 3 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("descriptor {raw} is not an inherited one"),
        ));
    }
    // SAFETY: borrowed only for the duration of this check.
    let b = unsafe { BorrowedFd::borrow_raw(raw) };
    rustix::io::fcntl_getfd(b)?;
    // SAFETY: the descriptor is open (checked above) and, by this
    // function's contract, nothing else in the process owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(raw) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_travel_with_bytes() {
        let (a, b) = socket_pair().expect("pair");
        let region = crate::SharedRegion::create("t", 4096).expect("region");
        let bell = crate::Doorbell::new().expect("bell");
        let region_fd = region.dup_fd().expect("dup");
        send(&a, b"ring 4096", &[region_fd.as_fd(), bell.as_fd()]).expect("send");
        let mut buf = [0u8; 64];
        let (n, fds) = recv(&b, &mut buf).expect("recv");
        assert_eq!(&buf[..n], b"ring 4096");
        assert_eq!(fds.len(), 2);
        let mut it = fds.into_iter();
        let r2 = crate::SharedRegion::attach(it.next().expect("fd"), 4096).expect("attach");
        // SAFETY-free check through the ring API is in ring's tests; here
        // the mapping's identity: both see the same file size.
        assert_eq!(r2.len(), 4096);
        let bell2 = crate::Doorbell::from_fd(it.next().expect("fd"));
        bell2.ring().expect("ring");
        assert!(bell.clear());
        assert!(crate::SharedRegion::attach(region.dup_fd().expect("dup"), 8192).is_err());
    }
}
