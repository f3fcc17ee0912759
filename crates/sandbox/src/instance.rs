//! The sandboxed side: the process a [`crate::Sandbox`] starts.
//!
//! [`main`] serves the [protocol](crate::proto) on descriptor 3: it builds
//! configurations with [`pronto_runtime::Router`], answers handler calls,
//! and runs the router when asked. The first configuration it accepts
//! locks it down ([`crate::seccomp`]) before the reply goes out, so a
//! configuration is parsed and its files opened with the full (but
//! already namespaced, read-only, capability-less) view, and everything
//! after runs under the allow-list.
//!
//! One thread, no step API: the runtime's `Router::run` owns the thread
//! until the driver stops, so requests that arrive during a `RUN` wait
//! until it ends (see the protocol's notes). A configuration that never
//! stops keeps its requests waiting; the parent can still kill the
//! process.
//!
//! Arguments: `--pool-slots N` sets the packet pool's size (default
//! [`DEFAULT_POOL_SLOTS`]; the pool is mapped and touched in full, so it
//! dominates an instance's memory).

use std::process::ExitCode;

use pronto_lang::SourceMap;
use pronto_runtime::{Router, RouterOptions};

use crate::proto::{self, Reply, Request};

/// Packet slots in an instance's pool unless `--pool-slots` says otherwise
/// (512 slots of 2,176 bytes: about 1.1 MB).
pub const DEFAULT_POOL_SLOTS: usize = 512;

/// Exit status when the socket at descriptor 3 is missing or broken.
const EXIT_SOCKET: u8 = 2;
/// Exit status when the seccomp filter could not be installed.
const EXIT_SECCOMP: u8 = 3;

struct Instance {
    router: Option<Router>,
    locked: bool,
    pool_slots: usize,
}

enum Next {
    Continue,
    Exit(ExitCode),
}

fn pool_slots_from_args() -> Result<usize, String> {
    let mut args = std::env::args().skip(1);
    let mut slots = DEFAULT_POOL_SLOTS;
    while let Some(a) = args.next() {
        if a == "--pool-slots" {
            let v = args
                .next()
                .ok_or("--pool-slots: expected a number of packet slots")?;
            slots = v
                .parse()
                .ok()
                .filter(|n: &usize| *n > 0)
                .ok_or(format!("--pool-slots: `{v}` is not a positive number"))?;
        }
    }
    Ok(slots)
}

/// Runs an instance: serves requests on descriptor 3 until `STOP` or end
/// of stream. Exit status 0 on a normal end, 1 for bad arguments, 2 when
/// descriptor 3 is not a usable socket, 3 when lock-down failed.
pub fn main() -> ExitCode {
    let pool_slots = match pool_slots_from_args() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("pronto instance: {e}");
            return ExitCode::from(1);
        }
    };
    let sock = match pronto_ring::fdpass::take_inherited(proto::SOCKET_FD) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "pronto instance: descriptor {} is not usable ({e}); this command is started by \
                 the pronto daemon inside a sandbox, with its control socket at descriptor {}",
                proto::SOCKET_FD,
                proto::SOCKET_FD
            );
            return ExitCode::from(EXIT_SOCKET);
        }
    };
    let mut inst = Instance {
        router: None,
        locked: false,
        pool_slots,
    };
    loop {
        let payload = match proto::recv_frame(&sock) {
            Ok(Some((payload, _fds))) => payload,
            Ok(None) => return ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("pronto instance: reading a request: {e}");
                return ExitCode::from(EXIT_SOCKET);
            }
        };
        let (reply, next) = inst.handle(&payload);
        if let Err(e) = proto::send_frame(&sock, &reply.encode(), &[]) {
            eprintln!("pronto instance: sending a reply: {e}");
            return ExitCode::from(EXIT_SOCKET);
        }
        if let Next::Exit(code) = next {
            return code;
        }
    }
}

impl Instance {
    fn handle(&mut self, payload: &[u8]) -> (Reply, Next) {
        let req = match Request::parse(payload) {
            Ok(r) => r,
            Err(e) => return (Reply::Err(e), Next::Continue),
        };
        match req {
            Request::Ping => (Reply::Ok("pronto-instance".into()), Next::Continue),
            Request::Stop => (Reply::Ok(String::new()), Next::Exit(ExitCode::SUCCESS)),
            Request::Config(text) => match self.configure(text) {
                Ok(n) => {
                    if !self.locked {
                        if let Err(e) = crate::seccomp::install() {
                            return (Reply::Err(e), Next::Exit(ExitCode::from(EXIT_SECCOMP)));
                        }
                        self.locked = true;
                    }
                    (Reply::Ok(format!("{n} elements")), Next::Continue)
                }
                Err(e) => (Reply::Err(e), Next::Continue),
            },
            Request::Read(h) => match self.router.as_mut() {
                None => (no_config(), Next::Continue),
                Some(r) => match r.read_handler(h, "") {
                    Ok(v) => (Reply::Ok(v), Next::Continue),
                    Err(e) => (Reply::Err(e.to_string()), Next::Continue),
                },
            },
            Request::Write(h, v) => match self.router.as_mut() {
                None => (no_config(), Next::Continue),
                Some(r) => match r.write_handler(h, v) {
                    Ok(()) => (Reply::Ok(String::new()), Next::Continue),
                    Err(e) => (Reply::Err(e.to_string()), Next::Continue),
                },
            },
            Request::Run => match self.router.as_mut() {
                None => (no_config(), Next::Continue),
                Some(r) => match r.run() {
                    Ok(()) => (Reply::Ok("stopped".into()), Next::Continue),
                    Err(e) => (Reply::Err(e), Next::Continue),
                },
            },
        }
    }

    /// Parses and builds `text`; on success it replaces the current
    /// router, on failure the current one stays. Returns the number of elements, or the rendered
    /// diagnostics.
    fn configure(&mut self, text: &str) -> Result<usize, String> {
        let mut sm = SourceMap::new();
        let file = sm.add("config", text);
        let opts = pronto_lang::Options {
            defines: &[],
            is_primitive: &pronto_runtime::is_known_class,
        };
        let render = |diags: &[pronto_lang::Diagnostic]| -> String {
            diags
                .iter()
                .map(|d| d.render(&sm))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (flat, _warnings) =
            pronto_lang::parse_flat(&sm, file, &opts).map_err(|d| render(&d))?;
        let ropts = RouterOptions {
            base_dir: "/".into(),
            pool_slots: self.pool_slots,
            ..RouterOptions::default()
        };
        // Built beside the old one: a configuration that fails leaves the
        // current router in place.
        let router = Router::build(&flat, &sm, &ropts).map_err(|d| render(&d))?;
        let n = router.element_names().count();
        self.router = Some(router);
        Ok(n)
    }
}

fn no_config() -> Reply {
    Reply::Err("no configuration: send CONFIG first".into())
}
