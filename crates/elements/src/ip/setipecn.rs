//! `SetIPECN`: sets the ECN field of IP packets.

use pronto_packet::{Batch, Packet};

use super::rewrite_tos;
use crate::util::ConfText;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Writes a fixed ECN value into the lower two bits of the TOS byte.
pub struct SetIPECN {
    conf: ConfText,
    ecn: u8,
    drops: u64,
}

impl SetIPECN {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetIPECN")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["ECN"])
        .profile(
            ActionProfile::reads(FIELD_OTHER)
                .writes(FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "SetIPECN(ECN)\n\n\
             Expects IP packets (marked IP header). Sets each packet's ECN field (the\n\
             lower 2 bits of the TOS byte) to ECN: 0-3, `no' or `-' (0), `ect1' or\n\
             `ECT(1)' (1), `ect2' or `ECT(0)' (2), `ce' or `CE' (3); updates the IP\n\
             checksum incrementally. Packets without a marked IP header are dropped\n\
             and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  ecn (read/write)  the ECN as configured; a write reconfigures\n  \
             drops (read)  packets without an IP header",
        );

    fn parse(text: &str) -> Result<u8, ConfigError> {
        let mut a = crate::Args::new(text, &["ECN"]);
        let v: String = a.read_mp("ECN")?;
        a.finish()?;
        Ok(match v.as_str() {
            "0" | "no" | "-" => 0,
            "1" | "ect1" | "ECT(1)" => 1,
            "2" | "ect2" | "ECT(0)" => 2,
            "3" | "ce" | "CE" => 3,
            _ => {
                return Err(ConfigError::new(format!(
                    "ECN: expected 0-3, `no', `ect1', `ect2' or `ce', found `{v}`"
                )))
            }
        })
    }

    /// Configures a `SetIPECN`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(SetIPECN {
            ecn: Self::parse(ctx.config)?,
            conf: ConfText::new(ctx.config),
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let ecn = self.ecn;
        if rewrite_tos(p, |t| (t & 0xfc) | ecn) {
            Some(0)
        } else {
            self.drops += 1;
            None
        }
    }
}

impl Element for SetIPECN {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("ecn"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "ecn" => Ok(self.conf.read("ECN", Some(0))),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        if name != "ecn" {
            return Err(HandlerError::NoSuchHandler(name.into()));
        }
        let conf = self.conf.with("ECN", Some(0), value);
        self.ecn = Self::parse(&conf.text()).map_err(|e| HandlerError::BadValue(e.message))?;
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
    fn sets_ecn() {
        let pool = Pool::new(8).expect("pool");
        for (arg, want) in [("ce", 0xab), ("ECT(0)", 0xaa), ("ect1", 0xa9), ("-", 0xa8)] {
            let mut e = configure(&["ECN"], SetIPECN::configure, arg, 1, 1).expect("ok");
            let mut d = ip_packet([1, 0, 0, 1], [1, 0, 0, 2], 0);
            d[1] = 0xa9;
            d[10..12].copy_from_slice(&[0, 0]);
            let c = checksum(&d[..20]);
            d[10..12].copy_from_slice(&c.to_be_bytes());
            let mut p = pkt(&pool, &d);
            p.set_network_header(0, 20);
            let outs = push(e.as_mut(), &pool, vec![p], 1);
            assert_eq!(outs[0][0].data()[1], want, "{arg}");
            assert_eq!(checksum(&outs[0][0].data()[..20]), 0);
            assert_eq!(read(e.as_ref(), "ecn"), arg);
        }
        let mut e = configure(&["ECN"], SetIPECN::configure, "ECN 1", 1, 1).expect("ok");
        e.write_handler("ecn", "3").expect("write");
        assert_eq!(read(e.as_ref(), "ecn"), "3");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[0x45])], 1);
        assert!(outs[0].is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "1");
        let r = configure(&["ECN"], SetIPECN::configure, "maybe", 1, 1);
        assert!(config_err(r).starts_with("ECN: expected 0-3"));
    }
}
