//! `pronto chain`: profiles, plans and a chain run over an example trace,
//! sequential and parallel giving the same packets.

mod common;

use std::process::Command;

fn pronto(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(args)
        .current_dir(common::root())
        .output()
        .expect("pronto");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn profiles_and_plans() {
    let (ok, out, err) = pronto(&["chain", "profile", "examples/chains/nf/monitor.click"]);
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "reads: src_ip dst_ip src_port dst_port other; writes: -; drops: no; adds/removes headers: no\n"
    );
    let (ok, out, err) = pronto(&["chain", "plan", "examples/chains/datacenter.nfp"]);
    assert!(ok, "{err}");
    assert!(
        out.starts_with("examples/chains/datacenter.nfp: 4 network functions, longest path 3 (a sequential chain: 4)\n"),
        "{out}"
    );
    let dir = common::scratch("chain-plan");
    let dot = dir.join("g.dot");
    let (ok, _, err) = pronto(&[
        "chain",
        "plan",
        "examples/chains/run.nfp",
        "--dot",
        dot.to_str().expect("path"),
    ]);
    assert!(ok, "{err}");
    let text = std::fs::read_to_string(&dot).expect("dot file");
    assert!(text.starts_with("digraph"), "{text}");
    // A bad policy: the error names the line and column.
    let bad = dir.join("bad.nfp");
    std::fs::write(&bad, "nf a = builtin(firewall)\norder(a, before, b)\n").expect("write");
    let (ok, _, err) = pronto(&["chain", "plan", bad.to_str().expect("path")]);
    assert!(!ok);
    assert!(err.contains("bad.nfp:2:18: error: "), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_chain_run_in_parallel_gives_the_sequential_packets() {
    let dir = common::scratch("chain-run");
    let par = dir.join("par.pcap");
    let seq = dir.join("seq.pcap");
    for (out, extra) in [(&par, None), (&seq, Some("--sequential"))] {
        let mut args = vec![
            "chain",
            "run",
            "examples/chains/run.nfp",
            "--trace",
            "examples/ids.pcap",
            "--out",
            out.to_str().expect("path"),
            "--stats",
        ];
        args.extend(extra);
        let (ok, stats, err) = pronto(&args);
        assert!(ok, "{err}");
        assert!(stats.contains("nat/rw.nmappings "), "{stats}");
        if extra.is_none() {
            assert!(stats.contains("nfp_merge1.merged "), "{stats}");
            assert!(stats.contains("nfp_merge1.timeouts 0\n"), "{stats}");
        }
    }
    let (a, b) = (
        std::fs::read(&par).expect("par"),
        std::fs::read(&seq).expect("seq"),
    );
    assert!(a.len() > 1000, "too little came out");
    assert!(
        a == b,
        "the parallel graph's packets differ from the sequential chain's"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
