//! Click `ControlSocket`s of sandboxed instances, opened and served by the
//! daemon.
//!
//! An instance has no sockets once locked down (and its own empty network
//! namespace), so its `ControlSocket` elements only check their arguments
//! there; the instance lists them (`SOCKETS`, after it built the
//! configuration: the daemon never parses a tenant's configuration
//! itself), and the daemon listens for it (TCP on 127.0.0.1 only, on a
//! port of the tenant's range; a UNIX socket as
//! `CONTROL_DIR/TENANT/INSTANCE/FILENAME`) and serves Click's protocol
//! through the same handler path as the API, within the tenant's
//! connection limit and a per-connection data limit of
//! [`MAX_HANDLER_DATA`]. A socket whose element keeps its name and
//! arguments across a reconfiguration stays open (Click's
//! `ControlSocket::take_state`); a new one that cannot be opened makes the
//! configuration fail, and the old one keeps running.

use std::path::Path;
use std::sync::{Arc, Weak};

use pronto_runtime::controlsocket::{
    Connections, Handlers, Limits, Listener, Server, SocketSpec, Target,
};
use pronto_runtime::CallError;

use crate::failure::Failure;
use crate::manager::Manager;
use crate::quota::PortRange;

/// The most `ControlSocket`s one instance may have.
pub const MAX_SOCKETS: usize = 8;

/// The largest handler value a control socket connection may send or ask
/// for with `WRITEDATA`/`READDATA` (the API's handler bodies have the same
/// limit).
pub const MAX_HANDLER_DATA: usize = 1 << 20;

/// One open control socket of an instance.
pub(crate) struct Control {
    element: String,
    spec: SocketSpec,
    /// Where it listens: `tcp 127.0.0.1:PORT` or `unix PATH`.
    pub(crate) at: String,
    _server: Server,
}

/// Reads an instance's answer to `SOCKETS`: one line per socket,
/// `ELEMENT<TAB>TCP|UNIX<TAB>PORT|FILENAME<TAB>0|1`.
pub(crate) fn parse_sockets(text: &str) -> Result<Vec<(String, SocketSpec)>, Failure> {
    let bad = |why: String| Failure::BadRequest(format!("config: {why}"), Some("config"));
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split('\t').collect();
        let [element, kind, at, ro] = f.as_slice() else {
            return Err(bad(
                "a ControlSocket's FILENAME may not hold a tab or a line end".into(),
            ));
        };
        if element.is_empty() || element.len() > 1024 {
            return Err(bad("a ControlSocket's element name is too long".into()));
        }
        let target = match *kind {
            "TCP" => Target::Tcp {
                port: at
                    .parse()
                    .map_err(|_| bad(format!("{element}: bad port `{at}`")))?,
                localhost: true,
            },
            "UNIX" => Target::Unix(at.to_string()),
            other => return Err(bad(format!("{element}: unknown socket kind `{other}`"))),
        };
        out.push((
            element.to_string(),
            SocketSpec {
                target,
                readonly: *ro == "1",
                verbose: false,
            },
        ));
    }
    if out.len() > MAX_SOCKETS {
        return Err(bad(format!(
            "{} ControlSockets; an instance may have at most {MAX_SOCKETS}",
            out.len()
        )));
    }
    Ok(out)
}

/// Where and how an instance's sockets may listen.
pub(crate) struct Policy<'a> {
    /// The instance's directory for UNIX sockets.
    pub dir: &'a Path,
    /// Its tenant, for messages.
    pub tenant: &'a str,
    /// The tenant's TCP ports.
    pub ports: PortRange,
    /// The tenant's connections, shared by all its sockets.
    pub connections: Arc<Connections>,
}

/// Binds a loopback TCP port of `range`: `port` itself, or with 0 the
/// first free one.
fn bind_tcp(port: u16, policy: &Policy<'_>, element: &str) -> Result<Listener, Failure> {
    let refuse =
        |m: String| Failure::BadRequest(format!("{element} :: ControlSocket: {m}"), Some("config"));
    if port != 0 {
        if !policy.ports.contains(port) {
            return Err(Failure::OverQuota(
                format!(
                    "{element} :: ControlSocket: PORT: {port} is outside tenant `{}`'s control \
                     socket ports ({}); use one of them, or 0 for any",
                    policy.tenant, policy.ports
                ),
                "config",
            ));
        }
        return Listener::tcp(port, true)
            .map_err(|e| refuse(format!("PORT: cannot listen on 127.0.0.1:{port}: {e}")));
    }
    policy
        .ports
        .ports()
        .find_map(|p| Listener::tcp(p, true).ok())
        .ok_or_else(|| {
            refuse(format!(
                "PORT: every port of tenant `{}`'s control socket ports ({}) is in use",
                policy.tenant, policy.ports
            ))
        })
}

/// Opens the sockets of `wanted` that `current` does not already have
/// (same element name and arguments); the first that cannot be opened is
/// the error, naming its element.
pub(crate) fn open(
    policy: &Policy<'_>,
    wanted: &[(String, SocketSpec)],
    current: &[Control],
    handlers: Arc<dyn Handlers>,
) -> Result<Vec<Control>, Failure> {
    let mut out = Vec::new();
    for (element, spec) in wanted {
        if current
            .iter()
            .any(|c| c.element == *element && c.spec == *spec)
        {
            continue;
        }
        let what = |e: String| {
            Failure::BadRequest(format!("{element} :: ControlSocket: {e}"), Some("config"))
        };
        let (listener, path, at) = match &spec.target {
            Target::Tcp { port, .. } => {
                let l = bind_tcp(*port, policy, element)?;
                let at = format!("tcp 127.0.0.1:{}", l.port().unwrap_or(*port));
                (l, None, at)
            }
            Target::Unix(name) => {
                if name.is_empty()
                    || name.contains('/')
                    || name == "."
                    || name == ".."
                    || name.len() > 64
                {
                    return Err(what(format!(
                        "FILENAME: `{name}` must be a plain file name (no `/`) in an instance: \
                         the daemon makes the socket in the instance's control directory"
                    )));
                }
                // Only the daemon's user reaches the sockets (Click's
                // protocol has no authentication of its own).
                let dir = policy.dir;
                std::fs::create_dir_all(dir)
                    .and_then(|()| {
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    })
                    .map_err(|e| {
                        Failure::Internal(format!(
                            "making the control directory {}: {e}",
                            dir.display()
                        ))
                    })?;
                let path = dir.join(name);
                let l = Listener::unix(&path)
                    .map_err(|e| what(format!("FILENAME: cannot listen on `{name}`: {e}")))?;
                let at = format!("unix {}", path.display());
                (l, Some(path), at)
            }
        };
        let limits = Limits {
            connections: policy.connections.clone(),
            max_data: MAX_HANDLER_DATA,
        };
        let server = Server::start_within(
            listener,
            path,
            handlers.clone(),
            spec.readonly,
            false,
            limits,
        )
        .map_err(|e| {
            Failure::Internal(format!(
                "{element} :: ControlSocket: cannot start its thread: {e}"
            ))
        })?;
        out.push(Control {
            element: element.clone(),
            spec: spec.clone(),
            at,
            _server: server,
        });
    }
    Ok(out)
}

/// Keeps the sockets of `current` still wanted, adds `new`.
pub(crate) fn commit(
    current: &mut Vec<Control>,
    wanted: &[(String, SocketSpec)],
    new: Vec<Control>,
) {
    current.retain(|c| wanted.iter().any(|(e, s)| c.element == *e && c.spec == *s));
    current.extend(new);
}

/// Handler calls of one instance, for its control sockets.
pub(crate) struct InstanceHandlers {
    pub(crate) manager: Weak<Manager>,
    pub(crate) tenant: String,
    pub(crate) name: String,
}

/// A daemon failure as the control socket protocol reports it (510 no
/// element, 511 no handler, 520 handler error).
fn call_error(h: &str, f: Failure) -> CallError {
    let el = h.rsplit_once('.').map_or("", |(e, _)| e).to_string();
    match f {
        Failure::NotFound(t) if t.starts_with("no element named") => CallError::NoElement(el),
        Failure::NotFound(t) if t.contains(" has no ") => {
            CallError::NoHandler(el, h.to_string(), "")
        }
        Failure::BadRequest(t, _) => {
            let msg = t
                .strip_prefix(h)
                .and_then(|r| r.strip_prefix(": "))
                .unwrap_or(&t)
                .to_string();
            CallError::Failed(h.to_string(), msg)
        }
        other => CallError::Failed(
            h.to_string(),
            crate::failure::scrub_paths(&other.to_string()),
        ),
    }
}

impl InstanceHandlers {
    fn manager(&self, h: &str) -> Result<Arc<Manager>, CallError> {
        self.manager
            .upgrade()
            .ok_or_else(|| CallError::Failed(h.to_string(), "the daemon is stopping".into()))
    }
}

impl Handlers for InstanceHandlers {
    fn read(&self, h: &str, args: &str) -> Result<String, CallError> {
        self.manager(h)?
            .read_args(&self.tenant, &self.name, h, args)
            .map_err(|f| call_error(h, f))
    }

    fn write(&self, h: &str, value: &str) -> Result<(), CallError> {
        self.manager(h)?
            .write(&self.tenant, &self.name, h, value)
            .map_err(|f| call_error(h, f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_lists_are_read_and_bounded() {
        let v = parse_sockets("cs\tTCP\t20001\t1\nControlSocket@4\tUNIX\tctl\t0").expect("good");
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, "cs");
        assert_eq!(
            v[0].1.target,
            Target::Tcp {
                port: 20001,
                localhost: true
            }
        );
        assert!(v[0].1.readonly && !v[1].1.readonly);
        assert_eq!(v[1].1.target, Target::Unix("ctl".into()));
        assert!(parse_sockets("").expect("none").is_empty());
        for bad in ["cs\tTCP\t70000\t0", "cs\tSCTP\t1\t0", "cs\tUNIX\ta\tb\t0"] {
            assert!(matches!(
                parse_sockets(bad),
                Err(Failure::BadRequest(_, Some("config")))
            ));
        }
        let nine: Vec<String> = (0..9).map(|i| format!("c{i}\tTCP\t0\t0")).collect();
        assert!(parse_sockets(&nine.join("\n")).is_err());
    }

    #[test]
    fn tcp_ports_come_from_the_tenants_range() {
        let dir = std::env::temp_dir();
        let policy = Policy {
            dir: &dir,
            tenant: "t",
            ports: "20000-20999".parse().expect("range"),
            connections: Connections::new(1, "t"),
        };
        match bind_tcp(22, &policy, "cs") {
            Err(Failure::OverQuota(m, "config")) => assert_eq!(
                m,
                "cs :: ControlSocket: PORT: 22 is outside tenant `t`'s control socket ports \
                 (20000-20999); use one of them, or 0 for any"
            ),
            _ => panic!("port 22 was not refused"),
        }
        let l = bind_tcp(0, &policy, "cs").expect("a free port in the range");
        assert!(policy.ports.contains(l.port().expect("port")));
    }
}
