//! `SetIP6Address`: sets the destination IPv6 address annotation.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip6, Out, Spec,
};

/// Sets `DST_IP6_ANNO` to a fixed address.
pub struct SetIP6Address {
    addr: Ip6,
}

impl SetIP6Address {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetIP6Address")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["IPADDR"])
        .profile(ActionProfile::NONE)
        .doc(
            "SetIP6Address(IPADDR)\n\n\
             Sets the destination IPv6 address annotation of every packet to IPADDR.\n\
             The packet data is not changed.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  addr (read/write)  the address",
        );

    /// Configures a `SetIP6Address`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let addr: Ip6 = a.read_mp("IPADDR")?;
        a.finish()?;
        Ok(Box::new(SetIP6Address { addr }))
    }
}

impl Element for SetIP6Address {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            p.set_dst_ip6_anno(self.addr.0);
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("addr")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "addr" => Ok(self.addr.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "addr" => {
                self.addr = crate::util::parse_value(name, value)?;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn sets_the_annotation() {
        let pool = Pool::new(64).expect("pool");
        let mut e =
            configure(&["IPADDR"], SetIP6Address::configure, "fe80::1:2", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[1, 2, 3])], 1);
        let mut want = [0u8; 16];
        want[0] = 0xfe;
        want[1] = 0x80;
        want[13] = 1;
        want[15] = 2;
        assert_eq!(outs[0][0].dst_ip6_anno(), want);
        assert_eq!(outs[0][0].data(), &[1, 2, 3]);
        assert_eq!(read(e.as_ref(), "addr"), "fe80::1:2");
        e.write_handler("addr", "::1").expect("writes");
        assert_eq!(read(e.as_ref(), "addr"), "::0.0.0.1");
        assert!(e.write_handler("addr", "1.2.3.4").is_err());
        assert!(config_err(configure(
            &["IPADDR"],
            SetIP6Address::configure,
            "nope",
            1,
            1
        ))
        .contains("IPADDR"));
    }
}
