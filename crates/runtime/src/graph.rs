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
    /// A flow code given by a `FlowInfo`, in place of the class's.
    pub flow: Option<String>,
}

impl NodeInfo {
    /// True if packets arriving on `input` may leave on `output`.
    pub fn flows(&self, input: usize, output: usize) -> bool {
        match &self.flow {
            Some(code) => pronto_elements::flow_code_flows(code, input, output),
            None => self.class.flows(input, output),
        }
    }
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

/// `'name :: Class'`, as Click names an element in messages.
fn describe(n: &NodeInfo) -> String {
    format!("'{} :: {}'", n.name, n.class.name)
}

fn range_text((lo, hi): (usize, usize)) -> String {
    match hi {
        usize::MAX if lo == 0 => "any number of".to_string(),
        usize::MAX => format!("at least {lo}"),
        h if h == lo => format!("{lo}"),
        h => format!("{lo} to {h}"),
    }
}

fn mode_word(push: bool) -> &'static str {
    if push {
        "push"
    } else {
        "pull"
    }
}

/// Builds and checks the graph as Click's router does, in Click's order
/// and with Click's messages: unknown classes; ports beyond a class's
/// counts (`has no input N`); push/pull resolution along flow codes
/// (`push output 0 connected to ... pull input 0`, `agnostic ... in mixed
/// context`); then reused push outputs or pull inputs (`illegal reuse`)
/// and unconnected ports (`input 0 unused`). A stage with errors ends the
/// checks, as in Click. `errors` receives every problem found.
pub(crate) fn build(flat: &FlatConfig, lookup: Lookup<'_>, errors: &mut Vec<Diagnostic>) -> Graph {
    static UNKNOWN: Spec = Spec::new("<unknown>").ports("-/-").processing("a/a");
    let n = flat.elements.len();
    let mut nodes: Vec<NodeInfo> = Vec::with_capacity(n);
    for fe in &flat.elements {
        let entry = lookup(&fe.class);
        if entry.is_none() {
            let d = Diagnostic::error(
                format!("unknown element class '{}'", fe.class),
                Some(fe.span),
            )
            .with_label("not a known element class");
            let d = match pronto_elements::registry::why_not(&fe.class) {
                Some(why) => d.with_note(format!("{}: {why}", fe.class)),
                None => d.with_note("`pronto elements` lists the known classes"),
            };
            errors.push(d);
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
            flow: None,
        });
    }
    apply_flow_info(&mut nodes, errors);

    // Connections in Click's order: by destination, then source.
    let mut conns: Vec<(usize, usize, usize, usize, Span)> = flat
        .connections
        .iter()
        .map(|c| (c.from, c.from_port, c.to, c.to_port, c.span))
        .collect();
    conns.sort_by_key(|c| (c.2, c.3, c.0, c.1));
    conns.dedup_by_key(|c| (c.0, c.1, c.2, c.3));

    // Port counts: one more than the highest connected port, brought
    // within the class's counts (Click's `notify_nports`).
    let mut max_in = vec![0usize; n];
    let mut max_out = vec![0usize; n];
    for c in &conns {
        max_out[c.0] = max_out[c.0].max(c.1 + 1);
        max_in[c.2] = max_in[c.2].max(c.3 + 1);
    }
    for (i, node) in nodes.iter_mut().enumerate() {
        let (ni, no) = node.class.port_counts(max_in[i], max_out[i]);
        node.ninputs = ni;
        node.noutputs = no;
    }
    if !errors.is_empty() {
        return finish(nodes, &conns);
    }

    // Ports beyond the counts.
    for c in &conns {
        for (output, idx, port) in [(false, c.2, c.3), (true, c.0, c.1)] {
            let node = &nodes[idx];
            let have = if output { node.noutputs } else { node.ninputs };
            if port >= have {
                let what = if output { "output" } else { "input" };
                let (lo, hi) = node.class.port_range(output);
                errors.push(
                    Diagnostic::error(
                        format!("{} has no {what} {port}", describe(node)),
                        Some(node.span),
                    )
                    .with_label("declared here")
                    .with_detail(c.4, format!("{what} {port} is connected here"))
                    .with_note(format!(
                        "{} takes {} {what}{}",
                        node.class.name,
                        range_text((lo, hi)),
                        if hi == 1 { "" } else { "s" }
                    )),
                );
            }
        }
    }
    if !errors.is_empty() {
        return finish(nodes, &conns);
    }

    // Push/pull: Click's spreading of personalities. Agnostic ports take
    // the mode of what they connect to; an agnostic input and an agnostic
    // output of one element share a mode where packets flow between them.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Push,
        Pull,
        Agnostic,
    }
    let mode_of = |p: Processing| match p {
        Processing::Push => Mode::Push,
        Processing::Pull => Mode::Pull,
        Processing::Agnostic => Mode::Agnostic,
    };
    let mut in_mode: Vec<Vec<Mode>> = nodes
        .iter()
        .map(|n| {
            (0..n.ninputs)
                .map(|p| mode_of(n.class.port_processing(false, p)))
                .collect()
        })
        .collect();
    let mut out_mode: Vec<Vec<Mode>> = nodes
        .iter()
        .map(|n| {
            (0..n.noutputs)
                .map(|p| mode_of(n.class.port_processing(true, p)))
                .collect()
        })
        .collect();
    // (from, output, to, input, span, real connection?)
    let mut spread: Vec<(usize, usize, usize, usize, Span, bool)> = conns
        .iter()
        .map(|c| (c.0, c.1, c.2, c.3, c.4, true))
        .collect();
    for (i, node) in nodes.iter().enumerate() {
        for (ip, im) in in_mode[i].iter().enumerate() {
            if *im != Mode::Agnostic {
                continue;
            }
            for (op, om) in out_mode[i].iter().enumerate() {
                if *om == Mode::Agnostic && node.flows(ip, op) {
                    spread.push((i, op, i, ip, node.span, false));
                }
            }
        }
    }
    let mut removed = vec![false; spread.len()];
    loop {
        let mut changed = false;
        for (k, &(f, fp, t, tp, span, real)) in spread.iter().enumerate() {
            if removed[k] {
                continue;
            }
            let pf = out_mode[f][fp];
            let pt = in_mode[t][tp];
            match pt {
                Mode::Agnostic => {
                    if pf != Mode::Agnostic {
                        in_mode[t][tp] = pf;
                        changed = true;
                    }
                }
                Mode::Push | Mode::Pull => {
                    if pf == Mode::Agnostic {
                        out_mode[f][fp] = pt;
                        changed = true;
                    } else if pf != pt {
                        let push = pf == Mode::Push;
                        let d = if real {
                            Diagnostic::error(
                                format!(
                                    "{} {} output {fp} connected to {} {} input {tp}",
                                    describe(&nodes[f]),
                                    mode_word(push),
                                    describe(&nodes[t]),
                                    mode_word(!push)
                                ),
                                Some(span),
                            )
                            .with_label("this connection")
                        } else {
                            Diagnostic::error(
                                format!(
                                    "agnostic {} in mixed context: {} input {tp}, {} output {fp}",
                                    describe(&nodes[f]),
                                    mode_word(!push),
                                    mode_word(push)
                                ),
                                Some(span),
                            )
                            .with_label("its input and output must both be push or both be pull")
                        };
                        errors.push(d.without_landmark().with_note(
                            "a push output must connect to a push or agnostic input, a pull output to a pull or agnostic input; put a Queue between push and pull",
                        ));
                        removed[k] = true;
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    for (i, node) in nodes.iter_mut().enumerate() {
        node.input_push = in_mode[i].iter().map(|m| *m != Mode::Pull).collect();
        node.output_push = out_mode[i].iter().map(|m| *m != Mode::Pull).collect();
    }
    if !errors.is_empty() {
        return finish(nodes, &conns);
    }

    // Reused push outputs and pull inputs: inputs first, then outputs.
    for k in 1..conns.len() {
        let (a, b) = (&conns[k - 1], &conns[k]);
        if (a.2, a.3) == (b.2, b.3) && !nodes[b.2].input_push[b.3] {
            let node = &nodes[b.2];
            errors.push(
                Diagnostic::error(
                    format!("illegal reuse of {} pull input {}", describe(node), b.3),
                    Some(node.span),
                )
                .with_label("declared here")
                .with_detail(b.4, "connected again here")
                .with_note("a pull input pulls from exactly one output"),
            );
        }
    }
    let mut by_output: Vec<&(usize, usize, usize, usize, Span)> = conns.iter().collect();
    by_output.sort_by_key(|c| (c.0, c.1, c.2, c.3));
    for k in 1..by_output.len() {
        let (a, b) = (by_output[k - 1], by_output[k]);
        if (a.0, a.1) == (b.0, b.1) && nodes[b.0].output_push[b.1] {
            let node = &nodes[b.0];
            errors.push(
                Diagnostic::error(
                    format!("illegal reuse of {} push output {}", describe(node), b.1),
                    Some(node.span),
                )
                .with_label("declared here")
                .with_detail(b.4, "connected again here")
                .with_note("a push output feeds exactly one input; use Tee to copy packets"),
            );
        }
    }
    // Unconnected ports: inputs first, then outputs.
    for output in [false, true] {
        let mut used: Vec<Vec<bool>> = nodes
            .iter()
            .map(|n| vec![false; if output { n.noutputs } else { n.ninputs }])
            .collect();
        for c in &conns {
            let (idx, port) = if output { (c.0, c.1) } else { (c.2, c.3) };
            if let Some(u) = used[idx].get_mut(port) {
                *u = true;
            }
        }
        let what = if output { "output" } else { "input" };
        for (i, node) in nodes.iter().enumerate() {
            for (p, _) in used[i].iter().enumerate().filter(|(_, u)| !**u) {
                let mut d = Diagnostic::error(
                    format!("{} {what} {p} unused", describe(node)),
                    Some(node.span),
                )
                .with_label("declared here");
                if output {
                    d = d.with_note(format!(
                        "connect it (for example `{}[{p}] -> Discard;`)",
                        node.name
                    ));
                }
                errors.push(d);
            }
        }
    }
    finish(nodes, &conns)
}

/// Applies every `FlowInfo`'s flow codes to the elements it names (names
/// resolve from its compound outwards, as Click's do).
fn apply_flow_info(nodes: &mut [NodeInfo], errors: &mut Vec<Diagnostic>) {
    let infos: Vec<(String, String, Span)> = nodes
        .iter()
        .filter(|n| n.class.name == "FlowInfo")
        .map(|n| (n.name.clone(), n.config.clone(), n.config_span))
        .collect();
    for (info, config, span) in infos {
        let Ok(pairs) = pronto_elements::standard::flowinfo::parse(&config) else {
            continue; // reported when the element is configured
        };
        for (name, code) in pairs {
            let mut prefix = info.as_str();
            let target = loop {
                prefix = prefix.rfind('/').map_or("", |k| &prefix[..k]);
                let full = if prefix.is_empty() {
                    name.clone()
                } else {
                    format!("{prefix}/{name}")
                };
                if let Some(t) = nodes.iter().position(|n| n.name == full) {
                    break Some(t);
                }
                if prefix.is_empty() {
                    break None;
                }
            };
            match target {
                Some(t) => nodes[t].flow = Some(code),
                None => errors.push(
                    Diagnostic::error(format!("no element named '{name}'"), Some(span))
                        .with_context(format!("While configuring '{info} :: FlowInfo'"), span),
                ),
            }
        }
    }
}

/// The graph's connection tables: for each push output its target, for
/// each pull input its source (the first, when a port was reused).
fn finish(nodes: Vec<NodeInfo>, conns: &[(usize, usize, usize, usize, Span)]) -> Graph {
    let mut out_conn: Vec<Vec<Option<(u32, u32)>>> =
        nodes.iter().map(|n| vec![None; n.noutputs]).collect();
    let mut in_conn: Vec<Vec<Option<(u32, u32)>>> =
        nodes.iter().map(|n| vec![None; n.ninputs]).collect();
    for &(f, fp, t, tp, _) in conns {
        if fp >= nodes[f].noutputs || tp >= nodes[t].ninputs {
            continue;
        }
        if nodes[f].output_push.get(fp).copied().unwrap_or(true) {
            let slot = &mut out_conn[f][fp];
            if slot.is_none() {
                *slot = Some((t as u32, tp as u32));
            }
        }
        if !nodes[t].input_push.get(tp).copied().unwrap_or(true) {
            let slot = &mut in_conn[t][tp];
            if slot.is_none() {
                *slot = Some((f as u32, fp as u32));
            }
        }
    }
    Graph {
        nodes,
        out_conn,
        in_conn,
    }
}

/// Which elements must see packets one at a time to keep Click's packet
/// order: those with two outputs whose downstream paths meet again (a
/// split that re-merges), and those from which two or more printing
/// elements can be reached (a printer followed by another, or a split to
/// two printers): Click prints every line for one packet before the next
/// packet's. Elsewhere a batch may be split by output without changing
/// anything observable, and a path with at most one printer keeps its
/// batches.
pub(crate) fn ordered_nodes(g: &Graph) -> Vec<bool> {
    let mut ordered = merging_nodes(g);
    let n = g.nodes.len();
    let printers: Vec<usize> = (0..n).filter(|&i| g.nodes[i].class.prints).collect();
    if printers.len() < 2 {
        return ordered;
    }
    // For each printer, every element it can be reached from (itself
    // included); an element reached by two printers' searches is marked.
    let mut pred: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, ports) in g.out_conn.iter().enumerate() {
        for &(t, _) in ports.iter().flatten() {
            pred[t as usize].push(i);
        }
    }
    let mut reaches = vec![0u32; n];
    let mut seen = vec![usize::MAX; n];
    for (k, &p) in printers.iter().enumerate() {
        let mut stack = vec![p];
        while let Some(x) = stack.pop() {
            if seen[x] == k {
                continue;
            }
            seen[x] = k;
            reaches[x] += 1;
            stack.extend(pred[x].iter().copied());
        }
    }
    for (o, r) in ordered.iter_mut().zip(&reaches) {
        *o |= *r >= 2;
    }
    ordered
}

/// Elements with two outputs whose downstream paths meet again.
fn merging_nodes(g: &Graph) -> Vec<bool> {
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

/// A split that merges again, ordered at its merge points (see
/// [`order_regions`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Region {
    /// The elements that collect what reaches them while the region's
    /// batch runs: where the split paths meet (two or more connections
    /// into them from the region), and the members of groups (elements
    /// that share state); in topological order.
    pub(crate) merges: Vec<usize>,
    /// The same, as the steps they run in: one merge point, or a group
    /// whose members run in the packets' joint order.
    pub(crate) steps: Vec<Vec<usize>>,
}

/// The root of `x`'s set (union-find, with path halving).
fn root(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// For each ordered element (see [`ordered_nodes`]) whose split can be
/// ordered where its paths meet again instead of one packet at a time:
/// the element, every element downstream of it ([`Element::one_for_one`]
/// in `one_for_one`: the same packet in and out, nothing made or held
/// back), no printer among them, no cycle. Elements of the region that
/// share state (`refs`: (element, element it looked up while
/// configuring): one names the other, or both name the same one) would
/// each see the other's effects in another order than Click's if one ran
/// on the whole batch before the other: they collect too, and run as one
/// group in the packets' joint order, so none of them may reach another
/// and the splitting element may share nothing. Returns, per element, the index of the region it starts
/// (`u32::MAX`: none), and the regions.
///
/// [`Element::one_for_one`]: pronto_elements::Element::one_for_one
pub(crate) fn order_regions(
    g: &Graph,
    ordered: &[bool],
    one_for_one: &[bool],
    refs: &[(usize, usize)],
) -> (Vec<u32>, Vec<Region>) {
    let n = g.nodes.len();
    let mut region_of = vec![u32::MAX; n];
    let mut regions = Vec::new();
    let succ = |x: usize| g.out_conn[x].iter().flatten().map(|&(t, _)| t as usize);
    for s in 0..n {
        if !ordered[s] || !one_for_one[s] || g.nodes[s].class.prints {
            continue;
        }
        // The region: `s` and everything its pushes reach.
        let mut inside = vec![false; n];
        inside[s] = true;
        let mut stack: Vec<usize> = succ(s).collect();
        let mut cyclic = false;
        while let Some(x) = stack.pop() {
            if x == s {
                cyclic = true;
                break;
            }
            if !inside[x] {
                inside[x] = true;
                stack.extend(succ(x));
            }
        }
        let members: Vec<usize> = (0..n).filter(|&x| inside[x]).collect();
        if cyclic
            || members
                .iter()
                .any(|&x| !one_for_one[x] || g.nodes[x].class.prints)
        {
            continue;
        }
        // State shared within the region: elements linked by a lookup (one
        // names the other, or both name the same element outside) form a
        // group, which runs as one step in the packets' joint order. The
        // splitting element may share nothing (it runs first, whole).
        let mut parent: Vec<usize> = (0..n).collect();
        let mut linked = vec![false; n];
        let mut first_asker = vec![usize::MAX; n];
        let mut shares_split = false;
        for &(a, b) in refs {
            if !inside[a] || a == b {
                continue;
            }
            let other = if inside[b] {
                b
            } else if first_asker[b] == usize::MAX {
                first_asker[b] = a;
                continue;
            } else {
                first_asker[b]
            };
            if a == s || other == s {
                shares_split = true;
                break;
            }
            if a != other {
                let (ra, rb) = (root(&mut parent, a), root(&mut parent, other));
                parent[ra] = rb;
                linked[a] = true;
                linked[other] = true;
            }
        }
        if shares_split {
            continue;
        }
        let group: Vec<usize> = (0..n)
            .map(|x| if linked[x] { root(&mut parent, x) } else { x })
            .collect();
        // No member of a group may reach another: a group runs at one
        // point of the order.
        let mut reach_bad = false;
        for &x in members.iter().filter(|&&x| linked[x]) {
            let mut seen = vec![false; n];
            let mut stack: Vec<usize> = succ(x).collect();
            while let Some(y) = stack.pop() {
                if seen[y] {
                    continue;
                }
                seen[y] = true;
                if linked[y] && group[y] == group[x] {
                    reach_bad = true;
                    break;
                }
                stack.extend(succ(y));
            }
        }
        if reach_bad {
            continue;
        }
        // Connections into each element from the region: two or more make
        // a merge point.
        let mut indeg = vec![0u32; n];
        for &x in &members {
            for t in succ(x) {
                indeg[t] += 1;
            }
        }
        let collects: Vec<bool> = (0..n)
            .map(|x| x != s && (indeg[x] >= 2 || linked[x]))
            .collect();
        // A topological order of the region with each group as one node
        // (Kahn's); a cycle below `s` disqualifies.
        let mut of_group: Vec<Vec<usize>> = vec![Vec::new(); n];
        for &x in &members {
            of_group[group[x]].push(x);
        }
        let mut gindeg = vec![0u32; n];
        for &x in &members {
            for t in succ(x) {
                gindeg[group[t]] += 1;
            }
        }
        let mut ready = vec![group[s]];
        let mut done = 0;
        let mut steps = Vec::new();
        while let Some(u) = ready.pop() {
            done += of_group[u].len();
            let step: Vec<usize> = of_group[u]
                .iter()
                .copied()
                .filter(|&x| collects[x])
                .collect();
            for &x in &of_group[u] {
                for t in succ(x) {
                    let v = group[t];
                    gindeg[v] -= 1;
                    if gindeg[v] == 0 {
                        ready.push(v);
                    }
                }
            }
            if !step.is_empty() {
                steps.push(step);
            }
        }
        if done != members.len() || steps.is_empty() {
            continue;
        }
        let merges: Vec<usize> = steps.iter().flatten().copied().collect();
        region_of[s] = regions.len() as u32;
        regions.push(Region { merges, steps });
    }
    (region_of, regions)
}
