//! `METHOD XDP`: frames move through `AF_XDP` sockets in copy mode.
//!
//! Receiving attaches a small XDP program to the interface (built here as
//! raw eBPF instructions, no compiler or libbpf at run time): it looks up
//! the frame's receive queue in an `XSKMAP` and redirects the frame to
//! the socket bound to that queue, or passes it to the kernel's stack
//! when the queue has none. The program is attached through a BPF link,
//! natively (in the driver) when the driver can, otherwise in generic
//! (socket buffer) mode ([`XdpMode`]); the link, and with it the program,
//! goes away when the receiving device is dropped or the process dies.
//!
//! Each receive queue of the interface (`/sys/class/net/IF/queues/rx-*`)
//! gets one socket with its own UMEM: an anonymous area of 2,048 frames of
//! 4,096 bytes, the first half lent to the kernel for receiving (fill
//! ring), the second half used for sending from queue 0's socket. A
//! `FromDevice` and a `ToDevice` of the same interface in one process
//! share these sockets (the kernel allows one socket per queue without a
//! shared UMEM): receiving touches only the RX and fill rings and the
//! first half of the UMEM, sending only the TX and completion rings and
//! the second half, so the two sides never need a lock.
//!
//! Every address and length the kernel hands back (RX descriptors,
//! completion entries) is checked against the UMEM half it belongs to and
//! against frames pronto actually lent; a bad one is counted and skipped.
//!
//! Limits: copy mode only (zero-copy needs driver support that veth lacks);
//! frames the host itself sends on the interface are not seen (XDP runs on
//! receive only); a frame is received whole or not at all (no multi-buffer
//! frames), so an interface whose MTU exceeds 3,840 bytes loses larger
//! frames in the kernel ([`crate::RxDevice::take_kernel_drops`]). With an
//! XDP program attached, veth turns segmentation offload off on its peer,
//! but not checksum offload: a host sending TCP through a veth into pronto
//! must compute its checksums (`ethtool -K PEER tx off`), since an XDP
//! frame carries no note that its checksum is left to the device. In
//! generic mode nothing turns segmentation offload off, so segmentation-
//! offload frames longer than a UMEM frame are dropped by the kernel.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};

use pronto_packet::{Batch, Pool, EXTRA_LENGTH_ANNO_OFFSET, MAX_PACKET};

use crate::xdp_sys::{self, RingKind, RingMap, Umem};
use crate::{DevError, RxStats, Sent};

/// Bytes per UMEM frame.
pub const FRAME_SIZE: usize = 4096;
/// UMEM frames per queue lent to the kernel for receiving.
const RX_FRAMES: u32 = 1024;
/// UMEM frames per queue for sending.
const TX_FRAMES: u32 = 1024;
/// Entries in each of the four rings.
const RING_SIZE: u32 = 1024;
/// Most transmit kicks per flush (copy mode sends 32 frames per kick).
const MAX_KICKS: usize = 64;
/// Most queues probed when sysfs cannot say how many there are.
const MAX_QUEUES: u32 = 256;
/// `XDP_PKT_CONTD`: the frame continues in the next descriptor.
const XDP_PKT_CONTD: u32 = 1;

const _: () = assert!(RX_FRAMES <= RING_SIZE && TX_FRAMES <= RING_SIZE);
const _: () = assert!(RING_SIZE.is_power_of_two() && FRAME_SIZE.is_power_of_two());

/// Where the XDP program runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver, before a socket buffer is made.
    Native,
    /// In the kernel's generic hook, on socket buffers (any driver).
    Generic,
}

impl XdpMode {
    /// `native` or `generic`.
    pub fn as_str(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Generic => "generic",
        }
    }
}

// ---------------------------------------------------------------------
// The XDP program.

/// Encodes one `struct bpf_insn`: opcode, destination and source
/// registers (4 bits each), offset, immediate.
pub(crate) fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    let regs = if cfg!(target_endian = "little") {
        (src << 4) | (dst & 0x0f)
    } else {
        (dst << 4) | (src & 0x0f)
    };
    let mut b = [0u8; 8];
    b[0] = code;
    b[1] = regs;
    b[2..4].copy_from_slice(&off.to_ne_bytes());
    b[4..8].copy_from_slice(&imm.to_ne_bytes());
    u64::from_ne_bytes(b)
}

/// `BPF_LDX | BPF_MEM | BPF_W`: 32-bit load from `src + off`.
const LDX_MEM_W: u8 = 0x61;
/// `BPF_LD | BPF_IMM | BPF_DW`: 64-bit immediate (two instructions).
const LD_IMM64: u8 = 0x18;
/// `BPF_ALU64 | BPF_MOV | BPF_K`.
const MOV64_IMM: u8 = 0xb7;
/// `BPF_JMP | BPF_CALL`.
const CALL: u8 = 0x85;
/// `BPF_JMP | BPF_EXIT`.
const EXIT: u8 = 0x95;
/// `BPF_PSEUDO_MAP_FD`: the immediate of `LD_IMM64` is a map descriptor.
const PSEUDO_MAP_FD: u8 = 1;
/// `offsetof(struct xdp_md, rx_queue_index)`.
const XDP_MD_RX_QUEUE_INDEX: i16 = 16;
/// Helper `bpf_redirect_map`.
const FN_REDIRECT_MAP: i32 = 51;
/// `XDP_PASS`: the action when the queue has no socket.
const XDP_PASS: i32 = 2;

/// The program: `return bpf_redirect_map(&xsks, ctx->rx_queue_index,
/// XDP_PASS);` with `xsks` the map descriptor `map_fd`.
pub(crate) fn program(map_fd: i32) -> [u64; 6] {
    [
        // r2 = ctx->rx_queue_index
        insn(LDX_MEM_W, 2, 1, XDP_MD_RX_QUEUE_INDEX, 0),
        // r1 = &xsks (the loader replaces the descriptor by the map)
        insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        // r3 = XDP_PASS (the lower bits of the flags: the action on a miss)
        insn(MOV64_IMM, 3, 0, 0, XDP_PASS),
        // r0 = bpf_redirect_map(r1, r2, r3)
        insn(CALL, 0, 0, 0, FN_REDIRECT_MAP),
        insn(EXIT, 0, 0, 0, 0),
    ]
}

// ---------------------------------------------------------------------
// Ring arithmetic. Positions are free-running u32 counters; the entry is
// the position modulo the (power-of-two) size.

/// Entries ready to consume, given the producer's and our consumer's
/// positions; never more than the ring holds, whatever the kernel wrote.
pub(crate) fn ring_avail(prod: u32, cons: u32, size: u32) -> u32 {
    prod.wrapping_sub(cons).min(size)
}

/// Entries free to produce into, given our producer's and the consumer's
/// positions.
pub(crate) fn ring_free(prod: u32, cons: u32, size: u32) -> u32 {
    size - prod.wrapping_sub(cons).min(size)
}

/// Checks an RX descriptor against the receive frames `first..first + n`
/// of the UMEM: `(frame index from first, byte offset in the UMEM)`, or
/// `None` if the address is outside those frames or the bytes run past
/// the frame's end.
pub(crate) fn check_rx_desc(addr: u64, len: u32, first: u32, n: u32) -> Option<(u32, usize)> {
    let frame = addr / FRAME_SIZE as u64;
    let within = (addr % FRAME_SIZE as u64) as usize;
    if frame < first as u64 || frame >= first as u64 + n as u64 {
        return None;
    }
    if within + len as usize > FRAME_SIZE {
        return None;
    }
    Some(((frame - first as u64) as u32, usize::try_from(addr).ok()?))
}

/// Checks a completion entry against the transmit frames `first..first +
/// n`: the frame's index from `first`, if `addr` is the start of one.
pub(crate) fn check_tx_addr(addr: u64, first: u32, n: u32) -> Option<u32> {
    if !addr.is_multiple_of(FRAME_SIZE as u64) {
        return None;
    }
    let frame = addr / FRAME_SIZE as u64;
    if frame < first as u64 || frame >= first as u64 + n as u64 {
        return None;
    }
    Some((frame - first as u64) as u32)
}

// ---------------------------------------------------------------------
// Errors.

fn hint(ifname: &str, step: &'static str, err: &io::Error) -> String {
    let e = err.raw_os_error().unwrap_or(0);
    match e {
        libc::EPERM | libc::EACCES => {
            if step.starts_with("registering") {
                "pinning the UMEM needs CAP_IPC_LOCK or a larger RLIMIT_MEMLOCK \
                 (`ulimit -l`); run as root"
                    .into()
            } else {
                "METHOD XDP needs root, or CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF; \
                 run pronto as root or use METHOD RING"
                    .into()
            }
        }
        libc::EAFNOSUPPORT => "this kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS); \
                               use METHOD RING"
            .into(),
        libc::ENOSYS => "this kernel has no bpf(2) (CONFIG_BPF_SYSCALL); use METHOD RING".into(),
        libc::ENODEV | libc::ENXIO => {
            format!("no interface `{ifname}` in this network namespace (see `ip link`)")
        }
        libc::EBUSY if step.starts_with("attaching") => format!(
            "another XDP program is attached to {ifname} (`ip link show {ifname}` shows it; \
             `ip link set dev {ifname} xdp off` removes one attached without a link)"
        ),
        libc::EBUSY => format!(
            "another AF_XDP socket is bound to this queue of {ifname} \
             (another process using METHOD XDP on it?)"
        ),
        libc::ENOMEM | libc::ENOBUFS if step.starts_with("registering") => {
            "the UMEM could not be pinned: raise RLIMIT_MEMLOCK (`ulimit -l`) or run as root".into()
        }
        libc::ENETDOWN => format!("{ifname} is down (`ip link set {ifname} up`)"),
        _ => "use METHOD RING if XDP cannot work on this interface".into(),
    }
}

/// A [`DevError::Xdp`] for `step`, with advice drawn from the error.
pub(crate) fn xdp_err(ifname: &str, step: &'static str, err: io::Error) -> DevError {
    let hint = hint(ifname, step, &err);
    DevError::Xdp {
        ifname: ifname.to_string(),
        step,
        err,
        hint,
    }
}

// ---------------------------------------------------------------------
// Sockets.

/// One queue's socket, its rings and its UMEM. The descriptor comes
/// first so that it is closed before the rings and UMEM are unmapped.
struct Xsk {
    fd: OwnedFd,
    rx: RingMap,
    fill: RingMap,
    tx: RingMap,
    comp: RingMap,
    umem: Umem,
}

impl Xsk {
    /// Opens a socket with all four rings and binds it to `queue`.
    fn open(ifname: &str, ifindex: u32, queue: u32) -> Result<Xsk, DevError> {
        let e = |step| move |err| xdp_err(ifname, step, err);
        let fd = xdp_sys::xsk_socket().map_err(e("creating the AF_XDP socket"))?;
        let umem = Umem::new((RX_FRAMES + TX_FRAMES) as usize * FRAME_SIZE)
            .map_err(e("mapping the UMEM"))?;
        xdp_sys::umem_register(&fd, &umem, FRAME_SIZE as u32).map_err(e("registering the UMEM"))?;
        for kind in [
            RingKind::Fill,
            RingKind::Completion,
            RingKind::Rx,
            RingKind::Tx,
        ] {
            xdp_sys::ring_size(&fd, kind, RING_SIZE).map_err(e("sizing the rings"))?;
        }
        let off = xdp_sys::mmap_offsets(&fd).map_err(e("reading the ring layout"))?;
        let map = |kind| RingMap::new(&fd, kind, RING_SIZE, off.of(kind));
        let fill = map(RingKind::Fill).map_err(e("mapping the fill ring"))?;
        let comp = map(RingKind::Completion).map_err(e("mapping the completion ring"))?;
        let rx = map(RingKind::Rx).map_err(e("mapping the RX ring"))?;
        let tx = map(RingKind::Tx).map_err(e("mapping the TX ring"))?;
        // A socket closed just before (this process's previous port) lets
        // go of its queue in deferred kernel work: a busy queue is retried
        // for up to a second.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1);
        loop {
            match xdp_sys::xsk_bind(
                &fd,
                ifindex,
                queue,
                xdp_sys::XDP_COPY | xdp_sys::XDP_USE_NEED_WAKEUP,
            ) {
                Ok(()) => break,
                Err(err)
                    if err.raw_os_error() == Some(libc::EBUSY)
                        && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(err) => return Err(e("binding the AF_XDP socket to the queue")(err)),
            }
        }
        Ok(Xsk {
            fd,
            rx,
            fill,
            tx,
            comp,
            umem,
        })
    }
}

/// An interface's sockets, shared by its receiving and sending devices in
/// this process.
struct Port {
    ifindex: u32,
    queues: Vec<Xsk>,
    /// The receive side's state, while no [`XdpRx`] holds it.
    rx: Mutex<Option<Vec<RxQueue>>>,
    /// The send side's state, while no [`XdpTx`] holds it.
    tx: Mutex<Option<TxState>>,
}

/// Ports open in this process, by interface name.
static PORTS: Mutex<Vec<(String, Weak<Port>)>> = Mutex::new(Vec::new());

/// How many receive queues `ifname` has, from sysfs, if sysfs shows this
/// namespace's interface of that name.
fn sysfs_rx_queues(ifname: &str, ifindex: u32) -> Option<u32> {
    let dir = format!("/sys/class/net/{ifname}");
    let idx: u32 = std::fs::read_to_string(format!("{dir}/ifindex"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    if idx != ifindex {
        // sysfs belongs to another network namespace.
        return None;
    }
    let n = std::fs::read_dir(format!("{dir}/queues"))
        .ok()?
        .filter_map(Result::ok)
        .filter(|d| d.file_name().to_string_lossy().starts_with("rx-"))
        .count();
    u32::try_from(n).ok().filter(|&n| n > 0)
}

impl Port {
    /// The port of `ifname`, opening it (one socket per receive queue) if
    /// this process has none.
    fn get(ifname: &str, ifindex: u32) -> Result<Arc<Port>, DevError> {
        let mut ports = lock(&PORTS);
        ports.retain(|(_, w)| w.strong_count() > 0);
        if let Some(p) = ports
            .iter()
            .find(|(n, _)| n == ifname)
            .and_then(|(_, w)| w.upgrade())
        {
            if p.ifindex == ifindex {
                return Ok(p);
            }
        }
        let queues = match sysfs_rx_queues(ifname, ifindex) {
            Some(n) => (0..n)
                .map(|q| Xsk::open(ifname, ifindex, q))
                .collect::<Result<Vec<_>, _>>()?,
            None => {
                // sysfs shows another namespace: bind queue after queue
                // until the kernel says there is no such queue.
                let mut v = vec![Xsk::open(ifname, ifindex, 0)?];
                for q in 1..MAX_QUEUES {
                    match Xsk::open(ifname, ifindex, q) {
                        Ok(x) => v.push(x),
                        Err(DevError::Xdp { err, .. })
                            if err.raw_os_error() == Some(libc::EINVAL) =>
                        {
                            break
                        }
                        Err(e) => return Err(e),
                    }
                }
                v
            }
        };
        let rx = queues.iter().map(RxQueue::new).collect();
        let tx = TxState::new(&queues[0]);
        let p = Arc::new(Port {
            ifindex,
            queues,
            rx: Mutex::new(Some(rx)),
            tx: Mutex::new(Some(tx)),
        });
        ports.push((ifname.to_string(), Arc::downgrade(&p)));
        Ok(p)
    }
}

// ---------------------------------------------------------------------
// Receiving.

/// One queue's receive state: our positions in the RX and fill rings and
/// which receive frames are lent to the kernel.
struct RxQueue {
    rx_cons: u32,
    fill_prod: u32,
    /// Receive frames we hold (UMEM addresses), to put on the fill ring.
    free: Vec<u64>,
    /// Per receive frame: lent to the kernel (on the fill ring or being
    /// filled), so a descriptor naming it is plausible.
    lent: Vec<bool>,
}

impl RxQueue {
    fn new(x: &Xsk) -> RxQueue {
        RxQueue {
            rx_cons: x.rx.producer(),
            fill_prod: x.fill.producer(),
            free: (0..RX_FRAMES)
                .rev()
                .map(|i| i as u64 * FRAME_SIZE as u64)
                .collect(),
            lent: vec![false; RX_FRAMES as usize],
        }
    }

    /// Puts every frame we hold on the fill ring (as many as fit), with
    /// one publication, and wakes the kernel if it asks.
    fn refill(&mut self, x: &Xsk) {
        let room = ring_free(self.fill_prod, x.fill.consumer(), x.fill.size());
        let n = room.min(self.free.len() as u32);
        if n == 0 {
            return;
        }
        for _ in 0..n {
            let Some(addr) = self.free.pop() else { break };
            self.lent[(addr / FRAME_SIZE as u64) as usize] = true;
            x.fill.write_addr(self.fill_prod, addr);
            self.fill_prod = self.fill_prod.wrapping_add(1);
        }
        x.fill.set_producer(self.fill_prod);
        if x.fill.flags() & xdp_sys::XDP_RING_NEED_WAKEUP != 0 {
            let _ = xdp_sys::kick_rx(&x.fd);
        }
    }
}

/// The receiving side of an interface: the attached program, and the
/// RX and fill rings of every queue.
pub(crate) struct XdpRx {
    /// Detaches the program when closed; closed first.
    _link: OwnedFd,
    _prog: OwnedFd,
    _map: OwnedFd,
    mode: XdpMode,
    port: Arc<Port>,
    queues: Vec<RxQueue>,
    /// The queue to look at first next time (round robin).
    next: usize,
    /// Readable when any queue's socket is (several queues only).
    epoll: Option<OwnedFd>,
    /// Kernel drop counts (all queues) at the last look.
    kernel_drops_seen: std::cell::Cell<u64>,
}

impl XdpRx {
    /// Opens `ifname` (index `ifindex`) for receiving: sockets on every
    /// receive queue, the map, the program, the link.
    pub(crate) fn open(ifname: &str, ifindex: u32) -> Result<XdpRx, DevError> {
        let port = Port::get(ifname, ifindex)?;
        let taken = lock(&port.rx).take();
        let Some(mut queues) = taken else {
            return Err(DevError::Xdp {
                ifname: ifname.to_string(),
                step: "opening",
                err: io::Error::from_raw_os_error(libc::EBUSY),
                hint: format!(
                    "{ifname} is already received with METHOD XDP in this process \
                     (one FromDevice per interface)"
                ),
            });
        };
        for (q, x) in queues.iter_mut().zip(&port.queues) {
            q.refill(x);
        }
        match Self::attach(ifname, ifindex, &port) {
            Ok((link, prog, map, mode, epoll)) => {
                let seen = total_kernel_drops(&port);
                Ok(XdpRx {
                    _link: link,
                    _prog: prog,
                    _map: map,
                    mode,
                    port,
                    queues,
                    next: 0,
                    epoll,
                    kernel_drops_seen: std::cell::Cell::new(seen),
                })
            }
            Err(e) => {
                *lock(&port.rx) = Some(queues);
                Err(e)
            }
        }
    }

    /// Makes the map, loads the program, attaches it.
    #[allow(clippy::type_complexity)]
    fn attach(
        ifname: &str,
        ifindex: u32,
        port: &Port,
    ) -> Result<(OwnedFd, OwnedFd, OwnedFd, XdpMode, Option<OwnedFd>), DevError> {
        let e = |step| move |err| xdp_err(ifname, step, err);
        let nq = port.queues.len() as u32;
        let map = xdp_sys::xskmap_create(nq).map_err(e("creating the XSKMAP (bpf)"))?;
        for (i, x) in port.queues.iter().enumerate() {
            xdp_sys::map_update(&map, i as u32, x.fd.as_raw_fd() as u32)
                .map_err(e("putting the socket in the XSKMAP (bpf)"))?;
        }
        let insns = program(map.as_raw_fd());
        let prog = xdp_sys::prog_load_xdp(&insns).map_err(|(err, log)| {
            let mut d = xdp_err(ifname, "loading the XDP program (bpf)", err);
            if let DevError::Xdp { hint, .. } = &mut d {
                if !log.is_empty() {
                    hint.push_str("; verifier log:\n");
                    hint.push_str(&log);
                }
            }
            d
        })?;
        let (link, mode) =
            match xdp_sys::xdp_link_create(&prog, ifindex, xdp_sys::XDP_FLAGS_DRV_MODE) {
                Ok(l) => (l, XdpMode::Native),
                Err(native) if native.raw_os_error() == Some(libc::EBUSY) => {
                    return Err(xdp_err(ifname, "attaching the XDP program", native));
                }
                Err(native) => {
                    match xdp_sys::xdp_link_create(&prog, ifindex, xdp_sys::XDP_FLAGS_SKB_MODE) {
                        Ok(l) => (l, XdpMode::Generic),
                        Err(err) => {
                            let mut d = xdp_err(ifname, "attaching the XDP program", err);
                            if let DevError::Xdp { hint, .. } = &mut d {
                                hint.push_str(&format!(" (native mode failed first: {native})"));
                            }
                            return Err(d);
                        }
                    }
                }
            };
        let epoll = if port.queues.len() > 1 {
            let fds: Vec<&OwnedFd> = port.queues.iter().map(|x| &x.fd).collect();
            Some(xdp_sys::epoll_readable(&fds).map_err(e("making the epoll descriptor"))?)
        } else {
            None
        };
        Ok((link, prog, map, mode, epoll))
    }

    /// Where the program runs.
    pub(crate) fn mode(&self) -> XdpMode {
        self.mode
    }

    /// Queues (sockets) received from.
    pub(crate) fn queue_count(&self) -> usize {
        self.queues.len()
    }

    /// Readable when a frame waits: the socket (one queue) or an epoll
    /// descriptor over all of them.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        match &self.epoll {
            Some(ep) => ep.as_fd(),
            None => self.port.queues[0].fd.as_fd(),
        }
    }

    /// Frames the kernel dropped (full RX ring, no fill frame, too long)
    /// since the last call.
    pub(crate) fn take_kernel_drops(&self) -> Option<u64> {
        let now = total_kernel_drops(&self.port);
        let d = now.saturating_sub(self.kernel_drops_seen.get());
        self.kernel_drops_seen.set(now);
        Some(d)
    }

    /// Moves up to `limit - batch.len()` frames into pool packets, queue
    /// after queue from where the last call stopped, and gives their
    /// frames back to the kernel.
    pub(crate) fn recv(
        &mut self,
        snaplen: usize,
        ts: i64,
        pool: &Pool,
        batch: &mut Batch,
        limit: usize,
        stats: &mut RxStats,
    ) {
        let nq = self.queues.len();
        for k in 0..nq {
            if batch.len() >= limit {
                return;
            }
            let i = (self.next + k) % nq;
            let x = &self.port.queues[i];
            let q = &mut self.queues[i];
            let avail = ring_avail(x.rx.producer(), q.rx_cons, x.rx.size());
            let n = avail.min((limit - batch.len()) as u32);
            for _ in 0..n {
                let (addr, len, options) = x.rx.read_desc(q.rx_cons);
                q.rx_cons = q.rx_cons.wrapping_add(1);
                let Some((frame, off)) = check_rx_desc(addr, len, 0, RX_FRAMES) else {
                    stats.bad += 1;
                    continue;
                };
                if !q.lent[frame as usize] {
                    // Handed back twice, or never lent.
                    stats.bad += 1;
                    continue;
                }
                q.lent[frame as usize] = false;
                if options & XDP_PKT_CONTD != 0 {
                    stats.bad += 1;
                } else {
                    // SAFETY: the frame came back on the RX ring and is not
                    // on the fill ring (it is put back below, after the
                    // last use of this slice), so the kernel does not write
                    // it now.
                    let data = unsafe { x.umem.bytes(off, len as usize) };
                    match data {
                        Some(d) => deliver(d, snaplen, ts, pool, batch, stats),
                        None => stats.bad += 1,
                    }
                }
                q.free.push(addr - addr % FRAME_SIZE as u64);
            }
            if n > 0 {
                x.rx.set_consumer(q.rx_cons);
                q.refill(x);
                if batch.len() >= limit {
                    // Start with the next queue next time.
                    self.next = (i + 1) % nq;
                    return;
                }
            } else if !q.free.is_empty() {
                q.refill(x);
            }
        }
    }
}

impl Drop for XdpRx {
    fn drop(&mut self) {
        // Frames lent to the kernel stay lent: the next receiver of this
        // port goes on from this state.
        *lock(&self.port.rx) = Some(std::mem::take(&mut self.queues));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn total_kernel_drops(port: &Port) -> u64 {
    port.queues
        .iter()
        .filter_map(|x| xdp_sys::xdp_stats(&x.fd).ok())
        .map(|s| s.rx_dropped + s.rx_ring_full)
        .sum()
}

/// Copies one received frame into a pool packet (the first `snaplen`
/// bytes; the rest recorded in the extra length annotation).
fn deliver(
    frame: &[u8],
    snaplen: usize,
    ts: i64,
    pool: &Pool,
    batch: &mut Batch,
    stats: &mut RxStats,
) {
    if frame.len() > MAX_PACKET {
        stats.oversize += 1;
        return;
    }
    let keep = frame.len().min(snaplen);
    let Some(mut p) = pool.alloc_frame(&frame[..keep], ts) else {
        stats.nomem += 1;
        return;
    };
    if keep < frame.len() {
        let extra = (frame.len() - keep) as u32;
        let o = EXTRA_LENGTH_ANNO_OFFSET;
        p.anno_bytes_mut()[o..o + 4].copy_from_slice(&extra.to_ne_bytes());
    }
    stats.packets += 1;
    let _ = batch.push(p);
}

// ---------------------------------------------------------------------
// Sending.

/// The sending side of an interface: queue 0's TX and completion rings
/// and the second half of its UMEM.
pub(crate) struct XdpTx {
    port: Arc<Port>,
    st: TxState,
}

/// Positions in the TX and completion rings and the transmit frames.
#[derive(Default)]
struct TxState {
    tx_prod: u32,
    comp_cons: u32,
    /// Frames written but not yet published.
    queued: u32,
    /// Transmit frames we hold (UMEM addresses).
    free: Vec<u64>,
    /// Per transmit frame: on the TX ring or not yet completed.
    lent: Vec<bool>,
    /// Completion entries that named no frame we lent.
    bad: u64,
}

impl TxState {
    fn new(x: &Xsk) -> TxState {
        TxState {
            tx_prod: x.tx.producer(),
            comp_cons: x.comp.consumer(),
            queued: 0,
            free: (RX_FRAMES..RX_FRAMES + TX_FRAMES)
                .rev()
                .map(|i| i as u64 * FRAME_SIZE as u64)
                .collect(),
            lent: vec![false; TX_FRAMES as usize],
            bad: 0,
        }
    }
}

impl XdpTx {
    /// Opens `ifname` for sending (queue 0's socket).
    pub(crate) fn open(ifname: &str, ifindex: u32) -> Result<XdpTx, DevError> {
        let port = Port::get(ifname, ifindex)?;
        let taken = lock(&port.tx).take();
        let Some(st) = taken else {
            return Err(DevError::Xdp {
                ifname: ifname.to_string(),
                step: "opening",
                err: io::Error::from_raw_os_error(libc::EBUSY),
                hint: format!(
                    "{ifname} is already sent to with METHOD XDP in this process \
                     (one ToDevice per interface)"
                ),
            });
        };
        Ok(XdpTx { port, st })
    }

    /// Completion entries that named no frame this side lent.
    pub(crate) fn bad(&self) -> u64 {
        self.st.bad
    }

    fn xsk(&self) -> &Xsk {
        &self.port.queues[0]
    }

    /// The socket, writable when its TX ring has room.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.xsk().fd.as_fd()
    }

    /// Takes back the frames the kernel has sent (one publication).
    fn reclaim(&mut self) {
        let x = &self.port.queues[0];
        let n = ring_avail(x.comp.producer(), self.st.comp_cons, x.comp.size());
        if n == 0 {
            return;
        }
        for _ in 0..n {
            let addr = x.comp.read_addr(self.st.comp_cons);
            self.st.comp_cons = self.st.comp_cons.wrapping_add(1);
            match check_tx_addr(addr, RX_FRAMES, TX_FRAMES) {
                Some(i) if self.st.lent[i as usize] => {
                    self.st.lent[i as usize] = false;
                    self.st.free.push(addr);
                }
                _ => self.st.bad += 1,
            }
        }
        x.comp.set_consumer(self.st.comp_cons);
    }

    /// How many frames (up to `max`) can be written now.
    pub(crate) fn room(&self, max: usize) -> usize {
        let x = self.xsk();
        let frames = self.st.free.len()
            + ring_avail(x.comp.producer(), self.st.comp_cons, x.comp.size()) as usize;
        let slots = ring_free(self.st.tx_prod, x.tx.consumer(), x.tx.size()) as usize;
        max.min(frames).min(slots)
    }

    /// Writes one frame into a free UMEM frame and the TX ring; it is
    /// published at the next [`XdpTx::flush`].
    pub(crate) fn send(&mut self, data: &[u8]) -> Result<Sent, io::Error> {
        if data.len() > FRAME_SIZE {
            return Err(io::Error::other(format!(
                "frame of {} bytes is longer than an XDP frame ({FRAME_SIZE})",
                data.len()
            )));
        }
        if self.st.free.is_empty() {
            self.reclaim();
        }
        let x = &self.port.queues[0];
        if ring_free(self.st.tx_prod, x.tx.consumer(), x.tx.size()) == 0 {
            return Ok(Sent::Full);
        }
        let Some(addr) = self.st.free.pop() else {
            return Ok(Sent::Full);
        };
        // SAFETY: `addr` is a transmit frame we hold (off every ring), so
        // the kernel does not read it until it is put on the TX ring below.
        let buf = unsafe { x.umem.bytes_mut(addr as usize, data.len()) };
        let Some(buf) = buf else {
            self.st.free.push(addr);
            return Err(io::Error::other("transmit frame outside the UMEM"));
        };
        buf.copy_from_slice(data);
        let i = check_tx_addr(addr, RX_FRAMES, TX_FRAMES).unwrap_or(0) as usize;
        self.st.lent[i] = true;
        x.tx.write_desc(self.st.tx_prod, addr, data.len() as u32, 0);
        self.st.tx_prod = self.st.tx_prod.wrapping_add(1);
        self.st.queued += 1;
        Ok(Sent::Ok)
    }

    /// Publishes what was written, makes the kernel send it (copy mode
    /// sends a bounded number per call, so this kicks until the ring is
    /// empty or the kernel makes no progress) and takes back sent frames.
    /// The last error other than "busy" is returned.
    pub(crate) fn flush(&mut self) -> Option<io::Error> {
        let x = &self.port.queues[0];
        if self.st.queued > 0 {
            x.tx.set_producer(self.st.tx_prod);
            self.st.queued = 0;
        }
        let mut err = None;
        let mut kicks = 0;
        loop {
            let cons = x.tx.consumer();
            if cons == self.st.tx_prod
                || x.tx.flags() & xdp_sys::XDP_RING_NEED_WAKEUP == 0
                || kicks == MAX_KICKS
            {
                break;
            }
            kicks += 1;
            if let Err(e) = xdp_sys::kick_tx(&x.fd) {
                if !matches!(
                    e.raw_os_error(),
                    Some(libc::EAGAIN) | Some(libc::EBUSY) | Some(libc::ENOBUFS)
                ) {
                    err = Some(e);
                    break;
                }
            }
            if x.tx.consumer() == cons {
                // No progress: the device is busy; try at the next flush.
                break;
            }
        }
        self.reclaim();
        err
    }

    /// Frames written and not yet published.
    pub(crate) fn queued(&self) -> usize {
        self.st.queued as usize
    }

    /// Bytes of UMEM this side sends from.
    pub(crate) fn umem_bytes(&self) -> usize {
        self.xsk().umem.len() / 2
    }
}

impl Drop for XdpTx {
    fn drop(&mut self) {
        *lock(&self.port.tx) = Some(std::mem::take(&mut self.st));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_are_encoded_as_the_kernel_reads_them() {
        // r2 = *(u32 *)(r1 + 16): opcode 0x61, dst 2 (low nibble), src 1.
        assert_eq!(
            insn(LDX_MEM_W, 2, 1, 16, 0).to_ne_bytes(),
            [0x61, 0x12, 16, 0, 0, 0, 0, 0]
        );
        let p = program(7);
        let bytes: Vec<[u8; 8]> = p.iter().map(|i| i.to_ne_bytes()).collect();
        assert_eq!(
            bytes,
            vec![
                [0x61, 0x12, 0x10, 0x00, 0, 0, 0, 0], // r2 = ctx->rx_queue_index
                [0x18, 0x11, 0x00, 0x00, 7, 0, 0, 0], // r1 = map fd 7 (pseudo)
                [0x00, 0x00, 0x00, 0x00, 0, 0, 0, 0], // upper half of the immediate
                [0xb7, 0x03, 0x00, 0x00, 2, 0, 0, 0], // r3 = XDP_PASS
                [0x85, 0x00, 0x00, 0x00, 51, 0, 0, 0], // call bpf_redirect_map
                [0x95, 0x00, 0x00, 0x00, 0, 0, 0, 0], // exit
            ]
        );
        // Negative offsets and immediates in two's complement.
        assert_eq!(
            insn(0x07, 10, 0, -8, -1).to_ne_bytes(),
            [0x07, 0x0a, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn ring_positions_wrap_and_are_clamped() {
        assert_eq!(ring_avail(5, 5, 8), 0);
        assert_eq!(ring_avail(7, 5, 8), 2);
        // Across the u32 wrap.
        assert_eq!(ring_avail(2, u32::MAX - 1, 8), 4);
        assert_eq!(ring_free(2, u32::MAX - 1, 8), 4);
        assert_eq!(ring_free(13, 5, 8), 0);
        assert_eq!(ring_free(5, 5, 8), 8);
        // A producer the kernel moved too far, or behind us: never more
        // than the ring holds.
        assert_eq!(ring_avail(100, 5, 8), 8);
        assert_eq!(ring_avail(4, 5, 8), 8);
        assert_eq!(ring_free(4, 5, 8), 0);
    }

    #[test]
    fn descriptors_outside_their_frames_are_refused() {
        let f = FRAME_SIZE as u64;
        // Frame 3 of 4, data at 256, 60 bytes.
        assert_eq!(
            check_rx_desc(3 * f + 256, 60, 0, 4),
            Some((3, 3 * 4096 + 256))
        );
        // Exactly to the frame's end, and one byte past it.
        assert_eq!(check_rx_desc(f + 96, 4000, 0, 4), Some((1, 4096 + 96)));
        assert_eq!(check_rx_desc(f + 96, 4001, 0, 4), None);
        // Past the receive frames, and in the transmit half.
        assert_eq!(check_rx_desc(4 * f, 60, 0, 4), None);
        assert_eq!(check_rx_desc(5 * f, 60, 4, 4), Some((1, 5 * 4096)));
        assert_eq!(check_rx_desc(3 * f, 60, 4, 4), None);
        assert_eq!(check_rx_desc(u64::MAX, u32::MAX, 0, 4), None);
        // Completions: frame starts of the transmit half only.
        assert_eq!(check_tx_addr(1024 * f, 1024, 1024), Some(0));
        assert_eq!(check_tx_addr(2047 * f, 1024, 1024), Some(1023));
        assert_eq!(check_tx_addr(2048 * f, 1024, 1024), None);
        assert_eq!(check_tx_addr(1023 * f, 1024, 1024), None);
        assert_eq!(check_tx_addr(1024 * f + 8, 1024, 1024), None);
        assert_eq!(check_tx_addr(u64::MAX, 1024, 1024), None);
    }

    // -----------------------------------------------------------------
    // Real interfaces: a veth pair in a namespace of its own. The outer
    // test (root) makes the namespace and runs the inner one inside it
    // (`ip netns exec` also gives it that namespace's sysfs); the inner
    // one is ignored unless called that way.

    use crate::{Method, RxConfig, RxDevice, TxDevice};
    use std::process::Command;
    use std::time::{Duration, Instant};

    const ENV_IFS: &str = "PRONTO_XDP_TEST_IFS";

    /// A namespace with a veth pair `xa<pid><tag>`/`xb<pid><tag>` in it,
    /// removed (with the pair) on drop.
    struct Netns {
        name: String,
        a: String,
        b: String,
    }

    impl Netns {
        fn new(tag: &str) -> Option<Netns> {
            if !rustix::process::geteuid().is_root() {
                eprintln!("SKIPPED XDP veth test: needs root (namespaces, BPF, AF_XDP)");
                return None;
            }
            let pid = std::process::id();
            let n = Netns {
                name: format!("pxdp{pid}{tag}"),
                a: format!("xa{pid}{tag}"),
                b: format!("xb{pid}{tag}"),
            };
            let ok = |args: &[&str]| {
                Command::new("ip")
                    .args(args)
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if !ok(&["netns", "add", &n.name]) {
                eprintln!(
                    "SKIPPED XDP veth test: cannot make a network namespace (`ip netns add`)"
                );
                return None;
            }
            for args in [
                vec![
                    "-n", &n.name, "link", "add", &n.a, "type", "veth", "peer", "name", &n.b,
                ],
                vec!["-n", &n.name, "link", "set", &n.a, "up"],
                vec!["-n", &n.name, "link", "set", &n.b, "up"],
            ] {
                assert!(ok(&args), "ip {args:?} failed");
            }
            Some(n)
        }

        /// Runs test `name` of this binary inside the namespace, under
        /// the command `wrapper` if not empty.
        fn run_inner(&self, name: &str, wrapper: &[&str], extra_env: &[(&str, &str)]) {
            let exe = std::env::current_exe().expect("test binary path");
            let out = Command::new("ip")
                .args(["netns", "exec", &self.name])
                .args(wrapper)
                .arg(exe)
                .args([
                    name,
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads",
                    "1",
                ])
                .env(ENV_IFS, format!("{},{}", self.a, self.b))
                .envs(extra_env.iter().copied())
                .output()
                .expect("run the inner test");
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            eprintln!("{text}");
            assert!(out.status.success(), "inner test {name} failed");
            assert!(text.contains("1 passed"), "inner test {name} did not run");
        }
    }

    impl Drop for Netns {
        fn drop(&mut self) {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.name])
                .status();
        }
    }

    fn inner_ifs() -> Option<(String, String)> {
        let v = std::env::var(ENV_IFS).ok()?;
        let (a, b) = v.split_once(',')?;
        Some((a.to_string(), b.to_string()))
    }

    /// A 64-byte test frame: broadcast, ethertype 0x88b5, `seq` and a
    /// pattern after it.
    fn frame(seq: u32, len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[..6].fill(0xff);
        f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x88, 0xb5]);
        f[14..18].copy_from_slice(&seq.to_be_bytes());
        for (i, b) in f[18..].iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(7).wrapping_add(seq as u8);
        }
        f
    }

    fn rx_open(ifname: &str, method: Method) -> RxDevice {
        let cfg = RxConfig {
            method,
            ..RxConfig::default()
        };
        RxDevice::open(ifname, &cfg).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Sends `n` frames from `a` and checks that `b` receives exactly
    /// them, in order, byte for byte.
    fn exchange(a: &str, b: &str, tx_m: Method, rx_m: Method, n: u32) {
        let pool = Pool::new(1024).expect("pool");
        let mut rx = rx_open(b, rx_m);
        if rx_m == Method::Xdp {
            eprintln!(
                "XDP program on {b}: {} mode, {} queue(s)",
                rx.xdp_mode().expect("mode").as_str(),
                rx.queue_count()
            );
        }
        let mut tx = TxDevice::open(a, tx_m).unwrap_or_else(|e| panic!("{e}"));
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut sent = 0;
        let deadline = Instant::now() + Duration::from_secs(5);
        while (got.len() as u32) < n && Instant::now() < deadline {
            // At most 128 frames in flight: the receiver's rings are
            // not to overflow.
            while sent < n && sent < got.len() as u32 + 128 && tx.room(1) > 0 {
                let len = 60 + (sent as usize % 5) * 300;
                match tx.send(&frame(sent, len)) {
                    Sent::Ok => sent += 1,
                    Sent::Full => break,
                    Sent::Failed => panic!("send failed: {:?}", tx.last_error),
                }
                if sent % 16 == 0 {
                    tx.flush();
                }
            }
            tx.flush();
            let mut batch = Batch::new();
            rx.recv(&pool, &mut batch, 256, 0);
            for p in batch.drain() {
                if p.data().get(12..14) == Some(&[0x88, 0xb5][..]) {
                    got.push(p.data().to_vec());
                }
            }
        }
        assert_eq!(
            got.len() as u32,
            n,
            "{tx_m:?} -> {rx_m:?}: frames received ({sent} sent; receive counters {:?}, \
             kernel drops {:?}; send errors {} {:?})",
            rx.stats(),
            rx.take_kernel_drops(),
            tx.errors,
            tx.last_error
        );
        for (i, g) in got.iter().enumerate() {
            let want = frame(i as u32, 60 + (i % 5) * 300);
            assert_eq!(g, &want, "{tx_m:?} -> {rx_m:?}: frame {i}");
        }
        assert_eq!(rx.stats().drops(), 0, "{tx_m:?} -> {rx_m:?}: drops");
        assert_eq!(tx.errors, 0, "{tx_m:?} -> {rx_m:?}: send errors");
        eprintln!("{tx_m:?} -> {rx_m:?}: {n} frames byte-exact");
    }

    #[test]
    fn xdp_frames_cross_a_veth_pair_byte_exact() {
        let Some(ns) = Netns::new("e") else { return };
        ns.run_inner("xdp::tests::inner_veth_exchange", &[], &[]);
        // Without capabilities, and with those of a packet socket only:
        // the error names the step and what is needed.
        let have_setpriv = Command::new("setpriv")
            .arg("--help")
            .output()
            .is_ok_and(|o| o.status.success());
        if !have_setpriv {
            eprintln!("SKIPPED the capability part of the XDP test: no `setpriv` (util-linux)");
            return;
        }
        for (caps, step) in [
            ("-all", "socket"),
            ("-all,+net_raw,+ipc_lock", "creating the XSKMAP (bpf)"),
        ] {
            ns.run_inner(
                "xdp::tests::inner_refused",
                &[
                    "setpriv",
                    "--bounding-set",
                    caps,
                    "--inh-caps",
                    "-all",
                    "--",
                ],
                &[(ENV_STEP, step)],
            );
        }
    }

    const ENV_STEP: &str = "PRONTO_XDP_TEST_STEP";

    #[test]
    #[ignore = "run inside a namespace, without capabilities, by xdp_frames_cross_a_veth_pair_byte_exact"]
    fn inner_refused() {
        let (Some((_, b)), Ok(step)) = (inner_ifs(), std::env::var(ENV_STEP)) else {
            eprintln!("not inside the XDP test namespace; nothing to do");
            return;
        };
        let cfg = RxConfig {
            method: Method::Xdp,
            ..RxConfig::default()
        };
        let e = RxDevice::open(&b, &cfg).err().expect("refused");
        assert_eq!(
            e.to_string(),
            format!(
                "{b}: METHOD XDP: {step}: Operation not permitted (os error 1); \
                 METHOD XDP needs root, or CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF; \
                 run pronto as root or use METHOD RING"
            )
        );
        match TxDevice::open(&b, Method::Xdp) {
            // Sending needs no BPF: an AF_XDP socket is enough.
            Ok(_) => assert_ne!(step, "socket"),
            Err(e) => {
                assert_eq!(step, "socket");
                assert!(e.to_string().contains("METHOD XDP needs root"), "{e}");
            }
        }
    }

    #[test]
    #[ignore = "run inside a namespace by xdp_frames_cross_a_veth_pair_byte_exact"]
    fn inner_veth_exchange() {
        let Some((a, b)) = inner_ifs() else {
            eprintln!("not inside the XDP test namespace; nothing to do");
            return;
        };
        exchange(&a, &b, Method::Xdp, Method::Xdp, 3000);
        exchange(&a, &b, Method::Xdp, Method::Ring, 500);
        exchange(&a, &b, Method::Ring, Method::Xdp, 500);
        // Reopened after the first receiver closed: the port goes on.
        exchange(&b, &a, Method::Xdp, Method::Xdp, 500);

        // One receiver per interface and process, with a clear error.
        let first = rx_open(&b, Method::Xdp);
        let cfg = RxConfig {
            method: Method::Xdp,
            ..RxConfig::default()
        };
        let e = RxDevice::open(&b, &cfg)
            .err()
            .expect("second receiver refused");
        assert_eq!(
            e.to_string(),
            format!(
                "{b}: METHOD XDP: opening: Device or resource busy (os error 16); \
                 {b} is already received with METHOD XDP in this process \
                 (one FromDevice per interface)"
            )
        );
        // A receiver and a sender share the interface's sockets.
        let tx = TxDevice::open(&b, Method::Xdp).expect("sender beside the receiver");
        drop((first, tx));

        // A frame longer than a pool packet is counted, not delivered.
        let mut rx = rx_open(&b, Method::Xdp);
        let mut tx = TxDevice::open(&a, Method::Xdp).expect("tx");
        let _ = Command::new("ip")
            .args(["link", "set", &a, "mtu", "3000"])
            .status();
        let _ = Command::new("ip")
            .args(["link", "set", &b, "mtu", "3000"])
            .status();
        assert_eq!(tx.send(&frame(1, 2500)), Sent::Ok);
        assert_eq!(tx.send(&frame(2, 60)), Sent::Ok);
        tx.flush();
        let pool = Pool::new(64).expect("pool");
        let mut batch = Batch::new();
        let deadline = Instant::now() + Duration::from_secs(2);
        while batch.is_empty() && Instant::now() < deadline {
            rx.recv(&pool, &mut batch, 64, 0);
        }
        let kept: Vec<Vec<u8>> = batch
            .drain()
            .filter(|p| p.data().get(12..14) == Some(&[0x88, 0xb5][..]))
            .map(|p| p.data().to_vec())
            .collect();
        assert_eq!(kept, vec![frame(2, 60)]);
        assert_eq!(rx.stats().oversize, 1);
    }

    #[test]
    fn missing_interface_names_the_step() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIPPED: needs root");
            return;
        }
        let cfg = RxConfig {
            method: Method::Xdp,
            ..RxConfig::default()
        };
        let e = RxDevice::open("pronto-nonexist", &cfg)
            .err()
            .expect("error");
        assert_eq!(
            e.to_string(),
            "pronto-nonexist: METHOD XDP: no such interface: No such device (os error 19); \
             no interface `pronto-nonexist` in this network namespace (see `ip link`)"
        );
    }

    /// Frames per second from a sender to a receiver on a veth pair, one
    /// thread, 64-byte frames, for `secs`.
    fn rate(a: &str, b: &str, m: Method, secs: f64) -> (f64, u64) {
        let pool = Pool::new(4096).expect("pool");
        let mut rx = rx_open(b, m);
        let mut tx = TxDevice::open(a, m).expect("tx");
        let f = frame(0, 64);
        let mut got = 0u64;
        let mut sent = 0u64;
        let start = Instant::now();
        let mut batch = Batch::new();
        while start.elapsed().as_secs_f64() < secs {
            for _ in 0..tx.room(32) {
                if tx.send(&f) == Sent::Ok {
                    sent += 1;
                }
            }
            tx.flush();
            loop {
                let k = rx.recv(&pool, &mut batch, 256, 0);
                got += k as u64;
                batch.clear();
                if k == 0 {
                    break;
                }
            }
        }
        let t = start.elapsed().as_secs_f64();
        (got as f64 / t, sent)
    }

    #[test]
    #[ignore = "measurement: cargo test -p pronto-netdev --release -- --ignored xdp_vs_ring_rate"]
    fn xdp_vs_ring_rate() {
        let Some(ns) = Netns::new("m") else { return };
        ns.run_inner("xdp::tests::inner_rate", &[], &[]);
    }

    #[test]
    #[ignore = "run inside a namespace by xdp_vs_ring_rate"]
    fn inner_rate() {
        let Some((a, b)) = inner_ifs() else { return };
        for round in 0..2 {
            for m in [Method::Ring, Method::Xdp] {
                let (r, sent) = rate(&a, &b, m, 2.0);
                eprintln!(
                    "rate round {round}: {m:?}: {:.0} frames/s received (64 B), {sent} sent",
                    r
                );
            }
        }
    }
}
