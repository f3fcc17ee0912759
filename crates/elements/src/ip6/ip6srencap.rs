//! `IP6SREncap`: adds a Segment Routing Header (FastClick's element), or,
//! with `SRC`, encapsulates in an outer IPv6 header with one (H.Encaps).

use pronto_packet::wire::ipv6::{next_header, IP6_HEADER_LEN};
use pronto_packet::wire::srv6::ROUTING_TYPE_SRH;
use pronto_packet::wire::{be16, set_be16};
use pronto_packet::{Batch, Packet};

use crate::args::Ip6;
use crate::util::cfg_err;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, FromArg, HandlerError, HandlerInfo,
    Out, Spec, FIELD_DST_IP, FIELD_OTHER,
};

/// Hop limit of the outer header H.Encaps adds.
const ENCAP_HOP_LIMIT: u8 = 64;

/// Adds a segment routing header to IPv6 packets.
pub struct IP6SREncap {
    /// The SRH as configured: next header 0, segment 0 the placeholder for
    /// the destination with ENCAP_DST.
    srh: Vec<u8>,
    encap_dst: bool,
    src: Option<[u8; 16]>,
    drops: u64,
}

impl IP6SREncap {
    /// FastClick's description of the class.
    pub const SPEC: Spec = Spec::new("IP6SREncap")
        .ports("1/1")
        .processing("a/a")
        .keywords(&["ENCAP_DST", "SRC"])
        .profile(
            ActionProfile::reads(FIELD_DST_IP | FIELD_OTHER)
                .writes(FIELD_DST_IP | FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "IP6SREncap(ADDR [, ADDR ...] [, ENCAP_DST BOOL] [, SRC ADDR])\n\n\
             Inserts an IPv6 Segment Routing Header (RFC 8754: routing type 4, flags and\n\
             tag 0) after the IPv6 header of each packet (after its hop-by-hop header, if\n\
             any), as FastClick's element does. The segment list is the ADDRs in the order\n\
             given, as they lie in the header (entry 0 is the last segment), preceded,\n\
             with ENCAP_DST true (the default), by the packet's destination as entry 0.\n\
             Segments Left and Last Entry are the index of the last entry; the\n\
             destination becomes that entry (so the last ADDR is visited first). The\n\
             payload length grows by the header's length; the destination IPv6\n\
             annotation is set to the new destination.\n\n\
             With SRC (pronto's addition; FastClick only inserts), the packet, IPv6 or\n\
             IPv4, is encapsulated instead (RFC 8986 H.Encaps): a new IPv6 header from\n\
             SRC with the SRH of the ADDRs (next header 41 or 4), traffic class and flow\n\
             label copied from an inner IPv6 header (the TOS of an inner IPv4 one, flow\n\
             label 0), hop limit 64. ENCAP_DST must then be false.\n\n\
             Dropped and counted: packets too short for their IP header or their IPv6\n\
             payload length, with another IP version, or that would not fit a packet\n\
             buffer.\n\n\
             Ports: 1 input, 1 output (agnostic).\n\
             Keywords:\n  ENCAP_DST  boolean; put the destination first in the list (default true)\n  \
             SRC        IPv6 address; encapsulate with this outer source\n\
             Handlers:\n  drops (read)  packets dropped",
        );

    /// Configures an `IP6SREncap`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let explicit_dst = a.read::<bool>("ENCAP_DST")?;
        let src = a.read::<Ip6>("SRC")?.map(|s| s.0);
        let mut addrs = Vec::new();
        for s in a.rest() {
            let v = Ip6::from_arg(&s).map_err(|e| cfg_err(format!("ADDR: {e}, found `{s}`")))?;
            addrs.push(v.0);
        }
        a.finish()?;
        if src.is_some() && explicit_dst == Some(true) {
            return Err(cfg_err(
                "ENCAP_DST true and SRC exclude each other: H.Encaps keeps the inner destination",
            ));
        }
        let encap_dst = explicit_dst.unwrap_or(src.is_none());
        let n = addrs.len() + encap_dst as usize;
        if n == 0 {
            return Err(cfg_err("missing ADDR: give at least one segment"));
        }
        if n > 128 {
            return Err(cfg_err(format!(
                "too many segments ({n}): at most 128 fit the header"
            )));
        }
        let mut srh = vec![
            0,
            (2 * n) as u8,
            ROUTING_TYPE_SRH,
            (n - 1) as u8,
            (n - 1) as u8,
            0,
            0,
            0,
        ];
        if encap_dst {
            srh.extend_from_slice(&[0; 16]);
        }
        for a in &addrs {
            srh.extend_from_slice(a);
        }
        Ok(Box::new(IP6SREncap {
            srh,
            encap_dst,
            src,
            drops: 0,
        }))
    }

    /// Inserts the SRH after the fixed header (and a hop-by-hop header).
    fn insert(&self, p: &mut Packet) -> Option<()> {
        let d = p.data();
        if d.len() < IP6_HEADER_LEN || d[0] >> 4 != 6 {
            return None;
        }
        let plen = be16(d, 4) as usize;
        if IP6_HEADER_LEN + plen > d.len() {
            return None;
        }
        let (ins, nh_field) = if d[6] == next_header::HOP_BY_HOP {
            let l = (*d.get(IP6_HEADER_LEN + 1)? as usize + 1) * 8;
            if IP6_HEADER_LEN + l > IP6_HEADER_LEN + plen {
                return None;
            }
            (IP6_HEADER_LEN + l, IP6_HEADER_LEN)
        } else {
            (IP6_HEADER_LEN, 6)
        };
        let n = self.srh.len();
        if plen + n > 0xffff {
            return None;
        }
        let dst: [u8; 16] = d[24..40].try_into().ok()?;
        let old_nh = d[nh_field];
        p.push(n)?;
        let d = p.data_mut();
        d.copy_within(n..n + ins, 0);
        let h = &mut d[ins..ins + n];
        h.copy_from_slice(&self.srh);
        h[0] = old_nh;
        if self.encap_dst {
            h[8..24].copy_from_slice(&dst);
        }
        let last = n - 16;
        let new_dst: [u8; 16] = h[last..n].try_into().ok()?;
        d[nh_field] = next_header::ROUTING;
        d[24..40].copy_from_slice(&new_dst);
        set_be16(d, 4, (plen + n) as u16);
        p.set_dst_ip6_anno(new_dst);
        p.set_network_header(0, ins + n);
        Some(())
    }

    /// H.Encaps: a new outer IPv6 header and the SRH.
    fn encap(&self, p: &mut Packet, src: &[u8; 16]) -> Option<()> {
        let d = p.data();
        let (nh, vtcfl) = match d.first().map(|b| b >> 4) {
            Some(6) if d.len() >= IP6_HEADER_LEN => (
                next_header::IPV6,
                u32::from_be_bytes([d[0], d[1], d[2], d[3]]) & 0x0fff_ffff,
            ),
            Some(4) if d.len() >= 20 => (4, (d[1] as u32) << 20),
            _ => return None,
        };
        let n = self.srh.len();
        let plen = n + d.len();
        if plen > 0xffff {
            return None;
        }
        let h = p.push(IP6_HEADER_LEN + n)?;
        h[..4].copy_from_slice(&(0x6000_0000 | vtcfl).to_be_bytes());
        set_be16(h, 4, plen as u16);
        h[6] = next_header::ROUTING;
        h[7] = ENCAP_HOP_LIMIT;
        h[8..24].copy_from_slice(src);
        let (o, s) = h.split_at_mut(IP6_HEADER_LEN);
        s.copy_from_slice(&self.srh);
        s[0] = nh;
        let new_dst: [u8; 16] = s[n - 16..n].try_into().ok()?;
        o[24..40].copy_from_slice(&new_dst);
        p.set_dst_ip6_anno(new_dst);
        p.set_network_header(0, IP6_HEADER_LEN + n);
        Some(())
    }

    #[inline]
    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let r = match &self.src {
            Some(s) => {
                let s = *s;
                self.encap(p, &s)
            }
            None => self.insert(p),
        };
        if r.is_none() {
            self.drops += 1;
            return None;
        }
        Some(0)
    }
}

impl Element for IP6SREncap {
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
