//! The pull interface of elements that decide, packet by packet, which
//! input to pull (schedulers, shapers), as Click's `input(i).pull()` does.
//!
//! These elements return themselves from [`crate::Element::as_pull_one`];
//! the runtime then answers a pull on their output by calling
//! [`PullOne::pull_one`] once per packet wanted, and they pull whichever
//! inputs they choose through [`PullInputs`]. This module keeps the test
//! stand-in for a set of input queues.

pub use crate::{PullInputs, PullOne};

#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use pronto_packet::Packet;
    use std::collections::VecDeque;

    /// Queues standing in for a scheduler's inputs.
    pub struct Queues(pub Vec<VecDeque<Packet>>);

    impl PullInputs for Queues {
        fn pull_input(&mut self, input: usize) -> Option<Packet> {
            self.0.get_mut(input).and_then(|q| q.pop_front())
        }
    }
}
