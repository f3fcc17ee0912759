//! Parser for `Classifier` patterns (`OFFSET/VALUE[%MASK]` clauses).

use crate::expr::{Expr, Space};

fn nibble(c: u8) -> (u32, u32) {
    match c {
        b'?' => (0, 0),
        b'0'..=b'9' => (u32::from(c - b'0'), 0xF),
        b'a'..=b'f' => (u32::from(c - b'a' + 10), 0xF),
        b'A'..=b'F' => (u32::from(c - b'A' + 10), 0xF),
        _ => (0, 0),
    }
}

fn is_hexq(c: u8) -> bool {
    c.is_ascii_hexdigit() || c == b'?'
}

/// Parse one Classifier pattern into an expression. Errors are returned
/// without the `pattern N:` prefix.
pub(crate) fn parse_pattern(arg: &str) -> Result<Expr, String> {
    let s = arg.trim().as_bytes();
    let len = s.len();
    let mut i = 0;
    if s == b"-" {
        i = 1;
    }
    let mut clauses = Vec::new();
    while i < len {
        while i < len && s[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= len {
            break;
        }
        let mut negated = false;
        if s[i] == b'!' {
            negated = true;
            i += 1;
            while i < len && s[i].is_ascii_whitespace() {
                i += 1;
            }
        }
        if i >= len || !s[i].is_ascii_digit() {
            return Err(match s.get(i) {
                Some(_) => format!("expected a digit at `{}`", token_at(s, i)),
                None => "expected a digit".to_string(),
            });
        }
        let mut offset: u64 = 0;
        while i < len && s[i].is_ascii_digit() {
            offset = offset * 10 + u64::from(s[i] - b'0');
            if offset > 0x00FF_FFFF {
                return Err("offset too large".to_string());
            }
            i += 1;
        }
        if i >= len || s[i] != b'/' {
            return Err("expected `/`".to_string());
        }
        i += 1;
        let value_pos = i;
        while i < len && is_hexq(s[i]) {
            i += 1;
        }
        let value_end = i;
        let mut mask_range = None;
        if i < len && s[i] == b'%' {
            i += 1;
            let mp = i;
            while i < len && is_hexq(s[i]) {
                i += 1;
            }
            mask_range = Some((mp, i));
        }
        let nvalue = value_end - value_pos;
        if nvalue < 2 {
            return Err("value has less than 2 hex digits".to_string());
        }
        if nvalue % 2 != 0 {
            return Err("value has odd number of hex digits".to_string());
        }
        if let Some((mp, me)) = mask_range {
            if me - mp != nvalue {
                let which = if me - mp > nvalue { "many" } else { "few" };
                return Err(format!("mask has too {which} hex digits"));
            }
        }
        // Assemble 4-byte aligned words, exactly like the reference program.
        let mut words: Vec<(u64, u32, u32)> = Vec::new();
        let mut off = offset;
        let mut vp = value_pos;
        let mut mp = mask_range.map(|(a, _)| a);
        while vp < value_end {
            let (vh, mh) = nibble(s[vp]);
            let (vl, ml) = nibble(s[vp + 1]);
            let v = (vh << 4) | vl;
            let mut m = (mh << 4) | ml;
            if let Some(p) = mp.as_mut() {
                let (mvh, mmh) = nibble(s[*p]);
                let (mvl, mml) = nibble(s[*p + 1]);
                m &= ((mvh << 4) | mvl) & ((mmh << 4) | mml);
                *p += 2;
            }
            vp += 2;
            let word_off = off / 4 * 4;
            let shift = 24 - 8 * (off % 4) as u32;
            match words.last_mut() {
                Some(w) if w.0 == word_off => {
                    w.1 |= (v & m) << shift;
                    w.2 |= m << shift;
                }
                _ => words.push((word_off, (v & m) << shift, m << shift)),
            }
            off += 1;
        }
        let clause = Expr::and(
            words
                .into_iter()
                .map(|(o, v, m)| Expr::test(Space::Primary, o as u32, m, v, false))
                .collect(),
        );
        clauses.push(if negated { Expr::not(clause) } else { clause });
    }
    Ok(Expr::and(clauses))
}

fn token_at(s: &[u8], i: usize) -> String {
    let end = s[i..]
        .iter()
        .position(|c| c.is_ascii_whitespace())
        .map_or(s.len(), |p| i + p);
    String::from_utf8_lossy(&s[i..end]).into_owned()
}
