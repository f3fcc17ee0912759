//! `StoreEtherAddress`: writes an Ethernet address into the packet.

use pronto_packet::{Batch, Packet};

use super::getetheraddress::parse_ether_offset;
use super::unparse_ether;
use crate::ip::getipaddress::parse_anno;
use crate::util::parse_value;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError,
    HandlerInfo, Out, Spec, FIELD_OTHER,
};

/// Stores an Ethernet address (fixed, or from an annotation) at an offset.
pub struct StoreEtherAddress {
    addr: [u8; 6],
    anno: Option<usize>,
    offset: usize,
    out1: bool,
    drops: u64,
}

impl StoreEtherAddress {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StoreEtherAddress")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["ADDR", "OFFSET", "ANNO"])
        .profile(ActionProfile::NONE.writes(FIELD_OTHER).dropping())
        .doc(
            "StoreEtherAddress(ADDR, OFFSET [, keyword ANNO])\n\n\
             Writes the Ethernet address ADDR, or instead the 6-byte annotation\n\
             ANNO (give exactly one), into the packet at OFFSET (a number, or `src'\n\
             for 6 and `dst' for 0). A packet too short goes to output 1 (dropped\n\
             and counted without one).\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  addr (read/write)  ADDR\n  drops (read)",
        );

    /// Configures a `StoreEtherAddress`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let addr: Option<EtherAddr> = a.read_p("ADDR")?;
        let off: String = a.read_mp("OFFSET")?;
        let anno: Option<String> = a.read("ANNO")?;
        a.finish()?;
        if addr.is_some() == anno.is_some() {
            return Err(ConfigError::new("must specify exactly one of ADDR/ANNO"));
        }
        let anno = match anno {
            Some(s) => Some(parse_anno("ANNO", &s, 6)?),
            None => None,
        };
        Ok(Box::new(StoreEtherAddress {
            addr: addr.unwrap_or_default().0,
            anno,
            offset: parse_ether_offset(&off)?,
            out1: ctx.noutputs > 1,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let o = self.offset;
        if o.saturating_add(6) > p.len() {
            if self.out1 {
                return Some(1);
            }
            self.drops += 1;
            return None;
        }
        let addr = match self.anno {
            Some(a) => {
                let mut v = [0u8; 6];
                v.copy_from_slice(&p.anno_bytes()[a..a + 6]);
                v
            }
            None => self.addr,
        };
        p.data_mut()[o..o + 6].copy_from_slice(&addr);
        Some(0)
    }
}

impl Element for StoreEtherAddress {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("addr"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "addr" => Ok(unparse_ether(&self.addr)),
            "drops" => Ok(self.drops.to_string()),
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
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    const KW: &[&str] = &["ADDR", "OFFSET", "ANNO"];

    #[test]
    fn stores() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            configure(KW, StoreEtherAddress::configure, "1:2:3:4:5:6, dst", 1, 2).expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![pkt(&pool, &[0; 8]), pkt(&pool, &[0; 5])],
            2,
        );
        assert_eq!(outs[0][0].data(), &[1, 2, 3, 4, 5, 6, 0, 0]);
        assert_eq!(outs[1].len(), 1);
        let mut e = configure(
            KW,
            StoreEtherAddress::configure,
            "OFFSET src, ANNO 30",
            1,
            1,
        )
        .expect("ok");
        let mut p = pkt(&pool, &[0; 12]);
        p.anno_bytes_mut()[30..36].copy_from_slice(&[9; 6]);
        let outs = push(e.as_mut(), &pool, vec![p, pkt(&pool, &[0; 11])], 1);
        assert_eq!(&outs[0][0].data()[6..], &[9; 6]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        let r = configure(KW, StoreEtherAddress::configure, "OFFSET 0", 1, 1);
        assert_eq!(config_err(r), "must specify exactly one of ADDR/ANNO");
    }
}
