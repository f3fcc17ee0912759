//! pronto's VPN elements (Click has none): a WireGuard gateway whose
//! protocol core is boringtun's.
// (one `pub mod` line per element file)
pub mod wgconf;
pub mod wireguard;
