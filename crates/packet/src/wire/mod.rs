//! Wire formats: Internet checksums and checked zero-copy header views,
//! one module per protocol: `ethernet` (Ethernet II, VLAN tags), `arp`,
//! `ipv4`, `ipv6` (with its extension-header chain, ICMPv6 and Neighbor
//! Discovery), `tcp`, `udp`, `icmp`, `pppoe` (PPPoE and PPP control
//! packets), `srv6` (the Segment Routing Header),
//! `xlat` (IPv4/IPv6 translation and RFC 6052 addresses), and `flow`, the
//! one five-tuple parser every flow table reads packets through.
//!
//! Views follow smoltcp's wire module: a view wraps a byte slice (`T:
//! AsRef<[u8]>`, writable with `AsMut<[u8]>`); `new_checked` checks once
//! that the fixed fields are inside it, and the accessors then read at
//! fixed offsets and cannot fail. pronto's elements read and write packet
//! headers through these views rather than at raw offsets. The byte-slice
//! helpers here (`be16`, `addr4`, the checksums) are on the hot path;
//! callers check lengths first.

pub mod arp;
pub mod ethernet;
pub mod flow;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod pppoe;
pub mod srv6;
pub mod tcp;
pub mod udp;
pub mod xlat;

/// Why a view or a walk refused a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The buffer ends before a header does.
    Truncated,
    /// The version field is not the one the view is for.
    BadVersion,
    /// A length field disagrees with the buffer or with itself.
    BadLength,
    /// An extension-header chain longer than the walk allows.
    TooManyHeaders,
    /// A field has a value the format forbids.
    Malformed,
}

impl WireError {
    /// A short name, as counters and handlers show it.
    pub fn as_str(self) -> &'static str {
        match self {
            WireError::Truncated => "truncated",
            WireError::BadVersion => "bad-version",
            WireError::BadLength => "bad-length",
            WireError::TooManyHeaders => "too-many-headers",
            WireError::Malformed => "malformed",
        }
    }
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::error::Error for WireError {}

/// Ethernet header length.
pub const ETHER_LEN: usize = 14;
/// EtherType of IPv4.
pub const ETHERTYPE_IP: u16 = 0x0800;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// IP protocol numbers.
pub const IP_PROTO_ICMP: u8 = 1;
/// TCP.
pub const IP_PROTO_TCP: u8 = 6;
/// UDP.
pub const IP_PROTO_UDP: u8 = 17;

/// One's-complement sum of `data` (not folded, not inverted), starting
/// from `acc`.
#[inline]
pub fn ones_sum(data: &[u8], mut acc: u64) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let (s, carry) = acc.overflowing_add(w);
        acc = s + carry as u64;
    }
    let rest = chunks.remainder();
    let mut i = 0;
    while i + 1 < rest.len() {
        acc += u16::from_be_bytes([rest[i], rest[i + 1]]) as u64;
        i += 2;
    }
    if i < rest.len() {
        acc += (rest[i] as u64) << 8;
    }
    acc
}

/// Folds a one's-complement sum to 16 bits (a fixed number of steps: no
/// loop, no data-dependent branch).
#[inline]
pub fn fold(acc: u64) -> u16 {
    let a = (acc & 0xffff_ffff) + (acc >> 32); // < 2^33
    let a = (a & 0xffff) + (a >> 16); // < 2^18
    let a = (a & 0xffff) + (a >> 16); // <= 0x10002
    let a = (a & 0xffff) + (a >> 16); // <= 0xffff
    a as u16
}

/// The Internet checksum of `data` (RFC 1071), ready to store.
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !fold(ones_sum(data, 0))
}

/// True if an IPv4 header (`hdr`, exactly the header's length) has a valid
/// checksum. The 20-byte header without options, by far the most common,
/// is summed as five 32-bit words.
#[inline]
pub fn ipv4_header_checksum_ok(hdr: &[u8]) -> bool {
    if let Ok(h) = <&[u8; 20]>::try_from(hdr) {
        let w = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]) as u64;
        let acc = w(0) + w(4) + w(8) + w(12) + w(16);
        return fold(acc) == 0xffff;
    }
    checksum(hdr) == 0
}

/// One's-complement sum of the TCP/UDP pseudo-header.
#[inline]
pub fn pseudo_header_sum(src: &[u8], dst: &[u8], proto: u8, len: usize) -> u64 {
    let mut acc = ones_sum(src, 0);
    acc = ones_sum(dst, acc);
    acc + proto as u64 + len as u64
}

/// Incrementally updates checksum `old_sum` when a 16-bit word changes from
/// `old` to `new` (RFC 1624, eqn. 3).
#[inline]
pub fn update_checksum16(old_sum: u16, old: u16, new: u16) -> u16 {
    let acc = (!old_sum) as u64 + (!old) as u64 + new as u64;
    !fold(acc)
}

/// Incrementally updates checksum `old_sum` for a changed 32-bit value.
#[inline]
pub fn update_checksum32(old_sum: u16, old: [u8; 4], new: [u8; 4]) -> u16 {
    let s = update_checksum16(
        old_sum,
        u16::from_be_bytes([old[0], old[1]]),
        u16::from_be_bytes([new[0], new[1]]),
    );
    update_checksum16(
        s,
        u16::from_be_bytes([old[2], old[3]]),
        u16::from_be_bytes([new[2], new[3]]),
    )
}

/// Reads a big-endian u16 at `off`.
#[inline]
pub fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

/// Writes a big-endian u16 at `off`.
#[inline]
pub fn set_be16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// Reads 4 bytes at `off`.
#[inline]
pub fn addr4(b: &[u8], off: usize) -> [u8; 4] {
    [b[off], b[off + 1], b[off + 2], b[off + 3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_handles_every_carry() {
        for acc in [
            0u64,
            0xffff,
            0x1_0000,
            0x1_fffe,
            0xffff_ffff,
            u64::MAX,
            0x0001_0000_ffff_0001,
        ] {
            let mut slow = acc;
            while slow >> 16 != 0 {
                slow = (slow & 0xffff) + (slow >> 16);
            }
            assert_eq!(fold(acc) as u64, slow, "acc {acc:#x}");
        }
    }

    #[test]
    fn rfc1071_example() {
        // Example from RFC 1071 section 3: 00 01 f2 03 f4 f5 f6 f7 sums to ddf2.
        let d = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(ones_sum(&d, 0)), 0xddf2);
        assert_eq!(checksum(&d), !0xddf2);
    }

    #[test]
    fn ip_header_checksum_verifies() {
        // version/IHL 45, TOS 00, total length 0x0073, id 0, flags DF,
        // TTL 64, proto UDP, checksum b861, 192.168.0.1 -> 192.168.0.199
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0);
        let mut z = h;
        z[10] = 0;
        z[11] = 0;
        assert_eq!(checksum(&z), 0xb861);
    }

    #[test]
    fn header_checksum_fast_path_agrees() {
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert!(ipv4_header_checksum_ok(&h));
        h[11] ^= 1;
        assert!(!ipv4_header_checksum_ok(&h));
        // An all-zero checksum field over an all-ones sum still verifies as
        // the full computation does.
        let mut opts = [0u8; 24];
        opts[..20].copy_from_slice(&[
            0x46, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ]);
        let c = checksum(&opts);
        opts[10..12].copy_from_slice(&c.to_be_bytes());
        assert!(ipv4_header_checksum_ok(&opts));
    }

    #[test]
    fn incremental_matches_full() {
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        let old = addr4(&h, 12);
        let new = [10, 0, 0, 1];
        let s = update_checksum32(be16(&h, 10), old, new);
        h[12..16].copy_from_slice(&new);
        set_be16(&mut h, 10, s);
        assert_eq!(checksum(&h), 0);
    }
}
