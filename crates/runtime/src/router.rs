//! A running router: configured elements, the connections between them, the
//! task loop, timers and handlers.
//!
//! Packets move run-to-completion: a task makes or pulls a batch, and the
//! batch is pushed along the connections, element by element, until every
//! packet is stored, sent or dropped. The runtime performs no I/O of its
//! own and reads time only through its [`Clock`].

use std::collections::HashMap;
use std::path::PathBuf;

use pronto_elements::{
    ClassEntry, ConfigCtx, Control, Element, HandlerError, Out, Peer, Peers, TaskStatus,
};
use pronto_lang::{Diagnostic, FlatConfig, SourceMap};
use pronto_packet::{Batch, Pool, BATCH_MAX};

use crate::graph::{self, Graph};
use crate::script::{Env, Script, ScriptState};
use crate::threads::{Link, Msg};

/// Where the runtime's time comes from.
#[derive(Clone, Copy, Debug)]
pub enum Clock {
    /// The system's wall clock.
    Real,
    /// Simulated time: starts at the given instant (ns since the epoch) and
    /// moves only when the router is idle and a timer is due.
    Simulated(i64),
}

/// How to build a router.
pub struct RouterOptions {
    /// Directory that relative file names in element arguments resolve
    /// against.
    pub base_dir: PathBuf,
    /// Packet slots in the pool.
    pub pool_slots: usize,
    /// Time source.
    pub clock: Clock,
    /// Never block or sleep while idle: poll tasks continuously (lowest
    /// latency, one core busy all the time; `pronto run --busy-poll`).
    pub busy_poll: bool,
}

impl Default for RouterOptions {
    fn default() -> Self {
        RouterOptions {
            base_dir: PathBuf::from("."),
            pool_slots: 16 * 1024,
            clock: Clock::Real,
            busy_poll: false,
        }
    }
}

/// A read handler's or write handler's failure, with the handler's full
/// name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No element of that name.
    #[error("no element named `{0}`")]
    NoElement(String),
    /// The element has no such handler.
    #[error("element `{0}` has no {2} handler `{1}`")]
    NoHandler(String, String, &'static str),
    /// The handler refused the value.
    #[error("{0}: {1}")]
    Failed(String, String),
}

struct Task {
    node: usize,
    wake_at: i64,
    idle_rounds: u32,
    done: bool,
    /// The last run pulled and got nothing: the task waits for another
    /// task to fill a queue.
    pulled_empty: bool,
    /// ... through an element that hands packets out by time (a shaper),
    /// which may have something later without any other task running.
    pull_timed: bool,
}

/// How an idle task can be waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdleWait {
    /// On its file descriptor.
    Fd,
    /// On other tasks (it pulled from an empty queue).
    Others,
    /// On other tasks, or on time (it pulled through a shaper).
    OthersOrTime,
    /// Unknown: it must be polled.
    Poll,
}

/// The longest the router sleeps at once while idle.
const IDLE_SLEEP_MAX_NS: i64 = 50_000_000;
/// The longest it blocks on descriptors when nothing is due: idle routers
/// (thousands of sandboxed instances) wake a few times a minute, not 20
/// times a second; a descriptor, a doorbell or a timer ends the wait.
const FD_WAIT_MAX_NS: i64 = 10_000_000_000;
/// The longest it blocks on descriptors while a task pulls through an
/// element that releases packets by time.
const TIMED_PULL_WAIT_NS: i64 = 1_000_000;

/// When every idle task can be waited for and at least one waits on a
/// descriptor: how long to block in `poll` (ns), given the next timer.
fn idle_poll_timeout(waits: &[IdleWait], now: i64, next_wake: i64) -> Option<i64> {
    if !waits.contains(&IdleWait::Fd) || waits.contains(&IdleWait::Poll) {
        return None;
    }
    let cap = if waits.contains(&IdleWait::OthersOrTime) {
        TIMED_PULL_WAIT_NS
    } else {
        FD_WAIT_MAX_NS
    };
    Some(next_wake.saturating_sub(now).clamp(0, cap))
}

/// A configured, runnable router.
pub struct Router {
    // Field order matters: elements and batches hold packets, which must be
    // dropped before the pool they come from.
    elems: Vec<Box<dyn Element>>,
    outbufs: Vec<Option<Box<[Batch]>>>,
    /// Spare batches, boxed so that taking one moves a pointer, not 2 KiB.
    #[allow(clippy::vec_box)]
    scratch: Vec<Box<Batch>>,
    graph: Graph,
    ordered: Vec<bool>,
    tasks: Vec<Task>,
    scripts: Vec<usize>,
    ctrl: Control,
    clock: Clock,
    busy_poll: bool,
    sim_now: i64,
    /// The time read once at the start of the current task run, handed to
    /// every element the run reaches (one clock read per batch, not per
    /// element).
    run_now: i64,
    stopped: bool,
    /// Set when a pull went through a [`pronto_elements::PullOne`]
    /// element (reset before each task's pull).
    pull_one_seen: bool,
    script_error: Option<String>,
    flat_text: String,
    /// The other threads' routers, under `pronto run --threads N`
    /// (`None`: the only router, and no cost in the task loop).
    link: Option<Box<Link>>,
    /// Calls from other threads ([`Router::remote`]).
    pub(crate) inbox: Option<Box<crate::remote::Inbox>>,
    pool: Pool,
}

/// Looks up an element class by Click name: the element library plus the
/// runtime's own `Script`, `DriverManager` and `StaticThreadSched`.
pub fn lookup_class(name: &str) -> Option<ClassEntry> {
    crate::script::lookup(name)
        .or_else(|| crate::staticthreadsched::lookup(name))
        .or_else(|| crate::controlsocket::lookup(name))
        .or_else(|| pronto_elements::registry::lookup(name))
}

/// Every class the runtime knows, sorted by name.
pub fn all_classes() -> Vec<ClassEntry> {
    let mut v: Vec<ClassEntry> = pronto_elements::registry::all().to_vec();
    v.extend(
        ["DriverManager", "Script"]
            .iter()
            .filter_map(|n| crate::script::lookup(n)),
    );
    v.extend(crate::staticthreadsched::lookup("StaticThreadSched"));
    v.extend(crate::controlsocket::lookup("ControlSocket"));
    v.sort_by_key(|e| e.spec.name);
    v
}

/// True if `name` is a known primitive class.
pub fn is_known_class(name: &str) -> bool {
    lookup_class(name).is_some()
}

/// The elements configured so far, as [`Peers`] of the one being
/// configured.
struct ConfiguredPeers<'g> {
    graph: &'g graph::Graph,
    by_name: &'g HashMap<&'g str, usize>,
    slots: &'g [Option<Box<dyn Element>>],
    asking: &'g str,
}

impl ConfiguredPeers<'_> {
    fn peer(&self, i: usize) -> Option<Peer> {
        let e = self.slots[i].as_ref()?;
        let node = &self.graph.nodes[i];
        Some(Peer {
            name: node.name.clone(),
            class: node.class.name,
            shared: e.shared(),
        })
    }
}

impl Peers for ConfiguredPeers<'_> {
    fn lookup(&self, name: &str) -> Option<Peer> {
        // Click resolves an element name relative to the asking element's
        // compound, then each enclosing compound, then the top level.
        let mut prefix = self.asking;
        loop {
            prefix = match prefix.rfind('/') {
                Some(k) => &prefix[..k],
                None => "",
            };
            let full = if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            };
            if let Some(&i) = self.by_name.get(full.as_str()) {
                return self.peer(i);
            }
            if prefix.is_empty() {
                return None;
            }
        }
    }

    fn of_class(&self, class: &str) -> Vec<Peer> {
        (0..self.graph.nodes.len())
            .filter(|&i| self.graph.nodes[i].class.name == class)
            .filter_map(|i| self.peer(i))
            .collect()
    }
}

impl Router {
    /// Checks and configures a flat configuration. Every problem found is
    /// returned, each pointing into the source.
    pub fn build(
        flat: &FlatConfig,
        sm: &SourceMap,
        opts: &RouterOptions,
    ) -> Result<Router, Vec<Diagnostic>> {
        Router::build_with_pool(flat, sm, opts, None)
    }

    /// As [`Router::build`], with a packet pool made beforehand (a
    /// pre-started sandbox makes its pool while it waits, off the boot
    /// path); `None`: a pool of `opts.pool_slots` slots is made here.
    pub fn build_with_pool(
        flat: &FlatConfig,
        _sm: &SourceMap,
        opts: &RouterOptions,
        pool: Option<Pool>,
    ) -> Result<Router, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let graph = graph::build(flat, &lookup_class, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        // Configure in Click's phase order (information elements such as
        // AddressInfo, IPRewriterPatterns and mappers first), so that an
        // element naming another finds it configured.
        let mut order: Vec<usize> = (0..graph.nodes.len())
            .filter(|&i| graph.nodes[i].entry.is_some())
            .collect();
        order.sort_by_key(|&i| (graph.nodes[i].class.phase, i));
        let by_name: HashMap<&str, usize> = graph
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let mut slots: Vec<Option<Box<dyn Element>>> =
            (0..graph.nodes.len()).map(|_| None).collect();
        // AddressInfo names live for the configuration pass only.
        pronto_lang::names::clear();
        for i in order {
            let node = &graph.nodes[i];
            let Some(entry) = node.entry else { continue };
            let peers = ConfiguredPeers {
                graph: &graph,
                by_name: &by_name,
                slots: &slots,
                asking: &node.name,
            };
            let ctx = ConfigCtx {
                name: &node.name,
                config: &node.config,
                ninputs: node.ninputs,
                noutputs: node.noutputs,
                base_dir: &opts.base_dir,
                keywords: entry.spec.keywords,
                output_push: &node.output_push,
                input_push: &node.input_push,
                peers: &peers,
            };
            pronto_lang::names::set_current(&node.name);
            let built = match (entry.factory)(&ctx) {
                Ok(e) => e,
                Err(e) => {
                    errors.push(
                        Diagnostic::error(e.message.clone(), Some(node.config_span)).with_note(
                            format!("while configuring `{} :: {}`", node.name, entry.spec.name),
                        ),
                    );
                    Box::new(Placeholder)
                }
            };
            slots[i] = Some(built);
        }
        pronto_lang::names::clear();
        let mut elems: Vec<Box<dyn Element>> = slots.into_iter().flatten().collect();
        if !errors.is_empty() {
            return Err(errors);
        }
        let pool = match pool {
            Some(p) => p,
            None => Pool::new(opts.pool_slots)
                .map_err(|e| vec![Diagnostic::error(e.to_string(), None)])?,
        };
        let ordered = graph::ordered_nodes(&graph);
        let outbufs = graph
            .nodes
            .iter()
            .map(|n| {
                Some(
                    (0..n.noutputs)
                        .map(|_| Batch::new())
                        .collect::<Vec<_>>()
                        .into_boxed_slice(),
                )
            })
            .collect();
        let tasks = elems
            .iter()
            .enumerate()
            .filter(|(_, e)| e.has_task())
            .map(|(node, _)| Task {
                node,
                wake_at: i64::MIN,
                idle_rounds: 0,
                done: false,
                pulled_empty: false,
                pull_timed: false,
            })
            .collect();
        let scripts = elems
            .iter_mut()
            .enumerate()
            .filter_map(|(i, e)| {
                e.as_any_mut()
                    .and_then(|a| a.downcast_mut::<Script>())
                    .map(|_| i)
            })
            .collect();
        let sim_now = match opts.clock {
            Clock::Simulated(t) => t,
            Clock::Real => 0,
        };
        Ok(Router {
            elems,
            outbufs,
            scratch: (0..4).map(|_| Box::new(Batch::new())).collect(),
            graph,
            ordered,
            tasks,
            scripts,
            ctrl: Control::default(),
            clock: opts.clock,
            busy_poll: opts.busy_poll,
            sim_now,
            run_now: 0,
            stopped: false,
            pull_one_seen: false,
            script_error: None,
            flat_text: flat.to_click(),
            link: None,
            inbox: None,
            pool,
        })
    }

    /// The current time, ns since the epoch.
    pub fn now(&self) -> i64 {
        match self.clock {
            Clock::Real => wall_clock_ns(),
            Clock::Simulated(_) => self.sim_now,
        }
    }

    /// Names of all elements, in configuration order.
    pub fn element_names(&self) -> impl Iterator<Item = &str> {
        self.graph.nodes.iter().map(|n| n.name.as_str())
    }

    /// The packet pool.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Click's hot-swap: each element of this (new, not yet running)
    /// router that has the same name and class as an element of `old` (a
    /// stopped router this one replaces) takes that element's state
    /// ([`Element::take_state`]: a queue's packets, a NAT's flows, an ARP
    /// table). Returns `(element, what moved)` for each element that took
    /// something.
    pub fn take_state(&mut self, old: &mut Router) -> Vec<(String, String)> {
        let by_name: HashMap<&str, usize> = old
            .graph
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.name.as_str(), i))
            .collect();
        let mut moved = Vec::new();
        for (i, node) in self.graph.nodes.iter().enumerate() {
            let Some(&j) = by_name.get(node.name.as_str()) else {
                continue;
            };
            if old.graph.nodes[j].class.name != node.class.name {
                continue;
            }
            let ctx = pronto_elements::TakeCtx {
                pool: &self.pool,
                ninputs: node.ninputs,
                noutputs: node.noutputs,
            };
            if let Some(what) = self.elems[i].take_state(old.elems[j].as_mut(), &ctx) {
                moved.push((node.name.clone(), what));
            }
        }
        moved
    }

    // ---- packet movement -------------------------------------------------

    /// Pushes `batch` into input `port` of `node`, and everything that
    /// comes out of it onwards.
    fn push(&mut self, node: usize, port: usize, batch: &mut Batch) {
        if self.ordered[node] && batch.len() > 1 {
            // Keep Click's packet order across a split that merges again:
            // one packet at a time through this element.
            let mut one = self.take_scratch();
            let mut rest = self.take_scratch();
            rest.append(batch);
            for p in rest.drain() {
                let _ = one.push(p);
                self.push_one(node, port, &mut one);
            }
            self.put_scratch(rest);
            self.put_scratch(one);
            return;
        }
        self.push_one(node, port, batch);
    }

    fn take_scratch(&mut self) -> Box<Batch> {
        self.scratch.pop().unwrap_or_else(|| Box::new(Batch::new()))
    }

    fn put_scratch(&mut self, b: Box<Batch>) {
        self.scratch.push(b);
    }

    fn push_one(&mut self, node: usize, port: usize, batch: &mut Batch) {
        let Some(mut bufs) = self.outbufs[node].take() else {
            // Re-entered through a push cycle: use fresh buffers.
            let mut bufs: Box<[Batch]> = (0..self.graph.nodes[node].noutputs)
                .map(|_| Batch::new())
                .collect();
            self.process(node, port, batch, &mut bufs);
            return;
        };
        self.process(node, port, batch, &mut bufs);
        self.outbufs[node] = Some(bufs);
    }

    fn process(&mut self, node: usize, port: usize, batch: &mut Batch, bufs: &mut [Batch]) {
        let now = self.run_now;
        let pass = {
            let mut out = Out::new(bufs, &self.pool, now, &mut self.ctrl);
            self.elems[node].push(port, batch, &mut out);
            out.passed()
        };
        self.forward(node, pass, batch, bufs);
    }

    /// Sends the element's results on: the input batch to the passed port,
    /// then each output buffer in port order.
    fn forward(&mut self, node: usize, pass: Option<usize>, batch: &mut Batch, bufs: &mut [Batch]) {
        match pass {
            Some(p) if !batch.is_empty() => self.send(node, p, batch),
            _ => batch.clear(),
        }
        for (p, b) in bufs.iter_mut().enumerate() {
            if !b.is_empty() {
                self.send(node, p, b);
            }
        }
    }

    fn send(&mut self, node: usize, port: usize, batch: &mut Batch) {
        match self.graph.out_conn[node].get(port).copied().flatten() {
            Some((t, tp)) => self.push(t as usize, tp as usize, batch),
            None => batch.clear(),
        }
    }

    /// Pulls up to `max` packets from output `port` of `node` into `batch`.
    fn pull(&mut self, node: usize, port: usize, batch: &mut Batch, max: usize) {
        let now = self.run_now;
        if self.elems[node].is_pull_source() {
            let mut none: [Batch; 0] = [];
            let mut out = Out::new(&mut none, &self.pool, now, &mut self.ctrl);
            self.elems[node].pull(port, batch, max, &mut out);
            return;
        }
        if self.elems[node].as_pull_one().is_some() {
            self.pull_each(node, port, batch, max);
            return;
        }
        // An agnostic or pull-through element: pull its input, then let it
        // process the batch; what it sends to `port` is the answer, what it
        // sends elsewhere is pushed on.
        let Some((src, sport)) = self.graph.in_conn[node].first().copied().flatten() else {
            return;
        };
        let mut got = self.take_scratch();
        self.pull(src as usize, sport as usize, &mut got, max);
        if got.is_empty() {
            self.put_scratch(got);
            return;
        }
        let Some(mut bufs) = self.outbufs[node].take() else {
            got.clear();
            self.put_scratch(got);
            return;
        };
        let pass = {
            let mut out = Out::new(&mut bufs, &self.pool, now, &mut self.ctrl);
            self.elems[node].push(0, &mut got, &mut out);
            out.passed()
        };
        if pass == Some(port) {
            batch.append(&mut got);
        }
        got.clear();
        if let Some(b) = bufs.get_mut(port) {
            batch.append(b);
            b.clear();
        }
        for (p, b) in bufs.iter_mut().enumerate() {
            if !b.is_empty() {
                self.send(node, p, b);
            }
        }
        self.outbufs[node] = Some(bufs);
        self.put_scratch(got);
    }

    /// Answers a pull on `port` of an element that pulls its own inputs
    /// (schedulers, shapers), one packet at a time, stopping at the first
    /// empty answer as a Click puller does.
    fn pull_each(&mut self, node: usize, port: usize, batch: &mut Batch, max: usize) {
        // The element steps out of the table while it runs, so that its
        // input pulls can use the router.
        let mut elem = std::mem::replace(&mut self.elems[node], Box::new(Placeholder));
        let now = self.run_now;
        self.pull_one_seen = true;
        if let Some(p1) = elem.as_pull_one() {
            let mut inputs = RouterInputs { router: self, node };
            for _ in 0..max.min(batch.room()) {
                match p1.pull_one(port, now, &mut inputs) {
                    Some(p) => {
                        let _ = batch.push(p);
                    }
                    None => break,
                }
            }
        }
        self.elems[node] = elem;
    }

    // ---- tasks and driving ----------------------------------------------

    fn run_task(&mut self, t: usize) -> TaskStatus {
        let node = self.tasks[t].node;
        let now = self.run_now;
        let mut batch = self.take_scratch();
        let mut pulled_empty = false;
        self.pull_one_seen = false;
        if let Some((port, max)) = self.elems[node].task_pull(now) {
            if let Some((src, sport)) = self.graph.in_conn[node].get(port).copied().flatten() {
                self.pull(src as usize, sport as usize, &mut batch, max.min(BATCH_MAX));
                pulled_empty = batch.is_empty();
            }
        }
        self.tasks[t].pulled_empty = pulled_empty;
        self.tasks[t].pull_timed = pulled_empty && self.pull_one_seen;
        let Some(mut bufs) = self.outbufs[node].take() else {
            self.put_scratch(batch);
            return TaskStatus::Idle;
        };
        let (status, pass) = {
            let mut out = Out::new(&mut bufs, &self.pool, now, &mut self.ctrl);
            let s = self.elems[node].run_task(&mut batch, &mut out);
            (s, out.passed())
        };
        self.forward(node, pass, &mut batch, &mut bufs);
        self.outbufs[node] = Some(bufs);
        self.put_scratch(batch);
        status
    }

    /// Runs until the driver stops: a stop request with no DriverManager to
    /// intercept it, the end of a driver script, or a `stop` instruction.
    pub fn run(&mut self) -> Result<(), String> {
        self.start_control_sockets();
        for i in 0..self.scripts.len() {
            let node = self.scripts[i];
            self.step_script(node, false);
        }
        self.handle_stops();
        let mut rounds_busy: u32 = 0;
        while !self.stopped {
            // The clock is read once per round, and while the router is
            // busy only every 16th round: a clock read costs more than
            // moving a small batch, and timestamps a few microseconds
            // coarse are what Click's "recent time" gives too.
            if rounds_busy.is_multiple_of(16) {
                self.run_now = self.now();
                if self.link.is_some() {
                    self.serve_link();
                    if self.ctrl.stop_requests > 0 {
                        self.handle_stops();
                    }
                }
                if self.inbox.is_some() {
                    self.serve_inbox();
                    if self.ctrl.stop_requests > 0 {
                        self.handle_stops();
                    }
                }
            }
            let mut busy = false;
            let mut next_wake = i64::MAX;
            for t in 0..self.tasks.len() {
                if self.stopped {
                    break;
                }
                let task = &self.tasks[t];
                if task.done {
                    continue;
                }
                if task.wake_at != i64::MIN && task.wake_at > self.run_now {
                    next_wake = next_wake.min(task.wake_at);
                    continue;
                }
                let status = self.run_task(t);
                let task = &mut self.tasks[t];
                match status {
                    TaskStatus::Busy => {
                        busy = true;
                        task.idle_rounds = 0;
                        task.wake_at = i64::MIN;
                    }
                    TaskStatus::Idle => {
                        task.idle_rounds = task.idle_rounds.saturating_add(1);
                        task.wake_at = i64::MIN;
                    }
                    TaskStatus::SleepUntil(at) => {
                        task.wake_at = at;
                        next_wake = next_wake.min(at);
                    }
                    TaskStatus::Done => task.done = true,
                }
                if self.ctrl.stop_requests > 0 {
                    self.handle_stops();
                }
                if !self.ctrl.stdout.is_empty() {
                    self.flush_output();
                }
            }
            // Script timers: time only moves when the clock is read. While
            // tasks are busy the timers are checked every 16 rounds; before
            // an idle wait always, so that the wait (or, under simulated
            // time, the jump to the next wake-up) never passes a script's
            // timer.
            let now = self.run_now;
            let clock_read = !busy || rounds_busy.is_multiple_of(16);
            for i in 0..self.scripts.len() {
                if !clock_read {
                    break;
                }
                let node = self.scripts[i];
                if let Some(at) = self.script_wake(node) {
                    if at <= now {
                        self.step_script(node, false);
                        busy = true;
                    } else {
                        next_wake = next_wake.min(at);
                    }
                }
            }
            if self.ctrl.stop_requests > 0 {
                self.handle_stops();
            }
            if self.stopped || busy {
                rounds_busy = rounds_busy.wrapping_add(1);
                continue;
            }
            rounds_busy = 0;
            let now = self.now();
            let any_idle = self.tasks.iter().any(|t| !t.done && t.wake_at <= now);
            match self.clock {
                Clock::Simulated(_) => {
                    if next_wake != i64::MAX {
                        self.sim_now = self.sim_now.max(next_wake);
                    } else if !any_idle {
                        // Nothing can ever happen again.
                        self.stopped = true;
                    }
                }
                Clock::Real => {
                    if self.busy_poll && (any_idle || next_wake != i64::MAX) {
                        // Poll again at once: a frame is picked up within a
                        // round, not after a wake-up.
                        std::hint::spin_loop();
                    } else if self.wait_on_fds(now, next_wake) {
                        // Blocked until a descriptor was ready or a timer
                        // was due.
                    } else if next_wake == i64::MAX && !any_idle {
                        // Click would idle forever; so do we, cheaply.
                        self.idle_sleep(FD_WAIT_MAX_NS);
                    } else {
                        let now = self.now();
                        let until = if any_idle { now + 20_000 } else { next_wake };
                        let d = (until - now).clamp(0, IDLE_SLEEP_MAX_NS);
                        if d > 0 {
                            self.idle_sleep(d);
                        }
                    }
                    if let Some(link) = &self.link {
                        // Clear before serving: a call sent after this
                        // rings again.
                        link.bell.clear();
                        self.serve_link();
                        if self.ctrl.stop_requests > 0 {
                            self.handle_stops();
                        }
                    }
                    if let Some(inbox) = &self.inbox {
                        inbox.bell.clear();
                        self.serve_inbox();
                        if self.ctrl.stop_requests > 0 {
                            self.handle_stops();
                        }
                    }
                }
            }
        }
        if let Some(link) = &self.link {
            if link.me == 0 {
                link.stop_all();
            }
        }
        for e in &mut self.elems {
            e.cleanup();
        }
        self.flush_output();
        match self.script_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// When every idle task waits on a file descriptor or on other tasks,
    /// blocks in `poll` until a descriptor is ready or the next timer is
    /// due; false (nothing done) otherwise.
    fn wait_on_fds(&self, now: i64, next_wake: i64) -> bool {
        let idle = || self.tasks.iter().filter(|t| !t.done && t.wake_at <= now);
        let waits: Vec<IdleWait> = idle()
            .map(|t| match self.elems[t.node].wait_fd() {
                Some(_) => IdleWait::Fd,
                None if t.pull_timed => IdleWait::OthersOrTime,
                None if t.pulled_empty => IdleWait::Others,
                None => IdleWait::Poll,
            })
            .collect();
        let Some(timeout) = idle_poll_timeout(&waits, now, next_wake) else {
            return false;
        };
        use rustix::event::{PollFd, PollFlags, Timespec};
        let mut fds: Vec<PollFd<'_>> = idle()
            .filter_map(|t| self.elems[t.node].wait_fd())
            .map(|w| {
                let ev = if w.writable {
                    PollFlags::OUT
                } else {
                    PollFlags::IN
                };
                PollFd::from_borrowed_fd(w.fd, ev)
            })
            .collect();
        let ts = Timespec {
            tv_sec: timeout / 1_000_000_000,
            tv_nsec: timeout % 1_000_000_000,
        };
        if let Some(link) = &self.link {
            fds.push(PollFd::new(&*link.bell, PollFlags::IN));
        }
        if let Some(inbox) = &self.inbox {
            fds.push(PollFd::new(&*inbox.bell, PollFlags::IN));
        }
        // An interrupted or failed poll just ends the wait early.
        let _ = rustix::event::poll(&mut fds, Some(&ts));
        true
    }

    /// Sleeps `ns` nanoseconds while idle; with other threads, until one
    /// of them rings this router's doorbell, at the latest.
    fn idle_sleep(&self, ns: i64) {
        let d = std::time::Duration::from_nanos(ns.max(0) as u64);
        match (&self.link, &self.inbox) {
            (Some(link), None) => link.bell.wait(d),
            (None, Some(inbox)) => inbox.bell.wait(d),
            (Some(link), Some(inbox)) => {
                crate::threads::Bell::wait_either(&link.bell, &inbox.bell, d)
            }
            (None, None) => std::thread::sleep(d),
        }
    }

    // ---- other threads ---------------------------------------------------

    /// Connects this router to the other threads' (`full_text`, when not
    /// empty, is the whole configuration, for the `flatconfig` handler).
    pub(crate) fn set_link(&mut self, link: Link, full_text: String) {
        if !full_text.is_empty() {
            self.flat_text = full_text;
        }
        self.link = Some(Box::new(link));
    }

    /// Starts serving every `ControlSocket`, through this router's remote.
    fn start_control_sockets(&mut self) {
        for i in 0..self.elems.len() {
            let is_cs = self.elems[i]
                .as_any_mut()
                .is_some_and(|a| a.is::<crate::controlsocket::ControlSocket>());
            if !is_cs {
                continue;
            }
            let Ok(remote) = self.remote() else { continue };
            if let Some(cs) = self.elems[i]
                .as_any_mut()
                .and_then(|a| a.downcast_mut::<crate::controlsocket::ControlSocket>())
            {
                cs.start(remote);
            }
        }
    }

    /// Ends the run at once (a remote halt).
    pub(crate) fn halt_now(&mut self) {
        self.stopped = true;
    }

    /// Stops if thread 0 has stopped, and answers the calls waiting in the
    /// inbox.
    pub(crate) fn serve_link(&mut self) {
        let Some(link) = &self.link else { return };
        if link.stop.load(std::sync::atomic::Ordering::Relaxed) {
            self.stopped = true;
        }
        while let Some(msg) = self.link.as_ref().and_then(|l| l.inbox.try_recv().ok()) {
            self.handle_msg(msg);
        }
    }

    pub(crate) fn handle_msg(&mut self, msg: Msg) {
        match msg {
            Msg::Call {
                read,
                handler,
                arg,
                reply,
                bell,
            } => {
                let r = if read {
                    self.read_handler(&handler, &arg)
                } else {
                    self.write_handler(&handler, &arg).map(|()| String::new())
                };
                let _ = reply.send(r);
                bell.ring();
            }
            Msg::Stop => self.ctrl.stop_requests += 1,
            Msg::Halt => self.halt_now(),
            Msg::Go | Msg::Quit => {
                if let Some(link) = self.link.as_mut() {
                    link.pending = Some(msg);
                }
            }
        }
    }

    /// A worker, once built: answers calls until told to run (true) or to
    /// quit (false).
    pub(crate) fn wait_go(&mut self) -> bool {
        loop {
            let Some(link) = self.link.as_mut() else {
                return true;
            };
            match link.pending.take() {
                Some(Msg::Go) => return true,
                Some(Msg::Quit) => return false,
                _ => {}
            }
            match link.inbox.recv() {
                Ok(msg) => self.handle_msg(msg),
                Err(_) => return false,
            }
        }
    }

    /// A worker after its run: answers calls until told to quit.
    pub(crate) fn serve_until_quit(&mut self) {
        loop {
            let Some(link) = self.link.as_mut() else {
                return;
            };
            if matches!(link.pending.take(), Some(Msg::Quit)) {
                return;
            }
            match link.inbox.recv() {
                Ok(msg) => self.handle_msg(msg),
                Err(_) => return,
            }
        }
    }

    /// The thread that owns element `elem`, when it is not this one.
    fn remote_owner(&self, elem: &str) -> Option<usize> {
        let link = self.link.as_ref()?;
        link.owner.get(elem).copied().filter(|&t| t != link.me)
    }

    /// Calls a handler on another thread's router and waits for the
    /// answer, answering calls to this router meanwhile.
    fn remote_call(
        &mut self,
        thread: usize,
        read: bool,
        full: &str,
        arg: &str,
    ) -> Result<String, CallError> {
        let gone = || CallError::Failed(full.to_string(), format!("thread {thread} has ended"));
        let Some(link) = &self.link else {
            return Err(gone());
        };
        let Some(peer) = link.peers.get(thread).and_then(|p| p.as_ref()) else {
            return Err(gone());
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let sent = peer.send(Msg::Call {
            read,
            handler: full.to_string(),
            arg: arg.to_string(),
            reply: tx,
            bell: link.bell.clone(),
        });
        if !sent {
            return Err(gone());
        }
        loop {
            match rx.try_recv() {
                Ok(r) => return r,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return Err(gone()),
                Err(std::sync::mpsc::TryRecvError::Empty) => {}
            }
            self.serve_link();
            if let Ok(r) = rx.try_recv() {
                return r;
            }
            if let Some(link) = &self.link {
                link.bell.wait(std::time::Duration::from_millis(10));
            }
        }
    }

    fn flush_output(&mut self) {
        if self.ctrl.stdout.is_empty() {
            return;
        }
        use std::io::Write;
        let mut so = std::io::stdout().lock();
        for line in self.ctrl.stdout.drain(..) {
            let _ = so.write_all(line.as_bytes());
        }
        let _ = so.flush();
    }

    /// Requests to stop go to the first driver script still running; with
    /// none, the router stops.
    fn handle_stops(&mut self) {
        if let Some(link) = self.link.as_ref().filter(|l| l.me != 0) {
            // Drivers run on thread 0: the request goes there.
            if let Some(Some(main)) = link.peers.first() {
                for _ in 0..self.ctrl.stop_requests {
                    main.send(Msg::Stop);
                }
            }
            self.ctrl.stop_requests = 0;
            self.flush_output();
            return;
        }
        while self.ctrl.stop_requests > 0 && !self.stopped {
            self.ctrl.stop_requests -= 1;
            let mut driver = None;
            for i in 0..self.scripts.len() {
                let n = self.scripts[i];
                if self.script_is_live_driver(n) {
                    driver = Some(n);
                    break;
                }
            }
            match driver {
                Some(n) => self.step_script(n, true),
                None => self.stopped = true,
            }
        }
        self.flush_output();
    }

    fn script_mut(&mut self, node: usize) -> Option<&mut Script> {
        self.elems[node].as_any_mut()?.downcast_mut::<Script>()
    }

    fn script_is_live_driver(&mut self, node: usize) -> bool {
        self.script_mut(node)
            .is_some_and(|s| s.is_driver() && !s.ended())
    }

    fn script_wake(&mut self, node: usize) -> Option<i64> {
        self.script_mut(node).and_then(|s| s.wake_at())
    }

    fn step_script(&mut self, node: usize, step_event: bool) {
        let action = if step_event {
            ScriptCall::StepEvent
        } else {
            ScriptCall::Run
        };
        let _ = self.drive_script(node, action);
    }

    /// Runs one script operation with the script taken out of the element
    /// table (so that it can call other elements' handlers), then acts on
    /// how it ended.
    fn drive_script(&mut self, node: usize, action: ScriptCall<'_>) -> Result<String, String> {
        let mut elem = std::mem::replace(&mut self.elems[node], Box::new(Placeholder));
        let (state, value) = {
            let Some(script) = elem.as_any_mut().and_then(|a| a.downcast_mut::<Script>()) else {
                self.elems[node] = elem;
                return Err("not a script".into());
            };
            let mut env = RouterEnv {
                router: self,
                me: node,
            };
            match action {
                ScriptCall::Run => (script.run(&mut env), Ok(String::new())),
                ScriptCall::StepEvent => (script.step_event(&mut env), Ok(String::new())),
                ScriptCall::Control(h, v) => match script.write_control(&mut env, h, v) {
                    Ok(st) => (st, Ok(String::new())),
                    Err(e) => (ScriptState::Blocked, Err(e)),
                },
                ScriptCall::CallRun(args) => script.call_run(&mut env, args),
            }
        };
        self.elems[node] = elem;
        if let ScriptState::Ended { stop, error } = state {
            if let Some(e) = error {
                self.script_error.get_or_insert(e);
            }
            let is_driver = self.script_mut(node).is_some_and(|s| s.is_driver());
            if is_driver {
                self.stopped = true;
            } else if stop {
                self.ctrl.stop_requests += 1;
            }
        }
        self.flush_output();
        value
    }

    // ---- handlers --------------------------------------------------------

    fn find(&self, name: &str) -> Option<usize> {
        self.graph.nodes.iter().position(|n| n.name == name)
    }

    /// Calls a read handler named `ELEMENT.HANDLER` (or a global handler
    /// such as `version`), with optional parameters.
    pub fn read_handler(&mut self, full: &str, params: &str) -> Result<String, CallError> {
        let (elem, h) = split_handler(full);
        let Some(elem) = elem else {
            return self.global_read(h, params);
        };
        let Some(node) = self.find(elem) else {
            return match self.remote_owner(elem) {
                Some(t) => self.remote_call(t, true, full, params),
                None => Err(CallError::NoElement(elem.to_string())),
            };
        };
        let info = &self.graph.nodes[node];
        match h {
            "name" => return Ok(info.name.clone()),
            "class" => return Ok(info.class.name.to_string()),
            // An element with its own `config` (Click's normalised text,
            // RED's and RatedUnqueue's) answers it itself.
            "config"
                if !self.elems[node]
                    .handlers()
                    .iter()
                    .any(|x| x.name == "config") =>
            {
                return Ok(info.config.clone())
            }
            "ports" => return Ok(self.ports_text(node)),
            "handlers" => return Ok(self.handlers_text(node)),
            _ => {}
        }
        if h == "run" && self.script_mut(node).is_some() {
            return self
                .drive_script(node, ScriptCall::CallRun(params))
                .map_err(|m| CallError::Failed(full.to_string(), m));
        }
        let r = if params.is_empty() {
            self.elems[node].read_handler(h)
        } else {
            self.elems[node].read_handler(&format!("{h} {params}"))
        };
        r.map_err(|e| match e {
            HandlerError::NoSuchHandler(_) => {
                CallError::NoHandler(elem.to_string(), h.to_string(), "read")
            }
            HandlerError::BadValue(m) => CallError::Failed(full.to_string(), m),
        })
    }

    /// Calls a write handler named `ELEMENT.HANDLER` (or a global one such
    /// as `stop`).
    pub fn write_handler(&mut self, full: &str, value: &str) -> Result<(), CallError> {
        let (elem, h) = split_handler(full);
        let Some(elem) = elem else {
            return match h {
                "stop" => {
                    self.ctrl.stop_requests += 1;
                    Ok(())
                }
                _ => Err(CallError::NoHandler(String::new(), h.to_string(), "write")),
            };
        };
        let Some(node) = self.find(elem) else {
            return match self.remote_owner(elem) {
                Some(t) => self.remote_call(t, false, full, value).map(|_| ()),
                None => Err(CallError::NoElement(elem.to_string())),
            };
        };
        if matches!(h, "step" | "goto" | "run") && self.script_mut(node).is_some() {
            return self
                .drive_script(node, ScriptCall::Control(h, value))
                .map(|_| ())
                .map_err(|m| CallError::Failed(full.to_string(), m));
        }
        self.elems[node]
            .write_handler(h, value)
            .map_err(|e| match e {
                HandlerError::NoSuchHandler(_) => {
                    CallError::NoHandler(elem.to_string(), h.to_string(), "write")
                }
                HandlerError::BadValue(m) => CallError::Failed(full.to_string(), m),
            })?;
        self.emit_after_write(node);
        Ok(())
    }

    /// Forwards the packets a write handler released
    /// ([`Element::after_write`]).
    fn emit_after_write(&mut self, node: usize) {
        loop {
            let Some(mut bufs) = self.outbufs[node].take() else {
                return;
            };
            let mut batch = self.take_scratch();
            let (more, pass) = {
                let mut out = Out::new(&mut bufs, &self.pool, self.run_now, &mut self.ctrl);
                let more = self.elems[node].after_write(&mut out);
                (more, out.passed())
            };
            self.forward(node, pass, &mut batch, &mut bufs);
            self.outbufs[node] = Some(bufs);
            self.put_scratch(batch);
            if !more {
                return;
            }
        }
    }

    fn global_read(&mut self, h: &str, _params: &str) -> Result<String, CallError> {
        match h {
            "version" => Ok(env!("CARGO_PKG_VERSION").to_string()),
            "list" => {
                let names: Vec<&str> = match &self.link {
                    Some(link) => link.names.iter().map(String::as_str).collect(),
                    None => self.graph.nodes.iter().map(|n| n.name.as_str()).collect(),
                };
                let mut s = format!("{}\n", names.len());
                for n in names {
                    s.push_str(n);
                    s.push('\n');
                }
                Ok(s)
            }
            "flatconfig" | "config" => Ok(self.flat_text.clone()),
            "classes" => Ok(all_classes()
                .iter()
                .map(|e| format!("{}\n", e.spec.name))
                .collect()),
            "now" => Ok(crate::script::click_timestamp(self.now())),
            _ => Err(CallError::NoHandler(String::new(), h.to_string(), "read")),
        }
    }

    fn ports_text(&self, node: usize) -> String {
        let n = &self.graph.nodes[node];
        let mut s = format!(
            "{} input{}\n",
            n.ninputs,
            if n.ninputs == 1 { "" } else { "s" }
        );
        for p in &n.input_push {
            s.push_str(if *p { "push\n" } else { "pull\n" });
        }
        s.push_str(&format!(
            "{} output{}\n",
            n.noutputs,
            if n.noutputs == 1 { "" } else { "s" }
        ));
        for p in &n.output_push {
            s.push_str(if *p { "push\n" } else { "pull\n" });
        }
        s
    }

    fn handlers_text(&self, node: usize) -> String {
        let mut s = String::new();
        for h in ["name", "class", "config", "ports", "handlers"] {
            s.push_str(&format!("{h}\tr\n"));
        }
        for h in self.elems[node].handlers() {
            let mode = match (h.read, h.write) {
                (true, true) => "rw",
                (true, false) => "r",
                _ => "w",
            };
            s.push_str(&format!("{}\t{mode}\n", h.name));
        }
        s
    }
}

fn split_handler(full: &str) -> (Option<&str>, &str) {
    match full.rfind('.') {
        Some(i) => (Some(&full[..i]), &full[i + 1..]),
        None => (None, full),
    }
}

/// Formats ns since the epoch the way Click prints a Timestamp:
/// `SECONDS.NANOSECONDS` with nine digits... Click prints microseconds
/// unless the value needs more; pronto prints nine digits.
pub fn format_timestamp(ns: i64) -> String {
    let secs = ns.div_euclid(1_000_000_000);
    let frac = ns.rem_euclid(1_000_000_000);
    format!("{secs}.{frac:09}")
}

/// Wall-clock time in ns since the epoch.
pub fn wall_clock_ns() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    d.as_nanos() as i64
}

/// What to do with a script.
enum ScriptCall<'a> {
    /// Start it, or continue after its timer.
    Run,
    /// A driver stop event or a plain step.
    StepEvent,
    /// A write to `step`, `goto` or `run`.
    Control(&'a str, &'a str),
    /// A read of `run` with arguments.
    CallRun(&'a str),
}

/// Stands in for an element while it is being configured or driven.
struct Placeholder;
impl Element for Placeholder {}

struct RouterEnv<'a> {
    router: &'a mut Router,
    me: usize,
}

impl Env for RouterEnv<'_> {
    fn read(&mut self, handler: &str, params: &str) -> Result<String, String> {
        self.router
            .read_handler(handler, params)
            .map_err(|e| e.to_string())
    }
    fn write(&mut self, handler: &str, value: &str) -> Result<(), String> {
        self.router
            .write_handler(handler, value)
            .map_err(|e| e.to_string())
    }
    fn now(&self) -> i64 {
        self.router.now()
    }
    fn print(&mut self, text: &str) {
        self.router.ctrl.stdout.push(text.to_string());
    }
    fn stop(&mut self) {
        self.router.ctrl.stop_requests += 1;
    }
    fn my_name(&self) -> &str {
        &self.router.graph.nodes[self.me].name
    }
}

/// One element's pull inputs, pulled through the router.
struct RouterInputs<'r> {
    router: &'r mut Router,
    node: usize,
}

impl pronto_elements::PullInputs for RouterInputs<'_> {
    fn pull_input(&mut self, input: usize) -> Option<pronto_packet::Packet> {
        let (src, sport) = self.router.graph.in_conn[self.node]
            .get(input)
            .copied()
            .flatten()?;
        let mut b = self.router.take_scratch();
        self.router.pull(src as usize, sport as usize, &mut b, 1);
        let p = b.pop();
        b.clear();
        self.router.put_scratch(b);
        p
    }

    fn stop_driver(&mut self) {
        self.router.ctrl.stop_requests += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_router_blocks_only_when_every_idle_task_can_be_waited_for() {
        use IdleWait::*;
        let now = 1_000;
        // No descriptor: the old sleep-and-poll loop.
        assert_eq!(idle_poll_timeout(&[Others], now, i64::MAX), None);
        assert_eq!(idle_poll_timeout(&[], now, i64::MAX), None);
        // A task that must be polled keeps the router polling.
        assert_eq!(idle_poll_timeout(&[Fd, Poll], now, i64::MAX), None);
        // Descriptors and queue-fed tasks: block up to the longest wait,
        // or until the next timer.
        assert_eq!(
            idle_poll_timeout(&[Fd, Others, Fd], now, i64::MAX),
            Some(FD_WAIT_MAX_NS)
        );
        assert_eq!(idle_poll_timeout(&[Fd], now, now + 5_000), Some(5_000));
        assert_eq!(idle_poll_timeout(&[Fd], now, now - 5), Some(0));
        // A task behind a shaper: short waits.
        assert_eq!(
            idle_poll_timeout(&[Fd, OthersOrTime], now, i64::MAX),
            Some(TIMED_PULL_WAIT_NS)
        );
    }
}
