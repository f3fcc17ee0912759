//! Where each instance runs: a pure function of the live nodes, what each
//! instance asks for and where instances already run.
//!
//! Rules, in order:
//! 1. An instance placed on a live node stays there (placements are
//!    stable: a new node or a new instance moves nothing that runs).
//! 2. A pinned instance (`--node`) goes to its node or nowhere (and says
//!    why).
//! 3. An instance with a preferred node (`prefer_node`, `pronto chain
//!    apply --nodes`) goes there if that node is live and has room;
//!    otherwise (its node dead or full) it is placed as any other (4): a
//!    preference, unlike a pin, does not keep it from failing over.
//! 4. Otherwise it goes to a node with room (a free slot, the memory and
//!    the CPUs it asks for), preferring, in order: a node already running
//!    instances of its group (a chain's NFs kept together: fewer tunnel
//!    crossings), a node running none of its tenant's instances (a
//!    tenant's instances spread: one node's death takes as few of them as
//!    possible), the node with the most free slots, then by name (the
//!    same input always gives the same placement).
//!
//! Instances are placed in name order, a group's members together, so
//! that one pass is deterministic and a chain's first member draws the
//! rest after it.

use std::collections::{BTreeMap, HashMap};

/// What a node offers (capacity for instances).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// The node's name.
    pub node: String,
    /// Instances it may run.
    pub slots: u32,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// CPUs, in thousandths.
    pub millicpus: u64,
}

/// What an instance asks for.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Demand {
    /// The instance's name.
    pub name: String,
    /// Its tenant (instances of one tenant are spread).
    pub tenant: String,
    /// Memory, MiB.
    pub memory_mib: u64,
    /// CPUs, in thousandths.
    pub millicpus: u64,
    /// The node it must run on, if pinned.
    pub pin: Option<String>,
    /// Its group (a chain): members are kept on one node where they fit.
    pub group: Option<String>,
    /// The node it goes to first, if live with room (not a pin).
    pub prefer: Option<String>,
}

/// One pass's result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Every instance that has a node: name -> node (those that stay
    /// included).
    pub placed: BTreeMap<String, String>,
    /// Instances that moved or were placed for the first time in this
    /// pass: name -> node.
    pub changed: BTreeMap<String, String>,
    /// Instances with no node, and why.
    pub unplaced: BTreeMap<String, String>,
}

#[derive(Clone, Debug)]
struct Room {
    slots: u64,
    memory: u64,
    cpus: u64,
    tenants: HashMap<String, u32>,
    groups: HashMap<String, u32>,
}

impl Room {
    fn fits(&self, d: &Demand) -> bool {
        self.slots >= 1 && self.memory >= d.memory_mib && self.cpus >= d.millicpus
    }

    fn take(&mut self, d: &Demand) {
        self.slots = self.slots.saturating_sub(1);
        self.memory = self.memory.saturating_sub(d.memory_mib);
        self.cpus = self.cpus.saturating_sub(d.millicpus);
        *self.tenants.entry(d.tenant.clone()).or_default() += 1;
        if let Some(g) = &d.group {
            *self.groups.entry(g.clone()).or_default() += 1;
        }
    }
}

/// Places `demands` on `nodes`, keeping `current` placements on live
/// nodes.
pub fn place(nodes: &[Capacity], demands: &[Demand], current: &HashMap<String, String>) -> Plan {
    let mut rooms: BTreeMap<&str, Room> = nodes
        .iter()
        .map(|n| {
            (
                n.node.as_str(),
                Room {
                    slots: u64::from(n.slots),
                    memory: n.memory_mib,
                    cpus: n.millicpus,
                    tenants: HashMap::new(),
                    groups: HashMap::new(),
                },
            )
        })
        .collect();
    let mut plan = Plan::default();
    // Those that stay take their room first.
    let mut todo: Vec<&Demand> = Vec::new();
    for d in demands {
        let stays = current
            .get(&d.name)
            .filter(|n| rooms.contains_key(n.as_str()) && d.pin.as_ref().is_none_or(|p| p == *n));
        match stays {
            Some(n) => {
                if let Some(r) = rooms.get_mut(n.as_str()) {
                    r.take(d);
                }
                plan.placed.insert(d.name.clone(), n.clone());
            }
            None => todo.push(d),
        }
    }
    // Groups together, then by name.
    todo.sort_by(|a, b| (&a.group, &a.name).cmp(&(&b.group, &b.name)));
    for d in todo {
        let choice = match &d.pin {
            Some(p) => match rooms.get(p.as_str()) {
                None => Err(format!("pinned to node `{p}`, which is not live")),
                Some(r) if !r.fits(d) => Err(format!("pinned to node `{p}`, which has no room")),
                Some(_) => Ok(p.clone()),
            },
            None => match d
                .prefer
                .as_deref()
                .filter(|p| rooms.get(*p).is_some_and(|r| r.fits(d)))
            {
                Some(p) => Ok(p.to_string()),
                None => rooms
                    .iter()
                    .filter(|(_, r)| r.fits(d))
                    .max_by_key(|(name, r)| {
                        let group = d
                            .group
                            .as_ref()
                            .map_or(0, |g| r.groups.get(g).copied().unwrap_or(0));
                        let tenant = r.tenants.get(&d.tenant).copied().unwrap_or(0);
                        // Max: most group members, fewest of the tenant's,
                        // most free slots, then the first name.
                        (
                            group,
                            std::cmp::Reverse(tenant),
                            r.slots,
                            std::cmp::Reverse(*name),
                        )
                    })
                    .map(|(name, _)| (*name).to_string())
                    .ok_or_else(|| "no live node has room (slots, memory, CPUs)".to_string()),
            },
        };
        match choice {
            Ok(n) => {
                if let Some(r) = rooms.get_mut(n.as_str()) {
                    r.take(d);
                }
                plan.placed.insert(d.name.clone(), n.clone());
                plan.changed.insert(d.name.clone(), n);
            }
            Err(why) => {
                plan.unplaced.insert(d.name.clone(), why);
            }
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(n: &str, slots: u32) -> Capacity {
        Capacity {
            node: n.into(),
            slots,
            memory_mib: 1 << 20,
            millicpus: 1 << 20,
        }
    }

    fn inst(name: &str, tenant: &str) -> Demand {
        Demand {
            name: name.into(),
            tenant: tenant.into(),
            memory_mib: 64,
            millicpus: 250,
            ..Demand::default()
        }
    }

    #[test]
    fn a_tenants_instances_spread_and_placements_stay() {
        let nodes = [node("n1", 10), node("n2", 10), node("n3", 10)];
        let d: Vec<Demand> = ["a", "b", "c"].iter().map(|n| inst(n, "t")).collect();
        let p = place(&nodes, &d, &HashMap::new());
        let on: Vec<&str> = p.placed.values().map(String::as_str).collect();
        assert_eq!(on, ["n1", "n2", "n3"]);
        assert_eq!(p.changed.len(), 3);
        // A fourth node and a fourth instance move nothing that runs.
        let current: HashMap<String, String> = p.placed.clone().into_iter().collect();
        let nodes4 = [
            node("n0", 10),
            node("n1", 10),
            node("n2", 10),
            node("n3", 10),
        ];
        let mut d4 = d.clone();
        d4.push(inst("d", "t"));
        let p4 = place(&nodes4, &d4, &current);
        assert_eq!(
            p4.changed,
            BTreeMap::from([("d".to_string(), "n0".to_string())])
        );
        assert_eq!(p4.placed.len(), 4);
    }

    #[test]
    fn a_dead_nodes_instances_go_to_live_ones_and_a_chain_stays_together() {
        let mut d: Vec<Demand> = (0..4).map(|i| inst(&format!("fw{i}"), "t")).collect();
        for n in ["c-a", "c-b", "c-c"] {
            let mut x = inst(n, "u");
            x.group = Some("chain".into());
            d.push(x);
        }
        let current: HashMap<String, String> =
            [("fw0", "n1"), ("fw1", "n2"), ("fw2", "n1"), ("fw3", "n2")]
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect();
        // n1 died.
        let p = place(&[node("n2", 10), node("n3", 10)], &d, &current);
        assert_eq!(p.placed["fw1"], "n2");
        assert_eq!(p.placed["fw3"], "n2");
        // fw0 and fw2 move, to the node with fewer of the tenant's first.
        assert_eq!(p.changed["fw0"], "n3");
        assert_eq!(p.changed["fw2"], "n3");
        // The chain's members sit together.
        let chain: Vec<&str> = ["c-a", "c-b", "c-c"]
            .iter()
            .map(|n| p.placed[*n].as_str())
            .collect();
        assert!(chain.iter().all(|n| *n == chain[0]), "{chain:?}");
        assert!(p.unplaced.is_empty());
    }

    #[test]
    fn a_preferred_node_is_taken_while_live_and_a_group_follows_when_it_dies() {
        // A chain of three: the entry prefers n1, the NF n2 (as `chain
        // apply --nodes n1,n2` asks), the last member has no preference.
        let mut d = Vec::new();
        for (n, p) in [
            ("c-entry", Some("n1")),
            ("c-nf", Some("n2")),
            ("c-out", None),
        ] {
            let mut x = inst(n, "t");
            x.group = Some("c".into());
            x.prefer = p.map(str::to_string);
            d.push(x);
        }
        let nodes = [node("n1", 10), node("n2", 10), node("n3", 10)];
        let p = place(&nodes, &d, &HashMap::new());
        assert_eq!(p.placed["c-entry"], "n1");
        assert_eq!(p.placed["c-nf"], "n2");
        // The member without a preference joins its group.
        assert!(["n1", "n2"].contains(&p.placed["c-out"].as_str()));
        // n2 dies: the NF is not stuck (as a pinned one would be), it
        // goes where its group runs.
        let current: HashMap<String, String> = p.placed.clone().into_iter().collect();
        let p2 = place(&[node("n1", 10), node("n3", 10)], &d, &current);
        assert_eq!(p2.changed["c-nf"], "n1");
        assert!(p2.unplaced.is_empty());
        // n2 back: nothing moves back (placements are stable).
        let current: HashMap<String, String> = p2.placed.clone().into_iter().collect();
        let p3 = place(&nodes, &d, &current);
        assert!(p3.changed.is_empty(), "{:?}", p3.changed);
        // A preferred node without room: placed elsewhere, not refused.
        let mut big = inst("big", "u");
        big.prefer = Some("n1".into());
        let p4 = place(&[node("n1", 0), node("n2", 1)], &[big], &HashMap::new());
        assert_eq!(p4.placed["big"], "n2");
    }

    #[test]
    fn room_and_pins_are_honoured_and_what_cannot_be_placed_says_why() {
        let mut big = inst("big", "t");
        big.memory_mib = 2 << 20;
        let mut pinned = inst("pinned", "t");
        pinned.pin = Some("n2".into());
        let mut lost = inst("lost", "t");
        lost.pin = Some("n9".into());
        let d = vec![inst("a", "t"), inst("b", "t"), big, pinned, lost];
        let p = place(&[node("n1", 1), node("n2", 2)], &d, &HashMap::new());
        assert_eq!(p.placed["pinned"], "n2");
        assert_eq!(
            p.unplaced["big"],
            "no live node has room (slots, memory, CPUs)"
        );
        assert_eq!(p.unplaced["lost"], "pinned to node `n9`, which is not live");
        // a, b and pinned fill the three slots.
        assert_eq!(p.placed.len(), 3);
        let mut full = inst("late", "t");
        full.pin = Some("n1".into());
        let current: HashMap<String, String> = p.placed.clone().into_iter().collect();
        let mut d2 = d.clone();
        d2.push(full);
        let p2 = place(&[node("n1", 1), node("n2", 2)], &d2, &current);
        assert_eq!(
            p2.unplaced["late"],
            "pinned to node `n1`, which has no room"
        );
    }
}
