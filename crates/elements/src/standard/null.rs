//! `Null`: passes packets unchanged.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Emits its input packets unchanged.
pub struct Null;

impl Null {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Null")
        .ports("1/1")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "Null\n\n\
             Emits input packets unchanged. Useful as a placeholder and for\n\
             benchmarking.\n\n\
             Ports: 1 input, 1 output (agnostic).",
        );

    /// Configures a `Null` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(Null))
    }
}

impl Element for Null {
    fn one_for_one(&self) -> bool {
        true
    }

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
        let pool = Pool::new(64).expect("pool");
        let mut e = t::configure(Null::SPEC.keywords, Null::configure, "", 1, 1).expect("ok");
        // Two packets: 3 and 1 bytes of payload.
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1, 2, 3]), t::pkt(&pool, &[9])],
            1,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![1, 2, 3], vec![9]]);
    }

    #[test]
    fn rejects_arguments() {
        let r = t::configure(Null::SPEC.keywords, Null::configure, "1", 1, 1);
        assert_eq!(t::config_err(r), "too many arguments: `1` was not expected");
    }
}
