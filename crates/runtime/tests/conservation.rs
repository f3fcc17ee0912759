//! Conservation: no packet is ever lost uncounted.
//!
//! Random configurations are built from the element library — a source
//! (`FromDump` over a random trace, or `InfiniteSource`), a random graph of
//! stages (copies, fragmenters, classifiers, switches, queues drained by
//! unqueuers and schedulers, shapers, policers, header rewriting), branches
//! that merge again, and sinks — and run under simulated time with a packet
//! pool whose limit is sometimes too small for what the configuration
//! holds. After the run every element's counts must add up (`in + made ==
//! out + freed + held`), the packets the elements say they hold must be
//! exactly the packets the pool has handed out, nothing may be made or
//! freed outside an element's call, each connection's two ends must agree,
//! and every allocation the pool refused must be charged to an element.
//! Each configuration also runs a second time with Click's order kept one
//! packet at a time (`order_per_packet`): the two runs must write the same
//! dumps byte for byte and count the same packets everywhere (merge-point
//! ordering changes how packets move, never which or in what order).
//! `crates/runtime/tests/hostile_packets.rs` makes the same check for every
//! element class on hostile traffic.

use std::fmt::Write as _;

use proptest::prelude::*;

/// One stage: Click text with `{A}`, `{B}`, ... filled from its numbers,
/// the number of inputs of its first element (`in`), and its outputs. The
/// stage's entry is the element named `E` (replaced by a unique name); its
/// exit, for multi-element stages, is named `X` (else `E`).
struct Stage {
    text: &'static str,
    inputs: usize,
    /// Fixed number of outputs, or `None`: 1 to 4 (switches, Tee).
    outputs: Option<usize>,
}

const fn st(text: &'static str, inputs: usize, outputs: usize) -> Stage {
    Stage {
        text,
        inputs,
        outputs: Some(outputs),
    }
}

const fn fan(text: &'static str) -> Stage {
    Stage {
        text,
        inputs: 1,
        outputs: None,
    }
}

const STAGES: &[Stage] = &[
    st("E :: Null", 1, 1),
    st("E :: Counter", 1, 1),
    fan("E :: Tee({N})"),
    fan("E :: RandomSwitch"),
    fan("E :: RoundRobinSwitch"),
    fan("E :: HashSwitch(26, 4)"),
    st("E :: Classifier(12/0800, 12/0806, -)", 1, 3),
    st("E :: IPClassifier(tcp, udp, -)", 1, 3),
    st("E :: IPFilter(allow udp, deny tcp && dst port 80, allow all)", 1, 1),
    st("E :: CheckIPHeader(OFFSET 14)", 1, 2),
    st("E :: IPFragmenter({MTU}, HONOR_DF false)", 1, 2),
    st("E :: IPFragmenter({MTU})", 1, 2),
    st("E :: ICMPError(10.0.0.1, unreachable, host)", 1, 1),
    st("E :: Truncate({T})", 1, 1),
    st("E :: Strip(14) -> CheckIPHeader -> X :: Unstrip(14)", 1, 1),
    st("E :: EtherEncap(0x0800, 02:00:00:00:00:01, 02:00:00:00:00:02)", 1, 1),
    st("E :: Paint({P}) -> X :: PaintSwitch", 1, 3),
    st("E :: Queue({Q}) -> X :: Unqueue(BURST {B})", 1, 1),
    st("E :: SimpleQueue({Q}) -> X :: Unqueue(BURST {B})", 1, 1),
    st("E :: Queue({Q}) -> X :: RatedUnqueue({R})", 1, 1),
    // Shapers, drained by a timed unqueuer and by one that polls.
    st("E :: Queue({Q}) -> Shaper({R}) -> X :: RatedUnqueue({R})", 1, 1),
    st("E :: Queue({Q}) -> Shaper({R}) -> X :: Unqueue(BURST {B})", 1, 1),
    st(
        "E :: Queue({Q}) -> BandwidthShaper({R}00Bps) -> X :: RatedUnqueue({R})",
        1,
        1,
    ),
    st("E :: RatedSplitter({R})", 1, 2),
    st("E :: BandwidthRatedSplitter({R}00Bps)", 1, 2),
    st("E :: Meter({R})", 1, 2),
    st("E :: IPReassembler", 1, 1),
    st("E :: DecIPTTL", 1, 2),
    st("E :: SetIPChecksum", 1, 1),
    st("E :: IPMirror", 1, 1),
    // Two inputs pushed (the second through a Null): where a split's
    // paths meet at them, they take packets from both inputs in one call
    // (`Element::push_inputs`).
    st("E :: Null -> X :: StatefulFirewall; E2 :: Null -> [1]X", 2, 3),
    st(
        "E :: Null -> X :: IPRewriter(pattern 198.51.100.1 1024-65535# - - 0 1, pass 1); \
         E2 :: Null -> [1]X",
        2,
        2,
    ),
    // Two inputs: schedulers pulling from two queues.
    st(
        "E :: Queue({Q}) -> [0]s :: RoundRobinSched -> X :: Unqueue(BURST {B}); E2 :: Queue({Q}) -> [1]s",
        2,
        1,
    ),
    st(
        "E :: Queue({Q}) -> [0]s :: PrioSched -> X :: Unqueue(BURST {B}); E2 :: Queue({Q}) -> [1]s",
        2,
        1,
    ),
    st(
        "E :: Queue({Q}) -> [0]s :: DRRSched -> X :: Unqueue(BURST {B}); E2 :: Queue({Q}) -> [1]s",
        2,
        1,
    ),
];

const SINKS: &[&str] = &[
    "Discard",
    // Two dumps every configuration declares: outputs sent to the same one
    // merge there.
    "dump0",
    "dump1",
    "Counter -> Discard",
    "Queue(8) -> Unqueue -> Discard",
    "Queue(4) -> Idle",
];

/// A generated configuration's shape.
#[derive(Debug, Clone)]
struct Shape {
    /// (stage index, numbers for its holes, outputs, choice of inputs).
    stages: Vec<(usize, [u32; 6], usize, u32)>,
    /// Where each left-over output goes (index into SINKS), or a later
    /// stage to merge into.
    sinks: Vec<(usize, u32)>,
    source: u8,
    frames: Vec<(u8, u16, u32)>,
    limit: u32,
    burst: u32,
    pool_limit: u32,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        prop::collection::vec(
            (
                0..STAGES.len(),
                prop::array::uniform6(any::<u32>()),
                1usize..5,
                any::<u32>(),
            ),
            1..9,
        ),
        prop::collection::vec((0..SINKS.len(), any::<u32>()), 16),
        0u8..3,
        prop::collection::vec((any::<u8>(), 0u16..1600, any::<u32>()), 1..160),
        1u32..400,
        1u32..300,
        prop_oneof![Just(1u32 << 16), 32u32..2048],
    )
        .prop_map(
            |(stages, sinks, source, frames, limit, burst, pool_limit)| Shape {
                stages,
                sinks,
                source,
                frames,
                limit,
                burst,
                pool_limit,
            },
        )
}

/// An Ethernet/IPv4 frame: UDP, TCP or ICMP by `kind`, `len` bytes of
/// payload, a valid or damaged header.
fn frame(kind: u8, len: u16, seed: u32) -> Vec<u8> {
    let proto = [17u8, 6, 1, 17][usize::from(kind & 3)];
    let l4 = match proto {
        6 => 20,
        _ => 8,
    };
    let payload = usize::from(len) % 1400;
    let total = 20 + l4 + payload;
    let mut f = vec![0u8; 14 + total];
    f[0..6].copy_from_slice(&[2, 0, 0, 0, 0, 2]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[8, 0]);
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&(seed as u16).to_be_bytes());
    if kind & 4 != 0 {
        ip[6] = 0x40; // DF
    }
    if kind & 8 != 0 {
        // A fragment: more fragments, some offset.
        ip[6] |= 0x20;
        ip[7] = (seed >> 8) as u8 & 0x1f;
    }
    ip[8] = if kind & 16 != 0 { 1 } else { 64 };
    ip[9] = proto;
    ip[12..16].copy_from_slice(&[10, 0, (seed >> 16) as u8, (seed >> 24) as u8 | 1]);
    ip[16..20].copy_from_slice(&[192, 168, 1, (seed & 0xff) as u8 | 1]);
    let sum = pronto_packet::wire::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&sum.to_be_bytes());
    f[34..36].copy_from_slice(&((seed & 0xffff) as u16).to_be_bytes());
    f[36..38].copy_from_slice(&[0, if kind & 32 != 0 { 80 } else { 53 }]);
    if kind & 64 != 0 {
        // Damaged: a bad header length, or cut short.
        if kind & 128 != 0 {
            f[14] = 0x43;
        } else {
            f.truncate(14 + usize::from(len) % 30);
        }
    }
    f
}

fn pcap(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut v = Vec::new();
    for w in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        if w == 0x0004_0002 {
            v.extend_from_slice(&2u16.to_le_bytes());
            v.extend_from_slice(&4u16.to_le_bytes());
        } else {
            v.extend_from_slice(&w.to_le_bytes());
        }
    }
    for (i, f) in frames.iter().enumerate() {
        v.extend_from_slice(&(1_600_000_000u32 + i as u32 / 10).to_le_bytes());
        v.extend_from_slice(&((i as u32 % 10) * 100_000).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(&(f.len() as u32).to_le_bytes());
        v.extend_from_slice(f);
    }
    v
}

fn fill(text: &str, nums: &[u32; 6], outputs: usize) -> String {
    text.replace("{N}", &outputs.to_string())
        .replace("{MTU}", &(68 + nums[0] % 1432).to_string())
        .replace("{T}", &(nums[1] % 200).to_string())
        .replace("{P}", &(nums[2] % 3).to_string())
        .replace("{Q}", &(1 + nums[3] % 300).to_string())
        .replace("{B}", &(1 + nums[4] % 64).to_string())
        .replace("{R}", &(100 + nums[5] % 100_000).to_string())
}

/// The configuration text of a shape, with the trace at `trace`.
fn config(s: &Shape, trace: &std::path::Path) -> String {
    let mut t = String::new();
    match s.source {
        0 | 1 => {
            let _ = writeln!(t, "src :: FromDump({}, STOP true);", trace.display());
        }
        _ => {
            let f = frame(1, 60, 7);
            let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
            let _ = writeln!(
                t,
                "src :: InfiniteSource(DATA \\<{hex}>, LIMIT {}, BURST {}, STOP true);",
                s.limit, s.burst
            );
        }
    }
    let _ = writeln!(t, "m :: MarkIPHeader(14); src -> m;");
    for d in ["dump0", "dump1"] {
        let path = trace.with_file_name(format!("{d}.pcap"));
        let _ = writeln!(t, "{d} :: ToDump({}); Idle -> {d};", path.display());
    }
    // Open outputs, as (element, port), oldest first.
    let mut open: Vec<(String, usize)> = vec![("m".into(), 0)];
    // Stage entries that take more pushes (for merges), by creation order.
    let mut entries: Vec<String> = Vec::new();
    for (k, (idx, nums, nout, pick)) in s.stages.iter().enumerate() {
        let stage = &STAGES[*idx];
        let outputs = stage.outputs.unwrap_or(*nout);
        let e = format!("e{k}");
        let e2 = format!("f{k}");
        let x = if stage.text.contains("X ::") {
            format!("x{k}")
        } else {
            e.clone()
        };
        let body = fill(stage.text, nums, outputs)
            .replace("E2 ::", &format!("{e2} ::"))
            .replace("E ::", &format!("{e} ::"))
            .replace("X ::", &format!("{x} ::"))
            .replace("[1]X", &format!("[1]{x}"))
            .replace("[0]s", &format!("[0]s{k}"))
            .replace("[1]s", &format!("[1]s{k}"))
            .replace("s ::", &format!("s{k} ::"));
        let _ = writeln!(t, "{body};");
        // Inputs: taken from the open outputs (the pick chooses which).
        let inputs: Vec<String> = match stage.inputs {
            2 => vec![e.clone(), e2.clone()],
            _ => vec![e.clone()],
        };
        if open.len() < inputs.len() {
            // Not enough open outputs: copy one.
            let (from, port) = open.remove(0);
            let _ = writeln!(t, "{from}[{port}] -> c{k} :: Tee({});", inputs.len());
            open.extend((0..inputs.len()).map(|p| (format!("c{k}"), p)));
        }
        for (i, inp) in inputs.iter().enumerate() {
            let j = (*pick as usize + i) % open.len();
            let (from, port) = open.remove(j);
            let _ = writeln!(t, "{from}[{port}] -> {inp};");
        }
        entries.extend(inputs);
        for p in 0..outputs {
            open.push((x.clone(), p));
        }
    }
    // What is left goes to a sink, or merges into a later stage's entry.
    for (n, (from, port)) in open.into_iter().enumerate() {
        let (sink, merge) = s.sinks[n % s.sinks.len()];
        let later: Vec<&String> = entries
            .iter()
            .filter(|e| {
                let k = |s: &str| s[1..].parse::<usize>().unwrap_or(0);
                let from_k = if from == "m" { 0 } else { k(&from) + 1 };
                k(e) >= from_k && from != "m"
            })
            .collect();
        if merge % 3 == 0 && !later.is_empty() {
            let to = later[merge as usize % later.len()];
            let _ = writeln!(t, "{from}[{port}] -> {to};");
        } else {
            let _ = writeln!(t, "{from}[{port}] -> {};", SINKS[sink]);
        }
    }
    t
}

fn build(text: &str, pool_limit: usize) -> Result<pronto_runtime::Router, String> {
    build_with(text, pool_limit, false)
}

/// [`build`], Click's order kept one packet at a time if `per_packet`.
fn build_with(
    text: &str,
    pool_limit: usize,
    per_packet: bool,
) -> Result<pronto_runtime::Router, String> {
    let mut sm = pronto_lang::SourceMap::new();
    let file = sm.add("conservation.click", text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let render = |sm: &pronto_lang::SourceMap, e: &[pronto_lang::Diagnostic]| {
        e.iter()
            .map(|d| d.render(sm))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts).map_err(|e| render(&sm, &e))?;
    let ropts = pronto_runtime::RouterOptions {
        clock: pronto_runtime::Clock::Simulated(1_600_000_000_000_000_000),
        pool_slots: pool_limit.min(256),
        pool_limit,
        order_per_packet: per_packet,
        ..Default::default()
    };
    pronto_runtime::Router::build(&flat, &sm, &ropts).map_err(|e| render(&sm, &e))
}

fn number(router: &mut pronto_runtime::Router, h: &str) -> u64 {
    router
        .read_handler(h, "")
        .unwrap_or_else(|e| panic!("{h}: {e}"))
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{h}: {e}"))
}

/// A scratch directory, removed with all in it when dropped (a failing
/// case's too).
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: String) -> Scratch {
        let d = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&d).expect("scratch dir");
        Scratch(d)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs one shape and checks every count.
fn check(s: &Shape) -> Result<(), TestCaseError> {
    let dir = Scratch::new(format!("pronto-conservation-{}", std::process::id()));
    let trace = dir.0.join("trace.pcap");
    let frames: Vec<Vec<u8>> = s
        .frames
        .iter()
        .map(|&(k, l, seed)| frame(k, l, seed))
        .collect();
    std::fs::write(&trace, pcap(&frames)).expect("write trace");
    let text = config(s, &trace);
    if std::env::var_os("PRONTO_CONSERVATION_SHOW").is_some() {
        eprintln!("---- case\n{text}");
    }
    // A pool limit below what the queues can hold is refused at set-up
    // (tested below); then the limit is raised to what they hold plus a
    // little, so that copies in flight still meet a full pool.
    let mut limit = s.pool_limit as usize;
    let mut router = match build(&text, limit) {
        Ok(r) => r,
        Err(e) if e.contains("more than the packet pool's limit") => {
            let need: usize = e
                .split("can hold ")
                .nth(1)
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok())
                .expect("the error says how many packets");
            limit = need + 1 + s.pool_limit as usize % 64;
            build(&text, limit)
                .map_err(|e| TestCaseError::fail(format!("refused:\n{e}\n{text}")))?
        }
        Err(e) => return Err(TestCaseError::fail(format!("refused:\n{e}\n{text}"))),
    };
    router
        .run()
        .map_err(|e| TestCaseError::fail(format!("run: {e}\n{text}")))?;
    router
        .check_conservation()
        .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    let names: Vec<String> = router.element_names().map(str::to_string).collect();
    let mut refused = 0;
    let mut entered = 0;
    for (i, name) in names.iter().enumerate() {
        let a = router.accounting(i);
        refused += a.refused;
        if name == "m" {
            entered = a.inputs[0];
        }
    }
    // Every refusal is charged to some element.
    let pool = router.read_handler("pool", "").expect("pool handler");
    let pool_refused: u64 = pool
        .lines()
        .find_map(|l| l.strip_prefix("refused "))
        .and_then(|v| v.parse().ok())
        .expect("refused line");
    prop_assert_eq!(refused, pool_refused, "{}", text);
    // The source's packets all went in (it stops only when done, or when
    // what it feeds is full for good).
    let sent = match s.source {
        0 | 1 => frames.len() as u64,
        _ => s.limit as u64,
    };
    let made = number(&mut router, "src.count");
    prop_assert_eq!(entered, made, "{}", text);
    if !text.contains("Idle") {
        // A source whose downstream queue never drains (`Queue -> Idle`)
        // sleeps on its full notifier, as in Click; otherwise it finishes.
        prop_assert_eq!(made, sent, "{}", text);
    }
    // Each connection's ends agree: an element's `ocounts` line for a
    // port is what the next element's `icounts` got from it.
    let total_out: u64 = (0..names.len())
        .map(|i| router.accounting(i).outputs.iter().sum::<u64>())
        .sum();
    let total_in: u64 = (0..names.len())
        .map(|i| router.accounting(i).inputs.iter().sum::<u64>())
        .sum();
    prop_assert_eq!(total_out, total_in, "{}", text);

    // The same configuration with Click's order kept one packet at a
    // time: the same dumps, byte for byte, and the same counts.
    let dumps = |dir: &std::path::Path| -> Vec<Vec<u8>> {
        ["dump0", "dump1"]
            .iter()
            .map(|d| std::fs::read(dir.join(format!("{d}.pcap"))).expect("dump written"))
            .collect()
    };
    let merged = dumps(&dir.0);
    let mut again = build_with(&text, limit, true)
        .map_err(|e| TestCaseError::fail(format!("refused per packet:\n{e}\n{text}")))?;
    again
        .run()
        .map_err(|e| TestCaseError::fail(format!("run per packet: {e}\n{text}")))?;
    let order = router.read_handler("order", "").expect("order handler");
    prop_assert!(
        merged == dumps(&dir.0),
        "the dumps differ\n{}\n{}",
        order,
        text
    );
    for (i, name) in names.iter().enumerate() {
        let (a, b) = (router.accounting(i), again.accounting(i));
        prop_assert_eq!(&a, &b, "{}\n{}\n{}", name, order, text);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256),
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn random_configurations_lose_no_packet(s in shape()) {
        check(&s)?;
    }
}

#[test]
fn a_configuration_that_holds_more_than_the_pool_is_refused_at_set_up() {
    let text = "InfiniteSource -> q :: Queue(600) -> Unqueue -> Discard; \
                Idle -> r :: Queue(500) -> Discard;";
    let e = build(text, 1000).err().expect("refused");
    assert!(
        e.contains(
            "the configuration's elements can hold 1100 packets (`q` 600, `r` 500), more than \
             the packet pool's limit of 1000: lower their capacities or raise the limit \
             (`pronto run --pool-limit 1100`; for an instance, more `memory`)"
        ),
        "{e}"
    );
    assert!(build(text, 1100).is_ok());
}

/// The two losses the invariant was written for, as Click counts them.
#[test]
fn an_element_that_makes_more_packets_than_it_got_loses_none() {
    for (mtu, want) in [(576, 900), (68, 9000)] {
        let text = format!(
            "InfiniteSource(LENGTH 1400, LIMIT 300, BURST 256, STOP true) \
             -> UDPIPEncap(10.0.0.1, 1, 10.0.0.2, 2) -> f :: IPFragmenter({mtu}) \
             -> c :: Counter -> Discard; f[1] -> Discard;"
        );
        let mut r = build(&text, 1 << 20).expect("builds");
        r.run().expect("runs");
        assert_eq!(number(&mut r, "c.count"), want, "MTU {mtu}");
        assert_eq!(number(&mut r, "f.drops"), 0);
        r.check_conservation().expect("conserved");
    }
}

#[test]
fn copies_held_in_queues_are_all_counted() {
    let mut text =
        String::from("s :: InfiniteSource(LIMIT 3000, BURST 250, STOP true) -> t :: Tee(8);\n");
    for b in 0..8 {
        let _ = writeln!(
            text,
            "t[{b}] -> q{b} :: Queue(100000) -> Unqueue(BURST 1) -> c{b} :: Counter -> Discard;"
        );
    }
    let mut r = build(&text, pronto_runtime::DEFAULT_POOL_LIMIT).expect("builds");
    r.run().expect("runs");
    for b in 0..8 {
        let got = number(&mut r, &format!("c{b}.count")) + number(&mut r, &format!("q{b}.length"));
        assert_eq!(got, 3000, "branch {b}");
        assert_eq!(number(&mut r, &format!("q{b}.drops")), 0);
    }
    r.check_conservation().expect("conserved");
}

#[test]
fn packets_parked_in_a_shared_arp_table_are_counted_where_they_went() {
    // q1 parks five packets for 10.0.0.5 in the ARPTable it shares with
    // q2; the reply reaches q2, which sends them on. Each querier's counts
    // add up with what it lent to (or took from) the table.
    let text = "t :: ARPTable;
        InfiniteSource(DATA \\<45000014 00000000 40110000 0a000001 0a000005>, LIMIT 5, STOP false)
          -> GetIPAddress(16) -> q1 :: ARPQuerier(10.0.0.1, 02:00:00:00:00:01, TABLE t);
        q1[0] -> c1 :: Counter -> Discard;
        q1[1] -> Discard;
        Idle -> [1]q1;
        Idle -> GetIPAddress(16) -> q2 :: ARPQuerier(10.0.0.1, 02:00:00:00:00:01, TABLE t);
        TimedSource(0.5, \\<020000000001 020000000005 0806 0001 0800 06 04 0002 020000000005 0a000005 020000000001 0a000001>, LIMIT 1)
          -> [1]q2;
        q2[0] -> c2 :: Counter -> Discard;
        q2[1] -> Discard;
        Script(wait 1, stop);";
    let mut r = build(text, pronto_runtime::DEFAULT_POOL_LIMIT).expect("builds");
    r.run().expect("runs");
    assert_eq!(number(&mut r, "c1.count"), 0);
    assert_eq!(number(&mut r, "c2.count"), 5);
    assert_eq!(
        r.read_handler("q1.accounting", "").expect("accounting"),
        "in 5 0\nout 0 1\nmade 1\nfreed 0\nheld 0\nlent 5\nalloc_refused 0\n"
    );
    assert_eq!(
        r.read_handler("q2.accounting", "").expect("accounting"),
        "in 0 1\nout 5 0\nmade 0\nfreed 1\nheld 0\nlent -5\nalloc_refused 0\n"
    );
    r.check_conservation().expect("conserved");
}

#[test]
fn a_pool_at_its_limit_refuses_and_the_refusals_are_counted_where_they_happened() {
    // Eight queues of 300 fit a pool of 2,410 packets, but Tee's copies of
    // a burst, made before any reaches a queue, do not: the copies it
    // cannot make are refused, and every refusal is on Tee's accounting.
    // (Tee sends the original to its last output and copies to the
    // others, port by port.)
    let mut text =
        String::from("s :: InfiniteSource(LIMIT 400, BURST 250, STOP true) -> t :: Tee(8);\n");
    for b in 0..8 {
        let _ = writeln!(text, "t[{b}] -> q{b} :: Queue(300) -> Idle;");
    }
    let mut r = build(&text, 2410).expect("builds");
    r.run().expect("runs");
    // First burst: 250 originals + 7 x 250 copies = 2,000. Second: 150
    // originals (2,150), then 260 copies fit (150 for port 0, 110 for port
    // 1) and 40 + 5 x 150 = 790 are refused.
    let acct = r.read_handler("t.accounting", "").expect("accounting");
    assert_eq!(
        acct,
        "in 400\nout 400 360 250 250 250 250 250 400\nmade 2010\nfreed 0\nheld 0\nalloc_refused 790\n"
    );
    let pool = r.read_handler("pool", "").expect("pool");
    assert!(
        pool.contains("limit 2410\n") && pool.contains("refused 790\n"),
        "{pool}"
    );
    // The queues kept what fitted and dropped (and counted) the rest.
    for (b, len, drops) in [(0, 300, 100), (1, 300, 60), (2, 250, 0), (7, 300, 100)] {
        assert_eq!(number(&mut r, &format!("q{b}.length")), len, "q{b}");
        assert_eq!(number(&mut r, &format!("q{b}.drops")), drops, "q{b}");
    }
    r.check_conservation().expect("conserved");
}

/// Parses one line of the `counters` handler into its `key=value` fields.
fn counter_fields(line: &str) -> std::collections::BTreeMap<String, String> {
    line.split_whitespace()
        .skip(2)
        .map(|f| {
            let (k, v) = f.split_once('=').expect("key=value");
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn counters_name_every_drop_with_its_reason() {
    let text = "s :: InfiniteSource(LIMIT 20, BURST 20, STOP true) -> c :: Counter \
                -> t :: Tee(2); t[0] -> q :: Queue(5) -> Idle; t[1] -> d :: Discard;";
    let mut r = build(text, pronto_runtime::DEFAULT_POOL_LIMIT).expect("builds");
    r.run().expect("runs");
    let list = r.counters();
    let by = |n: &str| list.iter().find(|c| c.name == n).expect(n).clone();
    assert_eq!(by("q").drops(), vec![("queue_full", 15)]);
    assert_eq!(by("q").accounting.held, 5);
    assert_eq!(by("d").drops(), vec![("discarded", 20)]);
    assert_eq!(by("c").drops(), vec![]);
    assert_eq!(
        by("c").counters,
        vec![
            ("count", pronto_elements::CounterKind::Count, 20),
            // InfiniteSource's default payload is 69 bytes long.
            ("byte_count", pronto_elements::CounterKind::Count, 20 * 69),
        ]
    );
    // The handler prints the same, one element a line.
    let text = r.read_handler("counters", "").expect("counters handler");
    let q = text
        .lines()
        .find(|l| l.starts_with("q "))
        .expect("q's line");
    assert_eq!(
        q,
        "q Queue in=20 out=0 made=0 freed=15 held=5 drop.queue_full=15 count.highwater_length=5"
    );
    let c = counter_fields(text.lines().find(|l| l.starts_with("c ")).expect("c"));
    assert_eq!(c["in"], "20");
    assert_eq!(c["out"], "20");
    assert_eq!(c["count.byte_count"], "1380");
    let t = counter_fields(text.lines().find(|l| l.starts_with("t ")).expect("t"));
    assert_eq!(t["out"], "20,20");
    assert_eq!(t["made"], "20");
    // And reads back as it was.
    let back = pronto_runtime::CountersLine::parse(q).expect("parses");
    assert_eq!(back.name, "q");
    assert_eq!(back.class, "Queue");
    assert_eq!(back.inputs, vec![20]);
    assert_eq!(back.outputs, vec![0]);
    assert_eq!(back.held, 5);
    assert_eq!(back.drops, vec![("queue_full".to_string(), 15)]);
    assert_eq!(back.counts, vec![("highwater_length".to_string(), 5)]);
    r.check_conservation().expect("conserved");
}

#[test]
fn a_trace_follows_marked_packets_element_by_element() {
    // A 60-byte Ethernet frame: IPv4, UDP to port 53.
    let mut f = [0u8; 60];
    f[12] = 0x08;
    f[14] = 0x45;
    f[23] = 17;
    f[36] = 0;
    f[37] = 53;
    let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
    let text = format!(
        "a :: InfiniteSource(DATA \\<{hex}>, LIMIT 5, BURST 1, STOP true) -> c :: Counter \
         -> s :: Strip(14) -> q :: SimpleQueue(1) -> Idle;"
    );
    let mut r = build(&text, pronto_runtime::DEFAULT_POOL_LIMIT).expect("builds");
    assert_eq!(r.read_handler("trace", "").expect("read"), "trace: off\n");
    r.write_handler("trace", "2 udp port 54").expect("arms");
    let bad = r
        .write_handler("trace", "2 udp prot 54")
        .expect_err("a typo");
    assert!(bad.to_string().contains("trace filter: "), "{bad}");
    // A filter that matches nothing marks nothing.
    r.run().expect("runs");
    assert_eq!(
        r.read_handler("trace", "").expect("read"),
        "trace: 0 of 2 packets matching `udp port 54`\n"
    );
    let mut r = build(&text, pronto_runtime::DEFAULT_POOL_LIMIT).expect("builds");
    r.write_handler("trace", "2 udp port 53").expect("arms");
    r.run().expect("runs");
    let stripped: String = f[14..].iter().map(|b| format!("{b:02x}")).collect();
    let row = |name: &str, what: &str| format!("  {name:<32} {what}\n");
    let path = |end: &str| {
        [
            row("a :: InfiniteSource", "made -> out 0"),
            row("c :: Counter", "in 0 -> out 0"),
            row("s :: Strip", "in 0 -> out 0"),
            row("", &format!("changed: 46 bytes: {stripped}")),
            row("q :: SimpleQueue", end),
        ]
        .concat()
    };
    assert_eq!(
        r.read_handler("trace", "").expect("read"),
        format!(
            "trace: 2 of 2 packets matching `udp port 53`\npacket 1\n{}packet 2\n{}",
            path("in 0 -> held"),
            path("in 0 -> dropped: queue_full")
        )
    );
    // Off again: nothing kept.
    r.write_handler("trace", "off").expect("off");
    assert_eq!(r.read_handler("trace", "").expect("read"), "trace: off\n");
    r.check_conservation().expect("conserved");
}

#[test]
fn a_trace_follows_packets_along_a_pull_path() {
    // A 60-byte Ethernet frame: IPv4, UDP to port 53.
    let mut f = [0u8; 60];
    f[12] = 0x08;
    f[14] = 0x45;
    f[23] = 17;
    f[37] = 53;
    let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
    // From a queue through an element pulled through (Strip), a
    // scheduler that pulls one packet at a time, to the puller.
    let text = format!(
        "a :: InfiniteSource(DATA \\<{hex}>, LIMIT 2, BURST 1, STOP false) -> q :: Queue(4) \
         -> s :: Strip(14) -> rr :: RoundRobinSched -> u :: Unqueue -> d :: Discard; \
         Idle -> [1]rr; \
         Script(wait 50ms, stop);"
    );
    let mut r = build(&text, pronto_runtime::DEFAULT_POOL_LIMIT).expect("builds");
    r.write_handler("trace", "1").expect("arms");
    r.run().expect("runs");
    let stripped: String = f[14..].iter().map(|b| format!("{b:02x}")).collect();
    let row = |name: &str, what: &str| format!("  {name:<32} {what}\n");
    assert_eq!(
        r.read_handler("trace", "").expect("read"),
        format!(
            "trace: 1 of 1 packets\npacket 1\n{}",
            [
                row("a :: InfiniteSource", "made -> out 0"),
                row("q :: Queue", "in 0 -> held"),
                row("q :: Queue", "pulled -> out 0"),
                row("s :: Strip", "in 0 (pulled) -> out 0"),
                row("", &format!("changed: 46 bytes: {stripped}")),
                row("rr :: RoundRobinSched", "in 0 (pulled) -> out 0"),
                row("u :: Unqueue", "in 0 (pulled) -> out 0"),
                row("d :: Discard", "in 0 -> dropped: discarded"),
            ]
            .concat()
        )
    );
    r.check_conservation().expect("conserved");
}
