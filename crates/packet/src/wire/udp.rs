//! UDP (RFC 768) datagram headers.
//!
//! `UdpPacket::new_checked` checks that the 8-byte header is there; the
//! length field is checked apart ([`UdpPacket::check_len`]), for the
//! elements that validate it.

use super::{be16, fold, ones_sum, set_be16, WireError};

/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = 8;

/// A view of a UDP datagram.
#[derive(Debug, Clone, Copy)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps `buffer` without checks (accessors panic under 8 bytes).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        UdpPacket { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 8-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < UDP_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(UdpPacket { buffer })
    }

    /// Checks the length field: `BadLength` if it is under 8 or past the
    /// buffer.
    #[inline]
    pub fn check_len(&self) -> Result<(), WireError> {
        let l = self.len() as usize;
        if l < UDP_HEADER_LEN || l > self.buffer.as_ref().len() {
            return Err(WireError::BadLength);
        }
        Ok(())
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }

    /// The destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }

    /// The length field (header and data).
    #[inline]
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> u16 {
        be16(self.buffer.as_ref(), 4)
    }

    /// The checksum field (0: none was computed, over IPv4).
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 6)
    }

    /// The data after the header, up to the length field (or the end of
    /// the buffer, when the length field says more or less than there is).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = (self.len() as usize).clamp(UDP_HEADER_LEN, b.len());
        &b[UDP_HEADER_LEN..end]
    }

    /// True if the checksum over the datagram (to its length field, which
    /// `check_len` accepted) verifies, given the pseudo-header sum; a zero
    /// checksum (none computed) verifies.
    #[inline]
    pub fn checksum_ok(&self, pseudo: u64) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let b = self.buffer.as_ref();
        let end = (self.len() as usize).clamp(UDP_HEADER_LEN, b.len());
        fold(ones_sum(&b[..end], pseudo)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    #[inline]
    pub fn set_src_port(&mut self, p: u16) {
        set_be16(self.buffer.as_mut(), 0, p);
    }

    /// Sets the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, p: u16) {
        set_be16(self.buffer.as_mut(), 2, p);
    }

    /// Sets the length field.
    #[inline]
    pub fn set_len(&mut self, l: u16) {
        set_be16(self.buffer.as_mut(), 4, l);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, c: u16) {
        set_be16(self.buffer.as_mut(), 6, c);
    }

    /// Computes the checksum over the datagram (to its length field) with
    /// the pseudo-header sum and stores it; a computed zero is stored as
    /// 0xffff (zero means "none").
    #[inline]
    pub fn fill_checksum(&mut self, pseudo: u64) {
        self.set_checksum(0);
        let b = self.buffer.as_ref();
        let end = (self.len() as usize).clamp(UDP_HEADER_LEN, b.len());
        let c = !fold(ones_sum(&b[..end], pseudo));
        self.set_checksum(if c == 0 { 0xffff } else { c });
    }

    /// The data after the header, writable (to the end of the buffer).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[UDP_HEADER_LEN..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4::Ipv4Packet;

    /// 10.0.0.1:1234 -> 10.0.0.2:53, "hi", checksum 0x7e67 (by hand in
    /// the IPv4 tests).
    fn datagram() -> Vec<u8> {
        vec![
            0x45, 0, 0, 30, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, // IP
            0x04, 0xd2, 0x00, 0x35, 0x00, 0x0a, 0x7e, 0x67, b'h', b'i', // UDP
        ]
    }

    #[test]
    fn fields_read_back_and_checksum_verifies() {
        let p = datagram();
        let pseudo = Ipv4Packet::new_checked(&p[..])
            .expect("ip")
            .pseudo_header_sum(17, 10);
        let u = UdpPacket::new_checked(&p[20..]).expect("accepted");
        assert_eq!((u.src_port(), u.dst_port()), (1234, 53));
        assert_eq!(u.len(), 10);
        assert_eq!(u.checksum(), 0x7e67);
        assert_eq!(u.payload(), b"hi");
        assert_eq!(u.check_len(), Ok(()));
        assert!(u.checksum_ok(pseudo));
        let mut q = p.clone();
        q[29] = b'j';
        assert!(!UdpPacket::new_checked(&q[20..])
            .expect("ok")
            .checksum_ok(pseudo));
        q[26..28].copy_from_slice(&[0, 0]);
        assert!(UdpPacket::new_checked(&q[20..])
            .expect("ok")
            .checksum_ok(pseudo));
        let mut u = UdpPacket::new_checked(&mut q[20..]).expect("ok");
        u.payload_mut()[1] = b'i';
        u.fill_checksum(pseudo);
        assert_eq!(u.checksum(), 0x7e67);
    }

    #[test]
    fn length_field_is_checked_apart() {
        let p = datagram();
        assert_eq!(
            UdpPacket::new_checked(&p[20..27]).expect_err("7 bytes"),
            WireError::Truncated
        );
        // The length says 10; 9 bytes are there.
        let u = UdpPacket::new_checked(&p[20..29]).expect("header is whole");
        assert_eq!(u.check_len(), Err(WireError::BadLength));
        assert_eq!(u.payload(), b"h");
        let mut short = p.clone();
        short[24..26].copy_from_slice(&[0, 7]);
        let u = UdpPacket::new_checked(&short[20..]).expect("header is whole");
        assert_eq!(u.check_len(), Err(WireError::BadLength));
        assert!(u.payload().is_empty());
    }

    #[test]
    fn zero_sum_is_sent_as_all_ones() {
        // A datagram whose checksum computes to zero: choose the data so
        // that the sum is 0xffff. Pseudo (10.0.0.1 -> 10.0.0.2, UDP, 10)
        // 0x141e, header 04d2+0035+000a = 0x0511; data e6d0 makes
        // 0x141e + 0x0511 + 0xe6d0 = 0xffff.
        let mut p = datagram();
        p[28..30].copy_from_slice(&[0xe6, 0xd0]);
        let pseudo = Ipv4Packet::new_checked(&p[..])
            .expect("ip")
            .pseudo_header_sum(17, 10);
        let mut u = UdpPacket::new_checked(&mut p[20..]).expect("ok");
        u.fill_checksum(pseudo);
        assert_eq!(u.checksum(), 0xffff);
        assert!(u.checksum_ok(pseudo));
    }
}
