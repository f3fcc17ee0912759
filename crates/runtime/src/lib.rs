//! pronto's Click runtime.
//!
//! [`Router::build`] turns a flat configuration into a checked graph of
//! configured elements (every error at once, each with its source span);
//! [`Router::run`] runs it until the driver stops. The runtime does no I/O
//! of its own (elements do) and takes time from its [`Clock`], so a run
//! under simulated time is deterministic.

pub mod controlsocket;
mod graph;
mod notify;
mod progressbar;
mod quitwatcher;
mod remote;
mod router;
mod script;
mod staticthreadsched;
mod threads;
mod trace;

pub use remote::Remote;
pub use router::{
    all_classes, explain_unknown_classes, format_timestamp, is_known_class, lookup_class,
    wall_clock_ns, Accounting, CallError, Clock, CountersLine, ElementCounters, Router,
    RouterOptions, DEFAULT_POOL_LIMIT,
};
pub use threads::{partition, Partition, Threads, MAX_THREADS};
