//! `DecIP6HLIM`: decrements the IPv6 hop limit; expired packets leave on
//! output 1.

use pronto_packet::wire::ipv6::IP6_HEADER_LEN;
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Offset of the hop limit in the IPv6 header.
const HLIM: usize = 7;

/// Decrements hop limits.
pub struct DecIP6HLIM {
    drops: u64,
    out1: bool,
}

impl DecIP6HLIM {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DecIP6HLIM")
        .ports("1/1-2")
        .processing("a/ah")
        .profile(ActionProfile::reads(FIELD_OTHER).writes(FIELD_OTHER).dropping())
        .doc(
            "DecIP6HLIM()\n\n\
             Expects packets with a marked IPv6 header (CheckIP6Header, MarkIP6Header).\n\
             If the hop limit is 0 or 1 the packet goes to output 1 (usually an\n\
             ICMP6Error generating Time Exceeded) or is dropped without one; otherwise\n\
             the hop limit is decremented and the packet goes to output 0. IPv6 has no\n\
             header checksum, so nothing else changes. Packets without a marked IPv6\n\
             header (40 bytes) are dropped.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (output 1 push).\n\
             Handlers:\n  drops (read)  packets not forwarded on output 0 (expired, or\n                \
             without an IPv6 header)",
        );

    /// Configures a `DecIP6HLIM`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(DecIP6HLIM {
            drops: 0,
            out1: ctx.noutputs >= 2,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let Some(ip) = p.network_data_mut().filter(|d| d.len() >= IP6_HEADER_LEN) else {
            self.drops += 1;
            return None;
        };
        if ip[HLIM] <= 1 {
            self.drops += 1;
            return self.out1.then_some(1);
        }
        ip[HLIM] -= 1;
        Some(0)
    }
}

impl Element for DecIP6HLIM {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("ttl_expired", self.drops);
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

    fn marked(pool: &Pool, d: &[u8]) -> Packet {
        let mut p = pkt(pool, d);
        p.set_network_header(0, 40);
        p
    }

    #[test]
    fn decrements_and_expires() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&[], DecIP6HLIM::configure, "", 1, 2).expect("ok");
        let live = ip6_packet("2001:db8::1", "2001:db8::2", 59, &[9]);
        let mut one = live.clone();
        one[7] = 1;
        let mut zero = live.clone();
        zero[7] = 0;
        let mut max = live.clone();
        max[7] = 255;
        let ps = vec![
            marked(&pool, &live),
            marked(&pool, &one),
            marked(&pool, &zero),
            marked(&pool, &max),
            pkt(&pool, &live),
        ];
        let outs = push(e.as_mut(), &pool, ps, 2);
        let mut want = live.clone();
        want[7] = 63;
        let mut want_max = live.clone();
        want_max[7] = 254;
        assert_eq!(bytes(&outs[0]), vec![want, want_max]);
        assert_eq!(bytes(&outs[1]), vec![one, zero]);
        assert_eq!(read(e.as_ref(), "drops"), "3");
    }

    #[test]
    fn one_output_drops_expired() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&[], DecIP6HLIM::configure, "", 1, 1).expect("ok");
        let mut d = ip6_packet("2001:db8::1", "2001:db8::2", 59, &[]);
        d[7] = 1;
        let outs = push(e.as_mut(), &pool, vec![marked(&pool, &d)], 1);
        assert!(outs[0].is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }
}
