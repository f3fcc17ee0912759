//! pronto's cluster layer.
//!
//! Several `prontod` nodes share one desired state in etcd, each keeping
//! its own registration alive under a lease and converging on what is
//! placed on it. This crate holds what they share: [`etcd`], a client of
//! etcd's v3 API (key-value ranges, transactions, leases, watches) that
//! moves between the members of the cluster when one is lost; and [`node`],
//! a node's registration under a lease it keeps alive, and the election
//! of the one scheduler; [`placement`], where each instance runs (a pure
//! function: stable, spread by tenant, chains together, pins and room
//! honoured); [`scheduler`], the scheduler's pass over etcd, its writes
//! fenced by its leadership; [`agent`], what runs on every node: following
//! its own placements, and the scheduling loop on the elected one;
//! [`watch`], the one loop that follows a prefix (list, then watch from
//! the list's revision, list again after a compaction); [`testing`], real etcd members started for tests and experiments.

pub mod agent;
pub mod etcd;
pub mod node;
pub mod placement;
pub mod scheduler;
pub mod testing;
pub mod watch;

pub use etcd::{Compare, Etcd, Event, KeyValue, Op, Range, Watch};
pub use node::{Leader, Node, Registration};
