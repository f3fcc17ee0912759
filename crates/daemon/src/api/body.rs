//! Request bodies: read only after the caller is known, never more than a
//! limit per endpoint (an announced length over it is refused before a
//! byte is read), and JSON objects read field by field, so that an error
//! names the field that is wrong.

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderMap, StatusCode};
use http_body_util::BodyExt as _;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ApiError;

/// A configuration (`POST /v1/instances`, `PUT .../config`): 8 MiB, well
/// within the instance protocol's 16 MiB frame.
pub const MAX_CONFIG_BODY: usize = 8 << 20;
/// A handler value: the control sockets' data limit.
pub const MAX_HANDLER_BODY: usize = crate::control::MAX_HANDLER_DATA;
/// Anything else (tenants, quotas, MAC entries).
pub const MAX_SMALL_BODY: usize = 64 << 10;

fn too_large(what: String, limit: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("request body: {what}; the limit is {limit} bytes"),
        None,
    )
}

/// After a refusal, what of a body is still read (and thrown away) so that
/// the client, still sending, gets to read the answer: at most this many
/// bytes ...
const DRAIN_BYTES: usize = 64 << 20;
/// ... for at most this long; then the connection is closed.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads the rest of a refused body in the background, keeping none of
/// it, within [`DRAIN_BYTES`] and [`DRAIN_TIME`].
fn drain(mut body: Body) {
    tokio::spawn(async move {
        let mut seen = 0usize;
        let _ = tokio::time::timeout(DRAIN_TIME, async {
            while let Some(Ok(frame)) = body.frame().await {
                seen += frame.data_ref().map_or(0, |d| d.len());
                if seen > DRAIN_BYTES {
                    break;
                }
            }
        })
        .await;
    });
}

/// The body, at most `limit` bytes. A body over it is refused as soon as
/// that is known (its announced length, or the first byte past the
/// limit); the answer goes out at once, and the rest is thrown away as it
/// comes.
pub async fn read(h: &HeaderMap, mut body: Body, limit: usize) -> Result<Bytes, ApiError> {
    let announced = h
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = announced.filter(|n| *n > limit as u64) {
        drain(body);
        return Err(too_large(format!("{n} bytes"), limit));
    }
    let mut buf = Vec::with_capacity(announced.map_or(0, |n| n as usize));
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("request body: cannot be read: {e}"),
                None,
            )
        })?;
        if let Some(d) = frame.data_ref() {
            if buf.len() + d.len() > limit {
                drain(body);
                return Err(too_large(format!("more than {limit} bytes"), limit));
            }
            buf.extend_from_slice(d);
        }
    }
    Ok(Bytes::from(buf))
}

/// A JSON object whose fields are read one at a time.
pub struct Fields {
    map: Map<String, Value>,
}

impl Fields {
    /// Parses `body` as an object with no fields but `allowed`.
    pub fn parse(body: &[u8], allowed: &[&str]) -> Result<Fields, ApiError> {
        let v: Value = serde_json::from_slice(body).map_err(|e| {
            ApiError::new(StatusCode::BAD_REQUEST, format!("request body: {e}"), None)
        })?;
        let Value::Object(map) = v else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "request body: expected a JSON object".into(),
                None,
            ));
        };
        if let Some(k) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            let list: Vec<String> = allowed.iter().map(|a| format!("`{a}`")).collect();
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "request body: unknown field `{k}`; expected {}",
                    list.join(", ")
                ),
                Some(k.clone()),
            ));
        }
        Ok(Fields { map })
    }

    /// Field `name` if present (and not `null`).
    pub fn opt<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, ApiError> {
        match self.map.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => serde_json::from_value(v).map(Some).map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("request body: `{name}`: {e}"),
                    Some(name.to_string()),
                )
            }),
        }
    }

    /// Field `name`, which must be there.
    pub fn need<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, ApiError> {
        self.opt(name)?.ok_or_else(|| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("request body: missing field `{name}`"),
                Some(name.to_string()),
            )
        })
    }

    /// The fields left, as an object.
    pub fn rest(self) -> Map<String, Value> {
        self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(e: &ApiError) -> Option<&str> {
        e.field.as_deref()
    }

    #[test]
    fn the_field_to_blame_is_the_real_one() {
        let body = br#"{"name": "x", "pids": "many", "colour": "red"}"#;
        let e = Fields::parse(body, &["name", "pids"])
            .err()
            .expect("unknown");
        assert_eq!(field(&e), Some("colour"));
        assert_eq!(
            e.message,
            "request body: unknown field `colour`; expected `name`, `pids`"
        );
        let mut f = Fields::parse(
            br#"{"name": "x", "pids": "many"}"#,
            &["name", "pids", "config"],
        )
        .expect("object");
        assert_eq!(f.need::<String>("name").expect("name"), "x");
        let e = f.opt::<u64>("pids").expect_err("type");
        assert_eq!(field(&e), Some("pids"));
        assert!(
            e.message.starts_with("request body: `pids`: invalid type"),
            "{}",
            e.message
        );
        let e = f.need::<String>("config").expect_err("missing");
        assert_eq!(
            (field(&e), e.message.as_str()),
            (Some("config"), "request body: missing field `config`")
        );
        let e = Fields::parse(b"[1]", &[]).err().expect("array");
        assert_eq!(field(&e), None);
        assert!(Fields::parse(b"{", &[]).is_err());
    }

    #[test]
    fn bodies_over_the_limit_are_refused() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_LENGTH, "100".parse().expect("value"));
        let e = rt
            .block_on(read(&h, Body::from("x".repeat(100)), 10))
            .expect_err("announced");
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(e.message, "request body: 100 bytes; the limit is 10 bytes");
        let e = rt
            .block_on(read(&HeaderMap::new(), Body::from("x".repeat(11)), 10))
            .expect_err("sent");
        assert_eq!(
            e.message,
            "request body: more than 10 bytes; the limit is 10 bytes"
        );
        let b = rt
            .block_on(read(&HeaderMap::new(), Body::from("x".repeat(10)), 10))
            .expect("within");
        assert_eq!(b.len(), 10);
    }
}
