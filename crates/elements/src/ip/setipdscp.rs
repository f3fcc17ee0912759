//! `SetIPDSCP`: sets the Differentiated Services Code Point of IP packets.

use pronto_packet::{Batch, Packet};

use super::rewrite_tos;
use crate::util::ConfText;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Writes a fixed DSCP into the upper six bits of the TOS byte.
pub struct SetIPDSCP {
    conf: ConfText,
    /// The DSCP shifted into place (upper six bits of the TOS byte).
    tos: u8,
    drops: u64,
}

impl SetIPDSCP {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetIPDSCP")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["DSCP"])
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "SetIPDSCP(DSCP)\n\n\
             Expects IP packets (marked IP header). Sets each packet's Differentiated\n\
             Services Code Point (the upper 6 bits of the TOS byte) to DSCP (0-63),\n\
             keeping the ECN bits, and updates the IP checksum incrementally. Packets\n\
             without a marked IP header are dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  dscp (read/write)  the DSCP as configured; a write reconfigures\n  \
             drops (read)  packets without an IP header",
        );

    fn parse(text: &str) -> Result<u8, ConfigError> {
        let mut a = crate::Args::new(text, &["DSCP"]);
        let v: u32 = a.read_mp("DSCP")?;
        a.finish()?;
        if v > 0x3f {
            return Err(ConfigError::new(format!(
                "DSCP: diffserv code point out of range (0-63), found `{v}`"
            )));
        }
        Ok((v as u8) << 2)
    }

    /// Configures a `SetIPDSCP`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(SetIPDSCP {
            tos: Self::parse(ctx.config)?,
            conf: ConfText::new(ctx.config),
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let dscp = self.tos;
        if rewrite_tos(p, |t| (t & 3) | dscp) {
            Some(0)
        } else {
            self.drops += 1;
            None
        }
    }
}

impl Element for SetIPDSCP {
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
            "dscp" => Ok(self.conf.read("DSCP", Some(0))),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        if name != "dscp" {
            return Err(HandlerError::NoSuchHandler(name.into()));
        }
        let conf = self.conf.with("DSCP", Some(0), value);
        self.tos = Self::parse(&conf.text()).map_err(|e| HandlerError::BadValue(e.message))?;
        self.conf = conf;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    #[test]
    fn sets_dscp_keeps_ecn() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(&["DSCP"], SetIPDSCP::configure, "DSCP 10", 1, 1).expect("ok");
        let mut d = ip_packet([1, 0, 0, 1], [1, 0, 0, 2], 4);
        d[1] = 0xff;
        d[10..12].copy_from_slice(&[0, 0]);
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 20);
        let outs = push(e.as_mut(), &pool, vec![p, pkt(&pool, &d)], 1);
        assert_eq!(outs[0].len(), 1);
        assert_eq!(outs[0][0].data()[1], (10 << 2) | 3);
        assert_eq!(checksum(&outs[0][0].data()[..20]), 0);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        assert_eq!(read(e.as_ref(), "dscp"), "10");
        e.write_handler("dscp", "2").expect("write");
        assert_eq!(read(e.as_ref(), "dscp"), "2");
        assert!(e.write_handler("dscp", "64").is_err());
        assert_eq!(read(e.as_ref(), "dscp"), "2");
        let r = configure(&["DSCP"], SetIPDSCP::configure, "64", 1, 1);
        assert_eq!(
            config_err(r),
            "DSCP: diffserv code point out of range (0-63), found `64`"
        );
    }
}
