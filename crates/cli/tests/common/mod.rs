//! Helpers shared by the tests that run the bundled examples: a scratch
//! directory, running `pronto run examples/NAME.click` with defines, the
//! frames of a pcap file, Internet checksums, and reading a pcap back with
//! tcpdump.

// Each test binary uses only some of these.
#![allow(dead_code)]

pub mod api;
pub mod cluster;
pub mod netns;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (where `examples/` is).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh scratch directory for one test, removed with everything in it
/// when the test ends (also when it fails: the guard is dropped as the
/// panic unwinds), so that runs leave nothing in the temporary directory.
pub fn scratch(tag: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("pronto-cli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    Scratch(d)
}

/// A scratch directory, removed on drop (`PRONTO_KEEP_SCRATCH=1` keeps it
/// for a look after a failure).
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("PRONTO_KEEP_SCRATCH").is_none() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// What a successful `pronto run` printed.
pub struct Run {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `pronto run OPTIONS examples/NAME.click KEY=PATH...` from the
/// repository root and asserts that it succeeds.
pub fn run_example(name: &str, options: &[&str], defines: &[(&str, &Path)]) -> Run {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .current_dir(root())
        .arg("run")
        .args(options)
        .arg(format!("examples/{name}.click"))
        .args(defines.iter().map(|(k, p)| format!("{k}={}", p.display())))
        .output()
        .expect("pronto runs");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    Run {
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr,
    }
}

/// The frames of a little-endian pcap file (micro- or nanosecond).
pub fn pcap_frames(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).expect("pcap written");
    assert!(b.len() >= 24, "pcap header");
    let magic = [b[0], b[1], b[2], b[3]];
    assert!(
        magic == [0xd4, 0xc3, 0xb2, 0xa1] || magic == [0x4d, 0x3c, 0xb2, 0xa1],
        "pcap magic {magic:x?}"
    );
    let mut v = Vec::new();
    let mut i = 24;
    while i + 16 <= b.len() {
        let caplen = u32::from_le_bytes([b[i + 8], b[i + 9], b[i + 10], b[i + 11]]) as usize;
        v.push(b[i + 16..i + 16 + caplen].to_vec());
        i += 16 + caplen;
    }
    assert_eq!(i, b.len(), "pcap ends on a record");
    v
}

/// The one's-complement sum of `data`, folded (odd length padded with 0);
/// 0xffff over data that holds its own checksum means it verifies.
pub fn sum16(data: &[u8]) -> u16 {
    let mut s: u32 = data
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The Internet checksum of `data`, as it is stored.
pub fn cksum(data: &[u8]) -> [u8; 2] {
    (!sum16(data)).to_be_bytes()
}

/// An Ethernet/IPv4/UDP frame from 02:00:00:00:98:01 to `dst_mac`,
/// 10.0.0.1:1000 -> 192.168.1.1:`dport`, 8 bytes of data, checksums
/// right; hex (as `InfiniteSource`'s `DATA \<...>` takes it).
pub fn udp_frame(dst_mac: [u8; 6], dport: u16) -> String {
    let mut f = dst_mac.to_vec();
    f.extend_from_slice(&[2, 0, 0, 0, 0x98, 1, 8, 0]);
    let mut ip = vec![
        0x45, 0, 0, 36, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 192, 168, 1, 1,
    ];
    let c = cksum(&ip);
    ip[10..12].copy_from_slice(&c);
    let mut pseudo = vec![10, 0, 0, 1, 192, 168, 1, 1, 0, 17, 0, 16];
    let mut u = vec![0x03, 0xe8, (dport >> 8) as u8, dport as u8, 0, 16, 0, 0];
    u.extend_from_slice(b"chain in");
    pseudo.extend_from_slice(&u);
    u[6..8].copy_from_slice(&cksum(&pseudo));
    f.extend_from_slice(&ip);
    f.extend_from_slice(&u);
    f.iter().map(|b| format!("{b:02x}")).collect()
}

/// A frame's IPv4 packet (after the 14-byte Ethernet header, without
/// link padding).
pub fn ip_of(f: &[u8]) -> &[u8] {
    assert_eq!(&f[12..14], &[8, 0], "IPv4 frame");
    let tl = usize::from(u16::from_be_bytes([f[16], f[17]]));
    &f[14..14 + tl]
}

/// True if the IP header checksum and the TCP/UDP (with pseudo-header) or
/// ICMP checksum of the IPv4 packet `ip` verify; false for other protocols.
pub fn checksums_ok(ip: &[u8]) -> bool {
    let hl = usize::from(ip[0] & 15) * 4;
    if sum16(&ip[..hl]) != 0xffff {
        return false;
    }
    let l4 = &ip[hl..];
    match ip[9] {
        6 | 17 => {
            let mut ph = Vec::from(&ip[12..20]);
            ph.extend_from_slice(&[0, ip[9]]);
            ph.extend_from_slice(&(l4.len() as u16).to_be_bytes());
            ph.extend_from_slice(l4);
            sum16(&ph) == 0xffff
        }
        1 => sum16(l4) == 0xffff,
        _ => false,
    }
}

/// What `tcpdump -nn -r PCAP` prints, asserting that it reads the file; None
/// (with a note) where tcpdump is not installed.
pub fn tcpdump(pcap: &Path) -> Option<String> {
    match Command::new("tcpdump")
        .args(["-nn", "-r"])
        .arg(pcap)
        .output()
    {
        Ok(t) => {
            assert!(
                t.status.success(),
                "tcpdump: {}",
                String::from_utf8_lossy(&t.stderr)
            );
            Some(String::from_utf8_lossy(&t.stdout).into_owned())
        }
        Err(_) => {
            eprintln!("SKIPPED: tcpdump not installed; pcap not read back by an independent tool");
            None
        }
    }
}

/// A `pronto daemon` started for a test (killed when dropped).
pub struct Daemon {
    child: std::process::Child,
    /// Its TCP address (`127.0.0.1:PORT`).
    pub tcp: String,
    /// What it wrote on standard error so far.
    pub log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Daemon {
    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Ends it with `kill -9` and reaps it.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Sends SIGTERM and waits (up to 30 s) for it to exit; its status.
    pub fn term(mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_raw(self.child.id() as i32).expect("pid");
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        let t0 = std::time::Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                return s;
            }
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(30),
                "the daemon did not exit after SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `pronto daemon` with its socket (`dir/sock`) and state
/// (`dir/state`) in `dir` and a TCP port of its choice; returns once it
/// says it is listening.
pub fn start_daemon(dir: &Path) -> Daemon {
    start_daemon_with(dir, &[])
}

/// [`start_daemon`] with more arguments.
pub fn start_daemon_with(dir: &Path, extra: &[&str]) -> Daemon {
    start_daemon_program(dir, Path::new(env!("CARGO_BIN_EXE_pronto")), extra)
}

/// [`start_daemon_with`], the daemon started by `program` (a wrapper that
/// ends by executing pronto with its arguments).
pub fn start_daemon_program(dir: &Path, program: &Path, extra: &[&str]) -> Daemon {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(program)
        .args(["daemon", "--socket"])
        .arg(dir.join("sock"))
        .arg("--state")
        .arg(dir.join("state"))
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("daemon starts");
    let err = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(err).lines();
    let first = lines.next().expect("a line").expect("text");
    assert!(first.starts_with("prontod: listening on unix "), "{first}");
    let tcp = first
        .rsplit("http://")
        .next()
        .expect("tcp address")
        .to_string();
    // Keep draining stderr so the daemon never blocks on it.
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let l = log.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let mut g = l.lock().unwrap_or_else(|e| e.into_inner());
            g.push_str(&line);
            g.push('\n');
        }
    });
    Daemon { child, tcp, log }
}

/// Runs `pronto ARGS` in the repository root: (success, stdout, stderr).
pub fn pronto(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("pronto");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `pronto ARGS --socket DIR/sock`: a command for the daemon
/// [`start_daemon`] started in `dir`.
pub fn ctl(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let sock = dir.join("sock");
    let mut a = args.to_vec();
    a.extend(["--socket", sock.to_str().expect("path")]);
    pronto(&a)
}
