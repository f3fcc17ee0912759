//! Robustness: no input may make compilation or classification panic.

use pronto_classify::Program;
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "tcp",
    "udp",
    "icmp",
    "src",
    "dst",
    "host",
    "net",
    "port",
    "ip",
    "proto",
    "ttl",
    "len",
    "frag",
    "unfrag",
    "opt",
    "syn",
    "ack",
    "type",
    "echo",
    "www",
    "and",
    "or",
    "not",
    "!",
    "(",
    ")",
    "?",
    ":",
    "[",
    "]",
    "&",
    "=",
    "!=",
    "<",
    ">",
    "<=",
    ">=",
    "1.2.3.4",
    "10.0.0.0/8",
    "mask",
    "255.0.0.0",
    "80",
    "0x10",
    "9",
    "0:2",
    "transp",
    "true",
    "false",
    "-",
    "all",
    "1000-2000",
    "win",
    "tos",
    "dscp",
    "ect",
    "ce",
    "vers",
    "hl",
    "id",
    "&&",
    "||",
];

fn phrase() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 0..12).prop_map(|w| w.join(" "))
}

fn rules() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(
        prop_oneof![
            phrase().prop_map(|p| format!("allow {p}")),
            phrase().prop_map(|p| format!("1 {p}")),
            phrase().prop_map(|p| format!("deny {p}")),
            ".{0,40}",
        ],
        0..6,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn compile_never_panics(rs in rules(), raw in ".{0,60}", cls in prop::collection::vec("[0-9!/%?a-fA-F -]{0,24}", 0..4)) {
        let args: Vec<&str> = rs.iter().map(String::as_str).collect();
        let pkt = [0x45u8, 0, 0, 40, 0, 0, 0, 0, 64, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 0, 80, 1, 187];
        if let Ok(p) = Program::ip_filter(&args) {
            let _ = p.classify(&pkt, 0);
        }
        if let Ok(p) = Program::ip_classifier(&args) {
            let _ = p.classify(&pkt, 0);
        }
        let _ = Program::ip_filter(&[raw.as_str()]);
        let _ = Program::ip_classifier(&[raw.as_str()]);
        let cargs: Vec<&str> = cls.iter().map(String::as_str).collect();
        if let Ok(p) = Program::classifier(&cargs) {
            let _ = p.classify(&pkt, 0);
        }
    }

    #[test]
    fn classify_never_panics(data in prop::collection::vec(any::<u8>(), 0..100), nh in 0usize..120) {
        let fw = Program::ip_filter(&[
            "deny src net 0.0.0.0/8 or src net 127.0.0.0/8",
            "1 ip frag",
            "allow tcp dst port 80 and dst net 93.184.0.0/16",
            "allow tcp dst port 443",
            "allow icmp type echo or tcp opt syn or transp[60:4] = 1 or ip[40:4] > 5",
            "deny all",
        ]).expect("compiles");
        let r = fw.classify(&data, nh);
        prop_assert!(r.is_none() || r.is_some_and(|x| x < fw.noutputs()));
        let c = Program::classifier(&["12/0800 !23/06", "0/ffffffff%f0f0f0f0", "98/0102", "-"]).expect("compiles");
        prop_assert!(c.classify(&data, nh).is_some());
    }
}
