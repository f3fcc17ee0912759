//! The error every policy operation returns.

use std::fmt;

/// A position in a `.nfp` file: 1-based line and column (in characters).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pos {
    /// Line, from 1; 0 when the error concerns the whole file.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl Pos {
    /// Line `line`, column `column`.
    pub const fn new(line: usize, column: usize) -> Pos {
        Pos { line, column }
    }

    /// No position: the error concerns the whole file.
    pub const FILE: Pos = Pos { line: 0, column: 0 };
}

/// A policy error: where it is and what is wrong.
///
/// Displays as `FILE:LINE:COL: error: MESSAGE` (or `FILE: error: MESSAGE`
/// when it concerns the whole file).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct PolicyError {
    /// The policy file's name as given.
    pub file: String,
    /// Where.
    pub pos: Pos,
    /// What is wrong, and where possible what to do about it.
    pub message: String,
}

impl PolicyError {
    /// An error at `pos` of `file`.
    pub fn new(file: &str, pos: Pos, message: impl Into<String>) -> PolicyError {
        PolicyError {
            file: file.to_string(),
            pos,
            message: message.into(),
        }
    }
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pos.line == 0 {
            write!(f, "{}: error: {}", self.file, self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: error: {}",
                self.file, self.pos.line, self.pos.column, self.message
            )
        }
    }
}

/// Names in `candidates` close to `name` (same letters ignoring case, or
/// at most two edits apart), best first.
pub(crate) fn similar<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Vec<&'a str> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let d = if c.to_lowercase() == lower {
                0
            } else {
                edit_distance(&lower, &c.to_lowercase())
            };
            let limit = if name.chars().count() <= 3 { 1 } else { 2 };
            (d <= limit).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored.into_iter().map(|(_, c)| c).collect()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// `; did you mean `x`?` or nothing.
pub(crate) fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> String {
    match similar(name, candidates).first() {
        Some(s) => format!("; did you mean `{s}`?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display() {
        let e = PolicyError::new("chain.nfp", Pos::new(3, 7), "unknown network function `fx`");
        assert_eq!(
            e.to_string(),
            "chain.nfp:3:7: error: unknown network function `fx`"
        );
        let e = PolicyError::new("chain.nfp", Pos::FILE, "cannot read: gone");
        assert_eq!(e.to_string(), "chain.nfp: error: cannot read: gone");
    }

    #[test]
    fn suggestions() {
        assert_eq!(similar("fww", ["fw", "vpn", "mon"]), ["fw"]);
        assert_eq!(similar("VPN", ["fw", "vpn"]), ["vpn"]);
        assert_eq!(similar("firewal", ["firewall", "ids"]), ["firewall"]);
        assert!(similar("zzz", ["fw", "vpn"]).is_empty());
        assert_eq!(
            did_you_mean("monitr", ["monitor"]),
            "; did you mean `monitor`?"
        );
    }
}
