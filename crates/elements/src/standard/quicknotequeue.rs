//! `QuickNoteQueue`: a FullNoteQueue whose empty notifier sleeps at once.

use super::simplequeue::{Notes, Policy, SimpleQueue, Sleep};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `QuickNoteQueue` (the storage is [`SimpleQueue`]'s).
pub struct QuickNoteQueue;

impl QuickNoteQueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("QuickNoteQueue")
        .ports("1/1-2")
        .processing("h/lh")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "QuickNoteQueue([CAPACITY])\n\n\
             As FullNoteQueue, but its empty notifier goes to sleep as soon as a pull\n\
             leaves the queue empty, not after ten empty pulls.\n\
             CAPACITY defaults to 1000.\n\n\
             Ports: 1 push input; output 0 pull, output 1 (optional) push.\n\
             Handlers:\n  \
             length, highwater_length, drops (read)\n  \
             capacity (read/write)    the capacity; a smaller one frees the newest packets\n  \
             reset_counts (write)     zero drops and highwater_length\n  \
             reset (write)            drop every queued packet",
        );

    /// Configures a `QuickNoteQueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let q = SimpleQueue::build_with(
            ctx,
            "QuickNoteQueue",
            Notes::EmptyFull,
            Policy::TailDrop,
            Sleep::Quick,
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
            QuickNoteQueue::SPEC.keywords,
            QuickNoteQueue::configure,
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
    fn empty_notifier_sleeps_at_once() {
        let pool = Pool::new(8).expect("pool");
        let mut e = q("2");
        assert_eq!(e.notifier(NotifierKind::Full, 0), NotifierRole::Signal);
        t::push(e.as_mut(), &pool, vec![t::pkt(&pool, &[1])], 1);
        assert!(sig(e.as_ref(), NotifierKind::Empty));
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 4, 1, 0);
        assert_eq!(t::bytes(&got), vec![vec![1]]);
        assert!(!sig(e.as_ref(), NotifierKind::Empty));
        assert!(sig(e.as_ref(), NotifierKind::Full));
    }
}
