//! Running a hot loop with an instruction the x86-64 baseline lacks, when
//! the CPU has it; and asking the CPU to fetch a cache line ahead of its
//! use ([`prefetch`]).
//!
//! pronto is built for the x86-64 baseline, which has no `POPCNT`: a
//! `count_ones` there is a dozen shifts and adds. The Poptrie behind
//! `LookupIP6Route` counts bits two or three times per node it reads, and
//! with the instruction it runs about a fifth fewer instructions. Every
//! x86-64 server CPU since 2008 has it; [`with_popcnt`] runs a closure
//! compiled for it on those, and the portable code elsewhere.

/// Runs `f`, with `POPCNT` enabled for the code inlined into it when the
/// CPU has the instruction. Mark the closure and what it calls in the hot
/// loop `#[inline(always)]`: only code inlined here gets the instruction.
#[inline(always)]
pub fn with_popcnt<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: `call_popcnt` only enables an instruction, and the
            // CPU was just found to have it.
            return unsafe { call_popcnt(f) };
        }
    }
    f()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
fn call_popcnt<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// Asks the CPU to bring the cache lines of `*r` in, without waiting for
/// them. A loop over a table far larger than the caches prefetches the
/// slots a whole batch will read before it reads the first, so that their
/// misses overlap instead of following one another. A hint: it changes
/// nothing a program can see, and does nothing where there is no such
/// instruction.
#[inline(always)]
pub fn prefetch<T>(r: &T) {
    let p = (r as *const T).cast::<u8>();
    prefetch_line(p);
    if std::mem::size_of::<T>() > 64 {
        // A value that may straddle two lines: its last byte's too.
        prefetch_line(p.wrapping_add(std::mem::size_of::<T>() - 1));
    }
}

#[inline(always)]
fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is part of the x86-64 baseline (SSE); it reads
    // nothing a program can observe and never faults, whatever the address
    // (here one inside or one past a live reference).
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    #[test]
    fn runs_the_closure_either_way() {
        let v = [0x00ff_u64, 0x8000_0000_0000_0001, u64::MAX];
        let n = super::with_popcnt(
            #[inline(always)]
            || v.iter().map(|w| w.count_ones()).sum::<u32>(),
        );
        assert_eq!(n, 8 + 2 + 64);
    }
}
