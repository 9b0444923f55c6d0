//! The Widget API served by Rust itself: an extension API server on apfkit-apiserver.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use apfkit_apiserver::auth::{Authenticator, RequestHeader};
use apfkit_apiserver::authz::delegated::Delegation;
use apfkit_apiserver::http::{ApiServer, VersionInfo};
use apfkit_apiserver::storage::sqlite::SqliteBackend;
use apfkit_apiserver::store::Objects;
use apfkit_apiserver::tls;
use apfkit_example_widgets::api::SCHEME;
use apfkit_example_widgets::serving;
use apfkit_runtime::scheme::Limits;
use clap::Parser;

/// Serves the Widget API (`example.com` v1alpha1, v1beta1 and v1, stored in v1) over HTTPS
/// from an embedded SQLite store, as an extension API server that kube-aggregator could put
/// behind kube-apiserver.
///
/// On first start a CA and a serving certificate are made in DIR, and a kubeconfig trusting
/// them is written to DIR/kubeconfig on every start. `--print-apiservice NAMESPACE/NAME`
/// prints the APIService objects that register the server behind that Service, and exits.
///
/// Behind an aggregator (`apfkit serve`, kube-apiserver), give the front proxy's authority
/// with --requestheader-client-ca-file: requests it forwards act as the user its X-Remote-*
/// headers name; --service NAMESPACE/NAME makes the serving certificate name the Service as
/// the aggregator verifies it (NAME.NAMESPACE.svc); --authorization-kubeconfig FILE has
/// every request authorized by that server (a SubjectAccessReview, answers kept 10 s), as
/// kube's extension servers delegate authorization; without it every user may do anything.
#[derive(Debug, Parser)]
#[command(
    name = "widgets-apiserver",
    after_help = "Examples:\n  widgets-apiserver --data-dir widgets-data --listen 127.0.0.1:8443 &\n  kubectl --kubeconfig widgets-data/kubeconfig get widgets.v1alpha1.example.com -A\n  widgets-apiserver --data-dir widgets-data --print-apiservice widgets-system/widgets-apiserver\n  widgets-apiserver --data-dir widgets-data --service widgets-system/widgets-apiserver \\\n    --requestheader-client-ca-file apfkit-data/front-proxy-ca.crt --requestheader-allowed-names front-proxy-client \\\n    --authorization-kubeconfig widgets-data/delegation.kubeconfig"
)]
struct Args {
    /// Where the database, the certificates and the kubeconfig are kept.
    #[arg(long, value_name = "DIR", default_value = "widgets-data")]
    data_dir: PathBuf,
    /// Address to listen on; port 0 picks a free port (printed on start).
    #[arg(long, default_value = "127.0.0.1:8443")]
    listen: SocketAddr,
    /// Print the APIServices for the Service NAMESPACE/NAME (JSON, a v1 List) and exit.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    print_apiservice: Option<String>,
    /// The Service the server is registered behind: the serving certificate, when it is
    /// made, also names NAME.NAMESPACE.svc.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    service: Option<String>,
    /// The front proxy's authority (kube's --requestheader-client-ca-file): a request with
    /// a client certificate it signed acts as the user of its X-Remote-User,
    /// X-Remote-Uid, X-Remote-Group and X-Remote-Extra-* headers.
    #[arg(long, value_name = "FILE")]
    requestheader_client_ca_file: Option<PathBuf>,
    /// Common names the front proxy's certificate may have, comma-separated (empty: any).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    requestheader_allowed_names: Vec<String>,
    /// Delegate authorization to the server of this kubeconfig (kube's
    /// --authorization-kubeconfig): its user needs to create subjectaccessreviews
    /// (ClusterRole system:auth-delegator). Members of system:masters, /healthz, /readyz and
    /// /livez are allowed without asking.
    #[arg(long, value_name = "FILE")]
    authorization_kubeconfig: Option<PathBuf>,
}

/// NAMESPACE and NAME of a `NAMESPACE/NAME` flag.
fn service_of<'a>(flag: &str, service: &'a str) -> Result<(&'a str, &'a str), String> {
    service
        .split_once('/')
        .filter(|(n, s)| !n.is_empty() && !s.is_empty() && !s.contains('/'))
        .ok_or_else(|| format!("{flag} {service:?}: expected NAMESPACE/NAME"))
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("widgets-apiserver: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    if let Some(service) = &args.print_apiservice {
        let credentials =
            tls::ensure(&args.data_dir, &[], tls::Flush::Always).map_err(|e| e.to_string())?;
        let (namespace, name) = service_of("--print-apiservice", service)?;
        let list = serving::api_services(&credentials.ca_pem, namespace, name);
        let text = serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?;
        println!("{text}");
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("starting the runtime: {e}"))?;
    runtime.block_on(serve(args))
}

async fn serve(args: &Args) -> Result<(), String> {
    let database = args.data_dir.join("widgets.db");
    let backend =
        SqliteBackend::open(&database).map_err(|e| format!("{}: {e}", database.display()))?;
    let objects = Objects::new(SCHEME.encodings(), backend, "/registry", Limits::default());
    // Widgets are checked as kube-apiserver checks custom resources (their strategy: the
    // CRD's schema, list types and CEL rules, in the version of the request).
    let resources = serving::resources().map_err(|e| e.to_string())?;
    let mut authenticator = Authenticator::new(true);
    if let Some(path) = &args.requestheader_client_ca_file {
        let pem = apfkit_runtime::files::read_text_at_most(
            path,
            apfkit_runtime::files::SETTINGS_FILE_LIMIT,
        )
        .map_err(|e| format!("{}: {e}", path.display()))?;
        let mut request_header =
            RequestHeader::new(&pem).map_err(|e| format!("{}: {e}", path.display()))?;
        request_header
            .allowed_names
            .clone_from(&args.requestheader_allowed_names);
        authenticator = authenticator.with_request_header(request_header);
    }
    let hosts = match &args.service {
        Some(service) => {
            let (namespace, name) = service_of("--service", service)?;
            vec![format!("{name}.{namespace}.svc")]
        }
        None => Vec::new(),
    };
    let mut server = ApiServer::new(
        objects,
        resources,
        VersionInfo::new(
            "1",
            "35",
            format!("v1.35.0-widgets.{}", env!("CARGO_PKG_VERSION")),
        ),
    )
    .with_authenticator(authenticator)
    .with_serving_hosts(hosts);
    if let Some(kubeconfig) = &args.authorization_kubeconfig {
        let authorizer = Delegation::new(kubeconfig)
            .authorizer()
            .await
            .map_err(|e| e.to_string())?;
        server = server.with_authorizer(Arc::new(authorizer));
    }
    Arc::new(server)
        .serve_command("widgets-apiserver", args.listen, &args.data_dir)
        .await
        .map_err(|e| e.to_string())
}
