//! prontod: the daemon that owns pronto's switch and its sandboxed
//! middlebox instances, and serves the REST API that creates, inspects,
//! reconfigures and destroys them.
//!
//! - [`store`]: the desired state (tenants, instances, static MACs) in an
//!   embedded redb database, so that every instance comes back after the
//!   daemon restarts or crashes.
//! - [`manager`]: one supervisor thread per instance: starts its sandbox,
//!   hands it its switch ports and configuration, serves handler calls,
//!   restarts it with back-off when it crashes.
//! - [`api`]: the HTTP API (unix socket and loopback TCP), tenants and
//!   tokens; [`metrics`]: the Prometheus exposition.
//!
//! The contract is `docs/openapi.yaml`.

pub mod api;
mod control;
pub mod manager;
pub mod metrics;
pub mod store;

pub use api::{serve, Options};
