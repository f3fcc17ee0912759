//! The reaper: one thread that watches every running sandbox's pidfd in
//! one epoll set and says when a process ends, so that an idle daemon with
//! thousands of instances makes no system calls at all.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::event::epoll;

/// What to do when a watched process ends.
type OnExit = Box<dyn FnOnce() + Send>;

/// Watched processes.
pub(crate) struct Reaper {
    epoll: OwnedFd,
    /// Key → what to do, and the process's pidfd.
    watched: Mutex<HashMap<u64, (OnExit, OwnedFd)>>,
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

    /// Calls `on_exit` (on the reaper's thread) when process `pid` ends;
    /// the key to [`Reaper::unwatch`] it, or 0 when it cannot be watched
    /// (it has ended already).
    pub(crate) fn watch(&self, pid: u32, on_exit: OnExit) -> u64 {
        let Some(pid) = rustix::process::Pid::from_raw(pid as i32) else {
            return 0;
        };
        let Ok(fd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
            return 0;
        };
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        // Registered before the epoll sees it, so an immediate end finds it.
        let mut w = self.watched.lock().unwrap_or_else(|e| e.into_inner());
        if epoll::add(
            &self.epoll,
            fd.as_fd(),
            epoll::EventData::new_u64(key),
            epoll::EventFlags::IN | epoll::EventFlags::ONESHOT,
        )
        .is_err()
        {
            return 0;
        }
        w.insert(key, (on_exit, fd));
        key
    }

    /// Stops watching (the process is being ended on purpose).
    pub(crate) fn unwatch(&self, key: u64) {
        let gone = self
            .watched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        if let Some((_, fd)) = gone {
            let _ = epoll::delete(&self.epoll, fd.as_fd());
        }
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
                let gone = self
                    .watched
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key);
                if let Some((on_exit, fd)) = gone {
                    let _ = epoll::delete(&self.epoll, fd.as_fd());
                    on_exit();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn an_ending_process_is_reported_once_and_an_unwatched_one_not_at_all() {
        let r = Reaper::start(256 << 10).expect("reaper");
        let mut short = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .expect("sleep");
        let mut long = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .expect("sleep");
        let (tx, rx) = mpsc::channel();
        let t2 = tx.clone();
        let k1 = r.watch(
            short.id(),
            Box::new(move || {
                let _ = tx.send("short");
            }),
        );
        let k2 = r.watch(
            long.id(),
            Box::new(move || {
                let _ = t2.send("long");
            }),
        );
        assert!(k1 != 0 && k2 != 0 && k1 != k2);
        r.unwatch(k2);
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)), Ok("short"));
        short.wait().expect("reaped");
        long.wait().expect("reaped");
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err());
    }
}
