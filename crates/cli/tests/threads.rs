//! `pronto run --threads N`: independent paths on their own threads,
//! handlers and stop requests across threads, `StaticThreadSched`, one
//! switch port shared by a `FromDevice` and a `ToDevice` on two threads.

mod common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn pronto_run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pronto"))
        .arg("run")
        .args(args)
        .output()
        .expect("pronto runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn assert_ok(o: &Output) {
    assert!(
        o.status.success(),
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// Two independent paths, each stopping after its LIMIT; the driver
/// waits for both stops.
const TWO_PATHS: &str = "\
s1 :: InfiniteSource(LIMIT 1000, BURST 10, STOP true) -> c1 :: Counter -> Discard;
s2 :: InfiniteSource(LIMIT 2000, BURST 7, STOP true) -> c2 :: Counter -> Discard;
DriverManager(wait_stop 2, print c1.count, print c2.count, stop);
";

#[test]
fn two_paths_on_two_threads() {
    let o = pronto_run(&[
        "--threads",
        "2",
        "-e",
        TWO_PATHS,
        "-h",
        "c1.count",
        "-h",
        "c2.count",
    ]);
    assert_ok(&o);
    assert_eq!(
        text(&o.stdout),
        "1000\n2000\nc1.count:\n1000\n\nc2.count:\n2000\n\n"
    );
    assert_eq!(text(&o.stderr), "");
    // The same configuration on one thread prints the same.
    let one = pronto_run(&["-e", TWO_PATHS, "-h", "c1.count", "-h", "c2.count"]);
    assert_ok(&one);
    assert_eq!(one.stdout, o.stdout);
    // `--threads=2` is the same option.
    let eq = pronto_run(&["--threads=2", "-e", TWO_PATHS]);
    assert_ok(&eq);
    assert_eq!(text(&eq.stdout), "1000\n2000\n");
}

/// Per-thread CPU ticks (user + system) and name of a running process.
fn thread_ticks(pid: u32) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return v;
    };
    for t in dir.flatten() {
        let p = t.path();
        let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
        let stat = std::fs::read_to_string(p.join("stat")).unwrap_or_default();
        let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<&str> = after.split_whitespace().collect();
        let tick = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        v.push((comm.trim().to_string(), tick(11) + tick(12)));
    }
    v.sort();
    v
}

#[test]
fn independent_paths_run_on_different_os_threads() {
    let cfg = "\
a :: InfiniteSource(BURST 64) -> ca :: Counter -> Discard;
b :: InfiniteSource(BURST 64) -> cb :: Counter -> Discard;
DriverManager(wait 3000ms, stop);
";
    let child = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args([
            "run",
            "--threads",
            "2",
            "-e",
            cfg,
            "-h",
            "ca.count",
            "-h",
            "cb.count",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto runs");
    std::thread::sleep(Duration::from_millis(2000));
    let ticks = thread_ticks(child.id());
    let o = child.wait_with_output().expect("pronto ends");
    assert_ok(&o);
    // The main thread and one worker, both busy moving packets.
    assert_eq!(ticks.len(), 2, "threads: {ticks:?}");
    assert!(ticks.iter().any(|(n, _)| n == "pronto-t1"), "{ticks:?}");
    // Both busy: each has a real share of the CPU time, whatever else
    // the machine runs (an idle thread would have next to none).
    let most = ticks.iter().map(|(_, t)| *t).max().unwrap_or(0);
    for (name, t) in &ticks {
        assert!(
            *t >= 3 && *t * 4 >= most,
            "thread {name} used only {t} ticks: {ticks:?}"
        );
    }
    let out = text(&o.stdout);
    let counts: Vec<u64> = out.lines().filter_map(|l| l.parse::<u64>().ok()).collect();
    assert_eq!(counts.len(), 2, "{out}");
    assert!(counts.iter().all(|&c| c > 0), "{out}");

    // One thread: one OS thread.
    let child = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["run", "-e", cfg])
        .stdout(Stdio::null())
        .spawn()
        .expect("pronto runs");
    std::thread::sleep(Duration::from_millis(500));
    let ticks = thread_ticks(child.id());
    let o = child.wait_with_output().expect("pronto ends");
    assert!(o.status.success());
    assert_eq!(ticks.len(), 1, "threads: {ticks:?}");
}

#[test]
fn script_on_thread_0_reads_and_writes_handlers_on_thread_1() {
    let cfg = "\
s :: InfiniteSource(LIMIT 500, STOP true) -> c :: Counter -> Discard;
StaticThreadSched(s 1);
DriverManager(wait, print c.count, write c.reset, print c.count,
              set x $(c.count), print \"x=$x\", write s.limit 3, print $(s.limit), stop);
";
    let o = pronto_run(&["--threads", "2", "-e", cfg]);
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "500\n0\nx=0\n3\n");
}

#[test]
fn handlers_after_the_run_reach_every_thread() {
    let cfg = "\
a :: InfiniteSource(LIMIT 5, STOP true) -> ca :: Counter -> Discard;
b :: InfiniteSource(LIMIT 7, STOP true) -> cb :: Counter -> Discard;
StaticThreadSched(a 1, b 0);
DriverManager(wait_stop 2, stop);
";
    let o = pronto_run(&[
        "--threads",
        "2",
        "-e",
        cfg,
        "-h",
        "ca.count",
        "-h",
        "cb.count",
        "-h",
        "ca.class",
        "-x",
        "ca.count",
    ]);
    assert_eq!(o.status.code(), Some(5), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "ca.count:\n5\n\ncb.count:\n7\n\nca.class:\nCounter\n\n"
    );
    // An unknown element is still an error naming it.
    let o = pronto_run(&["--threads", "2", "-e", cfg, "-h", "nosuch.count"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stderr), "pronto: no element named `nosuch`\n");
}

#[test]
fn a_configuration_error_on_thread_1_stops_everything() {
    let cfg = "\
a :: InfiniteSource(LIMIT 3, STOP true) -> Print(ran) -> Discard;
b :: InfiniteSource(LIMIT 3) -> Counter -> Discard;
b2 :: InfiniteSource(LIMIT 3) -> bad :: Counter(BOGUS 1) -> Discard;
StaticThreadSched(a 0, b 1, b2 1);
DriverManager(print started, wait, stop);
";
    let o = pronto_run(&["--threads", "2", "-e", cfg]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(text(&o.stdout), "", "nothing ran");
    let err = text(&o.stderr);
    // Click's form (`pronto run` adds the source line and caret only when
    // standard error is a terminal).
    assert_eq!(
        err,
        "config:3: While configuring 'bad :: Counter':\n  too many arguments: `BOGUS 1` was not expected\nRouter could not be initialized!\n"
    );
    // Exactly what one thread reports.
    let one = pronto_run(&["-e", cfg]);
    assert_eq!(one.stderr, o.stderr);
}

#[test]
fn thread_counts_out_of_range_are_rejected() {
    for n in ["0", "65", "two"] {
        let o = pronto_run(&["--threads", n, "-e", "Idle"]);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(
            text(&o.stderr),
            format!(
                "pronto run: --threads: expected a number of threads from 1 to 64, found `{n}` (see `pronto run --help`)\n"
            )
        );
    }
    let o = pronto_run(&["--threads", "64", "-e", "DriverManager(stop)"]);
    assert_ok(&o);
    let o = pronto_run(&["--threads", "2", "--simtime", "-e", "DriverManager(stop)"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("--simtime runs the router on one thread"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_stop_on_thread_1_ends_an_idle_thread_0() {
    // Thread 0's only task sleeps for a minute; thread 1's source stops.
    let cfg = "\
TimedSource(INTERVAL 60) -> Discard;
s :: InfiniteSource(LIMIT 10, STOP true) -> c :: Counter -> Discard;
StaticThreadSched(s 1);
";
    let t0 = Instant::now();
    let o = pronto_run(&["--threads", "2", "-e", cfg, "-h", "c.count"]);
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "10\n");
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "took {:?}",
        t0.elapsed()
    );
}

#[test]
fn static_thread_sched_warns_about_conflicts_and_range() {
    let cfg = "\
s1 :: InfiniteSource(LIMIT 4, STOP true) -> c1 :: Counter -> Discard;
s2 :: InfiniteSource(LIMIT 6, STOP true) -> c2 :: Counter -> Discard;
StaticThreadSched(s1 1, c1 0, s2 5);
DriverManager(wait_stop 2, print c1.count, print c2.count, stop);
";
    let o = pronto_run(&["--threads", "2", "-e", cfg]);
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "4\n6\n");
    let err = text(&o.stderr);
    assert!(
        err.contains(
            "config:3: warning: `s1` and `c1` exchange packets, so they run on one thread (1)"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "config:3: warning: thread 5 is out of range with 2 threads: `s2` runs on thread 1"
        ),
        "{err}"
    );
    // `-w` hides them.
    let o = pronto_run(&["--threads", "2", "-w", "-e", cfg]);
    assert_ok(&o);
    assert_eq!(text(&o.stderr), "");
    // One thread: accepted, no effect, no warnings.
    let o = pronto_run(&["-e", cfg]);
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "4\n6\n");
    assert_eq!(text(&o.stderr), "");
    // A name that is no element is an error.
    let o = pronto_run(&[
        "--threads",
        "2",
        "-e",
        "StaticThreadSched(nosuch 1); Idle -> Discard",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("`nosuch` does not name an element"),
        "{}",
        text(&o.stderr)
    );
    // Bad arguments are the element's own error, with any thread count.
    for threads in ["1", "2"] {
        let o = pronto_run(&["--threads", threads, "-e", "StaticThreadSched(x); Idle"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(
            text(&o.stderr).contains("expected `ELEMENT THREAD`, found `x`"),
            "{}",
            text(&o.stderr)
        );
    }
}

/// Kills and reaps a child process when dropped.
struct Reap(Option<Child>);

impl Reap {
    fn wait_output(mut self) -> Output {
        self.0
            .take()
            .expect("child")
            .wait_with_output()
            .expect("wait")
    }
}

impl Drop for Reap {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn spawn(args: &[&str], sock: &Path) -> Reap {
    let child = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(args)
        .arg(sock)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto starts");
    Reap(Some(child))
}

/// Port lines of `pronto switch ports`, once there are `n`.
fn wait_ports(sock: &Path, n: usize) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
            .args(["switch", "ports", "--socket"])
            .arg(sock)
            .output()
            .expect("pronto switch ports");
        let lines: Vec<String> = text(&o.stdout)
            .lines()
            .filter(|l| l.contains("/eth0"))
            .map(str::to_string)
            .collect();
        if o.status.success() && lines.len() == n {
            return lines;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "ports: {lines:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_switch_port_is_shared_by_elements_on_two_threads() {
    let dir = common::scratch("threads-switch");
    let sock = dir.join("sw.sock");
    let _sw = spawn(&["switch", "--socket"], &sock);
    let t0 = Instant::now();
    while !sock.exists() {
        assert!(t0.elapsed() < Duration::from_secs(10), "switch socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A mirror sends every frame back, addresses swapped.
    let mirror = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args([
            "run",
            "--name",
            "mirror",
            "--mac",
            "eth0=02:00:00:00:00:02",
            "--switch",
        ])
        .arg(&sock)
        .args([
            "-e",
            "FromDevice(eth0, BURST 32) -> c :: Counter -> EtherMirror \
             -> Queue(1024) -> ToDevice(eth0, BURST 32); \
             Script(label x, wait 10ms, goto x $(lt $(c.count) 500), print c.count, stop)",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mirror starts");
    let mirror = Reap(Some(mirror));
    wait_ports(&sock, 1);
    // The source sends from thread 1 and receives on thread 0, through one
    // port; its script (thread 0) reads counters on both.
    let out = dir.join("back.pcap");
    let frame = "02000000000202000000000108004500002e000040004011\
                 26bd0a0000010a00000204d2162e001a0000000102030405060708090a0b0c0d0e0f1011";
    let cfg = format!(
        "src :: RatedSource(DATA \\<{frame}>, RATE 20000, LIMIT 500, STOP false) -> Queue(1024) \
         -> t :: ToDevice(eth0, BURST 32); \
         FromDevice(eth0, BURST 32) -> c :: Counter -> ToDump({}); \
         StaticThreadSched(src 1, c 0); \
         Script(label x, wait 10ms, goto x $(lt $(c.count) 500), \
                print t.count, print c.count, stop)",
        out.display()
    );
    let source = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["run", "--threads", "2", "--name", "source", "--switch"])
        .arg(&sock)
        .args(["-e", &cfg])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("source starts");
    let source = Reap(Some(source));
    // One port for the source's two elements.
    let list = wait_ports(&sock, 2);
    assert_eq!(
        list.iter().filter(|l| l.contains("source/eth0")).count(),
        1,
        "{list:?}"
    );
    let o = source.wait_output();
    assert_ok(&o);
    assert_eq!(text(&o.stdout), "500\n500\n");
    let m = mirror.wait_output();
    assert_ok(&m);
    assert_eq!(text(&m.stdout), "500\n");
    let got = common::pcap_frames(&out);
    assert_eq!(got.len(), 500);
    assert_eq!(got[0][0..6], [2, 0, 0, 0, 0, 1], "addresses swapped");
    let _ = std::fs::remove_dir_all(&dir);
}
