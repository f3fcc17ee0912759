//! examples/nat.click: the two-interface source NAT over its bundled trace
//! (scripts/make_nat_trace.py) prints exactly the expected counters and
//! writes translated packets with the predicted public ports, echo
//! identifiers and valid checksums.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pronto-cli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch directory");
    d
}

/// The frames of a pcap file.
fn pcap_frames(path: &Path) -> Vec<Vec<u8>> {
    let b = std::fs::read(path).expect("pcap written");
    assert!(b.len() >= 24, "pcap header");
    let mut v = Vec::new();
    let mut i = 24;
    while i + 16 <= b.len() {
        let caplen = u32::from_le_bytes([b[i + 8], b[i + 9], b[i + 10], b[i + 11]]) as usize;
        v.push(b[i + 16..i + 16 + caplen].to_vec());
        i += 16 + caplen;
    }
    assert_eq!(i, b.len(), "pcap ends on a record");
    v
}

/// The one's-complement sum of `data`, folded (odd length padded with 0).
fn sum16(data: &[u8]) -> u32 {
    let mut s: u32 = data
        .chunks(2)
        .map(|c| u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0)))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    s
}

/// A frame's IPv4 packet (after the 14-byte Ethernet header, without
/// link padding).
fn ip_of(f: &[u8]) -> &[u8] {
    assert_eq!(&f[12..14], &[8, 0], "IPv4 frame");
    let tl = usize::from(u16::from_be_bytes([f[16], f[17]]));
    &f[14..14 + tl]
}

/// Checks the IP header checksum and the TCP/UDP (with pseudo-header) or
/// ICMP checksum of a frame.
fn assert_checksums(f: &[u8]) {
    let ip = ip_of(f);
    let hl = usize::from(ip[0] & 15) * 4;
    assert_eq!(sum16(&ip[..hl]), 0xffff, "IP checksum of {f:02x?}");
    let l4 = &ip[hl..];
    let ok = match ip[9] {
        6 | 17 => {
            let mut ph = Vec::from(&ip[12..20]);
            ph.extend_from_slice(&[0, ip[9]]);
            ph.extend_from_slice(&(l4.len() as u16).to_be_bytes());
            ph.extend_from_slice(l4);
            sum16(&ph) == 0xffff
        }
        1 => sum16(l4) == 0xffff,
        p => panic!("unexpected protocol {p}"),
    };
    assert!(ok, "transport checksum of {f:02x?}");
}

/// (source, source port, destination, destination port) of a TCP/UDP
/// frame, addresses as text.
fn tuple(f: &[u8]) -> (String, u16, String, u16) {
    let ip = ip_of(f);
    let hl = usize::from(ip[0] & 15) * 4;
    let a = |o: usize| format!("{}.{}.{}.{}", ip[o], ip[o + 1], ip[o + 2], ip[o + 3]);
    (
        a(12),
        u16::from_be_bytes([ip[hl], ip[hl + 1]]),
        a(16),
        u16::from_be_bytes([ip[hl + 2], ip[hl + 3]]),
    )
}

fn has(frames: &[Vec<u8>], proto: u8, t: (&str, u16, &str, u16)) -> usize {
    frames
        .iter()
        .filter(|f| ip_of(f)[9] == proto)
        .filter(|f| {
            let (s, sp, d, dp) = tuple(f);
            (s.as_str(), sp, d.as_str(), dp) == t
        })
        .count()
}

const ROUTER_OUT: [u8; 6] = [2, 0, 0, 0, 0, 2];
const GATEWAY: [u8; 6] = [2, 0, 0, 0, 0xfe, 1];
const ROUTER_IN: [u8; 6] = [2, 0, 0, 0, 0, 1];

#[test]
fn nat_example_translates_both_directions() {
    let dir = scratch("nat");
    let out_pcap = dir.join("translated.pcap");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .current_dir(&root)
        .args(["run", "examples/nat.click"])
        .arg(format!("OUT={}", out_pcap.display()))
        .output()
        .expect("pronto runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = String::from_utf8_lossy(&o.stdout);
    let expected = format!(
        "read             41 frames\n\
         outbound         17 packets: 15 TCP/UDP, 2 pings\n\
         inbound          15 packets: 11 replies, 2 ping replies, 2 ICMP errors\n\
         unsolicited      6 dropped: 4 TCP/UDP/echo reply, 2 other ICMP\n\
         not ours         1 to other addresses, 1 from foreign inside sources, 1 not IPv4\n\
         mappings         6 TCP/UDP, 1 ping\n\
         written          32 -> {}\n",
        out_pcap.display()
    );
    assert_eq!(report, expected);

    let frames = pcap_frames(&out_pcap);
    assert_eq!(frames.len(), 32);
    for f in &frames {
        assert_checksums(f);
        let from_public = ip_of(f)[12..16] == [198, 51, 100, 1];
        if from_public {
            assert_eq!(f[..6], GATEWAY, "outbound frames go to the gateway");
            assert_eq!(f[6..12], ROUTER_OUT);
        } else {
            assert_eq!(
                f[6..12],
                ROUTER_IN,
                "inbound frames leave the inside interface"
            );
            assert_eq!(f[..5], [2, 0, 0, 0, 0x10]);
            assert_eq!(f[5], ip_of(f)[19], "to the inside host's MAC");
        }
    }
    // The first TCP connection took public port 1024: SYN, ACK, GET, 4 ACKs, FIN.
    let p = "198.51.100.1";
    assert_eq!(has(&frames, 6, (p, 1024, "93.184.216.34", 80)), 8);
    assert_eq!(has(&frames, 6, ("93.184.216.34", 80, "10.0.0.2", 40001)), 7);
    assert_eq!(
        tuple(&frames[0]),
        (p.into(), 1024, "93.184.216.34".into(), 80)
    );
    // The DNS query is the next new flow: 1025; the second TCP one 1026.
    assert_eq!(has(&frames, 17, (p, 1025, "8.8.8.8", 53)), 1);
    assert_eq!(has(&frames, 17, ("8.8.8.8", 53, "10.0.0.3", 5353)), 1);
    assert_eq!(has(&frames, 6, (p, 1026, "93.184.216.35", 443)), 3);
    assert_eq!(
        has(&frames, 6, ("93.184.216.35", 443, "10.0.0.2", 40002)),
        2
    );
    // The traceroute probe 1027, the closed port 1028, and the same inside
    // port to another resolver: a new flow, 1029.
    assert_eq!(has(&frames, 17, (p, 1027, "203.0.113.9", 33434)), 1);
    assert_eq!(has(&frames, 17, (p, 1028, "203.0.113.77", 9999)), 1);
    assert_eq!(has(&frames, 17, (p, 1029, "1.1.1.1", 53)), 1);
    assert_eq!(has(&frames, 17, ("1.1.1.1", 53, "10.0.0.3", 5353)), 1);
    // Pings: identifier 0x0300 leaves as 1024 and comes back as 0x0300.
    let icmp: Vec<&Vec<u8>> = frames.iter().filter(|f| ip_of(f)[9] == 1).collect();
    assert_eq!(icmp.len(), 6);
    let echo: Vec<(u8, [u8; 4], u16)> = icmp
        .iter()
        .filter(|f| ip_of(f)[20] == 0 || ip_of(f)[20] == 8)
        .map(|f| {
            let ip = ip_of(f);
            let who = if ip[20] == 8 {
                &ip[12..16]
            } else {
                &ip[16..20]
            };
            (
                ip[20],
                who.try_into().expect("4 bytes"),
                u16::from_be_bytes([ip[24], ip[25]]),
            )
        })
        .collect();
    assert_eq!(
        echo,
        vec![
            (8, [198, 51, 100, 1], 1024),
            (0, [10, 0, 0, 4], 0x0300),
            (8, [198, 51, 100, 1], 1024),
            (0, [10, 0, 0, 4], 0x0300),
        ]
    );
    // ICMP errors reach the inside host, quoting its own packet.
    let errors: Vec<&[u8]> = icmp
        .iter()
        .map(|f| ip_of(f))
        .filter(|ip| ip[20] == 11 || ip[20] == 3)
        .collect();
    assert_eq!(errors.len(), 2);
    for (ip, host, sport, dst, dport) in [
        (
            errors[0],
            [10, 0, 0, 3],
            33434u16,
            [203, 0, 113, 9],
            33434u16,
        ),
        (errors[1], [10, 0, 0, 4], 40000, [203, 0, 113, 77], 9999),
    ] {
        assert_eq!(ip[16..20], host, "outer destination");
        let q = &ip[28..];
        assert_eq!(sum16(&q[..20]), 0xffff, "quoted IP checksum");
        assert_eq!(q[12..16], host, "quoted source");
        assert_eq!(q[16..20], dst, "quoted destination");
        assert_eq!(u16::from_be_bytes([q[20], q[21]]), sport);
        assert_eq!(u16::from_be_bytes([q[22], q[23]]), dport);
    }
    // Nothing unsolicited got through.
    assert!(frames
        .iter()
        .all(|f| ip_of(f)[12..16] != [198, 18, 0, 66] && ip_of(f)[16..20] != [198, 18, 0, 66]));

    match Command::new("tcpdump")
        .args(["-nn", "-r"])
        .arg(&out_pcap)
        .output()
    {
        Ok(t) => {
            assert!(
                t.status.success(),
                "tcpdump: {}",
                String::from_utf8_lossy(&t.stderr)
            );
            let text = String::from_utf8_lossy(&t.stdout);
            assert_eq!(text.lines().count(), 32, "{text}");
            assert!(
                text.contains("198.51.100.1.1024 > 93.184.216.34.80: Flags [S]"),
                "{text}"
            );
            assert!(
                text.contains("93.184.216.34.80 > 10.0.0.2.40001: Flags [S.]"),
                "{text}"
            );
            assert!(
                text.contains("198.51.100.1 > 203.0.113.5: ICMP echo request, id 1024, seq 1"),
                "{text}"
            );
            assert!(
                text.contains("192.0.2.254 > 10.0.0.3: ICMP time exceeded in-transit"),
                "{text}"
            );
        }
        Err(_) => {
            eprintln!("SKIPPED: tcpdump not installed; pcap not read back by an independent tool")
        }
    }
}
