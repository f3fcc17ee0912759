//! `pronto bench middleboxes`: each example middlebox as a sandboxed
//! instance on the daemon's switch, against the same configuration in one
//! process, on the example's own trace with every frame at least `--size`
//! bytes on the wire (128: the ClickOS paper's "line rate from 128 B up").
//!
//! An example is a `FromDump -> ... -> ToDump` configuration; its
//! processing is kept as written and only its ends change:
//!
//! - sandboxed: the first `FromDump` becomes `FromDevice(eth0)` (others,
//!   which read the same trace again, go), every `ToDump` becomes an
//!   `EtherRewrite` to the benchmark's sink feeding one
//!   `Queue -> ToDevice(eth0)`, and the driver scripts go (they would print
//!   and stop). A generator served by the switching thread (a NIC) sends
//!   the trace in a loop as fast as the switch takes it; every unicast
//!   destination of the trace is a static entry to the instance's port. The
//!   figure is what the switch delivered to the instance per second: with
//!   drops at its port (`no_buffer`) the instance is what limits it,
//!   without them the figure is only a lower bound (the offer was lower).
//! - one process: the first `FromDump` reads the same frames repeated,
//!   every `ToDump` becomes the same `EtherRewrite` into a `Discard`. The
//!   figure is the steady rate: the difference in packets over the
//!   difference in time between a run of the whole file (3 × `--packets`)
//!   and one of its first third (configuration excluded), the median of
//!   `--runs`.
//!
//! The files the examples read (the IDS's rules, the router's routes)
//! are given to the sandboxed instance with it (its `files`), under the
//! paths the examples name; in one process they are written to a scratch
//! directory. The IDS logs no alerts in either form (`QUIET true`: a
//! line per alert is not what is measured); the CGNAT's allocation log
//! goes to `/dev/null` in one process and is left out in a sandbox: an
//! instance has files to read, not to write. `--print-config` prints both
//! forms of each example and stops.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pronto_lang::{FlatConfig, FlatConnection, FlatElement, SourceMap};
use pronto_switch::Peer;
use serde_json::json;

use super::daemon::{mac_str, start, Scratch};
use super::{median, plot, Common, Csv, PlotSpec};

/// An example middlebox: its name, configuration and trace.
struct Example {
    name: &'static str,
    config: &'static str,
    trace: &'static [u8],
}

/// The examples of the seed middleboxes (ratelimit is left out: it shapes
/// its traffic to its configured rate, by design).
const EXAMPLES: &[Example] = &[
    Example {
        name: "firewall",
        config: include_str!("../../../../examples/firewall.click"),
        trace: include_bytes!("../../../../examples/firewall.pcap"),
    },
    Example {
        name: "stateful-firewall",
        config: include_str!("../../../../examples/stateful-firewall.click"),
        trace: include_bytes!("../../../../examples/stateful-firewall.pcap"),
    },
    Example {
        name: "nat",
        config: include_str!("../../../../examples/nat.click"),
        trace: include_bytes!("../../../../examples/nat.pcap"),
    },
    Example {
        name: "cgnat",
        config: include_str!("../../../../examples/cgnat.click"),
        trace: include_bytes!("../../../../examples/cgnat.pcap"),
    },
    Example {
        name: "lb",
        config: include_str!("../../../../examples/lb.click"),
        trace: include_bytes!("../../../../examples/lb.pcap"),
    },
    Example {
        name: "router",
        config: include_str!("../../../../examples/router.click"),
        trace: include_bytes!("../../../../examples/router.pcap"),
    },
    Example {
        name: "ids",
        config: include_str!("../../../../examples/ids.click"),
        trace: include_bytes!("../../../../examples/ids.pcap"),
    },
];

const ROUTES: &str = include_str!("../../../../examples/router-routes.txt");
const IDS_RULES: &str = include_str!("../../../../examples/ids.rules");

/// The instance's interface MAC, and the sink's.
const MB_MAC: [u8; 6] = [2, 0, 0, 0, 0x0b, 1];
const SINK_MAC: [u8; 6] = [2, 0, 0, 0, 0x0b, 0xfe];

/// Where a converted configuration's packets come from and go.
enum Ends<'a> {
    /// A switch port, `eth0`.
    Port,
    /// The trace file at this path in (its first `end_after` seconds if
    /// given), read by a `FromDump` named `bench_src`, a `Discard` out.
    OneProcess(&'a Path, Option<f64>),
}

/// The files the examples read, by the paths they name.
const FILES: &[(&str, &str)] = &[
    ("examples/ids.rules", IDS_RULES),
    ("examples/router-routes.txt", ROUTES),
];

/// `text` with its ends replaced as [`Ends`] says (module docs); in one
/// process the files it reads are under `files` ([`FILES`] written
/// there). Errors name the example's problem.
fn convert(text: &str, ends: &Ends, files: Option<&Path>) -> Result<String, String> {
    let mut sm = SourceMap::new();
    let file = sm.add("<example>".to_string(), text.to_string());
    let mut defines = vec![
        ("OUT".to_string(), "/dev/null".to_string()),
        ("ALERTS".to_string(), "/dev/null".to_string()),
        ("LOG".to_string(), "@LOG@".to_string()),
    ];
    if let Ends::OneProcess(t, _) = ends {
        defines.push(("TRACE".to_string(), t.display().to_string()));
    }
    let opts = pronto_lang::Options {
        defines: &defines,
        is_primitive: &pronto_runtime::is_known_class,
    };
    let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts).map_err(|e| {
        e.iter()
            .map(|d| d.render(&sm))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let mut keep = Vec::with_capacity(flat.elements.len());
    let mut elements: Vec<FlatElement> = Vec::new();
    let mut outs = Vec::new();
    let mut source = false;
    for e in &flat.elements {
        let mut e = e.clone();
        match e.class.as_str() {
            "FromDump" if source => {
                keep.push(None);
                continue;
            }
            "FromDump" => {
                source = true;
                e.config = match ends {
                    Ends::Port => {
                        e.class = "FromDevice".into();
                        "eth0, BURST 32".into()
                    }
                    Ends::OneProcess(t, end) => {
                        e.name = "bench_src".into();
                        match end {
                            Some(s) => format!("{}, STOP true, END_AFTER {s:.6}s", t.display()),
                            None => format!("{}, STOP true", t.display()),
                        }
                    }
                };
            }
            "DriverManager" | "Script" => {
                keep.push(None);
                continue;
            }
            "ToDump" => {
                if e.config.contains("ENCAP IP") {
                    return Err(format!(
                        "{}: writes IP packets without an Ethernet header; the benchmark \
                         takes Ethernet outputs only",
                        e.name
                    ));
                }
                e.class = "EtherRewrite".into();
                e.config = format!("{}, {}", mac_str(&MB_MAC), mac_str(&SINK_MAC));
                outs.push(elements.len());
            }
            _ => {}
        }
        // The IDS logs no alerts; the CGNAT's allocation log goes to
        // /dev/null in one process and is left out in a sandbox: an
        // instance has no file to write it to.
        if e.class == "IDSMatcher" {
            e.config = e.config.replace("LOG @LOG@", "QUIET true");
        }
        match ends {
            Ends::Port => {
                for pat in [", LOG @LOG@", "LOG @LOG@, ", "LOG @LOG@"] {
                    e.config = e.config.replace(pat, "");
                }
            }
            Ends::OneProcess(..) => e.config = e.config.replace("@LOG@", "/dev/null"),
        }
        if let Some(dir) = files {
            for (path, _) in FILES {
                let here = dir.join(Path::new(path).file_name().unwrap_or_default());
                e.config = e.config.replace(path, &here.to_string_lossy());
            }
        }
        keep.push(Some(elements.len()));
        elements.push(e);
    }
    if !source || outs.is_empty() {
        return Err("not a FromDump -> ... -> ToDump configuration".into());
    }
    let mut connections: Vec<FlatConnection> = flat
        .connections
        .iter()
        .filter_map(|c| {
            let (from, to) = (keep[c.from]?, keep[c.to]?);
            Some(FlatConnection { from, to, ..*c })
        })
        .collect();
    let span = elements[outs[0]].span;
    let mut add = |name: &str, class: &str, config: &str| {
        elements.push(FlatElement {
            name: name.into(),
            class: class.into(),
            config: config.into(),
            span,
            config_span: span,
        });
        elements.len() - 1
    };
    let tail = match ends {
        Ends::Port => {
            let q = add("bench_queue", "Queue", "1024");
            let tx = add("bench_tx", "ToDevice", "eth0, BURST 32");
            (q, Some(tx))
        }
        Ends::OneProcess(..) => (add("bench_sink", "Discard", ""), None),
    };
    let link = |from: usize, to: usize| FlatConnection {
        from,
        from_port: 0,
        to,
        to_port: 0,
        span,
    };
    for &o in &outs {
        connections.push(link(o, tail.0));
    }
    if let Some(tx) = tail.1 {
        connections.push(link(tail.0, tx));
    }
    Ok(FlatConfig {
        elements,
        connections,
        requirements: flat.requirements,
    }
    .to_click())
}

/// The frames of a classic pcap file (either byte order, micro- or
/// nanosecond stamps), each zero-padded to at least `min` bytes (the
/// Ethernet padding a short frame gets; its IP length is unchanged).
fn frames(pcap: &[u8], min: usize) -> Result<Vec<Vec<u8>>, String> {
    let magic = pcap.get(..4).ok_or("a pcap file shorter than its header")?;
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => return Err("not a pcap file (bad magic)".into()),
    };
    let u32_at = |b: &[u8]| {
        let a = [b[0], b[1], b[2], b[3]];
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    let mut out = Vec::new();
    let mut off = 24;
    while off + 16 <= pcap.len() {
        let caplen = u32_at(&pcap[off + 8..off + 12]) as usize;
        let data = pcap
            .get(off + 16..off + 16 + caplen)
            .ok_or("a pcap record runs past the end of the file")?;
        let mut f = data.to_vec();
        if f.len() < min {
            f.resize(min, 0);
        }
        out.push(f);
        off += 16 + caplen;
    }
    if out.is_empty() {
        return Err("the trace has no frames".into());
    }
    Ok(out)
}

/// Writes `frames` repeated to `count` records as a pcap file.
fn write_trace(path: &Path, frames: &[Vec<u8>], count: usize) -> Result<(), String> {
    use std::io::Write;
    let f = std::fs::File::create(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    let mut w = std::io::BufWriter::new(f);
    let mut head = Vec::with_capacity(24);
    head.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    head.extend_from_slice(&2u16.to_le_bytes());
    head.extend_from_slice(&4u16.to_le_bytes());
    head.extend_from_slice(&[0; 8]);
    head.extend_from_slice(&65_535u32.to_le_bytes());
    head.extend_from_slice(&1u32.to_le_bytes());
    let err = |e: std::io::Error| format!("writing {}: {e}", path.display());
    w.write_all(&head).map_err(err)?;
    for i in 0..count {
        let fr = &frames[i % frames.len()];
        let (sec, usec) = (
            1_600_000_000 + (i / 1_000_000) as u32,
            (i % 1_000_000) as u32,
        );
        let len = fr.len() as u32;
        for v in [sec, usec, len, len] {
            w.write_all(&v.to_le_bytes()).map_err(err)?;
        }
        w.write_all(fr).map_err(err)?;
    }
    w.flush().map_err(err)
}

/// Runs `text` in this process until its source stops it; returns the
/// packets it read and the seconds the run took (the router built before
/// the clock starts).
fn one_process_run(text: &str, per_packet: bool) -> Result<(f64, f64), String> {
    let mut r = super::gen::build_with(text, per_packet)?;
    let t0 = Instant::now();
    r.run()?;
    let secs = t0.elapsed().as_secs_f64();
    let n: f64 = r
        .read_handler("bench_src.count", "")
        .map_err(|e| format!("reading bench_src.count: {e}"))?
        .trim()
        .parse()
        .map_err(|e| format!("bench_src.count: {e}"))?;
    Ok((n, secs))
}

/// Packets per second in one process, steady state: the trace read whole
/// (`long`) and its first third (`short`), the rate the difference between
/// them (what a run costs once, such as tables and the pool growing as
/// they are first touched, falls out). `per_packet`: Click's order kept
/// one packet at a time (`pronto run --order per-packet`).
fn one_process_rate(long: &str, short: &str, per_packet: bool) -> Result<f64, String> {
    let (n1, t1) = one_process_run(short, per_packet)?;
    let (n3, t3) = one_process_run(long, per_packet)?;
    if n3 <= n1 || t3 <= t1 {
        return Err(format!(
            "the whole trace ({n3} packets in {t3:.3} s) was not longer than its first third \
             ({n1} packets in {t1:.3} s)"
        ));
    }
    Ok((n3 - n1) / (t3 - t1))
}

/// The generator (the trace in a loop, as fast as its port takes it) and
/// the sink, served by the switching thread.
struct Replay {
    gen: Peer,
    sink: Peer,
    frames: Arc<Vec<Vec<u8>>>,
    next: usize,
    out: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    done: std::sync::mpsc::SyncSender<()>,
}

impl pronto_switch::Local for Replay {
    fn poll(&mut self) -> Option<usize> {
        if self.stop.load(Ordering::Relaxed) {
            let _ = self.done.try_send(());
            return None;
        }
        let n = self.sink.recv_discard();
        if n > 0 {
            self.out.fetch_add(n as u64, Ordering::Relaxed);
        }
        let room = self.gen.free_slots().min(32);
        let (frames, start) = (&self.frames, self.next);
        let k = self
            .gen
            .send_iter((0..room).map(|i| frames[(start + i) % frames.len()].as_slice()));
        self.next = (start + k) % frames.len();
        Some(n + k)
    }
}

/// What one sandboxed run measured, per second.
struct Sandboxed {
    /// Frames the switch delivered to the instance.
    taken: f64,
    /// Frames the instance sent on to the sink.
    out: f64,
    /// Frames for the instance dropped at its port (no slot lent).
    no_buffer: f64,
}

fn sandboxed(
    s: &Scratch,
    ex: &Example,
    config: &str,
    frames: &Arc<Vec<Vec<u8>>>,
    dur: Duration,
) -> Result<Sandboxed, String> {
    let m = s.d().manager().clone();
    let name = format!("mb-{}", ex.name);
    let files: serde_json::Map<String, serde_json::Value> = FILES
        .iter()
        .filter(|(path, _)| config.contains(path))
        .map(|(path, text)| (path.to_string(), json!(text)))
        .collect();
    let body = json!({
        "name": name,
        "config": config,
        "interfaces": [{"name": "eth0", "mac": mac_str(&MB_MAC)}],
        "files": files,
    })
    .to_string();
    s.call(
        "POST",
        "/v1/instances",
        Some(("application/json", body.as_bytes())),
    )
    .map_err(|e| format!("{}: {e}", ex.name))?;
    let result = (|| {
        let port = m
            .port_named(&format!("default/{name}/eth0"))
            .ok_or_else(|| format!("{}: the instance has no port eth0", ex.name))?;
        let sw = m.switch();
        let (gen_id, gen_shm) = m.attach_port("bench/gen").map_err(|e| e.to_string())?;
        let (sink_id, sink_shm) = m.attach_port("bench/sink").map_err(|e| e.to_string())?;
        // The sink counts only what the instance sent; the trace's
        // broadcasts go to the instance alone.
        sw.set_broadcast(gen_id, false);
        sw.set_broadcast(sink_id, false);
        let _ = sw.add_static(SINK_MAC, sink_id);
        let mut dsts: Vec<[u8; 6]> = frames
            .iter()
            .filter_map(|f| <[u8; 6]>::try_from(&f[..6]).ok())
            .filter(|d| d[0] & 1 == 0 && *d != MB_MAC)
            .collect();
        dsts.sort_unstable();
        dsts.dedup();
        for d in &dsts {
            let _ = sw.add_static(*d, port);
        }
        let gen = Peer::new(gen_shm, 0).map_err(|e| e.to_string())?;
        let sink = Peer::new(sink_shm, 1024).map_err(|e| e.to_string())?;
        let out = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (done_tx, done) = std::sync::mpsc::sync_channel(1);
        let dev = Replay {
            gen,
            sink,
            frames: frames.clone(),
            next: 0,
            out: out.clone(),
            stop: stop.clone(),
            done: done_tx,
        };
        sw.serve_local(gen_id, Box::new(dev))
            .map_err(|e| format!("the generator on the switching thread: {e}"))?;
        std::thread::sleep(dur / 4);
        let read = || {
            let c = sw.counters(port).unwrap_or_default();
            (c.tx_packets, c.drop_no_buffer, out.load(Ordering::Relaxed))
        };
        let (a, t0) = (read(), Instant::now());
        std::thread::sleep(dur);
        let (b, t1) = (read(), Instant::now());
        stop.store(true, Ordering::Relaxed);
        let _ = done.recv_timeout(Duration::from_secs(5));
        for d in &dsts {
            sw.remove_static(*d, port);
        }
        sw.remove_static(SINK_MAC, sink_id);
        m.detach_port(gen_id);
        m.detach_port(sink_id);
        let secs = (t1 - t0).as_secs_f64();
        Ok(Sandboxed {
            taken: (b.0 - a.0) as f64 / secs,
            no_buffer: (b.1 - a.1) as f64 / secs,
            out: (b.2 - a.2) as f64 / secs,
        })
    })();
    let _ = m.remove("default", &name);
    result
}

/// The examples `--only` names (a comma-separated list), in the table's
/// order; all of them without it.
fn pick(only: Option<&str>) -> Result<Vec<&'static Example>, String> {
    let Some(only) = only else {
        return Ok(EXAMPLES.iter().collect());
    };
    let names: Vec<&str> = only.split(',').map(str::trim).collect();
    if let Some(bad) = names
        .iter()
        .find(|n| !EXAMPLES.iter().any(|ex| ex.name == **n))
    {
        let all: Vec<&str> = EXAMPLES.iter().map(|ex| ex.name).collect();
        return Err(format!(
            "--only: no example middlebox `{bad}`; give some of {}, separated by commas",
            all.join(", ")
        ));
    }
    Ok(EXAMPLES
        .iter()
        .filter(|ex| names.contains(&ex.name))
        .collect())
}

/// Runs `pronto bench middleboxes`.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::for_sandboxes(args)?;
    let dur = Duration::from_secs_f64(c.opt("--duration")?.unwrap_or(2.0));
    let runs: usize = c.opt("--runs")?.unwrap_or(3).max(1);
    let size: usize = c.opt("--size")?.unwrap_or(128);
    if !(64..=1518).contains(&size) {
        return Err(format!(
            "--size {size}: give a frame size on the wire from 64 to 1518 bytes"
        ));
    }
    let packets: usize = c.opt("--packets")?.unwrap_or(1_000_000).max(1000);
    let examples = pick(c.opt::<String>("--only")?.as_deref())?;
    let line_rate = 10e9 / ((size as f64 + 20.0) * 8.0);
    let work = std::env::temp_dir().join(format!("pronto-bench-mb-{}", std::process::id()));
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    let _cleanup = RemoveDir(work.clone());
    for (path, text) in FILES {
        let here = work.join(Path::new(path).file_name().unwrap_or_default());
        std::fs::write(&here, text).map_err(|e| format!("cannot write {}: {e}", here.display()))?;
    }
    if c.flag("--print-config") {
        let trace = work.join("TRACE.pcap");
        for ex in EXAMPLES {
            crate::outln!("// {}, in one process\n", ex.name);
            let one = convert(ex.config, &Ends::OneProcess(&trace, None), Some(&work));
            crate::outln!("{}", one.map_err(|e| format!("{}: {e}", ex.name))?);
            crate::outln!("// {}, sandboxed\n", ex.name);
            match convert(ex.config, &Ends::Port, None) {
                Ok(t) => crate::outln!("{t}"),
                Err(e) => crate::outln!("// not run sandboxed: {e}\n"),
            }
        }
        return Ok(());
    }
    let s = start("middleboxes", 2048)?;
    crate::outln!(
        "each example middlebox on its own trace, every frame at least {size} B on the wire \
         (10 Gb/s line rate there: {:.2} Mpps)",
        line_rate / 1e6
    );
    crate::outln!(
        "sandboxed: one instance on the switch, the trace sent by a NIC the switch serves"
    );
    crate::outln!("one process: the same configuration reading the trace from a file\n");
    crate::outln!(
        "| middlebox | mean frame | sandboxed Mpps | Gb/s | dropped at its port, Mpps | \
         one process Mpps | of one process | line rate | one process, order per packet, Mpps |"
    );
    crate::outln!("|---|---:|---:|---:|---:|---:|---:|---|---:|");
    let mut csv = Csv::new(&[
        "n",
        "middlebox",
        "mean_frame",
        "sandboxed_mpps",
        "forwarded_mpps",
        "no_buffer_mpps",
        "one_process_mpps",
        "of_one_process",
        "line_rate_mpps",
        "one_process_per_packet_mpps",
    ]);
    let mut notes = Vec::new();
    for (i, ex) in examples.into_iter().enumerate() {
        let frames = Arc::new(frames(ex.trace, size - 4).map_err(|e| format!("{}: {e}", ex.name))?);
        let mean = frames.iter().map(|f| f.len() as f64 + 4.0).sum::<f64>() / frames.len() as f64;
        let trace = work.join(format!("{}.pcap", ex.name));
        write_trace(&trace, &frames, 3 * packets)?;
        let conv = |end| {
            convert(ex.config, &Ends::OneProcess(&trace, end), Some(&work))
                .map_err(|e| format!("{}: {e}", ex.name))
        };
        // Stamps are 1 µs apart: the first third ends after `packets` µs.
        let (long, short) = (conv(None)?, conv(Some(packets as f64 / 1e6))?);
        let (mut rates, mut per_packet) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let rate =
                |pp| one_process_rate(&long, &short, pp).map_err(|e| format!("{}: {e}", ex.name));
            rates.push(rate(false)?);
            per_packet.push(rate(true)?);
        }
        let _ = std::fs::remove_file(&trace);
        let base = median(&mut rates);
        let base_pp = median(&mut per_packet);
        let sb = match convert(ex.config, &Ends::Port, None) {
            Ok(config) => Some(sandboxed(&s, ex, &config, &frames, dur)?),
            Err(why) => {
                notes.push(format!("{}: not run sandboxed: {why}", ex.name));
                None
            }
        };
        let gbps = |pps: f64| pps * (mean + 20.0) * 8.0 / 1e9;
        let cell = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".into(), f);
        let taken = sb.as_ref().map(|r| r.taken);
        crate::outln!(
            "| {} | {mean:.0} B | {} | {} | {} | {:.2} | {} | {} | {:.2} |",
            ex.name,
            cell(taken, &|v| format!("{:.2}", v / 1e6)),
            cell(taken, &|v| format!("{:.1}", gbps(v))),
            cell(sb.as_ref().map(|r| r.no_buffer), &|v| format!(
                "{:.2}",
                v / 1e6
            )),
            base / 1e6,
            cell(taken, &|v| format!("{:.2}", v / base)),
            match &sb {
                None => "-".to_string(),
                Some(r) if r.no_buffer == 0.0 => {
                    "offer below the instance's rate (a lower bound)".to_string()
                }
                Some(r) if gbps(r.taken) >= 10.0 => "met".to_string(),
                Some(_) => "not met".to_string(),
            },
            base_pp / 1e6
        );
        let f = |v: Option<f64>| v.map_or(String::new(), |v| format!("{:.4}", v / 1e6));
        csv.row(&[
            (i + 1).to_string(),
            ex.name.to_string(),
            format!("{mean:.1}"),
            f(taken),
            f(sb.as_ref().map(|r| r.out)),
            f(sb.as_ref().map(|r| r.no_buffer)),
            format!("{:.4}", base / 1e6),
            taken.map_or(String::new(), |t| format!("{:.3}", t / base)),
            format!("{:.3}", line_rate / 1e6),
            format!("{:.4}", base_pp / 1e6),
        ]);
    }
    for n in &notes {
        crate::outln!("{n}");
    }
    let names: Vec<String> = EXAMPLES
        .iter()
        .enumerate()
        .map(|(i, e)| format!("{} {}", i + 1, e.name))
        .collect();
    let xlabel = format!("middlebox ({})", names.join(", "));
    let path = c.out.join("middleboxes.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("middleboxes.png"),
        &PlotSpec {
            title: "pronto: example middleboxes, sandboxed and in one process",
            x: ("n", &xlabel),
            ylabel: "Mpps",
            ys: &[
                "sandboxed_mpps:sandboxed, through the switch",
                "one_process_mpps:in one process",
                "one_process_per_packet_mpps:in one process, order kept per packet",
                "line_rate_mpps:10 Gb/s line rate",
            ],
        },
    )
}

/// Removes a directory when dropped.
struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_picks_examples_in_table_order() {
        let names = |o| pick(o).map(|v| v.iter().map(|ex| ex.name).collect::<Vec<_>>());
        assert_eq!(names(None).map(|v| v.len()), Ok(EXAMPLES.len()));
        assert_eq!(names(Some("nat, cgnat")), Ok(vec!["nat", "cgnat"]));
        assert_eq!(names(Some("cgnat,firewall")), Ok(vec!["firewall", "cgnat"]));
        assert_eq!(
            names(Some("cgnat,natt")),
            Err(
                "--only: no example middlebox `natt`; give some of firewall, \
                 stateful-firewall, nat, cgnat, lb, router, ids, separated by commas"
                    .to_string()
            )
        );
    }

    #[test]
    fn every_example_converts_and_the_sandboxed_form_reads_and_writes_eth0() {
        for ex in EXAMPLES {
            let t = Path::new("/tmp/x.pcap");
            let one = convert(
                ex.config,
                &Ends::OneProcess(t, None),
                Some(Path::new("/tmp/r")),
            )
            .unwrap_or_else(|e| panic!("{}: {e}", ex.name));
            assert!(
                one.contains("bench_src :: FromDump(/tmp/x.pcap, STOP true)"),
                "{}: {one}",
                ex.name
            );
            let short = convert(ex.config, &Ends::OneProcess(t, Some(0.5)), None)
                .unwrap_or_else(|e| panic!("{}: {e}", ex.name));
            assert!(short.contains("STOP true, END_AFTER 0.500000s)"), "{short}");
            assert!(
                !one.contains(":: ToDump") && !one.contains(":: DriverManager"),
                "{one}"
            );
            assert_eq!(one.matches(":: FromDump").count(), 1, "{}: {one}", ex.name);
            let p = convert(ex.config, &Ends::Port, None)
                .unwrap_or_else(|e| panic!("{}: {e}", ex.name));
            assert!(p.contains("FromDevice(eth0, BURST 32)"), "{p}");
            assert!(p.contains("bench_tx :: ToDevice(eth0, BURST 32)"), "{p}");
            assert!(
                p.contains("EtherRewrite(02:00:00:00:0b:01, 02:00:00:00:0b:fe)"),
                "{p}"
            );
            assert!(
                !p.contains(":: FromDump") && !p.contains(":: ToDump"),
                "{p}"
            );
            assert!(!p.contains("LOG"), "{p}");
        }
    }

    #[test]
    fn the_files_read_are_the_given_ones_sandboxed_and_the_written_ones_in_one_process() {
        for (name, path, here) in [
            (
                "router",
                "ROUTES examples/router-routes.txt",
                "ROUTES /tmp/r/router-routes.txt",
            ),
            (
                "ids",
                "IDSMatcher(examples/ids.rules",
                "IDSMatcher(/tmp/r/ids.rules",
            ),
        ] {
            let ex = EXAMPLES.iter().find(|e| e.name == name).expect(name);
            let p = convert(ex.config, &Ends::Port, None).expect(name);
            assert!(p.contains(path), "{p}");
            let t = Path::new("/tmp/x.pcap");
            let one = convert(
                ex.config,
                &Ends::OneProcess(t, None),
                Some(Path::new("/tmp/r")),
            )
            .expect(name);
            assert!(one.contains(here), "{one}");
        }
    }

    #[test]
    fn short_frames_are_padded_and_long_ones_kept() {
        let mut pcap = Vec::new();
        pcap.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        pcap.extend_from_slice(&[
            2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0,
        ]);
        for len in [60u32, 200] {
            for v in [0, 0, len, len] {
                pcap.extend_from_slice(&u32::to_le_bytes(v));
            }
            pcap.extend(std::iter::repeat_n(7u8, len as usize));
        }
        let f = frames(&pcap, 124).expect("frames");
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].len(), 124);
        assert_eq!(&f[0][..60], &[7u8; 60][..]);
        assert_eq!(&f[0][60..], &[0u8; 64][..]);
        assert_eq!(f[1], vec![7u8; 200]);
        assert_eq!(
            frames(&pcap[..pcap.len() - 1], 124).expect_err("cut short"),
            "a pcap record runs past the end of the file"
        );
        assert_eq!(
            frames(b"nope", 64).expect_err("bad magic"),
            "not a pcap file (bad magic)"
        );
    }
}
