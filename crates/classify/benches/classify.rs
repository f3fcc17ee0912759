//! Per-packet cost of the 11-rule firewall (IPFilter) and a small
//! IPClassifier on 64-byte packets.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use pronto_classify::{Engine, Program};

const FIREWALL: &[&str] = &[
    "deny src net 0.0.0.0/8 or src net 127.0.0.0/8",
    "1 ip frag",
    "allow tcp dst port 80 and dst net 93.184.0.0/16",
    "allow tcp dst port 443",
    "deny tcp dst port 22 and not src net 10.0.0.0/23",
    "allow tcp dst port 22",
    "allow udp dst port 53 and dst net 8.8.0.0/16",
    "allow udp dst port 123",
    "allow icmp type echo or icmp type echo-reply",
    "deny udp dst port 161",
    "allow src net 192.168.1.0/24 and tcp",
    "deny all",
];

include!("rules/c_firewall.rs");

const IPCLASSIFIER: &[&str] = &[
    "tcp dst port www or tcp dst port 443",
    "udp and (src port domain or dst port domain)",
    "icmp type echo",
    "icmp",
    "tcp opt syn and not tcp opt ack",
    "ip proto 47 or ip proto 89",
    "src net 192.168.1.0/24",
    "-",
];

/// 64-byte Ethernet frame carrying IPv4 (IP header at offset 14).
fn frame(proto: u8, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, frag: u16) -> Vec<u8> {
    let mut p = vec![0u8; 64];
    p[12] = 0x08; // ethertype IPv4
    let ip = &mut p[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&50u16.to_be_bytes());
    ip[6..8].copy_from_slice(&frag.to_be_bytes());
    ip[8] = 64;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&src);
    ip[16..20].copy_from_slice(&dst);
    let l4 = &mut ip[20..];
    if proto == 1 {
        l4[0] = (dport & 0xff) as u8;
    } else {
        l4[0..2].copy_from_slice(&sport.to_be_bytes());
        l4[2..4].copy_from_slice(&dport.to_be_bytes());
        l4[13] = 0x02; // SYN
    }
    p
}

fn mix() -> Vec<Vec<u8>> {
    vec![
        frame(6, [1, 2, 3, 4], [93, 184, 216, 34], 40000, 80, 0),
        frame(6, [1, 2, 3, 4], [5, 6, 7, 8], 40000, 443, 0),
        frame(6, [10, 0, 1, 5], [5, 6, 7, 8], 40000, 22, 0),
        frame(6, [11, 0, 1, 5], [5, 6, 7, 8], 40000, 22, 0),
        frame(17, [1, 2, 3, 4], [8, 8, 8, 8], 5353, 53, 0),
        frame(17, [1, 2, 3, 4], [9, 9, 9, 9], 123, 123, 0),
        frame(1, [1, 2, 3, 4], [9, 9, 9, 9], 0, 8, 0),
        frame(17, [1, 2, 3, 4], [9, 9, 9, 9], 5000, 161, 0),
        frame(6, [192, 168, 1, 7], [9, 9, 9, 9], 5000, 5555, 0),
        frame(6, [127, 0, 0, 1], [9, 9, 9, 9], 5000, 80, 0),
        frame(17, [1, 2, 3, 4], [9, 9, 9, 9], 5000, 9999, 0x2000),
        frame(47, [1, 2, 3, 4], [9, 9, 9, 9], 0, 0, 0),
    ]
}

/// 4096 frames shaped like the benchmark's flows.pcap: 60% TCP / 40% UDP
/// from 10.0.0.0/8 to random unicast destinations, 80% of destination
/// ports from a short list, so the decision path varies packet to packet.
fn flows() -> Vec<Vec<u8>> {
    const PORTS: [u16; 12] = [80, 443, 53, 22, 25, 123, 8080, 3306, 5000, 6000, 161, 1234];
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..4096)
        .map(|_| {
            let proto = if rnd() % 10 < 6 { 6 } else { 17 };
            let src = ((10u32 << 24) | (rnd() as u32 & 0xff_ffff)).to_be_bytes();
            let dst = loop {
                let a = rnd() as u32;
                if (1..224).contains(&(a >> 24)) && a >> 24 != 10 && a >> 24 != 127 {
                    break a.to_be_bytes();
                }
            };
            let sport = 1024 + (rnd() % 64512) as u16;
            let dport = if rnd() % 10 < 8 {
                PORTS[(rnd() % 12) as usize]
            } else {
                1 + (rnd() % 65535) as u16
            };
            frame(proto, src, dst, sport, dport, 0)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let fw = Program::ip_filter(FIREWALL).expect("firewall compiles");
    let ipc = Program::ip_classifier(IPCLASSIFIER).expect("ipclassifier compiles");
    let pkts = mix();
    let mut g = c.benchmark_group("classify");
    g.throughput(Throughput::Elements(pkts.len() as u64));
    g.bench_function("firewall_11_rules_mix", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for p in &pkts {
                acc = acc.wrapping_add(fw.classify(black_box(p), 14).map_or(7, |x| x));
            }
            acc
        })
    });
    let one = &pkts[1];
    g.throughput(Throughput::Elements(1));
    g.bench_function("firewall_11_rules_https", |b| {
        b.iter(|| fw.classify(black_box(one), 14))
    });
    g.throughput(Throughput::Elements(pkts.len() as u64));
    g.bench_function("ipclassifier_8_mix", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for p in &pkts {
                acc = acc.wrapping_add(ipc.classify(black_box(p), 14).map_or(7, |x| x));
            }
            acc
        })
    });
    let fl = flows();
    let refs: Vec<(&[u8], usize)> = fl.iter().map(|p| (&p[..], 14)).collect();
    g.throughput(Throughput::Elements(fl.len() as u64));
    g.bench_function("firewall_flows_scalar", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for &(p, nh) in &refs {
                acc = acc.wrapping_add(fw.classify(black_box(p), nh).map_or(7, |x| x));
            }
            acc
        })
    });
    let mut out = vec![None; 256];
    g.bench_function("firewall_flows_batch", |b| {
        b.iter(|| {
            let mut acc = 0usize;
            for chunk in refs.chunks(256) {
                fw.classify_batch(black_box(chunk), &mut out);
                acc = out
                    .iter()
                    .fold(acc, |a, o| a.wrapping_add(o.map_or(7, |x| x)));
            }
            acc
        })
    });
    // Both rule lists as `IPFilter` classifies them (the one-word index)
    // and as the decision program alone, batch by batch as the element
    // calls them, in one run.
    for (name, rules) in [("firewall", FIREWALL), ("c_firewall", C_FIREWALL)] {
        for (engine_name, engine) in [("auto", Engine::Auto), ("decision", Engine::Decision)] {
            let p = Program::ip_filter_with(rules, engine).expect("compiles");
            g.bench_function(format!("{name}_flows_{engine_name}"), |b| {
                b.iter(|| {
                    let mut acc = 0usize;
                    for chunk in refs.chunks(32) {
                        let out = &mut out[..chunk.len()];
                        if p.prefers_batch() {
                            p.classify_batch(black_box(chunk), out);
                        } else {
                            for (o, &(d, nh)) in out.iter_mut().zip(chunk) {
                                *o = p.classify(black_box(d), nh);
                            }
                        }
                        acc = out
                            .iter()
                            .fold(acc, |a, o| a.wrapping_add(o.map_or(7, |x| x)));
                    }
                    acc
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
