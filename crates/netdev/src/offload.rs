//! What a `PACKET_VNET_HDR` socket says about a received frame, and how a
//! frame is turned into pool packets: checksums the sender left to the
//! device are completed, and TCP segmentation-offload frames (up to 64 KiB
//! from a veth or a local stack) are cut into MSS-sized segments, as the
//! device would have done. Safe code only.

use pronto_packet::wire::{fold, ones_sum, pseudo_header_sum};
use pronto_packet::{Batch, Pool, EXTRA_LENGTH_ANNO_OFFSET, MAX_PACKET};

use crate::RxStats;

/// Bytes of `struct virtio_net_hdr` in front of every frame.
pub const VNET_LEN: usize = 10;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum at `csum_start +
/// csum_offset` holds only the pseudo-header sum.
const F_NEEDS_CSUM: u8 = 1;
const GSO_TCPV4: u8 = 1;
const GSO_TCPV6: u8 = 4;
const GSO_ECN: u8 = 0x80;

/// The virtio-net header the kernel writes before a frame (little endian).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Vnet {
    /// Flags (`NEEDS_CSUM`, `DATA_VALID`).
    pub flags: u8,
    /// Segmentation type (`GSO_NONE`, `GSO_TCPV4`, ...).
    pub gso_type: u8,
    /// Maximum segment size when `gso_type` is not `GSO_NONE`.
    pub gso_size: u16,
    /// Where the checksummed area starts (from the frame start).
    pub csum_start: u16,
    /// Where the checksum field is, from `csum_start`.
    pub csum_offset: u16,
}

impl Vnet {
    /// Reads the header.
    pub fn parse(b: &[u8; VNET_LEN]) -> Vnet {
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        Vnet {
            flags: b[0],
            gso_type: b[1],
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        }
    }
}

/// Where a frame's delivery stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Every packet the frame makes is in the batch (or counted dropped).
    Done,
    /// The batch filled; call again with this first segment.
    Resume(usize),
}

/// Completes a checksum the sender left to the device: sums from
/// `start` to the end (the field holds the pseudo-header sum) and stores
/// the result. False if the offsets do not fit the frame.
pub fn complete_checksum(frame: &mut [u8], start: usize, offset: usize) -> bool {
    let field = start + offset;
    if start > frame.len() || field + 2 > frame.len() {
        return false;
    }
    let mut c = !fold(ones_sum(&frame[start..], 0));
    // UDP (checksum field at offset 6) sends a zero checksum as 0xffff.
    if c == 0 && offset == 6 {
        c = 0xffff;
    }
    frame[field..field + 2].copy_from_slice(&c.to_be_bytes());
    true
}

/// Offsets of a TCP frame: (network header, transport header, headers'
/// end, IPv4?).
fn tcp_layout(f: &[u8]) -> Option<(usize, usize, usize, bool)> {
    let mut l3 = 14;
    let mut et = u16::from_be_bytes([*f.get(12)?, *f.get(13)?]);
    // Up to two VLAN tags in the frame.
    for _ in 0..2 {
        if et == 0x8100 || et == 0x88a8 {
            et = u16::from_be_bytes([*f.get(l3 + 2)?, *f.get(l3 + 3)?]);
            l3 += 4;
        }
    }
    let (l4, v4) = match et {
        0x0800 => {
            let ihl = (*f.get(l3)? as usize & 15) * 4;
            if ihl < 20 || *f.get(l3 + 9)? != 6 {
                return None;
            }
            (l3 + ihl, true)
        }
        0x86dd => {
            if *f.get(l3 + 6)? != 6 {
                return None;
            }
            (l3 + 40, false)
        }
        _ => return None,
    };
    let thl = (*f.get(l4 + 12)? as usize >> 4) * 4;
    if thl < 20 || l4 + thl > f.len() {
        return None;
    }
    Some((l3, l4, l4 + thl, v4))
}

/// Turns one received frame into packets appended to `batch`, starting at
/// segment `first` (0 for a new frame). `frame` may be longer than a pool
/// slot: TCP segmentation-offload frames are cut into segments; any other
/// frame longer than [`pronto_packet::MAX_PACKET`] is counted in
/// `stats.oversize` and dropped. Frames longer than `snaplen` are cut to
/// it, the rest recorded in the extra length annotation. The batch counts
/// as full at `limit` packets.
#[allow(clippy::too_many_arguments)]
pub fn deliver(
    frame: &mut [u8],
    vnet: Option<Vnet>,
    first: usize,
    ts: i64,
    snaplen: usize,
    pool: &Pool,
    batch: &mut Batch,
    limit: usize,
    stats: &mut RxStats,
) -> Delivery {
    let v = vnet.unwrap_or_default();
    let gso = v.gso_type & !GSO_ECN;
    if gso == GSO_TCPV4 || gso == GSO_TCPV6 {
        return segment(frame, v, first, ts, pool, batch, limit, stats);
    }
    // Other segmentation types (UDP fragmentation or segmentation) pass
    // whole when they fit a slot.
    if frame.len() > MAX_PACKET {
        stats.oversize += 1;
        return Delivery::Done;
    }
    if batch.len() >= limit || batch.is_full() {
        return Delivery::Resume(0);
    }
    if v.flags & F_NEEDS_CSUM != 0
        && !complete_checksum(frame, v.csum_start as usize, v.csum_offset as usize)
    {
        stats.bad += 1;
        return Delivery::Done;
    }
    let keep = frame.len().min(snaplen);
    let Some(mut p) = pool.alloc_frame(&frame[..keep], ts) else {
        stats.nomem += 1;
        return Delivery::Done;
    };
    if keep < frame.len() {
        let extra = (frame.len() - keep) as u32;
        let o = EXTRA_LENGTH_ANNO_OFFSET;
        p.anno_bytes_mut()[o..o + 4].copy_from_slice(&extra.to_ne_bytes());
    }
    stats.packets += 1;
    let _ = batch.push(p);
    Delivery::Done
}

/// Cuts a TCP segmentation-offload frame into segments (as the kernel's
/// software segmentation does: sequence numbers advance, IPv4 ids count
/// up, FIN and PSH stay on the last segment, CWR on the first; every
/// checksum is computed).
#[allow(clippy::too_many_arguments)]
fn segment(
    frame: &[u8],
    v: Vnet,
    first: usize,
    ts: i64,
    pool: &Pool,
    batch: &mut Batch,
    limit: usize,
    stats: &mut RxStats,
) -> Delivery {
    let Some((l3, l4, hdr, v4)) = tcp_layout(frame) else {
        stats.bad += 1;
        return Delivery::Done;
    };
    let mss = v.gso_size as usize;
    if mss == 0 || hdr + mss > MAX_PACKET {
        stats.oversize += 1;
        return Delivery::Done;
    }
    let payload = frame.len() - hdr;
    let nsegs = payload.div_ceil(mss).max(1);
    if first == 0 {
        stats.segmented += 1;
    }
    let seq = u32::from_be_bytes([frame[l4 + 4], frame[l4 + 5], frame[l4 + 6], frame[l4 + 7]]);
    let ip_id = u16::from_be_bytes([frame[l3 + 4], frame[l3 + 5]]);
    for i in first..nsegs {
        if batch.len() >= limit || batch.is_full() {
            return Delivery::Resume(i);
        }
        let off = i * mss;
        let chunk = &frame[hdr + off.min(payload)..hdr + (off + mss).min(payload)];
        let Some(mut p) = pool.alloc_frame(&frame[..hdr], ts) else {
            stats.nomem += (nsegs - i) as u64;
            return Delivery::Done;
        };
        p.put_uninit(chunk.len()).copy_from_slice(chunk);
        let d = p.data_mut();
        let len = d.len();
        if v4 {
            d[l3 + 2..l3 + 4].copy_from_slice(&((len - l3) as u16).to_be_bytes());
            d[l3 + 4..l3 + 6].copy_from_slice(&ip_id.wrapping_add(i as u16).to_be_bytes());
            d[l3 + 10..l3 + 12].fill(0);
            let c = !fold(ones_sum(&d[l3..l4], 0));
            d[l3 + 10..l3 + 12].copy_from_slice(&c.to_be_bytes());
        } else {
            d[l3 + 4..l3 + 6].copy_from_slice(&((len - l3 - 40) as u16).to_be_bytes());
        }
        d[l4 + 4..l4 + 8].copy_from_slice(&seq.wrapping_add(off as u32).to_be_bytes());
        if i + 1 != nsegs {
            d[l4 + 13] &= !0x09; // FIN, PSH
        }
        if i != 0 {
            d[l4 + 13] &= !0x80; // CWR
        }
        d[l4 + 16..l4 + 18].fill(0);
        let (src, dst) = if v4 {
            (l3 + 12..l3 + 16, l3 + 16..l3 + 20)
        } else {
            (l3 + 8..l3 + 24, l3 + 24..l3 + 40)
        };
        let ph = pseudo_header_sum(&d[src], &d[dst], 6, len - l4);
        let c = !fold(ones_sum(&d[l4..], ph));
        d[l4 + 16..l4 + 18].copy_from_slice(&c.to_be_bytes());
        stats.packets += 1;
        let _ = batch.push(p);
    }
    Delivery::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use pronto_packet::wire::checksum;

    /// An Ethernet + IPv4 + TCP frame with `payload` bytes, checksums as a
    /// TSO sender leaves them (IP total length of the whole frame).
    fn tso_frame(payload: usize, flags: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 20 + payload];
        f[12..14].copy_from_slice(&[0x08, 0x00]); // IPv4
        f[14] = 0x45; // version 4, ihl 5
        let tot = (20 + 20 + payload) as u16;
        f[16..18].copy_from_slice(&tot.to_be_bytes());
        f[18..20].copy_from_slice(&[0x12, 0x34]); // id
        f[22] = 64; // ttl
        f[23] = 6; // TCP
        f[26..30].copy_from_slice(&[10, 0, 0, 1]); // src
        f[30..34].copy_from_slice(&[10, 0, 0, 2]); // dst
        f[34..36].copy_from_slice(&1000u16.to_be_bytes()); // sport
        f[36..38].copy_from_slice(&80u16.to_be_bytes()); // dport
        f[38..42].copy_from_slice(&0xffff_fff0u32.to_be_bytes()); // seq (wraps)
        f[46] = 0x50; // data offset 5
        f[47] = flags;
        for (i, b) in f[54..].iter_mut().enumerate() {
            *b = i as u8;
        }
        f
    }

    fn tcp_ok(d: &[u8]) -> bool {
        let tl = d.len() - 34;
        fold(ones_sum(
            &d[34..],
            pseudo_header_sum(&d[26..30], &d[30..34], 6, tl),
        )) == 0xffff
    }

    #[test]
    fn tso_frame_is_cut_into_valid_segments() {
        let pool = Pool::new(64).expect("pool");
        let mut batch = Batch::new();
        let mut st = RxStats::default();
        // PSH|ACK|FIN|CWR, 3,000 bytes, MSS 1,448: 1,448 + 1,448 + 104.
        let mut f = tso_frame(3000, 0x80 | 0x10 | 0x08 | 0x01);
        let v = Vnet {
            flags: F_NEEDS_CSUM,
            gso_type: GSO_TCPV4,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let r = deliver(&mut f, Some(v), 0, 7, 2046, &pool, &mut batch, 256, &mut st);
        assert_eq!(r, Delivery::Done);
        assert_eq!(batch.len(), 3);
        assert_eq!((st.packets, st.segmented), (3, 1));
        let lens: Vec<usize> = batch.iter().map(|p| p.len()).collect();
        assert_eq!(lens, [54 + 1448, 54 + 1448, 54 + 104]);
        let mut payload = Vec::new();
        for (i, p) in batch.iter().enumerate() {
            let d = p.data();
            assert_eq!(checksum(&d[14..34]), 0, "IP checksum of segment {i}");
            assert!(tcp_ok(d), "TCP checksum of segment {i}");
            assert_eq!(u16::from_be_bytes([d[16], d[17]]) as usize, d.len() - 14);
            assert_eq!(u16::from_be_bytes([d[18], d[19]]), 0x1234 + i as u16);
            let seq = u32::from_be_bytes([d[38], d[39], d[40], d[41]]);
            assert_eq!(seq, 0xffff_fff0u32.wrapping_add(1448 * i as u32));
            let want_flags = match i {
                0 => 0x80 | 0x10,
                1 => 0x10,
                _ => 0x10 | 0x08 | 0x01,
            };
            assert_eq!(d[47], want_flags, "flags of segment {i}");
            assert_eq!(p.timestamp_ns(), 7);
            payload.extend_from_slice(&d[54..]);
        }
        assert_eq!(&payload[..], &f[54..]);
    }

    #[test]
    fn full_batch_resumes_mid_frame() {
        let pool = Pool::new(600).expect("pool");
        let mut batch = Batch::new();
        let mut st = RxStats::default();
        let mut f = tso_frame(300 * 100, 0x10);
        let v = Vnet {
            gso_type: GSO_TCPV4,
            gso_size: 100,
            ..Vnet::default()
        };
        let r = deliver(&mut f, Some(v), 0, 0, 2046, &pool, &mut batch, 256, &mut st);
        assert_eq!(r, Delivery::Resume(256));
        batch.clear();
        let r = deliver(
            &mut f,
            Some(v),
            256,
            0,
            2046,
            &pool,
            &mut batch,
            256,
            &mut st,
        );
        assert_eq!(r, Delivery::Done);
        assert_eq!(batch.len(), 44);
        let d = batch.as_slice()[43].data();
        let seq = u32::from_be_bytes([d[38], d[39], d[40], d[41]]);
        assert_eq!(seq, 0xffff_fff0u32.wrapping_add(299 * 100));
        assert!(tcp_ok(d));
    }

    #[test]
    fn partial_checksum_is_completed_and_big_frames_dropped() {
        let pool = Pool::new(8).expect("pool");
        let mut batch = Batch::new();
        let mut st = RxStats::default();
        let mut f = tso_frame(100, 0x18);
        // The sender left the pseudo-header sum in the field.
        let ph = pseudo_header_sum(&f[26..30], &f[30..34], 6, 120);
        f[50..52].copy_from_slice(&fold(ph).to_be_bytes());
        let v = Vnet {
            flags: F_NEEDS_CSUM,
            csum_start: 34,
            csum_offset: 16,
            ..Vnet::default()
        };
        assert_eq!(
            deliver(&mut f, Some(v), 0, 0, 2046, &pool, &mut batch, 256, &mut st),
            Delivery::Done
        );
        assert!(tcp_ok(batch.as_slice()[0].data()));
        // A non-TCP frame longer than a slot is counted and dropped.
        let mut big = vec![0u8; MAX_PACKET + 1];
        deliver(&mut big, None, 0, 0, 4096, &pool, &mut batch, 256, &mut st);
        assert_eq!((batch.len(), st.oversize), (1, 1));
        // Offsets past the frame are a bad frame, not a panic.
        let bad = Vnet {
            flags: F_NEEDS_CSUM,
            csum_start: 500,
            csum_offset: 16,
            ..Vnet::default()
        };
        deliver(
            &mut f,
            Some(bad),
            0,
            0,
            2046,
            &pool,
            &mut batch,
            256,
            &mut st,
        );
        assert_eq!((batch.len(), st.bad), (1, 1));
        // SNAPLEN cuts and records the rest.
        deliver(&mut f, None, 0, 0, 60, &pool, &mut batch, 256, &mut st);
        let p = &batch.as_slice()[1];
        assert_eq!(p.len(), 60);
        assert_eq!(p.anno_bytes()[EXTRA_LENGTH_ANNO_OFFSET], 94);
    }
}
