//! `pronto chain`: profiles, plans and a chain run over an example trace,
//! sequential and parallel giving the same packets.

mod common;

use common::{ctl, pronto};

#[test]
fn profiles_and_plans() {
    for help in ["help", "--help"] {
        let (ok, out, err) = pronto(&["chain", help]);
        assert!(ok, "{err}");
        assert!(
            out.contains("pronto chain apply FILE.nfp --out MAC"),
            "{out}"
        );
    }
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
    // The mergers' bounded wait is the chain's to set.
    let (ok, out, err) = pronto(&[
        "chain",
        "apply",
        "examples/chains/tunnel.nfp",
        "--out",
        "02:00:00:00:99:01",
        "--merge-timeout",
        "40ms",
        "--dry-run",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("nfp_merge :: NFPMerge(full, full, orig, TIMEOUT 40ms, BASE 2);"),
        "{out}"
    );
    let (ok, _, err) = pronto(&[
        "chain",
        "apply",
        "examples/chains/tunnel.nfp",
        "--out",
        "02:00:00:00:99:01",
        "--merge-timeout",
        "soon",
        "--dry-run",
    ]);
    assert!(!ok);
    assert!(err.contains("--merge-timeout: "), "{err}");
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

/// A parallel group with an NF that adds a header: the merged packet is
/// the tunnel's version, the same as the sequential chain's.
#[test]
fn a_tunnel_beside_its_readers_gives_the_sequential_packets() {
    let dir = common::scratch("chain-tunnel");
    let mut outs = Vec::new();
    for extra in [None, Some("--sequential")] {
        let out = dir.join(format!(
            "{}.pcap",
            if extra.is_some() { "seq" } else { "par" }
        ));
        let mut args = vec![
            "chain",
            "run",
            "examples/chains/tunnel.nfp",
            "--trace",
            "examples/ids.pcap",
            "--out",
            out.to_str().expect("path"),
            "--stats",
        ];
        args.extend(extra);
        let (ok, stats, err) = pronto(&args);
        assert!(ok, "{err}");
        assert!(!err.contains("runs in sequence"), "{err}");
        if extra.is_none() {
            // 181 frames; the tunnel drops the 17 that are not IPv4 (2
            // ARP, and the 15 IPv6 packets at the end of the trace, whose
            // drops the merger learns by its timeout: no packet follows).
            for line in [
                "nfp_merge1.merged 164\n",
                "nfp_merge1.dropped 17\n",
                "nfp_merge1.unmergeable 0\n",
                "tunnel/c.count 164\n",
            ] {
                assert!(stats.contains(line), "{line}{stats}");
            }
        }
        outs.push(std::fs::read(&out).expect("output"));
    }
    assert!(
        outs[0] == outs[1],
        "the parallel graph's packets differ from the sequential chain's"
    );
    // Every packet left with the tunnel's 20-byte IPv4 header (protocol 4
    // at byte 23 of the frame).
    let input = std::fs::read(common::root().join("examples/ids.pcap")).expect("trace");
    let frames = |pcap: &[u8]| -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        let mut at = 24;
        while at + 16 <= pcap.len() {
            let n = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().expect("4")) as usize;
            v.push(pcap[at + 16..at + 16 + n].to_vec());
            at += 16 + n;
        }
        v
    };
    let (inp, out) = (frames(&input), frames(&outs[0]));
    assert_eq!(out.len(), 164);
    let ipv4: Vec<&Vec<u8>> = inp.iter().filter(|f| f[12..14] == [8, 0]).collect();
    for (o, i) in out.iter().zip(ipv4) {
        assert_eq!(o.len(), i.len() + 20);
        assert_eq!(o[23], 4, "IP-in-IP");
        assert_eq!(o[34..], i[14..], "the inner packet unchanged");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The example chain deployed as sandboxed instances on the daemon's
/// switch: a source instance sends to the chain's entry, a sink instance
/// at the exit counts what comes out.
#[test]
fn a_chain_applied_through_the_daemon_carries_traffic() {
    if !rustix::process::geteuid().is_root() {
        eprintln!(
            "SKIPPED a_chain_applied_through_the_daemon_carries_traffic: sandboxes need root"
        );
        return;
    }
    let dir = common::scratch("chain-apply");
    let _d = common::start_daemon(&dir);
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p.to_str().expect("path").to_string()
    };
    // An instance running `text`, with eth0 at `mac`.
    let instance = |name: &str, text: &str, mac: &str| {
        let cfg = file(&format!("{name}.click"), text);
        let iface = format!("eth0={mac}");
        let (ok, _, err) = ctl(&dir, &["create", name, "--config", &cfg, "--iface", &iface]);
        assert!(ok, "pronto create {name}: {err}");
    };
    let sink = |name: &str, mac: &str| {
        instance(name, "FromDevice(eth0) -> c :: Counter -> Discard;\n", mac);
    };
    // A source sending `n` UDP frames to port `dport`, for each
    // `(dport, n)`, to the chain entry `entry`.
    let source = |name: &str, mac: &str, entry: [u8; 6], flows: &[(u16, u32)]| {
        let mut text = String::new();
        for (k, &(dport, n)) in flows.iter().enumerate() {
            let to = if k == 0 {
                "q :: Queue -> ToDevice(eth0)"
            } else {
                "q"
            };
            text.push_str(&format!(
                "RatedSource(DATA \\<{}>, RATE 1000, LIMIT {n}, STOP false) -> {to};\n",
                common::udp_frame(entry, dport)
            ));
        }
        instance(name, &text, mac);
    };
    // A merge wait well above what a busy machine (CI compiling beside
    // the test) can delay a version by: these checks count packets
    // exactly, and a version settled by the bounded wait counts as a drop.
    let apply = |args: &[&str]| -> (String, String) {
        let mut a = vec!["chain", "apply", "--merge-timeout", "500ms"];
        a.extend_from_slice(args);
        let (ok, out, err) = ctl(&dir, &a);
        assert!(ok, "pronto chain apply {args:?}: {err}");
        (out, err)
    };
    let read = |inst: &str, h: &str| -> u64 {
        let (_, out, err) = ctl(&dir, &["read", inst, h]);
        out.trim()
            .parse()
            .unwrap_or_else(|_| panic!("pronto read {inst} {h}: {out}{err}"))
    };
    // Waits (20 s at most) until `done`, then 200 ms for stragglers;
    // `state` says where things stand if it never happens.
    let settle = |done: &dyn Fn() -> bool, state: &dyn Fn() -> String| {
        let t0 = std::time::Instant::now();
        while !done() {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(20),
                "{}",
                state()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };

    // Chain 1, examples/chains/run.nfp: two mergers share the parallel
    // group's packets. 100 DNS packets pass; 10 telnet packets the
    // firewall drops.
    sink("sink", "02:00:00:00:99:01");
    let (out, _) = apply(&[
        "examples/chains/run.nfp",
        "--out",
        "02:00:00:00:99:01",
        "--mergers",
        "2",
    ]);
    assert!(
        out.contains("chain run: send frames to 02:4e:01:00:00:00 (the entry); they leave for 02:00:00:00:99:01"),
        "{out}"
    );
    source(
        "src",
        "02:00:00:00:98:01",
        [0x02, 0x4e, 0x01, 0, 0, 0],
        &[(53, 100), (23, 10)],
    );
    let both = |h: &str| read("run-merge0-0", h) + read("run-merge0-1", h);
    settle(
        &|| read("sink", "c.count") >= 100 && both("nfp_merge.dropped") >= 10,
        &|| {
            let m = |h: &str| {
                format!(
                    "{h} {}+{}",
                    read("run-merge0-0", &format!("nfp_merge.{h}")),
                    read("run-merge0-1", &format!("nfp_merge.{h}"))
                )
            };
            format!(
                "sink {}; mergers: {}, {}, {}, {}, {}; monitor {} fw {}",
                read("sink", "c.count"),
                m("merged"),
                m("dropped"),
                m("pending"),
                m("timeouts"),
                m("late"),
                read("run-monitor", "nf/c.count"),
                read("run-fw", "nf/c.count")
            )
        },
    );
    assert_eq!(read("sink", "c.count"), 100);
    assert_eq!(both("nfp_merge.merged"), 100);
    assert_eq!(both("nfp_merge.dropped"), 10);
    // A dropped packet settles when its branch moves past it, or by the
    // bounded wait when that branch sends nothing later to that merger.
    assert!(both("nfp_merge.timeouts") <= 10);
    // The entry hands the 110 packets to the two mergers in turn.
    for m in ["run-merge0-0", "run-merge0-1"] {
        assert_eq!(
            read(m, "nfp_merge.merged") + read(m, "nfp_merge.dropped"),
            55,
            "{m}"
        );
    }
    assert_eq!(
        read("run-monitor", "nf/udp.count"),
        110,
        "the monitor saw every packet"
    );
    assert_eq!(read("run-fw", "nf/c.count"), 110);
    assert_eq!(read("run-nat", "nf/rw.nmappings"), 1);

    // Chain 2, examples/chains/tunnel.nfp: its parallel group adds a
    // header; the merger sends on the tunnel's version of each packet.
    // --pin: each NF instance on a CPU of the list (here the one CPU 0);
    // the entry and the merger are left to the scheduler.
    sink("sink2", "02:00:00:00:99:02");
    let (out, err) = apply(&[
        "examples/chains/tunnel.nfp",
        "--out",
        "02:00:00:00:99:02",
        "--chain",
        "2",
        "--pin",
        "0",
    ]);
    assert!(!err.contains("runs in sequence"), "{err}");
    assert!(out.contains("send frames to 02:4e:02:00:00:00"), "{out}");
    assert!(
        out.contains("created tunnel-monitor (nf monitor, eth0 02:4e:02:01:00:00, CPU 0)"),
        "{out}"
    );
    let cpus = |inst: &str| {
        let (_, shown, _) = ctl(&dir, &["show", inst, "--json"]);
        let v: serde_json::Value = serde_json::from_str(&shown).expect("JSON");
        v["cpus"].clone()
    };
    assert_eq!(cpus("tunnel-count"), serde_json::json!([0]));
    assert_eq!(cpus("tunnel-merge0"), serde_json::Value::Null);
    // Every instance the chain created is in its group (the prefix),
    // stored and shown; one created without a group shows none.
    let shown = |inst: &str| -> serde_json::Value {
        let (_, shown, _) = ctl(&dir, &["show", inst, "--json"]);
        serde_json::from_str(&shown).expect("JSON")
    };
    for inst in ["tunnel-count", "tunnel-merge0", "tunnel-monitor"] {
        assert_eq!(shown(inst)["group"], "tunnel", "{inst}");
    }
    assert_eq!(shown("sink2").get("group"), None);
    // `pronto create --group`; a bad group is refused naming the field.
    let cfg = file("idle.click", "Idle -> Discard;\n");
    let (ok, _, err) = ctl(
        &dir,
        &["create", "grouped", "--config", &cfg, "--group", "g.1"],
    );
    assert!(ok, "{err}");
    assert_eq!(shown("grouped")["group"], "g.1");
    let (_, text, _) = ctl(&dir, &["show", "grouped"]);
    assert!(text.contains("\ngroup:      g.1\n"), "{text}");
    let r = common::cluster::req(
        &dir,
        None,
        "POST",
        "/v1/instances",
        &serde_json::json!({"name": "bad", "config": "Idle -> Discard;", "group": "-x"})
            .to_string(),
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["field"], "group", "{}", r.text());
    assert!(
        r.text().contains("group `-x`: use 1 to 32 of"),
        "{}",
        r.text()
    );
    let (ok, _, _) = ctl(&dir, &["rm", "grouped"]);
    assert!(ok);
    // --nodes needs a cluster: refused, nothing created.
    let (ok, _, err) = ctl(
        &dir,
        &[
            "chain",
            "apply",
            "examples/chains/tunnel.nfp",
            "--out",
            "02:00:00:00:99:05",
            "--name",
            "spread",
            "--chain",
            "5",
            "--nodes",
            "n1,n2",
        ],
    );
    assert!(!ok);
    assert!(
        err.contains("prefer_node: a preferred node needs cluster mode"),
        "{err}"
    );
    let (_, listed, _) = ctl(&dir, &["ls"]);
    assert!(!listed.contains("spread-"), "{listed}");
    let (ok, _, err) = ctl(
        &dir,
        &[
            "chain",
            "apply",
            "examples/chains/tunnel.nfp",
            "--out",
            "02:00:00:00:99:05",
            "--nodes",
            "n1,",
            "--dry-run",
        ],
    );
    assert!(!ok);
    assert!(err.contains("--nodes: `` is not a node name"), "{err}");
    source(
        "src2",
        "02:00:00:00:98:02",
        [0x02, 0x4e, 0x02, 0, 0, 0],
        &[(53, 50)],
    );
    settle(&|| read("sink2", "c.count") >= 50, &|| {
        format!(
            "sink2 {} merged {}",
            read("sink2", "c.count"),
            read("tunnel-merge0", "nfp_merge.merged")
        )
    });
    assert_eq!(read("sink2", "c.count"), 50);
    // 50-byte frames, each 20 bytes longer with the tunnel's header.
    assert_eq!(read("sink2", "c.byte_count"), 50 * 70);
    assert_eq!(read("tunnel-merge0", "nfp_merge.merged"), 50);
    assert_eq!(read("tunnel-monitor", "nf/udp.count"), 50);
    assert_eq!(read("tunnel-count", "nf/c.byte_count"), 50 * 50);

    // Chain 4, run.nfp again with one merger per group: the merger runs
    // inside the NAT's instance, the NF it hands every packet to.
    sink("sink4", "02:00:00:00:99:04");
    let (out, _) = apply(&[
        "examples/chains/run.nfp",
        "--out",
        "02:00:00:00:99:04",
        "--name",
        "runc",
        "--chain",
        "4",
    ]);
    assert!(
        out.contains("created runc-nat (nf nat with merger 0, "),
        "{out}"
    );
    assert!(!out.contains("runc-merge"), "{out}");
    source(
        "src4",
        "02:00:00:00:98:04",
        [0x02, 0x4e, 0x04, 0, 0, 0],
        &[(53, 20), (23, 5)],
    );
    settle(
        &|| read("sink4", "c.count") >= 20 && read("runc-nat", "nfp_merge.dropped") >= 5,
        &|| {
            format!(
                "sink4 {} merged {} dropped {}",
                read("sink4", "c.count"),
                read("runc-nat", "nfp_merge.merged"),
                read("runc-nat", "nfp_merge.dropped")
            )
        },
    );
    assert_eq!(read("sink4", "c.count"), 20);
    assert_eq!(read("runc-nat", "nfp_merge.merged"), 20);
    assert_eq!(read("runc-nat", "nfp_merge.dropped"), 5);
    assert_eq!(read("runc-nat", "nf/rw.nmappings"), 1);

    // Chain 3: a running instance as a chain NF, rewired in place (a
    // monitor beside it, then out).
    instance(
        "fwi",
        "FromDevice(eth0) -> c :: Counter -> Strip(14) -> CheckIPHeader\n\
           -> f :: IPFilter(allow udp, deny all) -> Unstrip(14) -> Queue -> ToDevice(eth0);\n",
        "02:00:00:00:97:01",
    );
    sink("sink3", "02:00:00:00:99:03");
    let pol = file(
        "live.nfp",
        &format!(
            "nf mon = click(\"{}/examples/chains/nf/monitor.click\")\nnf fw = instance(\"fwi\")\norder(mon, before, fw)\n",
            common::root().display()
        ),
    );
    let (out, _) = apply(&[&pol, "--out", "02:00:00:00:99:03", "--chain", "3"]);
    assert!(
        out.contains("rewired fwi (nf fw, a running instance, MAC 02:00:00:00:97:01)"),
        "{out}"
    );
    source(
        "src3",
        "02:00:00:00:98:03",
        [0x02, 0x4e, 0x03, 0, 0, 0],
        &[(53, 20)],
    );
    settle(&|| read("sink3", "c.count") >= 20, &|| {
        format!(
            "sink3 {} fwi {} merged {}",
            read("sink3", "c.count"),
            read("fwi", "c.count"),
            read("live-merge0", "nfp_merge.merged")
        )
    });
    assert_eq!(read("sink3", "c.count"), 20);
    assert_eq!(read("fwi", "c.count"), 20);
    assert_eq!(read("live-merge0", "nfp_merge.merged"), 20);

    // A policy naming a running instance: its profile comes from the
    // instance's configuration, read from the daemon.
    let pol = file(
        "inst.nfp",
        &format!(
            "nf mon = click(\"{}/examples/chains/nf/monitor.click\")\nnf sink = instance(\"sink\")\norder(mon, before, sink)\n",
            common::root().display()
        ),
    );
    let (ok, out, err) = ctl(&dir, &["chain", "plan", &pol]);
    assert!(ok, "{err}");
    assert!(
        out.contains("  sink  reads: other; writes: -; drops: yes; adds/removes headers: no\n"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
