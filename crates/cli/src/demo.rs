//! `pronto demo`: the main job on its default. Starts the daemon in this
//! process (scratch store and socket), creates three tenants' middleboxes
//! on the switch — a firewall, a NAT and a load balancer, each in its own
//! sandbox — drives generated traffic through them for a few seconds with
//! a live display, prints per-instance rates, boot times and memory, and
//! cleans up. No flags, no files, no second terminal.

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
    /// Share of those frames it lets through.
    pass: f64,
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
            pass: 2.0 / 3.0,
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
            pass: 1.0,
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
            pass: 1.0,
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
    println!("\ncreating 3 tenants' middleboxes, each in its own sandbox:");
    for b in &boxes {
        let spec = InstanceSpec {
            name: b.name.into(),
            tenant: b.tenant.into(),
            config: b.config.clone(),
            memory: Some(32 << 20),
            cpu: None,
            pids: None,
            cpus: None,
            interfaces: vec![
                IfaceSpec {
                    name: "eth0".into(),
                    mac: Some(mac_str(&b.mac_in)),
                },
                IfaceSpec {
                    name: "eth1".into(),
                    mac: Some(mac_str(&b.mac_out)),
                },
            ],
            created_unix_ms: 0,
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
    println!("\ndriving traffic for {secs:.0} s (64-byte frames, as fast as one core sends):");
    let dur = Duration::from_secs_f64(secs);
    let start = Instant::now();
    let mut sent = [0u64; 3];
    let mut got = [0u64; 3];
    let mut last_print = Instant::now();
    let mut k = 0usize;
    let mut moved = [Instant::now(); 3];
    let mut seen = [0u64; 3];
    // Frames given up as lost on the way (they never come back).
    let mut lost = [0f64; 3];
    while start.elapsed() < dur {
        for i in 0..3 {
            if got[i] != seen[i] {
                seen[i] = got[i];
                moved[i] = Instant::now();
            }
        }
        for (i, fs) in frames.iter().enumerate() {
            // Never far ahead of what came back: each middlebox sets its
            // own pace (no frame is lost for lack of a buffer). Frames
            // lost on the way would keep its window shut for good: after
            // 20 ms without progress, what is still out counts as lost.
            let back = got[i] as f64 / boxes[i].pass;
            if moved[i].elapsed() >= Duration::from_millis(20) {
                lost[i] = sent[i] as f64 - back;
                moved[i] = Instant::now();
            }
            if sent[i] as f64 - lost[i] > back + 128.0 {
                continue;
            }
            let n = gen.send_iter(
                fs[k % 64..]
                    .iter()
                    .chain(fs[..k % 64].iter())
                    .take(32)
                    .map(|f| &f[..]),
            );
            sent[i] += n as u64;
        }
        k += 7;
        sink.recv(|f| {
            if f.len() >= 12 {
                let idx = match f[10] {
                    1 => 0,
                    2 => 1,
                    3 => 2,
                    _ => return,
                };
                got[idx] += 1;
            }
        });
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
    std::thread::sleep(Duration::from_millis(100));
    sink.recv(|f| {
        if f.len() >= 12 && (1..=3).contains(&f[10]) {
            got[f[10] as usize - 1] += 1;
        }
    });
    eprintln!();
    println!(
        "\n{:<18} {:>10} {:>10} {:>10} {:>9} {:>9}  element counters",
        "instance", "sent", "out", "kpps out", "boot ms", "PSS MB"
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
        let rx = m.read(b.tenant, b.name, "rx.count").unwrap_or_default();
        let tx = m.read(b.tenant, b.name, "tx.count").unwrap_or_default();
        println!(
            "{:<18} {:>10} {:>10} {:>10.0} {:>9.1} {:>9.2}  rx={} tx={} switch drops={}",
            format!("{}/{}", b.tenant, b.name),
            sent[i],
            got[i],
            got[i] as f64 / t / 1e3,
            v.boot_ms.unwrap_or(0.0),
            v.pss_bytes.unwrap_or(0) as f64 / 1e6,
            rx.trim(),
            tx.trim(),
            drops
        );
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

struct Cleanup(std::path::PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
