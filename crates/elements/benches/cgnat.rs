//! `CGNAT` per-packet cost on existing mappings with 1k, 100k and 1M
//! mappings in the table: the goal is a flat cost (open addressing, no
//! table scan). Each iteration pushes a batch of 32 packets of flows picked
//! pseudo-randomly across the whole table, outbound (input 0) and inbound
//! (input 1). No figure here is a pass/fail threshold.

mod common;

use common::{bench_input, configure, ip_packet, ipv4, picker, BATCH, T0};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pronto_elements::{Control, Element, Out};
use pronto_packet::{Batch, Pool};

const FLOWS_PER_SUBSCRIBER: u32 = 2048;

/// A 32-byte IPv4/UDP packet, valid IP checksum, UDP checksum 0.
fn udp(src: u32, sport: u16, dst: u32, dport: u16) -> [u8; 32] {
    let mut p = ipv4::<32>(17, src, sport, dst, dport);
    p[24..26].copy_from_slice(&12u16.to_be_bytes());
    p
}

fn make(n: usize) -> Box<dyn Element> {
    let config = format!("EXTERNAL 198.51.0.0/16, CAPACITY {n}, BLOCKS_PER_SUBSCRIBER 8");
    configure("CGNAT", "nat", &config)
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
            let _ = batch.push(ip_packet(pool, &udp(a, p, 0x0808_0808, 53)));
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
        let mut pick = picker(n);
        for (dir, name) in [(0usize, "outbound"), (1, "inbound")] {
            let packet = || {
                let k = pick();
                if dir == 0 {
                    let (a, p) = inside(k);
                    udp(a, p, 0x0808_0808, 53)
                } else {
                    let (a, p) = ext[k as usize];
                    udp(0x0808_0808, 53, a, p)
                }
            };
            let id = BenchmarkId::new(name, n);
            bench_input(&mut group, id, &pool, e.as_mut(), dir, packet);
        }
    }
    group.finish();
}

criterion_group!(benches, cgnat);
criterion_main!(benches);
