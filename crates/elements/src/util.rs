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
    if prog.prefers_batch() && batch.len() >= 8 {
        let mut res = [None; pronto_packet::BATCH_MAX];
        prog.classify_iter(batch.iter().map(|p| (p.data(), nh(p))), &mut res);
        let mut res = res.iter();
        crate::push_each(batch, out, |_, _| {
            let r = res.next().copied().flatten();
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
