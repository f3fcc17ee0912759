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

use common::netns::{
    address_dual_stack_hosts, dual_stack_clients_get_through, mac_of, missing_prerequisite, Routed,
};

#[test]
fn real_clients_cross_the_dual_stack_router_over_ipv4_and_ipv6() {
    if let Some(why) = missing_prerequisite("6", &["ping", "iperf3", "curl", "python3"]) {
        eprintln!("SKIPPED dual-stack router test: {why}. CI runs it as root.");
        return;
    }
    let pid = std::process::id();
    let (mut t, a, b) = Routed::new("6");
    let m = t.ns[1].clone();
    address_dual_stack_hosts(&t);
    let (amac, bmac) = (mac_of(&m, &a), mac_of(&m, &b));
    let config = format!(
        "{}/../../examples/dual-stack-router.click",
        env!("CARGO_MANIFEST_DIR")
    );
    let log_path = std::env::temp_dir().join(format!("pronto-dual-stack-{pid}.log"));
    let pronto_said = t.spawn_pronto(
        1,
        &[
            &config,
            &format!("A={a}"),
            &format!("B={b}"),
            &format!("AMAC={amac}"),
            &format!("BMAC={bmac}"),
        ],
        &log_path,
    );

    dual_stack_clients_get_through(&mut t, &amac, &pronto_said);
    drop(t);
    let _ = std::fs::remove_file(&log_path);
}
