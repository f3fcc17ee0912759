//! Click's `test` elements that ordinary configurations (and Click's own
//! tests) use.
pub mod randomseed;
