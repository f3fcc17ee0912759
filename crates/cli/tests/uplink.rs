//! A sandboxed instance on the daemon's switch, reached by real clients
//! through uplinks (`pronto daemon --uplink IFACE`): the dual-stack router
//! example runs as instance `r6` with interfaces eth0 and eth1 on the
//! switch, and the client and server namespaces are on the switch's
//! segment through the daemon namespace's veth ends. `ping`, `ping -6`,
//! `iperf3 -6` and `curl` over IPv6 cross it; Neighbor Discovery and ARP
//! are answered by the instance; `/metrics` counts the uplinks' frames.
//!
//! ```text
//! client ns            host ns: pronto daemon --uplink a --uplink b            server ns
//! c ── veth ── a ─ uplink/a ─┐  switch  ┌─ r6/eth0 ┐ sandboxed   ┌─ uplink/b ─ b ── veth ── s
//!                            └──────────┴─ r6/eth1 ┘ dual-stack  ┘
//! ```
//!
//! Needs root (network namespaces), `ip`, `ping`, `iperf3`, `curl` and
//! `python3`; without them the test says so loudly and passes. CI runs it
//! as root with the tools installed.

mod common;

use common::netns::{
    address_dual_stack_hosts, dual_stack_clients_get_through, missing_prerequisite, must, Routed,
};

const AMAC: &str = "02:00:00:00:01:fe";
const BMAC: &str = "02:00:00:00:02:fe";

#[test]
fn real_clients_cross_a_sandboxed_dual_stack_router_through_uplinks() {
    if let Some(why) = missing_prerequisite("u", &["ping", "iperf3", "curl", "python3"]) {
        eprintln!("SKIPPED uplink test: {why}. CI runs it as root.");
        return;
    }
    let (mut t, a, b) = Routed::new("u");
    let m = t.ns[1].clone();
    address_dual_stack_hosts(&t);
    // The daemon runs where an operator's does, in the host's namespace
    // (its cgroups are mounted there; `ip netns exec` hides them), so the
    // veth ends move there; they go with the namespaces at the end.
    for dev in [&a, &b] {
        must(&["ip", "-n", &m, "link", "set", dev, "netns", "1"]);
        must(&[
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{dev}.disable_ipv6=1"),
        ]);
        must(&["ip", "link", "set", dev, "up"]);
    }

    let dir = common::scratch("uplink");
    // An interface that is not there: the daemon does not start, and says
    // which.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["daemon", "--listen", "none", "--warm", "0", "--socket"])
        .arg(dir.join("sock"))
        .arg("--state")
        .arg(dir.join("state"))
        .args(["--uplink", "nosuch0"])
        .output()
        .expect("pronto daemon");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "prontod: --uplink: nosuch0: no such interface: No such device (os error 19)\n"
    );
    let d = common::start_daemon_with(&dir, &["--uplink", &a, "--uplink", &b, "--warm", "0"]);
    // The example as it is, its interfaces named as the instance's.
    let example = std::fs::read_to_string(format!(
        "{}/../../examples/dual-stack-router.click",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("example");
    let config = example.replacen("define($A a, $B b,", "define($A eth0, $B eth1,", 1);
    assert_ne!(config, example, "the example's define line changed");
    let path = dir.join("r6.click");
    std::fs::write(&path, config).expect("config");
    let (made, out, err) = common::ctl(
        &dir,
        &[
            "create",
            "r6",
            "--config",
            path.to_str().expect("path"),
            // Its queues and resolvers can hold 14,336 packets: more than
            // the default 32 MB pool has slots for.
            "--mem",
            "64M",
            "--iface",
            &format!("eth0={AMAC}"),
            "--iface",
            &format!("eth1={BMAC}"),
        ],
    );
    assert!(made, "create: {out}{err}");
    let daemon_said = || {
        let log = d.log.lock().map(|l| l.clone()).unwrap_or_default();
        format!("daemon's standard error:\n{log}")
    };

    // Through the sandbox: the instance answers ARP and Neighbor
    // Discovery, and segmentation-offload frames from the veths are cut
    // into segments by the uplinks.
    dual_stack_clients_get_through(&mut t, AMAC, &daemon_said);

    // The uplinks are ports of the switch, and their frames are counted.
    let (listed, ports, err) = common::ctl(&dir, &["ports"]);
    assert!(listed, "{err}");
    assert!(ports.contains(&format!("uplink/{a}")), "{ports}");
    assert!(ports.contains(&format!("uplink/{b}")), "{ports}");
    let metrics = std::process::Command::new("curl")
        .args(["-s", "--unix-socket"])
        .arg(dir.join("sock"))
        .arg("http://localhost/metrics")
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&metrics.stdout).into_owned();
    for u in [&a, &b] {
        for dir in ["to_switch", "to_iface"] {
            let key = format!("pronto_uplink_frames_total{{uplink=\"{u}\",direction=\"{dir}\"}} ");
            let n: u64 = text
                .lines()
                .find_map(|l| l.strip_prefix(&key))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {key} in:\n{text}"));
            // iperf3 alone moved thousands of segments each way.
            assert!(n > 1000, "{key}{n}");
        }
        let key =
            format!("pronto_uplink_dropped_total{{uplink=\"{u}\",reason=\"switch_port_full\"}} ");
        assert!(text.contains(&key), "{text}");
    }
    assert!(d.term().success(), "the daemon did not shut down cleanly");
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
}
