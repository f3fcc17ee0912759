//! A cluster of three "machines": three network namespaces joined by a
//! bridge, a daemon in each (entered with `nsenter --net`, so that it keeps
//! the host's cgroups), a three-member etcd on the bridge. A node's plain
//! API (`--listen`) is on its own namespace's loopback, which the others
//! cannot reach: calls forwarded between nodes go over TLS to each node's
//! `--cluster-listen` address, the certificate pinned by the fingerprint
//! the node published in etcd. Then 300 instances created through all
//! three nodes, a node killed with `kill -9`, and its instances running
//! again on the two left; and a forged fingerprint refused. Then, in
//! three namespaces of their own, nodes whose switches have VXLAN uplinks
//! on the bridge: a service chain across them, before and after a node's
//! death.
//!
//! ```text
//!   root ns: bridge 10.231.0.1/24, etcd members m0-m2 on it
//!     |-- veth -- ns n1: 10.231.0.2  pronto daemon --cluster-listen 10.231.0.2:0
//!     |-- veth -- ns n2: 10.231.0.3  ...
//!     '-- veth -- ns n3: 10.231.0.4  ...
//! ```
//!
//! Needs root, `ip`, `nsenter` and Debian's etcd-server; without them it
//! says so loudly and passes. CI runs it as root with them installed.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::cluster::{can_run, req, wait_until};
use common::netns::{have, must, sh};
use pronto_cluster::node;
use pronto_cluster::testing::Members;
use pronto_cluster::Etcd;

const NAMED: &str = "c :: Counter; s :: TimedSource(0.005s) -> c -> Discard;\n";
/// The 300: idle (a busy one each would be 60,000 timer wake-ups a
/// second on the test machine's two CPUs).
const IDLE: &str = "c :: Counter; Idle -> c -> Discard;\n";

/// The bridge, the namespaces and their veth pairs, removed when dropped.
struct Machines {
    bridge: String,
    ns: Vec<String>,
}

impl Machines {
    /// `n` namespaces on a bridge of network 10.`net`.0.0/24 (the bridge
    /// .1, namespace i .(i + 2)); `tag` (3 letters) names the bridge and
    /// the namespaces, so that two tests of one run keep apart.
    fn new(n: usize, tag: &str, net: u8) -> Machines {
        let pid = std::process::id();
        let bridge = format!("{tag}{}", pid % 100_000);
        let _ = sh(&["ip", "link", "del", &bridge]);
        must(&["ip", "link", "add", &bridge, "type", "bridge"]);
        must(&[
            "ip",
            "addr",
            "add",
            &format!("10.{net}.0.1/24"),
            "dev",
            &bridge,
        ]);
        must(&["ip", "link", "set", &bridge, "up"]);
        let mut m = Machines {
            bridge,
            ns: Vec::new(),
        };
        for i in 0..n {
            let ns = format!("{tag}{pid}-{i}");
            let host = format!("{}v{i}", m.bridge);
            let _ = sh(&["ip", "netns", "del", &ns]);
            must(&["ip", "netns", "add", &ns]);
            m.ns.push(ns.clone());
            must(&[
                "ip", "link", "add", &host, "type", "veth", "peer", "name", "e0", "netns", &ns,
            ]);
            must(&["ip", "link", "set", &host, "master", &m.bridge, "up"]);
            let addr = format!("10.{net}.0.{}/24", i + 2);
            must(&["ip", "-n", &ns, "addr", "add", &addr, "dev", "e0"]);
            must(&["ip", "-n", &ns, "link", "set", "e0", "up"]);
            must(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        }
        m
    }

    /// A script that runs pronto in namespace `i`'s network (nsenter
    /// --net: `ip netns exec` would hide the host's cgroup mounts).
    fn wrapper(&self, i: usize, dir: &Path) -> PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let w = dir.join("pronto-in-ns");
        std::fs::write(
            &w,
            format!(
                "#!/bin/sh\nexec nsenter --net=/run/netns/{} {} \"$@\"\n",
                self.ns[i],
                env!("CARGO_BIN_EXE_pronto")
            ),
        )
        .expect("wrapper");
        std::fs::set_permissions(&w, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        w
    }
}

impl Drop for Machines {
    fn drop(&mut self) {
        for ns in &self.ns {
            let _ = sh(&["ip", "netns", "del", ns]);
        }
        let _ = sh(&["ip", "link", "del", &self.bridge]);
    }
}

/// Where each instance runs, as `pronto ls` through node `dir` says, of
/// those running.
fn running(dir: &Path) -> BTreeMap<String, String> {
    common::cluster::ls(dir)
        .as_array()
        .expect("a list")
        .iter()
        .filter(|i| i["state"] == "running")
        .map(|i| {
            (
                i["name"].as_str().expect("name").to_string(),
                i["node"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

/// Waits (up to 5 minutes: hundreds of debug-built sandboxes on a shared
/// machine) until `f` holds.
fn settle(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed().as_secs() < 300, "timed out: {what}");
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// Three namespaces on a bridge of network 10.`net`.0.0/24, a
/// three-member etcd on the bridge, and a node's daemon in each namespace
/// (`--cluster-listen` on its address; with `vxlan`, its switch's VXLAN
/// uplink there too). Dropped in that order reversed: the daemons, etcd,
/// the namespaces.
struct Site {
    daemons: Vec<Option<common::Daemon>>,
    dirs: Vec<PathBuf>,
    etcd: Etcd,
    scratch: common::Scratch,
    _members: Members,
    _machines: Machines,
}

impl Site {
    /// Starts it, or says why `test` cannot run here (`None`).
    fn start(test: &str, tag: &str, net: u8, vxlan: bool) -> Option<Site> {
        if !can_run(test) {
            return None;
        }
        if !have("nsenter") {
            println!("SKIPPED {test}: nsenter (util-linux) not installed");
            return None;
        }
        let machines = Machines::new(3, tag, net);
        let members =
            Members::start_on(3, &format!("10.{net}.0.1")).expect("a three-member etcd starts");
        let url = members.endpoints();
        let etcd = Etcd::new(&url).expect("endpoints");
        let scratch = common::scratch(&format!("cluster-machines-{tag}"));
        let (mut daemons, mut dirs) = (Vec::new(), Vec::new());
        for (i, n) in ["n1", "n2", "n3"].iter().enumerate() {
            let dir = scratch.join(n);
            std::fs::create_dir_all(&dir).expect("dir");
            let at = format!("10.{net}.0.{}", i + 2);
            let listen = format!("{at}:0");
            let tunnel = format!("{at},vni=42");
            let mut args = vec![
                "--cluster",
                &url,
                "--node",
                n,
                "--cluster-ttl",
                "2",
                "--warm",
                "0",
                "--cluster-listen",
                &listen,
            ];
            if vxlan {
                args.extend(["--vxlan", &tunnel]);
            }
            let d = common::start_daemon_program(&dir, &machines.wrapper(i, &dir), &args);
            daemons.push(Some(d));
            dirs.push(dir);
        }
        wait_until("three nodes registered", || {
            node::nodes(&etcd).expect("nodes").len() == 3
        });
        Some(Site {
            daemons,
            dirs,
            etcd,
            scratch,
            _members: members,
            _machines: machines,
        })
    }
}

#[test]
fn nodes_in_three_namespaces_forward_over_tls_and_take_over_a_dead_nodes_300_instances() {
    let Some(mut site) = Site::start(
        "nodes_in_three_namespaces_forward_over_tls_and_take_over_a_dead_nodes_300_instances",
        "pcm",
        231,
        false,
    ) else {
        return;
    };
    let (etcd, scratch, dirs) = (&site.etcd, &site.scratch, site.dirs.clone());
    let names = ["n1", "n2", "n3"];

    // Each node published its TLS API on its namespace's address, with a
    // fingerprint; its plain API is on a loopback the others do not share.
    let nodes: BTreeMap<String, node::Node> = node::nodes(etcd)
        .expect("nodes")
        .into_iter()
        .map(|n| (n.name.clone(), n))
        .collect();
    for (i, n) in names.iter().enumerate() {
        let peer = nodes[*n].peer.as_ref().expect("a TLS API");
        assert!(
            peer.addr.starts_with(&format!("10.231.0.{}:", i + 2)),
            "{peer:?}"
        );
        assert_eq!(peer.sha256.len(), 64, "{peer:?}");
        assert!(nodes[*n]
            .api
            .as_deref()
            .is_some_and(|a| a.starts_with("127.0.0.1:")));
    }

    // An instance pinned to n2, written through n1 and read through n3:
    // both calls crossed namespaces over TLS.
    let body = serde_json::json!({"name": "h1", "config": NAMED, "node": "n2"}).to_string();
    let r = req(&dirs[0], None, "POST", "/v1/instances", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    // It set no memory limit: the node that took the create stored its
    // default (32 MiB), so that any node runs it with the limit it was
    // placed by.
    let kv = etcd
        .get(&pronto_cluster::scheduler::instance_key("h1"))
        .expect("etcd")
        .expect("h1 stored");
    let spec: serde_json::Value = serde_json::from_slice(&kv.value).expect("JSON");
    assert_eq!(
        (
            spec["memory"].as_u64(),
            spec["memory_mib"].as_u64(),
            spec["node"].as_str()
        ),
        (Some(32 << 20), Some(32), Some("n2"))
    );
    wait_until("h1 runs on n2", || {
        running(&dirs[0]).get("h1").map(String::as_str) == Some("n2")
    });
    let r = req(
        &dirs[0],
        None,
        "PUT",
        "/v1/instances/h1/handlers/s.data",
        "hello",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = req(
        &dirs[2],
        None,
        "GET",
        "/v1/instances/h1/handlers/s.data",
        "",
    );
    assert_eq!((r.status, r.text().as_str()), (200, "hello"));

    // A capture of an instance's interface on n2, asked of n1: streamed
    // from n2 through n1 (over TLS) into the file, pcapng tcpdump reads.
    let body = serde_json::json!({"name": "cap1", "node": "n2",
        "config": "FromDevice(eth0) -> Discard; TimedSource(0.01s) -> Queue(8) -> ToDevice(eth0);",
        "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0c:01"}]})
    .to_string();
    let r = req(&dirs[0], None, "POST", "/v1/instances", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let file = scratch.join("cap1.pcapng");
    let f = file.to_str().expect("path");
    let (took, _, err) = common::cluster::cli(
        &dirs[0],
        &[
            "capture",
            "cap1:eth0",
            "-w",
            f,
            "--count",
            "3",
            "--direction",
            "out",
        ],
    );
    assert!(took, "{err}");
    assert_eq!(err, format!("3 frames written to {f}\n"));
    if let Some(text) = common::tcpdump(&file) {
        // One line per frame (TimedSource's text is no protocol tcpdump
        // knows: it adds the bytes in hex, indented).
        let frames = text.lines().filter(|l| !l.starts_with(char::is_whitespace));
        assert_eq!(frames.count(), 3, "{text}");
    }
    let (took, _, err) = common::cluster::cli(&dirs[2], &["capture", "cap1:eth9", "-w", f]);
    assert!(!took);
    assert_eq!(
        err,
        "pronto capture: cap1 has no interface `eth9` (it has: eth0)\n"
    );

    // 300 instances of one tenant through the three nodes in turn.
    let r = req(&dirs[0], None, "POST", "/v1/tenants", r#"{"name":"acme"}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = req(
        &dirs[1],
        None,
        "PUT",
        "/v1/tenants/acme/quota",
        r#"{"instances": 400, "memory": "8G", "cpu": 400}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let t = Instant::now();
    std::thread::scope(|s| {
        for (n, d) in dirs.iter().enumerate() {
            s.spawn(move || {
                for k in (n..300).step_by(3) {
                    let body = serde_json::json!({"name": format!("i{k}"), "tenant": "acme",
                                                  "config": IDLE, "memory": "8M"})
                    .to_string();
                    let r = req(d, None, "POST", "/v1/instances", &body);
                    assert_eq!(r.status, 201, "i{k}: {}", r.text());
                }
            });
        }
    });
    settle("302 instances running", || running(&dirs[1]).len() == 302);
    println!(
        "300 instances created and running in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let before = running(&dirs[1]);
    let on_n3: Vec<String> = before
        .iter()
        .filter(|(_, n)| *n == "n3")
        .map(|(i, _)| i.clone())
        .collect();
    assert!(
        on_n3.len() >= 50,
        "placement spreads them: {} on n3",
        on_n3.len()
    );

    // n3 killed: its instances run again on n1 and n2.
    let t = Instant::now();
    site.daemons[2].take().expect("n3 runs").kill9();
    settle("n3's instances running on n1 and n2", || {
        let now = running(&dirs[0]);
        now.len() == 302 && now.values().all(|n| n != "n3")
    });
    println!(
        "{} instances of the killed node running elsewhere {:.1} s after kill -9 (lease 2 s)",
        on_n3.len(),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(running(&dirs[1]).get("h1").map(String::as_str), Some("n2"));

    // A forged fingerprint for n2 (as if someone answered in its place):
    // the forwarded call is refused, naming the mismatch.
    let key = format!("{}nodes/n2", node::ROOT);
    let kv = etcd
        .get(key.as_bytes())
        .expect("etcd")
        .expect("n2's record");
    let mut v: serde_json::Value = serde_json::from_slice(&kv.value).expect("JSON");
    v["peer_api"]["sha256"] = serde_json::Value::String("00".repeat(32));
    etcd.put(key.as_bytes(), v.to_string().as_bytes(), kv.lease)
        .expect("put");
    let r = req(
        &dirs[0],
        None,
        "GET",
        "/v1/instances/h1/handlers/s.data",
        "",
    );
    assert_eq!(r.status, 503, "{}", r.text());
    let msg = r.error(503, None);
    assert!(
        msg.contains("node `n2`") && msg.contains("is not the one it published in etcd"),
        "{msg}"
    );
}

/// A service chain across the three namespaces
/// ([`common::cluster::chain_across_nodes`]): each node's switch has a
/// VXLAN uplink on its namespace's address on the bridge, the chain
/// applied through n1 with `--nodes n1,n2`, a source on n1, a sink on n3;
/// frames cross the bridge between namespaces, nothing flooded, and again
/// after n2, which runs one of the NFs, is killed.
#[test]
fn a_chain_across_three_namespaces_forwards_over_vxlan_and_follows_a_failover() {
    let Some(mut site) = Site::start(
        "a_chain_across_three_namespaces_forwards_over_vxlan_and_follows_a_failover",
        "pcx",
        232,
        true,
    ) else {
        return;
    };
    let (etcd, scratch, dirs) = (&site.etcd, &site.scratch, site.dirs.clone());
    let (before, after, took) = common::cluster::chain_across_nodes(etcd, scratch, &dirs, || {
        site.daemons[1].take().expect("n2 runs").kill9()
    });
    println!(
        "chain across namespaces n1 and n2, sink on n3: {before} frames before, {after} after \
         b moved to n1; the sink counted again {} ms after kill -9 (lease 2 s)",
        took.as_millis()
    );
}
