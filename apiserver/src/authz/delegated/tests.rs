//! The delegated authorizer against a review server started here, with upstream's cases
//! (k8s.io/apiserver `plugin/pkg/authorizer/webhook/webhook_v1_test.go`,
//! `pkg/authorization/path/path_test.go`).

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::*;
use crate::auth::UserInfo;

/// upstream's `mockV1Service` behind `NewV1TestServer`: counts the reviews, allows or not,
/// answers `statusCode` (`http.Error(w, "HTTP Error", code)` when not 2xx), keeps the last
/// review.
#[derive(Default)]
struct ReviewServer {
    allow: AtomicBool,
    status: AtomicU16,
    called: AtomicUsize,
    last: Mutex<Value>,
}

async fn review(State(server): State<Arc<ReviewServer>>, body: axum::body::Bytes) -> Response {
    let review: Value = match serde_json::from_slice(&body) {
        Ok(review) => review,
        Err(error) => return (http::StatusCode::BAD_REQUEST, error.to_string()).into_response(),
    };
    if review["apiVersion"] != "authorization.k8s.io/v1" {
        return (http::StatusCode::BAD_REQUEST, "wrong api version").into_response();
    }
    server.called.fetch_add(1, Ordering::SeqCst);
    *server.last.lock().unwrap() = review;
    let code = http::StatusCode::from_u16(server.status.load(Ordering::SeqCst)).unwrap();
    if !code.is_success() {
        return apfkit_https::answers::go_error(code, "HTTP Error");
    }
    let allowed = server.allow.load(Ordering::SeqCst);
    let answer = json!({
        "apiVersion": "authorization.k8s.io/v1",
        "status": {"allowed": allowed, "reason": "", "evaluationError": ""},
    });
    (
        [(http::header::CONTENT_TYPE, "application/json")],
        answer.to_string(),
    )
        .into_response()
}

/// The review server on a loopback port, a client configuration for it, and its URL.
async fn start() -> (Arc<ReviewServer>, kube::Config, String) {
    let server = Arc::new(ReviewServer {
        status: AtomicU16::new(200),
        ..ReviewServer::default()
    });
    let router = axum::Router::new()
        .route(
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            axum::routing::post(review),
        )
        .with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    let config = kube::Config::new(url.parse().unwrap());
    (server, config, url)
}

/// upstream's test backoff: quick tries.
fn quick() -> Backoff {
    Backoff {
        duration: Duration::from_millis(1),
        factor: 1.5,
        jitter: 0.0,
        steps: 5,
    }
}

fn user(name: &str) -> UserInfo {
    UserInfo {
        name: name.to_owned(),
        ..UserInfo::default()
    }
}

/// `TestV1Webhook`: the review sent for each request, as upstream's cases expect it.
#[tokio::test]
async fn test_v1_webhook() {
    let (server, client, _) = start().await;
    server.allow.store(true, Ordering::SeqCst);
    let reviews = SubjectAccessReviews::new(client, Duration::from_secs(10))
        .unwrap()
        .with_ttls(Duration::ZERO, Duration::ZERO)
        .with_retry(quick());
    let jane = UserInfo {
        name: "jane".into(),
        uid: "1".into(),
        groups: vec!["group1".into(), "group2".into()],
        ..UserInfo::default()
    };
    let cases = [
        (Attributes::default(), json!({"nonResourceAttributes": {}})),
        (
            Attributes {
                user: user("jane"),
                ..Attributes::default()
            },
            json!({"user": "jane", "nonResourceAttributes": {}}),
        ),
        (
            Attributes {
                user: jane,
                verb: "GET".into(),
                namespace: "kittensandponies".into(),
                api_group: "group3".into(),
                api_version: "v7beta3".into(),
                resource: "pods".into(),
                subresource: "proxy".into(),
                name: "my-pod".into(),
                resource_request: true,
                path: "/foo".into(),
            },
            json!({
                "user": "jane", "uid": "1", "groups": ["group1", "group2"],
                "resourceAttributes": {
                    "verb": "GET", "namespace": "kittensandponies", "group": "group3",
                    "version": "v7beta3", "resource": "pods", "subresource": "proxy",
                    "name": "my-pod",
                },
            }),
        ),
    ];
    for (attributes, expected_spec) in cases {
        let verdict = reviews.authorize(&attributes).await;
        assert_eq!(verdict.decision, Decision::Allow, "{attributes:?}");
        assert_eq!(verdict.error, None);
        let sent = server.last.lock().unwrap().clone();
        assert_eq!(sent["kind"], "SubjectAccessReview");
        assert_eq!(sent["apiVersion"], "authorization.k8s.io/v1");
        assert_eq!(sent["spec"], expected_spec, "{attributes:?}");
    }
}

/// `TestV1WebhookCache`: errors are not remembered and those that pass are tried again (five
/// tries); answers are, for their TTL; answers on attributes 10 000 bytes long or more are
/// not.
#[tokio::test]
async fn test_v1_webhook_cache() {
    let (server, client, _) = start().await;
    // Answers kept "forever" (100 days), as upstream's case keeps them.
    let forever = Duration::from_secs(2400 * 3600);
    let reviews = SubjectAccessReviews::new(client, Duration::from_secs(10))
        .unwrap()
        .with_ttls(forever, forever)
        .with_retry(quick());
    let in_namespace = |name: &str| Attributes {
        user: user(name),
        resource_request: true,
        namespace: "kittensandponies".into(),
        ..Attributes::default()
    };
    let ridiculous = |name: &str| Attributes {
        verb: "v".repeat(2000),
        api_group: "g".repeat(2000),
        api_version: "a".repeat(2000),
        resource: "r".repeat(2000),
        name: "n".repeat(2000),
        ..in_namespace(name)
    };
    let (alice, bob) = (in_namespace("alice"), in_namespace("bob"));
    let (alice_ridiculous, bob_ridiculous) = (ridiculous("alice"), ridiculous("bob"));
    // (name, attributes, allow, status code, error expected, authorized expected, calls)
    let cases: [(&str, &Attributes, bool, u16, bool, bool, usize); 14] = [
        ("server errors retry", &alice, false, 500, true, false, 5),
        ("429s retry", &alice, false, 429, true, false, 5),
        ("404 doesnt retry", &alice, false, 404, true, false, 1),
        ("403 doesnt retry", &alice, false, 403, true, false, 1),
        ("401 doesnt retry", &alice, false, 401, true, false, 1),
        (
            "alice successful request",
            &alice,
            true,
            200,
            false,
            true,
            1,
        ),
        ("alice cached request", &alice, false, 500, false, true, 0),
        ("bob failed request", &bob, false, 500, true, false, 5),
        (
            "bob unauthorized request",
            &bob,
            false,
            200,
            false,
            false,
            1,
        ),
        (
            "bob unauthorized cached request",
            &bob,
            false,
            500,
            false,
            false,
            0,
        ),
        (
            "ridiculous unauthorized request",
            &bob_ridiculous,
            false,
            200,
            false,
            false,
            1,
        ),
        (
            "ridiculous unauthorized request again",
            &bob_ridiculous,
            false,
            200,
            false,
            false,
            1,
        ),
        (
            "ridiculous authorized request",
            &alice_ridiculous,
            true,
            200,
            false,
            true,
            1,
        ),
        (
            "ridiculous authorized request again",
            &alice_ridiculous,
            true,
            200,
            false,
            true,
            1,
        ),
    ];
    for (name, attributes, allow, status, error, authorized, calls) in cases {
        server.called.store(0, Ordering::SeqCst);
        server.allow.store(allow, Ordering::SeqCst);
        server.status.store(status, Ordering::SeqCst);
        let verdict = reviews.authorize(attributes).await;
        assert_eq!(verdict.error.is_some(), error, "{name}: {verdict:?}");
        assert_eq!(verdict.allowed(), authorized, "{name}");
        assert_eq!(server.called.load(Ordering::SeqCst), calls, "{name}");
    }
}

/// Answers are remembered only for their TTL, allowing and refusing ones each for theirs.
#[tokio::test]
async fn answers_are_forgotten_after_their_ttl() {
    let (server, client, _) = start().await;
    let reviews = SubjectAccessReviews::new(client, Duration::from_secs(10))
        .unwrap()
        .with_ttls(Duration::from_millis(300), Duration::ZERO)
        .with_retry(quick());
    let alice = Attributes {
        user: user("alice"),
        path: "/x".into(),
        ..Attributes::default()
    };
    server.allow.store(true, Ordering::SeqCst);
    assert!(reviews.authorize(&alice).await.allowed());
    server.allow.store(false, Ordering::SeqCst);
    assert!(reviews.authorize(&alice).await.allowed(), "remembered");
    assert_eq!(server.called.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!reviews.authorize(&alice).await.allowed(), "forgotten");
    // A refusal with no TTL is asked again each time.
    assert!(!reviews.authorize(&alice).await.allowed());
    assert_eq!(server.called.load(Ordering::SeqCst), 3);
}

/// What comes back that is not a review's answer: a 500 with the server's words, never a
/// decision.
#[tokio::test]
async fn hostile_review_servers_give_errors_not_decisions() {
    async fn serve(answer: &'static [u8], status: u16) -> kube::Config {
        let router = axum::Router::new().fallback(move || async move {
            (http::StatusCode::from_u16(status).unwrap(), answer).into_response()
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await });
        kube::Config::new(url.parse().unwrap())
    }
    let attributes = Attributes {
        user: user("mallory"),
        path: "/x".into(),
        ..Attributes::default()
    };
    let big: &'static [u8] = Vec::leak(vec![b' '; 2 << 20]);
    let cases: [(&[u8], u16, &str); 6] = [
        (b"garbage", 201, "the review's answer: expected value"),
        (br#"{"status": {"allowed": "yes"}}"#, 201, "the review's status: invalid type"),
        (br#"{"status": {"allowed": tr"#, 201, "the review's answer: EOF"),
        (big, 201, "length limit exceeded"),
        (
            br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"subjectaccessreviews.authorization.k8s.io is forbidden: User \"x\" cannot create resource","reason":"Forbidden","code":403}"#,
            403,
            "subjectaccessreviews.authorization.k8s.io is forbidden: User \"x\" cannot create resource",
        ),
        (
            b"",
            418,
            "the server responded with the status code 418 but did not return more information",
        ),
    ];
    for (answer, status, expected) in cases {
        let config = serve(answer, status).await;
        let reviews = SubjectAccessReviews::new(config, Duration::from_secs(10))
            .unwrap()
            .with_retry(quick());
        let verdict = reviews.authorize(&attributes).await;
        assert_eq!(verdict.decision, Decision::NoOpinion);
        let error = verdict.error.unwrap_or_default();
        assert!(error.contains(expected), "{expected:?} in {error:?}");
    }
    // A server that never answers: the review's timeout.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let config = kube::Config::new(url.parse().unwrap());
    let reviews = SubjectAccessReviews::new(config, Duration::from_millis(200))
        .unwrap()
        .with_retry(Backoff {
            steps: 2,
            ..quick()
        });
    let started = Instant::now();
    let verdict = reviews.authorize(&attributes).await;
    assert!(verdict.error.unwrap().contains("context deadline exceeded"));
    assert!(started.elapsed() < Duration::from_secs(5));
    drop(silent);
}

/// `TestNewAuthorizer` of `path_test.go`, its cases by name.
#[test]
fn test_new_authorizer() {
    type Case<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str], bool);
    let cases: [Case; 10] = [
        ("inner star", &["/foo*bar"], &[], &[], true),
        ("double star", &["/foo**"], &[], &[], true),
        ("empty", &[], &[], &["/"], false),
        ("slash", &["/"], &["/"], &["/foo", "//"], false),
        (
            "foo",
            &["/foo"],
            &["/foo", "foo"],
            &["/", "", "/bar", "/foo/", "/fooooo", "//foo"],
            false,
        ),
        (
            "foo slash",
            &["/foo/"],
            &["/foo/"],
            &["/", "", "/bar", "/foo", "/fooooo"],
            false,
        ),
        (
            "foo slash star",
            &["/foo/*"],
            &["/foo/", "/foo/bar/bla"],
            &["/", "", "/foo", "/bar", "/fooooo"],
            false,
        ),
        (
            "foo bar",
            &["/foo", "/bar"],
            &["/foo", "/bar"],
            &["/", "", "/foo/", "/bar/", "/fooooo"],
            false,
        ),
        (
            "foo star",
            &["/foo*"],
            &["/foo", "/foooo"],
            &["/", "", "/fo", "/bar"],
            false,
        ),
        ("star", &["/*"], &["/", "", "/foo", "/foooo"], &[], false),
    ];
    for (name, excluded, allowed, no_opinion, wants_error) in cases {
        let paths: Vec<String> = excluded.iter().map(|p| (*p).to_owned()).collect();
        let authorizer = match AlwaysAllowPaths::new(&paths) {
            Err(error) => {
                assert!(wants_error, "{name}: {error}");
                assert!(error.to_string().starts_with("only trailing * allowed in"));
                continue;
            }
            Ok(authorizer) => authorizer,
        };
        assert!(!wants_error, "{name}: expected an error");
        let decide = |path: &str| {
            authorizer.decide(&Attributes {
                path: path.to_owned(),
                ..Attributes::default()
            })
        };
        for path in allowed {
            assert_eq!(decide(path), Decision::Allow, "{name}: {path:?}");
        }
        for path in no_opinion {
            assert_eq!(decide(path), Decision::NoOpinion, "{name}: {path:?}");
        }
    }
    // Resources are not paths.
    let all = AlwaysAllowPaths::new(&["/*".to_owned()]).unwrap();
    let resource = Attributes {
        resource_request: true,
        path: "/api".into(),
        ..Attributes::default()
    };
    assert_eq!(all.decide(&resource), Decision::NoOpinion);
}

/// `toAuthorizer`: masters and health paths without a review, the rest reviewed; a
/// kubeconfig that does not read names itself.
#[tokio::test]
async fn delegation_puts_groups_and_paths_before_reviews() {
    let (server, _, url) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n\
             contexts:\n- name: c\n  context:\n    cluster: c\n    user: u\n\
             current-context: c\nusers:\n- name: u\n  user: {{}}\n"
        ),
    )
    .unwrap();
    let authorizer = Delegation::new(&kubeconfig).authorizer().await.unwrap();
    let masters = Attributes {
        user: UserInfo {
            name: "admin".into(),
            groups: vec!["system:masters".into()],
            ..UserInfo::default()
        },
        verb: "delete".into(),
        resource_request: true,
        resource: "widgets".into(),
        ..Attributes::default()
    };
    assert!(authorizer.authorize(&masters).await.allowed());
    let health = Attributes {
        user: user("kubelet"),
        verb: "get".into(),
        path: "/readyz".into(),
        ..Attributes::default()
    };
    assert!(authorizer.authorize(&health).await.allowed());
    assert_eq!(server.called.load(Ordering::SeqCst), 0);
    let bob = Attributes {
        user: user("bob"),
        verb: "get".into(),
        path: "/metrics".into(),
        ..Attributes::default()
    };
    assert!(!authorizer.authorize(&bob).await.allowed());
    assert_eq!(server.called.load(Ordering::SeqCst), 1);

    let missing = dir.path().join("missing");
    let error = Delegation::new(&missing).authorizer().await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("failed to get delegated authorization kubeconfig"),
        "{error}"
    );
    let mut inner_star = Delegation::new(&kubeconfig);
    inner_star.always_allow_paths = vec!["/a*b".into()];
    let error = inner_star.authorizer().await.unwrap_err();
    assert_eq!(error.to_string(), "only trailing * allowed in \"a*b\"");
}
