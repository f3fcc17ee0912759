//! Real etcd members for tests and experiments: Debian's `etcd-server`
//! started as child processes on loopback, each with a data directory of
//! its own, killed and removed when the [`Members`] is dropped.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::Etcd;

/// Whether `etcd` can be run; if not, prints the `SKIPPED` line a test
/// prints before it returns.
pub fn have_etcd() -> bool {
    let ok = Command::new("etcd")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("SKIPPED: etcd not installed (Debian package etcd-server; scripts/install-test-tools installs it)");
    }
    ok
}

/// A free TCP port on loopback.
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port: {e}"))
}

/// etcd members started together (one cluster), killed on drop.
pub struct Members {
    children: Vec<Child>,
    /// Each member's client URL.
    pub clients: Vec<String>,
    dir: PathBuf,
}

impl Members {
    /// Starts `n` members and waits (at most 30 s) until a write goes
    /// through (a leader is elected).
    pub fn start(n: usize) -> Result<Members, String> {
        Members::start_on(n, "127.0.0.1")
    }

    /// [`Members::start`] with every member listening on address `host`
    /// (an address other network namespaces reach, for nodes in them).
    pub fn start_on(n: usize, host: &str) -> Result<Members, String> {
        // A member can lose its port between `free_port` and etcd binding
        // it (tests start members in parallel); the cluster then runs with
        // one member fewer and loses quorum sooner than the test means.
        // Such a start is made again with fresh ports.
        let mut last = String::new();
        for _ in 0..3 {
            match Members::try_start_on(n, host) {
                Ok(m) => return Ok(m),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn try_start_on(n: usize, host: &str) -> Result<Members, String> {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "pronto-etcd-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut ports = Vec::new();
        for _ in 0..n {
            ports.push((free_port()?, free_port()?));
        }
        let cluster: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://{host}:{peer}"))
            .collect();
        let mut m = Members {
            children: Vec::new(),
            clients: Vec::new(),
            dir,
        };
        for (i, (client, peer)) in ports.iter().enumerate() {
            let c = format!("http://{host}:{client}");
            let p = format!("http://{host}:{peer}");
            let child = Command::new("etcd")
                .args(["--name", &format!("m{i}")])
                .arg("--data-dir")
                .arg(m.dir.join(format!("m{i}")))
                .args(["--listen-client-urls", &c, "--advertise-client-urls", &c])
                .args([
                    "--listen-peer-urls",
                    &p,
                    "--initial-advertise-peer-urls",
                    &p,
                ])
                .args(["--initial-cluster", &cluster.join(",")])
                .args(["--initial-cluster-state", "new"])
                .args(["--initial-cluster-token", "pronto-test"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| {
                    format!(
                        "cannot start etcd ({e}): install Debian's etcd-server \
                         (scripts/install-test-tools)"
                    )
                })?;
            m.children.push(child);
            m.clients.push(c);
        }
        let etcd = m.client()?;
        let t = Instant::now();
        while etcd.put(b"/ready", b"1", 0).is_err() {
            if t.elapsed() > Duration::from_secs(30) {
                return Err("etcd did not start within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Every member up, each answering on its own.
        for c in &m.clients {
            let one = Etcd::new(c).map_err(|e| e.to_string())?;
            while one.get(b"/ready").is_err() {
                if t.elapsed() > Duration::from_secs(30) {
                    return Err(format!("etcd member {c} did not answer within 30 s"));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Ok(m)
    }

    /// Every member's client URL, separated by commas (`--etcd`,
    /// `--cluster`).
    pub fn endpoints(&self) -> String {
        self.clients.join(",")
    }

    /// A client of every member.
    pub fn client(&self) -> Result<Etcd, String> {
        Etcd::new(&self.endpoints()).map_err(|e| e.to_string())
    }

    /// Kills member `i` (the others go on).
    pub fn kill(&mut self, i: usize) {
        let _ = self.children[i].kill();
        let _ = self.children[i].wait();
    }
}

impl Drop for Members {
    fn drop(&mut self) {
        for i in 0..self.children.len() {
            self.kill(i);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
