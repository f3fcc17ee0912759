//! Where the daemon's sandboxes' cgroups live: under one directory of its
//! own per hierarchy, `pronto/prontod-PID`, removed when it stops. A
//! daemon that was killed leaves its directory behind (its sandboxes die
//! with it); the next daemon removes every such directory whose daemon is
//! gone.

use std::path::Path;
use std::time::Duration;

use pronto_sandbox::cgroup;

/// The directory all daemons' directories are under.
pub(crate) const BASE: &str = "pronto";

/// This daemon's directory: `pronto/prontod-PID`.
pub(crate) fn own_parent() -> String {
    format!("{BASE}/prontod-{}", std::process::id())
}

/// Whether process `pid` is alive and runs the same program as this one.
fn alive_daemon(pid: u32) -> bool {
    let comm = |p: &str| std::fs::read_to_string(format!("/proc/{p}/comm")).ok();
    match (comm(&pid.to_string()), comm("self")) {
        (Some(theirs), Some(mine)) => theirs == mine,
        _ => false,
    }
}

/// The daemons' directories under `root` whose daemon is gone.
pub(crate) fn stale(root: &Path) -> Vec<String> {
    cgroup::children(root, BASE)
        .into_iter()
        .filter(|n| {
            n.strip_prefix("prontod-")
                .and_then(|p| p.parse::<u32>().ok())
                .is_some_and(|pid| pid != std::process::id() && !alive_daemon(pid))
        })
        .map(|n| format!("{BASE}/{n}"))
        .collect()
}

/// Removes the directories of daemons that are gone, in the background:
/// their sandboxes may take a moment to die.
pub(crate) fn sweep(root: &Path) {
    let root = root.to_path_buf();
    let _ = std::thread::Builder::new()
        .name("prontod-sweep".into())
        .stack_size(super::SUPERVISOR_STACK)
        .spawn(move || {
            for _ in 0..50 {
                let left: Vec<String> = stale(&root)
                    .into_iter()
                    .filter(|p| cgroup::remove_tree(&root, p).is_err())
                    .collect();
                if left.is_empty() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gone_daemons_directories_are_stale() {
        let root = std::env::temp_dir().join(format!("pronto-cg-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        // A v1-like tree: memory/pronto/...
        let base = root.join("memory").join(BASE);
        // A pid that cannot be a running process, this test's own, and a
        // directory that is not a daemon's.
        for d in ["prontod-4194305", "prontod-1", "other"] {
            std::fs::create_dir_all(base.join(d).join("warm1")).expect("dir");
        }
        std::fs::create_dir_all(base.join(format!("prontod-{}", std::process::id()))).expect("dir");
        // pid 1 runs another program than this test.
        assert_eq!(
            stale(&root),
            vec![
                format!("{BASE}/prontod-1"),
                format!("{BASE}/prontod-4194305")
            ]
        );
        assert_eq!(
            own_parent(),
            format!("pronto/prontod-{}", std::process::id())
        );
        let _ = std::fs::remove_dir_all(&root);
    }
}
