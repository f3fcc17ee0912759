//! Raw HTTP/1.1 requests to a daemon's API over its unix socket or TCP, for
//! tests that look at what the daemon answers (status, headers, body), not
//! at what the CLI prints.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

/// One answer.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Header lines, names in lower case.
    pub headers: Vec<(String, String)>,
    /// Body.
    pub body: Vec<u8>,
}

impl Reply {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON (panics, with the body, when it is not).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: the body is not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Asserts an error answer: `status`, a JSON body with `error` and the
    /// `field` given (or none), no host path in the message; returns the
    /// message.
    pub fn error(&self, status: u16, field: Option<&str>) -> String {
        assert_eq!(self.status, status, "{}", self.text());
        assert!(
            self.header("content-type")
                .is_some_and(|t| t.starts_with("application/json")),
            "error bodies are JSON: {:?} {}",
            self.headers,
            self.text()
        );
        let v = self.json();
        let msg = v["error"].as_str().expect("an `error` message").to_string();
        assert_eq!(v["field"].as_str(), field, "{v}");
        for bad in ["/sys/", "/proc/", "/tmp/", "/var/", "/run/", "state.redb"] {
            assert!(!msg.contains(bad), "a host path in an error: {msg}");
        }
        msg
    }
}

fn parse(raw: &[u8]) -> Reply {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut body = raw[end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    if chunked {
        let mut out = Vec::new();
        let mut b = &body[..];
        loop {
            let nl = b.windows(2).position(|w| w == b"\r\n").expect("chunk size");
            let n = usize::from_str_radix(String::from_utf8_lossy(&b[..nl]).trim(), 16)
                .expect("hex size");
            if n == 0 {
                break;
            }
            out.extend_from_slice(&b[nl + 2..nl + 2 + n]);
            b = &b[nl + 2 + n + 2..];
        }
        body = out;
    }
    Reply {
        status,
        headers,
        body,
    }
}

/// Where to send a request.
pub enum To<'a> {
    /// The daemon's unix socket (`DIR/sock` of [`super::start_daemon`]).
    Unix(&'a Path),
    /// Its TCP address, with a token.
    Tcp(&'a str, Option<&'a str>),
}

/// Sends `method path` with `body` (JSON unless it is empty) and reads the
/// whole answer.
pub fn call(to: &To<'_>, method: &str, path: &str, body: &[u8]) -> Reply {
    call_with(to, method, path, &[], body)
}

/// [`call`] with extra header lines.
pub fn call_with(
    to: &To<'_>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    try_call(to, method, path, headers, body).unwrap_or_else(|e| panic!("{method} {path}: {}", e.1))
}

/// [`call_with`], failing instead of panicking: `(sent, why)`, `sent`
/// false when no connection was made (the request cannot have had an
/// effect).
pub fn try_call(
    to: &To<'_>,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Reply, (bool, String)> {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n");
    if let To::Tcp(_, Some(t)) = to {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" || method == "PUT" {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    let mut raw = Vec::new();
    let send = |s: &mut dyn ReadWrite, raw: &mut Vec<u8>| -> std::io::Result<()> {
        s.write_all(req.as_bytes())?;
        s.write_all(body)?;
        s.read_to_end(raw)?;
        Ok(())
    };
    let sent = match to {
        To::Unix(sock) => {
            let mut s = std::os::unix::net::UnixStream::connect(sock)
                .map_err(|e| (false, format!("connecting: {e}")))?;
            let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
            send(&mut s, &mut raw)
        }
        To::Tcp(addr, _) => {
            let mut s = std::net::TcpStream::connect(addr)
                .map_err(|e| (false, format!("connecting: {e}")))?;
            let _ = s.set_read_timeout(Some(Duration::from_secs(120)));
            send(&mut s, &mut raw)
        }
    };
    sent.map_err(|e| (true, e.to_string()))?;
    if !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        return Err((true, "the connection ended before an answer".into()));
    }
    Ok(parse(&raw))
}

/// Sends only a request's head, announcing a `Content-Length` of
/// `announced` bytes, then up to `sent` bytes of it, and reads what the
/// daemon answers before the rest would arrive (`None`: it waited for
/// the body for `wait`).
pub fn announce(
    to: &To<'_>,
    method: &str,
    path: &str,
    announced: u64,
    sent: usize,
    wait: Duration,
) -> Option<Reply> {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {announced}\r\n"
    );
    if let To::Tcp(_, Some(t)) = to {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    req.push_str("\r\n");
    let go = |s: &mut dyn ReadWrite| -> Option<Reply> {
        s.write_all(req.as_bytes()).expect("send the head");
        // The daemon may answer (and close) before taking the whole part.
        let _ = s.write_all(&vec![b' '; sent]);
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    raw.extend_from_slice(&buf[..n]);
                    if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                        let r = parse(&raw);
                        let len: usize = r
                            .header("content-length")
                            .and_then(|l| l.parse().ok())
                            .unwrap_or(0);
                        if raw.len() >= end + 4 + len {
                            return Some(parse(&raw));
                        }
                    }
                }
                Err(_) => break,
            }
        }
        (!raw.is_empty()).then(|| parse(&raw))
    };
    match to {
        To::Unix(sock) => {
            let mut s = std::os::unix::net::UnixStream::connect(sock).expect("the API socket");
            s.set_read_timeout(Some(wait)).expect("timeout");
            go(&mut s)
        }
        To::Tcp(addr, _) => {
            let mut s = std::net::TcpStream::connect(addr).expect("the API's TCP address");
            s.set_read_timeout(Some(wait)).expect("timeout");
            go(&mut s)
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A process's resident memory now and at its peak, bytes (`VmRSS`,
/// `VmHWM` of `/proc/PID/status`).
pub fn rss(pid: u32) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let field = |k: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or_else(|| panic!("no {k} in /proc/{pid}/status"))
    };
    (field("VmRSS:"), field("VmHWM:"))
}
