//! Text and Graphviz renderings of a compiled plan.

use std::fmt::Write as _;

use crate::graph::{
    Delivery, Group, HopDelivery, Merge, Node, Placement, Plan, Relation, Stage, Target,
};
use crate::policy::{Place, Rule};

fn branch_letter(i: usize) -> String {
    let mut s = String::new();
    let mut i = i;
    loop {
        s.insert(0, char::from(b'a' + (i % 26) as u8));
        if i < 26 {
            return s;
        }
        i = i / 26 - 1;
    }
}

fn delivery_text(d: Delivery) -> &'static str {
    match d {
        Delivery::Packet => "packet",
        Delivery::Copy(k) => k.describe(),
    }
}

impl Plan {
    fn name(&self, nf: usize) -> &str {
        &self.nfs[nf].name
    }

    fn target(&self, t: Target) -> String {
        match t {
            Target::Nf(x) => self.name(x).to_string(),
            Target::Merger(g) => format!("merger {g}"),
            Target::Out => "out".to_string(),
        }
    }

    fn node(&self, n: Node) -> String {
        match n {
            Node::Classifier => "classifier".to_string(),
            Node::Nf(x) => self.name(x).to_string(),
            Node::Merger(g) => format!("merger {g}"),
        }
    }

    /// The first NF of `stages`, depth first.
    fn graph_first_nf(&self, stages: &[Stage]) -> Option<usize> {
        stages.iter().find_map(|s| match s {
            Stage::Nf(x) => Some(*x),
            Stage::Parallel(g) => g
                .branches
                .iter()
                .find_map(|b| self.graph_first_nf(&b.stages)),
        })
    }

    fn simple_chain(&self, stages: &[Stage]) -> Option<String> {
        stages
            .iter()
            .map(|s| match s {
                Stage::Nf(x) => Some(self.name(*x).to_string()),
                Stage::Parallel(_) => None,
            })
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(" -> "))
    }

    fn stages_text(&self, out: &mut String, stages: &[Stage], indent: usize) {
        for (i, s) in stages.iter().enumerate() {
            let pad = " ".repeat(indent);
            match s {
                Stage::Nf(x) => {
                    let pin = match self.nfs[*x].pin {
                        Some(p) => format!("  [position {}]", p.name()),
                        None => String::new(),
                    };
                    let _ = writeln!(out, "{pad}{}. {}{pin}", i + 1, self.name(*x));
                }
                Stage::Parallel(g) => {
                    let _ = writeln!(
                        out,
                        "{pad}{}. parallel group {} ({} branches, joined by merger {}):",
                        i + 1,
                        g.id,
                        g.branches.len(),
                        g.id
                    );
                    self.group_text(out, g, indent + 3);
                }
            }
        }
    }

    fn group_text(&self, out: &mut String, g: &Group, indent: usize) {
        let pad = " ".repeat(indent);
        for (j, b) in g.branches.iter().enumerate() {
            let head = format!(
                "{pad}branch {} ({})",
                branch_letter(j),
                delivery_text(b.delivery)
            );
            match self.simple_chain(&b.stages) {
                Some(chain) => {
                    let _ = writeln!(out, "{head}: {chain}");
                }
                None => {
                    let _ = writeln!(out, "{head}:");
                    self.stages_text(out, &b.stages, indent + 3);
                }
            }
        }
    }

    fn merge_text(&self, m: &Merge) -> String {
        let group = self.graph.groups().into_iter().find(|g| g.id == m.group);
        let branch = |b: usize| {
            let stages = group
                .and_then(|g| g.branches.get(b))
                .map(|br| &br.stages[..]);
            let what = stages.and_then(|s| {
                self.simple_chain(s).or_else(|| {
                    self.graph_first_nf(s)
                        .map(|x| format!("{} ...", self.name(x)))
                })
            });
            match what {
                Some(w) => format!("branch {} ({w})", branch_letter(b)),
                None => format!("branch {}", branch_letter(b)),
            }
        };
        let mut s = format!(
            "merger {}: waits for {} versions; output built from {}",
            m.group,
            m.versions,
            branch(m.base)
        );
        if m.fields.is_empty() {
            s.push_str("; no field written");
        } else {
            let f: Vec<String> = m
                .fields
                .iter()
                .map(|o| {
                    let only = group
                        .and_then(|g| g.branches.get(o.branch))
                        .is_some_and(|b| b.stages == [Stage::Nf(o.nf)]);
                    if only {
                        format!("{} from {}", o.field, branch(o.branch))
                    } else {
                        format!(
                            "{} from {}, written by {}",
                            o.field,
                            branch(o.branch),
                            self.name(o.nf)
                        )
                    }
                })
                .collect();
            let _ = write!(s, "; fields: {}", f.join(", "));
        }
        s.push_str("; dropped if any branch drops it");
        for (h, l) in &m.drop_overrides {
            let _ = write!(
                s,
                ", except a drop by {} when {} passed it",
                self.name(*l),
                self.name(*h)
            );
        }
        match m.layout {
            Some((_, nf)) => {
                let _ = write!(s, "; headers as {} added or removed them", self.name(nf));
            }
            None => s.push_str("; headers unchanged"),
        }
        s
    }

    /// A human-readable rendering: the service graph, the analysis of
    /// every pair, the forwarding table and the merge table.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let n = self.nfs.len();
        let _ = writeln!(
            out,
            "{}: {} network function{}, longest path {} (a sequential chain: {})",
            self.file,
            n,
            if n == 1 { "" } else { "s" },
            self.graph.longest_path(),
            n
        );
        out.push_str("\nservice graph:\n");
        self.stages_text(&mut out, &self.graph.stages, 2);

        out.push_str("\nprofiles:\n");
        let width = self.nfs.iter().map(|nf| nf.name.len()).max().unwrap_or(0);
        for nf in &self.nfs {
            let _ = writeln!(out, "  {:width$}  {}", nf.name, nf.profile);
        }

        out.push_str("\nanalysis:\n");
        for nf in self.nfs.iter().filter(|nf| nf.pin.is_some()) {
            let where_ = if nf.pin == Some(Place::First) {
                "the head"
            } else {
                "the tail"
            };
            let _ = writeln!(out, "  {}: pinned to {where_}, runs alone", nf.name);
        }
        for p in &self.pairs {
            let (a, b) = (self.name(p.first), self.name(p.second));
            let rel = match p.relation {
                Relation::Order => format!("{a} before {b}"),
                Relation::Priority => format!("{a} > {b} (priority)"),
                Relation::Unordered => format!("{a}, {b} (no rule; analysed as {a} before {b})"),
            };
            let placed = match (p.placement, p.result.is_parallel()) {
                (Placement::Parallel, _) => "placed in parallel".to_string(),
                (Placement::Before, false) => "placed in sequence".to_string(),
                (Placement::Before, true) => {
                    "placed in sequence (running them in parallel would not shorten the graph)"
                        .to_string()
                }
                (Placement::After, _) => format!("placed in sequence, {b} first"),
            };
            let _ = writeln!(out, "  {rel}: {}; {placed}", p.result.describe(a, b));
        }
        let priorities: Vec<String> = self
            .rules
            .iter()
            .filter_map(|r| match r {
                Rule::Priority { high, low, .. } => {
                    Some(format!("{} > {}", self.name(*high), self.name(*low)))
                }
                _ => None,
            })
            .collect();
        if !priorities.is_empty() {
            let _ = writeln!(
                out,
                "  priority rules (the first NF wins conflicts): {}",
                priorities.join(", ")
            );
        }

        out.push_str("\nforwarding table:\n");
        let width = self
            .forwarding
            .iter()
            .map(|f| self.node(f.from).len())
            .max()
            .unwrap_or(0);
        for f in &self.forwarding {
            let hops: Vec<String> = f
                .hops
                .iter()
                .map(|h| match h.delivery {
                    HopDelivery::Packet => self.target(h.to),
                    HopDelivery::Copy { kind, copy } => {
                        format!("{} ({} #{copy})", self.target(h.to), kind.describe())
                    }
                })
                .collect();
            let _ = writeln!(
                out,
                "  {:width$}  -> {}",
                self.node(f.from),
                hops.join(", ")
            );
        }

        out.push_str("\nmerge table:\n");
        if self.merges.is_empty() {
            out.push_str("  (no parallel group)\n");
        }
        for m in &self.merges {
            let _ = writeln!(out, "  {}", self.merge_text(m));
        }
        out
    }

    /// A Graphviz rendering (`dot -Tsvg`): NFs as boxes, mergers as
    /// diamonds, parallel groups as dashed clusters, copies as dashed
    /// edges labelled with their kind.
    pub fn render_dot(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "digraph {} {{", quote(&self.file));
        out.push_str("  rankdir=LR;\n  node [shape=box, fontname=\"Helvetica\"];\n");
        out.push_str("  classifier [shape=ellipse];\n  out [shape=ellipse];\n");
        for (i, nf) in self.nfs.iter().enumerate() {
            let label = match nf.pin {
                Some(p) => format!("{}\\n(position {})", escape(&nf.name), p.name()),
                None => escape(&nf.name),
            };
            let _ = writeln!(out, "  nf{i} [label=\"{label}\"];");
        }
        for m in &self.merges {
            let _ = writeln!(
                out,
                "  merger{} [shape=diamond, label=\"merge {}\\n{} versions\"];",
                m.group, m.group, m.versions
            );
        }
        fn clusters(out: &mut String, stages: &[Stage], indent: usize) {
            for s in stages {
                if let Stage::Parallel(g) = s {
                    let pad = " ".repeat(indent);
                    let _ = writeln!(out, "{pad}subgraph cluster_g{} {{", g.id);
                    let _ = writeln!(
                        out,
                        "{pad}  label=\"parallel group {}\"; style=dashed;",
                        g.id
                    );
                    for b in &g.branches {
                        for st in &b.stages {
                            if let Stage::Nf(x) = st {
                                let _ = writeln!(out, "{pad}  nf{x};");
                            }
                        }
                        clusters(out, &b.stages, indent + 2);
                    }
                    let _ = writeln!(out, "{pad}}}");
                }
            }
        }
        clusters(&mut out, &self.graph.stages, 2);
        let id = |n: Node| match n {
            Node::Classifier => "classifier".to_string(),
            Node::Nf(x) => format!("nf{x}"),
            Node::Merger(g) => format!("merger{g}"),
        };
        for f in &self.forwarding {
            for h in &f.hops {
                let to = match h.to {
                    Target::Nf(x) => format!("nf{x}"),
                    Target::Merger(g) => format!("merger{g}"),
                    Target::Out => "out".to_string(),
                };
                let attrs = match h.delivery {
                    HopDelivery::Packet => String::new(),
                    HopDelivery::Copy { kind, copy } => {
                        format!(" [style=dashed, label=\"{} #{copy}\"]", kind.describe())
                    }
                };
                let _ = writeln!(out, "  {} -> {to}{attrs};", id(f.from));
            }
        }
        out.push_str("}\n");
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn quote(s: &str) -> String {
    format!("\"{}\"", escape(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_letters() {
        assert_eq!(branch_letter(0), "a");
        assert_eq!(branch_letter(25), "z");
        assert_eq!(branch_letter(26), "aa");
        assert_eq!(escape("a\"b\\"), "a\\\"b\\\\");
    }
}
