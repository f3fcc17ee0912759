//! `SetEtherAddress`: sets an Ethernet-address annotation.

use pronto_packet::Batch;

use super::unparse_ether;
use crate::ip::getipaddress::parse_anno;
use crate::util::parse_value;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError, HandlerInfo, Out, Spec,
};

/// Writes a fixed Ethernet address into a 6-byte annotation.
pub struct SetEtherAddress {
    addr: [u8; 6],
    anno: usize,
}

impl SetEtherAddress {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SetEtherAddress")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["ADDR", "ANNO"])
        .profile(ActionProfile::NONE)
        .doc(
            "SetEtherAddress(ADDR, ANNO)\n\n\
             Sets each packet's 6-byte annotation ANNO (a byte offset into the\n\
             annotation area or an annotation name) to the Ethernet address ADDR.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  addr (read/write)  ADDR",
        );

    /// Configures a `SetEtherAddress`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let addr: EtherAddr = a.read_mp("ADDR")?;
        let anno: String = a.read_mp("ANNO")?;
        a.finish()?;
        Ok(Box::new(SetEtherAddress {
            addr: addr.0,
            anno: parse_anno("ANNO", &anno, 6)?,
        }))
    }
}

impl Element for SetEtherAddress {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            p.anno_bytes_mut()[self.anno..self.anno + 6].copy_from_slice(&self.addr);
        }
        out.pass(0);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("addr")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "addr" => Ok(unparse_ether(&self.addr)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "addr" => {
                self.addr = parse_value::<EtherAddr>("addr", value)?.0;
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
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            &["ADDR", "ANNO"],
            SetEtherAddress::configure,
            "0:1:2:3:4:5, 40",
            1,
            1,
        )
        .expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[1])], 1);
        assert_eq!(&outs[0][0].anno_bytes()[40..46], &[0, 1, 2, 3, 4, 5]);
        e.write_handler("addr", "a:b:c:d:e:f").expect("write");
        assert_eq!(read(e.as_ref(), "addr"), "0A-0B-0C-0D-0E-0F");
    }
}
