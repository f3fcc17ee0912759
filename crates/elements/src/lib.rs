//! pronto's Click element library.
//!
//! Each element is one file, grouped as Click groups them: `standard/`
//! (queues, counters, switches, sources, sinks), `ip/`, `ethernet/`,
//! `tcpudp/`, `app/` (trace files). Every element declares a [`Spec`]
//! (Click name, ports, processing, keywords, documentation, action
//! profile) and is listed in [`registry`].

mod args;
mod element;
pub mod registry;
pub mod util;

pub mod app;
pub mod ethernet;
pub mod ip;
pub mod standard;
pub mod tcpudp;

pub use args::{
    Args, Bandwidth, ConfigError, EtherAddr, FromArg, Ip4, IpPrefix, Raw, Seconds, TimestampArg,
};
pub use element::*;
