//! `IPRewriterPatterns`: named patterns for the rewriters.

use std::sync::{Arc, Mutex};

use crate::tcpudp::rwcore::{lock, named_patterns, PatternSlot, PatternTable, SharedPattern};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Holds named rewrite patterns, `NAME SADDR SPORT DADDR DPORT`, that
/// rewriter input specifications (and mappers) anywhere in the
/// configuration refer to as `pattern NAME FOUTPUT ROUTPUT`. It has no
/// ports. A named pattern is one object shared by all its users.
pub struct IPRewriterPatterns {
    table: Arc<PatternTable>,
}

impl IPRewriterPatterns {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPRewriterPatterns")
        .ports("0/0")
        .processing("a/a")
        .phase(crate::PHASE_INFO)
        .profile(ActionProfile::NONE)
        .doc(
            "IPRewriterPatterns(NAME PATTERN, ...)\n\n\
             Defines named patterns for IPRewriter, TCPRewriter, UDPRewriter and the\n\
             mappers. Each argument is a name followed by a pattern, 'SADDR SPORT DADDR\n\
             DPORT' (see IPRewriter), or the name of a pattern defined earlier. Names\n\
             must be distinct across the configuration; rewriters refer to them as\n\
             'pattern NAME FOUTPUT ROUTPUT'. Users of one name share its state (the\n\
             next port of a sequential range).\n\n\
             Ports: none.",
        );

    /// Parses the named patterns of a configuration string; `earlier` holds
    /// the names other `IPRewriterPatterns` defined (Click's error texts:
    /// "pattern 'X' already defined", "bad source port", ...).
    pub fn parse(
        config: &str,
        earlier: &[(String, SharedPattern)],
    ) -> Result<Vec<(String, SharedPattern)>, ConfigError> {
        let mut out: Vec<(String, SharedPattern)> = Vec::new();
        for arg in pronto_lang::args::split_args(config) {
            let mut words = arg.split_whitespace();
            let Some(name) = words.next() else { continue };
            if out.iter().chain(earlier).any(|(n, _)| n == name) {
                return Err(ConfigError::new(format!(
                    "pattern '{name}' already defined"
                )));
            }
            let words: Vec<&str> = words.collect();
            let known: Vec<(String, SharedPattern)> =
                earlier.iter().chain(out.iter()).cloned().collect();
            let p = match PatternSlot::parse(&words, &known).map_err(ConfigError::new)? {
                PatternSlot::Named(p) => p,
                PatternSlot::Own(p) => Arc::new(Mutex::new(p)),
            };
            out.push((name.to_string(), p));
        }
        Ok(out)
    }

    /// Configures an `IPRewriterPatterns`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let earlier = named_patterns(ctx);
        Ok(Box::new(IPRewriterPatterns {
            table: Arc::new(PatternTable {
                patterns: Self::parse(ctx.config, &earlier)?,
            }),
        }))
    }

    /// The pattern called `name`, if defined here, as Click prints it.
    pub fn get(&self, name: &str) -> Option<String> {
        self.table
            .patterns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| lock(p).unparse())
    }
}

impl Element for IPRewriterPatterns {
    fn shared(&self) -> Option<crate::Shared> {
        Some(self.table.clone() as crate::Shared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcpudp::testutil::TestPeers;

    #[test]
    fn parses_named_patterns() {
        let v = IPRewriterPatterns::parse(
            "to_world 10.0.0.1 1024-65535# - -, lb - - 10.1.0.1 80, again lb",
            &[],
        )
        .expect("ok");
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].0, "to_world");
        assert_eq!(lock(&v[0].1).unparse(), "10.0.0.1 1024-65535 - -");
        assert_eq!(lock(&v[1].1).unparse(), "- - 10.1.0.1 80");
        assert!(Arc::ptr_eq(&v[1].1, &v[2].1));
        let e = IPRewriterPatterns::parse("a - - - -, a - - - -", &[]).expect_err("dup");
        assert_eq!(e.message, "pattern 'a' already defined");
        let e = IPRewriterPatterns::parse("lb - - - -", &v).expect_err("dup");
        assert_eq!(e.message, "pattern 'lb' already defined");
        let e = IPRewriterPatterns::parse("a - 0 - -", &[]).expect_err("bad");
        assert_eq!(e.message, "bad source port");
        let e = IPRewriterPatterns::parse("a nope", &[]).expect_err("bad");
        assert_eq!(e.message, "no such pattern 'nope'");
    }

    #[test]
    fn named_pattern_shared_by_two_rewriters() {
        use crate::tcpudp::iprewriter::IPRewriter;
        use crate::tcpudp::testutil::{configure_with, packet, run};
        use pronto_packet::Pool;
        let mut peers = TestPeers::default();
        let pats = configure_with(
            IPRewriterPatterns::configure,
            &IPRewriterPatterns::SPEC,
            "nat 10.0.0.1 1024-65535# - -",
            0,
            0,
            &peers,
        )
        .expect("patterns");
        peers.add("pats", "IPRewriterPatterns", pats.as_ref());
        let mut a = configure_with(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern nat 0 0",
            1,
            1,
            &peers,
        )
        .expect("rw a");
        let mut b = configure_with(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern nat 0 0",
            1,
            1,
            &peers,
        )
        .expect("rw b");
        assert_eq!(
            a.read_handler("patterns").expect("h"),
            "10.0.0.1 1024-65535 - -\n"
        );
        let err = match configure_with(
            IPRewriter::configure,
            &IPRewriter::SPEC,
            "pattern other 0 0",
            1,
            1,
            &peers,
        ) {
            Ok(_) => panic!("should fail"),
            Err(e) => e,
        };
        assert_eq!(err.message, "input spec 0: no such pattern 'other'");
        // UDP 192.168.1.2:5000 -> 8.8.8.8:53 through each rewriter: the
        // shared sequential pattern hands out 1024, then 1025.
        let pool = Pool::new(8).expect("pool");
        let udp = [
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, // IPv4, UDP, 28 bytes
            192, 168, 1, 2, 8, 8, 8, 8, // addresses
            0x13, 0x88, 0, 53, 0, 8, 0, 0, // ports 5000 -> 53, no checksum
        ];
        let o = run(
            a.as_mut(),
            0,
            vec![packet(&pool, &udp, Some((0, 20)))],
            1,
            &pool,
            0,
        );
        assert_eq!(&o[0][0][20..22], &1024u16.to_be_bytes());
        let o = run(
            b.as_mut(),
            0,
            vec![packet(&pool, &udp, Some((0, 20)))],
            1,
            &pool,
            0,
        );
        assert_eq!(&o[0][0][20..22], &1025u16.to_be_bytes());
    }
}
