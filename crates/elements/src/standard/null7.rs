//! `Null7`: passes packets unchanged (one of Click's eight extra null
//! classes, which let a configuration tell null elements apart).

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Emits its input packets unchanged.
pub struct Null7;

impl Null7 {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Null7")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "Null7\n\n\
             Emits input packets unchanged, as Null. Null1 to Null8 are separate\n\
             classes so that a configuration can tell several null elements apart.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `Null7` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(Null7))
    }
}

impl Element for Null7 {
    #[inline]
    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn passes_unchanged() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(Null7::SPEC.keywords, Null7::configure, "", 1, 1).expect("configures");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[7, 0])], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![7, 0]]);
        let r = t::configure(Null7::SPEC.keywords, Null7::configure, "x", 1, 1);
        assert_eq!(t::config_err(r), "too many arguments: `x` was not expected");
    }
}
