//! The REST API (`docs/openapi.yaml`), served on a unix socket and on
//! loopback TCP.
//!
//! Who calls: a request bearing `Authorization: Bearer TOKEN` acts as the
//! admin (the token in `STATE_DIR/admin.token`) or as the tenant whose
//! token it is; a request on the unix socket without a token is the admin
//! (the socket is mode 0600); on TCP a token is required. A tenant sees
//! only its own instances: another tenant's is "not found", exactly as if
//! it did not exist.
//!
//! Every error is a JSON object `{"error": ..., "field": ...}` naming the
//! request field to blame (also for the router's own refusals: unknown
//! method, bad path); internal errors are logged in full and answered
//! without host paths. A request body is read only after the caller is
//! known, and never beyond its endpoint's limit ([`body`]).

pub(crate) mod body;
pub mod tls;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, RwLock};

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use body::{Fields, MAX_CONFIG_BODY, MAX_HANDLER_BODY, MAX_SMALL_BODY};

use crate::failure::{scrub_paths, Failure};
use crate::manager::{Manager, ManagerOptions};
use crate::store::{IfaceSpec, InstanceSpec, PortGeometrySpec, RateLimitSpec, Store};

/// The tenant every installation has; the admin's instances go there
/// unless another is named.
pub const DEFAULT_TENANT: &str = "default";

/// How to run the daemon.
#[derive(Clone, Debug)]
pub struct Options {
    /// The API's unix socket.
    pub socket: PathBuf,
    /// The API's TCP address (loopback), if any; port 0 picks one.
    pub listen: Option<SocketAddr>,
    /// Where the store and the admin token live.
    pub state_dir: PathBuf,
    /// Instance manager settings.
    pub manager: ManagerOptions,
    /// Linux interfaces attached to the switch as ports `uplink/IFACE`
    /// (`--uplink`).
    pub uplinks: Vec<String>,
    /// The VXLAN uplink, port `vxlan/VNI` (`--vxlan`).
    pub vxlan: Option<crate::manager::vxlan::VxlanSpec>,
    /// The most entries the audit log keeps (`--audit-limit`).
    pub audit_limit: u64,
    /// Cluster mode (`--cluster`, `--node`): the desired instances are in
    /// etcd, not in the local store.
    pub cluster: Option<crate::cluster::ClusterOptions>,
}

/// An API error: status, message and the field to blame.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    field: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, message: String, field: Option<String>) -> ApiError {
        ApiError {
            status,
            message,
            field,
        }
    }
}

/// The JSON error body.
fn error_body(message: &str, field: Option<&str>) -> Value {
    let mut body = json!({ "error": message });
    if let Some(f) = field {
        body["field"] = json!(f);
    }
    body
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = error_body(&self.message, self.field.as_deref());
        (self.status, Json(body)).into_response()
    }
}

impl From<Failure> for ApiError {
    fn from(f: Failure) -> ApiError {
        let e = |status, m: String, field: Option<&str>| {
            ApiError::new(status, m, field.map(str::to_string))
        };
        match f {
            Failure::BadRequest(m, field) => e(StatusCode::BAD_REQUEST, m, field),
            Failure::OverQuota(m, field) => e(StatusCode::FORBIDDEN, m, Some(field)),
            Failure::NotFound(m) => e(StatusCode::NOT_FOUND, m, None),
            Failure::Conflict(m, field) => e(StatusCode::CONFLICT, m, field),
            Failure::Unavailable(m) => e(StatusCode::SERVICE_UNAVAILABLE, scrub_paths(&m), None),
            Failure::Internal(m) => {
                // The daemon's log has the detail; the client, no host path.
                eprintln!("prontod: internal error: {m}");
                e(StatusCode::INTERNAL_SERVER_ERROR, scrub_paths(&m), None)
            }
        }
    }
}

fn bad(m: impl Into<String>, field: Option<&str>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, m.into(), field.map(str::to_string))
}

fn internal(m: impl ToString) -> ApiError {
    ApiError::from(Failure::Internal(m.to_string()))
}

fn status(s: StatusCode, m: impl Into<String>) -> ApiError {
    ApiError::new(s, m.into(), None)
}

/// Makes an error answer that is not JSON (the router's own: a method an
/// endpoint does not take, a path segment that does not decode) JSON,
/// keeping its status and words.
async fn json_errors(resp: Response) -> Response {
    let s = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !(s.is_client_error() || s.is_server_error()) || is_json {
        return resp;
    }
    let text = axum::body::to_bytes(resp.into_body(), 64 << 10)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let message = match (s, text.is_empty()) {
        (StatusCode::METHOD_NOT_ALLOWED, _) => {
            "this endpoint does not take that method (see docs/openapi.yaml)".to_string()
        }
        (_, true) => s.canonical_reason().unwrap_or("error").to_lowercase(),
        (_, false) => scrub_paths(&text),
    };
    (s, Json(error_body(&message, None))).into_response()
}

/// Hex SHA-256 of a token (the store keeps digests, not tokens).
pub fn digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A new random token: 32 bytes from the kernel, hex.
pub fn new_token() -> Result<String, String> {
    let mut b = [0u8; 32];
    rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty())
        .map_err(|e| format!("getrandom: {e}"))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// The daemon's shared state.
pub struct Shared {
    /// The instances.
    pub manager: Arc<Manager>,
    admin_digest: String,
    /// Token digest → tenant.
    tenants: RwLock<HashMap<String, String>>,
    /// This node of a cluster, in cluster mode.
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
}

#[derive(Clone)]
pub(crate) struct App {
    pub(crate) s: Arc<Shared>,
    unix: bool,
}

#[derive(Clone, Debug, PartialEq)]
enum Caller {
    Admin,
    Tenant(String),
}

impl App {
    fn caller(&self, h: &HeaderMap) -> Result<Caller, ApiError> {
        // A call another node forwarded: it authenticated the caller,
        // names the tenant in `?tenant=` and a tenant caller in its
        // caller header, believed only with the secret (docs/cluster.md).
        if self.s.cluster.as_ref().is_some_and(|c| c.is_node(h)) {
            let tenant = h
                .get(crate::cluster::CALLER_HEADER)
                .and_then(|v| v.to_str().ok());
            return Ok(tenant.map_or(Caller::Admin, |t| Caller::Tenant(t.to_string())));
        }
        let auth = h.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let Some(auth) = auth else {
            return if self.unix {
                Ok(Caller::Admin)
            } else {
                Err(status(
                    StatusCode::UNAUTHORIZED,
                    "a token is needed: send `Authorization: Bearer TOKEN` (the admin token is in \
                     the daemon's state directory, admin.token)",
                ))
            };
        };
        let token = auth.strip_prefix("Bearer ").unwrap_or("").trim();
        let d = digest(token);
        if d == self.s.admin_digest {
            return Ok(Caller::Admin);
        }
        // In cluster mode the tenants are the cluster's (a watched cache).
        let found = match &self.s.cluster {
            Some(c) => c.tenant_of(&d),
            None => self
                .s
                .tenants
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(&d)
                .cloned(),
        };
        match found {
            Some(t) => Ok(Caller::Tenant(t)),
            None => Err(status(
                StatusCode::UNAUTHORIZED,
                "the token is not valid (expected `Authorization: Bearer TOKEN`)",
            )),
        }
    }

    fn admin(&self, h: &HeaderMap) -> Result<(), ApiError> {
        match self.caller(h)? {
            Caller::Admin => Ok(()),
            Caller::Tenant(_) => Err(status(StatusCode::FORBIDDEN, "only the admin may do this")),
        }
    }

    /// The tenant a request addresses: a tenant's own; the admin's
    /// `?tenant=` or the default tenant.
    pub(crate) fn tenant(&self, h: &HeaderMap, q: &TenantQuery) -> Result<String, ApiError> {
        Ok(match self.caller(h)? {
            Caller::Admin => q.tenant.clone().unwrap_or_else(|| DEFAULT_TENANT.into()),
            Caller::Tenant(t) => t,
        })
    }
}

#[derive(Deserialize, Default)]
pub(crate) struct TenantQuery {
    tenant: Option<String>,
}

/// Runs a call that blocks (a request to a sandbox) on this worker
/// thread, after handing the worker's other tasks to another: no hop to a
/// blocking-pool thread and back, which costs two wake-ups per call.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::block_in_place(f)
}

async fn health(State(a): State<App>, h: HeaderMap) -> Result<Response, ApiError> {
    a.caller(&h)?;
    let n = a.s.manager.counts().0;
    let mut v = json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "instances": n,
    });
    if let Some(c) = &a.s.cluster {
        v["cluster"] = c.health();
    }
    Ok(Json(v).into_response())
}

async fn tenants_list(State(a): State<App>, h: HeaderMap) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let mut names: Vec<String> = match &a.s.cluster {
        Some(c) => c.tenant_names(),
        None => {
            a.s.tenants
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .cloned()
                .collect()
        }
    };
    names.push(DEFAULT_TENANT.into());
    names.sort();
    names.dedup();
    let list = a.s.manager.list(None);
    let v: Vec<Value> = names
        .iter()
        .map(|t| json!({"name": t, "instances": list.iter().filter(|i| &i.tenant == t).count()}))
        .collect();
    Ok(Json(v).into_response())
}

/// Whether tenant `t` exists; in a cluster, etcd is asked when this
/// node's copy (from a watch) does not have it yet.
async fn tenant_exists(a: &App, t: &str) -> Result<bool, ApiError> {
    if a.s.has_tenant(t) {
        return Ok(true);
    }
    match a.s.cluster.clone() {
        Some(c) => {
            let t = t.to_string();
            blocking(move || Ok(c.tenant_exists(&t)?)).await
        }
        None => Ok(false),
    }
}

impl Shared {
    /// Whether tenant `t` exists (in a cluster, as this node's copy has
    /// it: see [`tenant_exists`]).
    fn has_tenant(&self, t: &str) -> bool {
        if let Some(c) = &self.cluster {
            return t == DEFAULT_TENANT || c.tenant_names().iter().any(|x| x == t);
        }
        t == DEFAULT_TENANT
            || self
                .tenants
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .any(|x| x == t)
    }
}

async fn tenants_create(
    State(a): State<App>,
    h: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let body = body::read(&h, body, MAX_SMALL_BODY).await?;
    let name: String = Fields::parse(&body, &["name"])?.need("name")?;
    crate::manager::check_tenant(&name)?;
    if a.s.has_tenant(&name) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("tenant `{name}` already exists"),
            Some("name".into()),
        ));
    }
    let token = new_token().map_err(internal)?;
    let d = digest(&token);
    if let Some(c) = a.s.cluster.clone() {
        let (n, dd) = (name.clone(), d.clone());
        blocking(move || Ok(c.create_tenant(&n, &dd)?)).await?;
        return Ok((
            StatusCode::CREATED,
            Json(json!({"name": name, "token": token})),
        )
            .into_response());
    }
    a.s.manager
        .store()
        .put_tenant(&name, &d)
        .map_err(internal)?;
    a.s.tenants
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(d, name.clone());
    Ok((
        StatusCode::CREATED,
        Json(json!({"name": name, "token": token})),
    )
        .into_response())
}

async fn tenants_delete(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    a.admin(&h)?;
    if let Some(c) = a.s.cluster.clone() {
        let n = name.clone();
        blocking(move || Ok(c.delete_tenant(&n)?)).await?;
        a.s.manager.forget_tenant(&name);
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if !a.s.manager.list(Some(&name)).is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("tenant `{name}` still has instances: remove them first"),
            None,
        ));
    }
    let mut t = a.s.tenants.write().unwrap_or_else(|e| e.into_inner());
    let Some(d) = t.iter().find(|(_, v)| **v == name).map(|(k, _)| k.clone()) else {
        return Err(status(StatusCode::NOT_FOUND, format!("no tenant `{name}`")));
    };
    a.s.manager.store().remove_tenant(&name).map_err(internal)?;
    t.remove(&d);
    a.s.manager.forget_tenant(&name);
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A tenant's quota and usage, as the API shows them: in cluster mode the
/// usage of its instances on every node (control connections: this
/// node's).
async fn quota_view(a: &App, t: &str) -> Result<Value, ApiError> {
    let m = a.s.manager.clone();
    let mut usage = m.usage(t);
    if let Some(c) = a.s.cluster.clone() {
        let n = t.to_string();
        usage = blocking(move || Ok(c.usage(&n, &usage)?)).await?;
    }
    Ok(json!({"tenant": t, "quota": m.quota(t), "usage": usage}))
}

async fn quota_show(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    let visible = match a.caller(&h)? {
        Caller::Admin => tenant_exists(&a, &name).await?,
        // Another tenant's is "not found", as if it did not exist.
        Caller::Tenant(own) => own == name,
    };
    if !visible {
        return Err(status(StatusCode::NOT_FOUND, format!("no tenant `{name}`")));
    }
    Ok(Json(quota_view(&a, &name).await?).into_response())
}

async fn quota_set(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    a.admin(&h)?;
    // In a cluster, etcd says whether the tenant exists (its store answers
    // "no tenant" below): this node's copy, from a watch, may not have a
    // tenant just created through another node yet.
    if a.s.cluster.is_none() && !a.s.has_tenant(&name) {
        return Err(status(StatusCode::NOT_FOUND, format!("no tenant `{name}`")));
    }
    let body = body::read(&h, body, MAX_SMALL_BODY).await?;
    let patch = Fields::parse(
        &body,
        &[
            "instances",
            "memory",
            "cpu",
            "pids",
            "interfaces",
            "control_ports",
            "control_connections",
        ],
    )?
    .rest();
    if let Some(c) = a.s.cluster.clone() {
        // Checked here, stored in etcd, taken by every node (this one at
        // once) from `tenants/NAME`.
        let (n, p) = (name.clone(), patch.clone());
        let mut q = a.s.manager.quota(&name);
        q.apply(&patch).map_err(|(m, field)| bad(m, Some(&field)))?;
        blocking(move || Ok(c.set_tenant_quota(&n, &p)?)).await?;
    }
    a.s.manager.set_quota(&name, &patch)?;
    Ok(Json(quota_view(&a, &name).await?).into_response())
}

/// The request bodies of the API (for [`parse_request_body`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    /// `POST /v1/tenants`.
    Tenant,
    /// `POST /v1/instances`.
    Instance,
    /// `PUT /v1/instances/NAME/config`.
    Config,
    /// `PUT /v1/switch/macs/MAC`.
    Mac,
}

/// Parses a request body the way the API's handlers do before they act
/// on it: the JSON object and its fields, then every check that needs no
/// daemon state (names, sizes, interfaces). The error is the message the
/// API would answer with. Request bodies come from tenants: no input may
/// panic (`fuzz/fuzz_targets/rest_body.rs`). Configurations are not
/// parsed here: the daemon never parses one (a sandbox builds it).
pub fn parse_request_body(kind: BodyKind, body: &[u8]) -> Result<(), String> {
    let msg = |e: ApiError| e.message;
    match kind {
        BodyKind::Tenant => {
            let name: String = Fields::parse(body, &["name"])
                .and_then(|mut f| f.need("name"))
                .map_err(msg)?;
            crate::manager::check_tenant(&name).map_err(|e| e.to_string())
        }
        BodyKind::Instance => {
            let mut f = Fields::parse(
                body,
                &[
                    "name",
                    "config",
                    "tenant",
                    "memory",
                    "cpu",
                    "pids",
                    "cpus",
                    "interfaces",
                    "weight",
                    "rate_limit",
                    "port_geometry",
                    "poll_window_us",
                    "node",
                    "group",
                    "prefer_node",
                    "files",
                ],
            )
            .map_err(msg)?;
            files_of(&mut f).map_err(msg)?;
            let name: String = f.need("name").map_err(msg)?;
            let _: String = f.need("config").map_err(msg)?;
            let tenant: Option<String> = f.opt("tenant").map_err(msg)?;
            let memory: Option<Value> = f.opt("memory").map_err(msg)?;
            let _: Option<f64> = f.opt("cpu").map_err(msg)?;
            let _: Option<u64> = f.opt("pids").map_err(msg)?;
            let _: Option<Vec<usize>> = f.opt("cpus").map_err(msg)?;
            let weight: Option<u32> = f.opt("weight").map_err(msg)?;
            check_weight(weight).map_err(msg)?;
            let rate: Option<Value> = f.opt("rate_limit").map_err(msg)?;
            rate_limit_of(rate.as_ref()).map_err(msg)?;
            port_geometry_of(&mut f).map_err(msg)?;
            poll_window_of(&mut f).map_err(msg)?;
            let pin: Option<String> = f.opt("node").map_err(msg)?;
            check_pin(pin.as_deref()).map_err(msg)?;
            let prefer: Option<String> = f.opt("prefer_node").map_err(msg)?;
            check_node_name("prefer_node", prefer.as_deref()).map_err(msg)?;
            let group: Option<String> = f.opt("group").map_err(msg)?;
            if let Some(g) = &group {
                crate::manager::check_group(g).map_err(|e| e.to_string())?;
            }
            let interfaces: Vec<IfaceSpec> = f.opt("interfaces").map_err(msg)?.unwrap_or_default();
            crate::manager::check_name(&name).map_err(|e| e.to_string())?;
            if let Some(t) = &tenant {
                crate::manager::check_tenant(t).map_err(|e| e.to_string())?;
            }
            if let Some(v) = &memory {
                parse_size(v).map_err(|e| format!("memory: {e}"))?;
            }
            crate::manager::names::check_ifaces(&interfaces).map_err(|e| e.to_string())
        }
        BodyKind::Config => Fields::parse(body, &["config"])
            .and_then(|mut f| f.need::<String>("config"))
            .map(|_| ())
            .map_err(msg),
        BodyKind::Mac => Fields::parse(body, &["port"])
            .and_then(|mut f| f.need::<u16>("port"))
            .map(|_| ())
            .map_err(msg),
    }
}

/// The most files an instance may be given, and their total size.
pub const MAX_FILES: usize = 64;
/// See [`MAX_FILES`].
pub const MAX_FILES_BYTES: usize = 1 << 20;

/// An instance's `files` (`{"PATH": "TEXT", ...}`), if given, checked:
/// each path as the sandbox takes it, at most [`MAX_FILES`] files and
/// [`MAX_FILES_BYTES`] in all.
fn files_of(f: &mut Fields) -> Result<std::collections::BTreeMap<String, String>, ApiError> {
    let files: std::collections::BTreeMap<String, String> = f.opt("files")?.unwrap_or_default();
    if files.len() > MAX_FILES {
        return Err(bad(
            format!("files: {} files, at most {MAX_FILES}", files.len()),
            Some("files"),
        ));
    }
    let total: usize = files.values().map(String::len).sum();
    if total > MAX_FILES_BYTES {
        return Err(bad(
            format!("files: {total} bytes in all, at most {MAX_FILES_BYTES} (1 MiB)"),
            Some("files"),
        ));
    }
    for p in files.keys() {
        pronto_sandbox::proto::check_file_path(p)
            .map_err(|e| bad(format!("files: {e}"), Some("files")))?;
    }
    Ok(files)
}

/// An instance's `poll_window_us`, if given, checked.
fn poll_window_of(f: &mut Fields) -> Result<Option<u64>, ApiError> {
    let w: Option<u64> = f.opt("poll_window_us")?;
    if let Some(w) = w {
        crate::manager::check_poll_window(w).map_err(|m| bad(m, Some("poll_window_us")))?;
    }
    Ok(w)
}

/// An instance's `port_geometry` (`{"slots": 1024, "ring": 512}`), if
/// given, checked.
fn port_geometry_of(f: &mut Fields) -> Result<Option<PortGeometrySpec>, ApiError> {
    let g: Option<PortGeometrySpec> = f.opt("port_geometry")?;
    if let Some(g) = &g {
        g.geometry().map_err(|m| bad(m, Some("port_geometry")))?;
    }
    Ok(g)
}

/// An instance's `rate_limit` from its JSON value, if given.
fn rate_limit_of(v: Option<&Value>) -> Result<Option<RateLimitSpec>, ApiError> {
    match v {
        None => Ok(None),
        Some(v) => RateLimitSpec::from_json(v)
            .map_err(|e| bad(format!("rate_limit: {e}"), Some("rate_limit"))),
    }
}

/// The most weight a tenant may give its own instances: every instance's
/// default. Above it is the operator's to give (a tenant that raised its
/// own weight would take its neighbours' share).
const TENANT_MAX_WEIGHT: u32 = pronto_switch::switch::DEFAULT_WEIGHT;

/// Refuses a tenant's weight above [`TENANT_MAX_WEIGHT`].
fn check_tenant_weight(caller: &Caller, w: Option<u32>) -> Result<(), ApiError> {
    match (caller, w) {
        (Caller::Tenant(t), Some(w)) if w > TENANT_MAX_WEIGHT => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "weight: {w} is more than a tenant may give its own instances \
                 ({TENANT_MAX_WEIGHT}, the default); tenant `{t}` may lower its instances' \
                 weight, the admin raises it"
            ),
            Some("weight".into()),
        )),
        _ => Ok(()),
    }
}

/// An instance's `weight`: 1 to 10,000 when given.
fn check_weight(w: Option<u32>) -> Result<(), ApiError> {
    match w {
        Some(w) if !(1..=10_000).contains(&w) => Err(bad(
            format!(
                "weight: {w} is out of range: 1 to 10,000 (100 is every instance's default; \
                 200 gets twice the share of the CPUs and the switch under overload)"
            ),
            Some("weight"),
        )),
        _ => Ok(()),
    }
}

/// Bytes from `8388608`, `"8388608"`, `"8M"`, `"512K"`, `"1G"`.
pub fn parse_size(v: &Value) -> Result<u64, String> {
    match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| format!("{n} is not a byte count")),
        Value::String(s) => {
            let t = s.trim();
            let (num, mul) = match t.chars().last() {
                Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
                Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
                Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
                _ => (t, 1),
            };
            num.parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(mul))
                .ok_or_else(|| format!("`{s}` is not a size (8388608, 512K, 8M, 1G)"))
        }
        other => Err(format!("{other} is not a size (8388608, 512K, 8M, 1G)")),
    }
}

async fn instances_create(
    State(a): State<App>,
    h: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = a.caller(&h)?;
    let body = body::read(&h, body, MAX_CONFIG_BODY).await?;
    let mut f = Fields::parse(
        &body,
        &[
            "name",
            "config",
            "tenant",
            "memory",
            "cpu",
            "pids",
            "cpus",
            "interfaces",
            "weight",
            "rate_limit",
            "port_geometry",
            "poll_window_us",
            "node",
            "group",
            "prefer_node",
            "files",
        ],
    )?;
    let files = files_of(&mut f)?;
    let name: String = f.need("name")?;
    let config: String = f.need("config")?;
    let asked: Option<String> = f.opt("tenant")?;
    let memory: Option<Value> = f.opt("memory")?;
    let cpu: Option<f64> = f.opt("cpu")?;
    let pids: Option<u64> = f.opt("pids")?;
    let cpus: Option<Vec<usize>> = f.opt("cpus")?;
    let interfaces: Vec<IfaceSpec> = f.opt("interfaces")?.unwrap_or_default();
    let weight: Option<u32> = f.opt("weight")?;
    check_weight(weight)?;
    check_tenant_weight(&caller, weight)?;
    let rate: Option<Value> = f.opt("rate_limit")?;
    let rate_limit = rate_limit_of(rate.as_ref())?;
    let port_geometry = port_geometry_of(&mut f)?;
    let poll_window_us = poll_window_of(&mut f)?;
    let pin: Option<String> = f.opt("node")?;
    check_pin(pin.as_deref())?;
    let group: Option<String> = f.opt("group")?;
    let prefer_node: Option<String> = f.opt("prefer_node")?;
    check_node_name("prefer_node", prefer_node.as_deref())?;
    if pin.is_some() && a.s.cluster.is_none() {
        return Err(bad(
            "node: a pin to a node needs cluster mode (this daemon runs without --cluster)",
            Some("node"),
        ));
    }
    if prefer_node.is_some() && a.s.cluster.is_none() {
        return Err(bad(
            "prefer_node: a preferred node needs cluster mode (this daemon runs without \
             --cluster)",
            Some("prefer_node"),
        ));
    }
    let tenant = match (&caller, asked) {
        (Caller::Admin, t) => t.unwrap_or_else(|| DEFAULT_TENANT.into()),
        (Caller::Tenant(own), Some(t)) if &t != own => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "a tenant creates instances only for itself (leave `tenant` out)".into(),
                Some("tenant".into()),
            ))
        }
        (Caller::Tenant(own), _) => own.clone(),
    };
    if !tenant_exists(&a, &tenant).await? {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no tenant `{tenant}` (create it with POST /v1/tenants)"),
            Some("tenant".into()),
        ));
    }
    let memory = match &memory {
        None => None,
        Some(v) => Some(parse_size(v).map_err(|e| bad(format!("memory: {e}"), Some("memory")))?),
    };
    let spec = InstanceSpec {
        name,
        tenant,
        config,
        memory,
        cpu,
        pids,
        cpus,
        interfaces,
        weight,
        rate_limit,
        port_geometry,
        poll_window_us,
        group,
        prefer_node,
        files,
        created_unix_ms: 0,
    };
    if let Some(c) = a.s.cluster.clone() {
        let m = a.s.manager.clone();
        let v = blocking(move || cluster_create(&c, &m, spec, pin)).await?;
        return Ok((StatusCode::CREATED, Json(v)).into_response());
    }
    let m = a.s.manager.clone();
    let v = blocking(move || Ok(m.create(spec)?)).await?;
    Ok((StatusCode::CREATED, Json(v)).into_response())
}

/// How long a create or a reconfiguration in cluster mode waits for the
/// node the instance is placed on to report it.
const CLUSTER_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Waits for `name`'s node to report it (its state not `pending` or
/// `starting`, and `done` true of it): the listing's entry.
fn cluster_wait(
    c: &crate::cluster::Cluster,
    m: &Manager,
    tenant: &str,
    name: &str,
    done: impl Fn(&Value) -> bool,
) -> Result<Value, ApiError> {
    let t0 = std::time::Instant::now();
    loop {
        let v = cluster_list(c, m, Some(tenant))?
            .into_iter()
            .find(|i| i["name"] == name);
        if let Some(v) = v {
            let settled = v["state"] != "pending" && v["state"] != "starting";
            if (settled && done(&v)) || t0.elapsed() > CLUSTER_WAIT {
                return Ok(v);
            }
        } else if t0.elapsed() > CLUSTER_WAIT {
            return Err(status(
                StatusCode::NOT_FOUND,
                format!("no instance `{name}`"),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `POST /v1/instances` in cluster mode: stored in etcd (a name taken is a
/// 409), placed by the scheduler, started by its node; answered with the
/// instance as its node reports it (`state` `pending` if no node could
/// take it within 20 s). One its node could not start is removed again and
/// the answer is its node's error (a configuration that does not build:
/// 400, `field: config`).
fn cluster_create(
    c: &crate::cluster::Cluster,
    m: &Manager,
    mut spec: InstanceSpec,
    pin: Option<String>,
) -> Result<Value, ApiError> {
    Manager::validate(&mut spec)?;
    spec.created_unix_ms = crate::manager::now_ms();
    // One limit wherever it runs: the node that takes the create fills in
    // its default (`--memory`), which the scheduler also placed it by (a
    // node with another default would otherwise run it with its own).
    spec.memory = Some(m.memory_of(&spec));
    // The tenant's quota as this node has it (every node takes it from
    // `tenants/`), checked against its instances in the whole cluster.
    c.create(
        &spec,
        &m.quota(&spec.tenant),
        &m.ask_of(&spec),
        pin.as_deref(),
    )?;
    let v = cluster_wait(c, m, &spec.tenant, &spec.name, |_| true)?;
    if v["state"] != "failed" {
        return Ok(v);
    }
    // Its node could not start it: as on one node, nothing is left
    // behind and the answer is the node's.
    let report = v["node"]
        .as_str()
        .and_then(|n| c.report_of(n, &spec.name))
        .unwrap_or(Value::Null);
    let _ = c.remove(&spec.tenant, &spec.name);
    let code = report["status"]
        .as_u64()
        .and_then(|s| StatusCode::from_u16(s as u16).ok())
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    Err(ApiError::new(
        code,
        report["error"]
            .as_str()
            .unwrap_or("its node could not start it")
            .to_string(),
        report["field"].as_str().map(str::to_string),
    ))
}

/// Waits (up to 20 s) until the node instance `name` is placed on has
/// taken its stored spec of revision `rev` or later (its report's
/// `revision`): the listing's entry, with that node's error if it refused
/// the change. An instance placed on no node answers at once (the node it
/// goes to starts it as stored).
fn cluster_wait_taken(
    c: &crate::cluster::Cluster,
    m: &Manager,
    tenant: &str,
    name: &str,
    rev: i64,
) -> Result<Value, ApiError> {
    let t0 = std::time::Instant::now();
    loop {
        let mut v = cluster_list(c, m, Some(tenant))?
            .into_iter()
            .find(|i| i["name"] == name)
            .ok_or_else(|| Failure::NotFound(format!("no instance `{name}`")))?;
        let report = v["node"].as_str().and_then(|n| c.report_of(n, name));
        let taken = match (&v["node"], &report) {
            (Value::Null, _) => true,
            (_, Some(r)) => r["revision"].as_i64().is_some_and(|r| r >= rev),
            (_, None) => false,
        };
        if taken || t0.elapsed() > CLUSTER_WAIT {
            if let Some(e) = report
                .as_ref()
                .and_then(|r| r.get("error"))
                .filter(|_| taken)
            {
                v["error"] = e.clone();
            }
            return Ok(v);
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The instances of the cluster (of `tenant`, or all): those this node
/// runs as it sees them, the others as etcd has them; each with its
/// `node`.
fn cluster_list(
    c: &crate::cluster::Cluster,
    m: &Manager,
    tenant: Option<&str>,
) -> Result<Vec<Value>, ApiError> {
    let local: HashMap<String, crate::manager::InstanceView> = m
        .list(tenant)
        .into_iter()
        .map(|v| (v.name.clone(), v))
        .collect();
    let mut all = c.instances(tenant)?;
    for v in &mut all {
        let here = v["node"] == c.node.as_str();
        if let Some(l) = local.get(v["name"].as_str().unwrap_or("")).filter(|_| here) {
            let mut lv = serde_json::to_value(l).map_err(internal)?;
            lv["node"] = json!(c.node);
            // What the node runs may lag what is stored.
            if v["config"] != lv["config"] {
                lv["state"] = json!("reconfiguring");
                if let Some(e) = v.get("error") {
                    lv["error"] = e.clone();
                }
            }
            *v = lv;
        }
    }
    Ok(all)
}

async fn instances_list(
    State(a): State<App>,
    h: HeaderMap,
    Query(q): Query<TenantQuery>,
) -> Result<Response, ApiError> {
    let tenant = match a.caller(&h)? {
        Caller::Admin => q.tenant,
        Caller::Tenant(t) => Some(t),
    };
    if let Some(c) = a.s.cluster.clone() {
        let m = a.s.manager.clone();
        let v = blocking(move || cluster_list(&c, &m, tenant.as_deref())).await?;
        return Ok(Json(v).into_response());
    }
    Ok(Json(a.s.manager.list(tenant.as_deref())).into_response())
}

async fn instances_show(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<TenantQuery>,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    let m = a.s.manager.clone();
    if let Some(c) = a.s.cluster.clone() {
        let v = blocking(move || match m.view(&t, &name, true) {
            Ok(v) => {
                let mut v = serde_json::to_value(v).map_err(internal)?;
                v["node"] = json!(c.node);
                Ok(v)
            }
            Err(_) => cluster_list(&c, &m, Some(&t))?
                .into_iter()
                .find(|i| i["name"] == name.as_str())
                .ok_or_else(|| Failure::NotFound(format!("no instance `{name}`")).into()),
        })
        .await?;
        return Ok(Json(v).into_response());
    }
    let v = blocking(move || Ok(m.view(&t, &name, true)?)).await?;
    Ok(Json(v).into_response())
}

async fn instances_delete(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<TenantQuery>,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    if let Some(c) = a.s.cluster.clone() {
        blocking(move || Ok(c.remove(&t, &name)?)).await?;
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    let m = a.s.manager.clone();
    blocking(move || Ok(m.remove(&t, &name)?)).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn instances_config(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<TenantQuery>,
    body: Body,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    let body = body::read(&h, body, MAX_CONFIG_BODY).await?;
    let config: String = Fields::parse(&body, &["config"])?.need("config")?;
    let cfg = config.clone();
    spec_write(
        &a,
        t,
        name,
        move |c, t, n| c.reconfigure(t, n, &cfg),
        move |m, t, n| m.reconfigure(t, n, &config),
    )
    .await
}

/// A change to an instance's spec (`config`, `weight`, `rate_limit`): in
/// cluster mode `store` writes it to etcd (its revision returned) and the
/// answer waits until the node that runs the instance has taken it; else
/// `apply` makes it through this node's manager. Answered with the
/// instance as it is then.
async fn spec_write(
    a: &App,
    t: String,
    name: String,
    store: impl FnOnce(&crate::cluster::Cluster, &str, &str) -> Result<i64, Failure> + Send + 'static,
    apply: impl FnOnce(&Manager, &str, &str) -> Result<crate::manager::InstanceView, Failure>
        + Send
        + 'static,
) -> Result<Response, ApiError> {
    let m = a.s.manager.clone();
    if let Some(c) = a.s.cluster.clone() {
        let v = blocking(move || {
            let rev = store(&c, &t, &name)?;
            cluster_wait_taken(&c, &m, &t, &name, rev)
        })
        .await?;
        return Ok(Json(v).into_response());
    }
    let v = blocking(move || Ok(apply(&m, &t, &name)?)).await?;
    Ok(Json(v).into_response())
}

/// `PUT /v1/instances/NAME/rate_limit` (`{"rate_limit": "100kpps"}`, an
/// object, or null to lift it): the operator's, so that a tenant cannot
/// lift a limit put on it.
async fn instances_rate_limit(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<TenantQuery>,
    body: Body,
) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let t = a.tenant(&h, &q)?;
    let body = body::read(&h, body, MAX_SMALL_BODY).await?;
    let mut f = Fields::parse(&body, &["rate_limit"])?;
    let present = serde_json::from_slice::<serde_json::Map<String, Value>>(&body)
        .is_ok_and(|m| m.contains_key("rate_limit"));
    if !present {
        return Err(bad(
            "request body: missing field `rate_limit` (a rate such as \"100kpps\", or null to lift it)",
            Some("rate_limit"),
        ));
    }
    let v: Option<Value> = f.opt("rate_limit")?;
    let limit = rate_limit_of(Some(&v.unwrap_or(Value::Null)))?;
    spec_write(
        &a,
        t,
        name,
        move |c, t, n| c.set_rate_limit(t, n, limit),
        move |m, t, n| m.set_rate_limit(t, n, limit),
    )
    .await
}

/// `PUT /v1/instances/NAME/weight` (`{"weight": 300}`): its share under
/// overload, changed while it runs (its sandbox's CPU weight and its
/// ports' on the switch). A tenant may lower its own instances' weight
/// (down to 1, up to the default 100); the admin sets any from 1 to
/// 10,000.
async fn instances_weight(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<TenantQuery>,
    body: Body,
) -> Result<Response, ApiError> {
    let caller = a.caller(&h)?;
    let t = a.tenant(&h, &q)?;
    let body = body::read(&h, body, MAX_SMALL_BODY).await?;
    let weight: u32 = Fields::parse(&body, &["weight"])?.need("weight")?;
    check_weight(Some(weight))?;
    check_tenant_weight(&caller, Some(weight))?;
    spec_write(
        &a,
        t,
        name,
        move |c, t, n| c.set_weight(t, n, weight),
        move |m, t, n| m.set_weight(t, n, weight),
    )
    .await
}

/// A create's `node` (a pin): a node's name as `--node` takes it.
fn check_pin(pin: Option<&str>) -> Result<(), ApiError> {
    check_node_name("node", pin)
}

/// A node's name as `--node` takes it, in field `field` of a create.
fn check_node_name(field: &'static str, node: Option<&str>) -> Result<(), ApiError> {
    match node {
        Some(n)
            if n.is_empty()
                || n.len() > 63
                || !n
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            Err(bad(
                format!("{field}: `{n}` is not a node name (1 to 63 letters, digits, `-`, `_`)"),
                Some(field),
            ))
        }
        _ => Ok(()),
    }
}

fn check_handler(handler: &str) -> Result<(), ApiError> {
    if handler.is_empty() || handler.contains(char::is_whitespace) {
        return Err(bad(
            format!("handler `{handler}`: expected ELEMENT.HANDLER (or a global handler) without spaces"),
            None,
        ));
    }
    Ok(())
}

/// The most bytes of another node's answer a forwarded call buffers.
const MAX_FORWARDED_ANSWER: u64 = 16 << 20;

/// `s` with every byte but unreserved ones percent-encoded (a path
/// segment or query value of a forwarded call).
fn encode(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// In cluster mode, a call to instance `name` of tenant `t` that another
/// node runs is sent to that node's API (`tail`: the path after
/// `/v1/instances/NAME`) with the cluster's secret and the caller (of
/// headers `h`: a tenant by name, and its token's id, so that the owner
/// authorizes and audits the call as the caller's), and its answer is
/// this one's; `None`: answer here.
async fn forward(
    a: &App,
    h: &HeaderMap,
    t: &str,
    name: &str,
    method: &'static str,
    tail: &str,
    body: Option<Vec<u8>>,
) -> Result<Option<Response>, ApiError> {
    let Some(to) = owner_call(a, h, t, name, method, tail, "")? else {
        return Ok(None);
    };
    blocking(move || {
        let Some(call) = to.resolve()? else {
            return Ok(None);
        };
        let (node, name) = (call.node.clone(), call.name.clone());
        let resp = call.send(body)?;
        let code = StatusCode::from_u16(resp.status()).unwrap_or(StatusCode::BAD_GATEWAY);
        let ctype = resp.header("content-type").map(str::to_string);
        let mut buf = Vec::new();
        use std::io::Read as _;
        resp.into_reader()
            .take(MAX_FORWARDED_ANSWER + 1)
            .read_to_end(&mut buf)
            .map_err(|e| call_gone(&node, &name, "", &e))?;
        if buf.len() as u64 > MAX_FORWARDED_ANSWER {
            return Err(status(
                StatusCode::BAD_GATEWAY,
                format!(
                    "node `{node}`'s answer for instance `{name}` is larger than \
                     {MAX_FORWARDED_ANSWER} bytes, the most a forwarded call buffers: ask that \
                     node"
                ),
            ));
        }
        let mut out = (code, buf).into_response();
        if let Some(ct) = ctype.and_then(|v| header::HeaderValue::from_str(&v).ok()) {
            out.headers_mut().insert(header::CONTENT_TYPE, ct);
        }
        Ok(Some(out))
    })
    .await
}

/// [`forward`] for a `GET` whose answer is a stream (a capture): passed on
/// as it arrives, a chunk at a time, never buffered whole.
async fn forward_stream(
    a: &App,
    h: &HeaderMap,
    t: &str,
    name: &str,
    tail: &str,
    query: &str,
) -> Result<Option<Response>, ApiError> {
    let Some(to) = owner_call(a, h, t, name, "GET", tail, query)? else {
        return Ok(None);
    };
    let Some((code, ctype, reader)) = blocking(move || {
        let Some(call) = to.resolve()? else {
            return Ok(None);
        };
        let resp = call.send(None)?;
        let code = StatusCode::from_u16(resp.status()).unwrap_or(StatusCode::BAD_GATEWAY);
        let ctype = resp.header("content-type").map(str::to_string);
        Ok(Some((code, ctype, resp.into_reader())))
    })
    .await?
    else {
        return Ok(None);
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(16);
    std::thread::Builder::new()
        .name("forward-stream".into())
        .spawn(move || {
            use std::io::Read as _;
            let mut reader = reader;
            loop {
                let mut chunk = vec![0u8; 64 << 10];
                match reader.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        chunk.truncate(n);
                        // The client went away: stop reading (the owner's
                        // capture ends when its connection closes).
                        if tx.blocking_send(chunk).is_err() {
                            return;
                        }
                    }
                }
            }
        })
        .map_err(internal)?;
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    let mut out = (code, Body::from_stream(stream)).into_response();
    if let Some(ct) = ctype.and_then(|v| header::HeaderValue::from_str(&v).ok()) {
        out.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    Ok(Some(out))
}

/// What a forwarded call needs before its owner is known.
struct OwnerCall {
    c: Arc<crate::cluster::Cluster>,
    caller: Caller,
    token: String,
    t: String,
    name: String,
    method: &'static str,
    tail: String,
    query: String,
}

/// A forwarded call addressed to the node that runs the instance.
struct Addressed {
    node: String,
    name: String,
    api: String,
    req: ureq::Request,
}

/// The call `method tail?query` for instance `name` of `t`, to forward if
/// another node runs it; `None` outside cluster mode or when this node
/// runs it.
fn owner_call(
    a: &App,
    h: &HeaderMap,
    t: &str,
    name: &str,
    method: &'static str,
    tail: &str,
    query: &str,
) -> Result<Option<OwnerCall>, ApiError> {
    let Some(c) = a.s.cluster.clone() else {
        return Ok(None);
    };
    if a.s.manager.list(Some(t)).iter().any(|i| i.name == name) {
        return Ok(None);
    }
    let caller = a.caller(h)?;
    let (_, token) = a.who(h);
    Ok(Some(OwnerCall {
        c,
        caller,
        token,
        t: t.to_string(),
        name: name.to_string(),
        method,
        tail: tail.to_string(),
        query: query.to_string(),
    }))
}

impl OwnerCall {
    /// Looks up the owner (etcd; blocking): the request to send it, or
    /// `None` if this node runs the instance after all.
    fn resolve(self) -> Result<Option<Addressed>, ApiError> {
        let Some((node, api)) = self.c.owner_api(&self.t, &self.name)? else {
            return Ok(None);
        };
        let (scheme, api, agent) = match api {
            crate::cluster::OwnerApi::Plain(a) => ("http", a, ureq::AgentBuilder::new()),
            crate::cluster::OwnerApi::Tls(p) => (
                "https",
                p.addr,
                ureq::AgentBuilder::new().tls_config(tls::pinned_client(&p.sha256)),
            ),
        };
        let url = format!(
            "{scheme}://{api}/v1/instances/{}{}?tenant={}{}",
            encode(&self.name),
            self.tail,
            encode(&self.t),
            self.query
        );
        let req = agent
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .request(self.method, &url)
            .set(crate::cluster::SECRET_HEADER, self.c.secret())
            .set(crate::cluster::TOKEN_HEADER, &self.token);
        let req = match &self.caller {
            Caller::Tenant(n) => req.set(crate::cluster::CALLER_HEADER, n),
            Caller::Admin => req,
        };
        Ok(Some(Addressed {
            node,
            name: self.name,
            api,
            req,
        }))
    }
}

impl Addressed {
    /// Sends it (with `body`): the owner's answer, whatever its status.
    fn send(self, body: Option<Vec<u8>>) -> Result<ureq::Response, ApiError> {
        let r = match body {
            Some(b) => self.req.send_bytes(&b),
            None => self.req.call(),
        };
        match r {
            Ok(r) | Err(ureq::Error::Status(_, r)) => Ok(r),
            Err(e) => Err(call_gone(&self.node, &self.name, &self.api, &e)),
        }
    }
}

/// The 503 of a forwarded call whose owner did not answer.
fn call_gone(node: &str, name: &str, api: &str, e: &dyn std::fmt::Display) -> ApiError {
    let at = if api.is_empty() {
        String::new()
    } else {
        format!(" ({api})")
    };
    status(
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "instance `{name}` runs on node `{node}`, whose API{at} did not answer: {e}; if the \
             node is lost, the scheduler moves the instance; try again"
        ),
    )
}

async fn handler_read(
    State(a): State<App>,
    h: HeaderMap,
    Path((name, handler)): Path<(String, String)>,
    Query(q): Query<TenantQuery>,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    check_handler(&handler)?;
    let tail = format!("/handlers/{}", encode(&handler));
    if let Some(r) = forward(&a, &h, &t, &name, "GET", &tail, None).await? {
        return Ok(r);
    }
    let m = a.s.manager.clone();
    let v = blocking(move || Ok(m.read(&t, &name, &handler)?)).await?;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], v).into_response())
}

async fn handler_write(
    State(a): State<App>,
    h: HeaderMap,
    Path((name, handler)): Path<(String, String)>,
    Query(q): Query<TenantQuery>,
    body: Body,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    let body = body::read(&h, body, MAX_HANDLER_BODY).await?;
    check_handler(&handler)?;
    let value = String::from_utf8(body.to_vec())
        .map_err(|_| bad("the handler value is not UTF-8 text", None))?;
    let tail = format!("/handlers/{}", encode(&handler));
    if let Some(r) = forward(
        &a,
        &h,
        &t,
        &name,
        "PUT",
        &tail,
        Some(value.clone().into_bytes()),
    )
    .await?
    {
        return Ok(r);
    }
    let m = a.s.manager.clone();
    blocking(move || Ok(m.write(&t, &name, &handler, &value)?)).await?;
    Ok(StatusCode::OK.into_response())
}

async fn instances_stats(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<TenantQuery>,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    if let Some(r) = forward(&a, &h, &t, &name, "GET", "/stats", None).await? {
        return Ok(r);
    }
    let m = a.s.manager.clone();
    let v = blocking(move || {
        let view = m.view(&t, &name, true)?;
        let elements = m.element_stats(&t, &name)?;
        Ok(json!({
            "name": view.name,
            "state": view.state,
            "pss_bytes": view.pss_bytes,
            "elements": elements,
        }))
    })
    .await?;
    Ok(Json(v).into_response())
}

async fn instances_counters(
    State(a): State<App>,
    h: HeaderMap,
    Path(name): Path<String>,
    Query(q): Query<TenantQuery>,
) -> Result<Response, ApiError> {
    let t = a.tenant(&h, &q)?;
    if let Some(r) = forward(&a, &h, &t, &name, "GET", "/counters", None).await? {
        return Ok(r);
    }
    let m = a.s.manager.clone();
    let v = blocking(move || {
        let elements = m.element_stats(&t, &name)?;
        Ok(json!({ "name": name, "elements": elements }))
    })
    .await?;
    Ok(Json(v).into_response())
}

async fn stats(State(a): State<App>, h: HeaderMap) -> Result<Response, ApiError> {
    let (n, running, crashed, failed) = match a.caller(&h)? {
        Caller::Admin => a.s.manager.counts(),
        Caller::Tenant(t) => {
            let l = a.s.manager.list(Some(&t));
            let c = |s| l.iter().filter(|i| i.state == s).count();
            (
                l.len(),
                c(crate::manager::State::Running),
                c(crate::manager::State::Crashed),
                c(crate::manager::State::Failed),
            )
        }
    };
    Ok(Json(json!({
        "instances": n,
        "running": running,
        "crashed": crashed,
        "failed": failed,
        "switch": {
            "ports": a.s.manager.ports(None).len(),
            "threads": a.s.manager.switch().threads(),
        }
    }))
    .into_response())
}

async fn switch_ports(State(a): State<App>, h: HeaderMap) -> Result<Response, ApiError> {
    let ports = match a.caller(&h)? {
        Caller::Admin => a.s.manager.ports(None),
        Caller::Tenant(t) => a.s.manager.ports(Some(&t)),
    };
    let v: Vec<Value> = ports
        .into_iter()
        .map(|(id, name, c)| {
            json!({
                "port": id, "name": name, "weight": a.s.manager.port_weight(id),
                "rate_limit": a.s.manager.port_rate_limit(id),
                "port_geometry": a.s.manager.port_geometry(id),
                "rx_packets": c.rx_packets, "rx_bytes": c.rx_bytes,
                "tx_packets": c.tx_packets, "tx_bytes": c.tx_bytes,
                "drops": c.drops(),
                "drops_by_reason": {
                    "bad_desc": c.drop_bad_desc, "bad_ring": c.drop_bad_ring,
                    "bad_fill": c.drop_bad_fill, "no_route": c.drop_no_route,
                    "no_buffer": c.drop_no_buffer, "ring_full": c.drop_ring_full,
                    "rate_limit_from_port": c.drop_rate_limit_rx,
                    "rate_limit_to_port": c.drop_rate_limit_tx,
                },
                "arp_answered": c.arp_answered,
                "nd_answered": c.nd_answered,
                "flood_skipped": c.flood_skipped,
            })
        })
        .collect();
    Ok(Json(v).into_response())
}

#[derive(Deserialize, Default)]
struct CaptureQuery {
    count: Option<u64>,
    seconds: Option<f64>,
    snaplen: Option<u32>,
    filter: Option<String>,
    direction: Option<String>,
}

/// What a switch port sees, as a pcapng stream (`pronto capture`): until
/// `count` frames (default 100) or `seconds` (default 10) have passed.
async fn switch_port_capture(
    State(a): State<App>,
    h: HeaderMap,
    Path(port): Path<String>,
    Query(q): Query<CaptureQuery>,
) -> Result<Response, ApiError> {
    let tenant = match a.caller(&h)? {
        Caller::Admin => None,
        Caller::Tenant(t) => Some(t),
    };
    let id: u16 = port.parse().map_err(|_| {
        bad(
            format!("a switch port is a number (`pronto ports`), found `{port}`"),
            Some("port"),
        )
    })?;
    capture_port(&a, tenant.as_deref(), id, &q)
}

/// A capture of switch port `id` (of `tenant`'s instances, or any for
/// the admin) streamed as pcapng, as `q` asks.
fn capture_port(
    a: &App,
    tenant: Option<&str>,
    id: u16,
    q: &CaptureQuery,
) -> Result<Response, ApiError> {
    use crate::capture::{MAX_COUNT, MAX_SECONDS, QUEUE};
    let count = q.count.unwrap_or(100);
    if !(1..=MAX_COUNT).contains(&count) {
        return Err(bad(
            format!("count: 1 to {MAX_COUNT} frames, found {count}"),
            Some("count"),
        ));
    }
    let seconds = q.seconds.unwrap_or(10.0);
    if !(seconds > 0.0 && seconds <= MAX_SECONDS) {
        return Err(bad(
            format!("seconds: more than 0 and at most {MAX_SECONDS}, found {seconds}"),
            Some("seconds"),
        ));
    }
    let snaplen = q.snaplen.unwrap_or(65_535).clamp(14, 65_535);
    let (from_port, to_port) = match q.direction.as_deref().unwrap_or("both") {
        "both" => (true, true),
        "in" => (false, true),
        "out" => (true, false),
        d => {
            return Err(bad(
                format!("direction: `in` (frames delivered to the port), `out` (frames it sent) or `both`, found `{d}`"),
                Some("direction"),
            ))
        }
    };
    let filter: Option<pronto_switch::capture::FrameTest> = match q.filter.as_deref() {
        None | Some("") => None,
        Some(expr) => {
            let f = pronto_classify::FrameFilter::new(expr)
                .map_err(|e| bad(format!("filter: {}", e.message), Some("filter")))?;
            Some(Box::new(move |frame: &[u8]| f.matches(frame)))
        }
    };
    let spec = pronto_switch::CaptureSpec {
        filter,
        snaplen: snaplen as usize,
        count,
        from_port,
        to_port,
        queue: QUEUE,
    };
    let (name, cap) = a.s.manager.capture(tenant, id, spec)?;
    let (tx, rx) = tokio::sync::mpsc::channel::<Vec<u8>>(64);
    let head = crate::capture::header(&name, snaplen);
    std::thread::Builder::new()
        .name(format!("capture-{id}"))
        .spawn(move || {
            if tx.blocking_send(head).is_ok() {
                crate::capture::pump(
                    cap,
                    count,
                    seconds,
                    || tx.is_closed(),
                    |chunk| tx.blocking_send(chunk).is_ok(),
                );
            }
        })
        .map_err(internal)?;
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), rx))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-pcapng")],
        Body::from_stream(stream),
    )
        .into_response())
}

/// `GET /v1/instances/NAME/interfaces/IFACE/capture`: what instance
/// NAME's interface IFACE sends and receives, as pcapng (the query of a
/// port's capture, and `tenant` for the admin); in cluster mode answered by
/// the node that runs it, streamed through this one.
#[derive(Deserialize)]
struct InstanceCaptureQuery {
    tenant: Option<String>,
    count: Option<u64>,
    seconds: Option<f64>,
    snaplen: Option<u32>,
    filter: Option<String>,
    direction: Option<String>,
}

async fn instance_capture(
    State(a): State<App>,
    h: HeaderMap,
    Path((name, iface)): Path<(String, String)>,
    Query(q): Query<InstanceCaptureQuery>,
) -> Result<Response, ApiError> {
    let t = a.tenant(
        &h,
        &TenantQuery {
            tenant: q.tenant.clone(),
        },
    )?;
    let cq = CaptureQuery {
        count: q.count,
        seconds: q.seconds,
        snaplen: q.snaplen,
        filter: q.filter,
        direction: q.direction,
    };
    let mut query = String::new();
    for (k, v) in [
        ("count", cq.count.map(|v| v.to_string())),
        ("seconds", cq.seconds.map(|v| v.to_string())),
        ("snaplen", cq.snaplen.map(|v| v.to_string())),
        ("filter", cq.filter.clone()),
        ("direction", cq.direction.clone()),
    ] {
        if let Some(v) = v {
            query.push_str(&format!("&{k}={}", encode(&v)));
        }
    }
    let tail = format!("/interfaces/{}/capture", encode(&iface));
    if let Some(r) = forward_stream(&a, &h, &t, &name, &tail, &query).await? {
        return Ok(r);
    }
    let m = a.s.manager.clone();
    let (t2, n2) = (t.clone(), name.clone());
    let v = blocking(move || Ok(m.view(&t2, &n2, false)?)).await?;
    let Some(i) = v.interfaces.iter().find(|i| i.name == iface) else {
        let names: Vec<&str> = v.interfaces.iter().map(|i| i.name.as_str()).collect();
        return Err(status(
            StatusCode::NOT_FOUND,
            format!(
                "{name} has no interface `{iface}` (it has: {})",
                names.join(", ")
            ),
        ));
    };
    let Some(id) = i.port else {
        return Err(status(
            StatusCode::CONFLICT,
            format!(
                "{name}:{iface} has no switch port now (is `{name}` running? `pronto show {name}`)"
            ),
        ));
    };
    capture_port(&a, Some(&t), id, &cq)
}

async fn switch_threads(State(a): State<App>, h: HeaderMap) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let v: Vec<Value> =
        a.s.manager
            .switch_threads()
            .into_iter()
            .map(|t| {
                json!({
                    "thread": t.thread, "ports": t.ports, "alive": t.alive,
                    "restarts": t.restarts, "rounds": t.rounds,
                })
            })
            .collect();
    Ok(Json(v).into_response())
}

async fn switch_thread_restart(
    State(a): State<App>,
    h: HeaderMap,
    Path(thread): Path<String>,
) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let n = a.s.manager.switch_threads().len();
    let t = match thread.parse::<usize>() {
        Ok(t) if t < n => t,
        _ => {
            return Err(status(
                StatusCode::NOT_FOUND,
                format!(
                    "no switching thread `{thread}` (threads are 0 to {})",
                    n - 1
                ),
            ))
        }
    };
    let m = a.s.manager.clone();
    let r = blocking(move || m.restart_switch_thread(t).map_err(internal)).await?;
    Ok(Json(json!({"thread": r.thread, "ports": r.ports, "was": r.reason})).into_response())
}

async fn macs_list(State(a): State<App>, h: HeaderMap) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let m = &a.s.manager;
    let mut v: Vec<Value> = m
        .store()
        .macs()
        .map_err(internal)?
        .into_iter()
        .map(|(mac, pname)| json!({"mac": mac, "port": m.port_named(&pname), "name": pname}))
        .collect();
    for i in m.list(None) {
        for f in i.interfaces {
            if let Some(mac) = f.mac {
                let name = format!("{}/{}/{}", i.tenant, i.name, f.name);
                v.push(json!({"mac": mac, "port": f.port, "name": name}));
            }
        }
    }
    Ok(Json(v).into_response())
}

fn norm_mac(s: &str) -> Result<([u8; 6], String), ApiError> {
    let m = pronto_switch::control::parse_mac(s).ok_or_else(|| {
        bad(
            format!("`{s}` is not a MAC address (02:00:00:00:00:01)"),
            None,
        )
    })?;
    let text = m
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":");
    Ok((m, text))
}

async fn macs_put(
    State(a): State<App>,
    h: HeaderMap,
    Path(mac): Path<String>,
    body: Body,
) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let body = body::read(&h, body, MAX_SMALL_BODY).await?;
    let (m, text) = norm_mac(&mac)?;
    let port: u16 = Fields::parse(&body, &["port"])?.need("port")?;
    let mgr = &a.s.manager;
    let name = mgr.port_name(port).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("port {port} is not attached"),
            Some("port".into()),
        )
    })?;
    if let Some(c) = a.s.cluster.clone() {
        // The entry stays this node's (the port is), announced under
        // `macs/MAC` so that the other nodes' VXLAN remote tables point
        // it here; a 409 if another node has it.
        let n = name.clone();
        blocking(move || Ok(c.announce_static(m, &n)?)).await?;
    }
    mgr.store().put_mac(&text, &name).map_err(internal)?;
    mgr.switch().add_static(m, port).map_err(internal)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn macs_delete(
    State(a): State<App>,
    h: HeaderMap,
    Path(mac): Path<String>,
) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let (m, text) = norm_mac(&mac)?;
    if let Some(c) = a.s.cluster.clone() {
        let stored = a.s.manager.store().macs().map_err(internal)?;
        if stored.iter().any(|(t, _)| *t == text) {
            blocking(move || Ok(c.withdraw_static(m)?)).await?;
        }
    }
    if !a.s.manager.store().remove_mac(&text).map_err(internal)? {
        return Err(status(
            StatusCode::NOT_FOUND,
            format!("no static entry for {text}"),
        ));
    }
    // The switch keeps the entry until the port detaches; it no longer
    // comes back when the port attaches again.
    Ok(StatusCode::NO_CONTENT.into_response())
}

async fn vxlan_show(State(a): State<App>, h: HeaderMap) -> Result<Response, ApiError> {
    a.admin(&h)?;
    match a.s.manager.vxlan() {
        Some(v) => Ok(Json(v).into_response()),
        None => Err(status(
            StatusCode::NOT_FOUND,
            "the daemon has no VXLAN uplink (start it with --vxlan LOCAL_IP,vni=N)",
        )),
    }
}

async fn metrics(State(a): State<App>, h: HeaderMap) -> Result<Response, ApiError> {
    a.admin(&h)?;
    let m = a.s.manager.clone();
    let text = blocking(move || Ok(crate::metrics::render(&m))).await?;
    Ok((
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        text,
    )
        .into_response())
}

// The audit log (`crate::audit`): every request that is not a GET is
// recorded once answered; `GET /v1/audit` reads it.

impl App {
    /// Who a request comes from, for the audit log, and which token.
    fn who(&self, h: &HeaderMap) -> (crate::audit::Who, String) {
        use crate::audit::Who;
        let token = match h.get(header::AUTHORIZATION) {
            Some(v) => {
                let t = v.to_str().unwrap_or("");
                crate::audit::token_id(&digest(t.strip_prefix("Bearer ").unwrap_or("").trim()))
            }
            // A forwarded call: the token its node recorded.
            None if self.s.cluster.as_ref().is_some_and(|c| c.is_node(h)) => h
                .get(crate::cluster::TOKEN_HEADER)
                .and_then(|v| v.to_str().ok())
                .filter(|t| {
                    t.len() <= 16 && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                })
                .map_or_else(|| "-".to_string(), str::to_string),
            None if self.unix => "unix-socket".to_string(),
            None => "-".to_string(),
        };
        let who = match self.caller(h) {
            Ok(Caller::Admin) => Who::Admin,
            Ok(Caller::Tenant(t)) => Who::Tenant(t),
            Err(_) => Who::Unknown,
        };
        (who, token)
    }
}

/// Records every request but a GET in the audit log, with what its
/// handler read of its body and the answer (an error's message read back
/// from its JSON body).
async fn audited(
    State(a): State<App>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    use http_body_util::BodyExt as _;
    if matches!(*req.method(), Method::GET | Method::HEAD) {
        return next.run(req).await;
    }
    let (who, token) = a.who(req.headers());
    let (parts, body) = req.into_parts();
    let (method, uri) = (parts.method.clone(), parts.uri.clone());
    // What the handler reads of the body is kept (up to the largest
    // endpoint's limit) for the entry's summary.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = seen.clone();
    let body = Body::new(body.map_frame(move |f| {
        if let Some(d) = f.data_ref() {
            let mut k = keep.lock().unwrap_or_else(|e| e.into_inner());
            let room = MAX_CONFIG_BODY.saturating_sub(k.len());
            k.extend_from_slice(&d[..d.len().min(room)]);
        }
        f
    }));
    let resp = next
        .run(axum::extract::Request::from_parts(parts, body))
        .await;
    let (resp, error) = if resp.status().is_client_error() || resp.status().is_server_error() {
        let (rp, rb) = resp.into_parts();
        let bytes = axum::body::to_bytes(rb, 64 << 10).await.unwrap_or_default();
        let error = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .or_else(|| Some(String::from_utf8_lossy(&bytes).into_owned()));
        (Response::from_parts(rp, Body::from(bytes)), error)
    } else {
        (resp, None)
    };
    let body = seen.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let status = resp.status().as_u16();
    let m = a.s.manager.clone();
    tokio::task::block_in_place(|| {
        crate::audit::record(
            m.store(),
            crate::audit::Request {
                who,
                token,
                method: method.as_str(),
                path: uri.path(),
                query: uri.query(),
                body: &body,
                status,
                error: error.as_deref(),
            },
        )
    });
    resp
}

#[derive(Deserialize, Default)]
struct AuditQuery {
    limit: Option<String>,
    since: Option<String>,
    tenant: Option<String>,
}

/// `GET /v1/audit`: the newest entries, oldest first; a tenant's own
/// only (those it made and those made on its instances and quota).
async fn audit_list(
    State(a): State<App>,
    h: HeaderMap,
    Query(q): Query<AuditQuery>,
) -> Result<Response, ApiError> {
    let only = match a.caller(&h)? {
        Caller::Admin => q.tenant,
        Caller::Tenant(own) => {
            if q.tenant.as_ref().is_some_and(|t| *t != own) {
                return Err(ApiError::new(
                    StatusCode::FORBIDDEN,
                    "a tenant sees only its own audit entries (leave `tenant` out)".into(),
                    Some("tenant".into()),
                ));
            }
            Some(own)
        }
    };
    let (limit, since) = crate::audit::query(q.limit.as_deref(), q.since.as_deref())
        .map_err(|(m, field)| bad(m, Some(field)))?;
    let m = a.s.manager.clone();
    let v = blocking(move || {
        m.store()
            .audit(limit, |e| {
                e.unix_ms >= since && only.as_ref().is_none_or(|t| e.tenant.as_ref() == Some(t))
            })
            .map_err(internal)
    })
    .await?;
    Ok(Json(v).into_response())
}

async fn fallback(method: Method, uri: Uri) -> ApiError {
    status(
        StatusCode::NOT_FOUND,
        format!(
            "no such endpoint: {method} {} (see docs/openapi.yaml)",
            uri.path()
        ),
    )
}

fn router(s: Arc<Shared>, unix: bool) -> Router {
    Router::new()
        .route("/v1/health", get(health))
        .route("/v1/tenants", get(tenants_list).post(tenants_create))
        .route("/v1/tenants/{name}", axum::routing::delete(tenants_delete))
        .route("/v1/tenants/{name}/quota", get(quota_show).put(quota_set))
        .route("/v1/instances", get(instances_list).post(instances_create))
        .route(
            "/v1/instances/{name}",
            get(instances_show).delete(instances_delete),
        )
        .route("/v1/instances/{name}/config", put(instances_config))
        .route("/v1/instances/{name}/rate_limit", put(instances_rate_limit))
        .route("/v1/instances/{name}/weight", put(instances_weight))
        .route(
            "/v1/instances/{name}/handlers/{handler}",
            get(handler_read).put(handler_write),
        )
        .route("/v1/instances/{name}/stats", get(instances_stats))
        .route("/v1/instances/{name}/counters", get(instances_counters))
        .route("/v1/stats", get(stats))
        .route("/v1/switch/ports", get(switch_ports))
        .route("/v1/switch/ports/{port}/capture", get(switch_port_capture))
        .route(
            "/v1/instances/{name}/interfaces/{iface}/capture",
            get(instance_capture),
        )
        .route("/v1/switch/threads", get(switch_threads))
        .route(
            "/v1/switch/threads/{thread}/restart",
            axum::routing::post(switch_thread_restart),
        )
        .route("/v1/switch/macs", get(macs_list))
        .route("/v1/switch/vxlan", get(vxlan_show))
        .route("/v1/switch/macs/{mac}", put(macs_put).delete(macs_delete))
        .route("/metrics", get(metrics))
        .route("/v1/audit", get(audit_list))
        .merge(crate::console::router())
        .fallback(fallback)
        .layer(axum::middleware::map_response(json_errors))
        .layer(axum::middleware::from_fn_with_state(
            App { s: s.clone(), unix },
            audited,
        ))
        .with_state(App { s, unix })
}

/// A running daemon: the API servers on a background runtime, the
/// manager with its switch and instances.
pub struct Daemon {
    /// Shared state (the manager).
    pub shared: Arc<Shared>,
    /// The unix socket.
    pub socket: PathBuf,
    /// The bound TCP address, if any.
    pub tcp: Option<SocketAddr>,
    /// The cluster API over TLS (`--cluster-listen`): its bound address
    /// and certificate fingerprint.
    pub peer: Option<pronto_cluster::node::PeerApi>,
    /// The admin token.
    pub admin_token: String,
    rt: Option<tokio::runtime::Runtime>,
    stop: Option<tokio::sync::watch::Sender<bool>>,
}

/// Serves `r` on `l` (in `rt`) until `stop` turns true.
fn serve_until<L>(
    rt: &tokio::runtime::Runtime,
    l: L,
    r: Router,
    mut stop: tokio::sync::watch::Receiver<bool>,
) where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    rt.spawn(async move {
        let _ = axum::serve(l, r)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|v| *v).await;
            })
            .await;
    });
}

/// Makes the state directory (mode 0700: the store, the admin token and
/// the control sockets are the daemon's user's alone), or makes an
/// existing one private.
fn private_dir(dir: &FsPath) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    let err = |e: std::io::Error| format!("state directory {}: {e}", dir.display());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)
}

/// Reads the admin token from `dir/admin.token` (made private if it was
/// not), making one if missing.
fn admin_token(dir: &FsPath) -> Result<String, String> {
    use std::io::Write as _;
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let path = dir.join("admin.token");
    match std::fs::read_to_string(&path) {
        Ok(t) if !t.trim().is_empty() => {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            return Ok(t.trim().to_string());
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    let t = new_token()?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    writeln!(f, "{t}").map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(t)
}

impl Daemon {
    /// Opens the store, starts the switch and every stored instance, and
    /// serves the API in the background.
    pub fn start(opts: Options) -> Result<Daemon, String> {
        private_dir(&opts.state_dir)?;
        let admin = admin_token(&opts.state_dir)?;
        let store = Store::open(&opts.state_dir.join("state.redb")).map_err(|e| e.to_string())?;
        store.set_audit_limit(opts.audit_limit);
        let tenants = store
            .tenants()
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(name, d)| (d, name))
            .collect();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("prontod-api")
            .enable_all()
            .build()
            .map_err(|e| format!("starting the API runtime: {e}"))?;
        if let Some(dir) = opts.socket.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("socket directory {}: {e}", dir.display()))?;
        }
        // A socket left by a daemon that died: refuse if one still answers.
        if std::os::unix::net::UnixStream::connect(&opts.socket).is_ok() {
            return Err(format!(
                "{}: another daemon is serving this socket",
                opts.socket.display()
            ));
        }
        let _ = std::fs::remove_file(&opts.socket);
        let unix = {
            let _g = rt.enter();
            tokio::net::UnixListener::bind(&opts.socket)
                .map_err(|e| format!("binding {}: {e}", opts.socket.display()))?
        };
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&opts.socket, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("{}: {e}", opts.socket.display()))?;
        }
        let tcp = match opts.listen {
            None => None,
            Some(addr) => {
                if !addr.ip().is_loopback() {
                    return Err(format!(
                        "--listen {addr}: the API listens on loopback only (127.0.0.1 or ::1)"
                    ));
                }
                let l = rt
                    .block_on(tokio::net::TcpListener::bind(addr))
                    .map_err(|e| format!("binding {addr}: {e}"))?;
                Some(l)
            }
        };
        let tcp_addr = tcp.as_ref().and_then(|l| l.local_addr().ok());
        // The API for the other machines of the cluster: TLS, its
        // certificate's fingerprint published with the node.
        let peer = match opts.cluster.as_ref().and_then(|c| c.listen.map(|a| (c, a))) {
            None => None,
            Some((c, addr)) => {
                if addr.ip().is_unspecified() {
                    return Err(format!(
                        "--cluster-listen {addr}: give the address the other nodes reach this \
                         one at (it is published to them), not {}",
                        addr.ip()
                    ));
                }
                let l = rt
                    .block_on(tokio::net::TcpListener::bind(addr))
                    .map_err(|e| format!("--cluster-listen: binding {addr}: {e}"))?;
                let bound = l.local_addr().map_err(|e| e.to_string())?;
                let id = tls::Identity::load_or_generate(&opts.state_dir, &c.node)?;
                let listener = {
                    let _g = rt.enter();
                    tls::TlsListener::start(l, &id)?
                };
                Some((
                    listener,
                    pronto_cluster::node::PeerApi {
                        addr: bound.to_string(),
                        sha256: id.fingerprint.clone(),
                    },
                ))
            }
        };
        let peer_api = peer.as_ref().map(|(_, p)| p.clone());
        let mut mopts = opts.manager.clone();
        if mopts.control_dir.as_os_str().is_empty() {
            mopts.control_dir = opts.state_dir.join("control");
        }
        if opts.cluster.is_some() {
            // In cluster mode etcd says what runs here: nothing comes back
            // from the local store (it may have moved while this node was
            // gone).
            for spec in store.instances().map_err(|e| e.to_string())? {
                store
                    .remove_instance(&spec.tenant, &spec.name)
                    .map_err(|e| e.to_string())?;
            }
        }
        let manager = Manager::start(mopts, store)?;
        for iface in &opts.uplinks {
            if let Err(e) = manager.add_uplink(iface) {
                manager.shutdown();
                return Err(format!("--uplink: {e}"));
            }
        }
        if let Some(v) = &opts.vxlan {
            if let Err(e) = manager.add_vxlan(v) {
                manager.shutdown();
                return Err(format!("--vxlan: {e}"));
            }
        }
        let cluster = match &opts.cluster {
            None => None,
            Some(c) => {
                let tunnel = opts.vxlan.as_ref().map(|v| v.local.to_string());
                let api = tcp_addr.map(|a| a.to_string());
                match crate::cluster::Cluster::join(c, &manager, tunnel, api, peer_api.clone()) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        manager.shutdown();
                        return Err(e);
                    }
                }
            }
        };
        let shared = Arc::new(Shared {
            manager,
            admin_digest: digest(&admin),
            tenants: RwLock::new(tenants),
            cluster,
        });
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        serve_until(&rt, unix, router(shared.clone(), true), stop_rx.clone());
        if let Some((l, _)) = peer {
            serve_until(&rt, l, router(shared.clone(), false), stop_rx.clone());
        }
        if let Some(l) = tcp {
            serve_until(&rt, l, router(shared.clone(), false), stop_rx);
        }
        Ok(Daemon {
            shared,
            socket: opts.socket,
            tcp: tcp_addr,
            peer: peer_api,
            admin_token: admin,
            rt: Some(rt),
            stop: Some(stop_tx),
        })
    }

    /// The instance manager.
    pub fn manager(&self) -> &Arc<Manager> {
        &self.shared.manager
    }

    /// Blocks until SIGINT or SIGTERM.
    pub fn wait_for_signal(&self) {
        self.wait(self.listen());
    }

    /// Starts catching SIGINT and SIGTERM (from here on they no longer end
    /// the process at once, they end [`Daemon::wait`]).
    fn listen(&self) -> Option<[tokio::signal::unix::Signal; 2]> {
        use tokio::signal::unix::{signal, SignalKind};
        let rt = self.rt.as_ref()?;
        let _in_rt = rt.enter();
        Some([
            signal(SignalKind::interrupt()).ok()?,
            signal(SignalKind::terminate()).ok()?,
        ])
    }

    /// Blocks until one of the signals `listen` caught arrives.
    fn wait(&self, signals: Option<[tokio::signal::unix::Signal; 2]>) {
        let (Some(rt), Some([mut int, mut term])) = (&self.rt, signals) else {
            return;
        };
        rt.block_on(async {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        });
    }

    /// Stops serving, stops every instance (they stay in the store and
    /// come back on the next start), removes the socket.
    pub fn shutdown(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(true);
        }
        if let Some(c) = &self.shared.cluster {
            c.leave();
        }
        self.shared.manager.shutdown();
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(std::time::Duration::from_secs(2));
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Runs the daemon in the foreground until SIGINT/SIGTERM; `ready` is
/// called once it serves.
pub fn serve(opts: Options, ready: impl FnOnce(&Daemon)) -> Result<(), String> {
    let d = Daemon::start(opts)?;
    // Caught before the daemon says it serves: a SIGTERM right after
    // that must shut it down cleanly, not kill it with its cgroups left.
    let signals = d.listen();
    ready(&d);
    d.wait(signals);
    d.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bodies_parse_as_the_handlers_parse_them() {
        let ok = |k, b: &str| parse_request_body(k, b.as_bytes());
        assert_eq!(ok(BodyKind::Tenant, r#"{"name":"acme"}"#), Ok(()));
        assert_eq!(
            ok(BodyKind::Tenant, r#"{"name":"-x"}"#),
            Err("tenant name `-x`: use 1 to 31 of a-z, 0-9 and `-`, not starting with `-`".into())
        );
        assert_eq!(
            ok(
                BodyKind::Instance,
                r#"{"name":"fw","config":"Idle -> Discard;","memory":"8M"}"#
            ),
            Ok(())
        );
        assert_eq!(
            ok(
                BodyKind::Instance,
                r#"{"name":"fw","config":"","memory":"8X"}"#
            ),
            Err("memory: `8X` is not a size (8388608, 512K, 8M, 1G)".into())
        );
        let e = ok(BodyKind::Mac, r#"{"port":70000}"#).expect_err("out of range");
        assert!(e.starts_with("request body: "), "{e}");
        let e = ok(BodyKind::Config, "\u{0}{").expect_err("not JSON");
        assert!(e.starts_with("request body: "), "{e}");
    }

    /// Every path and method of docs/openapi.yaml reaches a handler of the
    /// router (not the "no such endpoint" fallback); the count pins the
    /// document to the 30 operations the router serves.
    #[test]
    fn the_openapi_document_matches_the_routes() {
        use tower::ServiceExt as _;
        let doc = include_str!("../../../../docs/openapi.yaml");
        let mut ops = Vec::new();
        let mut in_paths = false;
        let mut path = String::new();
        for line in doc.lines() {
            if line == "paths:" {
                in_paths = true;
                continue;
            }
            if in_paths && !line.starts_with(' ') && !line.is_empty() {
                break;
            }
            if let Some(p) = line.strip_prefix("  /") {
                path = format!("/{}", p.trim_end_matches(':'));
            } else if let Some(m) = line.strip_prefix("    ") {
                let m = m.trim_end_matches(':');
                if ["get", "put", "post", "delete"].contains(&m) {
                    ops.push((m.to_uppercase(), path.clone()));
                }
            }
        }
        assert_eq!(ops.len(), 32, "{ops:?}");
        let dir = std::env::temp_dir().join(format!("pronto-openapi-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let store = Store::open(&dir.join("s.redb")).expect("store");
        let manager = Manager::start(
            ManagerOptions {
                program: "/nonexistent".into(),
                root_dir: dir.clone(),
                use_cgroup: false,
                geometry: pronto_switch::Geometry::new(64, 32).expect("g"),
                switch_threads: 1,
                switch_cpu: None,
                default_memory: 32 << 20,
                warm: 0,
                pool_slots: 64,
                control_dir: dir.join("control"),
                control_ports: crate::manager::DEFAULT_CONTROL_PORTS,
            },
            store,
        )
        .expect("manager");
        let shared = Arc::new(Shared {
            manager,
            admin_digest: digest("x"),
            tenants: RwLock::new(HashMap::new()),
            cluster: None,
        });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let app = router(shared, true);
        for (method, path) in &ops {
            let concrete = path
                .replace("{name}", "nosuch")
                .replace("{handler}", "c.count")
                .replace("/tenants/{name}", "/tenants/default")
                .replace("{mac}", "02:00:00:00:00:01");
            let req = axum::http::Request::builder()
                .method(method.as_str())
                .uri(&concrete)
                .body(axum::body::Body::from("{}"))
                .expect("request");
            let resp = rt.block_on(app.clone().oneshot(req)).expect("response");
            let body = rt
                .block_on(axum::body::to_bytes(resp.into_body(), 1 << 20))
                .expect("body");
            let text = String::from_utf8_lossy(&body);
            assert!(
                !text.contains("no such endpoint"),
                "{method} {path} is documented but not routed"
            );
        }
        // And an undocumented one falls through, with a clear message.
        let req = axum::http::Request::builder()
            .uri("/v1/nope")
            .body(axum::body::Body::empty())
            .expect("request");
        let resp = rt.block_on(app.clone().oneshot(req)).expect("response");
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        // The router's own refusals are JSON too.
        let req = axum::http::Request::builder()
            .method("DELETE")
            .uri("/v1/health")
            .body(axum::body::Body::empty())
            .expect("request");
        let resp = rt.block_on(app.oneshot(req)).expect("response");
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
        let body = rt
            .block_on(axum::body::to_bytes(resp.into_body(), 1 << 20))
            .expect("body");
        let v: Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(
            v["error"],
            "this endpoint does not take that method (see docs/openapi.yaml)"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size(&json!(1024)), Ok(1024));
        assert_eq!(parse_size(&json!("8M")), Ok(8 << 20));
        assert_eq!(parse_size(&json!("512k")), Ok(512 << 10));
        assert_eq!(
            parse_size(&json!("8Q")),
            Err("`8Q` is not a size (8388608, 512K, 8M, 1G)".into())
        );
        assert_eq!(digest("abc").len(), 64);
    }
}
