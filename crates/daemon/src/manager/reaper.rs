//! The reaper: one thread that watches every running sandbox's socket in
//! one epoll set and says when it hangs up (the process ended, or closed
//! its end, which the supervisor treats alike), so that an idle daemon
//! with thousands of instances makes no system calls at all. It holds no
//! descriptor of its own per instance: the registration is made through
//! the sandbox's socket, which the supervisor keeps.

use std::collections::HashMap;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::event::epoll;

/// What to do when a watched socket hangs up.
type OnExit = Box<dyn FnOnce() + Send>;

/// Watched sockets.
pub(crate) struct Reaper {
    epoll: OwnedFd,
    /// Key → what to do.
    watched: Mutex<HashMap<u64, OnExit>>,
    next_key: AtomicU64,
}

impl Reaper {
    /// Starts the reaper's thread.
    pub(crate) fn start(stack: usize) -> Result<Arc<Reaper>, String> {
        let r = Arc::new(Reaper {
            epoll: epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| format!("epoll: {e}"))?,
            watched: Mutex::new(HashMap::new()),
            next_key: AtomicU64::new(1),
        });
        let me = r.clone();
        std::thread::Builder::new()
            .name("prontod-reaper".into())
            .stack_size(stack)
            .spawn(move || me.run())
            .map_err(|e| format!("starting the reaper thread: {e}"))?;
        Ok(r)
    }

    /// Calls `on_exit` (on the reaper's thread) when the peer of `sock`
    /// (a connected stream socket the caller keeps open until it calls
    /// [`Reaper::unwatch`]) hangs up; the key to unwatch it, or 0 when it
    /// cannot be watched.
    pub(crate) fn watch(&self, sock: BorrowedFd<'_>, on_exit: OnExit) -> u64 {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        // Registered before the epoll sees it, so an immediate end finds it.
        let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if epoll::add(
            &self.epoll,
            sock,
            epoll::EventData::new_u64(key),
            epoll::EventFlags::RDHUP | epoll::EventFlags::HUP | epoll::EventFlags::ONESHOT,
        )
        .is_err()
        {
            return 0;
        }
        w.insert(key, on_exit);
        key
    }

    /// Stops watching `sock` (the process is being ended on purpose).
    pub(crate) fn unwatch(&self, key: u64, sock: BorrowedFd<'_>) {
        let gone = self
            .watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        if gone.is_some() {
            let _ = epoll::delete(&self.epoll, sock);
        }
    }

    /// Sockets watched now.
    #[cfg(test)]
    fn watching(&self) -> usize {
        self.watched.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    fn run(&self) {
        let mut events = Vec::with_capacity(64);
        loop {
            events.clear();
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                None,
            ) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => return,
            }
            for ev in &events {
                let key = ev.data.u64();
                // One-shot: the registration stays, disabled, until the
                // socket is closed or unwatched.
                let gone = self
                    .watched
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key);
                if let Some(on_exit) = gone {
                    on_exit();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn a_hang_up_is_reported_once_and_an_unwatched_one_not_at_all() {
        let r = Reaper::start(256 << 10).expect("reaper");
        let (short, short_peer) = UnixStream::pair().expect("pair");
        let (long, long_peer) = UnixStream::pair().expect("pair");
        let (tx, rx) = mpsc::channel();
        let t2 = tx.clone();
        let k1 = r.watch(
            short.as_fd(),
            Box::new(move || {
                let _ = tx.send("short");
            }),
        );
        let k2 = r.watch(
            long.as_fd(),
            Box::new(move || {
                let _ = t2.send("long");
            }),
        );
        assert!(k1 != 0 && k2 != 0 && k1 != k2);
        assert_eq!(r.watching(), 2);
        r.unwatch(k2, long.as_fd());
        drop(long_peer);
        drop(short_peer);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("short"));
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
        assert_eq!(r.watching(), 0);
        // A process that ends closes its end: that is a hang-up too.
        let (mine, theirs) = UnixStream::pair().expect("pair");
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(
                theirs,
            )))
            .spawn()
            .expect("sleep");
        let (tx, rx) = mpsc::channel();
        assert_ne!(
            r.watch(
                mine.as_fd(),
                Box::new(move || {
                    let _ = tx.send("ended");
                })
            ),
            0
        );
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("ended"));
        child.wait().expect("reaped");
    }
}
