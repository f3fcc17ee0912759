//! `Idle`: never emits a packet; discards what it receives.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};

/// Discards pushed packets and never produces any.
pub struct Idle {
    /// Packets pushed to it, discarded.
    discarded: u64,
}

impl Idle {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Idle")
        .flow("x/y")
        .flags("S0")
        .ports("-/-")
        .processing("a/a")
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "Idle\n\n\
             Never pushes a packet to any output or pulls a packet from any\n\
             input. Packets pushed to it are discarded. Often used to leave no\n\
             port unconnected.\n\n\
             Ports: any number of inputs and outputs (agnostic).",
        );

    /// Configures an `Idle` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(Idle { discarded: 0 }))
    }
}

impl Element for Idle {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        self.discarded += batch.len() as u64;
        batch.clear();
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("discarded", self.discarded);
    }

    fn is_pull_source(&self) -> bool {
        true
    }

    fn pull(&mut self, _port: usize, _batch: &mut Batch, _max: usize, _out: &mut Out<'_>) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn discards_and_gives_nothing() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure(Idle::SPEC.keywords, Idle::configure, "", 2, 1).expect("ok");
        let out = t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert!(out[0].is_empty());
        assert_eq!(pool.available(), 8);
        assert_eq!(t::drop_counters(e.as_ref()), vec![("discarded", 1)]);
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 32, 1, 0);
        assert!(got.is_empty());
    }
}
