//! What the server serves of each resource: its names, scope, subresources and where and how
//! it is stored, with the versions the scheme has for its kind.

use apfkit_runtime::identity::{GroupResource, GroupVersionKind};
use apfkit_runtime::kind::{KindInfo, ScaleSubresource};
use apfkit_runtime::scheme::{
    Codec, Encoding, Limits, Scheme, SchemeError, StorageEncoding, UnknownFields, Warning,
};
use apfkit_runtime::version::compare_kube_aware_version_strings;
use serde_json::Value;

use super::strategy::{GenericStrategy, Strategy};

/// How to serve one resource of a scheme: what the scheme's codecs do not say.
#[derive(Clone)]
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
    /// Whether it is a custom resource, served as apiextensions-apiserver serves them, as
    /// unstructured objects: its lists' items keep `apiVersion` and `kind`, and their
    /// metadata always has `continue`.
    pub custom: bool,
    /// The paths of a `/scale` subresource, when the resource has one.
    pub scale: Option<ScaleSubresource>,
    /// The JSON Schema (draft 2020-12, definitions under `$defs`) of a kind of the resource
    /// (the kind or its list) in a version, for the OpenAPI documents.
    pub schema: Option<SchemaFn>,
    /// What each version (by name) of a custom resource publishes in the OpenAPI documents,
    /// as apiextensions-apiserver builds them; the documents' paths are made from it and the
    /// resource's names.
    pub custom_openapi: Option<std::sync::Arc<std::collections::BTreeMap<String, CustomOpenApi>>>,
    /// Whether the kind is one of kube-apiserver's own, published in its group-version's
    /// OpenAPI document as kube-apiserver publishes it (see
    /// [`ResourceConfig::with_kube_openapi`]).
    pub kube_openapi: bool,
    /// Whether a delete answers the deleted object rather than a `Status` (the registry's
    /// `ReturnDeletedObject`: Services, Pods, Namespaces and a few more in kube-apiserver).
    pub return_deleted_object: bool,
    /// When `metadata.generation` grows, as the kind's strategy says.
    pub generation: Generation,
    /// Whether the resource has a `/finalize` subresource (Namespaces: a PUT that may change
    /// everything but the status, `spec.finalizers` included).
    pub finalize: bool,
    /// Whether a collection may be deleted at once (`deletecollection`; Namespaces: no).
    pub delete_collection: bool,
    /// The subresources that take only a POST, answered by the server's
    /// `http::SubresourceCreator` of each, by name, with the kind each takes and answers (a
    /// ServiceAccount's `token`: `TokenRequest`).
    pub created_subresources: Vec<(String, GroupVersionKind)>,
}

/// How a kind's strategy keeps `metadata.generation` (its `PrepareForCreate` and
/// `PrepareForUpdate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Generation {
    /// 1 at create, one more when `spec` changes (most kinds, custom resources).
    #[default]
    OnSpecChange,
    /// 1 at create, one more when anything but the metadata changes, or the labels do
    /// (EndpointSlices).
    OnAnyChange,
    /// Never set by the server (Services, APIServices, the RBAC kinds).
    Untracked,
}

impl ResourceConfig {
    /// A resource of kube-apiserver's own groups, kept as kube-apiserver keeps them: in
    /// `storage_version`, as protobuf, under the bare plural, strategic merge patches taken;
    /// no short names, categories, subresources or schema until the builders below say so.
    pub fn builtin(kind: GroupVersionKind, plural: &str, namespaced: bool) -> Self {
        ResourceConfig {
            group: kind.group.into_owned(),
            kind: kind.kind.into_owned(),
            namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            status: false,
            storage_version: kind.version.into_owned(),
            storage_encoding: StorageEncoding::Protobuf,
            key_path: plural.to_owned(),
            strategic_merge: true,
            custom: false,
            scale: None,
            schema: None,
            custom_openapi: None,
            kube_openapi: false,
            return_deleted_object: false,
            generation: Generation::OnSpecChange,
            finalize: false,
            delete_collection: true,
            created_subresources: Vec::new(),
        }
    }

    /// [`ResourceConfig::builtin`] for a kind of k8s-openapi, in its version.
    pub fn of<T: k8s_openapi::Resource>() -> Self
    where
        T::Scope: 'static,
    {
        let namespaced = std::any::TypeId::of::<T::Scope>()
            == std::any::TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        let kind = GroupVersionKind::from_static(T::GROUP, T::VERSION, T::KIND);
        Self::builtin(kind, T::URL_PATH_SEGMENT, namespaced)
    }

    /// A custom resource, kept as apiextensions-apiserver keeps them: in `storage_version`,
    /// as JSON, under `GROUP/PLURAL`; no strategic merge patch (415).
    pub fn custom(kind: GroupVersionKind, plural: &str, namespaced: bool) -> Self {
        let key_path = format!("{}/{plural}", kind.group);
        ResourceConfig {
            storage_encoding: StorageEncoding::Json,
            key_path,
            strategic_merge: false,
            custom: true,
            ..Self::builtin(kind, plural, namespaced)
        }
    }

    /// The resource of a generated kind, stored in `storage_version`, as a custom resource
    /// ([`ResourceConfig::custom`]) with the kind's `status` and `scale` subresources.
    pub fn custom_of<W>(info: &KindInfo<W>, storage_version: &str) -> Self {
        let kind =
            GroupVersionKind::new(info.group, storage_version.to_owned(), info.kind.to_owned());
        let config = Self::custom(kind, info.plural.unwrap_or_default(), info.namespaced)
            .with_status(info.subresources.contains(&"status"));
        match &info.scale {
            Some(scale) => config.with_scale(scale.clone()),
            None => config,
        }
    }

    /// The resource as kube-apiserver serves Namespaces: with a `/finalize` subresource, and
    /// without `deletecollection`.
    #[must_use]
    pub fn as_namespaces(mut self) -> Self {
        self.finalize = true;
        self.delete_collection = false;
        self
    }

    /// The resource with a `/status` subresource when `status` says so.
    #[must_use]
    pub fn with_status(mut self, status: bool) -> Self {
        self.status = status;
        self
    }

    /// The resource with these short names in discovery.
    #[must_use]
    pub fn with_short_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.short_names = names.into_iter().map(Into::into).collect();
        self
    }

    /// The resource keeps `metadata.generation` as `generation` says.
    #[must_use]
    pub fn with_generation(mut self, generation: Generation) -> Self {
        self.generation = generation;
        self
    }

    /// A delete of the resource answers the deleted object (`ReturnDeletedObject`).
    #[must_use]
    pub fn returning_deleted_objects(mut self) -> Self {
        self.return_deleted_object = true;
        self
    }

    /// The resource in these categories in discovery.
    #[must_use]
    pub fn with_categories<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.categories = names.into_iter().map(Into::into).collect();
        self
    }

    /// The resource kept under `key_path`, encoded as `encoding`.
    #[must_use]
    pub fn stored_at(mut self, key_path: impl Into<String>, encoding: StorageEncoding) -> Self {
        self.key_path = key_path.into();
        self.storage_encoding = encoding;
        self
    }

    /// The resource with a `/scale` subresource at these paths.
    #[must_use]
    pub fn with_scale(mut self, scale: ScaleSubresource) -> Self {
        self.scale = Some(scale);
        self
    }

    /// The resource whose kinds' JSON Schemas `schema` gives.
    #[must_use]
    pub fn with_schema(mut self, schema: SchemaFn) -> Self {
        self.schema = Some(schema);
        self
    }

    /// The resource with the subresource `name`, which takes only a POST of `kind` and is
    /// answered by the server's `http::SubresourceCreator` registered for it
    /// (`ApiServer::with_subresource_creator`); discovery lists it with the verb `create`.
    #[must_use]
    pub fn with_created_subresource(mut self, name: &str, kind: GroupVersionKind) -> Self {
        self.created_subresources.push((name.to_owned(), kind));
        self
    }

    /// The resource of one of kube-apiserver's own kinds, described as kube-apiserver 1.37
    /// describes it: in the versions it publishes (the `v1` of `flowcontrol.apiserver.k8s.io`,
    /// `apiregistration.k8s.io`, `rbac.authorization.k8s.io`, `discovery.k8s.io`,
    /// `apiextensions.k8s.io` and core Services), its schema is kube's, which strategic merge
    /// patch and server-side apply merge by, and the group-version's OpenAPI document is
    /// kube's, trimmed to the resources served, once every resource of it is kube's; in
    /// other versions, the schema given before, if any.
    #[must_use]
    pub fn with_kube_openapi(mut self) -> Self {
        let before = self.schema.take();
        self.schema = Some(std::sync::Arc::new(move |kind: &GroupVersionKind| {
            crate::kube_openapi::schema(kind).or_else(|| before.as_ref().and_then(|f| f(kind)))
        }));
        self.kube_openapi = true;
        self
    }
}

impl std::fmt::Debug for ResourceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceConfig")
            .field("group", &self.group)
            .field("kind", &self.kind)
            .field("namespaced", &self.namespaced)
            .field("status", &self.status)
            .field("storage_version", &self.storage_version)
            .field("storage_encoding", &self.storage_encoding)
            .field("key_path", &self.key_path)
            .field("custom", &self.custom)
            .field("scale", &self.scale)
            .field("schema", &self.schema.is_some())
            .field("custom_openapi", &self.custom_openapi.is_some())
            .field("kube_openapi", &self.kube_openapi)
            .field("return_deleted_object", &self.return_deleted_object)
            .field("generation", &self.generation)
            .field("finalize", &self.finalize)
            .field("delete_collection", &self.delete_collection)
            .finish_non_exhaustive()
    }
}

/// What a version's schema finds of an object about to be written
/// ([`VersionCodec::validate`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validation {
    /// What refuses the write (`422 Invalid`).
    pub causes: Vec<crate::error::Cause>,
    /// What the write is answered with as `Warning` headers (a custom resource's rules that
    /// an unchanged value breaks: validation ratcheting).
    pub warnings: Vec<String>,
}

/// What one version of a custom resource publishes in kube-apiserver's OpenAPI documents, as
/// apiextensions-apiserver's builder makes it: the kind's and its list's schemas in each
/// document's form, and the subresources the version has.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomOpenApi {
    /// The kind's schema in OpenAPI v3's form (references into `#/components/schemas/`).
    pub kind: Value,
    /// The list's schema in OpenAPI v3's form.
    pub list: Value,
    /// The kind's schema in OpenAPI v2's form (references into `#/definitions/`).
    pub kind_v2: Value,
    /// The list's schema in OpenAPI v2's form.
    pub list_v2: Value,
    /// Whether the version has a `/status` subresource.
    pub status: bool,
    /// Whether the version has a `/scale` subresource.
    pub scale: bool,
}

/// The JSON Schema of a kind, if known.
pub type SchemaFn =
    std::sync::Arc<dyn Fn(&GroupVersionKind) -> Option<serde_json::Value> + Send + Sync>;

/// One served version of a kind: how the server takes its objects to the hub object `H` and
/// back. A generated scheme's codecs serve through [`SchemeVersion`]; kinds known only at run
/// time (custom resources) implement it themselves.
pub trait VersionCodec<H>: Send + Sync + std::fmt::Debug {
    /// The version's group, version and kind.
    fn gvk(&self) -> &GroupVersionKind;
    /// API group, empty for the core group.
    fn group(&self) -> &str {
        &self.gvk().group
    }
    /// Version.
    fn version(&self) -> &str {
        &self.gvk().version
    }
    /// Kind.
    fn kind(&self) -> &str {
        &self.gvk().kind
    }
    /// `group/version`, or `version` alone in the core group.
    fn api_version(&self) -> String {
        self.gvk().api_version()
    }
    /// A request's object of this version decoded, defaulted and taken to the hub, fields
    /// reported as `unknown` says.
    ///
    /// # Errors
    ///
    /// An object that does not decode as this version.
    fn decode(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<H, SchemeError>;
    /// An object of this version taken to the hub as it is: no defaulting, unknown fields
    /// dropped (kube-apiserver's `versionConverter`, for managed fields).
    ///
    /// # Errors
    ///
    /// An object that does not decode as this version.
    fn decode_as_is(&self, object: &Value) -> Result<H, SchemeError>;
    /// A hub object converted to this version and appended to `out` as `encoding` says. On an
    /// error `out` may hold part of the object.
    ///
    /// # Errors
    ///
    /// An object this version cannot hold, or an encoding it has no form in.
    fn encode_into(
        &self,
        hub: H,
        encoding: Encoding,
        out: &mut Vec<u8>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SchemeError>;
    /// A hub object converted to this version as a JSON value.
    ///
    /// # Errors
    ///
    /// As [`VersionCodec::encode_into`].
    fn encode(&self, hub: H, warnings: &mut Vec<Warning>) -> Result<Value, SchemeError>;
    /// A stored value of the kind, in any version it was written in, read within `limits`
    /// and taken to the hub.
    ///
    /// # Errors
    ///
    /// A value that does not read or decode, said in words.
    fn decode_stored(&self, bytes: &[u8], limits: &Limits) -> Result<H, String>;
    /// Whether objects of this version have a Kubernetes protobuf form.
    fn protobuf(&self) -> bool;
    /// An object read from storage as it reads in this version, for an answer in it:
    /// kube-apiserver's storage decodes a value into the version asked for, so a conversion
    /// that fails there (a custom resource's webhook) makes the value unreadable, a corrupt
    /// object. As given by default (the answer's encoding converts).
    ///
    /// # Errors
    ///
    /// Why the object cannot be read in this version (the object is then as it was).
    fn read_as(&self, object: &mut H) -> Result<(), String> {
        let _ = object;
        Ok(())
    }
    /// A hub object as it reads once stored in this version, when storing changes it
    /// (kube's own kinds lose their empty lists and maps in protobuf); as given by default.
    fn as_stored(&self, hub: H) -> H {
        hub
    }
    /// What this version's schema finds of an object about to be written (the old object on
    /// an update), beside the kind's [`Strategy::validate`]: nothing by default.
    fn validate(&self, object: &H, old: Option<&H>) -> Validation {
        let _ = (object, old);
        Validation::default()
    }
    /// The zero value of the version's type as JSON: what Go's `encoding/json` writes for a
    /// new object of the kind (its non-pointer structs and unomitted fields at their zero
    /// values). The field manager compares a created object with it, as kube-apiserver's
    /// compares with `New()`, so what it already holds is not "added". `{}` by default, as
    /// for an unstructured custom resource.
    fn zero(&self) -> Value {
        Value::Object(serde_json::Map::new())
    }
    /// Whether lists and watches in this version may select on the field label `field`, or
    /// why not, in the words of the kind's `ConvertFieldLabel`: by default apimachinery's
    /// `DefaultMetaV1FieldSelectorConversion`, which knows `metadata.name` and
    /// `metadata.namespace`.
    ///
    /// # Errors
    ///
    /// A label the version does not select on, said as kube-apiserver says it (a 400).
    fn convert_field_label(&self, field: &str) -> Result<(), String> {
        default_field_label_conversion(field)
    }
    /// The value of a selectable field label other than the name and namespace, of `object`
    /// as it reads in this version; `None` when it has none.
    fn field_value(&self, object: &H, field: &str) -> Option<String> {
        let _ = (object, field);
        None
    }
}

/// apimachinery's `DefaultMetaV1FieldSelectorConversion`, the field label conversion of a
/// kind that registers none of its own: `metadata.name` and `metadata.namespace`.
///
/// # Errors
///
/// Any other label, in its words.
pub fn default_field_label_conversion(field: &str) -> Result<(), String> {
    match field {
        crate::selector::NAME | crate::selector::NAMESPACE => Ok(()),
        _ => Err(format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            apfkit_runtime::field::go_quote(field)
        )),
    }
}

impl<H> dyn VersionCodec<H> + '_ {
    /// [`VersionCodec::encode_into`] into a new buffer.
    ///
    /// # Errors
    ///
    /// As [`VersionCodec::encode_into`].
    pub fn encode_to(
        &self,
        hub: H,
        encoding: Encoding,
        warnings: &mut Vec<Warning>,
    ) -> Result<Vec<u8>, SchemeError> {
        let mut out = Vec::new();
        self.encode_into(hub, encoding, &mut out, warnings)?;
        Ok(out)
    }
}

/// A version of a kind of a generated [`Scheme`]: its [`Codec`], and the scheme's readers for
/// stored values.
pub struct SchemeVersion<H: 'static> {
    codec: &'static Codec<H>,
    gvk: GroupVersionKind,
    scheme: &'static Scheme<H>,
}

impl<H> std::fmt::Debug for SchemeVersion<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.codec.fmt(f)
    }
}

impl<H> SchemeVersion<H> {
    /// `codec`, one of `scheme`'s.
    pub fn new(codec: &'static Codec<H>, scheme: &'static Scheme<H>) -> Self {
        SchemeVersion {
            codec,
            gvk: codec.gvk(),
            scheme,
        }
    }
}

impl<H: Send + Sync + 'static> VersionCodec<H> for SchemeVersion<H> {
    fn gvk(&self) -> &GroupVersionKind {
        &self.gvk
    }
    fn zero(&self) -> Value {
        self.codec.zero()
    }
    fn decode(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<H, SchemeError> {
        self.codec.decode(object, unknown, warnings)
    }
    fn decode_as_is(&self, object: &Value) -> Result<H, SchemeError> {
        self.codec.decode_as_is(object)
    }
    fn encode_into(
        &self,
        hub: H,
        encoding: Encoding,
        out: &mut Vec<u8>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SchemeError> {
        self.codec.encode_into(hub, encoding, out, warnings)
    }
    fn encode(&self, hub: H, warnings: &mut Vec<Warning>) -> Result<Value, SchemeError> {
        self.codec.encode(hub, warnings)
    }
    fn decode_stored(&self, bytes: &[u8], limits: &Limits) -> Result<H, String> {
        // Objects kept in this version's protobuf decode straight into its type; other
        // versions (written before the storage version changed) and JSON go through the
        // scheme's readers.
        if let Some(read) = self.codec.decode_protobuf(bytes, limits) {
            return read.map_err(|e| e.to_string());
        }
        let mut decoded = None;
        self.scheme
            .read(bytes, limits, |input| {
                let (objects, _) = self.scheme.to_hub(input, UnknownFields::Ignore)?;
                decoded = objects.into_iter().next();
                Ok::<(), ReadFailure>(())
            })
            .map_err(|e| e.0)?;
        decoded.ok_or_else(|| "empty".to_owned())
    }
    fn protobuf(&self) -> bool {
        self.scheme.writes_protobuf()
    }
}

/// Why a stored value did not read.
struct ReadFailure(String);

impl From<apfkit_runtime::scheme::ReadError> for ReadFailure {
    fn from(error: apfkit_runtime::scheme::ReadError) -> Self {
        ReadFailure(error.error.to_string())
    }
}

impl From<SchemeError> for ReadFailure {
    fn from(error: SchemeError) -> Self {
        ReadFailure(error.to_string())
    }
}

/// A version of a kind, shared by the resources that serve it.
pub type SharedVersion<H> = std::sync::Arc<dyn VersionCodec<H>>;

/// A served resource: its configuration, its kind's codec in every served version (the
/// preferred version first) and its kind's [`Strategy`].
pub struct Served<H: 'static> {
    /// The configuration.
    pub config: ResourceConfig,
    /// The plural name used in URLs.
    pub plural: String,
    /// Codecs of every served version, in kube-apiserver's version priority order.
    pub versions: Vec<SharedVersion<H>>,
    /// The codec of the storage version.
    pub storage: SharedVersion<H>,
    /// The kind's own rules.
    strategy: std::sync::Arc<dyn Strategy<H>>,
    /// Which resource this is among every one made in this process: answers written for one
    /// of its versions are kept under it.
    serial: usize,
    /// The merge rules of each served version, for server-side apply, compiled on first use.
    field_schemas: std::sync::OnceLock<
        std::collections::BTreeMap<String, apfkit_fieldmanager::schema::Schema>,
    >,
}

impl<H> std::fmt::Debug for Served<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("config", &self.config)
            .field("plural", &self.plural)
            .field("versions", &self.versions)
            .field("storage", &self.storage)
            .finish_non_exhaustive()
    }
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

impl<H: Send + Sync + 'static> Served<H> {
    /// Resolves `config` against the codecs of `scheme`.
    ///
    /// # Errors
    ///
    /// A kind the scheme lacks, or a storage version it does not serve.
    pub fn new(scheme: &'static Scheme<H>, config: ResourceConfig) -> Result<Self, ResourceError> {
        let codecs: Vec<&'static Codec<H>> = scheme
            .codecs()
            .iter()
            .filter(|c| c.group == config.group && c.kind == config.kind)
            .collect();
        let Some(plural) = codecs.first().map(|c| c.plural.to_owned()) else {
            return Err(ResourceError::NoKind {
                group: config.group,
                kind: config.kind,
            });
        };
        let versions = codecs
            .into_iter()
            .map(|codec| std::sync::Arc::new(SchemeVersion::new(codec, scheme)) as SharedVersion<H>)
            .collect();
        Self::with_versions(config, plural, versions)
    }
}

impl<H> Served<H> {
    /// A resource named `plural` serving `versions` (of the configuration's group and kind,
    /// in any order), storing objects in the configuration's storage version.
    ///
    /// # Errors
    ///
    /// No version, or a storage version that is not among `versions`.
    pub fn with_versions(
        config: ResourceConfig,
        plural: String,
        mut versions: Vec<SharedVersion<H>>,
    ) -> Result<Self, ResourceError> {
        if versions.is_empty() {
            return Err(ResourceError::NoKind {
                group: config.group,
                kind: config.kind,
            });
        }
        versions.sort_by(|a, b| compare_kube_aware_version_strings(b.version(), a.version()));
        let Some(storage) = versions
            .iter()
            .find(|c| c.version() == config.storage_version)
            .cloned()
        else {
            let served: Vec<&str> = versions.iter().map(|c| c.version()).collect();
            return Err(ResourceError::NoStorageVersion {
                kind: config.kind,
                version: config.storage_version,
                served: served.join(", "),
            });
        };
        static SERIALS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        Ok(Served {
            config,
            plural,
            versions,
            storage,
            strategy: std::sync::Arc::new(GenericStrategy),
            serial: SERIALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            field_schemas: std::sync::OnceLock::new(),
        })
    }

    /// The resource with `strategy` as its kind's rules (the generic store's alone until
    /// then).
    #[must_use]
    pub fn with_strategy(mut self, strategy: impl Strategy<H> + 'static) -> Self {
        self.strategy = std::sync::Arc::new(strategy);
        self
    }

    /// The kind's rules.
    pub fn strategy(&self) -> &dyn Strategy<H> {
        &*self.strategy
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
                        .as_ref()
                        .and_then(|f| f(codec.gvk()))
                        .map_or_else(apfkit_fieldmanager::schema::Schema::deduced, |json| {
                            apfkit_fieldmanager::schema::Schema::compile(&json)
                        });
                    (codec.api_version(), schema)
                })
                .collect()
        })
    }

    /// The codec of `version`, if served.
    pub fn version(&self, version: &str) -> Option<&dyn VersionCodec<H>> {
        self.versions
            .iter()
            .find(|c| c.version() == version)
            .map(|c| &**c)
    }

    /// Which resource this is among every one made in this process.
    pub(crate) fn serial(&self) -> usize {
        self.serial
    }

    /// An identity of the codec of the version at `index` among every codec of every
    /// resource made in this process, to keep what it wrote.
    pub fn codec_id(&self, index: usize) -> usize {
        self.serial << 8 | index
    }

    /// Whether the resource's objects have a Kubernetes protobuf form.
    pub fn protobuf(&self) -> bool {
        self.storage.protobuf()
    }

    /// The resource in any version of its group: `<plural>.<group>` (the plural alone in the
    /// core group) as messages and `StatusDetails` name it.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.config.group.clone(), self.plural.clone())
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
