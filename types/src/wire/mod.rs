//! The encodings kube-apiserver reads and writes: protobuf (as gogo-protobuf writes it, the
//! bytes inside the storage envelope) and JSON in the order of its Go structs.
//!
//! Both are generated for every kind and version from the `x-apfkit-go` layout in the
//! project's schemas; [`crate::KindInfo::wire`] gives a kind's [`Codec`] at run time.
//!
//! ```
//! use apfkit_types::flowcontrol::v1::FlowSchema;
//! use apfkit_types::wire::{go_json, protobuf};
//!
//! let schema: FlowSchema = serde_json::from_str(r#"{
//!     "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
//!     "metadata": {"name": "probes"},
//!     "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 2}
//! }"#).unwrap();
//! let bytes = protobuf::encode(&schema).unwrap();
//! assert_eq!(protobuf::decode::<FlowSchema>(&bytes).unwrap().value.metadata.name.as_deref(), Some("probes"));
//! // Go's order: kind and apiVersion first, then metadata, spec and status (a Go struct value).
//! assert_eq!(
//!     String::from_utf8(go_json::to_vec::<FlowSchema>(&schema, false).unwrap()).unwrap(),
//!     r#"{"kind":"FlowSchema","apiVersion":"flowcontrol.apiserver.k8s.io/v1","metadata":{"name":"probes"},"spec":{"priorityLevelConfiguration":{"name":"exempt"},"matchingPrecedence":2},"status":{}}"#,
//! );
//! ```

pub mod go_json;
pub mod protobuf;

pub use go_json::{GoEmpty, GoOrder};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A kind's encodings, on `serde_json::Value`s, for code that picks the kind at run time.
#[derive(Debug, Clone, Copy)]
pub struct Codec {
    /// Protobuf bytes (`runtime.Unknown.raw`) to the object as JSON (its `apiVersion` and
    /// `kind` are the codec's), with the unknown fields met.
    pub decode_protobuf: fn(&[u8]) -> Result<protobuf::Decoded<Value>, protobuf::DecodeError>,
    /// An object to protobuf bytes.
    pub encode_protobuf: fn(Value) -> Result<Vec<u8>, WireError>,
    /// An object to JSON in Go's field order, compact or indented by two spaces.
    pub go_json: fn(Value, bool) -> Result<Vec<u8>, WireError>,
}

impl Codec {
    /// The codec of `T`.
    pub const fn of<T>() -> Codec
    where
        T: protobuf::Message + Serialize + DeserializeOwned,
        for<'a> GoOrder<'a, T>: Serialize,
    {
        Codec {
            decode_protobuf: decode_protobuf::<T>,
            encode_protobuf: encode_protobuf::<T>,
            go_json: go_json::<T>,
        }
    }
}

/// An object that cannot be encoded.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// It does not fit the kind's type.
    #[error("{path}: {message}")]
    Shape {
        /// Field path.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The protobuf encoder refused a value.
    #[error(transparent)]
    Encode(#[from] protobuf::EncodeError),
    /// The JSON writer failed.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

fn typed<T: DeserializeOwned>(object: Value) -> Result<T, WireError> {
    serde_path_to_error::deserialize(object).map_err(|e| WireError::Shape {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

fn decode_protobuf<T: protobuf::Message + Serialize>(
    bytes: &[u8],
) -> Result<protobuf::Decoded<Value>, protobuf::DecodeError> {
    let decoded = protobuf::decode::<T>(bytes)?;
    let value = serde_json::to_value(&decoded.value).map_err(|e| protobuf::DecodeError {
        path: String::new(),
        message: e.to_string(),
    })?;
    Ok(protobuf::Decoded {
        value,
        unknown: decoded.unknown,
    })
}

fn encode_protobuf<T: protobuf::Message + DeserializeOwned>(
    object: Value,
) -> Result<Vec<u8>, WireError> {
    Ok(protobuf::encode(&typed::<T>(object)?)?)
}

fn go_json<T: DeserializeOwned>(object: Value, pretty: bool) -> Result<Vec<u8>, WireError>
where
    for<'a> GoOrder<'a, T>: Serialize,
{
    let object: T = typed(object)?;
    Ok(go_json::to_vec::<T>(&object, pretty)?)
}
