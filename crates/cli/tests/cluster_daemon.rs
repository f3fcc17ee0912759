//! `pronto daemon --cluster` for real: a real etcd (Debian's
//! `etcd-server`) and three daemons on this machine, each a node with its
//! own state directory and API socket. Instances created through one node
//! run on the nodes `placements/` names (their counters count there); a
//! node killed with `kill -9` has its instances started on the others; the
//! killed node, started again under its name, runs none of them (it
//! follows its assignments, not its local store), and takes new ones.
//! Deletes and reconfigurations through any node reach the node that runs
//! the instance. With etcd gone, the nodes keep running what they run,
//! refuse changes and say so.
//!
//! The three daemons share the machine without clashing: each has its own
//! switch, its own cgroup directory (`pronto/prontod-PID`), socket and
//! state; no network namespaces are needed.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::{
    can_run, cli, count, cpu_file_for, cpu_weight_file, ls, ok, ports, req, wait_until, Cluster,
};
use pronto_cluster::scheduler;

const COUNTING: &str = "c :: Counter; TimedSource(0.005s) -> c -> Discard;\n";
const COUNTING_D: &str = "d :: Counter; TimedSource(0.005s) -> d -> Discard;\n";
const FROM_ETH0: &str = "FromDevice(eth0) -> c :: Counter -> Discard;\n";

#[test]
fn instances_run_where_placed_and_move_when_their_node_dies() {
    if !can_run("instances_run_where_placed_and_move_when_their_node_dies") {
        return;
    }
    let mut cl = Cluster::start("cluster-daemon", &["n1", "n2", "n3"]);
    let config = cl.scratch.join("c.click");
    std::fs::write(&config, COUNTING).expect("write");
    let config_d = cl.scratch.join("d.click");
    std::fs::write(&config_d, COUNTING_D).expect("write");
    let cfg = config.to_str().expect("path");
    let dirs = cl.dirs();
    assert_eq!(cl.live().len(), 3);

    // Six instances created through n1: each runs on the node placed.
    let names: Vec<String> = (1..=6).map(|i| format!("fw{i}")).collect();
    for n in &names {
        let out = ok(&dirs[0], &["create", n, "--config", cfg, "--mem", "16M"]);
        assert!(
            out.starts_with(&format!("created {n} (tenant default) on node n")),
            "{out}"
        );
        assert!(out.ends_with(": running\n"), "{out}");
    }
    // A configuration that does not build: its node's diagnostics, and
    // nothing left in the cluster.
    let bad = cl.scratch.join("bad.click");
    std::fs::write(&bad, "c :: Counter; Nope -> c;\n").expect("write");
    let (made, _, err) = cli(
        &dirs[1],
        &["create", "bad", "--config", bad.to_str().expect("path")],
    );
    assert!(!made);
    assert!(err.contains("unknown element class 'Nope'"), "{err}");
    assert!(err.contains("config:1:15"), "{err}");
    wait_until("nothing left of a failed create", || {
        cl.etcd
            .get(&scheduler::instance_key("bad"))
            .expect("get")
            .is_none()
            && !scheduler::placements(&cl.etcd)
                .expect("placements")
                .contains_key("bad")
    });
    let (dup, _, err) = cli(&dirs[1], &["create", "fw1", "--config", cfg]);
    assert!(!dup);
    assert_eq!(
        err,
        "pronto create: instance `fw1` already exists in the cluster (instance names are \
         unique across the cluster's tenants)\n"
    );
    let placed: BTreeMap<String, String> = scheduler::placements(&cl.etcd)
        .expect("placements")
        .into_iter()
        .collect();
    assert_eq!(placed.keys().cloned().collect::<Vec<_>>(), names);
    // A tenant's instances are spread: every node has some.
    let used: BTreeSet<&String> = placed.values().collect();
    assert_eq!(used.len(), 3, "{placed:?}");
    for (n, at) in &placed {
        let d = cl.dir_of(at);
        wait_until(&format!("{n} counts on {at}"), || {
            count(&d, n, "c.count").is_some_and(|c| c > 0)
        });
        for other in cl.nodes.iter().filter(|x| &x.name != at) {
            // Not run there (no report under its name)...
            let key = format!("/pronto/v1/status/{}/{n}", other.name);
            assert_eq!(
                cl.etcd.get(key.as_bytes()).expect("etcd"),
                None,
                "{n} also on {}",
                other.name
            );
            // ...but its handlers answer through it (forwarded to `at`).
            assert!(
                count(&other.dir, n, "c.count").is_some_and(|c| c > 0),
                "{n} through {}",
                other.name
            );
        }
    }
    // Any node lists every instance with its node.
    let v = ls(&dirs[1]);
    let listed: BTreeMap<String, String> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|i| {
            assert_eq!(i["state"], "running", "{i}");
            (
                i["name"].as_str().expect("name").to_string(),
                i["node"].as_str().expect("node").to_string(),
            )
        })
        .collect();
    assert_eq!(listed, placed);
    let table = ok(&dirs[2], &["ls"]);
    assert!(table.starts_with("NAME  TENANT   STATE    NODE"), "{table}");

    // Health says which node answers, and that etcd does.
    let o = Command::new("curl")
        .args(["-s", "--unix-socket"])
        .arg(dirs[1].join("sock"))
        .arg("http://localhost/v1/health")
        .output()
        .expect("curl");
    let h: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(
        h["cluster"],
        serde_json::json!({"node": "n2", "etcd": "ok", "keepalives_failing": 0,
                           "registrations_renewed": 0})
    );

    // kill -9 a node: its instances come up on the others.
    let victim = cl.nodes[2].name.clone();
    let moved: Vec<String> = placed
        .iter()
        .filter(|(_, at)| **at == victim)
        .map(|(n, _)| n.clone())
        .collect();
    assert!(!moved.is_empty());
    cl.kill9(2);
    wait_until("the killed node's lease expires", || {
        !cl.live().contains(&victim)
    });
    for n in &moved {
        let mut at = String::new();
        wait_until(&format!("{n} placed again"), || {
            at = scheduler::placements(&cl.etcd)
                .expect("placements")
                .get(n)
                .cloned()
                .unwrap_or_default();
            !at.is_empty() && at != victim
        });
        let d = cl.dir_of(&at);
        wait_until(&format!("{n} counts on {at}"), || {
            count(&d, n, "c.count").is_some_and(|c| c > 0)
        });
    }
    // What did not run on the dead node did not move.
    let after = scheduler::placements(&cl.etcd).expect("placements");
    for (n, at) in &placed {
        if *at != victim {
            assert_eq!(after.get(n), Some(at), "{n} moved");
        }
    }

    // The killed node comes back under its name: it runs none of what
    // moved away (its local store is not followed), then takes new work.
    cl.restart(2);
    wait_until("the node registers again", || cl.live().contains(&victim));
    std::thread::sleep(Duration::from_millis(500));
    for n in &names {
        let key = format!("/pronto/v1/status/{victim}/{n}");
        assert_eq!(
            cl.etcd.get(key.as_bytes()).expect("etcd"),
            None,
            "{n} runs twice"
        );
    }
    assert_eq!(scheduler::placements(&cl.etcd).expect("placements"), after);
    let out = ok(&dirs[0], &["create", "fw7", "--config", cfg]);
    assert!(
        out.starts_with(&format!("created fw7 (tenant default) on node {victim}")),
        "{out}"
    );
    wait_until("fw7 counts on the node that came back", || {
        count(&dirs[2], "fw7", "c.count").is_some_and(|c| c > 0)
    });

    // A reconfiguration and a delete through n2 reach the node that runs
    // the instance.
    let at = after.get("fw1").expect("fw1 placed").clone();
    let d = cl.dir_of(&at);
    ok(
        &dirs[1],
        &["config", "fw1", config_d.to_str().expect("path")],
    );
    wait_until("fw1 takes its new configuration", || {
        count(&d, "fw1", "d.count").is_some_and(|c| c > 0)
    });
    ok(&dirs[1], &["rm", "fw1"]);
    wait_until("fw1 stops on its node", || {
        count(&d, "fw1", "d.count").is_none()
    });
    assert!(!scheduler::placements(&cl.etcd)
        .expect("placements")
        .contains_key("fw1"));
    let (gone, _, err) = cli(&dirs[0], &["rm", "fw1"]);
    assert!(!gone);
    assert_eq!(err, "pronto rm: no instance `fw1`\n");

    // etcd gone: every node keeps running what it runs, refuses changes,
    // and says so.
    cl.members.kill(0);
    let health = |dir: &Path| -> serde_json::Value {
        let o = Command::new("curl")
            .args(["-s", "--unix-socket"])
            .arg(dir.join("sock"))
            .arg("http://localhost/v1/health")
            .output()
            .expect("curl");
        serde_json::from_slice(&o.stdout).expect("JSON")
    };
    wait_until("health says etcd is unreachable", || {
        health(&dirs[0])["cluster"]["etcd"] == "unreachable"
    });
    let (made, _, err) = cli(&dirs[0], &["create", "fw8", "--config", cfg]);
    assert!(!made);
    assert!(
        err.starts_with(
            "pronto create: the cluster's store (etcd) did not answer: etcd unavailable"
        ),
        "{err}"
    );
    assert!(
        err.contains("the cluster is read-only until it does"),
        "{err}"
    );
    for (n, at) in &after {
        if n != "fw1" {
            let d = cl.dir_of(at);
            let c0 = count(&d, n, "c.count").expect("still running");
            wait_until(&format!("{n} still counts on {at}"), || {
                count(&d, n, "c.count").is_some_and(|c| c > c0)
            });
        }
    }
}

/// An instance's weight and rate limit are desired state: set through a
/// node that does not run the instance, they are stored in etcd, applied
/// by the node that runs it to the running sandbox (its cgroup's CPU
/// weight, its switch port's weight and rate limit; the same process),
/// shown by every node, and applied again by the node the instance moves
/// to when its node dies. A tenant's cap (weight 100) holds on every node.
#[test]
fn weight_and_rate_limit_are_desired_state_applied_by_the_node_that_runs_it() {
    if !can_run("weight_and_rate_limit_are_desired_state_applied_by_the_node_that_runs_it") {
        return;
    }
    let mut cl = Cluster::start("cluster-weight", &["n1", "n2", "n3"]);
    let dirs = cl.dirs();
    let r = req(&dirs[0], None, "POST", "/v1/tenants", r#"{"name":"tl"}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let token = r.json()["token"].as_str().expect("token").to_string();
    for d in &dirs {
        wait_until("the token works on every node", || {
            req(d, Some(&token), "GET", "/v1/instances", "").status == 200
        });
    }
    let body = serde_json::json!({"name": "fw", "config": FROM_ETH0,
        "interfaces": [{"name": "eth0"}]});
    let r = req(
        &dirs[0],
        Some(&token),
        "POST",
        "/v1/instances",
        &body.to_string(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let owner = r.json()["node"].as_str().expect("its node").to_string();
    let b = cl.index(&owner);
    let (a, c) = match b {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    };
    let on_owner = |dir: &Path| req(dir, Some(&token), "GET", "/v1/instances/fw", "").json();
    let pid = on_owner(&dirs[b])["pid"].as_u64().expect("pid");
    assert_eq!(cpu_weight_file(pid), cpu_file_for(100));
    let key = scheduler::instance_key("fw");
    let stored = || -> serde_json::Value {
        let kv = cl.etcd.get(&key).expect("etcd").expect("stored");
        serde_json::from_slice(&kv.value).expect("JSON")
    };

    // A tenant may not raise its instance's weight past 100, through any
    // node; nothing is stored.
    for d in &dirs {
        let msg = req(
            d,
            Some(&token),
            "PUT",
            "/v1/instances/fw/weight",
            r#"{"weight": 300}"#,
        )
        .error(403, Some("weight"));
        assert_eq!(
            msg,
            "weight: 300 is more than a tenant may give its own instances (100, the default); \
             tenant `tl` may lower its instances' weight, the admin raises it"
        );
    }
    assert!(stored()["weight"].is_null(), "{}", stored());

    // The tenant lowers it through a node that does not run it: stored,
    // and applied by the owner (same process) before the answer.
    let r = req(
        &dirs[a],
        Some(&token),
        "PUT",
        "/v1/instances/fw/weight",
        r#"{"weight": 40}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        (r.json()["weight"].clone(), r.json()["node"].clone()),
        (40.into(), owner.clone().into())
    );
    assert_eq!(stored()["weight"], 40);
    assert_eq!(cpu_weight_file(pid), cpu_file_for(40));
    assert_eq!(ports(&dirs[b])["tl/fw/eth0"]["weight"], 40);

    // The admin raises it through another; and limits its rate.
    let r = req(
        &dirs[c],
        None,
        "PUT",
        "/v1/instances/fw/weight?tenant=tl",
        r#"{"weight": 700}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["weight"], 700);
    let r = req(
        &dirs[a],
        None,
        "PUT",
        "/v1/instances/fw/rate_limit?tenant=tl",
        r#"{"rate_limit": "100kpps"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["rate_limit"], serde_json::json!({"pps": 100_000}));
    let v = on_owner(&dirs[b]);
    assert_eq!(
        (v["pid"].as_u64(), v["weight"].as_u64()),
        (Some(pid), Some(700))
    );
    assert_eq!(cpu_weight_file(pid), cpu_file_for(700));
    let p = &ports(&dirs[b])["tl/fw/eth0"];
    assert_eq!(
        (p["weight"].clone(), p["rate_limit"].clone()),
        (700.into(), serde_json::json!({"pps": 100_000}))
    );
    // Every node shows them.
    for d in &dirs {
        let v = on_owner(d);
        assert_eq!(
            (v["node"].as_str(), v["weight"].as_u64()),
            (Some(owner.as_str()), Some(700)),
            "{v}"
        );
        assert_eq!(v["rate_limit"], serde_json::json!({"pps": 100_000}), "{v}");
    }
    // A tenant may not lift its rate limit, on any node.
    let r = req(
        &dirs[a],
        Some(&token),
        "PUT",
        "/v1/instances/fw/rate_limit",
        r#"{"rate_limit": null}"#,
    );
    assert_eq!(r.status, 403, "{}", r.text());

    // The owner killed: the node the instance moves to starts it with
    // the same weight and rate limit.
    cl.kill9(b);
    let mut to = String::new();
    wait_until("fw runs on another node", || {
        to = scheduler::placements(&cl.etcd)
            .expect("placements")
            .get("fw")
            .cloned()
            .unwrap_or_default();
        !to.is_empty()
            && to != owner
            && on_owner(&cl.dir_of(&to))["pid"]
                .as_u64()
                .is_some_and(|p| p != 0)
    });
    let d = cl.dir_of(&to);
    let v = on_owner(&d);
    assert_eq!(
        (v["state"].as_str(), v["weight"].as_u64()),
        (Some("running"), Some(700)),
        "{v}"
    );
    assert_eq!(
        cpu_weight_file(v["pid"].as_u64().expect("pid")),
        cpu_file_for(700)
    );
    let p = &ports(&d)["tl/fw/eth0"];
    assert_eq!(
        (p["weight"].clone(), p["rate_limit"].clone()),
        (700.into(), serde_json::json!({"pps": 100_000}))
    );
}

/// The failover time, measured (docs/benchmarks.md, the cluster
/// section): three nodes, one instance; its node's daemon killed with
/// `kill -9`, the time until the instance answers a handler read on the
/// node it moved to; the killed node started again before the next trial.
/// `cargo test -p pronto-cli --test cluster_daemon -- --ignored
/// --nocapture` (prints the figures; asserts nothing about time).
#[test]
#[ignore = "a measurement: run with --ignored --nocapture"]
fn failover_time() {
    if !can_run("failover_time") {
        return;
    }
    let trials: usize = std::env::var("TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(10);
    let mut cl = Cluster::start("cluster-failover", &["n1", "n2", "n3"]);
    let config = cl.scratch.join("c.click");
    std::fs::write(&config, COUNTING).expect("write");
    ok(
        &cl.nodes[0].dir,
        &["create", "fw", "--config", config.to_str().expect("path")],
    );
    let mut took = Vec::new();
    for _ in 0..trials {
        let at = scheduler::placements(&cl.etcd).expect("placements")["fw"].clone();
        let i = cl.index(&at);
        let t0 = Instant::now();
        cl.kill9(i);
        let mut to = None;
        while to.is_none() {
            let now = scheduler::placements(&cl.etcd).expect("placements");
            if let Some(n) = now.get("fw").filter(|n| **n != at) {
                let d = cl.dir_of(n);
                if count(&d, "fw", "c.count").is_some() {
                    to = Some(n.clone());
                }
            }
            assert!(t0.elapsed() < Duration::from_secs(60), "no failover");
        }
        let ms = t0.elapsed().as_secs_f64() * 1000.0;
        println!(
            "trial: {at} killed, fw answering on {} after {ms:.0} ms",
            to.expect("node")
        );
        took.push(ms);
        cl.restart(i);
        wait_until("the node registers again", || cl.live().contains(&at));
    }
    took.sort_by(f64::total_cmp);
    println!(
        "failover over {trials} trials: p50 {:.0} ms, max {:.0} ms (lease TTL 2 s)",
        took[took.len() / 2],
        took[took.len() - 1]
    );
}
