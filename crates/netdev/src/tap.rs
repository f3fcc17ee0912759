//! Linux TAP and TUN devices (`/dev/net/tun` with `IFF_TAP | IFF_NO_PI`
//! or `IFF_TUN | IFF_NO_PI`), for the `FromHost`, `ToHost`, `KernelTap`
//! and `KernelTun` elements: a virtual interface whose other end is a file
//! descriptor. Frames (TAP: Ethernet frames; TUN: bare IPv4 or IPv6
//! packets) the host's network stack sends on the interface are read from
//! the descriptor; those written to the descriptor arrive at the host's
//! stack as if received on the interface.
//!
//! [`Tap::open`] creates the interface (or attaches to a persistent one
//! of that name); [`Tap::configure`] gives it an Ethernet address, an MTU,
//! an IPv4 address and netmask, brings it up and optionally adds a
//! default route, with `ioctl`s on an `AF_INET` socket (the same calls
//! `ifconfig` and `route` make). The interface is not made persistent: the
//! kernel deletes it when the descriptor closes, i.e. when the [`Tap`] is
//! dropped.
//!
//! Reads and writes never block. Without `IFF_VNET_HDR` the kernel
//! completes checksums and segments offloaded frames before handing them
//! to the descriptor, so every frame read is a plain Ethernet frame.
//!
//! This module's `unsafe` blocks are the `ioctl`, `socket`, `readv` and
//! `write` calls, each with its reason.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

use pronto_packet::{Batch, Pool, BATCH_MAX};

use crate::DevError;

/// `ARPHRD_ETHER`: the address family of an Ethernet hardware address.
const ARPHRD_ETHER: libc::sa_family_t = 1;
/// `RTF_UP | RTF_GATEWAY` of `<linux/route.h>`.
const RTF_UP: libc::c_ushort = 0x0001;
const RTF_GATEWAY: libc::c_ushort = 0x0002;

/// `struct rtentry` of `<linux/route.h>` (the `SIOCADDRT` argument).
#[repr(C)]
struct RtEntry {
    rt_pad1: libc::c_ulong,
    rt_dst: libc::sockaddr,
    rt_gateway: libc::sockaddr,
    rt_genmask: libc::sockaddr,
    rt_flags: libc::c_ushort,
    rt_pad2: libc::c_short,
    rt_pad3: libc::c_ulong,
    rt_pad4: *mut libc::c_void,
    rt_metric: libc::c_short,
    rt_dev: *mut libc::c_char,
    rt_mtu: libc::c_ulong,
    rt_window: libc::c_ulong,
    rt_irtt: libc::c_ushort,
}

/// Which kind of device [`Tap::open_kind`] creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapKind {
    /// `IFF_TAP`: an Ethernet interface; the descriptor carries Ethernet
    /// frames.
    Tap,
    /// `IFF_TUN`: a point-to-point IP interface; the descriptor carries
    /// bare IPv4 and IPv6 packets (no link header, no packet-information
    /// prefix).
    Tun,
}

/// How to set up a TAP interface once it exists. Fields left `None` are
/// left as the kernel made them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TapConfig {
    /// The interface's Ethernet address (a TUN device has none: leave it
    /// `None` there).
    pub mac: Option<[u8; 6]>,
    /// The interface's MTU (bytes of IP packet, without the Ethernet
    /// header).
    pub mtu: Option<u32>,
    /// The host's IPv4 address on the interface and its netmask.
    pub addr: Option<([u8; 4], [u8; 4])>,
    /// Add a default route through this gateway (on the interface's
    /// network).
    pub gateway: Option<[u8; 4]>,
}

/// Receive-side counters of a TAP reader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TapRxStats {
    /// Packets made.
    pub packets: u64,
    /// Frames longer than a pool slot ([`pronto_packet::MAX_PACKET`]),
    /// dropped.
    pub oversize: u64,
    /// Frames dropped because the pool was empty.
    pub nomem: u64,
}

impl TapRxStats {
    /// Every frame dropped on the way in.
    pub fn drops(&self) -> u64 {
        self.oversize + self.nomem
    }
}

/// A TAP interface and the descriptor that is its other end.
///
/// Reading and writing take `&self`, so one `Tap` can be shared (in an
/// `Arc`) by a reader and a writer.
#[derive(Debug)]
pub struct Tap {
    fd: OwnedFd,
    name: String,
    kind: TapKind,
}

/// True if `name` can name an interface: 1 to 15 bytes, no `/`, blank or
/// NUL (`%d` lets the kernel choose a number).
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && !name.contains(['/', ' ', '\0', '\t', '\n', ':'])
}

/// An `ifreq` naming `name` (already checked by [`valid_name`]).
fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: ifreq is plain data (a name and a union of plain data); all
    // zeroes is a valid value of it.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in ifr.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    ifr
}

/// The name the kernel wrote back into an `ifreq`.
fn ifreq_name(ifr: &libc::ifreq) -> String {
    let bytes: Vec<u8> = ifr
        .ifr_name
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An IPv4 socket address (port 0) as a generic `sockaddr`.
fn inet_sockaddr(ip: [u8; 4]) -> libc::sockaddr {
    let mut sa = libc::sockaddr {
        sa_family: libc::AF_INET as libc::sa_family_t,
        sa_data: [0; 14],
    };
    // sin_port (2 bytes, zero) then sin_addr.
    for (d, s) in sa.sa_data[2..6].iter_mut().zip(ip) {
        *d = s as libc::c_char;
    }
    sa
}

/// Runs an interface `ioctl` with `ifr` on `fd`.
fn ifr_ioctl(fd: &OwnedFd, req: libc::Ioctl, ifr: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: every request passed here (TUNSETIFF and the SIOC[GS]IF*
    // interface requests) reads and writes at most one `struct ifreq`,
    // and `ifr` is a live, writable one.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), req, ifr as *mut libc::ifreq) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A datagram socket to address interface `ioctl`s to.
fn inet_socket() -> io::Result<OwnedFd> {
    // SAFETY: plain system call with constant arguments; no memory is
    // passed.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket() and is owned by nobody
    // else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

impl Tap {
    /// Creates the TAP interface `name` (`IFF_TAP | IFF_NO_PI`), or
    /// attaches to a persistent one of that name. The interface starts
    /// down and without addresses; see [`Tap::configure`]. A `%d` in the
    /// name lets the kernel pick a free number ([`Tap::name`] says which).
    pub fn open(name: &str) -> Result<Tap, DevError> {
        Tap::open_kind(name, TapKind::Tap)
    }

    /// Creates the TAP or TUN interface `name` (with `IFF_NO_PI`: what is
    /// read and written is the frame or packet alone), or attaches to a
    /// persistent one of that name and kind. As [`Tap::open`] otherwise.
    pub fn open_kind(name: &str, kind: TapKind) -> Result<Tap, DevError> {
        if !valid_name(name) {
            return Err(DevError::BadName(name.to_string()));
        }
        let err = |what: &'static str| {
            move |err: io::Error| DevError::Os {
                ifname: name.to_string(),
                what,
                err,
            }
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open("/dev/net/tun")
            .map_err(err("open /dev/net/tun"))?;
        let fd = OwnedFd::from(file);
        let mut ifr = ifreq(name);
        let (flags, what) = match kind {
            TapKind::Tap => (
                libc::IFF_TAP,
                "cannot create the TAP device (TUNSETIFF; it needs CAP_NET_ADMIN, \
                 and the name must be free or a TAP device not in use)",
            ),
            TapKind::Tun => (
                libc::IFF_TUN,
                "cannot create the TUN device (TUNSETIFF; it needs CAP_NET_ADMIN, \
                 and the name must be free or a TUN device not in use)",
            ),
        };
        ifr.ifr_ifru.ifru_flags = (flags | libc::IFF_NO_PI) as libc::c_short;
        ifr_ioctl(&fd, libc::TUNSETIFF, &mut ifr).map_err(err(what))?;
        Ok(Tap {
            fd,
            name: ifreq_name(&ifr),
            kind,
        })
    }

    /// The interface's name (as the kernel chose it, for a `%d` name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this is a TAP or a TUN device.
    pub fn kind(&self) -> TapKind {
        self.kind
    }

    /// The descriptor, to wait for frames when idle.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Sets the Ethernet address and MTU, the IPv4 address and netmask,
    /// brings the interface up, then adds the default route, in that order
    /// (each only if given; the interface is brought up in any case).
    pub fn configure(&self, cfg: &TapConfig) -> Result<(), DevError> {
        let name = self.name.as_str();
        let err = |what: &'static str| {
            move |err: io::Error| DevError::Os {
                ifname: name.to_string(),
                what,
                err,
            }
        };
        let sock = inet_socket().map_err(err("socket"))?;
        if let Some(mac) = cfg.mac {
            let mut ifr = ifreq(name);
            let mut sa = libc::sockaddr {
                sa_family: ARPHRD_ETHER,
                sa_data: [0; 14],
            };
            for (d, s) in sa.sa_data.iter_mut().zip(mac) {
                *d = s as libc::c_char;
            }
            ifr.ifr_ifru.ifru_hwaddr = sa;
            ifr_ioctl(&sock, libc::SIOCSIFHWADDR, &mut ifr)
                .map_err(err("setting the Ethernet address"))?;
        }
        if let Some(mtu) = cfg.mtu {
            let mut ifr = ifreq(name);
            ifr.ifr_ifru.ifru_mtu = libc::c_int::try_from(mtu).unwrap_or(libc::c_int::MAX);
            ifr_ioctl(&sock, libc::SIOCSIFMTU, &mut ifr).map_err(err("setting the MTU"))?;
        }
        if let Some((addr, mask)) = cfg.addr {
            let mut ifr = ifreq(name);
            ifr.ifr_ifru.ifru_addr = inet_sockaddr(addr);
            ifr_ioctl(&sock, libc::SIOCSIFADDR, &mut ifr)
                .map_err(err("setting the IPv4 address"))?;
            let mut ifr = ifreq(name);
            ifr.ifr_ifru.ifru_netmask = inet_sockaddr(mask);
            ifr_ioctl(&sock, libc::SIOCSIFNETMASK, &mut ifr).map_err(err("setting the netmask"))?;
        }
        let mut ifr = ifreq(name);
        ifr_ioctl(&sock, libc::SIOCGIFFLAGS, &mut ifr).map_err(err("reading the flags"))?;
        // SAFETY: SIOCGIFFLAGS succeeded, so the kernel wrote the flags
        // member of the union; any bit pattern is a valid c_short.
        let flags = unsafe { ifr.ifr_ifru.ifru_flags };
        ifr.ifr_ifru.ifru_flags = flags | libc::IFF_UP as libc::c_short;
        ifr_ioctl(&sock, libc::SIOCSIFFLAGS, &mut ifr).map_err(err("bringing it up"))?;
        if let Some(gw) = cfg.gateway {
            let mut dev: [libc::c_char; libc::IFNAMSIZ] = [0; libc::IFNAMSIZ];
            for (d, s) in dev.iter_mut().zip(name.bytes()) {
                *d = s as libc::c_char;
            }
            let mut rt = RtEntry {
                rt_pad1: 0,
                rt_dst: inet_sockaddr([0; 4]),
                rt_gateway: inet_sockaddr(gw),
                rt_genmask: inet_sockaddr([0; 4]),
                rt_flags: RTF_UP | RTF_GATEWAY,
                rt_pad2: 0,
                rt_pad3: 0,
                rt_pad4: std::ptr::null_mut(),
                rt_metric: 0,
                rt_dev: dev.as_mut_ptr(),
                rt_mtu: 0,
                rt_window: 0,
                rt_irtt: 0,
            };
            // SAFETY: SIOCADDRT reads one `struct rtentry`, which `rt`
            // is (repr(C), the kernel's layout), and the NUL-terminated
            // device name `rt_dev` points at; both outlive the call.
            let r =
                unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCADDRT, &mut rt as *mut RtEntry) };
            if r < 0 {
                return Err(err("adding the default route (GATEWAY)")(
                    io::Error::last_os_error(),
                ));
            }
        }
        Ok(())
    }

    /// Reads up to `max` frames into `batch` without blocking, as pool
    /// packets stamped `now`, a TAP's with the link header marked at the start;
    /// returns how many were added. Frames longer than a pool slot, or
    /// read while the pool is empty, are dropped and counted in `stats`.
    pub fn recv(
        &self,
        pool: &Pool,
        batch: &mut Batch,
        max: usize,
        now: i64,
        stats: &mut TapRxStats,
    ) -> usize {
        let before = batch.len();
        let limit = (before + max).min(BATCH_MAX);
        // One byte past the slot tells a frame that did not fit.
        let mut spare = [0u8; 1];
        while batch.len() < limit {
            let Some(mut p) = pool.alloc() else {
                // Take the frame anyway, so that the descriptor does not
                // stay readable with nothing to read it into.
                match self.read_into(&mut spare, &mut []) {
                    Ok(n) if n > 0 => {
                        stats.nomem += 1;
                        continue;
                    }
                    _ => break,
                }
            };
            let room = p.tailroom();
            let n = match self.read_into(p.put_uninit(room), &mut spare) {
                Ok(n) if n > 0 => n,
                _ => break,
            };
            if n > room {
                stats.oversize += 1;
                continue;
            }
            p.take(room - n);
            if self.kind == TapKind::Tap {
                p.set_mac_header(0);
            }
            p.set_timestamp_ns(now);
            stats.packets += 1;
            // `limit` is at most the batch's capacity: this never fails.
            let _ = batch.push(p);
        }
        batch.len() - before
    }

    /// One `readv` of a frame into `a` then `b`: the bytes read, or an
    /// error (`WouldBlock` when no frame is waiting).
    fn read_into(&self, a: &mut [u8], b: &mut [u8]) -> io::Result<usize> {
        let iov = [
            libc::iovec {
                iov_base: a.as_mut_ptr().cast(),
                iov_len: a.len(),
            },
            libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            },
        ];
        // SAFETY: both iovecs describe live, writable slices of the given
        // lengths, borrowed mutably for the duration of the call; the
        // kernel writes at most that much into each.
        let n = unsafe { libc::readv(self.fd.as_raw_fd(), iov.as_ptr(), 2) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(n as usize)
    }

    /// Writes one Ethernet frame to the host's stack without blocking.
    pub fn send(&self, frame: &[u8]) -> io::Result<()> {
        // SAFETY: `frame` is readable for its length; the kernel only
        // reads it.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// The IPv4 address and netmask of interface `name`, if it exists and has
/// one (`SIOCGIFADDR`, `SIOCGIFNETMASK`): what Click at user level reads
/// when an address argument names a device (`ARPQuerier(eth0)`).
pub fn interface_ipv4(name: &str) -> Option<([u8; 4], [u8; 4])> {
    if !valid_name(name) {
        return None;
    }
    let sock = inet_socket().ok()?;
    let read = |req: libc::Ioctl| -> Option<[u8; 4]> {
        let mut ifr = ifreq(name);
        ifr_ioctl(&sock, req, &mut ifr).ok()?;
        // SAFETY: the request succeeded, so the kernel wrote an AF_INET
        // socket address into the union's address member; any bit
        // pattern is a valid sockaddr.
        let sa = unsafe { ifr.ifr_ifru.ifru_addr };
        let d = sa.sa_data;
        Some([d[2] as u8, d[3] as u8, d[4] as u8, d[5] as u8])
    };
    let addr = read(libc::SIOCGIFADDR)?;
    let mask = read(libc::SIOCGIFNETMASK).unwrap_or([255; 4]);
    Some((addr, mask))
}

/// The Ethernet address of interface `name`, if it exists and has one.
pub fn interface_mac(name: &str) -> Option<[u8; 6]> {
    if !valid_name(name) {
        return None;
    }
    let text = std::fs::read_to_string(format!("/sys/class/net/{name}/address")).ok()?;
    let mut mac = [0u8; 6];
    let mut parts = text.trim().split(':');
    for b in &mut mac {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_interfaces_addresses_are_read() {
        assert_eq!(interface_ipv4("lo"), Some(([127, 0, 0, 1], [255, 0, 0, 0])));
        assert_eq!(interface_mac("lo"), Some([0; 6]));
        assert_eq!(interface_ipv4("nosuch0"), None);
        assert_eq!(interface_mac("nosuch0"), None);
        assert_eq!(interface_mac("../lo"), None);
    }

    /// A TAP opened for a test, or `None` (with a loud message) where this
    /// process may not create one.
    pub(crate) fn test_tap(tag: &str) -> Option<Tap> {
        let name = format!("pt{tag}{}", std::process::id() % 100_000);
        match Tap::open(&name) {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("SKIPPED: creating a TAP device needs root and /dev/net/tun ({e})");
                None
            }
        }
    }

    fn sys(name: &str, what: &str) -> String {
        std::fs::read_to_string(format!("/sys/class/net/{name}/{what}"))
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    #[test]
    fn bad_names_are_refused() {
        assert_eq!(
            Tap::open("").expect_err("error").to_string(),
            ": bad interface name"
        );
        assert_eq!(
            Tap::open("a-name-far-too-long")
                .expect_err("error")
                .to_string(),
            "a-name-far-too-long: bad interface name"
        );
        assert_eq!(
            Tap::open("a/b").expect_err("error").to_string(),
            "a/b: bad interface name"
        );
    }

    #[test]
    fn configures_and_disappears_when_closed() {
        let Some(tap) = test_tap("c") else { return };
        let name = tap.name().to_string();
        assert!(std::path::Path::new(&format!("/sys/class/net/{name}")).exists());
        tap.configure(&TapConfig {
            mac: Some([0x02, 0, 0, 0xab, 0xcd, 0xef]),
            mtu: Some(1400),
            addr: Some(([10, 214, 7, 1], [255, 255, 255, 0])),
            gateway: None,
        })
        .expect("configure");
        assert_eq!(sys(&name, "address"), "02:00:00:ab:cd:ef");
        assert_eq!(sys(&name, "mtu"), "1400");
        // IFF_UP set.
        let flags =
            u32::from_str_radix(sys(&name, "flags").trim_start_matches("0x"), 16).expect("flags");
        assert_eq!(flags & 1, 1);
        let out = std::process::Command::new("ip")
            .args(["-4", "-o", "addr", "show", "dev", &name])
            .output();
        if let Ok(out) = out {
            let s = String::from_utf8_lossy(&out.stdout);
            assert!(s.contains("inet 10.214.7.1/24"), "{s}");
        }
        // A second open of the same name is refused while in use.
        let e = Tap::open(&name).expect_err("busy").to_string();
        assert!(
            e.starts_with(&format!("{name}: cannot create the TAP device")),
            "{e}"
        );
        drop(tap);
        // The kernel unregisters the device as the descriptor closes.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::path::Path::new(&format!("/sys/class/net/{name}")).exists()
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!std::path::Path::new(&format!("/sys/class/net/{name}")).exists());
    }

    #[test]
    fn kernel_picks_a_number_for_percent_d() {
        let Some(tap) = test_tap("%d") else { return };
        // The kernel puts a free number where `%d` was.
        let pid = (std::process::id() % 100_000).to_string();
        let n = tap.name();
        assert!(
            n.starts_with("pt") && n.ends_with(&pid) && !n.contains('%'),
            "{n}"
        );
    }

    #[test]
    fn frames_cross_in_both_directions() {
        let Some(tap) = test_tap("f") else { return };
        tap.configure(&TapConfig::default()).expect("up");
        let name = tap.name().to_string();
        let pool = Pool::new(64).expect("pool");
        let mut stats = TapRxStats::default();
        // Nothing to read: no packet, no drop, no slot kept.
        let mut batch = Batch::new();
        assert_eq!(tap.recv(&pool, &mut batch, 8, 0, &mut stats), 0);
        // A frame sent on the interface through a packet socket reaches
        // the descriptor unchanged.
        let mut tx = crate::TxDevice::open(&name, crate::Method::Socket).expect("packet socket");
        let mut frame = [0u8; 60];
        frame[..6].fill(0xff); // broadcast
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 9]);
        frame[12..14].copy_from_slice(&[0x88, 0xb5]); // local experimental
        frame[14..18].copy_from_slice(&std::process::id().to_be_bytes());
        assert_eq!(tx.send(&frame), crate::Sent::Ok);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut found = false;
        while !found && std::time::Instant::now() < deadline {
            tap.recv(&pool, &mut batch, 8, 77, &mut stats);
            found = batch
                .iter()
                .any(|p| p.data() == frame && p.timestamp_ns() == 77);
            batch.clear();
        }
        assert!(found, "frame not read from the TAP");
        assert_eq!(stats.drops(), 0);
        // A frame written to the descriptor is received on the interface.
        let mut rx = crate::RxDevice::open(
            &name,
            &crate::RxConfig {
                method: crate::Method::Socket,
                ..Default::default()
            },
        )
        .expect("packet socket");
        frame[14] ^= 0xff;
        tap.send(&frame).expect("write");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut got = false;
        while !got && std::time::Instant::now() < deadline {
            rx.recv(&pool, &mut batch, 8, 0);
            got = batch.iter().any(|p| p.data() == frame);
            batch.clear();
        }
        assert!(got, "frame written to the TAP not seen on {name}");
        // An oversize frame (a jumbo MTU) is counted and dropped.
        tap.configure(&TapConfig {
            mtu: Some(4000),
            ..Default::default()
        })
        .expect("mtu");
        let big = vec![0xffu8; 3000];
        // Packet sockets check the MTU; 3000 bytes fit in 4000.
        let mut tx = crate::TxDevice::open(&name, crate::Method::Socket).expect("packet socket");
        assert_eq!(tx.send(&big), crate::Sent::Ok);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while stats.oversize == 0 && std::time::Instant::now() < deadline {
            tap.recv(&pool, &mut batch, 8, 0, &mut stats);
            batch.clear();
        }
        assert_eq!(stats.oversize, 1);
        assert_eq!(pool.available(), 64);
    }

    /// A TUN device carries bare IP packets: an ICMP echo request written
    /// to it, addressed to the host's address on it, comes back as the
    /// host's echo reply, read without any link header.
    #[test]
    fn tun_carries_bare_ip_packets() {
        let name = format!("ptu{}", std::process::id() % 100_000);
        let tun = match Tap::open_kind(&name, TapKind::Tun) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("SKIPPED: creating a TUN device needs root and /dev/net/tun ({e})");
                return;
            }
        };
        // ARPHRD_NONE: no link layer; tun_flags: IFF_TUN | IFF_NO_PI.
        assert_eq!(sys(&name, "type"), "65534");
        assert_eq!(sys(&name, "tun_flags"), "0x1001");
        tun.configure(&TapConfig {
            mtu: Some(1400),
            addr: Some(([10, 214, 9, 1], [255, 255, 255, 0])),
            ..Default::default()
        })
        .expect("configure");
        assert_eq!(sys(&name, "mtu"), "1400");
        // IPv4 echo request 10.214.9.2 -> 10.214.9.1, id 0x1234, seq 1.
        let mut pkt = [0u8; 32];
        pkt[0] = 0x45; // version 4, header 20 bytes
        pkt[2..4].copy_from_slice(&32u16.to_be_bytes()); // total length
        pkt[8] = 64; // TTL
        pkt[9] = 1; // ICMP
        pkt[12..16].copy_from_slice(&[10, 214, 9, 2]);
        pkt[16..20].copy_from_slice(&[10, 214, 9, 1]);
        let c = pronto_packet::wire::checksum(&pkt[..20]);
        pkt[10..12].copy_from_slice(&c.to_be_bytes());
        pkt[20] = 8; // echo request
        pkt[24..26].copy_from_slice(&0x1234u16.to_be_bytes());
        pkt[26..28].copy_from_slice(&1u16.to_be_bytes());
        pkt[28..32].copy_from_slice(b"tun!");
        let c = pronto_packet::wire::checksum(&pkt[20..]);
        pkt[22..24].copy_from_slice(&c.to_be_bytes());
        let pool = Pool::new(16).expect("pool");
        let mut batch = Batch::new();
        let mut stats = TapRxStats::default();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut reply = None;
        tun.send(&pkt).expect("write");
        while reply.is_none() && std::time::Instant::now() < deadline {
            tun.recv(&pool, &mut batch, 8, 0, &mut stats);
            reply = batch
                .iter()
                .find(|p| p.data().len() == 32 && p.data()[9] == 1 && p.data()[20] == 0)
                .map(|p| p.data().to_vec());
            batch.clear();
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let reply = reply.expect("no echo reply read from the TUN");
        assert_eq!(reply[0], 0x45);
        assert_eq!(reply[12..16], [10, 214, 9, 1]);
        assert_eq!(reply[16..20], [10, 214, 9, 2]);
        assert_eq!(reply[24..32], pkt[24..32]);
        assert_eq!(pronto_packet::wire::checksum(&reply[..20]), 0);
        assert_eq!(pronto_packet::wire::checksum(&reply[20..]), 0);
        assert_eq!(stats.drops(), 0);
    }
}
