//! `ICMPPingResponder`: turns ICMP echo requests into echo replies.

use pronto_packet::wire::icmp::{icmp_type, IcmpPacket};
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::{update_checksum16, IP_PROTO_ICMP};
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_DST_IP,
    FIELD_OTHER, FIELD_PAYLOAD, FIELD_SRC_IP,
};

/// Answers ICMP echo requests in place; other packets go to output 1 (or
/// are dropped).
pub struct ICMPPingResponder {
    out1: bool,
}

impl ICMPPingResponder {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ICMPPingResponder")
        .ports("1/1-2")
        .processing("a/ah")
        .profile(
            ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "ICMPPingResponder()\n\n\
             Responds to ICMP echo requests. Packets must have their IP header annotation\n\
             set. Each echo request (IP protocol 1, ICMP type 8, at least 8 bytes of ICMP)\n\
             is turned into the reply and emitted on output 0: source and destination\n\
             addresses swapped, fragment field cleared, TTL set to 255, ICMP type and\n\
             code set to 0, with both checksums updated incrementally. The reply's\n\
             destination IP annotation is set to its new destination, its paint\n\
             annotation cleared and its timestamp set to the current time. Other packets\n\
             go to output 1 if it exists, else are dropped. Source-route options are\n\
             not honoured.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs.",
        );

    /// Configures an `ICMPPingResponder`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(ICMPPingResponder {
            out1: ctx.noutputs >= 2,
        }))
    }
}

/// Turns an echo request into a reply in place; false if it is not one.
#[inline]
fn respond(p: &mut Packet, now: i64) -> bool {
    let (Some(nh), Some(th)) = (p.network_header_offset(), p.transport_header_offset()) else {
        return false;
    };
    if nh < 0 || th < nh + 20 || th + 8 > p.len() as isize {
        return false;
    }
    let (nh, th) = (nh as usize, th as usize);
    let d = p.data_mut();
    if Ipv4Packet::new_unchecked(&d[nh..]).protocol() != IP_PROTO_ICMP
        || IcmpPacket::new_unchecked(&d[th..]).msg_type() != icmp_type::ECHO_REQUEST
    {
        return false;
    }
    let mut ip = Ipv4Packet::new_unchecked(&mut d[nh..]);
    // Swap the addresses (the header sum is unchanged).
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    ip.set_src_addr(dst);
    ip.set_dst_addr(src);
    // Clear the fragment field.
    let mut sum = update_checksum16(ip.checksum(), ip.frag_field(), 0);
    ip.set_frag_field(0);
    // TTL 255 (the word it shares with the protocol).
    let proto = ip.protocol() as u16;
    sum = update_checksum16(sum, ((ip.ttl() as u16) << 8) | proto, 0xff00 | proto);
    ip.set_ttl(255);
    ip.set_checksum(sum);
    let dst = ip.dst_addr();
    // Echo reply, code 0.
    let mut icmp = IcmpPacket::new_unchecked(&mut d[th..]);
    let old = ((icmp.msg_type() as u16) << 8) | icmp.code() as u16;
    icmp.set_type_code(icmp_type::ECHO_REPLY, 0);
    let c = update_checksum16(icmp.checksum(), old, 0);
    icmp.set_checksum(c);
    // All-zero ICMP data sums to 0xFFFF, which the incremental update
    // writes as 0x0000 (checked with the new checksum field in place).
    if c == 0 && d[th..].iter().all(|&b| b == 0) {
        IcmpPacket::new_unchecked(&mut d[th..]).set_checksum(0xffff);
    }
    p.set_dst_ip_anno(dst);
    p.set_timestamp_ns(now);
    p.set_paint_anno(0);
    true
}

impl Element for ICMPPingResponder {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        let out1 = self.out1;
        push_each(batch, out, |p, _| {
            if respond(p, now) {
                Some(0)
            } else {
                out1.then_some(1)
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push_at};
    use crate::Control;
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    fn echo(kind: u8) -> Vec<u8> {
        let mut d = vec![
            0x45, 0x00, 0x00, 0x24, // version/IHL, TOS, total length 36
            0x12, 0x34, 0x40, 0x00, // ID, DF
            0x40, 0x01, 0x00, 0x00, // TTL 64, ICMP, checksum (below)
            10, 0, 0, 2, // source
            10, 0, 0, 1, // destination
            kind, 0x00, 0x00, 0x00, // type, code, checksum (below)
            0xbe, 0xef, 0x00, 0x07, // identifier, sequence
            1, 2, 3, 4, 5, 6, 7, 8, // data
        ];
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        let c = checksum(&d[20..]);
        d[22..24].copy_from_slice(&c.to_be_bytes());
        d
    }

    #[test]
    fn replies() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&[], ICMPPingResponder::configure, "", 1, 2).expect("ok");
        let mut req = pkt(&pool, &echo(8));
        req.set_network_header(0, 20);
        req.set_paint_anno(7);
        let mut other = pkt(&pool, &echo(0));
        other.set_network_header(0, 20);
        let unmarked = pkt(&pool, &echo(8));
        let mut ctrl = Control::default();
        let outs = push_at(
            e.as_mut(),
            &pool,
            0,
            vec![req, other, unmarked],
            2,
            1_600_000_000_000_000_000,
            &mut ctrl,
        );
        assert_eq!(outs[1].len(), 2);
        let r = &outs[0][0];
        let d = r.data();
        assert_eq!(&d[12..20], &[10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!((d[6], d[7], d[8], d[20], d[21]), (0, 0, 255, 0, 0));
        assert_eq!(checksum(&d[..20]), 0);
        assert_eq!(checksum(&d[20..]), 0);
        assert_eq!(&d[24..], &echo(8)[24..]);
        assert_eq!(r.dst_ip_anno(), [10, 0, 0, 2]);
        assert_eq!(r.paint_anno(), 0);
        assert_eq!(r.timestamp_ns(), 1_600_000_000_000_000_000);
    }

    #[test]
    fn all_zero_reply_checksums_to_ffff() {
        // An echo with identifier, sequence and data all zero: its checksum
        // is ~0x0800 = 0xF7FF; the reply's data sums to zero, so its
        // checksum must be 0xFFFF, not 0x0000.
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(&[], ICMPPingResponder::configure, "", 1, 1).expect("ok");
        let mut d = echo(8);
        d.truncate(28);
        d[2..4].copy_from_slice(&[0, 28]);
        d[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d[22..28].copy_from_slice(&[0xf7, 0xff, 0, 0, 0, 0]);
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 20);
        let mut ctrl = Control::default();
        let outs = push_at(e.as_mut(), &pool, 0, vec![p], 1, 0, &mut ctrl);
        assert_eq!(&outs[0][0].data()[20..], &[0, 0, 0xff, 0xff, 0, 0, 0, 0]);
    }
}
