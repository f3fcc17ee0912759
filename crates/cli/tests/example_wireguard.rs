//! examples/wireguard-tunnel.click: both ends of a WireGuard tunnel (the
//! gateway of examples/wireguard.click and its road warrior) fed with the
//! plain trace examples/wireguard.pcap. Checks the printed counters and
//! peers, that what the ends open is the trace's packets byte for byte, and
//! the sealed messages on the wire: their types, lengths, ports, indices
//! and counters (the keys, and so the sealed bytes, differ at every run).

mod common;

use common::{checksums_ok, pcap_frames, root, run_example, scratch, tcpdump};

const GW: [u8; 4] = [10, 202, 1, 254];
const RW: [u8; 4] = [10, 202, 1, 1];

/// The trace's frames, each as its IP packet (Ethernet header and padding
/// off, as CheckIPHeader and CheckIP6Header trim it).
fn trace_ip() -> Vec<Vec<u8>> {
    pcap_frames(&root().join("examples/wireguard.pcap"))
        .into_iter()
        .map(|f| {
            let len = if f[12..14] == [0x86, 0xdd] {
                40 + usize::from(u16::from_be_bytes([f[18], f[19]]))
            } else {
                assert_eq!(f[12..14], [8, 0]);
                usize::from(u16::from_be_bytes([f[16], f[17]]))
            };
            f[14..14 + len].to_vec()
        })
        .collect()
}

/// The timestamps (whole seconds, nanoseconds) of a nanosecond pcap's
/// records.
fn stamps(path: &std::path::Path) -> Vec<(u32, u32)> {
    let b = std::fs::read(path).expect("pcap written");
    assert_eq!(b[..4], [0x4d, 0x3c, 0xb2, 0xa1], "nanosecond pcap");
    let u = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let mut v = Vec::new();
    let mut i = 24;
    while i + 16 <= b.len() {
        v.push((u(i), u(i + 4)));
        i += 16 + u(i + 8) as usize;
    }
    v
}

/// One WireGuard message on the wire.
#[derive(Debug)]
struct Msg {
    /// Sent by the gateway (else by the road warrior).
    from_gw: bool,
    kind: u8,
    /// The WireGuard message's length (the UDP payload).
    len: usize,
    /// Handshakes: the sender's index; data: the receiver's.
    index: u32,
    /// Handshake responses: the receiver's index; data: the counter.
    second: u64,
}

/// Checks a sealed packet's outer headers and reads its message.
fn message(p: &[u8]) -> Msg {
    assert_eq!(p[0], 0x45, "IPv4, no options");
    assert_eq!(usize::from(u16::from_be_bytes([p[2], p[3]])), p.len());
    assert_eq!((p[8], p[9]), (64, 17), "TTL 64, UDP");
    assert!(checksums_ok(p), "IPv4 and UDP checksums verify");
    let from_gw = match (&p[12..16], &p[16..20]) {
        (s, d) if s == GW && d == RW => true,
        (s, d) if s == RW && d == GW => false,
        (s, d) => panic!("addresses {s:?} > {d:?}"),
    };
    assert_eq!(p[20..24], [0xca, 0x6c, 0xca, 0x6c], "ports 51820 > 51820");
    let w = &p[28..];
    assert_eq!(usize::from(u16::from_be_bytes([p[24], p[25]])), 8 + w.len());
    assert_eq!(w[1..4], [0, 0, 0], "reserved bytes");
    let le32 = |o: usize| u32::from_le_bytes([w[o], w[o + 1], w[o + 2], w[o + 3]]);
    let second = match w[0] {
        2 => u64::from(le32(8)),
        4 => u64::from_le_bytes(w[8..16].try_into().expect("8 bytes")),
        _ => 0,
    };
    Msg {
        from_gw,
        kind: w[0],
        len: w.len(),
        index: le32(4),
        second,
    }
}

#[test]
fn wireguard_example_seals_opens_rekeys_and_counts() {
    let dir = scratch("wireguard");
    let (out, wire) = (dir.join("opened.pcap"), dir.join("wire.pcap"));
    let stdout = run_example(
        "wireguard-tunnel",
        &["--simtime=1700000000"],
        &[("OUT", &out), ("WIRE", &wire)],
    )
    .stdout;
    // Every counter is printed; these are the ones that are not 0.
    let zero = |names: &[&str]| -> String { names.iter().map(|n| format!("{n} 0\n")).collect() };
    let want = format!(
        "read        26 frames: 13 from the IN side, 13 from the road warrior, 0 not IP, 0 malformed\n\
         sealed      15 by the gateway, 15 by the road warrior (handshakes and keep-alives included)\n\
         opened      12 by the gateway, 11 by the road warrior\n\
         misrouted   0\n\
         gateway     NwiU7ZZoNw2a5RaiLhQ/5kmQvkOKOB4TptVJz//gK0k= endpoint=10.202.1.1:51820 \
         last_handshake=0 handshakes=2 rx_bytes=3502 tx_bytes=2146 rx_packets=12 tx_packets=11\n\
         road warrior nwk/DTIo5UT67KM/MWr+A9hcGFHpnbAj6yTJ2XDgEH4= endpoint=10.202.1.254:51820 \
         last_handshake=0 handshakes=2 rx_bytes=2230 tx_bytes=3550 rx_packets=11 tx_packets=13\n\
         gateway counters:\n\
         encrypted 11\ndecrypted 12\nhandshakes 2\ncookie_replies 0\nsent_control 4\n\
         no_peer 1\nno_endpoint 0\nnot_ip 0\ntoo_long 1\nawaiting_handshake 1\n{}\
         bad_source 1\nconsumed 0\nalloc_failed 0\n\
         road warrior counters:\n\
         encrypted 13\ndecrypted 11\nhandshakes 2\ncookie_replies 0\nsent_control 2\n{}\
         replay 1\nno_session 0\nunder_load 0\nbad_source 0\nconsumed 2\nalloc_failed 0\n",
        zero(&[
            "not_udp",
            "wrong_port",
            "malformed",
            "unknown_peer",
            "bad_mac",
            "handshake_failed",
            "decrypt_failed",
            "replay",
            "no_session",
            "under_load",
        ]),
        zero(&[
            "no_peer",
            "no_endpoint",
            "not_ip",
            "too_long",
            "awaiting_handshake",
            "not_udp",
            "wrong_port",
            "malformed",
            "unknown_peer",
            "bad_mac",
            "handshake_failed",
            "decrypt_failed",
        ]),
    );
    assert_eq!(stdout, want);

    // What the two ends opened: the trace's packets, unchanged, in order,
    // but frame 18 (1,421 bytes, over the MTU: too_long), 19 (for
    // 10.99.0.9, which no peer holds: no_peer) and 20 (from 10.99.0.3,
    // outside the road warrior's AllowedIPs: bad_source). Frame 21's
    // duplicate was dropped by the replay window.
    let trace = trace_ip();
    assert_eq!(trace.len(), 26);
    let opened = pcap_frames(&out);
    let want: Vec<usize> = (0..=17).chain(21..=25).collect();
    assert_eq!(opened.len(), want.len());
    for (k, &i) in want.iter().enumerate() {
        assert_eq!(opened[k], trace[i], "opened packet {k} is trace frame {i}");
    }

    // The wire. Which end seals a trace frame: the road warrior's own
    // addresses are 10.99.0.0/24 and fd99::/64.
    let by_rw = |p: &[u8]| match p[0] >> 4 {
        4 => p[12..15] == [10, 99, 0],
        _ => p[8..10] == [0xfd, 0x99],
    };
    let sealed: Vec<Msg> = pcap_frames(&wire).iter().map(|p| message(p)).collect();
    // The handshake (the gateway starts it: frame 0 found no session),
    // the initiator's keep-alive that confirms it, the data messages of
    // frames 0-17, 20 and 21 (twice), the rekey's handshake and keep-alive,
    // frames 22-25. A data message is 32 bytes longer than the packet it
    // carries (boringtun does not pad it to 16 bytes).
    let handshake = [(true, 1, 148), (false, 2, 92), (true, 4, 32)];
    let data = |i: usize| (!by_rw(&trace[i]), 4u8, 32 + trace[i].len());
    let want: Vec<(bool, u8, usize)> = handshake
        .iter()
        .copied()
        .chain((0..=17).chain([20, 21, 21]).map(data))
        .chain(handshake)
        .chain((22..=25).map(data))
        .collect();
    let got: Vec<(bool, u8, usize)> = sealed.iter().map(|m| (m.from_gw, m.kind, m.len)).collect();
    assert_eq!(got, want);
    // Each session: the response names the initiation's sender; data goes
    // to the index the other end announced; counters count from 0 (the
    // keep-alive) per sender and session, and the duplicate repeats one.
    let (first, second) = sealed.split_at(24);
    for s in [first, second] {
        let (init, resp) = (&s[0], &s[1]);
        assert_eq!(resp.second, u64::from(init.index));
        let (mut gw_n, mut rw_n) = (0, 0);
        for m in &s[2..] {
            let (to, n) = if m.from_gw {
                (resp.index, &mut gw_n)
            } else {
                (init.index, &mut rw_n)
            };
            assert_eq!(m.index, to, "{m:?}");
            if m.from_gw && m.len == 32 + 120 && m.second + 1 == *n {
                // The duplicate of frame 21.
                continue;
            }
            assert_eq!(m.second, *n, "{m:?}");
            *n += 1;
        }
    }
    assert_ne!(
        first[0].index, second[0].index,
        "the rekey made a new session"
    );
    // The ends' own messages carry the router's (simulated) clock: the
    // first handshake when frame 0 arrived, the rekey's at 1 s.
    let t = stamps(&wire);
    assert_eq!(t[..3], [(1_700_000_000, 0); 3]);
    assert_eq!(t[24..27], [(1_700_000_001, 0); 3]);

    if let Some(text) = tcpdump(&wire) {
        assert_eq!(text.lines().count(), 31);
        assert!(text
            .lines()
            .all(|l| l.contains(" IP 10.202.1.") && l.contains(".51820: UDP, length ")));
    }
    if let Some(text) = tcpdump(&out) {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 23);
        assert!(lines[7].ends_with("HTTP: GET / HTTP/1.1"), "{}", lines[7]);
        assert!(lines[12].contains(" IP6 fd99::2 > fd00:202:2::10: ICMP6, echo request"));
    }
}
