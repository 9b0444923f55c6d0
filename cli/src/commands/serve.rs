//! `serve`: flowcontrol and apiregistration served to Kubernetes clients, by `apfkit-server`.

use std::net::SocketAddr;
use std::path::PathBuf;

use apfkit_server::{AuthorizationMode, Config, Error, Storage, Tokens};
use clap::Args;

use crate::failure::Failure;

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
/// apfkit) and a plain user (apfkit-user, context apfkit-user).
///
/// Requests are then authorized as kube-apiserver authorizes them with
/// --authorization-mode=RBAC (the default): system:masters may do everything, everyone else
/// what the roles and bindings of rbac.authorization.k8s.io/v1 grant, which are served, with
/// kube-apiserver's bootstrap roles (cluster-admin, admin, edit, view, system:discovery,
/// system:basic-user, system:public-info-viewer, system:monitoring, ...) created and kept at
/// start. Anonymous requests may read /healthz, /livez, /readyz and /version; the plain user
/// is bound to nothing, so it is refused with kube-apiserver's 403 until bound. kubectl auth
/// can-i (and --list) and impersonation (kubectl --as, by the impersonate verb) work.
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
/// With --audit-policy-file and --audit-log-path, requests are audited as kube-apiserver
/// audits them: audit.k8s.io/v1 Events as JSON lines, at the level the policy's first
/// matching rule gives, with the authorization decision and, beyond kube-apiserver, the
/// flow schema, priority level, seats and queue wait of each request in its annotations
/// (flowcontrol.apfkit/*). Events are buffered (at most 64 MiB); when the buffer is full,
/// requests wait for the log (--audit-log-mode=blocking, kube-apiserver's default) or the
/// events are dropped and counted in apiserver_audit_error_total (batch). Every answer
/// carries its Audit-Id.
///
/// core/v1 Services and discovery.k8s.io/v1 EndpointSlices are served with kube-apiserver's
/// defaults and checks (no cluster IPs are allocated), for what APIServices are resolved
/// through; --allow-loopback-endpoints lets an EndpointSlice point at an extension server
/// listening on loopback beside this one.
///
/// StorageVersionMigrations (storagemigration.k8s.io/v1) are served and run as
/// kube-controller-manager runs them: every object of the resource named written back in
/// its storage version, the progress in the migration's status, and a CRD's
/// status.storedVersions trimmed after. Deleted namespaces are emptied, then removed, as
/// its namespace controller does; objects whose owners (metadata.ownerReferences) are gone
/// are deleted, and dependents orphaned or deleted first as the owner's delete asked, as
/// its garbage collector does; every active namespace gets its `default` ServiceAccount and
/// its `kube-root-ca.crt` ConfigMap (the server's CA); --controllers turns any of them off.
///
/// Stops on SIGINT or SIGTERM, letting requests in flight finish.
///
/// Examples:
///   apfkit serve --data-dir apfkit-data
///   kubectl --kubeconfig apfkit-data/kubeconfig get flowschemas
///   kubectl --kubeconfig apfkit-data/kubeconfig --context apfkit-user auth whoami
///   apfkit serve --listen 127.0.0.1:0 --etcd-servers http://127.0.0.1:2379
///   kubectl --kubeconfig apfkit-data/kubeconfig create clusterrole apf-reader \
///     --verb get,list,watch --resource flowschemas,prioritylevelconfigurations
///   kubectl --kubeconfig apfkit-data/kubeconfig create clusterrolebinding apf-reader \
///     --clusterrole apf-reader --user apfkit-user
///   apfkit serve --token-auth-file tokens.csv --anonymous-auth=false
///   apfkit serve --crd widgets.crd.yaml
///   apfkit serve --audit-policy-file audit-policy.yaml --audit-log-path apfkit-data/audit.log \
///     --audit-log-maxsize 100 --audit-log-maxbackup 10
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
    /// default kube-apiserver 1.37's: v1 for both groups. The version must be served.
    #[arg(long, value_name = "GROUP=VERSION")]
    storage_version: Vec<String>,
    /// Versions to serve or not, kube-apiserver's flag: GROUP/VERSION=true|false (or
    /// api/all=true), comma-separated or repeated. By default only what kube-apiserver 1.37
    /// serves: v1 of both groups; their older versions (flowcontrol v1beta3 to v1alpha1,
    /// apiregistration v1beta1) on request.
    #[arg(long, value_name = "GROUP/VERSION=BOOL", value_delimiter = ',')]
    runtime_config: Vec<String>,
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
    /// Who may do what, kube-apiserver's flag: RBAC (system:masters may do everything,
    /// everyone else what the stored roles and bindings grant) or AlwaysAllow (everyone
    /// everything; anonymous requests are then refused, as kube-apiserver refuses them).
    #[arg(long, value_name = "MODE", default_value = "RBAC", value_parser = ["RBAC", "AlwaysAllow"])]
    authorization_mode: String,
    /// Guard requests with API Priority and Fairness, configured by the stored FlowSchemas
    /// and PriorityLevelConfigurations (kube-apiserver's default: true); when false, the
    /// max-in-flight limits below apply instead, as in kube-apiserver.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    enable_priority_and_fairness: bool,
    /// kube-apiserver's --max-requests-inflight: with the next, the server's concurrency
    /// limit that APF shares among priority levels; without APF, the read-only requests
    /// served at once, the rest answered 429 (system:masters excepted; 0: no limit).
    #[arg(long, value_name = "N", default_value_t = 400)]
    max_requests_inflight: i32,
    /// kube-apiserver's --max-mutating-requests-inflight (without APF, the mutating requests
    /// served at once; 0: no limit).
    #[arg(long, value_name = "N", default_value_t = 200)]
    max_mutating_requests_inflight: i32,
    /// CustomResourceDefinitions to create, or update, at start (files or directories,
    /// repeatable), as `kubectl apply -f` would; CRDs may also be created through the API.
    #[arg(long, value_name = "FILE")]
    crd: Vec<String>,
    /// How often history is compacted, in etcd or the embedded database (kube-apiserver's
    /// flag): each round compacts to the revision the round before saw; 0 never compacts.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = super::duration_flag)]
    etcd_compaction_interval: std::time::Duration,
    /// How long a request (other than a watch) may take before it is answered 504 Timeout,
    /// kube-apiserver's flag; a client's `?timeout=` may shorten it for its request. Also how
    /// long a request waits for etcd while no member answers.
    #[arg(long, value_name = "DURATION", default_value = "1m0s", value_parser = super::duration_flag)]
    request_timeout: std::time::Duration,
    /// The audit policy (audit.k8s.io/v1 Policy, YAML or JSON), kube-apiserver's flag; with
    /// --audit-log-path, requests are audited as it says.
    #[arg(long, value_name = "FILE")]
    audit_policy_file: Option<PathBuf>,
    /// Where audit events are written, as JSON lines ('-': standard output); the file and
    /// its directory are made for their owner only.
    #[arg(long, value_name = "PATH")]
    audit_log_path: Option<PathBuf>,
    /// Megabytes the audit log may reach before it is rotated (renamed NAME-TIME.EXT);
    /// 0: 100.
    #[arg(long, value_name = "MB", default_value_t = 0)]
    audit_log_maxsize: u64,
    /// Rotated audit logs kept; 0: every one.
    #[arg(long, value_name = "N", default_value_t = 0)]
    audit_log_maxbackup: usize,
    /// Days a rotated audit log is kept, by the time in its name; 0: any age.
    #[arg(long, value_name = "DAYS", default_value_t = 0)]
    audit_log_maxage: u64,
    /// Audit events waiting for the disk (whatever their number, at most 64 MiB of them)
    /// before requests wait (blocking) or more events are dropped and counted (batch).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    audit_log_batch_buffer_size: usize,
    /// What a full audit buffer does: 'blocking' (kube-apiserver's default) holds requests
    /// until the log has room and drops no event; 'batch' drops events and holds no request.
    #[arg(long, value_name = "MODE", default_value = "blocking", value_parser = ["blocking", "batch"])]
    audit_log_mode: String,
    /// Truncate audit events larger than --audit-log-truncate-max-event-size: their request
    /// and response objects are left out (annotation audit.k8s.io/truncated), and an event
    /// still larger is dropped (counted in apiserver_audit_error_total{plugin="truncate"}).
    #[arg(long)]
    audit_log_truncate_enabled: bool,
    /// The largest audit event written, in bytes, with --audit-log-truncate-enabled.
    #[arg(long, value_name = "BYTES", default_value_t = 102_400)]
    audit_log_truncate_max_event_size: usize,
    /// Let EndpointSlices hold loopback addresses (127.0.0.0/8, ::1), which kube-apiserver
    /// refuses: for extension API servers listening on loopback beside this one.
    #[arg(long)]
    allow_loopback_endpoints: bool,
    /// kube-controller-manager's controllers to run beside the API, as its --controllers
    /// flag lists them: '*' every one, NAME that one, -NAME not that one; the names are
    /// garbage-collector-controller, namespace-controller,
    /// root-ca-certificate-publisher-controller, serviceaccount-controller and
    /// storage-version-migrator-controller.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', default_value = "*")]
    controllers: Vec<String>,
    /// The issuer (the `iss` claim) of the service-account tokens the server signs
    /// (`kubectl create token`), with the data directory's service-account.key.
    #[arg(
        long,
        value_name = "URL",
        default_value = "https://kubernetes.default.svc.cluster.local"
    )]
    service_account_issuer: String,
    /// The audiences tokens are for by default and that the server accepts (the issuer when
    /// none is given).
    #[arg(long, value_name = "AUDIENCES", value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// The jwks_uri of the service-account issuer's OpenID discovery document
    /// (/.well-known/openid-configuration); by default https://ADDRESS/openid/v1/jwks, the
    /// address served.
    #[arg(long, value_name = "URL")]
    service_account_jwks_uri: Option<String>,
}

/// `apfkit serve`.
pub fn run(args: ServeArgs) -> Result<(), Failure> {
    let config = config(args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Invalid(format!("starting the runtime: {e}")))?;
    runtime
        .block_on(apfkit_server::run(config, "apfkit serve"))
        .map_err(|error| match error {
            Error::Settings(message) => Failure::Usage(message),
            Error::Start(message) => Failure::Invalid(message),
            Error::Crd { .. } => Failure::Invalid(error.to_string()),
        })
}

/// The server's configuration from the flags, the CRD files read and the token file's text.
fn config(args: ServeArgs) -> Result<Config, Failure> {
    let mut config = Config::new(args.data_dir);
    config.listen = args.listen;
    if !args.etcd_servers.is_empty() {
        config.storage = Storage::Etcd(args.etcd_servers);
    }
    config.prefix = args.etcd_prefix;
    for pair in &args.storage_version {
        let (group, version) = pair.split_once('=').ok_or_else(|| {
            Failure::Usage(format!("--storage-version {pair}: expected GROUP=VERSION"))
        })?;
        config
            .storage_versions
            .insert(group.to_owned(), version.to_owned());
    }
    for pair in &args.runtime_config {
        let (key, value) = pair.split_once('=').unwrap_or((pair, "true"));
        let enabled = value.parse::<bool>().map_err(|_| {
            Failure::Usage(format!(
                "--runtime-config {pair}: expected GROUP/VERSION=true|false"
            ))
        })?;
        if !key.contains('/') {
            return Err(Failure::Usage(format!(
                "--runtime-config {pair}: expected GROUP/VERSION=true|false"
            )));
        }
        config.runtime_config.insert(key.to_owned(), enabled);
    }
    config.bootstrap = !args.no_bootstrap;
    config.suggested_apf_configuration = args.suggested_apf_configuration;
    if let Some(path) = &args.token_auth_file {
        let source = format!("--token-auth-file {}", path.display());
        let csv = crate::input::read_bounded(path)
            .map_err(|e| Failure::Invalid(format!("{source}: {e}")))?;
        config.tokens = Some(Tokens { source, csv });
    }
    config.anonymous_auth = args.anonymous_auth;
    config.authorization_mode = match args.authorization_mode.as_str() {
        "AlwaysAllow" => AuthorizationMode::AlwaysAllow,
        _ => AuthorizationMode::Rbac,
    };
    config.enable_priority_and_fairness = args.enable_priority_and_fairness;
    config.max_requests_inflight = args.max_requests_inflight;
    config.max_mutating_requests_inflight = args.max_mutating_requests_inflight;
    config.crds = crate::commands::crds::manifests(&args.crd)?
        .into_iter()
        .map(|(location, manifest)| (location.to_string(), manifest))
        .collect();
    config.compaction_interval = args.etcd_compaction_interval;
    config.request_timeout = args.request_timeout;
    config.audit = apfkit_server::AuditConfig {
        policy_file: args.audit_policy_file,
        log_path: args.audit_log_path,
        rotation: apfkit_apiserver::audit::log::Rotation {
            max_megabytes: args.audit_log_maxsize,
            max_backups: args.audit_log_maxbackup,
            max_age_days: args.audit_log_maxage,
        },
        buffer: args.audit_log_batch_buffer_size,
        mode: if args.audit_log_mode == "batch" {
            apfkit_apiserver::audit::log::Mode::Batch
        } else {
            apfkit_apiserver::audit::log::Mode::Blocking
        },
        max_event_bytes: args
            .audit_log_truncate_enabled
            .then_some(args.audit_log_truncate_max_event_size),
    };
    if args.allow_loopback_endpoints {
        config.endpoints = apfkit_server::Endpoints::LoopbackAllowed;
    }
    if args.service_account_issuer.is_empty() {
        return Err(Failure::Invalid(
            "--service-account-issuer: an issuer is required".to_owned(),
        ));
    }
    config.service_account_issuer = args.service_account_issuer;
    config.api_audiences = args.api_audiences;
    config.service_account_jwks_uri = args.service_account_jwks_uri;
    config.controllers = apfkit_server::Controllers::parse(&args.controllers)
        .map_err(|e| Failure::Invalid(format!("--controllers: {e}")))?;
    Ok(config)
}
