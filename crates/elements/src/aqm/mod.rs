//! Click's `aqm` elements: active queue management (RED, AdaptiveRED,
//! CoDel).
// (one `pub mod` line per element file)
pub mod adaptivered;
pub mod codel;
pub mod red;
