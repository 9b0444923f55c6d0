//! Stored values to objects and back, as kube-apiserver's storage codec does.
//!
//! - Protobuf values (`k8s\0` + `runtime.Unknown`) decode with the kind's generated encodings
//!   (found by the envelope's apiVersion and kind in `apfkit_types::KINDS`); JSON values are
//!   parsed.
//! - `metadata.resourceVersion` is not stored: it is filled from the key's mod revision on
//!   read, and removed before writing, as kube-apiserver's etcd3 store does.
//! - Objects are written back in the encoding they were read in: protobuf in the envelope,
//!   or compact Go-order JSON with a final newline (Go's `json.Encoder`).

use apfkit_scheme::scheme::{InputError, Limits, SCHEME};
use apfkit_wire::envelope::{self as wire_envelope, EnvelopeError};
use apfkit_wire::protobuf::UnknownField;
use serde_json::Value;

use apfkit_runtime::scheme::{PROTOBUF_PREFIX, StorageEncoding};

use crate::envelope::{self, ENCRYPTED_PREFIX, ValueError};

/// A stored object, decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredObject {
    /// The object, with `metadata.resourceVersion` set from the mod revision.
    pub object: Value,
    /// How it was stored.
    pub encoding: StorageEncoding,
    /// Protobuf fields its schema does not have (skipped; JSON objects report theirs when
    /// converted).
    pub unknown: Vec<UnknownField>,
}

impl StoredObject {
    /// The object's `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.object["apiVersion"].as_str().unwrap_or_default()
    }

    /// The object's `kind`.
    pub fn kind(&self) -> &str {
        self.object["kind"].as_str().unwrap_or_default()
    }
}

/// Why a stored value cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    /// Encrypted at rest: only kube-apiserver holds the key.
    #[error("encrypted at rest ({provider}); left untouched")]
    Encrypted {
        /// The transformer prefix, such as `aescbc:v1:key1`.
        provider: String,
    },
    /// Not a Kubernetes envelope or JSON object.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A kind apfkit does not know, or an object that does not decode or encode as its kind.
    #[error(transparent)]
    Object(#[from] EnvelopeError),
    /// Over the limits on a stored value (bytes, nesting, nodes), or JSON that does not
    /// parse under them.
    #[error("{0}")]
    Limits(#[from] InputError),
    /// A custom resource stored as protobuf, which apiextensions-apiserver never writes.
    #[error(
        "{api_version} {kind} is stored as protobuf; custom resources are stored as JSON; left untouched"
    )]
    NotJson {
        /// Its apiVersion, as the envelope tells.
        api_version: String,
        /// Its kind.
        kind: String,
    },
}

/// Gives a decoded object its key's mod revision as `metadata.resourceVersion`, as the API
/// shows it.
fn set_resource_version(object: &mut Value, mod_revision: i64) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.insert(
            "resourceVersion".to_owned(),
            Value::String(mod_revision.to_string()),
        );
    }
}

/// A copy of an object to store: kube-apiserver never stores `metadata.resourceVersion`.
fn without_resource_version(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("resourceVersion");
    }
    object
}

/// Refuses a stored value over the size limit, or encrypted at rest (only kube-apiserver
/// holds the key), before anything is decoded.
fn readable(value: &[u8], limits: &Limits) -> Result<(), ObjectError> {
    if value.len() > limits.max_document_bytes {
        return Err(InputError::TooLarge {
            limit: limits.max_document_bytes,
            line: None,
        }
        .into());
    }
    if value.starts_with(ENCRYPTED_PREFIX) {
        let provider = match envelope::inspect(value)?.stored_as {
            envelope::StoredAs::Encrypted { provider } => provider,
            _ => String::new(),
        };
        return Err(ObjectError::Encrypted { provider });
    }
    Ok(())
}

/// Decodes a stored value whose key has `mod_revision`, within `limits` as a document read
/// from a file would be: its size first, then its nesting and nodes while it is decoded (a
/// 1 MB value of empty list items is refused before it becomes a 1 GB object).
///
/// # Errors
///
/// Encrypted values, values that are neither protobuf nor JSON, unknown kinds, objects that
/// do not decode, and values over the limits.
pub fn decode(
    value: &[u8],
    mod_revision: i64,
    limits: &Limits,
) -> Result<StoredObject, ObjectError> {
    readable(value, limits)?;
    let (mut object, encoding, unknown) = if value.starts_with(PROTOBUF_PREFIX) {
        let decoded = wire_envelope::decode(apfkit_types::KINDS, value, limits)?;
        (decoded.value, StorageEncoding::Protobuf, decoded.unknown)
    } else {
        let stored = envelope::inspect(value)?;
        // Scanned against the limits before a value is built.
        let object = SCHEME.parse_json(value, limits)?.to_document()?.value;
        let (api_version, kind) = (
            stored.api_version.unwrap_or_default(),
            stored.kind.unwrap_or_default(),
        );
        wire_envelope::encodings(apfkit_types::KINDS, &api_version, &kind)?;
        (object, StorageEncoding::Json, Vec::new())
    };
    set_resource_version(&mut object, mod_revision);
    Ok(StoredObject {
        object,
        encoding,
        unknown,
    })
}

/// Encodes an object for storage in `encoding`, without its `metadata.resourceVersion`.
///
/// # Errors
///
/// Unknown kinds and objects that do not fit their kind's type.
pub fn encode(object: &Value, encoding: StorageEncoding) -> Result<Vec<u8>, ObjectError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let encodings = wire_envelope::encodings(apfkit_types::KINDS, api_version, kind)?;
    let object = without_resource_version(object);
    let failed = |source| EnvelopeError::Encode {
        api_version: api_version.to_owned(),
        kind: kind.to_owned(),
        source,
    };
    match encoding {
        StorageEncoding::Protobuf => {
            let raw = (encodings.encode_protobuf)(object).map_err(failed)?;
            Ok(wire_envelope::wrap(api_version, kind, &raw))
        }
        StorageEncoding::Json => {
            let mut json = (encodings.go_json)(object, false).map_err(failed)?;
            json.push(b'\n');
            Ok(json)
        }
    }
}

/// Decodes a stored custom resource, read by `scheme` (a user's scheme, from
/// `apfkit-codegen`): JSON, as apiextensions-apiserver stores custom resources, within `limits`.
///
/// # Errors
///
/// Encrypted values, protobuf values, JSON that does not parse within the limits, and kinds
/// the scheme does not have.
pub fn decode_custom<H: 'static>(
    scheme: &apfkit_runtime::scheme::Scheme<H>,
    value: &[u8],
    mod_revision: i64,
    limits: &Limits,
) -> Result<StoredObject, ObjectError> {
    readable(value, limits)?;
    let stored = envelope::inspect(value)?;
    let (api_version, kind) = (
        stored.api_version.unwrap_or_default(),
        stored.kind.unwrap_or_default(),
    );
    if value.starts_with(PROTOBUF_PREFIX) {
        return Err(ObjectError::NotJson { api_version, kind });
    }
    let mut object = scheme.parse_json(value, limits)?.to_document()?.value;
    let known = scheme
        .codecs()
        .iter()
        .any(|c| c.api_version() == api_version && c.kind == kind);
    if !known {
        return Err(EnvelopeError::UnknownKind { api_version, kind }.into());
    }
    set_resource_version(&mut object, mod_revision);
    Ok(StoredObject {
        object,
        encoding: StorageEncoding::Json,
        unknown: Vec::new(),
    })
}

/// Encodes a custom resource as apiextensions-apiserver stores it: compact JSON with its
/// keys sorted (Go's `json.Marshal` of an unstructured object) and a final newline, without
/// `metadata.resourceVersion`.
pub fn encode_custom(object: &Value) -> Vec<u8> {
    let object = without_resource_version(object);
    let mut json = object.to_string().into_bytes();
    json.push(b'\n');
    json
}
