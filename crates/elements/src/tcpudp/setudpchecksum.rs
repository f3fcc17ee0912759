//! `SetUDPChecksum`: computes UDP checksums.

use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::udp::UdpPacket;
use pronto_packet::{Batch, Packet};

use crate::tcpudp::l4sum::l4_checksum;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_OTHER,
    FIELD_PAYLOAD,
};

/// Sets the UDP checksum of UDP/IP packets over the UDP length; fragments
/// and short packets go to output 1 (dropped if it is not connected).
pub struct SetUDPChecksum {
    has_out1: bool,
    warned: bool,
    drops: u64,
}

impl SetUDPChecksum {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetUDPChecksum")
        .ports("1/1-2")
        .processing("a/ah")
        .profile(
            ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "SetUDPChecksum()\n\n\
             Expects UDP/IP packets with the IP header annotation set (the protocol is\n\
             not checked). Computes the UDP checksum over the UDP length with the\n\
             pseudo-header and stores it. Fragments, packets with under 8 transport\n\
             bytes, and packets shorter than their UDP length go to output 1, or are\n\
             dropped with a warning (once) if output 1 is not connected.\n\n\
             Ports: 1 input (agnostic), 1 or 2 outputs (output 1 push).\n\
             Handlers: none.",
        );

    /// Configures a `SetUDPChecksum`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(SetUDPChecksum {
            has_out1: ctx.noutputs >= 2,
            warned: false,
            drops: 0,
        }))
    }

    fn set(p: &mut Packet) -> bool {
        let (Some(nh), Some(th)) = (p.network_header_offset(), p.transport_header_offset()) else {
            return false;
        };
        if nh < 0 || th < 0 {
            return false;
        }
        let (nh, th) = (nh as usize, th as usize);
        let data = p.data_mut();
        if data.len() < nh + 20 || th + 8 > data.len() {
            return false;
        }
        let ip = Ipv4Packet::new_unchecked(&data[nh..]);
        let hl = ip.header_len();
        if hl < 20 || ip.is_fragment() || nh + hl > th {
            return false;
        }
        let (head, tail) = data.split_at_mut(th);
        let len = UdpPacket::new_unchecked(&*tail).len() as usize;
        if tail.len() < len {
            return false;
        }
        UdpPacket::new_unchecked(&mut *tail).set_checksum(0);
        let c = l4_checksum(&head[nh..nh + hl], &tail[..len]);
        UdpPacket::new_unchecked(tail).set_checksum(c);
        true
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        if Self::set(p) {
            return Some(0);
        }
        self.drops += 1;
        if !self.has_out1 && !self.warned {
            eprintln!("SetUDPChecksum: fragment or short packet");
            self.warned = true;
        }
        self.has_out1.then_some(1)
    }
}

impl Element for SetUDPChecksum {
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

    /// UDP 192.168.1.2:5000 -> 8.8.8.8:53, payload 01 02 03 04, checksum 0x1659.
    const UDP: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x12, 0x34, 0x00, 0x00, 0x40, 0x11, 0x96, 0xdf, // IP header
        192, 168, 1, 2, 8, 8, 8, 8, // addresses
        0x13, 0x88, 0x00, 0x35, 0x00, 0x0c, 0x16, 0x59, // ports, length 12, checksum
        1, 2, 3, 4, // payload
    ];

    #[test]
    fn header_length_under_20_is_diverted() {
        let pool = Pool::new(16).expect("pool");
        let mut e = SetUDPChecksum {
            has_out1: true,
            warned: false,
            drops: 0,
        };
        // IHL 0: the "UDP header" is the IP header, whose ID (0x0010)
        // reads as a UDP length of 16.
        let mut ihl0 = UDP;
        ihl0[0] = 0x40;
        ihl0[4..6].copy_from_slice(&[0x00, 0x10]);
        let o = run(
            &mut e,
            0,
            vec![packet(&pool, &ihl0, Some((0, 0)))],
            2,
            &pool,
            0,
        );
        assert!(o[0].is_empty());
        assert_eq!(o[1], vec![ihl0.to_vec()]);
        assert_eq!(e.drops, 1);
    }

    #[test]
    fn sets_checksum_and_diverts_fragments() {
        let pool = Pool::new(16).expect("pool");
        let mut e = SetUDPChecksum {
            has_out1: true,
            warned: false,
            drops: 0,
        };
        configure(SetUDPChecksum::configure, &SetUDPChecksum::SPEC, "", 1, 2).expect("configures");
        let mut zero = UDP;
        zero[26] = 0;
        zero[27] = 0;
        let mut frag = UDP;
        frag[6] = 0x20; // more fragments
        let mut long = UDP;
        long[25] = 0x0d;
        let pkts = vec![
            packet(&pool, &zero, Some((0, 20))),
            packet(&pool, &frag, Some((0, 20))),
            packet(&pool, &long, Some((0, 20))),
        ];
        let o = run(&mut e, 0, pkts, 2, &pool, 0);
        assert_eq!(o[0], vec![UDP.to_vec()]);
        assert_eq!(o[1], vec![frag.to_vec(), long.to_vec()]);
        assert_eq!(e.drops, 2);
    }
}
