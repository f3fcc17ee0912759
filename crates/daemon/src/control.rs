//! Click `ControlSocket`s of sandboxed instances, opened and served by the
//! daemon.
//!
//! An instance has no sockets once locked down (and its own empty network
//! namespace), so its `ControlSocket` elements only check their arguments
//! there; the daemon reads them from the configuration, listens for the
//! instance (TCP on 127.0.0.1 only; a UNIX socket as
//! `CONTROL_DIR/TENANT/INSTANCE/FILENAME`) and serves Click's protocol
//! through the same handler path as the API. A socket whose element keeps
//! its name and arguments across a reconfiguration stays open (Click's
//! `ControlSocket::take_state`); a new one that cannot be opened makes the
//! configuration fail, and the old one keeps running.

use std::path::Path;
use std::sync::{Arc, Weak};

use pronto_runtime::controlsocket::{Handlers, Listener, Server, SocketSpec, Target};
use pronto_runtime::CallError;

use crate::manager::{Failure, Manager};

/// One open control socket of an instance.
pub(crate) struct Control {
    element: String,
    spec: SocketSpec,
    /// Where it listens: `tcp 127.0.0.1:PORT` or `unix PATH`.
    pub(crate) at: String,
    _server: Server,
}

/// The `ControlSocket` elements of a configuration (none when it does
/// not parse: building it in the sandbox reports why).
pub(crate) fn wanted(config: &str) -> Vec<(String, SocketSpec)> {
    if !config.contains("ControlSocket") {
        return Vec::new();
    }
    let mut sm = pronto_lang::SourceMap::new();
    let file = sm.add("config", config);
    let opts = pronto_lang::Options {
        defines: &[],
        is_primitive: &pronto_runtime::is_known_class,
    };
    match pronto_lang::parse_flat(&sm, file, &opts) {
        Ok((flat, _)) => SocketSpec::of_config(&flat),
        Err(_) => Vec::new(),
    }
}

/// Opens the sockets of `wanted` that `current` does not already have
/// (same element name and arguments); the first that cannot be opened is
/// the error, naming its element.
pub(crate) fn open(
    dir: &Path,
    wanted: &[(String, SocketSpec)],
    current: &[Control],
    handlers: Arc<dyn Handlers>,
) -> Result<Vec<Control>, String> {
    let mut out = Vec::new();
    for (element, spec) in wanted {
        if current
            .iter()
            .any(|c| c.element == *element && c.spec == *spec)
        {
            continue;
        }
        let what = |e: String| format!("{element} :: ControlSocket: {e}");
        let (listener, path, at) = match &spec.target {
            Target::Tcp { port, .. } => {
                let l = Listener::tcp(*port, true)
                    .map_err(|e| what(format!("PORT: cannot listen on 127.0.0.1:{port}: {e}")))?;
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
                         the daemon makes the socket in {}",
                        dir.display()
                    )));
                }
                // Only the daemon's user reaches the sockets (Click's
                // protocol has no authentication of its own).
                std::fs::create_dir_all(dir)
                    .and_then(|()| {
                        use std::os::unix::fs::PermissionsExt;
                        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    })
                    .map_err(|e| what(format!("cannot make {}: {e}", dir.display())))?;
                let path = dir.join(name);
                let l = Listener::unix(&path).map_err(|e| {
                    what(format!(
                        "FILENAME: cannot listen on {}: {e}",
                        path.display()
                    ))
                })?;
                let at = format!("unix {}", path.display());
                (l, Some(path), at)
            }
        };
        let server = Server::start(listener, path, handlers.clone(), spec.readonly, false)
            .map_err(|e| what(format!("cannot start its thread: {e}")))?;
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
        other => CallError::Failed(h.to_string(), other.to_string()),
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
