//! `SimpleQueue`: a FIFO packet queue (push in, pull out).

use std::collections::VecDeque;

use pronto_packet::{Batch, Packet};

use super::shared::handler_value;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Counters, Element, HandlerError, HandlerInfo,
    NotifierKind, NotifierRole, Out, Spec,
};

/// Which of Click's notifiers a queue offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notes {
    /// None (`SimpleQueue`).
    None,
    /// An empty notifier on its output (`NotifierQueue`, `MixedQueue`,
    /// `FrontDropQueue`).
    Empty,
    /// Empty and full notifiers (`Queue`, `FullNoteQueue`,
    /// `ThreadSafeQueue`, `QuickNoteQueue`).
    EmptyFull,
}

/// What a queue does with a packet that arrives when it is full, and where
/// arrivals go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Arrivals join the tail; a full queue drops the arrival.
    TailDrop,
    /// Arrivals join the tail; a full queue drops its oldest packet
    /// (`FrontDropQueue`).
    FrontDrop,
    /// Input 0 joins the tail and a full queue drops the arrival; input 1
    /// joins the head and a full queue drops its newest packet
    /// (`MixedQueue`).
    Mixed,
}

/// How a queue's empty notifier goes to sleep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sleep {
    /// After ten pulls in a row found it empty (Click's
    /// `SLEEPINESS_TRIGGER`): a puller spins a little before sleeping.
    Sleepy,
    /// As soon as a pull leaves it empty (`QuickNoteQueue`).
    Quick,
}

/// Pulls that find a queue empty before its empty notifier sleeps, less
/// one (Click's `SLEEPINESS_TRIGGER`).
const SLEEPINESS_TRIGGER: u32 = 9;

/// Stores pushed packets until pulled; drops arrivals when full (tail
/// drop), sending them out output 1 if it exists. The storage of every
/// queue class (see [`Notes`], [`Policy`], [`Sleep`]).
pub struct SimpleQueue {
    name: String,
    q: VecDeque<Packet>,
    capacity: usize,
    drops: u64,
    highwater: usize,
    /// Length and capacity, shared with RED.
    len: std::sync::Arc<crate::aqm::red::StorageLength>,
    notes: Notes,
    policy: Policy,
    sleep: Sleep,
    /// The empty notifier: packets may be available.
    empty_active: bool,
    /// The full notifier: room is available.
    full_active: bool,
    sleepiness: u32,
}

/// Most packets preallocated for at configure time; a bigger queue grows
/// on demand and keeps its storage.
const PREALLOC: usize = 4096;

impl SimpleQueue {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("SimpleQueue")
        .ports("1/1-2")
        .processing("h/lh")
        .keywords(&["CAPACITY"])
        .profile(ActionProfile::NONE.dropping())
        .doc(QUEUE_DOC);

    /// Configures a `SimpleQueue`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(Self::build(ctx, "SimpleQueue")?))
    }

    /// Builds a queue without notifiers (`SimpleQueue`; `class` is the
    /// class name for messages).
    pub fn build(ctx: &ConfigCtx<'_>, class: &str) -> Result<SimpleQueue, ConfigError> {
        Self::build_with(ctx, class, Notes::None, Policy::TailDrop, Sleep::Sleepy)
    }

    /// Builds a queue of any class.
    pub fn build_with(
        ctx: &ConfigCtx<'_>,
        class: &str,
        notes: Notes,
        policy: Policy,
        sleep: Sleep,
    ) -> Result<SimpleQueue, ConfigError> {
        let mut a = ctx.args();
        let capacity: u32 = a.read_p("CAPACITY")?.unwrap_or(1000);
        a.finish()?;
        let capacity = capacity as usize;
        Ok(SimpleQueue {
            name: format!("{} :: {class}", ctx.name),
            q: VecDeque::with_capacity(capacity.min(PREALLOC)),
            capacity,
            drops: 0,
            highwater: 0,
            len: std::sync::Arc::new(crate::aqm::red::StorageLength::new(0, capacity)),
            notes,
            policy,
            sleep,
            // Click's signals start active; the empty one sleeps once
            // pulls find the queue empty.
            empty_active: true,
            full_active: true,
            sleepiness: 0,
        })
    }

    fn overflow(&mut self) {
        if self.drops == 0 && self.capacity > 0 {
            eprintln!("{}: overflow", self.name);
        }
        self.drops += 1;
    }

    /// After packets arrived: highwater mark and notifiers.
    fn arrived(&mut self) {
        let n = self.q.len();
        if n > self.highwater {
            self.highwater = n;
        }
        if n > 0 {
            self.empty_active = true;
        }
        if n >= self.capacity {
            self.full_active = false;
        }
        self.store_len();
    }

    fn store_len(&self) {
        self.len
            .store(self.q.len(), std::sync::atomic::Ordering::Relaxed);
    }
}

/// The documentation of `SimpleQueue`.
pub const QUEUE_DOC: &str = "SimpleQueue([CAPACITY])\n\n\
     Stores incoming packets in a first-in-first-out queue. Drops incoming\n\
     packets if the queue already holds CAPACITY packets (default 1000);\n\
     dropped packets are emitted on output 1 if it exists. Offers no\n\
     notifiers: a puller behind it never sleeps (see NotifierQueue, Queue).\n\n\
     Ports: 1 push input; output 0 pull, output 1 (optional) push.\n\
     Handlers:\n  \
     length (read)            packets in the queue\n  \
     highwater_length (read)  most packets ever in the queue at once\n  \
     capacity (read/write)    the capacity; a smaller one frees the newest packets\n  \
     drops (read)             packets dropped so far\n  \
     reset_counts (write)     zero drops and highwater_length\n  \
     reset (write)            drop every queued packet";

impl Element for SimpleQueue {
    /// Tail drop only: the other policies send out packets of earlier
    /// pushes when full.
    fn one_for_one(&self) -> bool {
        matches!(self.policy, Policy::TailDrop)
    }

    /// Click's `SimpleQueue::take_state`: the old queue's packets, oldest
    /// first, up to this queue's capacity (the rest are freed).
    fn take_state(&mut self, old: &mut dyn Element, ctx: &crate::TakeCtx<'_>) -> Option<String> {
        let old = crate::old_as::<SimpleQueue>(old)?;
        if !self.q.is_empty() || old.q.is_empty() {
            return None;
        }
        let total = old.q.len();
        while let Some(p) = old.q.pop_front() {
            if self.q.len() >= self.capacity {
                break;
            }
            if let Some(p) = ctx.pool.adopt(p) {
                self.q.push_back(p);
            }
        }
        old.q.clear();
        old.store_len();
        self.arrived();
        let moved = self.q.len();
        Some(if moved == total {
            format!("{moved} packets")
        } else {
            format!("{moved} of {total} packets")
        })
    }

    fn shared(&self) -> Option<crate::Shared> {
        Some(self.len.clone())
    }

    fn push(&mut self, port: usize, batch: &mut Batch, out: &mut Out<'_>) {
        match (self.policy, port) {
            (Policy::TailDrop, _) | (Policy::Mixed, 0) => {
                let room = self.capacity.saturating_sub(self.q.len());
                if batch.len() <= room {
                    self.q.extend(batch.drain());
                } else {
                    let mut it = batch.drain();
                    self.q.extend(it.by_ref().take(room));
                    for p in it {
                        self.overflow();
                        out.emit(1, p);
                    }
                }
            }
            (Policy::FrontDrop, _) => {
                for p in batch.drain() {
                    if self.q.len() >= self.capacity {
                        self.overflow();
                        if let Some(old) = self.q.pop_front() {
                            out.emit(1, old);
                        }
                    }
                    if self.capacity > 0 {
                        self.q.push_back(p);
                    } else {
                        out.emit(1, p);
                    }
                }
            }
            (Policy::Mixed, _) => {
                for p in batch.drain() {
                    if self.q.len() >= self.capacity {
                        self.overflow();
                        if let Some(old) = self.q.pop_back() {
                            out.emit(1, old);
                        }
                    }
                    if self.capacity > 0 {
                        self.q.push_front(p);
                    } else {
                        out.emit(1, p);
                    }
                }
            }
        }
        self.arrived();
    }

    fn is_pull_source(&self) -> bool {
        true
    }

    fn pull(&mut self, _port: usize, batch: &mut Batch, max: usize, _out: &mut Out<'_>) {
        let want = max.min(batch.room());
        let n = want.min(self.q.len());
        for p in self.q.drain(..n) {
            let _ = batch.push(p);
        }
        if n > 0 {
            self.sleepiness = 0;
            if self.q.len() < self.capacity {
                self.full_active = true;
            }
        }
        if self.q.is_empty() {
            match self.sleep {
                Sleep::Quick => self.empty_active = false,
                // Only a pull that found nothing counts.
                Sleep::Sleepy if n < want => {
                    if self.sleepiness >= SLEEPINESS_TRIGGER {
                        self.empty_active = false;
                    } else {
                        self.sleepiness += 1;
                    }
                }
                Sleep::Sleepy => {}
            }
        }
        self.store_len();
    }

    fn notifier(&self, kind: NotifierKind, port: usize) -> NotifierRole {
        match (self.notes, kind, port) {
            (Notes::Empty | Notes::EmptyFull, NotifierKind::Empty, 0) => NotifierRole::Signal,
            (Notes::EmptyFull, NotifierKind::Full, _) => NotifierRole::Signal,
            _ => NotifierRole::None,
        }
    }

    fn signal(&self, kind: NotifierKind, _port: usize, _up: &dyn Fn(usize) -> bool) -> bool {
        match kind {
            NotifierKind::Empty => self.empty_active,
            NotifierKind::Full => self.full_active,
        }
    }

    fn held(&self) -> usize {
        self.q.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn counters(&self, c: &mut Counters) {
        c.drop("queue_full", self.drops);
        c.count("highwater_length", self.highwater as u64);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("length"),
            HandlerInfo::read("highwater_length"),
            HandlerInfo::reconf("capacity", "0 CAPACITY"),
            HandlerInfo::read("drops"),
            HandlerInfo::write("reset_counts"),
            HandlerInfo::write("reset"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "length" => Ok(self.q.len().to_string()),
            "highwater_length" => Ok(self.highwater.to_string()),
            "capacity" => Ok(self.capacity.to_string()),
            "drops" => Ok(self.drops.to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn write_handler(&mut self, name: &str, value: &str) -> Result<(), HandlerError> {
        match name {
            "capacity" => {
                let c: u32 = handler_value(value, "CAPACITY: expected unsigned integer")?;
                self.capacity = c as usize;
                self.len
                    .capacity
                    .store(self.capacity, std::sync::atomic::Ordering::Relaxed);
                // Click keeps the oldest packets that fit.
                self.q.truncate(self.capacity);
                if self.q.len() < self.capacity {
                    self.full_active = true;
                }
            }
            "reset_counts" => {
                self.drops = 0;
                self.highwater = self.q.len();
            }
            "reset" => {
                self.q.clear();
                self.full_active = true;
            }
            _ => return Err(HandlerError::NoSuchHandler(name.into())),
        }
        self.store_len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::standard::test_support as t;
    use pronto_packet::Pool;

    fn q(cfg: &str, nout: usize) -> Box<dyn Element> {
        let outs = [false, true];
        t::configure_with(
            SimpleQueue::SPEC.keywords,
            SimpleQueue::configure,
            cfg,
            &[true],
            &outs[..nout],
        )
        .expect("ok")
    }

    fn pkts(pool: &Pool, n: u8) -> Vec<pronto_packet::Packet> {
        (0..n).map(|i| t::pkt(pool, &[i])).collect()
    }

    #[test]
    fn fifo_and_tail_drop() {
        let pool = Pool::new(64).expect("pool");
        let mut e = q("3", 1);
        let out = t::push(e.as_mut(), &pool, pkts(&pool, 5), 1);
        assert!(out[0].is_empty());
        assert_eq!(t::read(e.as_ref(), "length"), "3");
        assert_eq!(t::read(e.as_ref(), "drops"), "2");
        assert_eq!(t::read(e.as_ref(), "highwater_length"), "3");
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 2, 1, 0);
        assert_eq!(t::bytes(&got), vec![vec![0], vec![1]]);
        drop(got);
        let (got, _) = t::pull(e.as_mut(), &pool, 0, 10, 1, 0);
        assert_eq!(t::bytes(&got), vec![vec![2]]);
        e.write_handler("reset_counts", "").expect("reset");
        assert_eq!(t::read(e.as_ref(), "drops"), "0");
        assert_eq!(t::read(e.as_ref(), "highwater_length"), "0");
        drop(got);
        assert_eq!(pool.available(), 64);
    }

    #[test]
    fn drops_go_to_output_1() {
        let pool = Pool::new(64).expect("pool");
        let mut e = q("CAPACITY 1", 2);
        let out = t::push(e.as_mut(), &pool, pkts(&pool, 3), 2);
        assert_eq!(t::bytes(&out[1]), vec![vec![1], vec![2]]);
    }

    #[test]
    fn default_capacity_and_handlers() {
        let pool = Pool::new(8).expect("pool");
        let mut e = q("", 1);
        assert_eq!(t::read(e.as_ref(), "capacity"), "1000");
        t::push(e.as_mut(), &pool, pkts(&pool, 4), 1);
        e.write_handler("capacity", "2").expect("capacity");
        assert_eq!(t::read(e.as_ref(), "length"), "2");
        e.write_handler("reset", "").expect("reset");
        assert_eq!(t::read(e.as_ref(), "length"), "0");
        assert_eq!(pool.available(), 8);
    }

    #[test]
    fn errors() {
        let r = t::configure(
            SimpleQueue::SPEC.keywords,
            SimpleQueue::configure,
            "-1",
            1,
            1,
        );
        assert_eq!(
            t::config_err(r),
            "CAPACITY: integer out of range (0 to 4294967295), found `-1`"
        );
    }
}
