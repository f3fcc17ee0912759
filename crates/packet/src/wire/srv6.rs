//! The IPv6 Segment Routing Header (RFC 8754): routing type 4 with a
//! segment list in reverse order (entry 0 is the last segment), checked
//! against the packet before any field is trusted.

use super::WireError;

/// Routing type of the Segment Routing Header.
pub const ROUTING_TYPE_SRH: u8 = 4;

/// Length of the SRH's fixed part (before the segment list).
pub const SRH_FIXED_LEN: usize = 8;

/// A checked Segment Routing Header inside a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Srh {
    /// Offset of the header from the start of the packet.
    pub offset: usize,
    /// Its whole length in bytes (8 × (Hdr Ext Len + 1)), TLVs included.
    pub len: usize,
    /// The header after it.
    pub next_header: u8,
    /// Segments Left.
    pub segments_left: u8,
    /// Last Entry: the index of the last element of the segment list.
    pub last_entry: u8,
}

impl Srh {
    /// Checks the routing header at `offset` in `pkt` as an SRH: routing
    /// type 4, the header inside the packet, a segment list of Last Entry +
    /// 1 entries inside the header (TLVs may follow it; the length skips
    /// them), and Segments Left at most Last Entry (RFC 8754 section 4.3.1
    /// allows Last Entry + 1 only for a reduced segment list, whose first
    /// segment is not in the header; pronto refuses that too).
    ///
    /// Errors: `Truncated` when the header runs past `pkt`, `Malformed` for
    /// another routing type, `BadLength` when the segment list does not fit
    /// the header or Segments Left exceeds Last Entry.
    pub fn parse(pkt: &[u8], offset: usize) -> Result<Srh, WireError> {
        let h = pkt.get(offset..).ok_or(WireError::Truncated)?;
        if h.len() < SRH_FIXED_LEN {
            return Err(WireError::Truncated);
        }
        let len = (h[1] as usize + 1) * 8;
        if h.len() < len {
            return Err(WireError::Truncated);
        }
        if h[2] != ROUTING_TYPE_SRH {
            return Err(WireError::Malformed);
        }
        let (sl, le) = (h[3], h[4]);
        if SRH_FIXED_LEN + (le as usize + 1) * 16 > len || sl > le {
            return Err(WireError::BadLength);
        }
        Ok(Srh {
            offset,
            len,
            next_header: h[0],
            segments_left: sl,
            last_entry: le,
        })
    }

    /// Offset in the packet of segment list entry `i` (at most Last Entry).
    pub fn segment_offset(&self, i: u8) -> usize {
        self.offset + SRH_FIXED_LEN + i as usize * 16
    }

    /// Segment list entry `i` of `pkt` (the packet this header was parsed
    /// from; `i` at most Last Entry).
    pub fn segment(&self, pkt: &[u8], i: u8) -> [u8; 16] {
        super::ipv6::addr16(pkt, self.segment_offset(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn srh(next: u8, hdrlen: u8, rt: u8, sl: u8, le: u8, total: usize) -> Vec<u8> {
        let mut v = vec![next, hdrlen, rt, sl, le, 0, 0, 0];
        for i in 0..(total.saturating_sub(8)) {
            v.push(i as u8);
        }
        v
    }

    #[test]
    fn parses_and_checks() {
        let mut p = vec![0u8; 40];
        p.extend(srh(17, 4, 4, 1, 1, 40));
        let s = Srh::parse(&p, 40).expect("valid");
        assert_eq!(
            s,
            Srh {
                offset: 40,
                len: 40,
                next_header: 17,
                segments_left: 1,
                last_entry: 1
            }
        );
        assert_eq!(s.segment_offset(1), 64);
        assert_eq!(s.segment(&p, 0)[..2], [0, 1]);
        // TLVs after the list: hdr ext len 6 with two segments.
        let mut t = vec![0u8; 40];
        t.extend(srh(17, 6, 4, 0, 1, 56));
        assert_eq!(Srh::parse(&t, 40).expect("valid").len, 56);
        // Segments left beyond last entry; a list longer than the header;
        // a header past the packet; another routing type.
        assert_eq!(
            Srh::parse(&srh(17, 4, 4, 2, 1, 40), 0),
            Err(WireError::BadLength)
        );
        assert_eq!(
            Srh::parse(&srh(17, 2, 4, 0, 1, 24), 0),
            Err(WireError::BadLength)
        );
        assert_eq!(
            Srh::parse(&srh(17, 4, 4, 0, 1, 39), 0),
            Err(WireError::Truncated)
        );
        assert_eq!(
            Srh::parse(&srh(17, 4, 0, 0, 1, 40), 0),
            Err(WireError::Malformed)
        );
        assert_eq!(Srh::parse(&p, 100), Err(WireError::Truncated));
        for cut in 0..p.len() {
            let _ = Srh::parse(&p[..cut], 40);
        }
    }
}
