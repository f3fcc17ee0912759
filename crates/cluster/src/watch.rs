//! Following a prefix of etcd: list it, then watch it from the list's
//! revision; list again when the watch reports the revision it would
//! start from compacted away. Every follower of the cluster (a node's
//! assignments, the tenants, the instances' specs) is this one loop
//! ([`follow_prefix`]) with its own reaction to what it sees ([`Seen`]);
//! one that would rather take what a watch response delivers together as
//! one change (the VXLAN remote table: one rebuild per batch, not per
//! MAC) follows it by [`follow_prefix_batches`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::etcd::{Error, Etcd, Event, Range};

/// How long a failed list, a watch that could not be made, or a watch
/// that failed mid-stream waits before it is tried again.
pub const RETRY: Duration = Duration::from_millis(200);

/// What a follower is told.
#[derive(Debug)]
pub enum Seen {
    /// Every key under the prefix now, and the revision they were read
    /// at: at the start, and again after a compaction hid changes (what
    /// is missing from it was deleted meanwhile).
    All(Range),
    /// One change after the last list or change seen, in order.
    Change(Event),
}

/// What a follower of batches is told.
#[derive(Debug)]
pub enum Batch {
    /// As [`Seen::All`].
    All(Range),
    /// The changes one watch response delivered (at least one), in order.
    Changes(Vec<Event>),
}

/// Follows every key under `prefix` until `stop` is set, telling `on`
/// what it sees: the keys listed ([`Seen::All`]), then each change from
/// the revision after the list's ([`Seen::Change`]). The loop is
/// [`follow_prefix_batches`]', each batch told change by change.
pub fn follow_prefix(etcd: &Etcd, prefix: &[u8], stop: &AtomicBool, on: &mut dyn FnMut(Seen)) {
    follow_prefix_batches(etcd, prefix, stop, &mut |b| match b {
        Batch::All(r) => on(Seen::All(r)),
        Batch::Changes(changes) => {
            for e in changes {
                on(Seen::Change(e));
            }
        }
    });
}

/// Follows every key under `prefix` until `stop` is set, telling `on`
/// the keys listed ([`Batch::All`]), then the changes from the revision
/// after the list's, as the watch's responses deliver them
/// ([`Batch::Changes`]: one revision's, or many when etcd sends a
/// watcher that fell behind what it missed in one response).
///
/// A list that fails is tried again after [`RETRY`] (etcd unreachable:
/// every [`RETRY`], until it answers). A watch that ends (its member went)
/// is made again from the revision after the last change seen, through
/// whichever member answers; one that cannot be made, or fails
/// mid-stream, is tried again after [`RETRY`]. A watch from a compacted
/// revision lists again. `stop` is looked at before each list or watch
/// and between batches (a watch with no change blocks until one comes or
/// its member ends it).
pub fn follow_prefix_batches(
    etcd: &Etcd,
    prefix: &[u8],
    stop: &AtomicBool,
    on: &mut dyn FnMut(Batch),
) {
    let mut from = None;
    while !stop.load(Ordering::Relaxed) {
        let rev = match from {
            Some(r) => r,
            None => match etcd.range_prefix(prefix) {
                Ok(r) => {
                    let rev = r.revision + 1;
                    on(Batch::All(r));
                    rev
                }
                Err(_) => {
                    std::thread::sleep(RETRY);
                    continue;
                }
            },
        };
        from = Some(rev);
        let mut w = match etcd.watch_prefix(prefix, rev) {
            Ok(w) => w,
            Err(Error::Compacted(_)) => {
                from = None;
                continue;
            }
            Err(_) => {
                std::thread::sleep(RETRY);
                continue;
            }
        };
        while !stop.load(Ordering::Relaxed) {
            match w.next_batch() {
                Ok(Some(changes)) => {
                    if let Some(last) = changes.last() {
                        from = Some(last.kv().mod_revision + 1);
                    }
                    on(Batch::Changes(changes));
                }
                // The member ended the stream: watch again.
                Ok(None) => break,
                Err(Error::Compacted(_)) => {
                    from = None;
                    break;
                }
                Err(_) => {
                    std::thread::sleep(RETRY);
                    break;
                }
            }
        }
    }
}
