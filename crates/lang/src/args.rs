//! Element argument handling.
//!
//! Every element receives its configuration as one string (the text between
//! the parentheses of `Class(...)`). This module splits such strings into
//! arguments and words, removes quoting, recognises `KEYWORD value`
//! arguments, and parses the typed values elements commonly accept.
//!
//! The rules follow the Click configuration language:
//!
//! * arguments are separated by commas at the top level, i.e. not inside
//!   `()`, `[]`, `{}`, quotes, or comments;
//! * `//` line comments and `/* */` block comments are removed;
//! * double-quoted strings support backslash escapes, single-quoted strings
//!   are literal;
//! * a keyword is an upper-case identifier followed by whitespace or the end
//!   of the argument.
//!
//! Typed parsers return `Err(reason)` with a short phrase such as
//! `"expected IP address"` that callers embed in their own error messages.

/// Returns the byte index just past the quoted string starting at `i`
/// (which must point at a `"` or `'`). An unterminated quote runs to the end.
fn skip_quote(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == b'\\' && q == b'"' {
            j += 2;
            continue;
        }
        if b[j] == q {
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

/// If a comment starts at `i`, returns the index just past it.
fn skip_comment(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'/') {
        return None;
    }
    match b.get(i + 1) {
        Some(b'/') => {
            let mut j = i + 2;
            while j < b.len() && b[j] != b'\n' && b[j] != b'\r' {
                j += 1;
            }
            Some(j)
        }
        Some(b'*') => {
            let mut j = i + 2;
            while j + 1 < b.len() {
                if b[j] == b'*' && b[j + 1] == b'/' {
                    return Some(j + 2);
                }
                j += 1;
            }
            Some(b.len())
        }
        _ => None,
    }
}

/// Splits `s` into pieces at top-level separators chosen by `is_sep`,
/// removing comments. Each piece is returned untrimmed.
fn split_top(s: &str, is_sep: impl Fn(u8) -> bool) -> Vec<String> {
    let b = s.as_bytes();
    let mut pieces = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if let Some(j) = skip_comment(b, i) {
            // A comment acts as whitespace.
            if depth == 0 && is_sep(b' ') {
                pieces.push(String::from_utf8_lossy(&cur).into_owned());
                cur.clear();
            } else {
                cur.push(b' ');
            }
            i = j;
            continue;
        }
        match c {
            b'"' | b'\'' => {
                let j = skip_quote(b, i);
                cur.extend_from_slice(&b[i..j]);
                i = j;
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ if depth == 0 && is_sep(c) => {
                pieces.push(String::from_utf8_lossy(&cur).into_owned());
                cur.clear();
                i += 1;
                continue;
            }
            _ => {}
        }
        cur.push(c);
        i += 1;
    }
    pieces.push(String::from_utf8_lossy(&cur).into_owned());
    pieces
}

/// Trims an argument.
fn clean(piece: &str) -> String {
    piece.trim().to_string()
}

/// Splits a configuration string into comma-separated arguments
/// (Click's `cp_argvec`).
///
/// Commas inside brackets, quotes and comments do not split. Comments are
/// removed and each argument is trimmed. An empty (or all-whitespace)
/// configuration yields no arguments, and a single trailing empty argument
/// is dropped, so `"a, b,"` gives `["a", "b"]` while `"a, , b"` keeps the
/// empty middle argument.
pub fn split_args(s: &str) -> Vec<String> {
    let mut args: Vec<String> = split_top(s, |c| c == b',')
        .iter()
        .map(|p| clean(p))
        .collect();
    if args.last().is_some_and(|a| a.is_empty()) {
        args.pop();
    }
    args
}

/// Splits a string into whitespace-separated words (Click's `cp_spacevec`).
///
/// Whitespace inside quotes or brackets does not split; comments are
/// removed. Quotes are kept; use [`unquote`] on each word if needed.
pub fn split_words(s: &str) -> Vec<String> {
    split_top(s, |c| c.is_ascii_whitespace())
        .into_iter()
        .map(|p| clean(&p))
        .filter(|p| !p.is_empty())
        .collect()
}

/// Removes one level of quoting (Click's `cp_unquote`).
///
/// Double-quoted parts understand the escapes `\n \t \r \a \b \f \v \0`,
/// `\\ \" \' \$`, `\xHH`, octal `\NNN`, `\<hex bytes>` and backslash-newline
/// (removed). Single-quoted parts are taken literally. Unquoted parts are
/// kept as they are and all parts are concatenated, so `a"b c"'d'` becomes
/// `ab cd`. Comments outside quotes are removed and the result is trimmed.
pub fn unquote(s: &str) -> String {
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if let Some(j) = skip_comment(b, i) {
            out.push(b' ');
            i = j;
            continue;
        }
        match b[i] {
            b'\'' => {
                let content_start = i + 1;
                let (end, next) = match b[content_start..].iter().position(|&c| c == b'\'') {
                    Some(k) => (content_start + k, content_start + k + 1),
                    None => (b.len(), b.len()),
                };
                out.extend_from_slice(&b[content_start..end]);
                i = next;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        i = process_backslash(b, i, &mut out);
                    } else {
                        out.push(b[i]);
                        i += 1;
                    }
                }
                i += 1; // closing quote (or past the end)
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).trim().to_string()
}

fn hex_digit(c: u8) -> Option<u32> {
    (c as char).to_digit(16)
}

/// Decodes the backslash escape at `b[i]` (which holds the backslash) into
/// `out` and returns the index after it, with Click's rules
/// (`cp_process_backslash`): `\a \b \f \n \r \t \v`, up to three octal
/// digits, `\x` followed by any number of hex digits (one byte, the low
/// eight bits), `\<hex bytes>` (spaces and comments ignored, an odd last
/// digit dropped), backslash-newline removed, any other character itself.
/// The one decoder every unquoting path shares.
pub fn process_backslash(b: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let Some(&c) = b.get(i + 1) else {
        out.push(b'\\');
        return b.len();
    };
    let simple = match c {
        b'a' => Some(0x07),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        b'v' => Some(0x0b),
        _ => None,
    };
    if let Some(v) = simple {
        out.push(v);
        return i + 2;
    }
    match c {
        b'\r' => {
            if b.get(i + 2) == Some(&b'\n') {
                i + 3
            } else {
                i + 2
            }
        }
        b'\n' => i + 2,
        b'0'..=b'7' => {
            let mut j = i + 1;
            let mut v: u32 = 0;
            while j < b.len() && j < i + 4 && (b'0'..=b'7').contains(&b[j]) {
                v = v * 8 + u32::from(b[j] - b'0');
                j += 1;
            }
            out.push((v & 0xff) as u8);
            j
        }
        b'x' => {
            let mut j = i + 2;
            let mut v: u32 = 0;
            while let Some(d) = b.get(j).and_then(|&c| hex_digit(c)) {
                v = (v * 16 + d) & 0xff;
                j += 1;
            }
            out.push(v as u8);
            j
        }
        b'<' => {
            let mut j = i + 2;
            let mut pending: Option<u32> = None;
            while j < b.len() {
                if b[j] == b'>' {
                    return j + 1;
                }
                if let Some(k) = skip_comment(b, j) {
                    j = k;
                    continue;
                }
                if let Some(d) = hex_digit(b[j]) {
                    match pending.take() {
                        Some(hi) => out.push((hi * 16 + d) as u8),
                        None => pending = Some(d),
                    }
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            // The character itself (`\\`, `\"`, `\'`, `\$`, ...), whole if
            // it is multi-byte.
            let end = (i + 1 + utf8_len(c)).min(b.len());
            out.extend_from_slice(&b[i + 1..end]);
            end
        }
    }
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

/// Recognises a keyword argument such as `MTU 1500`.
///
/// Returns `(keyword, rest)` when `arg` starts with an upper-case
/// identifier (`[A-Z_][A-Z0-9_]*`) followed by whitespace or the end of the
/// string; `rest` has leading whitespace removed (it may be empty).
pub fn split_keyword(arg: &str) -> Option<(&str, &str)> {
    let b = arg.as_bytes();
    match b.first() {
        Some(c) if c.is_ascii_uppercase() || *c == b'_' => {}
        _ => return None,
    }
    let mut i = 1;
    while i < b.len() && (b[i].is_ascii_uppercase() || b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    if i < b.len() && !b[i].is_ascii_whitespace() {
        return None;
    }
    Some((&arg[..i], arg[i..].trim_start()))
}

/// Parses a boolean: `true/false`, `yes/no`, `t/f`, `y/n`, `1/0`
/// (case-insensitive).
pub fn parse_bool(s: &str) -> Result<bool, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "t" | "y" | "1" => Ok(true),
        "false" | "no" | "f" | "n" | "0" => Ok(false),
        _ => Err("expected boolean".into()),
    }
}

/// Why an integer did not parse.
enum IntError {
    /// Not an integer at all.
    Syntax,
    /// Digits that are too many for any integer type.
    Overflow,
}

/// Parses an integer magnitude with Click's base rules: `0x` hex, `0b`
/// binary, a leading `0` octal, decimal otherwise. Returns
/// `(negative, magnitude)`.
fn parse_int_parts(s: &str) -> Result<(bool, u128), IntError> {
    let s = s.trim();
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) =
        if let Some(h) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (16, h)
        } else if let Some(bn) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (2, bn)
        } else if body.len() > 1 && body.starts_with('0') {
            (8, &body[1..])
        } else {
            (10, body)
        };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_alphanumeric()) {
        return Err(IntError::Syntax);
    }
    u128::from_str_radix(digits, radix)
        .map(|v| (neg, v))
        .map_err(|e| match e.kind() {
            std::num::IntErrorKind::PosOverflow => IntError::Overflow,
            _ => IntError::Syntax,
        })
}

/// Parses an integer (decimal, `0x` hex, `0` octal, `0b` binary, with an
/// optional sign) between `min` and `max`. A well-formed integer outside
/// the range, however many digits it has, is "out of range" with the
/// range named, e.g. `integer out of range (0 to 4294967295)`.
pub fn parse_int_range(s: &str, min: i128, max: i128) -> Result<i128, String> {
    let range = || format!("integer out of range ({min} to {max})");
    let (neg, v) = match parse_int_parts(s) {
        Ok(x) => x,
        Err(IntError::Syntax) => return Err("expected integer".into()),
        Err(IntError::Overflow) => return Err(range()),
    };
    let v = i128::try_from(v).map_err(|_| range())?;
    let v = if neg { -v } else { v };
    if v < min || v > max {
        return Err(range());
    }
    Ok(v)
}

/// Parses an unsigned 32-bit integer (decimal, `0x` hex, `0` octal, `0b`
/// binary).
pub fn parse_u32(s: &str) -> Result<u32, String> {
    parse_int_range(s, 0, u32::MAX.into()).map(|v| v as u32)
}

/// Parses an unsigned 64-bit integer (same syntax as [`parse_u32`]).
pub fn parse_u64(s: &str) -> Result<u64, String> {
    parse_int_range(s, 0, u64::MAX.into()).map(|v| v as u64)
}

/// Parses a `usize` (same syntax as [`parse_u32`]).
pub fn parse_usize(s: &str) -> Result<usize, String> {
    parse_int_range(s, 0, usize::MAX as i128).map(|v| v as usize)
}

/// Parses a signed 64-bit integer (same syntax as [`parse_u32`], with an
/// optional sign).
pub fn parse_i64(s: &str) -> Result<i64, String> {
    parse_int_range(s, i64::MIN.into(), i64::MAX.into()).map(|v| v as i64)
}

/// Parses a real number (`1`, `-2.5`, `1e3`, `.5`). Infinities and NaN are
/// rejected.
pub fn parse_f64(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let ok_chars = !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E'));
    match s.parse::<f64>() {
        Ok(v) if ok_chars && v.is_finite() => Ok(v),
        _ => Err("expected real number".into()),
    }
}

/// Parses an IPv4 address in dotted-quad form (`10.0.0.1`).
pub fn parse_ip4(s: &str) -> Result<[u8; 4], String> {
    parse_ip4_literal(s).or_else(|e| crate::names::ip(s).ok_or(e))
}

/// Parses a dotted-quad IPv4 address, without consulting address names.
pub fn parse_ip4_literal(s: &str) -> Result<[u8; 4], String> {
    const EXPECTED: &str = "expected IP address";
    let s = s.trim();
    let mut out = [0u8; 4];
    let mut n = 0;
    for part in s.split('.') {
        if n == 4 || part.is_empty() || part.len() > 3 || !part.bytes().all(|c| c.is_ascii_digit())
        {
            return Err(EXPECTED.into());
        }
        out[n] = part.parse::<u8>().map_err(|_| EXPECTED.to_string())?;
        n += 1;
    }
    if n != 4 {
        return Err(EXPECTED.into());
    }
    Ok(out)
}

/// Returns the netmask with the top `len` bits set.
pub fn prefix_mask(len: u32) -> [u8; 4] {
    let m: u32 = if len == 0 {
        0
    } else {
        u32::MAX << (32 - len.min(32))
    };
    m.to_be_bytes()
}

/// Returns the prefix length of a contiguous netmask, or `None` if the mask
/// is not contiguous.
pub fn mask_len(mask: [u8; 4]) -> Option<u32> {
    let m = u32::from_be_bytes(mask);
    let len = m.leading_ones();
    (prefix_mask(len) == mask).then_some(len)
}

/// Parses an IPv4 prefix: `a.b.c.d/len`, `a.b.c.d/m.m.m.m`, or a bare
/// address (meaning `/32`). Returns `(address, mask)`; the address is not
/// masked.
pub fn parse_ip_prefix(s: &str) -> Result<([u8; 4], [u8; 4]), String> {
    const EXPECTED: &str = "expected IP prefix";
    let s = s.trim();
    match s.split_once('/') {
        None => parse_ip4_literal(s)
            .map(|a| (a, [255; 4]))
            .or_else(|_| crate::names::prefix(s).ok_or_else(|| EXPECTED.to_string())),
        Some((addr, m)) => {
            let addr = parse_ip4(addr).map_err(|_| EXPECTED.to_string())?;
            let mask = if m.contains('.') {
                parse_ip4_literal(m).map_err(|_| EXPECTED.to_string())?
            } else {
                if m.is_empty() || m.len() > 2 || !m.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(EXPECTED.into());
                }
                let len: u32 = m.parse().map_err(|_| EXPECTED.to_string())?;
                if len > 32 {
                    return Err(EXPECTED.into());
                }
                prefix_mask(len)
            };
            Ok((addr, mask))
        }
    }
}

/// Parses an IPv6 address in any of RFC 4291's text forms (`2001:db8::1`,
/// `::ffff:1.2.3.4`, the full eight groups).
///
/// A word that is not an address may be a name an `AddressInfo` defined
/// (`NAME`, `NAME:ip6`; see [`crate::names`]).
pub fn parse_ip6(s: &str) -> Result<[u8; 16], String> {
    parse_ip6_literal(s).or_else(|e| crate::names::ip6(s).ok_or(e))
}

/// Parses an IPv6 address, without consulting address names.
pub fn parse_ip6_literal(s: &str) -> Result<[u8; 16], String> {
    s.trim()
        .parse::<std::net::Ipv6Addr>()
        .map(|a| a.octets())
        .map_err(|_| "expected IPv6 address".to_string())
}

/// Returns the IPv6 netmask with the top `len` bits set.
pub fn prefix_mask6(len: u32) -> [u8; 16] {
    let m: u128 = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len.min(128))
    };
    m.to_be_bytes()
}

/// Returns the prefix length of a contiguous IPv6 netmask, or `None` if
/// the mask is not contiguous.
pub fn mask6_len(mask: &[u8; 16]) -> Option<u32> {
    let m = u128::from_be_bytes(*mask);
    let len = m.leading_ones();
    (prefix_mask6(len) == *mask).then_some(len)
}

/// Parses an IPv6 prefix: `addr/len` (0 to 128), `addr/mask` (the mask as
/// an IPv6 address), or a bare address (a /128). Returns the address as
/// written (not masked) and the mask. Names an `AddressInfo` defined work
/// as in Click: `NAME` (its address as a /128, else its prefix),
/// `NAME:ip6`, `NAME:ip6net`, `NAME/LEN`.
pub fn parse_ip6_prefix(s: &str) -> Result<([u8; 16], [u8; 16]), String> {
    const EXPECTED: &str = "expected IPv6 prefix";
    let s = s.trim();
    match s.split_once('/') {
        None => parse_ip6_literal(s)
            .map(|a| (a, [0xff; 16]))
            .or_else(|_| crate::names::prefix6(s).ok_or_else(|| EXPECTED.to_string())),
        Some((addr, m)) => {
            let addr = parse_ip6(addr).map_err(|_| EXPECTED.to_string())?;
            let mask = if m.contains(':') {
                parse_ip6(m).map_err(|_| EXPECTED.to_string())?
            } else {
                if m.is_empty() || m.len() > 3 || !m.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(EXPECTED.into());
                }
                let len: u32 = m.parse().map_err(|_| EXPECTED.to_string())?;
                if len > 128 {
                    return Err(EXPECTED.into());
                }
                prefix_mask6(len)
            };
            Ok((addr, mask))
        }
    }
}

/// Formats an IPv6 address as Click prints it (RFC 5952: lower case, the
/// longest run of zero groups as `::`; an IPv4-mapped or -compatible
/// address with its last 32 bits dotted).
pub fn format_ip6(a: &[u8; 16]) -> String {
    let mut s = String::with_capacity(40);
    write_ip6(&mut s, a);
    s
}

/// Appends an IPv6 address to `out` as [`format_ip6`] writes it, without
/// allocating (for per-packet printers).
pub fn write_ip6(out: &mut String, a: &[u8; 16]) {
    use std::fmt::Write as _;
    let w = |i: usize| u16::from_be_bytes([a[2 * i], a[2 * i + 1]]);
    if a[..8] == [0; 8] {
        if a[8..] == [0; 8] {
            out.push_str("::");
            return;
        }
        let head = match (w(4), w(5)) {
            (0, 0) => Some("::"),
            (0, 0xffff) => Some("::ffff:"),
            _ => None,
        };
        if let Some(head) = head {
            let _ = write!(out, "{head}{}.{}.{}.{}", a[12], a[13], a[14], a[15]);
            return;
        }
    }
    // The longest run of two or more zero groups (the first of equal
    // runs) becomes `::`.
    let (mut zp, mut zl, mut run_start) = (0, 0, 0);
    for i in 0..8 {
        if w(i) != 0 {
            run_start = i + 1;
        } else if i + 1 - run_start > zl {
            zp = run_start;
            zl = i + 1 - run_start;
        }
    }
    let mut i = 0;
    while i < 8 {
        if i == zp && zl > 1 {
            i += zl;
            out.push_str(if i == 8 { "::" } else { ":" });
            continue;
        }
        if i > 0 {
            out.push(':');
        }
        let _ = write!(out, "{:x}", w(i));
        i += 1;
    }
}

/// Parses an Ethernet address: `00:11:22:33:44:55`, `00-11-22-33-44-55`
/// (one or two hex digits per byte) or `0011.2233.4455`.
pub fn parse_ether(s: &str) -> Result<[u8; 6], String> {
    parse_ether_literal(s).or_else(|e| crate::names::ether(s).ok_or(e))
}

/// Parses an Ethernet address, without consulting address names.
pub fn parse_ether_literal(s: &str) -> Result<[u8; 6], String> {
    const EXPECTED: &str = "expected Ethernet address";
    let s = s.trim();
    let mut out = [0u8; 6];
    let sep = if s.contains(':') {
        ':'
    } else if s.contains('-') {
        '-'
    } else {
        // Dotted form: three groups of four hex digits.
        let groups: Vec<&str> = s.split('.').collect();
        if groups.len() != 3
            || !groups
                .iter()
                .all(|g| g.len() == 4 && g.bytes().all(|c| c.is_ascii_hexdigit()))
        {
            return Err(EXPECTED.into());
        }
        for (k, g) in groups.iter().enumerate() {
            let v = u16::from_str_radix(g, 16).map_err(|_| EXPECTED.to_string())?;
            out[2 * k..2 * k + 2].copy_from_slice(&v.to_be_bytes());
        }
        return Ok(out);
    };
    let parts: Vec<&str> = s.split(sep).collect();
    if parts.len() != 6 {
        return Err(EXPECTED.into());
    }
    for (k, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(EXPECTED.into());
        }
        out[k] = u8::from_str_radix(p, 16).map_err(|_| EXPECTED.to_string())?;
    }
    Ok(out)
}

/// Splits `s` into a leading real number and a trailing unit
/// (`"10ms"` → `("10", "ms")`).
fn split_number_unit(s: &str) -> (&str, &str) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let exponent = (c == b'e' || c == b'E')
            && i > 0
            && b.get(i + 1)
                .is_some_and(|n| n.is_ascii_digit() || *n == b'-' || *n == b'+');
        if c.is_ascii_digit()
            || c == b'.'
            || exponent
            || ((c == b'-' || c == b'+') && (i == 0 || b[i - 1] == b'e' || b[i - 1] == b'E'))
        {
            i += 1;
        } else {
            break;
        }
    }
    (&s[..i], s[i..].trim_start())
}

/// Parses a time interval in seconds: a real number with an optional unit
/// `s`/`sec`, `ms`/`msec`, `us`/`usec`, `ns`/`nsec`, `m`/`min`, `h`/`hr`,
/// `d`/`day` (`1`, `1.5`, `10ms`, `2s`, `1min`, `1h`, `500us`, `100ns`).
/// Negative intervals are rejected.
pub fn parse_seconds(s: &str) -> Result<f64, String> {
    const EXPECTED: &str = "expected time in seconds";
    let s = s.trim();
    let (num, unit) = split_number_unit(s);
    let v = parse_f64(num).map_err(|_| EXPECTED.to_string())?;
    let scale = match unit {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" | "msec" | "msecs" => 1e-3,
        "us" | "usec" | "usecs" => 1e-6,
        "ns" | "nsec" | "nsecs" => 1e-9,
        "m" | "min" | "mins" => 60.0,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86400.0,
        _ => return Err(EXPECTED.into()),
    };
    if v < 0.0 {
        return Err(EXPECTED.into());
    }
    Ok(v * scale)
}

/// Parses a timestamp `SECS[.FRACTION]` (up to nanosecond precision, extra
/// digits are truncated) into `(seconds, nanoseconds)`. A leading `-` gives
/// a negative time normalised so that the nanoseconds are non-negative.
pub fn parse_timestamp(s: &str) -> Result<(i64, u32), String> {
    const EXPECTED: &str = "expected timestamp";
    let s = s.trim();
    let (neg, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
    {
        return Err(EXPECTED.into());
    }
    let secs: i64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| EXPECTED.to_string())?
    };
    let mut nanos: u32 = 0;
    for k in 0..9 {
        let d = frac.as_bytes().get(k).map_or(0, |c| u32::from(c - b'0'));
        nanos = nanos * 10 + d;
    }
    if !neg {
        Ok((secs, nanos))
    } else if nanos == 0 {
        Ok((-secs, 0))
    } else {
        Ok((-secs - 1, 1_000_000_000 - nanos))
    }
}

/// Parses a bandwidth into bytes per second.
///
/// Units: `bps`/`Kbps`/`kbps`/`Mbps`/`Gbps` (bits per second) and
/// `Bps`/`KBps`/`kBps`/`MBps`/`GBps` (bytes per second); prefixes are
/// powers of 1000. A bare number is taken as bytes per second.
pub fn parse_bandwidth(s: &str) -> Result<f64, String> {
    const EXPECTED: &str = "expected bandwidth";
    let s = s.trim();
    let (num, unit) = split_number_unit(s);
    let v = parse_f64(num).map_err(|_| EXPECTED.to_string())?;
    if v < 0.0 {
        return Err(EXPECTED.into());
    }
    if unit.is_empty() {
        return Ok(v);
    }
    // Click's units: baud, bps and b/s are bits; Bps and B/s bytes.
    let bits = ["baud", "bps", "b/s"]
        .iter()
        .find_map(|u| unit.strip_suffix(u));
    let bytes = ["Bps", "B/s"].iter().find_map(|u| unit.strip_suffix(u));
    let (prefix, base) = match (bits, bytes) {
        (Some(p), _) => (p, 1.0 / 8.0),
        (None, Some(p)) => (p, 1.0),
        (None, None) => return Err(EXPECTED.into()),
    };
    let scale = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => return Err(EXPECTED.into()),
    };
    Ok(v * scale * base)
}

/// Parses an event rate in events per second: a real number with an
/// optional `k`/`K`, `M` or `G` prefix and an optional `pps` or `/s`
/// suffix (`1000`, `10k`, `2.5Mpps`).
pub fn parse_rate(s: &str) -> Result<f64, String> {
    const EXPECTED: &str = "expected rate";
    let s = s.trim();
    let (num, unit) = split_number_unit(s);
    let v = parse_f64(num).map_err(|_| EXPECTED.to_string())?;
    if v < 0.0 {
        return Err(EXPECTED.into());
    }
    let prefix = unit
        .strip_suffix("pps")
        .or_else(|| unit.strip_suffix("/s"))
        .unwrap_or(unit);
    let scale = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        _ => return Err(EXPECTED.into()),
    };
    Ok(v * scale)
}

#[cfg(test)]
mod tests {

    #[test]
    fn ip6_text_is_clicks() {
        let f = |t: &str| super::format_ip6(&super::parse_ip6(t).expect("parses"));
        assert_eq!(f("::"), "::");
        assert_eq!(f("::1"), "::0.0.0.1");
        assert_eq!(f("::1.2.3.4"), "::1.2.3.4");
        assert_eq!(f("::ffff:10.0.0.1"), "::ffff:10.0.0.1");
        assert_eq!(f("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");
        assert_eq!(f("2001:DB8:0:1:0:0:0:0"), "2001:db8:0:1::");
        assert_eq!(f("0:0:0:1::"), "0:0:0:1::");
        assert_eq!(f("1:0:0:2:0:0:3:4"), "1::2:0:0:3:4");
        assert_eq!(f("2001:db8:1:2:3:4:0:6"), "2001:db8:1:2:3:4:0:6");
        assert_eq!(f("fe80::1:0:0:0:1"), "fe80:0:0:1::1");
        assert_eq!(f("ff02::1:ff00:1"), "ff02::1:ff00:1");
    }

    #[test]
    fn backslash_follows_click() {
        let dec = |t: &str| {
            let mut out = Vec::new();
            let end = process_backslash(t.as_bytes(), 0, &mut out);
            (out, end)
        };
        assert_eq!(
            dec("\\x141z"),
            (vec![0x41], 5),
            "any number of hex digits, low byte"
        );
        assert_eq!(dec("\\xz"), (vec![0], 2), "no digits: a zero byte");
        assert_eq!(
            dec("\\1234"),
            (vec![0o123], 4),
            "at most three octal digits"
        );
        assert_eq!(
            dec("\\<0a 0B /* c */ f>"),
            (vec![0x0a, 0x0b], 18),
            "odd last digit dropped"
        );
        assert_eq!(dec("\\$"), (b"$".to_vec(), 2));
        assert_eq!(dec("\\\nx"), (vec![], 2), "backslash-newline removed");
    }

    use super::*;

    #[test]
    fn argvec_basic() {
        assert_eq!(split_args(""), Vec::<String>::new());
        assert_eq!(split_args("   "), Vec::<String>::new());
        assert_eq!(split_args("a"), vec!["a"]);
        assert_eq!(split_args(" a , b "), vec!["a", "b"]);
        assert_eq!(split_args("a, , b"), vec!["a", "", "b"]);
        assert_eq!(split_args("a, b,"), vec!["a", "b"]);
        assert_eq!(split_args(","), vec![""]);
    }

    #[test]
    fn argvec_nesting_quotes_comments() {
        assert_eq!(split_args("f(a, b), c"), vec!["f(a, b)", "c"]);
        assert_eq!(split_args("[1,2], {3,4}"), vec!["[1,2]", "{3,4}"]);
        assert_eq!(split_args("\"a,b\", 'c,d'"), vec!["\"a,b\"", "'c,d'"]);
        assert_eq!(split_args("a // x, y\n, b"), vec!["a", "b"]);
        assert_eq!(split_args("a /* x, y */, b"), vec!["a", "b"]);
        assert_eq!(split_args("\"a // b\""), vec!["\"a // b\""]);
        assert_eq!(split_args("\"a\\\",b\", c"), vec!["\"a\\\",b\"", "c"]);
        assert_eq!(split_args("12/0800, -"), vec!["12/0800", "-"]);
    }

    #[test]
    fn spacevec() {
        assert_eq!(split_words("  a b\tc\n"), vec!["a", "b", "c"]);
        assert_eq!(
            split_words("a \"b c\" (d e)"),
            vec!["a", "\"b c\"", "(d e)"]
        );
        assert_eq!(split_words("a/* x */b"), vec!["a", "b"]);
        assert!(split_words("").is_empty());
    }

    #[test]
    fn unquoting() {
        assert_eq!(unquote("abc"), "abc");
        assert_eq!(unquote("\"a b\""), "a b");
        assert_eq!(unquote("\"a\\nb\\t\\\\\\\"\""), "a\nb\t\\\"");
        assert_eq!(unquote("\"\\x41\\102\""), "AB");
        assert_eq!(unquote("'a\\n'"), "a\\n");
        assert_eq!(unquote("x\"y z\"'w'"), "xy zw");
        assert_eq!(unquote("\"\\<41 42>\""), "AB");
        assert_eq!(unquote("\"unterminated"), "unterminated");
        assert_eq!(unquote("\"\\"), "\\");
        assert_eq!(unquote("'"), "");
    }

    #[test]
    fn keywords() {
        assert_eq!(split_keyword("MTU 1500"), Some(("MTU", "1500")));
        assert_eq!(split_keyword("ETHER_2  x y"), Some(("ETHER_2", "x y")));
        assert_eq!(split_keyword("ACTIVE"), Some(("ACTIVE", "")));
        assert_eq!(split_keyword("_X 1"), Some(("_X", "1")));
        assert_eq!(split_keyword("Mtu 1"), None);
        assert_eq!(split_keyword("MTU:1"), None);
        assert_eq!(split_keyword("1A 2"), None);
        assert_eq!(split_keyword(""), None);
    }

    #[test]
    fn integers() {
        assert_eq!(parse_u32("42"), Ok(42));
        assert_eq!(parse_u32("0x1F"), Ok(31));
        assert_eq!(parse_u32("017"), Ok(15));
        assert_eq!(parse_u32("0"), Ok(0));
        assert_eq!(parse_u32("0b101"), Ok(5));
        assert!(parse_u32("4294967296").is_err());
        assert!(parse_u32("-1").is_err());
        assert!(parse_u32("08").is_err());
        assert!(parse_u32("").is_err());
        assert!(parse_u32("1x").is_err());
        assert_eq!(parse_u64("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_i64("-9223372036854775808"), Ok(i64::MIN));
        assert_eq!(parse_i64("-0x10"), Ok(-16));
        assert!(parse_i64("9223372036854775808").is_err());
        assert_eq!(parse_usize("+7"), Ok(7));
        assert_eq!(parse_u32("x"), Err("expected integer".into()));
    }

    #[test]
    fn overflowing_integers_are_out_of_range() {
        let u32_range = "integer out of range (0 to 4294967295)".to_string();
        assert_eq!(parse_u32("99999999999999999999999"), Err(u32_range.clone()));
        // More digits than any integer type holds.
        assert_eq!(parse_u32(&"9".repeat(60)), Err(u32_range.clone()));
        assert_eq!(parse_u32("0x1ffffffff"), Err(u32_range.clone()));
        assert_eq!(parse_u32("-1"), Err(u32_range));
        assert_eq!(
            parse_i64("-9223372036854775809"),
            Err("integer out of range (-9223372036854775808 to 9223372036854775807)".into())
        );
        assert_eq!(
            parse_u64("18446744073709551616"),
            Err("integer out of range (0 to 18446744073709551615)".into())
        );
        assert_eq!(parse_int_range("-5", -5, 5), Ok(-5));
        assert_eq!(
            parse_int_range("6", -5, 5),
            Err("integer out of range (-5 to 5)".into())
        );
        assert_eq!(parse_int_range("9z", 0, 5), Err("expected integer".into()));
    }

    #[test]
    fn booleans_and_reals() {
        assert_eq!(parse_bool("true"), Ok(true));
        assert_eq!(parse_bool("NO"), Ok(false));
        assert_eq!(parse_bool("1"), Ok(true));
        assert!(parse_bool("maybe").is_err());
        assert_eq!(parse_f64("1.5"), Ok(1.5));
        assert_eq!(parse_f64("-2e3"), Ok(-2000.0));
        assert!(parse_f64("inf").is_err());
        assert!(parse_f64("nan").is_err());
    }

    #[test]
    fn addresses() {
        assert_eq!(parse_ip4("10.0.0.1"), Ok([10, 0, 0, 1]));
        assert!(parse_ip4("10.0.0").is_err());
        assert!(parse_ip4("10.0.0.256").is_err());
        assert!(parse_ip4("10.0.0.1.2").is_err());
        assert_eq!(parse_ip4("a"), Err("expected IP address".into()));
        assert_eq!(
            parse_ip_prefix("10.1.0.0/16"),
            Ok(([10, 1, 0, 0], [255, 255, 0, 0]))
        );
        assert_eq!(
            parse_ip_prefix("10.1.0.0/255.255.255.0"),
            Ok(([10, 1, 0, 0], [255, 255, 255, 0]))
        );
        assert_eq!(parse_ip_prefix("1.2.3.4"), Ok(([1, 2, 3, 4], [255; 4])));
        assert_eq!(parse_ip_prefix("0.0.0.0/0"), Ok(([0; 4], [0; 4])));
        assert!(parse_ip_prefix("1.2.3.4/33").is_err());
        assert!(parse_ip_prefix("1.2.3.4/").is_err());
        assert_eq!(mask_len([255, 255, 240, 0]), Some(20));
        assert_eq!(mask_len([255, 0, 255, 0]), None);
        assert_eq!(
            parse_ether("00:11:22:aa:BB:c"),
            Ok([0, 0x11, 0x22, 0xaa, 0xbb, 0x0c])
        );
        assert_eq!(
            parse_ether("00-11-22-33-44-55"),
            Ok([0, 0x11, 0x22, 0x33, 0x44, 0x55])
        );
        assert_eq!(
            parse_ether("0011.2233.4455"),
            Ok([0, 0x11, 0x22, 0x33, 0x44, 0x55])
        );
        assert!(parse_ether("00:11:22:33:44").is_err());
        assert!(parse_ether("00:11:22:33:44:555").is_err());
    }

    #[test]
    fn times_and_rates() {
        assert_eq!(parse_seconds("1"), Ok(1.0));
        assert_eq!(parse_seconds("1.5"), Ok(1.5));
        assert!((parse_seconds("10ms").expect("ok") - 0.01).abs() < 1e-12);
        assert_eq!(parse_seconds("2s"), Ok(2.0));
        assert_eq!(parse_seconds("1min"), Ok(60.0));
        assert_eq!(parse_seconds("1h"), Ok(3600.0));
        assert!((parse_seconds("500us").expect("ok") - 0.0005).abs() < 1e-12);
        assert!((parse_seconds("100ns").expect("ok") - 1e-7).abs() < 1e-15);
        assert!(parse_seconds("1 parsec").is_err());
        assert!(parse_seconds("-1").is_err());
        assert_eq!(parse_timestamp("1600000000.000000"), Ok((1_600_000_000, 0)));
        assert_eq!(parse_timestamp("1.5"), Ok((1, 500_000_000)));
        assert_eq!(parse_timestamp("2.0000000019"), Ok((2, 1)));
        assert_eq!(parse_timestamp("-1.25"), Ok((-2, 750_000_000)));
        assert!(parse_timestamp("x").is_err());
        assert!(parse_timestamp(".").is_err());
        assert_eq!(parse_bandwidth("10Mbps"), Ok(1.25e6));
        assert_eq!(parse_bandwidth("1Gbps"), Ok(1.25e8));
        assert_eq!(parse_bandwidth("100kbps"), Ok(12500.0));
        assert_eq!(parse_bandwidth("2MBps"), Ok(2e6));
        assert_eq!(parse_bandwidth("500"), Ok(500.0));
        assert_eq!(parse_bandwidth("100kb/s"), Ok(12500.0));
        assert_eq!(parse_bandwidth("3KB/s"), Ok(3000.0));
        assert_eq!(parse_bandwidth("8baud"), Ok(1.0));
        assert!(parse_bandwidth("10 furlongs").is_err());
        assert_eq!(parse_rate("10k"), Ok(10000.0));
        assert_eq!(parse_rate("2.5Mpps"), Ok(2.5e6));
        assert_eq!(parse_rate("100"), Ok(100.0));
    }
}
