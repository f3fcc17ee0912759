//! `SetTCPChecksum`: computes TCP checksums.

use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::tcp::TcpPacket;
use pronto_packet::{Batch, Packet};

use crate::tcpudp::l4sum::l4_checksum;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_OTHER,
    FIELD_PAYLOAD,
};

/// Sets the TCP checksum of TCP/IP packets from the IP length and the
/// pseudo-header; packets whose lengths do not fit are dropped.
pub struct SetTCPChecksum {
    fixoff: bool,
    drops: u64,
}

impl SetTCPChecksum {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetTCPChecksum")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["FIXOFF"])
        .profile(
            ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "SetTCPChecksum([FIXOFF])\n\n\
             Expects TCP/IP packets with the IP header annotation set. Computes the\n\
             TCP checksum over the IP length's transport bytes and stores it. Packets\n\
             with no transport header, under 20 transport bytes, or an IP length past\n\
             the end are dropped. With FIXOFF true, a TCP data offset under 5 is set to\n\
             5, and one past the segment (unfragmented packets) to the segment length.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers: none.",
        );

    /// Configures a `SetTCPChecksum`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let fixoff = a.read_p("FIXOFF")?.unwrap_or(false);
        a.finish()?;
        Ok(Box::new(SetTCPChecksum { fixoff, drops: 0 }))
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let r = self.set(p);
        if r.is_none() {
            self.drops += 1;
        }
        r
    }

    fn set(&self, p: &mut Packet) -> Option<usize> {
        let nh = p.network_header_offset().filter(|o| *o >= 0)? as usize;
        let th = p.transport_header_offset().filter(|o| *o >= 0)? as usize;
        let data = p.data_mut();
        if data.len() < nh + 20 || th > data.len() {
            return None;
        }
        let ip = Ipv4Packet::new_unchecked(&data[nh..]);
        let hl = ip.header_len();
        let plen = (ip.total_len() as usize).checked_sub(hl)?;
        let is_frag = ip.is_fragment();
        if hl < 20 || plen < 20 || plen > data.len() - th || nh + hl > th {
            return None;
        }
        let (head, tail) = data.split_at_mut(th);
        // plen >= 20 bytes of the segment are there.
        let mut tcp = TcpPacket::new_unchecked(&mut tail[..plen]);
        if self.fixoff {
            let off = tcp.header_len();
            if off < 20 {
                tcp.set_header_len(20);
            } else if off > plen && !is_frag {
                tcp.set_header_len(plen);
            }
        }
        tcp.set_checksum(0);
        let c = l4_checksum(&head[nh..nh + hl], &tail[..plen]);
        TcpPacket::new_unchecked(tail).set_checksum(c);
        Some(0)
    }
}

impl Element for SetTCPChecksum {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }
    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{configure, packet, run};
    use pronto_packet::Pool;

    /// A TCP SYN 192.168.0.2:40000 -> 1.2.3.4:80 with checksum 0x4ea1.
    const SYN: [u8; 40] = [
        0x45, 0x00, 0x00, 0x28, 0, 0, 0x40, 0x00, 0x40, 0x06, 0x76, 0x20, // IP header
        192, 168, 0, 2, 1, 2, 3, 4, // addresses
        0x9c, 0x40, 0x00, 0x50, // 40000 -> 80
        0, 0, 0, 1, 0, 0, 0, 0, // seq 1, ack 0
        0x50, 0x02, 0xff, 0xff, 0x4e, 0xa1, 0, 0, // offset 5, SYN, window, checksum
    ];

    #[test]
    fn header_length_under_20_is_dropped() {
        let pool = Pool::new(16).expect("pool");
        let mut e = SetTCPChecksum {
            fixoff: false,
            drops: 0,
        };
        let mut ihl1 = SYN;
        ihl1[0] = 0x41; // header length 4: transport header 4 bytes in
        let o = run(
            &mut e,
            0,
            vec![packet(&pool, &ihl1, Some((0, 4)))],
            1,
            &pool,
            0,
        );
        assert!(o[0].is_empty());
        assert_eq!(e.drops, 1);
    }

    #[test]
    fn sets_checksum_and_drops_bad_lengths() {
        let pool = Pool::new(16).expect("pool");
        let mut e = SetTCPChecksum {
            fixoff: false,
            drops: 0,
        };
        let mut zeroed = SYN;
        zeroed[36] = 0xaa;
        zeroed[37] = 0x55;
        let mut long = SYN;
        long[3] = 0x30; // IP length past the end
        let pkts = vec![
            packet(&pool, &zeroed, Some((0, 20))),
            packet(&pool, &long, Some((0, 20))),
            packet(&pool, &SYN, None),
        ];
        let o = run(&mut e, 0, pkts, 1, &pool, 0);
        assert_eq!(o[0], vec![SYN.to_vec()]);
        assert_eq!(e.drops, 2);
    }

    #[test]
    fn fixoff() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            SetTCPChecksum::configure,
            &SetTCPChecksum::SPEC,
            "true",
            1,
            1,
        )
        .expect("configures");
        let mut bad_off = SYN;
        bad_off[32] = 0x30;
        let o = run(
            e.as_mut(),
            0,
            vec![packet(&pool, &bad_off, Some((0, 20)))],
            1,
            &pool,
            0,
        );
        assert_eq!(o[0], vec![SYN.to_vec()]);
    }
}
