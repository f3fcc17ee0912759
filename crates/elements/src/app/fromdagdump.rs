//! `FromDAGDump`: reads packets from a DAG (ERF) trace file.
//!
//! Records are read the way Click reads them: the ERF header types for
//! HDLC/PoS, Ethernet, ATM and AAL5 records, and the legacy fixed 64-byte
//! cells, whose encapsulation comes from ENCAP (default ATM RFC 1483). A
//! record of any other type switches the rest of the file to legacy cells,
//! with a warning, as Click does.

use super::pcap;
use super::recordfile::{self, Options, Record, RecordFormat, RecordSource, Step};
use crate::util::cfg_err;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Spec};

/// Length of an ERF record header.
const HEADER_SIZE: usize = 16;
/// Length of a legacy cell.
const CELL_SIZE: usize = 64;
/// No link type (no ENCAP given, or no record read yet).
const DLT_NONE: i32 = -1;

const TYPE_LEGACY: u8 = 0;
const TYPE_HDLC_POS: u8 = 1;
const TYPE_ETH: u8 = 2;
const TYPE_ATM: u8 = 3;
const TYPE_AAL5: u8 = 4;

/// The DAG record format.
pub struct Dag {
    filename: String,
    /// ENCAP, or what an odd record type made of it.
    base_linktype: i32,
    /// Link type of the last record read.
    linktype: i32,
    warned: bool,
}

/// Reads packets from a DAG (ERF) trace file.
pub type FromDAGDump = RecordSource<Dag>;

/// A DAG timestamp (32.32 fixed point seconds, little-endian in the file)
/// in nanoseconds, rounded to the nearest nanosecond.
fn stamp_ns(stamp: u64) -> i64 {
    let mut sec = (stamp >> 32) as u32;
    let mut frac = (stamp & 0xffff_ffff) * 1_000_000_000;
    frac += (frac & 0x8000_0000) << 1;
    let mut nsec = (frac >> 32) as u32;
    if nsec >= 1_000_000_000 {
        nsec -= 1_000_000_000;
        sec = sec.wrapping_add(1);
    }
    sec as i64 * 1_000_000_000 + nsec as i64
}

fn be16(h: &[u8], off: usize) -> usize {
    u16::from_be_bytes([h[off], h[off + 1]]) as usize
}

impl Dag {
    /// A reader of the file `filename` whose legacy cells have link type
    /// `encap` (-1 for none given: ATM RFC 1483).
    pub fn new(filename: &str, encap: i32) -> Dag {
        Dag {
            filename: filename.to_string(),
            base_linktype: encap,
            linktype: DLT_NONE,
            warned: false,
        }
    }

    /// A legacy cell of the base link type: (packet start offset in the
    /// cell, wire length field).
    fn legacy(&mut self, h: &[u8]) -> (usize, usize) {
        self.linktype = self.base_linktype;
        match self.base_linktype {
            pcap::DLT_ATM_RFC1483 | pcap::DLT_PPP | pcap::DLT_PPP_HDLC => (HEADER_SIZE, 0),
            pcap::DLT_C_HDLC => (HEADER_SIZE, be16(h, 10)),
            DLT_NONE => {
                self.linktype = pcap::DLT_ATM_RFC1483;
                (HEADER_SIZE, 0)
            }
            pcap::DLT_SUNATM => (12, 0),
            pcap::DLT_EN10MB => (10, be16(h, 8)),
            _ => (8, 0),
        }
    }
}

impl RecordFormat for Dag {
    const HANDLERS: &'static [HandlerInfo] = &[
        HandlerInfo::read("sampling_prob"),
        HandlerInfo::rw("active"),
        HandlerInfo::read("encap"),
        HandlerInfo::write("stop"),
        HandlerInfo::write("extend_interval"),
        HandlerInfo::read("filename"),
        HandlerInfo::read("filesize"),
        HandlerInfo::read("filepos"),
        HandlerInfo::read("bad_records"),
    ];

    fn record(&mut self, data: &[u8], pos: usize) -> Step {
        let Some(h) = data.get(pos..pos + HEADER_SIZE) else {
            if pos < data.len() {
                return Step::Bad {
                    what: "truncated record header",
                    to_end: true,
                };
            }
            return Step::End;
        };
        let mut stamp = [0u8; 8];
        stamp.copy_from_slice(&h[..8]);
        let ts = stamp_ns(u64::from_le_bytes(stamp));
        let ty = h[8];
        let mut legacy = ty == TYPE_LEGACY || self.base_linktype >= 0;
        let (mut start, mut caplen, mut wire, mut next) = (0, 0, 0, 0);
        if !legacy {
            let rlen = be16(h, 10);
            wire = be16(h, 14);
            start = pos + HEADER_SIZE;
            next = pos + rlen;
            let mut hdr = HEADER_SIZE;
            match ty {
                TYPE_ATM | TYPE_AAL5 => self.linktype = pcap::DLT_SUNATM,
                TYPE_ETH => {
                    start += 2;
                    hdr += 2;
                    // The wire length counts the frame's CRC.
                    wire = wire.saturating_sub(4);
                    self.linktype = pcap::DLT_EN10MB;
                }
                TYPE_HDLC_POS => self.linktype = pcap::DLT_C_HDLC,
                _ => {
                    if self.base_linktype == DLT_NONE {
                        self.base_linktype = pcap::DLT_ATM_RFC1483;
                    }
                    if !self.warned {
                        self.warned = true;
                        eprintln!(
                            "{}: DAG record with odd type {ty} at file offset {pos}; reading the rest \
                             of the file as old-style ATM cells (give ENCAP to say what it holds)",
                            self.filename
                        );
                    }
                    legacy = true;
                }
            }
            if !legacy {
                if rlen < hdr {
                    return Step::Bad {
                        what: "record length shorter than its header",
                        to_end: false,
                    };
                }
                caplen = rlen - hdr;
            }
        }
        if legacy {
            let (off, w) = self.legacy(h);
            start = pos + off;
            caplen = CELL_SIZE - off;
            wire = w;
            next = pos + CELL_SIZE;
        }
        if next > data.len() {
            return Step::Bad {
                what: "truncated record",
                to_end: true,
            };
        }
        Step::Record(Record {
            ts,
            start,
            caplen,
            len: wire,
            next,
            dlt: self.linktype,
            paint: None,
        })
    }

    fn linktype(&self) -> i32 {
        self.linktype
    }
}

impl FromDAGDump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromDAGDump")
        .ports("0/1-2")
        .processing("a/ah")
        .keywords(&[
            "STOP", "ACTIVE", "FORCE_IP", "START", "START_AFTER", "END", "END_AFTER", "INTERVAL",
            "END_CALL", "SAMPLE", "TIMING", "ENCAP", "MMAP",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FromDAGDump(FILENAME [, KEYWORDS])\n\n\
             Reads packets from a DAG trace file in ERF format (University of\n\
             Waikato's DAG tools) and emits them on output 0, optionally stopping the\n\
             driver at the end of the file. ERF records of type HDLC/PoS, Ethernet,\n\
             ATM and AAL5 carry their own encapsulation; legacy files are fixed\n\
             64-byte cells whose encapsulation ENCAP names. A record of any other\n\
             type makes the rest of the file read as legacy cells (with a warning).\n\
             Each packet gets the record's timestamp (rounded to the nanosecond) and,\n\
             when the record was captured short, the missing length as its extra\n\
             length annotation (Ethernet wire lengths leave out the CRC). A truncated\n\
             record, or one whose length is shorter than its header, ends the trace\n\
             with an error naming the file offset, counted in bad_records.\n\n\
             Ports: no inputs; 1 or 2 outputs (output 0 agnostic: pushes from a task,\n\
             or answers pulls; output 1 push, gets non-IP packets when FORCE_IP).\n\
             Keywords:\n  \
             STOP        boolean; stop the driver at the end of the trace (default false)\n  \
             ACTIVE      boolean; if false, emit nothing until activated (default true)\n  \
             FORCE_IP    boolean; emit only IP packets, with the IP header set\n              \
             (default false)\n  \
             START, END  absolute timestamps bounding the packets emitted\n  \
             START_AFTER, END_AFTER  times relative to the trace's first timestamp\n  \
             INTERVAL    stop this long after the first packet\n  \
             END_CALL    handler to call at the end (NAME.stop or NAME.active false;\n              \
             default NAME.active false with an END time)\n  \
             SAMPLE      probability of emitting each packet (default 1)\n  \
             TIMING      boolean; keep the trace's packet spacing (default false;\n              \
             not with FORCE_IP)\n  \
             ENCAP       legacy cells' encapsulation: IP, ATM, SUNATM, ETHER, PPP,\n              \
             PPP_HDLC or HDLC (default ATM, for legacy cells only)\n  \
             MMAP        accepted; the file is always mapped\n\
             Handlers:\n  sampling_prob (read), active (read/write), encap (read: the last\n  \
             packet's encapsulation), stop (write), extend_interval (write),\n  \
             filename (read), filesize (read), filepos (read), bad_records (read)",
        );

    /// Configures a `FromDAGDump`: maps the file.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let filename: String = a.read_mp("FILENAME")?;
        let timing = a.read_or("TIMING", false)?;
        let opts = Options::read(ctx, &mut a, timing)?;
        let encap: Option<String> = a.read("ENCAP")?;
        let _mmap: bool = a.read_or("MMAP", true)?;
        a.finish()?;
        let base_linktype = match encap.as_deref() {
            None => DLT_NONE,
            Some(e) => match pcap::parse_dlt(e) {
                Some(
                    d @ (pcap::DLT_SUNATM
                    | pcap::DLT_C_HDLC
                    | pcap::DLT_EN10MB
                    | pcap::DLT_ATM_RFC1483
                    | pcap::DLT_PPP
                    | pcap::DLT_PPP_HDLC
                    | pcap::DLT_RAW),
                ) => d,
                _ => {
                    return Err(cfg_err(format!(
                        "ENCAP: bad encapsulation type `{e}'; expected IP, ATM, SUNATM, ETHER, PPP, PPP_HDLC or HDLC"
                    )))
                }
            },
        };
        if opts.force_ip && timing {
            return Err(cfg_err(
                "FORCE_IP and TIMING options are incompatible; give one of them",
            ));
        }
        let Some(map) = recordfile::open_file(ctx, &filename)? else {
            return Ok(recordfile::check_stand_in(ctx, &filename));
        };
        let force_ip = opts.force_ip;
        let fmt = Dag::new(&filename, base_linktype);
        Ok(Box::new(RecordSource::new(
            ctx, fmt, filename, map, 0, opts, force_ip,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, run_task, scratch};
    use crate::TaskStatus;
    use pronto_packet::{Packet, Pool};

    /// An ERF record: timestamp, type, record length, wire length, then
    /// the bytes after the 16-byte header.
    fn erf(stamp: u64, ty: u8, wlen: u16, body: &[u8]) -> Vec<u8> {
        let mut r = stamp.to_le_bytes().to_vec();
        r.push(ty);
        r.push(0); // flags
        r.extend(((HEADER_SIZE + body.len()) as u16).to_be_bytes());
        r.extend(0u16.to_be_bytes()); // loss counter
        r.extend(wlen.to_be_bytes());
        r.extend_from_slice(body);
        r
    }

    fn open(dir: &std::path::Path, conf: &str, outs: &[bool]) -> Box<dyn Element> {
        configure(
            FromDAGDump::SPEC.keywords,
            FromDAGDump::configure,
            conf,
            &[],
            outs,
            dir,
        )
        .expect("configures")
    }

    /// An Ethernet frame carrying a 20-byte IPv4 header 10.0.0.1 -> 10.0.0.2.
    fn ip_frame() -> Vec<u8> {
        let mut f = vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x08, 0x00];
        f.extend([
            0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ]);
        f
    }

    fn extra(p: &Packet) -> u32 {
        let a = p.anno_bytes();
        u32::from_ne_bytes([a[28], a[29], a[30], a[31]])
    }

    #[test]
    fn stamps_round_to_the_nanosecond() {
        assert_eq!(stamp_ns(100 << 32), 100_000_000_000);
        assert_eq!(stamp_ns((100 << 32) | 0x8000_0000), 100_500_000_000);
        // 5 * 10^9 / 2^32 = 1.16 ns
        assert_eq!(stamp_ns((100 << 32) | 5), 100_000_000_001);
        // (2^32 - 1) * 10^9 / 2^32 = 999999999.77 ns, rounds up into the
        // next second.
        assert_eq!(stamp_ns((100 << 32) | 0xffff_ffff), 101_000_000_000);
    }

    #[test]
    fn erf_records_of_each_type() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdagdump-erf");
        let frame = ip_frame();
        // Ethernet: 2 bytes of padding, then the frame; wire length 64
        // counts the CRC, so 60 bytes were on the wire before it.
        let mut eth = vec![0xee, 0xee];
        eth.extend(&frame);
        let hdlc = [0x0f, 0x00, 0x08, 0x00, 0x45, 0, 0, 20];
        let atm = [0, 0, 0, 0x20, 0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00];
        let mut f = erf((1_000 << 32) | 0x8000_0000, TYPE_ETH, 64, &eth);
        f.extend(erf(1_001 << 32, TYPE_HDLC_POS, 8, &hdlc));
        f.extend(erf(1_002 << 32, TYPE_ATM, 0, &atm));
        std::fs::write(dir.join("t.erf"), &f).expect("write");
        let mut e = open(&dir, "t.erf, STOP true", &[true]);
        assert_eq!(e.read_handler("encap").expect("encap"), "<none>");
        let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!((st, ctrl.stop_requests), (TaskStatus::Done, 1));
        let o = &outs[0];
        assert_eq!(o.len(), 3);
        assert_eq!(o[0].data(), &frame[..]);
        assert_eq!(o[0].timestamp_ns(), 1_000_500_000_000);
        assert_eq!(extra(&o[0]), 60 - 34);
        assert_eq!(o[1].data(), &hdlc);
        assert_eq!(o[1].timestamp_ns(), 1_001_000_000_000);
        assert_eq!(extra(&o[1]), 0);
        assert_eq!(o[2].data(), &atm);
        assert_eq!(o[2].timestamp_ns(), 1_002_000_000_000);
        assert_eq!(e.read_handler("encap").expect("encap"), "SUNATM");
        assert_eq!(e.read_handler("filepos").expect("pos"), f.len().to_string());
        assert_eq!(
            e.read_handler("filesize").expect("size"),
            f.len().to_string()
        );
        assert_eq!(e.read_handler("bad_records").expect("bad"), "0");
        assert!(e.read_handler("count").is_err());
        assert!(e.write_handler("filepos", "0").is_err());
    }

    /// A legacy 64-byte cell: timestamp, then bytes 8..64 as given.
    fn cell(sec: u64, rest: &[u8; 56]) -> Vec<u8> {
        let mut c = (sec << 32).to_le_bytes().to_vec();
        c.extend_from_slice(rest);
        c
    }

    #[test]
    fn legacy_cells_follow_encap() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdagdump-legacy");
        let mut rest = [0u8; 56];
        for (i, b) in rest.iter_mut().enumerate() {
            *b = i as u8 + 8;
        }
        // Type byte 0: a legacy cell.
        rest[0] = 0;
        let mut f = cell(7, &rest);
        f.extend(cell(8, &rest));
        std::fs::write(dir.join("t.dag"), &f).expect("write");
        // No ENCAP: ATM RFC 1483, the cell after the 16-byte header.
        let mut e = open(&dir, "t.dag", &[true]);
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0].len(), 2);
        assert_eq!(outs[0][0].data(), &f[16..64]);
        assert_eq!(outs[0][1].data(), &f[64 + 16..128]);
        assert_eq!(outs[0][1].timestamp_ns(), 8_000_000_000);
        assert_eq!(e.read_handler("encap").expect("encap"), "ATM");
        // ETHER: the frame from byte 10; bytes 8-9 hold the wire length.
        rest[0] = 0;
        rest[1] = 100;
        let f = cell(7, &rest);
        std::fs::write(dir.join("e.dag"), &f).expect("write");
        let mut e = open(&dir, "e.dag, ENCAP ETHER", &[true]);
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0][0].data(), &f[10..64]);
        assert_eq!(extra(&outs[0][0]), 100 - 54);
        assert_eq!(e.read_handler("encap").expect("encap"), "ETHER");
        // IP: from byte 8; SUNATM: from byte 12; PPP: after the header.
        for (encap, off) in [("IP", 8), ("SUNATM", 12), ("PPP", 16)] {
            let mut e = open(&dir, &format!("e.dag, ENCAP {encap}"), &[true]);
            let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
            assert_eq!(outs[0][0].data(), &f[off..64]);
            assert_eq!(e.read_handler("encap").expect("encap"), encap);
        }
    }

    #[test]
    fn odd_type_switches_to_legacy_cells() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdagdump-odd");
        let mut rest = [0x5au8; 56];
        rest[0] = 9; // not a type Click reads
        let mut f = cell(1, &rest);
        // An ERF Ethernet header after it is read as a legacy cell too.
        let mut r = erf(2 << 32, TYPE_ETH, 0, &[0u8; 48]);
        r.truncate(64);
        f.extend(&r);
        std::fs::write(dir.join("t.erf"), &f).expect("write");
        let mut e = open(&dir, "t.erf", &[true]);
        let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0].len(), 2);
        assert_eq!(outs[0][0].data(), &f[16..64]);
        assert_eq!(outs[0][1].data(), &f[80..128]);
        assert_eq!(outs[0][1].timestamp_ns(), 2_000_000_000);
        assert_eq!(e.read_handler("encap").expect("encap"), "ATM");
    }

    #[test]
    fn malformed_records_stop_the_read() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdagdump-bad");
        let frame = ip_frame();
        let good = erf(1 << 32, TYPE_HDLC_POS, 0, &frame);
        // Record length 10, shorter than the header.
        let mut short = erf(2 << 32, TYPE_HDLC_POS, 0, &frame);
        short[10..12].copy_from_slice(&10u16.to_be_bytes());
        let mut f = good.clone();
        f.extend(&short);
        f.extend(&good);
        std::fs::write(dir.join("s.erf"), &f).expect("write");
        let mut e = open(&dir, "s.erf, STOP true", &[true]);
        let (st, outs, ctrl) = run_task(e.as_mut(), &pool, 1, 0);
        assert_eq!(
            (st, outs[0].len(), ctrl.stop_requests),
            (TaskStatus::Done, 1, 1)
        );
        assert_eq!(e.read_handler("bad_records").expect("bad"), "1");
        assert_eq!(
            e.read_handler("filepos").expect("pos"),
            good.len().to_string()
        );
        // Cut in a record's body, then in its header.
        for cut in [good.len() + 20, good.len() + 5] {
            let mut f = good.clone();
            f.extend(&good);
            f.truncate(cut);
            std::fs::write(dir.join("c.erf"), &f).expect("write");
            let mut e = open(&dir, "c.erf", &[true]);
            let (st, outs, _) = run_task(e.as_mut(), &pool, 1, 0);
            assert_eq!((st, outs[0].len()), (TaskStatus::Done, 1));
            assert_eq!(e.read_handler("bad_records").expect("bad"), "1");
            assert_eq!(e.read_handler("filepos").expect("pos"), cut.to_string());
        }
    }

    #[test]
    fn force_ip_and_configuration_errors() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("fromdagdump-ip");
        let mut eth = vec![0, 0];
        eth.extend(ip_frame());
        let mut arp = vec![0, 0];
        arp.extend([0u8; 12]);
        arp.extend([0x08, 0x06]);
        arp.extend([0u8; 28]);
        let mut f = erf(1 << 32, TYPE_ETH, 0, &eth);
        f.extend(erf(2 << 32, TYPE_ETH, 0, &arp));
        std::fs::write(dir.join("t.erf"), &f).expect("write");
        let mut e = open(&dir, "t.erf, FORCE_IP true", &[true, true]);
        let (_, outs, _) = run_task(e.as_mut(), &pool, 2, 0);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(outs[0][0].network_header_offset(), Some(14));
        assert_eq!(outs[0][0].dst_ip_anno(), [10, 0, 0, 2]);
        assert_eq!(outs[1].len(), 1);
        assert_eq!(outs[1][0].data(), &arp[2..]);
        let c = |s: &str| {
            config_err(configure(
                FromDAGDump::SPEC.keywords,
                FromDAGDump::configure,
                s,
                &[],
                &[true],
                &dir,
            ))
        };
        assert_eq!(
            c("t.erf, ENCAP FDDI"),
            "ENCAP: bad encapsulation type `FDDI'; expected IP, ATM, SUNATM, ETHER, PPP, PPP_HDLC or HDLC"
        );
        assert_eq!(
            c("t.erf, FORCE_IP true, TIMING true"),
            "FORCE_IP and TIMING options are incompatible; give one of them"
        );
        assert_eq!(c("nope.erf"), "nope.erf: No such file or directory");
    }

    #[test]
    fn random_bytes_give_records_inside_the_file() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut data = vec![0u8; 4096];
        let mut total = 0;
        for round in 0..64 {
            for b in data.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            // Small types and lengths now and then, so records chain.
            for r in (0..data.len()).step_by(64) {
                data[r + 8] %= 6;
                data[r + 10] = 0;
            }
            let encap = [DLT_NONE, pcap::DLT_EN10MB, pcap::DLT_SUNATM, pcap::DLT_RAW][round % 4];
            let mut fmt = Dag::new("r", encap);
            let mut pos = 0;
            while let Step::Record(r) = fmt.record(&data[..data.len() - round], pos) {
                assert!(r.next > pos && r.next <= data.len() - round);
                assert!(r.start >= pos && r.start + r.caplen <= r.next);
                pos = r.next;
                total += 1;
            }
        }
        assert!(total > 64, "{total} records");
    }
}
