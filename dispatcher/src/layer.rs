//! API Priority and Fairness in front of any HTTP service (feature `tower`): a tower
//! [`Layer`] that asks a function of yours who is asking and for what ([`Attributes`]), waits
//! for the request's turn in the [`Guard`], and answers as kube-apiserver's APF filter does
//! (`k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go`): the
//! `X-Kubernetes-PF-FlowSchema-UID` and `X-Kubernetes-PF-PriorityLevel-UID` headers on every
//! classified request, and for a request rejected or timed out in its queue a 429 with
//! `Retry-After` and Go's `http.Error` text body. The seats are held until the response body
//! ends (or is dropped); a long-running request (a watch) holds them only until its response
//! starts.
//!
//! ```
//! use apfkit_dispatcher::config::Configuration;
//! use apfkit_dispatcher::guard::Guard;
//! use apfkit_dispatcher::layer::{ApfLayer, Attributes};
//! use axum::{Router, routing::get};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let guard = Guard::new(Configuration::kubernetes_default(600).unwrap());
//! // Who is asking comes from your authentication; here, a header.
//! let layer = ApfLayer::new(guard, |request: &axum::extract::Request| {
//!     let user = request.headers().get("x-user").and_then(|v| v.to_str().ok());
//!     Attributes::non_resource(user.unwrap_or("system:anonymous"), &["system:authenticated"],
//!         "get", request.uri().path())
//! });
//! let app: Router = Router::new().route("/healthz", get(|| async { "ok" })).layer(layer);
//! # let _ = app;
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf as _, Bytes};
use http::{HeaderValue, Response};
use http_body::{Body, Frame, SizeHint};
use tower_layer::Layer;
use tower_service::Service;

use crate::classify::Request;
use crate::dispatch::Matched;
use crate::estimate::{Estimator, Observed};
use crate::guard::{Guard, Permit, Rejection};
use crate::queueset::WorkEstimate;
use crate::watches::{Registration, WatchTracker, Watched};

pub use crate::rejection::{FLOW_SCHEMA_UID_HEADER, PRIORITY_LEVEL_UID_HEADER};

/// What APF did with a request, in the extensions of its response, for the layers in front
/// (an audit log): the FlowSchema and priority level it matched, the seats it held and how
/// long it waited for them, or why it was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handled {
    /// What it matched, with the objects' uids.
    pub matched: Arc<Matched>,
    /// The seats it held (its initial seats); `None` when rejected.
    pub seats: Option<u64>,
    /// From asking for seats until they were given or refused.
    pub waited: std::time::Duration,
    /// Why it was rejected, if it was.
    pub rejected: Option<crate::queueset::RejectReason>,
}

/// What APF needs to know of a request, owned: who asks (user and groups) and for what (as
/// kube-apiserver's `RequestInfo` says), with its work estimate and whether it is
/// long-running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attributes {
    /// User name.
    pub user: String,
    /// The user's groups.
    pub groups: Vec<String>,
    /// Kubernetes verb for resource requests, the lower-case HTTP method otherwise.
    pub verb: String,
    /// Whether the request is for a resource (or a non-resource URL).
    pub is_resource_request: bool,
    /// API group; empty for the core group.
    pub api_group: String,
    /// API version (shown by `dump_requests`).
    pub api_version: String,
    /// Resource.
    pub resource: String,
    /// Subresource.
    pub subresource: String,
    /// Namespace.
    pub namespace: String,
    /// Object name.
    pub name: String,
    /// URL path (non-resource requests).
    pub path: String,
    /// The seats it occupies, unless `observed` is set.
    pub estimate: WorkEstimate,
    /// What the server knows of the stored objects and open watches the request touches:
    /// when set, the seats are estimated as kube-apiserver's work estimator does (from this,
    /// `query` and the seat cap of the request's level) instead of taken from `estimate`.
    pub observed: Option<Observed>,
    /// The URL's query (`limit`, `resourceVersion`, selectors: what the estimator reads).
    pub query: String,
    /// A long-running request (a watch) holds its seats only until its response starts.
    pub long_running: bool,
}

impl Attributes {
    /// A resource request of one seat.
    pub fn resource(
        user: &str,
        groups: &[&str],
        verb: &str,
        api_group: &str,
        resource: &str,
        namespace: &str,
    ) -> Self {
        Attributes {
            user: user.to_owned(),
            groups: groups.iter().map(|g| (*g).to_owned()).collect(),
            verb: verb.to_owned(),
            is_resource_request: true,
            api_group: api_group.to_owned(),
            api_version: String::new(),
            resource: resource.to_owned(),
            subresource: String::new(),
            namespace: namespace.to_owned(),
            name: String::new(),
            path: String::new(),
            estimate: WorkEstimate::ONE_SEAT,
            observed: None,
            query: String::new(),
            long_running: false,
        }
    }

    /// A non-resource request (a URL path such as `/healthz`) of one seat.
    pub fn non_resource(user: &str, groups: &[&str], verb: &str, path: &str) -> Self {
        Attributes {
            is_resource_request: false,
            path: path.to_owned(),
            ..Attributes::resource(user, groups, verb, "", "", "")
        }
    }

    /// What the request touches, for the watch tracker.
    pub fn watched(&self) -> Watched<'_> {
        Watched {
            api_group: &self.api_group,
            resource: &self.resource,
            namespace: &self.namespace,
            name: &self.name,
        }
    }

    fn request<'a>(&'a self, groups: &'a [&'a str]) -> Request<'a> {
        Request {
            user: &self.user,
            groups,
            verb: &self.verb,
            is_resource_request: self.is_resource_request,
            api_group: &self.api_group,
            api_version: &self.api_version,
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
            name: &self.name,
            path: &self.path,
        }
    }
}

/// The layer: wraps a service in [`Apf`].
pub struct ApfLayer<F> {
    guard: Guard,
    classify: Arc<F>,
    watches: Option<WatchTracker>,
}

impl<F> Clone for ApfLayer<F> {
    fn clone(&self) -> Self {
        ApfLayer {
            guard: self.guard.clone(),
            classify: self.classify.clone(),
            watches: self.watches.clone(),
        }
    }
}

impl<F> ApfLayer<F> {
    /// A layer admitting requests through `guard`, with `classify` telling what each
    /// request is.
    pub fn new(guard: Guard, classify: F) -> Self {
        ApfLayer {
            guard,
            classify: Arc::new(classify),
            watches: None,
        }
    }

    /// The layer counting each admitted watch in `watches` while its response lasts, as
    /// kube-apiserver's filter registers watches (so that `classify` can tell mutating
    /// requests how many watches they wake, [`Observed::watchers`]).
    #[must_use]
    pub fn with_watch_tracker(mut self, watches: WatchTracker) -> Self {
        self.watches = Some(watches);
        self
    }
}

impl<S, F> Layer<S> for ApfLayer<F> {
    type Service = Apf<S, F>;

    fn layer(&self, inner: S) -> Self::Service {
        Apf {
            inner,
            guard: self.guard.clone(),
            classify: self.classify.clone(),
            watches: self.watches.clone(),
        }
    }
}

/// A service behind API Priority and Fairness.
pub struct Apf<S, F> {
    inner: S,
    guard: Guard,
    classify: Arc<F>,
    watches: Option<WatchTracker>,
}

impl<S: Clone, F> Clone for Apf<S, F> {
    fn clone(&self) -> Self {
        Apf {
            inner: self.inner.clone(),
            guard: self.guard.clone(),
            classify: self.classify.clone(),
            watches: self.watches.clone(),
        }
    }
}

/// Reads and drops what the client sends of a rejected request's body (up to 256 KiB, for
/// at most a second), so that an HTTP/2 client reads the 429 rather than a reset stream.
async fn drain<B: Body + Send + 'static>(body: B) {
    let mut body = Box::pin(body);
    let draining = async {
        let mut read = 0usize;
        while let Some(Ok(frame)) =
            std::future::poll_fn(|context| body.as_mut().poll_frame(context)).await
        {
            read += frame.data_ref().map_or(0, |data| data.remaining());
            if read > 256 << 10 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), draining).await;
}

impl<S, F, B, RB> Service<http::Request<B>> for Apf<S, F>
where
    S: Service<http::Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send,
    F: Fn(&http::Request<B>) -> Attributes + Send + Sync + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    RB: Body<Data = Bytes> + Send + 'static,
{
    type Response = Response<ApfBody<RB>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, context: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(context)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let attributes = (self.classify)(&request);
        let guard = self.guard.clone();
        let watches = self.watches.clone();
        // The clone that was made ready serves this request (tower's usual swap).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        Box::pin(async move {
            let groups: Vec<&str> = attributes.groups.iter().map(String::as_str).collect();
            let apf_request = attributes.request(&groups);
            let asked = std::time::Instant::now();
            let acquired = guard
                .acquire_with(&apf_request, |max_seats| match &attributes.observed {
                    Some(observed) => Estimator::default().estimate(
                        &apf_request,
                        &attributes.query,
                        observed,
                        max_seats,
                    ),
                    None => attributes.estimate,
                })
                .await;
            drop(groups);
            let waited = asked.elapsed();
            let permit = match acquired {
                Ok(permit) => permit,
                Err(rejection) => {
                    drain(request.into_body()).await;
                    let mut response = too_many_requests(&rejection);
                    response.extensions_mut().insert(Handled {
                        matched: Arc::new(rejection.matched.clone()),
                        seats: None,
                        waited,
                        rejected: Some(rejection.reason),
                    });
                    return Ok(response);
                }
            };
            let matched = permit.matched().clone();
            let handled = Handled {
                matched: matched.clone(),
                seats: Some(permit.seats()),
                waited,
                rejected: None,
            };
            let watch = watches
                .filter(|_| attributes.verb == "watch")
                .map(|tracker| tracker.register(attributes.watched()));
            let response = inner.call(request).await?;
            let permit = (!attributes.long_running).then_some(permit);
            let mut response = response.map(|body| ApfBody {
                kind: Kind::Served {
                    body: Box::pin(body),
                    permit,
                    watch,
                },
            });
            set_headers(response.headers_mut(), &matched);
            response.extensions_mut().insert(handled);
            Ok(response)
        })
    }
}

/// Sets the uid headers, as kube-apiserver's `setResponseHeaders` does (empty for objects
/// without a uid, as a configuration read from files may be).
fn set_headers(headers: &mut http::HeaderMap, matched: &Matched) {
    for (name, uid) in
        crate::rejection::headers(&matched.priority_level_uid, &matched.flow_schema_uid)
    {
        if let Ok(value) = HeaderValue::from_str(uid) {
            headers.insert(name, value);
        }
    }
}

/// kube-apiserver's answer to a request its priority level rejected or that waited too long
/// (`tooManyRequests`: Go's `http.Error`, which writes plain text).
fn too_many_requests<RB>(rejection: &Rejection) -> Response<ApfBody<RB>> {
    let retry_after = u64::try_from(rejection.retry_after).unwrap_or(1);
    let mut response = apfkit_https::answers::too_many_requests(retry_after);
    set_headers(response.headers_mut(), &rejection.matched);
    response
}

/// A response body behind APF: the service's, holding the request's seats until it ends, or
/// the text of a 429.
pub struct ApfBody<B> {
    kind: Kind<B>,
}

/// A rejection's text, as [`apfkit_https::answers`] writes it.
impl<B> From<Bytes> for ApfBody<B> {
    fn from(text: Bytes) -> Self {
        ApfBody {
            kind: Kind::Rejected(Some(text)),
        }
    }
}

enum Kind<B> {
    Served {
        body: Pin<Box<B>>,
        permit: Option<Permit>,
        /// A watch counted while its response lasts.
        watch: Option<Registration>,
    },
    Rejected(Option<Bytes>),
}

impl<B: Body<Data = Bytes>> Body for ApfBody<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        match &mut self.get_mut().kind {
            Kind::Served {
                body,
                permit,
                watch,
            } => {
                let polled = body.as_mut().poll_frame(context);
                if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
                    // The response is over: the seats are free (kube-apiserver's handler
                    // returns when it has written the body), a watch no longer counts.
                    permit.take();
                    watch.take();
                }
                polled
            }
            Kind::Rejected(text) => Poll::Ready(text.take().map(|t| Ok(Frame::data(t)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Served { body, .. } => body.is_end_stream(),
            Kind::Rejected(text) => text.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Served { body, .. } => body.size_hint(),
            Kind::Rejected(text) => {
                SizeHint::with_exact(text.as_ref().map_or(0, |t| t.len() as u64))
            }
        }
    }
}
