//! A version of a kind the server holds as JSON ([`CustomObject`]) rather than as a typed
//! object of its scheme: the CustomResourceDefinition, and kinds a server adds from types of
//! its own (RBAC's roles and bindings in `apfkit-rbac`). How an object of the version is
//! read (defaults, the fields it keeps, unknown fields reported) is the version's
//! [`Normalize`] function; it is written as JSON or YAML, stored as JSON.

use apfkit_apiserver::store::VersionCodec;
use apfkit_runtime::scheme::{Encoding, Limits, SchemeError, UnknownFields, Warning};
use serde_json::Value;

use crate::object::{CustomObject, ServedObject, not_this_kind};

/// How a request's object of a [`JsonVersion`] is read: given the object, it answers the
/// object to hold (defaulted, fields the version does not have dropped) and reports the
/// dropped fields as `unknown` says.
pub type Normalize = fn(Value, UnknownFields, &mut Vec<Warning>) -> Result<Value, SchemeError>;

/// How an object of a [`JsonVersion`] is written in Kubernetes protobuf, in its envelope.
pub type WriteProtobuf = fn(&Value) -> Result<Vec<u8>, String>;

/// One version of a kind held as JSON.
#[derive(Debug, Clone, Copy)]
pub struct JsonVersion {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    normalize: Normalize,
    protobuf: Option<WriteProtobuf>,
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
            group,
            version,
            kind,
            plural,
            normalize,
            protobuf: None,
        }
    }

    /// The version with a protobuf form, written by `write`: answers in protobuf when a
    /// client asks, and request bodies in protobuf taken (the server's wire formats read
    /// them).
    #[must_use]
    pub const fn with_protobuf(mut self, write: WriteProtobuf) -> Self {
        self.protobuf = Some(write);
        self
    }
}

impl<H: Send + Sync + 'static> VersionCodec<ServedObject<H>> for JsonVersion {
    fn group(&self) -> &str {
        self.group
    }
    fn version(&self) -> &str {
        self.version
    }
    fn kind(&self) -> &str {
        self.kind
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
            (Encoding::Protobuf, Some(write)) => {
                let bytes = write(&value).map_err(|message| {
                    SchemeError::new(apfkit_runtime::scheme::ErrorKind::Encoding, "", message)
                })?;
                out.extend_from_slice(&bytes);
                Ok(())
            }
            _ => crate::custom::write(&value, encoding, out, self.kind),
        }
    }
    fn encode(
        &self,
        hub: ServedObject<H>,
        _warnings: &mut Vec<Warning>,
    ) -> Result<Value, SchemeError> {
        match hub {
            ServedObject::Custom(object) if object.kind == self.kind => Ok(object.to_value()),
            _ => Err(not_this_kind(self.kind)),
        }
    }
    fn decode_stored(&self, bytes: &[u8], limits: &Limits) -> Result<ServedObject<H>, String> {
        let stored = crate::object::read_stored(bytes, limits)?;
        if stored.kind != self.kind {
            return Err(format!("a {} where {} are kept", stored.kind, self.plural));
        }
        stored.into_object().map(ServedObject::custom)
    }
    fn protobuf(&self) -> bool {
        self.protobuf.is_some()
    }
}
