//! `FromHost`: a TAP device; pushes out the frames the host's network
//! stack sends into it.

use std::sync::Arc;

use pronto_netdev::tap::{Tap, TapConfig, TapRxStats};
use pronto_packet::{Batch, Packet, DEFAULT_HEADROOM, MAX_PACKET};

use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError, HandlerInfo, Ip4,
    IpPrefix, Out, Shared, Spec, TaskStatus, WaitFd, PHASE_DEFAULT,
};

/// Ethernet header length.
const ETHER_LEN: usize = 14;
/// Largest MTU whose frames fit a packet with their Ethernet header.
const MAX_MTU: u32 = (MAX_PACKET - ETHER_LEN) as u32;
/// Smallest MTU the kernel accepts for IPv4.
const MIN_MTU: u32 = 68;

/// The TAP device a `FromHost` opened, shared with the `ToHost` elements
/// that name the same device (found through [`Element::shared`]).
#[derive(Debug)]
pub struct HostDevice {
    /// `DEVNAME` as the configuration wrote it.
    pub devname: String,
    /// The device; the kernel deletes it when the last holder drops it.
    pub tap: Tap,
}

/// Creates a TAP device and pushes out the frames the host sends into it.
pub struct FromHost {
    dev: Arc<HostDevice>,
    burst: usize,
    stats: TapRxStats,
    empty_polls: u32,
}

impl FromHost {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromHost")
        .ports("0/1")
        .processing("h/h")
        .keywords(&["DST", "GATEWAY", "ETHER", "HEADROOM", "MTU", "BURST"])
        .profile(ActionProfile::NONE)
        // Before the default phase's ToHost, as in Click (FromHost at the
        // default phase, ToHost one after).
        .phase(PHASE_DEFAULT)
        .doc(
            "FromHost(DEVNAME [, DST, KEYWORDS])\n\n\
             Creates the Linux TAP device DEVNAME (/dev/net/tun, IFF_TAP |\n\
             IFF_NO_PI; a `%d' in the name lets the kernel pick a number), or\n\
             attaches to a persistent TAP device of that name, and pushes out\n\
             the Ethernet frames the host's network stack sends into it, BURST\n\
             at most per task run, stamped with the current time, link header\n\
             marked; an IPv4 frame also gets its IP header marked and its\n\
             destination address annotation set. ToHost(DEVNAME) elements hand\n\
             frames to the host through the same device. The host sends ARP\n\
             queries into the device: answer them (ARPResponder -> ToHost) to\n\
             get IP packets.\n\n\
             If DST (an IPv4 prefix such as 10.0.0.1/24) is given, the device\n\
             gets that address and netmask; ETHER sets its Ethernet address,\n\
             MTU its MTU, and a GATEWAY on DST's network becomes the host's\n\
             default route through the device. The device is brought up in\n\
             every case. It is not persistent: it disappears when pronto exits.\n\
             Creating it needs CAP_NET_ADMIN.\n\n\
             Differences from Click: the device is configured with ioctls, not\n\
             ifconfig/route; it is brought up even without DST; MTU sets the\n\
             device's MTU (Click only sized its read buffer by it, default\n\
             2048); HEADROOM is checked but pronto packets always have 128\n\
             bytes of headroom; there is no DST6 and no `signal' handler;\n\
             BURST and the `count' and `drops' handlers are pronto's. Frames\n\
             longer than a packet buffer (1,920 bytes), or read when no packet\n\
             buffer is free, are dropped and counted in `drops'.\n\n\
             Ports: no inputs; 1 push output.\n\
             Arguments:\n  \
             DEVNAME   the TAP device's name (at most 15 bytes)\n  \
             DST       IPv4 prefix: the host's address and netmask on the device\n\
             Keywords:\n  \
             GATEWAY   IPv4 address on DST's network: add a default route via it\n  \
             ETHER     the device's Ethernet address (default: the kernel's choice)\n  \
             MTU       the device's MTU, 68-1906 (default: the kernel's, 1500)\n  \
             HEADROOM  bytes, at most 128 (accepted; packets have 128)\n  \
             BURST     frames pushed per task run, at least 1 (default 1)\n\
             Handlers:\n  \
             dev_name (read: the device's name), count (read: frames pushed),\n  \
             drops (read)",
        );

    /// Configures a `FromHost`: creates and sets up the TAP device.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let devname: String = a.read_mp("DEVNAME")?;
        let dst: Option<IpPrefix> = a.read_p("DST")?;
        let gateway: Option<Ip4> = a.read("GATEWAY")?;
        let ether: Option<EtherAddr> = a.read("ETHER")?;
        let headroom: Option<u32> = a.read("HEADROOM")?;
        let mtu: Option<u32> = a.read("MTU")?;
        let burst: u32 = a.read_or("BURST", 1)?;
        a.finish()?;
        // An all-zero address means "not given", as in Click.
        let dst = dst.filter(|d| d.addr != [0; 4]);
        let gateway = gateway.filter(|g| g.0 != [0; 4]);
        if devname.is_empty() {
            return Err(cfg_err("DEVNAME is empty: name the TAP device"));
        }
        if let (Some(d), Some(g)) = (dst, gateway) {
            let on_net = (0..4).all(|i| g.0[i] & d.mask[i] == d.addr[i] & d.mask[i]);
            if !on_net {
                return Err(cfg_err(format!(
                    "bad GATEWAY: {g} is not on DST's network ({}/{})",
                    Ip4(d.addr),
                    Ip4(d.mask)
                )));
            }
        }
        if headroom.is_some_and(|h| h as usize > DEFAULT_HEADROOM) {
            return Err(cfg_err(format!(
                "HEADROOM too large: pronto packets have {DEFAULT_HEADROOM} bytes of headroom"
            )));
        }
        if mtu.is_some_and(|m| !(MIN_MTU..=MAX_MTU).contains(&m)) {
            return Err(cfg_err(format!(
                "MTU out of range: {MIN_MTU} to {MAX_MTU} (a packet holds {MAX_PACKET} bytes \
                 with the Ethernet header)"
            )));
        }
        if burst == 0 {
            return Err(cfg_err("BURST out of range"));
        }
        let tap = Tap::open(&devname).map_err(|e| cfg_err(e.to_string()))?;
        tap.configure(&TapConfig {
            mac: ether.map(|e| e.0),
            mtu,
            addr: dst.map(|d| (d.addr, d.mask)),
            gateway: gateway.map(|g| g.0),
        })
        .map_err(|e| cfg_err(e.to_string()))?;
        Ok(Box::new(FromHost {
            dev: Arc::new(HostDevice { devname, tap }),
            burst: (burst as usize).min(pronto_packet::BATCH_MAX),
            stats: TapRxStats::default(),
            empty_polls: 0,
        }))
    }
}

/// Marks an IPv4 frame's IP header and sets its destination annotation
/// (what Click's FromHost does for every frame; pronto only where the
/// frame is IPv4 and long enough).
fn annotate(p: &mut Packet) {
    let d = p.data();
    if d.len() < ETHER_LEN + 20 || d[12..14] != [0x08, 0x00] {
        return;
    }
    let hl = usize::from(d[ETHER_LEN] & 0x0f) * 4;
    let dst = [d[30], d[31], d[32], d[33]];
    if hl >= 20 && ETHER_LEN + hl <= d.len() {
        p.set_network_header(ETHER_LEN as isize, hl);
    }
    p.set_dst_ip_anno(dst);
}

impl Element for FromHost {
    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let n = self
            .dev
            .tap
            .recv(out.pool, batch, self.burst, out.now, &mut self.stats);
        if n > 0 {
            for p in batch.iter_mut() {
                annotate(p);
            }
            self.empty_polls = 0;
            out.pass(0);
            return TaskStatus::Busy;
        }
        super::poll_status(false, &mut self.empty_polls)
    }

    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        Some(WaitFd {
            fd: self.dev.tap.fd(),
            writable: false,
        })
    }

    fn shared(&self) -> Option<Shared> {
        Some(self.dev.clone())
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("too_long", self.stats.oversize);
        c.drop("alloc_failed", self.stats.nomem);
        c.count("count", self.stats.packets);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("dev_name"),
            HandlerInfo::read("count"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "dev_name" => Ok(self.dev.tap.name().to_string()),
            "count" => Ok(self.stats.packets.to_string()),
            "drops" => Ok(self.stats.drops().to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure};

    fn err(conf: &str) -> String {
        config_err(configure(
            FromHost::SPEC.keywords,
            FromHost::configure,
            conf,
            &[],
            &[true],
            std::path::Path::new("."),
        ))
    }

    #[test]
    fn config_errors() {
        assert_eq!(err(""), "missing mandatory DEVNAME argument");
        assert_eq!(err("\"\""), "DEVNAME is empty: name the TAP device");
        assert_eq!(
            err("tap0, 10.0.0.1/24, GATEWAY 10.0.1.1"),
            "bad GATEWAY: 10.0.1.1 is not on DST's network (10.0.0.1/255.255.255.0)"
        );
        assert_eq!(
            err("tap0, HEADROOM 129"),
            "HEADROOM too large: pronto packets have 128 bytes of headroom"
        );
        assert_eq!(
            err("tap0, MTU 2048"),
            "MTU out of range: 68 to 1906 (a packet holds 1920 bytes with the Ethernet header)"
        );
        assert_eq!(
            err("tap0, MTU 67"),
            "MTU out of range: 68 to 1906 (a packet holds 1920 bytes with the Ethernet header)"
        );
        assert_eq!(err("tap0, BURST 0"), "BURST out of range");
        assert_eq!(err("a/b"), "a/b: bad interface name");
        assert_eq!(
            err("name-longer-than-15"),
            "name-longer-than-15: bad interface name"
        );
    }

    /// Waits up to two seconds for interface `name` to disappear (the
    /// kernel unregisters it once the last descriptor closes).
    pub(crate) fn gone(name: &str) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::path::Path::new(&format!("/sys/class/net/{name}")).exists() {
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        true
    }

    /// A configured FromHost on a fresh TAP device, or `None` (loudly)
    /// where this process may not create one.
    pub(crate) fn from_host(tag: &str, extra: &str) -> Option<(Box<dyn Element>, String)> {
        let name = format!("pt{tag}{}", std::process::id() % 100_000);
        match configure(
            FromHost::SPEC.keywords,
            FromHost::configure,
            &format!("{name}{extra}"),
            &[],
            &[true],
            std::path::Path::new("."),
        ) {
            Ok(e) => Some((e, name)),
            Err(e) if e.message.contains("/dev/net/tun") || e.message.contains("TUNSETIFF") => {
                eprintln!(
                    "SKIPPED: FromHost needs root and /dev/net/tun ({})",
                    e.message
                );
                None
            }
            Err(e) => panic!("{}", e.message),
        }
    }

    /// A frame the host sends on the device comes out of FromHost, with its
    /// annotations; the device has the address, MTU and Ethernet address
    /// asked for, and disappears with the element.
    #[test]
    fn pushes_what_the_host_sends() {
        let Some((mut e, name)) = from_host("fh", ", ETHER 02:00:00:00:01:02, MTU 1280") else {
            return;
        };
        let sys = |what: &str| {
            std::fs::read_to_string(format!("/sys/class/net/{name}/{what}"))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        assert_eq!(sys("address"), "02:00:00:00:01:02");
        assert_eq!(sys("mtu"), "1280");
        assert_eq!(e.read_handler("dev_name").expect("dev_name"), name);
        assert!(e.wait_fd().is_some());
        assert!(e.shared().is_some());
        // An IPv4 frame to 192.0.2.9 (broadcast link address).
        let mut frame = [0u8; 60];
        frame[..6].fill(0xff); // destination: broadcast
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 7]); // source
        frame[12..14].copy_from_slice(&[0x08, 0x00]); // IPv4
        frame[14] = 0x45; // version 4, header 20 bytes
        frame[16..18].copy_from_slice(&46u16.to_be_bytes()); // total length
        frame[22] = 64; // TTL
        frame[23] = 253; // protocol: experimental
        frame[26..30].copy_from_slice(&[192, 0, 2, 1]); // source
        frame[30..34].copy_from_slice(&[192, 0, 2, 9]); // destination
        frame[34..38].copy_from_slice(&std::process::id().to_be_bytes()); // tag
        let mut tx = pronto_netdev::TxDevice::open(&name, pronto_netdev::Method::Socket)
            .expect("packet socket");
        assert_eq!(tx.send(&frame), pronto_netdev::Sent::Ok);
        let pool = pronto_packet::Pool::new(64).expect("pool");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut found = None;
        let mut statuses = Vec::new();
        while found.is_none() && std::time::Instant::now() < deadline {
            let (st, mut outs, _) = crate::app::testing::run_task(e.as_mut(), &pool, 1, 1234);
            statuses.push(st);
            found = outs[0]
                .iter()
                .position(|p| p.data() == frame)
                .map(|i| outs[0].swap_remove(i));
            if found.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let p = found.expect("frame not pushed by FromHost");
        assert_eq!(p.timestamp_ns(), 1234);
        assert_eq!(p.mac_header_offset(), Some(0));
        assert_eq!(p.network_header_offset(), Some(14));
        assert_eq!(p.network_header_len(), Some(20));
        assert_eq!(p.dst_ip_anno(), [192, 0, 2, 9]);
        assert!(statuses.contains(&TaskStatus::Busy));
        assert_ne!(e.read_handler("count").expect("count"), "0");
        assert_eq!(e.read_handler("drops").expect("drops"), "0");
        drop(p);
        drop(tx);
        drop(e);
        assert!(gone(&name), "{name} outlived FromHost");
    }

    #[test]
    fn idle_after_empty_polls() {
        let Some((mut e, _name)) = from_host("fi", "") else {
            return;
        };
        let pool = pronto_packet::Pool::new(8).expect("pool");
        // The host may send a frame (an IPv6 router solicitation) at any
        // time after the device comes up, which restarts the count: poll
        // until SPIN_POLLS empty polls in a row report Idle.
        let mut last = TaskStatus::Busy;
        for _ in 0..crate::userlevel::SPIN_POLLS * 20 {
            last = crate::app::testing::run_task(e.as_mut(), &pool, 1, 0).0;
            if last == TaskStatus::Idle {
                break;
            }
        }
        assert_eq!(last, TaskStatus::Idle);
    }

    #[test]
    fn annotates_only_ipv4() {
        let pool = pronto_packet::Pool::new(4).expect("pool");
        // ARP request (ethertype 0x0806): no IP header, no annotation.
        let mut arp = [0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        arp[30..34].copy_from_slice(&[9, 9, 9, 9]);
        let mut p = pool.alloc_frame(&arp, 0).expect("pkt");
        annotate(&mut p);
        assert_eq!(p.network_header_offset(), None);
        assert_eq!(p.dst_ip_anno(), [0; 4]);
        // IPv4 with a 24-byte header.
        let mut ip = [0u8; 60];
        ip[12..14].copy_from_slice(&[0x08, 0x00]);
        ip[14] = 0x46;
        ip[30..34].copy_from_slice(&[10, 1, 2, 3]);
        let mut p = pool.alloc_frame(&ip, 0).expect("pkt");
        annotate(&mut p);
        assert_eq!(p.network_header_offset(), Some(14));
        assert_eq!(p.network_header_len(), Some(24));
        assert_eq!(p.dst_ip_anno(), [10, 1, 2, 3]);
        // Too short for an IP header.
        let mut p = pool.alloc_frame(&ip[..33], 0).expect("pkt");
        annotate(&mut p);
        assert_eq!(p.network_header_offset(), None);
    }
}
