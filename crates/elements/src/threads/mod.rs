//! Click's `threads` elements: spinlocks around parts of a configuration.
pub mod spinlockacquire;
pub mod spinlockinfo;
pub mod spinlockpush;
pub mod spinlockrelease;
