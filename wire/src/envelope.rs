//! Kubernetes' protobuf envelope: the 4 bytes `k8s\0`, then a `runtime.Unknown` message
//! naming the object's apiVersion and kind around its protobuf bytes. This is how
//! kube-apiserver stores objects in etcd and what `application/vnd.kubernetes.protobuf`
//! bodies carry.
//!
//! ```
//! use apfkit_wire::envelope;
//!
//! let kinds = apfkit_types::KINDS;
//! let object = serde_json::json!({
//!     "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
//!     "metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1",
//!     "groupPriorityMinimum": 17800, "versionPriority": 15},
//! });
//! let bytes = envelope::encode(kinds, &object).unwrap();
//! assert!(bytes.starts_with(apfkit_runtime::scheme::PROTOBUF_PREFIX));
//! let decoded = envelope::decode(kinds, &bytes, &Default::default()).unwrap();
//! assert_eq!(decoded.value["spec"]["groupPriorityMinimum"], 17800);
//! assert_eq!(decoded.value["status"], serde_json::json!({})); // a Go struct value
//! ```

use apfkit_runtime::scheme::{InputError, Limits, PROTOBUF_PREFIX};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::protobuf::{self, DecodeError, Decoded, Exceeded, Message};
use super::{KindEncodings, Kinds, WireError};

/// `runtime.TypeMeta` of k8s.io/apimachinery's `runtime/generated.proto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeMeta {
    /// `group/version`.
    #[prost(string, optional, tag = "1")]
    pub api_version: Option<String>,
    /// The kind.
    #[prost(string, optional, tag = "2")]
    pub kind: Option<String>,
}

/// `runtime.Unknown`: the envelope around an object's protobuf bytes.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Unknown {
    /// apiVersion and kind of the object.
    #[prost(message, optional, tag = "1")]
    pub type_meta: Option<TypeMeta>,
    /// The object's own protobuf message.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub raw: Option<Vec<u8>>,
    /// Empty: kube-apiserver does not compress stored objects.
    #[prost(string, optional, tag = "3")]
    pub content_encoding: Option<String>,
    /// Empty, or `application/vnd.kubernetes.protobuf`.
    #[prost(string, optional, tag = "4")]
    pub content_type: Option<String>,
}

/// Why an enveloped object could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// The bytes do not start with `k8s\0`.
    #[error("not Kubernetes protobuf: the value does not start with k8s\\0")]
    NoPrefix,
    /// The envelope is not a valid `runtime.Unknown`.
    #[error("protobuf envelope: {0}")]
    Protobuf(String),
    /// The envelope says the object is compressed or not protobuf.
    #[error(
        "protobuf envelope with content encoding {encoding:?} and type {content_type:?}: only \
         uncompressed protobuf is written by kube-apiserver"
    )]
    Content {
        /// `contentEncoding`.
        encoding: String,
        /// `contentType`.
        content_type: String,
    },
    /// The apiVersion and kind are not a kind with a protobuf codec here.
    #[error("{api_version} {kind} is not a kind apfkit can decode")]
    UnknownKind {
        /// The envelope's or object's apiVersion.
        api_version: String,
        /// Its kind.
        kind: String,
    },
    /// The object's bytes do not decode as its kind.
    #[error("{api_version} {kind}: {source}")]
    Decode {
        /// apiVersion.
        api_version: String,
        /// Kind.
        kind: String,
        /// Where and why.
        source: DecodeError,
    },
    /// The object does not fit its kind's type.
    #[error("encoding {api_version} {kind}: {source}")]
    Encode {
        /// apiVersion.
        api_version: String,
        /// Kind.
        kind: String,
        /// Where and why.
        source: WireError,
    },
}

/// The envelope message (after the prefix), checked to hold uncompressed protobuf.
///
/// # Errors
///
/// An invalid message, or a content encoding or type kube-apiserver does not write.
pub fn unwrap(message: &[u8]) -> Result<Unknown, EnvelopeError> {
    let unknown = <Unknown as prost::Message>::decode(message)
        .map_err(|err| EnvelopeError::Protobuf(err.to_string()))?;
    let encoding = unknown.content_encoding.clone().unwrap_or_default();
    let content_type = unknown.content_type.clone().unwrap_or_default();
    if !encoding.is_empty()
        || !(content_type.is_empty() || content_type == "application/vnd.kubernetes.protobuf")
    {
        return Err(EnvelopeError::Content {
            encoding,
            content_type,
        });
    }
    Ok(unknown)
}

/// The prefix and envelope around `raw`, byte for byte as kube-apiserver writes them (every
/// field present, the last two empty).
pub fn wrap(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(raw.to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = PROTOBUF_PREFIX.to_vec();
    out.extend(prost::Message::encode_to_vec(&unknown));
    out
}

/// The encodings of the kind `api_version` and `kind` among `kinds`.
///
/// # Errors
///
/// [`EnvelopeError::UnknownKind`] when it is not one of them, or has no encodings.
pub fn encodings(
    kinds: &(impl Kinds + ?Sized),
    api_version: &str,
    kind: &str,
) -> Result<KindEncodings, EnvelopeError> {
    kinds
        .encodings(api_version, kind)
        .ok_or_else(|| EnvelopeError::UnknownKind {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
        })
}

/// An enveloped object (prefix included) as JSON, decoded with the encodings of the kind the
/// envelope names (one of `kinds`), with the fields its schema does not have; refused as soon
/// as it exceeds `limits`.
///
/// # Errors
///
/// A missing prefix, a broken envelope, a kind not served here, or bytes that do not decode
/// or exceed the limits (a [`EnvelopeError::Decode`] whose source says which).
pub fn decode(
    kinds: &(impl Kinds + ?Sized),
    value: &[u8],
    limits: &Limits,
) -> Result<Decoded<Value>, EnvelopeError> {
    let message = value
        .strip_prefix(PROTOBUF_PREFIX)
        .ok_or(EnvelopeError::NoPrefix)?;
    let unknown = unwrap(message)?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    let encodings = encodings(kinds, &api_version, &kind)?;
    decode_raw(encodings, unknown.raw.as_deref(), api_version, kind, limits)
}

/// The message an envelope holds (`raw`), decoded with its kind's `encodings`.
fn decode_raw(
    encodings: KindEncodings,
    raw: Option<&[u8]>,
    api_version: String,
    kind: String,
    limits: &Limits,
) -> Result<Decoded<Value>, EnvelopeError> {
    (encodings.decode_protobuf)(raw.unwrap_or_default(), limits).map_err(|source| {
        EnvelopeError::Decode {
            api_version,
            kind,
            source,
        }
    })
}

/// An object of one of `kinds` in the envelope (prefix included), as kube-apiserver writes it.
///
/// # Errors
///
/// A kind not served here, or an object that does not fit its kind's type.
pub fn encode(kinds: &(impl Kinds + ?Sized), object: &Value) -> Result<Vec<u8>, EnvelopeError> {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let raw = (encodings(kinds, api_version, kind)?.encode_protobuf)(object.clone()).map_err(
        |source| EnvelopeError::Encode {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            source,
        },
    )?;
    Ok(wrap(api_version, kind, &raw))
}

/// An enveloped object (prefix included) of one of `kinds` as JSON, with the paths of the
/// fields its type lacks, read as [`decode`] reads it; `None` when the bytes are not
/// enveloped or name a kind that is not one of `kinds` (another codec's to read).
pub fn decode_among(
    kinds: &(impl Kinds + ?Sized),
    bytes: &[u8],
    limits: &Limits,
) -> Option<Result<(Value, Vec<String>), InputError>> {
    let message = bytes.strip_prefix(PROTOBUF_PREFIX)?;
    let unknown = unwrap(message).ok()?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (type_meta.api_version?, type_meta.kind?);
    let encodings = kinds.encodings(&api_version, &kind)?;
    Some(
        decode_raw(encodings, unknown.raw.as_deref(), api_version, kind, limits)
            .map(crate::with_paths)
            .map_err(input_error),
    )
}

/// An object of one of `kinds` in the envelope, as [`encode`] writes it; `None` when it is
/// another kind (another codec's to write).
pub fn encode_among(
    kinds: &(impl Kinds + ?Sized),
    object: &Value,
) -> Option<Result<Vec<u8>, String>> {
    let api_version = object.get("apiVersion")?.as_str()?;
    kinds.encodings(api_version, object.get("kind")?.as_str()?)?;
    Some(encode(kinds, object).map_err(|error| error.to_string()))
}

/// An enveloped object (prefix included) of the kind `T`, decoded straight into `T` (no JSON
/// value on the way), the fields `T` lacks dropped; refused as soon as it exceeds `limits`.
/// `None` when the bytes lack the prefix or the envelope names another apiVersion or kind.
///
/// ```
/// use apfkit_types::flowcontrol::v1::FlowSchema;
/// use apfkit_wire::envelope;
/// use apfkit_runtime::scheme::Encodings;
///
/// let schema: FlowSchema = serde_json::from_str(
///     r#"{"metadata": {"name": "probes"}, "spec": {"matchingPrecedence": 2}}"#,
/// ).unwrap();
/// let bytes = schema.to_protobuf().unwrap().unwrap();
/// let read: FlowSchema = envelope::decode_typed(&bytes, &Default::default()).unwrap().unwrap();
/// assert_eq!((read.metadata, read.spec), (schema.metadata, schema.spec));
/// // Another kind's envelope is not for FlowSchema to read.
/// let other = envelope::wrap("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", &[]);
/// assert!(envelope::decode_typed::<FlowSchema>(&other, &Default::default()).is_none());
/// ```
pub fn decode_typed<T: Message + k8s_openapi::Resource>(
    bytes: &[u8],
    limits: &Limits,
) -> Option<Result<T, InputError>> {
    let message = bytes.strip_prefix(PROTOBUF_PREFIX)?;
    let unknown = match unwrap(message) {
        Ok(unknown) => unknown,
        Err(error) => return Some(Err(input_error(error))),
    };
    let type_meta = unknown.type_meta.unwrap_or_default();
    if type_meta.api_version.as_deref() != Some(T::API_VERSION)
        || type_meta.kind.as_deref() != Some(T::KIND)
    {
        return None;
    }
    let raw = unknown.raw.unwrap_or_default();
    Some(
        protobuf::decode_within::<T>(&raw, limits)
            .map(|decoded| decoded.value)
            .map_err(|source| {
                input_error(EnvelopeError::Decode {
                    api_version: T::API_VERSION.to_owned(),
                    kind: T::KIND.to_owned(),
                    source,
                })
            }),
    )
}

/// The kind and metadata of an enveloped object, read without the rest of it (every
/// Kubernetes kind keeps its `ObjectMeta` in field 1, as `generated.proto` numbers it); `None`
/// when `bytes` do not start with the protobuf prefix.
///
/// ```
/// use apfkit_wire::envelope;
///
/// let object = serde_json::json!({
///     "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
///     "metadata": {"name": "v1.apps", "labels": {"a": "b"}},
///     "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800,
///     "versionPriority": 15},
/// });
/// let bytes = envelope::encode(apfkit_types::KINDS, &object).unwrap();
/// let (kind, metadata) = envelope::metadata(&bytes, &Default::default()).unwrap().unwrap();
/// assert_eq!(kind, "APIService");
/// assert_eq!(metadata.name.as_deref(), Some("v1.apps"));
/// assert_eq!(metadata.labels.unwrap()["a"], "b");
/// ```
///
/// # Errors
///
/// A broken envelope or metadata, or more nodes than `limits` allow.
pub fn metadata(bytes: &[u8], limits: &Limits) -> Option<Result<(String, ObjectMeta), InputError>> {
    let message = bytes.strip_prefix(PROTOBUF_PREFIX)?;
    let unknown = match unwrap(message) {
        Ok(unknown) => unknown,
        Err(error) => return Some(Err(input_error(error))),
    };
    let type_meta = unknown.type_meta.unwrap_or_default();
    let raw = unknown.raw.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    Some(
        match protobuf::decode_within::<MetadataOnly>(&raw, limits) {
            Ok(decoded) => Ok((kind, decoded.value.0)),
            Err(source) => Err(input_error(EnvelopeError::Decode {
                api_version: type_meta.api_version.unwrap_or_default(),
                kind,
                source,
            })),
        },
    )
}

/// An object's field 1, its metadata; every other field skipped.
#[derive(Default)]
struct MetadataOnly(ObjectMeta);

impl Message for MetadataOnly {
    fn encode_fields(&self, buf: &mut Vec<u8>) -> Result<(), protobuf::EncodeError> {
        protobuf::put_message(buf, 1, &self.0)
    }

    fn fields_len(&self) -> usize {
        protobuf::message_len(1, &self.0)
    }

    fn merge_field(
        &mut self,
        number: u32,
        wire: protobuf::WireType,
        buf: &mut &[u8],
        decoder: &mut protobuf::Decoder,
    ) -> Result<(), DecodeError> {
        if number == 1 {
            decoder.enter("metadata");
            let read = protobuf::get_message(wire, buf, decoder, &mut self.0);
            decoder.leave();
            read
        } else {
            decoder.unknown(number, wire, buf)
        }
    }
}

/// A reader's error for an envelope that could not be read: the depth and node limits as
/// such, anything else as broken protobuf.
pub fn input_error(error: EnvelopeError) -> InputError {
    match error {
        EnvelopeError::Decode {
            source:
                DecodeError {
                    exceeded: Some(exceeded),
                    ..
                },
            ..
        } => match exceeded {
            Exceeded::Depth(limit) => InputError::TooDeep { limit },
            Exceeded::Nodes(limit) => InputError::TooManyNodes { limit },
        },
        other => InputError::Protobuf(other.to_string()),
    }
}
