//! Serving over HTTPS: the router (the request's audit ID, deadline and caching headers,
//! authentication, audit, impersonation, the metrics, the embedding server's layers,
//! authorization, the embedding server's handler layers, then the routes), the listener and
//! its TLS, and the command-line way to run it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use apfkit_runtime::Object;
use tokio::net::TcpListener;

use super::audited::audited;
use super::routes::{authenticated, authorized, handle, impersonating};
use super::server::ApiServer;
use super::{deadline, metrics};

impl<H> ApiServer<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// The router of the API, for tests and for embedding in another server.
    pub fn router(self: Arc<Self>) -> axum::Router {
        let mut routes = axum::Router::new()
            .fallback(handle::<H>)
            .with_state(self.clone());
        if let Some(metrics) = &self.metrics {
            let scraped = metrics.clone();
            routes = routes.route(
                "/metrics",
                axum::routing::get(move || async move {
                    ([("content-type", prometheus::TEXT_FORMAT)], scraped.text())
                }),
            );
        }
        if let Some(add) = &self.extra_routes {
            routes = add(routes);
        }
        if let Some(wrap) = &self.handler_wrap {
            routes = wrap(routes);
        }
        if self.authorizer.is_some() {
            routes = routes.layer(axum::middleware::from_fn_with_state(
                self.clone(),
                authorized::<H>,
            ));
        }
        let mut routes = match &self.wrap {
            Some(wrap) => wrap(routes),
            None => routes,
        };
        if let Some(metrics) = &self.metrics {
            routes = routes.layer(axum::middleware::from_fn_with_state(
                metrics.clone(),
                metrics::record,
            ));
        }
        routes = routes.layer(axum::middleware::from_fn_with_state(
            self.clone(),
            impersonating::<H>,
        ));
        if self.auditor.is_some() {
            routes = routes.layer(axum::middleware::from_fn_with_state(
                self.clone(),
                audited::<H>,
            ));
        }
        routes
            .layer(axum::middleware::from_fn_with_state(
                self.clone(),
                authenticated::<H>,
            ))
            .layer(axum::middleware::from_fn_with_state(
                self,
                deadline::with_deadline::<H>,
            ))
    }

    /// The API for a client in this process, with no socket or TLS between them: each
    /// request carries `certificate_pem` as though its TLS handshake had presented it, so it
    /// authenticates as that certificate's user (an administrator's, of
    /// [`Credentials::clients`](crate::tls::Credentials::clients), say). The certificate is
    /// not checked against the server's authority: whoever holds the service is trusted as the
    /// holder of the certificate would be. Once the server stops, requests fail as a
    /// connection to a stopped server does (connection refused).
    ///
    /// # Errors
    ///
    /// `certificate_pem` holds no certificate.
    pub fn in_process(
        self: Arc<Self>,
        certificate_pem: &str,
    ) -> Result<InProcessService, rustls::pki_types::pem::Error> {
        use rustls::pki_types::pem::PemObject as _;
        let chain = rustls::pki_types::CertificateDer::pem_slice_iter(certificate_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()?;
        if chain.is_empty() {
            return Err(rustls::pki_types::pem::Error::NoItemsFound);
        }
        let presented = apfkit_https::serve::PeerCertificates(Arc::new(chain));
        Ok(InProcessService {
            stopping: self.stopping.clone(),
            router: self.router().layer(axum::Extension(presented)),
        })
    }

    /// Serves HTTPS on `listener` until `shutdown` completes, then lets requests in flight
    /// (watches included) finish within `grace`.
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        tls: Arc<rustls::ServerConfig>,
        shutdown: impl Future<Output = ()>,
        grace: Duration,
    ) {
        serve_router(self.clone().router(), listener, tls, shutdown, grace).await;
        self.stop();
    }

    /// Runs the server as a command does: binds `listen`, makes (on first start) or loads the
    /// credentials in `data_dir`, writes `data_dir/kubeconfig` for the address bound (port 0
    /// works), says `<name>: listening on https://ADDRESS; kubeconfig: PATH` on standard error,
    /// and serves until SIGTERM or Ctrl-C, giving requests in flight 5 s: [`ApiServer::listen`]
    /// then [`ApiServer::serve_listening`].
    ///
    /// # Errors
    ///
    /// An address that cannot be bound, or credentials that cannot be made, read or used.
    pub async fn serve_command(
        self: Arc<Self>,
        name: &str,
        listen: std::net::SocketAddr,
        data_dir: &std::path::Path,
    ) -> Result<(), CommandError> {
        let listening = self.listen(listen, data_dir).await?;
        self.serve_listening(name, listening).await;
        Ok(())
    }

    /// Binds `listen` as [`ApiServer::serve_command`] does, with the credentials of
    /// `data_dir` (made on first start), the serving certificate also naming the server's
    /// serving hosts and a front proxy's clients accepted when requests carry its headers.
    ///
    /// # Errors
    ///
    /// An address that cannot be bound, or credentials that cannot be made, read or used.
    pub async fn listen(
        &self,
        listen: std::net::SocketAddr,
        data_dir: &std::path::Path,
    ) -> Result<Listening, CommandError> {
        let extra_client_ca = self
            .authenticator
            .request_header()
            .map(|request_header| request_header.client_ca_pem().to_owned());
        Listening::bind_with(
            listen,
            data_dir,
            &self.serving_hosts,
            extra_client_ca.as_deref(),
        )
        .await
    }

    /// Serves on `listening` as a command: says `<name>: listening on https://ADDRESS;
    /// kubeconfig: PATH` on standard error and serves until SIGTERM or Ctrl-C, giving requests
    /// in flight 5 s.
    pub async fn serve_listening(self: Arc<Self>, name: &str, listening: Listening) {
        eprintln!(
            "{name}: listening on {}; kubeconfig: {}",
            listening.url,
            listening.kubeconfig.display()
        );
        self.serve(
            listening.listener,
            listening.tls,
            apfkit_https::serve::interrupted(),
            Duration::from_secs(5),
        )
        .await;
    }
}

/// The API served to a client in this process ([`ApiServer::in_process`]): a tower service
/// of HTTP requests, cheap to clone.
#[derive(Clone)]
pub struct InProcessService {
    stopping: tokio_util::sync::CancellationToken,
    router: axum::Router,
}

impl<B> tower::Service<axum::http::Request<B>> for InProcessService
where
    B: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = axum::response::Response;
    type Error = std::io::Error;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<axum::response::Response, std::io::Error>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::http::Request<B>) -> Self::Future {
        if self.stopping.is_cancelled() {
            return Box::pin(std::future::ready(Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                "the server has stopped",
            ))));
        }
        let answered = tower::ServiceExt::oneshot(self.router.clone(), request);
        Box::pin(async move {
            match answered.await {
                Ok(response) => Ok(response),
                Err(never) => match never {},
            }
        })
    }
}

/// Why [`ApiServer::serve_command`] could not serve.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The address could not be bound.
    #[error("--listen {address}: {source}")]
    Bind {
        /// The address asked for.
        address: std::net::SocketAddr,
        /// The system's error.
        source: std::io::Error,
    },
    /// The credentials or the kubeconfig could not be made, read or written.
    #[error(transparent)]
    Credentials(#[from] crate::tls::TlsError),
    /// rustls refused the serving certificate and key.
    #[error("serving certificate: {0}")]
    Certificate(String),
}

/// An address bound as [`ApiServer::serve_command`] binds it, with its credentials and
/// kubeconfig, for a server started in-process (a test, an embedding program) and stopped by
/// its own future rather than a signal.
pub struct Listening {
    /// The socket, bound.
    pub listener: TcpListener,
    /// The serving certificate, asking clients for certificates of the server's authority.
    pub tls: Arc<rustls::ServerConfig>,
    /// `https://ADDRESS`, the address bound (a port 0 resolved).
    pub url: String,
    /// `data_dir/kubeconfig`, written for `url`: an administrator's context (the current one,
    /// `apfkit`) and a plain user's (`apfkit-user`).
    pub kubeconfig: std::path::PathBuf,
}

impl Listening {
    /// Binds `listen`, makes (on first start) or loads the credentials in `data_dir` and writes
    /// `data_dir/kubeconfig` for the address bound.
    ///
    /// # Errors
    ///
    /// An address that cannot be bound, or credentials that cannot be made, read or used.
    pub async fn bind(
        listen: std::net::SocketAddr,
        data_dir: &std::path::Path,
    ) -> Result<Listening, CommandError> {
        Self::bind_with(listen, data_dir, &[], None).await
    }

    /// [`Listening::bind`], with a serving certificate (when it is made) that also names
    /// `hosts`, and client certificates of `extra_client_ca_pem` accepted besides the data
    /// directory's (a front proxy's, for request-header authentication).
    ///
    /// # Errors
    ///
    /// As [`Listening::bind`].
    pub async fn bind_with(
        listen: std::net::SocketAddr,
        data_dir: &std::path::Path,
        hosts: &[String],
        extra_client_ca_pem: Option<&str>,
    ) -> Result<Listening, CommandError> {
        let credentials = crate::tls::ensure(data_dir, hosts, crate::tls::Flush::Always)?;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| CommandError::Bind {
                address: listen,
                source,
            })?;
        let address = listener.local_addr().map_err(|source| CommandError::Bind {
            address: listen,
            source,
        })?;
        let url = format!("https://{address}");
        let kubeconfig = data_dir.join(crate::tls::KUBECONFIG);
        crate::tls::write_file(
            &kubeconfig,
            crate::tls::kubeconfig(&url, &credentials.ca_pem, &credentials.clients).as_bytes(),
            true,
            crate::tls::Flush::Always,
        )?;
        let mut client_cas = credentials.ca_pem.clone();
        if let Some(extra) = extra_client_ca_pem {
            client_cas.push('\n');
            client_cas.push_str(extra);
        }
        let tls = tls_config_with_clients(credentials.chain, credentials.key, Some(&client_cas))
            .map_err(|e| CommandError::Certificate(e.to_string()))?;
        Ok(Listening {
            listener,
            tls: Arc::new(tls),
            url,
            kubeconfig,
        })
    }
}

/// Serves any router over HTTPS as [`ApiServer::serve`] serves the API: HTTP/2 or HTTP/1.1 by
/// ALPN, a handshake and headers within 10 s, `TCP_NODELAY` as Go sets it, connections drained within `grace` after
/// `shutdown`. (The benchmarks serve a bare handler through it, to compare like with like.)
pub async fn serve_router(
    app: axum::Router,
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let connections = apfkit_https::serve::Connections {
        handshake_timeout: HANDSHAKE_TIMEOUT,
        http2: true,
        grace,
    };
    apfkit_https::serve::serve(app, listener, tls, connections, shutdown).await;
}

/// How long a client has for its TLS handshake and request headers.
pub(super) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The TLS configuration of a server with this certificate chain and key, offering HTTP/2 and
/// HTTP/1.1.
///
/// # Errors
///
/// A key that does not fit the certificate, or that rustls cannot use.
pub fn tls_config(
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
) -> Result<rustls::ServerConfig, rustls::Error> {
    tls_config_with_clients(chain, key, None)
}

/// [`tls_config`], asking clients for certificates signed by the authority of `client_ca_pem`
/// when given: a client may present none (it is then authenticated otherwise), but one that
/// presents a certificate the authority did not sign fails its handshake.
///
/// # Errors
///
/// As [`tls_config`], and an authority rustls cannot use.
pub fn tls_config_with_clients(
    chain: Vec<rustls::pki_types::CertificateDer<'static>>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
    client_ca_pem: Option<&str>,
) -> Result<rustls::ServerConfig, rustls::Error> {
    use rustls::pki_types::pem::PemObject as _;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match client_ca_pem {
        None => builder.with_no_client_auth(),
        Some(pem) => {
            let mut roots = rustls::RootCertStore::empty();
            for certificate in rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let certificate = certificate.map_err(|e| rustls::Error::General(e.to_string()))?;
                roots.add(certificate)?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .map_err(|e| rustls::Error::General(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}
