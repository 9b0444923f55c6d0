//! What the tests of apfkit-apiextensions share.

use apfkit_test_support::watch::WatchLines;
use serde_json::{Value, json};

/// A CRD of namespaced Gadgets of `example.com`, served in `versions` (the first one stored),
/// each with `spec_properties` as the properties of its spec, an integer `status.replicas`,
/// and `subresources`.
#[allow(dead_code)]
pub fn gadgets(versions: &[&str], spec_properties: Value, subresources: Value) -> Value {
    let root = json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": spec_properties},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        },
    });
    let versions: Vec<Value> = versions
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut version = apfkit_test_support::crd::version(name, i == 0, root.clone());
            version["subresources"] = subresources.clone();
            version
        })
        .collect();
    apfkit_test_support::crd::definition("gadgets.example.com", "Gadget", json!(versions))
}

/// A server of custom resources only.
#[allow(dead_code)]
pub type Server = apfkit_apiserver::http::ApiServer<
    apfkit_apiextensions::ServedObject<apfkit_apiextensions::NoKind>,
>;

/// A request to the server's router in this process: the status and the body as JSON (`Null`
/// when it is not).
#[allow(dead_code)]
pub async fn request_as(
    server: &std::sync::Arc<Server>,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(axum::body::Body::from(body))
        .unwrap();
    let response = server.clone().router().oneshot(request).await.unwrap();
    let code = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (code, value)
}

/// [`request_as`] with a JSON body (or none).
#[allow(dead_code)]
pub async fn request(
    server: &std::sync::Arc<Server>,
    method: &str,
    path: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    request_as(server, method, path, "application/json", body).await
}

/// A watch through the router: its events as they come.
#[allow(dead_code)]
pub struct Watch(WatchLines<axum::body::Body>);

#[allow(dead_code)]
impl Watch {
    /// Starts a watch at `path` (its query included), which must answer 200.
    pub async fn start(server: &std::sync::Arc<Server>, path: &str) -> Watch {
        use tower::ServiceExt as _;
        let request = axum::http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let response = server.clone().router().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        Watch(WatchLines::new(response.into_body()))
    }

    /// The next event, or `None` when none comes within `wait` or the watch ended.
    pub async fn next_within(&mut self, wait: std::time::Duration) -> Option<Value> {
        self.0.next_within(wait).await
    }

    /// The (type, name) of the events that come within 300 ms of each other.
    pub async fn events(&mut self) -> Vec<(String, String)> {
        let mut events = Vec::new();
        while let Some(event) = self
            .next_within(std::time::Duration::from_millis(300))
            .await
        {
            events.push((
                event["type"].as_str().unwrap().to_owned(),
                event["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ));
        }
        events
    }
}

/// A server of custom resources only (no kind of its own) on `backend`, and its
/// CustomResourceDefinitions, none applied yet.
#[allow(dead_code)]
pub async fn serve<B: apfkit_apiserver::storage::Backend + 'static>(
    backend: B,
) -> (
    std::sync::Arc<Server>,
    std::sync::Arc<apfkit_apiextensions::CustomResources<apfkit_apiextensions::NoKind>>,
) {
    use std::sync::Arc;
    let objects = apfkit_apiserver::store::Objects::new(
        None,
        backend,
        "/registry",
        apfkit_runtime::scheme::Limits::default(),
    );
    let version = apfkit_apiserver::http::VersionInfo::new("1", "35", "v1.35.0");
    let server = Arc::new(apfkit_apiserver::http::ApiServer::new(
        objects,
        Vec::new(),
        version,
    ));
    let custom =
        Arc::new(apfkit_apiextensions::CustomResources::new(server.clone(), Vec::new()).unwrap());
    (server, custom)
}
