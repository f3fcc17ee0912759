//! `ICMPRewriter`: rewrites ICMP errors about flows that rewriters mapped.

use std::sync::{Arc, Mutex};

use pronto_packet::wire::flow::{FiveTuple, Flow as WireFlow, Fragment};
use pronto_packet::wire::{addr4, be16, set_be16, IP_PROTO_ICMP, IP_PROTO_TCP, IP_PROTO_UDP};
use pronto_packet::{Batch, Packet};

use crate::tcpudp::rwcore::lock;
use crate::tcpudp::rwcore::{update_in_cksum, Core, FlowId};
use crate::tcpudp::rwtable::{IcmpLookup, IcmpMapHandle, IP_PROTO_ICMPV6};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_DST_IP,
    FIELD_OTHER, FIELD_PAYLOAD,
};

/// IP protocol number of DCCP (ports where UDP has them).
const IP_PROTO_DCCP: u8 = 33;

/// ICMP error types that carry an embedded header: destination
/// unreachable, source quench, redirect, time exceeded, parameter problem.
const ERROR_TYPES: [u8; 5] = [3, 4, 5, 11, 12];

/// ICMPv6 error types (RFC 4443): destination unreachable, packet too big,
/// time exceeded, parameter problem.
const ERROR_TYPES6: [u8; 4] = [1, 2, 3, 4];

/// ICMPv6 echo request type.
const ICMP6_ECHO: u8 = 128;

/// Writes the 16-bit words of `new` from `off`; returns `csum` updated
/// for each word changed.
#[inline]
fn put_words(d: &mut [u8], off: usize, new: &[u8], mut csum: u16) -> u16 {
    for (i, w) in new.chunks_exact(2).enumerate() {
        let n = u16::from_be_bytes([w[0], w[1]]);
        csum = update_in_cksum(csum, be16(d, off + 2 * i), n);
    }
    d[off..off + new.len()].copy_from_slice(new);
    csum
}

/// One rewriter consulted, with its optional output offset.
struct MapEntry {
    table: Arc<Mutex<dyn IcmpLookup>>,
    port_offset: Option<usize>,
}

/// Rewrites ICMP and ICMPv6 error packets whose embedded header belongs to
/// a flow of one of the named rewriters, so that they look like errors
/// about the original flow.
pub struct ICMPRewriter {
    maps: Vec<MapEntry>,
    dst_anno: bool,
    reply_anno: Option<usize>,
    noutputs: usize,
    /// Packets dropped: not an ICMP error, or quoting no flow of the
    /// rewriters it serves.
    drops: u64,
}

/// Reads the 16-bit words of `n` bytes at `off`.
#[inline]
fn words(b: &[u8], off: usize, out: &mut [u16]) {
    for (i, w) in out.iter_mut().enumerate() {
        *w = be16(b, off + 2 * i);
    }
}

/// Updates `csum` for each changed word.
#[inline]
fn update_words(mut csum: u16, old: &[u16], new: &[u16]) -> u16 {
    for (o, n) in old.iter().zip(new) {
        csum = update_in_cksum(csum, *o, *n);
    }
    csum
}

impl ICMPRewriter {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ICMPRewriter")
        .ports("1/1-")
        .processing("h/h")
        .keywords(&["MAPS", "DST_ANNO", "REPLY_ANNO"])
        .phase(crate::PHASE_DEFAULT + 1)
        .profile(
            ActionProfile::reads(FIELD_DST_IP | FIELD_PAYLOAD | FIELD_OTHER)
                .writes(FIELD_DST_IP | FIELD_PAYLOAD | FIELD_OTHER)
                .dropping(),
        )
        .doc(
            "ICMPRewriter(MAPS [, KEYWORDS])\n\n\
             Rewrites ICMP error packets (destination unreachable, time exceeded,\n\
             parameter problem, source quench, redirect) that answer packets a\n\
             rewriter changed. MAPS is a space-separated list of rewriters\n\
             (IPRewriter, TCPRewriter, UDPRewriter, IPAddrRewriter,\n\
             IPAddrPairRewriter, ICMPPingRewriter), each\n\
             optionally 'NAME:OFFSET'. The embedded IP header (and its TCP/UDP/DCCP\n\
             ports or ICMP echo identifier) is looked up, reversed, in each\n\
             rewriter in turn; on a match the embedded addresses, ports or\n\
             identifier, its IP and transport checksums, the outer destination\n\
             address (when it equals the embedded source) and the outer IP and ICMP\n\
             checksums are rewritten to match the original flow. The packet goes to\n\
             output 0, or to OFFSET plus the mapping's output for 'NAME:OFFSET'.\n\
             Packets without a match, ICMP packets that are not errors, and\n\
             non-ICMP packets are dropped. Input packets need their IP header\n\
             annotation.\n\n\
             IPv6 (pronto's own; Click's is IPv4-only): ICMPv6 errors (destination\n\
             unreachable 1, packet too big 2, time exceeded 3, parameter problem 4)\n\
             about IPv6 flows of IPRewriter, TCPRewriter, UDPRewriter or\n\
             ICMPPingRewriter are rewritten the same way: the outer and embedded\n\
             extension headers are walked (bounded), the embedded addresses, TCP/UDP/\n\
             DCCP ports or echo identifier and embedded TCP/UDP/ICMPv6 checksum\n\
             (where the quote holds it) are mapped back, the outer destination when\n\
             it equals the embedded source, and the ICMPv6 checksum, which covers\n\
             the pseudo-header, is updated for every change. Fragmented errors,\n\
             quotes cut inside their headers and errors about unknown flows are\n\
             dropped.\n\n\
             Ports: 1 push input, 1 or more push outputs.\n\
             Keywords:\n  \
             DST_ANNO    set the destination address annotation when the outer\n              \
             destination is rewritten (default true)\n  \
             REPLY_ANNO  on reply mappings, restore the flow's saved annotation byte",
        );

    /// Configures an `ICMPRewriter`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let maps: String = a.read_mp("MAPS")?;
        let dst_anno = a.read_or("DST_ANNO", true)?;
        let reply_anno = match a.read::<String>("REPLY_ANNO")? {
            Some(s) => Some(crate::tcpudp::rwcore::parse_anno(&s)?),
            None => None,
        };
        a.finish()?;
        let mut entries = Vec::new();
        for word in maps.split_whitespace() {
            let not_rw = |n: &str| ConfigError::new(format!("{n} not an IP rewriter"));
            let (name, offset) = match word.split_once(':') {
                Some((n, o)) => match pronto_lang::args::parse_i64(o) {
                    Ok(v) => (n, v),
                    Err(_) => return Err(not_rw(word)),
                },
                None => (word, -1),
            };
            let peer = ctx.peer(name).ok_or_else(|| not_rw(name))?;
            let Some(shared) = peer.shared.clone() else {
                return Err(not_rw(name));
            };
            let (table, rw_noutputs): (Arc<Mutex<dyn IcmpLookup>>, usize) =
                match shared.downcast::<IcmpMapHandle>() {
                    Ok(h) => (h.table.clone(), h.noutputs),
                    Err(s) => match s.downcast::<Mutex<Core>>() {
                        Ok(core) => {
                            let n = lock(&core).noutputs();
                            (core, n)
                        }
                        Err(_) => return Err(not_rw(name)),
                    },
                };
            if offset >= 0 && offset as usize + rw_noutputs > ctx.noutputs {
                return Err(ConfigError::new(format!(
                    "{word} port offset requires more than {} {}",
                    ctx.noutputs,
                    if ctx.noutputs == 1 {
                        "output"
                    } else {
                        "outputs"
                    }
                )));
            }
            entries.push(MapEntry {
                table,
                port_offset: (offset >= 0).then_some(offset as usize),
            });
        }
        if entries.is_empty() {
            return Err(ConfigError::new("no IP rewriters supplied"));
        }
        Ok(Box::new(ICMPRewriter {
            maps: entries,
            dst_anno,
            reply_anno,
            noutputs: ctx.noutputs,
            drops: 0,
        }))
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let nh = match p.network_header_offset() {
            Some(o) if o >= 0 => o as usize,
            _ => return None,
        };
        let len = p.len();
        if len < nh + 20 {
            return None;
        }
        if p.data()[nh] >> 4 == 6 {
            let port = self.handle6(p, nh)?;
            return (port < self.noutputs).then_some(port);
        }
        if p.data()[nh + 9] != IP_PROTO_ICMP {
            return None;
        }
        let th = match p.transport_header_offset() {
            Some(t) if t >= 0 => t as usize,
            _ => nh + ((p.data()[nh] & 15) as usize) * 4,
        };
        let port = self.handle(p, nh, th)?;
        (port < self.noutputs).then_some(port)
    }

    /// Rewrites an ICMP error; the output, or `None` when nothing matched.
    fn handle(&mut self, p: &mut Packet, nh: usize, th: usize) -> Option<usize> {
        let len = p.len();
        if th >= len || !ERROR_TYPES.contains(&p.data()[th]) || len - th < 28 {
            return None;
        }
        let d = p.data();
        let enc = th + 8;
        let ehl = ((d[enc] & 15) as usize) * 4;
        if d[enc] >> 4 != 4 || ehl < 20 {
            return None;
        }
        let et = enc + ehl;
        let enc_p = d[enc + 9];
        let first = be16(d, enc + 6) & 0x1fff == 0;
        let mut search = FlowId {
            saddr: u32::from_be_bytes(addr4(d, enc + 16)),
            daddr: u32::from_be_bytes(addr4(d, enc + 12)),
            sport: 0,
            dport: 0,
        };
        let mut use_transp = false;
        if matches!(enc_p, IP_PROTO_TCP | IP_PROTO_UDP | IP_PROTO_DCCP) {
            if et + 8 <= len && first {
                search.sport = be16(d, et + 2);
                search.dport = be16(d, et);
                use_transp = true;
            }
        } else if enc_p == IP_PROTO_ICMP && et + 6 <= len && first && d[et] == 8 {
            search.sport = be16(d, et + 4);
            use_transp = true;
        }
        let (m, offset) = self.maps.iter().find_map(|e| {
            lock(&e.table)
                .icmp_lookup(enc_p, search)
                .map(|m| (m, e.port_offset))
        })?;
        let new = m.rewritten;
        if u32::from_be_bytes(addr4(p.data(), nh + 16)) == search.daddr {
            if self.dst_anno {
                p.set_dst_ip_anno(new.daddr.to_be_bytes());
            }
            let d = p.data_mut();
            let mut old = [0u16; 2];
            words(d, nh + 16, &mut old);
            d[nh + 16..nh + 20].copy_from_slice(&new.daddr.to_be_bytes());
            let mut nw = [0u16; 2];
            words(d, nh + 16, &mut nw);
            let c = update_words(be16(d, nh + 10), &old, &nw);
            set_be16(d, nh + 10, c);
        }
        if m.reply {
            if let Some(off) = self.reply_anno {
                p.anno_bytes_mut()[off] = m.reply_anno;
            }
        }
        let d = p.data_mut();
        let (mut old, mut nw) = ([0u16; 8], [0u16; 8]);
        old[0] = be16(d, enc + 10);
        words(d, enc + 12, &mut old[1..5]);
        d[enc + 12..enc + 16].copy_from_slice(&new.daddr.to_be_bytes());
        d[enc + 16..enc + 20].copy_from_slice(&new.saddr.to_be_bytes());
        words(d, enc + 12, &mut nw[1..5]);
        let c = update_words(old[0], &old[1..5], &nw[1..5]);
        set_be16(d, enc + 10, c);
        nw[0] = c;
        let mut nhw = 5;
        if use_transp {
            if enc_p == IP_PROTO_ICMP {
                old[5] = be16(d, et + 4);
                nw[5] = new.dport;
                set_be16(d, et + 4, new.dport);
                old[6] = be16(d, et + 2);
                let mut c = update_in_cksum(old[6], old[5], nw[5]);
                // All zero but the checksum (still the old one here).
                let zero = |b: &[u8]| b.iter().all(|x| *x == 0);
                if c == 0 && zero(&d[et..et + 2]) && zero(&d[et + 4..]) {
                    c = 0xffff;
                }
                set_be16(d, et + 2, c);
                nw[6] = c;
                nhw = 7;
            } else {
                words(d, et, &mut old[5..7]);
                set_be16(d, et, new.dport);
                set_be16(d, et + 2, new.sport);
                words(d, et, &mut nw[5..7]);
                nhw = 7;
                let csum_off = if enc_p == IP_PROTO_TCP && et + 18 <= len {
                    Some(et + 16)
                } else if enc_p == IP_PROTO_UDP && et + 8 <= len && be16(d, et + 6) != 0 {
                    Some(et + 6)
                } else {
                    None
                };
                if let Some(off) = csum_off {
                    old[7] = be16(d, off);
                    let c = update_words(old[7], &old[1..7], &nw[1..7]);
                    set_be16(d, off, c);
                    nw[7] = c;
                    nhw = 8;
                }
            }
        }
        let c = update_words(be16(d, th + 2), &old[..nhw], &nw[..nhw]);
        set_be16(d, th + 2, c);
        Some(offset.map_or(0, |o| o + m.output))
    }
}

impl ICMPRewriter {
    /// Rewrites an ICMPv6 error about an IPv6 flow a rewriter mapped, as
    /// [`ICMPRewriter::handle`] does an ICMP error (pronto's own). The
    /// outer and embedded headers' extension headers are walked by
    /// `wire::flow` (bounded); a fragmented error, a quote too short for
    /// its headers and 8 bytes after them, or no match: `None`. Every
    /// 16-bit word changed in the message (embedded addresses, ports or
    /// identifier, the embedded checksum) and the outer destination, when
    /// it is rewritten, update the ICMPv6 checksum, which covers the
    /// pseudo-header; the embedded TCP/UDP/ICMPv6 checksum is updated for
    /// the embedded addresses (its pseudo-header) and ports or identifier.
    #[cold]
    #[inline(never)]
    fn handle6(&mut self, p: &mut Packet, nh: usize) -> Option<usize> {
        let d = p.data();
        let outer = WireFlow::parse_ipv6(&d[nh..]).ok()?;
        if outer.tuple.proto != IP_PROTO_ICMPV6
            || outer.fragment != Fragment::Unfragmented
            || !ERROR_TYPES6.contains(&outer.icmp_type)
        {
            return None;
        }
        let th = nh + outer.l4_offset;
        let enc = th + 8;
        let inner = WireFlow::parse_ipv6_quote(d.get(enc..)?).ok()?;
        let et = enc + inner.l4_offset;
        let t = inner.tuple;
        let len = d.len();
        let later = inner.fragment == Fragment::Later;
        let ports = !later && matches!(t.proto, IP_PROTO_TCP | IP_PROTO_UDP | IP_PROTO_DCCP);
        let echo = !later && t.proto == IP_PROTO_ICMPV6 && d[et] == ICMP6_ECHO;
        let search = FiveTuple::v6(
            t.proto,
            t.dst,
            if ports || echo { t.dport } else { 0 },
            t.src,
            if ports { t.sport } else { 0 },
        );
        let (m, offset) = self.maps.iter().find_map(|e| {
            lock(&e.table)
                .icmp_lookup6(&search)
                .map(|m| (m, e.port_offset))
        })?;
        let new = m.rewritten;
        let mut outer_sum = be16(d, th + 2);
        if d[nh + 24..nh + 40] == search.dst {
            if self.dst_anno {
                p.set_dst_ip6_anno(new.dst);
            }
            outer_sum = put_words(p.data_mut(), nh + 24, &new.dst, outer_sum);
        }
        if m.reply {
            if let Some(off) = self.reply_anno {
                p.anno_bytes_mut()[off] = m.reply_anno;
            }
        }
        let d = p.data_mut();
        // The embedded transport checksum, where the quote holds it.
        let csum_off = if echo {
            Some(et + 2)
        } else if !ports {
            None
        } else if t.proto == IP_PROTO_TCP && et + 18 <= len {
            Some(et + 16)
        } else if t.proto == IP_PROTO_UDP && et + 8 <= len && be16(d, et + 6) != 0 {
            Some(et + 6)
        } else {
            None
        };
        let old_inner = csum_off.map_or(0, |o| be16(d, o));
        let mut inner_sum = old_inner;
        for (off, a) in [(enc + 8, &new.dst), (enc + 24, &new.src)] {
            for i in 0..8 {
                let n = u16::from_be_bytes([a[2 * i], a[2 * i + 1]]);
                let o = be16(d, off + 2 * i);
                inner_sum = update_in_cksum(inner_sum, o, n);
                outer_sum = update_in_cksum(outer_sum, o, n);
            }
            d[off..off + 16].copy_from_slice(a);
        }
        let mut words: [(usize, u16); 2] = [(0, 0); 2];
        let nwords = if echo {
            words[0] = (et + 4, new.dport);
            1
        } else if ports {
            words = [(et, new.dport), (et + 2, new.sport)];
            2
        } else {
            0
        };
        for &(off, n) in &words[..nwords] {
            let o = be16(d, off);
            inner_sum = update_in_cksum(inner_sum, o, n);
            outer_sum = update_in_cksum(outer_sum, o, n);
            set_be16(d, off, n);
        }
        if let Some(off) = csum_off {
            if t.proto == IP_PROTO_UDP && inner_sum == 0 {
                inner_sum = 0xffff;
            }
            outer_sum = update_in_cksum(outer_sum, old_inner, inner_sum);
            set_be16(d, off, inner_sum);
        }
        set_be16(d, th + 2, outer_sum);
        Some(offset.map_or(0, |o| o + m.output))
    }
}

impl Element for ICMPRewriter {
    fn one_for_one(&self) -> bool {
        true
    }

    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| {
            let r = self.action(p);
            if r.is_none() {
                self.drops += 1;
            }
            r
        });
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("no_mapping", self.drops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::iprewriter::IPRewriter;
    use crate::tcpudp::testutil::{
        config_error, configure, configure_with, ip6, packet, run, run_packets, TestPeers,
    };
    use crate::tcpudp::udprewriter::UDPRewriter;
    use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
    use pronto_packet::Pool;

    /// An IP header (no options) of `proto` from `src` to `dst` carrying
    /// `payload`, with its checksum.
    fn ip(src: [u8; 4], dst: [u8; 4], proto: u8, id: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![
            0x45,
            0x00, // version/IHL, TOS
            0,
            0, // total length (below)
            (id >> 8) as u8,
            id as u8, // identification
            0x00,
            0x00, // no fragment
            64,
            proto, // TTL, protocol
            0,
            0, // checksum (below)
        ];
        v.extend_from_slice(&src);
        v.extend_from_slice(&dst);
        v.extend_from_slice(payload);
        let len = v.len() as u16;
        v[2..4].copy_from_slice(&len.to_be_bytes());
        let c = checksum(&v[..20]);
        v[10..12].copy_from_slice(&c.to_be_bytes());
        v
    }

    /// A UDP or TCP (20-byte header, ACK) segment with its checksum.
    fn l4(proto: u8, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&sport.to_be_bytes());
        v.extend_from_slice(&dport.to_be_bytes());
        let off = if proto == 17 {
            // length, checksum
            v.extend_from_slice(&((8 + data.len()) as u16).to_be_bytes());
            v.extend_from_slice(&[0, 0]);
            6
        } else {
            // seq, ack, offset 5 + ACK, window, checksum, urgent pointer
            v.extend_from_slice(&[0, 0, 0, 7, 0, 0, 0, 9, 0x50, 0x10, 0x20, 0x00, 0, 0, 0, 0]);
            16
        };
        v.extend_from_slice(data);
        let ps = pseudo_header_sum(&src, &dst, proto, v.len());
        let c = !fold(ones_sum(&v, ps));
        v[off..off + 2].copy_from_slice(&c.to_be_bytes());
        v
    }

    /// An ICMP destination unreachable (code `code`) from `src` to `dst`
    /// quoting `quote`.
    fn unreach(src: [u8; 4], dst: [u8; 4], code: u8, quote: &[u8]) -> Vec<u8> {
        let mut m = vec![3, code, 0, 0, 0, 0, 0, 0]; // type, code, checksum, unused
        m.extend_from_slice(quote);
        let c = checksum(&m);
        m[2..4].copy_from_slice(&c.to_be_bytes());
        ip(src, dst, 1, 0x7777, &m)
    }

    const INSIDE: [u8; 4] = [192, 168, 1, 2];
    const NAT: [u8; 4] = [10, 0, 0, 1];
    const DNS: [u8; 4] = [8, 8, 8, 8];

    /// The outbound UDP packet 192.168.1.2:5000 -> 8.8.8.8:53.
    fn query() -> Vec<u8> {
        ip(
            INSIDE,
            DNS,
            17,
            0x1234,
            &l4(17, INSIDE, DNS, 5000, 53, b"query"),
        )
    }

    /// Configures rewriter `rw` (`factory`), sends `query()` through it, and
    /// configures `ICMPRewriter(maps)` naming it.
    fn setup(
        factory: crate::Factory,
        spec: &Spec,
        class: &'static str,
        maps: &str,
        noutputs: usize,
        pool: &Pool,
    ) -> (Box<dyn Element>, Box<dyn Element>) {
        let mut rw = configure(
            factory,
            spec,
            "pattern 10.0.0.1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("rewriter");
        // Peers are configured before packets flow.
        let mut peers = TestPeers::default();
        peers.add("rw", class, rw.as_ref());
        let ir = configure_with(
            ICMPRewriter::configure,
            &ICMPRewriter::SPEC,
            maps,
            1,
            noutputs,
            &peers,
        )
        .expect("icmp rewriter");
        let o = run(
            rw.as_mut(),
            0,
            vec![packet(pool, &query(), Some((0, 20)))],
            2,
            pool,
            0,
        );
        // The query leaves as 10.0.0.1:1024.
        let natted = ip(NAT, DNS, 17, 0x1234, &l4(17, NAT, DNS, 1024, 53, b"query"));
        assert_eq!(o[0], vec![natted]);
        (rw, ir)
    }

    #[test]
    fn port_unreachable_about_a_natted_udp_flow_is_translated_back() {
        let pool = Pool::new(64).expect("pool");
        let (_rw, mut ir) = setup(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "IPRewriter",
            "rw:1",
            3,
            &pool,
        );
        // 8.8.8.8 says port unreachable to 10.0.0.1, quoting the NATed
        // query whole.
        let natted = ip(NAT, DNS, 17, 0x1234, &l4(17, NAT, DNS, 1024, 53, b"query"));
        let err = unreach(DNS, NAT, 3, &natted);
        let p = packet(&pool, &err, Some((0, 20)));
        let o = run(ir.as_mut(), 0, vec![p], 3, &pool, 0);
        // It becomes the error the inside host would have had about its own
        // packet: outer destination, quoted source address and port, and
        // every checksum as if computed afresh. The quote matched the reply
        // entry, whose output is 1: offset 1 makes it output 2.
        let want = unreach(DNS, INSIDE, 3, &query());
        assert!(o[0].is_empty() && o[1].is_empty());
        assert_eq!(o[2], vec![want]);

        // Only the first 8 bytes of the UDP header quoted: the same.
        let err = unreach(DNS, NAT, 3, &natted[..28]);
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &err, Some((0, 20)))],
            3,
            &pool,
            0,
        );
        assert_eq!(o[2], vec![unreach(DNS, INSIDE, 3, &query()[..28])]);

        // A TCP segment with the same addresses and ports belongs to no
        // mapping (TCP flows have their own table): dropped.
        let tcp = ip(NAT, DNS, 6, 0x1234, &l4(6, NAT, DNS, 1024, 53, b""));
        let err = unreach(DNS, NAT, 3, &tcp);
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &err, Some((0, 20)))],
            3,
            &pool,
            0,
        );
        assert!(o.iter().all(|v| v.is_empty()));
    }

    #[test]
    fn a_tcp_quote_does_not_match_a_udp_mapping_of_one_table() {
        // UDPRewriter keeps TCP and UDP flows in one table: the lookup must
        // check the quoted protocol.
        let pool = Pool::new(64).expect("pool");
        let (_rw, mut ir) = setup(
            UDPRewriter::configure,
            &UDPRewriter::SPEC,
            "UDPRewriter",
            "rw",
            1,
            &pool,
        );
        let tcp = ip(NAT, DNS, 6, 0x1234, &l4(6, NAT, DNS, 1024, 53, b""));
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &unreach(DNS, NAT, 3, &tcp), Some((0, 20)))],
            1,
            &pool,
            0,
        );
        assert!(o[0].is_empty());
        // The UDP quote matches; without an offset it goes to output 0.
        let natted = ip(NAT, DNS, 17, 0x1234, &l4(17, NAT, DNS, 1024, 53, b"query"));
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &unreach(DNS, NAT, 3, &natted), Some((0, 20)))],
            1,
            &pool,
            0,
        );
        assert_eq!(o[0], vec![unreach(DNS, INSIDE, 3, &query())]);
    }

    #[test]
    fn port_offsets_need_the_rewriters_outputs() {
        let rw = configure(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern 10.0.0.1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("rewriter");
        let mut peers = TestPeers::default();
        peers.add("rw", "IPRewriter", rw.as_ref());
        let err = |maps: &str, n: usize| {
            config_error(configure_with(
                ICMPRewriter::configure,
                &ICMPRewriter::SPEC,
                maps,
                1,
                n,
                &peers,
            ))
            .message
        };
        assert_eq!(
            err("rw:1", 2),
            "rw:1 port offset requires more than 2 outputs"
        );
        assert_eq!(
            err("rw:0", 1),
            "rw:0 port offset requires more than 1 output"
        );
        assert_eq!(err("rw:x", 2), "rw:x not an IP rewriter");
    }

    #[test]
    fn configuration_errors() {
        let e = config_error(configure(
            ICMPRewriter::configure,
            &ICMPRewriter::SPEC,
            "rw",
            1,
            1,
        ));
        assert_eq!(e.message, "rw not an IP rewriter");
        let e = config_error(configure(
            ICMPRewriter::configure,
            &ICMPRewriter::SPEC,
            "\"\"",
            1,
            1,
        ));
        assert_eq!(e.message, "no IP rewriters supplied");
    }

    // ------------------------------------------------------------ IPv6

    /// `2001:db8:<a>::<b>`.
    fn a6(a: u16, b: u16) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        v[4..6].copy_from_slice(&a.to_be_bytes());
        v[14..].copy_from_slice(&b.to_be_bytes());
        v
    }

    const IN6: (u16, u16) = (1, 2);
    const NAT6: (u16, u16) = (0xffff, 1);
    const SRV6: (u16, u16) = (3, 9);
    const ROUTER6: (u16, u16) = (4, 1);

    fn h(a: (u16, u16)) -> [u8; 16] {
        a6(a.0, a.1)
    }

    /// A UDP datagram `sport` -> `dport` behind the extension headers
    /// `ext` (the last naming UDP), its checksum computed from scratch.
    fn udp6(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16, ext: &[u8]) -> Vec<u8> {
        let mut m = ext.to_vec();
        m.extend_from_slice(&sport.to_be_bytes());
        m.extend_from_slice(&dport.to_be_bytes());
        m.extend_from_slice(&13u16.to_be_bytes()); // length: 8 + "query"
        m.extend_from_slice(&[0, 0]);
        m.extend_from_slice(b"query");
        let next = if ext.is_empty() { 17 } else { 60 };
        ip6(src, dst, next, &m, (17, ext.len()), Some(6))
    }

    /// A TCP segment (20-byte header, ACK) with its checksum.
    fn tcp6(src: [u8; 16], dst: [u8; 16], sport: u16, dport: u16) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&sport.to_be_bytes());
        m.extend_from_slice(&dport.to_be_bytes());
        m.extend_from_slice(&[0, 0, 0, 7, 0, 0, 0, 9, 0x50, 0x10, 0x20, 0x00, 0, 0, 0, 0]);
        m.extend_from_slice(b"data");
        ip6(src, dst, 6, &m, (6, 0), Some(16))
    }

    /// An ICMPv6 echo request.
    fn echo6(src: [u8; 16], dst: [u8; 16], id: u16) -> Vec<u8> {
        let mut m = vec![128, 0, 0, 0];
        m.extend_from_slice(&id.to_be_bytes());
        m.extend_from_slice(&[0, 1, b'p', b'i', b'n', b'g']);
        ip6(src, dst, 58, &m, (58, 0), Some(2))
    }

    /// An ICMPv6 error of `ty`/`code` from `src` to `dst` quoting `quote`,
    /// its checksum computed from scratch over the pseudo-header.
    fn err6(ty: u8, code: u8, src: [u8; 16], dst: [u8; 16], quote: &[u8]) -> Vec<u8> {
        let mut m = vec![ty, code, 0, 0, 0, 0, 0x05, 0x00]; // MTU/pointer/unused 1280
        m.extend_from_slice(quote);
        ip6(src, dst, 58, &m, (58, 0), Some(2))
    }

    /// An `ICMPRewriter(MAPS)` over rewriter `rw` of class `class`.
    fn icmp_rw(rw: &dyn Element, class: &'static str, maps: &str, n: usize) -> Box<dyn Element> {
        let mut peers = TestPeers::default();
        peers.add("rw", class, rw);
        configure_with(
            ICMPRewriter::configure,
            &ICMPRewriter::SPEC,
            maps,
            1,
            n,
            &peers,
        )
        .expect("icmp rewriter")
    }

    #[test]
    fn icmpv6_errors_about_natted_udp_and_tcp_flows_are_translated_back() {
        let pool = Pool::new(64).expect("pool");
        let mut rw = configure(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern 2001:db8:ffff::1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("rewriter");
        let mut ir = icmp_rw(rw.as_ref(), "IPRewriter", "rw:1", 3);
        let (inside, nat, srv, router) = (h(IN6), h(NAT6), h(SRV6), h(ROUTER6));
        let p = packet(&pool, &udp6(inside, srv, 5000, 53, &[]), Some((0, 40)));
        let o = run(rw.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![udp6(nat, srv, 1024, 53, &[])]);
        let p = packet(&pool, &tcp6(inside, srv, 40000, 443), Some((0, 40)));
        let o = run(rw.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![tcp6(nat, srv, 1025, 443)]);

        // Port unreachable from the server quoting the NATted datagram:
        // back to the inside host, quoting what it sent; output 1 + 1.
        let e = err6(1, 4, srv, nat, &udp6(nat, srv, 1024, 53, &[]));
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &e, Some((0, 40)))],
            3,
            &pool,
            0,
        );
        let want = err6(1, 4, srv, inside, &udp6(inside, srv, 5000, 53, &[]));
        assert_eq!(o[2], vec![want]);
        // Packet too big from a router, quoting only 48 bytes of the TCP
        // segment (its checksum is cut off): ports and addresses mapped.
        let seg = tcp6(nat, srv, 1025, 443);
        let e = err6(2, 0, router, nat, &seg[..48]);
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &e, Some((0, 40)))],
            3,
            &pool,
            0,
        );
        let orig = tcp6(inside, srv, 40000, 443);
        assert_eq!(o[2], vec![err6(2, 0, router, inside, &orig[..48])]);
        // The whole segment quoted: its checksum is restored too.
        let e = err6(3, 0, router, nat, &seg);
        let o = run_packets(
            ir.as_mut(),
            0,
            vec![packet(&pool, &e, Some((0, 40)))],
            3,
            &pool,
            0,
        );
        assert_eq!(o[2][0].data(), &err6(3, 0, router, inside, &orig)[..]);
        assert_eq!(o[2][0].dst_ip6_anno(), inside);
        // An error sent elsewhere than the flow's address keeps its outer
        // destination; the quote is still mapped.
        let other = a6(0xffff, 2);
        let e = err6(4, 0, router, other, &udp6(nat, srv, 1024, 53, &[]));
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &e, Some((0, 40)))],
            3,
            &pool,
            0,
        );
        assert_eq!(
            o[2],
            vec![err6(4, 0, router, other, &udp6(inside, srv, 5000, 53, &[]))]
        );
    }

    #[test]
    fn an_icmpv6_error_quoting_extension_headers_and_an_echo() {
        let pool = Pool::new(64).expect("pool");
        let mut rw = configure(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern 2001:db8:ffff::1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("rewriter");
        let mut pr = configure(
            crate::icmp::icmppingrewriter::ICMPPingRewriter::configure,
            &crate::icmp::icmppingrewriter::ICMPPingRewriter::SPEC,
            "pattern 2001:db8:ffff::1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("ping rewriter");
        let mut peers = TestPeers::default();
        peers.add("rw", "IPRewriter", rw.as_ref());
        peers.add("pr", "ICMPPingRewriter", pr.as_ref());
        let mut ir = configure_with(
            ICMPRewriter::configure,
            &ICMPRewriter::SPEC,
            "rw pr",
            1,
            1,
            &peers,
        )
        .expect("icmp rewriter");
        let (inside, nat, srv, router) = (h(IN6), h(NAT6), h(SRV6), h(ROUTER6));
        // A destination-options header (PadN) before UDP.
        let dopt = [17, 0, 1, 4, 0, 0, 0, 0];
        let p = packet(&pool, &udp6(inside, srv, 5000, 53, &dopt), Some((0, 40)));
        let o = run(rw.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![udp6(nat, srv, 1024, 53, &dopt)]);
        let e = err6(3, 0, router, nat, &udp6(nat, srv, 1024, 53, &dopt));
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &e, Some((0, 40)))],
            1,
            &pool,
            0,
        );
        assert_eq!(
            o[0],
            vec![err6(
                3,
                0,
                router,
                inside,
                &udp6(inside, srv, 5000, 53, &dopt)
            )]
        );
        // A ping: time exceeded quoting the NATted echo request.
        let p = packet(&pool, &echo6(inside, srv, 7), Some((0, 40)));
        let o = run(pr.as_mut(), 0, vec![p], 2, &pool, 0);
        assert_eq!(o[0], vec![echo6(nat, srv, 1024)]);
        let e = err6(3, 0, router, nat, &echo6(nat, srv, 1024));
        let o = run(
            ir.as_mut(),
            0,
            vec![packet(&pool, &e, Some((0, 40)))],
            1,
            &pool,
            0,
        );
        assert_eq!(
            o[0],
            vec![err6(3, 0, router, inside, &echo6(inside, srv, 7))]
        );
    }

    #[test]
    fn icmpv6_packets_without_a_mapping_are_dropped() {
        let pool = Pool::new(64).expect("pool");
        let rw = configure(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern 2001:db8:ffff::1 1024-65535# - - 0 1, drop",
            2,
            2,
        )
        .expect("rewriter");
        let mut ir = icmp_rw(rw.as_ref(), "IPRewriter", "rw", 1);
        let (nat, srv, router) = (h(NAT6), h(SRV6), h(ROUTER6));
        let quote = udp6(nat, srv, 1024, 53, &[]);
        let mut bad = vec![
            // No flow of that quote.
            err6(1, 4, srv, nat, &quote),
            // Not an error: an echo request, a neighbour solicitation.
            echo6(router, nat, 1),
            err6(135, 0, router, nat, &quote),
            // A quote cut inside its fixed header (and below, one whose
            // destination-options header runs past the quote).
            err6(1, 4, srv, nat, &quote[..30]),
        ];
        let mut q = quote.clone();
        q[6] = 60;
        bad.push(err6(1, 4, srv, nat, &q[..44]));
        // UDP, not ICMPv6.
        bad.push(udp6(srv, nat, 53, 1024, &[]));
        for b in bad {
            let o = run(
                ir.as_mut(),
                0,
                vec![packet(&pool, &b, Some((0, 40)))],
                1,
                &pool,
                0,
            );
            assert!(o[0].is_empty(), "{b:02x?}");
        }
    }
}
