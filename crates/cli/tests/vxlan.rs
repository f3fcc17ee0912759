//! Interoperability of the daemon's VXLAN uplink with Linux's own VXLAN
//! device: a daemon with `--vxlan` in the host's namespace, a sandboxed
//! instance on its switch that answers ARP and ping, and in a peer
//! namespace a Linux `vxlan` device (VNI 42) whose remote is the daemon.
//! `ping` from the Linux side through vx0 reaches the instance, and
//! tcpdump on the underlay veth shows every frame both ways encapsulated
//! as RFC 7348 says (I flag, VNI 42, UDP port 4789), the inner frame
//! byte-exact what vx0 sent or received.
//!
//! ```text
//! host ns: pronto daemon --vxlan 10.213.42.1,vni=42        peer ns
//! instance v/eth0 ─ switch ─ vxlan/42 ─ UDP ─ pv ── veth ── u ─ vx0 (id 42)
//! 192.168.213.1                           10.213.42.1   10.213.42.2  192.168.213.2
//! ```
//!
//! Needs root, `ip`, `ping`, `tcpdump` and `python3`; without them the test says so
//! loudly and passes. CI runs it as root.

mod common;

use std::process::{Child, Command, Stdio};

use common::netns::{missing_prerequisite, must, sh};

const INST_MAC: &str = "02:00:00:00:2a:01";
const VX_MAC: &str = "02:00:00:00:2a:02";

/// A tcpdump writing `file`, stopped (and its file complete) by `stop`.
struct Dump(Child);

impl Dump {
    fn start(ns: Option<&str>, dev: &str, filter: &[&str], file: &std::path::Path) -> Dump {
        let mut c = match ns {
            Some(n) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", n, "tcpdump"]);
                c
            }
            None => Command::new("tcpdump"),
        };
        let child = c
            .args(["-i", dev, "-U", "-n", "-s", "0", "-w"])
            .arg(file)
            .args(filter)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump");
        Dump(child)
    }

    fn stop(mut self) {
        let pid = rustix::process::Pid::from_raw(self.0.id() as i32).expect("pid");
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
        let _ = self.0.wait();
    }
}

impl Drop for Dump {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The peer namespace and the host's veth end, removed when dropped.
struct Peer {
    ns: String,
    veth: String,
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = sh(&["ip", "link", "del", &self.veth]);
        let _ = sh(&["ip", "netns", "del", &self.ns]);
    }
}

fn counter(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in:\n{text}"))
}

#[test]
fn linux_vxlan_device_pings_an_instance_through_the_vxlan_uplink() {
    if let Some(why) = missing_prerequisite("x", &["ping", "tcpdump", "python3"]) {
        eprintln!("SKIPPED vxlan interop test: {why}. CI runs it as root.");
        return;
    }
    if String::from_utf8_lossy(&sh(&["ip", "-o", "addr"]).stdout).contains(" 10.213.42.") {
        eprintln!("SKIPPED vxlan interop test: 10.213.42.0/24 is already in use on this host");
        return;
    }
    let pid = std::process::id();
    let p = Peer {
        ns: format!("pronto{pid}x"),
        veth: format!("pv{pid}"),
    };
    let ns = p.ns.as_str();
    must(&["ip", "netns", "add", ns]);
    must(&[
        "ip", "link", "add", &p.veth, "type", "veth", "peer", "name", "u", "netns", ns,
    ]);
    must(&["ip", "addr", "add", "10.213.42.1/24", "dev", &p.veth]);
    must(&["ip", "link", "set", &p.veth, "up"]);
    must(&["ip", "-n", ns, "addr", "add", "10.213.42.2/24", "dev", "u"]);
    must(&["ip", "-n", ns, "link", "set", "u", "up"]);
    must(&["ip", "-n", ns, "link", "set", "lo", "up"]);
    must(&[
        "ip",
        "-n",
        ns,
        "link",
        "add",
        "vx0",
        "type",
        "vxlan",
        "id",
        "42",
        "dstport",
        "4789",
        "local",
        "10.213.42.2",
        "remote",
        "10.213.42.1",
        "dev",
        "u",
    ]);
    must(&["ip", "-n", ns, "link", "set", "vx0", "address", VX_MAC]);
    // No IPv6 on vx0: only the frames ping makes cross it.
    must(&[
        "ip",
        "netns",
        "exec",
        ns,
        "sysctl",
        "-qw",
        "net.ipv6.conf.vx0.disable_ipv6=1",
    ]);
    must(&[
        "ip",
        "-n",
        ns,
        "addr",
        "add",
        "192.168.213.2/24",
        "dev",
        "vx0",
    ]);
    must(&["ip", "-n", ns, "link", "set", "vx0", "up"]);

    let dir = common::scratch("vxlan");
    // Errors name the option and what is wrong.
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["daemon", "--listen", "none", "--warm", "0", "--socket"])
        .arg(dir.join("sock"))
        .arg("--state")
        .arg(dir.join("state"))
        .args([
            "--vxlan",
            "10.213.42.1,vni=42",
            "--vxlan-remote",
            "nomac,1.2.3.4",
        ])
        .output()
        .expect("pronto daemon");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "prontod: --vxlan-remote: expected MAC,VTEP[,IP...]: `nomac` is not a MAC address\n"
    );

    let d = common::start_daemon_with(
        &dir,
        &[
            "--warm",
            "0",
            "--vxlan",
            "10.213.42.1,vni=42",
            "--vxlan-remote",
            &format!("{VX_MAC},10.213.42.2"),
            "--vxlan-strict",
        ],
    );
    let config = "FromDevice(eth0) -> c :: Classifier(12/0806 20/0001, 12/0800, -);
         td :: ToDevice(eth0);
         c[0] -> ARPResponder(192.168.213.1 02:00:00:00:2a:01) -> td;
         c[1] -> Strip(14) -> CheckIPHeader
           -> ipc :: IPClassifier(dst host 192.168.213.1 and icmp type echo, -);
         ipc[0] -> ICMPPingResponder -> Unstrip(14) -> EtherMirror -> td;
         ipc[1] -> Discard;
         c[2] -> Discard;";
    let path = dir.join("v.click");
    std::fs::write(&path, config).expect("config");
    let (made, out, err) = common::ctl(
        &dir,
        &[
            "create",
            "v",
            "--config",
            path.to_str().expect("path"),
            "--iface",
            &format!("eth0={INST_MAC}"),
        ],
    );
    assert!(made, "create: {out}{err}");

    let under = dir.join("underlay.pcap");
    let inner = dir.join("vx0.pcap");
    let d_under = Dump::start(None, &p.veth, &["udp", "port", "4789"], &under);
    let d_inner = Dump::start(Some(ns), "vx0", &[], &inner);
    // tcpdump needs a moment to open its socket; nothing is sent before
    // both say they listen.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let o = Command::new("ip")
        .args([
            "netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", "-W", "2",
        ])
        .arg("192.168.213.1")
        .output()
        .expect("ping");
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    std::thread::sleep(std::time::Duration::from_millis(500));
    d_under.stop();
    d_inner.stop();
    assert!(
        said.contains("3 packets transmitted, 3 received"),
        "{said}{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // Every frame vx0 sent or received is on the underlay, in order,
    // inside one VXLAN datagram: Ethernet, IPv4, UDP to or from 4789, the
    // header with only the I flag and VNI 42, then the frame byte-exact.
    let vx = common::pcap_frames(&inner);
    let udp = common::pcap_frames(&under);
    assert!(vx.len() >= 8, "ARP both ways and three pings: {vx:02x?}");
    assert_eq!(vx.len(), udp.len(), "one datagram per frame");
    let (mut sent, mut received) = (0u64, 0u64);
    for (f, u) in vx.iter().zip(&udp) {
        assert_eq!(u[12..14], [0x08, 0x00], "IPv4 underlay");
        let ihl = usize::from(u[14] & 0x0f) * 4;
        assert_eq!(u[14 + 9], 17, "UDP");
        let ip = |o: usize| u[14 + o..14 + o + 4].to_vec();
        let (src, dst) = (ip(12), ip(16));
        let udph = &u[14 + ihl..14 + ihl + 8];
        let dport = u16::from_be_bytes([udph[2], udph[3]]);
        assert_eq!(dport, 4789);
        let payload = &u[14 + ihl + 8..];
        assert_eq!(payload[..8], [0x08, 0, 0, 0, 0, 0, 42, 0], "VXLAN header");
        assert_eq!(&payload[8..], &f[..], "inner frame byte-exact");
        if src == [10, 213, 42, 2] {
            assert_eq!(dst, [10, 213, 42, 1]);
            assert_eq!(f[6..12], [2, 0, 0, 0, 0x2a, 2], "from vx0");
            sent += 1;
        } else {
            assert_eq!(
                (src.as_slice(), dst.as_slice()),
                (&[10, 213, 42, 1][..], &[10, 213, 42, 2][..])
            );
            assert_eq!(
                f[..12],
                [2, 0, 0, 0, 0x2a, 2, 2, 0, 0, 0, 0x2a, 1],
                "to vx0, from the instance"
            );
            received += 1;
        }
    }
    // The echo replies are the requests turned around by the instance.
    let echo = |f: &Vec<u8>, t: u8| f.len() > 34 && f[12..14] == [8, 0] && f[23] == 1 && f[34] == t;
    let reqs: Vec<_> = vx.iter().filter(|f| echo(f, 8)).collect();
    let reps: Vec<_> = vx.iter().filter(|f| echo(f, 0)).collect();
    assert_eq!((reqs.len(), reps.len()), (3, 3));
    for (q, r) in reqs.iter().zip(&reps) {
        assert_eq!(q.len(), r.len());
        assert_eq!(q[26..30], r[30..34], "addresses swapped");
        assert_eq!(q[30..34], r[26..30], "addresses swapped");
        assert_eq!(q[38..], r[38..], "identifier, sequence and data kept");
    }

    // The port and its counters: every frame counted once, nothing dropped.
    let (listed, ports, err) = common::ctl(&dir, &["ports"]);
    assert!(listed, "{err}");
    assert!(ports.contains("vxlan/42"), "{ports}");
    let metrics = Command::new("curl")
        .args(["-s", "--unix-socket"])
        .arg(dir.join("sock"))
        .arg("http://localhost/metrics")
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&metrics.stdout).into_owned();
    assert_eq!(
        counter(
            &text,
            "pronto_vxlan_frames_total{vxlan=\"42\",direction=\"to_switch\"} "
        ),
        sent
    );
    assert_eq!(
        counter(
            &text,
            "pronto_vxlan_frames_total{vxlan=\"42\",direction=\"to_vteps\"} "
        ),
        received
    );
    assert_eq!(
        counter(&text, "pronto_vxlan_flooded_total{vxlan=\"42\"} "),
        0
    );
    for why in [
        "bad_header",
        "bad_length",
        "wrong_vni",
        "unknown_vtep",
        "no_remote",
        "switch_port_full",
        "socket_refused",
    ] {
        let key = format!("pronto_vxlan_dropped_total{{vxlan=\"42\",reason=\"{why}\"}} ");
        assert_eq!(counter(&text, &key), 0, "{why}");
    }

    // The API shows the table and the same counters.
    let api = Command::new("curl")
        .args(["-s", "--unix-socket"])
        .arg(dir.join("sock"))
        .arg("http://localhost/v1/switch/vxlan")
        .output()
        .expect("curl");
    let v: serde_json::Value = serde_json::from_slice(&api.stdout).expect("JSON");
    assert_eq!(v["vni"], 42);
    assert_eq!(v["local"], "10.213.42.1:4789");
    assert_eq!(
        v["remotes"],
        serde_json::json!([{"mac": VX_MAC, "vtep": "10.213.42.2:4789", "ips": [],
                            "origin": "operator"}])
    );
    assert_eq!(v["flood"], serde_json::json!([]));
    assert_eq!(v["strict"], true);
    assert_eq!(v["to_switch"], sent);
    assert_eq!(v["to_vteps"], received);

    // A datagram from a VTEP the table does not know is dropped and
    // counted (`--vxlan-strict`).
    let sock = std::net::UdpSocket::bind("10.213.42.1:0").expect("udp");
    let mut d42 = vec![0x08, 0, 0, 0, 0, 0, 43, 0];
    d42.extend_from_slice(&reqs[0][..]);
    sock.send_to(&d42, "10.213.42.1:4789").expect("send");
    let wait = |key: &str, want: u64| {
        let t0 = std::time::Instant::now();
        loop {
            let m = Command::new("curl")
                .args(["-s", "--unix-socket"])
                .arg(dir.join("sock"))
                .arg("http://localhost/metrics")
                .output()
                .expect("curl");
            let text = String::from_utf8_lossy(&m.stdout).into_owned();
            if counter(&text, key) == want || t0.elapsed().as_secs() > 5 {
                assert_eq!(counter(&text, key), want, "{key}");
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    wait(
        "pronto_vxlan_dropped_total{vxlan=\"42\",reason=\"unknown_vtep\"} ",
        1,
    );
    // Hostile datagrams from the known VTEP: each dropped and counted by
    // reason, none reaching the switch.
    let frame = "ffffffffffff020000002a020800";
    let sent_bad = [
        format!("0800000000002b00{frame}"),          // VNI 43
        format!("0000000000002a00{frame}"),          // no I flag
        format!("0800000000002a00{}", &frame[..26]), // 13-byte inner frame
        "08000000000000".to_string(),                // 7 bytes
    ];
    let mut py = Command::new("ip");
    py.args(["netns", "exec", ns, "python3", "-c"]).arg(
        "import socket, sys\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         s.bind(('10.213.42.2', 0))\n\
         for h in sys.argv[1:]: s.sendto(bytes.fromhex(h), ('10.213.42.1', 4789))\n",
    );
    let o = py.args(&sent_bad).output().expect("python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (why, n) in [("wrong_vni", 1), ("bad_header", 2), ("bad_length", 1)] {
        wait(
            &format!("pronto_vxlan_dropped_total{{vxlan=\"42\",reason=\"{why}\"}} "),
            n,
        );
    }
    wait(
        "pronto_vxlan_frames_total{vxlan=\"42\",direction=\"to_switch\"} ",
        sent,
    );
    assert!(d.term().success(), "the daemon did not shut down cleanly");
    drop(p);
    let _ = std::fs::remove_dir_all(&dir);
}
