//! Click's chatter: the lines elements print for the operator (`Print`,
//! `IPPrint`, `IP6Print`), which `ChatterSocket` copies to its clients.
//! Printing elements write to standard error as before and, only while a
//! `ChatterSocket` listens, also hand each line to [`copy`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// Live listeners (a fast check for printers).
static LISTENING: AtomicUsize = AtomicUsize::new(0);
/// The listeners.
static HUBS: Mutex<Vec<Weak<Hub>>> = Mutex::new(Vec::new());

/// Most bytes a listener keeps between its element's task runs; older
/// lines go first (counted in [`Hub::lost`]).
pub const HUB_LIMIT: usize = 500_000;

/// Lines waiting for one `ChatterSocket`.
#[derive(Default)]
pub struct Hub {
    inner: Mutex<HubInner>,
}

#[derive(Default)]
struct HubInner {
    lines: std::collections::VecDeque<String>,
    bytes: usize,
    lost: u64,
}

impl Hub {
    /// Takes the waiting lines, oldest first.
    pub fn take(&self, into: &mut Vec<String>) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        into.extend(g.lines.drain(..));
        g.bytes = 0;
    }

    /// Lines dropped because the hub was full.
    pub fn lost(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).lost
    }

    fn put(&self, line: &str) {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        while g.bytes + line.len() > HUB_LIMIT {
            let Some(old) = g.lines.pop_front() else {
                break;
            };
            g.bytes -= old.len();
            g.lost += 1;
        }
        if line.len() <= HUB_LIMIT {
            g.bytes += line.len();
            g.lines.push_back(line.to_string());
        } else {
            g.lost += 1;
        }
    }
}

/// A registration: the hub stops receiving when this is dropped.
pub struct Listener {
    hub: Arc<Hub>,
}

impl Listener {
    /// The hub lines arrive in.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        LISTENING.fetch_sub(1, Ordering::Relaxed);
        let mut hubs = HUBS.lock().unwrap_or_else(|e| e.into_inner());
        hubs.retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), &*self.hub));
    }
}

/// Starts receiving a copy of every chatter line.
pub fn listen() -> Listener {
    let hub = Arc::new(Hub::default());
    HUBS.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Arc::downgrade(&hub));
    LISTENING.fetch_add(1, Ordering::Relaxed);
    Listener { hub }
}

/// True while some `ChatterSocket` listens (printers skip [`copy`]
/// otherwise).
#[inline]
pub fn listening() -> bool {
    LISTENING.load(Ordering::Relaxed) > 0
}

/// Copies one printed line (with its newline) to every listener.
#[cold]
pub fn copy(line: &str) {
    let hubs = HUBS.lock().unwrap_or_else(|e| e.into_inner());
    for h in hubs.iter().filter_map(Weak::upgrade) {
        h.put(line);
    }
}
