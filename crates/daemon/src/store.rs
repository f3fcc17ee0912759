//! The desired state, kept in an embedded redb database: what the operator
//! asked for (tenants with their token digests and quotas, instances with
//! their configurations and limits, static MAC entries), not what happens
//! to be running. Every change is one committed write transaction, made
//! before the request that asked for it is answered, so a daemon killed at
//! any moment restarts with the state of its last answered request. The
//! file is readable by the daemon's user alone (mode 0600, also for a
//! store made by an older daemon).

use std::path::Path;

use redb::{Database, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::quota::Quota;

/// Tenant name → hex SHA-256 of its API token.
const TENANTS: TableDefinition<&str, &str> = TableDefinition::new("tenants");
/// `TENANT.NAME` → the instance's [`InstanceSpec`] as JSON.
const INSTANCES: TableDefinition<&str, &str> = TableDefinition::new("instances");
/// MAC (`02:00:00:00:00:01`) → switch port name (`TENANT/NAME/IFACE`).
const MACS: TableDefinition<&str, &str> = TableDefinition::new("macs");
/// Tenant name → its [`Quota`] as JSON (absent: the defaults).
const QUOTAS: TableDefinition<&str, &str> = TableDefinition::new("quotas");
/// Sequence number → one audit log entry ([`crate::audit::Entry`]) as
/// JSON; the oldest go first when the log is over its bound.
const AUDIT: TableDefinition<u64, &str> = TableDefinition::new("audit");
/// Counters kept with the state: `audit_dropped` (audit entries dropped
/// to keep the log within its bound, ever).
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");

/// A store operation failed (the database file is unreadable, full, or
/// locked by another daemon).
#[derive(Debug, thiserror::Error)]
#[error("state store: {0}")]
pub struct StoreError(String);

fn e<E: Into<redb::Error>>(x: E) -> StoreError {
    StoreError(x.into().to_string())
}

/// One interface of an instance: a port on the switch.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct IfaceSpec {
    /// The name the configuration uses (`FromDevice(eth0)`).
    pub name: String,
    /// A MAC the switch routes to this port (a static entry), if any.
    #[serde(default)]
    pub mac: Option<String>,
    /// The IPv4 or IPv6 address the instance uses on this interface, with
    /// `mac`: the switch then answers ARP requests (or Neighbor
    /// Solicitations) for it itself, and they are not flooded to every
    /// port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Whether the interface takes broadcast and multicast frames the
    /// switch does not answer itself (`None`: yes). An instance whose
    /// neighbours' addresses are all registered never needs them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast: Option<bool>,
}

/// What an instance should be.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct InstanceSpec {
    /// Its name, unique within its tenant.
    pub name: String,
    /// The tenant it belongs to.
    pub tenant: String,
    /// The Click configuration text.
    pub config: String,
    /// Memory limit in bytes.
    #[serde(default)]
    pub memory: Option<u64>,
    /// CPU limit, as a share of one CPU.
    #[serde(default)]
    pub cpu: Option<f64>,
    /// Most processes/threads.
    #[serde(default)]
    pub pids: Option<u64>,
    /// The CPUs its threads run on (none: any the daemon may use).
    #[serde(default)]
    pub cpus: Option<Vec<usize>>,
    /// Its interfaces.
    #[serde(default)]
    pub interfaces: Vec<IfaceSpec>,
    /// Its share when the machine is overloaded, 1 to 10,000 (none: 100,
    /// every instance's default): the CPU weight of its sandbox and the
    /// weight of its ports on the switch, both against the other
    /// instances'.
    #[serde(default)]
    pub weight: Option<u32>,
    /// The most each of its interfaces may send into the switch, and
    /// (separately) receive from it: frames and/or bits per second (none:
    /// no limit). Frames over it are dropped at the switch and counted on
    /// the port.
    #[serde(default)]
    pub rate_limit: Option<RateLimitSpec>,
    /// Its interfaces' switch ports: slots in each port's packet pool and
    /// the size of each of its rings (none: the daemon's `--slots` and
    /// `--ring`). Large rings for the few instances that carry a tenant's
    /// traffic, the default for the many that idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_geometry: Option<PortGeometrySpec>,
    /// After packets moved, its routers keep polling (yielding the CPU)
    /// this many microseconds before they sleep (none or 0: sleep at
    /// once): for an instance with CPUs of its own (`cpus`), where a
    /// wake-up per ring of frames costs more than polling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_window_us: Option<u64>,
    /// The group it belongs to (a chain's name, as `pronto chain apply`
    /// gives its instances): in a cluster, the scheduler keeps a group's
    /// members on one node where they fit (fewer tunnel crossings); a
    /// single daemon stores and shows it, nothing more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// (cluster) The node it is placed on first if that node is live and
    /// has room: a preference, not a pin (`node`), so that it moves like
    /// any instance when that node dies (`pronto chain apply --nodes`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefer_node: Option<String>,
    /// Files its configuration reads (IDS rules, routes, subscribers,
    /// keys), by the path the configuration names: handed to the sandbox
    /// before the configuration, which reads them as if on disk
    /// (`pronto_elements::files`). At most 64, 1 MiB in all.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub files: std::collections::BTreeMap<String, String>,
    /// When it was created (Unix milliseconds).
    pub created_unix_ms: u64,
}

/// A rate limit as stored and as the API shows it.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RateLimitSpec {
    /// Frames per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pps: Option<u64>,
    /// Bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bps: Option<u64>,
}

impl RateLimitSpec {
    /// The switch's form.
    pub fn limit(&self) -> pronto_switch::RateLimit {
        pronto_switch::RateLimit {
            pps: self.pps,
            bps: self.bps,
        }
    }

    /// From the switch's form; `None` when it sets nothing.
    pub fn from_limit(l: pronto_switch::RateLimit) -> Option<RateLimitSpec> {
        l.is_set().then_some(RateLimitSpec {
            pps: l.pps,
            bps: l.bps,
        })
    }

    /// From an API value: `"100kpps"`, `"1Gbps,50kpps"`, `{"pps": N,
    /// "bps": N}`, or `null`/`"none"` for none; the error says what is
    /// accepted.
    pub fn from_json(v: &serde_json::Value) -> Result<Option<RateLimitSpec>, String> {
        let limit = match v {
            serde_json::Value::Null => return Ok(None),
            serde_json::Value::String(s) => pronto_switch::RateLimit::parse(s)?,
            serde_json::Value::Object(_) => {
                let r: RateLimitSpec = serde_json::from_value(v.clone()).map_err(|e| {
                    format!("{e} (write {{\"pps\": 100000}}, {{\"bps\": 1000000000}}, both, or a string such as \"100kpps\")")
                })?;
                let l = r.limit();
                l.check()?;
                l
            }
            other => {
                return Err(format!(
                    "{other} is not a rate limit: write \"100kpps\", \"1Gbps\", \"1Gbps,100kpps\", {{\"pps\": 100000}} or null"
                ))
            }
        };
        Ok(RateLimitSpec::from_limit(limit))
    }
}

/// An instance's port geometry as stored and as the API shows it.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PortGeometrySpec {
    /// Slots (2 KiB frames) in each port's pool, 1 to 1,048,576.
    pub slots: u32,
    /// Descriptors in each of the port's rings, a power of two, 2 to 65,536.
    pub ring: u32,
}

impl PortGeometrySpec {
    /// The switch's form, checked; the error names the field and the
    /// bounds.
    pub fn geometry(&self) -> Result<pronto_switch::Geometry, String> {
        pronto_switch::Geometry::new(self.slots, self.ring).map_err(|_| {
            format!(
                "port_geometry: {} slots and rings of {} is not a port: slots from 1 to {}, \
                 rings a power of two from 2 to {} (the daemon's default is its --slots and --ring)",
                self.slots,
                self.ring,
                pronto_switch::layout::MAX_SLOTS,
                pronto_switch::layout::MAX_RING
            )
        })
    }

    /// From the switch's form.
    pub fn of(g: pronto_switch::Geometry) -> PortGeometrySpec {
        PortGeometrySpec {
            slots: g.slots,
            ring: g.ring,
        }
    }
}

impl std::fmt::Display for RateLimitSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.limit().fmt(f)
    }
}

impl InstanceSpec {
    /// An instance of `tenant` named `name` running `config`, with no
    /// interfaces and every limit and option at the daemon's default.
    pub fn new(tenant: &str, name: &str, config: &str) -> InstanceSpec {
        InstanceSpec {
            name: name.into(),
            tenant: tenant.into(),
            config: config.into(),
            memory: None,
            cpu: None,
            pids: None,
            cpus: None,
            interfaces: Vec::new(),
            weight: None,
            rate_limit: None,
            port_geometry: None,
            poll_window_us: None,
            group: None,
            prefer_node: None,
            files: Default::default(),
            created_unix_ms: 0,
        }
    }

    /// The store key, `TENANT.NAME` (tenant names hold no `.`).
    pub fn key(&self) -> String {
        key(&self.tenant, &self.name)
    }
}

/// The store key of instance `name` of `tenant`.
pub fn key(tenant: &str, name: &str) -> String {
    format!("{tenant}.{name}")
}

/// The database.
pub struct Store {
    db: Database,
    /// The most audit entries kept.
    audit_limit: std::sync::atomic::AtomicU64,
    /// Audit entries now kept, and dropped ever (mirrors of the tables,
    /// for `/metrics`).
    audit_entries: std::sync::atomic::AtomicU64,
    audit_dropped: std::sync::atomic::AtomicU64,
    audit_gate: crate::audit::Gate,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, readable and
    /// writable by the daemon's user alone.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
        let private = |x: std::io::Error| StoreError(format!("{}: {x}", path.display()));
        // Made 0600 from the start; an older store is made so.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(path)
            .map_err(private)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(private)?;
        // A daemon killed a moment ago may have left the file locked by a
        // sandbox it was starting (a child between its clone and its
        // exec, which dies with it, or after the sandbox set-up timeout at
        // the latest): wait for it that long.
        let t0 = std::time::Instant::now();
        let wait = pronto_sandbox::SETUP_TIMEOUT + std::time::Duration::from_secs(2);
        let db = loop {
            match Database::create(path) {
                Ok(db) => break db,
                Err(redb::DatabaseError::DatabaseAlreadyOpen) if t0.elapsed() < wait => {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                Err(x) => {
                    return Err(StoreError(format!(
                        "{}: {}",
                        path.display(),
                        redb::Error::from(x)
                    )))
                }
            }
        };
        let w = db.begin_write().map_err(e)?;
        {
            w.open_table(TENANTS).map_err(e)?;
            w.open_table(INSTANCES).map_err(e)?;
            w.open_table(MACS).map_err(e)?;
            w.open_table(QUOTAS).map_err(e)?;
            w.open_table(AUDIT).map_err(e)?;
            w.open_table(COUNTERS).map_err(e)?;
        }
        w.commit().map_err(e)?;
        let (entries, dropped) = {
            let r = db.begin_read().map_err(e)?;
            let n = r.open_table(AUDIT).map_err(e)?.len().map_err(e)?;
            let d = r
                .open_table(COUNTERS)
                .map_err(e)?
                .get(AUDIT_DROPPED)
                .map_err(e)?
                .map_or(0, |v| v.value());
            (n, d)
        };
        Ok(Store {
            db,
            audit_limit: crate::audit::DEFAULT_LIMIT.into(),
            audit_entries: entries.into(),
            audit_dropped: dropped.into(),
            audit_gate: crate::audit::Gate::default(),
        })
    }

    fn put(&self, t: TableDefinition<&str, &str>, k: &str, v: &str) -> Result<(), StoreError> {
        let w = self.db.begin_write().map_err(e)?;
        w.open_table(t).map_err(e)?.insert(k, v).map_err(e)?;
        w.commit().map_err(e)
    }

    fn remove(&self, t: TableDefinition<&str, &str>, k: &str) -> Result<bool, StoreError> {
        let w = self.db.begin_write().map_err(e)?;
        let had = w.open_table(t).map_err(e)?.remove(k).map_err(e)?.is_some();
        w.commit().map_err(e)?;
        Ok(had)
    }

    fn all(&self, t: TableDefinition<&str, &str>) -> Result<Vec<(String, String)>, StoreError> {
        let r = self.db.begin_read().map_err(e)?;
        let table = r.open_table(t).map_err(e)?;
        let mut out = Vec::new();
        for item in table.iter().map_err(e)? {
            let (k, v) = item.map_err(e)?;
            out.push((k.value().to_string(), v.value().to_string()));
        }
        Ok(out)
    }

    /// Records tenant `name` with its token's digest.
    pub fn put_tenant(&self, name: &str, token_digest: &str) -> Result<(), StoreError> {
        self.put(TENANTS, name, token_digest)
    }

    /// Forgets tenant `name` and its quota (one transaction).
    pub fn remove_tenant(&self, name: &str) -> Result<bool, StoreError> {
        let w = self.db.begin_write().map_err(e)?;
        let had = w
            .open_table(TENANTS)
            .map_err(e)?
            .remove(name)
            .map_err(e)?
            .is_some();
        w.open_table(QUOTAS).map_err(e)?.remove(name).map_err(e)?;
        w.commit().map_err(e)?;
        Ok(had)
    }

    /// Records tenant `name`'s quota.
    pub fn put_quota(&self, name: &str, q: &Quota) -> Result<(), StoreError> {
        let json = serde_json::to_string(q).map_err(|x| StoreError(x.to_string()))?;
        self.put(QUOTAS, name, &json)
    }

    /// Every quota the admin set, by tenant.
    pub fn quotas(&self) -> Result<Vec<(String, Quota)>, StoreError> {
        self.all(QUOTAS)?
            .into_iter()
            .map(|(k, v)| {
                serde_json::from_str(&v)
                    .map(|q| (k.clone(), q))
                    .map_err(|x| StoreError(format!("quota record `{k}` is unreadable: {x}")))
            })
            .collect()
    }

    /// Every tenant with its token digest.
    pub fn tenants(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.all(TENANTS)
    }

    /// Records (or replaces) an instance.
    pub fn put_instance(&self, spec: &InstanceSpec) -> Result<(), StoreError> {
        let json = serde_json::to_string(spec).map_err(|x| StoreError(x.to_string()))?;
        self.put(INSTANCES, &spec.key(), &json)
    }

    /// Forgets an instance.
    pub fn remove_instance(&self, tenant: &str, name: &str) -> Result<bool, StoreError> {
        self.remove(INSTANCES, &key(tenant, name))
    }

    /// Every instance. A record that no longer parses is reported, not
    /// dropped: the daemon refuses to start rather than lose it.
    pub fn instances(&self) -> Result<Vec<InstanceSpec>, StoreError> {
        self.all(INSTANCES)?
            .into_iter()
            .map(|(k, v)| {
                serde_json::from_str(&v)
                    .map_err(|x| StoreError(format!("instance record `{k}` is unreadable: {x}")))
            })
            .collect()
    }

    /// Records a static MAC entry.
    pub fn put_mac(&self, mac: &str, port_name: &str) -> Result<(), StoreError> {
        self.put(MACS, mac, port_name)
    }

    /// Forgets a static MAC entry.
    pub fn remove_mac(&self, mac: &str) -> Result<bool, StoreError> {
        self.remove(MACS, mac)
    }

    /// Every static MAC entry (MAC, port name).
    pub fn macs(&self) -> Result<Vec<(String, String)>, StoreError> {
        self.all(MACS)
    }
}

/// The [`COUNTERS`] key of the audit entries dropped.
const AUDIT_DROPPED: &str = "audit_dropped";

impl Store {
    /// Keeps at most `n` audit entries (at least 1) from the next one on.
    pub fn set_audit_limit(&self, n: u64) {
        self.audit_limit
            .store(n.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// Appends an audit entry (its `seq` set here), dropping the oldest
    /// while the log is over its bound and counting them, in one
    /// transaction.
    pub fn append_audit(&self, entry: &mut crate::audit::Entry) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering::Relaxed;
        let limit = self.audit_limit.load(Relaxed);
        let w = self.db.begin_write().map_err(e)?;
        let (len, dropped) = {
            let mut t = w.open_table(AUDIT).map_err(e)?;
            entry.seq = t.last().map_err(e)?.map_or(1, |(k, _)| k.value() + 1);
            let json = serde_json::to_string(&entry).map_err(|x| StoreError(x.to_string()))?;
            t.insert(entry.seq, json.as_str()).map_err(e)?;
            let mut len = t.len().map_err(e)?;
            let mut dropped = 0u64;
            while len > limit {
                if t.pop_first().map_err(e)?.is_none() {
                    break;
                }
                len -= 1;
                dropped += 1;
            }
            (len, dropped)
        };
        let total = if dropped > 0 {
            let mut c = w.open_table(COUNTERS).map_err(e)?;
            let was = c.get(AUDIT_DROPPED).map_err(e)?.map_or(0, |v| v.value());
            c.insert(AUDIT_DROPPED, was + dropped).map_err(e)?;
            Some(was + dropped)
        } else {
            None
        };
        w.commit().map_err(e)?;
        self.audit_entries.store(len, Relaxed);
        if let Some(t) = total {
            self.audit_dropped.store(t, Relaxed);
        }
        Ok(())
    }

    /// The newest `limit` audit entries that `keep` accepts, oldest
    /// first. A record that no longer parses is skipped.
    pub fn audit(
        &self,
        limit: usize,
        mut keep: impl FnMut(&crate::audit::Entry) -> bool,
    ) -> Result<Vec<crate::audit::Entry>, StoreError> {
        let r = self.db.begin_read().map_err(e)?;
        let t = r.open_table(AUDIT).map_err(e)?;
        let mut out = Vec::new();
        for item in t.iter().map_err(e)?.rev() {
            if out.len() >= limit {
                break;
            }
            let (_, v) = item.map_err(e)?;
            if let Ok(x) = serde_json::from_str::<crate::audit::Entry>(v.value()) {
                if keep(&x) {
                    out.push(x);
                }
            }
        }
        out.reverse();
        Ok(out)
    }

    /// What limits the audit entries of authentication failures.
    pub fn audit_gate(&self) -> &crate::audit::Gate {
        &self.audit_gate
    }

    /// (audit entries kept, audit entries dropped ever).
    pub fn audit_counts(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.audit_entries.load(Relaxed),
            self.audit_dropped.load(Relaxed),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_survives_reopening() {
        let dir = std::env::temp_dir().join(format!("pronto-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("state.redb");
        let spec = InstanceSpec {
            memory: Some(8 << 20),
            cpu: Some(0.5),
            cpus: Some(vec![0]),
            interfaces: vec![IfaceSpec {
                name: "eth0".into(),
                mac: Some("02:00:00:00:00:01".into()),
                ip: None,
                broadcast: None,
            }],
            files: [(
                "rules/a.rules".to_string(),
                "alert ip any any -> any any (sid:1;)".to_string(),
            )]
            .into(),
            created_unix_ms: 1,
            ..InstanceSpec::new("acme", "fw1", "Idle -> Discard;")
        };
        {
            let s = Store::open(&path).expect("open");
            s.put_tenant("acme", "abcd").expect("tenant");
            s.put_instance(&spec).expect("instance");
            s.put_mac("02:00:00:00:00:09", "acme/fw1/eth0")
                .expect("mac");
        }
        let s = Store::open(&path).expect("reopen");
        assert_eq!(
            s.tenants().expect("t"),
            vec![("acme".into(), "abcd".into())]
        );
        assert_eq!(s.instances().expect("i"), vec![spec]);
        assert_eq!(s.macs().expect("m").len(), 1);
        assert!(s.remove_instance("acme", "fw1").expect("rm"));
        assert!(!s.remove_instance("acme", "fw1").expect("rm again"));
        assert!(s.instances().expect("i").is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn quotas_are_kept_and_go_with_their_tenant_and_the_file_is_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("pronto-store-q-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("state.redb");
        // A store an older daemon left world-readable.
        std::fs::write(&path, b"").expect("file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let mut q = Quota::defaults("20000-20099".parse().expect("range"));
        q.instances = 3;
        {
            let s = Store::open(&path).expect("open");
            s.put_tenant("acme", "abcd").expect("tenant");
            s.put_quota("acme", &q).expect("quota");
        }
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let s = Store::open(&path).expect("reopen");
        assert_eq!(s.quotas().expect("q"), vec![("acme".to_string(), q)]);
        assert!(s.remove_tenant("acme").expect("rm"));
        assert!(s.quotas().expect("q").is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
