//! Click's `userlevel` elements: real Linux network interfaces, through
//! `AF_PACKET` sockets, `TPACKET` rings or `AF_XDP` sockets
//! (`pronto-netdev`), switch ports under `pronto run --switch`
//! (`swport`), and the host's stack through a TAP device
//! (`FromHost`/`ToHost`) or a TUN or TAP device (`KernelTun`/`KernelTap`),
//! TCP, UDP and Unix-domain sockets (`Socket`, `FromSocket`, `ToSocket`),
//! multicast UDP (`McastSocket`), raw IP sockets (`RawSocket`,
//! `FromRawSocket`, `ToRawSocket`) and one raw socket per flow
//! (`IPFlowRawSockets`), and a User-Mode Linux switch's port (`UMLSwitch`);
//! `ChatterSocket` copies printed lines to socket clients.

pub mod chattersocket;
pub mod fastudpsrc;
pub mod fromdevice;
pub mod fromhost;
pub mod fromrawsocket;
pub mod fromsocket;
pub mod ipflowrawsockets;
pub mod kerneltap;
pub mod kerneltun;
pub mod mcastsocket;
pub mod rawsocket;
pub mod socket;
pub mod swport;
pub mod todevice;
pub mod tohost;
pub mod torawsocket;
pub mod tosocket;
pub mod umlswitch;

/// Empty polls in a row before a polling task reports itself idle (and the
/// runtime blocks on its descriptor).
pub(crate) const SPIN_POLLS: u32 = 32;

/// How long a socket element's push input waits for room to send.
pub(crate) const PUSH_WAIT_MS: i32 = 1000;

/// Click's device names in address arguments: a word no `AddressInfo`
/// defines that names one of this machine's network interfaces stands for
/// its IPv4 address (its network as a prefix, `NAME:gw`, `NAME:bcast`)
/// and its Ethernet address, read from the kernel when the configuration
/// is read (`ICMPPingSource(eth0, ...)`, `ARPQuerier(eth0)`). Not where
/// interfaces are switch ports (`pronto run --switch`, a sandboxed
/// instance): those have no kernel addresses, and an instance does not ask
/// the kernel.
pub fn device_names(name: &str) -> Option<pronto_lang::names::AddressName> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return None;
    }
    if swport::ports_in_use() || !std::path::Path::new("/sys/class/net").join(name).exists() {
        return None;
    }
    let v4 = pronto_netdev::tap::interface_ipv4(name);
    let ether = pronto_netdev::tap::interface_mac(name);
    if v4.is_none() && ether.is_none() {
        return None;
    }
    Some(pronto_lang::names::AddressName {
        ether,
        ip: v4.map(|(a, _)| a),
        prefix: v4,
        device: true,
        ..Default::default()
    })
}

/// A polling task's status after a run: busy while it did work, or has
/// polled empty fewer than [`SPIN_POLLS`] times in a row; idle after.
pub(crate) fn poll_status(busy: bool, empty_polls: &mut u32) -> crate::TaskStatus {
    if busy {
        *empty_polls = 0;
        return crate::TaskStatus::Busy;
    }
    *empty_polls = empty_polls.saturating_add(1);
    if *empty_polls < SPIN_POLLS {
        crate::TaskStatus::Busy
    } else {
        crate::TaskStatus::Idle
    }
}

/// Waits up to `ms` milliseconds for `fd` to take more; false after the
/// wait, or with no descriptor.
pub(crate) fn wait_writable(fd: Option<&std::os::fd::OwnedFd>, ms: i32) -> bool {
    let Some(fd) = fd else { return false };
    let mut pfd = [rustix::event::PollFd::new(
        fd,
        rustix::event::PollFlags::OUT,
    )];
    let ts = rustix::event::Timespec {
        tv_sec: i64::from(ms / 1000),
        tv_nsec: i64::from(ms % 1000) * 1_000_000,
    };
    matches!(rustix::event::poll(&mut pfd, Some(&ts)), Ok(n) if n > 0)
}

/// Sends a pull input's waiting packets, oldest first, with `send`
/// (`Some(true)` sent, `Some(false)` lost, `None` no room now) until one
/// finds no room; returns whether any went, and how many were sent and
/// lost.
pub(crate) fn flush_pending(
    pending: &mut std::collections::VecDeque<pronto_packet::Packet>,
    mut send: impl FnMut(&pronto_packet::Packet) -> Option<bool>,
) -> (bool, u64, u64) {
    let (mut any, mut sent, mut lost) = (false, 0, 0);
    while let Some(p) = pending.pop_front() {
        match send(&p) {
            Some(ok) => {
                if ok {
                    sent += 1;
                } else {
                    lost += 1;
                }
                any = true;
            }
            None => {
                pending.push_front(p);
                break;
            }
        }
    }
    (any, sent, lost)
}

/// Parses a `METHOD` argument (`RING`, the default, `SOCKET` or `XDP`;
/// Click's `LINUX` means `SOCKET`).
fn method(m: Option<String>) -> Result<pronto_netdev::Method, crate::ConfigError> {
    match m {
        None => Ok(pronto_netdev::Method::Ring),
        // Click's methods: LINUX (a packet socket) and PCAP (libpcap, over
        // the same packet socket) take frames the way RING does; DEFAULT is
        // Click's choice, and pronto's is RING.
        Some(s)
            if matches!(
                s.to_ascii_uppercase().as_str(),
                "LINUX" | "PCAP" | "DEFAULT"
            ) =>
        {
            Ok(pronto_netdev::Method::Ring)
        }
        Some(s) => pronto_netdev::Method::parse(&s).ok_or_else(|| {
            crate::util::cfg_err(format!(
                "bad METHOD `{s}`: expected RING, SOCKET or XDP (or Click's LINUX, PCAP or DEFAULT)"
            ))
        }),
    }
}
