//! The HTTPS conversion webhook on loopback, driven by a real TLS client (rustls) speaking
//! HTTP/1.1 (hyper): answers, limits, hostile clients, certificate rotation and shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apfkit_example_widgets::api::SCHEME;
use apfkit_https::webhook::{Webhook, WebhookConfig, WebhookError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::CertificateDer;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

use super::tls;
use tls::{connect, write_certificate};

struct Server {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<Result<(), WebhookError>>,
    dir: tempfile::TempDir,
    trusted: CertificateDer<'static>,
}

async fn start(configure: impl FnOnce(&mut WebhookConfig)) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let trusted = write_certificate(dir.path(), "first");
    let mut config = WebhookConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dir.path().join("tls.crt"),
        dir.path().join("tls.key"),
    );
    configure(&mut config);
    let webhook = Webhook::bind(config, &SCHEME).await.unwrap();
    let address = webhook.local_addr();
    let (stop, stopped) = oneshot::channel::<()>();
    let done = tokio::spawn(webhook.serve(async {
        let _ = stopped.await;
    }));
    Server {
        address,
        stop: Some(stop),
        done,
        dir,
        trusted,
    }
}

/// One HTTP/1.1 request over a new TLS connection: status and body.
async fn request(server: &Server, method: &str, path: &str, body: Vec<u8>) -> (u16, Vec<u8>) {
    let stream = connect(server.address, &server.trusted).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, body.to_vec())
}

fn conversion_review(uid: &str, replicas: i64) -> Vec<u8> {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": uid,
            "desiredAPIVersion": "example.com/v1alpha1",
            "objects": [{
                "apiVersion": "example.com/v1",
                "kind": "Widget",
                "metadata": {"name": uid},
                "spec": {"replicas": replicas, "paused": true},
            }],
        },
    })
    .to_string()
    .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converts_over_https_and_reports_health() {
    let server = start(|_| {}).await;
    let (status, body) = request(&server, "POST", "/convert", conversion_review("u-1", 4)).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let answer: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(answer["response"]["uid"], "u-1");
    assert_eq!(
        answer["response"]["convertedObjects"][0],
        json!({
            "apiVersion": "example.com/v1alpha1",
            "kind": "Widget",
            "metadata": {"name": "u-1", "annotations": {"widgets.example.com/paused": "true"}},
            "spec": {"size": 4},
        })
    );
    assert_eq!(
        request(&server, "GET", "/healthz", Vec::new()).await,
        (200, b"ok".to_vec())
    );
    assert_eq!(request(&server, "GET", "/convert", Vec::new()).await.0, 405);
    assert_eq!(request(&server, "POST", "/other", Vec::new()).await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reviews_each_get_their_own_answer() {
    let server = Arc::new(start(|_| {}).await);
    let mut tasks = Vec::new();
    for i in 0..64 {
        let server = server.clone();
        tasks.push(tokio::spawn(async move {
            let uid = format!("uid-{i}");
            let (status, body) =
                request(&server, "POST", "/convert", conversion_review(&uid, i)).await;
            let answer: Value = serde_json::from_slice(&body).unwrap();
            (status, uid, answer)
        }));
    }
    for task in tasks {
        let (status, uid, answer) = task.await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(answer["response"]["uid"], uid.as_str());
        let replicas: i64 = uid.trim_start_matches("uid-").parse().unwrap();
        assert_eq!(
            answer["response"]["convertedObjects"][0]["spec"]["size"],
            replicas
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_foreign_and_oversized_requests_are_refused_and_the_server_stays_up() {
    let server = start(|config| config.max_body = 64 << 10).await;
    let (status, body) = request(&server, "POST", "/convert", b"{\"apiVersion\":".to_vec()).await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).starts_with("not a ConversionReview: EOF"));
    let admission =
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}});
    let (status, body) = request(
        &server,
        "POST",
        "/convert",
        admission.to_string().into_bytes(),
    )
    .await;
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("unsupported review"));
    let mut huge = conversion_review("big", 1);
    huge.extend(std::iter::repeat_n(b' ', 100 << 10));
    assert_eq!(request(&server, "POST", "/convert", huge).await.0, 413);

    // Not TLS at all: the handshake fails, the connection closes.
    let mut plain = TcpStream::connect(server.address).await.unwrap();
    plain
        .write_all(b"POST /convert HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), plain.read_to_end(&mut buffer)).await;
    assert!(read.is_ok(), "the server closed the plain-text connection");
    // TLS, then garbage instead of HTTP: 400 from the HTTP layer, then close.
    let mut stream = connect(server.address, &server.trusted).await.unwrap();
    stream.write_all(b"\x00\x01garbage\r\n\r\n").await.unwrap();
    let mut buffer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), stream.read_to_end(&mut buffer))
        .await
        .unwrap();
    assert!(
        buffer.starts_with(b"HTTP/1.1 400"),
        "{}",
        String::from_utf8_lossy(&buffer)
    );

    assert_eq!(request(&server, "GET", "/healthz", Vec::new()).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_clients_are_dropped_after_the_handshake_deadline() {
    let server = start(|config| config.handshake_timeout = Duration::from_millis(300)).await;
    // Connects and says nothing: no TLS hello.
    let mut silent = TcpStream::connect(server.address).await.unwrap();
    let mut buffer = [0u8; 16];
    let closed = tokio::time::timeout(Duration::from_secs(5), silent.read(&mut buffer)).await;
    assert!(matches!(closed, Ok(Ok(0)) | Ok(Err(_))), "{closed:?}");
    // Finishes TLS, then sends half a request head.
    let mut slow = connect(server.address, &server.trusted).await.unwrap();
    slow.write_all(b"POST /convert HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let mut buffer = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), slow.read_to_end(&mut buffer)).await;
    assert!(
        closed.is_ok(),
        "the server did not wait forever for the rest of the head"
    );
    assert_eq!(request(&server, "GET", "/healthz", Vec::new()).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_certificate_is_served_to_new_connections() {
    let mut server = start(|config| config.reload_interval = Duration::from_millis(50)).await;
    let served = |stream: &tokio_rustls::client::TlsStream<TcpStream>| {
        stream.get_ref().1.peer_certificates().unwrap()[0].clone()
    };
    let first = connect(server.address, &server.trusted).await.unwrap();
    assert_eq!(served(&first), server.trusted);

    // A broken pair is not served: the working one stays.
    std::fs::write(server.dir.path().join("tls.crt"), "not a certificate").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let still = connect(server.address, &server.trusted).await.unwrap();
    assert_eq!(served(&still), server.trusted);

    let second = write_certificate(server.dir.path(), "second");
    let mut rotated = None;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if let Ok(stream) = connect(server.address, &second).await {
            rotated = Some(stream);
            break;
        }
    }
    let rotated = rotated.expect("the new certificate is served within 5 s");
    assert_eq!(served(&rotated), second);
    assert!(
        connect(server.address, &server.trusted).await.is_err(),
        "the old one is not served any more"
    );
    server.trusted = second;
    assert_eq!(request(&server, "GET", "/healthz", Vec::new()).await.0, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_requests_in_flight_and_closes_the_port() {
    let mut server = start(|_| {}).await;
    // A request already on its way when shutdown starts still gets its answer.
    let stream = connect(server.address, &server.trusted).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    server.stop.take().unwrap().send(()).unwrap();
    let in_flight = sender
        .send_request(
            hyper::Request::post("/convert")
                .header("host", "localhost")
                .body(Full::new(Bytes::from(conversion_review("last", 1))))
                .unwrap(),
        )
        .await;
    // Either answered, or the connection was closed between requests: never a hang.
    if let Ok(response) = in_flight {
        assert_eq!(response.status(), 200);
    }
    let result = tokio::time::timeout(Duration::from_secs(10), &mut server.done)
        .await
        .expect("serve returns after shutdown");
    result.unwrap().unwrap();
    assert!(
        TcpStream::connect(server.address).await.is_err(),
        "the port is closed"
    );
}

#[tokio::test]
async fn unusable_certificates_and_paths_are_errors_at_bind() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tls.crt"), "junk").unwrap();
    std::fs::write(dir.path().join("tls.key"), "junk").unwrap();
    let config = WebhookConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        dir.path().join("tls.crt"),
        dir.path().join("tls.key"),
    );
    let Err(err) = Webhook::bind(config.clone(), &SCHEME).await else {
        panic!("junk certificate accepted");
    };
    assert!(err.to_string().contains("tls.crt"), "{err}");

    // A key that does not belong to the certificate.
    write_certificate(dir.path(), "one");
    let other = tempfile::tempdir().unwrap();
    write_certificate(other.path(), "two");
    std::fs::copy(other.path().join("tls.key"), dir.path().join("tls.key")).unwrap();
    let Err(err) = Webhook::bind(config.clone(), &SCHEME).await else {
        panic!("mismatched key accepted");
    };
    assert!(err.to_string().contains("tls.key"), "{err}");

    let missing = WebhookConfig::new(
        "127.0.0.1:0".parse().unwrap(),
        "/nonexistent/tls.crt",
        "/nonexistent/tls.key",
    );
    let Err(err) = Webhook::bind(missing, &SCHEME).await else {
        panic!()
    };
    assert!(err.to_string().starts_with("/nonexistent/tls.crt"), "{err}");

    write_certificate(dir.path(), "three");
    let mut bad_path = config;
    bad_path.path = "convert".to_owned();
    let Err(err) = Webhook::bind(bad_path, &SCHEME).await else {
        panic!()
    };
    assert!(err.to_string().contains("must start with '/'"), "{err}");
}
