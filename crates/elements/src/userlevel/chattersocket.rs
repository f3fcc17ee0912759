//! `ChatterSocket`: copies the router's chatter (what `Print`, `IPPrint`
//! and `IP6Print` print) to the clients of a TCP or Unix-domain socket.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, SendFlags, SocketAddrAny, SocketAddrUnix, SocketFlags, SocketType,
};

use super::socket::{port_arg, strerror};
use crate::chatter::{Listener, HUB_LIMIT};
use crate::util::cfg_err;
use crate::{
    ActionProfile, ConfigCtx, ConfigError, Element, HandlerError, HandlerInfo, Out, Spec,
    TaskStatus, WaitFd,
};

/// Click's protocol greeting.
const GREETING: &[u8] = b"Click::ChatterSocket/1.0\r\n";
/// A client further behind than this is disconnected (Click's limit).
const MAX_BACKLOG: usize = 500_000;
/// Most clients served at once; further connections are closed at once.
const MAX_CLIENTS: usize = 64;
/// Empty polls in a row before the task reports itself idle.
const SPIN_POLLS: u32 = 32;
/// Time between attempts to open the socket (RETRIES).
const RETRY_NS: i64 = 1_000_000_000;

/// Where the socket listens.
enum Where {
    Tcp(u16),
    Unix(String),
}

/// One connected client and what it has not read yet.
struct Client {
    fd: OwnedFd,
    backlog: VecDeque<u8>,
}

/// Copies chatter to socket clients.
pub struct ChatterSocket {
    decl: String,
    at: Where,
    greeting: bool,
    retries_left: i32,
    retry_warnings: bool,
    next_try: i64,
    listener: Option<OwnedFd>,
    /// Registered for the default channel; `None` for other channels
    /// (pronto's elements print only on the default one).
    chatter: Option<Listener>,
    clients: Vec<Client>,
    lines: Vec<String>,
    unlink: Option<String>,
    empty_polls: u32,
    refused: u64,
    dropped: u64,
}

impl ChatterSocket {
    /// Click's description of the class.
    pub const SPEC: Spec = Spec::new("ChatterSocket")
        .ports("0/0")
        .processing("a/a")
        .keywords(&[
            "PORT",
            "FILENAME",
            "CHANNEL",
            "QUIET_CHANNEL",
            "GREETING",
            "RETRIES",
            "RETRY_WARNINGS",
        ])
        .profile(ActionProfile::NONE)
        .doc(
            "ChatterSocket(TCP, PORT [, KEYWORDS])\n\
             ChatterSocket(UNIX, FILENAME [, KEYWORDS])\n\n\
             Listens on TCP port PORT (every address) or on the Unix-domain socket\n\
             FILENAME and sends every client a copy of the router's chatter: the\n\
             lines Print, IPPrint (without OUTFILE) and IP6Print write to standard\n\
             error, from every thread, each line as printed. A new client first\n\
             gets the greeting `Click::ChatterSocket/1.0' (CR LF) unless GREETING\n\
             is false, then the lines printed from then on. Clients are not read\n\
             from. A client more than 500,000 bytes behind is disconnected (as in\n\
             Click); at most 64 clients are served at once, and further\n\
             connections are closed at once (pronto's bound). Lines printed while\n\
             the element's task has not run yet wait in a buffer of 500,000 bytes\n\
             (the oldest go first; counted in `lost'). Other messages (warnings,\n\
             errors, element reports) are not copied: pronto writes them to\n\
             standard error only. The socket is not opened by `pronto check`.\n\n\
             If the socket cannot be opened, configuration fails, unless RETRIES\n\
             is positive: then the element tries again once a second, RETRIES\n\
             times, warning each time (RETRY_WARNINGS true) or only the last\n\
             time, and stops the router after the last failure. A Unix socket\n\
             file is removed when the router stops.\n\n\
             In a sandboxed instance (pronto daemon) the element lives in the\n\
             instance's own network namespace: clients reach it only from inside\n\
             (the daemon serves ControlSocket for tenants, not ChatterSocket).\n\n\
             Ports: none.\n\
             Arguments:\n  \
             TYPE      TCP or UNIX\n  \
             PORT      (TCP) the port, a number or service name\n  \
             FILENAME  (UNIX) the socket file (at most 107 bytes)\n\
             Keywords:\n  \
             CHANNEL   word: the chatter channel (default `default'); pronto\n            \
             prints only on the default channel, so another gets nothing\n  \
             QUIET_CHANNEL  boolean (default true; accepted, nothing to quiet)\n  \
             GREETING  boolean: send the greeting (default true)\n  \
             RETRIES   integer: attempts to open the socket (default 0)\n  \
             RETRY_WARNINGS  boolean: warn at each failed attempt (default true)\n\
             Handlers:\n  \
             clients (read: connected clients), dropped (read: clients\n  \
             disconnected for falling behind or refused over the limit), lost\n  \
             (read: lines dropped before the task ran) (all pronto's)",
        );

    /// Configures a `ChatterSocket`: opens the socket (or schedules
    /// retries).
    pub fn configure(ctx: &ConfigCtx<'_>) -> Result<Box<dyn Element>, ConfigError> {
        let mut a = ctx.args();
        let ty: String = a.read_mp("TYPE")?;
        let channel: String = a.read_or("CHANNEL", "default".to_string())?;
        let _quiet = a.read_or("QUIET_CHANNEL", true)?;
        let greeting = a.read_or("GREETING", true)?;
        let retries: i32 = a.read_or("RETRIES", 0)?;
        let retry_warnings = a.read_or("RETRY_WARNINGS", true)?;
        let at = match ty.to_ascii_uppercase().as_str() {
            "TCP" => Where::Tcp(
                port_arg(&mut a, "PORT")?
                    .ok_or_else(|| cfg_err("missing mandatory PORT argument"))?,
            ),
            "UNIX" => {
                let f: String = a.read_mp("FILENAME")?;
                let f = ctx.path(&f).to_string_lossy().into_owned();
                if f.len() >= 108 {
                    return Err(cfg_err("filename too long"));
                }
                Where::Unix(f)
            }
            _ => {
                return Err(cfg_err(format!(
                    "unknown socket type `{ty}' (expected TCP or UNIX)"
                )))
            }
        };
        a.finish()?;
        if channel.is_empty() || channel.contains(char::is_whitespace) {
            return Err(cfg_err("CHANNEL: expected a word"));
        }
        let mut e = ChatterSocket {
            decl: format!("{} :: ChatterSocket", ctx.name),
            at,
            greeting,
            retries_left: retries,
            retry_warnings,
            next_try: 0,
            listener: None,
            chatter: None,
            clients: Vec::new(),
            lines: Vec::new(),
            unlink: None,
            empty_polls: 0,
            refused: 0,
            dropped: 0,
        };
        if crate::world::check_only() {
            return Ok(Box::new(e));
        }
        match e.open() {
            Ok(()) => {}
            Err(err) if retries > 0 => {
                if retry_warnings {
                    eprintln!("{}: {err} (will retry)", e.decl);
                }
            }
            Err(err) => return Err(cfg_err(err)),
        }
        if channel == "default" {
            e.chatter = Some(crate::chatter::listen());
        }
        Ok(Box::new(e))
    }

    /// Opens the listening socket.
    fn open(&mut self) -> Result<(), String> {
        let sys = |what: &str, e: Errno| format!("{what}: {}", strerror(e));
        let (family, addr) = match &self.at {
            Where::Tcp(p) => (
                AddressFamily::INET,
                SocketAddrAny::from(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, *p)),
            ),
            Where::Unix(f) => (
                AddressFamily::UNIX,
                SocketAddrAny::from(SocketAddrUnix::new(f.as_str()).map_err(|e| sys("bind", e))?),
            ),
        };
        let fd = rustix::net::socket_with(
            family,
            SocketType::STREAM,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            None,
        )
        .map_err(|e| sys("socket", e))?;
        if matches!(self.at, Where::Tcp(_)) {
            rustix::net::sockopt::set_socket_reuseaddr(&fd, true)
                .map_err(|e| sys("setsockopt", e))?;
        }
        rustix::net::bind(&fd, &addr).map_err(|e| sys("bind", e))?;
        rustix::net::listen(&fd, 2).map_err(|e| sys("listen", e))?;
        if let Where::Unix(f) = &self.at {
            self.unlink = Some(f.clone());
        }
        self.listener = Some(fd);
        Ok(())
    }

    /// Accepts waiting clients, greeting each.
    fn accept(&mut self) -> bool {
        let Some(l) = &self.listener else {
            return false;
        };
        let mut any = false;
        loop {
            let fd = match rustix::net::accept_with(l, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK)
            {
                Ok(fd) => fd,
                Err(_) => return any,
            };
            any = true;
            if self.clients.len() >= MAX_CLIENTS {
                self.refused += 1;
                continue;
            }
            let mut backlog = VecDeque::new();
            if self.greeting {
                backlog.extend(GREETING);
            }
            self.clients.push(Client { fd, backlog });
        }
    }

    /// Hands new lines to every client and writes what each can take.
    /// True if anything moved.
    fn serve(&mut self) -> bool {
        let mut moved = false;
        if let Some(c) = &self.chatter {
            c.hub().take(&mut self.lines);
        }
        for line in self.lines.drain(..) {
            moved = true;
            for c in &mut self.clients {
                c.backlog.extend(line.as_bytes());
            }
        }
        let before = self.clients.len();
        self.clients.retain_mut(|c| {
            while !c.backlog.is_empty() {
                let (front, _) = c.backlog.as_slices();
                match rustix::net::send(&c.fd, front, SendFlags::NOSIGNAL) {
                    Ok(n) => {
                        c.backlog.drain(..n);
                        moved = true;
                    }
                    Err(Errno::AGAIN) => break,
                    Err(Errno::INTR) => {}
                    Err(_) => return false,
                }
            }
            c.backlog.len() <= MAX_BACKLOG
        });
        let gone = before - self.clients.len();
        self.dropped += gone as u64;
        moved
    }
}

impl Element for ChatterSocket {
    fn has_task(&self) -> bool {
        true
    }

    fn run_task(&mut self, _batch: &mut pronto_packet::Batch, out: &mut Out<'_>) -> TaskStatus {
        if self.listener.is_none() {
            if self.retries_left <= 0 {
                return TaskStatus::Done;
            }
            if out.now < self.next_try {
                return TaskStatus::SleepUntil(self.next_try);
            }
            match self.open() {
                Ok(()) => {}
                Err(err) => {
                    self.retries_left -= 1;
                    if self.retries_left <= 0 {
                        eprintln!("{}: {err}; giving up", self.decl);
                        out.stop();
                        return TaskStatus::Done;
                    }
                    if self.retry_warnings {
                        eprintln!("{}: {err} (will retry)", self.decl);
                    }
                    self.next_try = out.now + RETRY_NS;
                    return TaskStatus::SleepUntil(self.next_try);
                }
            }
        }
        let accepted = self.accept();
        let moved = self.serve();
        if accepted || moved {
            self.empty_polls = 0;
            return TaskStatus::Busy;
        }
        self.empty_polls = self.empty_polls.saturating_add(1);
        if self.empty_polls < SPIN_POLLS || self.clients.iter().any(|c| !c.backlog.is_empty()) {
            TaskStatus::Busy
        } else {
            TaskStatus::Idle
        }
    }

    fn wait_fd(&self) -> Option<WaitFd<'_>> {
        self.listener.as_ref().map(|fd| WaitFd {
            fd: fd.as_fd(),
            writable: false,
        })
    }

    fn counters(&self, c: &mut crate::Counters) {
        // Messages (not packets) the clients did not get.
        c.count("dropped", self.dropped + self.refused);
        c.count("clients", self.clients.len() as u64);
    }

    fn handlers(&self) -> &'static [HandlerInfo] {
        const H: &[HandlerInfo] = &[
            HandlerInfo::read("clients"),
            HandlerInfo::read("dropped"),
            HandlerInfo::read("lost"),
        ];
        H
    }

    fn read_handler(&self, name: &str) -> Result<String, HandlerError> {
        match name {
            "clients" => Ok(self.clients.len().to_string()),
            "dropped" => Ok((self.dropped + self.refused).to_string()),
            "lost" => Ok(self
                .chatter
                .as_ref()
                .map_or(0, |c| c.hub().lost())
                .to_string()),
            _ => Err(HandlerError::NoSuchHandler(name.into())),
        }
    }

    fn cleanup(&mut self) {
        // What the last task run had not sent yet goes now, if it can.
        let _ = self.serve();
        self.clients.clear();
        self.listener = None;
        self.chatter = None;
        if let Some(f) = self.unlink.take() {
            let _ = std::fs::remove_file(f);
        }
    }
}

impl Drop for ChatterSocket {
    fn drop(&mut self) {
        if let Some(f) = self.unlink.take() {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// The hub's bound is Click's client bound: one slow task run cannot lose
/// more than a disconnected client would.
const _: () = assert!(HUB_LIMIT == MAX_BACKLOG);

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    use pronto_packet::Pool;

    use super::*;
    use crate::app::testing::{config_err, configure, run_task, scratch};

    fn err(conf: &str) -> String {
        config_err(configure(
            ChatterSocket::SPEC.keywords,
            ChatterSocket::configure,
            conf,
            &[],
            &[],
            std::path::Path::new("."),
        ))
    }

    #[test]
    fn config_errors() {
        assert_eq!(err(""), "missing mandatory TYPE argument");
        assert_eq!(
            err("UDP, 9"),
            "unknown socket type `UDP' (expected TCP or UNIX)"
        );
        assert_eq!(err("TCP"), "missing mandatory PORT argument");
        assert_eq!(err("UNIX"), "missing mandatory FILENAME argument");
        assert_eq!(
            err(&format!("UNIX, /{}", "x".repeat(110))),
            "filename too long"
        );
        assert_eq!(err("TCP, 9, CHANNEL \"a b\""), "CHANNEL: expected a word");
    }

    /// Reads from `c` until `want` has arrived (or two seconds passed),
    /// running the element's task meanwhile.
    fn read_until(e: &mut dyn Element, pool: &Pool, c: &mut UnixStream, want: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(2);
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&got).contains(want) && Instant::now() < deadline {
            let _ = run_task(e, pool, 0, 0);
            if let Ok(n) = c.read(&mut buf) {
                got.extend_from_slice(&buf[..n]);
            }
        }
        String::from_utf8_lossy(&got).into_owned()
    }

    /// A client gets the greeting, then what a Print element prints; the
    /// socket file goes with the element.
    #[test]
    fn clients_get_the_greeting_and_printed_lines() {
        let dir = scratch("chatter");
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            ChatterSocket::SPEC.keywords,
            ChatterSocket::configure,
            "UNIX, chat.sock",
            &[],
            &[],
            &dir,
        )
        .expect("configure");
        let mut c = UnixStream::connect(dir.join("chat.sock")).expect("connect");
        c.set_read_timeout(Some(Duration::from_millis(10)))
            .expect("timeout");
        let got = read_until(e.as_mut(), &pool, &mut c, "\r\n");
        assert_eq!(got, "Click::ChatterSocket/1.0\r\n");
        assert_eq!(e.read_handler("clients").expect("clients"), "1");
        // A Print element's line reaches the client as printed.
        let label = format!("chat{}", std::process::id());
        let mut print = configure(
            crate::standard::print::Print::SPEC.keywords,
            crate::standard::print::Print::configure,
            &label,
            &[true],
            &[true],
            &dir,
        )
        .expect("print");
        let _ = crate::app::testing::push(print.as_mut(), &pool, &[b"ab"], 1, 0);
        let got = read_until(e.as_mut(), &pool, &mut c, &label);
        // Other tests of this process may print too: find our line.
        let line = got
            .lines()
            .find(|l| l.starts_with(&format!("{label}:")))
            .expect("the printed line");
        assert!(line.ends_with(" | 6162"), "{line}");
        e.cleanup();
        drop(e);
        assert!(!dir.join("chat.sock").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// GREETING false sends no greeting; a second element with RETRIES on
    /// a taken port waits instead of failing.
    #[test]
    fn no_greeting_and_retries() {
        let dir = scratch("chatter2");
        let pool = Pool::new(8).expect("pool");
        let mut e = configure(
            ChatterSocket::SPEC.keywords,
            ChatterSocket::configure,
            "UNIX, c.sock, GREETING false",
            &[],
            &[],
            &dir,
        )
        .expect("configure");
        let mut c = UnixStream::connect(dir.join("c.sock")).expect("connect");
        c.set_read_timeout(Some(Duration::from_millis(10)))
            .expect("timeout");
        let tag = format!("tag-{}-greeting\n", std::process::id());
        let _ = run_task(e.as_mut(), &pool, 0, 0);
        crate::chatter::copy(&tag);
        let got = read_until(e.as_mut(), &pool, &mut c, &tag);
        assert!(!got.contains("Click::ChatterSocket"), "{got}");
        assert!(got.contains(&tag), "{got}");
        // The file is taken: without RETRIES configuration fails.
        assert_eq!(
            config_err(configure(
                ChatterSocket::SPEC.keywords,
                ChatterSocket::configure,
                "UNIX, c.sock",
                &[],
                &[],
                &dir,
            )),
            "bind: Address already in use"
        );
        let mut r = configure(
            ChatterSocket::SPEC.keywords,
            ChatterSocket::configure,
            "UNIX, c.sock, RETRIES 2, RETRY_WARNINGS false",
            &[],
            &[],
            &dir,
        )
        .expect("configure with retries");
        let (st, _, ctrl) = run_task(r.as_mut(), &pool, 0, 0);
        assert_eq!(st, TaskStatus::SleepUntil(RETRY_NS));
        assert_eq!(ctrl.stop_requests, 0);
        let (st, _, ctrl) = run_task(r.as_mut(), &pool, 0, RETRY_NS);
        assert_eq!(st, TaskStatus::Done);
        assert_eq!(ctrl.stop_requests, 1);
        drop(r);
        drop(e);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
