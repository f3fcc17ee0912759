//! `WireGuard`: a WireGuard VPN gateway (pronto's own; Click has no such
//! class). The protocol core — Noise IK handshakes, cookie replies, the
//! rekey and keep-alive timers, ChaCha20-Poly1305 transport and the replay
//! window — is boringtun's `noise::Tunn`, one per peer; this element does
//! the rest: reads keys and peers from a `wg`-format file, picks a packet's
//! peer by the longest AllowedIPs prefix of its destination, builds and
//! parses the outer IPv4/UDP header, checks the source of what it
//! decrypts against the sending peer's AllowedIPs, follows roaming
//! endpoints, drives the timers and counts every drop by reason.
//!
//! Input 0: plain IP packets (IPv4 or IPv6, data starting at the IP
//! header) to encrypt; output 0: IPv4/UDP packets to peers (the element's
//! own handshake, cookie and keep-alive messages too). Input 1: IPv4/UDP
//! packets that arrived for the listening port; output 1: the decrypted
//! inner IP packets.
//!
//! Per packet nothing is allocated: encryption and decryption write into
//! one scratch buffer owned by the element, and the result is copied back
//! into the packet's slot behind a new (or without the old) header. The
//! exception is boringtun's own queue of packets waiting for a handshake
//! (at most 256 a peer, copied), which only exists while no session does.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use boringtun::noise::errors::WireGuardError;
use boringtun::noise::handshake::parse_handshake_anon;
use boringtun::noise::rate_limiter::RateLimiter;
use boringtun::noise::{Packet as WgPacket, Tunn, TunnResult};
use boringtun::x25519::{PublicKey, StaticSecret};
use pronto_packet::wire::ipv4::Ipv4Packet;
use pronto_packet::wire::udp::UdpPacket;
use pronto_packet::{Batch, Packet, Pool, MAX_PACKET};

use super::wgconf::{key_text, WgConf};
use crate::args::Ip4;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    TaskStatus, FIELDS_5TUPLE, FIELD_OTHER, FIELD_PAYLOAD,
};

/// Outer IPv4 + UDP header.
const OUTER: usize = 28;
/// WireGuard data message overhead (type, index, counter, tag).
const WG_OVERHEAD: usize = 32;
/// Timer period: boringtun's own device ticks every 250 ms.
const TICK: i64 = 250_000_000;
/// Handshake messages a peer may make us process per second before we
/// answer with cookies (boringtun's default).
const HANDSHAKE_RATE: u64 = 100;
/// Largest inner packet that fits a slot once wrapped.
const MAX_MTU: usize = MAX_PACKET - OUTER - WG_OVERHEAD;

/// One peer: its tunnel state and what it has done.
struct Peer {
    tunn: Tunn,
    public: [u8; 32],
    endpoint: Option<([u8; 4], u16)>,
    rx_bytes: u64,
    tx_bytes: u64,
    rx_packets: u64,
    tx_packets: u64,
    handshakes: u64,
    /// When the last handshake completed, on the router's clock.
    last_handshake: Option<i64>,
    /// A `rekey` was written: start a handshake at the next chance.
    rekey: bool,
}

/// An AllowedIPs entry, as a 128-bit prefix (IPv4 mapped into the low
/// 32 bits with a family flag) for a longest-prefix scan.
#[derive(Clone, Copy)]
struct Route {
    v6: bool,
    net: u128,
    mask: u128,
    len: u8,
    peer: usize,
}

/// Drop and event counters.
#[derive(Default, Clone, Copy)]
struct Stats {
    encrypted: u64,
    decrypted: u64,
    handshakes: u64,
    cookie_replies: u64,
    sent_control: u64,
    no_peer: u64,
    no_endpoint: u64,
    not_ip: u64,
    too_long: u64,
    awaiting_handshake: u64,
    not_udp: u64,
    wrong_port: u64,
    malformed: u64,
    unknown_peer: u64,
    bad_mac: u64,
    handshake_failed: u64,
    decrypt_failed: u64,
    replay: u64,
    no_session: u64,
    under_load: u64,
    bad_source: u64,
    consumed: u64,
    alloc_failed: u64,
}

/// The element.
pub struct WireGuard {
    secret: StaticSecret,
    public: PublicKey,
    limiter: Arc<RateLimiter>,
    address: [u8; 4],
    port: u16,
    mtu: usize,
    peers: Vec<Peer>,
    /// Longest prefix first.
    routes: Vec<Route>,
    scratch: Box<[u8]>,
    /// Protocol messages made during a call, emitted on output 0 after it.
    extra: Box<Batch>,
    ident: u16,
    next_tick: i64,
    next_limiter_reset: i64,
    /// The router's clock at the last push, task run or handler write:
    /// the `peers` handler's ages are measured on it (so that they are
    /// simulated time under `--simtime`, not boringtun's own clock).
    last_now: i64,
    stats: Stats,
}

fn key128(a: IpAddr) -> (bool, u128) {
    match a {
        IpAddr::V4(v) => (false, u32::from(v) as u128),
        IpAddr::V6(v) => (true, u128::from(v)),
    }
}

fn mask128(v6: bool, len: u8) -> u128 {
    let bits = if v6 { 128 } else { 32 };
    if len == 0 {
        0
    } else {
        let all: u128 = if v6 { u128::MAX } else { u32::MAX as u128 };
        all & !((1u128 << (bits - len as u32)) - 1).min(all)
    }
}

/// The source and destination of an inner IP packet, if it is one.
fn inner_addrs(d: &[u8]) -> Option<(IpAddr, IpAddr)> {
    match d.first()? >> 4 {
        4 if d.len() >= 20 => Some((
            IpAddr::from([d[12], d[13], d[14], d[15]]),
            IpAddr::from([d[16], d[17], d[18], d[19]]),
        )),
        6 if d.len() >= 40 => {
            let mut s = [0u8; 16];
            let mut t = [0u8; 16];
            s.copy_from_slice(&d[8..24]);
            t.copy_from_slice(&d[24..40]);
            Some((IpAddr::from(s), IpAddr::from(t)))
        }
        _ => None,
    }
}

impl WireGuard {
    /// The class description.
    pub const SPEC: Spec = Spec::new("WireGuard")
        .ports("2/2")
        .processing("h/h")
        .flow("xy/[xy]y")
        .flags("S1")
        .keywords(&["CONFIG", "ADDRESS", "PORT", "MTU"])
        .profile(
            ActionProfile::reads(FIELDS_5TUPLE | FIELD_PAYLOAD | FIELD_OTHER)
                .writes(FIELDS_5TUPLE | FIELD_PAYLOAD | FIELD_OTHER)
                .dropping()
                .reshaping(),
        )
        .doc(
            "WireGuard(CONFIG FILE, ADDRESS ADDR [, PORT N, MTU N])\n\n\
             A WireGuard gateway (pronto's own element): the protocol core (Noise IK\n\
             handshake, cookie replies under load, rekeying, keep-alives, ChaCha20-Poly1305\n\
             transport, replay window) is boringtun's, one tunnel per peer.\n\n\
             CONFIG names a file in the format `wg setconf` reads: [Interface] PrivateKey,\n\
             ListenPort; [Peer] PublicKey, PresharedKey, AllowedIPs, Endpoint (IPv4 only),\n\
             PersistentKeepalive. ADDRESS is the outer source address of what the element\n\
             sends; PORT overrides ListenPort (default 51820). MTU (default 1420, at most\n\
             1860) bounds the inner packets it encrypts.\n\n\
             Ports: input 0 (push): plain IPv4/IPv6 packets, data starting at the IP header; each\n\
             is encrypted for the peer whose AllowedIPs hold its destination (longest\n\
             prefix) and leaves on output 0 as an IPv4/UDP packet to that peer's endpoint\n\
             (network header and destination annotation set, for EtherEncap or ARPQuerier).\n\
             Handshake, cookie and keep-alive messages the element makes leave there too.\n\
             Input 1 (push): IPv4/UDP packets that arrived for PORT; decrypted inner packets\n\
             whose source is inside the sending peer's AllowedIPs leave on output 1.\n\
             A peer's endpoint follows the source of its last authenticated packet.\n\n\
             Drops, each counted (counters interface and handlers): no_peer, no_endpoint,\n\
             not_ip, too_long, awaiting_handshake (boringtun keeps a copy, sent once the\n\
             handshake completes), not_udp, wrong_port, malformed, unknown_peer, bad_mac,\n\
             handshake_failed, decrypt_failed, replay, no_session, under_load, bad_source,\n\
             consumed (protocol messages the element used up: handshakes, keep-alives,\n\
             cookies), alloc_failed.\n\n\
             Handlers:\n\
             \x20 peers (read)      one line per peer: public key, endpoint, seconds since\n\
             \x20                   the last handshake (on the router's clock, simulated\n\
             \x20                   under --simtime), handshakes, rx/tx bytes and packets\n\
             \x20 public_key (read) our public key\n\
             \x20 handshakes (read) handshakes completed, all peers\n\
             \x20 stats (read)      every counter, `name value` per line\n\
             \x20 rekey (write)     start a new handshake now with every peer, or with the\n\
             \x20                   peer whose public key is written",
        );

    /// Configures a `WireGuard`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let file: String = a
            .read("CONFIG")?
            .ok_or_else(|| ConfigError::new("CONFIG: missing; name a `wg`-format key file"))?;
        let address: Ip4 = a.read("ADDRESS")?.ok_or_else(|| {
            ConfigError::new("ADDRESS: missing; give the outer source IPv4 address")
        })?;
        let port: Option<u16> = a.read("PORT")?;
        let mtu: usize = a.read_or("MTU", 1420usize)?;
        a.finish()?;
        if !(576..=MAX_MTU).contains(&mtu) {
            return Err(ConfigError::new(format!(
                "MTU: expected 576 to {MAX_MTU} bytes, found {mtu}"
            )));
        }
        let path = ctx.path(&file);
        let text = crate::files::read_to_string(&path)
            .map_err(|e| ConfigError::new(format!("CONFIG: cannot read `{file}`: {e}")))?;
        let conf =
            WgConf::parse(&file, &text).map_err(|e| ConfigError::new(format!("CONFIG: {e}")))?;
        let port = port.or(conf.listen_port).unwrap_or(51820);
        Self::from_conf(&conf, address.0, port, mtu).map(|e| Box::new(e) as Box<dyn Element>)
    }

    /// Builds the element from a parsed key file.
    pub fn from_conf(
        conf: &WgConf,
        address: [u8; 4],
        port: u16,
        mtu: usize,
    ) -> Result<WireGuard, ConfigError> {
        if conf.peers.len() >= 1 << 24 {
            return Err(ConfigError::new("CONFIG: at most 16777215 peers"));
        }
        let secret = StaticSecret::from(conf.private_key);
        let public = PublicKey::from(&secret);
        let limiter = Arc::new(RateLimiter::new(&public, HANDSHAKE_RATE));
        let mut peers = Vec::with_capacity(conf.peers.len());
        let mut routes = Vec::new();
        for (i, p) in conf.peers.iter().enumerate() {
            let endpoint = match p.endpoint {
                None => None,
                Some(SocketAddr::V4(s)) => Some((s.ip().octets(), s.port())),
                Some(SocketAddr::V6(s)) => {
                    return Err(ConfigError::new(format!(
                        "CONFIG: Endpoint: `{s}` is IPv6; this element sends over IPv4 only"
                    )))
                }
            };
            let tunn = Tunn::new(
                secret.clone(),
                PublicKey::from(p.public_key),
                p.preshared_key,
                p.persistent_keepalive,
                i as u32,
                Some(limiter.clone()),
            );
            for &(net, len) in &p.allowed_ips {
                let (v6, n) = key128(net);
                let mask = mask128(v6, len);
                routes.push(Route {
                    v6,
                    net: n & mask,
                    mask,
                    len,
                    peer: i,
                });
            }
            peers.push(Peer {
                tunn,
                public: p.public_key,
                endpoint,
                rx_bytes: 0,
                tx_bytes: 0,
                rx_packets: 0,
                tx_packets: 0,
                handshakes: 0,
                last_handshake: None,
                rekey: false,
            });
        }
        // Longest prefix first; of equal prefixes the later peer wins, as
        // in `wg` (a later AllowedIPs entry takes the prefix over).
        routes.sort_by(|a, b| b.len.cmp(&a.len).then(b.peer.cmp(&a.peer)));
        Ok(WireGuard {
            secret,
            public,
            limiter,
            address,
            port,
            mtu,
            peers,
            routes,
            scratch: vec![0u8; 2048].into_boxed_slice(),
            extra: Box::new(Batch::new()),
            ident: 0,
            next_tick: 0,
            next_limiter_reset: 0,
            last_now: 0,
            stats: Stats::default(),
        })
    }

    /// The peer whose AllowedIPs hold `a` (longest prefix).
    #[inline]
    fn lookup(&self, a: IpAddr) -> Option<usize> {
        let (v6, k) = key128(a);
        self.routes
            .iter()
            .find(|r| r.v6 == v6 && k & r.mask == r.net)
            .map(|r| r.peer)
    }

    /// Replaces `p`'s contents with an IPv4/UDP header to `dst` followed
    /// by `payload`. False (nothing usable) when the slot cannot hold it.
    fn wrap(
        p: &mut Packet,
        src: [u8; 4],
        sport: u16,
        dst: ([u8; 4], u16),
        ident: u16,
        payload: &[u8],
    ) -> bool {
        let total = OUTER + payload.len();
        p.take(p.len());
        if p.tailroom() < total && p.headroom() + p.tailroom() >= total {
            // Room is in front: move the (empty) data start back.
            let h = p.headroom();
            p.push(h);
            p.take(h);
        }
        if p.tailroom() < total {
            return false;
        }
        let buf = p.put_uninit(total);
        buf[OUTER..].copy_from_slice(payload);
        {
            let mut ip = Ipv4Packet::new_unchecked(&mut buf[..20]);
            ip.set_version_and_header_len(20);
            ip.set_tos(0);
            ip.set_total_len(total as u16);
            ip.set_ident(ident);
            ip.set_frag_field(0);
            ip.set_ttl(64);
            ip.set_protocol(17);
            ip.set_src_addr(src);
            ip.set_dst_addr(dst.0);
            ip.fill_checksum();
        }
        let pseudo = Ipv4Packet::new_unchecked(&buf[..20]).pseudo_header_sum(17, total - 20);
        let mut udp = UdpPacket::new_unchecked(&mut buf[20..]);
        udp.set_src_port(sport);
        udp.set_dst_port(dst.1);
        udp.set_len((total - 20) as u16);
        udp.fill_checksum(pseudo);
        p.set_network_header(0, 20);
        p.set_dst_ip_anno(dst.0);
        true
    }

    /// Puts the first `len` bytes of the scratch buffer (a message
    /// boringtun made for peer `i`) in a new packet to the peer's endpoint,
    /// on the list emitted after the call. Messages that are not made are
    /// counted (they are the protocol's to retry, no packet is lost).
    fn send_new(&mut self, i: usize, len: usize, pool: &Pool) {
        let Some(ep) = self.peers[i].endpoint else {
            self.stats.no_endpoint += 1;
            return;
        };
        if self.extra.is_full() {
            self.stats.alloc_failed += 1;
            return;
        }
        let Some(mut p) = pool.alloc() else {
            self.stats.alloc_failed += 1;
            return;
        };
        self.ident = self.ident.wrapping_add(1);
        if Self::wrap(
            &mut p,
            self.address,
            self.port,
            ep,
            self.ident,
            &self.scratch[..len],
        ) {
            if self.scratch[0] == 4 && len > WG_OVERHEAD {
                self.peers[i].tx_packets += 1;
                self.stats.encrypted += 1;
            } else {
                self.stats.sent_control += 1;
            }
            // Not full: checked above.
            let _ = self.extra.push(p);
        } else {
            self.stats.too_long += 1;
        }
    }

    /// After boringtun answered with a message to send: sends the queued
    /// packets it still holds for peer `i`.
    fn flush_queue(&mut self, i: usize, pool: &Pool) {
        loop {
            let len = match self.peers[i].tunn.decapsulate(None, &[], &mut self.scratch) {
                TunnResult::WriteToNetwork(b) => b.len(),
                _ => return,
            };
            self.send_new(i, len, pool);
        }
    }

    /// Emits the messages made during the call.
    fn emit_extra(&mut self, out: &mut Out<'_>) {
        for p in self.extra.drain() {
            out.emit(0, p);
        }
    }

    /// Encrypts one plain packet; the port it leaves on, or `None` when it
    /// was dropped (and counted).
    fn encrypt(&mut self, p: &mut Packet) -> Option<usize> {
        let Some((_, dst)) = inner_addrs(p.data()) else {
            self.stats.not_ip += 1;
            return None;
        };
        if p.len() > self.mtu {
            self.stats.too_long += 1;
            return None;
        }
        let Some(i) = self.lookup(dst) else {
            self.stats.no_peer += 1;
            return None;
        };
        let Some(ep) = self.peers[i].endpoint else {
            self.stats.no_endpoint += 1;
            return None;
        };
        let inner = p.len() as u64;
        let peer = &mut self.peers[i];
        let len = match peer.tunn.encapsulate(p.data(), &mut self.scratch) {
            TunnResult::WriteToNetwork(b) => b.len(),
            TunnResult::Err(_) => {
                self.stats.handshake_failed += 1;
                return None;
            }
            _ => {
                self.stats.awaiting_handshake += 1;
                return None;
            }
        };
        // A data message is 16 bytes of header, the padded packet and a
        // 16-byte tag; anything else is the handshake initiation made
        // because there was no session (boringtun kept the packet).
        let is_data = self.scratch[0] == 4;
        if is_data {
            peer.tx_bytes += inner;
            peer.tx_packets += 1;
            self.stats.encrypted += 1;
        } else {
            self.stats.awaiting_handshake += 1;
            self.stats.sent_control += 1;
        }
        self.ident = self.ident.wrapping_add(1);
        if Self::wrap(
            p,
            self.address,
            self.port,
            ep,
            self.ident,
            &self.scratch[..len],
        ) {
            Some(0)
        } else {
            self.stats.too_long += 1;
            None
        }
    }

    /// Handles one packet from the network; the port it leaves on, or
    /// `None` when it was consumed or dropped (and counted).
    fn receive(&mut self, p: &mut Packet, pool: &Pool) -> Option<usize> {
        let (src, sport, off, len) = {
            let Ok(ip) = Ipv4Packet::new_checked(p.data()) else {
                self.stats.not_udp += 1;
                return None;
            };
            if ip.protocol() != 17 || ip.is_fragment() || ip.check_total_len().is_err() {
                self.stats.not_udp += 1;
                return None;
            }
            let hl = ip.header_len();
            let Ok(udp) = UdpPacket::new_checked(ip.payload()) else {
                self.stats.not_udp += 1;
                return None;
            };
            if udp.dst_port() != self.port {
                self.stats.wrong_port += 1;
                return None;
            }
            (ip.src_addr(), udp.src_port(), hl + 8, udp.payload().len())
        };
        let src_ip = IpAddr::V4(Ipv4Addr::from(src));
        let payload = &p.data()[off..off + len];
        let i = match Tunn::parse_incoming_packet(payload) {
            Err(_) => {
                self.stats.malformed += 1;
                return None;
            }
            Ok(WgPacket::HandshakeInit(_)) => {
                // Check the MAC (and, under load, the cookie) before the
                // Diffie-Hellman that finds the peer.
                let verified = self
                    .limiter
                    .verify_packet(Some(src_ip), payload, &mut self.scratch);
                let h = match verified {
                    Ok(WgPacket::HandshakeInit(h)) => h,
                    Ok(_) => {
                        self.stats.malformed += 1;
                        return None;
                    }
                    Err(TunnResult::WriteToNetwork(cookie)) => {
                        let n = cookie.len();
                        self.stats.cookie_replies += 1;
                        self.ident = self.ident.wrapping_add(1);
                        let ident = self.ident;
                        let (addr, port) = (self.address, self.port);
                        // The scratch holds the cookie; the packet becomes it.
                        return if Self::wrap(p, addr, port, (src, sport), ident, &self.scratch[..n])
                        {
                            Some(0)
                        } else {
                            self.stats.too_long += 1;
                            None
                        };
                    }
                    Err(TunnResult::Err(WireGuardError::UnderLoad)) => {
                        self.stats.under_load += 1;
                        return None;
                    }
                    Err(_) => {
                        self.stats.bad_mac += 1;
                        return None;
                    }
                };
                let Ok(half) = parse_handshake_anon(&self.secret, &self.public, &h) else {
                    self.stats.handshake_failed += 1;
                    return None;
                };
                match self
                    .peers
                    .iter()
                    .position(|q| q.public == half.peer_static_public)
                {
                    Some(i) => i,
                    None => {
                        self.stats.unknown_peer += 1;
                        return None;
                    }
                }
            }
            Ok(WgPacket::HandshakeResponse(r)) => (r.receiver_idx >> 8) as usize,
            Ok(WgPacket::PacketCookieReply(c)) => (c.receiver_idx >> 8) as usize,
            Ok(WgPacket::PacketData(d)) => (d.receiver_idx >> 8) as usize,
        };
        if i >= self.peers.len() {
            self.stats.unknown_peer += 1;
            return None;
        }
        let kind = payload[0];
        let r = self.peers[i]
            .tunn
            .decapsulate(Some(src_ip), payload, &mut self.scratch);
        let (send, inner) = match r {
            TunnResult::Done => (None, None),
            TunnResult::WriteToNetwork(b) => (Some(b.len()), None),
            TunnResult::WriteToTunnelV4(b, a) => (None, Some((b.len(), IpAddr::V4(a)))),
            TunnResult::WriteToTunnelV6(b, a) => (None, Some((b.len(), IpAddr::V6(a)))),
            TunnResult::Err(e) => {
                match e {
                    WireGuardError::DuplicateCounter | WireGuardError::InvalidCounter => {
                        self.stats.replay += 1
                    }
                    WireGuardError::InvalidAeadTag => self.stats.decrypt_failed += 1,
                    WireGuardError::NoCurrentSession | WireGuardError::WrongIndex => {
                        self.stats.no_session += 1
                    }
                    WireGuardError::UnderLoad => self.stats.under_load += 1,
                    WireGuardError::InvalidMac => self.stats.bad_mac += 1,
                    _ => self.stats.handshake_failed += 1,
                }
                return None;
            }
        };
        // Authenticated (a cookie reply only proves the peer saw our
        // message, so it does not move the endpoint).
        let now = self.last_now;
        let peer = &mut self.peers[i];
        if kind != 3 {
            peer.endpoint = Some((src, sport));
        }
        if kind == 1 || kind == 2 {
            peer.handshakes += 1;
            peer.last_handshake = Some(now);
            self.stats.handshakes += 1;
        }
        if let Some((n, a)) = inner {
            if self.lookup(a) != Some(i) {
                self.stats.bad_source += 1;
                return None;
            }
            let peer = &mut self.peers[i];
            peer.rx_bytes += n as u64;
            peer.rx_packets += 1;
            self.stats.decrypted += 1;
            p.take(p.len());
            p.put_uninit(n).copy_from_slice(&self.scratch[..n]);
            let hl = if self.scratch[0] >> 4 == 4 {
                (self.scratch[0] & 15) as usize * 4
            } else {
                40
            };
            p.set_network_header(0, hl.min(n));
            return Some(1);
        }
        if let Some(n) = send {
            // A handshake response or a keep-alive to send back, then
            // whatever boringtun queued for this peer.
            let ep = self.peers[i].endpoint.unwrap_or((src, sport));
            self.ident = self.ident.wrapping_add(1);
            let ok = Self::wrap(
                p,
                self.address,
                self.port,
                ep,
                self.ident,
                &self.scratch[..n],
            );
            self.stats.sent_control += 1;
            self.flush_queue(i, pool);
            return if ok {
                Some(0)
            } else {
                self.stats.too_long += 1;
                None
            };
        }
        // A keep-alive, or a cookie reply taken in.
        self.stats.consumed += 1;
        None
    }

    /// Runs every peer's timers, sending what they ask for.
    fn tick(&mut self, pool: &Pool) {
        for i in 0..self.peers.len() {
            let rekey = std::mem::take(&mut self.peers[i].rekey);
            let r = if rekey {
                self.peers[i]
                    .tunn
                    .format_handshake_initiation(&mut self.scratch, true)
            } else {
                self.peers[i].tunn.update_timers(&mut self.scratch)
            };
            if let TunnResult::WriteToNetwork(b) = r {
                let n = b.len();
                self.send_new(i, n, pool);
            }
        }
    }

    fn peers_text(&self) -> String {
        let mut s = String::new();
        for p in &self.peers {
            let ep = match p.endpoint {
                Some((a, port)) => format!("{}:{port}", Ipv4Addr::from(a)),
                None => "(none)".into(),
            };
            let last = match p.last_handshake {
                Some(t) => format!("{}", (self.last_now - t).max(0) / 1_000_000_000),
                None => "never".into(),
            };
            let _ = writeln!(
                s,
                "{} endpoint={ep} last_handshake={last} handshakes={} rx_bytes={} tx_bytes={} rx_packets={} tx_packets={}",
                key_text(&p.public),
                p.handshakes,
                p.rx_bytes,
                p.tx_bytes,
                p.rx_packets,
                p.tx_packets
            );
        }
        s
    }

    fn counter_list(&self) -> [(&'static str, bool, u64); 23] {
        let s = &self.stats;
        [
            ("encrypted", false, s.encrypted),
            ("decrypted", false, s.decrypted),
            ("handshakes", false, s.handshakes),
            ("cookie_replies", false, s.cookie_replies),
            ("sent_control", false, s.sent_control),
            ("no_peer", true, s.no_peer),
            ("no_endpoint", true, s.no_endpoint),
            ("not_ip", true, s.not_ip),
            ("too_long", true, s.too_long),
            ("awaiting_handshake", true, s.awaiting_handshake),
            ("not_udp", true, s.not_udp),
            ("wrong_port", true, s.wrong_port),
            ("malformed", true, s.malformed),
            ("unknown_peer", true, s.unknown_peer),
            ("bad_mac", true, s.bad_mac),
            ("handshake_failed", true, s.handshake_failed),
            ("decrypt_failed", true, s.decrypt_failed),
            ("replay", true, s.replay),
            ("no_session", true, s.no_session),
            ("under_load", true, s.under_load),
            ("bad_source", true, s.bad_source),
            ("consumed", true, s.consumed),
            ("alloc_failed", true, s.alloc_failed),
        ]
    }
}

impl Element for WireGuard {
    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let pool = out.pool;
        self.last_now = out.now;
        let kept = if port == 0 {
            batch.route(|p| self.encrypt(p), |o, p| out.emit(o, p))
        } else {
            batch.route(|p| self.receive(p, pool), |o, p| out.emit(o, p))
        };
        out.pass(kept.unwrap_or(0));
        self.emit_extra(out);
    }

    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let now = out.now;
        self.last_now = now;
        if now >= self.next_limiter_reset {
            self.limiter.reset_count();
            self.next_limiter_reset = now + 1_000_000_000;
        }
        if now >= self.next_tick {
            self.tick(out.pool);
            self.emit_extra(out);
            self.next_tick = now + TICK;
        }
        TaskStatus::SleepUntil(self.next_tick.min(self.next_limiter_reset))
    }

    fn after_write(&mut self, out: &mut Out<'_>) -> bool {
        self.last_now = out.now;
        if self.peers.iter().any(|p| p.rekey) {
            self.tick(out.pool);
            self.emit_extra(out);
        }
        false
    }

    fn counters(&self, c: &mut crate::Counters) {
        for (name, is_drop, v) in self.counter_list() {
            if is_drop {
                c.drop(name, v);
            } else {
                c.count(name, v);
            }
        }
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("peers"),
            HandlerInfo::read("public_key"),
            HandlerInfo::read("handshakes"),
            HandlerInfo::read("stats"),
            HandlerInfo::write("rekey"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "peers" => Ok(self.peers_text()),
            "public_key" => Ok(key_text(self.public.as_bytes())),
            "handshakes" => Ok(self.stats.handshakes.to_string()),
            "stats" => {
                let mut s = String::new();
                for (n, _, v) in self.counter_list() {
                    let _ = writeln!(s, "{n} {v}");
                }
                Ok(s)
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "rekey" => {
                let v = value.trim();
                if v.is_empty() {
                    for p in &mut self.peers {
                        p.rekey = true;
                    }
                    return Ok(());
                }
                let k = super::wgconf::parse_key(v).map_err(HandlerError::BadValue)?;
                match self.peers.iter_mut().find(|p| p.public == k) {
                    Some(p) => {
                        p.rekey = true;
                        Ok(())
                    }
                    None => Err(HandlerError::BadValue(format!(
                        "no peer has public key `{v}`"
                    ))),
                }
            }
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{drop_counters, pkt, push_at, read, run_task};
    use crate::vpn::wgconf::PeerConf;
    use crate::Control;

    const A_KEY: [u8; 32] = [1; 32];
    const B_KEY: [u8; 32] = [2; 32];

    fn public(k: [u8; 32]) -> [u8; 32] {
        *PublicKey::from(&StaticSecret::from(k)).as_bytes()
    }

    /// Gateway `me` at `addr`:51820 with one peer `them` at `peer_addr`,
    /// whose inner network is `allowed`.
    fn gw(
        me: [u8; 32],
        them: [u8; 32],
        addr: [u8; 4],
        peer_addr: [u8; 4],
        allowed: &str,
    ) -> WireGuard {
        let conf = WgConf {
            private_key: me,
            listen_port: Some(51820),
            peers: vec![PeerConf {
                public_key: public(them),
                preshared_key: Some([7; 32]),
                allowed_ips: vec![super::super::wgconf::parse_prefix(allowed).expect("prefix")],
                endpoint: Some(SocketAddr::from((peer_addr, 51820))),
                persistent_keepalive: None,
            }],
        };
        WireGuard::from_conf(&conf, addr, 51820, 1420).expect("configures")
    }

    /// An IPv4 UDP packet `src` -> `dst` with 8 payload bytes.
    fn inner(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut v = vec![0x45, 0, 0, 36, 0, 1, 0, 0, 64, 17, 0, 0];
        v.extend_from_slice(&src);
        v.extend_from_slice(&dst);
        v.extend_from_slice(&[0x30, 0x39, 0x00, 0x35, 0, 16, 0, 0]);
        v.extend_from_slice(b"payload!");
        v
    }

    fn send(e: &mut WireGuard, pool: &Pool, port: usize, data: Vec<Vec<u8>>) -> Vec<Vec<Vec<u8>>> {
        let mut ctrl = Control::default();
        let pkts = data.iter().map(|d| pkt(pool, d)).collect();
        push_at(e, pool, port, pkts, 2, 0, &mut ctrl)
            .into_iter()
            .map(|o| o.iter().map(|p| p.data().to_vec()).collect())
            .collect()
    }

    fn drops(e: &WireGuard) -> Vec<(&'static str, u64)> {
        drop_counters(e).into_iter().filter(|d| d.1 != 0).collect()
    }

    #[test]
    fn two_gateways_handshake_and_carry_packets_both_ways() {
        let pool = Pool::new(64).expect("pool");
        let (aa, ba) = ([192, 0, 2, 1], [192, 0, 2, 2]);
        let mut a = gw(A_KEY, B_KEY, aa, ba, "10.2.0.0/16");
        let mut b = gw(B_KEY, A_KEY, ba, aa, "10.1.0.0/16");
        let p1 = inner([10, 1, 0, 5], [10, 2, 0, 9]);
        // No session: A keeps a copy and sends its handshake initiation.
        let o = send(&mut a, &pool, 0, vec![p1.clone()]);
        assert_eq!(o[0].len(), 1);
        let init = o[0][0].clone();
        assert_eq!(init.len(), 28 + 148);
        assert_eq!(&init[12..20], &[192, 0, 2, 1, 192, 0, 2, 2]);
        assert_eq!(&init[20..24], &[0xca, 0x6c, 0xca, 0x6c]);
        assert_eq!(init[28], 1);
        assert_eq!(drops(&a), [("awaiting_handshake", 1)]);
        // B answers.
        let o = send(&mut b, &pool, 1, vec![init]);
        assert_eq!((o[0].len(), o[1].len()), (1, 0));
        let resp = o[0][0].clone();
        assert_eq!(resp.len(), 28 + 92);
        assert_eq!(resp[28], 2);
        // A completes: a keep-alive, then the queued packet.
        let o = send(&mut a, &pool, 1, vec![resp]);
        assert_eq!(o[0].len(), 2);
        assert_eq!(o[0][0].len(), 28 + 32);
        assert_eq!(o[0][1].len(), 28 + 32 + 36);
        let data = o[0][1].clone();
        // B takes the keep-alive in, decrypts the packet, byte for byte.
        let o = send(&mut b, &pool, 1, o[0].clone());
        assert_eq!(o[1], vec![p1.clone()]);
        assert_eq!(drops(&b), [("consumed", 1)]);
        // The same data message again is a replay.
        let o = send(&mut b, &pool, 1, vec![data]);
        assert!(o[0].is_empty() && o[1].is_empty());
        assert_eq!(drops(&b), [("replay", 1), ("consumed", 1)]);
        // B to A, over the established session.
        let p2 = inner([10, 2, 0, 9], [10, 1, 0, 5]);
        let o = send(&mut b, &pool, 0, vec![p2.clone()]);
        assert_eq!(o[0].len(), 1);
        assert_eq!(o[0][0][28], 4);
        let o = send(&mut a, &pool, 1, o[0].clone());
        assert_eq!(o[1], vec![p2]);
        assert_eq!(read(&a, "handshakes"), "1");
        assert_eq!(read(&b, "handshakes"), "1");
        let peers = read(&b, "peers");
        assert!(
            peers.ends_with(
                "endpoint=192.0.2.1:51820 last_handshake=0 handshakes=1 rx_bytes=36 tx_bytes=36 rx_packets=1 tx_packets=1\n"
            ),
            "{peers}"
        );
    }

    #[test]
    fn drops_are_counted_by_reason() {
        let pool = Pool::new(64).expect("pool");
        let (aa, ba) = ([192, 0, 2, 1], [192, 0, 2, 2]);
        let mut a = gw(A_KEY, B_KEY, aa, ba, "10.2.0.0/16");
        let mut b = gw(B_KEY, A_KEY, ba, aa, "10.1.0.0/16");
        // No peer for the destination; not IP.
        let o = send(
            &mut a,
            &pool,
            0,
            vec![inner([10, 1, 0, 5], [10, 3, 0, 1]), vec![0x00; 30]],
        );
        assert!(o[0].is_empty());
        assert_eq!(drops(&a), [("no_peer", 1), ("not_ip", 1)]);
        // Establish, then have A send a packet whose source B does not allow.
        let o = send(&mut a, &pool, 0, vec![inner([10, 1, 0, 5], [10, 2, 0, 9])]);
        let o = send(&mut b, &pool, 1, o[0].clone());
        let o = send(&mut a, &pool, 1, o[0].clone());
        let _ = send(&mut b, &pool, 1, o[0].clone());
        let o = send(&mut a, &pool, 0, vec![inner([10, 7, 0, 5], [10, 2, 0, 9])]);
        let got = send(&mut b, &pool, 1, o[0].clone());
        assert!(got[1].is_empty());
        // A corrupted tag.
        let o = send(&mut a, &pool, 0, vec![inner([10, 1, 0, 5], [10, 2, 0, 9])]);
        let mut bad = o[0][0].clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        let got = send(&mut b, &pool, 1, vec![bad]);
        assert!(got[1].is_empty());
        // Garbage to the port, another port, not UDP.
        let mut junk = o[0][0].clone();
        junk.truncate(28 + 3);
        junk[2..4].copy_from_slice(&31u16.to_be_bytes());
        junk[24..26].copy_from_slice(&11u16.to_be_bytes());
        let mut other = o[0][0].clone();
        other[22..24].copy_from_slice(&53u16.to_be_bytes());
        let _ = send(&mut b, &pool, 1, vec![junk, other, vec![0x45; 10]]);
        assert_eq!(
            drops(&b),
            [
                ("not_udp", 1),
                ("wrong_port", 1),
                ("malformed", 1),
                ("decrypt_failed", 1),
                ("bad_source", 1),
                ("consumed", 1)
            ]
        );
    }

    #[test]
    fn last_handshake_is_measured_on_the_router_clock() {
        let pool = Pool::new(64).expect("pool");
        let (aa, ba) = ([192, 0, 2, 1], [192, 0, 2, 2]);
        let mut a = gw(A_KEY, B_KEY, aa, ba, "10.2.0.0/16");
        let mut b = gw(B_KEY, A_KEY, ba, aa, "10.1.0.0/16");
        let at = |e: &mut WireGuard, port, d: Vec<u8>, now: i64| {
            let mut ctrl = Control::default();
            let o = push_at(e, &pool, port, vec![pkt(&pool, &d)], 2, now, &mut ctrl);
            o[0].first().map(|p| p.data().to_vec())
        };
        let sec = 1_000_000_000;
        assert!(read(&a, "peers").contains(" last_handshake=never "));
        let init = at(&mut a, 0, inner([10, 1, 0, 5], [10, 2, 0, 9]), 100 * sec).expect("init");
        let resp = at(&mut b, 1, init, 100 * sec).expect("response");
        let _ = at(&mut a, 1, resp, 101 * sec);
        // The handshake completed at 100 s for B (the responder) and at
        // 101 s for A; the task runs at 103.5 s, whatever the wall clock.
        let mut ctrl = Control::default();
        let _ = run_task(&mut a, &pool, vec![], 2, 103 * sec + sec / 2, &mut ctrl);
        let _ = run_task(&mut b, &pool, vec![], 2, 103 * sec + sec / 2, &mut ctrl);
        assert!(read(&a, "peers").contains(" last_handshake=2 handshakes=1 "));
        assert!(read(&b, "peers").contains(" last_handshake=3 handshakes=1 "));
    }

    #[test]
    fn rekey_sends_a_new_initiation() {
        let pool = Pool::new(64).expect("pool");
        let mut a = gw(A_KEY, B_KEY, [192, 0, 2, 1], [192, 0, 2, 2], "10.2.0.0/16");
        a.write_handler("rekey", "").expect("rekey");
        let mut bufs = [Batch::new(), Batch::new()];
        let mut ctrl = Control::default();
        let mut out = Out::new(&mut bufs, &pool, 0, &mut ctrl);
        assert!(!a.after_write(&mut out));
        assert_eq!(bufs[0].len(), 1);
        assert_eq!(bufs[0].iter().next().map(|p| p.data()[28]), Some(1));
        let e = a.write_handler("rekey", "AAAA").expect_err("refused");
        assert!(matches!(e, HandlerError::BadValue(_)));
    }
}
