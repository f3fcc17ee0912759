//! `GetEtherAddress`: copies an Ethernet address from the packet into an
//! annotation.

use pronto_packet::{Batch, Packet};

use crate::ip::getipaddress::parse_anno;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Reads an Ethernet-address offset: a number, `src` (6) or `dst` (0).
pub(crate) fn parse_ether_offset(v: &str) -> Result<usize, ConfigError> {
    match v.to_ascii_lowercase().as_str() {
        "src" => Ok(6),
        "dst" => Ok(0),
        _ => pronto_lang::args::parse_u32(v)
            .map(|o| o as usize)
            .map_err(|_| ConfigError::new(format!("OFFSET: type mismatch: bad OFFSET `{v}`"))),
    }
}

/// Stores 6 packet bytes in an annotation.
pub struct GetEtherAddress {
    anno: usize,
    offset: usize,
    out1: bool,
    drops: u64,
}

impl GetEtherAddress {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("GetEtherAddress")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["ANNO", "OFFSET"])
        .profile(ActionProfile::reads(FIELD_OTHER).dropping())
        .doc(
            "GetEtherAddress(ANNO, OFFSET)\n\n\
             Copies the 6 bytes at OFFSET (a number, or `src' for 6 and `dst' for 0,\n\
             the addresses of an Ethernet header) into the 6-byte annotation ANNO (a\n\
             byte offset into the annotation area or an annotation name). A packet\n\
             too short goes to output 1 (dropped and counted without one).\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures a `GetEtherAddress`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let anno: String = a.read_mp("ANNO")?;
        let off: String = a.read_mp("OFFSET")?;
        a.finish()?;
        Ok(Box::new(GetEtherAddress {
            anno: parse_anno("ANNO", &anno, 6)?,
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
        let mut addr = [0u8; 6];
        addr.copy_from_slice(&p.data()[o..o + 6]);
        p.anno_bytes_mut()[self.anno..self.anno + 6].copy_from_slice(&addr);
        Some(0)
    }
}

impl Element for GetEtherAddress {
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
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn copies_into_annotation() {
        let pool = Pool::new(8).expect("pool");
        let kw = &["ANNO", "OFFSET"];
        let mut e = configure(kw, GetEtherAddress::configure, "24, src", 1, 1).expect("ok");
        let frame = [9, 9, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 8, 0];
        let outs = push(
            e.as_mut(),
            &pool,
            vec![pkt(&pool, &frame), pkt(&pool, &frame[..11])],
            1,
        );
        assert_eq!(outs[0].len(), 1);
        assert_eq!(&outs[0][0].anno_bytes()[24..30], &[1, 2, 3, 4, 5, 6]);
        assert_eq!(read(e.as_ref(), "drops"), "1");
        let r = configure(kw, GetEtherAddress::configure, "44, 0", 1, 1);
        assert_eq!(config_err(r), "ANNO: expected annotation, found `44`");
    }
}
