//! pronto's broadband remote access server: `PPPoEServer`, a PPPoE access
//! concentrator (RFC 2516) with PPP session handling (LCP, PAP, CHAP-MD5,
//! IPCP, IPv6CP), per-session encapsulation on the fast path, accounting
//! and session handlers. `subscribers.rs` holds the subscriber file and
//! the RADIUS-shaped authentication hook.
// (one `pub mod` line per element file)
pub mod pppoeserver;
pub mod subscribers;

/// CHAP-MD5's response (RFC 1994): MD5 of the identifier, the secret and
/// the challenge. Control path only (it allocates).
pub fn chap_md5(id: u8, secret: &[u8], challenge: &[u8]) -> [u8; 16] {
    let mut m = Vec::with_capacity(1 + secret.len() + challenge.len());
    m.push(id);
    m.extend_from_slice(secret);
    m.extend_from_slice(challenge);
    crate::app::md5::md5(&m)
}
