//! `pronto switch`: runs pronto's shared-memory switch in the foreground,
//! serving its control socket; `pronto switch ports` lists its ports.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use pronto_switch::control::{ServeConfig, Server};
use pronto_switch::Geometry;

/// The long help of the command.
pub(crate) const SWITCH_ABOUT: &str =
    "Run the shared-memory switch that middleboxes attach their interfaces to, in \
        the foreground (stop with Ctrl-C).\n\n\
        Middleboxes attach with `pronto run --switch PATH CONFIG`: their \
        FromDevice(eth0)/ToDevice(eth0) become port NAME/eth0. The socket is --socket PATH \
        (default $PRONTO_SWITCH, else /run/pronto/switch.sock as root, \
        /tmp/pronto-switch-UID.sock otherwise).";

/// `pronto switch`'s arguments.
#[derive(clap::Args, Debug)]
#[command(
    long_about = SWITCH_ABOUT,
    after_help = "Examples:\n  pronto switch --socket /tmp/sw.sock --threads 2\n  \
        pronto switch ports --socket /tmp/sw.sock"
)]
pub struct SwitchArgs {
    #[command(subcommand)]
    cmd: Option<SwitchCmd>,
    /// Route only static MACs (`pronto run --mac`); flood the rest.
    #[arg(long)]
    no_learning: bool,
    /// How long a learned MAC lives without traffic (default 300).
    #[arg(long, value_name = "SECONDS")]
    aging: Option<String>,
    /// Switching threads (default 1); ports spread over them as they attach.
    #[arg(long, value_name = "N")]
    threads: Option<String>,
    /// Pin switching thread i to CPU N+i.
    #[arg(long, value_name = "N")]
    cpu: Option<String>,
    /// Packet slots per port (default 1024).
    #[arg(long, value_name = "N")]
    slots: Option<String>,
    /// Ring capacity per port, a power of two (default 512).
    #[arg(long, value_name = "N")]
    ring: Option<String>,
}

/// `pronto switch`'s subcommands.
#[derive(clap::Subcommand, Debug)]
enum SwitchCmd {
    /// List the ports of the switch at --socket, with their counters.
    Ports,
}

/// The switch's `PORTS` lines (`PORT NAME MAC rx=N tx=N drops=N`) as
/// pronto's listing table; a line in another form is kept whole, in NAME.
fn port_table(lines: &[String]) -> String {
    use crate::table::{Align, Table};
    let mut t = Table::new(&[
        ("PORT", Align::Right),
        ("NAME", Align::Left),
        ("MAC", Align::Left),
        ("RX PKTS", Align::Right),
        ("TX PKTS", Align::Right),
        ("DROPS", Align::Right),
    ]);
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        let counter = |i: usize, key: &str| {
            f.get(i)
                .and_then(|w| w.strip_prefix(key))
                .and_then(|w| w.strip_prefix('='))
                .map(str::to_string)
        };
        match (
            f.len(),
            counter(3, "rx"),
            counter(4, "tx"),
            counter(5, "drops"),
        ) {
            (6, Some(rx), Some(tx), Some(drops)) => {
                t.row([f[0].to_string(), f[1].into(), f[2].into(), rx, tx, drops])
            }
            _ => t.row([String::new(), l.clone()]),
        }
    }
    t.render()
}

/// The control socket used when none is given.
pub fn default_socket() -> PathBuf {
    socket_path("PRONTO_SWITCH", "switch.sock", "pronto-switch")
}

/// A socket's default path: `$ENV`, else `/run/pronto/NAME` as root,
/// else `$TMPDIR/PREFIX-UID.sock`.
pub fn socket_path(env: &str, name: &str, prefix: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env) {
        return PathBuf::from(p);
    }
    let uid = rustix::process::getuid().as_raw();
    if uid == 0 {
        PathBuf::from("/run/pronto").join(name)
    } else {
        std::env::temp_dir().join(format!("{prefix}-{uid}.sock"))
    }
}

/// Runs `pronto switch`.
pub fn main(a: &SwitchArgs, socket: Option<&str>) -> ExitCode {
    match run(a, socket) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pronto switch: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(a: &SwitchArgs, socket: Option<&str>) -> Result<(), String> {
    fn num(flag: &str, v: &str) -> Result<u32, String> {
        v.parse()
            .map_err(|_| format!("{flag}: expected a number, found `{v}`"))
    }
    let socket = socket.map(PathBuf::from);
    let list = matches!(a.cmd, Some(SwitchCmd::Ports));
    let mut cfg = ServeConfig::default();
    if a.no_learning {
        cfg.switch.learning = false;
    }
    if let Some(v) = &a.threads {
        let n = num("--threads", v)? as usize;
        if !(1..=pronto_switch::switch::MAX_THREADS).contains(&n) {
            return Err(format!(
                "--threads: {n} is out of range (1 to {})",
                pronto_switch::switch::MAX_THREADS
            ));
        }
        cfg.switch.threads = n;
    }
    if let Some(v) = &a.cpu {
        cfg.switch.cpu = Some(num("--cpu", v)? as usize);
    }
    if let Some(v) = &a.aging {
        cfg.switch.aging = std::time::Duration::from_secs(num("--aging", v)? as u64);
    }
    if let Some(v) = &a.slots {
        cfg.geometry.slots = num("--slots", v)?;
    }
    if let Some(v) = &a.ring {
        cfg.geometry.ring = num("--ring", v)?;
    }
    let socket = socket.unwrap_or_else(default_socket);
    if list {
        let ports = pronto_switch::control::ports(&socket).map_err(|e| e.to_string())?;
        if ports.is_empty() {
            crate::outln!("no ports attached");
            return Ok(());
        }
        crate::out!("{}", port_table(&ports));
        return Ok(());
    }
    cfg.geometry =
        Geometry::new(cfg.geometry.slots, cfg.geometry.ring).map_err(|e| format!("{e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone())
            .map_err(|e| format!("cannot install a signal handler: {e}"))?;
    }
    let mut server = Server::bind(&socket, cfg)
        .map_err(|e| format!("cannot listen on {}: {e}", socket.display()))?;
    eprintln!(
        "pronto switch: listening on {} (learning {}, {} slots and {}-entry rings per port)",
        socket.display(),
        if cfg.switch.learning { "on" } else { "off" },
        cfg.geometry.slots,
        cfg.geometry.ring
    );
    let r = server.serve(&stop).map_err(|e| e.to_string());
    let _ = std::fs::remove_file(&socket);
    r
}

#[cfg(test)]
mod tests {
    #[test]
    fn port_lines_become_a_table() {
        let lines = [
            "0 fw/eth0 02:00:00:00:00:01 rx=12 tx=3 drops=0".to_string(),
            "17 uplink/enp1s0 - rx=1234567 tx=0 drops=5".to_string(),
        ];
        assert_eq!(
            super::port_table(&lines),
            "PORT  NAME           MAC                RX PKTS  TX PKTS  DROPS\n   \
             0  fw/eth0        02:00:00:00:00:01       12        3      0\n  \
             17  uplink/enp1s0  -                  1234567        0      5\n"
        );
    }
}
