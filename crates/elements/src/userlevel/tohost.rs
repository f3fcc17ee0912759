//! `ToHost`: hands Ethernet frames to the host's network stack through
//! the TAP device of the `FromHost` with the same device name.

use std::sync::Arc;

use pronto_packet::Batch;

use super::fromhost::HostDevice;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    PHASE_DEFAULT,
};

/// Ethernet header length: shorter packets are not frames.
const ETHER_LEN: usize = 14;

/// Writes frames into a `FromHost`'s TAP device.
pub struct ToHost {
    dev: Arc<HostDevice>,
    count: u64,
    drops: u64,
    reported: bool,
}

impl ToHost {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ToHost")
        .ports("1/0")
        .processing("h/h")
        .profile(ActionProfile::NONE.dropping())
        // After FromHost, whose device it uses (Click: FromHost's phase + 1).
        .phase(PHASE_DEFAULT + 1)
        .doc(
            "ToHost(DEVNAME)\n\n\
             Hands packets to the host's network stack: each packet, which must\n\
             start with an Ethernet header, is written into the TAP device\n\
             DEVNAME, and the host receives it as a frame arriving on that\n\
             interface. The device is the one a FromHost(DEVNAME) in the same\n\
             configuration created; without such a FromHost configuration\n\
             fails (as in Click). IPv4 packets should be addressed to the\n\
             host's address on DEVNAME (or broadcast) and come from a routable\n\
             source, else the host drops them silently; a frame not addressed\n\
             to the device's Ethernet address (or broadcast) is dropped by the\n\
             host as well.\n\n\
             Packets shorter than an Ethernet header (14 bytes) and packets the\n\
             device refuses (it is down, or its queue is full) are dropped and\n\
             counted in `drops'; the first refusal is reported on standard\n\
             error. (Click counts only refusals, and reports each.) Under\n\
             --threads, ToHost must run on the same thread as its FromHost\n\
             (connect them, or use StaticThreadSched).\n\n\
             Ports: 1 push input; no outputs.\n\
             Handlers:\n  \
             dev_name (read), drops (read), count (read: frames written; pronto's)",
        );

    /// Configures a `ToHost`: finds the `FromHost` of the same device.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let devname: String = a.read_mp("DEVNAME")?;
        a.finish()?;
        let dev = ctx
            .peers
            .of_class("FromHost")
            .into_iter()
            .filter_map(|p| p.shared?.downcast::<HostDevice>().ok())
            .find(|d| d.devname == devname || d.tap.name() == devname)
            .ok_or_else(|| {
                cfg_err(format!(
                    "ToHost({devname}) requires a FromHost({devname}) in the configuration: \
                     it writes into the TAP device that FromHost creates"
                ))
            })?;
        Ok(Box::new(ToHost {
            dev,
            count: 0,
            drops: 0,
            reported: false,
        }))
    }
}

impl Element for ToHost {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        for p in batch.iter() {
            if p.len() < ETHER_LEN {
                self.drops += 1;
                continue;
            }
            match self.dev.tap.send(p.data()) {
                Ok(()) => self.count += 1,
                Err(e) => {
                    self.drops += 1;
                    if !self.reported {
                        self.reported = true;
                        eprintln!("ToHost({}): write failed: {e}", self.dev.devname);
                    }
                }
            }
        }
        batch.clear();
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("send_failed", self.drops);
        c.count("count", self.count);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("dev_name"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("count"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "dev_name" => Ok(self.dev.devname.clone()),
            "drops" => Ok(self.drops.to_string()),
            "count" => Ok(self.count.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::config_err;
    use crate::{Peer, Peers};

    /// Peers holding one element.
    struct OnePeer(Peer);

    impl Peers for OnePeer {
        fn lookup(&self, name: &str) -> Option<Peer> {
            (name == self.0.name).then(|| self.0.clone())
        }

        fn of_class(&self, class: &str) -> Vec<Peer> {
            if class == self.0.class {
                vec![self.0.clone()]
            } else {
                Vec::new()
            }
        }
    }

    fn configure(config: &str, peers: &dyn Peers) -> Result<Box<dyn Element>, ConfigError> {
        let ctx = ConfigCtx {
            name: "th",
            config,
            ninputs: 1,
            noutputs: 0,
            base_dir: std::path::Path::new("."),
            keywords: ToHost::SPEC.keywords,
            output_push: &[],
            input_push: &[true],
            peers,
        };
        ToHost::configure(&ctx)
    }

    #[test]
    fn config_errors() {
        assert_eq!(
            config_err(configure("", &crate::NoPeers)),
            "missing mandatory DEVNAME argument"
        );
        assert_eq!(
            config_err(configure("tap0, 1", &crate::NoPeers)),
            "too many arguments: `1` was not expected"
        );
        assert_eq!(
            config_err(configure("tap0", &crate::NoPeers)),
            "ToHost(tap0) requires a FromHost(tap0) in the configuration: \
             it writes into the TAP device that FromHost creates"
        );
        // A FromHost-class peer without a device (never the case in a
        // router) or of another name does not count.
        let other = OnePeer(Peer {
            name: "fh".into(),
            class: "FromHost",
            shared: Some(Arc::new(7u32)),
        });
        assert_eq!(
            config_err(configure("tap0", &other)),
            "ToHost(tap0) requires a FromHost(tap0) in the configuration: \
             it writes into the TAP device that FromHost creates"
        );
    }

    /// Frames pushed into ToHost arrive on the FromHost's device; short
    /// frames and frames refused by the device are counted as drops.
    #[test]
    fn writes_into_the_fromhosts_device() {
        let Some((fh, name)) = super::super::fromhost::tests::from_host("th", "") else {
            return;
        };
        let peers = OnePeer(Peer {
            name: "fh".into(),
            class: "FromHost",
            shared: fh.shared(),
        });
        let mut th = configure(&name, &peers).expect("ToHost");
        assert_eq!(th.read_handler("dev_name").expect("dev_name"), name);
        let mut rx = pronto_netdev::RxDevice::open(
            &name,
            &pronto_netdev::RxConfig {
                method: pronto_netdev::Method::Socket,
                ..Default::default()
            },
        )
        .expect("packet socket");
        let mut frame = [0u8; 60];
        frame[..6].fill(0xff); // destination: broadcast
        frame[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 8]); // source
        frame[12..14].copy_from_slice(&[0x88, 0xb5]); // local experimental
        frame[14..18].copy_from_slice(&std::process::id().to_be_bytes()); // tag
        let pool = pronto_packet::Pool::new(64).expect("pool");
        let short = [0u8; 13];
        let outs = crate::app::testing::push(th.as_mut(), &pool, &[&frame, &short], 0, 0);
        assert!(outs.is_empty());
        assert_eq!(th.read_handler("count").expect("count"), "1");
        assert_eq!(th.read_handler("drops").expect("drops"), "1");
        let mut batch = Batch::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut got = false;
        while !got && std::time::Instant::now() < deadline {
            rx.recv(&pool, &mut batch, 8, 0);
            got = batch.iter().any(|p| p.data() == frame);
            batch.clear();
        }
        assert!(got, "frame written by ToHost not seen on {name}");
        // Down, the device refuses frames.
        let st = std::process::Command::new("ip")
            .args(["link", "set", "dev", &name, "down"])
            .status();
        if st.is_ok_and(|s| s.success()) {
            crate::app::testing::push(th.as_mut(), &pool, &[&frame], 0, 0);
            assert_eq!(th.read_handler("count").expect("count"), "1");
            assert_eq!(th.read_handler("drops").expect("drops"), "2");
        } else {
            eprintln!("SKIPPED the refused-frame check: `ip link set down` failed");
        }
        // The device lives while either element holds it.
        drop(fh);
        assert!(std::path::Path::new(&format!("/sys/class/net/{name}")).exists());
        drop(peers);
        drop(th);
        drop(rx);
        assert!(
            super::super::fromhost::tests::gone(&name),
            "{name} outlived its elements"
        );
    }
}
