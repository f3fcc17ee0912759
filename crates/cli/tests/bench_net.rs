//! `pronto bench veth`, `tcp` and `wireguard` for real, with very short
//! runs: each must write its CSV with the documented header and sane
//! numbers for the kernel path and for pronto (SOCKET and RING; XDP either
//! measured or a row that says why it was skipped), and leave no
//! namespace behind, also when interrupted. `pronto bench flood` (sandboxed
//! instances on the daemon's switch) writes its table too.
//!
//! Needs root (network namespaces), `ip`, `ping`, `sysctl`, for the TCP
//! experiment `iperf3`, and for the WireGuard one also `ethtool`, `wg` and
//! `wireguard-go`; without them the tests say so loudly and pass.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Why the experiments cannot run here, if they cannot.
fn missing(tools: &[&str]) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("needs root".into());
    }
    tools
        .iter()
        .find(|t| !have(t))
        .map(|t| format!("needs `{t}`"))
}

/// An output directory of this test process, removed on drop.
struct OutDir(PathBuf);

impl OutDir {
    fn new(name: &str) -> OutDir {
        let d =
            std::env::temp_dir().join(format!("pronto-bench-net-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        OutDir(d)
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Network namespaces named after process `pid` (the bench names its
/// own `pronto<pid>...`).
fn namespaces_of(pid: u32) -> Vec<String> {
    let o = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list runs");
    let prefix = format!("pronto{pid}");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| {
            n.strip_prefix(&prefix)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_alphabetic()))
        })
        .map(str::to_string)
        .collect()
}

/// Runs `pronto bench ARGS`, returning its output and pid.
fn bench(args: &[&str]) -> (Output, u32) {
    let child = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .arg("bench")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto bench starts");
    let pid = child.id();
    (child.wait_with_output().expect("pronto bench runs"), pid)
}

/// The CSV's rows as cells, after checking its header.
fn read_csv(path: &std::path::Path, header: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header), "{}:\n{text}", path.display());
    lines
        .map(|l| l.split(',').map(str::to_string).collect::<Vec<_>>())
        .inspect(|r| assert_eq!(r.len(), header.split(',').count(), "row {r:?}"))
        .collect()
}

fn number(cell: &str, what: &str) -> f64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("{what}: `{cell}` is not a number"))
}

/// Checks a ping p50/p99 pair: positive, ordered, under 50 ms.
fn check_ping(p50: &str, p99: &str, path: &str) {
    let (p50, p99) = (number(p50, "ping_p50_us"), number(p99, "ping_p99_us"));
    assert!(
        p50 > 0.0 && p50 <= p99 && p99 < 50_000.0,
        "{path}: ping p50 {p50} µs, p99 {p99} µs"
    );
}

/// The rows of `path`; XDP may be a single skipped row.
fn rows_of<'a>(rows: &'a [Vec<String>], path: &str) -> Vec<&'a Vec<String>> {
    rows.iter().filter(|r| r[0] == path).collect()
}

#[test]
fn veth_experiment_writes_its_table() {
    if let Some(why) = missing(&["ip", "ping", "sysctl"]) {
        eprintln!("SKIPPED bench_net veth test: {why}. CI runs it as root.");
        return;
    }
    let out = OutDir::new("veth");
    let dir = out.0.to_string_lossy().into_owned();
    let (o, pid) = bench(&[
        "veth",
        "--duration",
        "1",
        "--rates",
        "20000",
        "--pings",
        "20",
        "--methods",
        "SOCKET,RING,XDP",
        "--out",
        &dir,
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "pronto bench veth failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "namespaces left");
    let rows = read_csv(
        &out.0.join("veth.csv"),
        "path,target_pps,offered_pps,forwarded_pps,loss_pct,ping_p50_us,ping_p99_us,note",
    );
    for path in ["kernel", "pronto-SOCKET", "pronto-RING"] {
        let r = rows_of(&rows, path);
        let targets: Vec<&str> = r.iter().map(|r| r[1].as_str()).collect();
        assert_eq!(targets, ["0", "20000"], "{path}: one row per offered rate");
        for row in r {
            let offered = number(&row[2], "offered_pps");
            let forwarded = number(&row[3], "forwarded_pps");
            let loss = number(&row[4], "loss_pct");
            assert!(offered > 0.0, "{path}: nothing offered: {row:?}");
            assert!(forwarded > 0.0, "{path}: nothing forwarded: {row:?}");
            // Nothing arrives that was not sent (10% slack for rounding
            // the duration).
            assert!(forwarded <= offered * 1.1, "{path}: {row:?}");
            assert!((0.0..=100.0).contains(&loss), "{path}: {row:?}");
            check_ping(&row[5], &row[6], path);
        }
        // The fixed rate is a ceiling the generator keeps (how close it
        // comes to it depends on the machine's load, which a test does
        // not judge).
        let fixed = number(&rows_of(&rows, path)[1][2], "offered_pps");
        assert!(
            fixed > 0.0 && fixed <= 22_000.0,
            "{path}: offered {fixed} pps for 20000"
        );
    }
    let xdp = rows_of(&rows, "pronto-XDP");
    assert!(!xdp.is_empty(), "no pronto-XDP row:\n{stdout}");
    if xdp[0][7].starts_with("skipped:") {
        assert_eq!(xdp.len(), 1);
        assert!(xdp[0][7].contains("XDP"), "{:?}", xdp[0]);
        eprintln!("bench_net: XDP {}", xdp[0][7]);
    } else {
        assert!(number(&xdp[0][3], "forwarded_pps") > 0.0, "{:?}", xdp[0]);
    }
    assert!(
        stdout.contains("| path | full-speed fwd kpps | vs kernel |"),
        "no Markdown table:\n{stdout}"
    );
    eprintln!("{stdout}");
}

#[test]
fn tcp_experiment_writes_its_table() {
    if let Some(why) = missing(&["ip", "ping", "sysctl", "iperf3"]) {
        eprintln!("SKIPPED bench_net tcp test: {why}. CI runs it as root.");
        return;
    }
    let out = OutDir::new("tcp");
    let dir = out.0.to_string_lossy().into_owned();
    let (o, pid) = bench(&[
        "tcp",
        "--duration",
        "1",
        "--pings",
        "20",
        "--methods",
        "SOCKET,RING,XDP",
        "--out",
        &dir,
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "pronto bench tcp failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "namespaces left");
    let rows = read_csv(
        &out.0.join("tcp.csv"),
        "path,gbps,retransmits,ping_p50_us,ping_p99_us,pronto_cpu_s,note",
    );
    let paths: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    // XDP needs the end hosts' checksum offload off, so the kernel is
    // measured that way too.
    assert_eq!(
        paths,
        [
            "kernel",
            "kernel-txoff",
            "pronto-SOCKET",
            "pronto-RING",
            "pronto-XDP"
        ]
    );
    for r in &rows {
        if r[0] == "pronto-XDP" && r[1].is_empty() {
            assert!(
                r[6].contains("skipped:") || r[6].contains("failed:"),
                "an XDP row without a result says why: {r:?}"
            );
            eprintln!("bench_net: XDP {}", r[6]);
            continue;
        }
        let gbps = number(&r[1], "gbps");
        assert!(gbps > 0.0 && gbps < 1000.0, "{r:?}");
        number(&r[2], "retransmits");
        check_ping(&r[3], &r[4], &r[0]);
        if r[0].starts_with("kernel") {
            assert_eq!(r[5], "", "the kernel path has no pronto CPU time");
        } else {
            // pronto forwarded a second of TCP: it used some CPU, and at
            // most what the machine has.
            let cpu = number(&r[5], "pronto_cpu_s");
            let cores = std::thread::available_parallelism().map_or(64, |n| n.get());
            assert!(cpu > 0.0 && cpu <= 2.0 * cores as f64, "{r:?}");
        }
        let offloads_off = r[0] == "kernel-txoff" || r[0] == "pronto-XDP";
        assert_eq!(r[6].contains("tx checksum offload"), offloads_off, "{r:?}");
    }
    assert!(
        stdout.contains("| path | Gb/s | vs kernel (same offloads) |"),
        "{stdout}"
    );
    eprintln!("{stdout}");
}

#[test]
fn interrupted_experiment_removes_its_namespaces() {
    if let Some(why) = missing(&["ip", "ping", "sysctl", "iperf3"]) {
        eprintln!("SKIPPED bench_net interrupt test: {why}. CI runs it as root.");
        return;
    }
    let out = OutDir::new("int");
    let dir = out.0.to_string_lossy().into_owned();
    let mut child = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args([
            "bench",
            "tcp",
            "--duration",
            "30",
            "--methods",
            "RING",
            "--out",
            &dir,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto bench starts");
    let pid = child.id();
    // Interrupt once its namespaces exist and it is under way.
    let deadline = Instant::now() + Duration::from_secs(20);
    while namespaces_of(pid).len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(namespaces_of(pid).len(), 3, "the bench made no namespaces");
    std::thread::sleep(Duration::from_millis(500));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).expect("a child's pid is positive"),
        rustix::process::Signal::INT,
    )
    .expect("SIGINT is sent");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("pronto bench did not stop within 10 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(!status.success(), "an interrupted bench reports failure");
    assert!(
        err.contains("pronto bench tcp: interrupted"),
        "stderr: {err}"
    );
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "namespaces left");
}

#[test]
fn flood_experiment_writes_its_table() {
    flood(
        &[],
        "generators and sinks: on the benchmark's thread, through their ports' rings",
    );
}

#[test]
fn flood_experiment_with_the_generators_on_the_switching_thread() {
    flood(
        &["--gen", "switch"],
        "generators and sinks: in the switching thread's loop (NICs served by the switch)",
    );
}

/// Runs `pronto bench flood` with `extra` and checks its table, its plot
/// and the line that says where the generators ran (`place`).
fn flood(extra: &[&str], place: &str) {
    if let Some(why) = missing(&[]) {
        eprintln!("SKIPPED bench_net flood test: {why} (sandboxes). CI runs it as root.");
        return;
    }
    let out = OutDir::new(&format!("flood{}", extra.len()));
    let dir = out.0.to_string_lossy().into_owned();
    let mut args = vec!["flood", "--duration", "0.3", "--out", &dir];
    args.extend_from_slice(extra);
    let (o, _) = bench(&args);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "pronto bench flood failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(place), "{stdout}");
    let rows = read_csv(
        &out.0.join("flood.csv"),
        "phase,quiet_offered_kpps,quiet_kpps,flooded_offered_kpps,flooded_kpps,quiet_of_alone",
    );
    let phases: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(phases, ["1", "2", "3"]);
    for r in &rows {
        assert!(number(&r[1], "quiet offered") > 0.0, "{r:?}");
    }
    // Alone, the flooded tenant is offered nothing; then everything.
    assert_eq!(number(&rows[0][3], "flooded offered"), 0.0);
    assert!(number(&rows[1][3], "flooded offered") > 0.0, "{rows:?}");
    assert_eq!(number(&rows[0][5], "of alone"), 1.0);
    assert!(stdout.contains("| flood limited to "), "{stdout}");
    assert!(
        stdout.contains("the neighbour keeps >= 90% of what it gets alone: beside the flood "),
        "{stdout}"
    );
    assert!(out.0.join("flood.png").exists());
}

#[test]
fn wireguard_experiment_writes_its_table() {
    if let Some(why) = missing(&[
        "ip",
        "ping",
        "sysctl",
        "ethtool",
        "iperf3",
        "wg",
        "wireguard-go",
    ]) {
        eprintln!("SKIPPED bench_net wireguard test: {why}. CI runs it as root.");
        return;
    }
    let out = OutDir::new("wireguard");
    let dir = out.0.to_string_lossy().into_owned();
    let (o, pid) = bench(&[
        "wireguard",
        "--duration",
        "1",
        "--rounds",
        "1",
        "--udp-rate",
        "100M",
        "--out",
        &dir,
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "pronto bench wireguard failed:\n{stdout}\n{stderr}"
    );
    assert_eq!(namespaces_of(pid), Vec::<String>::new(), "namespaces left");
    for side in ["c", "m"] {
        for g in ["p", "w"] {
            let sock = format!("/var/run/wireguard/wg{side}{pid}1{g}.sock");
            assert!(!std::path::Path::new(&sock).exists(), "{sock} left");
        }
    }
    let rows = read_csv(
        &out.0.join("wireguard.csv"),
        "gateway,round,tcp_mbps,tcp_retransmits,udp_mbps,udp_loss_percent,gateway_cpu_s,note",
    );
    let gateways: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str()))
        .collect();
    assert_eq!(gateways, [("pronto", "1"), ("wireguard-go", "1")]);
    for r in &rows {
        assert_eq!(r[7], "", "a run without failure: {r:?}");
        let tcp = number(&r[2], "tcp_mbps");
        assert!(tcp > 0.0 && tcp < 1e6, "{r:?}");
        number(&r[3], "tcp_retransmits");
        // At most what was offered (100 Mb/s), and something got through.
        let udp = number(&r[4], "udp_mbps");
        assert!(udp > 0.0 && udp <= 110.0, "{r:?}");
        let loss = number(&r[5], "udp_loss_percent");
        assert!((0.0..100.0).contains(&loss), "{r:?}");
        // The gateway forwarded a second of TCP: it used some CPU.
        let cpu = number(&r[6], "gateway_cpu_s");
        assert!(cpu > 0.0, "{r:?}");
    }
    assert!(out.0.join("wireguard.png").exists());
    assert!(
        stdout.contains("| gateway | rounds | TCP Mb/s | vs wireguard-go |")
            && stdout.contains("| wireguard-go | 1 |"),
        "{stdout}"
    );
    eprintln!("{stdout}");
}
