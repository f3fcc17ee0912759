//! `NFPMerge`: joins the versions of each packet of a parallel group.
//!
//! Packets carry the id [`super::nfptag::NfpTag`] gave them. The merger
//! keeps a window of ids (a ring indexed by id, no allocation per packet);
//! an id is settled when every input either delivered its version or has
//! moved past it (a branch keeps packets in order, so a later id from an
//! input means that input dropped the earlier one), or when its bounded
//! wait ends (counted: a lost version never stalls the chain). Settled ids
//! leave in id order, so the output order is the order of a sequential
//! chain.
//!
//! Settling: if some branch dropped the packet it is dropped, unless a
//! branch of strictly higher priority passed it. Otherwise the base is
//! input `BASE`'s version when it has one (the branch that added or removed
//! headers: the output has its layout), else the payload owner's, else the
//! original, else a full copy; and every
//! other branch's owned header fields are copied into it, each with the
//! incremental checksum update a network function writing that field makes
//! (RFC 1624), so the result equals the sequential chain's.

use pronto_packet::wire::{update_checksum16, update_checksum32};
use pronto_packet::{Batch, Packet, BATCH_MAX};

use super::{tag_of, Field, Layout, TCP, UDP};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, Spec,
    TaskStatus,
};

/// The most inputs (branches) a merger takes.
pub const MAX_INPUTS: usize = 32;

/// One input's version: what it is and which fields it owns.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Input {
    /// Carries a copy of the headers alone.
    header_only: bool,
    /// The original packet (not a copy).
    orig: bool,
    fields: Vec<Field>,
    priority: i32,
}

struct Entry {
    versions: Vec<Option<Packet>>,
    got: u32,
    /// When the first version arrived (0: none yet).
    seen_at: i64,
}

/// Merges packet versions (see [`NfpMerge::SPEC`]).
pub struct NfpMerge {
    inputs: Vec<Input>,
    /// The input whose version is the output's base when it delivered one
    /// (the branch that adds or removes headers: the output has its
    /// layout).
    base: Option<usize>,
    all: u32,
    offset: usize,
    timeout: i64,
    window: Vec<Entry>,
    mask: u32,
    started: bool,
    /// Some packet has been settled (sent or dropped): from then on a
    /// version older than the head is late.
    settled_any: bool,
    head: u32,
    next: u32,
    /// Per input: one past the highest id it delivered (valid when the
    /// input's bit is set in `heard`).
    last: Vec<u32>,
    heard: u32,
    head_since: i64,
    merged: u64,
    dropped: u64,
    timeouts: u64,
    unmergeable: u64,
    untagged: u64,
    late: u64,
}

/// `a` is after `b` in id order (ids wrap).
#[inline]
fn after(a: u32, b: u32) -> bool {
    let d = a.wrapping_sub(b);
    d != 0 && d < 1 << 31
}

impl NfpMerge {
    /// Click-style description of the class.
    pub const SPEC: Spec = Spec::new("NFPMerge")
        .ports("1-/1")
        .processing("h/h")
        .keywords(&["TIMEOUT", "WINDOW", "OFFSET", "PRIORITY", "BASE"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "NFPMerge(INPUT0, INPUT1, ... [, TIMEOUT, WINDOW, OFFSET, PRIORITY, BASE])\n\n\
             Joins the versions of each packet a parallel group's branches made (one\n\
             input per branch, packets tagged by NFPTag). Each INPUT is `KIND [FIELD...]`:\n\
             KIND is `orig`, `full` or `header` (what NFPCopy sent that branch), the\n\
             FIELDs (src_ip, dst_ip, src_port, dst_port, payload) are those the branch\n\
             owns: their value is taken from its version. A packet leaves when every\n\
             branch delivered its version or moved past it (a branch keeps order, so it\n\
             dropped it), or after TIMEOUT (default 10ms; counted), in id order. A\n\
             packet a branch dropped is dropped, unless a branch of strictly higher\n\
             PRIORITY (one integer per input, default all 0) passed it. The base is\n\
             input BASE's version when it has one (the branch that adds or removes\n\
             headers: the output has its layout), else the payload owner's, else the\n\
             original, else a full copy; header fields are copied into it with\n\
             incremental checksum updates (a version whose IPv4 header is not where\n\
             the base has it is counted unmergeable). IPv4 starts at OFFSET (default\n\
             14). WINDOW (default 4096, a power of two) bounds the\n\
             packets in flight.\n\n\
             Ports: 1 or more push inputs, 1 push output.\n\
             Handlers:\n  \
             merged (read)        packets merged and sent\n  \
             dropped (read)       packets a branch dropped\n  \
             timeouts (read)      packets settled by the bounded wait\n  \
             unmergeable (read)   packets whose versions did not line up (dropped)\n  \
             untagged (read)      packets without a tag (sent as they came)\n  \
             late (read)          versions that came after their packet left (dropped)\n  \
             pending (read)       packets waiting for versions",
        );

    /// Configures an `NFPMerge`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let timeout: Seconds = a.read_or("TIMEOUT", Seconds(0.010))?;
        let window: usize = a.read_or("WINDOW", 4096usize)?;
        let offset: usize = a.read_or("OFFSET", 14usize)?;
        let priority: Option<String> = a.read("PRIORITY")?;
        let base: Option<usize> = a.read("BASE")?;
        let specs = a.rest();
        a.finish()?;
        if specs.len() != ctx.ninputs {
            return Err(ConfigError::new(format!(
                "{} inputs need {} INPUT arguments, found {}",
                ctx.ninputs,
                ctx.ninputs,
                specs.len()
            )));
        }
        if specs.len() > MAX_INPUTS {
            return Err(ConfigError::new(format!(
                "at most {MAX_INPUTS} inputs, found {}",
                specs.len()
            )));
        }
        if !window.is_power_of_two() || !(2..=1 << 20).contains(&window) {
            return Err(ConfigError::new(format!(
                "WINDOW: a power of two from 2 to 1048576, found `{window}`"
            )));
        }
        let prios: Vec<i32> = match &priority {
            None => vec![0; specs.len()],
            Some(p) => {
                let v: Result<Vec<i32>, _> = p.split_whitespace().map(str::parse).collect();
                match v {
                    Ok(v) if v.len() == specs.len() => v,
                    _ => {
                        return Err(ConfigError::new(format!(
                            "PRIORITY: one integer per input ({}), found `{p}`",
                            specs.len()
                        )))
                    }
                }
            }
        };
        let mut inputs = Vec::new();
        let mut payload_owners = 0;
        for (i, s) in specs.iter().enumerate() {
            let mut words = s.split_whitespace();
            let kind = words.next().unwrap_or("");
            let (orig, header_only) = match kind {
                "orig" => (true, false),
                "full" => (false, false),
                "header" => (false, true),
                _ => {
                    return Err(ConfigError::new(format!(
                        "INPUT{i}: expected `orig`, `full` or `header` then fields, found `{s}`"
                    )))
                }
            };
            let mut fields = Vec::new();
            for w in words {
                let f = Field::parse(w).ok_or_else(|| {
                    ConfigError::new(format!(
                        "INPUT{i}: unknown field `{w}` (src_ip, dst_ip, src_port, dst_port, payload)"
                    ))
                })?;
                if f == Field::Payload {
                    if header_only {
                        return Err(ConfigError::new(format!(
                            "INPUT{i}: a header-only copy cannot own the payload"
                        )));
                    }
                    payload_owners += 1;
                }
                fields.push(f);
            }
            inputs.push(Input {
                header_only,
                orig,
                fields,
                priority: prios[i],
            });
        }
        if let Some(b) = base {
            match inputs.get(b) {
                None => {
                    return Err(ConfigError::new(format!(
                        "BASE: an input from 0 to {}, found `{b}`",
                        inputs.len() - 1
                    )))
                }
                Some(i) if i.header_only => {
                    return Err(ConfigError::new(format!(
                        "BASE: input {b} is a header-only copy, which cannot be the output's base"
                    )))
                }
                Some(i) => {
                    if let Some(k) = inputs
                        .iter()
                        .position(|x| x.fields.contains(&Field::Payload))
                        .filter(|&k| k != b && !i.fields.contains(&Field::Payload))
                    {
                        return Err(ConfigError::new(format!(
                            "BASE {b}: INPUT{k} owns the payload, which comes with the base \
                             version; make the base input {k}"
                        )));
                    }
                }
            }
        }
        if payload_owners > 1 {
            return Err(ConfigError::new(
                "the payload has one owner; found it given to several inputs",
            ));
        }
        let n = inputs.len();
        let window = (0..window)
            .map(|_| Entry {
                versions: (0..n).map(|_| None).collect(),
                got: 0,
                seen_at: 0,
            })
            .collect::<Vec<_>>();
        Ok(Box::new(NfpMerge {
            base,
            all: if n == 32 { u32::MAX } else { (1u32 << n) - 1 },
            inputs,
            offset,
            timeout: (timeout.0 * 1e9) as i64,
            mask: (window.len() - 1) as u32,
            window,
            started: false,
            settled_any: false,
            head: 0,
            next: 0,
            last: vec![0; n],
            heard: 0,
            head_since: 0,
            merged: 0,
            dropped: 0,
            timeouts: 0,
            unmergeable: 0,
            untagged: 0,
            late: 0,
        }))
    }

    /// True if input `k` has delivered or moved past id `id`.
    #[inline]
    fn passed(&self, k: usize, id: u32) -> bool {
        self.heard & (1 << k) != 0 && after(self.last[k], id)
    }

    fn settled(&self, id: u32) -> bool {
        let e = &self.window[(id & self.mask) as usize];
        (0..self.inputs.len()).all(|k| e.got & (1 << k) != 0 || self.passed(k, id))
    }

    /// Settles ids from the head while they are complete (or, with
    /// `force`, whatever waited past its bounded wait), emitting at most
    /// `room` packets. Returns packets emitted.
    fn drain(&mut self, out: &mut Out<'_>, now: i64, mut room: usize) -> usize {
        let mut emitted = 0;
        while self.head != self.next && room > 0 {
            let id = self.head;
            let complete = self.settled(id);
            if !complete {
                let e = &self.window[(id & self.mask) as usize];
                let since = if e.seen_at != 0 {
                    e.seen_at
                } else {
                    self.head_since
                };
                if now < since.saturating_add(self.timeout) {
                    break;
                }
                self.timeouts += 1;
            }
            if self.settle(id, out) {
                emitted += 1;
                room -= 1;
            }
            self.head = self.head.wrapping_add(1);
            self.head_since = now;
        }
        emitted
    }

    /// Decides packet `id` and emits it if it passes; true if emitted.
    fn settle(&mut self, id: u32, out: &mut Out<'_>) -> bool {
        self.settled_any = true;
        let slot = (id & self.mask) as usize;
        let got = self.window[slot].got;
        self.window[slot].got = 0;
        self.window[slot].seen_at = 0;
        let dropped = self.all & !got;
        let prio = |mask: u32| {
            (0..self.inputs.len())
                .filter(|&k| mask & (1 << k) != 0)
                .map(|k| self.inputs[k].priority)
                .max()
        };
        let verdict_pass = match (prio(got), prio(dropped)) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(p), Some(d)) => p > d,
        };
        if !verdict_pass {
            self.dropped += 1;
            self.clear(slot);
            return false;
        }
        // The base: BASE's version, else the payload owner's, else the
        // original, else the highest priority full copy.
        let present = |k: usize| got & (1 << k) != 0;
        let n = self.inputs.len();
        let base = self
            .base
            .filter(|&k| present(k))
            .or_else(|| {
                (0..n).find(|&k| present(k) && self.inputs[k].fields.contains(&Field::Payload))
            })
            .or_else(|| (0..n).find(|&k| present(k) && self.inputs[k].orig))
            .or_else(|| {
                (0..n)
                    .filter(|&k| present(k) && !self.inputs[k].header_only)
                    .max_by_key(|&k| self.inputs[k].priority)
            });
        let Some(base) = base else {
            self.unmergeable += 1;
            self.clear(slot);
            return false;
        };
        let Some(mut p) = self.window[slot].versions[base].take() else {
            self.unmergeable += 1;
            self.clear(slot);
            return false;
        };
        for k in 0..n {
            if k == base || !present(k) || self.inputs[k].fields.is_empty() {
                continue;
            }
            let Some(v) = self.window[slot].versions[k].as_ref() else {
                continue;
            };
            if !merge_fields(&mut p, v, &self.inputs[k].fields, self.offset) {
                self.unmergeable += 1;
                self.clear(slot);
                return false;
            }
        }
        self.clear(slot);
        self.merged += 1;
        out.emit(0, p);
        true
    }

    fn clear(&mut self, slot: usize) {
        for v in self.window[slot].versions.iter_mut() {
            *v = None;
        }
    }

    fn pending(&self) -> u32 {
        self.next.wrapping_sub(self.head)
    }
}

/// Copies `fields` of `v` into `p`, updating the checksums as a network
/// function writing them would. False when the two do not line up.
fn merge_fields(p: &mut Packet, v: &Packet, fields: &[Field], offset: usize) -> bool {
    let (Some(lp), Some(lv)) = (Layout::of(p.data(), offset), Layout::of(v.data(), offset)) else {
        return false;
    };
    if lp != lv {
        return false;
    }
    let l = lp;
    let src = v.data();
    let d = p.data_mut();
    // The transport checksum, when the packet has one in use (UDP's 0
    // means none).
    let l4c = l
        .l4_checksum()
        .filter(|&c| l.proto == TCP || (l.proto == UDP && (d[c] != 0 || d[c + 1] != 0)));
    for &f in fields {
        match f {
            Field::SrcIp | Field::DstIp => {
                let at = l.ip + if f == Field::SrcIp { 12 } else { 16 };
                let old: [u8; 4] = [d[at], d[at + 1], d[at + 2], d[at + 3]];
                let new: [u8; 4] = [src[at], src[at + 1], src[at + 2], src[at + 3]];
                if old == new {
                    continue;
                }
                d[at..at + 4].copy_from_slice(&new);
                let ic = l.ip + 10;
                let c = update_checksum32(u16::from_be_bytes([d[ic], d[ic + 1]]), old, new);
                d[ic..ic + 2].copy_from_slice(&c.to_be_bytes());
                if let Some(tc) = l4c {
                    let c = update_checksum32(u16::from_be_bytes([d[tc], d[tc + 1]]), old, new);
                    d[tc..tc + 2].copy_from_slice(&udp_zero(l.proto, c).to_be_bytes());
                }
            }
            Field::SrcPort | Field::DstPort => {
                if !l.has_ports() {
                    continue;
                }
                let at = l.l4 + if f == Field::SrcPort { 0 } else { 2 };
                let old = u16::from_be_bytes([d[at], d[at + 1]]);
                let new = u16::from_be_bytes([src[at], src[at + 1]]);
                if old == new {
                    continue;
                }
                d[at..at + 2].copy_from_slice(&new.to_be_bytes());
                if let Some(tc) = l4c {
                    let c = update_checksum16(u16::from_be_bytes([d[tc], d[tc + 1]]), old, new);
                    d[tc..tc + 2].copy_from_slice(&udp_zero(l.proto, c).to_be_bytes());
                }
            }
            // The payload comes with the base version.
            Field::Payload => {}
        }
    }
    true
}

/// A computed UDP checksum of 0 is sent as 0xffff (0 means "none").
#[inline]
fn udp_zero(proto: u8, c: u16) -> u16 {
    if proto == UDP && c == 0 {
        0xffff
    } else {
        c
    }
}

impl Element for NfpMerge {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        let mut room = BATCH_MAX;
        for p in batch.drain() {
            let Some((_, id)) = tag_of(&p) else {
                self.untagged += 1;
                if room > 0 {
                    room -= 1;
                    out.emit(0, p);
                }
                continue;
            };
            if !self.started {
                self.started = true;
                self.head = id;
                self.next = id;
                self.head_since = now;
            }
            if after(self.head, id) {
                if self.settled_any || self.next.wrapping_sub(id) > self.mask {
                    self.late += 1;
                    continue;
                }
                // Nothing has left yet: one branch's first versions may
                // come after another's later ones (a branch slower to
                // start), so the window starts earlier.
                self.head = id;
            }
            // Make room in the window: settle the oldest, whatever they
            // wait for.
            while id.wrapping_sub(self.head) > self.mask {
                if room == 0 {
                    break;
                }
                if self.settle(self.head, out) {
                    room -= 1;
                }
                self.timeouts += 1;
                self.head = self.head.wrapping_add(1);
                self.head_since = now;
            }
            if id.wrapping_sub(self.head) > self.mask {
                self.late += 1;
                continue;
            }
            if !after(self.next, id) {
                self.next = id.wrapping_add(1);
            }
            let k = port;
            let e = &mut self.window[(id & self.mask) as usize];
            if e.got & (1 << k) != 0 {
                self.late += 1;
                continue;
            }
            e.got |= 1 << k;
            if e.seen_at == 0 {
                e.seen_at = now.max(1);
            }
            e.versions[k] = Some(p);
            if self.heard & (1 << k) == 0 || !after(self.last[k], id) {
                self.last[k] = id.wrapping_add(1);
                self.heard |= 1 << k;
            }
        }
        self.drain(out, now, room);
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        let emitted = self.drain(out, now, BATCH_MAX);
        if self.head == self.next {
            return TaskStatus::SleepUntil(now.saturating_add(self.timeout.max(1_000_000)));
        }
        if emitted == BATCH_MAX {
            return TaskStatus::Busy;
        }
        TaskStatus::SleepUntil(now.saturating_add((self.timeout / 4).max(100_000)))
    }

    fn held(&self) -> usize {
        self.window
            .iter()
            .map(|e| e.versions.iter().filter(|v| v.is_some()).count())
            .sum()
    }

    fn capacity(&self) -> usize {
        self.window.len() * self.inputs.len()
    }

    fn counters(&self, c: &mut crate::Counters) {
        // Per packet of the original stream (each one's copies are freed).
        c.drop("filtered", self.dropped);
        c.drop("unmergeable", self.unmergeable);
        c.drop("untagged", self.untagged);
        c.drop("late", self.late);
        c.count("merged", self.merged);
        c.count("timeouts", self.timeouts);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("merged"),
            HandlerInfo::read("dropped"),
            HandlerInfo::read("timeouts"),
            HandlerInfo::read("unmergeable"),
            HandlerInfo::read("untagged"),
            HandlerInfo::read("late"),
            HandlerInfo::read("pending"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        Ok(match name {
            "merged" => self.merged.to_string(),
            "dropped" => self.dropped.to_string(),
            "timeouts" => self.timeouts.to_string(),
            "unmergeable" => self.unmergeable.to_string(),
            "untagged" => self.untagged.to_string(),
            "late" => self.late.to_string(),
            "pending" => self.pending().to_string(),
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        })
    }
}
