//! The warm pool: sandboxes started ahead of demand, so that creating an
//! instance skips the clone, the namespaces, the cgroup and the program's
//! start (most of its boot time). One thread keeps the pool full; on
//! shutdown it is stopped and joined before the pool is emptied, so no
//! sandbox (and no cgroup) started meanwhile is left behind.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use pronto_sandbox::{Limits, Sandbox};

use super::{lock, Manager, SUPERVISOR_STACK};

/// How long the pool waits after a sandbox is taken before starting its
/// replacement (the start it replaces is in progress meanwhile).
const REFILL_DELAY: Duration = Duration::from_millis(10);

/// Pre-started sandboxes.
#[derive(Default)]
pub(crate) struct Warm {
    pool: Mutex<Vec<Sandbox>>,
    wake: Condvar,
    stop: AtomicBool,
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

    /// Stops the refill thread, waits for it, and ends every pre-started
    /// sandbox (their cgroups removed).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.notify_all();
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
}

/// Keeps the pool full until the manager goes or the pool is stopped.
fn refill(me: Weak<Manager>) {
    let mut n = 0u64;
    loop {
        let Some(m) = me.upgrade() else { return };
        let want = m.opts.warm;
        {
            let mut pool = lock(&m.warm.pool);
            while pool.len() >= want && !m.warm.stopping() {
                pool = m
                    .warm
                    .wake
                    .wait_timeout(pool, Duration::from_secs(1))
                    .map(|(g, _)| g)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
            if m.warm.stopping() {
                return;
            }
        }
        // Let the instance that just took a sandbox finish starting
        // before this one competes with it for the CPUs (unless the
        // pool is empty: then the next request would start cold).
        if !lock(&m.warm.pool).is_empty() {
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
