//! `ICMPPingEncap`: encapsulates packets in ICMP echo requests.

use pronto_packet::{Batch, Packet};

use super::{icmp_encap, next_ip_id, IcmpEncapHeader};
use crate::util::parse_value;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out,
    Spec, FIELDS_5TUPLE, FIELD_OTHER,
};

/// Prepends an IP header and an ICMP echo header.
pub struct ICMPPingEncap {
    h: IcmpEncapHeader,
    ip_id: u16,
    drops: u64,
}

impl ICMPPingEncap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ICMPPingEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["SRC", "DST", "IDENTIFIER"])
        .profile(
            ActionProfile::NONE
                .writes(FIELDS_5TUPLE | FIELD_OTHER)
                .reshaping(),
        )
        .doc(
            "ICMPPingEncap(SRC, DST [, keyword IDENTIFIER])\n\n\
             Encapsulates each packet in an ICMP echo request header with identifier\n\
             IDENTIFIER (default 0) and a 20-byte IP header from SRC to DST with TTL\n\
             255. The IP ID and the echo sequence number count from 1 (skipping 0) by\n\
             one per packet. Both checksums are computed; the IP header and\n\
             destination annotations are set. Packets with no room left for the\n\
             headers are dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  src, dst (read/write)  the addresses\n  drops (read)",
        );

    /// Configures an `ICMPPingEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let src: Ip4 = a.read_mp("SRC")?;
        let dst: Ip4 = a.read_mp("DST")?;
        let identifier: u16 = a.read_or("IDENTIFIER", 0)?;
        a.finish()?;
        Ok(Box::new(ICMPPingEncap {
            h: IcmpEncapHeader {
                src: src.0,
                dst: dst.0,
                icmp_type: 8,
                code: 0,
                identifier,
            },
            ip_id: 1,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        if icmp_encap(p, &self.h, self.ip_id) {
            self.ip_id = next_ip_id(self.ip_id);
            Some(0)
        } else {
            self.drops += 1;
            None
        }
    }
}

impl Element for ICMPPingEncap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_room", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::rw("src"),
            HandlerInfo::rw("dst"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "src" => Ok(Ip4(self.h.src).to_string()),
            "dst" => Ok(Ip4(self.h.dst).to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "src" => self.h.src = parse_value::<Ip4>("src", value)?.0,
            "dst" => self.h.dst = parse_value::<Ip4>("dst", value)?.0,
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    #[test]
    fn pings() {
        let pool = Pool::new(8).expect("pool");
        let kw = &["SRC", "DST", "IDENTIFIER"];
        let mut e = configure(
            kw,
            ICMPPingEncap::configure,
            "10.0.0.1, 10.0.0.2, IDENTIFIER 0x1234",
            1,
            1,
        )
        .expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![pkt(&pool, &[1, 2, 3, 4]), pkt(&pool, &[])],
            1,
        );
        let d = outs[0][0].data();
        assert_eq!(d.len(), 32);
        assert_eq!(&d[..12], &[0x45, 0, 0, 32, 0, 1, 0, 0, 255, 1, 0xa7, 0xd9]);
        assert_eq!(&d[12..20], &[10, 0, 0, 1, 10, 0, 0, 2]);
        assert_eq!(&d[20..], &[8, 0, 0xe1, 0xc4, 0x12, 0x34, 0, 1, 1, 2, 3, 4]);
        assert_eq!(checksum(&d[20..]), 0);
        assert_eq!(checksum(&d[..20]), 0);
        assert_eq!(&outs[0][1].data()[24..28], &[0x12, 0x34, 0, 2]);
        assert_eq!(read(e.as_ref(), "src"), "10.0.0.1");
    }
}
