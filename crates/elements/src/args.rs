//! Reading an element's arguments, Click's way.
//!
//! Arguments are split at top-level commas. An argument is a keyword
//! argument (`KEYWORD value`) only if its keyword is one the class declares,
//! so a positional value that looks like a keyword (`IPEncap(TCP, ...)`)
//! stays positional. Each value type is parsed in exactly one [`FromArg`]
//! impl; errors name the argument ("STOP: expected boolean").

use pronto_lang::args as la;

/// A configuration error, with the keyword or position it is about.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConfigError {
    /// What went wrong, prefixed with the argument's name when known.
    pub message: String,
    /// The element needs another one that is declared but not configured
    /// yet (it comes later in the configuration): configure it again once
    /// the others are; `message` is the error if that never happens.
    pub later: bool,
}

impl ConfigError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        ConfigError {
            message: message.into(),
            later: false,
        }
    }

    /// "Configure me again after the others": the element names one that
    /// is declared ([`crate::Peers::declared`]) but not configured yet.
    /// `message` is the error when it still is not after every other
    /// element is (a cycle of such names).
    pub fn later(message: impl Into<String>) -> Self {
        ConfigError {
            message: message.into(),
            later: true,
        }
    }
}

/// Most characters of a bad argument an error message repeats.
const MAX_ECHO: usize = 80;

/// A value that can be read from one argument.
pub trait FromArg: Sized {
    /// Parses the (unsplit, un-unquoted) argument text.
    fn from_arg(s: &str) -> Result<Self, String>;
}

macro_rules! int_arg {
    ($($t:ty),*) => {$(
        impl FromArg for $t {
            fn from_arg(s: &str) -> Result<Self, String> {
                la::parse_int_range(s, <$t>::MIN as i128, <$t>::MAX as i128).map(|v| v as $t)
            }
        }
    )*};
}
int_arg!(u8, u16, u32, u64, i32, i64, usize);

impl FromArg for bool {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_bool(s)
    }
}

impl FromArg for f64 {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_f64(s)
    }
}

impl FromArg for String {
    fn from_arg(s: &str) -> Result<Self, String> {
        Ok(la::unquote(s))
    }
}

/// An IPv4 address argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Ip4(pub [u8; 4]);

impl FromArg for Ip4 {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_ip4(&la::unquote(s)).map(Ip4)
    }
}

impl std::fmt::Display for Ip4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "{a}.{b}.{c}.{d}")
    }
}

/// An IPv4 prefix argument (`a.b.c.d/len`, `a.b.c.d/mask`, or an address).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IpPrefix {
    /// The address (not masked).
    pub addr: [u8; 4],
    /// The mask.
    pub mask: [u8; 4],
}

impl FromArg for IpPrefix {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_ip_prefix(&la::unquote(s)).map(|(addr, mask)| IpPrefix { addr, mask })
    }
}

/// An IPv6 address argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Ip6(pub [u8; 16]);

impl FromArg for Ip6 {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_ip6(&la::unquote(s)).map(Ip6)
    }
}

impl std::fmt::Display for Ip6 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&la::format_ip6(&self.0))
    }
}

/// An IPv6 prefix argument (`addr/len`, `addr/mask`, or an address: /128).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Ip6Prefix {
    /// The address (not masked).
    pub addr: [u8; 16],
    /// The mask.
    pub mask: [u8; 16],
}

impl FromArg for Ip6Prefix {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_ip6_prefix(&la::unquote(s)).map(|(addr, mask)| Ip6Prefix { addr, mask })
    }
}

/// An Ethernet address argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EtherAddr(pub [u8; 6]);

impl FromArg for EtherAddr {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_ether(&la::unquote(s)).map(EtherAddr)
    }
}

/// A time interval in seconds (`1`, `10ms`, `2min`).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Seconds(pub f64);

impl FromArg for Seconds {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_seconds(s).map(Seconds)
    }
}

/// A timestamp (`1600000000.000000`), as nanoseconds since the epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TimestampArg(pub i64);

impl FromArg for TimestampArg {
    fn from_arg(s: &str) -> Result<Self, String> {
        let (secs, nanos) = la::parse_timestamp(s)?;
        Ok(TimestampArg(secs * 1_000_000_000 + nanos as i64))
    }
}

/// A bandwidth in bytes per second (`10Mbps`).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Bandwidth(pub f64);

impl FromArg for Bandwidth {
    fn from_arg(s: &str) -> Result<Self, String> {
        la::parse_bandwidth(s).map(Bandwidth)
    }
}

/// Any argument text, kept as written (not unquoted).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Raw(pub String);

impl FromArg for Raw {
    fn from_arg(s: &str) -> Result<Self, String> {
        Ok(Raw(s.to_string()))
    }
}

struct Item {
    keyword: Option<String>,
    value: String,
    used: bool,
}

/// An element's arguments, consumed by the element's configure function.
pub struct Args {
    items: Vec<Item>,
    /// Every positional item before this index has been read, so the
    /// next positional read starts here (keeps `rest()` linear).
    next_pos: usize,
}

impl Args {
    /// Splits `config`; `keywords` are the keywords the class accepts.
    pub fn new(config: &str, keywords: &[&str]) -> Args {
        let items = la::split_args(config)
            .into_iter()
            .map(|a| match la::split_keyword(&a) {
                Some((k, v)) if keywords.contains(&k) => Item {
                    keyword: Some(k.to_string()),
                    value: v.to_string(),
                    used: false,
                },
                _ => Item {
                    keyword: None,
                    value: a,
                    used: false,
                },
            })
            .collect();
        Args { items, next_pos: 0 }
    }

    fn parse<T: FromArg>(name: &str, v: &str) -> Result<T, ConfigError> {
        T::from_arg(v).map_err(|e| {
            ConfigError::new(format!(
                "{name}: {e}, found `{}`",
                pronto_lang::elide(v, MAX_ECHO)
            ))
        })
    }

    fn take_keyword(&mut self, kw: &str) -> Option<String> {
        // The last occurrence wins, as in Click.
        let mut found = None;
        for it in &mut self.items {
            if !it.used && it.keyword.as_deref() == Some(kw) {
                it.used = true;
                found = Some(it.value.clone());
            }
        }
        found
    }

    fn take_positional(&mut self) -> Option<String> {
        // Positional items are only ever taken here, in order, so none
        // before `next_pos` is unused.
        let start = self.next_pos.min(self.items.len());
        let i = start
            + self.items[start..]
                .iter()
                .position(|it| !it.used && it.keyword.is_none())?;
        self.next_pos = i + 1;
        let it = &mut self.items[i];
        it.used = true;
        Some(it.value.clone())
    }

    /// An optional keyword argument.
    pub fn read<T: FromArg>(&mut self, kw: &str) -> Result<Option<T>, ConfigError> {
        match self.take_keyword(kw) {
            Some(v) => Self::parse(kw, &v).map(Some),
            None => Ok(None),
        }
    }

    /// Every occurrence of keyword `kw`, in order (Click's `read_all`).
    pub fn read_all<T: FromArg>(&mut self, kw: &str) -> Result<Vec<T>, ConfigError> {
        let mut out = Vec::new();
        for it in &mut self.items {
            if !it.used && it.keyword.as_deref() == Some(kw) {
                it.used = true;
                out.push(Self::parse(kw, &it.value)?);
            }
        }
        Ok(out)
    }

    /// An optional keyword argument with a default.
    pub fn read_or<T: FromArg>(&mut self, kw: &str, default: T) -> Result<T, ConfigError> {
        Ok(self.read(kw)?.unwrap_or(default))
    }

    /// An optional positional argument (which may also be given as
    /// `NAME value` when the class declares NAME as a keyword).
    pub fn read_p<T: FromArg>(&mut self, name: &str) -> Result<Option<T>, ConfigError> {
        if let Some(v) = self.take_keyword(name) {
            return Self::parse(name, &v).map(Some);
        }
        match self.take_positional() {
            Some(v) if v.is_empty() => Ok(None),
            Some(v) => Self::parse(name, &v).map(Some),
            None => Ok(None),
        }
    }

    /// A mandatory positional argument.
    pub fn read_mp<T: FromArg>(&mut self, name: &str) -> Result<T, ConfigError> {
        self.read_p(name)?
            .ok_or_else(|| ConfigError::new(format!("missing mandatory {name} argument")))
    }

    /// Every positional argument not yet read, as written.
    pub fn rest(&mut self) -> Vec<String> {
        let mut v = Vec::new();
        while let Some(a) = self.take_positional() {
            v.push(a);
        }
        v
    }

    /// Number of positional arguments not yet read.
    pub fn remaining_positional(&self) -> usize {
        self.items[self.next_pos.min(self.items.len())..]
            .iter()
            .filter(|it| !it.used && it.keyword.is_none())
            .count()
    }

    /// Checks that every argument was used.
    pub fn finish(self) -> Result<(), ConfigError> {
        let extra: Vec<&Item> = self.items.iter().filter(|it| !it.used).collect();
        match extra.first() {
            None => Ok(()),
            Some(it) => match &it.keyword {
                Some(k) => Err(ConfigError::new(format!(
                    "keyword {k} given more than once"
                ))),
                None => Err(ConfigError::new(format!(
                    "too many arguments: `{}` was not expected",
                    it.value
                ))),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_only_when_declared() {
        let mut a = Args::new("TCP, 1.2.3.4, STOP true", &["STOP"]);
        assert_eq!(a.read::<bool>("STOP").expect("ok"), Some(true));
        assert_eq!(a.read_mp::<String>("PROTO").expect("ok"), "TCP");
        assert_eq!(a.read_mp::<Ip4>("ADDR").expect("ok"), Ip4([1, 2, 3, 4]));
        a.finish().expect("all used");
    }

    #[test]
    fn ipv6_addresses_and_prefixes() {
        let mut a = Args::new(
            "2001:db8::1, ::ffff:10.0.0.1/96, fe80::/ffff:ffff::, ::1/129",
            &[],
        );
        let x = a.read_mp::<Ip6>("ADDR").expect("address");
        assert_eq!(x.to_string(), "2001:db8::1");
        let p = a.read_mp::<Ip6Prefix>("P").expect("prefix");
        assert_eq!(&p.addr[10..], &[0xff, 0xff, 10, 0, 0, 1]);
        assert_eq!(la::mask6_len(&p.mask), Some(96));
        let p = a.read_mp::<Ip6Prefix>("P").expect("mask form");
        assert_eq!(la::mask6_len(&p.mask), Some(32));
        let e = a.read_mp::<Ip6Prefix>("P").expect_err("too long");
        assert_eq!(e.message, "P: expected IPv6 prefix, found `::1/129`");
        a.finish().expect("all used");
    }

    #[test]
    fn positional_by_keyword() {
        let mut a = Args::new("N 3", &["N"]);
        assert_eq!(a.read_mp::<usize>("N").expect("ok"), 3);
        a.finish().expect("all used");
    }

    #[test]
    fn errors_name_the_argument() {
        let mut a = Args::new("STOP maybe", &["STOP"]);
        let e = a.read::<bool>("STOP").expect_err("bad");
        assert_eq!(e.message, "STOP: expected boolean, found `maybe`");
        let a = Args::new("1, 2", &[]);
        let e = a.finish().expect_err("extra");
        assert_eq!(e.message, "too many arguments: `1` was not expected");
        let mut a = Args::new("", &[]);
        let e = a.read_mp::<u32>("N").expect_err("missing");
        assert_eq!(e.message, "missing mandatory N argument");
    }

    #[test]
    fn overflowing_integers_say_out_of_range() {
        let mut a = Args::new("99999999999999999999999", &[]);
        let e = a.read_mp::<u32>("CAPACITY").expect_err("too large");
        assert_eq!(
            e.message,
            "CAPACITY: integer out of range (0 to 4294967295), found `99999999999999999999999`"
        );
        let mut a = Args::new("-129", &[]);
        let e = a.read_mp::<u8>("N").expect_err("negative");
        assert_eq!(
            e.message,
            "N: integer out of range (0 to 255), found `-129`"
        );
        let mut a = Args::new("18446744073709551615", &[]);
        assert_eq!(a.read_mp::<u64>("N").expect("u64::MAX"), u64::MAX);
        let mut a = Args::new("x", &[]);
        let e = a.read_mp::<u64>("N").expect_err("not a number");
        assert_eq!(e.message, "N: expected integer, found `x`");
    }

    #[test]
    fn long_bad_arguments_are_elided_in_errors() {
        let long = "z".repeat(5000);
        let mut a = Args::new(&long, &[]);
        let e = a.read_mp::<u32>("N").expect_err("bad");
        assert_eq!(
            e.message,
            format!(
                "N: expected integer, found `{}... (4920 more characters)`",
                "z".repeat(80)
            )
        );
    }

    #[test]
    fn positional_reads_interleave_with_keywords() {
        let mut a = Args::new("a, K 1, b, c, K 2", &["K"]);
        assert_eq!(a.remaining_positional(), 3);
        assert_eq!(a.read_mp::<String>("X").expect("ok"), "a");
        assert_eq!(a.read::<u32>("K").expect("ok"), Some(2));
        assert_eq!(a.remaining_positional(), 2);
        assert_eq!(a.rest(), ["b", "c"]);
        assert_eq!(a.remaining_positional(), 0);
        assert_eq!(a.read_p::<String>("Y").expect("ok"), None);
        a.finish().expect("all used");
    }

    #[test]
    fn rest_over_many_arguments() {
        // 200,000 positional arguments: reading them all must be linear.
        let n = 200_000;
        let config = (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ");
        let mut a = Args::new(&config, &["K"]);
        assert_eq!(a.read_mp::<u32>("FIRST").expect("ok"), 0);
        let rest = a.rest();
        assert_eq!(rest.len(), n - 1);
        assert_eq!(rest[0], "1");
        assert_eq!(rest[n - 2], (n - 1).to_string());
        a.finish().expect("all used");
    }
}
