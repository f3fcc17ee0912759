//! `EraseIPPayload`: zeroes TCP and UDP payloads.

use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_PAYLOAD,
};

/// Erases payload bytes, keeping lengths.
pub struct EraseIPPayload {
    drops: u64,
}

impl EraseIPPayload {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("EraseIPPayload")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE.writes(FIELD_PAYLOAD).dropping())
        .doc(
            "EraseIPPayload()\n\n\
             Sets every byte after the TCP or UDP header to zero, and the TCP or UDP\n\
             checksum to 0 (marked IP header needed); lengths stay. ICMP packets pass\n\
             unchanged; packets of other protocols, or without an IP header, are\n\
             dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures an `EraseIPPayload`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(EraseIPPayload { drops: 0 }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let Some(nh) = crate::ip::ip_header_at(p, 20) else {
            self.drops += 1;
            return None;
        };
        let th = p
            .transport_header_offset()
            .filter(|&o| o >= 0)
            .map_or(nh + (p.data()[nh] & 0xf) as usize * 4, |o| o as usize);
        let d = p.data_mut();
        let len = d.len();
        match d[nh + 9] {
            6 => {
                let off = th + d.get(th + 12).map_or(0, |b| (b >> 4) as usize * 4);
                if off < len {
                    d[off..].fill(0);
                }
                if th + 18 <= len {
                    d[th + 16..th + 18].fill(0);
                }
            }
            17 => {
                if th + 8 < len {
                    d[th + 8..].fill(0);
                }
                if th + 8 <= len {
                    d[th + 6..th + 8].fill(0);
                }
            }
            1 => {}
            _ => {
                self.drops += 1;
                return None;
            }
        }
        Some(0)
    }
}

impl Element for EraseIPPayload {
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
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn erases() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(&[], EraseIPPayload::configure, "", 1, 1).expect("ok");
        let mut udp = ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 12);
        udp[20..32].copy_from_slice(&[0, 1, 0, 2, 0, 12, 0xab, 0xcd, 9, 9, 9, 9]);
        let mut tcp = ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 24);
        tcp[9] = 6;
        tcp[32] = 0x50;
        tcp[36..38].copy_from_slice(&[0x12, 0x34]);
        tcp[40..44].copy_from_slice(&[7; 4]);
        let mut gre = ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 4);
        gre[9] = 47;
        let mk = |d: &[u8]| {
            let mut p = pkt(&pool, d);
            p.set_network_header(0, 20);
            p
        };
        let outs = push(e.as_mut(), &pool, vec![mk(&udp), mk(&tcp), mk(&gre)], 1);
        assert_eq!(
            &outs[0][0].data()[20..],
            &[0, 1, 0, 2, 0, 12, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(&outs[0][1].data()[36..], &[0; 8]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }
}
