//! Rate limits on a port: a policer per direction.
//!
//! A port's [`RateLimit`] (frames and/or bits per second) caps what the
//! port may send into the switch and, separately, what the switch delivers
//! to it. Frames over the limit are dropped where they are, before any
//! copy, and counted on the port (`drop_rate_limit_rx`,
//! `drop_rate_limit_tx`). The daemon sets an instance's limit on each of
//! its ports, so that a tenant offered a flood costs the switch a
//! descriptor check per frame it cannot take, not a copy, and the tenant's
//! sandbox never sees the excess.
//!
//! Each limit is a GCRA (the virtual-scheduling form of a token bucket):
//! a frame conforms unless the theoretical arrival time of the next frame
//! is more than the burst tolerance ahead of now; a conforming frame moves
//! that time on by its cost. Time is counted in sixteenths of a nanosecond
//! (36 years of `u64`), costs in fixed point, so that the hot path is two
//! multiplications, two comparisons and no division.

/// Units of time per second: sixteenths of a nanosecond.
const UNITS_PER_SEC: u64 = 16_000_000_000;
/// Fractional bits of a per-byte cost.
const FRAC: u32 = 16;
/// The burst a limit lets through at once: 10 ms at the limit's rate, and
/// never less than [`MIN_BURST_FRAMES`] full-size frames (a few batches).
const BURST_SECS_DIV: u64 = 100;
const MIN_BURST_FRAMES: u64 = 64;
/// The largest frame a port carries, for the burst floor of a bit rate.
const MAX_FRAME_BYTES: u64 = 1_518;
/// The lowest bit rate a limit may have (its per-byte cost in fixed point
/// then fits comfortably in `u64` for any frame length).
pub const MIN_BPS: u64 = 64_000;
/// The highest frame or bit rate a limit may have.
pub const MAX_RATE: u64 = 1_000_000_000_000;

/// A port's rate limit: frames per second and/or bits per second (of
/// Ethernet frames as the switch carries them, without preamble or FCS);
/// `None` for no limit of that kind. Applies to each direction on its
/// own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RateLimit {
    /// Frames per second, 1 to [`MAX_RATE`].
    pub pps: Option<u64>,
    /// Bits per second, [`MIN_BPS`] to [`MAX_RATE`].
    pub bps: Option<u64>,
}

impl RateLimit {
    /// No limit.
    pub const NONE: RateLimit = RateLimit {
        pps: None,
        bps: None,
    };

    /// Whether either kind of limit is set.
    pub fn is_set(&self) -> bool {
        self.pps.is_some() || self.bps.is_some()
    }

    /// Checks the bounds; the error names the field and what is allowed.
    pub fn check(&self) -> Result<(), String> {
        if let Some(p) = self.pps {
            if !(1..=MAX_RATE).contains(&p) {
                return Err(format!(
                    "pps: {p} is out of range: 1 to {MAX_RATE} frames per second"
                ));
            }
        }
        if let Some(b) = self.bps {
            if !(MIN_BPS..=MAX_RATE).contains(&b) {
                return Err(format!(
                    "bps: {b} is out of range: {MIN_BPS} (64 kbit/s) to {MAX_RATE} bits per second"
                ));
            }
        }
        Ok(())
    }

    /// Parses `100kpps`, `1Gbps`, `2.5Mbps,50kpps` (a frame rate and/or a
    /// bit rate, comma-separated, with an optional k/M/G prefix), or
    /// `none`.
    pub fn parse(s: &str) -> Result<RateLimit, String> {
        let mut r = RateLimit::NONE;
        let t = s.trim();
        if t.eq_ignore_ascii_case("none") {
            return Ok(r);
        }
        for part in t.split(',') {
            let p = part.trim();
            let lower = p.to_ascii_lowercase();
            let (num, unit_pps) = if let Some(n) = lower.strip_suffix("pps") {
                (n, true)
            } else if let Some(n) = lower.strip_suffix("bps") {
                (n, false)
            } else {
                return Err(format!(
                    "`{p}` is not a rate: write a frame rate (`100kpps`) or a bit rate \
                     (`1Gbps`, `500Mbps`), or both separated by a comma, or `none`"
                ));
            };
            let (num, mul) = match num.chars().last() {
                Some('k') => (&num[..num.len() - 1], 1e3),
                Some('m') => (&num[..num.len() - 1], 1e6),
                Some('g') => (&num[..num.len() - 1], 1e9),
                _ => (num, 1.0),
            };
            let v: f64 = num
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v > 0.0)
                .ok_or_else(|| format!("`{p}`: `{num}` is not a positive number"))?;
            let v = (v * mul).round() as u64;
            let slot = if unit_pps { &mut r.pps } else { &mut r.bps };
            if slot.is_some() {
                return Err(format!(
                    "`{s}`: two {} given",
                    if unit_pps { "frame rates" } else { "bit rates" }
                ));
            }
            *slot = Some(v);
        }
        r.check()?;
        Ok(r)
    }
}

impl std::fmt::Display for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn si(v: u64) -> String {
            match v {
                v if v >= 1_000_000_000 && v % 1_000_000 == 0 => {
                    format!("{}G", v as f64 / 1e9)
                }
                v if v >= 1_000_000 && v % 1_000 == 0 => format!("{}M", v as f64 / 1e6),
                v if v >= 1_000 => format!("{}k", v as f64 / 1e3),
                v => v.to_string(),
            }
        }
        match (self.bps, self.pps) {
            (None, None) => f.write_str("none"),
            (Some(b), None) => write!(f, "{}bps", si(b)),
            (None, Some(p)) => write!(f, "{}pps", si(p)),
            (Some(b), Some(p)) => write!(f, "{}bps,{}pps", si(b), si(p)),
        }
    }
}

/// One direction's policer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policer {
    /// Time units a frame costs (0: no frame limit).
    per_frame: u64,
    /// Time units a byte costs, `FRAC` fractional bits (0: no bit limit).
    per_byte: u64,
    /// Tolerance: how far ahead of now the next conforming time may be.
    tau_frames: u64,
    tau_bytes: u64,
    /// Theoretical arrival times.
    tat_frames: u64,
    tat_bytes: u64,
}

impl Policer {
    /// A policer for `limit`, or `None` when it sets nothing.
    pub(crate) fn new(limit: RateLimit) -> Option<Policer> {
        if !limit.is_set() {
            return None;
        }
        let (per_frame, tau_frames) = match limit.pps {
            Some(p) => {
                let p = p.clamp(1, MAX_RATE);
                let cost = (UNITS_PER_SEC / p).max(1);
                (
                    cost,
                    (UNITS_PER_SEC / BURST_SECS_DIV).max(cost * MIN_BURST_FRAMES),
                )
            }
            None => (0, 0),
        };
        let (per_byte, tau_bytes) = match limit.bps {
            Some(b) => {
                let b = b.clamp(MIN_BPS, MAX_RATE);
                let per_byte = ((8 * UNITS_PER_SEC as u128) << FRAC) / b as u128;
                let per_byte = (per_byte as u64).max(1);
                let floor = (MIN_BURST_FRAMES * MAX_FRAME_BYTES * per_byte) >> FRAC;
                (per_byte, (UNITS_PER_SEC / BURST_SECS_DIV).max(floor))
            }
            None => (0, 0),
        };
        Some(Policer {
            per_frame,
            per_byte,
            tau_frames,
            tau_bytes,
            tat_frames: 0,
            tat_bytes: 0,
        })
    }

    /// Whether a frame of `len` bytes at time `now` (sixteenths of a
    /// nanosecond) conforms; if it does, it is charged.
    #[inline]
    pub(crate) fn admit(&mut self, now: u64, len: u16) -> bool {
        let tf = self.tat_frames.max(now);
        let tb = self.tat_bytes.max(now);
        if (self.per_frame != 0 && tf > now + self.tau_frames)
            || (self.per_byte != 0 && tb > now + self.tau_bytes)
        {
            return false;
        }
        if self.per_frame != 0 {
            self.tat_frames = tf + self.per_frame;
        }
        if self.per_byte != 0 {
            self.tat_bytes = tb + ((u64::from(len) * self.per_byte) >> FRAC);
        }
        true
    }
}

/// Sixteenths of a nanosecond since `epoch`.
#[inline]
pub(crate) fn units_since(epoch: std::time::Instant) -> u64 {
    let d = epoch.elapsed();
    d.as_secs() * UNITS_PER_SEC + u64::from(d.subsec_nanos()) * 16
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: u64 = UNITS_PER_SEC;

    /// Frames of `len` offered evenly at `offered` per second for `secs`
    /// seconds of policer time: how many pass.
    fn passed(limit: RateLimit, len: u16, offered: u64, secs: u64) -> u64 {
        let mut p = Policer::new(limit).expect("set");
        let n = offered * secs;
        let step = SEC / offered;
        (0..n).filter(|i| p.admit(i * step, len)).count() as u64
    }

    #[test]
    fn a_frame_rate_passes_that_many_frames_a_second_plus_its_burst() {
        let l = RateLimit {
            pps: Some(100_000),
            bps: None,
        };
        // Offered 1 Mpps for 2 s (the last frame 1 µs before the end): one
        // at each 10 µs, 200,000, plus the burst of 10 ms (1,000 frames).
        assert_eq!(passed(l, 64, 1_000_000, 2), 201_000);
        // Under the limit nothing is dropped.
        assert_eq!(passed(l, 64, 50_000, 2), 100_000);
    }

    #[test]
    fn a_bit_rate_counts_bytes() {
        let l = RateLimit {
            pps: None,
            bps: Some(8_000_000),
        };
        // 1 MB/s of 1,000-byte frames: 1,000 a second; offered 10,000 a
        // second for 3 s: 3,000 and the burst (64 full-size frames' worth of
        // bytes: 97 frames of 1,000 bytes, as that is more than 10 ms), and
        // the first.
        assert_eq!(passed(l, 1_000, 10_000, 3), 3_098);
        // The same limit lets 16 times as many 62.5-byte frames through:
        // with 64-byte ones, 15,625 a second.
        let n = passed(l, 64, 100_000, 2);
        assert!((31_250..=31_250 + 1_600).contains(&n), "{n}");
    }

    #[test]
    fn both_limits_hold_at_once() {
        let l = RateLimit {
            pps: Some(1_000),
            bps: Some(80_000_000),
        };
        // Small frames: the frame rate binds (1,000/s).
        // (The burst: 64 frames' worth, more than 10 ms at 1,000/s.)
        assert_eq!(passed(l, 64, 100_000, 2), 2_000 + 64);
    }

    #[test]
    fn rates_parse_and_print() {
        let r = RateLimit::parse("100kpps").expect("parses");
        assert_eq!(
            r,
            RateLimit {
                pps: Some(100_000),
                bps: None
            }
        );
        assert_eq!(r.to_string(), "100kpps");
        let r = RateLimit::parse("2.5Gbps, 1Mpps").expect("parses");
        assert_eq!(
            r,
            RateLimit {
                pps: Some(1_000_000),
                bps: Some(2_500_000_000)
            }
        );
        assert_eq!(r.to_string(), "2.5Gbps,1Mpps");
        assert_eq!(RateLimit::parse("none").expect("none"), RateLimit::NONE);
        assert_eq!(
            RateLimit::parse("10 mbit").expect_err("unit"),
            "`10 mbit` is not a rate: write a frame rate (`100kpps`) or a bit rate (`1Gbps`, \
             `500Mbps`), or both separated by a comma, or `none`"
        );
        assert_eq!(
            RateLimit::parse("1kbps").expect_err("too low"),
            "bps: 1000 is out of range: 64000 (64 kbit/s) to 1000000000000 bits per second"
        );
        assert_eq!(
            RateLimit::parse("1kpps,2kpps").expect_err("twice"),
            "`1kpps,2kpps`: two frame rates given"
        );
        assert_eq!(
            RateLimit::parse("-5pps").expect_err("negative"),
            "`-5pps`: `-5` is not a positive number"
        );
    }
}
