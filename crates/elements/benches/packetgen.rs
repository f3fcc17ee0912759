//! `PacketGen` and `PacketSink` per-packet cost: one task run of the
//! generator (a batch of 32 frames, as many as its default BURST), freed at
//! once or pushed through a sink. No figure here is a pass/fail threshold.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pronto_elements::{registry, ConfigCtx, Control, Element, Out};
use pronto_packet::{Batch, Pool};

const BURST: u64 = 32;
const T0: i64 = 1_795_341_600_000_000_000;

fn configure(class: &str, config: &str, nin: usize, nout: usize) -> Box<dyn Element> {
    let entry = registry::lookup(class).expect("the class is registered");
    let (inp, outp) = (vec![true; nin], vec![true; nout]);
    let ctx = ConfigCtx {
        name: "e",
        config,
        ninputs: nin,
        noutputs: nout,
        base_dir: std::path::Path::new("."),
        keywords: entry.spec.keywords,
        output_push: &outp,
        input_push: &inp,
        peers: &pronto_elements::NoPeers,
    };
    (entry.factory)(&ctx).expect("configures")
}

fn bench(c: &mut Criterion) {
    let pool = Pool::new(1024).expect("pool");
    let mut g = c.benchmark_group("packetgen");
    g.throughput(Throughput::Elements(BURST));
    for (name, config, with_sink) in [
        ("gen_60B_to_free", "LENGTH 60", false),
        ("gen_100B_stamped_to_free", "LENGTH 100", false),
        (
            "gen_100B_1024_flows_to_free",
            "LENGTH 100, FLOWS 1024",
            false,
        ),
        ("gen_1514B_to_free", "LENGTH 1514", false),
        ("gen_100B_to_sink", "LENGTH 100", true),
    ] {
        let mut gen = configure("PacketGen", config, 0, 1);
        let mut sink = configure("PacketSink", "", 1, 0);
        let mut bufs = [Batch::new()];
        let mut none: [Batch; 0] = [];
        let mut ctrl = Control::default();
        let mut batch = Batch::new();
        let mut now = T0;
        g.bench_function(name, |b| {
            b.iter(|| {
                now += 1000;
                let mut out = Out::new(&mut bufs, &pool, now, &mut ctrl);
                gen.run_task(&mut batch, &mut out);
                if with_sink {
                    let mut out = Out::new(&mut none, &pool, now + 500, &mut ctrl);
                    sink.push(0, &mut batch, &mut out);
                }
                batch.clear();
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
