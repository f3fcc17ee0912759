//! Middleboxes on pronto's switch: `pronto switch` in one process, `pronto
//! run --switch` configurations in others, exchanging frames through it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Kills and reaps a child process when dropped (a failing test leaves no
/// switch behind).
struct Reap(Option<Child>);

impl Reap {
    /// Waits at most 30 s for the child to end (a stuck run fails the
    /// test instead of hanging it) and returns what it printed.
    fn wait_output(mut self) -> Output {
        let mut child = self.0.take().expect("child");
        let t0 = Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if t0.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let o = child.wait_with_output().expect("wait");
                panic!(
                    "still running after 30 s: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        child.wait_with_output().expect("wait")
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

fn pronto() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pronto"))
}

fn start_switch(sock: &Path, extra: &[&str]) -> Reap {
    let child = pronto()
        .args(["switch", "--socket"])
        .arg(sock)
        .args(extra)
        .stderr(Stdio::null())
        .spawn()
        .expect("pronto switch starts");
    let t0 = Instant::now();
    while !sock.exists() {
        assert!(t0.elapsed() < Duration::from_secs(10), "switch socket");
        std::thread::sleep(Duration::from_millis(10));
    }
    Reap(Some(child))
}

fn start_run(sock: &Path, args: &[&str], config: &str) -> Reap {
    let child = pronto()
        .arg("run")
        .arg("--switch")
        .arg(sock)
        .args(args)
        .args(["-e", config])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto run starts");
    Reap(Some(child))
}

fn ports(sock: &Path) -> Vec<String> {
    let o = pronto()
        .args(["switch", "ports", "--socket"])
        .arg(sock)
        .output()
        .expect("pronto switch ports");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Waits until the switch lists `n` ports.
fn wait_ports(sock: &Path, n: usize) -> Vec<String> {
    let t0 = Instant::now();
    loop {
        let p = ports(sock);
        // A table: a header line, then a line per port.
        if p.len() == n + 1 || (n == 0 && p == ["no ports attached"]) {
            return p;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "ports: {p:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// 60-byte frame from 02:00:00:00:00:01 to 02:00:00:00:00:02: IPv4/UDP
/// 10.0.0.1:1234 -> 10.0.0.2:5678, 18 bytes of payload.
const FRAME: &str = "020000000002 020000000001 0800 \
    4500002e 00004000 4011 26bd 0a000001 0a000002 \
    04d2 162e 001a 0000 000102030405060708090a0b0c0d0e0f1011";

fn frame_bytes() -> Vec<u8> {
    let hex: String = FRAME.split_whitespace().collect();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

#[test]
fn two_middleboxes_exchange_frames_through_the_switch() {
    let dir = common::scratch("switch-xchg");
    let sock: PathBuf = dir.join("sw.sock");
    // 2,048 receive slots per port: 0.4 s of slack at 5,000 frames/s for a
    // middlebox process a loaded machine does not schedule.
    // Two switching threads: the two middleboxes' ports land on different
    // threads, so every frame crosses from one thread's port to the other's.
    let _sw = start_switch(
        &sock,
        &["--slots", "4096", "--ring", "2048", "--threads", "2"],
    );

    // A mirror: sends each frame back with the addresses swapped; its MAC
    // is a static entry. It stops once it has seen 1000 frames.
    let mirror = start_run(
        &sock,
        &["--name", "mirror", "--mac", "eth0=02:00:00:00:00:02"],
        "FromDevice(eth0, BURST 32) -> c :: Counter -> EtherMirror \
         -> Queue(1024) -> ToDevice(eth0, BURST 32); \
         Script(label x, wait 10ms, goto x $(lt $(c.count) 1000), print c.count, stop)",
    );
    // A bystander whose MAC the traffic never names: with learning, it
    // must not see a single frame.
    let bystander = start_run(
        &sock,
        &["--name", "bystander"],
        "FromDevice(eth0) -> c :: Counter -> Discard; \
         DriverManager(wait 2s, print c.count, stop)",
    );
    wait_ports(&sock, 2);

    let out = dir.join("back.pcap");
    let cfg = format!(
        "RatedSource(DATA \\<{}>, RATE 5000, LIMIT 1000, STOP false) -> Queue(1024) \
         -> t :: ToDevice(eth0, BURST 32); \
         FromDevice(eth0, BURST 32) -> c :: Counter -> ToDump({}); \
         Script(label x, wait 10ms, goto x $(lt $(c.count) 1000), \
                print t.count, print c.count, print t.method, stop)",
        FRAME.replace(' ', ""),
        out.display()
    );
    let source = start_run(&sock, &["--name", "source"], &cfg);
    let list = wait_ports(&sock, 3);
    assert!(
        list.iter().any(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            f.get(1..3) == Some(&["mirror/eth0", "02:00:00:00:00:02"][..])
        }),
        "{list:?}"
    );

    let o = source.wait_output();
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(stdout, "1000\n1000\nSWITCH\n", "{stderr}");
    let m = mirror.wait_output();
    let (stdout, stderr) = text(&m);
    assert!(m.status.success(), "{stderr}");
    assert_eq!(stdout, "1000\n");

    // Every frame came back byte for byte, addresses swapped.
    let mut want = frame_bytes();
    want[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    want[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    let got = common::pcap_frames(&out);
    assert_eq!(got.len(), 1000);
    assert!(got.iter().all(|f| *f == want), "{:02x?}", got[0]);

    let b = bystander.wait_output();
    let (stdout, stderr) = text(&b);
    assert!(b.status.success(), "{stderr}");
    assert_eq!(stdout, "0\n", "learning keeps unicast off other ports");
    // Each process's port went away with it.
    wait_ports(&sock, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn switch_errors_are_clear() {
    let dir = common::scratch("switch-errors");
    let sock = dir.join("sw.sock");
    // No switch there.
    let o = pronto()
        .args(["run", "--switch"])
        .arg(&sock)
        .args(["-e", "FromDevice(eth0) -> Discard"])
        .output()
        .expect("run");
    assert!(!o.status.success());
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains(&format!(
            "eth0: cannot connect to the switch at {}: ",
            sock.display()
        )) && stderr.contains("(is `pronto switch` running there?)"),
        "{stderr}"
    );
    let _sw = start_switch(&sock, &[]);
    // Two middleboxes with one name.
    let first = start_run(
        &sock,
        &["--name", "twin"],
        "FromDevice(eth0) -> Discard; DriverManager(wait 5s, stop)",
    );
    wait_ports(&sock, 1);
    let o = pronto()
        .args(["run", "--switch"])
        .arg(&sock)
        .args(["--name", "twin", "-e", "FromDevice(eth0) -> Discard"])
        .output()
        .expect("run");
    assert!(!o.status.success());
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains(
            "eth0: the switch refused port `twin/eth0`: a port named `twin/eth0` is already \
             attached (another middlebox has this name: give this one another with --name)"
        ),
        "{stderr}"
    );
    drop(first);
    let o = pronto()
        .args(["run", "--mac", "eth0=zz", "-e", "Idle -> Discard"])
        .output()
        .expect("run");
    let (_, stderr) = text(&o);
    assert!(
        stderr.contains(
            "--mac: expected INTERFACE=MAC (e.g. eth0=02:00:00:00:00:01), found `eth0=zz`"
        ),
        "{stderr}"
    );
    let o = pronto()
        .args(["switch", "--socket"])
        .arg(dir.join("x.sock"))
        .args(["--ring", "100"])
        .output()
        .expect("switch");
    let (_, stderr) = text(&o);
    assert_eq!(
        stderr,
        "pronto switch: bad port geometry: 1024 slots (1..=1048576), rings of 100 \
         (power of two, 2..=65536)\n"
    );
    let o = pronto()
        .args(["switch", "--socket"])
        .arg(dir.join("x.sock"))
        .args(["--threads", "0"])
        .output()
        .expect("switch");
    assert_eq!(
        text(&o).1,
        "pronto switch: --threads: 0 is out of range (1 to 64)\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
