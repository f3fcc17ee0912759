//! `RoundRobinSched`: a round-robin scheduler over its inputs.

use pronto_packet::{Batch, Packet};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};
use crate::{PullInputs, PullOne};

/// Answers each pull by trying the inputs in turn, starting after the one
/// that gave the last packet.
pub struct RoundRobinSched {
    ninputs: usize,
    next: usize,
}

impl RoundRobinSched {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("RoundRobinSched")
        .flags("S0")
        .ports("-/1")
        .processing("l/l")
        .profile(ActionProfile::NONE)
        .doc(
            "RoundRobinSched\n\n\
             Each pull on the output pulls the inputs in turn until one gives a\n\
             packet; the next pull starts at the input after that one: a round\n\
             robin scheduler. The inputs are usually Queues.\n\n\
             Ports: any number of pull inputs, 1 pull output.\n\
             Handlers: none besides the standard ones.",
        );

    /// Configures a `RoundRobinSched`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(RoundRobinSched {
            ninputs: ctx.ninputs,
            next: 0,
        }))
    }
}

impl PullOne for RoundRobinSched {
    fn pull_one(&mut self, _port: usize, _now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        let n = self.ninputs;
        let mut i = self.next;
        for _ in 0..n {
            let p = if inputs.input_active(i) {
                inputs.pull_input(i)
            } else {
                None
            };
            i += 1;
            if i >= n {
                i = 0;
            }
            if p.is_some() {
                self.next = i;
                return p;
            }
        }
        None
    }
}

impl Element for RoundRobinSched {
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }
}

#[cfg(test)]
mod tests {
    use super::super::pullinputs::testing::Queues;
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn round_robin() {
        let pool = Pool::new(64).expect("pool");
        let mut e = RoundRobinSched {
            ninputs: 3,
            next: 0,
        };
        let q = |v: &[u8]| v.iter().map(|&b| t::pkt(&pool, &[b])).collect();
        let mut qs = Queues(vec![q(&[1, 2, 3]), q(&[]), q(&[30])]);
        let got: Vec<u8> = std::iter::from_fn(|| e.pull_one(0, 0, &mut qs))
            .map(|p| p.data()[0])
            .collect();
        assert_eq!(got, vec![1, 30, 2, 3]);
    }
}
