//! The Python client (`python/`) against a real daemon: runs its unittest
//! suite with the daemon's socket, TCP address and admin token.

use std::process::Command;

mod common;

#[test]
fn python_client_against_a_real_daemon() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED python_client_against_a_real_daemon: sandboxes need root");
        return;
    }
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED python_client_against_a_real_daemon: python3 is missing");
        return;
    }
    let dir = common::scratch("python");
    let d = common::start_daemon(&dir);
    let url = format!("http://{}", d.tcp);
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
    drop(d);
    let out = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(out.contains("Ran 5 tests"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
