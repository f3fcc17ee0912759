//! Two processes hash the same key differently: the seed is drawn per
//! process, not compiled in.

use std::process::Command;

/// The key both processes hash.
const KEY: (u32, u32, u16, u16, u8) = (0x0a00_0001, 0xc0a8_0001, 40_000, 80, 6);

/// Runs this test binary again, asking only for [`child_prints_hash`],
/// and returns the hash the child printed.
fn hash_in_child() -> u64 {
    let exe = std::env::current_exe().expect("test binary path");
    let out = Command::new(exe)
        .args([
            "--exact",
            "child_prints_hash",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("PRONTO_HASH_CHILD", "1")
        .output()
        .expect("child runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.split_once("HASH=").map(|(_, h)| h))
        .unwrap_or_else(|| panic!("no HASH= line in {text}"));
    line.trim().parse().expect("a number")
}

#[test]
fn child_prints_hash() {
    if std::env::var_os("PRONTO_HASH_CHILD").is_some() {
        // A map's hasher built the way every table's is.
        let h = pronto_hash::KeyedHasher::new();
        println!("HASH={}", h.hash(KEY));
    }
}

#[test]
fn two_processes_hash_the_same_key_differently() {
    let (a, b) = (hash_in_child(), hash_in_child());
    let here = pronto_hash::KeyedHasher::new().hash(KEY);
    assert_ne!(a, b, "two processes gave {a} for the same key");
    assert_ne!(a, here);
    assert_ne!(b, here);
}
