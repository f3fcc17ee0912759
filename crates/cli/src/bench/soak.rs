//! `pronto bench soak`: the daemon (a process of its own) with
//! `--instances` sandboxed instances for `--duration` seconds, traffic
//! between them, and churn at a steady rate: one operation every
//! `1 / --churn` seconds, in turn replacing an instance (delete, then
//! create under a new name with the same interface) and reconfiguring
//! another. Every `--sample` seconds it records what the daemon holds:
//! resident memory, open descriptors, threads, the store's size, its
//! sandboxes' cgroups, processes and network namespaces. At the end every
//! instance must answer a handler read, memory, descriptors and the store
//! must have grown no more than the stated bounds since the end of the
//! warm-up, and once the instances are deleted and the daemon stopped no
//! cgroup, namespace or process of it may be left.

use std::time::{Duration, Instant};

use serde_json::json;

use super::daemon::{mac_str, udp_frame};
use super::prontod::{self, Prontod};
use super::{plot, Common, Csv, PlotSpec};

/// Pre-started sandboxes the daemon keeps (`--warm`).
const WARM: usize = 2;

/// Instance slot `i`'s MAC.
fn mac(i: usize) -> [u8; 6] {
    [2, 0x50, 0, 0, (i >> 8) as u8, i as u8]
}

/// Slot `i`'s configuration: a generator to the next slot's MAC, and a
/// counting sink; `variant` changes the sink (for reconfigurations).
fn config(i: usize, n: usize, rate: u32, variant: u8) -> String {
    let mut f = udp_frame(mac((i + 1) % n), 64);
    f[6..12].copy_from_slice(&mac(i));
    let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
    let sink = if variant == 0 {
        "fd :: FromDevice(eth0) -> n :: Counter -> Discard;"
    } else {
        "fd :: FromDevice(eth0) -> n :: Counter -> q :: Queue(64) -> Unqueue -> Discard;"
    };
    format!("src :: RatedSource(DATA \\<{hex}>, RATE {rate}, LIMIT -1) -> td :: ToDevice(eth0);\n{sink}")
}

/// One sample of what the daemon holds.
#[derive(Clone, Debug, Default)]
struct Sample {
    t: f64,
    instances: usize,
    running: usize,
    rss: u64,
    anon: u64,
    shmem: u64,
    fds: usize,
    threads: usize,
    store: u64,
    cgroups: usize,
    sandboxes: usize,
    netns: usize,
    ops: u64,
    op_errors: u64,
    forwarded: u64,
}

/// Least-squares slope of `ys` over `xs` (per unit of x).
fn slope(xs: &[f64], ys: &[f64]) -> f64 {
    let n = xs.len() as f64;
    if xs.len() < 2 {
        return 0.0;
    }
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxy: f64 = xs.iter().zip(ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx == 0.0 {
        0.0
    } else {
        sxy / sxx
    }
}

/// Runs `pronto bench soak`.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::for_sandboxes(args)?;
    let duration = Duration::from_secs_f64(c.opt("--duration")?.unwrap_or(3600.0));
    let n: usize = c.opt("--instances")?.unwrap_or(100);
    let churn: f64 = c.opt("--churn")?.unwrap_or(1.0);
    let rate: u32 = c.opt("--rate")?.unwrap_or(20);
    let every = Duration::from_secs_f64(c.opt("--sample")?.unwrap_or(10.0));
    // Bounds on growth after the warm-up (the first fifth of the run).
    let rss_bound = c.opt::<f64>("--rss-bound-mb")?.unwrap_or(16.0) * 1e6;
    let fd_bound: usize = c.opt("--fd-bound")?.unwrap_or(16);
    let store_bound = c.opt::<f64>("--store-bound-mb")?.unwrap_or(4.0) * 1e6;
    if n < 2 || churn <= 0.0 {
        return Err("--instances must be at least 2 and --churn above 0".into());
    }
    let dir = std::env::temp_dir().join(format!("pronto-soak-{}", std::process::id()));
    let warm = WARM.to_string();
    let mut d = Prontod::start(&dir, &["--warm", &warm])?;
    let r = soak(
        &mut d,
        &c,
        Params {
            duration,
            n,
            churn,
            rate,
            every,
            rss_bound,
            fd_bound,
            store_bound,
        },
    );
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

struct Params {
    duration: Duration,
    n: usize,
    churn: f64,
    rate: u32,
    every: Duration,
    rss_bound: f64,
    fd_bound: usize,
    store_bound: f64,
}

fn create(d: &Prontod, name: &str, i: usize, p: &Params, variant: u8) -> Result<(), String> {
    let body = json!({
        "name": name,
        "config": config(i, p.n, p.rate, variant),
        "memory": "8M",
        "interfaces": [{"name": "eth0", "mac": mac_str(&mac(i))}],
    });
    d.call("POST", "/v1/instances", Some(&body)).map(|_| ())
}

fn sample(d: &Prontod, t0: Instant, ops: u64, op_errors: u64) -> Result<Sample, String> {
    let pid = d.pid();
    let v = prontod::view(pid);
    let list = d.instances()?;
    let forwarded = d
        .call("GET", "/v1/switch/ports", None)?
        .as_array()
        .map_or(0, |a| {
            a.iter()
                .map(|p| p["tx_packets"].as_u64().unwrap_or(0))
                .sum()
        });
    Ok(Sample {
        t: t0.elapsed().as_secs_f64(),
        instances: list.len(),
        running: list.iter().filter(|i| i["state"] == "running").count(),
        rss: v.rss,
        anon: v.anon,
        shmem: v.shmem,
        fds: v.fds,
        threads: v.threads,
        store: std::fs::metadata(d.store()).map_or(0, |m| m.len()),
        cgroups: Prontod::cgroups_of(pid).len(),
        sandboxes: v.children.len(),
        netns: v.netns,
        ops,
        op_errors,
        forwarded,
    })
}

fn soak(d: &mut Prontod, c: &Common, p: Params) -> Result<(), String> {
    let quota =
        json!({"instances": p.n + 16, "memory": "64G", "cpu": 4096.0, "interfaces": 65_535});
    d.call("PUT", "/v1/tenants/default/quota", Some(&quota))?;
    crate::outln!(
        "soak: daemon pid {}, {} instances, {} pps each, churn {} operations/s, {:.0} s",
        d.pid(),
        p.n,
        p.rate,
        p.churn,
        p.duration.as_secs_f64()
    );
    // Slot i runs instance `s{i}-{generation}`.
    let mut gen = vec![0u64; p.n];
    let mut variant = vec![0u8; p.n];
    for i in 0..p.n {
        create(d, &format!("s{i}-0"), i, &p, 0)?;
    }
    let mut seen: Vec<(u32, u64)> = Vec::new();
    let note_kids = |seen: &mut Vec<(u32, u64)>, pid: u32| {
        for k in prontod::children_of(pid) {
            if let Some((_, st)) = prontod::stat_of(k) {
                if !seen.contains(&(k, st)) {
                    seen.push((k, st));
                }
            }
        }
    };
    let mut csv = Csv::new(&[
        "t_s",
        "instances",
        "running",
        "rss_mb",
        "anon_mb",
        "shmem_mb",
        "fds",
        "threads",
        "store_kb",
        "cgroups",
        "sandboxes",
        "netns",
        "ops",
        "op_errors",
        "forwarded",
    ]);
    let mut samples: Vec<Sample> = Vec::new();
    let t0 = Instant::now();
    let op_every = Duration::from_secs_f64(1.0 / p.churn);
    let (mut ops, mut op_errors) = (0u64, 0u64);
    let mut next_op = Instant::now();
    let mut next_sample = Instant::now();
    let mut errors: Vec<String> = Vec::new();
    crate::outln!("| t s | instances | running | RSS MB (heap, ports) | fds | threads | store KB | cgroups | sandboxes | netns | operations (errors) |");
    crate::outln!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    while t0.elapsed() < p.duration {
        if Instant::now() >= next_sample {
            next_sample += p.every;
            let s = sample(d, t0, ops, op_errors)?;
            note_kids(&mut seen, d.pid());
            crate::outln!(
                "| {:.0} | {} | {} | {:.1} ({:.1}, {:.1}) | {} | {} | {} | {} | {} | {} | {} ({}) |",
                s.t,
                s.instances,
                s.running,
                s.rss as f64 / 1e6,
                s.anon as f64 / 1e6,
                s.shmem as f64 / 1e6,
                s.fds,
                s.threads,
                s.store / 1024,
                s.cgroups,
                s.sandboxes,
                s.netns,
                s.ops,
                s.op_errors
            );
            csv.row(&[
                format!("{:.1}", s.t),
                s.instances.to_string(),
                s.running.to_string(),
                format!("{:.2}", s.rss as f64 / 1e6),
                format!("{:.2}", s.anon as f64 / 1e6),
                format!("{:.2}", s.shmem as f64 / 1e6),
                s.fds.to_string(),
                s.threads.to_string(),
                (s.store / 1024).to_string(),
                s.cgroups.to_string(),
                s.sandboxes.to_string(),
                s.netns.to_string(),
                s.ops.to_string(),
                s.op_errors.to_string(),
                s.forwarded.to_string(),
            ]);
            samples.push(s);
        }
        if Instant::now() >= next_op {
            next_op += op_every;
            // In turn: replace slot k, reconfigure slot j.
            let k = (ops / 2) as usize % p.n;
            let r = if ops % 2 == 0 {
                let old = format!("s{k}-{}", gen[k]);
                gen[k] += 1;
                d.call("DELETE", &format!("/v1/instances/{old}"), None)
                    .and_then(|_| create(d, &format!("s{k}-{}", gen[k]), k, &p, variant[k]))
            } else {
                let j = (k + p.n / 2) % p.n;
                variant[j] = 1 - variant[j];
                let body = json!({ "config": config(j, p.n, p.rate, variant[j]) });
                d.call(
                    "PUT",
                    &format!("/v1/instances/s{j}-{}/config", gen[j]),
                    Some(&body),
                )
                .map(|_| ())
            };
            ops += 1;
            if let Err(e) = r {
                op_errors += 1;
                if errors.len() < 10 {
                    errors.push(e);
                }
            }
        }
        let wait = next_op
            .min(next_sample)
            .saturating_duration_since(Instant::now());
        std::thread::sleep(wait.min(Duration::from_millis(200)));
    }
    // Settle, then the end state: every instance answers.
    std::thread::sleep(Duration::from_secs(2));
    let last = sample(d, t0, ops, op_errors)?;
    note_kids(&mut seen, d.pid());
    samples.push(last.clone());
    let mut answering = 0;
    for (i, g) in gen.iter().enumerate() {
        if d.read("default", &format!("s{i}-{g}"), "n.count")
            .is_ok_and(|v| v.trim().parse::<u64>().is_ok_and(|x| x > 0))
        {
            answering += 1;
        }
    }
    let path = c.out.join("soak.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("soak.png"),
        &PlotSpec {
            title: "pronto: the daemon under churn (soak)",
            x: ("t_s", "seconds"),
            ylabel: "MB, descriptors",
            ys: &["rss_mb:RSS MB", "anon_mb:heap MB", "fds:descriptors"],
        },
    )?;
    // Flat after the warm-up: growth from the first sample after the
    // first fifth of the run to the last, and the fitted slope per hour.
    let warm_t = p.duration.as_secs_f64() / 5.0;
    let steady: Vec<&Sample> = samples.iter().filter(|s| s.t >= warm_t).collect();
    let mut problems = Vec::new();
    let (first, end) = match (steady.first(), steady.last()) {
        (Some(a), Some(b)) => (*a, *b),
        _ => return Err("no samples after the warm-up: run longer than --sample".into()),
    };
    let xs: Vec<f64> = steady.iter().map(|s| s.t / 3600.0).collect();
    let per_h =
        |f: &dyn Fn(&Sample) -> f64| slope(&xs, &steady.iter().map(|s| f(s)).collect::<Vec<_>>());
    let rss_growth = end.rss as f64 - first.rss as f64;
    let anon_growth = end.anon as f64 - first.anon as f64;
    let fd_growth = end.fds as i64 - first.fds as i64;
    let store_growth = end.store as f64 - first.store as f64;
    crate::outln!(
        "after the warm-up ({:.0} s to {:.0} s): RSS {:+.1} MB (slope {:+.2} MB/h, bound {:.0} MB; \
         of it the heap {:+.2} MB, slope {:+.2} MB/h), descriptors {:+} (slope {:+.1}/h, bound {}), store {:+.1} KB (slope {:+.1} KB/h, bound {:.0} KB), \
         threads {} -> {}",
        first.t,
        end.t,
        rss_growth / 1e6,
        per_h(&|s| s.rss as f64) / 1e6,
        p.rss_bound / 1e6,
        anon_growth / 1e6,
        per_h(&|s| s.anon as f64) / 1e6,
        fd_growth,
        per_h(&|s| s.fds as f64),
        p.fd_bound,
        store_growth / 1024.0,
        per_h(&|s| s.store as f64) / 1024.0,
        p.store_bound / 1024.0,
        first.threads,
        end.threads
    );
    if rss_growth > p.rss_bound {
        problems.push(format!("RSS grew {:.1} MB", rss_growth / 1e6));
    }
    if fd_growth > p.fd_bound as i64 {
        problems.push(format!("descriptors grew by {fd_growth}"));
    }
    if store_growth > p.store_bound {
        problems.push(format!("the store grew {:.0} KB", store_growth / 1024.0));
    }
    crate::outln!(
        "end: {answering} of {} instances answer a handler read with traffic counted; {} operations \
         ({} failed); sandboxes {} (instances {} + {} pre-started), cgroups {}, namespaces {}",
        p.n, ops, op_errors, last.sandboxes, last.instances, WARM, last.cgroups, last.netns
    );
    if answering != p.n {
        problems.push(format!("only {answering} of {} instances answered", p.n));
    }
    if op_errors > 0 {
        problems.push(format!("{op_errors} operations failed, first: {errors:?}"));
    }
    let expect = p.n + WARM;
    if last.sandboxes != expect || last.cgroups != expect || last.netns != expect {
        problems.push(format!(
            "with {} instances and {WARM} pre-started sandboxes: {} sandbox processes, {} cgroups, \
             {} network namespaces",
            p.n, last.sandboxes, last.cgroups, last.netns
        ));
    }
    // Deleting every instance leaves the pre-started sandboxes only.
    for (i, g) in gen.iter().enumerate() {
        d.call("DELETE", &format!("/v1/instances/s{i}-{g}"), None)?;
    }
    let t1 = Instant::now();
    let empty = loop {
        let s = sample(d, t0, ops, op_errors)?;
        if (s.sandboxes, s.cgroups, s.netns) == (WARM, WARM, WARM)
            || t1.elapsed() > Duration::from_secs(30)
        {
            break s;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    crate::outln!(
        "after deleting every instance: sandboxes {}, cgroups {}, namespaces {}, RSS {:.1} MB, \
         descriptors {}",
        empty.sandboxes,
        empty.cgroups,
        empty.netns,
        empty.rss as f64 / 1e6,
        empty.fds
    );
    if (empty.sandboxes, empty.cgroups, empty.netns) != (WARM, WARM, WARM) {
        problems.push(format!(
            "after deleting every instance: {} sandboxes, {} cgroups, {} namespaces (expected \
             {WARM} each)",
            empty.sandboxes, empty.cgroups, empty.netns
        ));
    }
    let pid = d.pid();
    d.term()?;
    let t2 = Instant::now();
    loop {
        let left = prontod::still_alive(&seen);
        let cg = Prontod::cgroup_dir_left(pid);
        if left.is_empty() && !cg {
            crate::outln!(
                "after SIGTERM: none of the {} sandbox processes seen is left, no cgroup",
                seen.len()
            );
            break;
        }
        if t2.elapsed() > Duration::from_secs(30) {
            problems.push(format!(
                "after SIGTERM: processes {left:?} alive, cgroup directory {}",
                if cg { "left" } else { "removed" }
            ));
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slope_of_a_line_is_its_gradient() {
        let xs = [0.0, 1.0, 2.0, 3.0];
        assert!((slope(&xs, &[1.0, 3.0, 5.0, 7.0]) - 2.0).abs() < 1e-9);
        assert_eq!(slope(&xs, &[4.0; 4]), 0.0);
        assert_eq!(slope(&[1.0], &[1.0]), 0.0);
    }

    #[test]
    fn each_slot_sends_to_the_next_and_counts() {
        let c = config(3, 4, 20, 0);
        // To slot 0's MAC (the ring closes), from slot 3's.
        assert!(c.contains("DATA \\<025000000000025000000003"), "{c}");
        assert!(c.contains("n :: Counter -> Discard"), "{c}");
        assert!(config(3, 4, 20, 1).contains("Queue(64)"));
    }
}
