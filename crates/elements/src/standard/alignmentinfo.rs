//! `AlignmentInfo`: the packet data alignment elements can rely on.

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec, PHASE_INFO};

/// Checks `ELEMENT CHUNK OFFSET [CHUNK OFFSET...]` entries. pronto's
/// elements read headers without assuming any alignment, so the entries
/// change nothing; they are checked so that Click configurations run
/// unchanged.
pub struct AlignmentInfo;

impl AlignmentInfo {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AlignmentInfo")
        .ports("0/0")
        .processing("a/a")
        .phase(PHASE_INFO)
        .profile(ActionProfile::NONE)
        .doc(
            "AlignmentInfo(ELEMENT CHUNK OFFSET [CHUNK OFFSET...], ...)\n\n\
             Says how packet data arriving at each input of ELEMENT is aligned: at\n\
             input i, the address modulo CHUNK is OFFSET. Tools such as click-align\n\
             write it; pronto's elements make no alignment assumptions, so it only\n\
             checks the entries.\n\n\
             Ports: none.",
        );

    /// Configures an `AlignmentInfo`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        for arg in pronto_lang::args::split_args(ctx.config) {
            let words = pronto_lang::args::split_words(&arg);
            if words.is_empty() {
                continue;
            }
            if words.len() % 2 != 1 {
                return Err(ConfigError::new(
                    "expected 'ELEMENTNAME CHUNK OFFSET [CHUNK OFFSET...]'",
                ));
            }
            for pair in words[1..].chunks(2) {
                if pronto_lang::args::parse_i64(&pair[0]).is_err() {
                    return Err(ConfigError::new("expected CHUNK"));
                }
                if pronto_lang::args::parse_i64(&pair[1]).is_err() {
                    return Err(ConfigError::new("expected OFFSET"));
                }
            }
        }
        Ok(Box::new(AlignmentInfo))
    }
}

impl Element for AlignmentInfo {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;

    #[test]
    fn checks_entries() {
        let ok = t::configure(
            AlignmentInfo::SPEC.keywords,
            AlignmentInfo::configure,
            "src 8 2, dst 4 0 4 2",
            0,
            0,
        );
        assert!(ok.is_ok());
        let err = |cfg: &str| {
            t::config_err(t::configure(
                AlignmentInfo::SPEC.keywords,
                AlignmentInfo::configure,
                cfg,
                0,
                0,
            ))
        };
        assert_eq!(
            err("src 8"),
            "expected 'ELEMENTNAME CHUNK OFFSET [CHUNK OFFSET...]'"
        );
        assert_eq!(err("src x 2"), "expected CHUNK");
        assert_eq!(err("src 8 y"), "expected OFFSET");
    }
}
