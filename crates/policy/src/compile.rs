//! Compiling a policy into a service graph (the paper's section 4, steps
//! 4 to 7).
//!
//! 1. NFs pinned by `position` go alone to the head and the tail.
//! 2. Every pair of the other NFs is analysed ([`crate::analysis`]):
//!    pairs ordered by `order` rules (directly or through other NFs) in
//!    their order, `priority` pairs as priority pairs, and pairs no rule
//!    relates in whichever direction parallelises better (the operator
//!    gave no order, so either is correct).
//! 3. NFs joined by `priority` rules (directly or through others) form one
//!    parallel group each; pairs in it that no priority rule ranks must
//!    be able to run in parallel and must not write the same field (no
//!    rule would say whose value wins), or the policy is refused.
//!    Dependent pairs become sequential edges; the NFs then fall into
//!    independent sub-graphs, which run in parallel, each a sequence of
//!    single NFs and nested parallel groups (a series-parallel graph).
//! 4. A pair that could run in parallel only with a copy is put in
//!    sequence instead when that does not lengthen the longest path of
//!    the graph: the copy would buy no latency. This is what turns the
//!    paper's Table 2 chains into its Figure 2 (VPN; monitor and firewall
//!    in parallel; load balancer) rather than a graph where the monitor
//!    runs beside the load balancer on a header copy.
//!
//! The graph comes with a forwarding table (where each NF, and each
//! merger, sends its packet next, and whether as the packet itself or a
//! copy) and a merge table (per parallel group: how many versions to wait
//! for, which branch's value each written field takes, how drops combine,
//! whose header layout the output has).
//!
//! Where the graph is not series-parallel (a "N" of dependencies: a
//! before c, b before c, b before d), the compiler sequences whole groups
//! and loses some parallelism; it never reorders NFs against the rules.

use std::collections::HashMap;

use crate::analysis::{analyse, analyse_priority, Parallelism};
use crate::check::find_cycle;
use crate::error::{PolicyError, Pos};
use crate::graph::{
    Branch, Delivery, Group, Pair, Placement, Plan, PlanNf, Relation, ServiceGraph, Stage,
};
use crate::policy::{Place, Policy, Rule};
use crate::profile::Profile;
use crate::tables::{assign, forwarding, number_groups};

/// Transitive closure of `edges` over `n` nodes.
fn closure(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<bool>> {
    let mut r = vec![vec![false; n]; n];
    for &(a, b) in edges {
        r[a][b] = true;
    }
    for k in 0..n {
        let via = r[k].clone();
        for row in r.iter_mut() {
            if row[k] {
                for (cell, &v) in row.iter_mut().zip(&via) {
                    *cell |= v;
                }
            }
        }
    }
    r
}

/// The number of nodes on the longest path of the DAG `edges` over `n`
/// nodes, or `None` if it has a cycle.
fn longest_path(n: usize, edges: &[(usize, usize)]) -> Option<usize> {
    let mut indeg = vec![0usize; n];
    for &(_, b) in edges {
        indeg[b] += 1;
    }
    let mut depth = vec![1usize; n];
    let mut ready: Vec<usize> = (0..n).filter(|&v| indeg[v] == 0).collect();
    let mut done = 0;
    while let Some(v) = ready.pop() {
        done += 1;
        for &(a, b) in edges {
            if a == v {
                depth[b] = depth[b].max(depth[v] + 1);
                indeg[b] -= 1;
                if indeg[b] == 0 {
                    ready.push(b);
                }
            }
        }
    }
    (done == n).then(|| depth.into_iter().max().unwrap_or(0))
}

/// The compiler's working state.
pub(crate) struct Compiler<'p> {
    pub(crate) policy: &'p Policy,
    pub(crate) profiles: Vec<Profile>,
    /// Units: priority classes of unpinned NFs (each sorted), in T order.
    pub(crate) units: Vec<Vec<usize>>,
    pub(crate) unit_of: Vec<usize>,
    pub(crate) pairs: Vec<Pair>,
    pub(crate) pair_index: HashMap<(usize, usize), usize>,
    /// Unit-level sequential edges (including accepted copy hints).
    pub(crate) hard: Vec<(usize, usize)>,
    /// Unit-level soft order edges (ordered pairs analysed parallel).
    pub(crate) soft: Vec<(usize, usize)>,
    pub(crate) hard_reach: Vec<Vec<bool>>,
    pub(crate) priority_reach: Vec<Vec<bool>>,
    pub(crate) next_group: usize,
}

impl Compiler<'_> {
    pub(crate) fn err(&self, pos: Pos, message: String) -> PolicyError {
        PolicyError::new(&self.policy.file, pos, message)
    }

    pub(crate) fn name(&self, nf: usize) -> &str {
        &self.policy.nfs[nf].name
    }

    pub(crate) fn pair(&self, a: usize, b: usize) -> Option<&Pair> {
        self.pair_index
            .get(&(a.min(b), a.max(b)))
            .map(|&i| &self.pairs[i])
    }

    fn unit_stages(&mut self, u: usize) -> Vec<Stage> {
        let members = &self.units[u];
        if members.len() == 1 {
            return vec![Stage::Nf(members[0])];
        }
        let branches = members
            .iter()
            .map(|&x| vec![Stage::Nf(x)])
            .collect::<Vec<_>>();
        vec![self.parallel(branches)]
    }

    fn parallel(&mut self, branch_stages: Vec<Vec<Stage>>) -> Stage {
        let mut branches = Vec::new();
        for stages in branch_stages {
            match <[Stage; 1]>::try_from(stages) {
                Ok([Stage::Parallel(g)]) => branches.extend(g.branches),
                Ok([s]) => branches.push(Branch {
                    stages: vec![s],
                    delivery: Delivery::Packet,
                }),
                Err(stages) => branches.push(Branch {
                    stages,
                    delivery: Delivery::Packet,
                }),
            }
        }
        Stage::Parallel(Group { id: 0, branches })
    }

    /// Series-parallel construction over the units in `set` (in T order).
    fn build(&mut self, set: &[usize]) -> Vec<Stage> {
        if set.len() == 1 {
            return self.unit_stages(set[0]);
        }
        // Independent sub-graphs: components of the sequential edges.
        let mut comp: Vec<usize> = (0..set.len()).collect();
        fn find(c: &mut [usize], x: usize) -> usize {
            let mut r = x;
            while c[r] != r {
                r = c[r];
            }
            c[x] = r;
            r
        }
        let pos = |u: usize| set.iter().position(|&v| v == u);
        for &(a, b) in &self.hard {
            if let (Some(i), Some(j)) = (pos(a), pos(b)) {
                let (ri, rj) = (find(&mut comp, i), find(&mut comp, j));
                comp[ri.max(rj)] = ri.min(rj);
            }
        }
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for (i, &u) in set.iter().enumerate() {
            let r = find(&mut comp, i);
            match groups.iter_mut().find(|g| g.0 == r) {
                Some(g) => g.1.push(u),
                None => groups.push((r, vec![u])),
            }
        }
        if groups.len() > 1 {
            let branches = groups
                .into_iter()
                .map(|(_, members)| self.build(&members))
                .collect();
            return vec![self.parallel(branches)];
        }
        // One sub-graph: cut it in two, everything of the first part
        // before everything of the second.
        let reach = &self.hard_reach;
        let mut cut: Option<Vec<usize>> = None;
        for &q in set {
            let p: Vec<usize> = set.iter().copied().filter(|&u| reach[u][q]).collect();
            if p.is_empty() || p.len() == set.len() {
                continue;
            }
            let perfect = set
                .iter()
                .filter(|u| !p.contains(u))
                .all(|&r| p.iter().all(|&x| reach[x][r]));
            if perfect && cut.as_ref().is_none_or(|c| p.len() < c.len()) {
                cut = Some(p);
            }
        }
        let first = cut.unwrap_or_else(|| {
            // No cut loses nothing: take the sources.
            set.iter()
                .copied()
                .filter(|&u| {
                    !self
                        .hard
                        .iter()
                        .chain(&self.soft)
                        .any(|&(a, b)| b == u && set.contains(&a))
                })
                .collect()
        });
        let rest: Vec<usize> = set.iter().copied().filter(|u| !first.contains(u)).collect();
        let mut stages = self.build(&first);
        if !rest.is_empty() {
            stages.extend(self.build(&rest));
        }
        stages
    }
}

/// Compiles `policy`.
pub(crate) fn compile(policy: &Policy) -> Result<Plan, PolicyError> {
    let err = |pos: Pos, m: String| PolicyError::new(&policy.file, pos, m);
    if policy.nfs.is_empty() {
        return Err(err(
            Pos::FILE,
            "the policy declares no network function: add `nf NAME = ...` lines".into(),
        ));
    }
    let mut profiles = Vec::new();
    for nf in &policy.nfs {
        let Some(p) = nf.profile else {
            return Err(err(
                nf.pos,
                format!(
                    "the profile of `{}` is not known yet: Click files are read by `load`, and \
                     instance profiles come from the daemon (or declare it with builtin(...) or \
                     opaque(...))",
                    nf.name
                ),
            ));
        };
        profiles.push(p);
    }
    let n = policy.nfs.len();
    let pins: Vec<Option<Place>> = (0..n).map(|i| policy.pin(i).map(|p| p.0)).collect();
    let first = pins.iter().position(|p| *p == Some(Place::First));
    let last = pins.iter().position(|p| *p == Some(Place::Last));
    let free: Vec<usize> = (0..n).filter(|&i| pins[i].is_none()).collect();

    let order_edges: Vec<(usize, usize)> = policy
        .rules
        .iter()
        .filter_map(|r| match r {
            Rule::Order { before, after, .. } => Some((*before, *after)),
            _ => None,
        })
        .collect();
    let priority_rules: Vec<(usize, usize, Pos)> = policy
        .rules
        .iter()
        .filter_map(|r| match r {
            Rule::Priority { high, low, pos } => Some((*high, *low, *pos)),
            _ => None,
        })
        .collect();
    let order_reach = closure(n, &order_edges);
    let priority_edges: Vec<(usize, usize)> =
        priority_rules.iter().map(|&(h, l, _)| (h, l)).collect();
    let priority_reach = closure(n, &priority_edges);

    // Priority classes (pinned NFs are in no priority rule: see check).
    let mut class: Vec<usize> = (0..n).collect();
    for &(h, l, _) in &priority_rules {
        let (a, b) = (class[h], class[l]);
        for c in class.iter_mut() {
            if *c == b {
                *c = a;
            }
        }
    }
    let mut raw_units: Vec<Vec<usize>> = Vec::new();
    for &x in &free {
        match raw_units.iter_mut().find(|u| class[u[0]] == class[x]) {
            Some(u) => u.push(x),
            None => raw_units.push(vec![x]),
        }
    }
    let raw_of = |x: usize| raw_units.iter().position(|u| u.contains(&x));

    // T order of units: a topological order of the order rules between
    // them, declaration order breaking ties.
    let mut unit_edges: Vec<(usize, usize, Pos)> = Vec::new();
    for r in &policy.rules {
        if let Rule::Order { before, after, pos } = r {
            if let (Some(a), Some(b)) = (raw_of(*before), raw_of(*after)) {
                if a != b {
                    unit_edges.push((a, b, *pos));
                }
            }
        }
    }
    if let Some(cycle) = find_cycle(raw_units.len(), &unit_edges) {
        let name = |x: usize| policy.nfs[x].name.as_str();
        let group = cycle
            .iter()
            .map(|e| e.0)
            .find(|&u| raw_units[u].len() > 1)
            .unwrap_or(cycle[0].0);
        let members: Vec<&str> = raw_units[group].iter().map(|&x| name(x)).collect();
        let rules: Vec<String> = cycle
            .iter()
            .filter_map(|e| {
                policy.rules.iter().find_map(|r| match r {
                    Rule::Order { before, after, pos } if *pos == e.2 => Some(format!(
                        "{} before {} (line {})",
                        name(*before),
                        name(*after),
                        pos.line
                    )),
                    _ => None,
                })
            })
            .collect();
        let at = priority_rules
            .iter()
            .find(|r| raw_units[group].contains(&r.0))
            .map_or(Pos::FILE, |r| r.2);
        return Err(err(
            at,
            format!(
                "priority rules make {{{}}} one parallel group, but the order rules {} put other \
                 NFs between its members",
                members.join(", "),
                rules.join(", ")
            ),
        ));
    }
    let mut t_order: Vec<usize> = Vec::new();
    let mut placed = vec![false; raw_units.len()];
    while t_order.len() < raw_units.len() {
        let next = (0..raw_units.len())
            .filter(|&u| !placed[u])
            .find(|&u| !unit_edges.iter().any(|e| e.1 == u && !placed[e.0]));
        let Some(u) = next else { break };
        placed[u] = true;
        t_order.push(u);
    }
    let units: Vec<Vec<usize>> = t_order.iter().map(|&u| raw_units[u].clone()).collect();
    let mut unit_of = vec![usize::MAX; n];
    for (u, members) in units.iter().enumerate() {
        for &x in members {
            unit_of[x] = u;
        }
    }
    // NFs in T order.
    let t_nfs: Vec<usize> = units.iter().flatten().copied().collect();

    let mut c = Compiler {
        policy,
        profiles: profiles.clone(),
        units,
        unit_of,
        pairs: Vec::new(),
        pair_index: HashMap::new(),
        hard: Vec::new(),
        soft: Vec::new(),
        hard_reach: Vec::new(),
        priority_reach,
        next_group: 0,
    };

    // Pair analysis.
    let unit_of = c.unit_of.clone();
    let class_rule = |x: usize| {
        priority_rules
            .iter()
            .find(|r| unit_of[r.0] == unit_of[x])
            .map_or(Pos::FILE, |r| r.2)
    };
    for (i, &x) in t_nfs.iter().enumerate() {
        for &y in &t_nfs[i + 1..] {
            let same_group = c.unit_of[x] == c.unit_of[y];
            let prioritised = c.priority_reach[x][y] || c.priority_reach[y][x];
            let (first, second, relation, result) = if prioritised {
                let (h, l) = if c.priority_reach[x][y] {
                    (x, y)
                } else {
                    (y, x)
                };
                let pos = priority_rules
                    .iter()
                    .find(|r| (r.0, r.1) == (h, l))
                    .map_or_else(|| class_rule(h), |r| r.2);
                let r = analyse_priority(&c.profiles[h], &c.profiles[l]).map_err(|reason| {
                    c.err(
                        pos,
                        format!(
                            "priority({} > {}) cannot be honoured: {}",
                            c.name(h),
                            c.name(l),
                            reason.describe(c.name(h), c.name(l))
                        ),
                    )
                })?;
                (h, l, Relation::Priority, r)
            } else if order_reach[x][y] {
                (
                    x,
                    y,
                    Relation::Order,
                    analyse(&c.profiles[x], &c.profiles[y]),
                )
            } else if order_reach[y][x] {
                (
                    y,
                    x,
                    Relation::Order,
                    analyse(&c.profiles[y], &c.profiles[x]),
                )
            } else if same_group {
                // Two NFs of one priority group that no rule relates: they
                // run in parallel, and nothing says who wins a conflict.
                let r = analyse_priority(&c.profiles[x], &c.profiles[y]).map_err(|reason| {
                    c.err(
                        class_rule(x),
                        format!(
                            "priority rules put `{}` and `{}` in one parallel group, but {}",
                            c.name(x),
                            c.name(y),
                            reason.describe(c.name(x), c.name(y))
                        ),
                    )
                })?;
                let both = c.profiles[x]
                    .writes
                    .intersection(c.profiles[y].writes)
                    .analysed();
                if let Some(f) = both.iter().next() {
                    return Err(c.err(
                        class_rule(x),
                        format!(
                            "priority rules put `{}` and `{}` in one parallel group and both write \
                             {f}, but no rule says whose value wins: add priority({} > {}) or \
                             priority({} > {})",
                            c.name(x),
                            c.name(y),
                            c.name(x),
                            c.name(y),
                            c.name(y),
                            c.name(x)
                        ),
                    ));
                }
                (x, y, Relation::Unordered, r)
            } else {
                let r1 = analyse(&c.profiles[x], &c.profiles[y]);
                let r2 = analyse(&c.profiles[y], &c.profiles[x]);
                if r2.rank() < r1.rank() {
                    (y, x, Relation::Unordered, r2)
                } else {
                    (x, y, Relation::Unordered, r1)
                }
            };
            let (ux, uy) = (c.unit_of[first], c.unit_of[second]);
            if ux == uy && !result.is_parallel() {
                let members: Vec<&str> = c.units[ux].iter().map(|&m| c.name(m)).collect();
                return Err(c.err(
                    class_rule(first),
                    format!(
                        "priority rules make {{{}}} one parallel group, but `{}` and `{}` cannot run \
                         in parallel: {}",
                        members.join(", "),
                        c.name(first),
                        c.name(second),
                        result.describe(c.name(first), c.name(second))
                    ),
                ));
            }
            c.pair_index.insert((x.min(y), x.max(y)), c.pairs.len());
            c.pairs.push(Pair {
                first,
                second,
                relation,
                result,
                placement: Placement::Parallel,
            });
        }
    }

    // Unit-level edges.
    let mut hints: Vec<(usize, usize)> = Vec::new();
    for p in &c.pairs {
        let (a, b) = (c.unit_of[p.first], c.unit_of[p.second]);
        if a == b {
            continue;
        }
        match (&p.result, p.relation) {
            (Parallelism::Sequential { .. }, _) => c.hard.push((a, b)),
            (Parallelism::ParallelCopy { .. }, Relation::Order) => {
                c.soft.push((a, b));
                hints.push((a, b));
            }
            (_, Relation::Order) => c.soft.push((a, b)),
            (Parallelism::ParallelCopy { .. }, _) => hints.push((a, b)),
            _ => {}
        }
    }
    let nu = c.units.len();
    let depth = longest_path(nu, &c.hard).unwrap_or(nu);
    for h in hints {
        if c.hard.contains(&h) {
            continue;
        }
        c.hard.push(h);
        let all: Vec<(usize, usize)> = c.hard.iter().chain(&c.soft).copied().collect();
        let acyclic = longest_path(nu, &all).is_some();
        if !acyclic || longest_path(nu, &c.hard).is_none_or(|d| d > depth) {
            c.hard.pop();
        }
    }
    c.hard_reach = closure(nu, &c.hard);

    let mut stages = Vec::new();
    if let Some(f) = first {
        stages.push(Stage::Nf(f));
    }
    if nu > 0 {
        let all: Vec<usize> = (0..nu).collect();
        stages.extend(c.build(&all));
    }
    if let Some(l) = last {
        stages.push(Stage::Nf(l));
    }
    let mut graph = ServiceGraph { stages };
    number_groups(&mut graph.stages, &mut c.next_group);
    let mut merges = Vec::new();
    assign(&c, &mut graph.stages, &mut merges)?;
    merges.sort_by_key(|m| m.group);

    for p in &mut c.pairs {
        p.placement = graph
            .placement(p.first, p.second)
            .unwrap_or(Placement::Parallel);
    }
    let forwarding = forwarding(&graph);

    Ok(Plan {
        file: policy.file.clone(),
        nfs: policy
            .nfs
            .iter()
            .zip(&profiles)
            .zip(&pins)
            .map(|((nf, p), pin)| PlanNf {
                name: nf.name.clone(),
                profile: *p,
                pin: *pin,
            })
            .collect(),
        rules: policy.rules.clone(),
        pairs: c.pairs,
        graph,
        forwarding,
        merges,
    })
}
