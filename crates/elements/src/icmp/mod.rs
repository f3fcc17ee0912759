//! Click's `icmp` elements: ICMP error generation and ICMP-aware rewriters.
// (one `pub mod` line per element file)
pub mod icmperror;
pub mod icmppingrewriter;
pub mod icmprewriter;
