//! `SetIPAddress`: sets the destination IP address annotation to a fixed
//! address.

use pronto_packet::Batch;

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, Spec,
};

/// Sets an address annotation to a fixed address.
pub struct SetIPAddress {
    ip: [u8; 4],
    anno: usize,
}

impl SetIPAddress {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetIPAddress")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["ANNO"])
        .profile(ActionProfile::NONE)
        .doc(
            "SetIPAddress(ADDR [, ANNO])\n\n\
             Sets the destination IP address annotation (or the annotation ANNO) of\n\
             every packet to ADDR.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  addr (read/write)  the address",
        );

    /// Configures a `SetIPAddress`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ip = a.read_mp::<Ip4>("IPADDR")?;
        let anno = match a.read::<String>("ANNO")? {
            Some(v) => crate::ip::getipaddress::parse_anno("ANNO", &v, 4)?,
            None => pronto_packet::DST_IP_ANNO_OFFSET,
        };
        a.finish()?;
        Ok(Box::new(SetIPAddress { ip: ip.0, anno }))
    }
}

impl Element for SetIPAddress {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            p.anno_bytes_mut()[self.anno..self.anno + 4].copy_from_slice(&self.ip);
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("addr")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "addr" => Ok(Ip4(self.ip).to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "addr" => {
                self.ip = crate::util::parse_value::<Ip4>(name, value)?.0;
                Ok(())
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn sets_annotation() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["ANNO"], SetIPAddress::configure, "10.0.0.9", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[1, 2, 3])], 1);
        assert_eq!(outs[0][0].dst_ip_anno(), [10, 0, 0, 9]);
        e.write_handler("addr", "1.2.3.4").expect("writes");
        assert_eq!(read(e.as_ref(), "addr"), "1.2.3.4");
        assert!(e.write_handler("addr", "1.2.3").is_err());
    }
}
