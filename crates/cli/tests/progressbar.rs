//! `ProgressBar` on a real terminal: `pronto run` under `script` (a
//! pseudo-terminal as standard error) draws the bar from a Counter's
//! `count` handler, and its last bar when the router stops; without a
//! terminal it draws nothing.

use std::process::Command;

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

const CONFIG: &str = "InfiniteSource(LIMIT 5, STOP false) -> c :: Counter -> Discard;
    pb :: ProgressBar(c.count, FIXED_SIZE 5, UPDATE 0.01, BANNER run);
    DriverManager(wait 100ms, print $(pb.size), stop);";

#[test]
fn draws_on_a_terminal_only() {
    let pronto = env!("CARGO_BIN_EXE_pronto");
    // No terminal: nothing on standard error.
    let o = Command::new(pronto)
        .args(["run", "-e", CONFIG])
        .output()
        .expect("pronto runs");
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout), "5\n");
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    if !have("script") {
        eprintln!("SKIPPED ProgressBar terminal test: no `script` command");
        return;
    }
    let o = Command::new("script")
        .args([
            "-q",
            "-e",
            "-c",
            "\"$PRONTO\" run -e \"$CONFIG\"",
            "/dev/null",
        ])
        .env("PRONTO", pronto)
        .env("CONFIG", CONFIG)
        .env("COLUMNS", "40")
        .output()
        .expect("script runs");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{out}");
    // 40 - ("\rrun 100% " 10 + 25) + 8 = 13 columns, all stars; the time
    // taken is under a second.
    let last = format!("\rrun 100% |{}|    00:00    \r\n", "*".repeat(13));
    assert!(out.ends_with(&last), "{out:?}");
    assert!(out.contains("5\r\n"), "{out:?}");
    // The first draw saw the first packet counted: 1 of 5.
    assert!(
        out.starts_with("\rrun  20% |**           |    --:-- ETA"),
        "{out:?}"
    );
    // Every draw starts at the line's beginning.
    assert!(out.matches("\rrun ").count() >= 2, "{out:?}");
}
