//! `packaging/`: the systemd unit passes `systemd-analyze verify` and its
//! capability bounding set is enough for a daemon that runs an instance;
//! every metric the Grafana dashboard queries is one a real daemon
//! exports; the OCI image's root file system, assembled by
//! `packaging/oci/build-rootfs`, runs pronto under `chroot`.

mod common;

use std::collections::BTreeSet;
use std::process::Command;

use common::api::{self, To};
use serde_json::{json, Value};

fn is_root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    eprintln!("SKIPPED {test}: needs root");
    false
}

fn have(tool: &str, test: &str) -> bool {
    match Command::new(tool).arg("--version").output() {
        Ok(_) => true,
        Err(_) => {
            eprintln!("SKIPPED {test}: {tool} is not installed");
            false
        }
    }
}

fn unit_text() -> String {
    std::fs::read_to_string(common::root().join("packaging/systemd/prontod.service"))
        .expect("packaging/systemd/prontod.service")
}

#[test]
fn the_systemd_unit_verifies() {
    if !have("systemd-analyze", "the_systemd_unit_verifies") {
        return;
    }
    let dir = common::scratch("unit");
    let unit = unit_text();
    assert!(unit.contains("ExecStart=/usr/local/bin/pronto daemon "));
    // The binary built here in place of the installed one.
    let text = unit.replace("/usr/local/bin/pronto", env!("CARGO_BIN_EXE_pronto"));
    let path = dir.join("prontod.service");
    std::fs::write(&path, text).expect("unit");
    let o = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .expect("systemd-analyze runs");
    // verify exits 0 after an unknown key or a bad value (it only warns):
    // any output at all is a failure.
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success() && said.trim().is_empty(), "{said}");
    for line in [
        "Restart=on-failure",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "SystemCallArchitectures=native",
        "MemoryDenyWriteExecute=yes",
    ] {
        assert!(unit.lines().any(|l| l == line), "{line} missing");
    }
    // What the daemon cannot tolerate is left out, with the reason.
    for key in [
        "ProtectControlGroups=",
        "RestrictNamespaces=",
        "PrivateUsers=",
    ] {
        assert!(
            !unit.lines().any(|l| l.starts_with(key)),
            "{key} is set: the daemon writes cgroups and makes namespaces"
        );
        assert!(
            unit.lines().any(|l| l.starts_with(&format!("# {key}"))),
            "{key}: no comment says why it is left out"
        );
    }
}

/// The unit's `CapabilityBoundingSet=`, as `setpriv --bounding-set` takes
/// it (`-all,+sys_admin,...`).
fn unit_caps() -> String {
    let unit = unit_text();
    let line = unit
        .lines()
        .find_map(|l| l.strip_prefix("CapabilityBoundingSet="))
        .expect("a CapabilityBoundingSet= line");
    let mut s = "-all".to_string();
    for c in line.split_whitespace() {
        let c = c.strip_prefix("CAP_").expect("CAP_ names");
        s.push_str(&format!(",+{}", c.to_ascii_lowercase()));
    }
    s
}

#[test]
fn the_units_capabilities_are_enough_for_an_instance() {
    let test = "the_units_capabilities_are_enough_for_an_instance";
    if !is_root(test) || !have("setpriv", test) {
        return;
    }
    let dir = common::scratch("unit-caps");
    // `pronto daemon` under the unit's bounding set, as systemd starts it.
    let wrapper = dir.join("pronto-bounded");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec setpriv --bounding-set {} --inh-caps -all {} \"$@\"\n",
            unit_caps(),
            env!("CARGO_BIN_EXE_pronto")
        ),
    )
    .expect("wrapper");
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let d = common::start_daemon_program(&dir, &wrapper, &["--warm", "1"]);
    let status = std::fs::read_to_string(format!("/proc/{}/status", d.pid())).expect("status");
    let bnd = status
        .lines()
        .find_map(|l| l.strip_prefix("CapBnd:"))
        .expect("CapBnd")
        .trim()
        .to_string();
    let bnd = u64::from_str_radix(&bnd, 16).expect("hex");
    // CAP_SYS_ADMIN (21) is in it; CAP_SYS_PTRACE (19), CAP_DAC_OVERRIDE (1)
    // and CAP_SYS_MODULE (16) are not.
    assert_ne!(bnd & (1 << 21), 0, "{bnd:x}");
    assert_eq!(bnd & (1 << 19 | 1 << 1 | 1 << 16), 0, "{bnd:x}");
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let body = json!({
        "name": "capped",
        "config": "c :: Counter; TimedSource(0.01s) -> c -> Discard;\n",
        "memory": "16M",
        "cpu": 0.5,
        "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0c:01"}],
    });
    let r = api::call(&unix, "POST", "/v1/instances", body.to_string().as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["state"], "running");
    let t0 = std::time::Instant::now();
    loop {
        let r = api::call(&unix, "GET", "/v1/instances/capped/handlers/c.count", b"");
        assert_eq!(r.status, 200, "{}", r.text());
        if r.text().trim().parse::<u64>().expect("a count") > 2 {
            break;
        }
        assert!(t0.elapsed().as_secs() < 20, "the instance does not count");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let r = api::call(&unix, "DELETE", "/v1/instances/capped", b"");
    assert_eq!(r.status, 204, "{}", r.text());
}

const AGGREGATIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "atan2",
    "inf",
    "nan",
];

/// The metric names a PromQL expression reads: identifiers that are not
/// functions (followed by `(`), aggregations, keywords, label names
/// (inside `{}` or a `by (...)` list), strings, durations or Grafana
/// variables.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let b: Vec<char> = expr.chars().collect();
    let mut out = BTreeSet::new();
    let mut i = 0;
    let mut skip_list = false; // the label list after by/without/on/...
    while i < b.len() {
        let c = b[i];
        if c == '"' || c == '\'' || c == '`' {
            i += 1;
            while i < b.len() && b[i] != c {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == '{' || c == '[' {
            let close = if c == '{' { '}' } else { ']' };
            while i < b.len() && b[i] != close {
                if b[i] == '"' {
                    i += 1;
                    while i < b.len() && b[i] != '"' {
                        i += 1;
                    }
                }
                i += 1;
            }
            i += 1;
        } else if c == '$' {
            i += 1;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
        } else if c.is_ascii_digit() || (c == '.' && i + 1 < b.len() && b[i + 1].is_ascii_digit()) {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '.') {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == '_' || b[i] == ':') {
                i += 1;
            }
            let word: String = b[start..i].iter().collect();
            let mut j = i;
            while j < b.len() && b[j] == ' ' {
                j += 1;
            }
            let call = j < b.len() && b[j] == '(';
            if [
                "by",
                "without",
                "on",
                "ignoring",
                "group_left",
                "group_right",
            ]
            .contains(&word.as_str())
            {
                skip_list = true;
                continue;
            }
            if skip_list && call {
                continue;
            }
            if call || AGGREGATIONS.contains(&word.as_str()) || KEYWORDS.contains(&word.as_str()) {
                continue;
            }
            out.insert(word);
        } else {
            if c == '(' && skip_list {
                // by (a, b): the label names up to `)`.
                while i < b.len() && b[i] != ')' {
                    i += 1;
                }
                skip_list = false;
            }
            i += 1;
        }
    }
    out
}

#[test]
fn promql_names_are_told_from_functions_labels_and_variables() {
    let names = metric_names(
        r#"sum by (tenant) (label_replace(rate(pronto_a_total{name=~"($tenant)/.*"}[$__rate_interval]), "tenant", "$1", "name", "([^/]+)/.*")) / on(x) group_left(y) b:c offset 5m or vector(0) + count(d == 0) * 8e3"#,
    );
    let want: BTreeSet<String> = ["pronto_a_total", "b:c", "d"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, want);
}

/// Every `expr` of every panel (rows' nested panels included).
fn dashboard_exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(e)) = m.get("expr") {
                out.push(e.clone());
            }
            for x in m.values() {
                dashboard_exprs(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| dashboard_exprs(x, out)),
        _ => {}
    }
}

/// A veth pair made for a test, deleted when dropped.
struct Veth(String);

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).status();
    }
}

#[test]
fn every_metric_the_dashboard_queries_is_exported() {
    let test = "every_metric_the_dashboard_queries_is_exported";
    let path = common::root().join("packaging/grafana/pronto-dashboard.json");
    let dash: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("dashboard")).expect("JSON");
    // Grafana's dashboard model, on a Prometheus data source variable.
    assert!(dash["schemaVersion"].as_u64().is_some_and(|v| v >= 30));
    let vars = dash["templating"]["list"].as_array().expect("variables");
    assert!(vars
        .iter()
        .any(|v| v["type"] == "datasource" && v["query"] == "prometheus"));
    let panels = dash["panels"].as_array().expect("panels");
    for p in panels.iter().filter(|p| p["type"] != "row") {
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{}", p["title"]);
        assert!(
            p["targets"].as_array().is_some_and(|t| !t.is_empty()),
            "{}",
            p["title"]
        );
    }
    let mut exprs = Vec::new();
    dashboard_exprs(&dash, &mut exprs);
    let mut used = BTreeSet::new();
    for e in &exprs {
        let names = metric_names(e);
        assert!(!names.is_empty(), "no metric in `{e}`");
        used.extend(names);
    }
    // The tenant variable's query, Grafana's `label_values(METRIC, LABEL)`,
    // reads a metric too, and the label must be one of its.
    let mut labels = Vec::new();
    for v in vars {
        if let Some(q) = v["definition"].as_str() {
            let args = q
                .strip_prefix("label_values(")
                .and_then(|a| a.strip_suffix(')'))
                .expect("label_values(METRIC, LABEL)");
            let (metric, label) = args.split_once(',').expect("two arguments");
            used.insert(metric.trim().to_string());
            labels.push((metric.trim().to_string(), label.trim().to_string()));
        }
    }
    assert!(!labels.is_empty());
    assert!(used.len() >= 15, "{used:?}");
    // The per-element metrics have panels of their own.
    for m in [
        "pronto_element_drops_total",
        "pronto_element_packets_total",
        "pronto_element_held",
    ] {
        assert!(used.contains(m), "{m}");
    }

    if !is_root(test) || !have("ip", test) {
        return;
    }
    // A daemon with an instance running on an interface and an uplink, so
    // that every family has samples.
    let dir = common::scratch("grafana");
    let name = format!("pgf{}", std::process::id() % 100_000);
    let ok = Command::new("ip")
        .args(["link", "add", &name, "type", "veth", "peer", "name"])
        .arg(format!("{name}p"))
        .status()
        .expect("ip");
    assert!(ok.success(), "ip link add {name}");
    let _veth = Veth(name.clone());
    for n in [name.clone(), format!("{name}p")] {
        assert!(Command::new("ip")
            .args(["link", "set", &n, "up"])
            .status()
            .expect("ip")
            .success());
    }
    let d = common::start_daemon_with(&dir, &["--warm", "0", "--uplink", &name]);
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let body = json!({
        "name": "graphed",
        "tenant": "default",
        "config": "FromDevice(eth0) -> c :: Counter -> Discard;\n",
        "interfaces": [{"name": "eth0", "mac": "02:00:00:00:0d:01"}],
    });
    let r = api::call(&unix, "POST", "/v1/instances", body.to_string().as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    let r = api::call(&unix, "GET", "/metrics", b"");
    assert_eq!(r.status, 200);
    let text = r.text();
    let exported: BTreeSet<String> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().expect("a name").to_string())
        .collect();
    let missing: Vec<&String> = used.difference(&exported).collect();
    assert!(missing.is_empty(), "not in /metrics: {missing:?}\n{text}");
    for (metric, label) in &labels {
        let prefix = format!("{metric}{{");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&prefix) && l.contains(&format!("{label}=\""))),
            "{metric} has no label {label}"
        );
    }
    drop(d);
}

/// `sha256sum FILE`'s digest.
fn sha256(path: &std::path::Path) -> String {
    let o = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    assert!(o.status.success());
    String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .next()
        .expect("a digest")
        .to_string()
}

#[test]
fn the_oci_root_runs_pronto_under_chroot() {
    let test = "the_oci_root_runs_pronto_under_chroot";
    if !is_root(test) {
        return;
    }
    for tool in ["ldd", "tar", "gzip", "sha256sum"] {
        if !have(tool, test) {
            return;
        }
    }
    let dir = common::scratch("oci");
    let root = dir.join("root");
    let image = dir.join("image.tar");
    let script = common::root().join("packaging/oci/build-rootfs");
    let o = Command::new(&script)
        .args(["--binary", env!("CARGO_BIN_EXE_pronto"), "--oci"])
        .arg(&image)
        .arg(&root)
        .output()
        .expect("build-rootfs runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Only what the image holds is reachable under chroot: the binary runs
    // with the libraries copied, and works.
    let chroot = |args: &[&str]| {
        let o = Command::new("chroot")
            .arg(&root)
            .arg("/usr/local/bin/pronto")
            .args(args)
            .output()
            .expect("chroot runs");
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (ok, out, err) = chroot(&["--version"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("pronto {}", env!("CARGO_PKG_VERSION")));
    std::fs::copy(
        common::root().join("examples/nat.click"),
        root.join("tmp/nat.click"),
    )
    .expect("example");
    let (ok, _, err) = chroot(&["check", "/tmp/nat.click"]);
    assert!(ok, "{err}");
    let (ok, out, err) = chroot(&[
        "run",
        "-e",
        "InfiniteSource(LIMIT 5, STOP true) -> c :: Counter -> Discard",
        "-h",
        "c.count",
    ]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "5");
    for d in ["run/pronto", "var/lib/pronto", "tmp"] {
        assert!(root.join(d).is_dir(), "{d}");
    }
    assert!(std::fs::read_to_string(root.join("etc/passwd"))
        .expect("passwd")
        .contains(":65534:"));

    // The OCI layout: index → manifest → config and layer, each blob named
    // by its digest; the layer is the root.
    let layout = dir.join("layout");
    std::fs::create_dir_all(&layout).expect("dir");
    assert!(Command::new("tar")
        .arg("-xf")
        .arg(&image)
        .arg("-C")
        .arg(&layout)
        .status()
        .expect("tar")
        .success());
    let read = |p: &std::path::Path| -> Value {
        serde_json::from_slice(&std::fs::read(p).expect("file")).expect("JSON")
    };
    assert_eq!(
        read(&layout.join("oci-layout"))["imageLayoutVersion"],
        "1.0.0"
    );
    let blob = |d: &Value| {
        let digest = d["digest"].as_str().expect("digest");
        let hex = digest.strip_prefix("sha256:").expect("sha256");
        let p = layout.join("blobs/sha256").join(hex);
        assert_eq!(sha256(&p), hex, "{digest}");
        assert_eq!(
            std::fs::metadata(&p).expect("blob").len(),
            d["size"].as_u64().expect("size")
        );
        p
    };
    let index = read(&layout.join("index.json"));
    let manifest = read(&blob(&index["manifests"][0]));
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let config = read(&blob(&manifest["config"]));
    assert_eq!(config["os"], "linux");
    assert_eq!(config["config"]["Entrypoint"][0], "/usr/local/bin/pronto");
    assert_eq!(config["config"]["Cmd"][0], "daemon");
    let layer = blob(&manifest["layers"][0]);
    let plain = dir.join("layer.tar");
    let o = Command::new("gzip")
        .arg("-dc")
        .arg(&layer)
        .output()
        .expect("gzip");
    assert!(o.status.success());
    std::fs::write(&plain, &o.stdout).expect("layer");
    assert_eq!(
        config["rootfs"]["diff_ids"][0],
        format!("sha256:{}", sha256(&plain))
    );
    let o = Command::new("tar")
        .arg("-tf")
        .arg(&plain)
        .output()
        .expect("tar");
    let list = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        list.lines().any(|l| l == "./usr/local/bin/pronto"),
        "{list}"
    );
    assert!(list.lines().any(|l| l.contains("libc.so")), "{list}");

    // A root that is not empty is refused.
    let o = Command::new(&script)
        .args(["--binary", env!("CARGO_BIN_EXE_pronto")])
        .arg(&root)
        .output()
        .expect("build-rootfs runs");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not empty"));
}
