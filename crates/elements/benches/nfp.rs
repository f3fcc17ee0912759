//! What a parallel group costs in one process: tagging, copying a batch of
//! 32 packets to d-1 more branches (header-only or full copies) and
//! merging the d versions back, against the packet size (the NFP paper's
//! relative overhead `ro = 64·(d−1)/s` for header copies). ns per packet =
//! time per batch / 32. No figure here is a pass/fail threshold.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use pronto_elements::{registry, ConfigCtx, Control, Element, Out};
use pronto_packet::{Batch, Pool};

const BATCH: usize = 32;

/// An Ethernet/IPv4/UDP frame of `len` bytes with valid checksums.
fn frame(len: usize, i: u16) -> Vec<u8> {
    let mut f = vec![
        0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00, 0x45, 0x00, 0, 0, 0x12, 0x34,
        0x00, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 8, 8, 8, 8,
    ];
    f.extend_from_slice(&i.to_be_bytes());
    f.extend_from_slice(&[0x00, 0x35, 0, 0, 0, 0]);
    f.resize(len, 0xab);
    let ip_len = (len - 14) as u16;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
    let c = pronto_packet::wire::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

fn make(class: &str, config: &str, ninputs: usize, noutputs: usize) -> Box<dyn Element> {
    let entry = registry::lookup(class).unwrap_or_else(|| panic!("no class {class}"));
    let inp = vec![true; ninputs];
    let out = vec![true; noutputs];
    let ctx = ConfigCtx {
        name: "e",
        config,
        ninputs,
        noutputs,
        base_dir: std::path::Path::new("."),
        keywords: entry.spec.keywords,
        output_push: &out,
        input_push: &inp,
        peers: &pronto_elements::NoPeers,
    };
    (entry.factory)(&ctx).unwrap_or_else(|e| panic!("{class}({config}): {e}"))
}

/// Tag, copy to `d` branches, merge: the merged packets come out.
struct Group {
    tag: Box<dyn Element>,
    copy: Box<dyn Element>,
    merge: Box<dyn Element>,
    d: usize,
    bufs: Vec<Batch>,
    one: Vec<Batch>,
    ctrl: Control,
}

impl Group {
    fn new(d: usize, kind: &str) -> Group {
        let kinds: Vec<&str> = std::iter::once("orig")
            .chain(std::iter::repeat_n(kind, d - 1))
            .collect();
        // Each copy owns one field, as a branch that wrote it would.
        let fields = ["src_port", "dst_port", "dst_ip", "src_ip"];
        let inputs: Vec<String> = kinds
            .iter()
            .enumerate()
            .map(|(i, k)| {
                if i == 0 {
                    "orig".to_string()
                } else {
                    format!("{k} {}", fields[(i - 1) % 4])
                }
            })
            .collect();
        Group {
            tag: make("NFPTag", "", 1, 1),
            copy: make("NFPCopy", &kinds.join(", "), 1, d),
            merge: make("NFPMerge", &inputs.join(", "), d, 1),
            d,
            bufs: (0..d).map(|_| Batch::new()).collect(),
            one: vec![Batch::new()],
            ctrl: Control::default(),
        }
    }

    fn run(&mut self, pool: &Pool, batch: &mut Batch) -> usize {
        {
            let mut out = Out::new(&mut self.one, pool, 1, &mut self.ctrl);
            self.tag.push(0, batch, &mut out);
        }
        {
            let mut out = Out::new(&mut self.bufs, pool, 1, &mut self.ctrl);
            self.copy.push(0, batch, &mut out);
        }
        // The original went to output 0 (passed): it is still in `batch`.
        self.bufs[0].append(batch);
        for k in 0..self.d {
            let mut b = std::mem::take(&mut self.bufs[k]);
            let mut out = Out::new(&mut self.one, pool, 1, &mut self.ctrl);
            self.merge.push(k, &mut b, &mut out);
        }
        let n = self.one[0].len();
        self.one[0].clear();
        n
    }
}

fn bench(c: &mut Criterion) {
    let pool = Pool::new(4096).expect("pool");
    let mut g = c.benchmark_group("nfp_copy_merge");
    g.throughput(Throughput::Elements(BATCH as u64));
    for size in [64usize, 256, 1024, 1500] {
        let frames: Vec<Vec<u8>> = (0..BATCH as u16).map(|i| frame(size, i)).collect();
        let make_batch = || {
            let mut b = Batch::new();
            for f in &frames {
                let _ = b.push(pool.alloc_from(f).expect("pool"));
            }
            b
        };
        g.bench_with_input(
            BenchmarkId::new("baseline_tag_only", size),
            &size,
            |bn, _| {
                let mut tag = make("NFPTag", "", 1, 1);
                let mut one = vec![Batch::new()];
                let mut ctrl = Control::default();
                bn.iter_batched_ref(
                    make_batch,
                    |b| {
                        let mut out = Out::new(&mut one, &pool, 1, &mut ctrl);
                        tag.push(0, b, &mut out);
                        b.clear();
                    },
                    BatchSize::PerIteration,
                )
            },
        );
        for kind in ["header", "full"] {
            for d in [2usize, 3, 5] {
                let mut grp = Group::new(d, kind);
                g.bench_with_input(
                    BenchmarkId::new(format!("{kind}_d{d}"), size),
                    &size,
                    |bn, _| {
                        bn.iter_batched_ref(
                            make_batch,
                            |b| assert_eq!(grp.run(&pool, b), BATCH),
                            BatchSize::PerIteration,
                        )
                    },
                );
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
