//! `EtherRewrite`: sets the Ethernet source and destination addresses.

use pronto_packet::{Batch, Packet};

use crate::util::parse_value;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError,
    HandlerInfo, Out, Spec, FIELD_OTHER,
};

/// Rewrites the Ethernet addresses of each packet's link header.
pub struct EtherRewrite {
    /// Destination then source address.
    addrs: [u8; 12],
}

impl EtherRewrite {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("EtherRewrite")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["SRC", "DST"])
        .profile(ActionProfile::NONE.writes(FIELD_OTHER))
        .doc(
            "EtherRewrite(SRC, DST)\n\n\
             Rewrites the source and destination addresses of each packet's\n\
             Ethernet header (at the link header annotation, or the start of the\n\
             data when none is set), leaving the EtherType alone. Only the bytes\n\
             inside the packet are written.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  src (read/write), dst (read/write)",
        );

    /// Configures an `EtherRewrite`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let src: EtherAddr = a.read_mp("SRC")?;
        let dst: EtherAddr = a.read_mp("DST")?;
        a.finish()?;
        let mut addrs = [0u8; 12];
        addrs[..6].copy_from_slice(&dst.0);
        addrs[6..].copy_from_slice(&src.0);
        Ok(Box::new(EtherRewrite { addrs }))
    }

    #[inline]
    fn action(&self, p: &mut Packet) -> Option<usize> {
        let off = p.mac_header_offset().unwrap_or(0);
        if off >= 0 {
            let d = p.data_mut();
            let off = (off as usize).min(d.len());
            let n = (d.len() - off).min(12);
            d[off..off + n].copy_from_slice(&self.addrs[..n]);
        } else {
            // The link header lies in front of the data: expose it, write,
            // and hide it again.
            let back = off.unsigned_abs();
            if let Some(h) = p.push(back) {
                let n = h.len().min(12);
                h[..n].copy_from_slice(&self.addrs[..n]);
                let rest = 12 - n;
                p.pull(back);
                let d = p.data_mut();
                let m = rest.min(d.len());
                d[..m].copy_from_slice(&self.addrs[n..n + m]);
            }
        }
        Some(0)
    }
}

impl Element for EtherRewrite {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::rw("src"), HandlerInfo::rw("dst")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let ether = |o: usize| {
            let mut a = [0u8; 6];
            a.copy_from_slice(&self.addrs[o..o + 6]);
            super::unparse_ether(&a)
        };
        match name {
            "src" => Ok(ether(6)),
            "dst" => Ok(ether(0)),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "src" => {
                let a: EtherAddr = parse_value("SRC", value)?;
                self.addrs[6..].copy_from_slice(&a.0);
            }
            "dst" => {
                let a: EtherAddr = parse_value("DST", value)?;
                self.addrs[..6].copy_from_slice(&a.0);
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{configure, push_batch};
    use pronto_packet::Pool;

    #[test]
    fn rewrites_at_link_header() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            EtherRewrite::SPEC.keywords,
            EtherRewrite::configure,
            "00:aa:aa:aa:aa:aa, 00:bb:bb:bb:bb:bb",
            &[true],
            &[true],
            std::path::Path::new("."),
        )
        .expect("ok");
        let frame = [
            1, 1, 1, 1, 1, 1, // dst
            2, 2, 2, 2, 2, 2, // src
            0x08, 0x00, // type
            0x45, // payload
        ];
        let mut b = Batch::new();
        let _ = b.push(pool.alloc_from(&frame).expect("pkt"));
        // Link header set, then stripped: the header in front is rewritten.
        let mut q = pool.alloc_from(&frame).expect("pkt");
        q.set_mac_header(0);
        q.pull(14);
        let _ = b.push(q);
        let mut outs = push_batch(e.as_mut(), &pool, &mut b, 1, 0);
        let want = [
            0, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb, 0, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0x08, 0x00, 0x45,
        ];
        assert_eq!(outs[0][0].data(), &want);
        let mut q = outs[0].pop().expect("second packet");
        assert_eq!(q.data(), &[0x45]);
        let _ = q.push(14);
        assert_eq!(q.data(), &want);
        assert_eq!(e.read_handler("dst").expect("dst"), "00-BB-BB-BB-BB-BB");
    }
}
