//! `PushNull`: passes packets unchanged, in push context only.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Emits its input packets unchanged; its ports are push, which forces an
/// agnostic configuration around it to be push.
pub struct PushNull;

impl PushNull {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("PushNull")
        .ports("1/1")
        .processing("h/h")
        .profile(ActionProfile::NONE)
        .doc(
            "PushNull\n\n\
             Emits input packets unchanged. Its input and output are push, so it\n\
             forces the agnostic elements around it to push.\n\n\
             Ports: 1 push input, 1 push output.",
        );

    /// Configures a `PushNull` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(PushNull))
    }
}

impl Element for PushNull {
    #[inline]
    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::Processing;
    use pronto_packet::Pool;

    #[test]
    fn passes_unchanged_and_is_push() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(PushNull::SPEC.keywords, PushNull::configure, "", 1, 1)
            .expect("configures");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[7, 8])], 1);
        assert_eq!(t::bytes(&out[0]), vec![vec![7, 8]]);
        assert_eq!(PushNull::SPEC.port_processing(false, 0), Processing::Push);
        assert_eq!(PushNull::SPEC.port_processing(true, 0), Processing::Push);
    }
}
