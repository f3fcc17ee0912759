//! `FromDump`: reads packets from a tcpdump (pcap) file.
//!
//! The file is mapped into memory and parsed record by record; each task
//! run fills a whole batch, copying each record's bytes into a fresh
//! packet. Microsecond and nanosecond files in either byte order are read.

use pronto_packet::mmap::MappedFile;
use pronto_packet::{Batch, Packet, BATCH_MAX, EXTRA_LENGTH_ANNO_OFFSET, MAX_PACKET};

use super::pcap;
use super::tracetext::{unparse_fixed, SAMPLING_ONE};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, Spec,
    TaskStatus, TimestampArg,
};

/// What happens at the end of the trace (or when END is reached).
#[derive(Clone, Debug, PartialEq, Eq)]
enum EndAction {
    /// Nothing (no END time, no STOP, no END_CALL).
    Nothing,
    /// Deactivate and ask the driver to stop (`STOP true`, `END_CALL x.stop`).
    Stop,
    /// Deactivate (`END_CALL x.active false`, the default with END times).
    Deactivate,
    /// A handler call pronto's FromDump cannot make.
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

/// Reads packets from a tcpdump file.
pub struct FromDump {
    filename: String,
    map: MappedFile,
    pos: usize,
    packet_filepos: usize,
    swapped: bool,
    nano: bool,
    extra_hdr: usize,
    minor: u16,
    linktype: i32,
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
    pull: bool,
    burst: usize,
}

/// Reads plain records (caplen == len, not oversized) from `pos` into
/// `batch`, up to `max`; returns how many, and (the position after them,
/// the position of the last one).
#[inline(always)]
fn plain_records<const SWAPPED: bool>(
    data: &[u8],
    mut pos: usize,
    nano: bool,
    extra_hdr: usize,
    batch: &mut Batch,
    max: usize,
    pool: &pronto_packet::Pool,
) -> (usize, (usize, usize)) {
    let max = max.min(batch.room());
    let mut last = pos;
    let mut n = 0;
    let word = |h: &[u8; 16], i: usize| {
        let v = u32::from_ne_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        if SWAPPED {
            v.swap_bytes()
        } else {
            v
        }
    };
    let scale = if nano { 1 } else { 1000 };
    while n < max {
        let Some(h) = data
            .get(pos..pos + pcap::RECORD_HEADER_LEN)
            .and_then(|h| <&[u8; 16]>::try_from(h).ok())
        else {
            break;
        };
        let (sec, sub) = (word(h, 0), word(h, 4));
        let (caplen, len) = (word(h, 8) as usize, word(h, 12) as usize);
        let start = pos + pcap::RECORD_HEADER_LEN + extra_hdr;
        let end = start + caplen;
        if caplen != len || caplen > MAX_PACKET {
            break;
        }
        let Some(bytes) = data.get(start..end) else {
            break;
        };
        let Some(p) = pool.alloc_frame(bytes, sec as i64 * 1_000_000_000 + sub as i64 * scale)
        else {
            break;
        };
        if let Err(p) = batch.push(p) {
            drop::<Packet>(p);
            break;
        }
        last = pos;
        pos = end;
        n += 1;
    }
    (n, (pos, last))
}

fn read_u32(b: &[u8], off: usize, swapped: bool) -> u32 {
    let v = u32::from_ne_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]]);
    if swapped {
        v.swap_bytes()
    } else {
        v
    }
}

fn read_u16(b: &[u8], off: usize, swapped: bool) -> u16 {
    let v = u16::from_ne_bytes([b[off], b[off + 1]]);
    if swapped {
        v.swap_bytes()
    } else {
        v
    }
}

fn seconds_ns(s: f64) -> i64 {
    (s * 1e9).round() as i64
}

impl FromDump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromDump")
        .ports("0/1-2")
        .processing("a/ah")
        .keywords(&[
            "TIMING", "STOP", "ACTIVE", "SAMPLE", "FORCE_IP", "START", "START_AFTER", "END", "END_AFTER",
            "INTERVAL", "END_CALL", "FILEPOS", "MMAP", "BURST",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FromDump(FILENAME [, TIMING, KEYWORDS])\n\n\
             Reads packets from a file written by `tcpdump -w FILENAME' or ToDump and\n\
             emits them on output 0, optionally stopping the driver at the end of the\n\
             file. Reads microsecond and nanosecond pcap files in either byte order.\n\
             Each packet gets the record's timestamp and, when the record was\n\
             captured short, the missing length as its extra length annotation.\n\
             Records longer than the packet buffer are skipped (counted, warned once).\n\
             A truncated or corrupt file ends the trace at the bad record.\n\n\
             Ports: no inputs; 1 or 2 outputs (output 0 agnostic: pushes from a task,\n\
             or answers pulls; output 1 push, gets non-IP packets when FORCE_IP).\n\
             Keywords:\n  \
             STOP        boolean; stop the driver at the end of the trace (default false)\n  \
             TIMING      boolean; keep the trace's packet spacing (default false)\n  \
             ACTIVE      boolean; if false, emit nothing until activated (default true)\n  \
             SAMPLE      probability of emitting each packet (default 1)\n  \
             FORCE_IP    boolean; emit only IP packets, with the IP header set (default\n              \
             false; always on for raw IP files)\n  \
             START, END  absolute timestamps bounding the packets emitted\n  \
             START_AFTER, END_AFTER  times relative to the trace's first timestamp\n  \
             INTERVAL    stop this long after the first packet\n  \
             END_CALL    handler to call at the end (NAME.stop or NAME.active false)\n  \
             FILEPOS     file offset to start reading from\n  \
             MMAP        accepted; the file is always mapped\n  \
             BURST       packets per task run (default 256)\n\
             Handlers:\n  count (read), reset_counts (write), active (read/write), stop (write),\n  \
             encap (read), filename (read), filesize (read), filepos (read/write),\n  \
             packet_filepos (read), sampling_prob (read), extend_interval (write),\n  \
             reset_timing (write)",
        );

    /// Configures a `FromDump`: opens and maps the file and checks its
    /// header.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let filename: String = a.read_mp("FILENAME")?;
        let timing = a.read_p::<bool>("TIMING")?.unwrap_or(false);
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
        let filepos: u64 = a.read_or("FILEPOS", 0u64)?;
        let _mmap: bool = a.read_or("MMAP", true)?;
        let burst: usize = a.read_or("BURST", BATCH_MAX)?;
        a.finish()?;

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

        if crate::world::check_only() {
            return Ok(crate::world::stand_in([crate::world::input_file(
                ctx, &filename,
            )]));
        }
        let path = ctx.path(&filename);
        let map = MappedFile::open(&path)
            .map_err(|e| cfg_err(format!("{filename}: {}", pcap::os_error_text(&e))))?;
        let h = map.bytes();
        if h.len() < pcap::FILE_HEADER_LEN {
            return Err(cfg_err(format!(
                "{filename}: not a tcpdump file (too short)"
            )));
        }
        let magic = read_u32(h, 0, false);
        let known = |m: u32| m == pcap::MAGIC || m == pcap::MAGIC_NANO || m == pcap::MAGIC_MODIFIED;
        let (swapped, magic) = if known(magic) {
            (false, magic)
        } else if known(magic.swap_bytes()) {
            (true, magic.swap_bytes())
        } else {
            return Err(cfg_err(format!(
                "{filename}: not a tcpdump file (bad magic number)"
            )));
        };
        let extra_hdr = if magic == pcap::MAGIC_MODIFIED {
            pcap::MODIFIED_EXTRA
        } else {
            0
        };
        let major = read_u16(h, 4, swapped);
        if major != pcap::VERSION_MAJOR {
            return Err(cfg_err(format!(
                "{filename}: unknown major version {major}"
            )));
        }
        let minor = read_u16(h, 6, swapped);
        let linktype = pcap::canonical_dlt(read_u32(h, 20, swapped) as i32);
        let mut force_ip = force_ip;
        if force_ip {
            if !pcap::dlt_force_ipable(linktype) {
                return Err(cfg_err(format!(
                    "{filename}: unknown linktype {linktype}; can't force IP packets"
                )));
            }
        } else if linktype == pcap::DLT_RAW {
            force_ip = true;
        }
        let pos = if filepos != 0 {
            usize::try_from(filepos)
                .ok()
                .filter(|&p| p <= map.len())
                .ok_or_else(|| {
                    cfg_err(format!(
                        "{filename}: FILEPOS {filepos} is past the end of the file"
                    ))
                })?
        } else {
            pcap::FILE_HEADER_LEN
        };

        Ok(Box::new(FromDump {
            filename,
            map,
            pos,
            packet_filepos: 0,
            swapped,
            nano: magic == pcap::MAGIC_NANO,
            extra_hdr,
            minor,
            linktype,
            force_ip,
            timing,
            active,
            sample: sample_fx,
            rng: 0x9e37_79b9_7f4a_7c15,
            first_time,
            have_first_time,
            first_relative,
            last_time,
            have_last_time,
            last_relative,
            last_interval,
            have_any_times: false,
            timing_offset: 0,
            held: None,
            end_action,
            ended: false,
            pending_stop: false,
            count: 0,
            oversize: 0,
            pull: !ctx.output_push.first().copied().unwrap_or(true),
            burst: burst.clamp(1, BATCH_MAX),
        }))
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

    fn corrupt(&self, pos: usize, what: &str) {
        eprintln!("{}: {what} at file offset {pos}; giving up", self.filename);
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
    /// sampling, time window, FORCE_IP or held record): the common case,
    /// read by [`FromDump::fill_plain`].
    fn plain(&self) -> bool {
        self.have_any_times
            && !self.timing
            && !self.have_first_time
            && !self.have_last_time
            && self.sample >= SAMPLING_ONE
            && self.held.is_none()
            && !self.force_ip
            && self.minor > 3
    }

    /// The hot loop for plain traces: one bounds check per record, one
    /// allocation from the pool, one copy. Anything unusual (a truncated
    /// record, caplen != len, an oversized packet, the end of the file) is
    /// left to [`FromDump::fill_from`], which handles every case.
    fn fill_plain(
        &mut self,
        data: &[u8],
        batch: &mut Batch,
        max: usize,
        out: &mut Out<'_>,
    ) -> Fill {
        // One copy of the loop per byte order, so the order is not tested
        // per field.
        let (n, pos) = if self.swapped {
            plain_records::<true>(
                data,
                self.pos,
                self.nano,
                self.extra_hdr,
                batch,
                max,
                out.pool,
            )
        } else {
            plain_records::<false>(
                data,
                self.pos,
                self.nano,
                self.extra_hdr,
                batch,
                max,
                out.pool,
            )
        };
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
        let swapped = self.swapped;
        while n < max {
            let pos = self.pos;
            let Some(h) = data.get(pos..pos + pcap::RECORD_HEADER_LEN) else {
                if pos < data.len() {
                    self.corrupt(pos, "truncated packet header");
                    self.pos = data.len();
                }
                return Fill::End;
            };
            let sec = read_u32(h, 0, swapped);
            let sub = read_u32(h, 4, swapped);
            let (c, l) = (
                read_u32(h, 8, swapped) as usize,
                read_u32(h, 12, swapped) as usize,
            );
            let (mut caplen, len) = if self.minor > 3 || (self.minor == 3 && c <= l) {
                (c, l)
            } else {
                (l, c)
            };
            if caplen > 65535 {
                self.corrupt(pos, "bad packet header");
                return Fill::End;
            }
            let mut skip = 0;
            if caplen > len {
                skip = caplen - len;
                caplen = len;
            }
            let start = pos + pcap::RECORD_HEADER_LEN + self.extra_hdr;
            let next = start + caplen + skip;
            if next > data.len() {
                self.corrupt(pos, "truncated packet");
                self.pos = data.len();
                return Fill::End;
            }
            let sub_ns = if self.nano {
                sub as i64
            } else {
                sub as i64 * 1000
            };
            let ts = sec as i64 * 1_000_000_000 + sub_ns;
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
            let Some(mut p) = out.pool.alloc_from(&data[start..start + caplen]) else {
                // Pool exhausted: try this record again next time.
                return Fill::More;
            };
            self.packet_filepos = pos;
            self.pos = next;
            p.set_timestamp_ns(ts);
            p.set_mac_header(0);
            if len > caplen {
                let extra = (len - caplen) as u32;
                p.anno_bytes_mut()[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
                    .copy_from_slice(&extra.to_ne_bytes());
            }
            if self.force_ip && !pcap::force_ip(&mut p, self.linktype) {
                out.emit(1, p);
                continue;
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

impl Element for FromDump {
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

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::write("reset_counts"),
            HandlerInfo::rw("active"),
            HandlerInfo::write("stop"),
            HandlerInfo::read("encap"),
            HandlerInfo::read("filename"),
            HandlerInfo::read("filesize"),
            HandlerInfo::rw("filepos"),
            HandlerInfo::read("packet_filepos"),
            HandlerInfo::read("sampling_prob"),
            HandlerInfo::write("extend_interval"),
            HandlerInfo::write("reset_timing"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "active" => Ok(self.active.to_string()),
            "encap" => Ok(pcap::unparse_dlt(self.linktype)),
            "filename" => Ok(self.filename.clone()),
            "filesize" => Ok(self.map.len().to_string()),
            "filepos" => Ok(self.pos.to_string()),
            "packet_filepos" => Ok(self.packet_filepos.to_string()),
            "sampling_prob" => Ok(unparse_fixed(self.sample)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, run_task, scratch};
    use pronto_packet::Pool;

    /// A pcap file: header fields in the given byte order, then records of
    /// (sec, subsec, caplen, len, bytes).
    fn pcap_file(
        magic: u32,
        big: bool,
        linktype: u32,
        recs: &[(u32, u32, u32, u32, &[u8])],
    ) -> Vec<u8> {
        let w32 = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let w16 = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut f = Vec::new();
        f.extend(w32(magic));
        f.extend(w16(2)); // version 2.4
        f.extend(w16(4));
        f.extend(w32(0)); // thiszone
        f.extend(w32(0)); // sigfigs
        f.extend(w32(65535)); // snaplen
        f.extend(w32(linktype));
        for &(s, u, c, l, b) in recs {
            f.extend(w32(s));
            f.extend(w32(u));
            f.extend(w32(c));
            f.extend(w32(l));
            f.extend_from_slice(b);
        }
        f
    }

    fn open(dir: &std::path::Path, conf: &str) -> Box<dyn Element> {
        configure(
            FromDump::SPEC.keywords,
            FromDump::configure,
            conf,
            &[],
            &[true],
            dir,
        )
        .expect("configures")
    }

    const FRAME: [u8; 14] = [
        0, 1, 2, 3, 4, 5, // dst
        6, 7, 8, 9, 10, 11, // src
        0x88, 0xb5, // type
    ];

    #[test]
    fn reads_both_byte_orders_and_precisions() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdump-orders");
        for (magic, big, sub, ns) in [
            (pcap::MAGIC, false, 5u32, 1_600_000_000_000_005_000i64),
            (pcap::MAGIC, true, 5, 1_600_000_000_000_005_000),
            (pcap::MAGIC_NANO, false, 5, 1_600_000_000_000_000_005),
            (pcap::MAGIC_NANO, true, 5, 1_600_000_000_000_000_005),
        ] {
            let f = pcap_file(magic, big, 1, &[(1_600_000_000, sub, 14, 14, &FRAME)]);
            std::fs::write(dir.join("t.pcap"), f).expect("write");
            let mut e = open(&dir, "t.pcap, STOP true");
            let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
            assert_eq!(st, TaskStatus::Done);
            assert_eq!(ctrl.stop_requests, 1);
            assert_eq!(outs[0].len(), 1);
            assert_eq!(outs[0][0].data(), &FRAME);
            assert_eq!(outs[0][0].timestamp_ns(), ns);
            assert_eq!(outs[0][0].mac_header_offset(), Some(0));
            assert_eq!(e.read_handler("count").expect("count"), "1");
            assert_eq!(e.read_handler("encap").expect("encap"), "ETHER");
        }
    }

    #[test]
    fn short_capture_sets_extra_length() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdump-extra");
        let f = pcap_file(pcap::MAGIC, false, 1, &[(1, 0, 14, 60, &FRAME)]);
        std::fs::write(dir.join("t.pcap"), f).expect("write");
        let mut e = open(&dir, "t.pcap");
        let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(st, TaskStatus::Done);
        assert_eq!(ctrl.stop_requests, 0);
        let a = outs[0][0].anno_bytes();
        let extra = u32::from_ne_bytes([a[28], a[29], a[30], a[31]]);
        assert_eq!(extra, 46);
    }

    #[test]
    fn conformance_input_streams_in_batches() {
        let pool = Pool::new(2048).expect("pool");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut e = configure(
            FromDump::SPEC.keywords,
            FromDump::configure,
            "classifier_ethertype.pcap, STOP true",
            &[],
            &[true],
            &dir,
        )
        .expect("configures");
        let mut total = 0;
        let mut runs = 0;
        loop {
            let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
            total += outs[0].len();
            runs += 1;
            if st == TaskStatus::Done {
                assert_eq!(ctrl.stop_requests, 1);
                break;
            }
            assert_eq!(outs[0].len(), 256);
        }
        assert_eq!(total, 1500);
        assert_eq!(runs, 6);
        assert_eq!(e.read_handler("count").expect("count"), "1500");
        assert_eq!(
            e.read_handler("filesize").expect("size"),
            e.read_handler("filepos").expect("pos")
        );
    }

    #[test]
    fn truncated_and_corrupt_files_end_cleanly() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdump-corrupt");
        let good = pcap_file(
            pcap::MAGIC,
            false,
            1,
            &[(1, 0, 14, 14, &FRAME), (2, 0, 14, 14, &FRAME)],
        );
        // Cut in the middle of the second record's data, then of its header.
        for cut in [good.len() - 3, 24 + 30 + 5] {
            std::fs::write(dir.join("t.pcap"), &good[..cut]).expect("write");
            let mut e = open(&dir, "t.pcap, STOP true");
            let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
            assert_eq!(st, TaskStatus::Done);
            assert_eq!(outs[0].len(), 1);
            assert_eq!(ctrl.stop_requests, 1);
        }
        // A caplen over 65535.
        let bad = pcap_file(pcap::MAGIC, false, 1, &[(1, 0, 70000, 70000, &FRAME)]);
        std::fs::write(dir.join("t.pcap"), bad).expect("write");
        let mut e = open(&dir, "t.pcap");
        let (st, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!((st, outs[0].len()), (TaskStatus::Done, 0));
        // Bad magic, short header, missing file.
        std::fs::write(dir.join("bad.pcap"), [0u8; 24]).expect("write");
        std::fs::write(dir.join("short.pcap"), [0xd4u8, 0xc3, 0xb2, 0xa1]).expect("write");
        let c = |s: &str| {
            config_err(configure(
                FromDump::SPEC.keywords,
                FromDump::configure,
                s,
                &[],
                &[true],
                &dir,
            ))
        };
        assert_eq!(
            c("bad.pcap"),
            "bad.pcap: not a tcpdump file (bad magic number)"
        );
        assert_eq!(
            c("short.pcap"),
            "short.pcap: not a tcpdump file (too short)"
        );
        assert_eq!(c("nope.pcap"), "nope.pcap: No such file or directory");
        assert_eq!(
            c("bad.pcap, STOP true, END_CALL e.stop"),
            "END_CALL and STOP are mutually exclusive"
        );
    }

    #[test]
    fn oversized_records_are_skipped() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdump-big");
        let big = vec![0u8; MAX_PACKET + 1];
        let n = big.len() as u32;
        let f = pcap_file(
            pcap::MAGIC,
            false,
            1,
            &[(1, 0, n, n, &big), (2, 0, 14, 14, &FRAME)],
        );
        std::fs::write(dir.join("t.pcap"), f).expect("write");
        let mut e = open(&dir, "t.pcap");
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(outs[0][0].data(), &FRAME);
    }

    #[test]
    fn raw_ip_forces_ip_and_non_ip_goes_to_output_1() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdump-ip");
        // IPv4 header, 20 bytes, 10.0.0.1 -> 10.0.0.2
        let ip: [u8; 20] = [
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let junk = [0x10u8, 0, 0];
        let f = pcap_file(
            pcap::MAGIC,
            false,
            101,
            &[(1, 0, 20, 20, &ip), (1, 1, 3, 3, &junk)],
        );
        std::fs::write(dir.join("t.pcap"), f).expect("write");
        let mut e = configure(
            FromDump::SPEC.keywords,
            FromDump::configure,
            "t.pcap",
            &[],
            &[true, true],
            &dir,
        )
        .expect("ok");
        let (_, outs, _) = run_task(e.as_mut(), &pool, 2, 0);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(outs[0][0].network_header_offset(), Some(0));
        assert_eq!(outs[0][0].dst_ip_anno(), [10, 0, 0, 2]);
        assert_eq!(outs[1].len(), 1);
        assert_eq!(e.read_handler("encap").expect("encap"), "IP");
        assert_eq!(e.read_handler("count").expect("count"), "1");
    }

    #[test]
    fn timing_paces_packets() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdump-timing");
        let f = pcap_file(
            pcap::MAGIC,
            false,
            1,
            &[(10, 0, 14, 14, &FRAME), (11, 0, 14, 14, &FRAME)],
        );
        std::fs::write(dir.join("t.pcap"), f).expect("write");
        let mut e = open(&dir, "t.pcap, TIMING true, STOP true");
        let now = 5_000_000_000;
        let (st, outs, _) = run_task(e.as_mut(), &pool, 1, now);
        assert_eq!(st, TaskStatus::SleepUntil(now + 1_000_000_000));
        assert_eq!(outs[0].len(), 1);
        let (st, outs, _) = run_task(e.as_mut(), &pool, 1, now + 500_000_000);
        assert_eq!(st, TaskStatus::SleepUntil(now + 1_000_000_000));
        assert_eq!(outs[0].len(), 0);
        let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, now + 1_000_000_000);
        assert_eq!(
            (st, outs[0].len(), ctrl.stop_requests),
            (TaskStatus::Done, 1, 1)
        );
    }

    #[test]
    fn start_end_and_sampling() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdump-times");
        let recs: Vec<(u32, u32, u32, u32, &[u8])> =
            (0..6).map(|i| (100 + i, 0, 14, 14, &FRAME[..])).collect();
        std::fs::write(dir.join("t.pcap"), pcap_file(pcap::MAGIC, false, 1, &recs)).expect("write");
        let mut e = open(&dir, "t.pcap, START_AFTER 1, END_AFTER 4");
        let (st, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(st, TaskStatus::Done);
        let secs: Vec<i64> = outs[0]
            .iter()
            .map(|p| p.timestamp_ns() / 1_000_000_000)
            .collect();
        assert_eq!(secs, [101, 102, 103]);
        assert_eq!(e.read_handler("active").expect("active"), "false");
        let mut e = open(&dir, "t.pcap, SAMPLE 0");
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0].len(), 0);
        assert_eq!(e.read_handler("sampling_prob").expect("p"), "0");
        let e = open(&dir, "t.pcap, SAMPLE 0.1");
        assert_eq!(e.read_handler("sampling_prob").expect("p"), "0.1");
        let mut e = open(&dir, "t.pcap, ACTIVE false");
        let (st, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!((st, outs[0].len()), (TaskStatus::Idle, 0));
        e.write_handler("active", "true").expect("write");
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0].len(), 6);
    }

    #[test]
    fn pull_output_serves_pulls() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdump-pull");
        let recs: Vec<(u32, u32, u32, u32, &[u8])> =
            (0..5).map(|i| (100 + i, 0, 14, 14, &FRAME[..])).collect();
        std::fs::write(dir.join("t.pcap"), pcap_file(pcap::MAGIC, false, 1, &recs)).expect("write");
        let mut e = configure(
            FromDump::SPEC.keywords,
            FromDump::configure,
            "t.pcap, STOP true",
            &[],
            &[false],
            &dir,
        )
        .expect("ok");
        assert!(e.is_pull_source());
        assert!(!e.has_task());
        let mut ctrl = crate::Control::default();
        let mut none: [Batch; 0] = [];
        let mut b = Batch::new();
        let mut out = Out::new(&mut none, &pool, 0, &mut ctrl);
        e.pull(0, &mut b, 3, &mut out);
        assert_eq!(b.len(), 3);
        b.clear();
        e.pull(0, &mut b, 3, &mut out);
        assert_eq!(b.len(), 2);
        assert_eq!(ctrl.stop_requests, 1);
    }
}
