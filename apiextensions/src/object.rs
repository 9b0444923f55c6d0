//! Objects of a server that serves custom resources beside its own kinds: [`CustomObject`]
//! (a custom resource, or a CustomResourceDefinition, held as JSON with typed metadata) and
//! [`ServedObject`], the server's hub object, which holds either.

use std::sync::Arc;

use apfkit_apiserver::store::{ResourceError, Served, SharedVersion, Validation, VersionCodec};
use apfkit_runtime::Object;
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::{
    Encoding, ErrorKind, Limits, Scheme, SchemeError, UnknownFields, Warning,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};

/// An object held as kube-apiserver holds custom resources (`unstructured.Unstructured`): its
/// `apiVersion` and `kind`, its metadata (typed, as the server reads and sets it), and every
/// other field as JSON, in the version it was decoded in.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomObject {
    /// `group/version`.
    pub api_version: String,
    /// The kind.
    pub kind: String,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// Every other top-level field (`spec`, `status`, ...).
    pub fields: Map<String, Value>,
}

impl CustomObject {
    /// The object of a JSON object with `apiVersion`, `kind` and, if any, `metadata`.
    ///
    /// # Errors
    ///
    /// Not an object, or metadata that is not an ObjectMeta, said with the field.
    pub fn from_value(value: Value) -> Result<Self, SchemeError> {
        let Value::Object(mut fields) = value else {
            return Err(SchemeError::new(
                ErrorKind::InvalidValue,
                "",
                "the object is not a JSON object",
            ));
        };
        let text = |fields: &mut Map<String, Value>, name: &str| match fields.remove(name) {
            Some(Value::String(text)) => text,
            _ => String::new(),
        };
        let api_version = text(&mut fields, "apiVersion");
        let kind = text(&mut fields, "kind");
        let metadata = match fields.remove("metadata") {
            None | Some(Value::Null) => ObjectMeta::default(),
            Some(metadata) => {
                let mut metadata: ObjectMeta =
                    serde_json::from_value(metadata).map_err(|error| {
                        SchemeError::new(ErrorKind::InvalidValue, "metadata", error.to_string())
                    })?;
                // Go's ObjectMeta leaves empty lists and maps out (`omitempty`): an object
                // given `finalizers: []` is stored and answered without them.
                drop_empty(&mut metadata.finalizers, Vec::is_empty);
                drop_empty(&mut metadata.owner_references, Vec::is_empty);
                drop_empty(&mut metadata.labels, std::collections::BTreeMap::is_empty);
                drop_empty(
                    &mut metadata.annotations,
                    std::collections::BTreeMap::is_empty,
                );
                metadata
            }
        };
        Ok(CustomObject {
            api_version,
            kind,
            metadata,
            fields,
        })
    }

    /// The object as JSON: keys in sorted order at every level, as Go writes an
    /// `Unstructured`.
    pub fn to_value(&self) -> Value {
        let mut object = self.fields.clone();
        object.insert("apiVersion".into(), self.api_version.clone().into());
        object.insert("kind".into(), self.kind.clone().into());
        object.insert(
            "metadata".into(),
            serde_json::to_value(&self.metadata).unwrap_or_else(|_| Value::Object(Map::new())),
        );
        Value::Object(object)
    }
}

/// The hub object of a server that serves custom resources beside the kinds of its scheme,
/// whose hub object is `H`.
#[derive(Debug, Clone, PartialEq)]
pub enum ServedObject<H> {
    /// An object of one of the scheme's kinds.
    Builtin(H),
    /// A custom resource, or a CustomResourceDefinition.
    Custom(Box<CustomObject>),
}

/// `None` for a field whose value is empty.
fn drop_empty<T>(field: &mut Option<T>, empty: fn(&T) -> bool) {
    if field.as_ref().is_some_and(empty) {
        *field = None;
    }
}

impl<H> ServedObject<H> {
    /// A custom resource (or CRD) held as the server holds it.
    pub fn custom(object: CustomObject) -> Self {
        ServedObject::Custom(Box::new(object))
    }
}

impl<H: Object> Object for ServedObject<H> {
    fn kind(&self) -> &str {
        match self {
            ServedObject::Builtin(object) => object.kind(),
            ServedObject::Custom(object) => &object.kind,
        }
    }

    fn metadata(&self) -> &ObjectMeta {
        match self {
            ServedObject::Builtin(object) => object.metadata(),
            ServedObject::Custom(object) => &object.metadata,
        }
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match self {
            ServedObject::Builtin(object) => object.metadata_mut(),
            ServedObject::Custom(object) => &mut object.metadata,
        }
    }
}

/// The scheme of a server that serves custom resources only: no kind of its own. Its hub
/// object is `ServedObject<NoKind>`, always [`ServedObject::Custom`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoKind {}

impl Object for NoKind {
    fn kind(&self) -> &str {
        match *self {}
    }
    fn metadata(&self) -> &ObjectMeta {
        match *self {}
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match *self {}
    }
}

/// A stored JSON value read within `limits`, with its `apiVersion` and `kind`.
///
/// # Errors
///
/// Bytes that are not one JSON value within the limits, in words.
pub(crate) fn read_stored(bytes: &[u8], limits: &Limits) -> Result<Stored, String> {
    let reader: Scheme<()> = Scheme::new(&[]);
    let read = reader
        .parse_json(bytes, limits)
        .map_err(|error| error.to_string())?;
    let document = read.to_document().map_err(|error| error.to_string())?;
    Ok(Stored {
        api_version: read.api_version.unwrap_or_default().into_owned(),
        kind: read.kind.unwrap_or_default().into_owned(),
        value: document.value,
    })
}

/// A stored value as read, before it becomes a [`CustomObject`].
pub(crate) struct Stored {
    /// Its `apiVersion`, empty when it has none.
    pub(crate) api_version: String,
    /// Its `kind`, empty when it has none.
    pub(crate) kind: String,
    /// The value.
    pub(crate) value: Value,
}

impl Stored {
    /// The value as a [`CustomObject`].
    ///
    /// # Errors
    ///
    /// Not an object, or metadata that is not an ObjectMeta, in words.
    pub(crate) fn into_object(self) -> Result<CustomObject, String> {
        CustomObject::from_value(self.value).map_err(|error| error.to_string())
    }
}

/// A version of one of the scheme's kinds, serving [`ServedObject::Builtin`] objects.
pub struct BuiltinVersion<H: 'static>(SharedVersion<H>);

impl<H> std::fmt::Debug for BuiltinVersion<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The error of a custom object handed to a built-in kind's codec, or the reverse.
pub(crate) fn not_this_kind(kind: &str) -> SchemeError {
    SchemeError::new(
        ErrorKind::UnsupportedKind,
        "",
        format!("the object is not a {kind}"),
    )
}

impl<H: Send + Sync + 'static> VersionCodec<ServedObject<H>> for BuiltinVersion<H> {
    fn gvk(&self) -> &GroupVersionKind {
        self.0.gvk()
    }
    fn zero(&self) -> Value {
        self.0.zero()
    }
    fn decode(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<ServedObject<H>, SchemeError> {
        self.0
            .decode(object, unknown, warnings)
            .map(ServedObject::Builtin)
    }
    fn decode_as_is(&self, object: &Value) -> Result<ServedObject<H>, SchemeError> {
        self.0.decode_as_is(object).map(ServedObject::Builtin)
    }
    fn encode_into(
        &self,
        hub: ServedObject<H>,
        encoding: Encoding,
        out: &mut Vec<u8>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SchemeError> {
        match hub {
            ServedObject::Builtin(object) => self.0.encode_into(object, encoding, out, warnings),
            ServedObject::Custom(_) => Err(not_this_kind(self.0.kind())),
        }
    }
    fn encode(
        &self,
        hub: ServedObject<H>,
        warnings: &mut Vec<Warning>,
    ) -> Result<Value, SchemeError> {
        match hub {
            ServedObject::Builtin(object) => self.0.encode(object, warnings),
            ServedObject::Custom(_) => Err(not_this_kind(self.0.kind())),
        }
    }
    fn decode_stored(&self, bytes: &[u8], limits: &Limits) -> Result<ServedObject<H>, String> {
        self.0
            .decode_stored(bytes, limits)
            .map(ServedObject::Builtin)
    }
    fn protobuf(&self) -> bool {
        self.0.protobuf()
    }
    fn validate(&self, object: &ServedObject<H>, old: Option<&ServedObject<H>>) -> Validation {
        match (object, old) {
            (ServedObject::Builtin(object), None) => self.0.validate(object, None),
            (ServedObject::Builtin(object), Some(ServedObject::Builtin(old))) => {
                self.0.validate(object, Some(old))
            }
            _ => Validation::default(),
        }
    }
}

/// A resource of the scheme served in a server of [`ServedObject`]s: the same resource, its
/// objects held as [`ServedObject::Builtin`].
///
/// # Errors
///
/// None in practice: the versions and storage version are those of a served resource.
pub fn builtin<H: Send + Sync + 'static>(
    served: Served<H>,
) -> Result<Served<ServedObject<H>>, ResourceError> {
    let versions = served
        .versions
        .into_iter()
        .map(|version| Arc::new(BuiltinVersion(version)) as SharedVersion<ServedObject<H>>)
        .collect();
    Served::with_versions(served.config, served.plural, versions)
}
