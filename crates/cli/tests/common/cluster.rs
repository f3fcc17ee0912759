//! A cluster for a test: a real etcd (Debian's `etcd-server`, started by
//! `pronto_cluster::testing`) and daemons on this machine, each a node
//! with its own directory (state, API socket) under one scratch
//! directory; and the calls the cluster tests make of a node, through the
//! command line or the REST API on its socket.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pronto_cluster::{node, scheduler, testing, Etcd};
use serde_json::{json, Value};

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

pub const SINK_MAC: &str = "02:00:00:00:99:01";
pub const SOURCE_MAC: &str = "02:00:00:00:98:01";
/// The chain's entry (`pronto chain apply` prints it: chain 1's classifier).
pub const ENTRY_MAC: [u8; 6] = [0x02, 0x4e, 0x01, 0, 0, 0];

/// Creates instance `name` pinned to node `node` (eth0 at `mac`, no
/// address) through node `dir`.
pub fn create_on(dir: &Path, name: &str, config: &str, mac: &str, node: &str) {
    let body = json!({
        "name": name,
        "config": config,
        "memory": "16M",
        "node": node,
        "interfaces": [{"name": "eth0", "mac": mac}],
    });
    let r = req(dir, None, "POST", "/v1/instances", &body.to_string());
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["node"], node, "{}", r.text());
}

/// A frame counter of a VXLAN view (`to_switch`, `to_vteps`, `flooded`).
pub fn frames(v: &Value, what: &str) -> u64 {
    v[what].as_u64().unwrap_or_else(|| panic!("{what} in {v}"))
}

/// Node `dir`'s VXLAN uplink (`GET /v1/switch/vxlan`).
pub fn vxlan(dir: &Path) -> Value {
    let r = req(dir, None, "GET", "/v1/switch/vxlan", "");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// A drop counter of a VXLAN view.
pub fn dropped(v: &Value, reason: &str) -> u64 {
    v["dropped"]
        .as_array()
        .expect("dropped")
        .iter()
        .find(|d| d[0] == reason)
        .and_then(|d| d[1].as_u64())
        .expect("a reason")
}

/// A service chain across nodes, for the cluster tests whose three nodes
/// (`dirs`: n1, n2, n3) have VXLAN uplinks: `pronto chain apply --nodes
/// n1,n2` through n1 of two counting NFs in parallel (read-only, so
/// joined by a merger): the entry, NF a and the merger on n1, NF b on n2.
/// A source on n1 sends to the entry, a sink on n3 is the chain's exit:
/// frames cross n1 -> n2 -> n1 -> n3 over VXLAN, nothing flooded, no
/// frame without a remote. Then `kill_n2` kills n2's daemon: b runs on
/// n1 (where its chain is) and the sink counts again. The sink's counts
/// when the frames were first seen crossing, and at the end; and the time
/// from the kill to the sink counting again (20 frames more; polled
/// every 100 ms through the CLI, so some 100-200 ms coarse). Last, a
/// second chain applied without `--nodes` lands whole on one node.
pub fn chain_across_nodes(
    etcd: &Etcd,
    scratch: &Path,
    dirs: &[PathBuf],
    kill_n2: impl FnOnce(),
) -> (u64, u64, Duration) {
    let n1 = &dirs[0];
    create_on(
        n1,
        "sink",
        "FromDevice(eth0) -> c :: Counter -> Discard;\n",
        SINK_MAC,
        "n3",
    );
    // Two counters: read-only, so the chain runs them in parallel, joined
    // by a merger.
    let policy = scratch.join("two.nfp");
    let nf = super::root().join("examples/chains/nf/count.click");
    std::fs::write(
        &policy,
        format!(
            "nf a = click(\"{0}\")\nnf b = click(\"{0}\")\norder(a, before, b)\n",
            nf.display()
        ),
    )
    .expect("policy");
    let out = ok(
        n1,
        &[
            "chain",
            "apply",
            policy.to_str().expect("path"),
            "--out",
            SINK_MAC,
            "--name",
            "xc",
            "--nodes",
            "n1,n2",
            "--merge-timeout",
            "500ms",
        ],
    );
    assert!(
        out.contains("created xc-b (nf b, eth0 02:4e:01:01:00:01, node n2)"),
        "{out}"
    );
    assert!(
        out.contains("created xc-in (classifier, eth0 02:4e:01:00:00:00, node n1)"),
        "{out}"
    );
    let placed = scheduler::placements(etcd).expect("placements");
    for (inst, node) in [
        ("xc-in", "n1"),
        ("xc-a", "n1"),
        ("xc-b", "n2"),
        ("xc-merge0", "n1"),
    ] {
        assert_eq!(placed[inst], node, "{inst}: {placed:?}");
    }
    // Every instance of the chain is in its group, shown by any node.
    let r = req(n1, None, "GET", "/v1/instances/xc-b", "");
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(
        (&v["group"], &v["prefer_node"], &v["node"]),
        (&json!("xc"), &json!("n2"), &json!("n2")),
        "{v}"
    );
    let r = req(&dirs[1], None, "GET", "/v1/instances/xc-b", "");
    assert_eq!(r.json()["group"], "xc", "{}", r.text());

    // The source on n1 sends to the entry.
    create_on(
        n1,
        "source",
        &format!(
            "RatedSource(DATA \\<{}>, RATE 200, LIMIT -1, STOP false) -> Queue -> ToDevice(eth0);\n",
            super::udp_frame(ENTRY_MAC, 53)
        ),
        SOURCE_MAC,
        "n1",
    );
    let sink = || count(n1, "sink", "c.count").unwrap_or(0);
    wait_until("frames at the sink", || sink() > 0);
    let views = || -> Vec<Value> { dirs.iter().map(|d| vxlan(d)).collect() };
    let (before, s0) = (views(), sink());
    wait_until("the sink counts 100 more", || sink() >= s0 + 100);
    let after = views();
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert_eq!(a["flooded"], 0, "n{}: {a}", i + 1);
        assert_eq!(
            dropped(a, "no_remote"),
            dropped(b, "no_remote"),
            "n{}: {a}",
            i + 1
        );
        // n1 sends to n2 (b's version) and n3 (the exit); n2 back to n1
        // (the merger); n3 only takes.
        assert!(
            frames(a, "to_switch") > frames(b, "to_switch"),
            "n{}: {a}",
            i + 1
        );
        if i < 2 {
            assert!(
                frames(a, "to_vteps") > frames(b, "to_vteps"),
                "n{}: {a}",
                i + 1
            );
        }
    }
    assert_eq!(frames(&after[2], "to_vteps"), 0, "n3: {}", after[2]);
    let merged = count(n1, "xc-merge0", "nfp_merge.merged").expect("the merger answers");
    assert!(merged >= s0 + 100, "merged {merged}, sink {s0}");
    assert!(count(n1, "xc-b", "nf/c.count").expect("xc-b answers") > 0);

    // n2, which runs b, dies: b runs on n1, where its chain is, and the
    // sink counts again. Meanwhile the merger settles a's versions by its
    // bounded wait (drops): the sink counts nothing until b runs again.
    let s_kill = sink();
    let t0 = Instant::now();
    kill_n2();
    wait_until("the sink counts again", || sink() > s_kill + 20);
    let took = t0.elapsed();
    wait_until("b placed on n1", || {
        scheduler::placements(etcd)
            .expect("placements")
            .get("xc-b")
            .is_some_and(|n| n == "n1")
    });
    wait_until("b running on n1", || {
        let r = req(n1, None, "GET", "/v1/instances/xc-b", "");
        r.status == 200 && r.json()["state"] == "running"
    });
    let s1 = sink();
    wait_until("the sink counts 100 more after the failover", || {
        sink() >= s1 + 100
    });
    assert!(count(n1, "xc-b", "nf/c.count").expect("xc-b answers") > 0);
    let (v1, v3) = (vxlan(n1), vxlan(&dirs[2]));
    assert_eq!(v1["flooded"], 0, "{v1}");
    assert_eq!(v3["flooded"], 0, "{v3}");
    // A chain without --nodes: its instances (one group) on one node.
    let out = ok(
        n1,
        &[
            "chain",
            "apply",
            policy.to_str().expect("path"),
            "--out",
            SINK_MAC,
            "--name",
            "yc",
            "--chain",
            "2",
        ],
    );
    let placed = scheduler::placements(etcd).expect("placements");
    let on: Vec<&String> = ["yc-in", "yc-a", "yc-b", "yc-merge0"]
        .iter()
        .map(|i| &placed[*i])
        .collect();
    assert!(on.iter().all(|n| *n == on[0]), "{on:?}\n{out}");
    (s0, sink(), took)
}
