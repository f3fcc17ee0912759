//! `FromDump`: reads packets from a tcpdump (pcap) file.
//!
//! The file is mapped into memory and parsed record by record; each task
//! run fills a whole batch, copying each record's bytes into a fresh
//! packet. Microsecond and nanosecond files in either byte order are read.
//! The pcap record format plugs into the shared trace reader
//! ([`super::recordfile`]).

use pronto_packet::{Batch, Packet, Pool, MAX_PACKET};

use super::pcap;
use super::recordfile::{self, Options, Record, RecordFormat, RecordSource, Step};
use crate::util::cfg_err;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Spec};

#[cfg(test)]
use crate::{Out, TaskStatus};

/// The pcap record format.
pub struct Pcap {
    swapped: bool,
    nano: bool,
    extra_hdr: usize,
    minor: u16,
    linktype: i32,
    /// Where the trace's read-ahead has reached (see `plain_records`).
    asked: std::cell::Cell<usize>,
}

/// Reads packets from a tcpdump file.
pub type FromDump = RecordSource<Pcap>;

/// Packets per task run unless BURST says otherwise. A batch's packets
/// (a header line and a data line each) stay in the first-level cache
/// while every element of the path works on them: 256 (the most a batch
/// holds) spilled to the second level and made `FromDump -> Strip ->
/// CheckIPHeader -> IPFilter` 1.14x slower; 32 made route lookups 1.1x
/// slower (fewer misses overlapping). docs/benchmarks.md.
const DEFAULT_BURST: usize = 64;

/// How far ahead of the record being read the trace is prefetched.
const READ_AHEAD: usize = 4096;
/// A cache line.
const LINE: usize = 64;

/// Reads plain records (caplen == len, not oversized) from `pos` into
/// `batch`, up to `max`; returns how many, and (the position after them,
/// the position of the last one).
#[inline(always)]
fn plain_records<const SWAPPED: bool>(
    fmt: &Pcap,
    data: &[u8],
    mut pos: usize,
    batch: &mut Batch,
    max: usize,
    pool: &pronto_packet::Pool,
) -> (usize, (usize, usize)) {
    let (nano, extra_hdr, asked) = (fmt.nano, fmt.extra_hdr, &fmt.asked);
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
    // The trace is read once, front to back, from a mapping of the file:
    // every record is a cache miss unless it was asked for early. The
    // processor's own prefetcher stops at each 4 KiB page, so the loop
    // keeps the next `READ_AHEAD` bytes requested itself, a line at a
    // time (`FromDump -> Discard` 1.3x faster, a route lookup after it
    // 1.27x: docs/benchmarks.md).
    // What the last call asked for is not asked again (unless the file
    // position moved outside the window: a seek).
    let mut ahead = asked.get();
    if ahead < pos || ahead > pos + READ_AHEAD + LINE {
        ahead = pos & !(LINE - 1);
    }
    while n < max {
        let want = (pos + READ_AHEAD).min(data.len());
        while ahead < want {
            pronto_packet::cpu::prefetch(&data[ahead]);
            ahead += LINE;
        }
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
    asked.set(ahead);
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

impl RecordFormat for Pcap {
    const HANDLERS: &'static [HandlerInfo] = &[
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

    fn record(&mut self, data: &[u8], pos: usize) -> Step {
        let swapped = self.swapped;
        let Some(h) = data.get(pos..pos + pcap::RECORD_HEADER_LEN) else {
            if pos < data.len() {
                return Step::Bad {
                    what: "truncated packet header",
                    to_end: true,
                };
            }
            return Step::End;
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
            return Step::Bad {
                what: "bad packet header",
                to_end: false,
            };
        }
        let mut skip = 0;
        if caplen > len {
            skip = caplen - len;
            caplen = len;
        }
        let start = pos + pcap::RECORD_HEADER_LEN + self.extra_hdr;
        let next = start + caplen + skip;
        if next > data.len() {
            return Step::Bad {
                what: "truncated packet",
                to_end: true,
            };
        }
        let sub_ns = if self.nano {
            sub as i64
        } else {
            sub as i64 * 1000
        };
        Step::Record(Record {
            ts: sec as i64 * 1_000_000_000 + sub_ns,
            start,
            caplen,
            len,
            next,
            dlt: self.linktype,
            paint: None,
        })
    }

    fn linktype(&self) -> i32 {
        self.linktype
    }

    fn plain_ok(&self) -> bool {
        self.minor > 3
    }

    fn fill_plain(
        &self,
        data: &[u8],
        pos: usize,
        batch: &mut Batch,
        max: usize,
        pool: &Pool,
    ) -> (usize, (usize, usize)) {
        // One copy of the loop per byte order, so the order is not tested
        // per field.
        if self.swapped {
            plain_records::<true>(self, data, pos, batch, max, pool)
        } else {
            plain_records::<false>(self, data, pos, batch, max, pool)
        }
    }
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
             BURST       packets per task run (default 64, at most 256)\n\
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
        let mut opts = Options::read(ctx, &mut a, timing)?;
        let filepos: u64 = a.read_or("FILEPOS", 0u64)?;
        let _mmap: bool = a.read_or("MMAP", true)?;
        let burst: usize = a.read_or("BURST", DEFAULT_BURST)?;
        a.finish()?;
        opts.set_burst(burst);

        let Some(map) = recordfile::open_file(ctx, &filename)? else {
            return Ok(recordfile::check_stand_in(ctx, &filename));
        };
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
        let mut force_ip = opts.force_ip;
        if force_ip {
            if !pcap::dlt_force_ipable(linktype) {
                return Err(cfg_err(format!(
                    "{filename}: unknown linktype {linktype}; can't force IP packets"
                )));
            }
        } else if linktype == pcap::DLT_RAW {
            force_ip = true;
        }
        let pos = recordfile::start_pos(&filename, &map, filepos, pcap::FILE_HEADER_LEN)?;
        let fmt = Pcap {
            swapped,
            nano: magic == pcap::MAGIC_NANO,
            extra_hdr,
            minor,
            linktype,
            asked: std::cell::Cell::new(0),
        };
        Ok(Box::new(RecordSource::new(
            ctx, fmt, filename, map, pos, opts, force_ip,
        )))
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
            assert_eq!(outs[0].len(), DEFAULT_BURST);
        }
        assert_eq!(total, 1500);
        assert_eq!(runs, 1500usize.div_ceil(DEFAULT_BURST));
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
        // It left on output 1: not a drop.
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("not_ip", 0), ("malformed", 0)]
        );
        // Without output 1 it is dropped and counted.
        let mut e = open(&dir, "t.pcap");
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("not_ip", 1), ("malformed", 0)]
        );
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
