//! Rule-set index for large IP rule lists.
//!
//! A decision diagram over thousands of rules either explodes or degrades
//! into a linear walk. For such lists the program instead keeps, per rule,
//! an over-approximation of the packets it can match as a small union of
//! *boxes*: one value set per header field (IP protocol, source address,
//! destination address, source port, destination port, fragment bits). A
//! rule whose expression is fully described by its boxes is *exact*; any
//! other rule (TCP flags, TTL, arbitrary byte tests, boxes merged past the
//! size cap, ...) is *verified* with its own compiled test program before
//! it is accepted.
//!
//! Each box becomes an *entry*; entries are numbered in rule order. Per
//! field, a sorted array of segment starts maps the packet's field value to
//! a row: the bit vector of the entries compatible with that value, stored
//! as chunk ids into a table of deduplicated 64-bit word chunks (chunk 0 is
//! all zeros). Classifying ANDs the rows of the fields chunk by chunk from
//! entry 0, skips chunks where some field's chunk is zero, and takes the
//! first set bit; verified entries that fail are skipped and the scan goes
//! on. The first accepted entry is the first matching rule: every rule
//! that matches a packet has an entry compatible with it, and entries are
//! ordered like their rules.
//!
//! Lists of at most 64 entries also get a one-word form ([`Small`]): per
//! field, a table indexed by the value's top bits gives its segment, whose
//! row is a single `u64`; a packet's compatible entries are the AND of six
//! such words. `Engine::Auto` uses it for short lists whose rules are all
//! exact.
//!
//! The fields are only read from packets long enough for all of them (a
//! 20-byte network header and 4 transport bytes); shorter packets, whose
//! tests may take their "packet too short" outcomes, are classified by
//! running the rules' own programs in order.

use pronto_packet::table::HugeTable;
use std::collections::HashMap;

use crate::dd::{self, Node, DROP, TERM};
use crate::expr::{Expr, Space, Test};

/// Number of indexed fields.
const NF: usize = 6;

/// One indexed header field: `(word(space, off) & mask) >> shift`.
struct Field {
    space: Space,
    off: u32,
    mask: u32,
    shift: u32,
}

impl Field {
    const fn max(&self) -> u32 {
        self.mask >> self.shift
    }
}

const FIELDS: [Field; NF] = [
    // IP protocol.
    Field {
        space: Space::Primary,
        off: 8,
        mask: 0x00FF_0000,
        shift: 16,
    },
    // Source address.
    Field {
        space: Space::Primary,
        off: 12,
        mask: 0xFFFF_FFFF,
        shift: 0,
    },
    // Destination address.
    Field {
        space: Space::Primary,
        off: 16,
        mask: 0xFFFF_FFFF,
        shift: 0,
    },
    // Source port (ICMP type and code).
    Field {
        space: Space::Transport,
        off: 0,
        mask: 0xFFFF_0000,
        shift: 16,
    },
    // Destination port.
    Field {
        space: Space::Transport,
        off: 0,
        mask: 0x0000_FFFF,
        shift: 0,
    },
    // More-fragments flag and fragment offset.
    Field {
        space: Space::Primary,
        off: 4,
        mask: 0x0000_3FFF,
        shift: 0,
    },
];

/// Network-header bytes needed to read every field.
const NEED_PRIMARY: usize = 20;
/// Transport bytes needed to read every field.
const NEED_TRANSPORT: usize = 4;

/// Most boxes kept per expression before they are merged into one.
const MAX_BOXES: usize = 16;
/// Most free mask bits above the lowest masked bit for which an equality
/// test is split into intervals (2^this intervals).
const MAX_SPLIT_BITS: u32 = 5;
/// Entries per chunk are `64 * CHUNK_WORDS` at most.
const CHUNK_WORDS: usize = 8;
/// Most entries indexed; larger lists keep the linear engine.
const MAX_ENTRIES: usize = 1 << 22;
/// Bit of an entry's rule word marking a rule that must be verified.
const VERIFY: u32 = 1 << 31;

// ------------------------------------------------------------ value sets

/// A set of field values: sorted, disjoint, non-adjacent inclusive
/// intervals.
type Set = Vec<(u32, u32)>;

fn full(f: usize) -> Set {
    vec![(0, FIELDS[f].max())]
}

fn normalize(mut v: Set) -> Set {
    v.sort_unstable();
    let mut out: Set = Vec::with_capacity(v.len());
    for (lo, hi) in v {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

fn union(a: &Set, b: &Set) -> Set {
    normalize(a.iter().chain(b.iter()).copied().collect())
}

fn intersect(a: &Set, b: &Set) -> Set {
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if lo <= hi {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    out
}

fn complement(a: &Set, max: u32) -> Set {
    let mut out = Vec::new();
    let mut next = 0u64;
    for &(lo, hi) in a {
        if u64::from(lo) > next {
            out.push((next as u32, lo - 1));
        }
        next = u64::from(hi) + 1;
    }
    if next <= u64::from(max) {
        out.push((next as u32, max));
    }
    out
}

/// The values of field `f` that satisfy `t`, when `t` reads only bits of
/// that field and its value set is a few intervals.
fn leaf_set(f: usize, t: &Test) -> Option<Set> {
    let fd = &FIELDS[f];
    if t.space != fd.space || t.off != fd.off || t.mask & !fd.mask != 0 {
        return None;
    }
    let max = fd.max();
    let m = t.mask >> fd.shift;
    if m == 0 {
        return None;
    }
    let low = (1u32 << m.trailing_zeros()) - 1;
    let free_hi = max & !m & !low;
    if t.gt {
        if free_hi != 0 {
            return None;
        }
        let q = t.value >> fd.shift;
        if q >= m {
            return Some(Vec::new());
        }
        return Some(vec![((q | low) + 1, max)]);
    }
    let v = t.value >> fd.shift;
    if free_hi.count_ones() > MAX_SPLIT_BITS {
        return None;
    }
    // Enumerate the assignments of the free high bits.
    let mut out = Vec::new();
    let mut sub = 0u32;
    loop {
        let base = v | sub;
        out.push((base, base | low));
        sub = sub.wrapping_sub(free_hi) & free_hi;
        if sub == 0 {
            break;
        }
    }
    Some(normalize(out))
}

// ------------------------------------------------------------ boxes

/// Values of every field (a box is empty when some field is).
type Bx = [Set; NF];

fn top() -> Bx {
    std::array::from_fn(full)
}

fn is_empty(b: &Bx) -> bool {
    b.iter().any(Vec::is_empty)
}

fn box_and(a: &Bx, b: &Bx) -> Bx {
    std::array::from_fn(|f| intersect(&a[f], &b[f]))
}

/// Whether `a` lies within `b`.
fn subset(a: &Bx, b: &Bx) -> bool {
    (0..NF).all(|f| intersect(&a[f], &b[f]) == a[f])
}

/// Over-approximation of a set of packets: a union of boxes; `exact` when
/// the union is exactly the set (for packets long enough for the fields).
#[derive(Clone)]
struct Dnf {
    boxes: Vec<Bx>,
    exact: bool,
}

impl Dnf {
    fn all(exact: bool) -> Dnf {
        Dnf {
            boxes: vec![top()],
            exact,
        }
    }

    fn none() -> Dnf {
        Dnf {
            boxes: Vec::new(),
            exact: true,
        }
    }

    fn one(b: Bx) -> Dnf {
        let boxes = if is_empty(&b) { Vec::new() } else { vec![b] };
        Dnf { boxes, exact: true }
    }

    /// Drops subsumed boxes, merges boxes that differ in one field, and
    /// merges everything into one box (inexact) past [`MAX_BOXES`].
    fn simplify(mut self) -> Dnf {
        self.boxes.retain(|b| !is_empty(b));
        loop {
            let mut changed = false;
            'outer: for i in 0..self.boxes.len() {
                for j in 0..self.boxes.len() {
                    if i == j {
                        continue;
                    }
                    if subset(&self.boxes[j], &self.boxes[i]) {
                        self.boxes.swap_remove(j);
                        changed = true;
                        break 'outer;
                    }
                    let diff: Vec<usize> = (0..NF)
                        .filter(|&f| self.boxes[i][f] != self.boxes[j][f])
                        .collect();
                    if diff.len() == 1 {
                        let f = diff[0];
                        let u = union(&self.boxes[i][f], &self.boxes[j][f]);
                        self.boxes[i][f] = u;
                        self.boxes.swap_remove(j);
                        changed = true;
                        break 'outer;
                    }
                }
            }
            if !changed {
                break;
            }
        }
        if self.boxes.len() > MAX_BOXES {
            let mut h = self.boxes[0].clone();
            for b in &self.boxes[1..] {
                for f in 0..NF {
                    h[f] = union(&h[f], &b[f]);
                }
            }
            self.boxes = vec![h];
            self.exact = false;
        }
        // Keep boxes in a canonical order so that equal rules index alike.
        self.boxes.sort();
        self
    }

    fn or(self, other: Dnf) -> Dnf {
        let mut boxes = self.boxes;
        boxes.extend(other.boxes);
        Dnf {
            boxes,
            exact: self.exact && other.exact,
        }
        .simplify()
    }

    fn and(self, other: &Dnf) -> Dnf {
        let exact = self.exact && other.exact;
        if self.boxes.len() * other.boxes.len() > MAX_BOXES * MAX_BOXES {
            // Too many products: approximate each side by its hull first.
            let a = self.hull();
            let b = other.clone().hull();
            let mut d = a.and(&b);
            d.exact = false;
            return d;
        }
        let mut boxes = Vec::new();
        for a in &self.boxes {
            for b in &other.boxes {
                let x = box_and(a, b);
                if !is_empty(&x) {
                    boxes.push(x);
                }
            }
        }
        Dnf { boxes, exact }.simplify()
    }

    fn hull(self) -> Dnf {
        let Some(first) = self.boxes.first() else {
            return self;
        };
        let mut h = first.clone();
        for b in &self.boxes[1..] {
            for f in 0..NF {
                h[f] = union(&h[f], &b[f]);
            }
        }
        Dnf {
            boxes: vec![h],
            exact: false,
        }
    }
}

/// Over-approximation of the packets on which `e` is true (`want` true) or
/// false (`want` false).
fn analyze(e: &Expr, want: bool) -> Dnf {
    match e {
        Expr::Const(b) => {
            if *b == want {
                Dnf::all(true)
            } else {
                Dnf::none()
            }
        }
        Expr::Leaf { test, .. } => {
            for f in 0..NF {
                if let Some(s) = leaf_set(f, test) {
                    let mut b = top();
                    b[f] = if want {
                        s
                    } else {
                        complement(&s, FIELDS[f].max())
                    };
                    return Dnf::one(b);
                }
            }
            Dnf::all(false)
        }
        Expr::Not(x) => analyze(x, !want),
        // True: all parts true (a product); false: some part false (a sum).
        Expr::And(v) if want => v
            .iter()
            .fold(Dnf::all(true), |d, x| d.and(&analyze(x, true))),
        Expr::And(v) => v.iter().fold(Dnf::none(), |d, x| d.or(analyze(x, false))),
        Expr::Or(v) if want => v.iter().fold(Dnf::none(), |d, x| d.or(analyze(x, true))),
        Expr::Or(v) => v
            .iter()
            .fold(Dnf::all(true), |d, x| d.and(&analyze(x, false))),
        Expr::Ternary(c, a, b) => {
            let yes = analyze(c, true).and(&analyze(a, want));
            let no = analyze(c, false).and(&analyze(b, want));
            yes.or(no)
        }
    }
}

// ------------------------------------------------------------ the index

/// Per-field lookup: segment starts and, per segment, a row of chunk ids.
#[derive(Clone, Debug)]
struct FieldIndex {
    field: u8,
    /// The value's bucket is `value >> bucket_shift`.
    bucket_shift: u32,
    /// Per bucket (plus one past the end): the segment holding the
    /// bucket's first value.
    buckets: Box<[u32]>,
    starts: Box<[u32]>,
    rows: Box<[u32]>,
}

impl FieldIndex {
    fn new(field: usize, starts: Vec<u32>, rows: Vec<u32>) -> FieldIndex {
        let bits = 32 - FIELDS[field].max().leading_zeros();
        let want = (usize::BITS - starts.len().leading_zeros() + 2).clamp(8, 16);
        let bucket_shift = bits.saturating_sub(want);
        let nb = (u64::from(FIELDS[field].max()) >> bucket_shift) + 1;
        let buckets: Vec<u32> = (0..=nb)
            .map(|b| {
                let first = (b << bucket_shift).min(u64::from(u32::MAX)) as u32;
                let seg = starts.partition_point(|&x| x <= first) - 1;
                if b == nb {
                    (starts.len() - 1) as u32
                } else {
                    seg as u32
                }
            })
            .collect();
        FieldIndex {
            field: field as u8,
            bucket_shift,
            buckets: buckets.into_boxed_slice(),
            starts: starts.into_boxed_slice(),
            rows: rows.into_boxed_slice(),
        }
    }

    /// The segment holding `v`.
    #[inline(always)]
    fn segment(&self, v: u32) -> usize {
        let b = (v >> self.bucket_shift) as usize;
        let lo = self.buckets[b] as usize;
        let hi = self.buckets[b + 1] as usize;
        // Segments lo..=hi may hold v; lo's start is <= v.
        let cand = &self.starts[lo + 1..=hi];
        lo + cand.partition_point(|&x| x <= v)
    }
}

/// A compiled rule-set index.
#[derive(Clone, Debug)]
pub(crate) struct Index {
    /// Indexed fields that some entry constrains.
    fields: Box<[FieldIndex]>,
    /// Chunks per row.
    nchunks: usize,
    /// Words per chunk.
    cw: usize,
    /// Chunk table, `cw` words per chunk; chunk 0 is all zeros.
    chunks: Box<[u64]>,
    /// Per entry: its rule, with [`VERIFY`] when the rule must be checked.
    entries: Box<[u32]>,
    /// Per rule: its terminal (output or drop) and its program's root.
    rules: Box<[(u32, u32)]>,
    /// The rules' programs (match → `TERM`, no match → `DROP`).
    nodes: Box<[Node]>,
    /// The one-word form, when there are at most 64 entries.
    small: Option<Small>,
}

/// Bit of a [`SmallField`] bucket entry: the bucket holds several segments
/// (the low bits give the first), found by a short scan of the starts.
const REFINE: u8 = 1 << 7;
/// Most bits of a field value used to pick a bucket (64 Ki entries, 64
/// KiB at most per field).
const SMALL_BUCKET_BITS: u32 = 16;
/// Most bytes of bucket tables one list's one-word form may take: a list
/// that needs full tables for all four of addresses and ports (272 KiB)
/// keeps the decision program. An 11-rule firewall maps 150-215 KiB (its
/// ports and a /16 or longer net each need a full table), of which the
/// pages that are not all one field's commonest entry take memory
/// (`c_firewall`'s rules: 32 KiB). Tables in two
/// levels with equal blocks stored once took a tenth of that but cost one
/// more dependent load a field, 1.5-2 ns a packet: no faster than the
/// decision program on `c_firewall`'s rules.
const SMALL_MAX_BYTES: usize = 256 * 1024;

/// One field of the one-word index: the value's bucket gives its segment
/// directly, and the segment the bit mask of entries compatible with it.
/// A field no entry constrains has one bucket and one segment (all
/// entries), so that every packet reads every field without a branch.
#[derive(Clone, Debug)]
struct SmallField {
    bucket_shift: u32,
    /// Where the field's buckets start in [`Small::table`]: per bucket,
    /// its segment, or [`REFINE`] with the first segment it overlaps,
    /// stored XOR `zero`.
    off: usize,
    /// The field's most common bucket entry, stored as 0: the table's
    /// pages that hold only it are never written, and so take no memory
    /// (an 11-rule firewall's tables are mostly one segment: "none of the
    /// rules' ports", "none of their nets").
    zero: u8,
    starts: Box<[u32]>,
    /// Per segment: the compatible entries (at most [`SMALL_SEGMENTS`]
    /// segments; kept inline, so that the bucket's entry indexes it
    /// without a bounds check or a pointer to follow).
    rows: [u64; SMALL_SEGMENTS],
}

/// Most segments of one field in the one-word form: a bucket entry's
/// low seven bits name one.
const SMALL_SEGMENTS: usize = REFINE as usize;

impl SmallField {
    /// A field no entry constrains (its one bucket at `off`, zero).
    fn any(nentries: usize, off: usize) -> SmallField {
        SmallField {
            bucket_shift: 32,
            off,
            zero: 0,
            starts: Box::new([0]),
            rows: {
                let mut rows = [0; SMALL_SEGMENTS];
                rows[0] = u64::MAX >> (64 - nentries.max(1));
                rows
            },
        }
    }

    /// The entries compatible with field value `v`.
    #[inline(always)]
    fn row(&self, table: &[u8], v: u32) -> u64 {
        let e = table
            .get(self.off + (u64::from(v) >> self.bucket_shift) as usize)
            .copied()
            .unwrap_or(self.zero)
            ^ self.zero;
        let mut seg = usize::from(e & !REFINE);
        if e & REFINE != 0 {
            while self.starts.get(seg + 1).is_some_and(|&x| x <= v) {
                seg += 1;
            }
        }
        self.rows[seg % SMALL_SEGMENTS]
    }
}

/// The index for lists of at most 64 entries (an `IPFilter` of a few
/// dozen rules): one 64-bit word of compatible entries per field value,
/// each found with one table load (a second, short scan only in buckets
/// where the rules' boundaries are finer than the table), so classifying
/// a packet is six loads from fixed header offsets, six table lookups,
/// five ANDs and a count of trailing zeros.
struct Small {
    /// In [`FIELDS`] order.
    fields: [SmallField; NF],
    /// Every field's buckets, one after the other, in a mapping of their
    /// own: zero pages are never written (see [`SmallField::zero`]).
    table: HugeTable<u8>,
    /// Whether every entry is exact (no rule needs verifying).
    exact: bool,
    /// By the index of a packet's first compatible entry (64: none), what
    /// the packet gets: its rule's terminal, [`DROP`] for none, or
    /// [`SCAN`] where the rule must be verified. One load from a packet's
    /// entry word to its output, with no branch (it was two dependent
    /// loads, of the entry and then of its rule, and a test).
    results: [u32; 65],
}

/// In [`Small::results`]: the entry's rule must be verified by the
/// general scan (never a terminal: terminals have [`TERM`] set).
const SCAN: u32 = 0;

impl Clone for Small {
    /// A copy whose table is written only where it is not zero, as the
    /// original's was.
    fn clone(&self) -> Small {
        let mut table = HugeTable::zeroed_sparse(self.table.len())
            .unwrap_or_else(|e| panic!("cannot map a copy of a filter's tables: {e}"));
        for (d, &v) in table.iter_mut().zip(self.table.iter()) {
            if v != 0 {
                *d = v;
            }
        }
        Small {
            fields: self.fields.clone(),
            table,
            exact: self.exact,
            results: self.results,
        }
    }
}

impl std::fmt::Debug for Small {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Small")
            .field("fields", &self.fields)
            .field("table_bytes", &self.table.len())
            .field("exact", &self.exact)
            .finish()
    }
}

impl Small {
    fn new(
        fields: &[FieldIndex],
        chunks: &[u64],
        entries: &[u32],
        rules: &[(u32, u32)],
    ) -> Option<Small> {
        if entries.len() > 64 {
            return None;
        }
        // Each constrained field's buckets, then one zero byte that every
        // unconstrained field reads.
        let mut built: Vec<(usize, u32, Vec<u8>)> = Vec::new();
        let mut bytes = 0;
        for fi in fields {
            let fd = &FIELDS[usize::from(fi.field)];
            let bits = 32 - fd.max().leading_zeros();
            let max_bits = bits.min(SMALL_BUCKET_BITS);
            if fi.starts.len() > SMALL_SEGMENTS - 1 {
                return None;
            }
            // The fewest bucket bits under which no bucket holds two
            // segments, else the most allowed.
            let uniform = |b: u32| {
                let shift = bits - b;
                fi.starts[1..].iter().all(|&x| (x >> shift) << shift == x)
            };
            let b = (1..=max_bits).find(|&b| uniform(b)).unwrap_or(max_bits);
            let shift = bits - b;
            let nb = (u64::from(fd.max()) >> shift) + 1;
            // Checked before a table is built.
            bytes += nb as usize;
            if bytes > SMALL_MAX_BYTES {
                return None;
            }
            let buckets: Vec<u8> = (0..nb)
                .map(|k| {
                    let first = (k << shift) as u32;
                    let last = first | ((1u64 << shift) - 1) as u32;
                    let seg = fi.starts.partition_point(|&x| x <= first) - 1;
                    let split = fi.starts.get(seg + 1).is_some_and(|&x| x <= last);
                    seg as u8 | if split { REFINE } else { 0 }
                })
                .collect();
            built.push((usize::from(fi.field), shift, buckets));
        }
        let mut table = HugeTable::<u8>::zeroed_sparse(bytes + 1).ok()?;
        let unconstrained = bytes;
        let mut out: [SmallField; NF] =
            std::array::from_fn(|_| SmallField::any(entries.len(), unconstrained));
        let mut off = 0;
        for (fi, (field, shift, buckets)) in fields.iter().zip(built) {
            // The most common entry is stored as 0 (ties: the smallest).
            let mut count = [0usize; 256];
            for &e in &buckets {
                count[usize::from(e)] += 1;
            }
            let zero = (0..=255u8)
                .max_by_key(|&e| (count[usize::from(e)], std::cmp::Reverse(e)))
                .unwrap_or(0);
            for (d, &e) in table[off..off + buckets.len()].iter_mut().zip(&buckets) {
                if e != zero {
                    *d = e ^ zero;
                }
            }
            out[field] = SmallField {
                bucket_shift: shift,
                off,
                zero,
                starts: fi.starts.clone(),
                rows: {
                    let mut rows = [0; SMALL_SEGMENTS];
                    for (r, &id) in rows.iter_mut().zip(fi.rows.iter()) {
                        *r = chunks[id as usize];
                    }
                    rows
                },
            };
            off += buckets.len();
        }
        let mut results = [DROP; 65];
        for (r, &e) in results.iter_mut().zip(entries) {
            *r = if e & VERIFY != 0 {
                SCAN
            } else {
                rules.get(e as usize)?.0
            };
        }
        Some(Small {
            fields: out,
            table,
            exact: entries.iter().all(|&e| e & VERIFY == 0),
            results,
        })
    }

    /// The entries compatible with a packet long enough for every field
    /// (`NEED_PRIMARY` network bytes, `NEED_TRANSPORT` transport bytes).
    #[inline(always)]
    fn entries(&self, ip: &[u8; NEED_PRIMARY], tr: &[u8; NEED_TRANSPORT]) -> u64 {
        let be32 = |b: &[u8], o: usize| u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        // The fields of `FIELDS`, in its order.
        let v = [
            u32::from(ip[9]),
            be32(ip, 12),
            be32(ip, 16),
            u32::from(u16::from_be_bytes([tr[0], tr[1]])),
            u32::from(u16::from_be_bytes([tr[2], tr[3]])),
            u32::from(u16::from_be_bytes([ip[6], ip[7]]) & 0x3FFF),
        ];
        let (f, t) = (&self.fields, &self.table[..]);
        (f[0].row(t, v[0]) & f[1].row(t, v[1]))
            & (f[2].row(t, v[2]) & f[3].row(t, v[3]))
            & (f[4].row(t, v[4]) & f[5].row(t, v[5]))
    }

    /// Bytes of its tables (the buckets' mapping counted whole, though
    /// its zero pages take no memory).
    fn heap_bytes(&self) -> usize {
        self.table.len()
            + self
                .fields
                .iter()
                .map(|f| f.starts.len() * 4 + std::mem::size_of_val(&f.rows))
                .sum::<usize>()
    }

    /// Pages of the buckets' mapping that hold something other than
    /// zeros: the ones that take memory.
    #[cfg(test)]
    fn written_pages(&self) -> (usize, usize) {
        let pages = self.table.chunks(4096);
        let n = pages.len();
        (pages.filter(|p| p.iter().any(|&b| b != 0)).count(), n)
    }
}

/// Terminal for "the rule matched" in per-rule programs.
const MATCHED: u32 = TERM;

impl Index {
    /// The one-word form's pages written and in all (tests).
    #[cfg(test)]
    pub(crate) fn small_written_pages(&self) -> Option<(usize, usize)> {
        self.small.as_ref().map(Small::written_pages)
    }

    /// Number of rules indexed.
    pub(crate) fn rules(&self) -> usize {
        self.rules.len()
    }

    /// Builds the index for a first-match rule list, or `None` when it
    /// would be too large.
    pub(crate) fn new(rules: &[(Expr, Option<usize>)]) -> Option<Index> {
        let mut nodes = Vec::new();
        let mut rule_info = Vec::with_capacity(rules.len());
        let mut entries: Vec<u32> = Vec::new();
        let mut boxes: Vec<Bx> = Vec::new();
        let mut memo: HashMap<&Expr, (Vec<Bx>, bool)> = HashMap::new();
        for (r, (e, out)) in rules.iter().enumerate() {
            let root = dd::lin(e, MATCHED, DROP, &mut nodes);
            rule_info.push((dd::out_ref(*out), root));
            let (bs, exact) = memo.entry(e).or_insert_with(|| {
                let d = analyze(e, true);
                (d.boxes, d.exact)
            });
            for b in bs.iter() {
                entries.push(r as u32 | if *exact { 0 } else { VERIFY });
                boxes.push(b.clone());
            }
            if entries.len() > MAX_ENTRIES {
                return None;
            }
        }
        let nwords = entries.len().div_ceil(64).max(1);
        let cw = nwords.min(CHUNK_WORDS);
        let nchunks = nwords.div_ceil(cw);
        let mut chunks: Vec<u64> = vec![0; cw];
        let mut chunk_ids: HashMap<Box<[u64]>, u32> = HashMap::new();
        chunk_ids.insert(vec![0; cw].into_boxed_slice(), 0);
        let mut fields = Vec::new();
        for f in 0..NF {
            // A field no entry constrains is left out (but one field is
            // always kept: its rows are then the set of all entries).
            let all = full(f);
            if boxes.iter().all(|b| b[f] == all) && (f + 1 < NF || !fields.is_empty()) {
                continue;
            }
            fields.push(build_field(
                f,
                &boxes,
                nwords,
                cw,
                &mut chunks,
                &mut chunk_ids,
            ));
        }
        // Most selective field first: fewest compatible entries on average
        // over its segments.
        fields.sort_by(|a, b| a.1.total_cmp(&b.1));
        let fields: Vec<FieldIndex> = fields.into_iter().map(|(f, _)| f).collect();
        let small = if nchunks == 1 && cw == 1 {
            Small::new(&fields, &chunks, &entries, &rule_info)
        } else {
            None
        };
        Some(Index {
            fields: fields.into_boxed_slice(),
            nchunks,
            cw,
            chunks: chunks.into_boxed_slice(),
            entries: entries.into_boxed_slice(),
            rules: rule_info.into_boxed_slice(),
            nodes: nodes.into_boxed_slice(),
            small,
        })
    }

    /// Whether the index has its one-word form with every rule exact:
    /// then it classifies in a handful of loads per packet, faster than a
    /// decision program of more than a few steps.
    pub(crate) fn is_small_exact(&self) -> bool {
        self.small.as_ref().is_some_and(|s| s.exact)
    }

    /// Number of nodes in the per-rule programs.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Approximate heap footprint in bytes.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.fields
            .iter()
            .map(|f| (f.starts.len() + f.rows.len() + f.buckets.len()) * 4)
            .sum::<usize>()
            + self.chunks.len() * 8
            + self.entries.len() * 4
            + self.rules.len() * 8
            + self.nodes.len() * std::mem::size_of::<Node>()
            + self.small.as_ref().map_or(0, Small::heap_bytes)
    }

    /// Whether rule `r`'s program matches the packet.
    #[inline]
    fn rule_matches(&self, r: usize, sp: [&[u8]; 2]) -> bool {
        let root = self.rules[r].1;
        let t = if root & TERM != 0 {
            root
        } else {
            crate::walk_nodes(&self.nodes, &[], root, [sp[0], sp[1], &[]])
        };
        t == MATCHED
    }

    /// Classifies a packet given its (network, transport) spaces; returns
    /// the terminal (`TERM | output` or `DROP`).
    #[inline(always)]
    pub(crate) fn classify(&self, sp: [&[u8]; 2]) -> u32 {
        if let (Some(small), Some(ip), Some(tr)) = (
            &self.small,
            sp[0].first_chunk::<NEED_PRIMARY>(),
            sp[1].first_chunk::<NEED_TRANSPORT>(),
        ) {
            let acc = small.entries(ip, tr);
            let r = small.results[acc.trailing_zeros() as usize];
            if r != SCAN {
                return r;
            }
            // The entry must be verified: the general scan below.
        }
        self.classify_scan(sp)
    }

    /// The general scan (no one-word form, an entry to verify, or a
    /// packet too short for the one-word form's fields): out of line, so
    /// that the one-word path inlines into the loops that call it.
    #[inline(never)]
    fn classify_scan(&self, sp: [&[u8]; 2]) -> u32 {
        if sp[0].len() < NEED_PRIMARY || sp[1].len() < NEED_TRANSPORT {
            return self.classify_linear(sp);
        }
        let mut rows: [&[u32]; NF] = [&[]; NF];
        let nf = self.fields.len();
        for (row, fi) in rows.iter_mut().zip(self.fields.iter()) {
            let fd = &FIELDS[usize::from(fi.field)];
            let s = sp[fd.space as usize];
            let off = fd.off as usize;
            let w = u32::from_be_bytes([s[off], s[off + 1], s[off + 2], s[off + 3]]);
            let v = (w & fd.mask) >> fd.shift;
            let seg = fi.segment(v);
            *row = &fi.rows[seg * self.nchunks..(seg + 1) * self.nchunks];
        }
        let rows = &rows[..nf];
        let cw = self.cw;
        let mut failed = usize::MAX;
        for c in 0..self.nchunks {
            let mut ids = [0usize; NF];
            let mut zero = false;
            for (id, row) in ids.iter_mut().zip(rows) {
                *id = row[c] as usize * cw;
                zero |= *id == 0;
            }
            if zero {
                continue;
            }
            // AND the fields' chunks, most selective field first, and give
            // up on the chunk as soon as nothing is left.
            let mut acc = [!0u64; CHUNK_WORDS];
            let acc = &mut acc[..cw];
            let mut any = 1;
            for &id in &ids[..nf] {
                any = 0;
                for (a, &w) in acc.iter_mut().zip(&self.chunks[id..id + cw]) {
                    *a &= w;
                    any |= *a;
                }
                if any == 0 {
                    break;
                }
            }
            if any == 0 {
                continue;
            }
            for (w, &word) in acc.iter().enumerate() {
                let mut x = word;
                while x != 0 {
                    let e = (c * cw + w) * 64 + x.trailing_zeros() as usize;
                    x &= x - 1;
                    let info = self.entries[e];
                    let r = (info & !VERIFY) as usize;
                    if info & VERIFY == 0 {
                        return self.rules[r].0;
                    }
                    if r != failed {
                        if self.rule_matches(r, sp) {
                            return self.rules[r].0;
                        }
                        failed = r;
                    }
                }
            }
        }
        DROP
    }

    /// Rule by rule (packets too short for the index).
    #[cold]
    fn classify_linear(&self, sp: [&[u8]; 2]) -> u32 {
        for (r, &(out, _)) in self.rules.iter().enumerate() {
            if self.rule_matches(r, sp) {
                return out;
            }
        }
        DROP
    }
}

/// Sweeps field `f`'s boundaries, emitting one row per segment whose set of
/// compatible entries differs from the previous one. Also returns the mean
/// number of compatible entries per segment.
fn build_field(
    f: usize,
    boxes: &[Bx],
    nwords: usize,
    cw: usize,
    chunks: &mut Vec<u64>,
    chunk_ids: &mut HashMap<Box<[u64]>, u32>,
) -> (FieldIndex, f64) {
    let nchunks = nwords.div_ceil(cw);
    // (point, entry, add?) with removals at hi + 1.
    let mut events: Vec<(u32, u32, bool)> = Vec::new();
    for (e, b) in boxes.iter().enumerate() {
        for &(lo, hi) in &b[f] {
            events.push((lo, e as u32, true));
            if hi < FIELDS[f].max() {
                events.push((hi + 1, e as u32, false));
            }
        }
    }
    events.sort_unstable_by_key(|&(p, _, _)| p);
    let mut bits = vec![0u64; nchunks * cw];
    let mut row = vec![0u32; nchunks];
    let mut dirty = vec![false; nchunks];
    let mut starts = vec![0u32];
    let mut rows: Vec<u32> = row.clone();
    let (mut total, mut first_count) = (0u64, 0u64);
    let mut i = 0;
    while i < events.len() {
        let p = events[i].0;
        while i < events.len() && events[i].0 == p {
            let (_, e, add) = events[i];
            let (w, b) = (e as usize / 64, e % 64);
            if add {
                bits[w] |= 1 << b;
            } else {
                bits[w] &= !(1 << b);
            }
            dirty[w / cw] = true;
            i += 1;
        }
        for c in 0..nchunks {
            if !std::mem::take(&mut dirty[c]) {
                continue;
            }
            let words = &bits[c * cw..(c + 1) * cw];
            row[c] = match chunk_ids.get(words) {
                Some(&id) => id,
                None => {
                    let id = (chunks.len() / cw) as u32;
                    chunks.extend_from_slice(words);
                    chunk_ids.insert(words.into(), id);
                    id
                }
            };
        }
        let last = &rows[rows.len() - nchunks..];
        let count = bits.iter().map(|w| u64::from(w.count_ones())).sum::<u64>();
        if p == 0 {
            rows.truncate(rows.len() - nchunks);
            rows.extend_from_slice(&row);
            first_count = count;
        } else if last != row.as_slice() {
            starts.push(p);
            rows.extend_from_slice(&row);
            total += count;
        }
    }
    let mean = (total + first_count) as f64 / starts.len() as f64;
    (FieldIndex::new(f, starts, rows), mean)
}

/// Hooks for the crate's unit tests.
#[cfg(test)]
pub(crate) mod tests_api {
    use super::*;

    /// Interval set of field `f` for test `t`.
    pub(crate) fn leaf(f: usize, t: &Test) -> Option<Set> {
        leaf_set(f, t)
    }

    /// (number of boxes, exact) of a rule expression.
    pub(crate) fn exact(e: &Expr) -> (usize, bool) {
        let d = analyze(e, true);
        (d.boxes.len(), d.exact)
    }
}
