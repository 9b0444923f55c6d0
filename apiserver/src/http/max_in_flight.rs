//! kube-apiserver's max-in-flight filter (`WithMaxInFlightLimit`, k8s.io/apiserver
//! `pkg/server/filters/maxinflight.go`), which kube-apiserver runs in place of API Priority and
//! Fairness when that is off (`--enable-priority-and-fairness=false`): at most
//! `--max-requests-inflight` read-only requests (`get`, `list`, `watch`) and
//! `--max-mutating-requests-inflight` others at once, 0 for no limit; long-running requests
//! are not counted; a request past its limit is answered 429 at once (no queue) with
//! `Retry-After: 1`, unless its user is in `system:masters`, which is always served.
//!
//! ```
//! use apfkit_apiserver::http::MaxInFlight;
//!
//! let limits = MaxInFlight::new(400, 200);
//! let routes: axum::Router = axum::Router::new();
//! let routes = routes.layer(axum::middleware::from_fn_with_state(limits, MaxInFlight::limit));
//! # drop(routes);
//! ```

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::auth::{MASTERS, UserInfo};

/// The verbs that are not mutating (`nonMutatingRequestVerbs`).
const NON_MUTATING_VERBS: [&str; 3] = ["get", "list", "watch"];

/// The two limits, shared by every request of a server.
#[derive(Debug, Clone)]
pub struct MaxInFlight {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

impl MaxInFlight {
    /// At most `read_only` non-mutating and `mutating` mutating requests at once; 0 is no
    /// limit.
    pub fn new(read_only: usize, mutating: usize) -> Self {
        let limit = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        MaxInFlight {
            read_only: limit(read_only),
            mutating: limit(mutating),
        }
    }

    /// The middleware (`axum::middleware::from_fn_with_state`): after authentication, so that
    /// it knows the user; a served request holds its place until its response's body ends.
    pub async fn limit(
        State(limits): State<MaxInFlight>,
        request: Request,
        next: Next,
    ) -> Response {
        let info = crate::request_info::of(&request);
        if info.is_long_running() {
            return next.run(request).await;
        }
        let semaphore = if NON_MUTATING_VERBS.contains(&info.verb.as_str()) {
            &limits.read_only
        } else {
            &limits.mutating
        };
        let Some(semaphore) = semaphore else {
            return next.run(request).await;
        };
        match semaphore.clone().try_acquire_owned() {
            Ok(permit) => {
                let response = next.run(request).await;
                response.map(|body| {
                    Body::new(Held {
                        body,
                        _permit: permit,
                    })
                })
            }
            Err(_) => {
                // Not every actor is limited: system:masters always gets an answer.
                let master = request
                    .extensions()
                    .get::<UserInfo>()
                    .is_some_and(|user| user.groups.iter().any(|g| g == MASTERS));
                if master {
                    next.run(request).await
                } else {
                    too_many_requests()
                }
            }
        }
    }
}

/// kube-apiserver's `tooManyRequests` with `Retry-After: 1`, as the filter sends it.
fn too_many_requests() -> Response {
    apfkit_https::answers::too_many_requests(1)
}

/// A response body that holds its request's place until it ends (or is dropped).
struct Held {
    body: Body,
    _permit: OwnedSemaphorePermit,
}

impl http_body::Body for Held {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests;
