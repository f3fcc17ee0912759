//! `pronto switch`: runs pronto's shared-memory switch in the foreground,
//! serving its control socket; `pronto switch ports` lists its ports.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use pronto_switch::control::{ServeConfig, Server};
use pronto_switch::Geometry;

pub(crate) const USAGE: &str = "\
pronto switch: the shared-memory switch middleboxes attach their interfaces to

Usage:
  pronto switch [--socket PATH] [--no-learning] [--aging SECONDS] [--threads N] [--cpu N]
                [--slots N] [--ring N]
  pronto switch ports [--socket PATH]

  --socket PATH    control socket (default $PRONTO_SWITCH, else /run/pronto/switch.sock
                   as root, /tmp/pronto-switch-UID.sock otherwise)
  --no-learning    route only static MACs (`pronto run --mac`); flood the rest
  --aging SECONDS  how long a learned MAC lives without traffic (default 300)
  --threads N      switching threads (default 1); ports spread over them as they attach
  --cpu N          pin switching thread i to CPU N+i
  --slots N        packet slots per port (default 1024)
  --ring N         ring capacity per port, a power of two (default 512)

Middleboxes attach with `pronto run --switch PATH CONFIG`: their
FromDevice(eth0)/ToDevice(eth0) become port NAME/eth0. Stop with Ctrl-C.
";

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

/// Runs `pronto switch ARGS`.
pub fn main(args: &[String]) -> ExitCode {
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_empty() => {
            crate::out!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("pronto switch: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let mut socket = None;
    let mut cfg = ServeConfig::default();
    let mut list = false;
    let mut i = 0;
    let value = |i: &mut usize, flag: &str| -> Result<String, String> {
        *i += 1;
        args.get(*i)
            .cloned()
            .ok_or_else(|| format!("{flag} needs a value"))
    };
    fn num(flag: &str, v: &str) -> Result<u32, String> {
        v.parse()
            .map_err(|_| format!("{flag}: expected a number, found `{v}`"))
    }
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "ports" if i == 0 => list = true,
            "--socket" => socket = Some(PathBuf::from(value(&mut i, a)?)),
            "--no-learning" => cfg.switch.learning = false,
            "--threads" => {
                let v = value(&mut i, a)?;
                let n = num(a, &v)? as usize;
                if !(1..=pronto_switch::switch::MAX_THREADS).contains(&n) {
                    return Err(format!(
                        "--threads: {n} is out of range (1 to {})",
                        pronto_switch::switch::MAX_THREADS
                    ));
                }
                cfg.switch.threads = n;
            }
            "--cpu" => {
                let v = value(&mut i, a)?;
                cfg.switch.cpu = Some(num(a, &v)? as usize);
            }
            "--aging" => {
                let v = value(&mut i, a)?;
                cfg.switch.aging = std::time::Duration::from_secs(num(a, &v)? as u64);
            }
            "--slots" => {
                let v = value(&mut i, a)?;
                cfg.geometry.slots = num(a, &v)?;
            }
            "--ring" => {
                let v = value(&mut i, a)?;
                cfg.geometry.ring = num(a, &v)?;
            }
            "--help" | "-h" | "help" => return Err(String::new()),
            _ => return Err(format!("unknown argument `{a}` (`pronto switch --help`)")),
        }
        i += 1;
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
