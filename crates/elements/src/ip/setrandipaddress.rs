//! `SetRandIPAddress`: sets the destination annotation to random
//! addresses in a prefix.

use pronto_packet::Batch;

use crate::util::Rng;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, IpPrefix, Out, Spec};

/// Picks random destinations within a prefix.
pub struct SetRandIPAddress {
    addr: u32,
    mask: u32,
    /// With LIMIT, the addresses picked from.
    addrs: Vec<u32>,
    rng: Rng,
}

impl SetRandIPAddress {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetRandIPAddress")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["PREFIX", "LIMIT"])
        .profile(ActionProfile::NONE)
        .doc(
            "SetRandIPAddress(PREFIX [, LIMIT])\n\n\
             Sets each packet's destination IP annotation to a random address in\n\
             PREFIX (ADDR/LEN, ADDR/MASK or an address). With LIMIT, LIMIT addresses\n\
             are picked once at configuration, and each packet gets one of them.\n\
             The random sequence is the same from run to run.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `SetRandIPAddress`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let p: IpPrefix = a.read_mp("PREFIX")?;
        let limit: Option<i64> = a.read_p("LIMIT")?;
        a.finish()?;
        let mut e = SetRandIPAddress {
            addr: u32::from_be_bytes(p.addr),
            mask: u32::from_be_bytes(p.mask),
            addrs: Vec::new(),
            rng: Rng::new(0x05e7_4a6d),
        };
        if let Some(n) = limit.filter(|&n| n > 0) {
            let n = n.min(1 << 24) as usize;
            e.addrs = (0..n).map(|_| e.pick()).collect();
        }
        Ok(Box::new(e))
    }

    fn pick(&mut self) -> u32 {
        (self.rng.next_u32() & !self.mask) | (self.addr & self.mask)
    }
}

impl Element for SetRandIPAddress {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            let a = if self.addrs.is_empty() {
                self.pick()
            } else {
                let i = self.rng.range(0, self.addrs.len() as u32 - 1) as usize;
                self.addrs[i]
            };
            p.set_dst_ip_anno(a.to_be_bytes());
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn random_in_prefix() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            &["PREFIX", "LIMIT"],
            SetRandIPAddress::configure,
            "10.1.0.0/16",
            1,
            1,
        )
        .expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            (0..32).map(|_| pkt(&pool, &[0])).collect(),
            1,
        );
        let addrs: std::collections::HashSet<[u8; 4]> =
            outs[0].iter().map(|p| p.dst_ip_anno()).collect();
        assert!(addrs.iter().all(|a| a[0] == 10 && a[1] == 1));
        assert!(addrs.len() > 20);
        let mut e = configure(
            &["PREFIX", "LIMIT"],
            SetRandIPAddress::configure,
            "10.0.0.0/8, 3",
            1,
            1,
        )
        .expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            (0..32).map(|_| pkt(&pool, &[0])).collect(),
            1,
        );
        let addrs: std::collections::HashSet<[u8; 4]> =
            outs[0].iter().map(|p| p.dst_ip_anno()).collect();
        assert!(addrs.len() <= 3);
    }
}
