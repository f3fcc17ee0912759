//! Interleaved, branch-free evaluation of a program over many packets.
//!
//! The decision program is re-laid out as a uniform step table: every
//! node, switch or not, becomes one step that loads a pre-gathered packet
//! word, masks it, hashes it into a small case table (one entry for plain
//! tests, a collision-free multiply-shift table for switches) and picks
//! the next step with a select instead of a branch. Terminals become steps
//! that loop to themselves. A group of [`LANES`] packets then walks the
//! table in lock step for a fixed number of rounds (the longest path), so
//! the only branches left are loop counters and bounds checks that never
//! fail; independent lanes overlap their load latencies.
//!
//! Packets too short for some test of the program (the only case where a
//! "packet too short" successor could be taken) take the scalar path.

use std::collections::HashMap;

use crate::dd::{Node, KIND_GT, KIND_SWITCH, TERM};

/// Packets walked together.
pub(crate) const LANES: usize = 8;
/// Most distinct packet words a program may read to use the batch plan.
pub(crate) const MAX_SLOTS: usize = 16;
/// Longest root-to-terminal path the batch plan accepts.
const MAX_ROUNDS: usize = 48;
/// Programs with a longest path shorter than this are walked per packet.
const MIN_ROUNDS: usize = 3;
/// Capacity of the step array (a power of two, so that masked indices
/// need no bounds check).
const MAX_STEPS: usize = 1024;
/// Capacity of the case table (a power of two).
const MAX_TABLE: usize = 4096;

/// One uniform step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Step {
    /// Index of the gathered word (below [`MAX_SLOTS`]).
    slot: u8,
    /// Ordering of the word against the case value that counts as a
    /// match: 0 (equal) or 1 (greater).
    want: i8,
    /// Hash shift (0 with `mult` 0 for one-entry tables).
    shift: u8,
    mask: u32,
    mult: u32,
    /// First entry of this step's case table.
    base: u32,
    /// Successor when no case matches.
    miss: u32,
}

/// The batch form of a program.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    steps: Box<[Step; MAX_STEPS]>,
    /// (value, successor) entries.
    table: Box<[(u32, u32); MAX_TABLE]>,
    /// Per step: the decoded result for terminal steps.
    result: Box<[Option<usize>; MAX_STEPS]>,
    /// Gathered words: (space, offset).
    slots: Box<[(u8, usize)]>,
    /// Minimum length of each space for the packet to take the batch path.
    need: [usize; 2],
    rounds: usize,
    root: u32,
}

/// Multipliers tried for switch tables (odd, well mixed).
fn multiplier(k: u32) -> u32 {
    0x9E37_79B1u32.wrapping_mul(2 * k + 1) | 1
}

impl Plan {
    /// Heap bytes held by a plan (its tables have fixed sizes).
    pub(crate) const HEAP_BYTES: usize = MAX_STEPS * std::mem::size_of::<Step>()
        + MAX_TABLE * 8
        + MAX_STEPS * std::mem::size_of::<Option<usize>>()
        + MAX_SLOTS * 16;

    /// Builds the batch plan for `nodes` (root at index 0), or `None` when
    /// the program does not fit its limits.
    pub(crate) fn new(nodes: &[Node], cases: &[(u32, u32)]) -> Option<Plan> {
        if nodes.is_empty() {
            return None;
        }
        let mut slot_of: HashMap<(u8, usize), u8> = HashMap::new();
        let mut slots = Vec::new();
        let mut need = [0usize; 2];
        for n in nodes {
            let key = (n.space & 1, n.off as usize);
            let end = key.1.checked_add(4)?;
            need[usize::from(key.0)] = need[usize::from(key.0)].max(end);
            if let std::collections::hash_map::Entry::Vacant(e) = slot_of.entry(key) {
                if slots.len() >= MAX_SLOTS {
                    return None;
                }
                e.insert(slots.len() as u8);
                slots.push(key);
            }
        }
        let succ = |n: &Node| -> Vec<u32> {
            if n.kind == KIND_SWITCH {
                switch_cases(n, cases)
                    .iter()
                    .map(|&(_, t)| t)
                    .chain([n.next[1]])
                    .collect()
            } else {
                vec![n.next[0], n.next[1]]
            }
        };
        let rounds = longest_path(nodes, &succ)?;
        // Short programs (Classifier(12/0800, -) is one test) are cheaper
        // walked per packet: the lock-step walk's fixed cost per packet
        // (gathering words, a result per lane) only pays off over several
        // data-dependent steps.
        if !(MIN_ROUNDS..=MAX_ROUNDS).contains(&rounds) {
            return None;
        }

        let mut steps = Vec::with_capacity(nodes.len() + 4);
        let mut table = Vec::new();
        let mut result = vec![None; nodes.len()];
        let mut terms: HashMap<u32, u32> = HashMap::new();
        let mut pending: Vec<u32> = Vec::new();
        let mut target = |t: u32| -> u32 {
            if t & TERM == 0 {
                return t;
            }
            *terms.entry(t).or_insert_with(|| {
                pending.push(t);
                (nodes.len() + pending.len() - 1) as u32
            })
        };
        for n in nodes {
            let slot = slot_of[&(n.space & 1, n.off as usize)];
            let base = table.len() as u32;
            if n.kind == KIND_SWITCH {
                let cs = switch_cases(n, cases);
                let miss = target(n.next[1]);
                let (bits, mult) = perfect_hash(cs)?;
                let shift = 32 - bits;
                let mut t = vec![(0u32, miss); 1usize << bits];
                for &(v, to) in cs {
                    t[(v.wrapping_mul(mult) >> shift) as usize] = (v, target(to));
                }
                table.extend(t);
                steps.push(Step {
                    slot,
                    want: 0,
                    shift: shift as u8,
                    mask: n.mask,
                    mult,
                    base,
                    miss,
                });
            } else {
                table.push((n.value, target(n.next[0])));
                steps.push(Step {
                    slot,
                    want: i8::from(n.kind == KIND_GT),
                    shift: 0,
                    mask: n.mask,
                    mult: 0,
                    base,
                    miss: target(n.next[1]),
                });
            }
        }
        for t in pending {
            let me = steps.len() as u32;
            steps.push(Step {
                slot: 0,
                want: 0,
                shift: 0,
                mask: 0,
                mult: 0,
                base: table.len() as u32,
                miss: me,
            });
            table.push((0, me));
            result.push(crate::decode(t));
        }
        if steps.len() > MAX_STEPS || table.len() > MAX_TABLE {
            return None;
        }
        let mut step_arr = Box::new([Step::default(); MAX_STEPS]);
        step_arr[..steps.len()].copy_from_slice(&steps);
        let mut table_arr = Box::new([(0u32, 0u32); MAX_TABLE]);
        table_arr[..table.len()].copy_from_slice(&table);
        let mut result_arr = Box::new([None; MAX_STEPS]);
        result_arr[..result.len()].copy_from_slice(&result);
        Some(Plan {
            steps: step_arr,
            table: table_arr,
            result: result_arr,
            slots: slots.into_boxed_slice(),
            need,
            rounds,
            root: 0,
        })
    }

    /// Whether a packet with these (primary, transport) spaces is long
    /// enough for every test, so that it can take the batch path.
    #[inline]
    pub(crate) fn fits(&self, sp: [&[u8]; 2]) -> bool {
        (sp[0].len() >= self.need[0]) & (sp[1].len() >= self.need[1])
    }

    /// Gathers the words of `LANES` packets (zero where a packet is too
    /// short; such packets take the scalar path).
    #[inline]
    pub(crate) fn gather(&self, sp: &[[&[u8]; 2]; LANES], words: &mut [[u32; MAX_SLOTS]; LANES]) {
        for (k, &(space, off)) in self.slots.iter().enumerate().take(MAX_SLOTS) {
            for (wl, s) in words.iter_mut().zip(sp.iter()) {
                wl[k] = match s[usize::from(space & 1)].get(off..off.wrapping_add(4)) {
                    Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
                    _ => 0,
                };
            }
        }
    }

    /// Walks `LANES` packets given their gathered words; returns their
    /// results.
    #[inline]
    pub(crate) fn walk(&self, words: &[[u32; MAX_SLOTS]; LANES]) -> [Option<usize>; LANES] {
        let steps = &*self.steps;
        let table = &*self.table;
        let mut cur = [self.root; LANES];
        for _ in 0..self.rounds {
            for (c, wl) in cur.iter_mut().zip(words.iter()) {
                let st = &steps[*c as usize & (MAX_STEPS - 1)];
                let w = wl[usize::from(st.slot) & (MAX_SLOTS - 1)] & st.mask;
                let idx = st.base.wrapping_add(w.wrapping_mul(st.mult) >> st.shift);
                let (v, to) = table[idx as usize & (MAX_TABLE - 1)];
                let hit = w.cmp(&v) as i8 == st.want;
                *c = if hit { to } else { st.miss };
            }
        }
        let mut out = [None; LANES];
        for (o, &c) in out.iter_mut().zip(cur.iter()) {
            *o = self.result[c as usize & (MAX_STEPS - 1)];
        }
        out
    }
}

fn switch_cases<'a>(n: &Node, cases: &'a [(u32, u32)]) -> &'a [(u32, u32)] {
    let start = n.value as usize;
    cases
        .get(start..start + usize::from(n.ncases))
        .unwrap_or(&[])
}

/// A table size (as bits, at least 1) and multiplier under which the case
/// values land in distinct entries.
fn perfect_hash(cs: &[(u32, u32)]) -> Option<(u32, u32)> {
    let min_bits = (cs.len().max(2) as u32)
        .next_power_of_two()
        .trailing_zeros();
    let mut used = Vec::new();
    for bits in min_bits..=(min_bits + 3).min(16) {
        for k in 0..256 {
            let mult = multiplier(k);
            used.clear();
            used.resize(1usize << bits, false);
            let ok = cs.iter().all(|&(v, _)| {
                let i = (v.wrapping_mul(mult) >> (32 - bits)) as usize;
                !std::mem::replace(&mut used[i], true)
            });
            if ok {
                return Some((bits, mult));
            }
        }
    }
    None
}

/// Number of non-terminal nodes on the longest path from node 0 (`None`
/// on a cycle, which compiled programs never have).
fn longest_path(nodes: &[Node], succ: &dyn Fn(&Node) -> Vec<u32>) -> Option<usize> {
    // 0 = unvisited, 1 = on the stack, 2 = done.
    let mut state = vec![0u8; nodes.len()];
    let mut depth = vec![0usize; nodes.len()];
    let mut stack: Vec<(usize, Vec<u32>, usize)> = Vec::new();
    state[0] = 1;
    stack.push((0, succ(&nodes[0]), 0));
    while let Some(top) = stack.last_mut() {
        let (i, ref next, ref mut k) = *top;
        if let Some(&t) = next.get(*k) {
            *k += 1;
            if t & TERM != 0 {
                continue;
            }
            let j = t as usize;
            match state.get(j)? {
                0 => {
                    state[j] = 1;
                    let s = succ(&nodes[j]);
                    stack.push((j, s, 0));
                }
                1 => return None,
                _ => {}
            }
        } else {
            let d = 1 + next
                .iter()
                .filter(|&&t| t & TERM == 0)
                .map(|&t| depth[t as usize])
                .max()
                .unwrap_or(0);
            depth[i] = d;
            state[i] = 2;
            stack.pop();
        }
    }
    Some(depth[0])
}
