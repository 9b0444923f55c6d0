//! Extension API servers for the tests that hold an aggregator's proxy to what such a server
//! can do: TLS on a loopback port with a certificate for `api.ns.svc` made on the spot, each
//! connection handed to the test's own handler ([`serve_tls`]), or HTTP/2 with answers that
//! never end, that flood their streams, or that redirect ([`http2`]).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::Frame;

/// A TLS stream accepted from a client.
pub type TlsStream = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

/// Serves TLS on a loopback port with a certificate for `api.ns.svc` made on the spot
/// (self-signed, so clients skip verification), offering the protocols `alpn` (`h2`:
/// HTTP/2; none: HTTP/1.1), handing each connection to `handle`; its port.
///
/// # Panics
///
/// No certificate could be made or no port bound.
pub async fn serve_tls<F, Fut>(alpn: Vec<Vec<u8>>, handle: F) -> u16
where
    F: Fn(TlsStream) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    serve_tls_certified(alpn, handle).await.0
}

/// [`serve_tls`], answering also the server's certificate (PEM), which is its own CA bundle
/// for a client that verifies it as `api.ns.svc`.
///
/// # Panics
///
/// As [`serve_tls`].
pub async fn serve_tls_certified<F, Fut>(alpn: Vec<Vec<u8>>, handle: F) -> (u16, String)
where
    F: Fn(TlsStream) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    serve_tls_named("api.ns.svc", alpn, handle).await
}

/// [`serve_tls_certified`] with a certificate for `name` (a DNS name, or an IP address such
/// as `127.0.0.1` for a client that dials the address and verifies it).
///
/// # Panics
///
/// As [`serve_tls`].
pub async fn serve_tls_named<F, Fut>(name: &str, alpn: Vec<Vec<u8>>, handle: F) -> (u16, String)
where
    F: Fn(TlsStream) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let key = rcgen::KeyPair::generate().expect("a key");
    let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
        .expect("a name")
        .self_signed(&key)
        .expect("a certificate");
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("TLS versions")
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).expect("the key"),
    )
    .expect("the certificate");
    let pem = cert.pem();
    config.alpn_protocols = alpn;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let port = listener.local_addr().expect("bound").port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, handle) = (acceptor.clone(), handle.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    handle(tls).await;
                }
            });
        }
    });
    (port, pem)
}

/// An HTTP/2 extension server (`h2` by ALPN, hyper's limit of 200 streams on a connection)
/// on a loopback port, answering by what the path ends with:
///
/// - `/endless`: a line, then nothing, without end (a watch, or a hung answer);
/// - `/flood`: 64 KiB chunks without end, as fast as the stream's window takes them;
/// - `/redirect`: 302 to another host;
/// - `/not-modified`: 304 without `Location`;
/// - anything else: 200 `{}` (discovery and availability probes pass).
pub async fn http2() -> u16 {
    http2_certified().await.0
}

/// [`http2`], answering also its certificate (PEM), its own CA bundle.
pub async fn http2_certified() -> (u16, String) {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    serve_tls_certified(vec![b"h2".to_vec()], |tls| async move {
        let service = hyper::service::service_fn(|request: http::Request<_>| {
            let answer = answer(request.uri().path());
            async move { Ok::<_, Infallible>(answer) }
        });
        let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
            .max_concurrent_streams(200)
            .serve_connection(TokioIo::new(tls), service)
            .await;
    })
    .await
}

/// [`http2`]'s answer to a request for `path`.
fn answer(path: &str) -> http::Response<Answer> {
    let endless = |chunk: Bytes, flood| Answer::Endless {
        chunk,
        flood,
        sent: false,
    };
    let (status, location, body) = if path.ends_with("/endless") {
        let line = Bytes::from_static(b"{\"type\":\"ADDED\"}\n");
        (200, None, endless(line, false))
    } else if path.ends_with("/flood") {
        (200, None, endless(Bytes::from(vec![b'x'; 64 << 10]), true))
    } else if path.ends_with("/redirect") {
        let to = "https://example.com/elsewhere";
        (302, Some(to), Answer::Whole(Some(Bytes::new())))
    } else if path.ends_with("/not-modified") {
        (304, None, Answer::Whole(None))
    } else {
        (200, None, Answer::Whole(Some(Bytes::from_static(b"{}"))))
    };
    let mut response = http::Response::new(body);
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    if let Some(location) = location {
        response.headers_mut().insert(
            http::header::LOCATION,
            http::HeaderValue::from_static(location),
        );
    }
    response
}

/// The body of one of [`http2`]'s answers.
enum Answer {
    /// All of it at once (nothing when `None`).
    Whole(Option<Bytes>),
    /// `chunk` once and then nothing, or `chunk` again and again (`flood`).
    Endless {
        chunk: Bytes,
        flood: bool,
        sent: bool,
    },
}

impl http_body::Body for Answer {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut *self {
            Answer::Whole(body) => Poll::Ready(body.take().map(|data| Ok(Frame::data(data)))),
            Answer::Endless {
                sent: true,
                flood: false,
                ..
            } => Poll::Pending,
            Answer::Endless { chunk, sent, .. } => {
                *sent = true;
                Poll::Ready(Some(Ok(Frame::data(chunk.clone()))))
            }
        }
    }
}

/// A JSON webhook (a CRD's conversion webhook, say) over HTTPS/1.1 on a loopback port with a
/// certificate for `127.0.0.1`: each request's body, read whole (up to 32 MiB) and parsed as
/// JSON (`null` when it is not), answered with `answer`'s status and body. Its URL
/// (`https://127.0.0.1:PORT/convert`) and its certificate (PEM), its own CA bundle.
///
/// # Panics
///
/// As [`serve_tls`].
pub async fn json_webhook(answer: fn(&serde_json::Value) -> (u16, Vec<u8>)) -> (String, String) {
    use http_body_util::BodyExt;
    use hyper_util::rt::TokioIo;
    let (port, pem) = serve_tls_named("127.0.0.1", Vec::new(), move |tls| async move {
        let service = hyper::service::service_fn(
            move |request: http::Request<hyper::body::Incoming>| async move {
                let limited = http_body_util::Limited::new(request.into_body(), 32 << 20);
                let body = limited
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let review = serde_json::from_slice(&body).unwrap_or_default();
                let (status, body) = answer(&review);
                let mut response =
                    http::Response::new(http_body_util::Full::new(Bytes::from(body)));
                *response.status_mut() = http::StatusCode::from_u16(status).unwrap_or_default();
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static("application/json"),
                );
                Ok::<_, Infallible>(response)
            },
        );
        let _ = hyper::server::conn::http1::Builder::new()
            .serve_connection(TokioIo::new(tls), service)
            .await;
    })
    .await;
    (format!("https://127.0.0.1:{port}/convert"), pem)
}
