//! Port-to-port forwarding through the switch: one switching thread, a
//! sending peer thread and a receiving peer thread; frames delivered per
//! second at 64 and 1,500 bytes, and with 1, 64 and 1,024 ports attached
//! (traffic on two; the rest idle, so parked).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pronto_switch::{Config, Geometry, Peer, PortShm, SwitchHandle};

struct Rig {
    _sw: SwitchHandle,
    delivered: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    _idle: Vec<Peer>,
}

fn rig(len: usize, extra_ports: u16) -> Rig {
    pronto_switch::raise_fd_limit().expect("fd limit");
    let sw = SwitchHandle::spawn(Config {
        learning: false,
        ..Config::default()
    })
    .expect("switch");
    let g = Geometry::new(2048, 1024).expect("geometry");
    let (a, b) = (
        PortShm::create("a", g).expect("a"),
        PortShm::create("b", g).expect("b"),
    );
    sw.attach(0, a.clone()).expect("a");
    sw.attach(1, b.clone()).expect("b");
    sw.add_static([2, 0, 0, 0, 0, 1], 1).expect("static");
    let small = Geometry::new(64, 64).expect("small");
    let idle = (0..extra_ports)
        .map(|i| {
            let shm = PortShm::create("idle", small).expect("idle port");
            sw.attach(2 + i, shm.clone()).expect("attach idle");
            Peer::new(shm, 32).expect("idle peer")
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let delivered = Arc::new(AtomicU64::new(0));
    let (s, d) = (stop.clone(), delivered.clone());
    let rx = std::thread::spawn(move || {
        let mut p = Peer::new(b, 1024).expect("rx peer");
        let mut n = 0u64;
        while !s.load(Ordering::Relaxed) {
            let k = p.recv_discard();
            if k > 0 {
                n += k as u64;
                d.store(n, Ordering::Relaxed);
            } else {
                std::hint::spin_loop();
            }
        }
    });
    let s = stop.clone();
    let tx = std::thread::spawn(move || {
        let mut p = Peer::new(a, 0).expect("tx peer");
        let mut f = vec![0x55u8; len];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        let frames = [&f[..]; 32];
        while !s.load(Ordering::Relaxed) {
            if p.send(&frames) == 0 {
                std::hint::spin_loop();
            }
        }
    });
    Rig {
        _sw: sw,
        delivered,
        stop,
        threads: vec![rx, tx],
        _idle: idle,
    }
}

impl Rig {
    fn time(&self, n: u64) -> Duration {
        let start = self.delivered.load(Ordering::Relaxed);
        let t0 = Instant::now();
        while self.delivered.load(Ordering::Relaxed) < start + n {
            std::hint::spin_loop();
        }
        t0.elapsed()
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

const PER_ITER: u64 = 100_000;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("switch_port_to_port");
    g.throughput(Throughput::Elements(PER_ITER));
    for len in [64usize, 1500] {
        let r = rig(len, 0);
        g.bench_function(format!("{len}B"), |b| {
            b.iter_custom(|iters| r.time(iters * PER_ITER))
        });
    }
    g.finish();
    let mut g = c.benchmark_group("switch_ports_attached");
    g.throughput(Throughput::Elements(PER_ITER));
    for ports in [1u16, 64, 1024] {
        // Two ports carry traffic; `ports` counts every attached one (at
        // least the two).
        let r = rig(64, ports.saturating_sub(2));
        g.bench_function(format!("{ports}_ports_64B"), |b| {
            b.iter_custom(|iters| r.time(iters * PER_ITER))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(3));
    targets = bench
}
criterion_main!(benches);
