//! Parallel service chains (NFP): the elements a compiled parallel
//! service graph runs on.
//!
//! - [`nfptag::NfpTag`] (`NFPTag`) tags each packet with its service graph
//!   and a packet id, in order;
//! - [`nfpcopy::NfpCopy`] (`NFPCopy`) hands the packet to the branches of a
//!   parallel group: the original to one, a full copy or a copy of the
//!   headers alone to the others;
//! - [`nfpencap::NfpEncap`] / [`nfpencap::NfpDecap`] (`NFPEncap`,
//!   `NFPDecap`) carry the tag inside the frame between processes;
//! - [`nfpmerge::NfpMerge`] (`NFPMerge`) waits for every version of a
//!   packet (a bounded wait), applies each written field from the branch
//!   that owns it, drops the packet if a branch dropped it (unless a
//!   higher priority branch passed it), and emits packets in id order.
//!
//! The tag lives in the annotation area at [`NFP_ANNO_OFFSET`]: packet id
//! (4 bytes, little-endian), graph (2 bytes), a tagged flag (1 byte), the
//! merger the id belongs to (1 byte). With several mergers (load-balanced
//! by packet), each has its own sequence of ids, so that each sees
//! consecutive ids and settles them in order.

use pronto_packet::Packet;

pub mod nfpcopy;
pub mod nfpencap;
pub mod nfpmerge;
pub mod nfpmergerswitch;
pub mod nfptag;

/// Offset of the NFP tag in the annotation area (8 bytes).
pub const NFP_ANNO_OFFSET: usize = 40;

/// The tag of a packet: `(graph, packet id)`, if it has one.
#[inline]
pub fn tag_of(p: &Packet) -> Option<(u16, u32)> {
    let a = p.anno_bytes();
    let t = &a[NFP_ANNO_OFFSET..NFP_ANNO_OFFSET + 8];
    (t[6] == 1).then(|| {
        (
            u16::from_le_bytes([t[4], t[5]]),
            u32::from_le_bytes([t[0], t[1], t[2], t[3]]),
        )
    })
}

/// Tags `p` with `graph` and packet id `id` (for merger 0).
#[inline]
pub fn set_tag(p: &mut Packet, graph: u16, id: u32) {
    set_tag_for(p, graph, id, 0);
}

/// Tags `p` with `graph` and packet id `id` in the sequence of merger
/// `merger` (where several mergers share a group's packets).
#[inline]
pub fn set_tag_for(p: &mut Packet, graph: u16, id: u32, merger: u8) {
    let a = p.anno_bytes_mut();
    let t = &mut a[NFP_ANNO_OFFSET..NFP_ANNO_OFFSET + 8];
    t[..4].copy_from_slice(&id.to_le_bytes());
    t[4..6].copy_from_slice(&graph.to_le_bytes());
    t[6] = 1;
    t[7] = merger;
}

/// The merger a tagged packet's id belongs to (0 when one merger takes
/// every packet).
#[inline]
pub fn merger_of(p: &Packet) -> u8 {
    p.anno_bytes()[NFP_ANNO_OFFSET + 7]
}

/// A packet field a network function reads or writes, as the merger
/// copies it between versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// IPv4 source address.
    SrcIp,
    /// IPv4 destination address.
    DstIp,
    /// TCP/UDP source port.
    SrcPort,
    /// TCP/UDP destination port.
    DstPort,
    /// Everything after the transport header.
    Payload,
}

impl Field {
    /// Parses `src_ip`, `dst_ip`, `src_port`, `dst_port` or `payload`.
    pub fn parse(s: &str) -> Option<Field> {
        Some(match s {
            "src_ip" => Field::SrcIp,
            "dst_ip" => Field::DstIp,
            "src_port" => Field::SrcPort,
            "dst_port" => Field::DstPort,
            "payload" => Field::Payload,
            _ => return None,
        })
    }

    /// The field's name.
    pub fn name(self) -> &'static str {
        match self {
            Field::SrcIp => "src_ip",
            Field::DstIp => "dst_ip",
            Field::SrcPort => "src_port",
            Field::DstPort => "dst_port",
            Field::Payload => "payload",
        }
    }
}

/// Where the headers of an Ethernet/IPv4 frame are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Offset of the IPv4 header.
    pub ip: usize,
    /// Offset of the transport header.
    pub l4: usize,
    /// IP protocol.
    pub proto: u8,
    /// Offset of the payload (after the TCP or UDP header; `l4` for other
    /// protocols).
    pub payload: usize,
}

/// TCP's protocol number.
pub const TCP: u8 = 6;
/// UDP's protocol number.
pub const UDP: u8 = 17;

impl Layout {
    /// Parses the frame's IPv4 header at `ip` (and its TCP or UDP header);
    /// `None` when it is no complete IPv4 packet.
    pub fn of(data: &[u8], ip: usize) -> Option<Layout> {
        let h = data.get(ip..)?;
        if h.len() < 20 || h[0] >> 4 != 4 {
            return None;
        }
        let ihl = (h[0] & 15) as usize * 4;
        if ihl < 20 || h.len() < ihl {
            return None;
        }
        let proto = h[9];
        let l4 = ip + ihl;
        let fragment = u16::from_be_bytes([h[6], h[7]]) & 0x1fff != 0;
        let l4len = match proto {
            _ if fragment => 0,
            TCP => {
                let t = data.get(l4..l4 + 20)?;
                let doff = (t[12] >> 4) as usize * 4;
                if doff < 20 || data.len() < l4 + doff {
                    return None;
                }
                doff
            }
            UDP => {
                data.get(l4..l4 + 8)?;
                8
            }
            _ => 0,
        };
        Some(Layout {
            ip,
            l4,
            proto: if fragment { 0 } else { proto },
            payload: l4 + l4len,
        })
    }

    /// True if the packet has TCP or UDP ports.
    pub fn has_ports(&self) -> bool {
        self.proto == TCP || self.proto == UDP
    }

    /// Offset of the transport checksum, for TCP and UDP.
    pub fn l4_checksum(&self) -> Option<usize> {
        match self.proto {
            TCP => Some(self.l4 + 16),
            UDP => Some(self.l4 + 6),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::nfpcopy::NfpCopy;
    use super::nfpmerge::NfpMerge;
    use super::nfptag::NfpTag;
    use super::*;
    use crate::standard::test_support as t;
    use crate::Control;
    use pronto_packet::wire::{checksum, fold, ones_sum, pseudo_header_sum};
    use pronto_packet::Pool;

    /// An Ethernet/IPv4/UDP frame with correct checksums.
    fn udp(src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 0x08;
        let total = 20 + 8 + payload.len();
        let mut ip = vec![
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            1,
            0,
            0,
            64,
            UDP,
            0,
            0,
        ];
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&dst);
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        let ulen = 8 + payload.len();
        let mut u = vec![0u8; 8];
        u[0..2].copy_from_slice(&sport.to_be_bytes());
        u[2..4].copy_from_slice(&dport.to_be_bytes());
        u[4..6].copy_from_slice(&(ulen as u16).to_be_bytes());
        u.extend_from_slice(payload);
        let s = ones_sum(&u, pseudo_header_sum(&src, &dst, UDP, ulen));
        let mut c = !fold(s);
        if c == 0 {
            c = 0xffff;
        }
        u[6..8].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&u);
        f
    }

    /// What a network function writing `field` of a frame does: the new
    /// value and incremental checksum updates.
    fn write(frame: &mut [u8], field: Field, v: &[u8]) {
        use pronto_packet::wire::{update_checksum16, update_checksum32};
        let (at, ip) = match field {
            Field::SrcIp => (26, true),
            Field::DstIp => (30, true),
            Field::SrcPort => (34, false),
            Field::DstPort => (36, false),
            Field::Payload => {
                // A payload rewrite recomputes the UDP checksum.
                let n = v.len();
                frame[42..42 + n].copy_from_slice(v);
                frame[40..42].copy_from_slice(&[0, 0]);
                let (src, dst): ([u8; 4], [u8; 4]) = (
                    frame[26..30].try_into().expect("4"),
                    frame[30..34].try_into().expect("4"),
                );
                let ulen = frame.len() - 34;
                let mut c = !fold(ones_sum(
                    &frame[34..],
                    pseudo_header_sum(&src, &dst, UDP, ulen),
                ));
                if c == 0 {
                    c = 0xffff;
                }
                frame[40..42].copy_from_slice(&c.to_be_bytes());
                return;
            }
        };
        let be = |f: &[u8], o: usize| u16::from_be_bytes([f[o], f[o + 1]]);
        if ip {
            let old: [u8; 4] = frame[at..at + 4].try_into().expect("4");
            let new: [u8; 4] = v.try_into().expect("4");
            frame[at..at + 4].copy_from_slice(&new);
            let c = update_checksum32(be(frame, 24), old, new);
            frame[24..26].copy_from_slice(&c.to_be_bytes());
            let c = update_checksum32(be(frame, 40), old, new);
            frame[40..42].copy_from_slice(&c.to_be_bytes());
        } else {
            let old = be(frame, at);
            let new = u16::from_be_bytes([v[0], v[1]]);
            frame[at..at + 2].copy_from_slice(&v[..2]);
            let c = update_checksum16(be(frame, 40), old, new);
            frame[40..42].copy_from_slice(&c.to_be_bytes());
        }
    }

    fn checksums_ok(f: &[u8]) -> bool {
        let ipok = checksum(&f[14..34]) == 0;
        let src: [u8; 4] = f[26..30].try_into().expect("4");
        let dst: [u8; 4] = f[30..34].try_into().expect("4");
        let ulen = f.len() - 34;
        ipok && fold(ones_sum(&f[34..], pseudo_header_sum(&src, &dst, UDP, ulen))) == 0xffff
    }

    fn merge(config: &str, nin: usize) -> Box<dyn crate::Element> {
        t::configure(NfpMerge::SPEC.keywords, NfpMerge::configure, config, nin, 1)
            .expect("configures")
    }

    fn tagged(pool: &Pool, frame: &[u8], id: u32) -> Packet {
        let mut p = t::pkt(pool, frame);
        set_tag(&mut p, 7, id);
        p
    }

    #[test]
    fn the_tag_crosses_a_process_inside_the_frame() {
        use super::nfpencap::{NfpDecap, NfpEncap};
        let pool = Pool::new(8).expect("pool");
        let mut enc = t::configure(
            NfpEncap::SPEC.keywords,
            NfpEncap::configure,
            "BRANCH 3",
            1,
            1,
        )
        .expect("encap");
        let mut dec =
            t::configure(NfpDecap::SPEC.keywords, NfpDecap::configure, "", 1, 1).expect("decap");
        let f = udp([10, 0, 0, 1], 1000, [10, 0, 0, 2], 53, b"abc");
        let out = t::push(enc.as_mut(), &pool, vec![tagged(&pool, &f, 0x01020304)], 1);
        let wire = out[0][0].data().to_vec();
        assert_eq!(
            out[0][0].mac_header_offset(),
            Some(0),
            "the link header moved"
        );
        assert_eq!(wire.len(), f.len() + 10);
        assert_eq!(&wire[..12], &f[..12]);
        assert_eq!(
            &wire[12..24],
            &[0x88, 0xb5, 1, 2, 3, 4, 0, 7, 3, 0, 0x08, 0x00]
        );
        assert_eq!(&wire[24..], &f[14..]);
        // On the other side: a fresh packet with the frame's bytes only.
        drop(out);
        let out = t::push(dec.as_mut(), &pool, vec![t::pkt(&pool, &wire)], 1);
        assert_eq!(t::bytes(&out[0]), vec![f.clone()]);
        assert_eq!(tag_of(&out[0][0]), Some((7, 0x01020304)));
        assert_eq!(out[0][0].paint_anno(), 3);
        // Frames without the shim, and untagged packets, pass unchanged.
        let out = t::push(dec.as_mut(), &pool, vec![t::pkt(&pool, &f)], 1);
        assert_eq!(t::bytes(&out[0]), vec![f.clone()]);
        assert_eq!(t::read(dec.as_ref(), "plain"), "1");
        let out = t::push(enc.as_mut(), &pool, vec![t::pkt(&pool, &f)], 1);
        assert_eq!(t::bytes(&out[0]), vec![f]);
        assert_eq!(t::read(enc.as_ref(), "untagged"), "1");
    }

    #[test]
    fn several_mergers_take_packets_in_turn_each_with_its_own_ids() {
        use super::nfpmergerswitch::NfpMergerSwitch;
        let pool = Pool::new(16).expect("pool");
        let mut tag =
            t::configure(NfpTag::SPEC.keywords, NfpTag::configure, "MERGERS 3", 1, 1).expect("tag");
        let mut sw = t::configure(
            NfpMergerSwitch::SPEC.keywords,
            NfpMergerSwitch::configure,
            "",
            1,
            3,
        )
        .expect("switch");
        let f = udp([10, 0, 0, 1], 1000, [10, 0, 0, 2], 53, b"abc");
        let pkts = (0..7).map(|_| t::pkt(&pool, &f)).collect();
        let tagged = t::push(tag.as_mut(), &pool, pkts, 1).remove(0);
        let out = t::push(sw.as_mut(), &pool, tagged, 3);
        let ids = |v: &Vec<Packet>| v.iter().map(|p| tag_of(p).map(|t| t.1)).collect::<Vec<_>>();
        assert_eq!(ids(&out[0]), vec![Some(1), Some(2), Some(3)]);
        assert_eq!(ids(&out[1]), vec![Some(1), Some(2)]);
        assert_eq!(ids(&out[2]), vec![Some(1), Some(2)]);
        assert_eq!(merger_of(&out[2][0]), 2);
    }

    #[test]
    fn tag_numbers_packets_in_order() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            NfpTag::SPEC.keywords,
            NfpTag::configure,
            "3, FIRST 10",
            1,
            1,
        )
        .expect("tag");
        let f = udp([10, 0, 0, 1], 1000, [10, 0, 0, 2], 53, b"abc");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &f), t::pkt(&pool, &f)],
            1,
        );
        let tags: Vec<_> = out[0].iter().map(tag_of).collect();
        assert_eq!(tags, vec![Some((3, 10)), Some((3, 11))]);
        assert_eq!(t::read(e.as_ref(), "count"), "2");
        assert_eq!(tag_of(&t::pkt(&pool, &f)), None);
    }

    #[test]
    fn copy_sends_the_original_a_full_copy_and_the_headers() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(
            NfpCopy::SPEC.keywords,
            NfpCopy::configure,
            "full, orig, header",
            1,
            3,
        )
        .expect("copy");
        let f = udp([10, 0, 0, 1], 1000, [10, 0, 0, 2], 53, b"payload bytes");
        let out = t::push(e.as_mut(), &pool, vec![tagged(&pool, &f, 5)], 3);
        assert_eq!(t::bytes(&out[0]), vec![f.clone()]);
        assert_eq!(t::bytes(&out[1]), vec![f.clone()]);
        assert_eq!(out[2][0].len(), f.len(), "a header copy keeps the length");
        assert_eq!(&out[2][0].data()[..42], &f[..42], "and the headers");
        assert_eq!(tag_of(&out[2][0]), Some((7, 5)), "copies keep the tag");
        assert_eq!(t::read(e.as_ref(), "header_copies"), "1");
        let err = t::config_err(t::configure(
            NfpCopy::SPEC.keywords,
            NfpCopy::configure,
            "full, full",
            1,
            2,
        ));
        assert_eq!(
            err,
            "exactly one output gets the packet itself (`orig`), found 0"
        );
    }

    /// A NAT writing the source on the original and a load balancer
    /// writing the destination on a header copy, in parallel, give the
    /// bytes of the two in sequence.
    #[test]
    fn merged_fields_equal_the_sequential_result() {
        let pool = Pool::new(16).expect("pool");
        let mut m = merge("orig src_ip src_port, header dst_ip dst_port", 2);
        let f = udp([10, 0, 0, 1], 1000, [10, 0, 0, 2], 53, b"some payload");
        let mut seq = f.clone();
        write(&mut seq, Field::SrcIp, &[192, 0, 2, 1]);
        write(&mut seq, Field::SrcPort, &4000u16.to_be_bytes());
        write(&mut seq, Field::DstIp, &[10, 9, 9, 9]);
        write(&mut seq, Field::DstPort, &80u16.to_be_bytes());
        assert!(checksums_ok(&seq));

        let mut nat = f.clone();
        write(&mut nat, Field::SrcIp, &[192, 0, 2, 1]);
        write(&mut nat, Field::SrcPort, &4000u16.to_be_bytes());
        let mut lb = f[..42].to_vec();
        lb.extend_from_slice(&f[42..]);
        write(&mut lb, Field::DstIp, &[10, 9, 9, 9]);
        write(&mut lb, Field::DstPort, &80u16.to_be_bytes());
        let lb = lb[..42].to_vec();

        let mut ctrl = Control::default();
        let out = t::push_at(
            m.as_mut(),
            &pool,
            1,
            vec![tagged(&pool, &lb, 1)],
            1,
            5,
            &mut ctrl,
        );
        assert!(out[0].is_empty(), "waits for the other version");
        assert_eq!(t::read(m.as_ref(), "pending"), "1");
        let out = t::push_at(
            m.as_mut(),
            &pool,
            0,
            vec![tagged(&pool, &nat, 1)],
            1,
            6,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![seq]);
        assert_eq!(t::read(m.as_ref(), "merged"), "1");
        assert_eq!(t::read(m.as_ref(), "pending"), "0");
    }

    #[test]
    fn a_drop_in_any_branch_drops_the_packet_in_order() {
        let pool = Pool::new(32).expect("pool");
        let mut m = merge("orig, header", 2);
        let f = |i: u8| udp([10, 0, 0, i], 1000, [10, 0, 0, 2], 53, b"x");
        let push = |m: &mut Box<dyn crate::Element>, port: usize, id: u32| {
            let frame = if port == 0 {
                f(id as u8)
            } else {
                f(id as u8)[..42].to_vec()
            };
            let mut ctrl = Control::default();
            t::push_at(
                m.as_mut(),
                &pool,
                port,
                vec![tagged(&pool, &frame, id)],
                1,
                10,
                &mut ctrl,
            )
        };
        let mut ctrl = Control::default();
        // id 1: only input 0 (input 1 dropped it); id 2: both, input 1
        // first (so id 1 is known dropped by input 1 as soon as its id 2
        // arrives); id 3: input 1 only (input 0 dropped it).
        assert!(push(&mut m, 0, 1)[0].is_empty());
        assert!(
            push(&mut m, 1, 2)[0].is_empty(),
            "id 1 settles (dropped), id 2 waits"
        );
        assert_eq!(t::read(m.as_ref(), "dropped"), "1");
        assert!(push(&mut m, 1, 3)[0].is_empty());
        let sent = push(&mut m, 0, 2);
        assert_eq!(t::bytes(&sent[0]), vec![f(2)]);
        drop(sent);
        // Input 0 moving past 3 settles it as dropped.
        let out = push(&mut m, 0, 4);
        assert!(out[0].is_empty());
        assert_eq!(t::read(m.as_ref(), "dropped"), "2");
        // id 4 waits for input 1: the bounded wait (10 ms) settles it.
        let (_, out) = t::run_task(m.as_mut(), &pool, vec![], 1, 10 + 5_000_000, &mut ctrl);
        assert!(out[0].is_empty());
        let (_, out) = t::run_task(m.as_mut(), &pool, vec![], 1, 10 + 10_000_000, &mut ctrl);
        assert!(out[0].is_empty());
        assert_eq!(t::read(m.as_ref(), "timeouts"), "1");
        assert_eq!(t::read(m.as_ref(), "dropped"), "3");
        assert_eq!(t::read(m.as_ref(), "pending"), "0");
        // A version after its packet left is late.
        assert!(push(&mut m, 1, 4)[0].is_empty());
        assert_eq!(t::read(m.as_ref(), "late"), "1");
        assert_eq!(pool.available(), 32, "every version was freed");
    }

    #[test]
    fn a_branch_slower_to_start_loses_no_packet() {
        // Input 1 dropped id 0 and delivers id 1 before input 0's first
        // version (id 0) arrives: id 0 is not late, it is dropped in
        // order, and id 1 leaves.
        let pool = Pool::new(8).expect("pool");
        let mut m = merge("orig, header", 2);
        let f = udp([10, 0, 0, 1], 1000, [10, 0, 0, 2], 53, b"x");
        let mut ctrl = Control::default();
        let out = t::push_at(
            m.as_mut(),
            &pool,
            1,
            vec![tagged(&pool, &f[..42], 1)],
            1,
            1,
            &mut ctrl,
        );
        assert!(out[0].is_empty());
        drop(out);
        let out = t::push_at(
            m.as_mut(),
            &pool,
            0,
            vec![tagged(&pool, &f, 0), tagged(&pool, &f, 1)],
            1,
            1,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![f.clone()]);
        drop(out);
        assert_eq!(t::read(m.as_ref(), "late"), "0");
        assert_eq!(t::read(m.as_ref(), "dropped"), "1");
        assert_eq!(t::read(m.as_ref(), "merged"), "1");
        // Once a packet has left, an older version is late.
        let out = t::push_at(
            m.as_mut(),
            &pool,
            0,
            vec![tagged(&pool, &f, 0)],
            1,
            1,
            &mut ctrl,
        );
        assert!(out[0].is_empty());
        drop(out);
        assert_eq!(t::read(m.as_ref(), "late"), "1");
        assert_eq!(pool.available(), 8, "every version was freed");
    }

    #[test]
    fn priority_lets_a_passing_branch_overrule_a_drop() {
        let pool = Pool::new(8).expect("pool");
        let mut m = merge("orig, full, PRIORITY 0 1", 2);
        let f = udp([10, 0, 0, 1], 1000, [10, 0, 0, 2], 53, b"x");
        let mut ctrl = Control::default();
        // Input 0 (priority 0) dropped id 1; input 1 (priority 1) passed
        // it: input 0's id 2 shows it moved past id 1.
        t::push_at(
            m.as_mut(),
            &pool,
            1,
            vec![tagged(&pool, &f, 1)],
            1,
            1,
            &mut ctrl,
        );
        let out = t::push_at(
            m.as_mut(),
            &pool,
            0,
            vec![tagged(&pool, &f, 2)],
            1,
            1,
            &mut ctrl,
        );
        assert_eq!(
            t::bytes(&out[0]),
            vec![f.clone()],
            "id 1, from the full copy"
        );
        assert_eq!(t::read(m.as_ref(), "merged"), "1");
    }

    #[test]
    fn bad_merge_arguments_name_the_input() {
        let err = |c: &str, n: usize| {
            t::config_err(t::configure(
                NfpMerge::SPEC.keywords,
                NfpMerge::configure,
                c,
                n,
                1,
            ))
        };
        assert_eq!(
            err("orig, header payload", 2),
            "INPUT1: a header-only copy cannot own the payload"
        );
        assert_eq!(
            err("orig ttl", 1),
            "INPUT0: unknown field `ttl` (src_ip, dst_ip, src_port, dst_port, payload)"
        );
        assert_eq!(err("orig", 2), "2 inputs need 2 INPUT arguments, found 1");
        assert_eq!(
            err("orig, full, PRIORITY 1", 2),
            "PRIORITY: one integer per input (2), found `1`"
        );
        assert_eq!(
            err("orig, full, BASE 2", 2),
            "BASE: an input from 0 to 1, found `2`"
        );
        assert_eq!(
            err("orig, header, BASE 1", 2),
            "BASE: input 1 is a header-only copy, which cannot be the output's base"
        );
        assert_eq!(
            err("orig payload, full, BASE 1", 2),
            "BASE 1: INPUT0 owns the payload, which comes with the base version; make the base input 0"
        );
    }

    #[test]
    fn the_base_input_gives_the_output_its_headers() {
        // Input 1 encapsulated its version in a new outer IPv4 header
        // (IP-in-IP, 20 bytes more); input 0 only read the original. The
        // output is input 1's version, whatever owns the payload.
        let pool = Pool::new(8).expect("pool");
        let mut m = merge("orig, full payload, BASE 1", 2);
        let inner = udp([10, 0, 0, 1], 1000, [10, 0, 0, 2], 53, b"hello");
        let mut outer = inner[..14].to_vec();
        let mut ip = inner[14..34].to_vec();
        ip[9] = 4;
        ip[2..4].copy_from_slice(&((inner.len() - 14 + 20) as u16).to_be_bytes());
        outer.extend_from_slice(&ip);
        outer.extend_from_slice(&inner[14..]);
        let mut ctrl = Control::default();
        t::push_at(
            m.as_mut(),
            &pool,
            0,
            vec![tagged(&pool, &inner, 1)],
            1,
            1,
            &mut ctrl,
        );
        let out = t::push_at(
            m.as_mut(),
            &pool,
            1,
            vec![tagged(&pool, &outer, 1)],
            1,
            1,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![outer.clone()]);
        drop(out);
        // When the base branch dropped a packet a higher priority passed,
        // the packet leaves as the other version.
        let mut m = merge("orig, full, BASE 1, PRIORITY 1 0", 2);
        let out = t::push_at(
            m.as_mut(),
            &pool,
            0,
            vec![tagged(&pool, &inner, 1), tagged(&pool, &inner, 2)],
            1,
            1,
            &mut ctrl,
        );
        assert!(out[0].is_empty(), "both wait for input 1");
        drop(out);
        let out = t::push_at(
            m.as_mut(),
            &pool,
            1,
            vec![tagged(&pool, &outer, 2)],
            1,
            1,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[0]), vec![inner.clone(), outer]);
        drop(out);
        assert_eq!(pool.available(), 8, "every version was freed");
    }
}
