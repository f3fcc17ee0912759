//! Contradictions a policy can hold whatever its NFs do: rules about an NF
//! and itself, two NFs pinned to one end, cycles of `order` or `priority`
//! rules, and `order` or `priority` rules that a `position` pin rules out.

use crate::error::{PolicyError, Pos};
use crate::policy::{Place, Policy, Rule};

/// An edge of the order or priority graph: (from, to, rule position).
type Edge = (usize, usize, Pos);

fn order_edges(p: &Policy) -> Vec<Edge> {
    p.rules
        .iter()
        .filter_map(|r| match r {
            Rule::Order { before, after, pos } => Some((*before, *after, *pos)),
            _ => None,
        })
        .collect()
}

fn priority_edges(p: &Policy) -> Vec<Edge> {
    p.rules
        .iter()
        .filter_map(|r| match r {
            Rule::Priority { high, low, pos } => Some((*high, *low, *pos)),
            _ => None,
        })
        .collect()
}

/// A cycle of `edges` over `n` nodes, as the edges in cycle order, if any.
pub(crate) fn find_cycle(n: usize, edges: &[Edge]) -> Option<Vec<Edge>> {
    // 0 unvisited, 1 on the stack, 2 done.
    let mut state = vec![0u8; n];
    let mut stack: Vec<Edge> = Vec::new();
    fn visit(
        v: usize,
        edges: &[Edge],
        state: &mut [u8],
        stack: &mut Vec<Edge>,
    ) -> Option<Vec<Edge>> {
        state[v] = 1;
        for e in edges.iter().filter(|e| e.0 == v) {
            match state[e.1] {
                0 => {
                    stack.push(*e);
                    if let Some(c) = visit(e.1, edges, state, stack) {
                        return Some(c);
                    }
                    stack.pop();
                }
                1 => {
                    let start = stack.iter().position(|s| s.0 == e.1).unwrap_or(stack.len());
                    let mut cycle = stack[start..].to_vec();
                    cycle.push(*e);
                    return Some(cycle);
                }
                _ => {}
            }
        }
        state[v] = 2;
        None
    }
    for v in 0..n {
        if state[v] == 0 {
            if let Some(c) = visit(v, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

/// A path of `edges` from `from` to `to` (at least one edge), if any.
fn find_path(n: usize, edges: &[Edge], from: usize, to: usize) -> Option<Vec<Edge>> {
    let mut prev: Vec<Option<Edge>> = vec![None; n];
    let mut seen = vec![false; n];
    let mut queue = std::collections::VecDeque::from([from]);
    while let Some(v) = queue.pop_front() {
        for e in edges.iter().filter(|e| e.0 == v) {
            if e.1 == to {
                let mut path = vec![*e];
                let mut cur = v;
                while cur != from {
                    let p = prev[cur]?;
                    path.push(p);
                    cur = p.0;
                }
                path.reverse();
                return Some(path);
            }
            if !seen[e.1] {
                seen[e.1] = true;
                prev[e.1] = Some(*e);
                queue.push_back(e.1);
            }
        }
    }
    None
}

fn describe(p: &Policy, path: &[Edge], sep: &str) -> String {
    path.iter()
        .map(|e| {
            format!(
                "{}{sep}{} (line {})",
                p.nfs[e.0].name, p.nfs[e.1].name, e.2.line
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks `p` for contradictions; the first found (in file order where
/// that means something) is the error.
pub(crate) fn check(p: &Policy) -> Result<(), PolicyError> {
    let err = |pos: Pos, m: String| PolicyError::new(&p.file, pos, m);
    let name = |i: usize| p.nfs[i].name.as_str();
    let n = p.nfs.len();

    let mut pins: [Option<(usize, Pos)>; 2] = [None, None];
    for r in &p.rules {
        match *r {
            Rule::Order { before, after, pos } if before == after => {
                return Err(err(
                    pos,
                    format!(
                        "order({0}, before, {0}): an NF cannot run before itself",
                        name(before)
                    ),
                ))
            }
            Rule::Priority { high, low, pos } if high == low => {
                return Err(err(
                    pos,
                    format!(
                        "priority({0} > {0}): priority is between two different NFs",
                        name(high)
                    ),
                ))
            }
            Rule::Position { nf, place, pos } => {
                let other = match place {
                    Place::First => Place::Last,
                    Place::Last => Place::First,
                };
                if let Some((o, opos)) = pins[other as usize] {
                    if o == nf {
                        return Err(err(
                            pos,
                            format!(
                                "`{}` is pinned both {} (line {}) and {}",
                                name(nf),
                                other.name(),
                                opos.line,
                                place.name()
                            ),
                        ));
                    }
                }
                match pins[place as usize] {
                    Some((o, opos)) if o != nf => {
                        return Err(err(
                            pos,
                            format!(
                                "`{}` and `{}` (line {}) are both pinned {}; only one NF can be {}",
                                name(nf),
                                name(o),
                                opos.line,
                                place.name(),
                                place.name()
                            ),
                        ))
                    }
                    Some(_) => {}
                    None => pins[place as usize] = Some((nf, pos)),
                }
            }
            _ => {}
        }
    }

    let orders = order_edges(p);
    if let Some(cycle) = find_cycle(n, &orders) {
        let at = cycle.iter().map(|e| e.2).max().unwrap_or_default();
        return Err(err(
            at,
            format!(
                "order rules form a cycle: {}",
                describe(p, &cycle, " before ")
            ),
        ));
    }
    let priorities = priority_edges(p);
    if let Some(cycle) = find_cycle(n, &priorities) {
        let at = cycle.iter().map(|e| e.2).max().unwrap_or_default();
        return Err(err(
            at,
            format!(
                "priority rules contradict each other: {}",
                describe(p, &cycle, " > ")
            ),
        ));
    }

    for (place, pin) in [Place::First, Place::Last].into_iter().zip(pins) {
        let Some((pinned, pin_pos)) = pin else {
            continue;
        };
        // An NF that must come before the first NF, or after the last.
        let path = (0..n).filter(|&x| x != pinned).find_map(|x| match place {
            Place::First => find_path(n, &orders, x, pinned),
            Place::Last => find_path(n, &orders, pinned, x),
        });
        if let Some(path) = path {
            let rule = match place {
                Place::First => path[path.len() - 1],
                Place::Last => path[0],
            };
            let what = match place {
                Place::First => "no NF can run before the first one",
                Place::Last => "no NF can run after the last one",
            };
            let message = if path.len() == 1 {
                format!(
                    "order({}, before, {}) contradicts position({}, {}) at line {}: {what}",
                    name(rule.0),
                    name(rule.1),
                    name(pinned),
                    place.name(),
                    pin_pos.line
                )
            } else {
                format!(
                    "the order rules {} contradict position({}, {}) at line {}: {what}",
                    describe(p, &path, " before "),
                    name(pinned),
                    place.name(),
                    pin_pos.line
                )
            };
            return Err(err(rule.2, message));
        }
        if let Some(e) = priorities.iter().find(|e| e.0 == pinned || e.1 == pinned) {
            return Err(err(
                e.2,
                format!(
                    "priority({} > {}) asks `{}` to run in parallel with `{}`, but position({}, {}) \
                     at line {} makes it run alone at the {} of the graph",
                    name(e.0),
                    name(e.1),
                    name(pinned),
                    if e.0 == pinned { name(e.1) } else { name(e.0) },
                    name(pinned),
                    place.name(),
                    pin_pos.line,
                    if place == Place::First { "head" } else { "tail" }
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::policy::Policy;

    const DECL: &str = "nf a = builtin(monitor)\nnf b = builtin(monitor)\nnf c = builtin(monitor)\nnf d = builtin(monitor)\n";

    fn check(rules: &str) -> Result<(), String> {
        Policy::parse("t.nfp", &format!("{DECL}{rules}"))
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn consistent_policies_pass() {
        check("order(a, before, b)\norder(b, before, c)\norder(a, before, c)\n").expect("ok");
        check("position(a, first)\nposition(a, first)\norder(a, before, b)\nposition(d, last)\norder(c, before, d)\n")
            .expect("ok");
        check("priority(a > b)\npriority(b > c)\npriority(a > c)\norder(a, before, b)\n")
            .expect("ok");
    }

    #[test]
    fn contradictions() {
        let cases = [
            ("order(a, before, a)", "t.nfp:5:1: error: order(a, before, a): an NF cannot run before itself"),
            ("priority(b > b)", "t.nfp:5:1: error: priority(b > b): priority is between two different NFs"),
            (
                "position(a, first)\nposition(b, first)",
                "t.nfp:6:1: error: `b` and `a` (line 5) are both pinned first; only one NF can be first",
            ),
            (
                "position(c, last)\nposition(d, last)",
                "t.nfp:6:1: error: `d` and `c` (line 5) are both pinned last; only one NF can be last",
            ),
            (
                "position(a, first)\nposition(a, last)",
                "t.nfp:6:1: error: `a` is pinned both first (line 5) and last",
            ),
            (
                "order(a, before, b)\norder(b, before, c)\norder(c, before, a)",
                "t.nfp:7:1: error: order rules form a cycle: a before b (line 5), b before c (line 6), \
                 c before a (line 7)",
            ),
            (
                "order(a, before, b)\norder(b, before, a)",
                "t.nfp:6:1: error: order rules form a cycle: a before b (line 5), b before a (line 6)",
            ),
            (
                "priority(a > b)\npriority(b > a)",
                "t.nfp:6:1: error: priority rules contradict each other: a > b (line 5), b > a (line 6)",
            ),
            (
                "order(a, before, b)\nposition(b, first)",
                "t.nfp:5:1: error: order(a, before, b) contradicts position(b, first) at line 6: no NF \
                 can run before the first one",
            ),
            (
                "position(c, first)\norder(a, before, b)\norder(b, before, c)",
                "t.nfp:7:1: error: the order rules a before b (line 6), b before c (line 7) contradict \
                 position(c, first) at line 5: no NF can run before the first one",
            ),
            (
                "position(a, last)\norder(a, before, d)",
                "t.nfp:6:1: error: order(a, before, d) contradicts position(a, last) at line 5: no NF \
                 can run after the last one",
            ),
            (
                "position(a, first)\nposition(b, last)\norder(b, before, a)",
                "t.nfp:7:1: error: order(b, before, a) contradicts position(a, first) at line 5: no NF \
                 can run before the first one",
            ),
            (
                "position(a, first)\npriority(b > a)",
                "t.nfp:6:1: error: priority(b > a) asks `a` to run in parallel with `b`, but \
                 position(a, first) at line 5 makes it run alone at the head of the graph",
            ),
        ];
        for (rules, want) in cases {
            assert_eq!(check(rules).expect_err(rules), want, "{rules}");
        }
    }
}
