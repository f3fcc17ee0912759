//! Several threads: `pronto run --threads N`.
//!
//! Packets move only along connections, so the connected components of
//! the configuration never share a packet. [`partition`] gives each
//! component a thread (a `StaticThreadSched` binding, else the least
//! loaded thread); [`Threads::build`] then builds one [`Router`] per
//! thread, inside that thread (elements and packet pools stay on the
//! thread that made them), and [`Threads::run`] runs them at once.
//!
//! Elements without connections that only inform others (`AddressInfo`,
//! `IPRewriterPatterns`, mappers, `StaticThreadSched`) are configured on
//! every thread: each thread has its own copy, so one with state (a
//! mapper's round-robin position) has one state per thread. `Script` and
//! `DriverManager` run on thread 0, the calling thread.
//!
//! Handlers reach across threads: a router asked for an element another
//! thread owns sends the call to that thread's inbox and rings its
//! doorbell (an eventfd), then serves its own inbox until the answer
//! comes, so two threads calling each other do not deadlock. A thread
//! serves its inbox every 16 rounds of tasks (when it reads the clock),
//! whenever its idle wait wakes (the doorbell is in the wait's poll set),
//! and after the run, until it is told to quit, so `pronto run -h` reads
//! handlers of every thread after the run. A stop request on any thread
//! goes to thread 0 (its driver script, or its router); when thread 0
//! stops, a shared flag and every doorbell stop the others.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pronto_lang::{Diagnostic, FlatConfig, FlatConnection, Level, SourceMap};

use crate::graph;
use crate::router::{lookup_class, CallError, Clock, Router, RouterOptions};
use crate::staticthreadsched::StaticThreadSched;

/// The most threads `pronto run --threads` accepts.
pub const MAX_THREADS: usize = 64;

// ---- partition ------------------------------------------------------------

/// Where each element of a flat configuration runs.
#[derive(Clone, Debug)]
pub struct Partition {
    /// Threads asked for.
    pub nthreads: usize,
    /// Per element of the flat configuration: its thread, or `None` for an
    /// information element configured on every thread.
    pub home: Vec<Option<usize>>,
    /// Warnings (out-of-range threads, conflicting bindings).
    pub warnings: Vec<Diagnostic>,
}

impl Partition {
    /// Threads that own at least one element (thread 0 always), in order.
    pub fn used_threads(&self) -> Vec<usize> {
        let mut used = vec![false; self.nthreads];
        used[0] = true;
        for t in self.home.iter().flatten() {
            used[*t] = true;
        }
        (0..self.nthreads).filter(|&t| used[t]).collect()
    }

    /// The part of `flat` that thread `t` builds: its elements and every
    /// information element, in file order, with the connections among
    /// them.
    pub fn sub_config(&self, flat: &FlatConfig, t: usize) -> FlatConfig {
        let mut index = vec![usize::MAX; flat.elements.len()];
        let mut elements = Vec::new();
        for (i, e) in flat.elements.iter().enumerate() {
            if self.home[i].is_none_or(|h| h == t) {
                index[i] = elements.len();
                elements.push(e.clone());
            }
        }
        let connections = flat
            .connections
            .iter()
            .filter(|c| self.home[c.from] == Some(t))
            .map(|c| FlatConnection {
                from: index[c.from],
                to: index[c.to],
                ..*c
            })
            .collect();
        FlatConfig {
            elements,
            connections,
            requirements: flat.requirements.clone(),
        }
    }
}

/// Union-find over element indices.
struct Components(Vec<usize>);

impl Components {
    fn find(&mut self, mut i: usize) -> usize {
        while self.0[i] != i {
            self.0[i] = self.0[self.0[i]];
            i = self.0[i];
        }
        i
    }

    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        // The smaller index is the root, so a component is known by its
        // first element in file order.
        if a < b {
            self.0[b] = a;
        } else {
            self.0[a] = b;
        }
    }
}

/// Resolves an element name as Click does from an argument of `asking`:
/// relative to its compound, then each enclosing one, then the top level.
fn resolve(by_name: &HashMap<&str, usize>, asking: &str, name: &str) -> Option<usize> {
    let mut prefix = asking;
    loop {
        prefix = match prefix.rfind('/') {
            Some(k) => &prefix[..k],
            None => "",
        };
        let found = if prefix.is_empty() {
            by_name.get(name).copied()
        } else {
            by_name.get(format!("{prefix}/{name}").as_str()).copied()
        };
        if found.is_some() || prefix.is_empty() {
            return found;
        }
    }
}

/// Every element a `StaticThreadSched` argument names: the element, or
/// each element of the compound of that name.
fn named_elements(
    flat: &FlatConfig,
    by_name: &HashMap<&str, usize>,
    asking: &str,
    name: &str,
) -> Vec<usize> {
    if let Some(i) = resolve(by_name, asking, name) {
        return vec![i];
    }
    let prefix = match asking.rfind('/') {
        Some(k) => format!("{}/{name}/", &asking[..k]),
        None => format!("{name}/"),
    };
    (0..flat.elements.len())
        .filter(|&i| flat.elements[i].name.starts_with(&prefix))
        .collect()
}

/// True for the classes that drive the router (they run on thread 0).
fn is_script(class: &str) -> bool {
    matches!(class, "Script" | "DriverManager" | "ControlSocket")
}

/// Splits `flat` over `nthreads` threads (see the module documentation).
/// Errors: the configuration's graph errors (unknown classes, port counts,
/// push/pull), exactly as [`Router::build`] reports them, and
/// `StaticThreadSched` arguments naming no element.
pub fn partition(flat: &FlatConfig, nthreads: usize) -> Result<Partition, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let g = graph::build(flat, &lookup_class, &mut errors);
    if !errors.is_empty() {
        return Err(errors);
    }
    let n = flat.elements.len();
    let nthreads = nthreads.max(1);
    let by_name: HashMap<&str, usize> = flat
        .elements
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.as_str(), i))
        .collect();
    let mut comps = Components((0..n).collect());
    let mut connected = vec![false; n];
    for c in &flat.connections {
        connected[c.from] = true;
        connected[c.to] = true;
        comps.union(c.from, c.to);
    }
    // An element whose arguments name a connected element (`ICMPRewriter(rw)`,
    // a `HANDLER` naming an element) shares state with it or calls it
    // while configuring: keep the two on one thread.
    for (i, e) in flat.elements.iter().enumerate() {
        if is_script(&e.class) || e.class == "StaticThreadSched" {
            continue;
        }
        for word in e
            .config
            .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '/' | '@')))
        {
            if word.is_empty() || word.starts_with(|c: char| c.is_ascii_digit()) {
                continue;
            }
            if let Some(j) = resolve(&by_name, &e.name, word) {
                if j != i && connected[j] && !is_script(&flat.elements[j].class) {
                    connected[i] = true;
                    comps.union(i, j);
                }
            }
        }
    }
    let mut home: Vec<Option<usize>> = vec![None; n];
    // Scripts on thread 0; other unconnected elements everywhere.
    for (i, e) in flat.elements.iter().enumerate() {
        if is_script(&e.class) {
            home[i] = Some(0);
        }
    }

    // Bindings: (thread, element that asked for it) per component root.
    let mut warnings = Vec::new();
    let mut pinned: HashMap<usize, (usize, usize)> = HashMap::new();
    let mut conflict_warned: Vec<usize> = Vec::new();
    for (si, se) in flat.elements.iter().enumerate() {
        if se.class != "StaticThreadSched" {
            continue;
        }
        // Syntax errors are the element's own, reported when it is
        // configured.
        let Ok(prefs) = StaticThreadSched::parse(&se.config) else {
            continue;
        };
        let note = format!("while configuring `{} :: {}`", se.name, se.class);
        for p in prefs {
            let targets = named_elements(flat, &by_name, &se.name, &p.element);
            if targets.is_empty() {
                errors.push(
                    Diagnostic::error(
                        format!("`{}` does not name an element", p.element),
                        Some(flat.elements[si].config_span),
                    )
                    .with_note(note.clone())
                    .with_context(
                        format!("While configuring '{} :: {}'", se.name, se.class),
                        se.span,
                    ),
                );
                continue;
            }
            let Some(t) = p.thread else { continue };
            let thread = t % nthreads;
            if t >= nthreads && nthreads > 1 {
                warnings.push(
                    Diagnostic::warning(
                        format!(
                            "thread {t} is out of range with {nthreads} threads: `{}` runs on thread {thread}",
                            p.element
                        ),
                        Some(se.config_span),
                    )
                    .with_note(note.clone()),
                );
            }
            for e in targets {
                if !connected[e] {
                    continue;
                }
                let root = comps.find(e);
                match pinned.get(&root) {
                    None => {
                        pinned.insert(root, (thread, e));
                    }
                    Some(&(first_t, first_e)) if first_t != thread => {
                        if !conflict_warned.contains(&root) {
                            conflict_warned.push(root);
                            warnings.push(
                                Diagnostic::warning(
                                    format!(
                                        "`{}` and `{}` exchange packets, so they run on one thread ({first_t})",
                                        flat.elements[first_e].name, flat.elements[e].name
                                    ),
                                    Some(se.config_span),
                                )
                                .with_note(note.clone()),
                            );
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }

    // Components in file order, with their estimated task count: sources
    // and elements that pull into push outputs (or into nothing).
    let mut roots: Vec<usize> = Vec::new();
    let mut tasks: HashMap<usize, usize> = HashMap::new();
    for (i, node) in g.nodes.iter().enumerate() {
        if !connected[i] {
            continue;
        }
        let r = comps.find(i);
        if !tasks.contains_key(&r) {
            roots.push(r);
        }
        let source = node.ninputs == 0 && node.noutputs > 0;
        let puller = node.input_push.iter().any(|p| !p) && node.output_push.iter().all(|&p| p);
        *tasks.entry(r).or_insert(0) += usize::from(source || puller);
    }
    let mut load = vec![0usize; nthreads];
    let mut thread_of: HashMap<usize, usize> = HashMap::new();
    for &r in &roots {
        if let Some(&(t, _)) = pinned.get(&r) {
            thread_of.insert(r, t);
            load[t] += tasks[&r];
        }
    }
    let mut cursor = 0;
    for &r in &roots {
        if thread_of.contains_key(&r) {
            continue;
        }
        // The least loaded thread; among equals, the next in turn.
        let least = load.iter().copied().min().unwrap_or(0);
        let t = (0..nthreads)
            .map(|k| (cursor + k) % nthreads)
            .find(|&t| load[t] == least)
            .unwrap_or(0);
        cursor = (t + 1) % nthreads;
        thread_of.insert(r, t);
        load[t] += tasks[&r];
    }
    for i in 0..n {
        if connected[i] {
            home[i] = Some(thread_of[&comps.find(i)]);
        }
    }
    Ok(Partition {
        nthreads,
        home,
        warnings,
    })
}

// ---- messages between threads ---------------------------------------------

/// A thread's doorbell: an eventfd the thread polls while idle or while
/// it waits for an answer.
pub(crate) struct Bell(OwnedFd);

impl Bell {
    pub(crate) fn new() -> std::io::Result<Bell> {
        let fd = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )?;
        Ok(Bell(fd))
    }

    /// Rings it (a full counter already wakes the thread).
    pub(crate) fn ring(&self) {
        let _ = rustix::io::write(&self.0, &1u64.to_ne_bytes());
    }

    /// Clears it.
    pub(crate) fn clear(&self) {
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&self.0, &mut buf);
    }

    /// Waits until it rings or `timeout` passes, then clears it.
    pub(crate) fn wait(&self, timeout: Duration) {
        use rustix::event::{PollFd, PollFlags, Timespec};
        let ts = Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        let mut fds = [PollFd::new(&self.0, PollFlags::IN)];
        // An interrupted wait just ends early.
        let _ = rustix::event::poll(&mut fds, Some(&ts));
        self.clear();
    }
}

impl Bell {
    /// Waits until either bell rings or `timeout` passes, then clears both.
    pub(crate) fn wait_either(a: &Bell, b: &Bell, timeout: Duration) {
        use rustix::event::{PollFd, PollFlags, Timespec};
        let ts = Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        let mut fds = [
            PollFd::new(&a.0, PollFlags::IN),
            PollFd::new(&b.0, PollFlags::IN),
        ];
        let _ = rustix::event::poll(&mut fds, Some(&ts));
        a.clear();
        b.clear();
    }
}

impl AsFd for Bell {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// What one thread asks of another.
pub(crate) enum Msg {
    /// Call a read (`read`) or write handler and answer on `reply`, then
    /// ring `bell`.
    Call {
        read: bool,
        handler: String,
        arg: String,
        reply: Sender<Result<String, CallError>>,
        bell: Arc<Bell>,
    },
    /// A stop request, for thread 0's driver.
    Stop,
    /// End the run now (a [`crate::Remote`] halting the router).
    Halt,
    /// Start running (worker threads, once every thread is built).
    Go,
    /// Leave.
    Quit,
}

/// How to reach one thread.
pub(crate) struct Peer {
    tx: Sender<Msg>,
    bell: Arc<Bell>,
}

impl Peer {
    /// Sends `msg` and rings; false if the thread is gone.
    pub(crate) fn send(&self, msg: Msg) -> bool {
        let ok = self.tx.send(msg).is_ok();
        self.bell.ring();
        ok
    }
}

/// A router's connection to the other threads' routers.
pub(crate) struct Link {
    /// This router's thread.
    pub(crate) me: usize,
    pub(crate) inbox: Receiver<Msg>,
    pub(crate) bell: Arc<Bell>,
    /// Every thread, by thread number (`None`: no router there).
    pub(crate) peers: Arc<Vec<Option<Peer>>>,
    /// Which thread owns each element (information elements, present on
    /// every thread, are not listed).
    pub(crate) owner: Arc<HashMap<String, usize>>,
    /// Every element's name, in file order (the `list` handler).
    pub(crate) names: Arc<Vec<String>>,
    /// Set when thread 0 stops: every thread stops.
    pub(crate) stop: Arc<AtomicBool>,
    /// A `Go` or `Quit` that arrived while serving calls.
    pub(crate) pending: Option<Msg>,
}

impl Link {
    /// Thread 0 stopped: stop every thread.
    pub(crate) fn stop_all(&self) {
        self.stop.store(true, Ordering::Relaxed);
        for p in self.peers.iter().flatten() {
            p.bell.ring();
        }
    }
}

// ---- the threads ----------------------------------------------------------

struct Worker {
    thread: usize,
    handle: Option<JoinHandle<()>>,
}

/// One router per thread, running together.
pub struct Threads {
    main: Router,
    workers: Vec<Worker>,
    peers: Arc<Vec<Option<Peer>>>,
    stop: Arc<AtomicBool>,
    done: Receiver<(usize, Result<(), String>)>,
}

/// What a worker says once it is built.
type Built = (usize, Result<(), Vec<Diagnostic>>);

impl Threads {
    /// Splits `flat` over `nthreads` threads (1 to [`MAX_THREADS`]) and
    /// builds every thread's router, each in its thread. Warnings go to
    /// `warnings`; every thread's errors are returned together (sorted by
    /// position, each once), and then nothing runs.
    pub fn build(
        flat: &FlatConfig,
        sm: &SourceMap,
        opts: &RouterOptions,
        nthreads: usize,
        warnings: &mut Vec<Diagnostic>,
    ) -> Result<Threads, Vec<Diagnostic>> {
        if !(1..=MAX_THREADS).contains(&nthreads) {
            return Err(vec![Diagnostic::error(
                format!("--threads: expected 1 to {MAX_THREADS} threads, found {nthreads}"),
                None,
            )]);
        }
        if nthreads > 1 && matches!(opts.clock, Clock::Simulated(_)) {
            return Err(vec![Diagnostic::error(
                "--simtime runs the router on one thread: drop --threads, or --simtime",
                None,
            )]);
        }
        let part = partition(flat, nthreads)?;
        warnings.extend(part.warnings.iter().cloned());
        let used = part.used_threads();

        let mut owner = HashMap::new();
        for (i, h) in part.home.iter().enumerate() {
            if let Some(t) = h {
                owner.insert(flat.elements[i].name.clone(), *t);
            }
        }
        let owner = Arc::new(owner);
        let names: Arc<Vec<String>> =
            Arc::new(flat.elements.iter().map(|e| e.name.clone()).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let bell_err = |e: std::io::Error| {
            vec![Diagnostic::error(
                format!("cannot make a thread's doorbell (eventfd): {e}"),
                None,
            )]
        };
        let mut peers: Vec<Option<Peer>> = (0..nthreads).map(|_| None).collect();
        let mut inboxes: Vec<Option<(Receiver<Msg>, Arc<Bell>)>> =
            (0..nthreads).map(|_| None).collect();
        for &t in &used {
            let (tx, rx) = mpsc::channel();
            let bell = Arc::new(Bell::new().map_err(bell_err)?);
            peers[t] = Some(Peer {
                tx,
                bell: bell.clone(),
            });
            inboxes[t] = Some((rx, bell));
        }
        let peers = Arc::new(peers);
        let mut link_for = |t: usize| -> Option<Link> {
            let (inbox, bell) = inboxes[t].take()?;
            Some(Link {
                me: t,
                inbox,
                bell,
                peers: peers.clone(),
                owner: owner.clone(),
                names: names.clone(),
                stop: stop.clone(),
                pending: None,
            })
        };

        let (built_tx, built_rx) = mpsc::channel::<Built>();
        let (done_tx, done_rx) = mpsc::channel();
        let mut workers = Vec::new();
        let mut spawn_error = None;
        for &t in used.iter().filter(|&&t| t != 0) {
            let Some(link) = link_for(t) else { continue };
            let sub = part.sub_config(flat, t);
            let sm = sm.clone();
            let wopts = RouterOptions {
                base_dir: opts.base_dir.clone(),
                pool_slots: opts.pool_slots,
                pool_limit: opts.pool_limit,
                clock: opts.clock,
                busy_poll: opts.busy_poll,
                poll_window_ns: opts.poll_window_ns,
                order_per_packet: opts.order_per_packet,
            };
            let built_tx = built_tx.clone();
            let done_tx = done_tx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("pronto-t{t}"))
                .spawn(move || worker(t, sub, sm, wopts, link, built_tx, done_tx));
            match spawned {
                Ok(h) => workers.push(Worker {
                    thread: t,
                    handle: Some(h),
                }),
                Err(e) => {
                    spawn_error = Some(format!("cannot start thread {t}: {e}"));
                    break;
                }
            }
        }
        drop(built_tx);

        // Thread 0 builds here, while the others build in theirs.
        let main_sub = part.sub_config(flat, 0);
        let main = Router::build(&main_sub, sm, opts);
        let mut errors: Vec<Diagnostic> = Vec::new();
        let mut main = match main {
            Ok(r) => Some(r),
            Err(e) => {
                errors.extend(e);
                None
            }
        };
        for _ in 0..workers.len() {
            match built_rx.recv() {
                Ok((_, Ok(()))) => {}
                Ok((_, Err(e))) => errors.extend(e),
                Err(_) => {
                    errors.push(Diagnostic::error(
                        "a router thread ended while building",
                        None,
                    ));
                    break;
                }
            }
        }
        if let Some(e) = spawn_error {
            errors.push(Diagnostic::error(e, None));
        }
        let link0 = link_for(0);
        match (main.take(), link0) {
            (Some(mut r), Some(link)) if errors.is_empty() => {
                r.set_link(link, flat.to_click());
                Ok(Threads {
                    main: r,
                    workers,
                    peers,
                    stop,
                    done: done_rx,
                })
            }
            _ => {
                Threads::quit_all(workers, &peers);
                // Each thread reports what it shares with the others (an
                // information element's error) once; all in source order.
                errors.sort_by_key(|d| {
                    (
                        d.level != Level::Error,
                        d.span.map(|s| (s.file, s.start, s.end)),
                    )
                });
                errors.dedup_by(|a, b| {
                    a.span == b.span && a.message == b.message && a.notes == b.notes
                });
                Err(errors)
            }
        }
    }

    /// Tells every worker to quit and waits for them.
    fn quit_all(mut workers: Vec<Worker>, peers: &[Option<Peer>]) {
        for w in &workers {
            if let Some(p) = &peers[w.thread] {
                p.send(Msg::Quit);
            }
        }
        for w in &mut workers {
            if let Some(h) = w.handle.take() {
                let _ = h.join();
            }
        }
    }

    /// Runs every thread until thread 0 stops (its driver ends, or a stop
    /// request from any thread reaches it with no driver), then waits for
    /// the others to finish their run. Returns thread 0's script error,
    /// if any, else the first worker's.
    pub fn run(&mut self) -> Result<(), String> {
        for w in &self.workers {
            if let Some(p) = &self.peers[w.thread] {
                p.send(Msg::Go);
            }
        }
        let result = self.main.run();
        self.stop.store(true, Ordering::Relaxed);
        let mut first_err = None;
        let mut pending: Vec<usize> = self.workers.iter().map(|w| w.thread).collect();
        while !pending.is_empty() {
            match self.done.recv_timeout(Duration::from_millis(5)) {
                Ok((t, r)) => {
                    pending.retain(|&p| p != t);
                    if let Err(e) = r {
                        first_err.get_or_insert(e);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.main.serve_link();
                    // A thread that ended without reporting panicked.
                    for w in &self.workers {
                        let ended = w.handle.as_ref().is_none_or(|h| h.is_finished());
                        if ended && pending.contains(&w.thread) {
                            pending.retain(|&p| p != w.thread);
                            first_err
                                .get_or_insert(format!("thread {} ended abnormally", w.thread));
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        match (result, first_err) {
            (Err(e), _) | (Ok(()), Some(e)) => Err(e),
            (Ok(()), None) => Ok(()),
        }
    }

    /// Calls a read handler on whichever thread owns the element.
    pub fn read_handler(&mut self, full: &str, params: &str) -> Result<String, CallError> {
        self.main.read_handler(full, params)
    }

    /// Calls a write handler on whichever thread owns the element.
    pub fn write_handler(&mut self, full: &str, value: &str) -> Result<(), CallError> {
        self.main.write_handler(full, value)
    }

    /// Threads running a router (thread 0 first).
    pub fn threads(&self) -> Vec<usize> {
        std::iter::once(0)
            .chain(self.workers.iter().map(|w| w.thread))
            .collect()
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let workers = std::mem::take(&mut self.workers);
        Threads::quit_all(workers, &self.peers);
    }
}

/// A worker thread: builds its router, reports, waits for `Go`, runs,
/// then serves handler calls until `Quit`.
fn worker(
    t: usize,
    sub: FlatConfig,
    sm: SourceMap,
    opts: RouterOptions,
    link: Link,
    built: Sender<Built>,
    done: Sender<(usize, Result<(), String>)>,
) {
    let mut router = match Router::build(&sub, &sm, &opts) {
        Ok(r) => r,
        Err(e) => {
            let _ = built.send((t, Err(e)));
            return;
        }
    };
    router.set_link(link, String::new());
    if built.send((t, Ok(()))).is_err() {
        return;
    }
    if !router.wait_go() {
        return;
    }
    let r = router.run();
    let _ = done.send((t, r));
    router.serve_until_quit();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(text: &str) -> (FlatConfig, SourceMap) {
        let mut sm = SourceMap::new();
        let file = sm.add("t.click", text);
        let opts = pronto_lang::Options {
            defines: &[],
            is_primitive: &crate::is_known_class,
        };
        let (f, _) = pronto_lang::parse_flat(&sm, file, &opts).expect("parses");
        (f, sm)
    }

    fn homes(f: &FlatConfig, p: &Partition) -> Vec<(String, Option<usize>)> {
        f.elements
            .iter()
            .zip(&p.home)
            .map(|(e, h)| (e.name.clone(), *h))
            .collect()
    }

    fn home_of(f: &FlatConfig, p: &Partition, name: &str) -> Option<usize> {
        let i = f
            .elements
            .iter()
            .position(|e| e.name == name)
            .expect("element exists");
        p.home[i]
    }

    const TWO_PATHS: &str = "a :: InfiniteSource -> ca :: Counter -> Discard;\n\
         b :: InfiniteSource -> cb :: Counter -> Discard;\n\
         ai :: AddressInfo(x 1.2.3.4);\n\
         dm :: DriverManager(stop);\n";

    #[test]
    fn components_go_round_robin_to_the_least_loaded_thread() {
        let (f, _) = flat(TWO_PATHS);
        let p = partition(&f, 2).expect("partitions");
        assert_eq!(home_of(&f, &p, "a"), Some(0));
        assert_eq!(home_of(&f, &p, "ca"), Some(0));
        assert_eq!(home_of(&f, &p, "cb"), Some(1));
        assert_eq!(home_of(&f, &p, "b"), Some(1));
        // Information elements everywhere, scripts on thread 0.
        assert_eq!(home_of(&f, &p, "ai"), None);
        assert_eq!(home_of(&f, &p, "dm"), Some(0));
        assert!(p.warnings.is_empty());
        assert_eq!(p.used_threads(), vec![0, 1]);
        // One thread: everything on thread 0.
        let p1 = partition(&f, 1).expect("partitions");
        assert!(p1.home.iter().all(|h| h.is_none() || *h == Some(0)));
        // More threads than components: the rest stay unused.
        let p4 = partition(&f, 4).expect("partitions");
        assert_eq!(p4.used_threads(), vec![0, 1]);
    }

    #[test]
    fn load_counts_tasks() {
        // Thread 0 gets the two-task path; the next two single-task paths
        // both go to thread 1, which stays no busier than thread 0.
        let (f, _) = flat(
            "InfiniteSource -> q :: Queue -> u :: Unqueue -> Discard;\n\
             b :: InfiniteSource -> Discard;\n\
             c :: InfiniteSource -> Discard;\n\
             d :: InfiniteSource -> Discard;\n",
        );
        let p = partition(&f, 2).expect("partitions");
        assert_eq!(home_of(&f, &p, "u"), Some(0));
        assert_eq!(home_of(&f, &p, "b"), Some(1));
        assert_eq!(home_of(&f, &p, "c"), Some(1));
        assert_eq!(home_of(&f, &p, "d"), Some(0));
    }

    #[test]
    fn static_thread_sched_pins_whole_components() {
        let (f, _) = flat(&format!(
            "{TWO_PATHS}sts :: StaticThreadSched(ca 1, b 0);\n"
        ));
        let p = partition(&f, 2).expect("partitions");
        assert_eq!(home_of(&f, &p, "a"), Some(1));
        assert_eq!(home_of(&f, &p, "ca"), Some(1));
        assert_eq!(home_of(&f, &p, "b"), Some(0));
        assert_eq!(home_of(&f, &p, "cb"), Some(0));
        assert_eq!(home_of(&f, &p, "sts"), None);
        // A compound's name binds each element in it.
        let (f, _) = flat(
            "elementclass P { input -> Counter -> output }\n\
             a :: InfiniteSource -> Discard;\n\
             b :: InfiniteSource -> p :: P -> Discard;\n\
             StaticThreadSched(p 3);\n",
        );
        let p = partition(&f, 2).expect("partitions");
        assert_eq!(home_of(&f, &p, "b"), Some(1));
        assert_eq!(home_of(&f, &p, "a"), Some(0));
        // 3 mod 2, with a warning.
        assert_eq!(p.warnings.len(), 1);
        assert_eq!(
            p.warnings[0].message,
            "thread 3 is out of range with 2 threads: `p` runs on thread 1"
        );
        assert_eq!(p.warnings[0].level, Level::Warning);
    }

    #[test]
    fn conflicting_bindings_warn_once_and_keep_the_first() {
        let (f, _) = flat(&format!(
            "{TWO_PATHS}StaticThreadSched(ca 1, a 0, cb 0, b 1);\n"
        ));
        let p = partition(&f, 2).expect("partitions");
        let texts: Vec<&str> = p.warnings.iter().map(|w| w.message.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "`ca` and `a` exchange packets, so they run on one thread (1)",
                "`cb` and `b` exchange packets, so they run on one thread (0)",
            ]
        );
        assert_eq!(home_of(&f, &p, "a"), Some(1));
        assert_eq!(home_of(&f, &p, "b"), Some(0));
        // Binding both ends to the same thread is no conflict.
        let (f, _) = flat(&format!("{TWO_PATHS}StaticThreadSched(ca 1, a 1);\n"));
        assert!(partition(&f, 2).expect("partitions").warnings.is_empty());
    }

    #[test]
    fn unknown_names_and_graph_errors_are_errors() {
        let (f, _) = flat(&format!("{TWO_PATHS}sts :: StaticThreadSched(nosuch 1);\n"));
        let e = partition(&f, 2).expect_err("unknown element");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].message, "`nosuch` does not name an element");
        assert_eq!(
            e[0].notes,
            vec!["while configuring `sts :: StaticThreadSched`".to_string()]
        );
        let (f, _) = flat("InfiniteSource -> d :: Discard -> Discard;");
        let e = partition(&f, 2).expect_err("port error");
        assert_eq!(e[0].message, "'d :: Discard' has no output 0");
    }

    #[test]
    fn elements_naming_each_other_share_a_thread() {
        let (f, _) = flat(
            "a :: InfiniteSource -> rw :: IPRewriter(pattern 1.0.0.1 - - - 0 0) -> Discard;\n\
             b :: InfiniteSource -> irw :: ICMPRewriter(rw) -> Discard;\n",
        );
        let p = partition(&f, 2).expect("partitions");
        assert_eq!(home_of(&f, &p, "irw"), home_of(&f, &p, "rw"));
        assert_eq!(p.used_threads(), vec![0]);
    }

    #[test]
    fn sub_configs_keep_file_order_and_their_connections() {
        let (f, _) = flat(TWO_PATHS);
        let p = partition(&f, 2).expect("partitions");
        let s1 = p.sub_config(&f, 1);
        let names: Vec<&str> = s1.elements.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, vec!["b", "cb", "Discard@6", "ai"]);
        assert_eq!(s1.connections.len(), 2);
        assert_eq!((s1.connections[0].from, s1.connections[0].to), (0, 1));
        assert_eq!((s1.connections[1].from, s1.connections[1].to), (1, 2));
        let s0 = p.sub_config(&f, 0);
        assert_eq!(s0.elements.len(), 5);
        let _ = homes(&f, &p);
    }

    #[test]
    fn handlers_reach_across_threads() {
        let (f, sm) = flat(
            "a :: InfiniteSource(LIMIT 5, STOP true) -> ca :: Counter -> Discard;\n\
             b :: InfiniteSource(LIMIT 7, STOP false) -> cb :: Counter -> Discard;\n\
             StaticThreadSched(b 1);\n",
        );
        let mut w = Vec::new();
        let mut t = Threads::build(&f, &sm, &RouterOptions::default(), 2, &mut w).expect("builds");
        assert_eq!(t.threads(), vec![0, 1]);
        t.run().expect("runs");
        assert_eq!(t.read_handler("ca.count", "").expect("ca"), "5");
        // `b` may not have finished when `a` stopped everything.
        let cb: u64 = t
            .read_handler("cb.count", "")
            .expect("cb")
            .parse()
            .expect("n");
        assert!(cb <= 7);
        t.write_handler("cb.reset", "").expect("reset");
        assert_eq!(t.read_handler("cb.count", "").expect("cb"), "0");
        assert_eq!(
            t.read_handler("nosuch.count", ""),
            Err(CallError::NoElement("nosuch".into()))
        );
        assert_eq!(
            t.read_handler("cb.nosuch", ""),
            Err(CallError::NoHandler("cb".into(), "nosuch".into(), "read"))
        );
        let list = t.read_handler("list", "").expect("list");
        assert!(list.starts_with("7\n"), "{list}");
    }

    #[test]
    fn rejects_bad_thread_counts_and_simtime() {
        let (f, sm) = flat("InfiniteSource -> Discard;");
        let mut w = Vec::new();
        for n in [0, 65] {
            let e = Threads::build(&f, &sm, &RouterOptions::default(), n, &mut w)
                .err()
                .expect("rejected");
            assert_eq!(
                e[0].message,
                format!("--threads: expected 1 to 64 threads, found {n}")
            );
        }
        let opts = RouterOptions {
            clock: Clock::Simulated(0),
            ..RouterOptions::default()
        };
        assert!(Threads::build(&f, &sm, &opts, 2, &mut w).is_err());
    }
}
