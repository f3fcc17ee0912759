//! examples/lb.click: the Maglev load balancer over its bundled two-phase
//! trace (scripts/make_lb_trace.py) spreads connections over the backends
//! exactly as the script predicts, keeps every connection on its backend
//! after web3 is drained, sends no new connection to web3, and translates
//! the backends' answers back to the VIP.

use std::collections::HashMap;

mod common;

use common::{checksums_ok, pcap_frames, run_example, scratch, tcpdump};

/// A TCP frame's IP packet, with its IP and TCP checksums checked.
fn checked_ip(f: &[u8]) -> &[u8] {
    let ip = common::ip_of(f);
    assert_eq!(ip[0], 0x45);
    assert_eq!(ip[9], 6, "TCP");
    assert!(checksums_ok(ip), "IP and TCP checksums");
    ip
}

const EXPECTED: &str = "\
phase 1:       96 frames
  to backends  web1 12 web2 18 web3 10 web4 8
  to clients    48
drained web3
phase 2:       96 more frames; totals:
  to backends  web1 23 web2 36 web3 15 web4 22
  to clients    96
  stray         0 other 0
connections     48 ( 48 mapped, 0 unmapped )
new connections per backend (name pattern outputs state count):
web1 - - 10.1.0.1 80 0 1 active 11
web2 - - 10.1.0.2 80 0 1 active 18
web3 - - 10.1.0.3 80 0 1 draining 5
web4 - - 10.1.0.4 80 0 1 active 14
";

#[test]
fn lb_example_balances_drains_and_keeps_connections() {
    let dir = scratch("lb");
    let out_pcap = dir.join("lb.pcap");
    let report = run_example("lb", &[], &[("OUT", &out_pcap)]).stdout;
    assert_eq!(report.trim_end(), EXPECTED.trim_end());

    let frames = pcap_frames(&out_pcap);
    assert_eq!(frames.len(), 192);
    // Connection (client address, port) -> backend (last address byte),
    // and the same for the phase in which the connection was opened.
    let mut backend: HashMap<([u8; 4], u16), u8> = HashMap::new();
    let mut per_backend_new = [[0usize; 4]; 2];
    let mut to_clients = 0;
    for f in &frames {
        let ip = checked_ip(f);
        let (sport, dport) = (
            u16::from_be_bytes([ip[20], ip[21]]),
            u16::from_be_bytes([ip[22], ip[23]]),
        );
        let flags = ip[33];
        if ip[16..19] == [10, 1, 0] {
            // To a backend: the client's source kept, VIP:80 rewritten.
            assert_eq!(dport, 80);
            assert_eq!(ip[12..15], [203, 0, 113]);
            let b = ip[19];
            assert!((1..=4).contains(&b), "backend {b}");
            assert_eq!(f[..6], [2, 0, 0, 1, 0, b], "to the backend's MAC");
            let client: [u8; 4] = ip[12..16].try_into().expect("4 bytes");
            let phase2 = client[3] >= 34; // clients 24..47 arrive in phase 2
            let prev = backend.insert((client, sport), b);
            if let Some(prev) = prev {
                assert_eq!(prev, b, "connection {client:?}:{sport} moved");
            }
            if flags == 0x02 {
                per_backend_new[usize::from(phase2)][usize::from(b - 1)] += 1;
            }
            if phase2 {
                assert_ne!(b, 3, "new connection sent to the drained web3");
            }
        } else {
            // To a client: from the VIP, port 80.
            assert_eq!(ip[12..16], [192, 0, 2, 10]);
            assert_eq!(sport, 80);
            assert_eq!(ip[16..19], [203, 0, 113]);
            assert_eq!(f[..6], [2, 0, 0, 0, 0, 0xfe]);
            to_clients += 1;
        }
    }
    assert_eq!(to_clients, 96);
    assert_eq!(backend.len(), 48);
    // As scripts/make_lb_trace.py predicts: its model of the Maglev table.
    assert_eq!(per_backend_new, [[6, 9, 5, 4], [5, 9, 0, 10]]);
    // The phase-1 connections on web3 kept it through their close.
    let web3_fins = frames
        .iter()
        .filter(|f| f[30..34] == [10, 1, 0, 3] && f[47] & 1 == 1)
        .count();
    assert_eq!(web3_fins, 5);

    if let Some(text) = tcpdump(&out_pcap) {
        assert_eq!(text.lines().count(), 192);
        assert_eq!(text.matches("192.0.2.10.80 > 203.0.113.").count(), 96);
    }
}
