//! `ToDevice`: sends packets out of a Linux network interface.

use pronto_netdev::{Method, TxDevice};

use super::swport::TxBackend;
use pronto_packet::Batch;

use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    TaskStatus, WaitFd,
};

/// Sends packets out of a network interface.
pub struct ToDevice {
    ifname: String,
    dev: TxBackend,
    method: Method,
    burst: usize,
    pull: bool,
    noutputs: usize,
    /// The transmit ring was full at the last pull.
    full: bool,
    count: u64,
    drops: u64,
    reported_errors: u64,
}

impl ToDevice {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ToDevice")
        .ports("1/0-2")
        .processing("a/h")
        .keywords(&["BURST", "METHOD", "DEBUG"])
        .profile(ActionProfile::NONE)
        .doc(
            "ToDevice(DEVNAME [, KEYWORDS])\n\n\
             Sends packets out of the Linux network interface DEVNAME, as they are\n\
             (they must carry their link-level header). With a pull input (Click's\n\
             way) a task pulls up to BURST packets per run; a push input sends\n\
             each batch as it arrives. Sent packets go on to output 0 if there is\n\
             one; packets that could not be sent (interface refused them, transmit\n\
             ring or socket buffer full) to output 1 if there is one, and are\n\
             otherwise dropped and counted in `drops'.\n\n\
             Under `pronto run --switch SOCKET`, DEVNAME names this middlebox's\n\
             virtual interface: a port of pronto's switch (shared with a\n\
             FromDevice of the same name); a frame the port has no free slot\n\
             for counts as not sent.\n\n\
             Ports: 1 input (pull or push; Click's is pull only); 0 to 2 push\n\
             outputs.\n\
             Keywords:\n  \
             BURST   packets pulled per task run, at least 1 (default 1)\n  \
             METHOD  RING (default: TPACKET_V2 transmit ring, one send call per\n          \
             batch, bypassing the queueing discipline), SOCKET (one send call\n          \
             per packet; Click's LINUX is the same) or XDP (an AF_XDP socket's\n          \
             transmit ring, one send call per batch when the kernel asks;\n          \
             needs root)\n  \
             DEBUG   boolean; accepted, ignored\n\
             Handlers:\n  count (read), drops (read), reset_counts (write)",
        );

    /// Configures a `ToDevice`: opens the interface.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ifname: String = a.read_mp("DEVNAME")?;
        let burst: u32 = a.read_or("BURST", 1)?;
        let method: Option<String> = a.read("METHOD")?;
        let _debug = a.read_or("DEBUG", false)?;
        a.finish()?;
        if burst == 0 {
            return Err(cfg_err("BURST out of range"));
        }
        let method = super::method(method)?;
        if crate::world::check_only() {
            return Ok(crate::world::stand_in([crate::world::interface(&ifname)]));
        }
        let dev = TxBackend::open(&ifname, || {
            TxDevice::open(&ifname, method).map_err(|e| e.to_string())
        })
        .map_err(cfg_err)?;
        Ok(Box::new(ToDevice {
            ifname,
            dev,
            method,
            burst: (burst as usize).min(pronto_packet::BATCH_MAX),
            pull: !ctx.input_push.first().copied().unwrap_or(true),
            noutputs: ctx.noutputs,
            full: false,
            count: 0,
            drops: 0,
            reported_errors: 0,
        }))
    }

    fn send_batch(&mut self, batch: &mut Batch, out: &mut Out<'_>) {
        let (count, drops, noutputs) = (&mut self.count, &mut self.drops, self.noutputs);
        // With no output to pass sent packets on, a packet in the port's
        // own slots goes as it lies (`None` comes back for it).
        self.dev.send_batch(batch, noutputs == 0, |p, sent| {
            if sent {
                *count += 1;
                if let (true, Some(p)) = (noutputs > 0, p) {
                    out.emit(0, p);
                }
            } else {
                *drops += 1;
                if let (true, Some(p)) = (noutputs > 1, p) {
                    out.emit(1, p);
                }
            }
        });
        let (errors, last) = self.dev.errors();
        if errors > self.reported_errors {
            if self.reported_errors == 0 {
                if let Some(e) = last {
                    eprintln!("ToDevice({}): {e}", self.ifname);
                }
            }
            self.reported_errors = errors;
        }
    }
}

impl Element for ToDevice {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        self.send_batch(batch, out);
    }

    fn has_task(&self) -> bool {
        self.pull
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        let room = self.dev.room(self.burst);
        self.full = room == 0;
        (room > 0).then_some((0, room))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        if batch.is_empty() {
            self.dev.flush();
            return TaskStatus::Idle;
        }
        self.send_batch(batch, out);
        TaskStatus::Busy
    }

    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        // Only a full ring is worth waiting on; an empty input waits on
        // whatever fills it.
        (self.full && !self.dev.is_switch()).then(|| WaitFd {
            fd: self.dev.fd(),
            writable: true,
        })
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("send_failed", self.drops);
        c.count("count", self.count);
        if self.dev.is_switch() {
            c.count("sent_in_place", self.dev.sent_in_place());
        }
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("count"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("method"),
            HandlerInfo::write("reset_counts"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "count" => Ok(self.count.to_string()),
            "drops" => Ok(self.drops.to_string()),
            "method" if self.dev.is_switch() => Ok("SWITCH".into()),
            "method" => Ok(self.method.as_str().into()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, _value: &str) -> Result<(), HandlerError> {
        match name {
            "reset_counts" => {
                self.count = 0;
                self.drops = 0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.dev.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure};

    fn err(conf: &str) -> String {
        config_err(configure(
            ToDevice::SPEC.keywords,
            ToDevice::configure,
            conf,
            &[false],
            &[],
            std::path::Path::new("."),
        ))
    }

    #[test]
    fn config_errors() {
        assert_eq!(err(""), "missing mandatory DEVNAME argument");
        assert_eq!(err("lo, BURST 0"), "BURST out of range");
        assert_eq!(
            err("lo, METHOD NETMAP"),
            "bad METHOD `NETMAP`: expected RING, SOCKET or XDP (or Click's LINUX, PCAP or DEFAULT)"
        );
        assert_eq!(err("a/b"), "a/b: bad interface name");
    }

    /// Sends a frame out of the loopback interface (needs CAP_NET_RAW;
    /// skipped loudly without it).
    #[test]
    fn sends_on_loopback_with_both_methods() {
        for m in ["RING", "SOCKET"] {
            let conf = format!("lo, METHOD {m}, BURST 4");
            let e = configure(
                ToDevice::SPEC.keywords,
                ToDevice::configure,
                &conf,
                &[true],
                &[true],
                std::path::Path::new("."),
            );
            let mut e = match e {
                Ok(e) => e,
                Err(err) if err.message.contains("socket") => {
                    eprintln!("SKIPPED: no packet sockets here ({})", err.message);
                    return;
                }
                Err(err) => panic!("{}", err.message),
            };
            let pool = pronto_packet::Pool::new(8).expect("pool");
            // Ethernet broadcast, ethertype 0x88b5 (local experimental).
            let mut frame = [0u8; 60];
            frame[..6].fill(0xff);
            frame[12..14].copy_from_slice(&[0x88, 0xb5]);
            let outs = crate::app::testing::push(e.as_mut(), &pool, &[&frame], 1, 0);
            assert_eq!(outs[0].len(), 1, "{m}");
            assert_eq!(e.read_handler("count").expect("count"), "1");
            assert_eq!(e.read_handler("method").expect("method"), m);
            e.write_handler("reset_counts", "").expect("reset");
            assert_eq!(e.read_handler("count").expect("count"), "0");
        }
    }
}
