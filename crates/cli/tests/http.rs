//! A real HTTP download through a pronto firewall between two network
//! namespaces: `curl` in the client fetches a file from Python's HTTP
//! server in the server namespace through `pronto run` in the middle,
//! which lets TCP port 8000 and ICMP through and drops everything else
//! (a second server, on port 8001, must stay unreachable).
//!
//! Needs root, `ip`, `ping`, `curl`, `python3` and `bash`; without them it
//! says so loudly and passes. CI runs it as root.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::netns::{missing_prerequisite, Topology};

/// Both directions: ARP passes; a UDP datagram to port 9 from the client
/// tells the script the test is over; IPv4 goes through the filter.
const CONFIG: &str = "\
elementclass Wall { $in, $out |
  FromDevice($in, METHOD RING, BURST 32)
    -> cls :: Classifier(12/0806, 12/0800 23/11 36/0009, 12/0800, -);
  out :: Queue(4096) -> ToDevice($out, METHOD RING, BURST 32);
  cls[0] -> out;
  cls[1] -> done :: Counter -> Discard;
  cls[2] -> CheckIPHeader(14) -> seen :: Counter
    -> IPFilter(allow tcp && port 8000, allow icmp, deny all) -> passed :: Counter -> out;
  cls[3] -> Discard;
}
w1 :: Wall($A, $B);
w2 :: Wall($B, $A);
Script(label l, wait 20ms, goto l $(eq $(w1/done.count) 0),
       print $(w1/done.count), print $(sub $(w1/seen.count) $(w1/passed.count)), stop);
";

#[test]
fn curl_downloads_through_a_pronto_firewall_and_a_closed_port_stays_closed() {
    if let Some(why) = missing_prerequisite("h", &["ping", "curl", "python3", "bash"]) {
        eprintln!("SKIPPED http test: {why}. CI runs it as root with the tools installed.");
        return;
    }
    let dir = common::scratch("http");
    // 3 MB of varied bytes: TCP segments, offloads and reordering all show.
    let blob: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(dir.join("blob"), &blob).expect("blob");
    let mut t = Topology::new("h", 203);
    let www = dir.display().to_string();
    for port in ["8000", "8001"] {
        let ip = t.server_ip.clone();
        t.spawn(
            2,
            &[
                "python3",
                "-m",
                "http.server",
                port,
                "--bind",
                &ip,
                "--directory",
                &www,
            ],
        );
    }
    let (a, b) = (t.a.clone(), t.b.clone());
    let pronto = t
        .exec(
            1,
            &[
                env!("CARGO_BIN_EXE_pronto"),
                "run",
                "-e",
                CONFIG,
                &format!("A={a}"),
                &format!("B={b}"),
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto starts");
    assert!(t.wait_ping(10), "no ping answer through pronto in 10 s");

    // The server may still be starting: retry the allowed fetch briefly.
    let url = |port: &str| format!("http://{}:{port}/blob", t.server_ip);
    let out = dir.join("got");
    let got_path = out.display().to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = String::new();
    loop {
        let o = t
            .exec(
                0,
                &[
                    "curl",
                    "-sS",
                    "--max-time",
                    "10",
                    "-o",
                    &got_path,
                    &url("8000"),
                ],
            )
            .output()
            .expect("curl runs");
        if o.status.success() {
            break;
        }
        last = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(
            Instant::now() < deadline,
            "curl through pronto failed: {last}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let got = std::fs::read(&out).expect("downloaded file");
    assert_eq!(got.len(), blob.len(), "{last}");
    assert!(got == blob, "downloaded bytes differ");

    // Port 8001 is served, but the firewall drops it: curl times out.
    let o = t
        .exec(0, &["curl", "-sS", "--max-time", "2", &url("8001")])
        .output()
        .expect("curl runs");
    assert_eq!(
        o.status.code(),
        Some(28),
        "curl to the filtered port should time out: {}",
        String::from_utf8_lossy(&o.stderr)
    );

    // Tell the script we are done; it prints what the filter dropped.
    let ip = t.server_ip.clone();
    let bye = format!("echo bye > /dev/udp/{ip}/9");
    let o = t
        .exec(0, &["bash", "-c", &bye])
        .output()
        .expect("bash runs");
    assert!(o.status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut pronto = pronto;
    loop {
        if pronto.try_wait().expect("wait").is_some() {
            break;
        }
        assert!(Instant::now() < deadline, "pronto did not stop");
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = pronto.wait_with_output().expect("pronto output");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert_eq!(lines[0], "1");
    // The client's SYNs to 8001 (1 plus retransmissions in 2 s), nothing
    // else: everything on port 8000 and ICMP passed.
    let dropped: u32 = lines[1].parse().expect("a count");
    assert!((1..=4).contains(&dropped), "dropped {dropped}");
    let _ = std::fs::remove_dir_all(&dir);
}
