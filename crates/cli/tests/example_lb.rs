//! examples/lb.click: the dual-stack Maglev load balancer over its bundled
//! two-phase trace (scripts/make_lb_trace.py) spreads connections over the
//! backends of their own family exactly as the script predicts, keeps every
//! connection on its backend after web3 and v6web3 are drained, sends no
//! new connection to them, and translates the backends' answers back to
//! the VIP. IPv6 output frames are checked byte for byte against frames
//! built here from the input trace (addresses and MACs replaced, the TCP
//! checksum computed whole over the IPv6 pseudo-header).

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

mod common;

use common::{checksums_ok, pcap_frames, root, run_example, scratch, sum16, tcpdump};

const VIP6: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10];
const LB_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0x0a];
const ROUTER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];

/// IPv6 backend `n` (1-4): 2001:db8:1::n.
fn backend6(n: u8) -> [u8; 16] {
    let mut a = [0x20, 1, 0xd, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    a[15] = n;
    a
}

fn is_ip6(f: &[u8]) -> bool {
    f[12..14] == [0x86, 0xdd]
}

fn a16(b: &[u8]) -> [u8; 16] {
    b.try_into().expect("16 bytes")
}

/// An IPv6 TCP frame with its Ethernet addresses, IPv6 source and
/// destination replaced and its TCP checksum computed from scratch.
fn rebuilt6(f: &[u8], dst_mac: [u8; 6], src: [u8; 16], dst: [u8; 16]) -> Vec<u8> {
    let mut v = f.to_vec();
    v[..6].copy_from_slice(&dst_mac);
    v[6..12].copy_from_slice(&LB_MAC);
    v[22..38].copy_from_slice(&src);
    v[38..54].copy_from_slice(&dst);
    v[70..72].copy_from_slice(&[0, 0]);
    let seg = &v[54..];
    let mut ph = Vec::from(&v[22..54]);
    ph.extend_from_slice(&(seg.len() as u32).to_be_bytes());
    ph.extend_from_slice(&[0, 0, 0, 6]);
    ph.extend_from_slice(seg);
    let c = !sum16(&ph);
    v[70..72].copy_from_slice(&c.to_be_bytes());
    v
}

/// A TCP frame's IP packet, with its IP and TCP checksums checked.
fn checked_ip(f: &[u8]) -> &[u8] {
    let ip = common::ip_of(f);
    assert_eq!(ip[0], 0x45);
    assert_eq!(ip[9], 6, "TCP");
    assert!(checksums_ok(ip), "IP and TCP checksums");
    ip
}

// The IPv4 figures are those of the IPv4-only balancer (the IPv6 backends
// do not touch the IPv4 Maglev table). IPv6, from the script: new flows
// v6web1-4 1 2 3 2 in phase 1 (two frames each: SYN, GET), 1 6 0 1 in
// phase 2 (SYN), and every phase-1 connection's FIN in phase 2.
const EXPECTED: &str = "\
phase 1:       128 frames
  to backends  web1 12 web2 18 web3 10 web4 8
  to clients    48
  IPv6 backends v6web1 2 v6web2 4 v6web3 6 v6web4 4
  IPv6 clients  16
drained web3 and v6web3
phase 2:       128 more frames; totals:
  to backends  web1 23 web2 36 web3 15 web4 22
  to clients    96
  IPv6 backends v6web1 4 v6web2 12 v6web3 9 v6web4 7
  IPv6 clients  32
  stray         0 other 0
connections     64 ( 64 mapped, 0 unmapped )
new connections per backend (name pattern outputs state count):
web1 - - 10.1.0.1 80 0 1 active 11
web2 - - 10.1.0.2 80 0 1 active 18
web3 - - 10.1.0.3 80 0 1 draining 5
web4 - - 10.1.0.4 80 0 1 active 14
v6web1 - - 2001:db8:1::1 80 3 4 active 2
v6web2 - - 2001:db8:1::2 80 3 4 active 8
v6web3 - - 2001:db8:1::3 80 3 4 draining 3
v6web4 - - 2001:db8:1::4 80 3 4 active 3
";

#[test]
fn lb_example_balances_drains_and_keeps_connections() {
    let dir = scratch("lb");
    let out_pcap = dir.join("lb.pcap");
    let report = run_example("lb", &[], &[("OUT", &out_pcap)]).stdout;
    assert_eq!(report.trim_end(), EXPECTED.trim_end());

    let all = pcap_frames(&out_pcap);
    assert_eq!(all.len(), 256);
    let frames: Vec<Vec<u8>> = all.iter().filter(|f| !is_ip6(f)).cloned().collect();
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

    // IPv6: every input frame gives one output frame, in order. A
    // connection's backend is the one whose answers the trace carries.
    let input = pcap_frames(&root().join("examples/lb.pcap"));
    assert_eq!(input.len(), 256);
    let mut backend6_of: HashMap<([u8; 16], u16), u8> = HashMap::new();
    for f in input.iter().filter(|f| is_ip6(f)) {
        if f[22..37] == backend6(0)[..15] {
            let b = f[37];
            let key = (a16(&f[38..54]), u16::from_be_bytes([f[56], f[57]]));
            assert_eq!(*backend6_of.entry(key).or_insert(b), b);
        }
    }
    assert_eq!(backend6_of.len(), 16);
    let mut new6 = [[0usize; 4]; 2];
    let mut n6 = 0;
    for (i, (inp, out)) in input.iter().zip(all.iter()).enumerate() {
        assert_eq!(is_ip6(inp), is_ip6(out), "frame {i}: same family");
        if !is_ip6(inp) {
            continue;
        }
        n6 += 1;
        let want = if inp[38..54] == VIP6 {
            let client = a16(&inp[22..38]);
            let sport = u16::from_be_bytes([inp[54], inp[55]]);
            let b = backend6_of[&(client, sport)];
            if inp[67] == 0x02 {
                let phase2 = client[15] >= 0x18; // clients 8..15 in phase 2
                new6[usize::from(phase2)][usize::from(b - 1)] += 1;
                if phase2 {
                    assert_ne!(b, 3, "new connection sent to the drained v6web3");
                }
            }
            rebuilt6(inp, [2, 0, 0, 1, 0, 0x10 + b], client, backend6(b))
        } else {
            rebuilt6(inp, ROUTER_MAC, VIP6, a16(&inp[38..54]))
        };
        assert_eq!(out, &want, "IPv6 frame {i}");
    }
    assert_eq!(n6, 64);
    assert_eq!(new6, [[1, 2, 3, 2], [1, 6, 0, 1]]);

    if let Some(text) = tcpdump(&out_pcap) {
        assert_eq!(text.lines().count(), 256);
        assert_eq!(text.matches("192.0.2.10.80 > 203.0.113.").count(), 96);
        assert_eq!(text.matches("2001:db8::10.80 > 2001:db8:ff::").count(), 32);
    }
}

/// The IPv6 backend each new IPv6 connection (client address, port) of
/// `out` was sent to.
fn new_v6_connections(out: &Path) -> HashMap<([u8; 16], u16), u8> {
    pcap_frames(out)
        .iter()
        .filter(|f| is_ip6(f) && f[38..53] == backend6(0)[..15] && f[67] == 0x02)
        .map(|f| {
            let key = (a16(&f[22..38]), u16::from_be_bytes([f[54], f[55]]));
            (key, f[53])
        })
        .collect()
}

#[test]
fn draining_an_ipv6_backend_moves_only_its_new_flows() {
    // The same trace through the same balancer with v6web3 left in: the
    // new IPv6 connections that did not go to v6web3 then go where they
    // went with it drained; the one that went to v6web3 goes elsewhere
    // with it drained.
    let dir = scratch("lb-undrained");
    let conf = std::fs::read_to_string(root().join("examples/lb.click")).expect("example");
    let undrained = conf.replace("  write mg.drain v6web3,\n", "");
    assert_ne!(undrained, conf);
    let conf_path = dir.join("undrained.click");
    std::fs::write(&conf_path, undrained).expect("write");
    let (out_a, out_b) = (dir.join("a.pcap"), dir.join("b.pcap"));
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .current_dir(root())
        .arg("run")
        .arg(&conf_path)
        .arg(format!("OUT={}", out_b.display()))
        .output()
        .expect("pronto runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    run_example("lb", &[], &[("OUT", &out_a)]);
    let (drained, kept) = (new_v6_connections(&out_a), new_v6_connections(&out_b));
    assert_eq!(drained.len(), 16);
    assert_eq!(kept.len(), 16);
    let mut moved = 0;
    for (conn, b) in &kept {
        let phase2 = conn.0[15] >= 0x18;
        if *b == 3 && phase2 {
            assert_ne!(drained[conn], 3);
            moved += 1;
        } else {
            // Phase-1 connections (made before the drain) and every
            // connection of the other backends: the same backend.
            assert_eq!(drained[conn], *b, "{conn:?} moved off backend {b}");
        }
    }
    // As the script says: one phase-2 client whose backend the drain
    // changed (v6web3 to v6web1).
    assert_eq!(moved, 1);
}
