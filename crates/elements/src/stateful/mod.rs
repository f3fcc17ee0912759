//! pronto's stateful middlebox elements that Click does not have: a
//! connection-tracking firewall and a carrier-grade NAT (RFC 6888).
// (one `pub mod` line per element file)
pub mod cgnat;
pub mod portblocks;
pub mod statefulfirewall;
pub mod table;
#[cfg(test)]
mod testpkt;
