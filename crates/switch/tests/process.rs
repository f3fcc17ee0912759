//! A peer in another process: the test binary re-runs itself as a peer
//! that receives its port (region and two doorbells) over a unix socket
//! (SCM_RIGHTS) and echoes every frame back with the addresses swapped;
//! the parent's peer, on a thread beside the switch, checks each echo
//! byte for byte.

use std::os::fd::{AsFd, AsRawFd};
use std::process::Command;
use std::time::Duration;

use pronto_ring::fdpass;
use pronto_switch::{Config, Geometry, Peer, PortShm, SwitchHandle};

const CHILD_ENV: &str = "PRONTO_SWITCH_TEST_CHILD_FD";
const N: u32 = 20_000;

fn geometry() -> Geometry {
    Geometry::new(512, 256).expect("geometry")
}

fn frame(seq: u32, buf: &mut [u8; 2048]) -> usize {
    let len = 60 + (seq as usize * 131) % 1400;
    buf[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    buf[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    for (i, b) in buf[12..len].iter_mut().enumerate() {
        *b = (seq as usize ^ i) as u8;
    }
    len
}

fn child(raw: i32) {
    let sock = fdpass::take_inherited(raw).expect("inherited socket");
    let mut buf = [0u8; 64];
    let (n, fds) = fdpass::recv(&sock, &mut buf).expect("recv");
    assert_eq!(&buf[..n], b"port");
    let shm = PortShm::from_fds(fds, geometry()).expect("port");
    let mut p = Peer::new(shm, 128).expect("peer");
    // Slots are lent: frames sent to this port from now on have room.
    fdpass::send(&sock, b"ready", &[]).expect("ready");
    let mut echoed = 0u32;
    let mut out = [[0u8; 2048]; 64];
    let mut lens = [0usize; 64];
    while echoed < N {
        let mut k = 0;
        p.recv(|f| {
            out[k][..f.len()].copy_from_slice(f);
            out[k].copy_within(0..6, 6);
            out[k][..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
            lens[k] = f.len();
            k += 1;
        });
        if k == 0 {
            p.wait(Some(Duration::from_secs(10)));
            continue;
        }
        let mut sent = 0;
        while sent < k {
            let frames: Vec<&[u8]> = (sent..k).map(|i| &out[i][..lens[i]]).collect();
            sent += p.send(&frames);
            if sent < k {
                std::thread::yield_now();
            }
        }
        echoed += k as u32;
    }
    let reply = format!("ok {echoed}");
    fdpass::send(&sock, reply.as_bytes(), &[]).expect("reply");
}

#[test]
fn a_peer_in_another_process_echoes_frames_byte_exactly() {
    if let Ok(raw) = std::env::var(CHILD_ENV) {
        child(raw.parse().expect("fd number"));
        return;
    }
    let sw = SwitchHandle::spawn(Config::default()).expect("switch");
    let (a, b) = (
        PortShm::create("a", geometry()).expect("a"),
        PortShm::create("b", geometry()).expect("b"),
    );
    sw.attach(1, a.clone()).expect("attach a");
    sw.attach(2, b.clone()).expect("attach b");
    let (mine, theirs) = fdpass::socket_pair().expect("socket pair");
    fdpass::inheritable(&theirs).expect("inheritable");
    let mut kid = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "a_peer_in_another_process_echoes_frames_byte_exactly",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, theirs.as_raw_fd().to_string())
        .spawn()
        .expect("spawn peer process");
    drop(theirs);
    let fds = b.fds().expect("fds");
    let fds: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
    fdpass::send(&mine, b"port", &fds).expect("send fds");
    drop(b);
    let mut rbuf = [0u8; 64];
    let (n, _) = fdpass::recv(&mine, &mut rbuf).expect("ready");
    assert_eq!(&rbuf[..n], b"ready");
    let mut p = Peer::new(a, 128).expect("peer a");
    let mut buf = [0u8; 2048];
    let mut want = [0u8; 2048];
    let (mut sent, mut got) = (0u32, 0u32);
    // Stalled: no frame back for 10 s (a loaded machine is slow, not
    // stuck).
    let (mut t0, mut seen) = (std::time::Instant::now(), 0);
    while got < N {
        if got != seen {
            (t0, seen) = (std::time::Instant::now(), got);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "stalled at {got}/{sent}: {:?} {:?}",
            sw.counters(1),
            sw.counters(2)
        );
        // At most 32 frames in flight, so that nothing is dropped.
        while sent < N && sent < got + 32 {
            let len = frame(sent, &mut buf);
            if p.send(&[&buf[..len]]) == 0 {
                break;
            }
            sent += 1;
        }
        let k = p.recv(|f| {
            let len = frame(got, &mut want);
            want.copy_within(0..6, 6);
            want[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
            assert_eq!(f, &want[..len], "echo {got} differs");
            got += 1;
        });
        if k == 0 {
            p.wait(Some(Duration::from_millis(1)));
        }
    }
    let (n, _) = fdpass::recv(&mine, &mut rbuf).expect("reply");
    assert_eq!(&rbuf[..n], format!("ok {N}").as_bytes());
    assert!(kid.wait().expect("peer exit").success());
    for id in [1, 2] {
        let c = sw.counters(id).expect("counters");
        assert_eq!(
            (c.rx_packets, c.tx_packets, c.drops()),
            (N as u64, N as u64, 0),
            "{c:?}"
        );
    }
}
