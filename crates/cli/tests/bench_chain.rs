//! `pronto bench chain` at its shortest: sandboxed firewalls through the
//! switch, measured against the same firewall in one process in the same
//! run, written as CSV (with the ratio) and PNG; `--pin` places the
//! switch and the firewalls on CPUs of their own; `--gen` puts the
//! generator and sink in the switching thread's loop (the default) or on
//! a thread of their own.

use std::process::Command;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Runs the experiment with `extra`; its standard output and directory.
fn chain(extra: &[&str]) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["bench", "chain", "--duration", "0.2"])
        .args(extra)
        .arg("--out")
        .arg(dir.path())
        .output()
        .expect("pronto runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (stdout, dir)
}

/// The rows of `chain_sizes.csv`, checked: every size, frames through
/// both, and the ratio as the two rates give it.
fn check_sizes(dir: &std::path::Path) {
    let text = std::fs::read_to_string(dir.join("chain_sizes.csv")).expect("the CSV");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("size,one_kpps,in_process_kpps,of_one_process")
    );
    let mut sizes = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 4, "{l}");
        let num = |i: usize| -> f64 { f[i].parse().expect("a number") };
        sizes.push(f[0].to_string());
        assert!(num(1) > 0.0, "nothing through the sandboxed firewall: {l}");
        assert!(
            num(2) > 0.0,
            "nothing through the one-process firewall: {l}"
        );
        assert!(
            (num(3) - num(1) / num(2)).abs() < 0.002,
            "the ratio is not one over the other: {l}"
        );
    }
    assert_eq!(sizes, ["64", "128", "256", "512", "1024", "1500"]);
    for png in ["chain_sizes.png", "chain.png"] {
        let bytes = std::fs::read(dir.join(png)).expect("the PNG");
        assert!(
            bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{png} is not a PNG"
        );
    }
    let chains = std::fs::read_to_string(dir.join("chain.csv")).expect("chain.csv");
    assert_eq!(chains.lines().count(), 6, "{chains}");
}

#[test]
fn a_sandboxed_firewall_is_measured_against_one_process() {
    if !is_root() {
        eprintln!("SKIPPED a_sandboxed_firewall_is_measured_...: sandboxes need root");
        return;
    }
    let (stdout, dir) = chain(&[]);
    assert!(
        stdout.contains("| frame | kpps | Gb/s | one process, kpps | of one process |"),
        "{stdout}"
    );
    assert!(!stdout.contains("pinned:"), "{stdout}");
    assert!(
        stdout.contains(
            "generator and sink: in the switching thread's loop (a NIC served by the switch)"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("firewalls poll"), "{stdout}");
    check_sizes(dir.path());
}

#[test]
fn pinned_the_switch_and_the_firewalls_have_a_cpu_each() {
    if !is_root() {
        eprintln!("SKIPPED pinned_the_switch_and_the_firewalls_...: sandboxes need root");
        return;
    }
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("SKIPPED pinned_the_switch_and_the_firewalls_...: needs two CPUs");
        return;
    }
    let (stdout, dir) = chain(&["--pin"]);
    assert!(
        stdout.contains("pinned: switch, generator and sink on CPU 0; each firewall on CPU 1"),
        "{stdout}"
    );
    assert!(
        stdout.contains("firewalls poll 200 µs after packets moved before they sleep"),
        "{stdout}"
    );
    check_sizes(dir.path());
}

#[test]
fn the_generator_on_a_thread_of_its_own_hands_frames_through_a_port() {
    if !is_root() {
        eprintln!("SKIPPED the_generator_on_a_thread_of_its_own_...: sandboxes need root");
        return;
    }
    let (stdout, dir) = chain(&["--gen", "thread", "--poll-window", "50"]);
    assert!(
        stdout.contains("generator and sink: on a thread of their own, through a port's rings"),
        "{stdout}"
    );
    assert!(
        stdout.contains("firewalls poll 50 µs after packets moved before they sleep"),
        "{stdout}"
    );
    check_sizes(dir.path());
}

#[test]
fn a_generator_placed_nowhere_known_is_refused() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["bench", "chain", "--gen", "nic", "--out"])
        .arg(dir.path())
        .output()
        .expect("pronto runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let want = if is_root() {
        "--gen: `nic` is not a place for the generator; give `switch` (in the switching \
         thread's loop, as a NIC it serves) or `thread` (a thread of its own)"
    } else {
        "sandboxes need root"
    };
    assert!(stderr.contains(want), "{stderr}");
}
