//! `PullNull`: passes packets unchanged, in pull context only.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Hands pulled packets on unchanged; its ports are pull, which forces an
/// agnostic configuration around it to be pull.
pub struct PullNull;

impl PullNull {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("PullNull")
        .ports("1/1")
        .processing("l/l")
        .profile(ActionProfile::NONE)
        .doc(
            "PullNull\n\n\
             Responds to each pull by pulling a packet from its input and\n\
             returning it unchanged. Its input and output are pull, so it forces\n\
             the agnostic elements around it to pull.\n\n\
             Ports: 1 pull input, 1 pull output.",
        );

    /// Configures a `PullNull` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(PullNull))
    }
}

impl Element for PullNull {
    /// The runtime pulls the input and hands the batch here.
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
    fn passes_unchanged_and_is_pull() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            PullNull::SPEC.keywords,
            PullNull::configure,
            "",
            &[false],
            &[false],
        )
        .expect("configures");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[2])],
            1,
        );
        assert_eq!(t::bytes(&out[0]), vec![vec![1], vec![2]]);
        assert_eq!(PullNull::SPEC.port_processing(false, 0), Processing::Pull);
        assert_eq!(PullNull::SPEC.port_processing(true, 0), Processing::Pull);
        let r = t::configure(PullNull::SPEC.keywords, PullNull::configure, "x", 1, 1);
        assert_eq!(t::config_err(r), "too many arguments: `x` was not expected");
    }
}
