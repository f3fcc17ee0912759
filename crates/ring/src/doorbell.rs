//! Doorbells: an eventfd per ring direction, rung by the producer only when
//! the consumer said it is going to sleep, so that a busy ring costs no
//! system calls and an idle consumer costs no CPU.
//!
//! A process that rings thousands of peers need not hold a descriptor for
//! each: a peer that is its child may instead be woken by a signal
//! ([`WAKE_SIGNAL`], through a [`SignalBell`], which holds only the pid),
//! and waits for it on a signalfd ([`Doorbell::wake_signal`]), which polls
//! like an eventfd.

use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

/// The signal a [`SignalBell`] sends: `SIGURG`, whose default action is to
/// be ignored, so that a process that does not wait for it is not hurt.
pub const WAKE_SIGNAL: i32 = libc::SIGURG;

/// One eventfd, or the signalfd of [`WAKE_SIGNAL`].
pub struct Doorbell {
    fd: OwnedFd,
    signal: bool,
}

impl Doorbell {
    /// A new doorbell (non-blocking, close-on-exec).
    pub fn new() -> std::io::Result<Doorbell> {
        let fd = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )?;
        Ok(Doorbell { fd, signal: false })
    }

    /// A doorbell from a descriptor a peer handed over.
    pub fn from_fd(fd: OwnedFd) -> Doorbell {
        Doorbell { fd, signal: false }
    }

    /// This process's doorbell for [`WAKE_SIGNAL`] (one for the whole
    /// process, made on first use): a signalfd, readable while the signal
    /// is pending. Each call blocks the signal in the calling thread;
    /// the first should come from the process's only thread (threads
    /// made later inherit the mask), so that no thread takes the signal
    /// before the signalfd sees it.
    pub fn wake_signal() -> std::io::Result<Arc<Doorbell>> {
        static BELL: OnceLock<Arc<Doorbell>> = OnceLock::new();
        // SAFETY: `set` is a local sigset_t initialised by sigemptyset
        // before use; pthread_sigmask and signalfd only read it, and
        // signalfd(-1, ...) returns a new descriptor that nothing else
        // owns (checked for -1 before it is wrapped).
        let fd = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, WAKE_SIGNAL);
            let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if r != 0 {
                return Err(std::io::Error::from_raw_os_error(r));
            }
            if let Some(b) = BELL.get() {
                return Ok(b.clone());
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            OwnedFd::from_raw_fd(fd)
        };
        Ok(BELL
            .get_or_init(|| Arc::new(Doorbell { fd, signal: true }))
            .clone())
    }

    /// True for the signal doorbell (rung by a [`SignalBell`]).
    pub fn is_signal(&self) -> bool {
        self.signal
    }

    /// Another descriptor for the same doorbell, to hand to a peer.
    pub fn dup_fd(&self) -> std::io::Result<OwnedFd> {
        Ok(rustix::io::fcntl_dupfd_cloexec(&self.fd, 0)?)
    }

    /// Rings it (a signal doorbell is rung by [`SignalBell::ring`]).
    pub fn ring(&self) -> std::io::Result<()> {
        if self.signal {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "the signal doorbell is rung by signalling its process",
            ));
        }
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
        if self.signal {
            // One record per pending signal (a plain signal is pending
            // once however often it was sent).
            let mut buf = [0u8; 128];
            let mut rang = false;
            while matches!(rustix::io::read(&self.fd, &mut buf), Ok(128)) {
                rang = true;
            }
            return rang;
        }
        let mut buf = [0u8; 8];
        matches!(rustix::io::read(&self.fd, &mut buf), Ok(8))
    }
}

/// The ringing end of a peer's signal doorbell: the peer's pid, and
/// nothing else (no descriptor). Ringing sends [`WAKE_SIGNAL`] to the
/// pid, so the pid must not be reused while the bell is armed: the
/// peer's parent [`SignalBell::disarm`]s it before reaping the peer
/// (until then the pid stays the peer's, alive or a zombie), and a ring
/// under way finishes before `disarm` returns.
pub struct SignalBell {
    pid: RwLock<Option<rustix::process::Pid>>,
}

impl SignalBell {
    /// A bell for process `pid` (a child of this process).
    pub fn new(pid: u32) -> SignalBell {
        SignalBell {
            pid: RwLock::new(rustix::process::Pid::from_raw(pid as i32)),
        }
    }

    /// Rings it: signals the process, unless disarmed.
    pub fn ring(&self) -> std::io::Result<()> {
        let pid = self.pid.read().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = *pid {
            // SAFETY: WAKE_SIGNAL is SIGURG, a valid signal number.
            let sig = unsafe { rustix::process::Signal::from_raw_unchecked(WAKE_SIGNAL) };
            match rustix::process::kill_process(p, sig) {
                Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Stops ringing for good (the process is about to be reaped); waits
    /// for a ring under way.
    pub fn disarm(&self) {
        *self.pid.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// False once disarmed.
    pub fn armed(&self) -> bool {
        self.pid.read().unwrap_or_else(|e| e.into_inner()).is_some()
    }
}

impl std::fmt::Debug for SignalBell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SignalBell({:?})",
            *self.pid.read().unwrap_or_else(|e| e.into_inner())
        )
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

    #[test]
    fn a_signal_bell_rings_the_signal_doorbell_until_disarmed() {
        // Test threads run while this one blocks the signal: ring a
        // thread-directed copy too, so that the signalfd (which sees the
        // signals pending for its thread and for the process) rings
        // whichever thread the kernel picks for the process-directed one.
        let d = Doorbell::wake_signal().expect("signalfd");
        assert!(d.is_signal() && d.ring().is_err());
        let tid = rustix::thread::gettid();
        // SAFETY: WAKE_SIGNAL is a valid signal number.
        let sig = unsafe { rustix::process::Signal::from_raw_unchecked(WAKE_SIGNAL) };
        let ring_me = || {
            // SAFETY: tgkill to this very thread, with a valid signal.
            let r = unsafe {
                libc::syscall(
                    libc::SYS_tgkill,
                    rustix::process::getpid().as_raw_nonzero().get(),
                    tid.as_raw_nonzero().get(),
                    sig.as_raw(),
                )
            };
            assert_eq!(r, 0);
        };
        d.clear();
        ring_me();
        assert!(d.wait(Some(Duration::from_secs(5))).expect("wait"));
        assert!(!d.clear(), "the wait cleared it");
        let me = SignalBell::new(std::process::id());
        assert!(me.armed());
        me.disarm();
        assert!(!me.armed());
        me.ring().expect("a disarmed bell rings nobody");
        assert!(!d.wait(Some(Duration::from_millis(20))).expect("wait"));
    }
}
