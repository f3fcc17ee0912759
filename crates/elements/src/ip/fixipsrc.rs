//! `FixIPSrc`: sets the IP source address of packets that ask for it.

use pronto_packet::wire::checksum;
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::{Batch, Packet, FIX_IP_SRC_ANNO_OFFSET};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Ip4, Out, Spec, FIELD_OTHER,
    FIELD_SRC_IP,
};

/// Rewrites the source address of packets whose fix-IP-source annotation
/// is set.
pub struct FixIPSrc {
    addr: [u8; 4],
}

impl FixIPSrc {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FixIPSrc")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["IPADDR"])
        .profile(ActionProfile::reads(FIELD_OTHER).writes(FIELD_SRC_IP | FIELD_OTHER))
        .doc(
            "FixIPSrc(IPADDR)\n\n\
             For IP packets whose fix-IP-source annotation is set (as ICMPError sets it),\n\
             sets the IP source address to IPADDR, recomputes the IP header checksum and\n\
             clears the annotation. Other packets (and packets without a network header\n\
             annotation) pass unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `FixIPSrc`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let addr: Ip4 = a.read_mp("IPADDR")?;
        a.finish()?;
        Ok(Box::new(FixIPSrc { addr: addr.0 }))
    }

    #[inline]
    fn action(&self, p: &mut Packet) {
        if p.anno_bytes()[FIX_IP_SRC_ANNO_OFFSET] == 0 {
            return;
        }
        let Some(ip) = p.network_data_mut() else {
            return;
        };
        if ip.len() < 20 {
            return;
        }
        let hlen = (((ip[0] & 0x0f) as usize) << 2).min(ip.len());
        // The header length is not checked here (Click sums what is
        // there): the view is over the header as far as it goes.
        let mut h = Ipv4Packet::new_unchecked(&mut ip[..hlen.max(20)]);
        h.set_src_addr(self.addr);
        h.set_checksum(0);
        let c = checksum(&h.as_bytes()[..hlen]);
        h.set_checksum(c);
        p.anno_bytes_mut()[FIX_IP_SRC_ANNO_OFFSET] = 0;
    }
}

impl Element for FixIPSrc {
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
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push};
    use pronto_packet::Pool;

    fn ip_packet() -> Vec<u8> {
        let mut d = vec![
            0x45, 0x00, 0x00, 0x1c, // version/IHL, TOS, total length 28
            0x00, 0x01, 0x00, 0x00, // ID 1, no fragment bits
            0xc8, 0x01, 0x00, 0x00, // TTL 200, ICMP, checksum (below)
            10, 0, 0, 1, // source
            10, 0, 0, 9, // destination
            3, 3, 0xfc, 0xfc, 0, 0, 0, 0, // ICMP port unreachable, checksum
        ];
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    #[test]
    fn fixes_only_annotated_packets() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            FixIPSrc::SPEC.keywords,
            FixIPSrc::configure,
            "192.168.1.1",
            1,
            1,
        )
        .expect("ok");
        let mut marked = pkt(&pool, &ip_packet());
        marked.set_network_header(0, 20);
        marked.anno_bytes_mut()[FIX_IP_SRC_ANNO_OFFSET] = 1;
        let mut plain = pkt(&pool, &ip_packet());
        plain.set_network_header(0, 20);
        let outs = push(e.as_mut(), &pool, vec![marked, plain], 1);
        let mut want = ip_packet();
        want[12..16].copy_from_slice(&[192, 168, 1, 1]);
        want[10] = 0;
        want[11] = 0;
        let c = checksum(&want[..20]);
        want[10..12].copy_from_slice(&c.to_be_bytes());
        // 0x4500+0x001c+0x0001+0xc801+0xc0a8+0x0101+0x0a00+0x0009 = 0xd8d1, complemented
        assert_eq!(&want[10..12], &[0x27, 0x2e]);
        assert_eq!(bytes(&outs[0]), vec![want, ip_packet()]);
        assert_eq!(outs[0][0].anno_bytes()[FIX_IP_SRC_ANNO_OFFSET], 0);
    }

    #[test]
    fn needs_an_address() {
        let r = configure(FixIPSrc::SPEC.keywords, FixIPSrc::configure, "", 1, 1);
        assert_eq!(config_err(r), "missing mandatory IPADDR argument");
    }
}
