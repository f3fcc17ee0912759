//! The instance manager: the switch, the instances and the store, and
//! what the API asks of them.
//!
//! - this module: the operations (create, remove, reconfigure, handler
//!   calls, lists, quotas). An operation on an instance holds the
//!   instance's name until it has answered ([`names::NameLocks`]), and
//!   what it changes is committed to the store before it answers: a
//!   create is stored once its instance runs (a failed one leaves nothing,
//!   neither record nor sandbox nor cgroup), a delete is removed from the
//!   store before its instance is stopped, a reconfiguration is stored
//!   once the candidate was built in a sandbox of its own ([`check`]).
//! - [`supervisor`]: one thread per instance that owns its sandbox;
//!   [`reaper`]: the thread that sees sandboxes end; [`warm`]: the pool of
//!   pre-started sandboxes; [`cgroups`]: the daemon's own cgroup
//!   directory; [`ports`]: switch port numbers; [`cpus`], [`names`]: what
//!   the API accepts; [`view`]: what it shows.

mod cgroups;
mod check;
pub mod cpus;
pub mod names;
mod ports;
mod reaper;
mod registry;
mod supervisor;
pub mod uplink;
pub mod view;
pub mod vxlan;
mod warm;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pronto_runtime::controlsocket::{Connections, SocketSpec};
use pronto_sandbox::{Limits, Output, Sandbox, SandboxSpec};
use pronto_switch::{Geometry, PortShm, SwitchHandle};
use serde_json::{Map, Value};

use crate::control::Control;
pub use crate::failure::Failure;
use crate::quota::{Ask, PortRange, Quota, Usage};
use crate::store::{InstanceSpec, Store};
pub use cpus::cpu_list;
pub use names::{check_group, check_name, check_tenant};

/// The longest poll window an instance may ask for (one second, as
/// `pronto run --poll-window`).
pub const MAX_POLL_WINDOW_US: u64 = 1_000_000;

/// Checks an instance's `poll_window_us`.
pub fn check_poll_window(us: u64) -> Result<(), String> {
    if us > MAX_POLL_WINDOW_US {
        return Err(format!(
            "poll_window_us: {us} is more than the longest poll window, \
             {MAX_POLL_WINDOW_US} (one second); 0 or leaving it out makes the instance \
             sleep as soon as it finds no packets"
        ));
    }
    Ok(())
}
use supervisor::Req;
pub use view::{Crash, ElementStats, IfaceView, InstanceView, State};

/// Supervisor threads' stacks: they only shuttle requests.
const SUPERVISOR_STACK: usize = 256 << 10;
/// How long a sandbox may take to answer one request.
/// How often the switch's watchdog looks for switching threads that ended.
const SWITCH_WATCH_INTERVAL: Duration = Duration::from_millis(250);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Tasks of an instance that names no limit.
pub const DEFAULT_PIDS: u64 = 8;

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
    /// Pin switching thread `i` to CPU `switch_cpu + i` (none: any CPU).
    pub switch_cpu: Option<usize>,
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
    /// The loopback ports tenants' `ControlSocket(TCP, ...)` may use
    /// unless their quota says otherwise.
    pub control_ports: PortRange,
}

/// The default control socket ports, 20000-20999.
pub const DEFAULT_CONTROL_PORTS: PortRange = PortRange {
    first: 20000,
    last: 20999,
};

/// One instance: what it should be, what it is, and its supervisor.
pub(crate) struct Instance {
    pub(crate) spec: Mutex<InstanceSpec>,
    pub(crate) status: Mutex<view::Status>,
    tx: mpsc::Sender<Req>,
    /// The running sandbox, for handler calls made straight from the
    /// caller's thread (no hop through the supervisor).
    live: Mutex<Option<Arc<Mutex<Sandbox>>>>,
    /// The configuration's `ControlSocket`s, opened by the daemon.
    pub(crate) control: Mutex<Vec<Control>>,
    /// Its interfaces' switch port numbers, held for as long as the
    /// instance exists (across restarts), with their addresses routed to
    /// them even while no process is attached.
    pub(crate) ports: Mutex<Vec<(String, u16)>>,
}

impl Instance {
    /// A new instance (state starting) and its supervisor's channel.
    pub(crate) fn new(spec: InstanceSpec) -> (Arc<Instance>, mpsc::Receiver<Req>) {
        let (tx, rx) = mpsc::channel();
        let inst = Arc::new(Instance {
            spec: Mutex::new(spec),
            status: Mutex::new(view::Status {
                state: Some(State::Starting),
                ..view::Status::default()
            }),
            tx,
            live: Mutex::new(None),
            control: Mutex::new(Vec::new()),
            ports: Mutex::new(Vec::new()),
        });
        (inst, rx)
    }
}

/// A tenant's quota and its control sockets' connections.
struct Tenant {
    quota: Quota,
    connections: Arc<Connections>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The instance manager: the switch, the instances, the store.
pub struct Manager {
    opts: ManagerOptions,
    switch: SwitchHandle,
    store: Store,
    instances: Mutex<registry::Registry>,
    names: names::NameLocks,
    tenants: Mutex<HashMap<String, Tenant>>,
    ports: Mutex<ports::PortNumbers>,
    reaper: Arc<reaper::Reaper>,
    warm: warm::Warm,
    /// The switch's ports on Linux interfaces (`--uplink`).
    uplinks: Mutex<Vec<uplink::Uplink>>,
    /// The switch's VXLAN uplink (`--vxlan`).
    vxlan: Mutex<Option<vxlan::Vxlan>>,
    /// This daemon's cgroup directory (`pronto/prontod-PID`).
    cgroup_parent: String,
    me: Weak<Manager>,
}

impl Manager {
    /// Starts the switch and the reaper, then every instance in `store`.
    pub fn start(opts: ManagerOptions, store: Store) -> Result<Arc<Manager>, String> {
        let switch = SwitchHandle::spawn(pronto_switch::Config {
            threads: opts.switch_threads,
            cpu: opts.switch_cpu,
            ..pronto_switch::Config::default()
        })
        .map_err(|e| format!("starting the switch: {e}"))?;
        let reaper = reaper::Reaper::start(SUPERVISOR_STACK)?;
        let specs = store.instances().map_err(|e| e.to_string())?;
        let quotas = store.quotas().map_err(|e| e.to_string())?;
        let cgroup_parent = cgroups::own_parent();
        if opts.use_cgroup {
            cgroups::sweep(&SandboxSpec::new("x", "x").cgroup_root);
        }
        let m = Arc::new_cyclic(|me| Manager {
            opts,
            switch,
            store,
            instances: Mutex::new(registry::Registry::default()),
            names: names::NameLocks::default(),
            tenants: Mutex::new(HashMap::new()),
            ports: Mutex::new(ports::PortNumbers::new(
                pronto_switch::switch::MAX_PORTS as u32,
            )),
            reaper,
            uplinks: Mutex::new(Vec::new()),
            vxlan: Mutex::new(None),
            warm: warm::Warm::default(),
            cgroup_parent,
            me: me.clone(),
        });
        for (t, q) in quotas {
            m.tenant_entry(&t, |e| {
                e.connections.set_max(q.control_connections as usize);
                e.quota = q;
            });
        }
        if m.opts.warm > 0 {
            warm::Warm::start(&m)?;
        }
        Manager::watch_switch(&m)?;
        // Every restored instance's addresses route to its ports before
        // any of them starts: frames one sends to another not yet started
        // are dropped and counted, not flooded to every tenant's ports.
        let mut restored = Vec::new();
        for spec in specs {
            let (inst, rx) = Instance::new(spec.clone());
            for i in &spec.interfaces {
                m.hold_port(&spec, &inst, i)
                    .map_err(|e| format!("restoring {}: {e}", spec.key()))?;
            }
            restored.push((spec.key(), inst, rx));
        }
        for (key, inst, rx) in restored {
            // Restored instances start in the background; a failure shows
            // in their status. Quotas are not checked again.
            let (tenant, ask) = {
                let s = lock(&inst.spec);
                (s.tenant.clone(), m.ask_of(&s))
            };
            lock(&m.instances).insert(key.clone(), inst.clone(), &tenant, &ask);
            if let Err(e) = m.supervise(inst, rx, None) {
                lock(&m.instances).remove(&key);
                return Err(e.to_string());
            }
        }
        Ok(m)
    }

    /// The memory limit of instances that name none (`--memory`).
    pub fn default_memory(&self) -> u64 {
        self.opts.default_memory
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The switch.
    pub fn switch(&self) -> &SwitchHandle {
        &self.switch
    }

    /// Starts the supervisor thread of `inst`.
    fn supervise(
        &self,
        inst: Arc<Instance>,
        rx: mpsc::Receiver<Req>,
        first: Option<mpsc::SyncSender<Result<(), Failure>>>,
    ) -> Result<(), Failure> {
        let me = self.me.clone();
        let key = lock(&inst.spec).key();
        std::thread::Builder::new()
            .name(format!("prontod-{key}"))
            .stack_size(SUPERVISOR_STACK)
            .spawn(move || supervisor::supervise(me, inst, rx, first))
            .map(|_| ())
            .map_err(|e| Failure::Internal(format!("starting a supervisor thread: {e}")))
    }

    /// Memory limit of `spec` (the default when it names none).
    pub(crate) fn memory_of(&self, spec: &InstanceSpec) -> u64 {
        spec.memory.unwrap_or(self.opts.default_memory)
    }

    /// The geometry of `spec`'s switch ports: its own, else the daemon's
    /// (an instance's own was checked when it was created).
    pub(crate) fn geometry_of(&self, spec: &InstanceSpec) -> Geometry {
        spec.port_geometry
            .and_then(|g| g.geometry().ok())
            .unwrap_or(self.opts.geometry)
    }

    /// The most packets an instance with `spec`'s memory limit may hold:
    /// its packet pool's limit (three quarters of the memory, a packet
    /// slot each), so that a configuration whose queues could hold more
    /// is refused with a message rather than killed by the kernel when
    /// they fill.
    fn pool_limit_of(&self, spec: &InstanceSpec) -> u64 {
        let slots = self.memory_of(spec) / 4 * 3 / pronto_packet::SLOT_STRIDE as u64;
        slots.max(self.opts.pool_slots as u64)
    }

    /// Task limit of `spec`.
    fn pids_of(&self, spec: &InstanceSpec) -> u64 {
        spec.pids.unwrap_or(DEFAULT_PIDS)
    }

    /// What an instance of `spec` counts against its tenant's quota (an
    /// instance that names no CPU share counts as one CPU).
    pub(crate) fn ask_of(&self, spec: &InstanceSpec) -> Ask {
        Ask {
            memory: self.memory_of(spec),
            cpu: spec.cpu.unwrap_or(1.0),
            pids: self.pids_of(spec),
            interfaces: spec.interfaces.len() as u32,
        }
    }

    /// The limits pre-started sandboxes get (an instance's defaults).
    fn standard_limits(&self) -> Limits {
        Limits {
            memory_bytes: Some(self.opts.default_memory),
            pids: Some(DEFAULT_PIDS),
            ..Limits::default()
        }
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
        ss.cgroup_parent = self.cgroup_parent.clone();
        ss.stdout = Output::Null;
        ss
    }

    /// Checks what `spec` asks for on its own (names, interfaces, limits,
    /// CPUs); sorts its CPU list.
    pub(crate) fn validate(spec: &mut InstanceSpec) -> Result<(), Failure> {
        check_tenant(&spec.tenant)?;
        check_name(&spec.name)?;
        if let Some(g) = &spec.group {
            check_group(g)?;
        }
        names::check_ifaces(&spec.interfaces)?;
        if let Some(c) = spec.cpu {
            if !(c > 0.0 && c <= crate::quota::MAX_CPU) {
                return Err(Failure::BadRequest(
                    format!(
                        "cpu: {c} is not a share of CPUs (0 < cpu <= {})",
                        crate::quota::MAX_CPU
                    ),
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
            cpus::check_cpus(cpus, &cpus::daemon_cpus()?)?;
        }
        if let Some(g) = &spec.port_geometry {
            g.geometry()
                .map_err(|m| Failure::BadRequest(m, Some("port_geometry")))?;
        }
        if let Some(w) = spec.poll_window_us {
            check_poll_window(w).map_err(|m| Failure::BadRequest(m, Some("poll_window_us")))?;
        }
        Ok(())
    }

    /// Refuses ports of an instance's own geometry larger than its memory
    /// limit: the switch maps them for it, and a tenant must not buy memory
    /// with ports (the daemon's default geometry is the operator's).
    fn check_port_memory(&self, spec: &InstanceSpec) -> Result<(), Failure> {
        if spec.port_geometry.is_none() {
            return Ok(());
        }
        let per_port = self.geometry_of(spec).region_len() as u64;
        let ports = per_port * spec.interfaces.len() as u64;
        let memory = self.memory_of(spec);
        if ports > memory {
            let g = self.geometry_of(spec);
            return Err(Failure::BadRequest(
                format!(
                    "port_geometry: {} interface{} of {} slots and rings of {} take {ports} bytes \
                     ({per_port} each), more than the instance's memory limit of {memory} bytes; \
                     give it more `memory` or its ports fewer slots",
                    spec.interfaces.len(),
                    if spec.interfaces.len() == 1 { "" } else { "s" },
                    g.slots,
                    g.ring
                ),
                Some("port_geometry"),
            ));
        }
        Ok(())
    }

    /// Creates an instance: starts it, and keeps it (in the store, then
    /// in the answer) only if it runs. Over the tenant's quota, or failed,
    /// it leaves nothing behind.
    pub fn create(&self, mut spec: InstanceSpec) -> Result<InstanceView, Failure> {
        Self::validate(&mut spec)?;
        self.check_port_memory(&spec)?;
        spec.created_unix_ms = now_ms();
        let key = spec.key();
        let _held = self.names.lock(&key);
        let (inst, rx) = Instance::new(spec.clone());
        {
            let mut all = lock(&self.instances);
            if all.contains_key(&key) {
                return Err(Failure::Conflict(
                    format!("instance `{}` already exists", spec.name),
                    Some("name"),
                ));
            }
            let ask = self.ask_of(&spec);
            let used = all.usage(&spec.tenant);
            let quota = self.quota(&spec.tenant);
            crate::quota::check(&spec.tenant, &quota, &used, &ask)
                .map_err(|(m, f)| Failure::OverQuota(m, f))?;
            // Counted from now on by other creates of this tenant.
            all.insert(key.clone(), inst.clone(), &spec.tenant, &ask);
        }
        let (tx, first) = mpsc::sync_channel(1);
        let started = self.supervise(inst.clone(), rx, Some(tx)).and_then(|()| {
            first
                .recv()
                .unwrap_or_else(|_| Err(Failure::Internal("the supervisor ended".into())))
        });
        let stored = started.and_then(|()| {
            self.store
                .put_instance(&spec)
                .map_err(|e| Failure::Internal(e.to_string()))
        });
        if let Err(e) = stored {
            self.stop(&key);
            return Err(e);
        }
        Ok(self.view_inst(&inst, None))
    }

    fn get(&self, tenant: &str, name: &str) -> Result<Arc<Instance>, Failure> {
        lock(&self.instances)
            .get(&crate::store::key(tenant, name))
            .cloned()
            .ok_or_else(|| Failure::NotFound(format!("no instance `{name}`")))
    }

    /// Stops the supervisor of `key` and waits for it (its sandbox ended,
    /// its cgroup removed, its control sockets closed).
    fn stop(&self, key: &str) {
        let inst = lock(&self.instances).get(key).cloned();
        if let Some(inst) = inst {
            lock(&inst.control).clear();
            let (tx, rx) = mpsc::sync_channel(1);
            if inst.tx.send(Req::Stop(tx)).is_ok() {
                let _ = rx.recv();
            }
        }
        lock(&self.instances).remove(key);
    }

    /// Opens the control sockets of `wanted` that `current` lacks, in the
    /// tenant's port range and connection limit.
    fn open_controls(
        &self,
        tenant: &str,
        name: &str,
        wanted: &[(String, SocketSpec)],
        current: &[Control],
    ) -> Result<Vec<Control>, Failure> {
        if wanted.is_empty() {
            return Ok(Vec::new());
        }
        let handlers = Arc::new(crate::control::InstanceHandlers {
            manager: self.me.clone(),
            tenant: tenant.to_string(),
            name: name.to_string(),
        });
        let dir = self.opts.control_dir.join(tenant).join(name);
        let policy = crate::control::Policy {
            dir: &dir,
            tenant,
            ports: self.quota(tenant).control_ports,
            connections: self.connections(tenant),
        };
        crate::control::open(&policy, wanted, current, handlers)
    }

    /// Destroys an instance: forgotten by the store first, then stopped.
    pub fn remove(&self, tenant: &str, name: &str) -> Result<(), Failure> {
        let key = crate::store::key(tenant, name);
        let _held = self.names.lock(&key);
        self.get(tenant, name)?;
        self.store
            .remove_instance(tenant, name)
            .map_err(|e| Failure::Internal(e.to_string()))?;
        self.stop(&key);
        Ok(())
    }

    /// Instances of `tenant` (all with `None`), by name.
    pub fn list(&self, tenant: Option<&str>) -> Vec<InstanceView> {
        let all: Vec<Arc<Instance>> = lock(&self.instances).values().cloned().collect();
        let mut v: Vec<InstanceView> = all
            .iter()
            .filter(|i| tenant.is_none_or(|t| lock(&i.spec).tenant == t))
            .map(|i| self.view_inst(i, None))
            .collect();
        v.sort_by(|a, b| (&a.tenant, &a.name).cmp(&(&b.tenant, &b.name)));
        v
    }

    fn view_inst(&self, inst: &Instance, pss: Option<u64>) -> InstanceView {
        let spec = lock(&inst.spec).clone();
        let applied = view::Applied {
            memory: self.memory_of(&spec),
            pids: self.pids_of(&spec),
            geometry: crate::store::PortGeometrySpec::of(self.geometry_of(&spec)),
        };
        view::view_of(inst, pss, applied)
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
        Ok(self.view_inst(&inst, pss))
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
        r.map_err(supervisor::call_failure)
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
        r.map_err(supervisor::call_failure)
    }

    /// Replaces the configuration of a running instance. The candidate is
    /// built first in a sandbox of its own, under what the instance has
    /// left: one that cannot be built (in memory, in time, at all) is
    /// refused and the running configuration is not touched. Then its new
    /// control sockets are opened, it is stored, and the instance takes it
    /// (with the old one's state).
    pub fn reconfigure(
        &self,
        tenant: &str,
        name: &str,
        config: &str,
    ) -> Result<InstanceView, Failure> {
        let key = crate::store::key(tenant, name);
        let _held = self.names.lock(&key);
        let inst = self.get(tenant, name)?;
        let old = lock(&inst.spec).clone();
        let wanted = self.check_candidate(&inst, &old, config)?;
        let new = {
            let current = lock(&inst.control);
            self.open_controls(tenant, name, &wanted, &current)?
        };
        // On failure from here the new sockets close (dropped); the old
        // ones stay.
        let mut next = old.clone();
        next.config = config.to_string();
        self.store
            .put_instance(&next)
            .map_err(|e| Failure::Internal(e.to_string()))?;
        let (tx, rx) = mpsc::sync_channel(1);
        let gone = || Failure::Unavailable(format!("instance `{name}` is being removed"));
        let took = inst
            .tx
            .send(Req::Config(config.to_string(), tx))
            .map_err(|_| gone())
            .and_then(|()| rx.recv().unwrap_or_else(|_| Err(gone())));
        let took = match took {
            Ok(t) => t,
            Err(e) => {
                // The instance runs the old configuration: so does the
                // store again.
                let _ = self.store.put_instance(&old);
                return Err(e);
            }
        };
        crate::control::commit(&mut lock(&inst.control), &wanted, new);
        let mut view = self.view_inst(&inst, None);
        view.took_state = took;
        Ok(view)
    }

    /// Sets (or, with `None`, lifts) an instance's rate limit: stored,
    /// then applied at once to each of its attached switch ports (and on
    /// every later start).
    pub fn set_rate_limit(
        &self,
        tenant: &str,
        name: &str,
        limit: Option<crate::store::RateLimitSpec>,
    ) -> Result<InstanceView, Failure> {
        self.update_spec(
            tenant,
            name,
            |spec| spec.rate_limit = limit,
            |_, ports| {
                let l = limit.map(|l| l.limit()).unwrap_or_default();
                for id in ports {
                    self.switch.set_rate_limit(id, l);
                }
                Ok(())
            },
        )
    }

    /// Sets an instance's weight while it runs: its sandbox's CPU weight
    /// (the cgroup's) and its ports' weight on the switch, at once, and in
    /// the store for its next start. The caller checked the range.
    pub fn set_weight(
        &self,
        tenant: &str,
        name: &str,
        weight: u32,
    ) -> Result<InstanceView, Failure> {
        self.update_spec(
            tenant,
            name,
            |spec| spec.weight = Some(weight),
            |inst, ports| {
                let live = lock(&inst.live).clone();
                if let Some(sb) = live {
                    if let Some(cg) = lock(&sb).cgroup() {
                        let only_weight = pronto_sandbox::Limits {
                            memory_bytes: None,
                            cpu: None,
                            pids: None,
                            cpu_weight: Some(weight),
                            ..pronto_sandbox::Limits::default()
                        };
                        cg.update(&only_weight)
                            .map_err(|e| Failure::Internal(format!("instance `{name}`: {e}")))?;
                    }
                }
                for id in ports {
                    self.switch.set_weight(id, weight);
                }
                Ok(())
            },
        )
    }

    /// Changes a field of a running instance's spec without restarting
    /// it, one operation at a time per name: `change` edits a copy of the
    /// spec, which is stored (for the next start), then `apply` gives it
    /// to the running instance (`inst`, and the switch ports of its
    /// interfaces attached now); the copy becomes the instance's spec once
    /// `apply` succeeded.
    fn update_spec(
        &self,
        tenant: &str,
        name: &str,
        change: impl FnOnce(&mut crate::store::InstanceSpec),
        apply: impl FnOnce(&Instance, &mut dyn Iterator<Item = u16>) -> Result<(), Failure>,
    ) -> Result<InstanceView, Failure> {
        let key = crate::store::key(tenant, name);
        let _held = self.names.lock(&key);
        let inst = self.get(tenant, name)?;
        let mut next = lock(&inst.spec).clone();
        change(&mut next);
        self.store
            .put_instance(&next)
            .map_err(|e| Failure::Internal(e.to_string()))?;
        let mut ports = next
            .interfaces
            .iter()
            .filter_map(|i| self.port_named(&format!("{tenant}/{name}/{}", i.name)));
        apply(&inst, &mut ports)?;
        *lock(&inst.spec) = next;
        Ok(self.view_inst(&inst, None))
    }

    /// Port `id`'s rate limit on the switch (its instance's `rate_limit`).
    pub fn port_rate_limit(&self, id: u16) -> Option<crate::store::RateLimitSpec> {
        self.switch
            .rate_limit(id)
            .and_then(crate::store::RateLimitSpec::from_limit)
    }

    /// Per-element counters: what every element of the instance's
    /// configuration counted and dropped (by reason), read in one round
    /// trip (the router's `counters` handler).
    pub fn element_stats(&self, tenant: &str, name: &str) -> Result<Vec<ElementStats>, Failure> {
        let text = self.read(tenant, name, "counters")?;
        Ok(text
            .lines()
            .filter_map(pronto_runtime::CountersLine::parse)
            .map(ElementStats::from_line)
            .collect())
    }

    /// Runs `f` on tenant `t`'s entry, made with the defaults if missing.
    fn tenant_entry<T>(&self, t: &str, f: impl FnOnce(&mut Tenant) -> T) -> T {
        let mut all = lock(&self.tenants);
        let e = all.entry(t.to_string()).or_insert_with(|| {
            let quota = Quota::defaults(self.opts.control_ports);
            Tenant {
                connections: Connections::new(
                    quota.control_connections as usize,
                    "this tenant's control sockets",
                ),
                quota,
            }
        });
        f(e)
    }

    /// Tenant `t`'s quota.
    pub fn quota(&self, t: &str) -> Quota {
        self.tenant_entry(t, |e| e.quota.clone())
    }

    /// The connections of tenant `t`'s control sockets.
    fn connections(&self, t: &str) -> Arc<Connections> {
        self.tenant_entry(t, |e| e.connections.clone())
    }

    /// Changes tenant `t`'s quota by the fields of `patch` (stored first);
    /// the quota now. Instances over the new quota keep running; new ones
    /// must fit.
    pub fn set_quota(&self, t: &str, patch: &Map<String, Value>) -> Result<Quota, Failure> {
        let mut q = self.quota(t);
        q.apply(patch).map_err(|(m, field)| {
            let field: &'static str = match field.as_str() {
                "instances" => "instances",
                "memory" => "memory",
                "cpu" => "cpu",
                "pids" => "pids",
                "interfaces" => "interfaces",
                "control_ports" => "control_ports",
                "control_connections" => "control_connections",
                // An unknown field: named in the message; `field` of the
                // answer is set by the API, which knows it.
                _ => "quota",
            };
            Failure::BadRequest(m, Some(field))
        })?;
        self.store
            .put_quota(t, &q)
            .map_err(|e| Failure::Internal(e.to_string()))?;
        self.tenant_entry(t, |e| {
            e.connections.set_max(q.control_connections as usize);
            e.quota = q.clone();
        });
        Ok(q)
    }

    /// Forgets tenant `t`'s quota and connection count (the tenant was
    /// removed).
    pub fn forget_tenant(&self, t: &str) {
        lock(&self.tenants).remove(t);
    }

    /// What tenant `t`'s instances have now.
    pub fn usage(&self, t: &str) -> Usage {
        let mut u = lock(&self.instances).usage(t);
        u.control_connections = self.connections(t).open();
        u
    }

    /// Starts the switch's watchdog: a thread that, every
    /// `SWITCH_WATCH_INTERVAL`, restarts any switching thread that ended (a
    /// panic or an error from the kernel) with the ports it served, and
    /// says so on standard error. It ends with the manager.
    fn watch_switch(m: &Arc<Manager>) -> Result<(), String> {
        let me = Arc::downgrade(m);
        std::thread::Builder::new()
            .name("prontod-switch-watch".into())
            .stack_size(SUPERVISOR_STACK)
            .spawn(move || loop {
                std::thread::sleep(SWITCH_WATCH_INTERVAL);
                let Some(m) = me.upgrade() else { return };
                for r in m.switch.revive() {
                    match r {
                        Ok(r) => eprintln!(
                            "prontod: switching thread {} had ended ({}); restarted with its {} port(s)",
                            r.thread, r.reason, r.ports
                        ),
                        Err(e) => eprintln!("prontod: restarting a switching thread: {e}"),
                    }
                }
            })
            .map_err(|e| format!("starting the switch's watchdog: {e}"))?;
        Ok(())
    }

    /// The switching threads: ports, alive, restarts, rounds.
    pub fn switch_threads(&self) -> Vec<pronto_switch::ThreadInfo> {
        self.switch.threads_info()
    }

    /// Restarts switching thread `t` (stopping it first if it runs); the
    /// new thread takes over its ports, their rings, MAC entries and
    /// counters. For an operator whose thread is stuck, and for the fault
    /// campaign.
    pub fn restart_switch_thread(&self, t: usize) -> Result<pronto_switch::Revived, String> {
        self.switch.restart_thread(t).map_err(|e| e.to_string())
    }

    /// Switch ports: (number, name, counters), of `tenant`'s instances
    /// (all with `None`).
    pub fn ports(&self, tenant: Option<&str>) -> Vec<(u16, String, pronto_switch::PortCounters)> {
        let names = lock(&self.ports).all();
        let mut v: Vec<_> = names
            .into_iter()
            .filter(|(_, n)| tenant.is_none_or(|t| n.split('/').next() == Some(t)))
            .map(|(id, n)| (id, n, self.switch.counters(id).unwrap_or_default()))
            .collect();
        v.sort_by_key(|p| p.0);
        v
    }

    /// Starts a capture on switch port `id` for `tenant` (`None`: the
    /// admin, any port; a tenant only its own instances' ports). Returns
    /// the port's name and the capture.
    pub fn capture(
        &self,
        tenant: Option<&str>,
        id: u16,
        spec: pronto_switch::CaptureSpec,
    ) -> Result<(String, pronto_switch::Capture), Failure> {
        let name = self
            .port_name(id)
            .filter(|n| tenant.is_none_or(|t| n.split('/').next() == Some(t)))
            .ok_or_else(|| Failure::NotFound(format!("no switch port {id} (`pronto ports`)")))?;
        let cap = self
            .switch
            .capture(id, spec)
            .map_err(|e| Failure::Conflict(format!("port {id} ({name}): {e}"), None))?;
        Ok((name, cap))
    }

    /// Port `id`'s weight on the switch (its instance's `weight`).
    pub fn port_weight(&self, id: u16) -> u32 {
        self.switch
            .weight(id)
            .unwrap_or(pronto_switch::switch::DEFAULT_WEIGHT)
    }

    /// Port `id`'s geometry, while attached.
    pub fn port_geometry(&self, id: u16) -> Option<crate::store::PortGeometrySpec> {
        self.switch
            .geometry(id)
            .map(crate::store::PortGeometrySpec::of)
    }

    /// Port number of a port name, while attached.
    pub fn port_named(&self, name: &str) -> Option<u16> {
        lock(&self.ports).named(name)
    }

    /// Name of port `id`, while attached.
    pub fn port_name(&self, id: u16) -> Option<String> {
        lock(&self.ports).name(id).map(str::to_string)
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

    /// Stops every instance (daemon shutdown; the store keeps them), the
    /// warm pool, and removes the daemon's cgroup directory.
    pub fn shutdown(&self) {
        // No more pre-starts; the thread that made them stays until the
        // instances started from them are stopped (they die with it).
        self.warm.halt();
        let uplinks: Vec<_> = lock(&self.uplinks).drain(..).collect();
        for u in uplinks {
            let port = u.port;
            drop(u);
            self.free_port(port);
        }
        if let Some(v) = lock(&self.vxlan).take() {
            let port = v.port;
            drop(v);
            self.free_port(port);
        }
        // Every supervisor is told at once and stops its sandbox in
        // parallel (a sandbox's end includes removing its cgroups, which
        // the kernel makes slow); then all are waited for.
        let all: Vec<Arc<Instance>> = lock(&self.instances).drain();
        let mut waits = Vec::with_capacity(all.len());
        for inst in &all {
            lock(&inst.control).clear();
            let (tx, rx) = mpsc::sync_channel(1);
            if inst.tx.send(Req::Stop(tx)).is_ok() {
                waits.push(rx);
            }
        }
        for rx in waits {
            let _ = rx.recv();
        }
        self.warm.stop();
        if self.opts.use_cgroup {
            let root = SandboxSpec::new("x", "x").cgroup_root;
            if let Err(e) = pronto_sandbox::cgroup::remove_tree(&root, &self.cgroup_parent) {
                eprintln!("prontod: {e}");
            }
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

    /// Makes Linux interface `iface` a port of the switch, named
    /// `uplink/IFACE` (see [`uplink`]); returns its port number.
    pub fn add_uplink(&self, iface: &str) -> Result<u16, Failure> {
        if lock(&self.uplinks).iter().any(|u| u.iface == iface) {
            return Err(Failure::Conflict(
                format!("{iface} is already an uplink"),
                None,
            ));
        }
        let (id, shm) = self.attach_port(&format!("uplink/{iface}"))?;
        match uplink::Uplink::start(iface, id, shm) {
            Ok(u) => {
                lock(&self.uplinks).push(u);
                Ok(id)
            }
            Err(e) => {
                self.free_port(id);
                Err(Failure::BadRequest(e, None))
            }
        }
    }

    /// Attaches the VXLAN uplink (see [`vxlan`]), port `vxlan/VNI`: its
    /// remote MACs become static entries pointing at it (their addresses
    /// answered by the switch), and it takes broadcasts only when its
    /// flood list is not empty. Returns its port number.
    pub fn add_vxlan(&self, spec: &vxlan::VxlanSpec) -> Result<u16, Failure> {
        let mut held = lock(&self.vxlan);
        if held.is_some() {
            return Err(Failure::Conflict(
                "the switch has a VXLAN uplink already".into(),
                None,
            ));
        }
        let (id, shm) = self.attach_port(&format!("vxlan/{}", spec.vni))?;
        let v = match vxlan::Vxlan::start(spec, id, shm) {
            Ok(v) => v,
            Err(e) => {
                self.free_port(id);
                return Err(Failure::BadRequest(e, None));
            }
        };
        for r in &spec.remotes {
            if !self.switch.add_static(r.mac, id).unwrap_or(false) {
                drop(v);
                self.free_port(id);
                return Err(Failure::Unavailable(
                    "the switch's MAC table is full: no room for the VXLAN remotes".into(),
                ));
            }
            self.answer_for(r, id);
        }
        self.switch.set_broadcast(id, !spec.flood.is_empty());
        *held = Some(v);
        Ok(id)
    }

    /// The switch answers ARP and Neighbor Solicitations for remote `r`'s
    /// addresses (behind port `id`, the VXLAN uplink).
    fn answer_for(&self, r: &vxlan::Remote, id: u16) {
        for ip in &r.ips {
            match ip {
                std::net::IpAddr::V4(ip) => {
                    let _ = self.switch.add_arp(ip.octets(), r.mac, id);
                }
                std::net::IpAddr::V6(ip) => {
                    let _ = self.switch.add_nd(ip.octets(), r.mac, id);
                }
            }
        }
    }

    /// The VXLAN uplink's counters, if there is one.
    pub fn vxlan(&self) -> Option<vxlan::VxlanView> {
        lock(&self.vxlan).as_ref().map(vxlan::Vxlan::view)
    }

    /// The VXLAN remote table's entries from the cluster (none without an
    /// uplink).
    pub fn vxlan_cluster(&self) -> Vec<vxlan::Remote> {
        lock(&self.vxlan)
            .as_ref()
            .map_or_else(Vec::new, vxlan::Vxlan::cluster)
    }

    /// Replaces the VXLAN remote table's cluster part with `remotes` (see
    /// [`vxlan::Vxlan::set_cluster`]): the static entries and address
    /// answers of entries gone leave the switch (those pointing at the
    /// uplink's port only: a local instance that took a MAC or an address
    /// keeps it), those of new entries come. False without an uplink.
    pub fn set_vxlan_cluster(&self, remotes: Vec<vxlan::Remote>) -> bool {
        let held = lock(&self.vxlan);
        let Some(v) = held.as_ref() else {
            return false;
        };
        let id = v.port;
        let change = v.set_cluster(remotes);
        for r in &change.gone {
            let _ = self.switch.remove_static(r.mac, id);
            for ip in &r.ips {
                match ip {
                    std::net::IpAddr::V4(ip) => {
                        let _ = self.switch.remove_arp(ip.octets(), id);
                    }
                    std::net::IpAddr::V6(ip) => {
                        let _ = self.switch.remove_nd(ip.octets(), id);
                    }
                }
            }
        }
        for r in &change.came {
            if !self.switch.add_static(r.mac, id).unwrap_or(false) {
                eprintln!(
                    "prontod: vxlan/{}: the switch's MAC table is full: frames for the \
                     cluster's remote {} are not sent to the uplink",
                    v.vni,
                    vxlan::mac_text(&r.mac)
                );
            }
            self.answer_for(r, id);
        }
        true
    }

    /// The uplinks and their counters.
    pub fn uplinks(&self) -> Vec<uplink::UplinkView> {
        lock(&self.uplinks)
            .iter()
            .map(uplink::Uplink::view)
            .collect()
    }

    /// Detaches a port from [`Manager::attach_port`].
    pub fn detach_port(&self, id: u16) {
        self.free_port(id);
    }

    fn alloc_port(&self, name: String) -> Result<u16, Failure> {
        lock(&self.ports).take(name).ok_or_else(|| {
            Failure::Unavailable("the switch has no free port (65,535 in use)".into())
        })
    }

    fn free_port(&self, id: u16) {
        let _ = self.switch.detach(id);
        lock(&self.ports).give_back(id);
    }

    /// The port number `inst` holds for interface `iface` (a new one the
    /// first time), with the interface's MAC and the static entries set
    /// through the API for its port name routed to it, whether or not a
    /// process is attached.
    pub(crate) fn hold_port(
        &self,
        spec: &InstanceSpec,
        inst: &Instance,
        iface: &crate::store::IfaceSpec,
    ) -> Result<u16, Failure> {
        let mut held = lock(&inst.ports);
        if let Some((_, id)) = held.iter().find(|(n, _)| *n == iface.name) {
            return Ok(*id);
        }
        let pname = format!("{}/{}/{}", spec.tenant, spec.name, iface.name);
        let id = self.alloc_port(pname.clone())?;
        held.push((iface.name.clone(), id));
        if let Some(m) = iface
            .mac
            .as_deref()
            .and_then(pronto_switch::control::parse_mac)
        {
            let _ = self.switch.add_static(m, id);
            match iface.ip.as_deref().and_then(|a| a.parse().ok()) {
                Some(std::net::IpAddr::V4(ip)) => {
                    let _ = self.switch.add_arp(ip.octets(), m, id);
                }
                Some(std::net::IpAddr::V6(ip)) => {
                    let _ = self.switch.add_nd(ip.octets(), m, id);
                }
                None => {}
            }
        }
        self.switch
            .set_broadcast(id, iface.broadcast.unwrap_or(true));
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
        Ok(id)
    }

    /// Gives back the port numbers `inst` held, and forgets the addresses
    /// routed to them (the instance is gone).
    pub(crate) fn forget_ports(&self, inst: &Instance) {
        for (_, id) in lock(&inst.ports).drain(..) {
            let _ = self.switch.detach(id);
            self.switch.forget(id);
            lock(&self.ports).give_back(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(dir: &std::path::Path) -> ManagerOptions {
        ManagerOptions {
            program: "/nonexistent".into(),
            root_dir: dir.to_path_buf(),
            use_cgroup: false,
            geometry: Geometry::new(64, 32).expect("geometry"),
            switch_threads: 1,
            switch_cpu: None,
            default_memory: 32 << 20,
            warm: 0,
            pool_slots: 64,
            control_dir: dir.join("control"),
            control_ports: DEFAULT_CONTROL_PORTS,
        }
    }

    #[test]
    fn quotas_are_restored_with_their_connection_limits_and_refusals_leave_nothing() {
        let dir = std::env::temp_dir().join(format!("pronto-manager-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("state.redb");
        {
            let store = Store::open(&path).expect("store");
            let m = Manager::start(options(&dir), store).expect("manager");
            let patch = serde_json::json!({"control_connections": 3, "instances": 0});
            let q = m
                .set_quota("acme", patch.as_object().expect("object"))
                .expect("quota");
            assert_eq!((q.control_connections, q.instances), (3, 0));
            assert_eq!(m.connections("acme").limit(), 3);
            // Over the quota: refused, nothing kept, nothing stored.
            let spec = InstanceSpec::new("acme", "a", "Idle -> Discard;");
            match m.create(spec) {
                Err(Failure::OverQuota(_, "instances")) => {}
                other => panic!("not refused: {other:?}"),
            }
            assert!(m.list(None).is_empty());
            assert!(m.store().instances().expect("instances").is_empty());
            m.shutdown();
        }
        let store = Store::open(&path).expect("store");
        let m = Manager::start(options(&dir), store).expect("manager");
        assert_eq!(m.quota("acme").control_connections, 3);
        assert_eq!(m.connections("acme").limit(), 3);
        assert_eq!(m.connections("other").limit(), 16);
        m.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_restored_instance_that_cannot_start_has_its_address_routed_not_flooded() {
        let dir =
            std::env::temp_dir().join(format!("pronto-manager-restore-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let store = Store::open(&dir.join("state.redb")).expect("store");
        // An instance in the store whose sandbox never starts (the
        // program does not exist): it restarts, with back-off, forever.
        store
            .put_instance(&InstanceSpec {
                interfaces: vec![crate::store::IfaceSpec {
                    name: "eth0".into(),
                    mac: Some("02:00:00:00:00:0d".into()),
                    ip: None,
                    broadcast: None,
                }],
                ..InstanceSpec::new("acme", "down", "FromDevice(eth0) -> Discard;")
            })
            .expect("stored");
        let m = Manager::start(options(&dir), store).expect("manager");
        let (pa, sa) = m.attach_port("ops/peer").expect("peer");
        let (_, sb) = m.attach_port("ops/bystander").expect("bystander");
        let mut peer = pronto_switch::Peer::new(sa, 32).expect("peer");
        let mut by = pronto_switch::Peer::new(sb, 32).expect("bystander");
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0x0d]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 0x0e]);
        for _ in 0..10 {
            assert_eq!(peer.send(&[&f]), 1);
        }
        let t0 = std::time::Instant::now();
        while m.switch().counters(pa).map_or(0, |c| c.rx_packets) < 10 {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the switch took nothing"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        // Dropped at the sender's port, counted; none reached the
        // bystander.
        let c = m.switch().counters(pa).expect("counters");
        assert_eq!((c.drop_no_route, c.drops()), (10, 10));
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(by.recv(|_| {}), 0);
        // Its port is listed (it keeps the number while it exists).
        assert!(m.ports(None).iter().any(|(_, n, _)| n == "acme/down/eth0"));
        assert!(m.list(None).iter().any(|i| i.name == "down"));
        m.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
