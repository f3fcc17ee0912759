//! `PrioSched`: a strict priority scheduler over its inputs.

use pronto_packet::{Batch, Packet};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};
use crate::{PullInputs, PullOne};

/// Answers each pull with a packet from the lowest-numbered input that has
/// one.
pub struct PrioSched {
    ninputs: usize,
}

impl PrioSched {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("PrioSched")
        .flags("S0")
        .ports("-/1")
        .processing("l/l")
        .profile(ActionProfile::NONE)
        .doc(
            "PrioSched\n\n\
             Each pull on the output pulls the inputs in order, starting from\n\
             input 0, and returns the first packet found: a strict priority\n\
             scheduler. The inputs are usually Queues.\n\n\
             Ports: any number of pull inputs, 1 pull output.\n\
             Handlers: none besides the standard ones.",
        );

    /// Configures a `PrioSched`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        ctx.args().finish()?;
        Ok(Box::new(PrioSched {
            ninputs: ctx.ninputs,
        }))
    }
}

impl PullOne for PrioSched {
    fn pull_one(&mut self, _port: usize, _now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        (0..self.ninputs).find_map(|i| {
            if inputs.input_active(i) {
                inputs.pull_input(i)
            } else {
                None
            }
        })
    }
}

impl Element for PrioSched {
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        // A batch pulled through from one input goes out unchanged.
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
    fn strict_priority() {
        let pool = Pool::new(64).expect("pool");
        let mut e = PrioSched { ninputs: 3 };
        let q = |v: &[u8]| v.iter().map(|&b| t::pkt(&pool, &[b])).collect();
        let mut qs = Queues(vec![q(&[1, 2]), q(&[]), q(&[30, 31])]);
        let got: Vec<u8> = std::iter::from_fn(|| e.pull_one(0, 0, &mut qs))
            .map(|p| p.data()[0])
            .collect();
        assert_eq!(got, vec![1, 2, 30, 31]);
        assert!(t::configure(&[], PrioSched::configure, "", 2, 1).is_ok());
        assert_eq!(
            t::config_err(t::configure(&[], PrioSched::configure, "1", 2, 1)),
            "too many arguments: `1` was not expected"
        );
    }
}
