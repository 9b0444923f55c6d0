//! Envtest for Rust: a Kubernetes API server for a controller's tests, started in the test's
//! own process by one call, with a ready [`kube::Client`].
//!
//! Go's envtest downloads kube-apiserver and etcd and starts both for every suite; this
//! starts `apfkit-server` in the test: users' CRDs (CEL rules, conversion, server-side apply,
//! watches), Namespaces, ConfigMaps, Secrets, ServiceAccounts with their tokens, Leases,
//! Services, RBAC, and kube-controller-manager's namespace, service-account, root-CA
//! publisher and garbage-collection controllers beside them, answering as kube-apiserver
//! answers. Nothing to download and nothing outside Cargo.
//!
//! By default the client talks to the server as a tower service (no socket, TLS or port) and
//! the objects are kept in memory; [`Builder::https`] serves over loopback HTTPS with a
//! kubeconfig for other tools, [`Builder::storage`] keeps the objects in the embedded SQLite
//! store or in etcd. Each test has its own server; many run in parallel in one process, and a
//! [`TestEnv`] dropped stops its server and removes its files.
//!
//! **Where to start**: [`TestEnv::builder`], then [`Builder::start`]:
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! let env = apfkit_envtest::TestEnv::builder().start().await?;
//! let config_maps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
//! let mut settings = ConfigMap::default();
//! settings.metadata.name = Some("settings".to_owned());
//! config_maps.create(&PostParams::default(), &settings).await?;
//! assert!(config_maps.get("settings").await?.metadata.uid.is_some());
//! # Ok(())
//! # }
//! ```
//!
//! CRDs are given as Rust types ([`Builder::crd`], from `#[derive(CustomResource)]`), as
//! manifests ([`Builder::crd_manifest`]) or as the YAML and JSON files of a directory
//! ([`Builder::crds_from_dir`]); each is applied as kube-apiserver applies it, and served
//! before [`Builder::start`] returns.

#![forbid(unsafe_code)]

mod crds;

use std::path::{Path, PathBuf};

pub use apfkit_server::{Config, Controllers, Error as ServerError, Storage};

/// Why a server did not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory of CRDs could not be read, or holds what is not a CRD manifest.
    #[error("{path}: {message}")]
    Crds {
        /// The file or directory.
        path: PathBuf,
        /// What is wrong, with the document's number in its file when it is one document.
        message: String,
    },
    /// The server refused its settings or a CRD (kube-apiserver's message, with where the CRD
    /// came from), or could not start.
    #[error(transparent)]
    Server(#[from] apfkit_server::Error),
    /// The server's data directory could not be made.
    #[error("the data directory: {0}")]
    DataDir(std::io::Error),
    /// A conversion was given for a CRD that was not.
    #[error("conversion: {0}")]
    Conversion(String),
    /// The client of a server over HTTPS could not be made from its kubeconfig.
    #[error("the client: {0}")]
    Client(String),
}

/// A change of [`Builder::configure`].
type ConfigChange = Box<dyn FnOnce(&mut Config) + Send>;

/// What to start: [`TestEnv::builder`], then its methods, then [`Builder::start`].
#[must_use = "a builder does nothing until `start` is awaited"]
pub struct Builder {
    crds: Vec<(String, serde_json::Value)>,
    crd_paths: Vec<PathBuf>,
    conversions: Vec<(String, apfkit_apiextensions::webhook::ReviewHandler)>,
    https: bool,
    storage: Storage,
    configure: Vec<ConfigChange>,
}

impl Builder {
    /// The CRD of a Rust type (kube's `#[derive(CustomResource)]`), served from the start.
    pub fn crd<K: kube::CustomResourceExt>(mut self) -> Self {
        let location = format!("{} ({})", K::crd_name(), std::any::type_name::<K>());
        match serde_json::to_value(K::crd()) {
            Ok(manifest) => self.crds.push((location, manifest)),
            // k8s-openapi's types always serialize; were one not to, the server says so.
            Err(error) => self
                .crds
                .push((location, serde_json::Value::String(error.to_string()))),
        }
        self
    }

    /// A CRD manifest (an `apiextensions.k8s.io/v1` CustomResourceDefinition as JSON),
    /// served from the start; `location` names it in errors.
    pub fn crd_manifest(
        mut self,
        location: impl Into<String>,
        manifest: serde_json::Value,
    ) -> Self {
        self.crds.push((location.into(), manifest));
        self
    }

    /// The CustomResourceDefinitions of `path`, served from the start: a file, or every
    /// `.yaml`, `.yml` and `.json` file directly in a directory (in name order), each a
    /// stream of YAML documents or JSON values; documents of other kinds are skipped, as
    /// controller-runtime's envtest skips them. Read when [`Builder::start`] is awaited:
    /// a path that does not exist, a file that is not a regular one, more than 64 MiB, or
    /// documents that do not parse are errors naming the file and document.
    pub fn crds_from_dir(mut self, path: impl Into<PathBuf>) -> Self {
        self.crd_paths.push(path.into());
        self
    }

    /// Converts the versions of the CRD named `crd` with the conversions of `scheme` (Rust:
    /// apfkit-runtime's hub traits, or a scheme generated by apfkit-codegen), in this
    /// process: no webhook to deploy, nothing sent over the network. The CRD's
    /// `spec.conversion` is made `Webhook` if it is not already (the `clientConfig` it names
    /// is never called); each review and its answer are checked as kube-apiserver checks a
    /// webhook's.
    pub fn conversion<H: 'static>(
        self,
        crd: impl Into<String>,
        scheme: &'static apfkit_runtime::scheme::Scheme<H>,
    ) -> Self {
        self.conversion_handler(crd, move |review: &[u8]| {
            apfkit_runtime::review::review(scheme, review).map_err(|error| error.to_string())
        })
    }

    /// [`Builder::conversion`] with any code answering the CRD's `ConversionReview`s: the
    /// review's JSON in, the answering review's JSON out (what a webhook's handler does).
    pub fn conversion_handler(
        mut self,
        crd: impl Into<String>,
        handler: impl Fn(&[u8]) -> Result<Vec<u8>, String> + Send + Sync + 'static,
    ) -> Self {
        self.conversions.push((
            crd.into(),
            apfkit_apiextensions::webhook::ReviewHandler(std::sync::Arc::new(handler)),
        ));
        self
    }

    /// Serve over HTTPS on a free port of 127.0.0.1, with a kubeconfig
    /// ([`TestEnv::kubeconfig`]) for other clients (kubectl, a Go program); the client of
    /// [`TestEnv::client`] then goes through it too.
    pub fn https(mut self) -> Self {
        self.https = true;
        self
    }

    /// Where the objects are kept: [`Storage::Memory`] by default, [`Storage::Embedded`] in
    /// the server's temporary directory, or an etcd cluster.
    pub fn storage(mut self, storage: Storage) -> Self {
        self.storage = storage;
        self
    }

    /// Anything else of the server's [`Config`] (kube-apiserver's defaults otherwise): which
    /// controllers run, the authorization mode, the service-account issuer.
    pub fn configure(mut self, change: impl FnOnce(&mut Config) + Send + 'static) -> Self {
        self.configure.push(Box::new(change));
        self
    }

    /// Starts the server and returns once it serves every CRD given, with its client.
    ///
    /// # Errors
    ///
    /// As [`Error`] says.
    pub async fn start(self) -> Result<TestEnv, Error> {
        let mut crds = self.crds;
        for path in &self.crd_paths {
            crds.extend(crds::read(path)?);
        }
        for (name, _) in &self.conversions {
            let named = |manifest: &&mut (String, serde_json::Value)| {
                manifest
                    .1
                    .pointer("/metadata/name")
                    .and_then(serde_json::Value::as_str)
                    == Some(name.as_str())
            };
            let Some((_, manifest)) = crds.iter_mut().find(named) else {
                return Err(Error::Conversion(format!(
                    "{name}: no CRD of this name was given to convert"
                )));
            };
            webhook_conversion(manifest);
        }
        let dir = data_dir().map_err(Error::DataDir)?;
        let mut config = Config::new(dir.path());
        config.storage = self.storage;
        config.crds = crds;
        config.in_process_conversions = self.conversions;
        for change in self.configure {
            change(&mut config);
        }
        if self.https {
            let server = apfkit_server::start(config).await?;
            let client = https_client(server.kubeconfig(), None).await?;
            Ok(TestEnv {
                client,
                serving: Serving::Https(server),
                dir,
            })
        } else {
            let server = apfkit_server::start_in_process(config).await?;
            let client = kube::Client::new(server.service(), "default");
            Ok(TestEnv {
                client,
                serving: Serving::InProcess(server),
                dir,
            })
        }
    }
}

/// A server started for a test, with its client. Dropped, it stops and its files are removed.
pub struct TestEnv {
    client: kube::Client,
    serving: Serving,
    /// Removed when the environment is dropped, after the server has stopped (field order).
    dir: tempfile::TempDir,
}

enum Serving {
    InProcess(apfkit_server::InProcess),
    Https(apfkit_server::Server),
}

impl TestEnv {
    /// A server with kube-apiserver's defaults, in memory and in-process, until the builder's
    /// methods say otherwise.
    pub fn builder() -> Builder {
        Builder {
            crds: Vec::new(),
            crd_paths: Vec::new(),
            conversions: Vec::new(),
            https: false,
            storage: Storage::Memory,
            configure: Vec::new(),
        }
    }

    /// A client of the server as its administrator (`apfkit-admin`, in `system:masters`),
    /// with `default` as its namespace. Clones share their connection.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// A client acting as `user` in `groups` (kube's impersonation, by the administrator), for
    /// what RBAC lets someone else do; a service account is
    /// `system:serviceaccount:NAMESPACE:NAME`.
    ///
    /// # Errors
    ///
    /// Over HTTPS, a kubeconfig that cannot be read again.
    pub async fn client_as(&self, user: &str, groups: &[&str]) -> Result<kube::Client, Error> {
        match &self.serving {
            Serving::InProcess(server) => {
                let headers = impersonation_headers(user, groups)?;
                let service = tower::ServiceExt::map_request(
                    server.service(),
                    move |mut request: http::Request<kube::client::Body>| {
                        for (name, value) in &headers {
                            request.headers_mut().append(name, value.clone());
                        }
                        request
                    },
                );
                Ok(kube::Client::new(service, "default"))
            }
            Serving::Https(server) => https_client(server.kubeconfig(), Some((user, groups))).await,
        }
    }

    /// The kubeconfig of a server started with [`Builder::https`] (its administrator's context
    /// current, a plain user's `apfkit-user` beside it); `None` in-process.
    pub fn kubeconfig(&self) -> Option<&Path> {
        match &self.serving {
            Serving::InProcess(_) => None,
            Serving::Https(server) => Some(server.kubeconfig()),
        }
    }

    /// `https://127.0.0.1:PORT` of a server started with [`Builder::https`]; `None` in-process.
    pub fn url(&self) -> Option<&str> {
        match &self.serving {
            Serving::InProcess(_) => None,
            Serving::Https(server) => Some(server.url()),
        }
    }

    /// The server's data directory: its keys, and the embedded store when it is the storage.
    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the server and waits for it: over HTTPS, requests in flight are given 5 s.
    /// Dropping the environment stops it too, without waiting.
    pub async fn stop(self) {
        let TestEnv {
            client,
            serving,
            dir,
        } = self;
        drop(client);
        match serving {
            Serving::InProcess(server) => server.stop(),
            Serving::Https(server) => server.shutdown().await,
        }
        drop(dir);
    }
}

/// A CRD manifest's conversion made `Webhook`, unless it is already: a URL under `.invalid`
/// (a name that never resolves) stands for the handler in this process that answers it.
fn webhook_conversion(manifest: &mut serde_json::Value) {
    let strategy = manifest
        .pointer("/spec/conversion/strategy")
        .and_then(serde_json::Value::as_str);
    if strategy == Some("Webhook") {
        return;
    }
    if let Some(spec) = manifest
        .get_mut("spec")
        .and_then(serde_json::Value::as_object_mut)
    {
        spec.insert(
            "conversion".to_owned(),
            serde_json::json!({"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://in-process.apfkit-envtest.invalid/convert"}}}),
        );
    }
}

/// A temporary directory for the server, its owner's alone (the keys are kept there).
fn data_dir() -> std::io::Result<tempfile::TempDir> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("apfkit-envtest-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    builder.tempdir()
}

/// kube's `Impersonate-User` and one `Impersonate-Group` per group.
fn impersonation_headers(
    user: &str,
    groups: &[&str],
) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, Error> {
    let value = |text: &str| {
        http::HeaderValue::from_str(text)
            .map_err(|_| Error::Client(format!("{text:?}: not a header value")))
    };
    let mut headers = vec![(
        http::HeaderName::from_static("impersonate-user"),
        value(user)?,
    )];
    for group in groups {
        headers.push((
            http::HeaderName::from_static("impersonate-group"),
            value(group)?,
        ));
    }
    Ok(headers)
}

/// The client of the kubeconfig's current context, impersonating when asked.
async fn https_client(
    kubeconfig: &Path,
    impersonate: Option<(&str, &[&str])>,
) -> Result<kube::Client, Error> {
    let client_error =
        |e: &dyn std::fmt::Display| Error::Client(format!("{}: {e}", kubeconfig.display()));
    let read = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| client_error(&e))?;
    let mut config = kube::Config::from_custom_kubeconfig(read, &Default::default())
        .await
        .map_err(|e| client_error(&e))?;
    if let Some((user, groups)) = impersonate {
        config.auth_info.impersonate = Some(user.to_owned());
        config.auth_info.impersonate_groups =
            Some(groups.iter().map(|group| (*group).to_owned()).collect());
    }
    kube::Client::try_from(config).map_err(|e| client_error(&e))
}
