//! The daemon's instances by key, with each tenant's usage kept as running
//! sums: a create checks its tenant's quota without visiting every
//! instance (at 9,000 instances of one tenant that walk, a lock and a
//! name compare per instance, was 8.6% of the machine's time during
//! back-to-back creates).

use std::collections::HashMap;
use std::sync::Arc;

use super::Instance;
use crate::quota::{Ask, Usage};

/// One tenant's sums. CPU in millionths of a core, so that adding and
/// removing instances in any order leaves no rounding behind.
#[derive(Default, Clone, Copy, Debug, PartialEq)]
struct Sums {
    instances: u32,
    memory: u64,
    cpu_micro: u64,
    interfaces: u32,
}

/// What an instance counts for, fixed at its creation (tenant, limits and
/// interfaces do not change while it exists).
struct Entry {
    inst: Arc<Instance>,
    tenant: String,
    memory: u64,
    cpu_micro: u64,
    interfaces: u32,
}

#[derive(Default)]
pub(crate) struct Registry {
    by_key: HashMap<String, Entry>,
    sums: HashMap<String, Sums>,
}

fn micro(cpu: f64) -> u64 {
    (cpu * 1e6).round().max(0.0) as u64
}

impl Registry {
    /// Keeps `inst` under `key`, counted for `tenant` as `ask`; replaces
    /// (and stops counting) one kept under the same key.
    pub(crate) fn insert(&mut self, key: String, inst: Arc<Instance>, tenant: &str, ask: &Ask) {
        self.remove(&key);
        let e = Entry {
            inst,
            tenant: tenant.to_string(),
            memory: ask.memory,
            cpu_micro: micro(ask.cpu),
            interfaces: ask.interfaces,
        };
        let s = self.sums.entry(e.tenant.clone()).or_default();
        s.instances += 1;
        s.memory = s.memory.saturating_add(e.memory);
        s.cpu_micro += e.cpu_micro;
        s.interfaces += e.interfaces;
        self.by_key.insert(key, e);
    }

    /// Forgets the instance under `key` and what it counted for.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Arc<Instance>> {
        let e = self.by_key.remove(key)?;
        if let Some(s) = self.sums.get_mut(&e.tenant) {
            s.instances -= 1;
            s.memory = s.memory.saturating_sub(e.memory);
            s.cpu_micro -= e.cpu_micro;
            s.interfaces -= e.interfaces;
            if s.instances == 0 {
                self.sums.remove(&e.tenant);
            }
        }
        Some(e.inst)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&Arc<Instance>> {
        self.by_key.get(key).map(|e| &e.inst)
    }

    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<Instance>> {
        self.by_key.values().map(|e| &e.inst)
    }

    /// Forgets every instance.
    pub(crate) fn drain(&mut self) -> Vec<Arc<Instance>> {
        self.sums.clear();
        self.by_key.drain().map(|(_, e)| e.inst).collect()
    }

    /// What tenant `t`'s instances have now (without its control
    /// connections, which the caller adds).
    pub(crate) fn usage(&self, t: &str) -> Usage {
        let s = self.sums.get(t).copied().unwrap_or_default();
        Usage {
            instances: s.instances,
            memory: s.memory,
            cpu: s.cpu_micro as f64 / 1e6,
            interfaces: s.interfaces,
            ..Usage::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::InstanceSpec;

    fn inst(tenant: &str, name: &str) -> Arc<Instance> {
        let spec = InstanceSpec::new(tenant, name, "Idle -> Discard;");
        Instance::new(spec).0
    }

    fn ask(memory: u64, cpu: f64, interfaces: u32) -> Ask {
        Ask {
            memory,
            cpu,
            pids: 64,
            interfaces,
        }
    }

    #[test]
    fn sums_follow_inserts_and_removes_per_tenant() {
        let mut r = Registry::default();
        for i in 0..10 {
            let key = format!("acme.n{i}");
            r.insert(
                key,
                inst("acme", &format!("n{i}")),
                "acme",
                &ask(1 << 20, 0.1, 2),
            );
        }
        r.insert("beta.x".into(), inst("beta", "x"), "beta", &ask(5, 1.5, 1));
        let u = r.usage("acme");
        assert_eq!((u.instances, u.memory, u.interfaces), (10, 10 << 20, 20));
        // Ten tenths are one core exactly (a float sum would be 0.9999999999999999).
        assert_eq!(u.cpu, 1.0);
        assert_eq!(r.usage("beta").cpu, 1.5);
        // Replacing a key counts the new one only.
        r.insert(
            "acme.n0".into(),
            inst("acme", "n0"),
            "acme",
            &ask(0, 0.25, 0),
        );
        let u = r.usage("acme");
        assert_eq!((u.instances, u.memory, u.interfaces), (10, 9 << 20, 18));
        assert_eq!(u.cpu, 1.15);
        for i in 0..10 {
            assert!(r.remove(&format!("acme.n{i}")).is_some());
        }
        assert!(r.remove("acme.n0").is_none());
        assert_eq!(r.usage("acme"), Usage::default());
        assert!(r.contains_key("beta.x"));
        assert_eq!(r.values().count(), 1);
        assert_eq!(r.drain().len(), 1);
        assert_eq!(r.usage("beta"), Usage::default());
        assert!(r.get("beta.x").is_none());
    }
}
