//! `ProtocolTranslator64`: IPv6 packets to IPv4 (RFC 7915, stateless).

use pronto_packet::wire::xlat;
use pronto_packet::Batch;

use super::protocoltranslator46::XlatCore;
use crate::util::prefix6052;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_DST_IP, FIELD_OTHER, FIELD_SRC_IP,
};

/// Translates IPv6 packets into IPv4 packets.
pub struct ProtocolTranslator64 {
    core: XlatCore,
}

impl ProtocolTranslator64 {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ProtocolTranslator64")
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
            "ProtocolTranslator64([PREFIX])\n\n\
             Translates IPv6 packets (starting at the IPv6 header) into IPv4 packets, as\n\
             RFC 7915 section 5 specifies with the choices Click makes. Both addresses\n\
             must be IPv4-mapped (::ffff:a.b.c.d), or, with PREFIX, carry that RFC 6052\n\
             prefix (/32 to /96, e.g. 64:ff9b::/96); the IPv4 addresses are the embedded\n\
             ones. Other packets are dropped, as in Click. TOS is 0; the TTL is the hop\n\
             limit (not decremented, as Click leaves it to the IPv4 routing); an\n\
             unfragmented packet gets ID 0 and Don't Fragment (RFC 2765, which Click\n\
             follows); a fragment gets its ID (low 16 bits), MF and offset from its\n\
             fragment header. Hop-by-hop, destination-options and routing headers with\n\
             no segments left are skipped. TCP and UDP checksums are adjusted for the new\n\
             pseudo-header (UDP checksum 0 stays 0). ICMPv6 echo becomes ICMP echo;\n\
             ICMPv6 errors become ICMP errors with the quoted packet translated too; the\n\
             ICMP checksum is computed afresh.\n\n\
             Dropped and counted: packets shorter than their headers or payload length,\n\
             jumbograms, extension-header chains the walk refuses, addresses without the\n\
             prefix, routing headers with segments left, fragmented ICMPv6, ICMPv6 with\n\
             a bad checksum, ICMPv6 types and codes RFC 7915 does not translate\n\
             (Neighbor Discovery, MLD, unreachable codes above 4, parameter problem code\n\
             2, pointers outside the header; errors quoting an ICMPv6 error).\n\n\
             Differences from Click: Click ignores extension headers (writing protocol 0\n\
             and carrying them as payload), does not translate the quoted packet of an\n\
             ICMPv6 error, writes an MTU of 0 for Packet Too Big and pointer 255 for 24,\n\
             recomputes TCP/UDP checksums, and sends unknown unreachable codes and\n\
             parameter-problem pointers as 0: pronto follows RFC 7915 there (MTU - 20; the\n\
             RFC's pointer table; untranslatable codes dropped). Kept from Click where the\n\
             RFC differs: TOS 0, TTL not decremented, ID 0 with DF, unreachable code 0\n\
             (no route) to ICMP code 0 and code 2 (beyond scope) to code 5 (the RFC maps\n\
             both to 1). Translated packets keep their annotations except the destination\n\
             address annotation, which is cleared.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  PREFIX  IPv6 prefix; RFC 6052 prefix the addresses carry\n          \
             (default ::ffff:0:0/96)\n\
             Handlers:\n  drops (read)         packets dropped\n  \
             drop_details (read)  one `COUNT<TAB>REASON` line per reason\n  \
             prefix (read)        the prefix in use",
        );

    /// Configures a `ProtocolTranslator64`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let prefix = prefix6052(a.read("PREFIX")?)?;
        a.finish()?;
        Ok(Box::new(ProtocolTranslator64 {
            core: XlatCore::new(prefix),
        }))
    }
}

impl Element for ProtocolTranslator64 {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| {
            self.core.translate(p, xlat::v6_to_v4, 20)
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
