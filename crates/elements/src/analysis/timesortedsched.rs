//! `TimeSortedSched`: merges timestamp-sorted packet streams.

use pronto_packet::{Batch, Packet};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, PullInputs,
    PullOne, Spec,
};

/// Answers each pull with the earliest-timestamped packet among those it
/// holds from its inputs (up to BUFFER per input).
pub struct TimeSortedSched {
    /// A binary min-heap by timestamp, kept exactly as Click's heap
    /// functions keep it (so ties leave in Click's order): (packet, input).
    heap: Vec<(Packet, usize)>,
    /// Room left per input.
    space: Vec<usize>,
    /// Inputs with room, in Click's bookkeeping order.
    ready: Vec<usize>,
    stop: bool,
    last_emission: i64,
    well_ordered: bool,
}

impl TimeSortedSched {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("TimeSortedSched")
        .ports("-/1")
        .processing("l/l")
        .keywords(&["STOP", "BUFFER"])
        .profile(ActionProfile::NONE)
        .doc(
            "TimeSortedSched([keywords STOP, BUFFER])\n\n\
             Answers each pull on its output with the packet with the earliest\n\
             timestamp among those it holds, pulling its inputs to keep up to BUFFER\n\
             packets (default 1) from each. Its inputs should each deliver packets in\n\
             timestamp order; a larger BUFFER copes with slight disorder. With STOP\n\
             true (default false) it stops the driver when it holds nothing and no\n\
             input gives a packet (pronto has no notifiers: an input that has nothing\n\
             at that moment counts as exhausted).\n\n\
             Ports: any number of pull inputs, 1 pull output.\n\
             Handlers:\n  well_ordered (read)  false once a packet left earlier than the one\n  \
             before it",
        );

    /// Configures a `TimeSortedSched`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let stop = a.read_or("STOP", false)?;
        let buffer: i64 = a.read_or("BUFFER", 1)?;
        a.finish()?;
        if buffer <= 0 {
            return Err(ConfigError::new("BUFFER must be at least 1"));
        }
        let n = ctx.ninputs;
        let buffer = buffer.min(1 << 20) as usize;
        Ok(Box::new(TimeSortedSched {
            heap: Vec::with_capacity(n.saturating_mul(buffer).min(1 << 16)),
            space: vec![buffer; n],
            ready: (0..n).collect(),
            stop,
            last_emission: 0,
            well_ordered: true,
        }))
    }

    fn less(&self, a: usize, b: usize) -> bool {
        self.heap[a].0.timestamp_ns() < self.heap[b].0.timestamp_ns()
    }

    /// Sifts the last element up (Click's `push_heap`).
    fn push_heap(&mut self) {
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if !self.less(i, parent) {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    /// Removes the top (Click's `pop_heap`: the last element moves to the
    /// top and sifts down, preferring the left child on ties).
    fn pop_heap(&mut self) -> Option<(Packet, usize)> {
        if self.heap.is_empty() {
            return None;
        }
        let top = self.heap.swap_remove(0);
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let mut smallest = i;
            let trial = 2 * i + 1;
            if trial < n && self.less(trial, smallest) {
                smallest = trial;
            }
            if trial + 1 < n && self.less(trial + 1, smallest) {
                smallest = trial + 1;
            }
            if smallest == i {
                break;
            }
            self.heap.swap(i, smallest);
            i = smallest;
        }
        Some(top)
    }
}

impl PullOne for TimeSortedSched {
    fn pull_one(&mut self, _port: usize, _now: i64, inputs: &mut dyn PullInputs) -> Option<Packet> {
        let mut signals_on = false;
        // Fill up from the inputs with room, last first.
        let mut r = self.ready.len();
        while r > 0 {
            r -= 1;
            let i = self.ready[r];
            while let Some(p) = inputs.pull_input(i) {
                signals_on = true;
                self.heap.push((p, i));
                self.push_heap();
                self.space[i] -= 1;
                if self.space[i] == 0 {
                    self.ready.swap_remove(r);
                    break;
                }
            }
        }
        match self.pop_heap() {
            Some((p, i)) => {
                let t = p.timestamp_ns();
                if t != 0 {
                    if self.last_emission != 0 && t < self.last_emission {
                        self.well_ordered = false;
                    }
                    self.last_emission = t;
                }
                self.space[i] += 1;
                if self.space[i] == 1 {
                    self.ready.push(i);
                }
                Some(p)
            }
            None => {
                if self.stop && !signals_on {
                    inputs.stop_driver();
                }
                None
            }
        }
    }
}

impl Element for TimeSortedSched {
    fn as_pull_one(&mut self) -> Option<&mut dyn PullOne> {
        Some(self)
    }

    fn push(&mut self, _port: usize, _batch: &mut Batch, out: &mut Out<'_>) {
        out.pass(0);
    }

    fn held(&self) -> usize {
        self.heap.len()
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[HandlerInfo::read("well_ordered")];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "well_ordered" => Ok(self.well_ordered.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::pullinputs::testing::Queues;
    use crate::standard::test_support::{config_err, configure, pkt, read};
    use pronto_packet::Pool;
    use std::collections::VecDeque;

    struct Stopping(Queues, u32);

    impl PullInputs for Stopping {
        fn pull_input(&mut self, input: usize) -> Option<Packet> {
            self.0.pull_input(input)
        }
        fn stop_driver(&mut self) {
            self.1 += 1;
        }
    }

    fn run(conf: &str, a: &[i64], b: &[i64]) -> (Vec<i64>, u32, Box<dyn Element>) {
        let pool = Pool::new(32).expect("pool");
        let mut e =
            configure(&["STOP", "BUFFER"], TimeSortedSched::configure, conf, 2, 1).expect("ok");
        let q = |ts: &[i64]| -> VecDeque<Packet> {
            ts.iter()
                .map(|&t| {
                    let mut p = pkt(&pool, &[0]);
                    p.set_timestamp_ns(t);
                    p
                })
                .collect()
        };
        let mut inputs = Stopping(Queues(vec![q(a), q(b)]), 0);
        let mut got = Vec::new();
        {
            let tss = e.as_pull_one().expect("pull one");
            while let Some(p) = tss.pull_one(0, 0, &mut inputs) {
                got.push(p.timestamp_ns());
            }
        }
        (got, inputs.1, e)
    }

    #[test]
    fn merges_by_timestamp() {
        let (got, stops, e) = run("STOP true", &[1, 2, 10, 12, 55], &[3, 8, 9, 14]);
        assert_eq!(got, [1, 2, 3, 8, 9, 10, 12, 14, 55]);
        assert_eq!(stops, 1);
        assert_eq!(read(e.as_ref(), "well_ordered"), "true");
        // An unsorted input: BUFFER 1 passes the disorder on.
        let (got, _, e) = run("STOP true", &[1, 10, 2, 12, 55], &[3, 8, 9, 14]);
        assert_eq!(got, [1, 3, 8, 9, 10, 2, 12, 14, 55]);
        assert_eq!(read(e.as_ref(), "well_ordered"), "false");
        // BUFFER 3 absorbs it.
        let (got, stops, e) = run("BUFFER 3", &[10, 2, 1, 12, 55], &[3, 8, 9, 14]);
        assert_eq!(got, [1, 2, 3, 8, 9, 10, 12, 14, 55]);
        assert_eq!(stops, 0);
        assert_eq!(read(e.as_ref(), "well_ordered"), "true");
        let r = configure(
            &["STOP", "BUFFER"],
            TimeSortedSched::configure,
            "BUFFER 0",
            2,
            1,
        );
        assert_eq!(config_err(r), "BUFFER must be at least 1");
    }
}
