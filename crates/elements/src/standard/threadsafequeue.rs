//! `ThreadSafeQueue`: a FullNoteQueue that may be pushed and pulled from several threads.

use super::simplequeue::{Notes, Policy, SimpleQueue, Sleep};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `ThreadSafeQueue` (the storage is [`SimpleQueue`]'s).
pub struct ThreadSafeQueue;

impl ThreadSafeQueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ThreadSafeQueue")
        .ports("1/1-2")
        .processing("h/lh")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "ThreadSafeQueue([CAPACITY])\n\n\
             As FullNoteQueue. Click's version may be pushed and pulled from several\n\
             threads at once; in pronto an element and its neighbours run on one\n\
             thread, so it is a FullNoteQueue.\n\
             CAPACITY defaults to 1000.\n\n\
             Ports: 1 push input; output 0 pull, output 1 (optional) push.\n\
             Handlers:\n  \
             length, highwater_length, drops (read)\n  \
             capacity (read/write)    the capacity; a smaller one frees the newest packets\n  \
             reset_counts (write)     zero drops and highwater_length\n  \
             reset (write)            drop every queued packet",
        );

    /// Configures a `ThreadSafeQueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let q = SimpleQueue::build_with(
            ctx,
            "ThreadSafeQueue",
            Notes::EmptyFull,
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
            ThreadSafeQueue::SPEC.keywords,
            ThreadSafeQueue::configure,
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
    fn full_notifier_follows_room() {
        let pool = Pool::new(8).expect("pool");
        let mut e = q("2");
        assert_eq!(e.notifier(NotifierKind::Full, 0), NotifierRole::Signal);
        assert!(sig(e.as_ref(), NotifierKind::Full));
        t::push(
            e.as_mut(),
            &pool,
            vec![t::pkt(&pool, &[1]), t::pkt(&pool, &[2])],
            1,
        );
        assert!(!sig(e.as_ref(), NotifierKind::Full));
        assert!(sig(e.as_ref(), NotifierKind::Empty));
        assert_eq!(e.held(), 2);
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 1, 1, 0);
        assert_eq!(t::bytes(&got), vec![vec![1]]);
        assert!(sig(e.as_ref(), NotifierKind::Full));
        e.write_handler("capacity", "1").expect("capacity");
        assert_eq!(t::read(e.as_ref(), "length"), "1");
    }
}
