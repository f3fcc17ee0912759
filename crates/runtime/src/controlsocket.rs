//! `ControlSocket`: Click's control socket, for programs that drive a
//! router through its handlers (Click's text protocol, version 1.3).
//!
//! A runtime class: it has no packet path. The socket is bound when the
//! configuration is built (a port in use or a bad path is a configuration
//! error); when the router starts running, a thread accepts connections
//! and serves each on its own thread, calling handlers through the
//! router's [`crate::Remote`] (between rounds of the task loop; the data
//! plane never waits for a client).
//!
//! What a client can make a server hold is bounded before anything is
//! buffered ([`Limits`]): a command line longer than [`MAX_LINE`] ends the
//! connection; `READDATA`/`WRITEDATA` announcing more than the data limit
//! is refused at once (Click's code 521, data too large) and the announced
//! bytes are read and thrown away; a read handler's value over the data
//! limit is not sent (520); connections beyond the limit get code 590 and
//! are closed; an idle connection ends after [`IDLE`].

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pronto_elements::{ActionProfile, ClassEntry, ConfigCtx, ConfigError, Element, Spec};

use crate::router::CallError;
use crate::Remote;

/// Set in processes where a control socket is not opened by the element
/// itself (a sandboxed instance: it has no sockets after lock-down; the
/// daemon opens it and serves it through the instance's handlers).
static DELEGATED: AtomicBool = AtomicBool::new(false);

/// From now on, `ControlSocket` elements in this process check their
/// arguments but open nothing: whoever started the process serves them
/// ([`Spec::of_config`] reads them back from the configuration).
pub fn delegate() {
    DELEGATED.store(true, Ordering::Relaxed);
}

/// A listening control socket.
pub enum Listener {
    /// `ControlSocket(TCP, PORT)`.
    Tcp(TcpListener),
    /// `ControlSocket(UNIX, FILENAME)`.
    Unix(UnixListener),
}

/// Where a control socket listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A TCP port (0: any free one), on 127.0.0.1 when `localhost`.
    Tcp {
        /// The port.
        port: u16,
        /// Only on 127.0.0.1.
        localhost: bool,
    },
    /// A UNIX socket file name, as written.
    Unix(String),
}

/// A `ControlSocket` element's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketSpec {
    /// Where it listens.
    pub target: Target,
    /// No write handlers.
    pub readonly: bool,
    /// Report connections on stderr.
    pub verbose: bool,
}

impl SocketSpec {
    /// Parses a `ControlSocket` configuration string.
    pub fn parse(config: &str) -> Result<SocketSpec, String> {
        let args: Vec<String> = pronto_lang::args::split_args(config);
        let mut pos = Vec::new();
        let (mut readonly, mut verbose, mut localhost) = (false, false, false);
        for a in &args {
            let words = pronto_lang::args::split_words(a);
            let key = words.first().map(|w| w.to_ascii_uppercase());
            let value = words.get(1).map(|w| pronto_lang::args::unquote(w));
            let flag = |v: &Option<String>, k: &str| -> Result<bool, String> {
                match v.as_deref() {
                    None => Ok(true),
                    Some(v) => pronto_lang::args::parse_bool(v)
                        .map_err(|_| format!("{k}: expected true or false, found `{v}`")),
                }
            };
            match key.as_deref() {
                Some("READONLY") if words.len() <= 2 => readonly = flag(&value, "READONLY")?,
                Some("VERBOSE") if words.len() <= 2 => verbose = flag(&value, "VERBOSE")?,
                Some("LOCALHOST") if words.len() <= 2 => localhost = flag(&value, "LOCALHOST")?,
                Some("RETRIES") | Some("RETRY_WARNINGS") if words.len() == 2 => {}
                Some("PROXY") if words.len() == 2 => {
                    return Err(
                        "PROXY: handler proxies are not supported; name the handlers directly"
                            .into(),
                    )
                }
                _ => pos.push(pronto_lang::args::unquote(a.trim())),
            }
        }
        let [kind, target] = pos.as_slice() else {
            return Err("expected `TCP, PORT` or `UNIX, FILENAME` (then keywords)".into());
        };
        let target = match kind.to_ascii_uppercase().as_str() {
            "TCP" => Target::Tcp {
                port: target
                    .trim_end_matches('+')
                    .parse()
                    .map_err(|_| format!("PORT: expected a TCP port number, found `{target}`"))?,
                localhost,
            },
            "UNIX" => Target::Unix(target.clone()),
            other => return Err(format!("TYPE: expected TCP or UNIX, found `{other}`")),
        };
        Ok(SocketSpec {
            target,
            readonly,
            verbose,
        })
    }

    /// The `(element name, spec)` of every `ControlSocket` in a flat
    /// configuration; an element whose arguments do not parse is left out
    /// (building the configuration reports it).
    pub fn of_config(flat: &pronto_lang::FlatConfig) -> Vec<(String, SocketSpec)> {
        flat.elements
            .iter()
            .filter(|e| e.class == "ControlSocket")
            .filter_map(|e| Some((e.name.clone(), SocketSpec::parse(&e.config).ok()?)))
            .collect()
    }
}

impl Listener {
    /// Binds a TCP listener (`port` 0: any free port).
    pub fn tcp(port: u16, localhost: bool) -> std::io::Result<Listener> {
        let host = if localhost { "127.0.0.1" } else { "0.0.0.0" };
        Ok(Listener::Tcp(TcpListener::bind((host, port))?))
    }

    /// Binds a UNIX socket at `path`, replacing a socket file left by an
    /// earlier run unless something still answers on it.
    pub fn unix(path: &Path) -> std::io::Result<Listener> {
        if UnixStream::connect(path).is_err() {
            let _ = std::fs::remove_file(path);
        }
        Ok(Listener::Unix(UnixListener::bind(path)?))
    }

    /// The bound TCP port.
    pub fn port(&self) -> Option<u16> {
        match self {
            Listener::Tcp(t) => t.local_addr().map(|a| a.port()).ok(),
            Listener::Unix(_) => None,
        }
    }
}

/// What a control socket calls handlers through: a router's [`Remote`],
/// or the daemon's path to a sandboxed instance.
pub trait Handlers: Send + Sync + 'static {
    /// Calls read handler `h` (`element.name`, or a global one) with
    /// `args`.
    fn read(&self, h: &str, args: &str) -> Result<String, CallError>;
    /// Calls write handler `h` with `value`.
    fn write(&self, h: &str, value: &str) -> Result<(), CallError>;
}

impl Handlers for Remote {
    fn read(&self, h: &str, args: &str) -> Result<String, CallError> {
        Remote::read(self, h, args)
    }
    fn write(&self, h: &str, value: &str) -> Result<(), CallError> {
        Remote::write(self, h, value)
    }
}

/// The longest command line a connection may send (bytes, with its line
/// end); a longer one ends the connection.
pub const MAX_LINE: usize = 64 << 10;

/// How long a connection may stay silent (between commands, or in the
/// middle of one) before it is closed.
pub const IDLE: Duration = Duration::from_secs(300);

/// Connections open at once, counted across every server that shares one
/// (a router's sockets, a tenant's).
pub struct Connections {
    max: AtomicUsize,
    open: AtomicUsize,
    /// Whose sockets, for the refusal: `this tenant's control sockets`.
    whose: String,
}

impl Connections {
    /// At most `max` connections at once; `whose` names the sockets in the
    /// refusal (`590 Too many connections: WHOSE serve MAX at once`).
    pub fn new(max: usize, whose: impl Into<String>) -> Arc<Connections> {
        Arc::new(Connections {
            max: AtomicUsize::new(max),
            open: AtomicUsize::new(0),
            whose: whose.into(),
        })
    }

    /// Changes the limit (connections already open stay).
    pub fn set_max(&self, max: usize) {
        self.max.store(max, Ordering::Relaxed);
    }

    /// The limit.
    pub fn limit(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Takes a slot if one is free; it is given back when the guard drops.
    fn take(self: &Arc<Self>) -> Option<Slot> {
        let max = self.max.load(Ordering::Relaxed);
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(self.clone()))
    }
}

/// One open connection's share of [`Connections`].
struct Slot(Arc<Connections>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What one server's clients may make it hold.
#[derive(Clone)]
pub struct Limits {
    /// Connections at once (shared with other servers given the same).
    pub connections: Arc<Connections>,
    /// The most bytes of `READDATA`/`WRITEDATA` data a command may carry,
    /// and of a value a read handler's answer may carry.
    pub max_data: usize,
}

impl Limits {
    /// `pronto run`'s: 64 connections per socket, data up to 16 MiB.
    pub fn standalone() -> Limits {
        Limits {
            connections: Connections::new(64, "this control socket"),
            max_data: MAX_DATA,
        }
    }
}

/// A control socket being served; dropping it stops the accepting thread
/// (connections end at their next request) and removes the socket file.
pub struct Server {
    stop: Arc<AtomicBool>,
    unix_path: Option<PathBuf>,
}

impl Server {
    /// Serves `listener` on a thread of its own, each connection on one
    /// more, calling handlers through `handlers`, within
    /// [`Limits::standalone`].
    pub fn start(
        listener: Listener,
        unix_path: Option<PathBuf>,
        handlers: Arc<dyn Handlers>,
        readonly: bool,
        verbose: bool,
    ) -> std::io::Result<Server> {
        Server::start_within(
            listener,
            unix_path,
            handlers,
            readonly,
            verbose,
            Limits::standalone(),
        )
    }

    /// [`Server::start`] within `limits`.
    pub fn start_within(
        listener: Listener,
        unix_path: Option<PathBuf>,
        handlers: Arc<dyn Handlers>,
        readonly: bool,
        verbose: bool,
        limits: Limits,
    ) -> std::io::Result<Server> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let how = Serving {
            readonly,
            verbose,
            limits,
        };
        std::thread::Builder::new()
            .name("controlsocket".into())
            .spawn(move || accept_loop(listener, handlers, how, s))?;
        Ok(Server { stop, unix_path })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(p) = &self.unix_path {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Click's `ControlSocket(TCP, PORT)` / `ControlSocket(UNIX, FILENAME)`.
pub struct ControlSocket {
    listener: Option<Listener>,
    readonly: bool,
    verbose: bool,
    /// The socket file to remove when the element goes.
    unix_path: Option<PathBuf>,
    /// The bound TCP port (the `port` handler).
    port: Option<u16>,
    server: Option<Server>,
}

impl ControlSocket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ControlSocket")
        .phase(pronto_elements::PHASE_INFO)
        .ports("0/0")
        .processing("a/a")
        .profile(ActionProfile::NONE)
        .doc(
            "ControlSocket(TCP, PORT [, KEYWORDS])\nControlSocket(UNIX, FILENAME [, KEYWORDS])\n\n\
             Opens a control socket other programs drive the router through, in Click's\n\
             line protocol (version 1.3): READ handler [args], READDATA handler N,\n\
             WRITE handler [args], WRITEDATA handler N, CHECKREAD handler, CHECKWRITE\n\
             handler, HELP, QUIT; answers with Click's response codes (200 OK, 500\n\
             syntax, 501 unimplemented, 510 no such element, 511 no such handler, 520\n\
             handler error, 521 data too large, 530 permission denied, 590 too many\n\
             connections). Limits: a command line of 64 KiB; 16 MiB (1 MiB in an\n\
             instance) of data in a command, refused before it is read, and of a value\n\
             read back; 64 connections (in an instance, the tenant's quota, across its\n\
             sockets); 5 minutes of silence. PORT `0` picks a\n\
             free port (see the `port` handler; in an instance, one of the tenant's\n\
             control socket ports). Keywords: READONLY (no write handlers), LOCALHOST (TCP on\n\
             127.0.0.1 only), VERBOSE (report connections on stderr); RETRIES and\n\
             RETRY_WARNINGS are accepted and ignored; PROXY is refused. Under `--threads`\n\
             it runs on thread 0 and reaches every thread's elements. In an instance\n\
             run by the daemon, the daemon opens the socket (TCP on 127.0.0.1 only, a\n\
             PORT from the tenant's range, never below 1024; a\n\
             UNIX FILENAME is a plain name, made in the daemon's state directory under\n\
             control/INSTANCE/) and serves it through the instance's handlers; `pronto\n\
             show` lists where.\n\n\
             Ports: none.",
        );

    /// Configures a `ControlSocket`: parses its arguments and binds
    /// (checks them only, where the socket is delegated).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let spec = SocketSpec::parse(ctx.config).map_err(ConfigError::new)?;
        let mut cs = ControlSocket {
            listener: None,
            readonly: spec.readonly,
            verbose: spec.verbose,
            unix_path: None,
            port: None,
            server: None,
        };
        if DELEGATED.load(Ordering::Relaxed) {
            if let Target::Tcp { port, .. } = spec.target {
                cs.port = Some(port);
            }
            return Ok(Box::new(cs));
        }
        match spec.target {
            Target::Tcp { port, localhost } => {
                let l = Listener::tcp(port, localhost).map_err(|e| {
                    ConfigError::new(format!("PORT: cannot listen on TCP port {port}: {e}"))
                })?;
                cs.port = l.port();
                cs.listener = Some(l);
            }
            Target::Unix(name) => {
                let path = ctx.path(&name);
                let l = Listener::unix(&path).map_err(|e| {
                    ConfigError::new(format!(
                        "FILENAME: cannot listen on {}: {e}",
                        path.display()
                    ))
                })?;
                cs.listener = Some(l);
                cs.unix_path = Some(path);
            }
        }
        Ok(Box::new(cs))
    }

    /// Starts serving through `remote` (the router calls this when it
    /// starts running).
    pub(crate) fn start(&mut self, remote: Remote) {
        let Some(listener) = self.listener.take() else {
            return;
        };
        self.server = Server::start(
            listener,
            self.unix_path.take(),
            Arc::new(remote),
            self.readonly,
            self.verbose,
        )
        .ok();
    }
}

impl Element for ControlSocket {
    fn handlers(&self) -> &'static [pronto_elements::HandlerInfo] {
        const H: &[pronto_elements::HandlerInfo] = &[
            pronto_elements::HandlerInfo::read("port"),
            pronto_elements::HandlerInfo::read("filename"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, pronto_elements::HandlerError> {
        match name {
            "port" => Ok(self.port.map(|p| p.to_string()).unwrap_or_default()),
            "filename" => Ok(self
                .unix_path
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()),
            _ => Err(pronto_elements::HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

/// The class entry, for the runtime's class lookup.
pub(crate) fn lookup(name: &str) -> Option<ClassEntry> {
    (name == "ControlSocket").then_some(ClassEntry {
        spec: &ControlSocket::SPEC,
        factory: ControlSocket::configure,
    })
}

trait Conn: Read + Write + Send {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Conn>>;
}

impl Conn for TcpStream {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Conn>> {
        Ok(Box::new(self.try_clone()?))
    }
}

impl Conn for UnixStream {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Conn>> {
        Ok(Box::new(self.try_clone()?))
    }
}

/// How a server serves its connections.
#[derive(Clone)]
struct Serving {
    readonly: bool,
    verbose: bool,
    limits: Limits,
}

fn accept_loop(l: Listener, remote: Arc<dyn Handlers>, how: Serving, stop: Arc<AtomicBool>) {
    // Non-blocking accepts polled a few times a second, so that the
    // thread (and the socket) go when the element does.
    let _ = match &l {
        Listener::Tcp(t) => t.set_nonblocking(true),
        Listener::Unix(u) => u.set_nonblocking(true),
    };
    while !stop.load(Ordering::Relaxed) {
        let conn: std::io::Result<Box<dyn Conn>> = match &l {
            Listener::Tcp(t) => t.accept().and_then(|(s, _)| {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(IDLE))?;
                Ok(Box::new(s) as Box<dyn Conn>)
            }),
            Listener::Unix(u) => u.accept().and_then(|(s, _)| {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(IDLE))?;
                Ok(Box::new(s) as Box<dyn Conn>)
            }),
        };
        match conn {
            Ok(mut c) => {
                let Some(slot) = how.limits.connections.take() else {
                    let slots = &how.limits.connections;
                    let mut out = b"Click::ControlSocket/1.3\r\n".to_vec();
                    line(
                        &mut out,
                        590,
                        &format!(
                            "Too many connections: {} serve {} at once",
                            slots.whose,
                            slots.max.load(Ordering::Relaxed)
                        ),
                        false,
                    );
                    let _ = c.write_all(&out);
                    continue;
                };
                if how.verbose {
                    eprintln!("ControlSocket: new connection");
                }
                let (r, s, how) = (remote.clone(), stop.clone(), how.clone());
                let _ = std::thread::Builder::new()
                    .name("controlsocket-conn".into())
                    .spawn(move || {
                        let _slot = slot;
                        let _ = serve(c, &*r, &how, &s);
                        if how.verbose {
                            eprintln!("ControlSocket: connection closed");
                        }
                    });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

/// One reply line: `CODE MESSAGE` (or `CODE-MESSAGE` when more follow).
fn line(out: &mut Vec<u8>, code: u16, msg: &str, more: bool) {
    let _ = write!(out, "{code}{}{msg}\r\n", if more { '-' } else { ' ' });
}

/// A handler failure as Click words it.
fn failure(out: &mut Vec<u8>, e: &CallError, write: bool, h: &str) {
    match e {
        CallError::NoElement(el) => line(out, 510, &format!("No element named '{el}'"), false),
        CallError::NoHandler(..) => line(out, 511, &format!("No handler named '{h}'"), false),
        CallError::Failed(_, msg) => {
            let what = if write { "Write" } else { "Read" };
            line(out, 520, &format!("{what} handler '{h}' error:"), true);
            line(out, 520, msg, false);
        }
    }
}

/// How reading one command line ended.
#[derive(Debug, PartialEq)]
enum Got {
    /// A line (in the buffer, with its end).
    Line,
    /// The connection ended first.
    End,
    /// `max` bytes came without a line end.
    TooLong,
}

/// Reads one line into `buf`, taking at most `max` bytes from `r`.
fn read_line_within(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Got> {
    buf.clear();
    loop {
        let avail = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(if buf.is_empty() { Got::End } else { Got::Line });
        }
        let room = max - buf.len();
        let (take, done) = match avail.iter().take(room).position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len().min(room), false),
        };
        buf.extend_from_slice(&avail[..take]);
        r.consume(take);
        if done {
            return Ok(Got::Line);
        }
        if buf.len() >= max {
            return Ok(Got::TooLong);
        }
    }
}

/// The `n` bytes of data of a `READDATA`/`WRITEDATA` (`n` within the
/// limit, checked by the caller); `None` when the connection ended first.
fn data(r: &mut impl Read, n: usize) -> Option<String> {
    let mut b = vec![0u8; n];
    r.read_exact(&mut b).ok()?;
    Some(String::from_utf8_lossy(&b).into_owned())
}

/// Reads and throws away `n` bytes (data refused as too large), keeping
/// none of them.
fn skip(r: &mut impl Read, n: usize) {
    let _ = std::io::copy(&mut r.take(n as u64), &mut std::io::sink());
}

fn serve(
    c: Box<dyn Conn>,
    remote: &dyn Handlers,
    how: &Serving,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let w = c.try_clone_box()?;
    serve_stream(
        BufReader::new(c),
        w,
        remote,
        how.readonly,
        how.limits.max_data,
        stop,
    )
}

/// The data limit of a stand-alone socket ([`Limits::standalone`]).
pub const MAX_DATA: usize = 16 << 20;

/// Serves Click's ControlSocket protocol on one connection: reads command
/// lines (and their data) from `r`, answers on `w`, calling handlers
/// through `remote`, until `QUIT`, end of stream, a line over
/// [`MAX_LINE`], or `stop`; data over `max_data` is refused and skipped.
/// The client is untrusted: no input makes this panic or hold more than
/// those limits.
pub fn serve_stream<R: BufRead, W: Write>(
    mut r: R,
    mut w: W,
    remote: &dyn Handlers,
    readonly: bool,
    max_data: usize,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    w.write_all(b"Click::ControlSocket/1.3\r\n")?;
    let mut raw = Vec::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        match read_line_within(&mut r, &mut raw, MAX_LINE)? {
            Got::End => return Ok(()),
            Got::TooLong => {
                let mut out = Vec::new();
                line(
                    &mut out,
                    500,
                    &format!("Line too long (the limit is {MAX_LINE} bytes)"),
                    false,
                );
                w.write_all(&out)?;
                return Ok(());
            }
            Got::Line => {}
        }
        let text = String::from_utf8_lossy(&raw);
        let text = text.trim_end_matches(['\r', '\n']);
        let words: Vec<&str> = text.split_whitespace().collect();
        let Some(cmd) = words.first() else {
            continue;
        };
        let mut out = Vec::new();
        let cmd = cmd.to_ascii_uppercase();
        let too_big = |out: &mut Vec<u8>, write: bool, h: &str, n: usize| {
            line(
                out,
                521,
                &format!(
                    "Data too large for {} handler '{h}' ({n} bytes; the limit is {max_data})",
                    if write { "write" } else { "read" }
                ),
                false,
            )
        };
        match (cmd.as_str(), words.len()) {
            ("QUIT", 1) => {
                line(&mut out, 200, "Goodbye!", false);
                w.write_all(&out)?;
                return Ok(());
            }
            ("READ", n) if n >= 2 => {
                let args = words[2..].join(" ");
                read(&mut out, remote, words[1], &args, max_data);
            }
            ("READDATA" | "WRITEDATA", 3) => {
                let write = cmd == "WRITEDATA";
                let Ok(n) = words[2].parse::<usize>() else {
                    line(&mut out, 500, &format!("Syntax error in '{cmd}'"), false);
                    w.write_all(&out)?;
                    continue;
                };
                if n > max_data {
                    // Refused before the data is read; then it is skipped.
                    too_big(&mut out, write, words[1], n);
                    w.write_all(&out)?;
                    skip(&mut r, n);
                    continue;
                }
                match data(&mut r, n) {
                    Some(args) if write => write_h(&mut out, remote, readonly, words[1], &args),
                    Some(args) => read(&mut out, remote, words[1], &args, max_data),
                    None => line(&mut out, 500, "Not enough data", false),
                }
            }
            ("WRITE", n) if n >= 2 => {
                let args = words[2..].join(" ");
                write_h(&mut out, remote, readonly, words[1], &args);
            }
            ("CHECKREAD", 2) | ("CHECKWRITE", 2) => {
                check(&mut out, remote, readonly, words[1], cmd == "CHECKWRITE")
            }
            ("HELP", 1) => {
                for (i, l) in [
                    "Commands supported:",
                    "READ handler [arg...]   call read handler, return DATA",
                    "READDATA handler len    call read handler with len data bytes, return DATA",
                    "WRITE handler [arg...]  call write handler",
                    "WRITEDATA handler len   call write handler, pass len data bytes",
                    "CHECKREAD handler       check if read handler is valid",
                    "CHECKWRITE handler      check if write handler is valid",
                    "QUIT                    close connection",
                ]
                .iter()
                .enumerate()
                {
                    line(&mut out, 200, l, i < 7);
                }
            }
            (
                "READ" | "READDATA" | "WRITE" | "WRITEDATA" | "CHECKREAD" | "CHECKWRITE" | "QUIT"
                | "HELP",
                _,
            ) => line(&mut out, 500, "Wrong number of arguments", false),
            (other, _) => line(
                &mut out,
                501,
                &format!("Command '{other}' unimplemented"),
                false,
            ),
        }
        w.write_all(&out)?;
    }
}

/// A read handler's answer; a value over `max` bytes is not sent (the
/// connection would hold it until a client that may never read takes it).
fn read(out: &mut Vec<u8>, remote: &dyn Handlers, h: &str, args: &str, max: usize) {
    match remote.read(h, args) {
        Ok(v) if v.len() > max => failure(
            out,
            &CallError::Failed(
                h.to_string(),
                format!(
                    "the value is {} bytes; this socket sends at most {max}",
                    v.len()
                ),
            ),
            false,
            h,
        ),
        Ok(v) => {
            line(out, 200, &format!("Read handler '{h}' OK"), false);
            let _ = write!(out, "DATA {}\r\n", v.len());
            out.extend_from_slice(v.as_bytes());
        }
        Err(e) => failure(out, &e, false, h),
    }
}

fn write_h(out: &mut Vec<u8>, remote: &dyn Handlers, readonly: bool, h: &str, value: &str) {
    if readonly {
        return line(out, 530, &format!("Permission denied for '{h}'"), false);
    }
    match remote.write(h, value) {
        Ok(()) => line(out, 200, &format!("Write handler '{h}' OK"), false),
        Err(e) => failure(out, &e, true, h),
    }
}

/// CHECKREAD / CHECKWRITE: whether the handler exists with that mode,
/// from the element's `handlers` list (global handlers: the read-only
/// ones Click has).
fn check(out: &mut Vec<u8>, remote: &dyn Handlers, readonly: bool, h: &str, write: bool) {
    let what = if write { "Write" } else { "Read" };
    if write && readonly {
        return line(out, 530, &format!("Permission denied for '{h}'"), false);
    }
    let mode = match h.rsplit_once('.') {
        None => {
            let globals = [
                "version",
                "list",
                "classes",
                "config",
                "flatconfig",
                "requirements",
            ];
            globals.contains(&h).then_some("r".to_string())
        }
        Some((el, name)) => match remote.read(&format!("{el}.handlers"), "") {
            Err(e @ CallError::NoElement(_)) => return failure(out, &e, write, h),
            Err(_) => None,
            Ok(list) => list.lines().find_map(|l| {
                let mut it = l.split_whitespace();
                (it.next() == Some(name)).then(|| it.next().unwrap_or("").to_string())
            }),
        },
    };
    match mode {
        Some(m) if m.contains(if write { 'w' } else { 'r' }) => {
            line(out, 200, &format!("{what} handler '{h}' OK"), false)
        }
        Some(_) => line(
            out,
            511,
            &format!(
                "Handler '{h}' not {}",
                if write { "writable" } else { "readable" }
            ),
            false,
        ),
        None => line(
            out,
            511,
            &format!(
                "No {} handler named '{h}'",
                if write { "write" } else { "read" }
            ),
            false,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Handlers of one element `e`: `e.v` reads back what was written.
    struct Echo(std::sync::Mutex<String>);

    impl Handlers for Echo {
        fn read(&self, h: &str, _args: &str) -> Result<String, CallError> {
            match h {
                "e.v" => Ok(self.0.lock().map(|v| v.clone()).unwrap_or_default()),
                _ => Err(CallError::NoElement(h.to_string())),
            }
        }
        fn write(&self, h: &str, value: &str) -> Result<(), CallError> {
            match h {
                "e.v" => {
                    if let Ok(mut v) = self.0.lock() {
                        *v = value.to_string();
                    }
                    Ok(())
                }
                _ => Err(CallError::NoElement(h.to_string())),
            }
        }
    }

    /// What the server answers to `input`.
    fn session(input: &[u8]) -> String {
        let h = Echo(std::sync::Mutex::new(String::new()));
        let mut out = Vec::new();
        serve_stream(
            input,
            &mut out,
            &h,
            false,
            MAX_DATA,
            &AtomicBool::new(false),
        )
        .expect("served");
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn data_commands_round_trip() {
        assert_eq!(
            session(b"WRITEDATA e.v 5\r\nhello\r\nREAD e.v\r\nQUIT\r\n"),
            "Click::ControlSocket/1.3\r\n200 Write handler 'e.v' OK\r\n\
             200 Read handler 'e.v' OK\r\nDATA 5\r\nhello200 Goodbye!\r\n"
        );
    }

    #[test]
    fn huge_data_lengths_are_refused_without_allocating() {
        // Announcing 10^17 bytes once made the server try to allocate them
        // (and abort the process). Refused at once; what follows is taken
        // as the announced data (here, the end of the stream).
        let s = session(b"WRITEDATA e.v 100000000000000000\r\nQUIT\r\n");
        assert!(
            s.starts_with("Click::ControlSocket/1.3\r\n521 Data too large for write handler 'e.v'"),
            "{s}"
        );
        // Announced but not sent: answered, not waited for forever.
        assert_eq!(
            session(b"READDATA e.v 1000\r\nab"),
            "Click::ControlSocket/1.3\r\n500 Not enough data\r\n"
        );
    }

    #[test]
    fn invalid_utf8_is_read_as_text() {
        assert_eq!(
            session(b"\xff\xfe READ\r\nQUIT\r\n"),
            "Click::ControlSocket/1.3\r\n501 Command '\u{fffd}\u{fffd}' unimplemented\r\n200 Goodbye!\r\n"
        );
    }

    #[test]
    fn lines_are_read_within_the_limit() {
        let mut buf = Vec::new();
        let mut r = BufReader::with_capacity(4, &b"READ a.b\r\nQUIT\r\nxxxxxxxxxx"[..]);
        assert_eq!(
            read_line_within(&mut r, &mut buf, 64).expect("io"),
            Got::Line
        );
        assert_eq!(buf, b"READ a.b\r\n");
        assert_eq!(
            read_line_within(&mut r, &mut buf, 64).expect("io"),
            Got::Line
        );
        assert_eq!(buf, b"QUIT\r\n");
        // Eight bytes of a line without an end: too long, and no more was
        // taken from the reader than the limit.
        assert_eq!(
            read_line_within(&mut r, &mut buf, 8).expect("io"),
            Got::TooLong
        );
        assert_eq!(buf, b"xxxxxxxx");
        assert_eq!(
            read_line_within(&mut r, &mut buf, 8).expect("io"),
            Got::Line
        );
        assert_eq!(buf, b"xx");
        assert_eq!(read_line_within(&mut r, &mut buf, 8).expect("io"), Got::End);
    }

    #[test]
    fn data_is_taken_whole_or_skipped() {
        let mut r = &b"hello, rest"[..];
        assert_eq!(data(&mut r, 5).as_deref(), Some("hello"));
        skip(&mut r, 2);
        assert_eq!(r, b"rest");
        assert_eq!(data(&mut r, 9), None);
    }

    #[test]
    fn connections_are_counted_across_servers() {
        let c = Connections::new(2, "these sockets");
        let a = c.take().expect("one");
        let b = c.take().expect("two");
        assert!(c.take().is_none());
        assert_eq!(c.open(), 2);
        drop(a);
        let _c = c.take().expect("a freed slot");
        c.set_max(1);
        drop(b);
        assert!(c.take().is_none(), "one open, the limit now one");
    }
}
