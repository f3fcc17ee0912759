//! ARP (RFC 826) for Ethernet and IPv4: the 28-byte packet after the
//! Ethernet header.
//!
//! `ArpPacket::new_checked` checks only that the 28 bytes are there; the
//! hardware and protocol types and lengths are fields like the others
//! (elements differ in which they insist on), with
//! [`ArpPacket::is_ethernet_ipv4`] checking all four at once.

use super::{addr4, be16, ethernet::mac, set_be16, WireError, ETHERTYPE_IP};

/// Length of an Ethernet/IPv4 ARP packet.
pub const ARP_LEN: usize = 28;
/// Hardware type of Ethernet.
pub const HTYPE_ETHERNET: u16 = 1;

/// ARP operations.
pub mod op {
    /// Request.
    pub const REQUEST: u16 = 1;
    /// Reply.
    pub const REPLY: u16 = 2;
}

/// A view of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Wraps `buffer` without checks (accessors panic under 28 bytes).
    #[inline]
    pub fn new_unchecked(buffer: T) -> Self {
        ArpPacket { buffer }
    }

    /// Wraps `buffer` after checking that it holds 28 bytes.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < ARP_LEN {
            return Err(WireError::Truncated);
        }
        Ok(ArpPacket { buffer })
    }

    /// The hardware type.
    #[inline]
    pub fn hardware_type(&self) -> u16 {
        be16(self.buffer.as_ref(), 0)
    }

    /// The protocol type.
    #[inline]
    pub fn protocol_type(&self) -> u16 {
        be16(self.buffer.as_ref(), 2)
    }

    /// The hardware address length.
    #[inline]
    pub fn hardware_len(&self) -> u8 {
        self.buffer.as_ref()[4]
    }

    /// The protocol address length.
    #[inline]
    pub fn protocol_len(&self) -> u8 {
        self.buffer.as_ref()[5]
    }

    /// True if hardware type, protocol type and both lengths are those of
    /// Ethernet and IPv4 (1, 0x0800, 6, 4).
    #[inline]
    pub fn is_ethernet_ipv4(&self) -> bool {
        self.buffer.as_ref()[..6] == [0, 1, 0x08, 0x00, 6, 4]
    }

    /// The operation ([`op`]).
    #[inline]
    pub fn operation(&self) -> u16 {
        be16(self.buffer.as_ref(), 6)
    }

    /// The sender hardware address.
    #[inline]
    pub fn sender_hw_addr(&self) -> [u8; 6] {
        mac(self.buffer.as_ref(), 8)
    }

    /// The sender protocol address.
    #[inline]
    pub fn sender_ip(&self) -> [u8; 4] {
        addr4(self.buffer.as_ref(), 14)
    }

    /// The target hardware address.
    #[inline]
    pub fn target_hw_addr(&self) -> [u8; 6] {
        mac(self.buffer.as_ref(), 18)
    }

    /// The target protocol address.
    #[inline]
    pub fn target_ip(&self) -> [u8; 4] {
        addr4(self.buffer.as_ref(), 24)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    /// Sets hardware and protocol types and lengths to Ethernet/IPv4.
    #[inline]
    pub fn set_ethernet_ipv4(&mut self) {
        let b = self.buffer.as_mut();
        set_be16(b, 0, HTYPE_ETHERNET);
        set_be16(b, 2, ETHERTYPE_IP);
        b[4] = 6;
        b[5] = 4;
    }

    /// Sets the operation.
    #[inline]
    pub fn set_operation(&mut self, o: u16) {
        set_be16(self.buffer.as_mut(), 6, o);
    }

    /// Sets the sender hardware address.
    #[inline]
    pub fn set_sender_hw_addr(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[8..14].copy_from_slice(&a);
    }

    /// Sets the sender protocol address.
    #[inline]
    pub fn set_sender_ip(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[14..18].copy_from_slice(&a);
    }

    /// Sets the target hardware address.
    #[inline]
    pub fn set_target_hw_addr(&mut self, a: [u8; 6]) {
        self.buffer.as_mut()[18..24].copy_from_slice(&a);
    }

    /// Sets the target protocol address.
    #[inline]
    pub fn set_target_ip(&mut self, a: [u8; 4]) {
        self.buffer.as_mut()[24..28].copy_from_slice(&a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Who has 10.0.0.2? Tell 10.0.0.1 (52:54:00:00:00:01).
    const REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01, // Ethernet, IPv4, 6, 4, request
        0x52, 0x54, 0x00, 0x00, 0x00, 0x01, 10, 0, 0, 1, // sender
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 10, 0, 0, 2, // target
    ];

    #[test]
    fn request_fields_read_back() {
        let a = ArpPacket::new_checked(&REQUEST[..]).expect("accepted");
        assert!(a.is_ethernet_ipv4());
        assert_eq!(a.hardware_type(), 1);
        assert_eq!(a.protocol_type(), 0x0800);
        assert_eq!((a.hardware_len(), a.protocol_len()), (6, 4));
        assert_eq!(a.operation(), op::REQUEST);
        assert_eq!(a.sender_hw_addr(), [0x52, 0x54, 0, 0, 0, 1]);
        assert_eq!(a.sender_ip(), [10, 0, 0, 1]);
        assert_eq!(a.target_hw_addr(), [0; 6]);
        assert_eq!(a.target_ip(), [10, 0, 0, 2]);
        assert_eq!(
            ArpPacket::new_checked(&REQUEST[..27]).expect_err("short"),
            WireError::Truncated
        );
        let mut odd = REQUEST;
        odd[4] = 8; // an 8-byte hardware address
        assert!(!ArpPacket::new_checked(&odd[..])
            .expect("28 bytes")
            .is_ethernet_ipv4());
    }

    #[test]
    fn reply_is_built_field_by_field() {
        let mut b = [0u8; 28];
        let mut a = ArpPacket::new_checked(&mut b[..]).expect("accepted");
        a.set_ethernet_ipv4();
        a.set_operation(op::REPLY);
        a.set_sender_hw_addr([2, 0, 0, 0, 0, 2]);
        a.set_sender_ip([10, 0, 0, 2]);
        a.set_target_hw_addr([0x52, 0x54, 0, 0, 0, 1]);
        a.set_target_ip([10, 0, 0, 1]);
        assert_eq!(
            b,
            [
                0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x02, 2, 0, 0, 0, 0, 2, 10, 0, 0, 2, 0x52,
                0x54, 0, 0, 0, 1, 10, 0, 0, 1
            ]
        );
    }
}
