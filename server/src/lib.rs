//! The server behind `apfkit serve`, as a library: every version of
//! `flowcontrol.apiserver.k8s.io` and `apiregistration.k8s.io`, and users' CRDs, served as
//! kube-apiserver serves them (validation, defaults, printer columns, the bootstrap APF
//! configuration, API Priority and Fairness in front of every request), on the embedded SQLite
//! store or on etcd.
//!
//! **Where to start**: [`Config::new`] with a data directory, then [`start`] for a server in
//! this process (it answers with its URL and a kubeconfig, and stops with
//! [`Server::shutdown`]), or [`run`] for a command that serves until SIGINT or SIGTERM. A
//! controller's integration test starts one per test:
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let server = apfkit_server::start(apfkit_server::Config::new(dir.path())).await?;
//! // The administrator's context of server.kubeconfig() (kube-rs: Config::from_custom_kubeconfig).
//! assert!(server.url().starts_with("https://127.0.0.1:"));
//! assert!(server.kubeconfig().exists());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! The pieces are `apfkit-apiserver` (the generic server), `apfkit-apiextensions` (CRDs),
//! `apfkit-scheme` (the scheme and validation) and `apfkit-dispatcher` (APF); this crate
//! wires them as kube-apiserver wires its own: `printers` for `kubectl get`'s columns, the
//! configuration producer (`ensurer`), the APF configuration controller (`flow_control`) and
//! what the work estimator reads (`estimates`).

#![forbid(unsafe_code)]

mod ensurer;
mod estimates;
mod flow_control;
mod printers;
mod template;

pub use apfkit_aggregator::Endpoints;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use apfkit_apiextensions::{CustomResources, ServedObject};
use apfkit_apiserver::auth::Authenticator;
use apfkit_apiserver::authz::{AlwaysAllow, PrivilegedGroups, Union};
use apfkit_apiserver::error::Cause;
use apfkit_apiserver::http::{ApiServer, HealthCheck, InProcessService, Listening, VersionInfo};
use apfkit_apiserver::storage::Backend;
use apfkit_apiserver::storage::compaction::Compactor;
use apfkit_apiserver::storage::etcd::EtcdBackend;
use apfkit_apiserver::storage::memory::MemoryBackend;
use apfkit_apiserver::storage::sqlite::SqliteBackend;
use apfkit_apiserver::store::{Generation, Objects, ResourceConfig, Served, Strategy};
use apfkit_apiserver::table::Printer;
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::ValueEncodings;
use apfkit_scheme::scheme::{HubObject, Limits, SCHEME};
use apfkit_scheme::validation::{self, Options};
use apfkit_storage::etcd::RESOURCES;

/// The objects the server holds: of the two groups, or custom resources and their CRDs.
pub type ServeObject = ServedObject<HubObject>;

/// The version kube-apiserver 1.35 stores both groups in.
const DEFAULT_STORAGE_VERSION: &str = "v1";

/// Where the objects are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// `DATA_DIR/apfkit.db`: SQLite with kine's table.
    Embedded,
    /// An etcd cluster, under kube-apiserver's keys and in its encodings: client URLs of its
    /// members (kube-apiserver's `--etcd-servers`).
    Etcd(Vec<String>),
    /// This process's memory: every revision kept as etcd keeps it, nothing written to disk
    /// and everything gone when the server stops (a test's server).
    Memory,
}

/// Who may do what (kube-apiserver's `--authorization-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AuthorizationMode {
    /// Everyone may do everything; anonymous requests are then refused, as kube-apiserver
    /// refuses them with this mode.
    AlwaysAllow,
    /// `system:masters` may do everything; everyone else what the stored roles and bindings
    /// of `rbac.authorization.k8s.io` grant (served, with kube-apiserver's bootstrap roles).
    #[default]
    Rbac,
}

/// Bearer tokens in kube-apiserver's `--token-auth-file` format (CSV lines
/// `token,user,uid[,"group1,group2"]`), with where they were read, for errors.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// Where they come from (a file name, a flag).
    pub source: String,
    /// The CSV text.
    pub csv: String,
}

/// What to serve and how; [`Config::new`] gives kube-apiserver's defaults.
#[derive(Debug, Clone)]
pub struct Config {
    /// The embedded database, the certificates and the kubeconfig (created for its owner only).
    pub data_dir: PathBuf,
    /// The address to listen on; port 0 takes any free port.
    pub listen: SocketAddr,
    /// The embedded store or etcd.
    pub storage: Storage,
    /// The prefix of every key (kube-apiserver's `--etcd-prefix`, default `/registry`).
    pub prefix: String,
    /// The version each group is stored in, by group (default: v1 for both, as 1.35).
    pub storage_versions: BTreeMap<String, String>,
    /// kube-apiserver's `--runtime-config`: `GROUP/VERSION` (or `api/all`) to `true` or
    /// `false`. Without an entry a version is served if kube-apiserver 1.37 serves it: `v1`
    /// of flowcontrol and apiregistration; their older versions only when enabled here.
    pub runtime_config: BTreeMap<String, bool>,
    /// Create and keep the bootstrap APF configuration (kube-apiserver's configuration
    /// producer): mandatory objects always, suggested ones while their
    /// `apf.kubernetes.io/autoupdate-spec` annotation is true.
    pub bootstrap: bool,
    /// With [`Config::bootstrap`], the suggested objects too, not only the mandatory ones.
    pub suggested_apf_configuration: bool,
    /// Bearer tokens, beside the client certificates of the server's authority.
    pub tokens: Option<Tokens>,
    /// Serve requests without credentials as `system:anonymous` (false: 401); turned off,
    /// with kube-apiserver's warning, under [`AuthorizationMode::AlwaysAllow`].
    pub anonymous_auth: bool,
    /// Who may do what: RBAC by default.
    pub authorization_mode: AuthorizationMode,
    /// Guard requests with API Priority and Fairness, configured by the stored objects; when
    /// off, the max-in-flight filter limits them as in kube-apiserver.
    pub enable_priority_and_fairness: bool,
    /// kube-apiserver's `--max-requests-inflight`: with the next, the seats APF shares; without
    /// APF, the read-only requests served at once (0: no limit).
    pub max_requests_inflight: i32,
    /// kube-apiserver's `--max-mutating-requests-inflight` (without APF, the mutating
    /// requests served at once; 0: no limit).
    pub max_mutating_requests_inflight: i32,
    /// CustomResourceDefinitions applied at start, each with where it was read (for errors).
    pub crds: Vec<(String, serde_json::Value)>,
    /// Conversion webhooks answered in this process, by CRD name: a CRD of that name whose
    /// conversion strategy is `Webhook` has its reviews answered by the handler, whatever its
    /// `clientConfig` names (a test's Rust conversions; nothing sent over the network).
    pub in_process_conversions: Vec<(String, apfkit_apiextensions::webhook::ReviewHandler)>,
    /// How often history is compacted; zero never compacts.
    pub compaction_interval: Duration,
    /// How long a request other than a watch may take before it is answered 504, and how
    /// long a request waits for etcd while no member answers (`--request-timeout`, 60 s).
    pub request_timeout: Duration,
    /// Auditing: off unless both a policy and a log are given, as in kube-apiserver.
    pub audit: AuditConfig,
    /// Which addresses EndpointSlices may hold: kube-apiserver's rule by default, or
    /// loopback ones too, for extension servers that listen beside this one.
    pub endpoints: Endpoints,
    /// Which of kube-controller-manager's controllers run beside the API: every one by
    /// default.
    pub controllers: Controllers,
    /// kube-apiserver's `--service-account-issuer`: the `iss` of the service-account tokens
    /// it issues (TokenRequest), signed with the data directory's `service-account.key`.
    pub service_account_issuer: String,
    /// kube-apiserver's `--api-audiences`: the audiences its tokens are for by default, and
    /// that it accepts (the issuer when empty).
    pub api_audiences: Vec<String>,
    /// kube-apiserver's `--service-account-jwks-uri`: the `jwks_uri` of the issuer's OpenID
    /// Connect discovery document; by default the keys' path at the address served
    /// (`https://ADDRESS/openid/v1/jwks`). A server started in process serves no discovery
    /// documents without it, as kube-apiserver without an external address.
    pub service_account_jwks_uri: Option<String>,
}

/// The controllers of kube-controller-manager the server runs beside the API, as its
/// `--controllers` flag names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Controllers {
    /// `garbage-collector-controller`: objects whose owners are gone deleted, dependents
    /// orphaned or deleted first as their owner's delete asked (`apfkit-garbagecollector`).
    pub garbage_collector: bool,
    /// `namespace-controller`: a deleted namespace's objects deleted, then the namespace.
    pub namespace: bool,
    /// `root-ca-certificate-publisher-controller`: the `kube-root-ca.crt` ConfigMap of every
    /// active namespace, holding the server's certificate authority.
    pub root_ca_certificate_publisher: bool,
    /// `serviceaccount-controller`: the `default` ServiceAccount of every active namespace.
    pub service_account: bool,
    /// `storage-version-migrator-controller`: StorageVersionMigrations run.
    pub storage_version_migrator: bool,
}

impl Default for Controllers {
    fn default() -> Self {
        Controllers::from_flags([true; 5])
    }
}

impl Controllers {
    /// The controllers' names, as kube-controller-manager knows them, in its order (sorted).
    pub const NAMES: [&str; 5] = [
        "garbage-collector-controller",
        "namespace-controller",
        "root-ca-certificate-publisher-controller",
        "serviceaccount-controller",
        "storage-version-migrator-controller",
    ];
    /// Each controller's alias, in the order of [`Controllers::NAMES`].
    const ALIASES: [&str; 5] = [
        "garbagecollector",
        "namespace",
        "root-ca-cert-publisher",
        "serviceaccount",
        "svm",
    ];

    /// The controllers turned on, in the order of [`Controllers::NAMES`].
    fn from_flags(on: [bool; 5]) -> Controllers {
        let [
            garbage_collector,
            namespace,
            root_ca_certificate_publisher,
            service_account,
            storage_version_migrator,
        ] = on;
        Controllers {
            garbage_collector,
            namespace,
            root_ca_certificate_publisher,
            service_account,
            storage_version_migrator,
        }
    }

    /// Reads kube-controller-manager's `--controllers` list: `*` turns on every controller
    /// on by default (all of these), `NAME` one, `-NAME` turns one off; a controller neither
    /// named nor covered by `*` is off. Aliases (`garbagecollector`, `namespace`,
    /// `root-ca-cert-publisher`, `serviceaccount`, `svm`) are its too.
    ///
    /// # Errors
    ///
    /// A name that is not one of [`Controllers::NAMES`] (nor an alias), in words.
    pub fn parse(list: &[String]) -> Result<Controllers, String> {
        let name_of = |given: &str| {
            Self::NAMES
                .iter()
                .zip(Self::ALIASES)
                .position(|(name, alias)| given == *name || given == alias)
                .ok_or_else(|| {
                    format!(
                        "{given:?} is not in the list of known controllers: {}",
                        Self::NAMES.join(", ")
                    )
                })
        };
        let all = list.iter().any(|entry| entry == "*");
        let mut on = [all; 5];
        for entry in list.iter().filter(|entry| *entry != "*") {
            match entry.strip_prefix('-') {
                Some(name) => on[name_of(name)?] = false,
                None => on[name_of(entry)?] = true,
            }
        }
        Ok(Controllers::from_flags(on))
    }
}

/// kube-apiserver's `--audit-policy-file` and `--audit-log-*` flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditConfig {
    /// The `audit.k8s.io/v1` Policy file.
    pub policy_file: Option<PathBuf>,
    /// Where events are written as JSON lines; `-` for standard output.
    pub log_path: Option<PathBuf>,
    /// How the log file is rotated.
    pub rotation: apfkit_apiserver::audit::log::Rotation,
    /// Events queued for the writer before requests wait or events are dropped (0: 10,000);
    /// whatever their number, at most [`apfkit_apiserver::audit::log::DEFAULT_BUFFER_BYTES`]
    /// of them.
    pub buffer: usize,
    /// `--audit-log-mode`: requests wait for room in the log's buffer (blocking, kube's
    /// default), or events that find it full are dropped (batch).
    pub mode: apfkit_apiserver::audit::log::Mode,
    /// `--audit-log-truncate-enabled` with `--audit-log-truncate-max-event-size`: the largest
    /// event written; a larger one loses its request and response objects, and is dropped
    /// when still larger. `None`: no truncation, as kube-apiserver's default.
    pub max_event_bytes: Option<usize>,
}

impl Config {
    /// kube-apiserver's defaults, on the embedded store in `data_dir`, listening on any free
    /// port of 127.0.0.1.
    pub fn new(data_dir: impl Into<PathBuf>) -> Config {
        Config {
            data_dir: data_dir.into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            storage: Storage::Embedded,
            prefix: "/registry".to_owned(),
            storage_versions: BTreeMap::new(),
            runtime_config: BTreeMap::new(),
            bootstrap: true,
            suggested_apf_configuration: true,
            tokens: None,
            anonymous_auth: true,
            authorization_mode: AuthorizationMode::Rbac,
            enable_priority_and_fairness: true,
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            crds: Vec::new(),
            in_process_conversions: Vec::new(),
            compaction_interval: Duration::from_secs(300),
            request_timeout: apfkit_apiserver::http::REQUEST_TIMEOUT,
            audit: AuditConfig::default(),
            endpoints: Endpoints::AsKubeApiserver,
            controllers: Controllers::default(),
            service_account_issuer: apfkit_corekinds::DEFAULT_ISSUER.to_owned(),
            api_audiences: Vec::new(),
            service_account_jwks_uri: None,
        }
    }
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Settings that do not make sense (an unknown group, seats that do not add up).
    #[error("{0}")]
    Settings(String),
    /// Something the server needs could not be had: its directory, store, credentials, address,
    /// or its APF configuration.
    #[error("{0}")]
    Start(String),
    /// A CRD of [`Config::crds`] was refused.
    #[error("{location}: {message}")]
    Crd {
        /// Where it was read.
        location: String,
        /// kube-apiserver's message.
        message: String,
    },
}

/// A server started by [`start`], serving until [`Server::shutdown`].
pub struct Server {
    url: String,
    kubeconfig: PathBuf,
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<()>,
}

impl Server {
    /// `https://ADDRESS`, the address bound.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The kubeconfig written for it: contexts `apfkit` (an administrator in
    /// `system:masters`, current) and `apfkit-user` (a plain user).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Stops accepting requests and waits up to 5 s for those in flight (watches included);
    /// the server's background work (its informers and controllers, the bootstrap producer,
    /// compaction) ends then, and the store is closed once the last of it has.
    pub async fn shutdown(self) {
        let _ = self.stop.send(());
        let _ = self.serving.await;
    }
}

/// Starts a server in this process on the current tokio runtime (multi-threaded): binds
/// [`Config::listen`], makes or loads the credentials in [`Config::data_dir`], writes its
/// kubeconfig, creates the bootstrap configuration and the CRDs, and serves in a task.
///
/// # Errors
///
/// As [`Error`] says.
pub async fn start(config: Config) -> Result<Server, Error> {
    let built = open_and_build(&config).await?;
    let listening = listen(&config, &built).await?;
    let server = built.server;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let Listening {
        listener,
        tls,
        url,
        kubeconfig,
    } = listening;
    let serving = tokio::spawn(server.serve(
        listener,
        tls,
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
    ));
    Ok(Server {
        url,
        kubeconfig,
        stop,
        serving,
    })
}

/// A server started by [`start_in_process`]: its API answered in this process, with no
/// socket, TLS or port between it and its clients. It stops when dropped.
pub struct InProcess {
    server: Arc<ApiServer<ServeObject>>,
    service: InProcessService,
}

impl InProcess {
    /// The API as a tower service, cheap to clone: every request is authenticated as the
    /// administrator of [`Config::data_dir`] (`apfkit-admin`, in `system:masters`), as that
    /// client certificate is over TLS; a request acts as someone else with kube's
    /// `Impersonate-User` and `Impersonate-Group` headers. A
    /// `kube::Client::new(service, "default")` talks to it. Once the server has stopped,
    /// requests fail as a refused connection.
    pub fn service(&self) -> InProcessService {
        self.service.clone()
    }

    /// Stops the server's background work (its informers and controllers, the bootstrap
    /// producer, compaction); watches in flight end. Dropping it does the same.
    pub fn stop(&self) {
        self.server.stop();
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.server.stop();
    }
}

/// Starts a server in this process as [`start`] does, without listening: its clients call
/// [`InProcess::service`]. [`Config::listen`] is not used; the data directory still holds
/// the server's credentials (and the embedded store, if that is [`Config::storage`]).
///
/// # Errors
///
/// As [`Error`] says.
pub async fn start_in_process(config: Config) -> Result<InProcess, Error> {
    let built = open_and_build(&config).await?;
    built.publish_issuer_discovery(&config, None);
    let Built {
        server,
        credentials,
        ..
    } = built;
    let administrator = credentials
        .clients
        .first()
        .map(|(certificate, _)| certificate.as_str())
        .unwrap_or_default();
    let service = server
        .clone()
        .in_process(administrator)
        .map_err(|e| Error::Start(format!("the administrator's certificate: {e}")))?;
    Ok(InProcess { server, service })
}

/// Runs a server as `apfkit serve` does: as [`start`], then says `<name>: listening on
/// https://ADDRESS; kubeconfig: PATH` on standard error and serves until SIGINT or SIGTERM.
///
/// # Errors
///
/// As [`Error`] says.
pub async fn run(config: Config, name: &str) -> Result<(), Error> {
    let built = open_and_build(&config).await?;
    let listening = listen(&config, &built).await?;
    built.server.serve_listening(name, listening).await;
    Ok(())
}

/// Binds [`Config::listen`] for `built`, then publishes its issuer's discovery with the
/// address bound.
async fn listen(config: &Config, built: &Built) -> Result<Listening, Error> {
    let listening = built
        .server
        .listen(config.listen, &config.data_dir)
        .await
        .map_err(|e| Error::Start(e.to_string()))?;
    let address = listening.url.trim_start_matches("https://");
    built.publish_issuer_discovery(config, Some(address));
    Ok(listening)
}

/// The server of `config` on its store, opened: built and running, not yet serving.
async fn open_and_build(config: &Config) -> Result<Built, Error> {
    match open(config).await? {
        Opened::Embedded(backend) => build(config, backend, Bootstrap::Write).await,
        Opened::Etcd(backend) => build(config, backend, Bootstrap::Write).await,
        Opened::Memory => {
            let key = template::key(config);
            match template::find(&key) {
                Some(template) => {
                    build(config, template.store(), Bootstrap::Copied(template)).await
                }
                None => {
                    let keep = move |store: &MemoryBackend, rbac, credentials| {
                        template::keep(key, template::Template::new(store, rbac, credentials));
                    };
                    let bootstrap = Bootstrap::WriteAndKeep(Box::new(keep));
                    build(config, MemoryBackend::default(), bootstrap).await
                }
            }
        }
    }
}

/// RBAC's policy and the revision it was read at.
type PolicyRead = (
    Arc<apfkit_rbac::Policy>,
    apfkit_apiserver::storage::Revision,
);

/// What keeps a template of a store just bootstrapped, with RBAC's policy and the server's
/// credentials.
type KeepTemplate<B> =
    Box<dyn FnOnce(&B, Option<PolicyRead>, apfkit_apiserver::tls::CredentialFiles) + Send>;

/// How `build` comes by the bootstrap objects.
enum Bootstrap<B> {
    /// Writes them where missing or changed, as kube-apiserver does at every start.
    Write,
    /// Writes them, then gives the store and RBAC's policy to the function.
    WriteAndKeep(KeepTemplate<B>),
    /// The store is a copy of this template's, which holds them.
    Copied(Arc<template::Template>),
}

/// A store, opened.
enum Opened {
    Embedded(SqliteBackend),
    Etcd(EtcdBackend),
    /// A store in memory: made, or copied from a template, as the server is built.
    Memory,
}

/// Creates the data directory and opens the store.
async fn open(config: &Config) -> Result<Opened, Error> {
    private_data_dir(&config.data_dir)
        .map_err(|e| Error::Start(format!("{}: {e}", config.data_dir.display())))?;
    match &config.storage {
        Storage::Embedded => {
            let path = config.data_dir.join("apfkit.db");
            SqliteBackend::open(&path)
                .map(Opened::Embedded)
                .map_err(|e| Error::Start(format!("{}: {e}", path.display())))
        }
        Storage::Etcd(servers) => EtcdBackend::connect(servers)
            .await
            .map(|etcd| Opened::Etcd(etcd.with_unavailable_wait(config.request_timeout)))
            .map_err(|e| Error::Start(format!("--etcd-servers: {e}"))),
        Storage::Memory => Ok(Opened::Memory),
    }
}

/// Creates the data directory for its owner only (0700, as etcd creates its data directory);
/// one that exists and others may read is kept, with etcd's warning.
fn private_data_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        let existed = dir.is_dir();
        builder.mode(0o700);
        builder.create(dir)?;
        let mode = std::fs::metadata(dir)?.permissions().mode() & 0o777;
        if existed && mode & 0o077 != 0 {
            eprintln!(
                "warning: directory {} exists, but its permission is {mode:o}; 700 keeps others from reading the stored objects and keys",
                dir.display()
            );
        }
        Ok(())
    }
    #[cfg(not(unix))]
    builder.create(dir)
}

/// Whether `version` of `group` is served: as `config.runtime_config` says, else as
/// kube-apiserver 1.37 serves it (only `v1`: the betas of flowcontrol were removed in 1.32,
/// apiregistration's `v1beta1` in 1.22).
fn serves(config: &Config, group: &str, version: &str) -> bool {
    config
        .runtime_config
        .get(&format!("{group}/{version}"))
        .or_else(|| config.runtime_config.get("api/all"))
        .copied()
        .unwrap_or(version == "v1")
}

/// The served resources: every resource of the generated registry (flowcontrol and
/// apiregistration), in the storage version of its group, kept where kube-apiserver keeps it
/// (`apfkit_storage::etcd::RESOURCES`), with the scope and subresources of its kind.
fn resources(
    config: &Config,
    rbac: &Arc<apfkit_rbac::RbacAuthorizer>,
) -> Result<Vec<Served<ServeObject>>, Error> {
    let mut kinds: Vec<&apfkit_types::KindInfo> = Vec::new();
    for info in apfkit_types::KINDS.iter().filter(|k| k.plural.is_some()) {
        if !kinds
            .iter()
            .any(|k| k.group == info.group && k.plural == info.plural)
        {
            kinds.push(info);
        }
    }
    for group in config.storage_versions.keys() {
        if !kinds.iter().any(|k| k.group == *group) {
            return Err(Error::Settings(format!(
                "--storage-version {group}: not a served group"
            )));
        }
    }
    let mut served = Vec::new();
    for info in kinds {
        let plural = info.plural.unwrap_or_default();
        let stored = RESOURCES
            .iter()
            .find(|r| r.resource.group == info.group && r.resource.resource == plural)
            .ok_or_else(|| Error::Start(format!("no place in etcd for {plural}.{}", info.group)))?;
        let storage_version = config
            .storage_versions
            .get(info.group)
            .map_or(DEFAULT_STORAGE_VERSION, String::as_str);
        let kind = GroupVersionKind::new(info.group, storage_version.to_owned(), info.kind);
        let mut resource_config = ResourceConfig::builtin(kind, plural, info.namespaced)
            .with_status(info.subresources.contains(&"status"))
            .stored_at(stored.path, stored.encoding)
            .with_schema(Arc::new(kind_schema))
            .with_kube_openapi();
        if info.group == "apiregistration.k8s.io" {
            // kube-aggregator puts APIServices in the `api-extensions` category, and its
            // strategy tracks no generation.
            resource_config = resource_config
                .with_categories(["api-extensions"])
                .with_generation(Generation::Untracked);
        }
        let all = Served::new(&SCHEME, resource_config)
            .map_err(|e| Error::Settings(format!("--storage-version: {e}")))?;
        let enabled: Vec<_> = all
            .versions
            .iter()
            .filter(|codec| serves(config, info.group, codec.version()))
            .cloned()
            .collect();
        if !enabled
            .iter()
            .any(|codec| codec.version() == storage_version)
        {
            return Err(Error::Settings(format!(
                "--storage-version {}={storage_version}: the version is not served (enable it \
                 with --runtime-config {}/{storage_version}=true)",
                info.group, info.group
            )));
        }
        let resource = Served::with_versions(all.config, all.plural, enabled)
            .and_then(apfkit_apiextensions::object::builtin)
            .map_err(|e| Error::Settings(format!("--storage-version: {e}")))?
            .with_strategy(BuiltinStrategy {
                printer: printers::printer(info.kind),
                // kube-aggregator's APIService strategies allow no unconditional update;
                // flowcontrol's do.
                unconditional_updates: info.kind != "APIService",
                local_available_on_create: info.kind == "APIService",
            });
        served.push(resource);
    }
    served.push(
        apfkit_namespaces::resource::<HubObject>()
            .map_err(|e| Error::Start(format!("namespaces: {e}")))?,
    );
    // ServiceAccounts with their `token` subresource (TokenRequest, answered by the tokens).
    for mut resource in apfkit_corekinds::resources::<HubObject>()
        .map_err(|e| Error::Start(format!("configmaps, secrets, leases: {e}")))?
    {
        if resource.plural == "serviceaccounts" {
            resource.config = resource
                .config
                .with_created_subresource("token", apfkit_corekinds::token_request_kind());
        }
        served.push(resource);
    }
    served.push(
        apfkit_storagemigration::resource::<HubObject>()
            .map_err(|e| Error::Start(format!("storageversionmigrations: {e}")))?,
    );
    served.extend(
        apfkit_aggregator::resources::<HubObject>(config.endpoints)
            .map_err(|e| Error::Start(format!("services: {e}")))?,
    );
    if config.authorization_mode == AuthorizationMode::Rbac {
        served.extend(
            apfkit_rbac::resources::<HubObject>(rbac)
                .map_err(|e| Error::Start(format!("rbac: {e}")))?,
        );
    }
    Ok(served)
}

/// The JSON Schema of a kind from the generated registry.
fn kind_schema(kind: &GroupVersionKind) -> Option<serde_json::Value> {
    apfkit_types::find_kind(kind)?.json_schema()
}

/// kube-apiserver's strategies of FlowSchemas, PriorityLevelConfigurations and APIServices
/// (`pkg/registry/flowcontrol/*/strategy.go`, kube-aggregator's `registry/apiservice`): their
/// validation and their columns.
struct BuiltinStrategy {
    /// The kind's columns, if kube-apiserver prints it with its own.
    printer: Option<Printer>,
    /// `AllowUnconditionalUpdate`.
    unconditional_updates: bool,
    /// Whether a new object without `spec.service` is made available at once (an
    /// APIService: kube-aggregator's `PrepareForCreate` marks a local one `Available`).
    local_available_on_create: bool,
}

impl Strategy<ServeObject> for BuiltinStrategy {
    fn prepare_for_create(&self, stored: &mut serde_json::Value) {
        if self.local_available_on_create
            && stored
                .pointer("/spec/service")
                .is_none_or(serde_json::Value::is_null)
        {
            stored["status"] = serde_json::json!({"conditions": [{"type": "Available",
                "status": "True", "lastTransitionTime": apfkit_apiserver::store::now(),
                "reason": "Local", "message": "Local APIServices are always available"}]});
        }
    }
    fn validate(
        &self,
        object: &ServeObject,
        old: Option<&ServeObject>,
        api_version: &str,
    ) -> Vec<Cause> {
        validate(object, old, api_version)
    }
    fn allows_unconditional_update(&self) -> bool {
        self.unconditional_updates
    }
    fn printer(&self) -> Option<&Printer> {
        self.printer.as_ref()
    }
}

/// kube-apiserver's validation of flowcontrol and apiregistration objects, in the request's
/// version `api_version`.
fn validate(object: &ServeObject, old: Option<&ServeObject>, api_version: &str) -> Vec<Cause> {
    let ServedObject::Builtin(object) = object else {
        return Vec::new();
    };
    let old_priority_level = match old {
        Some(ServedObject::Builtin(HubObject::PriorityLevelConfiguration(level))) => Some(level),
        _ => None,
    };
    let options = Options {
        request_version: Some(api_version),
        allow_zero_shares: true,
        old_priority_level,
    };
    validation::validate(object, &options)
        .into_iter()
        .map(|error| Cause::from(&error))
        .collect()
}

/// The encodings of the server: the generated scheme's (flowcontrol, apiregistration),
/// and the protobuf messages of RBAC, Services, EndpointSlices, Namespaces, ConfigMaps,
/// Secrets, ServiceAccounts, Leases,
/// StorageVersionMigrations and CustomResourceDefinitions, which client-go's typed clients
/// (`kubectl create clusterrolebinding`, `kubectl create service`, the e2e framework's
/// namespaces and CRDs, kube-controller-manager's migrator) send.
static ENCODINGS: ValueEncodings = ValueEncodings {
    json: |document, pretty| (apfkit_scheme::scheme::ENCODINGS.json)(document, pretty),
    protobuf: |document| match apfkit_rbac::protobuf::write(document)
        .or_else(|| apfkit_aggregator::protobuf::write(document))
        .or_else(|| apfkit_namespaces::protobuf::write(document))
        .or_else(|| apfkit_corekinds::protobuf::write(document))
        .or_else(|| apfkit_storagemigration::protobuf::write(document))
        .or_else(|| apfkit_apiextensions::protobuf::write(document))
    {
        Some(written) => written.map_err(Into::into),
        None => (apfkit_scheme::scheme::ENCODINGS.protobuf)(document),
    },
    read_protobuf: |bytes, limits| match apfkit_rbac::protobuf::read(bytes, limits)
        .or_else(|| apfkit_aggregator::protobuf::read(bytes, limits))
        .or_else(|| apfkit_namespaces::protobuf::read(bytes, limits))
        .or_else(|| apfkit_corekinds::protobuf::read(bytes, limits))
        .or_else(|| apfkit_storagemigration::protobuf::read(bytes, limits))
        .or_else(|| apfkit_apiextensions::protobuf::read(bytes, limits))
    {
        Some(read) => read,
        None => (apfkit_scheme::scheme::ENCODINGS.read_protobuf)(bytes, limits),
    },
};

/// A server built, and the credentials of its data directory.
struct Built {
    server: Arc<ApiServer<ServeObject>>,
    credentials: apfkit_apiserver::tls::Credentials,
    /// The service-account tokens it issues, whose discovery documents are published once
    /// the address served is known ([`Built::publish_issuer_discovery`]).
    tokens: Arc<apfkit_corekinds::ServiceAccountTokens>,
}

impl Built {
    /// Serves the service-account issuer's OpenID Connect discovery with
    /// [`Config::service_account_jwks_uri`], or else the keys' path at `address` (the
    /// `HOST:PORT` served; `None` in process). As kube-apiserver, a server that cannot say
    /// where its keys are, or whose issuer is no `https` URL, serves neither document; the
    /// latter with a warning.
    fn publish_issuer_discovery(&self, config: &Config, address: Option<&str>) {
        let jwks_uri = config.service_account_jwks_uri.as_deref();
        match self.tokens.openid_metadata(jwks_uri, address) {
            Ok(metadata) => {
                self.server.set_openid_metadata(metadata);
            }
            Err(error) if jwks_uri.is_some() || address.is_some() => eprintln!(
                "apfkit serve: warning: the service account issuer's OpenID discovery is not \
                 served: {error}"
            ),
            Err(_) => {}
        }
    }
}

/// The server on `backend`, with its bootstrap objects, APF, CRDs and compaction running, and
/// its credentials (made in the data directory when missing; not flushed to the disk when the
/// store is in memory, which does not outlive the process either).
async fn build<B: Backend + 'static>(
    config: &Config,
    backend: B,
    bootstrap: Bootstrap<B>,
) -> Result<Built, Error> {
    let flush = match config.storage {
        Storage::Memory => apfkit_apiserver::tls::Flush::Never,
        Storage::Embedded | Storage::Etcd(_) => apfkit_apiserver::tls::Flush::Always,
    };
    if let Bootstrap::Copied(template) = &bootstrap {
        template
            .credentials
            .write_into(&config.data_dir, flush)
            .map_err(|e| Error::Start(format!("credentials: {e}")))?;
    }
    let credentials = apfkit_apiserver::tls::ensure(&config.data_dir, &[], flush)
        .map_err(|e| Error::Start(format!("credentials: {e}")))?;
    let backend = Arc::new(backend);
    let objects = Objects::new(
        Some(&ENCODINGS),
        backend.clone(),
        &config.prefix,
        Limits::default(),
    );
    let rbac_authorizer = Arc::new(apfkit_rbac::RbacAuthorizer::default());
    // Service-account tokens: signed with the data directory's key, issued as
    // `--service-account-issuer`, for `--api-audiences`.
    let key = apfkit_apiserver::tls::ensure_service_account_key(&config.data_dir, flush)
        .map_err(|e| Error::Start(format!("service-account key: {e}")))?;
    let tokens = Arc::new(
        apfkit_corekinds::ServiceAccountTokens::new(
            &key,
            &config.service_account_issuer,
            config.api_audiences.clone(),
        )
        .map_err(|e| Error::Start(format!("service-account key: {e}")))?,
    );
    let mut server = ApiServer::new(
        objects,
        resources(config, &rbac_authorizer)?,
        VersionInfo::new(
            "1",
            "37",
            format!("v1.37.2-apfkit.{}", env!("CARGO_PKG_VERSION")),
        ),
    )
    .with_subresource_creator("", "serviceaccounts", "token", tokens.clone())
    .with_authenticator(authenticator(config)?)
    .with_request_timeout(config.request_timeout)
    .with_health_checks(health_checks(config));
    server = match config.authorization_mode {
        AuthorizationMode::AlwaysAllow => server.with_authorizer(Arc::new(AlwaysAllow)),
        AuthorizationMode::Rbac => server.with_authorizer(Arc::new(Union(vec![
            Arc::new(PrivilegedGroups::masters()),
            rbac_authorizer.clone(),
        ]))),
    };
    let registry = prometheus::Registry::new();
    server = server
        .with_metrics(&registry)
        .map_err(|e| Error::Start(format!("metrics: {e}")))?;
    if let Some(auditor) = auditor(&config.audit, &registry)? {
        server = server.with_auditor(Arc::new(auditor));
    }
    let copied = match &bootstrap {
        Bootstrap::Copied(template) => Some(template.clone()),
        Bootstrap::Write | Bootstrap::WriteAndKeep(_) => None,
    };
    if config.bootstrap && copied.is_none() {
        ensurer::ensure_once(&server, config.suggested_apf_configuration).await?;
    }
    // kube-aggregator: requests of APIServices behind a Service go to their extension server,
    // as the front-proxy client of the data directory.
    let front_proxy = apfkit_apiserver::tls::ensure_front_proxy(&config.data_dir, flush)
        .map_err(|e| Error::Start(format!("front-proxy credentials: {e}")))?;
    let aggregator = apfkit_aggregator::Aggregator::new(apfkit_aggregator::Identity {
        cert_pem: front_proxy.client_cert_pem,
        key_pem: front_proxy.client_key_pem,
    });
    server = server.with_handler_layers(aggregator.handler_layers());
    let server = if config.enable_priority_and_fairness {
        let limit = config
            .max_requests_inflight
            .checked_add(config.max_mutating_requests_inflight)
            .filter(|limit| *limit > 0)
            .ok_or_else(|| {
                Error::Settings(
                    "--max-requests-inflight and --max-mutating-requests-inflight must add up \
                     to a positive number"
                        .to_owned(),
                )
            })?;
        let (apf, read_at) = flow_control::configure_and_mark_dangling(&server, limit).await?;
        // As kube-apiserver: a request waits in its queue a quarter of its deadline at most.
        let guard =
            apfkit_dispatcher::guard::Guard::with_wait_limit(apf, config.request_timeout / 4);
        guard.record_metrics(
            apfkit_dispatcher::metrics::ApfMetrics::register(&registry)
                .map_err(|e| Error::Start(format!("metrics: {e}")))?,
        );
        let stats = estimates::ObjectStats::default();
        stats.refresh(&server).await;
        let (layered, counted, dumped) = (guard.clone(), stats.clone(), guard.clone());
        server = server
            .with_routes(move |routes| flow_control::debug_routes(routes, &dumped))
            .with_layers(move |routes| {
                routes
                    .layer(flow_control::layer(layered.clone(), counted.clone()))
                    .layer(axum::middleware::from_fn(flow_control::annotate_audit))
            });
        let server = Arc::new(server);
        flow_control::keep_configured(server.clone(), guard, limit, read_at);
        estimates::keep_counted(server.clone(), stats);
        server
    } else {
        // As kube-apiserver without APF: the max-in-flight filter, where APF would run.
        let limits = apfkit_apiserver::http::MaxInFlight::new(
            usize::try_from(config.max_requests_inflight).unwrap_or(0),
            usize::try_from(config.max_mutating_requests_inflight).unwrap_or(0),
        );
        server = server.with_layers(move |routes| {
            routes.layer(axum::middleware::from_fn_with_state(
                limits.clone(),
                apfkit_apiserver::http::MaxInFlight::limit,
            ))
        });
        Arc::new(server)
    };
    // kube-apiserver's system namespaces, and kube-controller-manager's namespace controller.
    let namespaces = Arc::new(
        apfkit_namespaces::Namespaces::new(server.clone()).map_err(|e| Error::Start(e.message))?,
    );
    if copied.is_none() {
        namespaces
            .ensure_system()
            .await
            .map_err(|e| Error::Start(format!("the system namespaces: {}", e.message)))?;
    }
    if config.controllers.namespace {
        namespaces.keep_synced();
    }
    if config.bootstrap {
        ensurer::keep_ensured(server.clone(), config.suggested_apf_configuration);
    }
    let mut policy_read = None;
    if config.authorization_mode == AuthorizationMode::Rbac {
        let rbac = Arc::new(
            apfkit_rbac::Rbac::new(server.clone(), rbac_authorizer.clone())
                .map_err(|e| Error::Start(e.message))?,
        );
        let read_at = match copied.as_ref().and_then(|template| template.rbac.clone()) {
            Some((policy, read_at)) => {
                rbac_authorizer.set_policy(policy);
                read_at
            }
            None => {
                rbac.ensure_bootstrap()
                    .await
                    .map_err(|e| Error::Start(format!("RBAC bootstrap policy: {}", e.message)))?;
                rbac.sync()
                    .await
                    .map_err(|e| Error::Start(format!("RBAC policy: {}", e.message)))?
            }
        };
        policy_read = Some((rbac_authorizer.policy(), read_at));
        rbac.keep_synced(read_at);
    }
    if copied.is_none() {
        // kube-aggregator's autoregistration of the built-in group-versions, done before the
        // template is kept (its controller, started below, then finds them made).
        aggregator
            .register_local(server.clone())
            .await
            .map_err(|e| Error::Start(format!("aggregator: {}", e.message)))?;
    }
    if let Bootstrap::WriteAndKeep(keep) = bootstrap {
        let credentials = apfkit_apiserver::tls::CredentialFiles::read(&config.data_dir)
            .map_err(|e| Error::Start(format!("credentials: {e}")))?;
        keep(&backend, policy_read, credentials);
    }
    let mut custom = CustomResources::new(server.clone(), server.resources())
        .map_err(|e| Error::Start(e.message))?;
    for (crd, handler) in &config.in_process_conversions {
        custom = custom.with_in_process_conversion(crd.clone(), handler.clone());
    }
    let custom = Arc::new(custom);
    for (location, manifest) in &config.crds {
        custom.apply(manifest).await.map_err(|e| Error::Crd {
            location: location.clone(),
            message: e.message,
        })?;
    }
    custom.sync().await.map_err(|e| Error::Start(e.message))?;
    custom.keep_synced();
    if config.controllers.garbage_collector {
        Arc::new(apfkit_garbagecollector::GarbageCollector::new(
            server.clone(),
        ))
        .keep_collecting();
    }
    server.set_token_authenticator(tokens.clone());
    // kube-controller-manager's `default` ServiceAccounts and `kube-root-ca.crt` ConfigMaps.
    if config.controllers.service_account {
        apfkit_corekinds::ServiceAccounts::new(server.clone())
            .map_err(|e| Error::Start(e.message))?
            .keep_synced();
    }
    if config.controllers.root_ca_certificate_publisher {
        apfkit_corekinds::RootCaPublisher::new(server.clone(), &credentials.ca_pem)
            .map_err(|e| Error::Start(e.message))?
            .keep_synced();
    }
    if config.controllers.storage_version_migrator {
        Arc::new(
            apfkit_storagemigration::Migrations::new(server.clone())
                .map_err(|e| Error::Start(e.message))?,
        )
        .keep_synced();
    }
    aggregator
        .start(server.clone())
        .await
        .map_err(|e| Error::Start(format!("aggregator: {}", e.message)))?;
    if !config.compaction_interval.is_zero() {
        let interval = config.compaction_interval;
        server.spawn_until_stopped(async move {
            Compactor::new().run(&backend, interval).await;
        });
    }
    Ok(Built {
        server,
        credentials,
        tokens,
    })
}

/// The post-start hooks of the work `build` does before the server serves, named and ordered
/// as kube-apiserver's: a server whose start failed never serves, so each has finished when
/// the health endpoints are asked. kube-apiserver's hooks for work apfkit does not do (the
/// `kubernetes` Service, PriorityClasses, the authentication ConfigMap, ClusterIP repair, the
/// OpenAPI v2 of extension servers, identity leases) are not listed (decision 251).
fn health_checks(config: &Config) -> Vec<HealthCheck> {
    let mut hooks = vec![
        "start-apiserver-admission-initializer",
        "generic-apiserver-start-informers",
    ];
    if config.enable_priority_and_fairness {
        hooks.extend([
            "priority-and-fairness-config-consumer",
            "priority-and-fairness-filter",
            "storage-object-count-tracker-hook",
        ]);
    }
    hooks.extend([
        "start-apiextensions-informers",
        "start-apiextensions-controllers",
        "crd-informer-synced",
        "start-system-namespaces-controller",
        // Every storage ready to serve (kube: its watch caches initialized, 1.37's GA
        // `WatchCacheInitializationPostStartHook`); apfkit's are before it serves.
        "storage-readiness",
    ]);
    if config.authorization_mode == AuthorizationMode::Rbac {
        hooks.push("rbac/bootstrap-roles");
    }
    if config.bootstrap {
        hooks.push("priority-and-fairness-config-producer");
    }
    hooks.extend([
        "start-kube-aggregator-informers",
        "apiservice-status-local-available-controller",
        "apiservice-status-remote-available-controller",
        "apiservice-registration-controller",
        "apiservice-discovery-controller",
        "kube-apiserver-autoregistration",
    ]);
    let mut checks: Vec<HealthCheck> = hooks
        .into_iter()
        .map(HealthCheck::post_start_hook)
        .collect();
    checks.push(HealthCheck::finished("autoregister-completion"));
    checks.push(HealthCheck::post_start_hook(
        "apiservice-openapiv3-controller",
    ));
    checks
}

/// Client certificates (always), the tokens of [`Config::tokens`], anonymous requests unless
/// [`Config::anonymous_auth`] is false or authorization is [`AuthorizationMode::AlwaysAllow`].
/// The auditor of `--audit-policy-file` and `--audit-log-path`, when both are given (with one
/// alone, kube-apiserver records nothing either).
fn auditor(
    audit: &AuditConfig,
    registry: &prometheus::Registry,
) -> Result<Option<apfkit_apiserver::audit::Auditor>, Error> {
    use apfkit_apiserver::audit::{Auditor, log, policy::Policy};
    let (Some(policy_file), Some(log_path)) = (&audit.policy_file, &audit.log_path) else {
        if audit.log_path.is_some() {
            eprintln!("warning: no audit policy file provided, no events will be recorded");
        }
        return Ok(None);
    };
    let (policy, warnings) = Policy::from_file(policy_file)
        .map_err(|e| Error::Start(format!("--audit-policy-file: {e}")))?;
    for warning in warnings {
        eprintln!("warning: {}: {warning}", policy_file.display());
    }
    let buffer = log::Buffer {
        events: match audit.buffer {
            0 => log::DEFAULT_BUFFER,
            n => n,
        },
        bytes: log::DEFAULT_BUFFER_BYTES,
        mode: audit.mode,
        max_event_bytes: audit.max_event_bytes,
    };
    let sink = log::LogSink::start(log::Destination::of_path(log_path, audit.rotation), buffer)
        .map_err(|e| Error::Start(format!("--audit-log-path: {e}")))?;
    Auditor::new(policy, Arc::new(sink))
        .with_metrics(registry)
        .map(Some)
        .map_err(|e| Error::Start(format!("metrics: {e}")))
}

fn authenticator(config: &Config) -> Result<Authenticator, Error> {
    let mut anonymous = config.anonymous_auth;
    if anonymous && config.authorization_mode == AuthorizationMode::AlwaysAllow {
        // kube-apiserver's `BuiltInAuthenticationOptions.ApplyAuthorization`.
        eprintln!(
            "warning: AnonymousAuth is not allowed with the AlwaysAllow authorizer. Resetting \
             AnonymousAuth to false. You should use a different authorizer"
        );
        anonymous = false;
    }
    let authenticator = Authenticator::new(anonymous);
    let Some(tokens) = &config.tokens else {
        return Ok(authenticator);
    };
    authenticator
        .with_token_file(&tokens.csv)
        .map_err(|e| Error::Start(format!("{}: {e}", tokens.source)))
}

#[cfg(test)]
mod tests {
    use super::Controllers;

    fn parse(list: &[&str]) -> Result<Controllers, String> {
        Controllers::parse(&list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
    }

    #[test]
    fn controllers_are_chosen_as_kube_controller_managers_flag_chooses_them() {
        assert_eq!(parse(&["*"]), Ok(Controllers::default()));
        let without_migrator = parse(&["*", "-storage-version-migrator-controller"]).unwrap();
        assert!(without_migrator.namespace && !without_migrator.storage_version_migrator);
        assert!(without_migrator.garbage_collector);
        // Only what is named; aliases too.
        let only = parse(&["svm", "garbagecollector"]).unwrap();
        assert!(!only.namespace && only.storage_version_migrator && only.garbage_collector);
        let accounts = parse(&["serviceaccount", "root-ca-certificate-publisher-controller"]);
        let accounts = accounts.unwrap();
        assert!(accounts.service_account && accounts.root_ca_certificate_publisher);
        assert!(!accounts.namespace && !accounts.garbage_collector);
        assert_eq!(
            parse(&["*", "-ttl"]).unwrap_err(),
            "\"ttl\" is not in the list of known controllers: garbage-collector-controller, \
             namespace-controller, root-ca-certificate-publisher-controller, \
             serviceaccount-controller, storage-version-migrator-controller"
        );
    }
}
