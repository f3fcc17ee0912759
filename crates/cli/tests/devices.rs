//! `FromDevice`/`ToDevice` on real interfaces: a client namespace and a
//! server namespace joined through `pronto run` in a middle namespace,
//! over two veth pairs:
//!
//! ```text
//! client ns            middle ns (pronto)                  server ns
//! c ─── veth ─── a  FromDevice(a) -> Queue -> ToDevice(b)  b ─── veth ─── s
//! 10.x.0.1/24       FromDevice(b) -> Queue -> ToDevice(a)           10.x.0.2/24
//! ```
//!
//! `ping` and a 2-second `iperf3` TCP run must get through, with the
//! `SOCKET`, `RING` and `XDP` methods, and an idle pronto must not spin.
//! (With `XDP`, the client and server compute their own checksums:
//! `ethtool -K IF tx off`, since an XDP frame does not say that its
//! checksum was left to the device.)
//!
//! Needs root (network namespaces), `ip`, `ping`, `iperf3` (and `ethtool`
//! for `XDP`); without them the tests say so loudly and pass. CI runs as
//! root with the tools installed. Every namespace and interface is made
//! here, named after this process, and removed when the test ends,
//! whatever happens.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::netns::{have, missing_prerequisite, Topology};

/// CPU seconds used so far by process `pid`.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime and
    // stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

/// The receiver's throughput in an `iperf3 -J` report, bits per second.
fn received_bps(json: &str) -> Option<f64> {
    let at = json.find("\"sum_received\"")?;
    let rest = &json[at..];
    let k = rest.find("\"bits_per_second\"")?;
    let v = rest[k + "\"bits_per_second\"".len()..]
        .trim_start_matches([':', ' ', '\t', '\n'])
        .split([',', '\n', '}'])
        .next()?;
    v.trim().parse().ok()
}

fn forward_through_pronto(method: &str, tag: char, subnet: u8) {
    if let Some(why) = missing_prerequisite(&tag.to_string(), &["ping"]) {
        eprintln!("SKIPPED devices test ({method}): {why}. CI runs it as root.");
        return;
    }
    let mut t = Topology::new(&tag.to_string(), subnet);
    if method == "XDP" {
        // An XDP frame carries no note that its checksum was left to the
        // device (veth offloads it by default), so the hosts on either
        // side compute their own, as they must in front of any AF_XDP
        // middlebox.
        if !have("ethtool") {
            eprintln!("SKIPPED devices test (XDP): needs `ethtool` to turn checksum offload off");
            return;
        }
        for (which, ifname) in [(0, "c"), (2, "s")] {
            let o = t
                .exec(which, &["ethtool", "-K", ifname, "tx", "off"])
                .output()
                .expect("ethtool runs");
            assert!(
                o.status.success(),
                "ethtool -K {ifname} tx off: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
    }
    let dev = |name: &str| format!("{name}, METHOD {method}, BURST 32");
    let config = format!(
        "FromDevice({a}) -> Queue(2048) -> ToDevice({b2});\n\
         FromDevice({b}) -> Queue(2048) -> ToDevice({a2});\n",
        a = dev(&t.a),
        b = dev(&t.b),
        a2 = dev(&t.a),
        b2 = dev(&t.b),
    );
    let pronto = t
        .exec(1, &[env!("CARGO_BIN_EXE_pronto"), "run", "-e", &config])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto starts");
    let pid = pronto.id();
    t.children.push(pronto);

    // Up and forwarding: the first ping that gets an answer.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut up = false;
    while !up && Instant::now() < deadline {
        up = t
            .exec(0, &["ping", "-c", "1", "-W", "1", &t.server_ip])
            .output()
            .is_ok_and(|o| o.status.success());
    }
    if !up {
        let p = t.children.remove(0);
        let o = p.wait_with_output().map(|o| o.stderr).unwrap_or_default();
        panic!(
            "{method}: no ping answer through pronto in 5 s; pronto says: {}",
            String::from_utf8_lossy(&o)
        );
    }

    // Idle, it sleeps: well under a tenth of a core over one second.
    let before = cpu_seconds(pid);
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_seconds(pid) - before;
    assert!(
        used < 0.1,
        "{method}: idle pronto used {used:.2} s of CPU in 1 s"
    );

    let o = t
        .exec(
            0,
            &["ping", "-c", "5", "-i", "0.2", "-W", "1", &t.server_ip],
        )
        .output()
        .expect("ping runs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && text.contains("5 received"),
        "{method}: ping through pronto:\n{text}"
    );
    if let Some(rtt) = text.lines().find(|l| l.starts_with("rtt ")) {
        eprintln!("devices test: ping through pronto, METHOD {method}: {rtt}");
    }

    if !have("iperf3") {
        eprintln!("SKIPPED iperf3 part of the devices test ({method}): iperf3 is not installed");
        return;
    }
    // A persistent server (killed with the topology): a client attempt that
    // connects but fails does not use it up.
    let server = t
        .exec(2, &["iperf3", "-s"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("iperf3 server starts");
    t.children.push(server);
    let mut bps = None;
    let mut last = String::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while bps.is_none() && Instant::now() < deadline {
        let o = t
            .exec(0, &["iperf3", "-c", &t.server_ip, "-t", "2", "-J"])
            .output()
            .expect("iperf3 client runs");
        last = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        if o.status.success() {
            bps = received_bps(&last);
        }
        if bps.is_none() {
            // The server may not be listening yet, or a loaded machine
            // broke the run: try again.
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let bps = bps.unwrap_or_else(|| {
        panic!("{method}: no iperf3 report with a throughput; last attempt:\n{last}")
    });
    eprintln!(
        "devices test: iperf3 TCP through pronto, METHOD {method}: {:.2} Gbit/s",
        bps / 1e9
    );
    assert!(bps > 0.0, "{method}: no TCP throughput:\n{last}");
}

#[test]
fn veth_forwarding_with_socket_method() {
    forward_through_pronto("SOCKET", 's', 201);
}

#[test]
fn veth_forwarding_with_ring_method() {
    forward_through_pronto("RING", 'r', 202);
}

#[test]
fn veth_forwarding_with_xdp_method() {
    forward_through_pronto("XDP", 'x', 203);
}

#[test]
fn iperf3_report_is_read() {
    let json = "{\"end\": {\"sum_sent\": {\"bits_per_second\": 5.0},\n\
                \"sum_received\": {\"seconds\": 2, \"bits_per_second\": 1.5e9,\n\"x\": 1}}}";
    assert_eq!(received_bps(json), Some(1.5e9));
    assert_eq!(received_bps("{}"), None);
}

/// `FANOUT`: two `FromDevice` elements on one interface, on two threads,
/// share its frames flow by flow; together they see every frame.
#[test]
fn fanout_splits_an_interface_between_two_threads() {
    if let Some(why) = missing_prerequisite("f", &[]) {
        eprintln!("SKIPPED fanout test: {why}. CI runs it as root.");
        return;
    }
    let t = Topology::new("f", 204);
    let rx = format!(
        "FromDevice({a}, FANOUT 7, BURST 32) -> c1 :: Counter -> Discard;\n\
         FromDevice({a}, FANOUT 7, BURST 32) -> c2 :: Counter -> Discard;\n\
         Script(label l, wait 20ms, goto l $(lt $(add $(c1.count) $(c2.count)) 2000),\n\
                print $(c1.count) $(c2.count), stop);",
        a = t.a
    );
    let mut middle = t
        .exec(
            1,
            &[
                env!("CARGO_BIN_EXE_pronto"),
                "run",
                "--threads",
                "2",
                "-e",
                &rx,
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto starts");
    std::thread::sleep(Duration::from_millis(500));
    // 2,000 UDP frames over 64 flows (source ports) from the client.
    let tx = format!(
        "PacketGen(LIMIT 2000, RATE 20000, FLOWS 64, SRCIP {c}, DSTIP {s}, \
         DSTETH ff:ff:ff:ff:ff:ff, STOP true) -> ToDevice(c)",
        c = t.client_ip,
        s = t.server_ip
    );
    let o = t
        .exec(0, &[env!("CARGO_BIN_EXE_pronto"), "run", "-e", &tx])
        .output()
        .expect("generator runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let deadline = Instant::now() + Duration::from_secs(10);
    while middle.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = middle.kill();
            let o = middle.wait_with_output().expect("output");
            panic!(
                "fanout receivers did not see 2000 frames: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = middle.wait_with_output().expect("output");
    let out = String::from_utf8_lossy(&o.stdout);
    let n: Vec<u64> = out
        .split_whitespace()
        .map(|w| w.parse().expect("a count"))
        .collect();
    assert_eq!(n.len(), 2, "{out}");
    // Every frame once (a few more: the kernel's own IPv6 chatter).
    assert!((2000..=2020).contains(&(n[0] + n[1])), "{out}");
    assert!(n[0] > 0 && n[1] > 0, "both threads got flows: {out}");
}
