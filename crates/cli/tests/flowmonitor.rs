//! `FlowMonitor` against a collector nobody here wrote: `nfcapd` (Debian's
//! nfdump package) collects what `examples/flowmonitor.click` exports from a
//! trace this test writes, as IPFIX and as NetFlow v9, and `nfdump` must
//! read back exactly the trace's flows: protocol, addresses, ports,
//! packets and bytes, IPv4 and IPv6, TCP, UDP and ICMP.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ipv4_checksum(h: &[u8]) -> u16 {
    let mut s: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An Ethernet frame around an IPv4 packet.
fn v4(proto: u8, src: [u8; 4], dst: [u8; 4], l4: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = (20 + l4.len()) as u16;
    let mut ip = vec![0x45, 0];
    ip.extend_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0, 0, 64, proto, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(l4);
    f
}

/// An Ethernet frame around an IPv6 packet.
fn v6(proto: u8, src: [u8; 16], dst: [u8; 16], l4: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    f.extend_from_slice(&[proto, 64]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(l4);
    f
}

fn udp(sport: u16, dport: u16, payload: usize) -> Vec<u8> {
    let mut l = Vec::new();
    l.extend_from_slice(&sport.to_be_bytes());
    l.extend_from_slice(&dport.to_be_bytes());
    l.extend_from_slice(&((8 + payload) as u16).to_be_bytes());
    l.extend_from_slice(&[0, 0]);
    l.resize(8 + payload, 0xab);
    l
}

fn tcp(sport: u16, dport: u16, flags: u8, payload: usize) -> Vec<u8> {
    let mut l = Vec::new();
    l.extend_from_slice(&sport.to_be_bytes());
    l.extend_from_slice(&dport.to_be_bytes());
    l.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    l.resize(20 + payload, 0xcd);
    l
}

fn echo(id: u16, seq: u16) -> Vec<u8> {
    let mut l = vec![8, 0, 0, 0];
    l.extend_from_slice(&id.to_be_bytes());
    l.extend_from_slice(&seq.to_be_bytes());
    l.resize(8 + 32, 0x11);
    l
}

fn addr6(last: u8) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[15] = last;
    a
}

/// The trace: frames, and the flows nfdump must show for it, as
/// `PROTO SRC SPORT DST DPORT PACKETS BYTES` (ICMP: destination port
/// type.code, as nfdump prints it).
fn trace() -> (Vec<Vec<u8>>, BTreeSet<String>) {
    let mut frames = Vec::new();
    let (a, b, c) = ([10, 0, 0, 1], [192, 0, 2, 9], [10, 0, 0, 2]);
    // UDP: 3 packets of 28 + 100 bytes.
    for _ in 0..3 {
        frames.push(v4(17, a, b, &udp(1000, 53, 100)));
    }
    // TCP: a SYN (40 bytes), then 4 segments of 40 + 500 bytes, interleaved
    // with the rest.
    frames.push(v4(6, c, b, &tcp(40000, 443, 0x02, 0)));
    for i in 0..4 {
        frames.push(v4(6, c, b, &tcp(40000, 443, 0x18, 500)));
        // ICMP echo requests (20 + 40 bytes) with different identifiers: one
        // flow, type 8 code 0.
        frames.push(v4(1, a, b, &echo(7 + i, i)));
        // IPv6 UDP: 40 + 8 + 200 bytes.
        frames.push(v6(17, addr6(1), addr6(2), &udp(5000, 6000, 200)));
    }
    // A frame that is not IP passes uncounted.
    let mut arp = vec![0xff; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06]);
    arp.resize(60, 0);
    frames.push(arp);
    let want = [
        "17 10.0.0.1 1000 192.0.2.9 53 3 384",
        "6 10.0.0.2 40000 192.0.2.9 443 5 2200",
        "1 10.0.0.1 0 192.0.2.9 8.0 4 240",
        "17 2001:db8::1 5000 2001:db8::2 6000 4 992",
    ];
    (frames, want.iter().map(|s| s.to_string()).collect())
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        b.extend_from_slice(&1_795_737_600u32.to_le_bytes());
        b.extend_from_slice(&(i as u32 * 1000).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).expect("write the trace");
}

/// Whether a UDP socket is bound to local port `port` (IPv4).
fn udp_bound(port: u16) -> bool {
    let t = std::fs::read_to_string("/proc/net/udp").unwrap_or_default();
    let want = format!(":{port:04X} ");
    t.lines().skip(1).any(|l| {
        l.split_whitespace()
            .nth(1)
            .is_some_and(|local| format!("{local} ").ends_with(&want))
    })
}

struct Collector(Child);

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What nfdump reads back from `dir`, one line per flow, fields separated
/// by one space.
fn read_back(dir: &Path) -> BTreeSet<String> {
    let o = Command::new("nfdump")
        .arg("-R")
        .arg(dir)
        .args(["-q", "-N", "-o", "fmt:%pr %sa %sp %da %dp %pkt %byt"])
        .output()
        .expect("nfdump runs");
    assert!(
        o.status.success(),
        "nfdump: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

fn run(format: &str, scratch: &Path, trace: &Path, want: &BTreeSet<String>) {
    let flows = scratch.join(format!("flows-{format}"));
    std::fs::create_dir_all(&flows).expect("mkdir");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    let nfcapd = Command::new("nfcapd")
        .args([
            "-p",
            &port.to_string(),
            "-b",
            "127.0.0.1",
            "-t",
            "3600",
            "-w",
        ])
        .arg(&flows)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nfcapd starts");
    let mut collector = Collector(nfcapd);
    let t0 = Instant::now();
    while !udp_bound(port) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "nfcapd never listened on port {port}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/flowmonitor.click");
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .arg("run")
        .arg(&example)
        .arg(format!("TRACE={}", trace.display()))
        .arg(format!("PORT={port}"))
        .arg(format!("EXPORT={format}"))
        .output()
        .expect("pronto runs");
    assert!(
        o.status.success(),
        "pronto run: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // nfcapd writes its file when it is told to stop.
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(collector.0.id() as i32).expect("pid"),
        rustix::process::Signal::TERM,
    )
    .expect("signal nfcapd");
    let status = collector.0.wait().expect("nfcapd ends");
    let mut err = String::new();
    if let Some(mut e) = collector.0.stderr.take() {
        use std::io::Read as _;
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "nfcapd: {status}: {err}");
    assert_eq!(&read_back(&flows), want, "{format}: nfcapd's log:\n{err}");
}

#[test]
fn nfcapd_collects_exactly_the_flows_of_a_trace_as_ipfix_and_netflow_v9() {
    if !have("nfcapd") || !have("nfdump") {
        eprintln!(
            "SKIPPED flowmonitor interoperability: needs nfcapd and nfdump (Debian's nfdump \
             package; scripts/install-test-tools installs it)"
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("pronto-flowmonitor-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let scratch = Scratch(dir);
    let (frames, want) = trace();
    let pcap = scratch.0.join("trace.pcap");
    write_pcap(&pcap, &frames);
    run("ipfix", &scratch.0, &pcap, &want);
    run("netflow9", &scratch.0, &pcap, &want);
}
