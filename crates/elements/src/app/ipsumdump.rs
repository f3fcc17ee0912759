//! Pieces of Click's IP summary dump format shared by `ToIPSummaryDump` and
//! `FromIPSummaryDump`: the field table, payload quoting, TCP flag letters.

/// TCP flag letters, bit 0 (FIN) first; bit 8 is NS.
pub const TCP_FLAG_LETTERS: &[u8; 9] = b"FSRPAUECN";

/// The flag bit a letter stands for on input (`W`, `Y` mean CWR and `X`
/// means ECE, as older dumps wrote them).
pub fn tcp_flag_bit(c: u8) -> Option<u32> {
    let k = match c {
        b'F' => 0,
        b'S' => 1,
        b'R' => 2,
        b'P' => 3,
        b'A' => 4,
        b'U' => 5,
        b'E' | b'X' => 6,
        b'C' | b'W' | b'Y' => 7,
        b'N' => 8,
        _ => return None,
    };
    Some(1 << k)
}

/// Parses a `tcp_flags` field: `.`, a number below 4096, or letters.
pub fn parse_tcp_flags(s: &str) -> Option<u32> {
    if s == "." {
        return Some(0);
    }
    let b = s.as_bytes();
    if b.first()?.is_ascii_digit() {
        return pronto_lang::args::parse_u32(s).ok().filter(|&v| v < 0x1000);
    }
    b.iter()
        .try_fold(0u32, |acc, &c| tcp_flag_bit(c).map(|bit| acc | bit))
}

/// The fields of a summary dump. `Null` stands for a field that is read
/// and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Null,
    Timestamp,
    NTimestamp,
    TsSec,
    TsUsec,
    TsUsec1,
    FirstTimestamp,
    FirstNTimestamp,
    Count,
    Link,
    Direction,
    Aggregate,
    WireLen,
    EthSrc,
    EthDst,
    EthType,
    IpSrc,
    IpDst,
    IpTos,
    IpDscp,
    IpEcn,
    IpTtl,
    IpFrag,
    IpFragoff,
    IpId,
    IpSum,
    IpProto,
    IpHl,
    IpLen,
    IpCaptureLen,
    IpOpt,
    Sport,
    Dport,
    TcpSeq,
    TcpAck,
    TcpOff,
    TcpFlags,
    TcpWindow,
    TcpUrp,
    TcpOpt,
    UdpLen,
    IcmpType,
    IcmpCode,
    IcmpTypeName,
    IcmpCodeName,
    IcmpFlowid,
    IcmpSeq,
    IcmpNextmtu,
    PayloadLen,
    Payload,
}

/// Binary width of a field: bytes, or `SPECIAL` (a length byte and that
/// many bytes), or `TEXT_ONLY`.
pub const SPECIAL: i8 = -2;
pub const TEXT_ONLY: i8 = -1;

/// (name, field, binary width, injection order) — Click's field table.
pub const FIELDS: &[(&str, Field, i8, u16)] = &[
    ("timestamp", Field::Timestamp, 8, 100),
    ("ntimestamp", Field::NTimestamp, 8, 100),
    ("ts_sec", Field::TsSec, 4, 100),
    ("ts_usec", Field::TsUsec, 4, 100),
    ("ts_usec1", Field::TsUsec1, 8, 100),
    ("first_timestamp", Field::FirstTimestamp, 8, 100),
    ("first_ntimestamp", Field::FirstNTimestamp, 8, 100),
    ("count", Field::Count, 4, 100),
    ("link", Field::Link, 1, 100),
    ("paint", Field::Link, 1, 100),
    ("direction", Field::Direction, 1, 100),
    ("aggregate", Field::Aggregate, 4, 100),
    ("wire_len", Field::WireLen, 4, 100),
    ("eth_src", Field::EthSrc, 6, 200),
    ("eth_dst", Field::EthDst, 6, 200),
    ("eth_type", Field::EthType, 2, 200),
    ("ip_src", Field::IpSrc, 4, 300),
    ("ip_dst", Field::IpDst, 4, 300),
    ("ip_tos", Field::IpTos, 1, 300),
    ("ip_dscp", Field::IpDscp, 1, 300),
    ("ip_ecn", Field::IpEcn, 1, 300),
    ("ip_ttl", Field::IpTtl, 1, 300),
    ("ip_frag", Field::IpFrag, 1, 298),
    ("ip_fragoff", Field::IpFragoff, 2, 299),
    ("ip_id", Field::IpId, 2, 300),
    ("ip_sum", Field::IpSum, 2, 302),
    ("ip_proto", Field::IpProto, 1, 300),
    ("ip_hl", Field::IpHl, 1, 299),
    ("ip_len", Field::IpLen, 4, 301),
    ("ip_capture_len", Field::IpCaptureLen, 4, 502),
    ("ip_opt", Field::IpOpt, SPECIAL, 300),
    ("sport", Field::Sport, 2, 400),
    ("dport", Field::Dport, 2, 400),
    ("tcp_seq", Field::TcpSeq, 4, 400),
    ("tcp_ack", Field::TcpAck, 4, 400),
    ("tcp_off", Field::TcpOff, 1, 399),
    ("tcp_flags", Field::TcpFlags, 1, 400),
    ("tcp_window", Field::TcpWindow, 2, 400),
    ("tcp_urp", Field::TcpUrp, 2, 400),
    ("tcp_opt", Field::TcpOpt, SPECIAL, 403),
    ("tcp_ntopt", Field::TcpOpt, SPECIAL, 402),
    ("tcp_sack", Field::TcpOpt, SPECIAL, 401),
    ("udp_len", Field::UdpLen, 4, 400),
    ("icmp_type", Field::IcmpType, 1, 400),
    ("icmp_code", Field::IcmpCode, 1, 401),
    ("icmp_type_name", Field::IcmpTypeName, 1, 400),
    ("icmp_code_name", Field::IcmpCodeName, 1, 401),
    ("icmp_flowid", Field::IcmpFlowid, 2, 402),
    ("icmp_seq", Field::IcmpSeq, 2, 402),
    ("icmp_nextmtu", Field::IcmpNextmtu, 2, 402),
    ("payload_len", Field::PayloadLen, 4, 501),
    ("payload", Field::Payload, TEXT_ONLY, 500),
];

/// Fields Click writes but does not read back.
pub const WRITE_ONLY: &[&str] = &["payload_md5", "payload_md5_hex"];

const SYNONYMS: &[(&str, &str)] = &[
    ("utimestamp", "timestamp"),
    ("ts", "utimestamp"),
    ("sec", "ts_sec"),
    ("usec", "ts_usec"),
    ("usec1", "ts_usec1"),
    ("first_utimestamp", "first_timestamp"),
    ("first_ts", "first_utimestamp"),
    ("pkt_count", "count"),
    ("packet_count", "count"),
    ("agg", "aggregate"),
    ("wire_length", "wire_len"),
    ("length", "ip_len"),
    ("ip_p", "ip_proto"),
    ("tcp_seqno", "tcp_seq"),
    ("tcp_ackno", "tcp_ack"),
    ("tcp_win", "tcp_window"),
    ("ether_src", "eth_src"),
    ("ether_dst", "eth_dst"),
    ("ether_type", "eth_type"),
    ("payload_length", "payload_len"),
];

/// What a field name stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// A field: its table name, binary width and injection order.
    Found(&'static str, Field, i8, u16),
    /// A field Click writes but does not read back.
    WriteOnly,
    /// No field.
    Unknown,
}

/// Finds a field by name, Click's way: synonyms, then the table, then
/// with a space made an underscore, or with `ip_` in front of a name
/// that has no underscore.
pub fn find_field(name: &str) -> Lookup {
    if let Some((_, s)) = SYNONYMS.iter().find(|(n, _)| *n == name) {
        return find_field(s);
    }
    if let Some(&(n, f, w, o)) = FIELDS.iter().find(|(n, ..)| *n == name) {
        return Lookup::Found(n, f, w, o);
    }
    if WRITE_ONLY.contains(&name) {
        return Lookup::WriteOnly;
    }
    if let Some(i) = name.find(' ') {
        return find_field(&format!("{}_{}", &name[..i], &name[i + 1..]));
    }
    if !name.contains('_') {
        return find_field(&format!("ip_{name}"));
    }
    Lookup::Unknown
}

/// Parses a number below 256, for a field that also takes a name.
pub fn parse_u8(s: &str) -> Option<u8> {
    pronto_lang::args::parse_u32(s)
        .ok()
        .and_then(|v| u8::try_from(v).ok())
}

/// Appends `data` double-quoted, escaped as Click's `cp_quote` does.
pub fn quote_bytes(out: &mut String, data: &[u8]) {
    out.push('"');
    for &c in data {
        match c {
            b'\\' | b'"' | b'$' => {
                out.push('\\');
                out.push(c as char);
            }
            b'\t' => out.push_str("\\t"),
            b'\r' => out.push_str("\\r"),
            b'\n' => out.push_str("\\n"),
            32..=126 => out.push(c as char),
            _ => {
                out.push('\\');
                out.push((b'0' + (c >> 6)) as char);
                out.push((b'0' + ((c >> 3) & 7)) as char);
                out.push((b'0' + (c & 7)) as char);
            }
        }
    }
    out.push('"');
}

/// Removes one level of quoting from a payload field (`"..."` with
/// backslash escapes, `'...'` literally, `\<hex>` outside quotes) into
/// `out`; None if a quote is not closed.
pub fn unquote_bytes(s: &[u8], out: &mut Vec<u8>) -> Option<()> {
    out.clear();
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'"' => {
                i += 1;
                loop {
                    match s.get(i) {
                        None => return None,
                        Some(b'"') => break,
                        Some(b'\\') => i = pronto_lang::args::process_backslash(s, i, out),
                        Some(&c) => {
                            out.push(c);
                            i += 1;
                        }
                    }
                }
                i += 1;
            }
            b'\'' => {
                let k = s[i + 1..].iter().position(|&c| c == b'\'')?;
                out.extend_from_slice(&s[i + 1..i + 1 + k]);
                i += k + 2;
            }
            b'\\' if s.get(i + 1) == Some(&b'<') => {
                i = pronto_lang::args::process_backslash(s, i, out)
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_round_trips() {
        let data = b"hi \"there\"\n\x00\xff$\\\t";
        let mut s = String::new();
        quote_bytes(&mut s, data);
        assert_eq!(s, "\"hi \\\"there\\\"\\n\\000\\377\\$\\\\\\t\"");
        let mut back = Vec::new();
        unquote_bytes(s.as_bytes(), &mut back).expect("closed");
        assert_eq!(back, data);
        unquote_bytes(b"\"\\<48 69>\\x21\"", &mut back).expect("closed");
        assert_eq!(back, b"Hi!");
        assert!(unquote_bytes(b"\"open", &mut back).is_none());
    }

    #[test]
    fn flags() {
        assert_eq!(parse_tcp_flags("SA"), Some(0x12));
        assert_eq!(parse_tcp_flags("."), Some(0));
        assert_eq!(parse_tcp_flags("FSRPAUECN"), Some(0x1ff));
        assert_eq!(parse_tcp_flags("W"), Some(0x80));
        assert_eq!(parse_tcp_flags("24"), Some(24));
        assert_eq!(parse_tcp_flags("4096"), None);
        assert_eq!(parse_tcp_flags("SZ"), None);
    }
}
