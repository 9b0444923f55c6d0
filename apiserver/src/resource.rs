//! What the server serves of each resource: its names, scope, subresources and where and how
//! it is stored, with the versions the scheme has for its kind.

use apfkit_runtime::scheme::{Codec, Scheme};
use apfkit_runtime::version::compare_kube_aware_version_strings;

/// How stored objects are encoded: kube-apiserver stores its own groups' objects as protobuf
/// and APIServices and custom resources as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageEncoding {
    /// Kubernetes' protobuf envelope (`k8s\0`).
    Protobuf,
    /// Compact JSON with a final newline, as Go's `json.Encoder` writes it.
    Json,
}

/// How to serve one resource of a scheme: what the scheme's codecs do not say.
#[derive(Debug, Clone)]
pub struct ResourceConfig {
    /// API group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names for discovery (`kubectl get fs`).
    pub short_names: Vec<String>,
    /// Categories for discovery (`kubectl get all`).
    pub categories: Vec<String>,
    /// Whether the resource has a `/status` subresource: writes to the object then keep the
    /// stored status, and writes to `/status` keep everything else.
    pub status: bool,
    /// The version objects are stored in.
    pub storage_version: String,
    /// How stored objects are encoded.
    pub storage_encoding: StorageEncoding,
    /// The path of the resource under the storage prefix: objects are kept at
    /// `<prefix>/<key_path>/[<namespace>/]<name>` (kube-apiserver keeps its own groups'
    /// resources under the bare plural, kube-aggregator APIServices under
    /// `apiregistration.k8s.io/apiservices`).
    pub key_path: String,
    /// Whether strategic merge patches are taken (kube-apiserver's own kinds: yes; custom
    /// resources: no, 415).
    pub strategic_merge: bool,
    /// Names that may not be deleted, with the reason kube-apiserver gives.
    pub undeletable: Vec<(String, String)>,
    /// The columns of `kubectl get` (kube-apiserver's default when `None`: name and creation
    /// time).
    pub printer: Option<crate::table::Printer>,
    /// The JSON Schema (draft 2020-12, definitions under `$defs`) of a kind of the resource
    /// (the kind or its list) in a version, for the OpenAPI documents.
    pub schema: Option<SchemaFn>,
}

/// The JSON Schema of `kind` in `group`/`version`, if known: (group, version, kind).
pub type SchemaFn = fn(&str, &str, &str) -> Option<serde_json::Value>;

/// A served resource: its configuration and its kind's codec in every served version,
/// the preferred version first.
#[derive(Debug)]
pub struct Served<H: 'static> {
    /// The configuration.
    pub config: ResourceConfig,
    /// The plural name used in URLs.
    pub plural: &'static str,
    /// Codecs of every served version, in kube-apiserver's version priority order.
    pub versions: Vec<&'static Codec<H>>,
    /// The codec of the storage version.
    pub storage: &'static Codec<H>,
    /// The merge rules of each served version, for server-side apply, compiled on first use.
    field_schemas: std::sync::OnceLock<
        std::collections::BTreeMap<String, apfkit_fieldmanager::schema::Schema>,
    >,
}

/// Why a resource cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// The scheme has no codec of the kind.
    #[error("the scheme serves no kind {kind} in group {group:?}")]
    NoKind {
        /// The group.
        group: String,
        /// The kind.
        kind: String,
    },
    /// The storage version is not one the scheme serves for the kind.
    #[error("{kind} has no version {version} to store objects in; it has {served}")]
    NoStorageVersion {
        /// The kind.
        kind: String,
        /// The configured version.
        version: String,
        /// The versions the scheme has.
        served: String,
    },
}

impl<H> Served<H> {
    /// Resolves `config` against the codecs of `scheme`.
    ///
    /// # Errors
    ///
    /// A kind the scheme lacks, or a storage version it does not serve.
    pub fn new(scheme: &'static Scheme<H>, config: ResourceConfig) -> Result<Self, ResourceError> {
        let mut versions: Vec<&'static Codec<H>> = scheme
            .codecs()
            .iter()
            .filter(|c| c.group == config.group && c.kind == config.kind)
            .collect();
        let Some(first) = versions.first() else {
            return Err(ResourceError::NoKind {
                group: config.group,
                kind: config.kind,
            });
        };
        let plural = first.plural;
        versions.sort_by(|a, b| compare_kube_aware_version_strings(b.version, a.version));
        let Some(storage) = versions
            .iter()
            .copied()
            .find(|c| c.version == config.storage_version)
        else {
            let served: Vec<&str> = versions.iter().map(|c| c.version).collect();
            return Err(ResourceError::NoStorageVersion {
                kind: config.kind,
                version: config.storage_version,
                served: served.join(", "),
            });
        };
        Ok(Served {
            config,
            plural,
            versions,
            storage,
            field_schemas: std::sync::OnceLock::new(),
        })
    }

    /// The merge rules of every served version, by `group/version`: compiled from the
    /// configuration's JSON Schemas, or deduced from values for a resource without them.
    pub fn field_schemas(
        &self,
    ) -> &std::collections::BTreeMap<String, apfkit_fieldmanager::schema::Schema> {
        self.field_schemas.get_or_init(|| {
            self.versions
                .iter()
                .map(|codec| {
                    let schema = self
                        .config
                        .schema
                        .and_then(|f| f(&self.config.group, codec.version, &self.config.kind))
                        .map_or_else(apfkit_fieldmanager::schema::Schema::deduced, |json| {
                            apfkit_fieldmanager::schema::Schema::compile(&json)
                        });
                    (codec.api_version(), schema)
                })
                .collect()
        })
    }

    /// The codec of `version`, if served.
    pub fn version(&self, version: &str) -> Option<&'static Codec<H>> {
        self.versions.iter().copied().find(|c| c.version == version)
    }

    /// `<plural>.<group>`, as messages and `StatusDetails` name the resource.
    pub fn group_resource(&self) -> String {
        format!("{}.{}", self.plural, self.config.group)
    }

    /// The singular name: the kind in lower case, as kube-apiserver derives it.
    pub fn singular(&self) -> String {
        self.config.kind.to_lowercase()
    }

    /// `<kind>List`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.config.kind)
    }
}
