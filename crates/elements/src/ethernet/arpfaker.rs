//! `ARPFaker`: sends an ARP reply every 10 seconds.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, Ip4, Out, Spec, TaskStatus,
};

const SEC: i64 = 1_000_000_000;

/// Periodically claims, to one host, that an address is at an Ethernet
/// address.
pub struct ARPFaker {
    frame: [u8; 42],
    next: Option<i64>,
}

impl ARPFaker {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ARPFaker")
        .ports("0/1")
        .processing("h/h")
        .keywords(&["DSTIP", "DSTETH", "SRCIP", "SRCETH"])
        .profile(ActionProfile::NONE)
        .doc(
            "ARPFaker(DSTIP, DSTETH, SRCIP, SRCETH)\n\n\
             One second after the router starts, then every 10 seconds, sends\n\
             DSTIP/DSTETH an ARP reply (with its Ethernet header, 42 bytes) saying\n\
             that SRCIP is at SRCETH. ARPResponder is usually what you want.\n\n\
             Ports: no inputs, 1 push output.",
        );

    /// Configures an `ARPFaker`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ip1: Ip4 = a.read_mp("DSTIP")?;
        let eth1: EtherAddr = a.read_mp("DSTETH")?;
        let ip2: Ip4 = a.read_mp("SRCIP")?;
        let eth2: EtherAddr = a.read_mp("SRCETH")?;
        a.finish()?;
        let mut f = [0u8; 42];
        f[0..6].copy_from_slice(&eth1.0);
        f[6..12].copy_from_slice(&eth2.0);
        f[12..14].copy_from_slice(&[0x08, 0x06]);
        f[14..22].copy_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, 2]);
        f[22..28].copy_from_slice(&eth2.0);
        f[28..32].copy_from_slice(&ip2.0);
        f[32..38].copy_from_slice(&eth1.0);
        f[38..42].copy_from_slice(&ip1.0);
        Ok(Box::new(ARPFaker {
            frame: f,
            next: None,
        }))
    }
}

impl Element for ARPFaker {
    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        let next = *self.next.get_or_insert(now.saturating_add(SEC));
        if now < next {
            return TaskStatus::SleepUntil(next);
        }
        if let Some(mut p) = out.pool.alloc_from(&self.frame) {
            p.set_mac_header(0);
            p.set_network_header(14, 28);
            let _ = batch.push(p);
            out.pass(0);
        }
        let next = now.saturating_add(10 * SEC);
        self.next = Some(next);
        TaskStatus::SleepUntil(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, run_task};
    use crate::Control;
    use pronto_packet::Pool;

    #[test]
    fn replies_periodically() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            &["DSTIP", "DSTETH", "SRCIP", "SRCETH"],
            ARPFaker::configure,
            "18.26.4.1, 0:e0:2b:b:1a:0, 18.26.4.99, 00:a0:c9:9c:fd:9c",
            0,
            1,
        )
        .expect("ok");
        let mut c = Control::default();
        let (st, o) = run_task(e.as_mut(), &pool, vec![], 1, 0, &mut c);
        assert_eq!(st, TaskStatus::SleepUntil(SEC));
        assert!(o[0].is_empty());
        let (st, o) = run_task(e.as_mut(), &pool, vec![], 1, SEC, &mut c);
        assert_eq!(st, TaskStatus::SleepUntil(11 * SEC));
        assert_eq!(
            o[0][0].data(),
            &[
                0, 0xe0, 0x2b, 0xb, 0x1a, 0, 0, 0xa0, 0xc9, 0x9c, 0xfd, 0x9c, 8,
                6, // Ethernet
                0, 1, 8, 0, 6, 4, 0, 2, // Ethernet/IP reply
                0, 0xa0, 0xc9, 0x9c, 0xfd, 0x9c, 18, 26, 4, 99, // sender
                0, 0xe0, 0x2b, 0xb, 0x1a, 0, 18, 26, 4, 1, // target
            ]
        );
    }
}
