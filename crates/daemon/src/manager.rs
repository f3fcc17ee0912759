//! Instances and their supervisors.
//!
//! Each instance has one supervisor thread that owns its sandbox: it
//! starts the sandbox, creates the instance's switch ports and hands their
//! memory over (`PORT`, descriptors by `SCM_RIGHTS`), sends the
//! configuration and `RUN`, then serves requests (handler calls,
//! reconfiguration, memory, stop) one at a time over the sandbox's socket.
//! A reaper thread watches every running sandbox's pidfd in one epoll set
//! and tells the supervisor when its process ends, so an idle daemon with
//! thousands of instances makes no system calls at all. A crashed sandbox
//! is restarted with back-off (0.1 s doubling to 30 s, reset after 30 s of
//! good running) and the crash is visible in its status.

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pronto_sandbox::{Limits, Output, Sandbox, SandboxError, SandboxSpec};
use pronto_switch::{Geometry, PortShm, SwitchHandle};
use rustix::event::epoll;
use serde::Serialize;

use crate::store::{IfaceSpec, InstanceSpec, Store};

/// Slowest restart back-off.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// First restart back-off.
const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// Running this long resets the back-off.
const HEALTHY_AFTER: Duration = Duration::from_secs(30);
/// Supervisor threads' stacks: they only shuttle requests.
const SUPERVISOR_STACK: usize = 256 << 10;
/// How long the warm pool waits after a sandbox is taken before starting
/// its replacement (the start it replaces is in progress meanwhile).
const REFILL_DELAY: Duration = Duration::from_millis(10);
/// How long a sandbox may take to answer one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// What went wrong, with the HTTP status it maps to.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Bad input (400), naming the field when one is to blame.
    BadRequest(String, Option<&'static str>),
    /// No such thing (404).
    NotFound(String),
    /// Name taken, or not empty (409).
    Conflict(String),
    /// The instance cannot answer now (503).
    Unavailable(String),
    /// Anything else (500).
    Internal(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::BadRequest(m, _)
            | Failure::NotFound(m)
            | Failure::Conflict(m)
            | Failure::Unavailable(m)
            | Failure::Internal(m) => f.write_str(m),
        }
    }
}

/// Settings of the instance manager.
#[derive(Clone, Debug)]
pub struct ManagerOptions {
    /// The `pronto` binary started (as `pronto instance`) in each sandbox.
    pub program: PathBuf,
    /// An empty directory each sandbox's root is mounted on.
    pub root_dir: PathBuf,
    /// Make cgroups (limits and accounting).
    pub use_cgroup: bool,
    /// Switch port geometry for instance interfaces.
    pub geometry: Geometry,
    /// Switching threads.
    pub switch_threads: usize,
    /// Memory limit of instances that name none.
    pub default_memory: u64,
    /// Sandboxes kept started ahead of demand (0: start each on request).
    pub warm: usize,
    /// Packet slots in each instance's pool (`pronto instance
    /// --pool-slots`; the pool dominates an instance's memory).
    pub pool_slots: usize,
    /// Where instances' UNIX control sockets go
    /// (`CONTROL_DIR/TENANT/INSTANCE/FILENAME`; empty: the state
    /// directory's `control/`).
    pub control_dir: PathBuf,
}

/// Lifecycle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Being started.
    Starting,
    /// Running its configuration.
    Running,
    /// Its process ended unexpectedly; a restart is pending.
    Crashed,
    /// Stopped (being removed).
    Stopped,
    /// Cannot start: its configuration or its sandbox failed (see `error`).
    Failed,
}

/// The last crash.
#[derive(Clone, Debug, Serialize)]
pub struct Crash {
    /// When (Unix milliseconds).
    pub at_unix_ms: u64,
    /// How the process ended.
    pub reason: String,
}

/// One interface as shown by the API.
#[derive(Clone, Debug, Serialize)]
pub struct IfaceView {
    /// Interface name.
    pub name: String,
    /// Static MAC, if any.
    pub mac: Option<String>,
    /// Its switch port number while running.
    pub port: Option<u16>,
}

/// What is known about a running (or not) instance.
#[derive(Clone, Debug, Default)]
struct Status {
    state: Option<State>,
    pid: Option<u32>,
    boot_ms: Option<f64>,
    restarts: u32,
    last_crash: Option<Crash>,
    error: Option<String>,
    ports: Vec<(String, u16)>,
}

/// An instance as the API shows it.
#[derive(Clone, Debug, Serialize)]
pub struct InstanceView {
    /// Name.
    pub name: String,
    /// Tenant.
    pub tenant: String,
    /// Lifecycle state.
    pub state: State,
    /// Configuration text.
    pub config: String,
    /// Memory limit, bytes.
    pub memory: Option<u64>,
    /// CPU share.
    pub cpu: Option<f64>,
    /// Task limit.
    pub pids: Option<u64>,
    /// The CPUs its threads run on (none: any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<usize>>,
    /// Interfaces.
    pub interfaces: Vec<IfaceView>,
    /// Sandbox process id (host's view).
    pub pid: Option<u32>,
    /// Milliseconds from start to running, last start.
    pub boot_ms: Option<f64>,
    /// Restarts after crashes.
    pub restarts: u32,
    /// The last crash.
    pub last_crash: Option<Crash>,
    /// Why it is failed, or the last start error.
    pub error: Option<String>,
    /// Proportional set size, bytes (filled by `show`).
    pub pss_bytes: Option<u64>,
    /// Creation time.
    pub created_unix_ms: u64,
    /// Where the configuration's `ControlSocket`s listen (opened by the
    /// daemon): `tcp 127.0.0.1:PORT` or `unix PATH`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub control_sockets: Vec<String>,
    /// Only in the answer to a reconfiguration: `ELEMENT (WHAT)` for each
    /// element of the new configuration that took over the old one's state
    /// (Click's hot-swap: same name and class; a queue's packets, a NAT's
    /// flows, an ARP table).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub took_state: Vec<String>,
}

enum Req {
    /// A new configuration; the answer lists the state it took over.
    Config(String, mpsc::SyncSender<Result<Vec<String>, Failure>>),
    /// The sandbox process ended (from the reaper), with its generation.
    Exited(u64),
    Stop(mpsc::SyncSender<()>),
}

struct Instance {
    spec: Mutex<InstanceSpec>,
    status: Mutex<Status>,
    tx: mpsc::Sender<Req>,
    /// The running sandbox, for handler calls made straight from the
    /// caller's thread (no hop through the supervisor).
    live: Mutex<Option<Arc<Mutex<Sandbox>>>>,
    /// The configuration's `ControlSocket`s, opened by the daemon.
    control: Mutex<Vec<crate::control::Control>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Port numbers in use and free.
struct Ports {
    next: u32,
    free: Vec<u16>,
    /// Port number → port name (`TENANT/NAME/IFACE`).
    names: HashMap<u16, String>,
}

/// A watched sandbox process: its supervisor's channel, the start's
/// generation, the process's pidfd.
type Watched = (mpsc::Sender<Req>, u64, OwnedFd);

struct Reaper {
    epoll: OwnedFd,
    /// Key → the watched process.
    watched: Mutex<HashMap<u64, Watched>>,
    next_key: AtomicU64,
}

/// The instance manager: the switch, the instances, the store.
pub struct Manager {
    opts: ManagerOptions,
    switch: SwitchHandle,
    store: Store,
    instances: Mutex<HashMap<String, Arc<Instance>>>,
    ports: Mutex<Ports>,
    reaper: Arc<Reaper>,
    warm: Warm,
    me: Weak<Manager>,
}

/// Pre-started sandboxes.
#[derive(Default)]
struct Warm {
    pool: Mutex<Vec<Sandbox>>,
    wake: std::sync::Condvar,
    stop: std::sync::atomic::AtomicBool,
}

/// A valid tenant name: 1 to 31 of `a-z 0-9 -`, starting with a letter or
/// digit.
pub fn check_tenant(name: &str) -> Result<(), Failure> {
    let ok = !name.is_empty()
        && name.len() <= 31
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Failure::BadRequest(
            format!("tenant name `{name}`: use 1 to 31 of a-z, 0-9 and `-`, not starting with `-`"),
            Some("name"),
        ))
    }
}

/// A valid instance name: 1 to 32 of `A-Z a-z 0-9 _ . -`, not starting
/// with `.` or `-`.
pub fn check_name(name: &str) -> Result<(), Failure> {
    let ok = !name.is_empty()
        && name.len() <= 32
        && !name.starts_with('.')
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Failure::BadRequest(
            format!(
                "instance name `{name}`: use 1 to 32 of A-Z, a-z, 0-9, `_`, `.` and `-`, not \
                 starting with `.` or `-`"
            ),
            Some("name"),
        ))
    }
}

pub(crate) fn check_iface(i: &IfaceSpec) -> Result<(), Failure> {
    let ok = !i.name.is_empty()
        && i.name.len() <= 15
        && i.name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(Failure::BadRequest(
            format!(
                "interface name `{}`: use 1 to 15 of A-Z, a-z, 0-9, `_` and `-`",
                i.name
            ),
            Some("interfaces"),
        ));
    }
    if let Some(m) = &i.mac {
        if pronto_switch::control::parse_mac(m).is_none() {
            return Err(Failure::BadRequest(
                format!(
                    "interface {}: `{m}` is not a MAC address (02:00:00:00:00:01)",
                    i.name
                ),
                Some("interfaces"),
            ));
        }
    }
    Ok(())
}

/// The `ELEMENT (WHAT)` items of an instance's answer to `CONFIG`
/// (`N elements; took state: a (1 flows), b (2 packets)`).
fn took_state(reply: &str) -> Vec<String> {
    let Some((_, list)) = reply.split_once("; took state: ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0u32;
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn sandbox_failure(e: SandboxError) -> Failure {
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

impl Manager {
    /// Starts the switch and the reaper, then every instance in `store`.
    pub fn start(opts: ManagerOptions, store: Store) -> Result<Arc<Manager>, String> {
        let switch = SwitchHandle::spawn(pronto_switch::Config {
            threads: opts.switch_threads,
            ..pronto_switch::Config::default()
        })
        .map_err(|e| format!("starting the switch: {e}"))?;
        let reaper = Arc::new(Reaper {
            epoll: epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| format!("epoll: {e}"))?,
            watched: Mutex::new(HashMap::new()),
            next_key: AtomicU64::new(1),
        });
        let r = reaper.clone();
        std::thread::Builder::new()
            .name("prontod-reaper".into())
            .stack_size(SUPERVISOR_STACK)
            .spawn(move || reap(&r))
            .map_err(|e| format!("starting the reaper thread: {e}"))?;
        let specs = store.instances().map_err(|e| e.to_string())?;
        let m = Arc::new_cyclic(|me| Manager {
            opts,
            switch,
            store,
            instances: Mutex::new(HashMap::new()),
            ports: Mutex::new(Ports {
                next: 1,
                free: Vec::new(),
                names: HashMap::new(),
            }),
            reaper,
            warm: Warm::default(),
            me: me.clone(),
        });
        if m.opts.warm > 0 {
            let w = Arc::downgrade(&m);
            std::thread::Builder::new()
                .name("prontod-warm".into())
                .stack_size(SUPERVISOR_STACK)
                .spawn(move || Manager::refill(w))
                .map_err(|e| format!("starting the warm-pool thread: {e}"))?;
        }
        for spec in specs {
            // Restored instances start in the background; a failure shows
            // in their status.
            let _ = m.launch(spec, None);
        }
        Ok(m)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The switch.
    pub fn switch(&self) -> &SwitchHandle {
        &self.switch
    }

    /// Starts a supervisor for `spec`; with `first`, reports the first
    /// start's outcome there.
    fn launch(
        &self,
        spec: InstanceSpec,
        first: Option<mpsc::SyncSender<Result<(), Failure>>>,
    ) -> Result<(), Failure> {
        let (tx, rx) = mpsc::channel();
        let key = spec.key();
        let wanted = crate::control::wanted(&spec.config);
        let mut error = None;
        let control = match self.open_controls(&spec.tenant, &spec.name, &wanted, &[]) {
            Ok(c) => c,
            // Creating: the configuration is refused.
            Err(e) if first.is_some() => return Err(e),
            // Restoring: the instance runs, without its control sockets.
            Err(e) => {
                error = Some(e.to_string());
                Vec::new()
            }
        };
        let inst = Arc::new(Instance {
            spec: Mutex::new(spec),
            status: Mutex::new(Status {
                state: Some(State::Starting),
                error,
                ..Status::default()
            }),
            tx,
            live: Mutex::new(None),
            control: Mutex::new(control),
        });
        lock(&self.instances).insert(key.clone(), inst.clone());
        let me = self.me.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("prontod-{key}"))
            .stack_size(SUPERVISOR_STACK)
            .spawn(move || supervise(me, inst, rx, first));
        if let Err(e) = spawned {
            lock(&self.instances).remove(&key);
            return Err(Failure::Internal(format!(
                "starting a supervisor thread: {e}"
            )));
        }
        Ok(())
    }

    /// Creates an instance: starts it, and keeps it only if its
    /// configuration was accepted.
    pub fn create(&self, mut spec: InstanceSpec) -> Result<InstanceView, Failure> {
        check_tenant(&spec.tenant)?;
        check_name(&spec.name)?;
        let mut seen = Vec::new();
        for i in &spec.interfaces {
            check_iface(i)?;
            if seen.contains(&&i.name) {
                return Err(Failure::BadRequest(
                    format!("interface {} is listed twice", i.name),
                    Some("interfaces"),
                ));
            }
            seen.push(&i.name);
        }
        if let Some(c) = spec.cpu {
            if !(c > 0.0 && c <= 1024.0) {
                return Err(Failure::BadRequest(
                    format!("cpu: {c} is not a share of CPUs (0 < cpu <= 1024)"),
                    Some("cpu"),
                ));
            }
        }
        if spec.memory.is_some_and(|m| m < (1 << 20)) {
            return Err(Failure::BadRequest(
                "memory: at least 1M is needed".into(),
                Some("memory"),
            ));
        }
        if spec.pids == Some(0) {
            return Err(Failure::BadRequest("pids: at least 1".into(), Some("pids")));
        }
        if let Some(cpus) = &mut spec.cpus {
            check_cpus(cpus)?;
        }
        spec.created_unix_ms = now_ms();
        let key = spec.key();
        if lock(&self.instances).contains_key(&key) {
            return Err(Failure::Conflict(format!(
                "instance `{}` already exists",
                spec.name
            )));
        }
        let (tx, rx) = mpsc::sync_channel(1);
        let (tenant, name) = (spec.tenant.clone(), spec.name.clone());
        self.launch(spec.clone(), Some(tx))?;
        let outcome = rx
            .recv()
            .unwrap_or_else(|_| Err(Failure::Internal("the supervisor ended".into())));
        if let Err(e) = outcome {
            self.stop(&key);
            return Err(e);
        }
        if let Err(e) = self.store.put_instance(&spec) {
            self.stop(&key);
            return Err(Failure::Internal(e.to_string()));
        }
        self.view(&tenant, &name, false)
    }

    fn get(&self, tenant: &str, name: &str) -> Result<Arc<Instance>, Failure> {
        lock(&self.instances)
            .get(&crate::store::key(tenant, name))
            .cloned()
            .ok_or_else(|| Failure::NotFound(format!("no instance `{name}`")))
    }

    /// Stops the supervisor of `key` and waits for it.
    fn stop(&self, key: &str) {
        let inst = lock(&self.instances).remove(key);
        if let Some(inst) = inst {
            lock(&inst.control).clear();
            let (tx, rx) = mpsc::sync_channel(1);
            if inst.tx.send(Req::Stop(tx)).is_ok() {
                let _ = rx.recv();
            }
        }
    }

    /// Opens the control sockets of `wanted` that `current` lacks.
    fn open_controls(
        &self,
        tenant: &str,
        name: &str,
        wanted: &[(String, pronto_runtime::controlsocket::SocketSpec)],
        current: &[crate::control::Control],
    ) -> Result<Vec<crate::control::Control>, Failure> {
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let handlers = Arc::new(crate::control::InstanceHandlers {
            manager: self.me.clone(),
            tenant: tenant.to_string(),
            name: name.to_string(),
        });
        let dir = self.opts.control_dir.join(tenant).join(name);
        crate::control::open(&dir, wanted, current, handlers)
            .map_err(|e| Failure::BadRequest(e, Some("config")))
    }

    /// Destroys an instance.
    pub fn remove(&self, tenant: &str, name: &str) -> Result<(), Failure> {
        self.get(tenant, name)?;
        self.stop(&crate::store::key(tenant, name));
        self.store
            .remove_instance(tenant, name)
            .map_err(|e| Failure::Internal(e.to_string()))?;
        Ok(())
    }

    /// Instances of `tenant` (all with `None`), by name.
    pub fn list(&self, tenant: Option<&str>) -> Vec<InstanceView> {
        let all: Vec<Arc<Instance>> = lock(&self.instances).values().cloned().collect();
        let mut v: Vec<InstanceView> = all
            .iter()
            .filter(|i| tenant.is_none_or(|t| lock(&i.spec).tenant == t))
            .map(|i| view_of(i, None))
            .collect();
        v.sort_by(|a, b| (&a.tenant, &a.name).cmp(&(&b.tenant, &b.name)));
        v
    }

    /// One instance; with `pss`, its memory too.
    pub fn view(&self, tenant: &str, name: &str, pss: bool) -> Result<InstanceView, Failure> {
        let inst = self.get(tenant, name)?;
        let live = lock(&inst.live).clone();
        let pss = match live {
            Some(sb) if pss => {
                let r = lock(&sb).pss_bytes().ok();
                r
            }
            _ => None,
        };
        Ok(view_of(&inst, pss))
    }

    fn call<T>(
        &self,
        tenant: &str,
        name: &str,
        make: impl FnOnce(mpsc::SyncSender<Result<T, Failure>>) -> Req,
    ) -> Result<T, Failure> {
        let inst = self.get(tenant, name)?;
        let (tx, rx) = mpsc::sync_channel(1);
        inst.tx
            .send(make(tx))
            .map_err(|_| Failure::Unavailable(format!("instance `{name}` is being removed")))?;
        rx.recv().unwrap_or_else(|_| {
            Err(Failure::Unavailable(format!(
                "instance `{name}` is being removed"
            )))
        })
    }

    /// The running sandbox of an instance, for a direct call.
    fn live(&self, tenant: &str, name: &str) -> Result<Arc<Mutex<Sandbox>>, Failure> {
        let inst = self.get(tenant, name)?;
        let live = lock(&inst.live).clone();
        live.ok_or_else(|| {
            let state = lock(&inst.status).state;
            Failure::Unavailable(match state {
                Some(State::Failed) => {
                    format!("instance `{name}` failed to start; replace its configuration")
                }
                _ => format!(
                    "instance `{name}` is not running yet (starting or restarting); retry shortly"
                ),
            })
        })
    }

    /// Reads `element.handler` (on the caller's thread, straight through
    /// the sandbox's socket).
    pub fn read(&self, tenant: &str, name: &str, handler: &str) -> Result<String, Failure> {
        self.read_args(tenant, name, handler, "")
    }

    /// Reads `element.handler` with arguments (handlers that take some).
    pub fn read_args(
        &self,
        tenant: &str,
        name: &str,
        handler: &str,
        args: &str,
    ) -> Result<String, Failure> {
        let sb = self.live(tenant, name)?;
        let r = lock(&sb).read_with(handler, args);
        r.map_err(sandbox_failure)
    }

    /// Writes `value` to `element.handler`.
    pub fn write(
        &self,
        tenant: &str,
        name: &str,
        handler: &str,
        value: &str,
    ) -> Result<(), Failure> {
        let sb = self.live(tenant, name)?;
        let r = lock(&sb).write(handler, value);
        r.map_err(sandbox_failure)
    }

    /// Replaces the configuration of a running instance; a bad one is
    /// refused and the old one keeps running.
    pub fn reconfigure(
        &self,
        tenant: &str,
        name: &str,
        config: &str,
    ) -> Result<InstanceView, Failure> {
        let inst = self.get(tenant, name)?;
        let wanted = crate::control::wanted(config);
        let new = {
            let current = lock(&inst.control);
            self.open_controls(tenant, name, &wanted, &current)?
        };
        // On failure the new sockets close (dropped); the old ones stay.
        let took = self.call(tenant, name, |tx| Req::Config(config.to_string(), tx))?;
        crate::control::commit(&mut lock(&inst.control), &wanted, new);
        let spec = {
            let mut s = lock(&inst.spec);
            s.config = config.to_string();
            s.clone()
        };
        self.store
            .put_instance(&spec)
            .map_err(|e| Failure::Internal(e.to_string()))?;
        let mut view = view_of(&inst, None);
        view.took_state = took;
        Ok(view)
    }

    /// Per-element counters: every element's class and the values of its
    /// counting read handlers.
    pub fn element_stats(&self, tenant: &str, name: &str) -> Result<Vec<ElementStats>, Failure> {
        const COUNTERS: [&str; 8] = [
            "count",
            "byte_count",
            "drops",
            "rate",
            "length",
            "highwater_length",
            "packets",
            "bytes",
        ];
        let list = self.read(tenant, name, "list")?;
        let mut out = Vec::new();
        // Click's `list`: the number of elements, then one name per line.
        for el in list
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|l| !l.is_empty())
        {
            let class = self
                .read(tenant, name, &format!("{el}.class"))
                .unwrap_or_default();
            let handlers = self
                .read(tenant, name, &format!("{el}.handlers"))
                .unwrap_or_default();
            let mut values = std::collections::BTreeMap::new();
            for h in handlers.lines() {
                let mut parts = h.split_whitespace();
                let (Some(hn), Some(mode)) = (parts.next(), parts.next()) else {
                    continue;
                };
                if mode.contains('r') && COUNTERS.contains(&hn) {
                    if let Ok(v) = self.read(tenant, name, &format!("{el}.{hn}")) {
                        values.insert(hn.to_string(), v.trim().to_string());
                    }
                }
            }
            out.push(ElementStats {
                name: el.to_string(),
                class: class.trim().to_string(),
                handlers: values,
            });
        }
        Ok(out)
    }

    /// Switch ports: (number, name, counters), of `tenant`'s instances
    /// (all with `None`).
    pub fn ports(&self, tenant: Option<&str>) -> Vec<(u16, String, pronto_switch::PortCounters)> {
        let names: Vec<(u16, String)> = lock(&self.ports)
            .names
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        let mut v: Vec<_> = names
            .into_iter()
            .filter(|(_, n)| tenant.is_none_or(|t| n.split('/').next() == Some(t)))
            .map(|(id, n)| (id, n, self.switch.counters(id).unwrap_or_default()))
            .collect();
        v.sort_by_key(|p| p.0);
        v
    }

    /// Port number of a port name, while attached.
    pub fn port_named(&self, name: &str) -> Option<u16> {
        lock(&self.ports)
            .names
            .iter()
            .find(|(_, n)| n.as_str() == name)
            .map(|(k, _)| *k)
    }

    /// Name of port `id`, while attached.
    pub fn port_name(&self, id: u16) -> Option<String> {
        lock(&self.ports).names.get(&id).cloned()
    }

    /// Counts by state: (instances, running, crashed, failed).
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let all: Vec<Arc<Instance>> = lock(&self.instances).values().cloned().collect();
        let mut c = (all.len(), 0, 0, 0);
        for i in all {
            match lock(&i.status).state {
                Some(State::Running) => c.1 += 1,
                Some(State::Crashed) => c.2 += 1,
                Some(State::Failed) => c.3 += 1,
                _ => {}
            }
        }
        c
    }

    /// Restarts observed, over all instances.
    pub fn restarts(&self) -> u64 {
        let all: Vec<Arc<Instance>> = lock(&self.instances).values().cloned().collect();
        all.iter().map(|i| lock(&i.status).restarts as u64).sum()
    }

    /// Stops every instance (daemon shutdown; the store keeps them).
    pub fn shutdown(&self) {
        self.warm.stop.store(true, Ordering::Relaxed);
        self.warm.wake.notify_all();
        lock(&self.warm.pool).clear();
        // Every supervisor is told at once and stops its sandbox in
        // parallel (a sandbox's end includes removing its cgroups, which
        // the kernel makes slow); then all are waited for.
        let all: Vec<Arc<Instance>> = lock(&self.instances).drain().map(|(_, i)| i).collect();
        let mut waits = Vec::with_capacity(all.len());
        for inst in &all {
            let (tx, rx) = mpsc::sync_channel(1);
            if inst.tx.send(Req::Stop(tx)).is_ok() {
                waits.push(rx);
            }
        }
        for rx in waits {
            let _ = rx.recv();
        }
    }

    /// Attaches a port of this daemon's switch for a peer in this process
    /// (a traffic generator, a benchmark), named `name`, with the
    /// instances' port geometry; returns its number and memory.
    pub fn attach_port(&self, name: &str) -> Result<(u16, PortShm), Failure> {
        let id = self.alloc_port(name.to_string())?;
        let shm = PortShm::create(name, self.opts.geometry)
            .map_err(|e| Failure::Internal(format!("port {name}: {e}")));
        let shm = match shm {
            Ok(s) => s,
            Err(e) => {
                self.free_port(id);
                return Err(e);
            }
        };
        if let Err(e) = self.switch.attach(id, shm.clone()) {
            self.free_port(id);
            return Err(Failure::Internal(format!("port {name}: {e}")));
        }
        Ok((id, shm))
    }

    /// Detaches a port from [`Manager::attach_port`].
    pub fn detach_port(&self, id: u16) {
        self.free_port(id);
    }

    fn alloc_port(&self, name: String) -> Result<u16, Failure> {
        let mut p = lock(&self.ports);
        let id = match p.free.pop() {
            Some(id) => id,
            None if p.next < pronto_switch::switch::MAX_PORTS as u32 => {
                p.next += 1;
                (p.next - 1) as u16
            }
            None => {
                return Err(Failure::Unavailable(
                    "the switch has no free port (65,535 in use)".into(),
                ))
            }
        };
        p.names.insert(id, name);
        Ok(id)
    }

    fn free_port(&self, id: u16) {
        let _ = self.switch.detach(id);
        let mut p = lock(&self.ports);
        p.names.remove(&id);
        p.free.push(id);
    }
}

/// One element's counters.
#[derive(Clone, Debug, Serialize)]
pub struct ElementStats {
    /// Element name.
    pub name: String,
    /// Its class.
    pub class: String,
    /// Counting handlers and their values.
    pub handlers: std::collections::BTreeMap<String, String>,
}

fn view_of(inst: &Instance, pss: Option<u64>) -> InstanceView {
    let spec = lock(&inst.spec).clone();
    let st = lock(&inst.status).clone();
    let interfaces = spec
        .interfaces
        .iter()
        .map(|i| IfaceView {
            name: i.name.clone(),
            mac: i.mac.clone(),
            port: st.ports.iter().find(|(n, _)| *n == i.name).map(|p| p.1),
        })
        .collect();
    InstanceView {
        name: spec.name,
        tenant: spec.tenant,
        state: st.state.unwrap_or(State::Starting),
        config: spec.config,
        memory: spec.memory,
        cpu: spec.cpu,
        pids: spec.pids,
        cpus: spec.cpus,
        interfaces,
        pid: st.pid,
        boot_ms: st.boot_ms,
        restarts: st.restarts,
        last_crash: st.last_crash,
        error: st.error,
        pss_bytes: pss,
        created_unix_ms: spec.created_unix_ms,
        control_sockets: lock(&inst.control).iter().map(|c| c.at.clone()).collect(),
        took_state: Vec::new(),
    }
}

/// A started sandbox with its ports.
struct Running {
    /// Shared with handler calls, which use it from the caller's thread.
    sb: Arc<Mutex<Sandbox>>,
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

fn supervise(
    me: Weak<Manager>,
    inst: Arc<Instance>,
    rx: mpsc::Receiver<Req>,
    mut first: Option<mpsc::SyncSender<Result<(), Failure>>>,
) {
    let mut backoff = MIN_BACKOFF;
    let mut generation = 0u64;
    loop {
        let Some(m) = me.upgrade() else { return };
        generation += 1;
        lock(&inst.status).state = Some(State::Starting);
        let spec = lock(&inst.spec).clone();
        let started = m.start_sandbox(&spec, &inst, generation);
        drop(m);
        let end = match started {
            Ok(mut run) => {
                if let Some(f) = first.take() {
                    let _ = f.send(Ok(()));
                }
                let end = serve(&me, &inst, &rx, &mut run, generation);
                *lock(&inst.live) = None;
                let ran = run.since.elapsed();
                if let Some(m) = me.upgrade() {
                    m.release(&mut run);
                }
                if ran >= HEALTHY_AFTER {
                    backoff = MIN_BACKOFF;
                }
                end
            }
            Err(e) => {
                if let Some(f) = first.take() {
                    let _ = f.send(Err(e));
                    // Not created: the caller removes it.
                    wait_for_stop(&rx);
                    return;
                }
                let mut st = lock(&inst.status);
                st.error = Some(e.to_string());
                match e {
                    Failure::BadRequest(..) => {
                        // The stored configuration does not build (a
                        // restored instance after an upgrade, say): no
                        // point restarting until it is replaced.
                        st.state = Some(State::Failed);
                        drop(st);
                        match wait_failed(&rx, &inst) {
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
                {
                    let mut st = lock(&inst.status);
                    st.state = Some(State::Crashed);
                    st.pid = None;
                    st.restarts += 1;
                    st.last_crash = Some(Crash {
                        at_unix_ms: now_ms(),
                        reason,
                    });
                }
                // Wait out the back-off, answering meanwhile.
                let until = Instant::now() + backoff;
                backoff = (backoff * 2).min(MAX_BACKOFF);
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
    fn f<T>(why: &str) -> Result<T, Failure> {
        Err(Failure::Unavailable(why.to_string()))
    }
    match req {
        Req::Config(_, r) => {
            let _ = r.send(f(why));
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

fn serve(
    me: &Weak<Manager>,
    inst: &Instance,
    rx: &mpsc::Receiver<Req>,
    run: &mut Running,
    generation: u64,
) -> End {
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
                    Ok(text) => {
                        lock(&inst.status).error = None;
                        let _ = reply.send(Ok(took_state(&text)));
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
                let _ = me;
                return End::Stop(Some(reply));
            }
        }
    }
}

fn exit_reason(sb: &mut Sandbox) -> String {
    let oom = sb.oom_kills().unwrap_or(0);
    let status = sb.wait_timeout(Duration::from_secs(2)).ok().flatten();
    let what = match status {
        Some(s) => {
            use std::os::unix::process::ExitStatusExt;
            match (s.code(), s.signal()) {
                (Some(c), _) => format!("exited with status {c}"),
                (_, Some(9)) if oom > 0 => {
                    "killed by the kernel: out of memory (memory limit)".into()
                }
                (_, Some(31)) => {
                    "killed by signal 31 (SIGSYS: a system call outside the sandbox's allow-list)"
                        .into()
                }
                (_, Some(sig)) => format!("killed by signal {sig}"),
                _ => "ended".into(),
            }
        }
        None => {
            let _ = sb.kill();
            "stopped answering; killed".into()
        }
    };
    what
}

/// Checks an instance's CPU list against the CPUs this daemon may run on
/// (and sorts it, without repeats).
fn check_cpus(cpus: &mut Vec<usize>) -> Result<(), Failure> {
    cpus.sort_unstable();
    cpus.dedup();
    let allowed = rustix::thread::sched_getaffinity(None)
        .map_err(|e| Failure::Internal(format!("reading the daemon's CPUs: {e}")))?;
    let mine: Vec<usize> = (0..rustix::thread::CpuSet::MAX_CPU)
        .filter(|&c| allowed.is_set(c))
        .collect();
    if cpus.is_empty() {
        return Err(Failure::BadRequest(
            "cpus: an empty list; leave it out to run on any CPU".into(),
            Some("cpus"),
        ));
    }
    if let Some(c) = cpus.iter().find(|c| !mine.contains(c)) {
        return Err(Failure::BadRequest(
            format!(
                "cpus: CPU {c} is not one this daemon runs on ({})",
                cpu_list(&mine)
            ),
            Some("cpus"),
        ));
    }
    Ok(())
}

/// `0-3,6`: a CPU list as Linux writes it.
pub fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    out.join(",")
}

impl Manager {
    /// Starts `spec`'s sandbox, gives it its ports and configuration, and
    /// runs it.
    fn start_sandbox(
        &self,
        spec: &InstanceSpec,
        inst: &Instance,
        generation: u64,
    ) -> Result<Running, Failure> {
        let t0 = Instant::now();
        let limits = Limits {
            memory_bytes: Some(spec.memory.unwrap_or(self.opts.default_memory)),
            cpu: spec.cpu,
            pids: Some(spec.pids.unwrap_or(8)),
            ..Limits::default()
        };
        let sb = match self.take_warm(&limits) {
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
            let pinned = match check_cpus(&mut now) {
                Err(Failure::BadRequest(why, _)) => Err(format!(
                    "{why}; recreate the instance with --cpus among those"
                )),
                Err(e) => Err(e.to_string()),
                Ok(()) => sb.pin(cpus).map_err(|e| e.to_string()),
            };
            if let Err(why) = pinned {
                let _ = sb.kill();
                return Err(Failure::Internal(why));
            }
        }
        let mut run = Running {
            sb: Arc::new(Mutex::new(sb)),
            ports: Vec::new(),
            watch: 0,
            since: Instant::now(),
        };
        let g = self.opts.geometry;
        let mut names = Vec::new();
        for i in &spec.interfaces {
            let pname = format!("{}/{}/{}", spec.tenant, spec.name, i.name);
            let id = match self.alloc_port(pname.clone()) {
                Ok(id) => id,
                Err(e) => {
                    self.release(&mut run);
                    return Err(e);
                }
            };
            run.ports.push(id);
            let attached = PortShm::create(&pname, g)
                .map_err(|e| e.to_string())
                .and_then(|shm| {
                    self.switch
                        .attach(id, shm.clone())
                        .map_err(|e| e.to_string())?;
                    Ok(shm)
                });
            let shm = match attached {
                Ok(s) => s,
                Err(e) => {
                    self.release(&mut run);
                    return Err(Failure::Internal(format!("port {pname}: {e}")));
                }
            };
            if let Some(m) = i.mac.as_deref().and_then(pronto_switch::control::parse_mac) {
                let _ = self.switch.add_static(m, id);
            }
            // Static entries set through the API follow the port's name.
            for (mac, _) in self
                .store
                .macs()
                .unwrap_or_default()
                .iter()
                .filter(|(_, n)| *n == pname)
            {
                if let Some(m) = pronto_switch::control::parse_mac(mac) {
                    let _ = self.switch.add_static(m, id);
                }
            }
            let given = give_port(&mut lock(&run.sb), &i.name, g, &shm);
            if let Err(e) = given {
                self.release(&mut run);
                return Err(Failure::Internal(format!("handing port {pname} over: {e}")));
            }
            names.push((i.name.clone(), id));
        }
        let configured = lock(&run.sb).configure(&spec.config);
        if let Err(e) = configured {
            self.release(&mut run);
            return Err(match e {
                SandboxError::Remote(t) => Failure::BadRequest(t, Some("config")),
                other => Failure::Internal(other.to_string()),
            });
        }
        let ran = lock(&run.sb).run();
        if let Err(e) = ran {
            self.release(&mut run);
            return Err(Failure::Internal(format!("running the configuration: {e}")));
        }
        run.watch = self.watch(&lock(&run.sb), inst.tx.clone(), generation);
        run.since = Instant::now();
        *lock(&inst.live) = Some(run.sb.clone());
        let mut st = lock(&inst.status);
        st.state = Some(State::Running);
        st.pid = Some(lock(&run.sb).pid());
        st.boot_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
        st.error = None;
        st.ports = names;
        Ok(run)
    }

    fn sandbox_spec(&self, name: String, limits: Limits) -> SandboxSpec {
        let mut ss = SandboxSpec::new(name, &self.opts.program);
        ss.args = vec![
            "instance".into(),
            "--pool-slots".into(),
            self.opts.pool_slots.to_string(),
        ];
        ss.limits = limits;
        ss.root_dir = self.opts.root_dir.clone();
        ss.use_cgroup = self.opts.use_cgroup;
        ss.stdout = Output::Null;
        ss
    }

    /// The limits pre-started sandboxes get (an instance's defaults).
    fn warm_limits(&self) -> Limits {
        Limits {
            memory_bytes: Some(self.opts.default_memory),
            pids: Some(8),
            ..Limits::default()
        }
    }

    /// A pre-started sandbox with `limits` applied, if one is ready.
    fn take_warm(&self, limits: &Limits) -> Option<Sandbox> {
        let sb = lock(&self.warm.pool).pop();
        self.warm.wake.notify_one();
        let sb = sb?;
        if *limits == self.warm_limits() {
            return Some(sb);
        }
        if let Some(cg) = sb.cgroup() {
            if cg.update(limits).is_err() {
                // Limits this cgroup cannot take (a v2 controller it was
                // made without): start a fresh sandbox instead.
                let _ = sb.kill();
                return None;
            }
        }
        Some(sb)
    }

    /// Keeps `opts.warm` sandboxes started and waiting for an instance:
    /// creating an instance then skips the clone, the namespaces, the
    /// cgroup and the program's start (most of its boot time).
    fn refill(me: Weak<Manager>) {
        let mut n = 0u64;
        loop {
            let Some(m) = me.upgrade() else { return };
            let want = m.opts.warm;
            {
                let mut pool = lock(&m.warm.pool);
                while pool.len() >= want || m.warm.stop.load(Ordering::Relaxed) {
                    if m.warm.stop.load(Ordering::Relaxed) {
                        pool.clear();
                        return;
                    }
                    pool = m
                        .warm
                        .wake
                        .wait_timeout(pool, Duration::from_secs(1))
                        .map(|(g, _)| g)
                        .unwrap_or_else(|e| e.into_inner().0);
                }
            }
            // Let the instance that just took a sandbox finish starting
            // before this one competes with it for the CPUs (unless the
            // pool is empty: then the next request would start cold).
            if !lock(&m.warm.pool).is_empty() {
                std::thread::sleep(REFILL_DELAY);
            }
            n += 1;
            let ss = m.sandbox_spec(format!("warm{n}"), m.warm_limits());
            drop(m);
            match Sandbox::spawn(&ss) {
                Ok(mut sb) => {
                    // Ready once it answers: the program has started.
                    if sb.ping().is_ok() {
                        if let Some(m) = me.upgrade() {
                            lock(&m.warm.pool).push(sb);
                        }
                    }
                }
                Err(_) => {
                    // Instances start cold (and report the error) meanwhile.
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        }
    }

    /// Kills what is left of a run and gives its ports back.
    fn release(&self, run: &mut Running) {
        if lock(&run.sb).try_wait().ok().flatten().is_none() {
            let _ = lock(&run.sb).kill();
            let _ = lock(&run.sb).wait();
        }
        if run.watch != 0 {
            lock(&self.reaper.watched).remove(&run.watch);
            run.watch = 0;
        }
        for id in run.ports.drain(..) {
            self.free_port(id);
        }
    }

    /// Watches the sandbox's process; its end is sent as `Exited`.
    fn watch(&self, sb: &Sandbox, tx: mpsc::Sender<Req>, generation: u64) -> u64 {
        let Some(pid) = rustix::process::Pid::from_raw(sb.pid() as i32) else {
            return 0;
        };
        let Ok(fd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
            return 0;
        };
        let key = self.reaper.next_key.fetch_add(1, Ordering::Relaxed);
        if epoll::add(
            &self.reaper.epoll,
            fd.as_fd(),
            epoll::EventData::new_u64(key),
            epoll::EventFlags::IN | epoll::EventFlags::ONESHOT,
        )
        .is_err()
        {
            return 0;
        }
        lock(&self.reaper.watched).insert(key, (tx, generation, fd));
        key
    }
}

fn reap(r: &Reaper) {
    let mut events = Vec::with_capacity(64);
    loop {
        events.clear();
        match epoll::wait(&r.epoll, rustix::buffer::spare_capacity(&mut events), None) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
        for ev in &events {
            let key = ev.data.u64();
            if let Some((tx, generation, fd)) = lock(&r.watched).remove(&key) {
                let _ = epoll::delete(&r.epoll, fd.as_fd());
                let _ = tx.send(Req::Exited(generation));
            }
        }
    }
}

/// Hands a port's memory and doorbells to the instance (`PORT`).
fn give_port(
    sb: &mut Sandbox,
    iface: &str,
    g: Geometry,
    shm: &PortShm,
) -> Result<(), SandboxError> {
    sb.give_port(iface, (g.slots, g.ring), &shm.fds())
}
