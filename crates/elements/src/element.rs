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
    /// Click's flow code (`"x/x"`, `"x/y"`, `"#/#"`, `"xy/[xy]x"`): which
    /// inputs' packets may leave on which outputs. Agnostic ports share a
    /// push/pull mode only where packets flow between them, and notifier
    /// searches follow the flow.
    pub flow: &'static str,
    /// Click's element flags: `"S0"` says the element makes no packets of
    /// its own (a notifier search that reaches it finds nothing to wait
    /// for), `"S1"` that it does.
    pub flags: &'static str,
    /// The element prints a line per packet (or otherwise makes per-packet
    /// output that can be seen): the runtime keeps Click's per-packet
    /// order between such elements.
    pub prints: bool,
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
            flow: "x/x",
            flags: "",
            prints: false,
        }
    }

    /// Sets the flow code (Click's `flow_code`).
    pub const fn flow(mut self, f: &'static str) -> Spec {
        self.flow = f;
        self
    }

    /// Sets the flags (Click's `flags`).
    pub const fn flags(mut self, f: &'static str) -> Spec {
        self.flags = f;
        self
    }

    /// Marks an element whose per-packet output can be seen (a printer).
    pub const fn printing(mut self) -> Spec {
        self.prints = true;
        self
    }

    /// True if packets arriving on input `input` may leave on output
    /// `output` (Click's `port_flow`).
    pub fn flows(&self, input: usize, output: usize) -> bool {
        flow_code_flows(self.flow, input, output)
    }
}

/// True if, under flow code `code` (Click's `x/y` notation), packets
/// arriving on input `input` may leave on output `output`.
pub fn flow_code_flows(code: &str, input: usize, output: usize) -> bool {
    let (ic, oc) = code.split_once('/').unwrap_or((code, code));
    let a = flow_port_class(ic, input);
    let b = flow_port_class(oc, output);
    match (a, b) {
        (Some(a), Some(b)) => a.meets(&b),
        _ => true,
    }
}

impl Spec {
    /// The value of flag `c` (`'S'` of `"S0"` is `Some(0)`); `None` when
    /// the class does not set it.
    pub fn flag(&self, c: char) -> Option<u32> {
        let mut it = self.flags.chars().peekable();
        while let Some(x) = it.next() {
            let mut digits = String::new();
            while let Some(d) = it.peek().filter(|d| d.is_ascii_digit()) {
                digits.push(*d);
                it.next();
            }
            if x == c {
                return Some(digits.parse().unwrap_or(1));
            }
        }
        None
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
    /// outputs; `max == usize::MAX` for "any number". An output count of
    /// `=` (`"-/="`: as many outputs as inputs) gives the input range.
    pub fn port_range(&self, output: bool) -> (usize, usize) {
        let part = self.ports.split('/').nth(output as usize).unwrap_or("0");
        if output && part.starts_with('=') {
            return self.port_range(false);
        }
        parse_range(part)
    }

    /// The numbers of inputs and outputs an element has when connections
    /// use `used_in` inputs and `used_out` outputs: each brought within
    /// the class's range; `=` outputs follow the inputs (`=+` one more),
    /// as Click's `notify_nports`.
    pub fn port_counts(&self, used_in: usize, used_out: usize) -> (usize, usize) {
        let (lo, hi) = self.port_range(false);
        let nin = used_in.clamp(lo, hi.max(lo));
        let out = self.ports.split('/').nth(1).unwrap_or("0");
        if let Some(plus) = out.strip_prefix('=') {
            return (nin, nin + plus.bytes().filter(|&c| c == b'+').count());
        }
        let (lo, hi) = self.port_range(true);
        (nin, used_out.clamp(lo, hi.max(lo)))
    }
}

/// One port's code in a flow code: a set of letters, maybe negated. `#`
/// stands for a letter of its own for every port number, so it is kept
/// with the port's number.
struct FlowClass {
    letters: Vec<(char, usize)>,
    negated: bool,
}

impl FlowClass {
    fn with_port(mut self, port: usize) -> FlowClass {
        for l in &mut self.letters {
            if l.0 == '#' {
                l.1 = port;
            }
        }
        self
    }

    fn has(&self, l: (char, usize)) -> bool {
        self.letters.contains(&l) != self.negated
    }

    /// True if some letter is in both classes.
    fn meets(&self, other: &FlowClass) -> bool {
        match (self.negated, other.negated) {
            (true, true) => true,
            (false, _) => self.letters.iter().any(|&l| other.has(l)),
            (true, false) => other.letters.iter().any(|&l| self.has(l)),
        }
    }
}

/// The class of port `port` in one side of a flow code: one token per
/// port, the last repeated.
fn flow_port_class(code: &str, port: usize) -> Option<FlowClass> {
    let mut tokens: Vec<FlowClass> = Vec::new();
    let mut it = code.chars();
    while let Some(c) = it.next() {
        if c == '[' {
            let mut letters = Vec::new();
            let mut negated = false;
            let mut first = true;
            for d in it.by_ref() {
                if d == ']' {
                    break;
                }
                if first && d == '^' {
                    negated = true;
                } else {
                    letters.push((d, 0));
                }
                first = false;
            }
            tokens.push(FlowClass { letters, negated });
        } else {
            tokens.push(FlowClass {
                letters: vec![(c, 0)],
                negated: false,
            });
        }
    }
    let n = tokens.len();
    if n == 0 {
        return None;
    }
    Some(tokens.swap_remove(port.min(n - 1)).with_port(port))
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

    /// Whether the configuration declares an element called `name`
    /// (resolved as [`Peers::lookup`] does), configured yet or not. An
    /// element that needs one declared later answers
    /// [`ConfigError::later`](crate::ConfigError::later).
    fn declared(&self, _name: &str) -> bool {
        false
    }
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

    /// Whether the configuration declares an element called `name`, even
    /// one not configured yet.
    pub fn declared(&self, name: &str) -> bool {
        self.peers.declared(name)
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

/// A write-handler call an element makes when something happens (Click's
/// `HandlerCall`: `COUNT_CALL 5 s.switch 1`, `END_CALL s0.run`): the
/// handler, `ELEMENT.HANDLER` or a global one such as `stop`, and the value
/// written. The runtime resolves the element name as Click does, relative
/// to the calling element's compound first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerCall {
    /// `ELEMENT.HANDLER`, or a global handler's name.
    pub handler: String,
    /// The value written (may be empty).
    pub value: String,
}

impl HandlerCall {
    /// Parses `HANDLER [VALUE]`. Errors say what was expected.
    pub fn parse(text: &str) -> Result<HandlerCall, String> {
        let t = text.trim();
        let end = t.find(|c: char| c.is_ascii_whitespace()).unwrap_or(t.len());
        let (h, v) = t.split_at(end);
        let h = pronto_lang::args::unquote(h);
        if h.is_empty() {
            return Err("expected `HANDLER [VALUE]`, found nothing".into());
        }
        if h.ends_with('.') || h.starts_with('.') && h.len() == 1 {
            return Err(format!("expected `ELEMENT.HANDLER`, found `{h}`"));
        }
        Ok(HandlerCall {
            handler: h,
            value: v.trim().to_string(),
        })
    }

    /// The global `stop` handler: stop the driver.
    pub fn is_stop(&self) -> bool {
        self.handler == "stop" && self.value.is_empty()
    }
}

impl std::fmt::Display for HandlerCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.value.is_empty() {
            f.write_str(&self.handler)
        } else {
            write!(f, "{} {}", self.handler, self.value)
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
    /// Handler calls to make as soon as the element's call returns, in
    /// order (before its packets move on).
    pub calls: Vec<HandlerCall>,
    /// The runtime has work to finish for the element's call before its
    /// packets move on: `calls` to make, or (for the runtime's own packet
    /// `Script`) the packets themselves to run through the script.
    pub pending: bool,
    /// After the calls, push the element again with an empty batch on the
    /// same input: it parked packets that wait for a call's effect
    /// ([`Out::call_and_resume`]).
    pub resume: bool,
}

/// Full output batches of one element call, kept in emission order until
/// the runtime forwards them (see [`Out::emit`]). The runtime keeps one per
/// element, so that after the first call that overflows a buffer nothing
/// is allocated again.
#[derive(Default)]
pub struct Spill {
    full: Vec<(usize, Box<Batch>)>,
    /// Boxed so that taking one moves a pointer, not 2 KiB.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<Batch>>,
    /// [`Out::emit_now`] was used: the batches go on in emission order
    /// across ports, not port by port.
    ordered: bool,
}

impl Spill {
    /// An empty spill area (allocates nothing until a buffer overflows).
    pub const fn new() -> Spill {
        Spill {
            full: Vec::new(),
            spare: Vec::new(),
            ordered: false,
        }
    }

    /// True when the batches must go on in emission order across ports
    /// (see [`Out::emit_now`]); reading it clears it.
    pub fn take_ordered(&mut self) -> bool {
        std::mem::take(&mut self.ordered)
    }

    /// True when no batch overflowed.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.full.is_empty()
    }

    /// Takes the overflowed batches, oldest first, with their ports; give
    /// each back with [`Spill::recycle`] once it has been sent on.
    pub fn take(&mut self) -> Vec<(usize, Box<Batch>)> {
        std::mem::take(&mut self.full)
    }

    /// Returns the (emptied) batches and the list [`Spill::take`] gave, for
    /// the next overflow.
    pub fn recycle(&mut self, mut list: Vec<(usize, Box<Batch>)>) {
        for (_, mut b) in list.drain(..) {
            b.clear();
            self.spare.push(b);
        }
        if self.full.is_empty() {
            self.full = list;
        }
    }

    /// Appends `p` to `bufs[port]`; a full buffer moves, whole, to this
    /// spill area first (the runtime forwards spilled batches before the
    /// buffer). `port` must be in range.
    #[inline]
    pub fn emit(&mut self, bufs: &mut [Batch], port: usize, p: Packet) {
        if let Err(p) = bufs[port].push(p) {
            self.overflow(bufs, port, p);
        }
    }

    #[cold]
    #[inline(never)]
    fn overflow(&mut self, bufs: &mut [Batch], port: usize, p: Packet) {
        let mut full = self.spare.pop().unwrap_or_else(|| Box::new(Batch::new()));
        std::mem::swap(&mut *full, &mut bufs[port]);
        self.full.push((port, full));
        // The buffer is empty now: this cannot fail.
        let _ = bufs[port].push(p);
    }

    /// Packets held, in all overflowed batches.
    pub fn len(&self) -> usize {
        self.full.iter().map(|(_, b)| b.len()).sum()
    }
}

enum SpillArea<'a> {
    Borrowed(&'a mut Spill),
    Owned(Spill),
}

/// Where an element puts the packets it emits during one call.
pub struct Out<'a> {
    bufs: &'a mut [Batch],
    pass: Option<usize>,
    spill: SpillArea<'a>,
    /// The packet pool, for elements that make or copy packets.
    pub pool: &'a Pool,
    /// Current time in nanoseconds since the epoch (simulated or real).
    pub now: i64,
    /// Requests to the runtime.
    pub ctrl: &'a mut Control,
}

impl<'a> Out<'a> {
    /// Makes an emitter over per-output buffers (overflowing batches are
    /// kept in an area of its own: see [`Out::spilled`]).
    pub fn new(bufs: &'a mut [Batch], pool: &'a Pool, now: i64, ctrl: &'a mut Control) -> Self {
        Out {
            bufs,
            pass: None,
            spill: SpillArea::Owned(Spill::new()),
            pool,
            now,
            ctrl,
        }
    }

    /// Makes an emitter whose overflowing batches go to `spill` (the
    /// runtime's, reused from call to call).
    pub fn with_spill(
        bufs: &'a mut [Batch],
        spill: &'a mut Spill,
        pool: &'a Pool,
        now: i64,
        ctrl: &'a mut Control,
    ) -> Self {
        Out {
            bufs,
            pass: None,
            spill: SpillArea::Borrowed(spill),
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

    /// Sends one packet to output `port`. An element may emit any number of
    /// packets in one call: when a port's buffer is full it moves, whole,
    /// to the spill area, and the runtime forwards the spilled batches
    /// before the buffer, in order. A packet for a port that does not exist
    /// is dropped (Click's `checked_output_push`), and the runtime counts it
    /// against the element (its `accounting` handler).
    #[inline]
    pub fn emit(&mut self, port: usize, p: Packet) {
        // No such output: dropped (Click's "to output 1 if it exists";
        // the element counts it under its own reason, as Click's does).
        if let Some(b) = self.bufs.get_mut(port) {
            if let Err(p) = b.push(p) {
                self.overflow(port, p);
            }
        }
    }

    /// Sends one packet to output `port` ahead of everything the element
    /// emits after it in this call, on any port (Click's element pushing
    /// it downstream at once, as ARPQuerier does its poll before the
    /// packet that caused it). What was emitted before keeps its place.
    #[cold]
    pub fn emit_now(&mut self, port: usize, p: Packet) {
        if port >= self.bufs.len() {
            return;
        }
        for k in 0..self.bufs.len() {
            if !self.bufs[k].is_empty() {
                self.move_to_spill(k);
            }
        }
        // Every buffer is empty now: this cannot fail.
        let _ = self.bufs[port].push(p);
        self.move_to_spill(port);
        match &mut self.spill {
            SpillArea::Borrowed(s) => s.ordered = true,
            SpillArea::Owned(s) => s.ordered = true,
        }
    }

    /// Moves output `port`'s buffer, whole, to the spill area.
    fn move_to_spill(&mut self, port: usize) {
        let spill = match &mut self.spill {
            SpillArea::Borrowed(s) => &mut **s,
            SpillArea::Owned(s) => s,
        };
        let mut full = spill.spare.pop().unwrap_or_else(|| Box::new(Batch::new()));
        std::mem::swap(&mut *full, &mut self.bufs[port]);
        spill.full.push((port, full));
    }

    #[cold]
    #[inline(never)]
    fn overflow(&mut self, port: usize, p: Packet) {
        let spill = match &mut self.spill {
            SpillArea::Borrowed(s) => &mut **s,
            SpillArea::Owned(s) => s,
        };
        let mut full = spill.spare.pop().unwrap_or_else(|| Box::new(Batch::new()));
        std::mem::swap(&mut *full, &mut self.bufs[port]);
        spill.full.push((port, full));
        // The buffer is empty now: this cannot fail.
        let _ = self.bufs[port].push(p);
    }

    /// The batches that overflowed during a call made with [`Out::new`]
    /// (none with [`Out::with_spill`]: those are in the runtime's area), in
    /// emission order; each batch's packets come before the port's buffer.
    pub fn spilled(&mut self) -> Vec<(usize, Box<Batch>)> {
        match &mut self.spill {
            SpillArea::Borrowed(_) => Vec::new(),
            SpillArea::Owned(s) => s.take(),
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

    /// The port chosen by [`Out::pass`], cleared (between the runs of
    /// [`Element::push_inputs`]).
    #[inline]
    pub(crate) fn take_pass(&mut self) -> Option<usize> {
        self.pass.take()
    }

    /// Asks the driver to stop (Click's `please_stop_driver`).
    pub fn stop(&mut self) {
        self.ctrl.stop_requests += 1;
    }

    /// Calls a write handler (Click's `HandlerCall::call_write`): the
    /// runtime makes the call when this element call returns, before the
    /// packets it emitted move on.
    #[cold]
    pub fn call(&mut self, c: &HandlerCall) {
        if c.is_stop() {
            self.stop();
        } else {
            self.ctrl.calls.push(c.clone());
            self.ctrl.pending = true;
        }
    }

    /// Calls a write handler whose effect the element needs before it can
    /// go on (Click's synchronous `call_write` in the middle of a batch,
    /// as `TimeFilter`'s `END_CALL`): the element keeps the packets it has
    /// not decided (counted by [`Element::held`]); when this call returns
    /// the runtime makes the call, then pushes the element again, with an
    /// empty batch on the same input, to finish them.
    #[cold]
    pub fn call_and_resume(&mut self, c: &HandlerCall) {
        self.call(c);
        self.ctrl.resume = true;
        self.ctrl.pending = true;
    }
}

/// See [`Element::pull_from`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullFrom {
    /// Pull input 0 and run the element's push logic on what came.
    Process,
    /// Pull this input and run the element's push logic on what came (as
    /// if it had been pushed to that input).
    ProcessInput(usize),
    /// Pull this input and hand the packets on unchanged.
    Input(usize),
    /// Answer nothing.
    Nothing,
}

/// Click's two kinds of notifier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifierKind {
    /// "Packets may be available": offered on pull outputs (a queue's
    /// output 0), listened to by pullers (`Unqueue`, a pull `Discard`).
    Empty,
    /// "Room is available": offered on push inputs (a queue's input),
    /// listened to by sources (`InfiniteSource`).
    Full,
}

/// How an element takes part in notification on one of its ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotifierRole {
    /// Not a notifier: a search for notifiers goes through it, along its
    /// flow code.
    None,
    /// A notifier whose signal is its own state ([`Element::signal`]
    /// ignores `upstream`): a queue. The search stops here.
    Signal,
    /// A notifier whose signal also depends on the signals found upstream
    /// of its inputs (`PullSwitch`, `DelayShaper`): the runtime passes
    /// them to [`Element::signal`]. The search stops here.
    Derived,
}

/// The notifier a task listens to (Click's `upstream_empty_signal` and
/// `downstream_full_signal`): the runtime does not run the task while the
/// signal found is inactive, and runs it again once it is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listen {
    /// The empty notifiers upstream of this pull input.
    UpstreamEmpty(usize),
    /// The full notifiers downstream of this push output.
    DownstreamFull(usize),
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
    /// A write changes one argument of the element's configuration
    /// (Click's `reconfigure_keyword_handler`): `"0 CAPACITY"` is the first
    /// positional argument or the `CAPACITY` keyword. After a successful
    /// write the runtime rewrites the `config` handler's text.
    pub reconfigure: Option<&'static str>,
}

impl HandlerInfo {
    /// A read-only handler.
    pub const fn read(name: &'static str) -> Self {
        HandlerInfo {
            name,
            read: true,
            write: false,
            reconfigure: None,
        }
    }
    /// A write-only handler.
    pub const fn write(name: &'static str) -> Self {
        HandlerInfo {
            name,
            read: false,
            write: true,
            reconfigure: None,
        }
    }
    /// A read/write handler.
    pub const fn rw(name: &'static str) -> Self {
        HandlerInfo {
            name,
            read: true,
            write: true,
            reconfigure: None,
        }
    }
    /// A read/write handler that reconfigures one argument (see
    /// [`HandlerInfo::reconfigure`]).
    pub const fn reconf(name: &'static str, arg: &'static str) -> Self {
        HandlerInfo {
            name,
            read: true,
            write: true,
            reconfigure: Some(arg),
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

/// What one of an element's counters counts (see [`Element::counters`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterKind {
    /// Packets (or bytes, records, events) the element counted as part of
    /// its work: `Counter`'s `count`, a queue's `highwater_length`.
    Count,
    /// Packets the element dropped, for the reason the counter names
    /// (`bad_checksum`, `queue_full`, `no_route`). What an operator adds up
    /// to find where packets are lost: every packet an element drops on
    /// purpose is in exactly one of its drop counters.
    Drop,
}

/// The counters one element reports (see [`Element::counters`]): each a
/// fixed name chosen by the element's class, a kind and a value. Names are
/// `snake_case` and `'static`, so that the set of series a monitoring
/// system sees is bounded by the configuration, never by traffic.
///
/// Drop reasons, shared across classes for the same cause:
/// - malformed: `too_short`, `too_short_for_addresses`, `bad_version`,
///   `bad_header_length`, `bad_length`, `bad_checksum`, `bad_source`,
///   `bad_header`, `bad_options`, `bad_hardware`, `bad_protocol`,
///   `wrong_protocol`, `malformed`, `not_ip`, `bad_fragment`, `too_long`;
/// - cannot process: `no_room`, `cannot_fragment`, `cannot_answer`,
///   `untranslatable`, `source_route`, `udp_zero_checksum`, `fragment`;
/// - routing and state: `ttl_expired`, `no_route`, `no_match`,
///   `filtered`, `no_mapping`, `ports_exhausted`, `table_full`,
///   `not_internal`, `not_prefix`, `unsupported`, `not_syn`,
///   `unsolicited`, `no_connection`, `invalid_state`, `nd_refused`,
///   `unresolved`, `unknown_target`, `bad_solicitation`,
///   `bad_advertisement`, `invalid`;
/// - policy: `queue_full`, `congestion`, `rate_limited`, `sampled_out`,
///   `simulated_loss`, `suppressed`, `not_selected`, `no_output`,
///   `discarded`, `broadcast`, `not_ecn_capable`, `replaced`, `not_first`,
///   `no_flow`, `no_aggregate`, `over_limit`, `unmergeable`, `untagged`,
///   `late`;
/// - input and output: `alloc_failed`, `send_failed`, `socket_full`,
///   `not_delivered`;
/// - added by the runtime: `unconnected`, `no_output`, `alloc_refused`.
#[derive(Debug, Default)]
pub struct Counters {
    list: Vec<(&'static str, CounterKind, u64)>,
}

impl Counters {
    /// An empty set.
    pub fn new() -> Counters {
        Counters::default()
    }

    /// Reports a counter of the element's work.
    pub fn count(&mut self, name: &'static str, value: u64) {
        self.list.push((name, CounterKind::Count, value));
    }

    /// Reports packets dropped for `reason`.
    pub fn drop(&mut self, reason: &'static str, value: u64) {
        self.list.push((reason, CounterKind::Drop, value));
    }

    /// Every counter reported, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, CounterKind, u64)> + '_ {
        self.list.iter().copied()
    }

    /// The drop counters, in order.
    pub fn drops(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.iter()
            .filter(|c| c.1 == CounterKind::Drop)
            .map(|(n, _, v)| (n, v))
    }

    /// The sum of the drop counters.
    pub fn dropped(&self) -> u64 {
        self.drops().map(|(_, v)| v).sum()
    }

    /// Empties the set, keeping its storage.
    pub fn clear(&mut self) {
        self.list.clear();
    }

    /// True when nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
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

    /// Packets the element has put into (positive) or taken out of
    /// (negative) a store it shares with other elements, net: an
    /// ARPQuerier naming an ARPTable parks packets in the shared table, and
    /// another querier may release them. The runtime's accounting adds it
    /// to `held`; over all elements the sum is what the shared stores hold.
    fn lent(&self) -> i64 {
        0
    }

    /// The most packets the element may hold at once, as configured (a
    /// queue's capacity): the runtime refuses, at set-up, a configuration
    /// whose elements may hold more packets than its packet pool's limit.
    /// 0: it holds none, or its holding is not bounded by a count.
    fn capacity(&self) -> usize {
        0
    }

    /// Messages the element has for the user after configuring (Click's
    /// `errh->message` and `errh->warning` in `configure`): each `(true,
    /// text)` is a warning, `(false, text)` a plain message. The runtime
    /// prints them with Click's `While configuring` context.
    fn config_messages(&mut self) -> Vec<(bool, String)> {
        Vec::new()
    }

    /// The notifier this element offers of kind `kind` on port `port`
    /// (an output for [`NotifierKind::Empty`], an input for
    /// [`NotifierKind::Full`]).
    fn notifier(&self, kind: NotifierKind, port: usize) -> NotifierRole {
        let _ = (kind, port);
        NotifierRole::None
    }

    /// The state of the notifier [`Element::notifier`] declares: true when
    /// active (packets may be available, room is available). `upstream(i)`
    /// is the signal found upstream of input `i`, for
    /// [`NotifierRole::Derived`] notifiers.
    fn signal(&self, kind: NotifierKind, port: usize, upstream: &dyn Fn(usize) -> bool) -> bool {
        let _ = (kind, port, upstream);
        true
    }

    /// The notifier the element's task listens to, if any.
    fn listens(&self) -> Option<Listen> {
        None
    }

    /// Before each task run of an element that [`Element::listens`]: the
    /// state of the signal it listens to (Click's `_signal`), for tasks
    /// whose decisions depend on it.
    fn set_signal(&mut self, active: bool) {
        let _ = active;
    }

    /// True for a listening task that decides itself what to do when its
    /// signal is inactive (it may still have timed work, as Click's
    /// `LinkUnqueue` does): the runtime runs it anyway, with
    /// [`Element::set_signal`] false, and parks it only when it then
    /// reports [`TaskStatus::Idle`]. Other listening tasks are not run at
    /// all while their signal is inactive.
    fn manages_signal(&self) -> bool {
        false
    }

    /// True if the element has a timer (Click's `Timer`): the runtime asks
    /// [`Element::timer`] when it fires next and calls
    /// [`Element::run_timer`] once it is due.
    fn has_timer(&self) -> bool {
        false
    }

    /// When the element's timer fires (ns since the epoch), if it is set.
    fn timer(&self) -> Option<i64> {
        None
    }

    /// The timer is due: the element clears or re-arms it.
    fn run_timer(&mut self, now: i64) {
        let _ = now;
    }

    /// Reports the element's counters and its drops by reason, for
    /// monitoring (`/metrics`, `pronto stats`, the `counters` handler):
    /// what its counting handlers show, as numbers under fixed names, with
    /// no text to parse. An element that drops packets reports each drop
    /// reason with [`Counters::drop`]; the runtime adds, for every element,
    /// the packets on its ports, what it holds, and the drops only it sees
    /// (`unconnected`: sent to an output with nothing connected;
    /// `no_output`: passed to an output the element does not have;
    /// `alloc_refused`: packets the pool refused it). Called between
    /// element calls, never on the packet path. Default: nothing.
    fn counters(&self, c: &mut Counters) {
        let _ = c;
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

    /// How the element answers a pull on output `port` when it is not a
    /// pull source: by pulling input 0 and processing the packets (the
    /// default), by pulling one chosen input and passing its packets on
    /// unchanged (`Bypass`, `PullSwitch`), or with nothing.
    fn pull_from(&mut self, port: usize) -> PullFrom {
        let _ = port;
        PullFrom::Process
    }

    /// For elements that answer a pull by choosing, packet by packet, which
    /// input to pull (schedulers, shapers: Click's `input(i).pull()`): the
    /// element as a [`PullOne`]. The runtime then serves pulls on its
    /// outputs one packet at a time through it.
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        None
    }

    /// Whether a push is one for one: each packet pushed in leaves on at
    /// most one output (or is dropped) during the same push, as the same
    /// packet (never a clone or a replacement), the element makes no
    /// packets, a packet it keeps leaves only when pulled (a queue), and it
    /// calls no handlers while pushed. Where every element after a split says so,
    /// the runtime keeps Click's packet order at the points where the
    /// split paths meet again instead of sending packets through one at a
    /// time. `false` (the default) is always safe.
    fn one_for_one(&self) -> bool {
        false
    }

    /// Pushes `batch`, whose packet `i` arrived on input `inputs[i]`: the
    /// runtime's call at a point where the paths of a split meet again
    /// ([`Element::one_for_one`]), the packets in the order they left the
    /// split. What the element passes or emits reaches `out` as pushing
    /// each run of packets from one input in turn would have sent it. The
    /// default does that; an element whose per-packet work takes the input
    /// as an argument does it in one pass.
    fn push_inputs(&mut self, inputs: &[u16], batch: &mut Batch, out: &mut Out<'_>) {
        let mut run = Batch::new();
        let mut rest = batch.drain().zip(inputs.iter().copied()).peekable();
        while let Some((p, port)) = rest.next() {
            let _ = run.push(p);
            if rest.peek().is_some_and(|&(_, next)| next == port) && !run.is_full() {
                continue;
            }
            self.push(port as usize, &mut run, out);
            match out.take_pass() {
                Some(k) => run.drain().for_each(|p| out.emit(k, p)),
                // Passed to no output: dropped, as the runtime drops it.
                None => run.clear(),
            }
        }
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

    /// Whether the notifiers upstream of input `input` say packets may be
    /// available (Click's `upstream_empty_signal`): a scheduler skips an
    /// input whose signal is inactive, as Click's do.
    fn input_active(&mut self, input: usize) -> bool {
        let _ = input;
        true
    }

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

#[cfg(test)]
mod tests {
    use super::*;
    use pronto_packet::Pool;

    fn one(pool: &Pool, b: u8) -> Packet {
        let mut p = pool.alloc().expect("pool has room");
        p.put_uninit(1)[0] = b;
        p
    }

    /// Passes each run to the output numbered as its input.
    struct ByInput;

    impl Element for ByInput {
        fn push(&mut self, port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
            out.pass(port);
        }
    }

    #[test]
    fn push_inputs_by_default_pushes_each_run_of_one_input_in_turn() {
        let pool = Pool::new(8).expect("pool");
        let mut bufs = [Batch::new(), Batch::new()];
        let mut spill = Spill::new();
        let mut ctrl = Control::default();
        let mut out = Out::with_spill(&mut bufs, &mut spill, &pool, 0, &mut ctrl);
        let mut batch = Batch::new();
        for b in 1..=5 {
            assert!(batch.push(one(&pool, b)).is_ok());
        }
        ByInput.push_inputs(&[0, 1, 1, 0, 1], &mut batch, &mut out);
        assert_eq!(out.passed(), None);
        assert!(batch.is_empty());
        let data = |b: &Batch| b.iter().map(|p| p.data()[0]).collect::<Vec<_>>();
        assert_eq!(data(&bufs[0]), [1, 4]);
        assert_eq!(data(&bufs[1]), [2, 3, 5]);
    }

    #[test]
    fn emit_now_keeps_emission_order_across_ports() {
        let pool = Pool::new(8).expect("pool");
        let mut bufs = [Batch::new(), Batch::new()];
        let mut spill = Spill::new();
        let mut ctrl = Control::default();
        let mut out = Out::with_spill(&mut bufs, &mut spill, &pool, 0, &mut ctrl);
        out.emit(0, one(&pool, 1));
        out.emit_now(1, one(&pool, 2));
        out.emit(0, one(&pool, 3));
        assert!(spill.take_ordered());
        assert!(!spill.take_ordered());
        let list = spill.take();
        let got: Vec<(usize, Vec<u8>)> = list
            .iter()
            .map(|(port, b)| (*port, b.iter().map(|p| p.data()[0]).collect()))
            .collect();
        assert_eq!(got, [(0, vec![1]), (1, vec![2])]);
        assert_eq!(bufs[0].iter().map(|p| p.data()[0]).collect::<Vec<_>>(), [3]);
        assert!(bufs[1].is_empty());
    }
}
