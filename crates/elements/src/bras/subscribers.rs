//! The subscriber file and the authentication hook of `PPPoEServer`.
//!
//! [`AuthBackend`] is the RADIUS-shaped boundary: the server hands it an
//! Access-Request (user name, and a PAP password or a CHAP identifier,
//! challenge and response) and gets Access-Accept (with an optional
//! framed address and an optional rate, as RADIUS servers return
//! Framed-IP-Address and a rate-limit attribute) or Access-Reject. [`SubscriberFile`] answers from a
//! file; a RADIUS client would implement the same trait.

use std::collections::HashMap;

use super::chap_md5;

/// What a peer presented.
#[derive(Debug, Clone, Copy)]
pub enum Credential<'a> {
    /// PAP: the password.
    Pap(&'a [u8]),
    /// CHAP-MD5: the identifier, our challenge and the peer's response.
    Chap {
        /// The Challenge's identifier.
        id: u8,
        /// The challenge value we sent.
        challenge: &'a [u8],
        /// The peer's response value.
        response: &'a [u8],
    },
}

/// What an Access-Accept grants.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Grant {
    /// A framed (static) IPv4 address; `None`: one from the pool.
    pub addr: Option<[u8; 4]>,
    /// The session's rate each way, bytes per second; `None`: unlimited.
    pub rate: Option<u32>,
}

/// The answer to an Access-Request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthReply {
    /// Accepted, with what is granted.
    Accept(Grant),
    /// Rejected.
    Reject,
}

/// Lowest and highest per-subscriber rate, bytes per second (8 kbit/s
/// to about 34 Gbit/s).
pub const RATE_RANGE: std::ops::RangeInclusive<f64> = 1000.0..=4_294_967_295.0;

/// Decides whether a subscriber may connect (a RADIUS server's role).
pub trait AuthBackend: Send + Sync {
    /// Checks `user`'s credential.
    fn authorize(&self, user: &[u8], cred: Credential<'_>) -> AuthReply;
}

/// One subscriber of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subscriber {
    /// The secret: PAP password and CHAP secret.
    pub secret: Vec<u8>,
    /// A static address, if the line gives one.
    pub addr: Option<[u8; 4]>,
    /// The rate each way (bytes per second), if the line gives one.
    pub rate: Option<u32>,
}

/// Subscribers read from a file: one per line, `USER SECRET [ADDRESS]
/// [RATE]` (each optional field recognised by its form, `-` for none),
/// fields separated by blanks, `#` starts a comment, blank lines ignored.
#[derive(Debug, Default)]
pub struct SubscriberFile {
    users: HashMap<Vec<u8>, Subscriber>,
}

/// Longest user name or secret accepted (PAP carries at most 255 bytes).
pub const MAX_FIELD: usize = 255;

impl SubscriberFile {
    /// Parses `text`; errors name `file:line` and the field.
    pub fn parse(file: &str, text: &str) -> Result<SubscriberFile, String> {
        let mut users = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let at = format!("{file}:{}", i + 1);
            let line = line.split('#').next().unwrap_or("");
            let f: Vec<&str> = line.split_ascii_whitespace().collect();
            if f.is_empty() {
                continue;
            }
            if f.len() < 2 || f.len() > 4 {
                return Err(format!(
                    "{at}: expected `USER SECRET [ADDRESS] [RATE]`, found {} field(s)",
                    f.len()
                ));
            }
            for (name, v) in [("USER", f[0]), ("SECRET", f[1])] {
                if v.len() > MAX_FIELD {
                    return Err(format!("{at}: {name}: longer than {MAX_FIELD} bytes"));
                }
            }
            let (mut addr, mut rate) = (None, None);
            for v in f.iter().skip(2).filter(|v| **v != "-") {
                // A rate ends in a unit letter (`10Mbps`, `2MBps`).
                if v.ends_with(|c: char| c.is_ascii_alphabetic() || c == '/') {
                    let r = pronto_lang::args::parse_bandwidth(v)
                        .ok()
                        .filter(|r| RATE_RANGE.contains(r))
                        .ok_or_else(|| {
                            format!(
                                "{at}: RATE: expected a rate from 8kbps to 34Gbps \
                                 (e.g. 10Mbps), found `{v}`"
                            )
                        })?;
                    if rate.replace(r as u32).is_some() {
                        return Err(format!("{at}: RATE: given twice"));
                    }
                } else {
                    let a = pronto_lang::args::parse_ip4(v)
                        .map_err(|e| format!("{at}: ADDRESS: {e}"))?;
                    if addr.replace(a).is_some() {
                        return Err(format!("{at}: ADDRESS: given twice"));
                    }
                }
            }
            if users.contains_key(f[0].as_bytes()) {
                return Err(format!("{at}: USER: `{}` is listed twice", f[0]));
            }
            users.insert(
                f[0].as_bytes().to_vec(),
                Subscriber {
                    secret: f[1].as_bytes().to_vec(),
                    addr,
                    rate,
                },
            );
        }
        Ok(SubscriberFile { users })
    }

    /// The subscribers, by user name.
    pub fn users(&self) -> impl Iterator<Item = (&[u8], &Subscriber)> {
        self.users.iter().map(|(k, v)| (k.as_slice(), v))
    }
}

impl AuthBackend for SubscriberFile {
    fn authorize(&self, user: &[u8], cred: Credential<'_>) -> AuthReply {
        let Some(s) = self.users.get(user) else {
            return AuthReply::Reject;
        };
        let ok = match cred {
            Credential::Pap(pw) => pw == s.secret.as_slice(),
            Credential::Chap {
                id,
                challenge,
                response,
            } => response == chap_md5(id, &s.secret, challenge),
        };
        if ok {
            AuthReply::Accept(Grant {
                addr: s.addr,
                rate: s.rate,
            })
        } else {
            AuthReply::Reject
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_errors_name_the_line_and_field() {
        let f = SubscriberFile::parse(
            "subs",
            "# user secret [address] [rate]\nalice s3cret\n\nbob pw 10.64.0.9 # static\n\
             carol pw - 10Mbps\ndave pw 2MBps 10.64.0.7\n",
        )
        .expect("parses");
        assert_eq!(
            f.authorize(b"alice", Credential::Pap(b"s3cret")),
            AuthReply::Accept(Grant::default())
        );
        assert_eq!(
            f.authorize(b"alice", Credential::Pap(b"wrong")),
            AuthReply::Reject
        );
        assert_eq!(
            f.authorize(b"bob", Credential::Pap(b"pw")),
            AuthReply::Accept(Grant {
                addr: Some([10, 64, 0, 9]),
                rate: None
            })
        );
        assert_eq!(
            f.authorize(b"carol", Credential::Pap(b"pw")),
            AuthReply::Accept(Grant {
                addr: None,
                rate: Some(1_250_000)
            })
        );
        assert_eq!(
            f.authorize(b"dave", Credential::Pap(b"pw")),
            AuthReply::Accept(Grant {
                addr: Some([10, 64, 0, 7]),
                rate: Some(2_000_000)
            })
        );
        assert_eq!(
            f.authorize(b"erin", Credential::Pap(b"pw")),
            AuthReply::Reject
        );
        let e = SubscriberFile::parse("subs", "alice\n").expect_err("one field");
        assert_eq!(
            e,
            "subs:1: expected `USER SECRET [ADDRESS] [RATE]`, found 1 field(s)"
        );
        let e = SubscriberFile::parse("subs", "a b - 10Xbps\n").expect_err("bad rate");
        assert_eq!(
            e,
            "subs:1: RATE: expected a rate from 8kbps to 34Gbps (e.g. 10Mbps), found `10Xbps`"
        );
        let e = SubscriberFile::parse("subs", "a b 1kbps\n").expect_err("too low");
        assert!(e.starts_with("subs:1: RATE: expected"), "{e}");
        let e = SubscriberFile::parse("subs", "a b 1Mbps 2Mbps\n").expect_err("twice");
        assert_eq!(e, "subs:1: RATE: given twice");
        let e = SubscriberFile::parse("subs", "a b\nc d 10.0.0\n").expect_err("bad address");
        assert!(e.starts_with("subs:2: ADDRESS: "), "{e}");
        let e = SubscriberFile::parse("subs", "a b\na c\n").expect_err("twice");
        assert_eq!(e, "subs:2: USER: `a` is listed twice");
    }

    #[test]
    fn chap_md5_matches_rfc_1994() {
        // MD5(id || secret || challenge), computed independently.
        let challenge = [0x11u8; 16];
        let f = SubscriberFile::parse("s", "u secret").expect("parses");
        let good = chap_md5(7, b"secret", &challenge);
        let cred = Credential::Chap {
            id: 7,
            challenge: &challenge,
            response: &good,
        };
        assert_eq!(f.authorize(b"u", cred), AuthReply::Accept(Grant::default()));
        let cred = Credential::Chap {
            id: 8,
            challenge: &challenge,
            response: &good,
        };
        assert_eq!(f.authorize(b"u", cred), AuthReply::Reject);
    }
}
