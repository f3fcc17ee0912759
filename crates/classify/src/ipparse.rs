//! Parser for the tcpdump-like IP expression language of `IPClassifier` /
//! `IPFilter`.
//!
//! The structure follows the reference grammar closely, including its
//! implicit-operator rules: a test that has no qualifiers of its own inherits
//! the previous primitive's type, direction and protocol (`src port 80 or
//! 81`, `tcp dst port www or https`, `src host 1.2.3.4 or 5.6.7.8`), and
//! juxtaposed tests are joined with `and`.

use crate::expr::{Expr, Space};
use crate::names::{
    self, PROTO_DCCP, PROTO_ICMP, PROTO_ICMP6, PROTO_TCP, PROTO_TCP_OR_UDP, PROTO_UDP,
};

// Data / primitive types.
const TYPE_NONE: i32 = 0;
const TYPE_TYPE: i32 = 1;
const TYPE_SYNTAX: i32 = 2;
const TYPE_INT: i32 = 3;
const TYPE_HOST: i32 = 10;
const TYPE_PROTO: i32 = 11;
const TYPE_IPFRAG: i32 = 12;
const TYPE_PORT: i32 = 13;
const TYPE_TCPOPT: i32 = 14;
const TYPE_ETHER: i32 = 15;
const TYPE_NET: i32 = 30;
const TYPE_IPUNFRAG: i32 = 31;
const TYPE_IPECT: i32 = 32;
const TYPE_IPCE: i32 = 33;
// IPv6 header fields, before `check` turns them into fields of the IPv6
// layout the classifier sees (see `V6_META`).
const TYPE6_HLIM: i32 = 40;
const TYPE6_FLOW: i32 = 41;
const TYPE6_NXT: i32 = 42;
const TYPE6_PLEN: i32 = 43;
const TYPE6_TCLASS: i32 = 44;
/// Bare `ip6`: the packet is IPv6.
const TYPE_IP6: i32 = 45;

// Header fields: bit 30 set; bits 29-21 protocol; 20-5 bit offset; 4-0 bit
// length minus one.
const TYPE_FIELD: i32 = 0x4000_0000;
const FIELD_PROTO_SHIFT: i32 = 21;
const FIELD_PROTO_MASK: i32 = 0x1FF << FIELD_PROTO_SHIFT;
const FIELD_OFFSET_SHIFT: i32 = 5;
const FIELD_OFFSET_MASK: i32 = 0xFFFF << FIELD_OFFSET_SHIFT;
const FIELD_LENGTH_MASK: i32 = 0x1F;

const fn field(proto: i32, bit_off: i32, bits: i32) -> i32 {
    TYPE_FIELD | (proto << FIELD_PROTO_SHIFT) | (bit_off << FIELD_OFFSET_SHIFT) | (bits - 1)
}
const FIELD_IPLEN: i32 = field(0, 16, 16);
const FIELD_ID: i32 = field(0, 32, 16);
const FIELD_VERSION: i32 = field(0, 0, 4);
const FIELD_HL: i32 = field(0, 4, 4);
const FIELD_TOS: i32 = field(0, 8, 8);
const FIELD_DSCP: i32 = field(0, 8, 6);
const FIELD_TTL: i32 = field(0, 64, 8);
const FIELD_TCP_WIN: i32 = field(PROTO_TCP, 112, 16);
const FIELD_ICMP_TYPE: i32 = field(PROTO_ICMP, 0, 8);
const FIELD_ICMP6_TYPE: i32 = field(PROTO_ICMP6, 0, 8);
// The IPv6 layout's fields: the fixed header (the next-header byte holds
// the upper-layer protocol found after the extension headers), then the
// meta bytes at `V6_META`: the first next-header value as sent, and flags.
const FIELD6_TCLASS: i32 = field(0, 4, 8);
const FIELD6_DSCP: i32 = field(0, 4, 6);
const FIELD6_FLOW: i32 = field(0, 12, 20);
const FIELD6_PLEN: i32 = field(0, 32, 16);
const FIELD6_HLIM: i32 = field(0, 56, 8);
const FIELD6_NXT: i32 = field(0, 8 * V6_META as i32, 8);

/// Offset of the meta bytes in the IPv6 layout a dual-stack program reads
/// (after the 40-byte fixed header): the first next-header value as sent,
/// then flags ([`V6_FLAG_FRAG`], [`V6_FLAG_BAD_CHAIN`]).
pub(crate) const V6_META: usize = 40;
/// Length of the IPv6 layout.
pub(crate) const V6_LAYOUT_LEN: usize = 44;
/// Flag: the packet is a fragment (offset not zero or more fragments).
pub(crate) const V6_FLAG_FRAG: u8 = 1;
/// Flag: the extension-header chain is malformed or longer than the walk
/// follows; the upper layer is unknown (protocol 255, no transport bytes).
pub(crate) const V6_FLAG_BAD_CHAIN: u8 = 2;

const UNKNOWN: i32 = -1000;

const SD_SRC: i32 = 1;
const SD_DST: i32 = 2;
const SD_AND: i32 = 3;
const SD_OR: i32 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
enum Op {
    #[default]
    Eq,
    Gt,
    Lt,
}

/// Nesting limit for parentheses / `not` / `?:`, so hostile input cannot
/// exhaust the stack.
const MAX_DEPTH: usize = 200;

fn type_word(w: &str) -> Option<i32> {
    Some(match w {
        "ce" => TYPE_IPCE,
        "dest" | "dst" | "ether" | "ip" | "ip6" | "not" | "src" => TYPE_SYNTAX,
        "dscp" => FIELD_DSCP,
        "ect" => TYPE_IPECT,
        "frag" => TYPE_IPFRAG,
        "hl" => FIELD_HL,
        "host" => TYPE_HOST,
        "id" => FIELD_ID,
        "len" => FIELD_IPLEN,
        "net" => TYPE_NET,
        "opt" => TYPE_TCPOPT,
        "port" => TYPE_PORT,
        "proto" => TYPE_PROTO,
        "tos" => FIELD_TOS,
        "ttl" => FIELD_TTL,
        "type" => FIELD_ICMP_TYPE,
        "unfrag" => TYPE_IPUNFRAG,
        "vers" => FIELD_VERSION,
        "win" => FIELD_TCP_WIN,
        "hlim" => TYPE6_HLIM,
        "flow" => TYPE6_FLOW,
        "nxt" => TYPE6_NXT,
        "plen" => TYPE6_PLEN,
        "tclass" => TYPE6_TCLASS,
        _ => return None,
    })
}

fn unparse_type(srcdst: i32, ty: i32) -> String {
    let mut s = String::new();
    match srcdst {
        SD_SRC => s.push_str("src "),
        SD_DST => s.push_str("dst "),
        SD_OR => s.push_str("src or dst "),
        SD_AND => s.push_str("src and dst "),
        _ => {}
    }
    let t = match ty {
        TYPE_NONE => "<none>".to_string(),
        TYPE_HOST => "ip host".into(),
        TYPE_PROTO => "proto".into(),
        TYPE_ETHER => "ether host".into(),
        TYPE_IPFRAG => "ip frag".into(),
        TYPE_PORT => "port".into(),
        TYPE_TCPOPT => "tcp opt".into(),
        TYPE_NET => "ip net".into(),
        TYPE_IPUNFRAG => "ip unfrag".into(),
        TYPE_IPECT => "ip ect".into(),
        TYPE_IPCE => "ip ce".into(),
        FIELD_IPLEN => "ip len".into(),
        FIELD_ID => "ip id".into(),
        FIELD_VERSION => "ip vers".into(),
        FIELD_HL => "ip hl".into(),
        FIELD_TOS => "ip tos".into(),
        FIELD_DSCP => "ip dscp".into(),
        FIELD_TTL => "ip ttl".into(),
        FIELD_TCP_WIN => "tcp win".into(),
        FIELD_ICMP_TYPE => "icmp type".into(),
        FIELD_ICMP6_TYPE => "icmp6 type".into(),
        TYPE6_HLIM => "ip6 hlim".into(),
        TYPE6_FLOW => "ip6 flow".into(),
        TYPE6_NXT => "ip6 nxt".into(),
        TYPE6_PLEN => "ip6 plen".into(),
        TYPE6_TCLASS => "ip6 tclass".into(),
        t if t & TYPE_FIELD != 0 => {
            let p = (t & FIELD_PROTO_MASK) >> FIELD_PROTO_SHIFT;
            if p != 0 {
                format!("{}[...]", names::unparse_proto(p))
            } else {
                "ip[...]".into()
            }
        }
        t => format!("<unknown type {t}>"),
    };
    s.push_str(&t);
    s
}

/// Result of looking a word up in the name databases.
enum Lookup {
    /// Not a known name.
    None,
    /// A type keyword (`host`, `port`, `ttl`, ...), with its type.
    Type(i32),
    /// A value of the given data type (`tcp` → proto, `www` → port, ...).
    Value(i32, u32),
}

/// Look `word` up; `ty`/`proto` restrict which databases may answer. `Err`
/// carries an "ambiguous"/"meaningless" message.
fn lookup(word: &str, ty: i32, proto: i32) -> Result<Lookup, String> {
    if ty == 0 || ty == TYPE_TYPE {
        if let Some(t) = type_word(word) {
            return Ok(if t == TYPE_SYNTAX {
                Lookup::None
            } else {
                Lookup::Type(t)
            });
        }
    }
    if proto == PROTO_ICMP6 && (ty == 0 || ty == FIELD_ICMP6_TYPE) {
        if let Some(v) = names::icmp6_type(word) {
            return Ok(Lookup::Value(FIELD_ICMP6_TYPE, v));
        }
    }
    let got = [
        names::ip_proto(word),
        names::tcp_port(word),
        names::udp_port(word),
        names::tcp_opt(word),
        names::icmp_type(word),
    ];
    const DB2TYPE: [i32; 5] = [
        TYPE_PROTO,
        TYPE_PORT,
        TYPE_PORT,
        TYPE_TCPOPT,
        FIELD_ICMP_TYPE,
    ];
    if got.iter().all(Option::is_none) {
        return Ok(Lookup::None);
    }
    let unknown_or = |p: i32| proto == UNKNOWN || proto == p || proto == PROTO_TCP_OR_UDP;
    let mut tgot = [
        got[0].is_some() && (ty == 0 || ty == TYPE_PROTO),
        got[1].is_some() && (ty == 0 || ty == TYPE_PORT) && unknown_or(PROTO_TCP),
        got[2].is_some() && (ty == 0 || ty == TYPE_PORT) && unknown_or(PROTO_UDP),
        got[3].is_some() && (ty == 0 || ty == TYPE_TCPOPT) && unknown_or(PROTO_TCP),
        got[4].is_some()
            && (ty == 0 || ty == FIELD_ICMP_TYPE)
            && (proto == UNKNOWN || proto == PROTO_ICMP),
    ];
    if tgot[1] && tgot[2] && got[1] == got[2] {
        tgot[2] = false;
    }
    let ngot = tgot.iter().filter(|&&b| b).count();
    if ngot == 1 {
        for i in 0..5 {
            if tgot[i] {
                if let Some(v) = got[i] {
                    return Ok(Lookup::Value(DB2TYPE[i], v));
                }
            }
        }
    }
    let tries: Vec<String> = (0..5)
        .filter(|&i| got[i].is_some())
        .map(|i| format!("`{}`", unparse_word(DB2TYPE[i], proto, word)))
        .collect();
    Err(format!(
        "`{}` is {}; try {}",
        unparse_word(ty, proto, word),
        if ngot > 1 { "ambiguous" } else { "meaningless" },
        tries.join(", ")
    ))
}

fn unparse_word(ty: i32, proto: i32, word: &str) -> String {
    let mut parts = Vec::new();
    if ty != 0 {
        parts.push(unparse_type(0, ty));
    }
    let p = names::unparse_proto(proto);
    if !p.is_empty() && ty != FIELD_ICMP_TYPE && ty != FIELD_TCP_WIN {
        parts.push(p);
    }
    parts.push(word.to_string());
    parts.join(" ")
}

/// Parse an integer the way the reference argument parser does: optional
/// sign, `0x` hex, `0b` binary, leading-`0` octal, `_` between digits.
pub(crate) fn parse_int(s: &str, signed: bool) -> Option<i64> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut neg = false;
    if i < b.len() && ((signed && b[i] == b'-') || b[i] == b'+') {
        neg = b[i] == b'-';
        i += 1;
    }
    let base: u64 = if i + 2 < b.len() && b[i] == b'0' && (b[i + 1] | 0x20) == b'x' {
        i += 2;
        16
    } else if i + 2 < b.len() && b[i] == b'0' && (b[i + 1] | 0x20) == b'b' {
        i += 2;
        2
    } else if i < b.len() && b[i] == b'0' {
        8
    } else {
        10
    };
    let mut val: u64 = 0;
    let mut last_digit = false;
    let mut any = false;
    for &c in &b[i..] {
        if c == b'_' && last_digit {
            last_digit = false;
            continue;
        }
        let d = u64::from(char::from(c).to_digit(base as u32)?);
        val = val.checked_mul(base)?.checked_add(d)?;
        if val > u64::from(u32::MAX) + 1 {
            return None;
        }
        last_digit = true;
        any = true;
    }
    if !any || !last_digit {
        return None;
    }
    let v = if neg { -(val as i64) } else { val as i64 };
    let ok = if signed {
        (i64::from(i32::MIN)..=i64::from(i32::MAX)).contains(&v)
    } else {
        (0..=i64::from(u32::MAX)).contains(&v)
    };
    ok.then_some(v)
}

/// Dotted-quad prefix parse; returns (address, number of bytes given, rest).
fn basic_ip(s: &str) -> (u32, usize, usize) {
    let b = s.as_bytes();
    let mut value = [0u8; 4];
    let mut d = 0;
    let mut pos = 0;
    while d < 4 && pos < b.len() && (d == 0 || b[pos] == b'.') {
        let mut t = pos + usize::from(d != 0);
        if t >= b.len() || !b[t].is_ascii_digit() {
            break;
        }
        let mut part: u32 = 0;
        while t < b.len() && b[t].is_ascii_digit() && part <= 255 {
            part = part * 10 + u32::from(b[t] - b'0');
            t += 1;
        }
        if part > 255 {
            break;
        }
        value[d] = part as u8;
        pos = t;
        d += 1;
    }
    (u32::from_be_bytes(value), d, pos)
}

pub(crate) fn parse_ip(s: &str) -> Option<u32> {
    let (v, n, end) = basic_ip(s);
    if n == 4 && end == s.len() {
        return Some(v);
    }
    // An AddressInfo name (`src host mauer`), as Click's IPAddressArg.
    pronto_lang::names::ip(s).map(u32::from_be_bytes)
}

fn prefix_mask(len: u32) -> u32 {
    if len == 0 {
        0
    } else {
        u32::MAX << (32 - len)
    }
}

/// `ADDR/LEN` or `ADDR/MASK` (ADDR may be abbreviated: `10/8`).
pub(crate) fn parse_prefix(s: &str) -> Option<(u32, u32)> {
    let Some(slash) = s.rfind('/') else {
        // An AddressInfo prefix name (`dst net lan:ipnet`).
        return pronto_lang::names::prefix(s)
            .map(|(a, m)| (u32::from_be_bytes(a), u32::from_be_bytes(m)));
    };
    if slash == 0 || slash + 1 == s.len() {
        return None;
    }
    let (addr, nbytes, end) = basic_ip(&s[..slash]);
    if end != slash {
        return None;
    }
    let rest = &s[slash + 1..];
    let mask = match rest.parse::<u32>() {
        Ok(l) if l <= 32 && rest.bytes().all(|c| c.is_ascii_digit()) => prefix_mask(l),
        _ => parse_ip(rest)?,
    };
    if nbytes < 4 && mask & prefix_mask(nbytes as u32 * 8) != mask {
        return None;
    }
    Some((addr, mask))
}

/// An Ethernet address written `0:1:2:3:4:5` or `00-01-02-03-04-05`.
fn parse_ether_addr(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut n = 0;
    for p in s.split([':', '-']) {
        if n == 6 || p.is_empty() || p.len() > 2 || !p.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        out[n] = u8::from_str_radix(p, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(out)
}

/// Split a pattern into words like the reference tokenizer.
pub(crate) fn separate_text(text: &str) -> Vec<String> {
    let s = text.as_bytes();
    let len = s.len();
    let mut words = Vec::new();
    let mut pos = 0;
    let is_word = |c: u8| {
        c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'.' | b'/' | b'@' | b'_' | b':')
            || c >= 0x80
    };
    while pos < len {
        while pos < len && s[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if pos >= len {
            break;
        }
        let c = s[pos];
        let two = pos + 1 < len
            && match c {
                b'&' | b'|' => s[pos + 1] == c,
                b'<' | b'>' | b'!' | b'=' => s[pos + 1] == b'=',
                _ => false,
            };
        if two {
            words.push(text[pos..pos + 2].to_string());
            pos += 2;
        } else if matches!(
            c,
            b'(' | b')'
                | b'['
                | b']'
                | b','
                | b';'
                | b'?'
                | b'&'
                | b'|'
                | b'<'
                | b'>'
                | b'!'
                | b'='
        ) {
            words.push(text[pos..pos + 1].to_string());
            pos += 1;
        } else {
            let first = pos;
            while pos < len && is_word(s[pos]) {
                pos += 1;
            }
            if pos == first {
                // Any other single character is a word of its own. Keep
                // UTF-8 boundaries intact.
                pos += 1;
                while pos < len && !text.is_char_boundary(pos) {
                    pos += 1;
                }
            }
            words.push(text[first..pos].to_string());
        }
    }
    words
}

/// Remove configuration-language quoting: `"..."` (with backslash escapes)
/// and `'...'`.
pub(crate) fn unquote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                out.push(match e {
                                    'n' => '\n',
                                    't' => '\t',
                                    e => e,
                                });
                            }
                        }
                        d => out.push(d),
                    }
                }
            }
            '\'' => {
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    out.push(d);
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[derive(Clone, Debug)]
struct Prim {
    ty: i32,
    data: i32,
    op: Op,
    op_negated: bool,
    srcdst: i32,
    transp: i32,
    u: u32,
    mask: u32,
    /// Upper bound of a `port A-B` range (pronto extension).
    range_hi: Option<u32>,
    /// The address family the primitive is about: 4, 6, or 0 for both
    /// (protocols, ports and transport fields).
    fam: u8,
    /// An IPv6 address and mask (`host`, `net`).
    addr6: Option<([u8; 16], [u8; 16])>,
    /// An Ethernet address (`ether host`).
    ether: Option<[u8; 6]>,
}

impl Default for Prim {
    fn default() -> Self {
        Prim {
            ty: TYPE_NONE,
            data: TYPE_NONE,
            op: Op::Eq,
            op_negated: false,
            srcdst: 0,
            transp: UNKNOWN,
            u: 0,
            mask: 0,
            range_hi: None,
            fam: 0,
            addr6: None,
            ether: None,
        }
    }
}

impl Prim {
    fn set_type(&mut self, t: i32) -> Result<(), String> {
        if self.ty != 0 {
            return Err("type specified twice".into());
        }
        self.ty = t;
        Ok(())
    }
    fn set_srcdst(&mut self, sd: i32) -> Result<(), String> {
        if self.srcdst != 0 {
            return Err("`src` or `dst` specified twice".into());
        }
        self.srcdst = sd;
        Ok(())
    }
    fn set_transp(&mut self, p: i32) -> Result<(), String> {
        if self.transp != UNKNOWN && self.transp != p {
            return Err("transport protocol specified twice".into());
        }
        self.transp = p;
        Ok(())
    }
    fn type_error(&self, msg: &str) -> String {
        format!("`{}`: {}", unparse_type(self.srcdst, self.ty), msg)
    }

    /// Install the comparison value and mask, folding relations that are
    /// always true or false and normalising `<` into negated `>`.
    fn set_mask(&mut self, full: u32, provided: u32) -> Result<(), String> {
        let data = self.u;
        let this_mask = if provided != 0 { provided } else { full };
        if this_mask & full != this_mask {
            return Err(format!(
                "`{}`: mask out of range, bound 0x{:X}",
                unparse_type(self.srcdst, self.ty),
                full
            ));
        }
        if self.op != Op::Eq {
            if (self.op == Op::Lt && (data == 0 || data > this_mask))
                || (self.op == Op::Gt && data >= this_mask)
            {
                let will_be = if self.op == Op::Lt && data > this_mask {
                    !self.op_negated
                } else {
                    self.op_negated
                };
                self.u = 0;
                self.mask = 0;
                self.op_negated = !will_be;
                self.op = Op::Eq;
                return Ok(());
            }
            if self.op == Op::Lt {
                self.u = data - 1;
                self.op_negated = !self.op_negated;
                self.op = Op::Gt;
            }
            self.mask = this_mask;
            if self.u & self.mask != self.u {
                // Largest value <= u that only uses mask bits.
                let missing = (self.u & self.mask) ^ (self.u & full);
                let add = if missing == 0 {
                    0
                } else {
                    u32::MAX >> (missing.leading_zeros() + 1)
                };
                self.u = (self.u | add) & self.mask;
            }
            return Ok(());
        }
        if data > full {
            return Err(format!(
                "`{}`: out of range, bound {}",
                unparse_type(self.srcdst, self.ty),
                full
            ));
        }
        self.u = data;
        self.mask = this_mask;
        Ok(())
    }

    /// Resolve the primitive's type from its data and the previous
    /// primitive, and validate it.
    fn check(&mut self, prev: &Prim, header: u8, mask: Option<(i32, u32)>) -> Result<(), String> {
        let old_srcdst = self.srcdst;
        if self.ty < 0 {
            return Err("bad primitive".into());
        }
        if self.ty == 0 {
            loop {
                match self.data {
                    TYPE_HOST | TYPE_NET | TYPE_TCPOPT | TYPE_ETHER => {
                        self.ty = self.data;
                        if self.srcdst == 0 {
                            self.srcdst = prev.srcdst;
                        }
                    }
                    TYPE_PROTO => self.ty = TYPE_PROTO,
                    TYPE_PORT => {
                        self.ty = TYPE_PORT;
                        if self.srcdst == 0 {
                            self.srcdst = prev.srcdst;
                        }
                        if self.transp == UNKNOWN {
                            self.transp = prev.transp;
                        }
                    }
                    TYPE_INT => {
                        if prev.ty & TYPE_FIELD == 0
                            && prev.ty != TYPE_PROTO
                            && prev.ty != TYPE_PORT
                        {
                            return Err("specify header field or `port`".into());
                        }
                        self.data = prev.ty;
                        if self.fam == 0 {
                            self.fam = prev.fam;
                        }
                        continue;
                    }
                    TYPE_NONE => {
                        if self.transp != UNKNOWN {
                            self.ty = TYPE_PROTO;
                        } else if header == b'6' {
                            self.ty = TYPE_IP6;
                        } else {
                            return Err("partial directive".into());
                        }
                    }
                    d => {
                        if d & TYPE_FIELD != 0 {
                            self.ty = d;
                            if self.ty & FIELD_PROTO_MASK != 0 && self.transp == UNKNOWN {
                                self.transp = (self.ty & FIELD_PROTO_MASK) >> FIELD_PROTO_SHIFT;
                            }
                        } else {
                            return Err(format!("unknown type `{}`", unparse_type(0, d)));
                        }
                    }
                }
                break;
            }
        }

        let explicit = header;
        let header = if header == 0 && self.data == TYPE_ETHER {
            b'e'
        } else if header == 0 {
            b'i'
        } else {
            header
        };
        if header == b'e' || self.ty == TYPE_ETHER || self.data == TYPE_ETHER {
            // Ethernet addresses, read from the link header annotation.
            if self.data != TYPE_ETHER || !matches!(self.ty, TYPE_ETHER | TYPE_HOST) {
                return Err(self.type_error("Ethernet address missing"));
            }
            if self.op != Op::Eq || mask.is_some() {
                return Err(self.type_error("operator or mask not supported"));
            }
            self.ty = TYPE_ETHER;
            if self.srcdst == 0 {
                self.srcdst = SD_OR;
            }
            return Ok(());
        }
        if self.range_hi.is_some() && self.ty != TYPE_PORT {
            return Err(self.type_error("value ranges are only supported for `port`"));
        }
        let (mask_dt, mask_u) = mask.unwrap_or((0, 0));
        self.check_family(explicit)?;

        match self.ty {
            TYPE_IP6 => {
                if self.data != TYPE_NONE || mask_dt != 0 {
                    return Err("`ip6`: value not supported".into());
                }
            }
            TYPE_HOST | TYPE_NET => {
                if self.data != self.ty {
                    return Err(self.type_error("address missing"));
                }
                if self.op != Op::Eq {
                    return Err(self.type_error("operator not supported"));
                }
                if self.ty == TYPE_HOST {
                    self.mask = u32::MAX;
                }
                self.ty = TYPE_HOST;
                if mask_dt != 0 && self.addr6.is_some() {
                    return Err(self.type_error("bad mask (write an IPv6 prefix: ADDR/LEN)"));
                }
                if mask_dt != 0 && mask_dt != TYPE_INT && mask_dt != TYPE_HOST {
                    return Err(self.type_error("bad mask"));
                } else if mask_dt != 0 {
                    self.mask = mask_u;
                }
            }
            TYPE_PROTO => {
                if self.data == TYPE_INT || self.data == TYPE_PROTO {
                    if self.transp != UNKNOWN && self.transp != self.u as i32 {
                        return Err(self.type_error("specified twice"));
                    }
                    self.data = TYPE_NONE;
                } else {
                    self.u = self.transp as u32;
                }
                let pval = self.u as i32;
                self.transp = UNKNOWN;
                if self.data != TYPE_NONE || pval == UNKNOWN {
                    return Err(self.type_error("value missing"));
                }
                if pval >= 256 {
                    if self.op != Op::Eq || mask_dt != 0 {
                        return Err(format!(
                            "`{}`: operator or mask not supported",
                            names::unparse_proto(pval)
                        ));
                    }
                    self.mask = 0xFF;
                } else if mask_dt != 0 && mask_dt != TYPE_INT {
                    return Err(self.type_error("bad mask"));
                } else {
                    self.set_mask(0xFF, mask_u)?;
                }
                if self.op == Op::Eq && self.mask == 0xFF && !self.op_negated {
                    self.transp = self.u as i32;
                }
            }
            TYPE_PORT => {
                if self.data == TYPE_INT {
                    self.data = TYPE_PORT;
                }
                if self.data != TYPE_PORT {
                    return Err(self.type_error("value missing"));
                }
                if self.transp == UNKNOWN {
                    self.transp = PROTO_TCP_OR_UDP;
                } else if ![PROTO_TCP, PROTO_UDP, PROTO_TCP_OR_UDP, PROTO_DCCP]
                    .contains(&self.transp)
                {
                    return Err(format!("`port`: bad protocol {}", self.transp));
                } else if mask_dt != 0 && mask_dt != TYPE_INT {
                    return Err(self.type_error("bad mask"));
                }
                if let Some(hi) = self.range_hi {
                    if self.op != Op::Eq || mask_dt != 0 {
                        return Err(self.type_error("operator or mask not supported with a range"));
                    }
                    if hi > 0xFFFF || self.u > hi {
                        return Err(self.type_error("bad port range"));
                    }
                } else {
                    self.set_mask(0xFFFF, mask_u)?;
                }
            }
            TYPE_TCPOPT => {
                if self.data == TYPE_INT {
                    self.data = TYPE_TCPOPT;
                }
                if self.data != TYPE_TCPOPT {
                    return Err(self.type_error("value missing"));
                }
                if self.transp == UNKNOWN {
                    self.transp = PROTO_TCP;
                } else if self.transp != PROTO_TCP {
                    return Err(format!("`tcp opt`: bad protocol {}", self.transp));
                }
                if self.op != Op::Eq || self.op_negated || mask_dt != 0 {
                    return Err(self.type_error("operator or mask not supported"));
                }
                if self.u > 255 {
                    return Err(format!("`tcp opt`: value {} out of range", self.u as i32));
                }
                self.mask = self.u;
            }
            TYPE_IPECT => {
                if self.data != TYPE_NONE && self.data != TYPE_INT {
                    return Err(self.type_error("value missing"));
                }
                if self.data == TYPE_NONE {
                    self.mask = 3;
                    self.u = 0;
                    self.op_negated = true;
                } else if mask_dt != 0 && mask_dt != TYPE_INT {
                    return Err(self.type_error("bad mask"));
                }
                self.set_mask(3, mask_u)?;
                self.ty = if self.fam == 6 {
                    FIELD6_TCLASS
                } else {
                    FIELD_TOS
                };
            }
            TYPE_IPCE => {
                if self.data != TYPE_NONE || mask_dt != 0 {
                    return Err(self.type_error("value not supported"));
                }
                self.mask = 3;
                self.u = 3;
                self.ty = if self.fam == 6 {
                    FIELD6_TCLASS
                } else {
                    FIELD_TOS
                };
            }
            TYPE_IPFRAG | TYPE_IPUNFRAG => {
                if self.data != TYPE_NONE || mask_dt != 0 {
                    return Err(self.type_error("value not supported"));
                }
                if self.ty == TYPE_IPUNFRAG {
                    self.op_negated = true;
                    self.ty = TYPE_IPFRAG;
                }
                self.mask = 1;
            }
            t if t & TYPE_FIELD != 0 => {
                if self.data != TYPE_INT && self.data != t {
                    return Err(self.type_error("value missing"));
                } else if mask_dt != 0 && mask_dt != TYPE_INT && mask_dt != t {
                    return Err(self.type_error("bad mask"));
                }
                let nbits = (t & FIELD_LENGTH_MASK) + 1;
                let xmask = if nbits == 32 {
                    u32::MAX
                } else {
                    (1u32 << nbits) - 1
                };
                self.set_mask(xmask, mask_u)?;
            }
            t => return Err(format!("unknown type `{}`", unparse_type(0, t))),
        }

        if self.ty == TYPE_HOST || self.ty == TYPE_PORT {
            if self.srcdst == 0 {
                self.srcdst = SD_OR;
            }
        } else {
            // `src`/`dst` on other types is ignored (a warning in the
            // reference implementation).
            let _ = old_srcdst;
        }
        Ok(())
    }

    /// Settles which address family the primitive is about (`fam`), turns
    /// IPv6 field words into fields of the IPv6 layout, and refuses
    /// mixtures (`ip hlim`, `ip6 ttl`, `ip6 host 10.0.0.1`). `explicit` is
    /// the `ip`/`ip6` qualifier given, or 0.
    fn check_family(&mut self, explicit: u8) -> Result<(), String> {
        let v6_word = matches!(self.ty, TYPE6_HLIM..=TYPE6_TCLASS);
        if v6_word {
            if explicit == b'i' {
                return Err(format!(
                    "`ip {}`: an IPv6 field; write `{}`",
                    &unparse_type(0, self.ty)[4..],
                    unparse_type(0, self.ty)
                ));
            }
            self.ty = match self.ty {
                TYPE6_HLIM => FIELD6_HLIM,
                TYPE6_FLOW => FIELD6_FLOW,
                TYPE6_NXT => FIELD6_NXT,
                TYPE6_PLEN => FIELD6_PLEN,
                _ => FIELD6_TCLASS,
            };
            if self.data == TYPE_NONE {
                return Err(format!("`{}`: value missing", v6_field_name(self.ty)));
            }
            self.fam = 6;
            return Ok(());
        }
        let is_host = matches!(self.ty, TYPE_HOST | TYPE_NET);
        let ip_field = self.ty & TYPE_FIELD != 0 && self.ty & FIELD_PROTO_MASK == 0;
        match explicit {
            b'6' => {
                if is_host && self.addr6.is_none() {
                    return Err(format!(
                        "`ip6 {}`: an IPv4 address; write `ip {}` or an IPv6 address",
                        if self.ty == TYPE_HOST { "host" } else { "net" },
                        if self.ty == TYPE_HOST { "host" } else { "net" },
                    ));
                }
                if ip_field && self.fam != 6 {
                    self.ty = match self.ty {
                        FIELD_VERSION => FIELD_VERSION,
                        FIELD_DSCP => FIELD6_DSCP,
                        t if matches!(
                            t,
                            FIELD_IPLEN | FIELD_ID | FIELD_HL | FIELD_TOS | FIELD_TTL
                        ) =>
                        {
                            return Err(format!(
                                "`ip6 {}`: not an IPv6 header field (IPv6 has hlim, flow, nxt, plen, tclass, dscp)",
                                &unparse_type(0, t)[3..]
                            ));
                        }
                        // `ip6[POS:LEN]`: the IPv6 layout.
                        t => t,
                    };
                }
                self.fam = 6;
            }
            b'i' => {
                if self.addr6.is_some() {
                    return Err(format!(
                        "`ip {}`: an IPv6 address; write `ip6 {}`",
                        if self.ty == TYPE_HOST { "host" } else { "net" },
                        if self.ty == TYPE_HOST { "host" } else { "net" },
                    ));
                }
                if self.fam != 6 {
                    self.fam = 4;
                }
            }
            _ => {
                if self.fam == 6 || self.addr6.is_some() {
                    self.fam = 6;
                } else if is_host
                    || (ip_field && self.ty != FIELD_VERSION)
                    || matches!(
                        self.ty,
                        TYPE_IPFRAG | TYPE_IPUNFRAG | TYPE_IPECT | TYPE_IPCE
                    )
                    || self.ty == FIELD_ICMP_TYPE
                {
                    self.fam = 4;
                } else if self.transp == PROTO_ICMP6 || self.ty == FIELD_ICMP6_TYPE {
                    self.fam = 6;
                }
            }
        }
        Ok(())
    }

    fn comparison(&self, space: Space, off: u32, shift: u32, op_negate: bool) -> Expr {
        let mask = self.mask;
        let u = self.u & mask;
        let e = Expr::test(space, off, mask << shift, u << shift, self.op == Op::Gt);
        if self.op_negated && op_negate {
            Expr::not_flip_short(e)
        } else {
            e
        }
    }

    fn port_side(&self, shift: u32) -> Expr {
        match self.range_hi {
            Some(hi) => {
                let m = 0xFFFFu32 << shift;
                let lo = self.u;
                let mut parts = Vec::new();
                if lo > 0 {
                    parts.push(Expr::test(Space::Transport, 0, m, (lo - 1) << shift, true));
                }
                if hi < 0xFFFF {
                    parts.push(Expr::not_flip_short(Expr::test(
                        Space::Transport,
                        0,
                        m,
                        hi << shift,
                        true,
                    )));
                }
                Expr::and(parts)
            }
            None => self.comparison(Space::Transport, 0, shift, false),
        }
    }

    fn srcdst_combine(&self, src: impl Fn() -> Expr, dst: impl Fn() -> Expr) -> Expr {
        let mut v = Vec::new();
        if matches!(self.srcdst, SD_SRC | SD_AND | SD_OR) {
            v.push(src());
        }
        if matches!(self.srcdst, SD_DST | SD_AND | SD_OR) {
            v.push(dst());
        }
        let e = if self.srcdst == SD_OR {
            Expr::or(v)
        } else {
            Expr::and(v)
        };
        if self.op_negated {
            Expr::not_flip_short(e)
        } else {
            e
        }
    }

    /// The primitive as tests. `dual`: the program is dual-stack (some
    /// rule of the element is about IPv6): IPv4 primitives then also test
    /// the version, IPv6 ones always do, and primitives about both
    /// families (protocols, ports, transport fields) match either.
    fn compile(&self, dual: bool) -> Expr {
        if self.ty == TYPE_ETHER {
            return self.compile_ether();
        }
        let v4 = || Expr::test(Space::Primary, 0, 0xF000_0000, 0x4000_0000, false);
        let v6 = || Expr::test(Space::Primary, 0, 0xF000_0000, 0x6000_0000, false);
        match (self.fam, dual) {
            (6, _) => Expr::and(vec![v6(), self.compile_family(true)]),
            (_, false) => self.compile_family(false),
            (4, true) => Expr::and(vec![v4(), self.compile_family(false)]),
            _ => Expr::or(vec![
                Expr::and(vec![v4(), self.compile_family(false)]),
                Expr::and(vec![v6(), self.compile_family(true)]),
            ]),
        }
    }

    /// `ether src/dst/host ADDR`: the link header's addresses, as words of
    /// the link space (the header starts at 2 there: destination bytes
    /// 2..8, source 8..14), whatever the network protocol.
    fn compile_ether(&self) -> Expr {
        let a = self.ether.unwrap_or([0; 6]);
        let word = |b: [u8; 4]| u32::from_be_bytes(b);
        let src = || {
            Expr::and(vec![
                Expr::test(
                    Space::Link,
                    8,
                    u32::MAX,
                    word([a[0], a[1], a[2], a[3]]),
                    false,
                ),
                Expr::test(
                    Space::Link,
                    12,
                    0xFFFF_0000,
                    word([a[4], a[5], 0, 0]),
                    false,
                ),
            ])
        };
        let dst = || {
            Expr::and(vec![
                Expr::test(Space::Link, 0, 0x0000_FFFF, word([0, 0, a[0], a[1]]), false),
                Expr::test(
                    Space::Link,
                    4,
                    u32::MAX,
                    word([a[2], a[3], a[4], a[5]]),
                    false,
                ),
            ])
        };
        self.srcdst_combine(src, dst)
    }

    /// The primitive's tests for IPv4 packets, or for the IPv6 layout.
    fn compile_family(&self, six: bool) -> Expr {
        let mut parts = Vec::new();
        if self.transp != UNKNOWN {
            parts.push(if six {
                proto6_expr(self.transp)
            } else {
                proto_expr(self.transp)
            });
        }
        if !six
            && (self.ty == TYPE_PORT
                || self.ty == TYPE_TCPOPT
                || (self.ty & TYPE_FIELD != 0 && self.ty & FIELD_PROTO_MASK != 0))
        {
            // Only first fragments carry transport headers. (An IPv6
            // packet's transport bytes are empty unless the walk found its
            // upper-layer header.)
            parts.push(Expr::test(Space::Primary, 4, 0x1FFF, 0, false));
        }
        match self.ty {
            TYPE_IP6 => {}
            TYPE_HOST if six => {
                let (a, m) = self.addr6.unwrap_or(([0; 16], [0; 16]));
                let addr = |base: u32| {
                    let words = (0..4u32).map(|i| {
                        let k = i as usize * 4;
                        let w =
                            |b: &[u8; 16]| u32::from_be_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
                        Expr::test(Space::Primary, base + 4 * i, w(&m), w(&a), false)
                    });
                    Expr::and(words.collect())
                };
                parts.push(self.srcdst_combine(|| addr(8), || addr(24)));
            }
            TYPE_HOST => parts.push(self.srcdst_combine(
                || self.comparison(Space::Primary, 12, 0, false),
                || self.comparison(Space::Primary, 16, 0, false),
            )),
            TYPE_PROTO if six => {
                if self.transp < 256 {
                    parts.push(self.comparison(Space::Primary, 4, 8, true));
                }
            }
            TYPE_PROTO => {
                if self.transp < 256 {
                    parts.push(self.comparison(Space::Primary, 8, 16, true));
                }
            }
            TYPE_IPFRAG if six => {
                let e = Expr::test(
                    Space::Primary,
                    V6_META as u32,
                    (V6_FLAG_FRAG as u32) << 16,
                    0,
                    false,
                );
                parts.push(if self.op_negated {
                    e
                } else {
                    Expr::not_flip_short(e)
                });
            }
            TYPE_IPFRAG => {
                let e = Expr::test(Space::Primary, 4, 0x3FFF, 0, false);
                parts.push(if self.op_negated {
                    e
                } else {
                    Expr::not_flip_short(e)
                });
            }
            TYPE_PORT => {
                parts.push(self.srcdst_combine(|| self.port_side(16), || self.port_side(0)))
            }
            TYPE_TCPOPT => parts.push(Expr::test(
                Space::Transport,
                12,
                self.mask << 16,
                self.u << 16,
                false,
            )),
            t => {
                let offset = ((t & FIELD_OFFSET_MASK) >> FIELD_OFFSET_SHIFT) as u32;
                let length = ((t & FIELD_LENGTH_MASK) + 1) as u32;
                let word_offset = (offset >> 3) & !3;
                let bit_offset = offset & 0x1F;
                let space = if t & FIELD_PROTO_MASK != 0 {
                    Space::Transport
                } else {
                    Space::Primary
                };
                parts.push(self.comparison(space, word_offset, 32 - (bit_offset + length), true));
            }
        }
        Expr::and(parts)
    }
}

/// The name of an IPv6 layout field, for messages.
fn v6_field_name(t: i32) -> &'static str {
    match t {
        FIELD6_HLIM => "ip6 hlim",
        FIELD6_FLOW => "ip6 flow",
        FIELD6_NXT => "ip6 nxt",
        FIELD6_PLEN => "ip6 plen",
        FIELD6_DSCP => "ip6 dscp",
        _ => "ip6 tclass",
    }
}

/// The upper-layer protocol test in the IPv6 layout (its next-header
/// byte, bits 8-15 of the word at 4, holds the protocol after the
/// extension headers).
fn proto6_expr(p: i32) -> Expr {
    proto_test(p, 4, 8)
}

/// The IPv4 protocol test (bits 16-23 of the word at 8).
fn proto_expr(p: i32) -> Expr {
    proto_test(p, 8, 16)
}

/// A protocol test on the byte at bit `shift` of the word at `off`:
/// `tcpudp` is either, pseudo-protocols (`transp`, `payload`) any.
fn proto_test(p: i32, off: u32, shift: u32) -> Expr {
    let t = |v: i32| {
        Expr::test(
            Space::Primary,
            off,
            0xFF << shift,
            (v as u32 & 0xFF) << shift,
            false,
        )
    };
    if p == PROTO_TCP_OR_UDP {
        Expr::or(vec![t(PROTO_TCP), t(PROTO_UDP)])
    } else if p >= 256 {
        Expr::Const(true)
    } else {
        t(p)
    }
}

/// Parser state for one pattern.
pub(crate) struct Parser<'a> {
    words: &'a [String],
    prev: Prim,
    depth: usize,
    /// Compile for a dual-stack program (see `Prim::compile`).
    dual: bool,
    /// Some primitive was about IPv6.
    saw_v6: bool,
}

type PResult<T> = Result<T, String>;

impl<'a> Parser<'a> {
    pub fn new(words: &'a [String], dual: bool) -> Self {
        Parser {
            words,
            prev: Prim::default(),
            depth: 0,
            dual,
            saw_v6: false,
        }
    }

    fn word(&self, pos: usize) -> Option<&str> {
        self.words.get(pos).map(String::as_str)
    }

    fn is(&self, pos: usize, a: &str, b: &str) -> bool {
        matches!(self.word(pos), Some(w) if w == a || w == b)
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("expression nested too deeply".into());
        }
        Ok(())
    }

    /// expr ::= orexpr | orexpr `?` expr `:` expr
    pub fn parse_expr(&mut self, pos: usize) -> PResult<(usize, Expr)> {
        self.enter()?;
        let (mut pos, c) = self.parse_orexpr(pos)?;
        let r = if self.is(pos, "?", "?") {
            pos += 1;
            let start = pos;
            let (p2, a) = self.parse_expr(pos)?;
            if p2 == start || !self.is(p2, ":", ":") {
                return Err("missing `:` in ternary expression".into());
            }
            let (p3, b) = self.parse_expr(p2 + 1)?;
            pos = p3;
            Expr::ternary(c, a, b)
        } else {
            c
        };
        self.depth -= 1;
        Ok((pos, r))
    }

    fn parse_orexpr(&mut self, pos: usize) -> PResult<(usize, Expr)> {
        let (mut pos, t) = self.parse_term(pos)?;
        let mut v = vec![t];
        while self.is(pos, "or", "||") {
            let (p, t) = self.parse_term(pos + 1)?;
            pos = p;
            v.push(t);
        }
        Ok((pos, Expr::or(v)))
    }

    fn parse_term(&mut self, pos: usize) -> PResult<(usize, Expr)> {
        let (mut pos, first) = match self.parse_factor(pos, false)? {
            (p, Some(e)) => (p, e),
            (_, None) => return Err(self.missing(pos)),
        };
        let mut v = vec![first];
        loop {
            let explicit = self.is(pos, "and", "&&");
            let start = pos + usize::from(explicit);
            match self.parse_factor(start, false)? {
                (p, Some(e)) => {
                    pos = p;
                    v.push(e);
                }
                (_, None) => {
                    if explicit {
                        return Err(self.missing(start));
                    }
                    break;
                }
            }
        }
        Ok((pos, Expr::and(v)))
    }

    fn missing(&self, pos: usize) -> String {
        match self.word(pos) {
            Some(w) => format!("missing expression before `{w}`"),
            None => "missing expression".into(),
        }
    }

    fn parse_factor(&mut self, pos: usize, negated: bool) -> PResult<(usize, Option<Expr>)> {
        if self.is(pos, "not", "!") {
            self.enter()?;
            let r = match self.parse_factor(pos + 1, !negated)? {
                (p, Some(e)) => (p, Some(e)),
                (_, None) => {
                    return Err(format!("missing expression after `{}`", self.words[pos]));
                }
            };
            self.depth -= 1;
            Ok(r)
        } else if self.is(pos, "(", "(") {
            if self.word(pos + 1).is_none() || self.is(pos + 1, ")", ")") {
                return Err("missing expression after `(`".into());
            }
            let (p, e) = self.parse_expr(pos + 1)?;
            if !self.is(p, ")", ")") {
                return Err(match self.word(p) {
                    Some(w) => format!("missing `)` before `{w}`"),
                    None => "missing `)`".into(),
                });
            }
            Ok((p + 1, Some(if negated { Expr::not(e) } else { e })))
        } else {
            self.parse_test(pos, negated)
        }
    }

    fn parse_test(&mut self, mut pos: usize, mut negated: bool) -> PResult<(usize, Option<Expr>)> {
        let n = self.words.len();
        let Some(first_word) = self.word(pos) else {
            return Ok((pos, None));
        };
        if matches!(first_word, ")" | "||" | "or" | "?" | ":") {
            return Ok((pos, None));
        }
        if first_word == "true" || first_word == "false" {
            return Ok((
                pos + 1,
                Some(Expr::Const((first_word == "true") != negated)),
            ));
        }

        let first_pos = pos;
        let mut prim = Prim::default();
        let mut header = 0u8;

        // Qualifiers.
        while pos < n {
            let wd = self.words[pos].as_str();
            match lookup(wd, 0, UNKNOWN) {
                Ok(Lookup::Type(mut t)) => {
                    if t == FIELD_ICMP_TYPE && prim.transp == PROTO_ICMP6 {
                        t = FIELD_ICMP6_TYPE;
                    }
                    prim.set_type(t)?;
                    if t & TYPE_FIELD != 0 && t & FIELD_PROTO_MASK != 0 {
                        prim.set_transp((t & FIELD_PROTO_MASK) >> FIELD_PROTO_SHIFT)?;
                    }
                }
                Ok(Lookup::Value(TYPE_PROTO, v)) => prim.set_transp(v as i32)?,
                Ok(Lookup::Value(..)) | Err(_) => break,
                Ok(Lookup::None) => {
                    if wd == "src" {
                        if pos + 2 < n && matches!(self.words[pos + 2].as_str(), "dst" | "dest") {
                            match self.words[pos + 1].as_str() {
                                "and" | "&&" => {
                                    prim.set_srcdst(SD_AND)?;
                                    pos += 2;
                                }
                                "or" | "||" => {
                                    prim.set_srcdst(SD_OR)?;
                                    pos += 2;
                                }
                                _ => prim.set_srcdst(SD_SRC)?,
                            }
                        } else {
                            prim.set_srcdst(SD_SRC)?;
                        }
                    } else if wd == "dst" || wd == "dest" {
                        prim.set_srcdst(SD_DST)?;
                    } else if wd == "ip" || wd == "ether" || wd == "ip6" {
                        if header != 0 {
                            break;
                        }
                        header = if wd == "ip6" { b'6' } else { wd.as_bytes()[0] };
                    } else if wd == "not" || wd == "!" {
                        negated = !negated;
                    } else {
                        break;
                    }
                }
            }
            pos += 1;
        }

        if pos != first_pos {
            self.prev = Prim::default();
        }

        let cur = |pos: usize| -> &str {
            if pos + 1 >= n {
                ""
            } else {
                self.words[pos].as_str()
            }
        };

        // Optional [POS:LEN].
        let mut wd = cur(pos);
        if wd == "[" && pos > first_pos && prim.ty == TYPE_NONE {
            pos = self.parse_brackets(&mut prim, pos)?;
            wd = cur(pos);
        }

        // Optional bitmask.
        let mut mask = None;
        if wd == "&" && pos + 1 < n {
            let mw = self.words[pos + 1].as_str();
            if let Some(m) = parse_int(mw, false) {
                mask = Some((TYPE_INT, m as u32));
            } else if header != b'e' {
                if let Some(m) = parse_ip(mw) {
                    mask = Some((TYPE_HOST, m));
                }
            }
            if let Some((_, m)) = mask {
                pos += 2;
                if m == 0 {
                    return Err("zero mask ignored".into());
                }
            }
            wd = cur(pos);
        }

        // Optional relation.
        pos += 1;
        match wd {
            "=" | "==" => {}
            "!=" => prim.op_negated = true,
            ">" => prim.op = Op::Gt,
            "<" => prim.op = Op::Lt,
            ">=" => {
                prim.op = Op::Lt;
                prim.op_negated = true;
            }
            "<=" => {
                prim.op = Op::Gt;
                prim.op_negated = true;
            }
            _ => pos -= 1,
        }

        // The data.
        let mut last_word = wd.to_string();
        if pos < n {
            let wd = self.words[pos].as_str();
            last_word = wd.to_string();
            let lk = lookup(wd, prim.ty, prim.transp)?;
            pos += 1;
            match lk {
                Lookup::Value(t, v) => {
                    prim.data = t;
                    prim.u = v;
                }
                _ => {
                    if let Some(v) = parse_int(wd, true) {
                        prim.data = TYPE_INT;
                        prim.u = v as u32;
                    } else if let Some(a) = parse_ip(wd) {
                        if pos + 1 < n && self.words[pos] == "mask" {
                            if let Some(m) = parse_ip(&self.words[pos + 1]) {
                                pos += 2;
                                prim.data = TYPE_NET;
                                prim.u = a;
                                prim.mask = m;
                            } else {
                                prim.data = TYPE_HOST;
                                prim.u = a;
                            }
                        } else {
                            prim.data = TYPE_HOST;
                            prim.u = a;
                        }
                    } else if let Some((a, m)) = parse_prefix(wd) {
                        prim.data = TYPE_NET;
                        prim.u = a;
                        prim.mask = m;
                    } else if let Some((a, m)) = wd
                        .contains(':')
                        .then(|| pronto_lang::args::parse_ip6_prefix(wd).ok())
                        .flatten()
                    {
                        prim.data = if wd.contains('/') {
                            TYPE_NET
                        } else {
                            TYPE_HOST
                        };
                        prim.addr6 = Some((a, m));
                        prim.fam = 6;
                    } else if let Some((lo, hi)) = parse_range(wd) {
                        prim.data = TYPE_INT;
                        prim.u = lo;
                        prim.range_hi = Some(hi);
                    } else if let Some(e) = parse_ether_addr(wd) {
                        prim.data = TYPE_ETHER;
                        prim.ether = Some(e);
                    } else if wd.contains(':') && wd.bytes().any(|c| c.is_ascii_hexdigit()) {
                        return Err(format!("`{wd}`: not an IPv6 address or prefix"));
                    } else {
                        if prim.op != Op::Eq || prim.op_negated {
                            return Err(format!("dangling operator near `{wd}`"));
                        }
                        pos -= 1;
                    }
                }
            }
        }

        if pos == first_pos {
            return Err(if last_word.is_empty() {
                "empty term".into()
            } else {
                format!("unknown word `{last_word}`")
            });
        }

        let prev = std::mem::take(&mut self.prev);
        prim.check(&prev, header, mask)?;
        self.saw_v6 |= prim.fam == 6;
        let mut e = prim.compile(self.dual);
        if negated {
            e = Expr::not(e);
        }
        self.prev = prim;
        Ok((pos, Some(e)))
    }

    fn parse_brackets(&self, prim: &mut Prim, pos: usize) -> PResult<usize> {
        let n = self.words.len();
        let mut p = pos + 1;
        let mut comb = String::new();
        while p < n && self.words[p] != "]" {
            comb.push_str(&self.words[p]);
            p += 1;
        }
        if p >= n {
            return Err("missing `]`".into());
        }
        p += 1;
        let syntax = || "syntax error after `[`, expected `[POS]` or `[POS:LEN]`".to_string();
        let (fieldpos, len) = if let Some(c) = comb.find(':').filter(|&c| c + 1 < comb.len()) {
            let a = parse_int(&comb[..c], true).ok_or_else(syntax)?;
            let b = parse_int(&comb[c + 1..], true).ok_or_else(syntax)?;
            (a, b)
        } else if let Some(c) = comb.find(',').filter(|&c| c + 1 < comb.len()) {
            let a = parse_int(&comb[..c], true).ok_or_else(syntax)?;
            let b = parse_int(&comb[c + 1..], true).ok_or_else(syntax)?;
            (a, b - a + 1)
        } else {
            (parse_int(&comb, true).ok_or_else(syntax)?, 1)
        };
        let (fp, l) = (fieldpos * 8, len * 8);
        if !(1..=32).contains(&l) {
            return Err("LEN in `[POS:LEN]` out of range, should be between 1 and 4".into());
        }
        if !(0..=0xFFF8).contains(&fp) {
            return Err(format!("POS in `[POS:LEN]` out of range: {fieldpos}"));
        }
        if (fp & !31) != ((fp + l - 1) & !31) {
            return Err(format!(
                "field [{fieldpos}:{len}] does not fit in a single word"
            ));
        }
        let transp = if prim.transp == UNKNOWN {
            0
        } else {
            prim.transp
        };
        if !(0..=0x1FF).contains(&transp) {
            return Err("bad protocol for `[POS:LEN]`".into());
        }
        prim.set_type(
            TYPE_FIELD
                | (transp << FIELD_PROTO_SHIFT)
                | ((fp as i32) << FIELD_OFFSET_SHIFT)
                | (l as i32 - 1),
        )?;
        Ok(p)
    }
}

/// `A-B` with decimal port numbers (pronto extension).
fn parse_range(w: &str) -> Option<(u32, u32)> {
    let (a, b) = w.split_once('-')?;
    if a.is_empty()
        || b.is_empty()
        || !a.bytes().all(|c| c.is_ascii_digit())
        || !b.bytes().all(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// Parse one IPFilter-style argument (`ACTION EXPR`). Returns the output
/// slot (None = drop) and the expression. Errors exclude the `pattern N:`
/// prefix.
/// `dual`: compile for a dual-stack program. The third value says whether
/// the argument had an IPv6 primitive (then the whole element is compiled
/// again as dual-stack).
pub(crate) fn parse_filter_arg(
    words: &[String],
    dual: bool,
) -> PResult<(Option<usize>, Expr, bool)> {
    let Some(slotwd) = words.first() else {
        return Err("empty pattern".into());
    };
    let slot = match slotwd.as_str() {
        "allow" => Some(0),
        "deny" | "drop" => None,
        w => match parse_int(w, true) {
            Some(n) if n >= 0 => Some(n as usize),
            Some(_) => return Err(format!("slot `{w}` out of range")),
            None => return Err(format!("unknown slot ID `{w}`")),
        },
    };
    let mut saw_v6 = false;
    let expr = if words.len() == 1
        || (words.len() == 2 && matches!(words[1].as_str(), "-" | "any" | "all"))
    {
        Expr::Const(true)
    } else {
        let mut p = Parser::new(words, dual);
        let (pos, e) = p.parse_expr(1)?;
        if pos < words.len() {
            return Err(format!("garbage after expression at `{}`", words[pos]));
        }
        saw_v6 = p.saw_v6;
        e
    };
    Ok((slot, expr, saw_v6))
}

/// Parse a bare expression as output 0 (unit-test helper).
#[cfg(test)]
pub(crate) fn debug_parse(s: &str) -> PResult<Expr> {
    let mut w = vec!["0".to_string()];
    w.extend(separate_text(s));
    parse_filter_arg(&w, false).map(|(_, e, _)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints() {
        assert_eq!(parse_int("10", true), Some(10));
        assert_eq!(parse_int("0x10", true), Some(16));
        assert_eq!(parse_int("010", true), Some(8));
        assert_eq!(parse_int("08", true), None);
        assert_eq!(parse_int("0b101", true), Some(5));
        assert_eq!(parse_int("1_000", true), Some(1000));
        assert_eq!(parse_int("-5", true), Some(-5));
        assert_eq!(parse_int("-5", false), None);
        assert_eq!(parse_int("4294967295", false), Some(4_294_967_295));
        assert_eq!(parse_int("4294967296", false), None);
        assert_eq!(parse_int("", true), None);
        assert_eq!(parse_int("0x", true), None);
    }

    #[test]
    fn addrs() {
        assert_eq!(parse_ip("1.2.3.4"), Some(0x0102_0304));
        assert_eq!(parse_ip("1.2.3"), None);
        assert_eq!(parse_ip("1.2.3.256"), None);
        assert_eq!(parse_prefix("10.0.0.0/8"), Some((0x0A00_0000, 0xFF00_0000)));
        assert_eq!(parse_prefix("10/8"), Some((0x0A00_0000, 0xFF00_0000)));
        assert_eq!(parse_prefix("10/16"), None);
        assert_eq!(
            parse_prefix("1.2.3.4/255.255.0.0"),
            Some((0x0102_0304, 0xFFFF_0000))
        );
        assert_eq!(parse_prefix("1.2.3.4/33"), None);
    }

    #[test]
    fn tokens() {
        assert_eq!(
            separate_text("ip[9]&&!(a||b)!=c>=d 1000-2000 x : y"),
            vec![
                "ip",
                "[",
                "9",
                "]",
                "&&",
                "!",
                "(",
                "a",
                "||",
                "b",
                ")",
                "!=",
                "c",
                ">=",
                "d",
                "1000-2000",
                "x",
                ":",
                "y"
            ]
        );
    }

    #[test]
    fn parses() {
        for s in [
            "tcp dst port www or tcp dst port 443",
            "udp and (src port domain or dst port domain)",
            "icmp type echo",
            "tcp opt syn and not tcp opt ack",
            "ip proto 47 or ip proto 89",
            "src net 192.168.1.0/24",
            "src host 1.2.3.4 or 5.6.7.8",
            "tcp port 80 or 443",
            "ip[9] = 6",
            "transp[0:2] & 0xFF00 != 0",
            "ip ttl > 5 and ip len < 100",
            "a ? b : c",
        ] {
            let r = debug_parse(s);
            if s == "a ? b : c" {
                assert!(r.is_err());
            } else {
                assert!(r.is_ok(), "{s}: {r:?}");
            }
        }
    }
}
