//! `EtherEncap`: prepends an Ethernet header.

use pronto_packet::{Batch, Packet};

use crate::util::parse_value;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, EtherAddr, HandlerError,
    HandlerInfo, Out, Spec, FIELD_OTHER,
};

/// Encapsulates packets in a fixed Ethernet header.
pub struct EtherEncap {
    /// The header: destination, source, EtherType (network order).
    hdr: [u8; 14],
}

impl EtherEncap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("EtherEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["ETHERTYPE", "SRC", "DST"])
        .profile(ActionProfile::NONE.writes(FIELD_OTHER).reshaping())
        .doc(
            "EtherEncap(ETHERTYPE, SRC, DST)\n\n\
             Encapsulates each packet in the Ethernet header given by its arguments\n\
             (ETHERTYPE in host order, such as 0x0800) and sets the link header\n\
             annotation. A packet too long to take the header is dropped.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  src (read/write), dst (read/write), ethertype (read/write)",
        );

    /// Configures an `EtherEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ethertype: u16 = a.read_mp("ETHERTYPE")?;
        let src: EtherAddr = a.read_mp("SRC")?;
        let dst: EtherAddr = a.read_mp("DST")?;
        a.finish()?;
        let mut hdr = [0u8; 14];
        hdr[0..6].copy_from_slice(&dst.0);
        hdr[6..12].copy_from_slice(&src.0);
        hdr[12..14].copy_from_slice(&ethertype.to_be_bytes());
        Ok(Box::new(EtherEncap { hdr }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        p.push(14)?.copy_from_slice(&self.hdr);
        p.set_mac_header(0);
        Some(0)
    }
}

impl Element for EtherEncap {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("src"),
            HandlerInfo::rw("dst"),
            HandlerInfo::rw("ethertype"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let ether = |o: usize| {
            let mut a = [0u8; 6];
            a.copy_from_slice(&self.hdr[o..o + 6]);
            super::unparse_ether(&a)
        };
        match name {
            "src" => Ok(ether(6)),
            "dst" => Ok(ether(0)),
            "ethertype" => Ok(u16::from_be_bytes([self.hdr[12], self.hdr[13]]).to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "src" => {
                let a: EtherAddr = parse_value("SRC", value)?;
                self.hdr[6..12].copy_from_slice(&a.0);
            }
            "dst" => {
                let a: EtherAddr = parse_value("DST", value)?;
                self.hdr[0..6].copy_from_slice(&a.0);
            }
            "ethertype" => {
                let t: u16 = parse_value("ETHERTYPE", value)?;
                self.hdr[12..14].copy_from_slice(&t.to_be_bytes());
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::testing::{config_err, configure, push};
    use pronto_packet::{Pool, BUFFER_SIZE};

    fn make(conf: &str) -> Box<dyn Element> {
        configure(
            EtherEncap::SPEC.keywords,
            EtherEncap::configure,
            conf,
            &[true],
            &[true],
            std::path::Path::new("."),
        )
        .expect("configures")
    }

    #[test]
    fn prepends_header() {
        let pool = Pool::new(8).expect("pool");
        let mut e = make("0x0800, 00:11:22:33:44:55, 66:77:88:99:aa:bb");
        let outs = push(e.as_mut(), &pool, &[&[0x45, 0x00]], 1, 0);
        assert_eq!(
            outs[0][0].data(),
            &[
                0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, // dst
                0x00, 0x11, 0x22, 0x33, 0x44, 0x55, // src
                0x08, 0x00, // type
                0x45, 0x00, // payload
            ]
        );
        assert_eq!(outs[0][0].mac_header_offset(), Some(0));
        assert_eq!(e.read_handler("src").expect("src"), "00-11-22-33-44-55");
        assert_eq!(e.read_handler("ethertype").expect("t"), "2048");
        e.write_handler("ethertype", "0x86dd").expect("write");
        e.write_handler("dst", "ff:ff:ff:ff:ff:ff").expect("write");
        let outs = push(e.as_mut(), &pool, &[&[]], 1, 0);
        assert_eq!(&outs[0][0].data()[..6], &[0xff; 6]);
        assert_eq!(&outs[0][0].data()[12..], &[0x86, 0xdd]);
    }

    #[test]
    fn short_headroom_moves_data_and_full_buffer_drops() {
        let pool = Pool::new(8).expect("pool");
        let mut e = make("0x0800, 1:1:1:1:1:1, 2:2:2:2:2:2");
        let mut b = Batch::new();
        // A packet filling its whole buffer: no room for the header.
        let mut q = pool.alloc().expect("pkt");
        let _ = q.push(q.headroom());
        let _ = q.put_uninit(q.tailroom());
        let _ = b.push(q);
        // No headroom but 20 bytes of tailroom: the data moves back.
        let mut r = pool.alloc().expect("pkt");
        let _ = r.push(r.headroom());
        let _ = r.put_uninit(r.tailroom() - 20);
        let _ = b.push(r);
        let _ = b.push(pool.alloc_from(&[7; 20]).expect("pkt"));
        let outs = crate::app::testing::push_batch(e.as_mut(), &pool, &mut b, 1, 0);
        assert_eq!(outs[0].len(), 2);
        assert_eq!(outs[0][0].len(), BUFFER_SIZE - 20 + 14);
        assert_eq!(&outs[0][1].data()[14..], &[7; 20]);
    }

    #[test]
    fn errors() {
        let c = |s: &str| {
            config_err(configure(
                EtherEncap::SPEC.keywords,
                EtherEncap::configure,
                s,
                &[true],
                &[true],
                std::path::Path::new("."),
            ))
        };
        assert_eq!(c("0x0800, 1:1:1:1:1:1"), "missing mandatory DST argument");
        assert_eq!(
            c("0x0800, nope, 1:1:1:1:1:1"),
            "SRC: expected Ethernet address, found `nope`"
        );
    }
}
