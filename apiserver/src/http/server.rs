//! What a server holds: its objects, the resources it serves now (with their discovery and
//! OpenAPI documents), and what its handlers share; built with [`ApiServer::new`] and its
//! `with_*` settings.

use std::sync::Arc;
use std::time::Duration;

use apfkit_runtime::Object;
use apfkit_runtime::scheme::Limits;

use super::discovery::{self, Group};
use super::{metrics, openapi, reviews, written};
use crate::store::{Objects, Served};

/// kube-apiserver's limit on request bodies (`MaxRequestBodyBytes`, 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 << 20;

/// What `/version` answers: kube-apiserver's fields (`version.Info`), in its order.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// Major version.
    pub major: String,
    /// Minor version.
    pub minor: String,
    /// The major version of the release whose API is served (kube-apiserver's emulation
    /// version, since 1.33).
    pub emulation_major: String,
    /// Its minor version.
    pub emulation_minor: String,
    /// The oldest release this server's stored data stays compatible with: major.
    pub min_compatibility_major: String,
    /// Its minor version.
    pub min_compatibility_minor: String,
    /// Full version, such as `v1.35.0`.
    pub git_version: String,
    /// The commit built (empty when unknown, as in a Go build without it).
    pub git_commit: String,
    /// `clean` or `dirty` (empty when unknown).
    pub git_tree_state: String,
    /// When built, RFC 3339 (`1970-01-01T00:00:00Z` when unknown, as Go's default).
    pub build_date: String,
    /// The Go version kube-apiserver was built with; empty here.
    pub go_version: String,
    /// The compiler: `gc` for kube-apiserver, `rustc` here.
    pub compiler: String,
    /// Build platform.
    pub platform: String,
}

impl VersionInfo {
    /// The version of a server of release `major`.`minor` whose full version is
    /// `git_version`: emulating that release, compatible with the one before, built by rustc
    /// for this platform, its commit and build date unknown.
    pub fn new(major: &str, minor: &str, git_version: impl Into<String>) -> VersionInfo {
        let previous = minor
            .parse::<u32>()
            .map_or_else(|_| minor.to_owned(), |m| m.saturating_sub(1).to_string());
        VersionInfo {
            major: major.to_owned(),
            minor: minor.to_owned(),
            emulation_major: major.to_owned(),
            emulation_minor: minor.to_owned(),
            min_compatibility_major: major.to_owned(),
            min_compatibility_minor: previous,
            git_version: git_version.into(),
            git_commit: String::new(),
            git_tree_state: String::new(),
            build_date: "1970-01-01T00:00:00Z".to_owned(),
            go_version: String::new(),
            compiler: "rustc".to_owned(),
            platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// An API server over the objects of a scheme.
pub struct ApiServer<H: 'static> {
    pub(super) objects: Objects<H>,
    /// The resources served now; a request reads the catalog of when it came.
    pub(super) catalog: std::sync::RwLock<Arc<Catalog<H>>>,
    /// How many times the resources were replaced ([`ApiServer::set_resources`]).
    pub(super) generation: tokio::sync::watch::Sender<u64>,
    pub(super) version: VersionInfo,
    pub(super) body_limits: Limits,
    /// How long a watch may wait on a client that does not read.
    pub(super) stalled_watch: Duration,
    /// How long a request that is not long-running may take (`--request-timeout`).
    pub(super) request_timeout: Duration,
    /// Watches open now.
    pub(super) watches: std::sync::atomic::AtomicUsize,
    /// Bytes of watch events written ahead of their clients, not yet handed to a connection.
    pub(super) watch_bytes: Arc<std::sync::atomic::AtomicUsize>,
    /// Objects and watch events written once for the requests that send them alike.
    pub(super) written: written::SharedWritings,
    /// Who may ask: client certificates, tokens, anonymous requests.
    pub(super) authenticator: crate::auth::Authenticator,
    /// Names the serving certificate [`ApiServer::serve_command`] makes also has.
    pub(super) serving_hosts: Vec<String>,
    /// Who is audited, how, and where events go; `None`: no audit.
    pub(super) auditor: Option<Arc<crate::audit::Auditor>>,
    /// Who may do what; `None`: everyone everything (no authorization layer).
    pub(super) authorizer: Option<Arc<dyn crate::authz::Authorizer>>,
    /// The impersonation mode that last allowed each requestor.
    pub(super) impersonation_modes: crate::impersonation::LastModes,
    /// What the embedding server puts between authentication and the handler.
    pub(super) wrap: Option<RouterWrap>,
    /// Layers right in front of the routes, after authorization.
    pub(super) handler_wrap: Option<RouterWrap>,
    /// The embedding server's own routes, beside the API's.
    pub(super) extra_routes: Option<RouterWrap>,
    /// The request metrics, and `/metrics`, when asked for.
    pub(super) metrics: Option<Arc<metrics::RequestMetrics>>,
    /// Cancelled when the server stops: its background work ends then.
    pub(super) stopping: tokio_util::sync::CancellationToken,
    /// The embedding server's own health checks ([`ApiServer::with_health_checks`]).
    pub(super) health_checks: Vec<super::health::HealthCheck>,
    /// The informers running, for `/readyz`'s `informer-sync`.
    pub(super) informers: super::health::Informers,
    /// Bearer tokens the embedding server's code authenticates
    /// ([`ApiServer::set_token_authenticator`]).
    pub(super) token_authenticator: std::sync::OnceLock<Arc<dyn TokenAuthenticator<H>>>,
    /// The service-account issuer's discovery documents, once published
    /// ([`ApiServer::set_openid_metadata`]).
    pub(super) openid: std::sync::OnceLock<super::OpenIdMetadata>,
    /// The code of each subresource that takes only a POST, by group, resource and name
    /// ([`ApiServer::with_subresource_creator`]).
    pub(super) creators: Vec<(CreatedAt, Arc<dyn SubresourceCreator<H>>)>,
}

/// Where a [`SubresourceCreator`] answers: the group, the resource and the subresource.
type CreatedAt = (String, String, String);

/// What a [`SubresourceCreator`] answers: the object (JSON, `apiVersion` and `kind`
/// included) and the warnings of the `Warning` header.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    /// The answer's object, `201 Created`.
    pub object: serde_json::Value,
    /// Warnings for the client.
    pub warnings: Vec<String>,
}

/// The future of [`SubresourceCreator::create`].
pub type CreatedFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<Created, crate::error::ApiError>> + Send + 'a>,
>;

/// A subresource that takes only a POST (verb `create`, authorized as the subresource) and
/// answers with what code of the embedding server makes of it rather than a stored object:
/// kube-apiserver's `rest.NamedCreater` storages (a ServiceAccount's `token`, `TokenREST`).
/// Registered with [`ApiServer::with_subresource_creator`] for a resource whose
/// configuration declares it (`ResourceConfig::with_created_subresource`); any other method
/// on it is 405.
pub trait SubresourceCreator<H>: Send + Sync {
    /// The kind's zero value as Go writes it (with `metadata`), what the managed fields of a
    /// request are computed over.
    fn zero(&self) -> serde_json::Value {
        serde_json::json!({"metadata": {}})
    }

    /// The kind's defaults, applied to a request's object as it is decoded.
    fn default(&self, body: &mut serde_json::Value) {
        let _ = body;
    }

    /// Answers `body` (the request's object as JSON) posted to the subresource of the object
    /// at `place` of `served`, reading what it needs from `server`; nothing is written when
    /// `dry_run`.
    fn create<'a>(
        &'a self,
        server: &'a ApiServer<H>,
        served: &'a Served<H>,
        place: crate::store::Place<'a>,
        body: serde_json::Value,
        dry_run: bool,
    ) -> CreatedFuture<'a>;
}

/// The future of [`TokenAuthenticator::authenticate`].
pub type TokenFuture<'a> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Option<crate::auth::TokenUser>> + Send + 'a>,
>;

/// Bearer tokens that code of the embedding server authenticates, beside the token file: a
/// service account's tokens, signed by the server and valid while their account is there
/// (kube-apiserver's service-account token authenticator). Asked for a bearer token no other
/// authenticator knows, and by TokenReviews.
pub trait TokenAuthenticator<H>: Send + Sync {
    /// The user `token` authenticates on `server`, for one of `audiences` (the server's own
    /// when empty); `None` when it is not a token of these, expired, or its holder is gone.
    fn authenticate<'a>(
        &'a self,
        server: &'a ApiServer<H>,
        token: &'a str,
        audiences: &'a [String],
    ) -> TokenFuture<'a>;
}

/// The resources served at one time, with the discovery and OpenAPI documents made of them.
pub(super) struct Catalog<H: 'static> {
    pub(super) resources: Vec<Arc<Served<H>>>,
    /// The reviews answered without storage (`authorization.k8s.io` ones with an authorizer).
    pub(super) reviews: Vec<&'static reviews::Review>,
    pub(super) groups: Vec<Group>,
    /// The OpenAPI v3 documents, made on first request.
    pub(super) openapi: std::sync::OnceLock<Vec<openapi::Document>>,
    /// The OpenAPI v2 document, made on first request.
    pub(super) swagger: std::sync::OnceLock<Option<openapi::Swagger>>,
}

impl<H> Catalog<H> {
    fn new(resources: Vec<Arc<Served<H>>>, authorizes: bool) -> Self {
        let reviews: Vec<_> = reviews::served(authorizes).collect();
        Catalog {
            groups: discovery::groups(&resources, &reviews),
            resources,
            reviews,
            openapi: std::sync::OnceLock::new(),
            swagger: std::sync::OnceLock::new(),
        }
    }

    /// The served group named `name`.
    pub(super) fn group(&self, name: &str) -> Option<&Group> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// Whether `version` of the group `group` is served.
    pub(super) fn serves_version(&self, group: &str, version: &str) -> bool {
        self.group(group)
            .is_some_and(|g| g.versions.iter().any(|v| v == version))
    }

    pub(super) fn served(&self, group: &str, plural: &str) -> Option<&Arc<Served<H>>> {
        self.resources
            .iter()
            .find(|s| s.config.group == group && s.plural == plural)
    }

    fn served_kind(&self, group: &str, kind: &str) -> Option<&Arc<Served<H>>> {
        self.resources
            .iter()
            .find(|s| s.config.group == group && s.config.kind == kind)
    }

    pub(super) fn openapi_documents(&self, version: &VersionInfo) -> &[openapi::Document] {
        self.openapi.get_or_init(|| {
            let release = format!("{}.{}", version.major, version.minor);
            openapi::documents(
                &self.resources,
                &self.groups,
                &self.reviews,
                &release,
                &version.git_version,
            )
        })
    }
}

impl<H> Catalog<H> {
    /// The OpenAPI v2 document.
    pub(super) fn swagger(&self, version: &VersionInfo) -> Option<&openapi::Swagger> {
        self.swagger
            .get_or_init(|| {
                let release = format!("{}.{}", version.major, version.minor);
                openapi::swagger(&self.resources, &self.groups, &self.reviews, &release)
            })
            .as_ref()
    }
}

/// A function wrapping the API's routes in layers of the embedding server's.
pub(super) type RouterWrap = Box<dyn Fn(axum::Router) -> axum::Router + Send + Sync>;

/// How long a watch waits for a client that stopped reading, once what it may write ahead
/// (64 events, 1 MiB) is full, before it ends the watch. kube-apiserver gives a blocked
/// watcher at most 100 ms (k8s.io/apiserver `pkg/storage/cacher/time_budget.go`,
/// `maxBudget`) before closing it; a few seconds let a slow but live client catch up.
pub const STALLED_WATCH: Duration = Duration::from_secs(5);

/// kube-apiserver's `--request-timeout` default: how long a request that is not long-running
/// (a watch, a proxy) may take before it is answered 504.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

impl<H> ApiServer<H>
where
    H: Object + Clone + Send + Sync + 'static,
{
    /// Serves `resources` of the objects' scheme.
    pub fn new(objects: Objects<H>, resources: Vec<Served<H>>, version: VersionInfo) -> Self {
        let resources = resources.into_iter().map(Arc::new).collect();
        ApiServer {
            objects,
            catalog: std::sync::RwLock::new(Arc::new(Catalog::new(resources, false))),
            generation: tokio::sync::watch::Sender::new(0),
            version,
            body_limits: Limits {
                max_document_bytes: MAX_BODY_BYTES,
                ..Limits::default()
            },
            stalled_watch: STALLED_WATCH,
            request_timeout: REQUEST_TIMEOUT,
            watches: std::sync::atomic::AtomicUsize::new(0),
            watch_bytes: Arc::default(),
            written: written::SharedWritings::default(),
            authenticator: crate::auth::Authenticator::new(true),
            token_authenticator: std::sync::OnceLock::new(),
            openid: std::sync::OnceLock::new(),
            creators: Vec::new(),
            serving_hosts: Vec::new(),
            authorizer: None,
            impersonation_modes: crate::impersonation::LastModes::default(),
            wrap: None,
            handler_wrap: None,
            extra_routes: None,
            auditor: None,
            metrics: None,
            stopping: tokio_util::sync::CancellationToken::new(),
            health_checks: Vec::new(),
            informers: super::health::Informers::default(),
        }
    }

    /// The server with `checks` among its health endpoints' checks (`/healthz`, `/livez`,
    /// `/readyz`), after the generic ones, in this order.
    #[must_use]
    pub fn with_health_checks(
        mut self,
        checks: impl IntoIterator<Item = super::health::HealthCheck>,
    ) -> Self {
        self.health_checks.extend(checks);
        self
    }

    /// A new informer's flag for `/readyz`'s `informer-sync`, to set once it has synced.
    pub(crate) fn register_informer(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.informers.register()
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

    /// The server with `wrap` right around its routes, after authorization: handlers that
    /// answer some requests before the server's own, as kube-aggregator's proxy answers those
    /// of groups that extension servers serve and delegates the rest.
    #[must_use]
    pub fn with_handler_layers(
        mut self,
        wrap: impl Fn(axum::Router) -> axum::Router + Send + Sync + 'static,
    ) -> Self {
        self.handler_wrap = Some(Box::new(wrap));
        self
    }

    /// The server with the routes `add` puts beside the API's: paths of the embedding server's
    /// own (debug handlers, say), served behind every layer a request of the API passes,
    /// authorization included, as kube-apiserver serves its non-resource paths.
    #[must_use]
    pub fn with_routes(
        mut self,
        add: impl Fn(axum::Router) -> axum::Router + Send + Sync + 'static,
    ) -> Self {
        self.extra_routes = Some(Box::new(add));
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

    /// The server whose serving certificate, when [`ApiServer::serve_command`] makes it,
    /// also names `hosts` (an extension server's `SERVICE.NAMESPACE.svc`, the name an
    /// aggregator verifies).
    #[must_use]
    pub fn with_serving_hosts(mut self, hosts: Vec<String>) -> Self {
        self.serving_hosts = hosts;
        self
    }

    /// The server answering POSTs to the subresource `name` of `plural` in `group` with
    /// `creator` (the resource's configuration declares it:
    /// `ResourceConfig::with_created_subresource`).
    #[must_use]
    pub fn with_subresource_creator(
        mut self,
        group: &str,
        plural: &str,
        name: &str,
        creator: Arc<dyn SubresourceCreator<H>>,
    ) -> Self {
        let key = (group.to_owned(), plural.to_owned(), name.to_owned());
        self.creators.push((key, creator));
        self
    }

    /// The creator of the subresource `name` of `served`, if one is registered.
    pub(super) fn creator(
        &self,
        served: &Served<H>,
        name: &str,
    ) -> Option<&dyn SubresourceCreator<H>> {
        self.creators
            .iter()
            .find(|((group, plural, own), _)| {
                *group == served.config.group && *plural == served.plural && own == name
            })
            .map(|(_, creator)| &**creator)
    }

    /// Authenticates the bearer tokens no other authenticator knows with `tokens` too (once:
    /// a second one is refused, `false`). Set after the server is made, since what it reads
    /// (a service account) is the server's.
    pub fn set_token_authenticator(&self, tokens: Arc<dyn TokenAuthenticator<H>>) -> bool {
        self.token_authenticator.set(tokens).is_ok()
    }

    /// Serves the service-account issuer's OpenID Connect discovery (`GET
    /// /.well-known/openid-configuration` and `GET /openid/v1/jwks`, authorized as
    /// non-resource paths) from now on (once: a second one is refused, `false`). Until then, as
    /// in a kube-apiserver that could not set them up, both paths are 404. Set after the server
    /// is made, since the keys' address is where it serves.
    pub fn set_openid_metadata(&self, metadata: super::OpenIdMetadata) -> bool {
        self.openid.set(metadata).is_ok()
    }

    /// The user a bearer token authenticates through [`ApiServer::set_token_authenticator`],
    /// with the audiences it is for among `audiences`.
    pub async fn token_user(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Option<crate::auth::TokenUser> {
        let tokens = self.token_authenticator.get()?;
        tokens.authenticate(self, token, audiences).await
    }

    /// The server authenticating requests with `authenticator` (by default: client
    /// certificates, and anonymous requests).
    #[must_use]
    pub fn with_authenticator(mut self, authenticator: crate::auth::Authenticator) -> Self {
        self.authenticator = authenticator;
        self
    }

    /// The server authorizing every request with `authorizer` after API Priority and
    /// Fairness (the layers of [`ApiServer::with_layers`]), as kube-apiserver's handler chain
    /// does, and impersonation with it; a refusal is kube-apiserver's 403. Without one, every
    /// request is allowed (kube-apiserver's `AlwaysAllow`).
    #[must_use]
    pub fn with_authorizer(mut self, authorizer: Arc<dyn crate::authz::Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self.set_resources(self.resources());
        self
    }

    /// The server auditing requests as `auditor`'s policy says (behind authentication, before
    /// impersonation, as kube-apiserver's handler chain audits them).
    #[must_use]
    pub fn with_auditor(mut self, auditor: Arc<crate::audit::Auditor>) -> Self {
        self.auditor = Some(auditor);
        self
    }

    /// The authorizer of [`ApiServer::with_authorizer`], if any.
    pub fn authorizer(&self) -> Option<&Arc<dyn crate::authz::Authorizer>> {
        self.authorizer.as_ref()
    }

    /// The server with another limit on how long a watch waits for a client that does not
    /// read ([`STALLED_WATCH`] by default).
    #[must_use]
    pub fn with_stalled_watch(mut self, limit: Duration) -> Self {
        self.stalled_watch = limit;
        self
    }

    /// The server answering 504 Timeout to a request that is not long-running and not
    /// answered within `timeout` ([`REQUEST_TIMEOUT`] by default, kube-apiserver's
    /// `--request-timeout`); a client's `?timeout=` shortens it for its request.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How many watches are open.
    pub fn open_watches(&self) -> usize {
        self.watches.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many bytes of watch events wait for their clients to read them: written ahead of
    /// each client up to 64 events and 1 MiB (and one event of any size), then the watch waits
    /// for the client, for the stalled-watch limit at most.
    pub fn watch_bytes_queued(&self) -> usize {
        self.watch_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The objects served.
    pub fn objects(&self) -> &Objects<H> {
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

    /// The resource of `kind` in `group`, if served now (an owner reference's, or a
    /// producer's of objects it knows by kind).
    pub fn resource_of_kind(&self, group: &str, kind: &str) -> Option<Arc<Served<H>>> {
        self.catalog().served_kind(group, kind).cloned()
    }

    /// Serves `resources` from now on, in place of those served so far: requests under way
    /// finish with the resources they started with (kube-apiserver's handling of
    /// CustomResourceDefinitions that come, change and go).
    pub fn set_resources(&self, resources: Vec<Arc<Served<H>>>) {
        let catalog = Arc::new(Catalog::new(resources, self.authorizer.is_some()));
        match self.catalog.write() {
            Ok(mut current) => *current = catalog,
            Err(poisoned) => *poisoned.into_inner() = catalog,
        }
        self.generation.send_modify(|generation| *generation += 1);
    }

    /// The group-versions served now, as discovery lists them (reviews' groups included):
    /// each group with its versions, preferred first.
    pub fn group_versions(&self) -> Vec<(String, Vec<String>)> {
        self.catalog()
            .groups
            .iter()
            .map(|group| (group.name.clone(), group.versions.clone()))
            .collect()
    }

    /// A receiver that sees each time the resources served are replaced.
    pub fn resources_changed(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Ends the server's background work: the tasks of [`ApiServer::spawn_until_stopped`]
    /// (informers, controllers, compaction), which hold the server and its store. Serving ends
    /// it too, once requests in flight are done.
    pub fn stop(&self) {
        self.stopping.cancel();
    }

    /// Runs `work` in a task until it ends or the server stops, whichever is first.
    pub fn spawn_until_stopped(
        &self,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> tokio::task::JoinHandle<()> {
        let stopping = self.stopping.clone();
        tokio::spawn(async move {
            stopping.run_until_cancelled_owned(work).await;
        })
    }

    /// The resources served now, with their documents.
    pub(super) fn catalog(&self) -> Arc<Catalog<H>> {
        match self.catalog.read() {
            Ok(catalog) => catalog.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}
