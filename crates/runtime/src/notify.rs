//! Click's notifiers, found once when the router is built.
//!
//! A task that listens to a notifier ([`Element::listens`]: a source to the
//! full notifiers downstream of its output, a puller to the empty notifiers
//! upstream of its input) is not run while the signal it listens to is
//! inactive, and runs again once it is active: an `InfiniteSource` in front
//! of a full `Queue` sleeps, an `Unqueue` behind an empty one sleeps, and
//! under simulated time the clock moves on once every task sleeps.
//!
//! The search is Click's (`Notifier::upstream_empty_signal`,
//! `downstream_full_signal`): from the port, along connections and through
//! elements along their flow codes, stopping at each element that offers a
//! notifier of the kind sought. A path that reaches a port of the other
//! mode (a push output while looking upstream for empty notifiers), or an
//! element that may make packets of its own, makes the signal "busy":
//! always active. A path that ends at an element flagged `S0` (it makes no
//! packets) adds nothing; when nothing is found at all the signal is
//! never active.

use pronto_elements::{Element, Listen, NotifierKind, NotifierRole};

use crate::graph::Graph;

/// The signal a task listens to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Always active.
    Busy,
    /// Never active (only `S0` elements upstream: `Idle`).
    Never,
    /// Active while any of these notifiers is.
    Any(Vec<Term>),
}

/// One notifier found by a search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Term {
    pub node: usize,
    pub kind: NotifierKind,
    pub port: usize,
    /// For a derived notifier: the signal upstream of each of its inputs.
    pub inputs: Vec<Gate>,
}

impl Gate {
    fn or(self, other: Gate) -> Gate {
        match (self, other) {
            (Gate::Busy, _) | (_, Gate::Busy) => Gate::Busy,
            (Gate::Never, g) | (g, Gate::Never) => g,
            (Gate::Any(mut a), Gate::Any(b)) => {
                for t in b {
                    if !a.contains(&t) {
                        a.push(t);
                    }
                }
                Gate::Any(a)
            }
        }
    }

    /// True when the signal is active.
    pub fn active(&self, elems: &[Box<dyn Element>]) -> bool {
        match self {
            Gate::Busy => true,
            Gate::Never => false,
            Gate::Any(terms) => terms.iter().any(|t| {
                let upstream = |i: usize| t.inputs.get(i).is_none_or(|g| g.active(elems));
                elems[t.node].signal(t.kind, t.port, &upstream)
            }),
        }
    }
}

/// The gate of the task of element `node`, if it listens to a notifier.
pub(crate) fn task_gate(g: &Graph, elems: &[Box<dyn Element>], node: usize) -> Option<Gate> {
    let mut s = Search {
        g,
        elems,
        seen: Vec::new(),
    };
    match elems[node].listens()? {
        Listen::UpstreamEmpty(port) => Some(s.upstream_of_input(node, port)),
        Listen::DownstreamFull(port) => Some(s.downstream_of_output(node, port)),
    }
}

/// The signals upstream of each input of element `node` (for schedulers
/// that skip inputs with nothing to give).
pub(crate) fn input_gates(g: &Graph, elems: &[Box<dyn Element>], node: usize) -> Vec<Gate> {
    (0..g.nodes[node].ninputs)
        .map(|i| {
            let mut s = Search {
                g,
                elems,
                seen: Vec::new(),
            };
            s.upstream_of_input(node, i)
        })
        .collect()
}

struct Search<'a> {
    g: &'a Graph,
    elems: &'a [Box<dyn Element>],
    /// Ports visited: (node, is output, port).
    seen: Vec<(usize, bool, usize)>,
}

impl Search<'_> {
    /// Empty notifiers upstream of input `port` of `node`.
    fn upstream_of_input(&mut self, node: usize, port: usize) -> Gate {
        let info = &self.g.nodes[node];
        if info.input_push.get(port).copied().unwrap_or(true) {
            // Packets are pushed in: whatever pushes may make them.
            return Gate::Busy;
        }
        match self.g.in_conn[node].get(port).copied().flatten() {
            Some((src, sport)) => self.visit_output(src as usize, sport as usize),
            None => Gate::Never,
        }
    }

    fn visit_output(&mut self, node: usize, port: usize) -> Gate {
        if self.seen.contains(&(node, true, port)) {
            return Gate::Never;
        }
        self.seen.push((node, true, port));
        let info = &self.g.nodes[node];
        match self.elems[node].notifier(NotifierKind::Empty, port) {
            NotifierRole::Signal => {
                return Gate::Any(vec![Term {
                    node,
                    kind: NotifierKind::Empty,
                    port,
                    inputs: Vec::new(),
                }])
            }
            NotifierRole::Derived => {
                let inputs = (0..info.ninputs)
                    .map(|i| self.upstream_of_input(node, i))
                    .collect();
                return Gate::Any(vec![Term {
                    node,
                    kind: NotifierKind::Empty,
                    port,
                    inputs,
                }]);
            }
            NotifierRole::None => {}
        }
        if info.output_push.get(port).copied().unwrap_or(true) {
            return Gate::Busy;
        }
        let ins: Vec<usize> = (0..info.ninputs).filter(|&i| info.flows(i, port)).collect();
        if ins.is_empty() {
            return if info.class.flag('S') == Some(0) {
                Gate::Never
            } else {
                Gate::Busy
            };
        }
        let mut gate = Gate::Never;
        for i in ins {
            gate = gate.or(self.upstream_of_input(node, i));
            if gate == Gate::Busy {
                break;
            }
        }
        gate
    }

    /// Full notifiers downstream of output `port` of `node`.
    fn downstream_of_output(&mut self, node: usize, port: usize) -> Gate {
        let info = &self.g.nodes[node];
        if !info.output_push.get(port).copied().unwrap_or(false) {
            return Gate::Busy;
        }
        match self.g.out_conn[node].get(port).copied().flatten() {
            Some((dst, dport)) => self.visit_input(dst as usize, dport as usize),
            None => Gate::Never,
        }
    }

    fn visit_input(&mut self, node: usize, port: usize) -> Gate {
        if self.seen.contains(&(node, false, port)) {
            return Gate::Never;
        }
        self.seen.push((node, false, port));
        let info = &self.g.nodes[node];
        match self.elems[node].notifier(NotifierKind::Full, port) {
            NotifierRole::Signal | NotifierRole::Derived => {
                return Gate::Any(vec![Term {
                    node,
                    kind: NotifierKind::Full,
                    port,
                    inputs: Vec::new(),
                }])
            }
            NotifierRole::None => {}
        }
        if !info.input_push.get(port).copied().unwrap_or(true) {
            return Gate::Busy;
        }
        let outs: Vec<usize> = (0..info.noutputs)
            .filter(|&o| info.flows(port, o))
            .collect();
        if outs.is_empty() {
            return if info.class.flag('S') == Some(0) {
                Gate::Never
            } else {
                Gate::Busy
            };
        }
        let mut gate = Gate::Never;
        for o in outs {
            gate = gate.or(self.downstream_of_output(node, o));
            if gate == Gate::Busy {
                break;
            }
        }
        gate
    }
}
