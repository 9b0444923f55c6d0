//! etcd as kube-apiserver's store: connecting like etcdctl (endpoints, TLS), and reading the
//! keys of the resources this toolkit knows, page by page.

use apfkit_runtime::identity::GroupResource;
use apfkit_runtime::scheme::StorageEncoding;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::time::Duration;

use apfkit_etcd::{CallError, Members};
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, GetOptions, Identity, KvClient,
    PutOptions, TlsOptions, Txn, TxnOp, TxnOpResponse,
};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::envelope::{Stored, ValueError, inspect};
use crate::key::Key;

/// A resource kept in etcd, and where: `<prefix>/<path>/<name>` (namespaced resources add
/// `<namespace>/` before the name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredResource {
    /// The group and the plural resource name.
    pub resource: GroupResource,
    /// The path under the prefix. kube-apiserver keeps its own groups' resources under the
    /// bare plural (`flowschemas`), and kube-aggregator its APIServices under
    /// `apiregistration.k8s.io/apiservices`. Empty for a custom resource, which
    /// apiextensions-apiserver keeps under `<group>/<plural>`.
    pub path: &'static str,
    /// How kube-apiserver encodes what it stores there: protobuf for its own groups, JSON for
    /// kube-aggregator's APIServices.
    pub encoding: StorageEncoding,
}

impl StoredResource {
    /// A custom resource of a CRD: stored as JSON under `<group>/<plural>/`, as
    /// apiextensions-apiserver stores them.
    pub const fn custom(group: &'static str, plural: &'static str) -> StoredResource {
        StoredResource {
            resource: GroupResource::from_static(group, plural),
            path: "",
            encoding: StorageEncoding::Json,
        }
    }

    /// The path under the prefix: `path`, or `<group>/<plural>` for a custom resource.
    pub fn key_path(&self) -> String {
        if self.path.is_empty() {
            format!("{}/{}", self.resource.group, self.resource.resource)
        } else {
            self.path.to_owned()
        }
    }

    /// Why an object of `api_version` and `kind` cannot be stored under this resource, when it
    /// is a kind of another resource: kube-apiserver decodes what it reads there as this
    /// resource's kind and fails. `None` when the kind fits, or is not a known kind at all
    /// (decoding reports that).
    pub fn misplaced(&self, api_version: &str, kind: &str) -> Option<String> {
        let info = apfkit_types::KINDS
            .iter()
            .find(|k| k.api_version == api_version && k.kind == kind && k.plural.is_some())?;
        self.misplaced_kind(kind, info.group, info.plural.unwrap_or_default())
    }

    /// Why an object of `kind`, whose resource is `plural` of `group`, cannot be stored under
    /// this resource; `None` when that resource is this one.
    pub fn misplaced_kind(&self, kind: &str, group: &str, plural: &str) -> Option<String> {
        (group != self.resource.group || plural != self.resource.resource).then(|| {
            format!(
                "a {kind} stored under {}/, where kube-apiserver reads only {}; left untouched",
                self.key_path(),
                self.resource.resource
            )
        })
    }
}

/// Every resource of flowcontrol and apiregistration, with its etcd path.
pub const RESOURCES: &[StoredResource] = &[
    StoredResource {
        resource: GroupResource::from_static("flowcontrol.apiserver.k8s.io", "flowschemas"),
        path: "flowschemas",
        encoding: StorageEncoding::Protobuf,
    },
    StoredResource {
        resource: GroupResource::from_static(
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
        ),
        path: "prioritylevelconfigurations",
        encoding: StorageEncoding::Protobuf,
    },
    StoredResource {
        resource: GroupResource::from_static("apiregistration.k8s.io", "apiservices"),
        path: "apiregistration.k8s.io/apiservices",
        encoding: StorageEncoding::Json,
    },
];

/// How to reach etcd, with etcdctl's choices.
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// Client URLs (`http://127.0.0.1:2379`, `https://...`): the members of one cluster. A
    /// request that a member cannot answer (down, unreachable, out of time) goes to the next.
    pub endpoints: Vec<String>,
    /// CA bundle (PEM) to verify the server with.
    pub ca: Option<PathBuf>,
    /// Client certificate (PEM), with `key`.
    pub cert: Option<PathBuf>,
    /// Client key (PEM), with `cert`.
    pub key: Option<PathBuf>,
    /// The key prefix kube-apiserver was started with (`--etcd-prefix`, default `/registry`),
    /// normalised as kube-apiserver normalises it (see [`normalize_prefix`]).
    pub prefix: String,
    /// Deadline of the connection and of each request.
    pub timeout: Duration,
}

impl Default for EtcdOptions {
    fn default() -> Self {
        EtcdOptions {
            endpoints: vec!["http://127.0.0.1:2379".to_owned()],
            ca: None,
            cert: None,
            key: None,
            prefix: "/registry".to_owned(),
            timeout: Duration::from_secs(5),
        }
    }
}

/// Why etcd could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A file named by a flag could not be read, or is not what the flag wants.
    #[error("{flag} {}: {message}", path.display())]
    File {
        /// The flag (`--cacert`, `--cert`, `--key`).
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `--cert` without `--key`, or the other way round.
    #[error("a client certificate needs both --cert and --key")]
    HalfIdentity,
    /// Connecting failed.
    #[error("connecting to etcd at {endpoints}: {message}")]
    Connect {
        /// The endpoints tried.
        endpoints: String,
        /// The client's error.
        message: String,
    },
    /// A request failed: no member could answer it, or the one that did answered an error.
    #[error("etcd request for {what}: {message}")]
    Request {
        /// What was asked (a key, escaped; `prefix*` for a range).
        what: String,
        /// The client's error.
        message: String,
    },
    /// etcd refused this request for its size (`--max-request-bytes`): another request may
    /// pass, so the caller may go on without it.
    #[error("etcd refused the request for {what} as too large: {message}")]
    TooLarge {
        /// What was asked (a key, escaped).
        what: String,
        /// etcd's answer.
        message: String,
    },
}

impl StorageError {
    /// What is wrong with the file `path` named by `flag`.
    fn file(flag: &'static str, path: &Path, message: impl Into<String>) -> StorageError {
        StorageError::File {
            flag,
            path: path.to_owned(),
            message: message.into(),
        }
    }
}

/// One stored object's key and what its value says.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The etcd key.
    pub key: Key,
    /// Its resource.
    pub resource: StoredResource,
    /// Its encoding, apiVersion and kind, or why the value is not a stored object.
    pub stored: Result<Stored, ValueError>,
    /// Size of the value in bytes.
    pub size: usize,
    /// The revision of its last change (for compare-and-swap).
    pub mod_revision: i64,
}

impl Entry {
    /// Why the value cannot be an object of the resource it is stored under: kube-apiserver
    /// decodes a key's value as its resource's kind, so a PriorityLevelConfiguration under
    /// `flowschemas/` is an error there. `None` when the kind fits or is not known yet.
    pub fn misplaced(&self) -> Option<String> {
        let stored = self.stored.as_ref().ok()?;
        let (api_version, kind) = (stored.api_version.as_deref()?, stored.kind.as_deref()?);
        self.resource.misplaced(api_version, kind)
    }
}

/// Keys read in the first page; later pages hold as many keys as fit [`PAGE_BYTES`] at the
/// sizes seen so far, up to [`PAGE_KEYS`].
const FIRST_PAGE_KEYS: i64 = 32;
/// Keys read per request at most.
const PAGE_KEYS: i64 = 200;
/// Bytes of values a page aims at: bounded memory however large the objects.
const PAGE_BYTES: usize = 4 << 20;
/// The largest response taken from etcd. A page larger than this is read again in halves;
/// etcd's own client takes up to 2 GiB, but one value is at most etcd's request limit.
const RECEIVE_BYTES: usize = 256 << 20;

/// etcd's default `--max-request-bytes` (1.5 MiB): the largest write it takes.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 3 << 19;

/// One member of the cluster, with its own connection.
#[derive(Clone)]
struct Member {
    endpoint: String,
    client: Client,
    kv: KvClient,
}

/// A connection to the etcd of a kube-apiserver: one client per member, with failover.
pub struct Store {
    members: Members<Member>,
    prefix: String,
}

/// Kubernetes' normalisation of `--etcd-prefix`: `path.Join("/", prefix)` with a `/` at the
/// end (k8s.io/apiserver `pkg/storage/etcd3/store.go`, `New`). So `registry`, `//registry`
/// and `/registry/./` are all `/registry/`, and the empty prefix is `/`.
pub fn normalize_prefix(prefix: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in prefix.split('/') {
        match part {
            "" | "." => {}
            // Rooted: `..` at the root stays at the root, as Go's path.Clean.
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    let mut out = String::from("/");
    for part in parts {
        out.push_str(part);
        out.push('/');
    }
    out
}

/// Reads a file named by `flag`, at most [`SETTINGS_FILE_LIMIT`] (so `/dev/zero` or a wrong
/// path to a large file fails at once).
fn read(flag: &'static str, path: &Path) -> Result<Vec<u8>, StorageError> {
    use apfkit_runtime::files::{FileError, SETTINGS_FILE_LIMIT, read_at_most};
    read_at_most(path, SETTINGS_FILE_LIMIT).map_err(|error| {
        let message = match error {
            FileError::TooLarge(_) => format!("{error}; not a PEM file"),
            other => other.to_string(),
        };
        StorageError::file(flag, path, message)
    })
}

/// What a PEM file holds, for messages.
fn pem_contents(pem: &[u8]) -> String {
    let mut kinds: Vec<String> = Vec::new();
    for section in rustls_pki_types::pem::PemObject::pem_slice_iter(pem)
        .map_while(Result::ok)
        .map(|(kind, _): (rustls_pki_types::pem::SectionKind, Vec<u8>)| kind)
    {
        let name = match section {
            rustls_pki_types::pem::SectionKind::Certificate => "a certificate",
            rustls_pki_types::pem::SectionKind::PublicKey => "a public key",
            rustls_pki_types::pem::SectionKind::RsaPrivateKey
            | rustls_pki_types::pem::SectionKind::PrivateKey
            | rustls_pki_types::pem::SectionKind::EcPrivateKey => "a private key",
            rustls_pki_types::pem::SectionKind::Crl => "a revocation list",
            rustls_pki_types::pem::SectionKind::Csr => "a certificate request",
            rustls_pki_types::pem::SectionKind::EchConfigList => "an ECH configuration",
            _ => "an unknown PEM section",
        };
        if !kinds.iter().any(|k| k == name) {
            kinds.push(name.to_owned());
        }
    }
    if kinds.is_empty() {
        "no PEM section".to_owned()
    } else {
        kinds.join(" and ")
    }
}

/// The certificates of a PEM file, each checked to parse as X.509.
fn certificates(
    flag: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, StorageError> {
    use rustls_pki_types::pem::PemObject;
    let failed = |message: String| StorageError::file(flag, path, message);
    let certificates = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| failed(format!("not a PEM file: {err}")))?;
    if certificates.is_empty() {
        return Err(failed(format!(
            "holds {}, not a certificate",
            pem_contents(pem)
        )));
    }
    let mut roots = rustls::RootCertStore::empty();
    for (i, certificate) in certificates.iter().enumerate() {
        roots
            .add(certificate.clone())
            .map_err(|err| failed(format!("certificate {} does not parse: {err}", i + 1)))?;
    }
    Ok(certificates)
}

/// Checks the TLS files before connecting, so that a wrong file is named with what is wrong
/// instead of surfacing as a handshake failure.
fn tls_options(options: &EtcdOptions) -> Result<Option<TlsOptions>, StorageError> {
    let identity = match (&options.cert, &options.key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err(StorageError::HalfIdentity),
    };
    let wants_tls = options.ca.is_some()
        || identity.is_some()
        || options.endpoints.iter().any(|e| e.starts_with("https://"));
    if !wants_tls {
        return Ok(None);
    }
    let mut tls = TlsOptions::new();
    if let Some(ca) = &options.ca {
        let pem = read("--cacert", ca)?;
        certificates("--cacert", ca, &pem)?;
        tls = tls.ca_certificate(Certificate::from_pem(pem));
    }
    if let Some((cert_path, key_path)) = identity {
        let cert = read("--cert", cert_path)?;
        let chain = certificates("--cert", cert_path, &cert)?;
        let key = read("--key", key_path)?;
        let private_key = {
            use rustls_pki_types::pem::PemObject;
            PrivateKeyDer::from_pem_slice(&key).map_err(|_| {
                let message = format!("holds {}, not a private key", pem_contents(&key));
                StorageError::file("--key", key_path, message)
            })?
        };
        let provider = rustls::crypto::ring::default_provider();
        rustls::sign::CertifiedKey::from_der(chain, private_key, &provider).map_err(|err| {
            let message = format!(
                "does not go with the certificate in {}: {err}",
                cert_path.display()
            );
            StorageError::file("--key", key_path, message)
        })?;
        tls = tls.identity(Identity::from_pem(cert, key));
    }
    Ok(Some(tls))
}

impl Store {
    /// Connects to every member and checks that one answers (a status request), trying them
    /// in order.
    pub async fn connect(options: &EtcdOptions) -> Result<Store, StorageError> {
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(options.timeout)
            .with_timeout(options.timeout);
        if let Some(tls) = tls_options(options)? {
            connect = connect.with_tls(tls);
        }
        let endpoints = options.endpoints.join(",");
        let mut members = Vec::with_capacity(options.endpoints.len());
        for endpoint in &options.endpoints {
            let client = tokio::time::timeout(
                options.timeout,
                Client::connect([endpoint], Some(connect.clone())),
            )
            .await
            .map_err(|_| StorageError::Connect {
                endpoints: endpoint.clone(),
                message: format!("no answer within {:?}", options.timeout),
            })?
            .map_err(|err| StorageError::Connect {
                endpoints: endpoint.clone(),
                message: err.to_string(),
            })?;
            let kv = client.kv_client().max_decoding_message_size(RECEIVE_BYTES);
            members.push(Member {
                endpoint: endpoint.clone(),
                client,
                kv,
            });
        }
        let Some(members) = Members::new(members) else {
            return Err(StorageError::Connect {
                endpoints,
                message: "no endpoints".to_owned(),
            });
        };
        let store = Store {
            members,
            prefix: normalize_prefix(&options.prefix),
        };
        store
            .call(b"the cluster's status", |mut member| async move {
                member.client.status().await
            })
            .await
            .map_err(|err| StorageError::Connect {
                endpoints,
                message: match err {
                    StorageError::Request { message, .. } => message,
                    other => other.to_string(),
                },
            })?;
        Ok(store)
    }

    /// Runs `request` on the member that answered last, and on each other member in turn
    /// while members cannot answer (down, unreachable, out of time, no leader), as etcdctl
    /// fails over. Writes are compare-and-swap transactions, so one repeated after a lost
    /// answer fails its comparison instead of writing twice.
    async fn call<T, F, Fut>(&self, what: &[u8], request: F) -> Result<T, StorageError>
    where
        F: Fn(Member) -> Fut,
        Fut: Future<Output = Result<T, etcd_client::Error>>,
    {
        match self.members.call(request).await {
            Ok(answer) => Ok(answer),
            Err(CallError::Refused(err)) => Err(request_error(what, err)),
            Err(CallError::Unavailable(failures)) => Err(StorageError::Request {
                what: Key(what.to_vec()).to_string(),
                message: failures
                    .iter()
                    .map(|(member, err)| format!("{}: {}", member.endpoint, describe(err)))
                    .collect::<Vec<_>>()
                    .join("; "),
            }),
        }
    }

    /// The key prefix of a resource: `<prefix><path>/`.
    pub fn resource_prefix(&self, resource: &StoredResource) -> String {
        format!("{}{}/", self.prefix, resource.key_path())
    }

    /// The resource whose keys `key` is among, if any.
    pub fn resource_of(&self, key: &[u8]) -> Option<&'static StoredResource> {
        RESOURCES
            .iter()
            .find(|resource| key.starts_with(self.resource_prefix(resource).as_bytes()))
    }

    /// The key of the object `name` of `resource` (cluster-scoped resources only, as these).
    pub fn object_key(&self, resource: &StoredResource, name: &str) -> Key {
        Key(format!("{}{name}", self.resource_prefix(resource)).into_bytes())
    }

    /// How many keys `resource` has.
    pub async fn count(&self, resource: &StoredResource) -> Result<u64, StorageError> {
        let prefix = self.resource_prefix(resource).into_bytes();
        let response = self
            .call(&prefix, |mut member| {
                let options = GetOptions::new()
                    .with_range(prefix_end(&prefix))
                    .with_count_only();
                let prefix = prefix.clone();
                async move { member.kv.get(prefix, Some(options)).await }
            })
            .await?;
        Ok(u64::try_from(response.count()).unwrap_or(0))
    }

    /// The page of `resource` at `cursor` ([`Cursor::FIRST`] for the first), with values: up
    /// to the cursor's number of keys, fewer when a response would be over the receive limit
    /// (it is asked for again in halves). The page's `next` says where the next page starts
    /// and how many keys fit `PAGE_BYTES` (4 MiB) at the sizes seen.
    pub async fn page(
        &self,
        resource: &StoredResource,
        cursor: Cursor,
    ) -> Result<Page, StorageError> {
        let prefix = self.resource_prefix(resource).into_bytes();
        let start = cursor.from.unwrap_or_else(|| prefix.clone());
        let what = [&prefix[..], b"*"].concat();
        let mut limit = cursor.keys.clamp(1, PAGE_KEYS);
        let response = loop {
            let answer = self
                .call(&what, |mut member| {
                    let options = GetOptions::new()
                        .with_range(prefix_end(&prefix))
                        .with_limit(limit);
                    let start = start.clone();
                    async move { member.kv.get(start, Some(options)).await }
                })
                .await;
            match answer {
                Err(StorageError::TooLarge { .. }) if limit > 1 => limit /= 2,
                answer => break answer?,
            }
        };
        let values: Vec<RawValue> = response.kvs().iter().map(RawValue::of).collect();
        let next = match response.kvs().last() {
            Some(last) if response.more() => {
                let mut from = last.key().to_vec();
                from.push(0);
                let bytes: usize = values.iter().map(|v| v.key.len() + v.value.len()).sum();
                let per_key = (bytes / values.len()).max(1);
                let keys = i64::try_from(PAGE_BYTES / per_key)
                    .unwrap_or(PAGE_KEYS)
                    .clamp(1, PAGE_KEYS);
                Some(Cursor {
                    from: Some(from),
                    keys,
                })
            }
            _ => None,
        };
        Ok(Page { values, next })
    }

    /// The value of `key` and its mod revision, if the key exists.
    pub async fn get(&self, key: &[u8]) -> Result<Option<RawValue>, StorageError> {
        let response = self
            .call(key, |mut member| {
                let key = key.to_vec();
                async move { member.kv.get(key, None).await }
            })
            .await?;
        Ok(response.kvs().first().map(RawValue::of))
    }

    /// Writes `value` to `key` only if the key's mod revision is still `mod_revision`
    /// (compare-and-swap, as kube-apiserver's `GuaranteedUpdate`); `false` on a conflict.
    pub async fn swap(
        &self,
        key: &[u8],
        value: &[u8],
        mod_revision: i64,
    ) -> Result<bool, StorageError> {
        let response = self
            .call(key, |mut member| {
                let txn = Txn::new()
                    .when([Compare::mod_revision(key, CompareOp::Equal, mod_revision)])
                    .and_then([TxnOp::put(key, value, None::<PutOptions>)]);
                async move { member.kv.txn(txn).await }
            })
            .await?;
        Ok(response.succeeded())
    }

    /// Writes every swap in one transaction if no key's mod revision changed, and none of them
    /// otherwise; then the current value of every key (`None`: deleted), in order, read in the
    /// same transaction.
    ///
    /// One transaction for many keys is what makes a migration fast: etcd applies its
    /// transactions one at a time, so a transaction per key leaves it waiting on the apply loop.
    /// Every key is still written only over the revision it was read at. etcd refuses more
    /// than `--max-txn-ops` (default 128) writes in one transaction.
    pub async fn swap_batch(&self, swaps: &[Swap]) -> Result<Swapped, StorageError> {
        let first = swaps.first().map_or(&[][..], |s| s.key.as_slice());
        let response = self
            .call(first, |mut member| {
                let compares = swaps.iter().map(|s| {
                    Compare::mod_revision(s.key.as_slice(), CompareOp::Equal, s.mod_revision)
                });
                let puts = swaps
                    .iter()
                    .map(|s| TxnOp::put(s.key.as_slice(), s.value.as_slice(), None::<PutOptions>));
                let gets = swaps
                    .iter()
                    .map(|s| TxnOp::get(s.key.as_slice(), None::<GetOptions>));
                let txn = Txn::new()
                    .when(compares.collect::<Vec<_>>())
                    .and_then(puts.collect::<Vec<_>>())
                    .or_else(gets.collect::<Vec<_>>());
                async move { member.kv.txn(txn).await }
            })
            .await?;
        if response.succeeded() {
            return Ok(Swapped::All);
        }
        let what = || Key(first.to_vec()).to_string();
        let current = response
            .op_responses()
            .into_iter()
            .map(|op| match op {
                TxnOpResponse::Get(get) => Ok(get.kvs().first().map(RawValue::of)),
                other => Err(StorageError::Request {
                    what: what(),
                    message: format!("etcd answered a read with {other:?}"),
                }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if current.len() != swaps.len() {
            return Err(StorageError::Request {
                what: what(),
                message: format!(
                    "etcd answered {} reads with {} values",
                    swaps.len(),
                    current.len()
                ),
            });
        }
        Ok(Swapped::None { current })
    }

    /// Writes `value` to `key` unconditionally (for seeding test data and benchmarks).
    pub async fn put(&self, key: &[u8], value: Vec<u8>) -> Result<(), StorageError> {
        self.call(key, |mut member| {
            let value = value.clone();
            async move { member.kv.put(key, value, None).await }
        })
        .await
        .map(drop)
    }

    /// A handle on the same connections, for requests in parallel.
    pub fn handle(&self) -> Store {
        Store {
            members: self.members.clone(),
            prefix: self.prefix.clone(),
        }
    }

    /// The prefix under which kube-apiserver keeps everything (`--etcd-prefix`, normalised:
    /// it starts and ends with `/`).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Every key of every known resource, in key order per resource, with what its value
    /// says; read a page at a time.
    pub async fn list(&self) -> Result<Vec<Entry>, StorageError> {
        let mut entries = Vec::new();
        for resource in RESOURCES {
            let mut cursor = Some(Cursor::FIRST);
            while let Some(at) = cursor.take() {
                let page = self.page(resource, at).await?;
                entries.extend(page.values.into_iter().map(|raw| Entry {
                    stored: inspect(&raw.value),
                    size: raw.value.len(),
                    key: Key(raw.key),
                    resource: resource.clone(),
                    mod_revision: raw.mod_revision,
                }));
                cursor = page.next;
            }
        }
        Ok(entries)
    }
}

/// Where a page of a resource's keys starts, and how many keys to ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// The first key of the page; `None`: the resource's first key.
    from: Option<Vec<u8>>,
    /// Keys to ask for.
    keys: i64,
}

impl Cursor {
    /// The first page of a resource.
    pub const FIRST: Cursor = Cursor {
        from: None,
        keys: FIRST_PAGE_KEYS,
    };
}

/// One page of a resource's keys.
#[derive(Debug, Clone)]
pub struct Page {
    /// The keys with their values.
    pub values: Vec<RawValue>,
    /// Where the next page starts, if there is one.
    pub next: Option<Cursor>,
}

/// Whether etcd (or our receive limit) refused a message for its size.
fn too_large(err: &etcd_client::Error) -> bool {
    match err {
        etcd_client::Error::GRpcStatus(status) => {
            matches!(
                status.code(),
                tonic::Code::ResourceExhausted | tonic::Code::OutOfRange
            ) || status.message().contains("request is too large")
        }
        _ => false,
    }
}

/// One write of [`Store::swap_batch`]: `value` to `key` if its mod revision is still
/// `mod_revision`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swap {
    /// The key.
    pub key: Vec<u8>,
    /// The new value.
    pub value: Vec<u8>,
    /// The mod revision the key was read at.
    pub mod_revision: i64,
}

/// What [`Store::swap_batch`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swapped {
    /// Every key was written.
    All,
    /// Some key had changed, so nothing was written; the current value of every key, in order
    /// (`None`: the key is gone).
    None {
        /// The keys' current values.
        current: Vec<Option<RawValue>>,
    },
}

/// A stored key with its value and mod revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawValue {
    /// The key.
    pub key: Vec<u8>,
    /// The value as stored.
    pub value: Vec<u8>,
    /// The revision of the key's last change.
    pub mod_revision: i64,
}

impl RawValue {
    fn of(kv: &etcd_client::KeyValue) -> RawValue {
        RawValue {
            key: kv.key().to_vec(),
            value: kv.value().to_vec(),
            mod_revision: kv.mod_revision(),
        }
    }
}

fn request_error(key: &[u8], err: etcd_client::Error) -> StorageError {
    let what = Key(key.to_vec()).to_string();
    let message = describe(&err);
    if too_large(&err) {
        return StorageError::TooLarge { what, message };
    }
    StorageError::Request { what, message }
}

/// The client's error in one line: a gRPC status's message and the cause beneath it
/// (`tcp connect error: Connection refused (os error 111)`), not its debug form.
fn describe(err: &etcd_client::Error) -> String {
    let etcd_client::Error::GRpcStatus(status) = err else {
        return err.to_string();
    };
    let text = status.message().to_owned();
    let mut cause = std::error::Error::source(status);
    let mut deepest = None;
    while let Some(error) = cause {
        deepest = Some(error.to_string());
        cause = error.source();
    }
    match deepest {
        Some(deepest) if !text.contains(&deepest) => format!("{text}: {deepest}"),
        _ if text.is_empty() => format!("{:?}", status.code()),
        _ => text,
    }
}

/// The first key after every key starting with `prefix` (etcd's range end for a prefix).
fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte 0xff: to the end of the keyspace.
    vec![0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_resource_has_an_etcd_path_and_no_other() {
        let mut served: Vec<(&str, &str)> = apfkit_types::KINDS
            .iter()
            .filter_map(|k| Some((k.group, k.plural?)))
            .collect();
        served.sort();
        served.dedup();
        let mut known: Vec<(&str, &str)> = RESOURCES
            .iter()
            .map(|r| (r.resource.group.as_ref(), r.resource.resource.as_ref()))
            .collect();
        known.sort();
        assert_eq!(known, served);
    }

    /// Go's `path.Join("/", prefix)` plus a final `/` (k8s.io/apiserver
    /// `pkg/storage/etcd3/store.go`).
    #[test]
    fn prefixes_normalise_as_go_joins_them() {
        for (given, normal) in [
            ("/registry", "/registry/"),
            ("registry", "/registry/"),
            ("//registry", "/registry/"),
            ("/registry/./", "/registry/"),
            ("/registry//", "/registry/"),
            ("/a/b/../c", "/a/c/"),
            ("/../registry", "/registry/"),
            ("../..", "/"),
            ("", "/"),
            (".", "/"),
            ("/", "/"),
            ("/k8s/registry", "/k8s/registry/"),
        ] {
            assert_eq!(normalize_prefix(given), normal, "{given:?}");
        }
    }

    #[test]
    fn kinds_under_another_resource_are_misplaced() {
        let [flow_schemas, levels, services] = [&RESOURCES[0], &RESOURCES[1], &RESOURCES[2]];
        let v1 = "flowcontrol.apiserver.k8s.io/v1";
        assert_eq!(flow_schemas.misplaced(v1, "FlowSchema"), None);
        assert_eq!(levels.misplaced(v1, "PriorityLevelConfiguration"), None);
        assert!(
            flow_schemas
                .misplaced(v1, "PriorityLevelConfiguration")
                .is_some()
        );
        assert!(
            services
                .misplaced("flowcontrol.apiserver.k8s.io/v1beta2", "FlowSchema")
                .is_some()
        );
        assert_eq!(
            services.misplaced("apiregistration.k8s.io/v1", "APIService"),
            None
        );
        // Unknown kinds are left to the decoder to report.
        assert_eq!(flow_schemas.misplaced("v1", "Pod"), None);
    }

    #[test]
    fn prefix_ends_follow_etcds_rule() {
        assert_eq!(
            prefix_end(b"/registry/flowschemas/"),
            b"/registry/flowschemas0"
        );
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
    }
}
