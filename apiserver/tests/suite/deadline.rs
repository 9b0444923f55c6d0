//! The request deadline and the timeout filter, held to k8s.io/apiserver's own tests:
//! `pkg/endpoints/filters/request_deadline_test.go` (`TestWithRequestDeadline`) and
//! `pkg/server/filters/timeout_test.go` (`TestTimeout`), through the HTTPS server with a
//! layer behind authentication that is slow, panics, or notes the deadline it was given.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use apfkit_apiserver::http::Deadline;
use apfkit_apiserver::storage::memory::MemoryBackend;
use axum::extract::Request;
use axum::middleware::Next;
use http_body_util::BodyExt as _;

use crate::support::{self, FLOW_SCHEMAS, flow_schema};

/// The deadline each request was given (`None` for none), in the order they came.
type Seen = Arc<Mutex<Vec<Option<Duration>>>>;

/// A server whose layer behind authentication notes each request's deadline, then sleeps
/// 2 s when the request has `x-test: slow` and panics when it has `x-test: panic`.
async fn start() -> (support::Running, Seen) {
    let seen = Seen::default();
    let noted = seen.clone();
    let layers: support::Layers = Box::new(move |router| {
        let noted = noted.clone();
        router.layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let noted = noted.clone();
                async move {
                    let deadline = request
                        .extensions()
                        .get::<Deadline>()
                        .map(|d| d.0.saturating_duration_since(tokio::time::Instant::now()));
                    noted.lock().unwrap().push(deadline);
                    match request.headers().get("x-test").map(|v| v.as_bytes()) {
                        Some(b"slow") => tokio::time::sleep(Duration::from_secs(2)).await,
                        Some(b"panic") => panic!("the test layer panics, as asked"),
                        _ => {}
                    }
                    next.run(request).await
                }
            },
        ))
    });
    let running = support::start_layered(
        MemoryBackend::default(),
        Duration::from_secs(5),
        Some(layers),
    )
    .await;
    (running, seen)
}

/// The status, the `Retry-After` header and the body of a request with `x-test: test`.
async fn ask(
    running: &support::Running,
    method: &str,
    path: &str,
    test: &str,
) -> (u16, Option<String>, Vec<u8>) {
    let body = (method == "POST").then(|| flow_schema("made-slowly", serde_json::json!({})));
    let response = running
        .send_with_headers(
            method,
            path,
            &[("content-type", "application/json"), ("x-test", test)],
            body,
        )
        .await;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, retry_after, body)
}

/// `TestWithRequestDeadline`: the deadline set for each case, seen from behind
/// authentication; the malformed timeout never reaches it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_request_deadline() {
    let (running, seen) = start().await;
    let near = |got: Option<Duration>, want: Duration| {
        let got = got.expect("a deadline");
        assert!(
            got <= want && got > want - Duration::from_secs(1),
            "{got:?}, want {want:?}"
        );
    };
    let maximum = apfkit_apiserver::http::REQUEST_TIMEOUT;
    let cases = [
        // the user specifies a valid request timeout
        (
            format!("{FLOW_SCHEMAS}?timeout=15s"),
            Some(Duration::from_secs(15)),
        ),
        // the specified timeout is 0s, default deadline is expected to be set
        (format!("{FLOW_SCHEMAS}?timeout=0s"), Some(maximum)),
        // the user does not specify any request timeout, default deadline is expected to be set
        (format!("{FLOW_SCHEMAS}?timeout="), Some(maximum)),
        // the request is long running, no deadline is expected to be set
        (
            format!("{FLOW_SCHEMAS}?watch=true&timeout=10s&timeoutSeconds=1"),
            None,
        ),
        // the timeout specified exceeds the maximum deadline allowed, the default deadline is used
        (format!("{FLOW_SCHEMAS}?timeout=1m1s"), Some(maximum)),
    ];
    for (path, want) in &cases {
        let (status, _, _) = ask(&running, "GET", path, "none").await;
        assert_eq!(status, 200, "{path}");
        let got = seen
            .lock()
            .unwrap()
            .pop()
            .expect("the request came through");
        match want {
            Some(want) => near(got, *want),
            None => assert_eq!(got, None, "{path}"),
        }
    }
    // the timeout specified is malformed, the request is aborted with HTTP 400
    let (status, _, body) = ask(
        &running,
        "GET",
        &format!("{FLOW_SCHEMAS}?timeout=foo"),
        "none",
    )
    .await;
    assert_eq!(status, 400);
    let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["reason"], "BadRequest");
    assert_eq!(
        status["message"],
        r#"invalid timeout specified in the request URL - time: invalid duration "foo""#
    );
    assert!(
        seen.lock().unwrap().is_empty(),
        "a malformed timeout is refused in front"
    );
}

/// `TestTimeout`: an answer in time is the handler's; past the deadline the client gets the
/// timeout filter's Status at once (no retry hint), while the handler runs to its end; a
/// handler that panics gets `WithPanicRecovery`'s 500; the server serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout() {
    let (running, _) = start().await;
    // No timeouts
    let (status, _, _) = ask(
        &running,
        "GET",
        &format!("{FLOW_SCHEMAS}?timeout=1s"),
        "none",
    )
    .await;
    assert_eq!(status, 200);

    // Times out: a create that takes 2 s, with 300 ms allowed.
    let started = std::time::Instant::now();
    let (status, retry_after, body) = ask(
        &running,
        "POST",
        &format!("{FLOW_SCHEMAS}?timeout=300ms"),
        "slow",
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(status, 504);
    assert_eq!(retry_after, None);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        apfkit_test_support::status::allotted_timeout()
    );
    // The handler went on: the create is done when its 2 s are over, as upstream's goroutine
    // finishes after the client was answered.
    let mut made = 0;
    for _ in 0..50 {
        made = running
            .call("GET", &format!("{FLOW_SCHEMAS}/made-slowly"), None)
            .await
            .status;
        if made == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(made, 200, "the timed-out create ran to its end");

    // Panics
    let (status, _, body) = ask(&running, "GET", FLOW_SCHEMAS, "panic").await;
    assert_eq!(status, 500);
    assert_eq!(
        String::from_utf8(body).unwrap(),
        "This request caused apiserver to panic. Look in the logs for details."
    );
    let (status, _, _) = ask(&running, "GET", FLOW_SCHEMAS, "none").await;
    assert_eq!(status, 200, "the server serves on after a panic");
}

/// A watch is long-running: no deadline ends it, even one the client asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_outlives_a_request_timeout() {
    let (running, _) = start().await;
    let mut events = running
        .watch(&format!(
            "{FLOW_SCHEMAS}?watch=true&timeout=200ms&timeoutSeconds=30"
        ))
        .await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    running
        .create_labelled("after-the-timeout", serde_json::json!({}))
        .await;
    let (kind, object) = events.next().await;
    assert_eq!(kind, "ADDED");
    assert_eq!(object["metadata"]["name"], "after-the-timeout");
}
