//! The daemon's command line: `pronto create`, `ls`, `show`, `rm`,
//! `config`, `read`, `write`, `stats`, `tenant`, `ports`, `log`. Each is one API
//! request; output is for people unless `--json` asks for the API's JSON.

use std::process::ExitCode;

use serde_json::{json, Value};

use crate::cli::{CtlCall, Global};
use crate::http::{request, Endpoint, Response};
use crate::table::{Align, Table};

struct Ctx {
    ep: Endpoint,
    token: Option<String>,
    tenant: Option<String>,
    json: bool,
}

impl Ctx {
    fn q(&self, path: &str) -> String {
        match &self.tenant {
            Some(t) => format!("{path}?tenant={t}"),
            None => path.to_string(),
        }
    }

    fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> Result<Response, String> {
        let r = request(&self.ep, self.token.as_deref(), method, path, body)?;
        if r.status >= 400 {
            return Err(r.error());
        }
        Ok(r)
    }

    fn json(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, String> {
        let text = body.map(|b| b.to_string());
        let r = self.call(
            method,
            path,
            text.as_deref().map(|t| ("application/json", t.as_bytes())),
        )?;
        if r.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&r.body).map_err(|e| format!("the daemon sent bad JSON: {e}"))
    }
}

/// Runs `pronto CMD ARGS` for the daemon commands.
/// `s` as one URL path segment: the `/` of a compound element's name
/// (`nf/udp.count`) and other reserved bytes percent-encoded.
fn path_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'~' | b'@' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn main(call: CtlCall, g: &Global) -> ExitCode {
    let cmd = call.cmd;
    match run(call, g) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pronto {cmd}: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(call: CtlCall, g: &Global) -> Result<(), String> {
    let CtlCall { cmd, pos, flags } = call;
    let socket = g.socket.clone();
    let url = g.url.clone().or_else(|| std::env::var("PRONTO_URL").ok());
    let token = g
        .token
        .clone()
        .or_else(|| std::env::var("PRONTO_TOKEN").ok());
    let tenant = g.tenant.clone();
    let json = g.json;
    let ep = Endpoint::choose(socket.as_deref(), url.as_deref(), g.fingerprint.as_deref())?;
    let c = Ctx {
        ep,
        token,
        tenant,
        json,
    };
    let need = |n: usize, what: &str| -> Result<(), String> {
        if pos.len() < n {
            Err(format!("expected {what} (`pronto {cmd} --help`)"))
        } else {
            Ok(())
        }
    };
    let flag = |name: &[&str]| {
        flags
            .iter()
            .filter(|(k, _)| name.contains(&k.as_str()))
            .map(|(_, v)| v.clone())
            .collect::<Vec<_>>()
    };
    match cmd {
        "create" => {
            need(1, "NAME")?;
            let file = flag(&["--config"])
                .pop()
                .ok_or("--config FILE is required (the instance's Click configuration)")?;
            let config = std::fs::read_to_string(&file).map_err(|e| format!("{file}: {e}"))?;
            let mut body = json!({"name": pos[0], "config": config});
            if let Some(m) = flag(&["--mem", "--memory"]).pop() {
                body["memory"] = json!(m);
            }
            if let Some(cpu) = flag(&["--cpu"]).pop() {
                let v: f64 = cpu.parse().map_err(|_| {
                    format!("--cpu: expected a share of a CPU (0.2), found `{cpu}`")
                })?;
                body["cpu"] = json!(v);
            }
            if let Some(list) = flag(&["--cpus"]).pop() {
                body["cpus"] = json!(parse_cpu_list(&list).map_err(|e| format!("--cpus: {e}"))?);
            }
            if let Some(p) = flag(&["--pids"]).pop() {
                let v: u64 = p
                    .parse()
                    .map_err(|_| format!("--pids: expected a number, found `{p}`"))?;
                body["pids"] = json!(v);
            }
            if let Some(w) = flag(&["--weight"]).pop() {
                let v: u32 = w.parse().map_err(|_| {
                    format!(
                        "--weight: expected a number from 1 to 10000 (default 100), found `{w}`"
                    )
                })?;
                body["weight"] = json!(v);
            }
            let slots = flag(&["--port-slots"]).pop();
            let ring = flag(&["--port-ring"]).pop();
            if slots.is_some() || ring.is_some() {
                let (Some(slots), Some(ring)) = (slots, ring) else {
                    return Err("--port-slots and --port-ring go together (the daemon's \
                                defaults: its --slots and --ring)"
                        .into());
                };
                let n = |flag: &str, v: &str| -> Result<u32, String> {
                    v.parse()
                        .map_err(|_| format!("{flag}: expected a number, found `{v}`"))
                };
                body["port_geometry"] =
                    json!({"slots": n("--port-slots", &slots)?, "ring": n("--port-ring", &ring)?});
            }
            if let Some(w) = flag(&["--poll-window"]).pop() {
                body["poll_window_us"] = json!(crate::run::parse_poll_window(&w)? / 1_000);
            }
            if let Some(n) = flag(&["--node"]).pop() {
                body["node"] = json!(n);
            }
            if let Some(g) = flag(&["--group"]).pop() {
                body["group"] = json!(g);
            }
            if let Some(n) = flag(&["--prefer-node"]).pop() {
                body["prefer_node"] = json!(n);
            }
            if let Some(r) = flag(&["--rate-limit"]).pop() {
                let l = pronto_switch::RateLimit::parse(&r)
                    .map_err(|e| format!("--rate-limit: {e}"))?;
                body["rate_limit"] = json!(l.to_string());
            }
            let ifaces: Vec<Value> = flag(&["--iface"])
                .iter()
                .map(|f| match f.split_once('=') {
                    Some((n, rest)) => {
                        let mut parts = rest.split(',');
                        let mut v = json!({"name": n, "mac": parts.next().unwrap_or("")});
                        for p in parts {
                            if p == "nobroadcast" {
                                v["broadcast"] = json!(false);
                            } else {
                                v["ip"] = json!(p);
                            }
                        }
                        v
                    }
                    None => json!({"name": f}),
                })
                .collect();
            if !ifaces.is_empty() {
                body["interfaces"] = json!(ifaces);
            }
            let mut files = serde_json::Map::new();
            for f in flag(&["--file"]) {
                let (path, local) = f.split_once('=').unwrap_or((&f, &f));
                let text = std::fs::read_to_string(local)
                    .map_err(|e| format!("--file {f}: cannot read {local}: {e}"))?;
                files.insert(path.to_string(), json!(text));
            }
            if !files.is_empty() {
                body["files"] = Value::Object(files);
            }
            if let Some(t) = &c.tenant {
                body["tenant"] = json!(t);
            }
            let v = c.json("POST", "/v1/instances", Some(&body))?;
            print_instance(&c, &v, true);
        }
        "ls" => {
            let v = c.json("GET", &c.q("/v1/instances"), None)?;
            if c.json {
                crate::outln!("{v:#}");
            } else {
                print_table(&v);
            }
        }
        "show" => {
            need(1, "NAME")?;
            let v = c.json("GET", &c.q(&format!("/v1/instances/{}", pos[0])), None)?;
            print_instance(&c, &v, false);
        }
        "rm" => {
            need(1, "NAME")?;
            c.call("DELETE", &c.q(&format!("/v1/instances/{}", pos[0])), None)?;
            if !c.json {
                crate::outln!("removed {}", pos[0]);
            }
        }
        "config" => {
            need(2, "NAME FILE")?;
            let config =
                std::fs::read_to_string(&pos[1]).map_err(|e| format!("{}: {e}", pos[1]))?;
            let v = c.json(
                "PUT",
                &c.q(&format!("/v1/instances/{}/config", pos[0])),
                Some(&json!({ "config": config })),
            )?;
            if c.json {
                crate::outln!("{v:#}");
            } else {
                let took: Vec<&str> = v["took_state"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|t| t.as_str()).collect())
                    .unwrap_or_default();
                if took.is_empty() {
                    crate::outln!("reconfigured {}", pos[0]);
                } else {
                    crate::outln!(
                        "reconfigured {}; state taken over: {}",
                        pos[0],
                        took.join(", ")
                    );
                }
            }
        }
        "weight" => {
            need(2, "NAME WEIGHT")?;
            let w: u32 = pos[1].parse().map_err(|_| {
                format!(
                    "WEIGHT: expected a number from 1 to 10000 (default 100), found `{}`",
                    pos[1]
                )
            })?;
            let v = c.json(
                "PUT",
                &c.q(&format!("/v1/instances/{}/weight", pos[0])),
                Some(&json!({ "weight": w })),
            )?;
            if c.json {
                crate::outln!("{v:#}");
            } else {
                crate::outln!("{}: weight {}", pos[0], v["weight"]);
            }
        }
        "rate-limit" => {
            need(2, "NAME RATE")?;
            let l = pronto_switch::RateLimit::parse(&pos[1]).map_err(|e| format!("RATE: {e}"))?;
            let v = c.json(
                "PUT",
                &c.q(&format!("/v1/instances/{}/rate_limit", pos[0])),
                Some(&json!({ "rate_limit": l.to_string() })),
            )?;
            if c.json {
                crate::outln!("{v:#}");
            } else if l.is_set() {
                crate::outln!("{}: each interface limited to {l}, each way", pos[0]);
            } else {
                crate::outln!("{}: rate limit lifted", pos[0]);
            }
        }
        "read" => {
            need(2, "NAME ELEMENT.HANDLER")?;
            let r = c.call(
                "GET",
                &c.q(&format!(
                    "/v1/instances/{}/handlers/{}",
                    pos[0],
                    path_segment(&pos[1])
                )),
                None,
            )?;
            let t = r.text();
            crate::out!("{t}");
            if !t.ends_with('\n') {
                crate::outln!();
            }
        }
        "write" => {
            need(2, "NAME ELEMENT.HANDLER [VALUE]")?;
            let value = pos[2..].join(" ");
            c.call(
                "PUT",
                &c.q(&format!(
                    "/v1/instances/{}/handlers/{}",
                    pos[0],
                    path_segment(&pos[1])
                )),
                Some(("text/plain", value.as_bytes())),
            )?;
        }
        "trace" => {
            need(1, "NAME")?;
            let count = flag(&["--count"]).pop().unwrap_or_else(|| "1".into());
            let n: u32 = count
                .parse()
                .ok()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| format!("--count: 1 to 1000 packets, found `{count}`"))?;
            let seconds = match flag(&["--seconds"]).pop() {
                None => 10.0,
                Some(v) => v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| *s > 0.0 && *s <= 3600.0)
                    .ok_or_else(|| format!("--seconds: more than 0, at most 3600, found `{v}`"))?,
            };
            let value = match flag(&["--filter"]).pop() {
                Some(f) => format!("{n} {f}"),
                None => n.to_string(),
            };
            let handler = |m: &str, body: Option<&str>| {
                let r = c.call(
                    m,
                    &c.q(&format!("/v1/instances/{}/handlers/trace", pos[0])),
                    body.map(|b| ("text/plain", b.as_bytes())),
                )?;
                if r.status == 200 {
                    Ok(r.text())
                } else {
                    Err(r.error())
                }
            };
            handler("PUT", Some(&value))?;
            let until = std::time::Instant::now() + std::time::Duration::from_secs_f64(seconds);
            let done = format!("trace: {n} of {n} packets");
            let mut report = handler("GET", None)?;
            // Done once every packet is marked and none is still inside an
            // element's call.
            while (!report.starts_with(&done) || report.contains("in the element now"))
                && std::time::Instant::now() < until
            {
                std::thread::sleep(std::time::Duration::from_millis(100));
                report = handler("GET", None)?;
            }
            let _ = handler("PUT", Some("off"));
            crate::out!("{report}");
            if !report.starts_with(&done) {
                eprintln!(
                    "pronto trace: fewer packets than asked for came in {seconds} s \
                     (--seconds waits longer)"
                );
            }
        }
        "capture" => {
            need(1, "PORT or NAME:IFACE")?;
            // An instance's interface by name (answered, in a cluster, by
            // the node that runs it), or a switch port of this daemon by
            // number.
            let base = match pos[0].split_once(':') {
                None => format!("/v1/switch/ports/{}/capture", pos[0]),
                Some((name, iface)) => c.q(&format!(
                    "/v1/instances/{}/interfaces/{}/capture",
                    crate::ctl::percent(name),
                    crate::ctl::percent(iface)
                )),
            };
            let mut query = Vec::new();
            for (f, k) in [
                ("--count", "count"),
                ("--seconds", "seconds"),
                ("--snaplen", "snaplen"),
                ("--direction", "direction"),
                ("--filter", "filter"),
            ] {
                if let Some(v) = flag(&[f]).pop() {
                    query.push(format!("{k}={}", crate::ctl::percent(&v)));
                }
            }
            let sep = if base.contains('?') { '&' } else { '?' };
            let path = format!("{base}{sep}{}", query.join("&"));
            let file = flag(&["--write"]).pop().unwrap_or_else(|| "-".into());
            let token = c.token.clone();
            if file == "-" {
                crate::http::stream_to(&c.ep, token.as_deref(), &path, &mut || {
                    Ok(Box::new(std::io::stdout()))
                })?;
            } else {
                crate::http::stream_to(&c.ep, token.as_deref(), &path, &mut || {
                    let f = std::fs::File::create(&file).map_err(|e| format!("{file}: {e}"))?;
                    Ok(Box::new(f))
                })?;
                let (frames, dropped) = pcapng_summary(&file);
                eprintln!(
                    "{frames} frames written to {file}{}",
                    if dropped > 0 {
                        format!(" ({dropped} more matched but the capture could not keep up)")
                    } else {
                        String::new()
                    }
                );
            }
        }
        "stats" if !flag(&["--watch"]).is_empty() => {
            let interval = match flag(&["--interval"]).pop() {
                None => 1.0,
                Some(v) => match v.parse::<f64>() {
                    Ok(x) if (0.05..=3600.0).contains(&x) => x,
                    _ => {
                        return Err(format!(
                            "--interval: expected seconds between 0.05 and 3600, found `{v}`"
                        ))
                    }
                },
            };
            let count = match flag(&["--count"]).pop() {
                None => None,
                Some(v) => Some(v.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("--count: expected a number of refreshes (1 or more), found `{v}`")
                })?),
            };
            crate::stats::watch(&pos[0], interval, count, |path| {
                c.json("GET", &c.q(path), None)
            })?;
        }
        "stats" => {
            let path = match pos.first() {
                Some(n) => c.q(&format!("/v1/instances/{n}/stats")),
                None => "/v1/stats".to_string(),
            };
            let v = c.json("GET", &path, None)?;
            if c.json || pos.is_empty() {
                crate::outln!("{v:#}");
            } else {
                print_element_stats(&v);
            }
        }
        "ports" if pos.first().map(String::as_str) == Some("threads") => {
            let v = c.json("GET", "/v1/switch/threads", None)?;
            if c.json {
                crate::outln!("{v:#}");
            } else {
                let mut t = Table::new(&[
                    ("THREAD", Align::Right),
                    ("PORTS", Align::Right),
                    ("ALIVE", Align::Left),
                    ("RESTARTS", Align::Right),
                    ("ROUNDS", Align::Right),
                ]);
                for th in v.as_array().into_iter().flatten() {
                    let alive = if th["alive"] == json!(true) {
                        "yes"
                    } else {
                        "no"
                    };
                    t.row([
                        s(&th["thread"]),
                        s(&th["ports"]),
                        alive.to_string(),
                        s(&th["restarts"]),
                        s(&th["rounds"]),
                    ]);
                }
                crate::out!("{}", t.render());
            }
        }
        "ports" if pos.first().map(String::as_str) == Some("restart-thread") => {
            need(2, "restart-thread N")?;
            let v = c.json(
                "POST",
                &format!("/v1/switch/threads/{}/restart", pos[1]),
                None,
            )?;
            if c.json {
                crate::outln!("{v:#}");
            } else {
                crate::outln!(
                    "switching thread {} restarted ({} port(s) taken over; it was {})",
                    v["thread"],
                    v["ports"],
                    s(&v["was"])
                );
            }
        }
        "ports" if !pos.is_empty() => {
            return Err(format!(
                "ports: unknown subcommand `{}` (expected `threads` or `restart-thread N`)",
                pos[0]
            ))
        }
        "ports" => {
            let v = c.json("GET", "/v1/switch/ports", None)?;
            if c.json {
                crate::outln!("{v:#}");
            } else {
                let mut t = Table::new(&[
                    ("PORT", Align::Right),
                    ("NAME", Align::Left),
                    ("RX PKTS", Align::Right),
                    ("TX PKTS", Align::Right),
                    ("DROPS", Align::Right),
                    ("WHY", Align::Left),
                ]);
                for p in v.as_array().into_iter().flatten() {
                    // The reasons that counted anything, `reason=N` each.
                    let why: Vec<String> = p["drops_by_reason"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .filter(|(_, n)| n.as_u64().is_some_and(|n| n > 0))
                        .map(|(k, n)| format!("{k}={n}"))
                        .collect();
                    t.row([
                        s(&p["port"]),
                        s(&p["name"]),
                        s(&p["rx_packets"]),
                        s(&p["tx_packets"]),
                        s(&p["drops"]),
                        why.join(" "),
                    ]);
                }
                crate::out!("{}", t.render());
            }
        }
        "tenant" => match pos.first().map(String::as_str) {
            Some("create") => {
                need(2, "create NAME")?;
                let v = c.json("POST", "/v1/tenants", Some(&json!({"name": pos[1]})))?;
                if c.json {
                    crate::outln!("{v:#}");
                } else {
                    crate::outln!("tenant {} created; its token (shown once):", pos[1]);
                    crate::outln!("{}", s(&v["token"]));
                }
            }
            Some("ls") | None => {
                let v = c.json("GET", "/v1/tenants", None)?;
                if c.json {
                    crate::outln!("{v:#}");
                } else {
                    let mut t = Table::new(&[("TENANT", Align::Left), ("INSTANCES", Align::Right)]);
                    for x in v.as_array().into_iter().flatten() {
                        t.row([s(&x["name"]), s(&x["instances"])]);
                    }
                    crate::out!("{}", t.render());
                }
            }
            Some("rm") => {
                need(2, "rm NAME")?;
                c.call("DELETE", &format!("/v1/tenants/{}", pos[1]), None)?;
            }
            Some("quota") => {
                need(2, "quota NAME")?;
                let mut patch = serde_json::Map::new();
                let count = |flag: &str, v: &str| -> Result<Value, String> {
                    v.parse::<u64>()
                        .map(|n| json!(n))
                        .map_err(|_| format!("{flag}: expected a number, found `{v}`"))
                };
                for (k, v) in &flags {
                    let (field, value) = match k.as_str() {
                        "--instances" => ("instances", count(k, v)?),
                        "--pids" => ("pids", count(k, v)?),
                        "--interfaces" => ("interfaces", count(k, v)?),
                        "--control-connections" => ("control_connections", count(k, v)?),
                        "--mem" | "--memory" => ("memory", json!(v)),
                        "--control-ports" => ("control_ports", json!(v)),
                        "--cpu" => (
                            "cpu",
                            json!(v.parse::<f64>().map_err(|_| {
                                format!("--cpu: expected a number of CPUs, found `{v}`")
                            })?),
                        ),
                        other => return Err(format!("{other} is not a quota field")),
                    };
                    patch.insert(field.to_string(), value);
                }
                let path = format!("/v1/tenants/{}/quota", pos[1]);
                let v = if patch.is_empty() {
                    c.json("GET", &path, None)?
                } else {
                    c.json("PUT", &path, Some(&Value::Object(patch)))?
                };
                if c.json {
                    crate::outln!("{v:#}");
                } else {
                    print_quota(&v);
                }
            }
            Some(other) => {
                return Err(format!(
                    "unknown tenant command `{other}` (create, ls, rm, quota)"
                ))
            }
        },
        "log" => {
            let mut query = Vec::new();
            if let Some(n) = flag(&["-n"]).pop() {
                query.push(format!("limit={}", path_segment(&n)));
            }
            if let Some(t) = flag(&["--since"]).pop() {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis() as u64);
                let at = since(&t, now).map_err(|e| format!("--since: {e}"))?;
                query.push(format!("since={}", path_segment(&at)));
            }
            if let Some(t) = &c.tenant {
                query.push(format!("tenant={}", path_segment(t)));
            }
            let path = if query.is_empty() {
                "/v1/audit".to_string()
            } else {
                format!("/v1/audit?{}", query.join("&"))
            };
            let v = c.json("GET", &path, None)?;
            if c.json {
                crate::outln!("{v:#}");
            } else {
                crate::out!("{}", audit_table(&v));
            }
        }
        other => return Err(format!("unknown command `{other}`")),
    }
    Ok(())
}

/// `--since`'s value as RFC 3339: given so, or a time ago (`90s`, `10m`,
/// `2h`, `1d`) counted back from `now_ms`.
fn since(t: &str, now_ms: u64) -> Result<String, String> {
    if let Some(unit) = t.chars().last().filter(char::is_ascii_alphabetic) {
        let n = &t[..t.len() - 1];
        if let (Ok(n), Some(mul)) = (
            n.parse::<u64>(),
            match unit {
                's' => Some(1_000u64),
                'm' => Some(60_000),
                'h' => Some(3_600_000),
                'd' => Some(86_400_000),
                _ => None,
            },
        ) {
            let ago = n.saturating_mul(mul);
            return Ok(pronto_daemon::audit::rfc3339(now_ms.saturating_sub(ago)));
        }
    }
    pronto_daemon::audit::parse_rfc3339(t)
        .map(|_| t.to_string())
        .map_err(|e| format!("{e}, or a time ago (90s, 10m, 2h, 1d)"))
}

/// The audit entries as `pronto log` prints them.
fn audit_table(v: &Value) -> String {
    let mut t = Table::new(&[
        ("TIME", Align::Left),
        ("WHO", Align::Left),
        ("TOKEN", Align::Left),
        ("TENANT", Align::Left),
        ("REQUEST", Align::Left),
        ("STATUS", Align::Right),
        ("SUMMARY", Align::Left),
        ("ERROR", Align::Left),
    ]);
    for e in v.as_array().into_iter().flatten() {
        t.row([
            s(&e["time"]),
            s(&e["who"]),
            s(&e["token"]),
            s(&e["tenant"]),
            format!("{} {}", s(&e["method"]), s(&e["path"])),
            s(&e["status"]),
            e["summary"].as_str().unwrap_or("").to_string(),
            e["error"].as_str().unwrap_or("").to_string(),
        ]);
    }
    t.render()
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

fn mb(v: &Value) -> String {
    v.as_u64()
        .map(|b| format!("{:.1} MB", b as f64 / 1e6))
        .unwrap_or_else(|| "-".into())
}

fn print_table(v: &Value) {
    // In cluster mode every instance has a node (or null: not placed).
    let cluster = v
        .as_array()
        .into_iter()
        .flatten()
        .any(|i| i.get("node").is_some());
    let mut cols = vec![
        ("NAME", Align::Left),
        ("TENANT", Align::Left),
        ("STATE", Align::Left),
    ];
    if cluster {
        cols.push(("NODE", Align::Left));
    }
    cols.extend([
        ("PID", Align::Right),
        ("BOOT ms", Align::Right),
        ("RESTARTS", Align::Right),
        ("INTERFACES", Align::Left),
    ]);
    let mut t = Table::new(&cols);
    for i in v.as_array().into_iter().flatten() {
        let ifaces: Vec<String> = i["interfaces"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| match f["port"].as_u64() {
                Some(p) => format!("{}:{p}", s(&f["name"])),
                None => s(&f["name"]),
            })
            .collect();
        let mut row = vec![s(&i["name"]), s(&i["tenant"]), s(&i["state"])];
        if cluster {
            row.push(s(&i["node"]));
        }
        row.extend([
            s(&i["pid"]),
            i["boot_ms"]
                .as_f64()
                .map(|b| format!("{b:.1}"))
                .unwrap_or_else(|| "-".into()),
            s(&i["restarts"]),
            ifaces.join(" "),
        ]);
        t.row(row);
    }
    crate::out!("{}", t.render());
}

fn print_instance(c: &Ctx, v: &Value, created: bool) {
    if c.json {
        crate::outln!("{v:#}");
        return;
    }
    if created && v.get("node").is_some() {
        crate::outln!(
            "created {} (tenant {}) on node {}: {}",
            s(&v["name"]),
            s(&v["tenant"]),
            s(&v["node"]),
            s(&v["state"])
        );
        return;
    }
    if created {
        crate::outln!(
            "created {} (tenant {}), running in {:.1} ms",
            s(&v["name"]),
            s(&v["tenant"]),
            v["boot_ms"].as_f64().unwrap_or(0.0)
        );
        return;
    }
    crate::outln!("name:       {}", s(&v["name"]));
    crate::outln!("tenant:     {}", s(&v["tenant"]));
    crate::outln!("state:      {}", s(&v["state"]));
    crate::outln!("pid:        {}", s(&v["pid"]));
    crate::outln!(
        "boot:       {}",
        v["boot_ms"]
            .as_f64()
            .map(|b| format!("{b:.2} ms"))
            .unwrap_or_else(|| "-".into())
    );
    crate::outln!(
        "memory:     {} (limit {})",
        mb(&v["pss_bytes"]),
        mb(&v["memory"])
    );
    crate::outln!("cpu:        {}", s(&v["cpu"]));
    crate::outln!("weight:     {}", s(&v["weight"]));
    if let Some(r) = v["rate_limit"].as_object() {
        let l = pronto_switch::RateLimit {
            pps: r.get("pps").and_then(Value::as_u64),
            bps: r.get("bps").and_then(Value::as_u64),
        };
        crate::outln!("rate limit: {l} each way, each interface");
    }
    if let Some(g) = v["port_geometry"].as_object() {
        crate::outln!(
            "ports:      {} slots, rings of {}",
            g.get("slots").unwrap_or(&Value::Null),
            g.get("ring").unwrap_or(&Value::Null)
        );
    }
    if let Some(cpus) = v["cpus"].as_array() {
        let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
        crate::outln!("cpus:       {}", list.join(","));
    }
    if let Some(us) = v["poll_window_us"].as_u64() {
        crate::outln!("polls:      {us} µs after packets moved, before it sleeps");
    }
    if let Some(g) = v["group"].as_str() {
        crate::outln!("group:      {g}");
    }
    if let Some(n) = v["prefer_node"].as_str() {
        crate::outln!("prefers:    node {n}");
    }
    for (path, bytes) in v["files"].as_object().into_iter().flatten() {
        crate::outln!("file:       {path} ({bytes} bytes)");
    }
    crate::outln!("restarts:   {}", v["restarts"]);
    if let Some(cr) = v["last_crash"].as_object() {
        crate::outln!("last crash: {}", s(&cr["reason"]));
    }
    if !v["error"].is_null() {
        crate::outln!("error:      {}", s(&v["error"]));
    }
    for f in v["interfaces"].as_array().into_iter().flatten() {
        crate::outln!(
            "interface:  {} mac {} port {}",
            s(&f["name"]),
            s(&f["mac"]),
            s(&f["port"])
        );
    }
}

/// `2`, `0.5`: a number of CPUs without a needless `.0`.
fn cpus(v: &Value) -> String {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 => format!("{}", n as i64),
        Some(n) => n.to_string(),
        None => s(v),
    }
}

fn print_quota(v: &Value) {
    let (q, u) = (&v["quota"], &v["usage"]);
    crate::outln!("tenant {}", s(&v["tenant"]));
    crate::outln!(
        "{:<20} {} of {}",
        "instances",
        u["instances"],
        q["instances"]
    );
    crate::outln!("{:<20} {} of {} bytes", "memory", u["memory"], q["memory"]);
    crate::outln!(
        "{:<20} {} of {} CPUs",
        "cpu",
        cpus(&u["cpu"]),
        cpus(&q["cpu"])
    );
    crate::outln!("{:<20} {} per instance", "pids", q["pids"]);
    crate::outln!(
        "{:<20} {} of {}",
        "interfaces",
        u["interfaces"],
        q["interfaces"]
    );
    crate::outln!("{:<20} {}", "control ports", s(&q["control_ports"]));
    crate::outln!(
        "{:<20} {} of {}",
        "control connections",
        u["control_connections"],
        q["control_connections"]
    );
}

fn print_element_stats(v: &Value) {
    crate::outln!(
        "{} ({}), {}",
        s(&v["name"]),
        s(&v["state"]),
        mb(&v["pss_bytes"])
    );
    crate::out::print(&crate::stats::totals_table(&v["elements"]));
}

/// Escapes a query value (everything but unreserved characters).
pub fn percent(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

/// Frames in a pcapng file pronto wrote, and the drops its closing
/// statistics block reports.
fn pcapng_summary(path: &str) -> (u64, u64) {
    let Ok(b) = std::fs::read(path) else {
        return (0, 0);
    };
    let (mut frames, mut dropped, mut at) = (0, 0, 0);
    let word =
        |i: usize| -> Option<u32> { Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?)) };
    while let (Some(kind), Some(len)) = (word(at), word(at + 4)) {
        let len = len as usize;
        if len < 12 {
            break;
        }
        match kind {
            6 => frames += 1,
            5 => {
                // Options after interface id and timestamp: code, length, value.
                let mut o = at + 20;
                while o + 4 <= at + len - 4 {
                    let code = u16::from_le_bytes([b[o], b[o + 1]]);
                    let olen = u16::from_le_bytes([b[o + 2], b[o + 3]]) as usize;
                    if code == 0 {
                        break;
                    }
                    if code == 7 && olen == 8 {
                        if let Some(v) = b.get(o + 4..o + 12) {
                            dropped = u64::from_le_bytes(v.try_into().unwrap_or([0; 8]));
                        }
                    }
                    o += 4 + olen.next_multiple_of(4);
                }
            }
            _ => {}
        }
        at += len;
    }
    (frames, dropped)
}

/// CPUs from a list as Linux writes it: `0-3,6`.
pub fn parse_cpu_list(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("expected CPU numbers and ranges like 0-3,6, found `{s}`");
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let (a, b): (usize, usize) = (
            a.trim().parse().map_err(|_| bad())?,
            b.trim().parse().map_err(|_| bad())?,
        );
        if a > b || b >= 4096 {
            return Err(bad());
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{audit_table, since};

    #[test]
    fn since_takes_a_time_or_a_time_ago() {
        let now = 20_784 * 86_400_000 + 3_600_000; // 2026-11-27T01:00:00Z
        assert_eq!(since("90m", now).as_deref(), Ok("2026-11-26T23:30:00.000Z"));
        assert_eq!(since("1d", now).as_deref(), Ok("2026-11-26T01:00:00.000Z"));
        assert_eq!(
            since("2026-11-27T00:00:00Z", now).as_deref(),
            Ok("2026-11-27T00:00:00Z")
        );
        assert!(since("yesterday", now).is_err());
        assert!(since("5w", now).is_err());
    }

    #[test]
    fn entries_print_as_a_table() {
        let v = serde_json::json!([
            {"seq": 1, "time": "2026-11-27T18:00:00.000Z", "who": "admin", "token": "unix-socket",
             "tenant": "default", "method": "POST", "path": "/v1/instances",
             "summary": "name=fw1", "status": 201, "error": null},
            {"seq": 2, "time": "2026-11-27T18:00:01.000Z", "who": "unknown", "token": "-",
             "tenant": null, "method": "DELETE", "path": "/v1/instances/fw1",
             "summary": "", "status": 401, "error": "a token is needed"}
        ]);
        assert_eq!(
            audit_table(&v),
            "TIME                      WHO      TOKEN        TENANT   REQUEST                   STATUS  SUMMARY   ERROR\n\
             2026-11-27T18:00:00.000Z  admin    unix-socket  default  POST /v1/instances           201  name=fw1\n\
             2026-11-27T18:00:01.000Z  unknown  -            -        DELETE /v1/instances/fw1     401            a token is needed\n"
        );
    }
}
