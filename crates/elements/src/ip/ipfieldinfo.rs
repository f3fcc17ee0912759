//! `IPFieldInfo`: the names of IP header fields.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Stands for Click's table of IP field names, which pronto has built in.
pub struct IPFieldInfo;

impl IPFieldInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPFieldInfo")
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "IPFieldInfo()\n\n\
             The names of IP, TCP, UDP and ICMP header fields (ip tos, tcp win,\n\
             icmp type, ...) that IPClassifier and IPFilter accept. pronto has\n\
             this table built in; the element exists so that configurations naming\n\
             it run, and does nothing.\n\n\
             Ports: none.",
        );

    /// Configures an `IPFieldInfo`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(IPFieldInfo))
    }
}

impl Element for IPFieldInfo {}

/// Pseudo-protocols of field specifications.
pub const PROTO_TCP_OR_UDP: i32 = 256;
/// Any transport header.
pub const PROTO_TRANSP: i32 = 258;
/// The payload after the TCP or UDP header.
pub const PROTO_PAYLOAD: i32 = 259;

const PROTOS: &[(&str, i32)] = &[
    ("dccp", 33),
    ("gre", 47),
    ("icmp", 1),
    ("igmp", 2),
    ("ipip", 4),
    ("payload", PROTO_PAYLOAD),
    ("data", PROTO_PAYLOAD),
    ("sctp", 132),
    ("tcp", 6),
    ("tcpudp", PROTO_TCP_OR_UDP),
    ("transp", PROTO_TRANSP),
    ("udp", 17),
];

/// (header, name, field): Click's IP field names.
const FIELDS: &[(i32, &str, i32, u32, u32)] = &[
    (0, "df", 0, 49, 1),
    (0, "dport", PROTO_TCP_OR_UDP, 16, 16),
    (0, "dscp", 0, 8, 6),
    (0, "dst", 0, 128, 32),
    (0, "ecn", 0, 14, 2),
    (0, "fragoff", 0, 51, 13),
    (0, "hl", 0, 4, 4),
    (0, "id", 0, 32, 16),
    (0, "len", 0, 16, 16),
    (0, "mf", 0, 50, 1),
    (0, "off", 0, 48, 16),
    (0, "proto", 0, 72, 8),
    (0, "rf", 0, 48, 1),
    (0, "sport", PROTO_TCP_OR_UDP, 0, 16),
    (0, "src", 0, 96, 32),
    (0, "sum", 0, 80, 16),
    (0, "tos", 0, 8, 8),
    (0, "ttl", 0, 64, 8),
    (0, "vers", 0, 0, 4),
    (17, "dport", 17, 16, 16),
    (17, "len", 17, 32, 16),
    (17, "sport", 17, 0, 16),
    (17, "sum", 17, 48, 16),
    (6, "ack", 6, 107, 1),
    (6, "ackno", 6, 64, 32),
    (6, "dport", 6, 16, 16),
    (6, "fin", 6, 111, 1),
    (6, "flags", 6, 104, 8),
    (6, "hl", 6, 96, 4),
    (6, "psh", 6, 108, 1),
    (6, "push", 6, 108, 1),
    (6, "rst", 6, 109, 1),
    (6, "seq", 6, 32, 32),
    (6, "seqno", 6, 32, 32),
    (6, "sport", 6, 0, 16),
    (6, "sum", 6, 128, 16),
    (6, "syn", 6, 110, 1),
    (6, "urg", 6, 106, 1),
    (6, "urp", 6, 144, 16),
    (6, "win", 6, 112, 16),
    (1, "code", 1, 8, 8),
    (1, "sum", 1, 16, 16),
    (1, "type", 1, 0, 8),
    (PROTO_TCP_OR_UDP, "dport", PROTO_TCP_OR_UDP, 16, 16),
    (PROTO_TCP_OR_UDP, "sport", PROTO_TCP_OR_UDP, 0, 16),
];

/// A field of an IP packet: a protocol (0 for the IP header), a bit
/// offset from the header's start and a bit length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IPField {
    /// 0: the IP header; 1, 6, 17...: that transport header;
    /// [`PROTO_TCP_OR_UDP`], [`PROTO_TRANSP`], [`PROTO_PAYLOAD`].
    pub proto: i32,
    /// Offset in bits.
    pub bit_offset: u32,
    /// Length in bits.
    pub bit_length: u32,
}

const FIELD_SYNTAX: &str = "expected 'HEADER [NAME] [{OFFSET:LENGTH}] [/PREFIX] [& MASK]'";

/// A small cursor over a field specification.
struct Scan<'a> {
    s: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn word(&mut self) -> &str {
        self.ws();
        let st = self.i;
        while self
            .s
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
        {
            self.i += 1;
        }
        std::str::from_utf8(&self.s[st..self.i]).unwrap_or("")
    }
    fn number(&mut self) -> Option<u32> {
        self.ws();
        let st = self.i;
        let hex = self.s[self.i..].starts_with(b"0x") || self.s[self.i..].starts_with(b"0X");
        if hex {
            self.i += 2;
        }
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_hexdigit()) {
            self.i += 1;
        }
        let t = std::str::from_utf8(&self.s[st..self.i]).ok()?;
        pronto_lang::args::parse_u32(t).ok()
    }
}

impl IPField {
    /// Parses a field specification (`ip src/8`, `tcp flags`,
    /// `ip[8:2] & 0x3F0`, `transp{4:12}`, `ip proto 50 [0:4]`).
    pub fn parse(text: &str) -> Result<IPField, String> {
        let mut sc = Scan {
            s: text.as_bytes(),
            i: 0,
        };
        let first = sc.word().to_string();
        let header = if first == "ip" {
            let after_ip = sc.i;
            if sc.word() == "proto" {
                match sc.number() {
                    Some(n) => n as i32,
                    None => {
                        sc.i = after_ip;
                        0
                    }
                }
            } else {
                sc.i = after_ip;
                0
            }
        } else if let Some(&(_, p)) = PROTOS.iter().find(|(n, _)| *n == first) {
            p
        } else if let Ok(n) = first.parse::<u8>() {
            n as i32
        } else {
            return Err(FIELD_SYNTAX.into());
        };
        // A field name.
        let before_name = sc.i;
        let name = sc.word().to_string();
        let mut field = FIELDS
            .iter()
            .find(|(h, n, ..)| *h == header && *n == name)
            .map(|&(_, _, p, o, l)| IPField {
                proto: p,
                bit_offset: o,
                bit_length: l,
            });
        if field.is_none() {
            sc.i = before_name;
        }
        // An offset and length.
        let bad_len = || "bad offset or length in TCP/IP field".to_string();
        let mut lim: Option<(u32, u32)> = None;
        for (open, close, bits) in [(b'[', b']', 8u32), (b'{', b'}', 1)] {
            let at = sc.i;
            if sc.eat(open) {
                let a = sc.number().ok_or_else(bad_len)?;
                let (off, len) = if sc.eat(b':') {
                    (a, sc.number().ok_or_else(bad_len)?)
                } else if sc.eat(b'-') {
                    let b = sc.number().ok_or_else(bad_len)?;
                    (a, (b + 1).checked_sub(a).ok_or_else(bad_len)?)
                } else {
                    (a, 1)
                };
                if !sc.eat(close) {
                    return Err(FIELD_SYNTAX.into());
                }
                lim = Some((off.saturating_mul(bits), len.saturating_mul(bits)));
                break;
            }
            sc.i = at;
        }
        match (field, lim) {
            (_, Some((_, 0))) => return Err(bad_len()),
            (Some(f), Some((o, l))) => {
                if o >= f.bit_length || o + l > f.bit_length {
                    return Err(bad_len());
                }
                field = Some(IPField {
                    bit_offset: f.bit_offset + o,
                    bit_length: l,
                    ..f
                });
            }
            (None, Some((o, l))) => {
                field = Some(IPField {
                    proto: header,
                    bit_offset: o,
                    bit_length: l,
                })
            }
            (None, None) => return Err(FIELD_SYNTAX.into()),
            (Some(_), None) => {}
        }
        let mut f = field.ok_or_else(|| FIELD_SYNTAX.to_string())?;
        let bad_mask = || "bad prefix or mask in TCP/IP field".to_string();
        if sc.eat(b'/') {
            let l = sc.number().ok_or_else(bad_mask)?;
            if l > f.bit_length {
                return Err(bad_mask());
            }
            f.bit_length = l;
        }
        if sc.eat(b'&') {
            let m = sc.number().ok_or_else(bad_mask)?;
            if m == 0 {
                return Err(bad_mask());
            }
            let lsb = m.trailing_zeros();
            let sum = m as u64 + (1u64 << lsb);
            if sum & (sum - 1) != 0 {
                return Err(bad_mask());
            }
            let msb = sum.trailing_zeros();
            if msb > f.bit_length {
                return Err(bad_mask());
            }
            f = IPField {
                proto: f.proto,
                bit_offset: f.bit_offset + f.bit_length - msb,
                bit_length: msb - lsb,
            };
        }
        sc.ws();
        if sc.i != sc.s.len() {
            return Err("garbage after field specification".into());
        }
        Ok(f)
    }

    /// The field as Click writes it (`ip src`, `ip src/8`, `ip[8:2]`).
    pub fn unparse(&self) -> String {
        let mut s = match self.proto {
            0 => "ip".to_string(),
            p => match PROTOS.iter().find(|&&(n, q)| q == p && n != "data") {
                Some((n, _)) => (*n).to_string(),
                None => format!("ip proto {p}"),
            },
        };
        let named = |o: u32, l: u32| {
            FIELDS
                .iter()
                .find(|&&(h, _, p, fo, fl)| {
                    h == self.proto && p == self.proto && fo == o && fl == l
                })
                .map(|&(_, n, ..)| n)
        };
        if let Some(n) = named(self.bit_offset, self.bit_length) {
            s.push(' ');
            s.push_str(n);
            return s;
        }
        let (mut bo, bl) = (self.bit_offset, self.bit_length);
        let mut container = 8;
        while container < 64 {
            if bo / container == (bo + bl - 1) / container {
                if let Some(n) = named(bo & !(container - 1), container) {
                    s.push(' ');
                    s.push_str(n);
                    bo &= container - 1;
                    if bo == 0 {
                        s.push_str(&format!("/{bl}"));
                        return s;
                    }
                    break;
                }
            }
            container *= 2;
        }
        if bo % 8 == 0 && bl == 8 {
            s.push_str(&format!("[{}]", bo / 8));
        } else if bo % 8 == 0 && bl % 8 == 0 {
            s.push_str(&format!("[{}:{}]", bo / 8, bl / 8));
        } else if bl == 1 {
            s.push_str(&format!("{{{bo}}}"));
        } else {
            s.push_str(&format!("{{{bo}:{bl}}}"));
        }
        s
    }

    /// The name of the field's header (`ip`, `tcp`, ...).
    pub fn header_name(&self) -> String {
        match self.proto {
            0 => String::new(),
            p => PROTOS
                .iter()
                .find(|&&(n, q)| q == p && n != "data")
                .map_or(p.to_string(), |(n, _)| (*n).to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support::{config_err, configure};

    #[test]
    fn takes_no_arguments() {
        assert!(configure(&[], IPFieldInfo::configure, "", 0, 0).is_ok());
        assert_eq!(
            config_err(configure(&[], IPFieldInfo::configure, "x", 0, 0)),
            "too many arguments: `x` was not expected"
        );
    }

    #[test]
    fn field_specifications() {
        let f = |t: &str| IPField::parse(t).map(|f| (f.proto, f.bit_offset, f.bit_length));
        assert_eq!(f("ip src"), Ok((0, 96, 32)));
        assert_eq!(f("ip src/8"), Ok((0, 96, 8)));
        assert_eq!(f("tcp flags"), Ok((6, 104, 8)));
        assert_eq!(f("ip sport"), Ok((PROTO_TCP_OR_UDP, 0, 16)));
        assert_eq!(f("ip[8:2] & 0x3F0"), Ok((0, 70, 6)));
        assert_eq!(f("ip[8-9]"), Ok((0, 64, 16)));
        assert_eq!(f("transp{4:12}"), Ok((PROTO_TRANSP, 4, 12)));
        assert_eq!(f("ip proto 50 [0:4]"), Ok((50, 0, 32)));
        assert_eq!(f("udp len"), Ok((17, 32, 16)));
        assert!(f("ip src & 0x5").is_err());
        assert!(f("ip src/33").is_err());
        assert!(f("bogus").is_err());
        assert!(f("ip dst junk").is_err());
        let u = |t: &str| IPField::parse(t).map(|f| f.unparse()).unwrap_or_default();
        assert_eq!(u("ip src"), "ip src");
        assert_eq!(u("ip src/8"), "ip src/8");
        assert_eq!(u("ip[1]"), "ip tos");
        assert_eq!(u("tcp[2:2]"), "tcp dport");
        assert_eq!(u("ip[20:4]"), "ip[20:4]");
        assert_eq!(u("ip{3}"), "ip{3}");
    }
}
