//! Graphviz DOT text: nodes as boxes labelled with name and class, the
//! elements of each compound (names with `/`) in a cluster, port numbers
//! on the edges' ends where a node has more than one port on that side.

use std::fmt::Write as _;

use crate::Graph;

/// A DOT quoted string.
pub(crate) fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => {}
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// A compound's cluster: its own elements and its sub-compounds.
#[derive(Default)]
struct Cluster {
    name: String,
    nodes: Vec<usize>,
    children: Vec<Cluster>,
}

impl Cluster {
    fn insert(&mut self, path: &[&str], node: usize, prefix: &str) {
        match path.split_first() {
            None => self.nodes.push(node),
            Some((first, rest)) => {
                let full = if prefix.is_empty() {
                    (*first).to_string()
                } else {
                    format!("{prefix}/{first}")
                };
                let i = match self.children.iter().position(|c| c.name == full) {
                    Some(i) => i,
                    None => {
                        self.children.push(Cluster {
                            name: full.clone(),
                            ..Cluster::default()
                        });
                        self.children.len() - 1
                    }
                };
                self.children[i].insert(rest, node, &full);
            }
        }
    }

    fn write(&self, g: &Graph, out: &mut String, depth: usize) {
        let pad = "  ".repeat(depth);
        for &i in &self.nodes {
            let n = &g.nodes[i];
            let mut attrs = format!("label={}", quote(&format!("{}\n{}", n.name, n.class)));
            if let Some(l) = &n.label {
                let _ = write!(attrs, ", xlabel={}", quote(l));
            }
            let _ = writeln!(out, "{pad}{} [{attrs}];", quote(&n.name));
        }
        for c in &self.children {
            let _ = writeln!(
                out,
                "{pad}subgraph {} {{",
                quote(&format!("cluster_{}", c.name))
            );
            let _ = writeln!(out, "{pad}  label={};", quote(&c.name));
            c.write(g, out, depth + 1);
            let _ = writeln!(out, "{pad}}}");
        }
    }
}

pub(crate) fn render(g: &Graph, name: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "digraph {} {{", quote(name));
    out.push_str("  rankdir=TB;\n");
    out.push_str("  node [shape=box, fontname=\"monospace\", fontsize=10];\n");
    out.push_str("  edge [fontname=\"monospace\", fontsize=9];\n");
    let mut root = Cluster::default();
    for (i, n) in g.nodes.iter().enumerate() {
        let parts: Vec<&str> = n.name.split('/').collect();
        let compounds = &parts[..parts.len().saturating_sub(1)];
        root.insert(compounds, i, "");
    }
    root.write(g, &mut out, 1);
    for e in &g.edges {
        let (f, t) = (&g.nodes[e.from], &g.nodes[e.to]);
        let mut attrs = Vec::new();
        if f.outputs > 1 {
            attrs.push(format!("taillabel={}", quote(&e.from_port.to_string())));
        }
        if t.inputs > 1 {
            attrs.push(format!("headlabel={}", quote(&e.to_port.to_string())));
        }
        if let Some(l) = &e.label {
            attrs.push(format!("label={}", quote(l)));
        }
        let attrs = if attrs.is_empty() {
            String::new()
        } else {
            format!(" [{}]", attrs.join(", "))
        };
        let _ = writeln!(out, "  {} -> {}{attrs};", quote(&f.name), quote(&t.name));
    }
    out.push_str("}\n");
    out
}
