//! An extension server behind an aggregator, for the aggregation tests and benchmark:
//! `apfkit serve`'s library in this process (loopback endpoints allowed) and
//! `widgets-apiserver` as a child behind its front proxy, registered with a Service, an
//! EndpointSlice and its APIServices through kubectl.

// Each binary uses the part it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};

use apfkit_test_support::process::{curl_answer, kubectl_ok};
use serde_json::Value;

pub const NAMESPACE: &str = "widgets-system";
pub const SERVICE: &str = "widgets-apiserver";

/// `widgets-apiserver` on `port` behind the front proxy of `front_proxy_ca`.
/// A running `widgets-apiserver`, stopped when dropped (a failing test leaves none behind).
pub struct Widgets(Child);

impl Drop for Widgets {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn start_widgets(data: &Path, port: u16, front_proxy_ca: &Path) -> Widgets {
    start_widgets_with(data, port, front_proxy_ca, &[])
}

/// [`start_widgets`] with more arguments.
pub fn start_widgets_with(
    data: &Path,
    port: u16,
    front_proxy_ca: &Path,
    more: &[&std::ffi::OsStr],
) -> Widgets {
    let mut command = Command::new(env!("CARGO_BIN_EXE_widgets-apiserver"));
    command
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(data)
        .args(["--service", &format!("{NAMESPACE}/{SERVICE}")])
        .arg("--requestheader-client-ca-file")
        .arg(front_proxy_ca)
        .args(["--requestheader-allowed-names", "front-proxy-client"])
        .args(more);
    Widgets(apfkit_test_support::process::start_server(command).0)
}

pub fn stop(widgets: Widgets) {
    drop(widgets);
}

pub use apfkit_test_support::process::{eventually, free_port};

/// The `Available` condition of the APIService `name`: (status, reason, message).
pub fn available(kubeconfig: &Path, name: &str) -> (String, String, String) {
    let object: Value = serde_json::from_str(&kubectl_ok(
        kubeconfig,
        &["get", "apiservice", name, "-o", "json"],
        b"",
    ))
    .unwrap();
    let condition = object["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Available")
        .cloned()
        .unwrap_or_default();
    let text = |field: &str| condition[field].as_str().unwrap_or_default().to_owned();
    (text("status"), text("reason"), text("message"))
}

pub struct Aggregator {
    pub url: String,
    pub runtime: tokio::runtime::Runtime,
    pub server: Option<apfkit_server::Server>,
    pub kubeconfig: PathBuf,
}

impl Aggregator {
    /// The data directory of `apfkit serve`.
    pub fn data(&self) -> &Path {
        self.kubeconfig.parent().unwrap()
    }

    /// The whole answer to a GET of `path` as the administrator (curl), headers first.
    pub fn curl(&self, path: &str) -> String {
        self.curl_accepting(path, "*/*")
    }

    /// [`Aggregator::curl`] with an `Accept` header.
    pub fn curl_accepting(&self, path: &str, accept: &str) -> String {
        let data = self.data();
        let (certificate, key) = (data.join("admin.crt"), data.join("admin.key"));
        curl_answer(
            &data.join("ca.crt"),
            Some((&certificate, &key)),
            &[
                "-H",
                &format!("Accept: {accept}"),
                &format!("{}{path}", self.url),
            ],
        )
    }
}

impl Drop for Aggregator {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

pub fn start_aggregator(data: &Path) -> Aggregator {
    start_aggregator_with(data, |_| {})
}

/// [`start_aggregator`] with more settings.
pub fn start_aggregator_with(
    data: &Path,
    configure: impl FnOnce(&mut apfkit_server::Config),
) -> Aggregator {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut config = apfkit_server::Config::new(data);
    config.bootstrap = false;
    config.endpoints = apfkit_server::Endpoints::LoopbackAllowed;
    configure(&mut config);
    let server = runtime.block_on(apfkit_server::start(config)).unwrap();
    Aggregator {
        url: server.url().to_owned(),
        kubeconfig: server.kubeconfig().to_owned(),
        server: Some(server),
        runtime,
    }
}

/// Registers the widgets server listening on `port` (data in `widgets_data`) with the
/// aggregator of `kubeconfig`: its namespace, a Service without a selector, an EndpointSlice pointing at
/// 127.0.0.1, and the APIServices it prints (one document each: kubectl validates a
/// `v1 List` on its side with OpenAPI v2, which is not served).
pub fn register(kubeconfig: &Path, widgets_data: &Path, port: u16) {
    let kubeconfig = kubeconfig.to_owned();
    let namespace = serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
                                       "metadata": {"name": NAMESPACE}});
    kubectl_ok(
        &kubeconfig,
        &["apply", "-f", "-"],
        namespace.to_string().as_bytes(),
    );
    kubectl_ok(
        &kubeconfig,
        &[
            "create",
            "service",
            "clusterip",
            SERVICE,
            "-n",
            NAMESPACE,
            &format!("--tcp=443:{port}"),
        ],
        b"",
    );
    let slice = serde_json::json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{SERVICE}-1"), "namespace": NAMESPACE,
                     "labels": {"kubernetes.io/service-name": SERVICE}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
        "ports": [{"name": format!("443-{port}"), "port": port}],
    });
    kubectl_ok(
        &kubeconfig,
        &["apply", "-f", "-"],
        slice.to_string().as_bytes(),
    );
    let printed = Command::new(env!("CARGO_BIN_EXE_widgets-apiserver"))
        .arg("--data-dir")
        .arg(widgets_data)
        .args(["--print-apiservice", &format!("{NAMESPACE}/{SERVICE}")])
        .output()
        .unwrap();
    assert!(printed.status.success());
    // One document per APIService: kubectl validates a `v1 List` on its side with OpenAPI
    // v2, which is not served here (docs/decisions.md).
    let list: Value = serde_json::from_slice(&printed.stdout).unwrap();
    let documents: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::to_string)
        .collect();
    kubectl_ok(
        &kubeconfig,
        &["apply", "-f", "-"],
        documents.join("\n").as_bytes(),
    );
}
