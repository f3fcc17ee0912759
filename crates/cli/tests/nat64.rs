//! examples/nat64.click (stateless) and examples/nat64-stateful.click
//! (NAT64, RFC 6146) between an IPv6-only and an IPv4-only namespace, with
//! real clients: `ping -6` and `curl` from the IPv6-only client reach
//! the IPv4-only server at its RFC 6052 address 64:ff9b::aca:201
//! (10.202.2.1), and UDP too; the server sees them come from the router's
//! IPv4 address (UDP from a port of the NAT's range), and the client's Neighbor Discovery and the server's ARP are answered by
//! pronto.
//!
//! ```text
//! client ns                    middle ns (pronto run)           server ns
//! c ── veth ── a    examples/nat64[-stateful].click    b ── veth ── s
//! 2001:db8:1::1/64     router: 2001:db8:1::fe and      10.202.2.1/24
//! (no IPv4)                    10.202.2.254                (no IPv6)
//! ```
//!
//! Needs root (network namespaces), `ip`, `ping`, `curl` and `python3`;
//! without them the test says so loudly and passes. CI runs it as root with
//! the tools installed.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use common::netns::{mac_of, missing_prerequisite, must, Routed};

#[test]
fn ipv6_only_client_reaches_ipv4_only_server_through_nat64() {
    exercise("nat64", "64", |_, _| {});
}

/// The stateful NAT64: the same clients, then its handlers say what RFC
/// 6146 state the run left: a BIB entry per protocol for the client, the
/// UDP session with the port the server saw, the TCP session closed by
/// FINs both ways, nothing refused.
#[test]
fn ipv6_only_client_reaches_ipv4_only_server_through_stateful_nat64() {
    exercise("nat64-stateful", "s64", |ctl, udp_port| {
        let bindings = read_handler(ctl, "nat.bindings");
        for proto in ["icmp", "tcp", "udp"] {
            assert!(
                bindings
                    .lines()
                    .any(|l| l.starts_with(&format!("{proto} [2001:db8:1::1]:"))
                        && l.contains(" 10.202.2.254:")),
                "no {proto} binding: {bindings}"
            );
        }
        let sessions = read_handler(ctl, "nat.sessions");
        let udp = sessions
            .lines()
            .find(|l| l.starts_with("udp ") && l.contains(" [64:ff9b::aca:201]:9999 "))
            .unwrap_or_else(|| panic!("no UDP session: {sessions}"));
        assert!(
            udp.contains(&format!(" 10.202.2.254:{udp_port} 10.202.2.1:9999 active ")),
            "{udp}"
        );
        // curl's connection (earlier tries, before ARP and ND settled,
        // may have left SYNs without an answer in v6_init).
        assert!(
            sessions.lines().any(|l| l.starts_with("tcp ")
                && l.contains(" [64:ff9b::aca:201]:8080 10.202.2.254:")
                && l.contains(" 10.202.2.1:8080 v4_v6_fin_rcv expires=+")),
            "no closed TCP session: {sessions}"
        );
        let n: usize = read_handler(ctl, "nat.nsessions").parse().expect("a count");
        assert_eq!(n, sessions.lines().count(), "{sessions}");
        assert!(n >= 3, "{sessions}");
        assert_eq!(
            read_handler(ctl, "nat.drops"),
            "0",
            "{}",
            read_handler(ctl, "nat.drop_details")
        );
        assert!(
            read_handler(ctl, "nat.outbound")
                .parse::<u64>()
                .expect("count")
                >= 8
        );
    });
}

/// One handler's value through the router's ControlSocket (Click's line
/// protocol: `READ`, a status line, `DATA n`, n bytes).
fn read_handler(sock: &Path, name: &str) -> String {
    let s = UnixStream::connect(sock).expect("control socket");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).expect("greeting");
    assert!(line.starts_with("Click::ControlSocket/"), "{line}");
    r.get_mut()
        .write_all(format!("READ {name}\r\n").as_bytes())
        .expect("send");
    line.clear();
    r.read_line(&mut line).expect("status");
    assert!(line.starts_with("200 "), "READ {name}: {line}");
    line.clear();
    r.read_line(&mut line).expect("DATA line");
    let n: usize = line
        .trim()
        .strip_prefix("DATA ")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("READ {name}: {line}"));
    let mut data = vec![0u8; n];
    r.read_exact(&mut data).expect("data");
    String::from_utf8(data)
        .expect("text")
        .trim_end()
        .to_string()
}

/// Runs `examples/EXAMPLE.click` (with a ControlSocket added) between the
/// namespaces, checks ping -6, curl and UDP through it, then calls
/// `check` with the control socket and the UDP port the server saw,
/// while the router still runs.
fn exercise(example: &str, tag: &str, check: impl FnOnce(&Path, u16)) {
    if let Some(why) = missing_prerequisite(tag, &["ping", "curl", "python3"]) {
        eprintln!("SKIPPED NAT64 test ({example}): {why}. CI runs it as root.");
        return;
    }
    let pid = std::process::id();
    let (mut t, a, b) = Routed::new(tag);
    let (c, m, s) = (t.ns[0].clone(), t.ns[1].clone(), t.ns[2].clone());
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
    let text = std::fs::read_to_string(format!(
        "{}/../../examples/{example}.click",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("the example");
    let tmp = std::env::temp_dir();
    let ctl = tmp.join(format!("pronto-{example}-{pid}.ctl"));
    let config = tmp.join(format!("pronto-{example}-{pid}.click"));
    std::fs::write(
        &config,
        format!("{text}\nControlSocket(UNIX, {});\n", ctl.display()),
    )
    .expect("config");
    let config = config.display().to_string();
    let log_path = tmp.join(format!("pronto-{example}-{pid}.log"));
    let web_log_path = tmp.join(format!("pronto-{example}-web-{pid}.log"));
    let pronto_said = t.spawn_pronto(
        1,
        &[
            &config,
            &format!("A={a}"),
            &format!("B={b}"),
            &format!("AMAC={amac}"),
            &format!("BMAC={bmac}"),
        ],
        &log_path,
    );

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
    check(&ctl, port);
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
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_file(&ctl);
}
