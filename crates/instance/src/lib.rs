//! pronto's instance runner: the process a [`pronto_sandbox::Sandbox`]
//! starts inside the jail (`pronto instance`, or this crate's
//! `pronto-instance` binary).
//!
//! [`main`] serves the [protocol](pronto_sandbox::proto) on descriptor 3: it builds
//! configurations with [`pronto_runtime::Router`], answers handler calls,
//! and runs the router when asked. The first configuration it accepts
//! locks it down ([`seccomp`]) before the reply goes out, so a
//! configuration is parsed and its files opened with the full (but
//! already namespaced, read-only, capability-less) view, and everything
//! after runs under the allow-list.
//!
//! Two threads, both started before the lock-down: this one reads
//! requests; the router thread builds and runs routers (a `Router` stays
//! on the thread that built it). While a router runs, handler calls reach
//! it through its `Remote` between rounds of its task loop, and a new
//! configuration is first built here, on the request thread, as a check,
//! so that a bad one is refused while the old one keeps running.
//!
//! Arguments: `--pool-slots N` sets the packet pool's size (default
//! [`DEFAULT_POOL_SLOTS`]; the pool is mapped and touched in full, so it
//! dominates an instance's memory).

#![forbid(unsafe_code)]

use std::process::ExitCode;

use std::sync::mpsc;

use pronto_lang::SourceMap;
use pronto_runtime::controlsocket::{SocketSpec, Target};
use pronto_runtime::{Remote, Router, RouterOptions};

use pronto_sandbox::proto::{self, Reply, Request};

pub mod seccomp;

/// Packet slots in an instance's pool unless `--pool-slots` says otherwise
/// (512 slots of 2,176 bytes: about 1.1 MB).
pub const DEFAULT_POOL_SLOTS: usize = 512;

/// Exit status when the socket at descriptor 3 is missing or broken.
const EXIT_SOCKET: u8 = 2;
/// Exit status when the seccomp filter could not be installed.
const EXIT_SECCOMP: u8 = 3;

/// What the request thread asks of the router thread.
/// What the daemon set for the routers built from now on (`POOL`,
/// `POLL`).
#[derive(Clone, Copy)]
struct Limits {
    /// The most packets a configuration's pool may hold.
    pool_limit: usize,
    /// After packets moved, poll this long before sleeping.
    poll_window_ns: i64,
}

enum Job {
    /// Build a configuration (replacing the current router on success,
    /// after the new one took the old one's state: Click's hot-swap).
    /// With the packet pool's limit and how it waits.
    Build(String, Limits, mpsc::Sender<Result<Built, String>>),
    /// Call a handler of the current router while it is not running.
    Call(bool, String, String, mpsc::Sender<Result<String, String>>),
    /// Run the current router; the result goes to the sender when the
    /// run ends.
    Run(mpsc::Sender<Result<(), String>>),
}

/// A configuration the router thread built.
struct Built {
    elements: usize,
    remote: Remote,
    /// `element (what)` for each element that took the old one's state.
    took: Vec<String>,
    /// Its `ControlSocket` elements.
    sockets: Vec<(String, SocketSpec)>,
}

struct Instance {
    jobs: mpsc::Sender<Job>,
    /// The current router's handle and its configuration text.
    current: Option<(Remote, String)>,
    /// The current configuration's `ControlSocket` elements.
    sockets: Vec<(String, SocketSpec)>,
    /// Set while a run is in progress: where its end is reported.
    running: Option<mpsc::Receiver<Result<(), String>>>,
    /// How the last run ended, until `WAIT` collects it.
    ended: Option<Result<(), String>>,
    locked: bool,
    /// The seccomp filters, compiled at start-up (off the boot path of a
    /// pre-started instance).
    filters: Option<[seccompiler::BpfProgram; 2]>,
    pool_slots: usize,
    /// The pool limit (`POOL`; the daemon sets it from the instance's
    /// memory limit) and poll window (`POLL`).
    limits: Limits,
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
    // Interfaces are the switch ports the daemon hands over, never the
    // kernel's (and the allow-list forbids asking it).
    pronto_elements::userlevel::swport::set_sandboxed();
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
    // The daemon opens the configuration's control sockets and serves them
    // through this instance's handlers.
    pronto_runtime::controlsocket::delegate();
    // The switch wakes this instance's ports with a signal: blocked here,
    // before any other thread exists (threads inherit the mask), and read
    // on a signalfd, made now while system calls are still allowed.
    if let Err(e) = pronto_ring::Doorbell::wake_signal() {
        eprintln!("pronto instance: cannot make the ports' signal doorbell: {e}");
        return ExitCode::from(EXIT_SOCKET);
    }
    let (jobs, rx) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("router".into())
        .spawn(move || router_thread(rx, pool_slots));
    if let Err(e) = spawned {
        eprintln!("pronto instance: cannot start the router thread: {e}");
        return ExitCode::from(EXIT_SOCKET);
    }
    let mut inst = Instance {
        jobs,
        current: None,
        sockets: Vec::new(),
        running: None,
        ended: None,
        locked: false,
        filters: None,
        pool_slots,
        limits: Limits {
            pool_limit: pronto_runtime::DEFAULT_POOL_LIMIT,
            poll_window_ns: 0,
        },
    };
    match crate::seccomp::programs() {
        Ok(p) => inst.filters = Some(p),
        Err(e) => {
            eprintln!("pronto instance: {e}");
            return ExitCode::from(EXIT_SECCOMP);
        }
    }
    loop {
        let (payload, fds) = match proto::recv_frame(&sock) {
            Ok(Some(frame)) => frame,
            Ok(None) => {
                inst.halt();
                return ExitCode::SUCCESS;
            }
            Err(e) => {
                eprintln!("pronto instance: reading a request: {e}");
                return ExitCode::from(EXIT_SOCKET);
            }
        };
        let (reply, next) = inst.handle(&payload, fds);
        let mut bytes = reply.encode();
        if bytes.len() > proto::MAX_MESSAGE {
            bytes = Reply::Err(format!(
                "the answer is {} bytes, more than an instance's answer may carry ({} bytes)",
                bytes.len(),
                proto::MAX_MESSAGE
            ))
            .encode();
        }
        if let Err(e) = proto::send_frame(&sock, &bytes, &[]) {
            eprintln!("pronto instance: sending a reply: {e}");
            return ExitCode::from(EXIT_SOCKET);
        }
        if let Next::Exit(code) = next {
            return code;
        }
    }
}

/// The router thread: builds, runs and answers for routers.
fn router_thread(jobs: mpsc::Receiver<Job>, pool_slots: usize) {
    let mut router: Option<Router> = None;
    // The first configuration's packet pool, made now, while the instance
    // waits (a pre-started one waits in the daemon's pool): making and
    // faulting in a pool takes most of a millisecond, then off the boot
    // path. Later configurations make their own.
    let mut first_pool =
        pronto_packet::Pool::growable(pool_slots, pronto_runtime::DEFAULT_POOL_LIMIT).ok();
    while let Ok(job) = jobs.recv() {
        match job {
            Job::Build(text, limits, reply) => {
                let pool = first_pool.take();
                let r = build(&text, pool_slots, limits, pool).and_then(|(mut r, sockets)| {
                    let remote = r
                        .remote()
                        .map_err(|e| format!("cannot make the router's doorbell: {e}"))?;
                    let n = r.element_names().count();
                    Ok((r, n, remote, sockets))
                });
                match r {
                    Ok((mut r, elements, remote, sockets)) => {
                        // Hot-swap: the new router takes the old (stopped)
                        // one's state, then the old one goes.
                        let took = match router.as_mut() {
                            Some(old) => r
                                .take_state(old)
                                .into_iter()
                                .map(|(e, what)| format!("{e} ({what})"))
                                .collect(),
                            None => Vec::new(),
                        };
                        router = Some(r);
                        let _ = reply.send(Ok(Built {
                            elements,
                            remote,
                            took,
                            sockets,
                        }));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
            Job::Call(read, h, v, reply) => {
                let r = match router.as_mut() {
                    None => Err(NO_CONFIG.to_string()),
                    Some(r) if read => r.read_handler(&h, &v).map_err(|e| e.to_string()),
                    Some(r) => r
                        .write_handler(&h, &v)
                        .map(|()| String::new())
                        .map_err(|e| e.to_string()),
                };
                let _ = reply.send(r);
            }
            Job::Run(done) => {
                let r = match router.as_mut() {
                    None => Err(NO_CONFIG.to_string()),
                    Some(r) => r.run(),
                };
                let _ = done.send(r);
            }
        }
    }
}

const NO_CONFIG: &str = "no configuration: send CONFIG first";

/// Parses and builds `text` (with `pool` if given), with its
/// `ControlSocket` elements; the rendered diagnostics on failure.
fn build(
    text: &str,
    pool_slots: usize,
    limits: Limits,
    pool: Option<pronto_packet::Pool>,
) -> Result<(Router, Vec<(String, SocketSpec)>), String> {
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
    let (flat, _warnings) = pronto_lang::parse_flat(&sm, file, &opts).map_err(|d| render(&d))?;
    let ropts = RouterOptions {
        base_dir: "/".into(),
        pool_slots,
        pool_limit: limits.pool_limit,
        poll_window_ns: limits.poll_window_ns,
        ..RouterOptions::default()
    };
    let sockets = SocketSpec::of_config(&flat);
    let router = Router::build_with_pool(&flat, &sm, &ropts, pool).map_err(|d| render(&d))?;
    Ok((router, sockets))
}

/// The `SOCKETS` answer: one line per control socket,
/// `ELEMENT<TAB>TCP|UNIX<TAB>PORT|FILENAME<TAB>0|1`.
fn socket_lines(sockets: &[(String, SocketSpec)]) -> String {
    sockets
        .iter()
        .map(|(name, s)| {
            let (kind, at) = match &s.target {
                Target::Tcp { port, .. } => ("TCP", port.to_string()),
                Target::Unix(f) => ("UNIX", f.clone()),
            };
            format!("{name}\t{kind}\t{at}\t{}", u8::from(s.readonly))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Instance {
    /// Notices a run that ended by itself.
    fn poll_run(&mut self) {
        if let Some(rx) = &self.running {
            if let Ok(r) = rx.try_recv() {
                self.running = None;
                self.ended = Some(r);
            }
        }
    }

    /// Ends the current run, if any, and waits for it.
    fn halt(&mut self) {
        if let (Some(rx), Some((remote, _))) = (self.running.take(), &self.current) {
            remote.halt();
            if let Ok(r) = rx.recv() {
                self.ended = Some(r);
            }
        }
    }

    fn ask<T>(&self, make: impl FnOnce(mpsc::Sender<T>) -> Job) -> Result<T, String> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(make(tx))
            .map_err(|_| "the router thread has ended".to_string())?;
        rx.recv()
            .map_err(|_| "the router thread has ended".to_string())
    }

    fn start_run(&mut self) -> Result<(), String> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .send(Job::Run(tx))
            .map_err(|_| "the router thread has ended".to_string())?;
        self.running = Some(rx);
        self.ended = None;
        Ok(())
    }

    fn handle(&mut self, payload: &[u8], fds: Vec<std::os::fd::OwnedFd>) -> (Reply, Next) {
        self.poll_run();
        let req = match Request::parse(payload) {
            Ok(r) => r,
            Err(e) => return (Reply::Err(e), Next::Continue),
        };
        let ok = |t: &str| (Reply::Ok(t.to_string()), Next::Continue);
        let err = |t: String| (Reply::Err(t), Next::Continue);
        match req {
            Request::Ping => ok("pronto-instance"),
            Request::Stop => {
                self.halt();
                (Reply::Ok(String::new()), Next::Exit(ExitCode::SUCCESS))
            }
            Request::Port(iface, slots, ring) => {
                let r = pronto_switch::Geometry::new(slots, ring)
                    .and_then(|g| pronto_switch::PortShm::from_fds(fds, g))
                    .map_err(|e| format!("PORT {iface}: {e}"))
                    .and_then(|shm| pronto_elements::userlevel::swport::give_port(iface, shm));
                match r {
                    Ok(()) => ok(""),
                    Err(e) => err(e),
                }
            }
            Request::Config(text) => match self.configure(text) {
                Ok((n, took)) => {
                    if !self.locked {
                        let installed = match &self.filters {
                            Some(f) => crate::seccomp::install(f),
                            None => Err("seccomp: no filters compiled".to_string()),
                        };
                        if let Err(e) = installed {
                            return (Reply::Err(e), Next::Exit(ExitCode::from(EXIT_SECCOMP)));
                        }
                        self.locked = true;
                    }
                    // What parsing and building freed goes back to the
                    // kernel (idle instances are most of a server's).
                    pronto_sandbox::release_free_memory();
                    if took.is_empty() {
                        ok(&format!("{n} elements"))
                    } else {
                        ok(&format!("{n} elements; took state: {}", took.join(", ")))
                    }
                }
                Err(e) => err(e),
            },
            Request::Read(h) => {
                let (h, args) = h.split_once(char::is_whitespace).unwrap_or((h, ""));
                match self.call(true, h, args.trim_start()) {
                    // `OK ` and the value must fit in one frame.
                    Ok(v) if v.len() + 3 > proto::MAX_MESSAGE => err(format!(
                        "{h}: the value is {} bytes, more than an instance's answer may carry \
                         ({} bytes); read a smaller handler",
                        v.len(),
                        proto::MAX_MESSAGE
                    )),
                    Ok(v) => (Reply::Ok(v), Next::Continue),
                    Err(e) => err(e),
                }
            }
            Request::Sockets => ok(&socket_lines(&self.sockets)),
            Request::Pool(n) => {
                self.limits.pool_limit = usize::try_from(n)
                    .unwrap_or(usize::MAX)
                    .min(u32::MAX as usize);
                ok("")
            }
            Request::Poll(ns) => {
                self.limits.poll_window_ns = i64::try_from(ns).unwrap_or(i64::MAX);
                ok("")
            }
            Request::File(path, text) => match pronto_sandbox::proto::check_file_path(path)
                .and_then(|()| pronto_elements::files::give(path, text))
            {
                Ok(()) => ok(""),
                Err(e) => err(format!("FILE: {e}")),
            },
            Request::Write(h, v) => match self.call(false, h, v) {
                Ok(_) => ok(""),
                Err(e) => err(e),
            },
            Request::Run => {
                if self.current.is_none() {
                    return err(NO_CONFIG.into());
                }
                if self.running.is_some() {
                    return ok("running");
                }
                match self.start_run() {
                    Ok(()) => ok("running"),
                    Err(e) => err(e),
                }
            }
            Request::Wait => {
                if let Some(rx) = self.running.take() {
                    self.ended = Some(
                        rx.recv()
                            .unwrap_or_else(|_| Err("the router thread has ended".to_string())),
                    );
                }
                match self.ended.take() {
                    Some(Ok(())) => ok("stopped"),
                    Some(Err(e)) => err(e),
                    None => err("not running: send RUN first".into()),
                }
            }
        }
    }

    fn call(&mut self, read: bool, h: &str, v: &str) -> Result<String, String> {
        match (&self.current, &self.running) {
            (None, _) => Err(NO_CONFIG.into()),
            (Some((remote, _)), Some(_)) => {
                let r = if read {
                    remote.read(h, v)
                } else {
                    remote.write(h, v).map(|()| String::new())
                };
                r.map_err(|e| e.to_string())
            }
            (Some(_), None) => self.ask(|tx| Job::Call(read, h.to_string(), v.to_string(), tx))?,
        }
    }

    /// Builds `text`. While a router runs, the new configuration is built
    /// here first as a check (a bad one changes nothing); then the old run
    /// ends, the router thread builds the new one and runs it at once.
    /// Returns the number of elements and what state moved over, or the
    /// rendered diagnostics.
    fn configure(&mut self, text: &str) -> Result<(usize, Vec<String>), String> {
        let was_running = self.running.is_some();
        if was_running {
            drop(build(text, self.pool_slots, self.limits, None)?);
            self.halt();
        }
        let limit = self.limits;
        let built = self.ask(|tx| Job::Build(text.to_string(), limit, tx))?;
        match built {
            Ok(b) => {
                self.current = Some((b.remote, text.to_string()));
                self.sockets = b.sockets;
                if was_running {
                    self.start_run()?;
                }
                Ok((b.elements, b.took))
            }
            Err(e) if was_running => {
                // Checked above, so unexpected: bring the old one back.
                if let Some((_, old)) = self.current.take() {
                    if let Ok(Ok(b)) = self.ask(|tx| Job::Build(old.clone(), limit, tx)) {
                        self.current = Some((b.remote, old));
                        self.sockets = b.sockets;
                        self.start_run()?;
                    }
                }
                Err(e)
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_are_listed_one_per_line() {
        let s = |c: &str| SocketSpec::parse(c).expect("spec");
        let list = vec![
            ("cs".to_string(), s("TCP, 20001, READONLY true")),
            ("ControlSocket@4".to_string(), s("UNIX, ctl")),
        ];
        assert_eq!(
            socket_lines(&list),
            "cs\tTCP\t20001\t1\nControlSocket@4\tUNIX\tctl\t0"
        );
        assert_eq!(socket_lines(&[]), "");
    }
}
