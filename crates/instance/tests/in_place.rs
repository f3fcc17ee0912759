//! A sandboxed instance's switch port whose slots are packets: frames
//! received and sent without a copy, byte for byte, every packet
//! accounted for, and a configuration that holds more packets than the
//! port has slots still receiving (its frames copied in).
//!
//! The port is given to the process as the daemon gives it to an
//! instance (`swport::give_port`), on a real switch running on its own
//! thread; the router runs on this test's thread, a peer on a third sends
//! and checks. Each test is its own process (the given ports are
//! process-wide), so this file holds one test.

use std::time::{Duration, Instant};

use pronto_lang::SourceMap;
use pronto_runtime::{Router, RouterOptions};
use pronto_switch::{Config, Geometry, Peer, PortShm, SwitchHandle};

const ME: [u8; 6] = [2, 0, 0, 0, 0, 1];
const TESTER: [u8; 6] = [2, 0, 0, 0, 0, 2];

/// Frame `seq` from the tester to the instance: its bytes derive from
/// `seq`, its length varies from 60 to 1,459 bytes.
fn frame(seq: u32) -> Vec<u8> {
    let len = 60 + (seq as usize * 7919) % 1400;
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&ME);
    f[6..12].copy_from_slice(&TESTER);
    f[12..16].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in f[16..].iter_mut().enumerate() {
        *b = (seq as usize).wrapping_mul(31).wrapping_add(i) as u8;
    }
    f
}

/// What `EtherMirror` makes of `frame(seq)`.
fn mirrored(seq: u32) -> Vec<u8> {
    let mut f = frame(seq);
    f[..6].copy_from_slice(&TESTER);
    f[6..12].copy_from_slice(&ME);
    f
}

fn build(text: &str) -> Router {
    let mut sm = SourceMap::new();
    let file = sm.add("config", text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts).expect("configuration parses");
    Router::build(&flat, &sm, &RouterOptions::default()).expect("configuration builds")
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Sends `frame(first..first + n)` one at a time, each once the switch
/// has delivered the one before to the instance's port (again when the
/// port had no slot lent for it), then receives `expect` frames and
/// returns them.
fn send_then_receive(
    sw: &SwitchHandle,
    peer: &mut Peer,
    first: u32,
    n: u32,
    expect: usize,
) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    for seq in first..first + n {
        let f = frame(seq);
        loop {
            let before = sw.counters(1).expect("port 1");
            assert_eq!(peer.send(&[&f]), 1, "tester's port takes frame {seq}");
            let mut c = before;
            wait_until("the switch to handle a frame", || {
                c = sw.counters(1).expect("port 1");
                c.tx_packets + c.drop_no_buffer > before.tx_packets + before.drop_no_buffer
            });
            peer.recv(|b| got.push(b.to_vec()));
            if c.tx_packets > before.tx_packets {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    wait_until("every echo", || {
        peer.recv(|b| got.push(b.to_vec()));
        got.len() >= expect
    });
    got
}

fn counter(router: &mut Router, element: &str, name: &str) -> u64 {
    let all = router.counters();
    let e = all
        .iter()
        .find(|e| e.name == element)
        .unwrap_or_else(|| panic!("no element {element}"));
    e.counters
        .iter()
        .find(|c| c.0 == name)
        .unwrap_or_else(|| panic!("{element} has no counter {name}: {:?}", e.counters))
        .2
}

#[test]
fn frames_cross_a_given_port_in_place_and_a_full_port_copies() {
    let sw = SwitchHandle::spawn(Config::default()).expect("switch");
    // The instance's port: 64 slots, 32 lent; so 32 free, 8 of them kept
    // for copies out.
    let mine = PortShm::create(
        "in-place-instance",
        Geometry::new(64, 32).expect("geometry"),
    )
    .expect("port");
    let theirs = PortShm::create(
        "in-place-tester",
        Geometry::new(512, 256).expect("geometry"),
    )
    .expect("port");
    sw.attach(1, mine.clone()).expect("attach");
    sw.attach(2, theirs.clone()).expect("attach");
    sw.add_static(ME, 1).expect("static entry");
    sw.add_static(TESTER, 2).expect("static entry");
    pronto_elements::userlevel::swport::give_port("eth0", mine).expect("port given");
    let mut tester = Peer::new(theirs, 256).expect("tester's peer");

    // 1. Received and sent as they lie: 300 frames echoed byte for byte.
    let mut router = build(
        "FromDevice(eth0) -> EtherMirror -> td :: ToDevice(eth0);\n\
         Script(label top, wait 1ms, goto top $(lt $(td.count) 300), stop);",
    );
    let echoes = std::thread::scope(|s| {
        let t = s.spawn(|| send_then_receive(&sw, &mut tester, 0, 300, 300));
        router.run().expect("router runs");
        t.join().expect("tester")
    });
    assert_eq!(echoes.len(), 300);
    for (seq, e) in echoes.iter().enumerate() {
        assert_eq!(e, &mirrored(seq as u32), "echo {seq}");
    }
    assert_eq!(counter(&mut router, "FromDevice@1", "count"), 300);
    assert_eq!(counter(&mut router, "FromDevice@1", "in_place"), 300);
    assert_eq!(counter(&mut router, "td", "sent_in_place"), 300);
    router
        .check_conservation()
        .expect("every packet accounted for");
    assert_eq!(router.pool().in_use(), 0);
    drop(router);

    // 2. A queue holds 100 frames: 24 stay where they arrived (the port's
    // free slots but its reserve), the rest are copied into the router's
    // pool so that the port keeps its 32 slots lent; released, all 100
    // go out in order, the 24 as they lie, the rest copied into free
    // slots.
    let mut router = build(
        "FromDevice(eth0) -> q :: Queue(1000) -> ps :: PullSwitch(-1) -> EtherMirror\n\
           -> td :: ToDevice(eth0);\n\
         Script(label a, wait 1ms, goto a $(lt $(q.length) 100), write ps.switch 0,\n\
           label b, wait 1ms, goto b $(lt $(td.count) 100), stop);",
    );
    let echoes = std::thread::scope(|s| {
        let t = s.spawn(|| send_then_receive(&sw, &mut tester, 1000, 100, 100));
        router.run().expect("router runs");
        t.join().expect("tester")
    });
    assert_eq!(echoes.len(), 100);
    for (i, e) in echoes.iter().enumerate() {
        assert_eq!(e, &mirrored(1000 + i as u32), "echo {i}");
    }
    assert_eq!(counter(&mut router, "FromDevice@1", "count"), 100);
    assert_eq!(counter(&mut router, "FromDevice@1", "in_place"), 24);
    assert_eq!(counter(&mut router, "td", "count"), 100);
    assert_eq!(counter(&mut router, "td", "sent_in_place"), 24);
    assert_eq!(counter(&mut router, "td", "send_failed"), 0);
    router
        .check_conservation()
        .expect("every packet accounted for");
    assert_eq!(router.pool().in_use(), 0);
    let c = sw.counters(1).expect("port 1");
    assert_eq!(c.rx_packets, 400, "the switch took every echo");
    assert_eq!(c.drop_bad_desc, 0);
}
