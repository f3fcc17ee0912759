//! Click's `threads` elements: spinlocks around parts of a configuration.
