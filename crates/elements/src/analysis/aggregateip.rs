//! `AggregateIP`: sets the aggregate annotation to a field of the packet.

use pronto_packet::{Batch, Packet};

use super::{aggregate, set_aggregate};
use crate::ip::ipfieldinfo::{IPField, PROTO_PAYLOAD, PROTO_TCP_OR_UDP, PROTO_TRANSP};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELDS_5TUPLE, FIELD_OTHER,
};

/// Reads one field into the aggregate annotation.
pub struct AggregateIP {
    field: IPField,
    incremental: bool,
    offset: usize,
    shift: u32,
    mask: u32,
    out1: bool,
    drops: u64,
}

impl AggregateIP {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregateIP")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["FIELD", "INCREMENTAL", "UNSHIFT_IP_ADDR"])
        .profile(ActionProfile::reads(FIELDS_5TUPLE | FIELD_OTHER).dropping())
        .doc(
            "AggregateIP(FIELD [, keywords INCREMENTAL, UNSHIFT_IP_ADDR])\n\n\
             Sets each packet's aggregate annotation to a field of its IP header,\n\
             transport header or payload (marked IP header needed). FIELD is a\n\
             name (`ip src', `ip tos', `tcp flags', `udp dport', `icmp type', ...)\n\
             or an offset and length (`ip[8:2]', `transp{4:12}', `data[0-3]', in\n\
             bytes with [] or bits with {}), optionally narrowed by `/BITS' (the\n\
             top bits) or `& MASK' (one run of 1 bits); it must lie within one\n\
             32-bit word. With INCREMENTAL true the annotation becomes its old\n\
             value shifted left by the field's width plus the field. With\n\
             UNSHIFT_IP_ADDR true, a part of an IP address keeps its place in the\n\
             address. Packets lacking the field (too short, later fragments, other\n\
             protocols) go to output 1 (dropped and counted without one).\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  header, bit_offset, bit_length, field (read)\n  drops (read)",
        );

    /// Configures an `AggregateIP`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let spec: String = a.read_mp("FIELD")?;
        let incremental = a.read_or("INCREMENTAL", false)?;
        let unshift = a.read_or("UNSHIFT_IP_ADDR", false)?;
        a.finish()?;
        let f = IPField::parse(&spec).map_err(|e| ConfigError::new(format!("FIELD: {e}")))?;
        let right = f.bit_offset + f.bit_length - 1;
        if f.bit_offset / 32 != right / 32 {
            return Err(ConfigError::new(
                "field specification does not fit within a single word",
            ));
        }
        if f.bit_length == 32 && incremental {
            return Err(ConfigError::new(
                "'INCREMENTAL' is incompatible with field length 32",
            ));
        }
        let mut mask = if f.bit_length == 32 {
            u32::MAX
        } else {
            (1u32 << f.bit_length) - 1
        };
        let shift = if !unshift || f.proto != 0 || f.bit_offset < 96 || f.bit_offset >= 160 {
            31 - right % 32
        } else {
            mask <<= 31 - right % 32;
            0
        };
        Ok(Box::new(AggregateIP {
            field: f,
            incremental,
            offset: (f.bit_offset / 32 * 4) as usize,
            shift,
            mask,
            out1: ctx.noutputs > 1,
            drops: 0,
        }))
    }

    /// The offset of the field's header in the packet (past the packet's
    /// end when the packet lacks that header).
    fn base(&self, p: &Packet) -> Option<usize> {
        let nh = crate::ip::ip_header_at(p, 20)?;
        let d = p.data();
        let len = d.len();
        let first_frag = u16::from_be_bytes([d[nh + 6], d[nh + 7]]) & 0x1fff == 0;
        let proto = d[nh + 9];
        let th = p
            .transport_header_offset()
            .filter(|&o| o >= 0)
            .map_or(nh + (d[nh] & 0xf) as usize * 4, |o| o as usize);
        Some(match self.field.proto {
            0 => nh,
            PROTO_TCP_OR_UDP if first_frag && (proto == 6 || proto == 17) => th,
            PROTO_TRANSP if first_frag => th,
            PROTO_PAYLOAD if first_frag && proto == 6 && th + 20 <= len => {
                th + (d[th + 12] >> 4) as usize * 4
            }
            PROTO_PAYLOAD if first_frag && proto == 17 => th + 8,
            p if p > 0 && p < 256 && first_frag && i32::from(proto) == p => th,
            _ => len,
        })
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let at = self.base(p).map(|b| b + self.offset);
        match at {
            Some(o) if o + 4 <= p.len() => {
                let d = p.data();
                let v = (u32::from_be_bytes([d[o], d[o + 1], d[o + 2], d[o + 3]]) >> self.shift)
                    & self.mask;
                let agg = if self.incremental {
                    (aggregate(p) << self.field.bit_length).wrapping_add(v)
                } else {
                    v
                };
                set_aggregate(p, agg);
                Some(0)
            }
            _ => {
                if self.out1 {
                    Some(1)
                } else {
                    self.drops += 1;
                    None
                }
            }
        }
    }
}

impl Element for AggregateIP {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("header"),
            HandlerInfo::read("bit_offset"),
            HandlerInfo::read("bit_length"),
            HandlerInfo::read("field"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "header" => Ok(self.field.header_name()),
            "bit_offset" => Ok(self.field.bit_offset.to_string()),
            "bit_length" => Ok(self.field.bit_length.to_string()),
            "field" => Ok(self.field.unparse()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    const KW: &[&str] = &["FIELD", "INCREMENTAL", "UNSHIFT_IP_ADDR"];

    fn agg_of(conf: &str, d: &[u8]) -> Option<u32> {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(KW, AggregateIP::configure, conf, 1, 2).expect("ok");
        let mut p = pkt(&pool, d);
        p.set_network_header(0, 20);
        let outs = push(e.as_mut(), &pool, vec![p], 2);
        outs[0].first().map(aggregate)
    }

    #[test]
    fn fields() {
        let mut d = ip_packet([18, 26, 4, 9], [10, 0, 0, 1], 8);
        d[20..24].copy_from_slice(&[0x12, 0x34, 0x00, 0x35]);
        assert_eq!(agg_of("ip src", &d), Some(0x121a_0409));
        assert_eq!(agg_of("ip src/8", &d), Some(18));
        assert_eq!(
            agg_of("ip src/8, UNSHIFT_IP_ADDR true", &d),
            Some(0x1200_0000)
        );
        assert_eq!(agg_of("udp dport", &d), Some(53));
        assert_eq!(agg_of("ip ttl", &d), Some(64));
        assert_eq!(agg_of("tcp sport", &d), None);
        assert_eq!(agg_of("transp[0:2] & 0xff0", &d), Some(0x23));
        let e = configure(KW, AggregateIP::configure, "ip[2:4]", 1, 1);
        assert_eq!(
            config_err(e),
            "field specification does not fit within a single word"
        );
        let e = configure(KW, AggregateIP::configure, "ip src/8", 1, 1).expect("ok");
        assert_eq!(read(e.as_ref(), "field"), "ip src/8");
        assert_eq!(read(e.as_ref(), "bit_length"), "8");
    }
}
