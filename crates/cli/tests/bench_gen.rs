//! `PacketGen` and `PacketSink` through `pronto run`, and `pronto bench gen`
//! / `pronto bench sink` across a veth pair between two network namespaces.
//!
//! The veth test needs root and `ip`; without them it says so loudly and
//! passes. Its namespaces and interfaces are named after this process and
//! removed when the test ends, whatever happens.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::netns::{missing_prerequisite, must, sh};

fn pronto() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pronto"))
}

fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).expect("utf-8 output")
}

#[test]
fn gen_to_sink_counts_every_packet_in_order() {
    let config = "g :: PacketGen(LIMIT 1000, STOP true, FLOWS 4, LENGTH 100) -> s :: PacketSink;\n\
                  DriverManager(wait, print \"count=$(s.count) bytes=$(s.byte_count) unstamped=$(s.unstamped) \
                  lost=$(s.lost) reordered=$(s.reordered) duplicates=$(s.duplicates)\", \
                  print \"latency $(s.latency)\", print \"sent=$(g.count) flows=$(g.flows)\")";
    let out = ok(pronto()
        .args(["run", "-e", config, "-h", "s.count", "-h", "s.latency_p999"])
        .output()
        .expect("pronto runs"));
    assert_eq!(
        out,
        "count=1000 bytes=100000 unstamped=0 lost=0 reordered=0 duplicates=0\n\
         latency p50 0.0 p99 0.0 p99.9 0.0 max 0.0\n\
         sent=1000 flows=4\n\
         s.count:\n1000\n\n\
         s.latency_p999:\n0.0\n\n"
    );
    // Default 60-byte frames have no room for the stamp.
    let out = ok(pronto()
        .args([
            "run",
            "-e",
            "PacketGen(LIMIT 1000, STOP true, FLOWS 4) -> s :: PacketSink",
            "-h",
            "s.unstamped",
            "-h",
            "s.byte_count",
        ])
        .output()
        .expect("pronto runs"));
    assert_eq!(out, "s.unstamped:\n1000\n\ns.byte_count:\n60000\n\n");
}

#[test]
fn bench_gen_and_sink_reject_bad_options() {
    let o = pronto()
        .args(["bench", "gen", "lo", "--length", "59", "--count", "1"])
        .output()
        .expect("pronto runs");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("LENGTH: 59 is out of range: give 60 to 1514"),
        "{err}"
    );
    let o = pronto()
        .args(["bench", "sink", "--duration", "1"])
        .output()
        .expect("pronto runs");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("pronto bench sink: give the interface"));
}

/// Two namespaces joined by a veth pair; removed on drop (deleting a
/// namespace deletes the veth end in it, and with it its peer).
struct Pair {
    ns: [String; 2],
    veth: [String; 2],
}

impl Pair {
    fn new() -> Pair {
        let pid = std::process::id();
        let p = Pair {
            ns: [format!("pgtx{pid}"), format!("pgrx{pid}")],
            veth: [format!("pgv{pid}a"), format!("pgv{pid}b")],
        };
        for ns in &p.ns {
            must(&["ip", "netns", "add", ns]);
        }
        must(&[
            "ip", "link", "add", &p.veth[0], "type", "veth", "peer", "name", &p.veth[1],
        ]);
        for (ns, v) in p.ns.iter().zip(&p.veth) {
            must(&["ip", "link", "set", v, "netns", ns]);
            // No IPv6 chatter (router solicitations) on the wire.
            let _ = sh(&[
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
            ]);
            must(&["ip", "-n", ns, "link", "set", v, "up"]);
        }
        p
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = sh(&["ip", "netns", "del", ns]);
        }
        // In case the pair never made it into the namespaces.
        let _ = sh(&["ip", "link", "del", &self.veth[0]]);
    }
}

/// Kills the child on drop (a failed assertion must not leave it running).
struct Reaper(std::process::Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Removes a file on drop.
struct RmFile(std::path::PathBuf);

impl Drop for RmFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// The value of `key=` in `line`.
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key}= in `{line}`"))
}

#[test]
fn bench_gen_to_bench_sink_over_veth() {
    if let Some(why) = missing_prerequisite("g", &[]) {
        eprintln!(
            "SKIPPED bench_gen_to_bench_sink_over_veth: needs root and network namespaces ({why})"
        );
        return;
    }
    // 5000 packets per second: the receive ring (384 frames) covers 77 ms of
    // the sink not being scheduled on a loaded machine.
    const N: u64 = 5_000;
    let pair = Pair::new();
    let csv = std::env::temp_dir().join(format!("pronto-bench-sink-{}.csv", std::process::id()));
    let _csv_guard = RmFile(csv.clone());
    let child = Command::new("ip")
        .args(["netns", "exec", &pair.ns[1]])
        .arg(env!("CARGO_BIN_EXE_pronto"))
        .args(["bench", "sink", &pair.veth[1], "--duration", "4", "--csv"])
        .arg(&csv)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("sink starts");
    let mut sink = Reaper(child);
    let stdout = sink.0.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("sink starts listening");
    assert_eq!(
        first,
        format!("sink: iface={} method=RING listening", pair.veth[1])
    );
    let n = N.to_string();
    let gen = ok(Command::new("ip")
        .args(["netns", "exec", &pair.ns[0]])
        .arg(env!("CARGO_BIN_EXE_pronto"))
        .args([
            "bench",
            "gen",
            &pair.veth[0],
            "--count",
            &n,
            "--rate",
            "5000",
        ])
        .args(["--length", "100", "--flows", "16"])
        .output()
        .expect("gen runs"));
    let total = gen.lines().last().expect("gen prints");
    assert_eq!(field(total, "sent"), n, "{gen}");
    assert_eq!(field(total, "generated"), n, "{gen}");
    assert_eq!(field(total, "drops"), "0", "{gen}");
    let mut lines = Vec::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(20)) {
        lines.push(l);
    }
    let status = sink.0.wait().expect("sink ends");
    assert!(status.success(), "sink failed: {lines:?}");
    let total = lines
        .iter()
        .find(|l| l.starts_with("total:"))
        .unwrap_or_else(|| panic!("no summary in {lines:?}"));
    assert_eq!(field(total, "stamped"), n, "{total}");
    assert_eq!(field(total, "lost"), "0", "{total}");
    assert_eq!(field(total, "duplicates"), "0", "{total}");
    assert_eq!(field(total, "reordered"), "0", "{total}");
    assert_eq!(field(total, "bytes"), (N * 100).to_string(), "{total}");
    let p50: f64 = field(total, "p50_us").parse().expect("p50 is a number");
    assert!(p50 > 0.0, "one-way latency measured: {total}");
    let per_second: Vec<&String> = lines.iter().filter(|l| l.starts_with("t=")).collect();
    assert!(!per_second.is_empty(), "{lines:?}");
    assert_eq!(field(per_second[0], "t"), "1s");
    let rows = std::fs::read_to_string(&csv).expect("CSV written");
    let mut rows = rows.lines();
    assert_eq!(
        rows.next(),
        Some("t_s,rx,pps,lost,reordered,p50_us,p99_us,p999_us")
    );
    assert_eq!(rows.count(), per_second.len());
    drop(pair);
}
