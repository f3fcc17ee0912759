//! A reconfiguration whose building needs more memory than the instance
//! has is refused without touching the running configuration: the
//! candidate is built first in a separate sandbox under what the instance
//! has left, and the daemon itself never expands a tenant's configuration.

mod common;

use std::time::{Duration, Instant};

use common::api::{self, To};
use serde_json::json;

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

const COUNTING: &str = "c :: Counter; TimedSource(0.005s) -> c -> q :: Queue(100) -> Idle;\n";

/// `define`s that each repeat the one before four times: the last is
/// 16 * 4^12 bytes (256 MiB), about 340 MiB in all once expanded, from
/// about 300 bytes of text.
fn define_bomb() -> String {
    let mut d = vec!["$a0 XXXXXXXXXXXXXXXX".to_string()];
    for i in 1..=12 {
        let p = format!("$a{}", i - 1);
        d.push(format!("$a{i} {p}{p}{p}{p}"));
    }
    format!("define({});\n", d.join(", "))
}

#[test]
fn a_reconfiguration_too_big_to_build_leaves_the_running_one_alone() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED a_reconfiguration_too_big_to_build_leaves_the_running_one_alone: sandboxes need root");
        return;
    }
    let dir = common::scratch("reconfig-memory");
    let d = common::start_daemon(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let r = api::call(
        &unix,
        "POST",
        "/v1/instances",
        json!({"name": "big", "config": COUNTING, "memory": "48M"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let pid = r.json()["pid"].as_u64().expect("pid");
    let count = || -> u64 {
        let r = api::call(&unix, "GET", "/v1/instances/big/handlers/c.count", b"");
        assert_eq!(r.status, 200, "{}", r.text());
        r.text().trim().parse().expect("a count")
    };
    wait_until("the instance counts", || count() > 3);
    let (_, peak0) = api::rss(d.pid());

    let tables = format!(
        "{COUNTING}r1 :: DirectIPLookup(0.0.0.0/0 0); r2 :: DirectIPLookup(0.0.0.0/0 0);\n\
         Idle -> r1 -> Discard; Idle -> r2 -> Discard;\n"
    );
    // The word ControlSocket in a comment once made the daemon expand the
    // configuration itself, to find the sockets to open.
    let bomb = format!("{}{COUNTING}// ControlSocket\n", define_bomb());
    for (what, config) in [
        ("two route tables of 48 MiB", tables),
        ("a define bomb", bomb),
    ] {
        let before = count();
        let r = api::call(
            &unix,
            "PUT",
            "/v1/instances/big/config",
            json!({ "config": config }).to_string().as_bytes(),
        );
        let msg = r.error(400, Some("config"));
        if what.starts_with("two route") {
            assert!(
                msg.starts_with(
                    "config: building this configuration needs more memory than instance `big` \
                     has left under its limit of 50331648 bytes"
                ),
                "{what}: {msg}"
            );
        }
        let v = api::call(&unix, "GET", "/v1/instances/big", b"").json();
        assert_eq!(v["state"], "running", "{what}: {v}");
        assert_eq!(
            v["pid"].as_u64(),
            Some(pid),
            "{what}: the instance was replaced: {v}"
        );
        assert_eq!(v["restarts"], 0, "{what}: {v}");
        assert_eq!(v["config"], COUNTING, "{what}");
        // Still the same router: its counter went on from where it was.
        wait_until("it keeps counting", || count() > before);
    }
    let (_, peak1) = api::rss(d.pid());
    assert!(
        peak1 < peak0 + (64 << 20),
        "the daemon's peak memory grew from {peak0} to {peak1} bytes"
    );

    // A configuration that fits is taken, with the old one's state.
    wait_until("packets queue", || {
        api::call(&unix, "GET", "/v1/instances/big/handlers/q.length", b"")
            .text()
            .trim()
            != "0"
    });
    let next = "c :: Counter; TimedSource(0.005s) -> c -> q :: Queue(100) -> Idle;\n\
                r1 :: DirectIPLookup(10.0.0.0/8 0); Idle -> r1 -> Discard;\n";
    let r = api::call(
        &unix,
        "PUT",
        "/v1/instances/big/config",
        json!({ "config": next }).to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let took = r.json()["took_state"].clone();
    assert!(
        took.as_array().is_some_and(|a| a
            .iter()
            .any(|t| t.as_str().is_some_and(|t| t.starts_with("q (")))),
        "{took}"
    );
    let v = api::call(&unix, "GET", "/v1/instances/big", b"").json();
    assert_eq!(v["pid"].as_u64(), Some(pid), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
