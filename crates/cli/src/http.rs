//! A small blocking HTTP/1.1 client for the daemon's API, over its unix
//! socket, loopback TCP, or TLS to a cluster node's `--cluster-listen`
//! address (its certificate pinned by fingerprint). (The CLI makes one request per run; a full HTTP
//! stack and an async runtime would cost more start-up than the request.)

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// Where the daemon is.
#[derive(Clone, Debug)]
pub enum Endpoint {
    /// Its unix socket.
    Unix(PathBuf),
    /// `host:port` on loopback.
    Tcp(String),
    /// `host:port` over TLS, the certificate whose SHA-256 is `sha256`.
    Tls {
        /// `host:port`.
        addr: String,
        /// The pinned fingerprint (hex).
        sha256: String,
    },
}

/// A response.
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Body.
    pub body: Vec<u8>,
}

impl Endpoint {
    /// The daemon as `--socket PATH` or `--url HOST:PORT` name it, else
    /// its default socket; `--url https://HOST:PORT` with the node's
    /// certificate fingerprint (`--fingerprint`, else $PRONTO_FINGERPRINT).
    pub fn choose(
        socket: Option<&str>,
        url: Option<&str>,
        fingerprint: Option<&str>,
    ) -> Result<Endpoint, String> {
        let Some(u) = url.filter(|_| socket.is_none()) else {
            return Ok(Endpoint::Unix(
                socket.map_or_else(crate::daemon::default_socket, PathBuf::from),
            ));
        };
        let Some(addr) = u.strip_prefix("https://") else {
            return Ok(Endpoint::Tcp(
                u.trim_start_matches("http://")
                    .trim_end_matches('/')
                    .to_string(),
            ));
        };
        let addr = addr.trim_end_matches('/').to_string();
        let env = std::env::var("PRONTO_FINGERPRINT").ok();
        let Some(f) = fingerprint.or(env.as_deref()) else {
            return Err(format!(
                "--url https://{addr}: give the node's certificate fingerprint with \
                 --fingerprint SHA256 (or PRONTO_FINGERPRINT): `pronto cluster nodes --etcd ...` \
                 shows each node's, and the daemon prints its own when it starts"
            ));
        };
        let f = f.replace(':', "").to_ascii_lowercase();
        if f.len() != 64 || !f.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "--fingerprint: expected the certificate's SHA-256 as 64 hex digits, found `{f}`"
            ));
        }
        Ok(Endpoint::Tls { addr, sha256: f })
    }

    /// The connection a request is sent on.
    fn connect(&self, timeout: Option<Duration>) -> Result<Box<dyn Stream>, String> {
        Ok(match self {
            Endpoint::Unix(p) => {
                let s = UnixStream::connect(p).map_err(|e| {
                    format!(
                        "cannot reach the daemon at {}: {e} (start it with `pronto daemon`, or \
                         point --socket / PRONTO_SOCKET at its socket)",
                        p.display()
                    )
                })?;
                let _ = s.set_read_timeout(timeout);
                Box::new(s)
            }
            Endpoint::Tcp(a) => {
                let s = std::net::TcpStream::connect(a)
                    .map_err(|e| format!("cannot reach the daemon at {a}: {e}"))?;
                let _ = s.set_read_timeout(timeout);
                Box::new(s)
            }
            Endpoint::Tls { addr, sha256 } => {
                let s = pronto_daemon::api::tls::connect_pinned(addr, sha256)?;
                let _ = s.sock.set_read_timeout(timeout);
                Box::new(s)
            }
        })
    }

    /// The `Host` header's value.
    fn host(&self) -> &str {
        match self {
            Endpoint::Unix(_) => "localhost",
            Endpoint::Tcp(a) | Endpoint::Tls { addr: a, .. } => a,
        }
    }
}

/// A request's head: request line, headers, the blank line.
fn head(
    method: &str,
    path: &str,
    host: &str,
    token: Option<&str>,
    close: bool,
    body: Option<(&str, &[u8])>,
) -> String {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n");
    if close {
        req.push_str("Connection: close\r\n");
    }
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    if let Some((ctype, bytes)) =
        body.or((method == "POST" || method == "PUT").then_some(("text/plain", b"")))
    {
        req.push_str(&format!(
            "Content-Type: {ctype}\r\nContent-Length: {}\r\n",
            bytes.len()
        ));
    }
    req.push_str("\r\n");
    req
}

impl Response {
    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The error message of a JSON error body, else the body.
    pub fn error(&self) -> String {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(str::to_string))
            .unwrap_or_else(|| self.text())
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

/// Sends one request and reads the whole response.
pub fn request(
    ep: &Endpoint,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<(&str, &[u8])>,
) -> Result<Response, String> {
    let mut s = ep.connect(Some(Duration::from_secs(120)))?;
    let host = ep.host();
    let req = head(method, path, host, token, true, body);
    let bytes = body.map_or(&b""[..], |b| b.1);
    let io = |e: std::io::Error| format!("talking to the daemon: {e}");
    s.write_all(req.as_bytes()).map_err(io)?;
    s.write_all(bytes).map_err(io)?;
    let mut raw = Vec::new();
    match s.read_to_end(&mut raw) {
        // A TLS peer that closes without close_notify after a whole
        // response: the response is judged by its own framing below.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => {}
        r => drop(r.map_err(io)?),
    }
    parse(&raw)
}

/// Sends a GET and copies the body, as it arrives, into what `open`
/// gives once the daemon has answered 200 (a capture that runs for
/// minutes): no read timeout, chunks written and flushed one by one. A
/// response other than 200 is read whole and returned as the error text,
/// and nothing is opened.
pub fn stream_to(
    ep: &Endpoint,
    token: Option<&str>,
    path: &str,
    open: &mut dyn FnMut() -> Result<Box<dyn Write>, String>,
) -> Result<(), String> {
    let s = ep.connect(None)?;
    let host = ep.host();
    let mut s = std::io::BufReader::new(s);
    let io = |e: std::io::Error| format!("talking to the daemon: {e}");
    s.get_mut()
        .write_all(head("GET", path, host, token, true, None).as_bytes())
        .map_err(io)?;
    // The head, line by line.
    let mut raw = Vec::new();
    loop {
        let mut line = Vec::new();
        let n = std::io::BufRead::read_until(&mut s, b'\n', &mut line).map_err(io)?;
        if n == 0 || line == b"\r\n" {
            raw.extend_from_slice(b"\r\n");
            break;
        }
        raw.extend_from_slice(&line);
    }
    let text = String::from_utf8_lossy(&raw).to_ascii_lowercase();
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or("the daemon sent a malformed HTTP response")?;
    let chunked = text.contains("transfer-encoding: chunked");
    if status != 200 {
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).map_err(io)?;
        let body = if chunked {
            unchunk(&rest).unwrap_or(rest)
        } else {
            rest
        };
        return Err(Response { status, body }.error());
    }
    let mut out = open()?;
    let write = |e: std::io::Error| format!("writing the capture: {e}");
    // A reader that stopped early (`| head`, tcpdump -c) ends the capture
    // quietly, as a closed pipe ends other command-line tools.
    let quiet = |r: std::io::Result<()>| match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        // A TLS peer that closes without close_notify.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(write(e)),
        Ok(()) => Ok(true),
    };
    if !chunked {
        quiet(std::io::copy(&mut s, &mut out).map(drop))?;
        return quiet(out.flush()).map(drop);
    }
    let bad = || "the daemon sent a malformed chunk".to_string();
    loop {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut s, &mut line).map_err(io)?;
        let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|_| bad())?;
        if size == 0 {
            return Ok(());
        }
        let mut chunk = vec![0u8; size + 2];
        s.read_exact(&mut chunk).map_err(io)?;
        if !quiet(out.write_all(&chunk[..size]).and_then(|()| out.flush()))? {
            return Ok(());
        }
    }
}

/// A connection kept open for several requests (HTTP/1.1 keep-alive), for
/// clients that make many: a round trip then skips the connection set-up.
pub struct Conn {
    s: std::io::BufReader<UnixStream>,
}

impl Conn {
    /// Connects to the daemon's unix socket.
    pub fn open(path: &std::path::Path) -> Result<Conn, String> {
        let s = UnixStream::connect(path)
            .map_err(|e| format!("cannot reach the daemon at {}: {e}", path.display()))?;
        let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
        Ok(Conn {
            s: std::io::BufReader::new(s),
        })
    }

    /// Sends one request on the connection and reads its response (whose
    /// length the daemon states).
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<(&str, &[u8])>,
    ) -> Result<Response, String> {
        use std::io::BufRead;
        let req = head(method, path, "localhost", None, false, body);
        let bytes = body.map_or(&b""[..], |b| b.1);
        let io = |e: std::io::Error| format!("talking to the daemon: {e}");
        let w = self.s.get_mut();
        w.write_all(req.as_bytes()).map_err(io)?;
        w.write_all(bytes).map_err(io)?;
        let bad = || "the daemon sent a malformed HTTP response".to_string();
        let mut line = String::new();
        self.s.read_line(&mut line).map_err(io)?;
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or_else(bad)?;
        let mut len = None;
        loop {
            line.clear();
            self.s.read_line(&mut line).map_err(io)?;
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse::<usize>().ok();
                }
            }
        }
        let mut body = vec![0u8; len.ok_or_else(bad)?];
        self.s.read_exact(&mut body).map_err(io)?;
        Ok(Response { status, body })
    }
}

fn parse(raw: &[u8]) -> Result<Response, String> {
    let bad = || "the daemon sent a malformed HTTP response".to_string();
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(bad)?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| bad())?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(bad)?;
    let (mut chunked, mut length) = (false, None);
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.eq_ignore_ascii_case("transfer-encoding")
                && v.trim().eq_ignore_ascii_case("chunked")
            {
                chunked = true;
            } else if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse::<usize>().ok();
            }
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        unchunk(rest).ok_or_else(bad)?
    } else {
        match length {
            Some(n) if rest.len() < n => {
                return Err(format!(
                    "the daemon's response was cut short ({} of {n} bytes)",
                    rest.len()
                ))
            }
            Some(n) => rest[..n].to_vec(),
            None => rest.to_vec(),
        }
    };
    Ok(Response { status, body })
}

fn unchunk(mut b: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = b.windows(2).position(|w| w == b"\r\n")?;
        let size = std::str::from_utf8(&b[..eol]).ok()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        b = &b[eol + 2..];
        if size == 0 {
            return Some(out);
        }
        out.extend_from_slice(b.get(..size)?);
        b = b.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_plain_and_chunked_responses() {
        let r = super::parse(b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\nno").expect("r");
        assert_eq!((r.status, r.text()), (404, "no".to_string()));
        let r = super::parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .expect("r");
        assert_eq!((r.status, r.text()), (200, "abcde".to_string()));
        assert!(super::parse(b"garbage").is_err());
        // A connection that ended early (a TLS peer gone mid-body).
        let e = super::parse(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nab")
            .err()
            .expect("cut short");
        assert_eq!(e, "the daemon's response was cut short (2 of 5 bytes)");
    }
}
