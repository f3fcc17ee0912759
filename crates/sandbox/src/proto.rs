//! The instance protocol: what travels over the sandbox's socket.
//!
//! The socket is a unix stream socket; the instance has its end at
//! descriptor [`SOCKET_FD`] (3). Every message, in both directions, is a
//! frame: a 4-byte little-endian length `N` (at most [`MAX_MESSAGE`]), then
//! `N` bytes of UTF-8. Descriptors (ring memfds, doorbells) may ride along
//! with a frame (`SCM_RIGHTS`, attached to its first byte); requests that
//! do not expect descriptors close them.
//!
//! Requests (one per frame; the verb, then one space, then its argument):
//!
//! | request | meaning | reply |
//! |---|---|---|
//! | `PING` | liveness | `OK pronto-instance` |
//! | `PORT <iface> <slots> <ring>` + 3 descriptors | interface `iface` is this switch port: its memfd and its two doorbells (to the switch, to the instance), in that order; configurations then name only given interfaces in `FromDevice`/`ToDevice` | `OK` |
//! | `FILE <path> <text>` | the file `path` (no spaces) holds `text`: configurations built from now on that read a file by that path (IDS rules, routes, subscribers, keys) read this one; bounded in number and size (`pronto_elements::files`) | `OK`, or `ERR <why>` |
//! | `CONFIG <text>` | parse and build a Click configuration, replacing the current one. While one runs, the new one is built and checked first: a bad one is refused and the old one keeps running; a good one takes the old one's state (Click's hot-swap: elements of the same name and class hand over queued packets, flows, ARP entries) and runs at once. The first accepted configuration locks the instance down (seccomp) before the reply | `OK <N> elements`, with `; took state: ELEMENT (WHAT), ...` when state moved, or `ERR <diagnostics>` (rendered rustc-style, file name `config`) |
//! | `READ <element>.<handler> [<args>]` | call a read handler (also while running), with arguments for those that take them | `OK <value>` |
//! | `WRITE <element>.<handler>[ <value>]` | call a write handler (value: the rest of the frame, may be empty or contain spaces; also while running) | `OK` |
//! | `RUN` | start running the router on its own thread | `OK running` at once |
//! | `WAIT` | wait until the run ends by itself (a `STOP true` source, a script's `stop`) | `OK stopped`, or `ERR <script error>` |
//! | `SOCKETS` | the `ControlSocket` elements of the current configuration, for whoever serves them | `OK` and one line per socket: `ELEMENT<TAB>TCP<TAB>PORT<TAB>READONLY` or `ELEMENT<TAB>UNIX<TAB>FILENAME<TAB>READONLY` (`READONLY` is `0` or `1`) |
//! | `STOP` | end the run (if any) and the instance | `OK`, then the process exits with status 0 |
//!
//! Replies are `OK` or `OK <text>` on success and `ERR <text>` on failure.
//! A reply that would exceed the frame limit (a handler's value) is sent as
//! `ERR` saying so, never cut or dropped.
//! Requests are answered in order, one at a time; the router runs on a
//! thread of its own, and handler calls reach it between rounds of its
//! task loop (`pronto_runtime::Remote`). End of stream on the socket ends
//! the instance.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// Descriptor number of the instance's end of the socket.
pub const SOCKET_FD: i32 = 3;

/// The largest frame payload (16 MiB).
pub const MAX_MESSAGE: usize = 16 << 20;

/// How much of a frame is read (and buffered) at a time.
const CHUNK: usize = 64 << 10;

/// The longest path a file given with `FILE` may have.
pub const MAX_FILE_PATH: usize = 255;

/// Whether `path` may name a file given with `FILE`: not empty, at most [`MAX_FILE_PATH`]
/// bytes, no whitespace or control characters, no `..` component, not a
/// directory (a trailing `/`). The error says which rule it breaks.
pub fn check_file_path(path: &str) -> Result<(), String> {
    if path.trim_start_matches("./").is_empty() {
        return Err("a file's path is empty".into());
    }
    if path.len() > MAX_FILE_PATH {
        return Err(format!(
            "a file's path is longer than {MAX_FILE_PATH} bytes"
        ));
    }
    if let Some(c) = path.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "the path `{}` has a {} in it",
            path.escape_debug(),
            if c.is_control() {
                "control character"
            } else {
                "space"
            }
        ));
    }
    if path.split('/').any(|c| c == "..") {
        return Err(format!("the path `{path}` has a `..` component"));
    }
    if path.ends_with('/') {
        return Err(format!("the path `{path}` names a directory"));
    }
    Ok(())
}

/// A request to an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// `PING`.
    Ping,
    /// `CONFIG <text>`.
    Config(&'a str),
    /// `READ <element.handler> [args]`.
    Read(&'a str),
    /// `WRITE <element.handler> <value>`.
    Write(&'a str, &'a str),
    /// `RUN`.
    Run,
    /// `WAIT`.
    Wait,
    /// `PORT <iface> <slots> <ring>` (with the port's three descriptors).
    Port(&'a str, u32, u32),
    /// `SOCKETS`.
    Sockets,
    /// `POOL <slots>`: the most packets the configurations built from now
    /// on may hold (their packet pool's limit).
    Pool(u64),
    /// `POLL <nanoseconds>`: after packets moved, the routers built from
    /// now on keep polling (yielding their CPU) this long before they
    /// sleep (0: sleep at once, the default).
    Poll(u64),
    /// `FILE <path> <text>`: the file `path` (no spaces in it) holds
    /// `text`, for configurations built from now on that read it.
    File(&'a str, &'a str),
    /// `STOP`.
    Stop,
}

impl<'a> Request<'a> {
    /// The frame payload.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Request::Ping => b"PING".to_vec(),
            Request::Config(t) => format!("CONFIG {t}").into_bytes(),
            Request::Read(h) => format!("READ {h}").into_bytes(),
            Request::Write(h, "") => format!("WRITE {h}").into_bytes(),
            Request::Write(h, v) => format!("WRITE {h} {v}").into_bytes(),
            Request::Run => b"RUN".to_vec(),
            Request::Wait => b"WAIT".to_vec(),
            Request::Port(i, s, r) => format!("PORT {i} {s} {r}").into_bytes(),
            Request::Sockets => b"SOCKETS".to_vec(),
            Request::Pool(n) => format!("POOL {n}").into_bytes(),
            Request::Poll(ns) => format!("POLL {ns}").into_bytes(),
            Request::File(p, t) => format!("FILE {p} {t}").into_bytes(),
            Request::Stop => b"STOP".to_vec(),
        }
    }

    /// Parses a frame payload; the error says what is wrong.
    pub fn parse(payload: &'a [u8]) -> Result<Request<'a>, String> {
        let text = std::str::from_utf8(payload)
            .map_err(|e| format!("request is not UTF-8 (byte {})", e.valid_up_to()))?;
        let (verb, arg) = match text.split_once(' ') {
            Some((v, a)) => (v, Some(a)),
            None => (text, None),
        };
        let need = |what: &str| -> Result<&'a str, String> {
            match arg {
                Some(a) if !a.is_empty() => Ok(a),
                _ => Err(format!("{verb}: expected {what}")),
            }
        };
        let none = |r: Request<'a>| -> Result<Request<'a>, String> {
            match arg {
                None => Ok(r),
                Some(_) => Err(format!("{verb}: takes no argument")),
            }
        };
        match verb {
            "PING" => none(Request::Ping),
            "RUN" => none(Request::Run),
            "WAIT" => none(Request::Wait),
            "SOCKETS" => none(Request::Sockets),
            "PORT" => {
                let a = need("INTERFACE SLOTS RING")?;
                let mut it = a.split(' ');
                let bad = || format!("PORT: expected INTERFACE SLOTS RING, found `{a}`");
                let iface = it.next().filter(|i| !i.is_empty()).ok_or_else(bad)?;
                let slots = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
                let ring = it.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
                if it.next().is_some() {
                    return Err(bad());
                }
                Ok(Request::Port(iface, slots, ring))
            }
            "STOP" => none(Request::Stop),
            "POOL" => {
                let a = need("SLOTS")?;
                a.parse()
                    .ok()
                    .filter(|n: &u64| *n > 0)
                    .map(Request::Pool)
                    .ok_or_else(|| {
                        format!("POOL: expected a positive number of slots, found `{a}`")
                    })
            }
            "POLL" => {
                let a = need("NANOSECONDS")?;
                a.parse()
                    .map(Request::Poll)
                    .map_err(|_| format!("POLL: expected a number of nanoseconds, found `{a}`"))
            }
            "CONFIG" => Ok(Request::Config(arg.unwrap_or(""))),
            "FILE" => {
                let rest = need("PATH TEXT")?;
                let (p, t) = rest.split_once(' ').unwrap_or((rest, ""));
                if p.is_empty() {
                    return Err("FILE: expected a path before the text".into());
                }
                Ok(Request::File(p, t))
            }
            "READ" => Ok(Request::Read(need("ELEMENT.HANDLER")?)),
            "WRITE" => {
                let rest = need("ELEMENT.HANDLER [VALUE]")?;
                let (h, v) = rest.split_once(' ').unwrap_or((rest, ""));
                if h.is_empty() {
                    return Err("WRITE: expected ELEMENT.HANDLER before the value".into());
                }
                Ok(Request::Write(h, v))
            }
            _ => Err(format!(
                "unknown request `{}`: expected PING, PORT, POOL, POLL, FILE, CONFIG, READ, WRITE, \
                 RUN, WAIT, SOCKETS or STOP",
                verb.chars().take(32).collect::<String>()
            )),
        }
    }
}

/// An instance's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// `OK [text]`.
    Ok(String),
    /// `ERR text`.
    Err(String),
}

impl Reply {
    /// The frame payload.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Reply::Ok(t) if t.is_empty() => b"OK".to_vec(),
            Reply::Ok(t) => format!("OK {t}").into_bytes(),
            Reply::Err(t) => format!("ERR {t}").into_bytes(),
        }
    }

    /// Parses a frame payload.
    pub fn parse(payload: &[u8]) -> Result<Reply, String> {
        let text = String::from_utf8_lossy(payload);
        if text == "OK" {
            return Ok(Reply::Ok(String::new()));
        }
        if let Some(t) = text.strip_prefix("OK ") {
            return Ok(Reply::Ok(t.to_string()));
        }
        if let Some(t) = text.strip_prefix("ERR ") {
            return Ok(Reply::Err(t.to_string()));
        }
        Err(format!(
            "reply starts with neither `OK` nor `ERR`: `{}`",
            text.chars().take(40).collect::<String>()
        ))
    }
}

/// Sends one frame with `fds` attached.
pub fn send_frame(sock: impl AsFd, payload: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    if payload.len() > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "message of {} bytes exceeds the {MAX_MESSAGE}-byte frame limit",
                payload.len()
            ),
        ));
    }
    let mut buf = Vec::with_capacity(4 + payload.len());
    buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    buf.extend_from_slice(payload);
    loop {
        match pronto_ring::fdpass::send(sock.as_fd(), &buf, fds) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Fills `buf` from the socket, collecting descriptors. `Ok(false)` on end
/// of stream before the first byte.
fn fill(sock: BorrowedFd<'_>, buf: &mut [u8], fds: &mut Vec<OwnedFd>) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        match pronto_ring::fdpass::recv(sock, &mut buf[got..]) {
            Ok((0, _)) if got == 0 => return Ok(false),
            Ok((0, _)) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the peer closed the socket in the middle of a frame",
                ))
            }
            Ok((n, more)) => {
                got += n;
                fds.extend(more);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Receives one frame and the descriptors that came with it; `None` at end
/// of stream.
pub fn recv_frame(sock: impl AsFd) -> io::Result<Option<(Vec<u8>, Vec<OwnedFd>)>> {
    let sock = sock.as_fd();
    let mut fds = Vec::new();
    let mut len = [0u8; 4];
    if !fill(sock, &mut len, &mut fds)? {
        return Ok(None);
    }
    let n = u32::from_le_bytes(len) as usize;
    if n > MAX_MESSAGE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("peer announced a {n}-byte frame; the limit is {MAX_MESSAGE}"),
        ));
    }
    // The buffer grows with what arrives, not with what the peer
    // announced: a peer that announces 16 MiB and sends nothing costs
    // nothing.
    let mut payload = Vec::with_capacity(n.min(CHUNK));
    while payload.len() < n {
        let at = payload.len();
        let want = (n - at).min(CHUNK);
        payload.resize(at + want, 0);
        if !fill(sock, &mut payload[at..], &mut fds)? {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the socket in the middle of a frame",
            ));
        }
    }
    Ok(Some((payload, fds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip() {
        for r in [
            Request::Ping,
            Request::Config("a :: Idle;"),
            Request::Read("c.count"),
            Request::Write("c.reset", ""),
            Request::Write("q.capacity", "10 20"),
            Request::Run,
            Request::Wait,
            Request::Port("eth0", 256, 128),
            Request::Sockets,
            Request::Pool(11565),
            Request::Poll(200_000),
            Request::Poll(0),
            Request::File(
                "examples/ids.rules",
                "alert tcp any any -> any 80 (sid:1;)\nx y",
            ),
            Request::File("empty", ""),
            Request::Stop,
        ] {
            let enc = r.encode();
            assert_eq!(Request::parse(&enc).expect("parses"), r);
        }
        assert_eq!(
            Request::parse(b"READ").expect_err("no handler"),
            "READ: expected ELEMENT.HANDLER"
        );
        assert_eq!(
            check_file_path("").expect_err("refused"),
            "a file's path is empty"
        );
        assert_eq!(
            check_file_path("./").expect_err("refused"),
            "a file's path is empty"
        );
        assert_eq!(
            check_file_path("a/../../etc/passwd").expect_err("refused"),
            "the path `a/../../etc/passwd` has a `..` component"
        );
        assert_eq!(
            check_file_path("a b").expect_err("refused"),
            "the path `a b` has a space in it"
        );
        assert_eq!(
            check_file_path("a\nb").expect_err("refused"),
            "the path `a\\nb` has a control character in it"
        );
        assert_eq!(
            check_file_path("dir/").expect_err("refused"),
            "the path `dir/` names a directory"
        );
        assert_eq!(
            check_file_path(&"x".repeat(256)).expect_err("refused"),
            "a file's path is longer than 255 bytes"
        );
        assert!(check_file_path("/etc/pronto/ids.rules").is_ok());
        assert_eq!(
            Request::parse(b"FILE").expect_err("no path"),
            "FILE: expected PATH TEXT"
        );
        assert_eq!(
            Request::parse(b"FILE  text").expect_err("empty path"),
            "FILE: expected a path before the text"
        );
        assert_eq!(
            Request::parse(b"PING x").expect_err("argument"),
            "PING: takes no argument"
        );
        assert!(Request::parse(b"HELLO")
            .expect_err("unknown")
            .starts_with("unknown request `HELLO`"));
        assert!(Request::parse(&[0xff]).is_err());
        // Found by the fuzzer: a value with no handler before it.
        assert_eq!(
            Request::parse(b"WRITE  ").expect_err("no handler"),
            "WRITE: expected ELEMENT.HANDLER before the value"
        );
        assert_eq!(
            Request::parse(b"PORT eth0 12").expect_err("short"),
            "PORT: expected INTERFACE SLOTS RING, found `eth0 12`"
        );
        assert_eq!(
            Request::parse(b"POLL 2ms").expect_err("not a number"),
            "POLL: expected a number of nanoseconds, found `2ms`"
        );
    }

    #[test]
    fn replies_round_trip() {
        for r in [
            Reply::Ok(String::new()),
            Reply::Ok("1000".into()),
            Reply::Err("no element named `x`".into()),
        ] {
            assert_eq!(Reply::parse(&r.encode()).expect("parses"), r);
        }
        assert!(Reply::parse(b"HELLO").is_err());
    }

    #[test]
    fn frames_travel_and_oversized_ones_are_refused() {
        let (a, b) = pronto_ring::fdpass::socket_pair().expect("pair");
        send_frame(&a, b"READ c.count", &[]).expect("send");
        send_frame(&a, b"", &[]).expect("send empty");
        let (p, fds) = recv_frame(&b).expect("recv").expect("frame");
        assert_eq!(p, b"READ c.count");
        assert!(fds.is_empty());
        let (p, _) = recv_frame(&b).expect("recv").expect("frame");
        assert!(p.is_empty());
        // A lying length is refused, not allocated.
        rustix::io::write(&a, &u32::MAX.to_le_bytes()).expect("write");
        let e = recv_frame(&b).expect_err("too long");
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        drop(a);
        assert!(recv_frame(&b).expect("eof").is_none());
    }

    #[test]
    fn a_frame_larger_than_a_chunk_arrives_whole() {
        let (a, b) = pronto_ring::fdpass::socket_pair().expect("pair");
        let big: Vec<u8> = (0..(3 * CHUNK + 7)).map(|i| (i % 251) as u8).collect();
        let sender = std::thread::spawn(move || send_frame(&a, &big, &[]).map(|()| big));
        let (p, _) = recv_frame(&b).expect("recv").expect("frame");
        assert_eq!(p, sender.join().expect("thread").expect("send"));
    }
}
