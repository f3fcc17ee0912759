//! `FromTcpdump`: reads tcpdump's text output and makes IPv4 packets that
//! resemble the lines: headers only, the rest of each packet's length in
//! its extra length annotation.
//!
//! Two line formats are read. The one Click reads, from tcpdump 3.x
//! (`-tt`):
//!
//! ```text
//! 5.226619 192.168.1.100.32784 > 192.150.187.37.22: P 760650054:760650102(48) ack 300852684 win 32800 <nop,nop,timestamp 531021 399866430> (DF) [tos 0x10]
//! ```
//!
//! and today's tcpdump 4.x, with or without `-v` (whose IP details come in
//! parentheses before the addresses, the addresses on a continuation line):
//!
//! ```text
//! 1000000000.000007 IP 10.0.0.1.40000 > 10.0.0.2.80: Flags [S], seq 1000, win 65535, options [mss 1460,nop,wscale 7], length 0
//! ```
//!
//! Sequence numbers are made absolute again per flow the way tcpdump made
//! them relative: the SYN-ACK fixes each side's initial sequence number.

use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
use pronto_packet::{Batch, Packet, BATCH_MAX, EXTRA_LENGTH_ANNO_OFFSET};

use super::ipsumdump::{cp_integer, tcp_flag_bit};
use super::tracetext::{next_line, Sampler, TraceData};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, NotifierKind,
    NotifierRole, Out, Spec, TaskStatus,
};

const TH_FIN: u8 = 0x01;
const TH_SYN: u8 = 0x02;
const TH_ACK: u8 = 0x10;
const IP_DF: u16 = 0x4000;
const IP_MF: u16 = 0x2000;
const IP_OFFMASK: u16 = 0x1fff;
const IP_ECNMASK: u8 = 0x03;

/// What tcpdump's relative sequence numbers are relative to, per flow
/// (both directions in one record).
#[derive(Clone, Copy, Default)]
struct FlowRecord {
    init_seq: [u32; 2],
    last_seq: [u32; 2],
}

/// A flow: (source, source port, destination, destination port), the
/// side with the lower port first.
type FlowKey = ([u8; 4], u16, [u8; 4], u16);

/// `SEQ_GEQ`: `a` at or after `b` in sequence space.
fn seq_geq(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

fn find(b: &[u8], from: usize, c: u8) -> usize {
    b[from.min(b.len())..]
        .iter()
        .position(|&x| x == c)
        .map_or(b.len(), |k| from + k)
}

fn starts(b: &[u8], i: usize, s: &[u8]) -> bool {
    b.get(i..i + s.len()) == Some(s)
}

fn digit_at(b: &[u8], i: usize) -> bool {
    b.get(i).is_some_and(u8::is_ascii_digit)
}

/// Reads a number at `*i` (base 0 or `base`); `*i` moves past it.
fn num(b: &[u8], i: &mut usize, base: u32) -> u32 {
    let (j, v) = cp_integer(b, *i, base);
    *i = j;
    v.unwrap_or(0)
}

fn be16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

fn put16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_be_bytes());
}

fn put32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_be_bytes());
}

/// A timestamp: `SECONDS.FRACTION` (`-tt`), or tcpdump's default
/// `HH:MM:SS.FRACTION`, which is read as that time on 1 January 1970.
fn parse_time(s: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(s).ok()?;
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    let secs = if secs.contains(':') {
        let mut parts = secs.split(':');
        let mut t: i64 = 0;
        for _ in 0..3 {
            let p = parts.next()?;
            if p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()) || p.len() > 2 {
                return None;
            }
            t = t * 60 + p.parse::<i64>().ok()?;
        }
        if parts.next().is_some() {
            return None;
        }
        t
    } else {
        if secs.is_empty() || !secs.bytes().all(|c| c.is_ascii_digit()) || secs.len() > 12 {
            return None;
        }
        secs.parse::<i64>().ok()?
    };
    if !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let mut ns: i64 = 0;
    for k in 0..9 {
        ns = ns * 10 + frac.as_bytes().get(k).map_or(0, |c| i64::from(c - b'0'));
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// An address with a port (`1.2.3.4.80`, `1.2.3.4.http`) when `port`,
/// else a bare address.
fn parse_endpoint(s: &[u8], port: bool) -> Option<([u8; 4], u16)> {
    let s = std::str::from_utf8(s).ok()?;
    if !port {
        return pronto_lang::args::parse_ip4_literal(s).ok().map(|a| (a, 0));
    }
    let k = s.rfind(['.', ':'])?;
    let addr = pronto_lang::args::parse_ip4_literal(&s[..k]).ok()?;
    let p = &s[k + 1..];
    let port = if !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()) {
        p.parse::<u16>().ok()?
    } else {
        pronto_classify::names::port_by_name(p)?
    };
    Some((addr, port))
}

/// The packet being built from one line: IP header at 0, transport
/// header (if any) at 20.
struct Build {
    buf: [u8; 80],
    len: usize,
    data_len: i64,
    /// The total IP length `-v` gave, applied once the headers are known.
    ip_total: Option<u32>,
    ts: i64,
}

impl Build {
    fn new() -> Build {
        let mut buf = [0u8; 80];
        buf[0] = 0x45;
        buf[8] = 2;
        Build {
            buf,
            len: 40,
            data_len: -1,
            ip_total: None,
            ts: 0,
        }
    }

    fn proto(&self) -> u8 {
        self.buf[9]
    }

    fn first_frag(&self) -> bool {
        be16(&self.buf, 6) & IP_OFFMASK == 0
    }

    fn set_tcp_options(&mut self, opt: &mut Vec<u8>) {
        while !opt.len().is_multiple_of(4) {
            opt.push(0);
        }
        opt.truncate(40);
        self.buf[40..40 + opt.len()].copy_from_slice(opt);
        self.len = 40 + opt.len();
        self.buf[32] = (((20 + opt.len()) / 4) as u8) << 4;
    }

    /// An IP length read from the line (`len N`, `length N`).
    fn ip_length(&mut self, u: u32) {
        let u = i64::from(u);
        if self.data_len < 0 || u == self.len as i64 + self.data_len {
            self.data_len = (u - self.len as i64).max(0);
        } else if self.proto() == 6 && self.len >= 40 {
            // The difference must be TCP options the line did not show.
            let new_len = u - self.data_len;
            if (40..=80).contains(&new_len) {
                let new_len = new_len as usize;
                if new_len > self.len {
                    self.buf[self.len..new_len].fill(0);
                }
                self.len = new_len;
                self.buf[32] = (((new_len - 20) >> 2) as u8) << 4;
            }
        }
    }
}

/// How a line ended up.
enum Line {
    Packet(Build),
    Bad,
}

/// Reads tcpdump's text output.
pub struct FromTcpdump {
    filename: String,
    data: TraceData,
    pos: usize,
    lineno: u64,
    stop: bool,
    active: bool,
    checksum: bool,
    sample: Sampler,
    format_complaint: bool,
    bad_lines: u64,
    flows: pronto_hash::KeyedMap<FlowKey, FlowRecord>,
    absolute_seq: Option<bool>,
    opt: Vec<u8>,
    ended: bool,
    pending_stop: bool,
    pull: bool,
    burst: usize,
}

impl FromTcpdump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromTcpdump")
        .ports("0/1")
        .processing("a/a")
        .keywords(&[
            "FILENAME", "STOP", "ACTIVE", "ZERO", "CHECKSUM", "SAMPLE", "BURST",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FromTcpdump(FILENAME [, KEYWORDS])\n\n\
             Reads tcpdump(1)'s text output (`tcpdump -n -tt', or the default time of\n\
             day, read as a time on 1 January 1970) and emits IPv4 packets resembling\n\
             its lines: TCP (flags, sequence and acknowledgement numbers made absolute\n\
             again per flow, window, urgent pointer, options mss/nop/eol/wscale/sackOK/\n\
             timestamp/sack), UDP (ports, length) and other protocols by address; the\n\
             IP details tcpdump shows (tos, ECN, DF, fragments, ttl, id, length) are\n\
             set, TTL is 2 and the rest zero otherwise. Packets hold headers only: the\n\
             IP length covers the data, and the extra length annotation says how much\n\
             is missing. Both tcpdump 3.x's format (`P 1:49(48) ack 1 win 32800\n\
             <nop,nop,timestamp 1 2> (DF) [tos 0x10]') and 4.x's (`IP 1.2.3.4.80 >\n\
             5.6.7.8.1024: Flags [P.], seq 1:49, ack 1, win 32800, length 48', with\n\
             -v's `IP (tos 0x0, ttl 64, ...)' line and its continuation) are read.\n\
             `#' lines, blank lines and indented lines that continue nothing (packet\n\
             contents from -x/-X/-A) are skipped; a line that cannot be parsed is\n\
             skipped and counted (the first one is reported with its line number).\n\
             FILENAME `-' reads standard input. Compressed files are not read:\n\
             uncompress them first.\n\n\
             Ports: no inputs; 1 output (agnostic: pushes from a task or answers pulls).\n\
             Keywords:\n  \
             STOP      boolean; stop the driver at the end (default false)\n  \
             ACTIVE    boolean; emit nothing until activated if false (default true)\n  \
             ZERO      boolean; accepted (unset bytes are always zero)\n  \
             CHECKSUM  boolean; set IP, TCP and UDP checksums, over the headers the\n            \
             packet holds (default false: zero)\n  \
             SAMPLE    probability of emitting each packet (default 1)\n  \
             BURST     packets per task run (default 1, as Click)\n\
             Handlers:\n  sampling_prob (read), active (read/write), encap (read: IP), filesize\n  \
             (read), filepos (read), stop (write), bad_lines (read: lines skipped as\n  \
             unparsable)",
        );

    /// Configures a `FromTcpdump`: opens the file and looks at its first
    /// line.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let filename: String = a.read_mp("FILENAME")?;
        let stop = a.read_or("STOP", false)?;
        let active = a.read_or("ACTIVE", true)?;
        let _zero: bool = a.read_or("ZERO", true)?;
        let checksum = a.read_or("CHECKSUM", false)?;
        let sample: f64 = a.read_or("SAMPLE", 1.0)?;
        let burst: usize = a.read_or("BURST", 1)?;
        a.finish()?;
        let sample = Sampler::new(ctx.name, sample, 0x9e37_79b9_7f4a_7c15)?;
        if crate::world::check_only() {
            return Ok(crate::world::stand_in([crate::world::input_file(
                ctx, &filename,
            )]));
        }
        let (data, filename) = TraceData::open(ctx, &filename, false)?;
        let first = data.bytes().first();
        if !first.is_some_and(u8::is_ascii_digit) {
            eprintln!("{filename}: first line suspicious; is this a tcpdump output file?");
        }
        Ok(Box::new(FromTcpdump {
            filename,
            data,
            pos: 0,
            lineno: 0,
            stop,
            active,
            checksum,
            sample,
            format_complaint: false,
            bad_lines: 0,
            flows: pronto_hash::map(),
            absolute_seq: None,
            opt: Vec::with_capacity(48),
            ended: false,
            pending_stop: false,
            pull: !ctx.output_push.first().copied().unwrap_or(true),
            burst: burst.clamp(1, BATCH_MAX),
        }))
    }

    /// Number of lines skipped because they could not be parsed.
    pub fn bad_lines(&self) -> u64 {
        self.bad_lines
    }

    /// Reads lines until one describes a packet. None at the end.
    fn read_packet(&mut self) -> Option<Build> {
        let data = std::mem::replace(&mut self.data, TraceData::Owned(Vec::new()));
        let r = self.read_packet_from(data.bytes());
        self.data = data;
        r
    }

    fn read_packet_from(&mut self, bytes: &[u8]) -> Option<Build> {
        loop {
            let (s, e) = next_line(bytes, &mut self.pos)?;
            self.lineno += 1;
            let line = &bytes[s..e];
            let Some(&c) = line.first() else { continue };
            if c == b'#' || c == b' ' || c == b'\t' {
                continue;
            }
            // tcpdump -v: `TS IP (...)` then the rest on an indented line.
            let mut joined = None;
            if let Some(k) = ip_details_end(line) {
                if line[k..].iter().all(u8::is_ascii_whitespace) {
                    let mut p = self.pos;
                    if let Some((s2, e2)) = next_line(bytes, &mut p) {
                        let cont = &bytes[s2..e2];
                        if cont.first().is_some_and(|&c| c == b' ' || c == b'\t') {
                            self.pos = p;
                            self.lineno += 1;
                            joined = Some(cont.trim_ascii_start());
                        }
                    }
                }
            }
            let r = if c.is_ascii_digit() {
                self.parse_line(line, joined)
            } else {
                Line::Bad
            };
            match r {
                Line::Packet(b) => return Some(b),
                Line::Bad => {
                    self.bad_lines += 1;
                    if !self.format_complaint {
                        self.format_complaint = true;
                        eprintln!("{}:{}: packet parse error", self.filename, self.lineno);
                    }
                }
            }
        }
    }

    fn parse_line(&mut self, line: &[u8], cont: Option<&[u8]>) -> Line {
        let mut b = Build::new();
        let sp = find(line, 0, b' ');
        let Some(ts) = parse_time(&line[..sp]) else {
            return Line::Bad;
        };
        b.ts = ts;
        let rest = line.get(sp + 1..).unwrap_or(&[]);
        let ok = if let Some(r) = rest.strip_prefix(b"IP ") {
            self.parse_modern(&mut b, r, cont)
        } else {
            self.parse_classic(&mut b, rest)
        };
        if !ok {
            return Line::Bad;
        }
        self.finish(&mut b);
        Line::Packet(b)
    }

    /// Click's format: `SRC > DST: PROTOCOL-DATA IP-DETAILS`.
    fn parse_classic(&mut self, b: &mut Build, s: &[u8]) -> bool {
        // Guess the protocol from what follows the colon.
        let mut colon = find(s, 0, b':') + 1;
        while colon < s.len() && s[colon] == b' ' {
            colon += 1;
        }
        if let Some(&c) = s.get(colon) {
            b.buf[9] = if c == b'i' {
                1
            } else if c == b'u' || (c == b'[' && s.get(colon + 1) == Some(&b'u')) {
                17
            } else if c == b'.' || c.is_ascii_uppercase() {
                6
            } else {
                0
            };
        }
        if !self.parse_addresses(b, s, true) {
            return false;
        }
        let i = if b.proto() == 6 && b.first_frag() {
            self.read_tcp_classic(b, s, colon)
        } else if b.proto() == 17 && b.first_frag() {
            b.len = 28;
            read_udp_classic(b, s, colon)
        } else {
            b.len = 20;
            colon
        };
        // IP details at the end of the line, in () and [] groups.
        let mut s2 = s.len();
        while s2 > i {
            while s2 > i && s[s2 - 1].is_ascii_whitespace() {
                s2 -= 1;
            }
            if s2 <= i || (s[s2 - 1] != b')' && s[s2 - 1] != b']') {
                break;
            }
            let close = s2 - 1;
            let opener = if s[close] == b')' { b'(' } else { b'[' };
            let Some(open) = s[i..close]
                .iter()
                .rposition(|&c| c == opener)
                .map(|k| i + k)
            else {
                break;
            };
            s2 = open;
            classic_ip_items(b, &s[open + 1..close]);
        }
        true
    }

    /// Both addresses (`SRC > DST:`), with ports for TCP and UDP.
    fn parse_addresses(&self, b: &mut Build, s: &[u8], classic: bool) -> bool {
        let s2 = find(s, 0, b' ');
        if s2 == 0 || s2 + 2 >= s.len() || s[s2 + 1] != b'>' || s[s2 + 2] != b' ' {
            return false;
        }
        let ports = matches!(b.proto(), 6 | 17);
        let Some((src, sport)) = parse_endpoint(&s[..s2], ports) else {
            return false;
        };
        let d = s2 + 3;
        let d2 = find(s, d, b':');
        let dst = if classic || d2 < s.len() {
            &s[d..d2]
        } else {
            return false;
        };
        let Some((dst, dport)) = parse_endpoint(dst, ports) else {
            return false;
        };
        b.buf[12..16].copy_from_slice(&src);
        b.buf[16..20].copy_from_slice(&dst);
        put16(&mut b.buf, 20, sport);
        put16(&mut b.buf, 22, dport);
        true
    }

    /// Click's TCP part: `FLAGS [SEQ:END(LEN)] [ack N] [win N] [urg N]
    /// [<OPTIONS>]`; returns where it stopped.
    fn read_tcp_classic(&mut self, b: &mut Build, s: &[u8], mut i: usize) -> usize {
        let mut flags = 0u8;
        if s.get(i) == Some(&b'.') {
            flags = TH_ACK;
            i += 1;
        } else {
            while let Some(bit) = s.get(i).and_then(|&c| tcp_flag_bit(c)) {
                flags |= bit as u8;
                i += 1;
            }
        }
        b.buf[33] = flags;
        b.buf[32] = 5 << 4;
        if s.get(i) != Some(&b' ') {
            return i;
        }
        // `[bad hdr length ...]`, `[tcp sum ok]`, `[bad tcp cksum ...]`
        if starts(s, i + 1, b"[bad hdr") {
            let k = find(s, i + 9, b']');
            if k + 1 < s.len() && s[k + 1] == b' ' {
                i = k + 1;
            }
        }
        if starts(s, i + 1, b"[tcp sum ok] ") {
            i += 14;
        } else if starts(s, i + 1, b"[bad tcp") {
            let k = find(s, i + 9, b']');
            if k + 1 < s.len() && s[k + 1] == b' ' {
                i = k + 2;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
        let (mut seq, mut end_seq) = (0u32, 0u32);
        if i < s.len() && s[i] != b'a' {
            let (e1, v1) = cp_integer(s, i, 0);
            if v1.is_none() || s.get(e1) != Some(&b':') {
                return i;
            }
            let (e2, v2) = cp_integer(s, e1 + 1, 0);
            if v2.is_none() || s.get(e2) != Some(&b'(') {
                return i;
            }
            seq = v1.unwrap_or(0);
            end_seq = v2.unwrap_or(0);
            let mut k = e2 + 1;
            while digit_at(s, k) {
                k += 1;
            }
            if s.get(k) != Some(&b')') {
                return k;
            } else if s.get(k + 1) != Some(&b' ') {
                return k + 1;
            }
            i = k + 2;
        }
        b.data_len = i64::from(end_seq.wrapping_sub(seq) as i32);
        let mut ack = None;
        if starts(s, i, b"ack ") && digit_at(s, i + 4) {
            i += 4;
            ack = Some(num(s, &mut i, 0));
            if s.get(i) == Some(&b' ') {
                i += 1;
            }
        }
        let rec = self.patch_seq(b, seq, end_seq, ack, end_seq != 0 || seq != 0);
        if starts(s, i, b"win ") && digit_at(s, i + 4) {
            i += 4;
            let w = num(s, &mut i, 0);
            put16(&mut b.buf, 34, w as u16);
            if s.get(i) == Some(&b' ') {
                i += 1;
            }
        }
        if starts(s, i, b"urg ") && digit_at(s, i + 4) {
            i += 4;
            let u = num(s, &mut i, 0);
            put16(&mut b.buf, 38, u as u16);
            if s.get(i) == Some(&b' ') {
                i += 1;
            }
        }
        if s.get(i) == Some(&b'<') {
            let mut opt = std::mem::take(&mut self.opt);
            opt.clear();
            i += 1;
            while i < s.len() && s[i] != b'>' {
                let before = opt.len();
                let known = parse_option(s, &mut i, &mut opt, rec, b"sack sack ", b"timestamp ");
                if s.get(i) == Some(&b',') {
                    i += 1;
                } else if !known || (i < s.len() && s[i] != b'>') {
                    opt.truncate(before);
                    while i < s.len() && s[i] != b',' && s[i] != b'>' {
                        i += 1;
                    }
                    if s.get(i) == Some(&b',') {
                        i += 1;
                    }
                }
            }
            if s.get(i) == Some(&b'>') {
                i += 1;
            }
            b.set_tcp_options(&mut opt);
            self.opt = opt;
        }
        i
    }

    /// Makes tcpdump's relative sequence numbers absolute (tcpdump's own
    /// rule for a new flow: no record yet, or a SYN); returns the
    /// acknowledged side's initial sequence number for SACK blocks.
    fn patch_seq(
        &mut self,
        b: &mut Build,
        mut seq: u32,
        mut end_seq: u32,
        ack: Option<u32>,
        have_seq: bool,
    ) -> Option<u32> {
        let mut flags = b.buf[33];
        if ack.is_some() {
            flags |= TH_ACK;
            b.buf[33] = flags;
        }
        let mut ack_seq = ack.unwrap_or(0);
        let mut sack_base = None;
        if flags & TH_ACK != 0 {
            let src: [u8; 4] = b.buf[12..16].try_into().unwrap_or_default();
            let dst: [u8; 4] = b.buf[16..20].try_into().unwrap_or_default();
            let (sport, dport) = (be16(&b.buf, 20), be16(&b.buf, 22));
            let rev = sport < dport || (sport == dport && src < dst);
            let key = if rev {
                (src, sport, dst, dport)
            } else {
                (dst, dport, src, sport)
            };
            let (r, o) = (usize::from(rev), usize::from(!rev));
            let absolute = &mut self.absolute_seq;
            let rec = self.flows.entry(key).or_default();
            if (rec.init_seq[0] == 0 && rec.init_seq[1] == 0) || flags & TH_SYN != 0 {
                rec.init_seq[r] = seq;
                rec.init_seq[o] = ack_seq.wrapping_sub(1);
            } else {
                let abs = *absolute
                    .get_or_insert_with(|| seq_geq(ack_seq, rec.init_seq[o]) && ack_seq > 8000);
                if !have_seq {
                    seq = rec.last_seq[r];
                    end_seq = seq;
                } else if !abs {
                    seq = seq.wrapping_add(rec.init_seq[r]);
                    end_seq = end_seq.wrapping_add(rec.init_seq[r]);
                }
                if !abs {
                    ack_seq = ack_seq.wrapping_add(rec.init_seq[o]);
                }
            }
            if *absolute == Some(false) {
                sack_base = Some(rec.init_seq[o]);
            }
            rec.last_seq[r] = end_seq
                .wrapping_add(u32::from(flags & TH_SYN != 0))
                .wrapping_add(u32::from(flags & TH_FIN != 0));
            if rec.last_seq[o] == 0 {
                rec.last_seq[o] = ack_seq;
            }
        }
        put32(&mut b.buf, 24, seq);
        put32(&mut b.buf, 28, ack_seq);
        sack_base
    }

    /// tcpdump 4.x: `[(IP-DETAILS)] SRC > DST: PROTOCOL-DATA`.
    fn parse_modern(&mut self, b: &mut Build, s: &[u8], cont: Option<&[u8]>) -> bool {
        let mut s = s;
        let mut proto_known = false;
        if s.first() == Some(&b'(') {
            let Some(close) = matching_paren(s, 0) else {
                return false;
            };
            proto_known = modern_ip_items(b, &s[1..close]);
            s = s[close + 1..].trim_ascii_start();
            if s.is_empty() {
                match cont {
                    Some(c) => s = c,
                    None => return false,
                }
            }
        }
        let colon = find(s, 0, b':');
        let after = s.get(colon + 1..).unwrap_or(&[]).trim_ascii_start();
        if !proto_known {
            // Addresses with ports: TCP (`Flags [`) or UDP (anything else);
            // without: ICMP by name, else unknown.
            let src = &s[..find(s, 0, b' ')];
            let dots = src.iter().filter(|&&c| c == b'.').count();
            b.buf[9] = if after.starts_with(b"Flags [") {
                6
            } else if dots == 4 {
                17
            } else if after.starts_with(b"ICMP") {
                1
            } else {
                0
            };
        }
        if !self.parse_addresses(b, s, false) {
            return false;
        }
        match b.proto() {
            6 if b.first_frag() => self.read_tcp_modern(b, after),
            17 if b.first_frag() => {
                b.len = 28;
                if let Some(k) = find_word(after, b"length ") {
                    let mut i = k;
                    if digit_at(after, i) {
                        b.data_len = i64::from(num(after, &mut i, 10));
                    }
                }
            }
            _ => {
                b.len = 20;
                if let Some(k) = find_word(after, b"length ") {
                    let mut i = k;
                    if digit_at(after, i) {
                        b.data_len = i64::from(num(after, &mut i, 10));
                    }
                }
            }
        }
        if let Some(t) = b.ip_total {
            b.ip_length(t);
        }
        true
    }

    /// tcpdump 4.x's TCP part: `Flags [S.], seq A[:B], ack N, win N, urg N,
    /// options [...], length N`.
    fn read_tcp_modern(&mut self, b: &mut Build, s: &[u8]) {
        b.buf[32] = 5 << 4;
        let mut i = 0;
        let mut flags = 0u8;
        if starts(s, 0, b"Flags [") {
            i = 7;
            while i < s.len() && s[i] != b']' {
                match s[i] {
                    b'.' => flags |= TH_ACK,
                    c => flags |= tcp_flag_bit(c).unwrap_or(0) as u8,
                }
                i += 1;
            }
            i += 1;
        }
        b.buf[33] = flags;
        let (mut seq, mut end_seq, mut have_seq) = (0u32, 0u32, false);
        let mut ack = None;
        let mut length = None;
        let mut opts: Option<(usize, usize)> = None;
        while i < s.len() {
            while i < s.len() && (s[i] == b',' || s[i] == b' ') {
                i += 1;
            }
            if starts(s, i, b"seq ") && digit_at(s, i + 4) {
                i += 4;
                seq = num(s, &mut i, 10);
                end_seq = seq;
                have_seq = true;
                if s.get(i) == Some(&b':') && digit_at(s, i + 1) {
                    i += 1;
                    end_seq = num(s, &mut i, 10);
                }
            } else if starts(s, i, b"ack ") && digit_at(s, i + 4) {
                i += 4;
                ack = Some(num(s, &mut i, 10));
            } else if starts(s, i, b"win ") && digit_at(s, i + 4) {
                i += 4;
                let w = num(s, &mut i, 10);
                put16(&mut b.buf, 34, w as u16);
            } else if starts(s, i, b"urg ") && digit_at(s, i + 4) {
                i += 4;
                let u = num(s, &mut i, 10);
                put16(&mut b.buf, 38, u as u16);
            } else if starts(s, i, b"options [") {
                let start = i + 9;
                let end = find(s, start, b']');
                // sack blocks contain no `]`, so the first one closes.
                opts = Some((start, end));
                i = end + 1;
            } else if starts(s, i, b"length ") && digit_at(s, i + 7) {
                i += 7;
                length = Some(num(s, &mut i, 10));
                break;
            } else {
                // cksum 0x1234 (correct), or anything else: to the next comma.
                while i < s.len() && s[i] != b',' {
                    i += 1;
                }
            }
        }
        b.data_len = match length {
            Some(l) => i64::from(l),
            None => i64::from(end_seq.wrapping_sub(seq) as i32),
        };
        let rec = self.patch_seq(b, seq, end_seq, ack, have_seq);
        if let Some((start, end)) = opts {
            let mut opt = std::mem::take(&mut self.opt);
            opt.clear();
            let mut k = start;
            while k < end {
                let before = opt.len();
                let known = parse_option(&s[..end], &mut k, &mut opt, rec, b"sack ", b"TS val ");
                if !known || (k < end && s[k] != b',') {
                    opt.truncate(before);
                    while k < end && s[k] != b',' {
                        k += 1;
                    }
                }
                if k < end && s[k] == b',' {
                    k += 1;
                }
            }
            b.set_tcp_options(&mut opt);
            self.opt = opt;
        }
    }

    /// IP length, UDP length, annotations and checksums.
    fn finish(&self, b: &mut Build) {
        if b.data_len < 0 {
            b.data_len = 0;
        }
        let total = (b.len as i64 + b.data_len).min(0xffff);
        b.data_len = total - b.len as i64;
        put16(&mut b.buf, 2, total as u16);
        if b.proto() == 17 && b.first_frag() && b.len >= 28 {
            put16(&mut b.buf, 24, (total - 20) as u16);
        }
        if self.checksum {
            put16(&mut b.buf, 10, 0);
            let s = checksum(&b.buf[..20]);
            put16(&mut b.buf, 10, s);
            let frag = be16(&b.buf, 6) & (IP_MF | IP_OFFMASK) != 0;
            let at = match b.proto() {
                6 if b.len >= 40 => Some(36),
                17 if b.len >= 28 => Some(26),
                _ => None,
            };
            if let Some(at) = at.filter(|_| !frag) {
                put16(&mut b.buf, at, 0);
                let tl = b.len - 20;
                let ps = pseudo_header_sum(&b.buf[12..16], &b.buf[16..20], b.proto(), tl);
                let v = !fold(ones_sum(&b.buf[20..b.len], ps));
                put16(&mut b.buf, at, v);
            }
        }
    }

    fn make(&self, b: &Build, out: &Out<'_>) -> Option<Packet> {
        let mut p = out.pool.alloc_from(&b.buf[..b.len])?;
        p.set_timestamp_ns(b.ts);
        p.set_network_header(0, 20);
        let extra = b.data_len.clamp(0, u32::MAX as i64) as u32;
        p.anno_bytes_mut()[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
            .copy_from_slice(&extra.to_ne_bytes());
        Some(p)
    }

    fn produce(&mut self, batch: &mut Batch, max: usize, out: &mut Out<'_>) -> TaskStatus {
        if self.pending_stop {
            self.pending_stop = false;
            out.stop();
        }
        if !self.active {
            return TaskStatus::Idle;
        }
        if self.ended {
            return TaskStatus::Done;
        }
        let max = max.min(batch.room());
        let mut n = 0;
        while n < max {
            let Some(b) = self.read_packet() else {
                self.ended = true;
                if self.stop {
                    self.stop = false;
                    out.stop();
                }
                break;
            };
            if !self.sample.keep() {
                continue;
            }
            // A refused allocation loses this line, as in Click.
            let Some(p) = self.make(&b, out) else { break };
            if let Err(p) = batch.push(p) {
                drop::<Packet>(p);
                break;
            }
            n += 1;
        }
        match (n, self.ended) {
            (0, true) => TaskStatus::Done,
            (0, false) => TaskStatus::Idle,
            _ => TaskStatus::Busy,
        }
    }
}

/// Where `w` ends in `s`, if `s` has it at the start or after a space or
/// comma.
fn find_word(s: &[u8], w: &[u8]) -> Option<usize> {
    (0..s.len()).find_map(|k| {
        (starts(s, k, w) && (k == 0 || s[k - 1] == b' ' || s[k - 1] == b',')).then_some(k + w.len())
    })
}

/// The index of the `)` that closes the `(` at `open`.
fn matching_paren(s: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, &c) in s.iter().enumerate().skip(open) {
        match c {
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// For `TS IP (DETAILS)...`: where the details' `)` ends.
fn ip_details_end(line: &[u8]) -> Option<usize> {
    let sp = find(line, 0, b' ');
    let rest = line.get(sp + 1..)?;
    if !rest.starts_with(b"IP (") {
        return None;
    }
    matching_paren(rest, 3).map(|k| sp + 1 + k + 1)
}

/// One TCP option at `*i` into `opt`: `nop`, `eol`, `mss N`, `wscale N`,
/// `sackOK`, timestamps (`timestamp A B` / `TS val A ecr B`), SACK blocks
/// (`sack sack N {A:B}...` / `sack N {A:B}...`). False if not one of these.
fn parse_option(
    s: &[u8],
    i: &mut usize,
    opt: &mut Vec<u8>,
    sack_base: Option<u32>,
    sack_word: &[u8],
    ts_word: &[u8],
) -> bool {
    let k = *i;
    if starts(s, k, b"nop") {
        opt.push(1);
        *i += 3;
    } else if starts(s, k, b"eol") {
        opt.push(0);
        *i += 3;
    } else if starts(s, k, b"mss ") && digit_at(s, k + 4) {
        *i += 4;
        let u = num(s, i, 0);
        opt.extend_from_slice(&[2, 4, (u >> 8) as u8, u as u8]);
    } else if starts(s, k, b"wscale ") && digit_at(s, k + 7) {
        *i += 7;
        let u = num(s, i, 0);
        opt.extend_from_slice(&[3, 3, u as u8]);
    } else if starts(s, k, b"sackOK") {
        opt.extend_from_slice(&[4, 2]);
        *i += 6;
    } else if starts(s, k, ts_word) && digit_at(s, k + ts_word.len()) {
        *i += ts_word.len();
        let a = num(s, i, 0);
        let sep: &[u8] = if ts_word == b"TS val " {
            b" ecr "
        } else {
            b" "
        };
        if starts(s, *i, sep) && digit_at(s, *i + sep.len()) {
            *i += sep.len();
            let e = num(s, i, 0);
            opt.extend_from_slice(&[8, 10]);
            opt.extend_from_slice(&a.to_be_bytes());
            opt.extend_from_slice(&e.to_be_bytes());
        } else {
            return false;
        }
    } else if starts(s, k, sack_word) && digit_at(s, k + sack_word.len()) {
        *i += sack_word.len();
        let n = num(s, i, 0);
        opt.extend_from_slice(&[5, (n.min(31) * 8 + 2) as u8]);
        while s.get(*i) == Some(&b' ') {
            *i += 1;
        }
        while s.get(*i) == Some(&b'{') && digit_at(s, *i + 1) {
            *i += 1;
            let mut a = num(s, i, 0);
            if s.get(*i) == Some(&b':') && digit_at(s, *i + 1) {
                *i += 1;
                let mut z = num(s, i, 0);
                if s.get(*i) == Some(&b'}') {
                    *i += 1;
                    if let Some(base) = sack_base {
                        a = a.wrapping_add(base);
                        z = z.wrapping_add(base);
                    }
                    opt.extend_from_slice(&a.to_be_bytes());
                    opt.extend_from_slice(&z.to_be_bytes());
                }
            }
        }
        while s.get(*i) == Some(&b' ') {
            *i += 1;
        }
    } else {
        return false;
    }
    true
}

/// Click's UDP part: `[udp sum ok]`..., then `udp LENGTH`.
fn read_udp_classic(b: &mut Build, s: &[u8], mut i: usize) -> usize {
    if starts(s, i + 1, b"[bad hdr") {
        let k = find(s, i + 9, b']');
        if k + 1 < s.len() && s[k + 1] == b' ' {
            i = k + 1;
        }
    }
    if starts(s, i + 1, b"[udp sum ok] ") {
        i += 14;
    } else if starts(s, i + 1, b"[bad udp") {
        let k = find(s, i + 9, b']');
        if k + 1 < s.len() && s[k + 1] == b' ' {
            i = k + 2;
        }
    }
    if starts(s, i, b"udp ") && digit_at(s, i + 4) {
        i += 4;
        b.data_len = i64::from(num(s, &mut i, 0));
    }
    i
}

/// One `(...)`/`[...]` group of Click's format: `tos 0xN`, `ECT(0)`,
/// `ECT(1)`, `CE`, `DF`, `frag ID:LEN@OFF[+]`, `ttl N`, `id N`, `len N`.
fn classic_ip_items(b: &mut Build, g: &[u8]) {
    let mut i = 0;
    while i < g.len() {
        let rest = g.len() - i;
        if rest >= 7 && starts(g, i, b"tos 0x") {
            i += 6;
            b.buf[1] = num(g, &mut i, 16) as u8;
        } else if rest >= 6
            && starts(g, i, b"ECT(")
            && matches!(g[i + 4], b'0' | b'1')
            && g[i + 5] == b')'
        {
            let ect = if g[i + 4] == b'0' { 2 } else { 1 };
            b.buf[1] = (b.buf[1] & !IP_ECNMASK) | ect;
            i += 6;
        } else if rest >= 2 && starts(g, i, b"CE") {
            b.buf[1] |= IP_ECNMASK;
            i += 2;
        } else if rest >= 2 && starts(g, i, b"DF") {
            let off = be16(&b.buf, 6) | IP_DF;
            put16(&mut b.buf, 6, off);
            i += 2;
        } else if rest >= 10 && starts(g, i, b"frag ") && digit_at(g, i + 5) {
            i += 5;
            let id = num(g, &mut i, 0);
            put16(&mut b.buf, 4, id as u16);
            if g.get(i) != Some(&b':') || !digit_at(g, i + 1) {
                break;
            }
            i += 1;
            b.data_len = i64::from(num(g, &mut i, 0));
            if g.get(i) != Some(&b'@') || !digit_at(g, i + 1) {
                break;
            }
            i += 1;
            let off = num(g, &mut i, 0) as u16;
            let mut v = (be16(&b.buf, 6) & !IP_OFFMASK) | (off & IP_OFFMASK);
            if g.get(i) == Some(&b'+') {
                v |= IP_MF;
                i += 1;
            }
            put16(&mut b.buf, 6, v);
        } else if rest >= 5 && starts(g, i, b"ttl ") && digit_at(g, i + 4) {
            i += 4;
            b.buf[8] = num(g, &mut i, 0) as u8;
        } else if rest >= 4 && starts(g, i, b"id ") && digit_at(g, i + 3) {
            i += 3;
            let id = num(g, &mut i, 0);
            put16(&mut b.buf, 4, id as u16);
        } else if rest >= 5 && starts(g, i, b"len ") && digit_at(g, i + 4) {
            i += 4;
            let u = num(g, &mut i, 0);
            b.ip_length(u);
        } else {
            break;
        }
        while i < g.len() && (g[i] == b',' || g[i].is_ascii_whitespace()) {
            i += 1;
        }
    }
}

/// tcpdump 4.x's `-v` details: `tos 0x0, ttl 64, id 1, offset 0, flags
/// [DF], proto TCP (6), length 62`. True if the protocol was given.
fn modern_ip_items(b: &mut Build, g: &[u8]) -> bool {
    let mut i = 0;
    let mut proto = false;
    let mut total = None;
    while i < g.len() {
        while i < g.len() && (g[i] == b',' || g[i] == b' ') {
            i += 1;
        }
        if starts(g, i, b"tos 0x") {
            i += 6;
            b.buf[1] = num(g, &mut i, 16) as u8;
        } else if starts(g, i, b"ttl ") && digit_at(g, i + 4) {
            i += 4;
            b.buf[8] = num(g, &mut i, 10) as u8;
        } else if starts(g, i, b"id ") && digit_at(g, i + 3) {
            i += 3;
            let id = num(g, &mut i, 10);
            put16(&mut b.buf, 4, id as u16);
        } else if starts(g, i, b"offset ") && digit_at(g, i + 7) {
            i += 7;
            let off = (num(g, &mut i, 10) / 8) as u16 & IP_OFFMASK;
            let v = (be16(&b.buf, 6) & !IP_OFFMASK) | off;
            put16(&mut b.buf, 6, v);
        } else if starts(g, i, b"flags [") {
            let end = find(g, i, b']');
            let f = &g[i + 7..end];
            let mut v = be16(&b.buf, 6);
            if f.windows(2).any(|w| w == b"DF") {
                v |= IP_DF;
            }
            if f.contains(&b'+') {
                v |= IP_MF;
            }
            put16(&mut b.buf, 6, v);
            i = end + 1;
        } else if starts(g, i, b"proto ") {
            let open = find(g, i, b'(');
            if open < g.len() && digit_at(g, open + 1) {
                let mut k = open + 1;
                b.buf[9] = num(g, &mut k, 10) as u8;
                proto = true;
                i = find(g, k, b')') + 1;
            } else {
                i = find(g, i, b',');
            }
        } else if starts(g, i, b"length ") && digit_at(g, i + 7) {
            i += 7;
            total = Some(num(g, &mut i, 10));
        } else if starts(g, i, b"options (") {
            i = matching_paren(g, i + 8).map_or(g.len(), |k| k + 1);
        } else {
            while i < g.len() && g[i] != b',' {
                i += 1;
            }
        }
    }
    b.ip_total = total;
    proto
}

impl Element for FromTcpdump {
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

    fn notifier(&self, kind: NotifierKind, port: usize) -> NotifierRole {
        if self.pull && kind == NotifierKind::Empty && port == 0 {
            NotifierRole::Signal
        } else {
            NotifierRole::None
        }
    }

    fn signal(&self, _kind: NotifierKind, _port: usize, _up: &dyn Fn(usize) -> bool) -> bool {
        self.active && !self.ended
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
            HandlerInfo::read("bad_lines"),
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
            "bad_lines" => Ok(self.bad_lines.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "active" => {
                self.active = pronto_lang::args::parse_bool(value.trim())
                    .map_err(|_| HandlerError::BadValue("syntax error".into()))?;
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, run_task, scratch};
    use pronto_packet::Pool;

    /// `tcpdump -r t.pcap -n -tt -v` (tcpdump 4.99.3) of a seven-packet
    /// raw-IP trace: a TCP handshake, data, a SACK, a FIN, and UDP.
    const VERBOSE: &str = "\
1000000000.000007 IP (tos 0x0, ttl 64, id 11, offset 0, flags [DF], proto TCP (6), length 60)
    10.0.0.1.40000 > 10.0.0.2.80: Flags [S], cksum 0x8f9d (correct), seq 1000, win 65535, options [mss 1460,nop,wscale 7,sackOK,TS val 1000 ecr 0], length 0
1000000001.125007 IP (tos 0x0, ttl 63, id 900, offset 0, flags [DF], proto TCP (6), length 48)
    10.0.0.2.80 > 10.0.0.1.40000: Flags [S.], cksum 0x49eb (correct), seq 5000, ack 1001, win 28960, options [mss 1460,nop,nop,sackOK], length 0
1000000002.250007 IP (tos 0x0, ttl 64, id 12, offset 0, flags [DF], proto TCP (6), length 40)
    10.0.0.1.40000 > 10.0.0.2.80: Flags [.], cksum 0xe5d9 (correct), ack 1, win 502, length 0
1000000003.375007 IP (tos 0x10, ttl 64, id 13, offset 0, flags [DF], proto TCP (6), length 58)
    10.0.0.1.40000 > 10.0.0.2.80: Flags [P.], cksum 0x0720 (correct), seq 1:19, ack 1, win 502, length 18: HTTP, length: 18
\tGET / HTTP/1.0
\t
1000000004.500007 IP (tos 0x0, ttl 64, id 14, offset 0, flags [DF], proto TCP (6), length 52)
    10.0.0.1.40000 > 10.0.0.2.80: Flags [.], cksum 0x8772 (correct), ack 1, win 502, options [nop,nop,sack 1 {101:201}], length 0
1000000005.625007 IP (tos 0x0, ttl 63, id 901, offset 0, flags [DF], proto TCP (6), length 40)
    10.0.0.2.80 > 10.0.0.1.40000: Flags [F.], cksum 0xe6d1 (correct), seq 1, ack 19, win 235, length 0
1000000006.750007 IP (tos 0x0, ttl 17, id 77, offset 0, flags [none], proto UDP (17), length 36)
    10.0.0.1.5353 > 10.0.0.2.9999: domain [length 8 < 12] (invalid)
";

    /// The same trace's headers as they were captured, checksums zeroed
    /// (made by the script that wrote the pcap).
    const CAPTURED: [&str; 7] = [
        "4500003c000b4000400600000a0000010a0000029c400050000003e800000000a002ffff00000000020405b4010303070402080a000003e800000000",
        "45000030038440003f0600000a0000020a00000100509c4000001388000003e97012712000000000020405b401010402",
        "45000028000c4000400600000a0000010a0000029c400050000003e900001389501001f600000000",
        "4510003a000d4000400600000a0000010a0000029c400050000003e900001389501801f600000000",
        "45000034000e4000400600000a0000010a0000029c400050000003fb00001389801001f6000000000101050a000013ed00001451",
        "45000028038540003f0600000a0000020a00000100509c4000001389000003fb501100eb00000000",
        "45000024004d0000111100000a0000010a00000214e9270f00100000",
    ];

    /// `tcpdump -r t.pcap -n -tt`, the first four lines.
    const PLAIN: &str = "\
1000000000.000007 IP 10.0.0.1.40000 > 10.0.0.2.80: Flags [S], seq 1000, win 65535, options [mss 1460,nop,wscale 7,sackOK,TS val 1000 ecr 0], length 0
1000000001.125007 IP 10.0.0.2.80 > 10.0.0.1.40000: Flags [S.], seq 5000, ack 1001, win 28960, options [mss 1460,nop,nop,sackOK], length 0
1000000002.250007 IP 10.0.0.1.40000 > 10.0.0.2.80: Flags [.], ack 1, win 502, length 0
01:46:43.375007 IP 10.0.0.1.40000 > 10.0.0.2.80: Flags [P.], seq 1:19, ack 1, win 502, length 18: HTTP: GET / HTTP/1.0
";

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn extra_len(p: &Packet) -> u32 {
        let a = p.anno_bytes();
        let o = EXTRA_LENGTH_ANNO_OFFSET;
        u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
    }

    fn reader(conf: &str, dir: &std::path::Path) -> Box<dyn Element> {
        match configure(
            FromTcpdump::SPEC.keywords,
            FromTcpdump::configure,
            conf,
            &[],
            &[true],
            dir,
        ) {
            Ok(e) => e,
            Err(e) => panic!("configure failed: {}", e.message),
        }
    }

    fn read_all(e: &mut dyn Element, pool: &Pool) -> Vec<Packet> {
        let mut v = Vec::new();
        for _ in 0..1000 {
            let (st, mut outs, _) = run_task(e, pool, 1, 0);
            v.append(&mut outs[0]);
            if matches!(st, TaskStatus::Done) {
                return v;
            }
        }
        panic!("FromTcpdump never finished");
    }

    #[test]
    fn verbose_tcpdump_output_gives_the_captured_headers() {
        let dir = scratch("fromtcpdump");
        std::fs::write(dir.join("v.txt"), VERBOSE).expect("write");
        let pool = Pool::new(64).expect("pool");
        let mut e = reader("v.txt, STOP true", &dir);
        let pkts = read_all(e.as_mut(), &pool);
        let got: Vec<String> = pkts.iter().map(|p| hex(p.data())).collect();
        assert_eq!(got, CAPTURED);
        let extra: Vec<u32> = pkts.iter().map(extra_len).collect();
        assert_eq!(extra, [0, 0, 0, 18, 0, 0, 8]);
        assert_eq!(pkts[0].timestamp_ns(), 1_000_000_000_000_007_000);
        assert_eq!(pkts[4].timestamp_ns(), 1_000_000_004_500_007_000);
        assert_eq!(e.read_handler("bad_lines").expect("h"), "0");
        assert_eq!(e.read_handler("encap").expect("h"), "IP");
        assert_eq!(
            e.read_handler("filesize").expect("h"),
            VERBOSE.len().to_string()
        );
        assert_eq!(
            e.read_handler("filepos").expect("h"),
            VERBOSE.len().to_string()
        );
    }

    #[test]
    fn plain_tcpdump_output_and_time_of_day() {
        let dir = scratch("fromtcpdump");
        std::fs::write(dir.join("p.txt"), PLAIN).expect("write");
        let pool = Pool::new(64).expect("pool");
        let mut e = reader("p.txt", &dir);
        let pkts = read_all(e.as_mut(), &pool);
        let got: Vec<String> = pkts.iter().map(|p| hex(p.data())).collect();
        // Without -v: TTL 2, no ID, no DF; the same TCP headers.
        assert_eq!(
            got,
            [
                "4500003c00000000020600000a0000010a0000029c400050000003e800000000a002ffff00000000020405b4010303070402080a000003e800000000",
                "4500003000000000020600000a0000020a00000100509c4000001388000003e97012712000000000020405b401010402",
                "4500002800000000020600000a0000010a0000029c400050000003e900001389501001f600000000",
                "4500003a00000000020600000a0000010a0000029c400050000003e900001389501801f600000000",
            ]
        );
        // 01:46:43.375007 is read as that time on 1 January 1970.
        assert_eq!(pkts[3].timestamp_ns(), 6_403_375_007_000);
        assert_eq!(extra_len(&pkts[3]), 18);
    }

    #[test]
    fn click_format_lines() {
        let dir = scratch("fromtcpdump");
        let text = "\
# a comment
1.000001 10.0.0.1.1040 > 10.0.0.2.80: S 100:100(0) win 5840 <mss 1460,sackOK,timestamp 533430 0,nop,wscale 0> (DF)
1.000002 10.0.0.2.80 > 10.0.0.1.1040: S 7000:7000(0) ack 101 win 8190 <mss 1452>
1.000003 10.0.0.1.1040 > 10.0.0.2.80: P 1:49(48) ack 1 win 5840 (DF) [tos 0x10]  (ttl 64, id 5, len 88)
garbage
2.5 10.0.0.3.771 > 224.0.0.2.1985:  udp 20 [tos 0xc0]  [ttl 1]
4.0 nowhere > x: S

3.0 10.0.0.1 > 10.0.0.2: icmp: echo request (ttl 9, id 3, len 84)
";
        std::fs::write(dir.join("c.txt"), text).expect("write");
        let pool = Pool::new(64).expect("pool");
        let mut e = reader("c.txt, STOP true", &dir);
        let pkts = read_all(e.as_mut(), &pool);
        let got: Vec<String> = pkts.iter().map(|p| hex(p.data())).collect();
        assert_eq!(
            got,
            [
                // SYN: no ACK, so the numbers stay as written.
                "4500003c00004000020600000a0000010a000002041000500000006400000000a00216d000000000020405b40402080a000823b60000000001030300",
                // SYN-ACK: 7000 and 101 absolute; the flow's origins.
                "4500002c00000000020600000a0000020a0000010050041000001b580000006560121ffe00000000020405ac",
                // 1:49 ack 1, relative: 101:149, ack 7001.
                "4510005800054000400600000a0000010a000002041000500000006500001b59501816d000000000",
                "45c0003000000000011100000a000003e0000002030307c1001c0000",
                "4500005400030000090100000a0000010a000002",
            ]
        );
        let extra: Vec<u32> = pkts.iter().map(extra_len).collect();
        assert_eq!(extra, [0, 0, 48, 20, 64]);
        assert_eq!(e.read_handler("bad_lines").expect("h"), "2");
    }

    #[test]
    fn checksums_cover_the_headers() {
        let dir = scratch("fromtcpdump");
        std::fs::write(dir.join("v.txt"), VERBOSE).expect("write");
        let pool = Pool::new(64).expect("pool");
        let mut e = reader("v.txt, CHECKSUM true", &dir);
        let pkts = read_all(e.as_mut(), &pool);
        for p in &pkts {
            let d = p.data();
            assert_eq!(checksum(&d[..20]), 0, "IP checksum of {}", hex(d));
            let ps = pseudo_header_sum(&d[12..16], &d[16..20], d[9], d.len() - 20);
            assert_eq!(fold(ones_sum(&d[20..], ps)), 0xffff, "{}", hex(d));
        }
    }

    #[test]
    fn sampling_and_handlers() {
        let dir = scratch("fromtcpdump");
        std::fs::write(dir.join("v.txt"), VERBOSE).expect("write");
        let pool = Pool::new(64).expect("pool");
        let mut e = reader("v.txt, SAMPLE 0, ACTIVE false", &dir);
        assert_eq!(e.read_handler("sampling_prob").expect("h"), "0");
        assert_eq!(e.read_handler("active").expect("h"), "false");
        let (st, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert!(matches!(st, TaskStatus::Idle) && outs[0].is_empty());
        e.write_handler("active", "true").expect("active");
        assert!(read_all(e.as_mut(), &pool).is_empty());
        e.write_handler("stop", "").expect("stop");
        let (_, _, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(
            ctrl.stop_requests, 1,
            "stop handler asks the driver to stop"
        );
        assert_eq!(e.read_handler("active").expect("h"), "false");
    }

    #[test]
    fn configuration_errors() {
        let dir = scratch("fromtcpdump");
        let err = |c: &str| {
            config_err(configure(
                FromTcpdump::SPEC.keywords,
                FromTcpdump::configure,
                c,
                &[],
                &[true],
                &dir,
            ))
        };
        assert!(
            err("missing.txt").contains("missing.txt"),
            "{}",
            err("missing.txt")
        );
        assert!(err("").contains("FILENAME"));
        assert!(err("x, SAMPLE -1").contains("SAMPLE"));
    }
}
