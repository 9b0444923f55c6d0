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
fn group_version(path: &str) -> Option<String> {
    let rest = path.strip_prefix("/apis/")?;
    let mut parts = rest.splitn(3, '/');
    let group = parts.next().filter(|g| !g.is_empty())?;
    let version = parts.next().filter(|v| !v.is_empty())?;
    Some(format!("{group}/{version}"))
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
        let response = next.run(request).await;
        let table = shared.routing.table();
        return merged_discovery(response, &shared.discovery, &table).await;
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
        remote.backend.upgrade_client()
    } else {
        remote.backend.client()
    };
    let client = match chosen {
        Ok(client) => client.clone(),
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
        Ok(response) => {
            let (mut parts, body) = response.into_parts();
            crate::front_proxy::remove_hop_by_hop(&mut parts.headers);
            Response::from_parts(parts, Body::new(body))
        }
        Err(message) => text(StatusCode::SERVICE_UNAVAILABLE, &message),
    }
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
/// `APIGroupDiscoveryList` (either version) or the legacy `APIGroupList`.
async fn merged_discovery(response: Response, discovery: &Discovery, table: &Table) -> Response {
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
    } else {
        discovery.merge_group_list(&mut document, &table.group_priorities);
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

    /// A server over TLS on a loopback port, with a certificate for `api.ns.svc` made on
    /// the spot, that hands each connection to `handle`; its port.
    async fn serve_tls<F, Fut>(handle: F) -> u16
    where
        F: Fn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>) -> Fut
            + Clone
            + Send
            + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["api.ns.svc".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, handle) = (acceptor.clone(), handle.clone());
                tokio::spawn(async move {
                    if let Ok(tls) = acceptor.accept(tcp).await {
                        handle(tls).await;
                    }
                });
            }
        });
        port
    }

    /// An extension server that answers with hostile bytes over TLS, on a loopback port:
    /// each connection gets `answer` after the request's head, then is closed.
    async fn hostile_server(answer: &'static [u8]) -> u16 {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        serve_tls(move |mut tls| async move {
            let mut head = [0u8; 4096];
            let _ = tls.read(&mut head).await;
            let _ = tls.write_all(answer).await;
            let _ = tls.shutdown().await;
        })
        .await
    }

    /// A routing table sending `g/v1` to the server on `port` (no certificate checked).
    fn routing_to(port: u16) -> Shared {
        use crate::routing::{Remote, Table};
        use k8s_openapi::api::core::v1::Service;
        use k8s_openapi::api::discovery::v1::EndpointSlice;
        let service: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "api", "namespace": "ns"},
            "spec": {"type": "ClusterIP", "ports": [{"name": "https", "port": 443}]},
        }))
        .unwrap();
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "api-1", "namespace": "ns"},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"]}],
            "ports": [{"name": "https", "port": port}],
        }))
        .unwrap();
        let key = ("ns".to_owned(), "api".to_owned());
        let mut table = Table::default();
        table.services.insert(key.clone(), service);
        table.slices.insert(key, vec![slice]);
        table.routes.insert(
            "g/v1".to_owned(),
            Route::Remote(Arc::new(Remote {
                name: "v1.g".to_owned(),
                namespace: "ns".to_owned(),
                service: "api".to_owned(),
                port: 443,
                available: true,
                group_priority: 1000,
                version_priority: 15,
                backend: crate::client::Backend::new(
                    "api.ns.svc",
                    &[],
                    true,
                    &crate::client::Identity::default(),
                ),
            })),
        );
        let routing = Arc::new(Routing::default());
        routing.set(table);
        Shared {
            routing,
            discovery: Arc::default(),
            openapi: Arc::default(),
        }
    }

    /// The proxy in front of a router that answers 204 to whatever reaches it.
    async fn through(shared: Shared, path: &str) -> (StatusCode, String) {
        let response = tokio::time::timeout(Duration::from_secs(20), answer(shared, path))
            .await
            .expect("answered in time");
        let status = response.status();
        let body = tokio::time::timeout(
            Duration::from_secs(20),
            axum::body::to_bytes(response.into_body(), 1 << 20),
        )
        .await
        .expect("the body ends in time");
        (
            status,
            body.map_or_else(
                |e| format!("body error: {e}"),
                |b| String::from_utf8_lossy(&b).into_owned(),
            ),
        )
    }

    /// Extension servers that answer garbage, a truncated body, a body larger than it said,
    /// or nothing: the client gets 503 in words, or the stream ends with an error; never a
    /// panic or a hang. Requests of other groups are not the proxy's.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hostile_extension_servers_get_503s_or_cut_streams() {
        let garbage = hostile_server(b"\x00\xffnot http at all\r\n\r\n").await;
        let (status, body) = through(routing_to(garbage), "/apis/g/v1/things").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        let silent = hostile_server(b"").await;
        let (status, body) = through(routing_to(silent), "/apis/g/v1/things").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
        assert_eq!(
            body,
            "error trying to reach service: the connection was closed\n"
        );
        let truncated = hostile_server(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"items\":[",
        )
        .await;
        let (status, body) = through(routing_to(truncated), "/apis/g/v1/things").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.starts_with("body error"), "{body}");
        let refused = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let (status, body) = through(routing_to(refused), "/apis/g/v1").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(
            body,
            format!("dial tcp 127.0.0.1:{refused}: connect: connection refused\n")
        );
        // Not the proxy's: the server's own routes answer.
        let (status, _) = through(routing_to(refused), "/apis/other/v1/things").await;
        assert_eq!(status, StatusCode::NO_CONTENT);
    }

    /// An extension server over TLS on a loopback port that answers every request with an
    /// endless chunked body, 64 KiB chunks `pause` apart, counting the bytes it got written.
    async fn endless_server(written: Arc<std::sync::atomic::AtomicUsize>, pause: Duration) -> u16 {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        serve_tls(move |mut tls| {
            let written = written.clone();
            async move {
                let mut head = [0u8; 4096];
                let _ = tls.read(&mut head).await;
                let start = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
                if tls.write_all(start).await.is_err() {
                    return;
                }
                let chunk = format!("10000\r\n{}\r\n", "x".repeat(0x10000));
                while tls.write_all(chunk.as_bytes()).await.is_ok() {
                    written.fetch_add(0x10000, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(pause).await;
                }
            }
        })
        .await
    }

    /// The proxy's answer to a GET of `path`, its body not read.
    async fn answer(shared: Shared, path: &str) -> Response {
        use tower::ServiceExt as _;
        let router = axum::Router::new()
            .fallback(|| async { StatusCode::NO_CONTENT })
            .layer(axum::middleware::from_fn_with_state(shared, proxied));
        let mut request = axum::http::Request::get(path).body(Body::empty()).unwrap();
        request.extensions_mut().insert(UserInfo {
            name: "alice".into(),
            ..UserInfo::default()
        });
        router.oneshot(request).await.unwrap()
    }

    /// An answer bigger than any buffer, to a client that does not read it: the extension
    /// server is held back (what the proxy holds stays bounded), the client gets it as it
    /// reads; a client that goes away stops it. A slow answer reaches the client as it comes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn huge_and_slow_answers_are_streamed_not_held() {
        use http_body_util::BodyExt as _;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let written = Arc::new(AtomicUsize::new(0));
        let port = endless_server(written.clone(), Duration::ZERO).await;
        let response = answer(routing_to(port), "/apis/g/v1/things").await;
        assert_eq!(response.status(), StatusCode::OK);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let unread = written.load(Ordering::SeqCst);
        assert!(
            unread < 32 << 20,
            "{unread} bytes written to a client that reads nothing"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(written.load(Ordering::SeqCst) < 32 << 20);
        // Read 128 MiB of it, as a client that reads would.
        let mut body = response.into_body();
        let mut read = 0usize;
        while read < 128 << 20 {
            let frame = tokio::time::timeout(Duration::from_secs(20), body.frame())
                .await
                .expect("the next frame in time")
                .expect("more")
                .expect("a frame");
            read += frame.data_ref().map_or(0, |data| data.len());
        }
        // Gone: the extension server's writes stop.
        drop(body);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let after_drop = written.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(written.load(Ordering::SeqCst) - after_drop < 32 << 20);

        let trickled = Arc::new(AtomicUsize::new(0));
        let slow = endless_server(trickled.clone(), Duration::from_millis(200)).await;
        let response = answer(routing_to(slow), "/apis/g/v1/things").await;
        let mut body = response.into_body();
        let first = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("the first chunk before the answer ends");
        assert!(first.is_some());
    }

    /// An extension server over TLS that switches every request that asks to the `echo`
    /// protocol and echoes what comes after; others get 400.
    async fn echo_server() -> u16 {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        serve_tls(|mut tls| async move {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && matches!(tls.read(&mut byte).await, Ok(1)) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_lowercase();
            if !(head.contains("upgrade: echo") && head.contains("x-remote-user: alice")) {
                let refused = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
                let _ = tls.write_all(refused).await;
                return;
            }
            let switched =
                b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n";
            if tls.write_all(switched).await.is_err() {
                return;
            }
            let mut buffer = [0u8; 1024];
            while let Ok(read @ 1..) = tls.read(&mut buffer).await {
                if tls.write_all(&buffer[..read]).await.is_err() {
                    return;
                }
            }
        })
        .await
    }

    /// A request that upgrades its connection (as `kubectl exec` and `port-forward` do) is
    /// switched at the extension server and the bytes go both ways through the proxy; the
    /// user goes in the front-proxy headers as for any request.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn upgraded_connections_are_proxied_both_ways() {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let shared = routing_to(echo_server().await);
        let router = axum::Router::new()
            .fallback(|| async { StatusCode::NO_CONTENT })
            .layer(axum::middleware::from_fn_with_state(shared, proxied))
            .layer(axum::middleware::from_fn(
                |mut request: Request, next: Next| async move {
                    request.extensions_mut().insert(UserInfo {
                        name: "alice".into(),
                        ..UserInfo::default()
                    });
                    next.run(request).await
                },
            ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
        client
            .write_all(
                b"POST /apis/g/v1/namespaces/ns/things/t/exec HTTP/1.1\r\nHost: a\r\n\
                  Connection: Upgrade\r\nUpgrade: echo\r\nContent-Length: 0\r\n\r\n",
            )
            .await
            .unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            assert_eq!(client.read(&mut byte).await.unwrap(), 1, "{head:?}");
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).to_lowercase();
        assert!(head.starts_with("http/1.1 101"), "{head}");
        assert!(head.contains("upgrade: echo"), "{head}");
        for message in [&b"ping"[..], b"a longer message, twice over"] {
            client.write_all(message).await.unwrap();
            let mut echoed = vec![0u8; message.len()];
            tokio::time::timeout(Duration::from_secs(10), client.read_exact(&mut echoed))
                .await
                .expect("echoed in time")
                .unwrap();
            assert_eq!(echoed, message);
        }
        // Without `Connection: Upgrade` the same request is an ordinary one (the echo
        // server refuses it).
        let (status, _) = through(routing_to(echo_server().await), "/apis/g/v1/things").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        // A server that switches protocols unasked gets no connection of the client's.
        let unasked = hostile_server(
            b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n",
        )
        .await;
        let (status, body) = through(routing_to(unasked), "/apis/g/v1/things").await;
        assert!(
            matches!(
                status,
                StatusCode::BAD_GATEWAY | StatusCode::SERVICE_UNAVAILABLE
            ),
            "{status} {body}"
        );
    }

    /// Discovery read from an extension server that answers garbage, or a discovery
    /// document cut short: the group-version is listed, marked `Stale`, without resources;
    /// nothing panics or hangs.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn hostile_discovery_documents_leave_the_group_stale() {
        for answer in [
            &b"\x00\xffnot http\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList\r\nContent-Length: 100000\r\n\r\n{\"items\":[",
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList\r\nContent-Length: 9\r\n\r\n[[[[[[[[[",
        ] {
            let shared = routing_to(hostile_server(answer).await);
            tokio::time::timeout(
                Duration::from_secs(30),
                crate::discovery::refresh(&shared.routing, &shared.discovery),
            )
            .await
            .expect("refreshed in time");
            let mut list = serde_json::json!({"kind": "APIGroupList", "groups": []});
            shared.discovery.merge_group_list(&mut list, &Default::default());
            assert_eq!(list["groups"][0]["name"], "g");
            let mut aggregated = serde_json::json!({"items": []});
            shared.discovery.merge_aggregated(&mut aggregated, &Default::default());
            assert_eq!(
                aggregated["items"][0]["versions"][0],
                serde_json::json!({"version": "v1", "freshness": "Stale"})
            );
        }
    }
}
