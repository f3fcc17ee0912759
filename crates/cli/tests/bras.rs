//! examples/bras.click against real PPPoE peers in network namespaces:
//! Debian's `pppoe-discovery` finds the access concentrator (its exact
//! AC-Name and Service-Name), then a PPPoE client built on scapy's protocol
//! layers (`tests/pppoe_client.py`; this kernel has no /dev/ppp, so pppd
//! cannot run) negotiates LCP, PAP (and CHAP-MD5 in a second run), IPCP
//! and IPv6CP, and relays a TUN device to its session: `ping` reaches a
//! server behind pronto with exact replies, `iperf3` runs over it, and the
//! `kill` handler ends the session with a PADT the client sees and an
//! accounting stop line with the session's exact packet counts.
//!
//! ```text
//! client ns (PPPoE)           middle ns (pronto run)             server ns
//! c ── veth ── a   examples/bras.click A=a B=b   b ── veth ── s 10.202.2.1/24
//!  ppp0: 10.64.0.x (IPCP)      pool 10.64.0.0/16, B 10.202.2.254
//! ```
//!
//! Needs root, `ip`, `ping`, `iperf3`, `pppoe-discovery` (Debian's ppp)
//! and python3 with scapy (python3-scapy); without them it says so loudly
//! and passes. CI runs it as root with them installed.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::netns::{mac_of, missing_prerequisite, must, Routed};

/// A python3 that has scapy, if any.
fn python_with_scapy() -> Option<String> {
    ["python3", "/usr/bin/python3"]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .args(["-c", "import scapy.layers.ppp"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .map(str::to_string)
}

/// One Click control-socket call: the reply's text (status line and data).
fn control(path: &Path, line: &str) -> String {
    let mut s = UnixStream::connect(path).expect("control socket connects");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let mut banner = String::new();
    r.read_line(&mut banner).expect("banner");
    s.write_all(format!("{line}\r\n").as_bytes())
        .expect("write");
    let mut status = String::new();
    r.read_line(&mut status).expect("status");
    let mut text = status.clone();
    if status.starts_with("200") && line.starts_with("READ") {
        let mut data = String::new();
        r.read_line(&mut data).expect("DATA line");
        let n: usize = data
            .trim()
            .trim_start_matches("DATA ")
            .parse()
            .expect("length");
        let mut body = vec![0u8; n];
        r.read_exact(&mut body).expect("data");
        text.push_str(&String::from_utf8_lossy(&body));
    }
    text
}

fn wait_for(path: &Path, what: &str, secs: u64) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        let t = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(l) = t.lines().find(|l| l.starts_with(what)) {
            return Some(l.to_string());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    None
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn session(auth: &str, tag: &str, python: &str, with_iperf: bool) {
    let dir =
        Scratch(std::env::temp_dir().join(format!("pronto-bras-{}-{tag}", std::process::id())));
    std::fs::create_dir_all(&dir.0).expect("scratch");
    let (mut t, a, b) = Routed::new(tag);
    let (m, s) = (t.ns[1].clone(), t.ns[2].clone());
    must(&["ip", "-n", &s, "addr", "add", "10.202.2.1/24", "dev", "s"]);
    must(&[
        "ip",
        "-n",
        &s,
        "route",
        "add",
        "10.64.0.0/16",
        "via",
        "10.202.2.254",
    ]);
    let (amac, bmac) = (mac_of(&m, &a), mac_of(&m, &b));
    let root = format!("{}/../..", env!("CARGO_MANIFEST_DIR"));
    let acct = dir.0.join("acct.log");
    let ctl = dir.0.join("ctl");
    let log_path = dir.0.join("pronto.log");
    let said = t.spawn_pronto(
        1,
        &[
            &format!("{root}/examples/bras.click"),
            &format!("A={a}"),
            &format!("B={b}"),
            &format!("AMAC={amac}"),
            &format!("BMAC={bmac}"),
            &format!("AUTH={auth}"),
            &format!("SUBS={root}/examples/bras-subscribers.txt"),
            &format!("ACCT={}", acct.display()),
            &format!("CONTROL={}", ctl.display()),
        ],
        &log_path,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ctl.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        ctl.exists(),
        "pronto never opened its control socket\n{}",
        said()
    );

    // Discovery with the real peer.
    if auth == "pap" {
        let (ok, out) = t.output(0, &["pppoe-discovery", "-I", "c", "-t", "2", "-a", "3"]);
        assert!(ok, "pppoe-discovery failed: {out}\n{}", said());
        assert!(
            out.contains("Access-Concentrator: pronto-bras")
                && out.contains("Service-Name: internet")
                && out.contains(&format!("AC-Ethernet-Address: {amac}")),
            "pppoe-discovery printed:\n{out}"
        );
    }

    // A whole session with the scapy client.
    let status = dir.0.join("status");
    let client_log = dir.0.join("client.log");
    let (user, secret) = if auth == "pap" {
        ("alice", "s3cret")
    } else {
        ("bob", "hunter2")
    };
    let client = t
        .exec(
            0,
            &[
                python,
                &format!("{root}/crates/cli/tests/pppoe_client.py"),
                "c",
                user,
                secret,
                auth,
                "ppp0",
                &status.display().to_string(),
            ],
        )
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&client_log).expect("client log"))
        .spawn()
        .expect("client runs");
    t.children.push(client);
    let client_said = || std::fs::read_to_string(&client_log).unwrap_or_default();
    let up = wait_for(&status, "up ", 30).unwrap_or_else(|| {
        panic!(
            "the session never came up; client:\n{}\n{}",
            client_said(),
            said()
        )
    });
    let addr = if auth == "pap" {
        "10.64.0.2"
    } else {
        "10.64.0.9"
    };
    assert_eq!(up, format!("up {addr} 1"));
    let sessions = control(&ctl, "READ bras.sessions");
    assert!(
        sessions.starts_with("200")
            && sessions.contains(&format!(
                "1 {} {user} {addr} up in=0/0 out=0/0",
                mac_of(&t.ns[0], "c")
            )),
        "{sessions}"
    );

    // Ping through the session: five echo requests, five exact replies.
    let (ok, out) = t.output(
        0,
        &["ping", "-c", "5", "-i", "0.2", "-W", "2", "10.202.2.1"],
    );
    assert!(
        ok && out.contains("5 packets transmitted, 5 received"),
        "{out}\n{}\n{}",
        client_said(),
        said()
    );
    for seq in 1..=5 {
        assert!(
            out.contains(&format!("64 bytes from 10.202.2.1: icmp_seq={seq} ")),
            "{out}"
        );
    }
    let sessions = control(&ctl, "READ bras.sessions");
    assert!(sessions.contains(" up in=5/420 out=5/420"), "{sessions}");
    let mut counts = "in_packets=5 in_bytes=420 out_packets=5 out_bytes=420".to_string();
    if with_iperf {
        // TCP through the session for two seconds; then the session's
        // counts as the handler shows them are what the stop record holds.
        t.spawn(
            2,
            &["iperf3", "-s", "-1", "-B", "10.202.2.1"],
            Stdio::null(),
        );
        std::thread::sleep(Duration::from_millis(500));
        let (ok, out) = t.until(10, &["iperf3", "-c", "10.202.2.1", "-t", "2", "-J"]);
        assert!(
            ok && out.contains("\"sum_received\""),
            "iperf3: {out}\n{}\n{}",
            client_said(),
            said()
        );
        std::thread::sleep(Duration::from_millis(500));
        let sessions = control(&ctl, "READ bras.sessions");
        let line = sessions
            .lines()
            .find(|l| l.starts_with("1 "))
            .expect("session line");
        let f: Vec<&str> = line.split_whitespace().collect();
        let (i, o) = (
            f[5].trim_start_matches("in=").split_once('/').expect("in"),
            f[6].trim_start_matches("out=")
                .split_once('/')
                .expect("out"),
        );
        assert!(i.0.parse::<u64>().expect("n") > 1000, "{line}");
        counts = format!(
            "in_packets={} in_bytes={} out_packets={} out_bytes={}",
            i.0, i.1, o.0, o.1
        );
    }

    // kill: PADT to the client, accounting stop with the exact counts.
    let w = control(&ctl, &format!("WRITE bras.kill {user}"));
    assert!(w.starts_with("200"), "{w}");
    let padt = wait_for(&status, "padt", 10)
        .unwrap_or_else(|| panic!("no PADT reached the client:\n{}", client_said()));
    assert_eq!(padt, "padt admin-kill");
    let stop = wait_for(&acct, "", 1).map(|_| std::fs::read_to_string(&acct).unwrap_or_default());
    let text = stop.unwrap_or_default();
    let stop = text
        .lines()
        .find(|l| l.contains(" stop "))
        .unwrap_or_else(|| panic!("no stop record:\n{text}"));
    let mac = mac_of(&t.ns[0], "c");
    assert!(
        stop.contains(&format!(
            " stop session=1 user={user} mac={mac} ip={addr} {counts} "
        )) && stop.ends_with(" cause=admin-kill"),
        "{text}"
    );
    assert!(
        text.lines()
            .next()
            .is_some_and(|l| l.contains(" start session=1 ")),
        "{text}"
    );
    assert_eq!(
        control(&ctl, "READ bras.count"),
        "200 Read handler 'bras.count' OK\r\n0"
    );
}

#[test]
fn pppoe_discovery_and_a_pap_session_with_ping_iperf3_and_kill() {
    if let Some(why) = missing_prerequisite("q", &["ping", "iperf3", "pppoe-discovery"]) {
        eprintln!("SKIPPED bras interop test: {why}. CI runs it as root.");
        return;
    }
    let Some(python) = python_with_scapy() else {
        eprintln!(
            "SKIPPED bras interop test: no python3 with scapy (python3-scapy). CI installs it."
        );
        return;
    };
    session("pap", "q", &python, true);
}

#[test]
fn a_chap_md5_session_with_a_static_address() {
    if let Some(why) = missing_prerequisite("r", &["ping"]) {
        eprintln!("SKIPPED bras CHAP test: {why}. CI runs it as root.");
        return;
    }
    let Some(python) = python_with_scapy() else {
        eprintln!("SKIPPED bras CHAP test: no python3 with scapy (python3-scapy). CI installs it.");
        return;
    };
    session("chap", "r", &python, false);
}
