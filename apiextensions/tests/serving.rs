//! A server of custom resources only (no kind of its own), in this process on the in-memory
//! store: requests go to its router. Hostile bodies for a custom resource, and writes racing
//! with changes of their CRD.

mod support;

use std::sync::Arc;

use apfkit_apiextensions::{CustomResources, NoKind, ServedObject};
use apfkit_apiserver::http::{ApiServer, VersionInfo};
use apfkit_apiserver::objects::Objects;
use apfkit_apiserver::storage::memory::MemoryBackend;
use apfkit_runtime::scheme::Limits;
use axum::body::Body;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

type Server = ApiServer<ServedObject<NoKind>, MemoryBackend>;

/// Gadgets with at most 10 replicas, a status and a scale subresource.
fn gadgets(versions: &[&str]) -> Value {
    support::gadgets(
        versions,
        json!({"replicas": {"type": "integer", "default": 1, "maximum": 10}}),
        json!({
            "status": {},
            "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
        }),
    )
}

async fn start() -> (Arc<Server>, Arc<CustomResources<NoKind, MemoryBackend>>) {
    let objects = Objects::new(
        None,
        MemoryBackend::default(),
        "/registry",
        Limits::default(),
        |_, _, _| Vec::new(),
    );
    let version = VersionInfo {
        major: "1".into(),
        minor: "35".into(),
        git_version: "v1.35.0".into(),
        platform: "linux/amd64".into(),
    };
    let server = Arc::new(ApiServer::new(objects, Vec::new(), version));
    let custom = Arc::new(CustomResources::new(server.clone(), Vec::new()).unwrap());
    custom.apply(&gadgets(&["v1"])).await.unwrap();
    custom.sync().await.unwrap();
    (server, custom)
}

async fn request(server: &Arc<Server>, method: &str, path: &str, body: Vec<u8>) -> (u16, Value) {
    request_as(server, method, path, "application/json", body).await
}

async fn request_as(
    server: &Arc<Server>,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(Body::from(body))
        .unwrap();
    let response = server.clone().router().oneshot(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, value)
}

const GADGETS: &str = "/apis/example.com/v1/namespaces/default/gadgets";

fn gadget(name: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": {"replicas": 2},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_bodies_get_a_status_and_the_server_goes_on() {
    let (server, _custom) = start().await;
    let deep = format!(
        "{{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gadget\",\"metadata\":{{\"name\":\"d\"}},\"spec\":{}{}}}",
        "{\"a\":".repeat(5000),
        "}".repeat(5000)
    );
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"{\"apiVersion\":\"example.com/v1\",\"kind\":\"Gad".to_vec(), 400),
        (b"\x00\xff\xfe garbage".to_vec(), 400),
        (deep.into_bytes(), 400),
        (vec![b' '; 4 << 20], 413),
        (
            br#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"x"},"spec":{"replicas":11}}"#.to_vec(),
            422,
        ),
        (
            br#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"x"}}"#.to_vec(),
            400,
        ),
        (br#"[1, 2]"#.to_vec(), 400),
    ];
    for (body, expected) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(60)]).into_owned();
        let (code, status) = request(&server, "POST", GADGETS, body).await;
        assert_eq!(code, expected, "{shown}: {status}");
        assert_eq!(status["kind"], "Status", "{shown}");
        assert_eq!(status["code"], expected, "{shown}");
    }
    // A repeated key: the last one wins, as in Go.
    let repeated = br#"{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"r"},"spec":{"replicas":3,"replicas":4}}"#;
    let (code, created) = request(&server, "POST", GADGETS, repeated.to_vec()).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["replicas"], 4);
    let (code, _) = request(&server, "POST", GADGETS, gadget("after")).await;
    assert_eq!(code, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_racing_with_changes_of_their_crd_all_land() {
    let (server, custom) = start().await;
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let server = server.clone();
            tokio::spawn(async move {
                for i in 0..25 {
                    let (code, body) =
                        request(&server, "POST", GADGETS, gadget(&format!("g-{writer}-{i}"))).await;
                    assert_eq!(code, 201, "{body}");
                }
            })
        })
        .collect();
    // Meanwhile the CRD gains a version and loses it again, each change served at once.
    for round in 0..10 {
        let versions: &[&str] = if round % 2 == 0 {
            &["v1", "v2"]
        } else {
            &["v1"]
        };
        custom.apply(&gadgets(versions)).await.unwrap();
        custom.sync().await.unwrap();
        let served: Vec<String> = server
            .resource("example.com", "gadgets")
            .unwrap()
            .versions
            .iter()
            .map(|v| v.version().to_owned())
            .collect();
        assert_eq!(served, versions.iter().rev().copied().collect::<Vec<_>>());
    }
    for writer in writers {
        writer.await.unwrap();
    }
    let (code, list) = request(&server, "GET", GADGETS, Vec::new()).await;
    assert_eq!(code, 200);
    assert_eq!(list["items"].as_array().unwrap().len(), 4 * 25);
    // The CRD's status lists the one storage version.
    let (_, crd) = request(
        &server,
        "GET",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.example.com",
        Vec::new(),
    )
    .await;
    assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_scale_bodies_get_a_status_and_leave_the_object_as_it_was() {
    let (server, _custom) = start().await;
    let (code, _) = request(&server, "POST", GADGETS, gadget("g")).await;
    assert_eq!(code, 201);
    let scale = format!("{GADGETS}/g/scale");
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let cases: Vec<(&str, &str, Vec<u8>, u16)> = vec![
        (
            "PUT",
            "application/json",
            b"{\"spec\":{\"replicas\":".to_vec(),
            400,
        ),
        ("PUT", "application/json", b"\x00\xff garbage".to_vec(), 400),
        ("PUT", "application/json", deep.into_bytes(), 400),
        ("PUT", "application/json", vec![b' '; 4 << 20], 413),
        ("PUT", "application/json", br#"[1]"#.to_vec(), 400),
        (
            "PUT",
            "application/json",
            br#"{"kind":"Deployment","spec":{"replicas":3}}"#.to_vec(),
            400,
        ),
        (
            "PUT",
            "application/json",
            br#"{"spec":{"replicas":"3"}}"#.to_vec(),
            400,
        ),
        (
            "PUT",
            "application/json",
            br#"{"spec":{"replicas":-1}}"#.to_vec(),
            422,
        ),
        (
            "PUT",
            "application/json",
            br#"{"spec":{"replicas":11}}"#.to_vec(),
            422,
        ),
        (
            "PATCH",
            "application/merge-patch+json",
            b"{not json".to_vec(),
            400,
        ),
        (
            "PATCH",
            "application/json-patch+json",
            br#"[{"op":"nonsense"}]"#.to_vec(),
            400,
        ),
        (
            "PATCH",
            "application/apply-patch+yaml",
            b"spec: {replicas: 3}".to_vec(),
            415,
        ),
        ("DELETE", "application/json", Vec::new(), 405),
    ];
    for (method, content_type, body, expected) in cases {
        let shown = String::from_utf8_lossy(&body[..body.len().min(50)]).into_owned();
        let (code, status) = request_as(&server, method, &scale, content_type, body).await;
        assert_eq!(code, expected, "{method} {shown}: {status}");
        assert_eq!(status["kind"], "Status", "{method} {shown}");
    }
    let (_, object) = request(&server, "GET", &format!("{GADGETS}/g"), Vec::new()).await;
    assert_eq!(object["spec"]["replicas"], 2, "unchanged");
    // A repeated key: the last one wins, as in Go.
    let repeated = br#"{"spec":{"replicas":3,"replicas":4}}"#.to_vec();
    let (code, answer) = request(&server, "PUT", &scale, repeated).await;
    assert_eq!(code, 200, "{answer}");
    assert_eq!(answer["spec"]["replicas"], 4);
    let (_, object) = request(&server, "GET", &format!("{GADGETS}/g"), Vec::new()).await;
    assert_eq!(object["spec"]["replicas"], 4);
}
