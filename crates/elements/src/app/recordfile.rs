//! The record-independent part of Click's binary trace readers (`FromDump`,
//! `FromDAGDump`, `FromNLANRDump`): the mapped file and its check-only
//! path, START/END/INTERVAL, END_CALL and STOP, SAMPLE, TIMING, ACTIVE,
//! push or pull output, and the handlers they share. A [`RecordFormat`]
//! finds the records of one file format; [`RecordSource`] does the rest.

use pronto_packet::mmap::MappedFile;
use pronto_packet::{Batch, Packet, Pool, BATCH_MAX, EXTRA_LENGTH_ANNO_OFFSET, MAX_PACKET};

use super::pcap;
use super::tracetext::{unparse_fixed, SAMPLING_ONE};
use crate::args::Args;
use crate::util::cfg_err;
use crate::{
    ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, TaskStatus,
    TimestampArg,
};

/// One record found by a [`RecordFormat`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Timestamp, nanoseconds since the epoch.
    pub ts: i64,
    /// File offset of the packet bytes.
    pub start: usize,
    /// Number of packet bytes in the file.
    pub caplen: usize,
    /// Length on the wire (more than `caplen` sets the extra length
    /// annotation).
    pub len: usize,
    /// File offset of the next record.
    pub next: usize,
    /// Link type of the packet bytes (pcap DLT numbering).
    pub dlt: i32,
    /// Paint annotation to set, if the format records one.
    pub paint: Option<u8>,
}

/// What a [`RecordFormat`] found at a file position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A whole record.
    Record(Record),
    /// The clean end of the file.
    End,
    /// A malformed record: the read stops. `to_end` moves the file
    /// position to the end of the file.
    Bad {
        /// What is wrong, for the error message.
        what: &'static str,
        /// Whether the position moves to the end of the file.
        to_end: bool,
    },
}

/// A binary trace file format.
pub trait RecordFormat: Send + 'static {
    /// Handlers of the element reading this format.
    const HANDLERS: &'static [HandlerInfo];

    /// The record at file offset `pos` of `data`.
    fn record(&mut self, data: &[u8], pos: usize) -> Step;

    /// The link type the `encap` handler reports.
    fn linktype(&self) -> i32;

    /// Whether records of this file can go through [`RecordFormat::fill_plain`].
    fn plain_ok(&self) -> bool {
        false
    }

    /// A fast path for plain records (no timing, sampling, time window or
    /// FORCE_IP): reads whole records from `pos` into `batch`, up to `max`,
    /// stopping at anything unusual; returns how many, and (the position
    /// after them, the position of the last one). Only called when
    /// [`RecordFormat::plain_ok`] is true.
    fn fill_plain(
        &self,
        _data: &[u8],
        pos: usize,
        _batch: &mut Batch,
        _max: usize,
        _pool: &Pool,
    ) -> (usize, (usize, usize)) {
        (0, (pos, pos))
    }

    /// Last look at a packet before it is emitted; false sends it to
    /// output 1 (or drops it there).
    fn finish(&self, _p: &mut Packet) -> bool {
        true
    }
}

/// What happens at the end of the trace (or when END is reached).
#[derive(Clone, Debug, PartialEq, Eq)]
enum EndAction {
    /// Nothing (no END time, no STOP, no END_CALL).
    Nothing,
    /// Deactivate and ask the driver to stop (`STOP true`, `END_CALL x.stop`).
    Stop,
    /// Deactivate (`END_CALL x.active false`, the default with END times).
    Deactivate,
    /// A handler call pronto's trace readers cannot make.
    Other(String),
}

/// Why a fill stopped.
enum Fill {
    /// Filled as much as was asked (or the pool ran dry).
    More,
    /// The next packet is due at this time (TIMING).
    Sleep(i64),
    /// The trace is over (end of file, bad record, or END reached).
    End,
}

/// The keyword arguments every trace reader shares, parsed.
pub struct Options {
    timing: bool,
    active: bool,
    sample: u32,
    /// FORCE_IP as given.
    pub force_ip: bool,
    first_time: i64,
    have_first_time: bool,
    first_relative: bool,
    last_time: i64,
    have_last_time: bool,
    last_relative: bool,
    last_interval: bool,
    end_action: EndAction,
    burst: usize,
}

fn seconds_ns(s: f64) -> i64 {
    (s * 1e9).round() as i64
}

impl Options {
    /// Reads STOP, ACTIVE, SAMPLE, FORCE_IP, START, START_AFTER, END,
    /// END_AFTER, INTERVAL and END_CALL from `a`; `timing` is TIMING,
    /// read by the caller (FromDump takes it positionally).
    pub fn read(ctx: &ConfigCtx<'_>, a: &mut Args, timing: bool) -> Result<Options, ConfigError> {
        let stop = a.read_or("STOP", false)?;
        let active = a.read_or("ACTIVE", true)?;
        let sample: f64 = a.read_or("SAMPLE", 1.0)?;
        let force_ip = a.read_or("FORCE_IP", false)?;
        let start: Option<TimestampArg> = a.read("START")?;
        let start_after: Option<Seconds> = a.read("START_AFTER")?;
        let end: Option<TimestampArg> = a.read("END")?;
        let end_after: Option<Seconds> = a.read("END_AFTER")?;
        let interval: Option<Seconds> = a.read("INTERVAL")?;
        let end_call: Option<String> = a.read("END_CALL")?;

        if sample.is_nan() || sample < 0.0 {
            return Err(cfg_err("SAMPLE: expected unsigned real number"));
        }
        let mut sample_fx = (sample * SAMPLING_ONE as f64).round().min(u32::MAX as f64) as u32;
        if sample_fx > SAMPLING_ONE {
            eprintln!("{}: SAMPLE probability reduced to 1", ctx.name);
            sample_fx = SAMPLING_ONE;
        } else if sample_fx == 0 {
            eprintln!("{}: SAMPLE probability is 0; emitting no packets", ctx.name);
        }

        let nonzero = |t: &Option<i64>| t.is_some_and(|v| v != 0);
        let start = start.map(|t| t.0);
        let start_after = start_after.map(|s| seconds_ns(s.0));
        let end = end.map(|t| t.0);
        let end_after = end_after.map(|s| seconds_ns(s.0));
        let interval = interval.map(|s| seconds_ns(s.0));
        let (mut first_time, mut have_first_time, mut first_relative) = (0, true, false);
        if nonzero(&start) as u8 + nonzero(&start_after) as u8 > 1 {
            return Err(cfg_err("START and START_AFTER are mutually exclusive"));
        } else if let Some(t) = start.filter(|&t| t != 0) {
            first_time = t;
        } else if let Some(t) = start_after.filter(|&t| t != 0) {
            first_time = t;
            first_relative = true;
        } else {
            have_first_time = false;
            first_relative = true;
        }
        let (mut last_time, mut have_last_time, mut last_relative, mut last_interval) =
            (0, true, false, false);
        if nonzero(&end) as u8 + nonzero(&end_after) as u8 + nonzero(&interval) as u8 > 1 {
            return Err(cfg_err(
                "END, END_AFTER, and INTERVAL are mutually exclusive",
            ));
        } else if let Some(t) = end.filter(|&t| t != 0) {
            last_time = t;
        } else if let Some(t) = end_after.filter(|&t| t != 0) {
            last_time = t;
            last_relative = true;
        } else if let Some(t) = interval.filter(|&t| t != 0) {
            last_time = t;
            last_interval = true;
        } else {
            have_last_time = false;
        }

        let end_action = match (&end_call, stop) {
            (Some(_), true) => return Err(cfg_err("END_CALL and STOP are mutually exclusive")),
            (Some(call), false) => parse_end_call(ctx.name, call),
            (None, true) => EndAction::Stop,
            (None, false) if have_last_time => EndAction::Deactivate,
            (None, false) => EndAction::Nothing,
        };
        Ok(Options {
            timing,
            active,
            sample: sample_fx,
            force_ip,
            first_time,
            have_first_time,
            first_relative,
            last_time,
            have_last_time,
            last_relative,
            last_interval,
            end_action,
            burst: BATCH_MAX,
        })
    }

    /// Sets the number of packets per task run (BURST).
    pub fn set_burst(&mut self, burst: usize) {
        self.burst = burst.clamp(1, BATCH_MAX);
    }
}

/// Maps the trace file `filename`; `None` while only checking a
/// configuration (nothing is opened then: return
/// [`check_stand_in`]'s element).
pub fn open_file(ctx: &ConfigCtx<'_>, filename: &str) -> Result<Option<MappedFile>, ConfigError> {
    if crate::world::check_only() {
        return Ok(None);
    }
    let path = ctx.path(filename);
    MappedFile::open(&path)
        .map(Some)
        .map_err(|e| cfg_err(format!("{filename}: {}", pcap::os_error_text(&e))))
}

/// The element standing in for a trace reader while checking.
pub fn check_stand_in(ctx: &ConfigCtx<'_>, filename: &str) -> Box<dyn Element> {
    crate::world::stand_in([crate::world::input_file(ctx, filename)])
}

/// A FILEPOS argument checked against the file's length.
pub fn start_pos(
    filename: &str,
    map: &MappedFile,
    filepos: u64,
    default: usize,
) -> Result<usize, ConfigError> {
    if filepos == 0 {
        return Ok(default);
    }
    usize::try_from(filepos)
        .ok()
        .filter(|&p| p <= map.len())
        .ok_or_else(|| {
            cfg_err(format!(
                "{filename}: FILEPOS {filepos} is past the end of the file"
            ))
        })
}

/// Reads packets from a binary trace file of format `F`.
pub struct RecordSource<F: RecordFormat> {
    /// The file format.
    pub(crate) fmt: F,
    filename: String,
    map: MappedFile,
    pos: usize,
    packet_filepos: usize,
    force_ip: bool,
    timing: bool,
    active: bool,
    sample: u32,
    rng: u64,
    first_time: i64,
    have_first_time: bool,
    first_relative: bool,
    last_time: i64,
    have_last_time: bool,
    last_relative: bool,
    last_interval: bool,
    have_any_times: bool,
    timing_offset: i64,
    /// File position of a record that already passed sampling and waits
    /// for its time (TIMING).
    held: Option<usize>,
    end_action: EndAction,
    ended: bool,
    pending_stop: bool,
    count: u64,
    oversize: u64,
    bad_records: u64,
    /// Packets refused (not IP with FORCE_IP, or malformed for the
    /// format) and dropped for want of output 1: [not IP, malformed].
    refused: [u64; 2],
    pull: bool,
    burst: usize,
}

impl<F: RecordFormat> RecordSource<F> {
    /// A reader of `map` (the file `filename`) starting at file offset
    /// `pos`; `force_ip` is whether FORCE_IP applies to the records' link
    /// types.
    pub fn new(
        ctx: &ConfigCtx<'_>,
        fmt: F,
        filename: String,
        map: MappedFile,
        pos: usize,
        opts: Options,
        force_ip: bool,
    ) -> RecordSource<F> {
        RecordSource {
            fmt,
            filename,
            map,
            pos,
            packet_filepos: 0,
            force_ip,
            timing: opts.timing,
            active: opts.active,
            sample: opts.sample,
            rng: 0x9e37_79b9_7f4a_7c15,
            first_time: opts.first_time,
            have_first_time: opts.have_first_time,
            first_relative: opts.first_relative,
            last_time: opts.last_time,
            have_last_time: opts.have_last_time,
            last_relative: opts.last_relative,
            last_interval: opts.last_interval,
            have_any_times: false,
            timing_offset: 0,
            held: None,
            end_action: opts.end_action,
            ended: false,
            pending_stop: false,
            count: 0,
            oversize: 0,
            bad_records: 0,
            refused: [0; 2],
            pull: !ctx.output_push.first().copied().unwrap_or(true),
            burst: opts.burst,
        }
    }

    fn prepare_times(&mut self, ts: i64, now: i64) {
        if self.first_relative {
            self.first_time += ts;
        }
        if self.last_relative {
            self.last_time += ts;
        } else if self.last_interval {
            self.last_time += self.first_time;
        }
        if self.timing {
            self.timing_offset = now - ts;
        }
        self.have_any_times = true;
    }

    fn random(&mut self) -> u32 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32
    }

    /// Runs the end action; false if it deactivated the element.
    fn call_end(&mut self, out: &mut Out<'_>) -> bool {
        match &self.end_action {
            EndAction::Nothing => {}
            EndAction::Stop => {
                self.active = false;
                out.stop();
            }
            EndAction::Deactivate => self.active = false,
            EndAction::Other(call) => {
                eprintln!(
                    "{}: END_CALL `{call}' is not supported; deactivating",
                    self.filename
                );
                self.active = false;
            }
        }
        self.active
    }

    /// Reads records into `batch` until it holds `max` packets.
    fn fill(&mut self, batch: &mut Batch, max: usize, out: &mut Out<'_>) -> Fill {
        let data = std::mem::replace(&mut self.map, MappedFile::empty());
        let r = if self.plain() {
            self.fill_plain(data.bytes(), batch, max, out)
        } else {
            self.fill_from(data.bytes(), batch, max, out)
        };
        self.map = data;
        r
    }

    /// True when no option needs a per-record decision (no timing,
    /// sampling, time window, FORCE_IP or held record) and the format has
    /// a fast path: the common case, read by [`RecordSource::fill_plain`].
    fn plain(&self) -> bool {
        self.have_any_times
            && !self.timing
            && !self.have_first_time
            && !self.have_last_time
            && self.sample >= SAMPLING_ONE
            && self.held.is_none()
            && !self.force_ip
            && self.fmt.plain_ok()
    }

    /// The hot loop for plain traces. Anything unusual (a truncated
    /// record, an oversized packet, the end of the file) is left to
    /// [`RecordSource::fill_from`], which handles every case.
    fn fill_plain(
        &mut self,
        data: &[u8],
        batch: &mut Batch,
        max: usize,
        out: &mut Out<'_>,
    ) -> Fill {
        let (n, pos) = self.fmt.fill_plain(data, self.pos, batch, max, out.pool);
        if n > 0 {
            self.packet_filepos = pos.1;
        }
        self.pos = pos.0;
        self.count += n as u64;
        let max = max.min(batch.room() + n);
        if n < max && batch.room() > 0 {
            // Something the plain loop does not handle, or the end.
            return self.fill_from(data, batch, max - n, out);
        }
        Fill::More
    }

    fn fill_from(&mut self, data: &[u8], batch: &mut Batch, max: usize, out: &mut Out<'_>) -> Fill {
        let max = max.min(batch.room());
        let mut n = 0;
        while n < max {
            let pos = self.pos;
            let rec = match self.fmt.record(data, pos) {
                Step::Record(r) => r,
                Step::End => return Fill::End,
                Step::Bad { what, to_end } => {
                    self.bad_records += 1;
                    eprintln!("{}: {what} at file offset {pos}; giving up", self.filename);
                    if to_end {
                        self.pos = data.len();
                    }
                    return Fill::End;
                }
            };
            let (ts, next, caplen) = (rec.ts, rec.next, rec.caplen);
            if !self.have_any_times {
                self.prepare_times(ts, out.now);
            }
            if self.have_first_time {
                if ts < self.first_time {
                    self.pos = next;
                    continue;
                }
                self.have_first_time = false;
            }
            while self.have_last_time && ts >= self.last_time {
                self.have_last_time = false;
                if !self.call_end(out) {
                    self.pos = next;
                    self.ended = true;
                    return Fill::End;
                }
            }
            if self.held != Some(pos)
                && self.sample < SAMPLING_ONE
                && (self.random() & (SAMPLING_ONE - 1)) >= self.sample
            {
                self.pos = next;
                continue;
            }
            if self.timing {
                let due = ts.saturating_add(self.timing_offset);
                if out.now < due {
                    self.held = Some(pos);
                    return Fill::Sleep(due);
                }
            }
            self.held = None;
            if caplen > MAX_PACKET {
                self.oversize += 1;
                if self.oversize == 1 {
                    eprintln!(
                        "{}: skipping packets longer than {MAX_PACKET} bytes (first at file offset {pos})",
                        self.filename
                    );
                }
                self.pos = next;
                continue;
            }
            let Some(mut p) = out.pool.alloc_from(&data[rec.start..rec.start + caplen]) else {
                // Pool exhausted: try this record again next time.
                return Fill::More;
            };
            self.packet_filepos = pos;
            self.pos = next;
            p.set_timestamp_ns(ts);
            p.set_mac_header(0);
            if rec.len > caplen {
                let extra = u32::try_from(rec.len - caplen).unwrap_or(u32::MAX);
                p.anno_bytes_mut()[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
                    .copy_from_slice(&extra.to_ne_bytes());
            }
            if self.force_ip && !pcap::force_ip(&mut p, rec.dlt) {
                self.refuse(p, 0, out);
                continue;
            }
            if !self.fmt.finish(&mut p) {
                self.refuse(p, 1, out);
                continue;
            }
            if let Some(c) = rec.paint {
                p.set_paint_anno(c);
            }
            if let Err(p) = batch.push(p) {
                drop::<Packet>(p);
                break;
            }
            self.count += 1;
            n += 1;
        }
        Fill::More
    }

    /// Sends a refused packet to output 1, or drops and counts it
    /// (`why`: 0 not IP, 1 malformed).
    fn refuse(&mut self, p: Packet, why: usize, out: &mut Out<'_>) {
        if out.noutputs() > 1 {
            out.emit(1, p);
        } else {
            self.refused[why] += 1;
        }
    }

    fn set_active(&mut self, active: bool) {
        self.active = active;
    }

    /// One round of reading, shared by the task and pulls.
    fn produce(&mut self, batch: &mut Batch, max: usize, out: &mut Out<'_>) -> TaskStatus {
        if self.pending_stop {
            self.pending_stop = false;
            out.stop();
        }
        if !self.active || self.ended {
            return if self.ended {
                TaskStatus::Done
            } else {
                TaskStatus::Idle
            };
        }
        match self.fill(batch, max, out) {
            Fill::More if batch.is_empty() => TaskStatus::Idle,
            Fill::More => TaskStatus::Busy,
            Fill::Sleep(t) => TaskStatus::SleepUntil(t),
            Fill::End => {
                if !self.ended {
                    self.ended = true;
                    self.call_end(out);
                }
                TaskStatus::Done
            }
        }
    }
}

fn parse_end_call(name: &str, call: &str) -> EndAction {
    let call = call.trim();
    let (target, value) = match call.split_once(char::is_whitespace) {
        Some((t, v)) => (t, v.trim()),
        None => (call, ""),
    };
    let handler = match target.rsplit_once('.') {
        Some((elem, h)) if elem == name => h,
        Some(_) => return EndAction::Other(call.to_string()),
        None => target,
    };
    match (handler, pronto_lang::args::parse_bool(value)) {
        ("stop", _) => EndAction::Stop,
        ("active", Ok(false)) => EndAction::Deactivate,
        _ => EndAction::Other(call.to_string()),
    }
}

impl<F: RecordFormat> Element for RecordSource<F> {
    fn has_task(&self) -> bool {
        !self.pull
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let st = self.produce(batch, self.burst, out);
        out.pass(0);
        st
    }

    fn is_pull_source(&self) -> bool {
        self.pull
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, out: &mut Out<'_>) {
        let _ = self.produce(batch, max, out);
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("not_ip", self.refused[0]);
        c.drop("malformed", self.refused[1]);
        c.count("count", self.count);
        c.count("bad_records", self.bad_records);
        c.count("oversize", self.oversize);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        F::HANDLERS
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if !F::HANDLERS.iter().any(|h| h.read && h.name == name) {
            return Err(HandlerError::NoSuchHandler(name.into()));
        }
        match name {
            "count" => Ok(self.count.to_string()),
            "active" => Ok(self.active.to_string()),
            "encap" => Ok(pcap::unparse_dlt(self.fmt.linktype())),
            "filename" => Ok(self.filename.clone()),
            "filesize" => Ok(self.map.len().to_string()),
            "filepos" => Ok(self.pos.to_string()),
            "packet_filepos" => Ok(self.packet_filepos.to_string()),
            "sampling_prob" => Ok(unparse_fixed(self.sample)),
            "bad_records" => Ok(self.bad_records.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        if !F::HANDLERS.iter().any(|h| h.write && h.name == name) {
            return Err(HandlerError::NoSuchHandler(name.into()));
        }
        match name {
            "reset_counts" => {
                self.count = 0;
                Ok(())
            }
            "active" => {
                let v: bool = pronto_lang::args::parse_bool(value.trim())
                    .map_err(|_| HandlerError::BadValue("type mismatch".into()))?;
                self.set_active(v);
                Ok(())
            }
            "stop" => {
                self.set_active(false);
                self.pending_stop = true;
                Ok(())
            }
            "filepos" => {
                let v: u64 = pronto_lang::args::parse_u64(value.trim())
                    .map_err(|_| HandlerError::BadValue("argument must be file offset".into()))?;
                match usize::try_from(v).ok().filter(|&p| p <= self.map.len()) {
                    Some(p) => {
                        self.pos = p;
                        self.held = None;
                        self.ended = false;
                        Ok(())
                    }
                    None => Err(HandlerError::BadValue(format!(
                        "{}: seek past end of file",
                        self.filename
                    ))),
                }
            }
            "extend_interval" => {
                let s = pronto_lang::args::parse_seconds(value.trim()).map_err(|_| {
                    HandlerError::BadValue("'extend_interval' takes a time interval".into())
                })?;
                self.last_time += seconds_ns(s);
                if self.end_action != EndAction::Nothing {
                    self.have_last_time = true;
                    self.ended = false;
                    self.set_active(true);
                }
                Ok(())
            }
            "reset_timing" => {
                self.first_relative = false;
                self.last_relative = false;
                self.last_interval = false;
                self.have_any_times = false;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}
