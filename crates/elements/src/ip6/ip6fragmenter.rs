//! `IP6Fragmenter`: splits IPv6 packets longer than an MTU into fragments
//! with a Fragment header (RFC 8200 section 4.5).

use pronto_packet::wire::ipv6::{next_header, Ipv6Header, IP6_HEADER_LEN};
use pronto_packet::{Batch, Packet};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    FIELD_OTHER, FIELD_PAYLOAD,
};

/// Length of the Fragment header.
const FRAG_HEADER_LEN: usize = 8;

/// Fragments IPv6 packets longer than the MTU.
pub struct IP6Fragmenter {
    mtu: u32,
    out1: bool,
    /// Identification of the next fragmented packet.
    ident: u32,
    fragments: u64,
    drops: u64,
}

/// Where the unfragmentable part of an IPv6 packet ends.
struct Split {
    /// Length of the unfragmentable part (IPv6 header and the extension
    /// headers that every fragment repeats).
    unfrag: usize,
    /// Offset of the Next Header byte that will name the Fragment header.
    nh_pos: usize,
    /// The next header value it held.
    next: u8,
}

/// Finds the unfragmentable part of `ip` (an IPv6 packet cut to its
/// payload length): the fixed header, a Hop-by-Hop header, and any headers
/// up to and including the last Routing header (Destination Options before
/// it included). `None` if a header runs past the packet or the packet is
/// already a fragment.
fn split(ip: &[u8]) -> Option<Split> {
    let mut s = Split {
        unfrag: IP6_HEADER_LEN,
        nh_pos: 6,
        next: ip[6],
    };
    let mut nh = ip[6];
    let mut off = IP6_HEADER_LEN;
    let mut walked = 0;
    while matches!(
        nh,
        next_header::HOP_BY_HOP | next_header::DEST_OPTS | next_header::ROUTING
    ) {
        if walked == pronto_packet::wire::ipv6::MAX_EXT_HEADERS {
            return None;
        }
        let h = ip.get(off..off + 2)?;
        let len = (h[1] as usize + 1) * 8;
        if off + len > ip.len() {
            return None;
        }
        let this = nh;
        nh = h[0];
        if this != next_header::DEST_OPTS {
            s = Split {
                unfrag: off + len,
                nh_pos: off,
                next: nh,
            };
        }
        off += len;
        walked += 1;
    }
    (s.next != next_header::FRAGMENT).then_some(s)
}

impl IP6Fragmenter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IP6Fragmenter")
        .ports("1/1-2")
        .processing("h/h")
        .keywords(&["MTU"])
        .profile(
            ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "IP6Fragmenter(MTU)\n\n\
             Packets of at most MTU bytes from their network header on (the whole\n\
             packet without a marked header) go to output 0 unchanged. Longer IPv6\n\
             packets are fragmented as RFC 8200 describes: the unfragmentable part (the\n\
             IPv6 header, a Hop-by-Hop header, and the headers up to the last Routing\n\
             header) is repeated in every fragment, followed by a Fragment header\n\
             (the original next header, the offset in 8-byte units, the M flag on all\n\
             but the last, an identification that starts at 1 and counts up per\n\
             fragmented packet) and the next piece of the rest: as many multiples of 8\n\
             bytes as fit in MTU, and in the last fragment whatever is left once it\n\
             fits. Payload lengths are set;\n\
             Ethernet padding beyond the payload length is left out. The first fragment\n\
             is the packet itself (bytes before the network header kept); the others are\n\
             new packets that start at the IPv6 header and carry the packet's\n\
             annotations. They leave in order on output 0.\n\n\
             A packet that cannot be fragmented -- MTU too small for 8 data bytes after\n\
             the unfragmentable part and a Fragment header, a packet that already has a\n\
             Fragment header, extension headers that run past the payload, no marked\n\
             IPv6 header -- goes to output 1 (usually an ICMP6Error sending Packet Too\n\
             Big), or is dropped without one.\n\n\
             Ports: 1 input, 1 or 2 outputs (push).\n\
             Handlers:\n  fragments (read)  fragments sent\n  \
             drops (read)      packets that could not be fragmented",
        );

    /// Configures an `IP6Fragmenter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let mtu: u32 = a.read_mp("MTU")?;
        a.finish()?;
        Ok(Box::new(IP6Fragmenter {
            mtu,
            out1: ctx.noutputs >= 2,
            ident: 1,
            fragments: 0,
            drops: 0,
        }))
    }

    fn refuse(&mut self, p: Packet, out: &mut Out<'_>) {
        self.drops += 1;
        if self.out1 {
            out.emit(1, p);
        }
    }

    fn fragment(&mut self, mut p: Packet, out: &mut Out<'_>) {
        let Some(nh) = p
            .network_header_offset()
            .and_then(|o| usize::try_from(o).ok())
            .filter(|&o| o + IP6_HEADER_LEN <= p.len())
        else {
            return self.refuse(p, out);
        };
        let ip = &p.data()[nh..];
        let total = IP6_HEADER_LEN + Ipv6Header::new_unchecked(ip).payload_len() as usize;
        let Some(s) = (ip[0] >> 4 == 6 && total <= ip.len())
            .then(|| split(&ip[..total]))
            .flatten()
        else {
            return self.refuse(p, out);
        };
        let mtu = self.mtu as usize;
        // Room for data in one fragment; all but the last carry a multiple
        // of 8 bytes, the last whatever is left once that fits.
        let room = mtu.saturating_sub(s.unfrag + FRAG_HEADER_LEN);
        let chunk = room & !7;
        if chunk == 0 || total <= mtu {
            return self.refuse(p, out);
        }
        let ident = self.ident;
        self.ident = self.ident.wrapping_add(1);
        let flen = total - s.unfrag;
        let piece = |left: usize| if left <= room { left } else { chunk };
        let first = piece(flen);
        let nhl = p.network_header_len().unwrap_or(IP6_HEADER_LEN);
        let mac = p.mac_header_offset();
        // Make room for the Fragment header: everything up to the end of
        // the unfragmentable part moves 8 bytes towards the front.
        let head = nh + s.unfrag;
        if p.push(FRAG_HEADER_LEN).is_none() {
            return self.refuse(p, out);
        }
        let d = p.data_mut();
        d.copy_within(FRAG_HEADER_LEN..FRAG_HEADER_LEN + head, 0);
        write_fragment_header(&mut d[head..head + FRAG_HEADER_LEN], s.next, 0, true, ident);
        d[nh + s.nh_pos] = next_header::FRAGMENT;
        let plen = (s.unfrag - IP6_HEADER_LEN + FRAG_HEADER_LEN + first) as u16;
        d[nh + 4..nh + 6].copy_from_slice(&plen.to_be_bytes());
        p.set_network_header(nh as isize, nhl);
        if let Some(m) = mac {
            p.set_mac_header(m);
        }
        // The later fragments are cut from a copy; the first leaves first.
        let src = if first < flen {
            out.pool.clone_packet(&p)
        } else {
            None
        };
        p.take(p.len() - (head + FRAG_HEADER_LEN + first));
        self.fragments += 1;
        out.emit(0, p);
        let Some(src) = src else {
            return;
        };
        let data = &src.data()[head + FRAG_HEADER_LEN..];
        let unfrag = &src.data()[nh..head];
        let mut off = first;
        while off < flen {
            let n = piece(flen - off);
            let last = off + n == flen;
            let Some(mut q) = out.pool.alloc() else {
                break;
            };
            let len = s.unfrag + FRAG_HEADER_LEN + n;
            if !q.put_zeroed(len) {
                break;
            }
            let d = q.data_mut();
            d[..s.unfrag].copy_from_slice(unfrag);
            let plen = (len - IP6_HEADER_LEN) as u16;
            d[4..6].copy_from_slice(&plen.to_be_bytes());
            write_fragment_header(
                &mut d[s.unfrag..s.unfrag + FRAG_HEADER_LEN],
                s.next,
                off,
                !last,
                ident,
            );
            d[s.unfrag + FRAG_HEADER_LEN..].copy_from_slice(&data[off..off + n]);
            q.set_network_header(0, IP6_HEADER_LEN);
            *q.annotations_mut() = *src.annotations();
            self.fragments += 1;
            out.emit(0, q);
            off += n;
        }
    }
}

/// Writes a Fragment header: next header, offset in bytes (a multiple of
/// 8), M flag, identification.
fn write_fragment_header(h: &mut [u8], next: u8, offset: usize, more: bool, ident: u32) {
    h[0] = next;
    h[1] = 0;
    let fo = (offset as u16 & 0xfff8) | more as u16;
    h[2..4].copy_from_slice(&fo.to_be_bytes());
    h[4..8].copy_from_slice(&ident.to_be_bytes());
}

impl Element for IP6Fragmenter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let mtu = self.mtu as usize;
        for p in batch.drain() {
            let len = match p.network_header_offset() {
                Some(nh) => (p.len() as isize - nh).max(0) as usize,
                None => p.len(),
            };
            if len <= mtu {
                out.emit(0, p);
            } else {
                self.fragment(p, out);
            }
        }
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("cannot_fragment", self.drops);
        c.count("fragments", self.fragments);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("fragments"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "fragments" => Ok(self.fragments.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip6::checkip6header::tests::ip6_packet;
    use crate::standard::test_support::{bytes, configure, pkt, push, read};
    use pronto_packet::Pool;

    fn marked(pool: &Pool, d: &[u8], off: usize) -> Packet {
        let mut p = pkt(pool, d);
        p.set_network_header(off as isize, 40);
        p
    }

    /// The fragment the RFC describes: `unfrag` with payload length set
    /// and its last next header changed to 44, the Fragment header, data.
    fn frag(
        unfrag: &[u8],
        nh_pos: usize,
        next: u8,
        off: u16,
        more: bool,
        id: u32,
        data: &[u8],
    ) -> Vec<u8> {
        let mut f = unfrag.to_vec();
        f[nh_pos] = 44;
        f.extend_from_slice(&[next, 0]);
        f.extend_from_slice(&(off | more as u16).to_be_bytes());
        f.extend_from_slice(&id.to_be_bytes());
        f.extend_from_slice(data);
        let plen = (f.len() - 40) as u16;
        f[4..6].copy_from_slice(&plen.to_be_bytes());
        f
    }

    #[test]
    fn fragments_in_multiples_of_eight() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["MTU"], IP6Fragmenter::configure, "100", 1, 2).expect("ok");
        let data: Vec<u8> = (0..150u8).collect();
        let d = ip6_packet("2001:db8::1", "2001:db8::2", 17, &data);
        let small = ip6_packet("2001:db8::1", "2001:db8::2", 17, &data[..60]);
        let mut padded = d.clone();
        padded.extend_from_slice(&[0xee; 4]);
        let outs = push(
            e.as_mut(),
            &pool,
            vec![marked(&pool, &small, 0), marked(&pool, &padded, 0)],
            2,
        );
        // 100 - 40 - 8 = 52 -> 48 bytes per fragment: 48, 48, 48, 6.
        let hdr = &d[..40];
        let want = vec![
            small.clone(),
            frag(hdr, 6, 17, 0, true, 1, &data[..48]),
            frag(hdr, 6, 17, 48, true, 1, &data[48..96]),
            frag(hdr, 6, 17, 96, true, 1, &data[96..144]),
            frag(hdr, 6, 17, 144, false, 1, &data[144..]),
        ];
        assert_eq!(bytes(&outs[0]), want);
        assert!(outs[1].is_empty());
        assert_eq!(read(e.as_ref(), "fragments"), "4");
        // The next packet gets the next identification.
        let outs = push(e.as_mut(), &pool, vec![marked(&pool, &d, 0)], 2);
        assert_eq!(&outs[0][0].data()[44..48], &2u32.to_be_bytes());
        // The last fragment need not be a multiple of 8: with MTU 103, 55
        // bytes fit, so 100 bytes go as 48 and 52.
        let mut e = configure(&["MTU"], IP6Fragmenter::configure, "103", 1, 2).expect("ok");
        let d = ip6_packet("2001:db8::1", "2001:db8::2", 17, &data[..100]);
        let outs = push(e.as_mut(), &pool, vec![marked(&pool, &d, 0)], 2);
        let want = vec![
            frag(hdr, 6, 17, 0, true, 1, &data[..48]),
            frag(hdr, 6, 17, 48, false, 1, &data[48..100]),
        ];
        assert_eq!(bytes(&outs[0]), want);
    }

    #[test]
    fn keeps_the_link_header_and_the_routing_part() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["MTU"], IP6Fragmenter::configure, "120", 1, 1).expect("ok");
        // Hop-by-hop (8), destination options (8), routing (24), then
        // destination options (8) and 80 bytes of UDP.
        let mut pl = vec![60, 0, 1, 4, 0, 0, 0, 0];
        pl.extend_from_slice(&[43, 0, 1, 4, 0, 0, 0, 0]);
        pl.extend_from_slice(&[60, 2, 0, 1, 0, 0, 0, 0]);
        pl.extend_from_slice(&[0x20; 16]);
        let unfrag_ext = pl.len();
        pl.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
        let data: Vec<u8> = (0..80u8).collect();
        pl.extend_from_slice(&data);
        let d = ip6_packet("2001:db8::1", "2001:db8::2", 0, &pl);
        let mut framed = vec![0xaa; 14];
        framed.extend_from_slice(&d);
        let mut p = marked(&pool, &framed, 14);
        p.set_mac_header(0);
        let outs = push(e.as_mut(), &pool, vec![p], 1);
        let unfrag = &d[..40 + unfrag_ext];
        // 120 - 80 - 8 = 32 bytes per fragment of the 88 fragmentable.
        let rest = &d[40 + unfrag_ext..];
        let mut first = vec![0xaa; 14];
        first.extend_from_slice(&frag(unfrag, 56, 60, 0, true, 1, &rest[..32]));
        let want = vec![
            first,
            frag(unfrag, 56, 60, 32, true, 1, &rest[32..64]),
            frag(unfrag, 56, 60, 64, false, 1, &rest[64..]),
        ];
        assert_eq!(bytes(&outs[0]), want);
        assert_eq!(outs[0][0].network_header_offset(), Some(14));
        assert_eq!(outs[0][0].mac_header_offset(), Some(0));
    }

    #[test]
    fn refuses_what_it_cannot_fragment() {
        let pool = Pool::new(64).expect("pool");
        let mut e = configure(&["MTU"], IP6Fragmenter::configure, "55", 1, 2).expect("ok");
        let data = [7u8; 30];
        let d = ip6_packet("2001:db8::1", "2001:db8::2", 17, &data);
        // 55 - 40 - 8 = 7: no room for 8 data bytes.
        let mut already = ip6_packet("2001:db8::1", "2001:db8::2", 44, &data);
        already[40] = 17;
        let mut lying = d.clone();
        lying[5] = 200;
        let ps = vec![
            marked(&pool, &d, 0),
            marked(&pool, &already, 0),
            marked(&pool, &lying, 0),
            pkt(&pool, &d),
        ];
        let outs = push(e.as_mut(), &pool, ps, 2);
        assert!(outs[0].is_empty());
        assert_eq!(bytes(&outs[1]), vec![d.clone(), already, lying, d.clone()]);
        assert_eq!(read(e.as_ref(), "drops"), "4");
        assert_eq!(read(e.as_ref(), "fragments"), "0");
        let mut e = configure(&["MTU"], IP6Fragmenter::configure, "56", 1, 1).expect("ok");
        let outs = push(
            e.as_mut(),
            &pool,
            vec![marked(&pool, &d, 0), pkt(&pool, &d)],
            1,
        );
        assert_eq!(outs[0].len(), 4);
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }

    mod reassembly {
        use super::*;
        use proptest::prelude::*;

        /// An IPv6 packet with the extension headers `ext` (kind, length
        /// in 8-byte units less one) before `payload` bytes of UDP data.
        fn build(ext: &[(u8, u8)], payload: usize) -> Vec<u8> {
            let mut body = Vec::new();
            for (i, &(_, units)) in ext.iter().enumerate() {
                let next = ext.get(i + 1).map_or(17, |e| e.0);
                let len = (units as usize + 1) * 8;
                let mut h = vec![(i as u8).wrapping_mul(31); len];
                h[0] = next;
                h[1] = units;
                body.extend_from_slice(&h);
            }
            body.extend((0..payload).map(|i| (i * 7) as u8));
            let first = ext.first().map_or(17, |e| e.0);
            ip6_packet("2001:db8::1", "2001:db8::2", first, &body)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]

            /// Fragments fit the MTU, repeat the unfragmentable part, and
            /// their data, in offset order, is the original rest.
            #[test]
            fn fragments_reassemble(
                ext in proptest::collection::vec(
                    (prop_oneof![Just(0u8), Just(60u8), Just(43u8)], 0u8..4), 0..4),
                payload in 0usize..1400,
                mtu in 48u32..1500,
            ) {
                // Hop-by-Hop only first.
                let ext: Vec<(u8, u8)> = ext
                    .iter()
                    .enumerate()
                    .map(|(i, &(k, u))| if k == 0 && i > 0 { (60, u) } else { (k, u) })
                    .collect();
                let d = build(&ext, payload);
                let pool = Pool::new(512).expect("pool");
                let config = mtu.to_string();
                let mut e = configure(&["MTU"], IP6Fragmenter::configure, &config, 1, 2)
                    .expect("configures");
                let outs = push(e.as_mut(), &pool, vec![marked(&pool, &d, 0)], 2);
                if d.len() <= mtu as usize {
                    prop_assert_eq!(bytes(&outs[0]), vec![d]);
                    return Ok(());
                }
                // The unfragmentable part, from the list: up to the last
                // Hop-by-Hop or Routing header.
                let (mut unfrag, mut nh_pos, mut off) = (40, 6, 40);
                for &(k, u) in &ext {
                    let len = (u as usize + 1) * 8;
                    if k != 60 {
                        unfrag = off + len;
                        nh_pos = off;
                    }
                    off += len;
                }
                let s = Split { unfrag, nh_pos, next: d[nh_pos] };
                if outs[1].len() == 1 {
                    prop_assert!(outs[0].is_empty());
                    prop_assert!(s.unfrag + 16 > mtu as usize);
                    return Ok(());
                }
                let mut data = Vec::new();
                let n = outs[0].len();
                prop_assert!(n >= 2);
                for (i, f) in outs[0].iter().enumerate() {
                    let f = f.data();
                    prop_assert!(f.len() <= mtu as usize);
                    prop_assert_eq!(u16::from_be_bytes([f[4], f[5]]) as usize, f.len() - 40);
                    let mut head = d[..s.unfrag].to_vec();
                    head[s.nh_pos] = 44;
                    prop_assert_eq!(&f[6..s.unfrag], &head[6..]);
                    let fh = &f[s.unfrag..s.unfrag + 8];
                    prop_assert_eq!(fh[0], s.next);
                    let fo = u16::from_be_bytes([fh[2], fh[3]]);
                    prop_assert_eq!((fo & 0xfff8) as usize, data.len());
                    prop_assert_eq!(fo & 1 == 1, i + 1 < n);
                    prop_assert_eq!(&fh[4..8], &1u32.to_be_bytes());
                    let chunk = &f[s.unfrag + 8..];
                    if i + 1 < n {
                        prop_assert_eq!(chunk.len() % 8, 0);
                    }
                    data.extend_from_slice(chunk);
                }
                prop_assert_eq!(&data[..], &d[s.unfrag..]);
                prop_assert_eq!(read(e.as_ref(), "fragments"), n.to_string());
            }

            /// Arbitrary bytes never panic any IPv6 element.
            #[test]
            fn arbitrary_bytes(
                mut d in proptest::collection::vec(any::<u8>(), 0..300),
                mtu in 0u32..400,
                six in any::<bool>(),
            ) {
                if six && !d.is_empty() {
                    d[0] = 0x60 | (d[0] & 15);
                }
                let pool = Pool::new(512).expect("pool");
                let mut f = configure(&["MTU"], IP6Fragmenter::configure, &mtu.to_string(), 1, 2)
                    .expect("configures");
                let _ = push(f.as_mut(), &pool, vec![marked(&pool, &d, 0)], 2);
                let kw = crate::ip6::icmp6error::ICMP6Error::SPEC.keywords;
                let mut e = configure(kw, crate::ip6::icmp6error::ICMP6Error::configure,
                    "2001:db8::ff, 137, 0", 1, 1).expect("configures");
                let outs = push(e.as_mut(), &pool, vec![marked(&pool, &d, 0)], 1);
                for q in &outs[0] {
                    prop_assert!(q.len() <= 1280);
                }
                let kw = crate::ip6::checkip6header::CheckIP6Header::SPEC.keywords;
                let mut c = configure(kw, crate::ip6::checkip6header::CheckIP6Header::configure,
                    "PROCESS_EH true", 1, 2).expect("configures");
                let _ = push(c.as_mut(), &pool, vec![pkt(&pool, &d)], 2);
            }
        }
    }
}
