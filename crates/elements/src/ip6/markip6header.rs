//! `MarkIP6Header`: sets the IPv6 header annotation.

use pronto_packet::wire::ipv6::IP6_HEADER_LEN;
use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Marks a 40-byte IPv6 header at a fixed offset, without checking it.
pub struct MarkIP6Header {
    offset: usize,
}

impl MarkIP6Header {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("MarkIP6Header")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["OFFSET"])
        .profile(ActionProfile::NONE)
        .doc(
            "MarkIP6Header([OFFSET])\n\n\
             Marks packets as IPv6 packets by setting the network header annotation:\n\
             the IPv6 header starts OFFSET bytes in (default 0) and is 40 bytes long\n\
             (the transport header annotation follows it). Checks nothing and does not\n\
             trim (see CheckIP6Header).\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `MarkIP6Header`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset = a.read_p::<u32>("OFFSET")?.unwrap_or(0) as usize;
        a.finish()?;
        Ok(Box::new(MarkIP6Header { offset }))
    }
}

impl Element for MarkIP6Header {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            p.set_network_header(self.offset as isize, IP6_HEADER_LEN);
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
    fn marks_forty_bytes_at_offset() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["OFFSET"], MarkIP6Header::configure, "14", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[0u8; 60])], 1);
        assert_eq!(outs[0][0].network_header_offset(), Some(14));
        assert_eq!(outs[0][0].network_header_len(), Some(40));
        assert_eq!(outs[0][0].transport_header_offset(), Some(54));
        assert_eq!(outs[0][0].data(), &[0u8; 60][..]);
    }
}
