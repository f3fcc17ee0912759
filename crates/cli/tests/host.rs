//! `FromHost` and `ToHost`, `KernelTap` and `KernelTun` with the host's
//! real network stack: `pronto run` creates a TAP (or TUN) device, answers
//! ARP and ICMP echo for an address behind it, and the host's own `ping`
//! gets its replies; the device
//! disappears when pronto exits. A second test checks, inside a private
//! network namespace, the device settings (Ethernet address, MTU) and the
//! default route FromHost's GATEWAY adds.
//!
//! Needs root, /dev/net/tun, `ip` and `ping` (and `unshare` for the
//! second test); without them each test says so loudly and passes.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::netns::have;

/// Why TAP tests cannot run here, if they cannot.
fn missing(tools: &[&str]) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    for t in ["ip"].iter().chain(tools) {
        if !have(t) {
            return Some(format!("no `{t}` command"));
        }
    }
    None
}

fn exists(dev: &str) -> bool {
    Path::new(&format!("/sys/class/net/{dev}")).exists()
}

/// Whether interface `dev` exists and is up (`IFF_UP`).
fn is_up(dev: &str) -> bool {
    std::fs::read_to_string(format!("/sys/class/net/{dev}/flags"))
        .ok()
        .and_then(|f| u32::from_str_radix(f.trim().trim_start_matches("0x"), 16).ok())
        .is_some_and(|f| f & 1 == 1)
}

/// A `pronto run` child, killed (and its device removed, should it
/// outlive the process) when the test ends, passing or failing.
struct Pronto {
    child: Child,
    dev: String,
}

impl Drop for Pronto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if exists(&self.dev) {
            let _ = Command::new("ip")
                .args(["link", "del", "dev", &self.dev])
                .status();
        }
    }
}

/// Runs `config` (which creates device `dev` with the host address
/// `host_cidr`, answers echo requests for `target` and prints
/// `$(pings.count) $(<drops handler>)` after three), pings `target` three
/// times through `dev`, and returns what pronto printed once it stopped
/// itself; checks that the device went with pronto.
fn ping_through(dev: &str, config: &str, host_cidr: &str, target: &str) -> String {
    let child = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["run", "-e", config])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pronto runs");
    let mut pronto = Pronto {
        child,
        dev: dev.to_string(),
    };
    // The device is brought up last, after its addresses are set.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !is_up(dev) && Instant::now() < deadline {
        if let Ok(Some(st)) = pronto.child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = pronto.child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            panic!("pronto exited early ({st}): {err}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(is_up(dev), "pronto did not create {dev} or bring it up");
    let addr = Command::new("ip")
        .args(["-4", "-o", "addr", "show", "dev", dev])
        .output()
        .expect("ip addr");
    let addr = String::from_utf8_lossy(&addr.stdout).into_owned();
    assert!(addr.contains(&format!("inet {host_cidr}")), "{addr}");
    let ping = Command::new("ping")
        .args(["-n", "-c", "3", "-i", "0.2", "-W", "2", "-I", dev, target])
        .output()
        .expect("ping runs");
    let ping_out = String::from_utf8_lossy(&ping.stdout).into_owned();
    assert!(ping.status.success(), "ping failed: {ping_out}");
    assert!(
        ping_out.contains("3 packets transmitted, 3 received"),
        "{ping_out}"
    );
    // The router stops itself once it has answered three requests.
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = pronto.child.try_wait().expect("wait") {
            break st;
        }
        assert!(Instant::now() < deadline, "pronto did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    let mut err = String::new();
    if let Some(mut o) = pronto.child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut o, &mut out);
    }
    if let Some(mut e) = pronto.child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    assert!(status.success(), "pronto failed: {err}");
    // The device was not persistent: it went with the process (the
    // kernel unregisters it as the descriptor closes).
    let deadline = Instant::now() + Duration::from_secs(2);
    while exists(dev) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!exists(dev), "{dev} outlived pronto");
    format!("{out}{err}")
}

/// Whether `net` (like "10.213.0.") is free on this host.
fn net_free(net: &str) -> bool {
    let used = Command::new("ip")
        .args(["-4", "-o", "addr", "show"])
        .output()
        .expect("ip addr");
    !String::from_utf8_lossy(&used.stdout).contains(&format!("inet {net}"))
}

#[test]
fn host_pings_an_address_answered_by_pronto_through_a_tap() {
    if let Some(why) = missing(&["ping"]) {
        eprintln!("SKIPPED host ping test: {why} (it needs root and /dev/net/tun)");
        return;
    }
    let dev = format!("ptap{}", std::process::id() % 100_000);
    if !net_free("10.213.0.") {
        eprintln!("SKIPPED host ping test: 10.213.0.0/24 is already in use on this host");
        return;
    }
    // ARP queries for 10.213.0.2 get an answer; ICMP echo requests to it
    // are turned around; everything else (IPv6, ...) is dropped. The
    // script stops the router once three requests were answered.
    let config = format!(
        "FromHost({dev}, 10.213.0.1/24)
           -> c :: Classifier(12/0806 20/0001, 12/0800, -);
         th :: ToHost({dev});
         c[0] -> ARPResponder(10.213.0.2 02:00:0a:d5:00:02) -> th;
         c[1] -> Strip(14) -> CheckIPHeader
           -> ipc :: IPClassifier(dst host 10.213.0.2 and icmp type echo, -);
         ipc[0] -> pings :: Counter -> ICMPPingResponder -> Unstrip(14) -> EtherMirror -> th;
         ipc[1] -> Discard;
         c[2] -> Discard;
         Script(label l, wait 20ms, goto l $(lt $(pings.count) 3),
                print $(pings.count) $(th.drops), stop);"
    );
    // Three echo requests answered, nothing refused by the device.
    assert_eq!(
        ping_through(&dev, &config, "10.213.0.1/24", "10.213.0.2"),
        "3 0\n"
    );
}

/// KernelTun: the host routes 10.213.2.0/24 into the TUN device; pronto
/// answers the pings to 10.213.2.2 with bare IP packets (no ARP, no
/// Ethernet header), and the host's `ping` gets its replies.
#[test]
fn host_pings_an_address_answered_by_pronto_through_kerneltun() {
    if let Some(why) = missing(&["ping"]) {
        eprintln!("SKIPPED KernelTun ping test: {why} (it needs root and /dev/net/tun)");
        return;
    }
    if !net_free("10.213.2.") {
        eprintln!("SKIPPED KernelTun ping test: 10.213.2.0/24 is already in use on this host");
        return;
    }
    let dev = format!("ptun{}", std::process::id() % 100_000);
    let config = format!(
        "tun :: KernelTun(10.213.2.1/24, DEVNAME {dev})
           -> ipc :: IPClassifier(dst host 10.213.2.2 and icmp type echo, -);
         ipc[0] -> pings :: Counter -> ICMPPingResponder -> tun;
         ipc[1] -> Discard;
         Script(label l, wait 20ms, goto l $(lt $(pings.count) 3),
                print $(pings.count) $(tun.drops) $(tun.dev_name), stop);"
    );
    assert_eq!(
        ping_through(&dev, &config, "10.213.2.1/24", "10.213.2.2"),
        format!("3 0 {dev}\n")
    );
}

/// KernelTap: as FromHost/ToHost, with one element for both directions.
#[test]
fn host_pings_an_address_answered_by_pronto_through_kerneltap() {
    if let Some(why) = missing(&["ping"]) {
        eprintln!("SKIPPED KernelTap ping test: {why} (it needs root and /dev/net/tun)");
        return;
    }
    if !net_free("10.213.3.") {
        eprintln!("SKIPPED KernelTap ping test: 10.213.3.0/24 is already in use on this host");
        return;
    }
    let dev = format!("pktp{}", std::process::id() % 100_000);
    let config = format!(
        "tap :: KernelTap(10.213.3.1/24, DEVNAME {dev})
           -> c :: Classifier(12/0806 20/0001, 12/0800, -);
         c[0] -> ARPResponder(10.213.3.2 02:00:0a:d5:03:02) -> tap;
         c[1] -> Strip(14) -> CheckIPHeader
           -> ipc :: IPClassifier(dst host 10.213.3.2 and icmp type echo, -);
         ipc[0] -> pings :: Counter -> ICMPPingResponder -> Unstrip(14) -> EtherMirror -> tap;
         ipc[1] -> Discard;
         c[2] -> Discard;
         Script(label l, wait 20ms, goto l $(lt $(pings.count) 3),
                print $(pings.count) $(tap.drops), stop);"
    );
    assert_eq!(
        ping_through(&dev, &config, "10.213.3.1/24", "10.213.3.2"),
        "3 0\n"
    );
}

#[test]
fn fromhost_sets_the_device_up_and_adds_the_default_route_in_a_namespace() {
    if let Some(why) = missing(&["unshare"]) {
        eprintln!("SKIPPED FromHost GATEWAY test: {why} (it needs root and /dev/net/tun)");
        return;
    }
    let dev = format!("pgw{}", std::process::id() % 100_000);
    let config = format!(
        "FromHost({dev}, 10.213.1.1/24, GATEWAY 10.213.1.254, \
         ETHER 02:00:0a:d5:01:01, MTU 1400) -> Discard;"
    );
    // In a private network namespace (its routes are its own): start
    // pronto, wait for the route, show the device and the route, stop
    // pronto, show that the device is gone.
    let script = format!(
        "\"$PRONTO\" run -e \"$CONFIG\" & p=$!
         for i in $(seq 100); do
           ip route show default | grep -q {dev} && break; sleep 0.05
         done
         ip -o link show dev {dev}
         ip route show default
         kill $p; wait $p
         ip link show dev {dev} >/dev/null 2>&1 && echo still-there || echo gone"
    );
    let o = Command::new("unshare")
        .args(["--net", "sh", "-c", &script])
        .env("PRONTO", env!("CARGO_BIN_EXE_pronto"))
        .env("CONFIG", &config)
        .output()
        .expect("unshare runs");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() && err.contains("unshare failed") {
        eprintln!("SKIPPED FromHost GATEWAY test: cannot make a network namespace: {err}");
        return;
    }
    let mut lines = out.lines();
    let link = lines.next().unwrap_or_default();
    assert!(link.contains(&format!(": {dev}: <")), "{out}\n{err}");
    assert!(link.contains(",UP"), "{link}");
    assert!(link.contains(" mtu 1400 "), "{link}");
    assert!(link.contains("link/ether 02:00:0a:d5:01:01 "), "{link}");
    assert_eq!(
        lines.next().map(str::trim),
        Some(format!("default via 10.213.1.254 dev {dev}").as_str()),
        "{out}\n{err}"
    );
    assert_eq!(lines.next(), Some("gone"), "{out}\n{err}");
    assert!(!exists(&dev));
}
