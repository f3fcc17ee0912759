//! The web console end to end: a real daemon, a real headless Chromium
//! driven through WebDriver (`chromedriver`, plain HTTP and JSON). It
//! signs in with a token, loads every page, creates an instance through
//! the form (then `pronto ls` lists it), draws its graph, reconfigures it
//! with a broken configuration (the error is shown under the offending
//! line), compiles a chain policy, and checks that a tenant's console
//! shows that tenant's instances alone.
//!
//! `PRONTO_SCREENSHOTS=DIR` saves the pages as PNG files there (the
//! README's are `docs/console/`). Without `chromium` and `chromedriver`
//! (`scripts/install-test-tools` installs them) the test says SKIPPED.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::api::{call, To};
use serde_json::{json, Value};

/// The first of `names` found on the PATH.
fn which(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for n in names {
            let p = dir.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// A chromedriver process and one browser session in it.
struct Browser {
    driver: Child,
    addr: String,
    session: String,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = wd(
            &self.addr,
            "DELETE",
            &format!("/session/{}", self.session),
            b"",
        );
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// One WebDriver request: (status, JSON body). chromedriver keeps the
/// connection open whatever the request says, so the answer is read to
/// its `Content-Length`.
fn wd(addr: &str, method: &str, path: &str, body: &[u8]) -> Result<(u16, Value), String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| format!("connecting: {e}"))?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body))
        .map_err(|e| format!("sending: {e}"))?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| format!("no Content-Length in {head}"))?;
            if raw.len() >= end + 4 + len {
                let status = head
                    .split_whitespace()
                    .nth(1)
                    .and_then(|c| c.parse().ok())
                    .ok_or("no status")?;
                let v = serde_json::from_slice(&raw[end + 4..end + 4 + len])
                    .map_err(|e| format!("not JSON: {e}"))?;
                return Ok((status, v));
            }
        }
        let n = s.read(&mut buf).map_err(|e| format!("reading: {e}"))?;
        if n == 0 {
            return Err("the connection ended before the answer".into());
        }
        raw.extend_from_slice(&buf[..n]);
    }
}

/// The key WebDriver names an element reference by.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

impl Browser {
    /// `tmp` holds what chromedriver and Chromium write (their profile
    /// and scratch directories): the test's scratch, removed after it.
    fn start(chromium: &Path, chromedriver: &Path, tmp: &Path) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .env("TMPDIR", tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let addr = format!("127.0.0.1:{port}");
        let t0 = Instant::now();
        loop {
            let ready = wd(&addr, "GET", "/status", b"")
                .is_ok_and(|(status, v)| status == 200 && v["value"]["ready"] == json!(true));
            if ready {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "chromedriver is not ready"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.to_str().expect("utf-8 path"),
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1280,1000"],
            },
        }}});
        let mut b = Browser {
            driver,
            addr,
            session: String::new(),
        };
        let v = b.raw("POST", "/session", &caps);
        b.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        b
    }

    fn raw(&self, method: &str, path: &str, body: &Value) -> Value {
        let body = if method == "GET" || method == "DELETE" {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let (status, v) =
            wd(&self.addr, method, path, &body).unwrap_or_else(|e| panic!("WebDriver: {e}"));
        assert!(status == 200, "WebDriver {method} {path}: {status} {v}");
        v["value"].clone()
    }

    fn cmd(&self, method: &str, what: &str, body: Value) -> Value {
        let v = self.raw(method, &format!("/session/{}/{what}", self.session), &body);
        if method == "POST" && what == "url" {
            return v;
        }
        v
    }

    fn go(&self, url: &str) {
        self.cmd("POST", "url", json!({ "url": url }));
    }

    /// Runs `script` (a function body: `return ...`) in the page.
    fn js(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "execute/sync",
            json!({"script": script, "args": args}),
        )
    }

    /// Waits (up to 30 s) until `expr` is truthy in the page; its value.
    fn wait(&self, expr: &str, what: &str) -> Value {
        let t0 = Instant::now();
        loop {
            let v = self.js(&format!("return ({expr}) || null;"), json!([]));
            if !v.is_null() && v != json!(false) {
                return v;
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let page = self.js("return document.body.innerText;", json!([]));
                panic!("timed out waiting for {what} ({expr}); the page says:\n{page}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn find(&self, css: &str) -> String {
        let v = self.cmd(
            "POST",
            "element",
            json!({"using": "css selector", "value": css}),
        );
        v[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    fn click(&self, css: &str) {
        let e = self.find(css);
        self.cmd("POST", &format!("element/{e}/click"), json!({}));
    }

    fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css);
        self.cmd("POST", &format!("element/{e}/clear"), json!({}));
        self.cmd(
            "POST",
            &format!("element/{e}/value"),
            json!({ "text": text }),
        );
    }

    /// Sets a text area's value (as pasting would).
    fn set_value(&self, css: &str, text: &str) {
        self.js(
            "document.querySelector(arguments[0]).value = arguments[1]; return true;",
            json!([css, text]),
        );
    }

    fn text(&self, css: &str) -> String {
        self.js(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
            json!([css]),
        )
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    /// Saves a screenshot as DIR/NAME.png when `PRONTO_SCREENSHOTS=DIR`.
    fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("PRONTO_SCREENSHOTS") else {
            return;
        };
        let v = self.cmd("GET", "screenshot", json!({}));
        let png = base64(v.as_str().expect("base64 PNG"));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).expect("screenshot directory");
        std::fs::write(dir.join(format!("{name}.png")), png).expect("write the screenshot");
    }

    fn sign_in(&self, base: &str, token: &str) {
        self.go(&format!("{base}/ui/#/login"));
        self.wait("document.querySelector('#token')", "the login page");
        self.type_into("#token", token);
        self.click("#login button[type=submit]");
        self.wait(
            "document.querySelector('#instances tbody tr')",
            "the instances page",
        );
    }
}

/// Standard base64 (what WebDriver screenshots are).
fn base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

const CONFIG: &str =
    "src :: InfiniteSource(LIMIT 1000, STOP false)\n  -> c :: Counter\n  -> Discard;\n";
const BROKEN: &str =
    "src :: InfiniteSource(LIMIT 1000, STOP false)\n  -> c :: Countr\n  -> Discard;\n";

#[test]
fn the_console_in_a_headless_browser() {
    let (Some(chromium), Some(chromedriver)) = (
        which(&["chromium", "chromium-browser", "google-chrome"]),
        which(&["chromedriver"]),
    ) else {
        eprintln!(
            "SKIPPED the_console_in_a_headless_browser: needs chromium and chromedriver \
             (scripts/install-test-tools installs them; CI has them)"
        );
        return;
    };
    let dir = common::scratch("console");
    let d = common::start_daemon(&dir);
    let admin = std::fs::read_to_string(dir.join("state/admin.token")).expect("admin token");
    let admin = admin.trim();
    let sock = dir.join("sock");
    let unix = To::Unix(&sock);
    let acme = call(&unix, "POST", "/v1/tenants", br#"{"name":"acme"}"#).json();
    let acme_token = acme["token"].as_str().expect("acme's token").to_string();
    call(&unix, "POST", "/v1/tenants", br#"{"name":"other"}"#).json();
    let r = call(
        &unix,
        "POST",
        "/v1/instances",
        json!({"name": "other-fw", "tenant": "other", "config": CONFIG})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());

    let base = format!("http://{}", d.tcp);
    let tmp = dir.join("browser-tmp");
    std::fs::create_dir_all(&tmp).expect("the browser's temporary directory");
    let b = Browser::start(&chromium, &chromedriver, &tmp);

    // Without a token, the console asks for one; a wrong one is refused.
    b.go(&format!("{base}/ui/"));
    b.wait("location.hash === '#/login'", "the login page");
    b.type_into("#token", "not-a-token");
    b.click("#login button[type=submit]");
    let refused = b.wait("document.querySelector('#login .error')", "the refusal");
    let _ = refused;
    assert!(b.text("#login .error").contains("the token is not valid"));

    // The admin sees every tenant's instances.
    b.sign_in(&base, admin);
    b.wait(
        "document.querySelector('#instances tr[data-instance=\"other-fw\"] td.state-running')",
        "other-fw running",
    );
    assert_eq!(b.text("#who"), "signed in as admin");

    // Tenants.
    b.click("#nav a[data-page=tenants]");
    for t in ["default", "acme", "other"] {
        b.wait(
            &format!("document.querySelector('#tenants tr[data-tenant=\"{t}\"]')"),
            "a tenant row",
        );
    }
    // Switch ports and chains.
    b.click("#nav a[data-page=ports]");
    b.wait(
        "document.querySelector('#ports tbody tr')",
        "the ports table",
    );
    b.click("#nav a[data-page=chains]");
    b.click("#compile");
    b.wait(
        "document.querySelector('#plan-graph svg')",
        "the plan's graph",
    );
    let nodes = b.js(
        "return [...document.querySelectorAll('#plan-graph .node')].map(n => n.dataset.element);",
        json!([]),
    );
    assert_eq!(
        nodes,
        json!([
            "classifier",
            "vpn",
            "monitor",
            "fw",
            "lb",
            "merger 0",
            "out"
        ])
    );
    assert!(b.text("#plan-text").contains("monitor"), "the plan's text");
    b.screenshot("chains");
    // A policy error is shown under its line.
    b.set_value("#policy", "nf a = builtin(vpn)\norder(a, before, zz)\n");
    b.click("#compile");
    b.wait(
        "document.querySelector('#plan .diag[data-line=\"2\"]')",
        "the policy error",
    );
    assert!(b
        .text("#plan .diag[data-line=\"2\"]")
        .contains("unknown network function `zz`"));

    // Create through the form.
    b.click("#nav a[data-page=create]");
    b.wait(
        "document.querySelector('#tenant option[value=\"default\"]')",
        "the tenants list",
    );
    b.type_into("#name", "web1");
    b.set_value("#config", CONFIG);
    b.click("#create");
    b.wait(
        "document.querySelector('#instance-name') && document.querySelector('#instance-name').textContent === 'web1'",
        "the new instance's page",
    );
    let (ok, out, err) = common::ctl(&dir, &["ls"]);
    assert!(ok, "{err}");
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().next() == Some("web1")),
        "pronto ls lists the instance made through the form:\n{out}"
    );
    // Its graph: one box per element, one path per connection.
    b.wait(
        "document.querySelectorAll('#graph .node').length === 3",
        "the graph",
    );
    let elements = b.js(
        "return [...document.querySelectorAll('#graph .node')].map(n => n.dataset.element);",
        json!([]),
    );
    assert_eq!(elements, json!(["src", "c", "Discard@3"]));
    let paths = b.js(
        "return document.querySelectorAll('#graph path').length;",
        json!([]),
    );
    assert_eq!(paths, json!(2));
    // Live counters from the daemon (GET .../counters): a packet count on
    // each edge.
    let note = b.wait(
        "document.querySelector('#counter-note').textContent",
        "the counters' note",
    );
    assert!(
        note.as_str()
            .is_some_and(|n| n.starts_with("Packets per connection")),
        "{note}"
    );
    b.wait(
        "/^[1-9][0-9,]*$/.test(document.querySelector('.edge[data-from=\"src\"][data-port=\"0\"] .edge-label').textContent)",
        "a packet count on src's edge",
    );
    b.screenshot("instance");

    // The counters' shape (GET .../counters): the page puts each output's
    // count on its edge and the sum of the drops on the node, in red. The
    // answer is given by the page's own fetch here, so that this part
    // checks the page whatever the daemon serves.
    b.js(
        "const real = window.fetch;
         window.fetch = (url, init) => String(url).includes('/v1/instances/web1/counters')
           ? Promise.resolve(new Response(JSON.stringify({elements: [
               {name: 'src', class: 'InfiniteSource', in: 0, out: 1234, held: 0, outputs: [1234], drops: {}, counters: {}},
               {name: 'c', class: 'Counter', in: 1234, out: 1229, held: 0, outputs: [1229],
                drops: {bad: 3, full: 2}, counters: {count: 1234}}]}),
               {status: 200, headers: {'Content-Type': 'application/json'}}))
           : real(url, init);
         location.hash = '#/ports'; return true;",
        json!([]),
    );
    b.wait("document.querySelector('#ports')", "the ports page");
    b.js(
        "location.hash = '#/instance/default/web1'; return true;",
        json!([]),
    );
    b.wait(
        "document.querySelector('.edge[data-from=\"c\"][data-port=\"0\"] .edge-label') && document.querySelector('.edge[data-from=\"c\"][data-port=\"0\"] .edge-label').textContent === '1,229'",
        "c's output count on its edge",
    );
    assert_eq!(
        b.text(".edge[data-from=\"src\"][data-port=\"0\"] .edge-label"),
        "1,234"
    );
    assert_eq!(b.text(".node-label[data-element=\"c\"]"), "5 drops");
    assert_eq!(
        b.js(
            "return document.querySelector('.node-label[data-element=\"c\"]').classList.contains('drops');",
            json!([])
        ),
        json!(true)
    );
    assert_eq!(b.text(".node-label[data-element=\"src\"]"), "");
    assert!(b
        .text("#counter-note")
        .starts_with("Packets per connection"));

    // Handlers: click an element in the graph, read its counter.
    b.js(
        "document.querySelector('#graph .node[data-element=\"c\"]').dispatchEvent(new MouseEvent('click', {bubbles: true})); return true;",
        json!([]),
    );
    b.wait("document.querySelector('#handlers table')", "c's handlers");
    assert!(b.text("#handlers").contains("c.count"));
    b.type_into("#handler", "c.count");
    b.click("#handler-read");
    let count = b.wait(
        "document.querySelector('#handler-out pre') && document.querySelector('#handler-out pre').textContent",
        "c.count's value",
    );
    let n: u64 = count
        .as_str()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("c.count: {count}"));
    assert!(n <= 1000, "{n}");

    // A broken reconfiguration: the error under line 2.
    b.set_value("#reconfig", BROKEN);
    b.click("#reconfigure");
    b.wait(
        "document.querySelector('#reconfig-error .diag[data-line=\"2\"]')",
        "the error under its line",
    );
    let diag = b.text("#reconfig-error .diag[data-line=\"2\"]");
    assert!(diag.contains("unknown element class 'Countr'"), "{diag}");
    assert!(b
        .text("#reconfig-error .line.bad[data-line=\"2\"]")
        .contains("c :: Countr"));
    b.js(
        "document.querySelector('#reconfig-form').scrollIntoView(); return true;",
        json!([]),
    );
    b.screenshot("reconfigure-error");
    // The running configuration is untouched.
    let v = call(&unix, "GET", "/v1/instances/web1", b"").json();
    assert_eq!(v["config"], json!(CONFIG));

    // The instances page, with every instance.
    b.click("#nav a[data-page=instances]");
    b.wait(
        "document.querySelector('#instances tr[data-instance=\"web1\"]')",
        "web1 listed",
    );
    b.screenshot("instances");

    // A tenant sees its own instances alone.
    b.click("#logout");
    b.sign_in(&base, &acme_token);
    assert_eq!(b.text("#who"), "signed in as tenant");
    b.click("#nav a[data-page=create]");
    b.wait("document.querySelector('#create-form')", "the form");
    assert_eq!(
        b.js(
            "return document.querySelector('#tenant') === null;",
            json!([])
        ),
        json!(true),
        "a tenant does not choose a tenant"
    );
    b.type_into("#name", "acme-fw");
    b.set_value("#config", CONFIG);
    b.click("#create");
    b.wait(
        "document.querySelector('#instance-name') && document.querySelector('#instance-name').textContent === 'acme-fw'",
        "acme-fw's page",
    );
    b.click("#nav a[data-page=instances]");
    b.wait(
        "document.querySelector('#instances tr[data-instance=\"acme-fw\"]')",
        "acme-fw listed",
    );
    let rows = b.js(
        "return [...document.querySelectorAll('#instances tr[data-instance]')].map(r => r.dataset.tenant + '/' + r.dataset.instance);",
        json!([]),
    );
    assert_eq!(rows, json!(["acme/acme-fw"]));
    // Another tenant's instance is not found, even by its address.
    b.go(&format!("{base}/ui/#/instance/other/other-fw"));
    b.wait("document.querySelector('main .error')", "the refusal");
    assert!(b.text("main .error").contains("other-fw"));
    assert_eq!(
        b.js(
            "return document.querySelectorAll('#graph .node').length;",
            json!([])
        ),
        json!(0)
    );
    // Tenants is the admin's page.
    assert_eq!(
        b.js(
            "return getComputedStyle(document.querySelector('#nav a[data-page=tenants]')).display;",
            json!([])
        ),
        json!("none")
    );
    // The console's endpoints keep tenants apart too.
    let acme_api = To::Tcp(&d.tcp, Some(&acme_token));
    let r = call(&acme_api, "GET", "/v1/instances/other-fw/graph.svg", b"");
    assert!(r.error(404, None).contains("other-fw"));
    let r = call(&acme_api, "GET", "/v1/instances/acme-fw/graph.svg", b"");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.header("content-type"),
        Some("image/svg+xml; charset=utf-8")
    );
    assert_eq!(r.text().matches("class=\"node\"").count(), 3);
    let plan = json!({"policy": "nf a = builtin(vpn)\nnf b = instance(\"other-fw\")\norder(a, before, b)\n"});
    let r = call(
        &acme_api,
        "POST",
        "/v1/chains/plan",
        plan.to_string().as_bytes(),
    );
    let msg = r.error(400, Some("policy"));
    assert!(msg.contains("other-fw"), "{msg}");
    assert_eq!(r.json()["line"], json!(2));
    let plan = json!({"policy": "nf a = builtin(vpn)\nnf b = instance(\"acme-fw\")\norder(a, before, b)\n"});
    let r = call(
        &acme_api,
        "POST",
        "/v1/chains/plan",
        plan.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["depth"], json!(2));
    // click("FILE") NFs take their configuration from `files`.
    let fw = "input -> IPFilter(allow udp, deny all) -> output";
    let policy = "nf mon = builtin(monitor)\nnf fw = click(\"fw.click\")\nposition(fw, first)\n";
    let r = call(
        &acme_api,
        "POST",
        "/v1/chains/plan",
        json!({"policy": policy}).to_string().as_bytes(),
    );
    let msg = r.error(400, Some("policy"));
    assert!(msg.contains("send its configuration in `files`"), "{msg}");
    let r = call(
        &acme_api,
        "POST",
        "/v1/chains/plan",
        json!({"policy": policy, "files": {"fw.click": fw}})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let text = r.json()["text"].as_str().expect("text").to_string();
    assert!(text.contains("fw") && text.contains("mon"), "{text}");
    // The console's files: served to anyone, nothing from elsewhere.
    let r = call(&To::Tcp(&d.tcp, None), "GET", "/ui/", b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(r
        .header("content-security-policy")
        .is_some_and(|c| c.starts_with("default-src 'self'")));
    let r = call(&To::Tcp(&d.tcp, None), "GET", "/v1/instances", b"");
    r.error(401, None);
    drop(b);
    let (ok, out, _) = common::ctl(&dir, &["ls"]);
    assert!(ok);
    assert!(out.contains("acme-fw") && out.contains("web1") && out.contains("other-fw"));
}
