//! `DecIPTTL`: decrements the IP time-to-live; expired packets leave on
//! output 1.

use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_DST_IP, FIELD_OTHER,
};

/// Decrements TTLs, updating the checksum incrementally.
pub struct DecIPTTL {
    active: bool,
    multicast: bool,
    /// Expired packets (Click's `drops`, also those sent to output 1).
    drops: u64,
    /// Packets without a 20-byte IP header, dropped.
    malformed: u64,
    out1: bool,
}

impl DecIPTTL {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DecIPTTL")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["ACTIVE", "MULTICAST"])
        .profile(
            ActionProfile::reads(FIELD_OTHER | FIELD_DST_IP)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "DecIPTTL([keywords ACTIVE, MULTICAST])\n\n\
             Expects packets with a marked IP header. If the TTL is 1 or 0 the packet\n\
             goes to output 1 (or is dropped without one); otherwise the TTL is\n\
             decremented, the checksum updated incrementally, and the packet goes to\n\
             output 0. Packets without a marked IP header are dropped.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs.\n\
             Keywords:\n  ACTIVE     boolean; if false, pass packets unchanged (default true)\n  \
             MULTICAST  boolean; if false, leave multicast packets alone (default true)\n\
             Handlers:\n  drops (read)  expired packets\n  active (read/write)",
        );

    /// Configures a `DecIPTTL`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let active = a.read_or("ACTIVE", true)?;
        let multicast = a.read_or("MULTICAST", true)?;
        a.finish()?;
        Ok(Box::new(DecIPTTL {
            active,
            multicast,
            drops: 0,
            malformed: 0,
            out1: ctx.noutputs >= 2,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        if !self.active {
            return Some(0);
        }
        let nh = match p.network_header_offset() {
            Some(o) if o >= 0 && o as usize + 20 <= p.len() => o as usize,
            _ => {
                self.malformed += 1;
                return None;
            }
        };
        let mut ip = Ipv4Packet::new_unchecked(&mut p.data_mut()[nh..]);
        if !self.multicast && ip.dst_addr()[0] & 0xf0 == 0xe0 {
            return Some(0);
        }
        let ttl = ip.ttl();
        if ttl <= 1 {
            self.drops += 1;
            return self.out1.then_some(1);
        }
        ip.decrement_ttl();
        Some(0)
    }
}

impl Element for DecIPTTL {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("ttl_expired", self.drops);
        c.drop("malformed", self.malformed);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops"), HandlerInfo::rw("active")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            "active" => Ok(self.active.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "active" => {
                self.active = crate::util::parse_value(name, value)?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    fn marked(pool: &pronto_packet::Pool, d: &[u8]) -> Packet {
        let mut p = pkt(pool, d);
        p.set_network_header(0, 20);
        p
    }

    #[test]
    fn decrements_and_expires() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["ACTIVE", "MULTICAST"], DecIPTTL::configure, "", 1, 2).expect("ok");
        let live = ip_packet([1, 1, 1, 1], [2, 2, 2, 2], 0); // TTL 64
        let mut dead = live.clone();
        dead[8] = 1;
        let outs = push(
            e.as_mut(),
            &pool,
            vec![marked(&pool, &live), marked(&pool, &dead)],
            2,
        );
        let o = outs[0][0].data();
        assert_eq!(o[8], 63);
        assert_eq!(checksum(&o[..20]), 0);
        assert_eq!(outs[1].len(), 1);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        // A packet without a marked IP header is dropped: counted as
        // malformed, not in `drops` (expired only, as Click's).
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &live)], 2);
        assert!(outs.iter().all(Vec::is_empty));
        assert_eq!(read(e.as_ref(), "drops"), "1");
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("ttl_expired", 1), ("malformed", 1)]
        );
        // Multicast left alone when MULTICAST false.
        let mut e = configure(
            &["ACTIVE", "MULTICAST"],
            DecIPTTL::configure,
            "MULTICAST false",
            1,
            1,
        )
        .expect("ok");
        let m = ip_packet([1, 1, 1, 1], [224, 0, 0, 5], 0);
        let outs = push(e.as_mut(), &pool, vec![marked(&pool, &m)], 1);
        assert_eq!(outs[0][0].data()[8], 64);
    }

    #[test]
    fn checksum_ffff_edge() {
        // Old checksum 0xFFFF-adjacent values still verify after the update.
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["ACTIVE", "MULTICAST"], DecIPTTL::configure, "", 1, 1).expect("ok");
        for ttl in [2u8, 100, 255] {
            let mut d = ip_packet([0, 0, 0, 0], [0, 0, 0, 0], 0);
            d[8] = ttl;
            d[10] = 0;
            d[11] = 0;
            let c = checksum(&d[..20]);
            d[10..12].copy_from_slice(&c.to_be_bytes());
            let outs = push(e.as_mut(), &pool, vec![marked(&pool, &d)], 1);
            assert_eq!(checksum(&outs[0][0].data()[..20]), 0, "ttl {ttl}");
        }
    }
}
