//! The kernel side of starting a sandbox: `clone` into new namespaces, the
//! child's set-up up to `execve`, and waiting for and signalling it. All of
//! this crate's `unsafe` is here.
//!
//! The child is made the way `posix_spawn` makes one: `clone` with
//! `CLONE_VM | CLONE_VFORK` on a stack of its own, entering six new
//! namespaces at once. It shares the parent's memory and, until its first
//! step, its descriptor table (nothing is copied, however large the daemon
//! has grown: a fork-like clone copies every page table and descriptor,
//! and its cost grew with each instance the daemon supervised), and
//! the calling thread sleeps until the child has executed the program or
//! exited. So between `clone` and `execve` the child does only plain
//! system calls on data the parent prepared ([`ChildPlan`]): no
//! allocation, no locks, no panics, every signal blocked and every handler
//! reset before the mask is cleared. Its errno is the sleeping calling
//! thread's, which reads it only when `clone` itself failed. The child
//! tells another thread its pid (the hello pipe); that thread writes the
//! id maps and releases it (the start pipe). A failing step writes a
//! fixed-size record (step, plan index, errno) to the error pipe and
//! exits; the parent turns it into an error that names the step and its
//! path. A successful `execve` closes the error pipe (close-on-exec), which
//! the parent reads as "started".

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

/// Namespaces every sandbox gets.
pub(crate) const NAMESPACES: libc::c_int = libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNS
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS;

// Secure bits (linux/securebits.h): uid 0 gets no capabilities from
// `execve`, set-uid transitions do not touch capabilities, both locked.
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;

/// One step of the child's set-up, as reported through the error pipe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Step {
    /// Waiting for the parent to write the id maps and join the cgroups.
    WaitParent = 1,
    /// Taking a descriptor table of its own (the parent's is shared until
    /// then).
    Files,
    /// `setgroups(0, NULL)`.
    SetGroups,
    /// `setresgid(0, 0, 0)`.
    SetGid,
    /// `setresuid(0, 0, 0)`.
    SetUid,
    /// `sethostname`.
    Hostname,
    /// Making every inherited mount private.
    MakePrivate,
    /// Mounting the tmpfs root.
    MountRoot,
    /// A mount-plan entry (index): directory, symlink, file or bind mount.
    Plan,
    /// Read-only remount of a bind mount (index).
    RemountRo,
    /// `chdir` into the new root.
    Chdir,
    /// Moving the new root over the old one (`MS_MOVE`).
    MoveRoot,
    /// `chroot` into the moved root.
    Chroot,
    /// Read-only remount of the new root.
    RemountRoot,
    /// `setrlimit` (index into the rlimit list).
    Rlimit,
    /// `setsid`.
    Setsid,
    /// `PR_SET_PDEATHSIG`.
    DeathSignal,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// Dropping capabilities (secure bits, ambient set, bounding set).
    Capabilities,
    /// Placing a descriptor (index: 0 stdin, 1 stdout, 2 stderr, 3 socket).
    Dup,
    /// Closing every other descriptor.
    CloseRange,
    /// `execve`.
    Exec,
}

impl Step {
    pub(crate) fn from_u32(v: u32) -> Option<Step> {
        use Step::*;
        [
            WaitParent,
            Files,
            SetGroups,
            SetGid,
            SetUid,
            Hostname,
            MakePrivate,
            MountRoot,
            Plan,
            RemountRo,
            Chdir,
            MoveRoot,
            Chroot,
            RemountRoot,
            Rlimit,
            Setsid,
            DeathSignal,
            NoNewPrivs,
            Capabilities,
            Dup,
            CloseRange,
            Exec,
        ]
        .into_iter()
        .find(|s| *s as u32 == v)
    }
}

/// What one entry of the mount plan does inside the new root.
pub(crate) enum MountOp {
    /// `mkdir(target, 0755)`.
    Mkdir,
    /// `symlink(link, target)`.
    Symlink { link: CString },
    /// Bind `source` (a directory) on `target`, read-only.
    BindDir {
        source: CString,
        flags: libc::c_ulong,
    },
    /// Create an empty file at `target` and bind `source` (a file) on it,
    /// read-only.
    BindFile {
        source: CString,
        flags: libc::c_ulong,
    },
}

/// One entry of the mount plan: `target` is the full path (the root
/// mount point joined with the path inside).
pub(crate) struct PlanEntry {
    pub target: CString,
    pub op: MountOp,
}

/// Everything the child needs, prepared (allocated) by the parent.
pub(crate) struct ChildPlan {
    /// The empty directory the tmpfs root is mounted on.
    pub root: CString,
    /// tmpfs options.
    pub tmpfs_opts: CString,
    pub hostname: CString,
    pub plan: Vec<PlanEntry>,
    /// The program's path inside the new root.
    pub exec_path: CString,
    pub argv: Vec<CString>,
    pub envp: Vec<CString>,
    pub rlimits: Vec<(libc::__rlimit_resource_t, libc::rlim_t)>,
    /// Descriptors to place at 0, 1, 2 and 3 (`None`: keep the inherited
    /// one).
    pub fds: [Option<RawFd>; 4],
    pub die_with_parent: bool,
    /// How long the child waits for the parent to release it (ms).
    pub start_timeout_ms: libc::c_int,
}

/// The error record the child writes: step, index, errno.
pub(crate) const REPORT_LEN: usize = 12;

/// A child's failure as read from the error pipe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChildFailure {
    pub step: Option<Step>,
    pub index: u32,
    pub errno: i32,
}

impl ChildFailure {
    pub(crate) fn parse(b: &[u8; REPORT_LEN]) -> ChildFailure {
        let word = |i: usize| [b[i], b[i + 1], b[i + 2], b[i + 3]];
        ChildFailure {
            step: Step::from_u32(u32::from_ne_bytes(word(0))),
            index: u32::from_ne_bytes(word(4)),
            errno: i32::from_ne_bytes(word(8)),
        }
    }
}

/// Bytes of the child's stack (above a guard page): `child_main` keeps a
/// few hundred bytes of locals and calls thin libc wrappers.
const CHILD_STACK: usize = 64 * 1024;

/// What the child's entry point gets: everything lives in the calling
/// thread's frame, which sleeps until the child has executed or exited.
struct ChildArgs<'a> {
    plan: &'a ChildPlan,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    go_r: RawFd,
    go_w: RawFd,
    err_w: RawFd,
    hello_w: RawFd,
    /// The child's own descriptor table keeps only those below this (the
    /// highest it uses, plus one).
    keep_below: RawFd,
    /// Where the kernel stores the child's pid (`CLONE_PARENT_SETTID`)
    /// before the child first runs.
    pid: *const libc::pid_t,
}

/// An anonymous mapping for the child's stack, its lowest page
/// inaccessible (an overflow faults instead of writing the parent's
/// memory).
struct ChildStack {
    base: *mut libc::c_void,
    len: usize,
}

impl ChildStack {
    fn map() -> io::Result<ChildStack> {
        let len = CHILD_STACK + 4096;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = ChildStack { base, len };
        // SAFETY: the first page of the mapping made above.
        if unsafe { libc::mprotect(base, 4096, libc::PROT_NONE) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The initial stack pointer (the stack grows down), 16-byte aligned.
    fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, which is page-aligned.
        unsafe { self.base.cast::<u8>().add(self.len).cast() }
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`; no one runs on it any more
        // (the child has executed or exited: CLONE_VFORK).
        unsafe {
            libc::munmap(self.base, self.len);
        }
    }
}

/// Starts the child in new namespaces and returns its pid once it has
/// executed the program or exited (a failing step reports on the error
/// pipe). The child first writes its pid (4 bytes, native order) to
/// `hello_w`, then waits for a byte on the start pipe: another thread
/// must read the one and write the other (the calling thread sleeps).
///
/// `go_r` is the read end of the start pipe (`go_w` is closed in the
/// child, so a releasing thread that gives up gives end-of-file);
/// `err_w` is the close-on-exec write end of the error pipe.
pub(crate) fn clone_child(
    plan: &ChildPlan,
    go_r: RawFd,
    go_w: RawFd,
    err_w: RawFd,
    hello_w: RawFd,
) -> io::Result<libc::pid_t> {
    // Pointer arrays for execve, built before the clone (no allocation in
    // the child).
    let argv: Vec<*const libc::c_char> = plan
        .argv
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = plan
        .envp
        .iter()
        .map(|a| a.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let stack = ChildStack::map()?;
    let mut pid: libc::pid_t = 0;
    let keep_below = [go_r, go_w, err_w, hello_w]
        .into_iter()
        .chain(plan.fds.iter().flatten().copied())
        .max()
        .unwrap_or(0)
        + 1;
    let args = ChildArgs {
        plan,
        argv: &argv,
        envp: &envp,
        go_r,
        go_w,
        err_w,
        hello_w,
        keep_below,
        pid: &raw const pid,
    };
    // CLONE_FILES: the descriptor table is not copied at the clone either;
    // the child takes a copy of only its low end (`keep_below`) first.
    let flags = NAMESPACES
        | libc::CLONE_VM
        | libc::CLONE_VFORK
        | libc::CLONE_FILES
        | libc::CLONE_PARENT_SETTID
        | libc::SIGCHLD;
    // SAFETY: a sigset_t is plain bits; all zero is the empty set.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: signal masks are plain values; the calling thread's own
    // mask is saved and restored below. The child starts with every
    // signal blocked, so no handler of the parent runs on its stack.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
    }
    // SAFETY: glibc's `clone` runs `child_entry` on the mapped stack in a
    // child that shares this address space (CLONE_VM); CLONE_VFORK keeps
    // this thread asleep, and so `args`, the plan and the stack alive and
    // untouched, until the child has executed or exited. The kernel
    // writes the child's pid to `pid` before the child runs.
    let ret = unsafe {
        libc::clone(
            child_entry,
            stack.top(),
            flags,
            (&raw const args).cast_mut().cast(),
            &raw mut pid,
        )
    };
    let clone_err = io::Error::last_os_error();
    // SAFETY: restores the mask saved above.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
    drop(stack);
    if ret < 0 {
        return Err(clone_err);
    }
    Ok(ret as libc::pid_t)
}

extern "C" fn child_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `clone_child` passes a `ChildArgs` that outlives the child's
    // use of it (see there).
    let a = unsafe { &*arg.cast::<ChildArgs<'_>>() };
    let (step, index, errno) = child_main(a);
    report_and_exit(a.err_w, step, index, errno);
}

fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno slot, valid for
    // the thread's life.
    unsafe { *libc::__errno_location() }
}

fn report_and_exit(err_w: RawFd, step: Step, index: u32, errno: i32) -> ! {
    let mut rec = [0u8; REPORT_LEN];
    rec[0..4].copy_from_slice(&(step as u32).to_ne_bytes());
    rec[4..8].copy_from_slice(&index.to_ne_bytes());
    rec[8..12].copy_from_slice(&errno.to_ne_bytes());
    // SAFETY: writing a stack buffer to a pipe we own, then leaving without
    // running any of the parent's exit handlers (`_exit`).
    unsafe {
        libc::write(err_w, rec.as_ptr().cast(), REPORT_LEN);
        libc::_exit(127)
    }
}

/// Checks a libc return value: `Err((step, index, errno))` when negative.
macro_rules! check {
    ($e:expr, $step:expr, $idx:expr) => {
        if $e < 0 {
            return ($step, $idx as u32, errno());
        }
    };
}

/// The child, from `clone` to `execve`. Returns only on failure: the step,
/// its index and errno.
fn child_main(a: &ChildArgs<'_>) -> (Step, u32, i32) {
    let (plan, argv, envp, go_r) = (a.plan, a.argv, a.envp, a.go_r);
    let null = std::ptr::null::<libc::c_char>();
    // SAFETY: each call below is a plain system call (or a thin libc
    // wrapper of one) on NUL-terminated strings and arrays owned by
    // `plan`, in the calling thread's frame, asleep until this child has
    // executed or exited; or on integers and this stack's locals. None
    // allocates or takes a lock.
    unsafe {
        // Handlers of the parent would run on this stack in the parent's
        // memory: back to the default before any signal is let through
        // (what execve would do anyway). Ignored signals stay ignored.
        for sig in 1..=64 {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction != libc::SIG_DFL
                && old.sa_sigaction != libc::SIG_IGN
            {
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(sig, &dfl, std::ptr::null_mut());
            }
        }
        // A descriptor table of its own before any descriptor is touched
        // (it shares the parent's, whose other threads go on using it):
        // a copy of the descriptors below `keep_below` only, so that a
        // daemon holding one descriptor per instance, high up, does not
        // copy and then close thousands of them per start.
        if libc::syscall(
            libc::SYS_close_range,
            a.keep_below as u32,
            u32::MAX,
            libc::CLOSE_RANGE_UNSHARE,
        ) < 0
        {
            check!(libc::unshare(libc::CLONE_FILES), Step::Files, 0);
        }
        libc::close(a.go_w);
        // Until `execve` this child holds copies of every descriptor the
        // parent had when it was cloned, the write ends of other children's
        // start pipes among them: should the parent die now, children
        // started at the same time would wait on each other forever (and
        // keep the parent's files open, its store's lock with them). So it
        // dies with its parent from here on (set again below: changing ids
        // clears it), and waits for the start no longer than the parent
        // would.
        if plan.die_with_parent {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            );
        }
        // Our pid as the parent sees it (inside we are 1), for the thread
        // that writes the id maps.
        let pid = std::ptr::read_volatile(a.pid).to_ne_bytes();
        let n = libc::write(a.hello_w, pid.as_ptr().cast(), pid.len());
        if n != pid.len() as isize {
            return (
                Step::WaitParent,
                1,
                if n < 0 { errno() } else { libc::EPIPE },
            );
        }
        libc::close(a.hello_w);
        let mut pfd = libc::pollfd {
            fd: go_r,
            events: libc::POLLIN,
            revents: 0,
        };
        let waited = loop {
            let n = libc::poll(&raw mut pfd, 1, plan.start_timeout_ms);
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            break n;
        };
        if waited == 0 {
            return (Step::WaitParent, 0, libc::ETIMEDOUT);
        }
        let mut b = 0u8;
        let n = loop {
            let n = libc::read(go_r, (&raw mut b).cast(), 1);
            if n < 0 && errno() == libc::EINTR {
                continue;
            }
            break n;
        };
        if n != 1 {
            // The parent gave up (or died) before releasing us.
            return (
                Step::WaitParent,
                0,
                if n == 0 { libc::EPIPE } else { errno() },
            );
        }
        libc::close(go_r);
        // Become uid/gid 0 of the new user namespace (the mapped,
        // unprivileged host ids), without the parent's groups. Raw system
        // calls: glibc's wrappers would try to change the credentials of
        // the parent's other threads too (which do not exist here) and wait
        // for them forever.
        check!(
            libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()),
            Step::SetGroups,
            0
        );
        check!(
            libc::syscall(libc::SYS_setresgid, 0u32, 0u32, 0u32),
            Step::SetGid,
            0
        );
        check!(
            libc::syscall(libc::SYS_setresuid, 0u32, 0u32, 0u32),
            Step::SetUid,
            0
        );
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        check!(
            libc::sethostname(plan.hostname.as_ptr(), plan.hostname.as_bytes().len()),
            Step::Hostname,
            0
        );

        // The filesystem view: a tmpfs with read-only binds, then
        // pivot_root into it.
        check!(
            libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null()
            ),
            Step::MakePrivate,
            0
        );
        check!(
            libc::mount(
                c"tmpfs".as_ptr(),
                plan.root.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                plan.tmpfs_opts.as_ptr().cast()
            ),
            Step::MountRoot,
            0
        );
        for (i, e) in plan.plan.iter().enumerate() {
            let t = e.target.as_ptr();
            match &e.op {
                MountOp::Mkdir => check!(libc::mkdir(t, 0o755), Step::Plan, i),
                MountOp::Symlink { link } => {
                    check!(libc::symlink(link.as_ptr(), t), Step::Plan, i)
                }
                MountOp::BindDir { source, flags } | MountOp::BindFile { source, flags } => {
                    if matches!(e.op, MountOp::BindDir { .. }) {
                        check!(libc::mkdir(t, 0o755), Step::Plan, i);
                    } else {
                        let fd =
                            libc::open(t, libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC, 0o755);
                        check!(fd, Step::Plan, i);
                        libc::close(fd);
                    }
                    check!(
                        libc::mount(source.as_ptr(), t, null, libc::MS_BIND, std::ptr::null()),
                        Step::Plan,
                        i
                    );
                    check!(
                        libc::mount(
                            null,
                            t,
                            null,
                            libc::MS_REMOUNT
                                | libc::MS_BIND
                                | libc::MS_RDONLY
                                | libc::MS_NOSUID
                                | libc::MS_NODEV
                                | flags,
                            std::ptr::null()
                        ),
                        Step::RemountRo,
                        i
                    );
                }
            }
        }
        // The new root is moved over the old one and entered with
        // `chroot`, not `pivot_root`: `pivot_root` visits every thread on
        // the machine (it moves the roots of those that had the old one),
        // a cost that grew with each instance the daemon supervised. The
        // old tree stays in this mount namespace, under the new root and
        // out of reach: leaving a chroot needs CAP_SYS_CHROOT, which the
        // instance never holds (an empty bounding set, no_new_privs), and
        // the kernel refuses a new user namespace (where it could get it
        // back) to a chrooted process.
        check!(libc::chdir(plan.root.as_ptr()), Step::Chdir, 0);
        check!(
            libc::mount(
                c".".as_ptr(),
                c"/".as_ptr(),
                null,
                libc::MS_MOVE,
                std::ptr::null()
            ),
            Step::MoveRoot,
            0
        );
        check!(libc::chroot(c".".as_ptr()), Step::Chroot, 0);
        check!(libc::chdir(c"/".as_ptr()), Step::Chdir, 1);
        check!(
            libc::mount(
                null,
                c"/".as_ptr(),
                null,
                libc::MS_REMOUNT
                    | libc::MS_BIND
                    | libc::MS_RDONLY
                    | libc::MS_NOSUID
                    | libc::MS_NODEV,
                std::ptr::null()
            ),
            Step::RemountRoot,
            0
        );

        for (i, (res, v)) in plan.rlimits.iter().enumerate() {
            let lim = libc::rlimit {
                rlim_cur: *v,
                rlim_max: *v,
            };
            check!(libc::setrlimit(*res, &lim), Step::Rlimit, i);
        }
        check!(libc::setsid(), Step::Setsid, 0);
        if plan.die_with_parent {
            check!(
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0
                ),
                Step::DeathSignal,
                0
            );
        }
        check!(
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
            Step::NoNewPrivs,
            0
        );
        // No capabilities after execve: uid 0 is not special, no ambient
        // capabilities, an empty bounding set.
        check!(
            libc::prctl(
                libc::PR_SET_SECUREBITS,
                SECBIT_NOROOT
                    | SECBIT_NOROOT_LOCKED
                    | SECBIT_NO_SETUID_FIXUP
                    | SECBIT_NO_SETUID_FIXUP_LOCKED
                    | SECBIT_KEEP_CAPS_LOCKED,
                0,
                0,
                0
            ),
            Step::Capabilities,
            0
        );
        check!(
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0
            ),
            Step::Capabilities,
            1
        );
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) < 0 {
                if errno() == libc::EINVAL {
                    break; // past the last capability this kernel knows
                }
                return (Step::Capabilities, 2, errno());
            }
        }

        // Descriptors: 0-2 as asked, the socket at 3, nothing else.
        for (i, fd) in plan.fds.iter().enumerate() {
            if let Some(fd) = *fd {
                if fd == i as RawFd {
                    // Already in place: only clear close-on-exec.
                    check!(libc::fcntl(fd, libc::F_SETFD, 0), Step::Dup, i);
                } else {
                    check!(libc::dup2(fd, i as RawFd), Step::Dup, i);
                }
            }
        }
        // Everything from 4 up except the error pipe, which close-on-exec
        // closes (and which reports a failing execve).
        let e = a.err_w as u32;
        let ranges = [(4u32, e.saturating_sub(1)), (e.saturating_add(1), u32::MAX)];
        for (lo, hi) in ranges {
            if lo > hi {
                continue;
            }
            if libc::syscall(libc::SYS_close_range, lo, hi, 0u32) < 0 {
                if errno() != libc::ENOSYS {
                    return (Step::CloseRange, 0, errno());
                }
                for fd in lo..=hi.min(4095) {
                    libc::close(fd as RawFd);
                }
            }
        }
        libc::execve(plan.exec_path.as_ptr(), argv.as_ptr(), envp.as_ptr());
        (Step::Exec, 0, errno())
    }
}

/// A child's end: exited with a code or killed by a signal, as a raw wait
/// status.
pub(crate) fn wait(pid: libc::pid_t, block: bool) -> io::Result<Option<libc::c_int>> {
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid writes the status into a local.
        let r = unsafe { libc::waitpid(pid, &mut status, if block { 0 } else { libc::WNOHANG }) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok(if r == 0 { None } else { Some(status) });
    }
}

/// True if child `pid` has ended (without reaping it: the pid stays its
/// own until [`wait`]).
pub(crate) fn ended(pid: libc::pid_t) -> io::Result<bool> {
    loop {
        // SAFETY: waitid writes into a zeroed local siginfo_t.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as above; P_PID with a plain pid, no pointer but `info`.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        // SAFETY: si_pid is set by waitid (0 when no child has ended).
        return Ok(unsafe { info.si_pid() } != 0);
    }
}

/// Sends `sig` to `pid`.
pub(crate) fn signal(pid: libc::pid_t, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill takes plain integers.
    if unsafe { libc::kill(pid, sig) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `statvfs` flags of the file system holding `path`, as the mount flags a
/// read-only bind remount must keep (a bind of a mount inherited from a
/// more privileged namespace may not drop `nosuid`, `nodev`, `noexec` or
/// change its atime mode).
pub(crate) fn mount_flags_of(path: &std::ffi::CStr) -> io::Result<libc::c_ulong> {
    // SAFETY: statvfs fills a zeroed local from a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(path.as_ptr(), &mut st) } < 0 {
        return Err(io::Error::last_os_error());
    }
    let f = st.f_flag;
    let mut m = 0;
    for (st_flag, ms_flag) in [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ] {
        if f & st_flag != 0 {
            m |= ms_flag;
        }
    }
    Ok(m)
}

/// A close-on-exec pipe: (read end, write end).
pub(crate) fn pipe() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nothing else.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

/// Duplicates `fd` to a descriptor numbered 10 or above, close-on-exec (so
/// that placing descriptors at 0-3 in the child cannot overwrite it).
pub(crate) fn dup_high(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<std::os::fd::OwnedFd> {
    Ok(rustix::io::fcntl_dupfd_cloexec(fd, 10)?)
}

/// Where a daemon's long-lived per-instance descriptors go
/// ([`move_up`]): above the few it holds otherwise, so that a sandbox's
/// start copies only the low end of the descriptor table.
pub(crate) const HIGH_FDS: RawFd = 1024;

/// Moves `fd` to a descriptor numbered [`HIGH_FDS`] or above,
/// close-on-exec; keeps it where it is when the descriptor limit does not
/// reach that far.
pub(crate) fn move_up(fd: std::os::fd::OwnedFd) -> std::os::fd::OwnedFd {
    use std::os::fd::{AsFd, AsRawFd};
    if fd.as_raw_fd() >= HIGH_FDS {
        return fd;
    }
    rustix::io::fcntl_dupfd_cloexec(fd.as_fd(), HIGH_FDS).unwrap_or(fd)
}

/// Starts `program` as a plain child (no namespaces) with `fd` at
/// descriptor 3: the measurement baseline.
pub(crate) fn spawn_with_fd3(
    program: &std::path::Path,
    args: &[String],
    fd: std::os::fd::OwnedFd,
) -> io::Result<std::process::Child> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let fd = dup_high(std::os::fd::AsFd::as_fd(&fd))?;
    let raw = fd.as_raw_fd();
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).stdin(std::process::Stdio::null());
    // SAFETY: the hook runs in the forked child before execve and makes
    // only async-signal-safe system calls (dup2 on integers).
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(raw, 3) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn();
    drop(fd);
    child
}

/// Returns the allocator's free memory to the kernel: the pages of free
/// chunks inside every arena and the free top of each heap (glibc's
/// `malloc_trim(0)`). An instance calls it once its configuration is
/// built, so that what parsing and building freed does not stay resident
/// in each of thousands of idle sandboxes. Does nothing elsewhere than
/// glibc.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointer and only walks the
    // allocator's own free lists under the allocator's locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn exit_child() -> ! {
        // SAFETY: leaves the forked child at once, without exit handlers.
        unsafe { libc::_exit(0) }
    }

    /// One `clone` with all six namespace flags; the child exits at once.
    fn one_clone() {
        // SAFETY: fork-like raw clone; the child only calls _exit.
        let pid = unsafe {
            libc::syscall(
                libc::SYS_clone,
                (NAMESPACES | libc::SIGCHLD) as libc::c_ulong,
                0usize,
                0usize,
                0usize,
                0usize,
            )
        };
        assert!(pid >= 0, "clone: {}", io::Error::last_os_error());
        if pid == 0 {
            exit_child();
        }
        assert_eq!(wait(pid as libc::pid_t, true).expect("wait"), Some(0));
    }

    /// fork, `unshare` the six namespaces, fork again (the grandchild is
    /// PID 1 of the new PID namespace); both exit at once.
    fn fork_unshare_fork() {
        // SAFETY: fork-like raw clone; the child only makes raw system
        // calls (unshare, clone, wait4) and _exit.
        let pid = unsafe {
            libc::syscall(
                libc::SYS_clone,
                libc::SIGCHLD as libc::c_ulong,
                0usize,
                0usize,
                0usize,
                0usize,
            )
        };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            // SAFETY: as above.
            unsafe {
                if libc::syscall(libc::SYS_unshare, NAMESPACES as libc::c_ulong) < 0 {
                    libc::_exit(1);
                }
                let g = libc::syscall(
                    libc::SYS_clone,
                    libc::SIGCHLD as libc::c_ulong,
                    0usize,
                    0usize,
                    0usize,
                    0usize,
                );
                if g == 0 {
                    libc::_exit(0);
                }
                let mut st = 0;
                libc::syscall(libc::SYS_wait4, g, &mut st, 0, 0usize);
                libc::_exit(if g > 0 && st == 0 { 0 } else { 2 });
            }
        }
        assert_eq!(wait(pid as libc::pid_t, true).expect("wait"), Some(0));
    }

    /// Which way into six namespaces is cheaper. Run with
    /// `cargo test -p pronto-sandbox --release --lib -- --ignored --nocapture`.
    #[test]
    #[ignore = "measurement; prints figures"]
    fn measure_clone_against_fork_unshare_fork() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("SKIPPED measure_clone_against_fork_unshare_fork: needs root");
            return;
        }
        const N: usize = 200;
        let run = |f: &dyn Fn()| {
            let mut v: Vec<f64> = (0..N)
                .map(|_| {
                    let t = Instant::now();
                    f();
                    t.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            v.sort_by(f64::total_cmp);
            (v[N / 2], v[N * 99 / 100])
        };
        let (m, p) = run(&one_clone);
        println!("clone(6 namespaces) + exit + wait: median {m:.3} ms, p99 {p:.3} ms");
        let (m, p) = run(&fork_unshare_fork);
        println!(
            "fork + unshare(6 namespaces) + fork + exits + waits: median {m:.3} ms, p99 {p:.3} ms"
        );
    }
}
