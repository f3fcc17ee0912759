//! The etcd client against real etcd servers (Debian's `etcd-server`):
//! one member for the key-value, transaction, lease and watch calls; three
//! members on loopback for losing one member (nothing changes for the
//! caller) and then quorum (writes refused, naming every member; the last
//! state still readable).

use std::time::{Duration, Instant};

use pronto_cluster::etcd::Error;
use pronto_cluster::{testing, Compare, Etcd, Event, Op};

fn have_etcd() -> bool {
    testing::have_etcd()
}

/// etcd members started for a test, killed when it ends.
struct Members(testing::Members);

impl Members {
    fn start(n: usize) -> Members {
        Members(testing::Members::start(n).expect("etcd starts"))
    }

    fn client(&self) -> Etcd {
        self.0.client().expect("endpoints")
    }

    fn kill(&mut self, i: usize) {
        self.0.kill(i);
    }
}

#[test]
fn keys_transactions_leases_and_watches_on_a_real_etcd() {
    if !have_etcd() {
        return;
    }
    let m = Members::start(1);
    let etcd = m.client();

    // Keys.
    let r1 = etcd
        .put(b"/pronto/instances/a", b"{\"config\":1}", 0)
        .expect("put");
    etcd.put(b"/pronto/instances/b", b"B", 0).expect("put");
    etcd.put(b"/pronto/nodes/n1", b"N", 0).expect("put");
    let a = etcd
        .get(b"/pronto/instances/a")
        .expect("get")
        .expect("a is there");
    assert_eq!(a.value, b"{\"config\":1}");
    assert_eq!((a.create_revision, a.mod_revision, a.version), (r1, r1, 1));
    assert_eq!(etcd.get(b"/pronto/instances/c").expect("get"), None);
    let r = etcd.range_prefix(b"/pronto/instances/").expect("range");
    let keys: Vec<&[u8]> = r.kvs.iter().map(|kv| kv.key.as_slice()).collect();
    assert_eq!(
        keys,
        [b"/pronto/instances/a".as_slice(), b"/pronto/instances/b"]
    );
    assert_eq!(r.revision, r1 + 2);

    // Transactions: create only if absent; update only if unchanged.
    let create = |v: &[u8]| {
        etcd.txn(
            &[Compare::CreateRevision(b"/pronto/leader".to_vec(), 0)],
            &[Op::Put {
                key: b"/pronto/leader".to_vec(),
                value: v.to_vec(),
                lease: 0,
            }],
            &[],
        )
        .expect("txn")
    };
    assert!(create(b"n1").0);
    assert!(!create(b"n2").0);
    assert_eq!(
        etcd.get(b"/pronto/leader")
            .expect("get")
            .expect("there")
            .value,
        b"n1"
    );
    let stale = etcd.txn(
        &[Compare::ModRevision(
            b"/pronto/instances/a".to_vec(),
            r1 - 1,
        )],
        &[Op::Delete(b"/pronto/instances/a".to_vec())],
        &[],
    );
    assert!(!stale.expect("txn").0);
    let (ok, _) = etcd
        .txn(
            &[Compare::ModRevision(b"/pronto/instances/a".to_vec(), r1)],
            &[Op::DeletePrefix(b"/pronto/instances/".to_vec())],
            &[],
        )
        .expect("txn");
    assert!(ok);
    assert!(etcd
        .range_prefix(b"/pronto/instances/")
        .expect("range")
        .kvs
        .is_empty());

    // Watches: every change from a revision on, in order, exactly.
    let from = etcd.range_prefix(b"/pronto/w/").expect("range").revision + 1;
    etcd.put(b"/pronto/w/x", b"1", 0).expect("put");
    etcd.put(b"/pronto/other", b"-", 0).expect("put");
    etcd.put(b"/pronto/w/x", b"2", 0).expect("put");
    etcd.delete(b"/pronto/w/x").expect("delete");
    let mut w = etcd.watch_prefix(b"/pronto/w/", from).expect("watch");
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(match w.next_event().expect("event").expect("open") {
            Event::Put(kv) => format!(
                "put {} {}",
                String::from_utf8_lossy(&kv.key),
                String::from_utf8_lossy(&kv.value)
            ),
            Event::Delete(kv) => format!("delete {}", String::from_utf8_lossy(&kv.key)),
        });
    }
    assert_eq!(
        seen,
        [
            "put /pronto/w/x 1",
            "put /pronto/w/x 2",
            "delete /pronto/w/x"
        ]
    );
    // A change made while the watch is open arrives too.
    etcd.put(b"/pronto/w/y", b"3", 0).expect("put");
    let e = w.next_event().expect("event").expect("open");
    assert_eq!(
        (e.kv().key.as_slice(), e.kv().value.as_slice()),
        (b"/pronto/w/y".as_slice(), b"3".as_slice())
    );

    // Leases: keys attached go with the lease.
    let lease = etcd.grant(30).expect("grant");
    etcd.put(b"/pronto/nodes/n2", b"alive", lease).expect("put");
    assert_eq!(
        etcd.get(b"/pronto/nodes/n2")
            .expect("get")
            .expect("there")
            .lease,
        lease
    );
    let ttl = etcd.keep_alive(lease).expect("keep alive");
    assert!((1..=30).contains(&ttl), "ttl {ttl}");
    etcd.revoke(lease).expect("revoke");
    assert_eq!(etcd.get(b"/pronto/nodes/n2").expect("get"), None);
    assert_eq!(
        etcd.keep_alive(lease)
            .expect("keep alive of a revoked lease"),
        0
    );
    match etcd.put(b"/pronto/nodes/n3", b"x", lease) {
        Err(Error::Refused { what, message, .. }) => {
            assert_eq!(what, "put");
            assert!(message.contains("lease not found"), "{message}");
        }
        other => panic!("a put on a revoked lease: {other:?}"),
    }
}

#[test]
fn one_member_of_three_lost_changes_nothing_and_quorum_lost_is_said() {
    if !have_etcd() {
        return;
    }
    let mut m = Members::start(3);
    let etcd = m.client();
    etcd.put(b"/pronto/k", b"1", 0).expect("put");
    // The member the client used last goes (it starts with the first).
    m.kill(0);
    etcd.put(b"/pronto/k", b"2", 0)
        .expect("a put with one member of three gone");
    assert_eq!(
        etcd.get(b"/pronto/k").expect("get").expect("there").value,
        b"2"
    );
    // A client that only knows the lost member says so, naming it.
    let lost = Etcd::new(&m.0.clients[0]).expect("endpoint");
    match lost.get(b"/pronto/k") {
        Err(Error::Unavailable { what, reasons }) => {
            assert_eq!(what, "get");
            assert!(
                reasons.starts_with(&format!("{}: ", m.0.clients[0])),
                "{reasons}"
            );
        }
        other => panic!("a lost member answered: {other:?}"),
    }
    // Quorum lost: writes are refused, the last state is still readable.
    m.kill(1);
    let err = etcd
        .put(b"/pronto/k", b"3", 0)
        .expect_err("a put without quorum");
    let text = err.to_string();
    assert!(text.starts_with("etcd unavailable (put): "), "{text}");
    for c in &m.0.clients {
        assert!(text.contains(c.as_str()), "{text} names {c}");
    }
    let last = etcd
        .range_serializable(b"/pronto/")
        .expect("a serializable read");
    let k = last
        .kvs
        .iter()
        .find(|kv| kv.key == b"/pronto/k")
        .expect("k");
    assert_eq!(k.value, b"2");
}

#[test]
fn a_node_registers_under_a_lease_that_ends_with_it_and_one_scheduler_is_elected() {
    use pronto_cluster::node::{self, RegisterError};
    use pronto_cluster::{Node, Registration};
    use std::sync::Arc;

    if !have_etcd() {
        return;
    }
    let m = Members::start(1);
    let etcd = Arc::new(m.client());
    let node = |name: &str| Node {
        name: name.into(),
        memory_mib: 4096,
        cpus: 2,
        slots: 100,
        tunnel: None,
        api: None,
        peer: None,
    };
    let a = Registration::start(etcd.clone(), node("a"), 2).expect("a registers");
    let b = Registration::start(etcd.clone(), node("b"), 2).expect("b registers");
    let names = |e: &Etcd| -> Vec<String> {
        node::nodes(e)
            .expect("nodes")
            .into_iter()
            .map(|n| n.name)
            .collect()
    };
    assert_eq!(names(&etcd), ["a", "b"]);
    // A second node under a live name is refused, by name.
    match Registration::start(etcd.clone(), node("a"), 2) {
        Err(e @ RegisterError::NameTaken(_)) => assert!(
            e.to_string()
                .starts_with("node name `a` is held by a live node"),
            "{e}"
        ),
        other => panic!("a second `a`: {:?}", other.err()),
    }
    assert!(matches!(
        Registration::start(etcd.clone(), node("a/b"), 2),
        Err(RegisterError::BadName(_))
    ));
    // Kept alive past several TTLs.
    std::thread::sleep(Duration::from_millis(4500));
    assert_eq!(names(&etcd), ["a", "b"]);
    assert_eq!((a.renewals(), a.failing()), (0, 0));

    // One scheduler: the first to campaign; the fencing token is the
    // revision its leadership began at.
    let la = node::campaign(&etcd, "a", a.lease())
        .expect("campaign")
        .expect("a leader");
    assert_eq!(la.node, "a");
    let lb = node::campaign(&etcd, "b", b.lease())
        .expect("campaign")
        .expect("a leader");
    assert_eq!(lb, la);

    // `a` dies (its keep-alive stops): its record and its leadership go
    // with its lease, and `b` takes over with a later token.
    drop(a);
    let t = Instant::now();
    while names(&etcd) != ["b"] {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "a's lease did not end"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(node::leader(&etcd).expect("leader"), None);
    let lb = node::campaign(&etcd, "b", b.lease())
        .expect("campaign")
        .expect("a leader");
    assert_eq!(lb.node, "b");
    assert!(lb.since > la.since);
    // Leaving revokes at once.
    b.leave().expect("leave");
    assert!(names(&etcd).is_empty());
}

#[test]
fn the_scheduler_places_moves_a_dead_nodes_instances_and_stops_when_deposed() {
    use pronto_cluster::node;
    use pronto_cluster::scheduler::{self, ScheduleError};
    use pronto_cluster::{Node, Registration};
    use std::collections::BTreeMap;
    use std::sync::Arc;

    if !have_etcd() {
        return;
    }
    let m = Members::start(1);
    let etcd = Arc::new(m.client());
    let reg = |name: &str| {
        let n = Node {
            name: name.into(),
            memory_mib: 4096,
            cpus: 2,
            slots: 4,
            tunnel: None,
            api: None,
            peer: None,
        };
        Registration::start(etcd.clone(), n, 2).expect("registers")
    };
    let (n1, n2, n3) = (reg("n1"), reg("n2"), reg("n3"));
    for i in 0..9 {
        let spec = format!(r#"{{"tenant":"t","memory_mib":64,"millicpus":250,"config":"x{i}"}}"#);
        etcd.put(
            &scheduler::instance_key(&format!("i{i}")),
            spec.as_bytes(),
            0,
        )
        .expect("put");
    }
    let me = node::campaign(&etcd, "n1", n1.lease())
        .expect("campaign")
        .expect("leader");
    let plan = scheduler::schedule_once(&etcd, &me).expect("a pass");
    assert_eq!((plan.placed.len(), plan.changed.len()), (9, 9));
    let per_node = |p: &std::collections::HashMap<String, String>| {
        let mut c: BTreeMap<String, usize> = BTreeMap::new();
        for n in p.values() {
            *c.entry(n.clone()).or_default() += 1;
        }
        c
    };
    let now = scheduler::placements(&etcd).expect("placements");
    assert_eq!(
        per_node(&now),
        BTreeMap::from([("n1".into(), 3), ("n2".into(), 3), ("n3".into(), 3)])
    );
    // A second pass changes nothing.
    let again = scheduler::schedule_once(&etcd, &me).expect("a pass");
    assert!(again.changed.is_empty());

    // n3 dies and n1 leaves: once n3's lease ends, a pass by n2 (elected
    // after n1's leadership went with n1's lease) keeps n2's three, moves
    // one more onto n2's last slot, and says why the other five wait.
    let on_n2: Vec<String> = now
        .iter()
        .filter(|(_, n)| *n == "n2")
        .map(|(i, _)| i.clone())
        .collect();
    drop(n3);
    n1.leave().expect("n1 leaves");
    let t = Instant::now();
    while node::nodes(&etcd).expect("nodes").len() != 1 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "n3's lease did not end"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // n1's leadership went with its lease: its pass is refused, unwritten.
    match scheduler::schedule_once(&etcd, &me) {
        Err(e @ ScheduleError::Deposed) => {
            assert!(
                e.to_string().starts_with("this node no longer leads"),
                "{e}"
            )
        }
        other => panic!("a deposed scheduler's pass: {other:?}"),
    }
    let me2 = node::campaign(&etcd, "n2", n2.lease())
        .expect("campaign")
        .expect("leader");
    assert_eq!(me2.node, "n2");
    let plan = scheduler::schedule_once(&etcd, &me2).expect("a pass");
    // n2 keeps its 3 and takes 1 more (4 slots); 5 wait.
    assert_eq!(plan.placed.len(), 4);
    assert_eq!(plan.changed.len(), 1);
    assert_eq!(plan.unplaced.len(), 5);
    assert!(plan
        .unplaced
        .values()
        .all(|why| why == "no live node has room (slots, memory, CPUs)"));
    let now = scheduler::placements(&etcd).expect("placements");
    assert_eq!(per_node(&now), BTreeMap::from([("n2".into(), 4)]));
    // Each node's own prefix holds exactly its placements: n2 watches only
    // `assigned/n2/`, and nothing is left under the nodes that went.
    let assigned = |n: &str| -> Vec<String> {
        let prefix = scheduler::assigned_key(n, "");
        etcd.range_prefix(&prefix)
            .expect("range")
            .kvs
            .iter()
            .map(|kv| String::from_utf8_lossy(&kv.key[prefix.len()..]).into_owned())
            .collect()
    };
    let mut on2: Vec<String> = now.keys().cloned().collect();
    on2.sort();
    assert_eq!(assigned("n2"), on2);
    assert!(assigned("n1").is_empty() && assigned("n3").is_empty());
    // What moved came from a node that went.
    let moved: Vec<&String> = plan.changed.keys().collect();
    assert_eq!(moved.len(), 1);
    assert!(!on_n2.contains(moved[0]), "{moved:?} was on n2 already");
    assert_eq!(now[moved[0]], "n2");
}

/// A node's instances as `follow` reports them.
#[derive(Default)]
struct Running(std::collections::BTreeSet<String>);

impl pronto_cluster::agent::Converge for Running {
    fn run(&mut self, name: &str, _placement: &[u8]) {
        self.0.insert(name.to_string());
    }
    fn stop(&mut self, name: &str) {
        self.0.remove(name);
    }
}

#[test]
fn nodes_follow_their_placements_and_a_dead_nodes_instances_run_elsewhere() {
    use pronto_cluster::agent;
    use pronto_cluster::scheduler;
    use pronto_cluster::{Node, Registration};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};

    if !have_etcd() {
        return;
    }
    let m = Members::start(1);
    let etcd = Arc::new(m.client());
    let stop = Arc::new(AtomicBool::new(false));
    struct Agent {
        reg: Option<Arc<Registration>>,
        stop: Arc<AtomicBool>,
        running: Arc<Mutex<Running>>,
    }
    let start = |name: &str, lead: bool| -> Agent {
        let n = Node {
            name: name.into(),
            memory_mib: 4096,
            cpus: 2,
            slots: 20,
            tunnel: None,
            api: None,
            peer: None,
        };
        let reg = Registration::start(etcd.clone(), n, 2).expect("registers");
        let own_stop = Arc::new(AtomicBool::new(false));
        let running = Arc::new(Mutex::new(Running::default()));
        {
            let (etcd, name, s, r) = (
                etcd.clone(),
                name.to_string(),
                own_stop.clone(),
                running.clone(),
            );
            std::thread::spawn(move || {
                struct Shared(Arc<Mutex<Running>>);
                impl agent::Converge for Shared {
                    fn run(&mut self, n: &str, p: &[u8]) {
                        self.0.lock().expect("lock").run(n, p)
                    }
                    fn stop(&mut self, n: &str) {
                        self.0.lock().expect("lock").stop(n)
                    }
                }
                agent::follow(&etcd, &name, &mut Shared(r), &s)
            });
        }
        let reg = Arc::new(reg);
        if lead {
            // The scheduler runs beside its node's follower, on its lease.
            let (etcd, name, s, reg) = (etcd.clone(), name.to_string(), stop.clone(), reg.clone());
            std::thread::spawn(move || {
                agent::lead(
                    etcd,
                    &reg,
                    &name,
                    Duration::from_millis(20),
                    Duration::from_millis(500),
                    &s,
                    &mut |_| {},
                )
            });
        }
        Agent {
            reg: Some(reg),
            stop: own_stop,
            running,
        }
    };
    let mut agents = vec![start("a", true), start("b", false), start("c", false)];
    for i in 0..30 {
        let spec = format!(
            r#"{{"tenant":"t{}","memory_mib":32,"millicpus":100}}"#,
            i % 3
        );
        etcd.put(
            &scheduler::instance_key(&format!("i{i:02}")),
            spec.as_bytes(),
            0,
        )
        .expect("put");
    }
    let all: std::collections::BTreeSet<String> = (0..30).map(|i| format!("i{i:02}")).collect();
    let union = |agents: &[Agent]| -> (std::collections::BTreeSet<String>, usize) {
        let mut u = std::collections::BTreeSet::new();
        let mut total = 0;
        for a in agents {
            let r = a.running.lock().expect("lock");
            total += r.0.len();
            u.extend(r.0.iter().cloned());
        }
        (u, total)
    };
    let wait_for = |agents: &[Agent], what: &str| {
        let t = Instant::now();
        loop {
            let (u, total) = union(agents);
            if u == all && total == 30 {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "{what}: {} of 30 running ({total} copies)",
                u.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait_for(&agents, "placed");
    // Each instance runs on exactly one node, the one its placement names.
    let placements = scheduler::placements(&etcd).expect("placements");
    for (a, name) in agents.iter().zip(["a", "b", "c"]) {
        for i in &a.running.lock().expect("lock").0 {
            assert_eq!(placements[i], name);
        }
    }
    // c dies: its keep-alive and its follower stop.
    let c = agents.pop().expect("c");
    c.stop.store(true, Ordering::Relaxed);
    drop(c.reg);
    let on_c = c.running.lock().expect("lock").0.len();
    assert!(on_c > 0);
    wait_for(&agents, "after c died");
    stop.store(true, Ordering::Relaxed);
    for a in &agents {
        a.stop.store(true, Ordering::Relaxed);
    }
}

/// A follower of batches is told the keys listed, then what each watch
/// response delivers as one batch: a transaction's 100 puts (one
/// revision) together, in order, its 100 deletes together, a lone put
/// alone.
#[test]
fn a_follower_of_batches_takes_a_transaction_as_one() {
    if !have_etcd() {
        return;
    }
    use pronto_cluster::watch::{follow_prefix_batches, Batch};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};

    let m = Members::start(1);
    let etcd = m.client();
    etcd.put(b"/pronto/b/first", b"x", 0).expect("put");
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let follower = {
        let (etcd, stop) = (m.client(), stop.clone());
        std::thread::spawn(move || {
            follow_prefix_batches(&etcd, b"/pronto/b/", &stop, &mut |b| {
                let told = match b {
                    Batch::All(r) => ("all", r.kvs.into_iter().map(|kv| kv.key).collect()),
                    Batch::Changes(c) => (
                        if c.iter().all(|e| matches!(e, Event::Put(_))) {
                            "puts"
                        } else {
                            "deletes"
                        },
                        c.into_iter()
                            .map(|e| e.kv().key.clone())
                            .collect::<Vec<_>>(),
                    ),
                };
                let _ = tx.send(told);
            })
        })
    };
    let next = || rx.recv_timeout(Duration::from_secs(10)).expect("told");
    assert_eq!(next(), ("all", vec![b"/pronto/b/first".to_vec()]));
    let keys: Vec<Vec<u8>> = (0..100)
        .map(|i| format!("/pronto/b/k{i:03}").into_bytes())
        .collect();
    let puts: Vec<Op> = keys
        .iter()
        .map(|k| Op::Put {
            key: k.clone(),
            value: b"v".to_vec(),
            lease: 0,
        })
        .collect();
    assert!(etcd.txn(&[], &puts, &[]).expect("txn").0);
    assert_eq!(next(), ("puts", keys.clone()));
    let deletes: Vec<Op> = keys.iter().map(|k| Op::Delete(k.clone())).collect();
    assert!(etcd.txn(&[], &deletes, &[]).expect("txn").0);
    assert_eq!(next(), ("deletes", keys));
    etcd.put(b"/pronto/b/last", b"x", 0).expect("put");
    assert_eq!(next(), ("puts", vec![b"/pronto/b/last".to_vec()]));
    stop.store(true, Ordering::Relaxed);
    // The watch blocks until a change: one more ends it.
    etcd.put(b"/pronto/b/wake", b"x", 0).expect("put");
    follower.join().expect("the follower ends");
}
