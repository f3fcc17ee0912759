//! `pronto bench cluster`: the cluster layer at scale against a real etcd.
//! `--nodes N` (100) simulated nodes in this process — each a registration
//! under its own lease and an agent following its own placements (a node
//! that "runs" an instance counts it) — and one scheduler elected among
//! them. A burst of `--instances N` (10,000) creates is written to etcd in
//! transactions of 100, then:
//!
//! - creates per second (the burst's writes),
//! - placements per second and the time until every instance is placed,
//! - the time until every instance runs on its node (converged),
//! - watch fan-out: changes delivered to nodes per instance placed (1.0
//!   when each node sees only its own),
//! - failover of the control plane: `--trials N` (5) times a node dies
//!   (its keep-alive and agent stop); the time until all its instances
//!   run elsewhere (lease TTL `--ttl` seconds, 2, plus a pass),
//! - etcd's database size and keys.
//!
//! etcd (Debian's `etcd-server`) runs as a child process on loopback with
//! its data in a temporary directory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pronto_cluster::agent::{self, Converge};
use pronto_cluster::node::{self, Node};
use pronto_cluster::{scheduler, Op, Registration};

use super::{median, plot, Common, Csv, PlotSpec};

/// What a simulated node runs.
#[derive(Default)]
struct Sim {
    running: Mutex<std::collections::HashSet<String>>,
    /// Changes delivered (runs and stops).
    changes: AtomicU64,
}

struct SimConverge(Arc<Sim>);

impl Converge for SimConverge {
    fn run(&mut self, name: &str, _placement: &[u8]) {
        self.0.changes.fetch_add(1, Ordering::Relaxed);
        self.0
            .running
            .lock()
            .expect("lock")
            .insert(name.to_string());
    }
    fn stop(&mut self, name: &str) {
        self.0.changes.fetch_add(1, Ordering::Relaxed);
        self.0.running.lock().expect("lock").remove(name);
    }
}

struct SimNode {
    name: String,
    reg: Option<Arc<Registration>>,
    stop: Arc<AtomicBool>,
    sim: Arc<Sim>,
}

/// Runs `pronto bench cluster`.
pub fn main(args: &[String]) -> Result<(), String> {
    let c = Common::parse(args)?;
    let nodes: usize = c.opt("--nodes")?.unwrap_or(100);
    let instances: usize = c.opt("--instances")?.unwrap_or(10_000);
    let trials: usize = c.opt("--trials")?.unwrap_or(5);
    let ttl: i64 = c.opt("--ttl")?.unwrap_or(2);
    if nodes < 2 || trials >= nodes || instances == 0 {
        return Err(
            "--nodes must be at least 2 and more than --trials; --instances at least 1".into(),
        );
    }
    let e = pronto_cluster::testing::Members::start(1)?;
    let etcd = Arc::new(e.client()?);
    // Room for every instance after `trials` nodes died, and some.
    let slots = (instances * 3 / 2).div_ceil(nodes - trials) as u32;
    let stop_all = Arc::new(AtomicBool::new(false));
    let mut sims = Vec::new();
    for i in 0..nodes {
        let name = format!("n{i:03}");
        let reg = Registration::start(
            etcd.clone(),
            Node {
                name: name.clone(),
                memory_mib: 1 << 20,
                cpus: 1 << 10,
                slots,
                tunnel: None,
                api: None,
                peer: None,
            },
            ttl,
        )
        .map_err(|e| e.to_string())?;
        let reg = Arc::new(reg);
        let stop = Arc::new(AtomicBool::new(false));
        let sim = Arc::new(Sim::default());
        {
            let (etcd, name, stop, sim) = (etcd.clone(), name.clone(), stop.clone(), sim.clone());
            std::thread::spawn(move || agent::follow(&etcd, &name, &mut SimConverge(sim), &stop));
        }
        sims.push(SimNode {
            name,
            reg: Some(reg),
            stop,
            sim,
        });
    }
    // The scheduler: on the last node (the failover trials kill the first
    // ones), as a real node's would be.
    let placed = Arc::new(AtomicU64::new(0));
    let passes = Arc::new(AtomicU64::new(0));
    {
        let last = sims.last().expect("nodes");
        let (etcd, name, reg, stop) = (
            etcd.clone(),
            last.name.clone(),
            last.reg.clone().expect("registered"),
            stop_all.clone(),
        );
        let (placed, passes) = (placed.clone(), passes.clone());
        std::thread::spawn(move || {
            agent::lead(
                etcd,
                &reg,
                &name,
                Duration::from_millis(20),
                Duration::from_secs(1),
                &stop,
                &mut |r| {
                    if let Ok(plan) = r {
                        placed.fetch_add(plan.changed.len() as u64, Ordering::Relaxed);
                        passes.fetch_add(1, Ordering::Relaxed);
                    }
                },
            )
        });
    }
    let running = |sims: &[SimNode]| -> usize {
        sims.iter()
            .filter(|s| !s.stop.load(Ordering::Relaxed))
            .map(|s| s.sim.running.lock().expect("lock").len())
            .sum()
    };
    eprintln!("cluster: {nodes} nodes registered ({slots} slots each); {instances} creates");

    // The burst, sampled every 50 ms.
    let mut timeline = Csv::new(&["t_s", "written", "placed", "running"]);
    let t0 = Instant::now();
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (etcd, written) = (etcd.clone(), written.clone());
        std::thread::spawn(move || -> Result<f64, String> {
            let t = Instant::now();
            let mut k = 0;
            while k < instances {
                let ops: Vec<Op> = (k..(k + 100).min(instances))
                    .map(|i| Op::Put {
                        key: scheduler::instance_key(&format!("i{i:05}")),
                        value: format!(
                            r#"{{"tenant":"t{}","memory_mib":32,"millicpus":100,"config":"FromDevice(eth0) -> ToDevice(eth1)"}}"#,
                            i % 97
                        )
                        .into_bytes(),
                        lease: 0,
                    })
                    .collect();
                etcd.txn(&[], &ops, &[]).map_err(|e| e.to_string())?;
                k += ops.len();
                written.store(k as u64, Ordering::Relaxed);
            }
            Ok(t.elapsed().as_secs_f64())
        })
    };
    let (mut t_placed, mut t_converged) = (None, None);
    while t_converged.is_none() {
        std::thread::sleep(Duration::from_millis(50));
        let t = t0.elapsed().as_secs_f64();
        let (w, p, r) = (
            written.load(Ordering::Relaxed),
            placed.load(Ordering::Relaxed).min(instances as u64),
            running(&sims),
        );
        timeline.row(&[
            format!("{t:.3}"),
            w.to_string(),
            p.to_string(),
            r.to_string(),
        ]);
        if t_placed.is_none() && p as usize >= instances {
            t_placed = Some(t);
        }
        if r >= instances {
            t_converged = Some(t);
        }
        if t > 600.0 {
            return Err(format!(
                "not converged after 600 s: {p} placed, {r} running"
            ));
        }
    }
    let t_write = writer.join().map_err(|_| "the writer panicked")??;
    let t_placed = t_placed.unwrap_or(f64::NAN);
    let t_converged = t_converged.unwrap_or(f64::NAN);
    let changes: u64 = sims
        .iter()
        .map(|s| s.sim.changes.load(Ordering::Relaxed))
        .sum();
    let fanout = changes as f64 / instances as f64;

    // Failover trials: the first nodes die one by one.
    let mut failovers = Vec::new();
    for k in 0..trials {
        let had = sims[k].sim.running.lock().expect("lock").len();
        let t = Instant::now();
        sims[k].stop.store(true, Ordering::Relaxed);
        sims[k].reg = None;
        while running(&sims) < instances {
            std::thread::sleep(Duration::from_millis(20));
            if t.elapsed() > Duration::from_secs(60) {
                return Err(format!(
                    "{}'s {had} instances not back within 60 s",
                    sims[k].name
                ));
            }
        }
        let took = t.elapsed().as_secs_f64();
        failovers.push(took);
        eprintln!(
            "cluster: {} died with {had} instances: all running again in {took:.2} s",
            sims[k].name
        );
    }
    let db = etcd.status().map_err(|e| e.to_string())?;
    let keys = etcd
        .range_prefix(node::ROOT.as_bytes())
        .map_err(|e| e.to_string())?
        .kvs
        .len();
    stop_all.store(true, Ordering::Relaxed);
    for s in &sims {
        s.stop.store(true, Ordering::Relaxed);
    }

    let mut f = failovers.clone();
    let (p50, max) = (
        median(&mut f),
        failovers.iter().copied().fold(0.0, f64::max),
    );
    let mut csv = Csv::new(&["metric", "value"]);
    let rows: [(&str, String); 12] = [
        ("nodes", nodes.to_string()),
        ("instances", instances.to_string()),
        (
            "creates_per_s",
            format!("{:.0}", instances as f64 / t_write),
        ),
        ("placed_s", format!("{t_placed:.3}")),
        (
            "placements_per_s",
            format!("{:.0}", instances as f64 / t_placed),
        ),
        ("converged_s", format!("{t_converged:.3}")),
        (
            "scheduler_passes",
            passes.load(Ordering::Relaxed).to_string(),
        ),
        ("changes_per_instance", format!("{fanout:.3}")),
        ("failover_p50_s", format!("{p50:.3}")),
        ("failover_max_s", format!("{max:.3}")),
        ("etcd_db_bytes", db.to_string()),
        ("keys", keys.to_string()),
    ];
    for (k, v) in &rows {
        csv.row(&[k.to_string(), v.clone()]);
        crate::out!("{k:<22} {v}\n");
    }
    csv.write(&c.out.join("cluster.csv"))?;
    let tl = c.out.join("cluster-timeline.csv");
    timeline.write(&tl)?;
    plot(
        &tl,
        &c.out.join("cluster.png"),
        &PlotSpec {
            title: &format!("pronto: {instances} creates on {nodes} nodes (etcd)"),
            x: ("t_s", "seconds since the burst began"),
            ylabel: "instances",
            ys: &[
                "written:written to etcd",
                "placed:placed by the scheduler",
                "running:running on their nodes",
            ],
        },
    )?;
    Ok(())
}
