//! The tower layer in front of an axum router, as kube-apiserver's APF filter answers: the
//! `X-Kubernetes-PF-*` uid headers, 429 with `Retry-After` and Go's text when a request waits
//! too long, seats held until the response body ends, and released at once for long-running
//! requests.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use apfkit_dispatcher::bootstrap;
use apfkit_dispatcher::config::Configuration;
use apfkit_dispatcher::guard::Guard;
use apfkit_dispatcher::layer::{
    ApfLayer, Attributes, FLOW_SCHEMA_UID_HEADER, PRIORITY_LEVEL_UID_HEADER,
};
use apfkit_dispatcher::watches::{WatchTracker, Watched};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::routing::get;
use futures_util::stream::{Stream, unfold};
use http_body_util::BodyExt;
use tokio::sync::Notify;
use tower::ServiceExt;

/// The bootstrap configuration with a uid on every object (`uid-<name>`), for a server of
/// `limit` seats.
fn configuration(limit: i32) -> Configuration {
    let levels = bootstrap::priority_levels().iter().cloned().map(|mut l| {
        l.metadata.uid = Some(format!(
            "uid-{}",
            l.metadata.name.clone().unwrap_or_default()
        ));
        l
    });
    let schemas = bootstrap::flow_schemas().iter().cloned().map(|mut s| {
        s.metadata.uid = Some(format!(
            "uid-{}",
            s.metadata.name.clone().unwrap_or_default()
        ));
        s
    });
    Configuration::new(
        levels.collect::<Vec<_>>(),
        schemas.collect::<Vec<_>>(),
        limit,
    )
    .unwrap()
}

/// Requests say who they are in `x-user`; `/watch` is long-running.
fn classify(request: &Request) -> Attributes {
    let user = request
        .headers()
        .get("x-user")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("alice");
    let path = request.uri().path();
    if path == "/healthz" {
        return Attributes::non_resource(user, &["system:authenticated"], "get", path);
    }
    let mut attributes = Attributes::resource(
        user,
        &["system:authenticated"],
        if path == "/watch" { "watch" } else { "get" },
        "",
        "pods",
        "default",
    );
    attributes.long_running = path == "/watch";
    attributes
}

/// A router whose `/slow` waits for `release`, and whose `/stream` and `/watch` answer a
/// body that ends only when `release` is notified.
fn app(guard: &Guard, release: Arc<Notify>) -> Router {
    app_without_layer(release).layer(ApfLayer::new(guard.clone(), classify))
}

/// [`app`]'s routes without the APF layer.
fn app_without_layer(release: Arc<Notify>) -> Router {
    let streaming = {
        let release = release.clone();
        move || {
            let release = release.clone();
            async move {
                let stream = futures_stream(release);
                Body::from_stream(stream)
            }
        }
    };
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/slow",
            get(move || {
                let release = release.clone();
                async move {
                    release.notified().await;
                    "done"
                }
            }),
        )
        .route("/stream", get(streaming.clone()))
        .route("/watch", get(streaming))
}

/// One chunk at once, then the end once `release` is notified.
fn futures_stream(release: Arc<Notify>) -> impl Stream<Item = Result<Bytes, Infallible>> {
    unfold(0, move |step| {
        let release = release.clone();
        async move {
            match step {
                0 => Some((Ok(Bytes::from_static(b"first\n")), 1)),
                1 => {
                    release.notified().await;
                    Some((Ok(Bytes::from_static(b"last\n")), 2))
                }
                _ => None,
            }
        }
    })
}

fn get_request(path: &str, user: &str) -> Request {
    Request::builder()
        .uri(path)
        .header("x-user", user)
        .body(Body::empty())
        .unwrap()
}

fn global_default_idle(guard: &Guard) -> bool {
    guard.inspect(|d| {
        let level = d.level_index("global-default").unwrap();
        d.level(level).queue_set.is_idle()
    })
}

#[tokio::test]
async fn every_classified_response_names_its_flow_schema_and_priority_level_by_uid() {
    let guard = Guard::new(configuration(600));
    let app = app(&guard, Arc::new(Notify::new()));
    let response = app.oneshot(get_request("/healthz", "alice")).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()[FLOW_SCHEMA_UID_HEADER], "uid-probes");
    assert_eq!(response.headers()[PRIORITY_LEVEL_UID_HEADER], "uid-exempt");
}

#[tokio::test(start_paused = true)]
async fn a_request_that_waits_too_long_gets_kube_apiservers_429() {
    let guard = Guard::with_wait_limit(configuration(24), Duration::from_secs(5));
    let limit = guard.inspect(|d| {
        let level = d.level_index("global-default").unwrap();
        d.level(level).current
    });
    let release = Arc::new(Notify::new());
    let app = app(&guard, release.clone());
    // Take every seat of global-default with slow requests.
    let mut slow = Vec::new();
    for _ in 0..limit {
        let app = app.clone();
        slow.push(tokio::spawn(async move {
            app.oneshot(get_request("/slow", "alice")).await.unwrap()
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let rejected = app
        .clone()
        .oneshot(get_request("/slow", "bob"))
        .await
        .unwrap();
    assert_eq!(rejected.status(), 429);
    let headers = rejected.headers();
    assert!(
        headers["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u32>()
            .unwrap()
            >= 1
    );
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers[PRIORITY_LEVEL_UID_HEADER], "uid-global-default");
    assert_eq!(headers[FLOW_SCHEMA_UID_HEADER], "uid-global-default");
    let body = rejected.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, "Too many requests, please try again later.\n");
    // The slow requests finish; the level is idle again.
    release.notify_waiters();
    for task in slow {
        let response = task.await.unwrap();
        assert_eq!(response.status(), 200);
        let _ = response.into_body().collect().await;
    }
    assert!(global_default_idle(&guard));
}

#[tokio::test]
async fn seats_are_held_until_the_body_ends_but_not_by_long_running_requests() {
    let guard = Guard::new(configuration(600));
    let release = Arc::new(Notify::new());
    let app = app(&guard, release.clone());

    let response = app
        .clone()
        .oneshot(get_request("/stream", "alice"))
        .await
        .unwrap();
    assert!(
        !global_default_idle(&guard),
        "the body is still being written"
    );
    let mut body = response.into_body();
    let first = body.frame().await.unwrap().unwrap().into_data().unwrap();
    assert_eq!(first, "first\n");
    assert!(!global_default_idle(&guard));
    release.notify_one();
    let rest = body.collect().await.unwrap().to_bytes();
    assert_eq!(rest, "last\n");
    assert!(global_default_idle(&guard), "the body ended");

    let watch = app
        .clone()
        .oneshot(get_request("/watch", "alice"))
        .await
        .unwrap();
    assert_eq!(watch.status(), 200);
    assert!(
        global_default_idle(&guard),
        "a watch holds no seat once it answers"
    );
    drop(watch);

    // A response dropped before its end frees its seats too.
    let dropped = app.oneshot(get_request("/stream", "alice")).await.unwrap();
    assert!(!global_default_idle(&guard));
    drop(dropped);
    assert!(global_default_idle(&guard));
}

/// With a watch tracker, an admitted watch counts while its response lasts (kube-apiserver's
/// filter registers it), so that a mutation of the same resource is told of one watcher.
#[tokio::test]
async fn a_watch_counts_in_the_tracker_while_its_response_lasts() {
    let guard = Guard::new(configuration(600));
    let release = Arc::new(Notify::new());
    let watches = WatchTracker::default();
    let app = app_without_layer(release.clone())
        .layer(ApfLayer::new(guard.clone(), classify).with_watch_tracker(watches.clone()));
    let update = Watched {
        api_group: "",
        resource: "pods",
        namespace: "default",
        name: "web",
    };
    assert_eq!(watches.interested("update", &update), 0);
    let mut watch = app
        .clone()
        .oneshot(get_request("/watch", "alice"))
        .await
        .unwrap();
    assert_eq!(watches.interested("update", &update), 1);
    // A GET is not a watch.
    let get = app.oneshot(get_request("/slow", "bob"));
    let pending = tokio::spawn(get);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(watches.interested("update", &update), 1);
    release.notify_waiters();
    pending.await.unwrap().unwrap();
    // The watch's body ends: it no longer counts.
    let first = watch.body_mut().frame().await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), "first\n");
    release.notify_one();
    while let Some(frame) = watch.body_mut().frame().await {
        frame.unwrap();
    }
    assert_eq!(watches.interested("update", &update), 0);
}
