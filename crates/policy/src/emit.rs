//! A compiled chain as one Click configuration, for `pronto chain run`
//! and the sequential-versus-parallel harness.
//!
//! Each NF's Click file is a compound element body (`input -> ... ->
//! output;`) and becomes `elementclass NF_name { ... }` with one element
//! `name :: NF_name`, so its elements are `name/...` in both the
//! sequential and the parallel configuration (their counters compare one
//! to one).
//!
//! In one process a packet has one owner, so a parallel group is built
//! from the NFP elements this way: the branches that share the packet
//! (delivery "the packet itself": no copy) run one after the other on it
//! — they touch disjoint fields; the one that may drop, or the one that
//! adds or removes headers, last — behind `NFPCopy`'s `orig` output; each
//! branch with a copy gets its own output (`full` or `header`); `NFPMerge`
//! joins the versions with the merge table's field owners and priorities,
//! building on the reshaping branch's version when there is one (`BASE`:
//! the output has its headers). A group the merger cannot join — where an
//! NF off the merged version writes header fields other than addresses and
//! ports (a TTL, the link header) — runs its branches in sequence instead,
//! in an order the policy allows, and says so in [`ChainConfig::notes`].

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::graph::{Branch, CopyKind, Delivery, Group, Plan, Stage};
use crate::policy::{Place, Rule};
use crate::profile::Field;

/// How to build the chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every NF one after the other, in an order the policy allows (the
    /// reference the parallel graph must equal).
    Sequential,
    /// The compiled service graph.
    Parallel,
}

/// Where packets come from and go, and the merger's bounded wait.
#[derive(Clone, Debug)]
pub struct Io {
    /// The source element, e.g. `FromDump(in.pcap, STOP true)`.
    pub source: String,
    /// The sink element, e.g. `ToDump(out.pcap)`.
    pub sink: String,
    /// `NFPMerge`'s TIMEOUT, e.g. `10ms`.
    pub merge_timeout: String,
    /// Extra configuration lines (a `DriverManager`, say).
    pub extra: String,
}

/// The configuration text and what the emitter had to decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainConfig {
    /// Click configuration text.
    pub text: String,
    /// Groups run in sequence, and why.
    pub notes: Vec<String>,
}

/// The class name of NF `name`'s compound element.
fn class_of(name: &str) -> String {
    let mut c = String::from("NF_");
    c.extend(
        name.chars()
            .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' }),
    );
    c
}

/// Every NF in an order the policy allows: `position(_, first)` first,
/// `last` last, every `order` rule kept, otherwise declaration order.
pub fn sequential_order(plan: &Plan) -> Vec<usize> {
    let n = plan.nfs.len();
    let mut before: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut first = None;
    let mut last = None;
    for r in &plan.rules {
        match *r {
            Rule::Order {
                before: b, after, ..
            } => before[after].push(b),
            Rule::Position { nf, place, .. } => match place {
                Place::First => first = Some(nf),
                Place::Last => last = Some(nf),
            },
            Rule::Priority { .. } => {}
        }
    }
    for (i, deps) in before.iter_mut().enumerate() {
        if let Some(f) = first {
            if i != f {
                deps.push(f);
            }
        }
    }
    if let Some(l) = last {
        for (i, deps) in before.iter_mut().enumerate() {
            if i == l {
                deps.extend((0..n).filter(|&j| j != l));
            }
        }
    }
    let mut done = vec![false; n];
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        // The policy was checked for cycles: some NF is always ready.
        let Some(i) = (0..n).find(|&i| !done[i] && before[i].iter().all(|&b| done[b])) else {
            break;
        };
        done[i] = true;
        out.push(i);
    }
    out
}

/// `plan` made sequential: every NF one after the other in
/// [`sequential_order`], no parallel group (the baseline a compiled graph
/// is measured against).
pub fn sequential_plan(plan: &Plan) -> Plan {
    let mut p = plan.clone();
    p.graph.stages = sequential_order(plan).into_iter().map(Stage::Nf).collect();
    p.forwarding = crate::tables::forwarding(&p.graph);
    p.merges.clear();
    p
}

struct Emitter<'a> {
    plan: &'a Plan,
    order: Vec<usize>,
    timeout: String,
    lines: String,
    notes: Vec<String>,
    copies: usize,
}

impl Emitter<'_> {
    fn connect(&mut self, from: &str, to: &str) {
        let _ = writeln!(self.lines, "{from} -> {to};");
    }

    fn name(&self, nf: usize) -> &str {
        &self.plan.nfs[nf].name
    }

    /// Emits `stages` after `from`; returns the endpoint they end at.
    fn stages(&mut self, stages: &[Stage], mut from: String) -> String {
        for s in stages {
            from = match s {
                Stage::Nf(i) => {
                    let n = self.name(*i).to_string();
                    self.connect(&from, &n);
                    n
                }
                Stage::Parallel(g) => self.group(g, from),
            };
        }
        from
    }

    /// Runs the NFs of `g` one after the other, in policy order.
    fn in_sequence(&mut self, g: &Group, from: String, why: String) -> String {
        let mut nfs = Vec::new();
        g.branches
            .iter()
            .for_each(|b| crate::graph::nfs_of(&b.stages, &mut nfs));
        let set: BTreeSet<usize> = nfs.into_iter().collect();
        let names: Vec<String> = self
            .order
            .iter()
            .filter(|i| set.contains(i))
            .map(|&i| self.name(i).to_string())
            .collect();
        self.notes.push(format!(
            "group {} ({}) runs in sequence: {why}",
            g.id,
            names.join(", ")
        ));
        let mut from = from;
        for n in names {
            self.connect(&from, &n);
            from = n;
        }
        from
    }

    fn group(&mut self, g: &Group, from: String) -> String {
        let Some(merge) = self.plan.merges.iter().find(|m| m.group == g.id) else {
            return self.in_sequence(g, from, "it has no merge table entry".into());
        };
        // The branch that adds or removes headers: the output is its
        // version.
        let layout = merge.layout.map(|l| l.0);
        let branch_of = |nf: usize| {
            g.branches.iter().position(|b| {
                let mut v = Vec::new();
                crate::graph::nfs_of(&b.stages, &mut v);
                v.contains(&nf)
            })
        };
        // Deliveries; a branch whose drop a priority can overrule needs
        // its own version (on a shared packet its drop would be final).
        let mut delivery: Vec<Delivery> = g.branches.iter().map(|b| b.delivery).collect();
        for &(_, low) in &merge.drop_overrides {
            if let Some(b) = branch_of(low) {
                if delivery[b] == Delivery::Packet {
                    delivery[b] = Delivery::Copy(CopyKind::Full);
                }
            }
        }
        // Branches sharing the packet run one after the other on it, so a
        // branch after one that drops would miss packets: at most one
        // sharing branch may drop, and it runs last; the other droppers
        // get their own copies.
        let branch_nfs = |b: usize| {
            let mut v = Vec::new();
            crate::graph::nfs_of(&g.branches[b].stages, &mut v);
            v
        };
        let drops = |b: usize| {
            branch_nfs(b)
                .iter()
                .any(|&nf| self.plan.nfs[nf].profile.drops)
        };
        // The reshaping branch needs a version of its own (not headers
        // alone); sharing the packet, it runs last, as the dropper would.
        if let Some(l) = layout {
            if delivery[l] == Delivery::Copy(CopyKind::HeaderOnly) {
                delivery[l] = Delivery::Copy(CopyKind::Full);
            }
        }
        let mut kept_dropper = layout.is_some_and(|l| delivery[l] == Delivery::Packet);
        let sharing_droppers: Vec<usize> = (0..g.branches.len())
            .filter(|&b| delivery[b] == Delivery::Packet && drops(b) && Some(b) != layout)
            .collect();
        for b in sharing_droppers {
            if !kept_dropper {
                kept_dropper = true;
                continue;
            }
            let payload = branch_nfs(b).iter().any(|&nf| {
                let p = &self.plan.nfs[nf].profile;
                p.reads.contains(Field::Payload) || p.writes.contains(Field::Payload)
            });
            delivery[b] = Delivery::Copy(if payload {
                CopyKind::Full
            } else {
                CopyKind::HeaderOnly
            });
        }
        // Input 0: the packet itself, through every sharing branch.
        let mut shared: Vec<usize> = (0..g.branches.len())
            .filter(|&b| delivery[b] == Delivery::Packet)
            .collect();
        // The dropping (or reshaping) one last.
        shared.sort_by_key(|&b| Some(b) == layout || drops(b));
        let shared: Vec<&Branch> = shared.iter().map(|&b| &g.branches[b]).collect();
        let copied: Vec<usize> = (0..g.branches.len())
            .filter(|&b| delivery[b] != Delivery::Packet)
            .collect();
        let mut kinds = vec!["orig".to_string()];
        let mut input_of = vec![0usize; g.branches.len()];
        for (j, &b) in copied.iter().enumerate() {
            kinds.push(
                match delivery[b] {
                    Delivery::Copy(CopyKind::HeaderOnly) => "header",
                    _ => "full",
                }
                .to_string(),
            );
            input_of[b] = j + 1;
        }
        // The input whose version the output is built on: the reshaper's,
        // else the payload owner's, else the original.
        let base = match layout {
            Some(l) => input_of[l],
            None => merge
                .fields
                .iter()
                .find(|o| o.field == Field::Payload)
                .map_or(0, |o| input_of[o.branch]),
        };
        // An NF off the base version that writes header fields the merger
        // does not take would lose them.
        for (b, br) in g.branches.iter().enumerate() {
            if input_of[b] == base {
                continue;
            }
            let mut v = Vec::new();
            crate::graph::nfs_of(&br.stages, &mut v);
            if let Some(&nf) = v
                .iter()
                .find(|&&nf| self.plan.nfs[nf].profile.writes.contains(Field::Other))
            {
                let why = format!(
                    "{} writes header fields other than addresses and ports off the merged \
                     version, which the merger does not take",
                    self.name(nf)
                );
                return self.in_sequence(g, from, why);
            }
        }
        self.copies += 1;
        let k = self.copies;
        let cp = format!("nfp_copy{k}");
        let m = format!("nfp_merge{k}");
        let mut fields: Vec<Vec<&'static str>> = vec![Vec::new(); kinds.len()];
        for o in &merge.fields {
            if o.field == Field::Other {
                continue;
            }
            let input = input_of[o.branch];
            if !fields[input].contains(&o.field.name()) {
                fields[input].push(o.field.name());
            }
        }
        // Priorities: the winner of each override above the loser.
        let pairs: Vec<(usize, usize)> = merge
            .drop_overrides
            .iter()
            .filter_map(|&(high, low)| {
                Some((input_of[branch_of(high)?], input_of[branch_of(low)?]))
            })
            .collect();
        let prio = crate::graph::override_priorities(kinds.len(), &pairs);
        let _ = writeln!(self.lines, "{cp} :: NFPCopy({});", kinds.join(", "));
        let inputs: Vec<String> = kinds
            .iter()
            .zip(&fields)
            .map(|(k, f)| {
                if f.is_empty() {
                    k.clone()
                } else {
                    format!("{k} {}", f.join(" "))
                }
            })
            .collect();
        let mut args = inputs.join(", ");
        let _ = write!(args, ", TIMEOUT {}", self.timeout);
        if layout.is_some() {
            let _ = write!(args, ", BASE {base}");
        }
        if prio.iter().any(|&p| p != 0) {
            let p: Vec<String> = prio.iter().map(i32::to_string).collect();
            let _ = write!(args, ", PRIORITY {}", p.join(" "));
        }
        let _ = writeln!(self.lines, "{m} :: NFPMerge({args});");
        self.connect(&from, &cp);
        let mut tail = format!("{cp}[0]");
        for br in shared {
            tail = self.stages(&br.stages, tail);
        }
        self.connect(&tail, &format!("[0]{m}"));
        for (j, &b) in copied.iter().enumerate() {
            let tail = self.stages(&g.branches[b].stages, format!("{cp}[{}]", j + 1));
            self.connect(&tail, &format!("[{}]{m}", j + 1));
        }
        m
    }
}

/// The Click configuration of `plan` run as `mode`; `bodies[i]` is the
/// compound body of `plan.nfs[i]`.
pub fn emit(plan: &Plan, bodies: &[String], mode: Mode, io: &Io) -> Result<ChainConfig, String> {
    if bodies.len() != plan.nfs.len() {
        return Err(format!(
            "{} NFs but {} Click bodies",
            plan.nfs.len(),
            bodies.len()
        ));
    }
    let mut e = Emitter {
        plan,
        order: sequential_order(plan),
        timeout: io.merge_timeout.clone(),
        lines: String::new(),
        notes: Vec::new(),
        copies: 0,
    };
    let mut text = String::new();
    let _ = writeln!(
        text,
        "// {} as {}, made by `pronto chain` from {}",
        if mode == Mode::Parallel {
            "the compiled service graph"
        } else {
            "the sequential chain"
        },
        if mode == Mode::Parallel {
            "NFP elements"
        } else {
            "one path"
        },
        plan.file
    );
    for (nf, body) in plan.nfs.iter().zip(bodies) {
        let _ = writeln!(
            text,
            "elementclass {} {{\n{}\n}}",
            class_of(&nf.name),
            body.trim()
        );
        let _ = writeln!(text, "{} :: {};", nf.name, class_of(&nf.name));
    }
    let _ = writeln!(text, "nfp_source :: {};", io.source);
    let _ = writeln!(text, "nfp_sink :: {};", io.sink);
    let tail = match mode {
        Mode::Sequential => {
            let mut from = "nfp_source".to_string();
            for i in e.order.clone() {
                let n = e.name(i).to_string();
                e.connect(&from, &n);
                from = n;
            }
            from
        }
        Mode::Parallel => {
            e.connect("nfp_source", "nfp_tag :: NFPTag");
            e.stages(&plan.graph.stages, "nfp_tag".to_string())
        }
    };
    e.connect(&tail, "nfp_sink");
    text.push_str(&e.lines);
    text.push_str(&io.extra);
    Ok(ChainConfig {
        text,
        notes: e.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequential_plan_keeps_the_policy_order_and_has_no_merger() {
        let policy = crate::Policy::parse(
            "dc.nfp",
            "nf vpn = builtin(vpn)\nnf monitor = builtin(monitor)\nnf fw = builtin(firewall)\n\
             nf lb = builtin(lb)\nposition(vpn, first)\norder(fw, before, lb)\n\
             order(monitor, before, lb)\n",
        )
        .expect("parses");
        let plan = policy.compile().expect("compiles");
        assert_eq!(plan.graph.longest_path(), 3);
        let seq = sequential_plan(&plan);
        assert_eq!(seq.graph.longest_path(), 4);
        assert!(seq.merges.is_empty());
        let names: Vec<&str> = sequential_order(&plan)
            .into_iter()
            .map(|i| plan.nfs[i].name.as_str())
            .collect();
        assert_eq!(names, ["vpn", "monitor", "fw", "lb"]);
        // Every hop goes to the next NF, the last one out.
        assert_eq!(seq.forwarding.len(), 5);
        assert!(seq.forwarding.iter().all(|f| f.hops.len() == 1));
    }
}
