//! IPv4 (RFC 791): the header, its fragment fields, options and checksum.
//!
//! `Ipv4Packet::new_checked` checks once that the buffer holds a version-4
//! header of at least 20 bytes whose IHL fits in the buffer; the accessors
//! then read at fixed offsets and cannot fail. The total length is *not*
//! checked there (a packet classifier reads the header of a packet whose
//! length field lies); [`Ipv4Packet::check_total_len`] does that for the
//! elements that validate (`CheckIPHeader`).

use super::{addr4, be16, checksum, fold, ones_sum, set_be16, update_checksum16, WireError};

/// Length of the IPv4 header without options.
pub const IPV4_MIN_HEADER_LEN: usize = 20;

/// The flags and fragment-offset field's bits.
pub mod frag {
    /// Reserved ("evil") bit.
    pub const RESERVED: u16 = 0x8000;
    /// Don't Fragment.
    pub const DF: u16 = 0x4000;
    /// More Fragments.
    pub const MF: u16 = 0x2000;
    /// The fragment offset, in 8-byte units.
    pub const OFFSET: u16 = 0x1fff;
    /// MF or an offset: the packet is a fragment (first or later).
    pub const FRAGMENT: u16 = MF | OFFSET;
}

/// A view of an IPv4 packet starting at its header.
#[derive(Debug, Clone, Copy)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buffer` without checks: accessors panic if it is shorter
    /// than the header (20 bytes, or the IHL for `options`/`payload`).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
    }

    /// Wraps `buffer` after checking that it holds an IPv4 header:
    /// `Truncated` if shorter than 20 bytes or than the IHL says,
    /// `BadVersion` if the version is not 4, `BadLength` for an IHL
    /// below 5.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < IPV4_MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        if b[0] >> 4 != 4 {
            return Err(WireError::BadVersion);
        }
        let hl = ((b[0] & 0x0f) as usize) * 4;
        if hl < IPV4_MIN_HEADER_LEN {
            return Err(WireError::BadLength);
        }
        if b.len() < hl {
            return Err(WireError::Truncated);
        }
        Ok(Ipv4Packet { buffer })
    }

    /// Checks the total length against the header length and the buffer:
    /// `BadLength` if it is shorter than the header or longer than the
    /// buffer (a buffer longer than the total length, link-layer padding,
    /// is fine).
    #[inline]
    pub fn check_total_len(&self) -> Result<(), WireError> {
        let tl = self.total_len() as usize;
        if tl < self.header_len() || tl > self.buffer.as_ref().len() {
            return Err(WireError::BadLength);
        }
        Ok(())
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The header and what follows it.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.buffer.as_ref()
    }

    /// The version field (4 for a header `new_checked` accepted).
    #[inline]
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// The header length in bytes (IHL × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        ((self.buffer.as_ref()[0] & 0x0f) as usize) * 4
    }

    /// The type-of-service byte (DSCP and ECN).
    #[inline]
    pub fn tos(&self) -> u8 {
        self.buffer.as_ref()[1]
    }

    /// The DSCP (the TOS byte's top six bits).
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.tos() >> 2
    }

    /// The ECN field (the TOS byte's low two bits).
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.tos() & 3
    }

    /// The total length field.
    #[inline]
    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }

    /// The identification.
    #[inline]
    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), 4)
    }

    /// The flags and fragment offset as one 16-bit field (see [`frag`]).
    #[inline]
    pub fn frag_field(&self) -> u16 {
        be16(self.buffer.as_ref(), 6)
    }

    /// The Don't Fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        self.frag_field() & frag::DF != 0
    }

    /// The More Fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        self.frag_field() & frag::MF != 0
    }

    /// The fragment offset in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (self.frag_field() & frag::OFFSET) << 3
    }

    /// True for a fragment, first or later: MF is set or the offset is not
    /// zero. This is pronto's one definition of "a fragment".
    #[inline]
    pub fn is_fragment(&self) -> bool {
        self.frag_field() & frag::FRAGMENT != 0
    }

    /// True for the first fragment of several (MF set, offset zero): it
    /// carries the transport header.
    #[inline]
    pub fn is_first_fragment(&self) -> bool {
        self.frag_field() & frag::FRAGMENT == frag::MF
    }

    /// True for a fragment other than the first (offset not zero): no
    /// transport header.
    #[inline]
    pub fn is_later_fragment(&self) -> bool {
        self.frag_field() & frag::OFFSET != 0
    }

    /// The time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[8]
    }

    /// The protocol.
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[9]
    }

    /// The header checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 10)
    }

    /// The source address.
    #[inline]
    pub fn src_addr(&self) -> [u8; 4] {
        addr4(self.buffer.as_ref(), 12)
    }

    /// The destination address.
    #[inline]
    pub fn dst_addr(&self) -> [u8; 4] {
        addr4(self.buffer.as_ref(), 16)
    }

    /// The source address as a host-order number.
    #[inline]
    pub fn src_u32(&self) -> u32 {
        u32::from_be_bytes(self.src_addr())
    }

    /// The destination address as a host-order number.
    #[inline]
    pub fn dst_u32(&self) -> u32 {
        u32::from_be_bytes(self.dst_addr())
    }

    /// The header, options included.
    #[inline]
    pub fn header(&self) -> &[u8] {
        &self.buffer.as_ref()[..self.header_len()]
    }

    /// The options (the header after its first 20 bytes).
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[IPV4_MIN_HEADER_LEN..self.header_len()]
    }

    /// The bytes after the header up to the total length, or to the end
    /// of the buffer when the total length says more (or less than the
    /// header).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let hl = self.header_len();
        let end = (self.total_len() as usize).clamp(hl, b.len());
        &b[hl..end]
    }

    /// Everything after the header, to the end of the buffer, whatever the
    /// total length says.
    #[inline]
    pub fn rest(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// True if the header checksum verifies.
    #[inline]
    pub fn checksum_ok(&self) -> bool {
        super::ipv4_header_checksum_ok(self.header())
    }

    /// The one's-complement sum of the TCP/UDP pseudo-header for a
    /// transport segment of `len` bytes with protocol `proto` (not folded).
    #[inline]
    pub fn pseudo_header_sum(&self, proto: u8, len: usize) -> u64 {
        let b = self.buffer.as_ref();
        ones_sum(&b[12..20], 0) + proto as u64 + len as u64
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets version 4 and the header length in bytes (a multiple of 4).
    #[inline]
    pub fn set_version_and_header_len(&mut self, hl: usize) {
        self.buffer.as_mut()[0] = 0x40 | ((hl / 4) as u8 & 0x0f);
    }

    /// Sets the type-of-service byte.
    #[inline]
    pub fn set_tos(&mut self, tos: u8) {
        self.buffer.as_mut()[1] = tos;
    }

    /// Sets the total length.
    #[inline]
    pub fn set_total_len(&mut self, len: u16) {
        set_be16(self.buffer.as_mut(), 2, len);
    }

    /// Sets the identification.
    #[inline]
    pub fn set_ident(&mut self, id: u16) {
        set_be16(self.buffer.as_mut(), 4, id);
    }

    /// Sets the flags and fragment offset field.
    #[inline]
    pub fn set_frag_field(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), 6, v);
    }

    /// Sets the time to live.
    #[inline]
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buffer.as_mut()[8] = ttl;
    }

    /// Sets the protocol.
    #[inline]
    pub fn set_protocol(&mut self, p: u8) {
        self.buffer.as_mut()[9] = p;
    }

    /// Sets the header checksum field.
    #[inline]
    pub fn set_checksum(&mut self, c: u16) {
        set_be16(self.buffer.as_mut(), 10, c);
    }

    /// Sets the source address.
    #[inline]
    pub fn set_src_addr(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[12..16].copy_from_slice(&a);
    }

    /// Sets the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[16..20].copy_from_slice(&a);
    }

    /// Computes the header checksum and stores it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum(self.header());
        self.set_checksum(c);
    }

    /// Sets the source address, updating the header checksum
    /// incrementally (RFC 1624); returns the old address (the transport
    /// checksum, which covers it too, is the caller's).
    #[inline]
    pub fn rewrite_src_addr(&mut self, a: [u8; 4]) -> [u8; 4] {
        let old = self.src_addr();
        let c = super::update_checksum32(self.checksum(), old, a);
        self.set_src_addr(a);
        self.set_checksum(c);
        old
    }

    /// Sets the destination address, updating the header checksum
    /// incrementally; returns the old address.
    #[inline]
    pub fn rewrite_dst_addr(&mut self, a: [u8; 4]) -> [u8; 4] {
        let old = self.dst_addr();
        let c = super::update_checksum32(self.checksum(), old, a);
        self.set_dst_addr(a);
        self.set_checksum(c);
        old
    }

    /// Sets the TTL, updating the header checksum incrementally.
    #[inline]
    pub fn rewrite_ttl(&mut self, ttl: u8) {
        let b = self.buffer.as_ref();
        let old = be16(b, 8);
        let new = ((ttl as u16) << 8) | b[9] as u16;
        let c = update_checksum16(self.checksum(), old, new);
        self.set_ttl(ttl);
        self.set_checksum(c);
    }

    /// Decrements the TTL (the caller has checked it is above zero) and
    /// updates the header checksum: the TTL is the high byte of its word,
    /// so the word falls by 0x0100 and the new sum is ~(~old + 0xfeff)
    /// (RFC 1624), one carry fold.
    #[inline]
    pub fn decrement_ttl(&mut self) {
        let ttl = self.ttl();
        self.set_ttl(ttl.wrapping_sub(1));
        let sum = (!self.checksum() as u32) + 0xfeff;
        self.set_checksum(!((sum + (sum >> 16)) as u16));
    }

    /// The header, options included, writable.
    #[inline]
    pub fn header_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[..hl]
    }

    /// The options, writable.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[IPV4_MIN_HEADER_LEN..hl]
    }

    /// Everything after the header, to the end of the buffer, writable.
    #[inline]
    pub fn rest_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[hl..]
    }
}

/// Folds the pseudo-header sum of an IPv4 segment into a checksum of the
/// segment `l4` (whose checksum field must be zero, or hold the value to
/// verify): the stored-form checksum.
#[inline]
pub fn transport_checksum(pseudo: u64, l4: &[u8]) -> u16 {
    !fold(ones_sum(l4, pseudo))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 192.168.0.1 -> 192.168.0.199, UDP, total length 0x73, DF, TTL 64,
    /// header checksum 0xb861.
    const HDR: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, // version 4, IHL 5, TOS 0, total length 115
        0x00, 0x00, 0x40, 0x00, // id 0, DF, offset 0
        0x40, 0x11, 0xb8, 0x61, // TTL 64, UDP, checksum
        0xc0, 0xa8, 0x00, 0x01, // source
        0xc0, 0xa8, 0x00, 0xc7, // destination
    ];

    fn packet() -> Vec<u8> {
        let mut p = HDR.to_vec();
        p.resize(0x73, 0xaa);
        p
    }

    #[test]
    fn fields_read_back() {
        let p = packet();
        let h = Ipv4Packet::new_checked(&p[..]).expect("accepted");
        assert_eq!(h.version(), 4);
        assert_eq!(h.header_len(), 20);
        assert_eq!(h.tos(), 0);
        assert_eq!(h.total_len(), 115);
        assert_eq!(h.ident(), 0);
        assert!(h.dont_frag());
        assert!(!h.more_frags());
        assert!(!h.is_fragment());
        assert!(!h.is_first_fragment());
        assert!(!h.is_later_fragment());
        assert_eq!(h.ttl(), 64);
        assert_eq!(h.protocol(), 17);
        assert_eq!(h.checksum(), 0xb861);
        assert!(h.checksum_ok());
        assert_eq!(h.src_addr(), [192, 168, 0, 1]);
        assert_eq!(h.dst_u32(), 0xc0a8_00c7);
        assert!(h.options().is_empty());
        assert_eq!(h.payload().len(), 95);
        assert_eq!(h.check_total_len(), Ok(()));
    }

    #[test]
    fn refuses_short_or_wrong_headers() {
        let p = packet();
        assert_eq!(
            Ipv4Packet::new_checked(&p[..19]).expect_err("short"),
            WireError::Truncated
        );
        let mut v6 = p.clone();
        v6[0] = 0x65;
        assert_eq!(
            Ipv4Packet::new_checked(&v6[..]).expect_err("v6"),
            WireError::BadVersion
        );
        // IHL 4 (16 bytes) is less than the fixed header.
        let mut ihl4 = p.clone();
        ihl4[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&ihl4[..]).expect_err("ihl 4"),
            WireError::BadLength
        );
        // IHL 15 (60 bytes) with only 40 bytes.
        let mut ihl15 = p.clone();
        ihl15[0] = 0x4f;
        assert_eq!(
            Ipv4Packet::new_checked(&ihl15[..40]).expect_err("ihl 15"),
            WireError::Truncated
        );
        let h = Ipv4Packet::new_checked(&ihl15[..60]).expect("60 bytes hold IHL 15");
        assert_eq!(h.options().len(), 40);
    }

    #[test]
    fn total_length_is_checked_apart() {
        let p = packet();
        // The total length says 115; the buffer holds 100.
        let h = Ipv4Packet::new_checked(&p[..100]).expect("header is whole");
        assert_eq!(h.check_total_len(), Err(WireError::BadLength));
        assert_eq!(h.payload().len(), 80, "cut at the buffer");
        // Padding after the total length is fine and not payload.
        let mut padded = p.clone();
        padded.extend_from_slice(&[0; 10]);
        let h = Ipv4Packet::new_checked(&padded[..]).expect("accepted");
        assert_eq!(h.check_total_len(), Ok(()));
        assert_eq!(h.payload().len(), 95);
        assert_eq!(h.rest().len(), 105);
        // A total length shorter than the header.
        let mut short = p.clone();
        short[2..4].copy_from_slice(&[0, 19]);
        let h = Ipv4Packet::new_checked(&short[..]).expect("header is whole");
        assert_eq!(h.check_total_len(), Err(WireError::BadLength));
        assert!(h.payload().is_empty());
    }

    #[test]
    fn fragment_definitions() {
        let mut p = packet();
        let cases: [(u16, bool, bool, bool, u16); 5] = [
            // field, is_fragment, first, later, offset in bytes
            (0x0000, false, false, false, 0),
            (0x4000, false, false, false, 0), // DF alone
            (0x2000, true, true, false, 0),   // MF, offset 0
            (0x2001, true, false, true, 8),   // MF, offset 8
            (0x000a, true, false, true, 80),  // the last fragment
        ];
        for (f, is_frag, first, later, off) in cases {
            p[6..8].copy_from_slice(&f.to_be_bytes());
            let h = Ipv4Packet::new_checked(&p[..]).expect("accepted");
            assert_eq!(h.is_fragment(), is_frag, "{f:#06x}");
            assert_eq!(h.is_first_fragment(), first, "{f:#06x}");
            assert_eq!(h.is_later_fragment(), later, "{f:#06x}");
            assert_eq!(h.frag_offset(), off, "{f:#06x}");
        }
    }

    #[test]
    fn checksum_fill_and_incremental_agree() {
        let mut p = packet();
        let mut h = Ipv4Packet::new_checked(&mut p[..]).expect("accepted");
        h.set_checksum(0);
        h.fill_checksum();
        assert_eq!(h.checksum(), 0xb861);
        let old = h.rewrite_src_addr([10, 0, 0, 1]);
        assert_eq!(old, [192, 168, 0, 1]);
        assert!(h.checksum_ok());
        h.rewrite_dst_addr([10, 0, 0, 2]);
        assert!(h.checksum_ok());
        h.rewrite_ttl(1);
        assert_eq!(h.ttl(), 1);
        assert!(h.checksum_ok());
        let inc = h.checksum();
        h.fill_checksum();
        assert_eq!(h.checksum(), inc);
        assert_eq!(&p[12..20], &[10, 0, 0, 1, 10, 0, 0, 2]);
    }

    #[test]
    fn decrement_ttl_agrees_with_the_general_update_for_every_sum() {
        for c in 0..=0xffffu16 {
            let mut a = packet();
            a[10..12].copy_from_slice(&c.to_be_bytes());
            let mut b = a.clone();
            Ipv4Packet::new_unchecked(&mut a[..]).decrement_ttl();
            Ipv4Packet::new_unchecked(&mut b[..]).rewrite_ttl(63);
            assert_eq!(a, b, "checksum {c:#06x}");
        }
        let mut p = packet();
        let mut h = Ipv4Packet::new_checked(&mut p[..]).expect("accepted");
        h.decrement_ttl();
        assert_eq!(h.ttl(), 63);
        assert!(h.checksum_ok());
    }

    #[test]
    fn options_are_the_header_after_20_bytes() {
        let mut p = HDR.to_vec();
        p[0] = 0x46;
        p.extend_from_slice(&[0x94, 0x04, 0x00, 0x00]); // router alert
        p.extend_from_slice(&[1, 2, 3]);
        p[2..4].copy_from_slice(&27u16.to_be_bytes());
        let mut h = Ipv4Packet::new_checked(&mut p[..]).expect("accepted");
        h.fill_checksum();
        assert!(h.checksum_ok());
        assert_eq!(h.options(), &[0x94, 0x04, 0x00, 0x00]);
        assert_eq!(h.payload(), &[1, 2, 3]);
        h.options_mut()[2] = 1;
        assert!(!h.checksum_ok());
    }

    #[test]
    fn pseudo_header_checksums_a_udp_datagram() {
        // 10.0.0.1:1234 -> 10.0.0.2:53, payload "hi", by hand:
        // 0a00+0001+0a00+0002+0011+000a (pseudo) + 04d2+0035+000a+6869
        // (UDP) = 0x8198, complemented 0x7e67.
        let mut p = vec![
            0x45, 0, 0, 30, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IP
            0x04, 0xd2, 0x00, 0x35, 0x00, 0x0a, 0x00, 0x00, b'h', b'i', // UDP
        ];
        let h = Ipv4Packet::new_checked(&p[..]).expect("accepted");
        let c = transport_checksum(h.pseudo_header_sum(17, 10), h.payload());
        assert_eq!(c, 0x7e67);
        p[26..28].copy_from_slice(&c.to_be_bytes());
        let h = Ipv4Packet::new_checked(&p[..]).expect("accepted");
        assert_eq!(
            transport_checksum(h.pseudo_header_sum(17, 10), h.payload()),
            0
        );
    }
}
