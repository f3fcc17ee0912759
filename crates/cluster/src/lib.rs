//! pronto's cluster layer.
//!
//! Several `prontod` nodes share one desired state in etcd, each keeping
//! its own registration alive under a lease and converging on what is
//! placed on it. This crate holds what they share: [`etcd`], a client of
//! etcd's v3 API (key-value ranges, transactions, leases, watches) that
//! moves between the members of the cluster when one is lost.

pub mod etcd;

pub use etcd::{Compare, Etcd, Event, KeyValue, Op, Range, Watch};
