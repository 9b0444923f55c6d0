//! Upstream's `maxinflight_test.go` (k8s.io/apiserver `pkg/server/filters`), ported: requests
//! that hang hold their places, watches are not counted, requests past a limit are refused at
//! once, `system:masters` is always served, and the filter recovers once requests finish.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{Next, from_fn, from_fn_with_state};
use http::StatusCode;
use tokio::sync::{Semaphore, watch};
use tower::ServiceExt as _;

use super::MaxInFlight;
use crate::auth::UserInfo;

/// `createMaxInflightServer`: requests whose path contains `dontwait` return at once; the
/// others note their call (while `counting`) and hang until `block` is released.
#[derive(Clone)]
struct Harness {
    calls: Arc<Semaphore>,
    counting: Arc<AtomicBool>,
    block: watch::Receiver<bool>,
}

async fn handler(State(harness): State<Harness>, request: Request) -> &'static str {
    if request.uri().path().contains("dontwait") {
        return "";
    }
    if harness.counting.load(Ordering::SeqCst) {
        harness.calls.add_permits(1);
    }
    let mut block = harness.block.clone();
    let _ = block.wait_for(|released| *released).await;
    ""
}

/// `withFakeUser`: the groups of the `Groups` header.
async fn fake_user(mut request: Request, next: Next) -> axum::response::Response {
    let groups: Vec<String> = request
        .headers()
        .get_all("Groups")
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    if !groups.is_empty() {
        request.extensions_mut().insert(UserInfo {
            groups,
            ..UserInfo::default()
        });
    }
    next.run(request).await
}

fn server(read_only: usize, mutating: usize) -> (Router, Harness, watch::Sender<bool>) {
    let (release, block) = watch::channel(false);
    let harness = Harness {
        calls: Arc::new(Semaphore::new(0)),
        counting: Arc::new(AtomicBool::new(true)),
        block,
    };
    let router = Router::new()
        .fallback(handler)
        .with_state(harness.clone())
        .layer(from_fn_with_state(
            MaxInFlight::new(read_only, mutating),
            MaxInFlight::limit,
        ))
        .layer(from_fn(fake_user));
    (router, harness, release)
}

async fn send(router: &Router, method: &str, uri: &str, groups: &[&str]) -> StatusCode {
    let mut request = Request::builder().method(method).uri(uri);
    for group in groups {
        request = request.header("Groups", *group);
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::from("foo bar")).unwrap())
        .await
        .unwrap();
    let status = response.status();
    // Read the body to its end, as a client does: the place is given back there.
    let _ = axum::body::to_bytes(response.into_body(), usize::MAX).await;
    status
}

/// Sends `method uri` in the background; the handle answers its status.
fn hang(
    router: &Router,
    method: &'static str,
    uri: &'static str,
) -> tokio::task::JoinHandle<StatusCode> {
    let router = router.clone();
    tokio::spawn(async move { send(&router, method, uri, &[]).await })
}

#[tokio::test]
async fn test_max_in_flight_non_mutating() {
    const ALLOWED: usize = 3;
    let (router, harness, release) = server(ALLOWED, 1);
    let mut hanging = Vec::new();
    // Watches hang but are not counted.
    for _ in 0..ALLOWED {
        hanging.push(hang(
            &router,
            "GET",
            "/api/v1/namespaces/default/wait?watch=true",
        ));
    }
    assert_eq!(send(&router, "GET", "/dontwait", &[]).await, StatusCode::OK);
    // These hang and are counted: the server is saturated.
    for _ in 0..ALLOWED {
        hanging.push(hang(&router, "GET", "/"));
    }
    let _ = harness
        .calls
        .acquire_many(2 * ALLOWED as u32)
        .await
        .unwrap();
    harness.counting.store(false, Ordering::SeqCst);
    // Refused at once, twice: a refusal does not block.
    for _ in 0..2 {
        assert_eq!(
            send(&router, "GET", "/", &[]).await,
            StatusCode::TOO_MANY_REQUESTS
        );
    }
    // Long-running requests still work, and so does a mutating one.
    assert_eq!(
        send(
            &router,
            "GET",
            "/api/v1/watch/namespaces/default/dontwait",
            &[]
        )
        .await,
        StatusCode::OK
    );
    assert_eq!(
        send(&router, "POST", "/dontwait", &[]).await,
        StatusCode::OK
    );
    release.send(true).unwrap();
    for request in hanging {
        assert_eq!(request.await.unwrap(), StatusCode::OK);
    }
    assert_eq!(send(&router, "GET", "/dontwait", &[]).await, StatusCode::OK);
}

/// A server of one read-only and `ALLOWED` mutating places, those all taken by POSTs that
/// hang until `release` (the setup of upstream's mutating and masters tests).
async fn saturated_with_posts() -> (
    Router,
    watch::Sender<bool>,
    Vec<tokio::task::JoinHandle<StatusCode>>,
) {
    const ALLOWED: usize = 3;
    let (router, harness, release) = server(1, ALLOWED);
    let hanging: Vec<_> = (0..ALLOWED)
        .map(|_| hang(&router, "POST", "/foo/bar"))
        .collect();
    let _ = harness.calls.acquire_many(ALLOWED as u32).await.unwrap();
    harness.counting.store(false, Ordering::SeqCst);
    (router, release, hanging)
}

#[tokio::test]
async fn test_max_in_flight_mutating() {
    let (router, release, hanging) = saturated_with_posts().await;
    for _ in 0..2 {
        assert_eq!(
            send(&router, "POST", "/foo/bar/", &[]).await,
            StatusCode::TOO_MANY_REQUESTS
        );
    }
    assert_eq!(send(&router, "GET", "/dontwait", &[]).await, StatusCode::OK);
    release.send(true).unwrap();
    for request in hanging {
        assert_eq!(request.await.unwrap(), StatusCode::OK);
    }
    assert_eq!(send(&router, "POST", "/foo/bar", &[]).await, StatusCode::OK);
}

#[tokio::test]
async fn test_max_in_flight_skips_masters() {
    let (router, release, hanging) = saturated_with_posts().await;
    for _ in 0..2 {
        assert_eq!(
            send(&router, "POST", "/dontwait", &["system:masters"]).await,
            StatusCode::OK
        );
    }
    release.send(true).unwrap();
    for request in hanging {
        assert_eq!(request.await.unwrap(), StatusCode::OK);
    }
}

/// The response to a GET of `/dontwait`, its body not read yet.
async fn respond(router: &Router) -> axum::response::Response {
    router
        .clone()
        .oneshot(
            Request::builder()
                .uri("/dontwait")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap()
}

/// The 429 is kube-apiserver's `tooManyRequests`, and a place is held until the response's
/// body ends, not only until its head is ready.
#[tokio::test]
async fn a_refusal_is_kube_apiservers_and_a_place_is_held_until_the_body_ends() {
    let (router, _, _release) = server(1, 1);
    let held = respond(&router).await;
    assert_eq!(held.status(), StatusCode::OK);
    let refused = respond(&router).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let headers = refused.headers();
    assert_eq!(headers["retry-after"], "1");
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let body = axum::body::to_bytes(refused.into_body(), usize::MAX)
        .await
        .unwrap();
    assert_eq!(&body[..], b"Too many requests, please try again later.\n");
    drop(held);
    assert_eq!(send(&router, "GET", "/dontwait", &[]).await, StatusCode::OK);
    // No limit at all with zeros.
    let (unlimited, _, _release) = server(0, 0);
    let mut answers = Vec::new();
    for _ in 0..5 {
        answers.push(respond(&unlimited).await);
    }
    assert!(answers.iter().all(|a| a.status() == StatusCode::OK));
}
