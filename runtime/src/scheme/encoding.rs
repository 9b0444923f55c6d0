//! Writing one document: YAML, JSON in kube-apiserver's field order, or Kubernetes protobuf,
//! from a typed object or from a JSON value, the same bytes either way.

use serde_json::Value;

use super::document::{InputError, Limits};
use super::encodings::{EncodingError, Encodings};
use super::report::{ErrorKind, SchemeError};
use k8s_openapi::Resource;

/// Writes a document as kube-apiserver does, compact or indented; `None` when the document is
/// not one of the API's.
pub type WriteJson = fn(&Value, bool) -> Option<Result<Vec<u8>, EncodingError>>;

/// Reads one enveloped protobuf object as a JSON value and the paths of the fields its type
/// lacks, within the depth and node limits.
pub type ReadProtobuf = fn(&[u8], &Limits) -> Result<(Value, Vec<String>), InputError>;

/// How an API writes and reads documents held as JSON values in its own encodings, for a
/// [`Scheme`](super::Scheme) built [`with_encodings`](super::Scheme::with_encodings). Typed objects
/// are written by their [`Encodings`]; these cover what the scheme holds only as values: a
/// list (typed or `v1 List`) and an object read from protobuf.
#[derive(Debug, Clone, Copy)]
pub struct ValueEncodings {
    /// A document as kube-apiserver writes it (JSON in its Go structs' field order), compact
    /// or indented by two spaces: an object or typed list of a served kind, or a `v1 List`.
    /// `None` for any other document, which is written as serde_json writes it.
    pub json: WriteJson,
    /// An object or typed list of a served kind as Kubernetes protobuf in its envelope.
    pub protobuf: fn(&Value) -> Result<Vec<u8>, EncodingError>,
    /// One enveloped protobuf object (`k8s\0` first) read as a JSON value, with the paths of
    /// the fields its type lacks, within the depth and node limits (held while decoding).
    pub read_protobuf: ReadProtobuf,
}

/// How a document is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// YAML, keys in sorted order, without a `---` marker.
    Yaml,
    /// JSON as kube-apiserver writes it: Go's field order, compact.
    Json,
    /// JSON in Go's field order, indented by two spaces (`kubectl get -o json`).
    JsonPretty,
    /// Kubernetes protobuf in the storage envelope (`k8s\0` + `runtime.Unknown`), as etcd holds
    /// it.
    Protobuf,
}

/// How kube-apiserver stores an object's value in etcd: in Kubernetes' protobuf envelope (its
/// built-in kinds, flowcontrol's among them) or as JSON (custom resources, APIServices).
///
/// ```
/// use apfkit_runtime::scheme::{Encoding, StorageEncoding};
///
/// assert_eq!(StorageEncoding::Protobuf.name(), "protobuf");
/// assert_eq!(Encoding::from(StorageEncoding::Json), Encoding::Json);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StorageEncoding {
    /// `k8s\0`, then a `runtime.Unknown` holding the object's protobuf.
    Protobuf,
    /// A JSON object, compact, as Go's `json.Encoder` writes it (with a final newline).
    Json,
}

impl StorageEncoding {
    /// `protobuf` or `json`.
    pub fn name(self) -> &'static str {
        match self {
            StorageEncoding::Protobuf => "protobuf",
            StorageEncoding::Json => "json",
        }
    }
}

impl From<StorageEncoding> for Encoding {
    fn from(stored: StorageEncoding) -> Encoding {
        match stored {
            StorageEncoding::Protobuf => Encoding::Protobuf,
            StorageEncoding::Json => Encoding::Json,
        }
    }
}

impl Encoding {
    /// Writes a document given as a JSON value. A served kind's object, typed list or `v1`
    /// `List` is written in Go's field order; a document of another kind as serde_json writes
    /// it (JSON and YAML only).
    ///
    /// # Errors
    ///
    /// A value that does not fit its kind, protobuf for a `v1` `List` or a kind not served.
    pub(super) fn encode_value(
        self,
        value: &Value,
        encodings: Option<&ValueEncodings>,
    ) -> Result<Vec<u8>, SchemeError> {
        let failed = |message: String| SchemeError::new(ErrorKind::Encoding, "", message);
        match self {
            Encoding::Yaml => serde_saphyr::to_string(value)
                .map(String::into_bytes)
                .map_err(|e| failed(e.to_string())),
            Encoding::Json | Encoding::JsonPretty => {
                let pretty = self == Encoding::JsonPretty;
                match encodings.and_then(|encodings| (encodings.json)(value, pretty)) {
                    Some(written) => written.map_err(|e| failed(e.to_string())),
                    // serde_json's writer, not Go's escaping: the document is not one
                    // kube-apiserver writes.
                    None if pretty => {
                        serde_json::to_vec_pretty(value).map_err(|e| failed(e.to_string()))
                    }
                    None => serde_json::to_vec(value).map_err(|e| failed(e.to_string())),
                }
            }
            Encoding::Protobuf => {
                let identity = |field: &str| value.get(field).and_then(Value::as_str);
                if identity("apiVersion") == Some("v1") && identity("kind") == Some("List") {
                    return Err(failed(
                        "a v1 List has no protobuf form here: write its items, or a typed list \
                         such as FlowSchemaList"
                            .to_owned(),
                    ));
                }
                match encodings {
                    Some(encodings) => {
                        (encodings.protobuf)(value).map_err(|e| failed(e.to_string()))
                    }
                    None => Err(failed("this scheme writes no protobuf".to_owned())),
                }
            }
        }
    }

    /// Writes a typed object: the bytes `encode_value` writes for the same object
    /// as a JSON value. `capacity` is the length expected, to allocate once.
    ///
    /// # Errors
    ///
    /// A value the encoding cannot hold (a time outside RFC 3339's years).
    pub fn encode<T>(self, object: &T, capacity: usize) -> Result<Vec<u8>, SchemeError>
    where
        T: Resource + Encodings,
    {
        let mut out = Vec::with_capacity(capacity);
        self.encode_into(object, &mut out)?;
        Ok(out)
    }

    /// [`Encoding::encode`], appending to `out`. On an error `out` may hold part of the
    /// object.
    ///
    /// # Errors
    ///
    /// As [`Encoding::encode`].
    pub fn encode_into<T>(self, object: &T, out: &mut Vec<u8>) -> Result<(), SchemeError>
    where
        T: Resource + Encodings,
    {
        let failed = |message: String| SchemeError::new(ErrorKind::Encoding, "", message);
        match self {
            // Sorted keys, as the YAML of a JSON value has them.
            Encoding::Yaml => {
                let value = serde_json::to_value(object).map_err(|e| failed(e.to_string()))?;
                out.extend(Encoding::Yaml.encode_value(&value, None)?);
            }
            Encoding::Json | Encoding::JsonPretty => object
                .write_json(out, self == Encoding::JsonPretty)
                .map_err(|e| failed(e.to_string()))?,
            Encoding::Protobuf => match object.to_protobuf() {
                Some(written) => out.extend(written.map_err(|source| {
                    failed(format!("encoding {} {}: {source}", T::API_VERSION, T::KIND))
                })?),
                None => {
                    return Err(failed(format!(
                        "{} {} has no protobuf form",
                        T::API_VERSION,
                        T::KIND
                    )));
                }
            },
        }
        Ok(())
    }
}
