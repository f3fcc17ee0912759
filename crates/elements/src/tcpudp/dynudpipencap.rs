//! `DynamicUDPIPEncap`: wraps packets in UDP/IP headers whose ports
//! advance every INTERVAL packets.

use pronto_packet::wire::set_be16;
use pronto_packet::{Batch, Packet};

use super::l4sum::l4_checksum;
use super::{parse_port, write_ipv4};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out,
    Spec, FIELDS_5TUPLE, FIELD_OTHER,
};

/// UDPIPEncap with ports that move on.
pub struct DynamicUDPIPEncap {
    saddr: [u8; 4],
    daddr: [u8; 4],
    sport: u16,
    dport: u16,
    cksum: bool,
    interval: u32,
    count: u32,
    id: u16,
    drops: u64,
}

impl DynamicUDPIPEncap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DynamicUDPIPEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["SRC", "SPORT", "DST", "DPORT", "CHECKSUM", "INTERVAL"])
        .profile(
            ActionProfile::NONE
                .writes(FIELDS_5TUPLE | FIELD_OTHER)
                .reshaping()
                .dropping(),
        )
        .doc(
            "DynamicUDPIPEncap(SRC, SPORT, DST, DPORT [, CHECKSUM, INTERVAL])\n\n\
             As UDPIPEncap: prepends a UDP header (SPORT -> DPORT, numbers or\n\
             service names) and a 20-byte IP header (SRC -> DST, TTL 250, IDs\n\
             counting from 0), the UDP checksum computed unless CHECKSUM is false,\n\
             and sets the destination annotation. Every INTERVAL packets (default\n\
             0: never) both ports go up by one. Packets that cannot grow are dropped\n\
             and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures a `DynamicUDPIPEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let saddr: Ip4 = a.read_mp("SRC")?;
        let sport: String = a.read_mp("SPORT")?;
        let daddr: Ip4 = a.read_mp("DST")?;
        let dport: String = a.read_mp("DPORT")?;
        let cksum = a.read_p("CHECKSUM")?.unwrap_or(true);
        let interval: u32 = a.read_p("INTERVAL")?.unwrap_or(0);
        a.finish()?;
        Ok(Box::new(DynamicUDPIPEncap {
            saddr: saddr.0,
            daddr: daddr.0,
            sport: parse_port("SPORT", &sport)?,
            dport: parse_port("DPORT", &dport)?,
            cksum,
            interval,
            count: 0,
            id: 0,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        if p.len() + 28 > 0xffff || p.push(28).is_none() {
            self.drops += 1;
            return None;
        }
        let len = p.len();
        let d = p.data_mut();
        write_ipv4(d, len, self.id, 0, 250, 17, self.saddr, self.daddr);
        self.id = self.id.wrapping_add(1);
        set_be16(d, 20, self.sport);
        set_be16(d, 22, self.dport);
        set_be16(d, 24, (len - 20) as u16);
        set_be16(d, 26, 0);
        if self.cksum {
            let (ip, udp) = d.split_at_mut(20);
            let c = l4_checksum(ip, udp);
            set_be16(udp, 6, c);
        }
        p.set_network_header(0, 20);
        p.set_transport_header(20);
        p.set_dst_ip_anno(self.daddr);
        self.count += 1;
        if self.interval > 0 && self.count == self.interval {
            self.sport = self.sport.wrapping_add(1);
            self.dport = self.dport.wrapping_add(1);
            self.count = 0;
        }
        Some(0)
    }
}

impl Element for DynamicUDPIPEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
        c.count("count", u64::from(self.count));
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
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
    use pronto_packet::Pool;

    #[test]
    fn ports_advance() {
        let pool = Pool::new(16).expect("pool");
        let kw = &["SRC", "SPORT", "DST", "DPORT", "CHECKSUM", "INTERVAL"];
        let mut e = configure(
            kw,
            DynamicUDPIPEncap::configure,
            "1.0.0.1, 1234, 2.0.0.2, dns, true, 2",
            1,
            1,
        )
        .expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            (0..5).map(|_| pkt(&pool, &[0xab; 3])).collect(),
            1,
        );
        let ports: Vec<(u16, u16, u16)> = outs[0]
            .iter()
            .map(|p| {
                let d = p.data();
                (
                    u16::from_be_bytes([d[4], d[5]]),
                    u16::from_be_bytes([d[20], d[21]]),
                    u16::from_be_bytes([d[22], d[23]]),
                )
            })
            .collect();
        assert_eq!(
            ports,
            [
                (0, 1234, 53),
                (1, 1234, 53),
                (2, 1235, 54),
                (3, 1235, 54),
                (4, 1236, 55)
            ]
        );
        let d = outs[0][0].data();
        assert_eq!(d.len(), 31);
        assert_eq!(checksum(&d[..20]), 0);
        let ps = pseudo_header_sum(&d[12..16], &d[16..20], 17, 11);
        assert_eq!(fold(ones_sum(&d[20..], ps)), 0xffff);
        assert_eq!(outs[0][0].dst_ip_anno(), [2, 0, 0, 2]);
    }
}
