//! `widgets-apiserver` behind `apfkit serve`'s aggregator, as kube-aggregator puts an
//! extension server behind kube-apiserver: a Service without a selector and an EndpointSlice
//! written by hand point at it on loopback, its APIServices (with the CA of its certificate)
//! are created with kubectl, the aggregator finds it available and proxies widgets' requests
//! to it as the front proxy, with the user in X-Remote-* headers; stopped, it is unavailable
//! (upstream's reason) and requests get 503; started again it recovers; a wrong caBundle
//! fails as kube-aggregator's transport fails. kubectl must be on the PATH.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use apfkit_test_support::process::run_within;
use serde_json::Value;

const NAMESPACE: &str = "widgets-system";
const SERVICE: &str = "widgets-apiserver";

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut command = Command::new("kubectl");
    command
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", kubeconfig.parent().unwrap())
        .args(args);
    run_within(command, stdin, Duration::from_secs(60), |_| {})
}

fn kubectl_ok(kubeconfig: &Path, args: &[&str], stdin: &[u8]) -> String {
    let output = kubectl(kubeconfig, args, stdin);
    assert!(
        output.status.success(),
        "kubectl {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// `widgets-apiserver` on `port` behind the front proxy of `front_proxy_ca`.
fn start_widgets(data: &Path, port: u16, front_proxy_ca: &Path) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_widgets-apiserver"));
    command
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--data-dir")
        .arg(data)
        .args(["--service", &format!("{NAMESPACE}/{SERVICE}")])
        .arg("--requestheader-client-ca-file")
        .arg(front_proxy_ca)
        .args(["--requestheader-allowed-names", "front-proxy-client"]);
    apfkit_test_support::process::start_server(command).0
}

fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// A free loopback port (bound, then released for the server to take).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `probe` every 200 ms for up to `limit`.
fn eventually<T>(limit: Duration, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(start.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The `Available` condition of the APIService `name`: (status, reason, message).
fn available(kubeconfig: &Path, name: &str) -> (String, String, String) {
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

struct Aggregator {
    url: String,
    runtime: tokio::runtime::Runtime,
    server: Option<apfkit_server::Server>,
    kubeconfig: PathBuf,
}

impl Aggregator {
    /// The whole answer to a GET of `path` as the administrator (curl), headers first.
    fn curl(&self, path: &str) -> String {
        self.curl_accepting(path, "*/*")
    }

    /// [`Aggregator::curl`] with an `Accept` header.
    fn curl_accepting(&self, path: &str, accept: &str) -> String {
        let data = self.kubeconfig.parent().unwrap();
        let mut curl = Command::new("curl");
        curl.args(["-sS", "-i", "-H", &format!("Accept: {accept}"), "--cacert"])
            .arg(data.join("ca.crt"))
            .arg("--cert")
            .arg(data.join("admin.crt"))
            .arg("--key")
            .arg(data.join("admin.key"))
            .arg(format!("{}{path}", self.url));
        let answer = run_within(curl, b"", Duration::from_secs(30), |_| {});
        String::from_utf8_lossy(&answer.stdout).replace("\r\n", "\n")
    }
}

impl Drop for Aggregator {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            self.runtime.block_on(server.shutdown());
        }
    }
}

fn start_aggregator(data: &Path) -> Aggregator {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut config = apfkit_server::Config::new(data);
    config.bootstrap = false;
    config.endpoints = apfkit_server::Endpoints::LoopbackAllowed;
    let server = runtime.block_on(apfkit_server::start(config)).unwrap();
    Aggregator {
        url: server.url().to_owned(),
        kubeconfig: server.kubeconfig().to_owned(),
        server: Some(server),
        runtime,
    }
}

#[test]
fn widgets_are_served_through_the_aggregator_while_their_server_is_available() {
    let dir = tempfile::tempdir().unwrap();
    let aggregator = start_aggregator(&dir.path().join("apfkit"));
    let kubeconfig = aggregator.kubeconfig.clone();
    let front_proxy_ca = dir.path().join("apfkit/front-proxy-ca.crt");
    let widgets_data = dir.path().join("widgets");
    std::fs::create_dir(&widgets_data).unwrap();
    let port = free_port();
    let widgets = start_widgets(&widgets_data, port, &front_proxy_ca);

    // The Service, an EndpointSlice pointing at the server, and its APIServices.
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
        .arg(&widgets_data)
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

    // Available, with upstream's reason, as `kubectl get apiservices` shows it.
    let condition = eventually(Duration::from_secs(20), "v1.example.com available", || {
        Some(available(&kubeconfig, "v1.example.com")).filter(|c| c.0 == "True")
    });
    assert_eq!(
        condition,
        ("True".into(), "Passed".into(), "all checks passed".into())
    );
    let table = kubectl_ok(&kubeconfig, &["get", "apiservices", "v1.example.com"], b"");
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row[..3],
        ["v1.example.com", "widgets-system/widgets-apiserver", "True"]
    );

    // Requests of the group go to the extension server, through the proxy.
    let widget = r#"{"apiVersion":"example.com/v1","kind":"Widget",
        "metadata":{"name":"w1","namespace":"default"},"spec":{"replicas":2}}"#;
    let created = kubectl_ok(
        &kubeconfig,
        &[
            "create",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets",
            "-f",
            "-",
        ],
        widget.as_bytes(),
    );
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["metadata"]["name"], "w1");
    let listed: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/example.com/v1beta1/namespaces/default/widgets",
        ],
        b"",
    ))
    .unwrap();
    assert_eq!(listed["kind"], "WidgetList");
    assert_eq!(listed["items"][0]["metadata"]["name"], "w1");
    let discovery: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &["get", "--raw", "/apis/example.com/v1"],
        b"",
    ))
    .unwrap();
    assert_eq!(discovery["groupVersion"], "example.com/v1");

    // Discovery merged: kubectl finds widgets as it would behind kube-apiserver.
    let found = eventually(Duration::from_secs(20), "widgets discovered", || {
        let output = kubectl(
            &kubeconfig,
            &["get", "widgets", "-n", "default", "-o", "name"],
            b"",
        );
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    });
    assert_eq!(found.trim(), "widget.example.com/w1");
    let resources = kubectl_ok(
        &kubeconfig,
        &["api-resources", "--api-group", "example.com"],
        b"",
    );
    assert!(resources.contains("widgets"), "{resources}");
    let groups: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &["get", "--raw", "/apis/example.com"],
        b"",
    ))
    .unwrap();
    assert_eq!(groups["preferredVersion"]["groupVersion"], "example.com/v1");

    // Stopped: unavailable with upstream's reason, and its requests answered 503.
    stop(widgets);
    let (status, reason, message) = eventually(
        Duration::from_secs(45),
        "v1.example.com unavailable",
        || Some(available(&kubeconfig, "v1.example.com")).filter(|c| c.0 == "False"),
    );
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "FailedDiscoveryCheck")
    );
    assert!(
        message.starts_with(&format!(
            "failing or missing response from https://127.0.0.1:{port}/apis/example.com/v1: \
             Get \"https://127.0.0.1:{port}/apis/example.com/v1\": dial tcp 127.0.0.1:{port}: \
             connect: connection refused"
        )),
        "{message}"
    );
    let refused = kubectl(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets",
        ],
        b"",
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("(ServiceUnavailable)"), "{said}");
    // The answer itself, as kube-aggregator writes it (`http.Error`).
    let answer = aggregator.curl("/apis/example.com/v1/namespaces/default/widgets");
    assert!(answer.starts_with("HTTP/2 503"), "{answer}");
    assert!(
        answer
            .to_lowercase()
            .contains("content-type: text/plain; charset=utf-8"),
        "{answer}"
    );
    assert!(answer.ends_with("\n\nservice unavailable\n"), "{answer}");

    // Discovery keeps what it read, marked stale.
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let stale = eventually(Duration::from_secs(20), "example.com stale", || {
        let answer = aggregator.curl_accepting("/apis", aggregated);
        let body = answer.split("\n\n").nth(1).unwrap_or_default().to_owned();
        let list: Value = serde_json::from_str(&body).ok()?;
        let group = list["items"]
            .as_array()?
            .iter()
            .find(|item| item["metadata"]["name"] == "example.com")?
            .clone();
        (group["versions"][0]["freshness"] == "Stale").then_some(group)
    });
    assert_eq!(stale["versions"][0]["version"], "v1");
    assert_eq!(stale["versions"][0]["resources"][0]["resource"], "widgets");

    // Started again: available, and the widget is still there.
    let widgets = start_widgets(&widgets_data, port, &front_proxy_ca);
    eventually(
        Duration::from_secs(45),
        "v1.example.com available again",
        || Some(available(&kubeconfig, "v1.example.com")).filter(|c| c.0 == "True"),
    );
    let again = kubectl_ok(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets/w1",
        ],
        b"",
    );
    assert!(again.contains("\"w1\""), "{again}");

    // A caBundle of another authority: the discovery probe does not verify certificates
    // (kube-aggregator's neither), so it stays available, but proxied requests fail TLS.
    let other_ca = dir.path().join("other");
    apfkit_apiserver::tls::ensure(&other_ca, &[]).unwrap();
    let other_pem = std::fs::read_to_string(other_ca.join("ca.crt")).unwrap();
    use base64::Engine as _;
    let patch = serde_json::json!({"spec": {"caBundle":
        base64::engine::general_purpose::STANDARD.encode(other_pem)}});
    kubectl_ok(
        &kubeconfig,
        &[
            "patch",
            "apiservice",
            "v1.example.com",
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ],
        b"",
    );
    let failed = eventually(Duration::from_secs(20), "a TLS failure", || {
        let answer = aggregator.curl("/apis/example.com/v1/namespaces/default/widgets");
        answer.contains("x509").then_some(answer)
    });
    assert!(failed.starts_with("HTTP/2 503"), "{failed}");
    assert!(
        failed.ends_with(
            "\n\ntls: failed to verify certificate: x509: certificate signed by unknown \
             authority\n"
        ),
        "{failed}"
    );
    stop(widgets);
}
