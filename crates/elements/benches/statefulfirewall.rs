//! `StatefulFirewall` per-packet cost on established TCP connections with
//! 1k, 100k and 1M connections in the table. Each iteration pushes a batch
//! of 32 ACK segments of connections picked pseudo-randomly across the
//! whole table, from the trusted side (input 0) and from the untrusted
//! side (input 1). No figure here is a pass/fail threshold.

mod common;

use common::{bench_input, configure, ip_packet, ipv4, picker, BATCH, T0};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pronto_elements::{Control, Element, Out};
use pronto_packet::{Batch, Pool};

const SERVER: u32 = 0x5db8_d822; // 93.184.216.34

/// A 40-byte IPv4/TCP segment with flags `flags` (valid IP checksum; the
/// firewall does not check the TCP checksum).
fn tcp(src: u32, sport: u16, dst: u32, dport: u16, flags: u8) -> [u8; 40] {
    let mut p = ipv4::<40>(6, src, sport, dst, dport);
    p[32] = 0x50; // data offset 5
    p[33] = flags;
    p[34..36].copy_from_slice(&[0xff, 0xff]); // window
    p
}

fn make(n: usize) -> Box<dyn Element> {
    configure("StatefulFirewall", "fw", &format!("CAPACITY {n}"))
}

/// Connection `k`: a trusted client address and port (1024 ports per
/// client) to the server's port 443.
fn client(k: u32) -> (u32, u16) {
    (0x0a00_0000 + k / 1024, (k % 1024) as u16 + 1024)
}

/// The segment of connection `k` from the trusted (`dir` 0) or untrusted
/// side with `flags`.
fn segment(k: u32, dir: usize, flags: u8) -> [u8; 40] {
    let (a, p) = client(k);
    if dir == 0 {
        tcp(a, p, SERVER, 443, flags)
    } else {
        tcp(SERVER, 443, a, p, flags)
    }
}

fn push(
    e: &mut dyn Element,
    pool: &Pool,
    dir: usize,
    ks: std::ops::Range<u32>,
    flags: u8,
    bufs: &mut [Batch; 2],
    ctrl: &mut Control,
) {
    let mut batch = Batch::new();
    for k in ks {
        let _ = batch.push(ip_packet(pool, &segment(k, dir, flags)));
    }
    let mut out = Out::new(bufs, pool, T0, ctrl);
    e.push(dir, &mut batch, &mut out);
    assert_eq!(out.passed(), Some(dir), "every segment passes");
    batch.clear();
    for b in bufs.iter_mut() {
        b.clear();
    }
}

/// A firewall with `n` established connections (SYN, SYN-ACK, ACK each).
fn filled(pool: &Pool, n: u32) -> Box<dyn Element> {
    let mut e = make(n as usize);
    let mut bufs = [Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    let mut k = 0;
    while k < n {
        let ks = k..(k + BATCH as u32).min(n);
        push(e.as_mut(), pool, 0, ks.clone(), 0x02, &mut bufs, &mut ctrl);
        push(e.as_mut(), pool, 1, ks.clone(), 0x12, &mut bufs, &mut ctrl);
        push(e.as_mut(), pool, 0, ks.clone(), 0x10, &mut bufs, &mut ctrl);
        k = ks.end;
    }
    assert_eq!(
        e.read_handler("nconnections").expect("handler"),
        n.to_string()
    );
    e
}

fn firewall(c: &mut Criterion) {
    let pool = Pool::new(4096).expect("pool");
    let mut group = c.benchmark_group("StatefulFirewall established");
    group.throughput(Throughput::Elements(BATCH as u64));
    for &n in &[1_000u32, 100_000, 1_000_000] {
        let mut e = filled(&pool, n);
        let mut pick = picker(n);
        for (dir, name) in [(0usize, "trusted"), (1, "untrusted")] {
            let id = BenchmarkId::new(name, n);
            let packet = || segment(pick(), dir, 0x10);
            bench_input(&mut group, id, &pool, e.as_mut(), dir, packet);
        }
    }
    group.finish();
}

criterion_group!(benches, firewall);
criterion_main!(benches);
