//! The audit log against a real daemon: every change asked of the API
//! recorded in order with who asked (and with which token), what and what
//! came of it, failures and authentication failures included; tenants
//! seeing only their own entries; the bound dropping the oldest and
//! counting them; entries and the count surviving a restart; `pronto log`
//! printing a table and `pronto log --json` the entries.

mod common;

use common::api::{self, To};
use serde_json::{json, Value};

/// `pronto --json log ARGS` against the daemon in `dir`, parsed.
fn log_json(dir: &std::path::Path, args: &[&str]) -> Vec<Value> {
    let mut a = vec!["--json", "log"];
    a.extend(args);
    let (ok, out, err) = common::ctl(dir, &a);
    assert!(ok, "pronto log: {err}");
    let v: Value = serde_json::from_str(&out).expect("pronto log --json prints JSON");
    v.as_array().expect("an array").clone()
}

/// (method, path, who, status) of each entry.
fn shape(entries: &[Value]) -> Vec<(String, String, String, u64)> {
    entries
        .iter()
        .map(|e| {
            (
                e["method"].as_str().expect("method").to_string(),
                e["path"].as_str().expect("path").to_string(),
                e["who"].as_str().expect("who").to_string(),
                e["status"].as_u64().expect("status"),
            )
        })
        .collect()
}

fn row(m: &str, p: &str, who: &str, status: u64) -> (String, String, String, u64) {
    (m.into(), p.into(), who.into(), status)
}

/// A metric's value in the daemon's `/metrics`.
fn metric(sock: &std::path::Path, name: &str) -> u64 {
    let r = api::call(&To::Unix(sock), "GET", "/metrics", b"");
    assert_eq!(r.status, 200);
    r.text()
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
        .trim()
        .parse()
        .expect("a number")
}

#[test]
fn changes_are_audited_in_order_with_who_what_and_result_and_survive_a_restart() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED changes_are_audited...: sandboxes need root");
        return;
    }
    let dir = common::scratch("audit-life");
    let sock = dir.join("sock");
    let d = common::start_daemon_with(&dir, &["--warm", "0"]);
    let unix = To::Unix(&sock);
    let config = "c :: Counter; Idle -> c -> Discard;\n";
    let r = api::call(
        &unix,
        "POST",
        "/v1/instances",
        json!({"name": "fw1", "config": config, "memory": "16M"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    // A failed create: the name is taken.
    let r = api::call(
        &unix,
        "POST",
        "/v1/instances",
        json!({"name": "fw1", "config": config})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 409, "{}", r.text());
    let r = api::call(&unix, "PUT", "/v1/instances/fw1/handlers/c.reset", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    // Reads are not audited.
    let r = api::call(&unix, "GET", "/v1/instances/fw1/handlers/c.count", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let r = api::call(&unix, "DELETE", "/v1/instances/fw1", b"");
    assert_eq!(r.status, 204, "{}", r.text());
    // An authentication failure, over TCP with a token nobody has.
    let bogus = "0000000000000000000000000000000000000000000000000000000000000000";
    let r = api::call(
        &To::Tcp(&d.tcp, Some(bogus)),
        "DELETE",
        "/v1/instances/fw1",
        b"",
    );
    assert_eq!(r.status, 401, "{}", r.text());
    // The admin's token over TCP: recorded by its hash's prefix.
    let admin = std::fs::read_to_string(dir.join("state/admin.token")).expect("token");
    let r = api::call(
        &To::Tcp(&d.tcp, Some(admin.trim())),
        "POST",
        "/v1/tenants",
        br#"{"name":"acme"}"#,
    );
    assert_eq!(r.status, 201, "{}", r.text());

    let entries = log_json(&dir, &[]);
    assert_eq!(
        shape(&entries),
        vec![
            row("POST", "/v1/instances", "admin", 201),
            row("POST", "/v1/instances", "admin", 409),
            row("PUT", "/v1/instances/fw1/handlers/c.reset", "admin", 200),
            row("DELETE", "/v1/instances/fw1", "admin", 204),
            row("DELETE", "/v1/instances/fw1", "unknown", 401),
            row("POST", "/v1/tenants", "admin", 201),
        ]
    );
    let seqs: Vec<u64> = entries
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
    // What: the name and fields; the configuration by size and hash only.
    let sha = bogus_id(config);
    assert_eq!(
        entries[0]["summary"],
        format!("config=36 bytes sha256:{sha} memory=16M name=fw1")
    );
    assert!(
        !entries[0].to_string().contains("Counter"),
        "{}",
        entries[0]
    );
    assert_eq!(entries[0]["tenant"], "default");
    assert_eq!(entries[0]["token"], "unix-socket");
    assert_eq!(entries[0]["error"], Value::Null);
    assert_eq!(entries[1]["error"], "instance `fw1` already exists");
    assert_eq!(entries[4]["tenant"], Value::Null);
    assert_eq!(entries[4]["token"], bogus_id(bogus));
    assert_eq!(
        entries[4]["error"],
        "the token is not valid (expected `Authorization: Bearer TOKEN`)"
    );
    assert_eq!(entries[5]["token"], bogus_id(admin.trim()));
    assert_eq!(entries[5]["tenant"], "acme");
    assert_eq!(entries[5]["summary"], "name=acme");
    // Never a token: not the admin's, not the tenant's just made.
    let all = serde_json::to_string(&entries).expect("text");
    assert!(!all.contains(admin.trim()));
    assert!(!all.contains(bogus));
    let times: Vec<u64> = entries
        .iter()
        .map(|e| e["unix_ms"].as_u64().expect("ms"))
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert!(entries[0]["time"].as_str().expect("time").ends_with('Z'));
    assert_eq!(metric(&sock, "pronto_audit_entries"), 6);

    // The table.
    let (ok, out, err) = common::ctl(&dir, &["log", "-n", "2"]);
    assert!(ok, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("TIME "), "{out}");
    assert!(
        lines[1].contains(" unknown ") && lines[1].contains("DELETE /v1/instances/fw1"),
        "{out}"
    );
    assert!(
        lines[2].contains(" admin ") && lines[2].contains("POST /v1/tenants"),
        "{out}"
    );
    // --since: from the fifth entry's time on.
    let t5 = entries[4]["time"].as_str().expect("time");
    let later = log_json(&dir, &["--since", t5]);
    assert!(later.len() >= 2 && later.len() <= 6, "{later:?}");
    assert_eq!(later.last(), entries.last());

    // After a restart, the entries are still there, and the numbering goes on.
    assert!(d.term().success());
    let _d = common::start_daemon_with(&dir, &["--warm", "0"]);
    assert_eq!(log_json(&dir, &[]), entries);
    let r = api::call(&unix, "DELETE", "/v1/tenants/acme", b"");
    assert_eq!(r.status, 204, "{}", r.text());
    let after = log_json(&dir, &["-n", "1"]);
    assert_eq!(after[0]["seq"], 7);
    assert_eq!(after[0]["path"], "/v1/tenants/acme");
}

/// The first 12 hex digits of the SHA-256 of `text`: the id recorded for
/// a token, the hash recorded for a configuration.
fn bogus_id(text: &str) -> String {
    pronto_daemon::api::digest(text)[..12].to_string()
}

#[test]
fn tenants_see_their_own_entries_and_the_bound_drops_the_oldest() {
    let dir = common::scratch("audit-bound");
    let sock = dir.join("sock");
    let d = common::start_daemon_with(&dir, &["--warm", "0", "--audit-limit", "4"]);
    let unix = To::Unix(&sock);
    let token = |name: &str| {
        let r = api::call(
            &unix,
            "POST",
            "/v1/tenants",
            json!({ "name": name }).to_string().as_bytes(),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        r.json()["token"].as_str().expect("token").to_string()
    };
    let acme = token("acme"); // 1
    let beta = token("beta"); // 2
                              // Each tenant fails to remove an instance it does not have.
    let r = api::call(
        &To::Tcp(&d.tcp, Some(&acme)),
        "DELETE",
        "/v1/instances/x",
        b"",
    ); // 3
    assert_eq!(r.status, 404, "{}", r.text());
    let r = api::call(
        &To::Tcp(&d.tcp, Some(&beta)),
        "DELETE",
        "/v1/instances/y",
        b"",
    ); // 4
    assert_eq!(r.status, 404, "{}", r.text());
    // The admin sets acme's quota (an entry acme sees too).
    let r = api::call(
        &unix,
        "PUT",
        "/v1/tenants/acme/quota",
        br#"{"instances": 3}"#,
    ); // 5
    assert_eq!(r.status, 200, "{}", r.text());

    let seen = |t: &str| -> Vec<u64> {
        let r = api::call(&To::Tcp(&d.tcp, Some(t)), "GET", "/v1/audit", b"");
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
            .as_array()
            .expect("array")
            .iter()
            .map(|e| e["seq"].as_u64().expect("seq"))
            .collect()
    };
    // Bound 4: entry 1 was dropped when entry 5 came.
    assert_eq!(seen(&acme), [3, 5]);
    assert_eq!(seen(&beta), [2, 4]);
    let all = log_json(&dir, &[]);
    assert_eq!(
        all.iter()
            .map(|e| e["seq"].as_u64().expect("seq"))
            .collect::<Vec<_>>(),
        [2, 3, 4, 5]
    );
    assert_eq!(all[1]["who"], "acme");
    assert_eq!(all[1]["tenant"], "acme");
    assert_eq!(all[1]["token"], bogus_id(&acme));
    assert_eq!(all[1]["error"], "no instance `x`");
    assert_eq!(all[3]["who"], "admin");
    assert_eq!(all[3]["summary"], "instances=3");
    // The admin's --tenant filter.
    assert_eq!(log_json(&dir, &["--tenant", "beta"]).len(), 2);
    // A tenant asking for another's entries is refused.
    let r = api::call(
        &To::Tcp(&d.tcp, Some(&acme)),
        "GET",
        "/v1/audit?tenant=beta",
        b"",
    );
    assert_eq!(
        r.error(403, Some("tenant")),
        "a tenant sees only its own audit entries (leave `tenant` out)"
    );
    let r = api::call(&unix, "GET", "/v1/audit?limit=0", b"");
    assert_eq!(
        r.error(400, Some("limit")),
        "limit: expected 1 to 10000, found `0`"
    );
    let r = api::call(&unix, "GET", "/v1/audit?since=yesterday", b"");
    r.error(400, Some("since"));
    assert_eq!(metric(&sock, "pronto_audit_entries"), 4);
    assert_eq!(metric(&sock, "pronto_audit_dropped_total"), 1);

    // The count survives a restart, and the bound goes on holding.
    assert!(d.term().success());
    let _d = common::start_daemon_with(&dir, &["--warm", "0", "--audit-limit", "4"]);
    let r = api::call(&unix, "DELETE", "/v1/tenants/beta", b""); // 6
    assert_eq!(r.status, 204, "{}", r.text());
    assert_eq!(metric(&sock, "pronto_audit_dropped_total"), 2);
    assert_eq!(metric(&sock, "pronto_audit_entries"), 4);
    let all = log_json(&dir, &[]);
    assert_eq!(all[0]["seq"], 3);
    assert_eq!(all[3]["seq"], 6);
}
