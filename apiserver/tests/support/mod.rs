//! A FlowSchema API over HTTPS in this process, for the client tests and the benchmarks: the
//! flowcontrol scheme, FlowSchemas stored in v1 without validation, credentials in a
//! temporary directory, and a TLS client configuration that trusts them.

use apfkit_test_support::watch::WatchLines;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use apfkit_apiserver::http::{ApiServer, VersionInfo, tls_config};
use apfkit_apiserver::storage::Backend;
use apfkit_apiserver::store::Objects;
use apfkit_apiserver::store::{ResourceConfig, Served};
use apfkit_apiserver::tls;
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_scheme::scheme::{HubObject, Limits, SCHEME, UnknownFields};
use rustls::pki_types::pem::PemObject as _;
use tokio_rustls::TlsConnector;

/// The collection path of v1 FlowSchemas.
pub const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";

/// The generated JSON Schema of a kind in a version (merge rules for server-side apply, and
/// the OpenAPI documents).
fn kind_schema(kind: &apfkit_runtime::identity::GroupVersionKind) -> Option<serde_json::Value> {
    let info = apfkit_types::find_kind(kind)?;
    Some(apfkit_types::json_schema::schema(
        info,
        apfkit_types::json_schema::Variant::Open,
    ))
}

/// A served FlowSchema resource stored in v1 as protobuf, without validation.
pub fn flow_schemas() -> Served<HubObject> {
    Served::new(
        &SCHEME,
        ResourceConfig::builtin(
            GroupVersionKind::from_static("flowcontrol.apiserver.k8s.io", "v1", "FlowSchema"),
            "flowschemas",
            false,
        )
        .with_status(true)
        .with_schema(std::sync::Arc::new(kind_schema)),
    )
    .expect("FlowSchema is served")
}

/// A running server, stopped when dropped.
pub struct Running {
    /// The server.
    pub server: Arc<ApiServer<HubObject>>,
    /// Compacts the server's backend at a revision (upstream's `Compaction` callback), for
    /// the tests that reach past the server.
    #[allow(dead_code)]
    pub compact: Compact,
    /// Where it listens.
    pub address: SocketAddr,
    /// A TLS client that trusts it (as `localhost`).
    pub connector: TlsConnector,
    /// The server's TLS configuration, to serve something else the same way (the
    /// benchmarks' bare handler; the tests do not need it).
    #[allow(dead_code)]
    pub tls: Arc<rustls::ServerConfig>,
    _dir: tempfile::TempDir,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Serves FlowSchemas kept in `backend`; a watch whose client stops reading ends after
/// `stalled_watch`.
pub async fn start<B: Backend + 'static>(backend: B, stalled_watch: Duration) -> Running {
    start_layered(backend, stalled_watch, None).await
}

/// A backend's compaction at a revision, whatever the backend.
pub type Compact = Box<
    dyn Fn(
            apfkit_apiserver::storage::Revision,
        ) -> std::pin::Pin<
            Box<
                dyn std::future::Future<Output = Result<(), apfkit_apiserver::storage::StoreError>>
                    + Send,
            >,
        > + Send
        + Sync,
>;

/// Layers an embedding server puts around the API's routes.
pub type Layers = Box<dyn Fn(axum::Router) -> axum::Router + Send + Sync>;

/// [`start`], with `layers` between authentication and the handlers when given.
pub async fn start_layered<B: Backend + 'static>(
    backend: B,
    stalled_watch: Duration,
    layers: Option<Layers>,
) -> Running {
    start_configured(backend, move |mut server| {
        server = server.with_stalled_watch(stalled_watch);
        if let Some(layers) = layers {
            server = server.with_layers(layers);
        }
        server
    })
    .await
}

/// Serves FlowSchemas kept in `backend` by a server that `configure` sets up.
pub async fn start_configured<B: Backend + 'static>(
    backend: B,
    configure: impl FnOnce(ApiServer<HubObject>) -> ApiServer<HubObject>,
) -> Running {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let credentials = tls::ensure(dir.path(), &[], tls::Flush::Never).expect("credentials");
    let backend = Arc::new(backend);
    let compacted = backend.clone();
    let compact: Compact = Box::new(move |revision| {
        let backend = compacted.clone();
        Box::pin(async move { backend.compact(revision).await })
    });
    let objects = Objects::new(SCHEME.encodings(), backend, "/registry", Limits::default());
    let version = VersionInfo::new("1", "35", "v1.35.0");
    let server = Arc::new(configure(ApiServer::new(
        objects,
        vec![flow_schemas()],
        version,
    )));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let address = listener.local_addr().expect("bound");
    let tls = Arc::new(tls_config(credentials.chain, credentials.key).expect("TLS"));
    let (stop, stopped) = tokio::sync::oneshot::channel();
    tokio::spawn(server.clone().serve(
        listener,
        tls.clone(),
        async {
            let _ = stopped.await;
        },
        Duration::from_secs(1),
    ));
    Running {
        server,
        compact,
        address,
        connector: connector(&credentials.ca_pem),
        tls,
        _dir: dir,
        stop: Some(stop),
    }
}

/// A TLS client trusting the certificates of `ca_pem`, offering HTTP/1.1.
pub fn connector(ca_pem: &str) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("a certificate")).expect("a root");
    }
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    TlsConnector::from(Arc::new(client))
}

impl Running {
    /// Creates a FlowSchema through the objects API, with an annotation of `filler` bytes.
    pub async fn create(&self, name: &str, filler: usize) {
        self.create_annotated(name, "x".repeat(filler)).await;
    }

    /// Creates a FlowSchema through the objects API, with `filler` as an annotation.
    pub async fn create_annotated(&self, name: &str, filler: String) {
        let object = serde_json::json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": name, "annotations": {"filler": filler}},
            "spec": {
                "priorityLevelConfiguration": {"name": "global-default"},
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{
                    "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                       "namespaces": ["*"], "clusterScope": true}],
                }],
            },
        });
        let (mut hubs, _) = SCHEME
            .to_hub_value(&object, UnknownFields::Strict)
            .expect("a FlowSchema");
        let served = &self.server.resources()[0];
        let api_version = served.storage.api_version();
        self.server
            .objects()
            .create(served, None, hubs.remove(0), &api_version, false)
            .await
            .expect("created");
    }
}

/// One answer of [`Running::call`]: the status and the body as JSON (`Null` when it is not).
#[allow(dead_code)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body, parsed.
    pub body: serde_json::Value,
}

/// The events of a watch as they come, each line parsed.
#[allow(dead_code)]
pub struct WatchEvents(WatchLines<hyper::body::Incoming>);

#[allow(dead_code)]
impl WatchEvents {
    /// The next event, or `None` when none comes within `wait` or the watch ended.
    pub async fn next_within(&mut self, wait: Duration) -> Option<serde_json::Value> {
        self.0.next_within(wait).await
    }

    /// The next event, which must come within 10 s: its type and object.
    pub async fn next(&mut self) -> (String, serde_json::Value) {
        let event = self
            .next_within(Duration::from_secs(10))
            .await
            .expect("an event within 10 s");
        (
            event["type"].as_str().expect("a type").to_owned(),
            event["object"].clone(),
        )
    }

    /// The next event, which must come within 10 s: its type and its object's
    /// `resourceVersion`.
    pub async fn next_versioned(&mut self) -> (String, String) {
        let (kind, object) = self.next().await;
        let version = object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        (kind, version)
    }

    /// The events that come within `wait`, as (type, name) pairs; bookmarks left out.
    pub async fn rest_within(&mut self, wait: Duration) -> Vec<(String, String)> {
        let mut seen = Vec::new();
        while let Some(event) = self.next_within(wait).await {
            if event["type"] != "BOOKMARK" {
                seen.push((
                    event["type"].as_str().unwrap_or_default().to_owned(),
                    event["object"]["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                ));
            }
        }
        seen
    }
}

#[allow(dead_code)]
impl Running {
    /// Opens an HTTP/1.1 connection over TLS to the server.
    async fn connection(
        &self,
    ) -> hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>> {
        let tcp = tokio::net::TcpStream::connect(self.address)
            .await
            .expect("connects");
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("a name");
        let tls = self.connector.connect(name, tcp).await.expect("TLS");
        let (sender, connection) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tls))
                .await
                .expect("HTTP/1.1");
        tokio::spawn(connection);
        sender
    }

    /// Sends a request with a JSON body (or none) and answers its response, unread.
    async fn send(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<serde_json::Value>,
    ) -> hyper::Response<hyper::body::Incoming> {
        self.send_with_headers(method, path, &[("content-type", content_type)], body)
            .await
    }

    /// Sends a request with `headers` and a JSON body (or none) and answers its response,
    /// unread.
    pub async fn send_with_headers(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<serde_json::Value>,
    ) -> hyper::Response<hyper::body::Incoming> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let request = request
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .expect("a request");
        self.connection()
            .await
            .send_request(request)
            .await
            .expect("an answer")
    }

    /// A request with a JSON body (or none), answered whole.
    pub async fn call(&self, method: &str, path: &str, body: Option<serde_json::Value>) -> Answer {
        self.call_as(method, path, "application/json", body).await
    }

    /// [`Running::call`] with another `Content-Type`, such as a patch's.
    pub async fn call_as(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: Option<serde_json::Value>,
    ) -> Answer {
        let (status, bytes) = whole(self.send(method, path, content_type, body).await).await;
        Answer {
            status,
            body: serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
        }
    }

    /// The status and text of a GET of `path`.
    pub async fn get_text(&self, path: &str) -> (u16, String) {
        let (status, bytes) = whole(self.send_with_headers("GET", path, &[], None).await).await;
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Starts a watch at `path` (a query included) and answers its events.
    pub async fn watch(&self, path: &str) -> WatchEvents {
        let response = self.send("GET", path, "application/json", None).await;
        assert_eq!(response.status(), 200, "watch {path}");
        WatchEvents(WatchLines::new(response.into_body()))
    }

    /// Creates a FlowSchema named `name` with `labels` through the API; answers its
    /// `resourceVersion`.
    pub async fn create_labelled(&self, name: &str, labels: serde_json::Value) -> String {
        let answer = self
            .call("POST", FLOW_SCHEMAS, Some(flow_schema(name, labels)))
            .await;
        assert_eq!(answer.status, 201, "create {name}: {}", answer.body);
        answer.body["metadata"]["resourceVersion"]
            .as_str()
            .expect("a resourceVersion")
            .to_owned()
    }

    /// Sets a FlowSchema's labels with a merge patch; answers its new `resourceVersion`.
    pub async fn relabel(&self, name: &str, labels: serde_json::Value) -> String {
        let answer = self
            .call_as(
                "PATCH",
                &format!("{FLOW_SCHEMAS}/{name}"),
                "application/merge-patch+json",
                Some(serde_json::json!({"metadata": {"labels": labels}})),
            )
            .await;
        assert_eq!(answer.status, 200, "relabel {name}: {}", answer.body);
        answer.body["metadata"]["resourceVersion"]
            .as_str()
            .expect("a resourceVersion")
            .to_owned()
    }
}

/// A v1 FlowSchema named `name` with `labels`.
#[allow(dead_code)]
pub fn flow_schema(name: &str, labels: serde_json::Value) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "priorityLevelConfiguration": {"name": "global-default"},
            "matchingPrecedence": 1000,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            }],
        },
    })
}

/// Whether `done` holds within `limit`, asked every 20 ms without holding up the runtime.
#[allow(dead_code)]
pub async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// A response's status and whole body.
async fn whole(response: hyper::Response<hyper::body::Incoming>) -> (u16, bytes::Bytes) {
    use http_body_util::BodyExt as _;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a whole body")
        .to_bytes();
    (status, bytes)
}
