//! `TimeSortedSched`: merges timestamp-sorted packet streams.

use pronto_packet::{Batch, Packet};

use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, NotifierKind,
    NotifierRole, Out, PullInputs, PullOne, Spec,
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
    /// STOP: a pull found nothing and no input's notifier active; the
    /// driver is stopped if the next pull finds the same (see `pull_one`).
    stop_pending: bool,
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
             input's notifier says packets may come (a source at its end, an empty\n\
             queue). It is itself an empty notifier: active while it holds packets\n\
             or any input's notifier is.\n\n\
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
            stop_pending: false,
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
        // As Click's: an input whose notifier is active may give packets
        // (even if it has none at this instant); only when none is active
        // is the merge over.
        let mut signals_on = false;
        // Fill up from the inputs with room, last first.
        let mut r = self.ready.len();
        while r > 0 {
            r -= 1;
            let i = self.ready[r];
            if !inputs.input_active(i) {
                continue;
            }
            signals_on = true;
            while let Some(p) = inputs.pull_input(i) {
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
                self.stop_pending = false;
                Some(p)
            }
            None => {
                // Click pulls one packet per task run, so a push source
                // feeding a queue upstream runs between two pulls; pronto's
                // pullers take a batch per run. The stop waits for the next
                // pull, after the other tasks had their turn, and happens
                // only if that one finds nothing either.
                if self.stop && !signals_on {
                    if self.stop_pending {
                        self.stop_pending = false;
                        inputs.stop_driver();
                    } else {
                        self.stop_pending = true;
                    }
                } else {
                    self.stop_pending = false;
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

    fn notifier(&self, kind: NotifierKind, port: usize) -> NotifierRole {
        match (kind, port) {
            (NotifierKind::Empty, 0) => NotifierRole::Derived,
            _ => NotifierRole::None,
        }
    }

    fn signal(&self, _kind: NotifierKind, _port: usize, upstream: &dyn Fn(usize) -> bool) -> bool {
        !self.heap.is_empty() || self.stop_pending || (0..self.space.len()).any(upstream)
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
        /// An input's notifier: active while its queue holds packets.
        fn input_active(&mut self, input: usize) -> bool {
            self.0 .0.get(input).is_some_and(|q| !q.is_empty())
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
            // The first empty pull only marks the stop; the next makes it.
            assert_eq!(inputs.1, 0);
            assert!(tss.pull_one(0, 0, &mut inputs).is_none());
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

    #[test]
    fn an_input_whose_notifier_is_active_keeps_the_merge_going() {
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            &["STOP", "BUFFER"],
            TimeSortedSched::configure,
            "STOP true",
            2,
            1,
        )
        .expect("ok");
        // Input 1 is a queue that is empty now but whose source is still
        // active (its notifier on): no stop, and the notifier stays on.
        struct Live(Stopping, bool);
        impl PullInputs for Live {
            fn pull_input(&mut self, input: usize) -> Option<Packet> {
                self.0.pull_input(input)
            }
            fn stop_driver(&mut self) {
                self.0.stop_driver();
            }
            fn input_active(&mut self, input: usize) -> bool {
                (input == 1 && self.1) || self.0.input_active(input)
            }
        }
        let mut inputs = Live(
            Stopping(Queues(vec![VecDeque::new(), VecDeque::new()]), 0),
            true,
        );
        let tss = e.as_pull_one().expect("pull one");
        for _ in 0..3 {
            assert!(tss.pull_one(0, 0, &mut inputs).is_none());
        }
        assert_eq!(inputs.0 .1, 0);
        // A packet arrives; then the source ends: two empty pulls stop.
        let mut p = pkt(&pool, &[0]);
        p.set_timestamp_ns(7);
        inputs.0 .0 .0[1].push_back(p);
        assert_eq!(
            tss.pull_one(0, 0, &mut inputs).map(|p| p.timestamp_ns()),
            Some(7)
        );
        inputs.1 = false;
        assert!(tss.pull_one(0, 0, &mut inputs).is_none());
        assert_eq!(inputs.0 .1, 0);
        assert!(
            e.signal(NotifierKind::Empty, 0, &|_| false),
            "a pending stop keeps its puller awake for the last pull"
        );
        let tss = e.as_pull_one().expect("pull one");
        assert!(tss.pull_one(0, 0, &mut inputs).is_none());
        assert_eq!(inputs.0 .1, 1);
        assert!(!e.signal(NotifierKind::Empty, 0, &|_| false));
        assert!(e.signal(NotifierKind::Empty, 0, &|i| i == 1));
    }
}
