//! `PPPoEServer`: session set-up rate (10,000 sessions through discovery,
//! LCP, PAP and IPCP in one element, from PADI to IPCP open), then the
//! forwarding rate with those 10,000 sessions up: decapsulation (session
//! frames from subscribers, batches of 32, sessions picked
//! pseudo-randomly) and encapsulation (IP packets for subscribers' pool
//! addresses, batches of 32). No figure here is a pass/fail threshold.

mod common;

use common::{bench_input, configure, ip_packet, ipv4, picker, BATCH, T0};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use pronto_elements::{Control, Element, Out};
use pronto_packet::{Batch, Pool};

const SESSIONS: u32 = 10_000;
const SERVER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 0xaa];

fn peer_mac(k: u32) -> [u8; 6] {
    let b = k.to_be_bytes();
    [2, 1, b[0], b[1], b[2], b[3]]
}

/// Pushes one frame into input `port`; returns what came out of output 0.
fn send(e: &mut dyn Element, pool: &Pool, port: usize, frame: &[u8]) -> Vec<Vec<u8>> {
    let mut bufs = [Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    let mut batch = Batch::new();
    let _ = batch.push(pool.alloc_from(frame).expect("pool"));
    let mut out = Out::new(&mut bufs, pool, T0, &mut ctrl);
    e.push(port, &mut batch, &mut out);
    let mut got = Vec::new();
    if out.passed() == Some(0) {
        got.extend(batch.iter().map(|p| p.data().to_vec()));
    }
    batch.clear();
    got.extend(bufs[0].iter().map(|p| p.data().to_vec()));
    for b in bufs.iter_mut() {
        b.clear();
    }
    got
}

fn discovery(mac: [u8; 6], code: u8, tags: &[(u16, &[u8])]) -> Vec<u8> {
    let mut f = if code == 0x09 {
        vec![0xff; 6]
    } else {
        SERVER_MAC.to_vec()
    };
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x88, 0x63, 0x11, code, 0, 0]);
    let mut body = Vec::new();
    for (t, v) in tags {
        body.extend_from_slice(&t.to_be_bytes());
        body.extend_from_slice(&(v.len() as u16).to_be_bytes());
        body.extend_from_slice(v);
    }
    f.extend_from_slice(&(body.len() as u16).to_be_bytes());
    f.extend_from_slice(&body);
    f
}

fn ppp(mac: [u8; 6], sid: u16, proto: u16, code: u8, id: u8, data: &[u8]) -> Vec<u8> {
    let mut f = SERVER_MAC.to_vec();
    f.extend_from_slice(&mac);
    f.extend_from_slice(&[0x88, 0x64, 0x11, 0]);
    f.extend_from_slice(&sid.to_be_bytes());
    f.extend_from_slice(&((data.len() + 6) as u16).to_be_bytes());
    f.extend_from_slice(&proto.to_be_bytes());
    f.extend_from_slice(&[code, id]);
    f.extend_from_slice(&((data.len() + 4) as u16).to_be_bytes());
    f.extend_from_slice(data);
    f
}

/// One subscriber from PADI to IPCP open (IPv4 only); returns its session id.
fn set_up(e: &mut dyn Element, pool: &Pool, k: u32) -> u16 {
    let mac = peer_mac(k);
    let pado = send(e, pool, 0, &discovery(mac, 0x09, &[(0x0101, b"")]));
    let cookie = pado[0][pado[0].len() - 8..].to_vec();
    let r = send(
        e,
        pool,
        0,
        &discovery(mac, 0x19, &[(0x0101, b""), (0x0104, &cookie)]),
    );
    let sid = u16::from_be_bytes([r[0][16], r[0][17]]);
    let req = &r[1];
    send(
        e,
        pool,
        0,
        &ppp(mac, sid, 0xc021, 1, 1, &[5, 6, 1, 2, 3, 4]),
    );
    send(e, pool, 0, &ppp(mac, sid, 0xc021, 2, req[23], &req[26..]));
    let r = send(
        e,
        pool,
        0,
        &ppp(mac, sid, 0xc023, 1, 1, b"\x05alice\x06s3cret"),
    );
    let ipcp_id = r[1][23];
    let n = send(
        e,
        pool,
        0,
        &ppp(mac, sid, 0x8021, 1, 1, &[3, 6, 0, 0, 0, 0]),
    );
    let addr = n[0][28..32].to_vec();
    let mut opt = vec![3, 6];
    opt.extend_from_slice(&addr);
    send(e, pool, 0, &ppp(mac, sid, 0x8021, 1, 2, &opt));
    send(
        e,
        pool,
        0,
        &ppp(mac, sid, 0x8021, 2, ipcp_id, &[3, 6, 10, 64, 0, 1]),
    );
    sid
}

fn server(dir: &std::path::Path) -> Box<dyn Element> {
    configure(
        "PPPoEServer",
        "bras",
        &format!(
            "MAC 02:00:00:00:00:aa, SUBSCRIBERS {}, POOL 10.64.0.0/16, LOCAL 10.64.0.1, \
             CAPACITY {SESSIONS}, IPV6 false, PADI_RATE 1000000",
            dir.join("subs").display()
        ),
    )
}

fn bras(c: &mut Criterion) {
    let dir = std::env::temp_dir().join(format!("pronto-bras-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("subs"), "alice s3cret\n").expect("subscribers");
    let pool = Pool::new(4096).expect("pool");

    let mut group = c.benchmark_group("PPPoEServer");
    group.sample_size(10);
    group.throughput(Throughput::Elements(SESSIONS as u64));
    group.bench_function("set-up, 10000 sessions", |b| {
        b.iter_batched(
            || server(&dir),
            |mut e| {
                for k in 0..SESSIONS {
                    set_up(e.as_mut(), &pool, k);
                }
                assert_eq!(
                    e.read_handler("count").expect("count"),
                    SESSIONS.to_string()
                );
                e
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();

    let mut e = server(&dir);
    let sids: Vec<u16> = (0..SESSIONS)
        .map(|k| set_up(e.as_mut(), &pool, k))
        .collect();
    // Session k has address 10.64.0.2 + k (the pool is handed out in order).
    let addr = |k: u32| 0x0a40_0002 + k;
    let mut group = c.benchmark_group("PPPoEServer forwarding, 10000 sessions");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut pick = picker(SESSIONS);
    let mut bufs = [Batch::new(), Batch::new()];
    let mut ctrl = Control::default();
    group.bench_function("decapsulate", |b| {
        b.iter_batched_ref(
            || {
                let mut batch = Batch::new();
                for _ in 0..BATCH {
                    let k = pick();
                    let ip = ipv4::<64>(17, addr(k), 1024, 0x5db8_d822, 53);
                    let mut f = ppp(peer_mac(k), sids[k as usize], 0x0021, 0, 0, &[]);
                    f.truncate(20);
                    f[18..20].copy_from_slice(&66u16.to_be_bytes());
                    f.extend_from_slice(&[0x00, 0x21]);
                    f.extend_from_slice(&ip);
                    let _ = batch.push(pool.alloc_from(&f).expect("pool"));
                }
                batch
            },
            |batch| {
                let mut out = Out::new(&mut bufs, &pool, T0, &mut ctrl);
                e.push(0, batch, &mut out);
                debug_assert_eq!(out.passed(), Some(1));
                batch.clear();
                for b in bufs.iter_mut() {
                    b.clear();
                }
            },
            BatchSize::PerIteration,
        )
    });
    let mut pick = picker(SESSIONS);
    group.bench_function("encapsulate", |b| {
        b.iter_batched_ref(
            || {
                let mut batch = Batch::new();
                for _ in 0..BATCH {
                    let ip = ipv4::<64>(17, 0x5db8_d822, 53, addr(pick()), 1024);
                    let _ = batch.push(pool.alloc_from(&ip).expect("pool"));
                }
                batch
            },
            |batch| {
                let mut out = Out::new(&mut bufs, &pool, T0, &mut ctrl);
                e.push(1, batch, &mut out);
                debug_assert_eq!(out.passed(), Some(0));
                batch.clear();
                for b in bufs.iter_mut() {
                    b.clear();
                }
            },
            BatchSize::PerIteration,
        )
    });
    // The reference in the same run: StatefulFirewall (another table per
    // subscriber at the edge) with the same 10,000 subscribers' flows.
    let mut fw = configure("StatefulFirewall", "fw", "CAPACITY 16384");
    let flow = |k: u32| ipv4::<64>(17, addr(k), 1024, 0x5db8_d822, 53);
    for k0 in (0..SESSIONS).step_by(BATCH) {
        let mut batch = Batch::new();
        for k in k0..(k0 + BATCH as u32).min(SESSIONS) {
            let _ = batch.push(ip_packet(&pool, &flow(k)));
        }
        let mut out = Out::new(&mut bufs, &pool, T0, &mut ctrl);
        fw.push(0, &mut batch, &mut out);
        batch.clear();
        for b in bufs.iter_mut() {
            b.clear();
        }
    }
    let mut pick = picker(SESSIONS);
    bench_input(
        &mut group,
        criterion::BenchmarkId::new("StatefulFirewall UDP (reference)", SESSIONS),
        &pool,
        fw.as_mut(),
        0,
        || flow(pick()),
    );
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, bras);
criterion_main!(benches);
