//! `IP6SRDecap`: removes a Segment Routing Header whose segments are done
//! (FastClick's element), or the outer header of an H.Encaps packet with it.

use pronto_packet::wire::ipv6::{self, next_header, IP6_HEADER_LEN, MAX_EXT_HEADERS};
use pronto_packet::wire::srv6::{Srh, ROUTING_TYPE_SRH};
use pronto_packet::wire::{be16, set_be16};
use pronto_packet::{Batch, Packet};

use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec, FIELD_DST_IP, FIELD_OTHER,
};

/// The checked SRH of an IPv6 packet: `Ok(None)` when it has none (or a
/// routing header of another type), `Err` when the packet or its SRH is
/// malformed.
pub(crate) fn find_srh(d: &[u8]) -> Result<Option<Srh>, ()> {
    if d.len() < IP6_HEADER_LEN || d[0] >> 4 != 6 {
        return Err(());
    }
    let w = ipv6::walk(d, MAX_EXT_HEADERS).map_err(|_| ())?;
    match w.routing {
        Some((off, ROUTING_TYPE_SRH)) => Srh::parse(d, off).map(Some).map_err(|_| ()),
        _ => Ok(None),
    }
}

/// Offset of the next-header field that names the header at `target`
/// (6 for the first extension header), walking the chain of `d`.
fn next_field_before(d: &[u8], target: usize) -> Option<usize> {
    let (mut field, mut off) = (6, IP6_HEADER_LEN);
    while off < target {
        let nh = *d.get(field)?;
        let len = match nh {
            next_header::FRAGMENT => 8,
            next_header::AH => (*d.get(off + 1)? as usize + 2) * 4,
            _ => (*d.get(off + 1)? as usize + 1) * 8,
        };
        field = off;
        off += len;
    }
    (off == target).then_some(field)
}

/// Removes segment routing headers.
pub struct IP6SRDecap {
    force: bool,
    drops: u64,
}

impl IP6SRDecap {
    /// FastClick's description of the class.
    pub const SPEC: Spec = Spec::new("IP6SRDecap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["FORCE_DECAP"])
        .profile(
            ActionProfile::reads(FIELD_DST_IP | FIELD_OTHER)
                .writes(FIELD_DST_IP | FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "IP6SRDecap([FORCE_DECAP BOOL])\n\n\
             Processes the Segment Routing Header (RFC 8754) of IPv6 packets, as\n\
             FastClick's element does. A packet without one (or with a routing header of\n\
             another type) passes unchanged. When Segments Left is 0, or always with\n\
             FORCE_DECAP true, the SRH is removed: the destination becomes segment list\n\
             entry 0 (the final segment), the header before it names the SRH's next\n\
             header, and the payload length shrinks by the SRH's length (TLVs included).\n\
             If the SRH's next header is IPv6 (41) or IPv4 (4), the packet was\n\
             encapsulated (H.Encaps): the outer header and everything up to the end of\n\
             the SRH are removed, leaving the inner packet (End.DX6/End.DX4-style; pronto's\n\
             addition). Otherwise (Segments Left above 0, no FORCE_DECAP), Segments Left\n\
             is decremented and the destination becomes the segment it then names (the\n\
             End behaviour). The destination annotation is set to the new destination.\n\
             Upper-layer checksums are left alone: their pseudo-header uses the final\n\
             destination (RFC 8200 section 8.1).\n\n\
             Dropped and counted: packets too short for an IPv6 header, of another\n\
             version, whose extension-header chain runs past the packet, and SRHs that\n\
             run past the packet, whose segment list (Last Entry) does not fit their\n\
             length, or whose Segments Left exceeds Last Entry; inner packets too short\n\
             for their IP header. (FastClick trusts these fields.)\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  FORCE_DECAP  boolean; remove the SRH whatever Segments Left (default false)\n\
             Handlers:\n  drops (read)  packets dropped",
        );

    /// Configures an `IP6SRDecap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let force = a.read_or("FORCE_DECAP", false)?;
        a.finish()?;
        Ok(Box::new(IP6SRDecap { force, drops: 0 }))
    }

    fn process(&self, p: &mut Packet) -> Option<()> {
        let Some(s) = find_srh(p.data()).ok()? else {
            return Some(());
        };
        if !self.force && s.segments_left > 0 {
            let sl = s.segments_left - 1;
            let dst = s.segment(p.data(), sl);
            let d = p.data_mut();
            d[s.offset + 3] = sl;
            d[24..40].copy_from_slice(&dst);
            p.set_dst_ip6_anno(dst);
            return Some(());
        }
        let end = s.offset + s.len;
        if s.next_header == next_header::IPV6 || s.next_header == 4 {
            let inner = p.data().get(end..)?;
            match inner.first().map(|b| b >> 4) {
                Some(6) if s.next_header == next_header::IPV6 && inner.len() >= IP6_HEADER_LEN => {
                    let dst = ipv6::addr16(inner, 24);
                    p.pull(end);
                    p.set_dst_ip6_anno(dst);
                    p.set_network_header(0, IP6_HEADER_LEN);
                }
                Some(4) if s.next_header == 4 && inner.len() >= 20 => {
                    let ihl = ((inner[0] & 15) as usize * 4).max(20);
                    let dst = [inner[16], inner[17], inner[18], inner[19]];
                    p.pull(end);
                    p.set_dst_ip6_anno([0; 16]);
                    p.set_dst_ip_anno(dst);
                    p.set_network_header(0, ihl.min(p.len()));
                }
                _ => return None,
            }
            return Some(());
        }
        let field = next_field_before(p.data(), s.offset)?;
        let last = s.segment(p.data(), 0);
        let plen = be16(p.data(), 4) as usize;
        let d = p.data_mut();
        d[field] = s.next_header;
        d.copy_within(0..s.offset, s.len);
        p.pull(s.len);
        let d = p.data_mut();
        set_be16(d, 4, plen.saturating_sub(s.len) as u16);
        d[24..40].copy_from_slice(&last);
        p.set_dst_ip6_anno(last);
        p.set_network_header(0, IP6_HEADER_LEN);
        Some(())
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        if self.process(p).is_none() {
            self.drops += 1;
            return None;
        }
        Some(0)
    }
}

impl Element for IP6SRDecap {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("malformed", self.drops);
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
    use crate::ip6::ip6srencap::IP6SREncap;
    use crate::ip6::ip6srprocess::IP6SRProcess;
    use crate::standard::test_support::{bytes, config_err, configure, pkt, push, read};
    use pronto_packet::Pool;

    fn a6(s: &str) -> [u8; 16] {
        s.parse::<std::net::Ipv6Addr>().expect("address").octets()
    }

    /// IPv6 UDP 2001:db8::1 -> 2001:db8::99, hop limit 64, 11 bytes.
    fn udp6() -> Vec<u8> {
        let mut p = vec![0x60, 0, 0, 0, 0, 11, 17, 64];
        p.extend_from_slice(&a6("2001:db8::1"));
        p.extend_from_slice(&a6("2001:db8::99"));
        p.extend_from_slice(&[0x30, 0x39, 0, 53, 0, 11, 0x12, 0x34, b'a', b'b', b'c']);
        p
    }

    fn run(e: &mut dyn Element, pool: &Pool, data: &[u8], nout: usize) -> Vec<Vec<Vec<u8>>> {
        push(e, pool, vec![pkt(pool, data)], nout)
            .iter()
            .map(|o| bytes(o))
            .collect()
    }

    #[test]
    fn insert_process_decap_round_trip() {
        let pool = Pool::new(64).expect("pool");
        let mut enc = configure(
            IP6SREncap::SPEC.keywords,
            IP6SREncap::configure,
            "2001:db8:a::1, 2001:db8:b::1",
            1,
            1,
        )
        .expect("configures");
        let out = run(enc.as_mut(), &pool, &udp6(), 1);
        let e = &out[0][0];
        let mut want = udp6();
        want[5] = 11 + 56;
        want[6] = 43;
        want[24..40].copy_from_slice(&a6("2001:db8:b::1"));
        let mut srh = vec![17, 6, 4, 2, 2, 0, 0, 0];
        srh.extend_from_slice(&a6("2001:db8::99"));
        srh.extend_from_slice(&a6("2001:db8:a::1"));
        srh.extend_from_slice(&a6("2001:db8:b::1"));
        want.splice(40..40, srh);
        assert_eq!(e, &want);

        let mut pr = configure(&[], IP6SRProcess::configure, "", 1, 2).expect("configures");
        let s1 = run(pr.as_mut(), &pool, e, 2)[0][0].clone();
        assert_eq!(s1[43], 1, "segments left");
        assert_eq!(&s1[24..40], &a6("2001:db8:a::1"));
        let s0 = run(pr.as_mut(), &pool, &s1, 2)[0][0].clone();
        assert_eq!(s0[43], 0);
        assert_eq!(&s0[24..40], &a6("2001:db8::99"));
        // Segments left 0: for the upper layer, output 1, unchanged.
        let up = run(pr.as_mut(), &pool, &s0, 2);
        assert!(up[0].is_empty());
        assert_eq!(up[1][0], s0);
        // Not a local SID: output 0 unchanged.
        let mut only = configure(&[], IP6SRProcess::configure, "2001:db8:c::1", 1, 1).expect("ok");
        assert_eq!(run(only.as_mut(), &pool, e, 1)[0][0], *e);

        let mut dec = configure(IP6SRDecap::SPEC.keywords, IP6SRDecap::configure, "", 1, 1)
            .expect("configures");
        // Segments left 2: the End behaviour, as FastClick does.
        assert_eq!(run(dec.as_mut(), &pool, e, 1)[0][0], s1);
        // Segments left 0: the SRH goes, the packet is what was sent.
        assert_eq!(run(dec.as_mut(), &pool, &s0, 1)[0][0], udp6());
        // Without an SRH: unchanged.
        assert_eq!(run(dec.as_mut(), &pool, &udp6(), 1)[0][0], udp6());
        let mut force = configure(
            IP6SRDecap::SPEC.keywords,
            IP6SRDecap::configure,
            "FORCE_DECAP true",
            1,
            1,
        )
        .expect("configures");
        let f = run(force.as_mut(), &pool, e, 1)[0][0].clone();
        assert_eq!(f, udp6(), "segment 0 is the original destination");
        assert_eq!(read(dec.as_ref(), "drops"), "0");
    }

    #[test]
    fn h_encaps_and_decap() {
        let pool = Pool::new(64).expect("pool");
        let mut enc = configure(
            IP6SREncap::SPEC.keywords,
            IP6SREncap::configure,
            "2001:db8:a::1, SRC 2001:db8::ff",
            1,
            1,
        )
        .expect("configures");
        let e = run(enc.as_mut(), &pool, &udp6(), 1)[0][0].clone();
        let mut want = vec![0x60, 0, 0, 0, 0, (24 + 51) as u8, 43, 64];
        want.extend_from_slice(&a6("2001:db8::ff"));
        want.extend_from_slice(&a6("2001:db8:a::1"));
        want.extend_from_slice(&[41, 2, 4, 0, 0, 0, 0, 0]);
        want.extend_from_slice(&a6("2001:db8:a::1"));
        want.extend_from_slice(&udp6());
        assert_eq!(e, want);
        let mut dec = configure(IP6SRDecap::SPEC.keywords, IP6SRDecap::configure, "", 1, 1)
            .expect("configures");
        assert_eq!(run(dec.as_mut(), &pool, &e, 1)[0][0], udp6());
        // An IPv4 packet inside.
        let v4 = [
            0x45, 0xb8, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        let e4 = run(enc.as_mut(), &pool, &v4, 1)[0][0].clone();
        assert_eq!(&e4[..4], &[0x6b, 0x80, 0, 0], "traffic class from the TOS");
        assert_eq!(e4[40], 4);
        assert_eq!(run(dec.as_mut(), &pool, &e4, 1)[0][0], v4);
    }

    #[test]
    fn bad_headers_are_counted_and_dropped() {
        let pool = Pool::new(64).expect("pool");
        let mut enc = configure(
            IP6SREncap::SPEC.keywords,
            IP6SREncap::configure,
            "2001:db8:a::1, 2001:db8:b::1",
            1,
            1,
        )
        .expect("configures");
        let good = run(enc.as_mut(), &pool, &udp6(), 1)[0][0].clone();
        let mut sl_big = good.clone();
        sl_big[43] = 3; // segments left > last entry
        let mut short_list = good.clone();
        short_list[41] = 4; // hdr ext len too small for 3 segments
        let mut le_big = good.clone();
        le_big[44] = 9; // last entry beyond the header
        let cut = good[..70].to_vec(); // SRH past the packet
        let mut dec = configure(IP6SRDecap::SPEC.keywords, IP6SRDecap::configure, "", 1, 1)
            .expect("configures");
        let mut pr = configure(&[], IP6SRProcess::configure, "", 1, 1).expect("configures");
        for bad in [&sl_big, &short_list, &le_big, &cut, &good[..20].to_vec()] {
            assert!(run(dec.as_mut(), &pool, bad, 1)[0].is_empty());
            assert!(run(pr.as_mut(), &pool, bad, 1)[0].is_empty());
        }
        assert_eq!(read(dec.as_ref(), "drops"), "5");
        assert_eq!(read(pr.as_ref(), "drops"), "5");
        assert!(run(enc.as_mut(), &pool, &udp6()[..30], 1)[0].is_empty());
        assert_eq!(read(enc.as_ref(), "drops"), "1");
        let kw = IP6SREncap::SPEC.keywords;
        assert_eq!(
            config_err(configure(
                kw,
                IP6SREncap::configure,
                "ENCAP_DST false",
                1,
                1
            )),
            "missing ADDR: give at least one segment"
        );
        assert!(
            config_err(configure(kw, IP6SREncap::configure, "10.0.0.1", 1, 1))
                .starts_with("ADDR: ")
        );
        assert!(config_err(configure(
            kw,
            IP6SREncap::configure,
            "2001:db8::1, SRC ::1, ENCAP_DST true",
            1,
            1
        ))
        .starts_with("ENCAP_DST true and SRC exclude each other"));
    }
}
