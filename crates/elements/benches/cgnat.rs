//! `CGNAT` per-packet cost on existing mappings with 1k, 100k and 1M
//! mappings in the table: the goal is a flat cost (open addressing, no
//! table scan). Each iteration pushes a batch of 32 packets of flows picked
//! pseudo-randomly across the whole table, outbound (input 0) and inbound
//! (input 1). No figure here is a pass/fail threshold.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use pronto_elements::{registry, ConfigCtx, Control, Element, Out};
use pronto_packet::{Batch, Pool};

const BATCH: usize = 32;
const FLOWS_PER_SUBSCRIBER: u32 = 2048;
const T0: i64 = 1_795_341_600_000_000_000;

/// A 32-byte IPv4/UDP packet, valid IP checksum, UDP checksum 0.
fn udp(src: u32, sport: u16, dst: u32, dport: u16) -> [u8; 32] {
    let mut p = [0u8; 32];
    p[..12].copy_from_slice(&[0x45, 0, 0, 32, 0, 1, 0, 0, 64, 17, 0, 0]);
    p[12..16].copy_from_slice(&src.to_be_bytes());
    p[16..20].copy_from_slice(&dst.to_be_bytes());
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    p[24..26].copy_from_slice(&12u16.to_be_bytes());
    let c = pronto_packet::wire::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

fn make(n: usize) -> Box<dyn Element> {
    let entry = registry::lookup("CGNAT").expect("CGNAT is registered");
    let push = [true, true];
    let config = format!("EXTERNAL 198.51.0.0/16, CAPACITY {n}, BLOCKS_PER_SUBSCRIBER 8");
    let ctx = ConfigCtx {
        name: "nat",
        config: &config,
        ninputs: 2,
        noutputs: 2,
        base_dir: std::path::Path::new("."),
        keywords: entry.spec.keywords,
        output_push: &push,
        input_push: &push,
        peers: &pronto_elements::NoPeers,
    };
    (entry.factory)(&ctx).expect("configures")
}

fn inside(k: u32) -> (u32, u16) {
    (
        0x6440_0000 + k / FLOWS_PER_SUBSCRIBER,
        (k % FLOWS_PER_SUBSCRIBER) as u16 + 1,
    )
}

/// Fills a NAT with `n` UDP mappings; returns it and each flow's external
/// address and port.
fn filled(pool: &Pool, n: u32) -> (Box<dyn Element>, Vec<(u32, u16)>) {
    let mut e = make(n as usize);
    let mut bufs = [Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    let mut ext = Vec::with_capacity(n as usize);
    let mut k = 0;
    while k < n {
        let mut batch = Batch::new();
        while batch.len() < BATCH && k < n {
            let (a, p) = inside(k);
            let mut pkt = pool.alloc_from(&udp(a, p, 0x0808_0808, 53)).expect("slot");
            pkt.set_network_header(0, 20);
            let _ = batch.push(pkt);
            k += 1;
        }
        let mut out = Out::new(&mut bufs, pool, T0, &mut ctrl);
        e.push(0, &mut batch, &mut out);
        for p in batch.iter() {
            let d = p.data();
            ext.push((
                u32::from_be_bytes([d[12], d[13], d[14], d[15]]),
                u16::from_be_bytes([d[20], d[21]]),
            ));
        }
        batch.clear();
    }
    assert_eq!(ext.len(), n as usize, "every flow was mapped");
    (e, ext)
}

fn cgnat(c: &mut Criterion) {
    let pool = Pool::new(4096).expect("pool");
    let mut group = c.benchmark_group("CGNAT existing mappings");
    group.throughput(Throughput::Elements(BATCH as u64));
    for &n in &[1_000u32, 100_000, 1_000_000] {
        let (mut e, ext) = filled(&pool, n);
        let mut bufs = [Batch::new(), Batch::new()];
        let mut ctrl = Control::default();
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut pick = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % n as u64) as u32
        };
        for (dir, name) in [(0usize, "outbound"), (1, "inbound")] {
            group.bench_with_input(BenchmarkId::new(name, n), &n, |b, _| {
                b.iter_batched_ref(
                    || {
                        let mut batch = Batch::new();
                        for _ in 0..BATCH {
                            let k = pick();
                            let data = if dir == 0 {
                                let (a, p) = inside(k);
                                udp(a, p, 0x0808_0808, 53)
                            } else {
                                let (a, p) = ext[k as usize];
                                udp(0x0808_0808, 53, a, p)
                            };
                            let mut pkt = pool.alloc_from(&data).expect("slot");
                            pkt.set_network_header(0, 20);
                            let _ = batch.push(pkt);
                        }
                        batch
                    },
                    |batch| {
                        let mut out = Out::new(&mut bufs, &pool, T0, &mut ctrl);
                        e.push(dir, batch, &mut out);
                        debug_assert_eq!(out.passed(), Some(dir));
                        batch.clear();
                        for b in bufs.iter_mut() {
                            b.clear();
                        }
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, cgnat);
criterion_main!(benches);
