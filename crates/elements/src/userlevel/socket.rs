//! `Socket`: packets over a TCP, UDP or Unix-domain socket. Input packets
//! are written to the socket; what the socket reads is pushed out.
//!
//! The same engine serves Click's deprecated `FromSocket` (push only) and
//! `ToSocket` (pull only), each in its own file.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use pronto_packet::{Batch, Packet, DEFAULT_HEADROOM, EXTRA_LENGTH_ANNO_OFFSET, MAX_PACKET};
use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvFlags, SendFlags, SocketAddrAny, SocketAddrUnix, SocketFlags, SocketType,
};

use crate::ip::route_table::RoutePrefixes;
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Ip4, Out, PullFrom,
    Spec, TaskStatus, WaitFd,
};

/// Click's listen backlog.
const BACKLOG: i32 = 2;
/// Longest Unix socket path (`sun_path` less its terminating NUL).
const MAX_UNIX_PATH: usize = 107;

/// The keywords of `Socket`, `FromSocket` and `ToSocket`.
pub(crate) const KEYWORDS: &[&str] = &[
    "VERBOSE",
    "SNAPLEN",
    "HEADROOM",
    "TIMESTAMP",
    "RCVBUF",
    "SNDBUF",
    "NODELAY",
    "CLIENT",
    "PROPER",
    "ALLOW",
    "DENY",
    "BURST",
    "ADDR",
    "PORT",
    "LOCAL_ADDR",
    "LOCAL_PORT",
    "FILENAME",
    "LOCAL_FILENAME",
];

/// The text shared by the three classes' documentation: arguments,
/// keywords, differences and handlers.
macro_rules! socket_doc_body {
    () => {
        "TYPE is TCP, UDP, UNIX (a stream socket on a file name) or UNIX_DGRAM\n\
         (a datagram socket on a file name). A stream socket writes each input\n\
         packet's bytes in order and pushes out what it reads, at most SNAPLEN\n\
         bytes per packet; a datagram socket sends each input packet as one\n\
         datagram and pushes out each datagram it receives as one packet.\n\n\
         A server (the default when the element has outputs) binds ADDR:PORT\n\
         (or FILENAME) and, for TCP and UNIX, accepts one connection at a time;\n\
         a client (CLIENT true, or no outputs, or a LOCAL_* argument given)\n\
         connects to it at configuration (TCP, UNIX: a refused connection fails\n\
         the configuration, as in Click) and binds the LOCAL_* address first if\n\
         given. A datagram server sends its input to the last peer it received\n\
         from; a datagram client sends to ADDR:PORT, or, when ADDR is 0.0.0.0,\n\
         to each packet's destination IP annotation at PORT. A connection that\n\
         ends or fails is closed; a server then accepts the next one, a client\n\
         stays unconnected and drops its input.\n\n\
         ALLOW and DENY name route-table elements (RadixIPLookup,\n\
         DirectIPLookup, LinearIPLookup, StaticIPLookup, SortedIPLookup,\n\
         RangeIPLookup): a TCP server accepts a connection, and a UDP server a\n\
         datagram, from an address some ALLOW route covers; otherwise it\n\
         refuses those some DENY route covers (counted in `denied'). The\n\
         tables' routes are read at configuration: routes added later by\n\
         handlers do not count.\n\n\
         Received packets carry the receive time (TIMESTAMP true); a datagram\n\
         longer than SNAPLEN (or than a packet buffer, 1,920 bytes) is cut to\n\
         it, with the extra length annotation set to what was cut (Click's\n\
         way), and counted in `truncated'. A pull input writes whenever the\n\
         socket has room; a push input waits up to one second for room (Click\n\
         waits for ever), then drops the packet (a stream connection that lost\n\
         part of a packet is closed). Input with no peer to send to (no\n\
         connection yet, or a datagram server that has heard from nobody) is\n\
         dropped. Every drop is counted in `drops'. An empty datagram is\n\
         ignored (Click closes its socket on one). No descriptor is opened\n\
         by `pronto check`.\n\n\
         In a sandboxed instance (pronto daemon) the element lives in the\n\
         instance's own network namespace: it reaches only that namespace's\n\
         loopback (no interface but the switch ports, which carry frames, not\n\
         the instance's sockets) and the files of its sandbox.\n\n\
         Arguments:\n  \
         TYPE            TCP, UDP, UNIX or UNIX_DGRAM\n  \
         ADDR, PORT      (TCP, UDP) the address and port to bind (server) or to\n                  \
         reach (client); PORT may be a service name\n  \
         LOCAL_ADDR, LOCAL_PORT  (TCP, UDP) a client's own address and port\n  \
         FILENAME        (UNIX, UNIX_DGRAM) the socket file (at most 107 bytes)\n  \
         LOCAL_FILENAME  (UNIX, UNIX_DGRAM) a client's own socket file\n\
         Keywords:\n  \
         CLIENT     boolean: connect rather than listen (default: false, true\n             \
         without outputs)\n  \
         SNAPLEN    bytes read per packet, at least 1 (default 2048; at most a\n             \
         packet buffer's 1,920 are kept)\n  \
         NODELAY    boolean: TCP_NODELAY (default true)\n  \
         SNDBUF, RCVBUF  the socket's buffer sizes in bytes (default: the\n             \
         kernel's)\n  \
         TIMESTAMP  boolean: stamp received packets (default true)\n  \
         ALLOW, DENY  route-table elements (see above)\n  \
         VERBOSE    boolean: report connections opened and closed on\n             \
         standard error (default false)\n  \
         HEADROOM   bytes, at most 128 (accepted; packets have 128)\n  \
         PROPER     boolean; PlanetLab only: accepted, ignored\n  \
         BURST      packets read (and pulled) per task run, at least 1\n             \
         (default 1; pronto's)\n\
         Handlers:\n  \
         received (read: packets pushed out), sent (read: packets written),\n  \
         drops (read), truncated (read), denied (read: connections and\n  \
         datagrams refused by ALLOW/DENY), connected (read: true while a\n  \
         peer is connected: a TCP/UNIX server's client or a client's\n  \
         server; datagram sockets always true) (all pronto's)"
    };
}
pub(crate) use socket_doc_body;

/// Which socket the configuration asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Tcp,
    Udp,
    Unix,
    UnixDgram,
}

impl Kind {
    fn stream(self) -> bool {
        matches!(self, Kind::Tcp | Kind::Unix)
    }

    fn inet(self) -> bool {
        matches!(self, Kind::Tcp | Kind::Udp)
    }
}

/// Where a socket binds or connects.
#[derive(Clone, Debug)]
enum Addr {
    Inet(SocketAddrV4),
    Unix(String),
    /// A Linux abstract socket name (without its leading NUL), any bytes.
    Abstract(Vec<u8>),
}

impl Addr {
    fn sockaddr(&self) -> Result<SocketAddrAny, Errno> {
        match self {
            Addr::Inet(a) => Ok((*a).into()),
            Addr::Unix(p) => {
                if let Some(name) = p.strip_prefix('\0') {
                    SocketAddrUnix::new_abstract_name(name.as_bytes()).map(Into::into)
                } else {
                    SocketAddrUnix::new(p.as_str()).map(Into::into)
                }
            }
            Addr::Abstract(name) => SocketAddrUnix::new_abstract_name(name).map(Into::into),
        }
    }
}

impl std::fmt::Display for Addr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Addr::Inet(a) => write!(f, "{}:{}", a.ip(), a.port()),
            Addr::Unix(p) => f.write_str(p),
            Addr::Abstract(name) => write!(f, "@{}", name.escape_ascii()),
        }
    }
}

/// The element's configuration, as read (nothing opened).
struct Conf {
    kind: Kind,
    client: bool,
    remote: Addr,
    local: Option<Addr>,
    snaplen: usize,
    nodelay: bool,
    sndbuf: Option<usize>,
    rcvbuf: Option<usize>,
    timestamp: bool,
    verbose: bool,
    burst: usize,
    allow: Option<Arc<RoutePrefixes>>,
    deny: Option<Arc<RoutePrefixes>>,
}

/// The outcome of one write attempt.
enum Wrote {
    /// All of the packet went.
    Done,
    /// The socket is full; what is left of the packet is still in it.
    Blocked,
    /// The connection failed (and was closed), or there is nobody to send
    /// to: the packet is lost.
    Failed,
}

/// A socket element (Socket, FromSocket or ToSocket).
pub struct Socket {
    decl: String,
    conf: Conf,
    /// A stream server's listening socket.
    listener: Option<OwnedFd>,
    /// The socket packets go through: a stream connection, or the datagram
    /// socket.
    active: Option<OwnedFd>,
    /// Where a datagram socket sends (a server: its last peer).
    peer: Option<SocketAddrAny>,
    /// The bound Unix socket file, removed at clean-up.
    unlink: Option<String>,
    has_output: bool,
    pull: bool,
    /// Pulled packets the socket had no room for yet (at most BURST; the
    /// front one may be partly written).
    pending: VecDeque<Packet>,
    /// The packet the next read goes into, kept between task runs (Click's
    /// `_rq`) so that an empty poll neither allocates nor frees.
    spare: Option<Packet>,
    empty_polls: u32,
    received: u64,
    sent: u64,
    drops: u64,
    truncated: u64,
    denied: u64,
    messages: Vec<(bool, String)>,
    /// A descriptor held for the element's life (UMLSwitch's control
    /// connection: the switch drops the port when it closes).
    keep: Option<OwnedFd>,
}

/// The C library's text for an error (Click prints `strerror`).
pub(crate) fn strerror(e: Errno) -> String {
    let s = std::io::Error::from_raw_os_error(e.raw_os_error()).to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Reads a `TYPE`-dependent port (a number or service name).
pub(crate) fn port_arg(a: &mut crate::Args, name: &str) -> Result<Option<u16>, ConfigError> {
    match a.read_p::<String>(name)? {
        None => Ok(None),
        Some(s) => crate::tcpudp::parse_port(name, &s).map(Some),
    }
}

/// Reads the route-table element named by `ALLOW` or `DENY`.
fn table(
    ctx: &ConfigCtx<'_>,
    kw: &str,
    name: Option<String>,
) -> Result<Option<Arc<RoutePrefixes>>, ConfigError> {
    let Some(name) = name else {
        return Ok(None);
    };
    let peer = ctx.peer(&name).ok_or_else(|| {
        cfg_err(format!(
            "{kw}: no element named `{name}` (name a route table such as RadixIPLookup)"
        ))
    })?;
    peer.shared
        .and_then(|s| s.downcast::<RoutePrefixes>().ok())
        .map(Some)
        .ok_or_else(|| cfg_err(format!("{kw}: {name} is not an IPRouteTable")))
}

/// Checks a Unix socket file name's length, as Click does.
fn unix_path(what: &str, p: &str) -> Result<(), ConfigError> {
    let too_long = if p.starts_with('\0') {
        p.len() > MAX_UNIX_PATH + 1
    } else {
        p.len() > MAX_UNIX_PATH
    };
    if too_long {
        return Err(cfg_err(format!(
            "{what} filename '{p}' too long (at most {MAX_UNIX_PATH} bytes)"
        )));
    }
    Ok(())
}

impl Socket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("Socket")
        .ports("0-1/0-1")
        .processing("a/h")
        .flow("x/y")
        .keywords(KEYWORDS)
        .profile(ActionProfile::NONE.dropping())
        .doc(concat!(
            "Socket(TYPE, ADDR, PORT [, LOCAL_ADDR] [, LOCAL_PORT] [, KEYWORDS])  (TCP, UDP)\n\
             Socket(TYPE, FILENAME [, LOCAL_FILENAME] [, KEYWORDS])  (UNIX, UNIX_DGRAM)\n\n\
             A socket transport: input packets are sent to a remote host or\n\
             process, and what it sends back is pushed out of output 0. Packets\n\
             do not flow through the element.\n\n\
             Ports: 0 or 1 input (pull or push); 0 or 1 push output.\n\n",
            socket_doc_body!()
        ));

    /// Configures a `Socket`.
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        Ok(Box::new(Socket::open(ctx, "Socket")?))
    }

    /// Reads the arguments and, unless checking, opens the socket. `class`
    /// names the element's class in messages.
    pub(crate) fn open(ctx: &ConfigCtx<'_>, class: &str) -> Result<Socket, ConfigError> {
        let conf = Socket::read_conf(ctx)?;
        let mut s = Socket::unopened(ctx, class, conf);
        if crate::world::check_only() {
            return Ok(s);
        }
        s.start()?;
        Ok(s)
    }

    /// A UNIX_DGRAM client between two abstract socket names (UMLSwitch's
    /// data path), opened, holding `keep` (its control connection) open.
    pub(crate) fn abstract_dgram(
        ctx: &ConfigCtx<'_>,
        class: &str,
        remote: Vec<u8>,
        local: Vec<u8>,
        keep: OwnedFd,
    ) -> Result<Socket, ConfigError> {
        let conf = Conf {
            kind: Kind::UnixDgram,
            client: true,
            remote: Addr::Abstract(remote),
            local: Some(Addr::Abstract(local)),
            snaplen: 2048usize.min(MAX_PACKET),
            nodelay: false,
            sndbuf: None,
            rcvbuf: None,
            timestamp: true,
            verbose: false,
            burst: 1,
            allow: None,
            deny: None,
        };
        let mut s = Socket::unopened(ctx, class, conf);
        s.keep = Some(keep);
        s.start()?;
        Ok(s)
    }

    /// The element before its socket is opened (what `pronto check` gets).
    pub(crate) fn unopened_for_check(ctx: &ConfigCtx<'_>, class: &str) -> Socket {
        let conf = Conf {
            kind: Kind::UnixDgram,
            client: true,
            remote: Addr::Abstract(Vec::new()),
            local: None,
            snaplen: 1,
            nodelay: false,
            sndbuf: None,
            rcvbuf: None,
            timestamp: true,
            verbose: false,
            burst: 1,
            allow: None,
            deny: None,
        };
        Socket::unopened(ctx, class, conf)
    }

    fn unopened(ctx: &ConfigCtx<'_>, class: &str, conf: Conf) -> Socket {
        let decl = format!("{} :: {class}", ctx.name);
        let pull = ctx.ninputs > 0 && !ctx.input_push.first().copied().unwrap_or(true);
        Socket {
            decl,
            listener: None,
            active: None,
            peer: None,
            unlink: None,
            has_output: ctx.noutputs > 0,
            pull,
            pending: VecDeque::with_capacity(conf.burst),
            spare: None,
            empty_polls: 0,
            received: 0,
            sent: 0,
            drops: 0,
            truncated: 0,
            denied: 0,
            messages: Vec::new(),
            keep: None,
            conf,
        }
    }

    fn read_conf(ctx: &ConfigCtx<'_>) -> Result<Conf, ConfigError> {
        let mut a = ctx.args();
        let ty: String = a.read_mp("TYPE")?;
        let verbose = a.read_or("VERBOSE", false)?;
        let snaplen: u32 = a.read_or("SNAPLEN", 2048)?;
        let headroom: Option<u32> = a.read("HEADROOM")?;
        let timestamp = a.read_or("TIMESTAMP", true)?;
        let rcvbuf: Option<u32> = a.read("RCVBUF")?;
        let sndbuf: Option<u32> = a.read("SNDBUF")?;
        let nodelay = a.read_or("NODELAY", true)?;
        let client: Option<bool> = a.read("CLIENT")?;
        let _proper: Option<bool> = a.read("PROPER")?;
        let allow: Option<String> = a.read("ALLOW")?;
        let deny: Option<String> = a.read("DENY")?;
        let burst: u32 = a.read_or("BURST", 1)?;
        let kind = match ty.to_ascii_uppercase().as_str() {
            "TCP" => Kind::Tcp,
            "UDP" => Kind::Udp,
            "UNIX" => Kind::Unix,
            "UNIX_DGRAM" => Kind::UnixDgram,
            _ => {
                return Err(cfg_err(format!(
                    "unknown socket type `{ty}' (expected TCP, UDP, UNIX or UNIX_DGRAM)"
                )))
            }
        };
        let (remote, local) = if kind.inet() {
            let addr: Ip4 = a.read_mp("ADDR")?;
            let port = port_arg(&mut a, "PORT")?
                .ok_or_else(|| cfg_err("missing mandatory PORT argument"))?;
            let laddr: Option<Ip4> = a.read_p("LOCAL_ADDR")?;
            let lport = port_arg(&mut a, "LOCAL_PORT")?;
            let local = (laddr.is_some() || lport.is_some()).then(|| {
                Addr::Inet(SocketAddrV4::new(
                    Ipv4Addr::from(laddr.unwrap_or_default().0),
                    lport.unwrap_or(0),
                ))
            });
            (
                Addr::Inet(SocketAddrV4::new(Ipv4Addr::from(addr.0), port)),
                local,
            )
        } else {
            let file: String = a.read_mp("FILENAME")?;
            let lfile: Option<String> = a.read_p("LOCAL_FILENAME")?;
            let file = ctx.path(&file).to_string_lossy().into_owned();
            let lfile = lfile.map(|f| ctx.path(&f).to_string_lossy().into_owned());
            unix_path("remote", &file)?;
            if let Some(l) = &lfile {
                unix_path("local", l)?;
            }
            (Addr::Unix(file), lfile.map(Addr::Unix))
        };
        a.finish()?;
        if snaplen == 0 {
            return Err(cfg_err("SNAPLEN must be at least 1"));
        }
        if headroom.is_some_and(|h| h as usize > DEFAULT_HEADROOM) {
            return Err(cfg_err(format!(
                "HEADROOM too large: pronto packets have {DEFAULT_HEADROOM} bytes of headroom"
            )));
        }
        if burst == 0 {
            return Err(cfg_err("BURST must be at least 1"));
        }
        let allow = table(ctx, "ALLOW", allow)?;
        let deny = table(ctx, "DENY", deny)?;
        // Click: a client without outputs, a client when a local address is
        // given, unless CLIENT says otherwise.
        let client = client.unwrap_or(ctx.noutputs == 0 || local.is_some());
        Ok(Conf {
            kind,
            client,
            remote,
            local: if client { local } else { None },
            snaplen: (snaplen as usize).min(MAX_PACKET),
            nodelay,
            sndbuf: sndbuf.map(|v| v as usize),
            rcvbuf: rcvbuf.map(|v| v as usize),
            timestamp,
            verbose,
            burst: (burst as usize).min(pronto_packet::BATCH_MAX),
            allow,
            deny,
        })
    }

    /// Opens, binds and connects (or listens on) the socket.
    fn start(&mut self) -> Result<(), ConfigError> {
        let c = &self.conf;
        let sys = |what: &str, e: Errno| cfg_err(format!("{what}: {}", strerror(e)));
        let family = if c.kind.inet() {
            AddressFamily::INET
        } else {
            AddressFamily::UNIX
        };
        let ty = if c.kind.stream() {
            SocketType::STREAM
        } else {
            SocketType::DGRAM
        };
        let fd = rustix::net::socket_with(family, ty, SocketFlags::CLOEXEC, None)
            .map_err(|e| sys("socket", e))?;
        if c.kind == Kind::Tcp && c.nodelay {
            rustix::net::sockopt::set_tcp_nodelay(&fd, true)
                .map_err(|e| sys("setsockopt(TCP_NODELAY)", e))?;
        }
        if let Some(v) = c.sndbuf {
            rustix::net::sockopt::set_socket_send_buffer_size(&fd, v)
                .map_err(|e| sys("setsockopt(SO_SNDBUF)", e))?;
        }
        if let Some(v) = c.rcvbuf {
            rustix::net::sockopt::set_socket_recv_buffer_size(&fd, v)
                .map_err(|e| sys("setsockopt(SO_RCVBUF)", e))?;
        }
        let bind_to = if c.client {
            c.local.clone()
        } else {
            Some(c.remote.clone())
        };
        if let Some(b) = &bind_to {
            let sa = b.sockaddr().map_err(|e| sys("bind", e))?;
            rustix::net::bind(&fd, &sa).map_err(|e| sys("bind", e))?;
            if let Addr::Unix(p) = b {
                if !p.starts_with('\0') {
                    self.unlink = Some(p.clone());
                }
            }
        }
        let remote = c.remote.sockaddr().map_err(|e| sys("connect", e))?;
        if c.client {
            if c.kind.stream() {
                rustix::net::connect(&fd, &remote).map_err(|e| sys("connect", e))?;
                if c.verbose {
                    eprintln!("{}: opened connection to {}", self.decl, c.remote);
                }
            } else {
                self.peer = Some(remote);
            }
            self.active = Some(fd);
        } else if c.kind.stream() {
            rustix::net::listen(&fd, BACKLOG).map_err(|e| sys("listen", e))?;
            if c.verbose {
                eprintln!("{}: listening for connections on {}", self.decl, c.remote);
            }
            self.listener = Some(fd);
        } else {
            self.active = Some(fd);
        }
        for f in self.listener.iter().chain(self.active.iter()) {
            rustix::io::ioctl_fionbio(f, true).map_err(|e| sys("fcntl(O_NONBLOCK)", e))?;
        }
        Ok(())
    }

    /// True if ALLOW/DENY let `a` in (Click's `allowed`).
    fn allowed(&self, a: [u8; 4]) -> bool {
        if self.conf.allow.as_ref().is_some_and(|t| t.covers(a)) {
            return true;
        }
        !self.conf.deny.as_ref().is_some_and(|t| t.covers(a))
    }

    /// Closes the connection (a stream's; a datagram socket is kept).
    fn close_active(&mut self, why: Option<Errno>) {
        if let Some(fd) = self.active.take() {
            if self.conf.verbose {
                match why {
                    Some(e) => eprintln!("{}: {}; closed connection", self.decl, strerror(e)),
                    None => eprintln!("{}: closed connection", self.decl),
                }
            }
            drop(fd);
        }
        // What was waiting for this connection cannot go to the next one
        // (a stream must not resume mid-packet).
        self.drops += self.pending.len() as u64;
        self.pending.clear();
        self.spare = None;
    }

    /// A stream server without a connection accepts one, if one waits.
    fn accept(&mut self) {
        let Some(l) = &self.listener else { return };
        if self.active.is_some() {
            return;
        }
        let (fd, from) = match rustix::net::acceptfrom_with(l, SocketFlags::CLOEXEC) {
            Ok(x) => x,
            Err(Errno::AGAIN | Errno::INTR) => return,
            Err(e) => {
                eprintln!("{}: accept: {}", self.decl, strerror(e));
                return;
            }
        };
        let v4 = from.and_then(|a| SocketAddrV4::try_from(a).ok());
        if let Some(v4) = v4 {
            let allow = self.allowed(v4.ip().octets());
            if self.conf.verbose {
                eprintln!(
                    "{}: {} connection from {}:{}",
                    self.decl,
                    if allow { "opened" } else { "denied" },
                    v4.ip(),
                    v4.port()
                );
            }
            if !allow {
                self.denied += 1;
                return;
            }
        } else if self.conf.verbose {
            eprintln!("{}: opened connection", self.decl);
        }
        if rustix::io::ioctl_fionbio(&fd, true).is_err() {
            return;
        }
        self.active = Some(fd);
    }

    /// Reads up to BURST packets and emits them on output 0. True if any
    /// came.
    fn receive(&mut self, out: &mut Out<'_>) -> bool {
        let mut got = false;
        for _ in 0..self.conf.burst {
            let Some(fd) = &self.active else { break };
            let Some(mut p) = self.spare.take().or_else(|| out.pool.alloc()) else {
                break;
            };
            p.take(p.len());
            p.anno_bytes_mut().fill(0);
            let buf = p.put_uninit(self.conf.snaplen);
            let stream = self.conf.kind.stream();
            let r = if stream {
                rustix::net::recv(fd, &mut *buf, RecvFlags::empty()).map(|(_, n)| (n, None))
            } else {
                rustix::net::recvfrom(fd, &mut *buf, RecvFlags::TRUNC).map(|(_, n, a)| (n, a))
            };
            let (n, from) = match r {
                Ok((0, _)) if stream => {
                    self.close_active(None);
                    self.spare = Some(p);
                    break;
                }
                Ok(x) => x,
                Err(Errno::AGAIN | Errno::INTR) => {
                    self.spare = Some(p);
                    break;
                }
                Err(e) if stream => {
                    self.close_active(Some(e));
                    self.spare = Some(p);
                    break;
                }
                // A datagram socket's error (an ICMP error for an earlier
                // send, reported once): the socket goes on.
                Err(_) => {
                    self.spare = Some(p);
                    break;
                }
            };
            got = true;
            if !stream {
                if n == 0 {
                    self.drops += 1;
                    self.spare = Some(p);
                    continue;
                }
                if !self.conf.client {
                    let v4 = from.clone().and_then(|a| SocketAddrV4::try_from(a).ok());
                    if let Some(v4) = v4 {
                        if !self.allowed(v4.ip().octets()) {
                            if self.conf.verbose {
                                eprintln!(
                                    "{}: dropped datagram from {}:{}",
                                    self.decl,
                                    v4.ip(),
                                    v4.port()
                                );
                            }
                            self.denied += 1;
                            self.spare = Some(p);
                            continue;
                        }
                    }
                    if from.is_some() {
                        self.peer = from;
                    }
                }
            }
            if n > self.conf.snaplen {
                let extra = (n - self.conf.snaplen) as u32;
                p.anno_bytes_mut()[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
                    .copy_from_slice(&extra.to_ne_bytes());
                self.truncated += 1;
            } else {
                p.take(self.conf.snaplen - n);
            }
            if self.conf.timestamp {
                p.set_timestamp_ns(out.now);
            }
            self.received += 1;
            out.emit(0, p);
        }
        got
    }

    /// Writes what is left of `p` (partly written packets are pulled
    /// forward).
    fn write(&mut self, p: &mut Packet) -> Wrote {
        loop {
            let Some(fd) = &self.active else {
                return Wrote::Failed;
            };
            let r = if self.conf.kind.stream() {
                rustix::net::send(fd, p.data(), SendFlags::NOSIGNAL)
            } else {
                let to = match (&self.peer, &self.conf.remote) {
                    // A UDP client configured with 0.0.0.0: the packet's
                    // destination annotation.
                    (_, Addr::Inet(r)) if self.conf.client && r.ip().is_unspecified() => {
                        SocketAddrAny::from(SocketAddrV4::new(
                            Ipv4Addr::from(p.dst_ip_anno()),
                            r.port(),
                        ))
                    }
                    (Some(peer), _) => peer.clone(),
                    (None, _) => return Wrote::Failed,
                };
                rustix::net::sendto(fd, p.data(), SendFlags::NOSIGNAL, &to)
            };
            match r {
                Ok(n) if self.conf.kind.stream() && n < p.len() => p.pull(n),
                Ok(_) => return Wrote::Done,
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN | Errno::NOBUFS) => return Wrote::Blocked,
                Err(e) if self.conf.kind.stream() => {
                    self.close_active(Some(e));
                    return Wrote::Failed;
                }
                // A datagram that could not go (no route, refused, too
                // big): that packet is lost, the socket goes on.
                Err(e) => {
                    if self.conf.verbose {
                        eprintln!("{}: {}, dropping packet", self.decl, strerror(e));
                    }
                    return Wrote::Failed;
                }
            }
        }
    }

    /// Waits up to `ms` for the connection to take more.
    fn wait_writable(&self, ms: i32) -> bool {
        super::wait_writable(self.active.as_ref(), ms)
    }

    /// Writes the pending packets, oldest first, until one blocks. True if
    /// any went.
    fn flush(&mut self) -> bool {
        let mut any = false;
        while let Some(mut p) = self.pending.pop_front() {
            match self.write(&mut p) {
                Wrote::Done => {
                    self.sent += 1;
                    any = true;
                }
                Wrote::Failed => self.drops += 1,
                Wrote::Blocked => {
                    self.pending.push_front(p);
                    break;
                }
            }
        }
        any
    }
}

impl Element for Socket {
    fn push(&mut self, _port: usize, batch: &mut Batch, _out: &mut Out<'_>) {
        for mut p in batch.drain() {
            let started = p.len();
            let mut waited = false;
            loop {
                match self.write(&mut p) {
                    Wrote::Done => {
                        self.sent += 1;
                        break;
                    }
                    Wrote::Failed => {
                        self.drops += 1;
                        break;
                    }
                    Wrote::Blocked if !waited => {
                        waited = true;
                        if !self.wait_writable(super::PUSH_WAIT_MS) {
                            continue;
                        }
                        waited = false;
                    }
                    Wrote::Blocked => {
                        self.drops += 1;
                        if self.conf.kind.stream() && p.len() < started {
                            self.close_active(None);
                        }
                        break;
                    }
                }
            }
        }
    }

    fn has_task(&self) -> bool {
        self.has_output || self.pull
    }

    fn task_pull(&mut self, _now: i64) -> Option<(usize, usize)> {
        // Pull only once the packets already pulled have gone, and only
        // when there is somewhere to write them.
        (self.pull && self.pending.is_empty() && self.active.is_some())
            .then_some((0, self.conf.burst))
    }

    fn run_task(&mut self, batch: &mut Batch, out: &mut Out<'_>) -> TaskStatus {
        let mut busy = false;
        if self.listener.is_some() && self.active.is_none() {
            self.accept();
        }
        if self.pull {
            for p in batch.drain() {
                self.pending.push_back(p);
            }
            busy |= self.flush();
        }
        if self.has_output {
            busy |= self.receive(out);
        }
        if self.active.is_none() && self.listener.is_none() {
            // A client whose connection ended: nothing will come or go.
            return TaskStatus::Done;
        }
        if busy {
            self.empty_polls = 0;
            return TaskStatus::Busy;
        }
        super::poll_status(false, &mut self.empty_polls)
    }

    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        if !self.pending.is_empty() {
            return self.active.as_ref().map(|fd| WaitFd {
                fd: fd.as_fd(),
                writable: true,
            });
        }
        let fd = match (&self.active, &self.listener) {
            // A server waiting for its next connection.
            (None, Some(l)) => l,
            (Some(a), _) if self.has_output => a,
            // A pull input that found nothing waits on whatever fills it.
            _ => return None,
        };
        Some(WaitFd {
            fd: fd.as_fd(),
            writable: false,
        })
    }

    fn held(&self) -> usize {
        self.pending.len() + usize::from(self.spare.is_some())
    }

    fn pull_from(&mut self, _port: usize) -> PullFrom {
        // Packets do not flow through: a pull on ToSocket's output gets
        // nothing.
        PullFrom::Nothing
    }

    fn config_messages(&mut self) -> Vec<(bool, String)> {
        std::mem::take(&mut self.messages)
    }

    fn counters(&self, c: &mut crate::Counters) {
        c.drop("send_failed", self.drops);
        c.count("received", self.received);
        c.count("sent", self.sent);
        c.count("truncated", self.truncated);
        c.count("denied", self.denied);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("received"),
            HandlerInfo::read("sent"),
            HandlerInfo::read("drops"),
            HandlerInfo::read("truncated"),
            HandlerInfo::read("denied"),
            HandlerInfo::read("connected"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "received" => Ok(self.received.to_string()),
            "sent" => Ok(self.sent.to_string()),
            "drops" => Ok(self.drops.to_string()),
            "truncated" => Ok(self.truncated.to_string()),
            "denied" => Ok(self.denied.to_string()),
            "connected" => Ok(self.active.is_some().to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        self.drops += self.pending.len() as u64;
        self.pending.clear();
        self.active = None;
        self.keep = None;
        if let Some(l) = self.listener.take() {
            let _ = rustix::net::shutdown(&l, rustix::net::Shutdown::Both);
        }
        if let Some(p) = self.unlink.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        if let Some(p) = self.unlink.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Socket {
    /// Stops reading the socket (ToSocket: its output is pull).
    pub(crate) fn no_receive(&mut self) {
        self.has_output = false;
    }

    /// Adds a warning shown after configuration (the deprecated classes).
    pub(crate) fn warn(&mut self, text: impl Into<String>) {
        self.messages.push((true, text.into()));
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream, UdpSocket};
    use std::os::unix::net::{UnixDatagram, UnixStream};
    use std::time::{Duration, Instant};

    use pronto_packet::Pool;

    use super::*;
    use crate::app::testing::{config_err, configure, scratch};
    use crate::{Control, Peer, Peers};

    /// Route tables by name, as ALLOW/DENY see them.
    struct Tables(Vec<(&'static str, Vec<(u32, u32)>)>);

    impl Peers for Tables {
        fn lookup(&self, name: &str) -> Option<Peer> {
            let (n, p) = self.0.iter().find(|(n, _)| *n == name)?;
            Some(Peer {
                name: n.to_string(),
                class: "RadixIPLookup",
                shared: Some(Arc::new(RoutePrefixes {
                    prefixes: p.clone(),
                })),
            })
        }

        fn of_class(&self, _class: &str) -> Vec<Peer> {
            Vec::new()
        }
    }

    fn with_peers(
        conf: &str,
        inputs: &[bool],
        outputs: &[bool],
        peers: &dyn Peers,
    ) -> Result<Box<dyn Element>, ConfigError> {
        let ctx = ConfigCtx {
            name: "s",
            config: conf,
            ninputs: inputs.len(),
            noutputs: outputs.len(),
            base_dir: std::path::Path::new("."),
            keywords: KEYWORDS,
            output_push: outputs,
            input_push: inputs,
            peers,
        };
        Socket::configure(&ctx)
    }

    fn sock(conf: &str, inputs: &[bool], outputs: &[bool]) -> Box<dyn Element> {
        configure(
            KEYWORDS,
            Socket::configure,
            conf,
            inputs,
            outputs,
            std::path::Path::new("."),
        )
        .unwrap_or_else(|e| panic!("{conf}: {}", e.message))
    }

    fn err(conf: &str) -> String {
        config_err(configure(
            KEYWORDS,
            Socket::configure,
            conf,
            &[true],
            &[true],
            std::path::Path::new("."),
        ))
    }

    /// A port nobody listens on now (bound, read, released).
    fn free_port(tcp: bool) -> u16 {
        if tcp {
            let l = TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        } else {
            let u = UdpSocket::bind("127.0.0.1:0").expect("bind");
            u.local_addr().expect("addr").port()
        }
    }

    /// Runs the task (after its pull, fed from `input`) until `n` packets
    /// came out or two seconds passed; returns what came out.
    fn drive(
        e: &mut dyn Element,
        pool: &Pool,
        input: &mut Vec<Packet>,
        n: usize,
        now: i64,
    ) -> Vec<Packet> {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut got = Vec::new();
        loop {
            let mut bufs = vec![Batch::new()];
            let mut ctrl = Control::default();
            let mut batch = Batch::new();
            if let Some((_, max)) = e.task_pull(now) {
                for _ in 0..max.min(input.len()) {
                    let _ = batch.push(input.remove(0));
                }
            }
            {
                let mut out = Out::new(&mut bufs, pool, now, &mut ctrl);
                let _ = e.run_task(&mut batch, &mut out);
            }
            got.extend(bufs[0].drain());
            if (got.len() >= n && input.is_empty() && e.held() == 0) || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn read(e: &dyn Element, h: &str) -> String {
        e.read_handler(h).expect("handler")
    }

    #[test]
    fn config_errors() {
        assert_eq!(err(""), "missing mandatory TYPE argument");
        assert_eq!(
            err("SCTP, 1.2.3.4, 80"),
            "unknown socket type `SCTP' (expected TCP, UDP, UNIX or UNIX_DGRAM)"
        );
        assert_eq!(err("TCP"), "missing mandatory ADDR argument");
        assert_eq!(err("TCP, 1.2.3.4"), "missing mandatory PORT argument");
        assert_eq!(
            err("UDP, 1.2.3.4, 70000"),
            "PORT: expected port number, found `70000`"
        );
        assert_eq!(err("UNIX"), "missing mandatory FILENAME argument");
        let long = "x".repeat(108);
        assert_eq!(
            err(&format!("UNIX, /{long}")),
            format!("remote filename '/{long}' too long (at most 107 bytes)")
        );
        assert_eq!(
            err("UDP, 1.2.3.4, 9, SNAPLEN 0"),
            "SNAPLEN must be at least 1"
        );
        assert_eq!(err("UDP, 1.2.3.4, 9, BURST 0"), "BURST must be at least 1");
        assert_eq!(
            err("UDP, 1.2.3.4, 9, HEADROOM 129"),
            "HEADROOM too large: pronto packets have 128 bytes of headroom"
        );
        assert_eq!(
            err("UDP, 1.2.3.4, 9, ALLOW t"),
            "ALLOW: no element named `t` (name a route table such as RadixIPLookup)"
        );
        assert_eq!(
            err("UDP, 1.2.3.4, 9, 1.2.3.5, 10, 11"),
            "too many arguments: `11` was not expected"
        );
        // A refused connection fails the configuration, as in Click.
        let port = free_port(true);
        assert_eq!(
            err(&format!("TCP, 127.0.0.1, {port}, CLIENT true")),
            "connect: Connection refused"
        );
        // A port in use.
        let l = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().expect("addr").port();
        assert_eq!(
            err(&format!("UDP, 127.0.0.1, {port}")),
            "bind: Address already in use"
        );
    }

    /// A UDP server pushes out each datagram byte for byte, stamped, and
    /// sends its input to the last peer that sent.
    #[test]
    fn udp_server_receives_datagrams_and_answers_the_last_peer() {
        let port = free_port(false);
        let mut e = sock(
            &format!("UDP, 127.0.0.1, {port}, BURST 4"),
            &[true],
            &[true],
        );
        let pool = Pool::new(64).expect("pool");
        let peer = UdpSocket::bind("127.0.0.1:0").expect("peer");
        peer.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let sent: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 10 + usize::from(i)]).collect();
        for d in &sent {
            peer.send_to(d, ("127.0.0.1", port)).expect("send");
        }
        let got = drive(e.as_mut(), &pool, &mut Vec::new(), 5, 77);
        let data: Vec<&[u8]> = got.iter().map(|p| p.data()).collect();
        let want: Vec<&[u8]> = sent.iter().map(|d| d.as_slice()).collect();
        assert_eq!(data, want);
        assert!(got.iter().all(|p| p.timestamp_ns() == 77));
        assert_eq!(read(e.as_ref(), "received"), "5");
        // The answer goes to the peer.
        let _ = crate::app::testing::push(e.as_mut(), &pool, &[b"answer", b"two"], 1, 0);
        let mut buf = [0u8; 64];
        let (n, _) = peer.recv_from(&mut buf).expect("answer");
        assert_eq!(&buf[..n], b"answer");
        let (n, _) = peer.recv_from(&mut buf).expect("answer");
        assert_eq!(&buf[..n], b"two");
        assert_eq!(read(e.as_ref(), "sent"), "2");
        assert_eq!(read(e.as_ref(), "drops"), "0");
        assert_eq!(read(e.as_ref(), "connected"), "true");
    }

    /// A UDP server that has heard from nobody drops its input.
    #[test]
    fn udp_server_without_peer_drops() {
        let port = free_port(false);
        let mut e = sock(&format!("UDP, 127.0.0.1, {port}"), &[true], &[true]);
        let pool = Pool::new(8).expect("pool");
        let outs = crate::app::testing::push(e.as_mut(), &pool, &[b"x"], 1, 0);
        assert!(outs[0].is_empty());
        assert_eq!(read(e.as_ref(), "drops"), "1");
        assert_eq!(read(e.as_ref(), "sent"), "0");
    }

    /// A datagram longer than SNAPLEN is cut, the cut length in the extra
    /// length annotation; an empty datagram is dropped.
    #[test]
    fn udp_truncates_to_snaplen() {
        let port = free_port(false);
        let mut e = sock(
            &format!("UDP, 127.0.0.1, {port}, SNAPLEN 4, TIMESTAMP false"),
            &[],
            &[true],
        );
        let pool = Pool::new(8).expect("pool");
        let peer = UdpSocket::bind("127.0.0.1:0").expect("peer");
        peer.send_to(b"", ("127.0.0.1", port)).expect("send");
        peer.send_to(b"0123456789", ("127.0.0.1", port))
            .expect("send");
        let got = drive(e.as_mut(), &pool, &mut Vec::new(), 1, 5);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data(), b"0123");
        assert_eq!(got[0].timestamp_ns(), 0);
        let a = got[0].anno_bytes();
        let extra = u32::from_ne_bytes(
            a[EXTRA_LENGTH_ANNO_OFFSET..EXTRA_LENGTH_ANNO_OFFSET + 4]
                .try_into()
                .expect("4 bytes"),
        );
        assert_eq!(extra, 6);
        assert_eq!(read(e.as_ref(), "truncated"), "1");
        assert_eq!(read(e.as_ref(), "drops"), "1");
    }

    /// A UDP client configured with 0.0.0.0 sends each packet to its
    /// destination annotation; a pull input is drained by the task.
    #[test]
    fn udp_client_sends_to_destination_annotation_from_pull_input() {
        let peer = UdpSocket::bind("127.0.0.1:0").expect("peer");
        peer.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let port = peer.local_addr().expect("addr").port();
        let mut e = sock(&format!("UDP, 0.0.0.0, {port}, BURST 2"), &[false], &[]);
        let pool = Pool::new(8).expect("pool");
        let mut input: Vec<Packet> = [b"one".as_slice(), b"two", b"three"]
            .iter()
            .map(|d| {
                let mut p = pool.alloc_from(d).expect("pkt");
                p.set_dst_ip_anno([127, 0, 0, 1]);
                p
            })
            .collect();
        let got = drive(e.as_mut(), &pool, &mut input, 0, 0);
        assert!(got.is_empty());
        let mut buf = [0u8; 64];
        for want in [b"one".as_slice(), b"two", b"three"] {
            let (n, _) = peer.recv_from(&mut buf).expect("datagram");
            assert_eq!(&buf[..n], want);
        }
        assert_eq!(read(e.as_ref(), "sent"), "3");
        assert_eq!(e.held(), 0);
    }

    /// A TCP server accepts a client, pushes out what it sends, writes its
    /// input back to it, and notices when it goes.
    #[test]
    fn tcp_server_round_trip() {
        let port = free_port(true);
        let mut e = sock(
            &format!("TCP, 127.0.0.1, {port}, SNAPLEN 1000"),
            &[true],
            &[true],
        );
        let pool = Pool::new(16).expect("pool");
        assert_eq!(read(e.as_ref(), "connected"), "false");
        let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        c.write_all(b"hello, pronto").expect("write");
        let got = drive(e.as_mut(), &pool, &mut Vec::new(), 1, 0);
        let bytes: Vec<u8> = got.iter().flat_map(|p| p.data().to_vec()).collect();
        assert_eq!(bytes, b"hello, pronto");
        assert_eq!(read(e.as_ref(), "connected"), "true");
        let _ = crate::app::testing::push(e.as_mut(), &pool, &[b"abc", b"defg"], 1, 0);
        let mut buf = [0u8; 7];
        c.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"abcdefg");
        assert_eq!(read(e.as_ref(), "sent"), "2");
        drop(c);
        let got = drive(e.as_mut(), &pool, &mut Vec::new(), 1, 0);
        assert!(got.is_empty());
        assert_eq!(read(e.as_ref(), "connected"), "false");
        // The next client is accepted.
        let mut c2 = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        c2.write_all(b"again").expect("write");
        let got = drive(e.as_mut(), &pool, &mut Vec::new(), 1, 0);
        let bytes: Vec<u8> = got.iter().flat_map(|p| p.data().to_vec()).collect();
        assert_eq!(bytes, b"again");
    }

    /// A TCP client (no outputs: Click's default) writes the packets it
    /// pulls as one byte stream.
    #[test]
    fn tcp_client_writes_pulled_packets() {
        let l = TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = l.local_addr().expect("addr").port();
        let mut e = sock(&format!("TCP, 127.0.0.1, {port}, BURST 8"), &[false], &[]);
        let (mut server, _) = l.accept().expect("accept");
        server
            .set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let pool = Pool::new(300).expect("pool");
        // More than a socket buffer holds, so that writes block and the
        // rest waits (held) until the reader catches up.
        let chunk = vec![0x5au8; 1500];
        let mut input: Vec<Packet> = (0..200)
            .map(|i| {
                let mut p = pool.alloc_from(&chunk).expect("pkt");
                p.data_mut()[0] = i as u8;
                p
            })
            .collect();
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = [0u8; 65536];
            while all.len() < 200 * 1500 {
                match server.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => all.extend_from_slice(&buf[..n]),
                }
            }
            all
        });
        let got = drive(e.as_mut(), &pool, &mut input, 0, 0);
        assert!(got.is_empty());
        let all = reader.join().expect("reader");
        assert_eq!(all.len(), 200 * 1500);
        for (i, c) in all.chunks(1500).enumerate() {
            assert_eq!(c[0], i as u8);
            assert!(c[1..].iter().all(|&b| b == 0x5a));
        }
        assert_eq!(read(e.as_ref(), "sent"), "200");
        assert_eq!(read(e.as_ref(), "drops"), "0");
        assert_eq!(pool.in_use(), 0);
    }

    /// DENY refuses a TCP connection and UDP datagrams from a covered
    /// address; ALLOW, checked first, lets them in.
    #[test]
    fn allow_and_deny() {
        let all: Vec<(u32, u32)> = vec![(0, 0)];
        let lo: Vec<(u32, u32)> = vec![(0x7f00_0001, u32::MAX)];
        let peers = Tables(vec![("deny", all), ("allow", lo)]);
        let pool = Pool::new(16).expect("pool");

        let port = free_port(false);
        let mut e = with_peers(
            &format!("UDP, 127.0.0.1, {port}, DENY deny"),
            &[],
            &[true],
            &peers,
        )
        .expect("configure");
        let peer = UdpSocket::bind("127.0.0.1:0").expect("peer");
        peer.send_to(b"no", ("127.0.0.1", port)).expect("send");
        let deadline = Instant::now() + Duration::from_secs(2);
        while read(e.as_ref(), "denied") == "0" && Instant::now() < deadline {
            assert!(drive(e.as_mut(), &pool, &mut Vec::new(), 0, 0).is_empty());
        }
        assert_eq!(read(e.as_ref(), "denied"), "1");
        assert_eq!(read(e.as_ref(), "received"), "0");

        let port = free_port(false);
        let mut e = with_peers(
            &format!("UDP, 127.0.0.1, {port}, ALLOW allow, DENY deny"),
            &[],
            &[true],
            &peers,
        )
        .expect("configure");
        peer.send_to(b"yes", ("127.0.0.1", port)).expect("send");
        let got = drive(e.as_mut(), &pool, &mut Vec::new(), 1, 0);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].data(), b"yes");
        assert_eq!(read(e.as_ref(), "denied"), "0");

        let port = free_port(true);
        let mut e = with_peers(
            &format!("TCP, 127.0.0.1, {port}, DENY deny"),
            &[],
            &[true],
            &peers,
        )
        .expect("configure");
        let mut c = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let _ = c.write_all(b"refused");
        let deadline = Instant::now() + Duration::from_secs(2);
        while read(e.as_ref(), "denied") == "0" && Instant::now() < deadline {
            assert!(drive(e.as_mut(), &pool, &mut Vec::new(), 0, 0).is_empty());
        }
        assert_eq!(read(e.as_ref(), "denied"), "1");
        assert_eq!(read(e.as_ref(), "connected"), "false");
        // The server closed it: the client reads the end.
        c.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let mut buf = [0u8; 4];
        assert!(matches!(c.read(&mut buf), Ok(0) | Err(_)));

        assert_eq!(
            config_err(with_peers(
                "UDP, 1.2.3.4, 9, DENY other",
                &[],
                &[true],
                &OtherPeer
            )),
            "DENY: other is not an IPRouteTable"
        );
    }

    /// A route-table element offers its prefixes, as configured, to the
    /// elements that name it.
    #[test]
    fn route_tables_share_their_prefixes() {
        let e = crate::app::testing::configure(
            &[],
            crate::ip::radixiplookup::RadixIPLookup::configure,
            "10.0.0.0/8 0, 192.168.1.7 1",
            &[true],
            &[true, true],
            std::path::Path::new("."),
        )
        .expect("configure");
        let t = e
            .shared()
            .and_then(|s| s.downcast::<RoutePrefixes>().ok())
            .expect("prefixes");
        assert!(t.covers([10, 200, 0, 1]));
        assert!(t.covers([192, 168, 1, 7]));
        assert!(!t.covers([192, 168, 1, 8]));
        assert!(!t.covers([11, 0, 0, 1]));
    }

    /// An element that shares nothing.
    struct OtherPeer;

    impl Peers for OtherPeer {
        fn lookup(&self, name: &str) -> Option<Peer> {
            Some(Peer {
                name: name.into(),
                class: "Counter",
                shared: None,
            })
        }

        fn of_class(&self, _class: &str) -> Vec<Peer> {
            Vec::new()
        }
    }

    /// A UNIX stream server and a UNIX_DGRAM server, each with a real
    /// peer; the socket files go with the elements.
    #[test]
    fn unix_stream_and_datagram() {
        let dir = scratch("sock-unix");
        let pool = Pool::new(16).expect("pool");
        let path = dir.join("s.sock");
        let mut e = configure(
            KEYWORDS,
            Socket::configure,
            "UNIX, s.sock",
            &[true],
            &[true],
            &dir,
        )
        .expect("configure");
        let mut c = UnixStream::connect(&path).expect("connect");
        c.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        c.write_all(b"over unix").expect("write");
        let got = drive(e.as_mut(), &pool, &mut Vec::new(), 1, 0);
        let bytes: Vec<u8> = got.iter().flat_map(|p| p.data().to_vec()).collect();
        assert_eq!(bytes, b"over unix");
        let _ = crate::app::testing::push(e.as_mut(), &pool, &[b"back"], 1, 0);
        let mut buf = [0u8; 4];
        c.read_exact(&mut buf).expect("read");
        assert_eq!(&buf, b"back");
        e.cleanup();
        drop(e);
        assert!(!path.exists(), "the socket file outlived the element");

        let dpath = dir.join("d.sock");
        let mut e = configure(
            KEYWORDS,
            Socket::configure,
            "UNIX_DGRAM, d.sock",
            &[true],
            &[true],
            &dir,
        )
        .expect("configure");
        let peer_path = dir.join("peer.sock");
        let peer = UnixDatagram::bind(&peer_path).expect("peer");
        peer.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        peer.send_to(b"dgram one", &dpath).expect("send");
        peer.send_to(b"dgram two", &dpath).expect("send");
        let got = drive(e.as_mut(), &pool, &mut Vec::new(), 2, 0);
        let data: Vec<&[u8]> = got.iter().map(|p| p.data()).collect();
        assert_eq!(data, vec![b"dgram one".as_slice(), b"dgram two"]);
        let _ = crate::app::testing::push(e.as_mut(), &pool, &[b"reply"], 1, 0);
        let mut buf = [0u8; 16];
        let n = peer.recv(&mut buf).expect("reply");
        assert_eq!(&buf[..n], b"reply");
        drop(e);
        assert!(!dpath.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
