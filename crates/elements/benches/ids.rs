//! `IDSMatcher` cost per packet for 10, 100 and 1,000 rules, on TCP packets
//! with 64-byte and 1,500-byte payloads that match no rule (the common
//! case: every rule's anchor is searched for, none verifies). Figures are
//! per batch of 32 packets; divide by 32 for ns per packet. No figure here
//! is a pass/fail threshold.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use pronto_elements::{registry, ConfigCtx, Control, Element, Out};
use pronto_packet::{Batch, Pool};

const BATCH: usize = 32;

/// Writes a rules file of `n` rules in the shape of a web ruleset: each
/// has a distinct content of 8 to 20 bytes, a third of them `nocase`, some
/// with a second, relative content.
fn rules_file(n: usize) -> std::path::PathBuf {
    let mut s = String::from("ipvar HOME_NET 10.0.0.0/8\nportvar HTTP_PORTS [80,8080]\n");
    for i in 0..n {
        let word = format!("sig{i:04}-{}", "x".repeat(i % 13));
        let nocase = if i % 3 == 0 { " nocase;" } else { "" };
        let second = if i % 4 == 0 {
            " content:\"|0d 0a|\"; distance:0; within:64;"
        } else {
            ""
        };
        s.push_str(&format!(
            "alert tcp any any -> $HOME_NET $HTTP_PORTS (msg:\"bench {i}\"; content:\"{word}\";{nocase}{second} sid:{};)\n",
            1_000_000 + i
        ));
    }
    let p = std::env::temp_dir().join(format!("pronto-ids-bench-{}-{n}.rules", std::process::id()));
    std::fs::write(&p, s).expect("write rules");
    p
}

/// An Ethernet-less IPv4/TCP packet 192.0.2.1:40000 -> 10.0.0.2:80 with
/// `payload` bytes of HTTP-looking text.
fn packet(payload: usize) -> Vec<u8> {
    let text = b"GET /index.html HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64)\r\nAccept: text/html,application/xhtml+xml\r\n";
    let total = 40 + payload;
    let mut f = vec![
        0x45,
        0x00,
        (total >> 8) as u8,
        total as u8,
        0,
        1,
        0x40,
        0,
        64,
        6,
        0,
        0, // IPv4
        192,
        0,
        2,
        1,
        10,
        0,
        0,
        2, // addresses
        0x9c,
        0x40,
        0x00,
        0x50,
        0,
        0,
        0,
        1,
        0,
        0,
        0,
        1,
        0x50,
        0x18,
        0xff,
        0xff,
        0,
        0,
        0,
        0, // TCP, ACK|PSH
    ];
    for i in 0..payload {
        f.push(text[i % text.len()]);
    }
    f
}

fn make(rules: &std::path::Path) -> Box<dyn Element> {
    let entry = registry::lookup("IDSMatcher").expect("IDSMatcher registered");
    let push = [true, true];
    let config = format!("{}, QUIET true", rules.display());
    let ctx = ConfigCtx {
        name: "ids",
        config: &config,
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

fn bench(c: &mut Criterion) {
    let pool = Pool::new(4096).expect("pool");
    for &payload in &[64usize, 1500] {
        let data = packet(payload);
        let mut group = c.benchmark_group(format!("IDSMatcher/payload{payload}"));
        group.throughput(Throughput::Elements(BATCH as u64));
        for &n in &[10usize, 100, 1000] {
            let path = rules_file(n);
            let mut elem = make(&path);
            let _ = std::fs::remove_file(&path);
            let mut bufs = [Batch::new(), Batch::new()];
            let mut ctrl = Control::default();
            group.bench_with_input(BenchmarkId::new("rules", n), &n, |b, _| {
                b.iter_batched_ref(
                    || {
                        let mut batch = Batch::new();
                        for _ in 0..BATCH {
                            let mut p = pool.alloc_from(&data).expect("slot");
                            p.set_network_header(0, 20);
                            let _ = batch.push(p);
                        }
                        batch
                    },
                    |batch| {
                        let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
                        elem.push(0, batch, &mut out);
                        batch.clear();
                        for b in bufs.iter_mut() {
                            b.clear();
                        }
                    },
                    BatchSize::PerIteration,
                );
            });
            assert_eq!(
                elem.read_handler("alerts").expect("alerts"),
                "0",
                "the bench packets match no rule"
            );
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
