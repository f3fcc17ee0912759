//! examples/ids.click: the IDSMatcher sensor over its bundled trace gives
//! exactly the alert counts scripts/make_ids_trace.py predicts, logs them in
//! fast.log form and splits the packets between the clean and alert dumps.

mod common;

use common::{pcap_frames, root, run_example, scratch, tcpdump};

/// Expected hits per sid, as scripts/make_ids_trace.py prints them (the
/// pass rule 1000900 hits the internal scanner's two probes).
const HITS: &[(u32, usize)] = &[
    (1000900, 2),
    (1000101, 5),
    (1000102, 3),
    (1000103, 5),
    (1000104, 2),
    (1000105, 2),
    (1000106, 2),
    (1000107, 2),
    (1000108, 1),
    (1000109, 2),
    (1000110, 2),
    (1000111, 1),
    (1000112, 1),
    (1000201, 2),
    (1000202, 1),
    (1000203, 2),
    (1000204, 2),
    (1000205, 1),
    (1000301, 5),
    (1000302, 3),
    (1000303, 2),
    (1000304, 2),
    (1000305, 3),
    (1000306, 1),
    (1000309, 2),
    (1000307, 1),
    (1000308, 3),
    (1000401, 3),
    (1000402, 1),
    (1000403, 2),
    (1000404, 1),
];

#[test]
fn ids_example_alerts_logs_and_splits_the_trace() {
    let dir = scratch("ids");
    let (out, alerts, log) = (
        dir.join("clean.pcap"),
        dir.join("alerted.pcap"),
        dir.join("fast.log"),
    );
    let run = run_example(
        "ids",
        &[],
        &[("OUT", &out), ("ALERTS", &alerts), ("LOG", &log)],
    );
    let (report, stderr) = (run.stdout, run.stderr);
    for want in [
        "read           181 packets",
        "not IP         2",
        "malformed      0",
        "rules          31 loaded, 2 skipped",
        "inspected      179",
        "alert events   65 -> ",
        "drop verdicts  2",
        "clean          120 packets -> ",
        "alerted        59 packets -> ",
    ] {
        assert!(report.contains(want), "`{want}` missing:\n{report}");
    }
    // The hits handler, in rule-file order.
    let hits: String = HITS.iter().map(|(s, n)| format!("{s} {n}\n")).collect();
    assert!(report.contains(&hits), "{report}");
    // The two unsupported rules are skipped with their place and option.
    assert!(
        stderr.contains("examples/ids.rules:56:90: rule skipped: unsupported option `flow`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("examples/ids.rules:57:71: rule skipped: unsupported option `byte_test`"),
        "{stderr}"
    );

    // One log line per alert event (pass rules log nothing).
    let log = std::fs::read_to_string(&log).expect("log written");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 65, "{log}");
    for &(sid, n) in HITS {
        let tag = format!("[1:{sid}:");
        let got = lines.iter().filter(|l| l.contains(&tag)).count();
        let want = if sid == 1000900 { 0 } else { n };
        assert_eq!(got, want, "log lines of sid {sid}");
    }
    for want in [
        "11/14-22:13:20.010000  [**] [1:1000102:1] WEB-ATTACKS /etc/passwd access [**] [Classification: attempted-recon] [Priority: 2] {TCP} 203.0.113.15:60194 -> 192.168.1.10:8080",
        "11/14-22:13:20.030000  [**] [1:1000404:1] MALWARE EICAR test string [**] [Classification: trojan-activity] [Priority: 1] {TCP} 203.0.113.9:80 -> 192.168.1.20:51000",
        "11/14-22:13:20.060000  [**] [1:1000305:1] ICMP PING NMAP [**] [Classification: attempted-recon] [Priority: 2] {ICMP} 203.0.113.232 -> 192.168.1.102",
        "11/14-22:13:20.150000  [Drop] [**] [1:1000201:1] SHELLCODE x86 NOOP sled [**] [Classification: shellcode-detect] [Priority: 1] {TCP} 203.0.113.86:41089 -> 192.168.1.30:4444",
        // IPv6: ports after a Destination Options header, ICMPv6, UDP.
        "11/14-22:13:21.730000  [**] [1:1000101:2] WEB-ATTACKS directory traversal [**] [Classification: web-application-attack] [Priority: 1] {TCP} [2001:db8:ee::bbb]:36477 -> [2001:db8:1::10]:8080",
        "11/14-22:13:21.750000  [**] [1:1000309:1] ICMPv6 PING NMAP [**] [Classification: attempted-recon] [Priority: 2] {IPV6-ICMP} 2001:db8:ee::2a8 -> 2001:db8:1::101",
        "11/14-22:13:21.780000  [**] [1:1000401:1] DNS query for a dynamic-DNS domain [**] [Classification: policy-violation] [Priority: 1] {UDP} [2001:db8:1::20]:38846 -> [2001:4860:4860::8888]:53",
    ] {
        assert!(lines.contains(&want), "`{want}` not logged:\n{log}");
    }
    let drops = lines.iter().filter(|l| l.contains("[Drop] ")).count();
    assert_eq!(drops, 2);

    // The packets: every IP packet of the trace leaves by exactly one of
    // the two dumps, unchanged (Ethernet header restored).
    let clean = pcap_frames(&out);
    let alerted = pcap_frames(&alerts);
    assert_eq!((clean.len(), alerted.len()), (120, 59));
    let input = pcap_frames(&root().join("examples/ids.pcap"));
    let ip: Vec<&Vec<u8>> = input
        .iter()
        .filter(|f| f[12..14] == [8, 0] || f[12..14] == [0x86, 0xdd])
        .collect();
    assert_eq!(ip.len(), 179);
    let mut both: Vec<&Vec<u8>> = clean.iter().chain(alerted.iter()).collect();
    let mut want = ip.clone();
    both.sort();
    want.sort();
    assert_eq!(both, want, "the dumps hold the input's IP packets");
    // The IPv6 frames (166-180): the attacks, the empty pings and the sled
    // are alerted; the ordinary requests, pings, the neighbor solicitation
    // and the logged DNS query are clean.
    let v6_alerted: Vec<&Vec<u8>> = input[166..]
        .iter()
        .enumerate()
        .filter(|(i, _)| [5, 6, 7, 8, 9, 13].contains(i))
        .map(|(_, f)| f)
        .collect();
    let got6: Vec<&Vec<u8>> = alerted
        .iter()
        .filter(|f| f[12..14] == [0x86, 0xdd])
        .collect();
    assert_eq!(got6, v6_alerted);
    assert_eq!(
        clean.iter().filter(|f| f[12..14] == [0x86, 0xdd]).count(),
        9
    );
    // Alerted packets carry an attack marker; no clean one holds shellcode.
    let sled = [0x90u8; 16];
    let has = |f: &[u8], pat: &[u8]| f.windows(pat.len()).any(|w| w == pat);
    assert_eq!(alerted.iter().filter(|f| has(f, &sled)).count(), 5);
    assert_eq!(clean.iter().filter(|f| has(f, b"/bin/sh")).count(), 0);
    assert_eq!(
        clean.iter().filter(|f| has(f, b"duckdns")).count(),
        3,
        "log rules do not divert"
    );
    if let Some(text) = tcpdump(&alerts) {
        assert_eq!(text.lines().count(), 59);
    }
}
