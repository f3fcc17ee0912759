//! Compilation of rule lists into a flat decision program.
//!
//! Every rule expression is turned into a reduced, shared multi-terminal
//! decision diagram (each test node has three successors: match, no match,
//! packet too short). Tests are ordered by first appearance across the rule
//! list; within that order every path tests each distinct comparison at most
//! once, identical sub-diagrams are shared, and tests whose outcome cannot
//! change the result are removed. The first-match rule list is folded into
//! the diagram with if-then-else, so a packet walks one root-to-leaf path
//! and touches only tests that matter for it.
//!
//! If a pathological rule set makes the diagram exceed its size budget, the
//! compiler falls back to a direct translation (one node per leaf test, the
//! same shape as a classic classifier jump program), which is linear in the
//! size of the rules.

use std::collections::HashMap;

use crate::expr::{Expr, Test};

/// Terminal marker bit for jump targets.
pub(crate) const TERM: u32 = 1 << 31;
/// Terminal: drop the packet.
pub(crate) const DROP: u32 = TERM | 0x7FFF_FFFF;
const TRUE: u32 = TERM | 0x7FFF_FFFE;
const FALSE: u32 = TERM | 0x7FFF_FFFD;
/// Largest output port number that can be encoded.
pub(crate) const MAX_OUTPUT: usize = 0x00FF_FFFF;

const MAX_VARS: usize = 2048;
const MAX_NODES: usize = 1 << 18;

/// A flat test node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Node {
    pub off: u32,
    pub mask: u32,
    pub value: u32,
    pub space: u8,
    pub need: u8,
    /// `KIND_EQ`, `KIND_GT` or `KIND_SWITCH`.
    pub kind: u8,
    /// For switches: number of cases, stored from index `value` in the
    /// case table.
    pub ncases: u16,
    /// Successors: [match, no match, too short]. For a switch: [unused,
    /// no case matched, too short].
    pub next: [u32; 3],
}

pub(crate) const KIND_EQ: u8 = 0;
pub(crate) const KIND_GT: u8 = 1;
pub(crate) const KIND_SWITCH: u8 = 2;
/// Largest number of cases merged into one switch node.
const MAX_CASES: usize = 64;

impl Node {
    fn new(t: &Test, next: [u32; 3]) -> Node {
        Node {
            off: t.off,
            mask: t.mask,
            value: t.value,
            space: t.space as u8,
            need: t.need() as u8,
            kind: if t.gt { KIND_GT } else { KIND_EQ },
            ncases: 0,
            next,
        }
    }
}

pub(crate) struct Compiled {
    pub nodes: Vec<Node>,
    /// Switch cases: (masked value, target), sorted by value per switch.
    pub cases: Vec<(u32, u32)>,
    pub root: u32,
}

pub(crate) fn out_ref(out: Option<usize>) -> u32 {
    match out {
        Some(k) => TERM | k as u32,
        None => DROP,
    }
}

/// Compile a first-match rule list.
pub(crate) fn compile(rules: &[(Expr, Option<usize>)]) -> Compiled {
    let mut b = Mdd::default();
    // Variable order: first appearance, except that equality tests on the
    // same field (space, offset, mask) are kept adjacent so that chains of
    // them can become switch nodes.
    let mut groups: Vec<Vec<Test>> = Vec::new();
    let mut group_of: HashMap<(u8, u32, u32, bool, u32), usize> = HashMap::new();
    let mut seen: HashMap<Test, ()> = HashMap::new();
    for (e, _) in rules {
        e.for_each_test(&mut |t| {
            if seen.insert(*t, ()).is_some() {
                return;
            }
            let key = (
                t.space as u8,
                t.off,
                t.mask,
                t.gt,
                if t.gt { t.value } else { 0 },
            );
            let g = *group_of.entry(key).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(*t);
        });
    }
    for t in groups.into_iter().flatten() {
        b.var_of.insert(t, b.tests.len() as u32);
        b.tests.push(t);
    }
    if b.tests.len() <= MAX_VARS {
        b.implications();
        if let Ok(root) = b.rules(rules) {
            return b.flatten(root);
        }
    }
    linear(rules)
}

struct Overflow;

#[derive(Default)]
struct Mdd {
    tests: Vec<Test>,
    var_of: HashMap<Test, u32>,
    /// (var, match, nomatch, short)
    nodes: Vec<[u32; 4]>,
    unique: HashMap<[u32; 4], u32>,
    memo: HashMap<(u32, u32, u32), u32>,
    /// Per variable and outcome (0 = no match, 1 = match): later variables
    /// whose outcome is then known, with that outcome.
    implied: Vec<[Vec<(u32, bool)>; 2]>,
    restrict_memo: HashMap<(u32, u32, bool), u32>,
}

/// If test `v` was evaluated (packet long enough) with outcome `ov`, is the
/// outcome of test `u` known? Only tests on the same word whose bytes are
/// covered by `v`'s are considered, so `u` cannot be short.
fn implied(v: &Test, ov: bool, u: &Test) -> Option<bool> {
    if v.space != u.space || v.off != u.off || u.need() > v.need() || v == u {
        return None;
    }
    match (v.gt, u.gt) {
        (false, false) => {
            if ov {
                if (v.value ^ u.value) & v.mask & u.mask != 0 {
                    Some(false)
                } else if u.mask & !v.mask == 0 {
                    Some(true)
                } else {
                    None
                }
            } else if v.mask & !u.mask == 0 && u.value & v.mask == v.value {
                Some(false)
            } else {
                None
            }
        }
        _ if v.mask != u.mask => None,
        (false, true) => ov.then_some(v.value > u.value),
        (true, false) => {
            if (ov && u.value <= v.value) || (!ov && u.value > v.value) {
                Some(false)
            } else {
                None
            }
        }
        (true, true) => {
            if ov && u.value <= v.value {
                Some(true)
            } else if !ov && u.value >= v.value {
                Some(false)
            } else {
                None
            }
        }
    }
}

impl Mdd {
    fn implications(&mut self) {
        let n = self.tests.len();
        self.implied = (0..n)
            .map(|v| {
                let f = |ov: bool| {
                    (v + 1..n)
                        .filter_map(|u| {
                            implied(&self.tests[v], ov, &self.tests[u]).map(|b| (u as u32, b))
                        })
                        .collect::<Vec<_>>()
                };
                [f(false), f(true)]
            })
            .collect();
    }

    /// Simplify `f` given that variable `v` had outcome `ov`.
    fn restrict(&mut self, f: u32, v: u32, ov: bool) -> Result<u32, Overflow> {
        let list = &self.implied[v as usize][usize::from(ov)];
        let Some(&(last, _)) = list.last() else {
            return Ok(f);
        };
        let u = self.var(f);
        if u == u32::MAX || u > last {
            return Ok(f);
        }
        if let Some(&r) = self.restrict_memo.get(&(f, v, ov)) {
            return Ok(r);
        }
        let n = self.nodes[f as usize];
        let known = list.iter().find(|&&(x, _)| x == u).map(|&(_, b)| b);
        let r = match known {
            Some(true) => self.restrict(n[1], v, ov)?,
            Some(false) => self.restrict(n[2], v, ov)?,
            None => {
                let hi = self.restrict(n[1], v, ov)?;
                let lo = self.restrict(n[2], v, ov)?;
                let sh = self.restrict(n[3], v, ov)?;
                self.mk(u, hi, lo, sh)?
            }
        };
        self.restrict_memo.insert((f, v, ov), r);
        Ok(r)
    }

    fn var(&self, r: u32) -> u32 {
        if r & TERM != 0 {
            u32::MAX
        } else {
            self.nodes[r as usize][0]
        }
    }

    fn mk(&mut self, v: u32, hi: u32, lo: u32, sh: u32) -> Result<u32, Overflow> {
        if hi == lo && lo == sh {
            return Ok(hi);
        }
        let key = [v, hi, lo, sh];
        if let Some(&r) = self.unique.get(&key) {
            return Ok(r);
        }
        if self.nodes.len() >= MAX_NODES {
            return Err(Overflow);
        }
        let r = self.nodes.len() as u32;
        self.nodes.push(key);
        self.unique.insert(key, r);
        Ok(r)
    }

    fn cof(&self, r: u32, v: u32) -> [u32; 3] {
        if self.var(r) == v {
            let n = self.nodes[r as usize];
            [n[1], n[2], n[3]]
        } else {
            [r, r, r]
        }
    }

    fn ite(&mut self, f: u32, g: u32, h: u32) -> Result<u32, Overflow> {
        if f == TRUE || g == h {
            return Ok(g);
        }
        if f == FALSE {
            return Ok(h);
        }
        if g == TRUE && h == FALSE {
            return Ok(f);
        }
        if let Some(&r) = self.memo.get(&(f, g, h)) {
            return Ok(r);
        }
        let v = self.var(f).min(self.var(g)).min(self.var(h));
        let (cf, cg, ch) = (self.cof(f, v), self.cof(g, v), self.cof(h, v));
        let hi = self.ite(cf[0], cg[0], ch[0])?;
        let hi = self.restrict(hi, v, true)?;
        let lo = self.ite(cf[1], cg[1], ch[1])?;
        let lo = self.restrict(lo, v, false)?;
        let sh = self.ite(cf[2], cg[2], ch[2])?;
        let r = self.mk(v, hi, lo, sh)?;
        self.memo.insert((f, g, h), r);
        Ok(r)
    }

    fn expr(&mut self, e: &Expr) -> Result<u32, Overflow> {
        Ok(match e {
            Expr::Const(true) => TRUE,
            Expr::Const(false) => FALSE,
            Expr::Leaf { test, short } => {
                let v = self.var_of[test];
                self.mk(v, TRUE, FALSE, if *short { TRUE } else { FALSE })?
            }
            Expr::Not(x) => {
                let x = self.expr(x)?;
                self.ite(x, FALSE, TRUE)?
            }
            Expr::And(v) => {
                let mut r = TRUE;
                for x in v.iter().rev() {
                    let x = self.expr(x)?;
                    r = self.ite(x, r, FALSE)?;
                }
                r
            }
            Expr::Or(v) => {
                let mut r = FALSE;
                for x in v.iter().rev() {
                    let x = self.expr(x)?;
                    r = self.ite(x, TRUE, r)?;
                }
                r
            }
            Expr::Ternary(c, a, b) => {
                let c = self.expr(c)?;
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                self.ite(c, a, b)?
            }
        })
    }

    fn rules(&mut self, rules: &[(Expr, Option<usize>)]) -> Result<u32, Overflow> {
        let mut r = DROP;
        for (e, out) in rules.iter().rev() {
            let f = self.expr(e)?;
            r = self.ite(f, out_ref(*out), r)?;
        }
        Ok(r)
    }

    /// The chain of equality tests on the same field reachable from `r`
    /// through "no match" edges: ([(value, match target)], final target).
    fn chain(&self, r: u32) -> (Vec<(u32, u32)>, u32) {
        let first = self.tests[self.nodes[r as usize][0] as usize];
        let mut cases = Vec::new();
        let mut cur = r;
        while cur & TERM == 0 && cases.len() < MAX_CASES {
            let n = self.nodes[cur as usize];
            let t = self.tests[n[0] as usize];
            if t.gt || t.space != first.space || t.off != first.off || t.mask != first.mask {
                break;
            }
            if cases.iter().any(|&(v, _)| v == t.value) {
                break;
            }
            cases.push((t.value, n[1]));
            cur = n[2];
        }
        (cases, cur)
    }

    /// Lay out reachable nodes breadth-first from the root, merging chains
    /// of same-field equality tests into switch nodes.
    fn flatten(&self, root: u32) -> Compiled {
        if root & TERM != 0 {
            return Compiled {
                nodes: Vec::new(),
                cases: Vec::new(),
                root: fix_term(root),
            };
        }
        let mut index: HashMap<u32, u32> = HashMap::new();
        let mut order = vec![root];
        index.insert(root, 0);
        let mut plans: Vec<(Vec<(u32, u32)>, u32)> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let r = order[i];
            let n = self.nodes[r as usize];
            let (cases, dflt) = self.chain(r);
            let succ: Vec<u32> = if cases.len() >= 2 {
                cases.iter().map(|&(_, t)| t).chain([dflt, n[3]]).collect()
            } else {
                n[1..].to_vec()
            };
            for c in succ {
                if c & TERM == 0 && !index.contains_key(&c) {
                    index.insert(c, order.len() as u32);
                    order.push(c);
                }
            }
            plans.push((cases, dflt));
            i += 1;
        }
        let map = |c: u32| {
            if c & TERM != 0 {
                fix_term(c)
            } else {
                index[&c]
            }
        };
        let mut nodes = Vec::with_capacity(order.len());
        let mut table = Vec::new();
        for (&r, (cases, dflt)) in order.iter().zip(plans) {
            let n = self.nodes[r as usize];
            let t = &self.tests[n[0] as usize];
            if cases.len() >= 2 {
                let mut cs: Vec<(u32, u32)> = cases.iter().map(|&(v, c)| (v, map(c))).collect();
                cs.sort_unstable();
                let mut node = Node::new(t, [DROP, map(dflt), map(n[3])]);
                node.kind = KIND_SWITCH;
                node.value = table.len() as u32;
                node.ncases = cs.len() as u16;
                table.extend(cs);
                nodes.push(node);
            } else {
                nodes.push(Node::new(t, [map(n[1]), map(n[2]), map(n[3])]));
            }
        }
        Compiled {
            nodes,
            cases: table,
            root: 0,
        }
    }
}

fn fix_term(t: u32) -> u32 {
    if t == TRUE || t == FALSE {
        DROP
    } else {
        t
    }
}

/// Appends the direct translation of `e` to `nodes` (match goes to `yes`,
/// no match to `no`) and returns its entry point.
pub(crate) fn lin(e: &Expr, yes: u32, no: u32, nodes: &mut Vec<Node>) -> u32 {
    match e {
        Expr::Const(b) => {
            if *b {
                yes
            } else {
                no
            }
        }
        Expr::Leaf { test, short } => {
            nodes.push(Node::new(test, [yes, no, if *short { yes } else { no }]));
            (nodes.len() - 1) as u32
        }
        Expr::Not(x) => lin(x, no, yes, nodes),
        Expr::And(v) => v.iter().rev().fold(yes, |t, x| lin(x, t, no, nodes)),
        Expr::Or(v) => v.iter().rev().fold(no, |t, x| lin(x, yes, t, nodes)),
        Expr::Ternary(c, a, b) => {
            let a = lin(a, yes, no, nodes);
            let b = lin(b, yes, no, nodes);
            lin(c, a, b, nodes)
        }
    }
}

/// Direct translation without sharing or reordering.
fn linear(rules: &[(Expr, Option<usize>)]) -> Compiled {
    let mut nodes = Vec::new();
    let mut r = DROP;
    for (e, out) in rules.iter().rev() {
        r = lin(e, out_ref(*out), r, &mut nodes);
    }
    Compiled {
        nodes,
        cases: Vec::new(),
        root: r,
    }
}

/// Testing hook: force the linear translation.
#[cfg(test)]
pub(crate) fn compile_linear(rules: &[(Expr, Option<usize>)]) -> Compiled {
    linear(rules)
}
