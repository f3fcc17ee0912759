//! Click's `ip6` elements and FastClick's segment-routing ones: IPv6
//! header checks and marking, addresses and annotations, hop limit,
//! encapsulation, fragmentation, ICMPv6 errors, route lookup, IPv4/IPv6
//! translation, network prefix translation (NPTv6) and SRv6. Packets are read through `pronto_packet::wire::ipv6`.

pub mod addresstranslator;
pub mod checkip6header;
pub mod decip6hlim;
pub mod getip6address;
pub mod icmp6error;
pub mod ip6drop;
pub mod ip6encap;
pub mod ip6fragmenter;
pub mod ip6mirror;
pub mod ip6print;
pub mod ip6srdecap;
pub mod ip6srencap;
pub mod ip6srprocess;
pub mod lookupip6route;
pub mod markip6header;
pub mod nptv6;
pub mod protocoltranslator46;
pub mod protocoltranslator64;
pub mod route6_table;
pub mod setip6address;
pub mod setip6dscp;
