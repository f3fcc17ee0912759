//! Click's `ip6` elements and FastClick's segment-routing ones: IPv6
//! header checks and marking, addresses and annotations, hop limit,
//! encapsulation, fragmentation, ICMPv6 errors, route lookup, IPv4/IPv6
//! translation and SRv6. Packets are read through `pronto_packet::wire::ipv6`.

pub mod addresstranslator;
pub mod ip6srdecap;
pub mod ip6srencap;
pub mod ip6srprocess;
pub mod protocoltranslator46;
pub mod protocoltranslator64;
