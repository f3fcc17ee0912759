//! pronto's sandbox: a middlebox instance as one small process, isolated by
//! the kernel.
//!
//! This crate is the jail, and needs nothing of the router: it depends on
//! `pronto-ring` (descriptor passing), `rustix` and `libc` only. What runs
//! inside is another crate's business: `pronto-instance` (the instance
//! runner, `pronto instance`) speaks the [`proto`] on the socket.
//!
//! [`Sandbox::spawn`] starts the instance program (`pronto instance`, or
//! `pronto-instance`'s binary) with:
//!
//! - **new user, PID, mount, network, IPC and UTS namespaces**, entered in
//!   one `clone` (the instance is PID 1 of its PID namespace, its network
//!   namespace has only a loopback interface, which is down);
//! - **ids**: uid and gid 0 inside map to one unprivileged host uid/gid
//!   ([`SandboxSpec::host_uid`], default 65534, `nobody`; a daemon may give
//!   each tenant its own, e.g. a base plus an index); supplementary groups
//!   are dropped;
//! - **a read-only filesystem view**: a small tmpfs root holding read-only
//!   bind mounts of the dynamic loader and library directories
//!   ([`SandboxSpec::lib_dirs`]: `/lib`, `/lib64`, `/usr/lib`, `/usr/lib64`
//!   as present, symlinks kept as symlinks), any extra
//!   [`SandboxSpec::ro_paths`], and the program itself at `/pronto`; then
//!   that root moved over `/` and entered (`chroot`: `pivot_root` would
//!   visit every thread on the machine per start), and remounted
//!   read-only.
//!   There is no `/proc`, `/sys`, `/dev`, `/etc` or `/tmp`; descriptors 0-2
//!   are set up before the switch (stdin is `/dev/null`);
//! - **cgroup limits** on memory, CPU (a fraction of a core) and number of
//!   processes, on cgroup v1 or v2 ([`cgroup`]);
//! - **rlimits** (`NOFILE`, `CORE` 0, `MEMLOCK` 0, `MSGQUEUE` 0), a new
//!   session, `PR_SET_NO_NEW_PRIVS`, **no capabilities** after `execve`
//!   (secure bits `NOROOT`, empty ambient and bounding sets), optionally
//!   `PR_SET_PDEATHSIG`;
//! - **one unix socket** at descriptor 3, the instance's only channel: its
//!   configuration, handler calls and (later) ring memfds arrive on it
//!   ([`proto`]). Every other descriptor is closed.
//!
//! Inside, the instance installs a **seccomp allow-list**
//! (`pronto_instance::seccomp`) once its first configuration is built.
//!
//! Every failing step is an error naming the step, the path or value and
//! the errno ([`SandboxError`]).

pub mod cgroup;
pub mod proto;
mod sys;

use std::ffi::CString;
use std::io::Read;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use cgroup::Cgroup;

use proto::{Reply, Request};
pub use sys::release_free_memory;

/// Where the program appears inside the sandbox.
pub const EXEC_PATH: &str = "/pronto";

/// The longest the child's set-up (clone to execve) may take.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(10);

/// Resource limits of one sandbox. `None`: no cgroup limit of that kind
/// (the cgroup is still made, for accounting).
#[derive(Clone, Debug, PartialEq)]
pub struct Limits {
    /// Memory (anonymous, shared memory and page cache charged to the
    /// cgroup), bytes; swap is not allowed beyond it.
    pub memory_bytes: Option<u64>,
    /// CPU time as a fraction of one core (0.2: 20 ms every 100 ms).
    pub cpu: Option<f64>,
    /// CPU weight when CPUs are contended, 1 to 10,000 (100: the kernel's
    /// default share): v2 `cpu.weight`, v1 `cpu.shares` scaled (1024 for
    /// 100).
    pub cpu_weight: Option<u32>,
    /// Processes and threads.
    pub pids: Option<u64>,
    /// `RLIMIT_NOFILE`.
    pub nofile: u64,
}

impl Default for Limits {
    /// 32 MiB, no CPU quota, 8 tasks, 64 descriptors.
    fn default() -> Self {
        Limits {
            memory_bytes: Some(32 << 20),
            cpu: None,
            cpu_weight: None,
            pids: Some(8),
            nofile: 64,
        }
    }
}

/// Where the instance's stdout or stderr goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The parent's descriptor.
    Inherit,
    /// `/dev/null`.
    Null,
}

/// How to start one sandbox.
#[derive(Clone, Debug)]
pub struct SandboxSpec {
    /// The instance's name: its cgroup directory and hostname. 1 to 64 of
    /// `A-Z a-z 0-9 _ . -`, not starting with `.`.
    pub name: String,
    /// The instance program (absolute, or relative to the current
    /// directory); it appears inside as [`EXEC_PATH`].
    pub program: PathBuf,
    /// Arguments after `argv[0]` (`["instance"]` for the `pronto` binary).
    pub args: Vec<String>,
    /// Limits.
    pub limits: Limits,
    /// Host uid that uid 0 inside maps to.
    pub host_uid: u32,
    /// Host gid that gid 0 inside maps to.
    pub host_gid: u32,
    /// Loader and library directories bound read-only at the same paths,
    /// those that exist (a symlink is recreated as the same symlink).
    pub lib_dirs: Vec<PathBuf>,
    /// Further files or directories bound read-only at the same paths
    /// (each must exist).
    pub ro_paths: Vec<PathBuf>,
    /// An empty directory the sandbox's tmpfs root is mounted on (inside
    /// each sandbox's own mount namespace, so all sandboxes share it).
    pub root_dir: PathBuf,
    /// Whether to make a cgroup at all (measurements without one).
    pub use_cgroup: bool,
    /// The cgroup file system root (`/sys/fs/cgroup`); v2 when it holds
    /// `cgroup.controllers`, else v1 with one directory per controller.
    pub cgroup_root: PathBuf,
    /// Directory under each hierarchy that holds the sandboxes' cgroups
    /// (up to 4 levels: `pronto/prontod-42`).
    pub cgroup_parent: String,
    /// Where the instance's stdout goes.
    pub stdout: Output,
    /// Where the instance's stderr goes.
    pub stderr: Output,
    /// Kill the instance when the thread that spawned it exits
    /// (`PR_SET_PDEATHSIG`; note: the *thread*, so spawn from a
    /// long-lived one).
    pub die_with_parent: bool,
}

impl SandboxSpec {
    /// A spec with the defaults: [`Limits::default`], host ids 65534, the
    /// standard library directories, root mount point
    /// `$TMPDIR/pronto-sandbox-root`, cgroups under `/sys/fs/cgroup/.../pronto`,
    /// stdout and stderr inherited, killed with its parent.
    pub fn new(name: impl Into<String>, program: impl Into<PathBuf>) -> SandboxSpec {
        SandboxSpec {
            name: name.into(),
            program: program.into(),
            args: Vec::new(),
            limits: Limits::default(),
            host_uid: 65534,
            host_gid: 65534,
            lib_dirs: ["/lib", "/lib64", "/usr/lib", "/usr/lib64"]
                .iter()
                .map(PathBuf::from)
                .collect(),
            ro_paths: Vec::new(),
            root_dir: std::env::temp_dir().join("pronto-sandbox-root"),
            use_cgroup: true,
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            cgroup_parent: "pronto".into(),
            stdout: Output::Inherit,
            stderr: Output::Inherit,
            die_with_parent: true,
        }
    }
}

/// Why a sandbox could not start, or why talking to it failed.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A field of the spec is unusable.
    #[error("sandbox spec: {field}: {reason}")]
    Spec {
        /// The field.
        field: &'static str,
        /// What is wrong and what to do.
        reason: String,
    },
    /// Preparing the start in the parent failed (a path, a pipe, a socket).
    #[error("{what} {}: {source}", path.display())]
    Prepare {
        /// What was being done.
        what: String,
        /// The path involved.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A cgroup file could not be written or a directory made.
    #[error("cgroup: {step}: {}{}: {source}", value.as_ref().map(|v| format!("writing `{v}` to ")).unwrap_or_default(), path.display())]
    Cgroup {
        /// What was being done.
        step: String,
        /// The file or directory.
        path: PathBuf,
        /// The value written, if any.
        value: Option<String>,
        /// The error.
        source: std::io::Error,
    },
    /// A controller the limits need is missing.
    #[error("{what} not available at {}: {hint}", path.display())]
    CgroupMissing {
        /// The controller, e.g. "cgroup v1 memory controller".
        what: String,
        /// Where it was looked for.
        path: PathBuf,
        /// What to do.
        hint: String,
    },
    /// `clone` into the new namespaces failed.
    #[error("clone into new user, PID, mount, network, IPC and UTS namespaces: {source}{hint}")]
    Clone {
        /// The error.
        source: std::io::Error,
        /// A hint for the usual causes.
        hint: String,
    },
    /// Writing the child's uid or gid map failed.
    #[error("writing `{value}` to {}: {source}", path.display())]
    IdMap {
        /// `/proc/PID/uid_map` or `gid_map`.
        path: PathBuf,
        /// The mapping.
        value: String,
        /// The error.
        source: std::io::Error,
    },
    /// A set-up step inside the child failed.
    #[error("sandbox set-up: {step}: {source}{hint}")]
    Child {
        /// The step, with its path or value.
        step: String,
        /// The errno the step got.
        source: std::io::Error,
        /// A hint for the usual causes.
        hint: String,
    },
    /// Waiting for, signalling or talking to the instance failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// The instance closed its socket (it ended).
    #[error("the instance ended ({})", describe_end(*status, *oom_kills))]
    Ended {
        /// Its exit status, when it could be collected.
        status: Option<ExitStatus>,
        /// The cgroup's OOM kill count, when known.
        oom_kills: Option<u64>,
    },
    /// The instance's reply did not follow the protocol.
    #[error("instance protocol: {0}")]
    Protocol(String),
    /// The instance answered `ERR`.
    #[error("{0}")]
    Remote(String),
}

fn describe_end(status: Option<ExitStatus>, oom: Option<u64>) -> String {
    let mut s = match status {
        Some(st) => match st.signal() {
            Some(libc::SIGSYS) => {
                "killed by SIGSYS: a system call outside the seccomp allow-list".to_string()
            }
            Some(libc::SIGKILL) => "killed by SIGKILL".to_string(),
            Some(sig) => format!("killed by signal {sig}"),
            None => format!("exit status {}", st.code().unwrap_or(-1)),
        },
        None => "status not collected yet".to_string(),
    };
    if let Some(n) = oom.filter(|n| *n > 0) {
        s.push_str(&format!(
            "; the cgroup's OOM killer fired {n} time(s): raise Limits::memory_bytes"
        ));
    }
    s
}

/// A running sandbox. Dropping it kills the instance (if still running),
/// reaps it and removes its cgroup.
#[derive(Debug)]
pub struct Sandbox {
    pid: libc::pid_t,
    sock: OwnedFd,
    /// Rings the instance's switch ports (a signal to `pid`): disarmed
    /// before the process is reaped, so that it never signals a process
    /// that took the pid over.
    wake: Arc<pronto_ring::SignalBell>,
    status: Option<ExitStatus>,
    // Dropped after the process is reaped (see Drop).
    cgroup: Option<Cgroup>,
    name: String,
}

fn cstring(field: &'static str, p: &Path) -> Result<CString, SandboxError> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| SandboxError::Spec {
        field,
        reason: format!("{} contains a NUL byte", p.display()),
    })
}

fn check_name(name: &str) -> Result<(), SandboxError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(SandboxError::Spec {
            field: "name",
            reason: format!(
                "`{name}`: use 1 to 64 of A-Z a-z 0-9 _ . - (not starting with `.`); it names \
                 the cgroup directory and the hostname"
            ),
        })
    }
}

/// Builds the mount plan and everything else the child needs.
fn build_plan(
    spec: &SandboxSpec,
    program: &Path,
    root: &Path,
) -> Result<sys::ChildPlan, SandboxError> {
    let mut plan: Vec<sys::PlanEntry> = Vec::new();
    // Paths inside made so far, and whether each is a bind (read-only).
    let mut made: Vec<(PathBuf, bool)> = Vec::new();
    let target_of = |inside: &Path| -> Result<CString, SandboxError> {
        let rel = inside.strip_prefix("/").unwrap_or(inside);
        cstring("root_dir", &root.join(rel))
    };
    let mut add = |inside: &Path,
                   op: sys::MountOp,
                   bind: bool,
                   plan: &mut Vec<sys::PlanEntry>|
     -> Result<(), SandboxError> {
        // Inside a read-only bind it is visible already (or cannot be
        // made): skip.
        if made
            .iter()
            .any(|(p, b)| *b && inside.starts_with(p) || p == inside)
        {
            return Ok(());
        }
        let mut ancestors: Vec<&Path> = inside
            .ancestors()
            .skip(1)
            .filter(|a| *a != Path::new("/"))
            .collect();
        ancestors.reverse();
        for a in ancestors {
            if !made.iter().any(|(p, _)| p == a) {
                plan.push(sys::PlanEntry {
                    target: target_of(a)?,
                    op: sys::MountOp::Mkdir,
                });
                made.push((a.to_path_buf(), false));
            }
        }
        plan.push(sys::PlanEntry {
            target: target_of(inside)?,
            op,
        });
        made.push((inside.to_path_buf(), bind));
        Ok(())
    };
    let sources = spec
        .lib_dirs
        .iter()
        .map(|p| (p, true))
        .chain(spec.ro_paths.iter().map(|p| (p, false)));
    for (p, optional) in sources {
        let field = if optional { "lib_dirs" } else { "ro_paths" };
        if !p.is_absolute() {
            return Err(SandboxError::Spec {
                field,
                reason: format!("{} is not an absolute path", p.display()),
            });
        }
        let md = match std::fs::symlink_metadata(p) {
            Ok(m) => m,
            Err(e) if optional && e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(SandboxError::Prepare {
                    what: format!("{field}: looking up"),
                    path: p.clone(),
                    source: e,
                })
            }
        };
        let source = cstring(field, p)?;
        let op = if md.file_type().is_symlink() {
            let link = std::fs::read_link(p).map_err(|e| SandboxError::Prepare {
                what: format!("{field}: reading the symlink"),
                path: p.clone(),
                source: e,
            })?;
            sys::MountOp::Symlink {
                link: cstring(field, &link)?,
            }
        } else {
            let flags = sys::mount_flags_of(&source).map_err(|e| SandboxError::Prepare {
                what: format!("{field}: statvfs"),
                path: p.clone(),
                source: e,
            })?;
            if md.is_dir() {
                sys::MountOp::BindDir { source, flags }
            } else {
                sys::MountOp::BindFile { source, flags }
            }
        };
        let bind = !matches!(op, sys::MountOp::Symlink { .. });
        add(p, op, bind, &mut plan)?;
    }
    let prog_c = cstring("program", program)?;
    let flags = sys::mount_flags_of(&prog_c).map_err(|e| SandboxError::Prepare {
        what: "program: statvfs".into(),
        path: program.to_path_buf(),
        source: e,
    })?;
    add(
        Path::new(EXEC_PATH),
        sys::MountOp::BindFile {
            source: prog_c,
            flags,
        },
        true,
        &mut plan,
    )?;
    let argv0 = program
        .file_name()
        .map(|n| n.as_bytes().to_vec())
        .unwrap_or_else(|| b"pronto".to_vec());
    let mut argv = vec![CString::new(argv0).map_err(|_| SandboxError::Spec {
        field: "program",
        reason: "file name contains a NUL byte".into(),
    })?];
    for a in &spec.args {
        argv.push(CString::new(a.as_bytes()).map_err(|_| SandboxError::Spec {
            field: "args",
            reason: format!("`{a}` contains a NUL byte"),
        })?);
    }
    let envp = vec![
        CString::new(format!("PRONTO_INSTANCE={}", spec.name)).map_err(|_| SandboxError::Spec {
            field: "name",
            reason: "contains a NUL byte".into(),
        })?,
    ];
    let inodes = 16 + 2 * plan.len();
    Ok(sys::ChildPlan {
        root: cstring("root_dir", root)?,
        tmpfs_opts: CString::new(format!("size=64k,nr_inodes={inodes},mode=0755"))
            .map_err(|_| SandboxError::Protocol("tmpfs options".into()))?,
        hostname: CString::new(spec.name.as_bytes()).map_err(|_| SandboxError::Spec {
            field: "name",
            reason: "contains a NUL byte".into(),
        })?,
        plan,
        exec_path: CString::new(EXEC_PATH).map_err(|_| SandboxError::Protocol("exec".into()))?,
        argv,
        envp,
        rlimits: vec![
            (libc::RLIMIT_NOFILE as _, spec.limits.nofile as libc::rlim_t),
            (libc::RLIMIT_CORE as _, 0),
            (libc::RLIMIT_MEMLOCK as _, 0),
            (libc::RLIMIT_MSGQUEUE as _, 0),
        ],
        fds: [None; 4],
        die_with_parent: spec.die_with_parent,
        start_timeout_ms: SETUP_TIMEOUT.as_millis() as libc::c_int,
    })
}

fn rlimit_name(i: u32) -> &'static str {
    [
        "RLIMIT_NOFILE",
        "RLIMIT_CORE",
        "RLIMIT_MEMLOCK",
        "RLIMIT_MSGQUEUE",
    ]
    .get(i as usize)
    .copied()
    .unwrap_or("an rlimit")
}

/// Says which step failed, with its path or value, and a hint.
fn describe_failure(
    f: sys::ChildFailure,
    plan: &sys::ChildPlan,
    spec: &SandboxSpec,
) -> (String, String) {
    use sys::Step;
    let lossy = |c: &CString| c.to_string_lossy().into_owned();
    let entry = plan.plan.get(f.index as usize);
    let uid_hint = format!(
        "; every directory on the way must be searchable (x) by host uid {} \
         (SandboxSpec::host_uid)",
        spec.host_uid
    );
    match f.step {
        None => ("an unknown step".into(), String::new()),
        Some(Step::WaitParent) => ("waiting for the parent".into(), String::new()),
        Some(Step::Files) => (
            "taking a descriptor table of its own (unshare CLONE_FILES)".into(),
            String::new(),
        ),
        Some(Step::SetGroups) => ("setgroups(0, NULL)".into(), String::new()),
        Some(Step::SetGid) => (
            format!("setresgid(0) (gid 0 mapped to host gid {})", spec.host_gid),
            String::new(),
        ),
        Some(Step::SetUid) => (
            format!("setresuid(0) (uid 0 mapped to host uid {})", spec.host_uid),
            String::new(),
        ),
        Some(Step::Hostname) => (format!("sethostname `{}`", spec.name), String::new()),
        Some(Step::MakePrivate) => ("making / private (MS_REC|MS_PRIVATE)".into(), String::new()),
        Some(Step::MountRoot) => (
            format!("mounting a tmpfs on {}", lossy(&plan.root)),
            format!(
                "; SandboxSpec::root_dir must be an existing directory searchable by host uid {}",
                spec.host_uid
            ),
        ),
        Some(Step::Plan) => match entry.map(|e| (&e.op, &e.target)) {
            Some((sys::MountOp::Mkdir, t)) => {
                (format!("creating directory {}", lossy(t)), String::new())
            }
            Some((sys::MountOp::Symlink { link }, t)) => (
                format!("creating symlink {} -> {}", lossy(t), lossy(link)),
                String::new(),
            ),
            Some((
                sys::MountOp::BindDir { source, .. } | sys::MountOp::BindFile { source, .. },
                t,
            )) => (
                format!("bind-mounting {} on {}", lossy(source), lossy(t)),
                uid_hint,
            ),
            None => ("a mount-plan entry".into(), String::new()),
        },
        Some(Step::RemountRo) => match entry {
            Some(e) => (
                format!("remounting {} read-only", lossy(&e.target)),
                String::new(),
            ),
            None => ("a read-only remount".into(), String::new()),
        },
        Some(Step::Chdir) => (format!("chdir into {}", lossy(&plan.root)), String::new()),
        Some(Step::MoveRoot) => (
            format!("moving {} over / (MS_MOVE)", lossy(&plan.root)),
            String::new(),
        ),
        Some(Step::Chroot) => (format!("chroot into {}", lossy(&plan.root)), String::new()),
        Some(Step::RemountRoot) => ("remounting the new root read-only".into(), String::new()),
        Some(Step::Rlimit) => {
            let v = plan.rlimits.get(f.index as usize).map(|r| r.1).unwrap_or(0);
            (
                format!("setrlimit {} = {v}", rlimit_name(f.index)),
                String::new(),
            )
        }
        Some(Step::Setsid) => ("setsid".into(), String::new()),
        Some(Step::DeathSignal) => ("prctl(PR_SET_PDEATHSIG, SIGKILL)".into(), String::new()),
        Some(Step::NoNewPrivs) => ("prctl(PR_SET_NO_NEW_PRIVS)".into(), String::new()),
        Some(Step::Capabilities) => (
            [
                "setting secure bits",
                "clearing ambient capabilities",
                "dropping the bounding set",
            ]
            .get(f.index as usize)
            .copied()
            .unwrap_or("dropping capabilities")
            .to_string(),
            String::new(),
        ),
        Some(Step::Dup) => (
            format!(
                "placing descriptor {} ({})",
                f.index,
                ["stdin", "stdout", "stderr", "the socket"]
                    .get(f.index as usize)
                    .copied()
                    .unwrap_or("?")
            ),
            String::new(),
        ),
        Some(Step::CloseRange) => (
            "closing inherited descriptors (close_range)".into(),
            String::new(),
        ),
        Some(Step::Exec) => (
            format!("execve {} (bound at {EXEC_PATH})", spec.program.display()),
            if f.errno == libc::ENOENT {
                "; the program's dynamic loader or a library it needs is not in the read-only \
                 view: add its directory to SandboxSpec::lib_dirs or ro_paths"
                    .into()
            } else if f.errno == libc::EACCES {
                format!(
                    "; the program must be executable by host uid {} and its file system \
                     mounted without noexec",
                    spec.host_uid
                )
            } else {
                String::new()
            },
        ),
    }
}

/// Reads from `pipe` until `buf` is full or the writers are gone, waiting
/// at most [`SETUP_TIMEOUT`] for each read: `Some(bytes read)`, or `None`
/// when the wait ran out. `what` names the pipe in errors.
fn read_pipe_within(
    pipe: &mut std::fs::File,
    buf: &mut [u8],
    what: &str,
) -> Result<Option<usize>, SandboxError> {
    let mut got = 0;
    while got < buf.len() {
        let mut pfd = [rustix::event::PollFd::new(
            &*pipe,
            rustix::event::PollFlags::IN,
        )];
        let timeout = rustix::event::Timespec {
            tv_sec: SETUP_TIMEOUT.as_secs() as _,
            tv_nsec: 0,
        };
        match rustix::event::poll(&mut pfd, Some(&timeout)) {
            Ok(0) => return Ok(None),
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(io(format!("waiting on the {what}"))(e.into())),
        }
        match pipe.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io(format!("reading the {what}"))(e)),
        }
    }
    Ok(Some(got))
}

/// The start thread of [`Sandbox::spawn`]: reads the child's pid from the
/// hello pipe, writes its id maps, moves it into its cgroups unless the
/// cloning thread started it there, and releases it (the start pipe).
/// Kills it should it not have executed the program within
/// [`SETUP_TIMEOUT`] of its release. End of file on the hello pipe (the
/// clone failed, or the child failed before it could say its pid) is not
/// this thread's error: the cloning thread reports it.
fn release_child(
    spec: &SandboxSpec,
    cgroup: Option<&Cgroup>,
    hello_r: std::os::fd::OwnedFd,
    go_w: std::os::fd::OwnedFd,
    entered: std::sync::mpsc::Receiver<bool>,
    done: std::sync::mpsc::Receiver<()>,
) -> Result<(), SandboxError> {
    let Ok(started_inside) = entered.recv() else {
        return Ok(()); // the cloning thread failed before the clone
    };
    let mut word = [0u8; 4];
    let mut hello = std::fs::File::from(hello_r);
    // Nothing in time (the child waits for the start no longer than this,
    // then exits and reports), or end of file: the cloning thread reports.
    if read_pipe_within(&mut hello, &mut word, "hello pipe")? != Some(word.len()) {
        return Ok(());
    }
    let pid = libc::pid_t::from_ne_bytes(word);
    for (file, host) in [("uid_map", spec.host_uid), ("gid_map", spec.host_gid)] {
        let path = PathBuf::from(format!("/proc/{pid}/{file}"));
        let value = format!("0 {host} 1");
        std::fs::write(&path, &value).map_err(|source| SandboxError::IdMap {
            path,
            value,
            source,
        })?;
    }
    if let Some(cg) = cgroup.filter(|_| !started_inside) {
        cg.join(pid as u32)?;
    }
    rustix::io::write(&go_w, &[1]).map_err(|e| SandboxError::Io {
        what: "releasing the child".into(),
        source: e.into(),
    })?;
    drop(go_w);
    match done.recv_timeout(SETUP_TIMEOUT) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            // The cloning thread sleeps until the child executes or exits.
            let _ = sys::signal(pid, libc::SIGKILL);
            Err(SandboxError::Io {
                what: format!(
                    "sandbox set-up of `{}` did not finish within {} s; the child was killed",
                    spec.name,
                    SETUP_TIMEOUT.as_secs()
                ),
                source: std::io::ErrorKind::TimedOut.into(),
            })
        }
        _ => Ok(()),
    }
}

/// Kills and reaps a child unless disarmed (start-up failures).
struct ChildGuard(Option<libc::pid_t>);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = sys::signal(pid, libc::SIGKILL);
            let _ = sys::wait(pid, true);
        }
    }
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SandboxError {
    let what = what.into();
    move |source| SandboxError::Io { what, source }
}

impl Sandbox {
    /// Starts a sandbox (see the crate documentation). Returns once the
    /// instance program has been executed inside it; the first request
    /// (e.g. [`Sandbox::ping`]) waits for it to be ready.
    pub fn spawn(spec: &SandboxSpec) -> Result<Sandbox, SandboxError> {
        check_name(&spec.name)?;
        let program = std::fs::canonicalize(&spec.program).map_err(|e| SandboxError::Prepare {
            what: "program: looking up".into(),
            path: spec.program.clone(),
            source: e,
        })?;
        if !program.is_file() {
            return Err(SandboxError::Spec {
                field: "program",
                reason: format!("{} is not a file", program.display()),
            });
        }
        if !spec.cgroup_parent.is_empty() {
            let levels: Vec<&str> = spec.cgroup_parent.split('/').collect();
            if levels.len() > 4 || levels.iter().any(|l| check_name(l).is_err()) {
                return Err(SandboxError::Spec {
                    field: "cgroup_parent",
                    reason: format!(
                        "`{}`: use 1 to 4 levels separated by `/`, each 1 to 64 of A-Z a-z 0-9 \
                         _ . - (not starting with `.`)",
                        spec.cgroup_parent
                    ),
                });
            }
        }
        if let Some(c) = spec.limits.cpu {
            if !(c > 0.0 && c <= 1024.0) {
                return Err(SandboxError::Spec {
                    field: "limits.cpu",
                    reason: format!("{c}: give a fraction of a core above 0 (e.g. 0.2)"),
                });
            }
        }
        // The shared, empty mount point for every sandbox's root.
        match std::fs::symlink_metadata(&spec.root_dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(SandboxError::Spec {
                    field: "root_dir",
                    reason: format!(
                        "{} exists and is not a directory (a symlink is refused too)",
                        spec.root_dir.display()
                    ),
                })
            }
            Err(_) => {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o755)
                    .create(&spec.root_dir)
                    .map_err(|e| SandboxError::Prepare {
                        what: "root_dir: creating".into(),
                        path: spec.root_dir.clone(),
                        source: e,
                    })?;
            }
        }
        let mut plan = build_plan(spec, &program, &spec.root_dir)?;

        let cgroup = if spec.use_cgroup {
            Some(Cgroup::create(
                &spec.cgroup_root,
                &spec.cgroup_parent,
                &spec.name,
                &spec.limits,
            )?)
        } else {
            None
        };

        let (sock, child_end) =
            pronto_ring::fdpass::socket_pair().map_err(io("creating the socket pair"))?;
        // Kept for the instance's life: out of the low end of the table,
        // which each start copies (see `sys`).
        let sock = sys::move_up(sock);
        let child_end = sys::dup_high(child_end.as_fd()).map_err(io("duplicating the socket"))?;
        let null = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map_err(|e| SandboxError::Prepare {
                what: "opening".into(),
                path: "/dev/null".into(),
                source: e,
            })?;
        let null = sys::dup_high(null.as_fd()).map_err(io("duplicating /dev/null"))?;
        let pick = |o: Output| match o {
            Output::Inherit => None,
            Output::Null => Some(null.as_raw_fd()),
        };
        plan.fds = [
            Some(null.as_raw_fd()),
            pick(spec.stdout),
            pick(spec.stderr),
            Some(child_end.as_raw_fd()),
        ];
        let (go_r, go_w) = sys::pipe().map_err(io("creating the start pipe"))?;
        let (err_r, err_w) = sys::pipe().map_err(io("creating the error pipe"))?;
        let (hello_r, hello_w) = sys::pipe().map_err(io("creating the hello pipe"))?;

        // The calling thread sleeps in `clone` until the child has executed
        // the program (see `sys`): the child's id maps are written, and it
        // is released, by a thread of its own, started before this thread
        // may enter the sandbox's cgroups (a thread starts in its maker's).
        let go_w_raw = go_w.as_raw_fd();
        let (entered_tx, entered_rx) = std::sync::mpsc::channel::<bool>();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let cgroup_ref = cgroup.as_ref();
        let (cloned, released) = std::thread::scope(|s| {
            let releaser = std::thread::Builder::new()
                .name("sandbox-start".into())
                .spawn_scoped(s, move || {
                    release_child(spec, cgroup_ref, hello_r, go_w, entered_rx, done_rx)
                });
            let releaser = match releaser {
                Ok(r) => r,
                Err(e) => return (Err(io("starting the sandbox's start thread")(e)), Ok(())),
            };
            // On cgroup v1 the child starts in its cgroups: this thread
            // enters them for the clone and leaves after (far cheaper than
            // moving the child by pid, see `Cgroup::enter`); on v2 the
            // start thread moves the child by pid.
            let cloned = (|| {
                let entered = match cgroup_ref {
                    Some(cg) => cg.enter(&spec.limits)?,
                    None => None,
                };
                let _ = entered_tx.send(entered.is_some());
                let pid = sys::clone_child(
                    &plan,
                    go_r.as_raw_fd(),
                    go_w_raw,
                    err_w.as_raw_fd(),
                    hello_w.as_raw_fd(),
                );
                // The child has executed or exited: a start thread still
                // waiting for its pid gets end of file.
                drop(hello_w);
                let left = entered.map_or(Ok(()), |e| e.leave());
                let pid = pid.map_err(|e| {
                    let hint = match e.raw_os_error() {
                        Some(libc::ENOSPC) => "; /proc/sys/user/max_user_namespaces (or another \
                                               namespace limit) is reached"
                            .to_string(),
                        Some(libc::EPERM) => "; creating user namespaces needs root or \
                                              kernel.unprivileged_userns_clone"
                            .to_string(),
                        Some(libc::EAGAIN) => "; pid_max or RLIMIT_NPROC is reached".to_string(),
                        _ => String::new(),
                    };
                    SandboxError::Clone { source: e, hint }
                })?;
                if let Err(e) = left {
                    drop(ChildGuard(Some(pid))); // kills and reaps it
                    return Err(e);
                }
                Ok(pid)
            })();
            drop(entered_tx);
            let _ = done_tx.send(());
            let released = releaser.join().unwrap_or_else(|_| {
                Err(SandboxError::Protocol(
                    "the sandbox's start thread panicked".into(),
                ))
            });
            (cloned, released)
        });
        let pid = cloned?;
        let mut guard = ChildGuard(Some(pid));
        released?;
        drop(go_r);
        drop(err_w);
        drop(child_end);
        drop(null);
        // End of file: the program was executed. A record: a step failed.
        let mut rec = [0u8; sys::REPORT_LEN];
        let mut err_r = std::fs::File::from(err_r);
        // A child stuck in set-up (it should take a millisecond) is killed
        // by the guard rather than blocking the caller forever.
        let Some(got) = read_pipe_within(&mut err_r, &mut rec, "error pipe")? else {
            return Err(SandboxError::Io {
                what: format!(
                    "sandbox set-up of `{}` did not finish within {} s; the child was killed",
                    spec.name,
                    SETUP_TIMEOUT.as_secs()
                ),
                source: std::io::ErrorKind::TimedOut.into(),
            });
        };
        if got == rec.len() {
            let f = sys::ChildFailure::parse(&rec);
            let (step, hint) = describe_failure(f, &plan, spec);
            return Err(SandboxError::Child {
                step,
                source: std::io::Error::from_raw_os_error(f.errno),
                hint,
            });
        }
        if got != 0 {
            return Err(SandboxError::Protocol(format!(
                "short set-up report ({got} bytes) from the child"
            )));
        }
        guard.0 = None;
        Ok(Sandbox {
            pid,
            wake: Arc::new(pronto_ring::SignalBell::new(pid as u32)),
            sock,
            status: None,
            cgroup,
            name: spec.name.clone(),
        })
    }

    /// The instance's pid (in the parent's PID namespace; it is 1 inside).
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// The bell that wakes the instance's switch ports by a signal
    /// ([`pronto_ring::WAKE_SIGNAL`]): the switch rings it instead of
    /// holding a descriptor per port; it goes quiet before the process is
    /// reaped.
    pub fn wake_bell(&self) -> Arc<pronto_ring::SignalBell> {
        self.wake.clone()
    }

    /// Runs every thread of the instance on `cpus` only (threads it makes
    /// later inherit the set from the thread that makes them). Twice over
    /// the thread list, so that a thread made while the first pass ran is
    /// not missed.
    pub fn pin(&self, cpus: &[usize]) -> Result<(), SandboxError> {
        let mut set = rustix::thread::CpuSet::new();
        for &c in cpus {
            if c >= rustix::thread::CpuSet::MAX_CPU {
                return Err(SandboxError::Spec {
                    field: "cpus",
                    reason: format!("CPU {c} is beyond the largest CPU number"),
                });
            }
            set.set(c);
        }
        let dir = PathBuf::from(format!("/proc/{}/task", self.pid));
        let io = |e: std::io::Error| SandboxError::Prepare {
            what: "pinning the instance's threads: reading".into(),
            path: dir.clone(),
            source: e,
        };
        for _ in 0..2 {
            for t in std::fs::read_dir(&dir).map_err(io)?.flatten() {
                let Some(tid) = t
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok())
                    .and_then(rustix::process::Pid::from_raw)
                else {
                    continue;
                };
                match rustix::thread::sched_setaffinity(Some(tid), &set) {
                    // A thread that ended meanwhile.
                    Ok(()) | Err(rustix::io::Errno::SRCH) => {}
                    Err(e) => {
                        let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
                        return Err(SandboxError::Spec {
                            field: "cpus",
                            reason: format!(
                                "the kernel refused to run the instance on CPUs {}: {e}",
                                list.join(",")
                            ),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// The instance's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The parent's end of the instance's socket.
    pub fn socket(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// The sandbox's cgroup, if it has one.
    pub fn cgroup(&self) -> Option<&Cgroup> {
        self.cgroup.as_ref()
    }

    /// Ends the sandbox now: kills the instance if it still runs, reaps it
    /// and removes its cgroup (rather than when the last handle to it is
    /// dropped, which may be later, on another thread). What was learnt
    /// from the cgroup (OOM kills) should be read before.
    pub fn end(&mut self) {
        if self.status.is_none() {
            let _ = self.kill();
            let _ = self.wait();
        }
        if self.status.is_some() {
            self.cgroup = None;
        }
    }

    /// How many times the cgroup's OOM killer fired.
    pub fn oom_kills(&self) -> Option<u64> {
        self.cgroup.as_ref().and_then(Cgroup::oom_kills)
    }

    /// Limits how long a reply may take (`None`: wait forever).
    pub fn set_timeout(&self, t: Option<Duration>) -> Result<(), SandboxError> {
        rustix::net::sockopt::set_socket_timeout(&self.sock, rustix::net::sockopt::Timeout::Recv, t)
            .map_err(|e| SandboxError::Io {
                what: "setting the reply timeout".into(),
                source: e.into(),
            })
    }

    /// Sends a request with descriptors attached and returns the text of
    /// an `OK` reply; `ERR` becomes [`SandboxError::Remote`].
    pub fn request_with_fds(
        &mut self,
        req: &Request<'_>,
        fds: &[BorrowedFd<'_>],
    ) -> Result<String, SandboxError> {
        if let Err(e) = proto::send_frame(&self.sock, &req.encode(), fds) {
            if e.kind() == std::io::ErrorKind::BrokenPipe
                || e.raw_os_error() == Some(libc::ECONNRESET)
            {
                return Err(self.ended());
            }
            return Err(io("sending a request")(e));
        }
        self.answer()
    }

    /// Sends `reqs` (each with its descriptors) one after another, then
    /// reads their answers in order: the instance reads the lot in one
    /// wake-up instead of one round trip per request, which costs two
    /// thread wake-ups each (and a scheduler slice each on a busy
    /// machine). The answers, or the index of the first request refused
    /// (or unanswered: the instance ended) with its error; the answers
    /// after it are not read, and the caller ends the sandbox. The
    /// instance still serves each request only after the one before it.
    pub fn pipeline(
        &mut self,
        reqs: &[(Request<'_>, &[BorrowedFd<'_>])],
    ) -> Result<Vec<String>, (usize, SandboxError)> {
        let mut sent = 0;
        for (req, fds) in reqs {
            match proto::send_frame(&self.sock, &req.encode(), fds) {
                Ok(()) => sent += 1,
                // Ended: what it answered before is read below.
                Err(e)
                    if e.kind() == std::io::ErrorKind::BrokenPipe
                        || e.raw_os_error() == Some(libc::ECONNRESET) =>
                {
                    break
                }
                Err(e) => return Err((sent, io("sending a request")(e))),
            }
        }
        let mut out = Vec::with_capacity(reqs.len());
        for i in 0..sent {
            out.push(self.answer().map_err(|e| (i, e))?);
        }
        if sent < reqs.len() {
            return Err((sent, self.ended()));
        }
        Ok(out)
    }

    /// The next reply: the text of an `OK`; `ERR` becomes
    /// [`SandboxError::Remote`].
    fn answer(&mut self) -> Result<String, SandboxError> {
        match proto::recv_frame(&self.sock) {
            Ok(Some((payload, _))) => {
                match Reply::parse(&payload).map_err(SandboxError::Protocol)? {
                    Reply::Ok(t) => Ok(t),
                    Reply::Err(t) => Err(SandboxError::Remote(t)),
                }
            }
            Ok(None) => Err(self.ended()),
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => Err(self.ended()),
            Err(e) => Err(io("reading a reply")(e)),
        }
    }

    /// Sends a request; see [`Sandbox::request_with_fds`].
    pub fn request(&mut self, req: &Request<'_>) -> Result<String, SandboxError> {
        self.request_with_fds(req, &[])
    }

    /// The error for a closed socket, with the exit status (waited for
    /// briefly) and the OOM count.
    fn ended(&mut self) -> SandboxError {
        let status = self.wait_timeout(Duration::from_secs(2)).ok().flatten();
        SandboxError::Ended {
            status,
            oom_kills: self.oom_kills(),
        }
    }

    /// `PING`: waits until the instance answers.
    pub fn ping(&mut self) -> Result<(), SandboxError> {
        self.request(&Request::Ping).map(|_| ())
    }

    /// `CONFIG`: builds a configuration (the first one also locks the
    /// instance down); returns the instance's `N elements`.
    pub fn configure(&mut self, text: &str) -> Result<String, SandboxError> {
        self.request(&Request::Config(text))
    }

    /// `POOL slots`: the most packets the configurations built from now on
    /// may hold.
    pub fn set_pool_limit(&mut self, slots: u64) -> Result<String, SandboxError> {
        self.request(&Request::Pool(slots))
    }

    /// `FILE path text`: configurations built from now on read `text`
    /// when they read a file named `path`.
    pub fn give_file(&mut self, path: &str, text: &str) -> Result<String, SandboxError> {
        self.request(&Request::File(path, text))
    }

    /// `READ element.handler`.
    pub fn read(&mut self, handler: &str) -> Result<String, SandboxError> {
        self.request(&Request::Read(handler))
    }

    /// `READ element.handler args`: a read handler that takes arguments
    /// (Click's `READ handler args` of the control socket protocol).
    pub fn read_with(&mut self, handler: &str, args: &str) -> Result<String, SandboxError> {
        if args.is_empty() {
            return self.read(handler);
        }
        self.request(&Request::Read(&format!("{handler} {args}")))
    }

    /// `WRITE element.handler value`.
    pub fn write(&mut self, handler: &str, value: &str) -> Result<(), SandboxError> {
        self.request(&Request::Write(handler, value)).map(|_| ())
    }

    /// `RUN`: starts the router running (on the instance's router
    /// thread); returns at once.
    pub fn run(&mut self) -> Result<(), SandboxError> {
        self.request(&Request::Run).map(|_| ())
    }

    /// `SOCKETS`: the configuration's `ControlSocket` elements, one line
    /// each (see [`proto`]).
    pub fn sockets(&mut self) -> Result<String, SandboxError> {
        self.request(&Request::Sockets)
    }

    /// `WAIT`: waits until the run ends by itself (its driver stops).
    pub fn wait_stopped(&mut self) -> Result<(), SandboxError> {
        self.request(&Request::Wait).map(|_| ())
    }

    /// `PORT`: makes a switch port the instance's interface `iface`.
    pub fn give_port(
        &mut self,
        iface: &str,
        geometry: (u32, u32),
        fds: &[BorrowedFd<'_>],
    ) -> Result<(), SandboxError> {
        self.request_with_fds(&Request::Port(iface, geometry.0, geometry.1), fds)
            .map(|_| ())
    }

    /// `STOP`, then waits for the exit status.
    pub fn stop(&mut self) -> Result<ExitStatus, SandboxError> {
        self.request(&Request::Stop)?;
        self.wait()
    }

    /// Kills the instance (`SIGKILL`).
    pub fn kill(&self) -> Result<(), SandboxError> {
        if self.status.is_some() {
            return Ok(());
        }
        sys::signal(self.pid, libc::SIGKILL).map_err(io("killing the instance"))
    }

    /// Waits for the instance to end.
    pub fn wait(&mut self) -> Result<ExitStatus, SandboxError> {
        if let Some(s) = self.status {
            return Ok(s);
        }
        self.wake.disarm();
        let raw = sys::wait(self.pid, true)
            .map_err(io("waiting for the instance"))?
            .ok_or_else(|| SandboxError::Protocol("waitpid returned no status".into()))?;
        let s = ExitStatus::from_raw(raw);
        self.status = Some(s);
        Ok(s)
    }

    /// The exit status if the instance has ended.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>, SandboxError> {
        if let Some(s) = self.status {
            return Ok(Some(s));
        }
        if !sys::ended(self.pid).map_err(io("checking on the instance"))? {
            return Ok(None);
        }
        self.wake.disarm();
        let raw = sys::wait(self.pid, false).map_err(io("checking on the instance"))?;
        self.status = raw.map(ExitStatus::from_raw);
        Ok(self.status)
    }

    /// Waits up to `t` for the instance to end.
    pub fn wait_timeout(&mut self, t: Duration) -> Result<Option<ExitStatus>, SandboxError> {
        let until = Instant::now() + t;
        loop {
            if let Some(s) = self.try_wait()? {
                return Ok(Some(s));
            }
            if Instant::now() >= until {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// The instance's proportional set size, bytes (`Pss:` of
    /// `/proc/PID/smaps_rollup`).
    pub fn pss_bytes(&self) -> Result<u64, SandboxError> {
        let path = PathBuf::from(format!("/proc/{}/smaps_rollup", self.pid));
        let text = std::fs::read_to_string(&path).map_err(|e| SandboxError::Prepare {
            what: "reading".into(),
            path: path.clone(),
            source: e,
        })?;
        text.lines()
            .find_map(|l| l.strip_prefix("Pss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .ok_or_else(|| SandboxError::Protocol(format!("no Pss line in {}", path.display())))
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if self.status.is_none() {
            self.wake.disarm();
            let _ = sys::signal(self.pid, libc::SIGKILL);
            let _ = self.wait();
        }
        // `cgroup` is dropped after this, with the process gone.
    }
}

/// Starts `program` with `args` as a plain child process with its end of
/// a socket at descriptor 3 and no isolation at all: the baseline that
/// sandbox start-up is measured against. Not for running tenants.
pub fn spawn_unsandboxed(
    program: &Path,
    args: &[String],
) -> Result<(std::process::Child, OwnedFd), SandboxError> {
    let (sock, child_end) =
        pronto_ring::fdpass::socket_pair().map_err(io("creating the socket pair"))?;
    let child =
        sys::spawn_with_fd3(program, args, child_end).map_err(|e| SandboxError::Prepare {
            what: "starting".into(),
            path: program.to_path_buf(),
            source: e,
        })?;
    Ok((child, sock))
}
