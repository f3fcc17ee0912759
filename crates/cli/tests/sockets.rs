//! `Socket` under `pronto run`, with real peers on loopback: a UDP echo
//! server (datagrams back to their sender through a queue and the
//! element's pull input), a TCP echo server, a UDP receiver whose
//! datagrams reach a pcap byte for byte; and `pronto check`, which opens
//! no socket.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `pronto run` child, killed when the test ends.
struct Run(Child);

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn run(config: &str, dir: &std::path::Path) -> Run {
    Run(Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["run", "-e", config])
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("pronto run"))
}

/// A port free now.
fn free_port(tcp: bool) -> u16 {
    if tcp {
        TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port()
    } else {
        UdpSocket::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("port")
            .port()
    }
}

#[test]
fn udp_echo_through_a_queue() {
    let dir = common::scratch("sock-udp-echo");
    let port = free_port(false);
    let _p = run(
        &format!("s :: Socket(UDP, 127.0.0.1, {port}); s -> Queue(16) -> s;"),
        &dir,
    );
    let peer = UdpSocket::bind("127.0.0.1:0").expect("peer");
    peer.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut buf = [0u8; 2048];
    // Until pronto is up, datagrams are lost: resend until one comes back.
    let mut first = None;
    while first.is_none() && Instant::now() < deadline {
        peer.send_to(b"are you there", ("127.0.0.1", port))
            .expect("send");
        if let Ok((n, from)) = peer.recv_from(&mut buf) {
            assert_eq!(from.port(), port);
            first = Some(buf[..n].to_vec());
        }
    }
    assert_eq!(first.as_deref(), Some(b"are you there".as_slice()));
    // Drain late echoes of the retries, then check ten datagrams of
    // different lengths come back exactly, in order.
    while peer.recv_from(&mut buf).is_ok() {}
    peer.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    for i in 0..10usize {
        let d: Vec<u8> = (0..(i * 150 + 1)).map(|k| (k * 7 + i) as u8).collect();
        peer.send_to(&d, ("127.0.0.1", port)).expect("send");
        let (n, _) = peer.recv_from(&mut buf).expect("echo");
        assert_eq!(&buf[..n], d.as_slice(), "datagram {i}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tcp_echo_server() {
    let dir = common::scratch("sock-tcp-echo");
    let port = free_port(true);
    let _p = run(
        &format!("s :: Socket(TCP, 127.0.0.1, {port}); s -> s;"),
        &dir,
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut c = loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(c) => break c,
            Err(e) if Instant::now() > deadline => panic!("connect: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    c.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let msg: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
    c.write_all(&msg).expect("write");
    let mut back = vec![0u8; msg.len()];
    c.read_exact(&mut back).expect("echo");
    assert_eq!(back, msg);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn udp_datagrams_reach_a_pcap() {
    let dir = common::scratch("sock-udp-pcap");
    let port = free_port(false);
    let mut p = run(
        &format!(
            "Socket(UDP, 127.0.0.1, {port}) -> c :: Counter(COUNT_CALL 3 stop) -> ToDump(out.pcap);"
        ),
        &dir,
    );
    let peer = UdpSocket::bind("127.0.0.1:0").expect("peer");
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut i = 0u32;
    let status = loop {
        if let Some(s) = p.0.try_wait().expect("wait") {
            break s;
        }
        assert!(Instant::now() < deadline, "pronto did not stop");
        peer.send_to(format!("datagram {i}").as_bytes(), ("127.0.0.1", port))
            .expect("send");
        i += 1;
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success());
    let frames = common::pcap_frames(&dir.join("out.pcap"));
    assert_eq!(frames.len(), 3);
    // Three datagrams in a row, whichever was first to find pronto up.
    let first: u32 = String::from_utf8_lossy(&frames[0])
        .strip_prefix("datagram ")
        .and_then(|n| n.parse().ok())
        .expect("a datagram");
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(f, format!("datagram {}", first + k as u32).as_bytes());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pronto check` binds nothing: it accepts a configuration whose port is
/// taken, which `pronto run` refuses with Click's message.
#[test]
fn check_opens_no_socket() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let config = format!("Socket(TCP, 127.0.0.1, {port}) -> Discard;");
    let (ok, _, err) = common::pronto(&["check", "-e", &config]);
    assert!(ok, "{err}");
    let (ok, _, err) = common::pronto(&["run", "-e", &config]);
    assert!(!ok);
    assert!(err.contains("bind: Address already in use"), "{err}");
}
