//! Name tables used by the IP expression language.
//!
//! These mirror the static name databases of the reference element family
//! (IP protocol names, TCP/UDP port names, TCP flag names, ICMP type names),
//! plus a handful of common `/etc/services` / `/etc/protocols` entries that a
//! user-level reference build would resolve from the system databases.

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

const IP_PROTOS: &[(&str, u32)] = &[
    ("ah", 51),
    ("dccp", 33),
    ("esp", 50),
    ("gre", 47),
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("ospf", 89),
    ("payload", PROTO_PAYLOAD as u32),
    ("sctp", 132),
    ("tcp", 6),
    ("tcpudp", PROTO_TCP_OR_UDP as u32),
    ("transp", PROTO_TRANSP as u32),
    ("udp", 17),
];

const ICMP_TYPES: &[(&str, u32)] = &[
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
    ("time-exceeded", 11),
    ("timeexceeded", 11),
    ("timestamp", 13),
    ("timestamp-reply", 14),
    ("unreachable", 3),
];

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

pub(crate) fn ip_proto(word: &str) -> Option<u32> {
    find(IP_PROTOS, word)
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
    find(ICMP_TYPES, word)
}

/// Human-readable name of a (pseudo) transport protocol number.
pub(crate) fn unparse_proto(p: i32) -> String {
    match p {
        1 => "icmp".into(),
        2 => "igmp".into(),
        4 => "ipip".into(),
        6 => "tcp".into(),
        17 => "udp".into(),
        PROTO_TCP_OR_UDP => "tcpudp".into(),
        PROTO_TRANSP => "transp".into(),
        PROTO_PAYLOAD => "payload".into(),
        p if p < 0 => String::new(),
        p => format!("ip proto {p}"),
    }
}
