//! `FromNetFlowSummaryDump`: reads NetFlow summary lines (fields separated
//! by `|`) and makes one IPv4 packet per flow, or, with `MULTIPACKET`, as
//! many as the flow had.

use pronto_packet::{
    Batch, Packet, BATCH_MAX, EXTRA_LENGTH_ANNO_OFFSET, EXTRA_PACKETS_ANNO_OFFSET,
    FIRST_TIMESTAMP_ANNO_OFFSET,
};

use super::tracetext::{next_line, Multipacket, TraceData};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, NotifierKind,
    NotifierRole, Out, Spec, TaskStatus,
};

/// Which interface numbers go into the paint annotation.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Link {
    Input,
    Output,
    Both,
}

/// One line, parsed.
struct Flow {
    buf: [u8; 40],
    len: usize,
    ts: i64,
    first_ts: i64,
    extra_packets: u32,
    extra_length: u32,
    paint: u8,
}

fn int(s: &str) -> Option<u32> {
    pronto_lang::args::parse_u32(s).ok()
}

/// Parses a data line: 15 or more `|`-separated fields, at least ten of
/// the twelve it reads valid.
fn parse_flow(line: &str, link: Link) -> Option<Flow> {
    let mut w = [""; 15];
    let mut n = 0;
    for f in line.split('|') {
        if n == 15 {
            break;
        }
        w[n] = f;
        n += 1;
    }
    if n < 15 {
        return None;
    }
    let mut f = Flow {
        buf: [0; 40],
        len: 40,
        ts: 0,
        first_ts: 0,
        extra_packets: 0,
        extra_length: 0,
        paint: 0,
    };
    f.buf[0] = 0x45;
    let mut ok = 0;
    if let Some(t) = int(w[7]) {
        f.first_ts = i64::from(t) * 1_000_000_000;
        ok += 1;
    }
    if let Some(t) = int(w[8]) {
        f.ts = if t != 0 {
            i64::from(t) * 1_000_000_000
        } else {
            f.first_ts
        };
        ok += 1;
    }
    if let Some(c) = int(w[5]) {
        // A count of 0 (which Click cannot split) is one packet.
        f.extra_packets = c.saturating_sub(1);
        ok += 1;
    }
    let mut bytes = 0;
    if let Some(b) = int(w[6]) {
        bytes = b;
        ok += 1;
    }
    let input = if link == Link::Output {
        Some(0)
    } else {
        int(w[3])
    };
    let output = if link == Link::Input {
        Some(0)
    } else {
        int(w[4])
    };
    if let (Some(i), Some(o)) = (input, output) {
        ok += 1;
        let m = if link == Link::Both { 15 } else { 255 };
        let shift = if link == Link::Both { 4 } else { 0 };
        f.paint = ((i.min(m) << shift) | o.min(m)) as u8;
    }
    let addr = |s: &str| pronto_lang::args::parse_ip4_literal(s).ok();
    if let Some(a) = addr(w[0]) {
        f.buf[12..16].copy_from_slice(&a);
        ok += 1;
    }
    if let Some(a) = addr(w[1]) {
        f.buf[16..20].copy_from_slice(&a);
        ok += 1;
    }
    if let Some(p) = int(w[13]).filter(|&p| p <= 0xff) {
        f.buf[9] = p as u8;
        ok += 1;
    }
    if let Some(t) = int(w[14]).filter(|&t| t <= 0xff) {
        f.buf[1] = t as u8;
        ok += 1;
    }
    if let Some(p) = int(w[9]).filter(|&p| p <= 0xffff) {
        f.buf[20..22].copy_from_slice(&(p as u16).to_be_bytes());
        ok += 1;
    }
    if let Some(p) = int(w[10]).filter(|&p| p <= 0xffff) {
        f.buf[22..24].copy_from_slice(&(p as u16).to_be_bytes());
        ok += 1;
    }
    if let Some(fl) = int(w[12]).filter(|&fl| fl <= 0xff) {
        f.buf[33] = fl as u8;
        ok += 1;
    }
    if ok < 10 {
        return None;
    }
    let ip_len = bytes.min(65535) as u16;
    f.buf[2..4].copy_from_slice(&ip_len.to_be_bytes());
    match f.buf[9] {
        6 => f.buf[32] = 5 << 4,
        17 => {
            f.buf[24..26].copy_from_slice(&ip_len.wrapping_sub(20).to_be_bytes());
            f.len = 28;
        }
        _ => f.len = 20,
    }
    f.extra_length = bytes.saturating_sub(f.len as u32);
    Some(f)
}

/// Reads NetFlow summary dumps.
pub struct FromNetFlowSummaryDump {
    filename: String,
    data: TraceData,
    pos: usize,
    lineno: u64,
    link: Link,
    stop: bool,
    active: bool,
    multipacket: bool,
    multi: Multipacket,
    timing: bool,
    timing_offset: Option<i64>,
    format_complaint: bool,
    bad_lines: u64,
    /// A packet read but not yet emitted (TIMING, MULTIPACKET).
    held: Option<Packet>,
    ended: bool,
    pull: bool,
    burst: usize,
}

impl FromNetFlowSummaryDump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromNetFlowSummaryDump")
        .ports("0/1")
        .processing("a/a")
        .keywords(&[
            "FILENAME",
            "STOP",
            "ACTIVE",
            "ZERO",
            "MULTIPACKET",
            "LINK",
            "TIMING",
            "BURST",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FromNetFlowSummaryDump(FILENAME [, KEYWORDS])\n\n\
             Reads flows from a NetFlow summary file and emits an IPv4 packet per\n\
             flow. Lines hold 15 or more fields separated by `|'; blank lines and lines\n\
             starting with `!' or `#' are skipped. Fields read: 0 source address, 1\n\
             destination address, 3 input interface, 4 output interface, 5 packet\n\
             count, 6 byte count, 7 start time (seconds), 8 end time, 9 source port,\n\
             10 destination port, 12 TCP flags, 13 IP protocol, 14 TOS; at least ten\n\
             of them must parse. Packets are IPv4 headers (TTL 0, the rest zero unless\n\
             the line sets it) with a TCP or UDP header for those protocols; the IP\n\
             length is the byte count (at most 65535), the extra length annotation\n\
             the bytes the packet does not hold, the extra packets annotation the\n\
             packet count less one. The timestamp is the end time (the start time\n\
             when the end is 0); the first timestamp annotation the start time; the\n\
             paint annotation the interface (LINK). A line that cannot be parsed is\n\
             reported with its line number and counted; pushing, it ends the file (as\n\
             in Click), pulled, it is skipped. Compressed files are not read:\n\
             uncompress them first.\n\n\
             Ports: no inputs; 1 output (agnostic: pushes from a task or answers pulls).\n\
             Keywords:\n  \
             STOP         boolean; stop the driver at the end (default false)\n  \
             ACTIVE       boolean; emit nothing until activated if false (default true)\n  \
             ZERO         boolean; accepted (unset bytes are always zero)\n  \
             MULTIPACKET  boolean; emit the flow's packet count of packets, the bytes\n               \
             shared out and the timestamps spread from start to end (default false)\n  \
             LINK         `input', `output' or `both' (input in the upper 4 bits, output\n               \
             in the lower; numbers pinned at 15) for the paint annotation, numbers\n               \
             pinned at 255 (default input)\n  \
             TIMING       boolean; keep the flows' spacing in time (default false)\n  \
             BURST        packets per task run (default 1, as Click)\n\
             Handlers:\n  active (read/write), encap (read: IP), filesize (read), filepos (read),\n  \
             bad_lines (read: lines that could not be parsed)",
        );

    /// Configures a `FromNetFlowSummaryDump`: opens the file.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let filename: String = a.read_mp("FILENAME")?;
        let stop = a.read_or("STOP", false)?;
        let active = a.read_or("ACTIVE", true)?;
        let _zero: bool = a.read_or("ZERO", true)?;
        let multipacket = a.read_or("MULTIPACKET", false)?;
        let link: String = a.read_or("LINK", "input".to_string())?;
        let timing = a.read_or("TIMING", false)?;
        let burst: usize = a.read_or("BURST", 1)?;
        a.finish()?;
        let link = match link.to_ascii_lowercase().as_str() {
            "input" => Link::Input,
            "output" => Link::Output,
            "both" => Link::Both,
            _ => return Err(cfg_err("'LINK' should be 'input', 'output', or 'both'")),
        };
        if crate::world::check_only() {
            return Ok(crate::world::stand_in([crate::world::input_file(
                ctx, &filename,
            )]));
        }
        let (data, filename) = TraceData::open(ctx, &filename, false)?;
        Ok(Box::new(FromNetFlowSummaryDump {
            filename,
            data,
            pos: 0,
            lineno: 0,
            link,
            stop,
            active,
            multipacket,
            multi: Multipacket::default(),
            timing,
            timing_offset: None,
            format_complaint: false,
            bad_lines: 0,
            held: None,
            ended: false,
            pull: !ctx.output_push.first().copied().unwrap_or(true),
            burst: burst.clamp(1, BATCH_MAX),
        }))
    }

    /// Number of lines that could not be parsed.
    pub fn bad_lines(&self) -> u64 {
        self.bad_lines
    }

    /// The next flow line: Some(Some) a flow, Some(None) a bad line, None
    /// the end.
    fn read_flow(&mut self) -> Option<Option<Flow>> {
        let bytes = self.data.bytes();
        loop {
            let (s, e) = next_line(bytes, &mut self.pos)?;
            self.lineno += 1;
            let line = &bytes[s..e];
            match line.first() {
                None | Some(b'!' | b'#') => continue,
                _ => {}
            }
            let f = std::str::from_utf8(line)
                .ok()
                .and_then(|l| parse_flow(l, self.link));
            if f.is_none() {
                self.bad_lines += 1;
                if !self.format_complaint {
                    self.format_complaint = true;
                    eprintln!("{}:{}: bad format", self.filename, self.lineno);
                }
            }
            return Some(f);
        }
    }

    fn make(f: &Flow, out: &Out<'_>) -> Option<Packet> {
        let mut p = out.pool.alloc_from(&f.buf[..f.len])?;
        p.set_network_header(0, 20);
        p.set_timestamp_ns(f.ts);
        p.set_paint_anno(f.paint);
        let a = p.anno_bytes_mut();
        a[FIRST_TIMESTAMP_ANNO_OFFSET..FIRST_TIMESTAMP_ANNO_OFFSET + 8]
            .copy_from_slice(&f.first_ts.to_ne_bytes());
        a[EXTRA_PACKETS_ANNO_OFFSET..EXTRA_PACKETS_ANNO_OFFSET + 4]
            .copy_from_slice(&f.extra_packets.to_ne_bytes());
        a[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
            .copy_from_slice(&f.extra_length.to_ne_bytes());
        Some(p)
    }

    fn produce(&mut self, batch: &mut Batch, max: usize, out: &mut Out<'_>) -> TaskStatus {
        if !self.active {
            return TaskStatus::Idle;
        }
        let max = max.min(batch.room());
        let mut n = 0;
        while n < max && !(self.ended && self.held.is_none()) {
            if self.held.is_none() {
                match self.read_flow() {
                    None => self.ended = true,
                    Some(None) if !self.pull => self.ended = true,
                    Some(None) => continue,
                    Some(Some(f)) => {
                        // A refused allocation loses this flow, as in Click.
                        let Some(mut p) = Self::make(&f, out) else {
                            break;
                        };
                        if self.multipacket && Multipacket::is_multi(&p) {
                            self.multi.start(&mut p);
                        }
                        self.held = Some(p);
                    }
                }
                if self.ended {
                    break;
                }
            }
            if self.timing {
                let ts = self.held.as_ref().map_or(0, Packet::timestamp_ns);
                let off = *self.timing_offset.get_or_insert(out.now - ts);
                let due = ts.saturating_add(off);
                if out.now < due {
                    return if n > 0 {
                        TaskStatus::Busy
                    } else {
                        TaskStatus::SleepUntil(due)
                    };
                }
            }
            let p = if self.multipacket {
                self.multi.next(&mut self.held, out.pool)
            } else {
                self.held.take()
            };
            let Some(p) = p else { break };
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
            if n == 0 {
                return TaskStatus::Done;
            }
        }
        if n > 0 {
            TaskStatus::Busy
        } else {
            TaskStatus::Idle
        }
    }
}

impl Element for FromNetFlowSummaryDump {
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
            HandlerInfo::rw("active"),
            HandlerInfo::read("encap"),
            HandlerInfo::read("filesize"),
            HandlerInfo::read("filepos"),
            HandlerInfo::read("bad_lines"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
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
                    .map_err(|_| HandlerError::BadValue("type mismatch".into()))?;
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
    use crate::app::testing::{config_err, configure, run_task, scratch};
    use pronto_packet::Pool;

    const DUMP: &str = "\
! a NetFlow summary
# src|dst|nexthop|in|out|pkts|bytes|start|end|sport|dport|pad|flags|proto|tos
192.4.1.32|18.26.4.44|0.0.0.0|14|16|5|10932|998006995|998006999|3917|80|0|18|6|0
10.0.0.1|10.0.0.2|0|300|2|1|100|1000|0|53|5353|0|0|17|16|extra|fields

10.0.0.1|10.0.0.2|0|1|2|1|10|1000|1001|x|y|0|z|1|0
10.0.0.1|10.0.0.2|0|1|2|1|64|1000|1001|0|0|0|0|1|0
";

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    fn anno_u32(p: &Packet, o: usize) -> u32 {
        let a = p.anno_bytes();
        u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
    }

    fn first_ts(p: &Packet) -> i64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(
            &p.anno_bytes()[FIRST_TIMESTAMP_ANNO_OFFSET..FIRST_TIMESTAMP_ANNO_OFFSET + 8],
        );
        i64::from_ne_bytes(b)
    }

    fn reader(conf: &str, dir: &std::path::Path) -> Box<dyn Element> {
        std::fs::write(dir.join("nf.txt"), DUMP).expect("write");
        match configure(
            FromNetFlowSummaryDump::SPEC.keywords,
            FromNetFlowSummaryDump::configure,
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
        panic!("never finished");
    }

    #[test]
    fn flows_become_packets_and_a_bad_line_ends_the_push() {
        let dir = scratch("netflow");
        let pool = Pool::new(64).expect("pool");
        let mut e = reader("nf.txt, STOP true", &dir);
        let pkts = read_all(e.as_mut(), &pool);
        let got: Vec<String> = pkts.iter().map(|p| hex(p.data())).collect();
        assert_eq!(
            got,
            [
                // TCP: length 10932 (0x2ab4), ports 3917 (0x0f4d) and 80, flags 18.
                "45002ab40000000000060000c0040120121a042c0f4d00500000000000000000501200000000\
                 0000",
                // UDP: tos 16, length 100, ports 53 and 5353 (0x14e9), UDP length 80.
                "4510006400000000001100000a0000010a000002003514e900500000",
            ]
        );
        assert_eq!(pkts[0].timestamp_ns(), 998_006_999_000_000_000);
        assert_eq!(first_ts(&pkts[0]), 998_006_995_000_000_000);
        assert_eq!(anno_u32(&pkts[0], EXTRA_PACKETS_ANNO_OFFSET), 4);
        assert_eq!(anno_u32(&pkts[0], EXTRA_LENGTH_ANNO_OFFSET), 10932 - 40);
        assert_eq!(pkts[0].paint_anno(), 14);
        // End time 0: the start time; input 300 pinned at 255.
        assert_eq!(pkts[1].timestamp_ns(), 1_000_000_000_000);
        assert_eq!(pkts[1].paint_anno(), 255);
        assert_eq!(anno_u32(&pkts[1], EXTRA_LENGTH_ANNO_OFFSET), 72);
        assert_eq!(e.read_handler("bad_lines").expect("h"), "1");
    }

    #[test]
    fn multipacket_spreads_a_flow() {
        let dir = scratch("netflow");
        let pool = Pool::new(64).expect("pool");
        let mut e = reader("nf.txt, MULTIPACKET true, LINK both", &dir);
        let pkts = read_all(e.as_mut(), &pool);
        // Five packets of 10932 / 5 = 2186 bytes, one second apart; the
        // last takes the rest (10932 - 4 * 2186).
        assert_eq!(pkts.len(), 6);
        let lens: Vec<u16> = pkts[..5]
            .iter()
            .map(|p| u16::from_be_bytes([p.data()[2], p.data()[3]]))
            .collect();
        assert_eq!(lens, [2186, 2186, 2186, 2186, 2188]);
        let ts: Vec<i64> = pkts[..5]
            .iter()
            .map(|p| p.timestamp_ns() / 1_000_000_000)
            .collect();
        assert_eq!(ts, [998006995, 998006996, 998006997, 998006998, 998006999]);
        let extra: Vec<u32> = pkts[..5]
            .iter()
            .map(|p| anno_u32(p, EXTRA_LENGTH_ANNO_OFFSET))
            .collect();
        assert_eq!(extra, [2146, 2146, 2146, 2146, 2148]);
        // LINK both: input 14 in the upper bits, output 16 pinned at 15.
        assert_eq!(pkts[0].paint_anno(), 0xef);
        assert_eq!(pkts[5].paint_anno(), 0xf2);
    }

    #[test]
    fn pulled_a_bad_line_is_skipped() {
        let dir = scratch("netflow");
        std::fs::write(dir.join("nf.txt"), DUMP).expect("write");
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            FromNetFlowSummaryDump::SPEC.keywords,
            FromNetFlowSummaryDump::configure,
            "nf.txt",
            &[],
            &[false],
            &dir,
        )
        .expect("configure");
        let mut got = Vec::new();
        for _ in 0..10 {
            let mut bufs: Vec<Batch> = vec![Batch::new()];
            let mut ctrl = crate::Control::default();
            let mut b = Batch::new();
            let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
            e.pull(0, &mut b, 1, &mut out);
            got.extend(b.drain());
        }
        assert_eq!(got.len(), 3);
        assert_eq!(
            hex(got[2].data()),
            "4500004000000000000100000a0000010a000002"
        );
        assert_eq!(e.read_handler("bad_lines").expect("h"), "1");
    }

    #[test]
    fn link_must_be_known() {
        let dir = scratch("netflow");
        std::fs::write(dir.join("nf.txt"), DUMP).expect("write");
        let e = config_err(configure(
            FromNetFlowSummaryDump::SPEC.keywords,
            FromNetFlowSummaryDump::configure,
            "nf.txt, LINK sideways",
            &[],
            &[true],
            &dir,
        ));
        assert!(e.contains("LINK"), "{e}");
    }
}
