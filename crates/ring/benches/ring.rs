//! Ring throughput between two threads on two cores: descriptors per
//! second through one ring, pushed and popped in batches of 32 (the issue's
//! physical limit for an index-only ring between two processes on this
//! machine class is about 750 M/s).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pronto_ring::{Consumer, Desc};

fn transfer(n: u64, batch: usize) -> Duration {
    let (region, mut p) = pronto_ring::create("bench", 4096).expect("ring");
    let mut c = Consumer::attach(Arc::clone(&region), 4096).expect("consumer");
    let consumer = std::thread::spawn(move || {
        let mut out = [Desc::default(); 256];
        let mut got = 0u64;
        let mut sum = 0u64;
        while got < n {
            let k = c.pop(&mut out[..batch]);
            for d in &out[..k] {
                sum = sum.wrapping_add(d.slot as u64);
            }
            got += k as u64;
            if k == 0 {
                std::hint::spin_loop();
            }
        }
        sum
    });
    let descs: Vec<Desc> = (0..batch as u32).map(|i| Desc::new(i, 256, 64)).collect();
    let t0 = Instant::now();
    let mut sent = 0u64;
    while sent < n {
        let want = ((n - sent) as usize).min(batch);
        let k = p.push(&descs[..want]);
        if k == 0 {
            std::hint::spin_loop();
        }
        sent += k as u64;
    }
    let sum = consumer.join().expect("consumer");
    let t = t0.elapsed();
    std::hint::black_box(sum);
    t
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ring_two_threads");
    for batch in [1usize, 32, 256] {
        // One iteration moves a million descriptors, so that thread start-up
        // does not count.
        g.throughput(Throughput::Elements(1_000_000));
        g.bench_function(format!("batch_{batch}"), |b| {
            b.iter_custom(|iters| transfer(iters * 1_000_000, batch))
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
