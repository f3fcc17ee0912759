//! `MarkIPCE`: sets the ECN field of ECN-capable packets to Congestion
//! Experienced.

use pronto_packet::{Batch, Packet};

use super::{ip_header_at, rewrite_tos};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Marks ECN-capable IP packets CE; drops the others unless forced.
pub struct MarkIPCE {
    force: bool,
    drops: u64,
}

impl MarkIPCE {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("MarkIPCE")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["FORCE"])
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "MarkIPCE([FORCE])\n\n\
             Expects IP packets (marked IP header). Sets each packet's ECN field to\n\
             Congestion Experienced (3), updating the IP checksum incrementally.\n\
             Packets that are not ECN-capable (ECN field 0) are dropped unless FORCE\n\
             (boolean, default false) is true; packets already marked CE pass\n\
             unchanged. Packets without a marked IP header are dropped.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)  packets dropped (not ECN-capable, or no IP header)",
        );

    /// Configures a `MarkIPCE`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let force = a.read_p("FORCE")?.unwrap_or(false);
        a.finish()?;
        Ok(Box::new(MarkIPCE { force, drops: 0 }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let ecn = ip_header_at(p, 12).map(|nh| p.data()[nh + 1] & 3);
        match ecn {
            Some(3) => Some(0),
            Some(0) if !self.force => {
                self.drops += 1;
                None
            }
            Some(_) => {
                rewrite_tos(p, |t| t | 3);
                Some(0)
            }
            None => {
                self.drops += 1;
                None
            }
        }
    }
}

impl Element for MarkIPCE {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("not_ecn_capable", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    fn with_ecn(pool: &Pool, ecn: u8) -> Packet {
        let mut d = ip_packet([1, 0, 0, 1], [1, 0, 0, 2], 0);
        d[1] = 0xa8 | ecn;
        d[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        let mut p = pkt(pool, &d);
        p.set_network_header(0, 20);
        p
    }

    #[test]
    fn marks_ce() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(&["FORCE"], MarkIPCE::configure, "", 1, 1).expect("ok");
        let pkts = (0..4).map(|ecn| with_ecn(&pool, ecn)).collect();
        let outs = push(e.as_mut(), &pool, pkts, 1);
        assert_eq!(outs[0].len(), 3);
        for p in &outs[0] {
            assert_eq!(p.data()[1], 0xab);
            assert_eq!(checksum(&p.data()[..20]), 0);
        }
        assert_eq!(read(e.as_ref(), "drops"), "1");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[0x45, 0])], 1);
        assert!(outs[0].is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "2");

        let mut e = configure(&["FORCE"], MarkIPCE::configure, "true", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![with_ecn(&pool, 0)], 1);
        assert_eq!(outs[0][0].data()[1], 0xab);
        assert_eq!(checksum(&outs[0][0].data()[..20]), 0);
    }
}
