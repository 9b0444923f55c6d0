//! How the aggregator reaches an extension server: HTTPS (HTTP/2 or HTTP/1.1 by ALPN) to the
//! endpoint resolved, the server's certificate verified against the APIService's `caBundle`
//! for the name `SERVICE.NAMESPACE.svc` (or not at all with `insecureSkipTLSVerify`, as
//! kube-aggregator's transport does), presenting the front-proxy client certificate.
//!
//! As Go's HTTP/2 transport, which the aggregator's is: a connection's flow-control windows
//! are 1 GiB and a stream's 4 MiB, so that clients that stop reading their answers hold back
//! their own streams and never the connection, and a request that finds every connection's
//! streams taken opens another connection rather than waiting for a stream.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// How long a connection may take to open (kube-aggregator's dialer: 30 s).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The receive window of an HTTP/2 connection (Go's `transportDefaultConnFlow`).
const CONNECTION_WINDOW: u32 = 1 << 30;

/// The receive window of an HTTP/2 stream (Go's `transportDefaultStreamFlow`): what one
/// answer that its client does not read may hold here.
const STREAM_WINDOW: u32 = 4 << 20;

/// Requests in flight on one connection before another is opened. Go's transport opens one
/// when the server's `MAX_CONCURRENT_STREAMS` are taken; hyper does not tell that number,
/// so this is below what servers advertise (kube-apiserver's 1000 by default, Go's 250,
/// hyper's 200, 100 at the least that RFC 9113 recommends).
const STREAMS_PER_CONNECTION: usize = 100;

type HyperClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, axum::body::Body>;

/// The connections to one extension server, each a client of its own: a request takes the
/// one with the fewest requests in flight, or a new one when every one has
/// [`STREAMS_PER_CONNECTION`].
pub(crate) struct Connections {
    connector: hyper_rustls::HttpsConnector<HttpConnector>,
    open: std::sync::Mutex<Vec<Connection>>,
}

struct Connection {
    client: HyperClient,
    in_flight: Arc<std::sync::atomic::AtomicUsize>,
}

/// A request's place on a connection, given back when dropped (held by a proxied answer's
/// body until its end).
#[derive(Debug)]
pub(crate) struct InFlight(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Connections {
    fn new(connector: hyper_rustls::HttpsConnector<HttpConnector>) -> Self {
        Connections {
            connector,
            open: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The client of the connection a request goes on, and its place there.
    pub(crate) fn take(&self) -> (HyperClient, InFlight) {
        use std::sync::atomic::Ordering;
        let mut open = self
            .open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let least = open
            .iter()
            .enumerate()
            .min_by_key(|(_, connection)| connection.in_flight.load(Ordering::Relaxed))
            .filter(|(_, connection)| {
                connection.in_flight.load(Ordering::Relaxed) < STREAMS_PER_CONNECTION
            })
            .map(|(at, _)| at);
        let at = least.unwrap_or_else(|| {
            let mut builder = Client::builder(TokioExecutor::new());
            builder
                .http2_initial_connection_window_size(CONNECTION_WINDOW)
                .http2_initial_stream_window_size(STREAM_WINDOW);
            open.push(Connection {
                client: builder.build(self.connector.clone()),
                in_flight: Arc::default(),
            });
            open.len() - 1
        });
        let connection = &open[at];
        connection.in_flight.fetch_add(1, Ordering::Relaxed);
        (
            connection.client.clone(),
            InFlight(connection.in_flight.clone()),
        )
    }

    /// Connections opened (each a client; an HTTP/1.1 one may hold several sockets).
    #[cfg(test)]
    pub(crate) fn opened(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

/// The front-proxy client's certificate chain and key, PEM.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    /// The certificate chain.
    pub cert_pem: String,
    /// The key.
    pub key_pem: String,
}

/// The client of one APIService.
#[derive(Clone)]
pub(crate) struct Backend {
    server_name: String,
    ca_bundle: Vec<u8>,
    insecure: bool,
    /// `None` when the TLS settings could not be made (a bad caBundle or identity): requests
    /// then fail as kube's do when its transport cannot be built.
    connections: Option<Arc<Connections>>,
    /// The same over HTTP/1.1 only, for requests that upgrade their connection (HTTP/2 has
    /// no `Upgrade`).
    upgrades: Option<HyperClient>,
    /// Why the client could not be made.
    pub(crate) broken: Option<String>,
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Backend")
            .field("server_name", &self.server_name)
            .field("insecure", &self.insecure)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl Backend {
    /// The client for a server named `server_name`, trusted as `ca_bundle` (PEM) and
    /// `insecure` say, with `identity`.
    pub(crate) fn new(
        server_name: &str,
        ca_bundle: &[u8],
        insecure: bool,
        identity: &Identity,
    ) -> Self {
        let made = tls_config(ca_bundle, insecure, identity).and_then(|config| {
            let name = ServerName::try_from(server_name.to_owned())
                .map_err(|e| format!("server name {server_name}: {e}"))?;
            let mut http = HttpConnector::new();
            http.enforce_http(false);
            http.set_connect_timeout(Some(CONNECT_TIMEOUT));
            http.set_nodelay(true);
            let builder = || {
                hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(config.clone())
                    .https_only()
                    .with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(
                        name.clone(),
                    ))
            };
            let any = builder().enable_all_versions().wrap_connector(http.clone());
            let http1 = builder().enable_http1().wrap_connector(http);
            Ok((
                Arc::new(Connections::new(any)),
                Client::builder(TokioExecutor::new()).build(http1),
            ))
        });
        let (connections, upgrades, broken) = match made {
            Ok((connections, upgrades)) => (Some(connections), Some(upgrades), None),
            Err(why) => (None, None, Some(why)),
        };
        Backend {
            server_name: server_name.to_owned(),
            ca_bundle: ca_bundle.to_vec(),
            insecure,
            connections,
            upgrades,
            broken,
        }
    }

    /// Whether this client is the one for these settings.
    pub(crate) fn serves(&self, server_name: &str, ca_bundle: &[u8], insecure: bool) -> bool {
        self.server_name == server_name && self.ca_bundle == ca_bundle && self.insecure == insecure
    }

    /// The client of the connection a request goes on and its place there, or why there is
    /// none.
    pub(crate) fn client(&self) -> Result<(HyperClient, InFlight), String> {
        self.connections
            .as_ref()
            .map(|connections| connections.take())
            .ok_or_else(|| self.broken.clone().unwrap_or_default())
    }

    /// The connections, for the tests that count them.
    #[cfg(test)]
    pub(crate) fn connections(&self) -> Option<&Connections> {
        self.connections.as_deref()
    }

    /// The HTTP/1.1 client for upgrading requests, or why there is none.
    pub(crate) fn upgrade_client(&self) -> Result<&HyperClient, String> {
        self.upgrades
            .as_ref()
            .ok_or_else(|| self.broken.clone().unwrap_or_default())
    }
}

/// The TLS settings of a client: `ca_bundle`'s authorities (none trusted when it is empty),
/// or any certificate when `insecure`; `identity` as the client certificate.
fn tls_config(
    ca_bundle: &[u8],
    insecure: bool,
    identity: &Identity,
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        for certificate in CertificateDer::pem_slice_iter(ca_bundle) {
            let certificate = certificate.map_err(|e| format!("caBundle: {e}"))?;
            roots
                .add(certificate)
                .map_err(|e| format!("caBundle: {e}"))?;
        }
        builder.with_root_certificates(roots)
    };
    if identity.cert_pem.is_empty() {
        return Ok(builder.with_no_client_auth());
    }
    let chain = CertificateDer::pem_slice_iter(identity.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("front-proxy client certificate: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes())
        .map_err(|e| format!("front-proxy client key: {e}"))?;
    builder
        .with_client_auth_cert(chain, key)
        .map_err(|e| format!("front-proxy client certificate: {e}"))
}

/// `insecureSkipTLSVerify`: any server certificate is taken, its signatures still checked.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Why an extension server could not be reached, in the words of Go's transport where it
/// has them (`dial tcp ADDRESS: connect: connection refused`), without more of the
/// connection than that.
pub(crate) fn reach_error(error: &hyper_util::client::legacy::Error, host: &str) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            match io.kind() {
                std::io::ErrorKind::ConnectionRefused => {
                    return format!("dial tcp {host}: connect: connection refused");
                }
                std::io::ErrorKind::TimedOut => {
                    return format!("dial tcp {host}: i/o timeout");
                }
                _ => {}
            }
            // A custom io::Error's `source` skips what it wraps: go through it.
            if let Some(inner) = io.get_ref() {
                source = Some(inner);
                continue;
            }
        }
        if let Some(tls) = cause.downcast_ref::<rustls::Error>() {
            return tls_words(tls);
        }
        source = cause.source();
    }
    if error.is_connect() {
        format!("dial tcp {host}: connect: connection failed")
    } else {
        "error trying to reach service: the connection was closed".to_owned()
    }
}

/// A TLS failure as Go's `crypto/tls` and `crypto/x509` word the common ones (a
/// certificate of an authority with the trusted one's name but not its key is Go's unknown
/// authority too, without its parenthesised detail).
fn tls_words(error: &rustls::Error) -> String {
    use rustls::CertificateError;
    match error {
        rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer | CertificateError::BadSignature,
        ) => "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_owned(),
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => "tls: failed to verify certificate: x509: certificate is not valid for the \
              service's name"
            .to_owned(),
        rustls::Error::InvalidCertificate(
            CertificateError::Expired | CertificateError::ExpiredContext { .. },
        ) => "tls: failed to verify certificate: x509: certificate has expired or is not yet \
              valid"
            .to_owned(),
        other => format!("tls: {other}"),
    }
}
