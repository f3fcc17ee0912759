//! `SimpleRoundRobinSched`: pulls its inputs in turn.

use pronto_packet::{Batch, Packet};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, PullInputs, PullOne, Spec};

/// Answers each pull by pulling its inputs round-robin, starting after the
/// input that answered last. Unlike RoundRobinSched it pulls every input,
/// even one whose notifiers say it is empty.
pub struct SimpleRoundRobinSched {
    ninputs: usize,
    next: usize,
}

impl SimpleRoundRobinSched {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SimpleRoundRobinSched")
        .ports("-/1")
        .processing("l/l")
        .flags("S0")
        .profile(ActionProfile::NONE)
        .doc(
            "SimpleRoundRobinSched\n\n\
             Answers each pull by pulling its inputs in turn, starting after the one\n\
             that gave the last packet, and returning the first packet any gives.\n\
             Unlike RoundRobinSched it pulls every input, even one whose notifiers\n\
             say it is empty.\n\n\
             Ports: any number of pull inputs, 1 pull output.",
        );

    /// Configures a `SimpleRoundRobinSched` (it takes no arguments).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(SimpleRoundRobinSched {
            ninputs: ctx.ninputs,
            next: 0,
        }))
    }
}

impl PullOne for SimpleRoundRobinSched {
    fn pull_one(&mut self, _port: usize, _now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        let n = self.ninputs;
        let mut i = self.next;
        for _ in 0..n {
            let p = inputs.pull_input(i);
            i = (i + 1) % n;
            if p.is_some() {
                self.next = i;
                return p;
            }
        }
        None
    }
}

impl Element for SimpleRoundRobinSched {
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
    fn takes_turns() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            SimpleRoundRobinSched::SPEC.keywords,
            SimpleRoundRobinSched::configure,
            "",
            &[false, false],
            &[false],
        )
        .expect("ok");
        let mut q = Queues(vec![
            [t::pkt(&pool, &[0]), t::pkt(&pool, &[2])].into(),
            [
                t::pkt(&pool, &[1]),
                t::pkt(&pool, &[3]),
                t::pkt(&pool, &[4]),
            ]
            .into(),
        ]);
        let s = e.as_pull_one().expect("pull one");
        let got: Vec<u8> = std::iter::from_fn(|| s.pull_one(0, 0, &mut q))
            .map(|p| p.data()[0])
            .collect();
        assert_eq!(got, [0, 1, 2, 3, 4]);
    }
}
