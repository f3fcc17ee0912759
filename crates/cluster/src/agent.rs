//! What runs on every node: following its own placements ([`follow`]),
//! and, on the one node elected, the scheduling loop ([`lead`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use crate::etcd::{Etcd, Event};
use crate::node::{self, Leader, Registration, ROOT};
use crate::placement::Plan;
use crate::scheduler::{self, ScheduleError};
use crate::watch::{self, Seen, RETRY};

/// What a node does with its placements.
pub trait Converge {
    /// Runs instance `name` (placed here; `placement` is the stored
    /// placement). Called again for a placement rewritten.
    fn run(&mut self, name: &str, placement: &[u8]);
    /// Stops instance `name` (placed elsewhere, or removed).
    fn stop(&mut self, name: &str);
}

/// Follows node `me`'s placements until `stop` is set: runs every instance
/// placed on `me` (those already there first), stops every one that
/// leaves. The loop is [`watch::follow_prefix`]'s: a watch that ends (its
/// member went) is made again from the revision after the last change
/// seen, through whichever member answers; a watch from a compacted
/// revision lists the placements again (and stops what left meanwhile).
/// `stop` is looked at between changes.
pub fn follow(etcd: &Etcd, me: &str, c: &mut dyn Converge, stop: &AtomicBool) {
    let prefix = scheduler::assigned_key(me, "");
    let name = |key: &[u8]| String::from_utf8_lossy(&key[prefix.len()..]).into_owned();
    let mut have: HashSet<String> = HashSet::new();
    watch::follow_prefix(etcd, &prefix, stop, &mut |seen| match seen {
        Seen::All(r) => {
            let now: HashSet<String> = r.kvs.iter().map(|kv| name(&kv.key)).collect();
            for gone in have.difference(&now) {
                c.stop(gone);
            }
            for kv in &r.kvs {
                c.run(&name(&kv.key), &kv.value);
            }
            have = now;
        }
        Seen::Change(Event::Put(kv)) => {
            let n = name(&kv.key);
            c.run(&n, &kv.value);
            have.insert(n);
        }
        Seen::Change(Event::Delete(kv)) => {
            let n = name(&kv.key);
            c.stop(&n);
            have.remove(&n);
        }
    });
}

/// What the scheduling loop reports after each pass.
pub type OnPass<'a> = dyn FnMut(Result<&Plan, &ScheduleError>) + 'a;

/// Campaigns for the scheduling as node `me` (on `reg`'s lease) until
/// `stop` is set; while it leads, runs a pass whenever nodes or instances
/// change (once they have been quiet for `settle`), and every `period`
/// anyway. Deposed, it campaigns again. While another node leads, it
/// campaigns again as soon as that node's `scheduler` key goes (a watch),
/// or after `period` (at most 1 s) at the latest.
pub fn lead(
    etcd: Arc<Etcd>,
    reg: &Registration,
    me: &str,
    settle: Duration,
    period: Duration,
    stop: &AtomicBool,
    on_pass: &mut OnPass<'_>,
) {
    let wait = period.min(Duration::from_secs(1));
    // The leadership watched for its end, and the channel that says so.
    let mut watching: Option<(i64, mpsc::Receiver<()>)> = None;
    while !stop.load(Ordering::Relaxed) {
        let leader = match node::campaign(&etcd, me, reg.lease()) {
            Ok(Some(l)) if l.node == me => l,
            Ok(Some(l)) => {
                if watching.as_ref().map(|w| w.0) != Some(l.since) {
                    let (tx, rx) = mpsc::channel::<()>();
                    let etcd = etcd.clone();
                    let since = l.since;
                    std::thread::spawn(move || wake_when_gone(&etcd, since, &tx));
                    watching = Some((l.since, rx));
                }
                let gone = watching.as_ref().map(|(_, rx)| rx.recv_timeout(wait));
                if let Some(Err(mpsc::RecvTimeoutError::Disconnected)) = gone {
                    // Its watch ended without a wake: made again next time.
                    watching = None;
                    std::thread::sleep(wait);
                }
                continue;
            }
            _ => {
                std::thread::sleep(period.min(Duration::from_secs(1)));
                continue;
            }
        };
        // Changes under nodes/ and instances/ wake the loop.
        let (tx, rx) = mpsc::channel::<()>();
        let watcher = {
            let etcd = etcd.clone();
            let from = leader.since;
            std::thread::spawn(move || wake_on_changes(&etcd, from, &tx))
        };
        let r = schedule_while_leading(&etcd, &leader, &rx, settle, period, stop, on_pass);
        drop(rx);
        // The watcher ends at its next change (its channel is closed).
        drop(watcher);
        if r.is_err() {
            std::thread::sleep(RETRY);
        }
    }
}

fn schedule_while_leading(
    etcd: &Etcd,
    leader: &Leader,
    rx: &mpsc::Receiver<()>,
    settle: Duration,
    period: Duration,
    stop: &AtomicBool,
    on_pass: &mut OnPass<'_>,
) -> Result<(), ScheduleError> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        match scheduler::schedule_once(etcd, leader) {
            Ok(plan) => on_pass(Ok(&plan)),
            Err(e @ ScheduleError::Deposed) => {
                on_pass(Err(&e));
                return Err(e);
            }
            Err(e) => {
                on_pass(Err(&e));
                std::thread::sleep(RETRY);
                continue;
            }
        }
        // Wait for a change (or the period), then for quiet.
        match rx.recv_timeout(period) {
            Ok(()) => while rx.recv_timeout(settle).is_ok() {},
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(period),
        }
    }
}

/// Sends on `tx` when the leadership that began at revision `since`
/// ends (its `scheduler` key deleted), or when the watch cannot be made or
/// ends; then returns.
fn wake_when_gone(etcd: &Etcd, since: i64, tx: &mpsc::Sender<()>) {
    if let Ok(mut w) = etcd.watch_prefix(&node::scheduler_key(), since) {
        while let Ok(Some(e)) = w.next_event() {
            if matches!(e, Event::Delete(_)) {
                break;
            }
        }
    }
    let _ = tx.send(());
}

fn wake_on_changes(etcd: &Etcd, from: i64, tx: &mpsc::Sender<()>) {
    let nodes = format!("{ROOT}nodes/").into_bytes();
    let instances = format!("{ROOT}instances/").into_bytes();
    let mut from = from;
    loop {
        let Ok(mut w) = etcd.watch_prefix(ROOT.as_bytes(), from) else {
            std::thread::sleep(RETRY);
            if tx.send(()).is_err() {
                return;
            }
            continue;
        };
        while let Ok(Some(e)) = w.next_event() {
            from = e.kv().mod_revision + 1;
            let k = &e.kv().key;
            if (k.starts_with(&nodes) || k.starts_with(&instances)) && tx.send(()).is_err() {
                return;
            }
        }
    }
}
