//! The standing fault-injection campaign (`pronto bench chaos`) and the
//! soak (`pronto bench soak`), run for real with a short budget: a daemon
//! of their own, real sandboxes, real `kill -9`. Longer on demand:
//! `PRONTO_CHAOS_SECS=600` / `PRONTO_SOAK_SECS=3600` (and
//! `PRONTO_SOAK_INSTANCES=100`) pass `--duration` (`--instances`) through.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn is_root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    eprintln!("SKIPPED {test}: sandboxes need root (namespaces, cgroups)");
    false
}

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// Runs `pronto bench ARGS --out DIR`; asserts success; its output.
fn bench(args: &[&str], out: &Path) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .arg("bench")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("pronto runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("{text}");
    assert!(o.status.success(), "pronto bench {args:?} failed:\n{text}");
    text
}

/// A CSV file's rows, each as column -> value.
fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).expect("CSV written");
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().expect("a header").split(',').collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), head.len(), "{l}");
            head.iter()
                .zip(cells)
                .map(|(h, c)| (h.to_string(), c.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn the_chaos_campaign_injects_every_fault_and_every_packet_is_accounted_for() {
    if !is_root("the_chaos_campaign_injects_every_fault_and_every_packet_is_accounted_for") {
        return;
    }
    let out = common::scratch("chaos");
    let secs = env_or("PRONTO_CHAOS_SECS", "5");
    let text = bench(&["chaos", "--duration", &secs, "--window-ms", "500"], &out);
    assert!(
        text.contains("after SIGTERM: no sandbox process and no cgroup"),
        "{text}"
    );
    let rows = csv(&out.join("chaos.csv"));
    for kind in [
        "kill-instance",
        "hostile-ring",
        "pool-exhaust",
        "reconfig",
        "kill-daemon",
        "switch-restart",
    ] {
        assert!(
            rows.iter().any(|r| r["kind"] == kind),
            "no {kind} fault in {rows:?}"
        );
    }
    for r in &rows {
        // Recovered, the acknowledged state intact, the neighbours'
        // books exact, the victim's within its bound, nothing failed.
        assert_eq!(r["recovered"], "true", "{r:?}");
        assert_eq!(r["state_ok"], "true", "{r:?}");
        assert_eq!(r["neighbour_residual"], "0", "{r:?}");
        assert_eq!(r["failures"], "", "{r:?}");
        let (res, bound): (i64, i64) = (
            r["victim_residual"].parse().expect("residual"),
            r["bound"].parse().expect("bound"),
        );
        assert!(res.abs() <= bound, "{r:?}");
    }
    // The hostile port's garbage was counted by reason, and the exhausted
    // pool refused.
    let hostile = rows
        .iter()
        .find(|r| r["kind"] == "hostile-ring")
        .expect("row");
    assert!(
        hostile["notes"].contains("garbage descriptors counted bad_desc"),
        "{hostile:?}"
    );
    let pool = rows
        .iter()
        .find(|r| r["kind"] == "pool-exhaust")
        .expect("row");
    assert!(pool["notes"].contains("full"), "{pool:?}");
    // The switch's threads came back on their own ports with nothing lost
    // (every tenant's books exact: checked above as `neighbour_residual`).
    let sw = rows
        .iter()
        .find(|r| r["kind"] == "switch-restart")
        .expect("row");
    assert!(
        sw["notes"].contains("1 switching thread(s) restarted"),
        "{sw:?}"
    );
    assert_eq!(sw["victim_residual"], "0", "{sw:?}");
    // Each tenant's books: something flowed and nothing strayed.
    let books = csv(&out.join("chaos_ledger.csv"));
    assert_eq!(books.len(), 3);
    for b in &books {
        let n = |k: &str| b[k].parse::<i64>().expect("a number");
        assert!(n("delivered") > 0, "{b:?}");
        assert_eq!(n("stray"), 0, "{b:?}");
        assert!(n("dropped_at_switch") <= n("dropped"), "{b:?}");
        assert_eq!(
            n("injected"),
            n("delivered") + n("dropped") + n("held") + n("held_at_end") + n("residual"),
            "{b:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_soak_ends_flat_with_every_instance_answering_and_nothing_left_behind() {
    if !is_root("the_soak_ends_flat_with_every_instance_answering_and_nothing_left_behind") {
        return;
    }
    let out = common::scratch("soak");
    let secs = env_or("PRONTO_SOAK_SECS", "20");
    let n = env_or("PRONTO_SOAK_INSTANCES", "8");
    let text = bench(
        &[
            "soak",
            "--duration",
            &secs,
            "--instances",
            &n,
            "--churn",
            "2",
            "--sample",
            "4",
        ],
        &out,
    );
    assert!(
        text.contains(&format!("end: {n} of {n} instances answer")),
        "{text}"
    );
    assert!(text.contains("after SIGTERM: none of the"), "{text}");
    let rows = csv(&out.join("soak.csv"));
    assert!(rows.len() >= 3, "{rows:?}");
    let last = rows.last().expect("a sample");
    assert_eq!(last["instances"], n);
    assert_eq!(last["running"], n);
    assert_eq!(last["op_errors"], "0");
    assert!(last["ops"].parse::<u64>().expect("ops") > 0);
    let _ = std::fs::remove_dir_all(&out);
}
