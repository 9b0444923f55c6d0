//! kube-aggregator's proxy (`pkg/apiserver/handler_proxy.go`), after authentication,
//! impersonation, flow control and authorization: a request for `/apis/GROUP/VERSION[/...]`
//! that an APIService sends to an extension server goes there over HTTPS, streamed both
//! ways, with the user in the front-proxy headers; every other request, local APIServices'
//! included, goes on to the server's own routes.

use std::sync::Arc;
use std::time::Duration;

use apfkit_apiserver::auth::UserInfo;
use apfkit_apiserver::http::AuditId;
use apfkit_apiserver::http::request_info;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::discovery::Discovery;
use crate::routing::{Route, Routing};

/// What the proxy reads: the routing table and the extensions' discovery.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub(crate) routing: Arc<Routing>,
    pub(crate) discovery: Arc<Discovery>,
}

/// The biggest local discovery document the proxy merges into.
const MAX_LOCAL_DOCUMENT: usize = 16 << 20;

/// How long a discovery request (`GET /apis/GROUP/VERSION`) to an extension server may
/// take (`aggregatedDiscoveryTimeout`).
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// `GROUP/VERSION` of a path under `/apis/GROUP/VERSION`.
fn group_version(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/apis/")?;
    let mut parts = rest.splitn(3, '/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some(format!("{group}/{version}"))
}

/// An answer as Go's `http.Error` writes it.
fn text(status: StatusCode, message: &str) -> Response {
    let mut response = Response::new(Body::from(format!("{message}\n")));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The proxy, as a middleware in front of the server's routes.
pub(crate) async fn proxied(
    State(shared): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let is_get = request.method() == axum::http::Method::GET;
    if is_get && matches!(path.as_str(), "/apis" | "/apis/") {
        let response = next.run(request).await;
        return merged_discovery(response, &shared.discovery).await;
    }
    if let Some(group) = path
        .strip_prefix("/apis/")
        .map(|g| g.trim_end_matches('/'))
        .filter(|g| is_get && !g.is_empty() && !g.contains('/'))
    {
        let group = group.to_owned();
        let response = next.run(request).await;
        if response.status() == StatusCode::NOT_FOUND
            && let Some(document) = shared.discovery.group_document(&group)
        {
            return json_response(&document, "application/json");
        }
        return response;
    }
    let routing = &shared.routing;
    let Some(key) = group_version(&path) else {
        return next.run(request).await;
    };
    let table = routing.table();
    let Some(Route::Remote(remote)) = table.routes.get(&key).cloned() else {
        return next.run(request).await;
    };
    if !remote.available {
        return text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    let Some(user) = request.extensions().get::<UserInfo>().cloned() else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
    };
    let client = match remote.backend.client() {
        Ok(client) => client.clone(),
        Err(why) => return text(StatusCode::INTERNAL_SERVER_ERROR, &why),
    };
    let Ok((address, port)) = table.resolve(&remote) else {
        return text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    };
    drop(table);
    let info = request_info::of(&request);
    let discovery =
        !info.is_resource_request && request.uri().path().trim_matches('/').split('/').count() == 3;
    let audit_id = request.extensions().get::<AuditId>().cloned();
    let (mut parts, body) = request.into_parts();
    let host = if address.contains(':') {
        format!("[{address}]:{port}")
    } else {
        format!("{address}:{port}")
    };
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let Ok(uri) = Uri::builder()
        .scheme("https")
        .authority(host.as_str())
        .path_and_query(path_and_query)
        .build()
    else {
        return text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    };
    parts.uri = uri;
    parts.version = axum::http::Version::HTTP_11;
    crate::front_proxy::forward_headers(&mut parts.headers, &user);
    if let Some(id) = audit_id
        && let Ok(value) = HeaderValue::from_str(&id.0)
    {
        parts.headers.insert("audit-id", value);
    }
    let upstream = axum::http::Request::from_parts(parts, body);
    let sent = client.request(upstream);
    let answer = if discovery {
        match tokio::time::timeout(DISCOVERY_TIMEOUT, sent).await {
            Ok(answer) => answer.map_err(|e| crate::client::reach_error(&e, &host)),
            Err(_) => Err("context deadline exceeded".to_owned()),
        }
    } else {
        sent.await
            .map_err(|e| crate::client::reach_error(&e, &host))
    };
    match answer {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            crate::front_proxy::remove_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, Body::new(body))
        }
        Err(message) => text(StatusCode::SERVICE_UNAVAILABLE, &message),
    }
}

/// A JSON answer of `content_type`.
fn json_response(document: &serde_json::Value, content_type: &str) -> Response {
    let mut response = Response::new(Body::from(document.to_string()));
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// The server's own `/apis` with the extensions' groups merged in: aggregated discovery's
/// `APIGroupDiscoveryList` (either version) or the legacy `APIGroupList`.
async fn merged_discovery(response: Response, discovery: &Discovery) -> Response {
    if response.status() != StatusCode::OK || discovery.is_empty() {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_LOCAL_DOCUMENT).await else {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "discovery document too large",
        );
    };
    let Ok(mut document) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    if content_type.starts_with("application/json;g=apidiscovery.k8s.io") {
        discovery.merge_aggregated(&mut document);
    } else {
        discovery.merge_group_list(&mut document);
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(document.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_a_group_version_are_routed_by_it() {
        assert_eq!(group_version("/apis/g/v1").as_deref(), Some("g/v1"));
        assert_eq!(
            group_version("/apis/g/v1/namespaces/ns/widgets").as_deref(),
            Some("g/v1")
        );
        assert_eq!(group_version("/apis/g/v1/").as_deref(), Some("g/v1"));
        for path in [
            "/apis/g",
            "/apis/g/",
            "/apis//v1",
            "/api/v1",
            "/apis",
            "/healthz",
        ] {
            assert_eq!(group_version(path), None, "{path}");
        }
    }
}
