//! Click's rate arithmetic, bit for bit: the jiffy token bucket
//! (`TokenBucket`, used by `RatedUnqueue`, `RatedSplitter` and their
//! bandwidth variants) and the per-second gap counter (`GapRate`, used by
//! `Shaper` and `BandwidthShaper`). Which packets pass depends on this
//! integer arithmetic, so it is reproduced exactly; time comes from the
//! runtime's `now` (ns), converted to Click's 1 ms jiffies.

/// Jiffies per second (Click's userlevel `CLICK_HZ`).
pub const HZ: u32 = 1000;

/// The largest token count (`(token_type) -1` for 32-bit tokens).
const MAX_TOKENS: u32 = u32::MAX;

/// Click's userlevel jiffy clock for a time in ns since the epoch: the
/// time in milliseconds, truncated to 32 bits (so it wraps every 49.7
/// days, and a bucket's first refill fills it only if the clock's 32-bit
/// value exceeds the bucket's time to fill, as in Click).
#[inline]
pub fn jiffies(now_ns: i64) -> u32 {
    (now_ns.max(0) as u64 / 1_000_000) as u32
}

/// A token bucket with Click's fixed-point representation: the count is
/// kept scaled by `scale = u32::MAX / capacity`, refilled once per jiffy by
/// `per_tick` scaled tokens, and "full" is `u32::MAX`.
#[derive(Clone, Copy, Debug)]
pub struct ClickTokenBucket {
    per_tick: u32,
    scale: u32,
    until_full: u32,
    tokens: u32,
    time_point: u32,
}

impl ClickTokenBucket {
    /// A bucket refilled at `rate` tokens per second holding at most
    /// `capacity` tokens, initially empty with its clock at jiffy 0, as in
    /// Click (so the first refill usually fills it).
    pub fn new(rate: u32, capacity: u32) -> ClickTokenBucket {
        let mut b = ClickTokenBucket {
            per_tick: 0,
            scale: 1,
            until_full: u32::MAX,
            tokens: 0,
            time_point: 0,
        };
        b.assign(rate, capacity);
        b
    }

    /// Changes the rate and capacity, keeping the scaled token count.
    pub fn assign(&mut self, rate: u32, capacity: u32) {
        let (mut rate, mut capacity) = (rate, capacity);
        if capacity == 0 {
            rate = 0;
            capacity = MAX_TOKENS;
        }
        if rate != 0 {
            let min_capacity = (rate - 1) / HZ + 1;
            capacity = capacity.max(min_capacity);
        }
        self.scale = MAX_TOKENS / capacity;
        let l = u64::from(rate) * u64::from(self.scale) / u64::from(HZ);
        if rate != 0 {
            self.per_tick = if l != 0 { l as u32 } else { 1 };
            self.until_full = (MAX_TOKENS - 1) / self.per_tick + 1;
        } else {
            self.per_tick = 0;
            self.until_full = u32::MAX;
        }
    }

    /// The rate in tokens per second, as Click reports it (rounded from the
    /// per-jiffy fixed-point value).
    pub fn rate(&self) -> u32 {
        let l = (u64::from(self.per_tick) / 2 + u64::from(self.per_tick) * u64::from(HZ))
            / u64::from(self.scale);
        l.min(u64::from(MAX_TOKENS)) as u32
    }

    /// The capacity in tokens.
    pub fn capacity(&self) -> u32 {
        MAX_TOKENS / self.scale
    }

    /// Whole tokens held.
    pub fn size(&self) -> u32 {
        self.tokens / self.scale
    }

    fn cvt(&self, t: u32) -> Option<u32> {
        let v = u64::from(t) * u64::from(self.scale);
        (v <= u64::from(MAX_TOKENS)).then_some(v as u32)
    }

    /// Adds the tokens earned between the last refill and `now` (ns).
    pub fn refill(&mut self, now: i64) {
        let time = jiffies(now);
        // Click's userlevel jiffies are not monotonic: a clock that went
        // back counts as no time.
        let diff = time.saturating_sub(self.time_point);
        if diff >= self.until_full {
            self.tokens = MAX_TOKENS;
        } else if diff > 0 {
            let add = diff.wrapping_mul(self.per_tick);
            let new = self.tokens.wrapping_add(add);
            self.tokens = if new < self.tokens { MAX_TOKENS } else { new };
        }
        self.time_point = time;
    }

    /// True if the bucket holds `t` tokens.
    pub fn contains(&self, t: u32) -> bool {
        self.cvt(t).is_some_and(|f| f <= self.tokens)
    }

    /// Takes `t` tokens if there are that many.
    pub fn remove_if(&mut self, t: u32) -> bool {
        match self.cvt(t) {
            Some(f) if f <= self.tokens => {
                self.tokens -= f;
                true
            }
            _ => false,
        }
    }

    /// Takes `t` tokens, emptying the bucket if there are fewer.
    pub fn remove(&mut self, t: u32) {
        let f = self.cvt(t).unwrap_or(MAX_TOKENS);
        self.tokens = self.tokens.saturating_sub(f);
    }

    /// Fills the bucket.
    pub fn set_full(&mut self) {
        self.tokens = MAX_TOKENS;
    }

    /// Jiffies until the bucket holds `t` tokens (`u32::MAX` for never).
    pub fn time_until_contains(&self, t: u32) -> u32 {
        let Some(f) = self.cvt(t) else {
            return u32::MAX;
        };
        if f <= self.tokens || self.until_full == 0 {
            0
        } else {
            // An idle rate (no tokens per tick) never gets there.
            (f - self.tokens - 1)
                .checked_div(self.per_tick)
                .map_or(u32::MAX, |t| t + 1)
        }
    }
}

/// Click's `RatedUnqueue::configure_helper` capacity rule: `rate *
/// dur_ms / 1000` tokens (saturating), at least 1; bandwidth buckets get
/// 131072 more bytes.
pub fn burst_tokens(rate: u32, dur_ms: u32, size: Option<u32>, bandwidth: bool) -> u32 {
    let mut tokens = match size {
        Some(s) => s,
        None => {
            let t = u64::from(rate) * u64::from(dur_ms) / 1000;
            t.min(u64::from(u32::MAX)) as u32
        }
    };
    if bandwidth {
        tokens = tokens.saturating_add(131_072);
    }
    tokens.max(1)
}

/// Click's `GapRate`: counts events within the current second against
/// the number the rate allows so far, with microsecond gaps scaled by 2^12.
#[derive(Clone, Copy, Debug)]
pub struct GapRate {
    ugap: u32,
    sec_count: i32,
    tv_sec: i64,
    rate: u32,
}

const UGAP_SHIFT: u32 = 12;
/// The largest rate a `GapRate` implements.
pub const GAP_MAX_RATE: u32 = 1_000_000 << UGAP_SHIFT;

impl GapRate {
    /// A gap rate of `rate` events per second (clamped to the maximum).
    pub fn new(rate: u32) -> GapRate {
        let mut g = GapRate {
            ugap: 0,
            sec_count: 0,
            tv_sec: -1,
            rate: 0,
        };
        g.init(rate.min(GAP_MAX_RATE));
        g
    }

    fn init(&mut self, r: u32) {
        self.rate = r;
        self.ugap = GAP_MAX_RATE.checked_div(r).unwrap_or(GAP_MAX_RATE + 1);
    }

    /// The rate.
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// Changes the rate at time `now` (ns).
    pub fn set_rate(&mut self, r: u32, now: i64) {
        let r = r.min(GAP_MAX_RATE);
        if self.rate != r {
            self.init(r);
            if self.tv_sec >= 0 && r != 0 {
                self.sec_count = (usec(now) << UGAP_SHIFT).wrapping_div(self.ugap) as i32;
            }
        }
    }

    /// Forgets the current second.
    pub fn reset(&mut self) {
        self.tv_sec = -1;
    }

    /// True if an event may happen at `now` (ns).
    pub fn need_update(&mut self, now: i64) -> bool {
        let us = usec(now) << UGAP_SHIFT;
        let need = us / self.ugap;
        let sec = now.div_euclid(1_000_000_000);
        if self.tv_sec < 0 {
            self.tv_sec = sec;
            let rem = us.wrapping_sub(need.wrapping_mul(self.ugap));
            self.sec_count = need as i32 + i32::from(rem > self.ugap / 2);
        } else if sec > self.tv_sec {
            self.tv_sec = sec;
            if self.sec_count > 0 {
                self.sec_count = self.sec_count.wrapping_sub(self.rate as i32);
            }
        }
        need as i32 >= self.sec_count
    }

    /// Records one event.
    pub fn update(&mut self) {
        self.sec_count = self.sec_count.wrapping_add(1);
    }

    /// Records `delta` events (bytes, for bandwidth shaping).
    pub fn update_with(&mut self, delta: i32) {
        self.sec_count = self.sec_count.wrapping_add(delta);
    }
}

fn usec(now: i64) -> u32 {
    (now.rem_euclid(1_000_000_000) / 1000) as u32
}

/// Click's `cp_unparse_real10`: `real / 10^frac` with the fraction's
/// trailing zeros removed.
pub fn unparse_real10(real: u32, frac: u32) -> String {
    let one = 10u32.pow(frac);
    let (int, f) = (real / one, real % one);
    if f == 0 {
        return int.to_string();
    }
    let s = format!("{int}.{f:0width$}", width = frac as usize);
    s.trim_end_matches('0').to_string()
}

/// Click's `BandwidthArg::unparse` of a rate in bytes per second.
pub fn unparse_bandwidth(x: u32) -> String {
    if x >= 0x2000_0000 {
        unparse_real10(x, 6) + "MBps"
    } else if x >= 125_000_000 {
        unparse_real10(x.wrapping_mul(8), 9) + "Gbps"
    } else if x >= 125_000 {
        unparse_real10(x * 8, 6) + "Mbps"
    } else {
        unparse_real10(x * 8, 3) + "kbps"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;
    const T0: i64 = 1_000_000_000_000_000_000;

    #[test]
    fn bucket_fills_first_then_one_per_jiffy() {
        // 1000/s, capacity 20: full at the first refill, then 1 per ms.
        let mut b = ClickTokenBucket::new(1000, 20);
        assert_eq!(b.capacity(), 20);
        assert_eq!(b.rate(), 1000);
        b.refill(T0);
        let mut n = 0;
        while b.remove_if(1) {
            n += 1;
        }
        assert_eq!(n, 20);
        assert_eq!(b.time_until_contains(1), 1);
        // Within the same jiffy nothing comes back.
        b.refill(T0 + MS / 2);
        assert!(!b.contains(1));
        b.refill(T0 + 3 * MS);
        assert_eq!(b.size(), 3);
    }

    #[test]
    fn slow_rates_accumulate_fractions() {
        // 300/s, capacity 6: 0.3 tokens per jiffy.
        let mut b = ClickTokenBucket::new(300, 6);
        b.refill(T0);
        for _ in 0..6 {
            assert!(b.remove_if(1));
        }
        assert!(!b.remove_if(1));
        assert_eq!(b.time_until_contains(1), 4);
        b.refill(T0 + 3 * MS);
        assert!(!b.contains(1));
        b.refill(T0 + 4 * MS);
        assert!(b.remove_if(1));
    }

    #[test]
    fn first_refill_depends_on_the_32_bit_clock() {
        // 1 byte/s with a 132072-byte bucket takes 134217728 jiffies to
        // fill: a clock reading of 1000 jiffies gives 1000 ticks' worth.
        let mut b = ClickTokenBucket::new(1, 132_072);
        b.refill(1000 * MS);
        assert_eq!(b.size(), 0);
        let mut b = ClickTokenBucket::new(1, 132_072);
        b.refill((1i64 << 32) * MS - MS);
        // Full: the capacity as the fixed-point scale rounds it.
        assert_eq!((b.size(), b.capacity()), (132_075, 132_075));
    }

    #[test]
    fn burst_rules() {
        assert_eq!(burst_tokens(1000, 20, None, false), 20);
        assert_eq!(burst_tokens(10, 20, None, false), 1);
        assert_eq!(burst_tokens(10, 20, Some(0), false), 1);
        assert_eq!(burst_tokens(1000, 20, None, true), 131_092);
    }

    #[test]
    fn gaprate_spacing() {
        // 10 per second: one event each 100 ms; the first is allowed.
        let mut g = GapRate::new(10);
        let s = 5 * 1_000_000_000;
        assert!(g.need_update(s));
        g.update();
        assert!(!g.need_update(s + 50 * MS));
        assert!(g.need_update(s + 100 * MS));
        g.update();
        assert!(!g.need_update(s + 199 * MS));
        // A new second carries the count over.
        assert!(g.need_update(s + 1_000 * MS));
    }

    #[test]
    fn bandwidth_text() {
        assert_eq!(unparse_bandwidth(1000), "8kbps");
        assert_eq!(unparse_bandwidth(125_000), "1Mbps");
        assert_eq!(unparse_bandwidth(100), "0.8kbps");
        assert_eq!(unparse_bandwidth(187_500), "1.5Mbps");
    }
}
