//! `AggregateFirst`: passes the first packet of each aggregate.

use std::collections::HashSet;

use pronto_packet::Batch;

use super::aggregate;
use crate::{
    push_each, ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
};

/// Lets through one packet per aggregate annotation value.
pub struct AggregateFirst {
    seen: HashSet<u32>,
    out1: bool,
    drops: u64,
}

impl AggregateFirst {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("AggregateFirst")
        .ports("1/1-2")
        .processing("a/ah")
        .keywords(&["NOTIFIER"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "AggregateFirst([keyword NOTIFIER])\n\n\
             Passes the first packet with each aggregate annotation value; later\n\
             ones go to output 1 (dropped and counted without one). NOTIFIER (an\n\
             AggregateIPFlows or AggregateIPAddrPair) is accepted; Click uses it to\n\
             forget finished aggregates and save memory, which changes nothing\n\
             since those elements never reuse a number.\n\n\
             Ports: 1 input (agnostic); 1 or 2 outputs (agnostic, push).\n\
             Handlers:\n  drops (read)",
        );

    /// Configures an `AggregateFirst`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let _notifier: Option<String> = a.read("NOTIFIER")?;
        a.finish()?;
        Ok(Box::new(AggregateFirst {
            seen: HashSet::with_capacity(1024),
            out1: ctx.noutputs > 1,
            drops: 0,
        }))
    }
}

impl Element for AggregateFirst {
    fn push(&mut self, _port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        let mut drops = 0;
        let out1 = self.out1;
        push_each(batch, out, |p, _| {
            if self.seen.insert(aggregate(p)) {
                Some(0)
            } else if out1 {
                Some(1)
            } else {
                drops += 1;
                None
            }
        });
        self.drops += drops;
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("not_first", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::set_aggregate;
    use super::*;
    use crate::standard::test_support::{configure, pkt, push};
    use pronto_packet::Pool;

    #[test]
    fn first_only() {
        let pool = Pool::new(16).expect("pool");
        let mut e = configure(&["NOTIFIER"], AggregateFirst::configure, "", 1, 2).expect("ok");
        let pkts = [1u32, 2, 1, 3, 2]
            .iter()
            .map(|&a| {
                let mut p = pkt(&pool, &[a as u8]);
                set_aggregate(&mut p, a);
                p
            })
            .collect();
        let outs = push(e.as_mut(), &pool, pkts, 2);
        let agg = |v: &Vec<pronto_packet::Packet>| v.iter().map(aggregate).collect::<Vec<_>>();
        assert_eq!(agg(&outs[0]), [1, 2, 3]);
        assert_eq!(agg(&outs[1]), [1, 2]);
    }
}
