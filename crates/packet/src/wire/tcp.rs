//! TCP (RFC 9293) segment headers.
//!
//! `TcpPacket::new_checked` checks that the fixed 20 bytes are there and
//! that the data offset is at least 5 and inside the buffer, so that
//! `options` and `payload` cannot fail. A reader that needs only the
//! fixed fields of a segment whose data offset it does not trust (a flow
//! classifier) checks the length itself and uses `new_unchecked`.

use super::{be16, fold, ones_sum, set_be16, WireError};

/// Length of the TCP header without options.
pub const TCP_MIN_HEADER_LEN: usize = 20;

/// TCP flag bits (the low byte of the data-offset word).
pub mod flags {
    /// No more data from the sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset the connection.
    pub const RST: u8 = 0x04;
    /// Push.
    pub const PSH: u8 = 0x08;
    /// The acknowledgment field is significant.
    pub const ACK: u8 = 0x10;
    /// The urgent pointer is significant.
    pub const URG: u8 = 0x20;
    /// ECN echo.
    pub const ECE: u8 = 0x40;
    /// Congestion window reduced.
    pub const CWR: u8 = 0x80;
}

/// A view of a TCP segment.
#[derive(Debug, Clone, Copy)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// Wraps `buffer` without checks: the fixed-field accessors panic
    /// under 20 bytes, `options`/`payload` when the data offset is past
    /// the buffer or below 5.
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// Wraps `buffer` after checking the fixed header (`Truncated`), a
    /// data offset of at least 5 (`BadLength`) and the whole header inside
    /// the buffer (`Truncated`).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < TCP_MIN_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let hl = ((b[12] >> 4) as usize) * 4;
        if hl < TCP_MIN_HEADER_LEN {
            return Err(WireError::BadLength);
        }
        if b.len() < hl {
            return Err(WireError::Truncated);
        }
        Ok(TcpPacket { buffer })
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

    /// The sequence number.
    #[inline]
    pub fn seq(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[4], b[5], b[6], b[7]])
    }

    /// The acknowledgment number.
    #[inline]
    pub fn ack(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[8], b[9], b[10], b[11]])
    }

    /// The header length in bytes (data offset × 4).
    #[inline]
    pub fn header_len(&self) -> usize {
        ((self.buffer.as_ref()[12] >> 4) as usize) * 4
    }

    /// The flags byte ([`flags`]).
    #[inline]
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[13]
    }

    /// True if every flag in `f` is set.
    #[inline]
    pub fn has_flags(&self, f: u8) -> bool {
        self.flags() & f == f
    }

    /// The window.
    #[inline]
    pub fn window(&self) -> u16 {
        be16(self.buffer.as_ref(), 14)
    }

    /// The checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 16)
    }

    /// The urgent pointer.
    #[inline]
    pub fn urgent(&self) -> u16 {
        be16(self.buffer.as_ref(), 18)
    }

    /// The options (the header after its first 20 bytes).
    #[inline]
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[TCP_MIN_HEADER_LEN..self.header_len()]
    }

    /// The data after the header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// True if the checksum over the whole buffer verifies, given the
    /// pseudo-header sum (`Ipv4Packet::pseudo_header_sum` or
    /// `Ipv6Header::pseudo_header_sum`, with the buffer's length).
    #[inline]
    pub fn checksum_ok(&self, pseudo: u64) -> bool {
        fold(ones_sum(self.buffer.as_ref(), pseudo)) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
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

    /// Sets the sequence number.
    #[inline]
    pub fn set_seq(&mut self, v: u32) {
        self.buffer.as_mut()[4..8].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the acknowledgment number.
    #[inline]
    pub fn set_ack(&mut self, v: u32) {
        self.buffer.as_mut()[8..12].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the header length in bytes (a multiple of 4), leaving the
    /// reserved bits.
    #[inline]
    pub fn set_header_len(&mut self, hl: usize) {
        let b = self.buffer.as_mut();
        b[12] = (b[12] & 0x0f) | (((hl / 4) as u8) << 4);
    }

    /// Sets the flags byte.
    #[inline]
    pub fn set_flags(&mut self, f: u8) {
        self.buffer.as_mut()[13] = f;
    }

    /// Sets the window.
    #[inline]
    pub fn set_window(&mut self, w: u16) {
        set_be16(self.buffer.as_mut(), 14, w);
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, c: u16) {
        set_be16(self.buffer.as_mut(), 16, c);
    }

    /// Sets the urgent pointer.
    #[inline]
    pub fn set_urgent(&mut self, u: u16) {
        set_be16(self.buffer.as_mut(), 18, u);
    }

    /// Computes the checksum over the whole buffer with the pseudo-header
    /// sum `pseudo` and stores it.
    #[inline]
    pub fn fill_checksum(&mut self, pseudo: u64) {
        self.set_checksum(0);
        let c = !fold(ones_sum(self.buffer.as_ref(), pseudo));
        self.set_checksum(c);
    }

    /// The options, writable.
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[TCP_MIN_HEADER_LEN..hl]
    }

    /// The data after the header, writable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = self.header_len();
        &mut self.buffer.as_mut()[hl..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv4::Ipv4Packet;

    /// 10.0.0.1:40000 -> 10.0.0.2:80, a SYN with an MSS option (1460),
    /// seq 0x01020304, window 64240.
    fn syn() -> Vec<u8> {
        vec![
            0x45, 0x00, 0x00, 0x2c, 0x00, 0x01, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, // IP
            10, 0, 0, 1, 10, 0, 0, 2, //
            0x9c, 0x40, 0x00, 0x50, // ports
            0x01, 0x02, 0x03, 0x04, // seq
            0x00, 0x00, 0x00, 0x00, // ack
            0x60, 0x02, 0xfa, 0xf0, // data offset 6, SYN, window
            0x00, 0x00, 0x00, 0x00, // checksum, urgent
            0x02, 0x04, 0x05, 0xb4, // MSS 1460
        ]
    }

    #[test]
    fn fields_read_back() {
        let p = syn();
        let t = TcpPacket::new_checked(&p[20..]).expect("accepted");
        assert_eq!(t.src_port(), 40000);
        assert_eq!(t.dst_port(), 80);
        assert_eq!(t.seq(), 0x0102_0304);
        assert_eq!(t.ack(), 0);
        assert_eq!(t.header_len(), 24);
        assert_eq!(t.flags(), flags::SYN);
        assert!(t.has_flags(flags::SYN));
        assert!(!t.has_flags(flags::SYN | flags::ACK));
        assert_eq!(t.window(), 64240);
        assert_eq!(t.urgent(), 0);
        assert_eq!(t.options(), &[0x02, 0x04, 0x05, 0xb4]);
        assert!(t.payload().is_empty());
    }

    #[test]
    fn refuses_bad_data_offsets_and_short_headers() {
        let p = syn();
        assert_eq!(
            TcpPacket::new_checked(&p[20..39]).expect_err("19 bytes"),
            WireError::Truncated
        );
        // The option is announced but cut off.
        assert_eq!(
            TcpPacket::new_checked(&p[20..42]).expect_err("22 of 24"),
            WireError::Truncated
        );
        let mut low = p.clone();
        low[32] = 0x40; // data offset 4
        assert_eq!(
            TcpPacket::new_checked(&low[20..]).expect_err("offset 4"),
            WireError::BadLength
        );
        // The fixed fields stay readable without the check.
        assert_eq!(TcpPacket::new_unchecked(&low[20..]).dst_port(), 80);
    }

    #[test]
    fn checksum_fills_and_verifies() {
        let mut p = syn();
        let pseudo = Ipv4Packet::new_checked(&p[..])
            .expect("ip")
            .pseudo_header_sum(6, 24);
        let mut t = TcpPacket::new_checked(&mut p[20..]).expect("accepted");
        t.fill_checksum(pseudo);
        assert!(t.checksum_ok(pseudo));
        // By hand: pseudo 0a00+0001+0a00+0002+0006+0018 = 0x1421; header
        // 9c40+0050+0102+0304+6002+faf0+0204+05b4 = 0x2_0340 (folded
        // 0x0342); 0x1421 + 0x0342 = 0x1763, complemented 0xe89c.
        assert_eq!(t.checksum(), 0xe89c);
        t.set_window(1);
        assert!(!t.checksum_ok(pseudo));
        t.set_flags(flags::SYN | flags::ACK);
        t.set_ack(5);
        t.set_seq(6);
        t.set_src_port(1);
        t.set_dst_port(2);
        t.set_header_len(20);
        assert_eq!(
            &p[20..34],
            &[0, 1, 0, 2, 0, 0, 0, 6, 0, 0, 0, 5, 0x50, 0x12]
        );
    }
}
