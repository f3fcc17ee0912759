//! `pronto demo`: the main job on its default. Starts the daemon in this
//! process (scratch store and socket), creates three tenants' middleboxes
//! on the switch — a firewall, a NAT and a load balancer, each in its own
//! sandbox — drives generated traffic through them for a few seconds with
//! a live display (the same load offered to each tenant, more than the
//! machine carries), prints per-instance rates, CPU, boot times and
//! memory, and whether the tenants got equal shares (each within ±10% of
//! the mean), and cleans up. No flags, no files, no second terminal.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pronto_daemon::api::Daemon;
use pronto_daemon::store::{IfaceSpec, InstanceSpec};
use pronto_switch::Peer;

/// The sink's MAC: every middlebox sends what it lets through here.
const SINK_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];
/// The generator's MAC.
const GEN_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xfd];

struct Box {
    tenant: &'static str,
    name: &'static str,
    what: &'static str,
    /// eth0's MAC (traffic in) and eth1's (traffic out).
    mac_in: [u8; 6],
    mac_out: [u8; 6],
    config: String,
    /// Frames the generator sends it: (dst IP, protocol, dst port).
    flows: &'static [([u8; 4], u8, u16)],
}

fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn boxes() -> Vec<Box> {
    let tail = |out: &[u8; 6]| {
        format!(
            "tx :: Counter -> EtherEncap(0x0800, {}, {}) -> Queue(1024) -> ToDevice(eth1, BURST 32);",
            mac_str(out),
            mac_str(&SINK_MAC)
        )
    };
    let head = "FromDevice(eth0, BURST 32) -> rx :: Counter -> Classifier(12/0800) -> Strip(14) \
                -> CheckIPHeader";
    let fw_out = [2, 0, 0, 0, 1, 2];
    let nat_out = [2, 0, 0, 0, 2, 2];
    let lb_out = [2, 0, 0, 0, 3, 2];
    vec![
        Box {
            tenant: "acme",
            name: "firewall",
            what: "IPFilter: DNS and web allowed, the rest denied",
            mac_in: [2, 0, 0, 0, 1, 1],
            mac_out: fw_out,
            config: format!(
                "{head} -> fw :: IPFilter(allow udp dst port 53, allow tcp dst port 80 or tcp dst \
                 port 443, deny all)\n  -> {}\n",
                tail(&fw_out)
            ),
            flows: &[
                ([8, 8, 8, 8], 17, 53),
                ([93, 184, 216, 34], 6, 443),
                ([10, 9, 9, 9], 6, 22),
            ],
        },
        Box {
            tenant: "globex",
            name: "nat",
            what: "IPRewriter: 10.0.0.0/24 behind 198.51.100.1",
            mac_in: [2, 0, 0, 0, 2, 1],
            mac_out: nat_out,
            config: format!(
                "{head} -> rw :: IPRewriter(pattern 198.51.100.1 1024-65535# - - 0 0)\n  -> {}\n",
                tail(&nat_out)
            ),
            flows: &[([203, 0, 113, 7], 17, 4500), ([203, 0, 113, 8], 6, 80)],
        },
        Box {
            tenant: "initech",
            name: "lb",
            what: "Maglev load balancer: 192.0.2.10:80 over three servers",
            mac_in: [2, 0, 0, 0, 3, 1],
            mac_out: lb_out,
            config: format!(
                "mg :: MaglevIPMapper(web1 - - 10.1.0.1 80 0 0, web2 - - 10.1.0.2 80 0 0, web3 - - \
                 10.1.0.3 80 0 0);\n{head} -> vip :: IPClassifier(dst host 192.0.2.10 and tcp dst \
                 port 80, -);\nvip[1] -> Discard;\nvip[0] -> rw :: IPRewriter(mg)\n  -> {}\n",
                tail(&lb_out)
            ),
            flows: &[([192, 0, 2, 10], 6, 80)],
        },
    ]
}

/// An Ethernet + IPv4 + UDP/TCP frame of 64 bytes (plus FCS room not
/// sent), source port `sport`.
fn frame(dst_mac: &[u8; 6], src_ip: [u8; 4], flow: ([u8; 4], u8, u16), sport: u16) -> Vec<u8> {
    let (dst_ip, proto, dport) = flow;
    let l4 = if proto == 6 { 20 } else { 8 };
    let total = 20 + l4 + 18;
    let mut f = vec![0u8; 14 + total];
    f[..6].copy_from_slice(dst_mac);
    f[6..12].copy_from_slice(&GEN_MAC);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&src_ip);
    ip[16..20].copy_from_slice(&dst_ip);
    let sum = pronto_packet::wire::checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let l = &mut f[34..];
    l[..2].copy_from_slice(&sport.to_be_bytes());
    l[2..4].copy_from_slice(&dport.to_be_bytes());
    if proto == 6 {
        l[12] = 0x50;
        l[13] = 0x02; // SYN
    } else {
        l[4..6].copy_from_slice(&((8 + 18) as u16).to_be_bytes());
    }
    f
}

/// Runs `pronto demo`.
pub fn main(args: &[String]) -> ExitCode {
    let secs = match args {
        [] => 4.0,
        [f, v] if f == "--seconds" => match v.parse::<f64>() {
            Ok(s) if (0.5..=600.0).contains(&s) => s,
            _ => {
                eprintln!("pronto demo: --seconds: expected 0.5 to 600, found `{v}`");
                return ExitCode::from(1);
            }
        },
        _ => {
            eprintln!("usage: pronto demo [--seconds S]   (default 4)");
            return ExitCode::from(1);
        }
    };
    match run(secs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pronto demo: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(secs: f64) -> Result<(), String> {
    if !rustix::process::geteuid().is_root() {
        return Err("the demo starts sandboxes (namespaces, cgroups): run it as root".into());
    }
    let dir = std::env::temp_dir().join(format!("pronto-demo-{}", std::process::id()));
    let _cleanup = Cleanup(dir.clone());
    let mut opts = crate::daemon::default_options()?;
    opts.socket = dir.join("prontod.sock");
    opts.state_dir = dir.join("state");
    opts.listen = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    opts.manager.geometry = pronto_switch::Geometry::new(512, 256).map_err(|e| e.to_string())?;
    let place =
        Placement::of(&pronto_daemon::manager::cpus::daemon_cpus().map_err(|e| e.to_string())?);
    opts.manager.switch_cpu = place.switch;
    pronto_switch::raise_fd_limit()
        .map_err(|e| format!("cannot raise the open-file limit: {e}"))?;
    let t0 = Instant::now();
    let d = Daemon::start(opts)?;
    let m = d.manager().clone();
    println!(
        "prontod started in {:.1} ms (API on {} and http://{})",
        t0.elapsed().as_secs_f64() * 1e3,
        d.socket.display(),
        d.tcp.map(|a| a.to_string()).unwrap_or_default()
    );
    let boxes = boxes();
    // The generator's port and the sink's, in this process.
    let (gen_id, gen_shm) = m.attach_port("demo/generator").map_err(|e| e.to_string())?;
    let (sink_id, sink_shm) = m.attach_port("demo/sink").map_err(|e| e.to_string())?;
    let _ = m.switch().add_static(SINK_MAC, sink_id);
    let _ = m.switch().add_static(GEN_MAC, gen_id);
    let mut gen = Peer::new(gen_shm, 16).map_err(|e| e.to_string())?;
    let mut sink = Peer::new(sink_shm, 512).map_err(|e| e.to_string())?;
    println!("{}", place.describe());
    println!("\ncreating 3 tenants' middleboxes, each in its own sandbox:");
    for b in &boxes {
        let spec = InstanceSpec {
            memory: Some(32 << 20),
            interfaces: vec![
                IfaceSpec {
                    name: "eth0".into(),
                    mac: Some(mac_str(&b.mac_in)),
                    ip: None,
                    broadcast: None,
                },
                IfaceSpec {
                    name: "eth1".into(),
                    mac: Some(mac_str(&b.mac_out)),
                    ip: None,
                    broadcast: None,
                },
            ],
            cpus: place.sandboxes.clone(),
            ..InstanceSpec::new(b.tenant, b.name, &b.config)
        };
        ensure_tenant(&d, b.tenant)?;
        let v = m
            .create(spec)
            .map_err(|e| format!("creating {}/{}: {e}", b.tenant, b.name))?;
        println!(
            "  {:<8} {:<9} {:<55} running in {:.1} ms",
            b.tenant,
            b.name,
            b.what,
            v.boot_ms.unwrap_or(0.0)
        );
    }
    // Frames: each middlebox's flows, source ports varied.
    let mut frames: Vec<Vec<Vec<u8>>> = Vec::new();
    for b in &boxes {
        let mut fs = Vec::new();
        for i in 0..64u16 {
            let flow = b.flows[i as usize % b.flows.len()];
            fs.push(frame(
                &b.mac_in,
                [10, 0, 0, 2 + (i % 8) as u8],
                flow,
                10_000 + i,
            ));
        }
        frames.push(fs);
    }
    println!(
        "\ndriving traffic for {secs:.0} s: 64-byte frames, the same offered to each tenant, \
         more than the machine can carry (overload):"
    );
    if let Some(c) = place.generator {
        pronto_switch::pin_current_thread(c)
            .map_err(|e| format!("pinning the generator to CPU {c}: {e}"))?;
    }
    let pids: Vec<Option<u32>> = boxes
        .iter()
        .map(|b| m.view(b.tenant, b.name, false).ok().and_then(|v| v.pid))
        .collect();
    let cpu0: Vec<Option<f64>> = pids.iter().map(|p| p.and_then(cpu_seconds)).collect();
    let tx0: Vec<u64> = boxes.iter().map(|b| counter(&m, b, "tx.count")).collect();
    let rx0: Vec<u64> = boxes.iter().map(|b| counter(&m, b, "rx.count")).collect();
    let dur = Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut sent = [0u64; 3];
    let mut got = [0u64; 3];
    let mut last_print = Instant::now();
    let mut k = 0usize;
    let mut first = 0usize;
    while start.elapsed() < dur {
        // Open loop: each tenant is offered the same frames, in turn (the
        // first of the turn rotating), as fast as the generator's port
        // takes them. What a middlebox cannot take in, the switch drops and
        // counts on its port: the overload each tenant sees is the same,
        // and what each gets through is the share the platform gives it.
        for j in 0..3 {
            let i = (first + j) % 3;
            let fs = &frames[i];
            let n = gen.send_iter(
                fs[k % 64..]
                    .iter()
                    .chain(fs[..k % 64].iter())
                    .take(32)
                    .map(|f| &f[..]),
            );
            sent[i] += n as u64;
        }
        first = (first + 1) % 3;
        k += 7;
        while sink.recv(|f| {
            if f.len() >= 12 && (1..=3).contains(&f[10]) {
                got[f[10] as usize - 1] += 1;
            }
        }) > 0
        {}
        if last_print.elapsed() >= Duration::from_millis(250) {
            last_print = Instant::now();
            let t = start.elapsed().as_secs_f64();
            eprint!(
                "\r  {:>4.1} s  sent {:>9}  through firewall {:>9}  nat {:>9}  lb {:>9}   ",
                t,
                sent.iter().sum::<u64>(),
                got[0],
                got[1],
                got[2]
            );
        }
    }
    let t = start.elapsed().as_secs_f64();
    // Out before in: a frame is counted in before it is counted out, so
    // read in this order no frame is out that is not in.
    let tx: Vec<u64> = boxes
        .iter()
        .zip(&tx0)
        .map(|(b, t0)| counter(&m, b, "tx.count").saturating_sub(*t0))
        .collect();
    let rx: Vec<u64> = boxes
        .iter()
        .zip(&rx0)
        .map(|(b, r0)| counter(&m, b, "rx.count").saturating_sub(*r0))
        .collect();
    let cpu: Vec<Option<f64>> = pids
        .iter()
        .zip(&cpu0)
        .map(|(p, c0)| Some(p.and_then(cpu_seconds)? - (*c0)?))
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    while sink.recv(|f| {
        if f.len() >= 12 && (1..=3).contains(&f[10]) {
            got[f[10] as usize - 1] += 1;
        }
    }) > 0
    {}
    eprintln!();
    println!(
        "\n{:<18} {:>11} {:>10} {:>10} {:>8} {:>8} {:>9}  element counters",
        "instance", "offered kpps", "in kpps", "out kpps", "CPU %", "boot ms", "PSS MB"
    );
    for (i, b) in boxes.iter().enumerate() {
        let v = m.view(b.tenant, b.name, true).map_err(|e| e.to_string())?;
        let prefix = format!("{}/{}/", b.tenant, b.name);
        let drops: u64 = m
            .ports(Some(b.tenant))
            .iter()
            .filter(|(_, n, _)| n.starts_with(&prefix))
            .map(|(_, _, c)| c.drops())
            .sum();
        println!(
            "{:<18} {:>11.0} {:>10.0} {:>10.0} {:>8} {:>8.1} {:>9.2}  in={} out={} dropped at the switch (ring full)={}",
            format!("{}/{}", b.tenant, b.name),
            sent[i] as f64 / t / 1e3,
            rx[i] as f64 / t / 1e3,
            got[i] as f64 / t / 1e3,
            cpu[i].map_or("-".to_string(), |c| format!("{:.0}", c / t * 100.0)),
            v.boot_ms.unwrap_or(0.0),
            v.pss_bytes.unwrap_or(0) as f64 / 1e6,
            rx[i],
            tx[i],
            drops
        );
    }
    let rates: Vec<f64> = rx.iter().map(|&r| r as f64).collect();
    println!(
        "\nfair shares (equal tenants, goal: each within ±10% of the mean): frames taken in {}",
        spread(&rates)
    );
    if cpu.iter().all(Option::is_some) {
        // Counted in 10 ms ticks: a few percent of a 4-second run is a
        // tick or two, so this line is shown, not judged.
        let c: Vec<f64> = cpu.iter().flatten().copied().collect();
        let mean = c.iter().sum::<f64>() / c.len() as f64;
        if mean > 0.0 {
            println!(
                "{:>83} {} of the mean",
                "CPU time",
                c.iter()
                    .map(|x| format!("{:+.0}%", (x / mean - 1.0) * 100.0))
                    .collect::<Vec<_>>()
                    .join(" / ")
            );
        }
    }
    println!("\nremoving the instances and stopping the daemon");
    for b in &boxes {
        let _ = m.remove(b.tenant, b.name);
    }
    m.detach_port(gen_id);
    m.detach_port(sink_id);
    d.shutdown();
    Ok(())
}

/// Where the demo's threads run. The generator stands in for a NIC,
/// which takes no CPU from the host: it gets a CPU of its own, and the
/// switch and the sandboxes share the others on equal terms. Left to the
/// kernel, a sandbox is sometimes placed beside the generator, away from
/// the switch that fills its ring; each frame it takes then crosses
/// between cores, costs it about 1.6 times the CPU of its neighbours'
/// (measured: 618 against 321 ns a frame), and its share falls 10-15%
/// below theirs.
struct Placement {
    generator: Option<usize>,
    switch: Option<usize>,
    sandboxes: Option<Vec<usize>>,
}

impl Placement {
    /// On `cpus` (the CPUs this process may use): the last for the
    /// generator, the first for the switch, all but the generator's for
    /// the sandboxes. On one CPU, nothing is pinned.
    fn of(cpus: &[usize]) -> Placement {
        match cpus {
            [first, .., last] => Placement {
                generator: Some(*last),
                switch: Some(*first),
                sandboxes: Some(cpus[..cpus.len() - 1].to_vec()),
            },
            _ => Placement {
                generator: None,
                switch: None,
                sandboxes: None,
            },
        }
    }

    fn describe(&self) -> String {
        match (&self.generator, &self.switch, &self.sandboxes) {
            (Some(g), Some(s), Some(b)) => format!(
                "placement: the generator (standing in for a NIC) on CPU {g}, the switch on CPU \
                 {s}, the sandboxes on CPU {}",
                pronto_daemon::manager::cpus::cpu_list(b)
            ),
            _ => "placement: one CPU, shared by the generator, the switch and the sandboxes".into(),
        }
    }
}

fn ensure_tenant(d: &Daemon, name: &str) -> Result<(), String> {
    let token = pronto_daemon::api::new_token()?;
    let store = d.manager().store();
    if !store
        .tenants()
        .map_err(|e| e.to_string())?
        .iter()
        .any(|(n, _)| n == name)
    {
        store
            .put_tenant(name, &pronto_daemon::api::digest(&token))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// An instance's counter handler, 0 when it cannot be read.
fn counter(m: &pronto_daemon::manager::Manager, b: &Box, handler: &str) -> u64 {
    m.read(b.tenant, b.name, handler)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// CPU time (user + system, every thread) a process has used, from
/// `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    // USER_HZ, in which /proc reports times, is 100 on every Linux.
    Some(ticks / 100.0)
}

/// Each value's distance from the mean, and whether all are within 10%.
fn spread(v: &[f64]) -> String {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    if mean <= 0.0 {
        return "(nothing measured)".into();
    }
    let d: Vec<f64> = v.iter().map(|x| (x / mean - 1.0) * 100.0).collect();
    let worst = d.iter().fold(0f64, |a, x| a.max(x.abs()));
    format!(
        "{} of the mean: {}",
        d.iter()
            .map(|x| format!("{x:+.0}%"))
            .collect::<Vec<_>>()
            .join(" / "),
        if worst <= 10.0 {
            "within ±10%"
        } else {
            "NOT within ±10%"
        }
    )
}

struct Cleanup(std::path::PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_gets_a_cpu_of_its_own_and_the_rest_share_the_others() {
        let p = Placement::of(&[0, 1]);
        assert_eq!(
            (p.generator, p.switch, p.sandboxes.clone()),
            (Some(1), Some(0), Some(vec![0]))
        );
        assert_eq!(
            p.describe(),
            "placement: the generator (standing in for a NIC) on CPU 1, the switch on CPU 0, \
             the sandboxes on CPU 0"
        );
        let p = Placement::of(&[2, 3, 4, 5]);
        assert_eq!(
            (p.generator, p.switch, p.sandboxes.clone()),
            (Some(5), Some(2), Some(vec![2, 3, 4]))
        );
        assert!(p.describe().ends_with("the sandboxes on CPU 2-4"));
        let p = Placement::of(&[7]);
        assert_eq!((p.generator, p.switch, p.sandboxes), (None, None, None));
    }
}
