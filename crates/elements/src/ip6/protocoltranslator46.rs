//! `ProtocolTranslator46`: IPv4 packets to IPv6 (RFC 7915, stateless).

use pronto_packet::wire::xlat::{self, Prefix6052, XlatError};
use pronto_packet::{Batch, Packet, BUFFER_SIZE};

use crate::util::{prefix6052, replace_data};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_SRC_IP,
};

/// A translation function of `wire::xlat`.
pub(crate) type Translate = fn(&Prefix6052, &[u8], &mut [u8]) -> Result<usize, XlatError>;

/// A translation error as a drop reason (see [`crate::Counters`]).
pub(crate) fn xlat_reason(e: XlatError) -> &'static str {
    match e {
        XlatError::Truncated => "too_short",
        XlatError::Malformed => "malformed",
        XlatError::Unmappable => "no_mapping",
        XlatError::SourceRoute => "source_route",
        XlatError::FragmentedIcmp => "fragment",
        XlatError::UdpZeroChecksum => "udp_zero_checksum",
        XlatError::BadChecksum => "bad_checksum",
        XlatError::Untranslatable => "untranslatable",
    }
}

/// The state both protocol translators share: the address prefix, a
/// scratch buffer the translated packet is built in (made once), and the
/// drop counters by reason.
pub(crate) struct XlatCore {
    pub(crate) prefix: Prefix6052,
    scratch: Box<[u8]>,
    drops: u64,
    details: [u64; XlatError::ALL.len()],
}

impl XlatCore {
    pub(crate) fn new(prefix: Prefix6052) -> XlatCore {
        XlatCore {
            prefix,
            scratch: vec![0u8; BUFFER_SIZE + xlat::MAX_GROWTH].into_boxed_slice(),
            drops: 0,
            details: [0; XlatError::ALL.len()],
        }
    }

    /// Translates `p` in place with `f`; `None` (and counted) when it is
    /// refused. The destination annotation is cleared (Click's translated
    /// packets are new packets); the timestamp and the other annotations
    /// stay. The network header is marked.
    #[inline]
    pub(crate) fn translate(
        &mut self,
        p: &mut Packet,
        f: Translate,
        ip_header_len: usize,
    ) -> Option<usize> {
        let r = f(&self.prefix, p.data(), &mut self.scratch);
        let n = match r {
            Ok(n) => n,
            Err(e) => {
                self.drops += 1;
                self.details[e.index()] += 1;
                return None;
            }
        };
        if !replace_data(p, &self.scratch[..n]) {
            self.drops += 1;
            self.details[XlatError::Truncated.index()] += 1;
            return None;
        }
        p.set_dst_ip6_anno([0; 16]);
        p.set_network_header(0, ip_header_len.min(n));
        Some(0)
    }

    /// Reports the refused packets by reason.
    pub(crate) fn counters(&self, c: &mut crate::Counters) {
        for (n, e) in self.details.iter().zip(XlatError::ALL) {
            c.drop(xlat_reason(e), *n);
        }
    }

    pub(crate) const HANDLERS: &'static [HandlerInfo] = &[
        HandlerInfo::read("drops"),
        HandlerInfo::read("drop_details"),
        HandlerInfo::read("prefix"),
    ];

    pub(crate) fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            "drop_details" => {
                let mut s = String::new();
                for (n, e) in self.details.iter().zip(XlatError::ALL) {
                    s.push_str(&format!("{n}\t{}\n", e.as_str()));
                }
                Ok(s)
            }
            "prefix" => Ok(format!(
                "{}/{}",
                pronto_lang::args::format_ip6(&self.prefix.addr()),
                self.prefix.prefix_len()
            )),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

/// Translates IPv4 packets into IPv6 packets.
pub struct ProtocolTranslator46 {
    core: XlatCore,
}

impl ProtocolTranslator46 {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ProtocolTranslator46")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["PREFIX"])
        .profile(
            ActionProfile::reads(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER)
                .writes(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "ProtocolTranslator46([PREFIX])\n\n\
             Translates IPv4 packets (starting at the IP header) into IPv6 packets, as\n\
             RFC 7915 section 4 specifies with the choices Click makes. Addresses become\n\
             IPv4-mapped IPv6 addresses (::ffff:a.b.c.d), or, with PREFIX, the RFC 6052\n\
             IPv4-embedded addresses under that prefix (/32, /40, /48, /56, /64 or /96,\n\
             e.g. 64:ff9b::/96). Traffic class and flow label are 0; the hop limit is the\n\
             TTL (not decremented); IPv4 options are ignored. A fragment gets a fragment\n\
             header (identification: the IPv4 ID). TCP and UDP checksums are adjusted for\n\
             the new pseudo-header; a UDP checksum of 0 is computed. ICMP echo becomes\n\
             ICMPv6 echo; ICMP errors become ICMPv6 errors with the quoted packet\n\
             translated too (its TCP/UDP/ICMP echo checksum adjusted), cut to 1280 bytes;\n\
             the ICMPv6 checksum is computed afresh.\n\n\
             Dropped and counted: packets shorter than their headers or total length,\n\
             unexpired source-route options, fragmented ICMP, UDP fragments with\n\
             checksum 0, ICMP with a bad checksum, ICMP types and codes RFC 7915 does\n\
             not translate (timestamp, information, redirect, source quench, ...; errors\n\
             quoting an ICMP error).\n\n\
             Differences from Click, whose element only handles the simplest cases:\n\
             Click sets the hop limit to TTL+65 (mod 256): pronto copies the TTL. Click\n\
             does not translate the quoted packet of an ICMP error, writes an MTU of 0 in\n\
             Packet Too Big and parameter-problem pointers in host byte order, ignores IP\n\
             options and fragments (carrying options as payload), recomputes TCP/UDP\n\
             checksums (a corrupt one becomes valid; pronto adjusts it, so it stays\n\
             corrupt), and crashes on ICMP types it does not know: pronto follows RFC\n\
             7915 there (MTU + 20, or an RFC 1191 plateau when 0; the RFC's pointer\n\
             table; untranslatable types and codes dropped). Kept from Click where the\n\
             RFC differs: traffic class 0 (the RFC's configurable option), the TTL not\n\
             decremented, ICMP unreachable code 5 (source route failed) to ICMPv6 code 2\n\
             (the RFC says 0), echo code 0. Translated packets keep their annotations\n\
             (timestamp, paint) except the destination address annotation, which is\n\
             cleared; Click's are new packets. Packets without DF larger than 1280 bytes\n\
             after translation are not fragmented.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  PREFIX  IPv6 prefix; RFC 6052 prefix to embed addresses in\n          \
             (default ::ffff:0:0/96)\n\
             Handlers:\n  drops (read)         packets dropped\n  \
             drop_details (read)  one `COUNT<TAB>REASON` line per reason\n  \
             prefix (read)        the prefix in use",
        );

    /// Configures a `ProtocolTranslator46`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let prefix = prefix6052(a.read("PREFIX")?)?;
        a.finish()?;
        Ok(Box::new(ProtocolTranslator46 {
            core: XlatCore::new(prefix),
        }))
    }
}

impl Element for ProtocolTranslator46 {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| {
            self.core.translate(p, xlat::v4_to_v6, 40)
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        self.core.counters(c);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        XlatCore::HANDLERS
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        self.core.read_handler(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::protocoltranslator64::ProtocolTranslator64;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    /// UDP 192.0.2.1:1000 -> 198.51.100.7:53, payload "hi", checksum 0.
    fn udp4() -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 30, 0, 9, 0x40, 0, 64, 17, 0, 0, 192, 0, 2, 1, 198, 51, 100, 7, 0x03, 0xe8,
            0, 53, 0, 10, 0, 0, b'h', b'i',
        ];
        let c = checksum(&p[..20]);
        p[10..12].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn translates_both_ways_and_counts_drops() {
        let pool = Pool::new(64).expect("pool");
        let kw = ProtocolTranslator46::SPEC.keywords;
        let mut t46 = configure(kw, ProtocolTranslator46::configure, "", 1, 1).expect("ok");
        let mut t64 = configure(kw, ProtocolTranslator64::configure, "", 1, 1).expect("ok");
        let mut ts = pkt(&pool, &udp4());
        ts.set_timestamp_ns(7);
        let out = push(t46.as_mut(), &pool, vec![ts], 1);
        let v6 = out[0][0].data().to_vec();
        // Hop limit 64 (Click would write 129), next header UDP, mapped
        // addresses, and the UDP checksum computed (it was 0): the one's
        // complement sum of the pseudo-header and datagram (0xa717, as
        // scapy computes it; ::ffff adds 0xffff, so IPv4 has the same).
        let mut want = vec![0x60, 0, 0, 0, 0, 10, 17, 64];
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]);
        want.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 51, 100, 7]);
        want.extend_from_slice(&[0x03, 0xe8, 0, 53, 0, 10, 0xa7, 0x17, b'h', b'i']);
        assert_eq!(v6, want);
        assert_eq!(out[0][0].timestamp_ns(), 7);
        assert_eq!(out[0][0].network_header_len(), Some(40));

        let back = push(t64.as_mut(), &pool, vec![pkt(&pool, &v6)], 1);
        let v4 = back[0][0].data().to_vec();
        let mut w4 = udp4();
        w4[4..6].copy_from_slice(&[0, 0]); // ID 0, DF (Click)
        w4[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&w4[..20]);
        w4[10..12].copy_from_slice(&c.to_be_bytes());
        w4[26..28].copy_from_slice(&[0xa7, 0x17]);
        assert_eq!(v4, w4);

        // Not IPv4-mapped: dropped by 64; truncated: dropped by 46.
        let mut other = v6.clone();
        other[18] = 0xfe;
        assert!(push(t64.as_mut(), &pool, vec![pkt(&pool, &other)], 1)[0].is_empty());
        assert!(push(t46.as_mut(), &pool, vec![pkt(&pool, &udp4()[..25])], 1)[0].is_empty());
        assert_eq!(read(t64.as_ref(), "drops"), "1");
        assert_eq!(
            read(t64.as_ref(), "drop_details"),
            "0\ttruncated\n0\tmalformed\n1\tunmappable address\n0\tsource route\n\
             0\tfragmented ICMP\n0\tUDP fragment without checksum\n0\tbad ICMP checksum\n\
             0\tuntranslatable ICMP\n"
        );
        assert_eq!(read(t46.as_ref(), "drops"), "1");
        assert_eq!(read(t46.as_ref(), "prefix"), "::ffff:0.0.0.0/96");
    }

    #[test]
    fn rfc6052_prefix_argument() {
        let pool = Pool::new(16).expect("pool");
        let kw = ProtocolTranslator46::SPEC.keywords;
        let mut t = configure(
            kw,
            ProtocolTranslator46::configure,
            "PREFIX 64:ff9b::/96",
            1,
            1,
        )
        .expect("ok");
        let out = push(t.as_mut(), &pool, vec![pkt(&pool, &udp4())], 1);
        assert_eq!(
            &out[0][0].data()[8..24],
            &[0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1]
        );
        assert_eq!(read(t.as_ref(), "prefix"), "64:ff9b::/96");
        assert_eq!(
            config_err(configure(
                kw,
                ProtocolTranslator46::configure,
                "PREFIX 2001:db8::/33",
                1,
                1
            )),
            "PREFIX: prefix length must be 32, 40, 48, 56, 64 or 96, found /33"
        );
    }
}
