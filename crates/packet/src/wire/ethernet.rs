//! Ethernet II frames and their 802.1Q / 802.1ad VLAN tags.
//!
//! `EthernetFrame::new_checked` checks once that the 14-byte header is
//! there; `VlanTag::new_checked` that a 4-byte tag (TCI and the inner
//! EtherType) is. [`network_header`] finds the network header behind up
//! to two tags.

use super::{be16, set_be16, WireError, ETHER_LEN};

/// EtherType of an 802.1Q (customer) VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType of an 802.1ad (service, "QinQ") VLAN tag.
pub const ETHERTYPE_QINQ: u16 = 0x88a8;
/// Length of a VLAN tag (TPID is the EtherType before it: TCI and the
/// inner EtherType).
pub const VLAN_TAG_LEN: usize = 4;
/// The most VLAN tags [`network_header`] steps over.
pub const MAX_VLAN_TAGS: usize = 2;

/// True for the EtherTypes that announce a VLAN tag.
#[inline]
pub fn is_vlan_ethertype(t: u16) -> bool {
    t == ETHERTYPE_VLAN || t == ETHERTYPE_QINQ
}

/// A view of an Ethernet II frame.
#[derive(Debug, Clone, Copy)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buffer` without checks: accessors panic if it is shorter
    /// than 14 bytes.
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        EthernetFrame { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 14-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < ETHER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(EthernetFrame { buffer })
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The destination address.
    #[inline]
    pub fn dst_addr(&self) -> [u8; 6] {
        mac(self.buffer.as_ref(), 0)
    }

    /// The source address.
    #[inline]
    pub fn src_addr(&self) -> [u8; 6] {
        mac(self.buffer.as_ref(), 6)
    }

    /// The EtherType (or TPID, when a VLAN tag follows).
    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), 12)
    }

    /// The 14-byte header.
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..ETHER_LEN]
    }

    /// The bytes after the 14-byte header (a VLAN tag, if any, included).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[ETHER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[0..6].copy_from_slice(&a);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[6..12].copy_from_slice(&a);
    }

    /// Sets the EtherType.
    #[inline]
    pub fn set_ethertype(&mut self, t: u16) {
        set_be16(self.buffer.as_mut(), 12, t);
    }

    /// The 14-byte header, writable.
    #[inline]
    pub fn header_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[..ETHER_LEN]
    }

    /// The bytes after the header, writable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ETHER_LEN..]
    }
}

/// A view of a VLAN tag: the 4 bytes after a TPID (0x8100 or 0x88a8),
/// TCI then the inner EtherType.
#[derive(Debug, Clone, Copy)]
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// Wraps `buffer` without checks (accessors panic under 4 bytes).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        VlanTag { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 4-byte tag.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < VLAN_TAG_LEN {
            return Err(WireError::Truncated);
        }
        Ok(VlanTag { buffer })
    }

    /// The tag control information (PCP, DEI, VID).
    #[inline]
    pub fn tci(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }

    /// The priority code point (3 bits).
    #[inline]
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// The drop-eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    /// The VLAN identifier (12 bits).
    #[inline]
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }

    /// The EtherType after the tag.
    #[inline]
    pub fn inner_ethertype(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    /// Sets the tag control information.
    #[inline]
    pub fn set_tci(&mut self, tci: u16) {
        set_be16(self.buffer.as_mut(), 0, tci);
    }

    /// Sets the EtherType after the tag.
    #[inline]
    pub fn set_inner_ethertype(&mut self, t: u16) {
        set_be16(self.buffer.as_mut(), 2, t);
    }
}

/// Where a frame's network header starts and its EtherType, stepping over
/// up to [`MAX_VLAN_TAGS`] VLAN tags (802.1ad outside 802.1Q, or either
/// alone). `Truncated` if the frame ends inside a header or tag;
/// `TooManyHeaders` if a third tag follows.
#[inline]
pub fn network_header(frame: &[u8]) -> Result<(usize, u16), WireError> {
    let eth = EthernetFrame::new_checked(frame)?;
    let mut t = eth.ethertype();
    let mut off = ETHER_LEN;
    let mut tags = 0;
    while is_vlan_ethertype(t) {
        if tags == MAX_VLAN_TAGS {
            return Err(WireError::TooManyHeaders);
        }
        let tag = VlanTag::new_checked(&frame[off..])?;
        t = tag.inner_ethertype();
        off += VLAN_TAG_LEN;
        tags += 1;
    }
    Ok((off, t))
}

/// Reads 6 bytes at `off`.
#[inline]
pub fn mac(b: &[u8], off: usize) -> [u8; 6] {
    [
        b[off],
        b[off + 1],
        b[off + 2],
        b[off + 3],
        b[off + 4],
        b[off + 5],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 18] = [
        0x00, 0x1b, 0x21, 0x3c, 0x9d, 0xf8, // destination
        0x52, 0x54, 0x00, 0x12, 0x34, 0x56, // source
        0x08, 0x00, // IPv4
        0x45, 0x00, 0x00, 0x14, // the start of an IP header
    ];

    #[test]
    fn header_fields_read_back_and_write() {
        let mut f = FRAME;
        let e = EthernetFrame::new_checked(&f[..]).expect("accepted");
        assert_eq!(e.dst_addr(), [0x00, 0x1b, 0x21, 0x3c, 0x9d, 0xf8]);
        assert_eq!(e.src_addr(), [0x52, 0x54, 0x00, 0x12, 0x34, 0x56]);
        assert_eq!(e.ethertype(), 0x0800);
        assert_eq!(e.payload(), &[0x45, 0x00, 0x00, 0x14]);
        let mut e = EthernetFrame::new_checked(&mut f[..]).expect("accepted");
        e.set_dst_addr([0xff; 6]);
        e.set_src_addr([2, 0, 0, 0, 0, 1]);
        e.set_ethertype(0x0806);
        assert_eq!(
            &f[..14],
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x08, 0x06]
        );
        assert_eq!(
            EthernetFrame::new_checked(&FRAME[..13]).expect_err("short"),
            WireError::Truncated
        );
    }

    #[test]
    fn vlan_tag_fields() {
        // PCP 5, DEI 1, VID 0x123, then IPv6.
        let t = [0xb1, 0x23, 0x86, 0xdd];
        let v = VlanTag::new_checked(&t[..]).expect("accepted");
        assert_eq!(v.tci(), 0xb123);
        assert_eq!(v.pcp(), 5);
        assert!(v.dei());
        assert_eq!(v.vid(), 0x123);
        assert_eq!(v.inner_ethertype(), 0x86dd);
        let mut t2 = [0u8; 4];
        let mut v = VlanTag::new_checked(&mut t2[..]).expect("accepted");
        v.set_tci(0xb123);
        v.set_inner_ethertype(0x86dd);
        assert_eq!(t2, t);
        assert!(VlanTag::new_checked(&t[..3]).is_err());
    }

    #[test]
    fn network_header_steps_over_two_tags() {
        assert_eq!(network_header(&FRAME), Ok((14, 0x0800)));
        // One 802.1Q tag.
        let mut q = FRAME[..12].to_vec();
        q.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a, 0x08, 0x00]);
        assert_eq!(network_header(&q), Ok((18, 0x0800)));
        // 802.1ad outside 802.1Q.
        let mut qq = FRAME[..12].to_vec();
        qq.extend_from_slice(&[0x88, 0xa8, 0x00, 0x64, 0x81, 0x00, 0x00, 0x0a, 0x86, 0xdd]);
        assert_eq!(network_header(&qq), Ok((22, 0x86dd)));
        // A third tag is refused.
        let mut q3 = qq[..20].to_vec();
        q3.extend_from_slice(&[0x81, 0x00, 0x00, 0x0b, 0x08, 0x00]);
        assert_eq!(network_header(&q3), Err(WireError::TooManyHeaders));
        // A tag cut short.
        assert_eq!(network_header(&qq[..19]), Err(WireError::Truncated));
        assert_eq!(network_header(&FRAME[..10]), Err(WireError::Truncated));
        // Exactly the tags, nothing after: the offset is the end.
        assert_eq!(network_header(&qq[..22]), Ok((22, 0x86dd)));
    }
}
