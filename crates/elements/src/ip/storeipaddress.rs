//! `StoreIPAddress`: writes an IP address (the destination annotation or
//! a fixed one) into the packet.

use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::tcp::TcpPacket;
use pronto_packet::wire::udp::UdpPacket;
use pronto_packet::wire::{be16, fold, update_checksum16, IP_PROTO_TCP, IP_PROTO_UDP};
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Ip4, Out, Spec, FIELD_DST_IP,
    FIELD_OTHER, FIELD_SRC_IP,
};

/// Where the address goes: a byte offset, or (negative, Click's
/// convention) 12/16 bytes into the IP header.
#[derive(Clone, Copy)]
enum Target {
    Offset(usize),
    IpSrc,
    IpDst,
}

/// Stores an IP address into packet data.
pub struct StoreIPAddress {
    addr: Option<[u8; 4]>,
    target: Target,
    /// Packets without a usable IP header, dropped for want of output 1.
    drops: u64,
}

impl StoreIPAddress {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("StoreIPAddress")
        .ports("1/1-2")
        .processing("a/ah")
        .profile(
            ActionProfile::reads(FIELD_DST_IP).writes(FIELD_SRC_IP | FIELD_DST_IP | FIELD_OTHER),
        )
        .doc(
            "StoreIPAddress(OFFSET)\nStoreIPAddress(ADDR, OFFSET)\n\n\
             The one-argument form writes the destination IP address annotation into the\n\
             packet at OFFSET, unless the annotation is zero. The two-argument form\n\
             writes ADDR (which may be zero). OFFSET may be `src` or `dst`: the address\n\
             then goes into the marked IP header's source or destination field and the\n\
             IP checksum (and a first fragment's TCP or UDP checksum) is updated\n\
             incrementally. Otherwise no checksum is changed. As in Click, when the\n\
             plain store cannot be done (zero annotation, or OFFSET past the end), a\n\
             packet with a marked IP header has the address stored OFFSET bytes before\n\
             that header with checksums updated. Packets that cannot be written go to\n\
             output 1 if it exists, else are dropped.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs.",
        );

    /// Configures a `StoreIPAddress`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let addr = if a.remaining_positional() > 1 {
            Some(a.read_mp::<Ip4>("ADDR")?.0)
        } else {
            None
        };
        let off = a.read_mp::<String>("OFFSET")?;
        a.finish()?;
        let target = match off.to_ascii_lowercase().as_str() {
            "src" => Target::IpSrc,
            "dst" => Target::IpDst,
            s => match pronto_lang::args::parse_i64(s)
                .ok()
                .and_then(|v| usize::try_from(v).ok())
            {
                Some(o) => Target::Offset(o),
                None => return Err(ConfigError::new("type mismatch: OFFSET requires integer")),
            },
        };
        Ok(Box::new(StoreIPAddress {
            addr,
            target,
            drops: 0,
        }))
    }

    #[inline]
    fn action(&self, p: &mut Packet) -> Option<usize> {
        let ipa = self.addr.unwrap_or_else(|| p.dst_ip_anno());
        if let Target::Offset(o) = self.target {
            if (self.addr.is_some() || ipa != [0; 4]) && o + 4 <= p.len() {
                p.data_mut()[o..o + 4].copy_from_slice(&ipa);
                return Some(0);
            }
        }
        if store_in_header(p, self.target, ipa) {
            Some(0)
        } else {
            Some(1)
        }
    }
}

/// The IP-header store with incremental checksum updates; false if the
/// packet has no usable IP header.
fn store_in_header(p: &mut Packet, target: Target, ipa: [u8; 4]) -> bool {
    let (Some(nh), Some(hl)) = (p.network_header_offset(), p.network_header_len()) else {
        return false;
    };
    if nh < 0 || hl < 20 {
        return false;
    }
    let nh = nh as usize;
    let len = p.len();
    if nh + 20 > len {
        return false;
    }
    let at = match target {
        Target::IpSrc => Some(nh + 12),
        Target::IpDst => Some(nh + 16),
        Target::Offset(o) => nh.checked_sub(o),
    };
    let Some(at) = at.filter(|&a| a + 4 <= len) else {
        return false;
    };
    let th = p.transport_header_offset().unwrap_or(0).max(0) as usize;
    let d = p.data_mut();
    let old = fold(be16(d, at) as u64 + be16(d, at + 2) as u64);
    d[at..at + 4].copy_from_slice(&ipa);
    let new = fold(be16(d, at) as u64 + be16(d, at + 2) as u64);
    let mut ip = Ipv4Packet::new_unchecked(&mut d[nh..]);
    ip.set_checksum(update_checksum16(ip.checksum(), old, new));
    let proto = ip.protocol();
    let first_frag = !ip.is_later_fragment();
    let tlen = len.saturating_sub(th);
    if first_frag && th >= nh {
        if proto == IP_PROTO_TCP && tlen >= 20 {
            let mut t = TcpPacket::new_unchecked(&mut d[th..]);
            t.set_checksum(update_checksum16(t.checksum(), old, new));
        } else if proto == IP_PROTO_UDP && tlen >= 8 {
            let mut u = UdpPacket::new_unchecked(&mut d[th..]);
            let c = u.checksum();
            if c != 0 {
                u.set_checksum(update_checksum16(c, old, new));
            }
        }
    }
    true
}

impl Element for StoreIPAddress {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let out1 = out.noutputs() > 1;
        push_each(batch, out, |p, _| match self.action(p) {
            Some(1) if !out1 => {
                self.drops += 1;
                None
            }
            r => r,
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip::checkipheader::tests::ip_packet;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push};
    use pronto_packet::wire::checksum;
    use pronto_packet::Pool;

    fn mk(c: &str) -> Box<dyn Element> {
        configure(&[], StoreIPAddress::configure, c, 1, 2).expect("ok")
    }

    #[test]
    fn stores_annotation_or_address() {
        let pool = Pool::new(64).expect("pool");
        let mut e = mk("0");
        let mut p = pkt(&pool, &[9; 8]);
        p.set_dst_ip_anno([1, 2, 3, 4]);
        let q = pkt(&pool, &[9; 8]); // zero annotation, no IP header: output 1
        let r = pkt(&pool, &[9; 3]); // too short: output 1
        let outs = push(e.as_mut(), &pool, vec![p, q, r], 2);
        assert_eq!(bytes(&outs[0]), vec![vec![1, 2, 3, 4, 9, 9, 9, 9]]);
        assert_eq!(outs[1].len(), 2);
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("malformed", 0)]
        );
        // Without output 1 they are dropped and counted.
        let mut e = configure(&[], StoreIPAddress::configure, "0", 1, 1).expect("ok");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[9; 3])], 1);
        assert!(outs[0].is_empty());
        assert_eq!(
            crate::standard::test_support::drop_counters(e.as_ref()),
            vec![("malformed", 1)]
        );
        let mut e = mk("0.0.0.0, 4");
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &[9; 8])], 2);
        assert_eq!(bytes(&outs[0]), vec![vec![9, 9, 9, 9, 0, 0, 0, 0]]);
    }

    #[test]
    fn src_dst_update_checksums() {
        let pool = Pool::new(64).expect("pool");
        // UDP packet with a nonzero UDP checksum field.
        let mut d = ip_packet([10, 0, 0, 1], [10, 0, 0, 2], 8);
        d[26] = 0x12; // UDP checksum
        d[27] = 0x34;
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 20);
        let mut e = mk("9.8.7.6, src");
        let outs = push(e.as_mut(), &pool, vec![p], 2);
        let o = outs[0][0].data();
        assert_eq!(&o[12..16], &[9, 8, 7, 6]);
        assert_eq!(checksum(&o[..20]), 0);
        // The UDP checksum moves by the same difference as the header sum.
        let diff_ip = update_checksum16(0x1234, fold(0x0a00 + 0x0001), fold(0x0908 + 0x0706));
        assert_eq!(be16(o, 26), diff_ip);
        // Without an IP header: output 1.
        let outs = push(e.as_mut(), &pool, vec![pkt(&pool, &d)], 2);
        assert_eq!(outs[1].len(), 1);
        assert_eq!(
            config_err(configure(&[], StoreIPAddress::configure, "foo", 1, 1)),
            "type mismatch: OFFSET requires integer"
        );
    }
}
