//! Preallocated state tables shared by the stateful elements: an
//! open-addressing index hashed with a per-table secret key (keys are
//! flows a packet's sender chooses; no allocation after construction), a
//! slab of entry slots, and a hashed timer wheel that refreshing an entry
//! never touches.

use pronto_hash::KeyedHasher;
use pronto_packet::table::HugeTable;

/// A key of an [`IndexTable`].
pub trait Key: Copy + Eq + Default + std::hash::Hash {}

impl Key for u64 {}

impl Key for u128 {}

const EMPTY: u32 = u32::MAX;

/// A slot of a [`SlotTable`]: a key together with whatever its owner
/// keeps next to it, and a way to mark the slot free.
pub trait TableSlot: Copy {
    /// The key type.
    type Key: Key;
    /// A free slot.
    fn free() -> Self;
    /// True for a free slot.
    fn is_free(&self) -> bool;
    /// The key of a slot in use.
    fn key(&self) -> Self::Key;
}

/// An open-addressing table of slots with linear probing and
/// backward-shift deletion (no tombstones), sized once for at most
/// `capacity` keys at a load factor of one half or less. Slot positions
/// stay valid until the next removal. [`IndexTable`] and [`FlowTable`]
/// are this table over their slot types.
pub struct SlotTable<S: TableSlot> {
    /// On huge pages once it is large (see `pronto_packet::table`): a
    /// million flows' slots read at random would otherwise miss the TLB
    /// on nearly every packet.
    slots: HugeTable<S>,
    mask: usize,
    len: usize,
    max: usize,
    /// The table's keyed hash (see `pronto_hash`): without the key no one
    /// can pick keys that share a probe run.
    hasher: KeyedHasher,
}

impl<S: TableSlot> SlotTable<S> {
    /// A table for up to `capacity` keys.
    pub fn new(capacity: usize) -> Self {
        let n = (capacity.max(8) * 2).next_power_of_two();
        SlotTable {
            slots: HugeTable::filled(n, S::free()).expect("memory for the state table"),
            mask: n - 1,
            len: 0,
            max: capacity.max(1),
            hasher: KeyedHasher::new(),
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn home(&self, k: &S::Key) -> usize {
        (self.hasher.hash(*k) as usize) & self.mask
    }

    /// Prefetches the first slot `k` probes, so that a pass over a whole
    /// batch issues its cache misses together, without waiting for any,
    /// before the packets are processed.
    #[inline]
    pub fn prefetch(&self, k: S::Key) {
        pronto_packet::cpu::prefetch(&self.slots[self.home(&k)]);
    }

    /// Where `k`'s probe run starts: for [`SlotTable::prefetch_at`] and
    /// [`SlotTable::find_from`], so that a batch that prefetches first
    /// hashes each key once.
    #[inline]
    pub fn home_of(&self, k: &S::Key) -> usize {
        self.home(k)
    }

    /// Prefetches the slot at `pos` (a [`SlotTable::home_of`]; see
    /// [`SlotTable::prefetch`]).
    #[inline]
    pub fn prefetch_at(&self, pos: usize) {
        pronto_packet::cpu::prefetch(&self.slots[pos & self.mask]);
    }

    /// The position of the slot holding `k`.
    #[inline]
    pub fn find(&self, k: S::Key) -> Option<usize> {
        self.find_from(k, self.home(&k))
    }

    /// The position of the slot holding `k`, whose probe run starts at
    /// `home` (its [`SlotTable::home_of`]).
    #[inline]
    pub fn find_from(&self, k: S::Key, home: usize) -> Option<usize> {
        let mut i = home & self.mask;
        loop {
            let s = &self.slots[i];
            if s.is_free() {
                return None;
            }
            if s.key() == k {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// The slot at `pos` (from [`SlotTable::find`]).
    #[inline]
    pub fn slot(&self, pos: usize) -> &S {
        &self.slots[pos]
    }

    /// The slot at `pos`, writable (its key must stay).
    #[inline]
    pub fn slot_mut(&mut self, pos: usize) -> &mut S {
        &mut self.slots[pos]
    }

    /// Stores `s` under its key (replacing an old slot); false when the
    /// table already holds its capacity of keys or `s` is a free slot.
    pub fn insert(&mut self, s: S) -> bool {
        if s.is_free() {
            return false;
        }
        let k = s.key();
        let mut i = self.home(&k);
        loop {
            let t = &mut self.slots[i];
            if t.is_free() {
                if self.len >= self.max {
                    return false;
                }
                *t = s;
                self.len += 1;
                return true;
            }
            if t.key() == k {
                *t = s;
                return true;
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Removes `k`, returning its slot.
    pub fn remove(&mut self, k: S::Key) -> Option<S> {
        let mut i = self.find(k)?;
        let v = self.slots[i];
        // Shift later members of the probe run back over the hole.
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let s = self.slots[j];
            if s.is_free() {
                break;
            }
            let h = self.home(&s.key());
            // Move the slot at j into the hole at i unless its home lies
            // cyclically in (i, j].
            let in_between = if i <= j {
                i < h && h <= j
            } else {
                i < h || h <= j
            };
            if !in_between {
                self.slots[i] = s;
                i = j;
            }
        }
        self.slots[i] = S::free();
        self.len -= 1;
        Some(v)
    }

    /// Every slot in use, in table order.
    pub fn iter(&self) -> impl Iterator<Item = &S> + '_ {
        self.slots.iter().filter(|s| !s.is_free())
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.slots.fill(S::free());
        self.len = 0;
    }
}

/// A slot of an [`IndexTable`].
#[derive(Clone, Copy)]
pub struct IndexSlot<K> {
    key: K,
    val: u32,
}

impl<K: Key> TableSlot for IndexSlot<K> {
    type Key = K;
    #[inline]
    fn free() -> Self {
        IndexSlot {
            key: K::default(),
            val: EMPTY,
        }
    }
    #[inline]
    fn is_free(&self) -> bool {
        self.val == EMPTY
    }
    #[inline]
    fn key(&self) -> K {
        self.key
    }
}

/// A map from keys to `u32` values (not `u32::MAX`) over a [`SlotTable`].
pub struct IndexTable<K: Key>(SlotTable<IndexSlot<K>>);

impl<K: Key> IndexTable<K> {
    /// A table for up to `capacity` keys.
    pub fn new(capacity: usize) -> Self {
        IndexTable(SlotTable::new(capacity))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when no key is stored.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Prefetches the first slot `k` probes (see [`SlotTable::prefetch`]).
    #[inline]
    pub fn prefetch(&self, k: K) {
        self.0.prefetch(k)
    }

    /// The value stored for `k`.
    #[inline]
    pub fn get(&self, k: K) -> Option<u32> {
        self.0.find(k).map(|p| self.0.slot(p).val)
    }

    /// Stores `k -> v` (replacing an old value); false when the table
    /// already holds its capacity of keys or `v` is `u32::MAX`.
    pub fn insert(&mut self, k: K, v: u32) -> bool {
        self.0.insert(IndexSlot { key: k, val: v })
    }

    /// Removes `k`, returning its value.
    pub fn remove(&mut self, k: K) -> Option<u32> {
        self.0.remove(k).map(|s| s.val)
    }

    /// Every stored value, in table order.
    pub fn values(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().map(|s| s.val)
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.0.clear();
    }
}

/// One slot of a [`FlowTable`]: a flow key with what a packet of the flow
/// needs (the translated address and port, the expiry and its timeout
/// class), so that looking up an existing flow reads one slot. Slots are
/// 32 bytes, aligned so that none straddles two cache lines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct FlowSlot {
    /// The flow key.
    pub key: u64,
    /// When the flow expires unless refreshed (ns since the epoch).
    pub expiry: i64,
    /// The translated address.
    pub addr: u32,
    /// The owner's entry number; [`FlowTable`] marks free slots with
    /// `u32::MAX`.
    pub entry: u32,
    /// The translated port.
    pub port: u16,
    /// The timeout class.
    pub class: u8,
}

impl TableSlot for FlowSlot {
    type Key = u64;
    #[inline]
    fn free() -> Self {
        FlowSlot {
            entry: EMPTY,
            ..FlowSlot::default()
        }
    }
    #[inline]
    fn is_free(&self) -> bool {
        self.entry == EMPTY
    }
    #[inline]
    fn key(&self) -> u64 {
        self.key
    }
}

/// A table of [`FlowSlot`]s keyed by `u64` (see [`SlotTable`]).
pub type FlowTable = SlotTable<FlowSlot>;

/// Fixed-size storage for entries: slot numbers handed out from a free
/// stack, never reallocated.
pub struct Slab<T: Copy + Default> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T: Copy + Default> Slab<T> {
    /// Room for `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Slab {
            items: vec![T::default(); capacity],
            free: (0..capacity as u32).rev().collect(),
        }
    }

    /// Takes a free slot holding `v`; `None` when full.
    #[inline]
    pub fn alloc(&mut self, v: T) -> Option<u32> {
        let i = self.free.pop()?;
        self.items[i as usize] = v;
        Some(i)
    }

    /// Returns slot `i` to the free stack.
    #[inline]
    pub fn free(&mut self, i: u32) {
        self.free.push(i);
    }

    /// Entries in use.
    pub fn len(&self) -> usize {
        self.items.len() - self.free.len()
    }

    /// True when no entry is in use.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total slots.
    pub fn capacity(&self) -> usize {
        self.items.len()
    }

    /// Frees every slot.
    pub fn clear(&mut self) {
        self.free.clear();
        self.free.extend((0..self.items.len() as u32).rev());
    }

    /// Entry `i`.
    #[inline]
    pub fn get(&self, i: u32) -> &T {
        &self.items[i as usize]
    }

    /// Entry `i`, writable.
    #[inline]
    pub fn get_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
}

const NIL: u32 = u32::MAX;

#[derive(Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
    bucket: u32,
}

const UNLINKED: Link = Link {
    prev: NIL,
    next: NIL,
    bucket: NIL,
};

/// A hashed timer wheel over entry slots: bucket `k` holds the entries
/// due in time unit `k` (modulo the wheel size). Refreshing an entry
/// never touches the wheel (its owner only moves the expiry time later);
/// when its bucket comes due the owner either removes it or queues it again
/// at its new expiry. Entries are collected within one unit after they
/// expire; owners check expiry times themselves on lookup.
pub struct TimerWheel {
    links: Vec<Link>,
    heads: Vec<u32>,
    unit_ns: i64,
    mask: usize,
    /// The first unit not yet collected; `i64::MIN` before the first
    /// insertion.
    cursor: i64,
    len: usize,
}

impl TimerWheel {
    /// A wheel over `capacity` slots with `nbuckets` (rounded up to a power
    /// of two) units of `unit_ns` nanoseconds.
    pub fn new(capacity: usize, unit_ns: i64, nbuckets: usize) -> Self {
        let n = nbuckets.max(2).next_power_of_two();
        TimerWheel {
            links: vec![UNLINKED; capacity],
            heads: vec![NIL; n],
            unit_ns: unit_ns.max(1),
            mask: n - 1,
            cursor: i64::MIN,
            len: 0,
        }
    }

    /// Entries queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Queues slot `i` (not queued now) to come due at `expiry`; `now` is
    /// the current time.
    #[inline]
    pub fn insert(&mut self, i: u32, expiry: i64, now: i64) {
        if self.cursor == i64::MIN {
            self.cursor = now.div_euclid(self.unit_ns);
        }
        // Beyond one turn of the wheel: come back before the turn ends.
        let unit = expiry
            .div_euclid(self.unit_ns)
            .clamp(self.cursor, self.cursor + self.mask as i64);
        let b = (unit as usize) & self.mask;
        let h = self.heads[b];
        self.links[i as usize] = Link {
            prev: NIL,
            next: h,
            bucket: b as u32,
        };
        if h != NIL {
            self.links[h as usize].prev = i;
        }
        self.heads[b] = i;
        self.len += 1;
    }

    /// Takes slot `i` off the wheel (if it is queued).
    #[inline]
    pub fn unlink(&mut self, i: u32) {
        let l = self.links[i as usize];
        if l.bucket == NIL {
            return;
        }
        if l.prev == NIL {
            self.heads[l.bucket as usize] = l.next;
        } else {
            self.links[l.prev as usize].next = l.next;
        }
        if l.next != NIL {
            self.links[l.next as usize].prev = l.prev;
        }
        self.links[i as usize] = UNLINKED;
        self.len -= 1;
    }

    /// Takes off and returns a slot whose bucket is due at `now` (the
    /// caller checks its expiry and removes or requeues it); `None` when
    /// no bucket before the current unit holds anything.
    pub fn pop_due(&mut self, now: i64) -> Option<u32> {
        if self.cursor == i64::MIN {
            return None;
        }
        let unit = now.div_euclid(self.unit_ns);
        // After a long pause every bucket is due once.
        self.cursor = self.cursor.max(unit - self.mask as i64 - 1);
        while self.cursor < unit {
            let h = self.heads[(self.cursor as usize) & self.mask];
            if h != NIL {
                self.unlink(h);
                return Some(h);
            }
            self.cursor += 1;
        }
        None
    }

    /// When the next bucket comes due after `now`.
    pub fn next_due(&self, now: i64) -> i64 {
        (now.div_euclid(self.unit_ns) + 1) * self.unit_ns
    }

    /// Empties the wheel.
    pub fn clear(&mut self) {
        self.links.fill(UNLINKED);
        self.heads.fill(NIL);
        self.cursor = i64::MIN;
        self.len = 0;
    }
}

/// `ns` (nanoseconds since the epoch) as an ISO 8601 UTC time with
/// milliseconds, e.g. `2026-11-22T10:00:00.123Z`, when displayed.
pub struct Iso8601(pub i64);

impl std::fmt::Display for Iso8601 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = self.0.div_euclid(1_000_000);
        let secs = ms.div_euclid(1000);
        let milli = ms.rem_euclid(1000);
        let days = secs.div_euclid(86_400);
        let sod = secs.rem_euclid(86_400);
        // Days to civil date (proleptic Gregorian).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + (m <= 2) as i64;
        write!(
            f,
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
            sod / 3600,
            sod / 60 % 60,
            sod % 60
        )
    }
}

/// Formats `ns` (nanoseconds since the epoch) as [`Iso8601`] does.
pub fn iso8601(ns: i64) -> String {
    Iso8601(ns).to_string()
}

/// Formats a `u32` IPv4 address.
pub fn ip(a: u32) -> std::net::Ipv4Addr {
    std::net::Ipv4Addr::from(a)
}

/// Incremental checksum update (RFC 1624) for a 16-bit word change.
#[inline]
pub fn csum16(sum: u16, old: u16, new: u16) -> u16 {
    pronto_packet::wire::update_checksum16(sum, old, new)
}

/// Incremental checksum update for a 32-bit word change.
#[inline]
pub fn csum32(sum: u16, old: u32, new: u32) -> u16 {
    pronto_packet::wire::update_checksum32(sum, old.to_be_bytes(), new.to_be_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_table_insert_get_remove() {
        let mut t: IndexTable<u64> = IndexTable::new(1000);
        for k in 0..1000u64 {
            assert!(t.insert(k * 7919, k as u32));
        }
        assert!(!t.insert(123_456_789, 1), "capacity is enforced");
        for k in 0..1000u64 {
            assert_eq!(t.get(k * 7919), Some(k as u32));
        }
        for k in (0..1000u64).step_by(2) {
            assert_eq!(t.remove(k * 7919), Some(k as u32));
        }
        assert_eq!(t.len(), 500);
        for k in 0..1000u64 {
            let want = (k % 2 == 1).then_some(k as u32);
            assert_eq!(t.get(k * 7919), want, "key {k}");
        }
        assert_eq!(t.remove(5), None);
    }

    #[test]
    fn collisions_found_against_one_table_do_not_carry_over() {
        // An attacker who could compute one table's placement (as anyone
        // could with a fixed hash) finds 64 keys sharing a home slot...
        let a: IndexTable<u64> = IndexTable::new(1 << 12);
        let target = a.0.home(&0);
        let crafted: Vec<u64> = (0u64..)
            .filter(|k| a.0.home(k) == target)
            .take(64)
            .collect();
        // ...which another table, as in another process, spreads out: no
        // probe run the attacker can make long. (The number of distinct
        // homes varies with the process's seed: 36 to 64 over 600
        // processes, while the most keys sharing one home never went past
        // 4; the bound is twice that.)
        let b: IndexTable<u64> = IndexTable::new(1 << 12);
        let mut per_home = std::collections::HashMap::new();
        for k in &crafted {
            *per_home.entry(b.0.home(k)).or_insert(0usize) += 1;
        }
        let most = per_home.values().copied().max().unwrap_or(0);
        assert!(most <= 8, "{most} of the 64 crafted keys share one home");
    }

    #[test]
    fn index_table_survives_collisions() {
        // Few slots, many deletions in long probe runs.
        let mut t: IndexTable<u128> = IndexTable::new(8);
        for round in 0..50u128 {
            for k in 0..8u128 {
                assert!(t.insert(k + round * 8, k as u32));
            }
            for k in [3u128, 0, 7, 1, 6, 2, 5, 4] {
                assert_eq!(t.get(k + round * 8), Some(k as u32));
                assert_eq!(t.remove(k + round * 8), Some(k as u32));
            }
            assert!(t.is_empty());
        }
    }

    #[test]
    fn flow_table_slots_are_one_line_and_survive_removals() {
        assert_eq!(std::mem::size_of::<FlowSlot>(), 32);
        assert_eq!(std::mem::align_of::<FlowSlot>(), 32);
        let slot = |k: u64| FlowSlot {
            key: k,
            expiry: k as i64 * 3,
            addr: k as u32 ^ 0xdead_beef,
            entry: k as u32,
            port: k as u16,
            class: (k % 4) as u8,
        };
        let mut t = FlowTable::new(600);
        for k in 0..600u64 {
            assert!(t.insert(slot(k * 65_537)));
        }
        assert!(!t.insert(slot(1)), "capacity is enforced");
        assert!(!t.insert(FlowSlot {
            entry: EMPTY,
            ..slot(2)
        }));
        for k in (0..600u64).step_by(3) {
            assert_eq!(t.remove(k * 65_537), Some(slot(k * 65_537)));
        }
        assert_eq!(t.len(), 400);
        for k in 0..600u64 {
            let got = t.find(k * 65_537).map(|p| *t.slot(p));
            assert_eq!(got, (k % 3 != 0).then(|| slot(k * 65_537)), "key {k}");
        }
        let p = t.find(65_537).expect("present");
        t.slot_mut(p).expiry = 42;
        assert_eq!(t.slot(t.find(65_537).expect("present")).expiry, 42);
        assert_eq!(t.iter().count(), 400);
        assert_eq!(t.remove(3), None);
        // Dense collisions in a small table.
        let mut t = FlowTable::new(8);
        for round in 0..40u64 {
            for k in 0..8u64 {
                assert!(t.insert(slot(k + round * 8)));
            }
            for k in [5u64, 0, 7, 2, 6, 1, 3, 4] {
                assert_eq!(
                    t.remove(k + round * 8).map(|s| s.entry),
                    Some((k + round * 8) as u32)
                );
            }
            assert!(t.is_empty());
        }
    }

    #[test]
    fn timer_wheel_collects_due_entries() {
        const U: i64 = 100;
        let mut w = TimerWheel::new(8, U, 16);
        w.insert(1, 250, 0);
        w.insert(2, 120, 0);
        w.insert(3, 5_000, 0); // beyond one turn
        w.insert(4, 260, 0);
        // Due once its unit is over.
        assert_eq!(w.pop_due(199), None);
        assert_eq!(w.pop_due(200), Some(2));
        assert_eq!(w.pop_due(200), None);
        let mut due = vec![w.pop_due(300), w.pop_due(300)];
        due.sort();
        assert_eq!(due, [Some(1), Some(4)]);
        assert_eq!(w.pop_due(300), None);
        w.insert(5, 350, 300);
        w.unlink(5);
        assert_eq!(w.len(), 1);
        // The far entry comes back within one turn, to be requeued.
        assert_eq!(w.pop_due(1_800), Some(3));
        w.insert(3, 5_000, 1_800);
        assert_eq!(w.pop_due(3_000), None);
        assert_eq!(w.pop_due(5_100), Some(3));
        assert!(w.is_empty());
        assert_eq!(w.next_due(5_100), 5_200);
    }

    #[test]
    fn iso8601_formats_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            iso8601(1_795_341_600_123_000_000),
            "2026-11-22T10:00:00.123Z"
        );
        assert_eq!(iso8601(951_782_400_000_000_000), "2000-02-29T00:00:00.000Z");
    }
}
