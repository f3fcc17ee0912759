//! Pure route lookups (no packets): random destinations against a
//! 170,000-route BGP-like table for `DirectIPLookup`'s DIR-24-8 table and
//! `RadixIPLookup`'s trie, and against a 64-route table for
//! `LinearIPLookup`. Throughput is reported in lookups per second on one
//! core. The table is generated here, deterministically, with the
//! prefix-length mix of scripts/make_bgp_table.py (no figure here is a
//! pass/fail threshold).
//!
//! IPv6: `LookupIP6Route`'s Poptrie (`ip6::route6_table::Lpm6`) on the
//! 200,000-prefix table of `bench/route6_table.py` (made here by
//! `synthetic_bgp6`, the same generator; or read from the file named by
//! `ROUTE6_TABLE` when set), looked up one at a time and a batch of 256 at
//! a time (as the element does), against random addresses inside the
//! table's prefixes. The IPv4 tables are measured the same two ways in the
//! same run, for a ratio.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pronto_elements::ip::route_table::{
    mask_of, Dir248, IpRoute, LinearTable, LpmTrie, RouteTable,
};
use pronto_elements::ip6::route6_table::{mask128, synthetic_bgp6, Lpm6};

/// A xorshift generator (deterministic).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `n` distinct prefixes, mostly /24, many /16-/23, few shorter, spread
/// over unicast space, with two next hops.
fn bgp_table(n: usize) -> Vec<IpRoute> {
    // Per-mille share of each prefix length.
    const DIST: [(u32, u32); 12] = [
        (24, 580),
        (23, 70),
        (22, 110),
        (21, 45),
        (20, 50),
        (19, 30),
        (18, 15),
        (17, 10),
        (16, 25),
        (15, 5),
        (14, 4),
        (12, 56),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut seen = std::collections::HashSet::new();
    let mut v = Vec::with_capacity(n);
    while v.len() < n {
        let x = rng.next();
        let mut pick = (x % 1000) as u32;
        let mut len = 24;
        for (l, w) in DIST {
            if pick < w {
                len = l;
                break;
            }
            pick -= w;
        }
        // Few very short prefixes: turn most of the /12 share into /24.
        if len == 12 && !(x >> 40).is_multiple_of(8) {
            len = 24;
        }
        let a = ((x >> 16) as u32 & mask_of(len)).max(1 << 24);
        if a >> 29 == 7 || !seen.insert((a, len)) {
            continue;
        }
        v.push(IpRoute {
            addr: a,
            mask: mask_of(len),
            gw: if x >> 63 == 0 {
                0x0a00_0002
            } else {
                0x0a00_0102
            },
            port: 1 + (x >> 63) as i32,
        });
    }
    v
}

fn destinations(n: usize) -> Vec<u32> {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    (0..n).map(|_| (rng.next() >> 11) as u32).collect()
}

fn bench_table(c: &mut Criterion, name: &str, t: &dyn RouteTable, dst: &[u32]) {
    let mut g = c.benchmark_group("route_lookup");
    g.throughput(Throughput::Elements(dst.len() as u64));
    g.bench_function(name, |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &a in dst {
                acc = acc.wrapping_add(t.lookup(black_box(a)).map_or(0, |(_, p)| p));
            }
            acc
        })
    });
    g.finish();
}

fn lookups(c: &mut Criterion) {
    let routes = bgp_table(170_000);
    let dst = destinations(1 << 16);
    let mut direct = Dir248::new();
    let mut radix = LpmTrie::new(16);
    for r in &routes {
        let _ = direct.add_route(*r, false);
        let _ = radix.add_route(*r, false);
    }
    bench_table(c, "DirectIPLookup_170k", &direct, &dst);
    bench_table(c, "RadixIPLookup_170k", &radix, &dst);
    let mut linear = LinearTable::default();
    for r in routes.iter().take(64) {
        let _ = linear.add_route(*r, false);
    }
    bench_table(c, "LinearIPLookup_64", &linear, &dst[..4096]);
}

fn bench_batched(c: &mut Criterion, name: &str, t: &dyn RouteTable, dst: &[u32]) {
    let mut g = c.benchmark_group("route_lookup");
    g.throughput(Throughput::Elements(dst.len() as u64));
    let mut out = vec![None; 256];
    g.bench_function(name, |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for chunk in dst.chunks(256) {
                t.lookup_many(black_box(chunk), &mut out[..chunk.len()]);
                acc = acc.wrapping_add(out[0].map_or(0, |(_, p)| p));
            }
            acc
        })
    });
    g.finish();
}

/// The IPv6 table: the file named by `ROUTE6_TABLE` (lines `PREFIX/LEN GW
/// OUT`), or the same table generated here.
fn table6() -> Vec<(u128, u8, u32)> {
    let Ok(path) = std::env::var("ROUTE6_TABLE") else {
        return synthetic_bgp6(200_000, 1);
    };
    let text = std::fs::read_to_string(&path).expect("ROUTE6_TABLE names a readable file");
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (a, len) = w.next()?.split_once('/')?;
            let a: std::net::Ipv6Addr = a.parse().ok()?;
            let out: u32 = w.nth(1)?.parse().ok()?;
            Some((u128::from(a), len.parse().ok()?, out))
        })
        .collect()
}

fn lookups6(c: &mut Criterion) {
    let routes = table6();
    let t0 = std::time::Instant::now();
    // Values are route numbers + 1 (as LookupIP6Route stores them).
    let t = Lpm6::build(
        routes
            .iter()
            .enumerate()
            .map(|(i, &(a, l, _))| (a, l, i as u32 + 1)),
    );
    let (nodes, leaves) = t.shape();
    eprintln!(
        "Lpm6: {} prefixes built in {:?}; {} nodes, {} leaves, {:.1} MiB searched",
        t.len(),
        t0.elapsed(),
        nodes,
        leaves,
        t.lookup_bytes() as f64 / (1 << 20) as f64
    );
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let dst: Vec<u128> = (0..1 << 16)
        .map(|_| {
            let (a, l, _) = routes[(rng.next() % routes.len() as u64) as usize];
            let host = (u128::from(rng.next()) << 64) | u128::from(rng.next());
            a | (host & !mask128(l.into()))
        })
        .collect();
    let reads: u64 = dst.iter().map(|&a| u64::from(t.node_reads(a))).sum();
    eprintln!(
        "Lpm6: {:.2} node reads per lookup below the direct level",
        reads as f64 / dst.len() as f64
    );
    let mut g = c.benchmark_group("route_lookup");
    g.throughput(Throughput::Elements(dst.len() as u64));
    g.bench_function("LookupIP6Route_200k", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for &a in &dst {
                acc = acc.wrapping_add(t.lookup(black_box(a)));
            }
            acc
        })
    });
    let mut out = vec![0u32; 256];
    g.bench_function("LookupIP6Route_200k_batch256", |b| {
        b.iter(|| {
            let mut acc = 0u32;
            for chunk in dst.chunks(256) {
                t.lookup_many(black_box(chunk), &mut out[..chunk.len()]);
                acc = acc.wrapping_add(out[0]);
            }
            acc
        })
    });
    g.finish();
}

fn lookups4_batched(c: &mut Criterion) {
    let routes = bgp_table(170_000);
    let dst = destinations(1 << 16);
    let mut direct = Dir248::new();
    let mut radix = LpmTrie::new(16);
    for r in &routes {
        let _ = direct.add_route(*r, false);
        let _ = radix.add_route(*r, false);
    }
    bench_batched(c, "DirectIPLookup_170k_batch256", &direct, &dst);
    bench_batched(c, "RadixIPLookup_170k_batch256", &radix, &dst);
}

criterion_group!(benches, lookups, lookups6, lookups4_batched);
criterion_main!(benches);
