//! Cluster-wide tenants for real: a real etcd and three daemons (nodes
//! n1, n2, n3). A tenant created through n1 is stored in etcd
//! (`tenants/NAME`, its token's digest) and its token works on n2 and n3;
//! its quota, set through one node, holds across the cluster (the third
//! instance of a tenant allowed two is refused through a third node);
//! deleting the tenant through n3 makes its token fail on n1.

mod common;

use common::api::{call_with, To};
use common::cluster::{can_run, req, wait_until, Cluster};

const COUNTING: &str = "c :: Counter; TimedSource(0.005s) -> c -> Discard;\n";
const NAMED: &str = "c :: Counter; s :: TimedSource(0.005s) -> c -> Discard;\n";

#[test]
fn tenants_tokens_and_quotas_hold_across_the_cluster() {
    if !can_run("tenants_tokens_and_quotas_hold_across_the_cluster") {
        return;
    }
    let cl = Cluster::start("cluster-tenants", &["n1", "n2", "n3"]);
    let (etcd, dirs) = (&cl.etcd, cl.dirs());
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

/// Handler calls, counters and stats of an instance answered by any node:
/// the node that does not run it forwards the call to the one that does
/// (the address in its `nodes/NODE` record, the cluster's secret as the
/// credential); with that node killed, a clear 503 names it.
#[test]
fn handler_calls_reach_the_node_that_runs_the_instance() {
    if !can_run("handler_calls_reach_the_node_that_runs_the_instance") {
        return;
    }
    let names = ["n1", "n2", "n3"];
    let mut cl = Cluster::start("cluster-forward", &names);
    let dirs = cl.dirs();

    let body = serde_json::json!({"name": "h1", "config": NAMED}).to_string();
    let r = req(&dirs[0], None, "POST", "/v1/instances", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let owner = r.json()["node"].as_str().expect("its node").to_string();
    let at = names.iter().position(|n| *n == owner).expect("a node");
    let others: Vec<usize> = (0..3).filter(|i| *i != at).collect();

    // Written through one node that does not run it, read back through
    // the other and through its own: the owner's value.
    let r = req(
        &dirs[others[0]],
        None,
        "PUT",
        "/v1/instances/h1/handlers/s.data",
        "hello",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    for i in [others[1], at, others[0]] {
        let r = req(
            &dirs[i],
            None,
            "GET",
            "/v1/instances/h1/handlers/s.data",
            "",
        );
        assert_eq!(
            (r.status, r.text().as_str()),
            (200, "hello"),
            "through {}",
            names[i]
        );
    }
    for i in others.iter().copied() {
        let r = req(&dirs[i], None, "GET", "/v1/instances/h1/counters", "");
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["name"], "h1");
        let r = req(&dirs[i], None, "GET", "/v1/instances/h1/stats", "");
        assert_eq!(r.status, 200, "{}", r.text());
        // An unknown handler: the owner's error, passed on as it is.
        let r = req(
            &dirs[i],
            None,
            "GET",
            "/v1/instances/h1/handlers/nosuch.h",
            "",
        );
        assert!(r.status == 404 || r.status == 400, "{}", r.text());
    }
    // Another tenant's instance stays "not found" through any node.
    let t = req(&dirs[0], None, "POST", "/v1/tenants", r#"{"name":"other"}"#);
    assert_eq!(t.status, 201, "{}", t.text());
    let token = t.json()["token"].as_str().expect("token").to_string();
    wait_until("the token works everywhere", || {
        req(&dirs[others[0]], Some(&token), "GET", "/v1/instances", "").status == 200
    });
    let msg = req(
        &dirs[others[0]],
        Some(&token),
        "GET",
        "/v1/instances/h1/handlers/s.data",
        "",
    )
    .error(404, None);
    assert_eq!(msg, "no instance `h1`");

    // Its node killed: through the others, a 503 naming that node (until
    // the scheduler has moved the instance).
    cl.kill9(at);
    let r = req(
        &dirs[others[0]],
        None,
        "GET",
        "/v1/instances/h1/handlers/s.data",
        "",
    );
    if r.status == 503 {
        let msg = r.error(503, None);
        assert!(msg.contains(&format!("node `{owner}`")), "{msg}");
    } else {
        // Moved already (the lease outlived by the call): answered by its
        // new node, where it started afresh.
        println!("the instance moved before the call; status {}", r.status);
    }
}

/// A tenant's write forwarded to the node that runs the instance is
/// audited there as that tenant, with its token's id, as on the node that
/// took it (not as the admin the cluster's secret would make it). The
/// caller header counts only with the secret: sent without it, or with a
/// wrong one, it is ignored.
#[test]
fn forwarded_writes_are_audited_as_the_caller() {
    if !can_run("forwarded_writes_are_audited_as_the_caller") {
        return;
    }
    let cl = Cluster::start("cluster-audit", &["n1", "n2", "n3"]);
    let dirs = cl.dirs();
    let r = req(&dirs[0], None, "POST", "/v1/tenants", r#"{"name":"acme"}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let token = r.json()["token"].as_str().expect("token").to_string();
    let id = pronto_daemon::audit::token_id(&pronto_daemon::api::digest(&token));
    for d in &dirs {
        wait_until("the token works on every node", || {
            req(d, Some(&token), "GET", "/v1/instances", "").status == 200
        });
    }
    let body = serde_json::json!({"name": "h2", "config": NAMED}).to_string();
    let r = req(&dirs[0], Some(&token), "POST", "/v1/instances", &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let owner = r.json()["node"].as_str().expect("its node").to_string();
    let at = cl.index(&owner);
    let other = (at + 1) % 3;
    let path = "/v1/instances/h2/handlers/s.data";

    // The newest audit entry of `PUT path` on node `i`.
    let last_put = |i: usize| -> serde_json::Value {
        let r = req(&dirs[i], None, "GET", "/v1/audit", "");
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
            .as_array()
            .expect("entries")
            .iter()
            .rev()
            .find(|e| e["method"] == "PUT" && e["path"] == path)
            .cloned()
            .unwrap_or_else(|| panic!("no PUT {path} audited on {}", cl.nodes[i].name))
    };
    let fields = |e: &serde_json::Value| {
        (
            e["who"].clone(),
            e["token"].clone(),
            e["tenant"].clone(),
            e["status"].clone(),
            e["summary"].clone(),
        )
    };
    let acme = |summary: &str| {
        (
            "acme".into(),
            id.clone().into(),
            "acme".into(),
            200.into(),
            summary.into(),
        )
    };

    // Through a node that does not run it: forwarded, and audited on both
    // nodes as acme's, with its token's id.
    let r = req(&dirs[other], Some(&token), "PUT", path, "hello");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(fields(&last_put(other)), acme("value=hello"));
    assert_eq!(fields(&last_put(at)), acme("value=hello"));

    // Straight to the owner's TCP API with acme's token: a caller header
    // naming someone else, without the secret or with a wrong one, is
    // ignored (the call is acme's).
    let tcp = cl.nodes[at].daemon.as_ref().expect("running").tcp.clone();
    for headers in [
        vec![("X-Pronto-Cluster-Caller", "mallory")],
        vec![
            ("X-Pronto-Cluster-Caller", "mallory"),
            ("X-Pronto-Cluster-Secret", "not-the-secret"),
            ("X-Pronto-Cluster-Token", "000000000000"),
        ],
    ] {
        let r = call_with(
            &To::Tcp(&tcp, Some(&token)),
            "PUT",
            path,
            &headers,
            b"direct",
        );
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(fields(&last_put(at)), acme("value=direct"));
    }
    // Without a token, the header makes no one: 401.
    let r = call_with(
        &To::Tcp(&tcp, None),
        "PUT",
        path,
        &[("X-Pronto-Cluster-Caller", "acme")],
        b"nobody",
    );
    assert_eq!(r.status, 401, "{}", r.text());
}

/// Every quota holds across the cluster, the default tenant's too: a
/// tenant's memory, CPUs and interfaces are counted over its instances on
/// every node, so that an instance through a third node is refused when
/// two on two other nodes use the quota up, naming the field and saying
/// "in the cluster"; two creates of the default tenant racing through two
/// nodes cannot both pass.
#[test]
fn every_quota_is_counted_over_the_cluster() {
    if !can_run("every_quota_is_counted_over_the_cluster") {
        return;
    }
    let cl = Cluster::start("cluster-quotas", &["n1", "n2", "n3"]);
    let (etcd, dirs) = (&cl.etcd, cl.dirs());
    let (a, b, c) = (&dirs[0], &dirs[1], &dirs[2]);
    let r = req(a, None, "POST", "/v1/tenants", r#"{"name":"big"}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let token = r.json()["token"].as_str().expect("token").to_string();
    let r = req(
        b,
        None,
        "PUT",
        "/v1/tenants/big/quota",
        r#"{"memory":"32M","cpu":2,"interfaces":3}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    for d in [a, b, c] {
        wait_until("every node has big's quota", || {
            let q = req(d, Some(&token), "GET", "/v1/tenants/big/quota", "").json();
            q["quota"]["memory"] == 32 << 20 && q["quota"]["interfaces"] == 3
        });
    }
    let body = |name: &str, node: Option<&str>, memory: &str, cpu: f64, ifaces: usize| {
        let interfaces: Vec<_> = (0..ifaces)
            .map(|i| serde_json::json!({"name": format!("eth{i}")}))
            .collect();
        let mut v = serde_json::json!({"name": name, "config": COUNTING, "memory": memory,
                                       "cpu": cpu, "interfaces": interfaces});
        if let Some(n) = node {
            v["node"] = n.into();
        }
        v.to_string()
    };
    // One on n1, one on n2: the memory quota used up.
    for (name, node) in [("m1", "n1"), ("m2", "n2")] {
        let r = req(
            a,
            Some(&token),
            "POST",
            "/v1/instances",
            &body(name, Some(node), "16M", 0.5, 1),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(r.json()["node"], node);
    }
    let msg = req(
        c,
        Some(&token),
        "POST",
        "/v1/instances",
        &body("m3", None, "16M", 0.5, 1),
    )
    .error(403, Some("memory"));
    assert_eq!(
        msg,
        "memory: 16777216 bytes would take tenant `big` over its memory quota of 33554432 bytes \
         (33554432 in use in the cluster); ask the admin to raise it"
    );
    assert!(etcd
        .get(b"/pronto/v1/instances/m3")
        .expect("etcd")
        .is_none());
    // Each instance's share, stored with it: what a create counts.
    let share = |key: &str| -> Option<serde_json::Value> {
        etcd.get(key.as_bytes())
            .expect("etcd")
            .map(|kv| serde_json::from_slice(&kv.value).expect("JSON"))
    };
    assert_eq!(
        share("/pronto/v1/usage/big/m1"),
        Some(serde_json::json!({"memory": 16 << 20, "cpu": 0.5, "interfaces": 1}))
    );
    assert_eq!(share("/pronto/v1/usage/big/m3"), None);
    // Through any node, the usage is the cluster's.
    let q = req(c, Some(&token), "GET", "/v1/tenants/big/quota", "").json();
    assert_eq!(
        (
            &q["usage"]["instances"],
            &q["usage"]["memory"],
            &q["usage"]["cpu"],
            &q["usage"]["interfaces"]
        ),
        (&2.into(), &(32u64 << 20).into(), &1.0.into(), &2.into())
    );

    // More memory: then the CPUs, then the interfaces are what is short.
    let r = req(
        b,
        None,
        "PUT",
        "/v1/tenants/big/quota",
        r#"{"memory":"1G"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    wait_until("n3 has the new memory quota", || {
        req(c, Some(&token), "GET", "/v1/tenants/big/quota", "").json()["quota"]["memory"]
            == 1 << 30
    });
    let msg = req(
        c,
        Some(&token),
        "POST",
        "/v1/instances",
        &body("m3", None, "16M", 1.5, 1),
    )
    .error(403, Some("cpu"));
    assert_eq!(
        msg,
        "cpu: 1.5 CPUs would take tenant `big` over its CPU quota of 2 (1 in use in the \
         cluster); ask the admin to raise it"
    );
    let msg = req(
        c,
        Some(&token),
        "POST",
        "/v1/instances",
        &body("m3", None, "16M", 0.5, 2),
    )
    .error(403, Some("interfaces"));
    assert_eq!(
        msg,
        "interfaces: 2 more would take tenant `big` over its quota of 3 switch ports (2 in use \
         in the cluster); ask the admin to raise it"
    );
    let r = req(
        c,
        Some(&token),
        "POST",
        "/v1/instances",
        &body("m3", None, "16M", 1.0, 1),
    );
    assert_eq!(r.status, 201, "{}", r.text());

    // The default tenant: its quota set through n1 is every node's, and
    // counted over the cluster as another tenant's.
    let r = req(
        a,
        None,
        "PUT",
        "/v1/tenants/default/quota",
        r#"{"memory":"32M"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let kv = etcd
        .get(b"/pronto/v1/tenants/default")
        .expect("etcd")
        .expect("tenants/default is stored");
    let stored: serde_json::Value = serde_json::from_slice(&kv.value).expect("JSON");
    assert_eq!(stored, serde_json::json!({"quota": {"memory": "32M"}}));
    for d in [a, b, c] {
        wait_until("every node has the default tenant's quota", || {
            req(d, None, "GET", "/v1/tenants/default/quota", "").json()["quota"]["memory"]
                == 32 << 20
        });
    }
    let admin = |d: &std::path::Path, name: &str, node: Option<&str>| {
        req(
            d,
            None,
            "POST",
            "/v1/instances",
            &body(name, node, "16M", 0.5, 0),
        )
    };
    for (name, node) in [("d1", "n1"), ("d2", "n2")] {
        let r = admin(a, name, Some(node));
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(r.json()["tenant"], "default");
    }
    let msg = admin(c, "d3", None).error(403, Some("memory"));
    assert_eq!(
        msg,
        "memory: 16777216 bytes would take tenant `default` over its memory quota of 33554432 \
         bytes (33554432 in use in the cluster); ask the admin to raise it"
    );
    // Room for one more: two creates racing through n2 and n3, one passes.
    let r = req(b, None, "DELETE", "/v1/instances/d2", "");
    assert!(r.status == 204 || r.status == 200, "{}", r.text());
    assert_eq!(share("/pronto/v1/usage/default/d2"), None);
    let (rb, rc) = std::thread::scope(|s| {
        let tb = s.spawn(|| admin(b, "d4", None));
        let tc = s.spawn(|| admin(c, "d5", None));
        (
            tb.join().expect("n2's create"),
            tc.join().expect("n3's create"),
        )
    });
    let mut statuses = [rb.status, rc.status];
    statuses.sort();
    assert_eq!(statuses, [201, 403], "{} / {}", rb.text(), rc.text());
    let listed = req(a, None, "GET", "/v1/instances?tenant=default", "").json();
    assert_eq!(listed.as_array().expect("a list").len(), 2, "{listed}");
    // Its key is no tenant of its own: not listed twice, not deleted.
    let names = req(a, None, "GET", "/v1/tenants", "").json();
    let names: Vec<&str> = names
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["big", "default"]);
    let msg = req(c, None, "DELETE", "/v1/tenants/default", "").error(404, None);
    assert_eq!(msg, "no tenant `default`");
}

/// A tenant created through one node is known at once through another:
/// its quota reads, and an instance is created for it, right after the
/// create (etcd is asked when the node's copy, from its watch, lacks the
/// tenant: the race with the watch is not forced here, it was seen under
/// load); a tenant nobody created is answered "not found" after etcd was
/// asked.
#[test]
fn a_tenant_created_through_one_node_is_known_at_once_through_another() {
    if !can_run("a_tenant_created_through_one_node_is_known_at_once_through_another") {
        return;
    }
    let cl = Cluster::start("cluster-fresh-tenant", &["n1", "n2"]);
    let dirs = cl.dirs();
    let (a, b) = (&dirs[0], &dirs[1]);
    for (i, t) in ["fresh1", "fresh2", "fresh3"].iter().enumerate() {
        let r = req(
            a,
            None,
            "POST",
            "/v1/tenants",
            &format!(r#"{{"name":"{t}"}}"#),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let r = req(b, None, "GET", &format!("/v1/tenants/{t}/quota"), "");
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["tenant"], *t);
        let r = req(
            a,
            None,
            "POST",
            "/v1/tenants",
            r#"{"name":"later"}"#.replace("later", &format!("later{i}")).as_str(),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let body = serde_json::json!({"name": format!("i{i}"), "tenant": format!("later{i}"),
                                      "config": COUNTING, "node": "n2"});
        let r = req(b, None, "POST", "/v1/instances", &body.to_string());
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // A tenant nobody created is still not found, etcd asked.
    let r = req(b, None, "GET", "/v1/tenants/nobody/quota", "");
    assert_eq!(r.status, 404, "{}", r.text());
    let body = serde_json::json!({"name": "x", "tenant": "nobody", "config": COUNTING});
    let msg = req(b, None, "POST", "/v1/instances", &body.to_string()).error(404, Some("tenant"));
    assert_eq!(msg, "no tenant `nobody` (create it with POST /v1/tenants)");
}
