//! The longest-prefix-match table behind `LookupIP6Route`: 128-bit
//! prefixes mapped to nonzero 31-bit values, made for a full IPv6 BGP
//! table (about 200,000 prefixes, mostly /32 to /48, some /64 and /128).
//!
//! # Design: a Poptrie (Asai and Ohara, SIGCOMM 2015)
//!
//! - **Direct pointing**: the top 18 address bits index a 2^18-entry array
//!   (1 MiB). An entry is either a leaf (the value of the longest prefix of
//!   at most 18 bits covering it, flag [`LEAF`]) or the index of the root
//!   node of a subtree.
//! - **Nodes of stride 6**, each 32 bytes: a 64-bit `vector` (bit *i*:
//!   slot *i* has a child node), a 64-bit `leafvec` (bit *i*: slot *i* is a
//!   leaf whose value differs from the previous leaf slot's) and two base
//!   indexes. A node's children are contiguous, as are its distinct leaves,
//!   so a slot's child or leaf is found by counting the set bits below it
//!   (`popcount`): no pointer per slot, and runs of equal leaves (what leaf
//!   pushing makes) take one entry. Values are pushed to the leaves when
//!   the trie is built, so a lookup stops at the first leaf. A node with at
//!   most three distinct leaves (most nodes at the bottom: a /48 inside its
//!   /32 is three runs) keeps them in its last 12 bytes, so the lookup that
//!   ends there reads nothing more; 32-byte nodes never straddle two cache
//!   lines.
//! - **Tips** (pronto's addition to the Poptrie): a subtree holding at
//!   most two prefixes, none longer than /64, is one node that keeps them
//!   whole and compares them with the address, in place of the chain of
//!   nodes that would lead to them (a lone /48 under its /32 would be two
//!   more levels). In a BGP table most /48s are such: on the benchmark's
//!   table, tips halve the nodes and end 86% of lookups.
//! - A /48 not in a tip is reached in 5 node reads below the direct level,
//!   a /32 in 3, a /64 in 8; /128 host routes go down 19 levels, only on
//!   their own path. A lookup of the benchmark reads 3.6 nodes on average.
//!   Lookups of a batch walk the levels in lock step
//!   ([`Lpm6::lookup_many`]), every read of a level issued before any is
//!   used, so the cache misses of a batch overlap; the batch walk counts
//!   bits with `POPCNT` where the CPU has it (`pronto_packet::cpu`). The
//!   arrays are on transparent huge pages (random reads over megabytes
//!   would otherwise miss the TLB too). Each subtree is laid out breadth
//!   first above /30 (the upper levels, read by most lookups, packed
//!   together) and depth first below (the chain of nodes above a long
//!   prefix in adjacent lines).
//!
//! Why not the others: a 16-8-8... multibit trie with uncompressed 256-slot
//! nodes needs a node per level for every /48 below its /32 (about 1 KiB
//! each, several hundred MiB for 200k prefixes); DIR-24-8 generalised to
//! 128 bits has the same problem; binary search on prefix lengths
//! (Waldvogel) costs about six dependent hash probes per lookup with
//! markers that complicate removal; a DXR-like range table needs a binary
//! search over ~400k 128-bit boundaries (ten or more dependent reads) and
//! rebuilds whole ranges on updates. The Poptrie keeps every lookup at a
//! few small reads and its nodes compact.
//!
//! **Memory** for the 200,000-prefix table of `bench/route6_table.py`
//! (printed by the `route_lookup` bench; [`Lpm6::lookup_bytes`],
//! [`Lpm6::shape`]): the direct array (1 MiB), 196,965 nodes (6.0 MiB)
//! and 22,340 out-of-node leaves (0.1 MiB):
//! 7.1 MiB searched by lookups, about 37 bytes per prefix (12.5 MiB
//! without tips). The control state, read only by updates: the per-slot
//! arrays (2.3 MiB) and the prefix map (a B-tree, roughly 50 bytes per
//! prefix, 10 MiB).
//!
//! **Updates** rebuild the subtree of each direct slot the prefix touches:
//! one slot for prefixes longer than /18 (milliseconds at most), 2^(18-len)
//! slots for shorter ones (a default route rebuilds everything: about as
//! long as building the table). Rebuilt subtrees are appended to the node
//! and leaf arrays; when the space they left behind exceeds what is live,
//! the arrays are compacted.

use std::collections::BTreeMap;

use pronto_packet::table::{HugeTable, TableItem};
use pronto_packet::BATCH_MAX;

/// Bits of the direct-pointing level.
pub const DIRECT_BITS: u32 = 18;
/// Bits per node.
const STRIDE: u32 = 6;
/// A direct entry with this bit is a leaf (a value, 0 for none); otherwise
/// it is a node index.
pub const LEAF: u32 = 1 << 31;
/// The largest value the table stores.
pub const MAX_VALUE: u32 = LEAF - 1;

/// One trie node (32 bytes: two to a cache line, none straddling two).
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    /// Bit i: slot i has a child node.
    vector: u64,
    /// Bit i: slot i is a leaf starting a run of equal leaf values.
    leafvec: u64,
    /// Index in `nodes` of the node's first child, with [`INLINE`] when
    /// the node's leaves are stored in the node.
    base1: u32,
    /// Index in `leaves` of the node's first distinct leaf, or (inline)
    /// the first leaf.
    base0: u32,
    /// Inline: the second and third leaves.
    extra: u64,
}

/// Flag in `Node::base1`: the node's (at most three) distinct leaves are in
/// the node itself, so the lookup that ends there reads nothing more. Most
/// nodes at the bottom of the trie (a /48 or /32 inside its covering
/// prefix: three runs) are such nodes.
const INLINE: u32 = 1 << 31;
/// Most leaves a node holds inline.
const MAX_INLINE: usize = 3;

/// Flag in a node's third word (where `base1` is): the node is a *tip*,
/// the whole of a sparse subtree: at most [`TIP_PREFIXES`] prefixes, none
/// longer than /64, kept whole and compared with the address's top 64
/// bits, in place of the chain of nodes that would lead to them (a lone
/// /48 under its /32 is two levels of nodes, and its own /32 often one or
/// two more). Layout: words 0 and 1 the two prefixes' top 64 bits (the
/// longer, or either when disjoint, first), word 2 their lengths (bits
/// 0-7 and 8-15) with this flag, and the first's value in the high half,
/// word 3 the second's value and the subtree's default (high half).
const TIP: u32 = 1 << 30;
/// Most prefixes a tip holds.
const TIP_PREFIXES: usize = 2;

impl Node {
    /// The node as four 64-bit words (its form in the node array).
    #[inline]
    fn words(&self) -> [u64; NODE_WORDS] {
        [
            self.vector,
            self.leafvec,
            u64::from(self.base1) | u64::from(self.base0) << 32,
            self.extra,
        ]
    }

    #[inline]
    fn from_words(w: &[u64; NODE_WORDS]) -> Node {
        Node {
            vector: w[0],
            leafvec: w[1],
            base1: w[2] as u32,
            base0: (w[2] >> 32) as u32,
            extra: w[3],
        }
    }

    /// The first child's index.
    #[inline]
    fn children(&self) -> u32 {
        self.base1 & !INLINE
    }

    /// Leaf `r` (0-based among the node's distinct leaves) when inline.
    #[inline]
    fn inline_leaf(&self, r: u32) -> u32 {
        match r {
            0 => self.base0,
            1 => self.extra as u32,
            _ => (self.extra >> 32) as u32,
        }
    }
}

/// A growable array on transparent huge pages ([`HugeTable`]): lookups read
/// at random over megabytes, and with 4 KiB pages nearly every read would
/// miss the TLB as well as the cache (measured: about twice as slow).
struct HugeVec<T: TableItem> {
    t: HugeTable<T>,
    len: usize,
}

impl<T: TableItem> HugeVec<T> {
    fn new() -> Self {
        HugeVec {
            t: HugeTable::zeroed(0).expect("an empty table maps nothing"),
            len: 0,
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn reserve(&mut self, extra: usize) {
        let need = self.len + extra;
        if need <= self.t.len() {
            return;
        }
        let cap = need.max(2 * self.t.len()).max(1 << 16);
        let mut t = HugeTable::zeroed(cap).expect("memory for the route table");
        t[..self.len].copy_from_slice(&self.t[..self.len]);
        self.t = t;
    }

    fn extend_from_slice(&mut self, v: &[T]) {
        self.reserve(v.len());
        self.t[self.len..self.len + v.len()].copy_from_slice(v);
        self.len += v.len();
    }

    fn resize(&mut self, n: usize, v: T) {
        if n > self.len {
            self.reserve(n - self.len);
            self.t[self.len..n].fill(v);
        }
        self.len = n;
    }
}

impl<T: TableItem> std::ops::Deref for HugeVec<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        &self.t[..self.len]
    }
}

impl<T: TableItem> std::ops::DerefMut for HugeVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.t[..self.len]
    }
}

/// Subtrees are laid out breadth first above this bit, depth first below.
const DEPTH_FIRST: u32 = 30;

/// Words per node in the node array.
const NODE_WORDS: usize = 4;

/// Where a direct slot's subtree lies in the node and leaf arrays.
#[derive(Clone, Copy, Debug)]
struct Span {
    node: u32,
    nodes: u32,
    leaf: u32,
    leaves: u32,
}

/// A prefix to insert: address (masked), length, value.
type Prefix = (u128, u8, u32);

/// The mask of the top `len` bits.
#[inline]
pub fn mask128(len: u32) -> u128 {
    if len == 0 {
        0
    } else {
        u128::MAX << (128 - len.min(128))
    }
}

/// The 6 bits of `a` starting at bit `off` (from the top; bits past 128
/// read as zero).
#[inline]
fn chunk(a: u128, off: u32) -> u32 {
    ((a << off) >> (128 - STRIDE)) as u32
}

/// The mask of the top `len` bits of a 64-bit word (`len` 1 to 64).
#[inline]
fn mask64(len: u32) -> u64 {
    !((u64::MAX >> (len - 1)) >> 1)
}

/// The tip node for a subtree holding `under` (in address order) with
/// `default` elsewhere, when it is sparse enough for one (see [`TIP`]).
fn tip(under: &[Prefix], default: u32) -> Option<[u64; NODE_WORDS]> {
    if under.is_empty() || under.len() > TIP_PREFIXES || under.iter().any(|p| p.1 > 64) {
        return None;
    }
    let (mut p1, mut p2) = (under[0], under[under.len() - 1]);
    if p2.1 > p1.1 {
        std::mem::swap(&mut p1, &mut p2);
    }
    let key = |p: Prefix| (p.0 >> 64) as u64;
    Some([
        key(p1),
        key(p2),
        u64::from(TIP | u32::from(p1.1) | u32::from(p2.1) << 8) | u64::from(p1.2) << 32,
        u64::from(p2.2) | u64::from(default) << 32,
    ])
}

/// The value a tip node (its words) gives the address whose top 64 bits
/// are `hi`.
#[inline]
fn tip_value(w: &[u64; NODE_WORDS], hi: u64) -> u32 {
    let (l1, l2) = (w[2] as u32 & 0xff, w[2] as u32 >> 8 & 0xff);
    if (hi ^ w[0]) & mask64(l1) == 0 {
        (w[2] >> 32) as u32
    } else if (hi ^ w[1]) & mask64(l2) == 0 {
        w[3] as u32
    } else {
        (w[3] >> 32) as u32
    }
}

/// The mask of bits 0..=v of a 64-bit vector.
#[inline]
fn upto(v: u32) -> u64 {
    (2u64 << v).wrapping_sub(1)
}

/// A Poptrie over 128-bit prefixes (see the module documentation).
pub struct Lpm6 {
    direct: HugeVec<u32>,
    /// Nodes, as [`NODE_WORDS`] words each.
    nodes: HugeVec<[u64; NODE_WORDS]>,
    leaves: HugeVec<u32>,
    /// Nodes and leaves no subtree uses any more.
    dead_nodes: usize,
    dead_leaves: usize,
    spans: BTreeMap<u32, Span>,
    /// Per direct slot: the value of the longest prefix of at most 18 bits
    /// covering it, and that prefix's length plus one (0: none).
    short_value: Vec<u32>,
    short_plen: Vec<u8>,
    /// Per direct slot: how many prefixes longer than 18 bits lie under it.
    long_count: Vec<u32>,
    /// Every prefix, by (masked address, length).
    prefixes: BTreeMap<(u128, u8), u32>,
}

impl Default for Lpm6 {
    fn default() -> Self {
        Lpm6::new()
    }
}

impl Lpm6 {
    /// An empty table.
    pub fn new() -> Lpm6 {
        let n = 1usize << DIRECT_BITS;
        Lpm6 {
            direct: {
                let mut d = HugeVec::new();
                d.resize(n, LEAF);
                d
            },
            nodes: HugeVec::new(),
            leaves: HugeVec::new(),
            dead_nodes: 0,
            dead_leaves: 0,
            spans: BTreeMap::new(),
            short_value: vec![0; n],
            short_plen: vec![0; n],
            long_count: vec![0; n],
            prefixes: BTreeMap::new(),
        }
    }

    /// A table holding `prefixes` (`(address, length, value)`; the address
    /// is masked here; of two equal prefixes the later wins), built in one
    /// pass: much faster than inserting them one by one.
    ///
    /// # Panics
    /// If a length exceeds 128 or a value is 0 or over [`MAX_VALUE`].
    pub fn build(prefixes: impl IntoIterator<Item = (u128, u8, u32)>) -> Lpm6 {
        let mut t = Lpm6::new();
        for (a, l, v) in prefixes {
            assert!(l <= 128 && v != 0 && v <= MAX_VALUE, "prefix out of range");
            t.prefixes.insert((a & mask128(l.into()), l), v);
        }
        let mut short: Vec<Prefix> = Vec::new();
        for (&(a, l), &v) in &t.prefixes {
            if u32::from(l) <= DIRECT_BITS {
                short.push((a, l, v));
            } else {
                t.long_count[(a >> (128 - DIRECT_BITS)) as usize] += 1;
            }
        }
        short.sort_by_key(|&(_, l, _)| l);
        for (a, l, v) in short {
            let (start, count) = Self::slot_range(a, l);
            for s in start..start + count {
                t.short_value[s] = v;
                t.short_plen[s] = l + 1;
            }
        }
        for s in 0..t.direct.len() {
            t.refresh(s);
        }
        t
    }

    /// The direct slots under a prefix of at most 18 bits.
    fn slot_range(a: u128, len: u8) -> (usize, usize) {
        let start = (a >> (128 - DIRECT_BITS)) as usize;
        (start, 1usize << (DIRECT_BITS - u32::from(len)))
    }

    /// Number of prefixes.
    pub fn len(&self) -> usize {
        self.prefixes.len()
    }

    /// True when the table has no prefix.
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty()
    }

    /// The value stored for exactly `a/len`.
    pub fn get(&self, a: u128, len: u8) -> Option<u32> {
        self.prefixes.get(&(a & mask128(len.into()), len)).copied()
    }

    /// Bytes a lookup may read: the direct array, the nodes and the leaves
    /// (including space left by updates and not yet compacted).
    pub fn lookup_bytes(&self) -> usize {
        self.direct.len() * 4 + self.nodes.len() * 32 + self.leaves.len() * 4
    }

    /// Nodes and leaves in use (for the documentation's figures).
    pub fn shape(&self) -> (usize, usize) {
        (
            self.node_count() - self.dead_nodes,
            self.leaves.len() - self.dead_leaves,
        )
    }

    fn node_count(&self) -> usize {
        self.nodes.len()
    }

    fn set_node(&mut self, at: usize, n: Node) {
        self.nodes[at] = n.words();
    }

    /// Stores `value` for `a/len`; returns the value it replaces.
    ///
    /// # Panics
    /// If `len` exceeds 128 or `value` is 0 or over [`MAX_VALUE`].
    pub fn insert(&mut self, a: u128, len: u8, value: u32) -> Option<u32> {
        assert!(
            len <= 128 && value != 0 && value <= MAX_VALUE,
            "prefix out of range"
        );
        let a = a & mask128(len.into());
        let old = self.prefixes.insert((a, len), value);
        if u32::from(len) <= DIRECT_BITS {
            let plen = len + 1;
            let (start, count) = Self::slot_range(a, len);
            for s in start..start + count {
                if self.short_plen[s] <= plen {
                    self.short_value[s] = value;
                    self.short_plen[s] = plen;
                }
            }
            for s in start..start + count {
                self.refresh(s);
            }
        } else {
            let s = (a >> (128 - DIRECT_BITS)) as usize;
            if old.is_none() {
                self.long_count[s] += 1;
            }
            self.refresh(s);
        }
        self.maybe_compact();
        old
    }

    /// Removes `a/len`; returns its value.
    pub fn remove(&mut self, a: u128, len: u8) -> Option<u32> {
        let a = a & mask128(len.into());
        let old = self.prefixes.remove(&(a, len))?;
        if u32::from(len) <= DIRECT_BITS {
            // The next shorter prefix covering this one takes its slots.
            let (cv, cplen) = (0..len)
                .rev()
                .find_map(|l| {
                    self.prefixes
                        .get(&(a & mask128(l.into()), l))
                        .map(|&v| (v, l + 1))
                })
                .unwrap_or((0, 0));
            let plen = len + 1;
            let (start, count) = Self::slot_range(a, len);
            for s in start..start + count {
                if self.short_plen[s] == plen {
                    self.short_value[s] = cv;
                    self.short_plen[s] = cplen;
                }
            }
            for s in start..start + count {
                self.refresh(s);
            }
        } else {
            let s = (a >> (128 - DIRECT_BITS)) as usize;
            self.long_count[s] -= 1;
            self.refresh(s);
        }
        self.maybe_compact();
        Some(old)
    }

    /// Removes every prefix.
    pub fn clear(&mut self) {
        *self = Lpm6::new();
    }

    /// Every prefix, in address order (shorter first at one address).
    pub fn iter(&self) -> impl Iterator<Item = (u128, u8, u32)> + '_ {
        self.prefixes.iter().map(|(&(a, l), &v)| (a, l, v))
    }

    /// Rebuilds direct slot `s` from the prefix map.
    fn refresh(&mut self, s: usize) {
        if let Some(old) = self.spans.remove(&(s as u32)) {
            self.dead_nodes += old.nodes as usize;
            self.dead_leaves += old.leaves as usize;
        }
        let default = self.short_value[s];
        if self.long_count[s] == 0 {
            self.direct[s] = LEAF | default;
            return;
        }
        let lo = (s as u128) << (128 - DIRECT_BITS);
        let hi = lo | !mask128(DIRECT_BITS);
        let under: Vec<Prefix> = self
            .prefixes
            .range((lo, 0)..=(hi, 128))
            .filter(|(&(_, l), _)| u32::from(l) > DIRECT_BITS)
            .map(|(&(a, l), &v)| (a, l, v))
            .collect();
        let node = self.node_count() as u32;
        let leaf = self.leaves.len() as u32;
        self.nodes.resize(self.nodes.len() + 1, [0; NODE_WORDS]);
        // The upper levels breadth first: each is contiguous, so their few
        // nodes, read by most lookups, share cache lines with each other
        // rather than with deep nodes. From bit DEPTH_FIRST down, depth
        // first: a node's child block follows it, so the chain of nodes
        // above a lone long prefix lies in one or two cache lines.
        let mut queue = std::collections::VecDeque::new();
        queue.push_back((node as usize, under, DIRECT_BITS, default));
        while let Some(task) = queue.pop_front() {
            if let Some(w) = tip(&task.1, task.3) {
                self.nodes[task.0] = w;
                continue;
            }
            if task.2 < DEPTH_FIRST {
                let (at, under, off, default) = task;
                queue.extend(self.build_node(at, &under, off, default));
                continue;
            }
            let mut stack = vec![task];
            while let Some((at, under, off, default)) = stack.pop() {
                if let Some(w) = tip(&under, default) {
                    self.nodes[at] = w;
                    continue;
                }
                let kids = self.build_node(at, &under, off, default);
                stack.extend(kids.into_iter().rev());
            }
        }
        self.spans.insert(
            s as u32,
            Span {
                node,
                nodes: self.node_count() as u32 - node,
                leaf,
                leaves: self.leaves.len() as u32 - leaf,
            },
        );
        self.direct[s] = node;
    }

    /// Fills node `at`, whose slots cover bits `off..off + 6`, from the
    /// prefixes under it (all longer than `off`, in address order), with
    /// `default` where none applies; appends its leaves and room for its
    /// children, and returns what each child is to be built from.
    fn build_node(
        &mut self,
        at: usize,
        under: &[Prefix],
        off: u32,
        default: u32,
    ) -> Vec<(usize, Vec<Prefix>, u32, u32)> {
        let mut vals = [default; 64];
        let mut here: Vec<&Prefix> = under
            .iter()
            .filter(|p| u32::from(p.1) <= off + STRIDE)
            .collect();
        here.sort_by_key(|p| p.1);
        for &&(a, l, v) in &here {
            let start = chunk(a, off) as usize;
            let count = 1usize << (off + STRIDE - u32::from(l));
            vals[start..start + count].fill(v);
        }
        // The longer prefixes, grouped by slot (address order keeps each
        // slot's prefixes together).
        let mut groups: Vec<(u32, usize, usize)> = Vec::new();
        let mut i = 0;
        while i < under.len() {
            if u32::from(under[i].1) <= off + STRIDE {
                i += 1;
                continue;
            }
            let slot = chunk(under[i].0, off);
            let start = i;
            while i < under.len() && chunk(under[i].0, off) == slot {
                i += 1;
            }
            groups.push((slot, start, i));
        }
        let mut vector = 0u64;
        for &(slot, _, _) in &groups {
            vector |= 1 << slot;
        }
        let mut leafvec = 0u64;
        let mut runs = [0u32; 64];
        let mut nruns = 0;
        for (slot, &v) in vals.iter().enumerate() {
            if vector >> slot & 1 != 0 {
                continue;
            }
            if nruns == 0 || runs[nruns - 1] != v {
                leafvec |= 1 << slot;
                runs[nruns] = v;
                nruns += 1;
            }
        }
        let base1 = self.node_count() as u32;
        let node = if nruns <= MAX_INLINE {
            Node {
                vector,
                leafvec,
                base1: base1 | INLINE,
                base0: runs[0],
                extra: u64::from(runs[1]) | u64::from(runs[2]) << 32,
            }
        } else {
            let base0 = self.leaves.len() as u32;
            self.leaves.extend_from_slice(&runs[..nruns]);
            Node {
                vector,
                leafvec,
                base1,
                base0,
                extra: 0,
            }
        };
        self.nodes
            .resize(self.nodes.len() + groups.len(), [0; NODE_WORDS]);
        self.set_node(at, node);
        groups
            .iter()
            .enumerate()
            .map(|(k, &(slot, start, end))| {
                // Only prefixes longer than `off + 6` are in the group, and
                // each lies inside the slot: the child's invariant holds.
                let sub: Vec<Prefix> = under[start..end]
                    .iter()
                    .filter(|p| u32::from(p.1) > off + STRIDE)
                    .copied()
                    .collect();
                (base1 as usize + k, sub, off + STRIDE, vals[slot as usize])
            })
            .collect()
    }

    /// Compacts the node and leaf arrays when most of them is dead.
    fn maybe_compact(&mut self) {
        if self.dead_nodes <= self.node_count() / 2 + 4096
            && self.dead_leaves <= self.leaves.len() / 2 + 4096
        {
            return;
        }
        let live_nodes = self.node_count() - self.dead_nodes;
        let live_leaves = self.leaves.len() - self.dead_leaves;
        let mut nodes = HugeVec::new();
        nodes.reserve(live_nodes);
        let mut leaves = HugeVec::new();
        leaves.reserve(live_leaves);
        for (&s, span) in self.spans.iter_mut() {
            let (n0, l0) = (nodes.len() as u32, leaves.len() as u32);
            let (dn, dl) = (
                i64::from(n0) - i64::from(span.node),
                i64::from(l0) - i64::from(span.leaf),
            );
            for w in &self.nodes[span.node as usize..(span.node + span.nodes) as usize] {
                if w[2] as u32 & TIP != 0 {
                    nodes.extend_from_slice(&[*w]);
                    continue;
                }
                let n = Node::from_words(w);
                let inline = n.base1 & INLINE;
                nodes.extend_from_slice(&[Node {
                    base0: if inline != 0 {
                        n.base0
                    } else {
                        (i64::from(n.base0) + dl) as u32
                    },
                    base1: (i64::from(n.children()) + dn) as u32 | inline,
                    ..n
                }
                .words()]);
            }
            leaves.extend_from_slice(
                &self.leaves[span.leaf as usize..(span.leaf + span.leaves) as usize],
            );
            span.node = n0;
            span.leaf = l0;
            self.direct[s as usize] = n0;
        }
        self.nodes = nodes;
        self.leaves = leaves;
        self.dead_nodes = 0;
        self.dead_leaves = 0;
    }

    /// The value of the longest prefix containing `a` (0: none).
    #[inline]
    pub fn lookup(&self, a: u128) -> u32 {
        let e = self.direct[(a >> (128 - DIRECT_BITS)) as usize];
        if e & LEAF != 0 {
            return e & !LEAF;
        }
        let mut idx = e as usize;
        let mut off = DIRECT_BITS;
        loop {
            let w = &self.nodes[idx];
            if w[2] as u32 & TIP != 0 {
                return tip_value(w, (a >> 64) as u64);
            }
            let n = Node::from_words(w);
            let v = chunk(a, off);
            if n.vector >> v & 1 != 0 {
                idx = n.children() as usize + (n.vector & upto(v)).count_ones() as usize - 1;
                off += STRIDE;
            } else {
                let r = (n.leafvec & upto(v)).count_ones() - 1;
                return if n.base1 & INLINE != 0 {
                    n.inline_leaf(r)
                } else {
                    self.leaves[(n.base0 + r) as usize]
                };
            }
        }
    }

    /// How many nodes (below the direct level) a lookup of `a` reads: for
    /// the benchmark's and the documentation's figures.
    pub fn node_reads(&self, a: u128) -> u32 {
        let e = self.direct[(a >> (128 - DIRECT_BITS)) as usize];
        if e & LEAF != 0 {
            return 0;
        }
        let (mut idx, mut off, mut reads) = (e as usize, DIRECT_BITS, 1);
        loop {
            let w = &self.nodes[idx];
            if w[2] as u32 & TIP != 0 {
                return reads;
            }
            let n = Node::from_words(w);
            let v = chunk(a, off);
            if n.vector >> v & 1 == 0 {
                return reads;
            }
            idx = n.children() as usize + (n.vector & upto(v)).count_ones() as usize - 1;
            off += STRIDE;
            reads += 1;
        }
    }

    /// Looks up a batch, `out[i]` for `addrs[i]` (at most [`BATCH_MAX`]
    /// at a time; longer slices are done in pieces). The batch walks the
    /// trie level by level, so the reads of one level, independent of each
    /// other, overlap their cache misses.
    pub fn lookup_many(&self, addrs: &[u128], out: &mut [u32]) {
        pronto_packet::cpu::with_popcnt(
            #[inline(always)]
            || {
                for (a, o) in addrs.chunks(BATCH_MAX).zip(out.chunks_mut(BATCH_MAX)) {
                    self.lookup_chunk(a, o);
                }
            },
        )
    }

    #[inline(always)]
    fn lookup_chunk(&self, addrs: &[u128], out: &mut [u32]) {
        // Every read of a level is issued before any of its results is
        // tested: a test on a value still in flight would stall the loop
        // (or squash the reads after a mispredicted branch), and the cache
        // misses would queue instead of overlapping. The walk reads the
        // address's top 64 bits, all that lookups down to /58 need, from a
        // `u64`.
        // Lane numbers are masked with `LANE` where they index the lane
        // arrays: a proof the compiler needs to drop the bounds checks.
        const LANE: usize = BATCH_MAX - 1;
        const _: () = assert!(BATCH_MAX <= 256 && BATCH_MAX.is_power_of_two());
        let n = addrs.len().min(out.len()).min(BATCH_MAX);
        let (addrs, out) = (&addrs[..n], &mut out[..n]);
        let mut hi = [0u64; BATCH_MAX];
        let mut idx = [0u32; BATCH_MAX];
        let mut pending = [0u8; BATCH_MAX];
        let mut np = 0;
        for (i, (&a, o)) in addrs.iter().zip(out.iter_mut()).enumerate() {
            let a = (a >> 64) as u64;
            hi[i & LANE] = a;
            let e = self.direct[(a >> (64 - DIRECT_BITS)) as usize];
            idx[i & LANE] = e;
            *o = e & !LEAF;
            pending[np & LANE] = i as u8;
            np += usize::from(e & LEAF == 0);
        }
        // Lanes whose leaf is out of the node: (lane, leaf index).
        let mut far = [(0u8, 0u32); BATCH_MAX];
        let mut nf = 0;
        let mut vec = [0u64; BATCH_MAX];
        let mut off = DIRECT_BITS;
        while np > 0 {
            let np_ = np.min(BATCH_MAX);
            // The third word of each node (its flags and first child): the
            // one read that misses the cache; the rest of the node is in
            // the same line.
            for (v, &i) in vec[..np_].iter_mut().zip(&pending[..np_]) {
                *v = self.nodes[idx[usize::from(i)] as usize][2];
            }
            let mut keep = 0;
            for k in 0..np_ {
                let i = usize::from(pending[k]);
                let node = &self.nodes[idx[i] as usize];
                let base1 = vec[k] as u32;
                if base1 & TIP != 0 {
                    out[i] = tip_value(node, hi[i]);
                    continue;
                }
                let c = if off + STRIDE <= 64 {
                    (hi[i] >> (64 - STRIDE - off)) as u32 & 63
                } else {
                    chunk(addrs[i], off)
                };
                let vector = node[0];
                let below = upto(c);
                if vector >> c & 1 != 0 {
                    idx[i] = (base1 & !INLINE) + (vector & below).count_ones() - 1;
                    pending[keep & LANE] = i as u8;
                    keep += 1;
                } else {
                    let node = Node::from_words(node);
                    let r = (node.leafvec & below).count_ones() - 1;
                    if node.base1 & INLINE != 0 {
                        out[i] = node.inline_leaf(r);
                    } else {
                        far[nf & LANE] = (i as u8, node.base0 + r);
                        nf += 1;
                    }
                }
            }
            np = keep;
            off += STRIDE;
        }
        for &(i, l) in &far[..nf.min(BATCH_MAX)] {
            out[usize::from(i)] = self.leaves[l as usize];
        }
    }
}

/// The synthetic IPv6 BGP table of `bench/route6_table.py` (see its
/// documentation for the model): the same generator and seed, so the same
/// routes in the same order. Each route is `(address, length, output)`,
/// output 0 to 3 (the script's gateway is `fe80::` output + 1).
pub fn synthetic_bgp6(n: usize, seed: u64) -> Vec<(u128, u8, u32)> {
    const DIST: [(u8, u64); 27] = [
        (48, 470),
        (32, 120),
        (44, 80),
        (40, 60),
        (29, 35),
        (36, 30),
        (46, 30),
        (47, 20),
        (42, 15),
        (45, 15),
        (30, 10),
        (33, 10),
        (34, 10),
        (35, 10),
        (38, 10),
        (41, 10),
        (43, 10),
        (56, 10),
        (64, 10),
        (128, 5),
        (28, 5),
        (31, 5),
        (37, 5),
        (39, 5),
        (24, 5),
        (20, 3),
        (19, 2),
    ];
    const BLOCKS: [(u128, u8); 6] = [
        (0x2001 << 112, 16),
        (0x2400 << 112, 12),
        (0x2600 << 112, 12),
        (0x2800 << 112, 12),
        (0x2a00 << 112, 12),
        (0x2c00 << 112, 12),
    ];
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    if x == 0 {
        x = 1;
    }
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut allocs: Vec<(u128, u8)> = Vec::new();
    let mut routes = Vec::with_capacity(n);
    while routes.len() < n {
        let r = next();
        let mut pick = r % 1000;
        let mut len = 48;
        for (l, w) in DIST {
            if pick < w {
                len = l;
                break;
            }
            pick -= w;
        }
        let y = next();
        let (paddr, plen) = if len > 32 && !allocs.is_empty() && y % 10 < 8 {
            allocs[((y >> 8) % allocs.len() as u64) as usize]
        } else {
            BLOCKS[((y >> 4) % BLOCKS.len() as u64) as usize]
        };
        let z = (u128::from(next()) << 64) | u128::from(next());
        let addr = (paddr | (z & !mask128(plen.into()))) & mask128(len.into());
        if !seen.insert((addr, len)) {
            continue;
        }
        if (29..=32).contains(&len) {
            allocs.push((addr, len));
        }
        routes.push((addr, len, ((r >> 20) % 4) as u32));
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Longest-prefix match by scanning every prefix.
    fn naive(routes: &BTreeMap<(u128, u8), u32>, a: u128) -> u32 {
        routes
            .iter()
            .filter(|(&(p, l), _)| a & mask128(l.into()) == p)
            .max_by_key(|(&(_, l), _)| l)
            .map_or(0, |(_, &v)| v)
    }

    fn addr(s: &str) -> u128 {
        u128::from_be_bytes(pronto_lang::args::parse_ip6(s).expect("address"))
    }

    #[test]
    fn chunks_and_masks() {
        assert_eq!(mask128(0), 0);
        assert_eq!(mask128(128), u128::MAX);
        assert_eq!(mask128(1), 1 << 127);
        assert_eq!(chunk(u128::MAX, 0), 63);
        assert_eq!(chunk(1 << 122, 0), 1);
        assert_eq!(chunk(1 << 121, 0), 0);
        // The last chunk has the two low bits, then zeros.
        assert_eq!(chunk(3, 126), 0b11_0000);
        assert_eq!(upto(63), u64::MAX);
        assert_eq!(upto(0), 1);
    }

    #[test]
    fn longest_prefix_wins_at_every_depth() {
        let mut t = Lpm6::new();
        let routes = [
            ("::", 0, 1),
            ("2001:db8::", 32, 2),
            ("2001:db8:1::", 48, 3),
            ("2001:db8:1:2::", 64, 4),
            ("2001:db8:1:2::5", 128, 5),
            ("2001:db8:1:2::4", 127, 6),
            ("2000::", 3, 7),
            ("2001:db8:1:2:0:0:0:0", 60, 8),
        ];
        for (a, l, v) in routes {
            assert_eq!(t.insert(addr(a), l, v), None);
        }
        let cases = [
            ("2001:db8:1:2::5", 5),
            ("2001:db8:1:2::4", 6),
            ("2001:db8:1:2::6", 4),
            ("2001:db8:1:3::1", 8),
            ("2001:db8:1:10::1", 3),
            ("2001:db8:2::1", 2),
            ("2001:db9::1", 7),
            ("3fff:ffff::1", 7),
            ("4000::1", 1),
            ("::1", 1),
        ];
        for (a, v) in cases {
            assert_eq!(t.lookup(addr(a)), v, "{a}");
        }
        let b = Lpm6::build(routes.iter().map(|&(a, l, v)| (addr(a), l, v)));
        for (a, v) in cases {
            assert_eq!(b.lookup(addr(a)), v, "{a} (bulk)");
        }
        // Removing uncovers the next shorter prefix.
        assert_eq!(t.remove(addr("2001:db8:1:2::5"), 128), Some(5));
        assert_eq!(t.lookup(addr("2001:db8:1:2::5")), 6);
        assert_eq!(t.remove(addr("2000::"), 3), Some(7));
        assert_eq!(t.lookup(addr("2001:db9::1")), 1);
        assert_eq!(t.remove(addr("::"), 0), Some(1));
        assert_eq!(t.lookup(addr("2001:db9::1")), 0);
        assert_eq!(t.remove(addr("::"), 0), None);
        // Replacing a value.
        assert_eq!(t.insert(addr("2001:db8::"), 32, 9), Some(2));
        assert_eq!(t.lookup(addr("2001:db8:2::1")), 9);
        assert_eq!(t.len(), 5);
        t.clear();
        assert_eq!(t.lookup(addr("2001:db8:2::1")), 0);
    }

    #[test]
    fn compaction_keeps_answers() {
        let mut t = Lpm6::new();
        let base = addr("2001:db8::");
        // Many rebuilds of one slot leave dead space behind; compaction
        // must move the live subtrees without changing any answer.
        for i in 0..3000u128 {
            t.insert(base | (i << 80), 48, (i + 1) as u32);
            t.insert(addr("2400::") | (i << 100), 28, (i + 7) as u32);
        }
        for i in (0..3000u128).step_by(3) {
            t.remove(base | (i << 80), 48);
        }
        for i in 0..3000u128 {
            let want = if i % 3 == 0 { 0 } else { (i + 1) as u32 };
            assert_eq!(t.lookup(base | (i << 80) | 77), want);
            assert_eq!(t.lookup(addr("2400::") | (i << 100) | 5), (i + 7) as u32);
        }
        let (n, _) = t.shape();
        assert!(t.node_count() < 4 * n + 8192, "compacted");
    }

    /// A subtree with at most two prefixes (none past /64) is one tip node;
    /// answers at and around its prefixes' edges are exact.
    #[test]
    fn sparse_subtrees_are_tips() {
        let p32 = addr("2001:db8::");
        let p48 = addr("2001:db8:7::");
        let t = Lpm6::build([(p48, 48, 5)]);
        assert_eq!(
            t.shape().0,
            1,
            "a lone /48 is one tip under its direct slot"
        );
        assert_eq!(t.node_reads(p48), 1);
        // Nested: the longer one wins inside it, the shorter around it.
        let t = Lpm6::build([(p32, 32, 2), (p48, 48, 5), (addr("2000::"), 3, 9)]);
        assert_eq!(t.shape().0, 1);
        let cases = [
            (p48, 5),
            (p48 | !mask128(48), 5),
            (p48 - 1, 2),
            (p48 + (1 << 80), 2),
            (p32 | !mask128(32), 2),
            (p32 - 1, 9),
            (addr("2001:db9::"), 9),
            (addr("4000::"), 0),
        ];
        let mut batch = [0; 8];
        t.lookup_many(&cases.map(|c| c.0), &mut batch);
        for (k, (a, want)) in cases.into_iter().enumerate() {
            assert_eq!(t.lookup(a), want, "{a:032x}");
            assert_eq!(batch[k], want, "{a:032x} (batch)");
        }
        // Disjoint /64s: a tip; a third prefix or a /65 makes real nodes.
        let q = addr("2001:db8:7:2::");
        let t = Lpm6::build([(p48 | 1 << 64, 64, 3), (q, 64, 4)]);
        assert_eq!(t.shape().0, 1);
        assert_eq!(t.lookup(q | 1), 4);
        assert_eq!(t.lookup(p48 | 1 << 64 | 9), 3);
        assert_eq!(t.lookup(p48 | 9), 0);
        let t = Lpm6::build([(p48 | 1 << 64, 64, 3), (q, 64, 4), (p32, 32, 2)]);
        assert!(t.shape().0 > 1);
        assert_eq!(t.lookup(p48 | 9), 2);
        let t = Lpm6::build([(q, 65, 4)]);
        assert!(t.shape().0 > 1);
        assert_eq!(t.lookup(q | 1), 4);
        assert_eq!(t.lookup(q | 1 << 63), 0);
    }

    /// The generator is the script's: its first routes and the length mix
    /// of the 200,000 (as `python3 bench/route6_table.py` printed them).
    #[test]
    fn synthetic_table_is_the_scripts() {
        let t = synthetic_bgp6(200_000, 1);
        let first: Vec<(u128, u8, u32)> = [
            ("2807:ce91:e400::", 39, 3),
            ("2802:e144:d6e8::", 48, 0),
            ("2604:74ff:b800::", 39, 1),
            ("2c01:99e8:3f00::", 40, 2),
            ("2806:39b1:6b71::", 48, 3),
        ]
        .iter()
        .map(|&(a, l, o)| (addr(a), l, o))
        .collect();
        assert_eq!(t[..5], first[..]);
        assert_eq!(t[199_999], (addr("2c09:2980:f080::"), 44, 2));
        let count = |len: u8| t.iter().filter(|r| r.1 == len).count();
        assert_eq!(
            [count(48), count(32), count(44), count(128), count(19)],
            [94144, 23915, 16050, 1050, 267]
        );
    }

    /// Prefix lengths that exercise every level boundary.
    fn any_len() -> impl Strategy<Value = u8> {
        prop_oneof![
            Just(0u8),
            0u8..=20,
            16u8..=64,
            Just(32u8),
            Just(48u8),
            120u8..=128,
            Just(128u8),
        ]
    }

    /// Addresses concentrated under a few /16s, so that prefixes overlap.
    fn any_addr() -> impl Strategy<Value = u128> {
        (0u128..4, any::<u128>()).prop_map(|(top, rest)| (0x2001u128 + top) << 112 | rest >> 16)
    }

    #[derive(Clone, Debug)]
    enum Op {
        Add(u128, u8, u32),
        Remove(usize),
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(debug_assertions) { 24 } else { 256 }))]

        /// Adds and removes (incremental), then compares every lookup and
        /// a bulk-built table with a scan of the prefixes.
        #[test]
        fn matches_naive_lpm(
            ops in prop::collection::vec(
                prop_oneof![
                    4 => (any_addr(), any_len(), 1u32..1000).prop_map(|(a, l, v)| Op::Add(a, l, v)),
                    1 => any::<usize>().prop_map(Op::Remove),
                ],
                1..60,
            ),
            probes in prop::collection::vec(any_addr(), 64),
        ) {
            let mut t = Lpm6::new();
            let mut model: BTreeMap<(u128, u8), u32> = BTreeMap::new();
            let mut added: Vec<(u128, u8)> = Vec::new();
            for op in ops {
                match op {
                    Op::Add(a, l, v) => {
                        let a = a & mask128(l.into());
                        prop_assert_eq!(t.insert(a, l, v), model.insert((a, l), v));
                        added.push((a, l));
                    }
                    Op::Remove(i) if !added.is_empty() => {
                        let (a, l) = added[i % added.len()];
                        prop_assert_eq!(t.remove(a, l), model.remove(&(a, l)));
                    }
                    Op::Remove(_) => {}
                }
            }
            let bulk = Lpm6::build(model.iter().map(|(&(a, l), &v)| (a, l, v)));
            // Probe the prefixes' own first and last addresses too.
            let mut all = probes.clone();
            for &(a, l) in model.keys() {
                all.push(a);
                all.push(a | !mask128(l.into()));
            }
            let mut batch = vec![0; all.len()];
            t.lookup_many(&all, &mut batch);
            for (i, &a) in all.iter().enumerate() {
                let want = naive(&model, a);
                prop_assert_eq!(t.lookup(a), want, "{:032x}", a);
                prop_assert_eq!(bulk.lookup(a), want, "{:032x} (bulk)", a);
                prop_assert_eq!(batch[i], want, "{:032x} (batch)", a);
            }
            prop_assert_eq!(t.len(), model.len());
        }
    }
}
