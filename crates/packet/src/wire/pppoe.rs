//! PPPoE (RFC 2516) and the PPP control packets carried in its sessions
//! (RFC 1661 LCP and the NCPs, RFC 1334 PAP, RFC 1994 CHAP).
//!
//! [`PppoeFrame::new_checked`] checks the Ethernet and PPPoE headers and
//! that the PPPoE length fits the buffer (Ethernet padding after it is
//! allowed and ignored); [`PppoeFrame::payload`] is then exactly the
//! PPPoE payload. [`Tags`] walks discovery tags and stops at the first one
//! whose length runs past the payload (reported by [`Tags::truncated`]).
//! [`PppControl::new_checked`] checks a control packet's length field
//! against the bytes there; [`Options`] walks its options the same way.
//! After a `new_checked` succeeds no accessor panics.

use super::{be16, ethernet::mac, WireError};

/// EtherType of PPPoE discovery.
pub const ETHERTYPE_DISCOVERY: u16 = 0x8863;
/// EtherType of PPPoE session frames.
pub const ETHERTYPE_SESSION: u16 = 0x8864;
/// Ethernet header + PPPoE header.
pub const HEADER_LEN: usize = 14 + 6;
/// Ethernet + PPPoE + PPP protocol field: what session encapsulation adds
/// in front of an IP packet.
pub const SESSION_OVERHEAD: usize = HEADER_LEN + 2;

/// PPPoE codes.
pub mod code {
    /// Session data.
    pub const SESSION: u8 = 0x00;
    /// PPPoE Active Discovery Offer.
    pub const PADO: u8 = 0x07;
    /// PPPoE Active Discovery Initiation.
    pub const PADI: u8 = 0x09;
    /// PPPoE Active Discovery Request.
    pub const PADR: u8 = 0x19;
    /// PPPoE Active Discovery Session-confirmation.
    pub const PADS: u8 = 0x65;
    /// PPPoE Active Discovery Terminate.
    pub const PADT: u8 = 0xa7;
}

/// Discovery tag types.
pub mod tag {
    /// End-Of-List.
    pub const END_OF_LIST: u16 = 0x0000;
    /// Service-Name.
    pub const SERVICE_NAME: u16 = 0x0101;
    /// AC-Name.
    pub const AC_NAME: u16 = 0x0102;
    /// Host-Uniq.
    pub const HOST_UNIQ: u16 = 0x0103;
    /// AC-Cookie.
    pub const AC_COOKIE: u16 = 0x0104;
    /// Relay-Session-Id.
    pub const RELAY_SESSION_ID: u16 = 0x0110;
    /// Service-Name-Error.
    pub const SERVICE_NAME_ERROR: u16 = 0x0201;
    /// AC-System-Error.
    pub const AC_SYSTEM_ERROR: u16 = 0x0202;
    /// Generic-Error.
    pub const GENERIC_ERROR: u16 = 0x0203;
}

/// PPP protocol numbers.
pub mod proto {
    /// IPv4.
    pub const IPV4: u16 = 0x0021;
    /// IPv6.
    pub const IPV6: u16 = 0x0057;
    /// IP Control Protocol.
    pub const IPCP: u16 = 0x8021;
    /// IPv6 Control Protocol.
    pub const IPV6CP: u16 = 0x8057;
    /// Link Control Protocol.
    pub const LCP: u16 = 0xc021;
    /// Password Authentication Protocol.
    pub const PAP: u16 = 0xc023;
    /// Challenge Handshake Authentication Protocol.
    pub const CHAP: u16 = 0xc223;
}

/// A view of an Ethernet frame carrying PPPoE.
#[derive(Debug, Clone, Copy)]
pub struct PppoeFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> PppoeFrame<T> {
    /// Wraps `buffer` after checking the Ethernet type (0x8863 or 0x8864),
    /// PPPoE version and type 1, and that the payload length fits.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::Truncated);
        }
        let et = be16(b, 12);
        if et != ETHERTYPE_DISCOVERY && et != ETHERTYPE_SESSION {
            return Err(WireError::Malformed);
        }
        if b[14] != 0x11 {
            return Err(WireError::BadVersion);
        }
        if HEADER_LEN + be16(b, 18) as usize > b.len() {
            return Err(WireError::BadLength);
        }
        Ok(PppoeFrame { buffer })
    }

    /// Destination MAC.
    pub fn dst(&self) -> [u8; 6] {
        mac(self.buffer.as_ref(), 0)
    }

    /// Source MAC.
    pub fn src(&self) -> [u8; 6] {
        mac(self.buffer.as_ref(), 6)
    }

    /// True for a discovery frame (0x8863), false for a session frame.
    pub fn is_discovery(&self) -> bool {
        be16(self.buffer.as_ref(), 12) == ETHERTYPE_DISCOVERY
    }

    /// The PPPoE code ([`code`]).
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[15]
    }

    /// The session id.
    pub fn session_id(&self) -> u16 {
        be16(self.buffer.as_ref(), 16)
    }

    /// The payload length field.
    pub fn payload_len(&self) -> usize {
        be16(self.buffer.as_ref(), 18) as usize
    }

    /// The payload: exactly `payload_len` bytes (padding excluded).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..HEADER_LEN + self.payload_len()]
    }
}

/// Discovery tags of a payload, in order.
#[derive(Debug, Clone)]
pub struct Tags<'a> {
    rest: &'a [u8],
    truncated: bool,
}

impl<'a> Tags<'a> {
    /// Walks the tags of `payload`.
    pub fn new(payload: &'a [u8]) -> Tags<'a> {
        Tags {
            rest: payload,
            truncated: false,
        }
    }

    /// True once the walk met a tag that ran past the payload.
    pub fn truncated(&self) -> bool {
        self.truncated
    }
}

impl<'a> Iterator for Tags<'a> {
    type Item = (u16, &'a [u8]);

    fn next(&mut self) -> Option<(u16, &'a [u8])> {
        if self.rest.is_empty() {
            return None;
        }
        if self.rest.len() < 4 {
            self.truncated = true;
            self.rest = &[];
            return None;
        }
        let t = be16(self.rest, 0);
        let n = be16(self.rest, 2) as usize;
        if 4 + n > self.rest.len() {
            self.truncated = true;
            self.rest = &[];
            return None;
        }
        let v = &self.rest[4..4 + n];
        self.rest = &self.rest[4 + n..];
        if t == tag::END_OF_LIST {
            self.rest = &[];
            return None;
        }
        Some((t, v))
    }
}

/// A view of a PPP control packet (LCP, IPCP, IPv6CP, PAP, CHAP): code,
/// identifier, length, data.
#[derive(Debug, Clone, Copy)]
pub struct PppControl<'a> {
    buffer: &'a [u8],
}

impl<'a> PppControl<'a> {
    /// Wraps `buffer` (what follows the PPP protocol field) after checking
    /// that the length field is at least 4 and within it.
    pub fn new_checked(buffer: &'a [u8]) -> Result<Self, WireError> {
        if buffer.len() < 4 {
            return Err(WireError::Truncated);
        }
        let n = be16(buffer, 2) as usize;
        if n < 4 || n > buffer.len() {
            return Err(WireError::BadLength);
        }
        Ok(PppControl {
            buffer: &buffer[..n],
        })
    }

    /// The code.
    pub fn code(&self) -> u8 {
        self.buffer[0]
    }

    /// The identifier.
    pub fn identifier(&self) -> u8 {
        self.buffer[1]
    }

    /// The data after the 4-byte header, as long as the length field says.
    pub fn data(&self) -> &'a [u8] {
        &self.buffer[4..]
    }
}

/// Configuration options (type, value) of a Configure-* packet's data.
#[derive(Debug, Clone)]
pub struct Options<'a> {
    rest: &'a [u8],
    /// Set when an option's length was under 2 or ran past the data.
    pub malformed: bool,
}

impl<'a> Options<'a> {
    /// Walks the options in `data`.
    pub fn new(data: &'a [u8]) -> Options<'a> {
        Options {
            rest: data,
            malformed: false,
        }
    }
}

impl<'a> Iterator for Options<'a> {
    /// (type, the whole option including its header, its value).
    type Item = (u8, &'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        if self.rest.len() < 2 {
            self.malformed = true;
            self.rest = &[];
            return None;
        }
        let n = self.rest[1] as usize;
        if n < 2 || n > self.rest.len() {
            self.malformed = true;
            self.rest = &[];
            return None;
        }
        let whole = &self.rest[..n];
        self.rest = &self.rest[n..];
        Some((whole[0], whole, &whole[2..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PADI with Service-Name "" and Host-Uniq 0xdeadbeef, padded to 60 bytes.
    const PADI: [u8; 60] = {
        let mut f = [0u8; 60];
        let head = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // dst: broadcast
            0x02, 0, 0, 0, 0, 0x01, // src
            0x88, 0x63, // discovery
            0x11, 0x09, 0, 0, // ver/type, PADI, session 0
            0, 12, // length
            0x01, 0x01, 0, 0, // Service-Name ""
            0x01, 0x03, 0, 4, 0xde, 0xad, 0xbe, 0xef, // Host-Uniq
        ];
        let mut i = 0;
        while i < head.len() {
            f[i] = head[i];
            i += 1;
        }
        f
    };

    #[test]
    fn a_padded_padi_reads_its_tags_and_ignores_the_padding() {
        let f = PppoeFrame::new_checked(&PADI[..]).expect("valid");
        assert!(f.is_discovery());
        assert_eq!(f.code(), code::PADI);
        assert_eq!(f.session_id(), 0);
        assert_eq!(f.src(), [2, 0, 0, 0, 0, 1]);
        assert_eq!(f.payload().len(), 12);
        let tags: Vec<_> = Tags::new(f.payload()).collect();
        assert_eq!(
            tags,
            vec![
                (tag::SERVICE_NAME, &[][..]),
                (tag::HOST_UNIQ, &[0xde, 0xad, 0xbe, 0xef][..])
            ]
        );
    }

    #[test]
    fn lengths_past_the_buffer_are_refused() {
        let mut f = PADI;
        f[18] = 0;
        f[19] = 47; // 20 + 47 > 60
        assert_eq!(
            PppoeFrame::new_checked(&f[..]).err(),
            Some(WireError::BadLength)
        );
        f[14] = 0x12;
        assert_eq!(
            PppoeFrame::new_checked(&f[..]).err(),
            Some(WireError::BadVersion)
        );
        assert_eq!(
            PppoeFrame::new_checked(&PADI[..19]).err(),
            Some(WireError::Truncated)
        );
        // A tag whose length runs past the payload ends the walk.
        let mut t = Tags::new(&[0x01, 0x01, 0, 9, b'x']);
        assert_eq!(t.next(), None);
        assert!(t.truncated());
    }

    #[test]
    fn control_packets_and_options_check_their_lengths() {
        // LCP Configure-Request id 1: MRU 1492, Magic 0x01020304.
        let lcp = [1, 1, 0, 14, 1, 4, 0x05, 0xd4, 5, 6, 1, 2, 3, 4, 0xee];
        let c = PppControl::new_checked(&lcp).expect("valid");
        assert_eq!((c.code(), c.identifier(), c.data().len()), (1, 1, 10));
        let o: Vec<_> = Options::new(c.data()).map(|(t, _, v)| (t, v)).collect();
        assert_eq!(o, vec![(1, &[5, 0xd4][..]), (5, &[1, 2, 3, 4][..])]);
        assert_eq!(
            PppControl::new_checked(&[1, 1, 0, 3]).err(),
            Some(WireError::BadLength)
        );
        let mut bad = Options::new(&[1, 1, 0]);
        assert_eq!(bad.next(), None);
        assert!(bad.malformed);
    }
}
