//! Helpers shared by the benches of the two-sided stateful elements (CGNAT,
//! StatefulFirewall): configuring a 2-input/2-output push element, IPv4
//! packets, a pseudo-random flow picker, and the timed push of one batch.

use criterion::measurement::WallTime;
use criterion::{BatchSize, BenchmarkGroup, BenchmarkId};
use pronto_elements::{registry, ConfigCtx, Control, Element, Out};
use pronto_packet::{Batch, Pool};

/// Packets per timed push.
pub const BATCH: usize = 32;
/// The clock every push sees (ns since the epoch).
pub const T0: i64 = 1_795_341_600_000_000_000;

/// The registered element `class`, configured with `config` and two push
/// inputs and outputs.
pub fn configure(class: &str, name: &str, config: &str) -> Box<dyn Element> {
    let entry = registry::lookup(class).expect("the class is registered");
    let push = [true, true];
    let ctx = ConfigCtx {
        name,
        config,
        ninputs: 2,
        noutputs: 2,
        base_dir: std::path::Path::new("."),
        keywords: entry.spec.keywords,
        output_push: &push,
        input_push: &push,
        peers: &pronto_elements::NoPeers,
    };
    (entry.factory)(&ctx).expect("configures")
}

/// An `N`-byte IPv4 packet of protocol `proto` (no options, valid IP
/// checksum) with the ports at the start of its transport header; the rest
/// is zero.
pub fn ipv4<const N: usize>(proto: u8, src: u32, sport: u16, dst: u32, dport: u16) -> [u8; N] {
    let mut p = [0u8; N];
    let [len_hi, len_lo] = (N as u16).to_be_bytes();
    p[..12].copy_from_slice(&[0x45, 0, len_hi, len_lo, 0, 1, 0, 0, 64, proto, 0, 0]);
    p[12..16].copy_from_slice(&src.to_be_bytes());
    p[16..20].copy_from_slice(&dst.to_be_bytes());
    p[20..22].copy_from_slice(&sport.to_be_bytes());
    p[22..24].copy_from_slice(&dport.to_be_bytes());
    let c = pronto_packet::wire::checksum(&p[..20]);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p
}

/// A deterministic xorshift picker of flow numbers below `n`.
pub fn picker(n: u32) -> impl FnMut() -> u32 {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng % u64::from(n)) as u32
    }
}

/// A packet from the pool holding `data`, its IP header at 0.
pub fn ip_packet(pool: &Pool, data: &[u8]) -> pronto_packet::Packet {
    let mut pkt = pool.alloc_from(data).expect("slot");
    pkt.set_network_header(0, 20);
    pkt
}

/// Benches `e` on input `dir` with batches of `BATCH` packets made by
/// `packet` (outside the timing); every packet is expected on output `dir`.
pub fn bench_input<const N: usize>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    pool: &Pool,
    e: &mut dyn Element,
    dir: usize,
    mut packet: impl FnMut() -> [u8; N],
) {
    let mut bufs = [Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    group.bench_function(id, |b| {
        b.iter_batched_ref(
            || {
                let mut batch = Batch::new();
                for _ in 0..BATCH {
                    let _ = batch.push(ip_packet(pool, &packet()));
                }
                batch
            },
            |batch| {
                let mut out = Out::new(&mut bufs, pool, T0, &mut ctrl);
                e.push(dir, batch, &mut out);
                debug_assert_eq!(out.passed(), Some(dir));
                batch.clear();
                for b in bufs.iter_mut() {
                    b.clear();
                }
            },
            BatchSize::PerIteration,
        )
    });
}
