//! `UDPIPEncap`: wraps packets in fixed UDP/IP headers.

use pronto_packet::wire::ipv4::{Ipv4Packet, IPV4_MIN_HEADER_LEN};
use pronto_packet::wire::udp::UdpPacket;
use pronto_packet::wire::IP_PROTO_UDP;
use pronto_packet::{Batch, Packet};

use crate::tcpudp::l4sum::l4_checksum;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out,
    Spec,
};

/// Prepends a UDP header and an IP header with fixed addresses and ports.
pub struct UDPIPEncap {
    saddr: [u8; 4],
    sport: u16,
    daddr: [u8; 4],
    dport: u16,
    use_dst_anno: bool,
    cksum: bool,
    id: u16,
    drops: u64,
}

fn parse_port(name: &str, s: &str) -> Result<u16, String> {
    let t = pronto_lang::args::unquote(s);
    match pronto_lang::args::parse_i64(&t) {
        Ok(v) if (0..=65535).contains(&v) => Ok(v as u16),
        // A name: PortInfo's, then the well-known services.
        _ => pronto_lang::names::value(pronto_lang::names::NameKind::UdpPort, &t)
            .map(|v| v as u16)
            .or_else(|| pronto_classify::names::port_by_name(&t))
            .ok_or_else(|| format!("{name}: expected port number, found `{s}`")),
    }
}

fn parse_dst(s: &str) -> Result<([u8; 4], bool), String> {
    let t = pronto_lang::args::unquote(s);
    if t == "DST_ANNO" {
        Ok(([0; 4], true))
    } else {
        pronto_lang::args::parse_ip4(&t)
            .map(|a| (a, false))
            .map_err(|_| "bad DST".to_string())
    }
}

impl UDPIPEncap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("UDPIPEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["SRC", "SPORT", "DST", "DPORT", "CHECKSUM"])
        .profile(ActionProfile::NONE.reshaping().dropping())
        .doc(
            "UDPIPEncap(SRC, SPORT, DST, DPORT [, CHECKSUM])\n\n\
             Prepends a UDP header (ports SPORT -> DPORT) and an IP header (SRC -> DST,\n\
             TTL 250, TOS 0, no fragment flags, IDs counting up from 0) to each packet,\n\
             and marks the IP header. The UDP checksum is computed when CHECKSUM is\n\
             true (the default); otherwise it is 0. DST may be DST_ANNO: the\n\
             destination comes from the packet's destination address annotation;\n\
             otherwise the annotation is set to DST.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers: src, sport, dst, dport (read/write).",
        );

    /// Configures a `UDPIPEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let saddr: Ip4 = a.read_mp("SRC")?;
        let sport: String = a.read_mp("SPORT")?;
        let dst: String = a.read_mp("DST")?;
        let dport: String = a.read_mp("DPORT")?;
        let cksum = a.read_p("CHECKSUM")?.unwrap_or(true);
        a.finish()?;
        let sport = parse_port("SPORT", &sport).map_err(ConfigError::new)?;
        let dport = parse_port("DPORT", &dport).map_err(ConfigError::new)?;
        let (daddr, use_dst_anno) = parse_dst(&dst).map_err(ConfigError::new)?;
        Ok(Box::new(UDPIPEncap {
            saddr: saddr.0,
            sport,
            daddr,
            dport,
            use_dst_anno,
            cksum,
            id: 0,
            drops: 0,
        }))
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let dst = if self.use_dst_anno {
            p.dst_ip_anno()
        } else {
            self.daddr
        };
        if p.push(28).is_none() {
            self.drops += 1;
            return None;
        }
        if !self.use_dst_anno {
            p.set_dst_ip_anno(self.daddr);
        }
        let len = p.len();
        let id = self.id;
        self.id = self.id.wrapping_add(1);
        let d = p.data_mut();
        let mut ip = Ipv4Packet::new_unchecked(&mut d[..IPV4_MIN_HEADER_LEN]);
        ip.set_version_and_header_len(IPV4_MIN_HEADER_LEN);
        ip.set_tos(0);
        ip.set_total_len(len as u16);
        ip.set_ident(id);
        ip.set_frag_field(0); // no fragment flags
        ip.set_ttl(250);
        ip.set_protocol(IP_PROTO_UDP);
        ip.set_src_addr(self.saddr);
        ip.set_dst_addr(dst);
        ip.fill_checksum();
        let (ip, udp) = d.split_at_mut(IPV4_MIN_HEADER_LEN);
        let mut u = UdpPacket::new_unchecked(&mut *udp);
        u.set_src_port(self.sport);
        u.set_dst_port(self.dport);
        u.set_len((len - IPV4_MIN_HEADER_LEN) as u16);
        u.set_checksum(0);
        if self.cksum {
            let c = l4_checksum(ip, udp);
            UdpPacket::new_unchecked(udp).set_checksum(c);
        }
        p.set_network_header(0, 20);
        Some(0)
    }
}

impl Element for UDPIPEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("src"),
            HandlerInfo::rw("sport"),
            HandlerInfo::rw("dst"),
            HandlerInfo::rw("dport"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "src" => Ok(Ip4(self.saddr).to_string()),
            "sport" => Ok(self.sport.to_string()),
            "dst" => Ok(Ip4(self.daddr).to_string()),
            "dport" => Ok(self.dport.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let v = value.trim();
        match name {
            "src" => self.saddr = crate::util::parse_value::<Ip4>("SRC", v)?.0,
            "sport" => self.sport = parse_port("SPORT", v).map_err(HandlerError::BadValue)?,
            "dst" => {
                (self.daddr, self.use_dst_anno) = parse_dst(v).map_err(HandlerError::BadValue)?;
            }
            "dport" => self.dport = parse_port("DPORT", v).map_err(HandlerError::BadValue)?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{config_error, configure, packet, run_packets};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    #[test]
    fn encapsulates() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            UDPIPEncap::configure,
            &UDPIPEncap::SPEC,
            "1.0.0.1, 1234, 2.0.0.2, 1234",
            1,
            1,
        )
        .expect("configures");
        let o = run_packets(
            e.as_mut(),
            0,
            vec![packet(&pool, b"hi", None), packet(&pool, b"hi", None)],
            1,
            &pool,
            0,
        );
        let want0: Vec<u8> = vec![
            0x45, 0x00, 0x00, 0x1e, 0x00, 0x00, 0x00, 0x00, // length 30, id 0
            0xfa, 0x11, 0xbd, 0xcc, // TTL 250, UDP, header checksum
            1, 0, 0, 1, 2, 0, 0, 2, // addresses
            0x04, 0xd2, 0x04, 0xd2, 0x00, 0x0a, 0x8a, 0xca, // ports, length 10, checksum
            b'h', b'i',
        ];
        assert_eq!(o[0][0].data(), &want0[..]);
        assert_eq!(o[0][1].data()[4..6], [0, 1]); // next id
        assert_eq!(o[0][0].dst_ip_anno(), [2, 0, 0, 2]);
        assert_eq!(o[0][0].network_header_offset(), Some(0));
        assert_eq!(o[0][0].transport_header_offset(), Some(20));
        assert_eq!(e.read_handler("sport").expect("h"), "1234");
        e.write_handler("dst", "DST_ANNO").expect("w");
        assert_eq!(e.read_handler("dst").expect("h"), "0.0.0.0");
    }

    #[test]
    fn dst_anno_and_no_checksum() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(
            UDPIPEncap::configure,
            &UDPIPEncap::SPEC,
            "1.0.0.1, 7, DST_ANNO, 9, false",
            1,
            1,
        )
        .expect("configures");
        let mut p = packet(&pool, &[], None);
        p.set_dst_ip_anno([3, 3, 3, 3]);
        let o = run_packets(e.as_mut(), 0, vec![p], 1, &pool, 0);
        let d = o[0][0].data();
        assert_eq!(&d[16..20], &[3, 3, 3, 3]);
        assert_eq!(&d[24..28], &[0, 8, 0, 0]);
        assert_eq!(checksum(&d[..20]), 0);
        let err = config_error(configure(
            UDPIPEncap::configure,
            &UDPIPEncap::SPEC,
            "1.0.0.1, 7, x, 9",
            1,
            1,
        ));
        assert_eq!(err.message, "bad DST");
    }
}
