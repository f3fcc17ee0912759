//! prontod: the daemon that owns pronto's switch and its sandboxed
//! middlebox instances, and serves the REST API that creates, inspects,
//! reconfigures and destroys them.
//!
//! - [`store`]: the desired state (tenants and their quotas, instances,
//!   static MACs) in an embedded redb database, so that every instance
//!   comes back after the daemon restarts or crashes.
//! - [`manager`]: the operations on instances (one at a time per name,
//!   stored before they are answered), one supervisor thread per instance
//!   that starts its sandbox, hands it its switch ports and configuration
//!   and restarts it with back-off when it crashes.
//! - [`quota`]: what each tenant may ask for.
//! - [`api`]: the HTTP API (unix socket and loopback TCP), tenants and
//!   tokens; [`audit`]: the log of every change asked of the API;
//!   [`metrics`]: the Prometheus exposition; [`failure`]: errors
//!   and what a client may see of them; [`cluster`]: cluster mode
//!   (`--cluster`), the node's registration and its agent on etcd.
//!
//! The contract is `docs/openapi.yaml`.

#![forbid(unsafe_code)]

pub mod api;
pub mod audit;
pub mod capture;
pub mod cluster;
mod console;
mod control;
pub mod failure;
pub mod manager;
pub mod metrics;
pub mod quota;
pub mod store;

pub use api::{serve, Options};
