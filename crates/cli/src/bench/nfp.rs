//! `pronto bench nfp`: the NFP paper's evaluation, on sandboxed instances
//! on the daemon's switch. Chains of 2 to 5 firewalls deployed as
//! `pronto chain apply` deploys them, once in sequence (`order` rules: a
//! firewall drops, so its successor must not see what it dropped) and once
//! as one parallel group (`priority` rules, the paper's way of asking for
//! parallel firewalls); for each, the one-way latency of single packets
//! (p50, p99) and the forwarding rate under load, from a generator port to
//! a sink port attached to the same switch.

use pronto_policy::deploy::NfBody;
use std::time::{Duration, Instant};

use pronto_switch::Peer;

use super::{plot, Common, Csv, PlotSpec};

/// The firewall NF; with `work` > 0 it also spends that much work on each
/// packet (`WorkPackage(W work)`: the NF's own processing cost).
fn fw(work: u32) -> String {
    let cost = if work > 0 {
        format!(" -> WorkPackage(W {work})")
    } else {
        String::new()
    };
    format!(
        "input -> Strip(14) -> CheckIPHeader -> f :: IPFilter(allow udp, deny all){cost} \
         -> Unstrip(14) -> output;"
    )
}

/// Microseconds `WorkPackage(W work)` spends on a packet here, in one
/// process (the median of five runs of 2,000 packets).
fn work_cost_us(work: u32) -> Result<f64, String> {
    let mut v = Vec::new();
    for _ in 0..5 {
        let mut r = super::gen::build(&format!(
            "InfiniteSource(LIMIT 2000, BURST 1, STOP true) -> WorkPackage(W {work}) -> Discard;"
        ))?;
        let t0 = Instant::now();
        r.run()?;
        v.push(t0.elapsed().as_secs_f64() * 1e6 / 2000.0);
    }
    Ok(pct(&mut v, 0.5))
}
const SINK: [u8; 6] = [2, 0, 0, 0, 0, 0xfe];

fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// A UDP frame of `size` bytes to `dst`; its payload carries a sequence
/// number and a send time (written per frame).
fn frame(dst: [u8; 6], size: usize) -> Vec<u8> {
    super::daemon::udp_frame(dst, size)
}

/// The policy of `k` firewalls, in sequence or as one parallel group.
fn policy(k: usize, parallel: bool) -> String {
    let mut p = String::new();
    for i in 1..=k {
        p.push_str(&format!("nf fw{i} = click(\"fw.click\")\n"));
    }
    for i in 1..k {
        if parallel {
            p.push_str(&format!("priority(fw{i} > fw{})\n", i + 1));
        } else {
            p.push_str(&format!("order(fw{i}, before, fw{})\n", i + 1));
        }
    }
    p
}

struct Run {
    p50_us: f64,
    p99_us: f64,
    kpps: f64,
    hops: usize,
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// What to deploy: NF files, a policy, and the frames to send.
struct Setup<'a> {
    /// `(file name, compound body)` of the NFs the policy names.
    files: &'a [(&'a str, &'a str)],
    policy: String,
    /// Frames from the generator, given the entry's MAC.
    frame: &'a dyn Fn([u8; 6]) -> Vec<u8>,
    /// Where the sequence number and send time go in a sent frame (they
    /// are read at byte 42 of the frame that leaves the chain).
    stamp_at: usize,
    /// A parallel group must come out of the policy.
    parallel: bool,
    /// Pin the NF instances to the CPUs in turn.
    pin: bool,
    /// Frames in flight for the rate: few enough that a branch's backlog
    /// stays well inside the merger's bounded wait (else versions
    /// arrive after their packet was settled, and count as losses).
    in_flight: u64,
}

fn measure(
    s: &super::daemon::Scratch,
    dir: &std::path::Path,
    tag: &str,
    chain: u8,
    setup: &Setup<'_>,
    dur: Duration,
) -> Result<Run, String> {
    let m = s.d().manager().clone();
    for (name, body) in setup.files {
        std::fs::write(dir.join(name), body).map_err(|e| e.to_string())?;
    }
    let path = dir.join(format!("{tag}.nfp"));
    std::fs::write(&path, &setup.policy).map_err(|e| e.to_string())?;
    let pol = pronto_policy::load(&path).map_err(|e| e.to_string())?;
    let plan = pol.compile().map_err(|e| e.to_string())?;
    // The baseline: the same NFs one after the other, whatever the
    // analysis would run side by side.
    let plan = if setup.parallel {
        plan
    } else {
        pronto_policy::emit::sequential_plan(&plan)
    };
    let (plan, notes) = pronto_policy::deploy::mergeable(&plan);
    if setup.parallel && (plan.graph.groups().is_empty() || !notes.is_empty()) {
        return Err(format!(
            "{tag}: the policy compiled to no parallel group the mergers can join{}",
            notes.iter().map(|n| format!("; {n}")).collect::<String>()
        ));
    }
    let bodies: Vec<String> = plan
        .nfs
        .iter()
        .map(|nf| match pol.nf(&nf.name).map(|n| &n.source) {
            Some(pronto_policy::NfSource::Click { path }) => setup
                .files
                .iter()
                .find(|(f, _)| f == path)
                .map(|(_, b)| b.to_string())
                .ok_or_else(|| format!("{tag}: no body for {path}")),
            _ => Err(format!("{tag}: NF {} is not a click(...) NF", nf.name)),
        })
        .collect::<Result<_, _>>()?;
    let bodies: Vec<NfBody> = bodies.into_iter().map(NfBody::Compound).collect();
    let insts = pronto_policy::deploy::instances(
        &plan,
        &bodies,
        &pronto_policy::deploy::Deploy {
            prefix: &format!("nfp{chain}"),
            chain,
            out_mac: &mac_str(&SINK),
            mergers: 1,
            merge_timeout: if setup.in_flight < 1024 {
                "50ms"
            } else {
                "10ms"
            },
        },
    )?;
    // NF instances on the CPUs in turn (the paper gives each NF its own
    // core): the scheduler would often put branches woken together on
    // the waking CPU, one after the other.
    let allowed = rustix::thread::sched_getaffinity(None)
        .map_err(|e| format!("reading this process's CPUs: {e}"))?;
    let mine: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| allowed.is_set(c))
        .collect();
    let mut next_cpu = mine.iter().copied().cycle();
    let (gen_id, gen_shm) = m.attach_port("bench/gen").map_err(|e| e.to_string())?;
    let (sink_id, sink_shm) = m.attach_port("bench/sink").map_err(|e| e.to_string())?;
    let _ = m.switch().add_static(SINK, sink_id);
    let cpus: Vec<Option<usize>> = insts
        .iter()
        .map(|i| {
            (setup.pin && i.role.starts_with("nf "))
                .then(|| next_cpu.next())
                .flatten()
        })
        .collect();
    // The entry last, so that nothing enters before every hop exists.
    for (i, cpu) in insts.iter().zip(&cpus).rev() {
        let body = crate::chain::create_body(
            i,
            crate::chain::Placing {
                cpu: *cpu,
                ..Default::default()
            },
        );
        s.call(
            "POST",
            "/v1/instances",
            Some(("application/json", body.to_string().as_bytes())),
        )?;
    }
    let entry = pronto_lang::args::parse_ether(&insts[0].mac)?;
    let mut gen = Peer::new(gen_shm, 0).map_err(|e| e.to_string())?;
    let mut sink = Peer::new(sink_shm, 1024).map_err(|e| e.to_string())?;
    let t_base = Instant::now();
    // Latency: one frame at a time, each waited for.
    let mut f = (setup.frame)(entry);
    let at = setup.stamp_at;
    let mut lat = Vec::new();
    for seq in 0..600u32 {
        f[at..at + 4].copy_from_slice(&seq.to_be_bytes());
        let sent = t_base.elapsed().as_nanos() as u64;
        f[at + 4..at + 12].copy_from_slice(&sent.to_be_bytes());
        gen.send(&[&f]);
        let t0 = Instant::now();
        let mut got = false;
        while !got && t0.elapsed() < Duration::from_millis(50) {
            // Sleep until the switch delivers, rather than spin: a
            // spinning receiver would hold one of the machine's CPUs that
            // the parallel branches need.
            sink.wait(Some(Duration::from_millis(5)));
            sink.recv(|r| {
                if r.len() >= 54 && r[42..46] == seq.to_be_bytes() {
                    let at = u64::from_be_bytes(r[46..54].try_into().unwrap_or([0; 8]));
                    let now = t_base.elapsed().as_nanos() as u64;
                    lat.push(now.saturating_sub(at) as f64 / 1e3);
                    got = true;
                }
            });
        }
        // Spaced, as single packets: every node goes back to sleep.
        std::thread::sleep(Duration::from_micros(500));
    }
    // Warm-up frames (boots, ARP-free paths) do not count.
    let mut lat: Vec<f64> = lat.into_iter().skip(100).collect();
    if lat.len() < 100 {
        return Err(format!(
            "{tag}: only {} of 500 single frames came through",
            lat.len()
        ));
    }
    let (p50, p99) = (pct(&mut lat, 0.5), pct(&mut lat, 0.99));
    // Rate: at most `in_flight` frames in flight.
    let f = (setup.frame)(entry);
    gen.prefill(&f);
    let len = f.len() as u16;
    let stall = if setup.in_flight < 1024 {
        Duration::from_millis(50)
    } else {
        Duration::from_millis(2)
    };
    super::daemon::drive(&mut gen, &mut sink, len, setup.in_flight, stall, dur / 4);
    let r = super::daemon::drive(&mut gen, &mut sink, len, setup.in_flight, stall, dur);
    let mut merger = String::new();
    for i in insts.iter().filter(|i| i.role.contains("merger")) {
        for h in ["merged", "dropped", "timeouts", "late"] {
            let v = m
                .read("default", &i.name, &format!("nfp_merge.{h}"))
                .unwrap_or_default();
            merger.push_str(&format!("{h} {} ", v.trim()));
        }
    }
    if !merger.is_empty() {
        eprintln!("{tag}, merger: {merger}");
    }
    for i in &insts {
        let _ = m.remove("default", &i.name);
    }
    m.detach_port(gen_id);
    m.detach_port(sink_id);
    Ok(Run {
        p50_us: p50,
        p99_us: p99,
        kpps: r / 1e3,
        hops: plan.graph.longest_path(),
    })
}

/// Runs `pronto bench nfp`.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::for_sandboxes(args)?;
    let max: usize = c.opt("--max")?.unwrap_or(5);
    let dur = Duration::from_secs_f64(c.opt("--duration")?.unwrap_or(1.0));
    let geometry = match (c.opt::<u32>("--slots")?, c.opt::<u32>("--ring")?) {
        (None, None) => None,
        (slots, ring) => Some((slots.unwrap_or(256), ring.unwrap_or(128))),
    };
    let s = super::daemon::start_with("nfp", 1024, geometry, None)?;
    let dir = std::env::temp_dir().join(format!("pronto-bench-nfp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut csv = Csv::new(&[
        "firewalls",
        "seq_p50_us",
        "par_p50_us",
        "seq_p99_us",
        "par_p99_us",
        "latency_reduction",
        "seq_kpps",
        "par_kpps",
    ]);
    let work: u32 = c.opt("--work")?.unwrap_or(0);
    let pin = !c.rest.iter().any(|a| a == "--no-pin");
    if work > 0 {
        crate::outln!(
            "each firewall also spends WorkPackage(W {work}) on every packet: {:.1} µs here",
            work_cost_us(work)?
        );
    }
    crate::outln!("k firewalls as sandboxed instances: in sequence vs one parallel group (64 B)");
    crate::outln!("| firewalls | graph steps (seq / par) | p50 seq | p50 par | p99 seq | p99 par | p50 reduction | kpps seq | kpps par |");
    crate::outln!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let plain = |e: [u8; 6]| frame(e, 64);
    let body = fw(work);
    let files = [("fw.click", body.as_str())];
    for k in 2..=max.clamp(2, 8) {
        let setup = |parallel| Setup {
            files: &files,
            policy: policy(k, parallel),
            frame: &plain,
            stamp_at: 42,
            parallel,
            pin,
            in_flight: if work > 0 { 8 } else { 1024 },
        };
        let seq = measure(
            &s,
            &dir,
            &format!("fw{k}-seq"),
            10 + k as u8,
            &setup(false),
            dur,
        )?;
        let par = measure(
            &s,
            &dir,
            &format!("fw{k}-par"),
            20 + k as u8,
            &setup(true),
            dur,
        )?;
        let red = 1.0 - par.p50_us / seq.p50_us;
        crate::outln!(
            "| {k} | {} / {} | {:.0} µs | {:.0} µs | {:.0} µs | {:.0} µs | {:.0}% | {:.0} | {:.0} |",
            seq.hops,
            par.hops,
            seq.p50_us,
            par.p50_us,
            seq.p99_us,
            par.p99_us,
            red * 100.0,
            seq.kpps,
            par.kpps
        );
        csv.row(&[
            k.to_string(),
            format!("{:.1}", seq.p50_us),
            format!("{:.1}", par.p50_us),
            format!("{:.1}", seq.p99_us),
            format!("{:.1}", par.p99_us),
            format!("{red:.3}"),
            format!("{:.1}", seq.kpps),
            format!("{:.1}", par.kpps),
        ]);
    }
    if c.rest.iter().any(|a| a == "--dc") {
        data_centre(&s, &dir, dur, pin)?;
    }
    if c.rest.iter().any(|a| a == "--rising") {
        rising(&s, &dir, dur, if work > 0 { work } else { 6000 }, pin)?;
    }
    let path = c.out.join("nfp.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("nfp.png"),
        &PlotSpec {
            title: "pronto: firewalls in sequence vs in parallel (NFP), p50 latency",
            x: ("firewalls", "firewalls"),
            ylabel: "µs",
            ys: &["seq_p50_us:in sequence", "par_p50_us:parallel group"],
        },
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// An IP-in-IP frame to `dst`: 10.9.0.1 -> 10.9.0.2 around the UDP
/// packet of [`frame`].
fn tunnelled(dst: [u8; 6]) -> Vec<u8> {
    let inner = frame(dst, 64);
    let mut f = inner[..14].to_vec();
    let total = (inner.len() - 14 + 20) as u16;
    let mut ip = vec![
        0x45, 0, 0, 0, 0, 9, 0, 0, 64, 4, 0, 0, 10, 9, 0, 1, 10, 9, 0, 2,
    ];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let sum = pronto_packet::wire::checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&inner[14..]);
    f
}

/// The paper's data-centre chain: VPN, then monitor and firewall, then a
/// load balancer; in sequence vs as the compiled graph.
fn data_centre(
    s: &super::daemon::Scratch,
    dir: &std::path::Path,
    dur: Duration,
    pin: bool,
) -> Result<(), String> {
    let files = [
        (
            "vpn.click",
            include_str!("../../../../examples/chains/nf/vpn.click"),
        ),
        (
            "monitor.click",
            include_str!("../../../../examples/chains/nf/monitor.click"),
        ),
        (
            "fw.click",
            include_str!("../../../../examples/chains/nf/fw.click"),
        ),
        (
            "lb.click",
            include_str!("../../../../examples/chains/nf/lb.click"),
        ),
    ];
    let decl = "nf vpn = click(\"vpn.click\")\nnf monitor = click(\"monitor.click\")\n\
                nf fw = click(\"fw.click\")\nnf lb = click(\"lb.click\")\n";
    let seq = Setup {
        files: &files,
        policy: format!(
            "{decl}order(vpn, before, monitor)\norder(monitor, before, fw)\norder(fw, before, lb)\n"
        ),
        frame: &tunnelled,
        stamp_at: 62,
        parallel: false,
        pin,
        in_flight: 1024,
    };
    let par = Setup {
        policy: format!(
            "{decl}position(vpn, first)\norder(fw, before, lb)\norder(monitor, before, lb)\n"
        ),
        parallel: true,
        ..seq
    };
    let a = measure(s, dir, "dc-seq", 40, &seq, dur)?;
    let b = measure(s, dir, "dc-par", 41, &par, dur)?;
    crate::outln!("\ndata-centre chain (VPN -> monitor -> FW -> LB), 84-byte IP-in-IP frames");
    crate::outln!("| chain | graph steps | p50 | p99 | kpps |");
    crate::outln!("|---|---:|---:|---:|---:|");
    for (name, r) in [
        ("in sequence", &a),
        ("compiled (VPN, monitor | FW, LB)", &b),
    ] {
        crate::outln!(
            "| {name} | {} | {:.0} µs | {:.0} µs | {:.0} |",
            r.hops,
            r.p50_us,
            r.p99_us,
            r.kpps
        );
    }
    crate::outln!("p50 reduction: {:.0}%", (1.0 - b.p50_us / a.p50_us) * 100.0);
    Ok(())
}

/// Four firewalls of rising cost (`WorkPackage` W, 2W, 4W and 8W), in
/// sequence vs as one parallel group.
fn rising(
    s: &super::daemon::Scratch,
    dir: &std::path::Path,
    dur: Duration,
    base: u32,
    pin: bool,
) -> Result<(), String> {
    let works = [base, 2 * base, 4 * base, 8 * base];
    let bodies: Vec<(String, String)> = works
        .iter()
        .enumerate()
        .map(|(i, &w)| (format!("fw{}.click", i + 1), fw(w)))
        .collect();
    let files: Vec<(&str, &str)> = bodies
        .iter()
        .map(|(f, b)| (f.as_str(), b.as_str()))
        .collect();
    let mut decl = String::new();
    for (f, _) in &bodies {
        let name = f.trim_end_matches(".click");
        decl.push_str(&format!("nf {name} = click(\"{f}\")\n"));
    }
    let costs: Vec<String> = works
        .iter()
        .map(|&w| work_cost_us(w).map(|c| format!("{c:.0}")))
        .collect::<Result<_, _>>()?;
    let plain = |e: [u8; 6]| frame(e, 64);
    let seq = Setup {
        files: &files,
        policy: format!(
            "{decl}order(fw1, before, fw2)\norder(fw2, before, fw3)\norder(fw3, before, fw4)\n"
        ),
        frame: &plain,
        stamp_at: 42,
        parallel: false,
        pin,
        in_flight: 8,
    };
    let par = Setup {
        policy: format!("{decl}priority(fw1 > fw2)\npriority(fw2 > fw3)\npriority(fw3 > fw4)\n"),
        parallel: true,
        ..seq
    };
    let a = measure(s, dir, "rising-seq", 42, &seq, dur)?;
    let b = measure(s, dir, "rising-par", 43, &par, dur)?;
    crate::outln!(
        "\nfirewalls of rising cost (WorkPackage W {}: {} µs here), 64 B",
        works.map(|w| w.to_string()).join(", "),
        costs.join(", ")
    );
    crate::outln!("| chain | graph steps | p50 | p99 | kpps |");
    crate::outln!("|---|---:|---:|---:|---:|");
    for (name, r) in [("in sequence", &a), ("one parallel group", &b)] {
        crate::outln!(
            "| {name} | {} | {:.0} µs | {:.0} µs | {:.0} |",
            r.hops,
            r.p50_us,
            r.p99_us,
            r.kpps
        );
    }
    crate::outln!("p50 reduction: {:.0}%", (1.0 - b.p50_us / a.p50_us) * 100.0);
    Ok(())
}
