//! Click's `aqm` elements: active queue management (RED).
// (one `pub mod` line per element file)
pub mod red;
