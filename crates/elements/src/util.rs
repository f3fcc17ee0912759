//! Small helpers shared by elements.

use crate::{ConfigError, HandlerError};

/// Parses a handler value or reports it as a bad value.
pub fn parse_value<T: crate::FromArg>(name: &str, v: &str) -> Result<T, HandlerError> {
    T::from_arg(v.trim()).map_err(|e| HandlerError::BadValue(format!("{name}: {e}")))
}

/// Appends `data` in hex, a space between groups of 4 bytes; with `line`
/// nonzero, each run of `line` bytes starts a new line indented by two.
pub fn push_hex(s: &mut String, data: &[u8], line: usize) {
    use std::fmt::Write as _;
    for (i, b) in data.iter().enumerate() {
        if line > 0 && i % line == 0 {
            s.push_str("\n  ");
        } else if i > 0 && i % 4 == 0 {
            s.push(' ');
        }
        let _ = write!(s, "{b:02x}");
    }
}

/// Appends `data` as ASCII, `.` for bytes that do not print, a space before
/// each group of 8 bytes; with `line` nonzero, each run of `line` bytes
/// starts a new line indented by two instead.
pub fn push_ascii(s: &mut String, data: &[u8], line: usize) {
    for (i, &b) in data.iter().enumerate() {
        if line > 0 && i % line == 0 {
            s.push_str("\n  ");
        } else if i % 8 == 0 {
            s.push(' ');
        }
        s.push(if (32..=126).contains(&b) {
            b as char
        } else {
            '.'
        });
    }
}

/// Makes a configure error.
pub fn cfg_err(msg: impl Into<String>) -> ConfigError {
    ConfigError::new(msg)
}

/// Below this many packets an element that can walk a whole batch (a
/// classifier's lock step, a route table's level-by-level lookup, a
/// rewriter's look-ahead) takes the packets one at a time instead: the
/// walk's per-call set-up (lane state, result arrays) costs more than its
/// overlapped reads save on a handful, and where the runtime keeps Click's
/// order batches are about one packet.
pub const BATCH_WALK_MIN: usize = 8;

/// Classifies every packet of `batch` with `prog` and routes it to the
/// output the program names; unmatched packets are dropped and counted in
/// `drops`. `nh` gives a packet's network-header offset (0 for
/// `Classifier`). Programs with several data-dependent steps are evaluated
/// a batch at a time (branch-free, eight packets in lock step); short ones
/// per packet, which is cheaper for them. The results are identical.
#[inline]
pub fn classify_and_route(
    prog: &pronto_classify::Program,
    batch: &mut pronto_packet::Batch,
    out: &mut crate::Out<'_>,
    nh: impl Fn(&pronto_packet::Packet) -> usize,
    drops: &mut u64,
) {
    // The lock-step walk pays a fixed set-up per call (lane state, result
    // array); a handful of packets (one at a time where the runtime keeps
    // Click's packet order) are cheaper one by one.
    if prog.uses_link() {
        // `ether host`: each packet with its link header.
        crate::push_each(batch, out, |p, _| {
            let r = prog.classify_link(p.data(), nh(p), p.mac_header_data().unwrap_or(&[]));
            *drops += r.is_none() as u64;
            r
        });
    } else if prog.prefers_batch() && batch.len() >= BATCH_WALK_MIN {
        // Four bytes a packet (cleared a batch at a time).
        let mut res = [pronto_classify::Port::DROP; pronto_packet::BATCH_MAX];
        prog.classify_iter(batch.iter().map(|p| (p.data(), nh(p))), &mut res);
        let mut res = res.iter();
        crate::push_each(batch, out, |_, _| {
            let r = res.next().and_then(|r| r.get());
            *drops += r.is_none() as u64;
            r
        });
    } else {
        crate::push_each(batch, out, |p, _| {
            let r = prog.classify(p.data(), nh(p));
            *drops += r.is_none() as u64;
            r
        });
    }
}

/// A small deterministic pseudo-random generator (xorshift64*), for
/// elements that pick random values (addresses, ports, drop decisions).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced by a fixed nonzero seed).
    pub fn new(seed: u64) -> Rng {
        Rng(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// A value in `lo..=hi`.
    pub fn range(&mut self, lo: u32, hi: u32) -> u32 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo) as u64 + 1;
        lo + (self.next_u64() % span) as u32
    }

    /// A real in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Formats `x` as C's `printf("%.12g")`, which is how Click prints a
/// `double` (`String(double)`).
pub fn fmt_g12(x: f64) -> String {
    fmt_g(x, 12)
}

/// Formats `x` as C's `printf("%.Pg")` with `P = prec` (at least 1).
pub fn fmt_g(x: f64, prec: usize) -> String {
    let p = prec.max(1);
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // The exponent after rounding to P significant digits.
    let e = format!("{:.*e}", p - 1, x);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if exp < -4 || exp >= p as i32 {
        let m = strip(mant.to_string());
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip(format!("{x:.decimals$}"))
    }
}

/// An element's configuration as Click's keyword handlers see it
/// (`read_keyword_handler`, `reconfigure_keyword_handler`): the argument
/// list, read and changed one keyword at a time. A write gives the new
/// argument text, which the element parses again all or nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfText {
    args: Vec<String>,
}

impl ConfText {
    /// Splits `config` into arguments.
    pub fn new(config: &str) -> ConfText {
        ConfText {
            args: pronto_lang::args::split_args(config),
        }
    }

    fn keyword_at(&self, kw: &str) -> Option<usize> {
        self.args
            .iter()
            .rposition(|a| pronto_lang::args::split_keyword(a).is_some_and(|(k, _)| k == kw))
    }

    /// Whether argument `pos` stands for the positional argument (it is
    /// not a `KEYWORD value` pair).
    fn positional(&self, pos: Option<usize>) -> Option<usize> {
        let i = pos?;
        let a = self.args.get(i)?;
        match pronto_lang::args::split_keyword(a) {
            Some((_, rest)) if !rest.is_empty() => None,
            _ => Some(i),
        }
    }

    /// The value of keyword `kw` (its last occurrence), else the
    /// positional argument `pos` when given and present, else empty.
    pub fn read(&self, kw: &str, pos: Option<usize>) -> String {
        if let Some(i) = self.keyword_at(kw) {
            let a = &self.args[i];
            return pronto_lang::args::split_keyword(a)
                .map_or(String::new(), |(_, v)| v.to_string());
        }
        match self.positional(pos) {
            Some(i) => self.args[i].clone(),
            None => String::new(),
        }
    }

    /// The configuration with keyword `kw` set to `value`: every earlier
    /// occurrence removed and `KW value` appended, or, when the keyword is
    /// absent and `pos` names a positional argument, that argument
    /// replaced.
    pub fn with(&self, kw: &str, pos: Option<usize>, value: &str) -> ConfText {
        let mut args = self.args.clone();
        let had = self.keyword_at(kw).is_some();
        args.retain(|a| pronto_lang::args::split_keyword(a).is_none_or(|(k, _)| k != kw));
        match (had, self.positional(pos)) {
            (false, Some(i)) => args[i] = value.trim().to_string(),
            _ => args.push(format!("{kw} {}", value.trim())),
        }
        ConfText { args }
    }

    /// The argument text, arguments separated by `, `.
    pub fn text(&self) -> String {
        self.args.join(", ")
    }
}

/// Replaces the bytes of `p` with `data` (growing into the tailroom, or
/// the headroom when the tailroom is short); false if the slot cannot hold
/// `data`, leaving `p` as it was.
pub fn replace_data(p: &mut pronto_packet::Packet, data: &[u8]) -> bool {
    let len = p.len();
    if data.len() <= len {
        p.take(len - data.len());
    } else if data.len() - len <= p.tailroom() {
        p.put_uninit(data.len() - len);
    } else if p.push(data.len() - len).is_none() {
        return false;
    }
    p.data_mut().copy_from_slice(data);
    true
}

/// Parses an RFC 6052 prefix argument (`PREFIX`): 32, 40, 48, 56, 64 or
/// 96 bits.
pub fn prefix6052(
    v: Option<crate::args::Ip6Prefix>,
) -> Result<pronto_packet::wire::xlat::Prefix6052, ConfigError> {
    use pronto_packet::wire::xlat::Prefix6052;
    let Some(p) = v else {
        return Ok(Prefix6052::IPV4_MAPPED);
    };
    let len = pronto_lang::args::mask6_len(&p.mask).unwrap_or(0);
    Prefix6052::new(p.addr, len as u8).map_err(|e| cfg_err(format!("PREFIX: {e}, found /{len}")))
}

#[cfg(test)]
mod tests {
    use super::ConfText;

    #[test]
    fn printf_g_formatting() {
        use super::{fmt_g, fmt_g12};
        assert_eq!(fmt_g12(0.0), "0");
        assert_eq!(fmt_g12(1.5), "1.5");
        assert_eq!(fmt_g12(100.0), "100");
        assert_eq!(fmt_g12(1.0 / 3.0), "0.333333333333");
        assert_eq!(fmt_g12(123456789012345.0), "1.23456789012e+14");
        assert_eq!(fmt_g12(0.00001234), "1.234e-05");
        assert_eq!(fmt_g12(0.0001234), "0.0001234");
        assert_eq!(fmt_g12(-2.5), "-2.5");
        assert_eq!(fmt_g(999999.5, 6), "1e+06");
        assert_eq!(fmt_g(0.1 + 0.2, 6), "0.3");
    }

    #[test]
    fn keyword_handlers_read_and_replace() {
        let c = ConfText::new("1, VLAN_PCP 2, VLAN_PCP 3");
        assert_eq!(c.read("VLAN_PCP", None), "3");
        assert_eq!(c.read("VLAN_ID", None), "");
        assert_eq!(c.read("VLAN_TCI", Some(0)), "1");
        assert_eq!(c.with("VLAN_PCP", None, "5").text(), "1, VLAN_PCP 5");
        assert_eq!(
            c.with("VLAN_TCI", Some(0), " 7 ").text(),
            "7, VLAN_PCP 2, VLAN_PCP 3"
        );
        assert_eq!(
            c.with("VLAN_ID", None, "9").text(),
            "1, VLAN_PCP 2, VLAN_PCP 3, VLAN_ID 9"
        );
        let c = ConfText::new("DSCP 10");
        assert_eq!(c.read("DSCP", Some(0)), "10");
        assert_eq!(c.with("DSCP", Some(0), "2").text(), "DSCP 2");
    }
}
