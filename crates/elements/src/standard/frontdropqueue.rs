//! `FrontDropQueue`: a FIFO queue that drops its oldest packet when full.

use super::simplequeue::{Notes, Policy, SimpleQueue, Sleep};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `FrontDropQueue` (the storage is [`SimpleQueue`]'s).
pub struct FrontDropQueue;

impl FrontDropQueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("FrontDropQueue")
        .ports("1/1-2")
        .processing("h/lh")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "FrontDropQueue([CAPACITY])\n\n\
             Stores incoming packets in a first-in-first-out queue. When a packet\n\
             arrives at a full queue, the packet at the head of the queue (the\n\
             oldest) is dropped, or emitted on output 1 if it exists, to make room.\n\
             Offers an empty notifier.\n\
             CAPACITY defaults to 1000.\n\n\
             Ports: 1 push input; output 0 pull, output 1 (optional) push.\n\
             Handlers:\n  \
             length, highwater_length, drops (read)\n  \
             capacity (read/write)    the capacity; a smaller one frees the newest packets\n  \
             reset_counts (write)     zero drops and highwater_length\n  \
             reset (write)            drop every queued packet",
        );

    /// Configures a `FrontDropQueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let q = SimpleQueue::build_with(
            ctx,
            "FrontDropQueue",
            Notes::Empty,
            Policy::FrontDrop,
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
    fn full_queue_drops_its_oldest_packet() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            FrontDropQueue::SPEC.keywords,
            FrontDropQueue::configure,
            "2",
            &[true],
            &[false, true],
        )
        .expect("ok");
        assert_eq!(e.notifier(NotifierKind::Empty, 0), NotifierRole::Signal);
        assert_eq!(e.notifier(NotifierKind::Full, 0), NotifierRole::None);
        let out = t::push(
            e.as_mut(),
            &pool,
            vec![
                t::pkt(&pool, &[1]),
                t::pkt(&pool, &[2]),
                t::pkt(&pool, &[3]),
            ],
            2,
        );
        assert_eq!(t::bytes(&out[1]), vec![vec![1]]);
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
        assert!(sig(e.as_ref(), NotifierKind::Empty));
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 8, 2, 0);
        assert_eq!(t::bytes(&got), vec![vec![2], vec![3]]);
        // Reconfiguring the capacity of an idle queue is harmless.
        e.write_handler("capacity", "100").expect("capacity");
        assert_eq!(t::read(e.as_ref(), "capacity"), "100");
    }
}
