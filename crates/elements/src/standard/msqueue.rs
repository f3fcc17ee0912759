//! `MSQueue`: a deprecated name for ThreadSafeQueue.

use super::simplequeue::{Notes, Policy, SimpleQueue, Sleep};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `MSQueue` (the storage is [`SimpleQueue`]'s).
pub struct MSQueue;

impl MSQueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("MSQueue")
        .ports("1/1-2")
        .processing("h/lh")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "MSQueue([CAPACITY])\n\n\
             Click's deprecated multiple-producer queue: behaves as ThreadSafeQueue\n\
             (and says so with a warning when configured).\n\
             CAPACITY defaults to 1000.\n\n\
             Ports: 1 push input; output 0 pull, output 1 (optional) push.\n\
             Handlers:\n  \
             length, highwater_length, drops (read)\n  \
             capacity (read/write)    the capacity; a smaller one frees the newest packets\n  \
             reset_counts (write)     zero drops and highwater_length\n  \
             reset (write)            drop every queued packet",
        );

    /// Configures a `MSQueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let q = SimpleQueue::build_with(
            ctx,
            "MSQueue",
            Notes::EmptyFull,
            Policy::TailDrop,
            Sleep::Sleepy,
        )?;
        eprintln!(
            "{} :: MSQueue: MSQueue is deprecated, use ThreadSafeQueue instead",
            ctx.name
        );
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
            MSQueue::SPEC.keywords,
            MSQueue::configure,
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
