//! ICMP for IPv4 (RFC 792): type, code, checksum, the echo identifier and
//! sequence number, and the datagram an error message quotes.
//!
//! `IcmpPacket::new_checked` checks that the 8-byte header (type, code,
//! checksum and the 4 type-specific bytes) is there; the accessors then
//! cannot fail. The checksum covers the whole message: the view's buffer
//! should end where the IP payload ends.

use super::{be16, checksum, set_be16, WireError};

/// Length of the ICMP header (with its 4 type-specific bytes).
pub const ICMP_HEADER_LEN: usize = 8;

/// ICMP message types pronto names.
pub mod icmp_type {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const DST_UNREACHABLE: u8 = 3;
    /// Source quench (deprecated, RFC 6633).
    pub const SOURCE_QUENCH: u8 = 4;
    /// Redirect.
    pub const REDIRECT: u8 = 5;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 11;
    /// Parameter problem.
    pub const PARAMETER_PROBLEM: u8 = 12;
    /// Timestamp request.
    pub const TIMESTAMP: u8 = 13;
    /// Timestamp reply.
    pub const TIMESTAMP_REPLY: u8 = 14;

    /// True for the types that report an error about a quoted datagram
    /// (unreachable, source quench, redirect, time exceeded, parameter
    /// problem).
    #[inline]
    pub fn is_error(t: u8) -> bool {
        matches!(
            t,
            DST_UNREACHABLE | SOURCE_QUENCH | REDIRECT | TIME_EXCEEDED | PARAMETER_PROBLEM
        )
    }

    /// True for echo request and reply, whose identifier and sequence
    /// number follow the checksum.
    #[inline]
    pub fn is_echo(t: u8) -> bool {
        t == ECHO_REQUEST || t == ECHO_REPLY
    }
}

/// A view of an ICMP message.
#[derive(Debug, Clone, Copy)]
pub struct IcmpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// Wraps `buffer` without checks (accessors panic under 8 bytes).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        IcmpPacket { buffer }
    }

    /// Wraps `buffer` after checking that it holds the 8-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < ICMP_HEADER_LEN {
            return Err(WireError::Truncated);
        }
        Ok(IcmpPacket { buffer })
    }

    /// The wrapped buffer.
    #[inline]
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The message type ([`icmp_type`]).
    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[0]
    }

    /// The code.
    #[inline]
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[1]
    }

    /// The checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }

    /// The echo identifier (bytes 4-5; meaningful for echo and the other
    /// query messages).
    #[inline]
    pub fn echo_ident(&self) -> u16 {
        be16(self.buffer.as_ref(), 4)
    }

    /// The echo sequence number (bytes 6-7).
    #[inline]
    pub fn echo_seq(&self) -> u16 {
        be16(self.buffer.as_ref(), 6)
    }

    /// The 4 type-specific bytes after the checksum as one word (a
    /// redirect's gateway, a parameter problem's pointer in the top byte,
    /// a "fragmentation needed"'s next-hop MTU in the low half).
    #[inline]
    pub fn rest(&self) -> u32 {
        let b = self.buffer.as_ref();
        u32::from_be_bytes([b[4], b[5], b[6], b[7]])
    }

    /// The bytes after the header: an echo's data, or the datagram an
    /// error quotes (its IP header and at least 8 bytes of what followed).
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[ICMP_HEADER_LEN..]
    }

    /// The quoted datagram of an error message, if the type is one
    /// ([`icmp_type::is_error`]); `None` for the others.
    #[inline]
    pub fn quoted(&self) -> Option<&[u8]> {
        icmp_type::is_error(self.msg_type()).then(|| self.data())
    }

    /// True if the checksum over the whole buffer verifies.
    #[inline]
    pub fn checksum_ok(&self) -> bool {
        checksum(self.buffer.as_ref()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
    /// Sets the type and code.
    #[inline]
    pub fn set_type_code(&mut self, t: u8, code: u8) {
        let b = self.buffer.as_mut();
        b[0] = t;
        b[1] = code;
    }

    /// Sets the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, c: u16) {
        set_be16(self.buffer.as_mut(), 2, c);
    }

    /// Sets the echo identifier.
    #[inline]
    pub fn set_echo_ident(&mut self, id: u16) {
        set_be16(self.buffer.as_mut(), 4, id);
    }

    /// Sets the echo sequence number.
    #[inline]
    pub fn set_echo_seq(&mut self, seq: u16) {
        set_be16(self.buffer.as_mut(), 6, seq);
    }

    /// Sets the 4 type-specific bytes.
    #[inline]
    pub fn set_rest(&mut self, v: u32) {
        self.buffer.as_mut()[4..8].copy_from_slice(&v.to_be_bytes());
    }

    /// Computes the checksum over the whole buffer and stores it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }

    /// The bytes after the header, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[ICMP_HEADER_LEN..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo request: id 0x1234, seq 1, data "abcd"; checksum by hand:
    /// 0800+0000+1234+0001+6162+6364 = 0xdefb, complemented 0x2104.
    const ECHO: [u8; 12] = [
        0x08, 0x00, 0x21, 0x04, 0x12, 0x34, 0x00, 0x01, b'a', b'b', b'c', b'd',
    ];

    #[test]
    fn echo_fields_read_back() {
        let e = IcmpPacket::new_checked(&ECHO[..]).expect("accepted");
        assert_eq!(e.msg_type(), icmp_type::ECHO_REQUEST);
        assert_eq!(e.code(), 0);
        assert_eq!(e.checksum(), 0x2104);
        assert!(e.checksum_ok());
        assert_eq!(e.echo_ident(), 0x1234);
        assert_eq!(e.echo_seq(), 1);
        assert_eq!(e.data(), b"abcd");
        assert_eq!(e.quoted(), None);
        assert!(icmp_type::is_echo(e.msg_type()));
        assert_eq!(
            IcmpPacket::new_checked(&ECHO[..7]).expect_err("7 bytes"),
            WireError::Truncated
        );
    }

    #[test]
    fn reply_is_built_and_checksummed() {
        let mut b = ECHO;
        let mut e = IcmpPacket::new_checked(&mut b[..]).expect("accepted");
        e.set_type_code(icmp_type::ECHO_REPLY, 0);
        e.fill_checksum();
        // 0x0800 less in the sum, so 0x0800 more in its complement.
        assert_eq!(e.checksum(), 0x2904);
        assert!(e.checksum_ok());
        e.set_echo_ident(1);
        e.set_echo_seq(2);
        assert!(!e.checksum_ok());
        assert_eq!(&b[4..8], &[0, 1, 0, 2]);
    }

    #[test]
    fn error_quotes_the_datagram() {
        // Time exceeded quoting an IP header's first bytes and 8 more.
        let mut m = vec![11, 0, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[0x45; 28]);
        let mut e = IcmpPacket::new_checked(&mut m[..]).expect("accepted");
        e.fill_checksum();
        assert!(e.checksum_ok());
        assert_eq!(e.quoted().map(<[u8]>::len), Some(28));
        assert_eq!(e.rest(), 0);
        e.set_type_code(icmp_type::PARAMETER_PROBLEM, 0);
        e.set_rest(20 << 24);
        assert_eq!(e.rest() >> 24, 20);
        for t in [3, 4, 5, 11, 12] {
            assert!(icmp_type::is_error(t), "{t}");
        }
        for t in [0, 8, 13, 14, 9, 10] {
            assert!(!icmp_type::is_error(t), "{t}");
        }
    }
}
