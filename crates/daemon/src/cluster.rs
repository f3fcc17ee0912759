//! Cluster mode (`pronto daemon --cluster ENDPOINTS --node NAME`): the
//! daemon is one node of a cluster whose desired state is in etcd
//! (docs/cluster.md).
//!
//! The node registers under a lease it keeps alive (its capacity: memory,
//! CPUs, instance slots; its VXLAN address), campaigns for the scheduling
//! (and schedules while it leads: `pronto_cluster::agent::lead`), and
//! follows its own assignments (`assigned/NODE/`) through
//! [`ManagerConverge`], which creates, reconfigures and removes real
//! instances through the [`Manager`] from the spec stored under
//! `instances/NAME`. What runs where is reported under
//! `status/NODE/NAME`, attached to the node's lease (gone with the node).
//!
//! Fencing: instances are not restored from the local store in cluster
//! mode; a node that starts (again) under its name runs only what is
//! assigned to it now, and stops what leaves its assignments.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use pronto_cluster::agent::{self, Converge};
use pronto_cluster::etcd::KeyValue;
use pronto_cluster::node::{Node, PeerApi, RegisterError, ROOT};
use pronto_cluster::watch::{self, Batch, Seen};
use pronto_cluster::{scheduler, Compare, Etcd, Event, Op, Registration};
use pronto_switch::switch::DEFAULT_WEIGHT;
use serde_json::{json, Value};

use crate::api::DEFAULT_TENANT;
use crate::failure::Failure;
use crate::manager::{vxlan, Manager};
use crate::quota::{Ask, Quota, Usage};
use crate::store::InstanceSpec;

/// How to join a cluster.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// etcd's client URLs, separated by commas.
    pub endpoints: String,
    /// This node's name, unique in the cluster.
    pub node: String,
    /// The lease's time to live, seconds (a dead node's instances move
    /// after it).
    pub ttl: i64,
    /// `--cluster-listen`: the API over TLS on an address the other
    /// machines reach (forwarded calls go there; `api::tls`).
    pub listen: Option<std::net::SocketAddr>,
}

/// Where another node's API answers.
pub enum OwnerApi {
    /// Plain HTTP on its loopback `--listen` address (a node of this
    /// machine).
    Plain(String),
    /// TLS on its `--cluster-listen` address, its certificate pinned.
    Tls(PeerApi),
}

/// The default lease time to live, seconds.
pub const DEFAULT_TTL: i64 = 3;

/// An instance's status key under the node that runs it.
pub fn status_key(node: &str, name: &str) -> Vec<u8> {
    format!("{ROOT}status/{node}/{name}").into_bytes()
}

/// A MAC's key: `macs/MAC` (lower-case, `02:00:00:00:2a:01`).
pub fn mac_key(mac: &[u8; 6]) -> Vec<u8> {
    format!("{ROOT}macs/{}", vxlan::mac_text(mac)).into_bytes()
}

/// The prefix of the MACs' keys.
fn macs_prefix() -> Vec<u8> {
    format!("{ROOT}macs/").into_bytes()
}

/// The MAC a `macs/` key names.
fn mac_of(key: &[u8]) -> Option<[u8; 6]> {
    key.strip_prefix(macs_prefix().as_slice())
        .and_then(|m| std::str::from_utf8(m).ok())
        .and_then(pronto_switch::control::parse_mac)
}

/// Every node's announcements seen, by MAC: the announcing node and the
/// remote entry (none without a VTEP).
type Announcements = HashMap<[u8; 6], (String, Option<vxlan::Remote>)>;

/// What a node announces of one instance: each MAC and the value written.
type Announced = Vec<([u8; 6], Vec<u8>)>;

/// Where the MACs of the cluster's instances are (`macs/`): what this node
/// announces of its own instances, and what it has seen of every node's,
/// which fills the cluster's part of its VXLAN remote table.
///
/// A node announces an instance's interfaces that have a static MAC when
/// it runs the instance (`macs/MAC` → `{"node", "vtep", "instance",
/// "interface", "ips"}`, attached to its lease, so that a dead node's MACs
/// vanish with it) and deletes them when it stops it (only if they are
/// still its own: a compare on the value it wrote). Every node follows
/// `macs/`; the MACs of instances on other nodes that have a tunnel
/// address become remote entries pointing at that node's VTEP.
struct Macs {
    etcd: Arc<Etcd>,
    node: String,
    /// This node's VTEP (`--vxlan`'s address), in what it announces.
    tunnel: Option<String>,
    reg: Arc<Registration>,
    manager: Weak<Manager>,
    /// Every node's announcements seen.
    seen: Mutex<Announcements>,
    /// This node's instances' announcements, by instance (claimed before
    /// the instance starts).
    local: Mutex<HashMap<String, Announced>>,
    /// Instances whose announcement etcd did not take (tried again).
    failed: Mutex<std::collections::HashSet<String>>,
    /// The operator's static MACs on this node's ports (`PUT
    /// /v1/switch/macs/MAC`) it announces, by MAC: the port's name.
    statics: Mutex<HashMap<[u8; 6], String>>,
    /// Held while the table is rebuilt ([`Macs::sync`]).
    syncing: Mutex<()>,
    /// Set when `seen` changed since the table was last rebuilt; the
    /// rebuilding thread waits on `wake` for it.
    dirty: Mutex<bool>,
    wake: std::sync::Condvar,
}

impl Macs {
    /// The remote table's cluster part: MACs other nodes announced with a
    /// VTEP, none of them a MAC this node's instances claim. One rebuild
    /// at a time, so that a table computed earlier never replaces one
    /// computed later.
    fn sync(&self) {
        let Some(m) = self.manager.upgrade() else {
            return;
        };
        let _one = lock(&self.syncing);
        let local: std::collections::HashSet<[u8; 6]> = lock(&self.local)
            .values()
            .flat_map(|v| v.iter().map(|(mac, _)| *mac))
            .collect();
        let remotes = lock(&self.seen)
            .iter()
            .filter(|(mac, (node, _))| *node != self.node && !local.contains(*mac))
            .filter_map(|(_, (_, r))| r.clone())
            .collect();
        m.set_vxlan_cluster(remotes);
    }

    /// Claims `spec`'s MACs for this node before the instance starts: any
    /// remote entry for them leaves the switch first (the instance's port
    /// then takes the MAC and its address).
    fn claim(&self, spec: &InstanceSpec) {
        let mut mine = Vec::new();
        for f in &spec.interfaces {
            let Some(mac) = f.mac.as_deref().and_then(pronto_switch::control::parse_mac) else {
                continue;
            };
            let v = json!({
                "node": self.node,
                "vtep": self.tunnel,
                "instance": spec.name,
                "interface": f.name,
                "ips": f.ip.iter().collect::<Vec<_>>(),
            });
            mine.push((mac, v.to_string().into_bytes()));
        }
        if mine.is_empty() {
            return;
        }
        lock(&self.local).insert(spec.name.clone(), mine);
        self.sync();
    }

    /// Writes instance `name`'s claimed MACs under this node's lease; if
    /// etcd did not take them, they are tried again each second
    /// ([`Macs::announce_failed`]).
    fn announce(&self, name: &str) {
        let mine = lock(&self.local).get(name).cloned().unwrap_or_default();
        for (mac, v) in mine {
            if let Err(e) = self.etcd.put(&mac_key(&mac), &v, self.reg.lease()) {
                eprintln!(
                    "prontod: cluster: announcing {} of instance `{name}` (tried again in 1 s): {e}",
                    vxlan::mac_text(&mac)
                );
                lock(&self.failed).insert(name.to_string());
                return;
            }
        }
        lock(&self.failed).remove(name);
    }

    /// Announces again what etcd did not take (instances still claimed).
    fn announce_failed(&self) {
        let names: Vec<String> = lock(&self.failed).drain().collect();
        for n in names {
            if lock(&self.local).contains_key(&n) {
                self.announce(&n);
            }
        }
    }

    /// What this node announces of the operator's static MAC on its port
    /// `port`: no instance, `origin` `operator`.
    fn static_value(&self, port: &str) -> Vec<u8> {
        json!({
            "node": self.node,
            "vtep": self.tunnel,
            "instance": null,
            "interface": null,
            "port": port,
            "ips": [],
            "origin": "operator",
        })
        .to_string()
        .into_bytes()
    }

    /// Announces the operator's static MAC `mac` on this node's port
    /// `port` under this node's lease (the other nodes' remote tables
    /// point it here); refused (409, naming the node) while another node
    /// announces it. Announced again after a renewal of the lease.
    fn announce_static(&self, mac: [u8; 6], port: &str) -> Result<(), Failure> {
        let key = mac_key(&mac);
        let value = self.static_value(port);
        for _ in 0..20 {
            let when = match self.etcd.get(&key).map_err(etcd_failure)? {
                None => Compare::CreateRevision(key.clone(), 0),
                Some(kv) => {
                    if let Some((_, node, _)) = announcement(&kv).filter(|a| a.1 != self.node) {
                        let v: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
                        let what = match (v["instance"].as_str(), v["interface"].as_str()) {
                            (Some(i), Some(f)) => format!("for its instance `{i}` ({f})"),
                            _ => "as a static entry of its switch".to_string(),
                        };
                        return Err(Failure::Conflict(
                            format!(
                                "{} is announced by node `{node}` {what}: a MAC has one place \
                                 in the cluster; remove it there first",
                                vxlan::mac_text(&mac)
                            ),
                            None,
                        ));
                    }
                    Compare::ModRevision(key.clone(), kv.mod_revision)
                }
            };
            let put = Op::Put {
                key: key.clone(),
                value: value.clone(),
                lease: self.reg.lease(),
            };
            let (done, _) = self.etcd.txn(&[when], &[put], &[]).map_err(etcd_failure)?;
            if done {
                lock(&self.statics).insert(mac, port.to_string());
                return Ok(());
            }
        }
        Err(Failure::Conflict(
            format!(
                "{} changed meanwhile in the cluster: try again",
                vxlan::mac_text(&mac)
            ),
            None,
        ))
    }

    /// Withdraws the operator's static MAC `mac` (its key deleted if it
    /// still holds what this node wrote).
    fn withdraw_static(&self, mac: [u8; 6]) -> Result<(), Failure> {
        let key = mac_key(&mac);
        if let Some(port) = lock(&self.statics).get(&mac).cloned() {
            self.etcd
                .txn(
                    &[Compare::Value(key.clone(), self.static_value(&port))],
                    &[Op::Delete(key)],
                    &[],
                )
                .map_err(etcd_failure)?;
        }
        lock(&self.statics).remove(&mac);
        Ok(())
    }

    /// Announces the operator's static MACs `macs` (text, port name), as
    /// the node's store keeps them: at the start and after a renewal of
    /// the lease; one another node holds is said on standard error.
    fn announce_statics(&self, macs: &[(String, String)]) {
        for (text, port) in macs {
            let Some(mac) = pronto_switch::control::parse_mac(text) else {
                continue;
            };
            if let Err(e) = self.announce_static(mac, port) {
                eprintln!("prontod: cluster: the static entry {text} (port {port}): {e}");
            }
        }
    }

    /// Announces again what this node runs and is still assigned (after
    /// its lease was renewed: the keys went with the old lease).
    fn announce_again(&self) {
        let statics: Vec<(String, String)> = lock(&self.statics)
            .iter()
            .map(|(m, p)| (vxlan::mac_text(m), p.clone()))
            .collect();
        self.announce_statics(&statics);
        let names: Vec<String> = lock(&self.local).keys().cloned().collect();
        for n in names {
            let assigned = scheduler::assigned_key(&self.node, &n);
            if matches!(self.etcd.get(&assigned), Ok(Some(_))) {
                self.announce(&n);
            }
        }
    }

    /// Gives up instance `name`'s MACs (stopped, or its start failed):
    /// its keys are deleted if they still hold what this node wrote, and
    /// other nodes' entries for them may fill the table again.
    fn release(&self, name: &str) {
        let Some(mine) = lock(&self.local).remove(name) else {
            return;
        };
        for (mac, v) in mine {
            let key = mac_key(&mac);
            let _ = self
                .etcd
                .txn(&[Compare::Value(key.clone(), v)], &[Op::Delete(key)], &[]);
        }
        self.sync();
    }

    /// Takes one announcement into `seen` (a value that does not parse is
    /// ignored).
    fn take(seen: &mut Announcements, kv: &KeyValue) {
        if let Some((mac, node, remote)) = announcement(kv) {
            seen.insert(mac, (node, remote));
        }
    }

    /// Rebuilds the table whenever `seen` changed, until `stop`: changes
    /// that arrive while a rebuild runs are taken together by the next
    /// one (a burst costs as many rebuilds as the node has time for, not
    /// one per MAC).
    fn rebuild(&self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            {
                let mut dirty = lock(&self.dirty);
                if !*dirty {
                    // Woken by a change, or once a second to look at `stop`.
                    dirty = self
                        .wake
                        .wait_timeout(dirty, Duration::from_secs(1))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                if !std::mem::take(&mut *dirty) {
                    continue;
                }
            }
            self.sync();
        }
    }

    /// Follows `macs/` into `seen` until `stop`: what one watch response
    /// delivers (a burst of announcements etcd sends together) is taken
    /// whole, then the rebuilding thread ([`Macs::rebuild`]) woken once.
    fn follow(&self, stop: &AtomicBool) {
        let prefix = macs_prefix();
        watch::follow_prefix_batches(&self.etcd, &prefix, stop, &mut |batch| {
            {
                let mut all = lock(&self.seen);
                match batch {
                    Batch::All(r) => {
                        all.clear();
                        for kv in &r.kvs {
                            Macs::take(&mut all, kv);
                        }
                    }
                    Batch::Changes(changes) => {
                        for e in changes {
                            match e {
                                Event::Put(kv) => Macs::take(&mut all, &kv),
                                Event::Delete(kv) => {
                                    if let Some(mac) = mac_of(&kv.key) {
                                        all.remove(&mac);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            *lock(&self.dirty) = true;
            self.wake.notify_one();
        });
    }
}

/// What a `macs/` key says: its MAC, the node that announced it, and the
/// remote entry it makes (none without a VTEP, or with a wildcard one); a
/// key or value that does not parse says nothing.
fn announcement(kv: &KeyValue) -> Option<([u8; 6], String, Option<vxlan::Remote>)> {
    let mac = mac_of(&kv.key)?;
    let v = serde_json::from_slice::<Value>(&kv.value).ok()?;
    let node = v["node"].as_str()?;
    let remote = v["vtep"]
        .as_str()
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        // A node bound to a wildcard address is no VTEP to send to.
        .filter(|a| !a.ip().is_unspecified())
        .map(|vtep| vxlan::Remote {
            mac,
            vtep,
            ips: v["ips"]
                .as_array()
                .map(|a| a.iter().filter_map(|i| i.as_str()?.parse().ok()).collect())
                .unwrap_or_default(),
        });
    Some((mac, node.to_string(), remote))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// This node in the cluster.
pub struct Cluster {
    /// The etcd client.
    pub etcd: Arc<Etcd>,
    /// This node's name.
    pub node: String,
    reg: Mutex<Option<Arc<Registration>>>,
    stop: Arc<AtomicBool>,
    /// The cluster's tenants (`tenants/NAME`), token digest → name: a
    /// cache the `cluster-tenants` thread keeps from a watch.
    tenants: Arc<RwLock<HashMap<String, String>>>,
    /// The secret the nodes share (`secret`), sent with forwarded calls.
    secret: String,
    secret_digest: String,
    /// Where the cluster's MACs are (`macs/`).
    macs: Arc<Macs>,
}

/// The header a node sends the cluster's secret in when it forwards a call.
pub const SECRET_HEADER: &str = "x-pronto-cluster-secret";

/// The header a forwarded call names its caller in: the tenant's name
/// (none: the admin). Trusted only on a call that carries the cluster's
/// secret ([`SECRET_HEADER`]); ignored on any other.
pub const CALLER_HEADER: &str = "x-pronto-cluster-caller";

/// The header a forwarded call names its caller's token in, as the audit
/// log records it (the first 12 hex digits of its SHA-256, `unix-socket`,
/// or `-`); trusted as [`CALLER_HEADER`] is.
pub const TOKEN_HEADER: &str = "x-pronto-cluster-token";

/// The cluster's shared secret (`secret`): created once by the first node
/// (create-if-absent), read by the others.
fn cluster_secret(etcd: &Etcd) -> Result<String, String> {
    let key = format!("{ROOT}secret").into_bytes();
    let fresh = crate::api::new_token()?;
    put_if(
        etcd,
        &[Compare::CreateRevision(key.clone(), 0)],
        vec![(key.clone(), fresh.into_bytes())],
    )
    .map_err(|e| e.to_string())?;
    let kv = etcd
        .get(&key)
        .map_err(|e| e.to_string())?
        .ok_or("the cluster's secret vanished from etcd")?;
    String::from_utf8(kv.value).map_err(|_| "the cluster's secret in etcd is not text".into())
}

/// A tenant's key: `{"digest": HEX_SHA256_OF_TOKEN, "quota": {FIELDS}}`.
pub fn tenant_key(name: &str) -> Vec<u8> {
    format!("{ROOT}tenants/{name}").into_bytes()
}

/// Follows `tenants/` into `cache` (digest → name) and each tenant's
/// stored quota into the manager, until `stop`; `ready` hears when the
/// first copy is in the cache.
fn follow_tenants(
    etcd: &Etcd,
    manager: &Weak<Manager>,
    cache: &RwLock<HashMap<String, String>>,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<()>,
) {
    let prefix = tenant_key("");
    let apply = |kv: &pronto_cluster::etcd::KeyValue, map: &mut HashMap<String, String>| {
        let name = String::from_utf8_lossy(&kv.key[prefix.len()..]).into_owned();
        let Ok(v) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        match v["digest"].as_str() {
            Some(d) => {
                map.retain(|_, n| *n != name);
                map.insert(d.to_string(), name.clone());
            }
            // The default tenant's key has no token, only its quota (see
            // `Cluster::create`).
            None if name == DEFAULT_TENANT => {}
            None => return,
        }
        if let (Some(m), Some(q)) = (manager.upgrade(), v["quota"].as_object()) {
            // Each create rewrites the key (see `create`): only a change
            // of the quota is stored again.
            let mut now = m.quota(&name);
            let before = now.clone();
            if now.apply(q).is_ok() && now == before {
                return;
            }
            if let Err(e) = m.set_quota(&name, q) {
                eprintln!("prontod: tenant `{name}`'s stored quota: {e}");
            }
        }
    };
    watch::follow_prefix(etcd, &prefix, stop, &mut |seen| match seen {
        Seen::All(r) => {
            let mut map = HashMap::new();
            for kv in &r.kvs {
                apply(kv, &mut map);
            }
            *cache.write().unwrap_or_else(|e| e.into_inner()) = map;
            let _ = ready.send(());
        }
        Seen::Change(e) => {
            let mut map = cache.write().unwrap_or_else(|e| e.into_inner());
            match &e {
                Event::Put(kv) => apply(kv, &mut map),
                Event::Delete(kv) => {
                    let name = String::from_utf8_lossy(&kv.key[prefix.len()..]);
                    map.retain(|_, n| *n != name);
                    if let Some(m) = manager.upgrade() {
                        m.forget_tenant(&name);
                    }
                }
            }
        }
    });
}

/// Puts each `(key, value)` of `puts` (no lease) in one transaction that
/// holds only if every compare of `when` does: the revision stored at, or
/// `None` if a compare failed (nothing written).
fn put_if(
    etcd: &Etcd,
    when: &[Compare],
    puts: Vec<(Vec<u8>, Vec<u8>)>,
) -> Result<Option<i64>, Failure> {
    let ops: Vec<Op> = puts
        .into_iter()
        .map(|(key, value)| Op::Put {
            key,
            value,
            lease: 0,
        })
        .collect();
    let (done, at) = etcd.txn(when, &ops, &[]).map_err(etcd_failure)?;
    Ok(done.then_some(at))
}

/// Instance `name`'s share of tenant `tenant`'s quota:
/// `usage/TENANT/NAME` → `{"memory", "cpu", "interfaces"}`, written and
/// deleted in the transactions that store and delete `instances/NAME`, so
/// that a create counts one tenant's keys, not every instance's spec.
pub fn usage_key(tenant: &str, name: &str) -> Vec<u8> {
    format!("{ROOT}usage/{tenant}/{name}").into_bytes()
}

/// What an instance asking `ask` stores under its [`usage_key`].
fn usage_value(ask: &Ask) -> Vec<u8> {
    json!({"memory": ask.memory, "cpu": ask.cpu, "interfaces": ask.interfaces})
        .to_string()
        .into_bytes()
}

/// What a tenant's instances count against its quota, from their
/// `usage/TENANT/` keys, as a node counts its own (`Manager::usage`):
/// each one's memory limit, CPU share (one CPU if it names none) and
/// interfaces. Control connections are each node's own (not counted).
fn usage_of(kvs: &[KeyValue]) -> Usage {
    let mut u = Usage::default();
    for kv in kvs {
        let Ok(v) = serde_json::from_slice::<Value>(&kv.value) else {
            continue;
        };
        u.instances += 1;
        u.memory = u.memory.saturating_add(v["memory"].as_u64().unwrap_or(0));
        u.cpu += v["cpu"].as_f64().unwrap_or(1.0);
        u.interfaces += v["interfaces"].as_u64().unwrap_or(0) as u32;
    }
    u
}

fn etcd_failure(e: impl std::fmt::Display) -> Failure {
    Failure::Unavailable(format!(
        "the cluster's store (etcd) did not answer: {e}; the cluster is read-only until it does"
    ))
}

/// The node's capacity: the machine's memory and CPUs; as many instance
/// slots as instances of the default memory limit fit in the memory.
fn capacity(
    name: &str,
    default_memory: u64,
    tunnel: Option<String>,
    api: Option<String>,
    peer: Option<PeerApi>,
) -> Node {
    let memory_mib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(1024, |kb| kb / 1024);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let per = (default_memory >> 20).max(1);
    let slots = (memory_mib / per).clamp(1, 4096) as u32;
    Node {
        name: name.to_string(),
        memory_mib,
        cpus,
        slots,
        tunnel,
        api,
        peer,
    }
}

impl Cluster {
    /// Joins the cluster: registers (waiting, at most two lease times and
    /// 5 s, for an old registration of the same name to expire), then
    /// starts the scheduling loop and the follower.
    pub fn join(
        opts: &ClusterOptions,
        manager: &Arc<Manager>,
        tunnel: Option<String>,
        api: Option<String>,
        peer: Option<PeerApi>,
    ) -> Result<Arc<Cluster>, String> {
        let etcd = Arc::new(Etcd::new(&opts.endpoints).map_err(|e| format!("--cluster: {e}"))?);
        let node = capacity(
            &opts.node,
            manager.default_memory(),
            tunnel.clone(),
            api,
            peer,
        );
        let secret = cluster_secret(&etcd).map_err(|e| format!("--cluster: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(opts.ttl.max(2) as u64 * 2 + 5);
        let reg = loop {
            match Registration::start(etcd.clone(), node.clone(), opts.ttl) {
                Ok(r) => break Arc::new(r),
                Err(RegisterError::NameTaken(_)) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("--node: {e}")),
            }
        };
        let macs = Arc::new(Macs {
            etcd: etcd.clone(),
            node: opts.node.clone(),
            tunnel,
            reg: reg.clone(),
            manager: Arc::downgrade(manager),
            seen: Mutex::new(HashMap::new()),
            local: Mutex::new(HashMap::new()),
            failed: Mutex::new(std::collections::HashSet::new()),
            statics: Mutex::new(HashMap::new()),
            syncing: Mutex::new(()),
            dirty: Mutex::new(false),
            wake: std::sync::Condvar::new(),
        });
        // The operator's static MACs this node keeps (its own ports'),
        // announced to the others.
        macs.announce_statics(&manager.store().macs().unwrap_or_default());
        let c = Arc::new(Cluster {
            etcd: etcd.clone(),
            macs: macs.clone(),
            node: opts.node.clone(),
            reg: Mutex::new(Some(reg.clone())),
            stop: Arc::new(AtomicBool::new(false)),
            tenants: Arc::new(RwLock::new(HashMap::new())),
            secret_digest: crate::api::digest(&secret),
            secret,
        });
        {
            let (etcd, m, cache, stop) = (
                etcd.clone(),
                Arc::downgrade(manager),
                c.tenants.clone(),
                c.stop.clone(),
            );
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::Builder::new()
                .name("cluster-tenants".into())
                .spawn(move || follow_tenants(&etcd, &m, &cache, &stop, tx))
                .map_err(|e| format!("cluster thread: {e}"))?;
            // The API starts with the cluster's tenants known (a token
            // valid elsewhere is not refused here for want of a first
            // read); etcd answered the registration just now.
            if rx.recv_timeout(Duration::from_secs(5)).is_err() {
                eprintln!(
                    "prontod: the cluster's tenants not read yet; their tokens work once they are"
                );
            }
        }
        {
            let (etcd, reg, me, stop) = (etcd.clone(), reg.clone(), c.node.clone(), c.stop.clone());
            std::thread::Builder::new()
                .name("cluster-lead".into())
                .spawn(move || {
                    let mut on_pass = |r: Result<&pronto_cluster::placement::Plan, &_>| {
                        if let Err(e) = r {
                            eprintln!("prontod: scheduler: {e}");
                        }
                    };
                    agent::lead(
                        etcd,
                        &reg,
                        &me,
                        Duration::from_millis(50),
                        Duration::from_secs(1),
                        &stop,
                        &mut on_pass,
                    );
                })
                .map_err(|e| format!("cluster thread: {e}"))?;
        }
        if manager.vxlan().is_some() {
            // The remote table's cluster part, from every node's MACs.
            let (follower, stop) = (macs.clone(), c.stop.clone());
            std::thread::Builder::new()
                .name("cluster-macs".into())
                .spawn(move || follower.follow(&stop))
                .map_err(|e| format!("cluster thread: {e}"))?;
            // The table rebuilt from them, as often as it can be.
            let (rebuilder, stop) = (macs.clone(), c.stop.clone());
            std::thread::Builder::new()
                .name("cluster-remotes".into())
                .spawn(move || rebuilder.rebuild(&stop))
                .map_err(|e| format!("cluster thread: {e}"))?;
        }
        let conv = ManagerConverge {
            manager: Arc::downgrade(manager),
            etcd: etcd.clone(),
            node: c.node.clone(),
            reg: reg.clone(),
            converging: Arc::new(Mutex::new(HashMap::new())),
            macs,
        };
        {
            let mut conv = conv.clone();
            let (etcd, me, stop) = (etcd.clone(), c.node.clone(), c.stop.clone());
            std::thread::Builder::new()
                .name("cluster-follow".into())
                .spawn(move || agent::follow(&etcd, &me, &mut conv, &stop))
                .map_err(|e| format!("cluster thread: {e}"))?;
        }
        {
            let conv = conv.clone();
            let stop = c.stop.clone();
            std::thread::Builder::new()
                .name("cluster-configs".into())
                .spawn(move || {
                    conv.follow_configs(&stop);
                })
                .map_err(|e| format!("cluster thread: {e}"))?;
        }
        {
            let stop = c.stop.clone();
            std::thread::Builder::new()
                .name("cluster-report".into())
                .spawn(move || conv.report_again_when_renewed(&stop))
                .map_err(|e| format!("cluster thread: {e}"))?;
        }
        Ok(c)
    }

    /// What `GET /v1/health` says of the node in the cluster.
    pub fn health(&self) -> Value {
        let reg = self.reg.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let (failing, renewed) = reg.map_or((0, 0), |r| (r.failing(), r.renewals()));
        json!({
            "node": self.node,
            "etcd": if failing == 0 { "ok" } else { "unreachable" },
            "keepalives_failing": failing,
            "registrations_renewed": renewed,
        })
    }

    /// Leaves the cluster (the lease revoked: this node's instances are
    /// placed elsewhere at once).
    pub fn leave(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reg.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = self.etcd.revoke(r.lease());
        }
    }

    /// Stores a new instance (its spec, and what the scheduler reads:
    /// `memory_mib`, `millicpus`); refused if the name exists.
    ///
    /// The tenant's quota holds across the cluster: its instances'
    /// shares under `usage/TENANT/` are counted (their number, memory,
    /// CPUs and interfaces, [`usage_of`]) and `ask` checked against
    /// `quota`; the transaction that stores the new one (and its share)
    /// also rewrites `tenants/TENANT`
    /// under a compare of that key's revision, so two creates of one
    /// tenant racing on two nodes cannot both pass the count (the loser
    /// counts again). The default tenant's key (`{"quota": {}}`, no token)
    /// is written on its first create, so that its creates serialize in
    /// the same way.
    pub fn create(
        &self,
        spec: &InstanceSpec,
        quota: &Quota,
        ask: &Ask,
        pin: Option<&str>,
    ) -> Result<(), Failure> {
        let mut v = serde_json::to_value(spec).map_err(|e| Failure::Internal(e.to_string()))?;
        if let Some(n) = pin {
            // The scheduler places it there or nowhere (`waiting` while
            // that node is not live).
            v["node"] = json!(n);
        }
        v["memory_mib"] = json!(ask.memory.div_ceil(1 << 20));
        v["millicpus"] = json!(spec.cpu.map_or(0, |c| (c * 1000.0).ceil() as u64));
        let value = v.to_string().into_bytes();
        let key = scheduler::instance_key(&spec.name);
        let tkey = tenant_key(&spec.tenant);
        let prefix = usage_key(&spec.tenant, "");
        for _ in 0..20 {
            let Some(t) = self.etcd.get(&tkey).map_err(etcd_failure)? else {
                if spec.tenant != DEFAULT_TENANT {
                    return Err(Failure::NotFound(format!(
                        "no tenant `{}` (create it with POST /v1/tenants)",
                        spec.tenant
                    )));
                }
                put_if(
                    &self.etcd,
                    &[Compare::CreateRevision(tkey.clone(), 0)],
                    vec![(tkey.clone(), json!({"quota": {}}).to_string().into_bytes())],
                )?;
                continue;
            };
            let r = self.etcd.range_prefix(&prefix).map_err(etcd_failure)?;
            let used = usage_of(&r.kvs);
            crate::quota::check_in(&spec.tenant, quota, &used, ask, " in the cluster")
                .map_err(|(m, f)| Failure::OverQuota(m, f))?;
            let done = put_if(
                &self.etcd,
                &[
                    Compare::CreateRevision(key.clone(), 0),
                    Compare::ModRevision(tkey.clone(), t.mod_revision),
                ],
                vec![
                    (key.clone(), value.clone()),
                    (usage_key(&spec.tenant, &spec.name), usage_value(ask)),
                    (tkey.clone(), t.value),
                ],
            )?;
            if done.is_some() {
                return Ok(());
            }
            // The name is taken, or the tenant changed: count again.
            if self.etcd.get(&key).map_err(etcd_failure)?.is_some() {
                return Err(Failure::Conflict(
                    format!(
                        "instance `{}` already exists in the cluster (instance names are unique \
                     across the cluster's tenants)",
                        spec.name
                    ),
                    Some("name"),
                ));
            }
        }
        Err(Failure::Conflict(
            format!("tenant `{}` changed meanwhile: try again", spec.tenant),
            None,
        ))
    }

    /// What tenant `tenant`'s instances in the cluster count against its
    /// quota (control connections: this node's, `local`'s).
    pub fn usage(&self, tenant: &str, local: &Usage) -> Result<Usage, Failure> {
        let r = self
            .etcd
            .range_prefix(&usage_key(tenant, ""))
            .map_err(etcd_failure)?;
        let mut u = usage_of(&r.kvs);
        u.control_connections = local.control_connections;
        Ok(u)
    }

    /// The stored instance `name` of `tenant`, and its revision.
    fn stored(&self, tenant: &str, name: &str) -> Result<(Value, i64), Failure> {
        let kv = self
            .etcd
            .get(&scheduler::instance_key(name))
            .map_err(etcd_failure)?;
        let found = kv.and_then(|kv| {
            let v: Value = serde_json::from_slice(&kv.value).ok()?;
            (v["tenant"] == tenant).then_some((v, kv.mod_revision))
        });
        found.ok_or_else(|| Failure::NotFound(format!("no instance `{name}`")))
    }

    /// Removes instance `name` of `tenant` from the desired state.
    pub fn remove(&self, tenant: &str, name: &str) -> Result<(), Failure> {
        let (_, rev) = self.stored(tenant, name)?;
        let key = scheduler::instance_key(name);
        let (ok, _) = self
            .etcd
            .txn(
                &[Compare::ModRevision(key.clone(), rev)],
                &[Op::Delete(key), Op::Delete(usage_key(tenant, name))],
                &[],
            )
            .map_err(etcd_failure)?;
        if !ok {
            return Err(Failure::Conflict(
                format!("instance `{name}` changed meanwhile: try again"),
                None,
            ));
        }
        Ok(())
    }

    /// Rewrites stored instance `name` of `tenant` with `change` made to
    /// its spec, in a transaction under a compare of the revision read (a
    /// 409 if it changed meanwhile); the revision it was stored at. The
    /// node that runs the instance takes the change from its watch.
    fn update(
        &self,
        tenant: &str,
        name: &str,
        change: impl FnOnce(&mut Value),
    ) -> Result<i64, Failure> {
        let (mut v, rev) = self.stored(tenant, name)?;
        change(&mut v);
        let key = scheduler::instance_key(name);
        put_if(
            &self.etcd,
            &[Compare::ModRevision(key.clone(), rev)],
            vec![(key, v.to_string().into_bytes())],
        )?
        .ok_or_else(|| {
            Failure::Conflict(
                format!("instance `{name}` changed meanwhile: try again"),
                None,
            )
        })
    }

    /// Replaces instance `name`'s configuration in the desired state (the
    /// node that runs it takes it); the revision stored at.
    pub fn reconfigure(&self, tenant: &str, name: &str, config: &str) -> Result<i64, Failure> {
        self.update(tenant, name, |v| v["config"] = json!(config))
    }

    /// Sets instance `name`'s weight in the desired state (the node that
    /// runs it applies it to its sandbox and ports without a restart; a
    /// node it moves to starts it with it); the revision stored at. The
    /// caller checked the range and the tenant's cap.
    pub fn set_weight(&self, tenant: &str, name: &str, weight: u32) -> Result<i64, Failure> {
        self.update(tenant, name, |v| v["weight"] = json!(weight))
    }

    /// Sets (or, with `None`, lifts) instance `name`'s rate limit in the
    /// desired state, as [`Cluster::set_weight`] its weight.
    pub fn set_rate_limit(
        &self,
        tenant: &str,
        name: &str,
        limit: Option<crate::store::RateLimitSpec>,
    ) -> Result<i64, Failure> {
        self.update(tenant, name, |v| v["rate_limit"] = json!(limit))
    }

    /// Announces the operator's static MAC `mac` on this node's port named
    /// `port` (`PUT /v1/switch/macs/MAC`) to the cluster: every other
    /// node's VXLAN remote table points it at this node. A 409 naming the
    /// node while another node announces it.
    pub fn announce_static(&self, mac: [u8; 6], port: &str) -> Result<(), Failure> {
        self.macs.announce_static(mac, port)
    }

    /// Withdraws the operator's static MAC `mac` from the cluster (`DELETE
    /// /v1/switch/macs/MAC`).
    pub fn withdraw_static(&self, mac: [u8; 6]) -> Result<(), Failure> {
        self.macs.withdraw_static(mac)
    }

    /// The tenant whose token has digest `d`, as the watched cache has it.
    pub fn tenant_of(&self, d: &str) -> Option<String> {
        self.tenants
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(d)
            .cloned()
    }

    /// Whether tenant `name` exists: the watched cache, and etcd when the
    /// cache does not have it (a tenant just created through another node
    /// reaches this node's cache only with its watch).
    pub fn tenant_exists(&self, name: &str) -> Result<bool, Failure> {
        if name == DEFAULT_TENANT || self.tenant_names().iter().any(|x| x == name) {
            return Ok(true);
        }
        Ok(self
            .etcd
            .get(&tenant_key(name))
            .map_err(etcd_failure)?
            .is_some())
    }

    /// The cluster's tenants' names (the watched cache).
    pub fn tenant_names(&self) -> Vec<String> {
        let t = self.tenants.read().unwrap_or_else(|e| e.into_inner());
        t.values().cloned().collect()
    }

    /// Stores tenant `name` with its token's digest (a 409 if it exists);
    /// the cache takes it at once, the other nodes from their watch.
    pub fn create_tenant(&self, name: &str, digest: &str) -> Result<(), Failure> {
        let key = tenant_key(name);
        let v = json!({"digest": digest, "quota": {}});
        let done = put_if(
            &self.etcd,
            &[Compare::CreateRevision(key.clone(), 0)],
            vec![(key, v.to_string().into_bytes())],
        )?;
        if done.is_none() {
            return Err(Failure::Conflict(
                format!("tenant `{name}` already exists"),
                Some("name"),
            ));
        }
        let mut t = self.tenants.write().unwrap_or_else(|e| e.into_inner());
        t.insert(digest.to_string(), name.to_string());
        Ok(())
    }

    /// Removes tenant `name` (refused while it has instances in the
    /// cluster); its token stops working on every node.
    /// The key is read before the instances are counted and deleted under
    /// a compare of its revision: a create of the tenant's racing with it
    /// rewrites the key (see `create`), and the delete fails.
    pub fn delete_tenant(&self, name: &str) -> Result<(), Failure> {
        // The default tenant's key holds no token (see `create`): not a
        // tenant to delete, as on one node.
        let kv = match name {
            DEFAULT_TENANT => None,
            _ => self.etcd.get(&tenant_key(name)).map_err(etcd_failure)?,
        };
        let Some(kv) = kv else {
            return Err(Failure::NotFound(format!("no tenant `{name}`")));
        };
        if !self.instances(Some(name))?.is_empty() {
            return Err(Failure::Conflict(
                format!("tenant `{name}` still has instances in the cluster: remove them first"),
                None,
            ));
        }
        let (ok, _) = self
            .etcd
            .txn(
                &[Compare::ModRevision(kv.key.clone(), kv.mod_revision)],
                &[Op::Delete(kv.key)],
                &[],
            )
            .map_err(etcd_failure)?;
        if !ok {
            return Err(Failure::Conflict(
                format!("tenant `{name}` changed meanwhile: try again"),
                None,
            ));
        }
        let mut t = self.tenants.write().unwrap_or_else(|e| e.into_inner());
        t.retain(|_, n| n != name);
        Ok(())
    }

    /// Merges `patch` (already validated) into tenant `name`'s stored
    /// quota; every node takes it from its watch.
    pub fn set_tenant_quota(
        &self,
        name: &str,
        patch: &serde_json::Map<String, Value>,
    ) -> Result<(), Failure> {
        let key = tenant_key(name);
        for _ in 0..20 {
            let (mut v, when) = match self.etcd.get(&key).map_err(etcd_failure)? {
                Some(kv) => (
                    serde_json::from_slice::<Value>(&kv.value).map_err(|e| {
                        Failure::Internal(format!("tenant `{name}`'s stored value: {e}"))
                    })?,
                    Compare::ModRevision(key.clone(), kv.mod_revision),
                ),
                // The default tenant's key may not be written yet.
                None if name == DEFAULT_TENANT => (
                    json!({"quota": {}}),
                    Compare::CreateRevision(key.clone(), 0),
                ),
                None => return Err(Failure::NotFound(format!("no tenant `{name}`"))),
            };
            if !v["quota"].is_object() {
                v["quota"] = json!({});
            }
            for (k, x) in patch {
                v["quota"][k] = x.clone();
            }
            if put_if(
                &self.etcd,
                &[when],
                vec![(key.clone(), v.to_string().into_bytes())],
            )?
            .is_some()
            {
                return Ok(());
            }
        }
        Err(Failure::Conflict(
            format!("tenant `{name}` changed meanwhile: try again"),
            None,
        ))
    }

    /// Whether `h` carries the cluster's secret (a call forwarded by a node).
    pub fn is_node(&self, h: &axum::http::HeaderMap) -> bool {
        h.get(SECRET_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|s| crate::api::digest(s) == self.secret_digest)
    }

    /// The secret forwarded calls carry.
    pub fn secret(&self) -> &str {
        &self.secret
    }

    /// Where a call to instance `name` of `tenant` goes: `None` if this
    /// node runs it (or should: answered here), else the API address of
    /// the node it is placed on. 404 if the tenant has no such instance;
    /// 503 naming the node if that node is gone or serves no API.
    pub fn owner_api(
        &self,
        tenant: &str,
        name: &str,
    ) -> Result<Option<(String, OwnerApi)>, Failure> {
        let (spec, _) = self.stored(tenant, name)?;
        let placed = scheduler::placements(&self.etcd).map_err(etcd_failure)?;
        let Some(node) = placed.get(name) else {
            if let Some(pin) = spec["node"].as_str() {
                return Err(Failure::Unavailable(format!(
                    "instance `{name}` is pinned to node `{pin}`, which is not live: it runs \
                     again when that node is back"
                )));
            }
            return Err(Failure::Unavailable(format!(
                "instance `{name}` is not placed on any node yet (pending): try again when \
                 `pronto ls` shows its node"
            )));
        };
        if *node == self.node {
            return Ok(None);
        }
        let live = pronto_cluster::node::nodes(&self.etcd).map_err(etcd_failure)?;
        let Some(n) = live.into_iter().find(|n| &n.name == node) else {
            return Err(Failure::Unavailable(format!(
                "instance `{name}` is placed on node `{node}`, which is not live (its \
                 registration is gone): the scheduler moves it to another node; try again"
            )));
        };
        // Its TLS API where it has one (it may be on another machine), else
        // its loopback one (a node of this machine).
        match (n.peer, n.api) {
            (Some(p), _) => Ok(Some((node.clone(), OwnerApi::Tls(p)))),
            (None, Some(a)) => Ok(Some((node.clone(), OwnerApi::Plain(a)))),
            (None, None) => Err(Failure::Unavailable(format!(
                "instance `{name}` runs on node `{node}`, which serves no TCP API (start it \
                 with --cluster-listen, or --listen for nodes of one machine): ask that node"
            ))),
        }
    }

    /// What node `node` reports of instance `name` (`status/NODE/NAME`).
    pub fn report_of(&self, node: &str, name: &str) -> Option<Value> {
        let kv = self.etcd.get(&status_key(node, name)).ok()??;
        serde_json::from_slice(&kv.value).ok()
    }

    /// Every stored instance (of `tenant`, or all), by name: its spec's
    /// JSON, its node (from `placements/`) and the state its node reports
    /// (`status/`): `pending` (no node), `starting` (placed, no report
    /// yet), or the node's report.
    pub fn instances(&self, tenant: Option<&str>) -> Result<Vec<Value>, Failure> {
        let prefix = scheduler::instance_key("");
        let r = self.etcd.range_prefix(&prefix).map_err(etcd_failure)?;
        let placed = scheduler::placements(&self.etcd).map_err(etcd_failure)?;
        let sprefix = format!("{ROOT}status/").into_bytes();
        let st = self.etcd.range_prefix(&sprefix).map_err(etcd_failure)?;
        let mut status = std::collections::HashMap::new();
        for kv in &st.kvs {
            let k = String::from_utf8_lossy(&kv.key[sprefix.len()..]).into_owned();
            if let Ok(v) = serde_json::from_slice::<Value>(&kv.value) {
                status.insert(k, v);
            }
        }
        let mut out = Vec::new();
        for kv in &r.kvs {
            let name = String::from_utf8_lossy(&kv.key[prefix.len()..]).into_owned();
            let Ok(v) = serde_json::from_slice::<Value>(&kv.value) else {
                continue;
            };
            if tenant.is_some_and(|t| v["tenant"] != t) {
                continue;
            }
            let node = placed.get(&name);
            let s = node.and_then(|n| status.get(&format!("{n}/{name}")));
            let state = match (node, s) {
                (None, _) => json!("pending"),
                (Some(_), None) => json!("starting"),
                (Some(_), Some(s)) => s["state"].clone(),
            };
            let mut o = json!({
                "name": name,
                "tenant": v["tenant"],
                "state": state,
                "config": v["config"],
                "node": node,
                "weight": v["weight"].as_u64().unwrap_or(u64::from(DEFAULT_WEIGHT)),
                "rate_limit": v["rate_limit"],
                "interfaces": v["interfaces"].as_array().map_or(Vec::new(), |a| {
                    a.iter().map(|f| json!({"name": f["name"], "mac": f["mac"]})).collect()
                }),
            });
            if let Some(e) = s.and_then(|s| s.get("error")) {
                o["error"] = e.clone();
            }
            for k in ["group", "prefer_node"] {
                if let Some(g) = v.get(k).filter(|g| g.is_string()) {
                    o[k] = g.clone();
                }
            }
            out.push(o);
        }
        Ok(out)
    }
}

/// Converges this node's instances on its assignments, through the
/// manager.
#[derive(Clone)]
struct ManagerConverge {
    manager: Weak<Manager>,
    etcd: Arc<Etcd>,
    node: String,
    reg: Arc<Registration>,
    /// Held while an instance is converged on its stored spec (or
    /// stopped): the follower of assignments and the follower of specs
    /// take turns, so that a spec read earlier is never applied after one
    /// read later. It holds, by name, the revision of the spec each
    /// instance took (reported again with its state after a renewal).
    converging: Arc<Mutex<HashMap<String, i64>>>,
    /// The MACs of what this node runs, announced under `macs/`.
    macs: Arc<Macs>,
}

impl ManagerConverge {
    /// Reports instance `name`'s `state` (and `error`) under
    /// `status/NODE/NAME`; `revision`: the revision of its stored spec
    /// it has taken (what an API call that changed the spec waits for).
    fn report(&self, name: &str, state: &str, error: Option<&Failure>, revision: Option<i64>) {
        let mut v = json!({"node": self.node, "state": state});
        if let Some(r) = revision {
            v["revision"] = json!(r);
        }
        if let Some(e) = error {
            // The kind and the field, so that the API that took the
            // create can answer as a single node would.
            let (kind, field) = match e {
                Failure::BadRequest(_, f) => (400, *f),
                Failure::OverQuota(_, f) => (403, Some(*f)),
                Failure::NotFound(_) => (404, None),
                Failure::Conflict(_, f) => (409, *f),
                Failure::Unavailable(_) => (503, None),
                Failure::Internal(_) => (500, None),
            };
            v["error"] = json!(crate::failure::scrub_paths(&e.to_string()));
            v["status"] = json!(kind);
            v["field"] = json!(field);
        }
        let _ = self.etcd.put(
            &status_key(&self.node, name),
            v.to_string().as_bytes(),
            self.reg.lease(),
        );
    }

    /// Until `stop` is set: once a second, if the node's lease had expired
    /// (etcd unreachable for longer than its TTL) and it registered again,
    /// reports what it runs again (the reports went with the old lease).
    fn report_again_when_renewed(&self, stop: &AtomicBool) {
        let mut seen = self.reg.renewals();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_secs(1));
            {
                // In turn with starts and stops: a stopped instance's
                // MACs are never announced after their release.
                let _turn = lock(&self.converging);
                self.macs.announce_failed();
            }
            let now = self.reg.renewals();
            if now == seen {
                continue;
            }
            seen = now;
            let Some(m) = self.manager.upgrade() else {
                return;
            };
            let taken = self.converging.lock().unwrap_or_else(|e| e.into_inner());
            self.macs.announce_again();
            for i in m.list(None) {
                let rev = taken.get(&i.name).copied();
                self.report(&i.name, &state_text(&i), None, rev);
            }
        }
    }

    /// Whether this node runs instance `name`.
    fn runs(&self, name: &str) -> bool {
        self.manager
            .upgrade()
            .is_some_and(|m| m.list(None).iter().any(|i| i.name == name))
    }

    /// Runs `name` as stored, or, if it runs, takes what changed in its
    /// stored spec without restarting it (its configuration, weight, rate
    /// limit); reports the revision of the spec taken.
    fn converge(&self, name: &str, only_if_running: bool) {
        let Some(m) = self.manager.upgrade() else {
            return;
        };
        let mut taken = self.converging.lock().unwrap_or_else(|e| e.into_inner());
        let (spec, rev) = match self.etcd.get(&scheduler::instance_key(name)) {
            Ok(Some(kv)) => match serde_json::from_slice::<InstanceSpec>(&kv.value) {
                Ok(s) if s.name == name => (s, kv.mod_revision),
                Ok(_) | Err(_) => {
                    self.report(
                        name,
                        "failed",
                        Some(&Failure::BadRequest(
                            "its stored spec is not an instance".into(),
                            None,
                        )),
                        Some(kv.mod_revision),
                    );
                    return;
                }
            },
            // Removed meanwhile (the scheduler removes its placement).
            Ok(None) => return,
            Err(e) => {
                eprintln!("prontod: cluster: reading instance `{name}`: {e}");
                return;
            }
        };
        let running = m
            .list(Some(&spec.tenant))
            .into_iter()
            .find(|i| i.name == name);
        match running {
            Some(mut v) => {
                let mut error = None;
                if v.config != spec.config {
                    match m.reconfigure(&spec.tenant, name, &spec.config) {
                        Ok(now) => v = now,
                        Err(Failure::BadRequest(m, f)) => {
                            error = Some(Failure::BadRequest(
                                format!("reconfiguration refused: {m}"),
                                f,
                            ))
                        }
                        Err(e) => error = Some(e),
                    }
                }
                let weight = spec.weight.unwrap_or(DEFAULT_WEIGHT);
                if v.weight != weight {
                    match m.set_weight(&spec.tenant, name, weight) {
                        Ok(now) => v = now,
                        Err(e) => error = error.or(Some(e)),
                    }
                }
                if v.rate_limit != spec.rate_limit {
                    match m.set_rate_limit(&spec.tenant, name, spec.rate_limit) {
                        Ok(now) => v = now,
                        Err(e) => error = error.or(Some(e)),
                    }
                }
                if let Some(e) = &error {
                    eprintln!("prontod: cluster: instance `{name}`: {e}");
                }
                self.report(name, &state_text(&v), error.as_ref(), Some(rev));
                taken.insert(name.to_string(), rev);
            }
            None if only_if_running => {}
            None => {
                self.macs.claim(&spec);
                match m.create(spec) {
                    Ok(v) => {
                        self.macs.announce(name);
                        self.report(name, &state_text(&v), None, Some(rev));
                        taken.insert(name.to_string(), rev);
                    }
                    Err(e) => {
                        self.macs.release(name);
                        eprintln!("prontod: cluster: instance `{name}`: {e}");
                        self.report(name, "failed", Some(&e), Some(rev));
                    }
                }
            }
        }
    }

    /// Takes specs changed in etcd (configuration, weight, rate limit) for
    /// the instances this node runs, until `stop` is set.
    fn follow_configs(&self, stop: &AtomicBool) {
        let prefix = scheduler::instance_key("");
        let name = |key: &[u8]| String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
        watch::follow_prefix(&self.etcd, &prefix, stop, &mut |seen| match seen {
            // At the start, and after a compaction hid changes: every
            // instance running here takes what is stored now.
            Seen::All(r) => {
                for kv in &r.kvs {
                    let name = name(&kv.key);
                    if self.runs(&name) {
                        self.converge(&name, true);
                    }
                }
            }
            Seen::Change(Event::Put(kv)) => {
                let name = name(&kv.key);
                // Only what runs here: no etcd read for the others'
                // instances.
                if self.runs(&name) {
                    self.converge(&name, true);
                }
            }
            Seen::Change(Event::Delete(_)) => {}
        });
    }
}

fn state_text(v: &crate::manager::view::InstanceView) -> String {
    serde_json::to_value(v.state)
        .ok()
        .and_then(|s| s.as_str().map(str::to_string))
        .unwrap_or_else(|| "running".into())
}

impl Converge for ManagerConverge {
    fn run(&mut self, name: &str, _placement: &[u8]) {
        self.converge(name, false);
    }

    fn stop(&mut self, name: &str) {
        let Some(m) = self.manager.upgrade() else {
            return;
        };
        let mut taken = self.converging.lock().unwrap_or_else(|e| e.into_inner());
        taken.remove(name);
        for i in m.list(None).into_iter().filter(|i| i.name == name) {
            if let Err(e) = m.remove(&i.tenant, name) {
                eprintln!("prontod: cluster: removing instance `{name}`: {e}");
            }
        }
        self.macs.release(name);
        let _ = self.etcd.delete(&status_key(&self.node, name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, value: &str) -> KeyValue {
        KeyValue {
            key: format!("{ROOT}macs/{key}").into_bytes(),
            value: value.as_bytes().to_vec(),
            create_revision: 1,
            mod_revision: 1,
            version: 1,
            lease: 7,
        }
    }

    #[test]
    fn an_announcement_makes_a_remote_entry_only_with_a_usable_vtep() {
        let mac = [2, 0, 0, 0x2a, 0, 2];
        assert_eq!(
            mac_key(&mac),
            format!("{ROOT}macs/02:00:00:2a:00:02").into_bytes()
        );
        let v = r#"{"node": "n2", "vtep": "10.0.0.12:4789", "instance": "t",
                    "interface": "eth0", "ips": ["10.42.0.2", "nope"]}"#;
        assert_eq!(
            announcement(&kv("02:00:00:2a:00:02", v)),
            Some((
                mac,
                "n2".to_string(),
                Some(vxlan::Remote {
                    mac,
                    vtep: "10.0.0.12:4789".parse().expect("addr"),
                    ips: vec!["10.42.0.2".parse().expect("ip")],
                })
            ))
        );
        // A node without --vxlan, or bound to a wildcard address: where
        // the MAC is, but no entry.
        for vtep in ["null", r#""0.0.0.0:4789""#, r#""[::]:4789""#] {
            let v = format!(r#"{{"node": "n3", "vtep": {vtep}, "ips": []}}"#);
            assert_eq!(
                announcement(&kv("02:00:00:2a:00:02", &v)),
                Some((mac, "n3".to_string(), None)),
                "{vtep}"
            );
        }
        assert_eq!(announcement(&kv("not-a-mac", v)), None);
        assert_eq!(announcement(&kv("02:00:00:2a:00:02", "{}")), None);
        assert_eq!(announcement(&kv("02:00:00:2a:00:02", "[")), None);
    }
}
