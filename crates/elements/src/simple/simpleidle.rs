//! `SimpleIdle`: has ports, never moves a packet, and counts what it gets.

use pronto_packet::Batch;

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec};

/// Drops (and counts) every packet pushed to it; answers pulls with
/// nothing. Unlike Idle, it offers no notifier.
pub struct SimpleIdle {
    drops: u64,
}

impl SimpleIdle {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SimpleIdle")
        .ports("-/-")
        .processing("a/a")
        .flow("x/y")
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "SimpleIdle\n\n\
             Has any number of inputs and outputs, never pulls and never sends a\n\
             packet. Packets pushed to it are dropped and counted. Unlike Idle it\n\
             offers no notifiers.\n\n\
             Ports: any number of inputs and outputs (agnostic).\n\
             Handlers:\n  drops (read)  packets pushed to it",
        );

    /// Configures a `SimpleIdle` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(SimpleIdle { drops: 0 }))
    }
}

impl Element for SimpleIdle {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        self.drops += batch.len() as u64;
        batch.clear();
    }

    fn pull_from(&mut self, _port: usize) -> crate::PullFrom {
        crate::PullFrom::Nothing
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("discarded", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, crate::HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(crate::HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn drops_and_counts() {
        let pool = Pool::new(8).expect("pool");
        let mut e =
            t::configure(SimpleIdle::SPEC.keywords, SimpleIdle::configure, "", 1, 1).expect("ok");
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[2])],
            1,
        );
        assert!(out[0].is_empty());
        assert_eq!(t::read(e.as_ref(), "drops"), "2");
        assert_eq!(e.pull_from(0), crate::PullFrom::Nothing);
        assert!(!SimpleIdle::SPEC.flows(0, 0));
    }
}
