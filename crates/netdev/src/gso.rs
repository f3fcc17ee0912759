//! Transmit-side segment coalescing: consecutive TCP/IPv4 segments of one
//! flow, in order, are joined back into one segmentation-offload frame
//! and handed to the kernel with a virtio-net header (`gso_type` TCPV4,
//! `gso_size` = the segments' size), the inverse of the receive path's
//! TSO cutting ([`crate::offload`]).
//!
//! Why: a veth (or a NIC with TSO) carries such a frame whole, so the
//! receiving stack handles one 64 KiB buffer instead of ~45 segments;
//! this is what lets TCP through pronto approach kernel forwarding. Pool
//! packets stay MTU-sized, so every element still sees the segments a
//! device would put on the wire, as in Click; only the hand-over to the
//! kernel is batched.
//!
//! A frame joins the pending one only if the result is exactly what the
//! kernel's segmentation gives back: same Ethernet header, same IPv4
//! header but for length, ID (which must be the next) and checksum, same
//! TCP header but for sequence number (which must be the next), PSH and
//! checksum; a full-sized segment before it; no SYN, FIN, RST, URG or CWR.
//! A segment with PSH or shorter than the first ends the frame. Safe code
//! only; the buffer is allocated once.

use pronto_packet::wire::{be16, checksum, fold, pseudo_header_sum, set_be16};

use crate::offload::VNET_LEN;

const ETH: usize = 14;
const IP: usize = 20;
/// Largest IPv4 total length.
const MAX_IP: usize = 65_535;
/// Segments shorter than this never start a frame: not worth a system
/// call of their own.
const MIN_START_PAYLOAD: usize = 512;

const F_NEEDS_CSUM: u8 = 1;
const GSO_TCPV4: u8 = 1;

const TCP_FIN: u8 = 0x01;
const TCP_SYN: u8 = 0x02;
const TCP_RST: u8 = 0x04;
const TCP_PSH: u8 = 0x08;
const TCP_ACK: u8 = 0x10;
const TCP_URG: u8 = 0x20;
const TCP_CWR: u8 = 0x80;

/// Counters of the coalescer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GsoStats {
    /// Frames of two or more segments handed over.
    pub frames: u64,
    /// Segments in those frames.
    pub segments: u64,
}

/// A TCP/IPv4 segment's facts the join rules need.
#[derive(Clone, Copy)]
struct Seg {
    tcp_hl: usize,
    payload: usize,
    seq: u32,
    id: u16,
    flags: u8,
}

/// Parses an Ethernet + IPv4 (no options, not a fragment) + TCP frame
/// whose lengths agree; `None` for anything else.
fn parse(f: &[u8]) -> Option<Seg> {
    if f.len() < ETH + IP + 20 || f[12..14] != [0x08, 0x00] || f[ETH] != 0x45 {
        return None;
    }
    let ip = &f[ETH..];
    let tot = be16(ip, 2) as usize;
    if ip[9] != 6 || be16(ip, 6) & 0x3fff != 0 || tot != f.len() - ETH {
        return None;
    }
    let tcp = &ip[IP..];
    let tcp_hl = ((tcp[12] >> 4) as usize) * 4;
    if tcp_hl < 20 || IP + tcp_hl > tot {
        return None;
    }
    Some(Seg {
        tcp_hl,
        payload: tot - IP - tcp_hl,
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        id: be16(ip, 4),
        flags: tcp[13],
    })
}

/// Joins segments into one offload frame (see the module docs).
pub struct Coalescer {
    /// Virtio-net header, then the frame.
    buf: Box<[u8]>,
    /// Frame bytes held (0: none pending).
    len: usize,
    segs: u32,
    mss: usize,
    tcp_hl: usize,
    next_seq: u32,
    next_id: u16,
    /// No more segments may join (PSH or a short segment came).
    closed: bool,
    stats: GsoStats,
}

impl Default for Coalescer {
    fn default() -> Self {
        Coalescer::new()
    }
}

impl Coalescer {
    /// An empty coalescer (allocates its 64 KiB buffer once).
    pub fn new() -> Coalescer {
        Coalescer {
            buf: vec![0; VNET_LEN + ETH + MAX_IP].into_boxed_slice(),
            len: 0,
            segs: 0,
            mss: 0,
            tcp_hl: 0,
            next_seq: 0,
            next_id: 0,
            closed: false,
            stats: GsoStats::default(),
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> GsoStats {
        self.stats
    }

    /// True while a frame is held.
    pub fn pending(&self) -> bool {
        self.len > 0
    }

    /// Adds `f` to the held frame if it continues it; false otherwise
    /// (nothing changes).
    pub fn append(&mut self, f: &[u8]) -> bool {
        if self.len == 0 || self.closed {
            return false;
        }
        let Some(s) = parse(f) else { return false };
        if s.seq != self.next_seq
            || s.id != self.next_id
            || s.tcp_hl != self.tcp_hl
            || s.payload == 0
            || s.payload > self.mss
            || s.flags & (TCP_SYN | TCP_FIN | TCP_RST | TCP_URG | TCP_CWR) != 0
            || self.len + s.payload > ETH + MAX_IP
        {
            return false;
        }
        let held = &self.buf[VNET_LEN..VNET_LEN + self.len];
        let hl = ETH + IP + self.tcp_hl;
        // Ethernet; IPv4 bytes 0-1 (version, TOS) and 6-19 except the
        // checksum; TCP ports, ack, offset, window, urgent, options.
        let same = held[..ETH + 2] == f[..ETH + 2]
            && held[ETH + 6..ETH + 10] == f[ETH + 6..ETH + 10]
            && held[ETH + 12..ETH + IP] == f[ETH + 12..ETH + IP]
            && held[ETH + IP..ETH + IP + 4] == f[ETH + IP..ETH + IP + 4]
            && held[ETH + IP + 8..ETH + IP + 13] == f[ETH + IP + 8..ETH + IP + 13]
            && (held[ETH + IP + 13] | TCP_PSH) == (f[ETH + IP + 13] | TCP_PSH)
            && held[ETH + IP + 14..ETH + IP + 16] == f[ETH + IP + 14..ETH + IP + 16]
            && held[ETH + IP + 18..hl] == f[ETH + IP + 18..hl];
        if !same {
            return false;
        }
        let at = VNET_LEN + self.len;
        self.buf[at..at + s.payload].copy_from_slice(&f[hl..]);
        self.len += s.payload;
        self.segs += 1;
        self.next_seq = s.seq.wrapping_add(s.payload as u32);
        self.next_id = s.id.wrapping_add(1);
        if s.flags & TCP_PSH != 0 {
            // The held frame's flags become the last segment's.
            self.buf[VNET_LEN + ETH + IP + 13] |= TCP_PSH;
            self.closed = true;
        }
        if s.payload < self.mss {
            self.closed = true;
        }
        true
    }

    /// Starts a frame with `f` if nothing is held and `f` may start one
    /// (a full-looking TCP/IPv4 data segment with only ACK set); false
    /// otherwise (nothing changes).
    pub fn start(&mut self, f: &[u8]) -> bool {
        if self.len != 0 {
            return false;
        }
        let Some(s) = parse(f) else { return false };
        if s.payload < MIN_START_PAYLOAD
            || s.flags & !(TCP_ACK | 0x40) != 0
            || s.flags & TCP_ACK == 0
        {
            return false;
        }
        self.buf[VNET_LEN..VNET_LEN + f.len()].copy_from_slice(f);
        self.len = f.len();
        self.segs = 1;
        self.mss = s.payload;
        self.tcp_hl = s.tcp_hl;
        self.next_seq = s.seq.wrapping_add(s.payload as u32);
        self.next_id = s.id.wrapping_add(1);
        self.closed = false;
        true
    }

    /// The held frame, virtio-net header first, ready for a
    /// `PACKET_VNET_HDR` socket; the coalescer is empty afterwards. A
    /// single segment goes as it came, with an empty header.
    pub fn take(&mut self) -> Option<&[u8]> {
        if self.len == 0 {
            return None;
        }
        let len = std::mem::take(&mut self.len);
        self.buf[..VNET_LEN].fill(0);
        if self.segs > 1 {
            self.stats.frames += 1;
            self.stats.segments += self.segs as u64;
            let hl = ETH + IP + self.tcp_hl;
            let v = &mut self.buf[..VNET_LEN];
            v[0] = F_NEEDS_CSUM;
            v[1] = GSO_TCPV4;
            v[2..4].copy_from_slice(&(hl as u16).to_le_bytes());
            v[4..6].copy_from_slice(&(self.mss as u16).to_le_bytes());
            v[6..8].copy_from_slice(&((ETH + IP) as u16).to_le_bytes());
            v[8..10].copy_from_slice(&16u16.to_le_bytes());
            let frame = &mut self.buf[VNET_LEN..VNET_LEN + len];
            let ip_len = len - ETH;
            set_be16(frame, ETH + 2, ip_len as u16);
            set_be16(frame, ETH + 10, 0);
            let c = checksum(&frame[ETH..ETH + IP]);
            set_be16(frame, ETH + 10, c);
            // The TCP checksum field holds the pseudo-header sum; the
            // kernel (or the device) finishes it per segment.
            let (src, dst) = (&frame[ETH + 12..ETH + 16], &frame[ETH + 16..ETH + 20]);
            let ph = fold(pseudo_header_sum(src, dst, 6, ip_len - IP));
            set_be16(frame, ETH + IP + 16, ph);
        }
        Some(&self.buf[..VNET_LEN + len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pronto_packet::wire::ones_sum;

    /// A TCP/IPv4 segment: 02..01 -> 02..02, 10.0.0.1:1000 -> 10.0.0.2:80,
    /// DF, TTL 64, ACK (and `extra` flags), 12 bytes of timestamp option,
    /// `payload` bytes of `fill`, valid checksums.
    fn seg(seq: u32, id: u16, payload: usize, extra: u8, fill: u8) -> Vec<u8> {
        let tcp_hl = 32;
        let tot = IP + tcp_hl + payload;
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
        f.extend([0x45, 0, (tot >> 8) as u8, tot as u8]);
        f.extend(id.to_be_bytes());
        f.extend([0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend([0x03, 0xe8, 0, 80]);
        f.extend(seq.to_be_bytes());
        f.extend(7u32.to_be_bytes()); // ack
        f.extend([0x80, TCP_ACK | extra, 0x01, 0xf5, 0, 0, 0, 0]);
        f.extend([1, 1, 8, 10, 0, 0, 0, 9, 0, 0, 0, 8]); // NOP NOP TS
        f.extend(std::iter::repeat_n(fill, payload));
        let c = checksum(&f[ETH..ETH + IP]);
        set_be16(&mut f, ETH + 10, c);
        let ph = pseudo_header_sum(&f[26..30], &f[30..34], 6, tot - IP);
        let c = !fold(ones_sum(&f[ETH + IP..], ph));
        set_be16(&mut f, ETH + IP + 16, c);
        f
    }

    #[test]
    fn consecutive_segments_become_one_offload_frame() {
        let mut c = Coalescer::new();
        let (a, b, d) = (
            seg(1000, 5, 1448, 0, 0xaa),
            seg(2448, 6, 1448, 0, 0xbb),
            seg(3896, 7, 100, TCP_PSH, 0xcc),
        );
        assert!(c.start(&a));
        assert!(c.append(&b));
        assert!(c.append(&d));
        // Closed by PSH (and by the short segment).
        assert!(!c.append(&seg(3996, 8, 1448, 0, 0)));
        let out = c.take().expect("a frame").to_vec();
        assert!(!c.pending());
        assert_eq!(
            c.stats(),
            GsoStats {
                frames: 1,
                segments: 3
            }
        );
        // virtio-net header: NEEDS_CSUM, TCPV4, hdr_len 66, gso_size 1448,
        // csum_start 34, csum_offset 16.
        assert_eq!(&out[..10], &[1, 1, 66, 0, 0xa8, 5, 34, 0, 16, 0]);
        let f = &out[10..];
        assert_eq!(f.len(), 66 + 1448 + 1448 + 100);
        assert_eq!(be16(f, 16) as usize, f.len() - 14, "IP total length");
        assert_eq!(checksum(&f[14..34]), 0, "IP checksum valid");
        // The first segment's headers but for IP length and checksum, TCP
        // flags and checksum.
        for r in [0..16, 18..24, 26..47, 48..50, 52..66] {
            assert_eq!(f[r.clone()], a[r.clone()], "bytes {r:?}");
        }
        assert_eq!(f[47], TCP_ACK | TCP_PSH, "flags of the last");
        let ph = fold(pseudo_header_sum(&f[26..30], &f[30..34], 6, f.len() - 34));
        assert_eq!(be16(f, 50), ph, "partial checksum");
        assert!(f[66..66 + 1448].iter().all(|&x| x == 0xaa));
        assert!(f[66 + 1448..66 + 2896].iter().all(|&x| x == 0xbb));
        assert!(f[66 + 2896..].iter().all(|&x| x == 0xcc));
    }

    #[test]
    fn segments_that_would_change_on_resegmenting_do_not_join() {
        let mut c = Coalescer::new();
        let first = seg(1000, 5, 1448, 0, 1);
        assert!(c.start(&first));
        assert!(!c.start(&first), "one frame at a time");
        assert!(!c.append(&seg(2449, 6, 1448, 0, 1)), "sequence gap");
        assert!(!c.append(&seg(2448, 9, 1448, 0, 1)), "IP ID jump");
        assert!(
            !c.append(&seg(2448, 6, 1449, 0, 1)),
            "longer than the first"
        );
        assert!(!c.append(&seg(2448, 6, 1448, TCP_FIN, 1)), "FIN");
        let mut other_ack = seg(2448, 6, 1448, 0, 1);
        other_ack[ETH + IP + 11] = 8;
        assert!(!c.append(&other_ack), "another ack");
        let mut other_ts = seg(2448, 6, 1448, 0, 1);
        other_ts[ETH + IP + 31] = 1;
        assert!(!c.append(&other_ts), "another timestamp");
        let mut ttl = seg(2448, 6, 1448, 0, 1);
        ttl[ETH + 8] = 63;
        assert!(!c.append(&ttl), "another TTL");
        // A lone segment goes out unchanged, with an empty header.
        let out = c.take().expect("held").to_vec();
        assert_eq!(&out[..10], &[0; 10]);
        assert_eq!(&out[10..], &first[..]);
        assert_eq!(c.stats(), GsoStats::default());
        // What never starts a frame.
        assert!(!c.start(&seg(1, 1, 100, 0, 0)), "small");
        assert!(!c.start(&seg(1, 1, 1448, TCP_PSH, 0)), "PSH");
        assert!(!c.start(&seg(1, 1, 1448, TCP_SYN, 0)), "SYN");
        let mut udp = seg(1, 1, 1448, 0, 0);
        udp[ETH + 9] = 17;
        assert!(!c.start(&udp), "UDP");
        let mut frag = seg(1, 1, 1448, 0, 0);
        frag[ETH + 6] = 0x20;
        assert!(!c.start(&frag), "fragment");
        assert!(!c.start(&seg(1, 1, 1448, 0, 0)[..100]), "truncated");
        assert!(c.take().is_none());
    }

    #[test]
    fn a_frame_stops_below_the_ip_length_limit() {
        let mut c = Coalescer::new();
        let mut seq = 0u32;
        assert!(c.start(&seg(seq, 0, 1448, 0, 0)));
        seq += 1448;
        let mut n = 1;
        while c.append(&seg(seq, n as u16, 1448, 0, 0)) {
            seq += 1448;
            n += 1;
        }
        // 20 + 32 + 45 * 1448 = 65,212 <= 65,535; one more would not fit.
        assert_eq!(n, 45);
        let len = c.take().expect("frame").len();
        assert_eq!(len, 10 + 14 + 52 + 45 * 1448);
    }
}
