//! Parser for the subset of Snort/Suricata rule syntax that `IDSMatcher`
//! supports.
//!
//! A rule file holds one rule per logical line (a line ending in `\`
//! continues on the next), `#` comment lines, blank lines, and variable
//! definitions (`var`, `ipvar`, `portvar NAME VALUE`). A rule is
//!
//! ```text
//! ACTION PROTO SRC SPORT -> DST DPORT (OPTION; OPTION:VALUE; ...)
//! ```
//!
//! with ACTION one of `alert log pass drop`, PROTO one of `tcp udp icmp
//! icmpv6 ip` (`icmp6` and `ipv6-icmp` name ICMPv6 too), `<>` instead of
//! `->` for either direction, addresses as `any`, `a.b.c.d`, `a.b.c.d/len`,
//! IPv6 `x:y::z` and `x:y::/len`, `$VAR`, `!X` and lists `[X,Y,...]`
//! (nested, families mixed), ports as `any`, `N`, `lo:hi`, `:hi`, `lo:`,
//! `$VAR`, `!X` and lists. An IPv4 network never contains an IPv6 address
//! nor the other way round (so `!10.0.0.0/8` matches every IPv6 address).
//!
//! Problems come in two kinds:
//! - **errors** (malformed syntax, a bad address or number, a missing or
//!   duplicate `sid`): the whole file is rejected, every error reported as
//!   `FILE:LINE:COLUMN: message`;
//! - **skipped rules**: a rule that is well formed but uses something this
//!   matcher does not implement (`pcre`, `flow`, `byte_test`, HTTP buffers,
//!   an unknown option, another protocol or action, an undefined
//!   variable) is left out with a diagnostic
//!   `FILE:LINE:COLUMN: rule skipped: unsupported option `pcre`` and
//!   counted, so that a large operator ruleset still loads.

use std::collections::{HashMap, HashSet};
use std::fmt;

/// A diagnostic about one place of a rule file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diag {
    /// The file name, as given.
    pub file: String,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column (bytes).
    pub col: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

/// What a matching rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    /// Stops matching: the packet is not alerted on by later rules.
    Pass,
    /// Alerts, and the packet is counted as dropped.
    Drop,
    /// Alerts.
    Alert,
    /// Logs only: the packet keeps going to output 0.
    Log,
}

impl Action {
    /// The keyword.
    pub fn name(self) -> &'static str {
        match self {
            Action::Pass => "pass",
            Action::Drop => "drop",
            Action::Alert => "alert",
            Action::Log => "log",
        }
    }
}

/// The protocol a rule applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    /// Any IP packet, IPv4 or IPv6.
    Ip,
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
    /// ICMP (IPv4).
    Icmp,
    /// ICMPv6.
    Icmp6,
}

/// What one element of an address or port expression stands for.
pub trait Leaf {
    /// The value tested (an address or a port).
    type Value: Copy;
    /// True if `v` lies inside.
    fn contains(&self, v: Self::Value) -> bool;
}

/// A packet's address, by family (host order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addr {
    /// An IPv4 address.
    V4(u32),
    /// An IPv6 address.
    V6(u128),
}

impl Default for Addr {
    fn default() -> Self {
        Addr::V4(0)
    }
}

/// A network: address and mask, host order, address already masked. A
/// network of one family contains no address of the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Net {
    /// An IPv4 network.
    V4(u32, u32),
    /// An IPv6 network.
    V6(u128, u128),
}

impl Leaf for Net {
    type Value = Addr;
    #[inline]
    fn contains(&self, ip: Addr) -> bool {
        match (*self, ip) {
            (Net::V4(n, m), Addr::V4(a)) => a & m == n,
            (Net::V6(n, m), Addr::V6(a)) => a & m == n,
            _ => false,
        }
    }
}

/// An inclusive port range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range(pub u16, pub u16);

impl Leaf for Range {
    type Value = u16;
    fn contains(&self, port: u16) -> bool {
        (self.0..=self.1).contains(&port)
    }
}

/// An address or port expression: `any`, a value, a list, a negation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetExpr<L> {
    /// Anything.
    Any,
    /// One network or port range.
    Leaf(L),
    /// A list: matches when some positive element matches (or there is
    /// none) and no negated element's inner expression matches.
    List(Vec<SetExpr<L>>),
    /// A negation.
    Not(Box<SetExpr<L>>),
}

/// An address expression.
pub type AddrExpr = SetExpr<Net>;
/// A port expression.
pub type PortExpr = SetExpr<Range>;

impl<L: Leaf> SetExpr<L> {
    /// True if `v` matches.
    pub fn matches(&self, v: L::Value) -> bool {
        match self {
            SetExpr::Any => true,
            SetExpr::Leaf(l) => l.contains(v),
            SetExpr::Not(x) => !x.matches(v),
            SetExpr::List(items) => {
                let mut any_pos = false;
                let mut pos_hit = false;
                for x in items {
                    match x {
                        SetExpr::Not(inner) => {
                            if inner.matches(v) {
                                return false;
                            }
                        }
                        _ => {
                            any_pos = true;
                            pos_hit = pos_hit || x.matches(v);
                        }
                    }
                }
                pos_hit || !any_pos
            }
        }
    }

    fn is_any(&self) -> bool {
        matches!(self, SetExpr::Any)
    }
}

/// One `content` option with its modifiers.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Content {
    /// The bytes to find.
    pub pattern: Vec<u8>,
    /// ASCII case-insensitive (`nocase`).
    pub nocase: bool,
    /// `content:!"..."`: the bytes must not occur in the window.
    pub negated: bool,
    /// `offset`: first payload byte to search from.
    pub offset: u32,
    /// `depth`: search at most this many bytes from `offset`.
    pub depth: Option<u32>,
    /// `distance`: start this many bytes after the previous match's end.
    pub distance: Option<i32>,
    /// `within`: the match must end at most this many bytes after the
    /// previous match's end (plus `distance`).
    pub within: Option<u32>,
    /// `fast_pattern`: use this content for the multi-pattern pass.
    pub fast_pattern: bool,
}

impl Content {
    /// True if the content is placed relative to the previous one.
    pub fn relative(&self) -> bool {
        self.distance.is_some() || self.within.is_some()
    }
}

/// An inclusive range of integer values (`dsize`, `itype`, `icode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumRange {
    /// Lowest value.
    pub lo: u32,
    /// Highest value.
    pub hi: u32,
}

impl NumRange {
    /// True if `v` is in range.
    pub fn contains(&self, v: u32) -> bool {
        self.lo <= v && v <= self.hi
    }
}

/// A `flags` test on the TCP flags byte (plus CWR/ECE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagTest {
    /// The flags named.
    pub flags: u8,
    /// Flags to ignore.
    pub mask: u8,
    /// How to compare.
    pub mode: FlagMode,
}

/// How a [`FlagTest`] compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagMode {
    /// Exactly these flags (outside the mask).
    Exact,
    /// At least these flags (`+`).
    All,
    /// Any of these flags (`*`).
    Any,
    /// None of these flags (`!`).
    Not,
}

impl FlagTest {
    /// True if the TCP flags byte `f` passes.
    pub fn matches(&self, f: u8) -> bool {
        let f = f & !self.mask;
        match self.mode {
            FlagMode::Exact => f == self.flags,
            FlagMode::All => f & self.flags == self.flags,
            FlagMode::Any => f & self.flags != 0,
            FlagMode::Not => f & self.flags == 0,
        }
    }
}

/// A parsed rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// What to do on a match.
    pub action: Action,
    /// The protocol.
    pub proto: Proto,
    /// Source addresses.
    pub src: AddrExpr,
    /// Source ports.
    pub sport: PortExpr,
    /// Destination addresses.
    pub dst: AddrExpr,
    /// Destination ports.
    pub dport: PortExpr,
    /// `<>`: also matches with source and destination swapped.
    pub bidirectional: bool,
    /// `msg`.
    pub msg: String,
    /// The contents, in rule order.
    pub contents: Vec<Content>,
    /// `gid` (default 1).
    pub gid: u32,
    /// `sid`.
    pub sid: u32,
    /// `rev` (default 0).
    pub rev: u32,
    /// `classtype`, if given.
    pub classtype: Option<String>,
    /// `priority`, or the class type's, or 3.
    pub priority: u32,
    /// `dsize`: payload length range.
    pub dsize: Option<NumRange>,
    /// `flags`: TCP flags test.
    pub flags: Option<FlagTest>,
    /// `itype`: ICMP type range.
    pub itype: Option<NumRange>,
    /// `icode`: ICMP code range.
    pub icode: Option<NumRange>,
    /// Line of the rule in its file.
    pub line: usize,
}

/// A loaded rule file.
#[derive(Clone, Debug, Default)]
pub struct RuleSet {
    /// The rules, in file order.
    pub rules: Vec<Rule>,
    /// One diagnostic per skipped rule.
    pub skipped: Vec<Diag>,
}

/// Default priority of the common class types (Snort's
/// `classification.config`); 3 for others.
pub fn classtype_priority(c: &str) -> u32 {
    match c {
        "attempted-admin"
        | "attempted-user"
        | "shellcode-detect"
        | "successful-admin"
        | "successful-user"
        | "trojan-activity"
        | "unsuccessful-user"
        | "web-application-attack"
        | "inappropriate-content"
        | "policy-violation"
        | "default-login-attempt"
        | "exploit-kit"
        | "command-and-control"
        | "targeted-activity"
        | "credential-theft"
        | "domain-c2" => 1,
        "bad-unknown"
        | "attempted-dos"
        | "attempted-recon"
        | "denial-of-service"
        | "misc-attack"
        | "non-standard-protocol"
        | "rpc-portmap-decode"
        | "successful-dos"
        | "successful-recon-largescale"
        | "successful-recon-limited"
        | "suspicious-filename-detect"
        | "suspicious-login"
        | "system-call-detect"
        | "unusual-client-port-connection"
        | "web-application-activity" => 2,
        _ => 3,
    }
}

/// Options that only describe a rule: accepted and ignored.
const IGNORED: &[&str] = &["reference", "metadata", "rawbytes", "target"];

/// Why a rule could not be taken: a hard error or a skip.
enum Problem {
    Error(usize, String),
    Skip(usize, String),
}

fn err<T>(pos: usize, m: impl Into<String>) -> Result<T, Problem> {
    Err(Problem::Error(pos, m.into()))
}

fn skip<T>(pos: usize, m: impl Into<String>) -> Result<T, Problem> {
    Err(Problem::Skip(pos, m.into()))
}

/// A logical line: the text and where each physical piece starts.
struct Logical {
    text: String,
    /// (byte offset in `text`, physical line number).
    pieces: Vec<(usize, usize)>,
}

impl Logical {
    fn locate(&self, pos: usize) -> (usize, usize) {
        let mut at = self.pieces[0];
        for &p in &self.pieces {
            if p.0 <= pos {
                at = p;
            }
        }
        (at.1, pos - at.0 + 1)
    }
}

fn logical_lines(text: &str) -> Vec<Logical> {
    let mut out = Vec::new();
    let mut cur: Option<Logical> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let (body, cont) = match raw.trim_end().strip_suffix('\\') {
            Some(b) => (b, true),
            None => (raw, false),
        };
        let l = cur.get_or_insert_with(|| Logical {
            text: String::new(),
            pieces: Vec::new(),
        });
        l.pieces.push((l.text.len(), line_no));
        l.text.push_str(body);
        if !cont {
            out.extend(cur.take());
        }
    }
    out.extend(cur);
    out
}

/// The variables a rule file can use.
struct Vars<'a> {
    file: HashMap<String, String>,
    given: &'a [(String, String)],
}

impl Vars<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        self.given
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .or_else(|| self.file.get(name).map(String::as_str))
    }
}

/// Parses rule file `text` (named `file` in diagnostics). `vars` are
/// definitions given outside the file (the element's keywords); they take
/// precedence over the file's `var` lines.
pub fn parse(text: &str, file: &str, vars: &[(String, String)]) -> Result<RuleSet, Vec<Diag>> {
    let lines = logical_lines(text);
    let mut errors = Vec::new();
    let mut set = RuleSet::default();
    let diag = |l: &Logical, pos: usize, message: String| {
        let (line, col) = l.locate(pos);
        Diag {
            file: file.to_string(),
            line,
            col,
            message,
        }
    };
    // Variables first, so that a rule may use one defined further down.
    let mut v = Vars {
        file: HashMap::new(),
        given: vars,
    };
    for l in &lines {
        let t = l.text.trim_start();
        let lead = l.text.len() - t.len();
        let word = t.split_whitespace().next().unwrap_or("");
        if matches!(word, "var" | "ipvar" | "portvar") {
            let rest = t[word.len()..].trim_start();
            let name = rest.split_whitespace().next().unwrap_or("");
            let value = rest[name.len()..].trim();
            let ok_name =
                !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
            if !ok_name || value.is_empty() {
                errors.push(diag(l, lead, format!("malformed `{word}` line")));
            } else {
                v.file.insert(name.to_string(), value.to_string());
            }
        }
    }
    let mut sids: HashSet<(u32, u32)> = HashSet::new();
    for l in &lines {
        let t = l.text.trim_start();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let word = t.split_whitespace().next().unwrap_or("");
        if matches!(word, "var" | "ipvar" | "portvar") {
            continue;
        }
        let lead = l.text.len() - t.len();
        match parse_rule(&l.text, lead, &v) {
            Ok(mut r) => {
                r.line = l.locate(lead).0;
                if !sids.insert((r.gid, r.sid)) {
                    errors.push(diag(l, lead, format!("duplicate sid {}:{}", r.gid, r.sid)));
                    continue;
                }
                set.rules.push(r);
            }
            Err(Problem::Error(pos, m)) => errors.push(diag(l, pos, m)),
            Err(Problem::Skip(pos, m)) => {
                set.skipped.push(diag(l, pos, format!("rule skipped: {m}")))
            }
        }
    }
    if errors.is_empty() {
        Ok(set)
    } else {
        Err(errors)
    }
}

/// Splits the header at whitespace outside brackets: (offset, token).
fn header_tokens(s: &str, base: usize) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        let mut depth = 0i32;
        while i < b.len() && (depth > 0 || !b[i].is_ascii_whitespace()) {
            match b[i] {
                b'[' => depth += 1,
                b']' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
        out.push((base + start, &s[start..i]));
    }
    out
}

fn parse_rule(text: &str, lead: usize, vars: &Vars<'_>) -> Result<Rule, Problem> {
    let Some(open) = text.find('(') else {
        return err(lead, "expected `(` starting the rule options");
    };
    let close = match text.rfind(')') {
        Some(c) if c > open => c,
        _ => return err(text.len(), "expected `)` closing the rule options"),
    };
    if !text[close + 1..].trim().is_empty() {
        return err(close + 1, "text after the closing `)`");
    }
    let toks = header_tokens(&text[lead..open], lead);
    if toks.len() != 7 {
        return err(
            lead,
            format!(
                "expected `ACTION PROTO SRC SPORT -> DST DPORT (...)`, found {} header fields",
                toks.len()
            ),
        );
    }
    let action = match toks[0].1 {
        "alert" => Action::Alert,
        "log" => Action::Log,
        "pass" => Action::Pass,
        "drop" => Action::Drop,
        "reject" | "sdrop" | "rejectsrc" | "rejectdst" | "rejectboth" | "activate" | "dynamic" => {
            return skip(toks[0].0, format!("unsupported action `{}`", toks[0].1))
        }
        a => return err(toks[0].0, format!("unknown action `{a}`")),
    };
    let proto = match toks[1].1.to_ascii_lowercase().as_str() {
        "tcp" => Proto::Tcp,
        "udp" => Proto::Udp,
        "icmp" => Proto::Icmp,
        "icmpv6" | "icmp6" | "ipv6-icmp" => Proto::Icmp6,
        "ip" => Proto::Ip,
        p => return skip(toks[1].0, format!("unsupported protocol `{p}`")),
    };
    let src = parse_addr(toks[2].1, toks[2].0, vars, 0)?;
    let sport = parse_port(toks[3].1, toks[3].0, vars, 0)?;
    let bidirectional = match toks[4].1 {
        "->" => false,
        "<>" => true,
        d => return err(toks[4].0, format!("expected `->` or `<>`, found `{d}`")),
    };
    let dst = parse_addr(toks[5].1, toks[5].0, vars, 0)?;
    let dport = parse_port(toks[6].1, toks[6].0, vars, 0)?;
    if matches!(proto, Proto::Ip | Proto::Icmp | Proto::Icmp6)
        && !(sport.is_any() && dport.is_any())
    {
        let at = if sport.is_any() { toks[6].0 } else { toks[3].0 };
        return err(at, "ports must be `any` for ip and icmp rules");
    }
    let mut r = Rule {
        action,
        proto,
        src,
        sport,
        dst,
        dport,
        bidirectional,
        msg: String::new(),
        contents: Vec::new(),
        gid: 1,
        sid: 0,
        rev: 0,
        classtype: None,
        priority: 0,
        dsize: None,
        flags: None,
        itype: None,
        icode: None,
        line: 0,
    };
    let mut priority = None;
    let mut have_sid = false;
    for (pos, name, value) in split_options(&text[open + 1..close], open + 1)? {
        let need = |v: Option<(usize, &str)>| -> Result<(usize, String), Problem> {
            match v {
                Some((p, s)) if !s.trim().is_empty() => Ok((p, s.trim().to_string())),
                _ => err(pos, format!("option `{name}` needs a value")),
            }
        };
        let last = |r: &mut Rule| -> Result<usize, Problem> {
            if r.contents.is_empty() {
                err(pos, format!("`{name}` must follow a `content` option"))
            } else {
                Ok(r.contents.len() - 1)
            }
        };
        match name {
            "msg" => r.msg = unquote(need(value)?, pos, "msg")?.1,
            "content" => {
                let (vp, v) = need(value)?;
                let (negated, v, vp) = match v.strip_prefix('!') {
                    Some(rest) => (true, rest.trim_start().to_string(), vp + 1),
                    None => (false, v, vp),
                };
                let (qp, s) = unquote((vp, v), pos, "content")?;
                let pattern = content_bytes(&s, qp)?;
                if pattern.is_empty() {
                    return err(vp, "empty content");
                }
                r.contents.push(Content {
                    pattern,
                    negated,
                    ..Content::default()
                });
            }
            "nocase" => {
                let i = last(&mut r)?;
                r.contents[i].nocase = true;
            }
            "fast_pattern" => {
                let i = last(&mut r)?;
                r.contents[i].fast_pattern = true;
            }
            "offset" | "depth" | "distance" | "within" => {
                let i = last(&mut r)?;
                let (vp, v) = need(value)?;
                let n: i64 = v
                    .parse()
                    .or_else(|_| err(vp, format!("`{name}` expects an integer, found `{v}`")))?;
                let c = &mut r.contents[i];
                let absolute = name == "offset" || name == "depth";
                if (absolute && c.relative()) || (!absolute && (c.offset != 0 || c.depth.is_some()))
                {
                    return err(
                        pos,
                        format!("`{name}` mixes absolute (offset/depth) and relative (distance/within) modifiers"),
                    );
                }
                let range = if name == "distance" {
                    -65535..=65535
                } else {
                    0..=65535
                };
                if !range.contains(&n) {
                    return err(vp, format!("`{name}` out of range: {n}"));
                }
                match name {
                    "offset" => c.offset = n as u32,
                    "depth" => c.depth = Some(n as u32),
                    "distance" => c.distance = Some(n as i32),
                    _ => c.within = Some(n as u32),
                }
                let short = match name {
                    "depth" => c.depth,
                    "within" => c.within,
                    _ => None,
                };
                if short.is_some_and(|d| (d as usize) < c.pattern.len()) {
                    return err(
                        vp,
                        format!(
                            "`{name}` {n} is shorter than the content ({} bytes)",
                            c.pattern.len()
                        ),
                    );
                }
            }
            "sid" | "rev" | "gid" | "priority" => {
                let (vp, v) = need(value)?;
                let n: u32 = v.parse().or_else(|_| {
                    err(
                        vp,
                        format!("`{name}` expects an unsigned integer, found `{v}`"),
                    )
                })?;
                match name {
                    "sid" => {
                        r.sid = n;
                        have_sid = true;
                    }
                    "rev" => r.rev = n,
                    "gid" => r.gid = n,
                    _ => priority = Some(n),
                }
            }
            "classtype" => r.classtype = Some(need(value)?.1),
            "dsize" => {
                let (vp, v) = need(value)?;
                r.dsize = Some(num_range(&v, vp, name, 65535)?);
            }
            "itype" | "icode" => {
                let (vp, v) = need(value)?;
                if !matches!(proto, Proto::Icmp | Proto::Icmp6) {
                    return err(pos, format!("`{name}` needs an icmp or icmpv6 rule"));
                }
                let range = num_range(&v, vp, name, 255)?;
                if name == "itype" {
                    r.itype = Some(range);
                } else {
                    r.icode = Some(range);
                }
            }
            "flags" => {
                let (vp, v) = need(value)?;
                if proto != Proto::Tcp {
                    return err(pos, "`flags` needs a tcp rule");
                }
                r.flags = Some(flag_test(&v, vp)?);
            }
            n if IGNORED.contains(&n) => {}
            n => return skip(pos, format!("unsupported option `{n}`")),
        }
    }
    if !have_sid {
        return err(open, "rule has no `sid`");
    }
    r.priority = priority.unwrap_or_else(|| r.classtype.as_deref().map_or(3, classtype_priority));
    Ok(r)
}

/// Splits the option text at `;` outside quotes: (offset, name, value).
#[allow(clippy::type_complexity)]
fn split_options(
    s: &str,
    base: usize,
) -> Result<Vec<(usize, &str, Option<(usize, &str)>)>, Problem> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let (mut i, mut start, mut quoted) = (0, 0, false);
    while i <= b.len() {
        let c = b.get(i).copied();
        match c {
            Some(b'\\') => i += 1,
            Some(b'"') => quoted = !quoted,
            Some(b';') | None if !quoted => {
                let piece = &s[start..i];
                let t = piece.trim_start();
                let p = base + start + (piece.len() - t.len());
                if !t.trim().is_empty() {
                    let (name, value) = match t.find(':') {
                        Some(k) => {
                            let v = &t[k + 1..];
                            let vt = v.trim_start();
                            (t[..k].trim(), Some((p + k + 1 + v.len() - vt.len(), vt)))
                        }
                        None => (t.trim(), None),
                    };
                    if name.is_empty()
                        || !name.bytes().all(|x| {
                            x.is_ascii_alphanumeric() || x == b'_' || x == b'-' || x == b'.'
                        })
                    {
                        return err(p, format!("malformed option `{}`", t.trim()));
                    }
                    out.push((p, name, value));
                }
                start = i + 1;
            }
            None => return err(base + i, "unterminated quoted string"),
            _ => {}
        }
        i += 1;
    }
    Ok(out)
}

/// Removes the double quotes around a value and its `\` escapes; returns
/// the offset of the first byte inside the quotes.
fn unquote((vp, v): (usize, String), pos: usize, name: &str) -> Result<(usize, String), Problem> {
    let inner = match v.strip_prefix('"').and_then(|x| x.strip_suffix('"')) {
        Some(x) if v.len() >= 2 => x,
        _ => return err(pos, format!("`{name}` value must be in double quotes")),
    };
    let mut s = String::with_capacity(inner.len());
    let mut it = inner.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some(n) => s.push(n),
                None => return err(vp, format!("`{name}` ends in a lone `\\`")),
            }
        } else {
            s.push(c);
        }
    }
    Ok((vp + 1, s))
}

/// Turns content text (with `|hex|` runs) into bytes.
fn content_bytes(s: &str, base: usize) -> Result<Vec<u8>, Problem> {
    let mut out = Vec::new();
    let mut hex = false;
    let mut nib: Option<u8> = None;
    for (i, c) in s.char_indices() {
        if c == '|' {
            if hex && nib.is_some() {
                return err(base + i, "odd number of hex digits in content");
            }
            hex = !hex;
            continue;
        }
        if hex {
            if c.is_ascii_whitespace() {
                if nib.is_some() {
                    return err(base + i, "hex byte split by a space in content");
                }
                continue;
            }
            let Some(d) = c.to_digit(16) else {
                return err(base + i, format!("bad hex digit `{c}` in content"));
            };
            match nib.take() {
                Some(h) => out.push(h << 4 | d as u8),
                None => nib = Some(d as u8),
            }
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    if hex {
        return err(base + s.len(), "unterminated `|` hex run in content");
    }
    Ok(out)
}

fn num_range(v: &str, vp: usize, name: &str, max: u32) -> Result<NumRange, Problem> {
    let num = |s: &str| -> Result<u32, Problem> {
        match s.trim().parse::<u32>() {
            Ok(n) if n <= max => Ok(n),
            _ => err(vp, format!("`{name}`: bad number `{}`", s.trim())),
        }
    };
    let r = if let Some((a, b)) = v.split_once("<=>") {
        NumRange {
            lo: num(a)?,
            hi: num(b)?,
        }
    } else if let Some((a, b)) = v.split_once("<>") {
        let (a, b) = (num(a)?, num(b)?);
        if b <= a + 1 {
            return err(vp, format!("`{name}`: empty range `{v}`"));
        }
        NumRange {
            lo: a + 1,
            hi: b - 1,
        }
    } else if let Some(b) = v.strip_prefix('<') {
        let b = num(b)?;
        if b == 0 {
            return err(vp, format!("`{name}`: empty range `{v}`"));
        }
        NumRange { lo: 0, hi: b - 1 }
    } else if let Some(a) = v.strip_prefix('>') {
        let a = num(a)?;
        NumRange {
            lo: a.saturating_add(1),
            hi: u32::MAX,
        }
    } else {
        let n = num(v)?;
        NumRange { lo: n, hi: n }
    };
    if r.lo > r.hi {
        return err(vp, format!("`{name}`: empty range `{v}`"));
    }
    Ok(r)
}

fn flag_test(v: &str, vp: usize) -> Result<FlagTest, Problem> {
    let (spec, mask) = match v.split_once(',') {
        Some((s, m)) => (s.trim(), Some(m.trim())),
        None => (v.trim(), None),
    };
    let bits = |s: &str, allow_mod: bool| -> Result<(u8, Option<FlagMode>), Problem> {
        let mut f = 0u8;
        let mut mode = None;
        for c in s.chars() {
            f |= match c {
                'F' => 0x01,
                'S' => 0x02,
                'R' => 0x04,
                'P' => 0x08,
                'A' => 0x10,
                'U' => 0x20,
                'E' | '2' => 0x40,
                'C' | '1' => 0x80,
                '0' => 0,
                '+' | '*' | '!' if allow_mod && mode.is_none() => {
                    mode = Some(match c {
                        '+' => FlagMode::All,
                        '*' => FlagMode::Any,
                        _ => FlagMode::Not,
                    });
                    0
                }
                _ => return err(vp, format!("`flags`: bad flag `{c}`")),
            };
        }
        Ok((f, mode))
    };
    let (flags, mode) = bits(spec, true)?;
    let mask = match mask {
        Some(m) => bits(m, false)?.0,
        None => 0,
    };
    Ok(FlagTest {
        flags,
        mask,
        mode: mode.unwrap_or(FlagMode::Exact),
    })
}

const MAX_VAR_DEPTH: usize = 16;

/// Splits a list's inside at top-level commas: (offset, item).
fn list_items(s: &str, base: usize) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push((base + start, &s[start..i]));
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push((base + start, &s[start..]));
    out.into_iter()
        .map(|(p, t)| {
            let tt = t.trim_start();
            (p + t.len() - tt.len(), tt.trim_end())
        })
        .collect()
}

fn var_value<'a>(
    s: &str,
    pos: usize,
    vars: &'a Vars<'_>,
    depth: usize,
) -> Result<&'a str, Problem> {
    let name = &s[1..];
    if depth >= MAX_VAR_DEPTH {
        return err(pos, format!("variable `${name}` refers to itself"));
    }
    match vars.get(name) {
        Some(v) => Ok(v),
        None => skip(pos, format!("undefined variable `${name}`")),
    }
}

/// The syntax addresses and ports share: `!X`, `$VAR`, `[X, Y, ...]` and
/// `any`; anything else is a single value read by `leaf`. `what` names the
/// kind in error texts ("address" / "port").
fn parse_set<L>(
    s: &str,
    pos: usize,
    vars: &Vars<'_>,
    depth: usize,
    what: &str,
    leaf: &dyn Fn(&str, usize) -> Result<L, Problem>,
) -> Result<SetExpr<L>, Problem> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('!') {
        return Ok(SetExpr::Not(Box::new(parse_set(
            rest,
            pos + 1,
            vars,
            depth,
            what,
            leaf,
        )?)));
    }
    if s.starts_with('$') {
        let v = var_value(s, pos, vars, depth)?;
        // Errors inside a variable's value are reported at the use.
        return parse_set(v, pos, vars, depth + 1, what, leaf).map_err(|e| match e {
            Problem::Error(_, m) => Problem::Error(pos, format!("in `{s}`: {m}")),
            Problem::Skip(_, m) => Problem::Skip(pos, m),
        });
    }
    if let Some(inner) = s.strip_prefix('[') {
        let Some(inner) = inner.strip_suffix(']') else {
            let kind = if what == "port" { "ports" } else { what };
            return err(pos, format!("unbalanced `[` in {kind} `{s}`"));
        };
        let mut v = Vec::new();
        for (p, item) in list_items(inner, pos + 1) {
            if item.is_empty() {
                return err(p, format!("empty {what} list element"));
            }
            v.push(parse_set(item, p, vars, depth, what, leaf)?);
        }
        return Ok(SetExpr::List(v));
    }
    if s.eq_ignore_ascii_case("any") {
        return Ok(SetExpr::Any);
    }
    leaf(s, pos).map(SetExpr::Leaf)
}

fn parse_addr(s: &str, pos: usize, vars: &Vars<'_>, depth: usize) -> Result<AddrExpr, Problem> {
    parse_set(s, pos, vars, depth, "address", &|s, pos| {
        if s.contains(':') {
            let (a, len) = match s.split_once('/') {
                Some((a, l)) => match l.parse::<u32>() {
                    Ok(n) if n <= 128 => (a, n),
                    _ => return err(pos, format!("bad prefix length in `{s}`")),
                },
                None => (s, 128),
            };
            let ip: std::net::Ipv6Addr = match a.parse() {
                Ok(ip) => ip,
                Err(_) => return err(pos, format!("bad address `{s}`")),
            };
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            return Ok(Net::V6(u128::from(ip) & mask, mask));
        }
        let (a, len) = match s.split_once('/') {
            Some((a, l)) => match l.parse::<u32>() {
                Ok(n) if n <= 32 => (a, n),
                _ => return err(pos, format!("bad prefix length in `{s}`")),
            },
            None => (s, 32),
        };
        let ip: std::net::Ipv4Addr = match a.parse() {
            Ok(ip) => ip,
            Err(_) => return err(pos, format!("bad address `{s}`")),
        };
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        Ok(Net::V4(u32::from(ip) & mask, mask))
    })
}

fn parse_port(s: &str, pos: usize, vars: &Vars<'_>, depth: usize) -> Result<PortExpr, Problem> {
    parse_set(s, pos, vars, depth, "port", &|s, pos| {
        let num = |t: &str, dflt: u16| -> Result<u16, Problem> {
            if t.is_empty() {
                return Ok(dflt);
            }
            t.parse::<u16>()
                .or_else(|_| err(pos, format!("bad port `{s}`")))
        };
        match s.split_once(':') {
            Some((a, b)) => {
                if a.is_empty() && b.is_empty() {
                    return err(pos, format!("bad port `{s}`"));
                }
                let (lo, hi) = (num(a, 0)?, num(b, u16::MAX)?);
                if lo > hi {
                    return err(pos, format!("empty port range `{s}`"));
                }
                Ok(Range(lo, hi))
            }
            None => {
                if s.is_empty() {
                    return err(pos, "missing port");
                }
                let p = num(s, 0)?;
                Ok(Range(p, p))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Rule {
        let set = parse(text, "t.rules", &[]).expect("parses");
        assert!(set.skipped.is_empty(), "{:?}", set.skipped);
        assert_eq!(set.rules.len(), 1);
        set.rules.into_iter().next().expect("one rule")
    }

    fn errors(text: &str) -> Vec<String> {
        match parse(text, "t.rules", &[]) {
            Ok(s) => panic!("accepted: {:?}", s.rules),
            Err(e) => e.iter().map(|d| d.to_string()).collect(),
        }
    }

    fn skipped(text: &str) -> Vec<String> {
        let set = parse(text, "t.rules", &[]).expect("parses");
        set.skipped.iter().map(|d| d.to_string()).collect()
    }

    fn ip(s: &str) -> Addr {
        match s.parse::<std::net::IpAddr>().expect("ip") {
            std::net::IpAddr::V4(a) => Addr::V4(a.into()),
            std::net::IpAddr::V6(a) => Addr::V6(a.into()),
        }
    }

    #[test]
    fn full_rule() {
        let r = one(
            "alert tcp 10.0.0.0/8 any -> 192.168.1.5 80 (msg:\"WEB x \\\"q\\\"; y\"; \
             content:\"GET\"; offset:0; depth:3; content:\"|0d 0a|Host\"; nocase; distance:2; within:40; \
             sid:1000001; rev:3; classtype:web-application-attack; reference:url,example.org;)",
        );
        assert_eq!(r.action, Action::Alert);
        assert_eq!(r.proto, Proto::Tcp);
        assert_eq!(r.src, AddrExpr::Leaf(Net::V4(0x0a00_0000, 0xff00_0000)));
        assert_eq!(r.sport, PortExpr::Any);
        assert_eq!(r.dst, AddrExpr::Leaf(Net::V4(0xc0a8_0105, u32::MAX)));
        assert_eq!(r.dport, PortExpr::Leaf(Range(80, 80)));
        assert!(!r.bidirectional);
        assert_eq!(r.msg, "WEB x \"q\"; y");
        assert_eq!(r.contents.len(), 2);
        assert_eq!(r.contents[0].pattern, b"GET");
        assert_eq!(r.contents[0].depth, Some(3));
        assert_eq!(r.contents[1].pattern, b"\r\nHost");
        assert!(r.contents[1].nocase && !r.contents[0].nocase);
        assert_eq!(r.contents[1].distance, Some(2));
        assert_eq!(r.contents[1].within, Some(40));
        assert_eq!((r.gid, r.sid, r.rev), (1, 1000001, 3));
        assert_eq!(r.classtype.as_deref(), Some("web-application-attack"));
        assert_eq!(r.priority, 1);
        assert_eq!(r.line, 1);
    }

    #[test]
    fn actions_protocols_and_direction() {
        for (a, want) in [
            ("alert", Action::Alert),
            ("log", Action::Log),
            ("pass", Action::Pass),
            ("drop", Action::Drop),
        ] {
            assert_eq!(
                one(&format!("{a} ip any any -> any any (sid:1;)")).action,
                want
            );
        }
        for (p, want) in [
            ("tcp", Proto::Tcp),
            ("udp", Proto::Udp),
            ("icmp", Proto::Icmp),
            ("ICMPv6", Proto::Icmp6),
            ("ipv6-icmp", Proto::Icmp6),
            ("ip", Proto::Ip),
        ] {
            assert_eq!(
                one(&format!("alert {p} any any <> any any (sid:1;)")).proto,
                want
            );
        }
        assert!(one("alert udp any any <> any 53 (sid:1;)").bidirectional);
        assert_eq!(
            one("alert udp any any -> any 53 (sid:1; priority:7;)").priority,
            7
        );
        assert_eq!(one("alert udp any any -> any 53 (sid:1;)").priority, 3);
    }

    #[test]
    fn addresses_lists_negation_and_cidr() {
        let r = one(
            "alert ip [10.0.0.0/8,!10.1.0.0/16,192.168.0.1] any -> !172.16.0.0/12 any (sid:1;)",
        );
        assert!(r.src.matches(ip("10.2.3.4")));
        assert!(!r.src.matches(ip("10.1.3.4")));
        assert!(r.src.matches(ip("192.168.0.1")));
        assert!(!r.src.matches(ip("192.168.0.2")));
        assert!(r.dst.matches(ip("8.8.8.8")));
        assert!(!r.dst.matches(ip("172.20.0.1")));
        // Only negatives: everything else matches.
        let r = one("alert ip [!1.2.3.4, !5.6.7.0/24] any -> [1.0.0.0/8,[2.0.0.0/8]] any (sid:1;)");
        assert!(r.src.matches(ip("9.9.9.9")));
        assert!(!r.src.matches(ip("5.6.7.9")));
        assert!(r.dst.matches(ip("2.3.4.5")));
        assert!(!r.dst.matches(ip("3.3.4.5")));
        assert_eq!(
            one("alert ip 0.0.0.0/0 any -> any any (sid:1;)").src,
            AddrExpr::Leaf(Net::V4(0, 0))
        );
    }

    #[test]
    fn ipv6_addresses_prefixes_and_mixed_lists() {
        let r =
            one("alert tcp [2001:db8::/32,!2001:db8:bad::/48,10.0.0.0/8] any -> ::1 any (sid:1;)");
        assert!(r.src.matches(ip("2001:db8:1::5")));
        assert!(!r.src.matches(ip("2001:db8:bad::5")));
        assert!(r.src.matches(ip("10.9.9.9")));
        assert!(!r.src.matches(ip("2001:db9::1")));
        assert_eq!(r.dst, AddrExpr::Leaf(Net::V6(1, u128::MAX)));
        // The families never meet: an IPv4 net holds no IPv6 address (the
        // IPv4-mapped form included), a negated one matches them all.
        let r = one("alert ip 0.0.0.0/0 any -> !10.0.0.0/8 any (sid:1;)");
        assert!(!r.src.matches(ip("::ffff:10.0.0.1")));
        assert!(r.dst.matches(ip("2001:db8::1")));
        let r = one("alert ip ::/0 any -> any any (sid:1;)");
        assert_eq!(r.src, AddrExpr::Leaf(Net::V6(0, 0)));
        assert!(r.src.matches(ip("fe80::1")) && !r.src.matches(ip("1.2.3.4")));
        // Host bits beyond the prefix are masked off.
        let r = one("alert icmpv6 2001:db8::ff/120 any -> any any (sid:1;)");
        assert_eq!(r.proto, Proto::Icmp6);
        assert_eq!(
            r.src,
            AddrExpr::Leaf(Net::V6(0x2001_0db8 << 96, u128::MAX << 8))
        );
        assert_eq!(
            one("alert icmp6 any any -> any any (sid:1;)").proto,
            Proto::Icmp6
        );
        let text = "ipvar HOME_NET [10.0.0.0/8,2001:db8::/32]\n\
                    alert tcp !$HOME_NET any -> $HOME_NET 22 (sid:1;)\n";
        let set = parse(text, "t.rules", &[]).expect("parses");
        let r = &set.rules[0];
        assert!(r.dst.matches(ip("2001:db8::22")) && r.dst.matches(ip("10.1.1.1")));
        assert!(r.src.matches(ip("2001:470::1")) && !r.src.matches(ip("2001:db8::9")));
    }

    #[test]
    fn ports_ranges_lists_and_negation() {
        let r = one("alert tcp any [80,8000:8080,!8008] -> any !:1023 (sid:1;)");
        assert!(r.sport.matches(80) && r.sport.matches(8080) && r.sport.matches(8000));
        assert!(!r.sport.matches(8008) && !r.sport.matches(81));
        assert!(r.dport.matches(1024) && !r.dport.matches(1023) && !r.dport.matches(0));
        let r = one("alert tcp any 1024: -> any :1024 (sid:1;)");
        assert_eq!(r.sport, PortExpr::Leaf(Range(1024, 65535)));
        assert_eq!(r.dport, PortExpr::Leaf(Range(0, 1024)));
        let r = one("alert tcp any 1:1024 -> any [ 21 , 23 ] (sid:1;)");
        assert_eq!(r.sport, PortExpr::Leaf(Range(1, 1024)));
        assert!(r.dport.matches(23) && !r.dport.matches(22));
    }

    #[test]
    fn variables_from_file_and_keywords() {
        let text = "ipvar HOME_NET [10.0.0.0/8,192.168.0.0/16]\n\
                    var EXTERNAL_NET !$HOME_NET\n\
                    portvar HTTP_PORTS [80,8080]\n\
                    alert tcp $EXTERNAL_NET any -> $HOME_NET $HTTP_PORTS (sid:1;)\n";
        let set = parse(text, "t.rules", &[]).expect("parses");
        let r = &set.rules[0];
        assert!(r.src.matches(ip("8.8.8.8")) && !r.src.matches(ip("10.1.1.1")));
        assert!(r.dst.matches(ip("192.168.3.3")) && !r.dst.matches(ip("8.8.8.8")));
        assert!(r.dport.matches(8080) && !r.dport.matches(443));
        assert_eq!(r.line, 4);
        // Element keywords win over the file's definitions.
        let given = [("HOME_NET".to_string(), "1.2.3.0/24".to_string())];
        let set = parse(text, "t.rules", &given).expect("parses");
        let r = &set.rules[0];
        assert!(r.dst.matches(ip("1.2.3.4")) && !r.dst.matches(ip("10.0.0.1")));
        assert!(r.src.matches(ip("10.0.0.1")));
        // A variable defined after its use is still found.
        let set = parse(
            "alert tcp any $P -> any any (sid:1;)\nportvar P 22\n",
            "t.rules",
            &[],
        )
        .expect("parses");
        assert_eq!(set.rules[0].sport, PortExpr::Leaf(Range(22, 22)));
    }

    #[test]
    fn comments_blank_lines_and_continuation() {
        let text = "# a comment\n\n   # indented comment\n\
                    alert tcp any any -> any 80 \\\n   (msg:\"two\"; \\\n content:\"ab\"; sid:5;)\n\
                    alert tcp any any -> any 81 (msg:\"x\"; sid:6;)\n";
        let set = parse(text, "t.rules", &[]).expect("parses");
        assert_eq!(set.rules.len(), 2);
        assert_eq!(set.rules[0].msg, "two");
        assert_eq!(set.rules[0].line, 4);
        assert_eq!(set.rules[1].line, 7);
        // An error after a continuation points at the right physical line.
        let e = errors("alert tcp any any -> any 80 \\\n (msg:\"x\"; \\\n  depth:3; sid:1;)\n");
        assert_eq!(e, ["t.rules:3:3: `depth` must follow a `content` option"]);
    }

    #[test]
    fn hex_and_escapes_in_content() {
        let r =
            one("alert tcp any any -> any any (content:\"|90 90|AB|0D0a|\\;\\\\\\\"\"; sid:1;)");
        assert_eq!(r.contents[0].pattern, b"\x90\x90AB\r\n;\\\"");
        let r = one(
            "alert tcp any any -> any any (content:!\"x\"; content:\"yy\"; fast_pattern; sid:1;)",
        );
        assert!(r.contents[0].negated && !r.contents[1].negated);
        assert!(r.contents[1].fast_pattern);
    }

    #[test]
    fn dsize_flags_itype() {
        let r = one("alert tcp any any -> any any (flags:S,CE; dsize:>100; sid:1;)");
        let f = r.flags.expect("flags");
        assert!(f.matches(0x02) && f.matches(0xc2) && !f.matches(0x12));
        assert_eq!(
            r.dsize,
            Some(NumRange {
                lo: 101,
                hi: u32::MAX
            })
        );
        let f = one("alert tcp any any -> any any (flags:0; sid:1;)")
            .flags
            .expect("f");
        assert!(f.matches(0) && !f.matches(1));
        let f = one("alert tcp any any -> any any (flags:FPU; sid:1;)")
            .flags
            .expect("f");
        assert!(f.matches(0x29) && !f.matches(0x2b));
        let f = one("alert tcp any any -> any any (flags:+SA; sid:1;)")
            .flags
            .expect("f");
        assert!(f.matches(0x12) && f.matches(0x1a) && !f.matches(0x02));
        let f = one("alert tcp any any -> any any (flags:S*; sid:1;)")
            .flags
            .expect("f");
        assert_eq!(f.mode, FlagMode::Any);
        let r = one("alert icmp any any -> any any (itype:8; icode:<2; dsize:10<>20; sid:1;)");
        assert_eq!(r.itype, Some(NumRange { lo: 8, hi: 8 }));
        assert_eq!(r.icode, Some(NumRange { lo: 0, hi: 1 }));
        assert_eq!(r.dsize, Some(NumRange { lo: 11, hi: 19 }));
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = errors("\nalert tcp 10.0.0.300 any -> any any (sid:1;)\n");
        assert_eq!(e, ["t.rules:2:11: bad address `10.0.0.300`"]);
        let e = errors("alert tcp any 70000 -> any any (sid:1;)");
        assert_eq!(e, ["t.rules:1:15: bad port `70000`"]);
        let e = errors("alert tcp any any => any any (sid:1;)");
        assert_eq!(e, ["t.rules:1:19: expected `->` or `<>`, found `=>`"]);
        let e = errors("alert tcp any any -> any any (msg:\"x\";)");
        assert_eq!(e, ["t.rules:1:30: rule has no `sid`"]);
        let e = errors("alert tcp any any -> any any (content:\"|4|\"; sid:1;)");
        assert_eq!(e, ["t.rules:1:42: odd number of hex digits in content"]);
        let e = errors("alert tcp any any -> any any (content:\"ab\"; depth:1; sid:1;)");
        assert_eq!(
            e,
            ["t.rules:1:51: `depth` 1 is shorter than the content (2 bytes)"]
        );
        let e = errors("alert tcp any any -> any any (content:\"ab\"; offset:x; sid:1;)");
        assert_eq!(e, ["t.rules:1:52: `offset` expects an integer, found `x`"]);
        let e = errors("alert tcp any any -> any any (content:\"ab\"; offset:1; within:5; sid:1;)");
        assert_eq!(
            e,
            ["t.rules:1:55: `within` mixes absolute (offset/depth) and relative (distance/within) modifiers"]
        );
        let e = errors("alert tcp any any -> any any (msg:\"open; sid:1;)");
        assert_eq!(e, ["t.rules:1:48: unterminated quoted string"]);
        let e = errors("alert tcp any any -> any any sid:1;");
        assert_eq!(e, ["t.rules:1:1: expected `(` starting the rule options"]);
        let e = errors("alert tcp any any any (sid:1;)");
        assert_eq!(
            e,
            ["t.rules:1:1: expected `ACTION PROTO SRC SPORT -> DST DPORT (...)`, found 5 header fields"]
        );
        let e = errors("alert tcp any any -> any any (sid:1;)\nalert tcp any any -> any any (sid:1;)\nfoo tcp any any -> any any (sid:2;)");
        assert_eq!(
            e,
            [
                "t.rules:2:1: duplicate sid 1:1",
                "t.rules:3:1: unknown action `foo`"
            ]
        );
        let e = errors("alert icmp any 80 -> any any (sid:1;)");
        assert_eq!(
            e,
            ["t.rules:1:16: ports must be `any` for ip and icmp rules"]
        );
        let e = errors("alert tcp [1.2.3.4 any -> any any (sid:1;)");
        assert_eq!(e.len(), 1, "{e:?}");
        let e = errors("var X [1.2.3.4,oops]\nalert tcp $X any -> any any (sid:1;)");
        assert_eq!(e, ["t.rules:2:11: in `$X`: bad address `oops`"]);
        let e = errors("alert tcp 2001:db8::/129 any -> [::1,2001:db8:::1] any (sid:1;)");
        assert_eq!(e, ["t.rules:1:11: bad prefix length in `2001:db8::/129`"]);
        let e = errors("alert tcp any any -> [::1,2001:db8:::1] any (sid:1;)");
        assert_eq!(e, ["t.rules:1:27: bad address `2001:db8:::1`"]);
    }

    #[test]
    fn unsupported_things_skip_the_rule() {
        let s = skipped(
            "alert tcp any any -> any 80 (content:\"a\"; pcre:\"/x/\"; sid:1;)\n\
             alert tcp any any -> any 80 (flow:to_server,established; sid:2;)\n\
             alert http any any -> any any (sid:3;)\n\
             reject tcp any any -> any any (sid:4;)\n\
             alert tcp $NOPE any -> any any (sid:5;)\n\
             alert sctp ::1 any -> any any (sid:6;)\n\
             alert tcp any any -> any any (byte_test:4,>,1,0; sid:7;)\n\
             alert tcp any any -> any any (sid:8; metadata:a b; reference:cve,1;)\n",
        );
        assert_eq!(
            s,
            [
                "t.rules:1:43: rule skipped: unsupported option `pcre`",
                "t.rules:2:30: rule skipped: unsupported option `flow`",
                "t.rules:3:7: rule skipped: unsupported protocol `http`",
                "t.rules:4:1: rule skipped: unsupported action `reject`",
                "t.rules:5:11: rule skipped: undefined variable `$NOPE`",
                "t.rules:6:7: rule skipped: unsupported protocol `sctp`",
                "t.rules:7:31: rule skipped: unsupported option `byte_test`",
            ]
        );
    }
}
