//! The proxy held to extension servers: hostile, endless, echoing, and HTTP/2 servers whose
//! streams and windows clients can hold.

use apfkit_test_support::extension::{self, serve_tls};

use super::*;

#[test]
fn paths_under_a_group_version_are_routed_by_it() {
    assert_eq!(
        group_version("/apis/g/v1")
            .map(|gv| gv.api_version())
            .as_deref(),
        Some("g/v1")
    );
    assert_eq!(
        group_version("/apis/g/v1/namespaces/ns/widgets")
            .map(|gv| gv.api_version())
            .as_deref(),
        Some("g/v1")
    );
    assert_eq!(
        group_version("/apis/g/v1/")
            .map(|gv| gv.api_version())
            .as_deref(),
        Some("g/v1")
    );
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

/// An extension server that answers with hostile bytes over TLS, on a loopback port:
/// each connection gets `answer` after the request's head, then is closed.
async fn hostile_server(answer: &'static [u8]) -> u16 {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    serve_tls(Vec::new(), move |mut tls| async move {
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
        GroupVersion::from_static("g", "v1"),
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
    serve_tls(Vec::new(), move |mut tls| {
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
    serve_tls(Vec::new(), |mut tls| async move {
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

/// Go's transport opens another connection when a server's streams are all taken: 200
/// watches that hold every stream hyper's server allows on a connection leave other
/// requests to the same APIService answered, over connections of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_holding_every_stream_of_a_connection_leave_other_requests_answered() {
    let shared = routing_to(extension::http2().await);
    let mut watches = Vec::new();
    for _ in 0..200 {
        let watch = tokio::time::timeout(
            Duration::from_secs(10),
            answer(shared.clone(), "/apis/g/v1/watch/endless"),
        )
        .await
        .expect("the watch started in time");
        assert_eq!(watch.status(), StatusCode::OK);
        watches.push(watch);
    }
    let (status, body) = through(shared.clone(), "/apis/g/v1/things").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "{}"));
    let table = shared.routing.table();
    let Some(Route::Remote(remote)) = table.routes.get(&GroupVersion::from_static("g", "v1"))
    else {
        panic!("g/v1 is routed to the server");
    };
    let connections = remote.backend.connections().expect("a client").opened();
    assert_eq!(connections, 3, "100 streams a connection, then another");
    // The watches' places are given back as they end.
    drop(watches);
    let (status, _) = through(shared.clone(), "/apis/g/v1/things").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(remote.backend.connections().unwrap().opened(), 3);
}

/// Go's windows (1 GiB a connection, 4 MiB a stream): answers their clients do not read
/// fill their own streams' windows, never the connection's, so that other requests on the
/// same connection are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_nobody_reads_hold_back_only_their_own_streams() {
    let shared = routing_to(extension::http2().await);
    let mut unread = Vec::new();
    for _ in 0..5 {
        let watch = answer(shared.clone(), "/apis/g/v1/watch/flood").await;
        assert_eq!(watch.status(), StatusCode::OK);
        unread.push(watch);
    }
    // Time for the extension to fill what it may send.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (status, body) = through(shared.clone(), "/apis/g/v1/things").await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "{}"));
}

/// kube-aggregator answers 502 in place of an extension's redirect (CVE-2022-3172); a 3xx
/// without `Location` is passed on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_of_extension_servers_are_not_passed_on() {
    let shared = routing_to(extension::http2().await);
    let response = answer(shared.clone(), "/apis/g/v1/redirect").await;
    assert_eq!(response.status(), StatusCode::BAD_GATEWAY);
    assert!(response.headers().get(header::LOCATION).is_none());
    let body = axum::body::to_bytes(response.into_body(), 1 << 10)
        .await
        .unwrap();
    assert_eq!(
        &body[..],
        b"the backend attempted to redirect this request, which is not permitted"
    );
    let (status, _) = through(shared, "/apis/g/v1/not-modified").await;
    assert_eq!(status, StatusCode::NOT_MODIFIED);
}
