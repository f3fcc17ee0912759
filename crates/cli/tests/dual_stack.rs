//! examples/dual-stack-router.click between two namespaces, with real
//! clients over IPv4 and IPv6: `ping`, `ping -6`, `iperf3 -6` and `curl`
//! to an IPv6 web server get through, the hosts' Neighbor Discovery and ARP
//! are answered by pronto, and a hop limit of 1 comes back as an ICMPv6
//! time-exceeded from the router.
//!
//! ```text
//! client ns                    middle ns (pronto run)                server ns
//! c ── veth ── a   examples/dual-stack-router.click A=a B=b   b ── veth ── s
//! 10.201.1.1/24                                                10.201.2.1/24
//! 2001:db8:1::1/64     router: .254 and ::fe on each side     2001:db8:2::1/64
//! ```
//!
//! Needs root (network namespaces), `ip`, `ping`, `iperf3`, `curl` and
//! `python3`; without them the test says so loudly and passes. CI runs it
//! as root with the tools installed.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::netns::{mac_of, missing_prerequisite, must, Routed};

#[test]
fn real_clients_cross_the_dual_stack_router_over_ipv4_and_ipv6() {
    if let Some(why) = missing_prerequisite("6", &["ping", "iperf3", "curl", "python3"]) {
        eprintln!("SKIPPED dual-stack router test: {why}. CI runs it as root.");
        return;
    }
    let pid = std::process::id();
    let (mut t, a, b) = Routed::new("6");
    let (c, m, s) = (t.ns[0].clone(), t.ns[1].clone(), t.ns[2].clone());
    for (ns, dev, v4, v6, gw4, gw6) in [
        (
            &c,
            "c",
            "10.201.1.1/24",
            "2001:db8:1::1/64",
            "10.201.1.254",
            "2001:db8:1::fe",
        ),
        (
            &s,
            "s",
            "10.201.2.1/24",
            "2001:db8:2::1/64",
            "10.201.2.254",
            "2001:db8:2::fe",
        ),
    ] {
        must(&["ip", "-n", ns, "addr", "add", v4, "dev", dev]);
        must(&["ip", "-n", ns, "-6", "addr", "add", v6, "dev", dev, "nodad"]);
        must(&["ip", "-n", ns, "route", "add", "default", "via", gw4]);
        must(&["ip", "-n", ns, "-6", "route", "add", "default", "via", gw6]);
    }
    let (amac, bmac) = (mac_of(&m, &a), mac_of(&m, &b));
    let config = format!(
        "{}/../../examples/dual-stack-router.click",
        env!("CARGO_MANIFEST_DIR")
    );
    let log_path = std::env::temp_dir().join(format!("pronto-dual-stack-{pid}.log"));
    let log = std::fs::File::create(&log_path).expect("log file");
    let router = t
        .exec(
            1,
            &[
                env!("CARGO_BIN_EXE_pronto"),
                "run",
                &config,
                &format!("A={a}"),
                &format!("B={b}"),
                &format!("AMAC={amac}"),
                &format!("BMAC={bmac}"),
            ],
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("pronto runs");
    t.children.push(router);
    let pronto_said = || {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        format!("pronto's standard error:\n{text}")
    };

    // IPv4 and IPv6 pings: ARP and Neighbor Discovery answered by pronto.
    let (ok, out) = t.until(20, &["ping", "-c", "1", "-W", "1", "10.201.2.1"]);
    assert!(
        ok,
        "ping over IPv4 never got through: {out}\n{}",
        pronto_said()
    );
    let (ok, out) = t.until(20, &["ping", "-6", "-c", "1", "-W", "1", "2001:db8:2::1"]);
    assert!(
        ok,
        "ping over IPv6 never got through: {out}\n{}",
        pronto_said()
    );
    let (ok, out) = t.output(0, &["ping", "-6", "-c", "3", "-i", "0.2", "2001:db8:2::1"]);
    assert!(
        ok && out.contains("3 packets transmitted, 3 received"),
        "{out}"
    );
    // The client learned the router's MAC through pronto's advertisement.
    let (_, neigh) = t.output(0, &["ip", "-6", "neigh", "show", "2001:db8:1::fe"]);
    assert!(neigh.contains(&amac), "{neigh}");

    // A hop limit of 1 expires at the router: an ICMPv6 time exceeded
    // from its address on the client's side.
    let (_, out) = t.output(
        0,
        &[
            "ping",
            "-6",
            "-c",
            "1",
            "-W",
            "2",
            "-t",
            "1",
            "2001:db8:2::1",
        ],
    );
    assert!(
        out.contains("From 2001:db8:1::fe") && out.contains("Time exceeded"),
        "{out}"
    );

    // TCP over IPv6: iperf3 for two seconds, and a web page with curl.
    t.spawn(
        2,
        &["iperf3", "-s", "-1", "-B", "2001:db8:2::1"],
        Stdio::null(),
    );
    t.spawn(
        2,
        &[
            "python3",
            "-m",
            "http.server",
            "8080",
            "--bind",
            "2001:db8:2::1",
        ],
        Stdio::null(),
    );
    std::thread::sleep(Duration::from_millis(500));
    let (ok, out) = t.until(
        10,
        &["iperf3", "-6", "-c", "2001:db8:2::1", "-t", "2", "-J"],
    );
    assert!(ok, "iperf3 -6 failed: {out}");
    assert!(out.contains("\"sum_received\""), "{out}");
    let (ok, out) = t.until(
        10,
        &[
            "curl",
            "-sS",
            "-g",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "http://[2001:db8:2::1]:8080/",
        ],
    );
    assert!(ok && out.trim() == "200", "curl over IPv6: {out}");
    drop(t);
    let _ = std::fs::remove_file(&log_path);
}
