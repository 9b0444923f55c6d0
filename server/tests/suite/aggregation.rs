//! The aggregator in front of a hostile HTTP/2 extension server behind an APIService: an
//! answer that never ends is cut at the request's deadline, as kube-apiserver's timeout
//! filter cuts a proxied request that is not long-running, and a redirect is not passed on.

use std::time::{Duration, Instant};

use apfkit_server::{Config, Endpoints, start};
use http_body_util::BodyExt as _;
use serde_json::json;

use super::support::{Sent, admin, client, send};

const GROUP: &str = "/apis/hostile.example.com/v1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxied_answer_is_cut_at_its_deadline_and_redirects_are_not_passed_on() {
    let port = apfkit_test_support::extension::http2().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::new(dir.path().join("data"));
    config.endpoints = Endpoints::LoopbackAllowed;
    let server = start(config).await.unwrap();
    let client = client(server.kubeconfig(), "apfkit").await;
    for (path, object) in [
        (
            "/api/v1/namespaces/ns/services",
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "api", "namespace": "ns"},
                   "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}}),
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices",
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                   "metadata": {"name": "api-1", "namespace": "ns",
                                "labels": {"kubernetes.io/service-name": "api"}},
                   "addressType": "IPv4",
                   "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
                   "ports": [{"name": "https", "port": port}]}),
        ),
        (
            "/apis/apiregistration.k8s.io/v1/apiservices",
            json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                   "metadata": {"name": "v1.hostile.example.com"},
                   "spec": {"group": "hostile.example.com", "version": "v1",
                            "service": {"namespace": "ns", "name": "api", "port": 443},
                            "insecureSkipTLSVerify": true,
                            "groupPriorityMinimum": 1000, "versionPriority": 15}}),
        ),
    ] {
        admin(&client, "POST", path, Sent::Json(object)).await;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while send(&client, "GET", GROUP, &Sent::Nothing, None).await.code != 200 {
        assert!(
            Instant::now() < deadline,
            "the APIService never became available"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // An answer that never ends, asked with a deadline of 2 s: its stream is cut then.
    let request = http::Request::get(format!("{GROUP}/endless?timeout=2s"))
        .body(kube::client::Body::empty())
        .unwrap();
    let started = Instant::now();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match body.frame().await {
                Some(Ok(_)) => {}
                Some(Err(_)) => return "cut",
                None => return "ended",
            }
        }
    })
    .await
    .expect("the answer ends by its deadline");
    let took = started.elapsed();
    assert_eq!(ended, "cut");
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(10),
        "{took:?}"
    );

    // A redirect is answered 502.
    let redirected = send(
        &client,
        "GET",
        &format!("{GROUP}/redirect"),
        &Sent::Nothing,
        None,
    )
    .await;
    assert_eq!(redirected.code, 502, "{}", redirected.body);
    server.shutdown().await;
}
