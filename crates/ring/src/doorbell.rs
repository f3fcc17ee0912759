//! Doorbells: an eventfd per ring direction, rung by the producer only when
//! the consumer said it is going to sleep, so that a busy ring costs no
//! system calls and an idle consumer costs no CPU.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

/// One eventfd.
pub struct Doorbell {
    fd: OwnedFd,
}

impl Doorbell {
    /// A new doorbell (non-blocking, close-on-exec).
    pub fn new() -> std::io::Result<Doorbell> {
        let fd = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )?;
        Ok(Doorbell { fd })
    }

    /// A doorbell from a descriptor a peer handed over.
    pub fn from_fd(fd: OwnedFd) -> Doorbell {
        Doorbell { fd }
    }

    /// Another descriptor for the same doorbell, to hand to a peer.
    pub fn dup_fd(&self) -> std::io::Result<OwnedFd> {
        Ok(rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)?)
    }

    /// Rings it.
    pub fn ring(&self) -> std::io::Result<()> {
        match rustix::io::write(&self.fd, &1u64.to_ne_bytes()) {
            Ok(_) | Err(rustix::io::Errno::AGAIN) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits until it rings or `timeout` passes (`None`: forever); returns
    /// true if it rang. Clears it either way.
    pub fn wait(&self, timeout: Option<Duration>) -> std::io::Result<bool> {
        let ts = timeout.map(|t| rustix::time::Timespec {
            tv_sec: t.as_secs() as i64,
            tv_nsec: t.subsec_nanos() as i64,
        });
        let mut fds = [rustix::event::PollFd::new(
            &self.fd,
            rustix::event::PollFlags::IN,
        )];
        loop {
            match rustix::event::poll(&mut fds, ts.as_ref()) {
                Ok(_) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(self.clear())
    }

    /// Clears it; true if it had rung.
    pub fn clear(&self) -> bool {
        let mut buf = [0u8; 8];
        matches!(rustix::io::read(&self.fd, &mut buf), Ok(8))
    }
}

impl AsFd for Doorbell {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_and_times_out() {
        let d = Doorbell::new().expect("eventfd");
        assert!(!d.wait(Some(Duration::from_millis(1))).expect("wait"));
        d.ring().expect("ring");
        d.ring().expect("ring twice");
        assert!(d.wait(Some(Duration::from_secs(5))).expect("wait"));
        assert!(!d.clear(), "one wait clears both rings");
        let peer = Doorbell::from_fd(d.dup_fd().expect("dup"));
        peer.ring().expect("ring from the peer");
        assert!(d.wait(None).expect("wait"));
    }
}
