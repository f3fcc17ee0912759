//! `IPMirror`: swaps the source and destination of IP packets.

use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::tcp::TcpPacket;
use pronto_packet::wire::udp::UdpPacket;
use pronto_packet::wire::{IP_PROTO_TCP, IP_PROTO_UDP};
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_DST_IP,
    FIELD_DST_PORT, FIELD_OTHER, FIELD_SRC_IP, FIELD_SRC_PORT,
};

/// Swaps IP addresses, and TCP/UDP ports (and TCP sequence and
/// acknowledgement numbers) of first fragments.
pub struct IPMirror {
    dst_anno: bool,
}

impl IPMirror {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPMirror")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["DST_ANNO"])
        .profile(
            ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP | FIELD_SRC_PORT | FIELD_DST_PORT)
                .writes(
                    FIELD_SRC_IP | FIELD_DST_IP | FIELD_SRC_PORT | FIELD_DST_PORT | FIELD_OTHER,
                ),
        )
        .doc(
            "IPMirror([DST_ANNO])\n\n\
             Swaps the source and destination addresses of IP packets (network header\n\
             annotation set). For TCP and UDP packets that are first fragments and hold\n\
             at least 8 transport bytes, also swaps the ports; for TCP (with at least 12\n\
             transport bytes) also swaps the sequence and acknowledgement numbers.\n\
             Checksums are left as they are: the swaps do not change them. Unless\n\
             DST_ANNO is false (default true), sets the destination address annotation\n\
             to the new destination. Packets without a network header pass unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures an `IPMirror`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let dst_anno = a.read_p("DST_ANNO")?.unwrap_or(true);
        a.finish()?;
        Ok(Box::new(IPMirror { dst_anno }))
    }

    #[inline]
    fn action(&self, p: &mut Packet) {
        let Some(nh) = p.network_header_offset() else {
            return;
        };
        let Ok(nh) = usize::try_from(nh) else {
            return;
        };
        let th = match p.transport_header_offset() {
            Some(t) => t,
            None => {
                let hl = p.data().get(nh).map_or(0, |b| ((b & 0x0f) as usize) << 2);
                (nh + hl) as isize
            }
        };
        let len = p.len();
        let d = p.data_mut();
        if nh + 20 > len {
            return;
        }
        let mut ip = Ipv4Packet::new_unchecked(&mut d[nh..]);
        let (src, dst) = (ip.src_addr(), ip.dst_addr());
        ip.set_src_addr(dst);
        ip.set_dst_addr(src);
        let proto = ip.protocol();
        let first = !ip.is_later_fragment();
        if (proto == IP_PROTO_TCP || proto == IP_PROTO_UDP)
            && first
            && th >= 0
            && len as isize >= th + 8
        {
            let th = th as usize;
            // TCP and UDP ports sit at the same offsets.
            let mut u = UdpPacket::new_unchecked(&mut d[th..]);
            let (sp, dp) = (u.src_port(), u.dst_port());
            u.set_src_port(dp);
            u.set_dst_port(sp);
            if proto == IP_PROTO_TCP && th + 12 <= len {
                // Sequence and acknowledgement numbers (bytes 4..12 only).
                let mut t = TcpPacket::new_unchecked(&mut d[th..]);
                let (seq, ack) = (t.seq(), t.ack());
                t.set_seq(ack);
                t.set_ack(seq);
            }
        }
        if self.dst_anno {
            p.set_dst_ip_anno(src);
        }
    }
}

impl Element for IPMirror {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| {
            self.action(p);
            Some(0)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, configure, pkt, push};
    use pronto_packet::Pool;

    fn mirror(config: &str, data: &[u8]) -> (Vec<u8>, [u8; 4]) {
        let pool = Pool::new(64).expect("pool");
        let mut e =
            configure(IPMirror::SPEC.keywords, IPMirror::configure, config, 1, 1).expect("ok");
        let mut p = pkt(&pool, data);
        p.set_network_header(0, 20);
        p.set_dst_ip_anno([9, 9, 9, 9]);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        (bytes(&outs[0])[0].clone(), outs[0][0].dst_ip_anno())
    }

    const TCP: [u8; 40] = [
        0x45, 0, 0, 40, 0, 1, 0x40, 0, // IHL 5, length 40, ID 1, DF
        64, 6, 0xab, 0xcd, // TTL 64, TCP, checksum (kept as is)
        10, 0, 0, 1, 10, 0, 0, 2, // 10.0.0.1 -> 10.0.0.2
        0x04, 0xd2, 0x00, 0x50, // ports 1234 -> 80
        0, 0, 0, 1, 0, 0, 0, 2, // seq 1, ack 2
        0x50, 0x10, 0x20, 0x00, 0x12, 0x34, 0, 0, // offset, ACK, window, checksum, urgent
    ];

    #[test]
    fn swaps_tcp_addresses_ports_and_sequence_numbers() {
        let (got, anno) = mirror("", &TCP);
        let mut want = TCP;
        want[12..20].copy_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1]);
        want[20..24].copy_from_slice(&[0x00, 0x50, 0x04, 0xd2]);
        want[24..32].copy_from_slice(&[0, 0, 0, 2, 0, 0, 0, 1]);
        assert_eq!(got, want.to_vec());
        assert_eq!(anno, [10, 0, 0, 1]);
    }

    #[test]
    fn keeps_annotation_and_ports_of_later_fragments() {
        let mut frag = TCP;
        frag[6] = 0x00;
        frag[7] = 0x03; // fragment offset 24
        let (got, anno) = mirror("false", &frag);
        let mut want = frag;
        want[12..20].copy_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1]);
        assert_eq!(got, want.to_vec());
        assert_eq!(anno, [9, 9, 9, 9]);
    }

    #[test]
    fn udp_swaps_ports_only_with_eight_bytes() {
        let mut udp = TCP;
        udp[9] = 17;
        let (got, _) = mirror("DST_ANNO true", &udp[..28]);
        let mut want = udp;
        want[12..20].copy_from_slice(&[10, 0, 0, 2, 10, 0, 0, 1]);
        want[20..24].copy_from_slice(&[0x00, 0x50, 0x04, 0xd2]);
        assert_eq!(got, want[..28].to_vec());
        let (got, _) = mirror("", &udp[..27]);
        assert_eq!(&got[20..24], &udp[20..24]);
    }
}
