//! `MarkIPHeader`: sets the IP header annotation.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Marks the IP header at a fixed offset, without checking it.
pub struct MarkIPHeader {
    offset: usize,
}

impl MarkIPHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("MarkIPHeader")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["OFFSET"])
        .profile(ActionProfile::NONE)
        .doc(
            "MarkIPHeader([OFFSET])\n\n\
             Marks packets as IP packets by setting the IP header annotation: the IP\n\
             header starts OFFSET bytes in (default 0) and is IHL*4 bytes long. Checks\n\
             nothing, does not trim and does not set the destination annotation (see\n\
             CheckIPHeader).\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `MarkIPHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset = a.read_p::<u32>("OFFSET")?.unwrap_or(0) as usize;
        a.finish()?;
        Ok(Box::new(MarkIPHeader { offset }))
    }
}

impl Element for MarkIPHeader {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let off = self.offset;
        for p in batch.iter_mut() {
            let hl = p.data().get(off).map_or(0, |b| ((b & 15) as usize) << 2);
            p.set_network_header(off as isize, hl);
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn marks() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["OFFSET"], MarkIPHeader::configure, "2", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[0, 0, 0x46, 0, 0])], 1);
        assert_eq!(outs[0][0].network_header_offset(), Some(2));
        assert_eq!(outs[0][0].network_header_len(), Some(24));
    }
}
