//! examples/ids.click: the IDSMatcher sensor over its bundled trace gives
//! exactly the alert counts scripts/make_ids_trace.py predicts, logs them in
//! fast.log form and splits the packets between the clean and alert dumps.

mod common;

use common::{pcap_frames, root, run_example, scratch, tcpdump};

/// Expected hits per sid, as scripts/make_ids_trace.py prints them (the
/// pass rule 1000900 hits the internal scanner's two probes).
const HITS: &[(u32, usize)] = &[
    (1000900, 2),
    (1000101, 4),
    (1000102, 3),
    (1000103, 3),
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
    (1000204, 1),
    (1000205, 1),
    (1000301, 5),
    (1000302, 3),
    (1000303, 2),
    (1000304, 2),
    (1000305, 3),
    (1000306, 1),
    (1000307, 1),
    (1000308, 3),
    (1000401, 2),
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
        "read           166 packets",
        "not IPv4       2",
        "malformed      0",
        "rules          30 loaded, 2 skipped",
        "inspected      164",
        "alert events   58 -> ",
        "drop verdicts  2",
        "clean          111 packets -> ",
        "alerted        53 packets -> ",
    ] {
        assert!(report.contains(want), "`{want}` missing:\n{report}");
    }
    // The hits handler, in rule-file order.
    let hits: String = HITS.iter().map(|(s, n)| format!("{s} {n}\n")).collect();
    assert!(report.contains(&hits), "{report}");
    // The two unsupported rules are skipped with their place and option.
    assert!(
        stderr.contains("examples/ids.rules:55:90: rule skipped: unsupported option `flow`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("examples/ids.rules:56:71: rule skipped: unsupported option `byte_test`"),
        "{stderr}"
    );

    // One log line per alert event (pass rules log nothing).
    let log = std::fs::read_to_string(&log).expect("log written");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 58, "{log}");
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
    ] {
        assert!(lines.contains(&want), "`{want}` not logged:\n{log}");
    }
    let drops = lines.iter().filter(|l| l.contains("[Drop] ")).count();
    assert_eq!(drops, 2);

    // The packets: every IPv4 packet of the trace leaves by exactly one of
    // the two dumps, unchanged (Ethernet header restored).
    let clean = pcap_frames(&out);
    let alerted = pcap_frames(&alerts);
    assert_eq!((clean.len(), alerted.len()), (111, 53));
    let input = pcap_frames(&root().join("examples/ids.pcap"));
    let ipv4: Vec<&Vec<u8>> = input.iter().filter(|f| f[12..14] == [8, 0]).collect();
    assert_eq!(ipv4.len(), 164);
    let mut both: Vec<&Vec<u8>> = clean.iter().chain(alerted.iter()).collect();
    let mut want = ipv4.clone();
    both.sort();
    want.sort();
    assert_eq!(both, want, "the dumps hold the input's IPv4 packets");
    // Alerted packets carry an attack marker; no clean one holds shellcode.
    let sled = [0x90u8; 16];
    let has = |f: &[u8], pat: &[u8]| f.windows(pat.len()).any(|w| w == pat);
    assert_eq!(alerted.iter().filter(|f| has(f, &sled)).count(), 4);
    assert_eq!(clean.iter().filter(|f| has(f, b"/bin/sh")).count(), 0);
    assert_eq!(
        clean.iter().filter(|f| has(f, b"duckdns")).count(),
        2,
        "log rules do not divert"
    );
    if let Some(text) = tcpdump(&alerts) {
        assert_eq!(text.lines().count(), 53);
    }
}
