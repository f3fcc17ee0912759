//! The Python client (`python/`) against a real daemon: runs its unittest
//! suite with the daemon's socket, TCP address and admin token.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

mod common;

#[test]
fn python_client_against_a_real_daemon() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipping python_client_against_a_real_daemon: sandboxes need root");
        return;
    }
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipping python_client_against_a_real_daemon: python3 is missing");
        return;
    }
    let dir = common::scratch("python");
    let mut d = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["daemon", "--socket"])
        .arg(dir.join("sock"))
        .arg("--state")
        .arg(dir.join("state"))
        .args(["--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("daemon");
    let mut lines = BufReader::new(d.stderr.take().expect("stderr")).lines();
    let first = lines.next().expect("a line").expect("text");
    assert!(first.starts_with("prontod: listening on unix "), "{first}");
    let url = format!("http://{}", first.rsplit("http://").next().expect("tcp"));
    std::thread::spawn(move || for _ in lines {});
    let token = std::fs::read_to_string(dir.join("state/admin.token")).expect("admin token");
    let o = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "python/tests", "-v"])
        .current_dir(common::root())
        .env("PYTHONPATH", common::root().join("python"))
        .env("PRONTO_SOCKET", dir.join("sock"))
        .env("PRONTO_URL", &url)
        .env("PRONTO_ADMIN_TOKEN", token.trim())
        .output()
        .expect("python3 runs");
    let _ = d.kill();
    let _ = d.wait();
    let out = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(out.contains("Ran 3 tests"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
