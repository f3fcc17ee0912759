//! examples/router.click: the two-interface IP router over its bundled trace
//! (scripts/make_router_trace.py) prints exactly the expected counters and
//! writes exactly the expected frames (ARP replies and queries, forwarded
//! frames with new MACs, decremented TTLs and fixed checksums, fragments,
//! ICMP errors with their quotes), with the small routes file and with the
//! full generated table (scripts/make_bgp_table.py).

use std::path::Path;
use std::process::Command;

mod common;

use common::{cksum, pcap_frames, root, run_example, scratch};

/// Sets an IP header's checksum.
fn fix_ip_sum(ip: &mut [u8]) {
    let hl = usize::from(ip[0] & 15) * 4;
    ip[10..12].copy_from_slice(&[0, 0]);
    let s = cksum(&ip[..hl]);
    ip[10..12].copy_from_slice(&s);
}

const R0: [u8; 6] = [2, 0, 10, 0, 0, 1];
const R1: [u8; 6] = [2, 0, 10, 0, 1, 1];
const NH0: [u8; 6] = [2, 0, 10, 0, 0, 2];
const NH1: [u8; 6] = [2, 0, 10, 0, 1, 2];
const H0: [u8; 6] = [2, 0, 10, 0, 0, 5];
const H1: [u8; 6] = [2, 0, 10, 0, 1, 7];

fn ether(dst: [u8; 6], src: [u8; 6], etype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = [&dst[..], &src[..], &etype.to_be_bytes()[..], payload].concat();
    f.resize(f.len().max(60), 0);
    f
}

/// An ARP packet (Ethernet/IPv4) inside its Ethernet header, unpadded (42
/// bytes), as ARPResponder and ARPQuerier make them.
fn arp(op: u16, dst: [u8; 6], sha: [u8; 6], spa: [u8; 4], tha: [u8; 6], tpa: [u8; 4]) -> Vec<u8> {
    [
        &dst[..],
        &sha[..],
        &[8, 6, 0, 1, 8, 0, 6, 4],
        &op.to_be_bytes()[..],
        &sha[..],
        &spa[..],
        &tha[..],
        &tpa[..],
    ]
    .concat()
}

/// The input IP packet forwarded: TTL decremented, checksum fixed, new
/// Ethernet header.
fn forwarded(ip: &[u8], dst: [u8; 6], src: [u8; 6]) -> Vec<u8> {
    let mut ip = ip.to_vec();
    ip[8] -= 1;
    fix_ip_sum(&mut ip);
    ether(dst, src, 0x0800, &ip)
}

/// An ICMP error from `from` about `quoted` (the packet as the router held
/// it), addressed to the quoted source; TTL 199 (200, decremented on the
/// way out), quote limited to 576 bytes in all.
fn icmp_error(
    ident: u16,
    from: [u8; 4],
    (typ, code): (u8, u8),
    rest: [u8; 4],
    quoted: &[u8],
    dst: [u8; 6],
    src: [u8; 6],
) -> Vec<u8> {
    let q = &quoted[..quoted.len().min(576 - 28)];
    let mut icmp = [&[typ, code, 0, 0][..], &rest[..], q].concat();
    let s = cksum(&icmp);
    icmp[2..4].copy_from_slice(&s);
    let tl = (20 + icmp.len()) as u16;
    let mut ip = [
        &[0x45, 0][..],
        &tl.to_be_bytes()[..],
        &ident.to_be_bytes()[..],
        &[0, 0, 199, 1, 0, 0],
        &from[..],
        &quoted[12..16],
    ]
    .concat();
    fix_ip_sum(&mut ip);
    ip.extend_from_slice(&icmp);
    ether(dst, src, 0x0800, &ip)
}

/// The two fragments of a 1600-byte packet at MTU 1500.
fn fragments(ip: &[u8], dst: [u8; 6], src: [u8; 6]) -> Vec<Vec<u8>> {
    let mut a = ip[..1500].to_vec();
    a[2..4].copy_from_slice(&1500u16.to_be_bytes());
    a[6] = 0x20; // more fragments
    a[8] -= 1;
    fix_ip_sum(&mut a);
    let mut b = [&a[..20], &ip[1500..]].concat();
    b[2..4].copy_from_slice(&((20 + ip.len() - 1500) as u16).to_be_bytes());
    b[6..8].copy_from_slice(&(1480u16 / 8).to_be_bytes());
    fix_ip_sum(&mut b);
    vec![ether(dst, src, 0x0800, &a), ether(dst, src, 0x0800, &b)]
}

/// Every frame the router writes for the bundled trace, in pronto's order.
fn expected_frames(input: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let ip = |i: usize| common::ip_of(&input[i]).to_vec();
    let (a0, a1) = ([10, 0, 0, 1], [10, 0, 1, 1]);
    let query = |src: [u8; 6], spa, tpa| arp(1, [0xff; 6], src, spa, [0; 6], tpa);
    let mut v = vec![
        arp(2, H0, R0, a0, H0, [10, 0, 0, 5]),
        arp(2, H1, R1, a1, H1, [10, 0, 1, 7]),
        query(R1, a1, [10, 0, 1, 2]),
        forwarded(&ip(3), NH1, R1),
        forwarded(&ip(4), NH1, R1),
        query(R0, a0, [10, 0, 0, 2]),
        forwarded(&ip(6), NH0, R0),
        forwarded(&ip(8), NH1, R1),
        query(R0, a0, [10, 0, 0, 5]),
        icmp_error(1, a0, (11, 0), [0; 4], &ip(9), H0, R0),
        query(R1, a1, [10, 0, 1, 7]),
        icmp_error(2, a1, (11, 0), [0; 4], &ip(11), H1, R1),
    ];
    v.extend(fragments(&ip(13), NH1, R1));
    // Needfrag quotes the packet after DecIPTTL; next-hop MTU 1500.
    let mut df = ip(14);
    df[8] -= 1;
    fix_ip_sum(&mut df);
    v.push(icmp_error(3, a1, (3, 4), [0, 0, 5, 220], &df, H1, R1));
    // Record Route gets eth1's address in its first slot.
    let mut rr = ip(15);
    rr[23..27].copy_from_slice(&a1);
    rr[22] = 8;
    v.push(forwarded(&rr, NH1, R1));
    // Pointer 2 is malformed: parameter problem pointing at byte 22.
    v.push(icmp_error(4, a1, (12, 0), [22, 0, 0, 0], &ip(16), H1, R1));
    // Sent back out eth0: forwarded, and a redirect to 10.0.0.2.
    v.push(forwarded(&ip(19), NH0, R0));
    v.push(icmp_error(5, a0, (5, 1), [10, 0, 0, 2], &ip(19), H0, R0));
    v.push(forwarded(&ip(20), NH0, R0));
    v.push(icmp_error(6, a0, (5, 1), [10, 0, 0, 2], &ip(20), H0, R0));
    v.push(forwarded(&ip(23), H1, R1));
    v
}

fn run_router(dir: &Path, routes: Option<&Path>) -> (String, Vec<Vec<u8>>) {
    let out_pcap = dir.join("routed.pcap");
    let mut defines = vec![("OUT", out_pcap.as_path())];
    if let Some(r) = routes {
        defines.push(("ROUTES", r));
    }
    let report = run_example("router", &[], &defines).stdout;
    let expected = format!(
        "read             26 frames\n\
         arp              2 + 1 queries in, 2 replies out, 4 replies in, 4 queries out\n\
         ip in            17 packets, 1 bad headers, 2 local\n\
         routed out       6 on eth0, 10 on eth1 (ICMP errors included), 1 link broadcasts dropped\n\
         icmp errors      2 time exceeded, 1 needfrag, 1 parameter problem, 2 redirect\n\
         fragments        2\n\
         not IP/ARP       1 frames, 0 from other segments\n\
         written          22 -> {}\n",
        out_pcap.display()
    );
    assert_eq!(report, expected);
    (report, pcap_frames(&out_pcap))
}

fn check_frames(frames: &[Vec<u8>]) {
    let input = pcap_frames(&root().join("examples/router.pcap"));
    assert_eq!(input.len(), 26);
    let want = expected_frames(&input);
    assert_eq!(frames.len(), want.len());
    for (i, (got, want)) in frames.iter().zip(&want).enumerate() {
        assert_eq!(got, want, "output frame {i}");
    }
}

#[test]
fn router_example_with_the_small_table() {
    let dir = scratch("router-small");
    let (_, frames) = run_router(&dir, None);
    check_frames(&frames);
}

#[test]
fn router_example_with_the_full_bgp_table() {
    let dir = scratch("router-full");
    let routes = dir.join("routes.txt");
    let o = Command::new("python3")
        .current_dir(root())
        .arg("scripts/make_bgp_table.py")
        .output()
        .expect("python3 runs scripts/make_bgp_table.py");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.stdout.iter().filter(|&&b| b == b'\n').count(), 170_000);
    std::fs::write(&routes, &o.stdout).expect("routes written");
    let (_, frames) = run_router(&dir, Some(&routes));
    check_frames(&frames);
}

#[test]
fn router_trace_script_is_deterministic() {
    let dir = scratch("router-trace");
    let p = dir.join("router.pcap");
    let o = Command::new("python3")
        .current_dir(root())
        .arg("scripts/make_router_trace.py")
        .arg(&p)
        .output()
        .expect("python3 runs scripts/make_router_trace.py");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let committed = std::fs::read(root().join("examples/router.pcap")).expect("trace");
    assert_eq!(std::fs::read(&p).expect("written"), committed);
}
