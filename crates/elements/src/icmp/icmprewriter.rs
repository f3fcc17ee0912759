//! `ICMPRewriter`: rewrites ICMP errors about flows that rewriters mapped.

use std::sync::{Arc, Mutex};

use pronto_packet::wire::{addr4, be16, set_be16, IP_PROTO_ICMP, IP_PROTO_TCP, IP_PROTO_UDP};
use pronto_packet::{Batch, Packet};

use crate::tcpudp::rwcore::lock;
use crate::tcpudp::rwcore::{update_in_cksum, Core, FlowId};
use crate::tcpudp::rwtable::{IcmpLookup, IcmpMapHandle};
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec, FIELD_DST_IP,
    FIELD_OTHER, FIELD_PAYLOAD,
};

/// IP protocol number of DCCP (ports where UDP has them).
const IP_PROTO_DCCP: u8 = 33;

/// ICMP error types that carry an embedded header: destination
/// unreachable, source quench, redirect, time exceeded, parameter problem.
const ERROR_TYPES: [u8; 5] = [3, 4, 5, 11, 12];

/// One rewriter consulted, with its optional output offset.
struct MapEntry {
    table: Arc<Mutex<dyn IcmpLookup>>,
    port_offset: Option<usize>,
}

/// Rewrites ICMP error packets whose embedded header belongs to a flow of
/// one of the named rewriters, so that they look like errors about the
/// original flow.
pub struct ICMPRewriter {
    maps: Vec<MapEntry>,
    dst_anno: bool,
    reply_anno: Option<usize>,
    noutputs: usize,
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
        }))
    }

    fn action(&mut self, p: &mut Packet) -> Option<usize> {
        let nh = match p.network_header_offset() {
            Some(o) if o >= 0 => o as usize,
            _ => return None,
        };
        let len = p.len();
        if len < nh + 20 || p.data()[nh + 9] != IP_PROTO_ICMP {
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

impl Element for ICMPRewriter {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        push_each(batch, out, |p, _| self.action(p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::iprewriter::IPRewriter;
    use crate::tcpudp::testutil::{
        config_error, configure, configure_with, packet, run, TestPeers,
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
}
