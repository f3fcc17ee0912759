//! What the IP route-lookup elements share: the route syntax
//! (`ADDR/MASK [GW] OUT`), route tables (a multibit trie for
//! `RadixIPLookup` and `DirectIPLookup`, a list for `LinearIPLookup` and
//! `StaticIPLookup`), the route handlers (`table`, `lookup`, `add`, `set`,
//! `remove`, `ctrl`, `flush`) and the push loop.

use pronto_packet::table::HugeTable;
use pronto_packet::{Batch, Packet, BATCH_MAX};

use crate::{push_each, ConfigCtx, ConfigError, HandlerError, Out};

/// One route: packets whose destination matches `addr/mask` go to output
/// `port`, with the destination annotation set to `gw` when it is not zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpRoute {
    /// Destination prefix (already masked), host order.
    pub addr: u32,
    /// Mask, host order.
    pub mask: u32,
    /// Gateway (0: none), host order.
    pub gw: u32,
    /// Output port; negative in a `remove` request means "any".
    pub port: i32,
}

impl IpRoute {
    /// True if `a` lies inside the route's prefix.
    #[inline]
    pub fn contains(&self, a: u32) -> bool {
        a & self.mask == self.addr
    }

    /// Whether this request matches an existing route `r`: same prefix, and
    /// same gateway and port unless the request's port is negative.
    pub fn matches(&self, r: &IpRoute) -> bool {
        self.addr == r.addr
            && self.mask == r.mask
            && (self.port < 0 || (self.gw == r.gw && self.port == r.port))
    }

    /// The route as text: `ADDR/LEN GW PORT` (`-` for no gateway); with
    /// `tabs`, columns are separated by tabs and padded as a table.
    pub fn unparse(&self, tabs: bool) -> String {
        let sep = if tabs { '\t' } else { ' ' };
        let mut s = format!("{}/{}", ip_str(self.addr), mask_str(self.mask));
        s.push(sep);
        if tabs && s.len() < 17 {
            s.push('\t');
        }
        let l = s.len();
        if self.gw != 0 {
            s.push_str(&ip_str(self.gw));
        } else {
            s.push('-');
        }
        s.push(sep);
        if tabs && s.len() < l + 9 {
            s.push('\t');
        }
        s.push_str(&self.port.to_string());
        s
    }
}

/// Dotted-quad text of a host-order address.
pub fn ip_str(a: u32) -> String {
    let b = a.to_be_bytes();
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

/// A mask as its prefix length when it is one, else dotted quad.
fn mask_str(m: u32) -> String {
    match prefix_len(m) {
        Some(l) => l.to_string(),
        None => ip_str(m),
    }
}

/// The prefix length of a contiguous mask.
pub fn prefix_len(m: u32) -> Option<u32> {
    let l = m.leading_ones();
    (mask_of(l) == m).then_some(l)
}

/// The mask with the top `len` bits set.
#[inline]
pub fn mask_of(len: u32) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len.min(32))
    }
}

/// Parses a dotted address with 1 to 4 parts (missing trailing parts are
/// zero) when `partial`, else exactly 4.
fn parse_addr(s: &str, partial: bool) -> Option<u32> {
    let mut out = [0u8; 4];
    let mut n = 0;
    for part in s.split('.') {
        if n == 4 || part.is_empty() || part.len() > 3 || !part.bytes().all(|c| c.is_ascii_digit())
        {
            return None;
        }
        out[n] = part.parse::<u8>().ok()?;
        n += 1;
    }
    (n == 4 || (partial && n >= 1)).then(|| u32::from_be_bytes(out))
}

/// A full address, or an AddressInfo name for one (gateways).
fn parse_addr_or_name(s: &str) -> Option<u32> {
    parse_addr(s, false).or_else(|| pronto_lang::names::ip(s).map(u32::from_be_bytes))
}

/// Parses `ADDR/LEN`, `ADDR/MASK`, or (with `bare`) a lone address meaning
/// `/32`. Before a slash the address may be abbreviated (`18.26.4/24`,
/// `0/0`). Returns `(addr, mask)`, the address not masked.
pub fn parse_prefix(s: &str, bare: bool) -> Option<(u32, u32)> {
    match s.split_once('/') {
        None if !bare => None,
        None => parse_addr(s, false)
            .map(|a| (a, u32::MAX))
            // An AddressInfo name: its address as a /32, or its prefix
            // (`NAME:ipnet`), as Click's IPPrefixArg reads it.
            .or_else(|| {
                pronto_lang::names::prefix(s)
                    .map(|(a, m)| (u32::from_be_bytes(a), u32::from_be_bytes(m)))
            }),
        Some((a, m)) => {
            let addr = parse_addr(a, true)?;
            let mask = if m.contains('.') {
                parse_addr(m, false)?
            } else {
                if m.is_empty() || m.len() > 2 || !m.bytes().all(|c| c.is_ascii_digit()) {
                    return None;
                }
                let l: u32 = m.parse().ok()?;
                if l > 32 {
                    return None;
                }
                mask_of(l)
            };
            Some((addr, mask))
        }
    }
}

/// Parses a route, `ADDR/MASK [GW|-] OUT`; in a removal request the output
/// (and gateway) may be left out (port -1).
pub fn parse_route(s: &str, remove: bool) -> Option<IpRoute> {
    let mut words = s.split_whitespace();
    let (addr, mask) = parse_prefix(words.next()?, true)?;
    let mut r = IpRoute {
        addr: addr & mask,
        mask,
        gw: 0,
        port: -1,
    };
    let mut word = words.next();
    match word {
        Some("-") => word = words.next(),
        Some(w) => {
            if let Some(g) = parse_addr_or_name(w) {
                r.gw = g;
                word = words.next();
            }
        }
        None => {}
    }
    match word {
        Some(w) => {
            r.port = pronto_lang::args::parse_i64(w)
                .ok()
                .and_then(|v| i32::try_from(v).ok())?
        }
        None if remove => {}
        None => return None,
    }
    words.next().is_none().then_some(r)
}

/// Why a route change failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteError {
    /// A route for the prefix exists (and replacing was not allowed).
    Exists(IpRoute),
    /// No such route.
    NotFound,
    /// The table cannot hold this route (text says why).
    Other(String),
}

/// A routing table behind a route-lookup element.
pub trait RouteTable {
    /// Adds `r`; if a route for the same prefix exists, replaces it when
    /// `set` (returning the old one), else fails with
    /// [`RouteError::Exists`].
    fn add_route(&mut self, r: IpRoute, set: bool) -> Result<Option<IpRoute>, RouteError>;
    /// Removes the route matching `r` ([`IpRoute::matches`]).
    fn remove_route(&mut self, r: &IpRoute) -> Result<IpRoute, RouteError>;
    /// Longest-prefix match: `(gw, port)`.
    fn lookup(&self, a: u32) -> Option<(u32, u32)>;
    /// Longest-prefix matches of a batch, `out[i]` for `addrs[i]`. Tables
    /// override this to issue every first-level read before using any, so
    /// that the cache misses of a batch overlap instead of queueing.
    fn lookup_many(&self, addrs: &[u32], out: &mut [Option<(u32, u32)>]) {
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = self.lookup(a);
        }
    }
    /// The routes, one per line.
    fn dump(&self) -> String;
    /// Removes every route.
    fn flush(&mut self);
}

// ---------------------------------------------------------------------
// Multibit trie.

/// Slot flag: the slot points at a child node rather than holding a route
/// key.
const CHILD: u32 = 1 << 31;

/// Routes of one prefix length by masked address. Routes come from the
/// configuration and from handler writes (a tenant's control plane):
/// hashed with a per-table secret key all the same (`pronto_hash`).
type PrefixMap = pronto_hash::KeyedMap<u32, u32>;

enum Loc {
    Root(usize),
    Node(usize),
}

/// A multibit trie with leaf pushing: a root level of `root_bits` bits
/// (16 for `RadixIPLookup`, 24 for DIR-24-8 in `DirectIPLookup`), then
/// 8-bit levels. A slot holds a route key (0: no route) or a child node.
/// Every lookup is one to three array reads.
pub struct LpmTrie {
    root_bits: u32,
    root_shift: u32,
    root: Vec<u32>,
    nodes: Vec<u32>,
    free_nodes: Vec<u32>,
    /// Routes by key - 1, in the order `table` lists them.
    routes: Vec<Option<IpRoute>>,
    free_keys: Vec<u32>,
    /// (gw, port) by key; entry 0 is "no route".
    hops: Vec<(u32, u32)>,
    by_prefix: Vec<PrefixMap>,
}

const NO_PORT: u32 = u32::MAX;

impl LpmTrie {
    /// An empty trie whose root level indexes the top `root_bits` bits
    /// (at most 24, a multiple of 8 plus 0).
    pub fn new(root_bits: u32) -> LpmTrie {
        let root_bits = root_bits.clamp(8, 24);
        LpmTrie {
            root_bits,
            root_shift: 32 - root_bits,
            root: vec![0; 1 << root_bits],
            nodes: Vec::new(),
            free_nodes: Vec::new(),
            routes: Vec::new(),
            free_keys: Vec::new(),
            hops: vec![(0, NO_PORT)],
            by_prefix: (0..33).map(|_| pronto_hash::map()).collect(),
        }
    }

    /// The route key for `a` (0: none).
    #[inline]
    fn lookup_key(&self, a: u32) -> u32 {
        let mut s = self.root[(a >> self.root_shift) as usize];
        let mut shift = self.root_shift;
        while s & CHILD != 0 {
            shift = shift.saturating_sub(8);
            let idx = (((s & !CHILD) as usize) << 8) | ((a >> shift) & 255) as usize;
            s = self.nodes[idx];
        }
        s
    }

    fn get(&self, l: &Loc) -> u32 {
        match *l {
            Loc::Root(i) => self.root[i],
            Loc::Node(i) => self.nodes[i],
        }
    }

    fn set(&mut self, l: &Loc, v: u32) {
        match *l {
            Loc::Root(i) => self.root[i] = v,
            Loc::Node(i) => self.nodes[i] = v,
        }
    }

    fn alloc_node(&mut self, fill: u32) -> u32 {
        let n = match self.free_nodes.pop() {
            Some(n) => n,
            None => {
                let n = (self.nodes.len() >> 8) as u32;
                self.nodes.resize(self.nodes.len() + 256, 0);
                n
            }
        };
        let b = (n as usize) << 8;
        self.nodes[b..b + 256].fill(fill);
        n
    }

    /// Replaces key `old` by `new` in every slot of node `n` and below.
    fn repaint_node(&mut self, n: u32, old: u32, new: u32) {
        let b = (n as usize) << 8;
        for i in b..b + 256 {
            let v = self.nodes[i];
            if v & CHILD != 0 {
                self.repaint_node(v & !CHILD, old, new);
            } else if v == old {
                self.nodes[i] = new;
            }
        }
    }

    /// Replaces key `old` by `new` over the prefix `addr/len`: slots whose
    /// key is `old` change, slots of more specific routes do not.
    fn paint(&mut self, addr: u32, len: u32, old: u32, new: u32) {
        let mut bits = self.root_bits;
        let (in_root, start, count) = if len <= bits {
            (
                true,
                (addr >> self.root_shift) as usize,
                1usize << (bits - len),
            )
        } else {
            let mut loc = Loc::Root((addr >> self.root_shift) as usize);
            loop {
                let v = self.get(&loc);
                let node = if v & CHILD != 0 {
                    v & !CHILD
                } else {
                    let n = self.alloc_node(v);
                    self.set(&loc, n | CHILD);
                    n
                };
                bits += 8;
                let idx = ((node as usize) << 8) | ((addr >> (32 - bits)) & 255) as usize;
                if len <= bits {
                    break (false, idx, 1usize << (bits - len));
                }
                loc = Loc::Node(idx);
            }
        };
        for i in start..start + count {
            let loc = if in_root { Loc::Root(i) } else { Loc::Node(i) };
            let v = self.get(&loc);
            if v & CHILD != 0 {
                self.repaint_node(v & !CHILD, old, new);
            } else if v == old {
                self.set(&loc, new);
            }
        }
    }

    /// The key of the longest route strictly shorter than `len` that
    /// contains `addr`.
    fn covering_key(&self, addr: u32, len: u32) -> u32 {
        // Fast path: the longest match for the prefix's first address is
        // the cover if it is shorter than the prefix (any cover contains
        // that address too).
        let k = self.lookup_key(addr);
        if k == 0 {
            return 0;
        }
        if let Some(r) = self.routes[k as usize - 1] {
            if r.mask.leading_ones() < len {
                return k;
            }
        }
        for l in (0..len).rev() {
            if let Some(&k) = self.by_prefix[l as usize].get(&(addr & mask_of(l))) {
                return k;
            }
        }
        0
    }

    fn alloc_key(&mut self, r: IpRoute) -> u32 {
        let hop = (r.gw, r.port as u32);
        match self.free_keys.pop() {
            Some(k) => {
                self.routes[k as usize - 1] = Some(r);
                self.hops[k as usize] = hop;
                k
            }
            None => {
                self.routes.push(Some(r));
                self.hops.push(hop);
                self.routes.len() as u32
            }
        }
    }

    fn free_key(&mut self, k: u32) {
        self.routes[k as usize - 1] = None;
        self.hops[k as usize] = (0, NO_PORT);
        self.free_keys.push(k);
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.len() - self.free_keys.len()
    }

    /// True when the table has no route.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl RouteTable for LpmTrie {
    fn add_route(&mut self, r: IpRoute, set: bool) -> Result<Option<IpRoute>, RouteError> {
        let len =
            prefix_len(r.mask).ok_or_else(|| RouteError::Other("mask is not a prefix".into()))?;
        if self.routes.len() >= (CHILD - 2) as usize {
            return Err(RouteError::Other("too many routes".into()));
        }
        let a = r.addr & r.mask;
        let existing = self.by_prefix[len as usize].get(&a).copied();
        if let Some(k) = existing {
            let old = self.routes[k as usize - 1].expect("keyed route is live");
            if !set {
                return Err(RouteError::Exists(old));
            }
        }
        let r = IpRoute { addr: a, ..r };
        let key = self.alloc_key(r);
        let old_key = existing.unwrap_or_else(|| self.covering_key(a, len));
        self.paint(a, len, old_key, key);
        self.by_prefix[len as usize].insert(a, key);
        Ok(existing.map(|k| {
            let old = self.routes[k as usize - 1].expect("keyed route is live");
            self.free_key(k);
            old
        }))
    }

    fn remove_route(&mut self, r: &IpRoute) -> Result<IpRoute, RouteError> {
        let len = prefix_len(r.mask).ok_or(RouteError::NotFound)?;
        let a = r.addr & r.mask;
        let k = *self.by_prefix[len as usize]
            .get(&a)
            .ok_or(RouteError::NotFound)?;
        let old = self.routes[k as usize - 1].expect("keyed route is live");
        if !r.matches(&old) {
            return Err(RouteError::NotFound);
        }
        let cover = self.covering_key(a, len);
        self.paint(a, len, k, cover);
        self.by_prefix[len as usize].remove(&a);
        self.free_key(k);
        Ok(old)
    }

    #[inline]
    fn lookup(&self, a: u32) -> Option<(u32, u32)> {
        let (gw, port) = self.hops[self.lookup_key(a) as usize];
        (port != NO_PORT).then_some((gw, port))
    }

    fn lookup_many(&self, addrs: &[u32], out: &mut [Option<(u32, u32)>]) {
        // Level by level over the whole batch: the reads of one level are
        // independent, so their cache misses overlap.
        let n = addrs.len().min(out.len()).min(BATCH_MAX);
        let mut slot = [0u32; BATCH_MAX];
        for (s, &a) in slot[..n].iter_mut().zip(addrs) {
            *s = self.root[(a >> self.root_shift) as usize];
        }
        let mut shift = self.root_shift;
        while shift > 0 && slot[..n].iter().any(|s| s & CHILD != 0) {
            shift = shift.saturating_sub(8);
            for (s, &a) in slot[..n].iter_mut().zip(addrs) {
                if *s & CHILD != 0 {
                    *s =
                        self.nodes[(((*s & !CHILD) as usize) << 8) | ((a >> shift) & 255) as usize];
                }
            }
        }
        for (o, &s) in out[..n].iter_mut().zip(&slot[..n]) {
            let (gw, port) = self.hops[s as usize];
            *o = (port != NO_PORT).then_some((gw, port));
        }
    }

    fn dump(&self) -> String {
        let mut s = String::new();
        for r in self.routes.iter().flatten() {
            s.push_str(&r.unparse(true));
            s.push('\n');
        }
        s
    }

    fn flush(&mut self) {
        *self = LpmTrie::new(self.root_bits);
    }
}

// ---------------------------------------------------------------------
// DIR-24-8.

/// A first-level entry with this bit set indexes a 256-entry block of the
/// second level; otherwise it is a next-hop index.
const BLOCK: u16 = 0x8000;
/// Most next-hop indexes and second-level blocks.
const MAX_INDEX: usize = 0x7fff;

/// The DIR-24-8 table of `DirectIPLookup`: a 2^24-entry first level
/// indexed by the top 24 address bits, and 256-entry second-level blocks
/// for addresses under prefixes longer than /24. Entries are 16-bit indexes
/// into a small table of distinct (gateway, port) next hops, so most
/// lookups read one first-level entry (one memory access) plus the
/// next-hop table, which stays in cache. Parallel arrays of prefix
/// lengths, read only on updates, say which route painted each entry.
pub struct Dir248 {
    tbl24: HugeTable<u16>,
    plen24: HugeTable<u8>,
    tbl8: Vec<u16>,
    plen8: Vec<u8>,
    nblocks: usize,
    /// (gw, port) by next-hop index; index 0 is "no route".
    vports: Vec<(u32, u32)>,
    vport_refs: Vec<u32>,
    vport_index: pronto_hash::KeyedMap<(u32, u32), u16>,
    free_vports: Vec<u16>,
    /// Routes by key - 1.
    routes: Vec<Option<IpRoute>>,
    /// When each route (by key - 1) entered the table (0 for the default
    /// route): `table` lists newer routes first within a hash bucket.
    ages: Vec<u64>,
    next_age: u64,
    free_keys: Vec<u32>,
    by_prefix: Vec<PrefixMap>,
}

/// Number of buckets of `DirectIPLookup`'s prefix hash, whose order
/// `table` follows.
const PREFIX_HASH_SIZE: u32 = 64 * 1024;

/// The bucket of `prefix/len` in `DirectIPLookup`'s route list (`table`
/// lists routes bucket by bucket). Shift counts wrap at 32, as the
/// processor's shift instruction does.
fn prefix_hash(prefix: u32, len: u32) -> u32 {
    let mut h = prefix ^ (len << 5) ^ (prefix >> (len >> 2)).wrapping_sub(len);
    h ^= (h >> 23) ^ (h >> 15).wrapping_mul(len) ^ (prefix >> 17).wrapping_mul(53);
    h = h.wrapping_sub(
        (prefix >> 3) ^ h.wrapping_shr(len).wrapping_mul(7) ^ (h >> 11).wrapping_mul(103),
    );
    (h ^ (h >> 17)) & (PREFIX_HASH_SIZE - 1)
}

impl Default for Dir248 {
    fn default() -> Self {
        Dir248::new()
    }
}

impl Dir248 {
    /// An empty table (the first level is allocated lazily by the system:
    /// 48 MB of address space, touched as routes are added).
    pub fn new() -> Dir248 {
        Dir248 {
            tbl24: HugeTable::zeroed(1 << 24).expect("memory for the route table"),
            plen24: HugeTable::zeroed(1 << 24).expect("memory for the route table"),
            tbl8: Vec::new(),
            plen8: Vec::new(),
            nblocks: 0,
            vports: vec![(0, NO_PORT)],
            vport_refs: vec![0],
            vport_index: pronto_hash::map(),
            free_vports: Vec::new(),
            routes: Vec::new(),
            ages: Vec::new(),
            next_age: 1,
            free_keys: Vec::new(),
            by_prefix: (0..33).map(|_| pronto_hash::map()).collect(),
        }
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.len() - self.free_keys.len()
    }

    /// True when the table has no route.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next-hop index for `(gw, port)`, made if new; counts a user.
    fn vport_acquire(&mut self, gw: u32, port: u32) -> Result<u16, RouteError> {
        if let Some(&v) = self.vport_index.get(&(gw, port)) {
            self.vport_refs[v as usize] += 1;
            return Ok(v);
        }
        let v = match self.free_vports.pop() {
            Some(v) => v,
            None => {
                if self.vports.len() > MAX_INDEX {
                    return Err(RouteError::Other("too many distinct next hops".into()));
                }
                self.vports.push((0, NO_PORT));
                self.vport_refs.push(0);
                (self.vports.len() - 1) as u16
            }
        };
        self.vports[v as usize] = (gw, port);
        self.vport_refs[v as usize] = 1;
        self.vport_index.insert((gw, port), v);
        Ok(v)
    }

    fn vport_release(&mut self, gw: u32, port: u32) {
        if let Some(&v) = self.vport_index.get(&(gw, port)) {
            let r = &mut self.vport_refs[v as usize];
            *r -= 1;
            if *r == 0 {
                self.vport_index.remove(&(gw, port));
                self.vports[v as usize] = (0, NO_PORT);
                self.free_vports.push(v);
            }
        }
    }

    /// Sets entries under `addr/len` whose recorded prefix length (plus
    /// one; 0 is "no route") passes `pred` to next hop `v`, length `plen`.
    fn paint(&mut self, addr: u32, len: u32, v: u16, plen: u8, pred: impl Fn(u8) -> bool) {
        if len <= 24 {
            let start = (addr >> 8) as usize;
            for i in start..start + (1usize << (24 - len)) {
                let e = self.tbl24[i];
                if e & BLOCK != 0 {
                    let b = ((e & !BLOCK) as usize) << 8;
                    for j in b..b + 256 {
                        if pred(self.plen8[j]) {
                            self.tbl8[j] = v;
                            self.plen8[j] = plen;
                        }
                    }
                } else if pred(self.plen24[i]) {
                    self.tbl24[i] = v;
                    self.plen24[i] = plen;
                }
            }
        } else {
            let i = (addr >> 8) as usize;
            let e = self.tbl24[i];
            let b = if e & BLOCK != 0 {
                ((e & !BLOCK) as usize) << 8
            } else {
                let b = self.nblocks << 8;
                self.nblocks += 1;
                self.tbl8.resize(b + 256, e);
                self.plen8.resize(b + 256, self.plen24[i]);
                self.tbl24[i] = BLOCK | (b >> 8) as u16;
                b
            };
            let start = b | (addr & 255) as usize;
            for j in start..start + (1usize << (32 - len)) {
                if pred(self.plen8[j]) {
                    self.tbl8[j] = v;
                    self.plen8[j] = plen;
                }
            }
        }
    }

    /// The route key covering `addr/len` with a shorter prefix.
    fn cover(&self, addr: u32, len: u32) -> Option<(u32, IpRoute)> {
        (0..len).rev().find_map(|l| {
            let k = *self.by_prefix[l as usize].get(&(addr & mask_of(l)))?;
            Some((l, self.routes[k as usize - 1]?))
        })
    }
}

impl RouteTable for Dir248 {
    fn add_route(&mut self, r: IpRoute, set: bool) -> Result<Option<IpRoute>, RouteError> {
        let len =
            prefix_len(r.mask).ok_or_else(|| RouteError::Other("mask is not a prefix".into()))?;
        let a = r.addr & r.mask;
        let existing = self.by_prefix[len as usize].get(&a).copied();
        if let Some(k) = existing {
            if !set {
                let old = self.routes[k as usize - 1].expect("keyed route is live");
                return Err(RouteError::Exists(old));
            }
        }
        if len > 24 && self.tbl24[(a >> 8) as usize] & BLOCK == 0 && self.nblocks > MAX_INDEX {
            return Err(RouteError::Other(
                "too many second-level blocks (prefixes longer than /24)".into(),
            ));
        }
        let v = self.vport_acquire(r.gw, r.port as u32)?;
        let plen = len as u8 + 1;
        self.paint(a, len, v, plen, |p| p <= plen);
        let r = IpRoute { addr: a, ..r };
        let old = match existing {
            Some(k) => {
                let old = self.routes[k as usize - 1].replace(r);
                if let Some(o) = old {
                    self.vport_release(o.gw, o.port as u32);
                }
                old
            }
            None => {
                // The default route always sorts last in its bucket.
                let age = if len == 0 { 0 } else { self.next_age };
                self.next_age += 1;
                let k = match self.free_keys.pop() {
                    Some(k) => {
                        self.routes[k as usize - 1] = Some(r);
                        self.ages[k as usize - 1] = age;
                        k
                    }
                    None => {
                        self.routes.push(Some(r));
                        self.ages.push(age);
                        self.routes.len() as u32
                    }
                };
                self.by_prefix[len as usize].insert(a, k);
                None
            }
        };
        Ok(old)
    }

    fn remove_route(&mut self, r: &IpRoute) -> Result<IpRoute, RouteError> {
        let len = prefix_len(r.mask).ok_or(RouteError::NotFound)?;
        let a = r.addr & r.mask;
        let k = *self.by_prefix[len as usize]
            .get(&a)
            .ok_or(RouteError::NotFound)?;
        let old = self.routes[k as usize - 1].expect("keyed route is live");
        if !r.matches(&old) {
            return Err(RouteError::NotFound);
        }
        let (cv, cplen) = match self.cover(a, len) {
            Some((l, c)) => (
                *self
                    .vport_index
                    .get(&(c.gw, c.port as u32))
                    .expect("live route has a next hop"),
                l as u8 + 1,
            ),
            None => (0, 0),
        };
        let plen = len as u8 + 1;
        self.paint(a, len, cv, cplen, |p| p == plen);
        self.by_prefix[len as usize].remove(&a);
        self.routes[k as usize - 1] = None;
        self.free_keys.push(k);
        self.vport_release(old.gw, old.port as u32);
        Ok(old)
    }

    #[inline]
    fn lookup(&self, a: u32) -> Option<(u32, u32)> {
        let mut e = self.tbl24[(a >> 8) as usize];
        if e & BLOCK != 0 {
            e = self.tbl8[(((e & !BLOCK) as usize) << 8) | (a & 255) as usize];
        }
        let (gw, port) = self.vports[e as usize];
        (port != NO_PORT).then_some((gw, port))
    }

    fn lookup_many(&self, addrs: &[u32], out: &mut [Option<(u32, u32)>]) {
        let n = addrs.len().min(out.len()).min(BATCH_MAX);
        let mut first = [0u16; BATCH_MAX];
        for (e, &a) in first[..n].iter_mut().zip(addrs) {
            *e = self.tbl24[(a >> 8) as usize];
        }
        for i in 0..n {
            let mut e = first[i];
            if e & BLOCK != 0 {
                e = self.tbl8[(((e & !BLOCK) as usize) << 8) | (addrs[i] & 255) as usize];
            }
            let (gw, port) = self.vports[e as usize];
            out[i] = (port != NO_PORT).then_some((gw, port));
        }
    }

    /// Bucket by bucket of the prefix hash, newest route first within a
    /// bucket (the order `DirectIPLookup`'s `table` has).
    fn dump(&self) -> String {
        let mut order: Vec<(u32, std::cmp::Reverse<u64>, IpRoute)> = self
            .routes
            .iter()
            .zip(&self.ages)
            .filter_map(|(r, &age)| {
                let r = (*r)?;
                let len = prefix_len(r.mask)?;
                Some((prefix_hash(r.addr, len), std::cmp::Reverse(age), r))
            })
            .collect();
        order.sort_unstable_by_key(|&(h, age, _)| (h, age));
        let mut s = String::new();
        for (_, _, r) in order {
            s.push_str(&r.unparse(true));
            s.push('\n');
        }
        s
    }

    fn flush(&mut self) {
        *self = Dir248::new();
    }
}

// ---------------------------------------------------------------------
// Linear list.

/// A list of routes searched in full on every lookup (the most specific
/// matching route wins; masks need not be prefixes).
#[derive(Default)]
pub struct LinearTable {
    routes: Vec<Option<IpRoute>>,
}

impl RouteTable for LinearTable {
    fn add_route(&mut self, r: IpRoute, set: bool) -> Result<Option<IpRoute>, RouteError> {
        let mut free = None;
        for (i, slot) in self.routes.iter_mut().enumerate() {
            match slot {
                None => {
                    free.get_or_insert(i);
                }
                Some(e) if e.addr == r.addr && e.mask == r.mask => {
                    let old = *e;
                    if !set {
                        return Err(RouteError::Exists(old));
                    }
                    e.gw = r.gw;
                    e.port = r.port;
                    return Ok(Some(old));
                }
                Some(_) => {}
            }
        }
        match free {
            Some(i) => self.routes[i] = Some(r),
            None => self.routes.push(Some(r)),
        }
        Ok(None)
    }

    fn remove_route(&mut self, r: &IpRoute) -> Result<IpRoute, RouteError> {
        for slot in &mut self.routes {
            if let Some(e) = slot {
                if r.matches(e) {
                    let old = *e;
                    *slot = None;
                    return Ok(old);
                }
            }
        }
        Err(RouteError::NotFound)
    }

    fn lookup(&self, a: u32) -> Option<(u32, u32)> {
        let mut best: Option<&IpRoute> = None;
        for r in self.routes.iter().flatten() {
            if r.contains(a) && best.is_none_or(|b| r.mask & b.mask == b.mask) {
                best = Some(r);
            }
        }
        best.map(|r| (r.gw, r.port as u32))
    }

    fn dump(&self) -> String {
        let mut s = String::new();
        for r in self.routes.iter().flatten() {
            s.push_str(&r.unparse(true));
            s.push('\n');
        }
        s
    }

    fn flush(&mut self) {
        self.routes.clear();
    }
}

/// A list of routes kept sorted so that every route comes before each
/// route that contains it (`SortedIPLookup`): the first matching route is
/// the most specific. After each change the list is re-sorted as Click
/// does: routes no other route depends on, in list order, each followed
/// (breadth first) by the routes it alone was holding back.
#[derive(Default)]
pub struct SortedTable {
    routes: Vec<IpRoute>,
}

/// True when `outer`'s prefix contains `inner`'s.
fn route_contains(outer: &IpRoute, inner: &IpRoute) -> bool {
    inner.mask & outer.mask == outer.mask && inner.addr & outer.mask == outer.addr
}

impl SortedTable {
    fn sort(&mut self) {
        let t = &self.routes;
        let n = t.len();
        // dep[j]: how many other routes j contains (they must come first).
        let mut dep: Vec<i64> = (0..n)
            .map(|j| {
                (0..n)
                    .filter(|&i| i != j && route_contains(&t[j], &t[i]))
                    .count() as i64
            })
            .collect();
        let mut order = Vec::with_capacity(n);
        let (mut first, mut q) = (0, 0);
        while order.len() < n {
            while first < n && dep[first] != 0 {
                first += 1;
            }
            if first == n {
                break;
            }
            order.push(first);
            while q < order.len() {
                let which = order[q];
                dep[which] = -1;
                for i in 0..n {
                    if dep[i] > 0 && route_contains(&t[i], &t[which]) {
                        dep[i] -= 1;
                        if dep[i] == 0 {
                            order.push(i);
                        }
                    }
                }
                q += 1;
            }
        }
        self.routes = order.iter().map(|&i| t[i]).collect();
    }
}

impl RouteTable for SortedTable {
    fn add_route(&mut self, r: IpRoute, set: bool) -> Result<Option<IpRoute>, RouteError> {
        let old = match self
            .routes
            .iter_mut()
            .find(|e| e.addr == r.addr && e.mask == r.mask)
        {
            Some(e) if !set => return Err(RouteError::Exists(*e)),
            Some(e) => Some(std::mem::replace(e, r)),
            None => {
                self.routes.push(r);
                None
            }
        };
        self.sort();
        Ok(old)
    }

    fn remove_route(&mut self, r: &IpRoute) -> Result<IpRoute, RouteError> {
        let i = self
            .routes
            .iter()
            .position(|e| r.matches(e))
            .ok_or(RouteError::NotFound)?;
        let old = self.routes.remove(i);
        self.sort();
        Ok(old)
    }

    fn lookup(&self, a: u32) -> Option<(u32, u32)> {
        self.routes
            .iter()
            .find(|r| r.contains(a))
            .map(|r| (r.gw, r.port as u32))
    }

    fn dump(&self) -> String {
        let mut s = String::new();
        for r in &self.routes {
            s.push_str(&r.unparse(true));
            s.push('\n');
        }
        s
    }

    fn flush(&mut self) {
        self.routes.clear();
    }
}

// ---------------------------------------------------------------------
// The element side.

/// Route-table element state shared by the lookup elements.
pub struct RouteCore<T: RouteTable> {
    /// The table.
    pub table: T,
    noutputs: usize,
    label: &'static str,
    complaints: u32,
    no_route_text: Option<fn(u32) -> String>,
    /// Packets dropped for want of a route.
    no_route: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cmd {
    Add,
    Set,
    Remove,
}

/// The file named by a `ROUTES FILE` argument.
fn routes_file_arg(arg: &str) -> Option<&str> {
    let rest = arg.strip_prefix("ROUTES")?;
    rest.starts_with(char::is_whitespace)
        .then(|| rest.trim())
        .filter(|f| !f.is_empty())
}

/// Removes the comments of a `ctrl` text as Click's configuration parser
/// does: leading and trailing space goes, and each `/* */` or `//` comment,
/// together with the space around it (line breaks included), becomes one
/// space, so a comment joins the lines on either side. `#` is not a
/// comment. Quoted text is kept as is.
fn uncomment(text: &str) -> String {
    let b = text.as_bytes();
    let n = b.len();
    // The end of the comment starting at `i` (a `/` followed by `/` or `*`).
    let comment_end = |i: usize| -> usize {
        if b[i + 1] == b'/' {
            b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(n, |p| i + p + 1)
        } else {
            b[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(n, |p| i + 2 + p + 2)
        }
    };
    let is_comment = |i: usize| b[i] == b'/' && i + 1 < n && (b[i + 1] == b'/' || b[i + 1] == b'*');
    let mut i = 0;
    while i < n {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if is_comment(i) {
            i = comment_end(i);
        } else {
            break;
        }
    }
    let (mut left, mut right) = (i, i);
    let mut closed = false;
    let mut out: Vec<u8> = Vec::new();
    while i < n {
        if b[i].is_ascii_whitespace() {
            i += 1;
        } else if is_comment(i) {
            i = comment_end(i);
            closed = true;
        } else {
            if closed {
                out.extend_from_slice(&b[left..right]);
                out.push(b' ');
                left = i;
                closed = false;
            }
            match b[i] {
                q @ (b'\'' | b'"') => {
                    let mut j = i + 1;
                    while j < n && b[j] != q {
                        j += if q == b'"' && b[j] == b'\\' { 2 } else { 1 };
                    }
                    i = (j + 1).min(n);
                }
                _ => i += 1,
            }
            right = i;
        }
    }
    out.extend_from_slice(&b[left..right.max(left)]);
    String::from_utf8_lossy(&out).into_owned()
}

/// The usage text route commands print on a syntax error.
const ROUTE_SYNTAX: &str = "'ADDR/MASK [GATEWAY] OUTPUT'";

/// The prefixes of a route table as they stood when another element asked
/// for them ([`RouteCore::prefixes`]): what `Socket`'s `ALLOW` and `DENY`
/// look addresses up in (Click's `IPRouteTable::lookup_route`, which only
/// asks whether some route covers the address).
#[derive(Debug, Default)]
pub struct RoutePrefixes {
    /// `(addr, mask)`, host order, address masked.
    pub prefixes: Vec<(u32, u32)>,
}

impl RoutePrefixes {
    /// True if some prefix covers `a`.
    pub fn covers(&self, a: [u8; 4]) -> bool {
        let a = u32::from_be_bytes(a);
        self.prefixes.iter().any(|&(addr, mask)| a & mask == addr)
    }
}

impl<T: RouteTable> RouteCore<T> {
    /// The table's prefixes now, for the elements that name this one
    /// (`Socket`'s `ALLOW`/`DENY`; [`crate::Element::shared`]).
    pub fn prefixes(&self) -> crate::Shared {
        let prefixes = self
            .table
            .dump()
            .lines()
            .filter_map(|l| parse_prefix(l.split_whitespace().next()?, true))
            .map(|(a, m)| (a & m, m))
            .collect();
        std::sync::Arc::new(RoutePrefixes { prefixes })
    }

    /// Builds the table from the element's arguments, one route each.
    /// `label` prefixes "no route" messages.
    pub fn configure(
        ctx: &ConfigCtx<'_>,
        table: T,
        label: &'static str,
    ) -> Result<Self, ConfigError> {
        let mut core = RouteCore {
            table,
            noutputs: ctx.noutputs,
            label,
            complaints: 0,
            no_route_text: None,
            no_route: 0,
        };
        // One argument per route; split directly (tables may hold hundreds
        // of thousands of routes). `ROUTES FILE` arguments name files of
        // routes, one per line.
        let args = pronto_lang::args::split_args(ctx.config);
        let mut eexist = 0;
        for (i, arg) in args.iter().enumerate() {
            if let Some(file) = routes_file_arg(arg) {
                let file = pronto_lang::args::unquote(file);
                let path = ctx.path(&file);
                let text = crate::files::read_to_string(&path)
                    .map_err(|e| ConfigError::new(format!("ROUTES: {}: {e}", path.display())))?;
                for (n, line) in text.lines().enumerate() {
                    let line = line.split_once('#').map_or(line, |(a, _)| a).trim();
                    let line = line.strip_suffix(',').unwrap_or(line).trim_end();
                    if line.is_empty() {
                        continue;
                    }
                    core.add_configured(line, &mut eexist).map_err(|m| {
                        ConfigError::new(format!("ROUTES {file}:{}: route {m}", n + 1))
                    })?;
                }
                continue;
            }
            core.add_configured(arg, &mut eexist)
                .map_err(|m| ConfigError::new(format!("argument {} {m}", i + 1)))?;
        }
        if eexist > 0 {
            eprintln!(
                "{}: warning: {} {} replaced by later versions",
                ctx.name,
                eexist,
                if eexist > 1 { "routes" } else { "route" }
            );
        }
        Ok(core)
    }

    /// Replaces the text after `LABEL: ` in "no route" messages.
    pub fn set_no_route_text(&mut self, f: fn(u32) -> String) {
        self.no_route_text = Some(f);
    }

    /// Adds one configured route (the first of two for one prefix stays).
    fn add_configured(&mut self, text: &str, eexist: &mut u32) -> Result<(), String> {
        let r = parse_route(text, false).ok_or_else(|| format!("should be {ROUTE_SYNTAX}"))?;
        if r.port < 0 || r.port as usize >= self.noutputs {
            return Err("bad OUTPUT".into());
        }
        match self.table.add_route(r, false) {
            Ok(_) | Err(RouteError::NotFound) => Ok(()),
            Err(RouteError::Exists(_)) => {
                *eexist += 1;
                Ok(())
            }
            Err(RouteError::Other(m)) => Err(format!("rejected: {m}")),
        }
    }

    /// Reports the packets dropped for want of a route (`no_route`).
    pub fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_route", self.no_route);
    }

    /// Routes every packet by its destination annotation. A batch of a
    /// few packets (one at a time where the runtime keeps Click's packet
    /// order) is looked up packet by packet: the batch walk's arrays cost
    /// more to set up than its overlapped reads save there.
    #[inline]
    pub fn push(&mut self, batch: &mut Batch, out: &mut Out<'_>) {
        let n = batch.len();
        if n < crate::util::BATCH_WALK_MIN {
            let table = &self.table;
            let mut miss = Miss {
                no_route: &mut self.no_route,
                complaints: &mut self.complaints,
                label: self.label,
                text: self.no_route_text,
            };
            push_each(batch, out, |p, _| {
                let a = u32::from_be_bytes(p.dst_ip_anno());
                route_to(p, a, table.lookup(a), &mut miss)
            });
            return;
        }
        let mut addrs = [0u32; BATCH_MAX];
        let mut hops = [None; BATCH_MAX];
        for (a, p) in addrs.iter_mut().zip(batch.iter()) {
            *a = u32::from_be_bytes(p.dst_ip_anno());
        }
        self.table.lookup_many(&addrs[..n], &mut hops[..n]);
        let mut miss = Miss {
            no_route: &mut self.no_route,
            complaints: &mut self.complaints,
            label: self.label,
            text: self.no_route_text,
        };
        let mut i = 0;
        push_each(batch, out, |p, _| {
            let (a, hop) = (addrs[i], hops[i]);
            i += 1;
            route_to(p, a, hop, &mut miss)
        });
    }

    fn run_command(
        &mut self,
        cmd: Cmd,
        s: &str,
    ) -> Result<(Cmd, IpRoute, Option<IpRoute>), String> {
        let r = parse_route(s, cmd == Cmd::Remove).ok_or_else(|| {
            if cmd == Cmd::Remove {
                "expected 'ADDR/MASK [GATEWAY OUTPUT]'".to_string()
            } else {
                "expected 'ADDR/MASK [GATEWAY] OUTPUT'".to_string()
            }
        })?;
        let min = if cmd == Cmd::Remove { -1 } else { 0 };
        if r.port < min || (r.port >= 0 && r.port as usize >= self.noutputs) {
            return Err("bad OUTPUT".into());
        }
        let res = match cmd {
            Cmd::Add => self.table.add_route(r, false),
            Cmd::Set => self.table.add_route(r, true),
            Cmd::Remove => self.table.remove_route(&r).map(Some),
        };
        match res {
            Ok(old) => Ok((cmd, r, old)),
            Err(RouteError::Exists(old)) => Err(format!(
                "conflict with existing route '{}'",
                old.unparse(false)
            )),
            Err(RouteError::NotFound) => Err(format!("route '{}' not found", r.unparse(false))),
            Err(RouteError::Other(m)) => Err(m),
        }
    }

    fn ctrl(&mut self, text: &str) -> Result<(), String> {
        let mut done: Vec<(Cmd, IpRoute, Option<IpRoute>)> = Vec::new();
        let mut result = Ok(());
        let text = uncomment(text);
        for line in text.split('\n') {
            let line = line.trim();
            let (first, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let cmd = match first {
                "" => continue,
                "add" => Cmd::Add,
                "set" => Cmd::Set,
                "remove" => Cmd::Remove,
                other => {
                    result = Err(format!("bad command '{other}'"));
                    break;
                }
            };
            match self.run_command(cmd, rest) {
                Ok(x) => done.push(x),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if result.is_err() {
            // Undo in reverse order.
            while let Some((cmd, r, old)) = done.pop() {
                match (cmd, old) {
                    (Cmd::Remove, Some(o)) => {
                        let _ = self.table.add_route(o, false);
                    }
                    (_, Some(o)) => {
                        let _ = self.table.add_route(o, true);
                    }
                    (_, None) => {
                        let _ = self.table.remove_route(&IpRoute { port: -1, ..r });
                    }
                }
            }
        }
        result
    }

    /// Reads `table` or `lookup ADDR`.
    pub fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if name == "table" {
            return Ok(self.table.dump());
        }
        if let Some(arg) = name.strip_prefix("lookup") {
            if arg.is_empty() || arg.starts_with(char::is_whitespace) {
                let a = parse_addr(arg.trim(), false)
                    .ok_or_else(|| HandlerError::BadValue("expected IP address".into()))?;
                return Ok(match self.table.lookup(a) {
                    Some((gw, port)) if gw != 0 => format!("{port} {}", ip_str(gw)),
                    Some((_, port)) => port.to_string(),
                    None => "-1".into(),
                });
            }
        }
        Err(HandlerError::NoSuchHandler(name.into()))
    }

    /// Writes `add`, `set`, `remove`, `ctrl` or `flush`.
    pub fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let r = match name {
            "add" => self.run_command(Cmd::Add, value).map(|_| ()),
            "set" => self.run_command(Cmd::Set, value).map(|_| ()),
            "remove" => self.run_command(Cmd::Remove, value).map(|_| ()),
            "ctrl" => self.ctrl(value),
            "flush" => {
                self.table.flush();
                Ok(())
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        };
        r.map_err(HandlerError::BadValue)
    }
}

/// What [`route_to`] updates for a packet with no route.
struct Miss<'a> {
    no_route: &'a mut u64,
    complaints: &'a mut u32,
    label: &'static str,
    text: Option<fn(u32) -> String>,
}

/// The output for a packet to `a` whose lookup gave `hop`: the gateway
/// (when there is one) set as its destination annotation; no route is
/// counted (and the first five complained about) and dropped.
#[inline(always)]
fn route_to(p: &mut Packet, a: u32, hop: Option<(u32, u32)>, miss: &mut Miss<'_>) -> Option<usize> {
    match hop {
        Some((gw, port)) => {
            if gw != 0 {
                p.set_dst_ip_anno(gw.to_be_bytes());
            }
            Some(port as usize)
        }
        None => {
            *miss.no_route += 1;
            if !miss.label.is_empty() && *miss.complaints < 5 {
                *miss.complaints += 1;
                match miss.text {
                    Some(f) => eprintln!("{}: {}", miss.label, f(a)),
                    None => eprintln!("{}: no route for {}", miss.label, ip_str(a)),
                }
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A router's table element routes the same whether a batch is walked
    /// level by level (eight packets or more) or its packets are looked up
    /// one at a time (fewer): the same outputs, the same gateways set as
    /// destination annotations, the same packets counted without a route.
    #[test]
    fn batch_walk_and_one_at_a_time_route_alike() {
        use crate::standard::test_support::{configure, drop_counters, pkt, push, push_one_by_one};
        use pronto_packet::Pool;
        const ROUTES: &str = "10.0.0.0/27 0, 10.0.0.0/24 1, 10.0.1.0/24 2, \
                              10.2.0.0/16 10.0.1.254 2, 172.16.0.0/12 10.0.0.254 1, 172.17.0.0/16 3";
        let pool = Pool::new(256).expect("pool");
        let dsts: Vec<[u8; 4]> = (0..40u8)
            .map(|i| match i % 5 {
                0 => [10, 0, 0, i],
                1 => [10, 0, 1, i],
                2 => [10, 2, i, 1],
                3 => [172, 16 + i % 3, 0, 1],
                _ => [8, 8, i, 8], // no route
            })
            .collect();
        let mk = |a: [u8; 4]| {
            let mut p = pkt(&pool, &[0]);
            p.set_dst_ip_anno(a);
            p
        };
        let annos = |o: &Vec<Vec<Packet>>| -> Vec<Vec<[u8; 4]>> {
            o.iter()
                .map(|v| v.iter().map(|p| p.dst_ip_anno()).collect())
                .collect()
        };
        for class in [
            crate::ip::radixiplookup::RadixIPLookup::configure,
            crate::ip::directiplookup::DirectIPLookup::configure,
        ] {
            let mut whole = configure(&[], class, ROUTES, 1, 4).expect("ok");
            let got = push(
                whole.as_mut(),
                &pool,
                dsts.iter().map(|&a| mk(a)).collect(),
                4,
            );
            let mut each = configure(&[], class, ROUTES, 1, 4).expect("ok");
            let one = push_one_by_one(
                each.as_mut(),
                &pool,
                dsts.iter().map(|&a| mk(a)).collect(),
                4,
            );
            assert_eq!(annos(&got), annos(&one));
            assert_eq!(got.iter().map(Vec::len).collect::<Vec<_>>(), [7, 7, 16, 2]);
            assert_eq!(annos(&got)[2][..2], [[10, 0, 1, 1], [10, 0, 1, 254]]);
            assert_eq!(annos(&got)[1][1], [10, 0, 0, 254], "172.16/12's gateway");
            assert_eq!(drop_counters(whole.as_ref()), vec![("no_route", 8)]);
            assert_eq!(drop_counters(each.as_ref()), vec![("no_route", 8)]);
        }
    }

    /// The batched lookups agree with one-at-a-time lookups on a random
    /// table (prefixes of every length, so second levels are exercised).
    #[test]
    fn batched_lookups_equal_single_lookups() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut dir = Dir248::new();
        let mut trie = LpmTrie::new(16);
        let mut lin = LinearTable::default();
        for _ in 0..3000 {
            let v = next();
            let len = (v % 33) as u32;
            let mask = mask_of(len);
            let r = IpRoute {
                addr: (v >> 32) as u32 & mask,
                mask,
                gw: (v >> 8) as u32 & 0xff,
                port: (v % 4) as i32,
            };
            let _ = dir.add_route(r, true);
            let _ = trie.add_route(r, true);
            let _ = lin.add_route(r, true);
        }
        let addrs: Vec<u32> = (0..BATCH_MAX).map(|_| (next() >> 16) as u32).collect();
        for t in [&dir as &dyn RouteTable, &trie, &lin] {
            let mut out = vec![None; BATCH_MAX];
            t.lookup_many(&addrs, &mut out);
            for (a, o) in addrs.iter().zip(&out) {
                assert_eq!(*o, t.lookup(*a), "{}", ip_str(*a));
                assert_eq!(*o, lin.lookup(*a), "{}", ip_str(*a));
            }
        }
    }

    fn ip(s: &str) -> u32 {
        parse_addr(s, false).expect("address")
    }

    fn route(s: &str) -> IpRoute {
        parse_route(s, false).expect("route")
    }

    #[test]
    fn ctrl_comments_are_c_comments_that_join_lines() {
        assert_eq!(uncomment("  a   b  "), "a   b");
        assert_eq!(uncomment("  a /* Comment */       b  "), "a b");
        assert_eq!(uncomment("add 1 /* c */\nadd 2"), "add 1 add 2");
        assert_eq!(uncomment("add 1 // c\nadd 2"), "add 1 add 2");
        assert_eq!(uncomment("add 1 // c\n\n"), "add 1");
        assert_eq!(uncomment("/* x */ add 1\nadd 2 # c"), "add 1\nadd 2 # c");
        assert_eq!(uncomment("a \"/* q */\" b"), "a \"/* q */\" b");
        assert_eq!(uncomment("é /* c */ ü"), "é ü");
    }

    #[test]
    fn direct_table_lists_routes_in_prefix_hash_order() {
        // Buckets as DirectIPLookup's hash puts them.
        assert_eq!(prefix_hash(0, 0), 0);
        assert!(prefix_hash(ip("192.168.1.7"), 32) < prefix_hash(ip("10.0.0.0"), 8));
        let mut d = Dir248::new();
        for r in [
            "10.0.0.0/8 0",
            "10.1.0.0/16 10.0.0.1 1",
            "10.1.2.0/24 2",
            "10.1.2.128/25 10.0.0.2 0",
            "192.168.0.0/16 1",
            "192.168.1.7/32 10.0.0.3 2",
            "0.0.0.0/0 10.0.0.254 1",
        ] {
            d.add_route(route(r), false).expect("added");
        }
        assert_eq!(
            d.dump(),
            "0.0.0.0/0\t\t10.0.0.254\t1\n\
             192.168.1.7/32\t\t10.0.0.3\t2\n\
             10.0.0.0/8\t\t-\t\t0\n\
             10.1.0.0/16\t\t10.0.0.1\t1\n\
             192.168.0.0/16\t\t-\t\t1\n\
             10.1.2.0/24\t\t-\t\t2\n\
             10.1.2.128/25\t\t10.0.0.2\t0\n"
        );
    }

    #[test]
    fn route_syntax() {
        assert_eq!(
            parse_route("10.0.0.1/24 10.0.0.254 2", false),
            Some(IpRoute {
                addr: ip("10.0.0.0"),
                mask: 0xffff_ff00,
                gw: ip("10.0.0.254"),
                port: 2
            })
        );
        assert_eq!(
            parse_route("0/0 - 1", false).map(|r| (r.addr, r.mask, r.gw, r.port)),
            Some((0, 0, 0, 1))
        );
        assert_eq!(
            parse_route("18.26.4/24 1", false).map(|r| r.addr),
            Some(ip("18.26.4.0"))
        );
        assert_eq!(
            parse_route("1.2.3.4 0", false).map(|r| r.mask),
            Some(u32::MAX)
        );
        assert_eq!(parse_route("1.2.3.0/24", false), None);
        assert_eq!(parse_route("1.2.3.0/24", true).map(|r| r.port), Some(-1));
        assert_eq!(parse_route("1.2.3.0/24 1 2", false), None);
        assert_eq!(parse_route("1.2.3.0/33 1", false), None);
    }

    #[test]
    fn unparse_pads_like_a_table() {
        assert_eq!(
            route("10.0.0.0/24 1").unparse(true),
            "10.0.0.0/24\t\t-\t\t1"
        );
        assert_eq!(
            route("192.168.128.0/17 10.0.0.253 1").unparse(true),
            "192.168.128.0/17\t10.0.0.253\t1"
        );
        assert_eq!(
            route("10.0.0.0/255.0.255.0 3").unparse(false),
            "10.0.0.0/255.0.255.0 - 3"
        );
    }

    fn check_lpm(t: &mut dyn RouteTable) {
        for r in [
            "10.0.0.0/27 0",
            "10.0.0.0/24 1",
            "10.0.1.0/24 2",
            "10.2.0.0/16 10.0.1.254 2",
            "172.16.0.0/12 10.0.0.254 1",
            "172.17.0.0/16 3",
            "1.2.3.4/32 10.0.0.9 1",
            "1.2.3.0/24 3",
            "0.0.0.0/0 10.0.1.1 2",
        ] {
            t.add_route(route(r), false).expect("added");
        }
        assert_eq!(t.lookup(ip("10.0.0.5")), Some((0, 0)));
        assert_eq!(t.lookup(ip("10.0.0.32")), Some((0, 1)));
        assert_eq!(t.lookup(ip("10.2.3.4")), Some((ip("10.0.1.254"), 2)));
        assert_eq!(t.lookup(ip("172.17.9.9")), Some((0, 3)));
        assert_eq!(t.lookup(ip("172.18.9.9")), Some((ip("10.0.0.254"), 1)));
        assert_eq!(t.lookup(ip("1.2.3.4")), Some((ip("10.0.0.9"), 1)));
        assert_eq!(t.lookup(ip("1.2.3.5")), Some((0, 3)));
        assert_eq!(t.lookup(ip("8.8.8.8")), Some((ip("10.0.1.1"), 2)));
        // A duplicate prefix is refused; set replaces.
        assert!(matches!(
            t.add_route(route("10.0.0.0/24 2"), false),
            Err(RouteError::Exists(_))
        ));
        assert_eq!(t.lookup(ip("10.0.0.32")), Some((0, 1)));
        t.add_route(route("10.0.0.0/24 2"), true).expect("set");
        assert_eq!(t.lookup(ip("10.0.0.32")), Some((0, 2)));
        assert_eq!(t.lookup(ip("10.0.0.5")), Some((0, 0)));
        // Removing exposes the covering route.
        t.remove_route(&parse_route("1.2.3.4/32", true).expect("r"))
            .expect("removed");
        assert_eq!(t.lookup(ip("1.2.3.4")), Some((0, 3)));
        t.remove_route(&parse_route("0/0", true).expect("r"))
            .expect("removed");
        assert_eq!(t.lookup(ip("8.8.8.8")), None);
        assert_eq!(
            t.remove_route(&parse_route("0/0", true).expect("r")),
            Err(RouteError::NotFound)
        );
        // A wrong port in the request does not match.
        assert_eq!(
            t.remove_route(&route("1.2.3.0/24 1")),
            Err(RouteError::NotFound)
        );
        // Adding a shorter prefix after longer ones keeps the longer ones.
        t.add_route(route("10.0.0.0/8 3"), false).expect("added");
        assert_eq!(t.lookup(ip("10.0.0.5")), Some((0, 0)));
        assert_eq!(t.lookup(ip("10.9.0.5")), Some((0, 3)));
        t.flush();
        assert_eq!(t.lookup(ip("10.0.0.5")), None);
    }

    #[test]
    fn trie_16_8_8() {
        check_lpm(&mut LpmTrie::new(16));
    }

    #[test]
    fn trie_24_8() {
        check_lpm(&mut LpmTrie::new(24));
    }

    #[test]
    fn dir_24_8() {
        check_lpm(&mut Dir248::new());
    }

    #[test]
    fn linear() {
        check_lpm(&mut LinearTable::default());
    }

    #[test]
    fn trie_matches_linear_on_random_routes() {
        let mut x: u64 = 0x1234_5678_9abc_def1;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut t = LpmTrie::new(16);
        let mut d = Dir248::new();
        let mut l = LinearTable::default();
        let default = route("0.0.0.0/0 6");
        for x in [&mut t as &mut dyn RouteTable, &mut d, &mut l] {
            x.add_route(default, false).expect("added");
        }
        for i in 0..3000 {
            let v = next();
            // (0/0 is painted once below: repainting 2^24 entries at each
            // change would make this test slow in debug builds.)
            let len = [8, 8, 12, 16, 17, 20, 24, 25, 28, 32][(v % 10) as usize];
            let a = ((v >> 8) as u32 & 0x0f0f_ffff) & mask_of(len);
            let r = IpRoute {
                addr: a,
                mask: mask_of(len),
                gw: 0,
                port: i % 7,
            };
            if (v >> 60) == 0 {
                let q = IpRoute { port: -1, ..r };
                let lr = l.remove_route(&q).is_ok();
                assert_eq!(t.remove_route(&q).is_ok(), lr);
                assert_eq!(d.remove_route(&q).is_ok(), lr);
            } else {
                assert_eq!(t.add_route(r, true).is_ok(), l.add_route(r, true).is_ok());
                assert!(d.add_route(r, true).is_ok());
            }
        }
        for _ in 0..20000 {
            let a = next() as u32 & 0x0f0f_ffff;
            assert_eq!(t.lookup(a), l.lookup(a), "{}", ip_str(a));
            assert_eq!(d.lookup(a), l.lookup(a), "{}", ip_str(a));
        }
    }
}

#[cfg(test)]
mod perf {
    use super::*;

    /// Builds a 170,000-route table and times adds and lookups (run with
    /// `--release --nocapture` to see the numbers).
    #[test]
    fn big_table() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (nroutes, n) = if cfg!(debug_assertions) {
            (20_000, 200_000u32)
        } else {
            (170_000, 10_000_000u32)
        };
        let routes: Vec<IpRoute> = (0..nroutes)
            .map(|_| {
                let v = next();
                let len = [8u32, 16, 19, 20, 22, 23, 24, 24, 24, 24, 24, 28, 32][(v % 13) as usize];
                IpRoute {
                    addr: (v >> 16) as u32 & mask_of(len),
                    mask: mask_of(len),
                    gw: 0,
                    port: ((v >> 60) % 4) as i32,
                }
            })
            .collect();
        for bits in [16, 24] {
            let t = std::time::Instant::now();
            let mut trie = LpmTrie::new(bits);
            for r in &routes {
                let _ = trie.add_route(*r, false);
            }
            let built = t.elapsed();
            let t = std::time::Instant::now();
            let mut acc = 0u64;
            let mut a = 0x1234_5678u32;
            for _ in 0..n {
                a = a.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                acc += trie.lookup(a).map_or(0, |(_, p)| p as u64 + 1);
            }
            let looked = t.elapsed();
            eprintln!(
                "root {bits}: {} routes built in {built:?}; {:.1} M lookups/s (acc {acc})",
                trie.len(),
                n as f64 / looked.as_secs_f64() / 1e6
            );
        }
    }
}
