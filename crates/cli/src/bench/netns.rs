//! What `pronto bench veth` and `pronto bench tcp` share: a client, a
//! middle and a server network namespace joined by two veth pairs, the
//! middle forwarding either with the Linux kernel or with `pronto run`;
//! child processes that are always reaped; ping statistics.
//!
//! ```text
//!  client ns           middle ns                             server ns
//!  c<pid> ── veth ── m<pid>a  [kernel or pronto]  m<pid>b ── veth ── s<pid>
//!  10.201.1.1/24     (10.201.1.254)    (10.201.2.254)        10.201.2.1/24
//! ```
//!
//! Every namespace is made here and named after this process and a tag
//! (`pronto<pid><tag>c`, `...m`, `...s`); the veth pairs are created inside
//! the middle namespace with their far ends moved straight into the client
//! and server namespaces, so the default namespace never holds any of
//! them. Dropping a [`Topology`] kills the processes started in it and
//! deletes the namespaces (and with them the veth pairs); SIGINT and
//! SIGTERM only raise a flag ([`catch_interrupts`]) that every wait here
//! checks, so an interrupted experiment unwinds through those drops.
//!
//! All MAC addresses are fixed ([`CLIENT_MAC`], ...) and every neighbour
//! entry is static (`nud permanent`), IPv6 is off in all three namespaces:
//! the measured path carries no ARP, neighbour discovery or router
//! solicitations, only the experiment's traffic.
//!
//! Two ways the middle forwards ([`Middle`]):
//!
//! - **Kernel**: `m<pid>a`/`m<pid>b` hold the gateway addresses and
//!   `net.ipv4.ip_forward=1`.
//! - **Pronto**: no addresses and forwarding off (the kernel drops what
//!   pronto's sockets also see); `pronto run` in the middle namespace runs
//!   [`router_config`]: IPv4 is checked (`CheckIPHeader`), its TTL
//!   decremented (`DecIPTTL`, expired packets dropped) and its Ethernet
//!   addresses rewritten to the far side's (`EtherRewrite`); ARP requests
//!   for the gateway addresses are answered (`ARPResponder`, not needed
//!   with static neighbours but what a router does); every other frame is
//!   dropped. Non-IP frames are not bridged across, as a router would not,
//!   and so that the forwarding path needs no merge of two branches (which
//!   would make pronto keep packet order by handing packets over one at a
//!   time).
//!
//! Offloads stay as veth has them (TSO, checksum offload), except where a
//! method cannot see the kernel's offload metadata ([`Middle::offload_note`]):
//! `METHOD XDP` receives frame bytes only, so a TCP segment whose checksum
//! the sender left to the "device" would cross with a wrong checksum and
//! be dropped by the receiver. For XDP the client's and server's transmit
//! checksum offload is turned off (which also turns off their TSO), and the
//! row says so.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The client's address.
pub const CLIENT_IP: &str = "10.201.1.1";
/// The middle's address on the client side (the client's gateway).
pub const GW_CLIENT_IP: &str = "10.201.1.254";
/// The middle's address on the server side (the server's gateway).
pub const GW_SERVER_IP: &str = "10.201.2.254";
/// The server's address.
pub const SERVER_IP: &str = "10.201.2.1";
/// The client's Ethernet address.
pub const CLIENT_MAC: &str = "02:50:00:01:00:01";
/// The middle's Ethernet address on the client side.
pub const M0_MAC: &str = "02:50:00:01:00:fe";
/// The middle's Ethernet address on the server side.
pub const M1_MAC: &str = "02:50:00:02:00:fe";
/// The server's Ethernet address.
pub const SERVER_MAC: &str = "02:50:00:02:00:01";

/// Index of the client namespace in [`Topology::ns`].
pub const CLIENT: usize = 0;
/// Index of the middle namespace.
pub const MIDDLE: usize = 1;
/// Index of the server namespace.
pub const SERVER: usize = 2;

/// How the middle namespace forwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Middle {
    /// Linux IPv4 forwarding.
    Kernel,
    /// Linux IPv4 forwarding with the client's and server's transmit
    /// checksum offload (and so TSO) off: the baseline for paths that need
    /// them off ([`Middle::offload_note`]).
    KernelTxOff,
    /// `pronto run` with [`router_config`] and this `FromDevice`/`ToDevice`
    /// METHOD.
    Pronto(String),
}

impl Middle {
    /// The name of the path in tables and CSV files: `kernel` or
    /// `pronto-METHOD`.
    pub fn name(&self) -> String {
        match self {
            Middle::Kernel => "kernel".into(),
            Middle::KernelTxOff => "kernel-txoff".into(),
            Middle::Pronto(m) => format!("pronto-{m}"),
        }
    }

    /// Why and how the end hosts' offloads differ from veth's defaults on
    /// this path, if they do: XDP hands pronto frame bytes without the
    /// checksum-offload metadata, so the client and server compute their
    /// checksums themselves.
    pub fn offload_note(&self) -> Option<&'static str> {
        match self {
            Middle::Pronto(m) if m == "XDP" => Some(
                "client/server tx checksum offload (and so TSO) off: \
                 XDP frames carry no offload metadata",
            ),
            Middle::KernelTxOff => Some("client/server tx checksum offload (and so TSO) off"),
            _ => None,
        }
    }

    /// Whether the kernel forwards on this path.
    pub fn is_kernel(&self) -> bool {
        matches!(self, Middle::Kernel | Middle::KernelTxOff)
    }

    /// The paths to measure: the kernel first (the baseline), then pronto
    /// with each method of `--methods LIST` (comma-separated).
    pub fn paths(methods: &str) -> Result<Vec<Middle>, String> {
        let mut v = vec![Middle::Kernel];
        for m in methods.split(',').map(str::trim).filter(|m| !m.is_empty()) {
            let (base, poll) = m.split_once('+').unwrap_or((m, ""));
            if base.is_empty()
                || !base.chars().all(|c| c.is_ascii_alphanumeric())
                || !(poll.is_empty() || poll.eq_ignore_ascii_case("POLL"))
            {
                return Err(format!(
                    "--methods: `{m}` is not a METHOD name (give e.g. SOCKET,RING,XDP, or \
                     RING+POLL for pronto run --busy-poll)"
                ));
            }
            v.push(Middle::Pronto(m.to_ascii_uppercase()));
        }
        Ok(v)
    }
}

fn stop_flag() -> &'static Arc<AtomicBool> {
    static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Turns SIGINT and SIGTERM into a flag that every wait in this module
/// checks ([`interrupted`]), so an interrupted experiment returns an error
/// and its drop guards remove what it made.
pub fn catch_interrupts() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(stop_flag()))
                .map_err(|e| format!("cannot catch signal {sig}: {e}"))?;
        }
        Ok(())
    })
    .clone()
}

/// An error once SIGINT or SIGTERM has arrived.
pub fn interrupted() -> Result<(), String> {
    if stop_flag().load(Ordering::Relaxed) {
        Err("interrupted (namespaces and processes removed)".into())
    } else {
        Ok(())
    }
}

/// Sleeps `d`, returning early with an error when interrupted.
pub fn sleep(d: Duration) -> Result<(), String> {
    let end = Instant::now() + d;
    loop {
        interrupted()?;
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// Checks that this runs as root with `tools` on the PATH.
pub fn need(tools: &[&str]) -> Result<(), String> {
    if !rustix::process::geteuid().is_root() {
        return Err("needs root (it makes network namespaces and veth pairs)".into());
    }
    for t in tools {
        if !have(t) {
            return Err(format!("needs `{t}` on the PATH; install it and run again"));
        }
    }
    Ok(())
}

/// Whether `tool` is on the PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a short command to completion; an error quotes its stderr.
fn must(args: &[&str]) -> Result<(), String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", args.join(" ")))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

/// Runs `ip -n NS WORDS...` (`words` split at spaces).
pub fn ip(ns: &str, words: &str) -> Result<(), String> {
    let mut args = vec!["ip", "-n", ns];
    args.extend(words.split_whitespace());
    must(&args)
}

/// Runs `WORDS...` (split at spaces) inside namespace `ns`.
pub fn run_in(ns: &str, words: &str) -> Result<(), String> {
    let mut args = vec!["ip", "netns", "exec", ns];
    args.extend(words.split_whitespace());
    must(&args)
}

/// A child process whose output is collected as it comes; killed and
/// reaped when dropped.
pub struct Proc {
    what: String,
    child: Child,
    status: Option<ExitStatus>,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

/// How a [`Proc`] ended.
pub struct Finished {
    /// Its exit status.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

fn collect(mut r: impl Read + Send + 'static, into: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if let Ok(mut s) = into.lock() {
                        s.push_str(&text);
                    }
                }
            }
        }
    })
}

impl Proc {
    /// Starts `cmd` (described as `what` in errors) with its output
    /// collected.
    pub fn spawn(mut cmd: Command, what: &str) -> Result<Proc, String> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {what}: {e}"))?;
        let out = Arc::new(Mutex::new(String::new()));
        let err = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        if let Some(o) = child.stdout.take() {
            readers.push(collect(o, Arc::clone(&out)));
        }
        if let Some(e) = child.stderr.take() {
            readers.push(collect(e, Arc::clone(&err)));
        }
        Ok(Proc {
            what: what.to_string(),
            child,
            status: None,
            out,
            err,
            readers,
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Its stdout so far.
    pub fn stdout(&self) -> String {
        self.out.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Its stderr so far.
    pub fn stderr(&self) -> String {
        self.err.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Whether it has exited (reaping it if so).
    pub fn exited(&mut self) -> bool {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status.is_some()
    }

    /// Waits until its stdout holds `needle`; an error if it exits first,
    /// or after `timeout`.
    pub fn wait_for_stdout(&mut self, needle: &str, timeout: Duration) -> Result<(), String> {
        let end = Instant::now() + timeout;
        loop {
            if self.stdout().contains(needle) {
                return Ok(());
            }
            if self.exited() {
                self.join_readers();
                if self.stdout().contains(needle) {
                    return Ok(());
                }
                return Err(format!(
                    "{} exited before it was ready: {}",
                    self.what,
                    first_line(&self.stderr())
                ));
            }
            if Instant::now() >= end {
                return Err(format!(
                    "{} not ready after {:.1} s: {}",
                    self.what,
                    timeout.as_secs_f64(),
                    first_line(&self.stderr())
                ));
            }
            sleep(Duration::from_millis(5))?;
        }
    }

    /// Waits for it to exit, at most `timeout` (then it is killed and this
    /// is an error).
    pub fn wait(mut self, timeout: Duration) -> Result<Finished, String> {
        let end = Instant::now() + timeout;
        while !self.exited() {
            if Instant::now() >= end {
                return Err(format!(
                    "{} still running after {:.1} s (killed); it said: {}",
                    self.what,
                    timeout.as_secs_f64(),
                    first_line(&self.stderr())
                ));
            }
            sleep(Duration::from_millis(5))?;
        }
        self.join_readers();
        let status = self.status.expect("exited() saw a status");
        Ok(Finished {
            status,
            stdout: self.stdout(),
            stderr: self.stderr(),
        })
    }

    /// Lets the output readers finish (the pipes close when the process
    /// exits); gives up after a second, should a grandchild hold a pipe.
    fn join_readers(&mut self) {
        let end = Instant::now() + Duration::from_secs(1);
        while self.readers.iter().any(|r| !r.is_finished()) && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(2));
        }
        for r in std::mem::take(&mut self.readers) {
            if r.is_finished() {
                let _ = r.join();
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if !self.exited() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The first non-empty line of `s` (pronto's errors repeat in detail
/// after it), or `(nothing)`.
pub fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(nothing)")
        .to_string()
}

/// Three namespaces, two veth pairs and the processes started in them;
/// all removed on drop.
pub struct Topology {
    /// Client, middle and server namespace names.
    pub ns: [String; 3],
    /// The client's interface.
    pub c: String,
    /// The middle's client-side interface.
    pub m0: String,
    /// The middle's server-side interface.
    pub m1: String,
    /// The server's interface.
    pub s: String,
    procs: Vec<Proc>,
    made: Vec<String>,
}

impl Topology {
    /// Makes the namespaces and links, addresses and static neighbours,
    /// and sets the middle up as `middle` says (for pronto, the router is
    /// started by [`Topology::start_pronto`]). `tag` tells apart
    /// topologies of one process.
    pub fn new(tag: &str, middle: &Middle) -> Result<Topology, String> {
        let pid = std::process::id();
        let mut t = Topology {
            ns: [
                format!("pronto{pid}{tag}c"),
                format!("pronto{pid}{tag}m"),
                format!("pronto{pid}{tag}s"),
            ],
            c: format!("c{pid}"),
            m0: format!("m{pid}a"),
            m1: format!("m{pid}b"),
            s: format!("s{pid}"),
            procs: Vec::new(),
            made: Vec::new(),
        };
        for n in t.ns.clone() {
            must(&["ip", "netns", "add", &n])?;
            t.made.push(n.clone());
            run_in(
                &n,
                "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1",
            )?;
            ip(&n, "link set lo up")?;
        }
        let [c_ns, m_ns, s_ns] = t.ns.clone();
        let (c, m0, m1, s) = (&t.c, &t.m0, &t.m1, &t.s);
        // Made in the middle namespace, the far end moved straight out.
        ip(
            &m_ns,
            &format!(
                "link add name {m0} address {M0_MAC} type veth \
                 peer name {c} address {CLIENT_MAC} netns {c_ns}"
            ),
        )?;
        ip(
            &m_ns,
            &format!(
                "link add name {m1} address {M1_MAC} type veth \
                 peer name {s} address {SERVER_MAC} netns {s_ns}"
            ),
        )?;
        ip(&m_ns, &format!("link set {m0} up"))?;
        ip(&m_ns, &format!("link set {m1} up"))?;
        ip(&c_ns, &format!("link set {c} up"))?;
        ip(&s_ns, &format!("link set {s} up"))?;
        ip(&c_ns, &format!("addr add {CLIENT_IP}/24 dev {c}"))?;
        ip(
            &c_ns,
            &format!("neigh replace {GW_CLIENT_IP} lladdr {M0_MAC} dev {c} nud permanent"),
        )?;
        ip(
            &c_ns,
            &format!("route add 10.201.2.0/24 via {GW_CLIENT_IP} dev {c}"),
        )?;
        ip(&s_ns, &format!("addr add {SERVER_IP}/24 dev {s}"))?;
        ip(
            &s_ns,
            &format!("neigh replace {GW_SERVER_IP} lladdr {M1_MAC} dev {s} nud permanent"),
        )?;
        ip(
            &s_ns,
            &format!("route add 10.201.1.0/24 via {GW_SERVER_IP} dev {s}"),
        )?;
        if middle.offload_note().is_some() {
            run_in(&c_ns, &format!("ethtool -K {c} tx off"))?;
            run_in(&s_ns, &format!("ethtool -K {s} tx off"))?;
        }
        if middle.is_kernel() {
            ip(&m_ns, &format!("addr add {GW_CLIENT_IP}/24 dev {m0}"))?;
            ip(&m_ns, &format!("addr add {GW_SERVER_IP}/24 dev {m1}"))?;
            ip(
                &m_ns,
                &format!("neigh replace {CLIENT_IP} lladdr {CLIENT_MAC} dev {m0} nud permanent"),
            )?;
            ip(
                &m_ns,
                &format!("neigh replace {SERVER_IP} lladdr {SERVER_MAC} dev {m1} nud permanent"),
            )?;
            run_in(&m_ns, "sysctl -qw net.ipv4.ip_forward=1")?;
        }
        Ok(t)
    }

    /// A command run inside namespace `which` ([`CLIENT`], [`MIDDLE`],
    /// [`SERVER`]).
    pub fn exec(&self, which: usize, args: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns[which]]).args(args);
        c
    }

    /// Starts `args` in namespace `which` with its output collected.
    pub fn spawn(&self, which: usize, args: &[&str], what: &str) -> Result<Proc, String> {
        Proc::spawn(self.exec(which, args), what)
    }

    /// Starts `args` in namespace `which` and keeps it running until the
    /// topology is dropped; with `ready`, first waits (5 s at most) until
    /// its stdout holds that text. Returns its pid.
    pub fn keep(
        &mut self,
        which: usize,
        args: &[&str],
        what: &str,
        ready: Option<&str>,
    ) -> Result<u32, String> {
        let mut p = self.spawn(which, args, what)?;
        if let Some(text) = ready {
            p.wait_for_stdout(text, Duration::from_secs(5))?;
        }
        let pid = p.pid();
        self.procs.push(p);
        Ok(pid)
    }

    /// Starts `pronto run` with [`router_config`] for `method` in the
    /// middle namespace and waits until a ping gets through it. An error
    /// (with pronto's own first line when it refused the configuration)
    /// when it exits or nothing gets through in 5 s.
    /// `METHOD+POLL` runs it with `--busy-poll`.
    pub fn start_pronto(&mut self, exe: &Path, method: &str) -> Result<u32, String> {
        let (method, poll) = match method.split_once('+') {
            Some((m, _)) => (m, true),
            None => (method, false),
        };
        let config = router_config(&self.m0, &self.m1, method);
        let exe = exe.to_string_lossy().into_owned();
        let mut args = vec![exe.as_str(), "run"];
        if poll {
            args.push("--busy-poll");
        }
        args.extend(["-e", &config]);
        let p = self.spawn(MIDDLE, &args, &format!("pronto run (METHOD {method})"))?;
        let pid = p.pid();
        self.procs.push(p);
        match self.wait_path(Duration::from_secs(5)) {
            Ok(()) => Ok(pid),
            Err(e) => {
                let p = self.procs.last_mut().expect("just pushed");
                if p.exited() {
                    std::thread::sleep(Duration::from_millis(50));
                    Err(format!(
                        "pronto run refused it: {}",
                        first_line(&p.stderr())
                    ))
                } else {
                    Err(e)
                }
            }
        }
    }

    /// Waits until a ping from the client gets an answer from the server.
    pub fn wait_path(&mut self, timeout: Duration) -> Result<(), String> {
        let end = Instant::now() + timeout;
        loop {
            let p = self.spawn(CLIENT, &["ping", "-c", "1", "-W", "1", SERVER_IP], "ping")?;
            if p.wait(Duration::from_secs(3))?.status.success() {
                return Ok(());
            }
            if self.procs.iter_mut().any(Proc::exited) {
                return Err("a process in the topology exited".into());
            }
            if Instant::now() >= end {
                return Err(format!(
                    "no ping answer from {SERVER_IP} through the middle in {:.0} s",
                    timeout.as_secs_f64()
                ));
            }
            sleep(Duration::from_millis(50))?;
        }
    }

    /// Round-trip times in microseconds of `count` pings client to server,
    /// `interval` seconds apart, read per reply from ping's output.
    pub fn ping_rtts(&self, count: usize, interval: f64) -> Result<Vec<f64>, String> {
        let n = count.to_string();
        let i = format!("{interval}");
        let p = self.spawn(
            CLIENT,
            &["ping", "-n", "-c", &n, "-i", &i, "-W", "1", SERVER_IP],
            "ping",
        )?;
        let f = p.wait(Duration::from_secs_f64(count as f64 * interval + 10.0))?;
        let rtts = parse_ping(&f.stdout);
        if rtts.is_empty() {
            return Err(format!(
                "ping {SERVER_IP}: no replies: {}",
                first_line(&(f.stderr + &f.stdout))
            ));
        }
        Ok(rtts)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // Processes first (they hold sockets on the interfaces), then the
        // namespaces, which take their veth ends (and so the pairs) along.
        self.procs.clear();
        for n in self.made.drain(..) {
            let _ = Command::new("ip")
                .args(["netns", "del", &n])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The middle's Click configuration for pronto: an IPv4 router between
/// `m0` (client side) and `m1` (server side) using `method`.
pub fn router_config(m0: &str, m1: &str, method: &str) -> String {
    format!(
        "// IPv4 router between {m0} ({GW_CLIENT_IP}) and {m1} ({GW_SERVER_IP}).\n\
         to0 :: ToDevice({m0}, METHOD {method}, BURST 32);\n\
         to1 :: ToDevice({m1}, METHOD {method}, BURST 32);\n\
         FromDevice({m0}, METHOD {method}, BURST 32)\n  \
           -> c0 :: Classifier(12/0800, 12/0806 20/0001, -);\n\
         c0[0] -> CheckIPHeader(14) -> DecIPTTL -> EtherRewrite({M1_MAC}, {SERVER_MAC}) -> to1;\n\
         c0[1] -> ARPResponder({GW_CLIENT_IP} {M0_MAC}) -> to0;\n\
         c0[2] -> Discard;\n\
         FromDevice({m1}, METHOD {method}, BURST 32)\n  \
           -> c1 :: Classifier(12/0800, 12/0806 20/0001, -);\n\
         c1[0] -> CheckIPHeader(14) -> DecIPTTL -> EtherRewrite({M0_MAC}, {CLIENT_MAC}) -> to0;\n\
         c1[1] -> ARPResponder({GW_SERVER_IP} {M1_MAC}) -> to1;\n\
         c1[2] -> Discard;\n"
    )
}

/// The `time=X ms` of every reply line of ping's output, in microseconds.
pub fn parse_ping(out: &str) -> Vec<f64> {
    out.lines()
        .filter(|l| l.contains("bytes from"))
        .filter_map(|l| {
            let t = l.split_once("time=")?.1;
            let (v, unit) = t.split_once(' ').unwrap_or((t, "ms"));
            let v: f64 = v.parse().ok()?;
            Some(if unit.starts_with("us") {
                v
            } else {
                v * 1000.0
            })
        })
        .collect()
}

/// The `p`-th percentile (0-100, nearest rank) of `v`; 0 when empty.
pub fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let rank = ((p / 100.0) * s.len() as f64).ceil() as usize;
    s[rank.clamp(1, s.len()) - 1]
}

/// CPU seconds (user + system) used so far by process `pid`; 0 when it
/// is gone.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name (which may hold spaces), utime and stime are
    // the 12th and 13th fields.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    // /proc reports in USER_HZ, 100 on every Linux architecture pronto
    // builds for.
    ticks / 100.0
}

/// A Markdown table.
pub fn markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!("| {} |\n", header.join(" | "));
    s += &format!("|{}\n", "---|".repeat(header.len()));
    for r in rows {
        s += &format!("| {} |\n", r.join(" | "));
    }
    s
}

/// `text` made safe for one CSV cell (no commas, quotes or line breaks).
pub fn csv_cell(text: &str) -> String {
    text.replace([',', '\n', '\r'], ";").replace('"', "'")
}

/// Checks that every `--option` in `rest` is one of `known` (each taking
/// a value); an error names the first that is not.
pub fn check_options(rest: &[String], known: &[&str]) -> Result<(), String> {
    let mut i = 0;
    while i < rest.len() {
        if !known.contains(&rest[i].as_str()) {
            return Err(format!(
                "unknown option `{}` (known: --out, {})",
                rest[i],
                known.join(", ")
            ));
        }
        i += 2;
    }
    Ok(())
}

/// The machine's load averages over 1, 5 and 15 minutes, as
/// `/proc/loadavg` gives them (other work competes with the experiment
/// for the cores), or `unknown`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// How many cores this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `a` and `b` as one note ("a; b"), either possibly empty.
pub fn join_notes(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}; {b}"),
    }
}

/// The tools the experiment needs: `base`, and `ethtool` when a path
/// changes offloads ([`Middle::offload_note`]).
pub fn tools_for<'a>(paths: &[Middle], base: &[&'a str]) -> Vec<&'a str> {
    let mut v = base.to_vec();
    if paths.iter().any(|m| m.offload_note().is_some()) {
        v.push("ethtool");
    }
    v
}

/// Formats `v` with `digits` decimals, or an empty string for NaN.
pub fn num(v: f64, digits: usize) -> String {
    if v.is_nan() {
        String::new()
    } else {
        format!("{v:.digits$}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ping_lines_are_read_in_microseconds() {
        let out = "PING 10.201.2.1 (10.201.2.1) 56(84) bytes of data.\n\
                   64 bytes from 10.201.2.1: icmp_seq=1 ttl=63 time=0.045 ms\n\
                   64 bytes from 10.201.2.1: icmp_seq=2 ttl=63 time=1.20 ms\n\
                   \n--- 10.201.2.1 ping statistics ---\n\
                   rtt min/avg/max/mdev = 0.045/0.622/1.200/0.577 ms\n";
        assert_eq!(parse_ping(out), vec![45.0, 1200.0]);
        assert!(parse_ping("ping: connect: Network is unreachable\n").is_empty());
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 100.0);
        assert_eq!(percentile(&v, 99.0), 198.0);
        assert_eq!(percentile(&v, 100.0), 200.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn paths_start_with_the_kernel() {
        assert_eq!(
            Middle::paths("SOCKET, ring").expect("valid"),
            vec![
                Middle::Kernel,
                Middle::Pronto("SOCKET".into()),
                Middle::Pronto("RING".into())
            ]
        );
        assert_eq!(Middle::Pronto("XDP".into()).name(), "pronto-XDP");
        assert!(Middle::paths("RING;rm").is_err());
    }

    #[test]
    fn only_xdp_and_its_baseline_turn_offloads_off() {
        assert!(Middle::Pronto("XDP".into()).offload_note().is_some());
        assert!(Middle::KernelTxOff.offload_note().is_some());
        assert!(Middle::Kernel.offload_note().is_none());
        assert!(Middle::Pronto("RING".into()).offload_note().is_none());
        assert!(Middle::KernelTxOff.is_kernel() && !Middle::Pronto("RING".into()).is_kernel());
        assert_eq!(
            tools_for(&[Middle::Kernel, Middle::Pronto("XDP".into())], &["ip"]),
            ["ip", "ethtool"]
        );
        assert_eq!(tools_for(&[Middle::Kernel], &["ip"]), ["ip"]);
    }

    #[test]
    fn notes_join() {
        assert_eq!(join_notes("", "b"), "b");
        assert_eq!(join_notes("a", ""), "a");
        assert_eq!(join_notes("a", "b"), "a; b");
        assert_eq!(csv_cell("x, y\n\"z\""), "x; y;'z'");
    }

    #[test]
    fn options_are_checked() {
        let rest = vec!["--duration".to_string(), "1".to_string()];
        assert!(check_options(&rest, &["--duration"]).is_ok());
        let e = check_options(&rest, &["--methods"]).expect_err("unknown");
        assert!(e.contains("`--duration`"), "{e}");
    }

    #[test]
    fn router_config_names_both_sides() {
        let c = router_config("ma", "mb", "RING");
        assert!(c.contains("FromDevice(ma, METHOD RING, BURST 32)"));
        assert!(c.contains(&format!("EtherRewrite({M1_MAC}, {SERVER_MAC}) -> to1")));
        assert!(c.contains(&format!("EtherRewrite({M0_MAC}, {CLIENT_MAC}) -> to0")));
    }
}
