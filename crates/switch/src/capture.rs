//! Port capture (`pronto capture`): a copy of the frames a port sends to
//! the switch and of those the switch delivers to it, for an operator's
//! pcap file.
//!
//! Off, a capture costs one relaxed load per batch on each side of the
//! port. On, each frame that passes the filter is copied (up to the snap
//! length) into a bounded channel; when the reader falls behind, frames
//! are not copied and are counted ([`Capture::dropped`]), never waited
//! for: the data path does not slow down for a capture.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pronto_ring::SharedRegion;

/// Bytes of the longest frame a port carries.
const MAX_FRAME: usize = crate::layout::MAX_FRAME as usize;

/// Which way a captured frame went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The port sent it to the switch (what the instance transmitted).
    FromPort,
    /// The switch delivered it to the port (what the instance receives).
    ToPort,
}

/// A frame copied by a capture.
#[derive(Clone, Debug)]
pub struct Captured {
    /// When it was copied, ns since the epoch.
    pub ts_ns: i64,
    /// Which way it went.
    pub dir: Direction,
    /// Its length on the wire.
    pub len: u32,
    /// Its first bytes, up to the snap length.
    pub bytes: Vec<u8>,
}

/// A capture's filter: true for the frames it keeps.
pub type FrameTest = Box<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// What a capture takes.
pub struct CaptureSpec {
    /// Frames that pass (none: all).
    pub filter: Option<FrameTest>,
    /// Bytes kept of each frame.
    pub snaplen: usize,
    /// The most frames copied (the capture then stops copying).
    pub count: u64,
    /// Copy frames the port sends.
    pub from_port: bool,
    /// Copy frames delivered to the port.
    pub to_port: bool,
    /// Frames the channel holds before new ones are dropped.
    pub queue: usize,
}

/// A port's tap, shared by the switching threads that serve its two
/// sides.
pub(crate) struct Tap {
    spec: CaptureSpec,
    left: AtomicU64,
    dropped: AtomicU64,
    tx: SyncSender<Captured>,
}

impl Tap {
    /// Offers the frame at `at` in `region` (`len` bytes) going `dir`.
    pub(crate) fn offer(&self, region: &SharedRegion, at: usize, len: u16, dir: Direction) {
        let wanted = match dir {
            Direction::FromPort => self.spec.from_port,
            Direction::ToPort => self.spec.to_port,
        };
        if !wanted || self.left.load(Ordering::Relaxed) == 0 {
            return;
        }
        let len = usize::from(len).min(MAX_FRAME);
        let mut frame = [0u8; MAX_FRAME];
        if !region.read_bytes(at, &mut frame[..len]) {
            return;
        }
        self.offer_frame(&frame[..len], dir);
    }

    /// Offers a frame the switch made itself (an ARP reply).
    pub(crate) fn offer_frame(&self, frame: &[u8], dir: Direction) {
        let wanted = match dir {
            Direction::FromPort => self.spec.from_port,
            Direction::ToPort => self.spec.to_port,
        };
        if !wanted || self.left.load(Ordering::Relaxed) == 0 {
            return;
        }
        let len = frame.len();
        if let Some(f) = &self.spec.filter {
            if !f(frame) {
                return;
            }
        }
        // Claim one of the frames still wanted.
        if self
            .left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_err()
        {
            return;
        }
        let c = Captured {
            ts_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as i64)
                .unwrap_or(0),
            dir,
            len: len as u32,
            bytes: frame[..len.min(self.spec.snaplen)].to_vec(),
        };
        match self.tx.try_send(c) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                self.left.fetch_add(1, Ordering::Relaxed);
            }
            // The reader is gone: nothing more to copy.
            Err(TrySendError::Disconnected(_)) => self.left.store(0, Ordering::Relaxed),
        }
    }
}

/// Where a port keeps its tap.
#[derive(Default)]
pub(crate) struct TapSlot {
    on: AtomicBool,
    tap: Mutex<Option<Arc<Tap>>>,
}

impl std::fmt::Debug for TapSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TapSlot")
            .field("on", &self.on.load(Ordering::Relaxed))
            .finish()
    }
}

impl TapSlot {
    /// The tap, when a capture is on: one relaxed load when it is not.
    #[inline]
    pub(crate) fn get(&self) -> Option<Arc<Tap>> {
        if !self.on.load(Ordering::Relaxed) {
            return None;
        }
        self.tap.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Starts a capture; an error when one is already on.
    pub(crate) fn start(self: &Arc<Self>, spec: CaptureSpec) -> Result<Capture, String> {
        let mut slot = self.tap.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_some() {
            return Err("the port is being captured already; one capture at a time".into());
        }
        let (tx, rx) = std::sync::mpsc::sync_channel(spec.queue.max(1));
        let tap = Arc::new(Tap {
            left: AtomicU64::new(spec.count),
            dropped: AtomicU64::new(0),
            spec,
            tx,
        });
        *slot = Some(tap.clone());
        self.on.store(true, Ordering::Relaxed);
        Ok(Capture {
            slot: self.clone(),
            tap,
            rx,
        })
    }
}

/// A capture in progress; dropping it ends it.
pub struct Capture {
    slot: Arc<TapSlot>,
    tap: Arc<Tap>,
    rx: Receiver<Captured>,
}

impl Capture {
    /// The next frame, waiting at most `wait`; `None` when none came.
    pub fn next(&self, wait: Duration) -> Option<Captured> {
        self.rx.recv_timeout(wait).ok()
    }

    /// Frames that passed the filter but were not copied because the
    /// reader was behind.
    pub fn dropped(&self) -> u64 {
        self.tap.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.slot.on.store(false, Ordering::Relaxed);
        *self.slot.tap.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
