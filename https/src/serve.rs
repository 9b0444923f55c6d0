//! Serving a router over HTTPS (feature `serve`): the accept loop of the conversion webhook
//! (`webhook`, feature `webhook`) and of apfkit-apiserver.
//!
//! - Each connection gets its TLS handshake and request head within
//!   [`Connections::handshake_timeout`], so an idle or slow client cannot hold a task.
//! - `TCP_NODELAY` on every connection, as Go's `net` package sets it by default (and so
//!   kube-apiserver): the last small write of a response is not held back until the client
//!   acknowledges the previous one (up to 40 ms on Linux with delayed acknowledgements).
//! - HTTP/1.1, and HTTP/2 when [`Connections::http2`] says so (offer `h2` in the TLS
//!   configuration's ALPN too).
//! - When `shutdown` completes the listener closes; requests in flight get
//!   [`Connections::grace`] to finish.
//! - A client that presented certificates (when the TLS configuration asks for them) has
//!   them in every request's extensions as [`PeerCertificates`]; every request has its
//!   connection's [`RemoteAddress`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// The certificates a client presented in its TLS handshake, its own first; in the
/// extensions of each of its requests.
#[derive(Debug, Clone)]
pub struct PeerCertificates(pub Arc<Vec<rustls::pki_types::CertificateDer<'static>>>);

/// The address of the client's end of the connection; in the extensions of each of its
/// requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteAddress(pub std::net::SocketAddr);

/// How [`serve`] treats connections.
#[derive(Debug, Clone, Copy)]
pub struct Connections {
    /// How long a client has for its TLS handshake, then for each request's head.
    pub handshake_timeout: Duration,
    /// Whether HTTP/2 is served besides HTTP/1.1.
    pub http2: bool,
    /// How long requests in flight have to finish after shutdown.
    pub grace: Duration,
}

/// Serves `app` on `listener` over TLS until `shutdown` completes, then lets requests in
/// flight finish within the grace period. Failed accepts (out of file descriptors and the
/// like) are logged and retried after a pause.
pub async fn serve(
    app: axum::Router,
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    connections: Connections,
    shutdown: impl Future<Output = ()>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!("accepting a connection: {error}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY: {error}");
        }
        let acceptor = acceptor.clone();
        let app = app.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let deadline = connections.handshake_timeout;
            let Ok(Ok(stream)) = tokio::time::timeout(deadline, acceptor.accept(stream)).await
            else {
                return;
            };
            let peer = stream
                .get_ref()
                .1
                .peer_certificates()
                .filter(|certificates| !certificates.is_empty())
                .map(|certificates| {
                    PeerCertificates(Arc::new(
                        certificates
                            .iter()
                            .map(|c| c.clone().into_owned())
                            .collect(),
                    ))
                });
            let app = app.layer(axum::Extension(RemoteAddress(remote)));
            let service = TowerToHyperService::new(match peer {
                Some(peer) => app.layer(axum::Extension(peer)),
                None => app,
            });
            let mut http = auto::Builder::new(TokioExecutor::new());
            http.http1()
                .timer(TokioTimer::new())
                .header_read_timeout(deadline);
            if connections.http2 {
                http.http2().timer(TokioTimer::new());
            } else {
                http = http.http1_only();
            }
            let connection = http.serve_connection_with_upgrades(TokioIo::new(stream), service);
            if let Err(error) = watcher.watch(connection.into_owned()).await {
                tracing::debug!("connection: {error}");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(connections.grace, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            "requests still in flight after {:?}; stopping",
            connections.grace
        );
    }
}

/// Completes on SIGTERM (how Kubernetes stops a pod) or Ctrl-C: the `shutdown` of a server
/// run as a command.
pub async fn interrupted() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    () = interrupt => {}
                }
            }
            Err(_) => interrupt.await,
        }
    }
    #[cfg(not(unix))]
    interrupt.await;
}
