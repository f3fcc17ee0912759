//! Two real processes share a ring: the test binary re-runs itself as the
//! consumer, receives the ring region and doorbell over a unix socket
//! (SCM_RIGHTS), and checks every descriptor arrives once, in order, while
//! sleeping on the doorbell whenever the ring runs dry.

use std::os::fd::{AsFd, AsRawFd};
use std::process::Command;
use std::time::Duration;

use pronto_ring::{fdpass, Consumer, Desc, Doorbell, SharedRegion};

const CHILD_ENV: &str = "PRONTO_RING_TEST_CHILD_FD";
const N: u32 = 1_000_000;
const CAP: u32 = 1024;

fn expected(i: u32) -> Desc {
    Desc::new(i % 4096, 128 + (i % 64) as u16, 60 + (i % 1000) as u16)
}

fn child(raw: i32) {
    let sock = fdpass::take_inherited(raw).expect("inherited socket");
    let mut buf = [0u8; 64];
    let (n, fds) = fdpass::recv(&sock, &mut buf).expect("recv");
    assert_eq!(&buf[..n], b"ring");
    let mut fds = fds.into_iter();
    let region = SharedRegion::attach(
        fds.next().expect("region fd"),
        pronto_ring::ring::region_len(CAP),
    )
    .expect("attach region");
    let bell = Doorbell::from_fd(fds.next().expect("doorbell fd"));
    let mut c = Consumer::attach(std::sync::Arc::new(region), CAP).expect("consumer");
    let mut out = [Desc::default(); 64];
    let (mut next, mut sleeps) = (0u32, 0u32);
    while next < N {
        let k = c.pop(&mut out);
        if k == 0 {
            if c.prepare_sleep() {
                sleeps += 1;
                bell.wait(Some(Duration::from_secs(10))).expect("wait");
                c.woke();
            }
            continue;
        }
        for d in &out[..k] {
            assert_eq!(*d, expected(next), "descriptor {next}");
            next += 1;
        }
    }
    let reply = format!("ok {next} {sleeps} {}", c.faults().bad_position);
    fdpass::send(&sock, reply.as_bytes(), &[]).expect("reply");
}

#[test]
fn two_processes_move_a_million_descriptors_in_order() {
    if let Ok(raw) = std::env::var(CHILD_ENV) {
        child(raw.parse().expect("fd number"));
        return;
    }
    let (region, mut p) = pronto_ring::create("test-ring", CAP).expect("ring");
    let bell = Doorbell::new().expect("doorbell");
    let (mine, theirs) = fdpass::socket_pair().expect("socket pair");
    fdpass::inheritable(&theirs).expect("inheritable");
    let mut kid = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "two_processes_move_a_million_descriptors_in_order",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, theirs.as_raw_fd().to_string())
        .spawn()
        .expect("spawn consumer process");
    drop(theirs);
    let region_fd = region.dup_fd().expect("dup");
    fdpass::send(&mine, b"ring", &[region_fd.as_fd(), bell.as_fd()]).expect("send fds");
    let mut batch = [Desc::default(); 32];
    let mut i = 0u32;
    let mut rings = 0u32;
    while i < N {
        let want = (N - i).min(32) as usize;
        for (k, d) in batch[..want].iter_mut().enumerate() {
            *d = expected(i + k as u32);
        }
        let mut sent = 0;
        while sent < want {
            let k = p.push(&batch[sent..want]);
            if k == 0 {
                std::thread::yield_now();
            }
            sent += k;
            if p.consumer_wants_wakeup() {
                bell.ring().expect("ring doorbell");
                rings += 1;
            }
        }
        i += want as u32;
        // Pause now and then so that the consumer runs dry and sleeps.
        if i.is_multiple_of(250_000) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut buf = [0u8; 64];
    let (n, _) = fdpass::recv(&mine, &mut buf).expect("reply");
    let reply = String::from_utf8_lossy(&buf[..n]).to_string();
    let status = kid.wait().expect("consumer exit");
    assert!(status.success(), "consumer failed: {status}");
    let words: Vec<&str> = reply.split_whitespace().collect();
    assert_eq!(words[..2], ["ok", "1000000"], "{reply}");
    assert_eq!(words[3], "0", "no faults: {reply}");
    let sleeps: u32 = words[2].parse().expect("sleeps");
    assert!(sleeps >= 1, "the consumer slept during the pauses: {reply}");
    // Every sleep needed a ring (else the consumer would have hit its 10 s
    // timeout and the test would take minutes); a ring can also land just
    // as the consumer finds work and withdraws, which costs nothing.
    assert!(rings >= 1, "rang {rings} times for {sleeps} sleeps");
    assert_eq!(p.faults().bad_position, 0);
}
