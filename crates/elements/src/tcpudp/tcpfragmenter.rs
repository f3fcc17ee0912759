//! `TCPFragmenter`: splits TCP segments whose payload exceeds an MTU.

use pronto_packet::wire::{checksum, set_be16};
use pronto_packet::{Batch, Packet};

use super::l4sum::l4_checksum;
use crate::ip::getipaddress::parse_anno;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_OTHER, FIELD_PAYLOAD,
};

/// Cuts TCP packets into packets of at most MTU bytes (headers included).
pub struct TCPFragmenter {
    mtu: usize,
    mtu_anno: Option<usize>,
    count: u64,
    fragmented: u64,
    fragments: u64,
    drops: u64,
}

impl TCPFragmenter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TCPFragmenter")
        .ports("1/1")
        .processing("h/h")
        .keywords(&["MTU", "MTU_ANNO"])
        .profile(
            ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_OTHER | FIELD_PAYLOAD)
                .reshaping()
                .dropping(),
        )
        .doc(
            "TCPFragmenter(MTU [, keyword MTU_ANNO])\n\n\
             Expects TCP/IP packets (marked IP header; any link header is kept).\n\
             A packet whose IP and TCP headers plus payload reach MTU bytes (or the\n\
             nonzero 2-byte annotation MTU_ANNO, when smaller) is split into packets\n\
             carrying at most MTU minus the headers of payload each: copies of the\n\
             packet with their IP length, sequence number and both checksums\n\
             updated (FIN kept on the last piece only). Other packets pass\n\
             unchanged. Packets without whole IP and TCP headers (or with a TCP\n\
             data offset below 5) are dropped and counted.\n\n\
             Ports: 1 push input, 1 push output.\n\
             Handlers:\n  count (read)  packets seen\n  \
             fragmented_count (read)  packets split\n  fragments (read)  pieces sent\n  \
             drops (read)",
        );

    /// Configures a `TCPFragmenter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let mtu: u16 = a.read_p("MTU")?.unwrap_or(0);
        let anno: Option<String> = a.read("MTU_ANNO")?;
        a.finish()?;
        let mtu_anno = match anno {
            Some(s) => Some(parse_anno("MTU_ANNO", &s, 2)?),
            None => None,
        };
        if mtu == 0 && mtu_anno.is_none() {
            return Err(ConfigError::new(
                "At least one of MTU and MTU_ANNO must be set",
            ));
        }
        Ok(Box::new(TCPFragmenter {
            mtu: mtu as usize,
            mtu_anno,
            count: 0,
            fragmented: 0,
            fragments: 0,
            drops: 0,
        }))
    }

    fn handle(&mut self, p: Packet, out: &mut Out<'_>) {
        let mut mtu = self.mtu;
        if let Some(a) = self.mtu_anno {
            let b = p.anno_bytes();
            let v = u16::from_ne_bytes([b[a], b[a + 1]]) as usize;
            if v != 0 && (mtu == 0 || mtu > v) {
                mtu = v;
            }
        }
        let Some(nh) = crate::ip::ip_header_at(&p, 20) else {
            self.drops += 1;
            return;
        };
        let d = p.data();
        let ihl = (d[nh] & 0xf) as usize * 4;
        let th = nh + ihl;
        if d[nh + 9] != 6 || d.len() < th + 20 || d[th + 12] >> 4 < 5 {
            self.drops += 1;
            return;
        }
        let hlen = ihl + (d[th + 12] >> 4) as usize * 4;
        let ip_len = u16::from_be_bytes([d[nh + 2], d[nh + 3]]) as usize;
        self.count += 1;
        let max = mtu as isize - hlen as isize;
        let tcp_len = ip_len as isize - hlen as isize;
        if mtu == 0 || max <= 0 || tcp_len < max {
            out.emit(0, p);
            return;
        }
        let (max, tcp_len) = (max as usize, tcp_len as usize);
        let data_at = nh + hlen;
        if d.len() < data_at + tcp_len {
            // The IP length claims more than the packet holds.
            self.drops += 1;
            return;
        }
        self.fragmented += 1;
        let mut offset = 0;
        while offset < tcp_len {
            let this_len = max.min(tcp_len - offset);
            let Some(mut q) = out.pool.clone_packet(&p) else {
                self.drops += 1;
                return;
            };
            let qd = q.data_mut();
            if offset != 0 {
                qd.copy_within(data_at + offset..data_at + offset + this_len, data_at);
            }
            let keep = data_at + this_len;
            let total = q.len();
            q.take(total - keep);
            let qd = q.data_mut();
            set_be16(qd, nh + 2, (keep - nh) as u16);
            set_be16(qd, nh + 10, 0);
            let c = checksum(&qd[nh..nh + ihl]);
            set_be16(qd, nh + 10, c);
            // FIN stays on the last piece only. (Click compares against
            // the MTU, not the payload size, and so keeps FIN on more
            // pieces than the last; pronto keeps TCP's meaning.)
            if qd[th + 13] & 0x01 != 0 && offset + max < tcp_len {
                qd[th + 13] ^= 0x01;
            }
            let seq = u32::from_be_bytes([qd[th + 4], qd[th + 5], qd[th + 6], qd[th + 7]]);
            qd[th + 4..th + 8].copy_from_slice(&seq.wrapping_add(offset as u32).to_be_bytes());
            set_be16(qd, th + 16, 0);
            let (ip, tcp) = qd[nh..].split_at_mut(ihl);
            let c = l4_checksum(ip, tcp);
            set_be16(tcp, 16, c);
            self.fragments += 1;
            out.emit(0, q);
            offset += max;
        }
    }
}

impl Element for TCPFragmenter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.drain() {
            self.handle(p, out);
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
        c.count("count", self.count);
        c.count("fragmented_count", self.fragmented);
        c.count("fragments", self.fragments);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("fragments"),
            HandlerInfo::read("fragmented_count"),
            HandlerInfo::read("count"),
            HandlerInfo::read("drops"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "fragments" => Ok(self.fragments.to_string()),
            "fragmented_count" => Ok(self.fragmented.to_string()),
            "count" => Ok(self.count.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure, pkt, push, read};
    use pronto_packet::wire::{fold, ones_sum, pseudo_header_sum};
    use pronto_packet::Pool;

    #[test]
    fn splits_segments() {
        let pool = Pool::new(16).expect("pool");
        let mut d = vec![0u8; 40 + 25];
        crate::tcpudp::write_ipv4(&mut d, 65, 7, 0, 64, 6, [1, 0, 0, 1], [2, 0, 0, 2]);
        d[24..28].copy_from_slice(&100u32.to_be_bytes());
        d[32] = 0x50;
        d[33] = 0x19; // FIN PSH ACK
        for (i, b) in d[40..].iter_mut().enumerate() {
            *b = i as u8;
        }
        let mut p = pkt(&pool, &d);
        p.set_network_header(0, 20);
        let mut e = configure(
            &["MTU", "MTU_ANNO"],
            TCPFragmenter::configure,
            "MTU 50",
            1,
            1,
        )
        .expect("ok");
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        let lens: Vec<usize> = outs[0].iter().map(|p| p.len()).collect();
        assert_eq!(lens, [50, 50, 45]);
        for (k, q) in outs[0].iter().enumerate() {
            let d = q.data();
            assert_eq!(checksum(&d[..20]), 0);
            let ps = pseudo_header_sum(&d[12..16], &d[16..20], 6, d.len() - 20);
            assert_eq!(fold(ones_sum(&d[20..], ps)), 0xffff);
            assert_eq!(
                u32::from_be_bytes([d[24], d[25], d[26], d[27]]),
                100 + 10 * k as u32
            );
            assert_eq!(d[40], 10 * k as u8);
            assert_eq!(d[33] & 1, u8::from(k == 2));
        }
        assert_eq!(read(e.as_ref(), "fragments"), "3");
        assert_eq!(read(e.as_ref(), "fragmented_count"), "1");
        let r = configure(&["MTU", "MTU_ANNO"], TCPFragmenter::configure, "", 1, 1);
        assert_eq!(
            config_err(r),
            "At least one of MTU and MTU_ANNO must be set"
        );
    }
}
