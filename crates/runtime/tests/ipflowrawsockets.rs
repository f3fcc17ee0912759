//! `IPFlowRawSockets` in a router, against a real UDP peer on loopback:
//! `FromIPSummaryDump -> AggregateIPFlows -> IPFlowRawSockets(NOTIFIER af)`
//! sends the datagrams of two flows; the peer receives exactly their
//! payloads, from each flow's source port; the peer's replies come out of
//! the element with their flow's aggregate annotation, written by
//! `ToIPSummaryDump` with an `aggregate` field.
//!
//! Needs CAP_NET_RAW (root); without it the test says so and passes.

use std::net::UdpSocket;
use std::path::Path;
use std::time::Duration;

fn build(text: &str, dir: &Path) -> Result<pronto_runtime::Router, String> {
    let mut sm = pronto_lang::SourceMap::new();
    let file = sm.add("flows.click", text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let render = |sm: &pronto_lang::SourceMap, e: &[pronto_lang::Diagnostic]| {
        e.iter()
            .map(|d| d.render(sm))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let flat = match pronto_lang::parse_flat(&sm, file, &opts) {
        Ok((flat, _)) => flat,
        Err(e) => return Err(render(&sm, &e)),
    };
    let ropts = pronto_runtime::RouterOptions {
        base_dir: dir.to_path_buf(),
        ..Default::default()
    };
    pronto_runtime::Router::build(&flat, &sm, &ropts).map_err(|e| render(&sm, &e))
}

/// A UDP socket on a free loopback port (held: the host's stack then
/// neither gives the port away nor answers the replies to it with port
/// unreachables, which Click's documentation has a firewall rule do).
fn port_holder() -> (UdpSocket, u16) {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    let port = s.local_addr().expect("addr").port();
    (s, port)
}

#[test]
fn two_flows_reach_a_peer_and_its_replies_come_back_with_their_aggregates() {
    let dir = std::env::temp_dir().join(format!("pronto-ipflowraw-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let (peer, pp) = port_holder();
    let (_ha, a) = port_holder();
    let (_hb, b) = port_holder();
    std::fs::write(
        dir.join("in.txt"),
        format!(
            "!data src sport dst dport proto payload\n\
             127.0.0.1 {a} 127.0.0.1 {pp} U \"flow a, 1\"\n\
             127.0.0.1 {b} 127.0.0.1 {pp} U \"flow b, 1\"\n\
             127.0.0.1 {a} 127.0.0.1 {pp} U \"flow a, 2\"\n\
             127.0.0.1 {b} 127.0.0.1 {pp} U \"flow b, 2!\"\n"
        ),
    )
    .expect("write the summary dump");
    // The peer: takes the four datagrams, then answers each, in order.
    let echo = std::thread::spawn(move || {
        peer.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while got.len() < 4 {
            let Ok((n, from)) = peer.recv_from(&mut buf) else {
                break;
            };
            got.push((buf[..n].to_vec(), from));
        }
        for (d, from) in &got {
            let mut r = b"re: ".to_vec();
            r.extend_from_slice(d);
            peer.send_to(&r, from).expect("reply");
        }
        got.into_iter()
            .map(|(d, from)| (String::from_utf8_lossy(&d).into_owned(), from.port()))
            .collect::<Vec<_>>()
    });
    let config = "FromIPSummaryDump(in.txt, CHECKSUM true, STOP false)\n\
                  -> af :: AggregateIPFlows\n\
                  -> s :: IPFlowRawSockets(NOTIFIER af)\n\
                  -> Counter(COUNT_CALL 4 stop)\n\
                  -> ToIPSummaryDump(out.txt, CONTENTS aggregate src sport dst dport payload);\n\
                  Script(wait 20, stop);";
    let mut router = match build(config, &dir) {
        Ok(r) => r,
        Err(e) if e.contains("Operation not permitted") => {
            eprintln!("SKIPPED: raw sockets need CAP_NET_RAW ({e})");
            return;
        }
        Err(e) => panic!("configuration refused:\n{e}"),
    };
    router.run().expect("run");
    let peer_got = echo.join().expect("peer");
    assert_eq!(
        peer_got,
        vec![
            ("flow a, 1".to_string(), a),
            ("flow b, 1".to_string(), b),
            ("flow a, 2".to_string(), a),
            ("flow b, 2!".to_string(), b),
        ]
    );
    let mut h = |name: &str| {
        router
            .read_handler(&format!("s.{name}"), "")
            .expect("handler")
            .trim()
            .to_string()
    };
    for (name, want) in [
        ("sent", "4"),
        ("opened", "2"),
        ("received", "4"),
        ("drops", "0"),
        ("flows", "0"),
    ] {
        assert_eq!(h(name), want, "s.{name}");
    }
    router.check_conservation().expect("conservation");
    let out = std::fs::read_to_string(dir.join("out.txt")).expect("the dump");
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('!')).collect();
    // One flow's replies keep their order; the two flows' may interleave.
    let of = |agg: &str| -> Vec<&str> {
        lines
            .iter()
            .copied()
            .filter(|l| l.split(' ').next() == Some(agg))
            .collect()
    };
    assert_eq!(lines.len(), 4, "{out}");
    assert_eq!(
        of("1"),
        vec![
            format!("1 127.0.0.1 {pp} 127.0.0.1 {a} \"re: flow a, 1\""),
            format!("1 127.0.0.1 {pp} 127.0.0.1 {a} \"re: flow a, 2\""),
        ]
    );
    assert_eq!(
        of("2"),
        vec![
            format!("2 127.0.0.1 {pp} 127.0.0.1 {b} \"re: flow b, 1\""),
            format!("2 127.0.0.1 {pp} 127.0.0.1 {b} \"re: flow b, 2!\""),
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
