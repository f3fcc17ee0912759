//! The shared region of one port.
//!
//! ```text
//!   0                  header: magic "PRONTOSW", version, slots, ring
//!                      capacity, slot stride, reserved bytes, rx offset
//!   4096               ring rx    (peer → switch)  } each ring is
//!   4096 + 1·R         ring fill  (peer → switch)  } pronto_ring's layout,
//!   4096 + 2·R         ring tx    (switch → peer)  } R = its length rounded
//!   4096 + 3·R         ring done  (switch → peer)  } up to a page
//!   4096 + 4·R         pool: `slots` × 2,176-byte slots
//! ```
//!
//! A slot has pronto's packet-pool stride (2,176 bytes). Its first 128
//! bytes ([`SLOT_RESERVED`]) belong to the peer (a pronto pool keeps its
//! slot header, with process-local pointers, there); the switch neither
//! reads nor writes them and refuses descriptors that point into them. It
//! writes delivered frames at [`RX_OFFSET`] (after the header and 128
//! bytes of headroom, where a fresh pronto packet starts), and accepts
//! frames of [`MIN_FRAME`] to [`MAX_FRAME`] bytes anywhere in
//! `SLOT_RESERVED..SLOT_STRIDE` of a slot.
//!
//! The switch's process holds no descriptor per port once the port is
//! handed over: the region stays mapped after its memfd is closed
//! ([`PortShm::handed_over`]); the switch's doorbell stays in the
//! switching thread's epoll set while the peer holds its eventfd (the
//! switch keeps no copy after attaching it); and a peer that is the
//! switch process's child is woken by a signal ([`PeerBell::Signal`]),
//! not through an eventfd. That is what lets 10,000 sandboxed instances
//! fit a daemon whose file limit is 20,000.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use pronto_ring::{ring, Doorbell, RingError, SharedRegion, SignalBell};

/// Bytes between the starts of consecutive slots (pronto's packet pool
/// stride).
pub const SLOT_STRIDE: u32 = 2176;
/// Bytes at the start of each slot that are the peer's own (never packet
/// data for the switch).
pub const SLOT_RESERVED: u16 = 128;
/// Where in a slot the switch writes a frame it delivers.
pub const RX_OFFSET: u16 = 256;
/// The longest frame the switch moves (pronto's `MAX_PACKET`).
pub const MAX_FRAME: u16 = SLOT_STRIDE as u16 - RX_OFFSET;
/// The shortest frame the switch moves (an Ethernet header).
pub const MIN_FRAME: u16 = 14;
/// The most slots one port's pool may have.
pub const MAX_SLOTS: u32 = 1 << 20;
/// The largest ring capacity a port may use.
pub const MAX_RING: u32 = 1 << 16;

const MAGIC: [u8; 8] = *b"PRONTOSW";
const VERSION: u32 = 1;
const PAGE: usize = 4096;

/// Which of a port's four rings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingId {
    /// Frames from the peer to the switch.
    Rx = 0,
    /// Empty slots from the peer to the switch.
    Fill = 1,
    /// Frames from the switch to the peer.
    Tx = 2,
    /// Sent slots from the switch back to the peer.
    Done = 3,
}

/// Errors making or attaching a port.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// Slot count or ring capacity out of range.
    #[error("bad port geometry: {slots} slots (1..={MAX_SLOTS}), rings of {ring} (power of two, 2..={MAX_RING})")]
    Geometry {
        /// Slots asked for.
        slots: u32,
        /// Ring capacity asked for.
        ring: u32,
    },
    /// The region's header does not describe this geometry.
    #[error("shared region is not a pronto switch port of this geometry")]
    BadHeader,
    /// The wrong number of descriptors arrived.
    #[error(
        "a port needs 3 descriptors (region, two doorbells) or 2 (region, the switch's \
         doorbell; the peer is woken by a signal), got {0}"
    )]
    BadFds(usize),
    /// A doorbell this side needs is not there (a port as the switch
    /// holds it, given to a peer, or handed over already).
    #[error("this port has no {0} this side can use")]
    NoDoorbell(&'static str),
    /// A ring could not be set up.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// Creating or mapping failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A port's size: slots in its pool and the capacity of each of its rings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Slots in the pool.
    pub slots: u32,
    /// Capacity of each ring.
    pub ring: u32,
}

impl Geometry {
    /// A checked geometry.
    pub fn new(slots: u32, ring: u32) -> Result<Geometry, PortError> {
        if !(1..=MAX_SLOTS).contains(&slots)
            || !(2..=MAX_RING).contains(&ring)
            || !ring.is_power_of_two()
        {
            return Err(PortError::Geometry { slots, ring });
        }
        Ok(Geometry { slots, ring })
    }

    fn ring_stride(&self) -> usize {
        ring::region_len(self.ring).div_ceil(PAGE) * PAGE
    }

    /// Byte offset of a ring in the region.
    pub fn ring_offset(&self, which: RingId) -> usize {
        PAGE + which as usize * self.ring_stride()
    }

    /// Byte offset of the pool in the region.
    pub fn pool_offset(&self) -> usize {
        PAGE + 4 * self.ring_stride()
    }

    /// Byte offset of slot `slot` in the region (the caller checked
    /// `slot < slots`; beyond it the region's own checks refuse).
    #[inline]
    pub fn slot_offset(&self, slot: u32) -> usize {
        self.pool_offset() + slot as usize * SLOT_STRIDE as usize
    }

    /// Bytes the region occupies.
    pub fn region_len(&self) -> usize {
        self.slot_offset(self.slots)
    }
}

/// How the switch wakes a port's peer.
#[derive(Clone)]
pub enum PeerBell {
    /// An eventfd both sides hold.
    Fd(Arc<Doorbell>),
    /// A signal to the peer's process, a child of the switch's process
    /// (the switch holds its pid, no descriptor); the peer waits on
    /// [`Doorbell::wake_signal`].
    Signal(Arc<SignalBell>),
}

impl PeerBell {
    /// Wakes the peer.
    #[inline]
    pub fn ring(&self) -> std::io::Result<()> {
        match self {
            PeerBell::Fd(d) => d.ring(),
            PeerBell::Signal(s) => s.ring(),
        }
    }

    /// The doorbell a peer waits on (`None` on the switch's side of a
    /// signalled port).
    pub fn doorbell(&self) -> Option<&Arc<Doorbell>> {
        match self {
            PeerBell::Fd(d) => Some(d),
            PeerBell::Signal(_) => None,
        }
    }
}

/// One port's shared memory and doorbells, as either side holds them.
#[derive(Clone)]
pub struct PortShm {
    /// The port's size.
    pub geometry: Geometry,
    /// The region (header, rings, pool).
    pub region: Arc<SharedRegion>,
    /// Rung by the peer when the switch sleeps; the switch waits on it
    /// (in its epoll set, where it stays after the switch drops its copy:
    /// `None` in the switch's own copies once attached).
    pub to_switch: Option<Arc<Doorbell>>,
    /// Rung by the switch when the peer sleeps; the peer waits on it.
    pub to_peer: PeerBell,
}

fn header_words(g: Geometry) -> [u32; 8] {
    [
        u32::from_le_bytes([MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3]]),
        u32::from_le_bytes([MAGIC[4], MAGIC[5], MAGIC[6], MAGIC[7]]),
        VERSION,
        g.slots,
        g.ring,
        SLOT_STRIDE,
        SLOT_RESERVED as u32,
        RX_OFFSET as u32,
    ]
}

impl PortShm {
    /// A new port: a sealed memfd holding the header, four empty rings
    /// and a zeroed pool, and two doorbells.
    pub fn create(name: &str, geometry: Geometry) -> Result<PortShm, PortError> {
        let to_peer = PeerBell::Fd(Arc::new(Doorbell::new()?));
        Self::create_with(name, geometry, to_peer)
    }

    /// A new port whose peer (process `bell` names, a child of this one)
    /// is woken by a signal: no descriptor for the peer's doorbell here.
    pub fn create_signalled(
        name: &str,
        geometry: Geometry,
        bell: Arc<SignalBell>,
    ) -> Result<PortShm, PortError> {
        Self::create_with(name, geometry, PeerBell::Signal(bell))
    }

    fn create_with(
        name: &str,
        geometry: Geometry,
        to_peer: PeerBell,
    ) -> Result<PortShm, PortError> {
        let geometry = Geometry::new(geometry.slots, geometry.ring)?;
        let region = Arc::new(SharedRegion::create(name, geometry.region_len())?);
        for which in [RingId::Rx, RingId::Fill, RingId::Tx, RingId::Done] {
            ring::init_at(&region, geometry.ring_offset(which), geometry.ring)?;
        }
        for (i, w) in header_words(geometry).into_iter().enumerate() {
            region.store_u32(i * 4, w);
        }
        Ok(PortShm {
            geometry,
            region,
            to_switch: Some(Arc::new(Doorbell::new()?)),
            to_peer,
        })
    }

    /// A port from the descriptors of [`PortShm::fds`] (region, switch's
    /// doorbell and, unless the peer is woken by a signal, peer's
    /// doorbell), received from another process; checks the region's
    /// size, seals and header. With two descriptors the peer's doorbell
    /// is this process's [`Doorbell::wake_signal`].
    pub fn from_fds(fds: Vec<OwnedFd>, geometry: Geometry) -> Result<PortShm, PortError> {
        let geometry = Geometry::new(geometry.slots, geometry.ring)?;
        let n = fds.len();
        let mut it = fds.into_iter();
        let (Some(region), Some(to_switch)) = (it.next(), it.next()) else {
            return Err(PortError::BadFds(n));
        };
        let to_peer = match (it.next(), it.next()) {
            (Some(fd), None) => Arc::new(Doorbell::from_fd(fd)),
            (None, None) => Doorbell::wake_signal()?,
            _ => return Err(PortError::BadFds(n)),
        };
        let region = Arc::new(SharedRegion::attach(region, geometry.region_len())?);
        for (i, w) in header_words(geometry).into_iter().enumerate() {
            if region.load_u32(i * 4) != Some(w) {
                return Err(PortError::BadHeader);
            }
        }
        Ok(PortShm {
            geometry,
            region,
            to_switch: Some(Arc::new(Doorbell::from_fd(to_switch))),
            to_peer: PeerBell::Fd(to_peer),
        })
    }

    /// Descriptors to hand to the other side, in the order `from_fds`
    /// takes them: the region, the switch's doorbell and, for a port
    /// whose peer is not woken by a signal, the peer's doorbell.
    pub fn fds(&self) -> Result<Vec<OwnedFd>, PortError> {
        let to_switch = self
            .to_switch
            .as_ref()
            .ok_or(PortError::NoDoorbell("switch's doorbell"))?;
        let mut v = vec![self.region.dup_fd()?, to_switch.dup_fd()?];
        if let PeerBell::Fd(d) = &self.to_peer {
            v.push(d.dup_fd()?);
        }
        Ok(v)
    }

    /// Closes this side's descriptors once the port was handed over (to
    /// the peer with [`PortShm::fds`], to the switch with an attach): the
    /// region's memfd (the mapping stays) and, with this copy, its
    /// descriptor of the switch's doorbell.
    pub fn handed_over(self) {
        self.region.close_fd();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_header_round_trip() {
        let g = Geometry::new(100, 256).expect("geometry");
        assert_eq!(g.ring_offset(RingId::Rx), 4096);
        assert_eq!(g.ring_offset(RingId::Fill), 4096 + 4096);
        assert_eq!(g.pool_offset(), 4096 * 5);
        assert_eq!(g.region_len(), 4096 * 5 + 100 * 2176);
        assert!(Geometry::new(0, 256).is_err());
        assert!(Geometry::new(10, 100).is_err());
        let p = PortShm::create("t", g).expect("port");
        let fds = p.fds().expect("fds");
        assert_eq!(fds.len(), 3);
        let q = PortShm::from_fds(fds, g).expect("attach");
        assert_eq!(q.geometry, g);
        let fds = p.fds().expect("fds");
        assert!(
            PortShm::from_fds(fds, Geometry::new(99, 256).expect("g")).is_err(),
            "size mismatch"
        );
        assert!(matches!(
            PortShm::from_fds(Vec::new(), g),
            Err(PortError::BadFds(0))
        ));
        // A forged header is refused.
        p.region.store_u32(12, 7);
        let fds = p.fds().expect("fds");
        assert!(matches!(
            PortShm::from_fds(fds, g),
            Err(PortError::BadHeader)
        ));
        p.region.store_u32(12, g.slots);
        // A signalled port hands over two descriptors; once handed over,
        // none can be had any more.
        let s = PortShm::create_signalled("s", g, Arc::new(SignalBell::new(1))).expect("port");
        let fds = s.fds().expect("fds");
        assert_eq!(fds.len(), 2);
        let t = PortShm::from_fds(fds, g).expect("attach");
        assert!(t.to_peer.doorbell().is_some_and(|d| d.is_signal()));
        let region = s.region.clone();
        s.handed_over();
        assert!(!region.has_fd());
    }
}
