//! examples/cgnat.click: runs the carrier-grade NAT example on its bundled
//! trace and checks the printed counters, the allocation log and the
//! translated packets.

mod common;

use common::{checksums_ok, ip_of, pcap_frames, run_example, scratch, sum16};

/// `proto src:port > dst:port` of an Ethernet/IPv4 frame.
fn flow(f: &[u8]) -> String {
    let ip = &f[14..];
    let a = |o: usize| format!("{}.{}.{}.{}", ip[o], ip[o + 1], ip[o + 2], ip[o + 3]);
    let p = |o: usize| u16::from_be_bytes([ip[20 + o], ip[21 + o]]);
    match ip[9] {
        1 => format!("icmp{} {} > {} id {}", ip[20], a(12), a(16), p(4)),
        6 => format!("tcp {}:{} > {}:{}", a(12), p(0), a(16), p(2)),
        _ => format!("udp {}:{} > {}:{}", a(12), p(0), a(16), p(2)),
    }
}

#[test]
fn cgnat_example_translates_logs_and_counts() {
    let dir = scratch("cgnat");
    let out = dir.join("out.pcap");
    let log = dir.join("alloc.log");
    let stdout = run_example("cgnat", &["--simtime"], &[("OUT", &out), ("LOG", &log)]).stdout;
    assert_eq!(
        stdout,
        "read           64 frames, 1 not IPv4, 0 malformed\n\
         outbound       41\n\
         inbound        11\n\
         hairpinned     1\n\
         icmp errors    2\n\
         mappings       41\n\
         subscribers    7\n\
         blocks         8\n\
         exhaustion     4\n\
         no mapping     5\n\
         not internal   1\n\
         dropped        10\n\
         port blocks:\n\
         198.51.100.4 1024-1039 subscriber=100.64.0.4 tcp=0 udp=1 icmp=1\n\
         198.51.100.5 1024-1039 subscriber=100.64.0.1 tcp=16 udp=1 icmp=0\n\
         198.51.100.5 1040-1055 subscriber=100.64.0.5 tcp=0 udp=1 icmp=0\n\
         198.51.100.5 1056-1071 subscriber=100.64.0.1 tcp=16 udp=0 icmp=0\n\
         198.51.100.6 1024-1039 subscriber=100.64.0.2 tcp=0 udp=1 icmp=0\n\
         198.51.100.6 1040-1055 subscriber=100.64.0.6 tcp=0 udp=1 icmp=0\n\
         198.51.100.7 1024-1039 subscriber=100.64.0.3 tcp=0 udp=2 icmp=0\n\
         198.51.100.7 1040-1055 subscriber=100.64.0.7 tcp=0 udp=1 icmp=0\n"
    );
    // One log line per block, at the simulated clock's start.
    let t = "2001-09-09T01:46:40.000Z cgnat ALLOC";
    let want: Vec<String> = [
        ("100.64.0.1", "198.51.100.5", "1024-1039"),
        ("100.64.0.2", "198.51.100.6", "1024-1039"),
        ("100.64.0.3", "198.51.100.7", "1024-1039"),
        ("100.64.0.4", "198.51.100.4", "1024-1039"),
        ("100.64.0.5", "198.51.100.5", "1040-1055"),
        ("100.64.0.6", "198.51.100.6", "1040-1055"),
        ("100.64.0.1", "198.51.100.5", "1056-1071"),
        ("100.64.0.7", "198.51.100.7", "1040-1055"),
    ]
    .iter()
    .map(|(s, e, p)| format!("{t} subscriber={s} external={e} ports={p}"))
    .collect();
    let got = std::fs::read_to_string(&log).expect("allocation log");
    assert_eq!(got.lines().collect::<Vec<_>>(), want);

    let frames = pcap_frames(&out);
    assert_eq!(frames.len(), 53, "41 outbound + 11 inbound + 1 hairpinned");
    for f in &frames {
        assert!(checksums_ok(ip_of(f)), "bad checksum in {}", flow(f));
    }
    let flows: Vec<String> = frames.iter().map(|f| flow(f)).collect();
    for want in [
        // DNS out and back (paired addresses: subscriber mod 4).
        "udp 198.51.100.5:1024 > 8.8.8.8:53",
        "udp 198.51.100.4:1024 > 8.8.8.8:53",
        "udp 198.51.100.6:1040 > 8.8.8.8:53",
        "udp 8.8.8.8:53 > 100.64.0.1:40001",
        "udp 8.8.8.8:53 > 100.64.0.6:40006",
        // Endpoint-independent filtering.
        "udp 203.0.113.50:9999 > 100.64.0.2:40002",
        // Hairpin: subscriber 3's mapping to subscriber 2's inside address.
        "udp 198.51.100.7:1025 > 100.64.0.2:40002",
        // The TCP burst: first block, second block.
        "tcp 198.51.100.5:1039 > 93.184.216.34:443",
        "tcp 198.51.100.5:1056 > 93.184.216.34:443",
        "tcp 198.51.100.5:1071 > 93.184.216.34:443",
        "tcp 93.184.216.34:443 > 100.64.0.1:50001",
        // Ping with the identifier translated.
        "icmp8 198.51.100.4 > 1.1.1.1 id 1024",
        "icmp0 1.1.1.1 > 100.64.0.4 id 1911",
        "udp 198.51.100.7:1040 > 8.8.8.8:53",
        // ICMP errors, translated both ways.
        "icmp11 203.0.113.1 > 100.64.0.1 id 0",
        "icmp3 198.51.100.6 > 8.8.8.8 id 0",
    ] {
        assert!(
            flows.iter().any(|f| f == want),
            "{want} missing in {flows:#?}"
        );
    }
    // The packets quoted in the ICMP errors are translated too, with
    // checksums that verify.
    for (head, quoted) in [
        ("icmp11 ", "udp 100.64.0.1:40001 > 8.8.8.8:53"),
        ("icmp3 ", "udp 8.8.8.8:53 > 198.51.100.6:1040"),
    ] {
        let f = frames
            .iter()
            .find(|f| flow(f).starts_with(head))
            .expect("ICMP error");
        let mut inner = f[..14].to_vec();
        inner.extend_from_slice(&f[14 + 28..]);
        assert_eq!(flow(&inner), quoted);
        assert_eq!(sum16(&inner[14..34]), 0xffff, "quoted IP checksum");
    }
    let tcp_out = flows
        .iter()
        .filter(|f| f.starts_with("tcp 198.51.100.5:"))
        .count();
    assert_eq!(tcp_out, 32, "two blocks of 16 ports, the rest exhausted");
    assert!(
        !flows.iter().any(|f| f.contains("100.64.1.9")),
        "sources outside INTERNAL are not translated"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
