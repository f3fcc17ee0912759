//! `IP6Mirror`: swaps IPv6 source and destination (and TCP/UDP ports).

use pronto_packet::wire::ipv6::{next_header, Ipv6Header, IP6_HEADER_LEN};
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELDS_5TUPLE,
};

/// Reverses IPv6 packets' addresses and, for TCP and UDP, their ports.
pub struct IP6Mirror {
    drops: u64,
}

impl IP6Mirror {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IP6Mirror")
        .ports("1/1")
        .processing("a/a")
        .profile(
            ActionProfile::reads(FIELDS_5TUPLE)
                .writes(FIELDS_5TUPLE)
                .dropping(),
        )
        .doc(
            "IP6Mirror\n\n\
             Swaps the source and destination addresses of IPv6 packets with a marked\n\
             network header. When the next header is TCP (6) or UDP (17) and 8 bytes of\n\
             it follow the transport header annotation, the source and destination\n\
             ports are swapped too. Checksums need no change. Packets without a marked\n\
             IPv6 header are dropped.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)  packets without an IPv6 header",
        );

    /// Configures an `IP6Mirror`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(IP6Mirror { drops: 0 }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let th = p.transport_header_offset();
        let Some(ip) = p.network_data_mut().filter(|d| d.len() >= IP6_HEADER_LEN) else {
            self.drops += 1;
            return None;
        };
        let mut h = Ipv6Header::new_unchecked(&mut *ip);
        let (src, dst, nh) = (h.src_addr(), h.dst_addr(), h.next_header());
        h.set_src_addr(dst);
        h.set_dst_addr(src);
        if nh == next_header::TCP || nh == next_header::UDP {
            let th = th.and_then(|t| usize::try_from(t).ok());
            if let Some(t) = th {
                let d = p.data_mut();
                if d.len() >= t + 8 {
                    let sport = [d[t], d[t + 1]];
                    d.copy_within(t + 2..t + 4, t);
                    d[t + 2..t + 4].copy_from_slice(&sport);
                }
            }
        }
        Some(0)
    }
}

impl Element for IP6Mirror {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
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
    use crate::standard::test_support::{bytes, configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn swaps_addresses_and_ports() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&[], IP6Mirror::configure, "", 1, 1).expect("ok");
        let udp = [0x04, 0xd2, 0x00, 0x35, 0x00, 0x08, 0x12, 0x34];
        let d = ip6_packet("2001:db8::1", "2001:db8::2", 17, &udp);
        let icmp = ip6_packet("2001:db8::1", "2001:db8::2", 58, &udp);
        let ps: Vec<Packet> = [&d, &icmp, &d[..46].to_vec()]
            .iter()
            .map(|x| {
                let mut p = pkt(&pool, x);
                p.set_network_header(0, 40);
                p
            })
            .chain(std::iter::once(pkt(&pool, &d)))
            .collect();
        let outs = push(e.as_mut(), &pool, ps, 1);
        let want = ip6_packet(
            "2001:db8::2",
            "2001:db8::1",
            17,
            &[0x00, 0x35, 0x04, 0xd2, 0x00, 0x08, 0x12, 0x34],
        );
        let want_icmp = ip6_packet("2001:db8::2", "2001:db8::1", 58, &udp);
        let mut want_short = ip6_packet("2001:db8::2", "2001:db8::1", 17, &udp);
        want_short.truncate(46);
        assert_eq!(bytes(&outs[0]), vec![want, want_icmp, want_short]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }
}
