//! `IPOutputCombo`: the output path of an IP router in one element
//! (DropBroadcasts, PaintTee, IPGWOptions, FixIPSrc, DecIPTTL, a length
//! check).

use pronto_packet::wire::checksum;
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::{
    Batch, Packet, PacketType, FIX_IP_SRC_ANNO_OFFSET, ICMP_PARAMPROB_ANNO_OFFSET,
};

use super::ipgwoptions::gw_options;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, Spec,
    FIELD_OTHER, FIELD_SRC_IP,
};

/// An IP router's per-interface output processing.
pub struct IPOutputCombo {
    color: u8,
    my_ip: [u8; 4],
    mtu: usize,
    drops: u64,
    /// Link-level broadcasts and multicasts dropped (part of `drops`).
    broadcasts: u64,
}

impl IPOutputCombo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPOutputCombo")
        .ports("1/5")
        .processing("h/h")
        .keywords(&["COLOR", "IPADDR", "MTU"])
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER | FIELD_SRC_IP)
                .dropping(),
        )
        .doc(
            "IPOutputCombo(COLOR, IPADDR, MTU)\n\n\
             Does what DropBroadcasts -> PaintTee(COLOR) -> IPGWOptions(IPADDR) ->\n\
             FixIPSrc(IPADDR) -> DecIPTTL -> a check of the length against MTU do,\n\
             on packets with a marked IP header: link-level broadcasts and\n\
             multicasts are dropped; a copy of a packet painted COLOR goes to output\n\
             1; Record Route and Timestamp options are filled in, a bad option sends\n\
             the packet to output 2 with the parameter-problem annotation; a packet\n\
             with the fix-source annotation gets source IPADDR; an expiring TTL\n\
             sends it to output 3, otherwise the TTL is decremented; a packet longer\n\
             than MTU goes to output 4 (for IPFragmenter); the rest to output 0.\n\
             Packets without an IP header are dropped and counted.\n\n\
             Ports: 1 push input; 5 push outputs.\n\
             Handlers:\n  drops (read)  broadcasts and packets without an IP header",
        );

    /// Configures an `IPOutputCombo`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let color: u8 = a.read_mp("COLOR")?;
        let my_ip: Ip4 = a.read_mp("IPADDR")?;
        let mtu: u32 = a.read_mp("MTU")?;
        a.finish()?;
        Ok(Box::new(IPOutputCombo {
            color,
            my_ip: my_ip.0,
            mtu: mtu as usize,
            drops: 0,
            broadcasts: 0,
        }))
    }

    fn action(&mut self, mut p: Packet, now: i64, out: &mut Out<'_>) {
        let t = p.annotations().packet_type;
        if t == PacketType::Broadcast || t == PacketType::Multicast {
            self.drops += 1;
            self.broadcasts += 1;
            return;
        }
        let Some(nh) = super::ip_header_at(&p, 20) else {
            self.drops += 1;
            return;
        };
        if p.paint_anno() == self.color {
            if let Some(c) = out.pool.clone_packet(&p) {
                out.emit(1, c);
            }
        }
        if let Err(off) = gw_options(self.my_ip, &[self.my_ip], &mut p, now) {
            p.anno_bytes_mut()[ICMP_PARAMPROB_ANNO_OFFSET] = off as u8;
            out.emit(2, p);
            return;
        }
        if p.anno_bytes()[FIX_IP_SRC_ANNO_OFFSET] != 0 {
            p.anno_bytes_mut()[FIX_IP_SRC_ANNO_OFFSET] = 0;
            let hl = ((p.data()[nh] & 0xf) as usize * 4)
                .min(p.len() - nh)
                .max(20);
            // The header length is clamped as Click does, not checked: the
            // view is over the 20 bytes or more being summed.
            let mut ip = Ipv4Packet::new_unchecked(&mut p.data_mut()[nh..nh + hl]);
            ip.set_src_addr(self.my_ip);
            ip.set_checksum(0);
            let c = checksum(ip.as_bytes());
            ip.set_checksum(c);
        }
        let mut ip = Ipv4Packet::new_unchecked(&mut p.data_mut()[nh..]);
        if ip.ttl() <= 1 {
            out.emit(3, p);
            return;
        }
        ip.decrement_ttl();
        if p.len() > self.mtu {
            out.emit(4, p);
        } else {
            out.emit(0, p);
        }
    }
}

impl Element for IPOutputCombo {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        for p in batch.drain() {
            self.action(p, now, out);
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("broadcast", self.broadcasts);
        c.drop("malformed", self.drops - self.broadcasts);
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
    fn output_path() {
        let pool = Pool::new(32).expect("pool");
        let mut e = configure(
            &["COLOR", "IPADDR", "MTU"],
            IPOutputCombo::configure,
            "1, 10.0.0.1, 40",
            1,
            5,
        )
        .expect("ok");
        let mk = |ip: Vec<u8>| {
            let mut p = pkt(&pool, &ip);
            p.set_network_header(0, 20);
            p
        };
        let normal = mk(ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 4));
        let mut painted = mk(ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 4));
        painted.set_paint_anno(1);
        let mut ttl1 = ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 4);
        ttl1[8] = 1;
        let long = mk(ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 40));
        let mut fix = mk(ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 0));
        fix.anno_bytes_mut()[FIX_IP_SRC_ANNO_OFFSET] = 1;
        let mut bcast = mk(ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 0));
        bcast.annotations_mut().packet_type = PacketType::Broadcast;
        let outs = push(
            e.as_mut(),
            &pool,
            vec![
                normal,
                painted,
                mk(ttl1),
                long,
                fix,
                bcast,
                pkt(&pool, &[0x45]),
            ],
            5,
        );
        assert_eq!(
            outs.iter().map(Vec::len).collect::<Vec<_>>(),
            [3, 1, 0, 1, 1]
        );
        for p in &outs[0] {
            assert_eq!(p.data()[8], 63);
            assert_eq!(checksum(&p.data()[..20]), 0);
        }
        assert_eq!(&outs[0][2].data()[12..16], &[10, 0, 0, 1]);
        assert_eq!(outs[1][0].data()[8], 64);
        assert_eq!(outs[4][0].len(), 60);
        assert_eq!(read(e.as_ref(), "drops"), "2");
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("broadcast", 1), ("malformed", 1)]
        );
    }
}
