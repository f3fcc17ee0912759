//! What the API shows of an instance: its lifecycle state, the limits
//! that apply, where it runs, how it last ended.

use serde::Serialize;

use super::{lock, Instance};

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
    /// The IPv4 or IPv6 address the switch answers ARP or Neighbor
    /// Solicitations for, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Whether it takes broadcasts and multicasts.
    pub broadcast: bool,
    /// Its switch port number while running.
    pub port: Option<u16>,
}

/// What is known about a running (or not) instance.
#[derive(Clone, Debug, Default)]
pub(crate) struct Status {
    pub(crate) state: Option<State>,
    pub(crate) pid: Option<u32>,
    pub(crate) boot_ms: Option<f64>,
    pub(crate) restarts: u32,
    pub(crate) last_crash: Option<Crash>,
    pub(crate) error: Option<String>,
    pub(crate) ports: Vec<(String, u16)>,
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
    /// Memory limit that applies, bytes (the daemon's default when the
    /// instance names none).
    pub memory: u64,
    /// CPU share, if it names one.
    pub cpu: Option<f64>,
    /// Task limit that applies.
    pub pids: u64,
    /// The CPUs its threads run on (none: any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<Vec<usize>>,
    /// Its share under overload (CPU weight and switch ports' weight; 100
    /// unless set).
    pub weight: u32,
    /// The rate limit on each of its interfaces, each way (none: no
    /// limit).
    pub rate_limit: Option<crate::store::RateLimitSpec>,
    /// Its interfaces' switch ports: pool slots and ring size (the
    /// daemon's default unless the instance names one).
    pub port_geometry: crate::store::PortGeometrySpec,
    /// Microseconds its routers poll after packets moved before they
    /// sleep (none: they sleep at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub poll_window_us: Option<u64>,
    /// Its group (a chain's name), if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// (cluster) The node it is placed on first when it is live, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefer_node: Option<String>,
    /// The files it was given, by path: their sizes in bytes.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub files: std::collections::BTreeMap<String, usize>,
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

/// One element's counters, as the instance's router reports them (its
/// `counters` handler: one round trip for the whole configuration).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ElementStats {
    /// Element name.
    pub name: String,
    /// Its class.
    pub class: String,
    /// Packets in, all inputs.
    #[serde(rename = "in")]
    pub packets_in: u64,
    /// Packets out, all outputs.
    #[serde(rename = "out")]
    pub packets_out: u64,
    /// Packets in on each input.
    pub inputs: Vec<u64>,
    /// Packets out on each output: each outgoing connection's count.
    pub outputs: Vec<u64>,
    /// Packets the element made (sources, copies, fragments).
    pub made: u64,
    /// Packets it freed: a sink's deliveries and every drop.
    pub freed: u64,
    /// Packets it holds now.
    pub held: u64,
    /// Drops by reason.
    pub drops: std::collections::BTreeMap<String, u64>,
    /// Its other counters.
    pub counters: std::collections::BTreeMap<String, u64>,
}

impl ElementStats {
    /// From one line of the `counters` handler.
    pub fn from_line(c: pronto_runtime::CountersLine) -> ElementStats {
        ElementStats {
            packets_in: c.inputs.iter().sum(),
            packets_out: c.outputs.iter().sum(),
            name: c.name,
            class: c.class,
            inputs: c.inputs,
            outputs: c.outputs,
            made: c.made,
            freed: c.freed,
            held: c.held,
            drops: c.drops.into_iter().collect(),
            counters: c.counts.into_iter().collect(),
        }
    }

    /// Every drop, whatever its reason.
    pub fn dropped(&self) -> u64 {
        self.drops.values().sum()
    }
}

/// What applies to an instance where it names nothing: its memory and
/// task limits, its ports' geometry.
pub(crate) struct Applied {
    pub memory: u64,
    pub pids: u64,
    pub geometry: crate::store::PortGeometrySpec,
}

/// The view of `inst`, with the limits that apply to it.
pub(crate) fn view_of(inst: &Instance, pss: Option<u64>, applied: Applied) -> InstanceView {
    let Applied {
        memory,
        pids,
        geometry,
    } = applied;
    let spec = lock(&inst.spec).clone();
    let st = lock(&inst.status).clone();
    let interfaces = spec
        .interfaces
        .iter()
        .map(|i| IfaceView {
            name: i.name.clone(),
            mac: i.mac.clone(),
            ip: i.ip.clone(),
            broadcast: i.broadcast.unwrap_or(true),
            port: st.ports.iter().find(|(n, _)| *n == i.name).map(|p| p.1),
        })
        .collect();
    InstanceView {
        name: spec.name,
        tenant: spec.tenant,
        state: st.state.unwrap_or(State::Starting),
        config: spec.config,
        memory,
        cpu: spec.cpu,
        pids,
        cpus: spec.cpus,
        weight: spec.weight.unwrap_or(pronto_switch::switch::DEFAULT_WEIGHT),
        rate_limit: spec.rate_limit,
        port_geometry: geometry,
        poll_window_us: spec.poll_window_us.filter(|&us| us > 0),
        group: spec.group,
        prefer_node: spec.prefer_node,
        files: spec
            .files
            .iter()
            .map(|(p, t)| (p.clone(), t.len()))
            .collect(),
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

/// The `ELEMENT (WHAT)` items of an instance's answer to `CONFIG`
/// (`N elements; took state: a (1 flows), b (2 packets)`).
pub(crate) fn took_state(reply: &str) -> Vec<String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_taken_over_is_listed_item_by_item() {
        assert_eq!(
            took_state("3 elements; took state: q (2 packets), nat (1 flows, 3 ports)"),
            ["q (2 packets)", "nat (1 flows, 3 ports)"]
        );
        assert!(took_state("3 elements").is_empty());
    }

    #[test]
    fn the_view_shows_the_limits_that_apply() {
        let spec = crate::store::InstanceSpec {
            interfaces: vec![crate::store::IfaceSpec {
                name: "eth0".into(),
                mac: None,
                ip: None,
                broadcast: None,
            }],
            created_unix_ms: 7,
            ..crate::store::InstanceSpec::new("t", "a", "Idle -> Discard;")
        };
        let (inst, _rx) = Instance::new(spec);
        lock(&inst.status).ports = vec![("eth0".into(), 4)];
        let v = view_of(
            &inst,
            Some(10),
            Applied {
                memory: 32 << 20,
                pids: 8,
                geometry: crate::store::PortGeometrySpec {
                    slots: 64,
                    ring: 32,
                },
            },
        );
        assert_eq!((v.memory, v.pids, v.cpu), (32 << 20, 8, None));
        assert_eq!(v.state, State::Starting);
        assert_eq!(v.interfaces[0].port, Some(4));
        let json = serde_json::to_value(&v).expect("json");
        assert!(json.get("control_sockets").is_none());
        assert_eq!(json["memory"], 32 << 20);
    }
}
