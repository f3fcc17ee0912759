//! An operator on another machine: the CLI (`--url https://...
//! --fingerprint SHA256`) and the Python client (`fingerprint=`) against a
//! node's `--cluster-listen` address over TLS, the node's self-signed
//! certificate pinned by the fingerprint `pronto cluster nodes` shows; a
//! wrong fingerprint refused before anything is sent; the certificate kept
//! across a restart of the node, so the pin holds.

mod common;

use std::process::Command;

use common::cluster::{can_run, Cluster};
use pronto_cluster::node;

const COUNTING: &str = "c :: Counter; TimedSource(0.005s) -> c -> Discard;\n";

/// `pronto ARGS` with no daemon address from the environment: (success,
/// stdout, stderr).
fn pronto(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(args)
        .env_remove("PRONTO_URL")
        .env_remove("PRONTO_TOKEN")
        .env_remove("PRONTO_FINGERPRINT")
        .env_remove("PRONTO_SOCKET")
        .output()
        .expect("pronto runs");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs `code` with the Python client importable: (success, stdout,
/// stderr).
fn python(code: &str) -> (bool, String, String) {
    let o = Command::new("python3")
        .args(["-c", code])
        .env("PYTHONPATH", common::root().join("python"))
        .env_remove("PRONTO_FINGERPRINT")
        .output()
        .expect("python3 runs");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn operators_reach_a_node_over_tls_with_its_certificate_pinned() {
    if !can_run("operators_reach_a_node_over_tls_with_its_certificate_pinned") {
        return;
    }
    let mut cl = Cluster::start_with("cluster-tls", &["n1"], |_| {
        vec!["--cluster-listen".into(), "127.0.0.1:0".into()]
    });
    let dir = cl.dir_of("n1");
    let admin = std::fs::read_to_string(dir.join("state/admin.token")).expect("admin token");
    let admin = admin.trim();
    let peer = node::nodes(&cl.etcd).expect("nodes")[0]
        .peer
        .clone()
        .expect("n1 publishes its TLS API");
    let url = format!("https://{}", peer.addr);
    // What the operator reads: the daemon's first lines and the node list.
    // The node is in etcd once it serves, which can be before the daemon's
    // line has reached the log the test reads: wait for the line.
    let line = format!("cluster API on {url} (certificate SHA-256 {})", peer.sha256);
    let daemon_log = || {
        cl.nodes[0]
            .daemon
            .as_ref()
            .expect("running")
            .log
            .lock()
            .expect("log")
            .clone()
    };
    common::cluster::wait_until(&format!("the daemon's log says `{line}`"), || {
        daemon_log().contains(&line)
    });
    let (good, out, err) = pronto(&["--json", "cluster", "nodes", "--etcd", &cl.url]);
    assert!(good, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v[0]["api"], url.as_str());
    assert_eq!(v[0]["sha256"], peer.sha256.as_str());

    // The CLI over TLS, the fingerprint pinned (given with colons and in
    // capitals, as some tools print it).
    let config = cl.scratch.join("c.click");
    std::fs::write(&config, COUNTING).expect("write");
    let shouted = peer
        .sha256
        .as_bytes()
        .chunks(2)
        .map(|c| String::from_utf8_lossy(c).to_uppercase())
        .collect::<Vec<_>>()
        .join(":");
    let over = |fp: &str, rest: &[&str]| {
        let mut a = vec!["--url", &url, "--fingerprint", fp, "--token", admin];
        a.extend_from_slice(rest);
        pronto(&a)
    };
    let cfg = config.to_str().expect("path");
    let (good, out, err) = over(&shouted, &["create", "fw1", "--config", cfg]);
    assert!(good, "{err}");
    assert_eq!(out, "created fw1 (tenant default) on node n1: running\n");
    let (good, out, err) = over(&peer.sha256, &["ls", "--json"]);
    assert!(good, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v[0]["name"], "fw1");
    assert_eq!(v[0]["node"], "n1");
    common::cluster::wait_until("fw1 counts, read over TLS", || {
        let (good, out, _) = over(&peer.sha256, &["read", "fw1", "c.count"]);
        good && out.trim().parse::<u64>().is_ok_and(|n| n > 0)
    });

    // A wrong fingerprint: refused at the handshake, the token never sent.
    let wrong = "00".repeat(32);
    let (good, out, err) = over(&wrong, &["ls"]);
    assert!(!good);
    assert_eq!(out, "");
    assert!(
        err.contains(&format!(
            "TLS handshake with {}: the node's certificate (SHA-256 {}) is not the one \
             --fingerprint / PRONTO_FINGERPRINT names ({wrong})",
            peer.addr, peer.sha256
        )),
        "{err}"
    );
    // None, or not a fingerprint: said before connecting.
    let (good, _, err) = pronto(&["--url", &url, "--token", admin, "ls"]);
    assert!(!good);
    assert_eq!(
        err,
        format!(
            "pronto ls: --url {url}: give the node's certificate fingerprint with --fingerprint \
             SHA256 (or PRONTO_FINGERPRINT): `pronto cluster nodes --etcd ...` shows each \
             node's, and the daemon prints its own when it starts\n"
        )
    );
    let (good, _, err) = over("abc", &["ls"]);
    assert!(!good);
    assert!(
        err.contains(
            "--fingerprint: expected the certificate's SHA-256 as 64 hex digits, found `abc`"
        ),
        "{err}"
    );

    // The Python client, the same way.
    let (good, out, err) = python(&format!(
        "from pronto_client import Client, WrongCertificate\n\
         c = Client(url={url:?}, token={admin:?}, fingerprint={fp:?})\n\
         print(c.health()['status'], [i.name for i in c.list()])\n\
         try:\n    Client(url={url:?}, token={admin:?}, fingerprint={wrong:?}).health()\n\
         except WrongCertificate as e:\n    print('refused:', e)\n\
         try:\n    Client(url={url:?}, token={admin:?})\n\
         except ValueError as e:\n    print('refused:', e)\n",
        fp = peer.sha256,
    ));
    assert!(good, "{err}");
    assert_eq!(
        out,
        format!(
            "ok ['fw1']\n\
             refused: the node's certificate (SHA-256 {got}) is not the one fingerprint names \
             ({wrong}): check the address, and the node's fingerprint (`pronto cluster nodes`)\n\
             refused: url {url}: give the node's certificate fingerprint (fingerprint=SHA256 or \
             PRONTO_FINGERPRINT; `pronto cluster nodes` shows it)\n",
            got = peer.sha256
        )
    );

    // The node restarted: the same certificate (kept in its state
    // directory), so the operator's pin holds.
    cl.kill9(0);
    cl.restart(0);
    let mut listed = String::new();
    common::cluster::wait_until("n1 answers over TLS again, its pin unchanged", || {
        let Some(again) = node::nodes(&cl.etcd)
            .expect("nodes")
            .into_iter()
            .find_map(|n| n.peer)
        else {
            return false;
        };
        assert_eq!(again.sha256, peer.sha256);
        let url = format!("https://{}", again.addr);
        let (good, out, _) = pronto(&[
            "--url",
            &url,
            "--fingerprint",
            &peer.sha256,
            "--token",
            admin,
            "ls",
            "--json",
        ]);
        listed = out;
        good
    });
    assert!(listed.contains("\"fw1\""), "{listed}");
}
