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
pub mod ipfilter;
pub mod ipfragmenter;
pub mod ipgwoptions;
pub mod ipmirror;
pub mod ipprint;
pub mod ipreassembler;
pub mod lineariplookup;
pub mod markipheader;
pub mod radixiplookup;
pub mod route_table;
pub mod setipaddress;
pub mod setipchecksum;
pub mod staticiplookup;
pub mod storeipaddress;
pub mod stripipheader;
pub mod unstripipheader;
