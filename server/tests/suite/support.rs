//! What the suite's tests share: raw requests through kube-rs's client as the administrator
//! of an in-process server (impersonating a user when asked), and what their answers did.

use std::time::Duration;

use http_body_util::BodyExt as _;
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::Value;

/// What a request sends.
pub(crate) enum Sent {
    Nothing,
    /// A JSON body (a create or an update).
    Json(Value),
    /// A merge patch.
    Merge(Value),
}

/// What a request did, read from its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Did {
    /// Streamed a watch event.
    Watch,
    /// Answered a list (a list or a delete-collection).
    List,
    /// Answered one object of this kind (any kind when empty).
    Object(&'static str),
    /// Answered an error `Status`.
    Refused,
    /// Neither ended nor sent an event within 10 s.
    Hung,
}

/// A request's answer: its code, `Audit-Id` and what it did.
pub(crate) struct Answer {
    pub(crate) code: u16,
    pub(crate) audit_id: String,
    pub(crate) did: Did,
    pub(crate) body: String,
}

/// Sends `method path` as the administrator, impersonating `user` when given.
pub(crate) async fn send(
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
            Did::Object("")
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
        Did::Object(match kind {
            "FlowSchema" => "FlowSchema",
            "Service" => "Service",
            "Scale" => "Scale",
            _ => "",
        })
    };
    Answer {
        code,
        audit_id,
        did,
        body: text,
    }
}

/// A client of the server whose kubeconfig is at `kubeconfig`, as its `context` (`apfkit`:
/// the administrator; `apfkit-user`: a plain user).
pub(crate) async fn client(kubeconfig: &std::path::Path, context: &str) -> kube::Client {
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    let config =
        kube::Config::from_custom_kubeconfig(Kubeconfig::read_from(kubeconfig).unwrap(), &options)
            .await
            .unwrap();
    kube::Client::try_from(config).unwrap()
}

/// As the administrator: an object created (201) or a request that must succeed.
pub(crate) async fn admin(client: &kube::Client, method: &str, path: &str, sent: Sent) -> Answer {
    let answer = send(client, method, path, &sent, None).await;
    assert!(
        (200..300).contains(&answer.code),
        "{method} {path}: {} {}",
        answer.code,
        answer.body
    );
    answer
}
