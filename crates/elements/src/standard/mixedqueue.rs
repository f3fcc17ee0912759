//! `MixedQueue`: a queue that is FIFO on input 0 and LIFO on input 1.

use super::simplequeue::{Notes, Policy, SimpleQueue, Sleep};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `MixedQueue` (the storage is [`SimpleQueue`]'s).
pub struct MixedQueue;

impl MixedQueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("MixedQueue")
        .ports("2/1-2")
        .processing("h/lh")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "MixedQueue([CAPACITY])\n\n\
             Stores packets in a queue that is first-in-first-out for packets\n\
             arriving on input 0 and last-in-first-out for packets arriving on\n\
             input 1. A packet arriving on input 0 at a full queue is dropped; one\n\
             arriving on input 1 at a full queue goes to the head anyway and the\n\
             packet at the tail (the newest) is dropped. Dropped packets are emitted\n\
             on output 1 if it exists. Offers an empty notifier.\n\
             CAPACITY defaults to 1000.\n\n\
             Ports: 2 push inputs; output 0 pull, output 1 (optional) push.\n\
             Handlers:\n  \
             length, highwater_length, drops (read)\n  \
             capacity (read/write)    the capacity; a smaller one frees the newest packets\n  \
             reset_counts (write)     zero drops and highwater_length\n  \
             reset (write)            drop every queued packet",
        );

    /// Configures a `MixedQueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let q = SimpleQueue::build_with(
            ctx,
            "MixedQueue",
            Notes::Empty,
            Policy::Mixed,
            Sleep::Sleepy,
        )?;
        Ok(Box::new(q))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use crate::{NotifierKind, NotifierRole};
    use pronto_packet::Pool;

    fn sig(e: &dyn Element, kind: NotifierKind) -> bool {
        e.signal(kind, 0, &|_| true)
    }

    #[test]
    fn fifo_on_input_0_lifo_on_input_1() {
        let pool = Pool::new(16).expect("pool");
        let mut e = t::configure_with(
            MixedQueue::SPEC.keywords,
            MixedQueue::configure,
            "3",
            &[true, true],
            &[false, true],
        )
        .expect("ok");
        assert_eq!(e.notifier(NotifierKind::Empty, 0), NotifierRole::Signal);
        assert_eq!(e.notifier(NotifierKind::Full, 0), NotifierRole::None);
        let mut ctrl = crate::Control::default();
        t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[1])],
            2,
            0,
            &mut ctrl,
        );
        t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[2])],
            2,
            0,
            &mut ctrl,
        );
        t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, &[3])],
            2,
            0,
            &mut ctrl,
        );
        // Full: a FIFO arrival is dropped, a LIFO arrival drops the newest.
        let out = t::push_at(
            e.as_mut(),
            &pool,
            0,
            vec![t::pkt(&pool, &[4])],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[1]), vec![vec![4]]);
        let out = t::push_at(
            e.as_mut(),
            &pool,
            1,
            vec![t::pkt(&pool, &[5])],
            2,
            0,
            &mut ctrl,
        );
        assert_eq!(t::bytes(&out[1]), vec![vec![2]]);
        assert!(sig(e.as_ref(), NotifierKind::Empty));
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 8, 2, 0);
        assert_eq!(t::bytes(&got), vec![vec![5], vec![3], vec![1]]);
        assert_eq!(t::read(e.as_ref(), "drops"), "2");
    }
}
