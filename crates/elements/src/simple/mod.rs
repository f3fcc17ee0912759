//! Click's `simple` elements: plain versions of standard elements, without
//! notifiers or other machinery.
pub mod simpleidle;
pub mod simplepriosched;
pub mod simplepullswitch;
pub mod simplerrsched;
