//! `WireGuard` per-packet cost at 1,420 bytes (the inner MTU): two
//! gateways with a session between them; each iteration encrypts a batch
//! of 32 packets in one (input 0 to output 0) and decrypts them in the
//! other (input 1 to output 1). No figure here is a pass/fail threshold.

use std::net::SocketAddr;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pronto_elements::vpn::wgconf::{PeerConf, WgConf};
use pronto_elements::vpn::wireguard::WireGuard;
use pronto_elements::{Control, Element, Out};
use pronto_packet::{Batch, Packet, Pool};

const BATCH: usize = 32;
const SIZE: usize = 1420;

fn gateway(me: u8, them: u8, allowed: &str) -> WireGuard {
    let public = |k: u8| {
        let s = boringtun::x25519::StaticSecret::from([k; 32]);
        *boringtun::x25519::PublicKey::from(&s).as_bytes()
    };
    let conf = WgConf {
        private_key: [me; 32],
        listen_port: Some(51820),
        peers: vec![PeerConf {
            public_key: public(them),
            preshared_key: None,
            allowed_ips: vec![pronto_elements::vpn::wgconf::parse_prefix(allowed).expect("prefix")],
            endpoint: Some(SocketAddr::from(([192, 0, 2, them], 51820))),
            persistent_keepalive: None,
        }],
    };
    WireGuard::from_conf(&conf, [192, 0, 2, me], 51820, SIZE).expect("configures")
}

/// A 1,420-byte IPv4 UDP packet 10.1.0.5 -> 10.2.0.9.
fn plain(pool: &Pool) -> Packet {
    let mut d = vec![0u8; SIZE];
    d[..20].copy_from_slice(&[
        0x45,
        0,
        (SIZE >> 8) as u8,
        SIZE as u8,
        0,
        1,
        0,
        0,
        64,
        17,
        0,
        0,
        10,
        1,
        0,
        5,
        10,
        2,
        0,
        9,
    ]);
    pool.alloc_from(&d).expect("pool has room")
}

/// Pushes `batch` into `port` of `e`; returns what left on `want`.
fn push(e: &mut WireGuard, pool: &Pool, port: usize, batch: &mut Batch, want: usize) -> Batch {
    let mut bufs = [Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    let passed = {
        let mut out = Out::new(&mut bufs, pool, 0, &mut ctrl);
        e.push(port, batch, &mut out);
        out.passed()
    };
    let mut got = Batch::new();
    if passed == Some(want) {
        got.append(batch);
    }
    got.append(&mut bufs[want]);
    batch.clear();
    got
}

fn encap_decap(c: &mut Criterion) {
    let pool = Pool::new(1024).expect("pool");
    let mut a = gateway(1, 2, "10.2.0.0/16");
    let mut b = gateway(2, 1, "10.1.0.0/16");
    // Handshake: A's initiation, B's response, A's keep-alive and the
    // queued packet.
    let mut one = Batch::new();
    let _ = one.push(plain(&pool));
    let mut init = push(&mut a, &pool, 0, &mut one, 0);
    let mut resp = push(&mut b, &pool, 1, &mut init, 0);
    let mut ka = push(&mut a, &pool, 1, &mut resp, 0);
    let got = push(&mut b, &pool, 1, &mut ka, 1);
    assert_eq!(got.len(), 1, "the queued packet crossed");
    let mut group = c.benchmark_group("WireGuard");
    group.throughput(Throughput::Bytes((BATCH * SIZE) as u64));
    group.bench_function("encap_decap_1420", |bench| {
        bench.iter(|| {
            let mut batch = Batch::new();
            for _ in 0..BATCH {
                let _ = batch.push(plain(&pool));
            }
            let mut sealed = push(&mut a, &pool, 0, &mut batch, 0);
            let opened = push(&mut b, &pool, 1, &mut sealed, 1);
            assert_eq!(opened.len(), BATCH);
        })
    });
    group.finish();
}

criterion_group!(benches, encap_decap);
criterion_main!(benches);
