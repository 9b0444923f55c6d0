//! kube-apiserver's health endpoints on a server of ours: a storage that stops answering
//! fails `etcd` (and `/readyz`'s `etcd-readiness`), an embedding server's failing check fails
//! its endpoints with the reason withheld but given at its own path, and `/readyz` fails once
//! the server stops.

use std::time::Duration;

use apfkit_apiserver::http::HealthCheck;
use apfkit_apiserver::storage::etcd::EtcdBackend;
use apfkit_apiserver::storage::memory::MemoryBackend;
use apfkit_test_support::etcd::Etcd;

use crate::support;

#[tokio::test]
async fn a_failing_check_fails_its_endpoints_with_its_reason_withheld() {
    let running = support::start_configured(MemoryBackend::default(), |server| {
        server.with_health_checks([
            HealthCheck::post_start_hook("bootstrap"),
            HealthCheck::new("broken", || Err("the reason".to_owned())),
        ])
    })
    .await;
    assert_eq!(
        running.get_text("/healthz").await,
        (
            500,
            "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/bootstrap ok\n\
             [-]broken failed: reason withheld\nhealthz check failed\n"
                .to_owned()
        )
    );
    assert_eq!(
        running.get_text("/livez/broken").await,
        (500, "internal server error: the reason\n".to_owned())
    );
    assert_eq!(
        running.get_text("/livez/poststarthook/bootstrap").await,
        (200, "ok".to_owned())
    );
    // Excluded, it passes: the answer lists it so, and what could not be excluded.
    let (status, body) = running
        .get_text("/readyz?exclude=broken&exclude=gone&verbose")
        .await;
    assert_eq!(status, 200);
    assert!(body.contains("[+]broken excluded: ok\n"), "{body}");
    assert!(
        body.contains("[+]informer-sync ok\n[+]poststarthook/bootstrap ok\n"),
        "{body}"
    );
    assert!(
        body.ends_with(
            "[+]shutdown ok\nwarn: some health checks cannot be excluded: no matches for \"gone\"\nreadyz check passed\n"
        ),
        "{body}"
    );
    assert_eq!(running.get_text("/readyz/gone").await.0, 404);
    assert_eq!(running.get_text("/healthz/shutdown").await.0, 404);
    // Once the server stops, `/readyz` fails; `/livez` does not.
    running.server.stop();
    assert_eq!(
        running.get_text("/readyz/shutdown").await,
        (
            500,
            "internal server error: process is shutting down\n".to_owned()
        )
    );
    assert_eq!(
        running.get_text("/livez?exclude=broken").await,
        (200, "ok".to_owned())
    );
}

#[tokio::test]
async fn a_storage_that_stops_answering_fails_etcd() {
    let mut etcd = Etcd::start();
    let backend = EtcdBackend::connect(std::slice::from_ref(&etcd.endpoint))
        .await
        .expect("etcd");
    let running = support::start_configured(backend, |server| server).await;
    assert_eq!(running.get_text("/readyz").await, (200, "ok".to_owned()));
    etcd.stop();
    let (status, body) = tokio::time::timeout(Duration::from_secs(20), running.get_text("/readyz"))
        .await
        .expect("answered within the checks' time limits");
    assert_eq!(status, 500);
    assert!(
        body.starts_with("[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n"),
        "{body}"
    );
    let (status, body) = running.get_text("/healthz/etcd").await;
    assert_eq!(status, 500);
    assert!(body.starts_with("internal server error: "), "{body}");
}
