//! TLS helpers shared by the webhook tests and benchmark: a self-signed certificate for
//! `localhost` on disk, and a client that trusts only a given certificate.

// Each test binary uses the part it needs.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// A self-signed certificate for `localhost` (common name `name`), written to `dir` as
/// `tls.crt` and `tls.key`, each beside and then renamed: how a rotation lands atomically.
pub fn write_certificate(dir: &Path, name: &str) -> CertificateDer<'static> {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    for (file, text) in [("tls.key", key.serialize_pem()), ("tls.crt", cert.pem())] {
        let temporary = dir.join(format!(".{file}"));
        std::fs::write(&temporary, text).unwrap();
        std::fs::rename(&temporary, dir.join(file)).unwrap();
    }
    cert.der().clone()
}

/// A TLS connection to `address` as `localhost`, trusting `trusted` only.
pub async fn connect(
    address: SocketAddr,
    trusted: &CertificateDer<'static>,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(trusted.clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = TcpStream::connect(address).await?;
    TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
}
