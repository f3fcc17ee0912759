//! `KernelTun`: a Linux TUN device; pushes out the IP packets the host's
//! network stack routes into it and writes the IP packets it receives into
//! the host's stack. `KernelTap` (`kerneltap.rs`) is the same element over
//! a TAP device, with Ethernet frames.

use pronto_netdev::tap::{Tap, TapConfig, TapKind, TapRxStats};
use pronto_packet::{Batch, Packet, DEFAULT_HEADROOM, MAX_PACKET};

use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError, HandlerInfo, Ip4,
    IpPrefix, Out, Spec, TaskStatus, WaitFd,
};

/// Ethernet header length.
const ETHER_LEN: usize = 14;
/// Click's MTU floor: an IPv4 header.
const MIN_MTU: u32 = 20;

/// Why a packet on the way to the device was refused (each reported once
/// on standard error, all counted in `drops`).
#[derive(Clone, Copy)]
enum Refusal {
    TooSmall = 0,
    NoNetworkHeader = 1,
    BadVersion = 2,
    OverMtu = 3,
}

/// The element behind `KernelTun` and `KernelTap`.
pub struct KernelTun {
    class: &'static str,
    tap: Tap,
    kind: TapKind,
    mtu: u32,
    burst: usize,
    pull: bool,
    noutputs: usize,
    ignore_q_errs: bool,
    stats: TapRxStats,
    /// Packets read from the device (Click's `packets`).
    packets: u64,
    /// Task runs that found the device readable (Click's `selected_calls`).
    selected_calls: u64,
    /// Packets refused on the way out, frames dropped on the way in.
    drops: u64,
    reported: [bool; 4],
    printed_write_err: bool,
    empty_polls: u32,
}

impl KernelTun {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("KernelTun")
        .ports("0-1/1-2")
        .processing("a/h")
        .flow("x/y")
        .keywords(KERNELTUN_KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "KernelTun(ADDR/MASK [, GATEWAY, KEYWORDS])\n\n\
     Creates a Linux TUN device: a point-to-point interface that carries\n\
     IP packets (IPv4 and IPv6) without a link header. IP packets the host\n\
     routes into the device are pushed out of output 0 with their IP\n\
     header marked (and an IPv4 packet's destination annotation set);\n\
     anything else the device hands up (a header that is not a valid IPv4\n\
     or IPv6 header) goes to output 1, or is dropped if there is none.\n\
     Packets arriving on the input must have their IP header marked\n\
     (MarkIPHeader, CheckIPHeader, ...): the bytes from the IP header to\n\
     the end are written into the device, and the host receives them as\n\
     arriving on it. With TAP true it behaves as KernelTap.\n\n\
     Say the configuration is `tun :: KernelTun(10.0.0.1/24); tun ->\n\
     IPClassifier(icmp type echo) -> ICMPPingResponder -> tun;': a ping\n\
     to 10.0.0.1 is answered by the host itself, a ping to 10.0.0.2 is\n\
     routed into the device and answered by pronto.\n\n\
     The device is created with /dev/net/tun (IFF_NO_PI) under the name\n\
     DEVNAME (default: the kernel picks tunN or tapN; `dev_name' says\n\
     which); it gets ADDR and MASK as the host's address and netmask, so\n\
     that the host routes ADDR/MASK into it; it is brought up; and a nonzero\n\
     GATEWAY (on ADDR/MASK's network) becomes the host's default route. The\n\
     device is not persistent: it disappears when pronto exits. Creating it\n\
     needs CAP_NET_ADMIN.\n\n\
     The input, push or pull, takes packets for the host: a pull input is\n\
     pulled by the element's task, BURST packets at most per run. Packets\n\
     read from the device are pushed out of output 0, BURST at most per task\n\
     run, stamped with the current time.\n\n\
     Differences from Click: the device is set up with ioctls, not\n\
     ifconfig/route; HEADROOM is checked but pronto packets always have 128\n\
     bytes of headroom; MTU is at most what a packet buffer holds; a refused\n\
     packet (too short, no IP header, bad IP version, larger than MTU) is\n\
     reported on standard error the first time for each reason, and every\n\
     refusal, every write the device refused and every frame dropped on the\n\
     way in (longer than a packet buffer, or no packet buffer free, or a\n\
     non-IP packet with no second output) is counted in `drops' (pronto's).\n\
     Write failures are reported as Click does (with IGNORE_QUEUE_OVERFLOWS,\n\
     ENOBUFS only once). A TUN device has no Ethernet address: ETHER is\n\
     accepted and ignored. There are no task handlers.\n\n\
     Ports: 0 or 1 input (push or pull); 1 or 2 push outputs.\n\
     Arguments:\n  \
     ADDR/MASK  IPv4 prefix: the host's address and netmask on the device\n  \
     GATEWAY    IPv4 address on ADDR/MASK's network: default route via it\n\
     Keywords:\n  \
     DEVNAME    the device's name (at most 15 bytes; DEV_NAME is the old name)\n  \
     TAP        boolean: a TAP device with Ethernet frames (default false)\n  \
     MTU        the device's MTU, 20-1920 (default 1500)\n  \
     ETHER      Ethernet address (TAP only)\n  \
     HEADROOM   bytes, at most 128 (accepted; packets have 128)\n  \
     BURST      packets read (and pulled) per task run, at least 1 (default 1)\n  \
     IGNORE_QUEUE_OVERFLOWS  boolean: report ENOBUFS only once (default false)\n\
     Handlers:\n  \
     dev_name (read), packets (read: packets read from the device),\n  \
     selected_calls (read: task runs that found the device readable),\n  \
     drops (read; pronto's)",
        );

    /// Configures a `KernelTun` (a TUN device unless `TAP true`).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        configure_kind(ctx, "KernelTun", false)
    }
}

/// The keywords of both classes.
pub(crate) const KERNELTUN_KEYWORDS: &[&str] = &[
    "GATEWAY",
    "TAP",
    "HEADROOM",
    "BURST",
    "ETHER",
    "IGNORE_QUEUE_OVERFLOWS",
    "MTU",
    "DEV_NAME",
    "DEVNAME",
];

/// Configures a `KernelTun` or a `KernelTap` (`tap` is the default of the
/// `TAP` keyword).
pub(crate) fn configure_kind(
    ctx: &ConfigCtx<'_>,
    class: &'static str,
    tap: bool,
) -> Result<Box<dyn Element>, ConfigError> {
    let mut a = ctx.args();
    let prefix: IpPrefix = a.read_mp("ADDR")?;
    let gateway: Option<Ip4> = a.read_p("GATEWAY")?;
    let tap: bool = a.read_or("TAP", tap)?;
    let headroom: Option<u32> = a.read("HEADROOM")?;
    let burst: i64 = a.read_or("BURST", 1)?;
    let ether: Option<EtherAddr> = a.read("ETHER")?;
    let ignore_q_errs: bool = a.read_or("IGNORE_QUEUE_OVERFLOWS", false)?;
    let mtu: Option<u32> = a.read("MTU")?;
    let old_name: Option<String> = a.read("DEV_NAME")?;
    let devname: Option<String> = a.read("DEVNAME")?;
    a.finish()?;
    let gateway = gateway.filter(|g| g.0 != [0; 4]);
    if let Some(g) = gateway {
        let on_net = (0..4).all(|i| g.0[i] & prefix.mask[i] == prefix.addr[i] & prefix.mask[i]);
        if !on_net {
            return Err(cfg_err(format!(
                "bad GATEWAY: {g} is not on ADDR's network ({}/{})",
                Ip4(prefix.addr),
                Ip4(prefix.mask)
            )));
        }
    }
    if burst < 1 {
        return Err(cfg_err("BURST must be >= 1"));
    }
    let max_mtu = if tap {
        MAX_PACKET - ETHER_LEN
    } else {
        MAX_PACKET
    } as u32;
    if let Some(m) = mtu {
        if m < MIN_MTU {
            return Err(cfg_err(format!("MTU must be greater than {MIN_MTU}")));
        }
        if m > max_mtu {
            return Err(cfg_err(format!(
                "MTU too large: at most {max_mtu} (a packet holds {MAX_PACKET} bytes{})",
                if tap { " with the Ethernet header" } else { "" }
            )));
        }
    }
    if headroom.is_some_and(|h| h as usize > DEFAULT_HEADROOM) {
        return Err(cfg_err(format!(
            "HEADROOM too big: pronto packets have {DEFAULT_HEADROOM} bytes of headroom"
        )));
    }
    let kind = if tap { TapKind::Tap } else { TapKind::Tun };
    let name = devname
        .or(old_name)
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| if tap { "tap%d" } else { "tun%d" }.to_string());
    if crate::world::check_only() {
        let warn = (!std::path::Path::new("/dev/net/tun").exists())
            .then(|| format!("{class}: no /dev/net/tun here; `pronto run` will need it"));
        return Ok(crate::world::stand_in([warn]));
    }
    let dev = Tap::open_kind(&name, kind).map_err(|e| cfg_err(e.to_string()))?;
    dev.configure(&TapConfig {
        mac: if tap { ether.map(|e| e.0) } else { None },
        mtu,
        addr: Some((prefix.addr, prefix.mask)),
        gateway: gateway.map(|g| g.0),
    })
    .map_err(|e| cfg_err(e.to_string()))?;
    Ok(Box::new(KernelTun {
        class,
        tap: dev,
        kind,
        mtu: mtu.unwrap_or(1500),
        burst: usize::try_from(burst)
            .unwrap_or(usize::MAX)
            .min(pronto_packet::BATCH_MAX),
        pull: ctx.ninputs > 0 && !ctx.input_push.first().copied().unwrap_or(true),
        noutputs: ctx.noutputs,
        ignore_q_errs,
        stats: TapRxStats::default(),
        packets: 0,
        selected_calls: 0,
        drops: 0,
        reported: [false; 4],
        printed_write_err: false,
        empty_polls: 0,
    }))
}

/// Marks a packet read from a TUN device as Click's FakePcap does for raw
/// IP: an IPv4 header (at least 20 bytes, all present) is marked and gives
/// the destination annotation; an IPv6 header (40 bytes present) is
/// marked. Anything else is not IP (false).
fn mark_ip(p: &mut Packet) -> bool {
    let d = p.data();
    match d.first().map(|b| b >> 4) {
        Some(4) => {
            let hl = usize::from(d[0] & 0x0f) * 4;
            if hl < 20 || hl > d.len() {
                return false;
            }
            let dst = [d[16], d[17], d[18], d[19]];
            p.set_network_header(0, hl);
            p.set_dst_ip_anno(dst);
            true
        }
        Some(6) if d.len() >= 40 => {
            p.set_network_header(0, 40);
            true
        }
        _ => false,
    }
}

impl KernelTun {
    fn refuse(&mut self, why: Refusal, version: u8) {
        self.drops += 1;
        if !std::mem::replace(&mut self.reported[why as usize], true) {
            let dev = self.tap.name();
            let msg = match why {
                Refusal::TooSmall => "packet too small".to_string(),
                Refusal::NoNetworkHeader => "no network header".to_string(),
                Refusal::BadVersion => format!("unknown IP version {version}"),
                Refusal::OverMtu => format!("packet larger than MTU ({})", self.mtu),
            };
            eprintln!("{}({dev}): {msg}", self.class);
        }
    }

    /// Writes one packet into the device, or refuses it.
    fn send_one(&mut self, p: &Packet) {
        let (bytes, check_len) = match self.kind {
            TapKind::Tap => {
                if p.len() < ETHER_LEN {
                    return self.refuse(Refusal::TooSmall, 0);
                }
                (p.data(), p.len() - ETHER_LEN)
            }
            TapKind::Tun => {
                let Some(nd) = p.network_data().filter(|nd| nd.len() >= 20) else {
                    return self.refuse(Refusal::NoNetworkHeader, 0);
                };
                let v = nd[0] >> 4;
                if v != 4 && v != 6 {
                    return self.refuse(Refusal::BadVersion, v);
                }
                (nd, nd.len())
            }
        };
        if check_len > self.mtu as usize {
            return self.refuse(Refusal::OverMtu, 0);
        }
        if let Err(e) = self.tap.send(bytes) {
            self.drops += 1;
            let overflow = e.raw_os_error() == Some(rustix::io::Errno::NOBUFS.raw_os_error());
            if !(overflow && self.ignore_q_errs && self.printed_write_err) {
                self.printed_write_err = true;
                eprintln!("{}({}): write failed: {e}", self.class, self.tap.name());
            }
        }
    }

    fn send_batch(&mut self, batch: &mut Batch) {
        for p in batch.iter() {
            self.send_one(p);
        }
        batch.clear();
    }
}

impl Element for KernelTun {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        self.send_batch(batch);
    }

    fn has_task(&self) -> bool {
        true
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        self.pull.then_some((0, self.burst))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let pulled = !batch.is_empty();
        if pulled {
            self.send_batch(batch);
        }
        let before = self.stats.drops();
        let n = self
            .tap
            .recv(out.pool, batch, self.burst, out.now, &mut self.stats);
        self.drops += self.stats.drops() - before;
        if n > 0 {
            self.selected_calls += 1;
            self.packets += n as u64;
            if self.kind == TapKind::Tun {
                let second = self.noutputs > 1;
                let mut dropped = 0;
                batch.retain_or(mark_ip, |p| {
                    if second {
                        out.emit(1, p);
                    } else {
                        dropped += 1;
                    }
                });
                self.drops += dropped;
            }
            out.pass(0);
        }
        if n > 0 || pulled {
            self.empty_polls = 0;
            return TaskStatus::Busy;
        }
        super::poll_status(false, &mut self.empty_polls)
    }

    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        Some(WaitFd {
            fd: self.tap.fd(),
            writable: false,
        })
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("not_delivered", self.drops);
        c.count("packets", self.packets);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("dev_name"),
            HandlerInfo::read("selected_calls"),
            HandlerInfo::read("packets"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "dev_name" => Ok(self.tap.name().to_string()),
            "selected_calls" => Ok(self.selected_calls.to_string()),
            "packets" => Ok(self.packets.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, push, run_task};

    fn err(conf: &str) -> String {
        config_err(configure(
            KernelTun::SPEC.keywords,
            KernelTun::configure,
            conf,
            &[true],
            &[true, true],
            std::path::Path::new("."),
        ))
    }

    #[test]
    fn config_errors() {
        assert_eq!(err(""), "missing mandatory ADDR argument");
        assert_eq!(
            err("10.0.0.1/24, 10.0.1.1"),
            "bad GATEWAY: 10.0.1.1 is not on ADDR's network (10.0.0.1/255.255.255.0)"
        );
        assert_eq!(err("10.0.0.1/24, BURST 0"), "BURST must be >= 1");
        assert_eq!(err("10.0.0.1/24, MTU 19"), "MTU must be greater than 20");
        assert_eq!(
            err("10.0.0.1/24, MTU 1921"),
            "MTU too large: at most 1920 (a packet holds 1920 bytes)"
        );
        assert_eq!(
            err("10.0.0.1/24, TAP true, MTU 1907"),
            "MTU too large: at most 1906 (a packet holds 1920 bytes with the Ethernet header)"
        );
        assert_eq!(
            err("10.0.0.1/24, HEADROOM 129"),
            "HEADROOM too big: pronto packets have 128 bytes of headroom"
        );
        assert_eq!(err("10.0.0.1/24, DEVNAME a/b"), "a/b: bad interface name");
    }

    /// A configured element on a fresh device, or `None` (loudly) where
    /// this process may not create one.
    fn device(
        factory: crate::Factory,
        conf: &str,
        input_push: &[bool],
    ) -> Option<Box<dyn Element>> {
        match configure(
            KernelTun::SPEC.keywords,
            factory,
            conf,
            input_push,
            &[true, true],
            std::path::Path::new("."),
        ) {
            Ok(e) => Some(e),
            Err(e) if e.message.contains("/dev/net/tun") || e.message.contains("TUNSETIFF") => {
                eprintln!(
                    "SKIPPED: KernelTun needs root and /dev/net/tun ({})",
                    e.message
                );
                None
            }
            Err(e) => panic!("{}", e.message),
        }
    }

    fn sys(name: &str, what: &str) -> String {
        std::fs::read_to_string(format!("/sys/class/net/{name}/{what}"))
            .unwrap_or_default()
            .trim()
            .to_string()
    }

    /// Runs the task until a packet that `want` accepts comes out of
    /// output 0 (two seconds at most); other packets are skipped.
    fn wait_for(
        e: &mut dyn Element,
        pool: &pronto_packet::Pool,
        want: impl Fn(&[u8]) -> bool,
    ) -> Option<Packet> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            let (_, mut outs, _) = run_task(e, pool, 2, 777);
            if let Some(i) = outs[0].iter().position(|p| want(p.data())) {
                return Some(outs[0].swap_remove(i));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        None
    }

    /// An ICMP echo request `src` -> `dst`, id 0x4b54, sequence 7, payload
    /// "pronto!!", checksums filled in.
    fn echo_request(src: [u8; 4], dst: [u8; 4]) -> [u8; 36] {
        let mut p = [0u8; 36];
        p[0] = 0x45; // version 4, header 20 bytes
        p[2..4].copy_from_slice(&36u16.to_be_bytes()); // total length
        p[8] = 64; // TTL
        p[9] = 1; // ICMP
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        let c = pronto_packet::wire::checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p[20] = 8; // echo request
        p[24..26].copy_from_slice(&0x4b54u16.to_be_bytes()); // identifier
        p[26..28].copy_from_slice(&7u16.to_be_bytes()); // sequence
        p[28..36].copy_from_slice(b"pronto!!");
        let c = pronto_packet::wire::checksum(&p[20..]);
        p[22..24].copy_from_slice(&c.to_be_bytes());
        p
    }

    /// An echo request pushed into KernelTun reaches the host, whose echo
    /// reply comes out of output 0 with its IP header marked; refused
    /// packets are counted; the device has the asked-for name and MTU and
    /// goes with the element.
    #[test]
    fn host_answers_a_ping_through_the_tun() {
        let name = format!("pkt{}", std::process::id() % 100_000);
        let Some(mut e) = device(
            KernelTun::configure,
            &format!("10.214.12.1/24, DEVNAME {name}, MTU 1400"),
            &[true],
        ) else {
            return;
        };
        assert_eq!(e.read_handler("dev_name").expect("dev_name"), name);
        assert_eq!(sys(&name, "mtu"), "1400");
        assert_eq!(sys(&name, "tun_flags"), "0x1001");
        let pool = pronto_packet::Pool::new(64).expect("pool");
        let req = echo_request([10, 214, 12, 2], [10, 214, 12, 1]);
        // Marked IP packets go to the device; an unmarked one, an IP
        // version 5 one and one over the MTU are refused.
        let mut batch = pronto_packet::Batch::new();
        let mut ok = pool.alloc_from(&req).expect("pkt");
        ok.set_network_header(0, 20);
        let unmarked = pool.alloc_from(&req).expect("pkt");
        let mut v5 = req;
        v5[0] = 0x55;
        let mut v5 = pool.alloc_from(&v5).expect("pkt");
        v5.set_network_header(0, 20);
        let mut big = pool.alloc_from(&[0x45; 1401]).expect("pkt");
        big.set_network_header(0, 20);
        for p in [ok, unmarked, v5, big] {
            batch.push(p).expect("room");
        }
        let outs = crate::app::testing::push_batch(e.as_mut(), &pool, &mut batch, 2, 0);
        assert!(outs.iter().all(Vec::is_empty));
        assert_eq!(e.read_handler("drops").expect("drops"), "3");
        let reply = wait_for(e.as_mut(), &pool, |d| d.len() == 36 && d[20] == 0)
            .expect("no echo reply from the host");
        let d = reply.data();
        assert_eq!(d[0], 0x45);
        assert_eq!(d[9], 1);
        assert_eq!(d[12..16], [10, 214, 12, 1]);
        assert_eq!(d[16..20], [10, 214, 12, 2]);
        assert_eq!(d[24..36], req[24..36]);
        assert_eq!(pronto_packet::wire::checksum(&d[..20]), 0);
        assert_eq!(pronto_packet::wire::checksum(&d[20..]), 0);
        assert_eq!(reply.network_header_offset(), Some(0));
        assert_eq!(reply.network_header_len(), Some(20));
        assert_eq!(reply.mac_header_offset(), None);
        assert_eq!(reply.dst_ip_anno(), [10, 214, 12, 2]);
        assert_eq!(reply.timestamp_ns(), 777);
        assert_ne!(e.read_handler("packets").expect("packets"), "0");
        assert_ne!(
            e.read_handler("selected_calls").expect("selected_calls"),
            "0"
        );
        assert_eq!(e.read_handler("drops").expect("drops"), "3");
        drop(reply);
        drop(e);
        assert!(
            super::super::fromhost::tests::gone(&name),
            "{name} outlived KernelTun"
        );
        assert_eq!(pool.available(), 64);
    }

    #[test]
    fn marks_ipv4_and_ipv6_only() {
        let pool = pronto_packet::Pool::new(8).expect("pool");
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        let mut p = pool.alloc_from(&v6).expect("pkt");
        assert!(mark_ip(&mut p));
        assert_eq!(p.network_header_len(), Some(40));
        let mut p = pool.alloc_from(&v6[..39]).expect("pkt");
        assert!(!mark_ip(&mut p));
        let mut v4 = [0u8; 24];
        v4[0] = 0x46;
        v4[16..20].copy_from_slice(&[1, 2, 3, 4]);
        let mut p = pool.alloc_from(&v4).expect("pkt");
        assert!(mark_ip(&mut p));
        assert_eq!(p.network_header_len(), Some(24));
        assert_eq!(p.dst_ip_anno(), [1, 2, 3, 4]);
        let mut p = pool.alloc_from(&v4[..23]).expect("pkt");
        assert!(!mark_ip(&mut p));
        v4[0] = 0x44;
        let mut p = pool.alloc_from(&v4).expect("pkt");
        assert!(!mark_ip(&mut p));
        let mut p = pool.alloc_from(&[]).expect("pkt");
        assert!(!mark_ip(&mut p));
    }

    /// KernelTap: an ARP request pushed in reaches the host, whose ARP
    /// reply (to the ETHER address asked for) comes out; a pull input is
    /// pulled by the task.
    #[test]
    fn host_answers_arp_through_the_tap() {
        let name = format!("pkp{}", std::process::id() % 100_000);
        let Some(mut e) = device(
            super::super::kerneltap::KernelTap::configure,
            &format!("10.214.13.1/24, DEVNAME {name}, ETHER 02:00:0a:d6:0d:01"),
            &[true],
        ) else {
            return;
        };
        assert_eq!(sys(&name, "address"), "02:00:0a:d6:0d:01");
        assert_eq!(sys(&name, "tun_flags"), "0x1002");
        let pool = pronto_packet::Pool::new(64).expect("pool");
        // Who has 10.214.13.1? Tell 10.214.13.2 (02:00:00:00:00:02).
        let mut arp = [0u8; 42];
        arp[..6].fill(0xff);
        arp[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        arp[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        arp[22..28].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        arp[28..32].copy_from_slice(&[10, 214, 13, 2]);
        arp[38..42].copy_from_slice(&[10, 214, 13, 1]);
        let outs = push(e.as_mut(), &pool, &[&arp, &arp[..13]], 2, 0);
        assert!(outs.iter().all(Vec::is_empty));
        assert_eq!(e.read_handler("drops").expect("drops"), "1");
        let reply = wait_for(e.as_mut(), &pool, |d| {
            d.len() >= 42 && d[12..14] == [0x08, 0x06] && d[21] == 2
        })
        .expect("no ARP reply from the host");
        let mut want = [0u8; 42];
        want[..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        want[6..12].copy_from_slice(&[2, 0, 0x0a, 0xd6, 0x0d, 1]);
        want[12..14].copy_from_slice(&[0x08, 0x06]);
        want[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 2]);
        want[22..28].copy_from_slice(&[2, 0, 0x0a, 0xd6, 0x0d, 1]);
        want[28..32].copy_from_slice(&[10, 214, 13, 1]);
        want[32..38].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
        want[38..42].copy_from_slice(&[10, 214, 13, 2]);
        assert_eq!(reply.data(), want);
        assert_eq!(reply.mac_header_offset(), Some(0));
        drop(reply);
        drop(e);
        assert_eq!(pool.available(), 64);
    }

    /// With a pull input the task pulls BURST packets and asks for no
    /// pull without one.
    #[test]
    fn pull_input_is_pulled_by_the_task() {
        let Some(mut e) = device(KernelTun::configure, "10.214.14.1/24, BURST 4", &[false]) else {
            return;
        };
        assert_eq!(e.task_pull(0), Some((0, 4)));
        assert!(e.has_task());
        assert!(e.wait_fd().is_some());
        let Some(mut e) = device(KernelTun::configure, "10.214.15.1/24", &[true]) else {
            return;
        };
        assert_eq!(e.task_pull(0), None);
    }
}
