//! `NotifierQueue`: a FIFO queue with an empty notifier.

use super::simplequeue::{Notes, Policy, SimpleQueue, Sleep};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `NotifierQueue` (the storage is [`SimpleQueue`]'s).
pub struct NotifierQueue;

impl NotifierQueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("NotifierQueue")
        .ports("1/1-2")
        .processing("h/lh")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "NotifierQueue([CAPACITY])\n\n\
             Stores incoming packets in a first-in-first-out queue, as SimpleQueue,\n\
             and offers an empty notifier: a puller behind it sleeps once ten pulls\n\
             in a row found the queue empty, until a packet arrives. It offers no\n\
             full notifier (a source in front of it keeps pushing; see Queue).\n\
             CAPACITY defaults to 1000.\n\n\
             Ports: 1 push input; output 0 pull, output 1 (optional) push.\n\
             Handlers:\n  \
             length, highwater_length, drops (read)\n  \
             capacity (read/write)    the capacity; a smaller one frees the newest packets\n  \
             reset_counts (write)     zero drops and highwater_length\n  \
             reset (write)            drop every queued packet",
        );

    /// Configures a `NotifierQueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let q = SimpleQueue::build_with(
            ctx,
            "NotifierQueue",
            Notes::Empty,
            Policy::TailDrop,
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

    fn q(cfg: &str) -> Box<dyn Element> {
        t::configure_with(
            NotifierQueue::SPEC.keywords,
            NotifierQueue::configure,
            cfg,
            &[true; 1],
            &[false],
        )
        .expect("ok")
    }

    fn sig(e: &dyn Element, kind: NotifierKind) -> bool {
        e.signal(kind, 0, &|_| true)
    }

    #[test]
    fn empty_notifier_sleeps_after_ten_empty_pulls() {
        let pool = Pool::new(8).expect("pool");
        let mut e = q("2");
        assert_eq!(e.notifier(NotifierKind::Empty, 0), NotifierRole::Signal);
        assert_eq!(e.notifier(NotifierKind::Full, 0), NotifierRole::None);
        // Active at first, as Click's signals are.
        assert!(sig(e.as_ref(), NotifierKind::Empty));
        t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert!(sig(e.as_ref(), NotifierKind::Empty));
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 1, 1, 0);
        assert_eq!(t::bytes(&got), vec![vec![1]]);
        for _ in 0..9 {
            t::pull(e.as_mut(), &pool, 0, 1, 1, 0);
            assert!(sig(e.as_ref(), NotifierKind::Empty));
        }
        t::pull(e.as_mut(), &pool, 0, 1, 1, 0);
        assert!(!sig(e.as_ref(), NotifierKind::Empty));
        assert_eq!(e.held(), 0);
    }
}
