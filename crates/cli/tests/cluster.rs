//! `pronto cluster nodes|status` against a real etcd (Debian's
//! `etcd-server`) holding two registered nodes, a scheduler and three
//! instances: placed, waiting, and on a node that is gone.

use std::process::Command;
use std::sync::Arc;

use pronto_cluster::{node, scheduler, testing, Node, Registration};

fn pronto(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(args)
        .output()
        .expect("pronto runs");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn nodes_and_status_read_the_cluster_from_etcd() {
    if !testing::have_etcd() {
        return;
    }
    let mut m = testing::Members::start(1).expect("etcd starts");
    let url = m.endpoints();
    let etcd = Arc::new(m.client().expect("endpoint"));
    let reg = |name: &str, slots: u32, tunnel: Option<&str>| {
        let n = Node {
            name: name.into(),
            memory_mib: 4096,
            cpus: 2,
            slots,
            tunnel: tunnel.map(str::to_string),
            api: None,
            // n1 serves the API to other machines.
            peer: tunnel.map(|_| node::PeerApi {
                addr: "10.0.0.1:7118".into(),
                sha256: "ab".repeat(32),
            }),
        };
        Registration::start(etcd.clone(), n, 30).expect("registers")
    };
    let n1 = reg("n1", 10, Some("10.0.0.1:4789"));
    let _n2 = reg("n2", 20, None);
    node::campaign(&etcd, "n1", n1.lease()).expect("campaign");
    let since = node::leader(&etcd).expect("leader").expect("one").since;
    for i in ["fw1", "fw2", "lb"] {
        etcd.put(&scheduler::instance_key(i), b"{}", 0)
            .expect("put");
    }
    etcd.put(
        &scheduler::placement_key("fw1"),
        br#"{"node":"n1","token":1}"#,
        0,
    )
    .expect("put");
    etcd.put(
        &scheduler::placement_key("lb"),
        br#"{"node":"n9","token":1}"#,
        0,
    )
    .expect("put");

    let (rc, out, err) = pronto(&["cluster", "nodes", "--etcd", &url]);
    assert_eq!((rc, err.as_str()), (0, ""));
    assert_eq!(
        out,
        format!(
            "NODE  INSTANCES  SLOTS  MEMORY_MIB  CPUS  TUNNEL         API                    \
             CERTIFICATE SHA-256\n\
             n1            1     10        4096     2  10.0.0.1:4789  https://10.0.0.1:7118  {}\n\
             n2            0     20        4096     2  -              -                      -\n",
            "ab".repeat(32)
        )
    );
    let (rc, out, _) = pronto(&["cluster", "status", "--etcd", &url]);
    assert_eq!(rc, 0);
    assert_eq!(
        out,
        format!(
            "scheduler: n1 (since revision {since})\nnodes: 2 live\n\n\
             INSTANCE  NODE  STATE\n\
             fw1       n1    placed\n\
             fw2       -     waiting\n\
             lb        n9    node lost\n"
        )
    );
    let (rc, out, _) = pronto(&["--json", "cluster", "status", "--etcd", &url]);
    assert_eq!(rc, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["scheduler"]["node"], "n1");
    assert_eq!(v["instances"][2]["state"], "node lost");

    // No etcd there: the reason, naming the member, and exit status 1.
    m.kill(0);
    let (rc, out, err) = pronto(&["cluster", "nodes", "--etcd", &url]);
    assert_eq!((rc, out.as_str()), (1, ""));
    assert!(
        err.starts_with(&format!(
            "pronto cluster: etcd unavailable (range): {url}: Connection Failed"
        )),
        "{err}"
    );
    let (rc, _, err) = pronto(&["cluster", "nodes", "--etcd", "127.0.0.1:2379"]);
    assert_eq!(rc, 1);
    assert_eq!(
        err,
        "pronto cluster: etcd endpoint `127.0.0.1:2379`: expected http://HOST:PORT (several separated by commas)\n"
    );
}
