//! `Script` and `DriverManager`: Click's scripting elements.
//!
//! A script is a list of instructions (one per configuration argument) run
//! one after another: setting variables, calling handlers, printing,
//! branching, and blocking until a timer fires (`wait TIME`), a step
//! arrives (`pause`), or, for driver scripts, a driver stop event arrives.
//! Text undergoes Click's substitutions: `$var`, `${var}`, `$(HANDLER ARGS)`
//! (nested), `$?`, `$args`, `$1`..., `$#`.
//!
//! The runtime drives a script through [`Script::run`] (at router start and
//! when [`Script::wake_at`] has come) and [`Script::step_event`] (a step, or
//! for a driver script a driver stop event). The router is reached through
//! the [`Env`] trait, so the interpreter can be tested without one.

use std::cell::Cell;
use std::path::{Path, PathBuf};

use pronto_elements::{
    ActionProfile, ClassEntry, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out,
    Spec,
};
use pronto_lang::args::{
    parse_f64, parse_i64, parse_seconds, parse_u32, parse_u64, split_args, split_keyword,
};
use pronto_packet::Batch;

/// What a script run leaves behind.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ScriptState {
    /// Waiting (for time, a step, or a stop event).
    Blocked,
    /// Finished; `stop` asks the driver to stop.
    Ended { stop: bool, error: Option<String> },
}

/// The router as a script sees it.
pub(crate) trait Env {
    /// Calls a read handler (`ELEMENT.HANDLER`, or a global handler).
    fn read(&mut self, handler: &str, params: &str) -> Result<String, String>;
    /// Calls a write handler.
    fn write(&mut self, handler: &str, value: &str) -> Result<(), String>;
    /// The current time, ns since the epoch.
    fn now(&self) -> i64;
    /// Prints to standard output (`text` carries its own newline).
    fn print(&mut self, text: &str);
    /// Asks the driver to stop.
    #[allow(dead_code)] // scripts report `stop` through `ScriptState::Ended`
    fn stop(&mut self);
    /// The script element's own name.
    fn my_name(&self) -> &str;
    /// Reports to standard error (`read` results, errors met while running).
    fn eprint(&mut self, text: &str) {
        eprint!("{text}");
    }
}

/// Loop detection: this many jumps without blocking disables a script.
const MAX_JUMPS: u32 = 1000;
/// Fixed-point scale for exact decimal arithmetic (nine fraction digits).
const SCALE: i128 = 1_000_000_000;
/// Click's `RAND_MAX`.
const RAND_MAX: u64 = 0x7fff_ffff;

// ---------------------------------------------------------------------
// Text helpers: Click's word splitting, quoting and unquoting.

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c')
}

/// If a comment starts at `i`, the index just past it.
fn comment_end(b: &[u8], i: usize) -> Option<usize> {
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

/// Index just past the quoted string that starts at `i`.
fn quote_end(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        if q == b'"' && b[j] == b'\\' {
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

/// Index just past a `\<...>` hex string starting at `i`.
fn hex_string_end(b: &[u8], i: usize) -> usize {
    match b[i..].iter().position(|&c| c == b'>') {
        Some(k) => i + k + 1,
        None => b.len(),
    }
}

/// Skips whitespace and comments from `i`.
fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        if is_space(b[i]) {
            i += 1;
        } else if let Some(j) = comment_end(b, i) {
            i = j;
        } else {
            break;
        }
    }
    i
}

/// Splits off the first space-separated word (quotes kept), returning it
/// and the rest with leading space removed (Click's `cp_shift_spacevec`).
fn shift_word(s: &str) -> (&str, &str) {
    let b = s.as_bytes();
    let start = skip_space(b, 0);
    let mut i = start;
    while i < b.len() {
        match b[i] {
            b'/' if comment_end(b, i).is_some() => break,
            b'"' | b'\'' => i = quote_end(b, i),
            b'\\' if b.get(i + 1) == Some(&b'<') => i = hex_string_end(b, i),
            b'\\' => i += 1,
            c if is_space(c) => break,
            _ => i += 1,
        }
    }
    let i = i.min(b.len());
    let rest = skip_space(b, i);
    (&s[start..i], &s[rest..])
}

/// All the space-separated words of `s`.
fn words(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        let (w, r) = shift_word(rest);
        if w.is_empty() {
            break;
        }
        out.push(w);
        rest = r;
    }
    out
}

/// Removes comments and the whitespace around the text, collapsing the
/// space around a comment into one blank (Click's `cp_uncomment`).
fn uncomment(s: &str) -> String {
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = skip_space(b, 0);
    let mut left = i;
    let mut right = i;
    let mut closed = false;
    while i < b.len() {
        if is_space(b[i]) {
            i += 1;
        } else if let Some(j) = comment_end(b, i) {
            i = j;
            closed = true;
        } else {
            if closed {
                out.extend_from_slice(&b[left..right]);
                out.push(b' ');
                left = i;
                closed = false;
            }
            i = match b[i] {
                b'"' | b'\'' => quote_end(b, i),
                b'\\' if b.get(i + 1) == Some(&b'<') => hex_string_end(b, i),
                _ => i + 1,
            };
            right = i;
        }
    }
    out.extend_from_slice(&b[left..right.max(left)]);
    String::from_utf8_lossy(&out).into_owned()
}

/// Removes one layer of quoting (Click's `cp_unquote`): comments and outer
/// whitespace go, quoted parts lose their quotes (double-quoted parts have
/// their escapes decoded), and the parts are concatenated.
fn unquote(s: &str) -> String {
    let x = uncomment(s);
    let b = x.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut quote = 0u8;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' if quote == 0 => {
                quote = c;
                i += 1;
            }
            _ if c == quote => {
                quote = 0;
                i += 1;
            }
            b'\\' if i + 1 < b.len() && (quote == b'"' || (quote == 0 && b[i + 1] == b'<')) => {
                i = pronto_lang::args::process_backslash(b, i, &mut out);
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A double-quoted form of `s` that [`unquote`] turns back into `s`
/// (Click's `cp_quote`).
fn quote(s: &str) -> String {
    let mut rebuilt = String::with_capacity(s.len() + 2);
    rebuilt.push('"');
    for ch in s.chars() {
        match ch {
            '\\' | '"' | '$' => {
                rebuilt.push('\\');
                rebuilt.push(ch);
            }
            '\t' => rebuilt.push_str("\\t"),
            '\r' => rebuilt.push_str("\\r"),
            '\n' => rebuilt.push_str("\\n"),
            c if (c as u32) < 32 || c as u32 == 127 => {
                rebuilt.push_str(&format!("\\{:03o}", c as u32))
            }
            c => rebuilt.push(c),
        }
    }
    rebuilt.push('"');
    rebuilt
}

/// Click's boolean words, exactly.
/// A signal by name (`INT`, `SIGUSR1`) or number, as Click's `NameInfo`
/// knows them.
pub(crate) fn signal_number(s: &str) -> Option<i32> {
    let name = s.strip_prefix("SIG").unwrap_or(s);
    let n = match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "ILL" => 4,
        "ABRT" => 6,
        "FPE" => 8,
        "KILL" => 9,
        "USR1" => 10,
        "SEGV" => 11,
        "USR2" => 12,
        "PIPE" => 13,
        "ALRM" => 14,
        "TERM" => 15,
        "CHLD" => 17,
        "CONT" => 18,
        "STOP" => 19,
        "TSTP" => 20,
        _ => return name.parse().ok().filter(|n| (1..=32).contains(n)),
    };
    Some(n)
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "0" | "n" | "f" | "no" | "false" => Some(false),
        "1" | "y" | "t" | "yes" | "true" => Some(true),
        _ => None,
    }
}

fn bool_text(b: bool) -> String {
    if b { "true" } else { "false" }.to_string()
}

/// Formats ns since the epoch as Click prints a timestamp: six fraction
/// digits when the value is a whole number of microseconds, nine otherwise.
pub(crate) fn click_timestamp(ns: i64) -> String {
    let (sign, abs) = if ns < 0 {
        ("-", ns.unsigned_abs())
    } else {
        ("", ns.unsigned_abs())
    };
    let secs = abs / 1_000_000_000;
    let sub = abs % 1_000_000_000;
    if sub % 1000 == 0 {
        format!("{sign}{secs}.{:06}", sub / 1000)
    } else {
        format!("{sign}{secs}.{sub:09}")
    }
}

// ---------------------------------------------------------------------
// Numbers: 64-bit integers, exact decimals (nine fraction digits), and
// doubles when neither will do.

#[derive(Clone, Copy, Debug)]
enum Num {
    Int(i64),
    /// Fixed point, scaled by [`SCALE`].
    Dec(i128),
    Flt(f64),
}

/// An integer the way Click's `IntArg` reads one (`0x` hex, `0b` binary,
/// leading `0` octal).
fn parse_int(s: &str) -> Option<i64> {
    if s.is_empty() || s.trim() != s {
        return None;
    }
    parse_i64(s).ok()
}

/// A plain decimal with at most nine significant fraction digits.
fn parse_dec(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().all(|c| c.is_ascii_digit())
        || !frac.bytes().all(|c| c.is_ascii_digit())
        || int.len() > 28
    {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    if frac.len() > 9 {
        return None;
    }
    let mut v: i128 = 0;
    for c in int.bytes() {
        v = v * 10 + i128::from(c - b'0');
    }
    let mut f: i128 = 0;
    for k in 0..9 {
        f = f * 10 + frac.as_bytes().get(k).map_or(0, |c| i128::from(c - b'0'));
    }
    let v = v * SCALE + f;
    Some(if neg { -v } else { v })
}

fn parse_num(s: &str) -> Option<Num> {
    if let Some(i) = parse_int(s) {
        return Some(Num::Int(i));
    }
    if let Some(d) = parse_dec(s) {
        return Some(Num::Dec(d));
    }
    if s.trim() != s {
        return None;
    }
    parse_f64(s).ok().map(Num::Flt)
}

impl Num {
    fn to_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Dec(d) => d as f64 / SCALE as f64,
            Num::Flt(f) => f,
        }
    }
    fn to_dec(self) -> Option<i128> {
        match self {
            Num::Int(i) => Some(i128::from(i) * SCALE),
            Num::Dec(d) => Some(d),
            Num::Flt(_) => None,
        }
    }
}

/// Renders a number `0.D × 10^(x+1)`, i.e. with digits `digits` (no
/// leading or trailing zeros) whose first digit has decimal exponent `x`,
/// the way C's `%.12g` does (the caller has kept at most 12 digits).
fn g_render(neg: bool, digits: &str, x: i32) -> String {
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..12).contains(&x) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if x < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", x.unsigned_abs()));
    } else if x >= 0 {
        let int_len = x as usize + 1;
        if digits.len() <= int_len {
            out.push_str(digits);
            out.push_str(&"0".repeat(int_len - digits.len()));
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    } else {
        out.push_str("0.");
        out.push_str(&"0".repeat((-x - 1) as usize));
        out.push_str(digits);
    }
    out
}

/// Formats a double the way Click does (`%.12g`).
/// A real number as Click's script arithmetic prints it.
pub(crate) fn format_real(v: f64) -> String {
    fmt_f64(v)
}

fn fmt_f64(v: f64) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let e = format!("{:.11e}", v.abs());
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    g_render(v < 0.0, if digits.is_empty() { "0" } else { digits }, x)
}

/// Formats an exact decimal: like Click's `%.12g` when the value has at
/// most 12 significant digits (so results agree with Click's), and in full
/// otherwise (where Click would round).
fn fmt_dec(v: i128) -> String {
    if v == 0 {
        return "0".to_string();
    }
    let neg = v < 0;
    let abs = v.unsigned_abs();
    let all = abs.to_string();
    let digits = all.trim_end_matches('0');
    let x = all.len() as i32 - 1 - 9;
    if digits.len() <= 12 {
        return g_render(neg, digits, x);
    }
    let int = abs / SCALE as u128;
    let frac = format!("{:09}", abs % SCALE as u128);
    let frac = frac.trim_end_matches('0');
    let sign = if neg { "-" } else { "" };
    if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    }
}

fn fmt_num(n: Num) -> String {
    match n {
        Num::Int(i) => i.to_string(),
        Num::Dec(d) => fmt_dec(d),
        Num::Flt(f) => fmt_f64(f),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Arith {
    Add,
    Sub,
    Min,
    Max,
    Mul,
    Div,
    Idiv,
}

/// Exact decimal quotient `a / b` (both scaled), if it has at most nine
/// fraction digits.
fn dec_div(a: i128, b: i128) -> Option<i128> {
    if b == 0 {
        return None;
    }
    let num = a.checked_mul(SCALE)?;
    if num % b == 0 {
        Some(num / b)
    } else {
        None
    }
}

fn combine(op: Arith, a: Num, b: Num) -> Num {
    if let (Num::Int(x), Num::Int(y)) = (a, b) {
        match op {
            Arith::Add => return Num::Int(x.wrapping_add(y)),
            Arith::Sub => return Num::Int(x.wrapping_sub(y)),
            Arith::Min => return Num::Int(x.min(y)),
            Arith::Max => return Num::Int(x.max(y)),
            Arith::Mul => return Num::Int(x.wrapping_mul(y)),
            Arith::Div | Arith::Idiv => {}
        }
    }
    if let (Some(x), Some(y)) = (a.to_dec(), b.to_dec()) {
        let exact = match op {
            Arith::Add => x.checked_add(y),
            Arith::Sub => x.checked_sub(y),
            Arith::Min => Some(x.min(y)),
            Arith::Max => Some(x.max(y)),
            Arith::Mul => x
                .checked_mul(y)
                .filter(|p| p % SCALE == 0)
                .map(|p| p / SCALE),
            Arith::Div | Arith::Idiv => dec_div(x, y),
        };
        if let Some(v) = exact {
            return Num::Dec(v);
        }
    }
    let (x, y) = (a.to_f64(), b.to_f64());
    Num::Flt(match op {
        Arith::Add => x + y,
        Arith::Sub => x - y,
        Arith::Min => {
            if x < y {
                x
            } else {
                y
            }
        }
        Arith::Max => {
            if x > y {
                x
            } else {
                y
            }
        }
        Arith::Mul => x * y,
        Arith::Div | Arith::Idiv => x / y,
    })
}

/// `add`, `sub`, `min`, `max`, `mul`, `div`, `idiv` over a list of numbers.
fn arith(op: Arith, params: &str) -> Result<String, String> {
    let mut acc: Option<Num> = None;
    for w in words(params) {
        let n = parse_num(w).ok_or("expected list of numbers")?;
        // Division works on non-integers throughout, as in Click.
        let n = match (op, n) {
            (Arith::Div | Arith::Idiv, Num::Int(i)) => Num::Dec(i128::from(i) * SCALE),
            _ => n,
        };
        acc = Some(match acc {
            None => n,
            Some(a) => combine(op, a, n),
        });
    }
    let acc = acc.unwrap_or(match op {
        Arith::Add | Arith::Sub => Num::Int(0),
        _ => Num::Int(1),
    });
    Ok(match op {
        Arith::Idiv => match acc {
            Num::Int(i) => i.to_string(),
            Num::Dec(d) => i64::try_from(d / SCALE)
                .unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
                .to_string(),
            Num::Flt(f) => (f.trunc() as i64).to_string(),
        },
        _ => fmt_num(acc),
    })
}

fn two_words(params: &str) -> Result<(&str, &str), String> {
    match words(params)[..] {
        [a, b] => Ok((a, b)),
        _ => Err("expected two numbers".into()),
    }
}

/// `mod` (integers) and `rem` (any numbers).
fn modrem(is_mod: bool, params: &str) -> Result<String, String> {
    let (a, b) = two_words(params)?;
    if let (Some(x), Some(y)) = (parse_int(a), parse_int(b)) {
        if y == 0 {
            return Err("division by zero".into());
        }
        return Ok(x.wrapping_rem(y).to_string());
    }
    if is_mod {
        return Err("expected two numbers".into());
    }
    let (x, y) = match (parse_num(a), parse_num(b)) {
        (Some(x), Some(y)) => (x, y),
        _ => return Err("expected two numbers".into()),
    };
    if let (Some(p), Some(q)) = (x.to_dec(), y.to_dec()) {
        if q != 0 {
            return Ok(fmt_dec(p % q));
        }
    }
    Ok(fmt_f64(x.to_f64() % y.to_f64()))
}

/// `neg` and `abs`.
fn negabs(neg: bool, params: &str) -> Result<String, String> {
    let s = params.trim();
    match parse_num(s).ok_or("expected one number")? {
        Num::Int(x) => Ok((if neg || x < 0 { x.wrapping_neg() } else { x }).to_string()),
        Num::Dec(d) => Ok(fmt_dec(if neg || d < 0 { -d } else { d })),
        Num::Flt(f) => Ok(fmt_f64(if neg { -f } else { f.abs() })),
    }
}

/// `eq`, `ne`, `lt`, `gt`, `le`, `ge`: numeric when both parse as numbers,
/// bytewise on the unquoted strings otherwise.
fn compare(op: &str, params: &str) -> Result<String, String> {
    use std::cmp::Ordering;
    let (a, b) = two_words(params)?;
    let ord = match (parse_num(a), parse_num(b)) {
        (Some(Num::Int(x)), Some(Num::Int(y))) => Some(x.cmp(&y)),
        (Some(x), Some(y)) => match (x.to_dec(), y.to_dec()) {
            (Some(p), Some(q)) => Some(p.cmp(&q)),
            _ => x.to_f64().partial_cmp(&y.to_f64()),
        },
        _ => Some(unquote(a).as_bytes().cmp(unquote(b).as_bytes())),
    };
    let r = match (op, ord) {
        ("eq", Some(o)) => o == Ordering::Equal,
        ("ne", Some(o)) => o != Ordering::Equal,
        ("lt", Some(o)) => o == Ordering::Less,
        ("gt", Some(o)) => o == Ordering::Greater,
        ("le", Some(o)) => o != Ordering::Greater,
        ("ge", Some(o)) => o != Ordering::Less,
        // NaN compares unequal to everything.
        (op, _) => op == "ne",
    };
    Ok(bool_text(r))
}

/// Pads a formatted integer as printf does.
#[derive(Default)]
struct Flags {
    minus: bool,
    zero: bool,
    plus: bool,
    space: bool,
    alt: bool,
}

fn pad(flags: &Flags, width: usize, prefix: &str, body: &str, zero_ok: bool) -> String {
    let len = prefix.len() + body.chars().count();
    if len >= width {
        return format!("{prefix}{body}");
    }
    let fill = width - len;
    if flags.minus {
        format!("{prefix}{body}{}", " ".repeat(fill))
    } else if flags.zero && zero_ok {
        format!("{prefix}{}{body}", "0".repeat(fill))
    } else {
        format!("{}{prefix}{body}", " ".repeat(fill))
    }
}

/// The `sprintf` handler: a format string then its arguments; conversions
/// `d i u o x X s %` with flags, width, precision and length modifiers.
fn sprintf(params: &str) -> Result<String, String> {
    const SYNTAX: &str = "syntax error";
    let (fmt, mut rest) = shift_word(params);
    let fmt = unquote(fmt);
    let mut next_arg = || {
        let (w, r) = shift_word(rest);
        rest = r;
        w.to_string()
    };
    let f = fmt.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < f.len() {
        let Some(k) = f[i..].iter().position(|&c| c == b'%') else {
            out.push_str(&fmt[i..]);
            break;
        };
        out.push_str(&fmt[i..i + k]);
        i += k + 1;
        let mut flags = Flags::default();
        while i < f.len() {
            match f[i] {
                b'0' => flags.zero = true,
                b'#' => flags.alt = true,
                b'-' => flags.minus = true,
                b' ' => flags.space = true,
                b'+' => flags.plus = true,
                _ => break,
            }
            i += 1;
        }
        let mut width = 0usize;
        if f.get(i) == Some(&b'*') {
            let w = parse_int(&next_arg()).ok_or(SYNTAX)?;
            if w < 0 {
                flags.minus = true;
            }
            width = w.unsigned_abs() as usize;
            i += 1;
        } else {
            while let Some(d) = f.get(i).filter(|c| c.is_ascii_digit()) {
                width = width
                    .saturating_mul(10)
                    .saturating_add(usize::from(d - b'0'));
                i += 1;
            }
        }
        let mut precision: Option<usize> = None;
        if f.get(i) == Some(&b'.') {
            i += 1;
            if f.get(i) == Some(&b'*') {
                let p = parse_int(&next_arg()).filter(|p| *p >= 0).ok_or(SYNTAX)?;
                precision = Some(p as usize);
                i += 1;
            } else {
                let mut p = 0usize;
                while let Some(d) = f.get(i).filter(|c| c.is_ascii_digit()) {
                    p = p.saturating_mul(10).saturating_add(usize::from(d - b'0'));
                    i += 1;
                }
                precision = Some(p);
            }
        }
        let mut short = false;
        while let Some(c) = f.get(i) {
            match c {
                b'h' => short = true,
                b'l' | b'L' | b'q' => short = false,
                _ => break,
            }
            i += 1;
        }
        let Some(&conv) = f.get(i) else {
            return Err(SYNTAX.into());
        };
        i += 1;
        match conv {
            b'd' | b'i' => {
                let v = parse_int(&next_arg()).ok_or(SYNTAX)?;
                let v = if short { i64::from(v as i16) } else { v };
                let mut digits = v.unsigned_abs().to_string();
                if let Some(p) = precision {
                    if p == 0 && v == 0 {
                        digits.clear();
                    } else if digits.len() < p {
                        digits = format!("{}{digits}", "0".repeat(p - digits.len()));
                    }
                }
                let sign = if v < 0 {
                    "-"
                } else if flags.plus {
                    "+"
                } else if flags.space {
                    " "
                } else {
                    ""
                };
                out.push_str(&pad(&flags, width, sign, &digits, precision.is_none()));
            }
            b'u' | b'o' | b'x' | b'X' => {
                let w = next_arg();
                let v = parse_u64(&w)
                    .ok()
                    .filter(|_| !w.starts_with('-'))
                    .ok_or(SYNTAX)?;
                let v = if short { u64::from(v as u16) } else { v };
                let mut digits = match conv {
                    b'u' => v.to_string(),
                    b'o' => format!("{v:o}"),
                    b'x' => format!("{v:x}"),
                    _ => format!("{v:X}"),
                };
                if let Some(p) = precision {
                    if p == 0 && v == 0 {
                        digits.clear();
                    } else if digits.len() < p {
                        digits = format!("{}{digits}", "0".repeat(p - digits.len()));
                    }
                }
                let mut prefix = "";
                if flags.alt {
                    match conv {
                        b'o' if !digits.starts_with('0') => digits.insert(0, '0'),
                        b'x' if v != 0 => prefix = "0x",
                        b'X' if v != 0 => prefix = "0X",
                        _ => {}
                    }
                }
                out.push_str(&pad(&flags, width, prefix, &digits, precision.is_none()));
            }
            b's' => {
                let s = unquote(&next_arg());
                let s: String = match precision {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                };
                out.push_str(&pad(&flags, width, "", &s, false));
            }
            b'%' => out.push('%'),
            _ => return Err(SYNTAX.into()),
        }
    }
    if !rest.trim().is_empty() {
        return Err(SYNTAX.into());
    }
    Ok(out)
}

/// The read handlers that need nothing but their parameters.
fn pure_read(h: &str, params: &str) -> Option<Result<String, String>> {
    let arith_op = match h {
        "add" => Some(Arith::Add),
        "sub" => Some(Arith::Sub),
        "min" => Some(Arith::Min),
        "max" => Some(Arith::Max),
        "mul" => Some(Arith::Mul),
        "div" => Some(Arith::Div),
        "idiv" => Some(Arith::Idiv),
        _ => None,
    };
    if let Some(op) = arith_op {
        return Some(arith(op, params));
    }
    Some(match h {
        "mod" => modrem(true, params),
        "rem" => modrem(false, params),
        "neg" => negabs(true, params),
        "abs" => negabs(false, params),
        "eq" | "ne" | "lt" | "gt" | "le" | "ge" => compare(h, params),
        "not" => parse_bool(params.trim())
            .map(|b| bool_text(!b))
            .ok_or_else(|| "syntax error".to_string()),
        "and" | "or" | "nand" | "nor" => {
            let is_and = h == "and" || h == "nand";
            let mut v = is_and;
            for w in words(params) {
                if v != is_and {
                    break;
                }
                let Some(x) = parse_bool(w) else {
                    return Some(Err("syntax error".into()));
                };
                v = if is_and { v && x } else { v || x };
            }
            if h == "nand" || h == "nor" {
                v = !v;
            }
            Ok(bool_text(v))
        }
        "if" => {
            let (c, rest) = shift_word(params);
            match parse_bool(c) {
                Some(true) => Ok(shift_word(rest).0.to_string()),
                Some(false) => Ok(shift_word(shift_word(rest).1).0.to_string()),
                None => Err("syntax error".into()),
            }
        }
        "in" => {
            let (first, mut rest) = shift_word(params);
            let word = unquote(first);
            let mut found = false;
            while !word.is_empty() && !rest.is_empty() && !found {
                let (w, r) = shift_word(rest);
                rest = r;
                found = unquote(w) == word;
            }
            Ok(bool_text(found))
        }
        "first" => Ok(shift_word(params).0.to_string()),
        "sprintf" => sprintf(params),
        "length" => Ok(params.len().to_string()),
        "unquote" => Ok(unquote(params)),
        "htons" | "ntohs" | "htonl" | "ntohl" => match parse_int(params.trim()) {
            None => Err("syntax error".into()),
            Some(x) if h.ends_with('s') => Ok((x as u16).swap_bytes().to_string()),
            Some(x) => Ok((x as u32).swap_bytes().to_string()),
        },
        _ => return None,
    })
}

// ---------------------------------------------------------------------
// The script element.

/// Script types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Active,
    Passive,
    Driver,
    /// Runs once per packet; its `return` value is the output port.
    Packet,
    /// Runs when one of its signals arrives (a `run` each time); `end`
    /// leaves it waiting for the next, `exit` removes it.
    Signal,
}

/// Why the script is being stepped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepKind {
    /// A `step` write.
    Normal,
    /// A driver stop event (driver scripts only).
    Router,
    /// A timer (or the start of an active script).
    Timer,
    /// A `goto` or `run` call.
    Jump,
}

/// Where a script ends.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Fin {
    End,
    Exit,
    Stop,
    Return,
    Error(Option<String>),
    /// Too many jumps: the script is disabled.
    Disabled,
}

/// A `goto` destination.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    At(usize),
    End,
    Exit,
    Stop,
    Error,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SetKind {
    Set,
    Init,
    Export,
}

#[derive(Clone, Debug)]
enum Insn {
    /// Marks scripts that start running at once (consumes the start step).
    Initial,
    Pause(u32),
    Wait(String),
    Print {
        q: bool,
        newline: bool,
        text: String,
    },
    Read {
        q: bool,
        text: String,
    },
    Write {
        q: bool,
        text: String,
    },
    Set {
        kind: SetKind,
        q: bool,
        var: String,
        text: String,
    },
    Return {
        q: bool,
        text: String,
    },
    Label(String),
    Goto {
        target: Target,
        cond: String,
    },
    End,
    Exit,
    Stop,
    Error {
        q: bool,
        msg: String,
    },
}

/// Handlers every script has (besides exported variables).
const OWN_HANDLERS: &[&str] = &[
    "step", "goto", "run", "kill", "add", "sub", "min", "max", "mul", "div", "idiv", "mod", "rem",
    "neg", "abs", "eq", "ne", "gt", "ge", "lt", "le", "not", "sprintf", "first", "random", "and",
    "or", "nand", "nor", "if", "in", "now", "length", "unquote", "htons", "htonl", "ntohs",
    "ntohl", "cat", "catq", "get", "set", "shift", "name", "class", "config",
];

const HANDLERS: &[HandlerInfo] = &[
    HandlerInfo::write("step"),
    HandlerInfo::write("goto"),
    HandlerInfo::rw("run"),
    HandlerInfo::read("add"),
    HandlerInfo::read("sub"),
    HandlerInfo::read("min"),
    HandlerInfo::read("max"),
    HandlerInfo::read("mul"),
    HandlerInfo::read("div"),
    HandlerInfo::read("idiv"),
    HandlerInfo::read("mod"),
    HandlerInfo::read("rem"),
    HandlerInfo::read("neg"),
    HandlerInfo::read("abs"),
    HandlerInfo::read("eq"),
    HandlerInfo::read("ne"),
    HandlerInfo::read("gt"),
    HandlerInfo::read("ge"),
    HandlerInfo::read("lt"),
    HandlerInfo::read("le"),
    HandlerInfo::read("not"),
    HandlerInfo::read("sprintf"),
    HandlerInfo::read("first"),
    HandlerInfo::read("random"),
    HandlerInfo::read("and"),
    HandlerInfo::read("or"),
    HandlerInfo::read("nand"),
    HandlerInfo::read("nor"),
    HandlerInfo::read("if"),
    HandlerInfo::read("in"),
    HandlerInfo::read("now"),
    HandlerInfo::read("length"),
    HandlerInfo::read("unquote"),
    HandlerInfo::read("htons"),
    HandlerInfo::read("htonl"),
    HandlerInfo::read("ntohs"),
    HandlerInfo::read("ntohl"),
    HandlerInfo::read("cat"),
    HandlerInfo::read("catq"),
    HandlerInfo::read("get"),
    HandlerInfo::write("set"),
    HandlerInfo::read("shift"),
];

/// A Click script (`Script` or `DriverManager`).
pub struct Script {
    kind: Kind,
    class: &'static str,
    name: String,
    config: String,
    base_dir: PathBuf,
    insns: Vec<Insn>,
    /// Steps taken so far at each `pause` (Click's per-instruction counts).
    counts: Vec<u32>,
    initial_pending: bool,
    vars: Vec<(String, String)>,
    exports: Vec<String>,
    pc: usize,
    step_count: i64,
    write_status: i32,
    run_args: String,
    wake: Option<i64>,
    started: bool,
    finished: bool,
    running: bool,
    pending_steps: i64,
    rng: Cell<u64>,
    /// Packets a packet script dropped (`exit`, or no such output).
    drops: u64,
    /// The signals a SIGNAL script runs on.
    signals: Vec<i32>,
    /// How the last run ended.
    last_fin: Option<Fin>,
}

impl Script {
    pub(crate) const SPEC: Spec = Spec::new("Script")
        .printing()
        .ports("-/-")
        .processing("ah/ah")
        .keywords(&["TYPE"])
        .profile(ActionProfile::NONE)
        .doc(
            "Script(INSTRUCTIONS...)\n\n\
             Runs a small script: one instruction per argument.\n\
             Instructions: set/setq VAR TEXT, init/initq VAR TEXT, export/exportq VAR [TEXT],\n\
             print/printq/printn/printnq [>FILE | >>FILE] [TEXT | HANDLER], read/readq HANDLER [ARGS],\n\
             write/writeq HANDLER [ARGS] (status in $?), pause [N], wait TIME, label L,\n\
             goto L [COND] (also exit/end/stop/error/loop), loop, end, exit, stop,\n\
             return/returnq [VALUE], error/errorq [MSG].\n\
             Substitutions: $var, ${var}, $(HANDLER ARGS...), $?, $args, $1.., $#.\n\
             Keywords:\n  TYPE  ACTIVE (default), PASSIVE, DRIVER, or PACKET (also PUSH): a packet\n        \
             script runs from the top for every packet that arrives ($input is its\n        \
             input port) and sends it to the output its `return` names (`end`: output\n        \
             0; `exit`, `stop` or a missing output: the packet is dropped and counted\n        \
             in `drops`). A script with ports and no TYPE is a packet script.\n\
             Ports: none, or (packet scripts) any number of inputs and outputs, the\n\
             first of each agnostic, the others push.\n\
             Handlers: step, goto, run, add, sub, min, max, mul, div, idiv, mod, rem, neg, abs,\n\
             eq, ne, lt, gt, le, ge, not, and, or, nand, nor, if, in, first, sprintf, random,\n\
             now, length, unquote, htons, htonl, ntohs, ntohl, cat, catq, get, set, shift,\n\
             and one read handler per exported variable.",
        );
    pub(crate) const DM_SPEC: Spec = Spec::new("DriverManager")
        .ports("0/0")
        .processing("a/a")
        .keywords(&["TYPE"])
        .profile(ActionProfile::NONE)
        .doc(
            "DriverManager(INSTRUCTIONS...)\n\n\
             A Script whose default TYPE is DRIVER: driver stop events step it, and the\n\
             driver stops only when its instructions end or it executes `stop`.\n\
             `wait` or `pause` with no argument waits for one stop event.",
        );

    fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(Script::build(ctx, Kind::Active, "Script")?))
    }

    fn configure_dm(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(Script::build(ctx, Kind::Driver, "DriverManager")?))
    }

    fn build(
        ctx: &ConfigCtx<'_>,
        default: Kind,
        class: &'static str,
    ) -> Result<Script, ConfigError> {
        let mut errors: Vec<String> = Vec::new();
        let mut kind = default;
        let mut typed = false;
        let mut signals: Vec<i32> = Vec::new();
        let mut insns: Vec<Insn> = Vec::new();
        for arg in split_args(ctx.config) {
            if let Some(("TYPE", rest)) = split_keyword(&arg) {
                let (word, more) = shift_word(rest);
                typed = true;
                match (word, more.is_empty()) {
                    ("", _) => {}
                    ("ACTIVE", true) => kind = Kind::Active,
                    ("PASSIVE", true) => kind = Kind::Passive,
                    ("DRIVER", true) => kind = Kind::Driver,
                    ("PACKET" | "PUSH", true) => kind = Kind::Packet,
                    ("SIGNAL", _) => {
                        kind = Kind::Signal;
                        for s in words(more) {
                            match signal_number(s) {
                                Some(n) => signals.push(n),
                                None => errors.push(format!("bad signal number `{s}`")),
                            }
                        }
                        if more.trim().is_empty() {
                            errors.push("missing signal number".into());
                        }
                    }
                    ("PROXY", _) => {
                        errors.push(format!("TYPE {word} not supported yet"));
                    }
                    _ => errors.push(format!("bad TYPE `{}`", rest.trim())),
                }
                continue;
            }
            match parse_insn(&arg) {
                Ok(Some(i)) => insns.push(i),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        if !typed && (ctx.ninputs > 0 || ctx.noutputs > 0) {
            kind = Kind::Packet;
        }
        if kind == Kind::Packet && ctx.ninputs == 0 {
            errors.push("PACKET script must have inputs".into());
        } else if kind != Kind::Packet && (ctx.ninputs > 0 || ctx.noutputs > 0) {
            errors.push("ports allowed only on PACKET scripts".into());
        }
        if insns.is_empty() && kind == Kind::Driver {
            insns.push(Insn::Pause(1));
        }
        insns.push(if kind == Kind::Driver {
            Insn::Stop
        } else {
            Insn::End
        });
        if !matches!(kind, Kind::Packet | Kind::Signal)
            && !matches!(insns[0], Insn::Pause(_) | Insn::Wait(_))
        {
            insns.insert(0, Insn::Initial);
        }
        // Resolve goto labels.
        let labels: Vec<Option<String>> = insns
            .iter()
            .map(|i| match i {
                Insn::Label(l) => Some(l.clone()),
                _ => None,
            })
            .collect();
        for insn in &mut insns {
            if let Insn::Goto { target, cond } = insn {
                let (label, rest) = shift_word(cond);
                if label.is_empty() {
                    continue;
                }
                match find_label(&labels, label) {
                    Some(t) => *target = t,
                    None => errors.push(format!("no such label `{label}`")),
                }
                *cond = rest.to_string();
            }
        }
        if !errors.is_empty() {
            return Err(ConfigError::new(errors.join("; ")));
        }
        let mut vars: Vec<(String, String)> = Vec::new();
        let mut exports = Vec::new();
        for insn in &insns {
            match insn {
                Insn::Set { kind, var, .. } => {
                    if !vars.iter().any(|(n, _)| n == var) {
                        vars.push((var.clone(), String::new()));
                    }
                    if *kind == SetKind::Export && !exports.contains(var) {
                        exports.push(var.clone());
                    }
                }
                Insn::Return { .. } if !vars.iter().any(|(n, _)| n == "_") => {
                    vars.push(("_".to_string(), String::new()));
                }
                _ => {}
            }
        }
        let seed = ctx.name.bytes().fold(0x9e37_79b9_7f4a_7c15_u64, |h, c| {
            (h ^ u64::from(c)).wrapping_mul(0x0100_0000_01b3)
        });
        Ok(Script {
            kind,
            class,
            name: ctx.name.to_string(),
            config: ctx.config.to_string(),
            base_dir: ctx.base_dir.to_path_buf(),
            counts: vec![0; insns.len()],
            insns,
            initial_pending: false,
            vars,
            exports,
            pc: 0,
            step_count: 0,
            write_status: 0,
            run_args: String::new(),
            wake: None,
            started: false,
            finished: false,
            running: false,
            pending_steps: 0,
            rng: Cell::new(seed | 1),
            drops: 0,
            signals,
            last_fin: None,
        })
    }

    /// True for driver scripts (`DriverManager`, `TYPE DRIVER`).
    pub(crate) fn is_driver(&self) -> bool {
        self.kind == Kind::Driver
    }

    /// True once the script has run to its end (or was disabled).
    pub(crate) fn ended(&self) -> bool {
        self.finished
    }

    /// When the script's `wait` timer fires, if it is waiting for one.
    pub(crate) fn wake_at(&self) -> Option<i64> {
        self.wake
    }

    /// Starts the script (first call: initializes variables, then runs an
    /// active or driver script until it blocks), or continues it when its
    /// timer has fired (later calls).
    pub(crate) fn run(&mut self, env: &mut dyn Env) -> ScriptState {
        if !self.started {
            self.started = true;
            self.name = env.my_name().to_string();
            self.initialize(env);
            if matches!(self.kind, Kind::Passive | Kind::Packet | Kind::Signal) {
                return ScriptState::Blocked;
            }
            return match self.insns.first().cloned() {
                Some(Insn::Initial) => {
                    self.initial_pending = true;
                    let kind = if self.is_driver() {
                        StepKind::Router
                    } else {
                        StepKind::Timer
                    };
                    self.drive(env, 1, kind)
                }
                Some(Insn::Wait(t)) => {
                    self.schedule(env, &t);
                    ScriptState::Blocked
                }
                _ => ScriptState::Blocked,
            };
        }
        if self.wake.take().is_none() {
            return ScriptState::Blocked;
        }
        self.drive(env, 1, StepKind::Timer)
    }

    /// Runs a packet script for one packet that arrived on input `port`:
    /// from the top, with `$input` set. The output the packet goes to
    /// (`return N`, or 0 at the end), or `None` to drop it.
    pub(crate) fn run_packet(&mut self, env: &mut dyn Env, port: usize) -> Option<usize> {
        if !self.started {
            self.started = true;
            self.name = env.my_name().to_string();
            self.initialize(env);
        }
        if self.running {
            // A handler call made by the script sent a packet back here.
            return None;
        }
        self.set_var("input", port.to_string());
        self.pc = 0;
        self.running = true;
        let (_, fin) = self.step(env, 0, 0);
        self.running = false;
        match fin {
            Some(Fin::Return) => {
                let v = self.var("_").unwrap_or_default();
                parse_u64(v.trim())
                    .ok()
                    .and_then(|n| usize::try_from(n).ok())
            }
            Some(Fin::End) => Some(0),
            Some(Fin::Stop) => {
                env.stop();
                None
            }
            Some(Fin::Error(m)) => {
                if let Some(m) = m {
                    self.report(env, &m);
                }
                None
            }
            Some(Fin::Disabled) => {
                env.eprint(&format!(
                    "{} :: {}: too many jumps, giving up\n",
                    self.name, self.class
                ));
                None
            }
            Some(Fin::Exit) | None => None,
        }
    }

    /// The signals a SIGNAL script runs on (empty for other scripts).
    pub(crate) fn signals(&self) -> &[i32] {
        &self.signals
    }

    /// True when the last run ended at `end` (a SIGNAL script then waits
    /// for its signals again).
    pub(crate) fn ended_at_end(&self) -> bool {
        self.last_fin == Some(Fin::End)
    }

    /// Counts a packet the script dropped.
    pub(crate) fn count_drop(&mut self) {
        self.drops += 1;
    }

    /// One step: a driver stop event for a driver script, a `step` write
    /// otherwise. A script blocked at `pause` (or `wait`) goes past it.
    pub(crate) fn step_event(&mut self, env: &mut dyn Env) -> ScriptState {
        let kind = if self.is_driver() {
            StepKind::Router
        } else {
            StepKind::Normal
        };
        self.drive(env, 1, kind)
    }

    /// Writes one of the script's control handlers from outside: `step`
    /// (`N` steps, default 1, or `router` for a driver stop event), `goto`
    /// (a label), or `run` (from the top, with `$args` set to `value`).
    pub(crate) fn write_control(
        &mut self,
        env: &mut dyn Env,
        handler: &str,
        value: &str,
    ) -> Result<ScriptState, String> {
        let data = uncomment(value);
        match handler {
            "step" => {
                let (n, kind) = parse_step(&data)?;
                Ok(self.drive(env, n, kind))
            }
            "goto" => {
                self.jump_to(&data)?;
                Ok(self.drive(env, 0, StepKind::Jump))
            }
            "run" => Ok(self.call_run(env, value).0),
            _ => Err(format!("no write handler `{handler}`")),
        }
    }

    /// Reads the `run` handler: runs the script from the top with `$args`
    /// set to `args`; the value is what a `return` left.
    pub(crate) fn call_run(
        &mut self,
        env: &mut dyn Env,
        args: &str,
    ) -> (ScriptState, Result<String, String>) {
        if self.running {
            return (
                ScriptState::Blocked,
                Err("script is already running".into()),
            );
        }
        self.pc = 0;
        self.run_args = args.to_string();
        let state = self.drive(env, 0, StepKind::Jump);
        // Click keeps the arguments for a script that waits or ends
        // normally (a `wait` later in it still sees `$1`), and forgets
        // them after `stop` or an error.
        if matches!(state, ScriptState::Ended { stop: true, .. })
            || matches!(state, ScriptState::Ended { error: Some(_), .. })
        {
            self.run_args.clear();
        }
        let value = match self.insns.get(self.pc) {
            Some(Insn::Return { .. }) if self.finished => Ok(self.var("_").unwrap_or_default()),
            _ => Ok(String::new()),
        };
        let value = match &state {
            ScriptState::Ended { error: Some(e), .. } => Err(e.clone()),
            _ => value,
        };
        (state, value)
    }

    // ---- execution -----------------------------------------------------

    fn initialize(&mut self, env: &mut dyn Env) {
        for i in 0..self.insns.len() {
            if let Insn::Set {
                kind: SetKind::Init | SetKind::Export,
                q,
                var,
                text,
            } = self.insns[i].clone()
            {
                let mut v = self.expand(env, &text, false);
                if q {
                    v = unquote(&v);
                }
                self.set_var(&var, v);
            }
        }
    }

    fn schedule(&mut self, env: &mut dyn Env, text: &str) -> bool {
        let t = self.expand(env, text, false);
        match parse_seconds(&t) {
            Ok(s) => {
                let ns = (s * 1e9).round();
                let ns = if ns >= i64::MAX as f64 {
                    i64::MAX
                } else {
                    ns as i64
                };
                self.wake = Some(env.now().saturating_add(ns));
                true
            }
            Err(_) => {
                self.report(env, "syntax error at `wait`");
                false
            }
        }
    }

    /// Runs steps until the script blocks or ends, including steps the
    /// script gave itself by writing its own `step` handler.
    fn drive(&mut self, env: &mut dyn Env, nsteps: i64, kind: StepKind) -> ScriptState {
        self.running = true;
        let mut njumps = 0;
        let mut n = nsteps;
        let fin = loop {
            self.pending_steps = 0;
            let (nj, fin) = self.step(env, n, njumps);
            njumps = nj;
            if fin.is_none() && self.pending_steps > 0 && self.pc < self.insns.len() {
                n = self.pending_steps;
                continue;
            }
            break fin;
        };
        self.running = false;
        self.pending_steps = 0;
        self.complete(env, fin, kind)
    }

    fn complete(&mut self, env: &mut dyn Env, fin: Option<Fin>, kind: StepKind) -> ScriptState {
        self.last_fin.clone_from(&fin);
        let Some(fin) = fin else {
            self.finished = self.pc >= self.insns.len();
            return ScriptState::Blocked;
        };
        self.finished = true;
        if fin == Fin::Disabled {
            let msg = format!("{} :: {}: too many jumps, giving up", self.name, self.class);
            if self.is_driver() {
                return ScriptState::Ended {
                    stop: false,
                    error: Some(msg),
                };
            }
            env.eprint(&format!("{msg}\n"));
            return ScriptState::Blocked;
        }
        let stop = fin == Fin::Stop;
        let error = match fin {
            Fin::Error(Some(m)) => Some(format!("{}: {m}", self.name)),
            _ => None,
        };
        if self.is_driver() && !stop && kind != StepKind::Router {
            // A driver that ends other than by a stop event keeps the
            // router running until the next stop event.
            if let Some(e) = error {
                env.eprint(&format!("{e}\n"));
            }
            return ScriptState::Blocked;
        }
        ScriptState::Ended { stop, error }
    }

    /// Executes instructions from the current one, letting `nsteps` steps
    /// carry the script past blocking instructions. Returns the jump count
    /// and how the script ended, if it did.
    fn step(&mut self, env: &mut dyn Env, nsteps: i64, mut njumps: u32) -> (u32, Option<Fin>) {
        let nsteps = nsteps + self.step_count;
        let mut fin = None;
        while nsteps - self.step_count >= 0 && self.pc < self.insns.len() && njumps < MAX_JUMPS {
            let ipos = self.pc;
            self.pc += 1;
            match self.insns[ipos].clone() {
                Insn::Initial => {
                    if self.initial_pending {
                        self.initial_pending = false;
                        self.step_count += 1;
                    }
                }
                Insn::Pause(n) => {
                    while self.step_count < nsteps && self.counts[ipos] < n {
                        self.counts[ipos] += 1;
                        self.step_count += 1;
                    }
                    if self.step_count == nsteps && self.counts[ipos] < n {
                        self.pc = ipos;
                        break;
                    }
                }
                Insn::Wait(t) => {
                    if self.step_count == nsteps {
                        if self.schedule(env, &t) {
                            self.pc = ipos;
                        }
                        break;
                    }
                    self.step_count += 1;
                    self.wake = None;
                }
                Insn::Print { q, newline, text } => self.do_print(env, q, newline, &text),
                Insn::Read { q, text } => {
                    let spec = self.expand(env, &text, false);
                    match self.call_read(env, &spec, q) {
                        Ok((name, v)) => env.eprint(&format!("{name}:\n{v}\n")),
                        Err(e) => self.report(env, &e),
                    }
                }
                Insn::Write { q, text } => {
                    let spec = self.expand(env, &text, false);
                    if let Some(st) = self.call_write(env, &spec, q) {
                        self.write_status = st;
                    }
                }
                Insn::Set {
                    kind: SetKind::Set,
                    q,
                    var,
                    text,
                } => {
                    let mut v = self.expand(env, &text, false);
                    if q {
                        v = unquote(&v);
                    }
                    self.set_var(&var, v);
                }
                Insn::Set { .. } | Insn::Label(_) => {}
                Insn::Return { q, text } => {
                    let mut v = self.expand(env, &text, false);
                    if q {
                        v = unquote(&v);
                    }
                    self.set_var("_", v);
                    if self.pc == ipos + 1 {
                        self.pc = ipos;
                        fin = Some(Fin::Return);
                        break;
                    }
                }
                Insn::Goto { target, cond } => {
                    let c = self.expand(env, &cond, false);
                    let take = if c.is_empty() {
                        true
                    } else {
                        match parse_bool(&c) {
                            Some(b) => b,
                            None => {
                                self.report(env, &format!("bad condition `{c}`"));
                                false
                            }
                        }
                    };
                    if take {
                        let f = match target {
                            Target::At(i) => {
                                for k in i..ipos {
                                    self.counts[k] = 0;
                                }
                                self.pc = i;
                                None
                            }
                            Target::End => Some(Fin::End),
                            Target::Exit => Some(Fin::Exit),
                            Target::Stop => Some(Fin::Stop),
                            Target::Error => Some(Fin::Error(None)),
                        };
                        if let Some(f) = f {
                            if f == Fin::Stop {
                                self.step_count += 1;
                            }
                            self.pc = ipos;
                            fin = Some(f);
                            break;
                        }
                    }
                }
                Insn::Stop => {
                    self.step_count += 1;
                    self.pc = ipos;
                    fin = Some(Fin::Stop);
                    break;
                }
                Insn::End => {
                    self.pc = ipos;
                    fin = Some(Fin::End);
                    break;
                }
                Insn::Exit => {
                    self.pc = ipos;
                    fin = Some(Fin::Exit);
                    break;
                }
                Insn::Error { q, msg } => {
                    let mut m = self.expand(env, &msg, false);
                    if q {
                        m = unquote(&m);
                    }
                    self.pc = ipos;
                    fin = Some(Fin::Error(if m.is_empty() { None } else { Some(m) }));
                    break;
                }
            }
            if self.pc != ipos + 1 {
                njumps += 1;
            }
        }
        if njumps >= MAX_JUMPS {
            self.pc = self.insns.len();
            self.wake = None;
            fin = Some(Fin::Disabled);
        }
        (njumps, fin)
    }

    fn do_print(&mut self, env: &mut dyn Env, q: bool, newline: bool, text: &str) {
        let mut text = text;
        let mut file: Option<(PathBuf, bool)> = None;
        if let Some(t) = text.strip_prefix('>') {
            let (append, t) = match t.strip_prefix('>') {
                Some(t) => (true, t),
                None => (false, t),
            };
            let (name, rest) = shift_word(t);
            text = rest;
            if !name.is_empty() && name != "-" {
                let p = Path::new(name);
                let p = if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    self.base_dir.join(p)
                };
                file = Some((p, append));
            }
        }
        let mut failed = false;
        let first = text.as_bytes().first().copied();
        let mut result = if first.is_some_and(|c| c.is_ascii_alphabetic() || c == b'@' || c == b'_')
        {
            let spec = self.expand(env, text, false);
            match self.call_read(env, &spec, q) {
                Ok((_, v)) => v,
                Err(e) => {
                    self.report(env, &e);
                    failed = true;
                    String::new()
                }
            }
        } else {
            let (v, ok) = self.expand_checked(env, text, true);
            failed = !ok;
            unquote(&v)
        };
        if !failed && newline && !result.ends_with('\n') {
            result.push('\n');
        }
        match file {
            None => env.print(&result),
            Some((path, append)) => {
                use std::io::Write;
                let opened = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .append(append)
                    .truncate(!append)
                    .open(&path);
                let written = opened.and_then(|mut f| f.write_all(result.as_bytes()));
                if let Err(e) = written {
                    self.report(env, &format!("{}: {e}", path.display()));
                }
            }
        }
    }

    /// Reports an error met while running, to standard error.
    fn report(&mut self, env: &mut dyn Env, msg: &str) {
        env.eprint(&format!("{}: {msg}\n", self.name));
    }

    // ---- variables -----------------------------------------------------

    fn var(&self, name: &str) -> Option<String> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    fn set_var(&mut self, name: &str, value: String) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value,
            None => self.vars.push((name.to_string(), value)),
        }
    }

    /// The value of `$name` (Click's variables plus `?`, `args`, `$`, `0`,
    /// `1`..., `#`, `write`).
    fn lookup_var(&self, name: &str) -> Option<String> {
        if let Some(v) = self.var(name) {
            return Some(v);
        }
        match name {
            "?" => Some(self.write_status.to_string()),
            "args" => Some(self.run_args.clone()),
            "$" => Some(std::process::id().to_string()),
            "0" => Some(String::new()),
            "#" => Some(words(&self.run_args).len().to_string()),
            "write" => Some(bool_text(false)),
            _ if name
                .as_bytes()
                .first()
                .is_some_and(|c| (b'1'..=b'9').contains(c)) =>
            {
                let n = parse_int(name)?;
                let w = words(&self.run_args);
                Some(
                    usize::try_from(n - 1)
                        .ok()
                        .and_then(|i| w.get(i))
                        .map_or(String::new(), |s| s.to_string()),
                )
            }
            _ => None,
        }
    }

    // ---- substitution --------------------------------------------------

    fn expand(&mut self, env: &mut dyn Env, text: &str, quote_mode: bool) -> String {
        self.expand_checked(env, text, quote_mode).0
    }

    /// Substitutes variables and handler values in `text` (Click's
    /// `cp_expand`). Inside double quotes, and everywhere in `quote_mode`,
    /// substituted text is quoted so that unquoting gives it back exactly.
    /// The flag says whether every handler call succeeded.
    fn expand_checked(
        &mut self,
        env: &mut dyn Env,
        text: &str,
        quote_mode: bool,
    ) -> (String, bool) {
        let mut ok = true;
        let s = self.expand_depth(env, text, quote_mode, 0, &mut ok);
        (s, ok)
    }

    fn expand_depth(
        &mut self,
        env: &mut dyn Env,
        text: &str,
        quote_mode: bool,
        depth: u32,
        ok: &mut bool,
    ) -> String {
        if !text.contains('$') {
            return text.to_string();
        }
        let b = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut plain = 0usize; // start of text not yet copied
        let mut quote = 0u8;
        let mut i = 0usize;
        while i < b.len() {
            match b[i] {
                b'\\' => {
                    if quote == b'"' && i + 1 < b.len() {
                        i += 1;
                    }
                    i += 1;
                }
                c @ (b'\'' | b'"') => {
                    if quote == 0 {
                        quote = c;
                    } else if quote == c {
                        quote = 0;
                    }
                    i += 1;
                }
                b'/' if quote == 0 && comment_end(b, i).is_some() => {
                    i = comment_end(b, i).unwrap_or(b.len());
                }
                b'$' if i + 1 < b.len() && quote != b'\'' && depth <= 10 => {
                    let dollar = i;
                    let (vname, vtype, expand_name, end) = match b[i + 1] {
                        b'{' => {
                            let start = i + 2;
                            let Some(k) = b[start..].iter().position(|&c| c == b'}') else {
                                break;
                            };
                            let name = &text[start..start + k];
                            (name, b'{', name.contains('$'), start + k + 1)
                        }
                        b'(' => {
                            let start = i + 2;
                            let mut level = 1;
                            let mut nq = 0u8;
                            let mut expand_name = false;
                            let mut j = start;
                            while j < b.len() && level > 0 {
                                match b[j] {
                                    b'(' if nq == 0 => level += 1,
                                    b')' if nq == 0 => level -= 1,
                                    c @ (b'"' | b'\'') => {
                                        if nq == 0 {
                                            nq = c;
                                        } else if nq == c {
                                            nq = 0;
                                        }
                                    }
                                    b'\\' if j + 1 < b.len() && nq != b'\'' => j += 1,
                                    b'$' if nq != b'\'' => expand_name = true,
                                    _ => {}
                                }
                                j += 1;
                            }
                            if level > 0 {
                                break;
                            }
                            (&text[start..j - 1], b'(', expand_name, j)
                        }
                        c if c.is_ascii_alphanumeric() || c == b'_' => {
                            let start = i + 1;
                            let mut j = start;
                            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                                j += 1;
                            }
                            (&text[start..j], b'a', false, j)
                        }
                        b'?' | b'#' | b'$' => (&text[i + 1..i + 2], b'a', false, i + 2),
                        _ => {
                            i += 1;
                            continue;
                        }
                    };
                    out.push_str(&text[plain..dollar]);
                    let name = if expand_name {
                        self.expand_depth(env, vname, false, depth + 1, ok)
                    } else {
                        vname.to_string()
                    };
                    let value = if vtype == b'(' {
                        match self.call_read(env, &name, false) {
                            Ok((_, v)) => Some(v),
                            Err(e) => {
                                self.report(env, &e);
                                *ok = false;
                                None
                            }
                        }
                    } else {
                        self.lookup_var(&name)
                    };
                    plain = end;
                    match value {
                        None => {
                            if expand_name {
                                let (open, close) = if vtype == b'(' {
                                    ('(', ')')
                                } else {
                                    ('{', '}')
                                };
                                out.push('$');
                                out.push(open);
                                out.push_str(&name);
                                out.push(close);
                            } else {
                                plain = dollar;
                            }
                        }
                        Some(v) if quote == b'"' || (quote_mode && quote == 0) => {
                            let qv = self::quote(&v);
                            let inner = &qv[1..qv.len() - 1];
                            if quote == b'"' {
                                out.push_str(inner);
                            } else {
                                out.push('"');
                                out.push_str(inner);
                                out.push('"');
                            }
                        }
                        Some(v) => out.push_str(&v),
                    }
                    i = end;
                }
                _ => i += 1,
            }
        }
        out.push_str(&text[plain..]);
        out
    }

    // ---- handler calls ---------------------------------------------------

    fn has_own(&self, h: &str) -> bool {
        OWN_HANDLERS.contains(&h) || self.exports.iter().any(|e| e == h)
    }

    /// Which handler a name means: `Ok(Ok(h))` for one of this script's
    /// own, `Ok(Err(full))` for another element's (or a global one).
    fn resolve(&self, name: &str) -> Result<Result<String, String>, String> {
        let name = unquote(name);
        if name.is_empty() || (name.ends_with('.') && name.len() > 1) {
            return Err("syntax error".into());
        }
        if let Some(rest) = name.strip_prefix('.') {
            return Ok(Err(rest.to_string()));
        }
        if let Some((e, h)) = name.split_once('.') {
            if e == self.name {
                return Ok(Ok(h.to_string()));
            }
            return Ok(Err(name));
        }
        if self.has_own(&name) {
            Ok(Ok(name))
        } else {
            Ok(Err(name))
        }
    }

    /// Element names to try for `full`, innermost compound first.
    fn scoped_names(&self, full: &str) -> Vec<String> {
        let mut out = Vec::new();
        if full.contains('.') {
            let mut prefix = self.name.as_str();
            while let Some(k) = prefix.rfind('/') {
                prefix = &prefix[..k];
                out.push(format!("{prefix}/{full}"));
            }
        }
        out.push(full.to_string());
        out
    }

    /// Calls the read handler named by the first word of `spec`, with the
    /// rest as parameters. Returns the handler's display name and value.
    fn call_read(
        &mut self,
        env: &mut dyn Env,
        spec: &str,
        unquote_params: bool,
    ) -> Result<(String, String), String> {
        let (name, params) = shift_word(spec);
        let params = if unquote_params {
            unquote(params)
        } else {
            params.to_string()
        };
        match self.resolve(name)? {
            Ok(h) => {
                let v = self.own_read(env, &h, &params)?;
                Ok((format!("{}.{h}", self.name), v))
            }
            Err(full) => {
                let names = self.scoped_names(&full);
                let last = names.len() - 1;
                for (k, n) in names.into_iter().enumerate() {
                    match env.read(&n, &params) {
                        Ok(v) => return Ok((n, v)),
                        Err(e) if k < last && e.starts_with("no element named") => continue,
                        Err(e) => return Err(e),
                    }
                }
                Err(format!("no handler `{full}`"))
            }
        }
    }

    /// Calls the write handler named by the first word of `spec`; returns
    /// the status for `$?` (0, or -22 when the handler failed), or `None`
    /// when the handler could not be found.
    fn call_write(&mut self, env: &mut dyn Env, spec: &str, unquote_value: bool) -> Option<i32> {
        let (name, value) = shift_word(spec);
        let value = if unquote_value {
            unquote(value)
        } else {
            value.to_string()
        };
        let target = match self.resolve(name) {
            Ok(t) => t,
            Err(e) => {
                self.report(env, &e);
                return None;
            }
        };
        let r = match target {
            Ok(h) => self.own_write(&h, &value),
            Err(full) => {
                let names = self.scoped_names(&full);
                let last = names.len() - 1;
                let mut r = Err(String::new());
                for (k, n) in names.into_iter().enumerate() {
                    r = env.write(&n, &value);
                    match &r {
                        Err(e) if k < last && e.starts_with("no element named") => continue,
                        _ => break,
                    }
                }
                r
            }
        };
        match r {
            Ok(()) => Some(0),
            Err(e) => {
                self.report(env, &e);
                let missing =
                    e.starts_with("no element named") || e.contains("has no write handler");
                if missing {
                    None
                } else {
                    Some(-22)
                }
            }
        }
    }

    fn next_random(&self) -> u64 {
        let mut x = self.rng.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.set(x);
        x
    }

    /// The handlers that need the script but not the router.
    fn local_read(&self, h: &str, params: &str) -> Option<Result<String, String>> {
        if let Some(r) = pure_read(h, params) {
            return Some(r);
        }
        Some(match h {
            "random" => self.random(params),
            "get" => {
                let (name, rest) = shift_word(params);
                if name.is_empty() {
                    Err("no variable".into())
                } else if !rest.is_empty() {
                    Err("too many arguments".into())
                } else if name == "args" {
                    Ok(self.run_args.clone())
                } else {
                    self.var(name)
                        .ok_or_else(|| format!("undefined variable `{name}`"))
                }
            }
            "cat" | "catq" => {
                let f = unquote(params);
                if f.is_empty() {
                    return Some(Err("bad FILE".into()));
                }
                let p = Path::new(&f);
                let p = if p.is_absolute() {
                    p.to_path_buf()
                } else {
                    self.base_dir.join(p)
                };
                match std::fs::read(&p) {
                    Ok(bytes) => {
                        let s = String::from_utf8_lossy(&bytes).into_owned();
                        Ok(if h == "catq" { quote(&s) } else { s })
                    }
                    Err(e) => Err(format!("{f}: {e}")),
                }
            }
            "name" => Ok(self.name.clone()),
            "class" => Ok(self.class.to_string()),
            "config" => Ok(self.config.clone()),
            _ => {
                if self.exports.iter().any(|e| e == h) {
                    Ok(self.var(h).unwrap_or_default())
                } else {
                    return None;
                }
            }
        })
    }

    fn random(&self, params: &str) -> Result<String, String> {
        let w = words(params);
        let n: Vec<u32> = w
            .iter()
            .map(|s| parse_u32(s).map_err(|e| format!("N: {e}")))
            .collect::<Result<_, _>>()?;
        let r = self.next_random() >> 11;
        match n[..] {
            [] => Ok((r % (RAND_MAX + 1)).to_string()),
            [0] => Err("bad N".into()),
            [n1] => Ok((r % u64::from(n1)).to_string()),
            [n1, n2] if n2 >= n1 => Ok((u64::from(n1) + r % (u64::from(n2 - n1) + 1)).to_string()),
            [_, _] => Err("bad N".into()),
            _ => Err("too many arguments".into()),
        }
    }

    fn own_read(&mut self, env: &mut dyn Env, h: &str, params: &str) -> Result<String, String> {
        if let Some(r) = self.local_read(h, params) {
            return r;
        }
        match h {
            "now" => Ok(click_timestamp(env.now())),
            "shift" => {
                let (name, rest) = shift_word(params);
                let name = if name.is_empty() { "args" } else { name };
                if !rest.is_empty() {
                    return Err("too many arguments".into());
                }
                let current = if name == "args" {
                    self.run_args.clone()
                } else {
                    self.var(name)
                        .ok_or_else(|| format!("undefined variable `{name}`"))?
                };
                let (first, remaining) = shift_word(&current);
                let (first, remaining) = (first.to_string(), remaining.to_string());
                if name == "args" {
                    self.run_args = remaining;
                } else {
                    self.set_var(name, remaining);
                }
                Ok(first)
            }
            "kill" => {
                let (sig, pids) = shift_word(params);
                let signo = signal_number(sig).ok_or_else(|| "bad SIGNO".to_string())?;
                for pid in words(pids) {
                    let pid = parse_int(pid)
                        .and_then(|p| i32::try_from(p).ok())
                        .and_then(rustix::process::Pid::from_raw)
                        .ok_or_else(|| "bad PID".to_string())?;
                    let sig = rustix::process::Signal::from_named_raw(signo)
                        .ok_or_else(|| "bad SIGNO".to_string())?;
                    rustix::process::kill_process(pid, sig)
                        .map_err(|e| format!("kill({}, {signo}): {e}", pid.as_raw_nonzero()))?;
                }
                Ok(String::new())
            }
            "run" => Err("script is already running".into()),
            "step" | "goto" | "set" => Err(format!("`{}.{h}` is write-only", self.name)),
            _ => Err(format!("element `{}` has no read handler `{h}`", self.name)),
        }
    }

    /// A script writing one of its own handlers while it runs.
    fn own_write(&mut self, h: &str, value: &str) -> Result<(), String> {
        match h {
            "step" => {
                let (n, _) = parse_step(&uncomment(value))?;
                self.pending_steps += n;
                Ok(())
            }
            "goto" => self.jump_to(&uncomment(value)),
            "set" => self.write_set(value),
            "run" => Err("script is already running".into()),
            _ => Err(format!(
                "element `{}` has no write handler `{h}`",
                self.name
            )),
        }
    }

    fn write_set(&mut self, value: &str) -> Result<(), String> {
        let (name, rest) = shift_word(value);
        if name.is_empty() {
            return Err("no variable".into());
        }
        if name == "args" {
            self.run_args = rest.to_string();
        } else {
            self.set_var(name, rest.to_string());
        }
        Ok(())
    }

    /// Moves to a label (the `goto` handler).
    fn jump_to(&mut self, label: &str) -> Result<(), String> {
        let labels: Vec<Option<String>> = self
            .insns
            .iter()
            .map(|i| match i {
                Insn::Label(l) => Some(l.clone()),
                _ => None,
            })
            .collect();
        match find_label(&labels, label) {
            Some(Target::At(i)) if i < self.insns.len() => {
                for k in i..self.insns.len() {
                    self.counts[k] = 0;
                }
                self.pc = i;
                self.finished = false;
                Ok(())
            }
            _ => Err("jump to nonexistent label".into()),
        }
    }
}

/// Parses a `step` handler value: `N` (default 1), or `router`.
fn parse_step(data: &str) -> Result<(i64, StepKind), String> {
    if data == "router" {
        Ok((1, StepKind::Router))
    } else if data.is_empty() {
        Ok((1, StepKind::Normal))
    } else {
        parse_int(data)
            .map(|n| (n, StepKind::Normal))
            .ok_or_else(|| "syntax error".to_string())
    }
}

/// Finds a `goto` destination: a label, one of the terminal instructions'
/// names, or `begin`/`loop` (the first instruction).
fn find_label(labels: &[Option<String>], label: &str) -> Option<Target> {
    if let Some(i) = labels.iter().position(|l| l.as_deref() == Some(label)) {
        return Some(Target::At(i));
    }
    match label {
        "exit" => Some(Target::Exit),
        "end" => Some(Target::End),
        "stop" => Some(Target::Stop),
        "error" | "errorq" => Some(Target::Error),
        "begin" | "loop" => Some(Target::At(0)),
        _ => None,
    }
}

/// Parses one instruction argument; `Ok(None)` for an empty one.
fn parse_insn(arg: &str) -> Result<Option<Insn>, String> {
    let (name, rest) = shift_word(arg);
    let syntax = || format!("syntax error at `{name}`");
    let text = rest.to_string();
    let insn = match name {
        "" => return Ok(None),
        "wait" if rest.is_empty() => Insn::Pause(1),
        "wait" | "wait_time" | "wait_for" => Insn::Wait(text),
        "pause" | "wait_step" | "wait_stop" => {
            if rest.is_empty() {
                Insn::Pause(1)
            } else {
                Insn::Pause(parse_u32(rest).map_err(|_| syntax())?)
            }
        }
        "print" | "printq" | "printn" | "printnq" => Insn::Print {
            q: name.ends_with('q'),
            newline: !name.starts_with("printn"),
            text,
        },
        "save" | "append" => {
            let (word, file) = shift_word(rest);
            let file = if file.is_empty() { "-" } else { file };
            let arrow = if name == "save" { ">" } else { ">>" };
            Insn::Print {
                q: false,
                newline: true,
                text: format!("{arrow}{file} {word}"),
            }
        }
        "read" | "readq" => Insn::Read {
            q: name == "readq",
            text,
        },
        "write" | "writeq" => Insn::Write {
            q: name == "writeq",
            text,
        },
        "set" | "setq" | "init" | "initq" | "export" | "exportq" => {
            let (var, value) = shift_word(rest);
            let is_set = name.starts_with("set");
            if var.is_empty() || (is_set && value.is_empty()) {
                return Err(syntax());
            }
            let kind = if is_set {
                SetKind::Set
            } else if name.starts_with("init") {
                SetKind::Init
            } else {
                SetKind::Export
            };
            Insn::Set {
                kind,
                q: name.ends_with('q'),
                var: var.to_string(),
                text: value.to_string(),
            }
        }
        "return" | "returnq" => Insn::Return {
            q: name == "returnq",
            text,
        },
        "label" => {
            let (word, more) = shift_word(rest);
            if word.is_empty() || !more.is_empty() {
                return Err(syntax());
            }
            Insn::Label(word.to_string())
        }
        // The label is resolved once all labels are known.
        "goto" => Insn::Goto {
            target: Target::At(0),
            cond: text,
        },
        "loop" | "end" | "exit" | "stop" if !rest.is_empty() => return Err(syntax()),
        "loop" => Insn::Goto {
            target: Target::At(0),
            cond: String::new(),
        },
        "end" => Insn::End,
        "exit" => Insn::Exit,
        "stop" => Insn::Stop,
        "error" | "errorq" => Insn::Error {
            q: name == "errorq",
            msg: text,
        },
        _ => return Err(format!("unknown instruction `{name}`")),
    };
    Ok(Some(insn))
}

impl Element for Script {
    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        // The runtime runs the packets through the script (it needs the
        // router for the script's handler calls): see `after_call`.
        out.ctrl.pending = true;
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        HANDLERS
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        let (h, params) = match name.split_once(' ') {
            Some((h, p)) => (h, p.trim_start()),
            None => (name, ""),
        };
        if h == "drops" && self.kind == Kind::Packet && !self.exports.iter().any(|e| e == "drops") {
            return Ok(self.drops.to_string());
        }
        match self.local_read(h, params) {
            Some(r) => r.map_err(HandlerError::BadValue),
            None => match h {
                "now" | "shift" | "run" => Err(HandlerError::BadValue(format!(
                    "`{h}` is available only inside the script"
                ))),
                _ => Err(HandlerError::NoSuchHandler(h.to_string())),
            },
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "set" => self.write_set(value).map_err(HandlerError::BadValue),
            _ => Err(HandlerError::NoSuchHandler(name.to_string())),
        }
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

/// The runtime's own classes.
pub(crate) fn lookup(name: &str) -> Option<ClassEntry> {
    match name {
        "Script" => Some(ClassEntry {
            spec: &Script::SPEC,
            factory: Script::configure,
        }),
        "DriverManager" => Some(ClassEntry {
            spec: &Script::DM_SPEC,
            factory: Script::configure_dm,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A router stand-in: handler values, recorded writes and output.
    struct FakeEnv {
        name: String,
        values: HashMap<String, String>,
        writes: Vec<(String, String)>,
        out: Vec<String>,
        err: String,
        now: i64,
        stops: u32,
    }

    impl FakeEnv {
        fn new() -> Self {
            FakeEnv {
                name: "s".into(),
                values: HashMap::new(),
                writes: Vec::new(),
                out: Vec::new(),
                err: String::new(),
                now: 1_700_000_000_000_000_000,
                stops: 0,
            }
        }
        fn with(mut self, h: &str, v: &str) -> Self {
            self.values.insert(h.into(), v.into());
            self
        }
        fn stdout(&self) -> String {
            self.out.concat()
        }
    }

    impl Env for FakeEnv {
        fn read(&mut self, handler: &str, params: &str) -> Result<String, String> {
            if let Some(v) = self.values.get(handler) {
                if !params.is_empty() {
                    return Err(format!("read handler `{handler}` does not take parameters"));
                }
                return Ok(v.clone());
            }
            match handler.rsplit_once('.') {
                Some((e, h)) if self.values.keys().any(|k| k.starts_with(&format!("{e}."))) => {
                    Err(format!("element `{e}` has no read handler `{h}`"))
                }
                Some((e, _)) => Err(format!("no element named `{e}`")),
                None => Err(format!("element `` has no read handler `{handler}`")),
            }
        }
        fn write(&mut self, handler: &str, value: &str) -> Result<(), String> {
            if handler == "stop" {
                self.stops += 1;
                return Ok(());
            }
            if handler == "bad.h" {
                return Err("bad.h: value refused".into());
            }
            if handler.starts_with("none.") {
                return Err("no element named `none`".into());
            }
            self.writes.push((handler.into(), value.into()));
            Ok(())
        }
        fn now(&self) -> i64 {
            self.now
        }
        fn print(&mut self, text: &str) {
            self.out.push(text.into());
        }
        fn stop(&mut self) {
            self.stops += 1;
        }
        fn my_name(&self) -> &str {
            &self.name
        }
        fn eprint(&mut self, text: &str) {
            self.err.push_str(text);
        }
    }

    fn build_named(name: &str, class: &str, config: &str) -> Result<Script, ConfigError> {
        let ctx = ConfigCtx {
            name,
            config,
            ninputs: 0,
            noutputs: 0,
            base_dir: Path::new("."),
            keywords: &["TYPE"],
            output_push: &[],
            input_push: &[],
            peers: &pronto_elements::NoPeers,
        };
        let kind = if class == "DriverManager" {
            Kind::Driver
        } else {
            Kind::Active
        };
        let class = if class == "DriverManager" {
            "DriverManager"
        } else {
            "Script"
        };
        Script::build(&ctx, kind, class)
    }

    fn packet_script(config: &str) -> Script {
        let ctx = ConfigCtx {
            name: "p",
            config,
            ninputs: 2,
            noutputs: 2,
            base_dir: Path::new("."),
            keywords: &["TYPE"],
            output_push: &[true, true],
            input_push: &[true, true],
            peers: &pronto_elements::NoPeers,
        };
        Script::build(&ctx, Kind::Active, "Script").expect("configures")
    }

    #[test]
    fn packet_scripts_choose_an_output_per_packet() {
        let mut env = FakeEnv::new();
        let mut s =
            packet_script("TYPE PACKET, init i 0, set j $i, set i $(if $(eq $i 0) 1 0), return $j");
        let outs: Vec<Option<usize>> = (0..4).map(|_| s.run_packet(&mut env, 0)).collect();
        assert_eq!(outs, vec![Some(0), Some(1), Some(0), Some(1)]);
        // Ports and no TYPE: a packet script; `end` (implicit) is output 0.
        let mut s = packet_script("print $input");
        assert_eq!(s.run_packet(&mut env, 1), Some(0));
        assert_eq!(env.stdout(), "1\n");
        let mut s = packet_script("TYPE PACKET, exit");
        assert_eq!(s.run_packet(&mut env, 0), None);
        let mut s = packet_script("TYPE PACKET, return nonsense");
        assert_eq!(s.run_packet(&mut env, 0), None);
        s.count_drop();
        assert_eq!(s.read_handler("drops").expect("drops"), "1");
        // Other types take no ports.
        let ctx = ConfigCtx {
            name: "p",
            config: "TYPE PASSIVE",
            ninputs: 1,
            noutputs: 0,
            base_dir: Path::new("."),
            keywords: &["TYPE"],
            output_push: &[],
            input_push: &[true],
            peers: &pronto_elements::NoPeers,
        };
        let e = Script::build(&ctx, Kind::Active, "Script")
            .err()
            .expect("refused");
        assert_eq!(e.message, "ports allowed only on PACKET scripts");
    }

    fn script(config: &str) -> Script {
        build_named("s", "Script", config).expect("valid script")
    }

    fn driver(config: &str) -> Script {
        build_named("s", "DriverManager", config).expect("valid driver")
    }

    fn err(class: &str, config: &str) -> String {
        match build_named("s", class, config) {
            Ok(_) => panic!("expected an error for {config}"),
            Err(e) => e.message,
        }
    }

    const ENDED: ScriptState = ScriptState::Ended {
        stop: false,
        error: None,
    };
    const STOPPED: ScriptState = ScriptState::Ended {
        stop: true,
        error: None,
    };

    /// Evaluates one of the script's read handlers as `$(...)` does.
    fn eval(h: &str) -> String {
        let mut s = script("");
        let mut env = FakeEnv::new();
        s.call_read(&mut env, h, false)
            .map(|(_, v)| v)
            .unwrap_or_else(|e| format!("ERR {e}"))
    }

    // ---- drivers -------------------------------------------------------

    #[test]
    fn driver_waits_for_a_stop_event_then_prints_and_stops() {
        let mut d = driver("wait, print allowed.count, print frags.count");
        let mut env = FakeEnv::new()
            .with("allowed.count", "1321")
            .with("frags.count", "58");
        assert!(d.is_driver());
        assert_eq!(d.run(&mut env), ScriptState::Blocked);
        assert!(env.out.is_empty());
        assert!(!d.ended());
        assert_eq!(d.step_event(&mut env), STOPPED);
        assert_eq!(env.out, ["1321\n", "58\n"]);
        assert!(d.ended());
    }

    #[test]
    fn print_keeps_a_handler_value_that_ends_in_newline() {
        let mut d = driver("wait, print good.count, print chk.drop_details, print bad.count");
        let mut env = FakeEnv::new()
            .with("good.count", "1321")
            .with("bad.count", "90")
            .with("chk.drop_details", "23\ttiny packet\n6\tbad IP version\n");
        d.run(&mut env);
        d.step_event(&mut env);
        assert_eq!(
            env.stdout(),
            "1321\n23\ttiny packet\n6\tbad IP version\n90\n"
        );
    }

    #[test]
    fn print_quoted_text_with_handler_values() {
        let mut d = driver(
            r#"wait, print "all" $(all.count) $(all.byte_count), print "ip" $(ip.count) $(ip.byte_count)"#,
        );
        let mut env = FakeEnv::new()
            .with("all.count", "1500")
            .with("all.byte_count", "172614")
            .with("ip.count", "1400")
            .with("ip.byte_count", "170000");
        d.run(&mut env);
        assert_eq!(d.step_event(&mut env), STOPPED);
        assert_eq!(env.stdout(), "all 1500 172614\nip 1400 170000\n");
    }

    #[test]
    fn benchmark_timing_script() {
        let mut d = driver("set a $(now), wait, set b $(now), print $(c.count) $(sub $b $a)");
        let mut env = FakeEnv::new().with("c.count", "1000000");
        env.now = 1_700_000_000_000_000_123;
        // Starts at once (no leading wait): sets $a, then waits.
        assert_eq!(d.run(&mut env), ScriptState::Blocked);
        assert_eq!(d.var("a").as_deref(), Some("1700000000.000000123"));
        env.now = 1_700_000_001_500_000_000;
        assert_eq!(d.step_event(&mut env), STOPPED);
        assert_eq!(env.stdout(), "1000000 1.499999877\n");
    }

    #[test]
    fn empty_driver_waits_for_one_stop_event() {
        let mut d = driver("");
        let mut env = FakeEnv::new();
        assert_eq!(d.run(&mut env), ScriptState::Blocked);
        assert_eq!(d.step_event(&mut env), STOPPED);
    }

    #[test]
    fn driver_without_wait_stops_at_once() {
        let mut d = driver("print 'hi'");
        let mut env = FakeEnv::new();
        assert_eq!(d.run(&mut env), STOPPED);
        assert_eq!(env.stdout(), "hi\n");
    }

    #[test]
    fn driver_pause_counts_stop_events() {
        let mut d = driver("pause 2, print 'done'");
        let mut env = FakeEnv::new();
        assert_eq!(d.run(&mut env), ScriptState::Blocked);
        assert_eq!(d.step_event(&mut env), ScriptState::Blocked);
        assert!(env.out.is_empty());
        assert_eq!(d.step_event(&mut env), STOPPED);
        assert_eq!(env.stdout(), "done\n");
    }

    #[test]
    fn driver_timer_then_end() {
        let mut d = driver("wait 1s, print 'x'");
        let mut env = FakeEnv::new();
        let t0 = env.now;
        assert_eq!(d.run(&mut env), ScriptState::Blocked);
        assert_eq!(d.wake_at(), Some(t0 + 1_000_000_000));
        env.now += 1_000_000_000;
        assert_eq!(d.run(&mut env), STOPPED);
        assert_eq!(env.stdout(), "x\n");

        // An explicit `end` reached by a timer leaves the router running
        // until the next stop event.
        let mut d = driver("wait 10ms, end");
        let mut env = FakeEnv::new();
        d.run(&mut env);
        assert_eq!(d.wake_at(), Some(env.now + 10_000_000));
        assert_eq!(d.run(&mut env), ScriptState::Blocked);
        assert!(d.ended());
        // ...and a stop event at `end` ends it.
        assert_eq!(d.step_event(&mut env), ENDED);
    }

    #[test]
    fn driver_stop_event_passes_a_wait() {
        let mut d = driver("wait 5s, print 'late'");
        let mut env = FakeEnv::new();
        d.run(&mut env);
        assert!(d.wake_at().is_some());
        assert_eq!(d.step_event(&mut env), STOPPED);
        assert_eq!(d.wake_at(), None);
        assert_eq!(env.stdout(), "late\n");
    }

    #[test]
    fn wait_names() {
        // wait_stop = pause, wait_time/wait_for = timed wait.
        let mut d = driver("wait_stop, wait_for 2, print 'a'");
        let mut env = FakeEnv::new();
        d.run(&mut env);
        assert_eq!(d.wake_at(), None);
        assert_eq!(d.step_event(&mut env), ScriptState::Blocked);
        assert_eq!(d.wake_at(), Some(env.now + 2_000_000_000));
    }

    // ---- active scripts ----------------------------------------------

    #[test]
    fn pause_and_step() {
        let mut s = script("print 'a', pause, print 'b', pause 2, print 'c'");
        let mut env = FakeEnv::new();
        assert!(!s.is_driver());
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
        assert_eq!(env.stdout(), "a\n");
        assert_eq!(s.step_event(&mut env), ScriptState::Blocked);
        assert_eq!(env.stdout(), "a\nb\n");
        assert_eq!(s.step_event(&mut env), ScriptState::Blocked);
        assert_eq!(env.stdout(), "a\nb\n");
        assert_eq!(s.step_event(&mut env), ENDED);
        assert_eq!(env.stdout(), "a\nb\nc\n");
        assert!(s.ended());
    }

    #[test]
    fn step_handler_counts() {
        let mut s = script("pause, print 'a', pause, print 'b', pause, print 'c'");
        let mut env = FakeEnv::new();
        s.run(&mut env);
        assert_eq!(
            s.write_control(&mut env, "step", "2"),
            Ok(ScriptState::Blocked)
        );
        assert_eq!(env.stdout(), "a\nb\n");
        assert!(s.write_control(&mut env, "step", "x").is_err());
        assert_eq!(s.write_control(&mut env, "step", ""), Ok(ENDED));
        assert_eq!(env.stdout(), "a\nb\nc\n");
    }

    #[test]
    fn wait_timer() {
        let mut s = script("print 'a', wait 0.5, print 'b', wait 250ms, print 'c'");
        let mut env = FakeEnv::new();
        let t0 = env.now;
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
        assert_eq!(env.stdout(), "a\n");
        assert_eq!(s.wake_at(), Some(t0 + 500_000_000));
        env.now = t0 + 500_000_000;
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
        assert_eq!(env.stdout(), "a\nb\n");
        assert_eq!(s.wake_at(), Some(t0 + 750_000_000));
        env.now = t0 + 750_000_000;
        assert_eq!(s.run(&mut env), ENDED);
        assert_eq!(env.stdout(), "a\nb\nc\n");
        assert_eq!(s.wake_at(), None);
        // No timer pending: nothing happens.
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
    }

    #[test]
    fn leading_wait_schedules_at_start() {
        let mut s = script("wait $(t.value), print 'x'");
        let mut env = FakeEnv::new().with("t.value", "3");
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
        assert_eq!(s.wake_at(), Some(env.now + 3_000_000_000));
        assert_eq!(s.run(&mut env), ENDED);
        assert_eq!(env.stdout(), "x\n");
    }

    #[test]
    fn bad_wait_time_is_reported() {
        let mut s = script("print 'a', wait soon, print 'b'");
        let mut env = FakeEnv::new();
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
        assert_eq!(s.wake_at(), None);
        assert!(env.err.contains("syntax error at `wait`"), "{}", env.err);
    }

    #[test]
    fn step_passes_a_timed_wait() {
        let mut s = script("wait 10, print 'x'");
        let mut env = FakeEnv::new();
        s.run(&mut env);
        assert!(s.wake_at().is_some());
        assert_eq!(s.step_event(&mut env), ENDED);
        assert_eq!(s.wake_at(), None);
        assert_eq!(env.stdout(), "x\n");
    }

    #[test]
    fn counting_loop_from_the_docs() {
        let mut s = script("set x 0, label begin_loop, print $x, set x $(s.add $x 1), goto begin_loop $(s.lt $x 5), stop");
        let mut env = FakeEnv::new();
        assert_eq!(s.run(&mut env), STOPPED);
        assert_eq!(env.stdout(), "0\n1\n2\n3\n4\n");
        let mut s = script("set x 0, label begin_loop, print $x, set x $(add $x 1), goto begin_loop $(lt $x 3), stop");
        let mut env = FakeEnv::new();
        assert_eq!(s.run(&mut env), STOPPED);
        assert_eq!(env.stdout(), "0\n1\n2\n");
    }

    #[test]
    fn loop_detection_disables_the_script() {
        let mut s = script("label a, goto a");
        let mut env = FakeEnv::new();
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
        assert!(s.ended());
        assert!(
            env.err.contains("s :: Script: too many jumps, giving up"),
            "{}",
            env.err
        );
        // A driver that loops ends the run with an error.
        let mut d = driver("loop");
        let mut env = FakeEnv::new();
        assert_eq!(
            d.run(&mut env),
            ScriptState::Ended {
                stop: false,
                error: Some("s :: DriverManager: too many jumps, giving up".into())
            }
        );
    }

    #[test]
    fn loop_with_pause_resets_counts() {
        let mut s = script("print 'x', pause, loop");
        let mut env = FakeEnv::new();
        s.run(&mut env);
        s.step_event(&mut env);
        s.step_event(&mut env);
        assert_eq!(env.stdout(), "x\nx\nx\n");
        assert!(!s.ended());
    }

    #[test]
    fn goto_special_targets() {
        let mut env = FakeEnv::new();
        let mut s = script("goto exit $(eq 1 1), print 'no'");
        assert_eq!(s.run(&mut env), ENDED);
        let mut s = script("goto end, print 'no'");
        assert_eq!(s.run(&mut env), ENDED);
        let mut s = script("goto stop true, print 'no'");
        assert_eq!(s.run(&mut env), STOPPED);
        let mut s = script("goto error yes, print 'no'");
        assert_eq!(s.run(&mut env), ENDED);
        let mut s = script("goto stop false, print 'yes'");
        assert_eq!(s.run(&mut env), ENDED);
        let mut s = script("goto begin $(eq 1 2), print 'yes'");
        assert_eq!(s.run(&mut env), ENDED);
        assert_eq!(env.stdout(), "yes\nyes\n");
        let mut s = script("goto end maybe, print 'after'");
        assert_eq!(s.run(&mut env), ENDED);
        assert!(env.err.contains("bad condition `maybe`"), "{}", env.err);
        assert_eq!(env.stdout(), "yes\nyes\nafter\n");
    }

    #[test]
    fn end_exit_stop_error_return() {
        let mut env = FakeEnv::new();
        let mut s = script("print 'a', end, print 'b'");
        assert_eq!(s.run(&mut env), ENDED);
        let mut s = script("exit, print 'b'");
        assert_eq!(s.run(&mut env), ENDED);
        let mut s = script("stop, print 'b'");
        assert_eq!(s.run(&mut env), STOPPED);
        let mut s = script("set m bad, error oops $m, print 'b'");
        assert_eq!(
            s.run(&mut env),
            ScriptState::Ended {
                stop: false,
                error: Some("s: oops bad".into())
            }
        );
        let mut s = script(r#"errorq "two  words""#);
        assert_eq!(
            s.run(&mut env),
            ScriptState::Ended {
                stop: false,
                error: Some("s: two  words".into())
            }
        );
        let mut s = script("return 5, print 'b'");
        assert_eq!(s.run(&mut env), ENDED);
        assert_eq!(env.stdout(), "a\n");
        // An ended script stays ended; a stopped one asks again.
        let mut s = script("stop");
        assert_eq!(s.run(&mut env), STOPPED);
        assert_eq!(s.step_event(&mut env), STOPPED);
    }

    #[test]
    fn passive_run_returns_a_value() {
        let mut s = script("TYPE PASSIVE, return $(add $1 $2)");
        let mut env = FakeEnv::new();
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
        assert_eq!(s.call_run(&mut env, "3 4"), (ENDED, Ok("7".into())));
        let mut s = script(r#"TYPE PASSIVE, returnq "$# args: $args""#);
        s.run(&mut env);
        assert_eq!(s.call_run(&mut env, "a b c").1, Ok("3 args: a b c".into()));
        assert_eq!(s.write_control(&mut env, "run", "x"), Ok(ENDED));
        assert!(env.out.is_empty());
    }

    #[test]
    fn goto_handler() {
        let mut s = script("pause, print 'a', label l, print 'b'");
        let mut env = FakeEnv::new();
        s.run(&mut env);
        assert_eq!(s.write_control(&mut env, "goto", "l"), Ok(ENDED));
        assert_eq!(env.stdout(), "b\n");
        assert_eq!(
            s.write_control(&mut env, "goto", "nowhere"),
            Err("jump to nonexistent label".into())
        );
    }

    #[test]
    fn self_writes() {
        // Writing its own `goto` moves the script.
        let mut s = script("write goto l, print 'skipped', label l, print 'here'");
        let mut env = FakeEnv::new();
        assert_eq!(s.run(&mut env), ENDED);
        assert_eq!(env.stdout(), "here\n");
        // Writing its own `step` carries it past the next pause.
        let mut s = script("write s.step, pause, print 'after'");
        let mut env = FakeEnv::new();
        assert_eq!(s.run(&mut env), ENDED);
        assert_eq!(env.stdout(), "after\n");
        // `set` writes a variable.
        let mut s = script("write set v hello there, print $v");
        let mut env = FakeEnv::new();
        s.run(&mut env);
        assert_eq!(env.stdout(), "hello there\n");
    }

    // ---- handlers, printing, variables ---------------------------------

    #[test]
    fn print_forms_from_the_docs() {
        let mut s = script(
            r#"print c.count, print "c.count", print '"c.count"', set x c.count, print $x, print $($x), printq c.count, print"#,
        );
        let mut env = FakeEnv::new().with("c.count", "0");
        s.run(&mut env);
        assert_eq!(
            env.out,
            [
                "0\n",
                "c.count\n",
                "\"c.count\"\n",
                "c.count\n",
                "0\n",
                "0\n",
                "\n"
            ]
        );
    }

    #[test]
    fn set_and_setq_from_the_docs() {
        let mut s = script(
            r#"set x $(c.count), print $x, set x "$(c.count)", print $x, setq x "$(c.count)", print $x"#,
        );
        let mut env = FakeEnv::new().with("c.count", "0");
        s.run(&mut env);
        assert_eq!(env.out, ["0\n", "\"0\"\n", "0\n"]);
    }

    #[test]
    fn printn_and_files() {
        let dir = std::env::temp_dir().join(format!("pronto-script-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let f = dir.join("out.txt");
        let fs = f.display().to_string();
        let cfg = format!("printn 'a', printn 'b', print >{fs} 'one', print >>{fs} 'two', printn >>{fs} 3, print 'c'");
        let mut s = script(&cfg);
        let mut env = FakeEnv::new();
        s.run(&mut env);
        assert_eq!(env.stdout(), "abc\n");
        assert_eq!(std::fs::read_to_string(&f).expect("file"), "one\ntwo\n3");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn print_of_a_missing_handler_prints_nothing() {
        let mut s = script("print nothing.here, print $(nothing.here) x");
        let mut env = FakeEnv::new();
        s.run(&mut env);
        assert_eq!(env.out, ["", "$(nothing.here) x"]);
        assert!(
            env.err.contains("no element named `nothing`"),
            "{}",
            env.err
        );
    }

    #[test]
    fn read_goes_to_stderr() {
        let mut s = script("read c.count, read add 1 2");
        let mut env = FakeEnv::new().with("c.count", "5");
        s.run(&mut env);
        assert!(env.out.is_empty());
        assert_eq!(env.err, "c.count:\n5\ns.add:\n3\n");
    }

    #[test]
    fn write_and_status() {
        let mut s = script(
            "write c.reset, print $?, write bad.h 1, print $?, writeq q.v \"a b\", write stop",
        );
        let mut env = FakeEnv::new();
        s.run(&mut env);
        assert_eq!(env.out, ["0\n", "-22\n"]);
        assert_eq!(
            env.writes,
            [
                ("c.reset".to_string(), String::new()),
                ("q.v".to_string(), "a b".to_string())
            ]
        );
        assert_eq!(env.stops, 1);
    }

    #[test]
    fn init_and_export() {
        let mut s =
            script("export v 5, init w $(add 1 1), print $v $w, set v 6, export v 7, print $v");
        let mut env = FakeEnv::new();
        s.run(&mut env);
        // Every init/export runs once at start, in order: $v ends up 7.
        assert_eq!(env.out, ["7 2\n", "6\n"]);
        assert_eq!(s.read_handler("v"), Ok("6".into()));
        assert_eq!(
            s.read_handler("w"),
            Err(HandlerError::NoSuchHandler("w".into()))
        );
        let mut s = script(r#"exportq q "a b""#);
        s.run(&mut env);
        assert_eq!(s.read_handler("q"), Ok("a b".into()));
    }

    #[test]
    fn substitutions() {
        let mut s = script(
            "TYPE PASSIVE, set v val, return \"$v ${v}x $(first $1 z) $2 $# '$v' $nope \\$v $(length abc)\"",
        );
        let mut env = FakeEnv::new();
        s.run(&mut env);
        let (_, r) = s.call_run(&mut env, "p q");
        // Single quotes inside double quotes do not stop substitution.
        assert_eq!(r, Ok("\"val valx p q 2 'val' $nope \\$v 3\"".into()));
        // Nested handler calls.
        let mut s = script("print $(add $(mul 2 3) $(c.count))");
        let mut env = FakeEnv::new().with("c.count", "4");
        s.run(&mut env);
        assert_eq!(env.stdout(), "10\n");
    }

    #[test]
    fn quoted_substitution_escapes() {
        let mut s = script(r#"print "[$(t.v)]""#);
        let mut env = FakeEnv::new().with("t.v", "a \"b\"\n");
        s.run(&mut env);
        assert_eq!(env.stdout(), "[a \"b\"\n]\n");
    }

    #[test]
    fn own_handlers_and_compound_scope() {
        let mut env = FakeEnv::new()
            .with("c/x.count", "inner")
            .with("x.count", "outer")
            .with("y.count", "top");
        env.name = "c/s".into();
        let mut s = build_named(
            "c/s",
            "Script",
            "print x.count, print y.count, print $(c/s.add 1 1), print $(add 2 2)",
        )
        .expect("script");
        s.run(&mut env);
        assert_eq!(env.out, ["inner\n", "top\n", "2\n", "4\n"]);
    }

    #[test]
    fn now_handler() {
        let mut s = script("print $(now), print now");
        let mut env = FakeEnv::new();
        env.now = 1_700_000_000_000_000_123;
        s.run(&mut env);
        assert_eq!(
            env.out,
            ["1700000000.000000123\n", "1700000000.000000123\n"]
        );
        assert_eq!(click_timestamp(1_500_000_000), "1.500000");
        assert_eq!(
            click_timestamp(1_700_000_000_000_001_000),
            "1700000000.000001"
        );
        assert_eq!(click_timestamp(-1_500_000_000), "-1.500000");
        assert_eq!(click_timestamp(0), "0.000000");
    }

    #[test]
    fn var_handlers() {
        let mut s =
            script("set v a b c, print $(get v), print $(shift v), print $v, print $(get nope)");
        let mut env = FakeEnv::new();
        s.run(&mut env);
        assert_eq!(env.out, ["a b c\n", "a\n", "b c\n", "$(get nope)"]);
        assert!(env.err.contains("undefined variable `nope`"));
        assert_eq!(s.write_handler("set", "v 1"), Ok(()));
        assert_eq!(s.read_handler("get v"), Ok("1".into()));
    }

    #[test]
    fn element_read_handler_for_other_scripts() {
        let s = script("");
        assert_eq!(s.read_handler("add 1 2"), Ok("3".into()));
        assert_eq!(s.read_handler("sub 1.5 0.25"), Ok("1.25".into()));
        assert_eq!(
            s.read_handler("frob"),
            Err(HandlerError::NoSuchHandler("frob".into()))
        );
        assert!(matches!(
            s.read_handler("now"),
            Err(HandlerError::BadValue(_))
        ));
        assert!(matches!(
            s.read_handler("add x"),
            Err(HandlerError::BadValue(_))
        ));
        assert!(s
            .handlers()
            .iter()
            .any(|h| h.name == "step" && h.write && !h.read));
    }

    // ---- arithmetic and friends ------------------------------------------

    #[test]
    fn integer_arithmetic() {
        assert_eq!(eval("add 10 5 2"), "17");
        assert_eq!(eval("add"), "0");
        assert_eq!(eval("sub 10 5 2"), "3");
        assert_eq!(eval("sub 5"), "5");
        assert_eq!(eval("min 5 10 2"), "2");
        assert_eq!(eval("max 5 10 2"), "10");
        assert_eq!(eval("mul 2 3 4"), "24");
        assert_eq!(eval("mul"), "1");
        assert_eq!(eval("add 0x10 010 1"), "25");
        assert_eq!(eval("add 9223372036854775807 0"), "9223372036854775807");
        assert_eq!(eval("mod 7 3"), "1");
        assert_eq!(eval("mod -7 3"), "-1");
        assert_eq!(eval("rem 7 3"), "1");
        assert_eq!(eval("neg 5"), "-5");
        assert_eq!(eval("abs -5"), "5");
        assert_eq!(eval("idiv 7 2"), "3");
        assert_eq!(eval("idiv -7 2"), "-3");
        assert_eq!(eval("add 1 x"), "ERR expected list of numbers");
        assert_eq!(eval("mod 7"), "ERR expected two numbers");
        assert_eq!(eval("mod 7.5 2"), "ERR expected two numbers");
        assert_eq!(eval("mod 7 0"), "ERR division by zero");
        assert_eq!(eval("neg x"), "ERR expected one number");
    }

    #[test]
    fn decimal_arithmetic() {
        assert_eq!(eval("sub 1700000001.5 1700000000.000000123"), "1.499999877");
        assert_eq!(
            eval("sub 1700000000.000000123 1700000001.5"),
            "-1.499999877"
        );
        assert_eq!(eval("add 1.5 2"), "3.5");
        assert_eq!(eval("add 1.5 1.5"), "3");
        assert_eq!(eval("sub 0.5 0.49999"), "1e-05");
        assert_eq!(eval("add 0.0001 0"), "0.0001");
        assert_eq!(eval("add 999999999998.5 1.5"), "1e+12");
        // More digits than Click's %.12g keeps: printed in full.
        assert_eq!(eval("add 1700000001.123456789 0.0"), "1700000001.123456789");
        assert_eq!(eval("mul 1.5 1.5"), "2.25");
        assert_eq!(eval("div 10 4"), "2.5");
        assert_eq!(eval("div 10 5"), "2");
        assert_eq!(eval("div 1 3"), "0.333333333333");
        assert_eq!(eval("div 2 3"), "0.666666666667");
        assert_eq!(eval("div 1 0"), "inf");
        assert_eq!(eval("idiv 7.9 1"), "7");
        assert_eq!(eval("idiv 10 3 2"), "1");
        assert_eq!(eval("rem 7.5 2"), "1.5");
        assert_eq!(eval("neg 1.25"), "-1.25");
        assert_eq!(eval("abs -0.5"), "0.5");
        assert_eq!(eval("min 1.5 2 0.25"), "0.25");
        assert_eq!(eval("max 1.5 2 0.25"), "2");
        assert_eq!(eval("add 1e3 1"), "1001");
        assert_eq!(eval("add 08 1"), "9");
        assert_eq!(eval("mul 0.1 0.2"), "0.02");
    }

    #[test]
    fn double_formatting() {
        assert_eq!(fmt_f64(0.1 + 0.2), "0.3");
        assert_eq!(fmt_f64(123456789012345.0), "1.23456789012e+14");
        assert_eq!(fmt_f64(0.00001234), "1.234e-05");
        assert_eq!(fmt_f64(-2.5), "-2.5");
        assert_eq!(fmt_f64(100.0), "100");
        assert_eq!(fmt_dec(-SCALE / 2), "-0.5");
        assert_eq!(fmt_dec(123 * SCALE), "123");
    }

    #[test]
    fn comparisons() {
        assert_eq!(eval("eq 10 0xA"), "true");
        assert_eq!(eval("le 9 8"), "false");
        assert_eq!(eval("eq 10x 10x"), "true");
        assert_eq!(eval("lt abc abd"), "true");
        assert_eq!(eval("gt b a"), "true");
        assert_eq!(eval("eq 1.0 1"), "true");
        assert_eq!(eval("lt 1.5 2"), "true");
        assert_eq!(eval("ge 2 2"), "true");
        assert_eq!(eval("ne 2 2"), "false");
        assert_eq!(eval("eq \"a\" a"), "true");
        assert_eq!(eval("eq 1"), "ERR expected two numbers");
        assert_eq!(eval("lt 1700000000.000000123 1700000000.000000124"), "true");
    }

    #[test]
    fn booleans() {
        assert_eq!(eval("not true"), "false");
        assert_eq!(eval("not 0"), "true");
        assert_eq!(eval("not maybe"), "ERR syntax error");
        assert_eq!(eval("and true yes 1"), "true");
        assert_eq!(eval("and true false"), "false");
        assert_eq!(eval("and"), "true");
        assert_eq!(eval("or false no"), "false");
        assert_eq!(eval("or false t"), "true");
        assert_eq!(eval("or"), "false");
        assert_eq!(eval("nand true true"), "false");
        assert_eq!(eval("nor false false"), "true");
        assert_eq!(eval("if true a b"), "a");
        assert_eq!(eval("if false a b"), "b");
        assert_eq!(eval("in foo bar foo"), "true");
        assert_eq!(eval("in foo bar baz"), "false");
    }

    #[test]
    fn strings() {
        assert_eq!(eval("sprintf \"%05x\" 127"), "0007f");
        assert_eq!(
            eval("sprintf \"%d-%s|%-4d|%4s|%+d|%%\" 5 hi 7 ab 3"),
            "5-hi|7   |  ab|+3|%"
        );
        assert_eq!(eval("sprintf %#x 255"), "0xff");
        assert_eq!(eval("sprintf %*d 5 42"), "   42");
        assert_eq!(eval("sprintf %.3d -7"), "-007");
        assert_eq!(eval("sprintf %hd 65535"), "-1");
        assert_eq!(eval("sprintf %o 8"), "10");
        assert_eq!(eval("sprintf %d"), "ERR syntax error");
        assert_eq!(eval("sprintf %d 1 2"), "ERR syntax error");
        assert_eq!(eval("length abcdef"), "6");
        assert_eq!(eval("length"), "0");
        assert_eq!(eval("unquote \"a b\" 'c'"), "a b c");
        assert_eq!(eval("first x y"), "x");
        assert_eq!(eval("htons 0x1234"), "13330");
        assert_eq!(eval("ntohl 1"), "16777216");
    }

    #[test]
    fn random_numbers() {
        for _ in 0..50 {
            let v: u64 = eval("random 10").parse().expect("number");
            assert!(v < 10);
            let v: u64 = eval("random 5 7").parse().expect("number");
            assert!((5..=7).contains(&v));
            let v: u64 = eval("random").parse().expect("number");
            assert!(v <= RAND_MAX);
        }
        assert_eq!(eval("random 0"), "ERR bad N");
        assert_eq!(eval("random 7 5"), "ERR bad N");
        let s = script("");
        let a = s.read_handler("random 1000000").expect("random");
        let b = s.read_handler("random 1000000").expect("random");
        assert_ne!(a, b);
    }

    #[test]
    fn text_helpers() {
        assert_eq!(shift_word("  a\"b c\" d  e"), ("a\"b c\"", "d  e"));
        assert_eq!(shift_word("a /* x */ b"), ("a", "b"));
        assert_eq!(words("x 'y z' w"), ["x", "'y z'", "w"]);
        assert_eq!(unquote(" \"a\\tb\" 'c\\n' d "), "a\tb c\\n d");
        assert_eq!(unquote("\\<41 42>"), "AB");
        assert_eq!(unquote("a /* c */ b"), "a b");
        assert_eq!(quote("a\"$\\\n"), "\"a\\\"\\$\\\\\\n\"");
        assert_eq!(unquote(&quote("x \"y\"\t\n$z")), "x \"y\"\t\n$z");
        assert_eq!(uncomment("  a  // c\n"), "a");
    }

    // ---- configuration -------------------------------------------------

    #[test]
    fn configuration_errors() {
        assert_eq!(
            err("Script", "print 'a', frob x"),
            "unknown instruction `frob`"
        );
        assert_eq!(err("Script", "goto nowhere"), "no such label `nowhere`");
        assert_eq!(err("Script", "TYPE FOO"), "bad TYPE `FOO`");
        assert_eq!(err("Script", "TYPE ACTIVE X"), "bad TYPE `ACTIVE X`");
        assert_eq!(err("Script", "TYPE SIGNAL"), "missing signal number");
        assert_eq!(err("Script", "TYPE SIGNAL FOO"), "bad signal number `FOO`");
        let s = script("TYPE SIGNAL INT SIGUSR1 15, print hi");
        assert_eq!(s.signals(), [2, 10, 15]);
        assert_eq!(
            err("Script", "TYPE PACKET"),
            "PACKET script must have inputs"
        );
        assert_eq!(err("Script", "TYPE PROXY"), "TYPE PROXY not supported yet");
        assert_eq!(err("Script", "set x"), "syntax error at `set`");
        assert_eq!(err("Script", "label a b"), "syntax error at `label`");
        assert_eq!(err("Script", "pause x"), "syntax error at `pause`");
        assert_eq!(err("Script", "end now"), "syntax error at `end`");
        assert_eq!(
            err("Script", "frob, goto x"),
            "unknown instruction `frob`; no such label `x`"
        );
        assert!(build_named(
            "s",
            "Script",
            "label a, goto a, goto exit, goto loop, goto begin, , // c"
        )
        .is_ok());
        assert!(build_named("s", "Script", "TYPE DRIVER, print 'x'")
            .expect("driver")
            .is_driver());
        assert!(!build_named("s", "DriverManager", "TYPE ACTIVE, print 'x'")
            .expect("active")
            .is_driver());
        assert!(build_named("s", "Script", "save c.count /tmp/x, append c.count").is_ok());
    }

    #[test]
    fn type_keyword_driver_script() {
        let mut s = build_named("s", "Script", "TYPE DRIVER, wait, print 'x'").expect("driver");
        let mut env = FakeEnv::new();
        assert_eq!(s.run(&mut env), ScriptState::Blocked);
        assert_eq!(s.step_event(&mut env), STOPPED);
        assert_eq!(env.stdout(), "x\n");
    }

    #[test]
    fn lookup_knows_both_classes() {
        assert_eq!(lookup("Script").map(|e| e.spec.name), Some("Script"));
        assert_eq!(
            lookup("DriverManager").map(|e| e.spec.name),
            Some("DriverManager")
        );
        assert!(lookup("Counter").is_none());
    }
}
