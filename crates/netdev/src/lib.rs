//! pronto's Linux network interfaces: `AF_PACKET` sockets bound to an
//! interface by name, for the `FromDevice` and `ToDevice` elements.
//!
//! Three methods:
//!
//! - [`Method::Socket`]: one non-blocking `recvfrom`/`send` system call per
//!   frame. Simple; the baseline.
//! - [`Method::Ring`] (default): `TPACKET_V2` rings. On receive the
//!   kernel writes each frame into its own fixed-size ring slot and hands
//!   it over at once (the slot's status becomes user-owned), so a frame
//!   waits for no block to fill or timer to fire; pronto copies a batch of
//!   ready slots out and gives each back. On transmit frames are written
//!   in place and sent with one `send` call per batch, bypassing the
//!   queueing discipline.
//! - [`Method::Xdp`]: `AF_XDP` sockets in copy mode, one per receive
//!   queue, fed by a small XDP program that pronto builds and attaches
//!   itself (natively where the driver can, else generic; see
//!   [`RxDevice::xdp_mode`]) and that passes frames on queues without a
//!   socket to the kernel. Frames are copied out of (and into) a UMEM
//!   through four shared rings, in batches, with a system call only when
//!   the kernel asks for one. Needs root (or `CAP_NET_ADMIN`,
//!   `CAP_NET_RAW` and `CAP_BPF`). Unlike the other two, the kernel's
//!   stack does not see the frames pronto receives, and frames the host
//!   sends are never received. Details and limits in [`xdp`].
//!
//! Receive sockets ask for a virtio-net header in front of each frame
//! (`PACKET_VNET_HDR`), so that frames whose checksum the sender left to
//! the device, and TCP segmentation-offload frames (up to 64 KiB, common on
//! veth and from local stacks), arrive whole and described: checksums are
//! completed and TSO frames are cut into MSS-sized segments before they
//! become pool packets ([`offload`]). Any other frame longer than a pool
//! slot ([`pronto_packet::MAX_PACKET`], 1,920 bytes) is counted
//! ([`RxStats::oversize`]) and dropped.
//!
//! The XDP method takes frames whole from the driver, without a
//! virtio-net header: segmentation-offload frames do not reach it (veth
//! turns segmentation offload off on its peer while an XDP program is
//! attached), and a frame whose checksum its sender left to the device
//! arrives with that checksum unfinished.
//!
//! Every length and offset read from a ring is checked against the ring
//! before use. The `unsafe` code (socket options, `bpf(2)`, the ring and
//! UMEM mappings, TAP ioctls) is in `sys`, `xdp_sys` and `tap`, each block
//! with its reason.
//!
//! [`tap`] opens TAP devices for `FromHost`/`ToHost`: frames to and from
//! the host's own stack.

pub mod gso;
pub mod offload;
pub mod rawip;
mod sys;
pub mod tap;
pub mod xdp;
mod xdp_sys;

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use pronto_packet::{Batch, Pool};

pub use gso::GsoStats;
pub use offload::{Delivery, Vnet, VNET_LEN};
pub use xdp::XdpMode;

/// How frames move between pronto and the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// One system call per frame.
    Socket,
    /// Shared-memory `TPACKET_V2` rings (receive and transmit).
    Ring,
    /// `AF_XDP` sockets fed by an XDP program ([`xdp`]).
    Xdp,
}

impl Method {
    /// Parses `SOCKET`, `RING`, `XDP`, or Click's `LINUX` (a plain packet
    /// socket).
    pub fn parse(s: &str) -> Option<Method> {
        match s {
            "SOCKET" | "LINUX" => Some(Method::Socket),
            "RING" => Some(Method::Ring),
            "XDP" => Some(Method::Xdp),
            _ => None,
        }
    }

    /// The name [`Method::parse`] reads (`SOCKET`, `RING`, `XDP`).
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Socket => "SOCKET",
            Method::Ring => "RING",
            Method::Xdp => "XDP",
        }
    }
}

/// Why an interface could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum DevError {
    /// The name is empty or longer than 15 bytes.
    #[error("{0}: bad interface name")]
    BadName(String),
    /// A system call failed.
    #[error("{ifname}: {what}: {err}")]
    Os {
        /// The interface.
        ifname: String,
        /// What was being done.
        what: &'static str,
        /// The error.
        err: io::Error,
    },
    /// A step of setting up `METHOD XDP` failed.
    #[error("{ifname}: METHOD XDP: {step}: {err}; {hint}")]
    Xdp {
        /// The interface.
        ifname: String,
        /// The step that failed.
        step: &'static str,
        /// The error.
        err: io::Error,
        /// What it probably means and what to do.
        hint: String,
    },
}

fn os<'a>(ifname: &'a str, what: &'static str) -> impl FnOnce(io::Error) -> DevError + 'a {
    move |err| DevError::Os {
        ifname: ifname.to_string(),
        what,
        err,
    }
}

/// Receive-side counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Packets made.
    pub packets: u64,
    /// Frames dropped because they do not fit a pool slot.
    pub oversize: u64,
    /// Frames dropped because their ring entry or offload header was
    /// inconsistent.
    pub bad: u64,
    /// Packets dropped because the pool was empty.
    pub nomem: u64,
    /// TCP segmentation-offload frames cut into segments.
    pub segmented: u64,
    /// Packets made where the frame arrived, without a copy (a sandboxed
    /// instance's switch port, whose slots are packets); part of
    /// `packets`.
    pub in_place: u64,
}

impl RxStats {
    /// Every frame or packet dropped on the way in.
    pub fn drops(&self) -> u64 {
        self.oversize + self.bad + self.nomem
    }
}

/// How to open a receiving interface.
#[derive(Clone, Debug)]
pub struct RxConfig {
    /// Socket or ring.
    pub method: Method,
    /// Put the interface in promiscuous mode while open.
    pub promisc: bool,
    /// Also receive frames the host sends on the interface.
    pub outbound: bool,
    /// Bytes of each frame kept (the rest is recorded in the extra length
    /// annotation).
    pub snaplen: usize,
    /// Ignored. The receive ring was once a `TPACKET_V3` block ring whose
    /// blocks were handed over on a timeout; the `TPACKET_V2` frame ring
    /// hands every frame over as soon as it is written.
    pub block_timeout_ms: u32,
    /// Stamp packets with the kernel's receive time (ring) or the current
    /// time (socket); otherwise leave the timestamp unset.
    pub timestamp: bool,
    /// Join fanout group `id` (RING and SOCKET): every packet socket of
    /// the network namespace in the group gets a share of the interface's
    /// frames, whole flows each (by flow hash), so that several
    /// `FromDevice` elements (on several threads) serve one interface.
    pub fanout: Option<u16>,
}

impl Default for RxConfig {
    fn default() -> Self {
        RxConfig {
            method: Method::Ring,
            promisc: false,
            outbound: false,
            snaplen: 2046,
            block_timeout_ms: 1,
            timestamp: true,
            fanout: None,
        }
    }
}

/// Receive ring geometry: 128 blocks of 256 KiB, each holding three
/// frame slots of 87,376 bytes, 384 slots in all. A slot takes a whole
/// 64 KiB segmentation-offload frame with its ring header, address and
/// virtio-net header. (Blocks are allocated in power-of-two page runs, so
/// a 256 KiB block with three slots wastes 16 bytes.)
const RX_BLOCK_SIZE: usize = 256 * 1024;
const RX_BLOCKS: usize = 128;
const RX_FRAME_SIZE: usize = (RX_BLOCK_SIZE / 3) & !15;
// A slot holds the frame header, address, alignment slack and virtio-net
// header in front of a 64 KiB frame; the kernel wants 16-byte-aligned
// slots in page-multiple blocks.
const _: () = assert!(RX_FRAME_SIZE >= 65_536 + TP2_HDR + SLL_LEN + 64 + VNET_LEN);
const _: () = assert!(RX_FRAME_SIZE.is_multiple_of(16) && RX_BLOCK_SIZE.is_power_of_two());
/// Socket-method receive buffer: the largest offload frame plus header.
const RX_BUF: usize = 256 * 1024;
/// Transmit ring geometry: 1,024 frames of 2 KiB.
const TX_FRAME_SIZE: usize = 2048;
const TX_BLOCK_SIZE: usize = 64 * 1024;
const TX_BLOCKS: usize = 32;
/// Where a `TPACKET_V2` transmit frame's data starts
/// (`TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)`).
const TX_DATA_OFF: usize = 32;

const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_VLAN_VALID: u32 = 1 << 4;
const TP_STATUS_VLAN_TPID_VALID: u32 = 1 << 6;
const TP_STATUS_SEND_REQUEST: u32 = 1;
const TP_STATUS_SENDING: u32 = 2;
const TPACKET_V2: i32 = 1;
/// `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`, where the `sockaddr_ll`
/// follows the frame header.
const TP2_HDR: usize = 32;
/// `sizeof(struct sockaddr_ll)`.
const SLL_LEN: usize = 20;

fn open_socket(ifname: &str, proto: u16) -> Result<(OwnedFd, i32), DevError> {
    if ifname.is_empty() || ifname.len() > 15 || ifname.contains(['/', ' ', '\0']) {
        return Err(DevError::BadName(ifname.to_string()));
    }
    let fd = sys::packet_socket(proto).map_err(os(ifname, "socket"))?;
    let idx = rustix::net::netdevice::name_to_index(&fd, ifname)
        .map_err(|e| os(ifname, "no such interface")(e.into()))?;
    Ok((fd, idx as i32))
}

/// Sets up a TPACKET ring (`opt`: `PACKET_RX_RING` or `PACKET_TX_RING`)
/// of `blocks` blocks of `block` bytes cut into `frame`-byte frames, and
/// maps it; returns the mapping and the number of frames.
fn map_ring(
    fd: &OwnedFd,
    ifname: &str,
    opt: (libc::c_int, &'static str),
    block: usize,
    blocks: usize,
    frame: usize,
) -> Result<(sys::Mapping, usize), DevError> {
    let nframes = block / frame * blocks;
    let req = sys::TpacketReq {
        block_size: block as u32,
        block_nr: blocks as u32,
        frame_size: frame as u32,
        frame_nr: nframes as u32,
    };
    sys::set_opt(fd, opt.0, &req).map_err(os(ifname, opt.1))?;
    let map = sys::Mapping::new(fd, block * blocks).map_err(os(ifname, "mmap"))?;
    Ok((map, nframes))
}

/// The socket offload frames go out on: `PACKET_VNET_HDR`, queueing
/// discipline bypassed, a send buffer for a few of them; `None` if the
/// kernel refuses any step (then segments go one by one).
fn gso_socket(ifname: &str, ifindex: i32) -> Option<OwnedFd> {
    let (fd, _) = open_socket(ifname, 0).ok()?;
    let one: libc::c_int = 1;
    sys::set_opt(&fd, sys::PACKET_VNET_HDR, &one).ok()?;
    let _ = sys::set_opt(&fd, sys::PACKET_QDISC_BYPASS, &one);
    let _ = rustix::net::sockopt::set_socket_send_buffer_size(&fd, 4 << 20);
    sys::bind(&fd, ifindex, 0).ok()?;
    Some(fd)
}

/// With `METHOD XDP`, a failure to open the packet socket that finds the
/// interface is reported as an XDP step, with advice.
fn xdp_open_err(e: DevError, method: Method) -> DevError {
    match e {
        DevError::Os { ifname, what, err } if method == Method::Xdp => {
            xdp::xdp_err(&ifname, what, err)
        }
        e => e,
    }
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    let w = b.get(off..off + 4)?;
    Some(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
}

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    let w = b.get(off..off + 2)?;
    Some(u16::from_ne_bytes([w[0], w[1]]))
}

struct RxRing {
    map: sys::Mapping,
    block_size: usize,
    frame_size: usize,
    /// Frame slots per block.
    per_block: usize,
    /// Frame slots in all.
    nframes: usize,
    /// The slot to read next.
    cur: usize,
}

impl RxRing {
    /// Offset of slot `i` in the mapping (slots never straddle blocks).
    fn frame_off(&self, i: usize) -> usize {
        (i / self.per_block) * self.block_size + (i % self.per_block) * self.frame_size
    }
}

enum RxKind {
    Socket {
        buf: Box<[u8]>,
        /// A frame in `buf` (its length) whose segments did not all fit
        /// the last batch, and the next segment.
        pending: Option<(usize, usize)>,
    },
    Ring {
        ring: RxRing,
        /// The next segment of the current frame.
        resume: usize,
    },
    Xdp(xdp::XdpRx),
}

/// An interface opened for receiving.
pub struct RxDevice {
    fd: OwnedFd,
    kind: RxKind,
    cfg: RxConfig,
    stats: RxStats,
}

impl RxDevice {
    /// Opens `ifname` for receiving.
    pub fn open(ifname: &str, cfg: &RxConfig) -> Result<RxDevice, DevError> {
        // Protocol 0 until bound: nothing is queued before the ring exists.
        let (fd, ifindex) = open_socket(ifname, 0).map_err(|e| xdp_open_err(e, cfg.method))?;
        if cfg.method == Method::Xdp {
            // The packet socket stays unbound (it receives nothing); it
            // holds the promiscuous membership, dropped when it closes.
            let kind = RxKind::Xdp(xdp::XdpRx::open(ifname, ifindex as u32)?);
            if cfg.promisc {
                let mreq = sys::PacketMreq {
                    ifindex,
                    kind: sys::PACKET_MR_PROMISC,
                    ..Default::default()
                };
                sys::set_opt(&fd, sys::PACKET_ADD_MEMBERSHIP, &mreq)
                    .map_err(os(ifname, "promiscuous mode"))?;
            }
            return Ok(RxDevice {
                fd,
                kind,
                cfg: cfg.clone(),
                stats: RxStats::default(),
            });
        }
        let one: libc::c_int = 1;
        sys::set_opt(&fd, sys::PACKET_VNET_HDR, &one).map_err(os(ifname, "PACKET_VNET_HDR"))?;
        if !cfg.outbound {
            // Older kernels lack the option; outgoing frames are then
            // recognised by their packet type.
            let _ = sys::set_opt(&fd, sys::PACKET_IGNORE_OUTGOING, &one);
        }
        let kind = match cfg.method {
            Method::Socket => RxKind::Socket {
                buf: vec![0u8; RX_BUF].into_boxed_slice(),
                pending: None,
            },
            Method::Xdp => unreachable!("handled above"),
            Method::Ring => {
                let v: libc::c_int = TPACKET_V2;
                sys::set_opt(&fd, sys::PACKET_VERSION, &v).map_err(os(ifname, "PACKET_VERSION"))?;
                let per_block = RX_BLOCK_SIZE / RX_FRAME_SIZE;
                let (map, nframes) = map_ring(
                    &fd,
                    ifname,
                    (sys::PACKET_RX_RING, "PACKET_RX_RING"),
                    RX_BLOCK_SIZE,
                    RX_BLOCKS,
                    RX_FRAME_SIZE,
                )?;
                RxKind::Ring {
                    ring: RxRing {
                        map,
                        block_size: RX_BLOCK_SIZE,
                        frame_size: RX_FRAME_SIZE,
                        per_block,
                        nframes,
                        cur: 0,
                    },
                    resume: 0,
                }
            }
        };
        sys::bind(&fd, ifindex, sys::ETH_P_ALL).map_err(os(ifname, "bind"))?;
        if let Some(id) = cfg.fanout {
            let arg: u32 = id as u32 | (sys::PACKET_FANOUT_HASH_DEFRAG << 16);
            sys::set_opt(&fd, sys::PACKET_FANOUT, &arg).map_err(os(
                ifname,
                "PACKET_FANOUT (another socket of the group has other settings?)",
            ))?;
        }
        if cfg.promisc {
            let mreq = sys::PacketMreq {
                ifindex,
                kind: sys::PACKET_MR_PROMISC,
                ..Default::default()
            };
            sys::set_opt(&fd, sys::PACKET_ADD_MEMBERSHIP, &mreq)
                .map_err(os(ifname, "promiscuous mode"))?;
        }
        Ok(RxDevice {
            fd,
            kind,
            cfg: cfg.clone(),
            stats: RxStats::default(),
        })
    }

    /// The descriptor to wait on for readability when idle: the socket
    /// (XDP: the queue's socket, or an epoll descriptor over every
    /// queue's socket).
    pub fn fd(&self) -> BorrowedFd<'_> {
        match &self.kind {
            RxKind::Xdp(x) => x.fd(),
            _ => self.fd.as_fd(),
        }
    }

    /// Where the XDP program runs (`None` unless the method is XDP).
    pub fn xdp_mode(&self) -> Option<XdpMode> {
        match &self.kind {
            RxKind::Xdp(x) => Some(x.mode()),
            _ => None,
        }
    }

    /// Receive queues (XDP sockets) read; 1 for the other methods.
    pub fn queue_count(&self) -> usize {
        match &self.kind {
            RxKind::Xdp(x) => x.queue_count(),
            _ => 1,
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> &RxStats {
        &self.stats
    }

    /// Zeroes the counters.
    pub fn reset_stats(&mut self) {
        self.stats = RxStats::default();
    }

    /// Frames the kernel dropped since the last call (the socket's buffer
    /// or ring was full); `None` if it cannot tell.
    pub fn take_kernel_drops(&self) -> Option<u64> {
        if let RxKind::Xdp(x) = &self.kind {
            return x.take_kernel_drops();
        }
        sys::stats(&self.fd).ok().map(|(_, d)| d as u64)
    }

    /// Receives up to `max` packets into `batch` without blocking; returns
    /// how many were added. `now` stamps socket- and XDP-method packets.
    pub fn recv(&mut self, pool: &Pool, batch: &mut Batch, max: usize, now: i64) -> usize {
        let before = batch.len();
        let limit = (before + max).min(pronto_packet::BATCH_MAX);
        match &mut self.kind {
            RxKind::Socket { buf, pending } => recv_socket(
                &self.fd,
                buf,
                pending,
                &self.cfg,
                pool,
                batch,
                limit,
                now,
                &mut self.stats,
            ),
            RxKind::Ring { ring, resume } => {
                recv_ring(ring, resume, &self.cfg, pool, batch, limit, &mut self.stats)
            }
            RxKind::Xdp(x) => {
                let ts = if self.cfg.timestamp { now } else { 0 };
                x.recv(self.cfg.snaplen, ts, pool, batch, limit, &mut self.stats)
            }
        }
        batch.len() - before
    }
}

/// True while `batch` holds fewer than `limit` packets.
fn room_left(batch: &Batch, limit: usize) -> bool {
    batch.len() < limit
}

#[allow(clippy::too_many_arguments)]
fn recv_socket(
    fd: &OwnedFd,
    buf: &mut [u8],
    pending: &mut Option<(usize, usize)>,
    cfg: &RxConfig,
    pool: &Pool,
    batch: &mut Batch,
    limit: usize,
    now: i64,
    stats: &mut RxStats,
) {
    let ts = if cfg.timestamp { now } else { 0 };
    while room_left(batch, limit) {
        let (len, first) = match pending.take() {
            Some(p) => p,
            None => match sys::recv(fd, buf) {
                Ok((n, pkttype)) => {
                    if n > buf.len() {
                        stats.oversize += 1;
                        continue;
                    }
                    if pkttype == sys::PACKET_OUTGOING && !cfg.outbound {
                        continue;
                    }
                    (n, 0)
                }
                Err(_) => break,
            },
        };
        let Some((hdr, frame)) = buf[..len].split_first_chunk_mut::<VNET_LEN>() else {
            stats.bad += 1;
            continue;
        };
        let vnet = Vnet::parse(hdr);
        match offload::deliver(
            frame,
            Some(vnet),
            first,
            ts,
            cfg.snaplen,
            pool,
            batch,
            limit,
            stats,
        ) {
            Delivery::Done => {}
            Delivery::Resume(i) => {
                *pending = Some((len, i));
                break;
            }
        }
    }
}

fn recv_ring(
    ring: &mut RxRing,
    resume: &mut usize,
    cfg: &RxConfig,
    pool: &Pool,
    batch: &mut Batch,
    limit: usize,
    stats: &mut RxStats,
) {
    while room_left(batch, limit) {
        let off = ring.frame_off(ring.cur);
        if ring.map.load(off) & TP_STATUS_USER == 0 {
            return;
        }
        // SAFETY: the slot's status says user space owns it; the kernel
        // does not touch it until the status is set back to KERNEL below,
        // after the last use of this slice.
        let Some(slot) = (unsafe { ring.map.bytes_mut(off, ring.frame_size) }) else {
            return;
        };
        let done = match parse_entry(slot) {
            None => {
                stats.bad += 1;
                Delivery::Done
            }
            Some(e) if e.outgoing && !cfg.outbound => Delivery::Done,
            Some(e) if e.snaplen < e.len => {
                stats.oversize += 1;
                Delivery::Done
            }
            Some(e) => {
                let ts = if cfg.timestamp { e.ts } else { 0 };
                let before = batch.len();
                let (hdr, frame) = slot[e.mac - VNET_LEN..e.mac + e.snaplen].split_at_mut(VNET_LEN);
                let hdr: &[u8; VNET_LEN] = (&*hdr).try_into().unwrap_or(&[0; VNET_LEN]);
                let vnet = Vnet::parse(hdr);
                let r = offload::deliver(
                    frame,
                    Some(vnet),
                    *resume,
                    ts,
                    cfg.snaplen,
                    pool,
                    batch,
                    limit,
                    stats,
                );
                if let Some(vlan) = e.vlan {
                    for p in &mut batch.as_mut_slice()[before..] {
                        insert_vlan(p, vlan);
                    }
                }
                r
            }
        };
        match done {
            Delivery::Done => {
                // Hand the slot back and move on.
                *resume = 0;
                ring.map.store(off, TP_STATUS_KERNEL);
                ring.cur = (ring.cur + 1) % ring.nframes;
            }
            Delivery::Resume(i) => {
                // The batch is full mid-frame: keep the slot for the rest.
                *resume = i;
                return;
            }
        }
    }
}

/// One frame's ring entry, checked against its slot.
struct Entry {
    ts: i64,
    snaplen: usize,
    len: usize,
    mac: usize,
    outgoing: bool,
    vlan: Option<(u16, u16)>,
}

/// Reads the `tpacket2_hdr` at the start of `slot`; `None` if any part of
/// the entry (header, address, virtio-net header, frame bytes) falls
/// outside the slot.
fn parse_entry(slot: &[u8]) -> Option<Entry> {
    let h = slot.get(..TP2_HDR + SLL_LEN)?;
    let status = u32_at(h, 0)?;
    let len = u32_at(h, 4)? as usize;
    let snaplen = u32_at(h, 8)? as usize;
    let mac = u16_at(h, 12)? as usize;
    let sec = u32_at(h, 16)? as i64;
    let nsec = u32_at(h, 20)? as i64;
    let tci = u16_at(h, 24)?;
    let tpid = u16_at(h, 26)?;
    let pkttype = *h.get(TP2_HDR + 10)?;
    if mac < TP2_HDR + SLL_LEN + VNET_LEN {
        return None;
    }
    let end = mac.checked_add(snaplen)?;
    if end > slot.len() {
        return None;
    }
    let vlan = (status & TP_STATUS_VLAN_VALID != 0).then(|| {
        let tpid = if status & TP_STATUS_VLAN_TPID_VALID != 0 && tpid != 0 {
            tpid
        } else {
            0x8100
        };
        (tpid, tci)
    });
    Some(Entry {
        ts: sec * 1_000_000_000 + nsec,
        snaplen,
        len,
        mac,
        outgoing: pkttype == sys::PACKET_OUTGOING,
        vlan,
    })
}

/// Puts back a VLAN tag the device took off (the kernel reports it beside
/// the frame).
fn insert_vlan(p: &mut pronto_packet::Packet, (tpid, tci): (u16, u16)) {
    if p.len() < 12 || p.push(4).is_none() {
        return;
    }
    let d = p.data_mut();
    d.copy_within(4..16, 0);
    d[12..14].copy_from_slice(&tpid.to_be_bytes());
    d[14..16].copy_from_slice(&tci.to_be_bytes());
    p.set_mac_header(0);
}

/// What [`TxDevice::send`] did with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Sent, or queued in the ring until [`TxDevice::flush`].
    Ok,
    /// No room now (ring full, socket buffer full); try again later.
    Full,
    /// Refused (too long, interface down, ...); counted in `errors`.
    Failed,
}

struct TxRing {
    map: sys::Mapping,
    nframes: usize,
    cur: usize,
    queued: usize,
}

/// An interface opened for sending.
pub struct TxDevice {
    fd: OwnedFd,
    ring: Option<TxRing>,
    xdp: Option<xdp::XdpTx>,
    /// RING method: consecutive TCP segments joined into offload frames,
    /// sent on a second socket with `PACKET_VNET_HDR` ([`gso`]).
    gso: Option<(OwnedFd, Box<gso::Coalescer>)>,
    /// Frames refused by the kernel.
    pub errors: u64,
    /// The last refusal, for a message.
    pub last_error: Option<io::Error>,
}

impl TxDevice {
    /// Opens `ifname` for sending. The socket receives nothing.
    pub fn open(ifname: &str, method: Method) -> Result<TxDevice, DevError> {
        let (fd, ifindex) = open_socket(ifname, 0).map_err(|e| xdp_open_err(e, method))?;
        if method == Method::Xdp {
            // The packet socket stays unbound and unused.
            let x = xdp::XdpTx::open(ifname, ifindex as u32)?;
            return Ok(TxDevice {
                fd,
                ring: None,
                xdp: Some(x),
                gso: None,
                errors: 0,
                last_error: None,
            });
        }
        let one: libc::c_int = 1;
        // Straight to the driver, as a forwarding path wants; kernels
        // without it just queue.
        let _ = sys::set_opt(&fd, sys::PACKET_QDISC_BYPASS, &one);
        let ring = match method {
            Method::Socket | Method::Xdp => None,
            Method::Ring => {
                let v: libc::c_int = TPACKET_V2;
                sys::set_opt(&fd, sys::PACKET_VERSION, &v).map_err(os(ifname, "PACKET_VERSION"))?;
                // A malformed frame is skipped rather than stopping the
                // ring.
                sys::set_opt(&fd, sys::PACKET_LOSS, &one).map_err(os(ifname, "PACKET_LOSS"))?;
                let (map, nframes) = map_ring(
                    &fd,
                    ifname,
                    (sys::PACKET_TX_RING, "PACKET_TX_RING"),
                    TX_BLOCK_SIZE,
                    TX_BLOCKS,
                    TX_FRAME_SIZE,
                )?;
                Some(TxRing {
                    map,
                    nframes,
                    cur: 0,
                    queued: 0,
                })
            }
        };
        sys::bind(&fd, ifindex, 0).map_err(os(ifname, "bind"))?;
        // Best effort: without it, segments go one by one through the ring.
        let gso = match method {
            Method::Ring => {
                gso_socket(ifname, ifindex).map(|f| (f, Box::new(gso::Coalescer::new())))
            }
            _ => None,
        };
        Ok(TxDevice {
            fd,
            ring,
            xdp: None,
            gso,
            errors: 0,
            last_error: None,
        })
    }

    /// The socket, to wait for writability when the ring is full (XDP:
    /// queue 0's socket, writable when its TX ring is half empty).
    pub fn fd(&self) -> BorrowedFd<'_> {
        match &self.xdp {
            Some(x) => x.fd(),
            None => self.fd.as_fd(),
        }
    }

    /// How many frames (up to `max`) can be sent now.
    pub fn room(&self, max: usize) -> usize {
        if let Some(x) = &self.xdp {
            return x.room(max);
        }
        let Some(r) = &self.ring else {
            return max;
        };
        let mut n = 0;
        while n < max.min(r.nframes) {
            let off = ((r.cur + n) % r.nframes) * TX_FRAME_SIZE;
            if r.map.load(off) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING) != 0 {
                break;
            }
            n += 1;
        }
        n
    }

    /// Sends one frame (ring: writes it into the ring; it leaves at the
    /// next [`TxDevice::flush`]).
    pub fn send(&mut self, data: &[u8]) -> Sent {
        if let Some(x) = &mut self.xdp {
            return match x.send(data) {
                Ok(s) => s,
                Err(e) => {
                    self.errors += 1;
                    self.last_error = Some(e);
                    Sent::Failed
                }
            };
        }
        if let Some((_, co)) = &mut self.gso {
            if co.append(data) {
                return Sent::Ok;
            }
            if co.pending() {
                self.send_gso();
            }
            if let Some((_, co)) = &mut self.gso {
                if co.start(data) {
                    return Sent::Ok;
                }
            }
        }
        let Some(r) = &mut self.ring else {
            return match sys::send(&self.fd, data) {
                Ok(_) => Sent::Ok,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ENOBUFS)) => {
                    Sent::Full
                }
                Err(e) => {
                    self.errors += 1;
                    self.last_error = Some(e);
                    Sent::Failed
                }
            };
        };
        if data.len() > TX_FRAME_SIZE - TX_DATA_OFF {
            self.errors += 1;
            return Sent::Failed;
        }
        let off = r.cur * TX_FRAME_SIZE;
        if r.map.load(off) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING) != 0 {
            return Sent::Full;
        }
        // SAFETY: the frame's status is neither "send request" nor
        // "sending", so the kernel does not read or write it until we set
        // the status below; no other view of the frame exists.
        let Some(frame) = (unsafe { r.map.bytes_mut(off, TX_FRAME_SIZE) }) else {
            return Sent::Failed;
        };
        frame[TX_DATA_OFF..TX_DATA_OFF + data.len()].copy_from_slice(data);
        let len = (data.len() as u32).to_ne_bytes();
        frame[4..8].copy_from_slice(&len); // tp_len
        frame[8..12].copy_from_slice(&len); // tp_snaplen
        r.map.store(off, TP_STATUS_SEND_REQUEST);
        r.cur = (r.cur + 1) % r.nframes;
        r.queued += 1;
        Sent::Ok
    }

    /// Sends the held offload frame, after what the ring holds (which is
    /// older).
    fn send_gso(&mut self) {
        self.kick_ring();
        let Some((fd, co)) = &mut self.gso else {
            return;
        };
        if let Some(frame) = co.take() {
            if let Err(e) = sys::send(fd, frame) {
                self.errors += 1;
                self.last_error = Some(e);
            }
        }
    }

    /// Segments joined into offload frames so far (RING method).
    pub fn gso_stats(&self) -> GsoStats {
        self.gso
            .as_ref()
            .map(|(_, c)| c.stats())
            .unwrap_or_default()
    }

    /// Asks the kernel to send what the ring holds (one system call), then
    /// any held offload frame.
    pub fn flush(&mut self) {
        if self.gso.as_ref().is_some_and(|(_, c)| c.pending()) {
            self.send_gso();
            return;
        }
        self.kick_ring();
    }

    fn kick_ring(&mut self) {
        if let Some(x) = &mut self.xdp {
            let bad = x.bad();
            if let Some(e) = x.flush() {
                self.errors += 1;
                self.last_error = Some(e);
            }
            if x.bad() > bad {
                self.errors += x.bad() - bad;
                self.last_error = Some(io::Error::other(
                    "the kernel gave back a transmit frame pronto had not lent (skipped)",
                ));
            }
            return;
        }
        let Some(r) = &mut self.ring else {
            return;
        };
        if r.queued == 0 {
            return;
        }
        r.queued = 0;
        if let Err(e) = sys::kick(&self.fd) {
            if !matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ENOBUFS)) {
                self.errors += 1;
                self.last_error = Some(e);
            }
        }
    }

    /// Frames written into the ring and not yet handed to the kernel.
    pub fn queued(&self) -> usize {
        if let Some(x) = &self.xdp {
            return x.queued();
        }
        self.ring.as_ref().map_or(0, |r| r.queued)
    }

    /// Length of the ring mapping (XDP: of the UMEM frames sent from), 0
    /// for the socket method.
    pub fn ring_bytes(&self) -> usize {
        if let Some(x) = &self.xdp {
            return x.umem_bytes();
        }
        self.ring.as_ref().map_or(0, |r| r.map.len())
    }
}

impl Drop for TxDevice {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_names_and_missing_interfaces_are_errors() {
        let e = RxDevice::open("", &RxConfig::default())
            .err()
            .expect("error");
        assert_eq!(e.to_string(), ": bad interface name");
        let e = TxDevice::open("a-name-far-too-long", Method::Socket)
            .err()
            .expect("error");
        assert_eq!(e.to_string(), "a-name-far-too-long: bad interface name");
        match TxDevice::open("pronto-nonexist", Method::Ring) {
            Err(DevError::Os { what, .. }) => {
                // Without CAP_NET_RAW the socket call fails first.
                assert!(what == "no such interface" || what == "socket", "{what}");
            }
            other => panic!("unexpected {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn ring_entries_outside_the_slot_are_refused() {
        let mut slot = vec![0u8; 4096];
        // A plausible entry: mac at 90, 60 bytes, VLAN 7 reported.
        let put =
            |b: &mut [u8], off: usize, v: u32| b[off..off + 4].copy_from_slice(&v.to_ne_bytes());
        put(&mut slot, 0, TP_STATUS_USER | TP_STATUS_VLAN_VALID);
        put(&mut slot, 4, 60); // len
        put(&mut slot, 8, 60); // snaplen
        slot[12..14].copy_from_slice(&90u16.to_ne_bytes());
        put(&mut slot, 16, 3); // sec
        put(&mut slot, 20, 5); // nsec
        slot[24..26].copy_from_slice(&7u16.to_ne_bytes());
        let e = parse_entry(&slot).expect("entry");
        assert_eq!((e.mac, e.snaplen, e.len), (90, 60, 60));
        assert_eq!(e.ts, 3_000_000_005);
        assert_eq!(e.vlan, Some((0x8100, 7)));
        assert!(!e.outgoing);
        // Frame bytes past the slot.
        put(&mut slot, 8, 4010);
        assert!(parse_entry(&slot).is_none());
        put(&mut slot, 8, u32::MAX);
        assert!(parse_entry(&slot).is_none());
        put(&mut slot, 8, 60);
        // MAC offset inside the header (no room for the virtio-net header).
        slot[12..14].copy_from_slice(&61u16.to_ne_bytes());
        assert!(parse_entry(&slot).is_none());
        // Slot too short for the header itself.
        assert!(parse_entry(&slot[..40]).is_none());
    }

    #[test]
    fn vlan_tag_is_put_back() {
        let pool = Pool::new(4).expect("pool");
        let mut p = pool
            .alloc_frame(&[1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0x08, 0x00, 0x45], 0)
            .expect("pkt");
        insert_vlan(&mut p, (0x8100, 7));
        assert_eq!(
            p.data(),
            &[1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 0x81, 0x00, 0, 7, 0x08, 0x00, 0x45]
        );
    }
}
