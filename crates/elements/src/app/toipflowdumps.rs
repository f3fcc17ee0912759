//! `ToIPFlowDumps`: one IP summary dump per aggregate (flow), as Click
//! writes them: a banner naming the flow, then one line (or binary record)
//! per packet with relative times and sequence numbers.
//!
//! Each flow buffers up to 128 packets and 32 notes; a full buffer is
//! appended to the flow's file, which is opened for that write and closed
//! again, so one file at most is open at any time however many flows
//! there are.

use std::fmt::Write as _;
use std::io::Write as _;

use pronto_packet::{Batch, Packet, AGGREGATE_ANNO_OFFSET};

use super::ipsumdump::{unparse_tcp_opt, TCPOPT_MSS, TCPOPT_SACK, TCPOPT_TIMESTAMP, TCPOPT_WSCALE};
use super::pcap::{os_error_text, split_ns, unparse_timestamp};
use crate::analysis::aggregateipflows::{AggregateNotifier, AggregateSubscription};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    TaskStatus,
};

/// Packets a flow buffers before writing.
const NPKT: usize = 128;
/// Notes a flow buffers before writing.
const NNOTE: usize = 32;
/// Click's flow table size: the order flows are finished in at the end.
const NFLOWMAP: u32 = 1 << 10;
/// `ALL_TCP_OPT`: every option but padding.
const OPT_ALL_NOPAD: u32 = !1;
const OPT_PADDING: u32 = 1;
const OPT_UNKNOWN: u32 = 32;

/// How long after its deletion a flow is finished (NOTIFIER).
const GC_DELAY: i64 = 250_000_000;

const TH_PUSH: u8 = 0x08;
const TH_ACK: u8 = 0x10;

/// One packet's record.
#[derive(Clone, Copy, Default)]
struct Pkt {
    ts: i64,
    seq: u32,
    ack: u32,
    dir: u8,
    flags: u8,
    payload_len: u16,
    /// The IP ID's two bytes as they lie in the packet.
    ip_id: [u8; 2],
    /// The TCP window's two bytes as they lie in the packet.
    win: [u8; 2],
}

/// One flow's file and buffered records.
struct Flow {
    aggregate: u32,
    src: [u8; 4],
    sport: u16,
    dst: [u8; 4],
    dport: u16,
    tcp: bool,
    packet_count: u32,
    filename: String,
    outputted: bool,
    first_ts: i64,
    have_first_seq: [bool; 2],
    first_seq: [u32; 2],
    pkts: Vec<Pkt>,
    /// (packet index the note comes before, text).
    notes: Vec<(usize, String)>,
    /// Stored options: (packet index, start, end) into `opt_bytes`.
    opts: Vec<(usize, usize, usize)>,
    opt_bytes: Vec<u8>,
    last_use: u64,
}

/// What the element was configured with that each flow needs.
#[derive(Clone, Copy)]
struct Opts {
    absolute_time: bool,
    absolute_seq: bool,
    binary: bool,
    ip_id: bool,
    tcp_window: bool,
    tcp_opt: u32,
}

fn be16(d: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([d[o], d[o + 1]])
}

fn be32(d: &[u8], o: usize) -> u32 {
    u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]])
}

fn aggregate(p: &Packet) -> u32 {
    let a = p.anno_bytes();
    let o = AGGREGATE_ANNO_OFFSET;
    u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
}

/// The packet's IP header offset, its header length and the protocol,
/// when the IP header and `need` bytes of transport header are there.
fn ip_parts(p: &Packet, need: usize) -> Option<(usize, usize, u8)> {
    let nh = crate::ip::ip_header_at(p, 20)?;
    let d = p.data();
    let hl = usize::from(d[nh] & 0xf) * 4;
    (hl >= 20 && nh + hl + need <= d.len()).then_some((nh, hl, d[nh + 9]))
}

/// Whether a TCP option kind is wanted under `mask` (Click's mapping).
fn opt_content(kind: u8) -> u32 {
    match kind {
        0 | 1 => OPT_PADDING,
        2 => TCPOPT_MSS,
        3 => TCPOPT_WSCALE,
        4 | 5 => TCPOPT_SACK,
        8 => TCPOPT_TIMESTAMP,
        _ => OPT_UNKNOWN,
    }
}

/// Click's binary option column: a length byte, then the options `mask`
/// keeps.
fn binary_opts(out: &mut Vec<u8>, opt: &[u8], mask: u32) {
    let at = out.len();
    out.push(0);
    let mut i = 0;
    while i < opt.len() {
        let kind = opt[i];
        if kind == 0 || kind == 1 {
            if mask & OPT_PADDING != 0 {
                out.push(kind);
            }
            if kind == 0 {
                break;
            }
            i += 1;
            continue;
        }
        let Some(&len) = opt.get(i + 1) else { break };
        let len = usize::from(len);
        if len < 2 || i + len > opt.len() {
            break;
        }
        if mask & opt_content(kind) != 0 {
            out.extend_from_slice(&opt[i..i + len]);
        }
        i += len;
    }
    out[at] = (out.len() - at - 1) as u8;
}

impl Flow {
    /// A flow from its first packet (an ICMP error names the flow its
    /// quoted header belongs to). None when the packet has no TCP/UDP flow.
    fn new(p: &Packet, filename: String, o: &Opts) -> Option<Flow> {
        let (nh, hl, proto) = ip_parts(p, 4)?;
        let d = p.data();
        let (mut src, mut sport, mut dst, mut dport, tcp) = match proto {
            6 | 17 => (
                d[nh + 12..nh + 16].try_into().ok()?,
                be16(d, nh + hl),
                d[nh + 16..nh + 20].try_into().ok()?,
                be16(d, nh + hl + 2),
                proto == 6,
            ),
            1 => {
                let e = nh + hl + 8;
                let inner = d.get(e..e + 20)?;
                let ihl = usize::from(inner[0] & 0xf) * 4;
                let ports = d.get(e + ihl..e + ihl + 4)?;
                if !matches!(inner[9], 6 | 17) {
                    return None;
                }
                (
                    inner[12..16].try_into().ok()?,
                    be16(ports, 0),
                    inner[16..20].try_into().ok()?,
                    be16(ports, 2),
                    inner[9] == 6,
                )
            }
            _ => return None,
        };
        if p.paint_anno() & 1 != 0 {
            std::mem::swap(&mut src, &mut dst);
            std::mem::swap(&mut sport, &mut dport);
        }
        Some(Flow {
            aggregate: aggregate(p),
            src,
            sport,
            dst,
            dport,
            tcp,
            packet_count: 0,
            filename,
            outputted: false,
            // Relative times: the first packet is one nanosecond in.
            first_ts: if o.absolute_time {
                0
            } else {
                p.timestamp_ns().saturating_sub(1)
            },
            have_first_seq: [o.absolute_seq; 2],
            first_seq: [0; 2],
            pkts: Vec::with_capacity(NPKT),
            notes: Vec::new(),
            opts: Vec::new(),
            opt_bytes: Vec::new(),
            last_use: 0,
        })
    }

    /// Records a packet; false when it does not belong (another
    /// protocol, a short header), and it is not recorded.
    fn add_pkt(&mut self, p: &Packet, o: &Opts) -> bool {
        if p.paint_anno() >= 2 {
            // An ICMP error: a note that counts as a packet.
            let dir = if p.paint_anno() & 1 != 0 { '>' } else { '<' };
            let text = format!("{} {dir} ICMP_error", unparse_timestamp(p.timestamp_ns()));
            self.packet_count = self.packet_count.saturating_add(1);
            self.add_note(text, o);
            return true;
        }
        let need = if self.tcp { 20 } else { 8 };
        let Some((nh, hl, proto)) = ip_parts(p, need) else {
            return false;
        };
        if proto != if self.tcp { 6 } else { 17 } {
            return false;
        }
        if self.pkts.len() >= NPKT {
            self.output(o);
        }
        let d = p.data();
        let dir = usize::from(p.paint_anno() & 1);
        let ip_len = be16(d, nh + 2);
        let mut k = Pkt {
            ts: p.timestamp_ns().saturating_sub(self.first_ts),
            dir: dir as u8,
            ip_id: [d[nh + 4], d[nh + 5]],
            ..Pkt::default()
        };
        if self.tcp {
            let th = nh + hl;
            let s = be32(d, th + 4);
            if !self.have_first_seq[dir] {
                self.first_seq[dir] = s;
                self.have_first_seq[dir] = true;
            }
            let flags = d[th + 13];
            let mut a = be32(d, th + 8);
            if flags & TH_ACK == 0 {
                a = self.first_seq[1 - dir];
            } else if !self.have_first_seq[1 - dir] {
                self.first_seq[1 - dir] = a;
                self.have_first_seq[1 - dir] = true;
            }
            let off = usize::from(d[th + 12] >> 4) * 4;
            k.seq = s.wrapping_sub(self.first_seq[dir]);
            k.ack = a.wrapping_sub(self.first_seq[1 - dir]);
            k.flags = flags;
            k.payload_len = ip_len.wrapping_sub(hl as u16).wrapping_sub(off as u16);
            k.win = [d[th + 14], d[th + 15]];
            let only_ts = off == 32 && d.get(th + 20..th + 24) == Some(&[1, 1, 8, 10]);
            if o.tcp_opt != 0 && off > 20 && (!only_ts || o.tcp_opt & TCPOPT_TIMESTAMP != 0) {
                let end = (th + off).min(d.len());
                self.store_opt(&d[th + 20..end.max(th + 20)], dir, o.tcp_opt);
            }
        } else {
            k.payload_len = ip_len.wrapping_sub(8);
        }
        self.pkts.push(k);
        self.packet_count = self.packet_count.saturating_add(1);
        true
    }

    /// Keeps the options Click keeps (MSS, window scale, SACK permitted,
    /// SACK blocks renumbered, timestamps if asked); a malformed option
    /// list keeps none.
    fn store_opt(&mut self, opt: &[u8], dir: usize, mask: u32) {
        let start = self.opt_bytes.len();
        let mut i = 0;
        let mut any = false;
        let ok = loop {
            let Some(&kind) = opt.get(i) else { break true };
            match kind {
                0 => break true,
                1 => {
                    i += 1;
                    continue;
                }
                _ => {}
            }
            let Some(&len) = opt.get(i + 1) else {
                break false;
            };
            let len = usize::from(len);
            if i + len > opt.len() {
                break false;
            }
            let good = match kind {
                2 => len == 4,
                3 => len == 3,
                4 => len == 2,
                8 => len == 10,
                5 => len % 8 == 2,
                _ => {
                    if len == 0 {
                        break false;
                    }
                    i += len;
                    continue;
                }
            };
            if !good {
                break false;
            }
            if kind == 8 && mask & TCPOPT_TIMESTAMP == 0 {
                i += len;
                continue;
            }
            any = true;
            if kind == 5 {
                self.opt_bytes.extend_from_slice(&opt[i..i + 2]);
                let other = 1 - dir;
                for b in opt[i + 2..i + len].chunks_exact(8) {
                    let (l, r) = (be32(b, 0), be32(b, 4));
                    if !self.have_first_seq[other] {
                        self.first_seq[other] = l;
                        self.have_first_seq[other] = true;
                    }
                    let base = self.first_seq[other];
                    self.opt_bytes
                        .extend_from_slice(&l.wrapping_sub(base).to_be_bytes());
                    self.opt_bytes
                        .extend_from_slice(&r.wrapping_sub(base).to_be_bytes());
                }
            } else {
                self.opt_bytes.extend_from_slice(&opt[i..i + len]);
            }
            i += len;
        };
        if ok && any {
            self.opts
                .push((self.pkts.len(), start, self.opt_bytes.len()));
        } else {
            self.opt_bytes.truncate(start);
        }
    }

    fn add_note(&mut self, text: String, o: &Opts) {
        if self.notes.len() >= NNOTE {
            self.output(o);
        }
        self.notes.push((self.pkts.len(), text));
    }

    fn banner(&self, s: &mut String, o: &Opts) {
        let ip = |a: [u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        let _ = write!(
            s,
            "!IPSummaryDump 1.3\n!flowid {} {} {} {} {}\n!aggregate {}\n!data ntimestamp",
            ip(self.src),
            self.sport,
            ip(self.dst),
            self.dport,
            if self.tcp { 'T' } else { 'U' },
            self.aggregate
        );
        let opt_col = if o.tcp_opt & TCPOPT_TIMESTAMP != 0 {
            " tcp_opt"
        } else {
            " tcp_ntopt"
        };
        if o.binary {
            s.push_str(if self.tcp {
                " tcp_seq payload_len tcp_ack"
            } else {
                " payload_len"
            });
            if o.ip_id {
                s.push_str(" ip_id");
            }
            if o.tcp_window && self.tcp {
                s.push_str(" tcp_window");
            }
            if self.tcp {
                s.push_str(" tcp_flags");
            }
            s.push_str(" direction");
            if self.tcp {
                s.push_str(opt_col);
            }
        } else {
            s.push_str(" direction");
            if o.ip_id {
                s.push_str(" ip_id");
            }
            if self.tcp {
                s.push_str(" tcp_flags tcp_seq payload_len tcp_ack");
                s.push_str(opt_col);
            } else {
                s.push_str(" payload_len");
            }
        }
        s.push('\n');
        if self.tcp {
            for (dir, c) in [(0, '>'), (1, '<')] {
                if self.have_first_seq[dir] && self.first_seq[dir] != 0 {
                    let _ = writeln!(s, "!firstseq {c} {}", self.first_seq[dir]);
                }
            }
        }
        if self.first_ts != 0 {
            let _ = writeln!(s, "!firsttime {}", unparse_timestamp(self.first_ts));
        }
        if o.binary {
            s.push_str("!binary\n");
        }
    }

    fn text_records(&self, s: &mut String, o: &Opts) {
        let (mut ni, mut oi) = (0, 0);
        for (pi, k) in self.pkts.iter().enumerate() {
            while let Some((before, text)) = self.notes.get(ni).filter(|n| n.0 <= pi) {
                let _ = before;
                let _ = writeln!(s, "#{text}");
                ni += 1;
            }
            let _ = write!(
                s,
                "{} {} ",
                unparse_timestamp(k.ts),
                if k.dir == 0 { '>' } else { '<' }
            );
            if o.ip_id {
                // Click prints the ID's bytes as a host-order number.
                let _ = write!(s, "{} ", u16::from_le_bytes(k.ip_id));
            }
            if self.tcp {
                match k.flags {
                    TH_ACK => s.push('A'),
                    f if f == TH_ACK | TH_PUSH => s.push_str("PA"),
                    0 => s.push('.'),
                    f => {
                        for (bit, c) in b"FSRPAUE".iter().enumerate() {
                            if f & (1 << bit) != 0 {
                                s.push(char::from(*c));
                            }
                        }
                    }
                }
                let _ = write!(s, " {} {} {}", k.seq, k.payload_len, k.ack);
                if o.tcp_window {
                    let _ = write!(s, " {}", u16::from_be_bytes(k.win));
                }
                if let Some(&(_, a, b)) = self.opts.get(oi).filter(|x| x.0 == pi) {
                    s.push(' ');
                    unparse_tcp_opt(s, &self.opt_bytes[a..b], o.tcp_opt);
                    oi += 1;
                }
                s.push('\n');
            } else {
                let _ = writeln!(s, "{}", k.payload_len);
            }
        }
        for (_, text) in &self.notes[ni..] {
            let _ = writeln!(s, "#{text}");
        }
    }

    fn binary_records(&self, out: &mut Vec<u8>, o: &Opts) {
        let (mut ni, mut oi) = (0, 0);
        let note = |out: &mut Vec<u8>, text: &str| {
            let len = (text.len() + 6) as u32 | 0x8000_0000;
            out.extend_from_slice(&len.to_be_bytes());
            out.push(b'#');
            out.extend_from_slice(text.as_bytes());
            out.push(b'\n');
        };
        for (pi, k) in self.pkts.iter().enumerate() {
            while let Some((_, text)) = self.notes.get(ni).filter(|n| n.0 <= pi) {
                note(out, text);
                ni += 1;
            }
            let at = out.len();
            let (sec, ns) = split_ns(k.ts);
            out.extend_from_slice(&[0; 4]);
            out.extend_from_slice(&(sec as u32).to_be_bytes());
            out.extend_from_slice(&(ns as u32).to_be_bytes());
            if self.tcp {
                out.extend_from_slice(&k.seq.to_be_bytes());
                out.extend_from_slice(&u32::from(k.payload_len).to_be_bytes());
                out.extend_from_slice(&k.ack.to_be_bytes());
            } else {
                out.extend_from_slice(&u32::from(k.payload_len).to_be_bytes());
            }
            if o.ip_id {
                out.extend_from_slice(&k.ip_id);
            }
            if o.tcp_window && self.tcp {
                out.extend_from_slice(&k.win);
            }
            if self.tcp {
                out.push(k.flags);
            }
            out.push(k.dir);
            if let Some(&(_, a, b)) = self.opts.get(oi).filter(|x| x.0 == pi) {
                binary_opts(out, &self.opt_bytes[a..b], o.tcp_opt);
                oi += 1;
            }
            let len = (out.len() - at) as u32;
            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        for (_, text) in &self.notes[ni..] {
            note(out, text);
        }
    }

    /// Appends the buffered records to the file (creating it, and the
    /// directories it needs, the first time).
    fn output(&mut self, o: &Opts) {
        let mut text = String::new();
        if !self.outputted {
            self.banner(&mut text, o);
        }
        let mut bytes = text.into_bytes();
        if o.binary {
            self.binary_records(&mut bytes, o);
        } else {
            let mut s = String::new();
            self.text_records(&mut s, o);
            bytes.extend_from_slice(s.as_bytes());
        }
        self.pkts.clear();
        self.notes.clear();
        self.opts.clear();
        self.opt_bytes.clear();
        let r = if self.filename == "-" {
            std::io::stdout().lock().write_all(&bytes)
        } else {
            let path = std::path::Path::new(&self.filename);
            let mut oo = std::fs::OpenOptions::new();
            if self.outputted {
                oo.append(true);
            } else {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    if let Err(e) = std::fs::create_dir_all(dir) {
                        eprintln!("making directory {}: {}", dir.display(), os_error_text(&e));
                    }
                }
                oo.write(true).create(true).truncate(true);
            }
            oo.open(path).and_then(|mut f| f.write_all(&bytes))
        };
        if let Err(e) = r {
            eprintln!("{}: {}", self.filename, os_error_text(&e));
        }
        self.outputted = true;
    }
}

/// One piece of a file pattern.
#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Esc {
        zero: bool,
        width: Option<usize>,
        precision: Option<u32>,
        conv: u8,
    },
}

/// Parses FILEPATTERN's `%` escapes.
fn parse_pattern(pat: &str) -> Result<Vec<Piece>, ConfigError> {
    let b = pat.as_bytes();
    let mut out = Vec::new();
    let mut text = Vec::new();
    let mut p = 0;
    while p < b.len() {
        if b[p] != b'%' {
            text.push(b[p]);
            p += 1;
            continue;
        }
        p += 1;
        let zero = b.get(p) == Some(&b'0');
        if zero {
            p += 1;
        }
        let mut width = None;
        while let Some(c) = b.get(p).filter(|c| c.is_ascii_digit()) {
            width = Some(
                width
                    .unwrap_or(0usize)
                    .saturating_mul(10)
                    .saturating_add(usize::from(c - b'0'))
                    .min(4096),
            );
            p += 1;
        }
        let mut precision = None;
        if b.get(p) == Some(&b'.') {
            p += 1;
            let mut v = 0u32;
            while let Some(c) = b.get(p).filter(|c| c.is_ascii_digit()) {
                v = v.saturating_mul(10).saturating_add(u32::from(c - b'0'));
                p += 1;
            }
            precision = Some(v);
        }
        let Some(&conv) = b.get(p) else {
            return Err(cfg_err(
                "FILEPATTERN: bad filename pattern (it ends in `%')",
            ));
        };
        if !b"nxXsdSDp%".contains(&conv) {
            return Err(cfg_err(format!(
                "FILEPATTERN: bad filename pattern `%{}' (escapes: %n %x %X %s %d %S %D %p %%)",
                char::from(conv)
            )));
        }
        if !text.is_empty() {
            out.push(Piece::Text(String::from_utf8_lossy(&text).into_owned()));
            text.clear();
        }
        out.push(Piece::Esc {
            zero,
            width,
            precision,
            conv,
        });
        p += 1;
    }
    if !text.is_empty() {
        out.push(Piece::Text(String::from_utf8_lossy(&text).into_owned()));
    }
    Ok(out)
}

/// A flow's file name: the pattern expanded with the packet's aggregate,
/// addresses, ports and protocol.
fn expand(pattern: &[Piece], p: &Packet) -> String {
    let d = p.data();
    let (nh, hl, proto) = ip_parts(p, 4).unwrap_or((0, 20, 0));
    let byte = |o: usize| d.get(o).copied().unwrap_or(0);
    let word = |o: usize| u16::from_be_bytes([byte(o), byte(o + 1)]);
    let addr = |o: usize| {
        format!(
            "{}.{}.{}.{}",
            byte(o),
            byte(o + 1),
            byte(o + 2),
            byte(o + 3)
        )
    };
    let mut s = String::new();
    for piece in pattern {
        let (zero, width, precision, conv) = match piece {
            Piece::Text(t) => {
                s.push_str(t);
                continue;
            }
            Piece::Esc {
                zero,
                width,
                precision,
                conv,
            } => (*zero, *width, *precision, *conv),
        };
        let sub = match conv {
            b'n' | b'x' | b'X' => {
                let mut v = aggregate(p);
                match precision {
                    Some(k @ 0..=3) => v = (v >> ((3 - k) * 8)) & 255,
                    Some(k @ 4..=5) => v = (v >> ((5 - k) * 16)) & 65535,
                    _ => {}
                }
                match conv {
                    b'n' => (v as i32).to_string(),
                    b'x' => format!("{v:x}"),
                    _ => format!("{v:X}"),
                }
            }
            b's' | b'd' => {
                let o = nh + if conv == b's' { 12 } else { 16 };
                match precision {
                    Some(k @ 0..=3) => byte(o + k as usize).to_string(),
                    _ => addr(o),
                }
            }
            b'S' => word(nh + hl).to_string(),
            b'D' => word(nh + hl + 2).to_string(),
            b'p' => if proto == 6 { "T" } else { "U" }.to_string(),
            _ => "%".to_string(),
        };
        if let Some(w) = width {
            for _ in sub.len()..w {
                s.push(if zero { '0' } else { '_' });
            }
        }
        s.push_str(&sub);
    }
    s
}

/// Writes one summary dump per flow.
pub struct ToIPFlowDumps {
    pattern: Vec<Piece>,
    /// Relative file names are relative to the configuration.
    base: std::path::PathBuf,
    opts: Opts,
    gzip: bool,
    mincount: u32,
    flows: pronto_hash::KeyedMap<u32, Flow>,
    uses: u64,
    nagg: u64,
    nnoagg: u64,
    compressables: Vec<String>,
    child: Option<std::process::Child>,
    has_output: bool,
    pull_task: bool,
    name: String,
    /// NOTIFIER: its deleted aggregates, each finished 250 ms after.
    notifier: Option<AggregateSubscription>,
    gc: std::collections::VecDeque<(u32, i64)>,
    deleted: Vec<u32>,
}

impl ToIPFlowDumps {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ToIPFlowDumps")
        .ports("1/0-1")
        .processing("a/a")
        .keywords(&[
            "FILEPATTERN",
            "OUTPUT_PATTERN",
            "NOTIFIER",
            "ABSOLUTE_TIME",
            "ABSOLUTE_SEQ",
            "BINARY",
            "ALL_TCP_OPT",
            "TCP_OPT",
            "TCP_WINDOW",
            "GZIP",
            "IP_ID",
            "MINCOUNT",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "ToIPFlowDumps(FILEPATTERN [, KEYWORDS])\n\n\
             Writes an IP summary dump per TCP or UDP flow, telling flows apart by\n\
             their aggregate annotations (run it after AggregateIPFlows). Each file\n\
             starts `!IPSummaryDump 1.3', `!flowid SRC SPORT DST DPORT T|U',\n\
             `!aggregate N', `!data ...', `!firstseq > N'/`!firstseq < N' and\n\
             `!firsttime T', then one line per packet: relative time, direction\n\
             (`>' unpainted, `<' paint 1), [IP ID], TCP flags, sequence number,\n\
             payload length and acknowledgement number relative to each side's\n\
             first, [window], [options]; UDP lines give the payload length. ICMP\n\
             errors AggregateIPFlows assigned to a flow (paint 2 and 3) are\n\
             `#TIME DIR ICMP_error' notes. Each flow buffers 128 packets, then\n\
             appends them to its file, opened only for that write: one file is open\n\
             at a time. Packets without an aggregate, or that are not TCP/UDP (an\n\
             ICMP error of the flow aside), are not recorded. Packets pass through to\n\
             the output if there is one.\n\n\
             FILEPATTERN escapes: %n aggregate (decimal), %.0n-%.3n its bytes,\n\
             %.4n/%.5n its upper/lower 16 bits; %x %X the same in hex; %s %d source\n\
             and destination address, %.0s-%.3s their bytes; %S %D ports; %p T or\n\
             U; %% a percent sign; `0' and a width pad (with `0' or `_'). `-' writes\n\
             to standard output.\n\n\
             Ports: 1 input, 0 or 1 outputs (agnostic; a pulled input without an\n\
             output is pulled by a task).\n\
             Keywords:\n  \
             OUTPUT_PATTERN  same as FILEPATTERN\n  \
             NOTIFIER        an AggregateIPFlows: a flow it forgets is finished (its file\n                  \
             written, its memory freed) 250 ms later; without one, flows end at\n                  \
             `clear' and at the end\n  \
             ABSOLUTE_TIME   boolean; absolute timestamps (default false)\n  \
             ABSOLUTE_SEQ    boolean; absolute sequence numbers (default false)\n  \
             BINARY          boolean; binary records (default false)\n  \
             ALL_TCP_OPT     boolean; write all non-padding TCP options (default false)\n  \
             TCP_OPT         boolean; write MSS, window scale and SACK options\n  \
             TCP_WINDOW      boolean; write TCP windows (default false)\n  \
             IP_ID           boolean; write IP IDs (default false)\n  \
             GZIP            boolean; gzip each finished file (default false)\n  \
             MINCOUNT        write only flows of at least this many packets (default 0)\n\
             Handlers:\n  clear (write): finish every flow, writing its file",
        );

    /// Configures a `ToIPFlowDumps`. Nothing is created until a flow's
    /// buffer is written.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let mut pattern: Option<String> = a.read_p("FILEPATTERN")?;
        if let Some(p) = a.read::<String>("OUTPUT_PATTERN")? {
            pattern = Some(p);
        }
        let notifier: Option<String> = a.read("NOTIFIER")?;
        let absolute_time = a.read_or("ABSOLUTE_TIME", false)?;
        let absolute_seq = a.read_or("ABSOLUTE_SEQ", false)?;
        let binary = a.read_or("BINARY", false)?;
        let all_tcp_opt = a.read_or("ALL_TCP_OPT", false)?;
        let tcp_opt = a.read_or("TCP_OPT", false)?;
        let tcp_window = a.read_or("TCP_WINDOW", false)?;
        let gzip = a.read_or("GZIP", false)?;
        let ip_id = a.read_or("IP_ID", false)?;
        let mincount: u32 = a.read_or("MINCOUNT", 0u32)?;
        a.finish()?;
        let pattern = pattern
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "-".into());
        if !pattern.contains('%') {
            eprintln!(
                "{}: OUTPUT_PATTERN has no % escapes, so output files will get overwritten",
                ctx.name
            );
        }
        let notifier = match notifier {
            Some(n) => {
                let a = ctx
                    .shared::<AggregateNotifier>(&n, "an AggregateNotifier (AggregateIPFlows)")
                    .map_err(|e| cfg_err(format!("NOTIFIER: {}", e.message)))?;
                Some(a)
            }
            None => None,
        };
        let pieces = parse_pattern(&pattern)?;
        if crate::world::check_only() {
            return Ok(crate::world::stand_in([None]));
        }
        Ok(Box::new(ToIPFlowDumps {
            pattern: pieces,
            base: ctx.base_dir.to_path_buf(),
            opts: Opts {
                absolute_time,
                absolute_seq,
                binary,
                ip_id,
                tcp_window,
                tcp_opt: if all_tcp_opt {
                    OPT_ALL_NOPAD
                } else if tcp_opt {
                    TCPOPT_MSS | TCPOPT_WSCALE | TCPOPT_SACK
                } else {
                    0
                },
            },
            gzip,
            mincount,
            flows: pronto_hash::map(),
            uses: 0,
            nagg: 0,
            nnoagg: 0,
            compressables: Vec::new(),
            child: None,
            has_output: ctx.noutputs > 0,
            pull_task: !ctx.input_push.first().copied().unwrap_or(true) && ctx.noutputs == 0,
            name: ctx.name.to_string(),
            gc: std::collections::VecDeque::new(),
            deleted: Vec::new(),
            notifier: notifier.map(|n| n.subscribe()),
        }))
    }

    fn record(&mut self, p: &Packet) {
        let agg = aggregate(p);
        if agg == 0 {
            self.nnoagg += 1;
            return;
        }
        self.uses += 1;
        if !self.flows.contains_key(&agg) {
            let mut name = expand(&self.pattern, p);
            if name != "-" && !std::path::Path::new(&name).is_absolute() {
                name = self.base.join(&name).to_string_lossy().into_owned();
            }
            match Flow::new(p, name, &self.opts) {
                Some(f) => {
                    self.flows.insert(agg, f);
                }
                None => {
                    self.nnoagg += 1;
                    return;
                }
            }
        }
        let uses = self.uses;
        let opts = self.opts;
        if let Some(f) = self.flows.get_mut(&agg) {
            f.last_use = uses;
            if f.add_pkt(p, &opts) {
                self.nagg += 1;
            } else {
                self.nnoagg += 1;
            }
        }
    }

    fn end_flow(&mut self, mut f: Flow) {
        if f.packet_count >= self.mincount {
            f.output(&self.opts);
            if self.gzip && f.filename != "-" {
                self.add_compressable(Some(f.filename));
            }
        } else if f.outputted {
            if let Err(e) = std::fs::remove_file(&f.filename) {
                eprintln!("{}: {}", f.filename, os_error_text(&e));
            }
        }
    }

    /// Queues a finished file for gzip; runs gzip on ten at a time (or
    /// on whatever is left, `None`, waiting for it).
    fn add_compressable(&mut self, file: Option<String>) {
        let wait = file.is_none();
        if let Some(f) = file {
            self.compressables.push(f);
            if self.compressables.len() < 10 {
                return;
            }
        }
        if let Some(c) = self.child.as_mut() {
            let status = if wait {
                c.wait().map(Some)
            } else {
                c.try_wait()
            };
            match status {
                Ok(None) => return,
                Ok(Some(s)) if s.success() => self.child = None,
                Ok(Some(_)) | Err(_) => {
                    eprintln!(
                        "{}: compressor did not exit normally; cancelling compression",
                        self.name
                    );
                    self.child = None;
                    self.gzip = false;
                    self.compressables.clear();
                    return;
                }
            }
        }
        if self.compressables.is_empty() {
            return;
        }
        let files: Vec<String> = self
            .compressables
            .drain(..)
            .map(|f| {
                if f.starts_with('-') {
                    format!("./{f}")
                } else {
                    f
                }
            })
            .collect();
        match std::process::Command::new("gzip")
            .arg("-f")
            .args(&files)
            .spawn()
        {
            Ok(c) => self.child = Some(c),
            Err(e) => {
                eprintln!(
                    "{}: gzip failed: {}; cancelling compression",
                    self.name,
                    os_error_text(&e)
                );
                self.gzip = false;
            }
        }
        if wait {
            if let Some(mut c) = self.child.take() {
                let _ = c.wait();
            }
        }
    }

    /// Finishes every flow, in Click's order (table bucket, then most
    /// recently used first).
    fn finish_all(&mut self) {
        let mut all: Vec<Flow> = self.flows.drain().map(|(_, f)| f).collect();
        all.sort_by_key(|f| (f.aggregate & (NFLOWMAP - 1), std::cmp::Reverse(f.last_use)));
        for f in all {
            self.end_flow(f);
        }
    }

    /// Notes the aggregates the NOTIFIER deleted; finishes the flows
    /// deleted 250 ms or more before `now`.
    fn collect_garbage(&mut self, now: i64) {
        if let Some(n) = &self.notifier {
            n.take(&mut self.deleted);
        }
        for agg in self.deleted.drain(..) {
            if self.flows.contains_key(&agg) {
                self.gc.push_back((agg, now.saturating_add(GC_DELAY)));
            }
        }
        while let Some(&(agg, due)) = self.gc.front() {
            if due > now {
                break;
            }
            self.gc.pop_front();
            if let Some(f) = self.flows.remove(&agg) {
                self.end_flow(f);
            }
        }
    }

    fn take(&mut self, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter() {
            self.record(p);
        }
        if self.notifier.is_some() {
            self.collect_garbage(out.now);
        }
        if self.has_output {
            out.pass(0);
        } else {
            batch.clear();
        }
    }
}

impl Element for ToIPFlowDumps {
    fn has_timer(&self) -> bool {
        self.notifier.is_some()
    }

    fn timer(&self) -> Option<i64> {
        self.gc.front().map(|&(_, due)| due)
    }

    fn run_timer(&mut self, now: i64) {
        self.collect_garbage(now);
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.take(batch, out);
    }

    fn has_task(&self) -> bool {
        self.pull_task
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        Some((0, 32))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if batch.is_empty() {
            return TaskStatus::Idle;
        }
        self.take(batch, out);
        TaskStatus::Busy
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::write("clear")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        Err(HandlerError::NoSuchHandler(name.into()))
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "clear" => {
                self.finish_all();
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.finish_all();
        if self.nnoagg > 0 && self.nagg == 0 {
            eprintln!("{}: saw no packets with aggregate annotations", self.name);
        }
        if self.gzip || self.child.is_some() {
            self.add_compressable(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, push_batch, scratch};
    use pronto_packet::Pool;

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 0, 2];

    #[allow(clippy::too_many_arguments)]
    fn tcp(
        id: u16,
        (src, sp): ([u8; 4], u16),
        (dst, dp): ([u8; 4], u16),
        seq: u32,
        ack: u32,
        flags: u8,
        win: u16,
        opts: &[u8],
        payload: usize,
    ) -> Vec<u8> {
        let hl = 20 + opts.len();
        let mut v = vec![0x45, 0];
        v.extend_from_slice(&((20 + hl + payload) as u16).to_be_bytes());
        v.extend_from_slice(&id.to_be_bytes());
        v.extend_from_slice(&[0x40, 0, 64, 6, 0, 0]);
        v.extend_from_slice(&src);
        v.extend_from_slice(&dst);
        v.extend_from_slice(&sp.to_be_bytes());
        v.extend_from_slice(&dp.to_be_bytes());
        v.extend_from_slice(&seq.to_be_bytes());
        v.extend_from_slice(&ack.to_be_bytes());
        v.extend_from_slice(&[((hl / 4) as u8) << 4, flags]);
        v.extend_from_slice(&win.to_be_bytes());
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(opts);
        v
    }

    fn udp(id: u16, sp: u16, dst: [u8; 4], dp: u16, payload: usize) -> Vec<u8> {
        let mut v = vec![0x45, 0];
        v.extend_from_slice(&((28 + payload) as u16).to_be_bytes());
        v.extend_from_slice(&id.to_be_bytes());
        v.extend_from_slice(&[0, 0, 64, 17, 0, 0]);
        v.extend_from_slice(&A);
        v.extend_from_slice(&dst);
        v.extend_from_slice(&sp.to_be_bytes());
        v.extend_from_slice(&dp.to_be_bytes());
        v.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
        v.extend_from_slice(&[0, 0]);
        v
    }

    fn packet(pool: &Pool, bytes: &[u8], ts: i64, agg: u32, paint: u8) -> Packet {
        let mut p = pool.alloc_from(bytes).expect("pool has room");
        p.set_network_header(0, 20);
        p.set_timestamp_ns(ts);
        p.set_paint_anno(paint);
        p.anno_bytes_mut()[AGGREGATE_ANNO_OFFSET..AGGREGATE_ANNO_OFFSET + 4]
            .copy_from_slice(&agg.to_ne_bytes());
        p
    }

    fn element(conf: &str, dir: &std::path::Path, nout: usize) -> Box<dyn Element> {
        let push = vec![true; nout];
        match configure(
            ToIPFlowDumps::SPEC.keywords,
            ToIPFlowDumps::configure,
            conf,
            &[true],
            &push,
            dir,
        ) {
            Ok(e) => e,
            Err(e) => panic!("configure failed: {}", e.message),
        }
    }

    const S: i64 = 1_000_000_000;

    /// A handshake, data with a SACK, a FIN, an ICMP error of the flow, a
    /// UDP flow and a packet without an aggregate.
    fn trace(pool: &Pool) -> Batch {
        let syn_opts = [
            2, 4, 5, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0,
        ];
        let sack = [1, 1, 5, 10, 0, 0, 0x13, 0xed, 0, 0, 0x14, 0x51];
        let mut icmp = vec![0x45, 0, 0, 56, 0, 0, 0, 0, 64, 1, 0, 0];
        icmp.extend_from_slice(&[10, 0, 0, 9]);
        icmp.extend_from_slice(&A);
        icmp.extend_from_slice(&[3, 3, 0, 0, 0, 0, 0, 0]);
        icmp.extend_from_slice(&tcp(9, (A, 1000), (B, 80), 1019, 0, 0, 0, &[], 0)[..28]);
        let frames: Vec<(Vec<u8>, i64, u32, u8)> = vec![
            (
                tcp(
                    0x0100,
                    (A, 1000),
                    (B, 80),
                    1000,
                    0,
                    0x02,
                    65535,
                    &syn_opts,
                    0,
                ),
                1000 * S + S / 2,
                1,
                0,
            ),
            (
                tcp(
                    0x0200,
                    (B, 80),
                    (A, 1000),
                    5000,
                    1001,
                    0x12,
                    28960,
                    &[2, 4, 5, 0x78],
                    0,
                ),
                1000 * S + 3 * S / 4,
                1,
                1,
            ),
            (
                udp(0x0500, 5353, [10, 0, 0, 3], 53, 20),
                1001 * S + S / 10,
                2,
                0,
            ),
            (
                tcp(0x0300, (A, 1000), (B, 80), 1001, 5001, 0x18, 502, &sack, 18),
                1001 * S,
                1,
                0,
            ),
            (
                tcp(0x0400, (A, 1000), (B, 80), 1019, 5001, 0x11, 502, &[], 0),
                1001 * S + S / 4,
                1,
                0,
            ),
            (icmp, 1002 * S, 1, 2),
            (udp(7, 1, B, 2, 0), 1003 * S, 0, 0),
        ];
        let mut b = Batch::new();
        for (f, ts, agg, paint) in frames {
            let _ = b.push(packet(pool, &f, ts, agg, paint));
        }
        b
    }

    #[test]
    fn text_dumps_one_file_per_flow() {
        let dir = scratch("flowdumps");
        let pool = Pool::new(64).expect("pool");
        let mut e = element(
            "f/flow%03n.txt, TCP_OPT true, IP_ID true, TCP_WINDOW true",
            &dir,
            1,
        );
        let mut b = trace(&pool);
        let outs = push_batch(e.as_mut(), &pool, &mut b, 1, 0);
        assert_eq!(outs[0].len(), 7, "every packet passes through");
        assert!(
            !dir.join("f").exists(),
            "nothing written before a flow ends"
        );
        e.cleanup();
        let read = |n: &str| std::fs::read_to_string(dir.join("f").join(n)).expect(n);
        assert_eq!(
            read("flow001.txt"),
            "!IPSummaryDump 1.3\n\
             !flowid 10.0.0.1 1000 10.0.0.2 80 T\n\
             !aggregate 1\n\
             !data ntimestamp direction ip_id tcp_flags tcp_seq payload_len tcp_ack tcp_ntopt\n\
             !firstseq > 1000\n\
             !firstseq < 5000\n\
             !firsttime 1000.499999999\n\
             0.000000001 > 1 S 0 0 0 65535 mss1460;wscale7;sackok\n\
             0.250000001 < 2 SA 0 0 1 28960 mss1400\n\
             0.500000001 > 3 PA 1 18 1 502 sack101-201\n\
             0.750000001 > 4 FA 19 0 1 502\n\
             #1002.000000 < ICMP_error\n"
        );
        assert_eq!(
            read("flow002.txt"),
            "!IPSummaryDump 1.3\n\
             !flowid 10.0.0.1 5353 10.0.0.3 53 U\n\
             !aggregate 2\n\
             !data ntimestamp direction ip_id payload_len\n\
             !firsttime 1001.099999999\n\
             0.000000001 > 5 40\n"
        );
        let mut names: Vec<_> = std::fs::read_dir(dir.join("f"))
            .expect("dir")
            .map(|d| d.expect("entry").file_name().into_string().expect("utf8"))
            .collect();
        names.sort();
        assert_eq!(names, ["flow001.txt", "flow002.txt"]);
    }

    #[test]
    fn binary_records_and_absolute_numbers() {
        let dir = scratch("flowdumps");
        let pool = Pool::new(64).expect("pool");
        let mut e = element(
            "flow%n.bin, BINARY true, ABSOLUTE_SEQ true, ABSOLUTE_TIME true",
            &dir,
            0,
        );
        let mut b = trace(&pool);
        let outs = push_batch(e.as_mut(), &pool, &mut b, 0, 0);
        assert!(outs.is_empty());
        e.cleanup();
        let got = std::fs::read(dir.join("flow2.bin")).expect("flow2.bin");
        let mut want = b"!IPSummaryDump 1.3\n!flowid 10.0.0.1 5353 10.0.0.3 53 U\n!aggregate 2\n\
            !data ntimestamp payload_len direction\n!binary\n"
            .to_vec();
        // length 17, 1001 s, 100,000,000 ns, payload 40 (IP length - 8, as
        // Click counts it), direction 0
        want.extend_from_slice(&[
            0, 0, 0, 17, 0, 0, 0x03, 0xe9, 0x05, 0xf5, 0xe1, 0x00, 0, 0, 0, 40, 0,
        ]);
        assert_eq!(got, want);
        let got = std::fs::read(dir.join("flow1.bin")).expect("flow1.bin");
        let text = String::from_utf8_lossy(&got);
        assert!(text.starts_with(
            "!IPSummaryDump 1.3\n!flowid 10.0.0.1 1000 10.0.0.2 80 T\n!aggregate 1\n\
             !data ntimestamp tcp_seq payload_len tcp_ack tcp_flags direction tcp_ntopt\n\
             !binary\n"
        ));
        let body = &got[text.find("!binary\n").expect("banner") + 8..];
        // The SYN: 26 bytes, absolute time and numbers (the ack of a
        // packet without ACK is the other side's origin: 0 when absolute).
        assert_eq!(
            &body[..26],
            &[
                0, 0, 0, 26, 0, 0, 0x03, 0xe8, 0x1d, 0xcd, 0x65, 0x00, 0, 0, 0x03, 0xe8, 0, 0, 0,
                0, 0, 0, 0, 0, 0x02, 0
            ]
        );
        // The ICMP error note closes the file: length|0x80000000, '#', text, '\n'.
        let note = b"#1002.000000 < ICMP_error\n";
        let tail = &body[body.len() - note.len() - 4..];
        assert_eq!(
            &tail[..4],
            &((note.len() as u32 + 4) | 0x8000_0000).to_be_bytes()
        );
        assert_eq!(&tail[4..], note);
    }

    #[test]
    fn mincount_and_clear() {
        let dir = scratch("flowdumps");
        let pool = Pool::new(64).expect("pool");
        let mut e = element("x-%p-%S-%D-%s-%.3d-%04X-%.5x-%6n-%%, MINCOUNT 2", &dir, 1);
        let mut b = trace(&pool);
        let _ = push_batch(e.as_mut(), &pool, &mut b, 1, 0);
        e.write_handler("clear", "").expect("clear");
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|d| d.expect("entry").file_name().into_string().expect("utf8"))
            .collect();
        names.sort();
        // The UDP flow has one packet: no file.
        assert_eq!(names, ["x-T-1000-80-10.0.0.1-2-0001-1-_____1-%"]);
    }

    #[test]
    fn gzip_compresses_finished_files() {
        let dir = scratch("flowdumps");
        let pool = Pool::new(64).expect("pool");
        let mut e = element("flow%n, GZIP true", &dir, 0);
        let mut b = trace(&pool);
        let _ = push_batch(e.as_mut(), &pool, &mut b, 0, 0);
        e.cleanup();
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|d| d.expect("entry").file_name().into_string().expect("utf8"))
            .collect();
        names.sort();
        assert_eq!(names, ["flow1.gz", "flow2.gz"]);
        let out = std::process::Command::new("gzip")
            .arg("-dc")
            .arg(dir.join("flow2.gz"))
            .output()
            .expect("gzip -dc");
        assert!(String::from_utf8_lossy(&out.stdout)
            .ends_with("!firsttime 1001.099999999\n0.000000001 > 40\n"));
    }

    struct OnePeer(std::sync::Arc<AggregateNotifier>);

    impl crate::Peers for OnePeer {
        fn lookup(&self, name: &str) -> Option<crate::Peer> {
            (name == "agg").then(|| crate::Peer {
                name: "agg".into(),
                class: "AggregateIPFlows",
                shared: Some(self.0.clone()),
            })
        }

        fn of_class(&self, _class: &str) -> Vec<crate::Peer> {
            Vec::new()
        }
    }

    #[test]
    fn notifier_finishes_deleted_flows_after_250_ms() {
        let dir = scratch("flowdumps");
        let pool = Pool::new(64).expect("pool");
        let n = std::sync::Arc::new(AggregateNotifier::default());
        let peers = OnePeer(n.clone());
        let ctx = ConfigCtx {
            name: "d",
            config: "flow%n, NOTIFIER agg",
            ninputs: 1,
            noutputs: 0,
            base_dir: &dir,
            keywords: ToIPFlowDumps::SPEC.keywords,
            output_push: &[],
            input_push: &[true],
            peers: &peers,
        };
        let mut e = match ToIPFlowDumps::configure(&ctx) {
            Ok(e) => e,
            Err(e) => panic!("configure: {}", e.message),
        };
        assert!(e.has_timer());
        let mut b = trace(&pool);
        let _ = push_batch(e.as_mut(), &pool, &mut b, 0, 1_000);
        // The UDP flow (2) is deleted, and an aggregate never seen (9).
        n.deleted(2);
        n.deleted(9);
        e.run_timer(2_000);
        assert_eq!(e.timer(), Some(2_000 + 250_000_000), "one flow to finish");
        e.run_timer(250_001_999);
        assert!(!dir.join("flow2").exists(), "not before 250 ms");
        e.run_timer(250_002_000);
        assert!(dir.join("flow2").exists(), "finished 250 ms after");
        assert!(!dir.join("flow1").exists(), "the live flow waits");
        assert_eq!(e.timer(), None);
        e.cleanup();
        assert!(dir.join("flow1").exists());
    }

    #[test]
    fn notifier_must_be_an_aggregate_notifier() {
        let dir = scratch("flowdumps");
        let ctx = ConfigCtx {
            name: "d",
            config: "flow%n, NOTIFIER agg",
            ninputs: 1,
            noutputs: 0,
            base_dir: &dir,
            keywords: ToIPFlowDumps::SPEC.keywords,
            output_push: &[],
            input_push: &[true],
            peers: &crate::NoPeers,
        };
        let e = config_err(ToIPFlowDumps::configure(&ctx));
        assert!(e.contains("NOTIFIER") && e.contains("agg"), "{e}");
    }

    #[test]
    fn pattern_errors() {
        let dir = scratch("flowdumps");
        let err = |c: &str| {
            config_err(configure(
                ToIPFlowDumps::SPEC.keywords,
                ToIPFlowDumps::configure,
                c,
                &[true],
                &[],
                &dir,
            ))
        };
        assert!(err("a%q").contains("`%q'"), "{}", err("a%q"));
        assert!(err("a%").contains("FILEPATTERN"));
        assert!(err("a%n, NOTIFIER nothere").contains("NOTIFIER"));
    }
}
