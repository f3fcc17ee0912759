//! `FromIPSummaryDump`: reads packet descriptions from an IP summary dump
//! (the text or binary format `ToIPSummaryDump` writes) and makes IPv4
//! packets from them.

use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
use pronto_packet::{
    Batch, Packet, AGGREGATE_ANNO_OFFSET, BATCH_MAX, EXTRA_LENGTH_ANNO_OFFSET,
    EXTRA_PACKETS_ANNO_OFFSET, FIRST_TIMESTAMP_ANNO_OFFSET, MAX_PACKET,
};

use super::ipsumdump::{
    find_field, parse_tcp_flags, parse_u8, unquote_bytes, Field as F, Lookup, FIELDS, SPECIAL,
    TEXT_ONLY,
};
use super::tracetext::{next_line, Multipacket, Sampler, TraceData};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, NotifierKind,
    NotifierRole, Out, Spec, TaskStatus,
};
use pronto_classify::names::{icmp_code_by_name, icmp_type_by_name};

/// Finds a field to read: the fields that differ only in how they are
/// written read as the plain one.
fn find_reader(name: &str) -> Lookup {
    match find_field(name) {
        Lookup::Found(n, f, w, o) => {
            let f = match f {
                F::Direction => F::Link,
                F::IcmpTypeName => F::IcmpType,
                F::IcmpCodeName => F::IcmpCode,
                f => f,
            };
            Lookup::Found(n, f, w, o)
        }
        l => l,
    }
}

#[derive(Clone, Copy, Debug)]
struct Field {
    f: F,
    width: i8,
    order: u16,
    name: &'static str,
}

/// A parsed field value.
#[derive(Clone, Copy, Debug)]
enum Val {
    N(u64),
    Ts(i64),
    Eth([u8; 6]),
    /// Bytes held in the element's scratch buffer.
    Bytes,
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

fn be32(b: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn put16(b: &mut [u8], o: usize, v: u16) {
    if let Some(s) = b.get_mut(o..o + 2) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

fn put32(b: &mut [u8], o: usize, v: u32) {
    if let Some(s) = b.get_mut(o..o + 4) {
        s.copy_from_slice(&v.to_be_bytes());
    }
}

fn put8(b: &mut [u8], o: usize, v: u8) {
    if let Some(x) = b.get_mut(o) {
        *x = v;
    }
}

fn ns(sec: i64, nsec: i64) -> i64 {
    sec.saturating_mul(1_000_000_000).saturating_add(nsec)
}

/// The packet being built from one line (Click's output descriptor).
#[derive(Default)]
struct Odesc {
    buf: Vec<u8>,
    mac: bool,
    nh: Option<usize>,
    hl: usize,
    not_ip: bool,
    have_icmp_type: bool,
    have_ip_hl: bool,
    have_tcp_hl: bool,
    want_len: u32,
    ts: i64,
    first_ts: i64,
    extra_packets: u32,
    paint: u8,
    aggregate: u32,
}

/// Defaults that every packet starts from.
#[derive(Clone, Copy, Default)]
struct Defaults {
    proto: u8,
    flowid: Option<([u8; 4], u16, [u8; 4], u16)>,
}

impl Odesc {
    fn reset(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        *self = Odesc {
            buf,
            ..Odesc::default()
        };
    }

    fn tlen(&self) -> usize {
        match self.nh {
            Some(nh) => self.buf.len().saturating_sub(nh + self.hl),
            None => 0,
        }
    }

    fn th(&self) -> usize {
        self.nh.unwrap_or(0) + self.hl
    }

    fn grow(&mut self, n: usize) -> bool {
        if self.buf.len() + n > MAX_PACKET {
            return false;
        }
        self.buf.resize(self.buf.len() + n, 0);
        true
    }

    fn make_ip(&mut self, proto: u8, dflt: &Defaults) -> bool {
        if self.not_ip {
            return false;
        }
        let nh = *self.nh.get_or_insert(if self.mac { 14 } else { 0 });
        if self.buf.len() < nh + 20 {
            let need = nh + 20 - self.buf.len();
            if !self.grow(need) {
                return false;
            }
            self.hl = 20;
            let ip = &mut self.buf[nh..nh + 20];
            ip[0] = 0x45;
            ip[9] = dflt.proto;
            ip[2..4].fill(0);
            ip[6..8].fill(0);
            ip[8] = 100;
            if let Some((src, _, dst, _)) = dflt.flowid {
                ip[12..16].copy_from_slice(&src);
                ip[16..20].copy_from_slice(&dst);
            }
        }
        let p = self.buf[nh + 9];
        proto == 0 || p == 0 || p == proto
    }

    fn first_frag(&self) -> bool {
        let nh = self.nh.unwrap_or(0);
        be16(&self.buf, nh + 6) & 0x1fff == 0
    }

    fn make_transp(&mut self, dflt: &Defaults) -> bool {
        if !self.first_frag() {
            return false;
        }
        if self.tlen() >= 8 {
            return true;
        }
        let nh = self.nh.unwrap_or(0);
        let mut len: isize = match self.buf[nh + 9] {
            6 => 20,
            17 | 136 => 8,
            33 => 12,
            1 => 8,
            _ => return true,
        };
        let th = self.th();
        if self.want_len > 0 && (self.want_len as isize) < th as isize + len {
            len = self.want_len as isize - th as isize;
        }
        if (self.tlen() as isize) < len {
            let len = len as usize;
            let xlen = len.max(4);
            if !self.grow(xlen - self.tlen()) {
                return false;
            }
            if self.buf[nh + 9] == 6 && len >= 13 {
                self.buf[th + 12] = (self.buf[th + 12] & 0x0f) | 0x50;
            }
            if let Some((_, sp, _, dp)) = dflt.flowid {
                put16(&mut self.buf, th, sp);
                put16(&mut self.buf, th + 2, dp);
            }
            self.buf.truncate(th + len);
        }
        true
    }

    /// Inserts `n` zero bytes at `at`.
    fn insert(&mut self, at: usize, n: usize) -> bool {
        if self.buf.len() + n > MAX_PACKET || at > self.buf.len() {
            return false;
        }
        self.buf.splice(at..at, std::iter::repeat_n(0u8, n));
        true
    }

    /// Where the payload starts (Click's rule: after a TCP or UDP header).
    fn payload_off(&self) -> usize {
        let Some(nh) = self.nh.filter(|_| !self.not_ip) else {
            return 0;
        };
        let th = self.th();
        let mut off = th;
        if self.first_frag() {
            match self.buf[nh + 9] {
                6 => {
                    let o = self.buf.get(th + 12).map_or(0, |b| (b >> 4) as usize * 4);
                    off += if self.tlen() >= 13 && o >= 20 { o } else { 20 };
                }
                17 | 136 => off += 8,
                _ => {}
            }
        }
        off
    }

    /// Grows TCP and IP headers with padding options when the IP length
    /// says there is more than the payload accounts for.
    fn account_payload_len(&mut self, off: usize, plen: usize) {
        let ip_len_field = self.nh.map(|nh| be16(&self.buf, nh + 2));
        let Some(nh) = self.nh.filter(|_| !self.not_ip) else {
            self.want_len = (off + plen) as u32;
            return;
        };
        if ip_len_field == Some(0) && self.want_len == 0 {
            self.want_len = (off + plen) as u32;
            return;
        }
        let ip_len = match ip_len_field {
            Some(v) if v != 0 => v as usize + nh,
            _ => self.want_len as usize + nh,
        };
        let mut delta = ip_len as isize - (off + plen) as isize;
        let th = self.th();
        if delta > 0
            && self.first_frag()
            && self.buf[nh + 9] == 6
            && !self.have_tcp_hl
            && self.buf.get(th + 12).map(|b| b >> 4) == Some(5)
        {
            let d = ((delta - (delta & 3)) as usize).min(40);
            if self.insert(th + 20, d) {
                self.buf[th + 12] = (self.buf[th + 12] & 0x0f) | (((20 + d) / 4) << 4) as u8;
                delta -= d as isize;
            }
        }
        if delta > 0 && !self.have_ip_hl && self.hl == 20 {
            let d = ((delta - (delta & 3)) as usize).min(40);
            if self.insert(nh + 20, d) {
                self.hl = 20 + d;
                self.buf[nh] = 0x40 | (self.hl / 4) as u8;
            }
        }
    }
}

/// How a line ended up.
enum LineResult {
    Packet,
    Bad,
    Skip,
}

/// Reads IP summary dumps.
pub struct FromIPSummaryDump {
    filename: String,
    data: TraceData,
    pos: usize,
    lineno: u64,
    fields: Vec<Field>,
    order: Vec<usize>,
    dflt: Defaults,
    binary: bool,
    stop: bool,
    active: bool,
    checksum: bool,
    multipacket: bool,
    timing: bool,
    timing_offset: Option<i64>,
    sample: Sampler,
    format_complaint: bool,
    bad_lines: u64,
    aggregate: Option<u32>,
    od: Odesc,
    scratch: Vec<u8>,
    spans: Vec<(usize, usize)>,
    /// A packet made but not yet emitted (TIMING, MULTIPACKET).
    held: Option<Packet>,
    multi: Multipacket,
    ended: bool,
    pending_stop: bool,
    pull: bool,
    burst: usize,
}

fn parse_proto(s: &str) -> Option<u8> {
    match s {
        "T" | "tcp" => Some(6),
        "U" | "udp" => Some(17),
        "I" | "icmp" => Some(1),
        _ => pronto_lang::args::parse_u32(s)
            .ok()
            .and_then(|v| u8::try_from(v).ok()),
    }
}

fn words(line: &[u8]) -> Vec<&str> {
    std::str::from_utf8(line)
        .unwrap_or("")
        .split_ascii_whitespace()
        .collect()
}

impl FromIPSummaryDump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromIPSummaryDump")
        .ports("0/1")
        .processing("a/a")
        .keywords(&[
            "FILENAME",
            "STOP",
            "ACTIVE",
            "ZERO",
            "TIMING",
            "CHECKSUM",
            "SAMPLE",
            "PROTO",
            "MULTIPACKET",
            "DEFAULT_CONTENTS",
            "DEFAULT_FIELDS",
            "DEFAULT_FLOWID",
            "CONTENTS",
            "FIELDS",
            "FLOWID",
            "ALLOW_NONEXISTENT",
            "DATA",
            "BURST",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FromIPSummaryDump(FILENAME [, KEYWORDS])\n\n\
             Reads packet descriptions from an IP summary dump (as ToIPSummaryDump\n\
             writes, text or `!binary') and emits IPv4 packets built from them:\n\
             version 4, TTL 100, protocol PROTO unless the dump says otherwise,\n\
             the rest zero. `!data'/`!contents' lines name the fields; `!flowid\n\
             SRC SPORT DST DPORT [PROTO]', `!proto P', `!aggregate N' and\n\
             `!binary' are understood; `#' lines are comments. The IP length field\n\
             is set from ip_len, payload or payload_len; the extra length annotation\n\
             covers bytes the packet does not hold. Lines that cannot be parsed are\n\
             skipped and counted (one warning). Packets get the timestamp, paint,\n\
             aggregate, extra packets, first timestamp and destination IP\n\
             annotations and the network header.\n\n\
             Ports: no inputs; 1 output (agnostic: pushes from a task or answers pulls).\n\
             Keywords:\n  \
             STOP      boolean; stop the driver at the end (default false)\n  \
             ACTIVE    boolean; emit nothing until activated if false (default true)\n  \
             ZERO      boolean; accepted (unset bytes are always zero)\n  \
             TIMING    boolean; keep the dump's packet spacing (default false)\n  \
             CHECKSUM  boolean; fill packets to their IP length and set IP, TCP,\n            \
             UDP, ICMP checksums (default false)\n  \
             SAMPLE    probability of emitting each packet (default 1)\n  \
             PROTO     default IP protocol (default 6)\n  \
             MULTIPACKET  boolean; emit `count' packets per line (default false)\n  \
             DEFAULT_CONTENTS (or CONTENTS, FIELDS, DEFAULT_FIELDS)  fields before any `!data'\n  \
             DEFAULT_FLOWID (or FLOWID)  `SRC SPORT DST DPORT [PROTO]' defaults\n  \
             ALLOW_NONEXISTENT  boolean; a missing file is empty (default false)\n  \
             DATA      read this string instead of a file\n  \
             BURST     packets per task run (default 1, as Click: a task run\n            \
             pushes one packet, so sources interleave packet by packet)\n\
             Handlers:\n  sampling_prob (read), active (read/write), encap (read), filesize (read),\n  \
             filepos (read), stop (write)",
        );

    /// Configures a `FromIPSummaryDump`: reads the file's banner.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut warning = None;
        let e = Self::build(ctx, &mut warning)?;
        if crate::world::check_only() {
            return Ok(crate::world::stand_in([warning]));
        }
        Ok(Box::new(e))
    }

    fn build(
        ctx: &ConfigCtx<'_>,
        check_warning: &mut Option<String>,
    ) -> Result<FromIPSummaryDump, ConfigError> {
        let mut a = ctx.args();
        let filename: Option<String> = a.read_p("FILENAME")?;
        let stop = a.read_or("STOP", false)?;
        let active = a.read_or("ACTIVE", true)?;
        let _zero: bool = a.read_or("ZERO", true)?;
        let timing = a.read_or("TIMING", false)?;
        let checksum = a.read_or("CHECKSUM", false)?;
        let sample: f64 = a.read_or("SAMPLE", 1.0)?;
        let proto: u8 = a.read_or("PROTO", 6u8)?;
        let multipacket = a.read_or("MULTIPACKET", false)?;
        let mut contents: Option<String> = None;
        for k in ["DEFAULT_CONTENTS", "DEFAULT_FIELDS"] {
            if let Some(v) = a.read::<String>(k)? {
                contents = Some(v);
            }
        }
        let mut flowid: Option<String> = a.read("DEFAULT_FLOWID")?;
        for k in ["CONTENTS", "FIELDS"] {
            if let Some(v) = a.read::<String>(k)? {
                contents = Some(v);
            }
        }
        if let Some(v) = a.read::<String>("FLOWID")? {
            flowid = Some(v);
        }
        let allow_nonexistent = a.read_or("ALLOW_NONEXISTENT", false)?;
        let data: Option<String> = a.read("DATA")?;
        let burst: usize = a.read_or("BURST", 1)?;
        a.finish()?;

        let sample = Sampler::new(ctx.name, sample, 0x2545_f491_4f6c_dd1d)?;

        // A pure check reads no file: the element is built over no data,
        // and `configure` stands in for it.
        let mut data = data;
        let mut filename = filename;
        if let (true, None, Some(f)) = (crate::world::check_only(), &data, &filename) {
            *check_warning = crate::world::input_file(ctx, f).filter(|_| !allow_nonexistent);
            data = Some(String::new());
            filename = None;
        }
        let (data, filename) = match (data, filename) {
            (Some(_), Some(_)) => return Err(cfg_err("FILENAME and DATA conflict")),
            (Some(d), None) => (TraceData::Owned(d.into_bytes()), "<data>".to_string()),
            (None, None) => return Err(cfg_err("FILENAME: required argument missing")),
            (None, Some(f)) => TraceData::open(ctx, &f, allow_nonexistent)?,
        };

        let mut e = FromIPSummaryDump {
            filename,
            data,
            pos: 0,
            lineno: 0,
            fields: Vec::new(),
            order: Vec::new(),
            dflt: Defaults {
                proto,
                flowid: None,
            },
            binary: false,
            stop,
            active,
            checksum,
            multipacket,
            timing,
            timing_offset: None,
            sample,
            format_complaint: false,
            bad_lines: 0,
            aggregate: None,
            od: Odesc::default(),
            scratch: Vec::new(),
            spans: Vec::new(),
            held: None,
            multi: Multipacket::default(),
            ended: false,
            pending_stop: false,
            pull: !ctx.output_push.first().copied().unwrap_or(true),
            burst: burst.clamp(1, BATCH_MAX),
        };
        if let Some(c) = contents {
            e.bang_data(&c);
        }
        if let Some(f) = flowid {
            e.bang_flowid(&format!("!flowid {f}"));
        }
        e.read_banner();
        Ok(e)
    }

    fn warn(&self, msg: &str) {
        eprintln!("{}:{}: {msg}", self.filename, self.lineno);
    }

    fn read_banner(&mut self) {
        let bytes = self.data.bytes();
        let end = bytes
            .iter()
            .position(|&c| c == b'\n')
            .unwrap_or(bytes.len());
        let line = String::from_utf8_lossy(&bytes[..end]).into_owned();
        if let Some(rest) = line.strip_prefix("!IPSummaryDump") {
            let v: Vec<&str> = rest.trim().splitn(2, '.').collect();
            let major = v.first().and_then(|s| s.parse::<u32>().ok());
            let minor = v.get(1).and_then(|s| s.trim().parse::<u32>().ok());
            if let (Some(ma), Some(mi)) = (major, minor) {
                if ma != 1 || mi > 3 {
                    eprintln!(
                        "{}:1: unexpected IPSummaryDump version {ma}.{mi}",
                        self.filename
                    );
                }
            }
            self.pos = (end + 1).min(bytes.len());
            self.lineno = 1;
        } else if !bytes.is_empty()
            && !["!creator", "!data", "!contents", "!proto", "!flowid"]
                .iter()
                .any(|p| line.starts_with(p))
            && self.fields.is_empty()
        {
            eprintln!(
                "{}:1: missing banner line; is this an IP summary dump?",
                self.filename
            );
        }
    }

    fn bang_data(&mut self, line: &str) {
        self.fields.clear();
        for (i, w) in pronto_lang::args::split_words(line).iter().enumerate() {
            let w = pronto_lang::args::unquote(w);
            if i == 0 && (w == "!data" || w == "!contents") {
                continue;
            }
            let field = match find_reader(&w) {
                Lookup::Found(_, f, width, order) => Field {
                    f,
                    width,
                    order,
                    name: "",
                },
                Lookup::WriteOnly => {
                    self.warn(&format!("content type '{w}' ignored on input"));
                    Field {
                        f: F::Null,
                        width: 0,
                        order: 100,
                        name: "",
                    }
                }
                Lookup::Unknown => {
                    self.warn(&format!("unknown content type '{w}'"));
                    Field {
                        f: F::Null,
                        width: 0,
                        order: 100,
                        name: "",
                    }
                }
            };
            self.fields.push(field);
        }
        for f in &mut self.fields {
            if let Some(&(n, ..)) = FIELDS.iter().find(|r| r.1 == f.f && r.3 == f.order) {
                f.name = n;
            }
        }
        if self.fields.is_empty() {
            self.warn("no contents specified");
        }
        let mut order: Vec<usize> = (0..self.fields.len()).collect();
        order.sort_by_key(|&i| (self.fields[i].order, i));
        self.order = order;
    }

    fn bang_proto(&mut self, w: &[&str], what: &str) {
        if w.len() != 2 {
            self.warn(&format!("bad {what}"));
        } else if let Some(p) = parse_proto(w[1]) {
            self.dflt.proto = p;
        } else {
            self.warn(&format!("bad protocol in {what}"));
        }
    }

    fn bang_flowid(&mut self, line: &str) {
        let w = words(line.as_bytes());
        let ip = |s: &str| {
            if s == "-" {
                Some([0; 4])
            } else {
                pronto_lang::args::parse_ip4(s).ok()
            }
        };
        let port = |s: &str| {
            if s == "-" {
                Some(0)
            } else {
                pronto_lang::args::parse_u32(s)
                    .ok()
                    .and_then(|v| u16::try_from(v).ok())
            }
        };
        let parsed = if w.len() >= 5 {
            match (ip(w[1]), port(w[2]), ip(w[3]), port(w[4])) {
                (Some(a), Some(b), Some(c), Some(d)) => Some((a, b, c, d)),
                _ => None,
            }
        } else {
            None
        };
        match parsed {
            Some(f) => {
                if w.len() >= 6 {
                    self.bang_proto(&["!", w[5]], "!flowid");
                }
                self.dflt.flowid = Some(f);
            }
            None => {
                self.warn("bad !flowid specification");
                self.dflt.flowid = None;
            }
        }
    }

    /// The next line or record: (bytes range, is binary record). None at
    /// the end.
    fn next_record(&mut self) -> Option<(usize, usize, bool)> {
        let bytes = self.data.bytes();
        if self.pos >= bytes.len() {
            return None;
        }
        let start = self.pos;
        if self.binary {
            let Some(h) = bytes.get(start..start + 4) else {
                self.pos = bytes.len();
                return None;
            };
            let word = be32(h, 0);
            let len = (word & 0x7fff_ffff) as usize;
            if len < 4 || start + len > bytes.len() {
                let msg = if len < 4 {
                    "binary record too short"
                } else {
                    "truncated binary record"
                };
                self.lineno += 1;
                self.warn(msg);
                self.pos = bytes.len();
                return None;
            }
            self.pos = start + len;
            self.lineno += 1;
            let textual = word & 0x8000_0000 != 0;
            let mut end = start + len;
            if textual {
                while end > start + 4 && bytes[end - 1] == 0 {
                    end -= 1;
                }
            }
            return Some((start + 4, end, !textual));
        }
        let (start, end) = next_line(bytes, &mut self.pos)?;
        self.lineno += 1;
        Some((start, end, false))
    }

    /// Reads lines until one describes a packet, then builds it into
    /// `self.od`. None at the end of the file.
    fn read_line(&mut self) -> Option<LineResult> {
        loop {
            let (s, e, binary) = self.next_record()?;
            let data = std::mem::replace(&mut self.data, TraceData::Owned(Vec::new()));
            let line = &data.bytes()[s..e];
            let r = if line.is_empty() {
                None
            } else if binary || (line[0] != b'!' && line[0] != b'#') {
                Some(self.parse_packet(line, binary))
            } else {
                if line[0] == b'!' {
                    self.bang_line(line);
                }
                None
            };
            self.data = data;
            if let Some(r) = r {
                return Some(r);
            }
        }
    }

    fn bang_line(&mut self, line: &[u8]) {
        let text = String::from_utf8_lossy(line).into_owned();
        let w = words(line);
        let Some(&first) = w.first() else {
            return;
        };
        match first {
            "!data" | "!contents" => self.bang_data(&text),
            "!flowid" => self.bang_flowid(&text),
            "!proto" => self.bang_proto(&w, "!proto"),
            "!aggregate" => {
                match (
                    w.len(),
                    w.get(1).and_then(|s| pronto_lang::args::parse_u32(s).ok()),
                ) {
                    (2, Some(v)) => self.aggregate = Some(v),
                    _ => {
                        self.warn("bad !aggregate specification");
                        self.aggregate = None;
                    }
                }
            }
            "!binary" => {
                if w.len() != 1 {
                    self.warn("bad !binary specification");
                }
                self.binary = true;
                self.lineno = 0;
            }
            _ => {}
        }
    }

    /// Parses one field's text into a value (bytes go to `self.scratch`).
    fn parse_text(&mut self, f: F, name: &str, s: &str) -> Option<Val> {
        use pronto_lang::args::{parse_ip4, parse_u32, parse_u64};
        let num = |max: u64| parse_u64(s).ok().filter(|&v| v <= max).map(Val::N);
        let ts = || {
            pronto_lang::args::parse_timestamp(s)
                .ok()
                .map(|(sec, n)| Val::Ts(ns(sec, n as i64)))
        };
        match f {
            F::Null => Some(Val::N(0)),
            F::Timestamp | F::NTimestamp | F::FirstTimestamp | F::FirstNTimestamp => ts(),
            F::TsUsec1 => num(u64::MAX),
            F::Link => match s {
                ">" => Some(Val::N(0)),
                "<" => Some(Val::N(1)),
                _ => num(u32::MAX as u64),
            },
            F::IpSrc | F::IpDst => parse_ip4(s)
                .ok()
                .map(|a| Val::N(u32::from_be_bytes(a) as u64)),
            F::IpFrag | F::IpFragoff => {
                match s {
                    "." => return Some(Val::N(0)),
                    "!" => return Some(Val::N(0x4000)),
                    "F" => return Some(Val::N(0x2000)),
                    "f" => return Some(Val::N(100)),
                    _ => {}
                }
                let digits = s.bytes().take_while(|c| c.is_ascii_digit()).count();
                let mut v = if digits == 0 {
                    0
                } else {
                    parse_u32(&s[..digits]).ok()? >> 3
                };
                for c in s[digits..].bytes() {
                    match c {
                        b'!' => v |= 0x4000,
                        b'+' => v |= 0x2000,
                        _ => return None,
                    }
                }
                (!s.is_empty()).then_some(Val::N(v as u64))
            }
            F::IpProto => parse_proto(s).map(|p| Val::N(p as u64)),
            F::IpEcn => match s {
                "0" | "1" | "2" | "3" => num(3),
                "no" | "-" => Some(Val::N(0)),
                "ect1" | "ECT(1)" => Some(Val::N(1)),
                "ect2" | "ECT(0)" => Some(Val::N(2)),
                "ce" | "CE" => Some(Val::N(3)),
                _ => None,
            },
            F::IpOpt => super::ipsumdump::parse_ip_opt(s, &mut self.scratch).then_some(Val::Bytes),
            F::TcpOpt => {
                let mask = match name {
                    "tcp_sack" => super::ipsumdump::TCPOPT_SACK,
                    "tcp_ntopt" => super::ipsumdump::TCPOPT_NTALL,
                    _ => !0,
                };
                super::ipsumdump::parse_tcp_opt(s, mask, &mut self.scratch).then_some(Val::Bytes)
            }
            F::TcpFlags => parse_tcp_flags(s).map(|v| Val::N(v as u64)),
            F::IcmpType => icmp_type_by_name(s)
                .or_else(|| parse_u8(s))
                .map(|v| Val::N(v as u64)),
            F::IcmpCode => {
                let th = self.od.th();
                let named = if self.od.have_icmp_type {
                    icmp_code_by_name(self.od.buf.get(th).copied().unwrap_or(0), s)
                } else {
                    None
                };
                named.or_else(|| parse_u8(s)).map(|v| Val::N(v as u64))
            }
            F::EthSrc | F::EthDst => pronto_lang::args::parse_ether(s).ok().map(Val::Eth),
            F::EthType => {
                let h = s
                    .strip_prefix("0x")
                    .or_else(|| s.strip_prefix("0X"))
                    .unwrap_or(s);
                u16::from_str_radix(h, 16).ok().map(|v| Val::N(v as u64))
            }
            F::Payload => {
                let mut out = std::mem::take(&mut self.scratch);
                let r = unquote_bytes(s.as_bytes(), &mut out);
                self.scratch = out;
                r.map(|_| Val::Bytes)
            }
            F::IpTos | F::IpDscp | F::IpTtl | F::IpHl | F::TcpOff => num(255),
            F::IpId | F::IpSum | F::Sport | F::Dport | F::TcpWindow | F::TcpUrp => num(65535),
            F::IcmpFlowid | F::IcmpSeq | F::IcmpNextmtu => num(65535),
            _ => num(u32::MAX as u64),
        }
    }

    /// Decodes one binary field at `b[at..]`; returns the value and the
    /// bytes it used.
    fn parse_binary(&mut self, fl: &Field, b: &[u8]) -> Option<(Val, usize)> {
        let w = fl.width;
        if w == SPECIAL {
            let n = *b.first()? as usize;
            let bytes = b.get(1..1 + n)?;
            self.scratch.clear();
            self.scratch.extend_from_slice(bytes);
            return Some((Val::Bytes, n + 1));
        }
        if w < 0 {
            return None;
        }
        let w = w as usize;
        let v = b.get(..w)?;
        let val = match (fl.f, fl.name) {
            (F::Timestamp | F::FirstTimestamp, _) => {
                Val::Ts(ns(be32(v, 0) as i64, be32(v, 4) as i64 * 1000))
            }
            (F::NTimestamp | F::FirstNTimestamp, _) => {
                Val::Ts(ns(be32(v, 4) as i64, be32(v, 0) as i64))
            }
            // Click writes the low word first.
            (F::TsUsec1, _) => Val::N((be32(v, 4) as u64) << 32 | be32(v, 0) as u64),
            // The writer stores the flag character; read it as text.
            (F::IpFrag, _) => Val::N(match v[0] {
                b'!' => 0x4000,
                b'F' => 0x2000,
                b'f' => 100,
                _ => 0,
            }),
            (F::EthSrc | F::EthDst, _) => {
                let mut a = [0u8; 6];
                a.copy_from_slice(v);
                Val::Eth(a)
            }
            _ => Val::N(match w {
                0 => 0,
                1 => v[0] as u64,
                2 => be16(v, 0) as u64,
                4 => be32(v, 0) as u64,
                _ => u64::from_be_bytes([v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]]),
            }),
        };
        Some((val, w))
    }

    fn parse_packet(&mut self, line: &[u8], binary: bool) -> LineResult {
        self.od.reset();
        self.spans.clear();
        let mut nfields = 0;
        if binary {
            let mut at = 0;
            for i in 0..self.fields.len() {
                let fl = self.fields[i];
                let w = fl.width;
                let n = match w {
                    SPECIAL => line.get(at).map(|&n| n as usize + 1),
                    TEXT_ONLY => None,
                    w => Some(w as usize),
                };
                match n.filter(|&n| at + n <= line.len()) {
                    Some(n) => {
                        self.spans.push((at, at + n));
                        at += n;
                    }
                    None => {
                        self.spans.push((usize::MAX, 0));
                        at = line.len();
                    }
                }
            }
        } else {
            let mut at = 0;
            while self.spans.len() < self.fields.len() {
                let start = at;
                while at < line.len() && !line[at].is_ascii_whitespace() {
                    if line[at] == b'"' {
                        at += 1;
                        while at < line.len() && line[at] != b'"' {
                            at += if line[at] == b'\\' { 2 } else { 1 };
                        }
                    }
                    at = (at + 1).min(line.len());
                }
                self.spans.push((start, at));
                while at < line.len() && line[at].is_ascii_whitespace() {
                    at += 1;
                }
            }
        }
        for k in 0..self.order.len() {
            let i = self.order[k];
            let fl = self.fields[i];
            let (s, e) = self.spans[i];
            if s == usize::MAX || fl.f == F::Null {
                continue;
            }
            let val = if binary {
                self.parse_binary(&fl, &line[s..e]).map(|v| v.0)
            } else {
                let text = &line[s..e];
                if text.is_empty() || text == b"-" {
                    continue;
                }
                match std::str::from_utf8(text) {
                    Ok(t) => self.parse_text(fl.f, fl.name, t),
                    Err(_) => None,
                }
            };
            if let Some(v) = val {
                self.inject(fl.f, v);
                nfields += 1;
            }
        }
        if nfields == 0 {
            let blank = !binary && line.iter().all(|c| c.is_ascii_whitespace());
            if !blank {
                self.bad_lines += 1;
                if !self.format_complaint {
                    self.format_complaint = true;
                    if self.fields.is_empty() {
                        self.warn("no '!data' provided");
                    } else {
                        self.warn("packet parse error");
                    }
                }
                return LineResult::Bad;
            }
            return LineResult::Skip;
        }
        self.finish_packet();
        LineResult::Packet
    }

    fn inject(&mut self, f: F, v: Val) {
        let dflt = self.dflt;
        let od = &mut self.od;
        let n = match v {
            Val::N(n) => n,
            _ => 0,
        };
        let n32 = n as u32;
        match f {
            F::Null | F::Direction | F::IcmpTypeName | F::IcmpCodeName => {}
            F::Timestamp | F::NTimestamp => {
                if let Val::Ts(t) = v {
                    od.ts = t;
                }
            }
            F::FirstTimestamp | F::FirstNTimestamp => {
                if let Val::Ts(t) = v {
                    od.first_ts = t;
                }
            }
            F::TsSec => od.ts = ns(n32 as i64, od.ts.rem_euclid(1_000_000_000)),
            F::TsUsec => {
                od.ts = ns(
                    od.ts.div_euclid(1_000_000_000),
                    (n32 as i64 % 1_000_000) * 1000,
                )
            }
            F::TsUsec1 => od.ts = ns((n / 1_000_000) as i64, (n % 1_000_000) as i64 * 1000),
            F::Count => od.extra_packets = n32.saturating_sub(1),
            F::Link => od.paint = n as u8,
            F::Aggregate => od.aggregate = n32,
            F::WireLen => od.want_len = n32,
            F::EthSrc | F::EthDst | F::EthType => {
                if !od.mac {
                    if !od.insert(0, 14) {
                        return;
                    }
                    od.mac = true;
                    if let Some(nh) = od.nh.as_mut() {
                        *nh += 14;
                    }
                    put16(&mut od.buf, 12, 0x0800);
                }
                match (f, v) {
                    (F::EthSrc, Val::Eth(a)) => od.buf[6..12].copy_from_slice(&a),
                    (F::EthDst, Val::Eth(a)) => od.buf[0..6].copy_from_slice(&a),
                    (F::EthType, _) => {
                        put16(&mut od.buf, 12, n as u16);
                        if n != 0x0800 && n != 0x86dd {
                            od.not_ip = true;
                        }
                    }
                    _ => {}
                }
            }
            F::IpSrc
            | F::IpDst
            | F::IpTos
            | F::IpDscp
            | F::IpEcn
            | F::IpTtl
            | F::IpFrag
            | F::IpFragoff
            | F::IpId
            | F::IpSum
            | F::IpProto
            | F::IpHl
            | F::IpLen
            | F::IpCaptureLen
            | F::IpOpt => {
                if !od.make_ip(0, &dflt) {
                    return;
                }
                let nh = od.nh.unwrap_or(0);
                let b = &mut od.buf;
                match f {
                    F::IpSrc => put32(b, nh + 12, n32),
                    F::IpDst => put32(b, nh + 16, n32),
                    F::IpTos => b[nh + 1] = n as u8,
                    F::IpDscp => b[nh + 1] = (b[nh + 1] & 3) | ((n as u8) << 2),
                    F::IpEcn => b[nh + 1] = (b[nh + 1] & 0xfc) | (n as u8 & 3),
                    F::IpTtl => b[nh + 8] = n as u8,
                    F::IpFrag | F::IpFragoff => put16(b, nh + 6, n as u16),
                    F::IpId => put16(b, nh + 4, n as u16),
                    F::IpSum => put16(b, nh + 10, n as u16),
                    F::IpProto => b[nh + 9] = n as u8,
                    F::IpLen => od.want_len = (nh as u32).wrapping_add(n32),
                    F::IpHl => {
                        od.have_ip_hl = true;
                        let v = ((n as usize + 3) & !3).min(60);
                        if v > od.hl {
                            let more = v - od.hl;
                            if !od.insert(nh + od.hl, more) {
                                return;
                            }
                            od.hl = v;
                        }
                        od.buf[nh] = 0x40 | (v / 4) as u8;
                    }
                    F::IpOpt => {
                        od.have_ip_hl = true;
                        let olen = self.scratch.len().min(40);
                        if olen == 0 {
                            return;
                        }
                        let ip_hl = (20 + olen + 3) & !3;
                        if ip_hl > od.hl {
                            if !od.insert(nh + od.hl, ip_hl - od.hl) {
                                return;
                            }
                            od.hl = ip_hl;
                            od.buf[nh] = 0x40 | (ip_hl / 4) as u8;
                        }
                        od.buf[nh + 20..nh + 20 + olen].copy_from_slice(&self.scratch[..olen]);
                        od.buf[nh + 20 + olen..nh + ip_hl].fill(0);
                    }
                    _ => {}
                }
            }
            F::Sport | F::Dport | F::UdpLen => {
                if !od.make_ip(0, &dflt) || !od.make_transp(&dflt) {
                    return;
                }
                let nh = od.nh.unwrap_or(0);
                let p = od.buf[nh + 9];
                let th = od.th();
                match f {
                    F::Sport | F::Dport => {
                        if p != 0 && !matches!(p, 6 | 17 | 33 | 136) {
                            return;
                        }
                        put16(
                            &mut od.buf,
                            th + if f == F::Sport { 0 } else { 2 },
                            n as u16,
                        );
                    }
                    _ => {
                        if p != 0 && p != 17 && p != 136 {
                            return;
                        }
                        if od.tlen() < 8 && !od.grow(8 - od.tlen()) {
                            return;
                        }
                        put16(&mut od.buf, th + 4, n as u16);
                    }
                }
            }
            F::TcpSeq
            | F::TcpAck
            | F::TcpOff
            | F::TcpFlags
            | F::TcpWindow
            | F::TcpUrp
            | F::TcpOpt => {
                if !od.make_ip(6, &dflt) || !od.make_transp(&dflt) {
                    return;
                }
                let th = od.th();
                let cur_off = od.buf.get(th + 12).map_or(0, |b| (b >> 4) as usize * 4);
                match f {
                    F::TcpSeq => put32(&mut od.buf, th + 4, n32),
                    F::TcpAck => put32(&mut od.buf, th + 8, n32),
                    F::TcpFlags => {
                        put8(&mut od.buf, th + 13, n as u8);
                        if let Some(b) = od.buf.get_mut(th + 12) {
                            *b = (*b & 0xf0) | ((n >> 8) as u8 & 0x0f);
                        }
                    }
                    F::TcpWindow => put16(&mut od.buf, th + 14, n as u16),
                    F::TcpUrp => put16(&mut od.buf, th + 18, n as u16),
                    F::TcpOff => {
                        let v = ((n as usize + 3) & !3).min(60);
                        if od.buf.len() < th + 13 {
                            return;
                        }
                        if v > cur_off {
                            let at = (th + cur_off).min(od.buf.len());
                            if !od.insert(at, v - cur_off) {
                                return;
                            }
                        }
                        od.buf[th + 12] = (od.buf[th + 12] & 0x0f) | ((v / 4) << 4) as u8;
                    }
                    _ => {
                        od.have_tcp_hl = true;
                        let olen = self.scratch.len().min(40);
                        if olen == 0 {
                            return;
                        }
                        let off = (20 + olen + 3) & !3;
                        if od.tlen() < off && !od.grow(off - od.tlen()) {
                            return;
                        }
                        if off > cur_off {
                            od.buf[th + 12] = (od.buf[th + 12] & 0x0f) | ((off / 4) << 4) as u8;
                        }
                        od.buf[th + 20..th + 20 + olen].copy_from_slice(&self.scratch[..olen]);
                        od.buf[th + 20 + olen..th + off].fill(0);
                    }
                }
            }
            F::IcmpType | F::IcmpCode | F::IcmpFlowid | F::IcmpSeq | F::IcmpNextmtu => {
                if !od.make_ip(1, &dflt) || !od.make_transp(&dflt) {
                    return;
                }
                if od.tlen() < 8 && !od.grow(8 - od.tlen()) {
                    return;
                }
                let th = od.th();
                let t = od.buf[th];
                let has_flow = |t: u8| matches!(t, 0 | 8 | 13 | 14 | 15 | 16);
                match f {
                    F::IcmpType => {
                        od.buf[th] = n as u8;
                        od.have_icmp_type = true;
                        let len = if matches!(n, 13 | 14) { 20 } else { 8 };
                        if od.tlen() < len {
                            let _ = od.grow(len - od.tlen());
                        }
                    }
                    F::IcmpCode => od.buf[th + 1] = n as u8,
                    F::IcmpFlowid if !od.have_icmp_type || has_flow(t) => {
                        put16(&mut od.buf, th + 4, n as u16)
                    }
                    F::IcmpSeq if !od.have_icmp_type || has_flow(t) => {
                        put16(&mut od.buf, th + 6, n as u16)
                    }
                    F::IcmpNextmtu if !od.have_icmp_type || t == 3 => {
                        put16(&mut od.buf, th + 6, n as u16)
                    }
                    _ => {}
                }
            }
            F::Payload | F::PayloadLen => {
                if od.make_ip(0, &dflt) {
                    od.make_transp(&dflt);
                }
                let off = od.payload_off();
                let plen = if f == F::Payload {
                    self.scratch.len()
                } else {
                    n as usize
                };
                if f == F::Payload && plen == 0 {
                    return;
                }
                od.account_payload_len(off, plen);
                if f == F::Payload {
                    // Headers may have grown: the payload follows them.
                    let off = od.payload_off();
                    let room = MAX_PACKET.saturating_sub(off);
                    let plen = plen.min(room);
                    if od.buf.len() < off + plen {
                        od.buf.resize(off + plen, 0);
                    }
                    od.buf[off..off + plen].copy_from_slice(&self.scratch[..plen]);
                }
            }
        }
    }

    /// Lengths, checksums and annotations once all fields are in.
    fn finish_packet(&mut self) {
        let dflt = self.dflt;
        let checksum_on = self.checksum;
        let od = &mut self.od;
        if dflt.flowid.is_some() {
            let _ = od.make_ip(0, &dflt);
        }
        if od.not_ip {
            return;
        }
        let Some(nh) = od.nh else { return };
        let _ = od.make_transp(&dflt);
        let mut ip_len = be16(&od.buf, nh + 2) as u32;
        if ip_len == 0 {
            ip_len = od.want_len;
            if ip_len >= nh as u32 {
                ip_len -= nh as u32;
            }
            if ip_len > 0xffff {
                ip_len = 0xffff;
            } else if ip_len == 0 {
                ip_len = (od.buf.len() - nh) as u32;
            }
            put16(&mut od.buf, nh + 2, ip_len as u16);
        }
        let th = od.th();
        let proto = od.buf[nh + 9];
        if proto == 17 && od.first_frag() && od.buf.get(th + 4..th + 6) == Some(&[0, 0]) {
            put16(
                &mut od.buf,
                th + 4,
                ip_len.wrapping_sub(od.hl as u32) as u16,
            );
        }
        if checksum_on {
            let have = (od.buf.len() - nh) as u32;
            if ip_len > have && nh + ip_len as usize <= MAX_PACKET {
                od.buf.resize(nh + ip_len as usize, 0);
            }
            let full = od.buf.len() - nh >= ip_len as usize;
            let hl = od.hl;
            put16(&mut od.buf, nh + 10, 0);
            let s = checksum(&od.buf[nh..nh + hl]);
            put16(&mut od.buf, nh + 10, s);
            let frag = be16(&od.buf, nh + 6) & 0x3fff != 0;
            let tl = od.buf.len() - th;
            let sum_at = match proto {
                6 if tl >= 20 => Some(16),
                17 if tl >= 8 => Some(6),
                1 if tl >= 4 => Some(2),
                _ => None,
            };
            if let Some(at) = sum_at.filter(|_| !frag && full) {
                put16(&mut od.buf, th + at, 0);
                let v = if proto == 1 {
                    checksum(&od.buf[th..])
                } else {
                    let ip = &od.buf[nh..th];
                    let ps = pseudo_header_sum(&ip[12..16], &ip[16..20], proto, tl);
                    !fold(ones_sum(&od.buf[th..], ps))
                };
                put16(&mut od.buf, th + at, v);
            }
        }
    }

    /// Makes a packet from `self.od`.
    fn make_packet(&mut self, out: &Out<'_>) -> Option<Packet> {
        let od = &self.od;
        let mut p = out.pool.alloc_from(&od.buf)?;
        p.set_timestamp_ns(od.ts);
        if od.mac {
            p.set_mac_header(0);
        }
        if let (Some(nh), false) = (od.nh, od.not_ip) {
            p.set_network_header(nh as isize, od.hl);
            let mut dst = [0u8; 4];
            dst.copy_from_slice(&od.buf[nh + 16..nh + 20]);
            p.set_dst_ip_anno(dst);
        }
        p.set_paint_anno(od.paint);
        let aggregate = self.aggregate.unwrap_or(od.aggregate);
        let extra = od.want_len.saturating_sub(od.buf.len() as u32);
        let a = p.anno_bytes_mut();
        a[AGGREGATE_ANNO_OFFSET..AGGREGATE_ANNO_OFFSET + 4]
            .copy_from_slice(&aggregate.to_ne_bytes());
        a[EXTRA_PACKETS_ANNO_OFFSET..EXTRA_PACKETS_ANNO_OFFSET + 4]
            .copy_from_slice(&od.extra_packets.to_ne_bytes());
        a[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
            .copy_from_slice(&extra.to_ne_bytes());
        a[FIRST_TIMESTAMP_ANNO_OFFSET..FIRST_TIMESTAMP_ANNO_OFFSET + 8]
            .copy_from_slice(&od.first_ts.to_ne_bytes());
        Some(p)
    }

    /// Fills `batch` with up to `max` packets.
    fn fill(&mut self, batch: &mut Batch, max: usize, out: &mut Out<'_>) -> TaskStatus {
        let max = max.min(batch.room());
        let mut n = 0;
        while n < max {
            if self.held.is_none() {
                let Some(r) = self.read_line() else {
                    self.ended = true;
                    break;
                };
                if !matches!(r, LineResult::Packet) {
                    continue;
                }
                let Some(mut p) = self.make_packet(out) else {
                    // Pool exhausted: this line is lost, as a failed
                    // allocation loses it in Click.
                    break;
                };
                if self.multipacket && Multipacket::is_multi(&p) {
                    self.multi.start(&mut p);
                }
                self.held = Some(p);
            }
            if self.timing {
                let ts = self.held.as_ref().map_or(0, |p| p.timestamp_ns());
                let off = *self.timing_offset.get_or_insert(out.now - ts);
                let due = ts.saturating_add(off);
                if out.now < due {
                    return TaskStatus::SleepUntil(due);
                }
            }
            let p = if self.multipacket {
                match self.multi.next(&mut self.held, out.pool) {
                    Some(p) => p,
                    None => break,
                }
            } else {
                match self.held.take() {
                    Some(p) => p,
                    None => break,
                }
            };
            if !self.sample.keep() {
                continue;
            }
            if let Err(p) = batch.push(p) {
                drop::<Packet>(p);
                break;
            }
            n += 1;
        }
        if self.ended && self.held.is_none() {
            if self.stop {
                self.stop = false;
                out.stop();
            }
            return if n > 0 {
                TaskStatus::Busy
            } else {
                TaskStatus::Done
            };
        }
        if n > 0 {
            TaskStatus::Busy
        } else {
            TaskStatus::Idle
        }
    }

    fn produce(&mut self, batch: &mut Batch, max: usize, out: &mut Out<'_>) -> TaskStatus {
        if self.pending_stop {
            self.pending_stop = false;
            out.stop();
        }
        if !self.active {
            return TaskStatus::Idle;
        }
        if self.ended && self.held.is_none() {
            return TaskStatus::Done;
        }
        self.fill(batch, max, out)
    }

    /// Number of lines skipped because they could not be parsed.
    pub fn bad_lines(&self) -> u64 {
        self.bad_lines
    }
}

impl Element for FromIPSummaryDump {
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

    fn held(&self) -> usize {
        usize::from(self.held.is_some())
    }

    fn capacity(&self) -> usize {
        1
    }

    fn notifier(&self, kind: NotifierKind, port: usize) -> NotifierRole {
        // Pulled, it says whether packets may come (Click's empty notifier):
        // not while inactive, nor once the file is read to its end.
        if self.pull && kind == NotifierKind::Empty && port == 0 {
            NotifierRole::Signal
        } else {
            NotifierRole::None
        }
    }

    fn signal(&self, _kind: NotifierKind, _port: usize, _up: &dyn Fn(usize) -> bool) -> bool {
        self.active && !(self.ended && self.held.is_none())
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("bad_lines", self.bad_lines);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("sampling_prob"),
            HandlerInfo::rw("active"),
            HandlerInfo::read("encap"),
            HandlerInfo::read("filesize"),
            HandlerInfo::read("filepos"),
            HandlerInfo::write("stop"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "sampling_prob" => Ok(self.sample.unparse()),
            "active" => Ok(self.active.to_string()),
            "encap" => Ok("IP".into()),
            "filesize" => Ok(self.data.filesize(&self.filename)),
            "filepos" => Ok(self.pos.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "active" => {
                self.active = pronto_lang::args::parse_bool(value.trim())
                    .map_err(|_| HandlerError::BadValue("type mismatch".into()))?;
                Ok(())
            }
            "stop" => {
                self.active = false;
                self.pending_stop = true;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.held = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{configure, push_batch, run_task, scratch};
    use crate::app::toipsummarydump::ToIPSummaryDump;
    use pronto_packet::Pool;

    fn reader(conf: &str, dir: &std::path::Path) -> FromIPSummaryDump {
        let ctx = ConfigCtx {
            name: "f",
            config: conf,
            ninputs: 0,
            noutputs: 1,
            base_dir: dir,
            keywords: FromIPSummaryDump::SPEC.keywords,
            output_push: &[true],
            input_push: &[],
            peers: &crate::NoPeers,
        };
        match FromIPSummaryDump::build(&ctx, &mut None) {
            Ok(e) => e,
            Err(e) => panic!("configure failed: {}", e.message),
        }
    }

    fn read_all(e: &mut FromIPSummaryDump, pool: &Pool) -> Vec<Packet> {
        let mut v = Vec::new();
        loop {
            let (st, mut outs, _) = run_task(e, pool, 1, 0);
            v.append(&mut outs[0]);
            if st == TaskStatus::Done {
                return v;
            }
        }
    }

    fn dump(pool: &Pool, pkts: Vec<Packet>, conf: &str, dir: &std::path::Path) -> Vec<u8> {
        let mut t = configure(
            ToIPSummaryDump::SPEC.keywords,
            ToIPSummaryDump::configure,
            &format!("out, {conf}"),
            &[true],
            &[],
            dir,
        )
        .expect("writer");
        let mut b = Batch::new();
        for p in pkts {
            let _ = b.push(p);
        }
        push_batch(t.as_mut(), pool, &mut b, 0, 0);
        t.cleanup();
        std::fs::read(dir.join("out")).expect("read dump")
    }

    #[test]
    fn builds_tcp_packet_from_text() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromsum-tcp");
        let mut e = reader(
            "DATA \"!data ts src sport dst dport proto tcp_flags tcp_seq tcp_ack ip_id ip_ttl payload\n\
             1.5 1.2.3.4 1000 5.6.7.8 80 T SA 7 9 258 30 \\\"ab\\\"\n\", CHECKSUM true",
            &dir,
        );
        let pkts = read_all(&mut e, &pool);
        assert_eq!(pkts.len(), 1);
        let p = &pkts[0];
        assert_eq!(p.timestamp_ns(), 1_500_000_000);
        assert_eq!(p.network_header_offset(), Some(0));
        assert_eq!(p.transport_header_offset(), Some(20));
        let d = p.data();
        let mut want = vec![
            0x45, 0, 0, 42, // v4 hl5, tos, len 42
            1, 2, 0, 0, // id 258, no frag
            30, 6, 0, 0, // ttl 30, TCP, checksum (below)
            1, 2, 3, 4, // src
            5, 6, 7, 8, // dst
            0x03, 0xe8, 0, 80, // ports 1000 -> 80
            0, 0, 0, 7, // seq
            0, 0, 0, 9, // ack
            0x50, 0x12, 0, 0, // off 5, SYN|ACK, window 0
            0, 0, 0, 0, // checksum (below), urp
            b'a', b'b', // payload
        ];
        let s = checksum(&want[..20]);
        want[10..12].copy_from_slice(&s.to_be_bytes());
        let ps = pseudo_header_sum(&want[12..16], &want[16..20], 6, 22);
        let t = !fold(ones_sum(&want[20..], ps));
        want[36..38].copy_from_slice(&t.to_be_bytes());
        assert_eq!(d, &want[..]);
        assert_eq!(p.dst_ip_anno(), [5, 6, 7, 8]);
    }

    #[test]
    fn icmp_names_proto_and_short_packets() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromsum-icmp");
        let mut e = reader(
            "DATA \"!data src dst icmp_type\n!proto I\n18.26.4.44 10.0.0.4 echo\n\
             10.0.0.4 18.26.4.44 echo-reply\n\", CHECKSUM true",
            &dir,
        );
        let pkts = read_all(&mut e, &pool);
        assert_eq!(pkts.len(), 2);
        let d = pkts[0].data();
        assert_eq!(d.len(), 28);
        assert_eq!((d[9], d[20], d[21]), (1, 8, 0));
        assert_eq!(checksum(&d[..20]), 0, "IP checksum valid");
        assert_eq!(checksum(&d[20..]), 0, "ICMP checksum valid");
        let text = dump(&pool, pkts, "FIELDS src dst icmp_type_name icmp_type", &dir);
        assert_eq!(
            String::from_utf8_lossy(&text),
            "!IPSummaryDump 1.3\n!data ip_src ip_dst icmp_type_name icmp_type\n\
             18.26.4.44 10.0.0.4 echo 8\n10.0.0.4 18.26.4.44 echo-reply 0\n"
        );

        // Without CHECKSUM, ip_len beyond the data becomes extra length.
        let mut e = reader("DATA \"!data ip_len proto\n1000 U\n\"", &dir);
        let pkts = read_all(&mut e, &pool);
        let p = &pkts[0];
        assert_eq!(p.len(), 28);
        assert_eq!(&p.data()[2..4], &1000u16.to_be_bytes());
        assert_eq!(&p.data()[24..26], &980u16.to_be_bytes(), "udp length");
        assert_eq!(p.data()[8], 100, "default TTL");
        assert_eq!(&p.data()[10..12], &[0, 0], "no checksum without CHECKSUM");
        let a = p.anno_bytes();
        let o = EXTRA_LENGTH_ANNO_OFFSET;
        assert_eq!(
            u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]]),
            972
        );
    }

    #[test]
    fn bad_lines_are_counted_and_skipped() {
        let pool = Pool::new(16).expect("pool");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let mut e = reader("sample.ipsum, STOP true", &dir);
        let pkts = read_all(&mut e, &pool);
        assert_eq!(pkts.len(), 4);
        assert_eq!(e.bad_lines(), 1);
        assert_eq!(pkts[2].len(), 45);
        assert_eq!(&pkts[2].data()[40..], b"hello");
        assert_eq!(pkts[3].data()[9], 17);
        assert_eq!(&pkts[3].data()[28..], b"abcde");
        assert_eq!(e.read_handler("encap").expect("encap"), "IP");
        assert_eq!(e.read_handler("sampling_prob").expect("prob"), "1");
        let (_, _, ctrl) = run_task(&mut e, &pool, 1, 0);
        assert_eq!(ctrl.stop_requests, 0, "stop asked once, at the end");
    }

    #[test]
    fn parses_field_syntaxes() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromsum-syntax");
        let mut e = reader(
            "DATA \"!data ip_fragoff ip_ecn ip_dscp tcp_flags count link\n\
             16+! ce 10 FSRPAUECN 3 <\n\"",
            &dir,
        );
        let pkts = read_all(&mut e, &pool);
        let d = pkts[0].data();
        assert_eq!(&d[6..8], &(0x6000u16 | 2).to_be_bytes());
        assert_eq!(d[1], (10 << 2) | 3);
        // Fragments get no transport header.
        assert_eq!(d.len(), 20);
        assert_eq!(pkts[0].paint_anno(), 1);
        let a = pkts[0].anno_bytes();
        let o = EXTRA_PACKETS_ANNO_OFFSET;
        assert_eq!(u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]]), 2);
    }

    /// Packets made from the sample file, dumped (text and binary), read
    /// back, and dumped again, give the same text.
    #[test]
    fn round_trip_text_and_binary() {
        let pool = Pool::new(64).expect("pool");
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        let dir = scratch("fromsum-rt");
        let fields = "timestamp ip_src sport ip_dst dport ip_proto ip_len ip_id ip_ttl ip_tos \
                      ip_frag tcp_flags tcp_seq tcp_ack tcp_window udp_len payload_len count";
        let mut e = reader("sample.ipsum", &data);
        let pkts = read_all(&mut e, &pool);
        let text1 = dump(&pool, pkts, &format!("FIELDS {fields} payload"), &dir);
        std::fs::write(dir.join("t1"), &text1).expect("write");
        let mut e = reader("t1", &dir);
        let pkts = read_all(&mut e, &pool);
        let text2 = dump(&pool, pkts, &format!("FIELDS {fields} payload"), &dir);
        assert_eq!(
            String::from_utf8_lossy(&text1),
            String::from_utf8_lossy(&text2)
        );
        assert!(String::from_utf8_lossy(&text1).contains(
            "1600000000.001000 10.0.0.1 1234 10.0.0.2 80 T 45 3 64 0 . PA 1001 0 0 - 5 1 \"hello\"\n"
        ));

        // Binary.
        let mut e = reader("t1", &dir);
        let pkts = read_all(&mut e, &pool);
        let bin = dump(&pool, pkts, &format!("FIELDS {fields}, BINARY true"), &dir);
        let head = format!("!IPSummaryDump 1.3\n!data {fields}\n!binary\n");
        assert!(bin.starts_with(head.as_bytes()));
        // First record: length word, then timestamp seconds and microseconds.
        let r = &bin[head.len()..];
        let reclen = 4 + 8 + 4 + 2 + 4 + 2 + 1 + 4 + 2 + 1 + 1 + 1 + 1 + 4 + 4 + 2 + 4 + 4 + 4;
        assert_eq!(&r[..4], &(reclen as u32).to_be_bytes());
        assert_eq!(&r[4..12], &[0x5f, 0x5e, 0x10, 0, 0, 0, 0, 1]);
        assert_eq!(&r[12..16], &[10, 0, 0, 1]);
        std::fs::write(dir.join("b1"), &bin).expect("write");
        let mut e = reader("b1", &dir);
        let pkts = read_all(&mut e, &pool);
        assert_eq!(pkts.len(), 4);
        let text3 = dump(&pool, pkts, &format!("FIELDS {fields} payload"), &dir);
        let strip_payload = |t: &[u8]| -> Vec<String> {
            String::from_utf8_lossy(t)
                .lines()
                .filter(|l| !l.starts_with('!'))
                .map(|l| l.rsplit_once(' ').map_or(l, |x| x.0).to_string())
                .collect()
        };
        assert_eq!(strip_payload(&text1), strip_payload(&text3));
    }

    #[test]
    fn config_errors() {
        let dir = scratch("fromsum-err");
        let c = |s: &str| {
            let ctx = ConfigCtx {
                name: "f",
                config: s,
                ninputs: 0,
                noutputs: 1,
                base_dir: &dir,
                keywords: FromIPSummaryDump::SPEC.keywords,
                output_push: &[true],
                input_push: &[],
                peers: &crate::NoPeers,
            };
            FromIPSummaryDump::build(&ctx, &mut None)
                .err()
                .map(|e| e.message)
        };
        assert_eq!(
            c("").as_deref(),
            Some("FILENAME: required argument missing")
        );
        assert_eq!(
            c("x, DATA y").as_deref(),
            Some("FILENAME and DATA conflict")
        );
        assert!(c("nonexistent").is_some());
        assert_eq!(c("nonexistent, ALLOW_NONEXISTENT true"), None);
    }
}
