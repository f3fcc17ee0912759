//! The instance's seccomp allow-list, installed once its first
//! configuration is built.
//!
//! Two filters are stacked (the kernel applies the strictest answer):
//!
//! 1. **The allow-list**: the system calls a running router and the
//!    message loop make, one rule each with its reason below. Anything else
//!    **kills the process** (`SECCOMP_RET_KILL_PROCESS`; the parent sees it
//!    die of `SIGSYS`): a call outside the list means the instance is doing
//!    something a middlebox never does (open a socket, fork, exec, ptrace,
//!    mount, ...), so it is treated as hostile, not as an error to report.
//! 2. **Refused opens**: `open`/`openat`/`openat2` return `EPERM`. Files are
//!    opened while configuring, before lock-down; a later configuration
//!    that names a file (hot reconfiguration) fails with a clean
//!    "Operation not permitted" configuration error instead of killing the
//!    instance. The read-only, nearly empty filesystem view makes opening
//!    pointless anyway.
//!
//! Creating new kernel objects is limited to what rebuilding a router
//! needs: `memfd_create` + `ftruncate` + `mmap` for a packet pool.

use std::collections::BTreeMap;

use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule};

/// Every allowed system call with the reason it is needed.
pub fn allowed() -> Vec<(i64, &'static str)> {
    #[allow(unused_mut)]
    let mut v = vec![
        // --- the message loop (unix socket at fd 3) and elements' I/O ---
        (
            libc::SYS_read,
            "read requests, eventfd doorbells, files opened while configuring",
        ),
        (
            libc::SYS_write,
            "replies' fallback path, doorbells, ToDump/Print output to inherited stdout/stderr",
        ),
        (libc::SYS_readv, "vectored reads by std's buffered readers"),
        (libc::SYS_writev, "vectored writes by std (stderr, ToDump)"),
        (
            libc::SYS_pread64,
            "positioned reads of files opened while configuring",
        ),
        (
            libc::SYS_pwrite64,
            "positioned writes of files opened while configuring",
        ),
        (
            libc::SYS_lseek,
            "file positions of files opened while configuring",
        ),
        (
            libc::SYS_recvmsg,
            "requests with descriptors (SCM_RIGHTS) on the socket",
        ),
        (libc::SYS_sendmsg, "replies on the socket"),
        (
            libc::SYS_recvfrom,
            "plain receives on sockets the instance already holds",
        ),
        (libc::SYS_sendto, "plain sends (the rest of a reply frame)"),
        (
            libc::SYS_close,
            "dropping descriptors (received ones, a replaced router's)",
        ),
        (libc::SYS_fcntl, "descriptor flags on received descriptors"),
        (
            libc::SYS_fstat,
            "size of a received memfd before mapping it",
        ),
        (
            libc::SYS_newfstatat,
            "fstat as glibc implements it (AT_EMPTY_PATH on a descriptor)",
        ),
        // --- waiting and time ---
        (
            libc::SYS_ppoll,
            "the router's idle wait on element descriptors",
        ),
        (
            libc::SYS_epoll_pwait,
            "waiting on an epoll set the instance already holds",
        ),
        (
            libc::SYS_clock_gettime,
            "the router's clock when the vDSO cannot answer",
        ),
        (libc::SYS_gettimeofday, "wall clock fallback"),
        (
            libc::SYS_clock_nanosleep,
            "the router's idle sleep (std::thread::sleep)",
        ),
        (libc::SYS_nanosleep, "idle sleep on older libcs"),
        (
            libc::SYS_sched_yield,
            "spin-wait back-off in std and ring code",
        ),
        // --- memory ---
        (libc::SYS_brk, "the allocator's heap"),
        (
            libc::SYS_mmap,
            "the allocator's large blocks, packet pool and ring mappings",
        ),
        (libc::SYS_munmap, "releasing those"),
        (libc::SYS_mremap, "growing large vectors in place"),
        (libc::SYS_madvise, "the allocator returning memory"),
        (libc::SYS_mprotect, "the allocator's arena set-up"),
        (
            libc::SYS_memfd_create,
            "a new packet pool when a configuration is replaced",
        ),
        (libc::SYS_ftruncate, "sizing that pool"),
        // --- threads' primitives and randomness ---
        (libc::SYS_futex, "std's locks and once-cells"),
        (
            libc::SYS_eventfd2,
            "the doorbell of a router built after lock-down (handler calls while it runs)",
        ),
        (libc::SYS_getrandom, "hash map seeds"),
        // --- signals and exit ---
        (libc::SYS_rt_sigreturn, "returning from a signal handler"),
        (
            libc::SYS_rt_sigprocmask,
            "abort() blocks signals before raising SIGABRT",
        ),
        (libc::SYS_rt_sigaction, "abort() resets SIGABRT's handler"),
        (libc::SYS_sigaltstack, "std's stack-overflow handler stack"),
        (
            libc::SYS_getpid,
            "abort() and std::process::id (PID 1 in its namespace)",
        ),
        (libc::SYS_gettid, "abort() raising SIGABRT on itself"),
        (
            libc::SYS_tgkill,
            "abort() raising SIGABRT on itself (the only process in its PID namespace)",
        ),
        (libc::SYS_exit, "a thread's end"),
        (
            libc::SYS_exit_group,
            "the instance's end (STOP, end of stream)",
        ),
        // --- the refused opens (second filter turns them into EPERM) ---
        (
            libc::SYS_openat,
            "refused with EPERM by the second filter, not fatal",
        ),
    ];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        (libc::SYS_poll, "idle wait through libc's poll()"),
        (
            libc::SYS_open,
            "refused with EPERM by the second filter, not fatal",
        ),
        (
            libc::SYS_epoll_wait,
            "waiting on an epoll set the instance already holds",
        ),
    ]);
    v.push((
        libc::SYS_openat2,
        "refused with EPERM by the second filter, not fatal",
    ));
    v
}

/// The calls the second filter answers with `EPERM`.
fn refused() -> Vec<i64> {
    #[allow(unused_mut)]
    let mut v = vec![libc::SYS_openat, libc::SYS_openat2];
    #[cfg(target_arch = "x86_64")]
    v.push(libc::SYS_open);
    v
}

fn arch() -> Result<seccompiler::TargetArch, String> {
    std::env::consts::ARCH.try_into().map_err(|e| {
        format!(
            "seccomp: unsupported architecture {}: {e:?}",
            std::env::consts::ARCH
        )
    })
}

/// Compiles both filters.
pub fn programs() -> Result<[BpfProgram; 2], String> {
    let arch = arch()?;
    let allow: BTreeMap<i64, Vec<SeccompRule>> = allowed()
        .into_iter()
        .map(|(nr, _)| (nr, Vec::new()))
        .collect();
    let allow = SeccompFilter::new(
        allow,
        SeccompAction::KillProcess,
        SeccompAction::Allow,
        arch,
    )
    .map_err(|e| format!("seccomp: building the allow-list: {e}"))?;
    let deny: BTreeMap<i64, Vec<SeccompRule>> =
        refused().into_iter().map(|nr| (nr, Vec::new())).collect();
    let deny = SeccompFilter::new(
        deny,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp: building the open filter: {e}"))?;
    let allow: BpfProgram = allow
        .try_into()
        .map_err(|e| format!("seccomp: compiling the allow-list: {e}"))?;
    let deny: BpfProgram = deny
        .try_into()
        .map_err(|e| format!("seccomp: compiling the open filter: {e}"))?;
    Ok([allow, deny])
}

/// Installs both filters (from [`programs`], compiled ahead: the instance
/// compiles them while it waits for its first request) on every thread of
/// the process.
pub fn install(programs: &[BpfProgram; 2]) -> Result<(), String> {
    let [allow, deny] = programs;
    // The open filter first: once the allow-list is in, `seccomp` and
    // `prctl` themselves are no longer allowed.
    // Every thread (the request thread and the router's) gets both filters.
    seccompiler::apply_filter_all_threads(deny)
        .map_err(|e| format!("seccomp: installing the open filter: {e}"))?;
    seccompiler::apply_filter_all_threads(allow)
        .map_err(|e| format!("seccomp: installing the allow-list: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn filters_compile_and_every_rule_has_a_reason() {
        let a = super::allowed();
        assert!(a.iter().all(|(_, why)| !why.is_empty()));
        let mut nrs: Vec<i64> = a.iter().map(|(n, _)| *n).collect();
        nrs.sort_unstable();
        let n = nrs.len();
        nrs.dedup();
        assert_eq!(nrs.len(), n, "a system call is listed twice");
        assert!(!nrs.contains(&libc::SYS_socket));
        assert!(!nrs.contains(&libc::SYS_execve));
        assert!(!nrs.contains(&libc::SYS_clone));
        // What leaving the sandbox's chroot would take (docs/threat-model.md).
        for nr in [
            libc::SYS_chroot,
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_unshare,
            libc::SYS_pivot_root,
            libc::SYS_setns,
            libc::SYS_fchdir,
        ] {
            assert!(!nrs.contains(&nr), "system call {nr} is allowed");
        }
        let [allow, deny] = super::programs().expect("compiles");
        assert!(!allow.is_empty() && !deny.is_empty());
    }
}
