//! `SimplePrioSched`: pulls from the first input that has a packet.

use pronto_packet::{Batch, Packet};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, PullInputs, PullOne, Spec};

/// Answers each pull by pulling input 0, then 1, ..., until one answers.
/// Unlike PrioSched it does not skip inputs whose notifiers are asleep.
pub struct SimplePrioSched {
    ninputs: usize,
}

impl SimplePrioSched {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SimplePrioSched")
        .ports("-/1")
        .processing("l/l")
        .flags("S0")
        .profile(ActionProfile::NONE)
        .doc(
            "SimplePrioSched\n\n\
             Answers each pull by pulling its inputs in order, 0 first, and returning\n\
             the first packet any gives. Unlike PrioSched it pulls every input, even\n\
             one whose notifiers say it is empty.\n\n\
             Ports: any number of pull inputs, 1 pull output.",
        );

    /// Configures a `SimplePrioSched` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(SimplePrioSched {
            ninputs: ctx.ninputs,
        }))
    }
}

impl PullOne for SimplePrioSched {
    fn pull_one(&mut self, _port: usize, _now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        (0..self.ninputs).find_map(|i| inputs.pull_input(i))
    }
}

impl Element for SimplePrioSched {
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::pullinputs::testing::Queues;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn first_input_first() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            SimplePrioSched::SPEC.keywords,
            SimplePrioSched::configure,
            "",
            &[false, false],
            &[false],
        )
        .expect("ok");
        let mut q = Queues(vec![
            [t::pkt(&pool, &[0])].into(),
            [t::pkt(&pool, &[1]), t::pkt(&pool, &[2])].into(),
        ]);
        let s = e.as_pull_one().expect("pull one");
        let got: Vec<u8> = std::iter::from_fn(|| s.pull_one(0, 0, &mut q))
            .map(|p| p.data()[0])
            .collect();
        assert_eq!(got, [0, 1, 2]);
    }
}
