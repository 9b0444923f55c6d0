//! The storage envelope: what a value under `/registry/...` holds.

use serde::Deserialize;

use apfkit_runtime::scheme::{PROTOBUF_PREFIX, StorageEncoding};
pub use apfkit_wire::envelope::{EnvelopeError, TypeMeta, Unknown, unwrap, wrap};

/// The first bytes of a value encrypted at rest by kube-apiserver.
pub const ENCRYPTED_PREFIX: &[u8] = b"k8s:enc:";

/// How a value is stored: in one of kube-apiserver's encodings, or encrypted at rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredAs {
    /// Protobuf in Kubernetes' envelope, or JSON.
    Encoded(StorageEncoding),
    /// Encrypted at rest; `provider` is the transformer prefix after `k8s:enc:`
    /// (`aescbc:v1:key1`, `kms:v2:vault`).
    Encrypted {
        /// Which transformer and key wrote it.
        provider: String,
    },
}

impl StoredAs {
    /// `protobuf`, `json` or `encrypted`.
    pub fn name(&self) -> &'static str {
        match self {
            StoredAs::Encoded(encoding) => encoding.name(),
            StoredAs::Encrypted { .. } => "encrypted",
        }
    }
}

/// What a stored value says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// How it is stored.
    pub stored_as: StoredAs,
    /// Its apiVersion (unknown for encrypted values).
    pub api_version: Option<String>,
    /// Its kind (unknown for encrypted values).
    pub kind: Option<String>,
}

/// Why a value is not a stored object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    /// The protobuf envelope does not decode, or holds what kube-apiserver never writes.
    #[error(transparent)]
    Envelope(#[from] EnvelopeError),
    /// The JSON does not parse, or is not an object with string `apiVersion` and `kind`.
    #[error("JSON: {0}")]
    Json(String),
    /// Neither protobuf, JSON nor encrypted.
    #[error(
        "neither Kubernetes protobuf (k8s\\0), JSON nor encrypted (k8s:enc:); starts with {0:?}"
    )]
    Unrecognized(String),
}

/// Tells how `value` is stored and, unless encrypted, its apiVersion and kind. The protobuf
/// envelope is decoded (not the object inside it); JSON is parsed whole.
pub fn inspect(value: &[u8]) -> Result<Stored, ValueError> {
    if let Some(rest) = value.strip_prefix(ENCRYPTED_PREFIX) {
        return Ok(Stored {
            stored_as: StoredAs::Encrypted {
                provider: provider(rest),
            },
            api_version: None,
            kind: None,
        });
    }
    if let Some(message) = value.strip_prefix(PROTOBUF_PREFIX) {
        let unknown = unwrap(message)?;
        let type_meta = unknown.type_meta.unwrap_or_default();
        return Ok(Stored {
            stored_as: StoredAs::Encoded(StorageEncoding::Protobuf),
            api_version: type_meta.api_version,
            kind: type_meta.kind,
        });
    }
    if value.trim_ascii_start().starts_with(b"{") {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Head {
            api_version: String,
            kind: String,
        }
        let head: Head =
            serde_json::from_slice(value).map_err(|err| ValueError::Json(err.to_string()))?;
        return Ok(Stored {
            stored_as: StoredAs::Encoded(StorageEncoding::Json),
            api_version: Some(head.api_version),
            kind: Some(head.kind),
        });
    }
    let start = String::from_utf8_lossy(&value[..value.len().min(16)]).into_owned();
    Err(ValueError::Unrecognized(start))
}

/// The transformer prefix of an encrypted value: up to three `:`-terminated parts
/// (`aescbc:v1:key1`), printable ASCII only.
fn provider(rest: &[u8]) -> String {
    let mut parts = Vec::new();
    let mut current = String::new();
    for &byte in rest.iter().take(256) {
        match byte {
            b':' => {
                parts.push(std::mem::take(&mut current));
                if parts.len() == 3 {
                    break;
                }
            }
            0x21..=0x7e => current.push(char::from(byte)),
            _ => break,
        }
    }
    parts.join(":")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_envelope_round_trips_and_matches_gos_bytes() {
        let stored = wrap("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", b"\x0a\x00");
        // k8s\0, field 1 (typeMeta, 45 bytes: apiVersion 31 + kind 10), field 2 (raw, 2
        // bytes), fields 3 and 4 empty: the layout Go's protobuf serializer writes.
        let mut expected = b"k8s\0\x0a\x2d\x0a\x1fflowcontrol.apiserver.k8s.io/v1\x12\x0aFlowSchema\x12\x02\x0a\x00\x1a\x00\x22\x00".to_vec();
        assert_eq!(stored, expected);
        let seen = inspect(&stored).unwrap();
        assert_eq!(seen.stored_as, StoredAs::Encoded(StorageEncoding::Protobuf));
        assert_eq!(
            seen.api_version.as_deref(),
            Some("flowcontrol.apiserver.k8s.io/v1")
        );
        assert_eq!(seen.kind.as_deref(), Some("FlowSchema"));
        expected.truncate(4);
        assert_eq!(
            inspect(&expected).unwrap().kind,
            None,
            "an empty envelope has no type"
        );
    }

    #[test]
    fn json_and_encrypted_values_are_told_apart() {
        let json = br#"{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1","metadata":{"name":"v1.apps"}}"#;
        let seen = inspect(json).unwrap();
        assert_eq!(
            (seen.stored_as.name(), seen.api_version.as_deref()),
            ("json", Some("apiregistration.k8s.io/v1"))
        );
        let encrypted = b"k8s:enc:aescbc:v1:key1:\x8f\x00\x13secret";
        assert_eq!(
            inspect(encrypted).unwrap().stored_as,
            StoredAs::Encrypted {
                provider: "aescbc:v1:key1".to_owned()
            }
        );
    }

    #[test]
    fn broken_values_are_errors_that_say_what_they_are() {
        let good = wrap("v1", "K", b"xyz");
        let whole = unwrap(&good[4..]).unwrap();
        // typeMeta is field 1, 2 + 7 bytes long: a cut inside it breaks the message.
        for end in 5..4 + 2 + 7 {
            assert!(
                matches!(
                    inspect(&good[..end]),
                    Err(ValueError::Envelope(EnvelopeError::Protobuf(_)))
                ),
                "prefix {end}"
            );
        }
        // A cut between fields is a valid, shorter message; any other cut is an error.
        for end in 4 + 2 + 7..good.len() {
            match unwrap(&good[4..end]) {
                Ok(shorter) => assert_ne!(shorter, whole, "prefix {end}"),
                Err(EnvelopeError::Protobuf(_)) => {}
                Err(other) => panic!("prefix {end}: {other}"),
            }
        }
        let gzip = {
            let mut unknown = <Unknown as prost::Message>::decode(&good[4..]).unwrap();
            unknown.content_encoding = Some("gzip".to_owned());
            let mut out = PROTOBUF_PREFIX.to_vec();
            out.extend(prost::Message::encode_to_vec(&unknown));
            out
        };
        assert!(matches!(
            inspect(&gzip),
            Err(ValueError::Envelope(EnvelopeError::Content { .. }))
        ));
        assert!(
            matches!(inspect(br#"{"kind":"X"}"#), Err(ValueError::Json(m)) if m.contains("apiVersion"))
        );
        assert!(
            matches!(inspect(br#"{"apiVersion":"v1","apiVersion":"v1","kind":"X"}"#), Err(ValueError::Json(m)) if m.contains("duplicate"))
        );
        assert!(matches!(
            inspect(b"\x00\x01\x02"),
            Err(ValueError::Unrecognized(_))
        ));
        assert!(matches!(inspect(b""), Err(ValueError::Unrecognized(_))));
        let deep = format!(
            "{}{}",
            "{\"a\":".repeat(1000),
            "1".to_owned() + &"}".repeat(1000)
        );
        assert!(matches!(inspect(deep.as_bytes()), Err(ValueError::Json(_))));
    }

    proptest! {
        #[test]
        fn any_bytes_are_inspected_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = inspect(&bytes);
            let mut envelope = PROTOBUF_PREFIX.to_vec();
            envelope.extend(&bytes);
            let _ = inspect(&envelope);
        }

        #[test]
        fn wrapped_objects_come_back(api_version in "[a-z./0-9]{0,40}", kind in "[A-Za-z]{0,20}", raw in proptest::collection::vec(any::<u8>(), 0..64)) {
            let stored = wrap(&api_version, &kind, &raw);
            let unknown = unwrap(&stored[4..]).unwrap();
            prop_assert_eq!(unknown.raw.unwrap(), raw);
            let type_meta = unknown.type_meta.unwrap();
            prop_assert_eq!(type_meta.api_version.unwrap(), api_version);
            prop_assert_eq!(type_meta.kind.unwrap(), kind);
        }
    }
}
