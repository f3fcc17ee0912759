//! Uplinks: the daemon's switch on a Linux interface.
//!
//! `pronto daemon --uplink IFACE` attaches a switch port named
//! `uplink/IFACE` whose other end is the interface itself: frames the
//! interface receives enter the switch, and frames the switch sends to the
//! port leave by the interface. Instances' interfaces and the hosts (or
//! namespaces, or a physical network) behind IFACE are then one layer-2
//! segment, as a VALE switch's NIC port makes them.
//!
//! One thread per uplink moves frames both ways through `pronto-netdev`'s
//! packet-socket rings (`Method::Ring`: checksums the sender left to the
//! device are completed and TSO frames cut into segments on receive, as
//! for `FromDevice`). The interface is put in promiscuous mode while the
//! uplink is open, since frames for instances' MACs arrive on it. The
//! thread polls while frames move and sleeps on the interface and on the
//! port's doorbell when both are quiet.
//!
//! Every frame either crosses or is counted: frames the switch's port had
//! no room for (`to_switch_dropped`), frames the interface refused
//! (`to_iface_dropped`), and the receive ring's own drops (oversize frames,
//! kernel drops), all in `GET /metrics` as
//! `pronto_uplink_dropped_total{uplink,reason}`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pronto_netdev::{Method, RxConfig, RxDevice, Sent, TxDevice};
use pronto_packet::{Batch, Pool};
use pronto_switch::{Peer, PortShm};

/// Frames moved per pass each way (the switch ring's batch).
const BURST: usize = 64;
/// Empty passes before the thread sleeps.
const SPIN: u32 = 256;
/// The longest sleep: how soon a stop is seen when nothing moves.
const SLEEP: Duration = Duration::from_millis(100);

/// What an uplink moved and dropped.
#[derive(Debug, Default)]
pub struct UplinkCounters {
    /// Frames from the interface into the switch.
    pub to_switch: AtomicU64,
    /// Frames from the switch out of the interface.
    pub to_iface: AtomicU64,
    /// Frames from the interface the switch's port had no room for.
    pub to_switch_dropped: AtomicU64,
    /// Frames for the interface it refused (too long, interface down).
    pub to_iface_dropped: AtomicU64,
    /// Frames the receive path dropped (oversize, kernel ring drops).
    pub rx_dropped: AtomicU64,
}

/// A snapshot of one uplink, for the API and `/metrics`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct UplinkView {
    /// The interface.
    pub iface: String,
    /// Its switch port.
    pub port: u16,
    /// Frames from the interface into the switch.
    pub to_switch: u64,
    /// Frames from the switch out of the interface.
    pub to_iface: u64,
    /// Frames from the interface dropped for want of room in the port.
    pub to_switch_dropped: u64,
    /// Frames for the interface it refused.
    pub to_iface_dropped: u64,
    /// Frames the receive path dropped (oversize, kernel drops).
    pub rx_dropped: u64,
}

/// A running uplink; stops (and its thread ends) when dropped.
pub(crate) struct Uplink {
    pub(crate) iface: String,
    pub(crate) port: u16,
    counters: Arc<UplinkCounters>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Uplink {
    /// Opens `iface` and starts moving frames between it and the port
    /// whose peer end is `shm`.
    pub(crate) fn start(iface: &str, port: u16, shm: PortShm) -> Result<Uplink, String> {
        let counters = Arc::new(UplinkCounters::default());
        let stop = Arc::new(AtomicBool::new(false));
        // The devices and the pool belong to one thread: they are opened
        // there, and the outcome comes back before this returns.
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let (name, c, st) = (iface.to_string(), counters.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name(format!("uplink-{iface}"))
            .spawn(move || match Mover::open(&name, shm, c) {
                Ok(mut m) => {
                    let _ = ready_tx.send(Ok(()));
                    m.run(&st);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(|e| format!("{iface}: cannot start its thread: {e}"))?;
        let outcome = ready_rx
            .recv()
            .unwrap_or_else(|_| Err(format!("{iface}: its thread ended at start")));
        if let Err(e) = outcome {
            let _ = thread.join();
            return Err(e);
        }
        Ok(Uplink {
            iface: iface.to_string(),
            port,
            counters,
            stop,
            thread: Some(thread),
        })
    }

    /// Its counters now.
    pub(crate) fn view(&self) -> UplinkView {
        let c = &self.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        UplinkView {
            iface: self.iface.clone(),
            port: self.port,
            to_switch: l(&c.to_switch),
            to_iface: l(&c.to_iface),
            to_switch_dropped: l(&c.to_switch_dropped),
            to_iface_dropped: l(&c.to_iface_dropped),
            rx_dropped: l(&c.rx_dropped),
        }
    }
}

impl Drop for Uplink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Mover {
    rx: RxDevice,
    tx: TxDevice,
    peer: Peer,
    pool: Pool,
    counters: Arc<UplinkCounters>,
}

impl Mover {
    fn open(iface: &str, shm: PortShm, counters: Arc<UplinkCounters>) -> Result<Mover, String> {
        let cfg = RxConfig {
            method: Method::Ring,
            promisc: true,
            timestamp: false,
            ..RxConfig::default()
        };
        // Device errors name the interface themselves.
        let err = |e: &dyn std::fmt::Display| format!("{iface}: {e}");
        let rx = RxDevice::open(iface, &cfg).map_err(|e| e.to_string())?;
        let tx = TxDevice::open(iface, Method::Ring).map_err(|e| e.to_string())?;
        // Half the port's slots are lent to the switch for frames towards
        // the interface, half kept for frames into the switch.
        let lend = (shm.geometry.slots / 2).max(1);
        let peer = Peer::new(shm, lend).map_err(|e| err(&e))?;
        let pool = Pool::new(2 * BURST).map_err(|e| err(&e))?;
        Ok(Mover {
            rx,
            tx,
            peer,
            pool,
            counters,
        })
    }

    fn run(&mut self, stop: &AtomicBool) {
        let mut batch = Batch::new();
        let mut idle = 0u32;
        while !stop.load(Ordering::Relaxed) {
            let moved = self.iface_to_switch(&mut batch) + self.switch_to_iface();
            if moved > 0 {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle >= SPIN {
                self.sleep();
                idle = 0;
            }
        }
        self.peer.flush();
        self.tx.flush();
    }

    /// Interface → switch: a batch from the receive ring, copied into the
    /// port's slots.
    fn iface_to_switch(&mut self, batch: &mut Batch) -> usize {
        let n = self.rx.recv(&self.pool, batch, BURST, 0);
        let before = self.peer.counters().sent;
        for p in batch.iter() {
            // A refusal (no free slot, a length the switch does not take)
            // shows as a frame not sent, below.
            let _ = self.peer.queue(p.data());
        }
        self.peer.flush();
        batch.clear();
        let crossed = (self.peer.counters().sent - before).min(n as u64);
        let c = &self.counters;
        c.to_switch.fetch_add(crossed, Ordering::Relaxed);
        c.to_switch_dropped
            .fetch_add(n as u64 - crossed, Ordering::Relaxed);
        c.rx_dropped
            .store(self.rx.stats().drops(), Ordering::Relaxed);
        n
    }

    /// Switch → interface: as many frames as the transmit ring has room
    /// for (the rest wait in the port's ring).
    fn switch_to_iface(&mut self) -> usize {
        let room = self.tx.room(BURST);
        if room == 0 {
            self.tx.flush();
            return 0;
        }
        let (tx, c) = (&mut self.tx, &self.counters);
        let n = self.peer.recv_max(room, |f| match tx.send(f) {
            Sent::Ok => {
                c.to_iface.fetch_add(1, Ordering::Relaxed);
            }
            Sent::Full | Sent::Failed => {
                c.to_iface_dropped.fetch_add(1, Ordering::Relaxed);
            }
        });
        if n > 0 {
            self.tx.flush();
        }
        n
    }

    /// Sleeps until the interface or the switch has frames, or `SLEEP`.
    fn sleep(&mut self) {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        if !self.peer.prepare_sleep() {
            return;
        }
        let ts = Timespec {
            tv_sec: 0,
            tv_nsec: SLEEP.as_nanos() as i64,
        };
        {
            let (a, b) = (self.rx.fd(), self.peer.doorbell());
            let mut fds = [
                PollFd::new(&a, PollFlags::IN),
                PollFd::new(&b, PollFlags::IN),
            ];
            let _ = poll(&mut fds, Some(&ts));
        }
        self.peer.woke();
    }
}
