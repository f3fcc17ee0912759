//! `UDPIP6Encap`: wraps packets in fixed UDP/IPv6 headers.

use pronto_packet::wire::set_be16;
use pronto_packet::{Batch, Packet};

use super::parse_port;
use super::udpsource::udp6_checksum;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip6, Out,
    Spec,
};

/// UDP and IPv6 header lengths together.
const ENCAP: usize = 48;

/// Prepends a UDP header and an IPv6 header with fixed addresses and ports.
pub struct UDPIP6Encap {
    saddr: [u8; 16],
    sport: u16,
    daddr: [u8; 16],
    dport: u16,
    use_dst_anno: bool,
    drops: u64,
}

/// DST: an IPv6 address, or `DST_ANNO`.
fn parse_dst(s: &str) -> Result<([u8; 16], bool), String> {
    let t = pronto_lang::args::unquote(s);
    if t == "DST_ANNO" {
        Ok(([0; 16], true))
    } else {
        <Ip6 as crate::FromArg>::from_arg(&t)
            .map(|a| (a.0, false))
            .map_err(|_| "bad DST".to_string())
    }
}

impl UDPIP6Encap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("UDPIP6Encap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["SRC", "SPORT", "DST", "DPORT"])
        .profile(ActionProfile::NONE.reshaping().dropping())
        .doc(
            "UDPIP6Encap(SRC, SPORT, DST, DPORT)\n\n\
             Prepends a UDP header (ports SPORT -> DPORT, length the packet's\n\
             length plus 8) and an IPv6 header (SRC -> DST, traffic class and flow\n\
             label 0, next header UDP, hop limit 255) to each packet, computes the\n\
             UDP checksum over the IPv6 pseudo-header (always: it is mandatory in\n\
             IPv6), and marks the IPv6 header. DST may be DST_ANNO: the destination\n\
             comes from the packet's IPv6 destination annotation; otherwise the\n\
             annotation is set to DST. Strip(48) removes the encapsulation again.\n\n\
             Differences from Click: a checksum that sums to 0 is sent as FFFF, as\n\
             IPv6 requires (Click sends 0, which receivers drop). A packet without\n\
             48 bytes of headroom to spare, or longer than 65,487 bytes, is dropped\n\
             and counted in `drops' (pronto's; never with pronto's packets).\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Arguments:\n  \
             SRC    IPv6 source address\n  \
             SPORT  UDP source port (number or name)\n  \
             DST    IPv6 destination address, or DST_ANNO\n  \
             DPORT  UDP destination port (number or name)\n\
             Handlers:\n  \
             src, sport, dst, dport (read/write: the arguments; dst reads :: while\n  \
             it is DST_ANNO)\n  \
             drops (read)",
        );

    /// Configures a `UDPIP6Encap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let saddr: Ip6 = a.read_mp("SRC")?;
        let sport: String = a.read_mp("SPORT")?;
        let dst: String = a.read_mp("DST")?;
        let dport: String = a.read_mp("DPORT")?;
        a.finish()?;
        let sport = parse_port("SPORT", &sport)?;
        let dport = parse_port("DPORT", &dport)?;
        let (daddr, use_dst_anno) = parse_dst(&dst).map_err(ConfigError::new)?;
        Ok(Box::new(UDPIP6Encap {
            saddr: saddr.0,
            sport,
            daddr,
            dport,
            use_dst_anno,
            drops: 0,
        }))
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let dst = if self.use_dst_anno {
            p.dst_ip6_anno()
        } else {
            self.daddr
        };
        if p.len() + ENCAP - 40 > usize::from(u16::MAX) || p.push(ENCAP).is_none() {
            self.drops += 1;
            return None;
        }
        if !self.use_dst_anno {
            p.set_dst_ip6_anno(self.daddr);
        }
        let plen = (p.len() - 40) as u16;
        let d = p.data_mut();
        d[0..4].copy_from_slice(&[0x60, 0, 0, 0]); // version 6, class and label 0
        set_be16(d, 4, plen); // payload length
        d[6] = 17; // next header: UDP
        d[7] = 255; // hop limit
        d[8..24].copy_from_slice(&self.saddr);
        d[24..40].copy_from_slice(&dst);
        set_be16(d, 40, self.sport);
        set_be16(d, 42, self.dport);
        set_be16(d, 44, plen); // UDP length
        set_be16(d, 46, 0);
        let (ip, udp) = d.split_at_mut(40);
        let c = udp6_checksum(ip, udp);
        set_be16(udp, 6, c);
        p.set_network_header(0, 40);
        Some(0)
    }
}

impl Element for UDPIP6Encap {
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
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "src" => Ok(Ip6(self.saddr).to_string()),
            "sport" => Ok(self.sport.to_string()),
            "dst" => Ok(Ip6(self.daddr).to_string()),
            "dport" => Ok(self.dport.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        let v = value.trim();
        let port = |kw: &str| parse_port(kw, v).map_err(|e| HandlerError::BadValue(e.message));
        match name {
            "src" => self.saddr = crate::util::parse_value::<Ip6>("SRC", v)?.0,
            "sport" => self.sport = port("SPORT")?,
            "dst" => {
                (self.daddr, self.use_dst_anno) = parse_dst(v).map_err(HandlerError::BadValue)?;
            }
            "dport" => self.dport = port("DPORT")?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::{config_error, configure, packet, run_packets};
    use pronto_packet::Pool;

    /// Bytes written as hex pairs separated by blanks.
    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).expect("hex"))
            .collect()
    }

    fn encap(conf: &str) -> Box<dyn Element> {
        configure(UDPIP6Encap::configure, &UDPIP6Encap::SPEC, conf, 1, 1).expect("configures")
    }

    /// Expected packets computed independently (a short Python script
    /// summing the pseudo-header and datagram by RFC 1071).
    #[test]
    fn encapsulates_byte_exact() {
        let pool = Pool::new(16).expect("pool");
        let mut e = encap("2001:db8::1, 1234, 2001:db8::2, 53");
        let o = run_packets(e.as_mut(), 0, vec![packet(&pool, b"hi", None)], 1, &pool, 0);
        let want = hex("60 00 00 00 00 0a 11 ff \
             20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 \
             20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 02 \
             04 d2 00 35 00 0a 36 f5 68 69");
        assert_eq!(o[0][0].data(), &want[..]);
        assert_eq!(o[0][0].network_header_offset(), Some(0));
        assert_eq!(o[0][0].network_header_len(), Some(40));
        assert_eq!(o[0][0].dst_ip6_anno(), want[24..40]);
        // A datagram whose checksum sums to zero is sent with FFFF.
        let o = run_packets(
            e.as_mut(),
            0,
            vec![packet(&pool, &[0x9f, 0x5e], None)],
            1,
            &pool,
            0,
        );
        assert_eq!(o[0][0].data()[46..50], [0xff, 0xff, 0x9f, 0x5e]);
        assert_eq!(e.read_handler("drops").expect("drops"), "0");
    }

    #[test]
    fn dst_anno_and_handlers() {
        let pool = Pool::new(16).expect("pool");
        let mut e = encap("2001:db8::1, 7, DST_ANNO, 9");
        assert_eq!(e.read_handler("dst").expect("dst"), "::");
        let mut p = packet(&pool, &[], None);
        let anno = hex("20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 99");
        p.set_dst_ip6_anno(anno.clone().try_into().expect("16 bytes"));
        let o = run_packets(e.as_mut(), 0, vec![p], 1, &pool, 0);
        let want = hex("60 00 00 00 00 08 11 ff \
             20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 01 \
             20 01 0d b8 00 00 00 00 00 00 00 00 00 00 00 99 \
             00 07 00 09 00 08 a3 c2");
        assert_eq!(o[0][0].data(), &want[..]);
        e.write_handler("dst", "2001:db8::2").expect("dst");
        e.write_handler("sport", "1234").expect("sport");
        e.write_handler("dport", "domain").expect("dport");
        assert_eq!(e.read_handler("dst").expect("dst"), "2001:db8::2");
        assert_eq!(e.read_handler("sport").expect("sport"), "1234");
        assert_eq!(e.read_handler("dport").expect("dport"), "53");
        assert_eq!(e.read_handler("src").expect("src"), "2001:db8::1");
        let o = run_packets(e.as_mut(), 0, vec![packet(&pool, b"hi", None)], 1, &pool, 0);
        assert_eq!(o[0][0].data()[40..48], hex("04 d2 00 35 00 0a 36 f5")[..]);
        assert!(e.write_handler("sport", "x").is_err());
        assert!(e.write_handler("dst", "1.2.3.4.5").is_err());
    }

    #[test]
    fn config_errors() {
        let err = |c: &str| {
            config_error(configure(
                UDPIP6Encap::configure,
                &UDPIP6Encap::SPEC,
                c,
                1,
                1,
            ))
            .message
        };
        assert_eq!(err("::1, 7, x, 9"), "bad DST");
        assert_eq!(
            err("::1, 70000, ::2, 9"),
            "SPORT: expected port number, found `70000`"
        );
        assert_eq!(err("::1, 7, ::2"), "missing mandatory DPORT argument");
    }
}
