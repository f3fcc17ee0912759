//! Click's `userlevel` elements: real Linux network interfaces, through
//! `AF_PACKET` sockets or `TPACKET` rings (`pronto-netdev`).

pub mod fromdevice;
pub mod swport;
pub mod todevice;

/// Parses a `METHOD` argument (`RING`, the default, or `SOCKET`; Click's
/// `LINUX` means `SOCKET`).
fn method(m: Option<String>) -> Result<pronto_netdev::Method, crate::ConfigError> {
    match m {
        None => Ok(pronto_netdev::Method::Ring),
        Some(s) => pronto_netdev::Method::parse(&s).ok_or_else(|| {
            crate::util::cfg_err(format!("bad METHOD `{s}`: expected RING or SOCKET"))
        }),
    }
}
