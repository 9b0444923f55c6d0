//! The encodings kube-apiserver reads and writes, for generated types: protobuf (as
//! gogo-protobuf writes it, the bytes inside the storage envelope), JSON in the order of its Go
//! structs, and the `k8s\0` envelope around an object's protobuf.
//!
//! **Where to start**: `apfkit-codegen` writes, for every kind with an `x-apfkit-go` layout,
//! a [`protobuf::Message`] impl and a [`GoJson`] impl (JSON in Go's field order) on this
//! crate's runtime, and each kind's `KindInfo::wire` is its [`KindEncodings`]: a kind's
//! encodings on JSON values, for code that picks the kind at run time. A registry of such kinds
//! ([`Kinds`], implemented for a generated `KINDS` table) writes and reads any of its
//! documents ([`to_go_json`], [`envelope::encode`], [`envelope::decode`]); messages known
//! only as field tables (k8s-openapi's kinds) are read and written by [`shaped`].
//!
//! ```
//! use apfkit_types::flowcontrol::v1::FlowSchema;
//! use apfkit_wire::{go_json, protobuf};
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

#![forbid(unsafe_code)]

pub mod envelope;
pub mod gnostic;
pub mod go_json;
pub mod go_scanner;
pub mod go_yaml;
pub mod protobuf;
pub mod shaped;

// The codecs of k8s-openapi's metadata types, generated here because Rust's orphan rule keeps
// them out of the crates whose kinds embed them.
#[rustfmt::skip]
mod generated;

pub use go_json::{GoEmpty, GoJson, GoOrder};

use apfkit_runtime::kind::KindInfo;
use apfkit_runtime::scheme::{self as runtime_scheme, InputError};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A kind's encodings, on `serde_json::Value`s, for code that picks the kind at run time.
#[derive(Debug, Clone, Copy)]
pub struct KindEncodings {
    /// Protobuf bytes (`runtime.Unknown.raw`) to the object as JSON (its `apiVersion` and
    /// `kind` are the kind's), with the unknown fields met; refused past the limits, which
    /// hold while decoding and again on the object before it is built as JSON.
    pub decode_protobuf: fn(
        &[u8],
        &runtime_scheme::Limits,
    ) -> Result<protobuf::Decoded<Value>, protobuf::DecodeError>,
    /// An object to protobuf bytes.
    pub encode_protobuf: fn(Value) -> Result<Vec<u8>, WireError>,
    /// An object to JSON in Go's field order, compact or indented by two spaces.
    pub go_json: fn(Value, bool) -> Result<Vec<u8>, WireError>,
}

impl KindEncodings {
    /// The encodings of `T`.
    pub const fn of<T>() -> KindEncodings
    where
        T: protobuf::Message + GoJson + Serialize + DeserializeOwned,
    {
        KindEncodings {
            decode_protobuf: decode_protobuf::<T>,
            encode_protobuf: encode_protobuf::<T>,
            go_json: go_json::<T>,
        }
    }
}

/// An object that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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
    Json(String),
}

impl From<serde_json::Error> for WireError {
    fn from(error: serde_json::Error) -> Self {
        WireError::Json(error.to_string())
    }
}

/// The kinds whose encodings a program knows, looked up by `apiVersion` and kind (list kinds
/// included): a generated `KINDS` table is one.
pub trait Kinds: Sync {
    /// The encodings of the kind, if it is one of these and has them.
    fn encodings(&self, api_version: &str, kind: &str) -> Option<KindEncodings>;
}

impl Kinds for [KindInfo<KindEncodings>] {
    fn encodings(&self, api_version: &str, kind: &str) -> Option<KindEncodings> {
        self.iter()
            .find(|k| k.api_version == api_version && k.kind == kind)?
            .wire
    }
}

/// One enveloped object as a JSON value and the paths of the fields its type lacks, within the
/// reader's depth and node limits (held while it is decoded, so a small message of many empty
/// fields is refused before it grows): what a scheme's readers ask of protobuf.
///
/// # Errors
///
/// As [`envelope::decode`], in the readers' words.
pub fn read_protobuf(
    kinds: &(impl Kinds + ?Sized),
    bytes: &[u8],
    limits: &runtime_scheme::Limits,
) -> Result<(Value, Vec<String>), InputError> {
    envelope::decode(kinds, bytes, limits)
        .map(with_paths)
        .map_err(envelope::input_error)
}

/// A decoded object with the paths of the unknown fields it carried.
fn with_paths(decoded: protobuf::Decoded<Value>) -> (Value, Vec<String>) {
    let unknown = decoded.unknown.into_iter().map(|u| u.path).collect();
    (decoded.value, unknown)
}

/// A document as kube-apiserver writes it: JSON in Go's field order, compact or indented by two
/// spaces, without a trailing newline. The document is an object of one of `kinds`
/// (lists such as `FlowSchemaList` included) or a `v1` `List`, whose items are written each in
/// its own kind's order (an item of a kind not served here in sorted order, as it is).
///
/// `None` when the document is neither, so the caller writes it as it is.
///
/// # Errors
///
/// When the object does not fit its kind's type (the error names the field path).
pub fn to_go_json(
    kinds: &(impl Kinds + ?Sized),
    document: &Value,
    pretty: bool,
) -> Option<Result<Vec<u8>, WireError>> {
    let (api_version, kind) = (document.get("apiVersion")?, document.get("kind")?);
    if api_version == "v1" && kind == "List" {
        return Some(list_to_go_json(kinds, document, pretty));
    }
    let encodings = kinds.encodings(api_version.as_str()?, kind.as_str()?)?;
    Some((encodings.go_json)(document.clone(), pretty))
}

/// A `v1` `List` (Go's `metav1.List`): `kind`, `apiVersion`, `metadata` (a `ListMeta` value,
/// so always written) and `items` (raw objects, each in its own order).
fn list_to_go_json(
    kinds: &(impl Kinds + ?Sized),
    list: &Value,
    pretty: bool,
) -> Result<Vec<u8>, WireError> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
    let metadata: ListMeta = match list.get("metadata") {
        Some(metadata) => typed(metadata.clone()).map_err(|e| e.under("metadata"))?,
        None => ListMeta::default(),
    };
    let mut items = Vec::new();
    for (i, item) in list
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let bytes = match to_go_json(kinds, item, pretty) {
            Some(written) => written.map_err(|e| e.under(&format!("items[{i}]")))?,
            None => go_json::to_vec_plain(item, pretty)?,
        };
        items.push(bytes);
    }
    let metadata = go_json::to_vec::<ListMeta>(&metadata, pretty)?;
    let mut out = Vec::new();
    if !pretty {
        out.extend_from_slice(br#"{"kind":"List","apiVersion":"v1","metadata":"#);
        out.extend_from_slice(&metadata);
        out.extend_from_slice(br#","items":["#);
        out.extend_from_slice(&items.join(&b","[..]));
        out.extend_from_slice(b"]}");
        return Ok(out);
    }
    // Indented JSON has no line breaks inside strings, so nesting a written value is a matter
    // of indenting its lines after the first.
    let nest = |out: &mut Vec<u8>, value: &[u8], indent: &[u8]| {
        for (n, line) in value.split(|b| *b == b'\n').enumerate() {
            if n > 0 {
                out.push(b'\n');
                out.extend_from_slice(indent);
            }
            out.extend_from_slice(line);
        }
    };
    out.extend_from_slice(b"{\n  \"kind\": \"List\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": ");
    nest(&mut out, &metadata, b"  ");
    out.extend_from_slice(b",\n  \"items\": [");
    for (n, item) in items.iter().enumerate() {
        out.extend_from_slice(if n == 0 { b"\n    " } else { b",\n    " });
        nest(&mut out, item, b"    ");
    }
    out.extend_from_slice(if items.is_empty() {
        b"]\n}"
    } else {
        b"\n  ]\n}"
    });
    Ok(out)
}

impl WireError {
    /// The error with its field path under `parent`.
    fn under(self, parent: &str) -> WireError {
        match self {
            WireError::Shape { path, message } => WireError::Shape {
                path: if path.is_empty() || path == "." {
                    parent.to_owned()
                } else {
                    format!("{parent}.{path}")
                },
                message,
            },
            other => other,
        }
    }
}

fn typed<T: DeserializeOwned>(object: Value) -> Result<T, WireError> {
    serde_path_to_error::deserialize(object).map_err(|e| WireError::Shape {
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

fn decode_protobuf<T: protobuf::Message + Serialize>(
    bytes: &[u8],
    limits: &runtime_scheme::Limits,
) -> Result<protobuf::Decoded<Value>, protobuf::DecodeError> {
    let decoded = protobuf::decode_within::<T>(bytes, limits)?;
    // Measured before it is built: Go struct values the wire left out appear in the JSON.
    protobuf::measure(&decoded.value, limits).map_err(protobuf::Exceeded::error)?;
    let value = serde_json::to_value(&decoded.value).map_err(|e| protobuf::DecodeError {
        path: String::new(),
        message: e.to_string(),
        exceeded: None,
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

fn go_json<T: DeserializeOwned + GoJson>(
    object: Value,
    pretty: bool,
) -> Result<Vec<u8>, WireError> {
    let object: T = typed(object)?;
    Ok(go_json::to_vec::<T>(&object, pretty)?)
}
