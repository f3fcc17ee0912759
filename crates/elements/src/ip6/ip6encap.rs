//! `IP6Encap`: encapsulates packets in a static IPv6 header.

use pronto_packet::wire::ipv6::{Ipv6Header, IP6_HEADER_LEN};
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, FromArg, HandlerError, HandlerInfo,
    Ip6, Out, Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_SRC_IP,
};

/// Encapsulates packets in a fixed IPv6 header.
pub struct IP6Encap {
    /// The header, payload length left 0.
    header: [u8; IP6_HEADER_LEN],
    use_dst_anno: bool,
    drops: u64,
}

/// Parses DST: an IPv6 address or `DST_ANNO`.
fn parse_dst(s: &str) -> Result<Option<[u8; 16]>, String> {
    if s == "DST_ANNO" {
        return Ok(None);
    }
    Ip6::from_arg(s)
        .map(|a| Some(a.0))
        .map_err(|_| "DST argument should be IP address or 'DST_ANNO'".to_string())
}

impl IP6Encap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IP6Encap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["PROTO", "SRC", "DST", "HLIM", "CLASS"])
        .profile(
            ActionProfile::reads(FIELD_DST_IP)
                .writes(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "IP6Encap(PROTO, SRC, DST, [keywords HLIM, CLASS])\n\n\
             Puts a 40-byte IPv6 header in front of each packet: version 6, traffic\n\
             class CLASS, flow label 0, payload length the packet's length, next header\n\
             PROTO (a number or a name such as `tcp`, `udp`, `ipip`, `icmp6`), hop limit\n\
             HLIM, source SRC, destination DST. Marks the new header as the network\n\
             header and sets the destination IPv6 annotation to DST. With DST\n\
             `DST_ANNO` the destination is the packet's destination annotation (left\n\
             `::` when the annotation is `::`). A packet that cannot grow by 40 bytes\n\
             is dropped.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  HLIM   hop limit (default 250)\n  CLASS  traffic class (default 0)\n\
             Handlers:\n  src (read/write)\n  dst (read/write)  an address or DST_ANNO\n  \
             drops (read)      packets that could not grow",
        );

    /// Configures an `IP6Encap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let proto_s = a.read_mp::<String>("PROTO")?;
        let src = a.read_mp::<Ip6>("SRC")?;
        let dst_s = a.read_mp::<String>("DST")?;
        let hlim = a.read_or("HLIM", 250u8)?;
        let class = a.read_or("CLASS", 0u8)?;
        a.finish()?;
        let proto = match pronto_classify::names::ip_proto_by_name(&proto_s) {
            Some(v) => v as i64,
            None if proto_s == "icmp6" => 58,
            None => pronto_lang::args::parse_i64(&proto_s).map_err(|_| {
                ConfigError::new(format!("PROTO: expected IP protocol, found `{proto_s}`"))
            })?,
        };
        if !(0..=255).contains(&proto) {
            return Err(ConfigError::new("bad IP protocol"));
        }
        let dst = parse_dst(&dst_s).map_err(ConfigError::new)?;
        let mut header = [0u8; IP6_HEADER_LEN];
        let mut h = Ipv6Header::new_unchecked(&mut header[..]);
        h.set_vtcfl(class, 0);
        h.set_next_header(proto as u8);
        h.set_hop_limit(hlim);
        h.set_src_addr(src.0);
        h.set_dst_addr(dst.unwrap_or([0; 16]));
        Ok(Box::new(IP6Encap {
            header,
            use_dst_anno: dst.is_none(),
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let plen = p.len();
        let anno = p.dst_ip6_anno();
        let Some(room) = p.push(IP6_HEADER_LEN) else {
            self.drops += 1;
            return None;
        };
        room.copy_from_slice(&self.header);
        let mut h = Ipv6Header::new_unchecked(room);
        h.set_payload_len(plen as u16);
        if self.use_dst_anno && anno != [0; 16] {
            h.set_dst_addr(anno);
        } else {
            let dst = h.dst_addr();
            p.set_dst_ip6_anno(dst);
        }
        p.set_network_header(0, IP6_HEADER_LEN);
        Some(0)
    }
}

impl Element for IP6Encap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("src"),
            HandlerInfo::rw("dst"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let h = Ipv6Header::new_unchecked(&self.header[..]);
        match name {
            "src" => Ok(Ip6(h.src_addr()).to_string()),
            "dst" if self.use_dst_anno => Ok("DST_ANNO".into()),
            "dst" => Ok(Ip6(h.dst_addr()).to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let v = pronto_lang::args::unquote(value.trim());
        let mut h = Ipv6Header::new_unchecked(&mut self.header[..]);
        match name {
            "src" => {
                let a: Ip6 = crate::util::parse_value(name, &v)?;
                h.set_src_addr(a.0);
            }
            "dst" => {
                let d = parse_dst(&v).map_err(HandlerError::BadValue)?;
                h.set_dst_addr(d.unwrap_or([0; 16]));
                self.use_dst_anno = d.is_none();
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    const KW: &[&str] = IP6Encap::SPEC.keywords;

    fn a6(s: &str) -> [u8; 16] {
        pronto_lang::args::parse_ip6(s).expect("address")
    }

    #[test]
    fn encapsulates() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            KW,
            IP6Encap::configure,
            "ipip, 2000:10:1::2, 2000:20:1::2, HLIM 20, CLASS 0xb8",
            1,
            1,
        )
        .expect("configures");
        let inner = [0x45u8, 0, 0, 24, 1, 2, 3, 4];
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &inner)], 1);
        let mut want = vec![0x6b, 0x80, 0, 0, 0, 8, 4, 20];
        want.extend_from_slice(&a6("2000:10:1::2"));
        want.extend_from_slice(&a6("2000:20:1::2"));
        want.extend_from_slice(&inner);
        assert_eq!(bytes(&outs[0]), vec![want]);
        assert_eq!(outs[0][0].dst_ip6_anno(), a6("2000:20:1::2"));
        assert_eq!(outs[0][0].network_header_offset(), Some(0));
        assert_eq!(outs[0][0].transport_header_offset(), Some(40));
        assert_eq!(read(e.as_ref(), "src"), "2000:10:1::2");
        assert_eq!(read(e.as_ref(), "dst"), "2000:20:1::2");
    }

    #[test]
    fn destination_annotation() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(KW, IP6Encap::configure, "udp, 2001:db8::1, DST_ANNO", 1, 1)
            .expect("configures");
        let mut with = pkt(&pool, &[1, 2]);
        with.set_dst_ip6_anno(a6("2001:db8::99"));
        let outs = push(e.as_mut(), &pool, vec![with, pkt(&pool, &[3])], 1);
        let d = bytes(&outs[0]);
        assert_eq!(&d[0][..8], &[0x60, 0, 0, 0, 0, 2, 17, 250]);
        assert_eq!(&d[0][24..40], &a6("2001:db8::99"));
        assert_eq!(&d[1][24..40], &[0; 16]);
        assert_eq!(outs[0][1].dst_ip6_anno(), [0; 16]);
        assert_eq!(read(e.as_ref(), "dst"), "DST_ANNO");
        e.write_handler("dst", "2001:db8::5").expect("writes");
        assert_eq!(read(e.as_ref(), "dst"), "2001:db8::5");
        e.write_handler("src", "fe80::1").expect("writes");
        assert_eq!(read(e.as_ref(), "src"), "fe80::1");
        assert!(e.write_handler("dst", "1.2.3.4").is_err());
    }

    #[test]
    fn refuses_bad_arguments() {
        let err = |c: &str| config_err(configure(KW, IP6Encap::configure, c, 1, 1));
        assert!(err("300, ::1, ::2").contains("bad IP protocol"));
        assert!(err("tcp, ::1, 1.2.3.4").contains("DST argument"));
        assert!(err("tcp, 1.2.3.4, ::2").contains("SRC"));
        assert!(err("tcp, ::1, ::2, HLIM 256").contains("HLIM"));
    }
}
