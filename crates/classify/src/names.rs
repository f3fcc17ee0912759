//! Name tables used by the IP expression language.
//!
//! These mirror the static name databases of the reference element family
//! (IP protocol names, TCP/UDP port names, TCP flag names, ICMP type names),
//! plus a handful of common `/etc/services` / `/etc/protocols` entries that a
//! user-level reference build would resolve from the system databases.
//! The public lookups serve elements that name protocols, ICMP types and
//! codes, and ports.

/// Pseudo protocol: TCP or UDP.
pub(crate) const PROTO_TCP_OR_UDP: i32 = 256;
/// Pseudo protocol: any transport protocol (transport header fields).
pub(crate) const PROTO_TRANSP: i32 = 258;
/// Pseudo protocol: payload (treated like `transp`).
pub(crate) const PROTO_PAYLOAD: i32 = 259;

pub(crate) const PROTO_ICMP: i32 = 1;
pub(crate) const PROTO_TCP: i32 = 6;
pub(crate) const PROTO_UDP: i32 = 17;
pub(crate) const PROTO_DCCP: i32 = 33;

/// Names of real IP protocols.
const IP_PROTO_NAMES: &[(&str, u8)] = &[
    ("ah", 51),
    ("dccp", 33),
    ("esp", 50),
    ("gre", 47),
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("ospf", 89),
    ("sctp", 132),
    ("tcp", 6),
    ("udp", 17),
];

/// The ICMPv6 protocol number.
pub(crate) const PROTO_ICMP6: i32 = 58;

/// Protocol names the expression language adds for IPv6 (not IPv4
/// protocol names Click's other elements know).
const IP6_PROTO_NAMES: &[(&str, u32)] = &[("icmp6", PROTO_ICMP6 as u32)];

/// ICMPv6 type names (RFC 4443, RFC 4861), as the expression language
/// accepts them after `icmp6 type`.
const ICMP6_TYPE_NAMES: &[(&str, u32)] = &[
    ("echo-reply", 129),
    ("echo-request", 128),
    ("neighbor-advert", 136),
    ("neighbor-solicit", 135),
    ("packet-too-big", 2),
    ("parameter-problem", 4),
    ("redirect", 137),
    ("router-advert", 134),
    ("router-solicit", 133),
    ("time-exceeded", 3),
    ("unreachable", 1),
];

/// Pseudo protocol names of the expression language.
const PSEUDO_PROTOS: &[(&str, u32)] = &[
    ("payload", PROTO_PAYLOAD as u32),
    ("tcpudp", PROTO_TCP_OR_UDP as u32),
    ("transp", PROTO_TRANSP as u32),
];

/// ICMP type names, as Click spells them.
const ICMP_TYPE_NAMES: &[(&str, u8)] = &[
    ("echo", 8),
    ("echo-reply", 0),
    ("inforeq", 15),
    ("inforeq-reply", 16),
    ("maskreq", 17),
    ("maskreq-reply", 18),
    ("parameterproblem", 12),
    ("redirect", 5),
    ("routeradvert", 9),
    ("routersolicit", 10),
    ("sourcequench", 4),
    ("timeexceeded", 11),
    ("timestamp", 13),
    ("timestamp-reply", 14),
    ("unreachable", 3),
];

/// Further ICMP type names the expression language accepts.
const ICMP_TYPE_ALIASES: &[(&str, u32)] = &[("time-exceeded", 11)];

const UNREACH_CODES: &[(&str, u8)] = &[
    ("filterprohibited", 13),
    ("host", 1),
    ("hostprecedence", 14),
    ("hostprohibited", 10),
    ("hostunknown", 7),
    ("isolated", 8),
    ("needfrag", 4),
    ("net", 0),
    ("netprohibited", 9),
    ("netunknown", 6),
    ("port", 3),
    ("precedencecutoff", 15),
    ("protocol", 2),
    ("srcroutefail", 5),
    ("toshost", 12),
    ("tosnet", 11),
];
const REDIRECT_CODES: &[(&str, u8)] = &[("host", 1), ("net", 0), ("toshost", 3), ("tosnet", 2)];
const TIMXCEED_CODES: &[(&str, u8)] = &[("reassembly", 1), ("transit", 0)];
const PARAMPROB_CODES: &[(&str, u8)] = &[("erroratptr", 0), ("length", 2), ("missingopt", 1)];

const PORTS: &[(&str, u32)] = &[
    ("auth", 113),
    ("bgp", 179),
    ("bootpc", 68),
    ("bootps", 67),
    ("chargen", 19),
    ("daytime", 13),
    ("discard", 9),
    ("dns", 53),
    ("domain", 53),
    ("echo", 7),
    ("finger", 79),
    ("ftp", 21),
    ("ftp-data", 20),
    ("http", 80),
    ("https", 443),
    ("imap", 143),
    ("imap3", 220),
    ("imaps", 993),
    ("irc", 194),
    ("netbios-dgm", 138),
    ("netbios-ns", 137),
    ("netbios-ssn", 139),
    ("nntp", 119),
    ("ntp", 123),
    ("pop3", 110),
    ("pop3s", 995),
    ("pptp", 1723),
    ("rip", 520),
    ("route", 520),
    ("smtp", 25),
    ("snmp", 161),
    ("snmp-trap", 162),
    ("ssh", 22),
    ("sunrpc", 111),
    ("telnet", 23),
    ("tftp", 69),
    ("www", 80),
];

const TCP_OPTS: &[(&str, u32)] = &[
    ("ack", 0x10),
    ("fin", 0x01),
    ("psh", 0x08),
    ("rst", 0x04),
    ("syn", 0x02),
    ("urg", 0x20),
];

fn find(table: &[(&str, u32)], word: &str) -> Option<u32> {
    table.iter().find(|(n, _)| *n == word).map(|&(_, v)| v)
}

fn find_u8(table: &[(&str, u8)], word: &str) -> Option<u8> {
    table.iter().find(|(n, _)| *n == word).map(|&(_, v)| v)
}

fn name_u8(table: &[(&'static str, u8)], v: u8) -> Option<&'static str> {
    table.iter().find(|&&(_, x)| x == v).map(|&(n, _)| n)
}

/// The number of the IP protocol called `name` (`tcp`, `gre`, ...).
pub fn ip_proto_by_name(name: &str) -> Option<u8> {
    find_u8(IP_PROTO_NAMES, name)
}

/// The name of IP protocol `p`, if it has one.
pub fn ip_proto_name(p: u8) -> Option<&'static str> {
    name_u8(IP_PROTO_NAMES, p)
}

/// The ICMP type called `name` (`echo`, `unreachable`, ...).
pub fn icmp_type_by_name(name: &str) -> Option<u8> {
    find_u8(ICMP_TYPE_NAMES, name)
}

/// The name of ICMP type `t`, if it has one.
pub fn icmp_type_name(t: u8) -> Option<&'static str> {
    name_u8(ICMP_TYPE_NAMES, t)
}

/// The code names of ICMP type `t` (empty for types without named codes).
fn icmp_codes(t: u8) -> &'static [(&'static str, u8)] {
    match t {
        3 => UNREACH_CODES,
        5 => REDIRECT_CODES,
        11 => TIMXCEED_CODES,
        12 => PARAMPROB_CODES,
        _ => &[],
    }
}

/// The code of ICMP type `t` called `name` (`port` for `unreachable`, ...).
pub fn icmp_code_by_name(t: u8, name: &str) -> Option<u8> {
    find_u8(icmp_codes(t), name)
}

/// The name of code `c` of ICMP type `t`, if it has one.
pub fn icmp_code_name(t: u8, c: u8) -> Option<&'static str> {
    name_u8(icmp_codes(t), c)
}

/// The TCP/UDP port called `name` (`http`, `ssh`, ...).
pub fn port_by_name(name: &str) -> Option<u16> {
    find(PORTS, name).and_then(|v| u16::try_from(v).ok())
}

pub(crate) fn ip_proto(word: &str) -> Option<u32> {
    find(PSEUDO_PROTOS, word)
        .or_else(|| ip_proto_by_name(word).map(u32::from))
        .or_else(|| find(IP6_PROTO_NAMES, word))
}
pub(crate) fn icmp6_type(word: &str) -> Option<u32> {
    find(ICMP6_TYPE_NAMES, word)
}
pub(crate) fn tcp_port(word: &str) -> Option<u32> {
    find(PORTS, word)
}
pub(crate) fn udp_port(word: &str) -> Option<u32> {
    find(PORTS, word)
}
pub(crate) fn tcp_opt(word: &str) -> Option<u32> {
    find(TCP_OPTS, word)
}
pub(crate) fn icmp_type(word: &str) -> Option<u32> {
    icmp_type_by_name(word)
        .map(u32::from)
        .or_else(|| find(ICMP_TYPE_ALIASES, word))
}

/// Human-readable name of a (pseudo) transport protocol number.
pub(crate) fn unparse_proto(p: i32) -> String {
    match p {
        1 => "icmp".into(),
        2 => "igmp".into(),
        4 => "ipip".into(),
        6 => "tcp".into(),
        17 => "udp".into(),
        58 => "icmp6".into(),
        PROTO_TCP_OR_UDP => "tcpudp".into(),
        PROTO_TRANSP => "transp".into(),
        PROTO_PAYLOAD => "payload".into(),
        p if p < 0 => String::new(),
        p => format!("ip proto {p}"),
    }
}
