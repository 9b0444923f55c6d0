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
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri, header};
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

/// The headers that name a proxied request's user (client-go's `SetAuthProxyHeaders`).
const REMOTE_USER: &str = "x-remote-user";
const REMOTE_UID: &str = "x-remote-uid";
const REMOTE_GROUP: &str = "x-remote-group";
const REMOTE_EXTRA_PREFIX: &str = "x-remote-extra-";

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
    forward_headers(&mut parts.headers, &user);
    if let Some(id) = audit_id
        && let Ok(value) = HeaderValue::from_str(&id.0)
    {
        parts.headers.insert("audit-id", value);
    }
    let upstream = axum::http::Request::from_parts(parts, body);
    let sent = client.request(upstream);
    let answer = if discovery {
        match tokio::time::timeout(DISCOVERY_TIMEOUT, sent).await {
            Ok(answer) => answer.map_err(|e| reach_error(&e, &host)),
            Err(_) => Err("context deadline exceeded".to_owned()),
        }
    } else {
        sent.await.map_err(|e| reach_error(&e, &host))
    };
    match answer {
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            remove_hop_by_hop(&mut parts.headers);
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

/// The headers of a proxied request: the client's, without those of its connection, its
/// credentials (kube-apiserver's authentication drops `Authorization`) or any front-proxy
/// header it sent, then the user's (`SetAuthProxyHeaders`).
pub(crate) fn forward_headers(headers: &mut HeaderMap, user: &UserInfo) {
    remove_hop_by_hop(headers);
    headers.remove(header::HOST);
    headers.remove(header::AUTHORIZATION);
    let stale: Vec<HeaderName> = headers
        .keys()
        .filter(|name| {
            let name = name.as_str();
            matches!(name, REMOTE_USER | REMOTE_UID | REMOTE_GROUP)
                || name.starts_with(REMOTE_EXTRA_PREFIX)
        })
        .cloned()
        .collect();
    for name in stale {
        headers.remove(name);
    }
    let value = |text: &str| HeaderValue::from_str(text).ok();
    if let Some(name) = value(&user.name) {
        headers.insert(REMOTE_USER, name);
    }
    if !user.uid.is_empty()
        && let Some(uid) = value(&user.uid)
    {
        headers.insert(REMOTE_UID, uid);
    }
    for group in &user.groups {
        if let Some(group) = value(group) {
            headers.append(REMOTE_GROUP, group);
        }
    }
    for (key, values) in &user.extra {
        let Ok(name) = HeaderName::from_bytes(
            format!("{REMOTE_EXTRA_PREFIX}{}", escape_extra_key(key)).as_bytes(),
        ) else {
            continue;
        };
        for extra in values {
            if let Some(extra) = value(extra) {
                headers.append(name.clone(), extra);
            }
        }
    }
}

/// client-go's `headerKeyEscape`: every byte but RFC 3986's unreserved ones
/// percent-encoded.
fn escape_extra_key(key: &str) -> String {
    let mut escaped = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            escaped.push(char::from(byte));
        } else {
            escaped.push_str(&format!("%{byte:02X}"));
        }
    }
    escaped
}

/// Removes the headers of one connection (RFC 9110 §7.6.1), those `Connection` names
/// included, as Go's reverse proxy does.
fn remove_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        header::CONNECTION,
        HeaderName::from_static("keep-alive"),
        HeaderName::from_static("proxy-connection"),
        header::PROXY_AUTHENTICATE,
        header::PROXY_AUTHORIZATION,
        header::TE,
        header::TRAILER,
        header::TRANSFER_ENCODING,
        header::UPGRADE,
    ] {
        headers.remove(name);
    }
}

/// Why an extension server could not be reached, in the words of Go's transport where it
/// has them (`dial tcp ADDRESS: connect: connection refused`), without more of the
/// connection than that.
pub(crate) fn reach_error(error: &hyper_util::client::legacy::Error, host: &str) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    return format!("dial tcp {host}: connect: connection refused");
                }
                std::io::ErrorKind::TimedOut => {
                    return format!("dial tcp {host}: i/o timeout");
                }
                _ => {}
            }
            // A custom io::Error's `source` skips what it wraps: go through it.
            if let Some(inner) = io.get_ref() {
                source = Some(inner);
                continue;
            }
        }
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return tls_words(tls);
        }
        source = cause.source();
    }
    if error.is_connect() {
        format!("dial tcp {host}: connect: connection failed")
    } else {
        "error trying to reach service: the connection was closed".to_owned()
    }
}

/// A TLS failure as Go's `crypto/tls` and `crypto/x509` word the common ones (a
/// certificate of an authority with the trusted one's name but not its key is Go's unknown
/// authority too, without its parenthesised detail).
fn tls_words(error: &rustls::Error) -> String {
    use rustls::CertificateError;
    match error {
        rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer | CertificateError::BadSignature,
        ) => "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_owned(),
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "tls: failed to verify certificate: x509: certificate is not valid for the \
              service's name"
            .to_owned(),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => "tls: failed to verify certificate: x509: certificate has expired or is not yet \
              valid"
            .to_owned(),
        other => format!("tls: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

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

    /// client-go's `TestAuthProxyRoundTripper` points (`transport/round_trippers_test.go`):
    /// incoming front-proxy headers replaced, the uid only when set, a group header each,
    /// extras' keys escaped.
    #[test]
    fn the_user_is_forwarded_in_front_proxy_headers_and_nothing_else_of_the_client() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("x-remote-user", "mallory"),
            ("x-remote-group", "system:masters"),
            ("x-remote-extra-scopes", "all"),
            ("authorization", "Bearer secret"),
            ("connection", "keep-alive, x-private"),
            ("x-private", "1"),
            ("accept", "application/json"),
        ] {
            headers.append(name, HeaderValue::from_static(value));
        }
        let user = UserInfo {
            name: "alice".into(),
            uid: String::new(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            extra: BTreeMap::from([
                ("example.org/foo-bar".into(), vec!["a".into(), "b".into()]),
                ("alpha".into(), vec!["x".into()]),
            ]),
        };
        forward_headers(&mut headers, &user);
        let mut seen: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            [
                ("accept", "application/json"),
                ("x-remote-extra-alpha", "x"),
                ("x-remote-extra-example.org%2ffoo-bar", "a"),
                ("x-remote-extra-example.org%2ffoo-bar", "b"),
                ("x-remote-group", "dev"),
                ("x-remote-group", "system:authenticated"),
                ("x-remote-user", "alice"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        let with_uid = UserInfo {
            uid: "42".into(),
            ..user
        };
        forward_headers(&mut headers, &with_uid);
        assert_eq!(headers["x-remote-uid"], "42");
        assert_eq!(escape_extra_key("a b/ü"), "a%20b%2F%C3%BC");
    }
}
