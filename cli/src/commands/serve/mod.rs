//! `serve`: flowcontrol and apiregistration served to Kubernetes clients.

mod ensurer;
mod estimates;
mod flow_control;
mod printers;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use apfkit_apiextensions::{CustomResources, ServedObject};
use apfkit_apiserver::auth::Authenticator;
use apfkit_apiserver::error::Cause;
use apfkit_apiserver::http::{ApiServer, VersionInfo};
use apfkit_apiserver::objects::Objects;
use apfkit_apiserver::resource::{ResourceConfig, Served, StorageEncoding};
use apfkit_apiserver::storage::Backend;
use apfkit_apiserver::storage::compaction::Compactor;
use apfkit_apiserver::storage::etcd::EtcdBackend;
use apfkit_apiserver::storage::sqlite::SqliteBackend;
use apfkit_conversion::scheme::{HubObject, Limits, SCHEME};
use apfkit_conversion::validation::{self, Options};
use apfkit_storage::etcd::RESOURCES;
use apfkit_storage::object::Format;
use clap::Args;

use crate::failure::Failure;

/// The objects `apfkit serve` holds: of the two groups, or custom resources and their CRDs.
pub type ServeObject = ServedObject<HubObject>;

/// Serve every version of the two groups to kubectl and other clients, over HTTPS.
///
/// flowcontrol.apiserver.k8s.io and apiregistration.k8s.io are served as kube-apiserver
/// serves them: discovery, OpenAPI v3, every verb, watches, and errors as metav1.Status.
/// With no --etcd-servers the objects are kept in DIR/apfkit.db (SQLite, an embedded
/// database); with them, in etcd under --etcd-prefix, with kube-apiserver's keys and
/// encodings. On first start a certificate authority and a serving certificate are made in
/// DIR; a kubeconfig trusting them is written to DIR/kubeconfig on every start. The
/// bootstrap configuration (kube-apiserver's mandatory and suggested objects) is created
/// when missing, unless --no-bootstrap.
///
/// Requests are authenticated as kube-apiserver authenticates them: client certificates
/// signed by the server's authority (the subject's CN is the user, its O entries the
/// groups), bearer tokens of --token-auth-file, and otherwise anonymous (system:anonymous in
/// system:unauthenticated) unless --anonymous-auth=false. DIR holds client certificates for
/// an administrator (apfkit-admin in system:masters, the kubeconfig's current context
/// apfkit) and a plain user (apfkit-user, context apfkit-user). system:masters may
/// impersonate (kubectl --as, --as-group).
///
/// CustomResourceDefinitions given with --crd, or created through the API
/// (apiextensions.k8s.io/v1), are served too, as kube-apiserver serves them: every served
/// version, pruning, defaults, schema and CEL validation, None or webhook conversion (the
/// CRD's clientConfig.url), /status, /scale and printer columns.
///
/// Requests then pass API Priority and Fairness, configured by the stored FlowSchemas and
/// PriorityLevelConfigurations (again whenever they change), with --max-requests-inflight plus
/// --max-mutating-requests-inflight seats: each answer names its flow schema and priority
/// level by uid (X-Kubernetes-PF-FlowSchema-UID, X-Kubernetes-PF-PriorityLevel-UID), and a
/// rejected request gets 429 with Retry-After.
///
/// Stops on SIGINT or SIGTERM, letting requests in flight finish.
///
/// Examples:
///   apfkit serve --data-dir apfkit-data
///   kubectl --kubeconfig apfkit-data/kubeconfig get flowschemas
///   kubectl --kubeconfig apfkit-data/kubeconfig --context apfkit-user auth whoami
///   apfkit serve --listen 127.0.0.1:0 --etcd-servers http://127.0.0.1:2379
///   apfkit serve --token-auth-file tokens.csv --anonymous-auth=false
///   apfkit serve --crd widgets.crd.yaml
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ServeArgs {
    /// Where the embedded database, the certificates and the kubeconfig are kept.
    #[arg(long, value_name = "DIR", default_value = "apfkit-data")]
    data_dir: PathBuf,
    /// Address to listen on (port 0: any free port, printed on start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// etcd client URLs, comma-separated (kube-apiserver's flag); the embedded database when
    /// absent.
    #[arg(long, value_name = "URLS", value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// kube-apiserver's --etcd-prefix.
    #[arg(long, value_name = "PREFIX", default_value = "/registry")]
    etcd_prefix: String,
    /// The version objects of a group are stored in, as GROUP=VERSION (repeatable). By
    /// default kube-apiserver 1.35's: v1 for both groups.
    #[arg(long, value_name = "GROUP=VERSION")]
    storage_version: Vec<String>,
    /// Do not create or keep the bootstrap APF configuration (by default, as kube-apiserver,
    /// the mandatory and suggested objects are created when missing at start and every
    /// minute, mandatory ones kept as they are defined, suggested ones while their
    /// apf.kubernetes.io/autoupdate-spec annotation is true).
    #[arg(long)]
    no_bootstrap: bool,
    /// Create and keep the suggested bootstrap objects, not only the mandatory ones.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    suggested_apf_configuration: bool,
    /// Bearer tokens, in kube-apiserver's format: CSV lines token,user,uid and an optional
    /// quoted, comma-separated list of groups.
    #[arg(long, value_name = "FILE")]
    token_auth_file: Option<PathBuf>,
    /// Serve requests without credentials as system:anonymous (kube-apiserver's default);
    /// false answers them 401.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    anonymous_auth: bool,
    /// Guard requests with API Priority and Fairness, configured by the stored FlowSchemas
    /// and PriorityLevelConfigurations (kube-apiserver's default: true).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    enable_priority_and_fairness: bool,
    /// kube-apiserver's --max-requests-inflight: with the next, the server's concurrency
    /// limit that APF shares among priority levels.
    #[arg(long, value_name = "N", default_value_t = 400)]
    max_requests_inflight: i32,
    /// kube-apiserver's --max-mutating-requests-inflight.
    #[arg(long, value_name = "N", default_value_t = 200)]
    max_mutating_requests_inflight: i32,
    /// CustomResourceDefinitions to create, or update, at start (files or directories,
    /// repeatable), as `kubectl apply -f` would; CRDs may also be created through the API.
    #[arg(long, value_name = "FILE")]
    crd: Vec<String>,
    /// How often history is compacted, in etcd or the embedded database (kube-apiserver's
    /// flag): each round compacts to the revision the round before saw; 0 never compacts.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    etcd_compaction_interval: std::time::Duration,
}

/// A duration as kube-apiserver's flags take it: `5m`, `5m0s`, `90s`, `0`.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    if text == "0" {
        return Ok(std::time::Duration::ZERO);
    }
    humantime::parse_duration(text).map_err(|e| format!("{text:?}: {e}"))
}

/// The version kube-apiserver 1.35 stores both groups in.
const DEFAULT_STORAGE_VERSION: &str = "v1";

/// Creates the data directory for its owner only (0700, as etcd creates its data directory);
/// one that exists and others may read is kept, with etcd's warning.
fn private_data_dir(dir: &std::path::Path) -> std::io::Result<()> {
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

/// `apfkit serve`.
pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Invalid(format!("starting the runtime: {e}")))?;
    runtime.block_on(async {
        private_data_dir(&args.data_dir)
            .map_err(|e| Failure::Invalid(format!("{}: {e}", args.data_dir.display())))?;
        if args.etcd_servers.is_empty() {
            let path = args.data_dir.join("apfkit.db");
            let backend = SqliteBackend::open(&path)
                .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))?;
            serve(&args, backend).await
        } else {
            let backend = EtcdBackend::connect(&args.etcd_servers)
                .await
                .map_err(|e| Failure::Invalid(format!("--etcd-servers: {e}")))?;
            serve(&args, backend).await
        }
    })
}

/// The served resources: every stored resource of the two groups, with its etcd path and
/// encoding, the scope and subresources of its kind from the generated registry.
fn resources(args: &ServeArgs) -> Result<Vec<Served<ServeObject>>, Failure> {
    let mut versions = std::collections::BTreeMap::new();
    for pair in &args.storage_version {
        let (group, version) = pair.split_once('=').ok_or_else(|| {
            Failure::Usage(format!("--storage-version {pair}: expected GROUP=VERSION"))
        })?;
        versions.insert(group.to_owned(), version.to_owned());
    }
    let mut served = Vec::new();
    for resource in RESOURCES {
        let info = apfkit_types::KINDS
            .iter()
            .find(|k| k.group == resource.group && k.plural == Some(resource.plural))
            .ok_or_else(|| Failure::Invalid(format!("no kind for {}", resource.plural)))?;
        let storage_version = versions
            .get(resource.group)
            .cloned()
            .unwrap_or_else(|| DEFAULT_STORAGE_VERSION.to_owned());
        let config = ResourceConfig {
            group: resource.group.to_owned(),
            kind: info.kind.to_owned(),
            namespaced: info.namespaced,
            short_names: Vec::new(),
            // kube-aggregator puts APIServices in the `api-extensions` category.
            categories: if resource.group == "apiregistration.k8s.io" {
                vec!["api-extensions".to_owned()]
            } else {
                Vec::new()
            },
            status: info.subresources.contains(&"status"),
            storage_version,
            storage_encoding: match resource.format {
                Format::Protobuf => StorageEncoding::Protobuf,
                Format::Json => StorageEncoding::Json,
            },
            key_path: resource.path.to_owned(),
            strategic_merge: true,
            scale: None,
            undeletable: Vec::new(),
            schema: Some(std::sync::Arc::new(kind_schema)),
            printer: printers::printer(info.kind),
        };
        let resource = Served::new(&SCHEME, config)
            .and_then(apfkit_apiextensions::object::builtin)
            .map_err(|e| Failure::Usage(format!("--storage-version: {e}")))?;
        served.push(resource);
    }
    for group in versions.keys() {
        if !RESOURCES.iter().any(|r| r.group == group) {
            return Err(Failure::Usage(format!(
                "--storage-version {group}: not a served group"
            )));
        }
    }
    Ok(served)
}

/// The JSON Schema of a kind from the generated registry.
fn kind_schema(group: &str, version: &str, kind: &str) -> Option<serde_json::Value> {
    let info = apfkit_types::KINDS
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)?;
    serde_json::to_value((info.json_schema)()).ok()
}

/// kube-apiserver's validation of flowcontrol and apiregistration objects (custom resources
/// and CRDs are validated by their resources' versions).
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

async fn serve<B: Backend + 'static>(args: &ServeArgs, backend: B) -> Result<(), Failure> {
    let objects = Objects::new(
        SCHEME.formats(),
        backend,
        &args.etcd_prefix,
        Limits::default(),
        validate,
    );
    let mut server = ApiServer::new(
        objects,
        resources(args)?,
        VersionInfo {
            major: "1".into(),
            minor: "35".into(),
            git_version: format!("v1.35.0-apfkit.{}", env!("CARGO_PKG_VERSION")),
            platform: format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
        },
    )
    .with_authenticator(authenticator(args)?);
    let registry = prometheus::Registry::new();
    server = server
        .with_metrics(&registry)
        .map_err(|e| Failure::Invalid(format!("metrics: {e}")))?;
    if !args.no_bootstrap {
        ensurer::ensure_once(&server, args.suggested_apf_configuration).await?;
    }
    let server = if args.enable_priority_and_fairness {
        let limit = args
            .max_requests_inflight
            .checked_add(args.max_mutating_requests_inflight)
            .filter(|limit| *limit > 0)
            .ok_or_else(|| {
                Failure::Usage(
                    "--max-requests-inflight and --max-mutating-requests-inflight must add up \
                     to a positive number"
                        .to_owned(),
                )
            })?;
        let (config, read_at) = flow_control::configure_and_mark_dangling(&server, limit).await?;
        let guard = apfkit_dispatcher::guard::Guard::new(config);
        guard.record_metrics(
            apfkit_dispatcher::metrics::ApfMetrics::register(&registry)
                .map_err(|e| Failure::Invalid(format!("metrics: {e}")))?,
        );
        let stats = estimates::ObjectStats::default();
        stats.refresh(&server).await;
        let (layered, counted) = (guard.clone(), stats.clone());
        server = server.with_layers(move |routes| {
            flow_control::debug_routes(routes, &layered)
                .layer(flow_control::layer(layered.clone(), counted.clone()))
        });
        let server = Arc::new(server);
        flow_control::keep_configured(server.clone(), guard, limit, read_at);
        estimates::keep_counted(server.clone(), stats);
        server
    } else {
        Arc::new(server)
    };
    if !args.no_bootstrap {
        ensurer::keep_ensured(server.clone(), args.suggested_apf_configuration);
    }
    let custom = Arc::new(
        CustomResources::new(server.clone(), server.resources())
            .map_err(|e| Failure::Invalid(e.message))?,
    );
    for (location, manifest) in crate::commands::crds::manifests(&args.crd)? {
        custom
            .apply(&manifest)
            .await
            .map_err(|e| Failure::at(&location, e.message))?;
    }
    custom
        .sync()
        .await
        .map_err(|e| Failure::Invalid(e.message))?;
    custom.keep_synced();
    if !args.etcd_compaction_interval.is_zero() {
        let (compacted, interval) = (server.clone(), args.etcd_compaction_interval);
        tokio::spawn(async move {
            Compactor::new()
                .run(compacted.objects().backend(), interval)
                .await;
        });
    }
    server
        .serve_command("apfkit serve", args.listen, &args.data_dir)
        .await
        .map_err(|e| Failure::Invalid(e.to_string()))?;
    Ok(())
}

/// Client certificates (always), the tokens of --token-auth-file, anonymous requests unless
/// --anonymous-auth=false.
fn authenticator(args: &ServeArgs) -> Result<Authenticator, Failure> {
    let authenticator = Authenticator::new(args.anonymous_auth);
    let Some(path) = &args.token_auth_file else {
        return Ok(authenticator);
    };
    let text = crate::input::read_bounded(path)
        .map_err(|e| Failure::Invalid(format!("--token-auth-file {}: {e}", path.display())))?;
    authenticator
        .with_token_file(&text)
        .map_err(|e| Failure::Invalid(format!("--token-auth-file {}: {e}", path.display())))
}
