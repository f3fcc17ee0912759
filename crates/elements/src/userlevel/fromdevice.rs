//! `FromDevice`: receives packets from a Linux network interface.

use std::cell::Cell;

use pronto_netdev::{Method, RxConfig, RxDevice};

use super::swport::RxBackend;
use pronto_packet::Batch;

use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Seconds, Spec,
    TaskStatus, WaitFd,
};

/// Empty polls in a row before the task reports itself idle (and the
/// runtime may block on the socket).
const SPIN_POLLS: u32 = 32;

/// Receives packets from a network interface.
pub struct FromDevice {
    dev: RxBackend,
    method: Method,
    burst: usize,
    count: u64,
    empty_polls: u32,
    kernel_drops: Cell<u64>,
}

impl FromDevice {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FromDevice")
        .ports("0/1")
        .processing("h/h")
        .keywords(&[
            "PROMISC", "SNAPLEN", "SNIFFER", "METHOD", "OUTBOUND", "BURST", "TIMESTAMP", "TIMEOUT",
            "FANOUT",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "FromDevice(DEVNAME [, PROMISC, SNAPLEN, KEYWORDS])\n\n\
             Receives the frames that arrive on the Linux network interface DEVNAME\n\
             and pushes them out, BURST at most per task run, stamped with the\n\
             kernel's receive time. Like Click's user-level FromDevice it is a\n\
             sniffer: the kernel sees the frames too (give the interface no\n\
             addresses, or filter, if it should not act on them). Frames the host\n\
             itself sends on DEVNAME are not received unless OUTBOUND.\n\n\
             Frames whose checksum the sender left to the device are completed, and\n\
             TCP segmentation-offload frames (veth, local stacks) are cut into\n\
             MSS-sized segments. Any other frame longer than a packet buffer\n\
             (1,920 bytes) is dropped and counted in `drops'.\n\
             When the interface is idle the task sleeps on the socket instead of\n\
             spinning.\n\n\
             Under `pronto run --switch SOCKET`, DEVNAME names this middlebox's\n\
             virtual interface: a port of pronto's switch (shared with a\n\
             ToDevice of the same name); METHOD and the socket options do not\n\
             apply there.\n\n\
             Ports: no inputs; 1 push output.\n\
             Keywords:\n  \
             PROMISC    boolean; promiscuous mode while running (default false)\n  \
             SNAPLEN    bytes of each frame kept, 14-65535 (default 2046); the rest is\n             \
             recorded in the extra length annotation\n  \
             SNIFFER    boolean; accepted; false only warns (the kernel still sees\n             \
             the frames)\n  \
             METHOD     RING (default: TPACKET_V2 receive ring, each frame handed\n             \
             over as soon as the kernel writes it), SOCKET (one system\n             \
             call per frame; Click's LINUX is the same) or XDP (AF_XDP\n             \
             sockets on every receive queue, fed by an XDP program pronto\n             \
             attaches; needs root; the kernel's stack no longer sees the\n             \
             frames; OUTBOUND has no effect)\n  \
             TIMEOUT    time; accepted and checked (above 0, at most 60s) but has no\n             \
             effect: it was the block timeout of an earlier block ring\n  \
             OUTBOUND   boolean; also receive frames the host sends (default false)\n  \
             BURST      packets per task run, at least 1 (default 1)\n  \
             FANOUT     group id 0-65535 (RING and SOCKET; pronto's): every\n             \
             FromDevice naming the interface with the same FANOUT (in this\n             \
             network namespace) gets a share of its frames, whole flows\n             \
             each, so that several (on several threads with --threads, or\n             \
             in several processes) serve it\n  \
             TIMESTAMP  boolean; stamp packets (default true)\n\
             Handlers:\n  \
             count (read), drops (read: frames too long, malformed, or without a\n  \
             free packet buffer), kernel_drops (read: frames the kernel dropped\n  \
             because the socket was full), encap (read), reset_counts (write)",
        );

    /// Configures a `FromDevice`: opens the interface.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ifname: String = a.read_mp("DEVNAME")?;
        let promisc: bool = a.read_p("PROMISC")?.unwrap_or(false);
        let snaplen: u32 = a.read_p("SNAPLEN")?.unwrap_or(2046);
        let sniffer = a.read_or("SNIFFER", true)?;
        let method: Option<String> = a.read("METHOD")?;
        let outbound = a.read_or("OUTBOUND", false)?;
        let burst: u32 = a.read_or("BURST", 1)?;
        let timestamp = a.read_or("TIMESTAMP", true)?;
        let timeout: Option<Seconds> = a.read("TIMEOUT")?;
        let fanout: Option<u16> = a.read("FANOUT")?;
        a.finish()?;
        if !(14..=65535).contains(&snaplen) {
            return Err(cfg_err("SNAPLEN out of range"));
        }
        if burst == 0 {
            return Err(cfg_err("BURST out of range"));
        }
        let method = super::method(method)?;
        if fanout.is_some() && method == Method::Xdp {
            return Err(cfg_err(
                "FANOUT applies to METHOD RING and SOCKET (METHOD XDP serves every queue itself)",
            ));
        }
        let timeout_ms = match timeout {
            None => 1,
            Some(Seconds(s)) if s > 0.0 && s <= 60.0 => ((s * 1000.0).ceil() as u32).max(1),
            Some(_) => return Err(cfg_err("TIMEOUT out of range")),
        };
        if !sniffer {
            eprintln!(
                "{}: SNIFFER false is not supported: the kernel still receives {ifname}'s frames",
                ctx.name
            );
        }
        let cfg = RxConfig {
            method,
            promisc,
            outbound,
            snaplen: snaplen as usize,
            block_timeout_ms: timeout_ms,
            timestamp,
            fanout,
        };
        if crate::world::check_only() {
            return Ok(crate::world::stand_in([crate::world::interface(&ifname)]));
        }
        let dev = RxBackend::open(&ifname, || {
            RxDevice::open(&ifname, &cfg).map_err(|e| e.to_string())
        })
        .map_err(cfg_err)?;
        Ok(Box::new(FromDevice {
            dev,
            method,
            burst: (burst as usize).min(pronto_packet::BATCH_MAX),
            count: 0,
            empty_polls: 0,
            kernel_drops: Cell::new(0),
        }))
    }

    fn update_kernel_drops(&self) -> u64 {
        // The kernel's counter resets on each read: accumulate.
        if let Some(d) = self.dev.take_kernel_drops() {
            self.kernel_drops.set(self.kernel_drops.get() + d);
        }
        self.kernel_drops.get()
    }
}

impl Element for FromDevice {
    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let n = self.dev.recv(out.pool, batch, self.burst, out.now);
        if n > 0 {
            self.count += n as u64;
            self.empty_polls = 0;
            out.pass(0);
            return TaskStatus::Busy;
        }
        self.empty_polls = self.empty_polls.saturating_add(1);
        if self.empty_polls < SPIN_POLLS || !self.dev.prepare_idle() {
            TaskStatus::Busy
        } else {
            TaskStatus::Idle
        }
    }

    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        Some(WaitFd {
            fd: self.dev.fd(),
            writable: false,
        })
    }

    fn counters(&self, c: &mut crate::Counters) {
        let s = self.dev.stats();
        c.drop("too_long", s.oversize);
        c.drop("malformed", s.bad);
        c.drop("alloc_failed", s.nomem);
        // Frames the kernel dropped because the socket was full: they never
        // reached the element, so `drops` leaves them out.
        c.drop("socket_full", self.update_kernel_drops());
        c.count("count", self.count);
        if self.dev.is_switch() {
            c.count("in_place", s.in_place);
        }
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("kernel_drops"),
            HandlerInfo::read("encap"),
            HandlerInfo::read("method"),
            HandlerInfo::write("reset_counts"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "drops" => Ok(self.dev.stats().drops().to_string()),
            "kernel_drops" => Ok(self.update_kernel_drops().to_string()),
            "encap" => Ok("ETHER".into()),
            "method" if self.dev.is_switch() => Ok("SWITCH".into()),
            "method" => Ok(self.method.as_str().into()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset_counts" => {
                self.count = 0;
                self.dev.reset_stats();
                self.update_kernel_drops();
                self.kernel_drops.set(0);
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure};

    fn err(conf: &str) -> String {
        config_err(configure(
            FromDevice::SPEC.keywords,
            FromDevice::configure,
            conf,
            &[],
            &[true],
            std::path::Path::new("."),
        ))
    }

    #[test]
    fn config_errors() {
        assert_eq!(err(""), "missing mandatory DEVNAME argument");
        assert_eq!(err("lo, SNAPLEN 10"), "SNAPLEN out of range");
        assert_eq!(err("lo, BURST 0"), "BURST out of range");
        assert_eq!(
            err("lo, METHOD NETMAP"),
            "bad METHOD `NETMAP`: expected RING, SOCKET or XDP (or Click's LINUX, PCAP or DEFAULT)"
        );
        assert_eq!(err("lo, TIMEOUT 0"), "TIMEOUT out of range");
        assert_eq!(
            err("name-longer-than-15"),
            "name-longer-than-15: bad interface name"
        );
        let e = err("prontonoif9");
        assert!(
            e == "prontonoif9: no such interface: No such device (os error 19)"
                || e.starts_with("prontonoif9: socket: "),
            "{e}"
        );
    }
}

#[cfg(test)]
mod loopback_tests {
    use super::*;
    use crate::app::testing::{configure, run_task};

    /// A frame sent on the loopback interface comes back through
    /// FromDevice, with both methods (needs CAP_NET_RAW; skipped loudly
    /// without it).
    #[test]
    fn receives_on_loopback_with_both_methods() {
        for m in ["RING", "SOCKET"] {
            let conf = format!("lo, METHOD {m}, BURST 64");
            let mut e = match configure(
                FromDevice::SPEC.keywords,
                FromDevice::configure,
                &conf,
                &[],
                &[true],
                std::path::Path::new("."),
            ) {
                Ok(e) => e,
                Err(err) if err.message.contains("socket") => {
                    eprintln!("SKIPPED: no packet sockets here ({})", err.message);
                    return;
                }
                Err(err) => panic!("{}", err.message),
            };
            assert!(e.wait_fd().is_some());
            let mut tx = pronto_netdev::TxDevice::open("lo", Method::Socket).expect("lo");
            // Broadcast, ethertype 0x88b5, a tag to recognise it by.
            let mut frame = [0u8; 64];
            frame[..6].fill(0xff);
            frame[12..14].copy_from_slice(&[0x88, 0xb5]);
            let tag = std::process::id().to_be_bytes();
            frame[14..18].copy_from_slice(&tag);
            frame[18] = m.len() as u8;
            assert_eq!(tx.send(&frame), pronto_netdev::Sent::Ok);
            let pool = pronto_packet::Pool::new(512).expect("pool");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            let mut found = false;
            while !found && std::time::Instant::now() < deadline {
                let (_, outs, _) = run_task(e.as_mut(), &pool, 1, 5);
                found = outs[0].iter().any(|p| p.data() == frame);
                if !found {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            assert!(found, "{m}: frame not received");
            assert_ne!(e.read_handler("count").expect("count"), "0");
            assert_eq!(e.read_handler("drops").expect("drops"), "0");
            assert_eq!(e.read_handler("encap").expect("encap"), "ETHER");
            e.write_handler("reset_counts", "").expect("reset");
            assert_eq!(e.read_handler("count").expect("count"), "0");
        }
    }
}
