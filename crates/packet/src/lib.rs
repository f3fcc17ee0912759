//! pronto's packets: a pool of fixed slots in one memfd-backed region, packet
//! handles that own a slot, batches of handles, and Click's annotations.
//!
//! Invariants:
//! - A packet's bytes never leave its slot; a packet is one pointer.
//! - Allocation and free are a pop and a push on the pool's free stack: no
//!   heap allocation per packet.
//! - `unsafe` in this crate is limited to mapping the region, viewing
//!   slots and enabling a CPU instruction found at run time ([`cpu`]);
//!   every block states why it is sound.

mod batch;
pub mod cpu;
pub mod mmap;
mod packet;
mod pool;
mod portpool;
pub mod table;
pub mod wire;

pub use batch::{Batch, Drain, BATCH_MAX};
pub use packet::*;
pub use pool::{
    Account, Pool, PoolCounters, PoolError, BUFFER_SIZE, DEFAULT_HEADROOM, HEADER_SIZE, MAX_PACKET,
    SLOT_STRIDE,
};
pub use portpool::PortPool;
