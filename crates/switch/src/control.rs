//! The switch's control socket: how middlebox processes attach ports.
//!
//! A unix stream socket; each connection makes one request, as a line of
//! text:
//!
//! - `ATTACH NAME [MAC]`: the switch makes a new port (its shared region
//!   and two doorbells), attaches it, and answers `OK PORT SLOTS RING`
//!   with the region's and doorbells' descriptors attached (`SCM_RIGHTS`),
//!   or `ERR MESSAGE`. With a MAC, frames for it go to the port (a static
//!   entry). The port stays attached while the connection is open: when
//!   the process exits, however it exits, the kernel closes the socket and
//!   the switch detaches the port.
//! - `PORTS`: one line per attached port
//!   (`PORT NAME MAC rx=N tx=N drops=N`, MAC `-` when none), then `END`.
//!
//! Everything a client sends is checked (line length, name characters,
//! MAC syntax); a bad request gets `ERR` and the connection is closed.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::event::epoll;

use crate::layout::{Geometry, PortShm};
use crate::switch::{Config, SwitchHandle};

/// Longest request line accepted.
const MAX_LINE: usize = 256;
/// Longest port name.
const MAX_NAME: usize = 64;
/// epoll key of the listening socket.
const LISTEN_KEY: u64 = u64::MAX;

/// Errors of the control socket, on either side.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// Could not reach the switch.
    #[error("cannot connect to the switch at {path}: {err} (is `pronto switch` running there?)")]
    Connect {
        /// The socket path.
        path: String,
        /// What failed.
        err: std::io::Error,
    },
    /// The switch refused the request.
    #[error("the switch refused port `{name}`: {message}")]
    Refused {
        /// The port name asked for.
        name: String,
        /// The switch's reason.
        message: String,
    },
    /// The answer did not follow the protocol.
    #[error("bad answer from the switch: {0}")]
    Protocol(String),
    /// The port's memory could not be mapped.
    #[error(transparent)]
    Port(#[from] crate::layout::PortError),
    /// Another switch error.
    #[error(transparent)]
    Switch(#[from] crate::switch::SwitchError),
    /// A system call failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<rustix::io::Errno> for ControlError {
    fn from(e: rustix::io::Errno) -> ControlError {
        ControlError::Io(e.into())
    }
}

/// A port attached over the control socket, as its client holds it.
pub struct Attached {
    /// The port number the switch gave.
    pub port: u16,
    /// The port's memory and doorbells.
    pub shm: PortShm,
    /// The connection that keeps the port attached: dropping it detaches
    /// the port.
    pub conn: UnixStream,
}

/// Checks a port name: 1 to 64 characters, letters, digits and `-_.:/@`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!(
            "port name must be 1 to {MAX_NAME} characters, not {}",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || "-_.:/@".contains(*c)))
    {
        return Err(format!(
            "port name `{name}` has `{c}`: use letters, digits and -_.:/@"
        ));
    }
    Ok(())
}

/// Parses `aa:bb:cc:dd:ee:ff` (or with `-`).
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut parts = s.split([':', '-']);
    for b in &mut m {
        let p = parts.next()?;
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(m)
}

fn fmt_mac(m: &[u8; 6]) -> String {
    format!(
        "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
        m[0], m[1], m[2], m[3], m[4], m[5]
    )
}

/// Asks the switch at `path` for a port named `name` (with frames for
/// `mac` routed to it, if given).
pub fn attach(path: &Path, name: &str, mac: Option<[u8; 6]>) -> Result<Attached, ControlError> {
    check_name(name).map_err(|message| ControlError::Refused {
        name: name.into(),
        message,
    })?;
    let mut conn = UnixStream::connect(path).map_err(|err| ControlError::Connect {
        path: path.display().to_string(),
        err,
    })?;
    let req = match mac {
        Some(m) => format!("ATTACH {name} {}\n", fmt_mac(&m)),
        None => format!("ATTACH {name}\n"),
    };
    conn.write_all(req.as_bytes())?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut buf = [0u8; MAX_LINE];
    let (n, fds) = pronto_ring::fdpass::recv(&conn, &mut buf)?;
    let line = std::str::from_utf8(&buf[..n])
        .map_err(|_| ControlError::Protocol("not text".into()))?
        .trim_end();
    if let Some(msg) = line.strip_prefix("ERR ") {
        return Err(ControlError::Refused {
            name: name.into(),
            message: msg.into(),
        });
    }
    let mut w = line.split(' ');
    let (Some("OK"), Some(port), Some(slots), Some(ring), None) =
        (w.next(), w.next(), w.next(), w.next(), w.next())
    else {
        return Err(ControlError::Protocol(format!("`{line}`")));
    };
    let num = |s: &str| -> Result<u32, ControlError> {
        s.parse()
            .map_err(|_| ControlError::Protocol(format!("`{line}`")))
    };
    let port = u16::try_from(num(port)?).map_err(|_| ControlError::Protocol(line.into()))?;
    let geometry = Geometry::new(num(slots)?, num(ring)?)?;
    let shm = PortShm::from_fds(fds, geometry)?;
    conn.set_read_timeout(None)?;
    Ok(Attached { port, shm, conn })
}

/// Asks the switch at `path` for its port list (the `PORTS` lines, `END`
/// left off).
pub fn ports(path: &Path) -> Result<Vec<String>, ControlError> {
    let mut conn = UnixStream::connect(path).map_err(|err| ControlError::Connect {
        path: path.display().to_string(),
        err,
    })?;
    conn.write_all(b"PORTS\n")?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut text = String::new();
    conn.read_to_string(&mut text)?;
    let mut out = Vec::new();
    for l in text.lines() {
        if l == "END" {
            return Ok(out);
        }
        out.push(l.to_string());
    }
    Err(ControlError::Protocol("port list without END".into()))
}

/// Settings of a switch serving a control socket.
#[derive(Clone, Copy, Debug)]
pub struct ServeConfig {
    /// The forwarding engine's settings.
    pub switch: Config,
    /// Size of each new port.
    pub geometry: Geometry,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig {
            switch: Config::default(),
            geometry: Geometry {
                slots: 1024,
                ring: 512,
            },
        }
    }
}

struct Client {
    stream: UnixStream,
    /// The port this connection holds, once attached.
    port: Option<(u16, String, Option<[u8; 6]>)>,
    /// Bytes of the request line so far.
    line: Vec<u8>,
}

/// A switch with its control socket.
pub struct Server {
    listener: UnixListener,
    epoll: rustix::fd::OwnedFd,
    handle: SwitchHandle,
    clients: HashMap<u64, Client>,
    next_key: u64,
    /// Free port numbers below `next_port`.
    free_ports: Vec<u16>,
    next_port: u32,
    cfg: ServeConfig,
}

impl Server {
    /// Starts the switch thread and listens on `path` (an old socket file
    /// there is replaced).
    pub fn bind(path: &Path, cfg: ServeConfig) -> Result<Server, ControlError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        match std::fs::remove_file(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        let listener = UnixListener::bind(path)?;
        listener.set_nonblocking(true)?;
        let ep = epoll::create(epoll::CreateFlags::CLOEXEC)?;
        epoll::add(
            &ep,
            &listener,
            epoll::EventData::new_u64(LISTEN_KEY),
            epoll::EventFlags::IN,
        )?;
        let _ = crate::raise_fd_limit();
        Ok(Server {
            listener,
            epoll: ep,
            handle: SwitchHandle::spawn(cfg.switch)?,
            clients: HashMap::new(),
            next_key: 0,
            free_ports: Vec::new(),
            next_port: 0,
            cfg,
        })
    }

    /// The switch itself (counters).
    pub fn handle(&self) -> &SwitchHandle {
        &self.handle
    }

    /// Serves requests until `stop` is set (checked at least every 200 ms).
    pub fn serve(&mut self, stop: &AtomicBool) -> Result<(), ControlError> {
        let mut events = Vec::with_capacity(64);
        let ts = rustix::time::Timespec {
            tv_sec: 0,
            tv_nsec: 200_000_000,
        };
        while !stop.load(Ordering::Relaxed) {
            events.clear();
            match epoll::wait(
                &self.epoll,
                rustix::buffer::spare_capacity(&mut events),
                Some(&ts),
            ) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(std::io::Error::from(e).into()),
            }
            for ev in &events {
                match ev.data.u64() {
                    LISTEN_KEY => self.accept(),
                    key => self.readable(key),
                }
            }
        }
        Ok(())
    }

    fn accept(&mut self) {
        loop {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    eprintln!("pronto switch: accept failed: {e}");
                    return;
                }
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            let key = self.next_key;
            self.next_key += 1;
            if epoll::add(
                &self.epoll,
                &stream,
                epoll::EventData::new_u64(key),
                epoll::EventFlags::IN | epoll::EventFlags::RDHUP,
            )
            .is_err()
            {
                continue;
            }
            self.clients.insert(
                key,
                Client {
                    stream,
                    port: None,
                    line: Vec::new(),
                },
            );
        }
    }

    fn readable(&mut self, key: u64) {
        let Some(c) = self.clients.get_mut(&key) else {
            return;
        };
        let mut buf = [0u8; MAX_LINE];
        let closed = loop {
            match c.stream.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => {
                    if c.port.is_some() {
                        // Attached clients have nothing more to say.
                        continue;
                    }
                    c.line.extend_from_slice(&buf[..n]);
                    if c.line.len() > MAX_LINE && !c.line.contains(&b'\n') {
                        let _ = c.stream.write_all(b"ERR request line too long\n");
                        break true;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break false,
                Err(_) => break true,
            }
        };
        if !closed {
            let Some(c) = self.clients.get_mut(&key) else {
                return;
            };
            if c.port.is_none() {
                if let Some(end) = c.line.iter().position(|&b| b == b'\n') {
                    let line = String::from_utf8_lossy(&c.line[..end]).into_owned();
                    c.line.clear();
                    if !self.request(key, &line) {
                        self.drop_client(key);
                    }
                }
            }
            return;
        }
        self.drop_client(key);
    }

    /// Answers one request; false when the connection should close.
    fn request(&mut self, key: u64, line: &str) -> bool {
        let mut w = line.split_whitespace();
        match (w.next(), w.next(), w.next(), w.next()) {
            (Some("ATTACH"), Some(name), mac, None) => {
                let r = self.attach_port(key, name, mac);
                let Some(c) = self.clients.get_mut(&key) else {
                    return false;
                };
                match r {
                    Ok(shm) => {
                        let (port, _, _) = c.port.as_ref().expect("attached just now");
                        let g = shm.geometry;
                        let msg = format!("OK {port} {} {}\n", g.slots, g.ring);
                        let Ok(fds) = shm.fds() else {
                            return false;
                        };
                        let fds: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
                        let _ = c.stream.set_nonblocking(false);
                        let sent = pronto_ring::fdpass::send(&c.stream, msg.as_bytes(), &fds);
                        let _ = c.stream.set_nonblocking(true);
                        // The switch keeps the peer's doorbell only.
                        shm.handed_over();
                        sent.is_ok()
                    }
                    Err(msg) => {
                        let _ = c.stream.write_all(format!("ERR {msg}\n").as_bytes());
                        false
                    }
                }
            }
            (Some("PORTS"), None, _, _) => {
                let mut text = String::new();
                let mut held: Vec<_> = self
                    .clients
                    .values()
                    .filter_map(|c| c.port.clone())
                    .collect();
                held.sort_by_key(|p| p.0);
                for (port, name, mac) in held {
                    let c = self.handle.counters(port).unwrap_or_default();
                    let mac = mac.map(|m| fmt_mac(&m)).unwrap_or_else(|| "-".into());
                    text.push_str(&format!(
                        "{port} {name} {mac} rx={} tx={} drops={}\n",
                        c.rx_packets,
                        c.tx_packets,
                        c.drops()
                    ));
                }
                text.push_str("END\n");
                if let Some(c) = self.clients.get_mut(&key) {
                    let _ = c.stream.set_nonblocking(false);
                    let _ = c.stream.write_all(text.as_bytes());
                }
                false
            }
            _ => {
                if let Some(c) = self.clients.get_mut(&key) {
                    let _ = c.stream.write_all(
                        format!(
                            "ERR unknown request `{line}`: expected ATTACH NAME [MAC] or PORTS\n"
                        )
                        .as_bytes(),
                    );
                }
                false
            }
        }
    }

    fn attach_port(&mut self, key: u64, name: &str, mac: Option<&str>) -> Result<PortShm, String> {
        check_name(name)?;
        let mac = match mac {
            None => None,
            Some(s) => Some(parse_mac(s).ok_or_else(|| format!("bad MAC `{s}`"))?),
        };
        if self
            .clients
            .values()
            .any(|c| c.port.as_ref().is_some_and(|p| p.1 == name))
        {
            return Err(format!("a port named `{name}` is already attached"));
        }
        let id = match self.free_ports.pop() {
            Some(id) => id,
            None if self.next_port <= u16::MAX as u32 => {
                self.next_port += 1;
                (self.next_port - 1) as u16
            }
            None => return Err("all 65536 ports are in use".into()),
        };
        let shm = match PortShm::create(name, self.cfg.geometry) {
            Ok(s) => s,
            Err(e) => {
                self.free_ports.push(id);
                return Err(format!("cannot make the port's memory: {e}"));
            }
        };
        if let Err(e) = self.handle.attach(id, shm.clone()) {
            self.free_ports.push(id);
            return Err(e.to_string());
        }
        if let Some(m) = mac {
            let _ = self.handle.add_static(m, id);
        }
        if let Some(c) = self.clients.get_mut(&key) {
            c.port = Some((id, name.to_string(), mac));
        }
        Ok(shm)
    }

    fn drop_client(&mut self, key: u64) {
        let Some(c) = self.clients.remove(&key) else {
            return;
        };
        let _ = epoll::delete(&self.epoll, c.stream.as_fd());
        if let Some((id, _, _)) = c.port {
            let _ = self.handle.detach(id);
            self.free_ports.push(id);
        }
    }
}

/// Runs a switch serving `path` on a background thread until the returned
/// guard is dropped (tests, benches and `pronto run --switch` demos).
pub struct Background {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), ControlError>>>,
}

impl Background {
    /// Binds `path` and serves it on a new thread.
    pub fn start(path: &Path, cfg: ServeConfig) -> Result<Background, ControlError> {
        let mut server = Server::bind(path, cfg)?;
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("pronto-switch-ctl".into())
            .spawn(move || server.serve(&s2))?;
        Ok(Background {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peer::Peer;
    use std::io::{BufRead, BufReader};

    fn sock(tag: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("pronto-sw-{tag}-{}.sock", std::process::id()))
    }

    #[test]
    fn names_and_macs_are_checked() {
        assert!(check_name("fw1/eth0").is_ok());
        assert_eq!(
            check_name("a b").expect_err("space refused"),
            "port name `a b` has ` `: use letters, digits and -_.:/@"
        );
        assert!(check_name("").is_err());
        assert_eq!(parse_mac("02:00:00:00:00:0a"), Some([2, 0, 0, 0, 0, 10]));
        assert_eq!(parse_mac("02-00-00-00-00-0A"), Some([2, 0, 0, 0, 0, 10]));
        assert_eq!(parse_mac("02:00:00:00:00"), None);
        assert_eq!(parse_mac("02:00:00:00:00:00:01"), None);
        assert_eq!(parse_mac("02:00:00:00:00:100"), None);
    }

    #[test]
    fn two_clients_exchange_frames_and_detach_on_close() {
        let path = sock("xchg");
        let _sw = Background::start(&path, ServeConfig::default()).expect("switch");
        let a = attach(&path, "a/eth0", Some([2, 0, 0, 0, 0, 1])).expect("attach a");
        let b = attach(&path, "b/eth0", Some([2, 0, 0, 0, 0, 2])).expect("attach b");
        assert_ne!(a.port, b.port);
        let err = attach(&path, "a/eth0", None).err().expect("duplicate name");
        assert_eq!(
            err.to_string(),
            "the switch refused port `a/eth0`: a port named `a/eth0` is already attached"
        );
        let mut pa = Peer::new(a.shm.clone(), 256).expect("peer a");
        let mut pb = Peer::new(b.shm.clone(), 256).expect("peer b");
        // a -> b: destination 02:..:02, source 02:..:01, type 0x0800, payload.
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 8, 0];
        f.extend(0..50u8);
        assert_eq!(pa.send(&[&f, &f]), 2);
        let mut got = Vec::new();
        for _ in 0..200 {
            pb.recv(|d| got.push(d.to_vec()));
            if got.len() == 2 {
                break;
            }
            pb.wait(Some(Duration::from_millis(10)));
        }
        assert_eq!(got, vec![f.clone(), f.clone()]);
        // The sender's counters are published after the batch is done.
        let mut list = Vec::new();
        for _ in 0..100 {
            list = ports(&path).expect("ports");
            if list.first().is_some_and(|l| l.contains("rx=2")) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(list.len(), 2);
        assert_eq!(
            list[0],
            format!("{} a/eth0 02:00:00:00:00:01 rx=2 tx=0 drops=0", a.port)
        );
        assert_eq!(
            list[1],
            format!("{} b/eth0 02:00:00:00:00:02 rx=0 tx=2 drops=0", b.port)
        );
        // Closing a's connection detaches its port; its name is free again.
        drop(pa);
        drop(a);
        let mut left = Vec::new();
        for _ in 0..100 {
            left = ports(&path).expect("ports");
            if left.len() == 1 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(left.len(), 1, "{left:?}");
        let again = attach(&path, "a/eth0", None).expect("reattach");
        drop(again);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn bad_requests_get_errors() {
        let path = sock("bad");
        let _sw = Background::start(&path, ServeConfig::default()).expect("switch");
        let ask = |req: &[u8]| {
            let mut c = UnixStream::connect(&path).expect("connect");
            c.write_all(req).expect("write");
            let mut s = String::new();
            BufReader::new(c).read_line(&mut s).expect("read");
            s
        };
        assert_eq!(
            ask(b"HELLO\n"),
            "ERR unknown request `HELLO`: expected ATTACH NAME [MAC] or PORTS\n"
        );
        assert_eq!(ask(b"ATTACH x zz:00\n"), "ERR bad MAC `zz:00`\n");
        assert_eq!(
            ask(b"ATTACH b\xffd\n"),
            "ERR port name `b\u{fffd}d` has `\u{fffd}`: use letters, digits and -_.:/@\n"
        );
        assert_eq!(ask(&[b'A'; 400]), "ERR request line too long\n");
        let e = attach(Path::new("/nonexistent/sw.sock"), "x", None)
            .err()
            .expect("no switch");
        assert!(
            e.to_string()
                .starts_with("cannot connect to the switch at /nonexistent/sw.sock: "),
            "{e}"
        );
        let _ = std::fs::remove_file(&path);
    }
}
