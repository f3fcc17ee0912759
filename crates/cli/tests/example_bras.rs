//! examples/bras-trace.click: the BRAS replays its bundled trace
//! (examples/bras.pcap, scripts/make_bras_trace.py) and the test checks the
//! printed counters, every frame it sends to the subscribers byte for byte
//! (built here field by field), the packets it decapsulates toward the
//! network, and the accounting records with their exact counts.
//!
//! The server runs with `SEED 1`: its cookies and magic numbers are the
//! values pinned below (the trace's frames echo them; the generator is
//! pinned by PPPoEServer's own unit test).

mod common;

use common::{pcap_frames, root, run_example, scratch, tcpdump};

const SERVER: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0xfe];
const ALICE: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const BOB: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const MALLORY: [u8; 6] = [0x02, 0, 0, 0, 0, 0x03];

const PADO: u8 = 0x07;
const PADS: u8 = 0x65;
const PADT: u8 = 0xa7;
const LCP: u16 = 0xc021;
const PAP: u16 = 0xc023;
const IPCP: u16 = 0x8021;
const IPV6CP: u16 = 0x8057;
const SERVICE_NAME: u16 = 0x0101;
const AC_NAME: u16 = 0x0102;
const HOST_UNIQ: u16 = 0x0103;
const AC_COOKIE: u16 = 0x0104;
const GENERIC_ERROR: u16 = 0x0203;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A discovery frame from the server to `dst`.
fn discovery(dst: [u8; 6], code: u8, sid: u16, tags: &[(u16, &[u8])]) -> Vec<u8> {
    let mut body = Vec::new();
    for (t, v) in tags {
        body.extend_from_slice(&t.to_be_bytes());
        body.extend_from_slice(&(v.len() as u16).to_be_bytes());
        body.extend_from_slice(v);
    }
    let mut f = dst.to_vec();
    f.extend_from_slice(&SERVER);
    f.extend_from_slice(&[0x88, 0x63, 0x11, code]);
    f.extend_from_slice(&sid.to_be_bytes());
    f.extend_from_slice(&(body.len() as u16).to_be_bytes());
    f.extend_from_slice(&body);
    f
}

/// A session frame from the server to `dst`: PPP protocol and payload.
fn session(dst: [u8; 6], sid: u16, protocol: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = dst.to_vec();
    f.extend_from_slice(&SERVER);
    f.extend_from_slice(&[0x88, 0x64, 0x11, 0]);
    f.extend_from_slice(&sid.to_be_bytes());
    f.extend_from_slice(&(payload.len() as u16 + 2).to_be_bytes());
    f.extend_from_slice(&protocol.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// A PPP control packet (code, identifier, data) from the server.
fn control(dst: [u8; 6], sid: u16, protocol: u16, code: u8, id: u8, data: &[u8]) -> Vec<u8> {
    let mut p = vec![code, id];
    p.extend_from_slice(&(data.len() as u16 + 4).to_be_bytes());
    p.extend_from_slice(data);
    session(dst, sid, protocol, &p)
}

/// LCP options the server asks for: MRU 1492, PAP, its magic number.
fn our_lcp(magic: &str) -> Vec<u8> {
    let mut o = hex("010405d40304c023");
    o.extend_from_slice(&[5, 6]);
    o.extend_from_slice(&hex(magic));
    o
}

/// The subscriber's IPCP/IPv6CP address options.
fn ip_option(a: [u8; 4]) -> Vec<u8> {
    let mut o = vec![3, 6];
    o.extend_from_slice(&a);
    o
}

fn iid_option(sid: u8) -> Vec<u8> {
    vec![1, 10, 0x02, 0x50, 0x52, 0x4f, 0, 0, 0, sid]
}

/// The server's PADO (AC-Name, its cookie, the Host-Uniq echoed), PADS
/// (session `sid`), LCP Configure-Request (its magic number) and the Ack of
/// the subscriber's LCP options.
fn discovery_and_lcp(
    dst: [u8; 6],
    sid: u16,
    cookie: &str,
    host_uniq: Option<&[u8]>,
    magic: &str,
    peer_options: &str,
) -> Vec<(&'static str, Vec<u8>)> {
    let cookie = hex(cookie);
    let mut offer: Vec<(u16, &[u8])> = vec![
        (SERVICE_NAME, b"internet"),
        (AC_NAME, b"pronto-bras"),
        (AC_COOKIE, &cookie),
    ];
    let mut confirm: Vec<(u16, &[u8])> = vec![(SERVICE_NAME, b"internet")];
    if let Some(h) = host_uniq {
        offer.push((HOST_UNIQ, h));
        confirm.push((HOST_UNIQ, h));
    }
    vec![
        ("PADO", discovery(dst, PADO, 0, &offer)),
        ("PADS", discovery(dst, PADS, sid, &confirm)),
        (
            "LCP Configure-Request",
            control(dst, sid, LCP, 1, 1, &our_lcp(magic)),
        ),
        (
            "LCP Configure-Ack of the subscriber's options",
            control(dst, sid, LCP, 2, 1, &hex(peer_options)),
        ),
    ]
}

/// PAP accepted: the Ack, then the server's IPCP (its LOCAL address) and
/// IPv6CP (its interface identifier) Configure-Requests.
fn authenticated(dst: [u8; 6], sid: u16) -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "PAP Authenticate-Ack",
            control(dst, sid, PAP, 2, 1, b"\x08Login ok"),
        ),
        (
            "IPCP Configure-Request",
            control(dst, sid, IPCP, 1, 2, &ip_option([10, 64, 0, 1])),
        ),
        (
            "IPv6CP Configure-Request",
            control(dst, sid, IPV6CP, 1, 3, &iid_option(0)),
        ),
    ]
}

/// The trace's frames (subscribers' and the network's), by index.
fn trace() -> Vec<Vec<u8>> {
    pcap_frames(&root().join("examples/bras.pcap"))
}

/// The IP packet inside trace frame `f` (PPPoE session or Ethernet),
/// without the Ethernet padding.
fn ip_in(f: &[u8]) -> Vec<u8> {
    let at = if f[12..14] == [0x88, 0x64] { 22 } else { 14 };
    let len = if f[at] >> 4 == 6 {
        40 + u16::from_be_bytes([f[at + 4], f[at + 5]]) as usize
    } else {
        u16::from_be_bytes([f[at + 2], f[at + 3]]) as usize
    };
    f[at..at + len].to_vec()
}

#[test]
fn bras_example_answers_its_trace_byte_for_byte_and_accounts_exactly() {
    let dir = scratch("bras-trace");
    let (out, net, acct) = (
        dir.join("to-subscribers.pcap"),
        dir.join("to-network.pcap"),
        dir.join("acct.log"),
    );
    let stdout = run_example(
        "bras-trace",
        &["--simtime=1795737600"],
        &[("OUT", &out), ("NET", &net), ("ACCT", &acct)],
    )
    .stdout;
    assert_eq!(
        stdout,
        "read          37 frames: 34 from subscribers, 3 from the network, 0 other\n\
         to subscribers 29 frames\n\
         to the network 3 IPv4, 1 IPv6\n\
         sessions:\n\
         2 02:00:00:00:00:02 bob 10.64.0.9 up in=1/76 out=1/76 rate=-\n\
         after kill bob: 0 sessions, 30 frames to subscribers\n\
         counters:\n\
         sessions 0\npadi 3\npado 3\npadr 3\npads 3\npadt_in 1\npadt_out 2\n\
         control_in 20\ncontrol_out 20\nsessions_opened 3\nsessions_closed 3\n\
         auth_ok 2\nauth_failed 1\necho_timeouts 0\nidle_timeouts 0\nsetup_timeouts 0\n\
         lcp_max_configure 0\nncp_max_configure 0\nncp_rejected 1\n\
         decapsulated 4\nencapsulated 2\naccounting_failed 0\nalloc_failed 0\n\
         malformed 1\npadi_rate 0\ntable_full 0\nbad_cookie 0\nservice_mismatch 0\n\
         tag_too_long 0\nunknown_session 1\nwrong_mac 0\nnot_open 0\nspoofed_source 1\n\
         no_session 1\nnot_ip 0\ntoo_big 0\nrate_in 0\nrate_out 0\nunknown_protocol 0\n\
         ignored 0\n"
    );

    let input = trace();
    // The network's ping reply (trace frame 12) and bob's (30), as the
    // server encapsulates them: session header and PPP protocol 0x0021.
    let reply_alice = session(ALICE, 1, 0x0021, &ip_in(&input[12]));
    let reply_bob = session(BOB, 2, 0x0021, &ip_in(&input[30]));
    let mut want: Vec<(&str, Vec<u8>)> = Vec::new();
    // alice: discovery (the Host-Uniq echoed, the seeded cookie), LCP (the
    // server's magic; her MRU and magic acknowledged), PAP, both NCPs.
    want.extend(discovery_and_lcp(
        ALICE,
        1,
        "9edbbd1e242716ca",
        Some(b"alice-01"),
        "d65af21e",
        "010405d40506a11ce001",
    ));
    want.extend(authenticated(ALICE, 1));
    want.extend([
        (
            "IPCP Configure-Nak: 10.64.0.2",
            control(ALICE, 1, IPCP, 3, 1, &ip_option([10, 64, 0, 2])),
        ),
        (
            "IPv6CP Configure-Nak: the identifier",
            control(ALICE, 1, IPV6CP, 3, 1, &iid_option(1)),
        ),
        (
            "IPCP Configure-Ack",
            control(ALICE, 1, IPCP, 2, 2, &ip_option([10, 64, 0, 2])),
        ),
        (
            "IPv6CP Configure-Ack",
            control(ALICE, 1, IPV6CP, 2, 2, &iid_option(1)),
        ),
        ("the ping reply, encapsulated", reply_alice),
        (
            "LCP Echo-Reply (our magic, alice's data)",
            control(ALICE, 1, LCP, 10, 7, &hex("d65af21e6b656570616c697665")),
        ),
    ]);
    // bob: the same steps; IPv4 only (his Protocol-Reject of IPv6CP stops
    // it; no retransmission follows).
    want.extend(discovery_and_lcp(
        BOB,
        2,
        "8e8d94155916618b",
        Some(b"bob-0002"),
        "328bd285",
        "010405d405060b0b0b0b",
    ));
    want.extend(authenticated(BOB, 2));
    want.extend([
        (
            "IPCP Configure-Nak: his static 10.64.0.9",
            control(BOB, 2, IPCP, 3, 1, &ip_option([10, 64, 0, 9])),
        ),
        (
            "IPCP Configure-Ack",
            control(BOB, 2, IPCP, 2, 2, &ip_option([10, 64, 0, 9])),
        ),
        ("the ping reply, encapsulated", reply_bob),
    ]);
    // mallory (no Host-Uniq asked, none sent): the wrong password ends
    // the session.
    want.extend(discovery_and_lcp(
        MALLORY,
        3,
        "44096861da09aeaf",
        None,
        "627011b3",
        "050603a11011",
    ));
    want.extend([
        (
            "PAP Authenticate-Nak",
            control(MALLORY, 3, PAP, 3, 1, b"\x0fLogin incorrect"),
        ),
        (
            "PADT auth-failed",
            discovery(MALLORY, PADT, 3, &[(GENERIC_ERROR, b"auth-failed")]),
        ),
        // The operator's `write bras.kill bob` after the trace.
        (
            "PADT admin-kill",
            discovery(BOB, PADT, 2, &[(GENERIC_ERROR, b"admin-kill")]),
        ),
    ]);
    let got = pcap_frames(&out);
    for (k, ((what, w), g)) in want.iter().zip(&got).enumerate() {
        assert_eq!(
            g, w,
            "frame {k} to subscribers ({what}):\n got {g:02x?}\nwant {w:02x?}"
        );
    }
    assert_eq!(got.len(), want.len());

    // Toward the network: alice's ping, DNS query and Router Solicitation
    // (trace frames 11, 13, 14) and bob's ping (29), as they were sent in
    // the sessions. Refused and not here: the spoofed source (16), the
    // unknown session (17), the truncated frame (18).
    let got = pcap_frames(&net);
    let want: Vec<Vec<u8>> = [11, 13, 14, 29].iter().map(|&i| ip_in(&input[i])).collect();
    assert_eq!(got, want);

    // Accounting: a start when IPCP opened, a stop at alice's PADT (user
    // request) and at the kill (admin), with the exact counts: alice sent
    // 76 + 60 + 48 bytes (ping, DNS, RS) and got the 76-byte reply.
    assert_eq!(
        std::fs::read_to_string(&acct).expect("accounting file"),
        "1795737600.090000000 start session=1 user=alice mac=02:00:00:00:00:01 ip=10.64.0.2 in_packets=0 in_bytes=0 out_packets=0 out_bytes=0 duration=0 cause=-\n\
         1795737600.280000000 start session=2 user=bob mac=02:00:00:00:00:02 ip=10.64.0.9 in_packets=0 in_bytes=0 out_packets=0 out_bytes=0 duration=0 cause=-\n\
         1795737600.360000000 stop session=1 user=alice mac=02:00:00:00:00:01 ip=10.64.0.2 in_packets=3 in_bytes=184 out_packets=1 out_bytes=76 duration=0 cause=user-request\n\
         1795737600.360000000 stop session=2 user=bob mac=02:00:00:00:00:02 ip=10.64.0.9 in_packets=1 in_bytes=76 out_packets=1 out_bytes=76 duration=0 cause=admin-kill\n"
    );

    if let Some(text) = tcpdump(&out) {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 30);
        assert!(
            lines[0].contains("PPPoE PADO [Service-Name \"internet\"] [AC-Name \"pronto-bras\"]"),
            "{}",
            lines[0]
        );
        assert!(
            lines[11].contains("10.202.2.1 > 10.64.0.2: ICMP echo reply"),
            "{}",
            lines[11]
        );
        assert!(
            lines[29].contains("PADT [ses 0x2] [Generic-Error \"admin-kill\"]"),
            "{}",
            lines[29]
        );
    }
    if let Some(text) = tcpdump(&net) {
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(
            lines[2].contains("fe80::250:524f:0:1 > ff02::2: ICMP6, router solicitation"),
            "{}",
            lines[2]
        );
    }
}
