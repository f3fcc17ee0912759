//! `IPRewriter` on existing flows: the per-packet cost of
//! `IPRewriter(pattern 10.0.0.1 1024-65535 - - 0 1)` (bench/conf/d_nat.click)
//! with 20,000 live UDP flows, packets in a random flow order, batches of 32
//! and 256 (divide by the batch size for ns per packet). Compare runs with
//! criterion's baselines (`--save-baseline before`, then `--baseline
//! before`); no figure here is a pass/fail threshold.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use pronto_elements::{registry, ConfigCtx, Control, Element, Out};
use pronto_packet::{Batch, Pool};

const FLOWS: usize = 20_000;

/// An IPv4/UDP packet (no link header) of flow `i`: 192.168.x.y:port ->
/// 8.8.8.8:53, valid checksums.
fn packet(i: usize) -> Vec<u8> {
    let (host, port) = (i % 5000, 1024 + (i / 5000) as u16);
    let mut f = vec![
        0x45,
        0x00,
        0x00,
        0x32,
        0x12,
        0x34,
        0x00,
        0x00,
        0x40,
        0x11,
        0x00,
        0x00, // IPv4
        192,
        168,
        (host >> 8) as u8,
        host as u8,
        8,
        8,
        8,
        8, // addresses
        (port >> 8) as u8,
        port as u8,
        0x00,
        0x35,
        0x00,
        0x1e,
        0x00,
        0x00, // UDP
    ];
    f.resize(50, 0);
    let c = pronto_packet::wire::checksum(&f[..20]);
    f[10..12].copy_from_slice(&c.to_be_bytes());
    f
}

fn rewriter() -> Box<dyn Element> {
    let entry = registry::lookup("IPRewriter").expect("IPRewriter");
    let push = [true, true];
    let ctx = ConfigCtx {
        name: "rw",
        config: "pattern 10.0.0.1 1024-65535 - - 0 1",
        ninputs: 1,
        noutputs: 2,
        base_dir: std::path::Path::new("."),
        keywords: entry.spec.keywords,
        output_push: &push,
        input_push: &push[..1],
        peers: &pronto_elements::NoPeers,
    };
    (entry.factory)(&ctx).expect("configures")
}

fn fill(
    batch: &mut Batch,
    pool: &Pool,
    frames: &[Vec<u8>],
    order: &[usize],
    at: &mut usize,
    n: usize,
) {
    for _ in 0..n {
        let mut p = pool.alloc_from(&frames[order[*at]]).expect("slot");
        p.set_network_header(0, 20);
        let _ = batch.push(p);
        *at = (*at + 1) % order.len();
    }
}

fn nat(c: &mut Criterion) {
    let pool = Pool::new(4096).expect("pool");
    let frames: Vec<Vec<u8>> = (0..FLOWS).map(packet).collect();
    // A fixed pseudo-random flow order (xorshift).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let order: Vec<usize> = (0..1 << 16)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % FLOWS as u64) as usize
        })
        .collect();
    let mut group = c.benchmark_group("IPRewriter 20k flows");
    for &n in &[32usize, 256] {
        group.throughput(Throughput::Elements(n as u64));
        let mut rw = rewriter();
        let mut bufs = [Batch::new(), Batch::new()];
        let mut ctrl = Control::default();
        // Every flow once, in order: the table holds 20,000 flows.
        let seq: Vec<usize> = (0..FLOWS).collect();
        let mut at = 0;
        for _ in 0..FLOWS.div_ceil(256) {
            let mut batch = Batch::new();
            let left = (FLOWS - at).min(256);
            fill(&mut batch, &pool, &frames, &seq, &mut at, left);
            let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
            rw.push(0, &mut batch, &mut out);
            bufs.iter_mut().for_each(|b| b.clear());
        }
        assert_eq!(rw.read_handler("nmappings").expect("h"), FLOWS.to_string());
        let mut at = 0;
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched_ref(
                || {
                    let mut batch = Batch::new();
                    fill(&mut batch, &pool, &frames, &order, &mut at, n);
                    batch
                },
                |batch| {
                    let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
                    rw.push(0, batch, &mut out);
                    bufs.iter_mut().for_each(|b| b.clear());
                },
                BatchSize::PerIteration,
            )
        });
        assert_eq!(rw.read_handler("nmappings").expect("h"), FLOWS.to_string());
    }
    group.finish();
}

criterion_group!(benches, nat);
criterion_main!(benches);
