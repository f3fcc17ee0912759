//! `FlowMonitor` per-packet cost with 1k, 100k and 1M flows in its cache,
//! against `StatefulFirewall` on the same table sizes in the same run (the
//! other per-flow table of the library): each iteration pushes a batch of
//! 32 UDP packets of flows picked pseudo-randomly across the whole cache.
//! No figure here is a pass/fail threshold.

mod common;

use common::{bench_input, configure, ip_packet, ipv4, picker, BATCH, T0};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pronto_elements::{Control, Element, Out};
use pronto_packet::{Batch, Pool};

const SERVER: u32 = 0x5db8_d822; // 93.184.216.34

/// Flow `k`: a client address and port (1024 ports per client) to the
/// server's port 53, a 64-byte UDP packet.
fn packet(k: u32) -> [u8; 64] {
    ipv4::<64>(
        17,
        0x0a00_0000 + k / 1024,
        (k % 1024) as u16 + 1024,
        SERVER,
        53,
    )
}

/// An element `class` (`config`) that has seen every one of `n` flows.
fn filled(pool: &Pool, class: &str, config: &str, n: u32) -> Box<dyn Element> {
    let mut e = configure(class, "e", config);
    let mut bufs = [Batch::new(), Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    let mut k = 0;
    while k < n {
        let mut batch = Batch::new();
        for j in k..(k + BATCH as u32).min(n) {
            let _ = batch.push(ip_packet(pool, &packet(j)));
        }
        let mut out = Out::new(&mut bufs, pool, T0, &mut ctrl);
        e.push(0, &mut batch, &mut out);
        batch.clear();
        for b in bufs.iter_mut() {
            b.clear();
        }
        k += BATCH as u32;
    }
    e
}

fn monitor(c: &mut Criterion) {
    let pool = Pool::new(4096).expect("pool");
    let mut group = c.benchmark_group("FlowMonitor");
    group.throughput(Throughput::Elements(BATCH as u64));
    for &n in &[1_000u32, 100_000, 1_000_000] {
        let mut e = filled(&pool, "FlowMonitor", &format!("CAPACITY {n}"), n);
        assert_eq!(e.read_handler("nflows").expect("nflows"), n.to_string());
        let mut pick = picker(n);
        bench_input(
            &mut group,
            BenchmarkId::new("flows", n),
            &pool,
            e.as_mut(),
            0,
            || packet(pick()),
        );
        let mut fw = filled(&pool, "StatefulFirewall", &format!("CAPACITY {n}"), n);
        let mut pick = picker(n);
        bench_input(
            &mut group,
            BenchmarkId::new("StatefulFirewall UDP, same flows", n),
            &pool,
            fw.as_mut(),
            0,
            || packet(pick()),
        );
    }
    group.finish();
}

criterion_group!(benches, monitor);
criterion_main!(benches);
