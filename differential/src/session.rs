//! A case's requests sent to one server, and what it answered, normalized.

use std::fmt;
use std::time::Duration;

use http_body_util::BodyExt as _;
use serde_json::Value;

use crate::normalize::{self, Versions};

/// How long one answer may take; a watch is read for this long at most.
const ANSWER_WITHIN: Duration = Duration::from_secs(20);

/// One request of a case.
#[derive(Debug, Clone)]
pub struct Request {
    method: http::Method,
    path: String,
    content_type: Option<&'static str>,
    accept: Option<String>,
    body: Vec<u8>,
    impersonate: Option<String>,
    headers: Vec<(&'static str, String)>,
    as_plain_user: bool,
    select: Option<fn(&Value) -> Value>,
    audited: bool,
}

impl Request {
    /// `METHOD path`, without a body.
    pub fn with_method(method: &str, path: &str) -> Request {
        Request::new(
            http::Method::from_bytes(method.as_bytes()).expect("an HTTP method"),
            path,
        )
    }

    fn new(method: http::Method, path: &str) -> Request {
        Request {
            method,
            path: path.to_owned(),
            content_type: None,
            accept: None,
            body: Vec::new(),
            impersonate: None,
            headers: Vec::new(),
            as_plain_user: false,
            select: None,
            audited: false,
        }
    }

    /// `GET path`.
    pub fn get(path: &str) -> Request {
        Request::new(http::Method::GET, path)
    }

    /// `DELETE path`.
    pub fn delete(path: &str) -> Request {
        Request::new(http::Method::DELETE, path)
    }

    /// `POST path` of `body` as JSON.
    pub fn post(path: &str, body: &Value) -> Request {
        Request::new(http::Method::POST, path).json("application/json", body)
    }

    /// `PUT path` of `body` as JSON.
    pub fn put(path: &str, body: &Value) -> Request {
        Request::new(http::Method::PUT, path).json("application/json", body)
    }

    /// `PATCH path` of `body` as `content_type` (`application/merge-patch+json`,
    /// `application/json-patch+json`, `application/strategic-merge-patch+json`,
    /// `application/apply-patch+yaml`).
    pub fn patch(path: &str, content_type: &'static str, body: &Value) -> Request {
        Request::new(http::Method::PATCH, path).json(content_type, body)
    }

    /// This request with `body` as its JSON body of `content_type`.
    pub fn json(mut self, content_type: &'static str, body: &Value) -> Request {
        self.content_type = Some(content_type);
        self.body = serde_json::to_vec(body).expect("JSON");
        self
    }

    /// This request with a body of raw bytes (not JSON, or JSON cut short).
    pub fn raw(mut self, content_type: &'static str, body: &[u8]) -> Request {
        self.content_type = Some(content_type);
        self.body = body.to_vec();
        self
    }

    /// This request with `Accept: accept`.
    pub fn accept(mut self, accept: &str) -> Request {
        self.accept = Some(accept.to_owned());
        self
    }

    /// This request with the audit events the server wrote of it compared too, as an
    /// exchange of their own after the answer (`AUDIT` and the request line, the events as
    /// its body): the request carries an `Audit-ID` of the suite's, and the server's audit
    /// log is read until the request's last stage is in it. The servers audit what
    /// [`crate::servers::AUDIT_POLICY`] says.
    pub fn audited(mut self) -> Request {
        self.audited = true;
        self
    }

    /// This request impersonating `user` (the administrator may).
    pub fn impersonating(mut self, user: &str) -> Request {
        self.impersonate = Some(user.to_owned());
        self
    }

    /// This request with the header `name: value` too (after any of the same name).
    pub fn header(mut self, name: &'static str, value: &str) -> Request {
        self.headers.push((name, value.to_owned()));
        self
    }

    /// This request sent as the plain user `apfkit-user` (a client certificate without
    /// groups, bound to nothing but what a case grants it) rather than the administrator.
    pub fn as_plain_user(mut self) -> Request {
        self.as_plain_user = true;
        self
    }

    /// This request with only its answer's code, headers, `kind` and `apiVersion` compared:
    /// for a document that lists what each server serves (discovery), where the request's
    /// point is how it is answered, not the list.
    pub fn kind_only(self) -> Request {
        self.selecting(
            |body| serde_json::json!({"kind": body["kind"], "apiVersion": body["apiVersion"]}),
        )
    }

    /// This request with only `select` of its answer's body compared (normalized after it is
    /// selected, so that what is left out takes no place in the order of resource versions):
    /// the part of a document that both servers must hold alike, where the rest lists what
    /// only one of them serves, or is a value only one of them can have.
    pub fn selecting(mut self, select: fn(&Value) -> Value) -> Request {
        self.select = Some(select);
        self
    }

    fn line(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// What a server answered to one request, with what must differ replaced by placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    /// The request: method and path (its resource versions as placeholders).
    pub request: String,
    /// The status code.
    pub code: u16,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The `Content-Encoding` header (a gzipped body is compared unzipped).
    pub content_encoding: String,
    /// The `Vary` headers, in order.
    pub vary: Vec<String>,
    /// The `Cache-Control` headers, in order.
    pub cache_control: Vec<String>,
    /// The `Warning` headers, in order.
    pub warnings: Vec<String>,
    /// The body: JSON normalized, else its text.
    pub body: Value,
}

impl Exchange {
    /// The exchange as one JSON value, for listing where two differ.
    pub fn summary(&self) -> Value {
        serde_json::json!({"request": self.request, "code": self.code,
            "contentType": self.content_type, "contentEncoding": self.content_encoding,
            "vary": self.vary, "cacheControl": self.cache_control,
            "warnings": self.warnings, "body": self.body})
    }
}

impl fmt::Display for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} -> {} ({})",
            self.request, self.code, self.content_type
        )?;
        if !self.content_encoding.is_empty() {
            writeln!(f, "Content-Encoding: {}", self.content_encoding)?;
        }
        for vary in &self.vary {
            writeln!(f, "Vary: {vary}")?;
        }
        for cache_control in &self.cache_control {
            writeln!(f, "Cache-Control: {cache_control}")?;
        }
        for warning in &self.warnings {
            writeln!(f, "Warning: {warning}")?;
        }
        match &self.body {
            Value::String(text) => write!(f, "{text}"),
            body => write!(
                f,
                "{}",
                serde_json::to_string_pretty(body).expect("a JSON value")
            ),
        }
    }
}

/// What one server answered to a case, exchange by exchange.
#[derive(Debug, Default)]
pub struct Transcript {
    /// The exchanges in the order they were sent.
    pub exchanges: Vec<Exchange>,
}

/// A gzip stream's bytes, its members one after another.
fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}

/// How long [`Session::wait_until`] waits for a state.
const WAIT_AT_MOST: std::time::Duration = std::time::Duration::from_secs(60);

/// How long the events of an audited request may take to reach the server's log.
const AUDITED_WITHIN: Duration = Duration::from_secs(10);

/// The audit IDs the suite sends, unique within a run.
static AUDIT_IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A case's requests to one server.
pub struct Session {
    client: kube::Client,
    plain_user: kube::Client,
    audit_log: std::path::PathBuf,
    versions: Versions,
    transcript: Transcript,
    /// The `ETag` of the last answer, which differs between servers and is not compared.
    last_etag: Option<String>,
}

impl Session {
    pub(crate) fn new(
        client: kube::Client,
        plain_user: kube::Client,
        audit_log: std::path::PathBuf,
    ) -> Session {
        Session {
            client,
            plain_user,
            audit_log,
            versions: Versions::default(),
            transcript: Transcript::default(),
            last_etag: None,
        }
    }

    pub(crate) fn into_transcript(self) -> Transcript {
        self.transcript
    }

    /// The `ETag` of the last answer (its value is each server's own, so it is not compared:
    /// a case sends it back to see the server answer `304`).
    pub fn last_etag(&self) -> Option<String> {
        self.last_etag.clone()
    }

    /// The status code of the last answer recorded (0 before any).
    pub fn last_code(&self) -> u16 {
        self.transcript.exchanges.last().map_or(0, |e| e.code)
    }

    /// Sends `request` until `done` holds of its answer's status code and body (as it came),
    /// every 100 ms for at most 60 s, and records only the last exchange: a state each server
    /// reaches at its own pace (a controller's work), compared once reached. The answers
    /// before it leave no trace, not even in the numbering of resource versions.
    ///
    /// # Panics
    ///
    /// As [`Session::send`].
    pub async fn wait_until(&mut self, request: Request, done: fn(u16, &Value) -> bool) -> Value {
        let started = std::time::Instant::now();
        let versions = self.versions.clone();
        loop {
            let body = self.send(request.clone()).await;
            let code = self.last_code();
            if done(code, &body) || started.elapsed() > WAIT_AT_MOST {
                return body;
            }
            self.transcript.exchanges.pop();
            self.versions = versions.clone();
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Sends `request` as the administrator, records what was answered, and answers the body
    /// as it came (JSON; `Null` for a body that is not), for a case that reads a value from it
    /// to send on.
    ///
    /// # Panics
    ///
    /// When the request cannot be sent or is not answered within 20 s.
    pub async fn send(&mut self, request: Request) -> Value {
        self.send_for_bytes(request).await.0
    }

    /// Sends `first`, then `second`, until `agree` holds of `first`'s body (as it came) and
    /// `second`'s bytes, every 100 ms for at most 60 s, and records the last two exchanges,
    /// `second`'s body being whether they agreed: two forms of one document (JSON and
    /// protobuf) checked against each other on each server, tried again when the document
    /// changed between the two requests (another case's CRD).
    ///
    /// # Panics
    ///
    /// As [`Session::send`].
    pub async fn agreeing(
        &mut self,
        first: Request,
        second: Request,
        agree: impl Fn(&Value, &[u8]) -> bool,
    ) {
        let started = std::time::Instant::now();
        let versions = self.versions.clone();
        loop {
            let body = self.send(first.clone()).await;
            let (_, bytes) = self.send_for_bytes(second.clone()).await;
            let agreed = agree(&body, &bytes);
            if let Some(last) = self.transcript.exchanges.last_mut() {
                last.body = serde_json::json!({"agrees with the answer before": agreed});
            }
            if agreed || started.elapsed() > WAIT_AT_MOST {
                return;
            }
            self.transcript
                .exchanges
                .truncate(self.transcript.exchanges.len() - 2);
            self.versions = versions.clone();
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// [`Session::send`], answering also the body's bytes.
    async fn send_for_bytes(&mut self, request: Request) -> (Value, Vec<u8>) {
        let line = request.line();
        let select = request.select;
        let mut builder = http::Request::builder()
            .method(request.method)
            .uri(&request.path);
        if let Some(content_type) = request.content_type {
            builder = builder.header("Content-Type", content_type);
        }
        if let Some(accept) = &request.accept {
            builder = builder.header("Accept", accept);
        }
        if let Some(user) = &request.impersonate {
            builder = builder.header("Impersonate-User", user);
        }
        for (name, value) in &request.headers {
            builder = builder.header(*name, value);
        }
        let client = if request.as_plain_user {
            &self.plain_user
        } else {
            &self.client
        };
        let audit_id = request.audited.then(|| {
            let n = AUDIT_IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            format!("differential-{}-{n}", std::process::id())
        });
        if let Some(id) = &audit_id {
            builder = builder.header("Audit-ID", id);
        }
        let sent = builder
            .body(kube::client::Body::from(request.body))
            .expect("a request");
        let answer = tokio::time::timeout(ANSWER_WITHIN, async {
            let response = client
                .send(sent)
                .await
                .unwrap_or_else(|e| panic!("{line}: {e:?}"));
            let (head, body) = response.into_parts();
            let bytes = body
                .collect()
                .await
                .unwrap_or_else(|e| panic!("{line}: {e}"))
                .to_bytes();
            (head, bytes)
        })
        .await;
        let (head, bytes) =
            answer.unwrap_or_else(|_| panic!("{line}: no answer in {ANSWER_WITHIN:?}"));
        let header = |name: &str| {
            head.headers
                .get_all(name)
                .iter()
                .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned())
                .collect::<Vec<_>>()
        };
        self.last_etag = header("etag").into_iter().next();
        let content_encoding = header("content-encoding").join(", ");
        let bytes = if content_encoding == "gzip" {
            gunzip(&bytes).unwrap_or_else(|e| panic!("{line}: its gzip: {e}"))
        } else {
            bytes.to_vec()
        };
        let parsed = serde_json::from_slice::<Value>(&bytes).ok();
        let mut body = parsed
            .clone()
            .or_else(|| watch_events(&bytes))
            .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        if let Some(select) = select {
            body = select(&body);
        }
        normalize::value(&mut body, &mut self.versions);
        self.transcript.exchanges.push(Exchange {
            request: self.versions.in_path(&line),
            code: head.status.as_u16(),
            content_type: header("content-type").join(", "),
            content_encoding,
            vary: header("vary"),
            cache_control: header("cache-control"),
            warnings: header("warning"),
            body,
        });
        if let Some(id) = audit_id {
            self.record_audit(&line, &id).await;
        }
        (parsed.unwrap_or(Value::Null), bytes.to_vec())
    }

    /// Records the audit events of the request `line` sent with the audit ID `id`, once its
    /// last stage (`ResponseComplete` or `Panic`) is in the server's log: normalized, the
    /// audit ID and the client certificate's fingerprint as placeholders, and without
    /// apfkit's own flow-control annotations (decision 203).
    ///
    /// # Panics
    ///
    /// When the last stage is not in the log within 10 s.
    async fn record_audit(&mut self, line: &str, id: &str) {
        let started = std::time::Instant::now();
        let mut events = loop {
            let text = tokio::fs::read_to_string(&self.audit_log)
                .await
                .unwrap_or_default();
            let events: Vec<Value> = text
                .lines()
                .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                .filter(|event| event["auditID"] == id)
                .collect();
            let last = |event: &Value| {
                matches!(event["stage"].as_str(), Some("ResponseComplete" | "Panic"))
            };
            if events.iter().any(last) {
                break events;
            }
            assert!(
                started.elapsed() < AUDITED_WITHIN,
                "{line}: the audit log {} has no last stage of {id} after {AUDITED_WITHIN:?} \
                 (events: {events:?})",
                self.audit_log.display()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        for event in &mut events {
            audit_event_placeholders(event);
        }
        let mut body = Value::Array(events);
        normalize::value(&mut body, &mut self.versions);
        self.transcript.exchanges.push(Exchange {
            request: format!("AUDIT {}", self.versions.in_path(line)),
            code: 0,
            content_type: String::new(),
            content_encoding: String::new(),
            vary: Vec::new(),
            cache_control: Vec::new(),
            warnings: Vec::new(),
            body,
        });
    }
}

/// An audit event with what must differ between servers as placeholders: its audit ID and
/// times, the fingerprint of the client certificate in the user's extra, and apfkit's own
/// flow-control annotations left out (decision 203).
fn audit_event_placeholders(event: &mut Value) {
    event["auditID"] = Value::from("<audit-id>");
    for time in ["requestReceivedTimestamp", "stageTimestamp"] {
        if event.get(time).is_some() {
            event[time] = Value::from("<time>");
        }
    }
    for user in ["/user/extra", "/impersonatedUser/extra"] {
        if let Some(id) = event
            .pointer_mut(user)
            .and_then(|extra| extra.get_mut("authentication.kubernetes.io/credential-id"))
        {
            *id = Value::from("<credential-id>");
        }
    }
    if let Some(Value::Object(annotations)) = event.get_mut("annotations") {
        annotations.retain(|key, _| !key.starts_with("flowcontrol.apfkit/"));
    }
}

/// A watch's answer, one JSON event after another, as the array of its events (normalized as
/// any other value is); `None` for anything else.
fn watch_events(bytes: &[u8]) -> Option<Value> {
    let events: Vec<Value> = serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .ok()?;
    let is_event = |event: &Value| event.get("type").is_some() && event.get("object").is_some();
    (!events.is_empty() && events.iter().all(is_event)).then_some(Value::Array(events))
}
