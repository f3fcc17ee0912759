//! Cgroup limits for one sandbox, on cgroup v1 or v2 (detected at run
//! time).
//!
//! - **v2** (`ROOT/cgroup.controllers` exists): one directory
//!   `ROOT/PARENT/NAME`; the `memory`, `cpu` and `pids` controllers are
//!   enabled in `ROOT/cgroup.subtree_control` and
//!   `ROOT/PARENT/cgroup.subtree_control` when a limit needs them; limits in
//!   `memory.max` (and `memory.swap.max` = 0), `cpu.max`, `pids.max`.
//! - **v1** (otherwise): one directory per controller,
//!   `ROOT/{memory,cpu,pids}/PARENT/NAME`; limits in
//!   `memory.limit_in_bytes` (and `memory.memsw.limit_in_bytes` when swap
//!   accounting exists), `cpu.cfs_period_us`/`cpu.cfs_quota_us`,
//!   `pids.max`.
//!
//! `PARENT` (default `pronto`; it may have several levels, `pronto/d1`) is
//! created when missing and left in place ([`remove_tree`] removes it);
//! `NAME` directories are removed when the [`Cgroup`] is dropped (after
//! the sandbox's process has been reaped).

use std::path::{Path, PathBuf};

use crate::{Limits, SandboxError};

/// The CFS period used for CPU quotas (100 ms, the kernel's default).
pub const CPU_PERIOD_US: u64 = 100_000;

/// Which cgroup hierarchy a root holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// One hierarchy per controller.
    V1,
    /// The unified hierarchy.
    V2,
}

/// Detects the hierarchy at `root`: v2 when `root/cgroup.controllers`
/// exists, else v1.
pub fn detect(root: &Path) -> Version {
    if root.join("cgroup.controllers").exists() {
        Version::V2
    } else {
        Version::V1
    }
}

/// The v1 controllers a sandbox's cgroup has, in the order of its
/// directories.
const V1_CONTROLLERS: [&str; 3] = ["memory", "cpu", "pids"];

/// A sandbox's cgroup directories (removed on drop).
#[derive(Debug)]
pub struct Cgroup {
    version: Version,
    /// The cgroup file system root it was made under.
    root: PathBuf,
    /// Directories made for this sandbox, one per v1 controller or the one
    /// v2 directory.
    dirs: Vec<PathBuf>,
}

fn io_err(step: &str, path: &Path, value: Option<&str>, e: std::io::Error) -> SandboxError {
    SandboxError::Cgroup {
        step: step.to_string(),
        path: path.to_path_buf(),
        value: value.map(str::to_string),
        source: e,
    }
}

fn write(path: &Path, value: &str, step: &str) -> Result<(), SandboxError> {
    std::fs::write(path, value).map_err(|e| io_err(step, path, Some(value), e))
}

/// Writes `value` unless the file holds it already. For the CPU bandwidth
/// files: each write of one makes the kernel check the quota of every
/// cgroup on the machine (`tg_set_cfs_bandwidth`), a cost that grows with
/// each sandbox; a read is cheap.
fn write_if_changed(path: &Path, value: &str, step: &str) -> Result<(), SandboxError> {
    if std::fs::read_to_string(path).is_ok_and(|now| now.trim() == value) {
        return Ok(());
    }
    write(path, value, step)
}

fn mkdir(path: &Path) -> Result<(), SandboxError> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io_err("creating the cgroup directory", path, None, e)),
    }
}

/// Makes `mount/parent` one level at a time.
fn mkdir_levels(mount: &Path, parent: &str) -> Result<(), SandboxError> {
    let mut level = mount.to_path_buf();
    for part in parent.split('/').filter(|p| !p.is_empty()) {
        level.push(part);
        mkdir(&level)?;
    }
    Ok(())
}

/// Makes a sandbox's own cgroup directory. One left behind by a sandbox
/// whose owner died before cleaning up (its processes gone) is removed
/// first, so no stale limit carries over.
fn fresh_dir(path: &Path) -> Result<(), SandboxError> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_dir(path).map_err(|e| {
                io_err(
                    "removing a cgroup left by an earlier sandbox of this name (is it still \
                     running?)",
                    path,
                    None,
                    e,
                )
            })?;
            std::fs::create_dir(path)
                .map_err(|e| io_err("creating the cgroup directory", path, None, e))
        }
        Err(e) => Err(io_err("creating the cgroup directory", path, None, e)),
    }
}

impl Cgroup {
    /// Creates `root/.../parent/name` and writes `limits` into it.
    pub fn create(
        root: &Path,
        parent: &str,
        name: &str,
        limits: &Limits,
    ) -> Result<Cgroup, SandboxError> {
        let version = detect(root);
        let mut cg = Cgroup {
            version,
            root: root.to_path_buf(),
            dirs: Vec::new(),
        };
        match version {
            Version::V1 => cg.create_v1(root, parent, name, limits)?,
            Version::V2 => cg.create_v2(root, parent, name, limits)?,
        }
        Ok(cg)
    }

    fn create_v1(
        &mut self,
        root: &Path,
        parent: &str,
        name: &str,
        limits: &Limits,
    ) -> Result<(), SandboxError> {
        for controller in V1_CONTROLLERS {
            let mount = root.join(controller);
            if !mount.join("cgroup.procs").exists() {
                return Err(SandboxError::CgroupMissing {
                    what: format!("cgroup v1 {controller} controller"),
                    path: mount,
                    hint: format!(
                        "mount it (`mount -t cgroup -o {controller} cgroup {}`) or point \
                         SandboxSpec::cgroup_root at the hierarchy",
                        root.join(controller).display()
                    ),
                });
            }
            let p = mount.join(parent);
            mkdir_levels(&mount, parent)?;
            let dir = p.join(name);
            fresh_dir(&dir)?;
            self.dirs.push(dir.clone());
            match controller {
                "memory" => {
                    if let Some(m) = limits.memory_bytes {
                        let v = m.to_string();
                        // Memory first (memory+swap may not go below it),
                        // then memory+swap to the same value: no swap.
                        let memsw = dir.join("memory.memsw.limit_in_bytes");
                        write(
                            &dir.join("memory.limit_in_bytes"),
                            &v,
                            "setting the memory limit",
                        )?;
                        if memsw.exists() {
                            write(&memsw, &v, "setting the memory+swap limit")?;
                        }
                    }
                }
                "cpu" => {
                    if let Some(w) = limits.cpu_weight {
                        write(
                            &dir.join("cpu.shares"),
                            &cpu_shares(w).to_string(),
                            "setting the CPU weight",
                        )?;
                    }
                    if let Some(c) = limits.cpu {
                        write_if_changed(
                            &dir.join("cpu.cfs_period_us"),
                            &CPU_PERIOD_US.to_string(),
                            "setting the CPU period",
                        )?;
                        write_if_changed(
                            &dir.join("cpu.cfs_quota_us"),
                            &cpu_quota_us(c).to_string(),
                            "setting the CPU quota",
                        )?;
                    }
                }
                _ => {
                    if let Some(p) = limits.pids {
                        write(
                            &dir.join("pids.max"),
                            &p.to_string(),
                            "setting the pids limit",
                        )?;
                    }
                }
            }
        }
        Ok(())
    }

    fn create_v2(
        &mut self,
        root: &Path,
        parent: &str,
        name: &str,
        limits: &Limits,
    ) -> Result<(), SandboxError> {
        let mut wanted = Vec::new();
        if limits.memory_bytes.is_some() {
            wanted.push("memory");
        }
        if limits.cpu.is_some() || limits.cpu_weight.is_some() {
            wanted.push("cpu");
        }
        if limits.pids.is_some() {
            wanted.push("pids");
        }
        let controllers_file = root.join("cgroup.controllers");
        let available = std::fs::read_to_string(&controllers_file).map_err(|e| {
            io_err(
                "reading the available controllers",
                &controllers_file,
                None,
                e,
            )
        })?;
        for c in &wanted {
            if !available.split_whitespace().any(|a| a == *c) {
                return Err(SandboxError::CgroupMissing {
                    what: format!("cgroup v2 {c} controller"),
                    path: controllers_file,
                    hint: format!(
                        "the hierarchy at {} does not offer it (its cgroup.controllers \
                         reads `{}`); enable it on the parent cgroup or leave that limit unset",
                        root.display(),
                        available.trim()
                    ),
                });
            }
        }
        let p = root.join(parent);
        let enable: String = wanted.iter().map(|c| format!("+{c} ")).collect();
        let enable = enable.trim_end();
        if !enable.is_empty() {
            write(
                &root.join("cgroup.subtree_control"),
                enable,
                "enabling controllers for child cgroups",
            )?;
        }
        // Each level enables the controllers for the one below.
        let mut level = root.to_path_buf();
        for part in parent.split('/').filter(|p| !p.is_empty()) {
            level.push(part);
            mkdir(&level)?;
            if !enable.is_empty() {
                write(
                    &level.join("cgroup.subtree_control"),
                    enable,
                    "enabling controllers for child cgroups",
                )?;
            }
        }
        let dir = p.join(name);
        fresh_dir(&dir)?;
        self.dirs.push(dir.clone());
        if let Some(m) = limits.memory_bytes {
            write(
                &dir.join("memory.max"),
                &m.to_string(),
                "setting the memory limit",
            )?;
            let swap = dir.join("memory.swap.max");
            if swap.exists() {
                write(&swap, "0", "forbidding swap")?;
            }
        }
        if let Some(w) = limits.cpu_weight {
            write(
                &dir.join("cpu.weight"),
                &w.clamp(1, 10_000).to_string(),
                "setting the CPU weight",
            )?;
        }
        if let Some(c) = limits.cpu {
            write(
                &dir.join("cpu.max"),
                &format!("{} {CPU_PERIOD_US}", cpu_quota_us(c)),
                "setting the CPU quota",
            )?;
        }
        if let Some(n) = limits.pids {
            write(
                &dir.join("pids.max"),
                &n.to_string(),
                "setting the pids limit",
            )?;
        }
        Ok(())
    }

    /// Changes the limits of a cgroup in use (a pre-started sandbox taken
    /// for an instance). A kind of limit the cgroup was made without
    /// (v2: its controller not enabled) is an error; `None` leaves a limit
    /// as it is.
    pub fn update(&self, limits: &Limits) -> Result<(), SandboxError> {
        let file = |ctl: &str, name: &str| -> PathBuf {
            match self.version {
                Version::V1 => {
                    let i = ["memory", "cpu", "pids"]
                        .iter()
                        .position(|c| *c == ctl)
                        .unwrap_or(0);
                    self.dirs.get(i).cloned().unwrap_or_default().join(name)
                }
                Version::V2 => self.dirs.first().cloned().unwrap_or_default().join(name),
            }
        };
        if let Some(m) = limits.memory_bytes {
            let v = m.to_string();
            match self.version {
                Version::V1 => {
                    let mem = file("memory", "memory.limit_in_bytes");
                    let memsw = file("memory", "memory.memsw.limit_in_bytes");
                    if memsw.exists() {
                        // Raising: memory+swap first; lowering: memory
                        // first. One of the two orders is accepted.
                        if std::fs::write(&memsw, &v).is_ok() {
                            write(&mem, &v, "setting the memory limit")?;
                        } else {
                            write(&mem, &v, "setting the memory limit")?;
                            write(&memsw, &v, "setting the memory+swap limit")?;
                        }
                    } else {
                        write(&mem, &v, "setting the memory limit")?;
                    }
                }
                Version::V2 => write(
                    &file("memory", "memory.max"),
                    &v,
                    "setting the memory limit",
                )?,
            }
        }
        if let Some(w) = limits.cpu_weight {
            match self.version {
                Version::V1 => write(
                    &file("cpu", "cpu.shares"),
                    &cpu_shares(w).to_string(),
                    "setting the CPU weight",
                )?,
                Version::V2 => write(
                    &file("cpu", "cpu.weight"),
                    &w.clamp(1, 10_000).to_string(),
                    "setting the CPU weight",
                )?,
            }
        }
        if let Some(c) = limits.cpu {
            match self.version {
                Version::V1 => {
                    write_if_changed(
                        &file("cpu", "cpu.cfs_period_us"),
                        &CPU_PERIOD_US.to_string(),
                        "setting the CPU period",
                    )?;
                    write_if_changed(
                        &file("cpu", "cpu.cfs_quota_us"),
                        &cpu_quota_us(c).to_string(),
                        "setting the CPU quota",
                    )?;
                }
                Version::V2 => write_if_changed(
                    &file("cpu", "cpu.max"),
                    &format!("{} {CPU_PERIOD_US}", cpu_quota_us(c)),
                    "setting the CPU quota",
                )?,
            }
        }
        if let Some(n) = limits.pids {
            write(
                &file("pids", "pids.max"),
                &n.to_string(),
                "setting the pids limit",
            )?;
        }
        Ok(())
    }

    /// The hierarchy in use.
    pub fn version(&self) -> Version {
        self.version
    }

    /// This sandbox's directories (one per v1 controller, or the v2 one).
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// Moves process `pid` into every directory.
    pub fn join(&self, pid: u32) -> Result<(), SandboxError> {
        for d in &self.dirs {
            write(
                &d.join("cgroup.procs"),
                &pid.to_string(),
                "moving the sandbox into its cgroup",
            )?;
        }
        Ok(())
    }

    /// Moves the calling thread, and only it (`tasks`, `0`), into this
    /// sandbox's v1 cgroups, so that a process it clones starts in them;
    /// [`Entered`] moves it back. Moving a process by its pid
    /// (`cgroup.procs`, [`Cgroup::join`]) takes the kernel's global
    /// threadgroup lock, whose writer waits for an RCU grace period:
    /// 12-15 ms measured on every cold start, against 0.3 ms for a thread
    /// that moves itself. `None` (the caller joins the child by pid
    /// instead): cgroup v2, a pids limit below 2 (the thread and its child
    /// count against it while both are in), or a thread whose own cgroups
    /// are not found under this root.
    pub fn enter(&self, limits: &Limits) -> Result<Option<Entered>, SandboxError> {
        if self.version != Version::V1 || limits.pids.is_some_and(|p| p < 2) {
            return Ok(None);
        }
        let own_file = Path::new("/proc/thread-self/cgroup");
        let own = std::fs::read_to_string(own_file)
            .map_err(|e| io_err("reading the spawning thread's cgroups", own_file, None, e))?;
        let mut back = Vec::new();
        for controller in V1_CONTROLLERS {
            let Some(from) = own_path(&own, controller) else {
                return Ok(None);
            };
            let tasks = self
                .root
                .join(controller)
                .join(from.trim_start_matches('/'))
                .join("tasks");
            // Opened now, before the thread moves: going back then needs
            // no new descriptor, so it cannot fail for want of one (the
            // daemon's thread would otherwise stay in a tenant's cgroup,
            // under its limits, and keep that cgroup from being removed).
            let file = match std::fs::OpenOptions::new().write(true).open(&tasks) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => {
                    return Err(io_err(
                        "opening the spawning thread's own cgroup to come back to",
                        &tasks,
                        None,
                        e,
                    ))
                }
            };
            back.push((tasks, file));
        }
        let mut entered = Entered { back: Vec::new() };
        for (dir, from) in self.dirs.iter().zip(back) {
            write(
                &dir.join("tasks"),
                "0",
                "moving the spawning thread into the sandbox's cgroup",
            )?;
            entered.back.push(from);
        }
        Ok(Some(entered))
    }

    /// How many times the kernel's OOM killer killed a process of this
    /// cgroup (v1 `memory.oom_control`, v2 `memory.events`, `oom_kill`).
    pub fn oom_kills(&self) -> Option<u64> {
        let file = match self.version {
            Version::V1 => self.dirs.first()?.join("memory.oom_control"),
            Version::V2 => self.dirs.first()?.join("memory.events"),
        };
        let text = std::fs::read_to_string(file).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|v| v.trim().parse().ok())
    }

    /// Peak memory use in bytes (v1 `memory.max_usage_in_bytes`, v2
    /// `memory.peak` where the kernel has it).
    pub fn memory_peak(&self) -> Option<u64> {
        let file = match self.version {
            Version::V1 => self.dirs.first()?.join("memory.max_usage_in_bytes"),
            Version::V2 => self.dirs.first()?.join("memory.peak"),
        };
        std::fs::read_to_string(file).ok()?.trim().parse().ok()
    }
}

impl Cgroup {
    /// Memory in use that the kernel cannot simply drop: anonymous memory
    /// and shared memory (a packet pool is a memfd), not the file cache
    /// (v1 `memory.stat` `total_rss` + `total_shmem`, v2 `anon` +
    /// `shmem`).
    pub fn memory_in_use(&self) -> Option<u64> {
        let dir = self.dirs.first()?;
        let text = std::fs::read_to_string(dir.join("memory.stat")).ok()?;
        in_use_of(&text, self.version)
    }
}

/// [`Cgroup::memory_in_use`] from the text of `memory.stat`.
pub fn in_use_of(stat: &str, version: Version) -> Option<u64> {
    let keys: [&str; 2] = match version {
        Version::V1 => ["total_rss", "total_shmem"],
        Version::V2 => ["anon", "shmem"],
    };
    let mut sum = 0u64;
    for k in keys {
        let v = stat.lines().find_map(|l| {
            let (name, value) = l.split_once(' ')?;
            (name == k).then(|| value.trim().parse::<u64>().ok())?
        })?;
        sum = sum.saturating_add(v);
    }
    Some(sum)
}

/// The directories `parent` names under `root`: the v2 one, or one per v1
/// controller (those that exist or not).
pub fn parent_dirs(root: &Path, parent: &str) -> Vec<PathBuf> {
    match detect(root) {
        Version::V2 => vec![root.join(parent)],
        Version::V1 => ["memory", "cpu", "pids"]
            .iter()
            .map(|c| root.join(c).join(parent))
            .collect(),
    }
}

/// The names of the cgroups directly under `parent`, in any hierarchy.
pub fn children(root: &Path, parent: &str) -> Vec<String> {
    let mut out: Vec<String> = parent_dirs(root, parent)
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|rd| rd.flatten())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Removes the cgroup `parent` in every hierarchy, with the cgroups under
/// it, deepest first. A cgroup that still holds a process cannot be
/// removed: the error names the first such directory.
pub fn remove_tree(root: &Path, parent: &str) -> Result<(), SandboxError> {
    fn remove(dir: &Path) -> Result<(), SandboxError> {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                remove(&e.path())?;
            }
        }
        // A cgroup whose last process just exited can be busy a moment.
        let mut last = None;
        for _ in 0..50 {
            match std::fs::remove_dir(dir) {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => last = Some(e),
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        Err(io_err(
            "removing a cgroup (does a process still run in it?)",
            dir,
            None,
            last.unwrap_or_else(|| std::io::ErrorKind::Other.into()),
        ))
    }
    let mut first = Ok(());
    for d in parent_dirs(root, parent) {
        let r = remove(&d);
        if first.is_ok() {
            first = r;
        }
    }
    first
}

/// cgroup v1 `cpu.shares` for a weight on v2's scale (1 to 10,000, 100 the
/// default): 1,024 for 100, at least 2 (the kernel's minimum).
pub fn cpu_shares(weight: u32) -> u64 {
    (u64::from(weight.clamp(1, 10_000)) * 1024 / 100).max(2)
}

/// The CFS quota for `cpu` cores (fractions allowed), at least 1 ms.
pub fn cpu_quota_us(cpu: f64) -> u64 {
    ((cpu * CPU_PERIOD_US as f64).round() as u64).max(1000)
}

/// The path of `controller`'s cgroup in a `/proc/.../cgroup` table
/// (`ID:CONTROLLERS:PATH` lines, v1 hierarchies naming their controllers).
fn own_path<'a>(table: &'a str, controller: &str) -> Option<&'a str> {
    table.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let _id = f.next()?;
        let controllers = f.next()?;
        let path = f.next()?;
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })
}

/// The spawning thread inside a sandbox's v1 cgroups ([`Cgroup::enter`]):
/// [`Entered::leave`] (or dropping it) moves it back where it was.
#[derive(Debug)]
pub struct Entered {
    /// The `tasks` file of each hierarchy the thread came from, open.
    back: Vec<(PathBuf, std::fs::File)>,
}

impl Entered {
    /// Moves the thread back into its own cgroups.
    pub fn leave(mut self) -> Result<(), SandboxError> {
        self.go_back()
    }

    fn go_back(&mut self) -> Result<(), SandboxError> {
        let mut done = Ok(());
        for (tasks, mut file) in self.back.drain(..).rev() {
            let step = "moving the spawning thread back to its cgroup";
            let r = std::io::Write::write_all(&mut file, b"0")
                .map_err(|e| io_err(step, &tasks, Some("0"), e));
            if done.is_ok() {
                done = r;
            }
        }
        done
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        if let Err(e) = self.go_back() {
            eprintln!("pronto-sandbox: {e}");
        }
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        for d in self.dirs.iter().rev() {
            // A cgroup whose last process just exited can be busy for a
            // moment; retry briefly.
            for attempt in 0..50 {
                match std::fs::remove_dir(d) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(e) => {
                        if attempt == 49 {
                            eprintln!("pronto-sandbox: cannot remove cgroup {}: {e}", d.display());
                        }
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_own_cgroup_is_read_per_controller() {
        let t =
            "9:name=systemd:/\n4:memory:/process_api/eb52\n2:cpu,cpuacct:/a/b\n8:pids:/\n0::/\n";
        assert_eq!(own_path(t, "memory"), Some("/process_api/eb52"));
        assert_eq!(own_path(t, "cpu"), Some("/a/b"));
        assert_eq!(own_path(t, "cpuacct"), Some("/a/b"));
        assert_eq!(own_path(t, "pids"), Some("/"));
        assert_eq!(own_path(t, "blkio"), None);
    }

    #[test]
    fn memory_in_use_is_anonymous_and_shared_memory() {
        let v1 = "cache 9000\nrss 100\nshmem 7\ntotal_cache 9000\ntotal_rss 1000\n\
                  total_rss_huge 0\ntotal_shmem 200\ntotal_inactive_file 5000\n";
        assert_eq!(in_use_of(v1, Version::V1), Some(1200));
        let v2 = "anon 4096\nfile 100000\nkernel 300\nshmem 1024\nanon_thp 0\n";
        assert_eq!(in_use_of(v2, Version::V2), Some(5120));
        assert_eq!(in_use_of("file 1\n", Version::V2), None);
    }
}
