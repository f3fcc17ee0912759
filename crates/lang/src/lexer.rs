//! Tokens of the configuration language.
//!
//! The lexer is driven by the parser: configuration strings (the text
//! between the parentheses of `Class(...)`) are not tokens but raw text,
//! read with [`Lexer::config`] right after the parser consumed the `(`.

use crate::diag::{FileId, Span};

/// The kind of a token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// An identifier: letters, digits, `_`, `@`, and single `/` between
    /// them.
    Ident(String),
    /// A parameter such as `$name` (stored without the `$`).
    Variable(String),
    /// `elementclass`
    ElementClass,
    /// `require`
    Require,
    /// `provide`
    Provide,
    /// `define`
    Define,
    /// `->`
    Arrow,
    /// `=>`
    DoubleArrow,
    /// `::`
    DoubleColon,
    /// `||`
    DoubleBar,
    /// `...`
    Ellipsis,
    /// Any other single character (`;`, `,`, `(`, `)`, `[`, `]`, `{`, `}`,
    /// `|`, or an invalid character).
    Char(char),
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token is quoted in messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => s.clone(),
            Tok::Variable(s) => format!("${s}"),
            Tok::ElementClass => "elementclass".into(),
            Tok::Require => "require".into(),
            Tok::Provide => "provide".into(),
            Tok::Define => "define".into(),
            Tok::Arrow => "->".into(),
            Tok::DoubleArrow => "=>".into(),
            Tok::DoubleColon => "::".into(),
            Tok::DoubleBar => "||".into(),
            Tok::Ellipsis => "...".into(),
            Tok::Char(c) => c.to_string(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// A token and where it is.
#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Reads tokens from one file.
#[derive(Clone)]
pub(crate) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    file: FileId,
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'@'
}

/// Returns the index just past the comment starting at `i`, if any.
pub(crate) fn comment_end(b: &[u8], i: usize) -> Option<usize> {
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

/// Returns the index just past the quoted string starting at `i`.
pub(crate) fn quote_end(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == b'\\' && q == b'"' {
            j += 2;
        } else if b[j] == q {
            return j + 1;
        } else {
            j += 1;
        }
    }
    b.len()
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(text: &'a str, file: FileId) -> Self {
        Lexer { text, pos: 0, file }
    }

    /// The current byte offset.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start, end)
    }

    /// Skips whitespace, comments and `#` line directives.
    fn skip_trivia(&mut self) {
        let b = self.text.as_bytes();
        loop {
            while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if let Some(end) = comment_end(b, self.pos) {
                self.pos = end;
                continue;
            }
            let at_line_start =
                self.pos == 0 || matches!(b.get(self.pos.wrapping_sub(1)), Some(b'\n' | b'\r'));
            if b.get(self.pos) == Some(&b'#') && at_line_start {
                while self.pos < b.len() && b[self.pos] != b'\n' && b[self.pos] != b'\r' {
                    self.pos += 1;
                }
                continue;
            }
            return;
        }
    }

    /// Reads the next token.
    pub(crate) fn next_token(&mut self) -> Token {
        self.skip_trivia();
        let b = self.text.as_bytes();
        let start = self.pos;
        let Some(&c) = b.get(start) else {
            return Token {
                tok: Tok::Eof,
                span: self.span(start, start),
            };
        };
        if is_ident_byte(c) {
            let mut j = start + 1;
            loop {
                while j < b.len() && is_ident_byte(b[j]) {
                    j += 1;
                }
                if j + 1 < b.len() && b[j] == b'/' && is_ident_byte(b[j + 1]) {
                    j += 1;
                } else {
                    break;
                }
            }
            self.pos = j;
            let word = &self.text[start..j];
            let tok = match word {
                "elementclass" => Tok::ElementClass,
                "require" => Tok::Require,
                "provide" => Tok::Provide,
                "define" => Tok::Define,
                _ => Tok::Ident(word.to_string()),
            };
            return Token {
                tok,
                span: self.span(start, j),
            };
        }
        if c == b'$' {
            let mut j = start + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if j > start + 1 {
                self.pos = j;
                return Token {
                    tok: Tok::Variable(self.text[start + 1..j].to_string()),
                    span: self.span(start, j),
                };
            }
        }
        let two = (c, b.get(start + 1).copied());
        let tok2 = match two {
            (b'-', Some(b'>')) => Some(Tok::Arrow),
            (b'=', Some(b'>')) => Some(Tok::DoubleArrow),
            (b':', Some(b':')) => Some(Tok::DoubleColon),
            (b'|', Some(b'|')) => Some(Tok::DoubleBar),
            _ => None,
        };
        if let Some(tok) = tok2 {
            self.pos = start + 2;
            return Token {
                tok,
                span: self.span(start, start + 2),
            };
        }
        if self.text[start..].starts_with("...") {
            self.pos = start + 3;
            return Token {
                tok: Tok::Ellipsis,
                span: self.span(start, start + 3),
            };
        }
        let ch = self.text[start..].chars().next().unwrap_or('\0');
        self.pos = start + ch.len_utf8();
        Token {
            tok: Tok::Char(ch),
            span: self.span(start, self.pos),
        }
    }

    /// Reads a configuration string: the raw text up to the `)` that
    /// balances an already consumed `(`. The closing parenthesis is
    /// consumed too; the returned span covers the text only. The third
    /// value is `false` if the input ended before the parenthesis.
    pub(crate) fn config(&mut self) -> (String, Span, bool) {
        let b = self.text.as_bytes();
        let start = self.pos;
        let mut depth = 1usize;
        let mut i = start;
        // `# LINE "FILE"` lines inside the string (from cpp) are not part
        // of it: they become spaces, so offsets stay exact.
        let mut directives: Vec<(usize, usize)> = Vec::new();
        while i < b.len() {
            match b[i] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        self.pos = i + 1;
                        return (
                            blank(&self.text[start..i], start, &directives),
                            self.span(start, i),
                            true,
                        );
                    }
                }
                b'#' if at_line_start(b, i) && is_line_directive(&b[i..]) => {
                    let end = b[i..]
                        .iter()
                        .position(|&c| c == b'\n')
                        .map_or(b.len(), |k| i + k);
                    directives.push((i, end));
                    i = end;
                    continue;
                }
                b'"' | b'\'' => {
                    i = quote_end(b, i);
                    continue;
                }
                b'\\' if b.get(i + 1) == Some(&b'<') => {
                    while i < b.len() && b[i] != b'>' {
                        i += 1;
                    }
                }
                b'/' => {
                    if let Some(end) = comment_end(b, i) {
                        i = end;
                        continue;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        self.pos = b.len();
        let end = b.len();
        (
            blank(&self.text[start..end], start, &directives),
            self.span(start, end),
            false,
        )
    }
}

/// True if byte `i` begins its line (only blanks before it).
fn at_line_start(b: &[u8], i: usize) -> bool {
    b[..i]
        .iter()
        .rev()
        .take_while(|&&c| c != b'\n')
        .all(|c| *c == b' ' || *c == b'\t')
        && b[..i].contains(&b'\n')
}

/// True for `# 12 "file"` and `#line 12` (what cpp leaves).
fn is_line_directive(b: &[u8]) -> bool {
    let mut i = 1;
    while b.get(i).is_some_and(|c| *c == b' ' || *c == b'\t') {
        i += 1;
    }
    if b[i..].starts_with(b"line") {
        i += 4;
        while b.get(i).is_some_and(|c| *c == b' ' || *c == b'\t') {
            i += 1;
        }
    }
    b.get(i).is_some_and(u8::is_ascii_digit)
}

/// `text` (which starts at byte `base` of the file) with the byte ranges
/// `ranges` replaced by spaces.
fn blank(text: &str, base: usize, ranges: &[(usize, usize)]) -> String {
    if ranges.is_empty() {
        return text.to_string();
    }
    let mut out = text.as_bytes().to_vec();
    for &(a, z) in ranges {
        for c in &mut out[a - base..z - base] {
            *c = b' ';
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let mut l = Lexer::new(s, FileId(0));
        let mut v = Vec::new();
        loop {
            let t = l.next_token();
            if t.tok == Tok::Eof {
                return v;
            }
            v.push(t.tok);
        }
    }

    #[test]
    fn tokens() {
        use Tok::*;
        assert_eq!(
            toks("a/b :: X@1 -> => || ... | $v_1 elementclass // c\n/* d */ x//y"),
            vec![
                Ident("a/b".into()),
                DoubleColon,
                Ident("X@1".into()),
                Arrow,
                DoubleArrow,
                DoubleBar,
                Ellipsis,
                Char('|'),
                Variable("v_1".into()),
                ElementClass,
                Ident("x".into()),
            ]
        );
        assert_eq!(toks("# 3 \"f\"\na\n#line 2\n"), vec![Ident("a".into())]);
        assert_eq!(
            toks("a/ b"),
            vec![Ident("a".into()), Char('/'), Ident("b".into())]
        );
        assert_eq!(toks("$"), vec![Char('$')]);
    }

    #[test]
    fn config_strings() {
        let src = "(a (b) \")\" ')' // )\n /* ) */ c) rest";
        let mut l = Lexer::new(src, FileId(0));
        assert_eq!(l.next_token().tok, Tok::Char('('));
        let (text, span, closed) = l.config();
        assert!(closed);
        assert_eq!(text, "a (b) \")\" ')' // )\n /* ) */ c");
        assert_eq!(span.start, 1);
        assert_eq!(l.next_token().tok, Tok::Ident("rest".into()));
        let mut l = Lexer::new("(abc", FileId(0));
        l.next_token();
        assert!(!l.config().2);
        // A cpp line directive inside a configuration is not part of it.
        let mut l = Lexer::new("(\n# 100 \"foobar.click\"\n\"test\")", FileId(0));
        l.next_token();
        let (text, _, _) = l.config();
        assert_eq!(text.trim(), "\"test\"");
        assert_eq!(text.len(), "\n# 100 \"foobar.click\"\n\"test\"".len());
    }
}
