//! `IPRewriterPatterns`: named patterns for the rewriters.

use crate::tcpudp::rwcore::Pattern;
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Holds named rewrite patterns, `NAME SADDR SPORT DADDR DPORT`, that
/// rewriter input specifications refer to as `pattern NAME FOUTPUT
/// ROUTPUT`. It has no ports.
pub struct IPRewriterPatterns {
    patterns: Vec<(String, Pattern)>,
}

impl IPRewriterPatterns {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("IPRewriterPatterns")
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "IPRewriterPatterns(NAME PATTERN, ...)\n\n\
             Defines named patterns for IPRewriter, TCPRewriter and UDPRewriter. Each\n\
             argument is a name followed by a pattern, 'SADDR SPORT DADDR DPORT' (see\n\
             IPRewriter). Names must be distinct across the configuration.\n\n\
             Ports: none.",
        );

    /// Parses the named patterns of a configuration string (Click's error
    /// texts: "pattern 'X' already defined", "bad source port", ...).
    pub fn parse(config: &str) -> Result<Vec<(String, Pattern)>, ConfigError> {
        let mut out: Vec<(String, Pattern)> = Vec::new();
        for arg in pronto_lang::args::split_args(config) {
            let mut words = arg.split_whitespace();
            let Some(name) = words.next() else { continue };
            if out.iter().any(|(n, _)| n == name) {
                return Err(ConfigError::new(format!(
                    "pattern '{name}' already defined"
                )));
            }
            let words: Vec<&str> = words.collect();
            let p = Pattern::parse(&words).map_err(ConfigError::new)?;
            out.push((name.to_string(), p));
        }
        Ok(out)
    }

    /// Configures an `IPRewriterPatterns`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(IPRewriterPatterns {
            patterns: Self::parse(ctx.config)?,
        }))
    }

    /// The pattern called `name`, if defined here.
    pub fn get(&self, name: &str) -> Option<&Pattern> {
        self.patterns
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, p)| p)
    }
}

impl Element for IPRewriterPatterns {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_named_patterns() {
        let v = IPRewriterPatterns::parse("to_world 10.0.0.1 1024-65535# - -, lb - - 10.1.0.1 80")
            .expect("ok");
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, "to_world");
        assert_eq!(v[0].1.unparse(), "10.0.0.1 1024-65535 - -");
        assert_eq!(v[1].1.unparse(), "- - 10.1.0.1 80");
        let e = IPRewriterPatterns::parse("a - - - -, a - - - -").expect_err("dup");
        assert_eq!(e.message, "pattern 'a' already defined");
        let e = IPRewriterPatterns::parse("a - 0 - -").expect_err("bad");
        assert_eq!(e.message, "bad source port");
    }

    #[test]
    fn named_pattern_in_a_rewriter() {
        let pats = IPRewriterPatterns::parse("nat 10.0.0.1 1024-65535# - -").expect("ok");
        let lookup = |n: &str| pats.iter().find(|(k, _)| k == n).map(|(_, p)| p.clone());
        let push = [true];
        let ctx = ConfigCtx {
            name: "rw",
            config: "pattern nat 0 0",
            ninputs: 1,
            noutputs: 1,
            base_dir: std::path::Path::new("."),
            keywords: crate::tcpudp::iprewriter::IPRewriter::SPEC.keywords,
            output_push: &push,
            input_push: &push,
            peers: &crate::NoPeers,
        };
        let e = match crate::tcpudp::iprewriter::IPRewriter::configure_with_patterns(&ctx, &lookup)
        {
            Ok(e) => e,
            Err(e) => panic!("configure failed: {e}"),
        };
        assert_eq!(
            e.read_handler("patterns").expect("h"),
            "10.0.0.1 1024-65535 - -\n"
        );
    }
}
