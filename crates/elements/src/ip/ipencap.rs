//! `IPEncap`: prepends a fixed IP header.

use pronto_packet::wire::ipv4::{frag, Ipv4Packet, IPV4_MIN_HEADER_LEN};
use pronto_packet::wire::update_checksum16;
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, FromArg, HandlerError, HandlerInfo,
    Ip4, Out, Spec,
};

/// A protocol name PROTO accepts beyond the common table.
const ICMP6: (&str, u8) = ("icmp6", 58);

/// Encapsulates packets in a static IP header.
pub struct IPEncap {
    /// The header, checksum computed with length, ID (and, with
    /// DST_ANNO, destination) zero.
    iph: [u8; 20],
    use_dst_anno: bool,
    id: u16,
}

impl IPEncap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["TOS", "TTL", "DSCP", "ECT", "CE", "DF"])
        .profile(ActionProfile::NONE.reshaping())
        .doc(
            "IPEncap(PROTO, SRC, DST, KEYWORDS)\n\n\
             Encapsulates each packet in an IP header with protocol PROTO (a number or a\n\
             name such as tcp, udp, icmp, ipip, gre), source SRC and destination DST, and\n\
             sets the destination IP annotation to DST. If DST is `DST_ANNO`, the\n\
             destination is taken from the packet's destination IP annotation. The\n\
             header's length is the packet length, its ID counts up from 0, and its\n\
             checksum is set; the IP header annotation is set.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  TTL   byte; time to live (default 250)\n  \
             TOS   byte; type of service (exclusive with DSCP, ECT, CE)\n  \
             DSCP  0-62; DSCP value\n  ECT   boolean or 2; ECN capable transport (1 or 2)\n  \
             CE    boolean; congestion experienced\n  DF    boolean; set Don't Fragment\n\
             Handlers:\n  src (read/write)\n  dst (read/write)",
        );

    /// Configures an `IPEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let proto_s = a.read_mp::<String>("PROTO")?;
        let src = a.read_mp::<Ip4>("SRC")?;
        let dst_s = a.read_mp::<String>("DST")?;
        let tos = a.read::<i32>("TOS")?;
        let ttl = a.read_or("TTL", 250u8)?;
        let dscp = a.read::<i32>("DSCP")?;
        let ect_s = a.read::<String>("ECT")?;
        let ce = a.read_or("CE", false)?;
        let df = a.read_or("DF", false)?;
        a.finish()?;
        let named = pronto_classify::names::ip_proto_by_name(&proto_s)
            .or_else(|| (proto_s == ICMP6.0).then_some(ICMP6.1));
        let proto = match named {
            Some(v) => v as i64,
            None => pronto_lang::args::parse_i64(&proto_s).map_err(|_| {
                ConfigError::new(format!("PROTO: expected IP protocol, found `{proto_s}`"))
            })?,
        };
        if !(0..=255).contains(&proto) {
            return Err(ConfigError::new("bad IP protocol"));
        }
        let use_dst_anno = dst_s == "DST_ANNO";
        let dst = if use_dst_anno {
            [0; 4]
        } else {
            Ip4::from_arg(&dst_s)
                .map_err(|_| ConfigError::new("DST argument should be IP address or 'DST_ANNO'"))?
                .0
        };
        let ect = match ect_s.as_deref() {
            None => 0,
            Some(s) => match bool::from_arg(s) {
                Ok(b) => b as u8,
                Err(_) if s == "2" => 2,
                Err(_) => return Err(ConfigError::new(format!("bad ECT value '{s}'"))),
            },
        };
        if tos.is_some() && dscp.is_some() {
            return Err(ConfigError::new("cannot set both TOS and DSCP"));
        }
        if tos.is_some() && (ect != 0 || ce) {
            return Err(ConfigError::new("cannot set both TOS and ECN bits"));
        }
        if tos.is_some_and(|t| !(0..256).contains(&t)) {
            return Err(ConfigError::new("TOS too large; max 255"));
        }
        if dscp.is_some_and(|d| !(0..63).contains(&d)) {
            return Err(ConfigError::new("DSCP too large; max 63"));
        }
        if ect != 0 && ce {
            return Err(ConfigError::new("can set at most one ECN option"));
        }
        let mut tos_b = match (tos, dscp) {
            (Some(t), _) => t as u8,
            (None, Some(d)) => (d as u8) << 2,
            _ => 0,
        };
        tos_b |= match ect {
            1 => 1,
            2 => 2,
            _ => 0,
        };
        if ce {
            tos_b |= 3;
        }
        let mut iph = [0u8; 20];
        let mut h = Ipv4Packet::new_unchecked(&mut iph[..]);
        h.set_version_and_header_len(IPV4_MIN_HEADER_LEN);
        h.set_tos(tos_b);
        if df {
            h.set_frag_field(frag::DF);
        }
        h.set_ttl(ttl);
        h.set_protocol(proto as u8);
        h.set_src_addr(src.0);
        h.set_dst_addr(dst);
        h.fill_checksum();
        Ok(Box::new(IPEncap {
            iph,
            use_dst_anno,
            id: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let anno = p.dst_ip_anno();
        let len = (p.len() + 20) as u16;
        let id = self.id;
        let h = p.push(20)?;
        h.copy_from_slice(&self.iph);
        let mut h = Ipv4Packet::new_unchecked(h);
        let mut sum = h.checksum();
        if self.use_dst_anno {
            h.set_dst_addr(anno);
            sum = update_checksum16(sum, 0, u16::from_be_bytes([anno[0], anno[1]]));
            sum = update_checksum16(sum, 0, u16::from_be_bytes([anno[2], anno[3]]));
        }
        h.set_total_len(len);
        h.set_ident(id);
        sum = update_checksum16(sum, 0, len);
        sum = update_checksum16(sum, 0, id);
        h.set_checksum(sum);
        let dst = h.dst_addr();
        self.id = id.wrapping_add(1);
        if !self.use_dst_anno {
            p.set_dst_ip_anno(dst);
        }
        p.set_network_header(0, 20);
        Some(0)
    }
}

impl Element for IPEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("src"), HandlerInfo::rw("dst")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let a = |o: usize| {
            Ip4([
                self.iph[o],
                self.iph[o + 1],
                self.iph[o + 2],
                self.iph[o + 3],
            ])
            .to_string()
        };
        match name {
            "src" => Ok(a(12)),
            "dst" if self.use_dst_anno => Ok("DST_ANNO".into()),
            "dst" => Ok(a(16)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let (off, v) = match name {
            "src" => (12, crate::util::parse_value::<Ip4>("SRC", value)?.0),
            "dst" if value.trim() == "DST_ANNO" => {
                self.use_dst_anno = true;
                (16, [0; 4])
            }
            "dst" => {
                let v = Ip4::from_arg(value.trim()).map_err(|_| {
                    HandlerError::BadValue("DST argument should be IP address or 'DST_ANNO'".into())
                })?;
                self.use_dst_anno = false;
                (16, v.0)
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        };
        self.iph[off..off + 4].copy_from_slice(&v);
        Ipv4Packet::new_unchecked(&mut self.iph[..]).fill_checksum();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    const KW: &[&str] = IPEncap::SPEC.keywords;

    #[test]
    fn encapsulates() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            KW,
            IPEncap::configure,
            "ipip, 18.26.4.24, 140.247.60.147, TTL 64, DF true",
            1,
            1,
        )
        .expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![pkt(&pool, &[0xaa; 4]), pkt(&pool, &[0xbb; 2])],
            1,
        );
        let d = outs[0][0].data();
        assert_eq!(
            &d[..20],
            &[
                0x45, 0x00, 0x00, 0x18, // version/IHL, TOS, length 24
                0x00, 0x00, 0x40, 0x00, // ID 0, DF
                0x40, 0x04, d[10], d[11], // TTL 64, IP-in-IP, checksum
                18, 26, 4, 24, 140, 247, 60, 147,
            ]
        );
        assert_eq!(checksum(&d[..20]), 0);
        assert_eq!(&outs[0][1].data()[4..6], &[0, 1]);
        assert_eq!(checksum(&outs[0][1].data()[..20]), 0);
        assert_eq!(outs[0][0].dst_ip_anno(), [140, 247, 60, 147]);
        assert_eq!(outs[0][0].network_header_offset(), Some(0));
        let mut e = configure(KW, IPEncap::configure, "17, 1.1.1.1, DST_ANNO", 1, 1).expect("ok");
        let mut p = pkt(&pool, &[1]);
        p.set_dst_ip_anno([9, 9, 9, 9]);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(&outs[0][0].data()[16..20], &[9, 9, 9, 9]);
        assert_eq!(checksum(&outs[0][0].data()[..20]), 0);
        assert_eq!(read(e.as_ref(), "dst"), "DST_ANNO");
        e.write_handler("src", "2.2.2.2").expect("writes");
        assert_eq!(read(e.as_ref(), "src"), "2.2.2.2");
    }

    #[test]
    fn errors() {
        assert_eq!(
            config_err(configure(
                KW,
                IPEncap::configure,
                "300, 1.1.1.1, 2.2.2.2",
                1,
                1
            )),
            "bad IP protocol"
        );
        assert_eq!(
            config_err(configure(
                KW,
                IPEncap::configure,
                "4, 1.1.1.1, 2.2.2.2, TOS 1, DSCP 2",
                1,
                1
            )),
            "cannot set both TOS and DSCP"
        );
        assert_eq!(
            config_err(configure(KW, IPEncap::configure, "4, 1.1.1.1, foo", 1, 1)),
            "DST argument should be IP address or 'DST_ANNO'"
        );
    }
}
