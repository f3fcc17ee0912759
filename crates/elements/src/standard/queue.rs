//! `Queue`: a FIFO packet queue with empty and full notifiers (Click's
//! `FullNoteQueue`, under the name configurations use).

use super::simplequeue::{Notes, Policy, SimpleQueue, Sleep};
use crate::{ActionProfile, ConfigCtx, ConfigError, Element, Spec};

/// Click's `Queue`: a `SimpleQueue` that also offers empty and full
/// notifiers.
pub struct Queue;

impl Queue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Queue")
        .ports("1/1-2")
        .processing("h/lh")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(
            "Queue([CAPACITY])\n\n\
             Stores incoming packets in a first-in-first-out queue and hands them\n\
             out when pulled. Drops incoming packets if the queue already holds\n\
             CAPACITY packets (default 1000); dropped packets are emitted on\n\
             output 1 if it exists. Offers an empty notifier (a puller behind an\n\
             empty queue sleeps until a packet arrives) and a full notifier (a\n\
             source in front of a full queue sleeps until there is room).\n\n\
             Ports: 1 push input; output 0 pull, output 1 (optional) push.\n\
             Handlers:\n  \
             length (read)            packets in the queue\n  \
             highwater_length (read)  most packets ever in the queue at once\n  \
             capacity (read/write)    the capacity; a smaller one frees the newest packets\n  \
             drops (read)             packets dropped so far\n  \
             reset_counts (write)     zero drops and highwater_length\n  \
             reset (write)            drop every queued packet",
        );

    /// Configures a `Queue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(SimpleQueue::build_with(
            ctx,
            "Queue",
            Notes::EmptyFull,
            Policy::TailDrop,
            Sleep::Sleepy,
        )?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    #[test]
    fn behaves_as_simplequeue() {
        let pool = Pool::new(8).expect("pool");
        let mut e = t::configure_with(
            Queue::SPEC.keywords,
            Queue::configure,
            "2",
            &[true],
            &[false],
        )
        .expect("ok");
        t::push(
            e.as_mut(),
            &pool,
            vec![
                t::pkt(&pool, &[1]),
                t::pkt(&pool, &[2]),
                t::pkt(&pool, &[3]),
            ],
            1,
        );
        assert_eq!(t::read(e.as_ref(), "length"), "2");
        assert_eq!(t::read(e.as_ref(), "drops"), "1");
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 8, 1, 0);
        assert_eq!(t::bytes(&got), vec![vec![1], vec![2]]);
    }
}
