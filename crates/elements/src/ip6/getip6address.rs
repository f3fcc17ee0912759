//! `GetIP6Address`: copies an IPv6 address from the packet into the
//! destination IPv6 address annotation.

use pronto_packet::wire::ipv6::addr16;
use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_DST_IP};

/// Sets `DST_IP6_ANNO` from 16 packet bytes at a fixed offset.
pub struct GetIP6Address {
    offset: usize,
}

impl GetIP6Address {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("GetIP6Address")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["OFFSET"])
        .profile(ActionProfile::reads(FIELD_DST_IP))
        .doc(
            "GetIP6Address(OFFSET)\n\n\
             Copies the 16 bytes at OFFSET (from the start of the packet data) into the\n\
             destination IPv6 address annotation; 24 fetches the destination of an IPv6\n\
             packet without a link header, 38 with an Ethernet header. A packet too\n\
             short to hold them passes with its annotation unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `GetIP6Address`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset = a.read_mp::<u32>("OFFSET")? as usize;
        a.finish()?;
        Ok(Box::new(GetIP6Address { offset }))
    }
}

impl Element for GetIP6Address {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let off = self.offset;
        for p in batch.iter_mut() {
            if p.len() >= off + 16 {
                let a = addr16(p.data(), off);
                p.set_dst_ip6_anno(a);
            }
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::checkip6header::tests::ip6_packet;
    use crate::standard::test_support::{config_err, configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn copies_the_destination() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["OFFSET"], GetIP6Address::configure, "24", 1, 1).expect("ok");
        let d = ip6_packet("2001:db8::1", "2001:db8::2:3", 59, &[]);
        let mut short = pkt(&pool, &d[..39]);
        short.set_dst_ip6_anno([7; 16]);
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &d), short], 1);
        let want = pronto_lang::args::parse_ip6("2001:db8::2:3").expect("addr");
        assert_eq!(outs[0][0].dst_ip6_anno(), want);
        assert_eq!(outs[0][1].dst_ip6_anno(), [7; 16]);
        assert_eq!(outs[0][0].data(), &d[..]);
        assert!(
            config_err(configure(&["OFFSET"], GetIP6Address::configure, "", 1, 1))
                .contains("OFFSET")
        );
    }
}
