//! The audit log: every change asked of the REST API (every request that
//! is not a `GET`), whoever asked and whatever came of it, kept in the
//! store ([`crate::store::Store::append_audit`]) so that it survives
//! restarts, and bounded: the newest [`DEFAULT_LIMIT`] entries (the
//! daemon's `--audit-limit`), the oldest dropped and counted
//! (`pronto_audit_dropped_total`).
//!
//! An entry says when (RFC 3339, UTC), who (`admin`, a tenant's name, or
//! `unknown` when authentication failed) with which token (the first 12
//! hex digits of its SHA-256, never the token; `unix-socket` for the admin
//! on the socket without one), what (method, path, the tenant it concerns
//! and a summary of the request body: its fields, a configuration or any
//! long value by size and hash, never whole) and the result (HTTP status,
//! the first line of the error on failure).
//!
//! Authentication failures are recorded at most [`UNKNOWN_PER_SECOND`] a
//! second: a local process without a token could otherwise push every
//! other entry out of the log. The ones not recorded are counted
//! (`pronto_audit_suppressed_total`) and the next one recorded says how
//! many it stands for.

use std::fmt::Write as _;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::store::Store;

/// Entries kept unless the daemon is told otherwise.
pub const DEFAULT_LIMIT: u64 = 100_000;
/// Entries `GET /v1/audit` answers with unless `limit` says otherwise.
pub const DEFAULT_QUERY_LIMIT: usize = 100;
/// The most entries one `GET /v1/audit` answers with.
pub const MAX_QUERY_LIMIT: usize = 10_000;
/// Authentication failures recorded per second at most.
pub const UNKNOWN_PER_SECOND: u32 = 5;
/// The longest text of a summary or an error line kept.
const MAX_TEXT: usize = 240;
/// A string value longer than this is summarized by size and hash.
const MAX_VALUE: usize = 40;

/// One audited request.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Entry {
    /// Its place in the log (1, 2, ...; never reused).
    #[serde(default)]
    pub seq: u64,
    /// When it was answered, RFC 3339 in UTC with milliseconds.
    pub time: String,
    /// The same, Unix milliseconds.
    pub unix_ms: u64,
    /// `admin`, the tenant's name, or `unknown` (authentication failed).
    pub who: String,
    /// Which token: the first 12 hex digits of its SHA-256, `unix-socket`
    /// (the admin on the socket without a token) or `-` (none sent).
    pub token: String,
    /// The tenant the request concerns, if any.
    #[serde(default)]
    pub tenant: Option<String>,
    /// HTTP method.
    pub method: String,
    /// Request path (without the query).
    pub path: String,
    /// What was asked: the body's fields, long values by size and hash.
    #[serde(default)]
    pub summary: String,
    /// The answer's HTTP status.
    pub status: u16,
    /// The first line of the error, when it failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// Who made a request, as the audit log names them.
#[derive(Clone, Debug, PartialEq)]
pub enum Who {
    /// The admin.
    Admin,
    /// A tenant, by name.
    Tenant(String),
    /// Nobody the daemon knows (authentication failed).
    Unknown,
}

/// The token id recorded for a token's hex SHA-256 `digest`.
pub fn token_id(digest: &str) -> String {
    digest.chars().take(12).collect()
}

/// `unix_ms` as RFC 3339 in UTC (`2026-11-27T18:49:30.123Z`).
pub fn rfc3339(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        unix_ms % 1000
    )
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// (year, month, day) → days since 1970-01-01.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses an RFC 3339 time (`2026-11-27T18:49:30Z`, fractions of a second
/// and `+01:00`-style offsets allowed; `t` or a space for `T`) into Unix
/// milliseconds.
pub fn parse_rfc3339(s: &str) -> Result<u64, String> {
    let bad = || format!("`{s}` is not an RFC 3339 time (2026-11-27T18:49:30Z)");
    let b = s.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Result<u32, String> {
        let t = b.get(r).ok_or_else(bad)?;
        if !t.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        std::str::from_utf8(t)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(bad)
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(bad());
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return Err(bad());
    }
    let mut i = 19;
    let mut ms = 0u64;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                ms = ms * 10 + u64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return Err(bad());
        }
        for _ in (i - start)..3 {
            ms *= 10;
        }
    }
    let offset: i64 = match b.get(i..) {
        Some(b"Z" | b"z") => 0,
        Some(o) if o.len() == 6 && matches!(o[0], b'+' | b'-') && o[3] == b':' => {
            let oh = i64::from(num(i + 1..i + 3)?);
            let om = i64::from(num(i + 4..i + 6)?);
            let v = oh * 3600 + om * 60;
            if o[0] == b'+' {
                v
            } else {
                -v
            }
        }
        _ => return Err(bad()),
    };
    let secs = days_from_civil(i64::from(y), mo, d) * 86_400
        + i64::from(h) * 3600
        + i64::from(mi) * 60
        + i64::from(sec)
        - offset;
    u64::try_from(secs)
        .map(|s| s * 1000 + ms)
        .map_err(|_| format!("`{s}` is before 1970"))
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn sha_prefix(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .take(6)
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// `N bytes sha256:PREFIX`: a value by size and hash.
fn sized(b: &[u8]) -> String {
    format!("{} bytes sha256:{}", b.len(), sha_prefix(b))
}

fn clip(s: &str) -> String {
    if s.len() <= MAX_TEXT {
        return s.to_string();
    }
    let mut end = MAX_TEXT;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Whether a string value may be recorded as it is: short, one word of
/// printable ASCII.
fn plain(s: &str) -> bool {
    s.len() <= MAX_VALUE && s.bytes().all(|b| b.is_ascii_graphic())
}

/// A request body's summary. `text` bodies (handler values) are one
/// value; JSON objects are `field=value` pairs, a configuration and any
/// long value by size and hash, anything named like a secret left out.
pub fn summarize(body: &[u8], text: bool) -> String {
    if body.is_empty() {
        return String::new();
    }
    if text {
        return match std::str::from_utf8(body) {
            Ok(s) if plain(s.trim()) => format!("value={}", s.trim()),
            _ => format!("value={}", sized(body)),
        };
    }
    let Ok(Value::Object(map)) = serde_json::from_slice::<Value>(body) else {
        return format!("body={}", sized(body));
    };
    let mut out = String::new();
    for (k, v) in &map {
        if !out.is_empty() {
            out.push(' ');
        }
        let key = if plain(k) { k.as_str() } else { "?" };
        let lower = k.to_ascii_lowercase();
        let shown = if ["token", "secret", "password"]
            .iter()
            .any(|w| lower.contains(w))
        {
            "(redacted)".to_string()
        } else {
            match v {
                Value::String(s) if k == "config" || !plain(s) => sized(s.as_bytes()),
                Value::String(s) => s.clone(),
                Value::Array(_) | Value::Object(_) => {
                    let t = v.to_string();
                    if t.len() <= MAX_VALUE {
                        t
                    } else {
                        sized(t.as_bytes())
                    }
                }
                other => other.to_string(),
            }
        };
        let _ = write!(out, "{key}={shown}");
    }
    clip(&out)
}

/// The tenant an admin's request concerns, from its path, query and
/// body: an instance's tenant (`?tenant=`, the body's `tenant`, else the
/// default tenant), the tenant a tenant or quota request names.
pub fn tenant_of(path: &str, query: Option<&str>, body: &[u8]) -> Option<String> {
    let q = |name: &str| {
        query?
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_string())
    };
    let field = |name: &str| {
        serde_json::from_slice::<Value>(body)
            .ok()?
            .get(name)?
            .as_str()
            .map(str::to_string)
    };
    let mut parts = path.trim_start_matches('/').split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some("v1"), Some("instances"), _) => Some(
            q("tenant")
                .or_else(|| field("tenant"))
                .unwrap_or_else(|| crate::api::DEFAULT_TENANT.to_string()),
        ),
        (Some("v1"), Some("tenants"), Some(name)) => Some(name.to_string()),
        (Some("v1"), Some("tenants"), None) => field("name"),
        _ => None,
    }
}

/// The first line of an error message, clipped.
pub fn first_line(message: &str) -> String {
    clip(message.lines().next().unwrap_or("").trim())
}

/// Limits the entries recorded for authentication failures.
#[derive(Debug, Default)]
pub struct Gate {
    /// (the second counted, recorded in it, not recorded since the last
    /// recorded one, not recorded ever).
    state: Mutex<(u64, u32, u64, u64)>,
}

impl Gate {
    /// Whether an authentication failure at `unix_ms` is recorded; if so,
    /// how many were not since the last one that was.
    fn admit(&self, unix_ms: u64) -> Option<u64> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let sec = unix_ms / 1000;
        if s.0 != sec {
            s.0 = sec;
            s.1 = 0;
        }
        if s.1 >= UNKNOWN_PER_SECOND {
            s.2 += 1;
            s.3 += 1;
            return None;
        }
        s.1 += 1;
        Some(std::mem::take(&mut s.2))
    }

    /// Authentication failures not recorded, ever.
    pub fn suppressed(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).3
    }
}

/// What the API layer knows of one answered request.
pub struct Request<'a> {
    /// Who asked.
    pub who: Who,
    /// Which token ([`token_id`], `unix-socket` or `-`).
    pub token: String,
    /// Method.
    pub method: &'a str,
    /// Path.
    pub path: &'a str,
    /// Query string, if any.
    pub query: Option<&'a str>,
    /// The body as far as the handler read it.
    pub body: &'a [u8],
    /// The answer's status.
    pub status: u16,
    /// The error message, when it failed.
    pub error: Option<&'a str>,
}

/// Records one answered request (unless it is an authentication failure
/// over [`UNKNOWN_PER_SECOND`]). A store that cannot take the entry is
/// reported on the daemon's standard error; the request's answer stands.
pub fn record(store: &Store, r: Request<'_>) {
    let gate = store.audit_gate();
    let unix_ms = now_ms();
    let text_body = r.path.contains("/handlers/");
    let mut summary = summarize(r.body, text_body);
    let (who, tenant) = match r.who {
        Who::Admin => ("admin".to_string(), tenant_of(r.path, r.query, r.body)),
        Who::Tenant(t) => (t.clone(), Some(t)),
        Who::Unknown => {
            let Some(missed) = gate.admit(unix_ms) else {
                return;
            };
            if missed > 0 {
                summary = clip(&format!(
                    "{summary}{}({missed} more authentication failures not recorded)",
                    if summary.is_empty() { "" } else { " " }
                ));
            }
            ("unknown".to_string(), None)
        }
    };
    let mut e = Entry {
        seq: 0,
        time: rfc3339(unix_ms),
        unix_ms,
        who,
        token: r.token,
        tenant,
        method: r.method.to_string(),
        path: r.path.to_string(),
        summary,
        status: r.status,
        error: r.error.map(first_line),
    };
    if let Err(x) = store.append_audit(&mut e) {
        eprintln!(
            "prontod: audit: {x}; not recorded: {} {} by {} ({})",
            e.method, e.path, e.who, e.status
        );
    }
}

/// The `GET /v1/audit` query, checked: (limit, since in Unix ms).
pub fn query(
    limit: Option<&str>,
    since: Option<&str>,
) -> Result<(usize, u64), (String, &'static str)> {
    let limit = match limit {
        None => DEFAULT_QUERY_LIMIT,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_QUERY_LIMIT).contains(&n) => n,
            _ => {
                return Err((
                    format!("limit: expected 1 to {MAX_QUERY_LIMIT}, found `{l}`"),
                    "limit",
                ))
            }
        },
    };
    let since = match since {
        None => 0,
        Some(s) => parse_rfc3339(s).map_err(|e| (format!("since: {e}"), "since"))?,
    };
    Ok((limit, since))
}

/// Appends the audit log's metrics to a `/metrics` exposition.
pub fn metrics(out: &mut String, store: &Store) {
    let gate = store.audit_gate();
    let (entries, dropped) = store.audit_counts();
    for (name, kind, help, v) in [
        (
            "pronto_audit_entries",
            "gauge",
            "Entries in the audit log.",
            entries,
        ),
        (
            "pronto_audit_dropped_total",
            "counter",
            "Audit entries dropped, oldest first, to keep the log within its bound.",
            dropped,
        ),
        (
            "pronto_audit_suppressed_total",
            "counter",
            "Authentication failures not recorded in the audit log (over the rate recorded).",
            gate.suppressed(),
        ),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}");
        let _ = writeln!(out, "# TYPE {name} {kind}");
        let _ = writeln!(out, "{name} {v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_print_and_parse_in_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        // 2026-11-27T18:49:30.123Z, computed by hand: 20,784 days.
        let t = 20_784 * 86_400_000 + (18 * 3600 + 49 * 60 + 30) * 1000 + 123;
        assert_eq!(rfc3339(t), "2026-11-27T18:49:30.123Z");
        assert_eq!(parse_rfc3339("2026-11-27T18:49:30.123Z"), Ok(t));
        assert_eq!(parse_rfc3339("2026-11-27T19:49:30.123+01:00"), Ok(t));
        assert_eq!(parse_rfc3339("2026-11-27t18:49:30.1234z"), Ok(t));
        assert_eq!(parse_rfc3339("2000-02-29T00:00:00Z"), Ok(951_782_400_000));
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        for bad in [
            "",
            "2026-11-27",
            "2026-13-01T00:00:00Z",
            "2026-11-27T18:49:30",
            "x",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn summaries_keep_fields_and_never_a_whole_configuration() {
        let config = "Idle -> Discard;\n".repeat(10);
        let body =
            serde_json::json!({"name": "fw1", "config": config, "memory": "8M", "weight": 200});
        let s = summarize(body.to_string().as_bytes(), false);
        assert_eq!(
            s,
            format!(
                "config=170 bytes sha256:{} memory=8M name=fw1 weight=200",
                sha_prefix(config.as_bytes())
            )
        );
        assert!(!s.contains("Idle"));
        assert_eq!(summarize(b"{\"token\":\"abc\"}", false), "token=(redacted)");
        assert_eq!(summarize(b"0", true), "value=0");
        assert_eq!(
            summarize(b"two words", true),
            format!("value=9 bytes sha256:{}", sha_prefix(b"two words"))
        );
        assert_eq!(summarize(b"", false), "");
        assert_eq!(
            summarize(b"{oops", false),
            format!("body=5 bytes sha256:{}", sha_prefix(b"{oops"))
        );
    }

    #[test]
    fn the_tenant_comes_from_the_path_query_or_body() {
        assert_eq!(
            tenant_of("/v1/instances", None, b"{}").as_deref(),
            Some("default")
        );
        assert_eq!(
            tenant_of("/v1/instances", None, br#"{"tenant":"acme"}"#).as_deref(),
            Some("acme")
        );
        assert_eq!(
            tenant_of("/v1/instances/fw/config", Some("tenant=beta"), b"").as_deref(),
            Some("beta")
        );
        assert_eq!(
            tenant_of("/v1/tenants/acme/quota", None, b"").as_deref(),
            Some("acme")
        );
        assert_eq!(
            tenant_of("/v1/tenants", None, br#"{"name":"new"}"#).as_deref(),
            Some("new")
        );
        assert_eq!(tenant_of("/v1/switch/macs/x", None, b""), None);
    }

    #[test]
    fn authentication_failures_are_recorded_at_a_bounded_rate() {
        let g = Gate::default();
        for _ in 0..UNKNOWN_PER_SECOND {
            assert_eq!(g.admit(5_000), Some(0));
        }
        assert_eq!(g.admit(5_999), None);
        assert_eq!(g.admit(5_999), None);
        assert_eq!(g.admit(6_000), Some(2));
        assert_eq!(g.suppressed(), 2);
    }
}
