//! `pronto daemon` (also installed as `prontod`): the switch, the
//! sandboxed instances and the REST API, in the foreground.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use pronto_daemon::manager::vxlan::VxlanSpec;
use pronto_daemon::manager::ManagerOptions;
use pronto_daemon::Options;
use pronto_switch::Geometry;

/// The long help of the command.
pub(crate) const DAEMON_ABOUT: &str =
    "Run the daemon: the switch, the sandboxed middlebox instances and the REST API, \
        in the foreground (stop with Ctrl-C or SIGTERM).\n\n\
        Its API socket is --socket PATH (default $PRONTO_SOCKET, else /run/pronto/prontod.sock \
        as root, /tmp/prontod-UID.sock otherwise). Instances come back after a restart. Each \
        tenant's instances are bounded by its quota (`pronto tenant quota`).";

/// `pronto daemon`'s arguments (its API socket is the global --socket).
#[derive(clap::Args, Debug)]
#[command(
    long_about = DAEMON_ABOUT,
    after_help = "Examples:\n  pronto daemon\n  \
        pronto daemon --socket /tmp/p.sock --listen none --state /tmp/pstate --uplink eth1"
)]
pub struct DaemonArgs {
    /// The API on loopback TCP (default 127.0.0.1:7117; port 0 picks one; `none`: unix socket only).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Option<String>,
    /// The store (state.redb) and admin.token (default /var/lib/pronto as root, else ~/.local/state/pronto).
    #[arg(long, value_name = "DIR")]
    state: Option<PathBuf>,
    /// Switching threads (default 1).
    #[arg(long, value_name = "N")]
    switch_threads: Option<String>,
    /// Pin the switching threads to CPUs N, N+1, ... (default: any CPU); with
    /// `pronto create --cpus` on the others, a busy middlebox and the switch
    /// do not take turns on one CPU.
    #[arg(long, value_name = "N")]
    switch_cpu: Option<String>,
    /// Packet slots of each instance interface's switch port (default 1024).
    #[arg(long, value_name = "N")]
    slots: Option<String>,
    /// Ring size of each instance interface's switch port (default 512).
    #[arg(long, value_name = "N")]
    ring: Option<String>,
    /// Memory limit of instances that set none (default 32M).
    #[arg(long, value_name = "SIZE")]
    memory: Option<String>,
    /// Sandboxes kept started ahead of demand (default 2; 0: none); while
    /// creates come back to back the pool grows to what they took in the
    /// last 50 ms, up to 16.
    #[arg(long, value_name = "N")]
    warm: Option<String>,
    /// Loopback ports instances' ControlSocket(TCP, ...) may use unless a tenant's quota names others (default 20000-20999; none below 1024).
    #[arg(long, value_name = "FIRST-LAST")]
    control_ports: Option<String>,
    /// No cgroups (no memory/CPU/task limits; for hosts without them).
    #[arg(long)]
    no_cgroup: bool,
    /// Make Linux interface IFACE a port of the switch (`uplink/IFACE`, promiscuous while the daemon runs): instances' interfaces and the hosts behind IFACE share one layer-2 segment (repeatable).
    #[arg(long, value_name = "IFACE")]
    uplink: Vec<String>,
    /// A VXLAN uplink (RFC 7348): switch port `vxlan/N` over a UDP socket bound to LOCAL_IP (port 4789 unless given); frames for remote MACs go to their VTEP, nothing is flooded unless --vxlan-flood names VTEPs.
    #[arg(long, value_name = "LOCAL_IP[:PORT],vni=N")]
    vxlan: Option<String>,
    /// A remote MAC of the VXLAN uplink and the VTEP that owns it (port: --vxlan's), with its IP addresses, answered by the switch (repeatable).
    #[arg(long, value_name = "MAC,VTEP[:PORT][,IP...]")]
    vxlan_remote: Vec<String>,
    /// A VTEP that gets a copy of every broadcast, multicast and unknown-unicast frame (head-end replication; repeatable).
    #[arg(long, value_name = "VTEP[:PORT]")]
    vxlan_flood: Vec<String>,
    /// Take VXLAN datagrams only from the VTEPs of --vxlan-remote and --vxlan-flood.
    #[arg(long)]
    vxlan_strict: bool,
    /// The most entries the audit log keeps, the oldest dropped first (default 100000; `pronto log` reads it).
    #[arg(long, value_name = "N")]
    audit_limit: Option<String>,
    /// Join the cluster whose desired state is in etcd at these client URLs (comma-separated): instances created on any node are placed by the cluster's scheduler and run where they are placed (docs/cluster.md); needs --node.
    #[arg(long, value_name = "http://HOST:PORT,...")]
    cluster: Option<String>,
    /// This node's name in the cluster (1 to 63 letters, digits, `-`, `_`; unique among live nodes).
    #[arg(long, value_name = "NAME")]
    node: Option<String>,
    /// Seconds the cluster waits for this node's keep-alives before it takes the node for dead and moves its instances (default 3).
    #[arg(long, value_name = "SECONDS")]
    cluster_ttl: Option<String>,
    /// The API over TLS at ADDR:PORT, an address the other nodes (machines) reach: calls for instances this node runs are forwarded there, the certificate pinned by its fingerprint in etcd (port 0 picks one; needs --cluster).
    #[arg(long, value_name = "ADDR:PORT")]
    cluster_listen: Option<String>,
}

/// The API socket used when none is given.
pub fn default_socket() -> PathBuf {
    crate::switch::socket_path("PRONTO_SOCKET", "prontod.sock", "prontod")
}

fn default_state() -> PathBuf {
    if rustix::process::getuid().is_root() {
        return PathBuf::from("/var/lib/pronto");
    }
    match std::env::var_os("XDG_STATE_HOME") {
        Some(d) => PathBuf::from(d).join("pronto"),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into()))
            .join(".local/state/pronto"),
    }
}

/// Default daemon options (the demo starts one in a scratch directory).
pub fn default_options() -> Result<Options, String> {
    Ok(Options {
        socket: default_socket(),
        listen: Some(SocketAddr::from(([127, 0, 0, 1], 7117))),
        state_dir: default_state(),
        manager: ManagerOptions {
            program: std::env::current_exe()
                .map_err(|e| format!("cannot find the pronto binary: {e}"))?,
            root_dir: std::env::temp_dir().join("pronto-sandbox-root"),
            use_cgroup: true,
            geometry: Geometry::new(1024, 512).map_err(|e| e.to_string())?,
            switch_threads: 1,
            switch_cpu: None,
            default_memory: 32 << 20,
            pool_slots: 512,
            warm: 2,
            control_dir: PathBuf::new(),
            control_ports: pronto_daemon::manager::DEFAULT_CONTROL_PORTS,
        },
        uplinks: Vec::new(),
        vxlan: None,
        audit_limit: pronto_daemon::audit::DEFAULT_LIMIT,
        cluster: None,
    })
}

/// The VXLAN uplink's options, if `--vxlan` is given (the others need it).
fn vxlan_spec(a: &DaemonArgs) -> Result<Option<VxlanSpec>, String> {
    let Some(v) = &a.vxlan else {
        if !a.vxlan_remote.is_empty() || !a.vxlan_flood.is_empty() || a.vxlan_strict {
            return Err(
                "--vxlan-remote, --vxlan-flood and --vxlan-strict need --vxlan LOCAL_IP,vni=N"
                    .into(),
            );
        }
        return Ok(None);
    };
    let mut s = VxlanSpec::parse(v).map_err(|e| format!("--vxlan: {e}"))?;
    for r in &a.vxlan_remote {
        let r = s
            .parse_remote(r)
            .map_err(|e| format!("--vxlan-remote: {e}"))?;
        s.remotes.push(r);
    }
    for f in &a.vxlan_flood {
        let f = s
            .parse_flood(f)
            .map_err(|e| format!("--vxlan-flood: {e}"))?;
        s.flood.push(f);
    }
    s.strict = a.vxlan_strict;
    Ok(Some(s))
}

/// Runs `pronto daemon`.
pub fn main(a: &DaemonArgs, socket: Option<&str>) -> ExitCode {
    match run(a, socket) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("prontod: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(a: &DaemonArgs, socket: Option<&str>) -> Result<(), String> {
    let mut o = default_options()?;
    let num = |flag: &str, v: &str| -> Result<u32, String> {
        v.parse()
            .map_err(|_| format!("{flag}: expected a number, found `{v}`"))
    };
    if let Some(s) = socket {
        o.socket = PathBuf::from(s);
    }
    if let Some(d) = &a.state {
        o.state_dir = d.clone();
    }
    if let Some(v) = &a.listen {
        o.listen = if v == "none" {
            None
        } else {
            Some(v.parse().map_err(|_| {
                format!("--listen: expected ADDR:PORT (127.0.0.1:7117) or none, found `{v}`")
            })?)
        };
    }
    if let Some(v) = &a.switch_threads {
        o.manager.switch_threads = num("--switch-threads", v)? as usize;
    }
    if let Some(v) = &a.switch_cpu {
        o.manager.switch_cpu = Some(num("--switch-cpu", v)? as usize);
    }
    if let Some(v) = &a.slots {
        o.manager.geometry.slots = num("--slots", v)?;
    }
    if let Some(v) = &a.ring {
        o.manager.geometry.ring = num("--ring", v)?;
    }
    if let Some(v) = &a.memory {
        o.manager.default_memory =
            pronto_daemon::api::parse_size(&serde_json::Value::String(v.clone()))
                .map_err(|e| format!("--memory: {e}"))?;
    }
    if a.no_cgroup {
        o.manager.use_cgroup = false;
    }
    o.uplinks.extend(a.uplink.iter().cloned());
    o.vxlan = vxlan_spec(a)?;
    if let Some(v) = &a.control_ports {
        o.manager.control_ports = v.parse().map_err(|e| format!("--control-ports: {e}"))?;
    }
    if let Some(v) = &a.warm {
        o.manager.warm = num("--warm", v)? as usize;
    }
    if let Some(v) = &a.audit_limit {
        o.audit_limit = match v.parse::<u64>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(format!(
                    "--audit-limit: expected a number of entries (1 or more), found `{v}`"
                ))
            }
        };
    }
    o.cluster = match (&a.cluster, &a.node) {
        (None, None) if a.cluster_ttl.is_none() && a.cluster_listen.is_none() => None,
        (Some(endpoints), Some(node)) => {
            let ttl = match &a.cluster_ttl {
                None => pronto_daemon::cluster::DEFAULT_TTL,
                Some(v) => match v.parse::<i64>() {
                    Ok(n) if (2..=3600).contains(&n) => n,
                    _ => {
                        return Err(format!(
                            "--cluster-ttl: expected seconds, 2 to 3600, found `{v}`"
                        ))
                    }
                },
            };
            Some(pronto_daemon::cluster::ClusterOptions {
                endpoints: endpoints.clone(),
                node: node.clone(),
                ttl,
                listen: match &a.cluster_listen {
                    None => None,
                    Some(v) => Some(v.parse().map_err(|_| {
                        format!(
                            "--cluster-listen: expected ADDR:PORT (10.0.0.11:7118), found `{v}`"
                        )
                    })?),
                },
            })
        }
        (Some(_), None) => return Err("--cluster needs --node NAME (this node's name)".into()),
        _ => {
            return Err(
                "--node, --cluster-ttl and --cluster-listen need --cluster ENDPOINTS".into(),
            )
        }
    };
    let g = o.manager.geometry;
    Geometry::new(g.slots, g.ring).map_err(|e| format!("bad port geometry: {e}"))?;
    pronto_switch::raise_fd_limit()
        .map_err(|e| format!("cannot raise the open-file limit: {e}"))?;
    pronto_daemon::serve(o, |d| {
        let tcp = d
            .tcp
            .map(|a| format!(" and http://{a}"))
            .unwrap_or_default();
        eprintln!("prontod: listening on unix {}{tcp}", d.socket.display());
        if let Some(p) = &d.peer {
            eprintln!(
                "prontod: cluster API on https://{} (certificate SHA-256 {})",
                p.addr, p.sha256
            );
        }
        match &d.shared.cluster {
            Some(c) => eprintln!(
                "prontod: node {} of the cluster at {}",
                c.node,
                c.etcd.endpoints().join(",")
            ),
            None => eprintln!("prontod: {} instances restored", d.manager().counts().0),
        }
    })
}
