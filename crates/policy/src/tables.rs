//! The forwarding and merge tables of a compiled graph: which branch of a
//! parallel group gets the packet itself and which a copy, which branch's
//! value of each field the merger keeps, how drops combine, and where every
//! NF and merger sends the packet next.

#[cfg(test)]
use std::collections::BTreeSet;

use crate::analysis::Parallelism;
use crate::compile::Compiler;
use crate::error::{PolicyError, Pos};
#[cfg(test)]
use crate::graph::Plan;
use crate::graph::{
    CopyKind, Delivery, FieldOwner, Forward, Hop, HopDelivery, Merge, Node, Pair, Relation,
    ServiceGraph, Stage, Target,
};
use crate::profile::{Field, FieldSet};

/// Numbers the parallel groups of `stages` depth first, outer groups
/// before the groups they contain.
pub(crate) fn number_groups(stages: &mut [Stage], next: &mut usize) {
    for s in stages {
        if let Stage::Parallel(g) = s {
            g.id = *next;
            *next += 1;
            for b in &mut g.branches {
                number_groups(&mut b.stages, next);
            }
        }
    }
}

/// The NF whose write of `field` a branch's version carries at its end.
fn final_writer(
    c: &Compiler<'_>,
    stages: &[Stage],
    merges: &[Merge],
    field: Field,
) -> Option<usize> {
    stages.iter().rev().find_map(|s| match s {
        Stage::Nf(x) => c.profiles[*x].writes.contains(field).then_some(*x),
        Stage::Parallel(g) => merges
            .iter()
            .find(|m| m.group == g.id)
            .and_then(|m| m.fields.iter().find(|o| o.field == field))
            .map(|o| o.nf),
    })
}

/// Decides the delivery of every branch and builds the merge table
/// (innermost groups first).
pub(crate) fn assign(
    c: &Compiler<'_>,
    stages: &mut [Stage],
    merges: &mut Vec<Merge>,
) -> Result<(), PolicyError> {
    for s in stages {
        let Stage::Parallel(g) = s else { continue };
        for b in &mut g.branches {
            assign(c, &mut b.stages, merges)?;
        }
        let sets: Vec<Vec<usize>> = g
            .branches
            .iter()
            .map(|b| {
                let mut v = Vec::new();
                crate::graph::nfs_of(&b.stages, &mut v);
                v
            })
            .collect();
        let copy_pairs = |i: usize, j: usize| -> Vec<&Pair> {
            let mut v = Vec::new();
            for &x in &sets[i] {
                for &y in &sets[j] {
                    if let Some(p) = c.pair(x, y) {
                        if matches!(p.result, Parallelism::ParallelCopy { .. }) {
                            v.push(p);
                        }
                    }
                }
            }
            v
        };
        let mut fields = Vec::new();
        for f in Field::ANALYSED {
            let cands: Vec<(usize, usize)> = g
                .branches
                .iter()
                .enumerate()
                .filter_map(|(i, b)| final_writer(c, &b.stages, merges, f).map(|x| (i, x)))
                .collect();
            // x's value wins over y's.
            let beats = |x: usize, y: usize| match c.pair(x, y) {
                Some(p) if p.relation == Relation::Priority => p.first == x,
                Some(p) => p.second == x,
                None => false,
            };
            let owner = cands.iter().copied().max_by_key(|&(_, x)| {
                let wins = cands
                    .iter()
                    .filter(|&&(_, y)| y != x && beats(x, y))
                    .count();
                (wins, c.unit_of[x], x)
            });
            if let Some((branch, nf)) = owner {
                fields.push(FieldOwner {
                    field: f,
                    branch,
                    nf,
                });
            }
        }

        // Branches that may share the packet: greedily, those that reshape,
        // own fields in the merge or write first, so that readers (and
        // writers whose value is overwritten) take the copies.
        let score = |i: usize| {
            let owned = fields
                .iter()
                .filter(|o: &&FieldOwner| o.branch == i)
                .count();
            let reshapes = sets[i].iter().any(|&x| c.profiles[x].reshapes);
            let writes = sets[i]
                .iter()
                .fold(FieldSet::EMPTY, |a, &x| {
                    a.union(c.profiles[x].writes.analysed())
                })
                .iter()
                .count();
            (
                std::cmp::Reverse(reshapes),
                std::cmp::Reverse(owned),
                std::cmp::Reverse(writes),
                i,
            )
        };
        let mut order: Vec<usize> = (0..g.branches.len()).collect();
        order.sort_by_key(|&i| score(i));
        let mut sharing: Vec<usize> = Vec::new();
        for i in order {
            if sharing.iter().all(|&j| copy_pairs(i, j).is_empty()) {
                sharing.push(i);
            }
        }
        for i in 0..g.branches.len() {
            if sharing.contains(&i) {
                continue;
            }
            let header_only = (0..g.branches.len()).filter(|&j| j != i).all(|j| {
                copy_pairs(i, j).iter().all(|p| {
                    matches!(
                        p.result,
                        Parallelism::ParallelCopy {
                            header_only: true,
                            ..
                        }
                    )
                })
            });
            g.branches[i].delivery = Delivery::Copy(if header_only {
                CopyKind::HeaderOnly
            } else {
                CopyKind::Full
            });
        }

        let reshapers: Vec<(usize, usize)> = sets
            .iter()
            .enumerate()
            .flat_map(|(i, s)| {
                s.iter()
                    .filter(|&&x| c.profiles[x].reshapes)
                    .map(move |&x| (i, x))
            })
            .collect();
        let layout = reshapers.first().copied();
        if reshapers.iter().any(|r| r.0 != reshapers[0].0) {
            let names: Vec<&str> = reshapers.iter().map(|r| c.name(r.1)).collect();
            return Err(c.err(
                Pos::FILE,
                format!(
                    "{} would add or remove headers in parallel branches; their versions cannot \
                     be merged",
                    names.join(" and ")
                ),
            ));
        }
        // The output's version: the reshaper's (its headers), else the
        // payload owner's (the payload comes with the base), else one
        // that shares the packet.
        let base = layout.map(|l| l.0).unwrap_or_else(|| {
            fields
                .iter()
                .find(|o| o.field == Field::Payload)
                .map_or_else(|| sharing.iter().copied().min().unwrap_or(0), |o| o.branch)
        });

        let mut drop_overrides = Vec::new();
        for (i, si) in sets.iter().enumerate() {
            for (j, sj) in sets.iter().enumerate() {
                if i == j {
                    continue;
                }
                for &h in si {
                    for &l in sj {
                        if c.priority_reach[h][l] && c.profiles[h].drops && c.profiles[l].drops {
                            drop_overrides.push((h, l));
                        }
                    }
                }
            }
        }
        drop_overrides.sort();

        merges.push(Merge {
            group: g.id,
            versions: g.branches.len(),
            base,
            fields,
            drop_overrides,
            layout,
        });
    }
    Ok(())
}

/// The entry hops of `stages`, recording the forwarding of everything in
/// them; `exit` is where the last stage sends the packet.
fn wire(stages: &[Stage], exit: Vec<Hop>, out: &mut Vec<Forward>, copies: &mut usize) -> Vec<Hop> {
    let mut next = exit;
    for s in stages.iter().rev() {
        next = match s {
            Stage::Nf(x) => {
                out.push(Forward {
                    from: Node::Nf(*x),
                    hops: next,
                });
                vec![Hop {
                    to: Target::Nf(*x),
                    delivery: HopDelivery::Packet,
                }]
            }
            Stage::Parallel(g) => {
                out.push(Forward {
                    from: Node::Merger(g.id),
                    hops: next,
                });
                let mut hops = Vec::new();
                for b in &g.branches {
                    let exit = vec![Hop {
                        to: Target::Merger(g.id),
                        delivery: HopDelivery::Packet,
                    }];
                    let entry = wire(&b.stages, exit, out, copies);
                    match b.delivery {
                        Delivery::Packet => hops.extend(entry),
                        Delivery::Copy(kind) => {
                            let copy = *copies;
                            *copies += 1;
                            hops.extend(entry.into_iter().map(|h| Hop {
                                to: h.to,
                                delivery: match h.delivery {
                                    HopDelivery::Packet => HopDelivery::Copy { kind, copy },
                                    HopDelivery::Copy { kind: k, copy } => HopDelivery::Copy {
                                        kind: k.max(kind),
                                        copy,
                                    },
                                },
                            }));
                        }
                    }
                }
                hops
            }
        };
    }
    next
}

pub(crate) fn forwarding(graph: &ServiceGraph) -> Vec<Forward> {
    let mut out = Vec::new();
    let mut copies = 0;
    let exit = vec![Hop {
        to: Target::Out,
        delivery: HopDelivery::Packet,
    }];
    let entry = wire(&graph.stages, exit, &mut out, &mut copies);
    out.push(Forward {
        from: Node::Classifier,
        hops: entry,
    });
    // Graph order: the classifier, then NFs depth first, each merger after
    // its branches.
    fn order(stages: &[Stage], out: &mut Vec<Node>) {
        for s in stages {
            match s {
                Stage::Nf(x) => out.push(Node::Nf(*x)),
                Stage::Parallel(g) => {
                    g.branches.iter().for_each(|b| order(&b.stages, out));
                    out.push(Node::Merger(g.id));
                }
            }
        }
    }
    let mut nodes = vec![Node::Classifier];
    order(&graph.stages, &mut nodes);
    out.sort_by_key(|f| nodes.iter().position(|n| *n == f.from));
    out
}

/// NFs on no path from the classifier, or on a cycle: an empty set for
/// every compiled plan.
#[cfg(test)]
pub(crate) fn unreachable_or_cyclic(plan: &Plan) -> BTreeSet<usize> {
    let mut reached = BTreeSet::new();
    let mut stack = vec![(Node::Classifier, 0usize)];
    let limit = plan.forwarding.len() + 1;
    let mut bad = BTreeSet::new();
    while let Some((node, depth)) = stack.pop() {
        if depth > limit {
            if let Node::Nf(x) = node {
                bad.insert(x);
            }
            continue;
        }
        if let Node::Nf(x) = node {
            reached.insert(x);
        }
        if let Some(f) = plan.forward(node) {
            for h in &f.hops {
                match h.to {
                    Target::Nf(x) => stack.push((Node::Nf(x), depth + 1)),
                    Target::Merger(g) => stack.push((Node::Merger(g), depth + 1)),
                    Target::Out => {}
                }
            }
        }
    }
    bad.extend((0..plan.nfs.len()).filter(|x| !reached.contains(x)));
    bad
}
