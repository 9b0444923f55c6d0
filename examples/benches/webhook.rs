//! Conversions per second through the HTTPS webhook, beside the same reviews answered
//! in-process (`apfkit_runtime::review::review`), in one run: their ratio is the cost of TLS,
//! HTTP and the loopback. One keep-alive connection, as kube-apiserver reuses its
//! connections. Run with `cargo bench -p apfkit-example-widgets --bench webhook`.

use apfkit_example_widgets::api::SCHEME;
use apfkit_https::webhook::{Webhook, WebhookConfig};
use apfkit_runtime::review::review;
use bytes::Bytes;
use divan::counter::ItemsCount;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::json;

#[path = "../tests/support/tls.rs"]
mod tls;

fn main() {
    divan::main();
}

/// Review sizes: one object (a GET), and a page of a list.
const OBJECTS: [usize; 2] = [1, 100];

fn body(objects: usize) -> Vec<u8> {
    let objects: Vec<_> = (0..objects)
        .map(|i| {
            json!({
                "apiVersion": "example.com/v1alpha1",
                "kind": "Widget",
                "metadata": {"name": format!("w{i}"), "namespace": "default",
                    "labels": {"app": "bench"}, "annotations": {"widgets.example.com/paused": "true"}},
                "spec": {"size": 3, "image": "registry.local:5000/widget:2.1"},
                "status": {"readyReplicas": 2},
            })
        })
        .collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "bench", "desiredAPIVersion": "example.com/v1", "objects": objects}})
    .to_string()
    .into_bytes()
}

#[divan::bench(args = OBJECTS)]
fn in_process(bencher: divan::Bencher, objects: usize) {
    let body = body(objects);
    bencher
        .counter(ItemsCount::new(objects))
        .bench_local(|| review(&SCHEME, divan::black_box(&body)).unwrap());
}

#[divan::bench(args = OBJECTS)]
fn https(bencher: divan::Bencher, objects: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let trusted = tls::write_certificate(dir.path(), "bench");
    let mut sender: SendRequest<Full<Bytes>> = runtime.block_on(async {
        let config = WebhookConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            dir.path().join("tls.crt"),
            dir.path().join("tls.key"),
        );
        let webhook = Webhook::bind(config, &SCHEME).await.unwrap();
        let address = webhook.local_addr();
        tokio::spawn(webhook.serve(std::future::pending()));
        let tls = tls::connect(address, &trusted).await.unwrap();
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(connection);
        sender
    });
    let body = Bytes::from(body(objects));
    bencher.counter(ItemsCount::new(objects)).bench_local(|| {
        runtime.block_on(async {
            // The connection is ready for the next request once the last answer was read.
            sender.ready().await.unwrap();
            let request = hyper::Request::post("/convert")
                .header("host", "localhost")
                .body(Full::new(body.clone()))
                .unwrap();
            let response = sender.send_request(request).await.unwrap();
            assert_eq!(response.status(), 200);
            response.into_body().collect().await.unwrap().to_bytes()
        })
    });
}
