//! examples/nat64.click between an IPv6-only and an IPv4-only namespace,
//! with real clients: `ping -6` and `curl` from the IPv6-only client reach
//! the IPv4-only server at its RFC 6052 address 64:ff9b::aca:201
//! (10.202.2.1), and UDP too; the server sees them come from the router's
//! IPv4 address (UDP from a port of the NAT's range), and the client's Neighbor Discovery and the server's ARP are answered by
//! pronto.
//!
//! ```text
//! client ns                    middle ns (pronto run)           server ns
//! c ── veth ── a       examples/nat64.click A=a B=b       b ── veth ── s
//! 2001:db8:1::1/64     router: 2001:db8:1::fe and      10.202.2.1/24
//! (no IPv4)                    10.202.2.254                (no IPv6)
//! ```
//!
//! Needs root (network namespaces), `ip`, `ping`, `curl` and `python3`;
//! without them the test says so loudly and passes. CI runs it as root with
//! the tools installed.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::netns::{mac_of, missing_prerequisite, must, Routed};

#[test]
fn ipv6_only_client_reaches_ipv4_only_server_through_nat64() {
    if let Some(why) = missing_prerequisite("64", &["ping", "curl", "python3"]) {
        eprintln!("SKIPPED NAT64 test: {why}. CI runs it as root.");
        return;
    }
    let pid = std::process::id();
    let mut t = Routed {
        ns: [
            format!("pronto{pid}64c"),
            format!("pronto{pid}64m"),
            format!("pronto{pid}64s"),
        ],
        children: Vec::new(),
    };
    for n in &t.ns {
        must(&["ip", "netns", "add", n]);
    }
    let (c, m, s) = (t.ns[0].clone(), t.ns[1].clone(), t.ns[2].clone());
    let (a, b) = (format!("pa{pid}64"), format!("pb{pid}64"));
    for (here, there, far) in [(&a, "c", &c), (&b, "s", &s)] {
        must(&[
            "ip", "-n", &m, "link", "add", here, "type", "veth", "peer", "name", there, "netns",
            far,
        ]);
        // The middle's kernel stays out of the way: no IPv6 of its own, no
        // IPv4 address.
        must(&[
            "ip",
            "netns",
            "exec",
            &m,
            "sysctl",
            "-qw",
            &format!("net.ipv6.conf.{here}.disable_ipv6=1"),
        ]);
        must(&["ip", "-n", &m, "link", "set", here, "up"]);
        must(&["ip", "-n", far, "link", "set", there, "up"]);
        must(&["ip", "-n", far, "link", "set", "lo", "up"]);
    }
    // The client speaks only IPv6 and routes the NAT64 prefix through the
    // router; the server speaks only IPv4 and has no route beyond its link.
    must(&[
        "ip",
        "-n",
        &c,
        "-6",
        "addr",
        "add",
        "2001:db8:1::1/64",
        "dev",
        "c",
        "nodad",
    ]);
    must(&[
        "ip",
        "-n",
        &c,
        "-6",
        "route",
        "add",
        "64:ff9b::/96",
        "via",
        "2001:db8:1::fe",
    ]);
    must(&[
        "ip",
        "netns",
        "exec",
        &s,
        "sysctl",
        "-qw",
        "net.ipv6.conf.s.disable_ipv6=1",
    ]);
    must(&["ip", "-n", &s, "addr", "add", "10.202.2.1/24", "dev", "s"]);
    let (amac, bmac) = (mac_of(&m, &a), mac_of(&m, &b));
    let config = format!("{}/../../examples/nat64.click", env!("CARGO_MANIFEST_DIR"));
    let log_path = std::env::temp_dir().join(format!("pronto-nat64-{pid}.log"));
    let web_log_path = std::env::temp_dir().join(format!("pronto-nat64-web-{pid}.log"));
    let log = std::fs::File::create(&log_path).expect("log file");
    let router = t
        .exec(
            1,
            &[
                env!("CARGO_BIN_EXE_pronto"),
                "run",
                &config,
                &format!("A={a}"),
                &format!("B={b}"),
                &format!("AMAC={amac}"),
                &format!("BMAC={bmac}"),
            ],
        )
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("pronto runs");
    t.children.push(router);
    let pronto_said = || {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        format!("pronto's standard error:\n{text}")
    };

    // ICMPv6 echo to the server's IPv4-embedded address becomes ICMP echo
    // and back: Neighbor Discovery and ARP answered by pronto.
    let server6 = "64:ff9b::aca:201";
    let (ok, out) = t.until(20, &["ping", "-6", "-c", "1", "-W", "1", server6]);
    assert!(ok, "ping -6 never got through: {out}\n{}", pronto_said());
    let (ok, out) = t.output(0, &["ping", "-6", "-c", "3", "-i", "0.2", server6]);
    assert!(
        ok && out.contains("3 packets transmitted, 3 received")
            && out.contains(&format!("from {server6}")),
        "{out}"
    );
    // The client learned the router's MAC through pronto's advertisement.
    let (_, neigh) = t.output(0, &["ip", "-6", "neigh", "show", "2001:db8:1::fe"]);
    assert!(neigh.contains(&amac), "{neigh}");

    // TCP: a web page from the IPv4-only server, which sees the request
    // come from the router's IPv4 address.
    let web_log = std::fs::File::create(&web_log_path).expect("web log file");
    t.spawn(
        2,
        &[
            "python3",
            "-m",
            "http.server",
            "8080",
            "--bind",
            "10.202.2.1",
        ],
        web_log,
    );
    std::thread::sleep(Duration::from_millis(500));
    let (ok, out) = t.until(
        10,
        &[
            "curl",
            "-sS",
            "-g",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("http://[{server6}]:8080/"),
        ],
    );
    assert!(
        ok && out.trim() == "200",
        "curl through NAT64: {out}\n{}",
        pronto_said()
    );
    let (_, neigh) = t.output(2, &["ip", "neigh", "show", "10.202.2.254"]);
    assert!(neigh.contains(&bmac), "{neigh}");

    // UDP: the server answers each datagram with the address and port it
    // came from, which the NAT took from the router's address and PORTS.
    let udp_log = std::fs::File::create(web_log_path.with_extension("udp")).expect("udp log");
    t.spawn(
        2,
        &[
            "python3",
            "-c",
            "import socket\n\
             s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             s.bind(('10.202.2.1', 9999))\n\
             while True:\n    d, a = s.recvfrom(100)\n    s.sendto(('%s %d' % a).encode(), a)\n",
        ],
        udp_log,
    );
    std::thread::sleep(Duration::from_millis(300));
    let (ok, out) = t.until(
        10,
        &[
            "python3",
            "-c",
            "import socket\n\
             s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)\n\
             s.settimeout(1)\n\
             s.sendto(b'who', ('64:ff9b::aca:201', 9999))\n\
             print(s.recvfrom(100)[0].decode())\n",
        ],
    );
    assert!(ok, "UDP through NAT64: {out}\n{}", pronto_said());
    let seen: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(seen.len(), 2, "{out}");
    assert_eq!(seen[0], "10.202.2.254", "{out}");
    let port: u16 = seen[1].parse().expect("a port");
    assert!((20000..=29999).contains(&port), "{out}");
    drop(t);
    let web = std::fs::read_to_string(&web_log_path).unwrap_or_default();
    assert!(
        web.lines()
            .any(|l| l.starts_with("10.202.2.254 - - ") && l.contains("\"GET / HTTP/1.1\" 200")),
        "the server's log: {web}"
    );
    let _ = std::fs::remove_file(&log_path);
    let _ = std::fs::remove_file(&web_log_path);
    let _ = std::fs::remove_file(web_log_path.with_extension("udp"));
}
