//! Click's `analysis` elements: timestamps (adjusting, filtering,
//! merging by time) and aggregates (flow numbering, per-aggregate
//! counting and filtering). The trace readers and writers of this family
//! live in `app/`.

pub mod adjusttimestamp;
pub mod aggregatecounter;
pub mod aggregatefilter;
pub mod aggregatefirst;
pub mod aggregateip;
pub mod aggregateipaddrpair;
pub mod aggregateipflows;
pub mod aggregatelast;
pub mod aggregatelength;
pub mod aggregatepacketcounter;
pub mod aggregatepaint;
pub mod anonymizeipaddr;
pub mod eraseippayload;
pub mod settimestampdelta;
pub mod storetimestamp;
pub mod storeudptimeseqrecord;
pub mod timefilter;
pub mod timerange;
pub mod timesortedsched;
pub mod timestampaccum;

use pronto_packet::{Packet, AGGREGATE_ANNO_OFFSET, FIRST_TIMESTAMP_ANNO_OFFSET};

/// Offset of the packet-number annotation (4 bytes, host order), set by
/// trace readers such as FromCapDump.
pub const PACKET_NUMBER_ANNO_OFFSET: usize = 40;
/// Offset of the sequence-number annotation (4 bytes, host order).
pub const SEQUENCE_NUMBER_ANNO_OFFSET: usize = 44;

/// The packet's first-timestamp annotation (ns since the epoch).
pub fn first_timestamp(p: &Packet) -> i64 {
    let a = p.anno_bytes();
    let o = FIRST_TIMESTAMP_ANNO_OFFSET;
    let mut b = [0u8; 8];
    b.copy_from_slice(&a[o..o + 8]);
    i64::from_ne_bytes(b)
}

/// Sets the packet's first-timestamp annotation.
pub fn set_first_timestamp(p: &mut Packet, t: i64) {
    let o = FIRST_TIMESTAMP_ANNO_OFFSET;
    p.anno_bytes_mut()[o..o + 8].copy_from_slice(&t.to_ne_bytes());
}

/// The packet's aggregate annotation.
pub fn aggregate(p: &Packet) -> u32 {
    let a = p.anno_bytes();
    let o = AGGREGATE_ANNO_OFFSET;
    u32::from_ne_bytes([a[o], a[o + 1], a[o + 2], a[o + 3]])
}

/// Sets the packet's aggregate annotation.
pub fn set_aggregate(p: &mut Packet, v: u32) {
    let o = AGGREGATE_ANNO_OFFSET;
    p.anno_bytes_mut()[o..o + 4].copy_from_slice(&v.to_ne_bytes());
}

/// Parses a time, absolute or relative, possibly negative: `1.5`, `-1`,
/// `+0.1`, or with a unit (`10ms`, `2min`). In nanoseconds.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let s = s.trim();
    let body = s.strip_prefix('+').unwrap_or(s);
    if let Ok((sec, ns)) = pronto_lang::args::parse_timestamp(body) {
        return sec
            .checked_mul(1_000_000_000)
            .and_then(|v| v.checked_add(ns as i64))
            .ok_or_else(|| "time out of range".to_string());
    }
    let (neg, mag) = match body.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, body),
    };
    let secs = pronto_lang::args::parse_seconds(mag).map_err(|_| "expected time".to_string())?;
    if !(secs * 1e9).is_finite() || secs * 1e9 > i64::MAX as f64 {
        return Err("time out of range".into());
    }
    let ns = (secs * 1e9).round() as i64;
    Ok(if neg { -ns } else { ns })
}

/// A time argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TimeArg(pub i64);

impl crate::FromArg for TimeArg {
    fn from_arg(s: &str) -> Result<Self, String> {
        parse_time(s).map(TimeArg)
    }
}

/// A timestamp as Click prints one.
pub fn unparse_time(t: i64) -> String {
    crate::app::pcap::unparse_timestamp(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time("1.5"), Ok(1_500_000_000));
        assert_eq!(parse_time("+0.1"), Ok(100_000_000));
        assert_eq!(parse_time("-1"), Ok(-1_000_000_000));
        assert_eq!(parse_time("-0.25"), Ok(-250_000_000));
        assert_eq!(parse_time("10ms"), Ok(10_000_000));
        assert_eq!(parse_time("-2min"), Ok(-120_000_000_000));
        assert!(parse_time("x").is_err());
        assert_eq!(unparse_time(-900_000_000), "-0.900000");
    }
}
