//! Packet tracing (`pronto trace`, the global `trace` handler): the path of
//! the next N packets a source makes through the element graph, element by
//! element — the port each entered and left by, the bytes where an element
//! changed them, and where each ended (dropped, with the reason the
//! element counted; held; or consumed).
//!
//! Off, it costs the router one predictable branch per batch hop. Armed,
//! sources mark up to N packets that match the filter (a mark in the
//! packet's annotations that copies keep), and each hop records what the
//! marked packets in its batch did. Everything it keeps is bounded.

use std::fmt::Write as _;

use pronto_classify::FrameFilter;
use pronto_packet::Packet;

/// The most packets one trace follows.
pub const MAX_PACKETS: u32 = 1000;
/// The most steps kept of one packet's path.
const MAX_STEPS: usize = 64;
/// Bytes of a packet kept to see whether an element changed it, and
/// shown when one did.
const SNAP: usize = 96;

/// How a step ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Left {
    /// Still in the element's call.
    Pending,
    /// Left on this output.
    Port(usize),
    /// Ended in the element (see [`Step::why`]).
    Ended,
}

/// One element on a packet's path.
#[derive(Clone, Debug)]
struct Step {
    node: usize,
    /// The input it came in on (`None`: the element made or sent it
    /// without a recorded arrival: a source, a copy's second output).
    input: Option<usize>,
    pulled: bool,
    left: Left,
    /// Where it ended: the drop reasons the element counted, held, or
    /// consumed.
    why: String,
    /// The packet's bytes as it left, when the element changed them.
    changed: Option<(usize, Vec<u8>)>,
}

/// One traced packet.
#[derive(Clone, Debug, Default)]
struct Path {
    steps: Vec<Step>,
    /// Steps not kept (a path longer than [`MAX_STEPS`]: a loop).
    lost: u32,
    /// Its length and first bytes as last seen.
    len: usize,
    snap: Vec<u8>,
}

/// An armed trace.
pub(crate) struct Tracer {
    want: u32,
    filter: Option<(String, FrameFilter)>,
    paths: Vec<Path>,
}

/// An element call with marked packets in its batch: their marks, and the
/// element's drop counters and held count before the call.
pub(crate) struct Call {
    pub(crate) ids: Vec<u32>,
    pub(crate) drops: Vec<(&'static str, u64)>,
    pub(crate) held: usize,
}

impl Tracer {
    /// Parses the `trace` handler's value: `N [EXPR]`.
    pub(crate) fn arm(value: &str) -> Result<Option<Tracer>, String> {
        let v = value.trim();
        let (n, expr) = match v.split_once(char::is_whitespace) {
            Some((n, e)) => (n, e.trim()),
            None => (v, ""),
        };
        if n == "off" || n == "0" || n.is_empty() {
            return Ok(None);
        }
        let want: u32 = n
            .parse()
            .ok()
            .filter(|k| (1..=MAX_PACKETS).contains(k))
            .ok_or_else(|| {
                format!(
                    "trace: expected `N [FILTER]` with N packets, 1 to {MAX_PACKETS}, or `off`; \
                     found `{n}`"
                )
            })?;
        let filter = if expr.is_empty() {
            None
        } else {
            let f = FrameFilter::new(expr).map_err(|e| format!("trace filter: {}", e.message))?;
            Some((expr.to_string(), f))
        };
        Ok(Some(Tracer {
            want,
            filter,
            paths: Vec::new(),
        }))
    }

    fn path(&mut self, id: u32) -> Option<&mut Path> {
        self.paths.get_mut(id.checked_sub(1)? as usize)
    }

    fn push_step(&mut self, id: u32, step: Step) {
        if let Some(p) = self.path(id) {
            if p.steps.len() < MAX_STEPS {
                p.steps.push(step);
            } else {
                p.lost += 1;
            }
        }
    }

    /// A source's packets on their way out: marks packets while more are
    /// wanted.
    pub(crate) fn mark(&mut self, packets: &mut [Packet]) {
        for p in packets.iter_mut() {
            if self.paths.len() as u32 >= self.want {
                return;
            }
            if p.annotations().trace != 0 {
                continue;
            }
            if let Some((_, f)) = &self.filter {
                if !f.matches(p.data()) {
                    continue;
                }
            }
            self.paths.push(Path {
                len: p.len(),
                snap: p.data()[..p.len().min(SNAP)].to_vec(),
                ..Path::default()
            });
            p.annotations_mut().trace = self.paths.len() as u32;
        }
    }

    /// Marked packets leave `node` on `port` (`pulled`: given in answer
    /// to a pull by an element they had not entered in this call, such as
    /// a queue that held them).
    pub(crate) fn left(&mut self, node: usize, port: usize, packets: &[Packet], pulled: bool) {
        for p in packets {
            let id = p.annotations().trace;
            if id == 0 {
                continue;
            }
            let data = p.data();
            let Some(path) = self.path(id) else { continue };
            let changed = if path.len != data.len() || path.snap[..] != data[..data.len().min(SNAP)]
            {
                path.len = data.len();
                path.snap = data[..data.len().min(SNAP)].to_vec();
                Some((data.len(), path.snap.clone()))
            } else {
                None
            };
            let pending = path
                .steps
                .iter_mut()
                .rev()
                .find(|s| s.node == node && s.left == Left::Pending);
            match pending {
                Some(s) => {
                    s.left = Left::Port(port);
                    s.changed = changed;
                }
                None => self.push_step(
                    id,
                    Step {
                        node,
                        input: None,
                        pulled,
                        left: Left::Port(port),
                        why: String::new(),
                        changed,
                    },
                ),
            }
        }
    }

    /// Marked packets arrive at `node` on `input` (`pulled`: by a pull):
    /// their marks, when there are any.
    pub(crate) fn entered(
        &mut self,
        node: usize,
        input: usize,
        packets: &[Packet],
        pulled: bool,
    ) -> Option<Vec<u32>> {
        let ids: Vec<u32> = packets
            .iter()
            .map(|p| p.annotations().trace)
            .filter(|&id| id != 0)
            .collect();
        if ids.is_empty() {
            return None;
        }
        for &id in &ids {
            self.push_step(
                id,
                Step {
                    node,
                    input: Some(input),
                    pulled,
                    left: Left::Pending,
                    why: String::new(),
                    changed: None,
                },
            );
        }
        Some(ids)
    }

    /// After an element call and the sends of what it output: marked
    /// packets that entered it and did not leave ended in `node`; says how
    /// from the element's counters (`drops`, `held`: after the call).
    pub(crate) fn after(
        &mut self,
        node: usize,
        call: &Call,
        drops: &[(&'static str, u64)],
        held: usize,
        sink: bool,
    ) {
        let mut why = String::new();
        for (r, n) in drops {
            let b = call.drops.iter().find(|(x, _)| x == r).map_or(0, |x| x.1);
            if *n > b {
                let _ = write!(
                    why,
                    "{}dropped: {r}",
                    if why.is_empty() { "" } else { ", " }
                );
            }
        }
        if held > call.held {
            // Both in one call: which packet went which way is not known.
            why = if why.is_empty() {
                "held".into()
            } else {
                format!("held, or {why}")
            };
        }
        if why.is_empty() {
            why = if sink {
                // An element without outputs that counted no drop: it sent
                // or wrote the packet out (ToDevice, ToDump, a socket).
                "sent out".into()
            } else {
                "ended here, no drop counted (consumed, or made into another packet)".into()
            };
        }
        for &id in &call.ids {
            if let Some(p) = self.path(id) {
                if let Some(s) = p
                    .steps
                    .iter_mut()
                    .rev()
                    .find(|s| s.node == node && s.left == Left::Pending)
                {
                    s.left = Left::Ended;
                    s.why = why.clone();
                }
            }
        }
    }

    /// True while it has packets to mark or marked packets on the way.
    pub(crate) fn wants_more(&self) -> bool {
        (self.paths.len() as u32) < self.want
    }

    /// The report: each traced packet's path. `name(node)` names an
    /// element as `name :: Class`.
    pub(crate) fn report(&self, name: &dyn Fn(usize) -> String) -> String {
        let mut s = format!(
            "trace: {} of {} packets{}\n",
            self.paths.len(),
            self.want,
            self.filter
                .as_ref()
                .map(|(e, _)| format!(" matching `{e}`"))
                .unwrap_or_default()
        );
        for (i, p) in self.paths.iter().enumerate() {
            let _ = writeln!(s, "packet {}", i + 1);
            for st in &p.steps {
                let into = match (st.input, st.pulled) {
                    (Some(i), false) => format!("in {i}"),
                    (Some(i), true) => format!("in {i} (pulled)"),
                    // Given out in answer to a pull (a queue that held it).
                    (None, true) => "pulled".to_string(),
                    (None, false) => "made".to_string(),
                };
                let what = match &st.left {
                    Left::Pending => "in the element now".to_string(),
                    Left::Port(o) => format!("out {o}"),
                    Left::Ended => st.why.clone(),
                };
                let _ = writeln!(s, "  {:<32} {into} -> {what}", name(st.node));
                if let Some((len, bytes)) = &st.changed {
                    let hex: Vec<String> =
                        bytes.iter().take(64).map(|b| format!("{b:02x}")).collect();
                    let _ = writeln!(
                        s,
                        "  {:<32} changed: {len} bytes: {}{}",
                        "",
                        hex.join(""),
                        if *len > 64 { "..." } else { "" }
                    );
                }
            }
            if p.lost > 0 {
                let _ = writeln!(s, "  ... and {} more steps (a loop?)", p.lost);
            }
        }
        s
    }
}
