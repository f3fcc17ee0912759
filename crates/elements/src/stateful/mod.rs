//! pronto's stateful middlebox elements that Click does not have: a
//! connection-tracking firewall, a carrier-grade NAT (RFC 6888) and a
//! stateful NAT64 (RFC 6146), and a flow monitor exporting IPFIX / NetFlow v9.
// (one `pub mod` line per element file)
pub mod cgnat;
pub mod flowmonitor;
pub mod nat64;
pub mod portblocks;
pub mod statefulfirewall;
pub mod table;
#[cfg(test)]
pub(crate) mod testpkt;
