//! Cluster-wide tenants for real: a real etcd and three daemons (nodes
//! n1, n2, n3). A tenant created through n1 is stored in etcd
//! (`tenants/NAME`, its token's digest) and its token works on n2 and n3;
//! its quota, set through one node, holds across the cluster (the third
//! instance of a tenant allowed two is refused through a third node);
//! deleting the tenant through n3 makes its token fail on n1.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::api::{call_with, Reply, To};
use pronto_cluster::{testing, Etcd};

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(60), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start(dir: &Path, name: &str, etcd: &str) -> common::Daemon {
    common::start_daemon_with(
        dir,
        &[
            "--cluster",
            etcd,
            "--node",
            name,
            "--cluster-ttl",
            "2",
            "--warm",
            "0",
        ],
    )
}

/// `method path` on node `dir`'s socket, as the admin (`token` None) or
/// with a token.
fn req(dir: &Path, token: Option<&str>, method: &str, path: &str, body: &str) -> Reply {
    let sock = dir.join("sock");
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    call_with(&To::Unix(&sock), method, path, &headers, body.as_bytes())
}

const COUNTING: &str = "c :: Counter; TimedSource(0.005s) -> c -> Discard;\n";

#[test]
fn tenants_tokens_and_quotas_hold_across_the_cluster() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIPPED tenants_tokens_and_quotas_hold_across_the_cluster: sandboxes need root");
        return;
    }
    if !testing::have_etcd() {
        return;
    }
    let members = testing::Members::start(1).expect("etcd starts");
    let url = members.endpoints();
    let etcd = Etcd::new(&url).expect("endpoint");
    let scratch = common::scratch("cluster-tenants");
    let dirs: Vec<_> = ["n1", "n2", "n3"]
        .iter()
        .map(|n| {
            let d = scratch.join(n);
            std::fs::create_dir_all(&d).expect("dir");
            d
        })
        .collect();
    let _daemons: Vec<_> = ["n1", "n2", "n3"]
        .iter()
        .zip(&dirs)
        .map(|(n, d)| start(d, n, &url))
        .collect();
    let (a, b, c) = (&dirs[0], &dirs[1], &dirs[2]);

    // Created through n1: stored in etcd with the token's digest, not the
    // token.
    let r = req(a, None, "POST", "/v1/tenants", r#"{"name":"acme"}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let token = r.json()["token"].as_str().expect("token").to_string();
    let kv = etcd
        .get(b"/pronto/v1/tenants/acme")
        .expect("etcd")
        .expect("tenants/acme is stored");
    let stored: serde_json::Value = serde_json::from_slice(&kv.value).expect("JSON");
    assert_eq!(
        stored["digest"].as_str(),
        Some(pronto_daemon::api::digest(&token).as_str())
    );
    assert!(!String::from_utf8_lossy(&kv.value).contains(&token));

    // A duplicate, through another node: 409.
    let msg = req(b, None, "POST", "/v1/tenants", r#"{"name":"acme"}"#).error(409, Some("name"));
    assert_eq!(msg, "tenant `acme` already exists");

    // The token works on n2 and n3 (within a watch delay).
    for d in [b, c] {
        wait_until("the token works on every node", || {
            req(d, Some(&token), "GET", "/v1/instances", "").status == 200
        });
    }
    assert_eq!(
        req(b, Some("not-a-token"), "GET", "/v1/instances", "").status,
        401
    );

    // Its quota of 2 instances, set through n2, holds across the cluster.
    let r = req(
        b,
        None,
        "PUT",
        "/v1/tenants/acme/quota",
        r#"{"instances":2}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["quota"]["instances"], 2);
    for d in [a, b, c] {
        wait_until("every node has the quota", || {
            req(d, Some(&token), "GET", "/v1/tenants/acme/quota", "").json()["quota"]["instances"]
                == 2
        });
    }
    let body = |name: &str| serde_json::json!({"name": name, "config": COUNTING}).to_string();
    let r = req(a, Some(&token), "POST", "/v1/instances", &body("q1"));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = req(b, Some(&token), "POST", "/v1/instances", &body("q2"));
    assert_eq!(r.status, 201, "{}", r.text());
    let msg =
        req(c, Some(&token), "POST", "/v1/instances", &body("q3")).error(403, Some("instances"));
    assert_eq!(
        msg,
        "tenant `acme` has 2 instances in the cluster, as many as its quota allows; remove one \
         or ask the admin to raise it"
    );
    assert!(etcd
        .get(b"/pronto/v1/instances/q3")
        .expect("etcd")
        .is_none());

    // Deleting it is refused while it has instances; then done through n3,
    // its token fails on n1.
    let msg = req(c, None, "DELETE", "/v1/tenants/acme", "").error(409, None);
    assert_eq!(
        msg,
        "tenant `acme` still has instances in the cluster: remove them first"
    );
    for n in ["q1", "q2"] {
        let r = req(c, Some(&token), "DELETE", &format!("/v1/instances/{n}"), "");
        assert!(r.status == 204 || r.status == 200, "{}", r.text());
    }
    let r = req(c, None, "DELETE", "/v1/tenants/acme", "");
    assert_eq!(r.status, 204, "{}", r.text());
    wait_until("the deleted tenant's token fails on n1", || {
        req(a, Some(&token), "GET", "/v1/instances", "").status == 401
    });
    let msg = req(a, None, "DELETE", "/v1/tenants/acme", "").error(404, None);
    assert_eq!(msg, "no tenant `acme`");
}
