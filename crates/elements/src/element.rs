//! The element contract: what every Click element in pronto declares and
//! implements.
//!
//! An element is configured once from its Click arguments, then called by
//! the runtime with batches of packets. It never calls another element: it
//! emits packets to numbered output ports through [`Out`], and the runtime
//! carries them along the connections. Elements never read a clock; the
//! runtime passes the current time in [`Out::now`].

use pronto_packet::{Batch, Packet, Pool};

use crate::args::{Args, ConfigError};

/// How an element's ports move packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Processing {
    /// Push: the upstream element hands packets over.
    Push,
    /// Pull: the downstream element asks for packets.
    Pull,
    /// Agnostic: push or pull, whichever the connection needs.
    Agnostic,
}

/// Static facts about an element class: Click's class name, port counts,
/// processing codes and documentation.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Click's class name, exactly.
    pub name: &'static str,
    /// Click's port-count code, such as `"1/1"`, `"1/1-"`, `"0/1"`, `"1/-"`,
    /// `"1-2/0"`.
    pub ports: &'static str,
    /// Click's processing code, such as `"a/a"`, `"h/h"`, `"h/l"`, `"a/ah"`:
    /// one letter per port, the last repeated for the rest.
    pub processing: &'static str,
    /// Keywords the element accepts (so that a positional value that looks
    /// like a keyword is not mistaken for one).
    pub keywords: &'static [&'static str],
    /// Documentation shown by `pronto elements CLASS`: usage, description,
    /// ports, arguments, handlers.
    pub doc: &'static str,
    /// What the element reads and writes of a packet (for chain analysis).
    pub profile: ActionProfile,
    /// Configure phase: elements are configured in increasing phase order
    /// (Click's `configure_phase`), so that an element whose arguments name
    /// another (a mapper, a pattern table, `AddressInfo`) finds it
    /// configured. See [`PHASE_INFO`] and [`PHASE_DEFAULT`].
    pub phase: u16,
}

/// Configure phase of elements that only provide information to others
/// (`AddressInfo`, `IPRewriterPatterns`, mappers).
pub const PHASE_INFO: u16 = 20;
/// Configure phase of ordinary elements.
pub const PHASE_DEFAULT: u16 = 100;

/// The packet fields an element reads and writes, and whether it may drop
/// or change headers (used by the parallel-chain analysis).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ActionProfile {
    /// Fields read (bit set of `FIELD_*`).
    pub reads: u8,
    /// Fields written.
    pub writes: u8,
    /// May drop packets.
    pub drops: bool,
    /// Adds or removes headers.
    pub reshapes: bool,
}

/// Source IP address field.
pub const FIELD_SRC_IP: u8 = 1;
/// Destination IP address field.
pub const FIELD_DST_IP: u8 = 2;
/// Source port field.
pub const FIELD_SRC_PORT: u8 = 4;
/// Destination port field.
pub const FIELD_DST_PORT: u8 = 8;
/// Payload.
pub const FIELD_PAYLOAD: u8 = 16;
/// Other header fields (TTL, checksum, link header, ...).
pub const FIELD_OTHER: u8 = 32;
/// The five-tuple.
pub const FIELDS_5TUPLE: u8 = FIELD_SRC_IP | FIELD_DST_IP | FIELD_SRC_PORT | FIELD_DST_PORT;

impl ActionProfile {
    /// Touches nothing.
    pub const NONE: ActionProfile = ActionProfile {
        reads: 0,
        writes: 0,
        drops: false,
        reshapes: false,
    };

    /// Reads `fields`.
    pub const fn reads(fields: u8) -> ActionProfile {
        ActionProfile {
            reads: fields,
            writes: 0,
            drops: false,
            reshapes: false,
        }
    }

    /// Also writes `fields`.
    pub const fn writes(mut self, fields: u8) -> ActionProfile {
        self.writes |= fields;
        self
    }

    /// May drop packets.
    pub const fn dropping(mut self) -> ActionProfile {
        self.drops = true;
        self
    }

    /// Adds or removes headers.
    pub const fn reshaping(mut self) -> ActionProfile {
        self.reshapes = true;
        self
    }
}

impl Spec {
    /// A spec with defaults: one agnostic input and output, no keywords.
    pub const fn new(name: &'static str) -> Spec {
        Spec {
            name,
            ports: "1/1",
            processing: "a/a",
            keywords: &[],
            doc: "",
            profile: ActionProfile::NONE,
            phase: PHASE_DEFAULT,
        }
    }

    /// Sets the configure phase.
    pub const fn phase(mut self, phase: u16) -> Spec {
        self.phase = phase;
        self
    }

    /// Sets the port-count code.
    pub const fn ports(mut self, ports: &'static str) -> Spec {
        self.ports = ports;
        self
    }

    /// Sets the processing code.
    pub const fn processing(mut self, p: &'static str) -> Spec {
        self.processing = p;
        self
    }

    /// Sets the accepted keywords.
    pub const fn keywords(mut self, k: &'static [&'static str]) -> Spec {
        self.keywords = k;
        self
    }

    /// Sets the documentation.
    pub const fn doc(mut self, d: &'static str) -> Spec {
        self.doc = d;
        self
    }

    /// Sets the action profile.
    pub const fn profile(mut self, p: ActionProfile) -> Spec {
        self.profile = p;
        self
    }

    /// Processing of input (`output == false`) or output port `port`.
    pub fn port_processing(&self, output: bool, port: usize) -> Processing {
        let code = self
            .processing
            .split('/')
            .nth(output as usize)
            .unwrap_or("a");
        let code = if code.is_empty() { "a" } else { code };
        let c = code
            .as_bytes()
            .get(port)
            .or_else(|| code.as_bytes().last())
            .copied()
            .unwrap_or(b'a');
        match c {
            b'h' => Processing::Push,
            b'l' => Processing::Pull,
            _ => Processing::Agnostic,
        }
    }

    /// The allowed (min, max) counts of inputs (`output == false`) or
    /// outputs; `max == usize::MAX` for "any number".
    pub fn port_range(&self, output: bool) -> (usize, usize) {
        let part = self.ports.split('/').nth(output as usize).unwrap_or("0");
        parse_range(part)
    }
}

fn parse_range(s: &str) -> (usize, usize) {
    let s = s.trim();
    if s == "-" {
        return (0, usize::MAX);
    }
    if let Some(lo) = s.strip_suffix('-') {
        return (lo.parse().unwrap_or(0), usize::MAX);
    }
    if let Some((lo, hi)) = s.split_once('-') {
        return (lo.parse().unwrap_or(0), hi.parse().unwrap_or(usize::MAX));
    }
    let n = s.parse().unwrap_or(0);
    (n, n)
}

/// What a configure function gets: the arguments and the graph around the
/// element.
pub struct ConfigCtx<'a> {
    /// The element's name in the flat configuration.
    pub name: &'a str,
    /// The raw configuration string.
    pub config: &'a str,
    /// Number of inputs the connections give it.
    pub ninputs: usize,
    /// Number of outputs the connections give it.
    pub noutputs: usize,
    /// Directory that relative file names resolve against.
    pub base_dir: &'a std::path::Path,
    /// Keywords declared by the class.
    pub keywords: &'static [&'static str],
    /// Which outputs are push (true) or pull (false), once resolved.
    pub output_push: &'a [bool],
    /// Which inputs are push (true) or pull (false), once resolved.
    pub input_push: &'a [bool],
    /// The elements configured before this one, by name.
    pub peers: &'a dyn Peers,
}

/// An object an element shares with the elements that name it in their
/// arguments (a mapper's state, a pattern table). Configuration happens on
/// one thread; the object is `Send + Sync` so that elements holding it can
/// later move to data-plane threads.
pub type Shared = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// Another element, as seen while configuring.
#[derive(Clone)]
pub struct Peer {
    /// Its full name in the flat configuration.
    pub name: String,
    /// Its class.
    pub class: &'static str,
    /// What it shares ([`Element::shared`]), if anything.
    pub shared: Option<Shared>,
}

/// Looks up elements configured earlier (lower configure phase, or the same
/// phase and earlier in the configuration).
pub trait Peers {
    /// The element called `name`, resolved Click's way: relative to the
    /// asking element's compound first, then each enclosing one.
    fn lookup(&self, name: &str) -> Option<Peer>;

    /// Every configured element of class `class`, in configuration order
    /// (for configuration-wide tables such as `IPRewriterPatterns`).
    fn of_class(&self, class: &str) -> Vec<Peer>;
}

/// No other elements (tests, stand-alone configuration).
pub struct NoPeers;

impl Peers for NoPeers {
    fn lookup(&self, _name: &str) -> Option<Peer> {
        None
    }

    fn of_class(&self, _class: &str) -> Vec<Peer> {
        Vec::new()
    }
}

impl<'a> ConfigCtx<'a> {
    /// The element's arguments, split Click's way.
    pub fn args(&self) -> Args {
        Args::new(self.config, self.keywords)
    }

    /// The element called `name`, if it is configured already.
    pub fn peer(&self, name: &str) -> Option<Peer> {
        self.peers.lookup(name)
    }

    /// The object shared by the element called `name`, downcast to `T`.
    /// Errors name the element and say what was expected.
    pub fn shared<T: std::any::Any + Send + Sync>(
        &self,
        name: &str,
        what: &str,
    ) -> Result<std::sync::Arc<T>, ConfigError> {
        let peer = self
            .peer(name)
            .ok_or_else(|| ConfigError::new(format!("no element named `{name}`")))?;
        peer.shared
            .and_then(|s| s.downcast::<T>().ok())
            .ok_or_else(|| {
                ConfigError::new(format!("`{}` is a {}, not {what}", peer.name, peer.class))
            })
    }

    /// Resolves a file name against the base directory.
    pub fn path(&self, name: &str) -> std::path::PathBuf {
        let p = std::path::Path::new(name);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base_dir.join(p)
        }
    }
}

/// Requests an element makes of the runtime while it runs.
#[derive(Default, Debug)]
pub struct Control {
    /// Calls to "please stop the driver" (Click's `router->please_stop_driver()`).
    pub stop_requests: u32,
    /// Lines the element wants printed on standard output (Script `print`,
    /// `Print` writes to standard error directly).
    pub stdout: Vec<String>,
}

/// Where an element puts the packets it emits during one call.
pub struct Out<'a> {
    bufs: &'a mut [Batch],
    pass: Option<usize>,
    /// The packet pool, for elements that make or copy packets.
    pub pool: &'a Pool,
    /// Current time in nanoseconds since the epoch (simulated or real).
    pub now: i64,
    /// Requests to the runtime.
    pub ctrl: &'a mut Control,
}

impl<'a> Out<'a> {
    /// Makes an emitter over per-output buffers.
    pub fn new(bufs: &'a mut [Batch], pool: &'a Pool, now: i64, ctrl: &'a mut Control) -> Self {
        Out {
            bufs,
            pass: None,
            pool,
            now,
            ctrl,
        }
    }

    /// Number of output ports.
    #[inline]
    pub fn noutputs(&self) -> usize {
        self.bufs.len()
    }

    /// Sends one packet to output `port`. A packet for a port that does not
    /// exist is dropped (Click's `checked_output_push`); a packet for a
    /// port whose buffer is full in this call is dropped too.
    #[inline]
    pub fn emit(&mut self, port: usize, p: Packet) {
        if let Some(b) = self.bufs.get_mut(port) {
            let _ = b.push(p);
        }
    }

    /// Says that what is left in the input batch after the call goes to
    /// output `port`, as a whole, without being copied.
    #[inline]
    pub fn pass(&mut self, port: usize) {
        self.pass = Some(port);
    }

    /// The port chosen by [`Out::pass`], if any.
    #[inline]
    pub fn passed(&self) -> Option<usize> {
        self.pass
    }

    /// Asks the driver to stop (Click's `please_stop_driver`).
    pub fn stop(&mut self) {
        self.ctrl.stop_requests += 1;
    }
}

/// What a task run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskStatus {
    /// Did work; run again soon.
    Busy,
    /// Had nothing to do; run again later (the runtime may back off).
    Idle,
    /// Nothing to do before this time (ns since the epoch).
    SleepUntil(i64),
    /// Never run again.
    Done,
}

/// A read or write handler an element offers.
#[derive(Clone, Copy, Debug)]
pub struct HandlerInfo {
    /// Click's handler name.
    pub name: &'static str,
    /// Readable.
    pub read: bool,
    /// Writable.
    pub write: bool,
}

impl HandlerInfo {
    /// A read-only handler.
    pub const fn read(name: &'static str) -> Self {
        HandlerInfo {
            name,
            read: true,
            write: false,
        }
    }
    /// A write-only handler.
    pub const fn write(name: &'static str) -> Self {
        HandlerInfo {
            name,
            read: false,
            write: true,
        }
    }
    /// A read/write handler.
    pub const fn rw(name: &'static str) -> Self {
        HandlerInfo {
            name,
            read: true,
            write: true,
        }
    }
}

/// Why a handler call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// No such handler on this element.
    #[error("no handler `{0}`")]
    NoSuchHandler(String),
    /// The value written was not acceptable.
    #[error("{0}")]
    BadValue(String),
}

/// A Click element.
///
/// The runtime calls [`Element::push`] with batches arriving on a push
/// input, [`Element::pull`] when a downstream element pulls from a pull
/// output that the element itself serves (queues), and
/// [`Element::run_task`] for elements that have a task (sources, `Unqueue`).
pub trait Element: std::any::Any {
    /// Processes a batch that arrived on input `port`. Packets left in
    /// `batch` go to the port chosen with [`Out::pass`], or are dropped if
    /// none was chosen; packets handed to [`Out::emit`] go to that port.
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let _ = port;
        let _ = out;
        batch.clear();
    }

    /// True if this element answers pulls on its outputs from its own
    /// storage (a queue) rather than by pulling its input and processing.
    fn is_pull_source(&self) -> bool {
        false
    }

    /// Serves a pull on output `port` from the element's own storage:
    /// appends up to `max` packets to `batch`.
    fn pull(&mut self, port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        let _ = (port, batch, max, out);
    }

    /// True if the element has a task the runtime must schedule.
    fn has_task(&self) -> bool {
        false
    }

    /// Before a task run: the input to pull from and how many packets, if
    /// the task wants pulled packets (`Unqueue`, a pull `ToDump`).
    fn task_pull(&mut self, now: i64) -> Option<(usize, usize)> {
        let _ = now;
        None
    }

    /// Runs the element's task. `batch` holds what was pulled (if
    /// [`Element::task_pull`] asked) and is otherwise empty; packets left
    /// in it go where [`Out::pass`] says.
    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let _ = (batch, out);
        TaskStatus::Done
    }

    /// Packets the element holds between calls (a queue's contents,
    /// fragments waiting for reassembly, packets waiting for an ARP reply
    /// or a merge). The runtime's conservation accounting (see
    /// ARCHITECTURE.md, "Conservation") requires every packet that enters
    /// an element to leave it, be counted as dropped, or be counted here:
    /// an element that keeps packets must report them.
    fn held(&self) -> usize {
        0
    }

    /// The element-specific handlers.
    fn handlers(&self) -> &'static [HandlerInfo] {
        &[]
    }

    /// Reads a handler.
    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        Err(HandlerError::NoSuchHandler(name.to_string()))
    }

    /// Writes a handler.
    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let _ = value;
        Err(HandlerError::NoSuchHandler(name.to_string()))
    }

    /// Called after each successful write handler call, for writes that
    /// release packets (Click's handlers may push packets:
    /// `AggregateIPFlows.clear` emits the fragments it held): the element
    /// emits up to one batch per output through `out`, and returns true
    /// while it has more to emit (the runtime calls again). Default:
    /// nothing to emit.
    fn after_write(&mut self, out: &mut Out<'_>) -> bool {
        let _ = out;
        false
    }

    /// Called once when the router stops, so that output files are
    /// flushed.
    fn cleanup(&mut self) {}

    /// For elements that answer a pull by choosing, packet by packet, which
    /// input to pull (schedulers, shapers: Click's `input(i).pull()`): the
    /// element as a [`PullOne`]. The runtime then serves pulls on its
    /// outputs one packet at a time through it.
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        None
    }

    /// The object this element shares with elements that name it (see
    /// [`Shared`]); `None` for most elements.
    fn shared(&self) -> Option<Shared> {
        None
    }

    /// For a task that reads or writes a file descriptor (`FromDevice`,
    /// `ToDevice`): what its next run waits for once it has reported
    /// [`TaskStatus::Idle`]. When every idle task waits on a descriptor
    /// (or on a queue that only other tasks fill), the runtime blocks in
    /// `poll` instead of spinning. `None` (the default): the runtime cannot
    /// tell, and keeps polling the task.
    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        None
    }

    /// For the runtime's own elements (Script, DriverManager).
    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        None
    }

    /// Click's hot-swap (`take_state`): when a running configuration is
    /// replaced, each element of the new one that has the same name and
    /// class as an element of the old one is handed the old element,
    /// after both are configured and before the new one runs, and takes
    /// over what Click's element would take (a queue's packets, a NAT's
    /// flows, an ARP table). Packets taken over must be moved into
    /// `ctx.pool` ([`Pool::adopt`]). Returns what moved, in a few words
    /// ("12 packets"), or `None` when nothing did.
    fn take_state(&mut self, old: &mut dyn Element, ctx: &TakeCtx<'_>) -> Option<String> {
        let _ = (old, ctx);
        None
    }
}

/// What [`Element::take_state`] gets besides the old element.
pub struct TakeCtx<'a> {
    /// The new configuration's packet pool.
    pub pool: &'a Pool,
    /// The new element's number of inputs.
    pub ninputs: usize,
    /// The new element's number of outputs.
    pub noutputs: usize,
}

/// The old element of a hot-swap as its concrete class, or `None` when it
/// is another class.
pub fn old_as<T: Element>(old: &mut dyn Element) -> Option<&mut T> {
    let any: &mut dyn std::any::Any = old;
    any.downcast_mut::<T>()
}

/// A file descriptor an idle task waits on (see [`Element::wait_fd`]).
#[derive(Clone, Copy, Debug)]
pub struct WaitFd<'a> {
    /// The descriptor.
    pub fd: std::os::fd::BorrowedFd<'a>,
    /// Wait until it is writable (a full transmit ring) rather than
    /// readable.
    pub writable: bool,
}

/// Pulls one packet from one of an element's inputs, as Click's
/// `input(i).pull()`: `None` when that input has nothing now.
pub trait PullInputs {
    /// Pulls one packet from input `input`.
    fn pull_input(&mut self, input: usize) -> Option<Packet>;

    /// Asks the driver to stop (Click's `please_stop_driver`), for a
    /// puller that finds its inputs exhausted (`TimeSortedSched(STOP
    /// true)`).
    fn stop_driver(&mut self) {}
}

/// An element that answers a pull on its output by pulling its inputs one
/// packet at a time (see [`Element::as_pull_one`]).
pub trait PullOne {
    /// Answers one pull on output `port` at time `now` (ns since the
    /// epoch); `None` when it has nothing to give now.
    fn pull_one(&mut self, port: usize, now: i64, inputs: &mut dyn PullInputs) -> Option<Packet>;
}

/// A configure function: builds an element from its arguments.
pub type Factory = fn(&ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError>;

/// One entry of the element registry.
#[derive(Clone, Copy)]
pub struct ClassEntry {
    /// The class's spec.
    pub spec: &'static Spec,
    /// Its configure function.
    pub factory: Factory,
}

/// The batch loop for elements whose logic is per packet: `f` returns
/// `Some(port)` to send the packet on or `None` to drop it (the element
/// counts its own drops). Packets bound for the same output as the batch's
/// first packet stay in the batch and move on without a copy; the others are
/// moved to their port's buffer.
#[inline]
pub fn push_each(
    batch: &mut Batch,
    out: &mut Out<'_>,
    mut f: impl FnMut(&mut Packet, &Pool) -> Option<usize>,
) {
    let pool = out.pool;
    let kept = batch.route(|p| f(p, pool), |port, p| out.emit(port, p));
    out.pass(kept.unwrap_or(0));
}
