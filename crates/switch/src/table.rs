//! The MAC table: static entries, learned entries with aging, a fixed
//! capacity reserved up front so that learning never allocates.

use std::sync::atomic::{AtomicU64, Ordering};

/// A MAC address packed into the low 48 bits of a `u64` (first byte
/// highest).
pub type Mac = u64;

/// Packs six bytes.
#[inline]
pub fn mac(b: &[u8; 6]) -> Mac {
    u64::from_be_bytes([0, 0, b[0], b[1], b[2], b[3], b[4], b[5]])
}

/// True for group (broadcast and multicast) addresses.
#[inline]
pub fn is_group(m: Mac) -> bool {
    m & (1 << 40) != 0
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    port: u16,
    seen: u32,
    fixed: bool,
}

/// MAC → port.
pub struct MacTable {
    /// Source addresses are whatever a port's process writes into its
    /// frames: hashed with a per-table secret key (`pronto_hash`), so no
    /// tenant can pick addresses that pile up in one place of the table
    /// every switching thread reads.
    map: pronto_hash::KeyedMap<Mac, Entry>,
    max: usize,
    aging_ms: u32,
    refresh_ms: u32,
    full: AtomicU64,
}

impl MacTable {
    /// A table of at most `max` entries whose learned entries expire after
    /// `aging_ms` milliseconds without traffic.
    pub fn new(max: usize, aging_ms: u32) -> MacTable {
        let map = pronto_hash::map_with_capacity(max);
        MacTable {
            map,
            max,
            aging_ms,
            // A learned entry is refreshed at most this often: the table
            // is shared by the switching threads, and a refresh takes its
            // write lock.
            refresh_ms: (aging_ms / 4).clamp(1, 1000),
            full: AtomicU64::new(0),
        }
    }

    /// Adds a static entry (replacing any entry for `m`); false if full.
    pub fn add_static(&mut self, m: Mac, port: u16) -> bool {
        if self.map.len() >= self.max && !self.map.contains_key(&m) {
            return false;
        }
        self.map.insert(
            m,
            Entry {
                port,
                seen: 0,
                fixed: true,
            },
        );
        true
    }

    /// Removes the static entry for `m` if it points at `port`; false if
    /// there is none (an entry another port holds, or a learned one, stays).
    pub fn remove_static(&mut self, m: Mac, port: u16) -> bool {
        match self.map.get(&m) {
            Some(e) if e.fixed && e.port == port => {
                self.map.remove(&m);
                true
            }
            _ => false,
        }
    }

    /// Records that `m` was seen on `port` at `now_ms`.
    #[inline]
    pub fn learn(&mut self, m: Mac, port: u16, now_ms: u32) {
        if let Some(e) = self.map.get_mut(&m) {
            if !e.fixed {
                e.port = port;
                e.seen = now_ms;
            }
        } else if self.map.len() < self.max {
            self.map.insert(
                m,
                Entry {
                    port,
                    seen: now_ms,
                    fixed: false,
                },
            );
        } else {
            self.full.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether `learn(m, port, now_ms)` would change anything worth a
    /// write: `m` is new (and there is room), moved, or due for a refresh.
    /// An address turned away because the table is full is counted here.
    #[inline]
    pub fn needs_learn(&self, m: Mac, port: u16, now_ms: u32) -> bool {
        match self.map.get(&m) {
            Some(e) => {
                !e.fixed && (e.port != port || now_ms.wrapping_sub(e.seen) >= self.refresh_ms)
            }
            None if self.map.len() < self.max => true,
            None => {
                self.full.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }

    /// Addresses not learned because the table was full.
    pub fn full(&self) -> u64 {
        self.full.load(Ordering::Relaxed)
    }

    /// The port for `m`, unless unknown or aged out.
    #[inline]
    pub fn lookup(&self, m: Mac, now_ms: u32) -> Option<u16> {
        let e = self.map.get(&m)?;
        (e.fixed || now_ms.wrapping_sub(e.seen) < self.aging_ms).then_some(e.port)
    }

    /// Drops learned entries older than the aging time.
    pub fn expire(&mut self, now_ms: u32) {
        let aging = self.aging_ms;
        self.map
            .retain(|_, e| e.fixed || now_ms.wrapping_sub(e.seen) < aging);
    }

    /// Drops every entry (static ones too) pointing at `port`.
    pub fn remove_port(&mut self, port: u16) {
        self.map.retain(|_, e| e.port != port);
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// True if no entries are held.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn two_tables_hash_the_same_address_differently() {
        let (a, b) = (MacTable::new(16, 100), MacTable::new(16, 100));
        let m = mac(&[2, 0, 0, 0, 0, 1]);
        assert_ne!(a.map.hasher().hash_one(m), b.map.hasher().hash_one(m));
    }

    #[test]
    fn learns_ages_and_keeps_static() {
        let mut t = MacTable::new(3, 100);
        let a = mac(&[2, 0, 0, 0, 0, 1]);
        let b = mac(&[2, 0, 0, 0, 0, 2]);
        assert!(!is_group(a));
        assert!(is_group(mac(&[0xff; 6])));
        assert!(is_group(mac(&[1, 0, 0x5e, 0, 0, 1])));
        assert!(t.add_static(a, 7));
        t.learn(a, 9, 0);
        assert_eq!(t.lookup(a, 1_000_000), Some(7), "static wins, never ages");
        t.learn(b, 2, 10);
        assert_eq!(t.lookup(b, 50), Some(2));
        t.learn(b, 3, 60);
        assert_eq!(t.lookup(b, 150), Some(3), "moved and refreshed");
        assert_eq!(t.lookup(b, 161), None, "aged");
        t.learn(3, 1, 0);
        t.learn(4, 1, 0);
        assert_eq!(t.full(), 1);
        assert!(!t.needs_learn(5, 1, 0), "full: turned away");
        assert_eq!(t.full(), 2);
        assert!(!t.needs_learn(a, 1, 0), "static never learns");
        assert!(!t.needs_learn(3, 1, 0), "fresh, same port");
        assert!(t.needs_learn(3, 2, 0), "moved");
        assert!(
            t.needs_learn(3, 1, 25),
            "due for a refresh (aging 100 ms / 4)"
        );
        t.expire(1000);
        assert_eq!(t.len(), 1);
        t.remove_port(7);
        assert!(t.is_empty());
    }

    #[test]
    fn a_static_entry_is_removed_only_by_its_port() {
        let mut t = MacTable::new(4, 100);
        let a = mac(&[2, 0, 0, 0, 0, 1]);
        let b = mac(&[2, 0, 0, 0, 0, 2]);
        assert!(t.add_static(a, 7));
        assert!(!t.remove_static(a, 8), "another port's entry stays");
        assert_eq!(t.lookup(a, 0), Some(7));
        t.learn(b, 8, 0);
        assert!(!t.remove_static(b, 8), "a learned entry is not static");
        assert_eq!(t.lookup(b, 0), Some(8));
        assert!(t.remove_static(a, 7));
        assert_eq!(t.lookup(a, 0), None);
        assert!(!t.remove_static(a, 7), "already gone");
    }
}
