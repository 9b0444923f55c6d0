//! Request-header authentication, as an extension server behind kube-aggregator does it
//! (k8s.io/apiserver `authentication/request/headerrequest` and `x509`'s allowed names): a
//! front proxy's client certificate makes the request the user of its `X-Remote-*` headers;
//! any other certificate is its own user whatever headers it sends; a proxy without a user
//! header, or whose name is not allowed, is refused 401. `SelfSubjectReview` says who a
//! request was taken to be.

use std::sync::Arc;
use std::time::Duration;

use apfkit_apiserver::auth::{Authenticator, RequestHeader};
use apfkit_apiserver::http::tls_config_with_clients;
use apfkit_apiserver::storage::memory::MemoryBackend;
use apfkit_apiserver::tls;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::support;

const REVIEWS: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";

/// A client certificate for `common_name` signed by the authority in `dir` (its
/// `front-proxy-ca.*` files).
fn front_proxy_cert(dir: &std::path::Path, common_name: &str) -> (String, String) {
    let ca_pem = std::fs::read_to_string(dir.join("front-proxy-ca.crt")).unwrap();
    let ca_key = std::fs::read_to_string(dir.join("front-proxy-ca.key")).unwrap();
    let issuer =
        rcgen::Issuer::from_ca_cert_pem(&ca_pem, rcgen::KeyPair::from_pem(&ca_key).unwrap())
            .unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, common_name);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// Who the server takes a request with `identity` (certificate and key, PEM) and `headers`
/// to be: the status and body of a SelfSubjectReview.
async fn review(
    address: std::net::SocketAddr,
    server_ca: &str,
    identity: Option<&(String, String)>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(server_ca.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                CertificateDer::pem_slice_iter(cert.as_bytes())
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap(),
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(address).await.unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let Ok(mut stream) = connector.connect(name, tcp).await else {
        return (0, Value::Null);
    };
    let mut head = format!(
        "POST {REVIEWS} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: 2\r\nConnection: close\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n{}");
    if stream.write_all(head.as_bytes()).await.is_err() {
        return (0, Value::Null);
    }
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    let text = String::from_utf8_lossy(&response);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_front_proxys_headers_name_the_user_and_nothing_else_does() {
    let dir = tempfile::tempdir().unwrap();
    let server_credentials =
        tls::ensure(&dir.path().join("server"), &[], tls::Flush::Never).unwrap();
    let front_proxy =
        tls::ensure_front_proxy(&dir.path().join("proxy"), tls::Flush::Never).unwrap();
    let rogue = tls::ensure_front_proxy(&dir.path().join("rogue"), tls::Flush::Never).unwrap();
    let mut request_header = RequestHeader::new(&front_proxy.ca_pem).unwrap();
    request_header.allowed_names = vec![tls::FRONT_PROXY_CLIENT.to_owned()];
    let authenticator = Authenticator::new(false).with_request_header(request_header);

    let running = support::start_configured(MemoryBackend::default(), |server| {
        server.with_authenticator(authenticator)
    })
    .await;
    // The same API on a second port whose TLS also takes the front proxy's certificates.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let client_cas = format!("{}\n{}", server_credentials.ca_pem, front_proxy.ca_pem);
    let tls = tls_config_with_clients(
        server_credentials.chain,
        server_credentials.key,
        Some(&client_cas),
    )
    .unwrap();
    tokio::spawn(running.server.clone().serve(
        listener,
        Arc::new(tls),
        std::future::pending(),
        Duration::from_secs(1),
    ));
    let ca = server_credentials.ca_pem.as_str();
    let proxy_identity = (
        front_proxy.client_cert_pem.clone(),
        front_proxy.client_key_pem.clone(),
    );
    let forwarded = [
        ("X-Remote-User", "alice"),
        ("X-Remote-Uid", "42"),
        ("X-Remote-Group", "dev"),
        ("X-Remote-Group", "ops"),
        ("X-Remote-Extra-Scopes", "read"),
        ("X-Remote-Extra-Example.org%2fteam", "blue"),
    ];

    let (status, body) = review(address, ca, Some(&proxy_identity), &forwarded).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        body["status"]["userInfo"],
        serde_json::json!({"username": "alice", "uid": "42",
                           "groups": ["dev", "ops", "system:authenticated"],
                           "extra": {"example.org/team": ["blue"], "scopes": ["read"]}})
    );
    // The proxy without a user header: not a user at all.
    let (status, _) = review(address, ca, Some(&proxy_identity), &[]).await;
    assert_eq!(status, 401);
    // A proxy certificate of the right authority with a name not allowed.
    let stranger = front_proxy_cert(&dir.path().join("proxy"), "someone-else");
    let (status, _) = review(address, ca, Some(&stranger), &forwarded).await;
    assert_eq!(status, 401);
    // Another authority's proxy: its handshake fails.
    let rogue_identity = (rogue.client_cert_pem, rogue.client_key_pem);
    let (status, _) = review(address, ca, Some(&rogue_identity), &forwarded).await;
    assert_eq!(status, 0);
    // The server's own client certificate is its own user; the headers it sends are ignored.
    let admin = server_credentials.clients[0].clone();
    let (status, body) = review(address, ca, Some(&admin), &forwarded).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["status"]["userInfo"]["username"], "apfkit-admin");
    // Without a certificate, and anonymous requests off: 401, headers or not.
    let (status, _) = review(address, ca, None, &forwarded).await;
    assert_eq!(status, 401);
}
