//! Click's notifiers and element handler calls, end to end under simulated
//! time: sources sleep in front of full queues, pullers sleep behind empty
//! ones, time moves on once every task sleeps, and elements write other
//! elements' handlers (`COUNT_CALL`, `END_CALL`).

use pronto_lang::SourceMap;
use pronto_runtime::{Clock, Router, RouterOptions};

fn router(text: &str) -> Router {
    let mut sm = SourceMap::new();
    let file = sm.add("test.click", text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts).expect("parses");
    let ropts = RouterOptions {
        clock: Clock::Simulated(1_000_000_000_000_000_000),
        ..Default::default()
    };
    Router::build(&flat, &sm, &ropts).expect("builds")
}

fn read(r: &mut Router, h: &str) -> String {
    r.read_handler(h, "").expect("handler")
}

#[test]
fn source_sleeps_in_front_of_a_full_queue() {
    // Nothing pulls: the source fills the queue and sleeps; the driver's
    // timer still fires because simulated time moves on.
    let mut r = router(
        "i :: InfiniteSource -> q :: Queue(7) -> Idle;
         DriverManager(wait 1s, stop);",
    );
    r.run().expect("runs");
    assert_eq!(read(&mut r, "i.count"), "7");
    assert_eq!(read(&mut r, "q.drops"), "0");
    assert_eq!(read(&mut r, "i.scheduled"), "false");
}

#[test]
fn capacity_write_adds_a_keyword_when_there_is_no_argument() {
    let mut r = router(
        "i :: InfiniteSource -> q :: Queue -> Idle;
         DriverManager(wait 0.01s, write q.capacity 4, stop);",
    );
    r.run().expect("runs");
    assert_eq!(read(&mut r, "q.config"), "CAPACITY 4");
}

#[test]
fn a_queue_without_full_notifier_overflows() {
    let mut r = router(
        "i :: InfiniteSource(LIMIT 12) -> q :: NotifierQueue(5) -> Idle;
         DriverManager(wait 1s, stop);",
    );
    r.run().expect("runs");
    assert_eq!(read(&mut r, "i.count"), "12");
    assert_eq!(read(&mut r, "q.drops"), "7");
}

#[test]
fn capacity_write_wakes_the_source_and_rewrites_config() {
    let mut r = router(
        "i :: InfiniteSource -> q :: Queue(10) -> Idle;
         DriverManager(wait 0.01s, write q.capacity 4, wait 0.01s,
                       write q.capacity 20, wait 0.01s, stop);",
    );
    r.run().expect("runs");
    // 10, then truncated to 4 (the oldest kept), then refilled to 20.
    assert_eq!(read(&mut r, "i.count"), "26");
    assert_eq!(read(&mut r, "q.length"), "20");
    // The first positional argument is rewritten, as Click's
    // `reconfigure_keyword_handler` does.
    assert_eq!(read(&mut r, "q.config"), "20");
}

#[test]
fn puller_sleeps_behind_an_empty_queue_and_wakes() {
    let mut r = router(
        "i :: InfiniteSource(ACTIVE false, LIMIT 3) -> q :: Queue -> u :: Unqueue -> c :: Counter -> Discard;
         DriverManager(wait 0.5s, write i.active true, wait 0.5s, stop);",
    );
    r.run().expect("runs");
    assert_eq!(read(&mut r, "c.count"), "3");
    assert_eq!(read(&mut r, "u.scheduled"), "false");
}

#[test]
fn count_call_writes_another_elements_handler() {
    let mut r = router(
        "InfiniteSource(LIMIT 10, STOP true) -> c :: Counter(COUNT_CALL 4 s.switch 1)
           -> s :: Switch(0); s[0] -> a :: Counter -> Discard; s[1] -> b :: Counter -> Discard;",
    );
    r.run().expect("runs");
    // The fourth packet is counted, the call made, then it moves on.
    assert_eq!(read(&mut r, "a.count"), "3");
    assert_eq!(read(&mut r, "b.count"), "7");
}

#[test]
fn end_call_runs_a_script_in_the_callers_compound() {
    let mut r = router(
        "elementclass Src { s :: InfiniteSource(LIMIT 2, END_CALL t.run) -> output;
                            t :: Script(TYPE PASSIVE, write c.reset, write stop) }
         Src -> c :: Counter -> Discard;",
    );
    r.run().expect("runs");
    assert_eq!(read(&mut r, "c.count"), "0");
}
