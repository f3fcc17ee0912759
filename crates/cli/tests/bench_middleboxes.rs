//! `pronto bench middleboxes` at its shortest: every example middlebox
//! run as a sandboxed instance on its own trace and in one process, the
//! CSV with both rates and their ratio (the IDS and the router given the
//! files they read), and the PNG.

use std::process::Command;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn every_example_middlebox_is_measured_sandboxed_and_in_one_process() {
    if !is_root() {
        eprintln!("SKIPPED every_example_middlebox_is_measured_...: sandboxes need root");
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["bench", "middleboxes", "--duration", "0.2", "--runs", "1"])
        .args(["--packets", "20000", "--out"])
        .arg(dir.path())
        .output()
        .expect("pronto runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(
            "every frame at least 128 B on the wire (10 Gb/s line rate there: 8.45 Mpps)"
        ),
        "{stdout}"
    );
    let text = std::fs::read_to_string(dir.path().join("middleboxes.csv")).expect("the CSV");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "n,middlebox,mean_frame,sandboxed_mpps,forwarded_mpps,no_buffer_mpps,\
             one_process_mpps,of_one_process,line_rate_mpps,one_process_per_packet_mpps"
        )
    );
    let mut names = Vec::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 10, "{l}");
        names.push(f[1].to_string());
        let num = |i: usize| -> f64 { f[i].parse().unwrap_or_else(|_| panic!("{i}: {l}")) };
        assert!(num(2) >= 128.0, "a frame under 128 B: {l}");
        assert!(num(6) > 0.0, "nothing through the one-process form: {l}");
        assert!(
            num(9) > 0.0,
            "nothing through it with the order kept per packet: {l}"
        );
        assert_eq!(f[8], "8.446", "{l}");
        assert!(num(3) > 0.0, "nothing taken by the sandboxed instance: {l}");
        assert!(
            num(4) > 0.0,
            "nothing forwarded by the sandboxed instance: {l}"
        );
        assert!(num(4) <= num(3) * 1.2, "more out than in: {l}");
        // Both rates are rounded to 0.1 kpps in the CSV, the ratio to
        // 0.001: they agree within what that rounding allows.
        let (ratio, rounded) = (num(7), num(3) / num(6));
        assert!(
            (ratio - rounded).abs() <= 0.0006 + rounded * (0.0001 / num(3) + 0.0001 / num(6)),
            "the ratio is not one over the other: {l}"
        );
    }
    assert_eq!(
        names,
        [
            "firewall",
            "stateful-firewall",
            "nat",
            "cgnat",
            "lb",
            "router",
            "ids"
        ]
    );
    let png = std::fs::read(dir.path().join("middleboxes.png")).expect("the PNG");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
}

#[test]
fn a_frame_size_off_the_wire_range_is_refused() {
    if !is_root() {
        eprintln!("SKIPPED a_frame_size_off_the_wire_range_is_refused: sandboxes need root");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["bench", "middleboxes", "--size", "40", "--out", "/tmp"])
        .output()
        .expect("pronto runs");
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "pronto bench middleboxes: --size 40: give a frame size on the wire from 64 to 1518 bytes"
    );
}
