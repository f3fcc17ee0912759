//! pronto's intrusion detection: Snort/Suricata-style rule files matched
//! over packet payloads in one pass.
// (one `pub mod` line per file)
pub mod engine;
pub mod idsmatcher;
pub mod rules;
