//! examples/stateful-firewall.click: runs the stateful firewall example on
//! its bundled trace and checks the printed counters, the connection table
//! and the packets that passed.

mod common;

use common::{pcap_frames, root, run_example, scratch};

/// Frames of the input trace, by index.
fn trace() -> Vec<Vec<u8>> {
    pcap_frames(&root().join("examples/stateful-firewall.pcap"))
}

#[test]
fn stateful_firewall_example_tracks_and_drops_by_reason() {
    let dir = scratch("stateful-firewall");
    let out = dir.join("out.pcap");
    let stdout = run_example("stateful-firewall", &["--simtime"], &[("OUT", &out)]).stdout;
    assert_eq!(
        stdout,
        "read           47 frames, 1 not IP, 0 malformed\n\
         policy denied  2\n\
         passed out     17\n\
         passed in      15 ( 2 related )\n\
         nd passed      2\n\
         unsolicited    7\n\
         no connection  3\n\
         invalid        1\n\
         fragments      1\n\
         dropped        12\n\
         connections    8 ( 3 IPv6 )\n\
         icmp 10.0.0.5:119 1.1.1.1:0 ICMP_ECHO expires=+30.000\n\
         tcp 10.0.0.5:40000 93.184.216.34:443 TIME_WAIT expires=+120.000\n\
         tcp 10.0.0.6:40001 151.101.1.69:80 ESTABLISHED expires=+3600.000\n\
         udp 10.0.0.5:5353 8.8.8.8:53 UDP_REPLIED expires=+120.000\n\
         udp 10.0.0.7:5454 9.9.9.9:53 UDP_UNREPLIED expires=+30.000\n\
         tcp [2001:db8:1::5]:40010 [2001:db8:ff::34]:443 TIME_WAIT expires=+120.000\n\
         udp [2001:db8:1::5]:5300 [2001:4860:4860::8888]:53 UDP_REPLIED expires=+120.000\n\
         icmp6 [2001:db8:1::5]:102 [2001:db8:ff::34]:0 ICMP_ECHO expires=+30.000\n"
    );
    // The packets that passed are exactly these frames of the trace,
    // unchanged (but for the padding), in order. IPv4: the session (0-7),
    // the second handshake (9-11), DNS and its reply (17, 18), the query
    // and the related ICMP error (20, 21), the ping and its reply (22, 23).
    // IPv6: the session (28-35), DNS, its reply and the related
    // packet-too-big (36-38), the ping and its reply (39, 40), the
    // neighbor solicitation and advertisement (42, 43). Dropped: the
    // unsolicited ping (41) and SYN (44), the fragment (45); the policy
    // denied telnet (46).
    let input = trace();
    let v6: Vec<usize> = (28..=40).chain([42, 43]).collect();
    let want: Vec<Vec<u8>> = [0, 1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 17, 18, 20, 21, 22, 23]
        .iter()
        .chain(&v6)
        .map(|&i| {
            // CheckIPHeader and CheckIP6Header trim the Ethernet padding
            // after the IP packet.
            let f = &input[i];
            let len = if f[12..14] == [0x86, 0xdd] {
                40 + u16::from_be_bytes([f[18], f[19]]) as usize
            } else {
                u16::from_be_bytes([f[16], f[17]]) as usize
            };
            f[..14 + len].to_vec()
        })
        .collect();
    let got = pcap_frames(&out);
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "output packet {k}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
