//! prontod as a process of its own, for the experiments that kill it
//! (`pronto bench chaos`) or watch it from outside (`pronto bench soak`):
//! this binary's `pronto daemon` on a scratch state directory, reached
//! over its unix socket, killed with SIGKILL and started again on the
//! same directory. Also what can be seen of it from `/proc` and the
//! cgroup file systems: its memory, descriptors, sandboxes, namespaces
//! and cgroups.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::http::{request, Endpoint, Response};

/// How long a daemon may take to answer its health check after it starts
/// (it restores and starts every stored instance first).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A `pronto daemon` child process on a state directory of its own.
pub(super) struct Prontod {
    child: Option<Child>,
    /// Holds `sock` (the API), `state` (the store) and `daemon.log`.
    pub(super) dir: PathBuf,
    extra: Vec<String>,
    /// Every daemon process started on this directory, oldest first.
    pub(super) pids: Vec<u32>,
}

impl Prontod {
    /// Starts a daemon on `dir` (made empty first) with `extra`
    /// arguments after the socket, state and `--listen none`.
    pub(super) fn start(dir: &Path, extra: &[&str]) -> Result<Prontod, String> {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let mut d = Prontod {
            child: None,
            dir: dir.to_path_buf(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            pids: Vec::new(),
        };
        d.spawn()?;
        Ok(d)
    }

    /// The API's unix socket.
    pub(super) fn socket(&self) -> PathBuf {
        self.dir.join("sock")
    }

    /// The store's file.
    pub(super) fn store(&self) -> PathBuf {
        self.dir.join("state").join("state.redb")
    }

    /// The process id of the running daemon (0 when none runs).
    pub(super) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn spawn(&mut self) -> Result<(), String> {
        let log_path = self.dir.join("daemon.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
        let exe =
            std::env::current_exe().map_err(|e| format!("cannot find the pronto binary: {e}"))?;
        let child = Command::new(exe)
            .arg("daemon")
            .arg("--socket")
            .arg(self.socket())
            .arg("--state")
            .arg(self.dir.join("state"))
            .args(["--listen", "none"])
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("cannot start pronto daemon: {e}"))?;
        self.pids.push(child.id());
        self.child = Some(child);
        let t0 = Instant::now();
        loop {
            if let Ok(r) = self.try_call("GET", "/v1/health", None) {
                if r.status == 200 {
                    return Ok(());
                }
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(status)) = c.try_wait() {
                    self.child = None;
                    return Err(format!(
                        "the daemon exited at start ({status}): {}",
                        self.log_tail(10)
                    ));
                }
            }
            if t0.elapsed() > START_TIMEOUT {
                return Err(format!(
                    "the daemon did not answer within {START_TIMEOUT:?}: {}",
                    self.log_tail(10)
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The last `n` lines the daemons wrote on standard error.
    pub(super) fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }

    /// Writes a line into the daemons' log (what the experiment did, so
    /// the daemon's lines can be read against it).
    pub(super) fn note(&self, line: &str) {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("daemon.log"))
        {
            let _ = writeln!(f, "=== {line}");
        }
    }

    /// `kill -9` of the daemon, reaped.
    pub(super) fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts a new daemon on the same state directory.
    pub(super) fn restart(&mut self) -> Result<(), String> {
        self.kill9();
        self.spawn()
    }

    /// SIGTERM, then waits (up to a minute) for a clean exit.
    pub(super) fn term(&mut self) -> Result<(), String> {
        let Some(mut c) = self.child.take() else {
            return Ok(());
        };
        if let Some(pid) = rustix::process::Pid::from_raw(c.id() as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let t0 = Instant::now();
        loop {
            match c.try_wait() {
                Ok(Some(s)) if s.success() => return Ok(()),
                Ok(Some(s)) => return Err(format!("the daemon exited with {s} after SIGTERM")),
                Ok(None) if t0.elapsed() > Duration::from_secs(60) => {
                    let _ = c.kill();
                    let _ = c.wait();
                    return Err("the daemon did not exit within 60 s of SIGTERM".into());
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(format!("waiting for the daemon: {e}")),
            }
        }
    }

    /// One API call; `Err` only when the daemon could not be reached or
    /// the connection broke.
    pub(super) fn try_call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Response, String> {
        let text = body.map(Value::to_string);
        let body = text.as_deref().map(|t| ("application/json", t.as_bytes()));
        request(&Endpoint::Unix(self.socket()), None, method, path, body)
    }

    /// One API call that must succeed (2xx); its JSON body (`null` when
    /// empty or not JSON).
    pub(super) fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, String> {
        let r = self.try_call(method, path, body)?;
        if r.status >= 300 {
            return Err(format!("{method} {path}: {} {}", r.status, r.error()));
        }
        Ok(serde_json::from_slice(&r.body).unwrap_or(Value::Null))
    }

    /// Reads handler `h` of `tenant`'s instance `name` (as text).
    pub(super) fn read(&self, tenant: &str, name: &str, h: &str) -> Result<String, String> {
        let r = self.try_call(
            "GET",
            &format!("/v1/instances/{name}/handlers/{h}?tenant={tenant}"),
            None,
        )?;
        if r.status != 200 {
            return Err(format!("{tenant}/{name} {h}: {} {}", r.status, r.error()));
        }
        Ok(r.text())
    }

    /// Writes handler `h` of `tenant`'s instance `name`.
    pub(super) fn write(&self, tenant: &str, name: &str, h: &str, v: &str) -> Result<(), String> {
        let r = request(
            &Endpoint::Unix(self.socket()),
            None,
            "PUT",
            &format!("/v1/instances/{name}/handlers/{h}?tenant={tenant}"),
            Some(("text/plain", v.as_bytes())),
        )?;
        if r.status != 200 {
            return Err(format!("{tenant}/{name} {h}: {} {}", r.status, r.error()));
        }
        Ok(())
    }

    /// Every instance, as the admin sees them.
    pub(super) fn instances(&self) -> Result<Vec<Value>, String> {
        match self.call("GET", "/v1/instances", None)? {
            Value::Array(v) => Ok(v),
            other => Err(format!("GET /v1/instances: not a list: {other}")),
        }
    }

    /// The cgroups of daemon `pid`'s sandboxes, over every hierarchy.
    pub(super) fn cgroups_of(pid: u32) -> Vec<String> {
        pronto_sandbox::cgroup::children(Path::new("/sys/fs/cgroup"), &cgroup_parent(pid))
    }

    /// Whether daemon `pid` left its cgroup directory in any hierarchy.
    pub(super) fn cgroup_dir_left(pid: u32) -> bool {
        pronto_sandbox::cgroup::parent_dirs(Path::new("/sys/fs/cgroup"), &cgroup_parent(pid))
            .iter()
            .any(|d| d.exists())
    }
}

impl Drop for Prontod {
    fn drop(&mut self) {
        // A clean stop removes the daemon's cgroups; a kill would leave
        // them to the next daemon.
        let _ = self.term();
    }
}

fn cgroup_parent(pid: u32) -> String {
    format!("pronto/prontod-{pid}")
}

/// What `/proc` shows of a process and the processes it started.
#[derive(Clone, Debug, Default)]
pub(super) struct ProcView {
    /// Resident memory, bytes.
    pub rss: u64,
    /// Of it, anonymous memory (the heap and stacks), bytes.
    pub anon: u64,
    /// Of it, shared memory (the switch ports' regions), bytes.
    pub shmem: u64,
    /// Open descriptors.
    pub fds: usize,
    /// Its child processes (the sandboxes).
    pub children: Vec<u32>,
    /// Distinct network namespaces among them.
    pub netns: usize,
    /// Threads of the process itself.
    pub threads: usize,
}

/// `pid`'s parent process id and start time (clock ticks since boot),
/// from `/proc/PID/stat`.
pub(super) fn stat_of(pid: u32) -> Option<(u32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(0) ppid(1) ... starttime(19).
    Some((f.get(1)?.parse().ok()?, f.get(19)?.parse().ok()?))
}

/// Processes whose parent is `pid`.
pub(super) fn children_of(pid: u32) -> Vec<u32> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut v: Vec<u32> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&p| stat_of(p).is_some_and(|(ppid, _)| ppid == pid))
        .collect();
    v.sort_unstable();
    v
}

/// The network namespace of `pid` (`net:[INODE]`).
fn netns_of(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// What `/proc` shows of `pid` now.
pub(super) fn view(pid: u32) -> ProcView {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |k: &str| {
        status
            .lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let children = children_of(pid);
    let mine = netns_of(pid);
    let mut ns: Vec<String> = children
        .iter()
        .filter_map(|&c| netns_of(c))
        .filter(|n| Some(n) != mine.as_ref())
        .collect();
    ns.sort();
    ns.dedup();
    ProcView {
        rss: field("VmRSS:") * 1024,
        anon: field("RssAnon:") * 1024,
        shmem: field("RssShmem:") * 1024,
        fds: std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count()),
        netns: ns.len(),
        children,
        threads: field("Threads:") as usize,
    }
}

/// Processes (of any parent) still alive among `seen` (pid, start time):
/// the same process, not a later one that reuses the number.
pub(super) fn still_alive(seen: &[(u32, u64)]) -> Vec<u32> {
    seen.iter()
        .filter(|(p, t)| stat_of(*p).is_some_and(|(_, st)| st == *t))
        .map(|(p, _)| *p)
        .collect()
}
