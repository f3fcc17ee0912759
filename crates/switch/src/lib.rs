//! pronto's shared-memory L2 switch: virtual ports between middleboxes,
//! in the manner of VALE/netmap.
//!
//! Each port is one peer's shared region ([`layout`]): a pool of fixed
//! packet slots that both the peer and the switch map, and four
//! single-producer/single-consumer rings of descriptors (`slot`, `off`,
//! `len`):
//!
//! | ring | producer → consumer | carries |
//! |---|---|---|
//! | `rx` | peer → switch | frames the peer sends |
//! | `done` | switch → peer | those frames' slots, once copied (the peer may reuse them) |
//! | `fill` | peer → switch | empty slots the switch may write frames into |
//! | `tx` | switch → peer | frames delivered to the peer (in slots it filled) |
//!
//! The peer owns every slot and decides which ones it lends out: slots it
//! sends return on `done`, slots it lends on `fill` return filled on `tx`
//! (the AF_XDP "UMEM" split, which lets a pronto packet pool be the port's
//! pool later). The switch copies each frame's bytes from the sender's
//! pool into a receiver's slot, so no tenant ever maps another's memory,
//! and checks every index, offset and length a peer wrote before touching
//! a byte; a bad one is counted against that port and skipped.
//!
//! Each port has two doorbells: the switch sleeps on the peers' doorbells
//! (eventfds in an epoll set) when all ports are idle, and rings a peer's
//! doorbell (an eventfd, or a signal to a child process) only when that
//! peer announced it is going to sleep.
//!
//! [`switch::Switch`] is the forwarding engine (MAC table with optional
//! learning and aging, flooding, per-port counters, run-time attach and
//! detach, up to 65,536 ports); [`switch::SwitchHandle`] runs it on one or
//! more threads, ports spread over them. [`peer::Peer`] is a port's other end: `FromDevice` and
//! `ToDevice` under `pronto run --switch`, tests and benches. [`control`]
//! is the unix socket through which processes ask the switch for ports.
//!
//! This crate holds no `unsafe`: every access to shared bytes goes through
//! `pronto_ring::SharedRegion`'s bounds-checked copies and atomics.

#![forbid(unsafe_code)]

pub mod capture;
pub mod control;
pub mod layout;
pub mod peer;
pub mod police;
pub mod switch;
pub mod table;

pub use capture::{Capture, CaptureSpec, Captured, Direction};
pub use layout::{Geometry, PeerBell, PortError, PortShm};
pub use peer::{Frame, Peer};
pub use police::RateLimit;
pub use switch::{
    Config, Local, PortCounters, PortStats, Revived, Switch, SwitchError, SwitchHandle, ThreadInfo,
};

/// Pins the calling thread to CPU `cpu` (benchmarks; `pronto switch
/// --cpu`): a switching thread that migrates between cores loses its
/// caches and, on a small machine, shares a core with its peers.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    if cpu >= rustix::thread::CpuSet::MAX_CPU {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "CPU {cpu} is out of range (0 to {})",
                rustix::thread::CpuSet::MAX_CPU - 1
            ),
        ));
    }
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)?;
    Ok(())
}

/// Raises this process's open-file limit to its hard maximum, or as root
/// to the kernel's `nr_open` (a port attached through the control socket
/// keeps one descriptor in the switch process, the peer's doorbell; one
/// made in process keeps three until handed over). Returns the new soft
/// limit.
pub fn raise_fd_limit() -> std::io::Result<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    // As root (CAP_SYS_RESOURCE) the hard limit itself may rise to the
    // kernel's `nr_open`: a daemon with thousands of instances holds
    // several descriptors for each.
    let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    if let Some(n) = nr_open {
        if lim.maximum.is_some_and(|m| m < n) {
            let raised = rustix::process::Rlimit {
                current: Some(n),
                maximum: Some(n),
            };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                return Ok(n);
            }
        }
    }
    if lim.current != lim.maximum {
        lim.current = lim.maximum;
        setrlimit(Resource::Nofile, lim)?;
    }
    Ok(lim.current.unwrap_or(u64::MAX))
}
