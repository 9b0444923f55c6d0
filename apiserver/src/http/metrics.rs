//! kube-apiserver's request metrics (`k8s.io/apiserver/pkg/endpoints/metrics/metrics.go`):
//! `apiserver_request_total` and `apiserver_request_duration_seconds` with their labels and
//! buckets, and `/metrics` in the Prometheus text format. Resource requests are counted
//! with whatever status they end with; other requests only when rejected with 429, as
//! kube-apiserver's `RecordDroppedRequest` counts them.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use http_body::Frame;
use prometheus::{HistogramOpts, HistogramVec, IntCounterVec, Opts, Registry};

use crate::request_info::RequestInfo;

/// `apiserver_request_duration_seconds`' buckets.
const DURATION_BUCKETS: &[f64] = &[
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// The verbs kube-apiserver reports as they are (`validRequestMethods`); others are
/// `other`.
const REPORTED_VERBS: &[&str] = &[
    "APPLY",
    "CONNECT",
    "CREATE",
    "DELETE",
    "DELETECOLLECTION",
    "GET",
    "LIST",
    "PATCH",
    "POST",
    "PROXY",
    "PUT",
    "UPDATE",
    "WATCH",
    "WATCHLIST",
];

/// The request counter and latency histogram, registered in a registry.
#[derive(Clone)]
pub struct RequestMetrics {
    registry: Registry,
    total: IntCounterVec,
    duration: HistogramVec,
}

impl std::fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestMetrics").finish_non_exhaustive()
    }
}

/// The labels of one request, as kube-apiserver's `MonitorRequest` computes them.
struct Labels {
    verb: String,
    dry_run: String,
    group: String,
    version: String,
    resource: String,
    subresource: String,
    scope: &'static str,
    counted: bool,
}

impl RequestMetrics {
    /// Creates both families and registers them in `registry`, whose families `/metrics`
    /// will answer.
    ///
    /// # Errors
    ///
    /// A family of the same name is registered already.
    pub fn register(registry: &Registry) -> prometheus::Result<Self> {
        let labels = [
            "verb",
            "dry_run",
            "group",
            "version",
            "resource",
            "subresource",
            "scope",
            "component",
        ];
        let mut with_code = labels.to_vec();
        with_code.push("code");
        let total = IntCounterVec::new(
            Opts::new(
                "apiserver_request_total",
                "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
            ),
            &with_code,
        )?;
        let duration = HistogramVec::new(
            HistogramOpts::new(
                "apiserver_request_duration_seconds",
                "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
            )
            .buckets(DURATION_BUCKETS.to_vec()),
            &labels,
        )?;
        registry.register(Box::new(total.clone()))?;
        registry.register(Box::new(duration.clone()))?;
        Ok(RequestMetrics {
            registry: registry.clone(),
            total,
            duration,
        })
    }

    /// The registry's families in the Prometheus text format (version 0.0.4), as
    /// kube-apiserver's `/metrics` answers.
    pub fn text(&self) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_else(|error| format!("# {error}\n"))
    }

    fn record(&self, labels: &Labels, code: u16, started: Instant) {
        if !labels.counted && code != 429 {
            return;
        }
        let code = code.to_string();
        let values = [
            labels.verb.as_str(),
            &labels.dry_run,
            &labels.group,
            &labels.version,
            &labels.resource,
            &labels.subresource,
            labels.scope,
            "apiserver",
        ];
        let mut with_code = values.to_vec();
        with_code.push(&code);
        self.total.with_label_values(&with_code).inc();
        if labels.counted {
            self.duration
                .with_label_values(&values)
                .observe(started.elapsed().as_secs_f64());
        }
    }
}

impl Labels {
    fn of(request: &Request) -> Labels {
        let uri = request.uri();
        let info = crate::request_info::of(request);
        let scope = scope(&info);
        let method = request.method().as_str().to_ascii_uppercase();
        let canonical = match method.as_str() {
            "GET" | "HEAD" if scope != "resource" && !scope.is_empty() => "LIST".to_owned(),
            "GET" | "HEAD" => "GET".to_owned(),
            _ => method.clone(),
        };
        let watch_query = matches!(method.as_str(), "GET" | "LIST")
            && query_values(uri.query(), "watch")
                .next()
                .is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false"));
        let apply = method == "PATCH"
            && request
                .headers()
                .get(http::header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes() == b"application/apply-patch+yaml");
        let verb = if info.verb == "watch" || watch_query {
            "WATCH".to_owned()
        } else if apply {
            "APPLY".to_owned()
        } else if REPORTED_VERBS.contains(&canonical.as_str()) {
            canonical
        } else {
            "other".to_owned()
        };
        let (group, version, resource) = if info.is_resource_request {
            (
                info.api_group.clone(),
                info.api_version.clone(),
                info.resource.clone(),
            )
        } else {
            Default::default()
        };
        Labels {
            verb,
            dry_run: dry_run(uri.query()),
            group,
            version,
            resource,
            subresource: info.subresource.clone(),
            scope,
            counted: info.is_resource_request,
        }
    }
}

/// kube-apiserver's `CleanScope`.
fn scope(info: &RequestInfo) -> &'static str {
    if !info.name.is_empty() || info.verb == "create" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else if info.is_resource_request {
        "cluster"
    } else {
        ""
    }
}

fn query_values<'a>(query: Option<&'a str>, key: &'a str) -> impl Iterator<Item = String> + 'a {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(move |(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// kube-apiserver's `cleanDryRun`: the `dryRun` values, sorted and without repeats, or
/// `invalid` when one is not `All`.
fn dry_run(query: Option<&str>) -> String {
    if !query.unwrap_or_default().contains("dryRun") {
        return String::new();
    }
    let mut values: Vec<String> = query_values(query, "dryRun").collect();
    if values.iter().any(|v| v != "All") {
        return "invalid".to_owned();
    }
    values.sort();
    values.dedup();
    values.join(",")
}

/// The middleware: counts each request when its response is made, and observes its
/// duration when the response body ends (a watch's when it closes).
pub(crate) async fn record(
    State(metrics): State<Arc<RequestMetrics>>,
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let started = Instant::now();
    let labels = Labels::of(&request);
    let response = next.run(request).await;
    let code = response.status().as_u16();
    let (parts, body) = response.into_parts();
    let body = Timed {
        body,
        done: Some((metrics, labels, code, started)),
    };
    Response::from_parts(parts, Body::new(body))
}

/// A response body that records its request when it ends or is dropped.
struct Timed {
    body: Body,
    done: Option<(Arc<RequestMetrics>, Labels, u16, Instant)>,
}

impl Timed {
    fn finish(&mut self) {
        if let Some((metrics, labels, code, started)) = self.done.take() {
            metrics.record(&labels, code, started);
        }
    }
}

impl http_body::Body for Timed {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(context);
        if matches!(polled, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.finish();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for Timed {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(
        method: &str,
        uri: &str,
        content_type: Option<&str>,
    ) -> (String, &'static str, String) {
        let mut builder = Request::builder().method(method).uri(uri);
        if let Some(content_type) = content_type {
            builder = builder.header("content-type", content_type);
        }
        let labels = Labels::of(&builder.body(Body::empty()).unwrap());
        (labels.verb, labels.scope, labels.dry_run)
    }

    #[test]
    fn verbs_and_scopes_are_kube_apiservers() {
        let fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
        let cases = [
            ("GET", fs.to_owned(), None, "LIST", "cluster"),
            ("GET", format!("{fs}?watch=true"), None, "WATCH", "cluster"),
            ("GET", format!("{fs}?watch=0"), None, "LIST", "cluster"),
            ("GET", format!("{fs}/a"), None, "GET", "resource"),
            ("POST", fs.to_owned(), None, "POST", "resource"),
            ("PUT", format!("{fs}/a"), None, "PUT", "resource"),
            (
                "PATCH",
                format!("{fs}/a"),
                Some("application/apply-patch+yaml"),
                "APPLY",
                "resource",
            ),
            (
                "PATCH",
                format!("{fs}/a"),
                Some("application/merge-patch+json"),
                "PATCH",
                "resource",
            ),
            ("DELETE", fs.to_owned(), None, "DELETE", "cluster"),
            (
                "GET",
                "/apis/flowcontrol.apiserver.k8s.io/v1/watch/flowschemas".to_owned(),
                None,
                "WATCH",
                "cluster",
            ),
            (
                "GET",
                "/api/v1/namespaces/default/pods".to_owned(),
                None,
                "LIST",
                "namespace",
            ),
            ("GET", "/healthz".to_owned(), None, "GET", ""),
            ("TRACE", format!("{fs}/a"), None, "other", "resource"),
        ];
        for (method, uri, content_type, verb, scope) in cases {
            let (got_verb, got_scope, _) = labels(method, &uri, content_type);
            assert_eq!(
                (got_verb.as_str(), got_scope),
                (verb, scope),
                "{method} {uri}"
            );
        }
    }

    #[test]
    fn hostile_queries_and_paths_give_labels_without_panicking() {
        let fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
        let long = "dryRun=All&".repeat(4_000);
        for query in [
            "?dryRun=%FF%FE",
            "?dryRun=%ZZ&watch=%",
            "?watch=&watch=true",
            "?=&&&==",
            &format!("?{long}"),
        ] {
            let (verb, scope, dry_run) = labels("GET", &format!("{fs}{query}"), None);
            assert!(!verb.is_empty() && scope == "cluster", "{query}");
            assert!(
                dry_run.len() <= "invalid".len().max(3),
                "{query}: {dry_run}"
            );
        }
        // A truncated or nested path is what RequestInfo makes of it.
        for path in [
            "/apis",
            "/apis/",
            "/apis/g/v/r/n/s/x/y/z",
            "/%2e%2e/metrics",
        ] {
            let (verb, _, _) = labels("GET", path, None);
            assert_eq!(verb, "GET", "{path}");
        }
    }

    #[test]
    fn dry_run_values_are_sorted_deduplicated_or_invalid() {
        let fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
        for (query, expected) in [
            ("", ""),
            ("?dryRun=All", "All"),
            ("?dryRun=All&dryRun=All", "All"),
            ("?dryRun=Some", "invalid"),
        ] {
            let (_, _, dry_run) = labels("POST", &format!("{fs}{query}"), None);
            assert_eq!(dry_run, expected, "{query}");
        }
    }
}
