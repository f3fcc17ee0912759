//! A node's presence in the cluster, and the one scheduler at a time.
//!
//! A node registers under `/pronto/v1/nodes/NAME`, its record attached to
//! a lease it keeps alive from a thread of its own: when the node dies
//! (its daemon killed, its server gone), etcd lets the lease expire and the
//! record disappears, which is what the scheduler watches for. A record is
//! only written when no live node holds the name, so that a node that
//! comes back while its old lease still runs does not stand in for it.
//!
//! The scheduler is elected the same way: the first node whose
//! create-if-absent transaction puts its name under
//! `/pronto/v1/scheduler`, attached to its lease, leads until its lease
//! ends; the key's create revision is the leadership's fencing token (a
//! placement written under an older one is from a deposed scheduler).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::json;

use crate::etcd::{Compare, Error, Etcd, Op};

/// Where every key of pronto's cluster state lives (see docs/cluster.md).
pub const ROOT: &str = "/pronto/v1/";

/// A node's record key.
pub fn node_key(name: &str) -> Vec<u8> {
    format!("{ROOT}nodes/{name}").into_bytes()
}

/// The scheduler's election key.
pub fn scheduler_key() -> Vec<u8> {
    format!("{ROOT}scheduler").into_bytes()
}

/// What a node offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Its name, unique in the cluster.
    pub name: String,
    /// Memory for instances, MiB.
    pub memory_mib: u64,
    /// CPUs for instances.
    pub cpus: u32,
    /// Instances it may run.
    pub slots: u32,
    /// Its switch's tunnel address (`IP:PORT`), if it has one.
    pub tunnel: Option<String>,
    /// Its REST API's address (`IP:PORT`), where the other nodes forward
    /// calls to the instances it runs; `None` if it serves none on TCP.
    pub api: Option<String>,
    /// Its API for other machines (`--cluster-listen`): TLS on `addr`,
    /// with the certificate whose SHA-256 is `sha256`.
    pub peer: Option<PeerApi>,
}

/// A node's API over TLS: where, and the fingerprint the other nodes pin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerApi {
    /// `IP:PORT`.
    pub addr: String,
    /// SHA-256 of its certificate (DER), lower-case hex.
    pub sha256: String,
}

impl Node {
    /// The record as stored (JSON).
    pub fn to_json(&self) -> Vec<u8> {
        json!({
            "name": self.name,
            "memory_mib": self.memory_mib,
            "cpus": self.cpus,
            "slots": self.slots,
            "tunnel": self.tunnel,
            "api": self.api,
            "peer_api": self.peer.as_ref().map(|p| json!({"addr": p.addr, "sha256": p.sha256})),
        })
        .to_string()
        .into_bytes()
    }

    /// A stored record; `None` if it is not one.
    pub fn from_json(b: &[u8]) -> Option<Node> {
        let v: serde_json::Value = serde_json::from_slice(b).ok()?;
        Some(Node {
            name: v["name"].as_str()?.to_string(),
            memory_mib: v["memory_mib"].as_u64()?,
            cpus: u32::try_from(v["cpus"].as_u64()?).ok()?,
            slots: u32::try_from(v["slots"].as_u64()?).ok()?,
            tunnel: v["tunnel"].as_str().map(str::to_string),
            api: v["api"].as_str().map(str::to_string),
            peer: match (
                v["peer_api"]["addr"].as_str(),
                v["peer_api"]["sha256"].as_str(),
            ) {
                (Some(a), Some(h)) => Some(PeerApi {
                    addr: a.to_string(),
                    sha256: h.to_string(),
                }),
                _ => None,
            },
        })
    }
}

/// Why a node could not register.
#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    /// etcd could not be reached or refused.
    #[error(transparent)]
    Etcd(#[from] Error),
    /// A live node already holds the name.
    #[error(
        "node name `{0}` is held by a live node (its lease has not expired): pick another \
         --node name, or stop that node and wait for its lease to end"
    )]
    NameTaken(String),
    /// The name cannot be a key.
    #[error("node name `{0}`: expected 1 to 63 letters, digits, `-` or `_`")]
    BadName(String),
}

/// A node's registration, kept alive until it is dropped.
pub struct Registration {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    etcd: Arc<Etcd>,
    node: Node,
    ttl: i64,
    lease: AtomicI64,
    /// Times the lease was found expired and the node registered again
    /// (its instances may have been placed elsewhere meanwhile).
    renewals: AtomicU64,
    /// Keep-alives that failed (etcd unreachable), in a row.
    failing: AtomicU64,
    stop: AtomicBool,
}

impl Registration {
    /// Registers `node` under a lease of `ttl` seconds and keeps it alive
    /// (a keep-alive every third of the TTL).
    pub fn start(etcd: Arc<Etcd>, node: Node, ttl: i64) -> Result<Registration, RegisterError> {
        let ok = !node.name.is_empty()
            && node.name.len() <= 63
            && node
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !ok {
            return Err(RegisterError::BadName(node.name));
        }
        let ttl = ttl.max(2);
        let lease = register(&etcd, &node, ttl)?;
        let shared = Arc::new(Shared {
            etcd,
            node,
            ttl,
            lease: AtomicI64::new(lease),
            renewals: AtomicU64::new(0),
            failing: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("cluster-lease-{}", s.node.name))
            .spawn(move || keep_alive(&s))
            .map_err(|e| {
                RegisterError::Etcd(Error::Unavailable {
                    what: "keep-alive thread",
                    reasons: e.to_string(),
                })
            })?;
        Ok(Registration {
            shared,
            thread: Some(thread),
        })
    }

    /// The lease the node's keys are attached to now.
    pub fn lease(&self) -> i64 {
        self.shared.lease.load(Ordering::Relaxed)
    }

    /// Times the node found its lease expired and registered again.
    pub fn renewals(&self) -> u64 {
        self.shared.renewals.load(Ordering::Relaxed)
    }

    /// Keep-alives that failed in a row (etcd unreachable: the node keeps
    /// forwarding with its last state and says so).
    pub fn failing(&self) -> u64 {
        self.shared.failing.load(Ordering::Relaxed)
    }

    /// Leaves the cluster now: the lease is revoked, the record goes.
    pub fn leave(mut self) -> Result<(), Error> {
        self.halt();
        self.shared.etcd.revoke(self.lease())
    }

    fn halt(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Registration {
    /// Stops keeping the lease alive (it then expires: as if the node had
    /// died).
    fn drop(&mut self) {
        self.halt();
    }
}

/// A lease and the node's record on it, if no live node holds the name.
fn register(etcd: &Etcd, node: &Node, ttl: i64) -> Result<i64, RegisterError> {
    let lease = etcd.grant(ttl)?;
    let key = node_key(&node.name);
    let (ok, _) = etcd.txn(
        &[Compare::CreateRevision(key.clone(), 0)],
        &[Op::Put {
            key,
            value: node.to_json(),
            lease,
        }],
        &[],
    )?;
    if !ok {
        let _ = etcd.revoke(lease);
        return Err(RegisterError::NameTaken(node.name.clone()));
    }
    Ok(lease)
}

fn keep_alive(s: &Shared) {
    let every = Duration::from_millis((s.ttl as u64 * 1000 / 3).max(300));
    while !s.stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(every);
        if s.stop.load(Ordering::Relaxed) {
            break;
        }
        match s.etcd.keep_alive(s.lease.load(Ordering::Relaxed)) {
            Ok(0) => {
                // Expired while etcd could not be reached: the cluster
                // took the node for dead. Register again (the name is
                // free once the old record went with the lease).
                if let Ok(lease) = register(&s.etcd, &s.node, s.ttl) {
                    s.lease.store(lease, Ordering::Relaxed);
                    s.renewals.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(_) => s.failing.store(0, Ordering::Relaxed),
            Err(_) => {
                s.failing.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The live nodes.
pub fn nodes(etcd: &Etcd) -> Result<Vec<Node>, Error> {
    let r = etcd.range_prefix(&node_key(""))?;
    Ok(r.kvs
        .iter()
        .filter_map(|kv| Node::from_json(&kv.value))
        .collect())
}

/// Who leads the scheduling, and since which revision (the fencing token).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leader {
    /// The leading node.
    pub node: String,
    /// The revision its leadership began at.
    pub since: i64,
}

/// Tries to become the scheduler as `node`, on `lease`: the leader after
/// it (this node, or the one that already leads).
pub fn campaign(etcd: &Etcd, node: &str, lease: i64) -> Result<Option<Leader>, Error> {
    let key = scheduler_key();
    etcd.txn(
        &[Compare::CreateRevision(key.clone(), 0)],
        &[Op::Put {
            key,
            value: node.as_bytes().to_vec(),
            lease,
        }],
        &[],
    )?;
    leader(etcd)
}

/// The scheduler now, if there is one.
pub fn leader(etcd: &Etcd) -> Result<Option<Leader>, Error> {
    Ok(etcd.get(&scheduler_key())?.map(|kv| Leader {
        node: String::from_utf8_lossy(&kv.value).into_owned(),
        since: kv.create_revision,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_record_round_trips() {
        let n = Node {
            name: "n1".into(),
            memory_mib: 16384,
            cpus: 8,
            slots: 1000,
            tunnel: Some("10.0.0.1:4789".into()),
            api: Some("127.0.0.1:7117".into()),
            peer: Some(PeerApi {
                addr: "10.0.0.1:7118".into(),
                sha256: "ab".repeat(32),
            }),
        };
        let v: serde_json::Value = serde_json::from_slice(&n.to_json()).expect("json");
        assert_eq!(
            v,
            json!({"name": "n1", "memory_mib": 16384, "cpus": 8, "slots": 1000,
                   "tunnel": "10.0.0.1:4789", "api": "127.0.0.1:7117",
                   "peer_api": {"addr": "10.0.0.1:7118", "sha256": "ab".repeat(32)}})
        );
        assert_eq!(Node::from_json(&n.to_json()), Some(n));
        assert_eq!(Node::from_json(b"{}"), None);
    }
}
