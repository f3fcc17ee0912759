//! `SetIPChecksum`: recomputes the IP header checksum.

use pronto_packet::wire::checksum;
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Sets the IP header checksum; drops packets without a sane header.
pub struct SetIPChecksum {
    drops: u64,
}

impl SetIPChecksum {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetIPChecksum")
        .ports("1/1")
        .processing("a/a")
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "SetIPChecksum()\n\n\
             Computes the IP header checksum and stores it. The header is the one marked\n\
             by the IP header annotation, or the packet start if none is marked. Packets\n\
             shorter than 20 bytes from the header, or whose IHL is below 5 or beyond the\n\
             packet, are dropped (the first drop is reported on standard error).\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)  packets dropped",
        );

    /// Configures a `SetIPChecksum`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(SetIPChecksum { drops: 0 }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let nh = p.network_header_offset().unwrap_or(0);
        if nh >= 0 {
            let nh = nh as usize;
            let d = p.data_mut();
            let plen = d.len().saturating_sub(nh);
            if plen >= 20 {
                let hl = ((d[nh] & 15) as usize) << 2;
                if hl >= 20 && hl <= plen {
                    d[nh + 10] = 0;
                    d[nh + 11] = 0;
                    let c = checksum(&d[nh..nh + hl]);
                    d[nh + 10..nh + 12].copy_from_slice(&c.to_be_bytes());
                    return Some(0);
                }
            }
        }
        self.drops += 1;
        if self.drops == 1 {
            eprintln!("SetIPChecksum: bad input packet");
        }
        None
    }
}

impl Element for SetIPChecksum {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
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
    use crate::standard::test_support::{bytes, configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn sets_checksum() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&[], SetIPChecksum::configure, "", 1, 1).expect("ok");
        let good = ip_packet([1, 2, 3, 4], [5, 6, 7, 8], 3);
        let mut bad = good.clone();
        bad[10] = 0xde;
        bad[11] = 0xad;
        let mut shifted = vec![0xaa, 0xbb];
        shifted.extend(&bad);
        let mut p2 = pkt(&pool, &shifted);
        p2.set_network_header(2, 20);
        let outs = push(
            e.as_mut(),
            &pool,
            vec![pkt(&pool, &bad), p2, pkt(&pool, &bad[..19])],
            1,
        );
        let mut want2 = vec![0xaa, 0xbb];
        want2.extend(&good);
        assert_eq!(bytes(&outs[0]), vec![good.clone(), want2]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }
}
