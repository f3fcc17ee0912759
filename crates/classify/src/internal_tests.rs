//! Differential tests: the optimised decision diagram, the direct
//! translation and a reference interpreter of the expression IR must agree.

use proptest::prelude::*;

use crate::dd::{self, Compiled, TERM};
use crate::expr::{Expr, Test};
use crate::{clsparse, ipparse, Program};

fn avail(t: &Test, s: &[u8]) -> Option<u32> {
    let off = t.off as usize;
    let need = t.need() as usize;
    if off + need > s.len() {
        return None;
    }
    let mut b = [0u8; 4];
    for (i, x) in b.iter_mut().enumerate() {
        *x = *s.get(off + i).unwrap_or(&0);
    }
    Some(u32::from_be_bytes(b))
}

fn eval(e: &Expr, sp: &[&[u8]; 2]) -> bool {
    match e {
        Expr::Const(b) => *b,
        Expr::Leaf { test, short } => match avail(test, sp[test.space as usize]) {
            Some(w) => {
                let w = w & test.mask;
                if test.gt {
                    w > test.value
                } else {
                    w == test.value
                }
            }
            None => *short,
        },
        Expr::Not(x) => !eval(x, sp),
        Expr::And(v) => v.iter().all(|x| eval(x, sp)),
        Expr::Or(v) => v.iter().any(|x| eval(x, sp)),
        Expr::Ternary(c, a, b) => {
            if eval(c, sp) {
                eval(a, sp)
            } else {
                eval(b, sp)
            }
        }
    }
}

fn interp(rules: &[(Expr, Option<usize>)], sp: &[&[u8]; 2]) -> Option<usize> {
    for (e, o) in rules {
        if eval(e, sp) {
            return *o;
        }
    }
    None
}

fn run(c: &Compiled, ip: bool, data: &[u8], nh: usize) -> Option<usize> {
    let c = Compiled {
        nodes: c.nodes.clone(),
        cases: c.cases.clone(),
        root: c.root,
    };
    let p = Program::from_compiled(c, 0, ip);
    let one = p.classify(data, nh);
    // The batch path agrees, wherever the packet sits in a batch.
    let mut out = [Some(usize::MAX); 11];
    let pkts = [(data, nh); 11];
    assert_eq!(p.classify_batch(&pkts, &mut out), 11);
    assert!(out.iter().all(|&o| o == one), "batch {out:?} vs {one:?}");
    one
}

fn spaces(data: &[u8], nh: usize) -> [&[u8]; 2] {
    let net = data.get(nh..).unwrap_or(&[]);
    let tr = match net.first() {
        Some(&b) => net.get(usize::from(b & 15) * 4..).unwrap_or(&[]),
        None => &[],
    };
    [net, tr]
}

fn filter_rules(args: &[&str]) -> Vec<(Expr, Option<usize>)> {
    args.iter()
        .map(|a| {
            let w = ipparse::separate_text(a);
            ipparse::parse_filter_arg(&w, false).expect("parse")
        })
        .map(|(s, e, _)| (e, s))
        .collect()
}

pub(crate) const FIREWALL: &[&str] = &[
    "deny src net 0.0.0.0/8 or src net 127.0.0.0/8",
    "1 ip frag",
    "allow tcp dst port 80 and dst net 93.184.0.0/16",
    "allow tcp dst port 443",
    "deny tcp dst port 22 and not src net 10.0.0.0/23",
    "allow tcp dst port 22",
    "allow udp dst port 53 and dst net 8.8.0.0/16",
    "allow udp dst port 123",
    "allow icmp type echo or icmp type echo-reply",
    "deny udp dst port 161",
    "allow src net 192.168.1.0/24 and tcp",
    "deny all",
];

const EXTRA: &[&str] = &[
    "0 tcp dst port www or tcp dst port 443",
    "1 udp and (src port domain or dst port domain)",
    "2 icmp type echo",
    "3 tcp opt syn and not tcp opt ack",
    "4 ip proto 47 or ip proto 89",
    "5 src port != 80 and ip ttl <= 64",
    "6 ip[0:2] & 0x0f00 > 0x0300 ? tcp win > 1000 : ip len < 100",
    "7 not transp[2:2] >= 1024",
    "8 dst port 1000-2000",
    "9 src or dst host 10.0.0.1 and ip tos != 0",
];

/// Packets that exercise the interesting fields: random bytes with a
/// plausible IPv4 header prefix, random truncation.
fn packet() -> impl Strategy<Value = (Vec<u8>, usize)> {
    (
        prop::collection::vec(any::<u8>(), 0..80),
        0usize..4,
        prop::sample::select(vec![1u8, 6, 17, 47, 89, 2]),
        prop::sample::select(vec![0x45u8, 0x46, 0x44, 0x4f, 0x50]),
        prop::sample::select(vec![0u8, 10, 127, 192, 93, 8]),
        prop::sample::select(vec![0u16, 22, 53, 80, 123, 161, 443, 1500, 0xffff]),
        0usize..80,
        any::<bool>(),
    )
        .prop_map(|(mut v, nh, proto, vhl, a0, port, cut, unfrag)| {
            v.resize(80, 0);
            v[nh] = vhl;
            v[nh + 9] = proto;
            v[nh + 12] = a0;
            if unfrag {
                v[nh + 6] &= 0xC0;
                v[nh + 7] = 0;
            }
            let th = nh + usize::from(vhl & 15) * 4;
            if th + 4 <= v.len() {
                v[th + 2..th + 4].copy_from_slice(&port.to_be_bytes());
            }
            v.truncate(cut.max(nh));
            (v, nh)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn firewall_dd_matches_interpreter((data, nh) in packet()) {
        for set in [FIREWALL, EXTRA] {
            let rules = filter_rules(set);
            let sp = spaces(&data, nh);
            let want = interp(&rules, &sp);
            prop_assert_eq!(run(&dd::compile(&rules), true, &data, nh), want);
            prop_assert_eq!(run(&dd::compile_linear(&rules), true, &data, nh), want);
            // As IPFilter classifies them (the one-word index).
            let p = Program::ip_filter(set).expect("compiles");
            prop_assert_eq!(p.classify(&data, nh), want);
        }
    }

    #[test]
    fn classifier_dd_matches_interpreter(data in prop::collection::vec(any::<u8>(), 0..40), pats in prop::collection::vec("(!?[0-9]{1,2}/[0-9a-f?]{2,6}( |))+|-", 1..6)) {
        let mut rules = Vec::new();
        for (i, p) in pats.iter().enumerate() {
            if let Ok(e) = clsparse::parse_pattern(p) {
                rules.push((e, Some(i)));
            }
        }
        let sp = [&data[..], &[][..]];
        let want = interp(&rules, &sp);
        prop_assert_eq!(run(&dd::compile(&rules), false, &data, 0), want);
        prop_assert_eq!(run(&dd::compile_linear(&rules), false, &data, 0), want);
    }
}

#[test]
fn firewall_program_is_small() {
    let p = Program::ip_filter(FIREWALL).expect("firewall");
    assert!(p.len() < 200, "{} nodes", p.len());
    assert_eq!(p.noutputs(), 2);
}

#[test]
fn firewall_path_lengths() {
    let p = Program::ip_filter(FIREWALL).expect("fw");
    let mk = |proto: u8, src: [u8; 4], dst: [u8; 4], dport: u16| {
        let mut v = vec![0u8; 50];
        v[0] = 0x45;
        v[9] = proto;
        v[12..16].copy_from_slice(&src);
        v[16..20].copy_from_slice(&dst);
        v[22..24].copy_from_slice(&dport.to_be_bytes());
        v
    };
    let pk = [
        mk(6, [1, 2, 3, 4], [93, 184, 1, 1], 80),
        mk(6, [1, 2, 3, 4], [5, 5, 5, 5], 443),
        mk(17, [1, 2, 3, 4], [5, 5, 5, 5], 161),
        mk(1, [1, 2, 3, 4], [5, 5, 5, 5], 0),
        mk(6, [192, 168, 1, 1], [5, 5, 5, 5], 5555),
    ];
    for d in &pk {
        let sp = spaces(d, 0);
        let mut i = p.root;
        let mut steps = 0;
        while i & TERM == 0 {
            let n = &p.nodes[i as usize];
            let s = sp[n.space as usize];
            let o = n.off as usize;
            let w = u32::from_be_bytes([s[o], s[o + 1], s[o + 2], s[o + 3]]) & n.mask;
            println!(
                "  test k{} sp{} off{} mask{:08x} val{:08x}",
                n.kind, n.space, n.off, n.mask, n.value
            );
            i = crate::step(&p.cases, n, w | (w & !n.mask));
            steps += 1;
        }
        // Same-field tests are merged into switches and implied tests are
        // pruned, so no firewall packet needs more than 5 node visits.
        assert!(steps <= 5, "{steps} steps");
    }
}

/// `classify_batch` agrees with `classify` packet by packet on mixed
/// batches (short and long packets, various lengths of batch).
fn check_batch(p: &Program, pkts: &[(Vec<u8>, usize)]) -> Result<(), TestCaseError> {
    let refs: Vec<(&[u8], usize)> = pkts.iter().map(|(d, nh)| (&d[..], *nh)).collect();
    let mut out = vec![Some(usize::MAX); refs.len() + 3];
    prop_assert_eq!(p.classify_batch(&refs, &mut out), refs.len());
    for (i, &(d, nh)) in refs.iter().enumerate() {
        prop_assert_eq!(out[i], p.classify(d, nh), "packet {}", i);
    }
    prop_assert!(out[refs.len()..].iter().all(|&o| o == Some(usize::MAX)));
    // A shorter output slice bounds the count.
    let k = refs.len() / 2;
    prop_assert_eq!(p.classify_batch(&refs, &mut out[..k]), k);
    for (i, &(d, nh)) in refs.iter().take(k).enumerate() {
        prop_assert_eq!(out[i], p.classify(d, nh), "packet {}", i);
    }
    // The same verdicts in four bytes a packet.
    let mut ports = vec![crate::Port::from(Some(7)); refs.len() + 1];
    prop_assert_eq!(
        p.classify_iter(refs.iter().copied(), &mut ports),
        refs.len()
    );
    for (i, &(d, nh)) in refs.iter().enumerate() {
        prop_assert_eq!(ports[i].get(), p.classify(d, nh), "packet {}", i);
    }
    prop_assert_eq!(ports[refs.len()].get(), Some(7));
    Ok(())
}

/// A four-byte verdict: an output as itself, a drop as `Port::DROP`,
/// from a program's terminals and from `Option<usize>` alike.
#[test]
fn port_verdicts() {
    use crate::{Port, Verdict};
    assert_eq!(Port::terminal(dd::DROP), Port::DROP);
    assert_eq!(Port::terminal(dd::DROP).get(), None);
    assert_eq!(Port::terminal(TERM | 3).get(), Some(3));
    assert_eq!(Port::terminal(TERM).get(), Some(0));
    assert_eq!(Port::from(Some(5)).get(), Some(5));
    assert_eq!(Port::from(None), Port::DROP);
    assert_eq!(<Option<usize>>::terminal(TERM | 3), Some(3));
    assert_eq!(<Option<usize>>::terminal(dd::DROP), None);
}

/// Mostly full-size packets, some truncated.
fn batch_packet() -> impl Strategy<Value = (Vec<u8>, usize)> {
    (packet(), prop::collection::vec(any::<u8>(), 80), 0u8..8).prop_map(
        |((mut v, nh), tail, keep)| {
            if keep != 0 {
                let n = v.len();
                v.extend_from_slice(&tail[n.min(80)..]);
            }
            (v, nh)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn batch_matches_classify(pkts in prop::collection::vec(batch_packet(), 0..40)) {
        for set in [FIREWALL, EXTRA] {
            let p = Program::ip_filter(set).expect("compiles");
            check_batch(&p, &pkts)?;
            let rules = filter_rules(set);
            for c in [dd::compile(&rules), dd::compile_linear(&rules)] {
                check_batch(&Program::from_compiled(c, 0, true), &pkts)?;
            }
        }
        let ipc: Vec<&str> = EXTRA.iter().map(|s| &s[2..]).collect();
        check_batch(&Program::ip_classifier(&ipc).expect("compiles"), &pkts)?;
    }

    #[test]
    fn classifier_batch_matches_classify(
        pkts in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..48), 0..40),
        pats in prop::collection::vec("(!?[0-9]{1,2}/[0-9a-f?]{2,6}( |))+|-", 1..6),
    ) {
        let mut rules = Vec::new();
        for (i, p) in pats.iter().enumerate() {
            if let Ok(e) = clsparse::parse_pattern(p) {
                rules.push((e, Some(i)));
            }
        }
        let pk: Vec<(Vec<u8>, usize)> = pkts.into_iter().map(|v| (v, 0)).collect();
        for c in [dd::compile(&rules), dd::compile_linear(&rules)] {
            check_batch(&Program::from_compiled(c, 0, false), &pk)?;
        }
    }
}

#[test]
fn batch_plan_in_use() {
    for set in [FIREWALL, EXTRA] {
        let p = Program::ip_filter(set).expect("compiles");
        assert!(p.plan.is_some());
    }
    // Switches with many cases get collision-free tables.
    let many: Vec<String> = (0..60)
        .map(|i| format!("{} tcp dst port {}", i % 3, 1000 + 37 * i))
        .collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let p = Program::ip_filter_with(&refs, crate::Engine::Decision).expect("compiles");
    assert!(p.plan.is_some());
    let mut v = vec![0u8; 60];
    v[0] = 0x45;
    v[9] = 6;
    for i in 0..70u16 {
        v[22..24].copy_from_slice(&(1000 + 37 * i).to_be_bytes());
        let mut out = [None; 1];
        p.classify_batch(&[(&v[..], 0)], &mut out);
        let want = (i < 60).then_some(usize::from(i % 3));
        assert_eq!(out[0], want);
        assert_eq!(p.classify(&v, 0), want);
    }
}

include!("../benches/rules/c_firewall.rs");

/// Short exact lists classify with the one-word index and keep their
/// decision program for the `program` text; lists with a test the index
/// cannot describe (TCP flags), dual-stack lists and tiny programs do not.
#[test]
fn one_word_index_for_short_exact_lists() {
    let c_firewall = C_FIREWALL;
    for set in [FIREWALL, c_firewall] {
        let p = Program::ip_filter(set).expect("compiles");
        assert!(p.small.is_some(), "{set:?}");
        assert!(!p.is_indexed());
        // Classified a batch at a time (the one-word loop inlined).
        assert!(p.prefers_batch());
        assert!(p.program_text().contains("yes->"));
        let d = Program::ip_filter_with(set, crate::Engine::Decision).expect("compiles");
        assert!(d.small.is_none());
        assert_eq!(p.program_text(), d.program_text());
    }
    // Its tables stay within the one-word form's budget.
    let p = Program::ip_filter(c_firewall).expect("compiles");
    let ix = p.small.as_ref().expect("one-word index");
    let bytes = ix.heap_bytes();
    assert!(bytes < 256 * 1024, "{bytes} bytes");
    // Most of them are each field's commonest segment, stored as zeros in
    // pages never written: they take no memory.
    let (written, pages) = ix.small_written_pages().expect("one-word index");
    eprintln!("c_firewall: {written} of {pages} pages written");
    assert!(written * 4 <= pages, "{written} of {pages} pages written");
    // A copy is as sparse, and classifies the same.
    let q = p.clone();
    let copy = q.small.as_ref().expect("one-word index");
    assert_eq!(copy.small_written_pages(), Some((written, pages)));
    // Four fields of 64 Ki buckets each (addresses and ports) and the
    // fragment bits are past it: the decision program.
    let wide = Program::ip_filter(&[
        "allow src net 10.0.0.0/24 and dst net 20.0.0.0/24 and tcp src port 1000 and dst port 22",
        "deny all",
    ])
    .expect("compiles");
    assert!(wide.small.is_none());
    let flags = Program::ip_filter(&["allow tcp opt syn and dst port 80", "allow udp", "deny all"])
        .expect("compiles");
    assert!(flags.small.is_none());
    let dual = Program::ip_filter(&[
        "allow src net 2001:db8::/32 and tcp dst port 22",
        "allow udp dst port 53",
        "deny all",
    ])
    .expect("compiles");
    assert!(dual.small.is_none());
    let tiny = Program::ip_filter(&["allow tcp", "deny all"]).expect("compiles");
    assert!(tiny.small.is_none());
    // The c_firewall list: a packet per rule, and one matching none of
    // the first ten.
    let p = Program::ip_filter(c_firewall).expect("compiles");
    let mk = |proto: u8, src: [u8; 4], dst: [u8; 4], dport: u16, frag: u16| {
        let mut v = vec![0u8; 40];
        v[0] = 0x45;
        v[6..8].copy_from_slice(&frag.to_be_bytes());
        v[9] = proto;
        v[12..16].copy_from_slice(&src);
        v[16..20].copy_from_slice(&dst);
        v[22..24].copy_from_slice(&dport.to_be_bytes());
        v
    };
    let cases = [
        (mk(6, [10, 0, 9, 9], [5, 5, 5, 5], 22, 0), Some(0)),
        (mk(6, [10, 1, 9, 9], [5, 5, 5, 5], 22, 0), None),
        (mk(6, [10, 1, 9, 9], [5, 5, 5, 5], 8080, 0), Some(0)),
        (mk(17, [10, 1, 9, 9], [8, 5, 5, 5], 53, 0), Some(0)),
        (mk(17, [10, 1, 9, 9], [9, 5, 5, 5], 53, 0), None),
        (mk(17, [10, 1, 9, 9], [9, 5, 5, 5], 123, 0), Some(0)),
        (mk(6, [10, 1, 9, 9], [2, 5, 5, 5], 9999, 0), None),
        (mk(6, [10, 200, 9, 9], [9, 5, 5, 5], 25, 0), Some(0)),
        (mk(6, [10, 100, 9, 9], [9, 5, 5, 5], 25, 0), None),
        (mk(17, [10, 1, 9, 9], [9, 5, 5, 5], 5001, 0), Some(0)),
        (mk(17, [10, 1, 9, 9], [9, 5, 5, 5], 5000, 0), None),
        // A later fragment has no ports.
        (mk(17, [10, 1, 9, 9], [9, 5, 5, 5], 5001, 0x0010), None),
        (mk(1, [10, 1, 9, 9], [9, 5, 5, 5], 0, 0), Some(0)),
        (mk(1, [10, 1, 9, 9], [2, 5, 5, 5], 0, 0), None),
        (mk(47, [10, 1, 9, 9], [9, 5, 5, 5], 0, 0), None),
        // Too short for the transport fields: the rules' own programs.
        (
            mk(1, [10, 1, 9, 9], [9, 5, 5, 5], 0, 0)[..21].to_vec(),
            Some(0),
        ),
    ];
    let d = Program::ip_filter_with(c_firewall, crate::Engine::Decision).expect("compiles");
    for (i, (v, want)) in cases.iter().enumerate() {
        assert_eq!(p.classify(v, 0), *want, "case {i}");
        assert_eq!(d.classify(v, 0), *want, "case {i}");
    }
    // As one batch (the one-word loop inlined; the short packet falls
    // back to the rules' programs inside it): the same outputs.
    let refs: Vec<(&[u8], usize)> = cases.iter().map(|(v, _)| (&v[..], 0)).collect();
    let mut out = vec![Some(usize::MAX); refs.len()];
    assert_eq!(p.classify_batch(&refs, &mut out), refs.len());
    let want: Vec<Option<usize>> = cases.iter().map(|(_, w)| *w).collect();
    assert_eq!(out, want);
}

/// One-test `Classifier` programs decide inline, as the walk does, on
/// packets of every length (too short for the word included).
#[test]
fn one_test_classifiers_decide_inline_as_the_walk() {
    let lists: [&[&str]; 5] = [
        &["12/0800", "-"],
        &["12/0800"],
        &["!12/0800", "-"],
        &["12/86dd%ffff", "12/0800"],
        &["0/ff"],
    ];
    for (k, args) in lists.iter().enumerate() {
        let p = Program::classifier(args).expect("compiles");
        let walk = Program {
            one: None,
            ..p.clone()
        };
        assert_eq!(p.one.is_some(), k != 3, "{args:?}");
        for len in 0..20 {
            for fill in [0x00u8, 0x08, 0x86, 0xff] {
                let mut v = vec![fill; len];
                if len >= 14 {
                    v[12] = 0x08;
                    v[13] = fill;
                }
                assert_eq!(p.classify(&v, 0), walk.classify(&v, 0), "{args:?} {v:?}");
            }
        }
    }
}

#[test]
fn one_test_programs_walk_per_packet() {
    let p = Program::classifier(&["12/0800", "-"]).expect("compiles");
    assert!(
        !p.prefers_batch(),
        "a one-test Classifier should not use the batch walk"
    );
}

// ------------------------------------------------------------ rule-set index

const NETS: &[&str] = &[
    "10.0.0.0/8",
    "10.1.0.0/16",
    "10.1.2.0/24",
    "192.168.0.0/16",
    "192.168.1.7",
    "8.8.8.8/32",
    "93.184.0.0/14",
    "0.0.0.0/1",
    "128.0.0.0/2",
    "10.1.2.3",
];

/// One random primitive, realistic or not.
fn atom() -> impl Strategy<Value = String> {
    let net = prop::sample::select(NETS);
    let port = prop::sample::select(vec![0u16, 22, 53, 80, 123, 443, 1024, 8080, 65535]);
    let dir = prop::sample::select(vec!["src", "dst", "src or dst", "src and dst", ""]);
    prop_oneof![
        (dir.clone(), net.clone()).prop_map(|(d, n)| {
            if n.contains('/') {
                format!("{d} net {n}")
            } else {
                format!("{d} host {n}")
            }
        }),
        prop::sample::select(vec![
            "tcp",
            "udp",
            "icmp",
            "ip proto 47",
            "ip proto 6",
            "tcp or udp"
        ])
        .prop_map(str::to_string),
        (
            prop::sample::select(vec!["", "tcp ", "udp "]),
            dir,
            port.clone(),
            port.clone(),
            0u8..4
        )
            .prop_map(|(t, d, a, b, k)| match k {
                0 => format!("{t}{d} port {a}-{}", a.max(b)),
                1 => format!("{t}{d} port != {a}"),
                2 => format!("{t}{d} port < {b}"),
                _ => format!("{t}{d} port {a}"),
            }),
        prop::sample::select(vec![
            "icmp type echo",
            "icmp type echo-reply",
            "tcp opt syn",
            "tcp opt ack and not tcp opt syn",
            "ip ttl > 32",
            "ip frag",
            "ip unfrag",
            "ip[9:1] = 6",
            "ip[12:2] = 0x0a01",
            "transp[2:2] >= 1024",
            "ip tos 0",
            "ip dscp 0",
            "udp[0:1] & 0xf0 = 0",
            "ip[6:2] & 0x1fff != 0",
            "true",
            "false",
        ])
        .prop_map(str::to_string),
    ]
}

/// A random expression over [`atom`]s.
fn rule_expr() -> impl Strategy<Value = String> {
    let leaf = atom();
    leaf.prop_recursive(3, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| v.join(" and ")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a}) or ({b})")),
            inner.clone().prop_map(|a| format!("not ({a})")),
            (inner.clone(), inner.clone(), inner)
                .prop_map(|(c, a, b)| format!("({c}) ? ({a}) : ({b})")),
        ]
    })
}

fn rule() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["allow", "deny", "1", "2"]),
        rule_expr(),
        0u8..20,
    )
        .prop_map(|(a, e, k)| {
            if k == 0 {
                a.to_string()
            } else {
                format!("{a} {e}")
            }
        })
}

/// IPv4 packets whose addresses and ports often fall into [`NETS`] and the
/// port list, with options, fragments and truncation now and then.
fn index_packet() -> impl Strategy<Value = (Vec<u8>, usize)> {
    let addr = prop::sample::select(vec![
        [10u8, 1, 2, 3],
        [10, 1, 2, 9],
        [10, 1, 9, 9],
        [10, 200, 0, 1],
        [192, 168, 1, 7],
        [192, 168, 3, 1],
        [8, 8, 8, 8],
        [93, 185, 1, 1],
        [200, 1, 1, 1],
        [150, 0, 0, 1],
    ]);
    (
        prop::collection::vec(any::<u8>(), 64),
        (addr.clone(), addr),
        prop::sample::select(vec![1u8, 6, 17, 47, 2]),
        prop::sample::select(vec![0x45u8, 0x45, 0x45, 0x46, 0x44]),
        prop::sample::select(vec![0u16, 22, 53, 79, 80, 81, 443, 1023, 1024, 8080, 65535]),
        prop::sample::select(vec![0u16, 22, 53, 80, 123, 443, 0x0800, 0x0000]),
        prop::sample::select(vec![0u16, 0, 0, 0x4000, 0x2000, 0x0010, 0x2010]),
        (0usize..3, 0usize..64, 0u8..6),
    )
        .prop_map(
            |(mut v, (src, dst), proto, vhl, dport, sport, frag, (nh, cut, k))| {
                v[nh] = vhl;
                v[nh + 6..nh + 8].copy_from_slice(&frag.to_be_bytes());
                v[nh + 9] = proto;
                v[nh + 12..nh + 16].copy_from_slice(&src);
                v[nh + 16..nh + 20].copy_from_slice(&dst);
                let th = nh + usize::from(vhl & 15) * 4;
                v[th..th + 2].copy_from_slice(&sport.to_be_bytes());
                v[th + 2..th + 4].copy_from_slice(&dport.to_be_bytes());
                if k == 0 {
                    v.truncate(cut.max(nh));
                }
                (v, nh)
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The rule-set index gives the linear program's answer on every
    /// packet, for random rule sets.
    #[test]
    fn index_matches_linear(
        rules in prop::collection::vec(rule(), 1..40),
        pkts in prop::collection::vec(index_packet(), 1..40),
    ) {
        let refs: Vec<&str> = rules.iter().map(String::as_str).collect();
        let ix = Program::ip_filter_with(&refs, crate::Engine::Index).expect("rules parse");
        prop_assert!(ix.is_indexed());
        let auto = Program::ip_filter(&refs).expect("rules parse");
        let parsed = filter_rules(&refs);
        let lin = Program::from_compiled(dd::compile_linear(&parsed), 0, true);
        for (data, nh) in &pkts {
            let sp = spaces(data, *nh);
            let want = interp(&parsed, &sp);
            prop_assert_eq!(lin.classify(data, *nh), want);
            prop_assert_eq!(ix.classify(data, *nh), want, "rules {:?} packet {:?}", rules, data);
            prop_assert_eq!(auto.classify(data, *nh), want, "rules {:?} packet {:?}", rules, data);
        }
        check_batch(&ix, &pkts)?;
        check_batch(&auto, &pkts)?;
    }
}

/// Builds `n` firewall-like rules deterministically.
fn firewall_rules(n: usize) -> Vec<String> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut v: Vec<String> = (0..n)
        .map(|_| {
            let r = rnd();
            let act = if r % 3 == 0 { "deny" } else { "allow" };
            let dl = 16 + (r >> 8) % 17;
            let d = (r >> 16) as u32 & (u32::MAX << (32 - dl));
            let dst = format!("{}/{}", std::net::Ipv4Addr::from(d), dl);
            let port = 1 + (r >> 48) % 2000;
            match (r >> 4) % 4 {
                0 => format!("{act} tcp dst port {port} and dst net {dst}"),
                1 => format!("{act} udp dst port {port}-{} and dst net {dst}", port + 10),
                2 => format!("{act} src net {dst} and tcp"),
                _ => format!(
                    "{act} dst host {} and icmp type echo",
                    std::net::Ipv4Addr::from(d)
                ),
            }
        })
        .collect();
    v.push("deny all".into());
    v
}

#[test]
fn index_firewall_rules_are_exact_and_agree() {
    let rules = firewall_rules(300);
    let refs: Vec<&str> = rules.iter().map(String::as_str).collect();
    let ix = Program::ip_filter(&refs).expect("compiles");
    assert!(ix.is_indexed());
    let parsed = filter_rules(&refs);
    let lin = Program::from_compiled(dd::compile_linear(&parsed), 0, true);
    let mut x = 12345u64;
    for i in 0..20000u32 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut v = vec![0u8; 40];
        v[0] = 0x45;
        v[9] = [6u8, 17, 1, 47][(x >> 60) as usize % 4];
        // Addresses and ports from the rules' own values half of the time.
        let r = &parsed[(x >> 20) as usize % parsed.len()];
        let mut d = (x >> 8) as u32;
        r.0.for_each_test(&mut |t| {
            if t.off == 16 && i % 2 == 0 {
                d = t.value | (d & !t.mask);
            }
        });
        v[16..20].copy_from_slice(&d.to_be_bytes());
        v[12..16].copy_from_slice(&((x >> 3) as u32).to_be_bytes());
        v[22..24].copy_from_slice(&((x >> 40) as u16 % 2100).to_be_bytes());
        v[20] = if x.is_multiple_of(5) { 8 } else { v[20] };
        assert_eq!(ix.classify(&v, 0), lin.classify(&v, 0), "packet {v:?}");
    }
}

/// The rule-set index's one-word form on a short list with rules it must
/// verify (TCP flags, TTL): a packet whose first compatible entry is such
/// a rule takes the general scan, one whose first is exact gets that
/// rule's output straight from the entry word, one with none is dropped;
/// every packet as the decision program classifies it.
#[test]
fn one_word_index_verifies_inexact_rules() {
    let rules = [
        "0 tcp opt syn and dst port 80",
        "1 src net 10.0.0.0/8 and udp dst port 53",
        "deny ip ttl < 3 and udp",
        "2 udp",
        "3 tcp dst port 443",
    ];
    let ix = Program::ip_filter_with(&rules, crate::Engine::Index).expect("compiles");
    assert!(ix.is_indexed());
    let d = Program::ip_filter_with(&rules, crate::Engine::Decision).expect("compiles");
    let mk = |proto: u8, src: [u8; 4], ttl: u8, dport: u16, flags: u8| {
        let mut v = vec![0u8; 40];
        v[0] = 0x45;
        v[8] = ttl;
        v[9] = proto;
        v[12..16].copy_from_slice(&src);
        v[22..24].copy_from_slice(&dport.to_be_bytes());
        v[33] = flags;
        v
    };
    let cases = [
        (mk(6, [1, 2, 3, 4], 64, 80, 0x02), Some(0)),
        (mk(6, [1, 2, 3, 4], 64, 80, 0x10), None),
        (mk(17, [10, 2, 3, 4], 1, 53, 0), Some(1)),
        (mk(17, [11, 2, 3, 4], 1, 53, 0), None),
        (mk(17, [11, 2, 3, 4], 64, 53, 0), Some(2)),
        (mk(6, [1, 2, 3, 4], 64, 443, 0x02), Some(3)),
        (mk(1, [1, 2, 3, 4], 64, 0, 0), None),
    ];
    for (i, (v, want)) in cases.iter().enumerate() {
        assert_eq!(ix.classify(v, 0), *want, "case {i}");
        assert_eq!(d.classify(v, 0), *want, "case {i}");
    }
}

#[test]
fn index_leaf_sets() {
    use crate::expr::Space;
    let t = |space, off, mask, value, gt| Test {
        space,
        off,
        mask,
        value,
        gt,
    };
    // Prefix of the source address: one interval.
    let s =
        crate::index::tests_api::leaf(1, &t(Space::Primary, 12, 0xFFFF_0000, 0x0A01_0000, false));
    assert_eq!(s, Some(vec![(0x0A01_0000, 0x0A01_FFFF)]));
    // Fragment offset zero within the 14 fragment bits: MF free.
    let s = crate::index::tests_api::leaf(5, &t(Space::Primary, 4, 0x1FFF, 0, false));
    assert_eq!(s, Some(vec![(0, 0), (0x2000, 0x2000)]));
    // Destination port greater than 1023.
    let s = crate::index::tests_api::leaf(4, &t(Space::Transport, 0, 0xFFFF, 1023, true));
    assert_eq!(s, Some(vec![(1024, 0xFFFF)]));
    // Source port (high half of the word) greater than 0x50.
    let s =
        crate::index::tests_api::leaf(3, &t(Space::Transport, 0, 0xFFFF_0000, 0x0050_FFFF, true));
    assert_eq!(s, Some(vec![(0x51, 0xFFFF)]));
    // TTL is not an indexed field.
    assert_eq!(
        crate::index::tests_api::leaf(0, &t(Space::Primary, 8, 0xFF00_0000, 5, false)),
        None
    );
}

#[test]
fn index_exactness() {
    let exact = |s: &str| {
        let r = filter_rules(&[s]);
        crate::index::tests_api::exact(&r[0].0)
    };
    assert_eq!(
        exact("allow tcp dst port 80 and dst net 10.0.0.0/8"),
        (1, true)
    );
    assert_eq!(exact("allow src or dst host 1.2.3.4"), (2, true));
    assert_eq!(exact("allow tcp or udp"), (1, true));
    assert_eq!(exact("allow dst port 1000-2000"), (1, true));
    assert_eq!(exact("allow not src net 10.0.0.0/8 and udp"), (1, true));
    assert_eq!(exact("allow icmp type echo"), (1, true));
    assert_eq!(exact("allow tcp opt syn"), (1, false));
    assert_eq!(exact("allow ip ttl > 3 and tcp"), (1, false));
    assert_eq!(exact("allow false"), (0, true));
}

/// The rules of `args` parsed as a dual-stack program.
fn dual_rules(args: &[&str]) -> Vec<(Expr, Option<usize>)> {
    args.iter()
        .map(|a| {
            let w = ipparse::separate_text(a);
            ipparse::parse_filter_arg(&w, true).expect("parse")
        })
        .map(|(s, e, _)| (e, s))
        .collect()
}

const DUAL: &[&str] = &[
    "deny src net 2001:db8:bad::/48",
    "0 ip6 and tcp dst port 22 and src net 2001:db8::/32",
    "1 icmp6 type echo-request or icmp6 type neighbor-solicit",
    "2 udp dst port 53",
    "3 ip6 hlim 1 or ip6 frag",
    "4 tcp opt syn and not tcp opt ack",
    "5 ip6 nxt 0 and tcp",
    "6 dst host 2001:db8::1 or dst host 10.0.0.1",
    "7 ip6 flow 0x12345",
    "8 not transp[2:2] >= 1024",
];

/// IPv6 packets with random extension-header chains (hop-by-hop,
/// destination options, routing, fragment: some malformed or too long),
/// upper layers, addresses and truncation; some IPv4 ones.
fn dual_packet() -> impl Strategy<Value = (Vec<u8>, usize)> {
    (
        prop::collection::vec(any::<u8>(), 0..200),
        prop::collection::vec(prop::sample::select(vec![0u8, 60, 43, 44, 99]), 0..20),
        prop::sample::select(vec![6u8, 17, 58, 59, 50]),
        prop::sample::select(vec![0u16, 22, 53, 80, 1024, 0xffff]),
        any::<u8>(),
        0usize..200,
        any::<bool>(),
    )
        .prop_map(|(mut v, chain, upper, port, hlim, cut, v4)| {
            v.resize(40, 0);
            if v4 {
                v[0] = 0x45;
                v[9] = upper;
                v[12..16].copy_from_slice(&[10, 0, 0, 1]);
                v.resize(60, 0);
                v[22..24].copy_from_slice(&port.to_be_bytes());
            } else {
                v[0] = 0x60 | (v[0] & 0x0f);
                v[7] = hlim;
                v[8..12].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
                let mut nh_at = 6;
                for &h in &chain {
                    v[nh_at] = if h == 99 { 0 } else { h };
                    nh_at = v.len();
                    let frag_off = (port & 0x1ff8).to_be_bytes();
                    let mut ext = vec![0u8, 0, frag_off[0], frag_off[1], 0, 0, 0, 1];
                    if h == 99 {
                        ext[1] = 200; // runs past the packet
                    }
                    v.extend_from_slice(&ext);
                }
                v[nh_at] = upper;
                let mut l4 = vec![0u8; 20];
                l4[0] = 128 + (port as u8 & 7);
                l4[2..4].copy_from_slice(&port.to_be_bytes());
                l4[13] = port as u8;
                v.extend_from_slice(&l4);
            }
            v.truncate(cut.max(1));
            (v, 0)
        })
}

fn dual_interp(rules: &[(Expr, Option<usize>)], data: &[u8], nh: usize) -> Option<usize> {
    let mut layout = [0u8; ipparse::V6_LAYOUT_LEN];
    let sp = crate::dual_spaces(data, nh, &mut layout);
    interp(rules, &sp)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn dual_stack_dd_matches_interpreter((data, nh) in dual_packet()) {
        let rules = dual_rules(DUAL);
        let p = Program::ip_filter(DUAL).expect("compiles");
        prop_assert_eq!(p.classify(&data, nh), dual_interp(&rules, &data, nh));
        let mut out = [Some(usize::MAX); 3];
        prop_assert_eq!(p.classify_batch(&[(&data[..], nh); 3], &mut out), 3);
        prop_assert!(out.iter().all(|&o| o == p.classify(&data, nh)));
    }

    #[test]
    fn a_dual_stack_program_classifies_ipv4_as_the_ipv4_program_does((data, nh) in packet()) {
        prop_assume!(data.get(nh).is_some_and(|b| b >> 4 == 4));
        let mut dual: Vec<&str> = vec!["deny src host 2001:db8::dead"];
        dual.extend_from_slice(FIREWALL);
        let v4 = Program::ip_filter(FIREWALL).expect("v4");
        let both = Program::ip_filter(&dual).expect("dual");
        prop_assert_eq!(v4.classify(&data, nh), both.classify(&data, nh));
        let mut dual: Vec<&str> = vec!["deny src host 2001:db8::dead"];
        dual.extend_from_slice(EXTRA);
        let v4 = Program::ip_filter(EXTRA).expect("v4");
        let both = Program::ip_filter(&dual).expect("dual");
        prop_assert_eq!(v4.classify(&data, nh), both.classify(&data, nh));
    }
}

#[test]
fn program_text_is_clicks_form() {
    let c = Program::classifier(&["1/01", "-"]).expect("classifier");
    assert_eq!(
        c.program_text(),
        " 0   0/00010000%00ff0000  yes->[0]  no->[1]\nsafe length 2\nalignment offset 0\n"
    );
    let f =
        Program::ip_filter(&["allow false", "allow false", "allow src 10.0.0.1"]).expect("filter");
    assert_eq!(
        f.program_text(),
        " 0 268/0a000001%ffffffff  yes->[0]  no->[X]\nsafe length 272\nalignment offset 0\n"
    );
    let f = Program::ip_filter(&["allow false"]).expect("filter");
    assert_eq!(
        f.program_text(),
        "all->[X]\nsafe length 0\nalignment offset 0\n"
    );
    // Transport offsets count from 512; each distinct test once.
    let f = Program::ip_classifier(&["tcp dst port 80", "-"]).expect("classifier");
    let text = f.program_text();
    assert!(text.contains("512/00000050%0000ffff"), "{text}");
    assert!(
        text.ends_with("safe length 516\nalignment offset 0\n"),
        "{text}"
    );
}
