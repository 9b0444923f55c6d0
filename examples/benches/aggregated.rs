//! A GET of one widget through `apfkit serve`'s aggregator (authentication, APF,
//! authorization, the proxy, the front-proxy hop) beside the same GET sent straight to
//! `widgets-apiserver`, in one run: their ratio is what aggregation costs. One keep-alive
//! HTTP/1.1 connection each, as clients keep theirs. Needs kubectl (to register the
//! extension server). Run with `cargo bench -p apfkit-example-widgets --bench aggregated`.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

#[path = "../tests/support/aggregation.rs"]
mod aggregation;

fn main() {
    divan::main();
    // Statics are never dropped: stop the extension server and remove the data before the
    // process ends.
    if let Some(setup) = SETUP.get() {
        if let Ok(mut widgets) = setup.widgets.lock() {
            widgets.take();
        }
        let _ = std::fs::remove_dir_all(setup.dir.path());
    }
}

const WIDGET: &str = "/apis/example.com/v1/namespaces/default/widgets/w1";
/// The namespace of [`LISTED`] widgets, listed by the list benches.
const LIST: &str = "/apis/example.com/v1/namespaces/listed/widgets";
/// How many widgets [`LIST`] holds.
const LISTED: usize = 100;

/// The aggregator, the extension server behind it, and where each listens.
struct Setup {
    aggregator: aggregation::Aggregator,
    widgets: std::sync::Mutex<Option<aggregation::Widgets>>,
    widgets_port: u16,
    dir: tempfile::TempDir,
}

static SETUP: OnceLock<Setup> = OnceLock::new();

fn setup() -> &'static Setup {
    SETUP.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let aggregator = aggregation::start_aggregator(&dir.path().join("apfkit"));
        let widgets_data = dir.path().join("widgets");
        std::fs::create_dir(&widgets_data).unwrap();
        let port = aggregation::free_port();
        let widgets = aggregation::start_widgets(
            &widgets_data,
            port,
            &dir.path().join("apfkit/front-proxy-ca.crt"),
        );
        aggregation::register(&aggregator.kubeconfig, &widgets_data, port);
        aggregation::eventually(Duration::from_secs(30), "available", || {
            Some(aggregation::available(
                &aggregator.kubeconfig,
                "v1.example.com",
            ))
            .filter(|c| c.0 == "True")
        });
        let widget = r#"{"apiVersion":"example.com/v1","kind":"Widget",
            "metadata":{"name":"w1","namespace":"default"},"spec":{"replicas":2}}"#;
        apfkit_test_support::process::kubectl_ok(
            &aggregator.kubeconfig,
            &[
                "create",
                "--raw",
                "/apis/example.com/v1/namespaces/default/widgets",
                "-f",
                "-",
            ],
            widget.as_bytes(),
        );
        // A namespace of widgets to list: a GET that does work at the extension server.
        let listed: Vec<String> = (0..LISTED)
            .map(|i| {
                format!(
                    r#"{{"apiVersion":"example.com/v1","kind":"Widget",
                    "metadata":{{"name":"w{i}","namespace":"listed","labels":{{"app":"bench"}}}},
                    "spec":{{"replicas":{i}}}}}"#
                )
            })
            .collect();
        for widget in &listed {
            apfkit_test_support::process::kubectl_ok(
                &aggregator.kubeconfig,
                &["create", "--raw", LIST, "-f", "-"],
                widget.as_bytes(),
            );
        }
        Setup {
            aggregator,
            widgets: std::sync::Mutex::new(Some(widgets)),
            widgets_port: port,
            dir,
        }
    })
}

/// A keep-alive HTTP/1.1 connection to `port`, trusting the authority of `data/ca.crt`, as
/// the client of `data/admin.*`.
fn connect(runtime: &tokio::runtime::Runtime, port: u16, data: &Path) -> SendRequest<Empty<Bytes>> {
    let read = |name: &str| std::fs::read(data.join(name)).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&read("ca.crt")) {
        roots.add(cert.unwrap()).unwrap();
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(
        CertificateDer::pem_slice_iter(&read("admin.crt"))
            .collect::<Result<Vec<_>, _>>()
            .unwrap(),
        PrivateKeyDer::from_pem_slice(&read("admin.key")).unwrap(),
    )
    .unwrap();
    runtime.block_on(async {
        let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from("localhost").unwrap(), tcp)
            .await
            .unwrap();
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(connection);
        sender
    })
}

fn get(runtime: &tokio::runtime::Runtime, sender: &mut SendRequest<Empty<Bytes>>, path: &str) {
    runtime.block_on(async {
        let request = hyper::Request::get(path)
            .header("host", "localhost")
            .body(Empty::new())
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        assert!(!body.is_empty());
    });
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Where a bench sends its GETs.
#[derive(Clone, Copy)]
enum To {
    /// `widgets-apiserver` itself.
    Extension,
    /// `apfkit serve`'s aggregator.
    Aggregator,
}

/// GETs of `path` to `to` over one keep-alive connection, as the administrator of the
/// server's data directory.
fn bench_get(bencher: divan::Bencher, to: To, path: &str) {
    let setup = setup();
    let runtime = runtime();
    let (port, data) = match to {
        To::Extension => (setup.widgets_port, "widgets"),
        To::Aggregator => (aggregator_port(setup), "apfkit"),
    };
    let mut sender = connect(&runtime, port, &setup.dir.path().join(data));
    bencher.bench_local(|| get(&runtime, &mut sender, path));
}

/// The aggregator's port.
fn aggregator_port(setup: &Setup) -> u16 {
    setup
        .aggregator
        .url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap()
}

/// The GET straight to the extension server.
#[divan::bench]
fn direct(bencher: divan::Bencher) {
    bench_get(bencher, To::Extension, WIDGET);
}

/// The same GET through the aggregator.
#[divan::bench]
fn through_the_aggregator(bencher: divan::Bencher) {
    bench_get(bencher, To::Aggregator, WIDGET);
}

/// A list of [`LISTED`] widgets straight from the extension server.
#[divan::bench]
fn list_direct(bencher: divan::Bencher) {
    bench_get(bencher, To::Extension, LIST);
}

/// The same list through the aggregator.
#[divan::bench]
fn list_through_the_aggregator(bencher: divan::Bencher) {
    bench_get(bencher, To::Aggregator, LIST);
}

/// A GET the aggregator answers itself (its APIService): what its own pipeline costs
/// (authentication, APF, authorization, storage), beside the proxy's hop.
#[divan::bench]
fn served_by_the_aggregator(bencher: divan::Bencher) {
    let path = "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com";
    bench_get(bencher, To::Aggregator, path);
}
