//! The key file of `WireGuard`: the format `wg setconf` reads
//! (`[Interface]` with `PrivateKey` and `ListenPort`, then one `[Peer]`
//! section per peer with `PublicKey`, `PresharedKey`, `AllowedIPs`,
//! `Endpoint`, `PersistentKeepalive`). Errors name the file, the line and
//! the field, and say what was expected.

use std::net::{IpAddr, SocketAddr};

use base64::Engine as _;

/// One peer of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerConf {
    /// Its static public key.
    pub public_key: [u8; 32],
    /// The optional pre-shared key.
    pub preshared_key: Option<[u8; 32]>,
    /// Inner addresses it may send from and is sent to: (network, length).
    pub allowed_ips: Vec<(IpAddr, u8)>,
    /// Where to send until it is heard from.
    pub endpoint: Option<SocketAddr>,
    /// Seconds between keep-alives, if any.
    pub persistent_keepalive: Option<u16>,
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WgConf {
    /// Our static private key.
    pub private_key: [u8; 32],
    /// Our UDP port, if given.
    pub listen_port: Option<u16>,
    /// The peers, in file order.
    pub peers: Vec<PeerConf>,
}

/// A base64 key of 32 bytes.
pub fn parse_key(v: &str) -> Result<[u8; 32], String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.trim())
        .map_err(|_| {
            format!("expected a base64 key of 32 bytes (as `wg genkey` prints), found `{v}`")
        })?;
    bytes.try_into().map_err(|_| {
        format!("expected a base64 key of 32 bytes (as `wg genkey` prints), found `{v}`")
    })
}

/// The base64 text of a key, as `wg` prints it.
pub fn key_text(k: &[u8; 32]) -> String {
    base64::engine::general_purpose::STANDARD.encode(k)
}

/// `a.b.c.d/len` or `x::y/len` (a bare address is a host prefix).
pub fn parse_prefix(v: &str) -> Result<(IpAddr, u8), String> {
    let v = v.trim();
    let (a, l) = match v.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (v, None),
    };
    let addr: IpAddr = a
        .parse()
        .map_err(|_| format!("expected an address with a prefix length, found `{v}`"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let len = match l {
        None => max,
        Some(l) => l
            .parse::<u8>()
            .ok()
            .filter(|&n| n <= max)
            .ok_or_else(|| format!("expected a prefix length from 0 to {max}, found `{l}`"))?,
    };
    Ok((addr, len))
}

impl WgConf {
    /// Parses the text of file `name` (used in messages only).
    pub fn parse(name: &str, text: &str) -> Result<WgConf, String> {
        #[derive(PartialEq)]
        enum Sec {
            None,
            Interface,
            Peer,
        }
        let mut sec = Sec::None;
        let mut private_key = None;
        let mut listen_port = None;
        let mut peers: Vec<(usize, Option<[u8; 32]>, PeerConf)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line_no = i + 1;
            let at = |m: String| format!("{name}:{line_no}: {m}");
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if line.starts_with('[') {
                sec = match line.to_ascii_lowercase().as_str() {
                    "[interface]" => Sec::Interface,
                    "[peer]" => {
                        peers.push((
                            line_no,
                            None,
                            PeerConf {
                                public_key: [0; 32],
                                preshared_key: None,
                                allowed_ips: Vec::new(),
                                endpoint: None,
                                persistent_keepalive: None,
                            },
                        ));
                        Sec::Peer
                    }
                    _ => {
                        return Err(at(format!(
                            "expected `[Interface]` or `[Peer]`, found `{line}`"
                        )))
                    }
                };
                continue;
            }
            let Some((k, v)) = line.split_once('=') else {
                return Err(at(format!("expected `Key = Value`, found `{line}`")));
            };
            let (k, v) = (k.trim(), v.trim());
            let field = |m: String| at(format!("{k}: {m}"));
            match (&sec, k.to_ascii_lowercase().as_str()) {
                (Sec::Interface, "privatekey") => private_key = Some(parse_key(v).map_err(field)?),
                (Sec::Interface, "listenport") => {
                    listen_port = Some(v.parse::<u16>().map_err(|_| {
                        field(format!("expected a port from 0 to 65535, found `{v}`"))
                    })?)
                }
                // Fields `wg-quick` adds that describe the host, not the tunnel.
                (Sec::Interface, "fwmark" | "address" | "dns" | "mtu" | "table" | "saveconfig") => {
                }
                (Sec::Peer, key) => {
                    let Some((_, pk, p)) = peers.last_mut() else {
                        return Err(at("a peer field before `[Peer]`".into()));
                    };
                    match key {
                        "publickey" => *pk = Some(parse_key(v).map_err(field)?),
                        "presharedkey" => p.preshared_key = Some(parse_key(v).map_err(field)?),
                        "allowedips" => {
                            for one in v.split(',').filter(|s| !s.trim().is_empty()) {
                                p.allowed_ips.push(parse_prefix(one).map_err(field)?);
                            }
                        }
                        "endpoint" => {
                            p.endpoint = Some(v.parse::<SocketAddr>().map_err(|_| {
                                field(format!(
                                    "expected `IP:PORT` (`[IPv6]:PORT`), found `{v}` (names are not resolved)"
                                ))
                            })?)
                        }
                        "persistentkeepalive" => {
                            p.persistent_keepalive = match v {
                                "off" | "0" => None,
                                _ => Some(v.parse::<u16>().ok().filter(|&s| s > 0).ok_or_else(
                                    || field(format!("expected seconds from 1 to 65535 or `off`, found `{v}`")),
                                )?),
                            }
                        }
                        _ => return Err(at(format!("unknown [Peer] field `{k}`"))),
                    }
                }
                (Sec::Interface, _) => return Err(at(format!("unknown [Interface] field `{k}`"))),
                (Sec::None, _) => {
                    return Err(at(format!(
                        "`{k}` outside a section: start with `[Interface]`"
                    )))
                }
            }
        }
        let private_key =
            private_key.ok_or_else(|| format!("{name}: PrivateKey: missing in [Interface]"))?;
        let mut out = Vec::with_capacity(peers.len());
        for (line, pk, mut p) in peers {
            p.public_key =
                pk.ok_or_else(|| format!("{name}:{line}: PublicKey: missing in this [Peer]"))?;
            if out.iter().any(|q: &PeerConf| q.public_key == p.public_key) {
                return Err(format!(
                    "{name}:{line}: PublicKey: the same peer twice; merge the sections"
                ));
            }
            out.push(p);
        }
        Ok(WgConf {
            private_key,
            listen_port,
            peers: out,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: &str = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk=";
    const K2: &str = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=";

    #[test]
    fn reads_what_wg_writes() {
        let text = format!(
            "[Interface]\nPrivateKey = {K1}\nListenPort = 51820\n\n\
             [Peer] # the laptop\nPublicKey = {K2}\nAllowedIPs = 10.9.0.2/32, fd00::2/128\n\
             Endpoint = 192.0.2.7:41000\nPersistentKeepalive = 25\n"
        );
        let c = WgConf::parse("wg0.conf", &text).expect("valid");
        assert_eq!(c.listen_port, Some(51820));
        assert_eq!(key_text(&c.private_key), K1);
        assert_eq!(c.peers.len(), 1);
        let p = &c.peers[0];
        assert_eq!(key_text(&p.public_key), K2);
        assert_eq!(
            p.allowed_ips,
            vec![
                ("10.9.0.2".parse().expect("addr"), 32),
                ("fd00::2".parse().expect("addr"), 128)
            ]
        );
        assert_eq!(p.endpoint, Some("192.0.2.7:41000".parse().expect("addr")));
        assert_eq!(p.persistent_keepalive, Some(25));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = WgConf::parse("w.conf", "[Interface]\nPrivateKey = nope\n").expect_err("refused");
        assert_eq!(
            e,
            "w.conf:2: PrivateKey: expected a base64 key of 32 bytes (as `wg genkey` prints), found `nope`"
        );
        let e = WgConf::parse(
            "w.conf",
            &format!("[Interface]\nPrivateKey = {K1}\n[Peer]\nPublicKey = {K2}\nAllowedIPs = 10.0.0.0/33\n"),
        )
        .expect_err("refused");
        assert_eq!(
            e,
            "w.conf:5: AllowedIPs: expected a prefix length from 0 to 32, found `33`"
        );
        let e = WgConf::parse(
            "w.conf",
            &format!("[Interface]\nPrivateKey = {K1}\n[Peer]\n"),
        )
        .expect_err("refused");
        assert_eq!(e, "w.conf:3: PublicKey: missing in this [Peer]");
        let e = WgConf::parse("w.conf", "[Interface]\nListenPort = 1\n").expect_err("refused");
        assert_eq!(e, "w.conf: PrivateKey: missing in [Interface]");
        let e = WgConf::parse("w.conf", "[Interface]\nColour = 1\n").expect_err("refused");
        assert_eq!(e, "w.conf:2: unknown [Interface] field `Colour`");
    }
}
