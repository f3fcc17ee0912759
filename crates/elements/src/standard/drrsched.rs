//! `DRRSched`: a deficit round-robin scheduler over its inputs.

use pronto_packet::{Batch, Packet};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Out, Spec};
use crate::{PullInputs, PullOne};

struct PortInfo {
    head: Option<Packet>,
    deficit: i64,
}

/// Deficit round robin (Shreedhar and Varghese): each input earns QUANTUM
/// bytes per round and sends packets while its deficit covers them.
pub struct DRRSched {
    quantum: i32,
    next: usize,
    ports: Vec<PortInfo>,
}

impl DRRSched {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("DRRSched")
        .flags("S0")
        .ports("-/1")
        .processing("l/l")
        .keywords(&["QUANTUM"])
        .profile(ActionProfile::NONE)
        .doc(
            "DRRSched([QUANTUM])\n\n\
             Deficit round robin scheduling of the inputs: each visit adds\n\
             QUANTUM bytes (default 500) to the next input's deficit; a packet\n\
             goes out when its length fits the deficit, otherwise it waits at\n\
             the head of its input and the scheduler moves on. An input found\n\
             empty loses its deficit.\n\n\
             Ports: any number of pull inputs, 1 pull output.\n\
             Keywords:\n  QUANTUM  integer > 0\n\
             Handlers: none besides the standard ones.",
        );

    /// Configures a `DRRSched`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let quantum: i32 = a.read_p("QUANTUM")?.unwrap_or(500);
        a.finish()?;
        if quantum <= 0 {
            return Err(ConfigError::new("bad QUANTUM"));
        }
        Ok(Box::new(Self::new(quantum, ctx.ninputs)))
    }

    fn new(quantum: i32, ninputs: usize) -> DRRSched {
        DRRSched {
            quantum,
            next: 0,
            ports: (0..ninputs)
                .map(|_| PortInfo {
                    head: None,
                    deficit: 0,
                })
                .collect(),
        }
    }
}

impl PullOne for DRRSched {
    fn pull_one(&mut self, _port: usize, _now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        let n = self.ports.len();
        for _ in 0..n {
            let next = self.next;
            let pi = &mut self.ports[next];
            let p = match pi.head.take() {
                Some(p) => Some(p),
                None => inputs.pull_input(next),
            };
            match p {
                None => pi.deficit = 0,
                Some(p) => {
                    let len = p.len() as i64;
                    if len <= pi.deficit {
                        pi.deficit -= len;
                        return Some(p);
                    }
                    pi.head = Some(p);
                }
            }
            self.next += 1;
            if self.next >= n {
                self.next = 0;
            }
            self.ports[self.next].deficit += i64::from(self.quantum);
        }
        None
    }
}

impl Element for DRRSched {
    fn held(&self) -> usize {
        self.ports.iter().filter(|i| i.head.is_some()).count()
    }

    fn capacity(&self) -> usize {
        self.ports.len()
    }

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
    fn deficit_round_robin() {
        let pool = Pool::new(64).expect("pool");
        let mut e = DRRSched::new(500, 2);
        // Input 0: 400-byte packets; input 1: 100-byte packets.
        let q = |len: usize, tag: u8, n: usize| {
            (0..n)
                .map(|_| t::pkt(&pool, &vec![tag; len]))
                .collect::<std::collections::VecDeque<_>>()
        };
        let mut qs = Queues(vec![q(400, 0, 3), q(100, 1, 8)]);
        let got: Vec<Option<u8>> = (0..12)
            .map(|_| e.pull_one(0, 0, &mut qs).map(|p| p.data()[0]))
            .collect();
        // Input 0 starts with no deficit; input 1 gets 500 bytes = 5
        // packets, then input 0 one 400-byte packet per 500-byte round. A
        // pull that visits every input once without sending returns
        // nothing, as in Click.
        let (s0, s1) = (Some(0), Some(1));
        assert_eq!(got, vec![s1, s1, s1, s1, s1, s0, s1, s1, s1, s0, None, s0]);
        assert_eq!(
            t::config_err(t::configure(&["QUANTUM"], DRRSched::configure, "0", 2, 1)),
            "bad QUANTUM"
        );
    }
}
