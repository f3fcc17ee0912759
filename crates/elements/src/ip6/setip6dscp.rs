//! `SetIP6DSCP`: sets the DSCP bits of the IPv6 traffic class.

use pronto_packet::wire::ipv6::{Ipv6Header, IP6_HEADER_LEN};
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Sets the Differentiated Services Code Point of IPv6 packets.
pub struct SetIP6DSCP {
    dscp: u8,
    drops: u64,
}

/// Parses a DSCP value (0 to 63).
fn parse_dscp(v: u32) -> Result<u8, ConfigError> {
    u8::try_from(v)
        .ok()
        .filter(|d| *d <= 0x3f)
        .ok_or_else(|| ConfigError::new("DSCP: diffserv code point out of range (0 to 63)"))
}

impl SetIP6DSCP {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetIP6DSCP")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["DSCP"])
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "SetIP6DSCP(DSCP)\n\n\
             Sets the Differentiated Services Code Point (the upper 6 bits of the\n\
             traffic class) of IPv6 packets with a marked network header to DSCP\n\
             (0 to 63); the ECN bits, version and flow label are kept. Packets without\n\
             a marked IPv6 header are dropped.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  dscp (read/write)  the code point\n  \
             drops (read)       packets without an IPv6 header",
        );

    /// Configures a `SetIP6DSCP`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let v: u32 = a.read_mp("DSCP")?;
        a.finish()?;
        Ok(Box::new(SetIP6DSCP {
            dscp: parse_dscp(v)?,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let Some(ip) = p.network_data_mut().filter(|d| d.len() >= IP6_HEADER_LEN) else {
            self.drops += 1;
            return None;
        };
        let mut h = Ipv6Header::new_unchecked(ip);
        let tc = (h.traffic_class() & 0x03) | (self.dscp << 2);
        h.set_traffic_class(tc);
        Some(0)
    }
}

impl Element for SetIP6DSCP {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("dscp"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "dscp" => Ok(self.dscp.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "dscp" => {
                let v: u32 = crate::util::parse_value(name, value)?;
                self.dscp = parse_dscp(v).map_err(|e| HandlerError::BadValue(e.message))?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::checkip6header::tests::ip6_packet;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn sets_the_code_point_keeping_ecn_and_flow() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["DSCP"], SetIP6DSCP::configure, "46", 1, 1).expect("ok");
        let mut d = ip6_packet("2001:db8::1", "2001:db8::2", 59, &[]);
        // Traffic class 0x03 (ECN CE), flow label 0xabcde.
        d[0..4].copy_from_slice(&[0x60, 0x3a, 0xbc, 0xde]);
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 40);
        let outs = push(e.as_mut(), &pool, vec![p, pkt(&pool, &d)], 1);
        let mut want = d.clone();
        // DSCP 46 = 0b101110: traffic class 0xbb.
        want[0..4].copy_from_slice(&[0x6b, 0xba, 0xbc, 0xde]);
        assert_eq!(bytes(&outs[0]), vec![want]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        assert_eq!(read(e.as_ref(), "dscp"), "46");
        e.write_handler("dscp", "10").expect("writes");
        assert_eq!(read(e.as_ref(), "dscp"), "10");
        assert!(e.write_handler("dscp", "64").is_err());
        assert!(
            config_err(configure(&["DSCP"], SetIP6DSCP::configure, "64", 1, 1))
                .contains("out of range")
        );
    }
}
