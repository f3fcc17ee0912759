//! `pronto daemon` with the CLI against it, for real: sandboxed instances
//! created, inspected, called, reconfigured (a bad configuration refused
//! while the old one keeps running), crashed and restarted, brought back
//! after the daemon is killed, kept apart by tenant, and removed.

mod common;

use common::ctl as cli;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pronto() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pronto"))
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn start(dir: &Path) -> common::Daemon {
    common::start_daemon(dir)
}

/// Runs a CLI command against the daemon in `dir`; (success, stdout, stderr).
fn ok(dir: &Path, args: &[&str]) -> String {
    let (good, out, err) = cli(dir, args);
    assert!(good, "pronto {args:?}: {err}");
    out
}

fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&ok(dir, &a)).expect("JSON")
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn count(dir: &Path, name: &str) -> u64 {
    ok(dir, &["read", name, "c.count"])
        .trim()
        .parse()
        .expect("a count")
}

/// GETs `path` from the daemon's unix socket with curl.
fn api_text(dir: &Path, path: &str) -> String {
    let o = Command::new("curl")
        .args(["-s", "--unix-socket"])
        .arg(dir.join("sock"))
        .arg(format!("http://localhost{path}"))
        .output()
        .expect("curl");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const COUNTING: &str = "c :: Counter; TimedSource(0.005s) -> c -> Discard;\n";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn instances_live_restart_and_come_back() {
    if !is_root() {
        eprintln!("SKIPPED instances_live_restart_and_come_back: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-life");
    let d = start(&dir);
    let good = write(&dir, "good.click", COUNTING);
    let bad = write(&dir, "bad.click", "c :: Counter; Nope -> c;\n");
    let g = good.to_str().expect("path");
    let b = bad.to_str().expect("path");

    // A bad configuration creates nothing and says where it is wrong.
    let (good_create, _, err) = cli(&dir, &["create", "fw1", "--config", b]);
    assert!(!good_create);
    assert!(err.contains("unknown element class 'Nope'"), "{err}");
    assert!(err.contains("config:1:15"), "{err}");
    assert_eq!(json(&dir, &["ls"]), serde_json::json!([]));

    let out = ok(&dir, &["create", "fw1", "--config", g, "--mem", "16M"]);
    assert!(
        out.starts_with("created fw1 (tenant default), running in "),
        "{out}"
    );
    let (dup, _, err) = cli(&dir, &["create", "fw1", "--config", g]);
    assert!(!dup);
    assert_eq!(err, "pronto create: instance `fw1` already exists\n");
    let v = json(&dir, &["show", "fw1"]);
    assert_eq!(v["state"], "running");
    assert_eq!(v["memory"], 16 << 20);
    assert!(v["pss_bytes"].as_u64().expect("pss") > 0);
    let pid = v["pid"].as_u64().expect("pid");

    // The Prometheus exposition is valid for promtool.
    let text = api_text(&dir, "/metrics");
    assert!(
        text.contains("pronto_instance_up{tenant=\"default\",instance=\"fw1\"} 1"),
        "{text}"
    );
    match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => eprintln!(
            "SKIPPED the promtool check of /metrics: promtool is not installed (Debian's \
             prometheus package; scripts/test installs it as root)"
        ),
        Err(e) => panic!("promtool: {e}"),
        Ok(mut check) => {
            std::io::Write::write_all(&mut check.stdin.take().expect("stdin"), text.as_bytes())
                .expect("feed promtool");
            let o = check.wait_with_output().expect("promtool");
            assert!(
                o.status.success(),
                "promtool: {}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }

    // Handlers while it runs.
    wait_until("the counter counts", || count(&dir, "fw1") > 3);
    ok(&dir, &["write", "fw1", "c.reset"]);
    assert!(count(&dir, "fw1") < 50);
    let (found, _, err) = cli(&dir, &["read", "fw1", "c.nope"]);
    assert!(!found);
    assert_eq!(err, "pronto read: element `c` has no read handler `nope`\n");
    let (found, _, err) = cli(&dir, &["read", "fw1", "zz.count"]);
    assert!(!found);
    assert_eq!(err, "pronto read: no element named `zz`\n");
    let stats = json(&dir, &["stats", "fw1"]);
    let c = stats["elements"]
        .as_array()
        .expect("elements")
        .iter()
        .find(|e| e["name"] == "c")
        .expect("c");
    assert_eq!(c["class"], "Counter");
    assert_eq!(c["in"], c["out"], "{c}");
    // The count was reset above; the runtime's `in` was not.
    assert!(
        c["counters"]["count"].as_u64().expect("count") < c["in"].as_u64().expect("in"),
        "{c}"
    );
    let sink = stats["elements"]
        .as_array()
        .expect("elements")
        .iter()
        .find(|e| e["class"] == "Discard")
        .expect("the Discard");
    assert!(
        sink["drops"]["discarded"].as_u64().expect("a count") > 0,
        "{sink}"
    );
    // The same in /metrics, with the instance's labels.
    let text = api_text(&dir, "/metrics");
    assert!(
        text.lines().any(|l| l.starts_with(
            "pronto_element_packets_total{tenant=\"default\",instance=\"fw1\",element=\"c\",\
             class=\"Counter\",direction=\"in\"} "
        )),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l
            .starts_with("pronto_element_drops_total{tenant=\"default\",instance=\"fw1\",")
            && l.contains(",class=\"Discard\",reason=\"discarded\"} ")),
        "{text}"
    );
    // `--watch` refreshes with rates (two refreshes, then it ends).
    let out = ok(
        &dir,
        &[
            "stats",
            "fw1",
            "--watch",
            "--interval",
            "0.3",
            "--count",
            "2",
        ],
    );
    assert_eq!(out.matches("fw1: every 0.3s, at ").count(), 2, "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("c ") && l.contains("Counter"))
        .expect("the counter's row");
    // TimedSource every 5 ms: about 200 packets a second in.
    let rate: f64 = row
        .split_whitespace()
        .nth(2)
        .expect("IN/s")
        .parse()
        .expect("a rate");
    assert!(rate > 0.0, "{out}");
    let (watched, _, err) = cli(&dir, &["stats", "fw1", "--watch", "--interval", "0"]);
    assert!(!watched);
    assert_eq!(
        err,
        "pronto stats: --interval: expected seconds between 0.05 and 3600, found `0`\n"
    );

    // A bad reconfiguration is refused; the old configuration runs on.
    let (took, _, err) = cli(&dir, &["config", "fw1", b]);
    assert!(!took);
    assert!(err.contains("unknown element class 'Nope'"), "{err}");
    let before = count(&dir, "fw1");
    wait_until("still counting", || count(&dir, "fw1") > before);
    // A good one replaces it (a fresh counter).
    let next = write(
        &dir,
        "next.click",
        "c :: Counter; d :: Counter; TimedSource(0.005s) -> c -> d -> q :: Queue(100) -> Idle;\n",
    );
    ok(&dir, &["config", "fw1", next.to_str().expect("path")]);
    wait_until("the new configuration counts", || {
        ok(&dir, &["read", "fw1", "d.count"]).trim() != "0"
    });
    // Hot-swap: the queue of the same name and class keeps its packets
    // (Click's take_state); the counters start again.
    wait_until("packets queue up", || {
        ok(&dir, &["read", "fw1", "q.length"])
            .trim()
            .parse::<u32>()
            .unwrap_or(0)
            >= 2
    });
    let swap = write(
        &dir,
        "swap.click",
        "c :: Counter; d :: Counter; TimedSource(0.005s) -> c -> d -> Discard; Idle -> q :: Queue(100) -> Idle;\n",
    );
    let out = ok(&dir, &["config", "fw1", swap.to_str().expect("path")]);
    let n: u32 = out
        .trim()
        .strip_prefix("reconfigured fw1; state taken over: q (")
        .and_then(|r| r.strip_suffix(" packets)"))
        .unwrap_or_else(|| panic!("unexpected answer: {out}"))
        .parse()
        .expect("a packet count");
    assert!(n >= 2, "{out}");
    assert_eq!(ok(&dir, &["read", "fw1", "q.length"]).trim(), n.to_string());

    // A crash: the sandbox is killed; it comes back, and says so.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).expect("pid"),
        rustix::process::Signal::KILL,
    )
    .expect("kill");
    wait_until("restarted after the crash", || {
        let v = json(&dir, &["show", "fw1"]);
        v["state"] == "running" && v["restarts"] == 1
    });
    let v = json(&dir, &["show", "fw1"]);
    assert_eq!(v["last_crash"]["reason"], "killed by signal 9");
    assert_ne!(v["pid"].as_u64(), Some(pid));

    // Tenants: B cannot see or touch the default tenant's instance.
    let t = json(&dir, &["tenant", "create", "bee"]);
    let token = t["token"].as_str().expect("token").to_string();
    let tcp = |args: &[&str]| {
        pronto()
            .args(args)
            .args(["--url", &d.tcp, "--token", &token])
            .output()
            .expect("pronto")
    };
    let o = tcp(&["ls", "--json"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "[]");
    let o = tcp(&["rm", "fw1"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "pronto rm: no instance `fw1`\n"
    );
    let o = pronto()
        .args(["ls", "--url", &d.tcp])
        .env_remove("PRONTO_TOKEN")
        .output()
        .expect("pronto");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a token is needed"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // The daemon dies hard; on restart its instances come back.
    drop(d);
    let _d = start(&dir);
    wait_until("fw1 is back", || {
        let (good, out, _) = cli(&dir, &["show", "fw1", "--json"]);
        good && serde_json::from_str::<serde_json::Value>(&out)
            .map(|v| v["state"] == "running")
            .unwrap_or(false)
    });
    wait_until("it counts again", || {
        ok(&dir, &["read", "fw1", "d.count"]).trim() != "0"
    });
    ok(&dir, &["rm", "fw1"]);
    assert_eq!(json(&dir, &["ls"]), serde_json::json!([]));
    let (gone, _, err) = cli(&dir, &["show", "fw1"]);
    assert!(!gone);
    assert_eq!(err, "pronto show: no instance `fw1`\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The CPUs every thread of process `pid` may run on, as Linux lists them.
fn allowed_cpus(pid: u64) -> Vec<String> {
    let mut v = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .flatten()
    {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            v.push(l["Cpus_allowed_list:".len()..].trim().to_string());
        }
    }
    v
}

#[test]
fn instances_run_on_the_cpus_given() {
    if !is_root() {
        eprintln!("SKIPPED instances_run_on_the_cpus_given: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-cpus");
    let _d = start(&dir);
    let good = write(&dir, "good.click", COUNTING);
    let g = good.to_str().expect("path");
    let (made, _, err) = cli(&dir, &["create", "far", "--config", g, "--cpus", "4095"]);
    assert!(!made);
    assert!(
        err.starts_with("pronto create: cpus: CPU 4095 is not one this daemon runs on ("),
        "{err}"
    );
    let (made, _, err) = cli(&dir, &["create", "odd", "--config", g, "--cpus", "2-1"]);
    assert!(!made);
    assert_eq!(
        err,
        "pronto create: --cpus: expected CPU numbers and ranges like 0-3,6, found `2-1`\n"
    );
    ok(&dir, &["create", "pinned", "--config", g, "--cpus", "0"]);
    let v = json(&dir, &["show", "pinned"]);
    assert_eq!(v["cpus"], serde_json::json!([0]));
    let pid = v["pid"].as_u64().expect("pid");
    wait_until("the instance counts", || count(&dir, "pinned") > 0);
    let cpus = allowed_cpus(pid);
    assert!(!cpus.is_empty());
    assert!(cpus.iter().all(|c| c == "0"), "{cpus:?}");
    // A restarted sandbox is pinned again.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).expect("pid"),
        rustix::process::Signal::KILL,
    )
    .expect("kill");
    let mut new_pid = 0;
    wait_until("a restart", || {
        let v = json(&dir, &["show", "pinned"]);
        new_pid = v["pid"].as_u64().unwrap_or(0);
        v["state"] == "running" && new_pid != 0 && new_pid != pid
    });
    wait_until("the new instance counts", || count(&dir, "pinned") > 0);
    let cpus = allowed_cpus(new_pid);
    assert!(cpus.iter().all(|c| c == "0"), "{cpus:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The file `file` of the cgroup of process `pid` that holds the CPU
/// controller (v1: `cpu.shares`, v2: `cpu.weight`).
fn cpu_cgroup_file(pid: u64, v1_file: &str, v2_file: &str) -> String {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).expect("cgroup list");
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (_, ctls, path) = (f.next(), f.next().unwrap_or(""), f.next().unwrap_or(""));
        if ctls.split(',').any(|c| c == "cpu") {
            let p = format!("/sys/fs/cgroup/cpu{path}/{v1_file}");
            return std::fs::read_to_string(&p).expect(&p).trim().to_string();
        }
        if ctls.is_empty() && !text.lines().any(|l| l.contains(":cpu")) {
            let p = format!("/sys/fs/cgroup{path}/{v2_file}");
            return std::fs::read_to_string(&p).expect(&p).trim().to_string();
        }
    }
    panic!("no CPU cgroup for {pid}: {text}");
}

#[test]
fn an_instances_weight_sets_its_share_of_the_cpus_and_of_the_switch() {
    use common::api::{self, To};
    if !is_root() {
        eprintln!("SKIPPED an_instances_weight_sets_its_share_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-weight");
    let _d = start(&dir);
    let sock = dir.join("sock");
    let post = |path: &str, body: serde_json::Value| post_created(&sock, path, body);
    post("/v1/tenants", serde_json::json!({"name": "tw"}));
    let config = "FromDevice(eth0) -> c :: Counter -> Discard;";
    let body = |name: &str, weight: serde_json::Value| {
        serde_json::json!({"name": name, "tenant": "tw", "config": config, "weight": weight,
            "interfaces": [{"name": "eth0"}]})
    };
    let r = api::call(
        &To::Unix(&sock),
        "POST",
        "/v1/instances",
        body("zero", serde_json::json!(0)).to_string().as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["field"], "weight");
    assert!(
        r.json()["error"]
            .as_str()
            .expect("error")
            .starts_with("weight: 0 is out of range: 1 to 10,000"),
        "{}",
        r.text()
    );
    post("/v1/instances", body("heavy", serde_json::json!(300)));
    post("/v1/instances", body("plain", serde_json::Value::Null));
    let show = |name: &str| {
        api::call(
            &To::Unix(&sock),
            "GET",
            &format!("/v1/instances/{name}?tenant=tw"),
            b"",
        )
        .json()
    };
    let (heavy, plain) = (show("heavy"), show("plain"));
    assert_eq!(
        (&heavy["weight"], &plain["weight"]),
        (&serde_json::json!(300), &serde_json::json!(100))
    );
    let ports = api_ports(&sock);
    assert_eq!(ports["tw/heavy/eth0"]["weight"], 300);
    assert_eq!(ports["tw/plain/eth0"]["weight"], 100);
    let pid = |v: &serde_json::Value| v["pid"].as_u64().expect("pid");
    assert_eq!(
        cpu_cgroup_file(pid(&heavy), "cpu.shares", "cpu.weight").as_str(),
        {
            let v1 = !std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
            if v1 {
                "3072"
            } else {
                "300"
            }
        }
    );
    let metrics = api::call(&To::Unix(&sock), "GET", "/metrics", b"").text();
    assert!(
        metrics.contains("pronto_instance_weight{tenant=\"tw\",instance=\"heavy\"} 300")
            && metrics.contains("pronto_instance_weight{tenant=\"tw\",instance=\"plain\"} 100"),
        "{metrics}"
    );
    // The same through the command line.
    let good = write(&dir, "c.click", config);
    let g = good.to_str().expect("path");
    let (made, _, err) = cli(&dir, &["create", "w0", "--config", g, "--weight", "x"]);
    assert!(!made);
    assert_eq!(
        err,
        "pronto create: --weight: expected a number from 1 to 10000 (default 100), found `x`\n"
    );
    ok(
        &dir,
        &[
            "create", "light", "--config", g, "--weight", "50", "--iface", "eth0",
        ],
    );
    assert_eq!(json(&dir, &["show", "light"])["weight"], 50);
    assert!(ok(&dir, &["show", "light"]).contains("weight:     50\n"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Shares under overload as a sandbox's cgroup file reads them: v1
/// `cpu.shares` (1,024 per 100), v2 `cpu.weight`.
fn cpu_weight_as_read(weight: u64) -> String {
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        weight.to_string()
    } else {
        (weight * 1024 / 100).to_string()
    }
}

#[test]
fn an_instances_weight_changes_while_it_runs_and_a_tenant_cannot_raise_its_own() {
    use common::api::{self, To};
    if !is_root() {
        eprintln!("SKIPPED an_instances_weight_changes_while_it_runs_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-weight-live");
    let d = start(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let r = api::call(&unix, "POST", "/v1/tenants", br#"{"name": "tl"}"#);
    assert_eq!(r.status, 201, "{}", r.text());
    let token = r.json()["token"].as_str().expect("token").to_string();
    let tenant = To::Tcp(&d.tcp, Some(&token));
    let config = "FromDevice(eth0) -> c :: Counter -> Discard;";
    let body = |name: &str, weight: u32| {
        serde_json::json!({"name": name, "config": config, "weight": weight,
            "interfaces": [{"name": "eth0"}]})
        .to_string()
    };
    // A tenant may not give its own instance more than the default.
    let r = api::call(
        &tenant,
        "POST",
        "/v1/instances",
        body("greedy", 300).as_bytes(),
    );
    assert_eq!(
        r.error(403, Some("weight")),
        "weight: 300 is more than a tenant may give its own instances (100, the default); \
         tenant `tl` may lower its instances' weight, the admin raises it"
    );
    let r = api::call(&tenant, "POST", "/v1/instances", body("fw", 100).as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    let pid = r.json()["pid"].as_u64().expect("pid");
    let put = |to: &To<'_>, w: &str| {
        api::call(to, "PUT", "/v1/instances/fw/weight?tenant=tl", w.as_bytes())
    };
    // The tenant lowers it, cannot raise it again past 100.
    let r = put(&tenant, r#"{"weight": 40}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["weight"], 40);
    assert_eq!(
        cpu_cgroup_file(pid, "cpu.shares", "cpu.weight"),
        cpu_weight_as_read(40)
    );
    assert_eq!(api_ports(&sock)["tl/fw/eth0"]["weight"], 40);
    let r = put(&tenant, r#"{"weight": 101}"#);
    assert!(r
        .error(403, Some("weight"))
        .starts_with("weight: 101 is more than a tenant"));
    // The admin raises it: the same sandbox, its cgroup and its port at once.
    let r = put(&unix, r#"{"weight": 700}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        (r.json()["weight"].clone(), r.json()["pid"].as_u64()),
        (700.into(), Some(pid))
    );
    assert_eq!(
        cpu_cgroup_file(pid, "cpu.shares", "cpu.weight"),
        cpu_weight_as_read(700)
    );
    assert_eq!(api_ports(&sock)["tl/fw/eth0"]["weight"], 700);
    let metrics = api::call(&unix, "GET", "/metrics", b"").text();
    assert!(
        metrics.contains("pronto_instance_weight{tenant=\"tl\",instance=\"fw\"} 700"),
        "{metrics}"
    );
    // Out of range, not a number, no field: refused, nothing changes.
    assert!(put(&unix, r#"{"weight": 0}"#)
        .error(400, Some("weight"))
        .starts_with("weight: 0 is out of range: 1 to 10,000"));
    assert!(put(&unix, r#"{"weight": "x"}"#)
        .error(400, Some("weight"))
        .starts_with("request body: `weight`: invalid type: string \"x\""));
    assert_eq!(
        put(&unix, "{}").error(400, Some("weight")),
        "request body: missing field `weight`"
    );
    // Kept across a restart of the sandbox.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).expect("pid"),
        rustix::process::Signal::KILL,
    )
    .expect("kill");
    let mut new_pid = 0;
    wait_until("a restart", || {
        let v = api::call(&unix, "GET", "/v1/instances/fw?tenant=tl", b"").json();
        new_pid = v["pid"].as_u64().unwrap_or(0);
        v["state"] == "running" && new_pid != 0 && new_pid != pid
    });
    assert_eq!(
        cpu_cgroup_file(new_pid, "cpu.shares", "cpu.weight"),
        cpu_weight_as_read(700)
    );
    assert_eq!(api_ports(&sock)["tl/fw/eth0"]["weight"], 700);
    // The command line.
    let (set, _, err) = cli(&dir, &["weight", "fw", "x", "--tenant", "tl"]);
    assert!(!set);
    assert_eq!(
        err,
        "pronto weight: WEIGHT: expected a number from 1 to 10000 (default 100), found `x`\n"
    );
    assert_eq!(
        ok(&dir, &["weight", "fw", "250", "--tenant", "tl"]),
        "fw: weight 250\n"
    );
    assert_eq!(
        cpu_cgroup_file(new_pid, "cpu.shares", "cpu.weight"),
        cpu_weight_as_read(250)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_instance_gets_ports_of_its_own_geometry_within_its_memory() {
    use common::api::{self, To};
    if !is_root() {
        eprintln!("SKIPPED an_instance_gets_ports_of_its_own_geometry_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-geometry");
    let _d = start(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let body = |name: &str, memory: &str, geometry: serde_json::Value| {
        serde_json::json!({"name": name, "memory": memory, "port_geometry": geometry,
            "config": "FromDevice(eth0) -> c :: Counter -> ToDevice(eth0);",
            "interfaces": [{"name": "eth0"}, {"name": "eth1"}]})
        .to_string()
    };
    let create = |name: &str, memory: &str, geometry: serde_json::Value| {
        api::call(
            &unix,
            "POST",
            "/v1/instances",
            body(name, memory, geometry).as_bytes(),
        )
    };
    // Not a geometry: the bounds in the message.
    assert_eq!(
        create(
            "odd",
            "16M",
            serde_json::json!({"slots": 1024, "ring": 500})
        )
        .error(400, Some("port_geometry")),
        "port_geometry: 1024 slots and rings of 500 is not a port: slots from 1 to 1048576, \
         rings a power of two from 2 to 65536 (the daemon's default is its --slots and --ring)"
    );
    assert!(create("odd", "16M", serde_json::json!({"slots": 1024}))
        .error(400, Some("port_geometry"))
        .starts_with("request body: `port_geometry`: missing field `ring`"),);
    // Larger than the instance's memory: refused, nothing left behind.
    let per_port = pronto_switch::Geometry::new(8192, 1024)
        .expect("geometry")
        .region_len();
    assert_eq!(
        create(
            "big",
            "16M",
            serde_json::json!({"slots": 8192, "ring": 1024})
        )
        .error(400, Some("port_geometry")),
        format!(
            "port_geometry: 2 interfaces of 8192 slots and rings of 1024 take {} bytes ({per_port} \
             each), more than the instance's memory limit of 16777216 bytes; give it more \
             `memory` or its ports fewer slots",
            2 * per_port
        )
    );
    let listed = api::call(&unix, "GET", "/v1/instances", b"").json();
    assert_eq!(listed, serde_json::json!([]));
    // Its own geometry, beside an instance with the daemon's.
    let r = create(
        "wide",
        "64M",
        serde_json::json!({"slots": 2048, "ring": 1024}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json()["port_geometry"],
        serde_json::json!({"slots": 2048, "ring": 1024})
    );
    let r = create("plain", "64M", serde_json::Value::Null);
    assert_eq!(r.status, 201, "{}", r.text());
    let default = r.json()["port_geometry"].clone();
    assert_ne!(default, serde_json::json!({"slots": 2048, "ring": 1024}));
    let ports = api_ports(&sock);
    for i in ["eth0", "eth1"] {
        assert_eq!(
            ports[&format!("default/wide/{i}")]["port_geometry"],
            serde_json::json!({"slots": 2048, "ring": 1024})
        );
        assert_eq!(
            ports[&format!("default/plain/{i}")]["port_geometry"],
            default
        );
    }
    // The command line: both flags or neither; `show` prints it.
    let good = write(&dir, "c.click", "FromDevice(eth0) -> Discard;");
    let g = good.to_str().expect("path");
    let (made, _, err) = cli(
        &dir,
        &["create", "half", "--config", g, "--port-slots", "512"],
    );
    assert!(!made);
    assert_eq!(
        err,
        "pronto create: --port-slots and --port-ring go together (the daemon's defaults: its \
         --slots and --ring)\n"
    );
    ok(
        &dir,
        &[
            "create",
            "cli",
            "--config",
            g,
            "--mem",
            "32M",
            "--port-slots",
            "512",
            "--port-ring",
            "256",
            "--iface",
            "eth0",
        ],
    );
    assert!(ok(&dir, &["show", "cli"]).contains("ports:      512 slots, rings of 256\n"));
    assert_eq!(
        api_ports(&sock)["default/cli/eth0"]["port_geometry"],
        serde_json::json!({"slots": 512, "ring": 256})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_switch_runs_on_the_cpu_the_daemon_is_given() {
    if !is_root() {
        eprintln!("SKIPPED the_switch_runs_on_the_cpu_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-switchcpu");
    let (started, _, err) = common::pronto(&["daemon", "--switch-cpu", "x"]);
    assert!(!started);
    assert_eq!(err, "prontod: --switch-cpu: expected a number, found `x`\n");
    let cpu = std::thread::available_parallelism().map_or(1, |n| n.get()) - 1;
    let d = common::start_daemon_with(&dir, &["--switch-cpu", &cpu.to_string()]);
    let tasks = std::fs::read_dir(format!("/proc/{}/task", d.pid())).expect("tasks");
    let allowed: Vec<String> = tasks
        .filter_map(|t| {
            let t = t.ok()?.path();
            let comm = std::fs::read_to_string(t.join("comm")).ok()?;
            let status = std::fs::read_to_string(t.join("status")).ok()?;
            comm.starts_with("pronto-switch").then(|| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            })
        })
        .collect();
    assert_eq!(allowed, [cpu.to_string()]);
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_instance_polls_for_its_window_after_packets_moved() {
    use common::api::{self, To};
    if !is_root() {
        eprintln!("SKIPPED an_instance_polls_for_its_window_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-pollwindow");
    let _d = start(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let config = "FromDevice(eth0) -> c :: Counter -> ToDevice(eth0);";
    // Longer than a second: refused, with the field and the bound.
    let r = api::call(
        &unix,
        "POST",
        "/v1/instances",
        serde_json::json!({"name": "long", "config": config, "poll_window_us": 2_000_000,
            "interfaces": [{"name": "eth0"}]})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(
        r.error(400, Some("poll_window_us")),
        "poll_window_us: 2000000 is more than the longest poll window, 1000000 (one second); 0 \
         or leaving it out makes the instance sleep as soon as it finds no packets"
    );
    // From the command line: stored, shown, and the instance's router
    // polls that long (its `idle` handler).
    let file = write(&dir, "c.click", config);
    let f = file.to_str().expect("path");
    let (made, _, err) = cli(&dir, &["create", "x", "--config", f, "--poll-window", "2s"]);
    assert!(!made);
    assert_eq!(
        err,
        "pronto create: --poll-window: expected a time from 0 to 1000ms such as `50us` or `0` \
         (off), found `2s`\n"
    );
    ok(
        &dir,
        &[
            "create",
            "busy",
            "--config",
            f,
            "--iface",
            "eth0",
            "--poll-window",
            "150us",
        ],
    );
    ok(&dir, &["create", "calm", "--config", f, "--iface", "eth0"]);
    assert!(ok(&dir, &["show", "busy"])
        .contains("polls:      150 µs after packets moved, before it sleeps\n"));
    assert!(!ok(&dir, &["show", "calm"]).contains("polls:"));
    let got = |name: &str| {
        api::call(&unix, "GET", &format!("/v1/instances/{name}"), b"").json()["poll_window_us"]
            .clone()
    };
    assert_eq!(got("busy"), serde_json::json!(150));
    assert_eq!(got("calm"), serde_json::Value::Null);
    let window = |name: &str| {
        ok(&dir, &["read", name, "idle"])
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(window("busy"), "poll_window_ns 150000");
    assert_eq!(window("calm"), "poll_window_ns 0");
    // A new configuration keeps it.
    let r = api::call(
        &unix,
        "PUT",
        "/v1/instances/busy/config",
        serde_json::json!({"config": "FromDevice(eth0) -> Discard;"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(window("busy"), "poll_window_ns 150000");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_instances_rate_limit_drops_and_counts_the_excess_at_the_switch() {
    use common::api::{self, To};
    if !is_root() {
        eprintln!("SKIPPED an_instances_rate_limit_drops_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-ratelimit");
    let _d = start(&dir);
    let sock = dir.join("sock");
    let post = |path: &str, body: serde_json::Value| post_created(&sock, path, body);
    post("/v1/tenants", serde_json::json!({"name": "tr"}));
    let r = api::call(
        &To::Unix(&sock),
        "POST",
        "/v1/instances",
        serde_json::json!({"name": "bad", "tenant": "tr", "config": "Idle -> Discard;",
            "rate_limit": {"pps": 0}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["field"], "rate_limit");
    assert_eq!(
        r.json()["error"],
        "rate_limit: pps: 0 is out of range: 1 to 1000000000000 frames per second"
    );
    post(
        "/v1/instances",
        serde_json::json!({"name": "target", "tenant": "tr",
            "config": "FromDevice(eth0) -> c :: Counter -> Discard;",
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0c:01"}]}),
    );
    // 2,000 frames a second from an instance limited to 100: the switch
    // lets its burst (65 frames) and then 100 a second through.
    let t0 = Instant::now();
    post(
        "/v1/instances",
        serde_json::json!({"name": "sender", "tenant": "tr",
            "config": sender_config([2, 0, 0, 0, 0x0c, 1], [2, 0, 0, 0, 0x0c, 2]),
            "rate_limit": {"pps": 100},
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0c:02"}]}),
    );
    wait_until("the limit drops frames", || {
        api_ports(&sock)["tr/sender/eth0"]["drops_by_reason"]["rate_limit_from_port"]
            .as_u64()
            .is_some_and(|n| n > 500)
    });
    // The sender stops (a configuration without a source, hot-swapped),
    // and the counters settle.
    let r = api::call(
        &To::Unix(&sock),
        "PUT",
        "/v1/instances/sender/config?tenant=tr",
        br#"{"config": "Idle -> ToDevice(eth0);"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let secs = t0.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(300));
    let ports = api_ports(&sock);
    let (sent, got) = (&ports["tr/sender/eth0"], &ports["tr/target/eth0"]);
    assert_eq!(sent["rate_limit"], serde_json::json!({"pps": 100}));
    assert!(got["rate_limit"].is_null(), "{got}");
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().expect(k);
    let limited = n(&sent["drops_by_reason"], "rate_limit_from_port");
    // Every frame the sender's port took was either dropped there for the
    // limit or delivered to the target.
    assert_eq!(n(sent, "drops"), limited, "{sent}");
    assert_eq!(n(sent, "rx_packets") - limited, n(got, "tx_packets"));
    let delivered = n(got, "tx_packets");
    assert!(
        delivered <= 65 + (100.0 * (secs + 1.0)) as u64,
        "{delivered} frames in {secs:.1} s through a limit of 100 a second"
    );
    wait_until("the target counted them all", || {
        api_count(&sock, "tr", "target") == Some(delivered)
    });
    let metrics = api::call(&To::Unix(&sock), "GET", "/metrics", b"").text();
    let port = n(sent, "port");
    assert!(
        metrics.contains("pronto_instance_rate_limit{tenant=\"tr\",instance=\"sender\",unit=\"pps\"} 100")
            && metrics.contains(&format!(
                "pronto_switch_port_rate_limited_total{{port=\"{port}\",name=\"tr/sender/eth0\",direction=\"from_port\"}} {limited}"
            )),
        "{metrics}"
    );
    // The command line: set, show, lift; a bad rate says what is accepted.
    let (good, _, err) = cli(&dir, &["--tenant", "tr", "rate-limit", "sender", "10 mbit"]);
    assert!(!good);
    assert_eq!(
        err,
        "pronto rate-limit: RATE: `10 mbit` is not a rate: write a frame rate (`100kpps`) or a \
         bit rate (`1Gbps`, `500Mbps`), or both separated by a comma, or `none`\n"
    );
    assert_eq!(
        ok(
            &dir,
            &["--tenant", "tr", "rate-limit", "target", "1Gbps,200kpps"]
        ),
        "target: each interface limited to 1Gbps,200kpps, each way\n"
    );
    assert!(ok(&dir, &["--tenant", "tr", "show", "target"])
        .contains("rate limit: 1Gbps,200kpps each way, each interface\n"));
    assert_eq!(
        api_ports(&sock)["tr/target/eth0"]["rate_limit"],
        serde_json::json!({"pps": 200_000, "bps": 1_000_000_000})
    );
    assert_eq!(
        ok(&dir, &["--tenant", "tr", "rate-limit", "target", "none"]),
        "target: rate limit lifted\n"
    );
    assert!(json(&dir, &["--tenant", "tr", "show", "target"])["rate_limit"].is_null());
    assert!(api_ports(&sock)["tr/target/eth0"]["rate_limit"].is_null());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `count` of `tenant`'s instance `name`'s element `c`, through the API.
fn api_count(sock: &Path, tenant: &str, name: &str) -> Option<u64> {
    use common::api::{self, To};
    let r = api::call(
        &To::Unix(sock),
        "GET",
        &format!("/v1/instances/{name}/handlers/c.count?tenant={tenant}"),
        b"",
    );
    (r.status == 200).then(|| r.text().trim().parse().ok())?
}

/// The switch ports the API lists, by name.
fn api_ports(sock: &Path) -> std::collections::BTreeMap<String, serde_json::Value> {
    use common::api::{self, To};
    let r = api::call(&To::Unix(sock), "GET", "/v1/switch/ports", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|p| (p["name"].as_str().expect("name").to_string(), p.clone()))
        .collect()
}

/// A POST through the API that must create (201).
fn post_created(sock: &Path, path: &str, body: serde_json::Value) {
    use common::api::{self, To};
    let r = api::call(&To::Unix(sock), "POST", path, body.to_string().as_bytes());
    assert_eq!(r.status, 201, "{path}: {}", r.text());
}

/// A sender's configuration: 2,000 60-byte frames a second from `src` to
/// `dst` (EtherType 0x88b5) out of `eth0`.
fn sender_config(dst: [u8; 6], src: [u8; 6]) -> String {
    let mut f = [0u8; 60];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
    format!("RatedSource(DATA \\<{hex}>, RATE 2000) -> ToDevice(eth0);")
}

#[test]
fn a_restarting_instance_keeps_its_port_and_frames_for_it_are_not_flooded_to_other_tenants() {
    use common::api::{self, To};
    if !is_root() {
        eprintln!("SKIPPED a_restarting_instance_keeps_its_port_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-noflood");
    let _d = start(&dir);
    let sock = dir.join("sock");
    let post = |path: &str, body: serde_json::Value| post_created(&sock, path, body);
    post("/v1/tenants", serde_json::json!({"name": "ta"}));
    post("/v1/tenants", serde_json::json!({"name": "tb"}));
    let counting = "FromDevice(eth0) -> c :: Counter -> Discard;";
    // Another tenant's bystander counts whatever reaches it.
    post(
        "/v1/instances",
        serde_json::json!({"name": "by", "tenant": "tb", "config": counting,
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0b:01"}]}),
    );
    post(
        "/v1/instances",
        serde_json::json!({"name": "target", "tenant": "ta", "config": counting,
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0a:01"}]}),
    );
    // A sender of tenant ta: 2,000 frames a second for `target`.
    post(
        "/v1/instances",
        serde_json::json!({"name": "sender", "tenant": "ta",
            "config": sender_config([2, 0, 0, 0, 0x0a, 1], [2, 0, 0, 0, 0x0a, 2]),
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0a:02"}]}),
    );
    wait_until("target receives", || {
        api_count(&sock, "ta", "target").is_some_and(|n| n > 0)
    });
    let port = api_ports(&sock)["ta/target/eth0"]["port"].clone();
    let show = |name: &str, tenant: &str| {
        api::call(
            &To::Unix(&sock),
            "GET",
            &format!("/v1/instances/{name}?tenant={tenant}"),
            b"",
        )
        .json()
    };
    // Killed twice: it is away for a back-off of 0.1 s, then of 0.2 s,
    // while the sender goes on.
    for _ in 0..2 {
        let pid = show("target", "ta")["pid"].as_u64().expect("pid");
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid as i32).expect("pid"),
            rustix::process::Signal::KILL,
        )
        .expect("kill");
        wait_until("target runs again", || {
            let v = show("target", "ta");
            v["state"] == "running" && v["pid"].as_u64().is_some_and(|p| p != pid)
        });
    }
    wait_until("target receives again", || {
        api_count(&sock, "ta", "target").is_some_and(|n| n > 0)
    });
    // Nothing meant for `target` reached the other tenant: the frames sent
    // while it was away were dropped at the sender's port, and counted.
    assert_eq!(api_count(&sock, "tb", "by"), Some(0));
    let ports = api_ports(&sock);
    let sent = &ports["ta/sender/eth0"];
    let no_route = sent["drops_by_reason"]["no_route"]
        .as_u64()
        .expect("no_route");
    assert!(no_route > 0, "{sent}");
    assert_eq!(sent["drops"].as_u64(), Some(no_route), "{sent}");
    // It kept its port number.
    assert_eq!(ports["ta/target/eth0"]["port"], port);
    assert_eq!(show("target", "ta")["interfaces"][0]["port"], port);
    // Deleted, it gives its port back.
    let r = api::call(
        &To::Unix(&sock),
        "DELETE",
        "/v1/instances/target?tenant=ta",
        b"",
    );
    assert_eq!(r.status, 204, "{}", r.text());
    // The sandbox's port is detached as it stops (within a few seconds).
    let t0 = std::time::Instant::now();
    while api_ports(&sock).contains_key("ta/target/eth0") {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(10),
            "the deleted instance's port is still listed"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_switchs_thread_restarts_under_traffic_and_keeps_its_ports() {
    if !is_root() {
        eprintln!("SKIPPED the_switchs_thread_restarts_under_traffic_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-swthread");
    let _d = start(&dir);
    let sock = dir.join("sock");
    let post = |path: &str, body: serde_json::Value| post_created(&sock, path, body);
    post("/v1/tenants", serde_json::json!({"name": "ta"}));
    post(
        "/v1/instances",
        serde_json::json!({"name": "target", "tenant": "ta",
            "config": "FromDevice(eth0) -> c :: Counter -> Discard;",
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0c:01"}]}),
    );
    post(
        "/v1/instances",
        serde_json::json!({"name": "sender", "tenant": "ta",
            "config": sender_config([2, 0, 0, 0, 0x0c, 1], [2, 0, 0, 0, 0x0c, 2]),
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0c:02"}]}),
    );
    wait_until("target receives", || {
        api_count(&sock, "ta", "target").is_some_and(|n| n > 0)
    });
    let before = api_ports(&sock)["ta/target/eth0"]["tx_packets"]
        .as_u64()
        .expect("tx");
    let out = ok(&dir, &["ports", "restart-thread", "0"]);
    assert_eq!(
        out,
        "switching thread 0 restarted (2 port(s) taken over; it was running)\n"
    );
    // The new thread goes on where the old one was: frames still arrive,
    // and the port's counters went on from where they were.
    let n0 = api_count(&sock, "ta", "target").expect("count");
    wait_until("target receives after the restart", || {
        api_count(&sock, "ta", "target").is_some_and(|n| n > n0 + 100)
    });
    let p = &api_ports(&sock)["ta/target/eth0"];
    assert!(p["tx_packets"].as_u64().expect("tx") > before + 100, "{p}");
    assert_eq!(p["drops"], 0, "{p}");
    let v = json(&dir, &["ports", "threads"]);
    assert_eq!(v[0]["restarts"], 1, "{v}");
    assert_eq!(v[0]["alive"], true, "{v}");
    assert_eq!(v[0]["ports"], 2, "{v}");
    let out = ok(&dir, &["ports", "threads"]);
    // One table: columns padded to the widest cell, numbers right-aligned
    // (the ROUNDS header ends where the row's count ends).
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].starts_with("THREAD  PORTS  ALIVE  RESTARTS  ") && lines[0].ends_with("ROUNDS"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("     0      2  yes           1  "),
        "{out}"
    );
    assert_eq!(lines[0].len(), lines[1].len(), "{out}");
    let (good, _, err) = cli(&dir, &["ports", "restart-thread", "3"]);
    assert!(!good);
    assert!(
        err.contains("no switching thread `3` (threads are 0 to 0)"),
        "{err}"
    );
    let (good, _, err) = cli(&dir, &["ports", "shuffle"]);
    assert!(!good);
    assert!(
        err.contains("unrecognized subcommand 'shuffle'")
            && err.contains("Usage: pronto ports [OPTIONS] [COMMAND]"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A UDP frame from 10.0.0.2:1000 (`src`) to 10.0.0.1:4000 (`dst`), 60
/// bytes, IPv4 header checksum right.
fn udp_frame(dst: [u8; 6], src: [u8; 6]) -> String {
    let mut f = [0u8; 60];
    f[..6].copy_from_slice(&dst);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = [
        0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1,
    ];
    f[14..34].copy_from_slice(&ip);
    let mut sum: u32 = ip
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    f[24..26].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    // UDP 1000 -> 4000, length 12, no checksum, 4 bytes of data.
    f[34..46].copy_from_slice(&[0x03, 0xe8, 0x0f, 0xa0, 0, 12, 0, 0, b'p', b'i', b'n', b'g']);
    f.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_capture_writes_what_an_instances_interface_receives_for_tcpdump() {
    use common::api::{self, To};
    if !is_root() {
        eprintln!("SKIPPED a_capture_writes_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-capture");
    let d = start(&dir);
    let sock = dir.join("sock");
    let post = |path: &str, body: serde_json::Value| post_created(&sock, path, body);
    post("/v1/tenants", serde_json::json!({"name": "ta"}));
    let other = api::call(
        &To::Unix(&sock),
        "POST",
        "/v1/tenants",
        br#"{"name": "tb"}"#,
    );
    assert_eq!(other.status, 201, "{}", other.text());
    let tb_token = other.json()["token"].as_str().expect("token").to_string();
    post(
        "/v1/instances",
        serde_json::json!({"name": "target", "tenant": "ta",
            "config": "FromDevice(eth0) -> c :: Counter -> Discard;",
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0a:01"}]}),
    );
    let frame = udp_frame([2, 0, 0, 0, 0x0a, 1], [2, 0, 0, 0, 0x0a, 2]);
    post(
        "/v1/instances",
        serde_json::json!({"name": "sender", "tenant": "ta",
            "config": format!("RatedSource(DATA \\<{frame}>, RATE 200) -> ToDevice(eth0);"),
            "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0a:02"}]}),
    );
    wait_until("target receives", || {
        api_count(&sock, "ta", "target").is_some_and(|n| n > 0)
    });
    let file = dir.join("target.pcapng");
    let f = file.to_str().expect("path");
    let (took, _, err) = cli(
        &dir,
        &[
            "capture",
            "target:eth0",
            "-w",
            f,
            "--count",
            "5",
            "--filter",
            "udp dst port 4000",
            "--tenant",
            "ta",
        ],
    );
    assert!(took, "{err}");
    assert_eq!(err, format!("5 frames written to {f}\n"));
    if let Some(text) = common::tcpdump(&file) {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        for l in lines {
            assert!(
                l.ends_with(" IP 10.0.0.2.1000 > 10.0.0.1.4000: UDP, length 4"),
                "{l}"
            );
        }
    }
    // Each frame is marked inbound (delivered to the port), whole.
    assert_eq!(pcapng_frames(&file), vec![(1, 60); 5]);
    // Nothing matches: the capture ends at its time limit, empty but
    // readable.
    let (took, _, err) = cli(
        &dir,
        &[
            "capture",
            "target:eth0",
            "-w",
            f,
            "--seconds",
            "0.5",
            "--filter",
            "tcp",
            "--tenant",
            "ta",
        ],
    );
    assert!(took, "{err}");
    assert_eq!(err, format!("0 frames written to {f}\n"));
    if let Some(text) = common::tcpdump(&file) {
        assert_eq!(text, "");
    }
    // Errors an operator can act on.
    let (took, _, err) = cli(&dir, &["capture", "target:eth9", "-w", f, "--tenant", "ta"]);
    assert!(!took);
    assert_eq!(
        err,
        "pronto capture: target has no interface `eth9` (it has: eth0)\n"
    );
    let (took, _, err) = cli(
        &dir,
        &[
            "capture",
            "target:eth0",
            "-w",
            f,
            "--filter",
            "udp prot 53",
            "--tenant",
            "ta",
        ],
    );
    assert!(!took);
    assert!(err.starts_with("pronto capture: filter: "), "{err}");
    // A refused capture leaves the file as it was.
    assert_eq!(pcapng_frames(&file), vec![]);
    std::fs::remove_file(&file).expect("remove");
    let (took, _, _) = cli(&dir, &["capture", "99", "-w", f]);
    assert!(!took);
    assert!(!file.exists());
    // The next two packets through the target, element by element.
    let out = ok(&dir, &["trace", "target", "--count", "2", "--tenant", "ta"]);
    let path = "  FromDevice@1 :: FromDevice       made -> out 0\n  \
                c :: Counter                     in 0 -> out 0\n  \
                Discard@3 :: Discard             in 0 -> dropped: discarded\n";
    assert_eq!(
        out,
        format!("trace: 2 of 2 packets\npacket 1\n{path}packet 2\n{path}")
    );
    let (traced, out, err) = cli(
        &dir,
        &[
            "trace",
            "target",
            "--filter",
            "tcp",
            "--seconds",
            "0.3",
            "--tenant",
            "ta",
        ],
    );
    assert!(traced, "{err}");
    assert_eq!(out, "trace: 0 of 1 packets matching `tcp`\n");
    assert_eq!(
        err,
        "pronto trace: fewer packets than asked for came in 0.3 s (--seconds waits longer)\n"
    );
    // A packet that leaves through ToDevice was sent out.
    let out = ok(&dir, &["trace", "sender", "--tenant", "ta"]);
    assert_eq!(
        out,
        "trace: 1 of 1 packets\npacket 1\n  \
         RatedSource@1 :: RatedSource     made -> out 0\n  \
         ToDevice@2 :: ToDevice           in 0 -> sent out\n"
    );
    // The trace is off again afterwards.
    assert_eq!(
        ok(&dir, &["read", "target", "trace", "--tenant", "ta"]),
        "trace: off\n"
    );
    // Another tenant cannot capture ta's port.
    let port = api_ports(&sock)["ta/target/eth0"]["port"].clone();
    let r = api::call(
        &To::Tcp(&d.tcp, Some(&tb_token)),
        "GET",
        &format!("/v1/switch/ports/{port}/capture?count=1&seconds=0.2"),
        b"",
    );
    assert_eq!(r.status, 404, "{}", r.text());
}

/// The enhanced packet blocks of a pcapng file: (direction flag, captured
/// length) each.
fn pcapng_frames(path: &Path) -> Vec<(u32, u32)> {
    let b = std::fs::read(path).expect("the capture");
    let word = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let (mut at, mut out) = (0, Vec::new());
    while at + 12 <= b.len() {
        let (kind, len) = (word(at), word(at + 4) as usize);
        if kind == 6 {
            let caplen = word(at + 20);
            let opts = at + 28 + (caplen as usize).next_multiple_of(4);
            // The first option is epb_flags (code 2, length 4).
            assert_eq!(word(opts), 2 | (4 << 16));
            out.push((word(opts + 4), caplen));
        }
        at += len;
    }
    out
}

#[test]
fn the_switch_answers_arp_for_an_instances_address_without_waking_it() {
    if !is_root() {
        eprintln!("SKIPPED the_switch_answers_arp_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-arp");
    let _d = start(&dir);
    let sock = dir.join("sock");
    let counting = write(
        &dir,
        "count.click",
        "FromDevice(eth0) -> c :: Counter -> Discard;\n",
    );
    let c = counting.to_str().expect("path");
    let (bad, _, err) = cli(
        &dir,
        &[
            "create",
            "nope",
            "--config",
            c,
            "--iface",
            "eth0=02:00:00:00:0a:01,10.0.0.300",
        ],
    );
    assert!(!bad);
    assert_eq!(
        err,
        "pronto create: interface eth0: `10.0.0.300` is not an IPv4 or IPv6 address \
         (10.0.0.1, fd00::1)\n"
    );
    ok(
        &dir,
        &[
            "create",
            "target",
            "--config",
            c,
            "--iface",
            "eth0=02:00:00:00:0a:01,10.0.0.1",
        ],
    );
    assert_eq!(
        json(&dir, &["show", "target"])["interfaces"][0]["ip"],
        "10.0.0.1"
    );
    // A neighbour asks 200 times a second who has 10.0.0.1, and counts
    // the answers.
    let mut req = vec![0xffu8; 6];
    req.extend_from_slice(&[2, 0, 0, 0, 0x0a, 2, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    req.extend_from_slice(&[
        2, 0, 0, 0, 0x0a, 2, 10, 0, 0, 2, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1,
    ]);
    req.resize(60, 0);
    let hex: String = req.iter().map(|b| format!("{b:02x}")).collect();
    let asking = write(
        &dir,
        "ask.click",
        &format!(
            "RatedSource(DATA \\<{hex}>, RATE 200) -> ToDevice(eth0);\n\
             FromDevice(eth0) -> a :: Counter -> Discard;\n"
        ),
    );
    ok(
        &dir,
        &[
            "create",
            "asker",
            "--config",
            asking.to_str().expect("path"),
            "--iface",
            "eth0=02:00:00:00:0a:02",
        ],
    );
    wait_until("answers come", || {
        ok(&dir, &["read", "asker", "a.count"])
            .trim()
            .parse::<u64>()
            .is_ok_and(|n| n >= 5)
    });
    // The target never saw one of them.
    assert_eq!(ok(&dir, &["read", "target", "c.count"]).trim(), "0");
    let ports = api_ports(&sock);
    let asker = &ports["default/asker/eth0"];
    assert!(asker["arp_answered"].as_u64().expect("n") >= 5, "{asker}");
    assert_eq!(ports["default/target/eth0"]["tx_packets"], 0);
    // An IPv6 address, and an interface that takes no broadcasts.
    ok(
        &dir,
        &[
            "create",
            "quiet",
            "--config",
            c,
            "--iface",
            "eth0=02:00:00:00:0a:03,fd00::3,nobroadcast",
        ],
    );
    let v = json(&dir, &["show", "quiet"]);
    assert_eq!(v["interfaces"][0]["ip"], "fd00::3");
    assert_eq!(v["interfaces"][0]["broadcast"], false);
    assert_eq!(
        json(&dir, &["show", "target"])["interfaces"][0]["broadcast"],
        true
    );
    // The asker's requests (broadcasts the switch does not answer once
    // the target is gone) skip the quiet instance, counted at the asker.
    ok(&dir, &["rm", "target"]);
    wait_until("broadcasts skip the quiet instance", || {
        api_ports(&sock)["default/asker/eth0"]["flood_skipped"]
            .as_u64()
            .is_some_and(|n| n >= 3)
    });
    assert_eq!(ok(&dir, &["read", "quiet", "c.count"]).trim(), "0");
}

/// Descriptors process `pid` holds, and how many of them are memfds,
/// eventfds or pidfds.
fn fds_of(pid: u32) -> (usize, usize) {
    let mut all = 0;
    let mut kinds = 0;
    for e in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("the daemon's descriptors")
        .flatten()
    {
        all += 1;
        let link = std::fs::read_link(e.path()).unwrap_or_default();
        let link = link.to_string_lossy();
        if link.starts_with("/memfd:")
            || link == "anon_inode:[eventfd]"
            || link == "anon_inode:[pidfd]"
        {
            kinds += 1;
        }
    }
    (all, kinds)
}

#[test]
fn the_daemon_holds_one_descriptor_per_instance() {
    if !is_root() {
        eprintln!("SKIPPED the_daemon_holds_one_descriptor_per_instance: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-fds");
    // No pre-started sandboxes: each would hold a socket of its own.
    let d = common::start_daemon_with(&dir, &["--warm", "0"]);
    let sock = dir.join("sock");
    let counting = write(
        &dir,
        "count.click",
        "FromDevice(eth0) -> c :: Counter -> Discard;\n",
    );
    let c = counting.to_str().expect("path");
    let create = |name: &str, i: usize| {
        ok(
            &dir,
            &[
                "create",
                name,
                "--config",
                c,
                "--iface",
                &format!("eth0=02:00:00:00:0b:{i:02x}"),
            ],
        );
    };
    // The first instance brings up what the daemon opens once.
    create("first", 0);
    let wait_running = |n: usize| {
        wait_until("instances running", || {
            json(&dir, &["ls"])
                .as_array()
                .is_some_and(|a| a.len() == n && a.iter().all(|v| v["state"] == "running"))
        })
    };
    wait_running(1);
    let before = fds_of(d.pid());
    const N: usize = 12;
    for i in 1..=N {
        create(&format!("i{i}"), i);
    }
    wait_running(N + 1);
    let after = fds_of(d.pid());
    // At most one each (the socket to the sandbox; a little room for an
    // API connection still closing), and no memfd, eventfd or pidfd at all.
    assert!(
        after.0 <= before.0 + N + 2,
        "{N} more instances: {before:?} -> {after:?} descriptors"
    );
    assert_eq!(after.1, before.1, "memfds, eventfds and pidfds");
    let ports = api_ports(&sock);
    assert_eq!(ports.len(), N + 1, "{ports:?}");
    for i in 1..=N {
        ok(&dir, &["rm", &format!("i{i}")]);
    }
    wait_running(1);
    let removed = fds_of(d.pid());
    assert!(
        removed.0 <= before.0 + 2 && removed.1 == before.1,
        "all but the first removed: {before:?} -> {removed:?} descriptors"
    );
}

#[test]
fn an_instance_reads_the_files_it_was_given_and_says_how_to_give_a_missing_one() {
    use common::api::{self, To};
    if !is_root() {
        eprintln!("SKIPPED an_instance_reads_the_files_it_was_given_...: sandboxes need root");
        return;
    }
    let dir = common::scratch("daemon-files");
    let _d = start(&dir);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let config =
        "FromDevice(eth0) -> Strip(14) -> CheckIPHeader -> ids :: IDSMatcher(rules/my.rules);\n\
                  ids[0] -> Discard; ids[1] -> Discard;";
    let post = |body: serde_json::Value| {
        api::call(&unix, "POST", "/v1/instances", body.to_string().as_bytes())
    };
    // A path that climbs out, or too many bytes: refused, with the field.
    let r = post(serde_json::json!({"name": "bad", "config": config,
        "files": {"../etc/passwd": "x"}}));
    assert_eq!(
        r.error(400, Some("files")),
        "files: the path `../etc/passwd` has a `..` component"
    );
    let big = "#".repeat(600 << 10);
    let r = post(serde_json::json!({"name": "bad", "config": config,
        "files": {"a": big, "b": big}}));
    assert_eq!(
        r.error(400, Some("files")),
        "files: 1228800 bytes in all, at most 1048576 (1 MiB)"
    );
    // Without the file the sandbox cannot read it, and says how to give it.
    let file = write(&dir, "ids.click", config);
    let f = file.to_str().expect("path");
    let (made, _, err) = cli(&dir, &["create", "blind", "--config", f, "--iface", "eth0"]);
    assert!(!made);
    assert!(
        err.contains(
            "cannot read rules file /rules/my.rules: No such file or directory (os error 2); a \
             sandboxed instance reads only the files given with it (`files` in its spec, \
             `pronto create --file`)"
        ),
        "{err}"
    );
    // Given from the command line (the path as the configuration names it,
    // the text from a local file): read, shown, and kept for a new
    // configuration.
    let rules = write(
        &dir,
        "local.rules",
        "alert tcp any any -> any 80 (msg:\"a\"; content:\"attack\"; sid:1;)\n\
         alert udp any any -> any 53 (msg:\"b\"; content:\"evil\"; sid:2;)\n",
    );
    let given = format!("rules/my.rules={}", rules.display());
    ok(
        &dir,
        &[
            "create", "ids", "--config", f, "--iface", "eth0", "--file", &given,
        ],
    );
    assert_eq!(ok(&dir, &["read", "ids", "ids.rules"]).trim(), "2");
    let shown = ok(&dir, &["show", "ids"]);
    assert!(
        shown.contains("file:       rules/my.rules (126 bytes)\n"),
        "{shown}"
    );
    let v = api::call(&unix, "GET", "/v1/instances/ids", b"").json();
    assert_eq!(v["files"], serde_json::json!({"rules/my.rules": 126}));
    let r = api::call(
        &unix,
        "PUT",
        "/v1/instances/ids/config",
        serde_json::json!({"config": config.replace("IDSMatcher(rules/my.rules)",
            "IDSMatcher(./rules/my.rules, HOME_NET 10.0.0.0/8)")})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(ok(&dir, &["read", "ids", "ids.rules"]).trim(), "2");
    let (made, _, err) = cli(
        &dir,
        &[
            "create",
            "x",
            "--config",
            f,
            "--file",
            "rules/my.rules=/nonexistent/r",
        ],
    );
    assert!(!made);
    assert_eq!(
        err,
        "pronto create: --file rules/my.rules=/nonexistent/r: cannot read /nonexistent/r: No \
         such file or directory (os error 2)\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
