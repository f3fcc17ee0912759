//! Per-element cost, in time per batch of 32 and 256 packets (divide by the
//! batch size for ns per packet). Compare runs A/B with criterion's saved
//! baselines (`cargo bench -- --save-baseline before`, then
//! `--baseline before`); no figure here is a pass/fail threshold.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use pronto_elements::{registry, ConfigCtx, Control, Element, Out};
use pronto_packet::{Batch, Pool};

/// A 64-byte Ethernet/IPv4/UDP frame, 10.0.0.1:1234 -> 8.8.8.8:53, valid
/// checksums.
fn frame() -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00, // Ethernet
        0x45, 0x00, 0x00, 0x32, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x00, 0x00, // IPv4
        10, 0, 0, 1, 8, 8, 8, 8, // addresses
        0x04, 0xd2, 0x00, 0x35, 0x00, 0x1e, 0x00, 0x00, // UDP
    ];
    f.resize(64, 0);
    let c = pronto_packet::wire::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

fn make(class: &str, config: &str, noutputs: usize, ip_frame: bool) -> Box<dyn Element> {
    let entry = registry::lookup(class).unwrap_or_else(|| panic!("no class {class}"));
    let push = vec![true; noutputs.max(1)];
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
    let _ = ip_frame;
    (entry.factory)(&ctx).unwrap_or_else(|e| panic!("{class}({config}): {e}"))
}

fn bench_element(c: &mut Criterion, class: &str, config: &str, noutputs: usize, strip: bool) {
    let pool = Pool::new(4096).expect("pool");
    let data = frame();
    let mut group = c.benchmark_group(format!("{class}({config})"));
    for &n in &[32usize, 256] {
        group.throughput(Throughput::Elements(n as u64));
        let mut elem = make(class, config, noutputs, strip);
        let mut bufs: Vec<Batch> = (0..noutputs).map(|_| Batch::new()).collect();
        let mut ctrl = Control::default();
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, &n| {
            b.iter_batched_ref(
                || {
                    let mut batch = Batch::new();
                    for _ in 0..n {
                        let mut p = pool.alloc_from(&data).expect("slot");
                        if strip {
                            p.pull(14);
                            p.set_network_header(0, 20);
                        }
                        let _ = batch.push(p);
                    }
                    batch
                },
                |batch| {
                    let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
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

fn elements(c: &mut Criterion) {
    bench_element(c, "Null", "", 1, false);
    bench_element(c, "Counter", "", 1, false);
    bench_element(c, "Tee", "2", 2, false);
    bench_element(c, "Strip", "14", 1, false);
    bench_element(c, "Classifier", "12/0800, -", 2, false);
    bench_element(c, "CheckIPHeader", "", 1, true);
    bench_element(
        c,
        "IPFilter",
        "deny src net 0.0.0.0/8 or src net 127.0.0.0/8, 1 ip frag, \
         allow tcp dst port 80 and dst net 93.184.0.0/16, allow tcp dst port 443, \
         deny tcp dst port 22 and not src net 10.0.0.0/23, allow tcp dst port 22, \
         allow udp dst port 53 and dst net 8.8.0.0/16, allow udp dst port 123, \
         allow icmp type echo or icmp type echo-reply, deny udp dst port 161, \
         allow src net 192.168.1.0/24 and tcp, deny all",
        2,
        true,
    );
    bench_element(c, "GetIPAddress", "16", 1, true);
    bench_element(c, "EtherMirror", "", 1, false);
}

criterion_group!(benches, elements);
criterion_main!(benches);
