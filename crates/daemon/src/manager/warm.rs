//! The warm pool: sandboxes started ahead of demand, so that creating an
//! instance skips the clone, the namespaces, the cgroup and the program's
//! start (most of its boot time). One thread keeps the pool full; on
//! shutdown it is stopped and joined before the pool is emptied, so no
//! sandbox (and no cgroup) started meanwhile is left behind.
//!
//! The pool is sized to the request rate: at least the daemon's `--warm`,
//! and while creates come quickly, what they take in [`DEMAND_WINDOW`]
//! (up to [`MAX_WARM`]); then the refill also stops waiting
//! [`REFILL_DELAY`] before each start, since back-to-back requests would
//! otherwise empty the pool while it waits and each pay a cold start.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pronto_sandbox::{Limits, Sandbox};

use super::{lock, Manager, SUPERVISOR_STACK};

/// How long the pool waits after a sandbox is taken before starting its
/// replacement (the start it replaces is in progress meanwhile).
const REFILL_DELAY: Duration = Duration::from_millis(10);

/// The span over which takes from the pool count as the current demand.
pub(crate) const DEMAND_WINDOW: Duration = Duration::from_millis(50);

/// The most sandboxes the pool grows to under demand (each holds ~1 MB
/// and a process until taken; a burst beyond it starts cold).
pub(crate) const MAX_WARM: usize = 16;

/// Pre-started sandboxes.
#[derive(Default)]
pub(crate) struct Warm {
    pool: Mutex<Vec<Sandbox>>,
    /// When sandboxes were taken, the last [`DEMAND_WINDOW`]'s (at most
    /// [`MAX_WARM`] kept).
    takes: Mutex<VecDeque<Instant>>,
    wake: Condvar,
    /// No more refills (set by [`Warm::halt`]).
    stop: AtomicBool,
    /// The refill thread may end (set by [`Warm::stop`]). Until then it
    /// stays, refilling nothing: the sandboxes it started die with it
    /// (`PR_SET_PDEATHSIG` follows the thread), and those taken by
    /// instances must outlive it until their supervisors stop them.
    exit: Mutex<bool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Warm {
    /// Starts the thread that keeps `want` sandboxes ready for `m`.
    pub(crate) fn start(m: &Arc<Manager>) -> Result<(), String> {
        let w = Arc::downgrade(m);
        let t = std::thread::Builder::new()
            .name("prontod-warm".into())
            .stack_size(SUPERVISOR_STACK)
            .spawn(move || refill(w))
            .map_err(|e| format!("starting the warm-pool thread: {e}"))?;
        *lock(&m.warm.thread) = Some(t);
        Ok(())
    }

    /// A pre-started sandbox with `limits` applied, if one is ready
    /// (`standard`: the limits pre-started sandboxes have).
    pub(crate) fn take(&self, limits: &Limits, standard: &Limits) -> Option<Sandbox> {
        let sb = lock(&self.pool).pop();
        {
            let mut t = lock(&self.takes);
            if t.len() >= MAX_WARM {
                t.pop_front();
            }
            t.push_back(Instant::now());
        }
        self.wake.notify_one();
        let mut sb = sb?;
        if limits == standard {
            return Some(sb);
        }
        if let Some(cg) = sb.cgroup() {
            if cg.update(limits).is_err() {
                // Limits this cgroup cannot take (a v2 controller it was
                // made without): start a fresh sandbox instead.
                sb.end();
                return None;
            }
        }
        Some(sb)
    }

    /// Stops refilling; the refill thread stays until [`Warm::stop`] (the
    /// instances it started die when it ends).
    pub(crate) fn halt(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.notify_all();
    }

    /// Ends the refill thread, waits for it, and ends every pre-started
    /// sandbox (their cgroups removed). Every instance started from the
    /// pool must be stopped by now: it is killed with the thread.
    pub(crate) fn stop(&self) {
        self.halt();
        *lock(&self.exit) = true;
        {
            // Taken so that the wake-up cannot fall between the thread's
            // check of `exit` and its wait.
            let _pool = lock(&self.pool);
            self.wake.notify_all();
        }
        let t = lock(&self.thread).take();
        if let Some(t) = t {
            let _ = t.join();
        }
        for mut sb in lock(&self.pool).drain(..) {
            sb.end();
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether [`Warm::stop`] lets the refill thread end, waiting up to
    /// `most` for it.
    fn wait_for_exit(&self, most: Duration) -> bool {
        let pool = lock(&self.pool);
        if *lock(&self.exit) {
            return true;
        }
        drop(
            self.wake
                .wait_timeout(pool, most)
                .unwrap_or_else(|e| e.into_inner()),
        );
        *lock(&self.exit)
    }

    /// Sandboxes taken in the last [`DEMAND_WINDOW`].
    fn demand(&self) -> usize {
        let mut t = lock(&self.takes);
        while t.front().is_some_and(|at| at.elapsed() > DEMAND_WINDOW) {
            t.pop_front();
        }
        t.len()
    }

    /// Whether requests come back to back: two takes within twice
    /// [`REFILL_DELAY`] (spaced requests leave the refill its delay).
    fn back_to_back(&self) -> bool {
        let t = lock(&self.takes);
        t.iter()
            .rev()
            .nth(1)
            .is_some_and(|at| at.elapsed() < 2 * REFILL_DELAY)
    }

    /// How many sandboxes the pool should hold now, given the daemon's
    /// `--warm` (`base`; 0 keeps the pool off): `base`, or the recent
    /// demand when that is more (at most [`MAX_WARM`]).
    pub(crate) fn target(&self, base: usize) -> usize {
        if base == 0 {
            return 0;
        }
        base.max(self.demand().min(MAX_WARM))
    }
}

/// Keeps the pool full until the manager goes or the pool is stopped.
fn refill(me: Weak<Manager>) {
    let mut n = 0u64;
    loop {
        let Some(m) = me.upgrade() else { return };
        let base = m.opts.warm;
        let busy;
        {
            let mut pool = lock(&m.warm.pool);
            while pool.len() >= m.warm.target(base) && !m.warm.stopping() {
                pool = m
                    .warm
                    .wake
                    .wait_timeout(pool, Duration::from_secs(1))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            if m.warm.stopping() {
                drop(pool);
                drop(m);
                // Not holding the manager meanwhile (it may be dropped).
                while let Some(m) = me.upgrade() {
                    if m.warm.wait_for_exit(Duration::from_secs(1)) {
                        break;
                    }
                }
                return;
            }
            busy = m.warm.back_to_back();
        }
        // Let the instance that just took a sandbox finish starting
        // before this one competes with it for the CPUs (unless the
        // pool is empty, or requests come back to back: then the next
        // ones would start cold).
        if !busy && !lock(&m.warm.pool).is_empty() {
            std::thread::sleep(REFILL_DELAY);
        }
        n += 1;
        let ss = m.sandbox_spec(format!("warm{n}"), m.standard_limits());
        drop(m);
        match Sandbox::spawn(&ss) {
            Ok(mut sb) => {
                // Ready once it answers: the program has started.
                let ready = sb.ping().is_ok();
                let Some(m) = me.upgrade() else {
                    sb.end();
                    return;
                };
                // Checked under the pool's lock: once stopping, nothing is
                // added (and `stop` empties the pool after this thread
                // ended).
                let mut pool = lock(&m.warm.pool);
                if ready && !m.warm.stopping() {
                    pool.push(sb);
                } else {
                    drop(pool);
                    sb.end();
                }
            }
            Err(_) => {
                // Instances start cold (and report the error) meanwhile.
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taken(w: &Warm, n: usize) {
        for _ in 0..n {
            let mut t = lock(&w.takes);
            if t.len() >= MAX_WARM {
                t.pop_front();
            }
            t.push_back(Instant::now());
        }
    }

    #[test]
    fn the_pool_grows_with_the_takes_of_the_last_window_up_to_its_bound() {
        let w = Warm::default();
        assert_eq!((w.target(0), w.target(2)), (0, 2));
        assert!(!w.back_to_back());
        taken(&w, 1);
        assert_eq!(w.target(2), 2);
        assert!(!w.back_to_back(), "one request is not a burst");
        taken(&w, 4);
        assert_eq!((w.target(2), w.target(8)), (5, 8));
        assert!(w.back_to_back());
        taken(&w, 40);
        assert_eq!(w.target(2), MAX_WARM);
        // The demand passes with its window; `--warm 0` stays off.
        std::thread::sleep(DEMAND_WINDOW + Duration::from_millis(5));
        assert_eq!((w.target(2), w.target(0)), (2, 0));
        assert!(!w.back_to_back());
    }
}
