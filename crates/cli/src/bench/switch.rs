//! `pronto bench switch` and `pronto bench ports`: the switch's forwarding
//! rate port to port, against the physical limit of a shared-memory ring
//! measured in the same sitting.
//!
//! The switch runs on its own thread (one switching core); one other
//! thread plays both peers, sending batches of 64 frames from port A
//! (each written into one of A's slots) and taking what arrives at port B
//! (slots returned unread); a second figure has A's frames written into
//! its slots once, up front, so that only the switch touches packet bytes
//! (as with a NIC writing them by DMA). Threads are pinned, the peers to
//! CPU 0 and the switch to CPU 1 (`--no-pin` to leave them be). The ring
//! limit is two threads and one
//! descriptor ring: the producer writes each frame into a slot and
//! publishes its index, the consumer takes the index and reads the frame
//! (one copy each side), or only indices for the index-only figure.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pronto_ring::{Consumer, Desc};
use pronto_switch::{Config, Geometry, Peer, PortShm, SwitchHandle};

use super::{median, plot, Common, Csv, PlotSpec};

/// Whether the threads are pinned (one core each).
static PIN: AtomicBool = AtomicBool::new(false);

/// Slots per port and ring capacity: 256 frames in flight per ring, the
/// working set of a port (256 x 2,176 B) staying in a core's L2 cache.
const SLOTS: u32 = 512;
const RING_CAP: u32 = 256;

const SIZES: [usize; 6] = [64, 128, 256, 512, 1024, 1500];
const PORTS: [u32; 7] = [2, 4, 16, 64, 256, 1024, 4096];

/// Runs `pronto bench switch|ports`.
pub fn main(sub: &str, args: &[String]) -> Result<(), String> {
    let c = Common::parse(args)?;
    let secs: f64 = c.opt("--duration")?.unwrap_or(1.0);
    let runs: usize = c.opt("--runs")?.unwrap_or(3);
    if !(0.05..=600.0).contains(&secs) || runs == 0 {
        return Err("--duration must be 0.05..600 seconds and --runs at least 1".into());
    }
    let dur = Duration::from_secs_f64(secs);
    // The peers' thread on CPU 0, the switch (or the ring's consumer) on
    // CPU 1: both measured paths get the same two cores, every run.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pin = cpus >= 2 && !c.flag("--no-pin");
    if pin {
        pronto_switch::pin_current_thread(0)
            .map_err(|e| format!("cannot pin to CPU 0 (try --no-pin): {e}"))?;
    }
    PIN.store(pin, Ordering::Relaxed);

    pronto_switch::raise_fd_limit()
        .map_err(|e| format!("cannot raise the open-file limit: {e}"))?;
    match sub {
        "switch" => sizes(&c, dur, runs),
        "cores" => cores(
            &c,
            dur,
            runs,
            c.opt("--max-threads")?.unwrap_or(cpus.min(8)),
        ),
        _ => ports(&c, dur, runs, c.opt("--max-ports")?.unwrap_or(1024)),
    }
}

fn sizes(c: &Common, dur: Duration, runs: usize) -> Result<(), String> {
    let mut csv = Csv::new(&[
        "size",
        "switch_mpps",
        "switch_prefilled_mpps",
        "ring_copy_mpps",
        "ring_index_mpps",
        "fraction_of_copy_limit",
        "switch_gbps",
    ]);
    crate::outln!(
        "switch port to port, one switching thread, median of {runs} runs of {:.1} s",
        dur.as_secs_f64()
    );
    crate::outln!(
        "| frame | switch Mpps | switch Mpps, sender prefilled | ring limit (1 copy) Mpps | \
         index-only Mpps | switch / limit | switch Gb/s |"
    );
    crate::outln!("|---:|---:|---:|---:|---:|---:|---:|");
    for &size in &SIZES {
        let mut sw = Vec::new();
        let mut pre = Vec::new();
        let mut copy = Vec::new();
        let mut idx = Vec::new();
        for _ in 0..runs {
            sw.push(switch_rate(size, 0, dur, false)?);
            pre.push(switch_rate(size, 0, dur, true)?);
            copy.push(ring_rate(size, dur));
            idx.push(ring_rate(0, dur));
        }
        let (s, cp, ix) = (median(&mut sw), median(&mut copy), median(&mut idx));
        let sp = median(&mut pre);
        let gbps = s * (size as f64 + 24.0) * 8.0 / 1e9;
        crate::outln!(
            "| {size} | {:.1} | {:.1} | {:.1} | {:.0} | {:.2} | {:.1} |",
            s / 1e6,
            sp / 1e6,
            cp / 1e6,
            ix / 1e6,
            s / cp,
            gbps
        );
        csv.row(&[
            size.to_string(),
            format!("{:.3}", s / 1e6),
            format!("{:.3}", sp / 1e6),
            format!("{:.3}", cp / 1e6),
            format!("{:.3}", ix / 1e6),
            format!("{:.3}", s / cp),
            format!("{gbps:.2}"),
        ]);
    }
    let path = c.out.join("switch.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("switch.png"),
        &PlotSpec {
            title: "pronto switch, port to port (one switching core)",
            x: ("size", "frame size (bytes)"),
            ylabel: "Mpps",
            ys: &[
                "switch_mpps:switch (sender copies each frame)",
                "switch_prefilled_mpps:switch (sender's frames prefilled)",
                "ring_copy_mpps:ring limit (1 copy each side)",
            ],
        },
    )
}

fn ports(c: &Common, dur: Duration, runs: usize, max: u32) -> Result<(), String> {
    let mut csv = Csv::new(&["ports", "switch_mpps", "idle_cpu_pct"]);
    crate::outln!(
        "switch at 64 B with N ports attached (traffic on 2), median of {runs} runs of {:.1} s",
        dur.as_secs_f64()
    );
    crate::outln!("| ports | Mpps | switch CPU with all ports idle |");
    crate::outln!("|---:|---:|---:|");
    for &n in PORTS.iter().filter(|&&n| n <= max) {
        let mut v = Vec::new();
        for _ in 0..runs {
            v.push(switch_rate(64, n - 2, dur, false)?);
        }
        let r = median(&mut v);
        let idle = idle_cpu(n, Duration::from_secs(1))?;
        crate::outln!("| {n} | {:.1} | {:.2}% |", r / 1e6, idle);
        csv.row(&[
            n.to_string(),
            format!("{:.3}", r / 1e6),
            format!("{idle:.3}"),
        ]);
    }
    let path = c.out.join("ports.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("ports.png"),
        &PlotSpec {
            title: "pronto switch at 64 B as ports are attached (traffic on 2)",
            x: ("ports", "attached ports"),
            ylabel: "Mpps",
            ys: &["switch_mpps:switch"],
        },
    )
}

/// `pronto bench cores`: aggregate forwarding rate at 64 B with 1..`max`
/// switching engines sharing one switch (one ports table, one MAC table),
/// each on its own pinned thread.
///
/// So that the figure measures the switch and not a contest for cores
/// between switching threads and traffic threads, each thread both plays
/// its pair of peers (port A sends prefilled frames, port B takes them)
/// and drives its own engine, which serves A's and B's receive sides. In
/// `local` traffic A(t) sends to B(t), on the same engine; in `cross`
/// traffic A(t) sends to B(t+1): every frame is copied by one thread into
/// a port another thread serves, under that port's lock.
fn cores(c: &Common, dur: Duration, runs: usize, max: usize) -> Result<(), String> {
    if max == 0 || max > pronto_switch::switch::MAX_THREADS {
        return Err("--max-threads must be 1..64".into());
    }
    let mut csv = Csv::new(&[
        "threads",
        "local_mpps",
        "cross_mpps",
        "local_speedup",
        "cross_speedup",
    ]);
    crate::outln!(
        "switch at 64 B, N engines on N threads (each also plays its peers), median of {runs} \
         runs of {:.1} s",
        dur.as_secs_f64()
    );
    crate::outln!(
        "| threads | local Mpps | cross-thread Mpps | local / 1 thread | cross / 1 thread |"
    );
    crate::outln!("|---:|---:|---:|---:|---:|");
    let (mut base_l, mut base_c) = (0.0, 0.0);
    for t in 1..=max {
        let mut l = Vec::new();
        let mut x = Vec::new();
        for _ in 0..runs {
            l.push(engines_rate(t, false, dur)?);
            x.push(engines_rate(t, true, dur)?);
        }
        let (l, x) = (median(&mut l), median(&mut x));
        if t == 1 {
            (base_l, base_c) = (l, x);
        }
        crate::outln!(
            "| {t} | {:.1} | {:.1} | {:.2} | {:.2} |",
            l / 1e6,
            x / 1e6,
            l / base_l,
            x / base_c
        );
        csv.row(&[
            t.to_string(),
            format!("{:.3}", l / 1e6),
            format!("{:.3}", x / 1e6),
            format!("{:.3}", l / base_l),
            format!("{:.3}", x / base_c),
        ]);
    }
    let path = c.out.join("cores.csv");
    csv.write(&path)?;
    plot(
        &path,
        &c.out.join("cores.png"),
        &PlotSpec {
            title: "pronto switch at 64 B, switching threads sharing one switch",
            x: ("threads", "switching threads"),
            ylabel: "Mpps (all threads)",
            ys: &[
                "local_mpps:traffic within each thread's ports",
                "cross_mpps:every frame to another thread's port",
            ],
        },
    )
}

/// Frames per second delivered by `n` engines of one switch, each on its
/// own thread with its pair of peers (see [`cores`]).
fn engines_rate(n: usize, cross: bool, dur: Duration) -> Result<f64, String> {
    let err = |e: pronto_switch::SwitchError| e.to_string();
    let mut root = pronto_switch::Switch::new(Config {
        learning: false,
        ..Config::default()
    })
    .map_err(err)?;
    let g = Geometry::new(SLOTS, RING_CAP).map_err(|e| e.to_string())?;
    let b_mac = |t: usize| [2, 0, 0, 0, 1, t as u8];
    let mut engines = Vec::new();
    for t in 0..n {
        let mut e = if t == 0 {
            None
        } else {
            Some(root.sibling().map_err(err)?)
        };
        let sw = e.as_mut().unwrap_or(&mut root);
        let a = PortShm::create("bench-a", g).map_err(|e| e.to_string())?;
        let b = PortShm::create("bench-b", g).map_err(|e| e.to_string())?;
        sw.attach(2 * t as u16, a.clone()).map_err(err)?;
        sw.attach(2 * t as u16 + 1, b.clone()).map_err(err)?;
        sw.add_static(b_mac(t), 2 * t as u16 + 1);
        let mut pa = Peer::new(a, 0).map_err(|e| e.to_string())?;
        let pb = Peer::new(b, RING_CAP).map_err(|e| e.to_string())?;
        let to = if cross { (t + 1) % n } else { t };
        let mut f = vec![0x55u8; 64];
        f[..6].copy_from_slice(&b_mac(to));
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, t as u8]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        pa.prefill(&f);
        engines.push((e, pa, pb));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let go = Arc::new(std::sync::Barrier::new(n + 1));
    let counts: Vec<Arc<AtomicU64>> = (0..n).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let mut threads = Vec::new();
    let mut root = Some(root);
    for (t, (e, mut pa, mut pb)) in engines.into_iter().enumerate() {
        let mut sw = match e {
            Some(e) => e,
            None => root.take().ok_or("engine 0 taken twice")?,
        };
        let (stop, go, count) = (stop.clone(), go.clone(), counts[t].clone());
        threads.push(std::thread::spawn(move || {
            if PIN.load(Ordering::Relaxed) {
                let _ = pronto_switch::pin_current_thread(t);
            }
            go.wait();
            let mut got = 0u64;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..64 {
                    pa.send_written(64, 64);
                    sw.poll_once();
                    got += pb.recv_discard() as u64;
                }
                count.store(got, Ordering::Relaxed);
            }
        }));
    }
    let total = || {
        counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum::<u64>()
    };
    go.wait();
    std::thread::sleep(dur / 5);
    let (t0, n0) = (Instant::now(), total());
    std::thread::sleep(dur);
    let (t1, n1) = (Instant::now(), total());
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().map_err(|_| "a bench thread panicked")?;
    }
    Ok((n1 - n0) as f64 / (t1 - t0).as_secs_f64())
}

/// Frames per second from port A to port B at `size` bytes with `idle`
/// more ports attached.
fn switch_rate(size: usize, idle: u32, dur: Duration, prefill: bool) -> Result<f64, String> {
    let sw = SwitchHandle::spawn(Config {
        learning: false,
        cpu: PIN.load(Ordering::Relaxed).then_some(1),
        ..Config::default()
    })
    .map_err(|e| e.to_string())?;
    let g = Geometry::new(SLOTS, RING_CAP).map_err(|e| e.to_string())?;
    let mk = |name: &str| PortShm::create(name, g).map_err(|e| e.to_string());
    let (a, b) = (mk("bench-a")?, mk("bench-b")?);
    sw.attach(0, a.clone()).map_err(|e| e.to_string())?;
    sw.attach(1, b.clone()).map_err(|e| e.to_string())?;
    sw.add_static([2, 0, 0, 0, 0, 2], 1)
        .map_err(|e| e.to_string())?;
    let small = Geometry::new(64, 64).map_err(|e| e.to_string())?;
    let mut idle_peers = Vec::new();
    for i in 0..idle {
        let shm = PortShm::create("bench-idle", small).map_err(|e| e.to_string())?;
        sw.attach(2 + i as u16, shm.clone())
            .map_err(|e| e.to_string())?;
        idle_peers.push(Peer::new(shm, 32).map_err(|e| e.to_string())?);
    }
    let mut pa = Peer::new(a, 0).map_err(|e| e.to_string())?;
    let mut pb = Peer::new(b, RING_CAP).map_err(|e| e.to_string())?;
    let mut f = vec![0x55u8; size];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let frames = [&f[..]; 64];
    if prefill {
        pa.prefill(&f);
    }
    let mut run = |d: Duration| {
        let t0 = Instant::now();
        let mut got = 0u64;
        let mut polls = 0u32;
        loop {
            if prefill {
                pa.send_written(size as u16, 64);
            } else {
                pa.send(&frames);
            }
            loop {
                let k = pb.recv_discard();
                got += k as u64;
                if k < 64 {
                    break;
                }
            }
            polls += 1;
            if polls.is_multiple_of(64) && t0.elapsed() >= d {
                return got as f64 / t0.elapsed().as_secs_f64();
            }
        }
    };
    run(dur / 5);
    let r = run(dur);
    drop(idle_peers);
    sw.stop().map_err(|e| e.to_string())?;
    Ok(r)
}

/// Percent of one core the switch uses over `d` with `n` ports attached
/// and no traffic at all.
fn idle_cpu(n: u32, d: Duration) -> Result<f64, String> {
    let sw = SwitchHandle::spawn(Config::default()).map_err(|e| e.to_string())?;
    let small = Geometry::new(64, 64).map_err(|e| e.to_string())?;
    let mut peers = Vec::new();
    for i in 0..n {
        let shm = PortShm::create("bench-idle", small).map_err(|e| e.to_string())?;
        sw.attach(i as u16, shm.clone())
            .map_err(|e| e.to_string())?;
        peers.push(Peer::new(shm, 32).map_err(|e| e.to_string())?);
    }
    // Let every port park first.
    std::thread::sleep(Duration::from_millis(300));
    let c0 = cpu_seconds();
    let t0 = Instant::now();
    std::thread::sleep(d);
    let used = cpu_seconds() - c0;
    let pct = 100.0 * used / t0.elapsed().as_secs_f64();
    drop(peers);
    sw.stop().map_err(|e| e.to_string())?;
    Ok(pct)
}

/// CPU time of this process so far.
fn cpu_seconds() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// Frames per second through one ring between two threads, each frame
/// `size` bytes copied into a slot by the producer and out by the
/// consumer (`size` 0: indices only).
fn ring_rate(size: usize, dur: Duration) -> f64 {
    const RING: u32 = RING_CAP;
    const STRIDE: usize = 2048;
    let (region, mut prod) = pronto_ring::ring::create("bench-ring", RING).expect("ring");
    let pool = Arc::new(
        pronto_ring::SharedRegion::create("bench-pool", RING as usize * STRIDE).expect("pool"),
    );
    let mut cons = Consumer::attach(region, RING).expect("consumer");
    let stop = Arc::new(AtomicBool::new(false));
    let taken = Arc::new(AtomicU64::new(0));
    let (s, t, p2) = (stop.clone(), taken.clone(), pool.clone());
    let consumer = std::thread::spawn(move || {
        if PIN.load(Ordering::Relaxed) {
            let _ = pronto_switch::pin_current_thread(1);
        }
        let mut descs = [Desc::default(); 64];
        let mut buf = [0u8; STRIDE];
        let mut n = 0u64;
        while !s.load(Ordering::Relaxed) {
            let k = cons.pop(&mut descs);
            if size > 0 {
                for d in &descs[..k] {
                    p2.read_bytes(d.slot as usize * STRIDE, &mut buf[..d.len as usize]);
                }
            }
            n += k as u64;
            t.store(n, Ordering::Relaxed);
            if k == 0 {
                std::hint::spin_loop();
            }
        }
        t.store(n, Ordering::Relaxed);
    });
    let frame = vec![0x55u8; size.max(1)];
    let mut descs = [Desc::default(); 64];
    let mut slot = 0u32;
    let t0 = Instant::now();
    let mut rounds = 0u32;
    let start_count = |t: &AtomicU64| t.load(Ordering::Relaxed);
    let warm = dur / 5;
    let mut base: Option<(Instant, u64)> = None;
    loop {
        let room = (prod.room(64) as usize).min(64);
        for d in descs.iter_mut().take(room) {
            if size > 0 {
                pool.write_bytes(slot as usize * STRIDE, &frame[..size]);
            }
            *d = Desc::new(slot, 0, size as u16);
            slot = (slot + 1) % RING;
        }
        prod.push(&descs[..room]);
        rounds += 1;
        if rounds.is_multiple_of(256) {
            let now = Instant::now();
            match base {
                None if now - t0 >= warm => base = Some((now, start_count(&taken))),
                Some((b, n0)) if now - b >= dur => {
                    let n1 = start_count(&taken);
                    stop.store(true, Ordering::Relaxed);
                    let _ = consumer.join();
                    return (n1 - n0) as f64 / (now - b).as_secs_f64();
                }
                _ => {}
            }
        }
    }
}
