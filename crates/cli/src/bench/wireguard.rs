//! `pronto bench wireguard`: throughput through a WireGuard gateway,
//! pronto's (`examples/wireguard.click`, built in) against `wireguard-go`
//! in the same place, rounds alternating in one sitting.
//!
//! The topology is [`super::netns`]'s, with a tunnel on top: the client
//! namespace runs `wireguard-go` (MTU 1420, configured with `wg`) as the
//! peer, with the server's network (10.201.2.0/24) routed into the tunnel
//! and the endpoint at the middle's client-side address, port 51820. The
//! middle terminates the tunnel, either with `pronto run` of the example
//! configuration (no addresses on its interfaces; METHOD RING both sides)
//! or with `wireguard-go` and Linux forwarding between its tunnel
//! interface and the server side. The server's interface has the tunnel's
//! MTU (1420) and a route for the tunnel addresses (10.99.0.0/24) through
//! the middle. The client's and server's transmit checksum offload (and so
//! TSO) are off for both gateways: pronto forwards what it is given.
//!
//! ```text
//!  client ns                         middle ns                 server ns
//!  wg 10.99.0.2 ─ c 10.201.1.1 ── veth ── [pronto | wireguard-go + kernel] ── veth ── s 10.201.2.1
//! ```
//!
//! Per round and gateway: `iperf3` TCP for `--duration` seconds (the
//! receiver's rate, the sender's retransmissions, the gateway's CPU time
//! meanwhile), then `iperf3` UDP with 1,392-byte payloads (1,420-byte inner
//! IP packets) offered at `--udp-rate`: what the server received and the
//! loss. Each round builds the topology afresh.
//!
//! Writes OUT/wireguard.csv (`gateway,round,tcp_mbps,tcp_retransmits,
//! udp_mbps,udp_loss_percent,gateway_cpu_s,note`; a failed run is a row
//! with the reason in `note`), OUT/wireguard.png (medians), and prints a
//! Markdown table of the medians with pronto's ratio to wireguard-go.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::netns::{
    self, cpu_seconds, csv_cell, first_line, markdown, num, Middle, Topology, CLIENT, GW_CLIENT_IP,
    GW_SERVER_IP, M0_MAC, M1_MAC, MIDDLE, SERVER, SERVER_IP,
};
use super::plot::{BarChart, Bars, Chart, Figure, Table};
use super::{median, Common, Csv};

/// The gateway configuration, the same file as examples/wireguard.click.
const CONFIG: &str = include_str!("../../../../examples/wireguard.click");

/// The tunnel's UDP port on the gateway.
const PORT: u16 = 51820;
/// The client's address inside the tunnel.
const TUNNEL_IP: &str = "10.99.0.2";
/// The UDP payload that makes 1,420-byte inner IP packets.
const UDP_PAYLOAD: &str = "1392";

/// The two gateways, in the order each round runs them.
const GATEWAYS: [Gateway; 2] = [Gateway::Pronto, Gateway::WireguardGo];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gateway {
    Pronto,
    WireguardGo,
}

impl Gateway {
    fn name(self) -> &'static str {
        match self {
            Gateway::Pronto => "pronto",
            Gateway::WireguardGo => "wireguard-go",
        }
    }
}

/// Runs the subcommand.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::parse(args)?;
    netns::check_options(&c.rest, &["--duration", "--rounds", "--udp-rate"])?;
    let duration: u32 = c.opt("--duration")?.unwrap_or(10);
    if !(1..=600).contains(&duration) {
        return Err(format!(
            "--duration: {duration} is out of range: give whole seconds, 1 to 600"
        ));
    }
    let rounds: u32 = c.opt("--rounds")?.unwrap_or(3);
    if !(1..=50).contains(&rounds) {
        return Err(format!("--rounds: {rounds} is out of range: give 1 to 50"));
    }
    let udp_rate: String = c.opt("--udp-rate")?.unwrap_or_else(|| "1G".into());
    check_rate(&udp_rate)?;
    netns::need(&[
        "ip",
        "ping",
        "sysctl",
        "ethtool",
        "iperf3",
        "wg",
        "wireguard-go",
    ])?;
    netns::catch_interrupts()?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find pronto itself: {e}"))?;
    let dir = WorkDir::new()?;
    let keys = Keys::make(&dir.0)?;
    crate::outln!(
        "pronto bench wireguard: {rounds} round(s) of iperf3 TCP and UDP ({UDP_PAYLOAD} B payloads \
         at {udp_rate}), {duration} s each, through pronto and wireguard-go alternating; \
         load average before it {} on {} cores",
        netns::load_average(),
        netns::cores()
    );

    let mut runs = Vec::new();
    for round in 1..=rounds {
        for g in GATEWAYS {
            let r = measure(&exe, &dir.0, &keys, g, round, duration, &udp_rate)?;
            crate::outln!(
                "round {round} {}: TCP {} Mb/s ({} retransmits), UDP {} Mb/s ({}% lost), \
                 gateway CPU {} s{}",
                g.name(),
                num(r.tcp_mbps, 0),
                r.retransmits.map_or("?".into(), |v| v.to_string()),
                num(r.udp_mbps, 0),
                num(r.udp_loss, 1),
                num(r.cpu_s, 2),
                if r.note.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", r.note)
                }
            );
            runs.push(r);
        }
    }

    let mut csv = Csv::new(&[
        "gateway",
        "round",
        "tcp_mbps",
        "tcp_retransmits",
        "udp_mbps",
        "udp_loss_percent",
        "gateway_cpu_s",
        "note",
    ]);
    for r in &runs {
        csv.row(&[
            r.gateway.name().into(),
            r.round.to_string(),
            num(r.tcp_mbps, 1),
            r.retransmits.map(|v| v.to_string()).unwrap_or_default(),
            num(r.udp_mbps, 1),
            num(r.udp_loss, 2),
            num(r.cpu_s, 2),
            csv_cell(&r.note),
        ]);
    }
    let csv_path = c.out.join("wireguard.csv");
    csv.write(&csv_path)?;
    let title = format!(
        "WireGuard gateway, 1,420 B inner packets: medians of {rounds} round(s) of {duration} s"
    );
    figure(&csv_path, &title)?.save(&csv_path, &c.out.join("wireguard.png"))?;
    crate::outln!("\n{}", table(&runs, f64::from(duration)));
    Ok(())
}

/// An iperf3 `-b` rate: digits with an optional K, M or G.
fn check_rate(rate: &str) -> Result<(), String> {
    let digits = rate.trim_end_matches(['K', 'M', 'G', 'k', 'm', 'g']);
    if digits.is_empty()
        || !digits.chars().all(|c| c.is_ascii_digit())
        || rate.len() > digits.len() + 1
    {
        return Err(format!(
            "--udp-rate: `{rate}` is not a rate; give bits per second with an optional \
             K, M or G, e.g. 1G"
        ));
    }
    Ok(())
}

/// A directory of this run for keys and control sockets, removed on drop.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new() -> Result<WorkDir, String> {
        let d = std::env::temp_dir().join(format!("pronto-bench-wireguard-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
        Ok(WorkDir(d))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The key files: the gateway's WireGuard configuration (pronto's
/// `CONFIG`), both private keys (for `wg set`), both public keys.
struct Keys {
    gw_conf: PathBuf,
    gw_key: PathBuf,
    gw_pub: String,
    cl_key: PathBuf,
    cl_pub: String,
}

impl Keys {
    fn make(dir: &Path) -> Result<Keys, String> {
        let gw_priv = wg_genkey()?;
        let gw_pub = wg_pubkey(&gw_priv)?;
        let cl_priv = wg_genkey()?;
        let cl_pub = wg_pubkey(&cl_priv)?;
        let k = Keys {
            gw_conf: dir.join("gateway.conf"),
            gw_key: dir.join("gateway.key"),
            gw_pub,
            cl_key: dir.join("client.key"),
            cl_pub,
        };
        let write = |p: &Path, text: &str| {
            std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display()))
        };
        write(
            &k.gw_conf,
            &format!(
                "[Interface]\nPrivateKey = {gw_priv}\nListenPort = {PORT}\n\n\
                 [Peer]\nPublicKey = {}\nAllowedIPs = {TUNNEL_IP}/32\n",
                k.cl_pub
            ),
        )?;
        write(&k.gw_key, &gw_priv)?;
        write(&k.cl_key, &cl_priv)?;
        Ok(k)
    }
}

fn wg_genkey() -> Result<String, String> {
    let o = Command::new("wg")
        .arg("genkey")
        .output()
        .map_err(|e| format!("cannot run `wg genkey`: {e}"))?;
    let k = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if !o.status.success() || k.is_empty() {
        return Err(format!(
            "`wg genkey` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(k)
}

fn wg_pubkey(private: &str) -> Result<String, String> {
    use std::io::Write as _;
    let mut child = Command::new("wg")
        .arg("pubkey")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run `wg pubkey`: {e}"))?;
    if let Some(mut i) = child.stdin.take() {
        i.write_all(private.as_bytes())
            .map_err(|e| format!("`wg pubkey`: {e}"))?;
    }
    let o = child
        .wait_with_output()
        .map_err(|e| format!("`wg pubkey`: {e}"))?;
    let k = String::from_utf8_lossy(&o.stdout).trim().to_string();
    if !o.status.success() || k.is_empty() {
        return Err(format!(
            "`wg pubkey` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(k)
}

/// Removes wireguard-go's control sockets (`/var/run/wireguard/NAME.sock`,
/// shared by all namespaces and left behind when it is killed) on drop.
struct WgSockets(Vec<String>);

impl Drop for WgSockets {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = std::fs::remove_file(format!("/var/run/wireguard/{n}.sock"));
        }
    }
}

/// One gateway's results in one round; NaN where not measured (`note`
/// says why).
struct Run {
    gateway: Gateway,
    round: u32,
    tcp_mbps: f64,
    retransmits: Option<u64>,
    udp_mbps: f64,
    udp_loss: f64,
    /// CPU seconds the gateway process used during the TCP transfer.
    cpu_s: f64,
    note: String,
}

fn measure(
    exe: &Path,
    dir: &Path,
    keys: &Keys,
    gateway: Gateway,
    round: u32,
    secs: u32,
    udp_rate: &str,
) -> Result<Run, String> {
    let mut r = Run {
        gateway,
        round,
        tcp_mbps: f64::NAN,
        retransmits: None,
        udp_mbps: f64::NAN,
        udp_loss: f64::NAN,
        cpu_s: f64::NAN,
        note: String::new(),
    };
    let result = (|| -> Result<(), String> {
        let pid = std::process::id();
        let tag = format!("{round}{}", &gateway.name()[..1]);
        let (wgc, wgm) = (format!("wgc{pid}{tag}"), format!("wgm{pid}{tag}"));
        // Declared before the topology, so dropped after its processes.
        let _sockets = WgSockets(vec![wgc.clone(), wgm.clone()]);
        let middle = match gateway {
            Gateway::Pronto => Middle::Pronto("RING".into()),
            Gateway::WireguardGo => Middle::Kernel,
        };
        let mut topo = Topology::new(&format!("w{tag}"), &middle)?;
        let [c_ns, m_ns, s_ns] = topo.ns.clone();
        let (c, s, m0, m1) = (
            topo.c.clone(),
            topo.s.clone(),
            topo.m0.clone(),
            topo.m1.clone(),
        );
        netns::ip(&s_ns, &format!("link set {s} mtu 1420"))?;
        netns::ip(
            &s_ns,
            &format!("route add 10.99.0.0/24 via {GW_SERVER_IP} dev {s}"),
        )?;
        netns::run_in(&c_ns, &format!("ethtool -K {c} tx off"))?;
        netns::run_in(&s_ns, &format!("ethtool -K {s} tx off"))?;

        let gw_pid = match gateway {
            Gateway::Pronto => {
                let ctl = dir.join(format!("ctl{tag}.sock"));
                let exe = exe.to_string_lossy().into_owned();
                let defines = [
                    format!("OUT={m0}"),
                    format!("IN={m1}"),
                    format!("OUTMAC={M0_MAC}"),
                    format!("INMAC={M1_MAC}"),
                    format!("OUT4={GW_CLIENT_IP}"),
                    format!("IN4={GW_SERVER_IP}"),
                    format!("PORT={PORT}"),
                    format!("KEYS={}", keys.gw_conf.display()),
                    format!("CTL={}", ctl.display()),
                ];
                let mut args = vec![exe.as_str(), "run", "-e", CONFIG];
                args.extend(defines.iter().map(String::as_str));
                topo.keep(MIDDLE, &args, "pronto run (the WireGuard gateway)", None)?
            }
            Gateway::WireguardGo => {
                let p = start_wireguard_go(&mut topo, MIDDLE, &m_ns, &wgm)?;
                netns::run_in(
                    &m_ns,
                    &format!(
                        "wg set {wgm} private-key {} listen-port {PORT} peer {} allowed-ips \
                         {TUNNEL_IP}/32",
                        keys.gw_key.display(),
                        keys.cl_pub
                    ),
                )?;
                netns::ip(&m_ns, &format!("link set {wgm} up"))?;
                netns::ip(&m_ns, &format!("route add {TUNNEL_IP}/32 dev {wgm}"))?;
                p
            }
        };

        start_wireguard_go(&mut topo, CLIENT, &c_ns, &wgc)?;
        netns::run_in(
            &c_ns,
            &format!(
                "wg set {wgc} private-key {} peer {} endpoint {GW_CLIENT_IP}:{PORT} \
                 allowed-ips 10.201.2.0/24",
                keys.cl_key.display(),
                keys.gw_pub
            ),
        )?;
        netns::ip(&c_ns, &format!("addr add {TUNNEL_IP}/32 dev {wgc}"))?;
        netns::ip(&c_ns, &format!("link set {wgc} up"))?;
        netns::ip(&c_ns, &format!("route replace 10.201.2.0/24 dev {wgc}"))?;
        topo.wait_path(Duration::from_secs(10))?;

        topo.keep(
            SERVER,
            &["iperf3", "-s", "--forceflush"],
            "the iperf3 server",
            Some("Server listening"),
        )?;
        let t = secs.to_string();
        let cpu0 = cpu_seconds(gw_pid);
        let json = iperf3(
            &topo,
            &["-c", SERVER_IP, "-t", &t, "--connect-timeout", "2000", "-J"],
            secs,
        )?;
        r.cpu_s = cpu_seconds(gw_pid) - cpu0;
        let end = &json["end"];
        r.tcp_mbps = end["sum_received"]["bits_per_second"]
            .as_f64()
            .ok_or("iperf3 TCP: no sum_received.bits_per_second in its report")?
            / 1e6;
        r.retransmits = end["sum_sent"]["retransmits"].as_u64();

        let json = iperf3(
            &topo,
            &[
                "-c",
                SERVER_IP,
                "-u",
                "-b",
                udp_rate,
                "-l",
                UDP_PAYLOAD,
                "-t",
                &t,
                "--connect-timeout",
                "2000",
                "-J",
            ],
            secs,
        )?;
        let (mbps, loss) = udp_received(&json["end"])
            .ok_or("iperf3 UDP: no bits_per_second and lost_percent in its report")?;
        r.udp_mbps = mbps;
        r.udp_loss = loss;
        Ok(())
    })();
    if let Err(e) = result {
        netns::interrupted()?;
        r.note = format!("failed: {e}");
    }
    Ok(r)
}

/// Starts `wireguard-go -f NAME` in namespace `which` (`ns`), kept with
/// the topology, and waits (5 s at most) for its interface; its pid.
fn start_wireguard_go(
    topo: &mut Topology,
    which: usize,
    ns: &str,
    name: &str,
) -> Result<u32, String> {
    let pid = topo.keep(which, &["wireguard-go", "-f", name], "wireguard-go", None)?;
    for _ in 0..250 {
        let up = Command::new("ip")
            .args(["-n", ns, "link", "show", name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if up && Path::new(&format!("/var/run/wireguard/{name}.sock")).exists() {
            return Ok(pid);
        }
        netns::sleep(Duration::from_millis(20))?;
    }
    Err(format!("wireguard-go made no interface {name} in 5 s"))
}

/// Runs the iperf3 client with `args` in the client namespace; its `-J`
/// report, or an error with its own.
fn iperf3(topo: &Topology, args: &[&str], secs: u32) -> Result<serde_json::Value, String> {
    let mut all = vec!["iperf3"];
    all.extend_from_slice(args);
    let f = topo
        .spawn(CLIENT, &all, "the iperf3 client")?
        .wait(Duration::from_secs(u64::from(secs) + 15))?;
    let json: serde_json::Value = serde_json::from_str(&f.stdout).map_err(|e| {
        format!(
            "iperf3 gave no report ({e}): {}",
            first_line(&(f.stderr.clone() + &f.stdout))
        )
    })?;
    if let Some(e) = json["error"].as_str() {
        return Err(format!("iperf3: {e}"));
    }
    if !f.status.success() {
        return Err(format!("iperf3 failed: {}", first_line(&f.stderr)));
    }
    Ok(json)
}

/// What a UDP run delivered, in Mb/s, and its loss in percent, from an
/// `iperf3 -J` report's `end`: the receiver's sum where the report has
/// one, else the sender's rate less the loss.
fn udp_received(end: &serde_json::Value) -> Option<(f64, f64)> {
    let sum = &end["sum"];
    let loss = sum["lost_percent"].as_f64()?;
    let bps = match end["sum_received"]["bits_per_second"].as_f64() {
        Some(b) => b,
        None => sum["bits_per_second"].as_f64()? * (100.0 - loss) / 100.0,
    };
    Some((bps / 1e6, loss))
}

/// Medians of one gateway's measured rounds: TCP Mb/s, UDP Mb/s, loss,
/// CPU seconds, and how many rounds counted.
fn medians(runs: &[Run], g: Gateway) -> (f64, f64, f64, f64, usize) {
    let pick = |f: fn(&Run) -> f64| -> f64 {
        let mut v: Vec<f64> = runs
            .iter()
            .filter(|r| r.gateway == g)
            .map(f)
            .filter(|v| v.is_finite())
            .collect();
        if v.is_empty() {
            f64::NAN
        } else {
            median(&mut v)
        }
    };
    let n = runs
        .iter()
        .filter(|r| r.gateway == g && r.tcp_mbps.is_finite())
        .count();
    (
        pick(|r| r.tcp_mbps),
        pick(|r| r.udp_mbps),
        pick(|r| r.udp_loss),
        pick(|r| r.cpu_s),
        n,
    )
}

/// The medians per gateway, and pronto's ratio to wireguard-go.
fn table(runs: &[Run], secs: f64) -> String {
    let (wt, wu, ..) = medians(runs, Gateway::WireguardGo);
    let ratio = |a: f64, b: f64| {
        if a.is_finite() && b > 0.0 {
            format!("{:.2}", a / b)
        } else {
            String::new()
        }
    };
    let rows: Vec<Vec<String>> = GATEWAYS
        .iter()
        .map(|&g| {
            let (tcp, udp, loss, cpu, n) = medians(runs, g);
            vec![
                g.name().into(),
                n.to_string(),
                num(tcp, 0),
                ratio(tcp, wt),
                num(udp, 0),
                ratio(udp, wu),
                num(loss, 1),
                num(cpu / secs, 2),
            ]
        })
        .collect();
    markdown(
        &[
            "gateway",
            "rounds",
            "TCP Mb/s",
            "vs wireguard-go",
            "UDP Mb/s (received)",
            "vs wireguard-go",
            "UDP loss %",
            "gateway CPU (cores, TCP)",
        ],
        &rows,
    )
}

/// Bars of the medians: TCP and UDP, one bar per gateway each.
fn figure(csv: &Path, title: &str) -> Result<Figure, String> {
    let t = Table::read(csv)?;
    let (gw, tcp, udp) = (
        t.column("gateway"),
        t.column("tcp_mbps"),
        t.column("udp_mbps"),
    );
    let med = |g: &str, col| -> f64 {
        let mut v: Vec<f64> = t
            .rows()
            .iter()
            .filter(|r| Table::cell(r, gw) == Some(g))
            .filter_map(|r| Table::number(r, col))
            .collect();
        if v.is_empty() {
            f64::NAN
        } else {
            median(&mut v)
        }
    };
    Ok(Figure {
        title: title.to_string(),
        size: (770, 462),
        charts: vec![Chart::Bar(BarChart {
            title: String::new(),
            categories: vec!["TCP".into(), "UDP (received)".into()],
            y_label: "iperf3 through the gateway (Mb/s)".into(),
            groups: GATEWAYS
                .iter()
                .map(|g| Bars {
                    label: g.name().into(),
                    values: vec![med(g.name(), tcp), med(g.name(), udp)],
                })
                .collect(),
        })],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(g: Gateway, round: u32, tcp: f64, udp: f64) -> Run {
        Run {
            gateway: g,
            round,
            tcp_mbps: tcp,
            retransmits: Some(0),
            udp_mbps: udp,
            udp_loss: 1.0,
            cpu_s: 2.0,
            note: String::new(),
        }
    }

    #[test]
    fn table_gives_medians_and_ratios() {
        let runs = [
            run(Gateway::Pronto, 1, 700.0, 600.0),
            run(Gateway::WireguardGo, 1, 1000.0, 800.0),
            run(Gateway::Pronto, 2, 900.0, f64::NAN),
            run(Gateway::WireguardGo, 2, 1000.0, 1000.0),
            run(Gateway::Pronto, 3, 800.0, 700.0),
            run(Gateway::WireguardGo, 3, f64::NAN, f64::NAN),
        ];
        let t = table(&runs, 4.0);
        assert!(
            t.contains("| pronto | 3 | 800 | 0.80 | 650 | 0.72 | 1.0 | 0.50 |"),
            "{t}"
        );
        assert!(
            t.contains("| wireguard-go | 2 | 1000 | 1.00 | 900 | 1.00 | 1.0 | 0.50 |"),
            "{t}"
        );
    }

    #[test]
    fn udp_report_is_read() {
        let with_received: serde_json::Value = serde_json::from_str(
            r#"{"sum": {"bits_per_second": 1e9, "lost_percent": 10.0},
                "sum_received": {"bits_per_second": 8.5e8}}"#,
        )
        .expect("json");
        assert_eq!(udp_received(&with_received), Some((850.0, 10.0)));
        let sum_only: serde_json::Value =
            serde_json::from_str(r#"{"sum": {"bits_per_second": 1e9, "lost_percent": 25.0}}"#)
                .expect("json");
        assert_eq!(udp_received(&sum_only), Some((750.0, 25.0)));
        assert_eq!(udp_received(&serde_json::json!({})), None);
    }

    #[test]
    fn rates_are_checked() {
        for ok in ["1G", "500M", "800000", "10k"] {
            assert!(check_rate(ok).is_ok(), "{ok}");
        }
        for bad in ["", "G", "1GG", "1.5G", "-1"] {
            let e = check_rate(bad).expect_err(bad);
            assert!(e.contains("--udp-rate"), "{e}");
        }
    }

    #[test]
    fn figure_has_median_bars_per_gateway() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let csv = dir.path().join("wireguard.csv");
        std::fs::write(
            &csv,
            "gateway,round,tcp_mbps,tcp_retransmits,udp_mbps,udp_loss_percent,gateway_cpu_s,note\n\
             pronto,1,700,0,600,1,2,\n\
             wireguard-go,1,1000,3,900,0.5,3,\n\
             pronto,2,900,1,,,,failed: x\n\
             wireguard-go,2,1200,0,1100,0.5,3,\n",
        )
        .expect("CSV written");
        let fig = figure(&csv, "WG").expect("read");
        let [Chart::Bar(b)] = fig.charts.as_slice() else {
            panic!("one bar chart");
        };
        assert_eq!(b.categories, ["TCP", "UDP (received)"]);
        assert_eq!(b.groups[0].label, "pronto");
        assert_eq!(b.groups[0].values, [800.0, 600.0]);
        assert_eq!(b.groups[1].label, "wireguard-go");
        assert_eq!(b.groups[1].values, [1100.0, 1000.0]);
        let png = dir.path().join("wireguard.png");
        fig.save(&csv, &png).expect("drawn");
        assert!(png.exists());
    }

    #[test]
    fn built_in_config_takes_the_experiment_s_parameters() {
        for p in [
            "$OUT ", "$IN ", "$OUTMAC ", "$INMAC ", "$OUT4 ", "$IN4 ", "$PORT ", "$KEYS ", "$CTL ",
        ] {
            assert!(CONFIG.contains(p), "examples/wireguard.click defines {p}");
        }
    }
}
