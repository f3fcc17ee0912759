//! One supervisor thread per instance: it owns the instance's sandbox. It
//! starts the sandbox (from the warm pool or cold), creates the instance's
//! switch ports and hands their memory over (`PORT`, descriptors by
//! `SCM_RIGHTS`), sends the configuration, `SOCKETS` and `RUN` (one
//! pipeline, answered in order), opens its control sockets; then it serves reconfigurations and the stop, one at a
//! time. The reaper tells it when the sandbox's socket hangs up (its
//! process ended, or closed the socket); it records
//! the crash and starts it again after a back-off (0.1 s doubling to 30 s,
//! reset after 30 s of good running).

use std::os::fd::AsFd;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use pronto_sandbox::proto::Request;
use pronto_sandbox::{Limits, Sandbox, SandboxError};
use pronto_switch::PortShm;

use super::view::{took_state, Crash, State};
use super::{lock, now_ms, Instance, Manager, REQUEST_TIMEOUT};
use crate::failure::Failure;
use crate::store::InstanceSpec;

/// Slowest restart back-off.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// First restart back-off.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// Running this long resets the back-off.
const HEALTHY_AFTER: Duration = Duration::from_secs(30);

/// What a supervisor is asked.
pub(crate) enum Req {
    /// A new configuration (checked already); the answer lists the state
    /// it took over.
    Config(String, mpsc::SyncSender<Result<Vec<String>, Failure>>),
    /// The sandbox process ended (from the reaper), with its generation.
    Exited(u64),
    /// Stop the sandbox and end.
    Stop(mpsc::SyncSender<()>),
}

/// How long to wait before the next restart.
#[derive(Debug)]
pub(crate) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(crate) fn new() -> Backoff {
        Backoff { next: MIN_BACKOFF }
    }

    /// A run of `ran` ended: a long one starts the back-off over.
    pub(crate) fn ran(&mut self, ran: Duration) {
        if ran >= HEALTHY_AFTER {
            self.next = MIN_BACKOFF;
        }
    }

    /// The wait before this restart (the next one waits twice as long).
    pub(crate) fn wait(&mut self) -> Duration {
        let w = self.next;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        w
    }
}

/// An instance's interfaces and their switch port numbers.
type PortNames = Vec<(String, u16)>;

/// A started sandbox with its ports.
pub(crate) struct Running {
    /// Shared with handler calls, which use it from the caller's thread.
    pub(crate) sb: Arc<Mutex<Sandbox>>,
    ports: Vec<u16>,
    /// Reaper key.
    watch: u64,
    since: Instant,
}

enum End {
    /// Asked to stop: leave.
    Stop(Option<mpsc::SyncSender<()>>),
    /// The process ended by itself.
    Crashed(String),
}

/// The supervisor of `inst`: runs until told to stop. `first` hears the
/// outcome of the first start (a create waits on it; a restored instance
/// has none).
pub(crate) fn supervise(
    me: Weak<Manager>,
    inst: Arc<Instance>,
    rx: mpsc::Receiver<Req>,
    first: Option<mpsc::SyncSender<Result<(), Failure>>>,
) {
    run_instance(&me, &inst, &rx, first);
    // The instance is gone (or was never created): its port numbers and
    // addresses go back.
    if let Some(m) = me.upgrade() {
        m.forget_ports(&inst);
    }
}

fn run_instance(
    me: &Weak<Manager>,
    inst: &Arc<Instance>,
    rx: &mpsc::Receiver<Req>,
    mut first: Option<mpsc::SyncSender<Result<(), Failure>>>,
) {
    let mut backoff = Backoff::new();
    let mut generation = 0u64;
    loop {
        let Some(m) = me.upgrade() else { return };
        generation += 1;
        lock(&inst.status).state = Some(State::Starting);
        let spec = lock(&inst.spec).clone();
        let started = m.start_sandbox(&spec, inst, generation, first.is_some());
        drop(m);
        let end = match started {
            Ok(mut run) => {
                if let Some(f) = first.take() {
                    let _ = f.send(Ok(()));
                }
                let end = serve(inst, rx, &mut run, generation);
                *lock(&inst.live) = None;
                backoff.ran(run.since.elapsed());
                if let Some(m) = me.upgrade() {
                    m.release(&mut run);
                }
                end
            }
            Err(e) => {
                if let Some(f) = first.take() {
                    let _ = f.send(Err(e));
                    // Not created: the caller removes it.
                    wait_for_stop(rx);
                    return;
                }
                let mut st = lock(&inst.status);
                st.error = Some(crate::failure::scrub_paths(&e.to_string()));
                match e {
                    Failure::BadRequest(..) | Failure::OverQuota(..) => {
                        // The stored configuration does not build (a
                        // restored instance after an upgrade, say): no
                        // point restarting until it is replaced.
                        st.state = Some(State::Failed);
                        drop(st);
                        match wait_failed(rx, inst) {
                            Some(reply) => End::Stop(reply),
                            None => continue,
                        }
                    }
                    _ => End::Crashed(e.to_string()),
                }
            }
        };
        match end {
            End::Stop(reply) => {
                lock(&inst.status).state = Some(State::Stopped);
                if let Some(r) = reply {
                    let _ = r.send(());
                }
                return;
            }
            End::Crashed(reason) => {
                let wait = backoff.wait();
                let who = {
                    let spec = lock(&inst.spec);
                    format!("{}/{}", spec.tenant, spec.name)
                };
                {
                    let mut st = lock(&inst.status);
                    st.state = Some(State::Crashed);
                    st.pid = None;
                    st.restarts += 1;
                    let reason = crate::failure::scrub_paths(&reason);
                    eprintln!(
                        "prontod: instance {who} ended unexpectedly ({reason}); restart {} in {} ms",
                        st.restarts,
                        wait.as_millis()
                    );
                    st.last_crash = Some(Crash {
                        at_unix_ms: now_ms(),
                        reason,
                    });
                }
                // Wait out the back-off, answering meanwhile.
                let until = Instant::now() + wait;
                loop {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    match rx.recv_timeout(left) {
                        Ok(Req::Stop(r)) => {
                            lock(&inst.status).state = Some(State::Stopped);
                            let _ = r.send(());
                            return;
                        }
                        Ok(req) => {
                            refuse(req, "the instance crashed and is restarting; retry shortly")
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => break,
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
            }
        }
    }
}

/// Answers a request that cannot be served now.
fn refuse(req: Req, why: &str) {
    match req {
        Req::Config(_, r) => {
            let _ = r.send(Err(Failure::Unavailable(why.to_string())));
        }
        Req::Stop(r) => {
            let _ = r.send(());
        }
        Req::Exited(_) => {}
    }
}

fn wait_for_stop(rx: &mpsc::Receiver<Req>) {
    while let Ok(req) = rx.recv() {
        if let Req::Stop(r) = req {
            let _ = r.send(());
            return;
        }
        refuse(req, "the instance is being removed");
    }
}

/// A failed instance waits for a new configuration (then returns `None`:
/// start again) or a stop.
fn wait_failed(rx: &mpsc::Receiver<Req>, inst: &Instance) -> Option<Option<mpsc::SyncSender<()>>> {
    while let Ok(req) = rx.recv() {
        match req {
            Req::Stop(r) => return Some(Some(r)),
            Req::Config(text, r) => {
                lock(&inst.spec).config = text;
                let _ = r.send(Ok(Vec::new()));
                return None;
            }
            other => refuse(
                other,
                "the instance failed to start; replace its configuration",
            ),
        }
    }
    Some(None)
}

fn serve(inst: &Instance, rx: &mpsc::Receiver<Req>, run: &mut Running, generation: u64) -> End {
    loop {
        let Ok(req) = rx.recv() else {
            let _ = lock(&run.sb).stop();
            return End::Stop(None);
        };
        match req {
            Req::Config(text, reply) => {
                let configured = lock(&run.sb).configure(&text);
                match configured {
                    Err(SandboxError::Ended { .. }) => {
                        let _ = reply.send(Err(Failure::Unavailable(
                            "the instance's process ended; it is being restarted".into(),
                        )));
                        return End::Crashed(exit_reason(&mut lock(&run.sb)));
                    }
                    Err(SandboxError::Remote(t)) => {
                        let _ = reply.send(Err(Failure::BadRequest(t, Some("config"))));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(Failure::Internal(e.to_string())));
                    }
                    Ok(answer) => {
                        lock(&inst.spec).config = text;
                        lock(&inst.status).error = None;
                        let _ = reply.send(Ok(took_state(&answer)));
                    }
                }
            }
            Req::Exited(g) if g == generation => {
                return End::Crashed(exit_reason(&mut lock(&run.sb)));
            }
            Req::Exited(_) => {}
            Req::Stop(reply) => {
                let _ = lock(&run.sb).set_timeout(Some(Duration::from_secs(2)));
                if lock(&run.sb).stop().is_err() {
                    let _ = lock(&run.sb).kill();
                    let _ = lock(&run.sb).wait();
                }
                return End::Stop(Some(reply));
            }
        }
    }
}

/// How an instance's process ended, in words.
fn describe_exit(status: Option<std::process::ExitStatus>, oom_kills: u64) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exited with status {c}"),
            (_, Some(9)) if oom_kills > 0 => {
                "killed by the kernel: out of memory (memory limit)".into()
            }
            (_, Some(31)) => {
                "killed by signal 31 (SIGSYS: a system call outside the sandbox's allow-list)"
                    .into()
            }
            (_, Some(sig)) => format!("killed by signal {sig}"),
            _ => "ended".into(),
        },
        None => "stopped answering; killed".into(),
    }
}

fn exit_reason(sb: &mut Sandbox) -> String {
    let oom = sb.oom_kills().unwrap_or(0);
    let status = sb.wait_timeout(Duration::from_secs(2)).ok().flatten();
    if status.is_none() {
        let _ = sb.kill();
    }
    describe_exit(status, oom)
}

/// Maps a failed handler call to what the API says.
pub(crate) fn call_failure(e: SandboxError) -> Failure {
    match e {
        SandboxError::Remote(t) => {
            if t.starts_with("no element named")
                || t.contains(" has no read handler")
                || t.contains(" has no write handler")
            {
                Failure::NotFound(t)
            } else {
                Failure::BadRequest(t, None)
            }
        }
        SandboxError::Ended { .. } => Failure::Unavailable(format!(
            "the instance's process ended ({e}); it is being restarted"
        )),
        other => Failure::Internal(other.to_string()),
    }
}

/// What a sandbox's start or first configuration failing means: a
/// configuration that could not be built (in memory, in time, at all) is
/// the request's fault; anything else is the daemon's.
fn start_failure(e: SandboxError, limit: u64) -> Failure {
    match e {
        SandboxError::Remote(t) => Failure::BadRequest(t, Some("config")),
        SandboxError::Ended {
            oom_kills: Some(n), ..
        } if n > 0 => Failure::BadRequest(
            format!(
                "config: building this configuration needs more memory than the instance's \
                 limit of {limit} bytes; make it smaller, or give the instance more `memory`"
            ),
            Some("config"),
        ),
        other => Failure::Internal(other.to_string()),
    }
}

impl Manager {
    /// Starts `spec`'s sandbox, gives it its ports and configuration, opens
    /// its control sockets (unless open already) and runs it. With
    /// `strict`, a control socket that cannot be opened fails the start
    /// (a create); otherwise it is reported in the status (a restore).
    pub(crate) fn start_sandbox(
        &self,
        spec: &InstanceSpec,
        inst: &Instance,
        generation: u64,
        strict: bool,
    ) -> Result<Running, Failure> {
        let t0 = Instant::now();
        let limits = self.limits_of(spec);
        let sb = match self.warm.take(&limits, &self.standard_limits()) {
            Some(sb) => sb,
            None => {
                let ss = self.sandbox_spec(format!("{}.{}", spec.tenant, spec.name), limits);
                Sandbox::spawn(&ss).map_err(|e| Failure::Internal(format!("sandbox: {e}")))?
            }
        };
        let _ = sb.set_timeout(Some(REQUEST_TIMEOUT));
        if let Some(cpus) = &spec.cpus {
            // The daemon may run on fewer CPUs than when the instance was
            // made (a restart under another cpuset).
            let mut now = cpus.clone();
            let pinned = match super::cpus::daemon_cpus()
                .and_then(|mine| super::cpus::check_cpus(&mut now, &mine))
            {
                Err(Failure::BadRequest(why, _)) => Err(format!(
                    "{why}; recreate the instance with --cpus among those"
                )),
                Err(e) => Err(e.to_string()),
                Ok(()) => sb.pin(cpus).map_err(|e| e.to_string()),
            };
            if let Err(why) = pinned {
                let mut sb = sb;
                sb.end();
                return Err(Failure::Internal(why));
            }
        }
        let mut run = Running {
            sb: Arc::new(Mutex::new(sb)),
            ports: Vec::new(),
            watch: 0,
            since: Instant::now(),
        };
        let r = self.bring_up(spec, inst, &mut run, strict);
        let (names, trouble) = match r {
            Ok(n) => n,
            Err(e) => {
                self.release(&mut run);
                return Err(e);
            }
        };
        let tx = inst.tx.clone();
        let pid = lock(&run.sb).pid();
        run.watch = self.reaper.watch(
            lock(&run.sb).socket(),
            Box::new(move || {
                let _ = tx.send(Req::Exited(generation));
            }),
        );
        run.since = Instant::now();
        *lock(&inst.live) = Some(run.sb.clone());
        let mut st = lock(&inst.status);
        st.state = Some(State::Running);
        st.pid = Some(pid);
        st.boot_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        st.error = trouble;
        st.ports = names;
        Ok(run)
    }

    /// Ports, configuration, `RUN`, control sockets; the ports' names, and
    /// why the control sockets could not be opened when that is not an
    /// error (`strict` false).
    fn bring_up(
        &self,
        spec: &InstanceSpec,
        inst: &Instance,
        run: &mut Running,
        strict: bool,
    ) -> Result<(PortNames, Option<String>), Failure> {
        let g = self.geometry_of(spec);
        let mut names = Vec::new();
        let mut shms = Vec::new();
        // The switch wakes the instance's ports with a signal, not through
        // a descriptor per port.
        let wake = lock(&run.sb).wake_bell();
        for i in &spec.interfaces {
            let pname = format!("{}/{}/{}", spec.tenant, spec.name, i.name);
            // The number (and its addresses) the instance keeps across
            // restarts.
            let id = self.hold_port(spec, inst, i)?;
            let shm = PortShm::create_signalled(&pname, g, wake.clone())
                .map_err(|e| e.to_string())
                .and_then(|shm| {
                    self.switch
                        .attach(id, shm.clone())
                        .map_err(|e| e.to_string())?;
                    Ok(shm)
                })
                .map_err(|e| Failure::Internal(format!("port {pname}: {e}")))?;
            if let Some(w) = spec.weight {
                self.switch.set_weight(id, w);
            }
            if let Some(r) = &spec.rate_limit {
                self.switch.set_rate_limit(id, r.limit());
            }
            run.ports.push(id);
            let fds = shm.fds().map_err(|e| {
                Failure::Internal(format!(
                    "handing port {pname} over: the port's descriptors: {e}"
                ))
            })?;
            shms.push((pname, shm, fds));
            names.push((i.name.clone(), id));
        }
        // Ports, pool limit, configuration, control sockets and run sent
        // together, answered in order (`Sandbox::pipeline`): one wake-up of
        // the instance, not one round trip each.
        let borrowed: Vec<Vec<_>> = shms
            .iter()
            .map(|(_, _, fds)| fds.iter().map(|f| f.as_fd()).collect())
            .collect();
        let list_sockets = lock(&inst.control).is_empty();
        let mut reqs = Vec::with_capacity(shms.len() + 4);
        for (i, fds) in spec.interfaces.iter().zip(&borrowed) {
            reqs.push((Request::Port(&i.name, g.slots, g.ring), fds.as_slice()));
        }
        let first = reqs.len();
        reqs.push((Request::Pool(self.pool_limit_of(spec)), &[]));
        if let Some(us) = spec.poll_window_us.filter(|&us| us > 0) {
            reqs.push((Request::Poll(us * 1_000), &[]));
        }
        // The files its configuration reads, before the configuration.
        for (path, text) in &spec.files {
            reqs.push((Request::File(path, text), &[]));
        }
        reqs.push((Request::Config(&spec.config), &[]));
        // Where the SOCKETS answer is (the one after CONFIG's).
        let sockets_at = reqs.len();
        if list_sockets {
            reqs.push((Request::Sockets, &[]));
        }
        reqs.push((Request::Run, &[]));
        let limit = self.memory_of(spec);
        let answers = lock(&run.sb).pipeline(&reqs).map_err(|(at, e)| {
            if at < first {
                let pname = &shms[at].0;
                Failure::Internal(format!("handing port {pname} over: {e}"))
            } else if at < sockets_at {
                start_failure(e, limit)
            } else if list_sockets && at == sockets_at {
                Failure::Internal(format!("listing the control sockets: {e}"))
            } else {
                Failure::Internal(format!("running the configuration: {e}"))
            }
        })?;
        // The daemon keeps no descriptor of the port: the switch's
        // mapping keeps the memory, the instance's doorbell descriptor
        // keeps the switch's epoll registration.
        drop(borrowed);
        for (_, shm, fds) in shms {
            drop(fds);
            shm.handed_over();
        }
        let mut trouble = None;
        if list_sockets {
            let listed = answers.get(sockets_at).cloned().unwrap_or_default();
            let opened = crate::control::parse_sockets(&listed)
                .and_then(|wanted| self.open_controls(&spec.tenant, &spec.name, &wanted, &[]));
            match opened {
                Ok(c) => *lock(&inst.control) = c,
                Err(e) if strict => return Err(e),
                Err(e) => trouble = Some(crate::failure::scrub_paths(&e.to_string())),
            }
        }
        Ok((names, trouble))
    }

    /// Ends what is left of a run: the sandbox (killed if still running,
    /// reaped, its cgroup removed, now), its watch, its ports (detached;
    /// their numbers and addresses stay the instance's until it is gone,
    /// so that frames for it are counted as dropped while it restarts,
    /// not flooded to every other port).
    pub(crate) fn release(&self, run: &mut Running) {
        let mut sb = lock(&run.sb);
        if run.watch != 0 {
            self.reaper.unwatch(run.watch, sb.socket());
            run.watch = 0;
        }
        sb.end();
        drop(sb);
        for id in run.ports.drain(..) {
            let _ = self.switch.suspend(id);
        }
    }

    /// The limits of `spec`'s sandbox.
    pub(crate) fn limits_of(&self, spec: &InstanceSpec) -> Limits {
        Limits {
            memory_bytes: Some(self.memory_of(spec)),
            cpu: spec.cpu,
            cpu_weight: spec.weight,
            pids: Some(self.pids_of(spec)),
            ..Limits::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn the_back_off_doubles_to_a_ceiling_and_resets_after_a_good_run() {
        let mut b = Backoff::new();
        let waits: Vec<u64> = (0..12).map(|_| b.wait().as_millis() as u64).collect();
        assert_eq!(&waits[..5], [100, 200, 400, 800, 1600]);
        assert_eq!(waits[11], 30_000);
        b.ran(Duration::from_secs(5));
        assert_eq!(b.wait(), MAX_BACKOFF);
        b.ran(HEALTHY_AFTER);
        assert_eq!(b.wait(), MIN_BACKOFF);
    }

    #[test]
    fn ends_are_described() {
        let st = |raw| Some(std::process::ExitStatus::from_raw(raw));
        assert_eq!(describe_exit(st(2 << 8), 0), "exited with status 2");
        assert_eq!(describe_exit(st(9), 0), "killed by signal 9");
        assert_eq!(
            describe_exit(st(9), 1),
            "killed by the kernel: out of memory (memory limit)"
        );
        assert!(describe_exit(st(31), 0).contains("SIGSYS"));
        assert_eq!(describe_exit(None, 0), "stopped answering; killed");
    }

    #[test]
    fn failed_calls_and_starts_map_to_what_the_api_says() {
        assert!(matches!(
            call_failure(SandboxError::Remote("no element named `x`".into())),
            Failure::NotFound(_)
        ));
        assert!(matches!(
            call_failure(SandboxError::Remote("c.limit: expected integer".into())),
            Failure::BadRequest(_, None)
        ));
        let oom = SandboxError::Ended {
            status: None,
            oom_kills: Some(1),
        };
        assert_eq!(
            start_failure(oom, 1 << 20),
            Failure::BadRequest(
                "config: building this configuration needs more memory than the instance's \
                 limit of 1048576 bytes; make it smaller, or give the instance more `memory`"
                    .into(),
                Some("config")
            )
        );
        assert!(matches!(
            start_failure(
                SandboxError::Ended {
                    status: None,
                    oom_kills: None
                },
                1
            ),
            Failure::Internal(_)
        ));
    }
}
