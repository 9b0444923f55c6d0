//! The outermost filters of kube-apiserver's handler chain, in one layer: the request's
//! information read once (`WithRequestInfo`), its deadline (`WithRequestDeadline`,
//! k8s.io/apiserver `pkg/endpoints/filters/request_deadline.go`), the 504 when the deadline
//! passes unanswered (`WithTimeoutForNonLongRunningRequests`, `pkg/server/filters/timeout.go`)
//! and a 500 for a handler that panics (`WithPanicRecovery`), with `Cache-Control` as
//! `WithCacheControl` sets it in between.
//!
//! Each request's handler runs as a task of its own, as upstream runs it in a goroutine: at
//! the deadline the client gets its 504 and the handler goes on to its end (a write under way
//! is not cut in half), its answer dropped. An answer whose body is still being produced at
//! the deadline ([`Streamed`]) is cut there.

use std::sync::Arc;
use std::time::Duration;

use apfkit_runtime::Object;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};

use super::audited::{audit_id, with_audit_id};
use super::request::drain;
use super::response::error_response;
use super::server::ApiServer;
use crate::error::ApiError;
use crate::request_info::RequestInfo;

/// When the request must be answered by, in the extensions of every request that is not
/// long-running: the server's request timeout from its arrival, or the `timeout` the client
/// asked for when that is shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deadline(pub tokio::time::Instant);

/// Marks a response whose body is written as it is produced, after its handler has
/// returned (a streamed list, an extension server's answer): such a body is cut at the
/// request's deadline. An answer made whole needs no cut and is left as it is.
#[derive(Debug, Clone, Copy)]
pub struct Streamed;

/// What `WithPanicRecovery` answers a request whose handler panicked (plain text).
const PANICKED: &str = "This request caused apiserver to panic. Look in the logs for details.";

/// The layer: gives the request its audit ID (`WithAuditInit`: every response carries it in
/// `Audit-ID`), reads its information, sets its deadline and runs the handler as a task,
/// answering 504 if the deadline passes first and 500 if the handler panics.
pub(super) async fn with_deadline<H>(
    State(server): State<Arc<ApiServer<H>>>,
    mut request: Request,
    next: axum::middleware::Next,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let id = audit_id(&request);
    request.extensions_mut().insert(id.clone());
    with_audit_id(within_deadline(&server, request, next).await, &id)
}

async fn within_deadline<H>(
    server: &ApiServer<H>,
    request: Request,
    next: axum::middleware::Next,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let uri = request.uri();
    let info = RequestInfo::new(request.method().as_str(), uri.path(), uri.query());
    if let Some(error) = info.unreadable() {
        // kube-apiserver's `WithRequestInfo`: `responsewriters.InternalError`, with the URL.
        let url = uri
            .path_and_query()
            .map_or_else(|| uri.path().to_owned(), ToString::to_string);
        drain(request.into_body()).await;
        return super::response::internal_error_text(
            &url,
            &format!("failed to create RequestInfo: {error}, {url}"),
        );
    }
    no_cache_unless_set(timed(server, request, info, next).await)
}

/// kube-apiserver's `WithCacheControl`, between `WithRequestInfo` and the deadline's filters:
/// an answer whose handler said nothing of caching (aggregated discovery and hashed OpenAPI
/// documents do) is `Cache-Control: no-cache, private`, errors, refusals and timeouts
/// included.
fn no_cache_unless_set(mut response: Response) -> Response {
    response
        .headers_mut()
        .entry(axum::http::header::CACHE_CONTROL)
        .or_insert(axum::http::HeaderValue::from_static("no-cache, private"));
    response
}

/// The request with its information read: its deadline set, the handler run as a task.
async fn timed<H>(
    server: &ApiServer<H>,
    mut request: Request,
    info: RequestInfo,
    next: axum::middleware::Next,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
{
    let uri = request.uri();
    let timeout = if info.is_long_running() {
        None
    } else {
        match requested_timeout(uri.query()) {
            Ok(asked) => Some(effective_timeout(asked, server.request_timeout)),
            Err(error) => {
                drain(request.into_body()).await;
                return error_response(&error);
            }
        }
    };
    request.extensions_mut().insert(Arc::new(info));
    let deadline = timeout.map(|timeout| tokio::time::Instant::now() + timeout);
    if let Some(deadline) = deadline {
        request.extensions_mut().insert(Deadline(deadline));
    }
    let mut handler = tokio::spawn(next.run(request));
    let finished = match deadline {
        Some(deadline) => tokio::select! {
            finished = &mut handler => finished,
            () = tokio::time::sleep_until(deadline) => {
                return error_response(&ApiError::timeout_after(
                    "request did not complete within the allotted timeout",
                ));
            }
        },
        None => handler.await,
    };
    match finished {
        Ok(response) => match deadline {
            Some(deadline) if response.extensions().get::<Streamed>().is_some() => {
                response.map(|body| Body::new(CutAtDeadline::new(body, deadline)))
            }
            _ => response,
        },
        // The panic's message and place went to standard error through the panic hook.
        Err(_) => (axum::http::StatusCode::INTERNAL_SERVER_ERROR, PANICKED).into_response(),
    }
}

/// An answer's body that ends with an error at the request's deadline, as kube-apiserver's
/// timeout filter aborts a handler still writing then (`http.ErrAbortHandler`: the stream is
/// reset): a streamed list, or an extension server's answer that never ends.
struct CutAtDeadline {
    inner: Body,
    deadline: tokio::time::Instant,
    /// Made the first time the body has nothing to give at once.
    timer: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl CutAtDeadline {
    fn new(inner: Body, deadline: tokio::time::Instant) -> Self {
        CutAtDeadline {
            inner,
            deadline,
            timer: None,
        }
    }
}

impl http_body::Body for CutAtDeadline {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use std::future::Future as _;
        use std::task::Poll;
        let this = &mut *self;
        if let Poll::Ready(frame) = std::pin::Pin::new(&mut this.inner).poll_frame(context) {
            return Poll::Ready(frame);
        }
        let deadline = this.deadline;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        match timer.as_mut().poll(context) {
            Poll::Ready(()) => Poll::Ready(Some(Err(axum::Error::new(
                "request did not complete within the allotted timeout",
            )))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// The `timeout` query parameter, as `parseTimeout` reads it: absent or empty is none; text
/// that is not a Go duration is 400 "invalid timeout specified in the request URL - ...".
fn requested_timeout(query: Option<&str>) -> Result<Option<i64>, ApiError> {
    let Some(value) = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .find(|(key, _)| key == "timeout")
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
    else {
        return Ok(None);
    };
    apfkit_runtime::go_duration::parse_go_duration(&value)
        .map(Some)
        .map_err(|error| {
            ApiError::bad_request(format!(
                "invalid timeout specified in the request URL - {error}"
            ))
        })
}

/// The deadline's distance: the server's timeout, or the client's when it is above zero and
/// below the server's (a timeout of 0s, or one beyond the server's, gets the server's).
fn effective_timeout(asked_nanos: Option<i64>, server: Duration) -> Duration {
    match asked_nanos.and_then(|nanos| u64::try_from(nanos).ok()) {
        Some(nanos) if nanos > 0 && Duration::from_nanos(nanos) < server => {
            Duration::from_nanos(nanos)
        }
        _ => server,
    }
}

#[cfg(test)]
mod tests {
    use super::super::server::REQUEST_TIMEOUT;
    use super::*;

    /// request_deadline_test.go, `TestParseTimeout`.
    #[test]
    fn parse_timeout() {
        // the user does not specify a timeout
        assert_eq!(requested_timeout(Some("timeout=")), Ok(None));
        assert_eq!(requested_timeout(None), Ok(None));
        // the user specifies a valid timeout
        assert_eq!(
            requested_timeout(Some("timeout=10s")),
            Ok(Some(10_000_000_000))
        );
        // the user specifies a timeout of 0s
        assert_eq!(requested_timeout(Some("timeout=0s")), Ok(Some(0)));
        // the user specifies an invalid timeout
        let error = requested_timeout(Some("timeout=foo")).unwrap_err();
        assert_eq!(error.code, 400);
        assert_eq!(
            error.message,
            r#"invalid timeout specified in the request URL - time: invalid duration "foo""#
        );
    }

    /// request_deadline_test.go, `TestWithRequestDeadline`: which deadline each request gets.
    #[test]
    fn with_request_deadline() {
        let maximum = REQUEST_TIMEOUT;
        let deadline = |query| effective_timeout(requested_timeout(Some(query)).unwrap(), maximum);
        // the user specifies a valid request timeout
        assert_eq!(deadline("timeout=15s"), Duration::from_secs(15));
        // the specified timeout is 0s, default deadline is expected to be set
        assert_eq!(deadline("timeout=0s"), maximum);
        // the user does not specify any request timeout, default deadline is expected to be set
        assert_eq!(deadline("timeout="), maximum);
        // the timeout specified exceeds the maximum deadline allowed, the default deadline is used
        assert_eq!(deadline("timeout=1m1s"), maximum);
        // (not upstream's) a negative timeout is none
        assert_eq!(deadline("timeout=-5s"), maximum);
    }
}
