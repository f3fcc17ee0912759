//! A reconfiguration's candidate, built first in a sandbox of its own.
//!
//! Building a configuration can take any amount of memory (a `define`
//! that doubles a string fifteen times, a route table, a large table
//! element), and an instance that runs out of memory is killed whole,
//! running configuration and all. So the candidate is first built in a
//! separate, fresh sandbox whose memory limit is what the instance has
//! left under its own limit (plus what a fresh instance holds before any
//! configuration); if the kernel kills that one, or it times out, the
//! reconfiguration is refused and the instance never sees it. Its
//! interfaces are stood in for by ports of the same names that no switch
//! serves. What it answers to `SOCKETS` is the candidate's control
//! sockets: the daemon never parses a tenant's configuration itself.

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};

use pronto_runtime::controlsocket::SocketSpec;
use pronto_sandbox::{Limits, Sandbox, SandboxError};
use pronto_switch::PortShm;

use super::{lock, Instance, Manager, REQUEST_TIMEOUT};
use crate::failure::Failure;
use crate::store::InstanceSpec;

/// Memory kept free beyond the candidate's own: what the instance's new
/// router allocates besides (its packet pool is counted separately), and
/// what its allocator keeps from the check build it makes first.
const SLACK: u64 = 2 << 20;

/// Sandboxes started for checks, to name them.
static CHECKS: AtomicU64 = AtomicU64::new(0);

impl Manager {
    /// Builds `config`, the candidate for `inst` (of `spec`), in a sandbox
    /// of its own under the memory `inst` has left; its control sockets
    /// when it builds.
    pub(super) fn check_candidate(
        &self,
        inst: &Instance,
        spec: &InstanceSpec,
        config: &str,
    ) -> Result<Vec<(String, SocketSpec)>, Failure> {
        let limit = self.memory_of(spec);
        let in_use = lock(&inst.live)
            .clone()
            .and_then(|sb| lock(&sb).cgroup().and_then(|c| c.memory_in_use()));
        let limits = Limits {
            memory_bytes: Some(limit),
            cpu: spec.cpu,
            cpu_weight: spec.weight,
            pids: Some(self.pids_of(spec)),
            ..Limits::default()
        };
        let mut sb = match self.warm.take(&limits, &self.standard_limits()) {
            Some(sb) => sb,
            None => {
                let n = CHECKS.fetch_add(1, Ordering::Relaxed) + 1;
                let ss = self.sandbox_spec(format!("check{n}"), limits);
                Sandbox::spawn(&ss).map_err(|e| Failure::Internal(format!("check sandbox: {e}")))?
            }
        };
        let r = self.check_in(&mut sb, spec, config, limit, in_use);
        // Killed now; reaped and its cgroup removed (which the kernel makes
        // slow) off the request's path.
        let _ = sb.kill();
        let _ = std::thread::Builder::new()
            .name("prontod-check-end".into())
            .stack_size(super::SUPERVISOR_STACK)
            .spawn(move || sb.end());
        r
    }

    fn check_in(
        &self,
        sb: &mut Sandbox,
        spec: &InstanceSpec,
        config: &str,
        limit: u64,
        in_use: Option<u64>,
    ) -> Result<Vec<(String, SocketSpec)>, Failure> {
        let internal = |e: SandboxError| Failure::Internal(format!("check sandbox: {e}"));
        let _ = sb.set_timeout(Some(REQUEST_TIMEOUT));
        sb.ping().map_err(internal)?;
        let name = &spec.name;
        let short = |used: u64| {
            Failure::BadRequest(
                format!(
                    "config: building this configuration needs more memory than instance \
                     `{name}` has left under its limit of {limit} bytes ({used} in use by the \
                     running configuration); make it smaller, or recreate the instance with more \
                     `memory`"
                ),
                Some("config"),
            )
        };
        // The candidate gets what the instance has left, plus what this
        // fresh instance already holds (the program, its first pool).
        let pool = (self.opts.pool_slots as u64) * pronto_packet::SLOT_STRIDE as u64;
        if let (Some(used), Some(cg)) = (in_use, sb.cgroup()) {
            let base = cg.memory_in_use().unwrap_or(0);
            let budget = (limit.saturating_sub(used) + base).saturating_sub(pool + SLACK);
            if budget <= base {
                return Err(short(used));
            }
            let only_memory = Limits {
                memory_bytes: Some(budget),
                cpu: None,
                pids: None,
                ..Limits::default()
            };
            cg.update(&only_memory).map_err(internal)?;
        }
        let g = self.geometry_of(spec);
        for i in &spec.interfaces {
            let shm = PortShm::create(&format!("check/{}/{}", spec.name, i.name), g)
                .map_err(|e| Failure::Internal(format!("check sandbox: port {}: {e}", i.name)))?;
            let fds = shm
                .fds()
                .map_err(|e| Failure::Internal(format!("check sandbox: port {}: {e}", i.name)))?;
            let fds: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
            sb.give_port(&i.name, (g.slots, g.ring), &fds)
                .map_err(internal)?;
        }
        sb.set_pool_limit(self.pool_limit_of(spec))
            .map_err(internal)?;
        for (path, text) in &spec.files {
            sb.give_file(path, text).map_err(|e| match e {
                SandboxError::Remote(t) => {
                    Failure::BadRequest(format!("files: {t}"), Some("files"))
                }
                e => internal(e),
            })?;
        }
        match sb.configure(config) {
            Ok(_) => {}
            Err(SandboxError::Remote(t)) => return Err(Failure::BadRequest(t, Some("config"))),
            Err(SandboxError::Ended { oom_kills, status }) => {
                let oom = oom_kills.unwrap_or(0) > 0
                    || status.is_some_and(|s| {
                        use std::os::unix::process::ExitStatusExt;
                        s.signal() == Some(9)
                    });
                return Err(if oom {
                    short(in_use.unwrap_or(0))
                } else {
                    Failure::BadRequest(
                        format!(
                            "config: building this configuration ended the process that built \
                             it ({})",
                            describe(status)
                        ),
                        Some("config"),
                    )
                });
            }
            Err(SandboxError::Io { source, .. })
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(Failure::BadRequest(
                    format!(
                        "config: building this configuration took longer than {} s",
                        REQUEST_TIMEOUT.as_secs()
                    ),
                    Some("config"),
                ))
            }
            Err(e) => return Err(internal(e)),
        }
        let text = sb.sockets().map_err(internal)?;
        crate::control::parse_sockets(&text)
    }
}

fn describe(status: Option<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit status {c}"),
            (_, Some(sig)) => format!("signal {sig}"),
            _ => "it ended".into(),
        },
        None => "it ended".into(),
    }
}
