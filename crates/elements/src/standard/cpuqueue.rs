//! `CPUQueue`: Click's per-CPU queue; in pronto one FIFO queue.

use std::collections::VecDeque;

use pronto_packet::{Batch, Packet};

use crate::{ActionProfile, ConfigCtx, ConfigError, Element, HandlerInfo, Out, Spec};

/// Stores pushed packets; any pull output takes the oldest. Click keeps
/// one queue per CPU; a pronto element runs on one thread, so one queue
/// holds them all.
pub struct CPUQueue {
    q: VecDeque<Packet>,
    capacity: usize,
    drops: u64,
}

impl CPUQueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("CPUQueue")
        .ports("1/1-")
        .processing("h/l")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "CPUQueue([CAPACITY])\n\n\
             Stores incoming packets in a first-in-first-out queue of CAPACITY\n\
             packets (default 128) and hands them out on pulls from any output.\n\
             Packets arriving at a full queue are dropped and counted. Click keeps\n\
             one such queue per CPU; pronto's element runs on one thread and keeps\n\
             one.\n\n\
             Ports: 1 push input, 1 or more pull outputs.\n\
             Handlers:\n  capacity, drops (read)",
        );

    /// Configures a `CPUQueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let capacity: u32 = a.read_p("CAPACITY")?.unwrap_or(128);
        a.finish()?;
        Ok(Box::new(CPUQueue {
            q: VecDeque::with_capacity((capacity as usize).min(4096)),
            capacity: capacity as usize,
            drops: 0,
        }))
    }
}

impl Element for CPUQueue {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        for p in batch.drain() {
            if self.q.len() < self.capacity {
                self.q.push_back(p);
            } else {
                self.drops += 1;
            }
        }
    }

    fn is_pull_source(&self) -> bool {
        true
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, _out: &mut Out<'_>) {
        let n = max.min(batch.room()).min(self.q.len());
        for p in self.q.drain(..n) {
            let _ = batch.push(p);
        }
    }

    fn held(&self) -> usize {
        self.q.len()
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("queue_full", self.drops);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("capacity"), HandlerInfo::read("drops")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, crate::HandlerError> {
        match name {
            "capacity" => Ok(self.capacity.to_string()),
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
    fn fifo_with_drops() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            CPUQueue::SPEC.keywords,
            CPUQueue::configure,
            "2",
            &[true],
            &[false, false],
        )
        .expect("ok");
        t::push(
            e.as_mut(),
            &pool,
            vec![
                t::pkt(&pool, &[1]),
                t::pkt(&pool, &[2]),
                t::pkt(&pool, &[3]),
            ],
            2,
        );
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
        assert_eq!(e.held(), 2);
        let (got, _) = t::pull(e.as_mut(), &pool, 1, 8, 2, 0);
        assert_eq!(t::bytes(&got), vec![vec![1], vec![2]]);
    }
}
