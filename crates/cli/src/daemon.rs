//! `pronto daemon` (also installed as `prontod`): the switch, the
//! sandboxed instances and the REST API, in the foreground.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use pronto_daemon::manager::ManagerOptions;
use pronto_daemon::Options;
use pronto_switch::Geometry;

pub(crate) const USAGE: &str = "\
pronto daemon: the switch, the sandboxed middlebox instances and the REST API

Usage:
  pronto daemon [--socket PATH] [--listen ADDR:PORT | --listen none] [--state DIR]
                [--switch-threads N] [--slots N] [--ring N] [--memory SIZE] [--warm N]
                [--control-ports FIRST-LAST] [--no-cgroup] [--uplink IFACE]...

  --socket PATH        the API's unix socket (default $PRONTO_SOCKET, else
                       /run/pronto/prontod.sock as root, /tmp/prontod-UID.sock otherwise)
  --listen ADDR:PORT   the API on loopback TCP (default 127.0.0.1:7117; port 0 picks one;
                       `none`: unix socket only)
  --state DIR          the store (state.redb) and admin.token (default /var/lib/pronto as
                       root, else ~/.local/state/pronto)
  --switch-threads N   switching threads (default 1)
  --slots N, --ring N  packet slots and ring size of each instance interface's switch port
                       (default 256 and 128)
  --memory SIZE        memory limit of instances that set none (default 32M)
  --warm N             sandboxes kept started ahead of demand (default 2; 0: none)
  --control-ports FIRST-LAST
                       loopback ports instances' ControlSocket(TCP, ...) may use unless a
                       tenant's quota names others (default 20000-20999; none below 1024)
  --no-cgroup          no cgroups (no memory/CPU/task limits; for hosts without them)
  --uplink IFACE       make Linux interface IFACE a port of the switch (`uplink/IFACE`,
                       promiscuous while the daemon runs): instances' interfaces and the
                       hosts behind IFACE share one layer-2 segment (repeatable)

Instances come back after a restart. Each tenant's instances are bounded by its quota
(`pronto tenant quota`). Stop with Ctrl-C or SIGTERM.
";

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
            geometry: Geometry::new(256, 128).map_err(|e| e.to_string())?,
            switch_threads: 1,
            default_memory: 32 << 20,
            pool_slots: 512,
            warm: 2,
            control_dir: PathBuf::new(),
            control_ports: pronto_daemon::manager::DEFAULT_CONTROL_PORTS,
        },
        uplinks: Vec::new(),
    })
}

/// Runs `pronto daemon ARGS`.
pub fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_empty() => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("prontod: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let mut o = default_options()?;
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    let num = |flag: &str, v: &str| -> Result<u32, String> {
        v.parse()
            .map_err(|_| format!("{flag}: expected a number, found `{v}`"))
    };
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "--socket" => o.socket = PathBuf::from(value(&mut i, a)?),
            "--state" => o.state_dir = PathBuf::from(value(&mut i, a)?),
            "--listen" => {
                let v = value(&mut i, a)?;
                o.listen = if v == "none" {
                    None
                } else {
                    Some(v.parse().map_err(|_| {
                        format!(
                            "--listen: expected ADDR:PORT (127.0.0.1:7117) or none, found `{v}`"
                        )
                    })?)
                };
            }
            "--switch-threads" => {
                let v = value(&mut i, a)?;
                o.manager.switch_threads = num(a, &v)? as usize;
            }
            "--slots" => {
                let v = value(&mut i, a)?;
                o.manager.geometry.slots = num(a, &v)?;
            }
            "--ring" => {
                let v = value(&mut i, a)?;
                o.manager.geometry.ring = num(a, &v)?;
            }
            "--memory" => {
                let v = value(&mut i, a)?;
                o.manager.default_memory =
                    pronto_daemon::api::parse_size(&serde_json::Value::String(v))
                        .map_err(|e| format!("--memory: {e}"))?;
            }
            "--no-cgroup" => o.manager.use_cgroup = false,
            "--uplink" => o.uplinks.push(value(&mut i, a)?),
            "--control-ports" => {
                let v = value(&mut i, a)?;
                o.manager.control_ports = v.parse().map_err(|e| format!("--control-ports: {e}"))?;
            }
            "--warm" => {
                let v = value(&mut i, a)?;
                o.manager.warm = num(a, &v)? as usize;
            }
            "--help" | "-h" | "help" => return Err(String::new()),
            _ => return Err(format!("unknown argument `{a}` (`pronto daemon --help`)")),
        }
        i += 1;
    }
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
        eprintln!("prontod: {} instances restored", d.manager().counts().0);
    })
}
