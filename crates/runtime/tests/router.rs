//! The runtime end to end: graph checks with their exact messages, push and
//! pull paths, stop handling, handlers.

use pronto_lang::{Diagnostic, SourceMap};
use pronto_runtime::{Clock, Router, RouterOptions};

fn build(text: &str) -> Result<Router, (SourceMap, Vec<Diagnostic>)> {
    let mut sm = SourceMap::new();
    let file = sm.add("test.click", text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let flat = match pronto_lang::parse_flat(&sm, file, &opts) {
        Ok((flat, _)) => flat,
        Err(e) => return Err((sm, e)),
    };
    let ropts = RouterOptions {
        clock: Clock::Simulated(1_000_000_000_000_000_000),
        ..Default::default()
    };
    Router::build(&flat, &sm, &ropts).map_err(|e| (sm, e))
}

fn errors(text: &str) -> Vec<String> {
    match build(text) {
        Ok(_) => panic!("expected errors for {text:?}"),
        Err((sm, e)) => e.iter().map(|d| d.render_click(&sm)).collect(),
    }
}

#[test]
fn unconnected_output_is_an_error() {
    assert_eq!(
        errors("InfiniteSource -> c :: Counter;"),
        vec!["test.click:1: 'c :: Counter' output 0 unused"]
    );
}

#[test]
fn push_output_connected_twice_is_an_error() {
    let e = errors("s :: InfiniteSource; s -> Discard; s -> Discard;");
    assert_eq!(
        e,
        vec!["test.click:1: illegal reuse of 's :: InfiniteSource' push output 0"]
    );
}

#[test]
fn push_pull_conflict_is_an_error() {
    // Click's messages, without a landmark, as Click prints them.
    let e = errors("InfiniteSource -> Queue -> Counter -> Tee -> Discard;");
    assert_eq!(
        e,
        vec!["agnostic 'Counter@3 :: Counter' in mixed context: pull input 0, push output 0"]
    );
    // No queue between a push source and a push sink: the agnostic
    // element between them is fine; a pull one is not.
    let e = errors("TimedSource -> c :: Counter -> Unqueue -> Discard;");
    assert_eq!(
        e,
        vec!["agnostic 'c :: Counter' in mixed context: push input 0, pull output 0"]
    );
    let e = errors("TimedSource -> Unqueue -> Discard;");
    assert_eq!(
        e,
        vec!["'TimedSource@1 :: TimedSource' push output 0 connected to 'Unqueue@2 :: Unqueue' pull input 0"]
    );
    // Flow codes: Idle's input and output are unrelated, so one may be
    // push and the other pull.
    assert!(build("InfiniteSource -> i :: Idle -> Unqueue -> Discard;").is_ok());
}

#[test]
fn graph_errors_in_clicks_stages() {
    // Ports beyond a class's counts are reported first, and end the
    // checks, as in Click.
    let e = errors("InfiniteSource -> d :: Discard; d[1] -> Discard; c :: Counter; Idle -> c;");
    assert_eq!(e, vec!["test.click:1: 'd :: Discard' has no output 1"]);
    // Reuse, then unused inputs, then unused outputs.
    let e = errors(
        "s :: InfiniteSource; s -> Discard; s -> Discard; q :: Queue; u :: Unqueue; q -> u; Idle -> Queue -> u; u -> Discard; c :: Counter; c -> Discard; t :: Tee; Idle -> t; t[1] -> Discard;",
    );
    assert_eq!(
        e,
        vec![
            "test.click:1: illegal reuse of 'u :: Unqueue' pull input 0",
            "test.click:1: illegal reuse of 's :: InfiniteSource' push output 0",
            "test.click:1: 'q :: Queue' input 0 unused",
            "test.click:1: 'c :: Counter' input 0 unused",
            "test.click:1: 't :: Tee' output 0 unused",
        ]
    );
}

#[test]
fn unknown_class_is_an_error() {
    let e = errors("InfiniteSource -> d :: Discard; x :: NoSuchThing;");
    assert_eq!(e, vec!["test.click:1: unknown element class 'NoSuchThing'"]);
}

#[test]
fn bad_argument_names_keyword_and_element() {
    match build("InfiniteSource(LIMIT many) -> Discard;") {
        Ok(_) => panic!("should fail"),
        Err((sm, e)) => {
            let r = e[0].render(&sm);
            assert!(r.contains("LIMIT"), "{r}");
            assert!(
                r.contains("while configuring `InfiniteSource@1 :: InfiniteSource`"),
                "{r}"
            );
            assert!(r.contains("test.click:1:"), "{r}");
        }
    }
}

#[test]
fn limited_source_through_queue_and_unqueue() {
    let mut r = build(
        "src :: InfiniteSource(LIMIT 1000, BURST 7, STOP true) -> q :: Queue(2000) -> u :: Unqueue(BURST 16) -> c :: Counter -> Discard;",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    r.run().expect("run");
    assert_eq!(r.read_handler("src.count", "").expect("count"), "1000");
    // Click stops the driver as soon as the source is done: packets still
    // queued stay queued.
    let moved: u64 = r
        .read_handler("c.count", "")
        .expect("c")
        .parse()
        .expect("int");
    let queued: u64 = r
        .read_handler("q.length", "")
        .expect("len")
        .parse()
        .expect("int");
    assert_eq!(moved + queued, 1000);
    assert_eq!(r.pool().available() + queued as usize, r.pool().capacity());
}

#[test]
fn driver_manager_waits_for_stop_and_prints() {
    let mut r = build(
        "src :: InfiniteSource(LIMIT 300, STOP true) -> c :: Counter -> Discard; DriverManager(wait, write c.reset, stop);",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    r.run().expect("run");
    assert_eq!(r.read_handler("c.count", "").expect("c"), "0");
    assert_eq!(r.read_handler("src.count", "").expect("src"), "300");
}

#[test]
fn default_handlers() {
    let mut r = build("s :: InfiniteSource -> c :: Counter -> Discard;")
        .unwrap_or_else(|_| panic!("build"));
    assert_eq!(r.read_handler("c.class", "").expect("class"), "Counter");
    assert_eq!(
        r.read_handler("c.ports", "").expect("ports"),
        "1 input\npush\n1 output\npush\n"
    );
    assert!(r.read_handler("c.nonesuch", "").is_err());
    assert!(r.read_handler("nobody.count", "").is_err());
}

#[test]
fn split_that_merges_keeps_packet_order() {
    // Packets alternate between the two Classifier outputs and meet again
    // in one Queue: the queue must hold them in arrival order.
    let mut r = build(
        "src :: InfiniteSource(DATA \\<0800>, LIMIT 4, STOP true) -> p :: Paint(1) -> RoundRobinSwitch => [0]q :: Queue, [0]q; q -> Discard(ACTIVE false);",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    r.run().expect("run");
    assert_eq!(r.read_handler("q.length", "").expect("len"), "4");
}

#[test]
fn source_and_unqueue_interleave_as_in_click() {
    // With Click's default BURST of 1 the source and Unqueue alternate, so
    // the queue never holds more than one packet and all three leave it
    // before the stop (Click 2.1 prints 0, 1, 3 here).
    let mut r = build(
        "i :: InfiniteSource(LIMIT 3, STOP true) -> q :: Queue(5) -> Unqueue -> d :: Discard;",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    r.run().expect("run");
    assert_eq!(r.read_handler("q.length", "").expect("len"), "0");
    assert_eq!(r.read_handler("q.highwater_length", "").expect("hw"), "1");
    assert_eq!(r.read_handler("d.count", "").expect("count"), "3");
}

#[test]
fn address_info_names_resolve_in_their_compound() {
    // Click's AddressInfo example: `mazu` is local to the compound.
    let text = "AddressInfo(mauer 10.0.0.1 00-50-BA-85-84-A9);
        comp :: { AddressInfo(mazu 10.0.0.10/24); input -> IPEncap(17, mauer, mazu:bcast) -> output };
        InfiniteSource(LIMIT 2, STOP true) -> comp
          -> c :: IPClassifier(src host 10.0.0.1 and dst host 10.0.0.255, -);
        c[0] -> hit :: Counter -> Discard; c[1] -> Discard;";
    let mut r = build(text).unwrap_or_else(|(sm, e)| {
        panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>())
    });
    r.run().expect("run");
    assert_eq!(r.read_handler("hit.count", "").expect("count"), "2");

    let e = errors(
        "comp :: { AddressInfo(mazu 10.0.0.10); input -> output };
         InfiniteSource -> comp -> IPEncap(6, 10.0.0.1, mazu) -> Discard;",
    );
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(e[0].contains("DST argument should be IP address"), "{e:?}");
}

#[test]
fn address_info_ipv6_names() {
    // `n` names an IPv6 address and its /64; the IPv6 elements read it.
    let mut r = build(
        "AddressInfo(n 2001:db8::1/64, far 2001:db8:9::9);
         InfiniteSource(LIMIT 2, STOP true) -> e :: IP6Encap(59, n, far)
           -> chk :: CheckIP6Header(\"n:ip6 ::2\") -> Discard;
         chk[1] -> bad :: Counter -> Discard;",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    r.run().expect("run");
    assert_eq!(r.read_handler("bad.count", "").expect("count"), "2");
    assert_eq!(r.read_handler("e.src", "").expect("src"), "2001:db8::1");
    assert_eq!(r.read_handler("e.dst", "").expect("dst"), "2001:db8:9::9");
    let e = errors(
        "AddressInfo(lan 2001:db8::/64);
         InfiniteSource -> IP6Encap(59, lan, ::2) -> Discard;",
    );
    assert_eq!(e.len(), 1, "a prefix is not an address: {e:?}");
}

#[test]
fn address_info_name_gives_arp_responder_both_addresses() {
    let mut r = build(
        "AddressInfo(mauer 10.0.0.1 00-50-BA-85-84-A9);
         a :: ARPResponder(mauer); Idle -> a -> Discard;",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    assert_eq!(
        r.read_handler("a.table", "").expect("table"),
        "10.0.0.1/32 00-50-BA-85-84-A9\n"
    );
}

#[test]
fn address_info_names_in_ipfilter_expressions() {
    let mut r = build(
        "AddressInfo(lan 10.0.0.1/24, gw 10.0.0.254);
         InfiniteSource(LIMIT 3, STOP true) -> IPEncap(17, gw, 10.0.0.9)
           -> f :: IPFilter(allow src host gw and dst net lan:ipnet, deny all)
           -> c :: Counter -> Discard;",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    r.run().expect("run");
    assert_eq!(r.read_handler("c.count", "").expect("count"), "3");
}

#[test]
fn address_info_names_in_route_tables() {
    let mut r = build(
        "AddressInfo(lan 10.0.0.1/24, up 192.0.2.1);
         rt :: RadixIPLookup(lan:ipnet 0, 0/0 up 1);
         Idle -> rt; rt[0] -> Discard; rt[1] -> Discard;",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    assert_eq!(
        r.read_handler("rt.table", "").expect("table"),
        "10.0.0.0/24\t\t-\t\t0\n0.0.0.0/0\t\t192.0.2.1\t1\n"
    );
}

#[test]
fn red_sees_a_full_queue_as_full_within_a_batch() {
    // Click 2.1 prints `0 55`: the queue fills, RED's instant average never
    // exceeds the queue's capacity (5) so it never reaches 30.
    let mut r = build(
        "InfiniteSource(LIMIT 60, STOP true, BURST 60) -> r :: RED(30, 30, 1, STABILITY 0, QUEUES q)
           -> q :: Queue(5) -> Unqueue(ACTIVE false) -> Discard;",
    )
    .unwrap_or_else(|(sm, e)| panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>()));
    r.run().expect("run");
    assert_eq!(r.read_handler("r.drops", "").expect("drops"), "0");
    assert_eq!(r.read_handler("q.drops", "").expect("drops"), "55");
    // RED answers `config` with Click's normalised text.
    assert_eq!(
        r.read_handler("r.config", "").expect("config"),
        "30, 30, 1, QUEUES q, STABILITY 0"
    );
}

/// Click's hot-swap: a queue's packets (up to the new capacity) and a
/// rewriter's flows move to the elements of the same name and class in
/// the configuration that replaces them; other elements start afresh and
/// the old pool is left with nothing in use.
#[test]
fn take_state_moves_queued_packets_and_flows() {
    let udp = "45000020000000004011000001020304050607080400003500000000deadbeef";
    let old_text = format!(
        "src :: InfiniteSource(DATA \\<{udp}>, LIMIT 5, STOP true) -> c :: Counter \
         -> t :: Tee -> MarkIPHeader -> rw :: IPRewriter(pattern 9.9.9.9 1024-65535 - - 0 0) \
         -> Discard; t[1] -> q :: Queue(10) -> Idle;"
    );
    let show = |(sm, e): (SourceMap, Vec<Diagnostic>)| {
        panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>())
    };
    let mut old = build(&old_text).unwrap_or_else(show);
    old.run().expect("run");
    assert_eq!(old.read_handler("q.length", "").expect("len"), "5");
    assert_eq!(old.read_handler("rw.nmappings", "").expect("n"), "1");
    assert_eq!(old.read_handler("c.count", "").expect("c"), "5");

    let mut new = build(
        "Idle -> c :: Counter -> MarkIPHeader -> rw :: IPRewriter(pattern 9.9.9.9 1024-65535 - - 0 0) \
         -> Discard; Idle -> q :: Queue(3) -> Idle; Idle -> other :: Queue -> Idle;",
    )
    .unwrap_or_else(show);
    let took = new.take_state(&mut old);
    assert_eq!(
        took,
        vec![
            ("rw".to_string(), "1 flows".to_string()),
            ("q".to_string(), "3 of 5 packets".to_string()),
        ]
    );
    assert_eq!(new.read_handler("q.length", "").expect("len"), "3");
    assert_eq!(new.read_handler("rw.nmappings", "").expect("n"), "1");
    assert_eq!(old.read_handler("rw.nmappings", "").expect("n"), "0");
    // Click's Counter keeps no state across a hot-swap.
    assert_eq!(new.read_handler("c.count", "").expect("c"), "0");
    assert_eq!(old.read_handler("q.length", "").expect("len"), "0");
    assert_eq!(
        old.pool().available(),
        old.pool().capacity(),
        "every old packet was copied into the new pool or freed"
    );
    assert_eq!(new.pool().available() + 3, new.pool().capacity());

    // Another class under the same name takes nothing.
    let mut other = build("Idle -> q :: SimpleQueue -> Idle;").unwrap_or_else(show);
    assert!(other.take_state(&mut new).is_empty());
    assert_eq!(new.read_handler("q.length", "").expect("len"), "3");
}

#[test]
fn timewarp_handler() {
    let mut r = build("Idle -> Discard;").unwrap_or_else(|_| panic!("builds"));
    assert_eq!(r.read_handler("timewarp", "").expect("reads"), "1");
    // Under simulated time router time does not follow real time: the
    // write is accepted and changes nothing.
    assert!(r.write_handler("timewarp", "0").is_err());
    assert!(r.write_handler("timewarp", "2").is_ok());
}

#[test]
fn rewriters_share_a_capacity_named_before_it_is_configured() {
    // rw1 names rw2, declared (and so configured) after it.
    let udp =
        |src: &str| format!("4500002000000000401100000a0000{src}050607080400003500000000deadbeef");
    let text = format!(
        "rw1 :: UDPRewriter(pattern 1.0.0.2 1024-65534 - - 0 0, drop, MAPPING_CAPACITY rw2);
         rw2 :: UDPRewriter(pattern 1.0.0.3 1024-65534 - - 0 0, drop, MAPPING_CAPACITY 2);
         InfiniteSource(DATA \\<{}>, LIMIT 1, STOP false) -> MarkIPHeader -> [0]rw1;
         InfiniteSource(DATA \\<{}>, LIMIT 1, STOP false) -> MarkIPHeader -> [0]rw2;
         InfiniteSource(DATA \\<{}>, LIMIT 1, STOP true) -> MarkIPHeader -> [0]rw1;
         rw1[0] -> c1 :: Counter -> Discard; rw2[0] -> c2 :: Counter -> Discard;
         Idle -> [1]rw1[1] -> Discard; Idle -> [1]rw2[1] -> Discard;",
        udp("01"),
        udp("02"),
        udp("03")
    );
    let mut r = build(&text).unwrap_or_else(|(sm, e)| {
        panic!("{}", e.iter().map(|d| d.render(&sm)).collect::<String>())
    });
    r.run().expect("run");
    let h = |r: &mut Router, n: &str| r.read_handler(n, "").expect(n);
    // Two flows fit the shared capacity of 2; the third (rw1's second) is
    // refused: its guarantee keeps both others (admission control).
    assert_eq!(h(&mut r, "c1.count"), "1");
    assert_eq!(h(&mut r, "c2.count"), "1");
    assert_eq!(h(&mut r, "rw1.size"), "2");
    assert_eq!(h(&mut r, "rw2.size"), "2");
    assert_eq!(h(&mut r, "rw1.mapping_failures"), "1");
    assert_eq!(h(&mut r, "rw1.capacity"), "2");
    r.write_handler("rw1.capacity", "5").expect("write");
    assert_eq!(h(&mut r, "rw2.capacity"), "5");
}

#[test]
fn shared_capacity_errors() {
    let e = errors(
        "rw1 :: UDPRewriter(drop, MAPPING_CAPACITY rw2); rw2 :: UDPRewriter(drop, MAPPING_CAPACITY rw1);
         Idle -> rw1 -> Discard; Idle -> rw2 -> Discard;",
    );
    assert!(
        e.iter().any(|m| m
            .contains("MAPPING_CAPACITY: `rw2` shares this rewriter's capacity in turn (a cycle)")),
        "{e:?}"
    );
    let e = errors(
        "rw1 :: UDPRewriter(drop, MAPPING_CAPACITY c); Idle -> rw1 -> c :: Counter -> Discard;",
    );
    assert!(
        e.iter().any(|m| m.contains("MAPPING_CAPACITY: `c` is a Counter; pronto shares the capacity of an IPRewriter, TCPRewriter or UDPRewriter only")),
        "{e:?}"
    );
    let e = errors("rw1 :: UDPRewriter(drop, MAPPING_CAPACITY nobody); Idle -> rw1 -> Discard;");
    assert!(
        e.iter().any(|m| m.contains("`nobody` is neither a number")),
        "{e:?}"
    );
}

/// Runs `Socket(UNIX_DGRAM) -> c :: Counter -> Discard` in real time with
/// `window` ns of poll window, one datagram waiting before it starts, and
/// a script that stops it after `wait`; returns the `idle` handler's polls
/// and sleeps.
fn idle_rounds_after_one_datagram(window: i64, wait: &str) -> (u64, u64) {
    static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("pronto-idle-{}-{n}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let text = format!(
        "Socket(UNIX_DGRAM, {}) -> c :: Counter -> Discard;\nScript(wait {wait}, stop);",
        path.display()
    );
    let mut sm = SourceMap::new();
    let file = sm.add("test.click", &text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts).expect("parses");
    let ropts = RouterOptions {
        poll_window_ns: window,
        ..Default::default()
    };
    let mut r = Router::build(&flat, &sm, &ropts).expect("builds");
    let tx = std::os::unix::net::UnixDatagram::unbound().expect("socket");
    tx.send_to(b"one frame's worth", &path).expect("send");
    r.run().expect("runs");
    assert_eq!(r.read_handler("c.count", "").expect("count"), "1");
    let idle = r.read_handler("idle", "").expect("idle");
    let field = |name: &str| -> u64 {
        idle.lines()
            .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{name}` in {idle:?}"))
    };
    assert_eq!(field("poll_window_ns"), window as u64);
    drop(r);
    let _ = std::fs::remove_file(&path);
    (field("polls"), field("sleeps"))
}

#[test]
fn an_idle_router_polls_within_its_window_after_work_and_sleeps_after_it() {
    // No window: the first idle round sleeps (blocks on the socket).
    let (polls, sleeps) = idle_rounds_after_one_datagram(0, "0.05");
    assert_eq!(polls, 0);
    assert!(sleeps >= 1, "sleeps {sleeps}");
    // A window longer than the run: every idle round after the datagram
    // polls again, none sleeps.
    let (polls, sleeps) = idle_rounds_after_one_datagram(60_000_000_000, "0.05");
    assert!(polls >= 1, "polls {polls}");
    assert_eq!(sleeps, 0);
    // A 1 ms window in a 200 ms run: polls first, then sleeps.
    let (polls, sleeps) = idle_rounds_after_one_datagram(1_000_000, "0.2");
    assert!(polls >= 1, "polls {polls}");
    assert!(sleeps >= 1, "sleeps {sleeps}");
}

/// The global `order` handler says how each split that merges again keeps
/// Click's order: sorted back at its merge points when everything after it
/// is one for one, else one packet at a time (an element that copies, one
/// that names another's state, a counter that calls a handler); a handler
/// write that changes an element's answer is followed.
#[test]
fn splits_that_merge_again_are_ordered_at_the_merge_points_where_they_can_be() {
    let mut r = build(
        "src :: InfiniteSource(LIMIT 64, BURST 32, STOP true) -> c :: Classifier(0/00, -);
         c[0] -> a :: Counter -> d :: Discard;
         c[1] -> b :: Counter -> d;
         src2 :: InfiniteSource(LIMIT 64, BURST 32, STOP true) -> t :: Classifier(0/00, -);
         t[0] -> Tee(1) -> e :: Discard;
         t[1] -> e;",
    )
    .expect("builds");
    assert_eq!(
        r.read_handler("order", "").expect("order"),
        "c: batches, ordered at d\nt: one packet at a time\n"
    );
    r.write_handler("a.count_call", "5 b.reset").expect("write");
    assert_eq!(
        r.read_handler("order", "").expect("order"),
        "c: one packet at a time\nt: one packet at a time\n"
    );
    r.run().expect("runs");
    assert_eq!(r.read_handler("d.count", "").expect("count").trim(), "64");

    // ICMPRewriter reads the flows of the rewriter it names: on parallel
    // paths, the two run as one group in the packets' joint order; where
    // one reaches the other, the split goes one packet at a time.
    let parallel = "rw :: IPRewriter(pattern 192.0.2.1 1024-65535 - - 0 1);
         errs :: ICMPRewriter(rw);
         src :: InfiniteSource(LIMIT 1, STOP true) -> MarkIPHeader(14)
           -> s :: IPClassifier(icmp, -);
         s[0] -> errs -> out :: Discard;
         errs[1] -> out;
         s[1] -> rw -> out;
         rw[1] -> out;";
    let mut r = build(parallel).expect("builds");
    let order = r.read_handler("order", "").expect("order");
    assert_eq!(
        order,
        "rw: batches, ordered at out\nerrs: batches, ordered at out\n\
         s: batches, ordered at rw+errs out\n"
    );
    let in_line = parallel.replace("rw[1] -> out;", "rw[1] -> errs;");
    let mut r = build(&in_line).expect("builds");
    let order = r.read_handler("order", "").expect("order");
    assert!(order.contains("s: one packet at a time\n"), "{order}");
}
