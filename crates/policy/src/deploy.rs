//! A compiled chain as sandboxed instances on the switch (`pronto chain
//! apply`): one instance per NF, one for the classifier (the chain's
//! entry) and one per parallel group's merger, each with one switch port.
//! A merger that hands every packet to one NF nothing else feeds runs
//! inside that NF's instance instead; an `instance("NAME")` NF is the
//! running instance, rewired in place ([`crate::rewire`]).
//!
//! The forwarding table says where each node sends a packet; a node sends
//! straight to its next hops' ports (their MAC addresses), a version per
//! hop (the switch copies frames between processes, so every branch gets
//! its own), the NFP tag inside the frame (`NFPEncap`, taken out again by
//! `NFPDecap` on arrival) with the merger input it is for. A merger demuxes
//! versions by that input (`PaintSwitch`) into `NFPMerge`, built from the
//! merge table. Several mergers may share a group's packets: the entry
//! hands packets to them in turn (`NFPTag(MERGERS N)`, each with its own
//! id sequence) and the branches send each version to its packet's merger
//! (`NFPMergerSwitch`). The last hop sends the plain frame to the chain's
//! exit address.

use std::fmt::Write as _;

use crate::graph::{Forward, Group, HopDelivery, Node, Plan, Stage, Target};
use crate::profile::Field;

/// One instance to create.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Its name (`PREFIX-NODE`).
    pub name: String,
    /// Its interface `eth0`'s MAC address: where the switch delivers
    /// frames for it.
    pub mac: String,
    /// Its Click configuration.
    pub config: String,
    /// What it is, for messages: `classifier`, `nf NAME`, `nf NAME with
    /// merger N`, `nf NAME, a running instance`, `merger N`.
    pub role: String,
    /// A running instance to reconfigure (not one to create).
    pub existing: bool,
    /// The memory it needs beyond an instance's default, in bytes (an
    /// instance running a merger: its window can hold many packets).
    pub memory: Option<u64>,
}

/// `NFPMerge`'s default window (ids it keeps at once).
const MERGE_WINDOW: u64 = 4096;

/// Memory for an instance that runs a merger of `versions` inputs: the
/// merger's window can hold `MERGE_WINDOW` x `versions` packets of one
/// 2,176-byte slot each, and an instance's packet pool may use three
/// quarters of its memory; rounded up to whole MiB, at least the default
/// 32 MiB.
pub fn merger_memory(versions: usize) -> u64 {
    let packets = MERGE_WINDOW * versions as u64 + 4096;
    let bytes = packets * pronto_packet::SLOT_STRIDE as u64 / 3 * 4;
    bytes.div_ceil(1 << 20).max(32) << 20
}

/// What runs an NF of the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NfBody {
    /// A compound element body (`input -> ... -> output;`): a new
    /// instance runs it.
    Compound(String),
    /// A running instance: its configuration is rewired in place (see
    /// [`crate::rewire`]).
    Running {
        /// The instance's name.
        name: String,
        /// Its current configuration.
        config: String,
        /// The interface it receives and sends chain frames on.
        iface: String,
        /// That interface's MAC address.
        mac: String,
    },
}

/// A parallel group and one of its branches.
type GroupBranch = Option<(usize, usize)>;

/// Where each NF and each group sits: the group and branch it belongs to,
/// if any.
fn enclosing(plan: &Plan) -> (Vec<GroupBranch>, Vec<GroupBranch>) {
    fn walk(
        stages: &[Stage],
        at: GroupBranch,
        nf: &mut Vec<GroupBranch>,
        group: &mut Vec<GroupBranch>,
    ) {
        for s in stages {
            match s {
                Stage::Nf(i) => nf[*i] = at,
                Stage::Parallel(g) => {
                    if group.len() <= g.id {
                        group.resize(g.id + 1, None);
                    }
                    group[g.id] = at;
                    for (b, br) in g.branches.iter().enumerate() {
                        walk(&br.stages, Some((g.id, b)), nf, group);
                    }
                }
            }
        }
    }
    let mut nf = vec![None; plan.nfs.len()];
    let mut group = Vec::new();
    walk(&plan.graph.stages, None, &mut nf, &mut group);
    (nf, group)
}

fn mac(chain: u8, kind: u8, index: usize) -> String {
    format!(
        "02:4e:{chain:02x}:{kind:02x}:{:02x}:{:02x}",
        (index >> 8) as u8,
        index as u8
    )
}

/// Why the merger could not join group `g`'s versions across instances,
/// if it could not: every branch but the base sends a full copy, and the
/// merger takes addresses and ports from a copy but no other header field.
fn unmergeable(plan: &Plan, g: &Group) -> Option<String> {
    let Some(m) = plan.merges.iter().find(|m| m.group == g.id) else {
        return Some("it has no merge table entry".into());
    };
    for (b, br) in g.branches.iter().enumerate() {
        if b == m.base {
            continue;
        }
        let mut v = Vec::new();
        crate::graph::nfs_of(&br.stages, &mut v);
        if let Some(&nf) = v
            .iter()
            .find(|&&nf| plan.nfs[nf].profile.writes.contains(Field::Other))
        {
            return Some(format!(
                "{} writes header fields other than addresses and ports off the merged \
                 version, which the merger does not take",
                plan.nfs[nf].name
            ));
        }
    }
    None
}

/// `plan` with every parallel group whose versions the merger could not
/// join across instances run in sequence instead (in policy order), and a
/// note for each saying why.
pub fn mergeable(plan: &Plan) -> (Plan, Vec<String>) {
    fn walk(plan: &Plan, order: &[usize], stages: &[Stage], notes: &mut Vec<String>) -> Vec<Stage> {
        let mut out = Vec::new();
        for s in stages {
            match s {
                Stage::Nf(i) => out.push(Stage::Nf(*i)),
                Stage::Parallel(g) => match unmergeable(plan, g) {
                    Some(why) => {
                        let mut v = Vec::new();
                        crate::graph::nfs_of(&[Stage::Parallel(g.clone())], &mut v);
                        let names: Vec<&str> = order
                            .iter()
                            .filter(|i| v.contains(i))
                            .map(|&i| plan.nfs[i].name.as_str())
                            .collect();
                        notes.push(format!(
                            "group {} ({}) runs in sequence: {why}",
                            g.id,
                            names.join(", ")
                        ));
                        out.extend(
                            order
                                .iter()
                                .filter(|i| v.contains(i))
                                .map(|&i| Stage::Nf(i)),
                        );
                    }
                    None => {
                        let mut g = g.clone();
                        for b in &mut g.branches {
                            b.stages = walk(plan, order, &b.stages, notes);
                        }
                        out.push(Stage::Parallel(g));
                    }
                },
            }
        }
        out
    }
    let order = crate::emit::sequential_order(plan);
    let mut notes = Vec::new();
    let mut p = plan.clone();
    p.graph.stages = walk(plan, &order, &plan.graph.stages, &mut notes);
    if !notes.is_empty() {
        let kept: Vec<usize> = p.graph.groups().iter().map(|g| g.id).collect();
        p.merges.retain(|m| kept.contains(&m.group));
        p.forwarding = crate::tables::forwarding(&p.graph);
    }
    (p, notes)
}

/// How to deploy a chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deploy<'a> {
    /// Names the instances (`PREFIX-NODE`).
    pub prefix: &'a str,
    /// Tells this chain's MAC addresses from another's.
    pub chain: u8,
    /// Where packets leave the chain.
    pub out_mac: &'a str,
    /// Merger instances per parallel group, sharing its packets.
    pub mergers: usize,
    /// The mergers' bounded wait, as Click writes a time (`10ms`).
    pub merge_timeout: &'a str,
}

/// The instances that run `plan` on the switch, as `d` says. `bodies[i]`
/// is what runs `plan.nfs[i]`.
pub fn instances(plan: &Plan, bodies: &[NfBody], d: &Deploy<'_>) -> Result<Vec<Instance>, String> {
    let Deploy {
        prefix,
        chain,
        out_mac,
        mergers,
        merge_timeout,
    } = *d;
    if !(1..=255).contains(&mergers) {
        return Err(format!("mergers: from 1 to 255 per group, found {mergers}"));
    }
    if bodies.len() != plan.nfs.len() {
        return Err(format!(
            "{} NFs but {} NF bodies",
            plan.nfs.len(),
            bodies.len()
        ));
    }
    if let Some((g, why)) = plan
        .graph
        .groups()
        .iter()
        .find_map(|g| unmergeable(plan, g).map(|w| (g.id, w)))
    {
        return Err(format!(
            "parallel group {g} cannot be merged ({why}); run the plan through `mergeable` first"
        ));
    }
    let (nf_at, group_at) = enclosing(plan);
    // Merger j of group g (of `mergers` sharing its packets).
    // A group whose merger hands every packet to one NF that nothing
    // else feeds gets its merger inside that NF's instance: one hop
    // (a switch crossing and a wake-up) less per packet.
    let mut colocated: Vec<Option<usize>> = Vec::new();
    for m in &plan.merges {
        let into = match plan
            .forward(Node::Merger(m.group))
            .map(|f| f.hops.as_slice())
        {
            Some([hop]) if mergers == 1 => match hop.to {
                Target::Nf(j) if matches!(bodies[j], NfBody::Compound(_)) => Some(j),
                _ => None,
            },
            _ => None,
        };
        let only_feeder = into.filter(|&j| {
            plan.forwarding
                .iter()
                .filter(|f| f.hops.iter().any(|h| h.to == Target::Nf(j)))
                .all(|f| f.from == Node::Merger(m.group))
        });
        if colocated.len() <= m.group {
            colocated.resize(m.group + 1, None);
        }
        colocated[m.group] = only_feeder;
    }
    // NFPMerge's arguments for merge table entry `m`.
    let merge_args = |m: &crate::graph::Merge| -> String {
        let n = m.versions;
        let mut fields: Vec<Vec<&str>> = vec![Vec::new(); n];
        for o in &m.fields {
            if o.field == Field::Other || o.branch >= n {
                continue;
            }
            if !fields[o.branch].contains(&o.field.name()) {
                fields[o.branch].push(o.field.name());
            }
        }
        let inputs: Vec<String> = (0..n)
            .map(|b| {
                let kind = if b == m.base { "orig" } else { "full" };
                if fields[b].is_empty() {
                    kind.to_string()
                } else {
                    format!("{kind} {}", fields[b].join(" "))
                }
            })
            .collect();
        let pairs: Vec<(usize, usize)> = m
            .drop_overrides
            .iter()
            .filter_map(|&(high, low)| match (nf_at[high], nf_at[low]) {
                (Some((gh, h)), Some((gl, l))) if gh == m.group && gl == m.group => Some((h, l)),
                _ => None,
            })
            .collect();
        let prio = crate::graph::override_priorities(n, &pairs);
        let mut args = inputs.join(", ");
        let _ = write!(args, ", TIMEOUT {merge_timeout}");
        // Named, so that the merger's base is the one `unmergeable`
        // checked (the reshaper's version has the output's headers).
        let _ = write!(args, ", BASE {}", m.base);
        if prio.iter().any(|&p| p != 0) {
            let p: Vec<String> = prio.iter().map(i32::to_string).collect();
            let _ = write!(args, ", PRIORITY {}", p.join(" "));
        }
        args
    };
    let merger_mac = |g: usize, j: usize| mac(chain, 2, g * 256 + j);
    let nf_mac = |i: usize| match &bodies[i] {
        NfBody::Running { mac, .. } => mac.clone(),
        NfBody::Compound(_) => mac(chain, 1, i),
    };
    let node_mac = |n: Node| match n {
        Node::Classifier => mac(chain, 0, 0),
        Node::Nf(i) => nf_mac(i),
        Node::Merger(g) => match colocated.get(g).copied().flatten() {
            Some(j) => nf_mac(j),
            None => merger_mac(g, 0),
        },
    };
    let target_mac = |t: Target| match t {
        Target::Nf(i) => node_mac(Node::Nf(i)),
        Target::Merger(g) => node_mac(Node::Merger(g)),
        Target::Out => out_mac.to_string(),
    };
    // The merger input a version from node `from` arrives on.
    let branch_into = |from: Node, g: usize| -> usize {
        let at = match from {
            Node::Nf(i) => nf_at[i],
            Node::Merger(inner) => group_at.get(inner).copied().flatten(),
            Node::Classifier => None,
        };
        match at {
            Some((grp, b)) if grp == g => b,
            _ => 0,
        }
    };
    // What `from` does with a packet: a version per next hop.
    let fanout = |from: Node, own: &str, fwd: Option<&Forward>, text: &mut String, tail: &str| {
        let hops = fwd.map(|f| f.hops.clone()).unwrap_or_default();
        let _ = writeln!(text, "nfp_out :: Queue(1024) -> ToDevice(eth0);");
        let send = |text: &mut String, src: &str, to: Target, hop: usize| match to {
            Target::Merger(g) if mergers > 1 => {
                // Each packet to the merger its id belongs to.
                let _ = writeln!(
                    text,
                    "{src} -> NFPEncap(BRANCH {}) -> nfp_ms{hop} :: NFPMergerSwitch;",
                    branch_into(from, g)
                );
                for j in 0..mergers {
                    let _ = writeln!(
                        text,
                        "nfp_ms{hop}[{j}] -> EtherRewrite(SRC {own}, DST {}) -> nfp_out;",
                        merger_mac(g, j)
                    );
                }
            }
            Target::Out => {
                let _ = writeln!(
                    text,
                    "{src} -> EtherRewrite(SRC {own}, DST {}) -> nfp_out;",
                    target_mac(to)
                );
            }
            Target::Merger(g) => {
                let _ = writeln!(
                    text,
                    "{src} -> NFPEncap(BRANCH {}) -> EtherRewrite(SRC {own}, DST {}) -> nfp_out;",
                    branch_into(from, g),
                    target_mac(to)
                );
            }
            Target::Nf(_) => {
                let _ = writeln!(
                    text,
                    "{src} -> NFPEncap -> EtherRewrite(SRC {own}, DST {}) -> nfp_out;",
                    target_mac(to)
                );
            }
        };
        match hops.as_slice() {
            [] => {
                let _ = writeln!(text, "{tail} -> Discard;");
            }
            [one] => send(text, tail, one.to, 0),
            many => {
                let kinds: Vec<&str> = many
                    .iter()
                    .enumerate()
                    .map(|(i, h)| match (i, h.delivery) {
                        (0, _) => "orig",
                        (_, HopDelivery::Copy { .. }) | (_, HopDelivery::Packet) => "full",
                    })
                    .collect();
                let _ = writeln!(text, "{tail} -> nfp_copy :: NFPCopy({});", kinds.join(", "));
                for (i, h) in many.iter().enumerate() {
                    send(text, &format!("nfp_copy[{i}]"), h.to, i);
                }
            }
        }
    };
    let mut out = Vec::new();
    // The classifier: the chain's entry.
    let mut text = format!(
        "// The entry of chain {prefix}: tags packets, sends them on.\n\
         FromDevice(eth0) -> nfp_tag :: NFPTag({chain}, MERGERS {mergers});\n"
    );
    fanout(
        Node::Classifier,
        &node_mac(Node::Classifier),
        plan.forward(Node::Classifier),
        &mut text,
        "nfp_tag",
    );
    out.push(Instance {
        name: format!("{prefix}-in"),
        mac: node_mac(Node::Classifier),
        config: text,
        role: "classifier".into(),
        existing: false,
        memory: None,
    });
    for (i, nf) in plan.nfs.iter().enumerate() {
        let body = match &bodies[i] {
            NfBody::Compound(b) => b,
            NfBody::Running {
                name,
                config,
                iface,
                mac,
            } => {
                let hops = plan
                    .forward(Node::Nf(i))
                    .map(|f| f.hops.clone())
                    .unwrap_or_default();
                let [hop] = hops.as_slice() else {
                    return Err(format!(
                        "NF {} (instance {name}) would send to {} next hops; a running instance \
                         joins a chain where it sends to one (declare the NF as click(\"FILE\") \
                         to run a new instance of it)",
                        nf.name,
                        hops.len()
                    ));
                };
                let rewrite = |dst: &str| ("EtherRewrite", format!("SRC {mac}, DST {dst}"));
                let egress = match hop.to {
                    Target::Out => vec![rewrite(out_mac)],
                    Target::Merger(g) if mergers > 1 => {
                        return Err(format!(
                            "NF {} (instance {name}) feeds merger {g}, which --mergers {mergers} \
                             splits; a running instance sends to one merger",
                            nf.name
                        ))
                    }
                    Target::Merger(g) => vec![
                        (
                            "NFPEncap",
                            format!("BRANCH {}", branch_into(Node::Nf(i), g)),
                        ),
                        rewrite(&target_mac(hop.to)),
                    ],
                    Target::Nf(_) => {
                        vec![("NFPEncap", String::new()), rewrite(&target_mac(hop.to))]
                    }
                };
                let config = crate::rewire::rewire(
                    name,
                    config,
                    iface,
                    &[("NFPDecap", String::new())],
                    &egress,
                )?;
                out.push(Instance {
                    name: name.clone(),
                    mac: mac.clone(),
                    config: format!("// NF {} of chain {prefix}.\n{config}", nf.name),
                    role: format!("nf {}, a running instance", nf.name),
                    existing: true,
                    memory: None,
                });
                continue;
            }
        };
        let class = format!(
            "NF_{}",
            nf.name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect::<String>()
        );
        let mut text = format!(
            "// NF {} of chain {prefix}.\nelementclass {class} {{\n{}\n}}\n",
            nf.name,
            body.trim()
        );
        // The merger of the group before it, if it runs here.
        let merge_here = plan
            .merges
            .iter()
            .find(|m| colocated.get(m.group).copied().flatten() == Some(i));
        let mut role = format!("nf {}", nf.name);
        match merge_here {
            Some(m) => {
                let _ = writeln!(
                    text,
                    "FromDevice(eth0) -> NFPDecap -> nfp_branch :: PaintSwitch;\n\
                     nfp_merge :: NFPMerge({}) -> nf :: {class};",
                    merge_args(m)
                );
                for b in 0..m.versions {
                    let _ = writeln!(text, "nfp_branch[{b}] -> [{b}]nfp_merge;");
                }
                let _ = write!(role, " with merger {}", m.group);
            }
            None => {
                let _ = writeln!(text, "FromDevice(eth0) -> NFPDecap -> nf :: {class};");
            }
        }
        fanout(
            Node::Nf(i),
            &node_mac(Node::Nf(i)),
            plan.forward(Node::Nf(i)),
            &mut text,
            "nf",
        );
        out.push(Instance {
            name: format!("{prefix}-{}", nf.name),
            mac: node_mac(Node::Nf(i)),
            config: text,
            role,
            existing: false,
            memory: merge_here.map(|m| merger_memory(m.versions)),
        });
    }
    for m in &plan.merges {
        if colocated.get(m.group).copied().flatten().is_some() {
            continue;
        }
        let args = merge_args(m);
        for j in 0..mergers {
            let mut text = format!(
                "// Merger {} of chain {prefix}{}.\n\
                 FromDevice(eth0) -> NFPDecap -> nfp_branch :: PaintSwitch;\n\
                 nfp_merge :: NFPMerge({args});\n",
                m.group,
                if mergers > 1 {
                    format!(" ({} of {mergers}, by packet)", j + 1)
                } else {
                    String::new()
                }
            );
            for b in 0..m.versions {
                let _ = writeln!(text, "nfp_branch[{b}] -> [{b}]nfp_merge;");
            }
            let own = merger_mac(m.group, j);
            fanout(
                Node::Merger(m.group),
                &own,
                plan.forward(Node::Merger(m.group)),
                &mut text,
                "nfp_merge",
            );
            out.push(Instance {
                name: if mergers > 1 {
                    format!("{prefix}-merge{}-{j}", m.group)
                } else {
                    format!("{prefix}-merge{}", m.group)
                },
                mac: own,
                config: text,
                role: format!("merger {}", m.group),
                existing: false,
                memory: Some(merger_memory(m.versions)),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_merger_instance_gets_the_memory_its_window_can_hold() {
        // (4,096 x 2 + 4,096) slots of 2,176 bytes, as three quarters of
        // the memory: 34 MiB; five inputs: 68 MiB; never below 32 MiB.
        assert_eq!(merger_memory(2), 34 << 20);
        assert_eq!(merger_memory(5), 68 << 20);
        assert_eq!(merger_memory(0), 32 << 20);
        let window_packets = |v: u64| (MERGE_WINDOW * v + 4096) as usize;
        for v in 1..=8 {
            let slots = (merger_memory(v as usize) / 4 * 3) as usize / pronto_packet::SLOT_STRIDE;
            assert!(slots >= window_packets(v), "{v} inputs: {slots} slots");
        }
    }

    use super::*;

    fn plan(text: &str) -> Plan {
        crate::Policy::parse("t.nfp", text)
            .expect("parses")
            .compile()
            .expect("compiles")
    }

    fn deploy(plan: &Plan, bodies: &[NfBody], mergers: usize) -> Result<Vec<Instance>, String> {
        instances(
            plan,
            bodies,
            &Deploy {
                prefix: "c",
                chain: 1,
                out_mac: "02:00:00:00:00:99",
                mergers,
                merge_timeout: "10ms",
            },
        )
    }

    /// Two writers of different fields side by side, then a reader of
    /// both.
    const GROUP_THEN_NF: &str = "nf a = opaque(writes: src_ip)\nnf b = opaque(writes: dst_ip)\n\
                                 nf w = opaque(reads: src_ip dst_ip)\n\
                                 order(a, before, w)\norder(b, before, w)\n";

    fn compound(n: usize) -> Vec<NfBody> {
        (0..n)
            .map(|_| NfBody::Compound("input -> output;".into()))
            .collect()
    }

    #[test]
    fn a_merger_runs_inside_the_nf_it_feeds() {
        let p = plan(GROUP_THEN_NF);
        assert_eq!(p.merges.len(), 1);
        let insts = deploy(&p, &compound(3), 1).expect("deploys");
        let roles: Vec<&str> = insts.iter().map(|i| i.role.as_str()).collect();
        assert_eq!(roles, ["classifier", "nf a", "nf b", "nf w with merger 0"]);
        let w = &insts[3];
        assert!(
            w.config
                .contains("nfp_merge :: NFPMerge(orig src_ip, full dst_ip, TIMEOUT 10ms, BASE 0) -> nf :: NF_w;"),
            "{}",
            w.config
        );
        // The branches send their versions, each with its merger input,
        // to w's port.
        assert!(
            insts[1].config.contains(&format!(
                "NFPEncap(BRANCH 0) -> EtherRewrite(SRC {}, DST {})",
                insts[1].mac, w.mac
            )),
            "{}",
            insts[1].config
        );
        assert!(
            insts[2].config.contains(&format!(
                "NFPEncap(BRANCH 1) -> EtherRewrite(SRC {}, DST {})",
                insts[2].mac, w.mac
            )),
            "{}",
            insts[2].config
        );
        // With two mergers sharing the packets, they are instances of
        // their own.
        let insts = deploy(&p, &compound(3), 2).expect("deploys");
        let names: Vec<&str> = insts.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(
            names,
            ["c-in", "c-a", "c-b", "c-w", "c-merge0-0", "c-merge0-1"]
        );
        assert_eq!(insts[3].role, "nf w");
    }

    #[test]
    fn a_running_instance_is_rewired_and_keeps_its_address() {
        let p = plan(GROUP_THEN_NF);
        let mut bodies = compound(3);
        bodies[0] = NfBody::Running {
            name: "fw1".into(),
            config: "FromDevice(eth0) -> c :: Counter -> Queue -> ToDevice(eth0);".into(),
            iface: "eth0".into(),
            mac: "02:00:00:00:00:0a".into(),
        };
        let insts = deploy(&p, &bodies, 1).expect("deploys");
        let fw = insts.iter().find(|i| i.name == "fw1").expect("fw1");
        assert!(fw.existing);
        assert_eq!(fw.role, "nf a, a running instance");
        assert!(fw.config.contains("NFPDecap"), "{}", fw.config);
        assert!(fw.config.contains("BRANCH 0"), "{}", fw.config);
        // The entry sends to the instance's own address.
        assert!(
            insts[0].config.contains("DST 02:00:00:00:00:0a"),
            "{}",
            insts[0].config
        );
        // It cannot feed a merger that --mergers splits.
        assert_eq!(
            deploy(&p, &bodies, 2).expect_err("refused"),
            "NF a (instance fw1) feeds merger 0, which --mergers 2 splits; a running instance \
             sends to one merger"
        );
    }

    #[test]
    fn a_reshaping_group_is_merged_on_the_reshapers_version() {
        let p = plan(
            "nf m = opaque(reads: src_ip)\nnf t = opaque(reads: , writes: , drops: yes, reshapes: yes)\n\
             order(m, before, t)\n",
        );
        assert_eq!(p.merges[0].layout.map(|l| l.0), Some(1));
        let insts = deploy(&p, &compound(2), 1).expect("deploys");
        let merger = insts.iter().find(|i| i.role == "merger 0").expect("merger");
        assert!(
            merger
                .config
                .contains("NFPMerge(full, orig, TIMEOUT 10ms, BASE 1)"),
            "{}",
            merger.config
        );
    }
}
