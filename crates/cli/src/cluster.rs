//! `pronto cluster nodes|status`: the cluster's state as etcd holds it
//! (docs/cluster.md), read from any member.

use std::collections::BTreeMap;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use pronto_cluster::node;
use pronto_cluster::{scheduler, Etcd};

use crate::cli::Global;
use crate::out;
use crate::table::{Align, Table};

/// `pronto cluster`'s subcommands.
#[derive(Subcommand, Debug)]
pub enum ClusterCmd {
    /// The live nodes: capacity, tunnel address, instances placed on each.
    #[command(
        after_help = "Example:\n  pronto cluster nodes --etcd http://10.0.0.1:2379,http://10.0.0.2:2379"
    )]
    Nodes(EtcdArgs),
    /// The scheduler, and every instance: the node it is placed on, or that it waits.
    #[command(after_help = "Example:\n  pronto cluster status --etcd http://127.0.0.1:2379")]
    Status(EtcdArgs),
}

/// Where the cluster's etcd is.
#[derive(Args, Debug)]
pub struct EtcdArgs {
    /// The etcd members (http://HOST:PORT, several separated by commas).
    #[arg(long, value_name = "ENDPOINTS")]
    pub etcd: String,
}

/// Runs `pronto cluster ...`.
pub fn main(cmd: ClusterCmd, g: &Global) -> ExitCode {
    match run(cmd, g.json) {
        Ok(text) => out::print(&text),
        Err(e) => {
            eprintln!("pronto cluster: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cmd: ClusterCmd, json: bool) -> Result<String, String> {
    let (args, status) = match cmd {
        ClusterCmd::Nodes(a) => (a, false),
        ClusterCmd::Status(a) => (a, true),
    };
    let etcd = Etcd::new(&args.etcd).map_err(|e| e.to_string())?;
    let nodes = node::nodes(&etcd).map_err(|e| e.to_string())?;
    let placements = scheduler::placements(&etcd).map_err(|e| e.to_string())?;
    let prefix = scheduler::instance_key("");
    let instances: Vec<String> = etcd
        .range_prefix(&prefix)
        .map_err(|e| e.to_string())?
        .kvs
        .iter()
        .map(|kv| String::from_utf8_lossy(&kv.key[prefix.len()..]).into_owned())
        .collect();
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for n in placements.values() {
        *per_node.entry(n.as_str()).or_default() += 1;
    }
    if !status {
        if json {
            let v: Vec<serde_json::Value> = nodes
                .iter()
                .map(|n| {
                    serde_json::json!({
                        "name": n.name, "slots": n.slots, "memory_mib": n.memory_mib,
                        "cpus": n.cpus, "tunnel": n.tunnel,
                        "instances": per_node.get(n.name.as_str()).copied().unwrap_or(0),
                        "api": n.peer.as_ref().map(|p| format!("https://{}", p.addr)),
                        "sha256": n.peer.as_ref().map(|p| p.sha256.clone()),
                    })
                })
                .collect();
            return Ok(format!("{}\n", serde_json::Value::Array(v)));
        }
        let mut t = Table::new(&[
            ("NODE", Align::Left),
            ("INSTANCES", Align::Right),
            ("SLOTS", Align::Right),
            ("MEMORY_MIB", Align::Right),
            ("CPUS", Align::Right),
            ("TUNNEL", Align::Left),
            ("API", Align::Left),
            ("CERTIFICATE SHA-256", Align::Left),
        ]);
        for n in &nodes {
            t.row([
                n.name.clone(),
                per_node
                    .get(n.name.as_str())
                    .copied()
                    .unwrap_or(0)
                    .to_string(),
                n.slots.to_string(),
                n.memory_mib.to_string(),
                n.cpus.to_string(),
                n.tunnel.clone().unwrap_or_else(|| "-".into()),
                n.peer
                    .as_ref()
                    .map_or_else(|| "-".into(), |p| format!("https://{}", p.addr)),
                n.peer
                    .as_ref()
                    .map_or_else(|| "-".into(), |p| p.sha256.clone()),
            ]);
        }
        return Ok(t.render());
    }
    let leader = node::leader(&etcd).map_err(|e| e.to_string())?;
    let live: std::collections::HashSet<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
    let where_ = |i: &str| -> (String, &'static str) {
        match placements.get(i) {
            Some(n) if live.contains(n.as_str()) => (n.clone(), "placed"),
            Some(n) => (n.clone(), "node lost"),
            None => ("-".into(), "waiting"),
        }
    };
    if json {
        let v: Vec<serde_json::Value> = instances
            .iter()
            .map(|i| {
                let (n, s) = where_(i);
                serde_json::json!({ "name": i, "node": n, "state": s })
            })
            .collect();
        let l = leader.map(|l| serde_json::json!({ "node": l.node, "since": l.since }));
        return Ok(format!(
            "{}\n",
            serde_json::json!({ "scheduler": l, "nodes": nodes.len(), "instances": v })
        ));
    }
    let mut s = match &leader {
        Some(l) => format!("scheduler: {} (since revision {})\n", l.node, l.since),
        None => {
            "scheduler: none elected (no node is campaigning, or its lease just ended)\n".into()
        }
    };
    s.push_str(&format!("nodes: {} live\n\n", nodes.len()));
    let mut t = Table::new(&[
        ("INSTANCE", Align::Left),
        ("NODE", Align::Left),
        ("STATE", Align::Left),
    ]);
    for i in &instances {
        let (n, st) = where_(i);
        t.row([i.clone(), n, st.to_string()]);
    }
    s.push_str(&t.render());
    Ok(s)
}
