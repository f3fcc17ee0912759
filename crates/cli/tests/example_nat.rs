//! examples/nat.click: the two-interface source NAT over its bundled trace
//! (scripts/make_nat_trace.py) prints exactly the expected counters and
//! writes translated packets with the predicted public ports, echo
//! identifiers and valid checksums.

mod common;

use common::{checksums_ok, ip_of, pcap_frames, run_example, scratch, sum16, tcpdump};

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
    let report = run_example("nat", &[], &[("OUT", &out_pcap)]).stdout;
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
        assert!(checksums_ok(ip_of(f)), "checksums of {f:02x?}");
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

    if let Some(text) = tcpdump(&out_pcap) {
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
}

/// The NAT's split reaches its rewriters and the `ICMPRewriter` that reads
/// their flows: they run as one group, in the packets' joint order (the
/// `order` handler says so). An ICMP error sent before the flow it is
/// about is made must still find no flow, and one sent after must be
/// translated, as when packets go through one at a time: the trace is the
/// bundled one with its ICMP errors also before it and after it, all in one
/// batch, and both ways write the same packets and the same report.
#[test]
fn icmp_errors_see_exactly_the_flows_made_before_them_in_one_batch() {
    let dir = scratch("nat-order");
    let frames = pcap_frames(&common::root().join("examples/nat.pcap"));
    let error = |f: &&Vec<u8>| f.len() > 34 && f[12..14] == [8, 0] && f[23] == 1 && f[34] == 3;
    let errors: Vec<&Vec<u8>> = frames.iter().filter(error).collect();
    assert!(!errors.is_empty(), "the bundled trace has ICMP errors");
    let mut pcap = Vec::new();
    for w in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        pcap.extend_from_slice(&w.to_le_bytes());
    }
    let all = errors
        .iter()
        .copied()
        .chain(&frames)
        .chain(errors.iter().copied());
    for (i, f) in all.enumerate() {
        for w in [1_600_000_000, i as u32, f.len() as u32, f.len() as u32] {
            pcap.extend_from_slice(&w.to_le_bytes());
        }
        pcap.extend_from_slice(f);
    }
    let trace = dir.join("trace.pcap");
    std::fs::write(&trace, pcap).expect("trace written");
    let order = run_example("nat", &["-q", "-h", "order"], &[]).stdout;
    assert!(
        order.contains("link: batches, ordered at rw+pr+errs "),
        "{order}"
    );
    let mut got = Vec::new();
    for how in ["--order=merge", "--order=per-packet"] {
        let out = dir.join(format!("{how}.pcap"));
        let report = run_example("nat", &[how], &[("TRACE", &trace), ("OUT", &out)]).stdout;
        let report = report.replace(&out.display().to_string(), "OUT");
        got.push((report, std::fs::read(&out).expect("written")));
    }
    // One at a time, against the bundled trace alone (2 errors translated,
    // 2 other ICMP dropped): the four copies add 1 translated and 3
    // dropped; the two sent first, before any flow exists, are among the
    // dropped.
    for line in [
        "inbound          16 packets: 11 replies, 2 ping replies, 3 ICMP errors\n",
        "unsolicited      9 dropped: 4 TCP/UDP/echo reply, 5 other ICMP\n",
    ] {
        assert!(got[1].0.contains(line), "{}", got[1].0);
    }
    assert_eq!(got[0].0, got[1].0);
    assert!(got[0].1 == got[1].1, "the translated packets differ");
}
