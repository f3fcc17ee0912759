//! Helpers shared by the `standard` elements: annotation arguments, the
//! default source payload, Click's EWMA rate estimator, a token bucket and
//! Click's number formats.

use crate::{FromArg, HandlerError};

/// The payload sources send when no DATA is given (69 bytes, as in Click).
pub const DEFAULT_DATA: &[u8] =
    b"Random bullshit in a packet, at least 64 bytes long. Well, now it is.";

/// A one-byte annotation offset (Click's `AnnoArg(1)`): a number below the
/// annotation area's size or a one-byte annotation name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anno1(pub usize);

impl FromArg for Anno1 {
    fn from_arg(s: &str) -> Result<Self, String> {
        let t = pronto_lang::args::unquote(s);
        let name = t.strip_suffix("_ANNO").unwrap_or(&t);
        let off = match name {
            "PAINT" => pronto_packet::PAINT_ANNO_OFFSET,
            "ICMP_PARAMPROB" => pronto_packet::ICMP_PARAMPROB_ANNO_OFFSET,
            "FIX_IP_SRC" => pronto_packet::FIX_IP_SRC_ANNO_OFFSET,
            _ => match pronto_lang::args::parse_i64(name) {
                Ok(v) if v >= 0 && (v as usize) < pronto_packet::ANNO_SIZE => v as usize,
                // A name from an AnnotationInfo.
                _ => {
                    match pronto_lang::names::value(pronto_lang::names::NameKind::Annotation, &t) {
                        Some(v) => (v & 0xffff) as usize,
                        None => return Err("expected annotation".into()),
                    }
                }
            },
        };
        Ok(Anno1(off))
    }
}

/// Packet bytes given as a Click string argument (`DATA`): quotes are
/// removed, escapes in double quotes and `\<hex>` anywhere are decoded,
/// and non-UTF-8 bytes survive.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct DataArg(pub Vec<u8>);

impl FromArg for DataArg {
    fn from_arg(s: &str) -> Result<Self, String> {
        Ok(DataArg(unquote_bytes(s)))
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|v| v as u8)
}

/// Decodes one backslash escape starting after the backslash at `i`;
/// returns the index after it.
fn escape(b: &[u8], i: usize, out: &mut Vec<u8>) -> usize {
    let Some(&c) = b.get(i) else {
        out.push(b'\\');
        return i;
    };
    match c {
        b'<' => {
            let mut j = i + 1;
            let mut hi: Option<u8> = None;
            while j < b.len() && b[j] != b'>' {
                if let Some(v) = hex(b[j]) {
                    match hi.take() {
                        Some(h) => out.push(h << 4 | v),
                        None => hi = Some(v),
                    }
                }
                j += 1;
            }
            if let Some(h) = hi {
                out.push(h);
            }
            (j + 1).min(b.len())
        }
        b'n' | b't' | b'r' | b'a' | b'b' | b'f' | b'v' => {
            out.push(match c {
                b'n' => b'\n',
                b't' => b'\t',
                b'r' => b'\r',
                b'a' => 7,
                b'b' => 8,
                b'f' => 12,
                _ => 11,
            });
            i + 1
        }
        b'x' => {
            let mut j = i + 1;
            let mut v: u32 = 0;
            while j < b.len() && j < i + 3 {
                match hex(b[j]) {
                    Some(d) => v = v * 16 + u32::from(d),
                    None => break,
                }
                j += 1;
            }
            out.push(if j == i + 1 { b'x' } else { v as u8 });
            j
        }
        b'0'..=b'7' => {
            let mut j = i;
            let mut v: u32 = 0;
            while j < b.len() && j < i + 3 && (b'0'..=b'7').contains(&b[j]) {
                v = v * 8 + u32::from(b[j] - b'0');
                j += 1;
            }
            out.push(v as u8);
            j
        }
        b'\n' => i + 1,
        _ => {
            out.push(c);
            i + 1
        }
    }
}

/// Click's `cp_unquote` on bytes.
pub fn unquote_bytes(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut quote = 0u8;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c == b'"' || c == b'\'') && (quote == 0 || quote == c) {
            quote = if quote == 0 { c } else { 0 };
            i += 1;
        } else if c == b'\\' && (quote == b'"' || (quote == 0 && b.get(i + 1) == Some(&b'<'))) {
            i = escape(b, i + 1, &mut out);
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Makes a packet template of `len` bytes (or `data` itself when `len` is
/// `None`) by repeating or cutting `data`, as Click's sources do.
pub fn template(data: &[u8], len: Option<usize>) -> Vec<u8> {
    let len = match len {
        None => return data.to_vec(),
        Some(l) => l.min(pronto_packet::MAX_PACKET),
    };
    if data.is_empty() {
        return vec![0; len];
    }
    data.iter().copied().cycle().take(len).collect()
}

/// Reads a handler value of type `T`, or says the handler's message.
pub fn handler_value<T: FromArg>(value: &str, msg: &str) -> Result<T, HandlerError> {
    T::from_arg(value.trim()).map_err(|_| HandlerError::BadValue(msg.to_string()))
}

/// Click's `cp_unparse_real2`: a fixed-point number with `frac_bits`
/// fractional bits, as the shortest decimal that reads back the same.
pub fn unparse_real2(real: i64, frac_bits: u32) -> String {
    let neg = real < 0;
    let mag = real.unsigned_abs();
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    s.push_str(&(mag >> frac_bits).to_string());
    let one: u64 = 1 << frac_bits;
    let mut r = mag & (one - 1);
    if r == 0 {
        return s;
    }
    s.push('.');
    r = 10 * r + 5;
    let mut allowable: u64 = 10;
    let mut rounder: u64 = 5;
    while rounder < (one >> 1) {
        rounder *= 10;
    }
    loop {
        if allowable > one {
            r = r.wrapping_add((one >> 1).wrapping_sub(rounder));
        }
        s.push((b'0' + (r >> frac_bits) as u8) as char);
        r = 10 * (r & (one - 1));
        allowable *= 10;
        if r <= allowable {
            break;
        }
    }
    s
}

/// C's `%.12g`, which Click uses to print doubles.
pub fn format_g12(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "nan".into()
        } else if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    let e = format!("{:.11e}", x);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..12).contains(&exp) {
        let mant = trim_zeros(mant);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mant}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (11 - exp).max(0) as usize;
        trim_zeros(&format!("{:.*}", decimals, x)).to_string()
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// A timestamp (ns since the epoch) as Click prints it: `SEC.USEC`, or
/// `SEC.NSEC` when it is not a whole number of microseconds.
pub fn unparse_timestamp(ns: i64) -> String {
    let (neg, mag) = (ns < 0, ns.unsigned_abs());
    let (sec, sub) = (mag / 1_000_000_000, (mag % 1_000_000_000) as u32);
    let sign = if neg { "-" } else { "" };
    if sub % 1000 == 0 {
        format!("{sign}{sec}.{:06}", sub / 1000)
    } else {
        format!("{sign}{sec}.{sub:09}")
    }
}

/// A time interval (ns) as Click's `Timestamp::unparse_interval` prints it.
pub fn unparse_interval(ns: i64) -> String {
    if (0..1_000_000_000).contains(&ns) {
        if ns % 1_000_000 == 0 {
            format!("{}ms", ns / 1_000_000)
        } else if ns % 1000 == 0 {
            format!("{}us", ns / 1000)
        } else {
            format!("{ns}ns")
        }
    } else {
        format!("{}s", unparse_timestamp(ns))
    }
}

/// Click's rate estimator (`RateEWMAX` with stability shift 4): an
/// exponentially weighted moving average of events per jiffy (1 ms).
#[derive(Clone, Copy, Debug)]
pub struct RateEwma {
    scale: u32,
    epoch: i64,
    current: i64,
    avg: i64,
}

const STABILITY: u32 = 4;
const COMPENSATION: i64 = 1 << (STABILITY - 1);

impl RateEwma {
    /// An estimator with `scale` fractional bits, starting at `now`.
    pub fn new(scale: u32, now: i64) -> RateEwma {
        RateEwma {
            scale,
            epoch: now.div_euclid(1_000_000),
            current: 0,
            avg: 0,
        }
    }

    fn step(&mut self, x: i64) {
        let xs = (x << self.scale).wrapping_add(COMPENSATION);
        self.avg = self
            .avg
            .wrapping_add(xs.wrapping_sub(self.avg) >> STABILITY);
    }

    /// Records `delta` events at time `now` (ns).
    #[inline]
    pub fn update(&mut self, delta: i64, now: i64) {
        let j = now.div_euclid(1_000_000);
        if j != self.epoch {
            self.advance(j);
        }
        self.current += delta;
    }

    #[cold]
    fn advance(&mut self, j: i64) {
        let cur = self.current;
        self.step(cur);
        let idle = j - self.epoch - 1;
        if !(0..100).contains(&idle) {
            self.avg = 0;
        } else {
            for _ in 0..idle {
                self.step(0);
            }
        }
        self.current = 0;
        self.epoch = j;
    }

    /// The scaled average (events per jiffy, `scale` fractional bits).
    pub fn scaled_average(&self) -> i64 {
        self.avg
    }

    /// Fractional bits.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    /// The rate per second as Click prints it.
    pub fn unparse_rate(&self) -> String {
        unparse_real2(self.avg.wrapping_mul(1000), self.scale)
    }
}

/// A token bucket refilled continuously from `now` (ns).
#[derive(Clone, Copy, Debug)]
pub struct TokenBucket {
    /// Tokens per second.
    pub rate: f64,
    /// Most tokens held.
    pub capacity: f64,
    tokens: f64,
    last: Option<i64>,
}

impl TokenBucket {
    /// A bucket holding `initial` tokens.
    pub fn new(rate: f64, capacity: f64, initial: f64) -> TokenBucket {
        TokenBucket {
            rate,
            capacity: capacity.max(1.0),
            tokens: initial,
            last: None,
        }
    }

    /// Sets the token count.
    pub fn set(&mut self, tokens: f64) {
        self.tokens = tokens.min(self.capacity);
    }

    /// Adds the tokens earned since the last refill.
    pub fn refill(&mut self, now: i64) {
        if let Some(last) = self.last {
            if now > last {
                let add = (now - last) as f64 * self.rate / 1e9;
                self.tokens = (self.tokens + add).min(self.capacity);
            }
        }
        self.last = Some(self.last.map_or(now, |l| l.max(now)));
    }

    /// Whole tokens available.
    pub fn available(&self) -> u64 {
        if self.tokens >= 1.0 {
            self.tokens as u64
        } else {
            0
        }
    }

    /// Takes `n` tokens (the caller checked they are there).
    pub fn remove(&mut self, n: u64) {
        self.tokens -= n as f64;
    }

    /// When (ns) the bucket will hold one token, from `now`.
    pub fn time_until_one(&self, now: i64) -> i64 {
        if self.tokens >= 1.0 {
            return now;
        }
        if self.rate <= 0.0 {
            return i64::MAX;
        }
        let wait = ((1.0 - self.tokens) * 1e9 / self.rate).ceil();
        now.saturating_add(wait.max(1.0) as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real2_like_click() {
        assert_eq!(unparse_real2(0, 10), "0");
        assert_eq!(unparse_real2(1024, 10), "1");
        assert_eq!(unparse_real2(512, 10), "0.5");
        assert_eq!(unparse_real2(1024 + 256, 10), "1.25");
        assert_eq!(unparse_real2(1, 10), "0.001");
        assert_eq!(unparse_real2(-512, 10), "-0.5");
        assert_eq!(unparse_real2(3, 1), "1.5");
    }

    #[test]
    fn g12_like_c() {
        assert_eq!(format_g12(0.0), "0");
        assert_eq!(format_g12(1000.0), "1000");
        assert_eq!(format_g12(2.5), "2.5");
        assert_eq!(format_g12(1.0 / 3.0), "0.333333333333");
        assert_eq!(format_g12(1e15), "1e+15");
        assert_eq!(format_g12(0.00001), "1e-05");
    }

    #[test]
    fn timestamps() {
        assert_eq!(unparse_timestamp(1_500_000_000), "1.500000");
        assert_eq!(unparse_timestamp(1_000_000_001), "1.000000001");
        assert_eq!(unparse_interval(500_000_000), "500ms");
        assert_eq!(unparse_interval(1_500_000_000), "1.500000s");
        assert_eq!(unparse_interval(1500), "1500ns");
    }

    #[test]
    fn data_args() {
        assert_eq!(unquote_bytes(r"\<08 00>"), vec![8, 0]);
        assert_eq!(
            unquote_bytes(r#""a\x41\<ff>" 'b\n'"#),
            b"aA\xff b\\n".to_vec()
        );
        assert_eq!(unquote_bytes("abc"), b"abc".to_vec());
    }

    #[test]
    fn anno_names() {
        assert_eq!(Anno1::from_arg("PAINT"), Ok(Anno1(16)));
        assert_eq!(Anno1::from_arg("3"), Ok(Anno1(3)));
        assert!(Anno1::from_arg("48").is_err());
    }

    #[test]
    fn ewma_steady_rate() {
        // One event per millisecond for a long time tends to 1000/s.
        let mut r = RateEwma::new(10, 0);
        for ms in 0..2000i64 {
            r.update(1, ms * 1_000_000);
        }
        // Click's integer EWMA settles just below the true rate.
        assert_eq!(r.unparse_rate(), "993.164");
        // A gap of 100 ms or more zeroes it.
        r.update(0, 3_000_000_000);
        assert_eq!(r.unparse_rate(), "0");
    }

    #[test]
    fn bucket() {
        let mut b = TokenBucket::new(10.0, 2.0, 1.0);
        b.refill(0);
        assert_eq!(b.available(), 1);
        b.remove(1);
        assert_eq!(b.time_until_one(0), 100_000_000);
        b.refill(250_000_000);
        assert_eq!(b.available(), 2);
    }
}
