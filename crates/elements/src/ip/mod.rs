//! Click's `ip` elements: IP header checks and marking, IP classification,
//! address annotations, TTL and checksum handling, encapsulation, ping
//! replies, and route lookup (`route_table` holds the shared route code).
pub mod addressinfo;
pub mod checkipheader;
pub mod checkipheader2;
pub mod decipttl;
pub mod directiplookup;
pub mod dropbroadcasts;
pub mod fixipsrc;
pub mod getipaddress;
pub mod icmppingresponder;
pub mod ipclassifier;
pub mod ipencap;
pub mod ipfieldinfo;
pub mod ipfilter;
pub mod ipfragmenter;
pub mod ipgwoptions;
pub mod ipinputcombo;
pub mod ipmirror;
pub mod ipnameinfo;
pub mod ipoutputcombo;
pub mod ipprint;
pub mod ipratemon;
pub mod ipreassembler;
pub mod lineariplookup;
pub mod linuxiplookup;
pub mod lookupiproutemp;
pub mod markipce;
pub mod markipheader;
pub mod radixiplookup;
pub mod rangeiplookup;
pub mod rfc2507comp;
pub mod rfc2507decomp;
pub mod ripsend;
pub mod route_table;
pub mod setipaddress;
pub mod setipchecksum;
pub mod setipdscp;
pub mod setipecn;
pub mod setrandipaddress;
pub mod sortediplookup;
pub mod staticiplookup;
pub mod storeipaddress;
pub mod stripipheader;
pub mod truncateippayload;
pub mod unstripipheader;

use pronto_packet::Packet;

/// The offset of the packet's marked IP header, when at least `need`
/// bytes of it lie inside the packet.
#[inline]
pub fn ip_header_at(p: &Packet, need: usize) -> Option<usize> {
    match p.network_header_offset() {
        Some(o) if o >= 0 && (o as usize).saturating_add(need) <= p.len() => Some(o as usize),
        _ => None,
    }
}

/// Replaces the TOS byte of the marked IP header with `f(tos)`, updating
/// the header checksum incrementally; false when the packet has no
/// marked IP header of at least 12 bytes.
#[inline]
pub fn rewrite_tos(p: &mut Packet, f: impl FnOnce(u8) -> u8) -> bool {
    let Some(nh) = ip_header_at(p, 12) else {
        return false;
    };
    let d = p.data_mut();
    let old = u16::from_be_bytes([d[nh], d[nh + 1]]);
    d[nh + 1] = f(d[nh + 1]);
    let new = u16::from_be_bytes([d[nh], d[nh + 1]]);
    let sum = u16::from_be_bytes([d[nh + 10], d[nh + 11]]);
    let sum = pronto_packet::wire::update_checksum16(sum, old, new);
    d[nh + 10..nh + 12].copy_from_slice(&sum.to_be_bytes());
    true
}
