//! Network namespaces for tests that run real clients through pronto: a
//! client namespace and a server namespace joined through a middle
//! namespace over two veth pairs, removed (with everything started in
//! them) when dropped.
//!
//! ```text
//! client ns          middle ns (pronto)          server ns
//! c ─── veth ─── a                    b ─── veth ─── s
//! 10.N.0.1/24                                        10.N.0.2/24
//! ```

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether `tool` is on `PATH`.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a command and returns what it did (panics if it cannot start).
pub fn sh(args: &[&str]) -> Output {
    Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Runs a command that must succeed.
pub fn must(args: &[&str]) {
    let o = sh(args);
    assert!(
        o.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Why namespace tests cannot run here, if they cannot (`tag` keeps the
/// probe's name apart from other tests').
pub fn missing_prerequisite(tag: &str, tools: &[&str]) -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("not root".into());
    }
    for t in ["ip"].iter().chain(tools) {
        if !have(t) {
            return Some(format!("no `{t}` command"));
        }
    }
    let probe = format!("prontoprobe{}{tag}", std::process::id());
    let o = sh(&["ip", "netns", "add", &probe]);
    if !o.status.success() {
        return Some(format!(
            "cannot make network namespaces: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    let _ = sh(&["ip", "netns", "del", &probe]);
    None
}

/// Three namespaces and two veth pairs.
pub struct Topology {
    /// Client, middle and server namespace names.
    pub ns: [String; 3],
    /// The middle's interface towards the client.
    pub a: String,
    /// The middle's interface towards the server.
    pub b: String,
    /// The client's address.
    pub client_ip: String,
    /// The server's address.
    pub server_ip: String,
    /// Processes killed before the namespaces go.
    pub children: Vec<Child>,
}

impl Topology {
    /// Makes the namespaces and links; `subnet` picks 10.`subnet`.0.0/24.
    pub fn new(tag: &str, subnet: u8) -> Topology {
        let pid = std::process::id();
        let ns = [
            format!("pronto{pid}{tag}c"),
            format!("pronto{pid}{tag}m"),
            format!("pronto{pid}{tag}s"),
        ];
        let t = Topology {
            ns: ns.clone(),
            a: format!("pa{pid}{tag}"),
            b: format!("pb{pid}{tag}"),
            client_ip: format!("10.{subnet}.0.1"),
            server_ip: format!("10.{subnet}.0.2"),
            children: Vec::new(),
        };
        for n in &ns {
            must(&["ip", "netns", "add", n]);
        }
        let (c, m, s) = (&ns[0], &ns[1], &ns[2]);
        // Made inside the middle namespace, so the default namespace never
        // holds any of them.
        for (here, there, far) in [(&t.a, "c", c), (&t.b, "s", s)] {
            must(&[
                "ip", "-n", m, "link", "add", here, "type", "veth", "peer", "name", there, "netns",
                far,
            ]);
            must(&["ip", "-n", m, "link", "set", here, "up"]);
            must(&["ip", "-n", far, "link", "set", there, "up"]);
            must(&["ip", "-n", far, "link", "set", "lo", "up"]);
        }
        let cidr = |ip: &str| format!("{ip}/24");
        must(&[
            "ip",
            "-n",
            c,
            "addr",
            "add",
            &cidr(&t.client_ip),
            "dev",
            "c",
        ]);
        must(&[
            "ip",
            "-n",
            s,
            "addr",
            "add",
            &cidr(&t.server_ip),
            "dev",
            "s",
        ]);
        t
    }

    /// A command run inside namespace `which` (0 client, 1 middle, 2
    /// server).
    pub fn exec(&self, which: usize, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns[which]]).args(args);
        c
    }

    /// Starts `args` in namespace `which`, killed when the topology goes.
    pub fn spawn(&mut self, which: usize, args: &[&str]) {
        let child = self
            .exec(which, args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        self.children.push(child);
    }

    /// Pings the server from the client until it answers (true) or
    /// `secs` pass.
    pub fn wait_ping(&self, secs: u64) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        while std::time::Instant::now() < deadline {
            if self
                .exec(0, &["ping", "-c", "1", "-W", "1", &self.server_ip])
                .output()
                .is_ok_and(|o| o.status.success())
            {
                return true;
            }
        }
        false
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.ns {
            let _ = sh(&["ip", "netns", "del", n]);
        }
    }
}

/// Three namespaces (client, middle, server) joined by routing through
/// the middle: the namespaces and the processes started in them go when
/// it is dropped.
pub struct Routed {
    /// Client, middle and server namespace names.
    pub ns: [String; 3],
    /// Processes killed before the namespaces go.
    pub children: Vec<Child>,
}

impl Routed {
    /// Namespaces `pronto{pid}{tag}c`, `...m` and `...s`; the middle holds
    /// veth `pa{pid}{tag}` to the client's `c` and `pb{pid}{tag}` to the
    /// server's `s`, all up. The middle's kernel stays out of the way: no
    /// IPv6 of its own on them (no link-local address, no solicitations)
    /// and no IPv4 address. Returns the topology and the middle's two
    /// interface names.
    pub fn new(tag: &str) -> (Routed, String, String) {
        let pid = std::process::id();
        let t = Routed {
            ns: ["c", "m", "s"].map(|r| format!("pronto{pid}{tag}{r}")),
            children: Vec::new(),
        };
        for n in &t.ns {
            must(&["ip", "netns", "add", n]);
        }
        let (c, m, s) = (&t.ns[0], &t.ns[1], &t.ns[2]);
        let (a, b) = (format!("pa{pid}{tag}"), format!("pb{pid}{tag}"));
        for (here, there, far) in [(&a, "c", c), (&b, "s", s)] {
            must(&[
                "ip", "-n", m, "link", "add", here, "type", "veth", "peer", "name", there, "netns",
                far,
            ]);
            must(&[
                "ip",
                "netns",
                "exec",
                m,
                "sysctl",
                "-qw",
                &format!("net.ipv6.conf.{here}.disable_ipv6=1"),
            ]);
            must(&["ip", "-n", m, "link", "set", here, "up"]);
            must(&["ip", "-n", far, "link", "set", there, "up"]);
            must(&["ip", "-n", far, "link", "set", "lo", "up"]);
        }
        (t, a, b)
    }

    /// A command run inside namespace `which`.
    pub fn exec(&self, which: usize, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns[which]]).args(args);
        c
    }

    /// Starts `args` in namespace `which`, its standard error to `stderr`.
    pub fn spawn(&mut self, which: usize, args: &[&str], stderr: impl Into<Stdio>) {
        let child = self
            .exec(which, args)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        self.children.push(child);
    }

    /// Starts `pronto run ARGS...` (the binary under test) in namespace
    /// `which`, its standard error to the file `log`; returns what to add
    /// to a failed assertion: what pronto said there so far.
    pub fn spawn_pronto(
        &mut self,
        which: usize,
        args: &[&str],
        log: &Path,
    ) -> impl Fn() -> String + use<> {
        let mut all = vec![env!("CARGO_BIN_EXE_pronto"), "run"];
        all.extend_from_slice(args);
        self.spawn(
            which,
            &all,
            std::fs::File::create(log).expect("pronto's log file"),
        );
        let log = log.to_path_buf();
        move || {
            format!(
                "pronto's standard error:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )
        }
    }

    /// Runs `args` in namespace `which`: success, stdout and stderr.
    pub fn output(&self, which: usize, args: &[&str]) -> (bool, String) {
        let o = self
            .exec(which, args)
            .output()
            .unwrap_or_else(|e| panic!("{args:?}: {e}"));
        (
            o.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        )
    }

    /// Runs `args` in the client until it succeeds or `secs` pass.
    pub fn until(&self, secs: u64, args: &[&str]) -> (bool, String) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let (ok, out) = self.output(0, args);
            if ok || Instant::now() > deadline {
                return (ok, out);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Routed {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.ns {
            let _ = sh(&["ip", "netns", "del", n]);
        }
    }
}

/// The MAC address of `dev` in namespace `ns`.
pub fn mac_of(ns: &str, dev: &str) -> String {
    let o = sh(&["ip", "-n", ns, "-o", "link", "show", dev]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.split_whitespace()
        .skip_while(|w| *w != "link/ether")
        .nth(1)
        .unwrap_or_else(|| panic!("no MAC for {dev}: {text}"))
        .to_string()
}

/// Addresses and default routes of the dual-stack router example's hosts:
/// the client `c` in 10.201.1.0/24 and 2001:db8:1::/64, the server `s` in
/// 10.201.2.0/24 and 2001:db8:2::/64, each routed through the router's
/// `.254` and `::fe` on its side.
pub fn address_dual_stack_hosts(t: &Routed) {
    for (ns, dev, v4, v6, gw4, gw6) in [
        (
            &t.ns[0],
            "c",
            "10.201.1.1/24",
            "2001:db8:1::1/64",
            "10.201.1.254",
            "2001:db8:1::fe",
        ),
        (
            &t.ns[2],
            "s",
            "10.201.2.1/24",
            "2001:db8:2::1/64",
            "10.201.2.254",
            "2001:db8:2::fe",
        ),
    ] {
        must(&["ip", "-n", ns, "addr", "add", v4, "dev", dev]);
        must(&["ip", "-n", ns, "-6", "addr", "add", v6, "dev", dev, "nodad"]);
        must(&["ip", "-n", ns, "route", "add", "default", "via", gw4]);
        must(&["ip", "-n", ns, "-6", "route", "add", "default", "via", gw6]);
    }
}

/// What real clients must get through the dual-stack router example
/// (whose client-side MAC is `amac`), wherever it runs: `ping` and
/// `ping -6`, the router's Neighbor Discovery answer, an ICMPv6 time
/// exceeded for a hop limit of 1, `iperf3 -6` for two seconds and a web
/// page over IPv6 with `curl`. `said` is what the router printed, for the
/// failure messages.
pub fn dual_stack_clients_get_through(t: &mut Routed, amac: &str, said: &dyn Fn() -> String) {
    let (ok, out) = t.until(20, &["ping", "-c", "1", "-W", "1", "10.201.2.1"]);
    assert!(ok, "ping over IPv4 never got through: {out}\n{}", said());
    let (ok, out) = t.until(20, &["ping", "-6", "-c", "1", "-W", "1", "2001:db8:2::1"]);
    assert!(ok, "ping over IPv6 never got through: {out}\n{}", said());
    let (ok, out) = t.output(0, &["ping", "-6", "-c", "3", "-i", "0.2", "2001:db8:2::1"]);
    assert!(
        ok && out.contains("3 packets transmitted, 3 received"),
        "{out}"
    );
    // The client learned the router's MAC through its advertisement.
    let (_, neigh) = t.output(0, &["ip", "-6", "neigh", "show", "2001:db8:1::fe"]);
    assert!(neigh.contains(amac), "{neigh}");
    // A hop limit of 1 expires at the router: an ICMPv6 time exceeded
    // from its address on the client's side.
    let (_, out) = t.output(
        0,
        &[
            "ping",
            "-6",
            "-c",
            "1",
            "-W",
            "2",
            "-t",
            "1",
            "2001:db8:2::1",
        ],
    );
    assert!(
        out.contains("From 2001:db8:1::fe") && out.contains("Time exceeded"),
        "{out}"
    );
    // TCP over IPv6: iperf3 for two seconds, and a web page with curl.
    t.spawn(
        2,
        &["iperf3", "-s", "-1", "-B", "2001:db8:2::1"],
        Stdio::null(),
    );
    t.spawn(
        2,
        &[
            "python3",
            "-m",
            "http.server",
            "8080",
            "--bind",
            "2001:db8:2::1",
        ],
        Stdio::null(),
    );
    std::thread::sleep(Duration::from_millis(500));
    let (ok, out) = t.until(
        10,
        &["iperf3", "-6", "-c", "2001:db8:2::1", "-t", "2", "-J"],
    );
    assert!(ok, "iperf3 -6 failed: {out}\n{}", said());
    assert!(out.contains("\"sum_received\""), "{out}");
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
            "http://[2001:db8:2::1]:8080/",
        ],
    );
    assert!(ok && out.trim() == "200", "curl over IPv6: {out}");
}
