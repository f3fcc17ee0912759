//! Click's random numbers (`click_random`): glibc's `random()` additive
//! generator, one per thread, seeded at start-up from the clock or by
//! `RandomSeed`, so that a configuration with a fixed seed draws the
//! numbers Click would.

use std::cell::RefCell;

/// glibc's `random()` (TYPE_3: 34 words of state, outputs 31 bits).
#[derive(Clone, Debug)]
pub struct ClickRandom {
    r: [u32; 34],
    k: usize,
}

impl ClickRandom {
    /// The generator after `srandom(seed)`.
    pub fn new(seed: u32) -> ClickRandom {
        let mut r = [0u32; 34];
        let seed = if seed == 0 { 1 } else { seed };
        r[0] = seed;
        let mut word = i64::from(seed as i32);
        for slot in r.iter_mut().take(31).skip(1) {
            let hi = word / 127_773;
            let lo = word % 127_773;
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *slot = word as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = ClickRandom { r, k: 34 };
        for _ in 34..344 {
            g.step();
        }
        g
    }

    fn step(&mut self) -> u32 {
        let v = self.r[(self.k + 3) % 34].wrapping_add(self.r[(self.k + 31) % 34]);
        self.r[self.k % 34] = v;
        self.k += 1;
        v
    }

    /// The next number, 0 to 2^31 - 1.
    pub fn next_u31(&mut self) -> u32 {
        self.step() >> 1
    }
}

thread_local! {
    /// Starts from a fixed seed, so that a configuration's random choices
    /// (a NAT's ports, a sampler's picks) are the same run after run and
    /// thread by thread, as they were before the generator was Click's;
    /// `RandomSeed` sets another.
    static GLOBAL: RefCell<ClickRandom> = RefCell::new(ClickRandom::new(DEFAULT_SEED));
}

/// The seed every thread's generator starts from.
pub const DEFAULT_SEED: u32 = 1;

/// The next number from this thread's generator (Click's `click_random`).
pub fn click_random() -> u32 {
    GLOBAL.with(|g| g.borrow_mut().next_u31())
}

/// A number from `low` to `high` inclusive, drawn from this thread's
/// generator as Click's `click_random(low, high)` draws it (so that a
/// fixed seed gives Click's choices); `low` when `low >= high`.
pub fn click_random_range(low: u32, high: u32) -> u32 {
    const RAND_MAX: u32 = 0x7fff_ffff;
    if low >= high {
        return low;
    }
    let span = high - low;
    if span > RAND_MAX {
        loop {
            let r = (click_random() << 17) ^ (click_random() >> 14);
            if r <= span {
                return r + low;
            }
        }
    }
    if span == 1 {
        return low + ((click_random() >> 14) & 1);
    }
    let count = (RAND_MAX + 1) / (span + 1);
    let max = count * (span + 1);
    loop {
        let r = click_random();
        if r < max {
            return r / count + low;
        }
    }
}

/// Seeds this thread's generator (Click's `click_srandom`).
pub fn click_srandom(seed: u32) {
    GLOBAL.with(|g| *g.borrow_mut() = ClickRandom::new(seed));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_sequence() {
        // glibc's random() after srandom(1).
        let mut g = ClickRandom::new(1);
        let v: Vec<u32> = (0..3).map(|_| g.next_u31()).collect();
        assert_eq!(v, [1_804_289_383, 846_930_886, 1_681_692_777]);
        click_srandom(1);
        assert_eq!(click_random(), 1_804_289_383);
    }

    #[test]
    fn range_draws_as_click_does() {
        // srandom(1): 1804289383 / (2^31 / 64511) = 54202 (a port range
        // 1024-65534 picks 55226), and the two-value case uses bit 14.
        click_srandom(1);
        assert_eq!(click_random_range(0, 64_510), 54_202);
        click_srandom(1);
        assert_eq!(click_random_range(5, 6), 5 + ((1_804_289_383 >> 14) & 1));
        assert_eq!(click_random_range(9, 9), 9);
        assert_eq!(click_random_range(9, 3), 9);
    }
}
