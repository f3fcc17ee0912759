//! Compiler tests: the paper's chains, the example Click configurations'
//! profiles, the example policies, and properties of random policies.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use crate::builtin::builtin;
use crate::tables::unreachable_or_cyclic;
use crate::*;

fn compile(text: &str) -> Plan {
    Policy::parse("t.nfp", text)
        .and_then(|p| p.compile())
        .unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn compile_err(text: &str) -> String {
    match Policy::parse("t.nfp", text).and_then(|p| p.compile()) {
        Ok(plan) => panic!("compiled:\n{}", plan.render_text()),
        Err(e) => e.to_string(),
    }
}

/// The graph's shape in one line: `a -> (b | c -> d) -> e`, copies
/// marked `~h` (header-only) or `~f` (full).
fn shape(plan: &Plan) -> String {
    fn stages(plan: &Plan, s: &[Stage]) -> String {
        s.iter()
            .map(|st| match st {
                Stage::Nf(x) => plan.nfs[*x].name.clone(),
                Stage::Parallel(g) => {
                    let b: Vec<String> = g
                        .branches
                        .iter()
                        .map(|b| {
                            let mark = match b.delivery {
                                Delivery::Packet => "",
                                Delivery::Copy(CopyKind::HeaderOnly) => "~h ",
                                Delivery::Copy(CopyKind::Full) => "~f ",
                            };
                            format!("{mark}{}", stages(plan, &b.stages))
                        })
                        .collect();
                    format!("({})", b.join(" | "))
                }
            })
            .collect::<Vec<_>>()
            .join(" -> ")
    }
    stages(plan, &plan.graph.stages)
}

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

const TABLE_2_DECL: &str = "nf VPN = builtin(vpn)\n\
                            nf monitor = builtin(monitor)\n\
                            nf FW = builtin(firewall)\n\
                            nf LB = builtin(lb)\n";

/// Table 2, second row: the chain of Figure 1 written as order rules.
/// With Table 1's profiles: the VPN adds a header, so everything after it
/// is sequential; monitor before FW is read/read (FW's drops are handled
/// by the merger); FW drops, so LB stays after it; monitor before LB could
/// run in parallel on a header copy (LB rewrites addresses the monitor
/// reads), but that would not shorten the graph, so the compiler puts it
/// in sequence and saves the copy. The result is the paper's Figure 2:
/// VPN, then monitor and FW in parallel, then LB (3 steps instead of 4).
#[test]
fn table_2_order_chain_is_figure_2() {
    let plan = compile(&format!(
        "{TABLE_2_DECL}order(VPN, before, monitor)\norder(monitor, before, FW)\norder(FW, before, LB)\n"
    ));
    assert_eq!(shape(&plan), "VPN -> (monitor | FW) -> LB");
    assert_eq!(plan.graph.longest_path(), 3);
    let id = |n: &str| plan.index_of(n).expect("declared");
    let pair = |a: &str, b: &str| plan.pair(id(a), id(b)).expect("analysed").clone();
    assert_eq!(pair("monitor", "FW").result, Parallelism::ParallelNoCopy);
    assert_eq!(
        pair("monitor", "LB").result,
        Parallelism::ParallelCopy {
            header_only: true,
            conflicts: vec![Field::SrcIp, Field::DstIp]
        }
    );
    assert_eq!(pair("monitor", "LB").placement, Placement::Before);
    assert_eq!(
        pair("FW", "LB").result,
        Parallelism::Sequential {
            reason: Reason::EarlierDrops
        }
    );
    assert_eq!(
        pair("VPN", "monitor").result,
        Parallelism::Sequential {
            reason: Reason::EarlierReshapes
        }
    );
}

/// Table 2, third row: the policy the paper gives for Figure 2 compiles
/// to Figure 2, with the tables a runtime needs.
#[test]
fn table_2_parallel_policy_is_figure_2() {
    let plan = compile(&format!(
        "{TABLE_2_DECL}position(VPN, first)\norder(FW, before, LB)\norder(monitor, before, LB)\n"
    ));
    assert_eq!(shape(&plan), "VPN -> (monitor | FW) -> LB");
    let id = |n: &str| plan.index_of(n).expect("declared");
    let hops = |from: Node| -> Vec<Target> {
        plan.forward(from)
            .expect("in the table")
            .hops
            .iter()
            .map(|h| {
                assert_eq!(h.delivery, HopDelivery::Packet, "no copies in Figure 2");
                h.to
            })
            .collect()
    };
    assert_eq!(hops(Node::Classifier), [Target::Nf(id("VPN"))]);
    assert_eq!(
        hops(Node::Nf(id("VPN"))),
        [Target::Nf(id("monitor")), Target::Nf(id("FW"))]
    );
    assert_eq!(hops(Node::Nf(id("monitor"))), [Target::Merger(0)]);
    assert_eq!(hops(Node::Nf(id("FW"))), [Target::Merger(0)]);
    assert_eq!(hops(Node::Merger(0)), [Target::Nf(id("LB"))]);
    assert_eq!(hops(Node::Nf(id("LB"))), [Target::Out]);
    assert_eq!(plan.forwarding.len(), 6);
    assert_eq!(
        plan.merges,
        [Merge {
            group: 0,
            versions: 2,
            base: 0,
            fields: vec![],
            drop_overrides: vec![],
            layout: None,
        }]
    );
    let text = plan.render_text();
    assert!(text.contains("  1. VPN  [position first]\n"), "{text}");
    assert!(text.contains("merger 0: waits for 2 versions"), "{text}");
    let dot = plan.render_dot();
    assert!(dot.starts_with("digraph \"t.nfp\" {"), "{dot}");
    assert!(dot.contains("subgraph cluster_g0"), "{dot}");
    assert!(dot.contains("  merger0 -> nf3;\n"), "{dot}");
}

/// Parallel firewalls, as in the paper's evaluation (2 to 5 of them).
/// `priority` rules put them in one parallel group with no copy (they
/// only read); `order` rules keep them sequential, because a firewall
/// drops packets the next one must then not see.
#[test]
fn parallel_firewalls() {
    for n in 2..=5 {
        let mut text = String::new();
        for i in 1..=n {
            text.push_str(&format!("nf fw{i} = builtin(firewall)\n"));
        }
        let mut ordered = text.clone();
        for i in 1..n {
            text.push_str(&format!("priority(fw{i} > fw{})\n", i + 1));
            ordered.push_str(&format!("order(fw{i}, before, fw{})\n", i + 1));
        }
        let plan = compile(&text);
        let names: Vec<String> = (1..=n).map(|i| format!("fw{i}")).collect();
        assert_eq!(shape(&plan), format!("({})", names.join(" | ")));
        assert_eq!(plan.graph.longest_path(), 1);
        assert_eq!(plan.merges.len(), 1);
        assert_eq!(plan.merges[0].versions, n);
        assert!(plan.merges[0].fields.is_empty());
        // Every firewall outranks those after it: a drop by fwJ is
        // ignored when a higher one passed the packet.
        assert_eq!(plan.merges[0].drop_overrides.len(), n * (n - 1) / 2);
        let entry = plan.forward(Node::Classifier).expect("entry");
        assert_eq!(entry.hops.len(), n);
        assert!(entry.hops.iter().all(|h| h.delivery == HopDelivery::Packet));

        let plan = compile(&ordered);
        assert_eq!(shape(&plan), names.join(" -> "));
    }
}

#[test]
fn nat_before_monitor_is_sequential() {
    let plan =
        compile("nf nat = builtin(nat)\nnf mon = builtin(monitor)\norder(nat, before, mon)\n");
    assert_eq!(shape(&plan), "nat -> mon");
    assert_eq!(
        plan.pairs[0].result,
        Parallelism::Sequential {
            reason: Reason::WriteRead(Field::SrcIp)
        }
    );
    assert!(plan.merges.is_empty());
}

#[test]
fn monitor_before_nat_is_parallel_with_a_copy() {
    let plan =
        compile("nf mon = builtin(monitor)\nnf nat = builtin(nat)\norder(mon, before, nat)\n");
    assert_eq!(shape(&plan), "(~h mon | nat)");
    let m = &plan.merges[0];
    assert_eq!(m.base, 1, "built from the NAT's version");
    let owners: Vec<(Field, usize)> = m.fields.iter().map(|o| (o.field, o.nf)).collect();
    assert_eq!(
        owners,
        [
            (Field::SrcIp, 1),
            (Field::DstIp, 1),
            (Field::SrcPort, 1),
            (Field::DstPort, 1)
        ]
    );
    let entry = plan.forward(Node::Classifier).expect("entry");
    assert_eq!(
        entry.hops,
        [
            Hop {
                to: Target::Nf(0),
                delivery: HopDelivery::Copy {
                    kind: CopyKind::HeaderOnly,
                    copy: 0
                }
            },
            Hop {
                to: Target::Nf(1),
                delivery: HopDelivery::Packet
            },
        ]
    );
}

#[test]
fn payload_readers_get_full_copies() {
    let plan = compile("nf ids = builtin(ids)\nnf vpn = builtin(vpn)\norder(ids, before, vpn)\n");
    assert_eq!(shape(&plan), "(~f ids | vpn)");
    assert_eq!(plan.merges[0].layout, Some((1, 1)));
    assert_eq!(plan.merges[0].base, 1);
}

#[test]
fn unrelated_nfs_run_in_parallel_in_the_better_direction() {
    // No rule: nat then monitor would be sequential, monitor then nat
    // parallel with a copy; the compiler takes the latter.
    let plan = compile("nf nat = builtin(nat)\nnf mon = builtin(monitor)\n");
    assert_eq!(shape(&plan), "(nat | ~h mon)");
    assert_eq!(plan.pairs[0].relation, Relation::Unordered);
    assert_eq!(plan.pairs[0].first, 1);
    // Two NATs rewrite the same fields: one of them has to go first.
    let plan = compile("nf a = builtin(nat)\nnf b = builtin(nat)\nnf s = builtin(shaper)\n");
    assert_eq!(shape(&plan), "(a -> b | s)");
}

#[test]
fn independent_sub_graphs_run_in_parallel() {
    let plan = compile(
        "nf a = builtin(nat)\nnf b = builtin(monitor)\nnf c = builtin(compressor)\n\
         nf d = opaque(reads: payload)\n\
         order(a, before, b)\norder(c, before, d)\n",
    );
    assert_eq!(shape(&plan), "(a -> b | c -> d)");
    assert_eq!(plan.graph.longest_path(), 2);
}

#[test]
fn write_write_conflicts_take_the_later_value() {
    let plan = compile(
        "nf first = opaque(writes: dst_ip)\nnf second = opaque(writes: dst_ip)\norder(first, before, second)\n",
    );
    assert_eq!(shape(&plan), "(~h first | second)");
    assert_eq!(plan.merges[0].fields[0].nf, 1);
    // With priority the higher one's value is kept, whatever the order.
    let plan = compile(
        "nf first = opaque(writes: dst_ip)\nnf second = opaque(writes: dst_ip)\npriority(first > second)\n",
    );
    assert_eq!(plan.merges[0].fields[0].nf, 0);
}

#[test]
fn priority_contradictions_are_errors() {
    assert_eq!(
        compile_err("nf v = builtin(vpn)\nnf n = builtin(nat)\npriority(v > n)\n"),
        "t.nfp:3:1: error: priority(v > n) cannot be honoured: one of `v` and `n` writes src_ip \
         while the other adds or removes headers; their versions cannot be merged"
    );
    assert_eq!(
        compile_err(
            "nf ips = builtin(ids)\nnf fw = builtin(firewall)\nnf nat = builtin(nat)\n\
             priority(ips > fw)\npriority(ips > nat)\norder(nat, before, fw)\n"
        ),
        "t.nfp:4:1: error: priority rules make {ips, fw, nat} one parallel group, but `nat` and \
         `fw` cannot run in parallel: sequential: `fw` reads src_ip, which `nat` writes"
    );
    assert_eq!(
        compile_err(
            "nf a = builtin(ids)\nnf b = builtin(nat)\nnf c = builtin(proxy)\n\
             priority(a > b)\npriority(a > c)\n"
        ),
        "t.nfp:4:1: error: priority rules put `b` and `c` in one parallel group and both write \
         src_ip, but no rule says whose value wins: add priority(b > c) or priority(c > b)"
    );
    assert_eq!(
        compile_err(
            "nf a = builtin(monitor)\nnf b = builtin(monitor)\nnf c = builtin(monitor)\n\
             priority(a > b)\norder(a, before, c)\norder(c, before, b)\n"
        ),
        "t.nfp:4:1: error: priority rules make {a, b} one parallel group, but the order rules \
         a before c (line 5), c before b (line 6) put other NFs between its members"
    );
}

#[test]
fn unknown_profiles_are_errors_until_resolved() {
    let mut p = Policy::parse(
        "t.nfp",
        "nf fw = instance(\"tenant-fw\")\nnf mon = builtin(monitor)\n",
    )
    .expect("parses");
    assert_eq!(
        p.compile().expect_err("no profile").to_string(),
        "t.nfp:1:4: error: the profile of `fw` is not known yet: Click files are read by `load`, \
         and instance profiles come from the daemon (or declare it with builtin(...) or opaque(...))"
    );
    let e = p
        .clone()
        .resolve_instances(|name| Err(format!("no instance {name}")))
        .expect_err("fails");
    assert_eq!(
        e.to_string(),
        "t.nfp:1:4: error: cannot get the profile of `fw` (instance \"tenant-fw\"): no instance tenant-fw"
    );
    p.resolve_instances(|_| Ok(builtin("firewall").expect("row").profile))
        .expect("resolves");
    assert_eq!(shape(&p.compile().expect("compiles")), "(fw | mon)");
    assert_eq!(
        compile_err(""),
        "t.nfp: error: the policy declares no network function: add `nf NAME = ...` lines"
    );
}

#[test]
fn nested_groups_share_or_copy_consistently() {
    // mon reads what nat writes: a header copy, taken once for mon's
    // branch; fw1 and fw2 (a priority group after nat) share nat's packet.
    let plan = compile(
        "nf mon = builtin(monitor)\nnf nat = builtin(nat)\nnf fw1 = builtin(firewall)\nnf fw2 = builtin(firewall)\n\
         order(mon, before, nat)\norder(nat, before, fw1)\norder(nat, before, fw2)\npriority(fw1 > fw2)\n",
    );
    assert_eq!(shape(&plan), "(~h mon | nat -> (fw1 | fw2))");
    assert_eq!(plan.merges.len(), 2);
    assert_eq!(
        plan.forward(Node::Merger(1)).expect("inner").hops[0].to,
        Target::Merger(0)
    );
    assert!(unreachable_or_cyclic(&plan).is_empty());
}

/// Each example Click configuration's derived profile (the analysed
/// fields), next to the Table 1 row of its kind of NF, and why they
/// differ where they do.
#[test]
fn example_click_profiles() {
    use Field::{DstIp, DstPort, Payload, SrcIp, SrcPort};
    let five = [SrcIp, DstIp, SrcPort, DstPort];
    let five_payload = [SrcIp, DstIp, SrcPort, DstPort, Payload];
    let cases: [(&str, &str, Profile); 8] = [
        // Same as Table 1's firewall: CheckIPHeader and IPFilter read the
        // five-tuple and drop.
        ("firewall", "firewall", Profile::reading(&five).dropping()),
        // Table 1's firewall plus payload reads: StatefulFirewall lets in
        // ICMP errors by the connection of the packet they quote, which is
        // in the ICMP payload.
        (
            "stateful-firewall",
            "firewall",
            Profile::reading(&five_payload).dropping(),
        ),
        // Table 1's IDS plus drops: the configuration discards non-IPv4
        // and malformed packets (IDSMatcher itself only diverts).
        ("ids", "ids", Profile::reading(&five_payload).dropping()),
        // Table 1's NAT plus payload R/W (ICMPRewriter translates the
        // packet quoted in ICMP errors) and drops (unsolicited inbound,
        // spoofed and non-IPv4 traffic).
        (
            "nat",
            "nat",
            Profile::NONE.read_writing(&five_payload).dropping(),
        ),
        // The same for CGNAT (RFC 5508 translation of ICMP errors).
        (
            "cgnat",
            "nat",
            Profile::NONE.read_writing(&five_payload).dropping(),
        ),
        // Table 1's load balancer rewrites addresses only; IPRewriter's
        // profile covers any pattern, and these patterns do set the
        // destination port (and the reply path the source port). It also
        // drops packets of no connection.
        ("lb", "lb", Profile::NONE.read_writing(&five).dropping()),
        // A whole IP router is more than Table 1's gateway: it rewrites
        // the source of its own ICMP errors (FixIPSrc, ICMPError, which
        // also quote the packet as payload), answers ARP and fragments
        // (both add or remove headers), and drops.
        (
            "router",
            "gateway",
            Profile::reading(&five)
                .read_writing(&[SrcIp, DstIp, Payload])
                .dropping()
                .reshaping(),
        ),
        // Table 1's shaper touches nothing; this one is a policer keyed by
        // flow plus a classifier on the destination port, and drops
        // excess traffic.
        ("ratelimit", "shaper", Profile::reading(&five).dropping()),
    ];
    for (example, row, expected) in cases {
        let path = examples_dir().join(format!("{example}.click"));
        let derived = profile_of_click(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(derived.analysed(), expected, "{example}: derived {derived}");
        let table = builtin(row).expect("a Table 1 row").profile;
        assert_eq!(
            derived.analysed() == table,
            example == "firewall",
            "{example} vs Table 1's {row}"
        );
    }
}

#[test]
fn example_policies_compile() {
    let dir = examples_dir().join("chains");
    let plan = load(&dir.join("datacenter.nfp"))
        .and_then(|p| p.compile())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shape(&plan), "vpn -> (monitor | fw) -> lb");
    let plan = load(&dir.join("firewalls.nfp"))
        .and_then(|p| p.compile())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shape(&plan), "(monitor | edge -> stateful -> (ips | acl))");
    // Every NF of the subscriber edge may drop: nothing runs in parallel.
    let plan = load(&dir.join("subscriber-edge.nfp"))
        .and_then(|p| p.compile())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(shape(&plan), "bras -> fw -> cgnat -> monitor");
    let e = load(&dir.join("missing.nfp")).expect_err("no such file");
    assert!(
        e.to_string().ends_with(
            "missing.nfp: error: cannot read the policy: No such file or directory (os error 2)"
        ),
        "{e}"
    );
}

#[test]
fn click_nfs_are_read_relative_to_the_policy() {
    let dir = std::env::temp_dir().join(format!("pronto-policy-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let fw = examples_dir().join("firewall.click");
    std::fs::write(
        dir.join("p.nfp"),
        format!(
            "nf fw = click(\"{}\")\nnf bad = click(\"nope.click\")\n",
            fw.display()
        ),
    )
    .expect("write");
    let e = load(&dir.join("p.nfp")).expect_err("nope.click is missing");
    assert!(
        e.to_string()
            .contains(":2:4: error: cannot derive the profile of `bad` from "),
        "{e}"
    );
    std::fs::write(
        dir.join("p.nfp"),
        format!("nf fw = click(\"{}\")\n", fw.display()),
    )
    .expect("write");
    let p = load(&dir.join("p.nfp")).expect("loads");
    assert_eq!(
        p.nfs[0].profile.map(|p| p.analysed()),
        builtin("firewall").map(|b| b.profile)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------
// Properties of random policies.

fn arb_profile() -> impl Strategy<Value = Profile> {
    (0u8..32, 0u8..32, 0u8..4, 0u8..8).prop_map(|(r, w, d, s)| Profile {
        reads: FieldSet::from_bits(r),
        writes: FieldSet::from_bits(w),
        drops: d == 0,
        reshapes: s == 0,
    })
}

fn opaque(p: &Profile) -> String {
    let list = |s: FieldSet| s.iter().map(|f| f.name()).collect::<Vec<_>>().join(" ");
    format!(
        "opaque(reads: {}, writes: {}, drops: {}, reshapes: {})",
        list(p.reads),
        list(p.writes),
        if p.drops { "yes" } else { "no" },
        if p.reshapes { "yes" } else { "no" }
    )
}

#[derive(Debug, Clone)]
struct RandomPolicy {
    text: String,
    n: usize,
    orders: Vec<(usize, usize)>,
    priorities: Vec<(usize, usize)>,
}

/// Up to 8 NFs, order rules along a random permutation (so acyclic),
/// maybe the permutation's ends pinned, maybe priority rules.
fn arb_policy(with_priorities: bool) -> impl Strategy<Value = RandomPolicy> {
    (1usize..=8)
        .prop_flat_map(move |n| {
            (
                proptest::collection::vec(arb_profile(), n),
                Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
                proptest::collection::vec(any::<u8>(), n * n),
                any::<(bool, bool)>(),
                proptest::collection::vec(any::<u8>(), n * n),
            )
        })
        .prop_map(
            move |(profiles, perm, edge_bits, (pin_first, pin_last), prio_bits)| {
                let n = profiles.len();
                let mut text = String::new();
                for (i, p) in profiles.iter().enumerate() {
                    text.push_str(&format!("nf n{i} = {}\n", opaque(p)));
                }
                let mut orders = Vec::new();
                for i in 0..n {
                    for j in i + 1..n {
                        if edge_bits[i * n + j] % 3 == 0 {
                            orders.push((perm[i], perm[j]));
                        }
                    }
                }
                let first = (pin_first && n >= 2).then_some(perm[0]);
                let last = (pin_last && n >= 3).then_some(perm[n - 1]);
                let mut priorities = Vec::new();
                if with_priorities {
                    for i in 0..n {
                        for j in i + 1..n {
                            let (a, b) = (perm[i], perm[j]);
                            if prio_bits[i * n + j] % 5 == 0 && Some(a) != first && Some(b) != last
                            {
                                priorities.push((a, b));
                            }
                        }
                    }
                }
                for (a, b) in &orders {
                    text.push_str(&format!("order(n{a}, before, n{b})\n"));
                }
                for (a, b) in &priorities {
                    text.push_str(&format!("priority(n{a} > n{b})\n"));
                }
                if let Some(f) = first {
                    text.push_str(&format!("position(n{f}, first)\n"));
                }
                if let Some(l) = last {
                    text.push_str(&format!("position(n{l}, last)\n"));
                }
                RandomPolicy {
                    text,
                    n,
                    orders,
                    priorities,
                }
            },
        )
}

fn check_invariants(rp: &RandomPolicy, plan: &Plan) -> Result<(), TestCaseError> {
    let text = plan.render_text();
    // Every NF exactly once.
    let mut nfs = plan.graph.nfs();
    nfs.sort();
    prop_assert_eq!(nfs, (0..rp.n).collect::<Vec<_>>(), "{}", text);
    // Every order rule, and every order implied by a chain of them, is
    // kept: in sequence, or in parallel where the analysis allows it.
    let mut reach = vec![vec![false; rp.n]; rp.n];
    for &(a, b) in &rp.orders {
        reach[a][b] = true;
    }
    for k in 0..rp.n {
        for i in 0..rp.n {
            for j in 0..rp.n {
                if reach[i][k] && reach[k][j] {
                    reach[i][j] = true;
                }
            }
        }
    }
    for (a, row) in reach.iter().enumerate() {
        for b in (0..rp.n).filter(|&b| row[b]) {
            match plan.graph.placement(a, b) {
                Some(Placement::Before) => {}
                Some(Placement::Parallel) => {
                    let pair = plan.pair(a, b);
                    prop_assert!(
                        pair.is_some_and(|p| p.result.is_parallel()),
                        "n{} before n{} placed in parallel\n{}",
                        a,
                        b,
                        text
                    );
                }
                other => prop_assert!(false, "n{} before n{}: {:?}\n{}", a, b, other, text),
            }
        }
    }
    // Nothing the analysis calls sequential runs in parallel, and every
    // priority pair runs in parallel.
    for p in &plan.pairs {
        if p.placement == Placement::Parallel {
            prop_assert!(p.result.is_parallel(), "{:?}\n{}", p, text);
        }
        if p.relation == Relation::Priority {
            prop_assert_eq!(p.placement, Placement::Parallel, "{}", text);
        }
    }
    for &(h, l) in &rp.priorities {
        prop_assert_eq!(
            plan.graph.placement(h, l),
            Some(Placement::Parallel),
            "{}",
            text
        );
    }
    // No cycle, nothing unreachable; groups are real groups.
    prop_assert!(unreachable_or_cyclic(plan).is_empty(), "{}", text);
    prop_assert!(plan.graph.longest_path() <= rp.n);
    let groups = plan.graph.groups();
    prop_assert_eq!(groups.len(), plan.merges.len());
    for g in groups {
        prop_assert!(g.branches.len() >= 2, "{}", text);
        prop_assert_eq!(plan.merges[g.id].versions, g.branches.len());
        prop_assert!(
            g.branches.iter().any(|b| b.delivery == Delivery::Packet),
            "some branch keeps the packet\n{}",
            text
        );
    }
    // One forwarding entry per NF and merger, plus the classifier.
    prop_assert_eq!(plan.forwarding.len(), 1 + rp.n + plan.merges.len());
    prop_assert!(!plan.render_dot().is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn random_policies_compile_to_valid_graphs(rp in arb_policy(false)) {
        let plan = Policy::parse("r.nfp", &rp.text)
            .and_then(|p| p.compile())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{}", rp.text)))?;
        check_invariants(&rp, &plan)?;
    }

    #[test]
    fn random_priority_policies_compile_or_name_the_priority(rp in arb_policy(true)) {
        match Policy::parse("r.nfp", &rp.text).and_then(|p| p.compile()) {
            Ok(plan) => check_invariants(&rp, &plan)?,
            Err(e) => prop_assert!(
                e.message.contains("priority"),
                "{}\n{}",
                e,
                rp.text
            ),
        }
    }
}
