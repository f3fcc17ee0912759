//! `ToDump`: writes packets to a tcpdump (pcap) file.

use std::fs::File;
use std::io::{BufWriter, Write};

use pronto_packet::{Batch, Packet, EXTRA_LENGTH_ANNO_OFFSET};

use super::pcap;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    TaskStatus,
};

enum Sink {
    File(BufWriter<File>),
    Stdout(BufWriter<std::io::Stdout>),
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::File(w) => w,
            Sink::Stdout(w) => w,
        }
    }
}

/// Writes packets to a tcpdump file.
pub struct ToDump {
    filename: String,
    sink: Option<Sink>,
    snaplen: u32,
    nano: bool,
    extra_length: bool,
    unbuffered: bool,
    active: bool,
    count: u64,
    has_output: bool,
    pull_task: bool,
}

impl ToDump {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ToDump")
        .ports("1/0-1")
        .processing("a/a")
        .keywords(&["SNAPLEN", "ENCAP", "USE_ENCAP_FROM", "EXTRA_LENGTH", "UNBUFFERED", "NANO"])
        .profile(ActionProfile::NONE)
        .doc(
            "ToDump(FILENAME [, SNAPLEN, ENCAP, KEYWORDS])\n\n\
             Writes incoming packets to FILENAME in `tcpdump -w' format (`-' means\n\
             standard output). At most SNAPLEN bytes of each packet are written\n\
             (default 2000; 0 means all). ENCAP names the link type stored in the\n\
             file header: ETHER (default), IP, FDDI, ATM, 802_11, SLL, AIRONET, HDLC,\n\
             PPP_HDLC, PPP, SUNATM, PRISM, NULL or #N. Each record carries the\n\
             packet's timestamp annotation (the current time if unset) and its\n\
             length plus its extra length annotation.\n\n\
             Ports: 1 input (agnostic); 0 or 1 outputs. With an output, every packet\n\
             goes on to it; with none, a pull input is pulled by a task.\n\
             Keywords:\n  \
             SNAPLEN        bytes of each packet to keep (default 2000; 0: all)\n  \
             ENCAP          link type (default ETHER)\n  \
             USE_ENCAP_FROM element names; accepted, the file says ETHER\n  \
             EXTRA_LENGTH   boolean; add the extra length annotation to record lengths\n                 \
             (default true)\n  \
             UNBUFFERED     boolean; write each packet through at once (default false)\n  \
             NANO           boolean; nanosecond timestamps (default true)\n\
             Handlers:\n  count (read), reset_counts (write), filename (read)",
        );

    /// Configures a `ToDump`: creates the file and writes its header.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let filename: String = a.read_mp("FILENAME")?;
        let snaplen: u32 = a.read_p("SNAPLEN")?.unwrap_or(2000);
        let encap: Option<String> = a.read_p("ENCAP")?;
        let use_encap_from: Option<String> = a.read("USE_ENCAP_FROM")?;
        let extra_length = a.read_or("EXTRA_LENGTH", true)?;
        let unbuffered = a.read_or("UNBUFFERED", false)?;
        let nano = a.read_or("NANO", true)?;
        a.finish()?;

        let snaplen = if snaplen == 0 { u32::MAX } else { snaplen };
        let linktype = match (&encap, &use_encap_from) {
            (Some(_), Some(_)) => {
                return Err(cfg_err(
                    "specify at most one of 'ENCAP' and 'USE_ENCAP_FROM'",
                ));
            }
            (None, Some(names)) => {
                if names.split_whitespace().next().is_none() {
                    return Err(cfg_err("element names missing after 'USE_ENCAP_FROM'"));
                }
                eprintln!(
                    "{}: USE_ENCAP_FROM is not checked; writing ETHER encapsulation",
                    ctx.name
                );
                pcap::DLT_EN10MB
            }
            (Some(e), None) => {
                pcap::parse_dlt(e).ok_or_else(|| cfg_err("bad encapsulation type"))?
            }
            (None, None) => pcap::DLT_EN10MB,
        };

        if crate::world::check_only() {
            return Ok(crate::world::stand_in([crate::world::output_file(
                ctx, &filename,
            )]));
        }
        let capacity = if unbuffered { 0 } else { 64 * 1024 };
        let (mut sink, filename) = if filename == "-" {
            (
                Sink::Stdout(BufWriter::with_capacity(capacity, std::io::stdout())),
                "<stdout>".to_string(),
            )
        } else {
            let f = File::create(ctx.path(&filename))
                .map_err(|e| cfg_err(format!("{filename}: {}", pcap::os_error_text(&e))))?;
            (Sink::File(BufWriter::with_capacity(capacity, f)), filename)
        };

        let mut h = [0u8; pcap::FILE_HEADER_LEN];
        let magic = if nano { pcap::MAGIC_NANO } else { pcap::MAGIC };
        h[0..4].copy_from_slice(&magic.to_ne_bytes());
        h[4..6].copy_from_slice(&pcap::VERSION_MAJOR.to_ne_bytes());
        h[6..8].copy_from_slice(&pcap::VERSION_MINOR.to_ne_bytes());
        // thiszone and sigfigs stay 0.
        h[16..20].copy_from_slice(&snaplen.to_ne_bytes());
        h[20..24].copy_from_slice(&(linktype as u32).to_ne_bytes());
        let w = sink.writer();
        w.write_all(&h)
            .and_then(|_| if unbuffered { w.flush() } else { Ok(()) })
            .map_err(|_| cfg_err(format!("{filename}: unable to write file header")))?;

        let has_output = ctx.noutputs > 0;
        Ok(Box::new(ToDump {
            filename,
            sink: Some(sink),
            snaplen,
            nano,
            extra_length,
            unbuffered,
            active: true,
            count: 0,
            has_output,
            pull_task: !ctx.input_push.first().copied().unwrap_or(true) && !has_output,
        }))
    }

    fn write_packet(&mut self, p: &Packet, now: i64) {
        let Some(sink) = self.sink.as_mut() else {
            return;
        };
        let ts = match p.timestamp_ns() {
            0 => now,
            t => t,
        };
        let (sec, ns) = pcap::split_ns(ts);
        let sub = if self.nano { ns } else { ns / 1000 };
        let data = p.data();
        let extra = if self.extra_length {
            let a = p.anno_bytes();
            let o = EXTRA_LENGTH_ANNO_OFFSET;
            u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
        } else {
            0
        };
        let len = (data.len() as u32).wrapping_add(extra);
        let caplen = (data.len() as u32).min(self.snaplen);
        let mut h = [0u8; pcap::RECORD_HEADER_LEN];
        h[0..4].copy_from_slice(&(sec as u32).to_ne_bytes());
        h[4..8].copy_from_slice(&(sub as u32).to_ne_bytes());
        h[8..12].copy_from_slice(&caplen.to_ne_bytes());
        h[12..16].copy_from_slice(&len.to_ne_bytes());
        let w = sink.writer();
        let r = w
            .write_all(&h)
            .and_then(|_| w.write_all(&data[..caplen as usize]))
            .and_then(|_| if self.unbuffered { w.flush() } else { Ok(()) });
        match r {
            Ok(()) => self.count += 1,
            Err(e) => {
                self.active = false;
                eprintln!("ToDump({}): {}", self.filename, pcap::os_error_text(&e));
            }
        }
    }

    fn write_batch(&mut self, batch: &Batch, now: i64) {
        if !self.active {
            return;
        }
        for p in batch.iter() {
            self.write_packet(p, now);
            if !self.active {
                break;
            }
        }
    }

    fn flush(&mut self) {
        if let Some(s) = self.sink.as_mut() {
            if let Err(e) = s.writer().flush() {
                eprintln!("ToDump({}): {}", self.filename, pcap::os_error_text(&e));
            }
        }
    }
}

impl Element for ToDump {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.write_batch(batch, out.now);
        if self.has_output {
            out.pass(0);
        } else {
            batch.clear();
        }
    }

    fn has_task(&self) -> bool {
        self.pull_task
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        self.active.then_some((0, 32))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if !self.active {
            batch.clear();
            return TaskStatus::Done;
        }
        if batch.is_empty() {
            return TaskStatus::Idle;
        }
        self.write_batch(batch, out.now);
        batch.clear();
        TaskStatus::Busy
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("filename"),
            HandlerInfo::read("count"),
            HandlerInfo::write("reset_counts"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "filename" => Ok(self.filename.clone()),
            "count" => Ok(self.count.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset_counts" => {
                self.count = 0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.flush();
        self.sink = None;
    }
}

impl Drop for ToDump {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::fromdump::FromDump;
    use crate::app::testing::{config_err, configure, push_batch, run_task, scratch};
    use pronto_packet::Pool;

    fn todump(dir: &std::path::Path, conf: &str, nout: usize) -> Box<dyn Element> {
        configure(
            ToDump::SPEC.keywords,
            ToDump::configure,
            conf,
            &[true],
            &vec![true; nout],
            dir,
        )
        .expect("configures")
    }

    #[test]
    fn header_is_clicks() {
        let dir = scratch("todump-header");
        let mut e = todump(&dir, "out.pcap", 0);
        e.cleanup();
        let f = std::fs::read(dir.join("out.pcap")).expect("read");
        // Same bytes as Click's (little-endian host): nanosecond magic,
        // version 2.4, zone 0, sigfigs 0, snaplen 2000, Ethernet.
        assert_eq!(
            f,
            [
                0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xd0, 0x07, 0, 0, 1, 0,
                0, 0
            ]
        );
        let expected = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/conformance/10_ether_encap_rewrite/expected_encap.pcap"
        );
        let x = std::fs::read(expected).expect("conformance case 10's output");
        assert_eq!(&f[..], &x[..24]);
        let mut e = todump(&dir, "ip.pcap, 0, IP, NANO false", 0);
        e.cleanup();
        let f = std::fs::read(dir.join("ip.pcap")).expect("read");
        assert_eq!(&f[0..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
        assert_eq!(&f[16..24], &[0xff, 0xff, 0xff, 0xff, 101, 0, 0, 0]);
    }

    #[test]
    fn records_and_snaplen() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("todump-records");
        let mut e = todump(&dir, "out.pcap, SNAPLEN 4, NANO false", 1);
        let mut b = Batch::new();
        let mut p = pool.alloc_from(&[1, 2, 3, 4, 5, 6]).expect("pkt");
        p.set_timestamp_ns(1_600_000_000_123_456_789);
        p.anno_bytes_mut()[28..32].copy_from_slice(&10u32.to_ne_bytes());
        let _ = b.push(p);
        let _ = b.push(pool.alloc_from(&[9]).expect("pkt")); // no timestamp: now
        let outs = push_batch(e.as_mut(), &pool, &mut b, 1, 7_000_000_500);
        assert_eq!(outs[0].len(), 2);
        assert_eq!(e.read_handler("count").expect("count"), "2");
        e.cleanup();
        let f = std::fs::read(dir.join("out.pcap")).expect("read");
        let le = |o: usize| u32::from_le_bytes([f[o], f[o + 1], f[o + 2], f[o + 3]]);
        assert_eq!(
            (le(24), le(28), le(32), le(36)),
            (1_600_000_000, 123_456, 4, 16)
        );
        assert_eq!(&f[40..44], &[1, 2, 3, 4]);
        assert_eq!((le(44), le(48), le(52), le(56)), (7, 0, 1, 1));
        assert_eq!(f[60], 9);
        assert_eq!(f.len(), 61);
    }

    #[test]
    fn round_trip_through_fromdump() {
        let pool = Pool::new(64).expect("pool");
        let dir = scratch("todump-roundtrip");
        let mut w = todump(&dir, "rt.pcap", 0);
        let frames: Vec<Vec<u8>> = (0..20u8)
            .map(|i| (0..(14 + i as usize * 7)).map(|j| j as u8 ^ i).collect())
            .collect();
        let mut b = Batch::new();
        for (i, f) in frames.iter().enumerate() {
            let mut p = pool.alloc_from(f).expect("pkt");
            p.set_timestamp_ns(1_000_000_000 * (i as i64 + 1) + 17);
            let _ = b.push(p);
        }
        let outs = push_batch(w.as_mut(), &pool, &mut b, 0, 0);
        assert!(outs.is_empty());
        drop(w); // dropping flushes
        let mut r = configure(
            FromDump::SPEC.keywords,
            FromDump::configure,
            "rt.pcap",
            &[],
            &[true],
            &dir,
        )
        .expect("ok");
        let (_, outs, _) = run_task(r.as_mut(), &pool, 1, 0);
        assert_eq!(outs[0].len(), 20);
        for (i, (p, f)) in outs[0].iter().zip(&frames).enumerate() {
            assert_eq!(p.data(), &f[..]);
            assert_eq!(p.timestamp_ns(), 1_000_000_000 * (i as i64 + 1) + 17);
        }
    }

    #[test]
    fn pull_input_without_output_has_a_task() {
        let pool = Pool::new(16).expect("pool");
        let dir = scratch("todump-pull");
        let mut e = configure(
            ToDump::SPEC.keywords,
            ToDump::configure,
            "p.pcap",
            &[false],
            &[],
            &dir,
        )
        .expect("configures");
        assert!(e.has_task());
        assert_eq!(e.task_pull(0), Some((0, 32)));
        let (st, _, _) = run_task(e.as_mut(), &pool, 0, 0);
        assert_eq!(st, TaskStatus::Idle);
        let pushed = todump(&dir, "q.pcap", 0);
        assert!(!pushed.has_task());
    }

    #[test]
    fn config_errors() {
        let dir = scratch("todump-errors");
        let c = |s: &str| {
            config_err(configure(
                ToDump::SPEC.keywords,
                ToDump::configure,
                s,
                &[true],
                &[],
                &dir,
            ))
        };
        assert_eq!(c("x.pcap, ENCAP BOGUS"), "bad encapsulation type");
        assert_eq!(
            c("x.pcap, ENCAP IP, USE_ENCAP_FROM a"),
            "specify at most one of 'ENCAP' and 'USE_ENCAP_FROM'"
        );
        assert_eq!(c("nodir/x.pcap"), "nodir/x.pcap: No such file or directory");
        assert_eq!(c(""), "missing mandatory FILENAME argument");
    }
}
