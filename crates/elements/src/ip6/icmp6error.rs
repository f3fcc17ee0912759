//! `ICMP6Error`: answers an IPv6 packet with an ICMPv6 error message about
//! it (RFC 4443), or a Redirect (RFC 4861).

use pronto_packet::wire::ipv6::{
    icmp6_type, next_header, walk, Icmp6Header, Ipv6Header, ICMP6_HEADER_LEN, IP6_HEADER_LEN,
    MAX_EXT_HEADERS,
};
use pronto_packet::{
    Batch, Packet, PacketType, Pool, FIX_IP_SRC_ANNO_OFFSET, ICMP_PARAMPROB_ANNO_OFFSET,
};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip6, Out,
    Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_PAYLOAD, FIELD_SRC_IP,
};

/// IPv6's minimum link MTU: no error message is longer (RFC 4443 2.4(c)).
const MIN_MTU: usize = 1280;
/// Target and destination addresses of a Redirect, after its 8-byte header.
const REDIRECT_ADDRS: usize = 32;
/// The Redirected Header option's type (RFC 4861 4.6.3) and fixed part.
const OPT_REDIRECTED_HEADER: u8 = 4;
const OPT_HEADER: usize = 8;
/// Parameter Problem code: unrecognized IPv6 option.
const PARAMPROB_OPTION: u8 = 2;

/// Builds ICMPv6 error messages about the packets it receives.
pub struct ICMP6Error {
    src: [u8; 16],
    icmp_type: u8,
    code: u8,
    pmtu: u32,
    drops: u64,
}

impl ICMP6Error {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ICMP6Error")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["SRC", "TYPE", "CODE", "PMTU"])
        .profile(
            ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER | FIELD_PAYLOAD)
                .dropping()
                .reshaping(),
        )
        .doc(
            "ICMP6Error(SRC, TYPE, CODE [, keyword PMTU])\n\n\
             Answers each IPv6 packet (network header marked) with an ICMPv6 message of\n\
             type TYPE and code CODE about it: IPv6 header with source SRC, destination\n\
             the packet's source, hop limit 255; the ICMPv6 header; then as much of the\n\
             packet, from its IPv6 header on, as fits in 1280 bytes (IPv6's minimum\n\
             MTU). TYPE is an error type (1 destination unreachable, 2 packet too big,\n\
             3 time exceeded, 4 parameter problem) or 137 (redirect). Packet Too Big\n\
             carries PMTU; Parameter Problem carries the parameter-problem annotation\n\
             as its pointer (RFC 4443 3.4, every code); a Redirect carries the destination IPv6\n\
             annotation as its target, the packet's destination, and the packet in a\n\
             Redirected Header option (RFC 4861). The checksum is computed. The\n\
             message gets the network header annotation, the destination IPv6\n\
             annotation (the packet's source) and the fix-IP-source annotation; the\n\
             packet itself is consumed.\n\n\
             As RFC 4443 2.4(e) says, no message answers an ICMPv6 error or a Redirect,\n\
             a packet whose source is the unspecified address, a multicast address or\n\
             ::1, or (except for Packet Too Big and Parameter Problem code 2) a packet\n\
             to a multicast address or one that came as a link-level broadcast or\n\
             multicast. Those packets, and packets without a marked IPv6 header, are\n\
             dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Arguments:\n  \
             SRC   the messages' source address (not ::)\n  \
             TYPE  ICMPv6 type (1, 2, 3, 4 or 137)\n  \
             CODE  ICMPv6 code\n  \
             PMTU  the MTU Packet Too Big reports (default 1500)\n\
             Handlers:\n  drops (read)  packets not answered",
        );

    /// Configures an `ICMP6Error`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let src: Ip6 = a.read_mp("SRC")?;
        let icmp_type: u8 = a.read_mp("TYPE")?;
        let code: u8 = a.read_mp("CODE")?;
        let pmtu: u32 = a.read_or("PMTU", 1500)?;
        a.finish()?;
        if src.0 == [0; 16] {
            return Err(ConfigError::new(
                "SRC: the unspecified address :: cannot be a source; give this router's address",
            ));
        }
        if !icmp6_type::is_error(icmp_type) && icmp_type != icmp6_type::REDIRECT {
            return Err(ConfigError::new(format!(
                "TYPE: ICMP6 type {icmp_type} is not an error or redirect type"
            )));
        }
        Ok(Box::new(ICMP6Error {
            src: src.0,
            icmp_type,
            code,
            pmtu,
            drops: 0,
        }))
    }

    /// True when RFC 4443's exceptions let this message answer packets to
    /// multicast destinations.
    fn answers_multicast(&self) -> bool {
        self.icmp_type == icmp6_type::PACKET_TOO_BIG
            || (self.icmp_type == icmp6_type::PARAMETER_PROBLEM && self.code == PARAMPROB_OPTION)
    }

    /// Builds the message about `p`, or `None` if none may be sent.
    fn make_error(&self, p: &Packet, pool: &Pool) -> Option<Packet> {
        let ip = p.network_data().filter(|d| d.len() >= IP6_HEADER_LEN)?;
        let h = Ipv6Header::new_unchecked(ip);
        let (src, dst) = (h.src_addr(), h.dst_addr());
        // Never about an ICMPv6 error or a Redirect.
        if let Ok(w) = walk(ip, MAX_EXT_HEADERS) {
            if w.protocol == next_header::ICMPV6 && w.has_upper_header() {
                if let Some(&t) = ip.get(w.offset) {
                    if icmp6_type::is_error(t) || t == icmp6_type::REDIRECT {
                        return None;
                    }
                }
            }
        }
        if !self.answers_multicast() {
            let pt = p.annotations().packet_type;
            if dst[0] == 0xff || pt == PacketType::Broadcast || pt == PacketType::Multicast {
                return None;
            }
        }
        let mut loopback = [0u8; 16];
        loopback[15] = 1;
        if src == [0; 16] || src[0] == 0xff || src == loopback {
            return None;
        }
        let redirect = self.icmp_type == icmp6_type::REDIRECT;
        let fixed = IP6_HEADER_LEN
            + ICMP6_HEADER_LEN
            + if redirect {
                REDIRECT_ADDRS + OPT_HEADER
            } else {
                0
            };
        let quote = ip.len().min(MIN_MTU - fixed);
        // The Redirected Header option is padded to 8-byte units.
        let pad = if redirect { (8 - quote % 8) % 8 } else { 0 };
        let total = fixed + quote + pad;
        let mut q = pool.alloc()?;
        if !q.put_zeroed(total) {
            return None;
        }
        let d = q.data_mut();
        let mut nh = Ipv6Header::new_unchecked(&mut d[..IP6_HEADER_LEN]);
        nh.set_vtcfl(0, 0);
        nh.set_payload_len((total - IP6_HEADER_LEN) as u16);
        nh.set_next_header(next_header::ICMPV6);
        nh.set_hop_limit(255);
        nh.set_src_addr(self.src);
        nh.set_dst_addr(src);
        let msg = &mut d[IP6_HEADER_LEN..];
        let mut body = ICMP6_HEADER_LEN;
        match self.icmp_type {
            icmp6_type::PACKET_TOO_BIG => msg[4..8].copy_from_slice(&self.pmtu.to_be_bytes()),
            icmp6_type::PARAMETER_PROBLEM => {
                let ptr = p.anno_bytes()[ICMP_PARAMPROB_ANNO_OFFSET] as u32;
                msg[4..8].copy_from_slice(&ptr.to_be_bytes());
            }
            icmp6_type::REDIRECT => {
                msg[8..24].copy_from_slice(&p.dst_ip6_anno());
                msg[24..40].copy_from_slice(&dst);
                body += REDIRECT_ADDRS;
                msg[body] = OPT_REDIRECTED_HEADER;
                msg[body + 1] = ((OPT_HEADER + quote + pad) / 8) as u8;
                body += OPT_HEADER;
            }
            _ => {}
        }
        msg[body..body + quote].copy_from_slice(&ip[..quote]);
        let mut icmp = Icmp6Header::new_unchecked(&mut *msg);
        icmp.set_type_code(self.icmp_type, self.code);
        icmp.fill_checksum(&self.src, &src);
        q.set_network_header(0, IP6_HEADER_LEN);
        q.set_dst_ip6_anno(src);
        q.anno_bytes_mut()[FIX_IP_SRC_ANNO_OFFSET] = 1;
        Some(q)
    }
}

impl Element for ICMP6Error {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        push_each(batch, out, |p, pool| match self.make_error(p, pool) {
            Some(mut q) => {
                q.set_timestamp_ns(now);
                *p = q;
                Some(0)
            }
            None => {
                self.drops += 1;
                None
            }
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("cannot_answer", self.drops);
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
    use crate::ip6::checkip6header::tests::ip6_packet;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push, read};
    use pronto_packet::wire::{fold, ones_sum};

    const KW: &[&str] = ICMP6Error::SPEC.keywords;
    const ME: &str = "2001:db8::ff";

    fn a6(s: &str) -> [u8; 16] {
        pronto_lang::args::parse_ip6(s).expect("address")
    }

    fn run(config: &str, pkts: Vec<Vec<u8>>, prep: impl Fn(&mut Packet)) -> (Vec<Vec<u8>>, String) {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(KW, ICMP6Error::configure, config, 1, 1).expect("configures");
        let ps = pkts
            .iter()
            .map(|d| {
                let mut p = pkt(&pool, d);
                p.set_network_header(0, 40);
                prep(&mut p);
                p
            })
            .collect();
        let outs = push(e.as_mut(), &pool, ps, 1);
        (bytes(&outs[0]), read(e.as_ref(), "drops"))
    }

    /// The message RFC 4443 describes, checksum by a separate sum.
    fn expected(dst: &str, t: u8, code: u8, rest: [u8; 4], quote: &[u8]) -> Vec<u8> {
        let mut m = vec![t, code, 0, 0];
        m.extend_from_slice(&rest);
        m.extend_from_slice(quote);
        let mut d = ip6_packet(ME, dst, 58, &m);
        d[7] = 255;
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&d[8..40]);
        pseudo.extend_from_slice(&(m.len() as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, 58]);
        let c = !fold(ones_sum(&m, ones_sum(&pseudo, 0)));
        d[42..44].copy_from_slice(&c.to_be_bytes());
        d
    }

    #[test]
    fn time_exceeded_quotes_the_packet() {
        let udp = ip6_packet(
            "2001:db8::1",
            "2001:db8::2",
            17,
            &[0, 1, 0, 2, 0, 12, 0, 0, 1, 2, 3, 4],
        );
        let (got, drops) = run(&format!("{ME}, 3, 0"), vec![udp.clone()], |_| {});
        assert_eq!(got, vec![expected("2001:db8::1", 3, 0, [0; 4], &udp)]);
        assert_eq!(drops, "0");
    }

    #[test]
    fn packet_too_big_is_cut_to_1280_and_answers_multicast() {
        let big = ip6_packet("2001:db8::1", "ff0e::1", 17, &[0x5a; 1400]);
        let (got, _) = run(&format!("{ME}, 2, 0, PMTU 1280"), vec![big.clone()], |_| {});
        assert_eq!(
            got,
            vec![expected("2001:db8::1", 2, 0, [0, 0, 5, 0], &big[..1232])]
        );
        assert_eq!(got[0].len(), 1280);
    }

    #[test]
    fn parameter_problem_pointer() {
        let d = ip6_packet("2001:db8::1", "2001:db8::2", 59, &[]);
        let (got, _) = run(&format!("{ME}, 4, 0"), vec![d.clone()], |p| {
            p.anno_bytes_mut()[ICMP_PARAMPROB_ANNO_OFFSET] = 7;
        });
        assert_eq!(got, vec![expected("2001:db8::1", 4, 0, [0, 0, 0, 7], &d)]);
    }

    #[test]
    fn does_not_answer() {
        let dst = "2001:db8::2";
        let err = ip6_packet("2001:db8::1", dst, 58, &[1, 0, 0, 0, 0, 0, 0, 0]);
        let redirect = ip6_packet("2001:db8::1", dst, 58, &[137, 0, 0, 0, 0, 0, 0, 0]);
        // An error behind a hop-by-hop header is still an error.
        let hbh_err = ip6_packet(
            "2001:db8::1",
            dst,
            0,
            &[58, 0, 1, 4, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0],
        );
        let echo = ip6_packet("2001:db8::1", dst, 58, &[128, 0, 0, 0, 0, 0, 0, 0]);
        let multi = ip6_packet("2001:db8::1", "ff02::1", 59, &[]);
        let unspec = ip6_packet("::", dst, 59, &[]);
        let msrc = ip6_packet("ff02::2", dst, 59, &[]);
        let lo = ip6_packet("::1", dst, 59, &[]);
        let pkts = vec![
            err,
            redirect,
            hbh_err,
            echo.clone(),
            multi.clone(),
            unspec,
            msrc,
            lo,
        ];
        let (got, drops) = run(&format!("{ME}, 1, 4"), pkts.clone(), |_| {});
        assert_eq!(got, vec![expected("2001:db8::1", 1, 4, [0; 4], &echo)]);
        assert_eq!(drops, "7");
        // Link-level multicast, unless Packet Too Big.
        let (got, drops) = run(&format!("{ME}, 3, 0"), vec![echo.clone()], |p| {
            p.annotations_mut().packet_type = PacketType::Multicast;
        });
        assert!(got.is_empty());
        assert_eq!(drops, "1");
        let (got, _) = run(&format!("{ME}, 4, 2"), vec![multi.clone()], |p| {
            p.annotations_mut().packet_type = PacketType::Broadcast;
            p.anno_bytes_mut()[ICMP_PARAMPROB_ANNO_OFFSET] = 40;
        });
        assert_eq!(
            got,
            vec![expected("2001:db8::1", 4, 2, [0, 0, 0, 40], &multi)]
        );
        // No marked header.
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KW, ICMP6Error::configure, &format!("{ME}, 3, 0"), 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &echo)], 1);
        assert!(outs[0].is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }

    #[test]
    fn redirect_carries_target_and_redirected_header() {
        let d = ip6_packet("2001:db8::1", "2001:db8:9::9", 59, &[1, 2, 3]);
        let (got, _) = run(&format!("{ME}, 137, 0"), vec![d.clone()], |p| {
            p.set_dst_ip6_anno(a6("fe80::7"));
        });
        let mut body = Vec::new();
        body.extend_from_slice(&a6("fe80::7"));
        body.extend_from_slice(&a6("2001:db8:9::9"));
        // Option: type 4, 43 bytes quoted + 8, padded to 56 = 7 units.
        body.extend_from_slice(&[4, 7, 0, 0, 0, 0, 0, 0]);
        body.extend_from_slice(&d);
        body.extend_from_slice(&[0; 5]);
        assert_eq!(got, vec![expected("2001:db8::1", 137, 0, [0; 4], &body)]);
        let out_ip = Ipv6Header::new_unchecked(&got[0][..]);
        assert_eq!(out_ip.dst_addr(), a6("2001:db8::1"));
    }

    #[test]
    fn annotations_and_configuration() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KW, ICMP6Error::configure, &format!("{ME}, 1, 0"), 1, 1).expect("ok");
        let d = ip6_packet("2001:db8::1", "2001:db8::2", 59, &[]);
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 40);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        let q = &outs[0][0];
        assert_eq!(q.dst_ip6_anno(), a6("2001:db8::1"));
        assert_eq!(q.anno_bytes()[FIX_IP_SRC_ANNO_OFFSET], 1);
        assert_eq!(q.network_header_offset(), Some(0));
        let err = |c: &str| config_err(configure(KW, ICMP6Error::configure, c, 1, 1));
        assert!(err("::, 3, 0").contains("SRC"));
        assert!(err(&format!("{ME}, 128, 0")).contains("not an error or redirect type"));
        assert!(err(&format!("{ME}, 3")).contains("CODE"));
    }
}
