//! `examples/wireguard.click` against a WireGuard peer nobody here wrote:
//! `wireguard-go` (Debian's package) configured with `wg` in a client
//! namespace, pronto terminating the tunnel in the middle namespace, a
//! plain server behind it. `ping` must get exactly its replies through the
//! tunnel, `iperf3` TCP must run for six seconds, and a `rekey` written to
//! the gateway through its ControlSocket two seconds in must complete a
//! second handshake while every second of the transfer still moves data.
//!
//! ```text
//! client ns (wireguard-go 10.99.0.2)     middle ns (pronto)   server ns
//! c 10.202.1.1 ─── veth ─── out 10.202.1.254   in 10.202.2.254 ─── veth ─── s 10.202.2.1
//! ```
//!
//! Needs root (namespaces), `ip`, `ping`, `iperf3`, `ethtool`, `wg` and
//! `wireguard-go` (scripts/install-test-tools installs them); without them
//! the test prints `SKIPPED ...` and passes.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::netns::{mac_of, missing_prerequisite, must, Routed};

struct Ctl(BufReader<UnixStream>);

impl Ctl {
    fn connect(path: &Path) -> Ctl {
        let t0 = Instant::now();
        loop {
            if let Ok(s) = UnixStream::connect(path) {
                let mut c = Ctl(BufReader::new(s));
                assert_eq!(c.line(), "Click::ControlSocket/1.3\r\n");
                return c;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "no control socket");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.0.read_line(&mut l).expect("a reply line");
        l
    }

    fn write(&mut self, h: &str) -> String {
        self.0
            .get_mut()
            .write_all(format!("WRITE {h}\r\n").as_bytes())
            .expect("send");
        self.line()
    }

    fn read(&mut self, h: &str) -> String {
        self.0
            .get_mut()
            .write_all(format!("READ {h}\r\n").as_bytes())
            .expect("send");
        let r = self.line();
        assert!(r.starts_with("200 "), "READ {h}: {r}");
        let d = self.line();
        let n: usize = d
            .trim_end()
            .strip_prefix("DATA ")
            .expect("DATA line")
            .parse()
            .expect("length");
        let mut b = vec![0u8; n];
        self.0.read_exact(&mut b).expect("data");
        String::from_utf8(b).expect("text")
    }

    /// One counter of `wg.stats`.
    fn stat(&mut self, name: &str) -> u64 {
        let s = self.read("wg.stats");
        s.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no `{name}` in wg.stats:\n{s}"))
    }
}

fn wg_key(args: &[&str], input: &str) -> String {
    let mut c = Command::new("wg")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("wg runs");
    c.stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("to wg");
    let o = c.wait_with_output().expect("wg ends");
    assert!(o.status.success(), "wg {args:?} failed");
    String::from_utf8(o.stdout)
        .expect("text")
        .trim()
        .to_string()
}

#[test]
fn wireguard_go_peer_pings_and_iperf3_through_pronto_with_a_rekey() {
    if let Some(why) =
        missing_prerequisite("wg", &["ping", "iperf3", "ethtool", "wg", "wireguard-go"])
    {
        eprintln!("SKIPPED wireguard interoperability test: {why}");
        return;
    }
    let scratch = common::scratch("wireguard");
    let dir: &Path = &scratch;
    let (mut t, out_if, in_if) = Routed::new("wg");
    let (c, m, s) = (t.ns[0].clone(), t.ns[1].clone(), t.ns[2].clone());

    // Keys, made by `wg` itself.
    let gw_priv = wg_key(&["genkey"], "");
    let gw_pub = wg_key(&["pubkey"], &gw_priv);
    let cl_priv = wg_key(&["genkey"], "");
    let cl_pub = wg_key(&["pubkey"], &cl_priv);
    let keys = dir.join("gw.conf");
    std::fs::write(
        &keys,
        format!(
            "[Interface]\nPrivateKey = {gw_priv}\nListenPort = 51820\n\n\
             [Peer]\nPublicKey = {cl_pub}\nAllowedIPs = 10.99.0.2/32\n"
        ),
    )
    .expect("key file");
    let cl_key = dir.join("client.key");
    std::fs::write(&cl_key, &cl_priv).expect("client key");

    // Outer and plain addressing; checksums filled in by the senders'
    // kernels (pronto forwards what it is given), the plain side's MTU
    // the tunnel's.
    must(&["ip", "-n", &c, "addr", "add", "10.202.1.1/24", "dev", "c"]);
    must(&["ip", "-n", &s, "addr", "add", "10.202.2.1/24", "dev", "s"]);
    must(&["ip", "-n", &s, "link", "set", "s", "mtu", "1420"]);
    must(&[
        "ip",
        "-n",
        &s,
        "route",
        "add",
        "10.99.0.0/24",
        "via",
        "10.202.2.254",
    ]);
    for (ns, dev) in [(&c, "c"), (&s, "s")] {
        must(&["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off"]);
    }

    // pronto, terminating the tunnel.
    let (omac, imac) = (mac_of(&m, &out_if), mac_of(&m, &in_if));
    let ctl_path = dir.join("ctl.sock");
    let log_path = dir.join("pronto.log");
    let config = format!(
        "{}/../../examples/wireguard.click",
        env!("CARGO_MANIFEST_DIR")
    );
    let said = t.spawn_pronto(
        1,
        &[
            &config,
            &format!("OUT={out_if}"),
            &format!("IN={in_if}"),
            &format!("OUTMAC={omac}"),
            &format!("INMAC={imac}"),
            &format!("KEYS={}", keys.display()),
            &format!("CTL={}", ctl_path.display()),
        ],
        &log_path,
    );
    let mut ctl = Ctl::connect(&ctl_path);
    assert_eq!(ctl.read("wg.public_key"), gw_pub, "{}", said());

    // The real peer: wireguard-go, configured by `wg`. Its control socket
    // (/var/run/wireguard/NAME.sock) is not per namespace: the name is
    // this test's own.
    let wg0 = format!("wgt{}", std::process::id());
    let wg0 = wg0.as_str();
    // Killed with the namespaces, wireguard-go leaves its socket behind.
    let _sock = RemoveOnDrop(format!("/var/run/wireguard/{wg0}.sock").into());
    t.spawn(
        0,
        &["wireguard-go", "-f", wg0],
        std::fs::File::create(dir.join("wireguard-go.log")).expect("log"),
    );
    let t0 = Instant::now();
    while !t.output(0, &["ip", "link", "show", wg0]).0 {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "wireguard-go made no interface"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    must(&[
        "ip",
        "netns",
        "exec",
        &c,
        "wg",
        "set",
        wg0,
        "private-key",
        cl_key.to_str().expect("utf-8 path"),
        "peer",
        &gw_pub,
        "endpoint",
        "10.202.1.254:51820",
        "allowed-ips",
        "10.202.2.0/24",
    ]);
    must(&["ip", "-n", &c, "addr", "add", "10.99.0.2/32", "dev", wg0]);
    must(&["ip", "-n", &c, "link", "set", wg0, "up"]);
    must(&["ip", "-n", &c, "route", "add", "10.202.2.0/24", "dev", wg0]);

    // Ping: the first may wait for the handshake; then exactly 5 of 5.
    let (ok, out) = t.until(15, &["ping", "-c", "1", "-W", "1", "10.202.2.1"]);
    assert!(ok, "no ping through the tunnel: {out}\n{}", said());
    let (ok, out) = t.output(
        0,
        &["ping", "-c", "5", "-i", "0.2", "-W", "2", "10.202.2.1"],
    );
    assert!(
        ok && out.contains("5 packets transmitted, 5 received"),
        "{out}\n{}",
        said()
    );
    assert_eq!(ctl.read("wg.handshakes"), "1");
    let peers = ctl.read("wg.peers");
    assert!(
        peers.starts_with(&format!("{cl_pub} endpoint=10.202.1.1:")),
        "the peer's endpoint is where it was heard from: {peers}"
    );
    assert_eq!(ctl.stat("decrypt_failed"), 0);
    assert_eq!(ctl.stat("bad_source"), 0);

    // iperf3 TCP for 6 s with a rekey 2 s in.
    t.spawn(2, &["iperf3", "-s", "-1"], Stdio::null());
    std::thread::sleep(Duration::from_millis(500));
    let client = t
        .exec(
            0,
            &["iperf3", "-c", "10.202.2.1", "-t", "6", "-i", "1", "-J"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iperf3 client");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(ctl.write("wg.rekey"), "200 Write handler 'wg.rekey' OK\r\n");
    let o = client.wait_with_output().expect("iperf3 ends");
    let report = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "iperf3 failed: {report}\n{}", said());
    // Every one-second interval moved data, the rekey's included.
    let intervals: Vec<u64> = report
        .split("\"sum\":")
        .skip(1)
        .filter_map(|s| {
            let b = s.split("\"bytes\":").nth(1)?;
            b.split([',', '}'])
                .next()?
                .trim()
                .parse::<f64>()
                .ok()
                .map(|v| v as u64)
        })
        .collect();
    assert!(
        intervals.len() >= 6,
        "no intervals in iperf3's report: {report}"
    );
    assert!(
        intervals.iter().all(|&b| b > 0),
        "an interval moved nothing: {intervals:?}"
    );
    // The rekey's handshake: on a loaded machine its initiation may have
    // been lost and sent again (every 5 s), so it may complete late.
    let t0 = Instant::now();
    while ctl.read("wg.handshakes") == "1" && t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(ctl.read("wg.handshakes"), "2", "{}", said());
    assert_eq!(ctl.stat("decrypt_failed"), 0);
    assert_eq!(ctl.stat("replay"), 0);
    assert_eq!(ctl.stat("bad_source"), 0);
    let (_, wg_show) = t.output(0, &["wg", "show", wg0, "transfer"]);
    eprintln!("wireguard test: wg show {wg0} transfer: {wg_show}");
    drop(ctl);
    drop(t);
}

/// A file removed when the test ends, however it ends.
struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
