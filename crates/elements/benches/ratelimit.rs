//! Cost of the rate elements, in time per batch of 32 and 256 packets
//! (divide by the batch size for ns per packet): RatedSplitter and
//! BandwidthRatedSplitter (Click's jiffy token bucket), Meter, RED, and
//! FlowPolicer over many flows. Compare runs with criterion's baselines;
//! no figure here is a pass/fail threshold.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use pronto_elements::{registry, ConfigCtx, Control, Element, Out};
use pronto_packet::{Batch, Pool};

/// A 64-byte IPv4/UDP packet (network header at offset 0) from
/// 10.0.`hi`.`lo` port 1234 to 8.8.8.8 port 53.
fn packet(hi: u8, lo: u8) -> Vec<u8> {
    let mut f = vec![
        0x45, 0x00, 0x00, 0x40, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, // IPv4
        10, 0, hi, lo, 8, 8, 8, 8, // addresses
        0x04, 0xd2, 0x00, 0x35, 0x00, 0x2c, 0x00, 0x00, // UDP
    ];
    f.resize(64, 0);
    f
}

fn make(class: &str, config: &str, noutputs: usize) -> Box<dyn Element> {
    let entry = registry::lookup(class).unwrap_or_else(|| panic!("no class {class}"));
    let push = vec![true; noutputs];
    let ctx = ConfigCtx {
        name: "e",
        config,
        ninputs: 1,
        noutputs,
        base_dir: std::path::Path::new("."),
        keywords: entry.spec.keywords,
        output_push: &push,
        input_push: &push[..1],
        peers: &pronto_elements::NoPeers,
    };
    (entry.factory)(&ctx).unwrap_or_else(|e| panic!("{class}({config}): {e}"))
}

/// Pushes batches of `n` packets, cycling through `flows` sources, at a
/// clock that advances 1 ms per batch.
fn bench(c: &mut Criterion, class: &str, config: &str, noutputs: usize, flows: usize) {
    let pool = Pool::new(4096).expect("pool");
    let data: Vec<Vec<u8>> = (0..flows)
        .map(|i| packet((i >> 8) as u8, i as u8))
        .collect();
    let mut group = c.benchmark_group(format!("{class}({config}) {flows} flows"));
    for &n in &[32usize, 256] {
        group.throughput(Throughput::Elements(n as u64));
        let mut elem = make(class, config, noutputs);
        let mut bufs: Vec<Batch> = (0..noutputs).map(|_| Batch::new()).collect();
        let mut ctrl = Control::default();
        let mut now: i64 = 1_000_000_000_000_000_000;
        let mut next = 0usize;
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched_ref(
                || {
                    let mut batch = Batch::new();
                    for _ in 0..n {
                        let mut p = pool.alloc_from(&data[next % flows]).expect("slot");
                        p.set_network_header(0, 20);
                        next += 1;
                        let _ = batch.push(p);
                    }
                    batch
                },
                |batch| {
                    now += 1_000_000;
                    let mut out = Out::new(&mut bufs, &pool, now, &mut ctrl);
                    elem.push(0, batch, &mut out);
                    for b in bufs.iter_mut() {
                        b.clear();
                    }
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

fn ratelimit(c: &mut Criterion) {
    bench(c, "RatedSplitter", "100000", 2, 1);
    bench(c, "BandwidthRatedSplitter", "100Mbps", 2, 1);
    bench(c, "Meter", "10000, 100000", 3, 1);
    bench(c, "FlowPolicer", "10000, 100", 2, 1);
    bench(
        c,
        "FlowPolicer",
        "10000, 100, KEY src, CAPACITY 65536",
        2,
        50_000,
    );
}

criterion_group!(benches, ratelimit);
criterion_main!(benches);
