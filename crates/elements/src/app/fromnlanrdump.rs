//! `FromNLANRDump`: reads IP packet headers from an NLANR trace (TSH, FR+
//! or FR format).
//!
//! TSH and FR+ records are 44 bytes: a big-endian timestamp (in TSH, the
//! top byte of the microseconds word is the interface number) and the
//! first 36 bytes of the packet, an IP header without options and the
//! start of its transport header. FR records hold a flow summary, not
//! packet bytes; as in Click, an FR file yields no packets.

use pronto_packet::Packet;

use super::pcap;
use super::recordfile::{self, Options, Record, RecordFormat, RecordSource, Step};
use crate::util::cfg_err;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Spec};

/// The three NLANR record formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Fr,
    FrPlus,
    Tsh,
}

impl Format {
    fn cell_size(self) -> usize {
        match self {
            Format::Fr => 24,
            Format::FrPlus | Format::Tsh => 44,
        }
    }
}

/// The NLANR record format.
pub struct Nlanr {
    format: Format,
}

/// Reads IP packet headers from an NLANR trace.
pub type FromNLANRDump = RecordSource<Nlanr>;

impl Nlanr {
    /// A reader of FORMAT `format` (`fr`, `fr+` or `tsh`, any case).
    pub fn new(format: &str) -> Option<Nlanr> {
        let format = match format.to_ascii_lowercase().as_str() {
            "fr" => Format::Fr,
            "fr+" => Format::FrPlus,
            "tsh" => Format::Tsh,
            _ => return None,
        };
        Some(Nlanr { format })
    }
}

fn be32(h: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([h[off], h[off + 1], h[off + 2], h[off + 3]])
}

/// The format a file name's suffix names (after a compression suffix).
fn guess_format(filename: &str) -> Option<Format> {
    let lower = filename.to_ascii_lowercase();
    let mut f = lower.as_str();
    for z in [".gz", ".z", ".bz2"] {
        if let Some(s) = f.strip_suffix(z) {
            f = s;
            break;
        }
    }
    if f.ends_with(".fr+") {
        Some(Format::FrPlus)
    } else if f.ends_with(".fr") {
        Some(Format::Fr)
    } else if f.ends_with(".tsh") {
        Some(Format::Tsh)
    } else {
        None
    }
}

impl RecordFormat for Nlanr {
    const HANDLERS: &'static [HandlerInfo] = &[
        HandlerInfo::read("sampling_prob"),
        HandlerInfo::rw("active"),
        HandlerInfo::read("encap"),
        HandlerInfo::write("stop"),
        HandlerInfo::read("packet_filepos"),
        HandlerInfo::write("extend_interval"),
        HandlerInfo::read("filename"),
        HandlerInfo::read("filesize"),
        HandlerInfo::read("filepos"),
        HandlerInfo::read("bad_records"),
    ];

    fn record(&mut self, data: &[u8], pos: usize) -> Step {
        let size = self.format.cell_size();
        let Some(h) = data.get(pos..pos + size) else {
            if pos < data.len() {
                return Step::Bad {
                    what: "truncated record",
                    to_end: true,
                };
            }
            return Step::End;
        };
        if self.format == Format::Fr {
            return Step::End;
        }
        let sec = be32(h, 0) as i64;
        let usec = be32(h, 4);
        let (sub, paint) = if self.format == Format::Tsh {
            (usec & 0x00ff_ffff, Some((usec >> 24) as u8))
        } else {
            (usec, None)
        };
        Step::Record(Record {
            ts: sec * 1_000_000_000 + sub as i64 * 1000,
            start: pos + 8,
            caplen: size - 8,
            len: 0,
            next: pos + size,
            dlt: pcap::DLT_RAW,
            paint,
        })
    }

    fn linktype(&self) -> i32 {
        pcap::DLT_RAW
    }

    /// Only IPv4 headers without options are emitted on output 0.
    fn finish(&self, p: &mut Packet) -> bool {
        pcap::force_ip(p, pcap::DLT_RAW) && p.network_header_len() == Some(20)
    }
}

impl FromNLANRDump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromNLANRDump")
        .ports("0/1-2")
        .processing("a/ah")
        .keywords(&[
            "FORMAT", "STOP", "ACTIVE", "FORCE_IP", "START", "START_AFTER", "END", "END_AFTER",
            "INTERVAL", "END_CALL", "FILEPOS", "SAMPLE", "TIMING", "MMAP",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FromNLANRDump(FILENAME [, KEYWORDS])\n\n\
             Reads IP packet headers from an NLANR trace file (TSH, FR+ or FR format)\n\
             and emits them on output 0, optionally stopping the driver at the end of\n\
             the file. Each TSH or FR+ record becomes a 36-byte packet (the IP header\n\
             and the first 16 bytes of its transport header) with the record's\n\
             timestamp and its IP header annotation set; in TSH files the paint\n\
             annotation gets the record's interface number. Records whose IP header\n\
             has options (or is not IPv4) go to output 1 if it exists, else are\n\
             dropped. FR records hold flow summaries without packet bytes: as in\n\
             Click, an FR file yields no packets. A truncated last record ends the\n\
             trace with an error naming the file offset, counted in bad_records.\n\n\
             Ports: no inputs; 1 or 2 outputs (output 0 agnostic: pushes from a task,\n\
             or answers pulls; output 1 push).\n\
             Keywords:\n  \
             FORMAT      fr, fr+, tsh, or guess (from the file name's suffix .fr, .fr+\n              \
             or .tsh; tsh when none matches) (default guess)\n  \
             STOP        boolean; stop the driver at the end of the trace (default false)\n  \
             ACTIVE      boolean; if false, emit nothing until activated (default true)\n  \
             FORCE_IP    boolean; accepted (packets are always IP)\n  \
             START, END  absolute timestamps bounding the packets emitted\n  \
             START_AFTER, END_AFTER  times relative to the trace's first timestamp\n  \
             INTERVAL    stop this long after the first packet\n  \
             END_CALL    handler to call at the end (NAME.stop or NAME.active false;\n              \
             default NAME.active false with an END time)\n  \
             FILEPOS     file offset to start reading from\n  \
             SAMPLE      probability of emitting each packet (default 1)\n  \
             TIMING      boolean; keep the trace's packet spacing (default false)\n  \
             MMAP        accepted; the file is always mapped\n\
             Handlers:\n  sampling_prob (read), active (read/write), encap (read: IP), stop\n  \
             (write), packet_filepos (read), extend_interval (write), filename (read),\n  \
             filesize (read), filepos (read), bad_records (read)",
        );

    /// Configures a `FromNLANRDump`: maps the file.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let filename: String = a.read_mp("FILENAME")?;
        let format: String = a.read_or("FORMAT", "guess".to_string())?;
        let timing = a.read_or("TIMING", false)?;
        let opts = Options::read(ctx, &mut a, timing)?;
        let filepos: u64 = a.read_or("FILEPOS", 0u64)?;
        let _mmap: bool = a.read_or("MMAP", true)?;
        a.finish()?;
        let fmt = if format.eq_ignore_ascii_case("guess") {
            let format = guess_format(&filename).unwrap_or_else(|| {
                eprintln!(
                    "{}: cannot guess file format from filename, assuming 'tsh'",
                    ctx.name
                );
                Format::Tsh
            });
            Nlanr { format }
        } else {
            Nlanr::new(&format).ok_or_else(|| {
                cfg_err(format!(
                    "FORMAT: bad FORMAT `{format}'; expected fr, fr+, tsh or guess"
                ))
            })?
        };
        let Some(map) = recordfile::open_file(ctx, &filename)? else {
            return Ok(recordfile::check_stand_in(ctx, &filename));
        };
        let pos = recordfile::start_pos(&filename, &map, filepos, 0)?;
        Ok(Box::new(RecordSource::new(
            ctx, fmt, filename, map, pos, opts, false,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, run_task, scratch};
    use crate::TaskStatus;
    use pronto_packet::Pool;

    /// The 36 packet bytes of a record: an IPv4 TCP header 1.2.3.4 ->
    /// 5.6.7.8 (header length `ihl` words) and 16 bytes of TCP header.
    fn headers(ihl: u8, id: u8) -> [u8; 36] {
        let mut b = [0u8; 36];
        b[..20].copy_from_slice(&[
            0x40 | ihl,
            0,
            0,
            40,
            0,
            id,
            0x40,
            0,
            64,
            6,
            0,
            0,
            1,
            2,
            3,
            4,
            5,
            6,
            7,
            8,
        ]);
        b[20..24].copy_from_slice(&[0x04, 0xd2, 0x00, 0x50]);
        for (i, x) in b[24..].iter_mut().enumerate() {
            *x = 0xa0 + i as u8;
        }
        b
    }

    fn rec(sec: u32, usec: u32, body: &[u8; 36]) -> Vec<u8> {
        let mut r = sec.to_be_bytes().to_vec();
        r.extend(usec.to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    fn open(dir: &std::path::Path, conf: &str, outs: &[bool]) -> Box<dyn Element> {
        configure(
            FromNLANRDump::SPEC.keywords,
            FromNLANRDump::configure,
            conf,
            &[],
            outs,
            dir,
        )
        .expect("configures")
    }

    #[test]
    fn tsh_records_become_ip_headers() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromnlanrdump-tsh");
        let (a, b, c) = (headers(5, 1), headers(6, 2), headers(5, 3));
        // Interface 3, 250000 us; interface 7, 1 us; interface 0, 999999 us.
        let mut f = rec(1_000, (3 << 24) | 250_000, &a);
        f.extend(rec(1_001, (7 << 24) | 1, &b));
        f.extend(rec(1_002, 999_999, &c));
        std::fs::write(dir.join("t.tsh"), &f).expect("write");
        let mut e = open(&dir, "t.tsh, STOP true", &[true, true]);
        let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 2, 0);
        assert_eq!((st, ctrl.stop_requests), (TaskStatus::Done, 1));
        assert_eq!(outs[0].len(), 2);
        assert_eq!(outs[0][0].data(), &a);
        assert_eq!(outs[0][0].timestamp_ns(), 1_000_250_000_000);
        assert_eq!(outs[0][0].paint_anno(), 3);
        assert_eq!(outs[0][0].network_header_offset(), Some(0));
        assert_eq!(outs[0][0].dst_ip_anno(), [5, 6, 7, 8]);
        assert_eq!(outs[0][1].data(), &c);
        assert_eq!(outs[0][1].timestamp_ns(), 1_002_999_999_000);
        assert_eq!(outs[0][1].paint_anno(), 0);
        // The header with options goes to output 1.
        assert_eq!(outs[1].len(), 1);
        assert_eq!(outs[1][0].data(), &b);
        assert_eq!(outs[1][0].timestamp_ns(), 1_001_000_001_000);
        assert_eq!(e.read_handler("encap").expect("encap"), "IP");
        assert_eq!(e.read_handler("packet_filepos").expect("p"), "88");
        assert_eq!(e.read_handler("filepos").expect("p"), "132");
        assert_eq!(e.read_handler("bad_records").expect("b"), "0");
    }

    #[test]
    fn frplus_timestamps_and_format_choice() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromnlanrdump-frplus");
        let a = headers(5, 9);
        // FR+ keeps the whole microseconds word.
        let f = rec(50, (1 << 24) | 5, &a);
        std::fs::write(dir.join("t.fr+"), &f).expect("write");
        std::fs::write(dir.join("t.bin"), &f).expect("write");
        for conf in ["t.fr+", "t.bin, FORMAT FR+"] {
            let mut e = open(&dir, conf, &[true]);
            let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
            assert_eq!(outs[0].len(), 1);
            assert_eq!(outs[0][0].data(), &a);
            assert_eq!(
                outs[0][0].timestamp_ns(),
                50_000_000_000 + ((1 << 24) + 5) * 1000
            );
            assert_eq!(outs[0][0].paint_anno(), 0);
        }
        // Read as TSH, the top byte is the interface.
        let mut e = open(&dir, "t.bin", &[true]);
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0][0].timestamp_ns(), 50_000_005_000);
        assert_eq!(outs[0][0].paint_anno(), 1);
        // FR: no packets.
        std::fs::write(dir.join("t.fr"), [0u8; 48]).expect("write");
        let mut e = open(&dir, "t.fr, STOP true", &[true]);
        let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(
            (st, outs[0].len(), ctrl.stop_requests),
            (TaskStatus::Done, 0, 1)
        );
        assert_eq!(guess_format("x.TSH.gz"), Some(Format::Tsh));
        assert_eq!(guess_format("x.fr.bz2"), Some(Format::Fr));
        assert_eq!(guess_format("x.fr+.Z"), Some(Format::FrPlus));
        assert_eq!(guess_format("x.pcap"), None);
        assert_eq!(
            config_err(configure(
                FromNLANRDump::SPEC.keywords,
                FromNLANRDump::configure,
                "t.bin, FORMAT erf",
                &[],
                &[true],
                &dir,
            )),
            "FORMAT: bad FORMAT `erf'; expected fr, fr+, tsh or guess"
        );
    }

    #[test]
    fn truncated_record_and_filepos() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromnlanrdump-bad");
        let mut f = rec(1, 0, &headers(5, 1));
        f.extend(rec(2, 0, &headers(5, 2)));
        f.extend(rec(3, 0, &headers(5, 3)));
        f.truncate(44 * 3 - 1);
        std::fs::write(dir.join("t.tsh"), &f).expect("write");
        let mut e = open(&dir, "t.tsh, STOP true", &[true]);
        let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(
            (st, outs[0].len(), ctrl.stop_requests),
            (TaskStatus::Done, 2, 1)
        );
        assert_eq!(e.read_handler("bad_records").expect("b"), "1");
        assert_eq!(e.read_handler("filepos").expect("p"), "131");
        let mut e = open(&dir, "t.tsh, FILEPOS 44", &[true]);
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(outs[0][0].timestamp_ns(), 2_000_000_000);
    }
}
