//! The conversion webhook over HTTPS (feature `webhook`): `POST <path>` answers
//! ConversionReviews with a generated [`Scheme`], `GET /healthz` says it is up.
//!
//! - **TLS** with rustls (ring). The certificate and key files are checked every
//!   [`WebhookConfig::reload_interval`] and reloaded when they change, as cert-manager rotates
//!   them; a pair that does not load is reported and the previous one kept.
//! - **Limits**: request bodies above [`WebhookConfig::max_body`] get 413; the TLS handshake and
//!   the request head each have a deadline, so an idle or slow client cannot hold a task.
//! - **Shutdown**: when the future given to [`Webhook::serve`] completes, the listener closes,
//!   requests in flight finish (within [`WebhookConfig::shutdown_grace`]) and `serve` returns.
//!
//! ```no_run
//! # async fn run(
//! #     scheme: &'static apfkit_runtime::scheme::Scheme<()>,
//! #     stop: tokio::sync::oneshot::Receiver<()>,
//! # ) -> Result<(), apfkit_https::webhook::WebhookError> {
//! use apfkit_https::webhook::{Webhook, WebhookConfig};
//! let config = WebhookConfig::new("0.0.0.0:9443".parse().unwrap(), "/tls/tls.crt", "/tls/tls.key");
//! let webhook = Webhook::bind(config, scheme).await?;
//! // Any future ends the service: a signal, a channel, a cancellation token.
//! webhook.serve(async { stop.await.ok(); }).await
//! # }
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpListener;

use apfkit_runtime::review::review;
use apfkit_runtime::scheme::Scheme;

/// Where and how to serve.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// The address to listen on (port 0 picks a free port; see [`Webhook::local_addr`]).
    pub listen: SocketAddr,
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// The path of the conversion endpoint, as in the CRD's `clientConfig` (default `/convert`).
    pub path: String,
    /// The largest request body accepted (default 32 MiB: a review carries every object of a
    /// list, each up to etcd's 1.5 MiB).
    pub max_body: usize,
    /// How often the certificate files are checked for changes (default 10 s).
    pub reload_interval: Duration,
    /// Deadline of the TLS handshake and of the request head (default 10 s).
    pub handshake_timeout: Duration,
    /// How long requests in flight may take to finish at shutdown (default 30 s).
    pub shutdown_grace: Duration,
}

impl WebhookConfig {
    /// A configuration with the defaults above.
    pub fn new(listen: SocketAddr, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        WebhookConfig {
            listen,
            cert: cert.into(),
            key: key.into(),
            path: "/convert".to_owned(),
            max_body: 32 << 20,
            reload_interval: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// Why the webhook could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// The certificate or key file could not be read or used.
    #[error("{path}: {message}")]
    Tls {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// The address could not be bound.
    #[error("listening on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The system's error.
        source: std::io::Error,
    },
    /// The endpoint path is not an absolute path other than `/healthz`.
    #[error("the webhook path {0:?} must start with '/' and not be /healthz")]
    Path(String),
}

/// A bound webhook, ready to serve.
pub struct Webhook<H: 'static> {
    listener: TcpListener,
    config: WebhookConfig,
    certificate: Arc<ReloadingCertificate>,
    scheme: &'static Scheme<H>,
}

impl<H: Send + Sync + 'static> Webhook<H> {
    /// Loads the certificate and binds the address.
    pub async fn bind(
        config: WebhookConfig,
        scheme: &'static Scheme<H>,
    ) -> Result<Self, WebhookError> {
        if !config.path.starts_with('/') || config.path == "/healthz" {
            return Err(WebhookError::Path(config.path));
        }
        let certificate = Arc::new(ReloadingCertificate::load(&config.cert, &config.key)?);
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| WebhookError::Bind {
                    address: config.listen,
                    source,
                })?;
        Ok(Webhook {
            listener,
            config,
            certificate,
            scheme,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr().unwrap_or(self.config.listen)
    }

    /// Serves until `shutdown` completes, then lets requests in flight finish.
    pub async fn serve(self, shutdown: impl Future<Output = ()>) -> Result<(), WebhookError> {
        let Webhook {
            listener,
            config,
            certificate,
            scheme,
        } = self;
        let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|err| WebhookError::Tls {
            path: config.cert.clone(),
            message: err.to_string(),
        })?
        .with_no_client_auth()
        .with_cert_resolver(certificate.clone());
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let app = Router::new()
            .route(&config.path, post(convert::<H>))
            .route("/healthz", get(|| async { "ok" }))
            .layer(DefaultBodyLimit::max(config.max_body))
            .layer(axum::middleware::from_fn_with_state(
                config.max_body,
                refuse_declared_too_large,
            ))
            .with_state(scheme);
        let reloader = tokio::spawn(reload_loop(certificate, config.reload_interval));
        let connections = crate::serve::Connections {
            handshake_timeout: config.handshake_timeout,
            http2: false,
            grace: config.shutdown_grace,
        };
        crate::serve::serve(app, listener, Arc::new(tls), connections, shutdown).await;
        reloader.abort();
        Ok(())
    }
}

/// Bytes past the body limit read and dropped before a 413 is sent, as Go's HTTP server reads
/// up to 256 KiB of an unread body before closing the connection.
const DRAIN_BYTES: u64 = 256 << 10;

/// 413 for a request whose Content-Length is over the limit, decided on the header alone. A
/// client that waits for `100 Continue` (curl for large bodies, Go's client when asked) is not
/// told to go on, so it sends nothing and reads the answer. From any other client a body of up
/// to [`DRAIN_BYTES`] past the limit is read and dropped first, so that the connection closes
/// with nothing unread: closing on unread bytes resets it, and the client, still writing,
/// fails with "broken pipe" before it reads the 413. A body without a length is cut at the
/// limit while it is read (`DefaultBodyLimit`).
async fn refuse_declared_too_large(
    State(limit): State<usize>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    let Some(length) = declared.filter(|&length| length > limit as u64) else {
        return next.run(request).await;
    };
    let waits_for_continue = request
        .headers()
        .get(header::EXPECT)
        .is_some_and(|value| value.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if !waits_for_continue && length <= limit as u64 + DRAIN_BYTES {
        let _ = axum::body::to_bytes(request.into_body(), length as usize).await;
    }
    let message = format!("request body larger than {limit} bytes");
    (StatusCode::PAYLOAD_TOO_LARGE, message).into_response()
}

/// `POST <path>`: the review's answer, or 400 with the reason.
async fn convert<H: Send + Sync + 'static>(
    State(scheme): State<&'static Scheme<H>>,
    body: Bytes,
) -> Response {
    match review(scheme, &body) {
        Ok(answer) => ([(header::CONTENT_TYPE, "application/json")], answer).into_response(),
        Err(err) => (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    }
}

/// The served certificate, replaced when its files change.
#[derive(Debug)]
struct ReloadingCertificate {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    /// Modification times and sizes of the two files when they were read.
    stamp: Option<[(SystemTime, u64); 2]>,
}

fn stamp(cert: &Path, key: &Path) -> Option<[(SystemTime, u64); 2]> {
    let one = |path: &Path| {
        let meta = std::fs::metadata(path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    };
    Some([one(cert)?, one(key)?])
}

impl ReloadingCertificate {
    fn load(cert: &Path, key: &Path) -> Result<Self, WebhookError> {
        let stamp = stamp(cert, key);
        Ok(ReloadingCertificate {
            cert: cert.to_owned(),
            key: key.to_owned(),
            current: RwLock::new(Loaded {
                key: Arc::new(certified_key(cert, key)?),
                stamp,
            }),
        })
    }

    /// Reloads when the files changed; keeps the served pair when the new one does not load.
    fn refresh(&self) {
        let now = stamp(&self.cert, &self.key);
        let unchanged = self.current.read().map(|c| c.stamp == now).unwrap_or(false);
        if unchanged || now.is_none() {
            return;
        }
        match certified_key(&self.cert, &self.key) {
            Ok(key) => {
                if let Ok(mut current) = self.current.write() {
                    *current = Loaded {
                        key: Arc::new(key),
                        stamp: now,
                    };
                    tracing::info!("reloaded the certificate {}", self.cert.display());
                }
            }
            // A rotation may be half-written; the next check tries again.
            Err(err) => tracing::warn!("keeping the current certificate: {err}"),
        }
    }
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok().map(|c| c.key.clone())
    }
}

async fn reload_loop(certificate: Arc<ReloadingCertificate>, every: Duration) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let certificate = certificate.clone();
        // File reads are blocking; a slow volume must not stall the runtime's workers.
        let _ = tokio::task::spawn_blocking(move || certificate.refresh()).await;
    }
}

/// Reads a PEM chain and key and checks that they belong together.
fn certified_key(cert: &Path, key: &Path) -> Result<CertifiedKey, WebhookError> {
    let tls = |path: &Path, message: String| WebhookError::Tls {
        path: path.to_owned(),
        message,
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|err| tls(cert, err.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|err| tls(cert, err.to_string()))?;
    if chain.is_empty() {
        return Err(tls(cert, "no certificate in the file".to_owned()));
    }
    let private = PrivateKeyDer::from_pem_file(key).map_err(|err| tls(key, err.to_string()))?;
    let provider = rustls::crypto::ring::default_provider();
    let certified = CertifiedKey::from_der(chain, private, &provider)
        .map_err(|err| tls(key, err.to_string()))?;
    Ok(certified)
}
