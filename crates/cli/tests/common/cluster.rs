//! A cluster for a test: a real etcd (Debian's `etcd-server`, started by
//! `pronto_cluster::testing`) and daemons on this machine, each a node
//! with its own directory (state, API socket) under one scratch
//! directory; and the calls the cluster tests make of a node, through the
//! command line or the REST API on its socket.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pronto_cluster::{node, testing, Etcd};

use super::api::{call_with, Reply, To};

/// Waits (up to 60 s, polling every 100 ms) until `f` holds; panics
/// naming `what` if it does not.
pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(60), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether a cluster test can run here (root, for the sandboxes; etcd
/// installed); if not, prints the `SKIPPED` line naming `test`.
pub fn can_run(test: &str) -> bool {
    if !rustix::process::geteuid().is_root() {
        println!("SKIPPED {test}: sandboxes need root");
        return false;
    }
    testing::have_etcd()
}

/// Starts node `name`'s daemon in `dir` against etcd at `etcd` (lease TTL
/// 2 s, no pre-started sandboxes).
pub fn start_node(dir: &Path, name: &str, etcd: &str) -> super::Daemon {
    start_node_with(dir, name, etcd, &[])
}

/// [`start_node`] with `extra` daemon arguments (`--vxlan ...`).
pub fn start_node_with(dir: &Path, name: &str, etcd: &str, extra: &[String]) -> super::Daemon {
    let mut args = vec![
        "--cluster",
        etcd,
        "--node",
        name,
        "--cluster-ttl",
        "2",
        "--warm",
        "0",
    ];
    args.extend(extra.iter().map(String::as_str));
    super::start_daemon_with(dir, &args)
}

/// One node of a test's cluster.
pub struct Node {
    /// Its name.
    pub name: String,
    /// Its directory (`sock`, `state`).
    pub dir: PathBuf,
    /// Its daemon, while it runs.
    pub daemon: Option<super::Daemon>,
    /// Its daemon's arguments beyond the cluster's (kept for a restart).
    pub extra: Vec<String>,
}

/// A one-member etcd and a daemon per node, all ended when dropped (the
/// daemons first, then the scratch directory, then etcd).
pub struct Cluster {
    /// The nodes, in the order named.
    pub nodes: Vec<Node>,
    /// The scratch directory the nodes' directories are in.
    pub scratch: super::Scratch,
    /// A client of the cluster's etcd.
    pub etcd: Etcd,
    /// etcd's client URL.
    pub url: String,
    /// The etcd member.
    pub members: testing::Members,
}

impl Cluster {
    /// Starts etcd and nodes `names` (in a scratch directory tagged `tag`).
    pub fn start(tag: &str, names: &[&str]) -> Cluster {
        Cluster::start_with(tag, names, |_| Vec::new())
    }

    /// [`Cluster::start`], each node's daemon with the arguments `extra`
    /// gives for its name.
    pub fn start_with(tag: &str, names: &[&str], extra: impl Fn(&str) -> Vec<String>) -> Cluster {
        let members = testing::Members::start(1).expect("etcd starts");
        let url = members.endpoints();
        let etcd = Etcd::new(&url).expect("endpoint");
        let scratch = super::scratch(tag);
        let nodes = names
            .iter()
            .map(|n| {
                let dir = scratch.join(n);
                std::fs::create_dir_all(&dir).expect("dir");
                let extra = extra(n);
                let daemon = Some(start_node_with(&dir, n, &url, &extra));
                Node {
                    name: n.to_string(),
                    dir,
                    daemon,
                    extra,
                }
            })
            .collect();
        Cluster {
            nodes,
            scratch,
            etcd,
            url,
            members,
        }
    }

    /// The nodes' directories, in the order named.
    pub fn dirs(&self) -> Vec<PathBuf> {
        self.nodes.iter().map(|n| n.dir.clone()).collect()
    }

    /// Node `name`'s index.
    pub fn index(&self, name: &str) -> usize {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .unwrap_or_else(|| panic!("no node `{name}`"))
    }

    /// Node `name`'s directory.
    pub fn dir_of(&self, name: &str) -> PathBuf {
        self.nodes[self.index(name)].dir.clone()
    }

    /// The names of the nodes registered (live) in etcd.
    pub fn live(&self) -> BTreeSet<String> {
        node::nodes(&self.etcd)
            .expect("nodes")
            .into_iter()
            .map(|n| n.name)
            .collect()
    }

    /// Kills node `i`'s daemon with `kill -9`.
    pub fn kill9(&mut self, i: usize) {
        self.nodes[i].daemon.take().expect("running").kill9();
    }

    /// Starts node `i`'s daemon again (same name, same directory).
    pub fn restart(&mut self, i: usize) {
        let n = &mut self.nodes[i];
        n.daemon = Some(start_node_with(&n.dir, &n.name, &self.url, &n.extra));
    }
}

pub use super::ctl as cli;

/// [`cli`] that must succeed: its standard output.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let (good, out, err) = cli(dir, args);
    assert!(good, "pronto {args:?}: {err}");
    out
}

/// `pronto ls --json` through node `dir`.
pub fn ls(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&ok(dir, &["ls", "--json"])).expect("JSON")
}

/// Instance `name`'s counter `handler` as read through node `dir`'s API,
/// if the instance answers there.
pub fn count(dir: &Path, name: &str, handler: &str) -> Option<u64> {
    let (good, out, _) = cli(dir, &["read", name, handler]);
    good.then(|| out.trim().parse().ok()).flatten()
}

/// `method path` on node `dir`'s socket, as the admin (`token` None) or
/// with a token.
pub fn req(dir: &Path, token: Option<&str>, method: &str, path: &str, body: &str) -> Reply {
    let sock = dir.join("sock");
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    call_with(&To::Unix(&sock), method, path, &headers, body.as_bytes())
}

/// Node `dir`'s switch ports (`GET /v1/switch/ports`), by name.
pub fn ports(dir: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    let r = req(dir, None, "GET", "/v1/switch/ports", "");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| (p["name"].as_str().expect("name").to_string(), p.clone()))
        .collect()
}

/// What the CPU weight file of process `pid`'s cgroup reads: `cpu.weight`
/// on cgroup v2, `cpu.shares` on v1 (see [`cpu_file_for`]).
pub fn cpu_weight_file(pid: u64) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).expect("cgroup list");
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctls, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        let file = if ctls.split(',').any(|c| c == "cpu") {
            format!("/sys/fs/cgroup/cpu{path}/cpu.shares")
        } else if ctls.is_empty() && cgroup_v2() {
            format!("/sys/fs/cgroup{path}/cpu.weight")
        } else {
            continue;
        };
        let read = std::fs::read_to_string(&file).expect(&file);
        return read.trim().parse().expect("a number");
    }
    panic!("no CPU cgroup for {pid}: {text}");
}

/// What [`cpu_weight_file`] reads for an instance of weight `w` (1024
/// shares for 100 on cgroup v1).
pub fn cpu_file_for(w: u64) -> u64 {
    if cgroup_v2() {
        w
    } else {
        w * 1024 / 100
    }
}

fn cgroup_v2() -> bool {
    Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
}
