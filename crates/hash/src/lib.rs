//! Keyed hashing for tables whose keys a packet's sender chooses.
//!
//! A table keyed by fields an attacker picks (five-tuples, addresses, MAC
//! addresses) and hashed with a fixed function can be flooded: the
//! attacker computes, offline, many keys that land in one bucket or one
//! probe run, and every lookup then walks all of them (hash flooding).
//! pronto's flow tables, NAT tables, MAC table, ARP table and route
//! tables therefore hash with a secret key:
//!
//! * one seed per process, drawn from the operating system's random
//!   source (through std's `RandomState`, which reads it once per thread)
//!   the first time a table is made;
//! * one further key per table ([`keyed`] draws a fresh one each call), so
//!   two tables in one process order the same keys differently too.
//!
//! The hash function is foldhash's (a folded 64×64→128-bit multiply with
//! the secret mixed into both operands): a few cycles for the small fixed
//! keys of packet tables, where SipHash costs several times more. It
//! defeats precomputed collisions; it is not a cryptographic PRF, so an
//! attacker able to measure the lookup cost of chosen keys very precisely
//! could in principle learn about the key (see docs/threat-model.md).
//! Tables are bounded in size as well, so the damage of any collisions is
//! bounded too.
//!
//! Click-visible orders (a rewriter's `table` handler, `HashSwitch`'s
//! choice of output, `RoundRobinIPMapper`) keep Click's own functions;
//! only the tables' internal hashing is keyed.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hash};
use std::sync::OnceLock;

use foldhash::fast::SeedableRandomState;
use foldhash::SharedSeed;

/// The hasher state of a keyed table (per-table key plus the process's
/// seed).
pub type KeyedState = SeedableRandomState;

/// A `HashMap` hashed with a [`keyed`] state.
pub type KeyedMap<K, V> = HashMap<K, V, KeyedState>;

/// A `HashSet` hashed with a [`keyed`] state.
pub type KeyedSet<K> = HashSet<K, KeyedState>;

/// A random 64-bit value from the operating system's random source:
/// every `RandomState` of std carries keys drawn from it (incremented
/// per state), so hashing a constant with a fresh one gives a fresh,
/// unpredictable value.
fn os_random() -> u64 {
    std::collections::hash_map::RandomState::new().hash_one(0x7072_6f6e_746f_u64)
}

/// The process's secret seed, drawn once.
fn shared_seed() -> &'static SharedSeed {
    static SEED: OnceLock<SharedSeed> = OnceLock::new();
    SEED.get_or_init(|| SharedSeed::from_u64(os_random()))
}

/// A hasher state for one table: the process's seed and a fresh key.
pub fn keyed() -> KeyedState {
    SeedableRandomState::with_seed(os_random(), shared_seed())
}

/// A new, empty keyed map.
pub fn map<K, V>() -> KeyedMap<K, V> {
    HashMap::with_hasher(keyed())
}

/// A new keyed map with room for `n` entries.
pub fn map_with_capacity<K, V>(n: usize) -> KeyedMap<K, V> {
    HashMap::with_capacity_and_hasher(n, keyed())
}

/// A new, empty keyed set.
pub fn set<K>() -> KeyedSet<K> {
    HashSet::with_hasher(keyed())
}

/// A keyed hash function of single values, for tables that place keys
/// themselves (open addressing, set-associative buckets).
#[derive(Clone, Debug)]
pub struct KeyedHasher {
    state: KeyedState,
}

impl Default for KeyedHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl KeyedHasher {
    /// A hasher with a fresh per-table key.
    pub fn new() -> Self {
        KeyedHasher { state: keyed() }
    }

    /// The keyed hash of `v`.
    #[inline]
    pub fn hash<T: Hash>(&self, v: T) -> u64 {
        self.state.hash_one(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_hash_the_same_key_differently() {
        let (a, b) = (KeyedHasher::new(), KeyedHasher::new());
        // A five-tuple-like key: the two tables disagree on it (and on
        // every one of a thousand keys, bar a 2^-64 chance each).
        let keys: Vec<(u32, u32, u16, u16, u8)> = (0..1000u32)
            .map(|i| (0x0a00_0001 + i, 0xc0a8_0001, 1024 + i as u16, 80, 6))
            .collect();
        let same = keys.iter().filter(|k| a.hash(*k) == b.hash(*k)).count();
        assert_eq!(same, 0);
        // Each table's hash is a function: the same key, the same value.
        assert!(keys.iter().all(|k| a.hash(k) == a.hash(k)));
        // Maps work as maps whatever their key.
        let mut m = map_with_capacity(16);
        for (i, k) in keys.iter().enumerate() {
            m.insert(*k, i);
        }
        assert!(keys.iter().enumerate().all(|(i, k)| m.get(k) == Some(&i)));
    }

    #[test]
    fn low_bits_of_sequential_keys_spread() {
        // Open-addressing tables use the low bits: 4096 sequential keys
        // over 4096 buckets leave no bucket with more than a handful.
        let h = KeyedHasher::new();
        let mut buckets = vec![0u32; 4096];
        for k in 0..4096u64 {
            buckets[(h.hash(k) & 4095) as usize] += 1;
        }
        let worst = buckets.iter().max().copied().unwrap_or(0);
        assert!(worst <= 12, "a bucket got {worst} of 4096 keys");
    }
}
