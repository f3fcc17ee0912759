//! `GetIPAddress`: copies an IP address from the packet into an
//! annotation (by default the destination IP annotation).

use pronto_packet::{Batch, Packet, ANNO_SIZE};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_DST_IP, FIELD_SRC_IP,
};

/// Parses an annotation argument of `size` bytes: a byte offset into the
/// annotation area or a name (`DST_IP`, `AGGREGATE`, `PAINT`, ...).
pub(crate) fn parse_anno(name: &str, v: &str, size: usize) -> Result<usize, ConfigError> {
    let s = pronto_lang::args::unquote(v);
    let key = s.strip_suffix("_ANNO").unwrap_or(&s);
    let off = match key {
        "DST_IP" => Some(pronto_packet::DST_IP_ANNO_OFFSET),
        "AGGREGATE" => Some(pronto_packet::AGGREGATE_ANNO_OFFSET),
        "PAINT" => Some(pronto_packet::PAINT_ANNO_OFFSET),
        "EXTRA_PACKETS" => Some(pronto_packet::EXTRA_PACKETS_ANNO_OFFSET),
        "EXTRA_LENGTH" => Some(pronto_packet::EXTRA_LENGTH_ANNO_OFFSET),
        "FIRST_TIMESTAMP" => Some(pronto_packet::FIRST_TIMESTAMP_ANNO_OFFSET),
        _ => pronto_lang::args::parse_i64(key)
            .ok()
            .and_then(|v| usize::try_from(v).ok()),
    };
    match off {
        Some(o) if o + size <= ANNO_SIZE => Ok(o),
        _ => Err(ConfigError::new(format!(
            "{name}: expected annotation, found `{v}`"
        ))),
    }
}

#[derive(Clone, Copy)]
enum Source {
    Offset(usize),
    IpSrc,
    IpDst,
}

/// Sets an address annotation from 4 packet bytes.
pub struct GetIPAddress {
    src: Source,
    anno: usize,
}

impl GetIPAddress {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("GetIPAddress")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["OFFSET", "ANNO", "IP"])
        .profile(ActionProfile::reads(FIELD_DST_IP | FIELD_SRC_IP))
        .doc(
            "GetIPAddress(OFFSET [, ANNO, keyword IP])\n\n\
             Copies 4 bytes at OFFSET of the packet into the destination IP address\n\
             annotation (or the annotation ANNO). OFFSET is usually 16, the destination\n\
             address of an IP packet. Instead of OFFSET, `IP src` or `IP dst` copies\n\
             the source or destination address of the packet's marked IP header.\n\
             Packets too short for the copy pass unchanged.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `GetIPAddress`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let offset = a.read_p::<usize>("OFFSET")?;
        let anno = match a.read_p::<String>("ANNO")? {
            Some(v) => parse_anno("ANNO", &v, 4)?,
            None => pronto_packet::DST_IP_ANNO_OFFSET,
        };
        let ip = a.read::<String>("IP")?;
        a.finish()?;
        let src = match (offset, ip.as_deref()) {
            (Some(o), None) => Source::Offset(o),
            (None, Some("src")) => Source::IpSrc,
            (None, Some("dst")) => Source::IpDst,
            (None, Some(_)) => return Err(ConfigError::new("bad IP")),
            _ => return Err(ConfigError::new("set one of OFFSET, IP")),
        };
        Ok(Box::new(GetIPAddress { src, anno }))
    }

    #[inline]
    fn action(&self, p: &mut Packet) -> Option<usize> {
        let off = match self.src {
            Source::Offset(o) => Some(o),
            Source::IpSrc => p
                .network_header_offset()
                .filter(|&o| o >= 0)
                .map(|o| o as usize + 12),
            Source::IpDst => p
                .network_header_offset()
                .filter(|&o| o >= 0)
                .map(|o| o as usize + 16),
        };
        if let Some(o) = off {
            if let Some(b) = p.data().get(o..o + 4) {
                let v = [b[0], b[1], b[2], b[3]];
                p.anno_bytes_mut()[self.anno..self.anno + 4].copy_from_slice(&v);
            }
        }
        Some(0)
    }
}

impl Element for GetIPAddress {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.iter_mut() {
            let _ = self.action(p);
        }
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{config_err, configure, pkt, push};
    use pronto_packet::Pool;

    const KW: &[&str] = GetIPAddress::SPEC.keywords;

    #[test]
    fn copies_addresses() {
        let pool = Pool::new(64).expect("pool");
        let d = ip_packet([1, 2, 3, 4], [5, 6, 7, 8], 0);
        let mut e = configure(KW, GetIPAddress::configure, "16", 1, 1).expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![pkt(&pool, &d), pkt(&pool, &d[..18])],
            1,
        );
        assert_eq!(outs[0][0].dst_ip_anno(), [5, 6, 7, 8]);
        assert_eq!(outs[0][1].dst_ip_anno(), [0, 0, 0, 0]);
        let mut e = configure(KW, GetIPAddress::configure, "12, 12", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &d)], 1);
        assert_eq!(&outs[0][0].anno_bytes()[12..16], &[1, 2, 3, 4]);
        let mut e = configure(KW, GetIPAddress::configure, "IP src", 1, 1).expect("ok");
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 20);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        assert_eq!(outs[0][0].dst_ip_anno(), [1, 2, 3, 4]);
    }

    #[test]
    fn errors() {
        assert_eq!(
            config_err(configure(KW, GetIPAddress::configure, "", 1, 1)),
            "set one of OFFSET, IP"
        );
        assert_eq!(
            config_err(configure(KW, GetIPAddress::configure, "16, IP src", 1, 1)),
            "set one of OFFSET, IP"
        );
        assert_eq!(
            config_err(configure(KW, GetIPAddress::configure, "IP foo", 1, 1)),
            "bad IP"
        );
    }
}
