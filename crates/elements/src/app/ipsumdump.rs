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

/// Which TCP options a summary field shows (Click's `DO_TCPOPT_*`).
pub const TCPOPT_PADDING: u32 = 1;
/// Maximum segment size.
pub const TCPOPT_MSS: u32 = 2;
/// Window scale.
pub const TCPOPT_WSCALE: u32 = 4;
/// SACK and SACK-permitted.
pub const TCPOPT_SACK: u32 = 8;
/// Timestamps.
pub const TCPOPT_TIMESTAMP: u32 = 16;
/// Any other option.
pub const TCPOPT_UNKNOWN: u32 = 32;
/// `tcp_opt`: every option but padding.
pub const TCPOPT_ALL_NOPAD: u32 = !TCPOPT_PADDING;
/// `tcp_ntopt`: every option but padding and timestamps.
pub const TCPOPT_NTALL: u32 = !(TCPOPT_PADDING | TCPOPT_TIMESTAMP);

/// Which IP options a summary field shows (Click's `DO_IPOPT_*`).
pub const IPOPT_PADDING: u32 = 1;
/// Record route, loose and strict source route.
pub const IPOPT_ROUTE: u32 = 2;
/// Any other option (timestamps are always shown).
pub const IPOPT_UNKNOWN: u32 = 32;
/// `ip_opt`: every option but padding.
pub const IPOPT_ALL_NOPAD: u32 = !IPOPT_PADDING;

/// Writes option `o` (kind, length, data) as `KIND=b:b:...`.
fn unparse_unknown_opt(s: &mut String, sep: &str, o: &[u8]) {
    use std::fmt::Write as _;
    let _ = write!(s, "{sep}{}", o[0]);
    for (k, b) in o[2..].iter().enumerate() {
        let _ = write!(s, "{}{b}", if k == 0 { '=' } else { ':' });
    }
}

/// Appends TCP options `opt` as Click's summary dumps write them
/// (`mss1460;sackok;ts1:2;wscale7;sack1-10;nop;eol`; `.` for none shown,
/// `?` for malformed options), showing the kinds in `mask`.
pub fn unparse_tcp_opt(s: &mut String, opt: &[u8], mask: u32) {
    use std::fmt::Write as _;
    let start = s.len();
    let mut sep = "";
    let mut i = 0;
    let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    while i < opt.len() {
        let kind = opt[i];
        if kind == 0 {
            if mask & TCPOPT_PADDING != 0 {
                let _ = write!(s, "{sep}eol");
            }
            break;
        }
        if kind == 1 {
            if mask & TCPOPT_PADDING != 0 {
                let _ = write!(s, "{sep}nop");
                sep = ";";
            }
            i += 1;
            continue;
        }
        let Some(&l) = opt.get(i + 1) else {
            s.truncate(start);
            s.push('?');
            return;
        };
        let l = l as usize;
        let fits = i + l <= opt.len();
        let (ok, bit) = match kind {
            2 => (fits && l == 4, TCPOPT_MSS),
            3 => (fits && l == 3, TCPOPT_WSCALE),
            4 => (fits && l == 2, TCPOPT_SACK),
            5 => (fits && l % 8 == 2, TCPOPT_SACK),
            8 => (fits && l == 10, TCPOPT_TIMESTAMP),
            _ => (fits && l >= 2, TCPOPT_UNKNOWN),
        };
        if !ok {
            s.truncate(start);
            s.push('?');
            return;
        }
        if mask & bit == 0 {
            i += l;
            continue;
        }
        let o = &opt[i..i + l];
        match kind {
            2 => {
                let _ = write!(s, "{sep}mss{}", u16::from_be_bytes([o[2], o[3]]));
            }
            3 => {
                let _ = write!(s, "{sep}wscale{}", o[2]);
            }
            4 => {
                let _ = write!(s, "{sep}sackok");
            }
            5 => {
                for b in o[2..].chunks_exact(8) {
                    let _ = write!(s, "{sep}sack{}-{}", be32(&b[..4]), be32(&b[4..]));
                    sep = ";";
                }
            }
            8 => {
                let _ = write!(s, "{sep}ts{}:{}", be32(&o[2..6]), be32(&o[6..10]));
            }
            _ => unparse_unknown_opt(s, sep, o),
        }
        sep = ";";
        i += l;
    }
    if s.len() == start {
        s.push('.');
    }
}

/// Appends IP options `opt` as Click's summary dumps write them
/// (`rr{1.2.3.4}+2`, `lsrr{1.2.3.4,^5.6.7.8}`, `ts.ip{1.2.3.4=5}`,
/// `nop`, `eol`, `KIND=b:b`; `.` for none shown, `?` for malformed
/// options), showing the kinds in `mask`.
pub fn unparse_ip_opt(s: &mut String, opt: &[u8], mask: u32) {
    use std::fmt::Write as _;
    let start = s.len();
    let mut sep = "";
    let mut i = 0;
    let bad = |s: &mut String| {
        s.truncate(start);
        s.push('?');
    };
    while i < opt.len() {
        let kind = opt[i];
        if kind == 0 {
            if mask & IPOPT_PADDING != 0 {
                let _ = write!(s, "{sep}eol");
            }
            break;
        }
        if kind == 1 {
            if mask & IPOPT_PADDING != 0 {
                let _ = write!(s, "{sep}nop");
                sep = ";";
            }
            i += 1;
            continue;
        }
        let Some(&l) = opt.get(i + 1) else {
            return bad(s);
        };
        let l = l as usize;
        let fits = i + l <= opt.len();
        match kind {
            7 | 131 | 137 => {
                if !fits || l < 3 || opt[i + 2] < 4 {
                    return bad(s);
                }
                if mask & IPOPT_ROUTE == 0 {
                    i += l;
                    continue;
                }
                let rr = kind == 7;
                let name = match kind {
                    7 => "rr",
                    131 => "lsrr",
                    _ => "ssrr",
                };
                let _ = write!(s, "{sep}{name}{{");
                let (ol, op) = (i + l, i + opt[i + 2] as usize - 1);
                let mut o = i + 3;
                let mut sep2 = "";
                while o + 4 <= ol {
                    if o == op {
                        if rr {
                            break;
                        }
                        sep2 = "^";
                    }
                    let a = &opt[o..o + 4];
                    let _ = write!(s, "{sep2}{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
                    sep2 = ",";
                    o += 4;
                }
                if o == ol && o == op && !rr {
                    s.push('^');
                }
                s.push('}');
                if o + 4 <= ol && o == op && rr {
                    let _ = write!(s, "+{}", (ol - o) / 4);
                }
                i = ol;
            }
            68 => {
                if !fits || l < 4 || opt[i + 2] < 5 {
                    return bad(s);
                }
                let (ol, op) = (i + l, i + opt[i + 2] as usize - 1);
                let flag = opt[i + 3] & 0xf;
                let size = if (1..=3).contains(&flag) { 8 } else { 4 };
                let _ = write!(s, "{sep}ts");
                match flag {
                    0 => {}
                    1 => s.push_str(".ip"),
                    3 => s.push_str(".preip"),
                    f => {
                        let _ = write!(s, ".{f}");
                    }
                }
                s.push('{');
                let mut sep2 = "";
                let mut o = i + 4;
                while o + size <= ol {
                    if o == op {
                        if flag != 3 {
                            break;
                        }
                        sep2 = "^";
                    }
                    s.push_str(sep2);
                    if flag != 0 {
                        let a = &opt[o..o + 4];
                        let _ = write!(s, "{}.{}.{}.{}=", a[0], a[1], a[2], a[3]);
                        o += 4;
                    }
                    if flag == 3 && o > op {
                        s.pop();
                    } else {
                        let v = u32::from_be_bytes([opt[o], opt[o + 1], opt[o + 2], opt[o + 3]]);
                        if v & 0x8000_0000 != 0 {
                            s.push('!');
                        }
                        let _ = write!(s, "{}", v & 0x7fff_ffff);
                    }
                    sep2 = ",";
                    o += 4;
                }
                if o == ol && o == op {
                    s.push('^');
                }
                s.push('}');
                if o + size <= ol && o == op {
                    let _ = write!(s, "+{}", (ol - o) / size);
                }
                if opt[i + 3] & 0xf0 != 0 {
                    let _ = write!(s, "++{}", opt[i + 3] >> 4);
                }
                i = ol;
            }
            _ => {
                if !fits || l < 2 {
                    return bad(s);
                }
                if mask & IPOPT_UNKNOWN == 0 {
                    i += l;
                    continue;
                }
                unparse_unknown_opt(s, sep, &opt[i..i + l]);
                i += l;
            }
        }
        sep = ";";
    }
    if s.len() == start {
        s.push('.');
    }
}

/// Click's `cp_integer` over bytes: reads an unsigned integer at `i`
/// (base 0: `0x` hexadecimal, a leading `0` octal, else decimal);
/// returns the position after it and the value, or `i` and `None` when
/// no digit is there. Values past `u32::MAX` saturate.
pub fn cp_integer(b: &[u8], i: usize, base: u32) -> (usize, Option<u32>) {
    let (mut j, radix) = match base {
        0 if b.get(i) == Some(&b'0')
            && matches!(b.get(i + 1), Some(b'x' | b'X'))
            && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit()) =>
        {
            (i + 2, 16)
        }
        0 if b.get(i) == Some(&b'0') => (i, 8),
        0 => (i, 10),
        r => (i, r),
    };
    let start = j;
    let mut v: u64 = 0;
    while let Some(d) = b.get(j).and_then(|&c| (c as char).to_digit(radix)) {
        v = (v * radix as u64 + d as u64).min(u32::MAX as u64 + 1);
        j += 1;
    }
    if j == start {
        return (i, None);
    }
    (j, Some(v.min(u32::MAX as u64) as u32))
}

/// Reads the four parts of a dotted-quad address at `*i` into `out`.
fn parse_opt_addr(b: &[u8], i: &mut usize, out: &mut Vec<u8>) -> bool {
    for k in 0..4 {
        let (j, v) = cp_integer(b, *i, 10);
        let Some(v) = v.filter(|&v| v <= 255) else {
            return false;
        };
        *i = j;
        if k < 3 {
            if b.get(*i) != Some(&b'.') {
                return false;
            }
            *i += 1;
        }
        out.push(v as u8);
    }
    true
}

/// Finishes an option list: leading NOPs beyond 40 bytes are dropped; a
/// longer list is refused.
fn finish_opts(out: &mut Vec<u8>) -> bool {
    while out.len() > 40 && out[0] == 1 {
        out.remove(0);
    }
    out.len() <= 40
}

/// Parses TCP options in summary-dump text (what [`unparse_tcp_opt`]
/// writes; `sackA:B` is taken for `sackA-B`, adjacent `,sack` blocks join
/// one option) into `out`, accepting only the kinds in `mask`. `.` is no
/// options. False for text Click's reader refuses.
pub fn parse_tcp_opt(text: &str, mask: u32, out: &mut Vec<u8>) -> bool {
    out.clear();
    let b = text.as_bytes();
    let end = b.len();
    if b.is_empty() || text == "." {
        return true;
    }
    if text == "-" {
        return false;
    }
    let at = |i: usize, w: &[u8]| b.get(i..i + w.len()) == Some(w);
    let mut s = 0;
    loop {
        if s + 3 < end && at(s, b"mss") && mask & TCPOPT_MSS != 0 {
            let (j, v) = cp_integer(b, s + 3, 0);
            let Some(v) = v.filter(|&v| v <= 0xffff) else {
                return false;
            };
            out.extend_from_slice(&[2, 4, (v >> 8) as u8, v as u8]);
            s = j;
        } else if s + 6 < end && at(s, b"wscale") && mask & TCPOPT_WSCALE != 0 {
            let (j, v) = cp_integer(b, s + 6, 0);
            let Some(v) = v.filter(|&v| v <= 255) else {
                return false;
            };
            out.extend_from_slice(&[3, 3, v as u8]);
            s = j;
        } else if s + 6 <= end && at(s, b"sackok") && mask & TCPOPT_SACK != 0 {
            out.extend_from_slice(&[4, 2]);
            s += 6;
        } else if s + 4 < end && at(s, b"sack") && mask & TCPOPT_SACK != 0 {
            let pos = out.len();
            out.extend_from_slice(&[5, 0]);
            s += 4;
            loop {
                let (t, u1) = cp_integer(b, s, 0);
                if t >= end || (b[t] != b':' && b[t] != b'-') {
                    return false;
                }
                let (t, u2) = cp_integer(b, t + 1, 0);
                if t < s + 3 {
                    return false;
                }
                out.extend_from_slice(&u1.unwrap_or(0).to_be_bytes());
                out.extend_from_slice(&u2.unwrap_or(0).to_be_bytes());
                s = t;
                if s + 5 >= end || !at(s, b",sack") {
                    break;
                }
                s += 5;
            }
            let n = out.len() - pos;
            if n > 255 {
                return false;
            }
            out[pos + 1] = n as u8;
        } else if s + 2 < end && at(s, b"ts") && mask & TCPOPT_TIMESTAMP != 0 {
            let (t, u1) = cp_integer(b, s + 2, 0);
            if t >= end || b[t] != b':' {
                return false;
            }
            let (t, u2) = cp_integer(b, t + 1, 0);
            if t < s + 5 {
                return false;
            }
            if out.is_empty() {
                out.extend_from_slice(&[1, 1]);
            }
            out.extend_from_slice(&[8, 10]);
            out.extend_from_slice(&u1.unwrap_or(0).to_be_bytes());
            out.extend_from_slice(&u2.unwrap_or(0).to_be_bytes());
            s = t;
        } else if s < end && b[s].is_ascii_digit() && mask & TCPOPT_UNKNOWN != 0 {
            if !parse_unknown_opt(b, &mut s, out) {
                return false;
            }
        } else if s + 3 <= end && at(s, b"nop") && mask & TCPOPT_PADDING != 0 {
            out.push(1);
            s += 3;
        } else if s + 3 <= end
            && at(s, b"eol")
            && mask & TCPOPT_PADDING != 0
            && (s + 3 == end || b[s + 3] != b',')
        {
            out.push(0);
            s += 3;
        } else {
            return false;
        }
        if s >= end || b[s].is_ascii_whitespace() {
            return finish_opts(out);
        }
        if b[s] != b',' && b[s] != b';' {
            return false;
        }
        s += 1;
    }
}

/// Reads `KIND[=B:B...]` at `*s`.
fn parse_unknown_opt(b: &[u8], s: &mut usize, out: &mut Vec<u8>) -> bool {
    let (j, v) = cp_integer(b, *s, 0);
    let Some(v) = v.filter(|&v| v < 256) else {
        return false;
    };
    *s = j;
    out.push(v as u8);
    if b.get(*s) == Some(&b'=') && b.get(*s + 1).is_some_and(u8::is_ascii_digit) {
        let pos = out.len();
        out.push(0);
        loop {
            let (j, v) = cp_integer(b, *s + 1, 0);
            let Some(v) = v.filter(|&v| v < 256) else {
                return false;
            };
            *s = j;
            out.push(v as u8);
            if !(b.get(*s) == Some(&b':') && b.get(*s + 1).is_some_and(u8::is_ascii_digit)) {
                break;
            }
        }
        if out.len() > pos + 254 {
            return false;
        }
        out[pos] = (out.len() - pos + 1) as u8;
    }
    true
}

/// Parses IP options in summary-dump text (what [`unparse_ip_opt`]
/// writes) into `out`. `.` is no options. False for text Click's reader
/// refuses.
pub fn parse_ip_opt(text: &str, out: &mut Vec<u8>) -> bool {
    out.clear();
    let b = text.as_bytes();
    let end = b.len();
    if b.is_empty() || text == "." {
        return true;
    }
    if text == "-" {
        return false;
    }
    let at = |i: usize, w: &[u8]| b.get(i..i + w.len()) == Some(w);
    let mut s = 0;
    loop {
        let route = if s + 3 < end && at(s, b"rr{") {
            Some((7u8, 3))
        } else if s + 5 < end && at(s, b"ssrr{") {
            Some((137, 5))
        } else if s + 5 < end && at(s, b"lsrr{") {
            Some((131, 5))
        } else {
            None
        };
        if let Some((kind, skip)) = route {
            let pos = out.len();
            out.extend_from_slice(&[kind, 0, 0]);
            s += skip;
            let mut pointer: Option<usize> = None;
            loop {
                if s < end && b[s] == b'^' && pointer.is_none() {
                    pointer = Some(out.len() - pos + 1);
                    s += 1;
                }
                if s >= end || !b[s].is_ascii_digit() {
                    break;
                }
                if !parse_opt_addr(b, &mut s, out) {
                    return false;
                }
                if s < end && b[s] == b',' {
                    s += 1;
                }
            }
            if s >= end || b[s] != b'}' {
                return false;
            }
            out[pos + 2] = pointer.unwrap_or(out.len() - pos + 1) as u8;
            if s + 2 < end && b[s + 1] == b'+' && b[s + 2].is_ascii_digit() {
                let (j, v) = cp_integer(b, s + 2, 10);
                s = j;
                if let Some(v) = v.filter(|&v| v < 64) {
                    out.resize(out.len() + v as usize * 4, 0);
                }
            } else {
                s += 1;
            }
            let n = out.len() - pos;
            if n > 255 {
                return false;
            }
            out[pos + 1] = n as u8;
        } else if s + 3 < end && (at(s, b"ts{") || at(s, b"ts.")) {
            let pos = out.len();
            out.extend_from_slice(&[68, 0, 0, 0]);
            let mut flag: i32 = -1;
            if b[s + 2] == b'.' {
                if s + 6 < end && at(s + 3, b"ip{") {
                    flag = 1;
                    s += 6;
                } else if s + 9 < end && at(s + 3, b"preip{") {
                    flag = 3;
                    s += 9;
                } else if b[s + 3].is_ascii_digit() {
                    let (t, v) = cp_integer(b, s + 3, 0);
                    match v {
                        Some(v) if v <= 15 && t < end && b[t] == b'{' => {
                            flag = v as i32;
                            s = t + 1;
                        }
                        _ => return false,
                    }
                } else {
                    return false;
                }
            } else {
                s += 3;
            }
            let mut pointer: Option<usize> = None;
            loop {
                if s < end && b[s] == b'^' && pointer.is_none() {
                    pointer = Some(out.len() - pos + 1);
                    s += 1;
                }
                if s >= end || (!b[s].is_ascii_digit() && b[s] != b'!') {
                    break;
                }
                let entry = s;
                let mut filled = false;
                loop {
                    if matches!(flag, 1 | 3 | -2) {
                        if !parse_opt_addr(b, &mut s, out) {
                            return false;
                        }
                        if pointer.is_some() && flag == -2 {
                            flag = 3;
                        }
                        if s + 1 < end && b[s] == b'=' {
                            if b[s + 1].is_ascii_digit() || b[s + 1] == b'!' {
                                s += 1;
                            } else if b[s + 1] == b'?' && pointer.is_some() {
                                out.extend_from_slice(&[0; 4]);
                                s += 2;
                                filled = true;
                            } else {
                                return false;
                            }
                        } else if pointer.is_some() {
                            out.extend_from_slice(&[0; 4]);
                            filled = true;
                        } else {
                            return false;
                        }
                    }
                    if filled {
                        break;
                    }
                    let mut top = 0u32;
                    if s < end && b[s] == b'!' {
                        top = 0x8000_0000;
                        s += 1;
                    }
                    if s >= end || !b[s].is_ascii_digit() {
                        return false;
                    }
                    let (j, v) = cp_integer(b, s, 0);
                    s = j;
                    if s < end && b[s] == b'.' && flag == -1 {
                        flag = -2;
                        s = entry;
                        continue;
                    } else if flag == -1 {
                        flag = 0;
                    }
                    out.extend_from_slice(&(v.unwrap_or(0) | top).to_be_bytes());
                    break;
                }
                if s < end && b[s] == b',' {
                    s += 1;
                }
            }
            if s < end {
                s += 1;
                if b[s - 1] != b'}' {
                    return false;
                }
            }
            if flag == -2 {
                flag = 1;
            }
            out[pos + 2] = pointer.unwrap_or(out.len() - pos + 1) as u8;
            if s + 1 < end && b[s] == b'+' && b[s + 1].is_ascii_digit() {
                let (j, v) = cp_integer(b, s + 1, 0);
                s = j;
                if let Some(v) = v.filter(|&v| v < 64) {
                    let size = if flag == 1 || flag == 3 { 8 } else { 4 };
                    out.resize(out.len() + v as usize * size, 0);
                }
            }
            let mut overflow = 0u8;
            if s + 2 < end && b[s] == b'+' && b[s + 1] == b'+' && b[s + 2].is_ascii_digit() {
                let (j, v) = cp_integer(b, s + 2, 0);
                s = j;
                if let Some(v) = v.filter(|&v| v < 16) {
                    overflow = v as u8;
                }
            }
            out[pos + 3] = (overflow << 4) | (flag as u8);
            let n = out.len() - pos;
            if n > 255 {
                return false;
            }
            out[pos + 1] = n as u8;
        } else if s < end && b[s].is_ascii_digit() {
            if !parse_unknown_opt(b, &mut s, out) {
                return false;
            }
        } else if s + 3 <= end && at(s, b"nop") {
            out.push(1);
            s += 3;
        } else if s + 3 <= end && at(s, b"eol") && (s + 3 == end || b[s + 3] != b',') {
            out.push(0);
            s += 3;
        } else {
            return false;
        }
        if s >= end {
            return finish_opts(out);
        }
        if b[s] != b',' && b[s] != b';' {
            return false;
        }
        s += 1;
    }
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

    #[test]
    fn tcp_options_text() {
        let mut s = String::new();
        let opts = [
            2, 4, 0x05, 0xb4, // mss 1460
            1, 3, 3, 7, // nop, wscale 7
            4, 2, // sack permitted
            8, 10, 0, 0, 0, 1, 0, 0, 0, 2, // timestamps 1:2
            5, 10, 0, 0, 0, 1, 0, 0, 0, 10, // sack 1-10
            30, 4, 9, 8, // unknown kind 30
            0, 0,
        ];
        unparse_tcp_opt(&mut s, &opts, TCPOPT_ALL_NOPAD);
        assert_eq!(s, "mss1460;wscale7;sackok;ts1:2;sack1-10;30=9:8");
        s.clear();
        unparse_tcp_opt(&mut s, &opts, !0);
        assert_eq!(s, "mss1460;nop;wscale7;sackok;ts1:2;sack1-10;30=9:8;eol");
        s.clear();
        unparse_tcp_opt(&mut s, &opts, TCPOPT_NTALL);
        assert_eq!(s, "mss1460;wscale7;sackok;sack1-10;30=9:8");
        s.clear();
        unparse_tcp_opt(&mut s, &opts, TCPOPT_SACK);
        assert_eq!(s, "sackok;sack1-10");
        s = "x ".into();
        unparse_tcp_opt(&mut s, &[2, 4, 5], TCPOPT_ALL_NOPAD);
        assert_eq!(s, "x ?");
        s.clear();
        unparse_tcp_opt(&mut s, &[1, 1, 0], TCPOPT_ALL_NOPAD);
        assert_eq!(s, ".");
    }

    #[test]
    fn ip_options_text() {
        let mut s = String::new();
        // Strict source route with the pointer at the third address.
        let ssrr = [
            137, 19, 12, 128, 4, 45, 60, 128, 4, 49, 61, 1, 2, 3, 4, 5, 6, 7, 8, 0,
        ];
        unparse_ip_opt(&mut s, &ssrr, IPOPT_ALL_NOPAD);
        // Click writes the pointer mark in place of the separator.
        assert_eq!(s, "ssrr{128.4.45.60,128.4.49.61^1.2.3.4,5.6.7.8}");
        s.clear();
        // Record route: recorded addresses, then the room left.
        unparse_ip_opt(
            &mut s,
            &[1, 7, 11, 8, 10, 0, 0, 1, 0, 0, 0, 0],
            IPOPT_ALL_NOPAD,
        );
        assert_eq!(s, "rr{10.0.0.1}+1");
        s.clear();
        // Timestamps with addresses, one filled, overflow 2.
        let ts = [
            68, 20, 13, 0x21, 1, 2, 3, 4, 0, 0, 0, 9, 5, 6, 7, 8, 0, 0, 0, 0,
        ];
        unparse_ip_opt(&mut s, &ts, IPOPT_ALL_NOPAD);
        assert_eq!(s, "ts.ip{1.2.3.4=9}+1++2");
        s.clear();
        unparse_ip_opt(&mut s, &[1, 148, 4, 0, 0, 0], !0);
        assert_eq!(s, "nop;148=0:0;eol");
        s.clear();
        unparse_ip_opt(&mut s, &[7, 2], IPOPT_ALL_NOPAD);
        assert_eq!(s, "?");
    }

    #[test]
    fn options_parse_back() {
        let mut v = Vec::new();
        assert!(parse_tcp_opt("wscale10", TCPOPT_ALL_NOPAD | 1, &mut v));
        assert_eq!(v, [3, 3, 10]);
        assert!(parse_tcp_opt("mss1460;sackok;ts1:2", !0, &mut v));
        assert_eq!(v, [2, 4, 5, 180, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert!(parse_tcp_opt("ts1:2", !0, &mut v));
        assert_eq!(v, [1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
        assert!(parse_tcp_opt("sack1:18", !0, &mut v));
        assert_eq!(v, [5, 10, 0, 0, 0, 1, 0, 0, 0, 18]);
        assert!(parse_tcp_opt("sack1-10,sack2-3", !0, &mut v));
        assert_eq!(v.len(), 18);
        assert_eq!(v[1], 18);
        assert!(parse_tcp_opt("30=9:8;nop;eol", !0, &mut v));
        assert_eq!(v, [30, 4, 9, 8, 1, 0]);
        assert!(!parse_tcp_opt("mss70000", !0, &mut v));
        assert!(!parse_tcp_opt("ts1:2", TCPOPT_SACK, &mut v));
        assert!(parse_tcp_opt(".", !0, &mut v) && v.is_empty());
        let mut s = String::new();
        assert!(parse_tcp_opt(
            "mss1460;wscale7;sackok;ts1:2;sack1-10;30=9:8",
            !0,
            &mut v
        ));
        unparse_tcp_opt(&mut s, &v, TCPOPT_ALL_NOPAD);
        assert_eq!(s, "mss1460;wscale7;sackok;ts1:2;sack1-10;30=9:8");

        assert!(parse_ip_opt(
            "ssrr{128.4.45.60,128.4.49.61,^1.2.3.4,5.6.7.8}",
            &mut v
        ));
        assert_eq!(
            v,
            [137, 19, 12, 128, 4, 45, 60, 128, 4, 49, 61, 1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert!(parse_ip_opt("rr{10.0.0.1}+1", &mut v));
        assert_eq!(v, [7, 11, 8, 10, 0, 0, 1, 0, 0, 0, 0]);
        assert!(parse_ip_opt("ts.ip{1.2.3.4=9}+1++2", &mut v));
        assert_eq!(
            v,
            [68, 20, 13, 0x21, 1, 2, 3, 4, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0]
        );
        assert!(parse_ip_opt("ts{5,!6}", &mut v));
        assert_eq!(v, [68, 12, 13, 0, 0, 0, 0, 5, 0x80, 0, 0, 6]);
        assert!(parse_ip_opt("nop;148=0:0;eol", &mut v));
        assert_eq!(v, [1, 148, 4, 0, 0, 0]);
        assert!(!parse_ip_opt("rr{1.2.3}", &mut v));
        assert!(!parse_ip_opt("bogus", &mut v));
        for text in [
            "rr{10.0.0.1}+1",
            "lsrr{1.2.3.4^5.6.7.8}",
            "ts.ip{1.2.3.4=9}+1++2",
        ] {
            assert!(parse_ip_opt(text, &mut v));
            s.clear();
            unparse_ip_opt(&mut s, &v, IPOPT_ALL_NOPAD);
            assert_eq!(s, text);
        }
    }
}
