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
    ClassEntry, ConfigCtx, Control, Element, HandlerError, Out, Peer, Peers, PullFrom, Spill,
    TaskStatus,
};
use pronto_lang::{Diagnostic, FlatConfig, SourceMap};
use pronto_packet::{Batch, Packet, Pool, BATCH_MAX};

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
    /// Packet slots in the pool at first (it doubles as packets are
    /// needed, up to `pool_limit`). Small, so that a router starts in a few
    /// milliseconds: mapping and writing 16,384 slots took 90 ms.
    pub pool_slots: usize,
    /// The most packet slots the pool may grow to (Click has no cap; a
    /// configuration that holds more has the excess allocations refused
    /// and counted).
    pub pool_limit: usize,
    /// Time source.
    pub clock: Clock,
    /// Never block or sleep while idle: poll tasks continuously (lowest
    /// latency, one core busy all the time; `pronto run --busy-poll`).
    pub busy_poll: bool,
    /// After a round that moved packets, keep polling (yielding the CPU
    /// between rounds) for this long (ns) before blocking in `poll`
    /// again, so that a frame that follows soon (a reply that crosses
    /// back, the rest of a burst) finds the thread awake instead of
    /// paying a wake-up. Polling happens only right after work: an idle
    /// router costs nothing more, a router at a low rate about this much
    /// CPU per burst. 0 (the default): sleep as soon as a round finds
    /// nothing (`pronto run --poll-window`).
    pub poll_window_ns: i64,
    /// Keep Click's packet order across every split that merges again by
    /// sending packets through it one at a time, even where the order can
    /// be kept at the merge points instead (`pronto run --order
    /// per-packet`; for comparison: both give the same packets in the same
    /// order).
    pub order_per_packet: bool,
}

impl Default for RouterOptions {
    fn default() -> Self {
        RouterOptions {
            base_dir: PathBuf::from("."),
            pool_slots: 256,
            pool_limit: DEFAULT_POOL_LIMIT,
            clock: Clock::Real,
            busy_poll: false,
            poll_window_ns: 0,
            order_per_packet: false,
        }
    }
}

/// The default limit of a router's packet pool: a million slots (2.2 GB
/// at most, used only as packets are held).
pub const DEFAULT_POOL_LIMIT: usize = 1 << 20;

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
    /// The notifier signal the task listens to (see `notify.rs`).
    gate: Option<crate::notify::Gate>,
    /// The signal was inactive when the task was last due: it sleeps
    /// until another task, a timer or a handler call makes it active.
    asleep: bool,
    /// A task that manages its signal found nothing to do while it was
    /// inactive: it waits for the signal.
    parked: bool,
    /// The signal's state when last looked at: a task waiting for its
    /// time is woken early when the signal turns active (Click's notifier
    /// wake-up).
    signal_was: bool,
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

/// Rounds a task may find nothing to do, under simulated time, before the
/// clock moves on without it (more than a queue's empty notifier needs to
/// go to sleep: ten empty pulls).
const IDLE_SPIN: u32 = 32;

/// Under simulated time, the first and the largest step by which the
/// clock creeps while tasks poll on time with no timer due.
const SIM_CREEP_MIN_NS: i64 = 1_000;
const SIM_CREEP_MAX_NS: i64 = 10_000_000;

/// The longest an idle router with SIGNAL scripts sleeps before it looks
/// for signals.
const SIGNAL_POLL_NS: i64 = 2_000_000;

/// The longest the router sleeps at once while idle.
const IDLE_SLEEP_MAX_NS: i64 = 50_000_000;
/// The longest it blocks on descriptors when nothing is due: idle routers
/// (ten thousand sandboxed instances) wake once a minute, not 20 times a
/// second (nor every 10 s: 1,000 wake-ups a second at 10,000 instances);
/// a descriptor, a doorbell or a timer ends the wait.
const FD_WAIT_MAX_NS: i64 = 60_000_000_000;
/// The longest it blocks on descriptors while a task pulls through an
/// element that releases packets by time.
const TIMED_PULL_WAIT_NS: i64 = 1_000_000;

/// Whether an idle round polls again at once instead of sleeping: while
/// `window` ns have not passed since the last round that moved packets
/// (`last_work`, `i64::MIN` before any).
fn within_poll_window(now: i64, last_work: i64, window: i64) -> bool {
    window > 0 && last_work != i64::MIN && now.saturating_sub(last_work) < window
}

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
    outbufs: Vec<Option<Box<OutBufs>>>,
    /// Per element that is a merge point of a region: the packets that
    /// reached it while the region ran, at their order tag (input,
    /// packet); emptied before the region's run ends. Empty for the
    /// others.
    collected: Vec<Vec<Option<(u16, Packet)>>>,
    /// Packets that reached a merge point at a tag already taken there
    /// (an element that broke its one-for-one promise): (element, input,
    /// packet), sent on after that element's tagged packets, never lost.
    collected_extra: Vec<(usize, u16, Packet)>,
    /// The number of packets the running region's batch had (its tags are
    /// below it).
    region_len: usize,
    /// The inputs of the packets a merge point runs on (reused).
    region_ports: Vec<u16>,
    /// Spare batches, boxed so that taking one moves a pointer, not 2 KiB.
    #[allow(clippy::vec_box)]
    scratch: Vec<Box<Batch>>,
    graph: Graph,
    ordered: Vec<bool>,
    /// Whether any node is in `ordered` (most configurations: none).
    any_ordered: bool,
    /// Per element: the region it starts (an index into `regions`), or
    /// `u32::MAX`: its split is ordered one packet at a time.
    region_of: Vec<u32>,
    regions: Vec<graph::Region>,
    /// While a region runs: its merge points not yet reached in its
    /// topological order, which collect what arrives instead of running.
    collecting: Vec<bool>,
    region_active: bool,
    /// What the regions were computed from: each element's
    /// [`Element::one_for_one`] then, and the lookups made while
    /// configuring (a handler write that changes the first, a counter
    /// given a call, computes them again).
    one_for_one: Vec<bool>,
    refs: Vec<(usize, usize)>,
    order_per_packet: bool,
    tasks: Vec<Task>,
    scripts: Vec<usize>,
    ctrl: Control,
    clock: Clock,
    busy_poll: bool,
    /// See [`RouterOptions::poll_window_ns`].
    poll_window_ns: i64,
    /// When a task last moved packets (real time, ns; `i64::MIN`: never).
    last_work: i64,
    /// Idle rounds that polled again within the window, and idle rounds
    /// that slept or blocked (`idle_polls` / `idle_sleeps` handlers).
    idle_polls: u64,
    idle_sleeps: u64,
    sim_now: i64,
    /// How far simulated time last crept while tasks polled with nothing
    /// due (doubles while they stay stuck, back to zero on work).
    sim_creep: i64,
    /// The time read once at the start of the current task run, handed to
    /// every element the run reaches (one clock read per batch, not per
    /// element).
    run_now: i64,
    stopped: bool,
    /// Elements with a timer.
    timers: Vec<usize>,
    /// Router time running faster or slower than real time (`timewarp`).
    warp: Option<Warp>,
    /// Signals SIGNAL scripts listen to: the number and the flag the
    /// signal sets.
    signal_flags: Vec<(i32, std::sync::Arc<std::sync::atomic::AtomicBool>)>,
    /// The SIGNAL scripts waiting for a signal: (signal, script node).
    signal_handlers: Vec<(i32, usize)>,
    /// For elements that pull their inputs one packet at a time: the
    /// signal upstream of each input (empty for the others).
    input_gates: Vec<Vec<crate::notify::Gate>>,
    /// Elements stepped out of `elems` while they pull their inputs.
    out_of_table: Vec<usize>,
    /// Handler calls to such elements, made once they are back: (caller,
    /// full handler name, value).
    deferred: Vec<(usize, String, String)>,
    /// Set when a pull went through a [`pronto_elements::PullOne`]
    /// element (reset before each task's pull).
    pull_one_seen: bool,
    script_error: Option<String>,
    flat_text: String,
    /// The configuration as written (Click's `config` handler).
    source_text: String,
    /// `require(...)` entries: kind and value.
    requirements: Vec<(String, String)>,
    /// Every connection (from, output, to, input), for `flatconfig`.
    conns: Vec<(usize, usize, usize, usize)>,
    /// The other threads' routers, under `pronto run --threads N`
    /// (`None`: the only router, and no cost in the task loop).
    link: Option<Box<Link>>,
    /// Calls from other threads ([`Router::remote`]).
    pub(crate) inbox: Option<Box<crate::remote::Inbox>>,
    /// Per element (and, last, the runtime): the change in packets alive
    /// while it ran; with its frees (counted by the pool) this gives what
    /// it made.
    net: Vec<i64>,
    /// Packets alive at the last accounting switch.
    mark: usize,
    /// Packets over each connection, by output port (`ooff[node] +
    /// port`): Click's `ocounts` (`icounts` are summed from them).
    ocount: Vec<u64>,
    ooff: Vec<usize>,
    /// Per element: packets it sent to an output with nothing connected
    /// (dropped; a drop reason only the runtime sees).
    unconnected: Vec<u64>,
    /// A packet trace, while one is armed (the global `trace` handler).
    trace: Option<Box<crate::trace::Tracer>>,
    /// `trace.is_some()`, next to the fields every hop reads.
    tracing: bool,
    /// While a trace is armed: one frame per `pull_each` call in progress
    /// (the element, and the marks of the packets it pulled).
    trace_frames: Vec<(usize, Vec<u32>)>,
    pool: Pool,
}

/// One element's output buffers and the batches that overflowed them.
struct OutBufs {
    bufs: Box<[Batch]>,
    spill: Spill,
}

impl OutBufs {
    fn new(noutputs: usize) -> Box<OutBufs> {
        Box::new(OutBufs {
            bufs: (0..noutputs).map(|_| Batch::new()).collect(),
            spill: Spill::new(),
        })
    }

    /// No outputs (a queue answering a pull).
    fn none() -> OutBufs {
        OutBufs {
            bufs: Box::new([]),
            spill: Spill::new(),
        }
    }
}

/// What went into and out of one element (its `accounting` handler).
/// Every packet is accounted for: `sum(inputs) + made == sum(outputs) +
/// freed + held` at any moment between element calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Accounting {
    /// Packets that arrived on each input (pushed or pulled).
    pub inputs: Vec<u64>,
    /// Packets that left on each output.
    pub outputs: Vec<u64>,
    /// Packets the element made (sources, copies, fragments, ...).
    pub made: u64,
    /// Packets whose slot the element released: a sink's deliveries and
    /// every drop, whatever its reason.
    pub freed: u64,
    /// Packets it could not make because the pool was at its limit.
    pub refused: u64,
    /// Packets it holds now (queues, reassembly, ...).
    pub held: u64,
    /// Packets it put into (positive) or took out of (negative) a store
    /// shared with other elements, net (ARPQueriers sharing an ARPTable).
    pub lent: i64,
}

impl std::fmt::Display for Accounting {
    /// The `accounting` handler's text: one `name value` line each.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
        writeln!(f, "in {}", list(&self.inputs))?;
        writeln!(f, "out {}", list(&self.outputs))?;
        writeln!(f, "made {}", self.made)?;
        writeln!(f, "freed {}", self.freed)?;
        writeln!(f, "held {}", self.held)?;
        if self.lent != 0 {
            writeln!(f, "lent {}", self.lent)?;
        }
        writeln!(f, "alloc_refused {}", self.refused)
    }
}

/// One element's counters (see [`Router::counters`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementCounters {
    /// The element's name.
    pub name: String,
    /// Its class.
    pub class: &'static str,
    /// What went in and out (per port), was made, freed, refused, held.
    pub accounting: Accounting,
    /// Packets it sent to an output with nothing connected (dropped).
    pub unconnected: u64,
    /// Packets it sent to an output it does not have (dropped).
    pub no_output: u64,
    /// What the element itself reports ([`Element::counters`]).
    pub counters: Vec<(&'static str, pronto_elements::CounterKind, u64)>,
}

impl ElementCounters {
    /// Its drops by reason: the element's own reasons, then the runtime's
    /// (`unconnected`, `alloc_refused`) where not zero.
    pub fn drops(&self) -> Vec<(&'static str, u64)> {
        let mut v: Vec<(&'static str, u64)> = self
            .counters
            .iter()
            .filter(|c| c.1 == pronto_elements::CounterKind::Drop)
            .map(|c| (c.0, c.2))
            .collect();
        if self.unconnected != 0 {
            v.push(("unconnected", self.unconnected));
        }
        if self.no_output != 0 {
            v.push(("no_output", self.no_output));
        }
        if self.accounting.refused != 0 {
            v.push(("alloc_refused", self.accounting.refused));
        }
        v
    }

    /// One line of the `counters` handler: the name, the class, then
    /// `key=value` fields: `in` and `out` per port (comma-separated),
    /// `made`, `freed`, `held`, each drop as `drop.REASON` and each other
    /// counter as `count.NAME`.
    pub fn line(&self) -> String {
        use std::fmt::Write as _;
        let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let a = &self.accounting;
        let mut s = format!(
            "{} {} in={} out={} made={} freed={} held={}",
            self.name,
            self.class,
            list(&a.inputs),
            list(&a.outputs),
            a.made,
            a.freed,
            a.held
        );
        for (n, v) in self.drops() {
            let _ = write!(s, " drop.{n}={v}");
        }
        for c in &self.counters {
            if c.1 == pronto_elements::CounterKind::Count {
                let _ = write!(s, " count.{}={}", c.0, c.2);
            }
        }
        s
    }
}

/// One line of the `counters` handler read back (see
/// [`ElementCounters::line`]), names owned: what a process reading
/// another's counters (the daemon) gets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CountersLine {
    /// The element's name.
    pub name: String,
    /// Its class.
    pub class: String,
    /// Packets in on each input.
    pub inputs: Vec<u64>,
    /// Packets out on each output.
    pub outputs: Vec<u64>,
    /// Packets made.
    pub made: u64,
    /// Packets freed (deliveries of a sink and every drop).
    pub freed: u64,
    /// Packets held now.
    pub held: u64,
    /// Drops by reason.
    pub drops: Vec<(String, u64)>,
    /// The element's other counters.
    pub counts: Vec<(String, u64)>,
}

impl CountersLine {
    /// Parses one line; `None` when it is not one the handler writes.
    pub fn parse(line: &str) -> Option<CountersLine> {
        let mut f = line.split_whitespace();
        let mut c = CountersLine {
            name: f.next()?.to_string(),
            class: f.next()?.to_string(),
            ..Default::default()
        };
        let list = |v: &str| -> Option<Vec<u64>> {
            v.split(',')
                .filter(|x| !x.is_empty())
                .map(|x| x.parse().ok())
                .collect()
        };
        for field in f {
            let (k, v) = field.split_once('=')?;
            match k {
                "in" => c.inputs = list(v)?,
                "out" => c.outputs = list(v)?,
                "made" => c.made = v.parse().ok()?,
                "freed" => c.freed = v.parse().ok()?,
                "held" => c.held = v.parse().ok()?,
                _ => {
                    let n: u64 = v.parse().ok()?;
                    if let Some(r) = k.strip_prefix("drop.") {
                        c.drops.push((r.to_string(), n));
                    } else if let Some(r) = k.strip_prefix("count.") {
                        c.counts.push((r.to_string(), n));
                    }
                    // Another field: a later version's; ignored.
                }
            }
        }
        Some(c)
    }
}

impl Accounting {
    /// True when the counts add up.
    pub fn balanced(&self) -> bool {
        let got = i128::from(self.inputs.iter().sum::<u64>()) + i128::from(self.made);
        let gone = i128::from(self.outputs.iter().sum::<u64>())
            + i128::from(self.freed)
            + i128::from(self.held)
            + i128::from(self.lent);
        got == gone
    }
}

/// Looks up an element class by Click name: the element library plus the
/// runtime's own `Script`, `DriverManager` and `StaticThreadSched`.
pub fn lookup_class(name: &str) -> Option<ClassEntry> {
    crate::script::lookup(name)
        .or_else(|| crate::staticthreadsched::lookup(name))
        .or_else(|| crate::controlsocket::lookup(name))
        .or_else(|| crate::quitwatcher::lookup(name))
        .or_else(|| crate::progressbar::lookup(name))
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
    v.extend(crate::quitwatcher::lookup("QuitWatcher"));
    v.extend(crate::progressbar::lookup("ProgressBar"));
    v.sort_by_key(|e| e.spec.name);
    v
}

/// True if `name` is a known primitive class.
pub fn is_known_class(name: &str) -> bool {
    lookup_class(name).is_some()
}

/// Adds, to each "unknown element class" error about a Click class pronto
/// does not have, the reason (a kernel-module element, ...), after Click's
/// own first line.
pub fn explain_unknown_classes(diags: &mut [Diagnostic]) {
    for d in diags {
        let name = d
            .message
            .strip_prefix("unknown element class '")
            .and_then(|r| r.strip_suffix('\''));
        if let Some(why) = name.and_then(pronto_elements::registry::why_not) {
            let note = format!("{}: {why}", name.unwrap_or_default());
            d.notes.push(note);
        }
    }
}

/// The elements configured so far, as [`Peers`] of the one being
/// configured.
struct ConfiguredPeers<'g> {
    graph: &'g graph::Graph,
    by_name: &'g HashMap<&'g str, usize>,
    slots: &'g [Option<Box<dyn Element>>],
    asking: &'g str,
    /// The asking element's index, and where each lookup is recorded
    /// (asker, element looked up): state shared between elements, which
    /// merge-point ordering must respect.
    asking_node: usize,
    refs: &'g std::cell::RefCell<Vec<(usize, usize)>>,
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

impl ConfiguredPeers<'_> {
    /// The node `name` names, resolved Click's way: relative to the asking
    /// element's compound, then each enclosing compound, then the top
    /// level.
    fn resolve(&self, name: &str) -> Option<usize> {
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
                return Some(i);
            }
            if prefix.is_empty() {
                return None;
            }
        }
    }
}

impl Peers for ConfiguredPeers<'_> {
    fn lookup(&self, name: &str) -> Option<Peer> {
        let i = self.resolve(name)?;
        self.refs.borrow_mut().push((self.asking_node, i));
        self.peer(i)
    }

    fn declared(&self, name: &str) -> bool {
        self.resolve(name)
            .is_some_and(|i| self.graph.nodes[i].entry.is_some())
    }

    fn of_class(&self, class: &str) -> Vec<Peer> {
        (0..self.graph.nodes.len())
            .filter(|&i| self.graph.nodes[i].class.name == class)
            .filter_map(|i| {
                self.refs.borrow_mut().push((self.asking_node, i));
                self.peer(i)
            })
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
        sm: &SourceMap,
        opts: &RouterOptions,
        pool: Option<Pool>,
    ) -> Result<Router, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let graph = graph::build(flat, &lookup_class, &mut errors);
        if !errors.is_empty() {
            return Err(pronto_lang::limit_errors(errors));
        }
        // Each router's random choices start from the same seed (a
        // `RandomSeed` element, configured below, sets another).
        pronto_elements::random::click_srandom(pronto_elements::random::DEFAULT_SEED);
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
        let refs = std::cell::RefCell::new(Vec::new());
        // AddressInfo names live for the configuration pass only.
        pronto_lang::names::clear();
        // Elements that name one configured later (`ConfigError::later`)
        // go again after the others, as long as each pass configures one.
        let mut pending: Vec<usize> = order;
        let mut before = usize::MAX;
        loop {
            // A pass that configured none of them was the last chance: now
            // their errors stand.
            let last_pass = pending.len() == before;
            before = pending.len();
            let mut deferred = Vec::new();
            for i in pending.drain(..) {
                let node = &graph.nodes[i];
                let Some(entry) = node.entry else { continue };
                let peers = ConfiguredPeers {
                    graph: &graph,
                    by_name: &by_name,
                    slots: &slots,
                    asking: &node.name,
                    asking_node: i,
                    refs: &refs,
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
                pronto_lang::names::set_device_resolver(pronto_elements::userlevel::device_names);
                pronto_lang::names::set_current(&node.name);
                let built = match (entry.factory)(&ctx) {
                    Ok(mut e) => {
                        for (warning, text) in e.config_messages() {
                            let d = if warning {
                                Diagnostic::warning(text, Some(node.config_span))
                            } else {
                                Diagnostic::note(text, Some(node.config_span))
                            };
                            let d = d.with_context(
                                format!("While configuring '{} :: {}'", node.name, entry.spec.name),
                                node.span,
                            );
                            eprintln!("{}", d.render_click(sm));
                        }
                        e
                    }
                    Err(e) if e.later && !last_pass => {
                        deferred.push(i);
                        continue;
                    }
                    Err(e) => {
                        errors.push(
                            Diagnostic::error(e.message.clone(), Some(node.config_span))
                                .with_note(format!(
                                    "while configuring `{} :: {}`",
                                    node.name, entry.spec.name
                                ))
                                .with_context(
                                    format!(
                                        "While configuring '{} :: {}'",
                                        node.name, entry.spec.name
                                    ),
                                    node.span,
                                ),
                        );
                        Box::new(Placeholder)
                    }
                };
                slots[i] = Some(built);
            }
            if deferred.is_empty() {
                break;
            }
            pending = deferred;
        }
        pronto_lang::names::clear();
        let mut elems: Vec<Box<dyn Element>> = slots.into_iter().flatten().collect();
        if !errors.is_empty() {
            return Err(pronto_lang::limit_errors(errors));
        }
        // Click allocates packets as they are needed and never runs out;
        // pronto's pool grows up to a limit. A configuration whose
        // elements may hold more packets than that is refused now, rather
        // than left to have its allocations refused while it runs.
        if let Some(p) = &pool {
            p.set_limit(opts.pool_limit);
        }
        let limit = pool.as_ref().map_or(opts.pool_limit, Pool::limit);
        let holders: Vec<(usize, usize)> = elems
            .iter()
            .enumerate()
            .map(|(i, e)| (i, e.capacity()))
            .filter(|&(_, c)| c > 0)
            .collect();
        let total: usize = holders.iter().map(|&(_, c)| c).sum();
        if total > limit {
            let mut biggest = holders.clone();
            biggest.sort_by_key(|&(i, c)| (std::cmp::Reverse(c), i));
            let names: Vec<String> = biggest
                .iter()
                .take(3)
                .map(|&(i, c)| format!("`{}` {c}", graph.nodes[i].name))
                .collect();
            let more = if biggest.len() > 3 { ", ..." } else { "" };
            return Err(vec![Diagnostic::error(
                format!(
                    "the configuration's elements can hold {total} packets ({}{more}), more than \
                     the packet pool's limit of {limit}: lower their capacities or raise the \
                     limit (`pronto run --pool-limit {total}`; for an instance, more `memory`)",
                    names.join(", ")
                ),
                None,
            )]);
        }
        let pool = match pool {
            Some(p) => p,
            None => Pool::growable(opts.pool_slots, opts.pool_limit)
                .map_err(|e| vec![Diagnostic::error(e.to_string(), None)])?,
        };
        let ordered = graph::ordered_nodes(&graph);
        let one_for_one: Vec<bool> = elems.iter().map(|e| e.one_for_one()).collect();
        let refs = refs.into_inner();
        let (region_of, regions) = if opts.order_per_packet {
            (vec![u32::MAX; graph.nodes.len()], Vec::new())
        } else {
            graph::order_regions(&graph, &ordered, &one_for_one, &refs)
        };
        let mut collected: Vec<Vec<Option<(u16, Packet)>>> =
            (0..graph.nodes.len()).map(|_| Vec::new()).collect();
        for r in &regions {
            for &m in &r.merges {
                collected[m].resize_with(pronto_packet::BATCH_MAX, || None);
            }
        }
        let outbufs = graph
            .nodes
            .iter()
            .map(|n| Some(OutBufs::new(n.noutputs)))
            .collect();
        let offsets = |count: &dyn Fn(&graph::NodeInfo) -> usize| {
            let mut off = Vec::with_capacity(graph.nodes.len());
            let mut total = 0;
            for n in &graph.nodes {
                off.push(total);
                total += count(n);
            }
            (off, total)
        };
        let (ooff, no) = offsets(&|n| n.noutputs);
        // One account per element, and the last for the runtime itself.
        let nnodes = graph.nodes.len();
        pool.set_accounts(nnodes + 1);
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
                gate: crate::notify::task_gate(&graph, &elems, node),
                asleep: false,
                parked: false,
                signal_was: true,
            })
            .collect();
        let timers: Vec<usize> = (0..elems.len()).filter(|&i| elems[i].has_timer()).collect();
        let input_gates: Vec<Vec<crate::notify::Gate>> = (0..elems.len())
            .map(|i| {
                if elems[i].as_pull_one().is_some() {
                    crate::notify::input_gates(&graph, &elems, i)
                } else {
                    Vec::new()
                }
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
            collected,
            collected_extra: Vec::new(),
            region_len: 0,
            region_ports: Vec::with_capacity(pronto_packet::BATCH_MAX),
            scratch: (0..4).map(|_| Box::new(Batch::new())).collect(),
            graph,
            any_ordered: ordered.iter().any(|&o| o),
            collecting: vec![false; ordered.len()],
            ordered,
            region_of,
            regions,
            region_active: false,
            one_for_one,
            refs,
            order_per_packet: opts.order_per_packet,
            tasks,
            scripts,
            ctrl: Control::default(),
            clock: opts.clock,
            busy_poll: opts.busy_poll,
            poll_window_ns: opts.poll_window_ns.max(0),
            last_work: i64::MIN,
            idle_polls: 0,
            idle_sleeps: 0,
            sim_now,
            sim_creep: 0,
            run_now: 0,
            stopped: false,
            pull_one_seen: false,
            timers,
            warp: None,
            signal_flags: Vec::new(),
            signal_handlers: Vec::new(),
            input_gates,
            out_of_table: Vec::new(),
            deferred: Vec::new(),
            script_error: None,
            flat_text: flat.to_click(),
            source_text: if flat.compact_config() {
                String::new()
            } else {
                sm.text(pronto_lang::FileId(0)).to_string()
            },
            requirements: flat
                .requirements
                .iter()
                .map(|(k, v, _)| (k.clone(), v.clone()))
                .collect(),
            conns: flat
                .connections
                .iter()
                .map(|c| (c.from, c.from_port, c.to, c.to_port))
                .collect(),
            link: None,
            inbox: None,
            net: vec![0; nnodes + 1],
            mark: pool.in_use(),
            ocount: vec![0; no],
            ooff,
            unconnected: vec![0; nnodes],
            trace: None,
            tracing: false,
            trace_frames: Vec::new(),
            pool,
        })
    }

    /// The current time, ns since the epoch.
    pub fn now(&self) -> i64 {
        match self.clock {
            Clock::Real => match self.warp {
                None => wall_clock_ns(),
                Some(w) => w.now(wall_clock_ns()),
            },
            Clock::Simulated(_) => self.sim_now,
        }
    }

    /// Real nanoseconds that `ns` nanoseconds of router time take (Click's
    /// `timewarp` makes router time run faster).
    fn real_ns(&self, ns: i64) -> i64 {
        match self.warp {
            Some(w) if w.factor > 0.0 => (ns as f64 / w.factor) as i64,
            _ => ns,
        }
    }

    /// Sets the speed of router time against real time (the global
    /// `timewarp` handler); router time goes on from where it is.
    fn set_timewarp(&mut self, factor: f64) {
        let real = wall_clock_ns();
        let now = self.now();
        self.warp = Some(Warp {
            real_base: real,
            warped_base: now,
            factor,
        });
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
        for i in 0..self.graph.nodes.len() {
            let node = &self.graph.nodes[i];
            let Some(&j) = by_name.get(node.name.as_str()) else {
                continue;
            };
            if old.graph.nodes[j].class.name != node.class.name {
                continue;
            }
            let (ninputs, noutputs) = (node.ninputs, node.noutputs);
            // Packets moved into this configuration's pool are made by the
            // element that takes them over.
            let prev = self.acct_switch(i);
            let ctx = pronto_elements::TakeCtx {
                pool: &self.pool,
                ninputs,
                noutputs,
            };
            let took = self.elems[i].take_state(old.elems[j].as_mut(), &ctx);
            self.acct_switch(prev);
            if let Some(what) = took {
                moved.push((self.graph.nodes[i].name.clone(), what));
            }
        }
        moved
    }

    // ---- packet movement -------------------------------------------------

    /// Pushes `batch` into input `port` of `node`, and everything that
    /// comes out of it onwards. (The one function of the push recursion:
    /// `push_one`, `forward` and `send` are inlined into it, so that a
    /// batch's way through an element costs one call; and an element that
    /// passes its whole batch to one output, with nothing else to send,
    /// hands it to the next element in the same call: a chain of such
    /// elements is a loop, not a recursion.)
    fn push(&mut self, mut node: usize, mut port: usize, batch: &mut Batch) {
        loop {
            if self.any_ordered {
                if self.region_active {
                    if self.collecting[node] {
                        self.collect(node, port, batch);
                        return;
                    }
                } else if self.ordered[node] && batch.len() > 1 {
                    self.push_ordered(node, port, batch);
                    return;
                }
            }
            match self.push_one(node, port, batch) {
                Some((t, tp)) => (node, port) = (t, tp),
                None => return,
            }
        }
    }

    /// Keeps Click's packet order across a split that merges again: at
    /// the merge points where the elements allow it ([`Router::push_region`]),
    /// otherwise one packet at a time through this element.
    #[cold]
    #[inline(never)]
    fn push_ordered(&mut self, node: usize, port: usize, batch: &mut Batch) {
        let region = self.region_of[node];
        if region != u32::MAX && !self.tracing {
            self.push_region(node, region as usize, port, batch);
            return;
        }
        let mut one = self.take_scratch();
        let mut rest = self.take_scratch();
        rest.append(batch);
        for p in rest.drain() {
            let _ = one.push(p);
            if let Some((t, tp)) = self.push_one(node, port, &mut one) {
                self.push(t, tp, &mut one);
            }
        }
        self.put_scratch(rest);
        self.put_scratch(one);
    }

    /// Click's order kept where a split's paths meet again: each packet
    /// is tagged with its place in `batch`, the split element and the
    /// paths after it run on whole batches, and each merge point (in
    /// topological order) collects what reaches it until every path into
    /// it has run; then it runs on its packets sorted back into the
    /// split's order, a run of consecutive packets from one input at a
    /// time. Every element of the region is one for one (the same packet
    /// in and out, nothing made), so each packet reaches a merge point at
    /// most once and its tag says where it goes: the packets each element
    /// sees, and their order, are those of one packet at a time.
    fn push_region(&mut self, node: usize, region: usize, port: usize, batch: &mut Batch) {
        for (i, p) in batch.as_mut_slice().iter_mut().enumerate() {
            p.set_order_tag(i as u16);
        }
        self.region_len = batch.len();
        for &m in &self.regions[region].merges {
            self.collecting[m] = true;
        }
        self.region_active = true;
        if let Some((t, tp)) = self.push_one(node, port, batch) {
            self.push(t, tp, batch);
        }
        let mut run = self.take_scratch();
        let n = self.region_len;
        for k in 0..self.regions[region].steps.len() {
            if self.regions[region].steps[k].len() > 1 {
                self.run_group(region, k, &mut run);
                continue;
            }
            let m = self.regions[region].steps[k][0];
            self.collecting[m] = false;
            let mut table = std::mem::take(&mut self.collected[m]);
            let mut ports = std::mem::take(&mut self.region_ports);
            for slot in &mut table[..n] {
                let Some((p_port, p)) = slot.take() else {
                    continue;
                };
                if run.is_full() {
                    self.push_merged(m, &ports, &mut run);
                    ports.clear();
                }
                ports.push(p_port);
                let _ = run.push(p);
            }
            if !run.is_empty() {
                self.push_merged(m, &ports, &mut run);
                ports.clear();
            }
            self.region_ports = ports;
            self.collected[m] = table;
            if !self.collected_extra.is_empty() {
                self.push_extra(m, &mut run);
            }
        }
        self.put_scratch(run);
        self.region_active = false;
        self.region_len = 0;
    }

    /// Step `k` of `region`, a group of elements that share state: their
    /// collected packets in the packets' joint order, each run of
    /// consecutive packets for one member pushed to it in turn (no member
    /// reaches another, so their tables stay in place while they run).
    #[cold]
    #[inline(never)]
    fn run_group(&mut self, region: usize, k: usize, run: &mut Batch) {
        let n = self.region_len;
        let step_len = self.regions[region].steps[k].len();
        for j in 0..step_len {
            self.collecting[self.regions[region].steps[k][j]] = false;
        }
        let mut ports = std::mem::take(&mut self.region_ports);
        let mut cur = usize::MAX;
        for t in 0..n {
            for j in 0..step_len {
                let m = self.regions[region].steps[k][j];
                let Some((p_port, p)) = self.collected[m][t].take() else {
                    continue;
                };
                if (m != cur || run.is_full()) && !run.is_empty() {
                    self.push_merged(cur, &ports, run);
                    ports.clear();
                }
                cur = m;
                ports.push(p_port);
                let _ = run.push(p);
                break;
            }
        }
        if !run.is_empty() {
            self.push_merged(cur, &ports, run);
            ports.clear();
        }
        self.region_ports = ports;
        if !self.collected_extra.is_empty() {
            for j in 0..step_len {
                self.push_extra(self.regions[region].steps[k][j], run);
            }
        }
    }

    /// The packets of `collected_extra` that reached merge point `m`, sent
    /// on in the order they arrived.
    #[cold]
    #[inline(never)]
    fn push_extra(&mut self, m: usize, run: &mut Batch) {
        let extra = std::mem::take(&mut self.collected_extra);
        let mut keep = Vec::new();
        for (node, port, p) in extra {
            if node != m {
                keep.push((node, port, p));
                continue;
            }
            let _ = run.push(p);
            self.push_merged(m, &[port], run);
        }
        self.collected_extra = keep;
    }

    /// The global `order` handler: for each element whose split merges
    /// again (Click's packet order must be kept after it), how it is kept:
    /// batches sorted back at the merge points, or one packet at a time.
    fn order_report(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        for (i, &o) in self.ordered.iter().enumerate() {
            if !o {
                continue;
            }
            let name = &self.graph.nodes[i].name;
            match self.region_of[i] {
                u32::MAX => {
                    let _ = writeln!(s, "{name}: one packet at a time");
                }
                r => {
                    // A group of elements that share state: joined by `+`.
                    let at: Vec<String> = self.regions[r as usize]
                        .steps
                        .iter()
                        .map(|step| {
                            step.iter()
                                .map(|&m| self.graph.nodes[m].name.as_str())
                                .collect::<Vec<_>>()
                                .join("+")
                        })
                        .collect();
                    let _ = writeln!(s, "{name}: batches, ordered at {}", at.join(" "));
                }
            }
        }
        s
    }

    /// Element `node` changed whether it is one for one (a handler
    /// write): the regions are computed again.
    #[cold]
    fn refresh_regions(&mut self, node: usize) {
        debug_assert!(!self.region_active, "handler writes come between pushes");
        self.one_for_one[node] = self.elems[node].one_for_one();
        if self.order_per_packet {
            return;
        }
        let (region_of, regions) =
            graph::order_regions(&self.graph, &self.ordered, &self.one_for_one, &self.refs);
        for r in &regions {
            for &m in &r.merges {
                if self.collected[m].is_empty() {
                    self.collected[m].resize_with(pronto_packet::BATCH_MAX, || None);
                }
            }
        }
        self.region_of = region_of;
        self.regions = regions;
    }

    /// A merge point of a region runs on its collected packets, in their
    /// order, packet `i` from input `inputs[i]`: pushed whole when they
    /// all came in on one input, else through
    /// [`Element::push_inputs`](pronto_elements::Element::push_inputs).
    fn push_merged(&mut self, node: usize, inputs: &[u16], batch: &mut Batch) {
        let first = inputs.first().copied().unwrap_or(0);
        if inputs.iter().all(|&i| i == first) {
            if let Some((t, tp)) = self.push_one(node, first as usize, batch) {
                self.push(t, tp, batch);
            }
        } else {
            let mut ob = self.take_outbufs(node);
            self.acct_switch(node);
            let now = self.run_now;
            let pass = {
                let OutBufs { bufs, spill } = &mut *ob;
                let mut out = Out::with_spill(bufs, spill, &self.pool, now, &mut self.ctrl);
                self.elems[node].push_inputs(inputs, batch, &mut out);
                out.passed()
            };
            if self.ctrl.pending {
                self.after_call(node, first as usize, batch, &mut ob);
                self.resume(node, first as usize, &mut ob);
            }
            self.forward(node, pass, batch, &mut ob);
            self.outbufs[node] = Some(ob);
        }
        debug_assert!(batch.is_empty(), "a push leaves its batch empty");
    }

    /// A merge point of the running region keeps what reaches it for its
    /// turn.
    #[cold]
    #[inline(never)]
    fn collect(&mut self, node: usize, port: usize, batch: &mut Batch) {
        let n = self.region_len;
        let table = &mut self.collected[node];
        for p in batch.drain() {
            let t = p.order_tag() as usize;
            match table.get_mut(t) {
                Some(slot @ None) if t < n => *slot = Some((port as u16, p)),
                _ => {
                    debug_assert!(false, "a packet reached a merge point twice or untagged");
                    self.collected_extra.push((node, port as u16, p))
                }
            }
        }
    }

    fn take_scratch(&mut self) -> Box<Batch> {
        self.scratch.pop().unwrap_or_else(|| Box::new(Batch::new()))
    }

    fn put_scratch(&mut self, b: Box<Batch>) {
        self.scratch.push(b);
    }

    /// The node's output buffers, taken out of the table while it runs;
    /// fresh ones when it is re-entered through a push cycle.
    fn take_outbufs(&mut self, node: usize) -> Box<OutBufs> {
        self.outbufs[node]
            .take()
            .unwrap_or_else(|| OutBufs::new(self.graph.nodes[node].noutputs))
    }

    /// Runs `node` on `batch` and sends what it outputs on; or, when all
    /// it did was pass the batch to one connected output, returns that
    /// output's far end, for the caller to push the batch into (counted on
    /// the connection already).
    #[inline(always)]
    fn push_one(&mut self, node: usize, port: usize, batch: &mut Batch) -> Option<(usize, usize)> {
        if self.tracing {
            return self.push_one_traced(node, port, batch);
        }
        self.push_one_as::<false>(node, port, batch)
    }

    /// [`Router::push_one`] while a trace is armed.
    #[cold]
    #[inline(never)]
    fn push_one_traced(
        &mut self,
        node: usize,
        port: usize,
        batch: &mut Batch,
    ) -> Option<(usize, usize)> {
        self.push_one_as::<true>(node, port, batch)
    }

    /// The body of [`Router::push_one`], compiled twice: without tracing
    /// (the path every packet takes) and with it.
    #[inline(always)]
    fn push_one_as<const TRACE: bool>(
        &mut self,
        node: usize,
        port: usize,
        batch: &mut Batch,
    ) -> Option<(usize, usize)> {
        let mut ob = self.take_outbufs(node);
        // Charged to this element until the next switch. There is no
        // switch back to the caller when the push returns: after a push,
        // its caller only sends other batches on (each send switches
        // again), and what is charged after a return is charged to the
        // element that ran last, which is the one that did it. Callers
        // whose own code runs after a push (a pull served through an
        // element, a task) switch back themselves.
        self.acct_switch(node);
        let traced = if TRACE {
            self.trace_enter(node, port, batch.as_slice(), false)
        } else {
            None
        };
        let now = self.run_now;
        let pass = {
            let OutBufs { bufs, spill } = &mut *ob;
            let mut out = Out::with_spill(bufs, spill, &self.pool, now, &mut self.ctrl);
            self.elems[node].push(port, batch, &mut out);
            out.passed()
        };
        if self.ctrl.pending {
            self.after_call(node, port, batch, &mut ob);
            self.resume(node, port, &mut ob);
        }
        if let Some(p) = pass {
            if !batch.is_empty() && ob.spill.is_empty() && ob.bufs.iter().all(Batch::is_empty) {
                if let Some(Some((t, tp))) = self.graph.out_conn[node].get(p).copied() {
                    self.outbufs[node] = Some(ob);
                    self.ocount[self.ooff[node] + p] += batch.len() as u64;
                    if TRACE {
                        self.trace_left(node, p, batch);
                        self.trace_exit(node, traced);
                    }
                    return Some((t as usize, tp as usize));
                }
            }
        }
        self.forward(node, pass, batch, &mut ob);
        self.outbufs[node] = Some(ob);
        if TRACE {
            self.trace_exit(node, traced);
        }
        None
    }

    // ---- tracing (cold: only while a trace is armed) ------------------------

    /// Marked packets arrive at `node`: recorded, with the element's drop
    /// counters and held count before its call.
    #[cold]
    #[inline(never)]
    fn trace_enter(
        &mut self,
        node: usize,
        port: usize,
        packets: &[Packet],
        pulled: bool,
    ) -> Option<crate::trace::Call> {
        let t = self.trace.as_mut()?;
        let ids = t.entered(node, port, packets, pulled)?;
        let mut c = pronto_elements::Counters::new();
        self.elems[node].counters(&mut c);
        Some(crate::trace::Call {
            ids,
            drops: c.drops().collect(),
            held: self.elems[node].held(),
        })
    }

    /// After `node`'s call and the sends of what it output: the marked
    /// packets that did not leave ended there.
    #[cold]
    #[inline(never)]
    fn trace_exit(&mut self, node: usize, call: Option<crate::trace::Call>) {
        let Some(call) = call else { return };
        let mut c = pronto_elements::Counters::new();
        self.elems[node].counters(&mut c);
        let drops: Vec<(&'static str, u64)> = c.drops().collect();
        let held = self.elems[node].held();
        let sink = self.graph.nodes[node].noutputs == 0;
        if let Some(t) = self.trace.as_mut() {
            t.after(node, &call, &drops, held, sink);
        }
    }

    /// Marked packets of `batch` leave `node` on `port`; a source marks
    /// the packets it makes while the trace wants more.
    #[cold]
    #[inline(never)]
    fn trace_left(&mut self, node: usize, port: usize, batch: &mut Batch) {
        self.trace_left_from(node, port, batch.as_mut_slice(), false);
    }

    /// [`Router::trace_left`] for the packets a pull answered with (those
    /// past what the puller's batch held before).
    #[cold]
    #[inline(never)]
    fn trace_left_from(&mut self, node: usize, port: usize, packets: &mut [Packet], pulled: bool) {
        let source = self.graph.nodes[node].ninputs == 0;
        if let Some(t) = self.trace.as_mut() {
            if source && t.wants_more() {
                t.mark(packets);
            }
            t.left(node, port, packets, pulled && !source);
        }
    }

    /// A packet `node` pulled from `input` itself (`pull_each`): its step,
    /// and its mark kept in the call's frame.
    #[cold]
    #[inline(never)]
    fn trace_pulled_in(&mut self, node: usize, input: usize, b: &Batch) {
        let Some(t) = self.trace.as_mut() else { return };
        let Some(ids) = t.entered(node, input, b.as_slice(), true) else {
            return;
        };
        if let Some((n, frame)) = self.trace_frames.last_mut() {
            if *n == node {
                frame.extend(ids);
            }
        }
    }

    /// A call of `node` about to pull its inputs one packet at a time
    /// (`pull_each`): its counters before, and a frame that collects the
    /// marks of what it pulls.
    #[cold]
    #[inline(never)]
    fn trace_pull_frame(&mut self, node: usize) -> crate::trace::Call {
        let mut c = pronto_elements::Counters::new();
        self.elems[node].counters(&mut c);
        self.trace_frames.push((node, Vec::new()));
        crate::trace::Call {
            ids: Vec::new(),
            drops: c.drops().collect(),
            held: self.elems[node].held(),
        }
    }

    /// An element that asked to be pushed again once its calls were made
    /// ([`Out::call_and_resume`]) finishes the packets it parked: what it
    /// passes or emits goes into its output buffers, after what its first
    /// call emitted, so that the order is the packets' order.
    #[cold]
    fn resume(&mut self, node: usize, port: usize, ob: &mut OutBufs) {
        while std::mem::take(&mut self.ctrl.resume) {
            let mut b = self.take_scratch();
            let now = self.run_now;
            let pass = {
                let OutBufs { bufs, spill } = &mut *ob;
                let mut out = Out::with_spill(bufs, spill, &self.pool, now, &mut self.ctrl);
                self.elems[node].push(port, &mut b, &mut out);
                out.passed()
            };
            if self.ctrl.pending {
                self.after_call(node, port, &mut b, ob);
            }
            match pass.filter(|&p| p < ob.bufs.len()) {
                Some(o) => {
                    for p in b.drain() {
                        ob.spill.emit(&mut ob.bufs, o, p);
                    }
                }
                // Passed to no output: dropped, as `forward` drops it.
                None => b.clear(),
            }
            self.put_scratch(b);
        }
    }

    /// Sends the element's results on, in output port order (Click's Tee
    /// pushes output 0 first): at each port the passed batch, then the
    /// batches that overflowed that port's buffer during the call, then
    /// the buffer. Runs with the accounting on `node`: what it drops (an
    /// input batch no port was chosen for) is charged to the element.
    #[inline(always)]
    fn forward(&mut self, node: usize, pass: Option<usize>, batch: &mut Batch, ob: &mut OutBufs) {
        let pass = match pass {
            Some(p) if !batch.is_empty() && p < ob.bufs.len() => p,
            _ => {
                if pass.is_some() && !batch.is_empty() {
                    // Passed to an output it does not have.
                    self.pool.note_no_output(batch.len() as u64);
                }
                batch.clear();
                usize::MAX
            }
        };
        if !ob.spill.is_empty() {
            self.forward_spilled(node, pass, batch, ob);
            return;
        }
        for (p, b) in ob.bufs.iter_mut().enumerate() {
            if p == pass {
                self.send(node, p, batch);
            }
            if !b.is_empty() {
                self.send(node, p, b);
            }
        }
    }

    /// [`Router::forward`] when some output buffers overflowed during the
    /// call: port by port, the passed batch, the overflowed batches, then
    /// the buffer.
    #[cold]
    #[inline(never)]
    fn forward_spilled(&mut self, node: usize, pass: usize, batch: &mut Batch, ob: &mut OutBufs) {
        let mut list = ob.spill.take();
        if ob.spill.take_ordered() {
            // Emission order: the passed batch (what the element let
            // through untouched came first), the spilled batches as they
            // were emitted, then what is left in the buffers.
            if pass < ob.bufs.len() {
                self.send(node, pass, batch);
            }
            for (q, b) in list.iter_mut() {
                self.send(node, *q, b);
            }
            for p in 0..ob.bufs.len() {
                if !ob.bufs[p].is_empty() {
                    self.send(node, p, &mut ob.bufs[p]);
                }
            }
            ob.spill.recycle(list);
            return;
        }
        for p in 0..ob.bufs.len() {
            if p == pass {
                self.send(node, p, batch);
            }
            for (q, b) in list.iter_mut() {
                if *q == p {
                    self.send(node, p, b);
                }
            }
            if !ob.bufs[p].is_empty() {
                self.send(node, p, &mut ob.bufs[p]);
            }
        }
        ob.spill.recycle(list);
    }

    #[inline(always)]
    fn send(&mut self, node: usize, port: usize, batch: &mut Batch) {
        match self.graph.out_conn[node].get(port).copied().flatten() {
            Some((t, tp)) => {
                self.ocount[self.ooff[node] + port] += batch.len() as u64;
                if self.tracing {
                    self.trace_left(node, port, batch);
                }
                self.push(t as usize, tp as usize, batch)
            }
            None => {
                // Dropped by the element that sent it (an earlier send's
                // push may have left the charge on another).
                self.unconnected[node] += batch.len() as u64;
                let prev = self.acct_switch(node);
                batch.clear();
                self.acct_switch(prev);
            }
        }
    }

    /// Pulls up to `max` packets into input `port` of `node` from whatever
    /// is connected there, appending them to `batch` (and counting them on
    /// that connection).
    fn pull_input(&mut self, node: usize, port: usize, batch: &mut Batch, max: usize) {
        let Some((src, sport)) = self.graph.in_conn[node].get(port).copied().flatten() else {
            return;
        };
        let before = batch.len();
        self.pull(src as usize, sport as usize, batch, max);
        self.ocount[self.ooff[src as usize] + sport as usize] += (batch.len() - before) as u64;
    }

    /// Pulls up to `max` packets from output `port` of `node` into `batch`.
    fn pull(&mut self, node: usize, port: usize, batch: &mut Batch, max: usize) {
        let now = self.run_now;
        let before = batch.len();
        if self.elems[node].is_pull_source() {
            let prev = self.acct_switch(node);
            let mut none: [Batch; 0] = [];
            let mut out = Out::new(&mut none, &self.pool, now, &mut self.ctrl);
            self.elems[node].pull(port, batch, max, &mut out);
            if self.ctrl.pending {
                self.after_call(node, 0, &mut Batch::new(), &mut OutBufs::none());
            }
            self.acct_switch(prev);
            if self.tracing && batch.len() > before {
                self.trace_left_from(node, port, &mut batch.as_mut_slice()[before..], true);
            }
            return;
        }
        if self.elems[node].as_pull_one().is_some() {
            self.pull_each(node, port, batch, max);
            return;
        }
        let input = match self.elems[node].pull_from(port) {
            PullFrom::Process => 0,
            PullFrom::ProcessInput(i) => i,
            PullFrom::Input(i) => {
                self.pull_input(node, i, batch, max);
                return;
            }
            PullFrom::Nothing => return,
        };
        // An agnostic or pull-through element: pull its input, then let it
        // process the batch; what it sends to `port` is the answer, what it
        // sends elsewhere is pushed on.
        let mut got = self.take_scratch();
        self.pull_input(node, input, &mut got, max);
        if got.is_empty() {
            self.put_scratch(got);
            return;
        }
        let mut ob = self.take_outbufs(node);
        let prev = self.acct_switch(node);
        let traced = if self.tracing {
            self.trace_enter(node, input, got.as_slice(), true)
        } else {
            None
        };
        let pass = {
            let OutBufs { bufs, spill } = &mut *ob;
            let mut out = Out::with_spill(bufs, spill, &self.pool, now, &mut self.ctrl);
            self.elems[node].push(input, &mut got, &mut out);
            out.passed()
        };
        if self.ctrl.pending {
            self.after_call(node, input, &mut got, &mut ob);
            self.resume(node, input, &mut ob);
        }
        // The answer: what was passed or emitted to `port`, as much as the
        // puller asked for room for. What does not fit (an element that
        // makes more packets than it was given) is pushed on like the
        // other ports' packets would be if `port` had a push connection:
        // it has none, so it is dropped there and charged to this element.
        if pass == Some(port) {
            batch.append(&mut got);
        }
        if let Some(b) = ob.bufs.get_mut(port) {
            batch.append(b);
        }
        let pass = pass.filter(|&p| p != port);
        if traced.is_some() {
            self.trace_left_from(node, port, &mut batch.as_mut_slice()[before..], false);
        }
        self.forward(node, pass, &mut got, &mut ob);
        if traced.is_some() {
            self.trace_exit(node, traced);
        }
        self.acct_switch(prev);
        self.outbufs[node] = Some(ob);
        self.put_scratch(got);
    }

    /// Answers a pull on `port` of an element that pulls its own inputs
    /// (schedulers, shapers), one packet at a time, stopping at the first
    /// empty answer as a Click puller does.
    fn pull_each(&mut self, node: usize, port: usize, batch: &mut Batch, max: usize) {
        let before = batch.len();
        let traced = if self.tracing {
            Some(self.trace_pull_frame(node))
        } else {
            None
        };
        // The element steps out of the table while it runs, so that its
        // input pulls can use the router.
        let mut elem = std::mem::replace(&mut self.elems[node], Box::new(Placeholder));
        self.out_of_table.push(node);
        let now = self.run_now;
        self.pull_one_seen = true;
        let prev = self.acct_switch(node);
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
        self.acct_switch(prev);
        self.elems[node] = elem;
        self.out_of_table.pop();
        if let Some(mut call) = traced {
            if let Some((_, ids)) = self.trace_frames.pop() {
                call.ids = ids;
            }
            if !call.ids.is_empty() {
                self.trace_left_from(node, port, &mut batch.as_mut_slice()[before..], false);
                self.trace_exit(node, Some(call));
            }
        }
        if self.out_of_table.is_empty() && !self.deferred.is_empty() {
            self.make_deferred_calls();
        }
    }

    // ---- accounting -------------------------------------------------------

    /// Charges the pool's allocations and frees to `node` from now on
    /// (every element call runs between two of these, so a nested call,
    /// such as an upstream pull inside a scheduler's call, is charged to
    /// itself); returns the element charged until now. One store.
    #[inline]
    fn acct_switch(&mut self, node: usize) -> usize {
        let prev = self.pool.set_owner(node);
        let now = self.pool.in_use();
        if let Some(n) = self.net.get_mut(prev) {
            *n += now as i64 - self.mark as i64;
        }
        self.mark = now;
        prev
    }

    /// Packets that arrived on input `port` of `node`: what the outputs
    /// connected to it sent (push), or what it pulled from its source.
    fn icount(&self, node: usize, port: usize) -> u64 {
        if let Some((src, sport)) = self.graph.in_conn[node].get(port).copied().flatten() {
            return self.ocount[self.ooff[src as usize] + sport as usize];
        }
        let me = Some((node as u32, port as u32));
        let mut n = 0;
        for (src, outs) in self.graph.out_conn.iter().enumerate() {
            for (p, c) in outs.iter().enumerate() {
                if *c == me {
                    n += self.ocount[self.ooff[src] + p];
                }
            }
        }
        n
    }

    /// An element's packet accounting (its `accounting` handler).
    pub fn accounting(&mut self, node: usize) -> Accounting {
        // Settle what the element being charged has done so far.
        let cur = self.acct_switch(0);
        self.acct_switch(cur);
        let n = &self.graph.nodes[node];
        let a = self.pool.account(node);
        Accounting {
            inputs: (0..n.ninputs).map(|p| self.icount(node, p)).collect(),
            outputs: self.ocount[self.ooff[node]..self.ooff[node] + n.noutputs].to_vec(),
            made: (self.net[node] + a.freed as i64) as u64,
            freed: a.freed,
            refused: a.refused,
            held: self.elems[node].held() as u64,
            lent: self.elems[node].lent(),
        }
    }

    /// Every element's counters (see [`ElementCounters`]), in
    /// configuration order: what the `counters` handler prints and the
    /// daemon exports. Reads no handler and formats no text.
    pub fn counters(&mut self) -> Vec<ElementCounters> {
        let mut c = pronto_elements::Counters::new();
        (0..self.graph.nodes.len())
            .map(|node| {
                c.clear();
                self.elems[node].counters(&mut c);
                let list = c.iter().collect();
                ElementCounters {
                    name: self.graph.nodes[node].name.clone(),
                    class: self.graph.nodes[node].class.name,
                    accounting: self.accounting(node),
                    unconnected: self.unconnected[node],
                    no_output: self.pool.account(node).no_output,
                    counters: list,
                }
            })
            .collect()
    }

    /// Checks that every packet is accounted for: each element's counts
    /// add up (`in + made == out + freed + held`), what the elements hold
    /// is exactly what the pool has handed out, and nothing was made or
    /// freed outside an element's call. Call it between runs (nothing in
    /// flight); the error lists every element whose counts do not add up.
    pub fn check_conservation(&mut self) -> Result<(), String> {
        let mut problems = Vec::new();
        let mut held = 0i64;
        for node in 0..self.graph.nodes.len() {
            let a = self.accounting(node);
            held += a.held as i64 + a.lent;
            if !a.balanced() {
                problems.push(format!(
                    "{} :: {}: in {:?} + made {} != out {:?} + freed {} + held {} + lent {}",
                    self.graph.nodes[node].name,
                    self.graph.nodes[node].class.name,
                    a.inputs,
                    a.made,
                    a.outputs,
                    a.freed,
                    a.held,
                    a.lent
                ));
            }
        }
        let in_use = self.pool.counters().in_use as i64;
        if in_use != held {
            problems.push(format!(
                "the pool has {in_use} packets out, the elements say they hold {held}"
            ));
        }
        let me = self.graph.nodes.len();
        let cur = self.acct_switch(me);
        self.acct_switch(cur);
        let freed = self.pool.account(me).freed;
        let made = (self.net[me] + freed as i64) as u64;
        if made != 0 || freed != 0 {
            problems.push(format!(
                "{made} packets made and {freed} freed outside any element"
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }

    // ---- tasks and driving ----------------------------------------------

    fn run_task(&mut self, t: usize) -> TaskStatus {
        let node = self.tasks[t].node;
        let now = self.run_now;
        let mut batch = self.take_scratch();
        let mut pulled_empty = false;
        self.pull_one_seen = false;
        let prev = self.acct_switch(node);
        if let Some((port, max)) = self.elems[node].task_pull(now) {
            if self.graph.in_conn[node]
                .get(port)
                .copied()
                .flatten()
                .is_some()
            {
                self.pull_input(node, port, &mut batch, max.min(BATCH_MAX));
                pulled_empty = batch.is_empty();
            }
        }
        let traced = if self.tracing && !batch.is_empty() {
            self.trace_enter(node, 0, batch.as_slice(), true)
        } else {
            None
        };
        self.tasks[t].pulled_empty = pulled_empty;
        self.tasks[t].pull_timed = pulled_empty && self.pull_one_seen;
        let mut ob = self.take_outbufs(node);
        let (status, pass) = {
            let OutBufs { bufs, spill } = &mut *ob;
            let mut out = Out::with_spill(bufs, spill, &self.pool, now, &mut self.ctrl);
            let s = self.elems[node].run_task(&mut batch, &mut out);
            (s, out.passed())
        };
        if self.ctrl.pending {
            self.after_call(node, 0, &mut batch, &mut ob);
            self.resume(node, 0, &mut ob);
        }
        self.forward(node, pass, &mut batch, &mut ob);
        if traced.is_some() {
            self.trace_exit(node, traced);
        }
        self.acct_switch(prev);
        self.outbufs[node] = Some(ob);
        self.put_scratch(batch);
        status
    }

    /// Runs until the driver stops: a stop request with no DriverManager to
    /// intercept it, the end of a driver script, or a `stop` instruction.
    pub fn run(&mut self) -> Result<(), String> {
        self.start_control_sockets();
        self.install_signal_handlers();
        // Click's driver loop: each round runs the ready tasks, then the
        // timers that are due (scripts, and tasks sleeping until a time,
        // which run in the next round). The scripts start in the first
        // timer phase, after the tasks' first run.
        let mut scripts_started = false;
        let mut rounds_busy: u32 = 0;
        // A task moved packets since the last idle round.
        let mut worked = false;
        while !self.stopped {
            // The clock is read once per round, and while the router is
            // busy only every 16th round: a clock read costs more than
            // moving a small batch, and timestamps a few microseconds
            // coarse are what Click's "recent time" gives too.
            if rounds_busy.is_multiple_of(16) {
                if !self.signal_flags.is_empty() {
                    self.process_signals();
                }
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
                if task.wake_at != i64::MIN {
                    // Waiting for its time (the timer phase readies it),
                    // unless its signal has just turned active.
                    let active = task.gate.as_ref().map(|g| g.active(&self.elems));
                    let woken = active.is_some_and(|a| a && !task.signal_was);
                    if let Some(a) = active {
                        self.tasks[t].signal_was = a;
                    }
                    if !woken {
                        next_wake = next_wake.min(self.tasks[t].wake_at);
                        continue;
                    }
                    self.tasks[t].wake_at = i64::MIN;
                }
                let task = &self.tasks[t];
                let mut signal = true;
                if let Some(g) = &task.gate {
                    let active = g.active(&self.elems);
                    let node = task.node;
                    let runs_anyway = self.elems[node].manages_signal() && !task.parked;
                    self.tasks[t].signal_was = active;
                    self.tasks[t].asleep = !active && !runs_anyway;
                    if active {
                        self.tasks[t].parked = false;
                    } else if !runs_anyway {
                        continue;
                    }
                    self.elems[node].set_signal(active);
                    signal = active;
                }
                let status = self.run_task(t);
                if !signal && status == TaskStatus::Idle {
                    self.tasks[t].parked = true;
                    self.tasks[t].asleep = true;
                }
                let task = &mut self.tasks[t];
                match status {
                    TaskStatus::Busy => {
                        busy = true;
                        worked = true;
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
            // Timers: time only moves when the clock is read. While tasks
            // are busy the timers are checked every 16 rounds; before an
            // idle wait always, so that the wait (or, under simulated time,
            // the jump to the next wake-up) never passes a timer.
            if !busy || rounds_busy.is_multiple_of(16) {
                if !scripts_started {
                    scripts_started = true;
                    for i in 0..self.scripts.len() {
                        let node = self.scripts[i];
                        self.step_script(node, false);
                    }
                    busy = true;
                }
                let now = self.run_now;
                for task in &mut self.tasks {
                    if !task.done && task.wake_at != i64::MIN && task.wake_at <= now {
                        task.wake_at = i64::MIN;
                        busy = true;
                    }
                }
                for k in 0..self.timers.len() {
                    let node = self.timers[k];
                    match self.elems[node].timer() {
                        Some(at) if at <= now => {
                            self.elems[node].run_timer(now);
                            self.check_quit_watcher(node);
                            self.check_progress_bar(node, false);
                            busy = true;
                        }
                        Some(at) => next_wake = next_wake.min(at),
                        None => {}
                    }
                }
                busy |= self.run_due_scripts(&mut next_wake);
            }
            if self.ctrl.stop_requests > 0 {
                self.handle_stops();
            }
            if self.stopped || busy {
                self.sim_creep = 0;
                rounds_busy = rounds_busy.wrapping_add(1);
                continue;
            }
            rounds_busy = 0;
            let now = self.now();
            if worked {
                worked = false;
                self.last_work = now;
            }
            let any_idle = self
                .tasks
                .iter()
                .any(|t| !t.done && !t.asleep && t.wake_at <= now);
            match self.clock {
                Clock::Simulated(_) => {
                    // A task that found nothing but stays scheduled (a
                    // puller whose queue's empty notifier has not gone to
                    // sleep yet) holds simulated time, as in Click, for a
                    // few rounds; then time moves on.
                    let spinning = self.tasks.iter().any(|t| {
                        !t.done && !t.asleep && t.wake_at <= now && t.idle_rounds < IDLE_SPIN
                    });
                    if spinning {
                        continue;
                    }
                    if any_idle {
                        // Tasks stay scheduled but find nothing: they poll
                        // on time (an unqueuer pulling through a shaper).
                        // Click's simulated clock moves a tick at every
                        // read, so such a graph advances there; here time
                        // creeps, by steps that double while nothing
                        // happens (a shaper's next packet is found in a
                        // few rounds, whatever its rate), never past the
                        // next timer.
                        self.sim_creep =
                            (self.sim_creep * 2).clamp(SIM_CREEP_MIN_NS, SIM_CREEP_MAX_NS);
                        let to = self.sim_now.saturating_add(self.sim_creep).min(next_wake);
                        self.sim_now = self.sim_now.max(to);
                    } else if next_wake != i64::MAX {
                        self.sim_now = self.sim_now.max(next_wake);
                    } else {
                        // Nothing can ever happen again.
                        self.stopped = true;
                    }
                }
                Clock::Real => {
                    if self.busy_poll && (any_idle || next_wake != i64::MAX) {
                        // Poll again at once: a frame is picked up within a
                        // round, not after a wake-up.
                        std::hint::spin_loop();
                    } else if any_idle
                        && within_poll_window(now, self.last_work, self.poll_window_ns)
                    {
                        // Packets moved a moment ago: more are likely
                        // soon (a reply, the rest of a burst). Poll again
                        // rather than pay a wake-up for them, but yield
                        // the CPU to whatever else is runnable on it (on
                        // a small machine that is often the process that
                        // makes the reply: a plain spin delayed it by the
                        // whole window).
                        self.idle_polls += 1;
                        std::thread::yield_now();
                    } else if self.wait_on_fds(now, next_wake) {
                        // Blocked until a descriptor was ready or a timer
                        // was due.
                        self.idle_sleeps += 1;
                    } else if next_wake == i64::MAX && !any_idle {
                        // Click would idle forever; so do we, cheaply.
                        self.idle_sleeps += 1;
                        self.idle_sleep(self.real_ns(FD_WAIT_MAX_NS));
                    } else {
                        let now = self.now();
                        let until = if any_idle { now + 20_000 } else { next_wake };
                        let d = (until - now).clamp(0, IDLE_SLEEP_MAX_NS);
                        if d > 0 {
                            self.idle_sleeps += 1;
                            self.idle_sleep(self.real_ns(d));
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
        for i in 0..self.elems.len() {
            self.check_progress_bar(i, true);
        }
        for i in 0..self.elems.len() {
            let prev = self.acct_switch(i);
            self.elems[i].cleanup();
            self.acct_switch(prev);
        }
        self.flush_output();
        match self.script_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// For a `ProgressBar` whose timer fired (or, at the end, one still
    /// drawing, which draws its last bar): reads the handlers it names and
    /// writes what it draws on standard error.
    fn check_progress_bar(&mut self, node: usize, at_end: bool) {
        use crate::progressbar::{foreground, sum_values, width, ProgressBar, Status, Values};
        let Some(pb) = self.elems[node]
            .as_any_mut()
            .and_then(|a| a.downcast_mut::<ProgressBar>())
        else {
            return;
        };
        if at_end {
            if pb.status != Status::Middle {
                return;
            }
            pb.status = Status::Done;
        } else if !pb.take_due() {
            return;
        }
        let size_names = if pb.needs_size() {
            pb.size_handlers.clone()
        } else {
            Vec::new()
        };
        let pos_names = pb.pos_handlers.clone();
        let mut read = |names: &[String]| -> Vec<Option<String>> {
            names
                .iter()
                .map(|n| {
                    let full = self.resolve_from(node, n);
                    self.read_handler(&full, "").ok()
                })
                .collect()
        };
        let size = sum_values(&read(&size_names));
        let pos = sum_values(&read(&pos_names));
        let values = Values {
            size,
            pos,
            foreground: foreground(),
            width: width(),
        };
        let now = self.run_now;
        let Some(pb) = self.elems[node]
            .as_any_mut()
            .and_then(|a| a.downcast_mut::<ProgressBar>())
        else {
            return;
        };
        if let Some(text) = pb.fire(&values, now) {
            use std::io::Write as _;
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes());
            let _ = err.flush();
        }
    }

    /// For a `QuitWatcher` whose period has come: asks the driver to stop
    /// if a watched element's task is no longer scheduled.
    fn check_quit_watcher(&mut self, node: usize) {
        let Some(q) = self.elems[node]
            .as_any_mut()
            .and_then(|a| a.downcast_mut::<crate::quitwatcher::QuitWatcher>())
        else {
            return;
        };
        if !q.take_due() {
            return;
        }
        let names = q.names.clone();
        for name in names {
            let full = self.resolve_from(node, &format!("{name}.scheduled"));
            let target = split_handler(&full).0.and_then(|e| self.find(e));
            let scheduled = target.and_then(|t| self.task_scheduled(t));
            if scheduled != Some(true) {
                self.ctrl.stop_requests += 1;
                self.handle_stops();
                return;
            }
        }
    }

    /// Registers a flag for every signal a SIGNAL script runs on (Click's
    /// `Master::add_signal_handler`), and puts the scripts on the list of
    /// handlers.
    fn install_signal_handlers(&mut self) {
        for i in 0..self.scripts.len() {
            let node = self.scripts[i];
            let signals = match self.script_mut(node) {
                Some(s) => s.signals().to_vec(),
                None => continue,
            };
            for signo in signals {
                if !self.signal_flags.iter().any(|(s, _)| *s == signo) {
                    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
                    match signal_hook::flag::register(signo, flag.clone()) {
                        Ok(_) => self.signal_flags.push((signo, flag)),
                        Err(e) => {
                            eprintln!(
                                "{}: cannot handle signal {signo}: {e}",
                                self.graph.nodes[node].name
                            );
                            continue;
                        }
                    }
                }
                self.signal_handlers.push((signo, node));
            }
        }
    }

    /// Runs the SIGNAL scripts of the signals that arrived (Click's
    /// `Master::process_signals`): each handler runs once per batch of
    /// arrivals and waits again only if its run ended at `end`. A signal
    /// with no handler left gets its default action (the process ends).
    fn process_signals(&mut self) {
        use std::sync::atomic::Ordering;
        for k in 0..self.signal_flags.len() {
            let (signo, flag) = (self.signal_flags[k].0, self.signal_flags[k].1.clone());
            if !flag.swap(false, Ordering::SeqCst) {
                continue;
            }
            let run: Vec<usize> = self
                .signal_handlers
                .iter()
                .filter(|(s, _)| *s == signo)
                .map(|&(_, n)| n)
                .collect();
            self.signal_handlers.retain(|(s, _)| *s != signo);
            if run.is_empty() {
                let _ = signal_hook::low_level::emulate_default_handler(signo);
                continue;
            }
            for node in run {
                let _ = self.drive_script(node, ScriptCall::Control("run", ""));
                if self.script_mut(node).is_some_and(|s| s.ended_at_end()) {
                    self.signal_handlers.push((signo, node));
                }
            }
            let handled = self.signal_handlers.iter().any(|(s, _)| *s == signo);
            if !handled && flag.swap(false, Ordering::SeqCst) {
                // It came again while its last handler gave up on it.
                let _ = signal_hook::low_level::emulate_default_handler(signo);
            }
        }
        if self.ctrl.stop_requests > 0 {
            self.handle_stops();
        }
    }

    /// Steps every script whose timer is due; lowers `next_wake` to the
    /// others' timers. True if a script ran.
    fn run_due_scripts(&mut self, next_wake: &mut i64) -> bool {
        let now = self.run_now;
        let mut ran = false;
        for i in 0..self.scripts.len() {
            let node = self.scripts[i];
            if let Some(at) = self.script_wake(node) {
                if at <= now {
                    self.step_script(node, false);
                    ran = true;
                } else {
                    *next_wake = (*next_wake).min(at);
                }
            }
        }
        if self.ctrl.stop_requests > 0 {
            self.handle_stops();
        }
        ran
    }

    /// When every idle task waits on a file descriptor or on other tasks,
    /// blocks in `poll` until a descriptor is ready or the next timer is
    /// due; false (nothing done) otherwise.
    fn wait_on_fds(&self, now: i64, next_wake: i64) -> bool {
        let idle = || {
            self.tasks
                .iter()
                .filter(|t| !t.done && !t.asleep && t.wake_at <= now)
        };
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
        let timeout = self.real_ns(timeout);
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
        // With SIGNAL scripts, wake often enough to run them promptly.
        let ns = if self.signal_flags.is_empty() {
            ns
        } else {
            ns.min(SIGNAL_POLL_NS)
        };
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

    /// Finishes an element call the element left to the runtime: its
    /// handler calls, then, for a packet `Script`, its packets (the batch
    /// that arrived on input `port`), each run through the script and put
    /// in the buffer of the output the script returns.
    #[cold]
    fn after_call(&mut self, node: usize, port: usize, batch: &mut Batch, ob: &mut OutBufs) {
        self.ctrl.pending = false;
        if !self.ctrl.calls.is_empty() {
            self.make_calls(node);
        }
        if batch.is_empty() || self.script_mut(node).is_none() {
            return;
        }
        for p in batch.drain() {
            let out = self.drive_packet(node, port);
            match out.filter(|&o| o < ob.bufs.len()) {
                Some(o) => ob.spill.emit(&mut ob.bufs, o, p),
                None => {
                    if let Some(s) = self.script_mut(node) {
                        s.count_drop();
                    }
                }
            }
        }
    }

    /// Runs a packet script for one packet that arrived on `port`; the
    /// output it chose, if any.
    fn drive_packet(&mut self, node: usize, port: usize) -> Option<usize> {
        let mut elem = std::mem::replace(&mut self.elems[node], Box::new(Placeholder));
        let out = match elem.as_any_mut().and_then(|a| a.downcast_mut::<Script>()) {
            Some(script) => {
                let mut env = RouterEnv {
                    router: self,
                    me: node,
                };
                script.run_packet(&mut env, port)
            }
            None => None,
        };
        self.elems[node] = elem;
        self.flush_output();
        out
    }

    /// Makes the handler calls element `node` asked for during its call
    /// (Click's `HandlerCall::call_write`), resolving element names
    /// relative to its compound. A failed call is reported and the run
    /// goes on.
    #[cold]
    fn make_calls(&mut self, node: usize) {
        let calls = std::mem::take(&mut self.ctrl.calls);
        for c in calls {
            let full = self.resolve_from(node, &c.handler);
            let target = split_handler(&full).0.and_then(|e| self.find(e));
            if target.is_some_and(|t| self.out_of_table.contains(&t)) {
                // The element is in the middle of its own call (a
                // scheduler pulling its inputs): the write waits until it
                // is back, as Click's would take effect on its next call.
                self.deferred.push((node, full, c.value));
                continue;
            }
            if let Err(e) = self.write_handler(&full, &c.value) {
                eprintln!("{}: {e}", self.graph.nodes[node].name);
            }
        }
    }

    #[cold]
    fn make_deferred_calls(&mut self) {
        for (node, full, value) in std::mem::take(&mut self.deferred) {
            if let Err(e) = self.write_handler(&full, &value) {
                eprintln!("{}: {e}", self.graph.nodes[node].name);
            }
        }
    }

    /// The full name of handler `handler` as element `node` means it:
    /// `ELEMENT.HANDLER` is looked up in `node`'s compound, then in each
    /// enclosing one, as Click resolves names.
    fn resolve_from(&self, node: usize, handler: &str) -> String {
        let Some((elem, h)) = handler.rsplit_once('.') else {
            return handler.to_string();
        };
        let mut prefix = self.graph.nodes[node].name.as_str();
        while let Some(k) = prefix.rfind('/') {
            prefix = &prefix[..k];
            let full = format!("{prefix}/{elem}");
            if self.find(&full).is_some() {
                return format!("{full}.{h}");
            }
        }
        handler.to_string()
    }

    /// After a handler write: Click's handlers reschedule their element's
    /// task (`active true`, `reset`), so a task that had ended runs again.
    fn reschedule(&mut self, node: usize) {
        for t in &mut self.tasks {
            if t.node == node {
                t.done = false;
                t.wake_at = i64::MIN;
            }
        }
    }

    /// The `scheduled` handler of a task: false once it has ended, while it
    /// sleeps on a notifier and while it waits for a timer.
    fn task_scheduled(&self, node: usize) -> Option<bool> {
        let t = self.tasks.iter().find(|t| t.node == node)?;
        let awake = t.gate.as_ref().is_none_or(|g| g.active(&self.elems));
        Some(!t.done && awake && t.wake_at == i64::MIN)
    }

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
            "icounts" | "ocounts" | "accounting" if !self.has_own_handler(node, h) => {
                let a = self.accounting(node);
                return Ok(match h {
                    "icounts" => a.inputs.iter().map(|n| format!("{n}\n")).collect(),
                    "ocounts" => a.outputs.iter().map(|n| format!("{n}\n")).collect(),
                    _ => a.to_string(),
                });
            }
            "scheduled" => {
                if let Some(s) = self.task_scheduled(node) {
                    return Ok(s.to_string());
                }
            }
            _ => {}
        }
        if h == "run" && self.script_mut(node).is_some() {
            return self
                .drive_script(node, ScriptCall::CallRun(params))
                .map_err(|m| CallError::Failed(full.to_string(), m));
        }
        let prev = self.acct_switch(node);
        let r = if params.is_empty() {
            self.elems[node].read_handler(h)
        } else {
            self.elems[node].read_handler(&format!("{h} {params}"))
        };
        self.acct_switch(prev);
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
                "trace" => {
                    self.trace = crate::trace::Tracer::arm(value)
                        .map_err(|m| CallError::Failed("trace".into(), m))?
                        .map(Box::new);
                    self.tracing = self.trace.is_some();
                    Ok(())
                }
                "timewarp" => {
                    let f = pronto_lang::args::parse_f64(value.trim())
                        .ok()
                        .filter(|f| *f > 0.0 && f.is_finite())
                        .ok_or_else(|| {
                            CallError::Failed(
                                "timewarp".into(),
                                "expected a positive real number".into(),
                            )
                        })?;
                    if matches!(self.clock, Clock::Real) {
                        self.set_timewarp(f);
                    }
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
        let prev = self.acct_switch(node);
        let r = self.elems[node]
            .write_handler(h, value)
            .map_err(|e| match e {
                HandlerError::NoSuchHandler(_) => {
                    CallError::NoHandler(elem.to_string(), h.to_string(), "write")
                }
                HandlerError::BadValue(m) => CallError::Failed(full.to_string(), m),
            });
        if r.is_ok() {
            // Packets the write released leave under the element's
            // accounting.
            self.emit_after_write(node);
        }
        self.acct_switch(prev);
        if r.is_ok() {
            self.reschedule(node);
            if self.elems[node].one_for_one() != self.one_for_one[node] {
                self.refresh_regions(node);
            }
            let reconf = self.elems[node]
                .handlers()
                .iter()
                .find(|x| x.name == h)
                .and_then(|x| x.reconfigure);
            if let Some(arg) = reconf {
                let n = &mut self.graph.nodes[node];
                n.config = reconfigured(&n.config, arg, value);
            }
        }
        r
    }

    /// Forwards the packets a write handler released
    /// ([`Element::after_write`]), in batches, until it has no more.
    fn emit_after_write(&mut self, node: usize) {
        loop {
            // Charged to the element: the last batch's pushes left the
            // accounting on whatever element they reached.
            self.acct_switch(node);
            let mut ob = self.take_outbufs(node);
            let mut batch = self.take_scratch();
            let (more, pass) = {
                let OutBufs { bufs, spill } = &mut *ob;
                let mut out =
                    Out::with_spill(bufs, spill, &self.pool, self.run_now, &mut self.ctrl);
                let more = self.elems[node].after_write(&mut out);
                (more, out.passed())
            };
            self.forward(node, pass, &mut batch, &mut ob);
            self.outbufs[node] = Some(ob);
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
            "flatconfig" => Ok(self.flatconfig()),
            "order" => Ok(self.order_report()),
            "trace" => Ok(match &self.trace {
                None => "trace: off\n".to_string(),
                Some(t) => {
                    let nodes = &self.graph.nodes;
                    t.report(&|n| format!("{} :: {}", nodes[n].name, nodes[n].class.name))
                }
            }),
            "counters" => Ok(self.counters().iter().map(|c| c.line() + "\n").collect()),
            // The text as written, unless it asked for compact_config.
            "config" if self.source_text.is_empty() => Ok(self.flatconfig()),
            "config" => Ok(self.source_text.clone()),
            "requirements" => Ok(self
                .requirements
                .iter()
                .map(|(k, v)| format!("{k}\n{v}\n"))
                .collect()),
            "driver" => Ok("userlevel".to_string()),
            "packages" => Ok(String::new()),
            "handlers" => Ok(GLOBAL_HANDLERS
                .iter()
                .map(|(n, m)| format!("{n}\t{m}\n"))
                .collect()),
            "classes" => Ok(all_classes()
                .iter()
                .map(|e| format!("{}\n", e.spec.name))
                .collect()),
            "now" => Ok(crate::script::click_timestamp(self.now())),
            "idle" => Ok(format!(
                "poll_window_ns {}\npolls {}\nsleeps {}\n",
                self.poll_window_ns, self.idle_polls, self.idle_sleeps
            )),
            "pool" => {
                let c = self.pool.counters();
                // `in_use`: the pool's own slots (what its limit bounds);
                // `in_port_slots`: packets living in a sandboxed
                // instance's port slots, received there and not copied.
                Ok(format!(
                    "slots {}\nlimit {}\nin_use {}\nrefused {}\nin_port_slots {}\n",
                    self.pool.capacity(),
                    self.pool.limit(),
                    c.in_use - c.in_ports,
                    c.refused,
                    c.in_ports
                ))
            }
            "timewarp" => Ok(match self.warp {
                Some(w) => crate::script::format_real(w.factor),
                None => "1".to_string(),
            }),
            _ => Err(CallError::NoHandler(String::new(), h.to_string(), "read")),
        }
    }

    fn has_own_handler(&self, node: usize, h: &str) -> bool {
        self.elems[node].handlers().iter().any(|x| x.name == h)
    }

    /// Click's `flatconfig`: the configuration as the router now has it
    /// (elements' configurations after reconfiguring writes).
    fn flatconfig(&self) -> String {
        if self.link.is_some() {
            // Several threads: the whole configuration, as built.
            return self.flat_text.clone();
        }
        let reqs: Vec<(&str, &str)> = self
            .requirements
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let decls: Vec<(&str, &str, &str)> = self
            .graph
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.class.name, n.config.as_str()))
            .collect();
        pronto_lang::unparse(&reqs, &decls, &self.conns)
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
        for h in ["icounts", "ocounts", "accounting"] {
            if !self.has_own_handler(node, h) {
                s.push_str(&format!("{h}\tr\n"));
            }
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

/// The configuration after a write to a handler that changes one argument
/// (Click's `reconfigure_keyword_handler`): `arg` is `"N KEYWORD"` (the
/// N-th positional argument or the keyword) or `"KEYWORD"`. A keyword
/// argument is replaced at the end; a positional one in place.
fn reconfigured(config: &str, arg: &str, value: &str) -> String {
    let (pos, kw) = match arg.split_once(' ') {
        Some((n, k)) => (n.parse::<usize>().ok(), k),
        None => (None, arg),
    };
    let mut args = pronto_lang::args::split_args(config);
    let before = args.len();
    args.retain(|a| pronto_lang::args::split_keyword(a).map(|(k, _)| k) != Some(kw));
    let found_kw = args.len() != before;
    let positional = pos.filter(|&p| {
        !found_kw
            && args
                .get(p)
                .is_some_and(|a| pronto_lang::args::split_keyword(a).is_none())
    });
    match positional {
        Some(p) => args[p] = value.to_string(),
        None => args.push(format!("{kw} {value}")),
    }
    args.join(", ")
}

/// Router time against real time: router time is `warped_base` plus the
/// real time since `real_base`, times `factor`.
#[derive(Clone, Copy, Debug)]
struct Warp {
    real_base: i64,
    warped_base: i64,
    factor: f64,
}

impl Warp {
    fn now(&self, real: i64) -> i64 {
        self.warped_base + ((real - self.real_base) as f64 * self.factor) as i64
    }
}

/// The global handlers and their modes, as the global `handlers` handler
/// lists them.
const GLOBAL_HANDLERS: &[(&str, &str)] = &[
    ("version", "r"),
    ("driver", "r"),
    ("config", "r"),
    ("flatconfig", "r"),
    ("requirements", "r"),
    ("handlers", "r"),
    ("list", "r"),
    ("classes", "r"),
    ("counters", "r"),
    ("trace", "rw"),
    ("packages", "r"),
    ("now", "r"),
    ("timewarp", "rw"),
    ("stop", "w"),
];

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
    fn input_active(&mut self, input: usize) -> bool {
        match self.router.input_gates[self.node].get(input) {
            Some(g) => g.active(&self.router.elems),
            None => true,
        }
    }

    fn pull_input(&mut self, input: usize) -> Option<pronto_packet::Packet> {
        let mut b = self.router.take_scratch();
        self.router.pull_input(self.node, input, &mut b, 1);
        if self.router.tracing && !b.is_empty() {
            self.router.trace_pulled_in(self.node, input, &b);
        }
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

    #[test]
    fn the_poll_window_counts_from_the_last_work() {
        // No work yet, or no window: sleep.
        assert!(!within_poll_window(5_000, i64::MIN, 100_000));
        assert!(!within_poll_window(5_000, 5_000, 0));
        // Within the window: poll again; at its end and after: sleep.
        assert!(within_poll_window(5_000, 5_000, 100_000));
        assert!(within_poll_window(104_999, 5_000, 100_000));
        assert!(!within_poll_window(105_000, 5_000, 100_000));
        assert!(!within_poll_window(i64::MAX, 5_000, 100_000));
    }
}
