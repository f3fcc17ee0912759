//! `ICMPError`: answers an IP packet with an ICMP error message about it.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use pronto_packet::wire::icmp::{icmp_type, IcmpPacket};
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::IP_PROTO_ICMP;
use pronto_packet::{Batch, Packet, PacketType, Pool, MAX_PACKET};

use crate::args::{FromArg, Raw};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out,
    Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_PAYLOAD, FIELD_SRC_IP,
};

const ICMP_UNREACH: u8 = 3;
const ICMP_REDIRECT: u8 = 5;
const ICMP_PARAMPROB: u8 = 12;
const UNREACH_NEEDFRAG: u8 = 4;
const PARAMPROB_ERRATPTR: u8 = 0;
const IPOPT_EOL: u8 = 0;
const IPOPT_NOP: u8 = 1;
const IPOPT_LSRR: u8 = 131;
const IPOPT_SSRR: u8 = 137;

/// True for the ICMP types that report errors.
pub fn is_error_type(t: u8) -> bool {
    icmp_type::is_error(t)
}

/// The IP identification counter shared by every `ICMPError` of a
/// configuration (the first one configured makes it, later ones share it).
pub struct IdCounter(AtomicU16);

/// Builds ICMP error packets about the packets it receives.
pub struct ICMPError {
    src: [u8; 4],
    icmp_type: u8,
    code: u8,
    bad_addrs: Vec<[u8; 4]>,
    mtu: u32,
    pmtu: u32,
    use_fix_anno: bool,
    ids: Arc<IdCounter>,
    /// Packets dropped without an error sent about them (not IP, or an
    /// error must not be sent: RFC 1812 4.3.2.7).
    not_answered: u64,
}

/// An ICMP type argument: a number or one of Click's names.
struct IcmpType(u8);

impl FromArg for IcmpType {
    fn from_arg(s: &str) -> Result<Self, String> {
        let w = pronto_lang::args::unquote(s);
        if let Some(t) = pronto_classify::names::icmp_type_by_name(w.trim()) {
            return Ok(IcmpType(t));
        }
        match pronto_lang::args::parse_i64(&w) {
            Ok(v) if (0..=255).contains(&v) => Ok(IcmpType(v as u8)),
            Ok(_) => Err("ICMP type must be between 0 and 255".into()),
            Err(_) => Err("expected ICMP type".into()),
        }
    }
}

impl ICMPError {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ICMPError")
        .ports("1/1")
        .processing("a/a")
        .keywords(&[
            "SRC",
            "TYPE",
            "CODE",
            "BADADDRS",
            "MTU",
            "PMTU",
            "SET_FIX_ANNO",
            "USE_FIX_ANNO",
        ])
        .profile(
            ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER | FIELD_PAYLOAD)
                .dropping()
                .reshaping(),
        )
        .doc(
            "ICMPError(SRC, TYPE [, CODE, BADADDRS, KEYWORDS])\n\n\
             Answers each IP packet (network header annotation set) with a new IP/ICMP\n\
             error packet of type TYPE and code CODE (default 0) from address SRC to the\n\
             packet's source; the packet itself is consumed. TYPE is a number or\n\
             `unreachable` (3), `sourcequench` (4), `redirect` (5), `timeexceeded` (11),\n\
             `parameterproblem` (12); other types are refused. CODE is a number or a\n\
             name of the type's codes: `net` `host` `protocol` `port` `needfrag`\n\
             `srcroutefail` `netunknown` `hostunknown` `isolated` `netprohibited`\n\
             `hostprohibited` `tosnet` `toshost` `filterprohibited` `hostprecedence`\n\
             `precedencecutoff` (unreachable); `net` `host` `tosnet` `toshost`\n\
             (redirect); `transit` `reassembly` (timeexceeded); `erroratptr`\n\
             `missingopt` `length` (parameterproblem).\n\n\
             No error is sent about: ICMP error messages (or ICMP packets too short to\n\
             tell), packets to 255.255.255.255, to a multicast address or to an address\n\
             in BADADDRS, link broadcasts and multicasts (packet type annotation),\n\
             packets whose source is not unicast, is in net 0, 127 or 240/4, or is in\n\
             BADADDRS, and fragments other than the first. A redirect is not sent about\n\
             a source-routed packet.\n\n\
             The error packet: IP header with TOS 0, ID from a counter shared by all\n\
             ICMPErrors (1, 2, ...), no fragment bits, TTL 200; a reversed source-route\n\
             option when the packet carried a valid LSRR/SSRR option (unless the\n\
             parameter problem points into it); then the ICMP header (parameter-problem\n\
             pointer from the ICMP_PARAMPROB annotation for parameterproblem/erroratptr,\n\
             gateway from the destination annotation for redirect, PMTU as next-hop MTU\n\
             for unreachable/needfrag) and as much of the packet, from its IP header on,\n\
             as fits in MTU bytes. The new packet's destination annotation is its\n\
             destination, its fix-IP-source annotation is set (unless SET_FIX_ANNO\n\
             false), and its timestamp is the current time.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  \
             BADADDRS      space-separated addresses not to answer\n  \
             MTU           largest error packet (default 576)\n  \
             PMTU          next-hop MTU reported in needfrag errors (default 0)\n  \
             SET_FIX_ANNO  boolean, default true (USE_FIX_ANNO is accepted too)\n\
             Handlers:\n  src, mtu, pmtu (read/write)",
        );

    /// Configures an `ICMPError`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let src: Ip4 = a.read_mp("SRC")?;
        let icmp_type: IcmpType = a.read_mp("TYPE")?;
        let code: Option<String> = a.read_p("CODE")?;
        let bad: Option<Raw> = a.read_p("BADADDRS")?;
        let mtu: u32 = a.read_or("MTU", 576)?;
        let pmtu: u32 = a.read_or("PMTU", 0)?;
        let set_fix: Option<bool> = a.read("SET_FIX_ANNO")?;
        let use_fix: Option<bool> = a.read("USE_FIX_ANNO")?;
        a.finish()?;
        let t = icmp_type.0;
        if !is_error_type(t) {
            return Err(ConfigError::new(format!(
                "ICMP type {t} is not an error type"
            )));
        }
        let code_str = code.unwrap_or_else(|| "0".to_string());
        let code = pronto_classify::names::icmp_code_by_name(t, code_str.trim())
            .or_else(|| {
                pronto_lang::args::parse_i64(&code_str)
                    .ok()
                    .and_then(|v| u8::try_from(v).ok())
            })
            .ok_or_else(|| {
                ConfigError::new("argument 2 takes ICMP code (integer between 0 and 255)")
            })?;
        let mut bad_addrs = Vec::new();
        if let Some(Raw(b)) = bad {
            for w in pronto_lang::args::split_words(&pronto_lang::args::unquote(&b)) {
                let ip = Ip4::from_arg(&w)
                    .map_err(|e| ConfigError::new(format!("BADADDRS: {e}, found `{w}`")))?;
                bad_addrs.push(ip.0);
            }
        }
        // Later ICMPErrors share the first one's identification counter.
        let ids = ctx
            .peers
            .of_class("ICMPError")
            .into_iter()
            .find_map(|p| p.shared.and_then(|s| s.downcast::<IdCounter>().ok()))
            .unwrap_or_else(|| Arc::new(IdCounter(AtomicU16::new(1))));
        Ok(Box::new(ICMPError {
            src: src.0,
            icmp_type: t,
            code,
            bad_addrs,
            mtu,
            pmtu,
            use_fix_anno: use_fix.or(set_fix).unwrap_or(true),
            ids,
            not_answered: 0,
        }))
    }

    fn unicast(&self, a: [u8; 4]) -> bool {
        a != [255; 4] && (a[0] & 0xf0) != 0xe0 && !self.bad_addrs.contains(&a)
    }

    fn valid_source(&self, a: [u8; 4]) -> bool {
        self.unicast(a) && a[0] != 0 && a[0] != 127 && (a[0] & 0xf0) != 0xf0
    }

    /// Builds the error packet about `p`, or `None` if none may be sent.
    fn make_error(&self, p: &Packet, pool: &Pool) -> Option<Packet> {
        let nh = usize::try_from(p.network_header_offset()?).ok()?;
        let ip = p.data().get(nh..)?;
        if ip.len() < 20 {
            return None;
        }
        // The 20 fixed bytes are there (the IHL is not checked: Click
        // reads what it says).
        let v = Ipv4Packet::new_unchecked(ip);
        let hlen = v.header_len();
        if v.protocol() == IP_PROTO_ICMP {
            let th = match p.transport_header_offset() {
                Some(t) => usize::try_from(t).ok()?,
                None => nh + hlen,
            };
            if hlen + 4 > p.len() || p.data().get(th).is_none_or(|&t| is_error_type(t)) {
                return None;
            }
        }
        let (src, dst) = (v.src_addr(), v.dst_addr());
        if !self.unicast(dst) {
            return None;
        }
        let pt = p.annotations().packet_type;
        if pt == PacketType::Broadcast || pt == PacketType::Multicast {
            return None;
        }
        if !self.valid_source(src) {
            return None;
        }
        if v.is_later_fragment() {
            return None;
        }
        let paramprob = self.icmp_type == ICMP_PARAMPROB && self.code == PARAMPROB_ERRATPTR;
        let pointer = p.anno_bytes()[pronto_packet::ICMP_PARAMPROB_ANNO_OFFSET];
        let mut route = source_route(ip, hlen);
        if let Some(r) = route {
            if self.icmp_type == ICMP_REDIRECT {
                return None;
            }
            if paramprob {
                let ptr = pointer as usize;
                let (start, len) = (r, ip.get(r + 1).copied().unwrap_or(0) as usize);
                if start <= ptr && ptr < start + len {
                    route = None;
                }
            }
        }
        let mtu = (self.mtu as usize).min(MAX_PACKET);
        // Header with the reversed source route, if any.
        let mut opt = [0u8; 40];
        let mut olen_total = 0;
        if let Some(r) = route {
            let sptr = ip[r + 2] as usize;
            let olen = sptr - 1;
            opt[0] = ip[r];
            opt[1] = olen as u8;
            opt[2] = 4;
            opt[olen] = IPOPT_EOL;
            let mut o = 3;
            let mut oo = r + sptr - 5;
            while oo >= r + 3 {
                opt[o..o + 4].copy_from_slice(&ip[oo..oo + 4]);
                o += 4;
                oo -= 4;
            }
            olen_total = (olen + 3) & !3;
        }
        let qhl = 20 + olen_total;
        if mtu < qhl + 8 {
            return None;
        }
        let xlen = (mtu - qhl - 8).min(ip.len());
        let total = qhl + 8 + xlen;
        let mut q = pool.alloc()?;
        if !q.put_zeroed(total) {
            return None;
        }
        let id = self.ids.0.fetch_add(1, Ordering::Relaxed);
        let d = q.data_mut();
        let mut h = Ipv4Packet::new_unchecked(&mut d[..]);
        h.set_version_and_header_len(qhl);
        h.set_total_len(total as u16);
        h.set_ident(id);
        h.set_ttl(200);
        h.set_protocol(IP_PROTO_ICMP);
        h.set_src_addr(self.src);
        h.set_dst_addr(src);
        h.options_mut().copy_from_slice(&opt[..olen_total]);
        // The 4 bytes after the checksum: a parameter problem's pointer,
        // a redirect's gateway, a "fragmentation needed"'s next-hop MTU.
        let mut rest = 0u32;
        if paramprob {
            rest = (pointer as u32) << 24;
        }
        if self.icmp_type == ICMP_REDIRECT {
            rest = u32::from_be_bytes(p.dst_ip_anno());
        }
        if self.icmp_type == ICMP_UNREACH && self.code == UNREACH_NEEDFRAG {
            rest = self.pmtu as u16 as u32;
        }
        let mut icmp = IcmpPacket::new_unchecked(&mut d[qhl..]);
        icmp.set_type_code(self.icmp_type, self.code);
        icmp.set_rest(rest);
        icmp.data_mut().copy_from_slice(&ip[..xlen]);
        icmp.fill_checksum();
        Ipv4Packet::new_unchecked(&mut d[..]).fill_checksum();
        q.set_network_header(0, qhl);
        q.set_dst_ip_anno(src);
        if self.use_fix_anno {
            q.anno_bytes_mut()[pronto_packet::FIX_IP_SRC_ANNO_OFFSET] = 1;
        }
        Some(q)
    }
}

/// Offset of a valid loose or strict source-route option in header `ip`
/// of `hlen` bytes.
fn source_route(ip: &[u8], hlen: usize) -> Option<usize> {
    let hlen = hlen.min(ip.len());
    let mut oi = 20;
    while oi < hlen {
        let t = ip[oi];
        if t == IPOPT_NOP {
            oi += 1;
            continue;
        } else if t == IPOPT_EOL {
            return None;
        }
        let xlen = ip.get(oi + 1).copied().unwrap_or(0) as usize;
        if xlen < 2 || oi + xlen > hlen {
            return None;
        }
        let ptr = ip.get(oi + 2).copied().unwrap_or(0) as usize;
        if (t == IPOPT_LSRR || t == IPOPT_SSRR)
            && ptr >= 4
            && ptr.is_multiple_of(4)
            && ptr <= xlen + 1
        {
            return Some(oi);
        }
        oi += xlen;
    }
    None
}

impl Element for ICMPError {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let now = out.now;
        push_each(batch, out, |p, pool| {
            let Some(mut q) = self.make_error(p, pool) else {
                self.not_answered += 1;
                return None;
            };
            q.set_timestamp_ns(now);
            *p = q;
            Some(0)
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("cannot_answer", self.not_answered);
    }

    fn shared(&self) -> Option<crate::Shared> {
        Some(self.ids.clone())
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("src"),
            HandlerInfo::rw("mtu"),
            HandlerInfo::rw("pmtu"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "src" => Ok(Ip4(self.src).to_string()),
            "mtu" => Ok(self.mtu.to_string()),
            "pmtu" => Ok(self.pmtu.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "src" => self.src = crate::util::parse_value::<Ip4>(name, value)?.0,
            "mtu" => self.mtu = crate::util::parse_value(name, value)?,
            "pmtu" => self.pmtu = crate::util::parse_value(name, value)?,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push_at, read};
    use crate::Control;
    use pronto_packet::wire::checksum;
    use pronto_packet::FIX_IP_SRC_ANNO_OFFSET;

    /// A UDP packet 10.0.0.2:1000 -> 10.0.0.9:53 with 4 data bytes.
    fn udp() -> Vec<u8> {
        let mut d = vec![
            0x45, 0x00, 0x00, 0x20, // version/IHL, TOS, total length 32
            0xab, 0xcd, 0x00, 0x00, // ID, no fragment bits
            0x01, 0x11, 0x00, 0x00, // TTL 1, UDP, checksum (below)
            10, 0, 0, 2, // source
            10, 0, 0, 9, // destination
            0x03, 0xe8, 0x00, 0x35, 0x00, 0x0c, 0x00, 0x00, // ports, length 12, no checksum
            b'a', b'b', b'c', b'd', // data
        ];
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    fn run(config: &str, pkts: Vec<Vec<u8>>, prep: impl Fn(&mut Packet)) -> Vec<Packet> {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(ICMPError::SPEC.keywords, ICMPError::configure, config, 1, 1)
            .expect("configures");
        let ps = pkts
            .iter()
            .map(|d| {
                let mut p = pkt(&pool, d);
                p.set_network_header(0, ((d[0] & 15) as usize) * 4);
                prep(&mut p);
                p
            })
            .collect();
        let mut ctrl = Control::default();
        let mut outs = push_at(e.as_mut(), &pool, 0, ps, 1, 7, &mut ctrl);
        outs.remove(0)
    }

    #[test]
    fn time_exceeded_quotes_the_whole_packet() {
        let got = run("18.26.4.24, timeexceeded", vec![udp()], |_| {});
        assert_eq!(got.len(), 1);
        let mut want = vec![
            0x45, 0x00, 0x00, 0x3c, // IHL 5, TOS 0, total length 60
            0x00, 0x01, 0x00, 0x00, // ID 1, no fragment bits
            0xc8, 0x01, 0x00, 0x00, // TTL 200, ICMP, checksum (below)
            18, 26, 4, 24, // source: SRC
            10, 0, 0, 2, // destination: the packet's source
            11, 0, 0x00, 0x00, 0, 0, 0, 0, // time exceeded, transit, checksum, unused
        ];
        want.extend_from_slice(&udp());
        let c = checksum(&want[20..]);
        want[22..24].copy_from_slice(&c.to_be_bytes());
        let c = checksum(&want[..20]);
        want[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(bytes(&got), vec![want]);
        assert_eq!(got[0].dst_ip_anno(), [10, 0, 0, 2]);
        assert_eq!(got[0].anno_bytes()[FIX_IP_SRC_ANNO_OFFSET], 1);
        assert_eq!(got[0].timestamp_ns(), 7);
        assert_eq!(got[0].network_header_offset(), Some(0));
    }

    #[test]
    fn mtu_limits_the_quote_and_ids_count_up() {
        let got = run(
            "1.2.3.4, unreachable, needfrag, MTU 40, PMTU 1400, SET_FIX_ANNO false",
            vec![udp(), udp()],
            |_| {},
        );
        assert_eq!(got.len(), 2);
        let d = got[0].data();
        assert_eq!(d.len(), 40);
        assert_eq!(&d[2..6], &[0x00, 0x28, 0x00, 0x01]);
        assert_eq!(&d[20..22], &[3, 4]);
        assert_eq!(&d[24..28], &[0, 0, 0x05, 0x78]); // next-hop MTU 1400
        assert_eq!(&d[28..40], &udp()[..12]);
        assert_eq!(checksum(&d[20..]), 0);
        assert_eq!(checksum(&d[..20]), 0);
        assert_eq!(&got[1].data()[4..6], &[0x00, 0x02]);
        assert_eq!(got[0].anno_bytes()[FIX_IP_SRC_ANNO_OFFSET], 0);
    }

    #[test]
    fn parameter_problem_pointer_and_redirect_gateway() {
        let got = run("1.2.3.4, parameterproblem", vec![udp()], |p| {
            p.anno_bytes_mut()[pronto_packet::ICMP_PARAMPROB_ANNO_OFFSET] = 21;
        });
        assert_eq!(&got[0].data()[20..22], &[12, 0]);
        assert_eq!(&got[0].data()[24..28], &[21, 0, 0, 0]);
        let got = run("1.2.3.4, redirect, host", vec![udp()], |p| {
            p.set_dst_ip_anno([10, 0, 0, 254]);
        });
        assert_eq!(&got[0].data()[20..22], &[5, 1]);
        assert_eq!(&got[0].data()[24..28], &[10, 0, 0, 254]);
    }

    #[test]
    fn does_not_answer() {
        let with = |f: fn(&mut Vec<u8>)| {
            let mut d = udp();
            f(&mut d);
            d
        };
        let cases = vec![
            with(|d| d[16..20].copy_from_slice(&[255, 255, 255, 255])), // broadcast dst
            with(|d| d[16..20].copy_from_slice(&[224, 0, 0, 1])),       // multicast dst
            with(|d| d[12..16].copy_from_slice(&[0, 1, 2, 3])),         // net 0 source
            with(|d| d[12..16].copy_from_slice(&[127, 0, 0, 1])),       // loopback source
            with(|d| d[12..16].copy_from_slice(&[240, 0, 0, 1])),       // class E source
            with(|d| d[12..16].copy_from_slice(&[10, 0, 0, 255])),      // BADADDRS source
            with(|d| d[7] = 1),                                         // later fragment
            with(|d| {
                d[9] = 1; // an ICMP error (type 3)
                d[20] = 3;
            }),
        ];
        let got = run("1.2.3.4, unreachable, port, 10.0.0.255", cases, |_| {});
        assert!(got.is_empty());
        let got = run("1.2.3.4, 3, 3", vec![udp()], |p| {
            p.annotations_mut().packet_type = PacketType::Broadcast;
        });
        assert!(got.is_empty());
        // An ICMP echo is answered.
        let got = run(
            "1.2.3.4, 3, 3",
            vec![with(|d| {
                d[9] = 1;
                d[20] = 8;
            })],
            |_| {},
        );
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn packets_not_answered_are_counted() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(
            ICMPError::SPEC.keywords,
            ICMPError::configure,
            "1.2.3.4, unreachable, port",
            1,
            1,
        )
        .expect("configures");
        let mut bcast = udp();
        bcast[16..20].copy_from_slice(&[255, 255, 255, 255]);
        let ps = [udp(), bcast, udp()]
            .iter()
            .map(|d| {
                let mut p = pkt(&pool, d);
                p.set_network_header(0, 20);
                p
            })
            .collect();
        // Plus one without a network header.
        let mut ps: Vec<Packet> = ps;
        ps.push(pkt(&pool, &udp()));
        let mut ctrl = Control::default();
        let outs = push_at(e.as_mut(), &pool, 0, ps, 1, 7, &mut ctrl);
        assert_eq!(outs[0].len(), 2);
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("cannot_answer", 2)]
        );
    }

    #[test]
    fn reverses_a_source_route() {
        // IHL 8: LSRR option, length 11, pointer 12 (two hops used), EOL.
        let mut d = udp();
        d[0] = 0x48;
        d[2..4].copy_from_slice(&[0, 44]);
        let opt = [131, 11, 12, 1, 1, 1, 1, 2, 2, 2, 2, 0];
        d.splice(20..20, opt);
        let got = run(
            "1.2.3.4, unreachable, host, MTU 1000",
            vec![d.clone()],
            |_| {},
        );
        let g = got[0].data();
        assert_eq!(g[0], 0x48);
        assert_eq!(&g[20..32], &[131, 11, 4, 2, 2, 2, 2, 1, 1, 1, 1, 0]);
        assert_eq!(&g[40..], &d[..]);
        // No redirect about a source-routed packet.
        assert!(run("1.2.3.4, redirect", vec![d], |_| {}).is_empty());
    }

    #[test]
    fn configuration() {
        let c = |s| configure(ICMPError::SPEC.keywords, ICMPError::configure, s, 1, 1);
        assert_eq!(
            config_err(c("1.2.3.4, echo")),
            "ICMP type 8 is not an error type"
        );
        assert_eq!(
            config_err(c("1.2.3.4, unreachable, transit")),
            "argument 2 takes ICMP code (integer between 0 and 255)"
        );
        assert_eq!(config_err(c("1.2.3.4")), "missing mandatory TYPE argument");
        let e = c("1.2.3.4, 11, reassembly, MTU 100").expect("ok");
        assert_eq!(read(e.as_ref(), "src"), "1.2.3.4");
        assert_eq!(read(e.as_ref(), "mtu"), "100");
        assert_eq!(read(e.as_ref(), "pmtu"), "0");
    }
}
