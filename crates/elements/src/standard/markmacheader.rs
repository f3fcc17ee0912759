//! `MarkMACHeader`: sets the link-layer header annotation.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Marks the link header at OFFSET bytes into the packet; with LENGTH,
/// the network header follows it.
pub struct MarkMACHeader {
    offset: isize,
    length: usize,
}

impl MarkMACHeader {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("MarkMACHeader")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["OFFSET", "LENGTH"])
        .profile(ActionProfile::NONE)
        .doc(
            "MarkMACHeader([OFFSET, LENGTH])\n\n\
             Marks packets as having a link-layer (MAC) header starting OFFSET bytes\n\
             into the packet (default 0). If LENGTH is given and not zero, the\n\
             network header is marked to start LENGTH bytes after it.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `MarkMACHeader`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset: u32 = a.read_p("OFFSET")?.unwrap_or(0);
        let length: u32 = a.read_p("LENGTH")?.unwrap_or(0);
        a.finish()?;
        Ok(Box::new(MarkMACHeader {
            offset: offset as isize,
            length: length as usize,
        }))
    }
}

impl Element for MarkMACHeader {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            p.set_mac_header(self.offset);
            if self.length > 0 {
                let th = p.transport_header_offset();
                let nh = self.offset + self.length as isize;
                p.set_network_header(nh, 0);
                if let Some(th) = th {
                    p.set_transport_header(th);
                }
            }
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn marks_the_link_header() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            MarkMACHeader::SPEC.keywords,
            MarkMACHeader::configure,
            "2, 14",
            1,
            1,
        )
        .expect("configures");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[0; 40])], 1);
        assert_eq!(out[0][0].mac_header_offset(), Some(2));
        assert_eq!(out[0][0].network_header_offset(), Some(16));
        let mut e = t::configure(
            MarkMACHeader::SPEC.keywords,
            MarkMACHeader::configure,
            "",
            1,
            1,
        )
        .expect("configures");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[0; 4])], 1);
        assert_eq!(out[0][0].mac_header_offset(), Some(0));
    }
}
