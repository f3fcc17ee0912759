//! pronto's shared-memory rings: how packets move between processes.
//!
//! A middlebox and the switch exchange packets as descriptors (slot index,
//! offset in the slot, length) on single-producer/single-consumer rings ([`ring`]) that live in
//! memfd regions ([`shm`]) both processes map; the packet bytes stay in a
//! packet pool. Each direction has a [`doorbell::Doorbell`] (eventfd, or a
//! signal for a child the producer holds no descriptor of) that
//! the producer rings only when the consumer announced it is going to
//! sleep, so busy rings run without system calls and idle ones cost no CPU.
//!
//! This crate is one of the few that contain `unsafe`: mapping the regions
//! and viewing their bytes as atomics. Every value read from a region was
//! written by a peer that may be hostile, and is checked before use.

pub mod doorbell;
pub mod fdpass;
pub mod ring;
pub mod shm;

pub use doorbell::{Doorbell, SignalBell, WAKE_SIGNAL};
pub use ring::{create, Consumer, Desc, DescError, Producer, RingError, RingFaults};
pub use shm::SharedRegion;
