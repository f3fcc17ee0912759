//! The `.nfp` policy language: syntax.
//!
//! One statement per line; `#` starts a comment; spaces are free; a
//! statement may end with `;`.
//!
//! ```text
//! # network functions
//! nf vpn = click("vpn.click")          # a Click configuration, relative to this file
//! nf fw  = instance("tenant-fw")       # a daemon instance (its configuration gives the profile)
//! nf ids = builtin(ids)                # a row of the paper's Table 1
//! nf mon = opaque(reads: src_ip dst_ip src_port dst_port, writes: , drops: no, reshapes: no)
//!
//! # rules, as the NFP paper writes them
//! order(vpn, before, mon)              # vpn's effects come before mon (parallel if the analysis allows)
//! priority(ids > fw)                   # run in parallel; on conflict ids wins
//! position(vpn, first)                 # pin to the head (or `last`: the tail) of the graph
//! ```
//!
//! `opaque(...)` takes `reads:` and `writes:` followed by field names
//! (`src_ip dst_ip src_port dst_port payload other`, or nothing),
//! `drops:` and `reshapes:` followed by `yes` or `no`; each is optional
//! and defaults to nothing / `no`. NF names are letters, digits, `_` and
//! `-`, starting with a letter or `_`; they are case-sensitive. Rules may
//! name NFs declared further down.

use crate::builtin::{builtin, builtins};
use crate::error::{did_you_mean, PolicyError, Pos};
use crate::policy::{Nf, NfSource, Place, Policy, Rule};
use crate::profile::{Field, FieldSet, Profile};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
}

impl Tok {
    fn show(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Str(s) => format!("\"{s}\""),
            Tok::Punct(c) => format!("`{c}`"),
        }
    }
}

struct Lexed {
    toks: Vec<(Tok, Pos)>,
    /// Position just after the last character of the statement.
    end: Pos,
}

/// Characters of a word token. Words are wider than NF names (which
/// [`valid_name`] checks) so that a path written without quotes is
/// reported as such rather than as a stray character.
fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_-./".contains(c)
}

fn valid_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn lex_line(file: &str, line_no: usize, line: &str) -> Result<Lexed, PolicyError> {
    let chars: Vec<char> = line.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let mut end = Pos::new(line_no, 1);
    while i < chars.len() {
        let c = chars[i];
        let pos = Pos::new(line_no, i + 1);
        if c == '#' {
            break;
        }
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if is_word_char(c) {
            let start = i;
            while i < chars.len() && is_word_char(chars[i]) {
                i += 1;
            }
            toks.push((Tok::Ident(chars[start..i].iter().collect()), pos));
        } else if c == '"' {
            let start = i + 1;
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += 1;
            }
            if i == chars.len() {
                return Err(PolicyError::new(
                    file,
                    pos,
                    "unterminated string: add the closing `\"` on this line",
                ));
            }
            toks.push((Tok::Str(chars[start..i].iter().collect()), pos));
            i += 1;
        } else if "(),=<>:;".contains(c) {
            toks.push((Tok::Punct(c), pos));
            i += 1;
        } else {
            return Err(PolicyError::new(
                file,
                pos,
                format!("unexpected character `{c}`"),
            ));
        }
        end = Pos::new(line_no, i + 1);
    }
    Ok(Lexed { toks, end })
}

/// A name as written, with where.
#[derive(Clone, Debug)]
struct Name {
    text: String,
    pos: Pos,
}

enum Stmt {
    Nf {
        name: Name,
        source: NfSource,
        profile: Option<Profile>,
    },
    Order {
        before: Name,
        after: Name,
        pos: Pos,
    },
    Priority {
        high: Name,
        low: Name,
        pos: Pos,
    },
    Position {
        nf: Name,
        place: Place,
        pos: Pos,
    },
}

struct Cursor<'a> {
    file: &'a str,
    toks: &'a [(Tok, Pos)],
    i: usize,
    end: Pos,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<&'a (Tok, Pos)> {
        self.toks.get(self.i)
    }

    fn pos(&self) -> Pos {
        self.peek().map_or(self.end, |t| t.1)
    }

    fn found(&self) -> String {
        self.peek()
            .map_or_else(|| "the end of the line".to_string(), |t| t.0.show())
    }

    fn err(&self, message: impl Into<String>) -> PolicyError {
        PolicyError::new(self.file, self.pos(), message)
    }

    fn punct(&mut self, c: char, context: &str) -> Result<Pos, PolicyError> {
        match self.peek() {
            Some((Tok::Punct(p), pos)) if *p == c => {
                self.i += 1;
                Ok(*pos)
            }
            _ => Err(self.err(format!("expected `{c}` {context}, found {}", self.found()))),
        }
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if matches!(self.peek(), Some((Tok::Punct(p), _)) if *p == c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self, what: &str) -> Result<Name, PolicyError> {
        match self.peek() {
            Some((Tok::Ident(s), pos)) => {
                self.i += 1;
                Ok(Name {
                    text: s.clone(),
                    pos: *pos,
                })
            }
            _ => Err(self.err(format!("expected {what}, found {}", self.found()))),
        }
    }

    fn string(&mut self, what: &str) -> Result<Name, PolicyError> {
        match self.peek() {
            Some((Tok::Str(s), pos)) => {
                self.i += 1;
                Ok(Name {
                    text: s.clone(),
                    pos: *pos,
                })
            }
            _ => Err(self.err(format!(
                "expected {what} in double quotes, found {}",
                self.found()
            ))),
        }
    }

    fn finish(&mut self) -> Result<(), PolicyError> {
        self.eat_punct(';');
        match self.peek() {
            None => Ok(()),
            Some((t, _)) => Err(self.err(format!(
                "unexpected {} after the statement: write one statement per line",
                t.show()
            ))),
        }
    }
}

const KEYWORDS: [&str; 4] = ["nf", "order", "priority", "position"];

fn statement(c: &mut Cursor<'_>) -> Result<Stmt, PolicyError> {
    let kw = c.ident("a statement (`nf`, `order`, `priority` or `position`)")?;
    let stmt = match kw.text.as_str() {
        "nf" => {
            let name = c.ident("the NF's name after `nf`")?;
            if !valid_name(&name.text) {
                return Err(PolicyError::new(
                    c.file,
                    name.pos,
                    format!(
                        "invalid NF name `{}`: use letters, digits, `_` and `-`, starting with a \
                         letter or `_`",
                        name.text
                    ),
                ));
            }
            c.punct('=', &format!("after `nf {}`", name.text))?;
            let (source, profile) = source(c)?;
            Stmt::Nf {
                name,
                source,
                profile,
            }
        }
        "order" => {
            c.punct('(', "after `order`")?;
            let before = c.ident("an NF name: order(A, before, B)")?;
            c.punct(',', "in order(A, before, B)")?;
            let word = c.ident("`before`: order(A, before, B)")?;
            if word.text != "before" {
                let hint = if word.text == "after" {
                    format!(
                        "; to run `{}` after the other NF, write order(OTHER, before, {})",
                        before.text, before.text
                    )
                } else {
                    String::new()
                };
                return Err(PolicyError::new(
                    c.file,
                    word.pos,
                    format!(
                        "expected `before` in order(A, before, B), found `{}`{hint}",
                        word.text
                    ),
                ));
            }
            c.punct(',', "in order(A, before, B)")?;
            let after = c.ident("an NF name: order(A, before, B)")?;
            c.punct(')', "to close order(A, before, B)")?;
            Stmt::Order {
                before,
                after,
                pos: kw.pos,
            }
        }
        "priority" => {
            c.punct('(', "after `priority`")?;
            let high = c.ident("an NF name: priority(A > B)")?;
            c.punct('>', "in priority(A > B)")?;
            let low = c.ident("an NF name: priority(A > B)")?;
            c.punct(')', "to close priority(A > B)")?;
            Stmt::Priority {
                high,
                low,
                pos: kw.pos,
            }
        }
        "position" => {
            c.punct('(', "after `position`")?;
            let nf = c.ident("an NF name: position(A, first|last)")?;
            c.punct(',', "in position(A, first|last)")?;
            let word = c.ident("`first` or `last`")?;
            let place = match word.text.as_str() {
                "first" => Place::First,
                "last" => Place::Last,
                other => {
                    return Err(PolicyError::new(
                        c.file,
                        word.pos,
                        format!("expected `first` or `last`, found `{other}`"),
                    ))
                }
            };
            c.punct(')', "to close position(A, first|last)")?;
            Stmt::Position {
                nf,
                place,
                pos: kw.pos,
            }
        }
        other => {
            return Err(PolicyError::new(
                c.file,
                kw.pos,
                format!(
                "unknown statement `{other}`: expected `nf`, `order`, `priority` or `position`{}",
                did_you_mean(other, KEYWORDS)
            ),
            ))
        }
    };
    c.finish()?;
    Ok(stmt)
}

const SOURCES: &str = "click(\"FILE\"), instance(\"NAME\"), builtin(NAME) or opaque(reads: ..., writes: ..., drops: no, reshapes: no)";

fn source(c: &mut Cursor<'_>) -> Result<(NfSource, Option<Profile>), PolicyError> {
    let kind = match c.peek() {
        Some((Tok::Ident(_), _)) => c.ident("")?,
        _ => return Err(c.err(format!("expected {SOURCES}, found {}", c.found()))),
    };
    c.punct('(', &format!("after `{}`", kind.text))?;
    let r = match kind.text.as_str() {
        "click" => {
            let path = c.string("the Click configuration's path")?;
            (NfSource::Click { path: path.text }, None)
        }
        "instance" => {
            let name = c.string("the instance name")?;
            (NfSource::Instance { name: name.text }, None)
        }
        "builtin" => {
            let name = match c.peek() {
                Some((Tok::Str(_), _)) => c.string("")?,
                _ => c.ident("a Table 1 profile name")?,
            };
            match builtin(&name.text) {
                Some(b) => (NfSource::Builtin { name: name.text }, Some(b.profile)),
                None => {
                    let names: Vec<&str> = builtins().iter().map(|b| b.name).collect();
                    return Err(PolicyError::new(
                        c.file,
                        name.pos,
                        format!(
                            "unknown builtin profile `{}`{} (builtins: {})",
                            name.text,
                            did_you_mean(&name.text, names.iter().copied()),
                            names.join(", ")
                        ),
                    ));
                }
            }
        }
        "opaque" => (NfSource::Opaque, Some(opaque(c)?)),
        other => {
            return Err(PolicyError::new(
                c.file,
                kind.pos,
                format!(
                    "unknown NF kind `{other}`: expected {SOURCES}{}",
                    did_you_mean(other, ["click", "instance", "builtin", "opaque"])
                ),
            ))
        }
    };
    if kind.text != "opaque" {
        c.punct(')', &format!("to close `{}(`", kind.text))?;
    }
    Ok(r)
}

/// The inside of `opaque(...)`, up to and including `)`.
fn opaque(c: &mut Cursor<'_>) -> Result<Profile, PolicyError> {
    let mut p = Profile::NONE;
    let mut seen: Vec<String> = Vec::new();
    if c.eat_punct(')') {
        return Ok(p);
    }
    loop {
        let key = c.ident("`reads`, `writes`, `drops` or `reshapes`")?;
        if seen.contains(&key.text) {
            return Err(PolicyError::new(
                c.file,
                key.pos,
                format!("`{}` is given twice in opaque(...)", key.text),
            ));
        }
        c.punct(':', &format!("after `{}`", key.text))?;
        match key.text.as_str() {
            "reads" | "writes" => {
                let mut set = FieldSet::EMPTY;
                while let Some((Tok::Ident(f), pos)) = c.peek() {
                    let field = Field::from_name(f).ok_or_else(|| {
                        let names: Vec<&str> = Field::ALL.iter().map(|f| f.name()).collect();
                        PolicyError::new(
                            c.file,
                            *pos,
                            format!(
                                "unknown field `{f}`: fields are {}{}",
                                names.join(" "),
                                did_you_mean(f, names.iter().copied())
                            ),
                        )
                    })?;
                    set = set.with(field);
                    c.i += 1;
                }
                if key.text == "reads" {
                    p.reads = set;
                } else {
                    p.writes = set;
                }
            }
            "drops" | "reshapes" => {
                let v = c.ident("`yes` or `no`")?;
                let b = match v.text.as_str() {
                    "yes" | "true" => true,
                    "no" | "false" => false,
                    other => {
                        return Err(PolicyError::new(
                            c.file,
                            v.pos,
                            format!(
                                "expected `yes` or `no` after `{}:`, found `{other}`",
                                key.text
                            ),
                        ))
                    }
                };
                if key.text == "drops" {
                    p.drops = b;
                } else {
                    p.reshapes = b;
                }
            }
            other => {
                return Err(PolicyError::new(
                    c.file,
                    key.pos,
                    format!(
                        "unknown opaque(...) key `{other}`: expected `reads`, `writes`, `drops` \
                         or `reshapes`{}",
                        did_you_mean(other, ["reads", "writes", "drops", "reshapes"])
                    ),
                ))
            }
        }
        seen.push(key.text);
        if c.eat_punct(')') {
            return Ok(p);
        }
        c.punct(',', "between opaque(...) entries (or `)` to close it)")?;
    }
}

/// Parses the policy `text` (named `file` in messages): syntax and names
/// only; [`crate::check`] looks for contradictions.
pub(crate) fn parse_text(file: &str, text: &str) -> Result<Policy, PolicyError> {
    let mut stmts = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let lexed = lex_line(file, n + 1, line)?;
        if lexed.toks.is_empty() {
            continue;
        }
        let mut c = Cursor {
            file,
            toks: &lexed.toks,
            i: 0,
            end: lexed.end,
        };
        stmts.push(statement(&mut c)?);
    }
    let mut policy = Policy {
        file: file.to_string(),
        base_dir: std::path::PathBuf::new(),
        nfs: Vec::new(),
        rules: Vec::new(),
    };
    for s in &stmts {
        if let Stmt::Nf {
            name,
            source,
            profile,
        } = s
        {
            if let Some(prev) = policy.nfs.iter().find(|n| n.name == name.text) {
                return Err(PolicyError::new(
                    file,
                    name.pos,
                    format!(
                        "network function `{}` is already declared at line {}",
                        name.text, prev.pos.line
                    ),
                ));
            }
            policy.nfs.push(Nf {
                name: name.text.clone(),
                source: source.clone(),
                profile: *profile,
                pos: name.pos,
            });
        }
    }
    let lookup = |n: &Name| -> Result<usize, PolicyError> {
        if let Some(i) = policy.nfs.iter().position(|nf| nf.name == n.text) {
            return Ok(i);
        }
        let names: Vec<&str> = policy.nfs.iter().map(|nf| nf.name.as_str()).collect();
        let message = if names.is_empty() {
            format!(
                "unknown network function `{}`: no NF is declared; declare it with `nf {} = ...`",
                n.text, n.text
            )
        } else {
            format!(
                "unknown network function `{}`{} (declared: {})",
                n.text,
                did_you_mean(&n.text, names.iter().copied()),
                names.join(", ")
            )
        };
        Err(PolicyError::new(file, n.pos, message))
    };
    let mut rules = Vec::new();
    for s in &stmts {
        let rule = match s {
            Stmt::Nf { .. } => continue,
            Stmt::Order { before, after, pos } => Rule::Order {
                before: lookup(before)?,
                after: lookup(after)?,
                pos: *pos,
            },
            Stmt::Priority { high, low, pos } => Rule::Priority {
                high: lookup(high)?,
                low: lookup(low)?,
                pos: *pos,
            },
            Stmt::Position { nf, place, pos } => Rule::Position {
                nf: lookup(nf)?,
                place: *place,
                pos: *pos,
            },
        };
        rules.push(rule);
    }
    policy.rules = rules;
    Ok(policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Policy, String> {
        parse_text("t.nfp", text).map_err(|e| e.to_string())
    }

    #[test]
    fn parses_every_statement() {
        let p = parse(
            "# a chain\n\
             nf vpn = click(\"vpn.click\")   # tunnel\n\
             nf fw  = instance(\"tenant-fw\")\n\
             nf ids=builtin(ids);\n\
             nf mon = opaque(reads: src_ip dst_ip src_port dst_port, writes: , drops: no, reshapes: no)\n\
             nf z = opaque()\n\
             \n\
             order(vpn, before, mon)\n\
             priority( ids > fw )\n\
             position(vpn, first);\n\
             position(z, last)\n",
        )
        .expect("valid");
        assert_eq!(p.nfs.len(), 5);
        assert_eq!(
            p.nfs[0].source,
            NfSource::Click {
                path: "vpn.click".into()
            }
        );
        assert_eq!(p.nfs[0].profile, None);
        assert_eq!(
            p.nfs[1].source,
            NfSource::Instance {
                name: "tenant-fw".into()
            }
        );
        assert_eq!(p.nfs[2].profile, builtin("ids").map(|b| b.profile));
        assert_eq!(p.nfs[3].profile, builtin("monitor").map(|b| b.profile));
        assert_eq!(p.nfs[3].pos, Pos::new(5, 4));
        assert_eq!(p.nfs[4].profile, Some(Profile::NONE));
        assert_eq!(
            p.rules,
            vec![
                Rule::Order {
                    before: 0,
                    after: 3,
                    pos: Pos::new(8, 1)
                },
                Rule::Priority {
                    high: 2,
                    low: 1,
                    pos: Pos::new(9, 1)
                },
                Rule::Position {
                    nf: 0,
                    place: Place::First,
                    pos: Pos::new(10, 1)
                },
                Rule::Position {
                    nf: 4,
                    place: Place::Last,
                    pos: Pos::new(11, 1)
                },
            ]
        );
    }

    #[test]
    fn opaque_profiles() {
        let p = parse(
            "nf x = opaque(writes: payload other, reads: payload, drops: yes, reshapes: true)",
        )
        .expect("valid");
        assert_eq!(
            p.nfs[0].profile.map(|p| p.to_string()).as_deref(),
            Some("reads: payload; writes: payload other; drops: yes; adds/removes headers: yes")
        );
    }

    #[test]
    fn rules_may_come_before_declarations() {
        let p = parse("order(a, before, b)\nnf a = builtin(nat)\nnf b = builtin(monitor)")
            .expect("valid");
        assert_eq!(p.rules.len(), 1);
    }

    #[test]
    fn syntax_errors() {
        let cases = [
            ("nf = builtin(nat)", "t.nfp:1:4: error: expected the NF's name after `nf`, found `=`"),
            ("nf a builtin(nat)", "t.nfp:1:6: error: expected `=` after `nf a`, found `builtin`"),
            (
                "nf a = builtin(firewal)",
                "t.nfp:1:16: error: unknown builtin profile `firewal`; did you mean `firewall`? \
                 (builtins: firewall, ids, gateway, lb, cache, vpn, nat, proxy, compressor, shaper, monitor)",
            ),
            (
                "nf a = clik(\"x\")",
                "t.nfp:1:8: error: unknown NF kind `clik`: expected click(\"FILE\"), \
                 instance(\"NAME\"), builtin(NAME) or opaque(reads: ..., writes: ..., drops: no, \
                 reshapes: no); did you mean `click`?",
            ),
            ("nf a = click(x.click)", "t.nfp:1:14: error: expected the Click configuration's path in double quotes, found `x.click`"),
            ("nf a.b = builtin(nat)", "t.nfp:1:4: error: invalid NF name `a.b`: use letters, digits, `_` and `-`, starting with a letter or `_`"),
            ("nf a = opaque(read: src_ip)", "t.nfp:1:15: error: unknown opaque(...) key `read`: expected `reads`, `writes`, `drops` or `reshapes`; did you mean `reads`?"),
            ("nf a = click(\"x.click)", "t.nfp:1:14: error: unterminated string: add the closing `\"` on this line"),
            ("nf a = opaque(reads: ttl)", "t.nfp:1:22: error: unknown field `ttl`: fields are src_ip dst_ip src_port dst_port payload other"),
            ("nf a = opaque(drops: maybe)", "t.nfp:1:22: error: expected `yes` or `no` after `drops:`, found `maybe`"),
            ("nf a = opaque(drops: no, drops: no)", "t.nfp:1:26: error: `drops` is given twice in opaque(...)"),
            ("nf a = opaque(reads: src_ip", "t.nfp:1:28: error: expected `,` between opaque(...) entries (or `)` to close it), found the end of the line"),
            ("ordr(a, before, b)", "t.nfp:1:1: error: unknown statement `ordr`: expected `nf`, `order`, `priority` or `position`; did you mean `order`?"),
            (
                "order(a, after, b)",
                "t.nfp:1:10: error: expected `before` in order(A, before, B), found `after`; to run \
                 `a` after the other NF, write order(OTHER, before, a)",
            ),
            ("order(a, before b)", "t.nfp:1:17: error: expected `,` in order(A, before, B), found `b`"),
            ("priority(a < b)", "t.nfp:1:12: error: expected `>` in priority(A > B), found `<`"),
            ("priority(a > b", "t.nfp:1:15: error: expected `)` to close priority(A > B), found the end of the line"),
            ("position(a, middle)", "t.nfp:1:13: error: expected `first` or `last`, found `middle`"),
            ("position(a, first) position(b, last)", "t.nfp:1:20: error: unexpected `position` after the statement: write one statement per line"),
            ("nf a = builtin(nat) $", "t.nfp:1:21: error: unexpected character `$`"),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).expect_err(text), want, "{text}");
        }
    }

    #[test]
    fn name_errors() {
        let decl = "nf vpn = builtin(vpn)\nnf fw = builtin(firewall)\nnf mon = builtin(monitor)\n";
        assert_eq!(
            parse(&format!("{decl}order(vpn, before, fww)")).expect_err("unknown"),
            "t.nfp:4:20: error: unknown network function `fww`; did you mean `fw`? (declared: vpn, fw, mon)"
        );
        assert_eq!(
            parse(&format!("{decl}priority(VPN > mon)")).expect_err("unknown"),
            "t.nfp:4:10: error: unknown network function `VPN`; did you mean `vpn`? (declared: vpn, fw, mon)"
        );
        assert_eq!(
            parse(&format!("{decl}position(lb, last)")).expect_err("unknown"),
            "t.nfp:4:10: error: unknown network function `lb` (declared: vpn, fw, mon)"
        );
        assert_eq!(
            parse("position(lb, last)").expect_err("unknown"),
            "t.nfp:1:10: error: unknown network function `lb`: no NF is declared; declare it with `nf lb = ...`"
        );
        assert_eq!(
            parse(&format!("{decl}nf fw = builtin(ids)")).expect_err("duplicate"),
            "t.nfp:4:4: error: network function `fw` is already declared at line 2"
        );
    }
}
