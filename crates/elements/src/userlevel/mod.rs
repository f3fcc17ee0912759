//! Click's `userlevel` elements: real Linux network interfaces, through
//! `AF_PACKET` sockets, `TPACKET` rings or `AF_XDP` sockets
//! (`pronto-netdev`), switch ports under `pronto run --switch`
//! (`swport`), and the host's stack through a TAP device
//! (`FromHost`/`ToHost`) or a TUN or TAP device (`KernelTun`/`KernelTap`),
//! TCP, UDP and Unix-domain sockets (`Socket`, `FromSocket`, `ToSocket`),
//! multicast UDP (`McastSocket`) and raw IP sockets (`RawSocket`,
//! `FromRawSocket`, `ToRawSocket`), and a User-Mode Linux switch's port
//! (`UMLSwitch`); `ChatterSocket` copies printed lines to socket clients.

pub mod chattersocket;
pub mod fastudpsrc;
pub mod fromdevice;
pub mod fromhost;
pub mod fromrawsocket;
pub mod fromsocket;
pub mod kerneltap;
pub mod kerneltun;
pub mod mcastsocket;
pub mod rawsocket;
pub mod socket;
pub mod swport;
pub mod todevice;
pub mod tohost;
pub mod torawsocket;
pub mod tosocket;
pub mod umlswitch;

/// Parses a `METHOD` argument (`RING`, the default, `SOCKET` or `XDP`;
/// Click's `LINUX` means `SOCKET`).
fn method(m: Option<String>) -> Result<pronto_netdev::Method, crate::ConfigError> {
    match m {
        None => Ok(pronto_netdev::Method::Ring),
        // Click's methods: LINUX (a packet socket) and PCAP (libpcap, over
        // the same packet socket) take frames the way RING does; DEFAULT is
        // Click's choice, and pronto's is RING.
        Some(s)
            if matches!(
                s.to_ascii_uppercase().as_str(),
                "LINUX" | "PCAP" | "DEFAULT"
            ) =>
        {
            Ok(pronto_netdev::Method::Ring)
        }
        Some(s) => pronto_netdev::Method::parse(&s).ok_or_else(|| {
            crate::util::cfg_err(format!(
                "bad METHOD `{s}`: expected RING, SOCKET or XDP (or Click's LINUX, PCAP or DEFAULT)"
            ))
        }),
    }
}
