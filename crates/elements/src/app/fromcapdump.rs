//! `FromCapDump`: reads the text output of Mark Allman's `cap` tool (one
//! TCP bulk transfer, one line per packet) and makes TCP/IPv4 headers.
//!
//! `cap` numbers packets, not bytes: a packet number becomes a sequence
//! number through a table that each data packet's length extends (gaps
//! are filled assuming the last length seen, or 1460).

use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
use pronto_packet::{Batch, Packet, AGGREGATE_ANNO_OFFSET, BATCH_MAX, EXTRA_LENGTH_ANNO_OFFSET};

use super::ipsumdump::cp_integer;
use super::tracetext::{next_line, Sampler, TraceData};
use crate::analysis::{PACKET_NUMBER_ANNO_OFFSET, SEQUENCE_NUMBER_ANNO_OFFSET};
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, NotifierKind,
    NotifierRole, Out, Spec, TaskStatus,
};

const TH_FIN: u8 = 0x01;
const TH_SYN: u8 = 0x02;
const TH_ACK: u8 = 0x10;
const NO_SEQNO: u32 = u32::MAX;
/// Packet numbers at or past this are refused (the table of sequence
/// numbers stays within 32 MiB).
const MAX_PACKNO: u32 = 1 << 22;

fn put16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_be_bytes());
}

fn put32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_be_bytes());
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// Packet number to sequence number.
struct SeqMap {
    map: Vec<u32>,
    /// Data packets whose length disagreed with what the table said.
    mismatches: u64,
}

impl SeqMap {
    fn new() -> SeqMap {
        let mut map = vec![NO_SEQNO; 1024];
        map[0] = 0;
        SeqMap { map, mismatches: 0 }
    }

    /// The sequence number of packet `p`, filling any gap before it.
    fn seqno(&mut self, p: u32) -> u32 {
        let p = p as usize;
        while p + 1 >= self.map.len() {
            let n = self.map.len() * 2;
            self.map.resize(n, NO_SEQNO);
        }
        if self.map[p] == NO_SEQNO {
            let mut p2 = p;
            while p2 > 1 && self.map[p2 - 1] == NO_SEQNO {
                p2 -= 1;
            }
            let len = if p2 > 1 {
                self.map[p2 - 1].wrapping_sub(self.map[p2 - 2])
            } else {
                1460
            };
            for k in p2.max(1)..=p {
                self.map[k] = self.map[k - 1].wrapping_add(len);
            }
        }
        self.map[p]
    }

    /// The sequence number of packet `p`, which holds `len` sequence
    /// numbers: packet `p + 1` starts after them.
    fn seqno_len(&mut self, p: u32, len: u32) -> u32 {
        let s = self.seqno(p);
        let next = &mut self.map[p as usize + 1];
        let want = s.wrapping_add(len);
        if *next != NO_SEQNO && *next != want {
            self.mismatches += 1;
        }
        *next = want;
        s
    }
}

/// Reads `cap` files.
pub struct FromCapDump {
    filename: String,
    data: TraceData,
    pos: usize,
    lineno: u64,
    stop: bool,
    active: bool,
    checksum: bool,
    aggregate: u32,
    sample: Sampler,
    flowid: ([u8; 4], u16, [u8; 4], u16),
    flowid_is_rcv: bool,
    seq: SeqMap,
    bad_lines: u64,
    ended: bool,
    pending_stop: bool,
    pull: bool,
    burst: usize,
}

/// One packet's headers.
struct Build {
    buf: [u8; 80],
    len: usize,
    ts: i64,
    paint: u8,
    extra: u32,
    uniqno: u32,
    seqno: u32,
}

impl FromCapDump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromCapDump")
        .ports("0/1")
        .processing("a/a")
        .keywords(&[
            "FILENAME",
            "STOP",
            "ACTIVE",
            "ZERO",
            "CHECKSUM",
            "AGGREGATE",
            "SAMPLE",
            "BURST",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FromCapDump(FILENAME [, KEYWORDS])\n\n\
             Reads the output of Mark Allman's `cap' tool and emits the TCP packets it\n\
             describes. `SYN', `DAT' and `ACK' lines give the direction (`>' or `<'),\n\
             a timestamp, the unique packet number, the packet (sequence) number, the\n\
             IP length and the payload length, then optional words: FIN, DSACK:N,\n\
             SACK:A-B:C-D..., FR, RTO, SACK_NEW, SACK_REXMT, TIM. `SND' and `RCV'\n\
             lines say from which side the flow is seen; other lines are skipped.\n\
             Packets are TCP/IPv4 headers between 1.0.0.1 port 1 and 2.0.0.2 port 2\n\
             (reversed for `<' as seen from the sender): sequence numbers made from\n\
             packet numbers, window 65535, SACK options; the IP length covers the\n\
             payload, which the extra length annotation counts. Annotations:\n\
             timestamp, aggregate (AGGREGATE), paint (0 data direction, 1 the\n\
             other), packet number and sequence number (the line's two numbers). A\n\
             line that cannot be parsed, or a packet number of 2^22 or more, is\n\
             skipped and counted. FILENAME `-' reads standard input; compressed files\n\
             are not read.\n\n\
             Ports: no inputs; 1 output (agnostic: pushes from a task or answers pulls).\n\
             Keywords:\n  \
             STOP       boolean; stop the driver at the end (default false)\n  \
             ACTIVE     boolean; emit nothing until activated if false (default true)\n  \
             ZERO       boolean; accepted (unset bytes are always zero)\n  \
             CHECKSUM   boolean; set IP and TCP checksums over the headers (default false)\n  \
             AGGREGATE  aggregate annotation of every packet (default 1)\n  \
             SAMPLE     probability of emitting each packet (default 1)\n  \
             BURST      packets per task run (default 1, as Click)\n\
             Handlers:\n  sampling_prob (read), active (read/write), encap (read: IP), filesize\n  \
             (read), filepos (read), stop (write), bad_lines (read), seq_mismatches\n  \
             (read: data packets whose length disagreed with an earlier line)",
        );

    /// Configures a `FromCapDump`: opens the file.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let filename: String = a.read_mp("FILENAME")?;
        let stop = a.read_or("STOP", false)?;
        let active = a.read_or("ACTIVE", true)?;
        let _zero: bool = a.read_or("ZERO", true)?;
        let checksum = a.read_or("CHECKSUM", false)?;
        let aggregate: u32 = a.read_or("AGGREGATE", 1u32)?;
        let sample: f64 = a.read_or("SAMPLE", 1.0)?;
        let burst: usize = a.read_or("BURST", 1)?;
        a.finish()?;
        let sample = Sampler::new(ctx.name, sample, 0x6a09_e667_f3bc_c909)?;
        if crate::world::check_only() {
            return Ok(crate::world::stand_in([crate::world::input_file(
                ctx, &filename,
            )]));
        }
        let (data, filename) = TraceData::open(ctx, &filename, false)?;
        Ok(Box::new(FromCapDump {
            filename,
            data,
            pos: 0,
            lineno: 0,
            stop,
            active,
            checksum,
            aggregate,
            sample,
            flowid: ([1, 0, 0, 1], 1, [2, 0, 0, 2], 2),
            flowid_is_rcv: false,
            seq: SeqMap::new(),
            bad_lines: 0,
            ended: false,
            pending_stop: false,
            pull: !ctx.output_push.first().copied().unwrap_or(true),
            burst: burst.clamp(1, BATCH_MAX),
        }))
    }

    /// Reads lines until one describes a packet. None at the end.
    fn read_packet(&mut self) -> Option<Build> {
        let data = std::mem::replace(&mut self.data, TraceData::Owned(Vec::new()));
        let bytes = data.bytes();
        let r = loop {
            let Some((s, e)) = next_line(bytes, &mut self.pos) else {
                break None;
            };
            self.lineno += 1;
            let line = &bytes[s..e];
            if line.len() <= 3
                || line[0] == b'!'
                || line[0] == b'#'
                || !line[3].is_ascii_whitespace()
            {
                continue;
            }
            match &line[..3] {
                b"DAT" | b"ACK" | b"SYN" => {}
                w @ (b"RCV" | b"SND") => {
                    let rcv = w == b"RCV";
                    if self.flowid_is_rcv != rcv {
                        self.flowid_is_rcv = rcv;
                        let (s, sp, d, dp) = self.flowid;
                        self.flowid = (d, dp, s, sp);
                    }
                    continue;
                }
                _ => continue,
            }
            match self.parse(line) {
                Some(b) => break Some(b),
                None => self.bad_lines += 1,
            }
        };
        self.data = data;
        r
    }

    fn parse(&mut self, line: &[u8]) -> Option<Build> {
        let mut b = Build {
            buf: [0; 80],
            len: 40,
            ts: 0,
            paint: 0,
            extra: 0,
            uniqno: 0,
            seqno: 0,
        };
        b.buf[0] = 0x45;
        b.buf[9] = 6;
        put16(&mut b.buf, 34, 65535);
        let kind = line[0];
        let mut flags = if kind == b'S' { TH_SYN } else { 0 };
        let mut i = skip_space(line, 4);
        let dir = *line.get(i)?;
        if dir != b'<' && dir != b'>' {
            return None;
        }
        b.paint = u8::from((dir == b'>') == self.flowid_is_rcv);
        i = skip_space(line, i + 1);
        let (j, sec) = cp_integer(line, i, 10);
        let sec = sec?;
        i = j;
        let mut usec: i64 = 0;
        if line.get(i) == Some(&b'.') && i + 1 < line.len() {
            i += 1;
            let mut digits = 0;
            while digits < 6 && line.get(i).is_some_and(u8::is_ascii_digit) {
                usec = usec * 10 + i64::from(line[i] - b'0');
                digits += 1;
                i += 1;
            }
            for _ in digits..6 {
                usec *= 10;
            }
            while line.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        b.ts = i64::from(sec) * 1_000_000_000 + usec * 1000;
        let mut nums = [0u32; 4];
        for n in &mut nums {
            i = skip_space(line, i);
            let (j, v) = cp_integer(line, i, 10);
            *n = v?;
            i = j;
        }
        let [uniqno, seqno, _ip_len, payload_len] = nums;
        if seqno >= MAX_PACKNO - 1 {
            return None;
        }
        // Trailing words: SACK blocks become options (40 bytes at most).
        let mut opt_len = 0usize;
        loop {
            i = skip_space(line, i);
            let rest = &line[i.min(line.len())..];
            if rest.len() > 6 && rest.starts_with(b"DSACK:") {
                let (j, v) = cp_integer(line, i + 6, 10);
                let v = v.filter(|&v| v < MAX_PACKNO - 1)?;
                if opt_len + 12 <= 40 {
                    let o = 40 + opt_len;
                    b.buf[o..o + 4].copy_from_slice(&[1, 1, 5, 10]);
                    let (l, r) = (self.seq.seqno(v), self.seq.seqno(v + 1));
                    put32(&mut b.buf, o + 4, l);
                    put32(&mut b.buf, o + 8, r);
                    opt_len += 12;
                }
                i = j;
            } else if rest.len() > 2 && rest.starts_with(b"FIN") {
                flags |= TH_FIN;
                i += 3;
            } else if rest.len() > 1 && rest.starts_with(b"FR") {
                i += 2;
            } else if rest.len() > 2 && rest.starts_with(b"RTO") {
                i += 3;
            } else if rest.len() > 4 && rest.starts_with(b"SACK:") {
                let o = 40 + opt_len;
                let room = 40usize.saturating_sub(opt_len);
                let fits = room >= 4;
                if fits {
                    b.buf[o..o + 3].copy_from_slice(&[1, 1, 5]);
                }
                let mut at = o + 4;
                i += 4;
                while line.get(i) == Some(&b':') {
                    let (j, l) = cp_integer(line, i + 1, 10);
                    let Some(l) = l.filter(|_| line.get(j) == Some(&b'-')) else {
                        break;
                    };
                    if !line.get(j + 1).is_some_and(u8::is_ascii_digit) {
                        break;
                    }
                    let (k, r) = cp_integer(line, j + 1, 10);
                    let r = r?;
                    if l >= MAX_PACKNO - 1 || r >= MAX_PACKNO - 2 {
                        return None;
                    }
                    i = k;
                    if fits && at + 8 <= 40 + 40 {
                        let (ls, rs) = (self.seq.seqno(l), self.seq.seqno(r + 1));
                        put32(&mut b.buf, at, ls);
                        put32(&mut b.buf, at + 4, rs);
                        at += 8;
                    }
                }
                if fits {
                    b.buf[o + 3] = (at - (o + 2)) as u8;
                    opt_len = at - 40;
                }
            } else if rest.len() > 7 && rest.starts_with(b"SACK_NEW") {
                i += 8;
            } else if rest.len() > 9 && rest.starts_with(b"SACK_REXMT") {
                i += 10;
            } else if rest.len() > 2 && rest.starts_with(b"TIM") {
                i += 3;
            } else {
                break;
            }
        }
        // Click keeps TCP header lengths a multiple of four by the option
        // sizes it writes; pad in case a SACK list was cut short.
        while !opt_len.is_multiple_of(4) {
            b.buf[40 + opt_len] = 1;
            opt_len += 1;
        }
        let seqs = payload_len
            .wrapping_add(u32::from(flags & TH_SYN != 0))
            .wrapping_add(u32::from(flags & TH_FIN != 0));
        let (th_seq, th_ack) = match kind {
            b'D' => {
                flags |= TH_ACK;
                (self.seq.seqno_len(seqno, seqs), 1)
            }
            b'A' => {
                flags |= TH_ACK;
                (1, self.seq.seqno(seqno + 1))
            }
            _ => {
                let ack = if self.flowid_is_rcv != (b.paint != 0) {
                    flags |= TH_ACK;
                    1
                } else {
                    0
                };
                let _ = self.seq.seqno_len(seqno, seqs);
                (0, ack)
            }
        };
        put32(&mut b.buf, 24, th_seq);
        put32(&mut b.buf, 28, th_ack);
        b.buf[33] = flags;
        b.len = 40 + opt_len;
        b.buf[32] = (((20 + opt_len) / 4) as u8) << 4;
        put16(
            &mut b.buf,
            2,
            (b.len as u32).wrapping_add(payload_len) as u16,
        );
        b.extra = payload_len;
        b.uniqno = uniqno;
        b.seqno = seqno;
        let (mut s, mut sp, mut d, mut dp) = self.flowid;
        if b.paint & 1 != 0 {
            std::mem::swap(&mut s, &mut d);
            std::mem::swap(&mut sp, &mut dp);
        }
        b.buf[12..16].copy_from_slice(&s);
        b.buf[16..20].copy_from_slice(&d);
        put16(&mut b.buf, 20, sp);
        put16(&mut b.buf, 22, dp);
        if self.checksum {
            let sum = checksum(&b.buf[..20]);
            put16(&mut b.buf, 10, sum);
            let ps = pseudo_header_sum(&b.buf[12..16], &b.buf[16..20], 6, b.len - 20);
            let v = !fold(ones_sum(&b.buf[20..b.len], ps));
            put16(&mut b.buf, 36, v);
        }
        Some(b)
    }

    fn make(&self, b: &Build, out: &Out<'_>) -> Option<Packet> {
        let mut p = out.pool.alloc_from(&b.buf[..b.len])?;
        p.set_network_header(0, 20);
        p.set_timestamp_ns(b.ts);
        p.set_paint_anno(b.paint);
        let a = p.anno_bytes_mut();
        for (o, v) in [
            (AGGREGATE_ANNO_OFFSET, self.aggregate),
            (EXTRA_LENGTH_ANNO_OFFSET, b.extra),
            (PACKET_NUMBER_ANNO_OFFSET, b.uniqno),
            (SEQUENCE_NUMBER_ANNO_OFFSET, b.seqno),
        ] {
            a[o..o + 4].copy_from_slice(&v.to_ne_bytes());
        }
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

impl Element for FromCapDump {
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
            HandlerInfo::read("seq_mismatches"),
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
            "seq_mismatches" => Ok(self.seq.mismatches.to_string()),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{configure, run_task, scratch};
    use pronto_packet::Pool;

    const CAP: &str = "\
SND 0
INF - cap v2.13
SYN > 1046102982.856142 0 0 40 0
SYN < 1046102982.931832 0 0 40 0
DAT > 1046102982.931941 1 1 1500 1460
ACK < 1046102983.156387 1 1 40 0
DAT > 1046102983.156531 2 3 1500 1460
ACK < 1046102983.2 3 1 40 0 SACK:3-3
DAT > 1046102996.137294 5068 2 1500 1460 FIN
DAT ? 1 1 1 1 1
";

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn anno(p: &Packet, o: usize) -> u32 {
        let a = p.anno_bytes();
        u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
    }

    #[test]
    fn cap_lines_become_tcp_headers() {
        let dir = scratch("capdump");
        std::fs::write(dir.join("t.cap"), CAP).expect("write");
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            FromCapDump::SPEC.keywords,
            FromCapDump::configure,
            "t.cap, AGGREGATE 7",
            &[],
            &[true],
            &dir,
        )
        .expect("configure");
        let mut pkts = Vec::new();
        for _ in 0..100 {
            let (st, mut outs, _) = run_task(e.as_mut(), &pool, 1, 0);
            pkts.append(&mut outs[0]);
            if matches!(st, TaskStatus::Done) {
                break;
            }
        }
        let got: Vec<String> = pkts.iter().map(|p| hex(p.data())).collect();
        let ip = |len: u16, fwd: bool| {
            let (s, d) = if fwd {
                ("01000001", "02000002")
            } else {
                ("02000002", "01000001")
            };
            format!("4500{len:04x}0000000000060000{s}{d}")
        };
        let tcp = |fwd: bool, seq: u32, ack: u32, off: u8, flags: u8| {
            let ports = if fwd { "00010002" } else { "00020001" };
            format!("{ports}{seq:08x}{ack:08x}{off:x}0{flags:02x}ffff00000000")
        };
        assert_eq!(
            got,
            [
                // SYN out: seq 0, no ACK; packet 1 starts at sequence 1.
                format!("{}{}", ip(40, true), tcp(true, 0, 0, 5, 0x02)),
                // SYN back (paint 1): ACK 1.
                format!("{}{}", ip(40, false), tcp(false, 0, 1, 5, 0x12)),
                // DAT 1: sequence 1, 1460 bytes.
                format!("{}{}", ip(1500, true), tcp(true, 1, 1, 5, 0x10)),
                // ACK of packet 1: acknowledges packet 2's start, 1461.
                format!("{}{}", ip(40, false), tcp(false, 1, 1461, 5, 0x10)),
                // DAT packet 3: packet 2 filled in at 1461, packet 3 at 2921.
                format!("{}{}", ip(1500, true), tcp(true, 2921, 1, 5, 0x10)),
                // SACK of packet 3: nop nop sack 10 {2921:4381}.
                format!(
                    "{}{}0101050a00000b690000111d",
                    ip(52, false),
                    tcp(false, 1, 1461, 8, 0x10)
                ),
                // DAT packet 2 with FIN.
                format!("{}{}", ip(1500, true), tcp(true, 1461, 1, 5, 0x11)),
            ]
        );
        assert_eq!(pkts[2].timestamp_ns(), 1_046_102_982_931_941_000);
        assert_eq!(pkts[5].timestamp_ns(), 1_046_102_983_200_000_000);
        assert_eq!(anno(&pkts[2], EXTRA_LENGTH_ANNO_OFFSET), 1460);
        assert_eq!(anno(&pkts[6], PACKET_NUMBER_ANNO_OFFSET), 5068);
        assert_eq!(anno(&pkts[6], SEQUENCE_NUMBER_ANNO_OFFSET), 2);
        assert_eq!(anno(&pkts[0], AGGREGATE_ANNO_OFFSET), 7);
        assert_eq!(
            pkts.iter().map(|p| p.paint_anno()).collect::<Vec<_>>(),
            [0, 1, 0, 1, 0, 1, 0]
        );
        assert_eq!(e.read_handler("bad_lines").expect("h"), "1");
        // Packet 2 said 1460 bytes; so did the table (FIN adds one more):
        // packet 3 was at 2921, the FIN moves it to 2922.
        assert_eq!(e.read_handler("seq_mismatches").expect("h"), "1");
    }
}
