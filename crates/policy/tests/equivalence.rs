//! The compiled parallel graph gives the same result as the sequential
//! chain: over generated chains of Click NFs (examples/chains/nf/) and a
//! generated trace, both are built from the policy, run in one process
//! under simulated time, and must write byte-identical packets and leave
//! identical counters in every NF.

use std::path::{Path, PathBuf};

use pronto_policy::emit::{emit, Io, Mode};
use pronto_policy::Policy;
use proptest::prelude::*;

/// The NF bodies the chains are drawn from (name, file).
const LIBRARY: &[(&str, &str)] = &[
    ("monitor", "monitor.click"),
    ("fw", "fw.click"),
    ("ids", "ids.click"),
    ("nat", "nat.click"),
    ("lb", "lb.click"),
    ("count", "count.click"),
    ("dns", "dns.click"),
    ("mtu", "mtu.click"),
    ("tunnel", "tunnel.click"),
    ("vpn", "vpn.click"),
];

fn nf_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/chains/nf")
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pronto-equiv-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

fn sum(data: &[u8], mut acc: u32) -> u32 {
    for c in data.chunks(2) {
        acc += u32::from(c[0]) << 8 | u32::from(*c.get(1).unwrap_or(&0));
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc >> 16 != 0 {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// An Ethernet/IPv4 frame with a TCP or UDP packet and correct checksums.
fn frame(tcp: bool, src: [u8; 4], sport: u16, dst: [u8; 4], dport: u16, len: usize) -> Vec<u8> {
    let proto = if tcp { 6u8 } else { 17 };
    let l4h = if tcp { 20 } else { 8 };
    let mut l4 = vec![0u8; l4h + len];
    l4[0..2].copy_from_slice(&sport.to_be_bytes());
    l4[2..4].copy_from_slice(&dport.to_be_bytes());
    if tcp {
        l4[12] = 5 << 4;
        l4[13] = 0x18;
    } else {
        l4[4..6].copy_from_slice(&((l4h + len) as u16).to_be_bytes());
    }
    for (i, b) in l4[l4h..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(7).wrapping_add(sport as u8);
    }
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&src);
    pseudo.extend_from_slice(&dst);
    pseudo.extend_from_slice(&[0, proto]);
    pseudo.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    let c = !fold(sum(&l4, sum(&pseudo, 0)));
    let at = if tcp { 16 } else { 6 };
    l4[at..at + 2].copy_from_slice(&(if c == 0 && !tcp { 0xffff } else { c }).to_be_bytes());
    let total = 20 + l4.len();
    let mut ip = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        7,
        0,
        0,
        64,
        proto,
        0,
        0,
    ];
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = !fold(sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
    f.extend_from_slice(&ip);
    f.extend_from_slice(&l4);
    f
}

/// `f` (an Ethernet/IPv4 frame) inside an IP-in-IP header.
fn ipip(f: &[u8]) -> Vec<u8> {
    let total = f.len() - 14 + 20;
    let mut ip = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        9,
        0,
        0,
        64,
        4,
        0,
        0,
    ];
    ip.extend_from_slice(&[198, 51, 100, 7, 192, 0, 2, 1]);
    let c = !fold(sum(&ip, 0));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut out = f[..14].to_vec();
    out.extend_from_slice(&ip);
    out.extend_from_slice(&f[14..]);
    out
}

/// A trace of `n` frames over a few flows, with packets the firewall
/// (telnet, 10.66/16) and the IDS (UDP to 6666) drop, some ARP frames,
/// some with a bad IP checksum and some tunnelled (IP-in-IP).
fn trace(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut pcap = Vec::new();
    pcap.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
    pcap.extend_from_slice(&2u16.to_le_bytes());
    pcap.extend_from_slice(&4u16.to_le_bytes());
    pcap.extend_from_slice(&[0; 8]);
    pcap.extend_from_slice(&65535u32.to_le_bytes());
    pcap.extend_from_slice(&1u32.to_le_bytes());
    for i in 0..n {
        let r = rnd();
        let mut f = match r % 16 {
            0 => {
                let mut a = vec![0xff; 6];
                a.extend_from_slice(&[2, 0, 0, 0, 0, 9, 8, 6]);
                a.extend_from_slice(&[0u8; 28]);
                a
            }
            k => {
                let src = if k == 1 {
                    [10, 66, 1, (r >> 8) as u8]
                } else {
                    [10, 0, 0, 1 + (r >> 8) as u8 % 5]
                };
                let dport = [53, 80, 443, 23, 6666][(r >> 16) as usize % 5];
                // Now and then a frame the MTU clamp cuts.
                let len = if k == 5 {
                    1200
                } else {
                    (r >> 44) as usize % 200
                };
                let sport = 1000 + (r >> 24) as u16 % 8;
                let mut f = frame(
                    (r >> 32) % 3 == 0,
                    src,
                    sport,
                    [192, 168, 1, 1 + (r >> 40) as u8 % 3],
                    dport,
                    len,
                );
                match k {
                    2 => {
                        f[24] ^= 0x55; // bad IP checksum
                        f
                    }
                    3 | 4 => ipip(&f),
                    _ => f,
                }
            }
        };
        f.truncate(65535);
        // 10 µs apart, at the simulated clock's start: the whole trace is
        // shorter than any flow timeout.
        pcap.extend_from_slice(&1_000_000_000u32.to_le_bytes());
        pcap.extend_from_slice(&(i as u32 * 10).to_le_bytes());
        pcap.extend_from_slice(&(f.len() as u32).to_le_bytes());
        pcap.extend_from_slice(&(f.len() as u32).to_le_bytes());
        pcap.append(&mut f);
    }
    pcap
}

fn build(text: &str) -> pronto_runtime::Router {
    let mut sm = pronto_lang::SourceMap::new();
    let file = sm.add("chain", text);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    let show = |sm: &pronto_lang::SourceMap, d: Vec<pronto_lang::Diagnostic>| -> String {
        d.iter()
            .map(|d| d.render(sm))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (flat, _) = pronto_lang::parse_flat(&sm, file, &opts)
        .unwrap_or_else(|d| panic!("{}\n{text}", show(&sm, d)));
    let ropts = pronto_runtime::RouterOptions {
        clock: pronto_runtime::Clock::Simulated(1_000_000_000_000_000_000),
        pool_slots: 2048,
        ..Default::default()
    };
    pronto_runtime::Router::build(&flat, &sm, &ropts)
        .unwrap_or_else(|d| panic!("{}\n{text}", show(&sm, d)))
}

/// Counting handlers of the NFs' elements (not the NFP elements').
fn counters(r: &mut pronto_runtime::Router) -> Vec<(String, String)> {
    let names: Vec<String> = r
        .element_names()
        .filter(|n| !n.starts_with("nfp_"))
        .map(str::to_string)
        .collect();
    let mut out = Vec::new();
    for n in names {
        for h in [
            "count",
            "byte_count",
            "drops",
            "nmappings",
            "mapping_failures",
        ] {
            if let Ok(v) = r.read_handler(&format!("{n}.{h}"), "") {
                out.push((format!("{n}.{h}"), v));
            }
        }
    }
    out
}

/// Runs the chain of `kinds` (library indices) in the order given, with
/// `order` rules between every pair, both ways; returns the number of
/// mergers the parallel configuration runs.
fn check_chain(kinds: &[usize], seed: u64, tag: &str) -> usize {
    let dir = scratch(tag);
    let mut text = String::new();
    for (i, &k) in kinds.iter().enumerate() {
        let (_, file) = LIBRARY[k];
        text.push_str(&format!(
            "nf n{i} = click(\"{}\")\n",
            nf_dir().join(file).display()
        ));
    }
    for i in 0..kinds.len() {
        for j in i + 1..kinds.len() {
            text.push_str(&format!("order(n{i}, before, n{j})\n"));
        }
    }
    let mut policy = Policy::parse("chain.nfp", &text).expect("policy parses");
    policy.resolve_click(&dir).expect("profiles");
    let plan = policy.compile().expect("compiles");
    let bodies: Vec<String> = kinds
        .iter()
        .map(|&k| std::fs::read_to_string(nf_dir().join(LIBRARY[k].1)).expect("body"))
        .collect();
    let input = dir.join("in.pcap");
    std::fs::write(&input, trace(seed, 400)).expect("trace");
    let mut results = Vec::new();
    for (mode, out) in [(Mode::Sequential, "seq.pcap"), (Mode::Parallel, "par.pcap")] {
        let io = Io {
            source: format!("FromDump(\"{}\", STOP true)", input.display()),
            sink: format!("ToDump(\"{}\")", dir.join(out).display()),
            merge_timeout: "10ms".into(),
            extra: "DriverManager(pause, wait 50ms, stop);\n".into(),
        };
        let cfg = emit(&plan, &bodies, mode, &io).expect("emits");
        let mut r = build(&cfg.text);
        r.run().expect("runs");
        let c = counters(&mut r);
        drop(r);
        let bytes = std::fs::read(dir.join(out)).expect("output");
        results.push((bytes, c, cfg.text));
    }
    let names: Vec<&str> = kinds.iter().map(|&k| LIBRARY[k].0).collect();
    assert!(
        results[0].0 == results[1].0,
        "chain {names:?}: the parallel graph's packets differ from the sequential chain's\n{}\n{}",
        plan.render_text(),
        results[1].2
    );
    assert_eq!(
        results[0].1,
        results[1].1,
        "chain {names:?}: counters differ\n{}",
        plan.render_text()
    );
    assert!(results[0].0.len() > 24, "chain {names:?}: nothing came out");
    let _ = std::fs::remove_dir_all(&dir);
    results[1].2.matches(":: NFPMerge(").count()
}

#[test]
fn the_example_chains_give_the_same_packets_and_counters() {
    // monitor ∥ (ids -> fw), then nat: the examples' run.nfp.
    assert_eq!(check_chain(&[0, 2, 1, 3], 7, "run"), 1);
    // A monitor beside a NAT on a header-only copy (it reads what the
    // NAT writes), then a load balancer.
    assert!(check_chain(&[0, 5, 3, 4], 11, "nat") >= 1);
    // A monitor and a byte counter beside the tunnel's sending end (the
    // merged packet has the tunnel's headers): one group.
    assert_eq!(check_chain(&[0, 5, 8], 17, "tunnel"), 1);
    // The receiving end first: everything after it sees the inner packet.
    assert_eq!(check_chain(&[9, 0, 1], 19, "vpn"), 1);
    // The MTU clamp in the middle: the monitor reads beside it on a copy;
    // the byte counter after it counts the cut lengths, so it waits.
    assert_eq!(check_chain(&[0, 7, 5], 23, "mtu"), 1);
    // Everything.
    check_chain(&[5, 0, 6, 2, 1, 3, 4], 13, "all");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any chain of 2 to 5 NFs from the library, any trace; a tunnel's
    /// receiving end (vpn) is the chain's entry and its sending end
    /// (tunnel) its exit, as they would be (elsewhere nothing would pass).
    #[test]
    fn generated_chains_give_the_same_packets_and_counters(
        kinds in proptest::collection::vec(0..LIBRARY.len(), 2..=5),
        seed in any::<u64>(),
    ) {
        let (tunnel, vpn) = (LIBRARY.len() - 2, LIBRARY.len() - 1);
        let mut chain: Vec<usize> = kinds.iter().copied().filter(|&k| k != tunnel && k != vpn).collect();
        if kinds.contains(&vpn) {
            chain.insert(0, vpn);
        }
        if kinds.contains(&tunnel) {
            chain.push(tunnel);
        }
        prop_assume!(chain.len() >= 2);
        check_chain(&chain, seed, "prop");
    }
}
