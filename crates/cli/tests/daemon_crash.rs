//! A daemon that ends at the worst moment: killed (`kill -9`) at random
//! points under concurrent creates and deletes of the same names, it comes
//! back with exactly the instances it acknowledged; stopped with SIGTERM,
//! it leaves no cgroup behind; its store is readable by it alone.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::api::{self, To};
use serde_json::json;

fn is_root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    eprintln!("SKIPPED {test}: sandboxes need root");
    false
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < Duration::from_secs(30), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The cgroup hierarchies' roots: v2's one, or v1's memory, cpu and pids.
fn cgroup_roots() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        vec![root.to_path_buf()]
    } else {
        ["memory", "cpu", "pids"]
            .iter()
            .map(|c| root.join(c))
            .collect()
    }
}

/// Where daemon `pid` keeps its sandboxes' cgroups, in every hierarchy.
fn daemon_cgroups(pid: u32) -> Vec<PathBuf> {
    cgroup_roots()
        .into_iter()
        .map(|r| r.join("pronto").join(format!("prontod-{pid}")))
        .collect()
}

/// The sandbox cgroups under one of [`daemon_cgroups`].
fn children(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// One API call of the stress test and what came of it.
#[derive(Clone, Debug)]
struct Op {
    name: String,
    create: bool,
    start: Instant,
    /// When the answer came and its status; `None`: the daemon died first.
    end: Option<(Instant, u16)>,
}

/// Whether `op` tells what the state of its name was when it took effect:
/// a create answered 201 or 409 (present), a delete 204 or 404 (absent).
fn decisive(op: &Op) -> Option<bool> {
    match (op.create, op.end.map(|e| e.1)) {
        (true, Some(201 | 409)) => Some(true),
        (false, Some(204 | 404)) => Some(false),
        _ => None,
    }
}

/// The states (present or not) a name may be in after `ops`, starting
/// from `initial`, under any order of the operations that agrees with
/// real time: the outcome of any decisive operation that no other
/// decisive one started after the end of, or of any operation left
/// without an answer (which may or may not have taken effect).
fn allowed(initial: bool, ops: &[&Op]) -> BTreeSet<bool> {
    let mut out = BTreeSet::new();
    let decided: Vec<(&Op, bool)> = ops
        .iter()
        .filter_map(|o| decisive(o).map(|d| (*o, d)))
        .collect();
    for (o, state) in &decided {
        let end = o.end.expect("answered").0;
        if !decided.iter().any(|(p, _)| p.start > end) {
            out.insert(*state);
        }
    }
    if decided.is_empty() {
        out.insert(initial);
    }
    for o in ops.iter().filter(|o| o.end.is_none()) {
        out.insert(o.create);
    }
    out
}

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

fn listed(sock: &Path) -> BTreeSet<String> {
    let r = api::call(&To::Unix(sock), "GET", "/v1/instances", b"");
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|i| i["name"].as_str().expect("name").to_string())
        .collect()
}

#[test]
fn a_daemon_killed_under_concurrent_creates_and_deletes_restores_what_it_acknowledged() {
    if !is_root(
        "a_daemon_killed_under_concurrent_creates_and_deletes_restores_what_it_acknowledged",
    ) {
        return;
    }
    // More names than clients: at the kill, most names have no call in
    // flight, so what they must be after the restart is decided.
    const NAMES: usize = 40;
    const THREADS: usize = 16;
    const KILLS: u64 = 4;
    let dir = common::scratch("crash-stress");
    let sock = dir.join("sock");
    let mut present: BTreeSet<String> = BTreeSet::new();
    let mut answers: BTreeMap<(bool, u16), usize> = BTreeMap::new();
    let mut decided = 0;
    for round in 0..=KILLS {
        let d = common::start_daemon(&dir);
        // Restored: what was acknowledged, nothing else; and running.
        let now = listed(&sock);
        assert_eq!(now, present, "round {round}: restored instances");
        for n in &now {
            wait_until("a restored instance runs", || {
                let v =
                    api::call(&To::Unix(&sock), "GET", &format!("/v1/instances/{n}"), b"").json();
                v["state"] == "running"
            });
        }
        if round == KILLS {
            // Removing them leaves only the pre-started sandboxes' cgroups.
            for n in &now {
                let r = api::call(
                    &To::Unix(&sock),
                    "DELETE",
                    &format!("/v1/instances/{n}"),
                    b"",
                );
                assert_eq!(r.status, 204, "{}", r.text());
            }
            for dir in daemon_cgroups(d.pid()) {
                let left: Vec<String> = children(&dir)
                    .into_iter()
                    .filter(|c| !c.starts_with("warm"))
                    .collect();
                assert!(left.is_empty(), "{}: {left:?}", dir.display());
            }
            break;
        }
        let ops: Arc<Mutex<Vec<Op>>> = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        for t in 0..THREADS {
            let (ops, stop, sock) = (ops.clone(), stop.clone(), sock.clone());
            threads.push(std::thread::spawn(move || {
                let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ ((round << 8) + t as u64 + 1);
                while !stop.load(Ordering::Relaxed) {
                    let name = format!("rr{}", xorshift(&mut seed) % NAMES as u64);
                    let create = xorshift(&mut seed) & 1 == 0;
                    let start = Instant::now();
                    let r = if create {
                        let body = json!({"name": name, "config": "Idle -> Discard;"});
                        api::try_call(
                            &To::Unix(&sock),
                            "POST",
                            "/v1/instances",
                            &[],
                            body.to_string().as_bytes(),
                        )
                    } else {
                        api::try_call(
                            &To::Unix(&sock),
                            "DELETE",
                            &format!("/v1/instances/{name}"),
                            &[],
                            b"",
                        )
                    };
                    let end = match r {
                        Ok(reply) => {
                            if ![201, 204, 404, 409].contains(&reply.status) {
                                panic!(
                                    "{} {name}: {} {}",
                                    if create { "create" } else { "delete" },
                                    reply.status,
                                    reply.text()
                                );
                            }
                            // Errors name the instance, not a path.
                            if reply.status == 404 {
                                reply.error(404, None);
                            } else if reply.status == 409 {
                                reply.error(409, Some("name"));
                            }
                            Some((Instant::now(), reply.status))
                        }
                        // The daemon is gone: this call never reached it.
                        Err((false, _)) => return,
                        // The daemon died while this call was in flight.
                        Err((true, _)) => None,
                    };
                    ops.lock().expect("ops").push(Op {
                        name,
                        create,
                        start,
                        end,
                    });
                    if end.is_none() {
                        return;
                    }
                }
            }));
        }
        // Kill it at a point that differs from round to round.
        let mut seed = 0x2545_f491_4f6c_dd1du64 + round;
        std::thread::sleep(Duration::from_millis(800 + xorshift(&mut seed) % 2200));
        let old = d.pid();
        d.kill9();
        stop.store(true, Ordering::Relaxed);
        for t in threads {
            t.join().expect("a client thread");
        }
        let ops = ops.lock().expect("ops").clone();
        assert!(ops.len() > 20, "round {round}: only {} calls", ops.len());
        for o in &ops {
            if let Some((_, s)) = o.end {
                *answers.entry((o.create, s)).or_default() += 1;
            }
        }
        // What may exist now, name by name; the next round checks it.
        let mut must = BTreeSet::new();
        let mut may = BTreeSet::new();
        for i in 0..NAMES {
            let name = format!("rr{i}");
            let mine: Vec<&Op> = ops.iter().filter(|o| o.name == name).collect();
            let a = allowed(present.contains(&name), &mine);
            if a.contains(&true) {
                may.insert(name.clone());
            }
            if a.len() == 1 {
                decided += 1;
            }
            if a == BTreeSet::from([true]) {
                must.insert(name);
            }
        }
        // Restart and compare.
        let d2 = common::start_daemon(&dir);
        let now = listed(&sock);
        assert!(
            must.is_subset(&now) && now.is_subset(&may),
            "round {round}: restored {now:?}; acknowledged present {must:?}; may be present \
             {may:?}\n{:#?}",
            ops.iter()
                .filter(|o| must.symmetric_difference(&now).any(|n| *n == o.name)
                    || now.difference(&may).any(|n| *n == o.name))
                .collect::<Vec<_>>()
        );
        present = now;
        // The killed daemon's cgroups are swept when the next one starts.
        wait_until("the dead daemon's cgroups are removed", || {
            daemon_cgroups(old).iter().all(|p| !p.exists())
        });
        d2.kill9();
    }
    eprintln!(
        "answers (create?, status) -> count: {answers:?}; names whose state was decided at a \
         kill: {decided} of {}",
        NAMES as u64 * KILLS
    );
    assert!(
        decided as u64 > NAMES as u64 * KILLS / 2,
        "too few names decided: {decided}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Creates instance `name` running `Idle -> Discard;` through the
/// daemon at `sock`.
fn create_idle(sock: &Path, name: &str) {
    let body = json!({"name": name, "config": "Idle -> Discard;"});
    let r = api::call(
        &To::Unix(sock),
        "POST",
        "/v1/instances",
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
}

#[test]
fn sigterm_leaves_no_cgroup_behind() {
    if !is_root("sigterm_leaves_no_cgroup_behind") {
        return;
    }
    let dir = common::scratch("crash-sigterm");
    let sock = dir.join("sock");
    for round in 0..3u64 {
        let d = common::start_daemon_with(&dir, &["--warm", "2"]);
        let pid = d.pid();
        let mine = daemon_cgroups(pid);
        if round > 0 {
            // Taking a pre-started sandbox starts its replacement at once.
            create_idle(&sock, &format!("t{round}"));
        }
        wait_until("pre-started sandboxes in the daemon's cgroup", || {
            mine.iter()
                .all(|d| children(d).iter().any(|c| c.starts_with("warm")))
        });
        std::thread::sleep(Duration::from_millis(round * 7));
        let status = d.term();
        assert!(status.success(), "{status:?}");
        for p in &mine {
            assert!(!p.exists(), "{} is left after SIGTERM", p.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777
}

#[test]
fn the_store_is_readable_by_the_daemon_alone() {
    if !is_root("the_store_is_readable_by_the_daemon_alone") {
        return;
    }
    let dir = common::scratch("crash-store");
    let state = dir.join("state");
    let d = common::start_daemon(&dir);
    let r = api::call(
        &To::Unix(&dir.join("sock")),
        "POST",
        "/v1/tenants",
        br#"{"name": "acme"}"#,
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&state.join("state.redb")), 0o600);
    assert_eq!(mode(&state.join("admin.token")), 0o600);
    d.kill9();
    // A store an older daemon left readable is made private on start.
    for (p, m) in [
        (state.clone(), 0o755),
        (state.join("state.redb"), 0o644),
        (state.join("admin.token"), 0o644),
    ] {
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).expect("chmod");
    }
    let _d = common::start_daemon(&dir);
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&state.join("state.redb")), 0o600);
    assert_eq!(mode(&state.join("admin.token")), 0o600);
    let r = api::call(&To::Unix(&dir.join("sock")), "GET", "/v1/tenants", b"");
    assert!(r.text().contains("acme"), "{}", r.text());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sigterm_stops_instances_started_from_the_pool_without_killing_them_first() {
    // A pre-started sandbox dies with the thread that started it (its
    // parent-death signal follows the thread): the pool's thread must
    // outlive the instances that took its sandboxes, or a shutdown kills
    // them, their supervisors restart them, and then stop them.
    let test = "sigterm_stops_instances_started_from_the_pool_without_killing_them_first";
    if !is_root(test) {
        return;
    }
    let dir = common::scratch("crash-pool-stop");
    let sock = dir.join("sock");
    let d = common::start_daemon_with(&dir, &["--warm", "1"]);
    let mine = daemon_cgroups(d.pid());
    for i in 0..3 {
        wait_until("a pre-started sandbox", || {
            mine.iter()
                .all(|d| children(d).iter().any(|c| c.starts_with("warm")))
        });
        create_idle(&sock, &format!("p{i}"));
    }
    let log = d.log.clone();
    let status = d.term();
    assert!(status.success(), "{status:?}");
    // The daemon's standard error is read to its end by another thread.
    std::thread::sleep(Duration::from_millis(300));
    let log = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    assert!(!log.contains("ended unexpectedly"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
