//! Writing one document: YAML, JSON in kube-apiserver's field order, or Kubernetes protobuf,
//! from a typed object or from a JSON value, the same bytes either way.

use apfkit_runtime::Kind;
use apfkit_runtime::scheme::Encodings;
use apfkit_types::wire::envelope;
use serde_json::Value;

use apfkit_runtime::scheme::{ErrorKind, SchemeError};

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

impl Encoding {
    /// Writes a document given as a JSON value. A served kind's object, typed list or `v1`
    /// `List` is written in Go's field order; a document of another kind as serde_json writes
    /// it (JSON and YAML only).
    ///
    /// # Errors
    ///
    /// A value that does not fit its kind, protobuf for a `v1` `List` or a kind not served.
    pub fn encode_value(self, value: &Value) -> Result<Vec<u8>, SchemeError> {
        let failed = |message: String| SchemeError::new(ErrorKind::Encoding, "", message);
        match self {
            Encoding::Yaml => serde_saphyr::to_string(value)
                .map(String::into_bytes)
                .map_err(|e| failed(e.to_string())),
            Encoding::Json | Encoding::JsonPretty => {
                let pretty = self == Encoding::JsonPretty;
                match apfkit_types::wire::to_go_json(value, pretty) {
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
                envelope::encode(value).map_err(|e| failed(e.to_string()))
            }
        }
    }

    /// Writes a typed object: the bytes [`Encoding::encode_value`] writes for the same object
    /// as a JSON value. `capacity` is the length expected, to allocate once.
    ///
    /// # Errors
    ///
    /// A value the encoding cannot hold (a time outside RFC 3339's years).
    pub fn encode<T>(self, object: &T, capacity: usize) -> Result<Vec<u8>, SchemeError>
    where
        T: Kind + Encodings,
    {
        let failed = |message: String| SchemeError::new(ErrorKind::Encoding, "", message);
        match self {
            // Sorted keys, as the YAML of a JSON value has them.
            Encoding::Yaml => {
                let value = serde_json::to_value(object).map_err(|e| failed(e.to_string()))?;
                Encoding::Yaml.encode_value(&value)
            }
            Encoding::Json | Encoding::JsonPretty => {
                let mut out = Vec::with_capacity(capacity);
                object
                    .write_json(&mut out, self == Encoding::JsonPretty)
                    .map_err(|e| failed(e.to_string()))?;
                Ok(out)
            }
            Encoding::Protobuf => match object.to_protobuf() {
                Some(written) => written.map_err(|source| {
                    failed(format!("encoding {} {}: {source}", T::API_VERSION, T::KIND))
                }),
                None => Err(failed(format!(
                    "{} {} has no protobuf form",
                    T::API_VERSION,
                    T::KIND
                ))),
            },
        }
    }
}
