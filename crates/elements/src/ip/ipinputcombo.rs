//! `IPInputCombo`: the input path of an IP router in one element (Paint,
//! Strip(14), CheckIPHeader, GetIPAddress(16)).

use pronto_packet::wire::checksum;
use pronto_packet::{Batch, Packet};

use super::route_table::parse_prefix;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_OTHER,
};

/// Paints, strips the Ethernet header, checks the IP header and sets the
/// destination annotation.
pub struct IPInputCombo {
    color: u8,
    bad_src: Vec<[u8; 4]>,
    good_dst: Vec<[u8; 4]>,
    drops: u64,
}

fn addr_list(name: &str, v: &str) -> Result<Vec<[u8; 4]>, ConfigError> {
    pronto_lang::args::unquote(v)
        .split_whitespace()
        .map(|w| {
            pronto_lang::args::parse_ip4(w).map_err(|_| {
                ConfigError::new(format!(
                    "{name}: expected list of IP addresses, found `{v}`"
                ))
            })
        })
        .collect()
}

impl IPInputCombo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPInputCombo")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["COLOR", "INTERFACES", "BADSRC", "GOODDST"])
        .profile(ActionProfile::reads(FIELD_OTHER).reshaping().dropping())
        .doc(
            "IPInputCombo(COLOR [, BADSRC, keywords INTERFACES, BADSRC, GOODDST])\n\n\
             Does what Paint(COLOR) -> Strip(14) -> CheckIPHeader(BADSRC) ->\n\
             GetIPAddress(16) do: paints the packet, removes 14 bytes, checks the IP\n\
             header (version 4, header length at least 20, total length within the\n\
             packet and at least the header, header checksum, source not in BADSRC\n\
             unless the destination is in GOODDST), marks it, trims the packet to\n\
             the IP length and sets the destination annotation. INTERFACES (ADDR/LEN\n\
             list) sets BADSRC to their broadcast addresses, 0.0.0.0 and\n\
             255.255.255.255, and GOODDST to their addresses. Bad packets are dropped\n\
             and counted (`IP checksum failed' on standard error the first time).\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures an `IPInputCombo`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let color: u8 = a.read_mp("COLOR")?;
        let mut bad_src = Vec::new();
        let mut good_dst = Vec::new();
        if let Some(v) = a.read_p::<String>("BADSRC")? {
            bad_src = addr_list("BADSRC", &v)?;
        }
        if let Some(ifs) = a.read::<String>("INTERFACES")? {
            bad_src.clear();
            for w in ifs.split_whitespace() {
                let (ip, mask) = parse_prefix(w, true).ok_or_else(|| {
                    ConfigError::new(format!(
                        "INTERFACES: expected list of IP prefixes, found `{ifs}`"
                    ))
                })?;
                bad_src.push(((ip & mask) | !mask).to_be_bytes());
                good_dst.push(ip.to_be_bytes());
            }
            bad_src.push([0; 4]);
            bad_src.push([255; 4]);
        }
        if let Some(v) = a.read::<String>("GOODDST")? {
            good_dst = addr_list("GOODDST", &v)?;
        }
        a.finish()?;
        Ok(Box::new(IPInputCombo {
            color,
            bad_src,
            good_dst,
            drops: 0,
        }))
    }

    fn good(&self, d: &[u8]) -> Option<usize> {
        if d.len() < 20 || d[0] >> 4 != 4 {
            return None;
        }
        let hl = (d[0] & 0xf) as usize * 4;
        let len = u16::from_be_bytes([d[2], d[3]]) as usize;
        if hl < 20 || len > d.len() || len < hl || checksum(&d[..hl]) != 0 {
            return None;
        }
        let src = [d[12], d[13], d[14], d[15]];
        let dst = [d[16], d[17], d[18], d[19]];
        if self.bad_src.contains(&src) && !self.good_dst.contains(&dst) {
            return None;
        }
        Some(len)
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        p.set_paint_anno(self.color);
        p.pull(14);
        match self.good(p.data()) {
            Some(len) => {
                let hl = (p.data()[0] & 0xf) as usize * 4;
                p.set_network_header(0, hl);
                p.set_transport_header(hl as isize);
                if p.len() > len {
                    p.take(p.len() - len);
                }
                let d = p.data();
                let dst = [d[16], d[17], d[18], d[19]];
                p.set_dst_ip_anno(dst);
                Some(0)
            }
            None => {
                if self.drops == 0 {
                    eprintln!("IP checksum failed");
                }
                self.drops += 1;
                None
            }
        }
    }
}

impl Element for IPInputCombo {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("bad_header", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{configure, pkt, push, read};
    use pronto_packet::Pool;

    #[test]
    fn input_path() {
        let pool = Pool::new(16).expect("pool");
        let kw = &["COLOR", "INTERFACES", "BADSRC", "GOODDST"];
        let mut e = configure(
            kw,
            IPInputCombo::configure,
            "3, INTERFACES 10.0.0.1/24",
            1,
            1,
        )
        .expect("ok");
        let frame = |ip: Vec<u8>| {
            let mut f = vec![0u8; 14];
            f.extend(ip);
            f.extend([0, 0]); // Ethernet padding
            f
        };
        let good = frame(ip_packet([1, 2, 3, 4], [10, 0, 0, 1], 4));
        let bcast = frame(ip_packet([10, 0, 0, 255], [9, 9, 9, 9], 0));
        let mut bad_sum = good.clone();
        bad_sum[24] ^= 1;
        let pkts = vec![
            pkt(&pool, &good),
            pkt(&pool, &bcast),
            pkt(&pool, &bad_sum),
            pkt(&pool, &[0; 20]),
        ];
        let outs = push(e.as_mut(), &pool, pkts, 1);
        assert_eq!(outs[0].len(), 1);
        let p = &outs[0][0];
        assert_eq!(p.len(), 24);
        assert_eq!(p.paint_anno(), 3);
        assert_eq!(p.dst_ip_anno(), [10, 0, 0, 1]);
        assert_eq!(p.network_header_offset(), Some(0));
        assert_eq!(read(e.as_ref(), "drops"), "3");
    }
}
