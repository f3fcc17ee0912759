//! pronto's Click element library.
//!
//! Each element is one file, grouped as Click groups them: `standard/`
//! (queues, counters, switches, sources, sinks), `ip/`, `ethernet/`,
//! `tcpudp/`, `icmp/`, `aqm/`, `app/` (trace files), and pronto's own
//! `ids/` (payload inspection), `stateful/` (connection-tracking
//! firewall, carrier-grade NAT) and `nfp/` (parallel service chains:
//! tag, copy, merge). Every element declares a [`Spec`]
//! (Click name, ports, processing, keywords, documentation, action
//! profile) and is listed in [`registry`].

mod args;
pub mod chatter;
mod element;
pub mod files;
pub mod random;
pub mod registry;
pub mod util;
pub mod world;

pub mod analysis;
pub mod app;
pub mod aqm;
pub mod bras;
pub mod ethernet;
pub mod icmp;
pub mod ids;
pub mod ip;
pub mod ip6;
pub mod nfp;
pub mod simple;
pub mod standard;
pub mod stateful;
pub mod tcpudp;
pub mod test;
pub mod threads;
pub mod userlevel;
pub mod vpn;

pub use args::{
    Args, Bandwidth, ConfigError, EtherAddr, FromArg, Ip4, Ip6, Ip6Prefix, IpPrefix, Raw, Seconds,
    TimestampArg,
};
pub use element::*;
