//! What the suite's tests share: a server that may route to loopback extension servers, and
//! the objects that put one behind an APIService.

use apfkit_server::{Config, Endpoints, Server, start};
use serde_json::{Value, json};

/// The group the extension servers of the tests serve.
pub(crate) const GROUP: &str = "hostile.example.com";

/// An `apfkit-server` in `dir` whose aggregator may dial loopback endpoints (where the
/// tests' extension servers listen), with the namespace `ns` of the tests' objects.
pub(crate) async fn serve(dir: &tempfile::TempDir) -> Server {
    let mut config = Config::new(dir.path().join("data"));
    config.endpoints = Endpoints::LoopbackAllowed;
    let server = start(config).await.unwrap();
    let client = apfkit_test_support::requests::client(server.kubeconfig(), "apfkit").await;
    apfkit_test_support::requests::namespaces(&client, &["ns"]).await;
    server
}

/// The Service `ns/api`, its port 443 sent to `port`.
pub(crate) fn service(port: u16) -> (&'static str, Value) {
    (
        "/api/v1/namespaces/ns/services",
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "api", "namespace": "ns"},
               "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port}]}}),
    )
}

/// An EndpointSlice of `ns/api`: 127.0.0.1 at `port`, ready.
pub(crate) fn endpoint_slice(port: u16) -> (&'static str, Value) {
    (
        "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": "api-1", "namespace": "ns",
                            "labels": {"kubernetes.io/service-name": "api"}},
               "addressType": "IPv4",
               "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
               "ports": [{"name": "https", "port": port}]}),
    )
}

/// The APIService `v1.hostile.example.com`, served by `ns/api` on 443.
pub(crate) fn api_service() -> (&'static str, Value) {
    (
        "/apis/apiregistration.k8s.io/v1/apiservices",
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": format!("v1.{GROUP}")},
               "spec": {"group": GROUP, "version": "v1",
                        "service": {"namespace": "ns", "name": "api", "port": 443},
                        "insecureSkipTLSVerify": true,
                        "groupPriorityMinimum": 1000, "versionPriority": 15}}),
    )
}
