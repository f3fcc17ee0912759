//! Per-packet cost of `IPFilter` rule lists of 10 to 10,000 firewall-like
//! rules, decision program (`Engine::Decision`) against rule-set index
//! (`Engine::Index`). Also prints, per size, the configuration time and
//! the program's memory.
//!
//! Rules (deterministic): source/destination nets of varied prefix
//! lengths, protocol, destination port or port range, allow/deny, a few
//! rules with TCP-flag tests, and `deny all` at the end. Traffic: half the
//! packets are built to match a rule picked uniformly over the list (so
//! matches land all over it), the other half are random and mostly reach
//! the default rule.

use std::net::Ipv4Addr;
use std::time::Instant;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use pronto_classify::{Engine, Program};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What a generated rule requires of a packet.
struct Shape {
    proto: Option<u8>,
    src: Option<(u32, u32)>,
    dst: Option<(u32, u32)>,
    dport: Option<(u16, u16)>,
    syn: bool,
}

const PORTS: [u16; 16] = [
    22, 25, 53, 80, 110, 123, 143, 161, 443, 993, 3306, 5432, 6379, 8080, 8443, 9000,
];

fn net(r: &mut Rng, lens: &[u32]) -> (u32, u32) {
    let len = lens[r.below(lens.len() as u64) as usize];
    let base = match r.below(4) {
        0 => 0x0A00_0000 | (r.next() as u32 & 0x00FF_FFFF),
        1 => 0xAC10_0000 | (r.next() as u32 & 0x000F_FFFF),
        2 => 0xC0A8_0000 | (r.next() as u32 & 0x0000_FFFF),
        _ => r.next() as u32,
    };
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    (base & mask, len)
}

fn net_text((a, len): (u32, u32)) -> String {
    if len == 32 {
        format!("host {}", Ipv4Addr::from(a))
    } else {
        format!("net {}/{len}", Ipv4Addr::from(a))
    }
}

fn port(r: &mut Rng) -> u16 {
    if r.below(3) == 0 {
        1024 + r.below(60000) as u16
    } else {
        PORTS[r.below(PORTS.len() as u64) as usize]
    }
}

/// `n` rules plus `deny all`, with what each rule's matching packets look
/// like.
fn rules(n: usize) -> (Vec<String>, Vec<Shape>) {
    let mut r = Rng(0x2545_f491_4f6c_dd1d ^ n as u64);
    let mut texts = Vec::with_capacity(n + 1);
    let mut shapes = Vec::with_capacity(n);
    for _ in 0..n {
        let act = if r.below(4) == 0 { "deny" } else { "allow" };
        let mut s = Shape {
            proto: None,
            src: None,
            dst: None,
            dport: None,
            syn: false,
        };
        let text = match r.below(20) {
            0..=7 => {
                let d = net(&mut r, &[16, 24, 24, 28, 32]);
                let p = port(&mut r);
                s.proto = Some(6);
                s.dst = Some(d);
                s.dport = Some((p, p));
                format!("{act} tcp dst port {p} and dst {}", net_text(d))
            }
            8..=10 => {
                let sn = net(&mut r, &[8, 12, 16, 24]);
                let d = net(&mut r, &[16, 20, 24]);
                let p = port(&mut r);
                let hi = p.saturating_add(r.below(100) as u16);
                s.proto = Some(17);
                s.src = Some(sn);
                s.dst = Some(d);
                s.dport = Some((p, hi));
                format!(
                    "{act} udp dst port {p}-{hi} and src {} and dst {}",
                    net_text(sn),
                    net_text(d)
                )
            }
            11..=13 => {
                let sn = net(&mut r, &[8, 16, 24, 32]);
                let p = port(&mut r);
                s.proto = Some(6);
                s.src = Some(sn);
                s.dport = Some((p, p));
                format!("{act} src {} and dst port {p}", net_text(sn))
            }
            14..=15 => {
                let d = net(&mut r, &[8, 16, 24, 32]);
                s.dst = Some(d);
                format!("{act} dst {}", net_text(d))
            }
            16 => {
                let d = net(&mut r, &[16, 24]);
                s.proto = Some(1);
                s.dst = Some(d);
                s.dport = Some((0, 0xFFFF));
                format!("{act} icmp type echo and dst {}", net_text(d))
            }
            17..=18 => {
                let sn = net(&mut r, &[8, 16, 24]);
                let d = net(&mut r, &[24, 32]);
                s.proto = Some(6);
                s.src = Some(sn);
                s.dst = Some(d);
                format!("{act} tcp and src {} and dst {}", net_text(sn), net_text(d))
            }
            _ => {
                let d = net(&mut r, &[16, 24]);
                let p = port(&mut r);
                s.proto = Some(6);
                s.dst = Some(d);
                s.dport = Some((p, p));
                s.syn = true;
                format!(
                    "{act} tcp dst port {p} and dst {} and tcp opt syn",
                    net_text(d)
                )
            }
        };
        texts.push(text);
        shapes.push(s);
    }
    texts.push("deny all".into());
    (texts, shapes)
}

fn in_net(r: &mut Rng, n: Option<(u32, u32)>) -> u32 {
    let x = r.next() as u32;
    match n {
        Some((a, len)) if len > 0 => a | (x & !(u32::MAX << (32 - len))),
        Some(_) => x,
        None => x,
    }
}

/// 64-byte IPv4 packets (no link header).
fn traffic(shapes: &[Shape], count: usize) -> Vec<Vec<u8>> {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    (0..count)
        .map(|k| {
            let mut p = vec![0u8; 64];
            p[0] = 0x45;
            p[2..4].copy_from_slice(&64u16.to_be_bytes());
            p[8] = 64;
            let (proto, src, dst, dport, syn) = if k % 2 == 0 {
                let s = &shapes[r.below(shapes.len() as u64) as usize];
                let proto = s.proto.unwrap_or(if r.below(2) == 0 { 6 } else { 17 });
                let dport = match s.dport {
                    Some((lo, hi)) => lo + r.below(u64::from(hi - lo) + 1) as u16,
                    None => port(&mut r),
                };
                let src = in_net(&mut r, s.src);
                let dst = in_net(&mut r, s.dst);
                (proto, src, dst, dport, s.syn)
            } else {
                let proto = [6u8, 6, 17, 1][r.below(4) as usize];
                let src = in_net(&mut r, None);
                let dst = in_net(&mut r, None);
                (proto, src, dst, port(&mut r), r.below(2) == 0)
            };
            p[9] = proto;
            p[12..16].copy_from_slice(&src.to_be_bytes());
            p[16..20].copy_from_slice(&dst.to_be_bytes());
            let l4 = &mut p[20..];
            if proto == 1 {
                l4[0] = 8; // echo request
            } else {
                l4[0..2].copy_from_slice(&(1024 + r.below(60000) as u16).to_be_bytes());
                l4[2..4].copy_from_slice(&dport.to_be_bytes());
                l4[12] = 0x50;
                l4[13] = if syn { 0x02 } else { 0x10 };
            }
            p
        })
        .collect()
}

/// Resident set size of this process in KiB (0 when unknown).
fn rss_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

const PACKETS: usize = 1024;

/// Rule counts: 10, 100, 1000 and 10,000, or the comma-separated list in
/// `IPFILTER_SCALE_SIZES`.
fn sizes() -> Vec<usize> {
    std::env::var("IPFILTER_SCALE_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 100, 1_000, 10_000])
}

fn report() {
    for n in sizes() {
        let (texts, _) = rules(n);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for (name, engine) in [("decision", Engine::Decision), ("index", Engine::Index)] {
            let before = rss_kib("VmRSS:");
            let t = Instant::now();
            let p = Program::ip_filter_with(&refs, engine).expect("rules compile");
            let dt = t.elapsed();
            let after = rss_kib("VmRSS:");
            println!(
                "ipfilter_scale: {n:>5} rules {name:>8}: configure {:>9.3} ms, program {:>9} KiB, \
                 rss +{} KiB (peak rss {} KiB)",
                dt.as_secs_f64() * 1e3,
                p.heap_bytes() / 1024,
                after.saturating_sub(before),
                rss_kib("VmHWM:"),
            );
            black_box(&p);
        }
    }
}

fn bench(c: &mut Criterion) {
    report();
    let mut g = c.benchmark_group("ipfilter_scale");
    g.throughput(Throughput::Elements(PACKETS as u64));
    g.sample_size(10);
    g.warm_up_time(std::time::Duration::from_millis(500));
    g.measurement_time(std::time::Duration::from_secs(2));
    for n in sizes() {
        let (texts, shapes) = rules(n);
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let pkts = traffic(&shapes, PACKETS);
        let batch: Vec<(&[u8], usize)> = pkts.iter().map(|p| (&p[..], 0)).collect();
        let mut want: Option<Vec<Option<usize>>> = None;
        for (name, engine) in [("decision", Engine::Decision), ("index", Engine::Index)] {
            let p = Program::ip_filter_with(&refs, engine).expect("rules compile");
            let mut out = vec![None; PACKETS];
            p.classify_batch(&batch, &mut out);
            match &want {
                None => {
                    let hits = out.iter().filter(|o| o.is_some()).count();
                    println!("ipfilter_scale: {n:>5} rules: {hits}/{PACKETS} packets allowed");
                    want = Some(out.clone());
                }
                Some(w) => assert_eq!(w, &out, "engines disagree at {n} rules"),
            }
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    for ch in batch.chunks(32) {
                        p.classify_batch(black_box(ch), &mut out[..ch.len()]);
                    }
                    black_box(&out);
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
