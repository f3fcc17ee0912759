//! Click's ControlSocket under `pronto run` and in sandboxed instances
//! (opened and served by the daemon): a program speaking Click's line
//! protocol reads and writes handlers of a running router, over a UNIX
//! socket and over TCP, on one thread and on two.

mod common;

use common::ctl as cli;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Run(Child);

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(args: &[&str], config: &str) -> Run {
    Run(Command::new(env!("CARGO_BIN_EXE_pronto"))
        .arg("run")
        .args(args)
        .args(["-e", config])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("pronto run"))
}

/// A client: the greeting, then one command at a time.
struct Client<S: Read + Write> {
    r: BufReader<S>,
}

impl<S: Read + Write> Client<S> {
    fn new(s: S) -> Client<S> {
        let mut c = Client {
            r: BufReader::new(s),
        };
        assert_eq!(c.line(), "Click::ControlSocket/1.3\r\n");
        c
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.r.read_line(&mut l).expect("a reply line");
        l
    }

    /// Sends `cmd` (and `data`), returns the reply lines and any DATA.
    fn call(&mut self, cmd: &str, data: &[u8]) -> (String, Option<String>) {
        let s = self.r.get_mut();
        s.write_all(format!("{cmd}\r\n").as_bytes()).expect("send");
        s.write_all(data).expect("send data");
        let mut reply = String::new();
        loop {
            let l = self.line();
            let more = l.as_bytes().get(3) == Some(&b'-');
            reply.push_str(&l);
            if !more {
                break;
            }
        }
        let mut body = None;
        if reply.starts_with("200 Read handler") && cmd.to_uppercase().starts_with("READ") {
            let d = self.line();
            let n: usize = d
                .trim_end()
                .strip_prefix("DATA ")
                .expect("DATA line")
                .parse()
                .expect("length");
            let mut b = vec![0u8; n];
            self.r.read_exact(&mut b).expect("data");
            body = Some(String::from_utf8(b).expect("text"));
        }
        (reply, body)
    }
}

fn connect_unix(path: &std::path::Path) -> std::os::unix::net::UnixStream {
    let t0 = Instant::now();
    loop {
        if let Ok(s) = std::os::unix::net::UnixStream::connect(path) {
            return s;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "no control socket");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn exercise<S: Read + Write>(c: &mut Client<S>, elements: usize) {
    let (r, v) = c.call("READ c.count", b"");
    assert_eq!(r, "200 Read handler 'c.count' OK\r\n");
    assert!(v.expect("data").parse::<u64>().is_ok());
    assert_eq!(
        c.call("WRITE c.reset", b"").0,
        "200 Write handler 'c.reset' OK\r\n"
    );
    assert_eq!(
        c.call("WRITEDATA s.data 5", b"hello").0,
        "200 Write handler 's.data' OK\r\n"
    );
    assert_eq!(c.call("READ s.data", b"").1.as_deref(), Some("hello"));
    assert_eq!(
        c.call("READ zz.count", b"").0,
        "510 No element named 'zz'\r\n"
    );
    assert_eq!(
        c.call("READ c.nope", b"").0,
        "511 No handler named 'c.nope'\r\n"
    );
    assert_eq!(
        c.call("CHECKREAD c.count", b"").0,
        "200 Read handler 'c.count' OK\r\n"
    );
    assert_eq!(
        c.call("CHECKWRITE c.count", b"").0,
        "511 Handler 'c.count' not writable\r\n"
    );
    assert_eq!(
        c.call("CHECKREAD c.nope", b"").0,
        "511 No read handler named 'c.nope'\r\n"
    );
    assert_eq!(
        c.call("WRITE s.limit x", b"").0,
        "520-Write handler 's.limit' error:\r\n520 limit: expected integer\r\n"
    );
    assert_eq!(c.call("READ", b"").0, "500 Wrong number of arguments\r\n");
    assert_eq!(
        c.call("LLRPC x", b"").0,
        "501 Command 'LLRPC' unimplemented\r\n"
    );
    let (r, v) = c.call("READ list", b"");
    assert_eq!(r, "200 Read handler 'list' OK\r\n");
    assert!(v.expect("list").starts_with(&format!("{elements}\n")));
    assert_eq!(c.call("QUIT", b"").0, "200 Goodbye!\r\n");
}

const CONFIG: &str = "c :: Counter; s :: TimedSource(0.01s) -> c -> Discard; ";

#[test]
fn click_programs_drive_a_running_router() {
    let dir = common::scratch("controlsocket");
    let sock = dir.join("cs.sock");
    for threads in ["1", "2"] {
        let _run = start(
            &["--threads", threads],
            &format!("{CONFIG}ControlSocket(UNIX, {});", sock.display()),
        );
        let mut c = Client::new(connect_unix(&sock));
        exercise(&mut c, 4);
    }
    // TCP, read-only: writes are refused.
    let _run = start(
        &[],
        &format!(
            "{CONFIG}cs :: ControlSocket(TCP, 0, LOCALHOST true, READONLY true); \
             ControlSocket(UNIX, {});",
            sock.display()
        ),
    );
    let mut u = Client::new(connect_unix(&sock));
    let port = u.call("READ cs.port", b"").1.expect("port");
    let mut t = Client::new(
        std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().expect("a port")))
            .expect("tcp"),
    );
    assert_eq!(
        t.call("WRITE c.reset", b"").0,
        "530 Permission denied for 'c.reset'\r\n"
    );
    assert_eq!(
        t.call("READ c.count", b"").0,
        "200 Read handler 'c.count' OK\r\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_control_sockets_are_configuration_errors() {
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args(["run", "-q", "-e", "ControlSocket(SCTP, 1);"])
        .output()
        .expect("pronto");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("TYPE: expected TCP or UNIX, found `SCTP`"),
        "{err}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_pronto"))
        .args([
            "run",
            "-q",
            "-e",
            "ControlSocket(UNIX, /nonexistent/dir/s);",
        ])
        .output()
        .expect("pronto");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("FILENAME: cannot listen on /nonexistent/dir/s: No such file or directory"),
        "{err}"
    );
}

#[test]
fn click_programs_drive_a_sandboxed_instance_through_the_daemon() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED click_programs_drive_a_sandboxed_instance_through_the_daemon: sandboxes need root");
        return;
    }
    let dir = common::scratch("controlsocket-daemon");
    let _d = common::start_daemon(&dir);
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write config");
        p.to_str().expect("path").to_string()
    };
    // A FILENAME that is not a plain name is refused, and nothing is made.
    let bad = write(
        "bad.click",
        &format!("{CONFIG}ControlSocket(UNIX, ../ctl);"),
    );
    let (ok, _, err) = cli(&dir, &["create", "cs1", "--config", &bad]);
    assert!(!ok);
    assert!(
        err.contains("ControlSocket@")
            && err.contains("FILENAME: `../ctl` must be a plain file name"),
        "{err}"
    );

    let good = write(
        "good.click",
        &format!("{CONFIG}ControlSocket(UNIX, ctl); cs :: ControlSocket(TCP, 0, READONLY true);"),
    );
    let (ok, _, err) = cli(&dir, &["create", "cs1", "--config", &good]);
    assert!(ok, "{err}");
    let (_, out, _) = cli(&dir, &["show", "cs1", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    let at: Vec<&str> = v["control_sockets"]
        .as_array()
        .expect("control_sockets")
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    let unix = dir.join("state/control/default/cs1/ctl");
    assert_eq!(at[0], format!("unix {}", unix.display()));
    let port: u16 = at[1]
        .strip_prefix("tcp 127.0.0.1:")
        .expect("a loopback TCP socket")
        .parse()
        .expect("port");
    assert_ne!(port, 0, "port 0 is replaced by the one bound");

    let mut u = Client::new(connect_unix(&unix));
    exercise(&mut u, 5);
    let mut t = Client::new(std::net::TcpStream::connect(("127.0.0.1", port)).expect("tcp"));
    assert_eq!(
        t.call("WRITE c.reset", b"").0,
        "530 Permission denied for 'c.reset'\r\n"
    );
    assert_eq!(
        t.call("READ c.count", b"").0,
        "200 Read handler 'c.count' OK\r\n"
    );

    // Reconfigured without the TCP socket: it closes; the UNIX one (same
    // element, same arguments) stays open, its client still connected.
    let mut u = Client::new(connect_unix(&unix));
    let next = write("next.click", &format!("{CONFIG}ControlSocket(UNIX, ctl);"));
    let (ok, _, err) = cli(&dir, &["config", "cs1", &next]);
    assert!(ok, "{err}");
    assert_eq!(
        u.call("READ c.count", b"").0,
        "200 Read handler 'c.count' OK\r\n"
    );
    let (r, v) = u.call("READ list", b"");
    assert_eq!(r, "200 Read handler 'list' OK\r\n");
    assert!(v.expect("list").starts_with("4\n"));
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the TCP socket stays open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    // Removed: the socket file goes.
    let (ok, _, err) = cli(&dir, &["rm", "cs1"]);
    assert!(ok, "{err}");
    assert!(!unix.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn oversized_data_and_endless_lines_are_refused_before_they_are_read() {
    let dir = common::scratch("controlsocket-limits");
    let sock = dir.join("cs.sock");
    let _run = start(
        &[],
        &format!("{CONFIG}ControlSocket(UNIX, {});", sock.display()),
    );
    // Announced data over the limit: refused at once, nothing read.
    let s = connect_unix(&sock);
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut c = Client::new(s);
    let (r, _) = c.call("WRITEDATA s.data 419430400", b"");
    assert_eq!(
        r,
        "521 Data too large for write handler 's.data' (419430400 bytes; the limit is 16777216)\r\n"
    );
    // A line that never ends: refused, and the connection closed.
    let mut s = connect_unix(&sock);
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let mut l = String::new();
    r.read_line(&mut l).expect("greeting");
    let _ = s.write_all(&vec![b'A'; 1 << 20]);
    l.clear();
    r.read_line(&mut l).expect("a reply");
    assert_eq!(l, "500 Line too long (the limit is 65536 bytes)\r\n");
    // The connection ends (reset: what was sent after the limit is unread).
    let mut rest = Vec::new();
    match r.read_to_end(&mut rest) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the connection goes on: {other:?} {rest:?}"),
    }
    // Within the limits all is as before.
    let mut c = Client::new(connect_unix(&sock));
    assert_eq!(
        c.call("WRITEDATA s.data 5", b"hello").0,
        "200 Write handler 's.data' OK\r\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
