//! Pieces of Click's IP summary dump format shared by `ToIPSummaryDump` and
//! `FromIPSummaryDump`: payload quoting, TCP flag letters, ICMP names.

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

/// ICMP type names, as Click spells them.
pub const ICMP_TYPES: &[(&str, u8)] = &[
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

/// The code names of ICMP type `t`.
pub fn icmp_codes(t: u8) -> &'static [(&'static str, u8)] {
    match t {
        3 => UNREACH_CODES,
        5 => REDIRECT_CODES,
        11 => TIMXCEED_CODES,
        12 => PARAMPROB_CODES,
        _ => &[],
    }
}

/// Looks a value up by name in `table`, or parses a number below 256.
pub fn lookup_u8(table: &[(&str, u8)], s: &str) -> Option<u8> {
    if let Some(&(_, v)) = table.iter().find(|(n, _)| *n == s) {
        return Some(v);
    }
    pronto_lang::args::parse_u32(s)
        .ok()
        .and_then(|v| u8::try_from(v).ok())
}

/// The name of `v` in `table`, if it has one.
pub fn name_of(table: &[(&'static str, u8)], v: u8) -> Option<&'static str> {
    table.iter().find(|(_, x)| *x == v).map(|(n, _)| *n)
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

fn hex(c: u8) -> Option<u32> {
    (c as char).to_digit(16)
}

/// Expands the backslash escape at `b[i]` (a backslash) into `out`;
/// returns the index after it.
fn backslash(b: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let Some(&c) = b.get(i + 1) else {
        out.push(b'\\');
        return b.len();
    };
    let simple = match c {
        b'a' => Some(7),
        b'b' => Some(8),
        b'f' => Some(12),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        b'v' => Some(11),
        _ => None,
    };
    if let Some(v) = simple {
        out.push(v);
        return i + 2;
    }
    match c {
        b'\n' => i + 2,
        b'\r' => {
            if b.get(i + 2) == Some(&b'\n') {
                i + 3
            } else {
                i + 2
            }
        }
        b'0'..=b'7' => {
            let mut j = i + 1;
            let mut v: u32 = 0;
            while j < b.len() && j < i + 4 && (b'0'..=b'7').contains(&b[j]) {
                v = v * 8 + u32::from(b[j] - b'0');
                j += 1;
            }
            out.push(v as u8);
            j
        }
        b'x' => {
            let mut j = i + 2;
            let mut v: u32 = 0;
            while let Some(d) = b.get(j).and_then(|&c| hex(c)) {
                v = v.wrapping_mul(16).wrapping_add(d);
                j += 1;
            }
            out.push(v as u8);
            j
        }
        b'<' => {
            let mut j = i + 2;
            let (mut v, mut n) = (0u32, 0);
            while j < b.len() {
                if b[j] == b'>' {
                    return j + 1;
                }
                if let Some(d) = hex(b[j]) {
                    v = v * 16 + d;
                    n += 1;
                    if n == 2 {
                        out.push(v as u8);
                        v = 0;
                        n = 0;
                    }
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            out.push(c);
            i + 2
        }
    }
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
                        Some(b'\\') => i = backslash(s, i, out),
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
            b'\\' if s.get(i + 1) == Some(&b'<') => i = backslash(s, i, out),
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
