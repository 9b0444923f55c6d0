//! A version of a kind the server holds as JSON ([`CustomObject`]) rather than as a typed
//! object of its scheme: the CustomResourceDefinition, and kinds a server adds from types of
//! its own (RBAC's roles and bindings in `apfkit-rbac`). How an object of the version is
//! read (defaults, the fields it keeps, unknown fields reported) is the version's
//! [`Normalize`] function; it is written as JSON or YAML (and in protobuf when the version
//! has a protobuf form), and stored as its resource's storage encoding says: JSON, or the
//! protobuf form, as kube-apiserver keeps its own kinds.

use apfkit_apiserver::store::{VersionCodec, default_field_label_conversion};
use apfkit_runtime::identity::GroupVersionKind;
use apfkit_runtime::scheme::{
    Encoding, ErrorKind, Limits, PROTOBUF_PREFIX, SchemeError, UnknownFields, Warning,
};
use serde_json::{Map, Value};

use crate::object::{CustomObject, ServedObject, not_this_kind};

/// How a request's object of a [`JsonVersion`] is read: given the object, it answers the
/// object to hold (defaulted, fields the version does not have dropped) and reports the
/// dropped fields as `unknown` says.
pub type Normalize = fn(Value, UnknownFields, &mut Vec<Warning>) -> Result<Value, SchemeError>;

/// An object read as the type `T` reads it, as kube-apiserver reads its own kinds: decoded as
/// `T` (a value of the wrong type is a decoding error) and written back from it, so that
/// fields `T` does not have are dropped and reported as `unknown` says (a field given as
/// null or empty and written back as absent is no unknown field). A [`Normalize`] function
/// of a kind with a Rust type (k8s-openapi's) starts here.
///
/// # Errors
///
/// An object `T` does not read, or unknown fields when `unknown` is strict.
pub fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(
    object: Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Value, SchemeError> {
    let typed: T = serde_json::from_value(object.clone())
        .map_err(|error| SchemeError::new(ErrorKind::InvalidValue, "", error.to_string()))?;
    let kept = serde_json::to_value(typed)
        .map_err(|error| SchemeError::new(ErrorKind::Encoding, "", error.to_string()))?;
    let mut dropped = Vec::new();
    dropped_fields(&object, &kept, "", &mut dropped);
    unknown.apply(
        dropped
            .into_iter()
            .map(|path| Warning::UnknownField { path })
            .collect(),
        warnings,
    )?;
    Ok(kept)
}

/// The paths of fields set in `given` that `kept` lacks (`spec.foo`, `rules[0].bar`).
fn dropped_fields(given: &Value, kept: &Value, path: &str, out: &mut Vec<String>) {
    let child = |name: &str| {
        if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        }
    };
    match (given, kept) {
        (Value::Object(given), kept) => {
            let empty = Map::new();
            let kept = kept.as_object().unwrap_or(&empty);
            for (name, value) in given {
                match kept.get(name) {
                    Some(kept) => dropped_fields(value, kept, &child(name), out),
                    None if is_empty(value) => {}
                    None => out.push(child(name)),
                }
            }
        }
        (Value::Array(given), Value::Array(kept)) => {
            for (index, (value, kept)) in given.iter().zip(kept).enumerate() {
                dropped_fields(value, kept, &format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        Value::String(text) => text.is_empty(),
        _ => false,
    }
}

/// What `check` finds wrong with an object held as JSON (and, on an update, the stored
/// one), as the causes of kube-apiserver's 422: the `Strategy::validate` of a kind whose
/// versions are [`JsonVersion`]s. Objects of the scheme's own kinds have nothing to find.
pub fn json_causes<H>(
    object: &ServedObject<H>,
    old: Option<&ServedObject<H>>,
    check: impl Fn(&Value, Option<&Value>) -> Vec<apfkit_runtime::field::FieldError>,
) -> Vec<apfkit_apiserver::error::Cause> {
    let json = |object: &ServedObject<H>| match object {
        ServedObject::Custom(object) => Some(object.to_value()),
        ServedObject::Builtin(_) => None,
    };
    let Some(object) = json(object) else {
        return Vec::new();
    };
    let old = old.and_then(json);
    check(&object, old.as_ref())
        .iter()
        .map(apfkit_apiserver::error::Cause::from)
        .collect()
}

/// How an object of a [`JsonVersion`] is written in Kubernetes protobuf, in its envelope.
pub type WriteProtobuf = fn(&Value) -> Result<Vec<u8>, String>;

/// How an object of a [`JsonVersion`] is read from Kubernetes protobuf in its envelope
/// (`k8s\0` included), within the limits: the object as JSON, or why it does not read.
pub type ReadProtobuf = fn(&[u8], &Limits) -> Result<Value, String>;

/// A kind's reader of protobuf bodies (prefix included): the object as JSON with the paths of
/// the fields its message lacks, or `None` for another kind.
pub type ProtobufReader =
    fn(&[u8], &Limits) -> Option<Result<(Value, Vec<String>), apfkit_runtime::scheme::InputError>>;

/// A stored object in protobuf (prefix included) as JSON, read by `read` and shaped as
/// kube-apiserver's decoding leaves it ([`apfkit_apiserver::go_shape::as_stored`]); fields its
/// message lacks are dropped, as its protobuf decoding drops them. A [`ReadProtobuf`] of a
/// kind kept in protobuf is this with its reader.
///
/// # Errors
///
/// Bytes that are not one of `read`'s kinds (`not {what} in protobuf`), or not within
/// `limits`, in words.
pub fn read_stored_protobuf(
    read: ProtobufReader,
    bytes: &[u8],
    limits: &Limits,
    what: &str,
) -> Result<Value, String> {
    match read(bytes, limits) {
        Some(Ok((mut value, _))) => {
            apfkit_apiserver::go_shape::as_stored(&mut value);
            Ok(value)
        }
        Some(Err(error)) => Err(error.to_string()),
        None => Err(format!("not {what} in protobuf")),
    }
}

/// A version's protobuf form.
#[derive(Debug, Clone, Copy)]
struct Protobuf {
    write: WriteProtobuf,
    read: ReadProtobuf,
}

/// One version of a kind held as JSON.
#[derive(Debug, Clone)]
pub struct JsonVersion {
    gvk: GroupVersionKind,
    plural: &'static str,
    normalize: Normalize,
    protobuf: Option<Protobuf>,
    zero: fn() -> Value,
    field_labels: Option<&'static [&'static str]>,
    field_values: Option<FieldValues>,
    go_stored: bool,
}

/// The values of a kind's selectable field labels (its `ToSelectableFields`), for those not
/// read at their path: given the object as JSON and the label, its value (`None`: "").
pub type FieldValues = fn(&Value, &str) -> Option<String>;

/// The zero of a kind whose every field Go leaves out when empty.
fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

impl JsonVersion {
    /// `kind` (resource `plural`) in `group`/`version`, its request objects read by
    /// `normalize`.
    pub const fn new(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        plural: &'static str,
        normalize: Normalize,
    ) -> Self {
        JsonVersion {
            gvk: GroupVersionKind::from_static(group, version, kind),
            plural,
            normalize,
            protobuf: None,
            zero: empty_object,
            field_labels: None,
            field_values: None,
            go_stored: false,
        }
    }

    /// The version of one of kube's own kinds, which kube-apiserver keeps in protobuf: an
    /// object written is answered as it reads back from there, its empty lists and maps
    /// `null` or left out ([`apfkit_apiserver::go_shape::as_stored`]).
    #[must_use]
    pub const fn stored_as_kube_stores_it(mut self) -> Self {
        self.go_stored = true;
        self
    }

    /// The version whose kind registers a field label conversion of its own (core/v1's
    /// `AddFieldLabelConversionsForService`, `…ForNamespace`): lists and watches select on
    /// these labels only, each read from the object at its path; another is refused as
    /// "field label not supported". Without it, apimachinery's default conversion.
    #[must_use]
    pub const fn with_field_labels(mut self, labels: &'static [&'static str]) -> Self {
        self.field_labels = Some(labels);
        self
    }

    /// The version whose field labels take their values from `values` (an Event's `source`,
    /// its `source.component` or else its `reportingComponent`), rather than from the
    /// object at the label's path.
    #[must_use]
    pub const fn with_field_values(mut self, values: FieldValues) -> Self {
        self.field_values = Some(values);
        self
    }

    /// The version whose new objects are `zero` (what Go's `encoding/json` writes for the
    /// kind's zero value: [`VersionCodec::zero`]); `{}` otherwise.
    #[must_use]
    pub const fn with_zero(mut self, zero: fn() -> Value) -> Self {
        self.zero = zero;
        self
    }

    /// The version with a protobuf form, written by `write` and read by `read`: answers in
    /// protobuf when a client asks, request bodies in protobuf taken (the server's wire
    /// formats read them), and stored objects in protobuf read (a resource whose
    /// `storage_encoding` is protobuf writes them so).
    #[must_use]
    pub const fn with_protobuf(mut self, write: WriteProtobuf, read: ReadProtobuf) -> Self {
        self.protobuf = Some(Protobuf { write, read });
        self
    }
}

impl<H: Send + Sync + 'static> VersionCodec<ServedObject<H>> for JsonVersion {
    fn gvk(&self) -> &GroupVersionKind {
        &self.gvk
    }
    fn zero(&self) -> Value {
        (self.zero)()
    }
    fn decode(
        &self,
        object: &Value,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<ServedObject<H>, SchemeError> {
        let object = (self.normalize)(object.clone(), unknown, warnings)?;
        CustomObject::from_value(object).map(ServedObject::custom)
    }
    fn decode_as_is(&self, object: &Value) -> Result<ServedObject<H>, SchemeError> {
        CustomObject::from_value(object.clone()).map(ServedObject::custom)
    }
    fn encode_into(
        &self,
        hub: ServedObject<H>,
        encoding: Encoding,
        out: &mut Vec<u8>,
        warnings: &mut Vec<Warning>,
    ) -> Result<(), SchemeError> {
        let value = self.encode(hub, warnings)?;
        match (encoding, self.protobuf) {
            (Encoding::Protobuf, Some(Protobuf { write, .. })) => {
                let bytes = write(&value).map_err(|message| {
                    SchemeError::new(apfkit_runtime::scheme::ErrorKind::Encoding, "", message)
                })?;
                out.extend_from_slice(&bytes);
                Ok(())
            }
            _ => crate::custom::write(&value, encoding, out, &self.gvk.kind),
        }
    }
    fn encode(
        &self,
        hub: ServedObject<H>,
        _warnings: &mut Vec<Warning>,
    ) -> Result<Value, SchemeError> {
        match hub {
            // The kind's versions are the same shape (StorageVersionMigration's v1 and
            // v1beta1): an object is this version's once it says so.
            ServedObject::Custom(object) if object.kind == self.gvk.kind => {
                let mut value = object.to_value();
                value["apiVersion"] = Value::from(self.gvk.api_version());
                Ok(value)
            }
            _ => Err(not_this_kind(&self.gvk.kind)),
        }
    }
    fn decode_stored(&self, bytes: &[u8], limits: &Limits) -> Result<ServedObject<H>, String> {
        let value = match self.protobuf {
            Some(Protobuf { read, .. }) if bytes.starts_with(PROTOBUF_PREFIX) => {
                read(bytes, limits)?
            }
            _ => crate::object::read_stored(bytes, limits)?.value,
        };
        let kind = value
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind != self.gvk.kind {
            return Err(format!("a {kind} where {} are kept", self.plural));
        }
        CustomObject::from_value(value)
            .map(ServedObject::custom)
            .map_err(|error| error.to_string())
    }
    fn protobuf(&self) -> bool {
        self.protobuf.is_some()
    }
    fn as_stored(&self, hub: ServedObject<H>) -> ServedObject<H> {
        match hub {
            ServedObject::Custom(object) if self.go_stored => {
                let mut value = object.to_value();
                apfkit_apiserver::go_shape::as_stored(&mut value);
                CustomObject::from_value(value)
                    .map_or_else(|_| ServedObject::Custom(object), ServedObject::custom)
            }
            hub => hub,
        }
    }
    fn convert_field_label(&self, field: &str) -> Result<(), String> {
        match self.field_labels {
            Some(labels) if labels.contains(&field) => Ok(()),
            Some(_) => Err(format!("field label not supported: {field}")),
            None => default_field_label_conversion(field),
        }
    }
    /// The label's value read at its path (`spec.type`, `status.phase`), as the kind's
    /// `SelectableFields` sets it; an absent one is `None`, compared as "".
    fn field_value(&self, object: &ServedObject<H>, field: &str) -> Option<String> {
        let ServedObject::Custom(object) = object else {
            return None;
        };
        let value = object.to_value();
        if let Some(values) = self.field_values {
            return values(&value, field);
        }
        match field
            .split('.')
            .try_fold(&value, |node, name| node.get(name))?
        {
            Value::String(text) => Some(text.clone()),
            _ => None,
        }
    }
}
