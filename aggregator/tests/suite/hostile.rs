//! The aggregator in front of a hostile HTTP/2 extension server behind an APIService: an
//! answer that never ends is cut at the request's deadline, as kube-apiserver's timeout
//! filter cuts a proxied request that is not long-running, and a redirect is not passed on.

use std::time::{Duration, Instant};

use apfkit_test_support::requests::{Sent, admin, client, send, until};
use http_body_util::BodyExt as _;

use super::support::{GROUP, api_service, endpoint_slice, serve, service};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxied_answer_is_cut_at_its_deadline_and_redirects_are_not_passed_on() {
    let port = apfkit_test_support::extension::http2().await;
    let dir = tempfile::tempdir().unwrap();
    let server = serve(&dir).await;
    let client = client(server.kubeconfig(), "apfkit").await;
    for (path, object) in [service(port), endpoint_slice(port), api_service()] {
        admin(&client, "POST", path, Sent::Json(object)).await;
    }
    let root = format!("/apis/{GROUP}/v1");
    assert!(
        until(Duration::from_secs(30), || async {
            send(&client, "GET", &root, &Sent::Nothing, None).await.code == 200
        })
        .await,
        "the APIService never became available"
    );

    // An answer that never ends, asked with a deadline of 2 s: its stream is cut then.
    let request = http::Request::get(format!("{root}/endless?timeout=2s"))
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
        &format!("{root}/redirect"),
        &Sent::Nothing,
        None,
    )
    .await;
    assert_eq!(redirected.code, 502, "{}", redirected.body);
    server.shutdown().await;
}
