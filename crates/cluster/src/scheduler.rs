//! The scheduler's pass: read the live nodes, the instances and their
//! placements from etcd, place (see [`crate::placement`]), and write what
//! changed in transactions fenced by the scheduler's leadership, so that a
//! scheduler deposed while it computed writes nothing.
//!
//! Keys (under [`crate::node::ROOT`]; docs/cluster.md):
//! - `instances/NAME`: the desired instance, JSON; the scheduler reads
//!   `tenant`, `memory_mib`, `millicpus`, `node` (a pin), `prefer_node` (a preference) and `group` (a
//!   chain) and leaves the rest to the node that runs it;
//! - `placements/NAME`: `{"node": NODE, "token": T}`, where `T` is the
//!   leadership token of the scheduler that wrote it;
//! - `assigned/NODE/NAME`: the same placement under its node, written in
//!   the same transaction, so that a node watches only its own prefix (a
//!   change reaches one node, not every node).

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::etcd::{Compare, Error, Etcd, Op};
use crate::node::{self, Leader, ROOT};
use crate::placement::{self, Capacity, Demand, Plan};

/// Operations per transaction (etcd refuses more than 128 by default).
const TXN_OPS: usize = 100;

/// Why a pass did not complete.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// etcd could not be reached or refused.
    #[error(transparent)]
    Etcd(#[from] Error),
    /// Another node leads now: this one must stop scheduling.
    #[error(
        "this node no longer leads the scheduling (another scheduler was elected): nothing written"
    )]
    Deposed,
}

/// An instance's key.
pub fn instance_key(name: &str) -> Vec<u8> {
    format!("{ROOT}instances/{name}").into_bytes()
}

/// An instance's placement key.
pub fn placement_key(name: &str) -> Vec<u8> {
    format!("{ROOT}placements/{name}").into_bytes()
}

/// An instance's key under the node it is placed on.
pub fn assigned_key(node: &str, name: &str) -> Vec<u8> {
    format!("{ROOT}assigned/{node}/{name}").into_bytes()
}

/// The name under a prefix's key.
fn name_of(key: &[u8], prefix: &[u8]) -> Option<String> {
    key.strip_prefix(prefix)
        .and_then(|n| std::str::from_utf8(n).ok())
        .map(str::to_string)
}

/// What an instance's stored JSON asks for.
pub fn demand(name: &str, v: &Value) -> Demand {
    Demand {
        name: name.to_string(),
        tenant: v["tenant"].as_str().unwrap_or("").to_string(),
        memory_mib: v["memory_mib"].as_u64().unwrap_or(0),
        millicpus: v["millicpus"].as_u64().unwrap_or(0),
        pin: v["node"].as_str().map(str::to_string),
        group: v["group"].as_str().map(str::to_string),
        prefer: v["prefer_node"].as_str().map(str::to_string),
    }
}

/// Every instance's placement now: name -> node.
pub fn placements(etcd: &Etcd) -> Result<HashMap<String, String>, Error> {
    let prefix = placement_key("");
    let r = etcd.range_prefix(&prefix)?;
    Ok(r.kvs
        .iter()
        .filter_map(|kv| {
            let name = name_of(&kv.key, &prefix)?;
            let v: Value = serde_json::from_slice(&kv.value).ok()?;
            Some((name, v["node"].as_str()?.to_string()))
        })
        .collect())
}

/// One pass as scheduler `me`: places what has no live node and writes
/// it; placements of instances that no longer exist, or that cannot be
/// placed, are removed.
pub fn schedule_once(etcd: &Etcd, me: &Leader) -> Result<Plan, ScheduleError> {
    let nodes: Vec<Capacity> = node::nodes(etcd)?
        .into_iter()
        .map(|n| Capacity {
            node: n.name,
            slots: n.slots,
            memory_mib: n.memory_mib,
            millicpus: u64::from(n.cpus) * 1000,
        })
        .collect();
    let prefix = instance_key("");
    let instances = etcd.range_prefix(&prefix)?;
    let demands: Vec<Demand> = instances
        .kvs
        .iter()
        .filter_map(|kv| {
            let name = name_of(&kv.key, &prefix)?;
            let v: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
            Some(demand(&name, &v))
        })
        .collect();
    let current = placements(etcd)?;
    let plan = placement::place(&nodes, &demands, &current);

    // A placement's keys move together (at most 3 operations each, so
    // that a transaction never splits one).
    let mut ops: Vec<[Option<Op>; 3]> = Vec::new();
    for (name, node) in &plan.changed {
        let value = json!({ "node": node, "token": me.since })
            .to_string()
            .into_bytes();
        let old = current
            .get(name)
            .map(|old| Op::Delete(assigned_key(old, name)));
        ops.push([
            Some(Op::Put {
                key: placement_key(name),
                value: value.clone(),
                lease: 0,
            }),
            Some(Op::Put {
                key: assigned_key(node, name),
                value,
                lease: 0,
            }),
            old,
        ]);
    }
    for (name, node) in &current {
        if !plan.placed.contains_key(name) {
            ops.push([
                Some(Op::Delete(placement_key(name))),
                Some(Op::Delete(assigned_key(node, name))),
                None,
            ]);
        }
    }
    let fence = [
        Compare::Value(node::scheduler_key(), me.node.as_bytes().to_vec()),
        Compare::CreateRevision(node::scheduler_key(), me.since),
    ];
    // With nothing to write, the fence alone says whether this node still
    // leads.
    let mut chunks: Vec<Vec<Op>> = ops
        .chunks(TXN_OPS / 3)
        .map(|c| c.iter().flatten().flatten().cloned().collect())
        .collect();
    if chunks.is_empty() {
        chunks.push(Vec::new());
    }
    for chunk in &chunks {
        let (ok, _) = etcd.txn(&fence, chunk, &[])?;
        if !ok {
            return Err(ScheduleError::Deposed);
        }
    }
    Ok(plan)
}
