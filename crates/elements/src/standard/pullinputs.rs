//! The pull interface of elements that decide, packet by packet, which
//! input to pull (schedulers, shapers), as Click's `input(i).pull()` does.
//!
//! The runtime's pull path pulls a batch from input 0 of an element that is
//! not a pull source and hands it to [`crate::Element::push`]; these
//! elements implement that path for a single input, and expose their exact
//! Click behaviour through [`PullOne::pull_one`]: a runtime that pulls
//! individual inputs on demand finds it with [`as_pull_one`] (the elements
//! return themselves from [`crate::Element::as_any_mut`]) and calls it once
//! per packet wanted.

use std::any::Any;

use pronto_packet::Packet;

use super::{drrsched::DRRSched, priosched::PrioSched, rrsched::RoundRobinSched, shaper::Shaper};

/// Pulls one packet from an element's input, as Click's
/// `input(i).pull()`: `None` when that input has nothing.
pub trait PullInputs {
    /// Pulls one packet from input `input`.
    fn pull_input(&mut self, input: usize) -> Option<Packet>;
}

/// An element that answers a pull on its output by pulling its inputs.
pub trait PullOne {
    /// Answers one pull on output `port` at time `now` (ns).
    fn pull_one(&mut self, port: usize, now: i64, inputs: &mut dyn PullInputs) -> Option<Packet>;
}

/// The element behind `e` (from [`crate::Element::as_any_mut`]) as a
/// packet-by-packet puller, if it is one (`PrioSched`, `RoundRobinSched`,
/// `DRRSched`, `Shaper`; `BandwidthShaper` configures a `Shaper`).
pub fn as_pull_one(e: &mut dyn Any) -> Option<&mut dyn PullOne> {
    if e.is::<PrioSched>() {
        return e.downcast_mut::<PrioSched>().map(|x| x as &mut dyn PullOne);
    }
    if e.is::<RoundRobinSched>() {
        return e
            .downcast_mut::<RoundRobinSched>()
            .map(|x| x as &mut dyn PullOne);
    }
    if e.is::<DRRSched>() {
        return e.downcast_mut::<DRRSched>().map(|x| x as &mut dyn PullOne);
    }
    e.downcast_mut::<Shaper>().map(|x| x as &mut dyn PullOne)
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use std::collections::VecDeque;

    /// Queues standing in for a scheduler's inputs.
    pub struct Queues(pub Vec<VecDeque<Packet>>);

    impl PullInputs for Queues {
        fn pull_input(&mut self, input: usize) -> Option<Packet> {
            self.0.get_mut(input).and_then(|q| q.pop_front())
        }
    }
}
