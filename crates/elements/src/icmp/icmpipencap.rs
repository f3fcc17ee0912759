//! `ICMPIPEncap`: encapsulates packets in ICMP and IP headers.

use pronto_classify::names::{icmp_code_by_name, icmp_type_by_name};
use pronto_packet::{Batch, Packet};

use super::{icmp_encap, next_ip_id, IcmpEncapHeader};
use crate::util::parse_value;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out,
    Spec, FIELDS_5TUPLE, FIELD_OTHER,
};

/// Prepends an IP header and an ICMP header of a fixed type and code.
pub struct ICMPIPEncap {
    h: IcmpEncapHeader,
    ip_id: u16,
    drops: u64,
}

/// Reads an ICMP type (number or name) and a code (number or the type's
/// code name).
fn icmp_type_code(t: &str, c: &str) -> Result<(u8, u8), ConfigError> {
    let icmp_type = pronto_lang::args::parse_u32(t)
        .ok()
        .and_then(|v| u8::try_from(v).ok())
        .or_else(|| icmp_type_by_name(t))
        .ok_or_else(|| ConfigError::new(format!("TYPE: invalid ICMP type `{t}`")))?;
    let code = pronto_lang::args::parse_u32(c)
        .ok()
        .and_then(|v| u8::try_from(v).ok())
        .or_else(|| icmp_code_by_name(icmp_type, c))
        .ok_or_else(|| ConfigError::new(format!("CODE: invalid ICMP code `{c}`")))?;
    Ok((icmp_type, code))
}

impl ICMPIPEncap {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ICMPIPEncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["SRC", "DST", "TYPE", "CODE", "IDENTIFIER"])
        .profile(
            ActionProfile::NONE
                .writes(FIELDS_5TUPLE | FIELD_OTHER)
                .reshaping(),
        )
        .doc(
            "ICMPIPEncap(SRC, DST, TYPE [, CODE, keyword IDENTIFIER])\n\n\
             Encapsulates each packet in an ICMP header of type TYPE and code CODE\n\
             (numbers, or names such as `echo' and `net'; CODE defaults to 0) and a\n\
             20-byte IP header from SRC to DST with TTL 255. The ICMP header is 20\n\
             bytes for timestamp requests and replies, 8 otherwise, zeroed but for\n\
             type and code; echo, timestamp and information requests and replies\n\
             carry IDENTIFIER (default 0) and, as sequence number, the IP ID. IP IDs\n\
             count from 1 and skip 0. Both checksums are computed; the IP header and\n\
             destination annotations are set. Packets with no room left for the\n\
             headers are dropped and counted.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  src, dst (read/write)  the addresses\n  drops (read)",
        );

    /// Configures an `ICMPIPEncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let src: Ip4 = a.read_mp("SRC")?;
        let dst: Ip4 = a.read_mp("DST")?;
        let t: String = a.read_mp("TYPE")?;
        let c: String = a.read_p("CODE")?.unwrap_or_else(|| "0".into());
        let identifier: u16 = a.read_or("IDENTIFIER", 0)?;
        a.finish()?;
        let (icmp_type, code) = icmp_type_code(&t, &c)?;
        Ok(Box::new(ICMPIPEncap {
            h: IcmpEncapHeader {
                src: src.0,
                dst: dst.0,
                icmp_type,
                code,
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

impl Element for ICMPIPEncap {
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
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    const KW: &[&str] = &["SRC", "DST", "TYPE", "CODE", "IDENTIFIER"];

    #[test]
    fn encapsulates() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            KW,
            ICMPIPEncap::configure,
            "1.0.0.1, 2.0.0.2, unreachable, net",
            1,
            1,
        )
        .expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[0xaa, 0xbb])], 1);
        let p = &outs[0][0];
        assert_eq!(
            p.data(),
            &[
                0x45, 0, 0, 30, 0, 1, 0, 0, 255, 1, 0xb8, 0xdb, 1, 0, 0, 1, 2, 0, 0, 2, // IP
                3, 0, 0x52, 0x44, 0, 0, 0, 0, // ICMP unreachable net
                0xaa, 0xbb,
            ]
        );
        assert_eq!(checksum(&p.data()[..20]), 0);
        assert_eq!(checksum(&p.data()[20..]), 0);
        assert_eq!(p.dst_ip_anno(), [2, 0, 0, 2]);
        assert_eq!(p.network_header_offset(), Some(0));

        // Echo: identifier and the IP ID as sequence number; timestamps: 20 bytes.
        let mut e = configure(
            KW,
            ICMPIPEncap::configure,
            "1.0.0.1, 1.0.0.1, TYPE 8, IDENTIFIER 7",
            1,
            1,
        )
        .expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[]), pkt(&pool, &[])], 1);
        assert_eq!(&outs[0][1].data()[20..28], &[8, 0, 0xf7, 0xf6, 0, 7, 0, 2]);
        assert_eq!(&outs[0][1].data()[4..6], &[0, 2]);
        let mut e =
            configure(KW, ICMPIPEncap::configure, "1.0.0.1, 1.0.0.1, 13", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[])], 1);
        assert_eq!(outs[0][0].len(), 40);
        assert_eq!(checksum(&outs[0][0].data()[20..]), 0);

        e.write_handler("dst", "9.9.9.9").expect("write");
        assert_eq!(read(e.as_ref(), "dst"), "9.9.9.9");
        let r = configure(KW, ICMPIPEncap::configure, "1.0.0.1, 1.0.0.1, 300", 1, 1);
        assert_eq!(config_err(r), "TYPE: invalid ICMP type `300`");
        let r = configure(
            KW,
            ICMPIPEncap::configure,
            "1.0.0.1, 1.0.0.1, 3, bogus",
            1,
            1,
        );
        assert_eq!(config_err(r), "CODE: invalid ICMP code `bogus`");
    }
}
