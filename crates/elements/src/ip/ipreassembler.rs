//! `IPReassembler`: rebuilds IP packets from their fragments.

use std::fmt::Write as _;

use pronto_packet::wire::checksum;
use pronto_packet::{Batch, Packet, Pool};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, Spec,
    FIELD_OTHER, FIELD_PAYLOAD,
};

/// Seconds a queue may wait for its missing fragments.
const REAP_TIMEOUT: i64 = 30;
/// Seconds between looks for stale queues.
const REAP_INTERVAL: i64 = 10;
/// Memory charged for each queue besides its data.
const IPH_MEM_USED: u32 = 40;
/// Number of hash buckets (by IP ID).
const NMAP: usize = 256;
/// Where a queue's first chunk is kept in the annotations.
const CHUNK_ANNO_OFFSET: usize = 28;
/// Spare bytes kept after a queue's data, so that a chunk link written at
/// its end always lies inside the packet.
const SLACK: usize = 8;
const IP_MF: u16 = 0x2000;

/// A packet being rebuilt. Its data is `[link header][IP header][payload
/// bytes received so far, links in the holes][SLACK]`. The received ranges
/// ("chunks") form a list: the first in `first`, each next one stored as
/// two host-order 16-bit offsets (as the reference stores them) at the payload position where the
/// previous chunk ends.
struct Queue {
    pkt: Packet,
    nh: usize,
    hl: usize,
    first: (u16, u16),
}

#[derive(Clone, Copy)]
enum ChunkAt {
    First,
    Payload(usize),
}

impl Queue {
    fn tlen(&self) -> usize {
        self.pkt.len() - SLACK - self.nh - self.hl
    }

    fn ip(&self) -> &[u8] {
        &self.pkt.data()[self.nh..]
    }

    fn ts_sec(&self) -> i64 {
        self.pkt.timestamp_ns().div_euclid(1_000_000_000)
    }

    fn get(&self, at: ChunkAt) -> (u16, u16) {
        match at {
            ChunkAt::First => self.first,
            ChunkAt::Payload(x) => {
                let d = &self.pkt.data()[self.nh + self.hl + x..];
                (
                    u16::from_ne_bytes([d[0], d[1]]),
                    u16::from_ne_bytes([d[2], d[3]]),
                )
            }
        }
    }

    fn set(&mut self, at: ChunkAt, c: (u16, u16)) {
        match at {
            ChunkAt::First => self.first = c,
            ChunkAt::Payload(x) => {
                let s = self.nh + self.hl + x;
                let d = &mut self.pkt.data_mut()[s..s + 4];
                d[..2].copy_from_slice(&c.0.to_ne_bytes());
                d[2..].copy_from_slice(&c.1.to_ne_bytes());
            }
        }
    }

    /// The chunk after the one at `at`, if any (and if its link lies in the
    /// data).
    fn next(&self, at: ChunkAt) -> Option<ChunkAt> {
        let last = self.get(at).1 as usize;
        (last < self.tlen()).then_some(ChunkAt::Payload(last))
    }

    fn same(&self, ip: &[u8]) -> bool {
        let q = self.ip();
        q[4..6] == ip[4..6] && q[9] == ip[9] && q[12..20] == ip[12..20]
    }

    /// The packet as it stands, for output 1.
    fn into_partial(mut self) -> Packet {
        let (a, b) = self.first;
        let anno = self.pkt.anno_bytes_mut();
        anno[CHUNK_ANNO_OFFSET..CHUNK_ANNO_OFFSET + 2].copy_from_slice(&a.to_ne_bytes());
        anno[CHUNK_ANNO_OFFSET + 2..CHUNK_ANNO_OFFSET + 4].copy_from_slice(&b.to_ne_bytes());
        self.pkt.take(SLACK);
        self.pkt
    }
}

/// Reassembles IP fragments; incomplete packets that time out or are
/// evicted for memory go to output 1.
pub struct IPReassembler {
    map: Vec<Vec<Queue>>,
    reap_time: i64,
    frags_seen: u32,
    good_assem: u32,
    failed_assem: u32,
    bad_pkts: u32,
    mem_used: u32,
    mem_high: u32,
    mem_low: u32,
    mtu_anno: Option<usize>,
}

impl IPReassembler {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPReassembler")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["HIMEM", "MAX_MTU_ANNO"])
        .profile(
            ActionProfile::reads(FIELD_OTHER | FIELD_PAYLOAD)
                .writes(FIELD_OTHER | FIELD_PAYLOAD)
                .dropping()
                .reshaping(),
        )
        .doc(
            "IPReassembler([KEYWORDS])\n\n\
             IP packets (network header annotation set) that are not fragments go to\n\
             output 0. Fragments are kept, by (ID, protocol, source, destination), until\n\
             the packet is complete; it then goes to output 0 with the first fragment's\n\
             link and IP header (offset cleared, total length and checksum set), the\n\
             last fragment's timestamp and the first fragment's other annotations.\n\
             Overlapping data: later fragments overwrite earlier bytes. Fragments with\n\
             a bad length (ending beyond 65535 or not after their offset, a non-final\n\
             one not a multiple of 8 bytes, or longer than the packet) are dropped.\n\
             Fragments with no timestamp get the current time. Every 10 seconds of\n\
             fragment time, packets waiting more than 30 seconds are given up; when the\n\
             memory held (payload plus 40 bytes a packet) exceeds HIMEM, the oldest are\n\
             given up until it is at most 3/4 HIMEM. Given-up packets go to output 1 as\n\
             they stand (dropped if there is none). A packet larger than pronto's packet\n\
             buffer cannot be rebuilt and is given up silently.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (output 1 push).\n\
             Keywords:\n  \
             HIMEM         memory bound in bytes (default 262144)\n  \
             MAX_MTU_ANNO  annotation offset of a 2-byte field set to the largest\n                \
             fragment's size on reassembled packets\n\
             Handlers:\n  dump (read)  counters and the packets being rebuilt",
        );

    /// Configures an `IPReassembler`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let mem_high: u32 = a.read_or("HIMEM", 256 * 1024)?;
        let mtu_anno: Option<usize> = a.read("MAX_MTU_ANNO")?;
        a.finish()?;
        if let Some(o) = mtu_anno {
            if o + 2 > pronto_packet::ANNO_SIZE {
                return Err(ConfigError::new("MAX_MTU_ANNO: annotation out of range"));
            }
        }
        Ok(Box::new(IPReassembler {
            map: (0..NMAP).map(|_| Vec::new()).collect(),
            reap_time: 0,
            frags_seen: 0,
            good_assem: 0,
            failed_assem: 0,
            bad_pkts: 0,
            mem_used: 0,
            mem_high,
            mem_low: (mem_high >> 2) * 3,
            mtu_anno,
        }))
    }

    fn set_mtu_anno(&self, p: &mut Packet, v: u16) {
        if let Some(o) = self.mtu_anno {
            p.anno_bytes_mut()[o..o + 2].copy_from_slice(&v.to_be_bytes());
        }
    }

    fn mtu_anno_of(&self, p: &Packet) -> u16 {
        self.mtu_anno.map_or(0, |o| {
            u16::from_be_bytes([p.anno_bytes()[o], p.anno_bytes()[o + 1]])
        })
    }

    fn reap(&mut self, now: i64, out: &mut Out<'_>) {
        let kill_time = now - REAP_TIMEOUT;
        for b in 0..NMAP {
            let mut i = 0;
            while i < self.map[b].len() {
                if self.map[b][i].ts_sec() < kill_time {
                    let q = self.map[b].remove(i);
                    self.mem_used = self.mem_used.wrapping_sub(IPH_MEM_USED + q.tlen() as u32);
                    out.emit(1, q.into_partial());
                } else {
                    i += 1;
                }
            }
        }
        self.reap_time = now + REAP_INTERVAL;
    }

    fn reap_overfull(&mut self, now: i64, out: &mut Out<'_>) {
        for delta in [10, 5, 0] {
            for b in 0..NMAP {
                let mut i = 0;
                while i < self.map[b].len() {
                    if delta == 0 || self.map[b][i].ts_sec() < now - delta {
                        let q = self.map[b].remove(i);
                        self.mem_used = self.mem_used.wrapping_sub(IPH_MEM_USED + q.tlen() as u32);
                        out.emit(1, q.into_partial());
                        self.failed_assem += 1;
                        if self.mem_used <= self.mem_low {
                            return;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
        }
        eprintln!("IPReassembler: cannot free enough memory!");
    }

    /// Starts a queue with fragment `p` (payload `[p_off, p_lastoff)`).
    fn make_queue(
        &mut self,
        mut p: Packet,
        pool: &Pool,
        nh: usize,
        hl: usize,
        p_off: usize,
        p_lastoff: usize,
    ) {
        let bucket = p.data()[nh + 4] as usize;
        let mut q = if p_off == 0 {
            if !p.put_zeroed(SLACK) {
                return;
            }
            Queue {
                pkt: p,
                nh,
                hl,
                first: (0, 0),
            }
        } else {
            let Some(mut pkt) = copy_header(&p, pool, nh, hl, p_off, p_lastoff) else {
                return;
            };
            pkt.set_network_header(0, 20);
            Queue {
                pkt,
                nh: 0,
                hl: 20,
                first: (0, 0),
            }
        };
        self.mem_used = self.mem_used.wrapping_add(IPH_MEM_USED + p_lastoff as u32);
        let qnh = q.nh;
        let d = q.pkt.data_mut();
        d[qnh + 6] &= 0xe0;
        d[qnh + 7] = 0;
        let nlen = (q.pkt.len() - SLACK - q.nh) as u16;
        self.set_mtu_anno(&mut q.pkt, nlen);
        q.first = (p_off as u16, p_lastoff as u16);
        self.map[bucket].insert(0, q);
    }

    fn action(&mut self, mut p: Packet, out: &mut Out<'_>) -> Option<Packet> {
        let Some(nh) = p
            .network_header_offset()
            .and_then(|o| usize::try_from(o).ok())
        else {
            return Some(p);
        };
        let Some(ip) = p.data().get(nh..nh + 20) else {
            return Some(p);
        };
        let off_field = u16::from_be_bytes([ip[6], ip[7]]);
        if off_field & 0x3fff == 0 {
            return Some(p);
        }
        self.frags_seen += 1;
        if p.timestamp_ns() == 0 {
            p.set_timestamp_ns(out.now);
        }
        let now = p.timestamp_ns().div_euclid(1_000_000_000);
        if now >= self.reap_time {
            self.reap(now, out);
        }
        let ip = &p.data()[nh..nh + 20];
        let hl = ((ip[0] & 0x0f) as usize) << 2;
        let th = p
            .transport_header_offset()
            .and_then(|t| usize::try_from(t).ok())
            .unwrap_or(nh + hl);
        let dlen = p.len().saturating_sub(th);
        let p_off = ((off_field & 0x1fff) as usize) << 3;
        let p_lastoff = (p_off + u16::from_be_bytes([ip[2], ip[3]]) as usize).wrapping_sub(hl);
        let mf = off_field & IP_MF != 0;
        if p_lastoff > 0xffff
            || p_lastoff <= p_off
            || (p_lastoff & 7 != 0 && mf)
            || dlen < p_lastoff - p_off
            || th < nh + 20
        {
            self.bad_pkts += 1;
            return None;
        }
        p.take(dlen - (p_lastoff - p_off));
        // The transport header annotation is where the payload starts.
        let hl = th - nh;

        if self.mem_used > self.mem_high {
            self.reap_overfull(now, out);
        }

        let ip = &p.data()[nh..nh + 20];
        let bucket = ip[4] as usize;
        let Some(qi) = self.map[bucket].iter().position(|q| q.same(ip)) else {
            self.make_queue(p, out.pool, nh, hl, p_off, p_lastoff);
            return None;
        };
        let mut q = self.map[bucket].remove(qi);

        let plen = (p.len() - nh) as u16;
        if self.mtu_anno.is_some() && self.mtu_anno_of(&q.pkt) < plen {
            self.set_mtu_anno(&mut q.pkt, plen);
        }

        // Extend the packet if this fragment ends beyond it.
        if p_lastoff > q.tlen() {
            let q_off = u16::from_be_bytes([q.ip()[6], q.ip()[7]]);
            if q_off & IP_MF == 0 {
                self.map[bucket].insert(qi, q);
                return None;
            }
            let old = q.tlen();
            if !q.pkt.put_zeroed(p_lastoff - old) {
                // Larger than a packet buffer: give the packet up.
                self.mem_used = self.mem_used.wrapping_sub(IPH_MEM_USED + old as u32);
                return None;
            }
            q.set(ChunkAt::Payload(old), (p_lastoff as u16, p_lastoff as u16));
            self.mem_used = self.mem_used.wrapping_add((p_lastoff - old) as u32);
        }

        // Find the chunks around this fragment and patch the list.
        let mut chunk = ChunkAt::First;
        while (q.get(chunk).1 as usize) < p_off {
            match q.next(chunk) {
                Some(c) => chunk = c,
                None => {
                    self.map[bucket].insert(qi, q);
                    return None;
                }
            }
        }
        let mut last = Some(chunk);
        while let Some(l) = last {
            if (q.get(l).1 as usize) < p_lastoff {
                last = q.next(l);
            } else {
                break;
            }
        }
        let Some(last) = last else {
            self.map[bucket].insert(qi, q);
            return None;
        };
        let lc = q.get(last);
        let mut cc = q.get(chunk);
        if p_lastoff < lc.0 as usize {
            q.set(ChunkAt::Payload(p_lastoff), lc);
            cc.1 = p_lastoff as u16;
        } else {
            cc.1 = lc.1;
        }
        if p_off < cc.0 as usize {
            cc.0 = p_off as u16;
        }
        q.set(chunk, cc);

        // Copy the fragment's payload.
        let qs = q.nh + q.hl;
        q.pkt.data_mut()[qs + p_off..qs + p_lastoff]
            .copy_from_slice(&p.data()[th..th + (p_lastoff - p_off)]);

        // The first fragment brings the link and IP headers and annotations.
        if p_off == 0 {
            let old_ip_off = [q.ip()[6], q.ip()[7]];
            let old_t = q.tlen();
            if nh > q.nh && q.pkt.push(nh - q.nh).is_none() {
                self.mem_used = self.mem_used.wrapping_sub(IPH_MEM_USED + q.tlen() as u32);
                return None;
            } else if nh < q.nh {
                q.pkt.pull(q.nh - nh);
            }
            q.nh = nh;
            q.hl = hl;
            if q.pkt.len() < SLACK + nh + hl {
                self.mem_used = self.mem_used.wrapping_sub(IPH_MEM_USED + old_t as u32);
                return None;
            }
            q.pkt.set_network_header(nh as isize, hl);
            if let Some(m) = p.mac_header_offset() {
                q.pkt.set_mac_header(m);
            }
            q.pkt.data_mut()[..nh + hl].copy_from_slice(&p.data()[..nh + hl]);
            q.pkt.data_mut()[nh + 6..nh + 8].copy_from_slice(&old_ip_off);
            let old_mtu = self.mtu_anno_of(&q.pkt);
            *q.pkt.annotations_mut() = *p.annotations();
            self.set_mtu_anno(&mut q.pkt, old_mtu);
        }

        if !mf {
            let qnh = q.nh;
            q.pkt.data_mut()[qnh + 6] &= !0x20;
        }

        let q_mf = q.ip()[6] & 0x20 != 0;
        if !q_mf && q.first.0 == 0 && q.first.1 as usize == q.tlen() {
            self.good_assem += 1;
            self.mem_used = self.mem_used.wrapping_sub(IPH_MEM_USED + q.tlen() as u32);
            let Queue { pkt: mut r, nh, .. } = q;
            r.take(SLACK);
            let nlen = (r.len() - nh) as u16;
            let d = &mut r.data_mut()[nh..];
            d[2..4].copy_from_slice(&nlen.to_be_bytes());
            d[10] = 0;
            d[11] = 0;
            let h = (((d[0] & 0x0f) as usize) << 2).min(d.len());
            let c = checksum(&d[..h]);
            d[10..12].copy_from_slice(&c.to_be_bytes());
            r.anno_bytes_mut()[CHUNK_ANNO_OFFSET..CHUNK_ANNO_OFFSET + 4].fill(0);
            r.set_timestamp_ns(p.timestamp_ns());
            return Some(r);
        }
        self.map[bucket].insert(qi, q);
        None
    }
}

/// A new queue packet for a fragment that does not start the payload: a
/// 20-byte copy of its IP header, then its payload at `p_off` (the bytes
/// before it zero), then the slack.
fn copy_header(
    p: &Packet,
    pool: &Pool,
    nh: usize,
    hl: usize,
    p_off: usize,
    p_lastoff: usize,
) -> Option<Packet> {
    let mut q = pool.alloc()?;
    if !q.put_zeroed(20 + p_lastoff + SLACK) {
        return None;
    }
    let d = q.data_mut();
    d[..20].copy_from_slice(&p.data()[nh..nh + 20]);
    let th = nh + hl;
    d[20 + p_off..20 + p_lastoff].copy_from_slice(&p.data()[th..th + (p_lastoff - p_off)]);
    Some(q)
}

impl Element for IPReassembler {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        for p in batch.drain() {
            if let Some(r) = self.action(p, out) {
                out.emit(0, r);
            }
        }
    }

    fn held(&self) -> usize {
        self.map.iter().map(Vec::len).sum()
    }

    fn capacity(&self) -> usize {
        // Each datagram being reassembled is one packet, charged at least
        // IPH_MEM_USED bytes against HIMEM.
        (self.mem_high / IPH_MEM_USED) as usize + 1
    }

    fn counters(&self, c: &mut crate::Counters) {
        // Bad fragments are dropped; failed reassemblies leave on output 1.
        c.drop("bad_fragment", u64::from(self.bad_pkts));
        c.count("frags_seen", u64::from(self.frags_seen));
        c.count("good_reassemblies", u64::from(self.good_assem));
        c.count("failed_reassemblies", u64::from(self.failed_assem));
        c.count("mem_used", u64::from(self.mem_used));
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("dump")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        if name != "dump" {
            return Err(HandlerError::NoSuchHandler(name.into()));
        }
        let mut s = format!(
            "frags seen total:    {}\ngood reassemblies:   {}\nfailed reassemblies: {}\n\
             bad fragments seen:  {}\ncached chunk data:\n",
            self.frags_seen, self.good_assem, self.failed_assem, self.bad_pkts
        );
        for b in &self.map {
            for q in b {
                let ip = q.ip();
                let h = ((ip[0] & 0x0f) as usize) << 2;
                let port = |i: usize| {
                    u16::from_be_bytes([
                        ip.get(h + i).copied().unwrap_or(0),
                        ip.get(h + i + 1).copied().unwrap_or(0),
                    ])
                };
                let _ = write!(
                    s,
                    " ({}, {}, {}, {}) {}",
                    Ip4([ip[12], ip[13], ip[14], ip[15]]),
                    port(0),
                    Ip4([ip[16], ip[17], ip[18], ip[19]]),
                    port(2),
                    u16::from_be_bytes([ip[4], ip[5]])
                );
                let mut c = Some(ChunkAt::First);
                while let Some(at) = c {
                    let (o, l) = q.get(at);
                    if l <= o || l as usize > q.tlen() {
                        break;
                    }
                    let _ = write!(s, " ({o},{l})");
                    c = q.next(at);
                }
                s.push('\n');
            }
        }
        Ok(s)
    }

    fn cleanup(&mut self) {
        for b in &mut self.map {
            b.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{bytes, configure, pkt, push_at, read};
    use crate::Control;

    const SEC: i64 = 1_000_000_000;

    /// The whole datagram: 20-byte header, ID 0x0102, 64 payload bytes
    /// 0, 1, 2, ...
    fn whole() -> Vec<u8> {
        let mut d = vec![
            0x45, 0, 0, 84, // version/IHL, TOS, total length 84
            0x01, 0x02, 0x00, 0x00, // ID, no fragment bits
            64, 17, 0, 0, // TTL, UDP, checksum (below)
            10, 0, 0, 1, 10, 0, 0, 2, // addresses
        ];
        d.extend(0..64u8);
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    /// Fragment of `whole()` with payload [off, end), MF as given.
    fn frag(off: usize, end: usize, mf: bool) -> Vec<u8> {
        let w = whole();
        let mut d = w[..20].to_vec();
        d.extend_from_slice(&w[20 + off..20 + end]);
        let total = d.len() as u16;
        d[2..4].copy_from_slice(&total.to_be_bytes());
        let f = (off / 8) as u16 | if mf { 0x2000 } else { 0 };
        d[6..8].copy_from_slice(&f.to_be_bytes());
        d[10] = 0;
        d[11] = 0;
        let c = checksum(&d[..20]);
        d[10..12].copy_from_slice(&c.to_be_bytes());
        d
    }

    struct Rig {
        pool: Pool,
        e: Box<dyn Element>,
    }

    impl Rig {
        fn new(config: &str) -> Rig {
            Rig {
                pool: Pool::new(64).expect("pool"),
                e: configure(
                    IPReassembler::SPEC.keywords,
                    IPReassembler::configure,
                    config,
                    1,
                    2,
                )
                .expect("configures"),
            }
        }

        /// Pushes one IP packet (after `link` bytes of link header) at
        /// timestamp `ts`.
        fn push(&mut self, link: &[u8], d: &[u8], ts: i64) -> Vec<Vec<Packet>> {
            let mut data = link.to_vec();
            data.extend_from_slice(d);
            let mut p = pkt(&self.pool, &data);
            p.set_mac_header(0);
            p.set_network_header(link.len() as isize, 20);
            p.set_timestamp_ns(ts);
            let mut ctrl = Control::default();
            push_at(self.e.as_mut(), &self.pool, 0, vec![p], 2, 0, &mut ctrl)
        }
    }

    #[test]
    fn non_fragments_pass() {
        let mut r = Rig::new("");
        let outs = r.push(&[], &whole(), SEC);
        assert_eq!(bytes(&outs[0]), vec![whole()]);
    }

    #[test]
    fn reassembles_out_of_order_with_the_first_fragment_link_header() {
        let mut r = Rig::new("");
        let eth = [0xaa; 14];
        assert!(r.push(&[1; 14], &frag(24, 48, true), SEC)[0].is_empty());
        assert!(r.push(&[], &frag(48, 64, false), SEC)[0].is_empty());
        let outs = r.push(&eth, &frag(0, 24, true), 2 * SEC);
        let mut want = eth.to_vec();
        want.extend_from_slice(&whole());
        assert_eq!(bytes(&outs[0]), vec![want]);
        assert_eq!(outs[0][0].network_header_offset(), Some(14));
        assert_eq!(outs[0][0].timestamp_ns(), 2 * SEC);
        assert_eq!(
            read(r.e.as_ref(), "dump"),
            "frags seen total:    3\ngood reassemblies:   1\nfailed reassemblies: 0\n\
             bad fragments seen:  0\ncached chunk data:\n"
        );
    }

    #[test]
    fn later_fragments_overwrite_overlapping_bytes() {
        let mut r = Rig::new("");
        r.push(&[], &frag(0, 24, true), SEC);
        let mut second = frag(16, 40, true);
        second[20..28].copy_from_slice(&[0xee; 8]); // payload bytes 16..24
        r.push(&[], &second, SEC);
        let outs = r.push(&[], &frag(40, 64, false), SEC);
        let mut want = whole();
        want[36..44].copy_from_slice(&[0xee; 8]);
        assert_eq!(bytes(&outs[0]), vec![want]);
    }

    #[test]
    fn stale_packets_go_to_output_1_as_they_stand() {
        let mut r = Rig::new("");
        r.push(&[], &frag(0, 8, true), 100 * SEC);
        r.push(&[], &frag(24, 32, true), 100 * SEC);
        assert_eq!(
            read(r.e.as_ref(), "dump"),
            "frags seen total:    2\ngood reassemblies:   0\nfailed reassemblies: 0\n\
             bad fragments seen:  0\ncached chunk data:\n \
             (10.0.0.1, 1, 10.0.0.2, 515) 258 (0,8) (24,32)\n"
        );
        let mut other = frag(0, 8, true);
        other[5] = 3; // another ID
        let outs = r.push(&[], &other, 131 * SEC);
        assert_eq!(outs[1].len(), 1);
        let mut want = frag(0, 8, true); // header as it came (MF, length 28)
        want.extend_from_slice(&[24, 0, 32, 0]); // link to the chunk (24, 32)
        want.extend_from_slice(&[0; 12]); // the rest of the hole
        want.extend_from_slice(&whole()[44..52]); // payload 24..32
        assert_eq!(bytes(&outs[1]), vec![want]);
        assert_eq!(&outs[1][0].anno_bytes()[28..32], &[0, 0, 8, 0]);
    }

    #[test]
    fn bad_fragments_are_dropped() {
        let mut r = Rig::new("");
        let mut odd = frag(0, 8, true);
        odd.truncate(27); // a middle fragment of 7 bytes
        odd[3] = 27;
        r.push(&[], &odd, SEC);
        let mut long = frag(8, 16, true);
        long[3] = 40; // claims more than it holds
        r.push(&[], &long, SEC);
        assert!(read(r.e.as_ref(), "dump").contains("bad fragments seen:  2\n"));
    }

    #[test]
    fn memory_bound_evicts_by_bucket_and_list_order() {
        let mut r = Rig::new("HIMEM 100");
        r.push(&[], &frag(0, 24, true), SEC); // 40 + 24 = 64 bytes
        let mut b = frag(0, 48, true);
        b[5] = 9;
        r.push(&[], &b, SEC); // 64 + 88 = 152 > 100
        let mut c = frag(0, 8, true);
        c[5] = 10;
        let outs = r.push(&[], &c, SEC);
        // Same bucket (first ID byte 1), newest first: evicting the second
        // one (88 bytes) brings the memory to 64 <= 75.
        assert_eq!(outs[1].len(), 1);
        assert_eq!(outs[1][0].data()[5], 9);
        assert!(read(r.e.as_ref(), "dump").contains("failed reassemblies: 1\n"));
    }
}
