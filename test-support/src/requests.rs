//! Raw requests through kube-rs's client, for tests of a server's answers: sent as the
//! client's user or impersonating another ([`send`]), read as what they did ([`Did`]: a watch,
//! a list, an object of a kind, a refusal, or a request that hung), with the `Audit-Id` that
//! finds them in the audit log; a client from a kubeconfig's context ([`client`], [`config`]);
//! polling until something holds ([`until`]).

use std::time::Duration;

use http_body_util::BodyExt as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

/// What a request sends.
pub enum Sent {
    /// No body.
    Nothing,
    /// A JSON body (a create or an update).
    Json(Value),
    /// A merge patch.
    Merge(Value),
}

/// What a request did, read from its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Did {
    /// Streamed a watch event.
    Watch,
    /// Answered a list (a list or a delete-collection).
    List,
    /// Answered one object: its kind (`Status` for a success said so, empty for a body that
    /// is not JSON).
    Object(String),
    /// Answered an error `Status`.
    Refused,
    /// Neither ended nor sent an event within 10 s.
    Hung,
}

/// A request's answer: its code, `Audit-Id` and what it did.
pub struct Answer {
    /// The status code.
    pub code: u16,
    /// The `Audit-Id` header.
    pub audit_id: String,
    /// What the request did.
    pub did: Did,
    /// The body (a watch's first event; what came before the deadline of one that hung).
    pub body: String,
}

/// Sends `method path` as `client`'s user, impersonating `user` when given, and reads what
/// the answer did: a watch's first event, or the whole body (at most 10 s).
///
/// # Panics
///
/// When the request cannot be sent, or its answer has no `Audit-Id`.
pub async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    sent: &Sent,
    user: Option<&str>,
) -> Answer {
    let mut request = http::Request::builder().method(method).uri(path);
    if let Some(user) = user {
        request = request.header("Impersonate-User", user);
    }
    let body = match sent {
        Sent::Nothing => Vec::new(),
        Sent::Json(value) => {
            request = request.header("Content-Type", "application/json");
            serde_json::to_vec(value).unwrap()
        }
        Sent::Merge(value) => {
            request = request.header("Content-Type", "application/merge-patch+json");
            serde_json::to_vec(value).unwrap()
        }
    };
    let response = client
        .send(request.body(kube::client::Body::from(body)).unwrap())
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let code = response.status().as_u16();
    let audit_id = response
        .headers()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_else(|| panic!("{method} {path}: no Audit-Id"))
        .to_owned();
    let mut body = response.into_body();
    let mut bytes = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        // A watch never ends: its first line, an event, says what it is.
        if let Some(line) = bytes
            .split(|b| *b == b'\n')
            .next()
            .filter(|_| bytes.contains(&b'\n'))
            && let Ok(event) = serde_json::from_slice::<Value>(line)
            && event.get("type").is_some()
            && event.get("object").is_some()
        {
            let body = String::from_utf8_lossy(line).into_owned();
            return Answer {
                code,
                audit_id,
                did: Did::Watch,
                body,
            };
        }
        match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => {
                return Answer {
                    code,
                    audit_id,
                    did: Did::Hung,
                    body: String::from_utf8_lossy(&bytes).into_owned(),
                };
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => panic!("{method} {path}: {e}"),
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        // Not JSON: plain text, as Go's `http.Error` writes.
        let did = if code >= 400 {
            Did::Refused
        } else {
            Did::Object(String::new())
        };
        return Answer {
            code,
            audit_id,
            did,
            body: text,
        };
    };
    let kind = value["kind"].as_str().unwrap_or_default();
    let did = if kind == "Status" && value["status"] == "Failure" {
        Did::Refused
    } else if kind.ends_with("List") {
        Did::List
    } else {
        Did::Object(kind.to_owned())
    };
    Answer {
        code,
        audit_id,
        did,
        body: text,
    }
}

/// The client configuration of the server whose kubeconfig is at `kubeconfig`, as its
/// `context` (for `apfkit-server`'s: `apfkit`, the administrator; `apfkit-user`, a plain user),
/// without retries: kube-rs's client otherwise sends a request answered 429, 503 or 504 again,
/// up to 15 times with a backoff growing to minutes, and a test would see the last answer,
/// late.
///
/// # Panics
///
/// When the kubeconfig cannot be read or has no such context.
pub async fn config(kubeconfig: &std::path::Path, context: &str) -> kube::Config {
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    let mut config =
        kube::Config::from_custom_kubeconfig(Kubeconfig::read_from(kubeconfig).unwrap(), &options)
            .await
            .unwrap();
    config.default_retry = false;
    config
}

/// A client of [`config`].
///
/// # Panics
///
/// As [`config`].
pub async fn client(kubeconfig: &std::path::Path, context: &str) -> kube::Client {
    kube::Client::try_from(config(kubeconfig, context).await).unwrap()
}

/// [`send`] without impersonation, for a request that must succeed (a 2xx).
///
/// # Panics
///
/// When it does not.
pub async fn admin(client: &kube::Client, method: &str, path: &str, sent: Sent) -> Answer {
    let answer = send(client, method, path, &sent, None).await;
    assert!(
        (200..300).contains(&answer.code),
        "{method} {path}: {} {}",
        answer.code,
        answer.body
    );
    answer
}

/// Creates the Namespaces `names`, as a test does before it makes objects in them (the
/// server admits no create in a namespace that does not exist).
///
/// # Panics
///
/// When one is not created.
pub async fn namespaces(client: &kube::Client, names: &[&str]) {
    for name in names {
        let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": name}});
        admin(client, "POST", "/api/v1/namespaces", Sent::Json(namespace)).await;
    }
}

/// Asks `probe` every 50 ms until it holds, for `limit` at most: whether it did.
pub async fn until<F: std::future::Future<Output = bool>>(
    limit: Duration,
    mut probe: impl FnMut() -> F,
) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if probe().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The resource `plural` of `group` in `version`, its objects of `kind`, for kube-rs's
/// `Api<DynamicObject>` (the core group's apiVersion is the version alone).
pub fn api_resource(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version: if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    }
}

/// The StorageVersionMigrations of the server `client` talks to.
pub fn storage_version_migrations(client: &kube::Client) -> kube::Api<kube::api::DynamicObject> {
    kube::Api::all_with(
        client.clone(),
        &api_resource(
            "storagemigration.k8s.io",
            "v1",
            "StorageVersionMigration",
            "storageversionmigrations",
        ),
    )
}

/// The CustomResourceDefinitions of the server `client` talks to.
pub fn custom_resource_definitions(client: &kube::Client) -> kube::Api<kube::api::DynamicObject> {
    kube::Api::all_with(
        client.clone(),
        &api_resource(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
    )
}
