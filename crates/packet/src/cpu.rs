//! Running a hot loop with an instruction the x86-64 baseline lacks, when
//! the CPU has it.
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
