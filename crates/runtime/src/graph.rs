//! From a flat configuration to a checked element graph: classes looked up,
//! port counts inferred from the connections, push/pull resolved, every
//! connection checked. All problems are reported together.

use pronto_elements::{ClassEntry, Processing, Spec};
use pronto_lang::{Diagnostic, FlatConfig, Span};

/// One element of the checked graph.
pub(crate) struct NodeInfo {
    pub name: String,
    pub class: &'static Spec,
    pub entry: Option<ClassEntry>,
    pub config: String,
    pub span: Span,
    pub config_span: Span,
    pub ninputs: usize,
    pub noutputs: usize,
    /// Resolved mode of each input: true = push.
    pub input_push: Vec<bool>,
    /// Resolved mode of each output: true = push.
    pub output_push: Vec<bool>,
}

/// The checked graph: nodes plus, for each output, its one push target, and
/// for each input, its one pull source.
pub(crate) struct Graph {
    pub nodes: Vec<NodeInfo>,
    /// `out_conn[node][port]` = (target node, target input) for push outputs.
    pub out_conn: Vec<Vec<Option<(u32, u32)>>>,
    /// `in_conn[node][port]` = (source node, source output) for pull inputs.
    pub in_conn: Vec<Vec<Option<(u32, u32)>>>,
}

/// Looks up a class: the registry the runtime was given.
pub(crate) type Lookup<'a> = &'a dyn Fn(&str) -> Option<ClassEntry>;

fn describe(n: &NodeInfo) -> String {
    format!("`{} :: {}`", n.name, n.class.name)
}

fn range_text((lo, hi): (usize, usize)) -> String {
    match hi {
        usize::MAX if lo == 0 => "any number".to_string(),
        usize::MAX => format!("at least {lo}"),
        h if h == lo => format!("{lo}"),
        h => format!("{lo} to {h}"),
    }
}

/// Builds and checks the graph. `errors` receives every problem.
pub(crate) fn build(flat: &FlatConfig, lookup: Lookup<'_>, errors: &mut Vec<Diagnostic>) -> Graph {
    static UNKNOWN: Spec = Spec::new("<unknown>").ports("-/-").processing("a/a");
    let n = flat.elements.len();
    let mut nodes: Vec<NodeInfo> = Vec::with_capacity(n);
    for fe in &flat.elements {
        let entry = lookup(&fe.class);
        if entry.is_none() {
            errors.push(
                Diagnostic::error(
                    format!("unknown element class `{}`", fe.class),
                    Some(fe.span),
                )
                .with_label("not a known element class")
                .with_note("`pronto elements` lists the known classes"),
            );
        }
        nodes.push(NodeInfo {
            name: fe.name.clone(),
            class: entry.map(|e| e.spec).unwrap_or(&UNKNOWN),
            entry,
            config: fe.config.clone(),
            span: fe.span,
            config_span: fe.config_span,
            ninputs: 0,
            noutputs: 0,
            input_push: Vec::new(),
            output_push: Vec::new(),
        });
    }

    // Port counts: one more than the highest connected port, at least the
    // class's minimum.
    let mut max_in = vec![0usize; n];
    let mut max_out = vec![0usize; n];
    for c in &flat.connections {
        max_out[c.from] = max_out[c.from].max(c.from_port + 1);
        max_in[c.to] = max_in[c.to].max(c.to_port + 1);
    }
    for (i, node) in nodes.iter_mut().enumerate() {
        if node.entry.is_none() {
            node.ninputs = max_in[i];
            node.noutputs = max_out[i];
            continue;
        }
        for (output, used) in [(false, max_in[i]), (true, max_out[i])] {
            let (lo, hi) = node.class.port_range(output);
            let what = if output { "output" } else { "input" };
            if used > hi {
                let takes = match hi {
                    0 => format!("has no {what}s"),
                    1 => format!("has only 1 {what}"),
                    h => format!("has {} {what}s", range_text((lo, h))),
                };
                errors.push(
                    Diagnostic::error(
                        format!(
                            "{} {takes}, but {what} {} is connected",
                            describe(node),
                            used - 1
                        ),
                        Some(node.span),
                    )
                    .with_label(format!("too many {what}s")),
                );
            }
            let count = used.clamp(lo, hi.max(lo));
            if output {
                node.noutputs = count;
            } else {
                node.ninputs = count;
            }
        }
    }

    // Connections per port, checking ranges.
    let mut outs: Vec<Vec<Vec<(usize, usize, Span)>>> =
        nodes.iter().map(|n| vec![Vec::new(); n.noutputs]).collect();
    let mut ins: Vec<Vec<Vec<(usize, usize, Span)>>> =
        nodes.iter().map(|n| vec![Vec::new(); n.ninputs]).collect();
    // Ports whose only connections were invalid (already reported) are not
    // reported again as unconnected.
    let mut mentioned: std::collections::HashSet<(usize, bool, usize)> = Default::default();
    for c in &flat.connections {
        if c.from_port < outs[c.from].len() && c.to_port < ins[c.to].len() {
            outs[c.from][c.from_port].push((c.to, c.to_port, c.span));
            ins[c.to][c.to_port].push((c.from, c.from_port, c.span));
        } else {
            mentioned.insert((c.from, true, c.from_port));
            mentioned.insert((c.to, false, c.to_port));
        }
    }

    // Push/pull resolution: union-find over ports. Index: inputs then
    // outputs of each node.
    let mut base = Vec::with_capacity(n);
    let mut total = 0usize;
    for node in &nodes {
        base.push(total);
        total += node.ninputs + node.noutputs;
    }
    let port_id = |node: usize, output: bool, port: usize| -> usize {
        base[node]
            + if output {
                nodes[node].ninputs + port
            } else {
                port
            }
    };
    let mut uf = UnionFind::new(total);
    // Agnostic ports of one element share a mode (Click's default flow
    // code, "x/x": every input may flow to every output).
    for (i, node) in nodes.iter().enumerate() {
        let mut first: Option<usize> = None;
        for (output, count) in [(false, node.ninputs), (true, node.noutputs)] {
            for p in 0..count {
                if node.class.port_processing(output, p) == Processing::Agnostic {
                    let id = port_id(i, output, p);
                    match first {
                        None => first = Some(id),
                        Some(f) => uf.union(f, id),
                    }
                }
            }
        }
    }
    for c in &flat.connections {
        if c.from_port < nodes[c.from].noutputs && c.to_port < nodes[c.to].ninputs {
            uf.union(
                port_id(c.from, true, c.from_port),
                port_id(c.to, false, c.to_port),
            );
        }
    }
    // Fixed modes per class.
    let mut mode: Vec<Option<(bool, usize, bool, usize)>> = vec![None; total];
    for (i, node) in nodes.iter().enumerate() {
        for (output, count) in [(false, node.ninputs), (true, node.noutputs)] {
            for p in 0..count {
                let push = match node.class.port_processing(output, p) {
                    Processing::Push => true,
                    Processing::Pull => false,
                    Processing::Agnostic => continue,
                };
                let root = uf.find(port_id(i, output, p));
                if mode[root].is_none() {
                    mode[root] = Some((push, i, output, p));
                }
            }
        }
    }
    for (i, node) in nodes.iter_mut().enumerate() {
        let class = node.class;
        let resolve = |uf: &mut UnionFind, output: bool, p: usize, ni: usize| -> bool {
            match class.port_processing(output, p) {
                Processing::Push => return true,
                Processing::Pull => return false,
                Processing::Agnostic => {}
            }
            let id = base[i] + if output { ni + p } else { p };
            mode[uf.find(id)].map(|m| m.0).unwrap_or(true)
        };
        let ni = node.ninputs;
        node.input_push = (0..node.ninputs)
            .map(|p| resolve(&mut uf, false, p, ni))
            .collect();
        node.output_push = (0..node.noutputs)
            .map(|p| resolve(&mut uf, true, p, ni))
            .collect();
    }

    // Check every connection and port.
    for c in &flat.connections {
        let (f, t) = (&nodes[c.from], &nodes[c.to]);
        if c.from_port >= f.noutputs || c.to_port >= t.ninputs {
            continue;
        }
        let op = f.output_push[c.from_port];
        let ip = t.input_push[c.to_port];
        let of = f.class.port_processing(true, c.from_port);
        let inf = t.class.port_processing(false, c.to_port);
        if op != ip
            || (of == Processing::Push && inf == Processing::Pull)
            || (of == Processing::Pull && inf == Processing::Push)
        {
            errors.push(
                Diagnostic::error(
                    format!(
                        "push/pull conflict: {} output {} is {} but {} input {} is {}",
                        describe(f),
                        c.from_port,
                        mode_name(of, op),
                        describe(t),
                        c.to_port,
                        mode_name(inf, ip)
                    ),
                    Some(c.span),
                )
                .with_label("this connection")
                .with_note("a push output must connect to a push or agnostic input, a pull output to a pull or agnostic input; put a Queue between push and pull"),
            );
        }
    }
    for (i, node) in nodes.iter().enumerate() {
        if node.entry.is_none() {
            continue;
        }
        for (p, conns) in outs[i].iter().enumerate() {
            if conns.is_empty() && mentioned.contains(&(i, true, p)) {
                continue;
            }
            if conns.is_empty() {
                errors.push(
                    Diagnostic::error(
                        format!("{} output {p} is not connected", describe(node)),
                        Some(node.span),
                    )
                    .with_label("declared here")
                    .with_note(format!(
                        "connect it (for example `{}[{p}] -> Discard;`)",
                        node.name
                    )),
                );
            } else if node.output_push[p] && conns.len() > 1 {
                errors.push(
                    Diagnostic::error(
                        format!(
                            "{} push output {p} is connected more than once",
                            describe(node)
                        ),
                        Some(conns[1].2),
                    )
                    .with_label("second connection")
                    .with_note("a push output feeds exactly one input; use Tee to copy packets"),
                );
            }
        }
        for (p, conns) in ins[i].iter().enumerate() {
            if conns.is_empty() && mentioned.contains(&(i, false, p)) {
                continue;
            }
            if conns.is_empty() {
                errors.push(
                    Diagnostic::error(
                        format!("{} input {p} is not connected", describe(node)),
                        Some(node.span),
                    )
                    .with_label("declared here"),
                );
            } else if !node.input_push[p] && conns.len() > 1 {
                errors.push(
                    Diagnostic::error(
                        format!(
                            "{} pull input {p} is connected more than once",
                            describe(node)
                        ),
                        Some(conns[1].2),
                    )
                    .with_label("second connection")
                    .with_note("a pull input pulls from exactly one output"),
                );
            }
        }
    }

    let out_conn = outs
        .iter()
        .enumerate()
        .map(|(i, ports)| {
            ports
                .iter()
                .enumerate()
                .map(|(p, c)| {
                    (nodes[i].output_push.get(p).copied().unwrap_or(true))
                        .then(|| c.first().map(|&(t, tp, _)| (t as u32, tp as u32)))
                        .flatten()
                })
                .collect()
        })
        .collect();
    let in_conn = ins
        .iter()
        .enumerate()
        .map(|(i, ports)| {
            ports
                .iter()
                .enumerate()
                .map(|(p, c)| {
                    (!nodes[i].input_push.get(p).copied().unwrap_or(true))
                        .then(|| c.first().map(|&(f, fp, _)| (f as u32, fp as u32)))
                        .flatten()
                })
                .collect()
        })
        .collect();
    Graph {
        nodes,
        out_conn,
        in_conn,
    }
}

fn mode_name(fixed: Processing, push: bool) -> &'static str {
    match (fixed, push) {
        (Processing::Push, _) => "push",
        (Processing::Pull, _) => "pull",
        (Processing::Agnostic, true) => "push (agnostic, resolved to push)",
        (Processing::Agnostic, false) => "pull (agnostic, resolved to pull)",
    }
}

/// Which elements must see packets one at a time to keep Click's packet
/// order: those with two outputs whose downstream paths meet again (a
/// split that re-merges). Elsewhere a batch may be split by output without
/// changing anything observable.
pub(crate) fn ordered_nodes(g: &Graph) -> Vec<bool> {
    let n = g.nodes.len();
    // Successors over push connections.
    let succ: Vec<Vec<usize>> = g
        .out_conn
        .iter()
        .map(|ports| ports.iter().flatten().map(|&(t, _)| t as usize).collect())
        .collect();
    let mut ordered = vec![false; n];
    let mut seen_by: Vec<u32> = vec![u32::MAX; n];
    let mut stack = Vec::new();
    for (i, ord) in ordered.iter_mut().enumerate() {
        let targets: Vec<usize> = g.out_conn[i]
            .iter()
            .flatten()
            .map(|&(t, _)| t as usize)
            .collect();
        if targets.len() < 2 {
            continue;
        }
        seen_by.iter_mut().for_each(|s| *s = u32::MAX);
        'outer: for (k, &t) in targets.iter().enumerate() {
            stack.clear();
            stack.push(t);
            while let Some(x) = stack.pop() {
                if seen_by[x] == k as u32 {
                    continue;
                }
                if seen_by[x] != u32::MAX || x == i {
                    *ord = true;
                    break 'outer;
                }
                seen_by[x] = k as u32;
                stack.extend(succ[x].iter().copied());
            }
        }
    }
    ordered
}

struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n).collect(),
        }
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.parent[ra] = rb;
        }
    }
}
