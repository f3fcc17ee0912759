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
            ipparse::parse_filter_arg(&w).expect("parse")
        })
        .map(|(s, e)| (e, s))
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
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn firewall_dd_matches_interpreter((data, nh) in packet()) {
        for set in [FIREWALL, EXTRA] {
            let rules = filter_rules(set);
            let sp = spaces(&data, nh);
            let want = interp(&rules, &sp);
            prop_assert_eq!(run(&dd::compile(&rules), true, &data, nh), want);
            prop_assert_eq!(run(&dd::compile_linear(&rules), true, &data, nh), want);
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
            i = p.step(n, w | (w & !n.mask));
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
    Ok(())
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
    let p = Program::ip_filter(&refs).expect("compiles");
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

#[test]
fn one_test_programs_walk_per_packet() {
    let p = Program::classifier(&["12/0800", "-"]).expect("compiles");
    assert!(
        !p.prefers_batch(),
        "a one-test Classifier should not use the batch walk"
    );
}
