//! Pure route lookups (no packets): random destinations against a
//! 170,000-route BGP-like table for `DirectIPLookup`'s DIR-24-8 table and
//! `RadixIPLookup`'s trie, and against a 64-route table for
//! `LinearIPLookup`. Throughput is reported in lookups per second on one
//! core. The table is generated here, deterministically, with the
//! prefix-length mix of scripts/make_bgp_table.py (no figure here is a
//! pass/fail threshold).

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pronto_elements::ip::route_table::{
    mask_of, Dir248, IpRoute, LinearTable, LpmTrie, RouteTable,
};

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

criterion_group!(benches, lookups);
criterion_main!(benches);
