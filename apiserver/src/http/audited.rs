//! The audit layer (`WithAuditInit`, `WithAudit`, k8s.io/apiserver
//! `pkg/endpoints/filters/audit.go`): every response carries its `Audit-ID`; a request the
//! policy audits has its event written at `RequestReceived`, at `ResponseStarted` for a
//! long-running request (a watch) when its response starts, and at `ResponseComplete` when
//! its response body ends (or `Panic` if its handler panicked). The request's body is read
//! into the event as the handler reads it (level `Request`), the response's as it is sent
//! (`RequestResponse`), both as JSON.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use apfkit_runtime::Object;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::response::Response;
use http_body::{Body as _, Frame};

use super::media::{self, Format};
use super::server::{ApiServer, MAX_BODY_BYTES};
use crate::audit::{AUDIT_ID_HEADER, AuditContext, Level, ResponseStatus, Stage};
use crate::request_info::{self, RequestInfo};

/// The request's audit ID (`Audit-ID`), in its extensions.
#[derive(Debug, Clone)]
pub struct AuditId(pub Arc<str>);

/// The ID a request is audited under: the client's `Audit-ID` when it sent one, else a new
/// UUID.
pub(super) fn audit_id(request: &Request) -> AuditId {
    let sent = request
        .headers()
        .get(AUDIT_ID_HEADER)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty());
    AuditId(match sent {
        Some(id) => id.into(),
        None => uuid::Uuid::new_v4().to_string().into(),
    })
}

/// Puts the `Audit-ID` header on a response that has none.
pub(super) fn with_audit_id(mut response: Response, id: &AuditId) -> Response {
    if let Ok(value) = HeaderValue::from_str(&id.0) {
        response
            .headers_mut()
            .entry(AUDIT_ID_HEADER)
            .or_insert(value);
    }
    response
}

/// The layer, behind authentication (the event names the authenticated user) and before
/// impersonation.
pub(super) async fn audited<H>(
    State(server): State<Arc<ApiServer<H>>>,
    mut request: Request,
    next: axum::middleware::Next,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let Some(auditor) = &server.auditor else {
        return next.run(request).await;
    };
    let info = request_info::of(&request);
    let id = request
        .extensions()
        .get::<AuditId>()
        .cloned()
        .unwrap_or_else(|| audit_id(&request));
    let user = request.extensions().get::<crate::auth::UserInfo>().cloned();
    let Some(context) = crate::audit::begin(auditor, &request, &info, user.as_ref(), &id.0) else {
        return next.run(request).await;
    };
    // A log that blocks requests rather than drop their events holds this one here.
    auditor.room().await;
    context.process(Stage::RequestReceived);
    request.extensions_mut().insert(context.clone());
    let request_body = (context.level() >= Level::Request && logs_request_body(&info))
        .then(|| tee_request_body(&mut request));
    let mut pending = Pending {
        context: Some(context.clone()),
    };
    let response = next.run(request).await;
    pending.context = None;
    respond(&server, &context, &info, request_body, response)
}

/// The verbs whose request body, as it came, kube-apiserver's handlers log
/// (`LogRequestPatch`, and a delete's options). A create's and an update's handler logs the
/// object it decoded instead (`LogRequestObject`, [`super::request::Write`]), and nothing
/// when the body does not decode.
fn logs_request_body(info: &RequestInfo) -> bool {
    matches!(info.verb.as_str(), "patch" | "delete" | "deletecollection")
}

/// The response's status in the event, `ResponseStarted` for a long-running request, and
/// its body wrapped to write `ResponseComplete` (with the bodies read) when it ends.
fn respond<H>(
    server: &Arc<ApiServer<H>>,
    context: &AuditContext,
    info: &RequestInfo,
    request_body: Option<Copied>,
    response: Response,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let status = response.extensions().get::<ResponseStatus>().cloned();
    context.set_response(
        response.status().as_u16(),
        status.as_ref().map(|s| s.0.as_ref()),
    );
    let long_running = info.is_long_running();
    if long_running {
        context.process(Stage::ResponseStarted);
    }
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let response_body = (!long_running && context.level() >= Level::RequestResponse)
        .then(|| Copied::new(content_type));
    let reader: BodyReader = {
        let server = server.clone();
        Arc::new(move |content_type, bytes| as_json(&server, content_type, bytes))
    };
    response.map(|body| {
        Body::new(AuditedBody {
            inner: body,
            finish: Some(Finish {
                context: context.clone(),
                request_body,
                response_body,
                reader,
            }),
        })
    })
}

/// A body as JSON for the event: JSON compacted, YAML (server-side apply) and protobuf read
/// as the server reads them; `None` for what is neither.
fn as_json<H>(
    server: &ApiServer<H>,
    content_type: Option<&str>,
    bytes: &[u8],
) -> Option<Box<serde_json::value::RawValue>>
where
    H: Object + Clone + Send + Sync + 'static,
{
    let essence = content_type
        .unwrap_or(media::JSON)
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let value = match essence.as_str() {
        "application/json"
        | "application/merge-patch+json"
        | "application/json-patch+json"
        | "application/strategic-merge-patch+json" => {
            return crate::audit::compact_json(bytes);
        }
        "application/apply-patch+yaml" | "application/yaml" => {
            let text = std::str::from_utf8(bytes).ok()?;
            serde_saphyr::from_str::<serde_json::Value>(text).ok()?
        }
        _ if media::body_format(Some(&essence)).ok() == Some(Format::Protobuf) => {
            super::request::body_value(server, Some(&essence), bytes).ok()?
        }
        _ => return None,
    };
    serde_json::value::to_raw_value(&value).ok()
}

/// What a body wrapper kept of what went through it.
#[derive(Default)]
struct Kept {
    bytes: Vec<u8>,
    /// More than [`MAX_BODY_BYTES`] went through: nothing is logged.
    overflowed: bool,
    /// The body ended.
    complete: bool,
}

impl Kept {
    fn keep(&mut self, data: &[u8]) {
        if self.overflowed {
            return;
        }
        if self.bytes.len() + data.len() > MAX_BODY_BYTES {
            self.overflowed = true;
            self.bytes = Vec::new();
        } else {
            self.bytes.extend_from_slice(data);
        }
    }

    fn whole(&self) -> Option<&[u8]> {
        (self.complete && !self.overflowed).then_some(&self.bytes)
    }
}

/// A poll of a body.
type Polled = Poll<Option<Result<Frame<Bytes>, axum::Error>>>;

/// A body's bytes as they go through a wrapper (a request's to the handler, a response's to
/// the client), shared with what writes the event, with the body's media type.
#[derive(Clone)]
struct Copied {
    kept: Arc<Mutex<Kept>>,
    content_type: Option<String>,
}

impl Copied {
    fn new(content_type: Option<String>) -> Self {
        Copied {
            kept: Arc::default(),
            content_type,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes what a poll of the body gave, and that the body ended when it says so (a reader,
    /// hyper among them, may stop at the end a body hints rather than poll past it).
    fn note(&self, polled: &Polled, end_hinted: bool) {
        let mut kept = self.lock();
        match polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    kept.keep(data);
                }
            }
            Poll::Ready(None) => kept.complete = true,
            _ => {}
        }
        kept.complete |= end_hinted;
    }

    /// The body as JSON, if it went through whole.
    fn read(&self, reader: &BodyReader) -> Option<Box<serde_json::value::RawValue>> {
        let kept = self.lock();
        let bytes = kept.whole().filter(|bytes| !bytes.is_empty())?;
        reader(self.content_type.as_deref(), bytes)
    }
}

/// Wraps the request's body to keep a copy of what the handler reads.
fn tee_request_body(request: &mut Request) -> Copied {
    let copied = Copied::new(
        request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    );
    let body = std::mem::take(request.body_mut());
    *request.body_mut() = Body::new(Tee {
        inner: body,
        copied: copied.clone(),
    });
    copied
}

struct Tee {
    inner: Body,
    copied: Copied,
}

impl http_body::Body for Tee {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Polled {
        let polled = Pin::new(&mut self.inner).poll_frame(context);
        self.copied.note(&polled, self.inner.is_end_stream());
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

type BodyReader =
    Arc<dyn Fn(Option<&str>, &[u8]) -> Option<Box<serde_json::value::RawValue>> + Send + Sync>;

/// What is written when a response body ends.
struct Finish {
    context: AuditContext,
    request_body: Option<Copied>,
    response_body: Option<Copied>,
    reader: BodyReader,
}

impl Finish {
    fn finish(self) {
        let read = |body: &Option<Copied>| body.as_ref()?.read(&self.reader);
        if let Some(object) = read(&self.request_body) {
            self.context.set_request_object(object);
        }
        if let Some(object) = read(&self.response_body) {
            self.context.set_response_object(object);
        }
        self.context.process(Stage::ResponseComplete);
    }
}

/// The response body: `ResponseComplete` written when it ends or is dropped (a client that
/// went away).
struct AuditedBody {
    inner: Body,
    finish: Option<Finish>,
}

impl AuditedBody {
    /// Notes a poll of the body, and when it ended, writes the event.
    fn note(&mut self, polled: &Polled) {
        let end = self.inner.is_end_stream();
        if let Some(copied) = self.finish.as_ref().and_then(|f| f.response_body.as_ref()) {
            copied.note(polled, end);
        }
        if (end || matches!(polled, Poll::Ready(None)))
            && let Some(finish) = self.finish.take()
        {
            finish.finish();
        }
    }
}

impl http_body::Body for AuditedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Polled {
        let polled = Pin::new(&mut self.inner).poll_frame(context);
        self.note(&polled);
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for AuditedBody {
    fn drop(&mut self) {
        if let Some(finish) = self.finish.take() {
            if let Some(copied) = &finish.response_body {
                copied.note(&Poll::Pending, self.inner.is_end_stream());
            }
            finish.finish();
        }
    }
}

/// Writes the `Panic` event if the handler panics before it answers (the deadline layer in
/// front answers the 500).
struct Pending {
    context: Option<AuditContext>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(context) = self.context.take()
            && std::thread::panicking()
        {
            let status = serde_json::json!({
                "status": "Failure",
                "reason": "InternalError",
                "message": "APIServer panic'd (the server's log says why)",
            });
            context.set_response(500, Some(&status));
            context.process(Stage::Panic);
        }
    }
}

#[cfg(test)]
mod tests;
