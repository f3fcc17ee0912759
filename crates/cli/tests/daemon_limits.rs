//! What a hostile tenant or local user can make the daemon hold, and what
//! a tenant may ask for: control socket data and connections bounded
//! before anything is buffered, API bodies bounded before they are read,
//! every API error JSON naming the real field and no host path, per-tenant
//! quotas (memory, CPU, tasks, instances, interfaces, control socket ports
//! and connections), replies too large for the instance protocol reported
//! as such, and the limits that apply shown.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::api::{self, To};
use serde_json::json;

fn is_root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    eprintln!("SKIPPED {test}: sandboxes need root");
    false
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

const COUNTING: &str = "c :: Counter; s :: TimedSource(0.01s) -> c -> Discard;\n";

fn create(to: &To<'_>, body: serde_json::Value) -> serde_json::Value {
    let r = api::call(to, "POST", "/v1/instances", body.to_string().as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// The port of `tcp 127.0.0.1:PORT` in an instance's `control_sockets`.
fn tcp_port(v: &serde_json::Value) -> u16 {
    v["control_sockets"]
        .as_array()
        .expect("control_sockets")
        .iter()
        .filter_map(|s| s.as_str()?.strip_prefix("tcp 127.0.0.1:"))
        .next()
        .expect("a TCP control socket")
        .parse()
        .expect("a port")
}

/// A control socket client past the greeting.
fn connect(port: u16) -> (TcpStream, BufReader<TcpStream>) {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let mut g = String::new();
    r.read_line(&mut g).expect("greeting");
    assert_eq!(g, "Click::ControlSocket/1.3\r\n");
    (s, r)
}

fn line(r: &mut BufReader<TcpStream>) -> String {
    let mut l = String::new();
    r.read_line(&mut l)
        .expect("a reply line (none came within 5 s)");
    l
}

#[test]
fn control_sockets_refuse_what_they_would_have_to_buffer() {
    if !is_root("control_sockets_refuse_what_they_would_have_to_buffer") {
        return;
    }
    let dir = common::scratch("limits-cs");
    let d = common::start_daemon(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let v = create(
        &unix,
        json!({"name": "cc", "config": format!("{COUNTING}ControlSocket(TCP, 0);")}),
    );
    let port = tcp_port(&v);
    let (_, peak0) = api::rss(d.pid());

    // Four clients each announce 400 MB for a handler: each is refused at
    // once, with Click's code for data too large, before sending a byte of
    // it; what they send anyway is read and thrown away, not kept.
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (mut s, mut r) = connect(port);
        s.write_all(b"WRITEDATA s.data 419430400\r\n")
            .expect("send");
        assert_eq!(
            line(&mut r),
            "521 Data too large for write handler 's.data' (419430400 bytes; the limit is \
             1048576)\r\n"
        );
        clients.push((s, r));
    }
    let chunk = vec![b'x'; 1 << 20];
    for (s, _) in &mut clients {
        for _ in 0..32 {
            s.write_all(&chunk).expect("the daemon keeps reading");
        }
    }
    let (_, peak1) = api::rss(d.pid());
    assert!(
        peak1 < peak0 + (32 << 20),
        "the daemon's peak memory grew from {peak0} to {peak1} bytes for 128 MiB sent"
    );
    drop(clients);

    // READDATA too, and a command line without an end.
    {
        let (mut s, mut r) = connect(port);
        s.write_all(b"READDATA s.data 16777217\r\n").expect("send");
        assert_eq!(
            line(&mut r),
            "521 Data too large for read handler 's.data' (16777217 bytes; the limit is \
             1048576)\r\n"
        );
    }
    let (mut s, mut r) = connect(port);
    let _ = s.write_all(&vec![b'A'; 256 << 10]);
    assert_eq!(
        line(&mut r),
        "500 Line too long (the limit is 65536 bytes)\r\n"
    );
    // The connection ends (reset: what was sent after the limit is unread).
    let mut rest = Vec::new();
    match r.read_to_end(&mut rest) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the connection goes on: {other:?} {rest:?}"),
    }
    drop((s, r));

    // Data within the limit still works.
    let (mut s, mut r) = connect(port);
    s.write_all(b"WRITEDATA s.data 5\r\nhello").expect("send");
    assert_eq!(line(&mut r), "200 Write handler 's.data' OK\r\n");
    // A value larger than the limit is not sent back (a client that never
    // reads would have the daemon hold it): the configuration, given a
    // 1.5 MiB label (the socket, same element and arguments, stays open).
    let wide = format!(
        "{COUNTING}ControlSocket(TCP, 0);\nIdle -> Print(\"{}\") -> Discard;\n",
        "y".repeat(3 << 19)
    );
    let put = api::call(
        &unix,
        "PUT",
        "/v1/instances/cc/config",
        json!({ "config": wide }).to_string().as_bytes(),
    );
    assert_eq!(put.status, 200, "{}", put.text());
    s.write_all(b"READ config\r\n").expect("send");
    assert_eq!(line(&mut r), "520-Read handler 'config' error:\r\n");
    // The flattened configuration, a little longer than the text.
    let n: usize = line(&mut r)
        .strip_prefix("520 the value is ")
        .and_then(|t| t.strip_suffix(" bytes; this socket sends at most 1048576\r\n"))
        .and_then(|n| n.parse().ok())
        .expect("the size of the value refused");
    assert!(n > wide.len() - 100 && n < wide.len() + 1000, "{n}");
    s.write_all(b"READ c.count\r\n").expect("send");
    assert_eq!(line(&mut r), "200 Read handler 'c.count' OK\r\n");

    // Connections are limited per tenant (the admin sets how many).
    let q = api::call(
        &unix,
        "PUT",
        "/v1/tenants/default/quota",
        br#"{"control_connections": 2}"#,
    );
    assert_eq!(q.status, 200, "{}", q.text());
    drop((s, r));
    let mut held = Vec::new();
    wait_until("two connections are served", || {
        held.clear();
        for _ in 0..2 {
            let (mut s, mut r) = connect(port);
            s.write_all(b"READ c.count\r\n").expect("send");
            if line(&mut r) != "200 Read handler 'c.count' OK\r\n" {
                return false;
            }
            let _ = line(&mut r);
            held.push((s, r));
        }
        true
    });
    let (_, mut r) = connect(port);
    assert_eq!(
        line(&mut r),
        "590 Too many connections: this tenant's control sockets serve 2 at once\r\n"
    );
    held.pop();
    wait_until("a freed connection is served again", || {
        let (mut s, mut r) = connect(port);
        s.write_all(b"READ c.count\r\n").expect("send");
        line(&mut r) == "200 Read handler 'c.count' OK\r\n"
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn api_bodies_are_bounded_and_every_error_is_json() {
    if !is_root("api_bodies_are_bounded_and_every_error_is_json") {
        return;
    }
    let dir = common::scratch("limits-api");
    let d = common::start_daemon(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);

    // A body announced too large is refused before it is sent, as JSON.
    for (method, path, announced) in [
        ("POST", "/v1/instances", 100u64 << 20),
        ("PUT", "/v1/instances/x/config", 9 << 20),
        ("PUT", "/v1/instances/x/handlers/s.data", 2 << 20),
        ("POST", "/v1/tenants", 1 << 20),
    ] {
        let r = api::announce(&unix, method, path, announced, 0, Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{method} {path}: no answer before the body"));
        let msg = r.error(413, None);
        assert!(
            msg.starts_with(&format!("request body: {announced} bytes; the limit is ")),
            "{msg}"
        );
    }
    // Without a token, over TCP, nothing of the body is read.
    let r = api::announce(
        &To::Tcp(&d.tcp, None),
        "POST",
        "/v1/instances",
        1 << 20,
        0,
        Duration::from_secs(5),
    )
    .expect("an answer before the body");
    assert!(r.error(401, None).contains("a token is needed"));

    // The field to blame is the real one.
    let bad = |body: serde_json::Value| {
        api::call(&unix, "POST", "/v1/instances", body.to_string().as_bytes())
    };
    let msg =
        bad(json!({"name": "x", "config": COUNTING, "colour": "red"})).error(400, Some("colour"));
    assert!(msg.contains("unknown field `colour`"), "{msg}");
    let msg =
        bad(json!({"name": "x", "config": COUNTING, "pids": "many"})).error(400, Some("pids"));
    assert!(msg.contains("pids"), "{msg}");
    bad(json!({"config": COUNTING})).error(400, Some("name"));
    bad(json!({"name": "x", "config": 7})).error(400, Some("config"));
    let msg = api::call(&unix, "POST", "/v1/instances", b"{not json").error(400, None);
    assert!(msg.starts_with("request body: "), "{msg}");

    // Errors of routing and extraction are JSON too.
    api::call(&unix, "DELETE", "/v1/health", b"").error(405, None);
    api::call(&unix, "GET", "/v1/nope", b"").error(404, None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tenants_get_only_what_their_quota_allows() {
    if !is_root("tenants_get_only_what_their_quota_allows") {
        return;
    }
    let dir = common::scratch("limits-quota");
    let d = common::start_daemon(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let post = |to: &To<'_>, body: serde_json::Value| {
        api::call(to, "POST", "/v1/instances", body.to_string().as_bytes())
    };

    // The defaults.
    let q = api::call(&unix, "GET", "/v1/tenants/default/quota", b"");
    assert_eq!(q.status, 200, "{}", q.text());
    assert_eq!(
        q.json(),
        json!({
            "tenant": "default",
            "quota": {
                "instances": 64, "memory": 4u64 << 30, "cpu": 64.0, "pids": 64,
                "interfaces": 256, "control_ports": "20000-20999", "control_connections": 16
            },
            "usage": {"instances": 0, "memory": 0, "cpu": 0.0, "interfaces": 0, "control_connections": 0}
        })
    );

    // What the attacker asked for.
    let msg = post(
        &unix,
        json!({"name": "m", "config": COUNTING, "memory": 9223372036854775808u64}),
    )
    .error(403, Some("memory"));
    assert_eq!(
        msg,
        "memory: 9223372036854775808 bytes would take tenant `default` over its memory quota \
         of 4294967296 bytes (0 in use); ask the admin to raise it"
    );
    let msg = post(
        &unix,
        json!({"name": "p", "config": COUNTING, "pids": 1u64 << 40}),
    )
    .error(403, Some("pids"));
    assert_eq!(
        msg,
        "pids: 1099511627776 is over tenant `default`'s limit of 64 tasks per instance; ask the \
         admin to raise it"
    );
    let msg = post(
        &unix,
        json!({"name": "c", "config": COUNTING, "cpu": 1000.0}),
    )
    .error(403, Some("cpu"));
    assert!(
        msg.starts_with("cpu: 1000 CPUs would take tenant `default` over its CPU quota of 64"),
        "{msg}"
    );
    for port in [22, 80, 443, 1023, 21000] {
        let msg = post(
            &unix,
            json!({"name": "s", "config": format!("{COUNTING}ControlSocket(TCP, {port});")}),
        )
        .error(403, Some("config"));
        assert_eq!(
            msg,
            format!(
                "ControlSocket@4 :: ControlSocket: PORT: {port} is outside tenant `default`'s \
                 control socket ports (20000-20999); use one of them, or 0 for any"
            )
        );
    }
    let r = api::call(&unix, "GET", "/v1/instances", b"");
    assert_eq!(r.json(), json!([]), "nothing was made");

    // The admin sets a tenant's quota; a tenant reads its own, and cannot
    // change it.
    let t = api::call(&unix, "POST", "/v1/tenants", br#"{"name": "acme"}"#);
    assert_eq!(t.status, 201, "{}", t.text());
    let token = t.json()["token"].as_str().expect("token").to_string();
    let acme = To::Tcp(&d.tcp, Some(&token));
    let (ok, out, err) = common::ctl(
        &dir,
        &[
            "tenant",
            "quota",
            "acme",
            "--instances",
            "1",
            "--memory",
            "64M",
            "--pids",
            "16",
            "--control-ports",
            "20100-20109",
            "--cpu",
            "2",
        ],
    );
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "tenant acme\n\
         instances            0 of 1\n\
         memory               0 of 67108864 bytes\n\
         cpu                  0 of 2 CPUs\n\
         pids                 16 per instance\n\
         interfaces           0 of 256\n\
         control ports        20100-20109\n\
         control connections  0 of 16\n"
    );
    let own = api::call(&acme, "GET", "/v1/tenants/acme/quota", b"");
    assert_eq!(own.json()["quota"]["instances"], 1, "{}", own.text());
    api::call(
        &acme,
        "PUT",
        "/v1/tenants/acme/quota",
        br#"{"instances": 9}"#,
    )
    .error(403, None);
    api::call(&acme, "GET", "/v1/tenants/default/quota", b"").error(404, None);
    let r = post(
        &acme,
        json!({"name": "one", "config": format!("{COUNTING}ControlSocket(TCP, 0);")}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let port = tcp_port(&r.json());
    assert!((20100..=20109).contains(&port), "{port}");
    let msg = post(&acme, json!({"name": "two", "config": COUNTING})).error(403, Some("instances"));
    assert_eq!(
        msg,
        "tenant `acme` has 1 instance, as many as its quota allows; remove one or ask the admin \
         to raise it"
    );
    let used = api::call(&acme, "GET", "/v1/tenants/acme/quota", b"").json();
    assert_eq!(
        used["usage"],
        json!({"instances": 1, "memory": 32u64 << 20, "cpu": 1.0, "interfaces": 0, "control_connections": 0})
    );
    // Bad quotas are refused, naming the field.
    for (body, field) in [
        (r#"{"control_ports": "80-90"}"#, "control_ports"),
        (r#"{"control_ports": "30000-20000"}"#, "control_ports"),
        (r#"{"pids": 0}"#, "pids"),
        (r#"{"memory": "lots"}"#, "memory"),
        (r#"{"cpu": -1}"#, "cpu"),
        (r#"{"disk": 1}"#, "disk"),
    ] {
        api::call(&unix, "PUT", "/v1/tenants/acme/quota", body.as_bytes()).error(400, Some(field));
    }
    api::call(&unix, "GET", "/v1/tenants/nobody/quota", b"").error(404, None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn show_prints_the_limits_that_apply_and_oversized_replies_say_so() {
    if !is_root("show_prints_the_limits_that_apply_and_oversized_replies_say_so") {
        return;
    }
    let dir = common::scratch("limits-show");
    let _d = common::start_daemon(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let v = create(&unix, json!({"name": "plain", "config": COUNTING}));
    assert_eq!(v["memory"], 32u64 << 20, "{v}");
    assert_eq!(v["pids"], 8, "{v}");
    let (ok, out, err) = common::ctl(&dir, &["show", "plain"]);
    assert!(ok, "{err}");
    assert!(out.contains("(limit 33.6 MB)\n"), "{out}");

    // A handler whose value is larger than the instance protocol carries
    // (here the flattened configuration: nine copies of a 2 MiB label).
    let label = "x".repeat(2 << 20);
    let config = format!(
        "elementclass C {{ input -> Print(\"{label}\") -> output }}\n\
         Idle -> C -> C -> C -> C -> C -> C -> C -> C -> C -> Discard;\n"
    );
    let v = create(
        &unix,
        json!({"name": "wide", "config": config, "memory": "512M"}),
    );
    let pid = v["pid"].as_u64().expect("pid");
    let r = api::call(&unix, "GET", "/v1/instances/wide/handlers/flatconfig", b"");
    let msg = r.error(400, None);
    assert!(
        msg.starts_with("flatconfig: the value is ")
            && msg.ends_with(
                " bytes, more than an instance's answer may carry (16777216 bytes); read a \
                 smaller handler"
            ),
        "{msg}"
    );
    let v = api::call(&unix, "GET", "/v1/instances/wide", b"").json();
    assert_eq!(
        (v["pid"].as_u64(), &v["restarts"]),
        (Some(pid), &json!(0)),
        "{v}"
    );
    let r = api::call(&unix, "GET", "/v1/instances/wide/handlers/list", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_instance_may_hold_only_the_packets_its_memory_holds() {
    if !is_root("an_instance_may_hold_only_the_packets_its_memory_holds") {
        return;
    }
    let dir = common::scratch("limits-pool");
    let d = common::start_daemon(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    // 32 MiB: three quarters of it in 2,176-byte packet slots is 11,565
    // packets. Queues that could hold more are refused with the numbers,
    // instead of the kernel killing the instance when they fill.
    let r = api::call(
        &unix,
        "POST",
        "/v1/instances",
        json!({"name": "q", "memory": 33554432u64, "config": "Idle -> q :: Queue(100000) -> Discard;"})
            .to_string()
            .as_bytes(),
    );
    let msg = r.error(400, Some("config"));
    assert!(
        msg.contains(
            "the configuration's elements can hold 100000 packets (`q` 100000), more than the \
             packet pool's limit of 11565"
        ),
        "{msg}"
    );
    let ok = create(
        &unix,
        json!({"name": "q", "memory": 33554432u64, "config": "Idle -> q :: Queue(10000) -> Discard;"}),
    );
    assert_eq!(ok["name"], "q");
    // A reconfiguration is held to the same limit, and the running one
    // keeps running.
    let r = api::call(
        &unix,
        "PUT",
        "/v1/instances/q/config",
        json!({"config": "Idle -> q :: Queue(20000) -> Discard;"})
            .to_string()
            .as_bytes(),
    );
    let msg = r.error(400, Some("config"));
    assert!(
        msg.contains("more than the packet pool's limit of 11565"),
        "{msg}"
    );
    let cfg = api::call(&unix, "GET", "/v1/instances/q/handlers/q.capacity", b"");
    assert_eq!(cfg.status, 200, "{}", cfg.text());
    assert!(cfg.text().contains("10000"), "{}", cfg.text());
    drop(d);
}
