//! The HTTP API: discovery, every verb on every served version, errors as `metav1.Status`,
//! over HTTPS (HTTP/1.1 and HTTP/2) with rustls.

mod discovery;
pub(crate) mod media;
pub mod metrics;
mod openapi;
mod proto;
pub mod query;
pub mod request_info;
mod rest;
mod scale;
mod watch;
mod written;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use apfkit_runtime::Object;
use apfkit_runtime::scheme::Limits;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use tokio::net::TcpListener;

use crate::error::ApiError;
use crate::objects::Objects;
use crate::resource::Served;
use crate::storage::Backend;
use discovery::Group;
pub use discovery::storage_version_hash;
use media::{Format, Wanted};

/// kube-apiserver's limit on request bodies (`MaxRequestBodyBytes`, 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 << 20;

/// What `/version` answers.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// Major version.
    pub major: String,
    /// Minor version.
    pub minor: String,
    /// Full version, such as `v1.35.0`.
    pub git_version: String,
    /// Build platform.
    pub platform: String,
}

/// An API server over the objects of a scheme.
pub struct ApiServer<H: 'static, B> {
    objects: Objects<H, B>,
    /// The resources served now; a request reads the catalog of when it came.
    catalog: std::sync::RwLock<Arc<Catalog<H>>>,
    version: VersionInfo,
    body_limits: Limits,
    /// How long a watch may wait on a client that does not read.
    stalled_watch: Duration,
    /// Watches open now.
    watches: std::sync::atomic::AtomicUsize,
    /// Objects and watch events written once for the requests that send them alike.
    written: written::SharedWritings,
    /// Who may ask: client certificates, tokens, anonymous requests.
    authenticator: crate::auth::Authenticator,
    /// What the embedding server puts between authentication and the handler.
    wrap: Option<RouterWrap>,
    /// The request metrics, and `/metrics`, when asked for.
    metrics: Option<Arc<metrics::RequestMetrics>>,
}

/// The resources served at one time, with the discovery and OpenAPI documents made of them.
struct Catalog<H: 'static> {
    resources: Vec<Arc<Served<H>>>,
    groups: Vec<Group>,
    /// The OpenAPI v3 documents, made on first request.
    openapi: std::sync::OnceLock<Vec<(String, Vec<u8>)>>,
}

impl<H> Catalog<H> {
    fn new(resources: Vec<Arc<Served<H>>>) -> Self {
        Catalog {
            groups: discovery::groups(&resources),
            resources,
            openapi: std::sync::OnceLock::new(),
        }
    }

    /// The served group named `name`.
    fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// Whether `version` of the group `group` is served.
    fn serves_version(&self, group: &str, version: &str) -> bool {
        self.group(group)
            .is_some_and(|g| g.versions.iter().any(|v| v == version))
    }

    fn served(&self, group: &str, plural: &str) -> Option<&Arc<Served<H>>> {
        self.resources
            .iter()
            .find(|s| s.config.group == group && s.plural == plural)
    }

    fn openapi_documents(&self, server_version: &str) -> &[(String, Vec<u8>)] {
        self.openapi
            .get_or_init(|| openapi::documents(&self.resources, &self.groups, server_version))
    }
}

/// A function wrapping the API's routes in layers of the embedding server's.
type RouterWrap = Box<dyn Fn(axum::Router) -> axum::Router + Send + Sync>;

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

/// How long a watch waits for a client that stopped reading before it ends the watch (the
/// events are buffered meanwhile, up to a bound).
pub const STALLED_WATCH: Duration = Duration::from_secs(30);

impl<H, B> ApiServer<H, B>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    /// Serves `resources` of the objects' scheme.
    pub fn new(objects: Objects<H, B>, resources: Vec<Served<H>>, version: VersionInfo) -> Self {
        let resources = resources.into_iter().map(Arc::new).collect();
        ApiServer {
            objects,
            catalog: std::sync::RwLock::new(Arc::new(Catalog::new(resources))),
            version,
            body_limits: Limits {
                max_document_bytes: MAX_BODY_BYTES,
                ..Limits::default()
            },
            stalled_watch: STALLED_WATCH,
            watches: std::sync::atomic::AtomicUsize::new(0),
            written: written::SharedWritings::default(),
            authenticator: crate::auth::Authenticator::new(true),
            wrap: None,
            metrics: None,
        }
    }

    /// The server with `wrap` around its routes: layers that see each request after it is
    /// authenticated (its [`crate::auth::UserInfo`] in the extensions) and before it is
    /// served, as kube-apiserver's filters after authentication (API Priority and Fairness,
    /// for `apfkit serve`).
    #[must_use]
    pub fn with_layers(
        mut self,
        wrap: impl Fn(axum::Router) -> axum::Router + Send + Sync + 'static,
    ) -> Self {
        self.wrap = Some(Box::new(wrap));
        self
    }

    /// The server keeping kube-apiserver's request metrics (`apiserver_request_total`,
    /// `apiserver_request_duration_seconds`) in `registry`, and answering `GET /metrics`
    /// (authenticated, behind the layers of [`ApiServer::with_layers`]) with every family
    /// registered there, in the Prometheus text format.
    ///
    /// # Errors
    ///
    /// The registry has families of those names already.
    pub fn with_metrics(mut self, registry: &prometheus::Registry) -> prometheus::Result<Self> {
        self.metrics = Some(Arc::new(metrics::RequestMetrics::register(registry)?));
        Ok(self)
    }

    /// The server authenticating requests with `authenticator` (by default: client
    /// certificates, and anonymous requests).
    #[must_use]
    pub fn with_authenticator(mut self, authenticator: crate::auth::Authenticator) -> Self {
        self.authenticator = authenticator;
        self
    }

    /// The server with another limit on how long a watch waits for a client that does not
    /// read ([`STALLED_WATCH`] by default).
    #[must_use]
    pub fn with_stalled_watch(mut self, limit: Duration) -> Self {
        self.stalled_watch = limit;
        self
    }

    /// How many watches are open.
    pub fn open_watches(&self) -> usize {
        self.watches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The objects served.
    pub fn objects(&self) -> &Objects<H, B> {
        &self.objects
    }

    /// The resources served now.
    pub fn resources(&self) -> Vec<Arc<Served<H>>> {
        self.catalog().resources.clone()
    }

    /// The resource `plural` of `group`, if served now.
    pub fn resource(&self, group: &str, plural: &str) -> Option<Arc<Served<H>>> {
        self.catalog().served(group, plural).cloned()
    }

    /// Serves `resources` from now on, in place of those served so far: requests under way
    /// finish with the resources they started with (kube-apiserver's handling of
    /// CustomResourceDefinitions that come, change and go).
    pub fn set_resources(&self, resources: Vec<Arc<Served<H>>>) {
        let catalog = Arc::new(Catalog::new(resources));
        match self.catalog.write() {
            Ok(mut current) => *current = catalog,
            Err(poisoned) => *poisoned.into_inner() = catalog,
        }
    }

    fn catalog(&self) -> Arc<Catalog<H>> {
        match self.catalog.read() {
            Ok(catalog) => catalog.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The router of the API, for tests and for embedding in another server.
    pub fn router(self: Arc<Self>) -> axum::Router {
        let mut routes = axum::Router::new()
            .fallback(handle::<H, B>)
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
        routes.layer(axum::middleware::from_fn_with_state(
            self,
            authenticated::<H, B>,
        ))
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
        serve_router(self.router(), listener, tls, shutdown, grace).await;
    }

    /// Runs the server as a command does: binds `listen`, makes (on first start) or loads the
    /// credentials in `data_dir`, writes `data_dir/kubeconfig` for the address bound (port 0
    /// works), says `<name>: listening on https://ADDRESS; kubeconfig: PATH` on standard error,
    /// and serves until SIGTERM or Ctrl-C, giving requests in flight 5 s.
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
        let listening = Listening::bind(listen, data_dir).await?;
        eprintln!(
            "{name}: listening on {}; kubeconfig: {}",
            listening.url,
            listening.kubeconfig.display()
        );
        self.serve(
            listening.listener,
            listening.tls,
            apfkit_runtime::https::interrupted(),
            Duration::from_secs(5),
        )
        .await;
        Ok(())
    }
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
        let credentials = crate::tls::ensure(data_dir, &[])?;
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
        )?;
        let tls = tls_config_with_clients(
            credentials.chain,
            credentials.key,
            Some(&credentials.ca_pem),
        )
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
    let connections = apfkit_runtime::https::Connections {
        handshake_timeout: HANDSHAKE_TIMEOUT,
        http2: true,
        grace,
    };
    apfkit_runtime::https::serve(app, listener, tls, connections, shutdown).await;
}

/// How long a client has for its TLS handshake and request headers.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

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

/// A response with a body.
fn respond(code: u16, content_type: &str, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

/// A JSON document.
fn json_response(code: u16, value: &serde_json::Value) -> Response {
    respond(
        code,
        media::JSON,
        serde_json::to_vec(value).unwrap_or_default(),
    )
}

/// An error as a `Status`.
fn error_response(error: &ApiError) -> Response {
    json_response(error.code, &error.status())
}

/// Adds `Warning` headers as kube-apiserver writes them (`299 - "text"`).
fn with_warnings(mut response: Response, warnings: &[String]) -> Response {
    for warning in warnings {
        let text = warning.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(value) = HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

async fn handle<H, B>(State(server): State<Arc<ApiServer<H, B>>>, request: Request) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    match route(&server, request).await {
        Ok(response) => response,
        Err(error) => error_response(&error),
    }
}

/// Authenticates every request before anything else sees it: 401 (or 403 for a refused
/// impersonation) in kube-apiserver's words, else the user in the request's extensions, with
/// kube-apiserver's reading of its method and URL (`RequestInfo`), made once for every layer
/// behind (the request metrics, APF).
async fn authenticated<H, B>(
    State(server): State<Arc<ApiServer<H, B>>>,
    mut request: Request,
    next: axum::middleware::Next,
) -> Response
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    match authenticate(&server, &request) {
        Ok(user) => {
            let uri = request.uri();
            let info =
                request_info::RequestInfo::new(request.method().as_str(), uri.path(), uri.query());
            request.extensions_mut().insert(user);
            request.extensions_mut().insert(std::sync::Arc::new(info));
            next.run(request).await
        }
        Err(error) => {
            rest::drain(request.into_body()).await;
            error_response(&error)
        }
    }
}

/// The user a request acts as: authenticated by its client certificate (which TLS verified
/// against the server's authority), bearer token or as anonymous, then impersonated when it
/// asks to be and may.
fn authenticate<H, B>(
    server: &ApiServer<H, B>,
    request: &Request,
) -> Result<crate::auth::UserInfo, ApiError> {
    let peer = request
        .extensions()
        .get::<apfkit_runtime::https::PeerCertificates>()
        .and_then(|certificates| certificates.0.first())
        .and_then(|certificate| crate::auth::UserInfo::of_certificate(certificate));
    let user = server
        .authenticator
        .authenticate(peer.as_ref(), request.headers())?;
    crate::auth::impersonated(user, request.headers())
}

/// `kubectl auth whoami`: the user the request acts as (`SelfSubjectReview`,
/// `authentication.k8s.io/v1`), 201 as kube-apiserver answers the create.
fn self_subject_review(user: crate::auth::UserInfo) -> Response {
    let mut user_info = serde_json::json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        user_info["uid"] = user.uid.into();
    }
    json_response(
        201,
        &serde_json::json!({
            "kind": "SelfSubjectReview",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": null},
            "status": {"userInfo": user_info},
        }),
    )
}

async fn route<H, B>(server: &Arc<ApiServer<H, B>>, request: Request) -> Result<Response, ApiError>
where
    H: Object + Clone + Send + Sync + 'static,
    B: Backend + 'static,
{
    let path = request.uri().path().to_owned();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let is_get = request.method() == Method::GET;
    let catalog = server.catalog();
    match segments.as_slice() {
        ["version"] if is_get => Ok(json_response(
            200,
            &serde_json::to_value(&server.version).unwrap_or_default(),
        )),
        ["healthz" | "livez" | "readyz", ..] if is_get => Ok(respond(200, "text/plain", "ok")),
        ["apis", "authentication.k8s.io", "v1", "selfsubjectreviews"]
            if request.method() == Method::POST =>
        {
            let user = request.extensions().get::<crate::auth::UserInfo>().cloned();
            // The review's body says nothing the answer needs, but it is read (bounded).
            rest::read_body(request).await?;
            Ok(self_subject_review(user.unwrap_or_default()))
        }
        ["api"] if is_get => match media::negotiate(accept.as_deref(), false, true, false)? {
            Wanted::Discovery(version) => Ok(discovery_response(
                version,
                &discovery::aggregated::<H>(&[], &[], version),
            )),
            _ => Ok(json_response(200, &discovery::core_versions())),
        },
        ["apis"] if is_get => match media::negotiate(accept.as_deref(), false, true, false)? {
            Wanted::Discovery(version) => Ok(discovery_response(
                version,
                &discovery::aggregated(&catalog.resources, &catalog.groups, version),
            )),
            _ => Ok(json_response(200, &discovery::group_list(&catalog.groups))),
        },
        ["apis", group] if is_get => {
            let group = catalog.group(group).ok_or_else(ApiError::no_route)?;
            Ok(json_response(200, &discovery::group_document(group)))
        }
        ["apis", group, version] if is_get => {
            if !catalog.serves_version(group, version) {
                return Err(ApiError::no_route());
            }
            Ok(json_response(
                200,
                &discovery::resource_list(&catalog.resources, group, version),
            ))
        }
        ["openapi", "v3"] if is_get => Ok(json_response(
            200,
            &openapi::index(catalog.openapi_documents(&server.version.git_version)),
        )),
        ["openapi", "v3", "apis", group, version] if is_get => {
            let wanted = format!("{group}/{version}");
            let (_, document) = catalog
                .openapi_documents(&server.version.git_version)
                .iter()
                .find(|(group_version, _)| *group_version == wanted)
                .ok_or_else(ApiError::no_route)?;
            Ok(respond(200, media::JSON, document.clone()))
        }
        // The deprecated watch paths, which kube-apiserver still serves (and Ruby's
        // kubeclient watches through): `/apis/G/V/watch/[namespaces/NS/]RESOURCE[/NAME]`.
        ["apis", group, version, "watch", rest @ ..] => {
            let target = rest::Target::parse(&catalog, group, version, rest)?;
            rest::serve(server, target, request, rest::Path::Watch).await
        }
        ["apis", group, version, rest @ ..] if !rest.is_empty() => {
            let target = rest::Target::parse(&catalog, group, version, rest)?;
            rest::serve(server, target, request, rest::Path::Resource).await
        }
        _ if !is_get && served_on_get(&catalog, &segments) => Err(ApiError::method_not_allowed()),
        _ => Err(ApiError::no_route()),
    }
}

/// Whether a path that is not a resource's is served to a GET: another method there is 405,
/// any other path 404, as kube-apiserver answers for paths it has no route for (`/api/v1/...`
/// included: no core resources are served here).
fn served_on_get<H>(catalog: &Catalog<H>, segments: &[&str]) -> bool {
    match segments {
        ["version" | "api" | "apis"] | ["healthz" | "livez" | "readyz", ..] => true,
        ["openapi", "v3", ..] => true,
        ["apis", group] => catalog.group(group).is_some(),
        ["apis", group, version] => catalog.serves_version(group, version),
        _ => false,
    }
}

fn discovery_response(version: &str, document: &serde_json::Value) -> Response {
    let content_type = if version == "v2" {
        media::DISCOVERY_V2
    } else {
        media::DISCOVERY_V2BETA1
    };
    respond(
        200,
        content_type,
        serde_json::to_vec(document).unwrap_or_default(),
    )
}

/// The media type of a format for a response.
fn content_type(format: Format) -> &'static str {
    format.media_type()
}
