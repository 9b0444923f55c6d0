//! kube-aggregator's proxy (`pkg/apiserver/handler_proxy.go`), after authentication,
//! impersonation, flow control and authorization: a request for `/apis/GROUP/VERSION[/...]`
//! that an APIService sends to an extension server goes there over HTTPS, streamed both
//! ways, with the user in the front-proxy headers; every other request, local APIServices'
//! included, goes on to the server's own routes.

use std::sync::Arc;
use std::time::Duration;

use apfkit_apiserver::auth::UserInfo;
use apfkit_apiserver::http::AuditId;
use apfkit_apiserver::request_info;
use apfkit_runtime::identity::GroupVersion;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::discovery::Discovery;
use crate::openapi::OpenApi;
use crate::routing::{Remote, Route, Routing, Table};

/// What the proxy reads: the routing table, the extensions' discovery and their OpenAPI
/// indexes.
#[derive(Debug, Clone)]
pub(crate) struct Shared {
    pub(crate) routing: Arc<Routing>,
    pub(crate) discovery: Arc<Discovery>,
    pub(crate) openapi: Arc<OpenApi>,
}

/// The biggest local discovery document the proxy merges into.
const MAX_LOCAL_DOCUMENT: usize = 16 << 20;

/// How long a discovery request (`GET /apis/GROUP/VERSION`) to an extension server may
/// take (`aggregatedDiscoveryTimeout`).
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// `GROUP/VERSION` of a path under `/apis/GROUP/VERSION`.
fn group_version(path: &str) -> Option<GroupVersion> {
    let rest = path.strip_prefix("/apis/")?;
    let mut parts = rest.splitn(3, '/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some(GroupVersion::new(group.to_owned(), version.to_owned()))
}

use apfkit_apiserver::http::plain_text as text;

/// The proxy, as a middleware in front of the server's routes.
pub(crate) async fn proxied(
    State(shared): State<Shared>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path().to_owned();
    let is_get = request.method() == axum::http::Method::GET;
    if is_get && matches!(path.as_str(), "/apis" | "/apis/") {
        // The server's own document, whole and uncompressed, to merge; the merged one is
        // what the client's cache tag and encoding apply to.
        let mut request = request;
        let if_none_match = request.headers_mut().remove(header::IF_NONE_MATCH);
        let accept_encoding = request.headers_mut().remove(header::ACCEPT_ENCODING);
        let response = next.run(request).await;
        let table = shared.routing.table();
        let merged = merged_discovery(
            response,
            &shared.discovery,
            &table,
            if_none_match.as_ref().and_then(|v| v.to_str().ok()),
        )
        .await;
        let accepts_gzip = apfkit_apiserver::http::accepts_gzip(
            accept_encoding.as_ref().and_then(|v| v.to_str().ok()),
        );
        return apfkit_apiserver::http::compressed_api_answer(merged, accepts_gzip).await;
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
    if is_get && path == "/openapi/v3" {
        let response = next.run(request).await;
        return crate::openapi::merged_index(response, &shared.openapi).await;
    }
    let table = shared.routing.table();
    let remote = if let Some(document) = path.strip_prefix("/openapi/v3/").filter(|_| is_get) {
        shared.openapi.remote_of(document, &table)
    } else {
        group_version(&path).and_then(|key| match table.routes.get(&key) {
            Some(Route::Remote(remote)) => Some(remote.clone()),
            _ => None,
        })
    };
    let Some(remote) = remote else {
        return next.run(request).await;
    };
    forward(request, &remote, table).await
}

/// `request` sent to `remote`'s server as the front proxy, its answer streamed back: 503 when
/// the APIService is not available or its server cannot be reached, in Go's words.
async fn forward(mut request: Request, remote: &Remote, table: Arc<Table>) -> Response {
    if !remote.available {
        return text(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    let Some(user) = request.extensions().get::<UserInfo>().cloned() else {
        return text(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
    };
    // A request that upgrades its connection (HTTP/1.1 `Connection: Upgrade`) goes over an
    // HTTP/1.1 connection of its own, its protocol kept (`UpgradeAwareHandler`).
    let upgrade = upgrade_of(request.headers());
    let client_side = upgrade.is_some().then(|| hyper::upgrade::on(&mut request));
    let chosen = if upgrade.is_some() {
        remote
            .backend
            .upgrade_client()
            .map(|client| (client.clone(), None))
    } else {
        remote
            .backend
            .client()
            .map(|(client, place)| (client, Some(place)))
    };
    let (client, in_flight) = match chosen {
        Ok(chosen) => chosen,
        Err(why) => return text(StatusCode::INTERNAL_SERVER_ERROR, &why),
    };
    let Ok((address, port)) = table.resolve(remote) else {
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
    if let Some(protocol) = &upgrade {
        parts
            .headers
            .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        parts.headers.insert(header::UPGRADE, protocol.clone());
    }
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
        Ok(mut response) if response.status() == StatusCode::SWITCHING_PROTOCOLS => {
            let Some(client_side) = client_side else {
                return text(StatusCode::BAD_GATEWAY, "an upgrade that was not asked for");
            };
            let server_side = hyper::upgrade::on(&mut response);
            tokio::spawn(async move {
                if let (Ok(client), Ok(server)) = (client_side.await, server_side.await) {
                    let mut client = hyper_util::rt::TokioIo::new(client);
                    let mut server = hyper_util::rt::TokioIo::new(server);
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                }
            });
            response.map(Body::new)
        }
        Ok(response) if is_redirect(&response) => redirect_refused(),
        Ok(response) => {
            use http_body_util::BodyExt as _;
            let (mut parts, body) = response.into_parts();
            crate::front_proxy::remove_hop_by_hop(&mut parts.headers);
            // The request's place on its connection is given back when the answer ends.
            let body = body.map_frame(move |frame| {
                let _held = &in_flight;
                frame
            });
            let mut response = Response::from_parts(parts, Body::new(body));
            // Cut at the request's deadline if it is still coming then.
            response
                .extensions_mut()
                .insert(apfkit_apiserver::http::Streamed);
            response
        }
        Err(message) => text(StatusCode::SERVICE_UNAVAILABLE, &message),
    }
}

/// Whether an extension server's answer redirects: a 3xx with a `Location`, which
/// kube-aggregator does not pass on (`RejectForwardingRedirects`, since CVE-2022-3172).
fn is_redirect<B>(response: &axum::http::Response<B>) -> bool {
    response.status().is_redirection() && response.headers().contains_key(header::LOCATION)
}

/// What `UpgradeAwareHandler` answers in place of a redirect: 502 with its message (no
/// newline; the type Go's server sniffs for it).
fn redirect_refused() -> Response {
    let mut response = Response::new(Body::from(
        "the backend attempted to redirect this request, which is not permitted",
    ));
    *response.status_mut() = StatusCode::BAD_GATEWAY;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The protocol an HTTP/1.1 request asks to upgrade to: its `Upgrade` header, when
/// `Connection` names `upgrade` (`httpstream.IsUpgradeRequest`).
fn upgrade_of(headers: &axum::http::HeaderMap) -> Option<HeaderValue> {
    let asks = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|token| token.trim().eq_ignore_ascii_case("upgrade"));
    asks.then(|| headers.get(header::UPGRADE).cloned())
        .flatten()
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
/// `APIGroupDiscoveryList` (either version), tagged for the client's cache as the server
/// tags its own, or the legacy `APIGroupList`.
async fn merged_discovery(
    response: Response,
    discovery: &Discovery,
    table: &Table,
    if_none_match: Option<&str>,
) -> Response {
    if response.status() != StatusCode::OK {
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
        discovery.merge_aggregated(&mut document, &table.group_priorities);
        return apfkit_apiserver::http::aggregated_discovery_answer(
            &content_type,
            document.to_string().into_bytes(),
            if_none_match,
        );
    } else {
        discovery.merge_group_list(&mut document, &table.group_priorities);
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(document.to_string()))
}

#[cfg(test)]
mod tests;
