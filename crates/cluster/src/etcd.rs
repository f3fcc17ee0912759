//! An etcd v3 client over etcd's JSON gateway.
//!
//! etcd serves its v3 API twice: as gRPC and, through its built-in
//! gateway, as JSON over HTTP/1.1 (`POST /v3/kv/range` and so on; keys and
//! values base64, 64-bit numbers as strings, watches as a stream of JSON
//! objects). pronto talks to the gateway: the same API, the same
//! guarantees (transactions, leases, revisions, watches), without a gRPC
//! stack, protobuf code generation or `protoc` at build time. HTTP is
//! `ureq`'s; nothing here is asynchronous: a node's agent runs its
//! keep-alive and its watch on threads of their own.
//!
//! Several endpoints (the members of one cluster) may be given: a call
//! goes to the member that answered last, and moves on to the next one
//! when that member cannot be reached or has no leader, so that losing one
//! member of three changes nothing for the caller. When no member can
//! answer (quorum lost), calls fail with [`Error::Unavailable`], naming
//! every member and why; [`Etcd::range_serializable`] still reads a
//! member's local copy then (the last state it knew).

use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};

/// How long a call waits for a member to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a call (other than a watch) waits for its answer. A member
/// that lost its leader answers a write after etcd's own request timeout
/// (about 7 s with the default election timeout), so this is longer.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest answer read (a range over many keys included).
const MAX_ANSWER: u64 = 64 << 20;

/// What went wrong talking to etcd.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An endpoint is not `http://HOST:PORT`.
    #[error("etcd endpoint `{0}`: expected http://HOST:PORT (several separated by commas)")]
    BadEndpoint(String),
    /// No member could answer: each one's reason, in order.
    #[error("etcd unavailable ({what}): {reasons}")]
    Unavailable {
        /// The call.
        what: &'static str,
        /// `ENDPOINT: why` for each member tried, separated by `; `.
        reasons: String,
    },
    /// A member answered, refusing the call (a bad request, a key too
    /// large, a lease that does not exist, ...).
    #[error("etcd at {endpoint} refused {what}: {message}")]
    Refused {
        /// The member.
        endpoint: String,
        /// The call.
        what: &'static str,
        /// etcd's own message.
        message: String,
    },
    /// An answer that is not what the API describes.
    #[error("etcd at {endpoint} answered {what} with something unexpected: {message}")]
    Protocol {
        /// The member.
        endpoint: String,
        /// The call.
        what: &'static str,
        /// What was wrong with it.
        message: String,
    },
    /// A watch from a revision etcd has compacted away: read the state
    /// again and watch from the revision the read returns.
    #[error("etcd compacted revisions before {0}: read the state again and watch from there")]
    Compacted(i64),
}

/// A stored key and its value, with etcd's bookkeeping.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// The revision that created the key (since its last deletion).
    pub create_revision: i64,
    /// The revision of its last change.
    pub mod_revision: i64,
    /// Changes since it was created (1 on creation).
    pub version: i64,
    /// The lease it is attached to (0: none).
    pub lease: i64,
}

/// A transaction's condition on one key.
#[derive(Clone, Debug)]
pub enum Compare {
    /// The key's last change was at this revision (0: the key is absent).
    ModRevision(Vec<u8>, i64),
    /// The key was created at this revision (0: the key is absent).
    CreateRevision(Vec<u8>, i64),
    /// The key holds exactly this value.
    Value(Vec<u8>, Vec<u8>),
}

/// A transaction's operation.
#[derive(Clone, Debug)]
pub enum Op {
    /// Stores `value` under `key`, attached to `lease` (0: none).
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
        /// The lease (0: none).
        lease: i64,
    },
    /// Deletes `key`.
    Delete(Vec<u8>),
    /// Deletes every key under a prefix.
    DeletePrefix(Vec<u8>),
}

/// A range's keys, and the store's revision when it was read (watch from
/// the next one to miss nothing).
#[derive(Clone, Debug, Default)]
pub struct Range {
    /// The keys, in key order.
    pub kvs: Vec<KeyValue>,
    /// The store's revision.
    pub revision: i64,
}

/// A change a watch reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The key was created or changed: its new state.
    Put(KeyValue),
    /// The key was deleted (its `mod_revision` is the deletion's).
    Delete(KeyValue),
}

impl Event {
    /// The key's state (for a deletion: the key and the revision).
    pub fn kv(&self) -> &KeyValue {
        match self {
            Event::Put(kv) | Event::Delete(kv) => kv,
        }
    }
}

/// A client of one etcd cluster.
pub struct Etcd {
    endpoints: Vec<String>,
    agent: ureq::Agent,
    /// Agent for watches: no overall deadline (a watch lasts).
    stream: ureq::Agent,
    /// The member that answered last.
    current: AtomicUsize,
}

impl Etcd {
    /// A client of the members `endpoints` (`http://HOST:PORT`, several
    /// separated by commas). Connects to nothing yet.
    pub fn new(endpoints: &str) -> Result<Etcd, Error> {
        let mut list = Vec::new();
        for e in endpoints
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let rest = e
                .strip_prefix("http://")
                .ok_or_else(|| Error::BadEndpoint(e.to_string()))?;
            let host_port = rest.trim_end_matches('/');
            if host_port.is_empty() || host_port.contains('/') || !host_port.contains(':') {
                return Err(Error::BadEndpoint(e.to_string()));
            }
            list.push(format!("http://{host_port}"));
        }
        if list.is_empty() {
            return Err(Error::BadEndpoint(endpoints.to_string()));
        }
        Ok(Etcd {
            endpoints: list,
            agent: ureq::AgentBuilder::new()
                .timeout_connect(CONNECT_TIMEOUT)
                .timeout(CALL_TIMEOUT)
                .build(),
            stream: ureq::AgentBuilder::new()
                .timeout_connect(CONNECT_TIMEOUT)
                .build(),
            current: AtomicUsize::new(0),
        })
    }

    /// The members, as given.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    /// `POST`s `body` to `path`, trying the members from the one that
    /// answered last; the answer's JSON.
    fn call(&self, what: &'static str, path: &str, body: &Value) -> Result<Value, Error> {
        let n = self.endpoints.len();
        let first = self.current.load(Ordering::Relaxed) % n;
        let mut reasons = Vec::new();
        for k in 0..n {
            let i = (first + k) % n;
            let ep = &self.endpoints[i];
            match self.agent.post(&format!("{ep}{path}")).send_json(body) {
                Ok(resp) => {
                    self.current.store(i, Ordering::Relaxed);
                    return read_json(resp, ep, what);
                }
                Err(ureq::Error::Status(code, resp)) => {
                    let message = error_message(resp);
                    // A member without a leader (or shutting down): the
                    // next one may have one.
                    if code == 503 || message.contains("no leader") || message.contains("timed out")
                    {
                        reasons.push(format!("{ep}: {message}"));
                        continue;
                    }
                    self.current.store(i, Ordering::Relaxed);
                    return Err(Error::Refused {
                        endpoint: ep.clone(),
                        what,
                        message,
                    });
                }
                Err(ureq::Error::Transport(t)) => {
                    reasons.push(format!("{ep}: {}", transport_reason(&t)));
                }
            }
        }
        Err(Error::Unavailable {
            what,
            reasons: reasons.join("; "),
        })
    }

    /// The value of `key`, if it is there.
    pub fn get(&self, key: &[u8]) -> Result<Option<KeyValue>, Error> {
        let v = self.call("get", "/v3/kv/range", &json!({ "key": B64.encode(key) }))?;
        let ep = self.ep();
        Ok(kvs(&v, &ep, "get")?.into_iter().next())
    }

    /// Every key under `prefix`, read through the leader (linearizable).
    pub fn range_prefix(&self, prefix: &[u8]) -> Result<Range, Error> {
        self.range(prefix, false)
    }

    /// Every key under `prefix` as the member answering knows them, even
    /// without a leader: the last state a node saw when quorum is lost.
    pub fn range_serializable(&self, prefix: &[u8]) -> Result<Range, Error> {
        self.range(prefix, true)
    }

    fn range(&self, prefix: &[u8], serializable: bool) -> Result<Range, Error> {
        let v = self.call(
            "range",
            "/v3/kv/range",
            &json!({
                "key": B64.encode(prefix),
                "range_end": B64.encode(prefix_end(prefix)),
                "serializable": serializable,
            }),
        )?;
        let ep = self.ep();
        Ok(Range {
            kvs: kvs(&v, &ep, "range")?,
            revision: revision(&v),
        })
    }

    /// Stores `value` under `key` (attached to `lease`, 0: none); the
    /// store's revision after it.
    pub fn put(&self, key: &[u8], value: &[u8], lease: i64) -> Result<i64, Error> {
        let mut body = json!({ "key": B64.encode(key), "value": B64.encode(value) });
        if lease != 0 {
            body["lease"] = json!(lease.to_string());
        }
        let v = self.call("put", "/v3/kv/put", &body)?;
        Ok(revision(&v))
    }

    /// Deletes `key`; how many keys went (0 or 1).
    pub fn delete(&self, key: &[u8]) -> Result<i64, Error> {
        let v = self.call(
            "delete",
            "/v3/kv/deleterange",
            &json!({ "key": B64.encode(key) }),
        )?;
        Ok(int(&v["deleted"]))
    }

    /// Deletes every key under `prefix`; how many went.
    pub fn delete_prefix(&self, prefix: &[u8]) -> Result<i64, Error> {
        let v = self.call(
            "delete",
            "/v3/kv/deleterange",
            &json!({ "key": B64.encode(prefix), "range_end": B64.encode(prefix_end(prefix)) }),
        )?;
        Ok(int(&v["deleted"]))
    }

    /// Runs `success` if every comparison holds, `failure` otherwise, as
    /// one step; whether it succeeded, and the store's revision after it.
    pub fn txn(
        &self,
        when: &[Compare],
        success: &[Op],
        failure: &[Op],
    ) -> Result<(bool, i64), Error> {
        let compare: Vec<Value> = when.iter().map(compare_json).collect();
        let ops = |ops: &[Op]| -> Vec<Value> { ops.iter().map(op_json).collect() };
        let v = self.call(
            "transaction",
            "/v3/kv/txn",
            &json!({ "compare": compare, "success": ops(success), "failure": ops(failure) }),
        )?;
        Ok((v["succeeded"].as_bool().unwrap_or(false), revision(&v)))
    }

    /// A new lease of `ttl` seconds; its ID.
    pub fn grant(&self, ttl: i64) -> Result<i64, Error> {
        let v = self.call(
            "lease grant",
            "/v3/lease/grant",
            &json!({ "TTL": ttl.to_string() }),
        )?;
        let id = int(&v["ID"]);
        if id == 0 {
            return Err(Error::Protocol {
                endpoint: self.ep(),
                what: "lease grant",
                message: format!("no lease ID in {v}"),
            });
        }
        Ok(id)
    }

    /// Renews lease `id`; the seconds it now has left (0: it had already
    /// expired, and the keys attached to it are gone).
    pub fn keep_alive(&self, id: i64) -> Result<i64, Error> {
        let v = self.call(
            "lease keep-alive",
            "/v3/lease/keepalive",
            &json!({ "ID": id.to_string() }),
        )?;
        Ok(int(&v["result"]["TTL"]))
    }

    /// Ends lease `id` now, deleting the keys attached to it.
    pub fn revoke(&self, id: i64) -> Result<(), Error> {
        self.call(
            "lease revoke",
            "/v3/lease/revoke",
            &json!({ "ID": id.to_string() }),
        )?;
        Ok(())
    }

    /// The size of the answering member's database, bytes.
    pub fn status(&self) -> Result<i64, Error> {
        let v = self.call("status", "/v3/maintenance/status", &json!({}))?;
        Ok(int(&v["dbSize"]))
    }

    /// Watches every key under `prefix` from revision `from` (the revision
    /// a range returned, plus one): the changes in order, as they come.
    pub fn watch_prefix(&self, prefix: &[u8], from: i64) -> Result<Watch, Error> {
        let body = json!({ "create_request": {
            "key": B64.encode(prefix),
            "range_end": B64.encode(prefix_end(prefix)),
            "start_revision": from.to_string(),
        }});
        let n = self.endpoints.len();
        let first = self.current.load(Ordering::Relaxed) % n;
        let mut reasons = Vec::new();
        for k in 0..n {
            let ep = &self.endpoints[(first + k) % n];
            match self.stream.post(&format!("{ep}/v3/watch")).send_json(&body) {
                Ok(resp) => {
                    let reader: Box<dyn Read + Send> = Box::new(resp.into_reader());
                    let mut w = Watch {
                        endpoint: ep.clone(),
                        stream: serde_json::Deserializer::from_reader(reader).into_iter(),
                        pending: Vec::new(),
                    };
                    // The first message says whether the watch was made.
                    w.fill()?;
                    return Ok(w);
                }
                Err(ureq::Error::Status(_, resp)) => {
                    reasons.push(format!("{ep}: {}", error_message(resp)))
                }
                Err(ureq::Error::Transport(t)) => {
                    reasons.push(format!("{ep}: {}", transport_reason(&t)))
                }
            }
        }
        Err(Error::Unavailable {
            what: "watch",
            reasons: reasons.join("; "),
        })
    }

    fn ep(&self) -> String {
        self.endpoints[self.current.load(Ordering::Relaxed) % self.endpoints.len()].clone()
    }
}

/// A watch's stream of changes.
pub struct Watch {
    endpoint: String,
    stream: serde_json::StreamDeserializer<
        'static,
        serde_json::de::IoRead<Box<dyn Read + Send>>,
        Value,
    >,
    /// Events of the last message not yet returned (in reverse).
    pending: Vec<Event>,
}

impl Watch {
    /// The member the watch is on.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The next change; blocks until there is one. `Ok(None)` when the
    /// member ended the stream (it stopped: watch again, from the revision
    /// after the last event seen, through another member).
    pub fn next_event(&mut self) -> Result<Option<Event>, Error> {
        loop {
            if let Some(e) = self.pending.pop() {
                return Ok(Some(e));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// The changes of the next message the member sent (one or more, in
    /// order: what one revision changed, or, for a watch catching up, up
    /// to the many revisions etcd sends in one response); blocks until
    /// there are some. `Ok(None)` as [`Watch::next_event`]. Changes of a
    /// message [`Watch::next_event`] has begun are the rest of it.
    pub fn next_batch(&mut self) -> Result<Option<Vec<Event>>, Error> {
        loop {
            if !self.pending.is_empty() {
                let mut batch: Vec<Event> = self.pending.drain(..).collect();
                batch.reverse();
                return Ok(Some(batch));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Reads the next message into `pending`; false at the end.
    fn fill(&mut self) -> Result<bool, Error> {
        let what = "watch";
        let msg = match self.stream.next() {
            None => return Ok(false),
            Some(Err(e)) if e.is_io() || e.is_eof() => return Ok(false),
            Some(Err(e)) => {
                return Err(Error::Protocol {
                    endpoint: self.endpoint.clone(),
                    what,
                    message: e.to_string(),
                })
            }
            Some(Ok(v)) => v,
        };
        if let Some(err) = msg.get("error") {
            return Err(Error::Refused {
                endpoint: self.endpoint.clone(),
                what,
                message: err["message"].as_str().unwrap_or("").to_string(),
            });
        }
        let r = &msg["result"];
        let compact = int(&r["compact_revision"]);
        if compact != 0 {
            return Err(Error::Compacted(compact));
        }
        if r["canceled"].as_bool() == Some(true) {
            return Ok(false);
        }
        let events = r["events"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        for e in events.iter().rev() {
            let kv = parse_kv(&e["kv"]).ok_or_else(|| Error::Protocol {
                endpoint: self.endpoint.clone(),
                what,
                message: format!("an event without a key: {e}"),
            })?;
            self.pending.push(if e["type"].as_str() == Some("DELETE") {
                Event::Delete(kv)
            } else {
                Event::Put(kv)
            });
        }
        Ok(true)
    }
}

/// The end of the range of keys that start with `prefix` (etcd's
/// `range_end`): the prefix with its last byte below 0xff incremented;
/// `\0` (every key) for an empty or all-0xff prefix.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(&last) = end.last() {
        if last < 0xff {
            *end.last_mut().expect("not empty") += 1;
            return end;
        }
        end.pop();
    }
    vec![0]
}

fn read_json(resp: ureq::Response, ep: &str, what: &'static str) -> Result<Value, Error> {
    let mut body = Vec::new();
    resp.into_reader()
        .take(MAX_ANSWER)
        .read_to_end(&mut body)
        .map_err(|e| Error::Protocol {
            endpoint: ep.to_string(),
            what,
            message: format!("reading the answer: {e}"),
        })?;
    serde_json::from_slice(&body).map_err(|e| Error::Protocol {
        endpoint: ep.to_string(),
        what,
        message: format!("not JSON: {e}"),
    })
}

/// etcd's message in an error answer (`{"error": ..., "message": ...}`).
fn error_message(resp: ureq::Response) -> String {
    let status = resp.status();
    let mut body = Vec::new();
    let _ = resp.into_reader().take(64 << 10).read_to_end(&mut body);
    match serde_json::from_slice::<Value>(&body) {
        Ok(v) => v["message"]
            .as_str()
            .or(v["error"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| format!("HTTP {status}")),
        Err(_) => format!("HTTP {status}: {}", String::from_utf8_lossy(&body).trim()),
    }
}

fn transport_reason(t: &ureq::Transport) -> String {
    // The operating system's reason (connection refused, timed out, ...)
    // is the useful part.
    let mut why = t.kind().to_string();
    if let Some(m) = t.message() {
        why = format!("{why}: {m}");
    }
    if let Some(src) = std::error::Error::source(t) {
        why = format!("{why}: {src}");
    }
    why
}

/// A 64-bit number as the gateway writes it (a string; absent: 0).
fn int(v: &Value) -> i64 {
    match v {
        Value::String(s) => s.parse().unwrap_or(0),
        Value::Number(n) => n.as_i64().unwrap_or(0),
        _ => 0,
    }
}

fn revision(v: &Value) -> i64 {
    int(&v["header"]["revision"])
}

fn bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Null => Some(Vec::new()),
        Value::String(s) => B64.decode(s).ok(),
        _ => None,
    }
}

fn parse_kv(v: &Value) -> Option<KeyValue> {
    let key = bytes(&v["key"])?;
    if key.is_empty() {
        return None;
    }
    Some(KeyValue {
        key,
        value: bytes(&v["value"])?,
        create_revision: int(&v["create_revision"]),
        mod_revision: int(&v["mod_revision"]),
        version: int(&v["version"]),
        lease: int(&v["lease"]),
    })
}

fn kvs(v: &Value, ep: &str, what: &'static str) -> Result<Vec<KeyValue>, Error> {
    let Some(list) = v.get("kvs") else {
        return Ok(Vec::new());
    };
    let list = list.as_array().ok_or_else(|| Error::Protocol {
        endpoint: ep.to_string(),
        what,
        message: "kvs is not a list".into(),
    })?;
    list.iter()
        .map(|kv| {
            parse_kv(kv).ok_or_else(|| Error::Protocol {
                endpoint: ep.to_string(),
                what,
                message: format!("a key that is not base64: {kv}"),
            })
        })
        .collect()
}

fn compare_json(c: &Compare) -> Value {
    match c {
        Compare::ModRevision(k, r) => json!({
            "key": B64.encode(k), "result": "EQUAL", "target": "MOD", "mod_revision": r.to_string()
        }),
        Compare::CreateRevision(k, r) => json!({
            "key": B64.encode(k), "result": "EQUAL", "target": "CREATE", "create_revision": r.to_string()
        }),
        Compare::Value(k, v) => json!({
            "key": B64.encode(k), "result": "EQUAL", "target": "VALUE", "value": B64.encode(v)
        }),
    }
}

fn op_json(o: &Op) -> Value {
    match o {
        Op::Put { key, value, lease } => {
            let mut p = json!({ "key": B64.encode(key), "value": B64.encode(value) });
            if *lease != 0 {
                p["lease"] = json!(lease.to_string());
            }
            json!({ "request_put": p })
        }
        Op::Delete(k) => json!({ "request_delete_range": { "key": B64.encode(k) } }),
        Op::DeletePrefix(k) => json!({ "request_delete_range": {
            "key": B64.encode(k), "range_end": B64.encode(prefix_end(k))
        }}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"/pronto/"), b"/pronto0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        assert_eq!(prefix_end(b""), vec![0]);
    }

    #[test]
    fn endpoints_are_checked_by_name() {
        let e = |s: &str| Etcd::new(s).err().map(|e| e.to_string());
        assert_eq!(e("http://127.0.0.1:2379,http://10.0.0.2:2379/"), None);
        assert_eq!(
            e("127.0.0.1:2379").as_deref(),
            Some("etcd endpoint `127.0.0.1:2379`: expected http://HOST:PORT (several separated by commas)")
        );
        assert_eq!(
            e("https://a:2379").as_deref(),
            Some("etcd endpoint `https://a:2379`: expected http://HOST:PORT (several separated by commas)")
        );
        assert!(e(" , ").is_some());
        let c = Etcd::new(" http://a:1 , http://b:2/").expect("two");
        assert_eq!(c.endpoints(), ["http://a:1", "http://b:2"]);
    }

    #[test]
    fn gateway_json_is_read_as_etcd_writes_it() {
        let v: Value = serde_json::from_str(
            r#"{"header":{"revision":"7"},"kvs":[{"key":"Zm9v","create_revision":"2",
               "mod_revision":"7","version":"3","value":"YmFy","lease":"42"}],"count":"1"}"#,
        )
        .expect("json");
        assert_eq!(revision(&v), 7);
        assert_eq!(
            kvs(&v, "e", "range").expect("kvs"),
            vec![KeyValue {
                key: b"foo".to_vec(),
                value: b"bar".to_vec(),
                create_revision: 2,
                mod_revision: 7,
                version: 3,
                lease: 42,
            }]
        );
        // An empty value is left out by the gateway.
        let v: Value = serde_json::from_str(r#"{"kvs":[{"key":"Zm9v"}]}"#).expect("json");
        assert_eq!(kvs(&v, "e", "range").expect("kvs")[0].value, b"");
        let v: Value = serde_json::from_str(r#"{"kvs":[{"key":"%%%"}]}"#).expect("json");
        assert!(matches!(kvs(&v, "e", "range"), Err(Error::Protocol { .. })));
    }
}
