//! The switch on its own thread with peers on others: byte-exact
//! exchange, flooding and learning, detach under traffic, a hostile peer,
//! and an idle switch that sleeps.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pronto_ring::Desc;
use pronto_switch::layout::RX_OFFSET;
use pronto_switch::{Config, Geometry, Peer, PortShm, SwitchHandle};

fn mac(n: u8) -> [u8; 6] {
    [2, 0, 0, 0, 0, n]
}

/// A frame from `src` to `dst` whose bytes all derive from `seq`.
fn frame(dst: [u8; 6], src: [u8; 6], seq: u32, buf: &mut [u8; 2048]) -> usize {
    let len = 60 + (seq as usize * 7919) % 1400;
    buf[..6].copy_from_slice(&dst);
    buf[6..12].copy_from_slice(&src);
    buf[12..16].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in buf[16..len].iter_mut().enumerate() {
        *b = (seq as usize).wrapping_mul(31).wrapping_add(i) as u8;
    }
    len
}

fn port(name: &str) -> PortShm {
    PortShm::create(name, Geometry::new(512, 256).expect("geometry")).expect("port")
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(20), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Sends `n` frames to `peer_mac` (never more than `window` ahead of what
/// the other side counted) and receives `n`, checking each byte.
fn exchange(
    p: Peer,
    me: [u8; 6],
    them: [u8; 6],
    n: u32,
    mine: Arc<AtomicU64>,
    theirs: Arc<AtomicU64>,
) -> Peer {
    exchange_gated(p, me, them, n, mine, theirs, None)
}

/// Holds a sender before frame `at` until `count` reaches `min` (it
/// goes on receiving meanwhile).
struct Gate {
    at: u32,
    count: Arc<AtomicU64>,
    min: u64,
}

/// [`exchange`], held at `gate` if given.
fn exchange_gated(
    mut p: Peer,
    me: [u8; 6],
    them: [u8; 6],
    n: u32,
    mine: Arc<AtomicU64>,
    theirs: Arc<AtomicU64>,
    gate: Option<Gate>,
) -> Peer {
    let held = |sent: u32| {
        gate.as_ref()
            .is_some_and(|g| sent == g.at && g.count.load(Ordering::Acquire) < g.min)
    };
    let mut buf = [0u8; 2048];
    let mut want = [0u8; 2048];
    let (mut sent, mut got) = (0u32, 0u32);
    while sent < n || got < n {
        let mut progress = false;
        while sent < n && (sent as u64) < theirs.load(Ordering::Acquire) + 32 && !held(sent) {
            let len = frame(them, me, sent, &mut buf);
            if p.send(&[&buf[..len]]) == 0 {
                break;
            }
            sent += 1;
            progress = true;
        }
        let k = p.recv(|f| {
            let len = frame(me, them, got, &mut want);
            assert_eq!(f, &want[..len], "frame {got} differs");
            got += 1;
        });
        if k > 0 {
            mine.store(got as u64, Ordering::Release);
            progress = true;
        }
        if !progress {
            p.wait(Some(Duration::from_micros(200)));
        }
    }
    p
}

#[test]
fn two_peers_exchange_frames_byte_exactly() {
    two_peers_exchange(1);
}

#[test]
fn two_peers_on_two_switching_threads_exchange_frames_byte_exactly() {
    two_peers_exchange(2);
}

fn two_peers_exchange(threads: usize) {
    let sw = SwitchHandle::spawn(Config {
        learning: false,
        threads,
        ..Config::default()
    })
    .expect("switch");
    assert_eq!(sw.threads(), threads);
    let (a, b) = (port("a"), port("b"));
    assert_eq!(sw.attach(1, a.clone()).expect("attach a"), 0);
    assert_eq!(sw.attach(2, b.clone()).expect("attach b"), threads - 1);
    sw.add_static(mac(1), 1).expect("static");
    sw.add_static(mac(2), 2).expect("static");
    let (ca, cb) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    const N: u32 = 50_000;
    let pa = Peer::new(a, 128).expect("peer a");
    let pb = Peer::new(b, 128).expect("peer b");
    let (x, y) = (ca.clone(), cb.clone());
    let ta = std::thread::spawn(move || exchange(pa, mac(1), mac(2), N, x, y));
    let tb = std::thread::spawn(move || exchange(pb, mac(2), mac(1), N, cb, ca));
    let pa = ta.join().expect("peer a");
    let pb = tb.join().expect("peer b");
    for (id, p) in [(1, &pa), (2, &pb)] {
        let c = sw.counters(id).expect("counters");
        assert_eq!((c.rx_packets, c.tx_packets), (N as u64, N as u64), "{c:?}");
        assert_eq!(c.drops(), 0, "{c:?}");
        assert_eq!(p.counters().received, N as u64);
        assert_eq!(p.counters().bad_desc, 0);
    }
    sw.stop().expect("stop");
}

#[test]
fn frames_copied_straight_out_of_their_slots_are_the_frames_sent() {
    let sw = SwitchHandle::spawn(Config {
        learning: false,
        ..Config::default()
    })
    .expect("switch");
    let (a, b) = (port("a"), port("b"));
    sw.attach(1, a.clone()).expect("attach a");
    sw.attach(2, b.clone()).expect("attach b");
    sw.add_static(mac(2), 2).expect("static");
    let mut pa = Peer::new(a, 128).expect("peer a");
    let mut pb = Peer::new(b, 128).expect("peer b");
    // 100 frames of 60 to 1,459 bytes, sent in bursts of 10 and taken
    // back 7 at a time (the switch's batches and the receiver's differ).
    let mut want = Vec::new();
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    for burst in 0..10u32 {
        let frames: Vec<Vec<u8>> = (burst * 10..burst * 10 + 10)
            .map(|seq| {
                let len = frame(mac(2), mac(1), seq, &mut buf);
                buf[..len].to_vec()
            })
            .collect();
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        assert_eq!(pa.send(&refs), 10);
        want.extend(frames);
        wait_until("the burst", || {
            pb.recv_frames(7, |f| {
                let mut v = vec![0xee; f.len() + 3];
                f.copy_to(&mut v);
                // Only the frame's bytes are written.
                assert_eq!(v[f.len()..], [0xee; 3]);
                v.truncate(f.len());
                got.push(v);
            });
            got.len() == want.len()
        });
    }
    assert_eq!(got, want);
    assert_eq!(pb.counters().received, 100);
    assert_eq!(pb.counters().bad_desc, 0);
    sw.stop().expect("stop");
}

#[test]
fn two_switching_threads_deliver_into_one_port_at_once() {
    // The sink is served by thread 0, the senders by threads 1 and 0: both
    // threads copy into the sink's slots concurrently, under its lock.
    let sw = SwitchHandle::spawn(Config {
        threads: 2,
        ..Config::default()
    })
    .expect("switch");
    let (sink, a, b) = (port("sink"), port("a"), port("b"));
    assert_eq!(sw.attach(1, sink.clone()).expect("sink"), 0);
    assert_eq!(sw.attach(2, a.clone()).expect("a"), 1);
    assert_eq!(sw.attach(3, b.clone()).expect("b"), 0);
    assert!(sw.add_static(mac(1), 1).expect("static"));
    const N: u32 = 40_000;
    // The sink lends its slots before anyone sends: a frame the switch
    // finds no lent slot for is dropped (and counted), and the senders'
    // window below would then wait for it forever.
    let mut ps = Peer::new(sink, 256).expect("sink peer");
    let got = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
    let senders: Vec<_> = [(a, 2u8), (b, 3u8)]
        .into_iter()
        .enumerate()
        .map(|(k, (shm, me))| {
            let seen = got[k].clone();
            std::thread::spawn(move || {
                let mut p = Peer::new(shm, 32).expect("sender");
                let mut buf = [0u8; 2048];
                let mut sent = 0u32;
                while sent < N {
                    // At most 64 frames ahead of the sink: the sink lends
                    // 256 slots to both senders together.
                    if (sent as u64) < seen.load(Ordering::Acquire) + 64 {
                        let len = frame(mac(1), mac(me), sent, &mut buf);
                        if p.send(&[&buf[..len]]) == 1 {
                            sent += 1;
                            continue;
                        }
                    }
                    std::thread::yield_now();
                }
                p
            })
        })
        .collect();
    let mut next = [0u32; 2];
    let mut want = [0u8; 2048];
    let t0 = Instant::now();
    while next[0] < N || next[1] < N {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "stalled at {next:?}"
        );
        let k = ps.recv(|f| {
            let from = f[11];
            assert!(from == 2 || from == 3, "frame from {from}");
            let i = (from - 2) as usize;
            let len = frame(mac(1), mac(from), next[i], &mut want);
            assert_eq!(f, &want[..len], "frame {} from port {from}", next[i]);
            next[i] += 1;
            got[i].store(next[i] as u64, Ordering::Release);
        });
        if k == 0 {
            std::thread::yield_now();
        }
    }
    for s in senders {
        s.join().expect("sender");
    }
    let c = sw.counters(1).expect("sink");
    assert_eq!((c.tx_packets, c.drops()), (2 * N as u64, 0), "{c:?}");
    for id in [2, 3] {
        let c = sw.counters(id).expect("sender");
        assert_eq!((c.rx_packets, c.drops()), (N as u64, 0), "{c:?}");
    }
    // Detaching a port of one thread leaves the other thread's ports be.
    sw.detach(3).expect("detach");
    assert_eq!(sw.thread_of(3), None);
    assert_eq!(sw.thread_of(2), Some(1));
    assert!(sw.detach(3).is_err());
    sw.stop().expect("stop");
}

#[test]
fn switching_threads_out_of_range_are_refused() {
    for threads in [0, 65] {
        let e = SwitchHandle::spawn(Config {
            threads,
            ..Config::default()
        })
        .err()
        .expect("refused");
        assert_eq!(
            e.to_string(),
            format!("switching threads: {threads} is out of range (1 to 64)")
        );
    }
    let pin = |cpu| {
        SwitchHandle::spawn(Config {
            threads: 2,
            cpu: Some(cpu),
            ..Config::default()
        })
        .err()
        .expect("refused")
        .to_string()
    };
    assert_eq!(
        pin(1000),
        "cannot pin switching thread 0 to CPU 1000: Invalid argument (os error 22)"
    );
    assert_eq!(
        pin(100_000),
        "cannot pin switching thread 0 to CPU 100000: CPU 100000 is out of range (0 to 1023)"
    );
}

/// Receives what has arrived within `ms` milliseconds.
/// Waits (up to 5 s: a loaded machine may not run the switch for a while)
/// until `n` frames have arrived, then a little longer for any extra.
fn drain_n(p: &mut Peer, n: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let t0 = Instant::now();
    while out.len() < n && t0.elapsed() < Duration::from_secs(5) {
        if p.recv(|f| out.push(f.to_vec())) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    out.extend(drain(p, 5));
    out
}

fn drain(p: &mut Peer, ms: u64) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(ms) {
        if p.recv(|f| out.push(f.to_vec())) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    out
}

#[test]
fn floods_unknown_and_group_frames_then_learns() {
    let sw = SwitchHandle::spawn(Config {
        learning: true,
        aging: Duration::from_millis(300),
        ..Config::default()
    })
    .expect("switch");
    let mut peers: Vec<Peer> = (1..=3u16)
        .map(|i| {
            let shm = port(&format!("p{i}"));
            sw.attach(i, shm.clone()).expect("attach");
            Peer::new(shm, 64).expect("peer")
        })
        .collect();
    let mut buf = [0u8; 2048];
    // 1 → 2, unknown: flooded to 2 and 3.
    let len = frame(mac(2), mac(1), 1, &mut buf);
    assert_eq!(peers[0].send(&[&buf[..len]]), 1);
    let f1 = buf[..len].to_vec();
    assert_eq!(drain_n(&mut peers[1], 1), vec![f1.clone()]);
    assert_eq!(drain_n(&mut peers[2], 1), vec![f1.clone()]);
    // 2 → 1: 1 was learned, so only 1 gets it.
    let len = frame(mac(1), mac(2), 2, &mut buf);
    peers[1].send(&[&buf[..len]]);
    assert_eq!(drain_n(&mut peers[0], 1), vec![buf[..len].to_vec()]);
    assert!(drain(&mut peers[2], 20).is_empty());
    // 1 → 2 again: 2 is learned now.
    peers[0].send(&[&f1]);
    assert_eq!(drain_n(&mut peers[1], 1), vec![f1.clone()]);
    assert!(drain(&mut peers[2], 20).is_empty());
    // Broadcast and multicast from 3 reach 1 and 2, not 3.
    let mut bc = f1.clone();
    bc[..6].copy_from_slice(&[0xff; 6]);
    bc[6..12].copy_from_slice(&mac(3));
    let mut mc = bc.clone();
    mc[..6].copy_from_slice(&[0x01, 0x00, 0x5e, 0, 0, 1]);
    peers[2].send(&[&bc, &mc]);
    assert_eq!(drain_n(&mut peers[0], 2), vec![bc.clone(), mc.clone()]);
    assert_eq!(drain_n(&mut peers[1], 2), vec![bc, mc]);
    assert!(drain(&mut peers[2], 10).is_empty());
    // After the aging time, 2 is unknown again: flooded.
    std::thread::sleep(Duration::from_millis(1200));
    peers[0].send(&[&f1]);
    assert_eq!(drain_n(&mut peers[1], 1), vec![f1.clone()]);
    assert_eq!(drain_n(&mut peers[2], 1), vec![f1]);
    let c3 = sw.counters(3).expect("c3");
    assert_eq!((c3.rx_packets, c3.tx_packets, c3.drops()), (2, 2, 0));
    let c1 = sw.counters(1).expect("c1");
    assert_eq!((c1.rx_packets, c1.tx_packets), (3, 3));
}

#[test]
fn detach_under_traffic_leaves_other_ports_running() {
    let sw = SwitchHandle::spawn(Config::default()).expect("switch");
    let (a, b, c) = (port("a"), port("b"), port("c"));
    for (i, p) in [(1, &a), (2, &b), (3, &c)] {
        sw.attach(i, p.clone()).expect("attach");
    }
    sw.add_static(mac(2), 2).expect("static");
    let stop = Arc::new(AtomicBool::new(false));
    let blaster = |shm: PortShm, me: u8, stop: Arc<AtomicBool>| {
        std::thread::spawn(move || {
            let mut p = Peer::new(shm, 64).expect("peer");
            let mut buf = [0u8; 2048];
            let mut seq = 0;
            while !stop.load(Ordering::Relaxed) {
                let len = frame(mac(2), mac(me), seq, &mut buf);
                if p.send(&[&buf[..len]]) == 1 {
                    seq += 1;
                } else {
                    std::thread::yield_now();
                }
            }
            seq
        })
    };
    let t1 = blaster(a, 1, stop.clone());
    let t3 = blaster(c, 3, stop.clone());
    let got = Arc::new(AtomicU64::new(0));
    let (g, s) = (got.clone(), stop.clone());
    let rx = std::thread::spawn(move || {
        let mut p = Peer::new(b, 256).expect("peer b");
        let mut per = [0u64; 4];
        while !s.load(Ordering::Relaxed) {
            if p.recv(|f| per[f[11] as usize & 3] += 1) == 0 {
                std::thread::yield_now();
            }
            g.store(per.iter().sum(), Ordering::Relaxed);
        }
        per
    });
    wait_until("traffic from both", || {
        let c1 = sw.counters(1).expect("1").rx_packets;
        let c3 = sw.counters(3).expect("3").rx_packets;
        c1 > 1000 && c3 > 1000
    });
    sw.detach(3).expect("detach 3");
    let frozen = sw.counters(3).expect("kept after detach");
    let before = got.load(Ordering::Relaxed);
    wait_until("port 1 still flows", || {
        got.load(Ordering::Relaxed) > before + 10_000
    });
    assert_eq!(sw.counters(3), Some(frozen), "detached port is not served");
    assert!(sw.detach(3).is_err());
    // A new port attached under traffic gets its frames too.
    let d = port("d");
    sw.attach(4, d.clone()).expect("attach 4");
    sw.add_static(mac(4), 4).expect("static");
    let mut pd = Peer::new(d, 64).expect("peer d");
    let mut buf = [0u8; 2048];
    let len = frame(mac(4), mac(9), 5, &mut buf);
    let mut pe = {
        let e = port("e");
        sw.attach(5, e.clone()).expect("attach 5");
        Peer::new(e, 64).expect("peer e")
    };
    pe.send(&[&buf[..len]]);
    let mut seen = Vec::new();
    wait_until("frame to the new port", || {
        pd.recv(|f| seen.push(f.to_vec()));
        !seen.is_empty()
    });
    assert_eq!(seen[0], buf[..len]);
    stop.store(true, Ordering::Relaxed);
    let sent1 = t1.join().expect("t1");
    t3.join().expect("t3");
    let per = rx.join().expect("rx");
    assert!(per[1] > 10_000 && per[3] > 0, "{per:?}");
    assert!(per[1] <= sent1 as u64);
}

#[test]
fn hostile_peer_is_counted_and_neighbours_are_unaffected() {
    let sw = SwitchHandle::spawn(Config {
        learning: false,
        ..Config::default()
    })
    .expect("switch");
    let (a, b, h) = (port("a"), port("b"), port("h"));
    sw.attach(1, a.clone()).expect("a");
    sw.attach(2, b.clone()).expect("b");
    sw.attach(3, h.clone()).expect("h");
    sw.add_static(mac(1), 1).expect("static");
    sw.add_static(mac(2), 2).expect("static");
    let (ca, cb) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    const N: u32 = 20_000;
    let pa = Peer::new(a, 128).expect("peer a");
    let pb = Peer::new(b, 128).expect("peer b");
    let (x, y) = (ca.clone(), cb.clone());
    let ta = std::thread::spawn(move || exchange(pa, mac(1), mac(2), N, x, y));
    let tb = std::thread::spawn(move || exchange(pb, mac(2), mac(1), N, cb, ca));
    // The hostile peer: garbage descriptors, garbage lent slots, then
    // garbage ring positions, all while 1 and 2 talk.
    let g = h.geometry;
    let mut ph = Peer::new(h.clone(), 0).expect("hostile");
    let bad = [
        Desc::new(g.slots, RX_OFFSET, 60),
        Desc::new(u32::MAX, 0, 0),
        Desc::new(0, 0, 60),
        Desc::new(0, 100, 60),
        Desc::new(0, RX_OFFSET, 0),
        Desc::new(0, RX_OFFSET, 13),
        Desc::new(0, RX_OFFSET, u16::MAX),
        Desc::new(0, 2100, 100),
        Desc::new(0, u16::MAX, u16::MAX),
    ];
    let mut queued = 0u64;
    for _ in 0..1000 {
        loop {
            let k = ph.send_raw(&bad);
            queued += k as u64;
            // The switch returns even garbage on the done ring, and
            // stops taking from a port whose done ring is full.
            ph.free_slots();
            if k == bad.len() {
                break;
            }
            std::thread::yield_now();
        }
    }
    wait_until("every garbage descriptor counted", || {
        ph.free_slots();
        sw.counters(3).expect("h").drop_bad_desc == queued
    });
    // Lend slots that do not exist, then flood so the switch reads them.
    ph.fill_raw(&[Desc::new(u32::MAX, 0, 0), Desc::new(g.slots, 0, 0)]);
    let rx_ring = g.ring_offset(pronto_switch::layout::RingId::Rx);
    let tail = h.region.load_u32(rx_ring + 128).expect("tail");
    // A head claiming more than the ring holds, then one going backwards.
    h.region
        .store_u32(rx_ring + 64, tail.wrapping_add(g.ring + 5));
    h.to_switch.as_ref().expect("bell").ring().expect("ring");
    wait_until("bad ring position counted", || {
        ph.free_slots();
        sw.counters(3).expect("h").drop_bad_ring > 0
    });
    h.region.store_u32(rx_ring + 64, tail.wrapping_sub(1));
    h.to_switch.as_ref().expect("bell").ring().expect("ring");
    let pa = ta.join().expect("a");
    let pb = tb.join().expect("b");
    for (id, p) in [(1, &pa), (2, &pb)] {
        let c = sw.counters(id).expect("counters");
        assert_eq!(
            (c.rx_packets, c.tx_packets, c.drops()),
            (N as u64, N as u64, 0)
        );
        assert_eq!(p.counters().bad_desc, 0);
    }
    let c = sw.counters(3).expect("h");
    assert_eq!(c.drop_bad_desc, queued);
    assert_eq!(c.rx_packets, 0);
    // The switch is still alive and serving.
    let mut pa = pa;
    let mut pb = pb;
    let mut buf = [0u8; 2048];
    let len = frame(mac(2), mac(1), 0, &mut buf);
    pa.send(&[&buf[..len]]);
    let mut seen = 0;
    wait_until("still forwarding", || {
        pb.recv(|_| seen += 1);
        seen == 1
    });
}

#[test]
fn hostile_fill_slots_are_refused() {
    let sw = SwitchHandle::spawn(Config::default()).expect("switch");
    let (a, h) = (port("a"), port("h"));
    sw.attach(1, a.clone()).expect("a");
    sw.attach(2, h.clone()).expect("h");
    let mut pa = Peer::new(a, 64).expect("a");
    let mut ph = Peer::new(h.clone(), 0).expect("h");
    let g = h.geometry;
    ph.fill_raw(&[Desc::new(u32::MAX, 0, 0), Desc::new(g.slots, 0, 0)]);
    let mut buf = [0u8; 2048];
    let len = frame([0xff; 6], mac(1), 0, &mut buf);
    pa.send(&[&buf[..len]]);
    wait_until("refused", || {
        let c = sw.counters(2).expect("h");
        c.drop_bad_fill == 2 && c.drop_no_buffer == 1
    });
}

#[test]
fn a_port_whose_done_ring_is_full_is_read_again_once_its_peer_frees() {
    // A peer that never takes its descriptors back from the done ring
    // stops being read: its ring positions, bad ones included, are looked
    // at (and counted) only after it frees (what the chaos campaign's
    // hostile port must do before it waits for its bad head to count).
    let sw = SwitchHandle::spawn(Config::default()).expect("switch");
    let h = port("h");
    sw.attach(1, h.clone()).expect("h");
    let g = h.geometry;
    let mut ph = Peer::new(h.clone(), 0).expect("hostile");
    let garbage = vec![Desc::new(g.slots, RX_OFFSET, 60); g.ring as usize];
    assert_eq!(ph.send_raw(&garbage), g.ring as usize);
    h.to_switch.as_ref().expect("bell").ring().expect("ring");
    wait_until("the garbage counted", || {
        sw.counters(1).expect("h").drop_bad_desc == u64::from(g.ring)
    });
    // The done ring now holds all of it: a bad head is not read.
    let rx_ring = g.ring_offset(pronto_switch::layout::RingId::Rx);
    let tail = h.region.load_u32(rx_ring + 128).expect("tail");
    assert_eq!(tail, g.ring);
    h.region
        .store_u32(rx_ring + 64, tail.wrapping_add(g.ring + 5));
    for _ in 0..20 {
        h.to_switch.as_ref().expect("bell").ring().expect("ring");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(sw.counters(1).expect("h").drop_bad_ring, 0);
    // Freed, it is read and the bad head counted.
    ph.free_slots();
    wait_until("the bad head counted", || {
        h.to_switch.as_ref().expect("bell").ring().expect("ring");
        sw.counters(1).expect("h").drop_bad_ring > 0
    });
    assert_eq!(sw.counters(1).expect("h").drop_bad_desc, u64::from(g.ring));
}

#[test]
fn idle_switch_sleeps_and_wakes_on_a_doorbell() {
    let sw = SwitchHandle::spawn(Config {
        learning: false,
        ..Config::default()
    })
    .expect("switch");
    let (a, b) = (port("a"), port("b"));
    sw.attach(1, a.clone()).expect("a");
    sw.attach(2, b.clone()).expect("b");
    sw.add_static(mac(2), 2).expect("static");
    let mut pa = Peer::new(a, 64).expect("a");
    let mut pb = Peer::new(b, 64).expect("b");
    let mut buf = [0u8; 2048];
    let len = frame(mac(2), mac(1), 0, &mut buf);
    let s0 = sw.sleeps();
    pa.send(&[&buf[..len]]);
    wait_until("first frame", || pb.recv(|_| {}) == 1);
    wait_until("asleep", || sw.sleeps() > s0);
    std::thread::sleep(Duration::from_millis(20));
    let r0 = sw.rounds();
    std::thread::sleep(Duration::from_millis(200));
    let r1 = sw.rounds();
    assert!(r1 - r0 <= 2, "idle switch ran {} rounds in 200 ms", r1 - r0);
    // A send rings the doorbell and the frame still arrives; the peer
    // sleeps on its own doorbell meanwhile.
    let t = std::thread::spawn(move || {
        let t0 = Instant::now();
        let mut n = 0;
        while n == 0 {
            pb.wait(Some(Duration::from_secs(5)));
            n = pb.recv(|_| {});
            assert!(t0.elapsed() < Duration::from_secs(10));
        }
        n
    });
    std::thread::sleep(Duration::from_millis(20));
    pa.send(&[&buf[..len]]);
    assert_eq!(t.join().expect("receiver"), 1);
}

#[test]
fn restarted_switching_threads_take_over_their_ports_under_traffic() {
    // Both threads are restarted again and again while two peers exchange
    // frames through them: every frame arrives, byte for byte, and the
    // ports' counters go on across the restarts.
    let sw = Arc::new(
        SwitchHandle::spawn(Config {
            learning: false,
            threads: 2,
            ..Config::default()
        })
        .expect("switch"),
    );
    let (a, b) = (port("ra"), port("rb"));
    assert_eq!(sw.attach(1, a.clone()).expect("attach a"), 0);
    assert_eq!(sw.attach(2, b.clone()).expect("attach b"), 1);
    sw.add_static(mac(1), 1).expect("static");
    sw.add_static(mac(2), 2).expect("static");
    let (ca, cb) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    const N: u32 = 20_000;
    let pa = Peer::new(a, 128).expect("peer a");
    let pb = Peer::new(b, 128).expect("peer b");
    let (x, y) = (ca.clone(), cb.clone());
    let done = Arc::new(AtomicBool::new(false));
    // Peer a sends its second half only after two restarts, so that the
    // restarts fall inside the exchange however fast it runs.
    let restarted = Arc::new(AtomicU64::new(0));
    let gate = Gate {
        at: N / 2,
        count: restarted.clone(),
        min: 2,
    };
    let ta = std::thread::spawn(move || exchange_gated(pa, mac(1), mac(2), N, x, y, Some(gate)));
    let tb = std::thread::spawn(move || exchange(pb, mac(2), mac(1), N, cb, ca));
    let (sw2, done2) = (sw.clone(), done.clone());
    let restarter = std::thread::spawn(move || {
        let mut n = 0u64;
        while !done2.load(Ordering::Acquire) {
            let r = sw2.restart_thread((n % 2) as usize).expect("restart");
            assert_eq!((r.thread, r.ports), ((n % 2) as usize, 1));
            assert_eq!(r.reason, "running");
            n += 1;
            restarted.store(n, Ordering::Release);
            std::thread::sleep(Duration::from_millis(2));
        }
        n
    });
    let pa = ta.join().expect("peer a");
    let pb = tb.join().expect("peer b");
    done.store(true, Ordering::Release);
    let restarts = restarter.join().expect("restarter");
    assert!(
        restarts >= 2,
        "only {restarts} restarts during the exchange"
    );
    for (id, p) in [(1, &pa), (2, &pb)] {
        let c = sw.counters(id).expect("counters");
        assert_eq!((c.rx_packets, c.tx_packets), (N as u64, N as u64), "{c:?}");
        assert_eq!(c.drops(), 0, "{c:?}");
        assert_eq!(p.counters().received, N as u64);
    }
    let info = sw.threads_info();
    assert_eq!(info.len(), 2);
    assert_eq!(info.iter().map(|t| t.restarts).sum::<u64>(), restarts);
    assert!(info.iter().all(|t| t.alive && t.ports == 1), "{info:?}");
    let e = sw.restart_thread(2).expect_err("no thread 2");
    assert_eq!(e.to_string(), "switching thread 2 does not exist (0 to 1)");
}

/// A device the switching thread serves itself: sends `n` frames to
/// `mac(2)` from its port (never more than 64 ahead of those that came
/// back, fewer than the other side lends), checks every frame that comes
/// back, and reports itself done once `n` came back.
struct Echoed {
    p: Peer,
    sent: u32,
    got: u32,
    n: u32,
    seen: Arc<AtomicU64>,
    dropped: Arc<AtomicBool>,
}

impl pronto_switch::Local for Echoed {
    fn poll(&mut self) -> Option<usize> {
        if self.got == self.n {
            return None;
        }
        let mut buf = [0u8; 2048];
        let mut moved = 0;
        while self.sent < self.n && self.sent < self.got + 64 {
            let len = frame(mac(2), mac(1), self.sent, &mut buf);
            if self.p.send(&[&buf[..len]]) == 0 {
                break;
            }
            self.sent += 1;
            moved += 1;
        }
        let (mut got, mut want) = (self.got, [0u8; 2048]);
        moved += self.p.recv(|f| {
            let len = frame(mac(1), mac(2), got, &mut want);
            assert_eq!(f, &want[..len], "frame {got} came back changed");
            got += 1;
        });
        self.got = got;
        self.seen.store(got as u64, Ordering::Release);
        Some(moved)
    }
}

impl Drop for Echoed {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::Release);
    }
}

#[test]
fn a_device_served_by_the_switching_thread_exchanges_frames_and_is_dropped_when_done() {
    let sw = SwitchHandle::spawn(Config {
        learning: false,
        threads: 2,
        ..Config::default()
    })
    .expect("switch");
    let (a, b) = (port("a"), port("b"));
    assert_eq!(sw.attach(1, a.clone()).expect("attach a"), 0);
    assert_eq!(sw.attach(2, b.clone()).expect("attach b"), 1);
    sw.add_static(mac(1), 1).expect("static");
    sw.add_static(mac(2), 2).expect("static");
    let err = sw
        .serve_local(9, Box::new(NoDevice))
        .expect_err("no port 9");
    assert_eq!(
        err.to_string(),
        pronto_switch::SwitchError::NoPort(9).to_string()
    );
    const N: u32 = 20_000;
    let (seen, dropped) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let dev = Echoed {
        p: Peer::new(a, 128).expect("peer a"),
        sent: 0,
        got: 0,
        n: N,
        seen: seen.clone(),
        dropped: dropped.clone(),
    };
    // The other side lends its slots before the first frame comes (the
    // switch drops, and counts, a frame for a port with none lent), and
    // echoes every frame back, swapping the addresses and leaving the
    // rest as it came.
    let mut pb = Peer::new(b, 128).expect("peer b");
    // Served by the thread that serves its port.
    assert_eq!(sw.serve_local(1, Box::new(dev)).expect("serve"), 0);
    let mut want = [0u8; 2048];
    let (mut echoed, t0) = (0u32, Instant::now());
    while echoed < N {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "echoed {echoed} of {N}"
        );
        let mut back = Vec::new();
        pb.recv(|f| {
            let len = frame(mac(2), mac(1), echoed + back.len() as u32, &mut want);
            assert_eq!(f, &want[..len], "frame {echoed} differs");
            let mut g = f.to_vec();
            g[..6].copy_from_slice(&mac(1));
            g[6..12].copy_from_slice(&mac(2));
            back.push(g);
        });
        for g in &back {
            while pb.send(&[g]) == 0 {
                assert!(t0.elapsed() < Duration::from_secs(20), "cannot send back");
                std::thread::yield_now();
            }
        }
        echoed += back.len() as u32;
        if back.is_empty() {
            pb.wait(Some(Duration::from_micros(200)));
        }
    }
    wait_until("every frame back at the device", || {
        seen.load(Ordering::Acquire) == N as u64
    });
    wait_until("the device dropped once done", || {
        dropped.load(Ordering::Acquire)
    });
    for id in [1, 2] {
        let c = sw.counters(id).expect("counters");
        assert_eq!((c.rx_packets, c.tx_packets), (N as u64, N as u64), "{c:?}");
        assert_eq!(c.drops(), 0, "{c:?}");
    }
    sw.stop().expect("stop");
}

struct NoDevice;

impl pronto_switch::Local for NoDevice {
    fn poll(&mut self) -> Option<usize> {
        None
    }
}
