//! A dynamic scheme over a generated kind registry: documents of any served version of an API
//! read, defaulted, converted through the hub and written, as kube-apiserver's codec does it.
//!
//! A [`Scheme`] lists one [`Codec`] per served kind of every version (the generator writes it:
//! `Codec::of::<T>()` for each). Documents come in through one reader, [`Scheme::read`], which
//! takes JSON, YAML and (with [`ValueEncodings`]) Kubernetes protobuf, holds every document to
//! [`Limits`] while reading, and hands each over as an [`Input`]: a served object with nothing
//! to report already decoded into its type, anything else as bytes or a built value. One entry
//! per operation takes any input: [`Scheme::convert`], [`Scheme::default`], [`Scheme::to_hub`];
//! their `_value` forms take a `serde_json::Value` a program built. Conversion decodes in the
//! document's version (reporting unknown and repeated fields as [`UnknownFields`] says),
//! defaults in that version, converts to the hub and on to the target, and reports what the
//! target cannot keep. A conversion webhook, which must not default, uses
//! [`Scheme::convert_object`].

mod codec;
pub mod diff;
mod document;
mod encoding;
mod encodings;
mod go_yaml;
mod guard;
mod json_input;
mod options;
mod protobuf_input;
mod read;
mod report;
#[cfg(test)]
mod test_kind;
mod yaml_input;

use std::io::Read;
use std::sync::OnceLock;

use crate::identity::split_api_version;
use serde_json::{Map, Value};

pub use codec::{Codec, decode_collecting};
pub use document::{Document, InputError, Limits, MAX_DEPTH_LIMIT, ReadError, depth};
pub use encoding::{Encoding, ReadProtobuf, StorageEncoding, ValueEncodings, WriteJson};
pub use encodings::{EncodingError, Encodings};
pub use go_yaml::go_yaml_error;
pub use json_input::JsonDocument;
pub use options::{Target, UnknownFields};
pub use protobuf_input::PROTOBUF_PREFIX;
pub use read::{Input, read_first_yaml};
pub use report::{ErrorKind, SchemeError, Warning, join};
pub use yaml_input::YamlDocument;

use codec::Typed;

/// Every served kind of every version of an API, and conversion between them through the hub
/// object `H` (the generated `HubObject` enum).
pub struct Scheme<H: 'static> {
    codecs: &'static [Codec<H>],
    encodings: Option<&'static ValueEncodings>,
    supported: OnceLock<String>,
}

impl<H> std::fmt::Debug for Scheme<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheme")
            .field("codecs", &self.codecs)
            .field("encodings", &self.encodings.is_some())
            .finish()
    }
}

/// A converted or defaulted document with what the caller should be told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The resulting document.
    pub object: Value,
    /// Unknown fields and lossy values, with field paths.
    pub warnings: Vec<Warning>,
}

/// A document written in an [`Encoding`], with what the caller should be told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The document's bytes.
    pub bytes: Vec<u8>,
    /// Repeated, unknown and lossy fields, with field paths.
    pub warnings: Vec<Warning>,
}

impl<H> Scheme<H> {
    /// A scheme over generated codecs, reading and writing JSON and YAML.
    pub const fn new(codecs: &'static [Codec<H>]) -> Self {
        Scheme {
            codecs,
            encodings: None,
            supported: OnceLock::new(),
        }
    }

    /// A scheme over generated codecs that also reads and writes documents held as values in
    /// the API's own formats (kube-apiserver's JSON of lists, Kubernetes protobuf).
    pub const fn with_encodings(
        codecs: &'static [Codec<H>],
        encodings: &'static ValueEncodings,
    ) -> Self {
        Scheme {
            codecs,
            encodings: Some(encodings),
            supported: OnceLock::new(),
        }
    }

    /// Whether the scheme writes Kubernetes protobuf (it was made with [`Scheme::with_encodings`]).
    pub fn writes_protobuf(&self) -> bool {
        self.encodings.is_some()
    }

    /// The API's own formats (protobuf, kube-apiserver's JSON of lists), if the scheme has them.
    pub fn encodings(&self) -> Option<&'static ValueEncodings> {
        self.encodings
    }

    /// Every codec, in the registry's order.
    pub fn codecs(&self) -> &'static [Codec<H>] {
        self.codecs
    }

    /// The codec serving `kind` in `api_version`.
    pub fn find(&self, api_version: &str, kind: &str) -> Option<&'static Codec<H>> {
        let (group, version) = split_api_version(api_version);
        // The kind first: it differs between most codecs, and often in length alone.
        self.codecs
            .iter()
            .find(|c| c.kind == kind && c.version == version && c.group == group)
    }

    /// What the scheme serves, for messages: every group with its versions (preferred first)
    /// and kinds, and the `v1 List` envelope:
    /// `example.com/{v1,v1beta1} Widget and WidgetList; v1 List of any of these`.
    pub fn supported(&self) -> &str {
        self.supported.get_or_init(|| codec::supported(self.codecs))
    }

    /// Checks that some served kind has `target`'s version (in `target`'s group, when it names
    /// one), so that a mistyped version is refused before any document is read.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownVersion`], naming what is served.
    pub fn check_target(&self, target: &Target) -> Result<(), SchemeError> {
        let served = self.codecs.iter().any(|c| {
            c.version == target.version && target.group.as_deref().is_none_or(|g| g == c.group)
        });
        if served {
            Ok(())
        } else {
            Err(SchemeError::new(
                ErrorKind::UnknownVersion,
                "",
                format!(
                    "no served API has version {target}; supported: {}",
                    self.supported()
                ),
            ))
        }
    }

    /// Whether documents of `kind` in `api_version` are something the scheme handles: a
    /// served kind, a typed list of one, or a `v1` `List` (whose items are checked when it is
    /// converted).
    pub fn serves(&self, api_version: &str, kind: &str) -> bool {
        !api_version.is_empty()
            && !kind.is_empty()
            && ((api_version == "v1" && kind == "List")
                || self.find(api_version, kind).is_some()
                || kind
                    .strip_suffix("List")
                    .is_some_and(|item| self.find(api_version, item).is_some()))
    }

    /// Whether an input is something the scheme handles, as [`Scheme::serves`] tells.
    pub fn is_served(&self, input: &Input<'_>) -> bool {
        match input {
            Input::Json(json) => match (json.api_version.as_deref(), json.kind.as_deref()) {
                (Some(api_version), Some(kind)) => self.serves(api_version, kind),
                _ => false,
            },
            // Only objects of served kinds are decoded while read.
            Input::Yaml(_) => true,
            Input::Value(document) => identity(&document.value)
                .is_ok_and(|(api_version, kind)| self.serves(api_version, kind)),
        }
    }

    /// The codec of `kind` (of `source`'s group) in `target`'s version.
    fn resolve_target(
        &self,
        source: &Codec<H>,
        target: &Target,
    ) -> Result<&'static Codec<H>, SchemeError> {
        codec::resolve_target(self.codecs, source, target)
    }

    /// The codec of an object of `api_version`, by its `kind`.
    fn codec_for(
        &self,
        api_version: &str,
        object: &Value,
    ) -> Result<&'static Codec<H>, SchemeError> {
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.find(api_version, kind).ok_or_else(|| {
            SchemeError::new(
                ErrorKind::UnsupportedKind,
                "",
                format!(
                    "unsupported apiVersion {api_version:?} and kind {kind:?}; supported: {}",
                    self.supported()
                ),
            )
        })
    }

    /// Decodes `object` (of `api_version`) and converts it to the hub, with its codec.
    fn decode_to_hub(
        &self,
        object: &Value,
        api_version: &str,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
    ) -> Result<(&'static Codec<H>, H), SchemeError> {
        let codec = self.codec_for(api_version, object)?;
        Ok((codec, codec.decode(object, unknown, warnings)?))
    }

    /// Writes a document given as a JSON value: a served kind's object, typed list or `v1`
    /// `List` as the scheme's [`ValueEncodings`] write it (kube-apiserver's JSON, protobuf), or
    /// else as serde_json writes it (JSON and YAML only).
    ///
    /// # Errors
    ///
    /// A value that does not fit its kind, or protobuf for a document without a protobuf form.
    pub fn encode_value(&self, value: &Value, encoding: Encoding) -> Result<Vec<u8>, SchemeError> {
        encoding.encode_value(value, self.encodings)
    }
}

/// Reading.
impl<H> Scheme<H> {
    /// Calls `each` with every document of `reader`, in order, holding one document at a time
    /// and every one within `limits`. Input that starts with Kubernetes' protobuf prefix
    /// `k8s\0` (or a length and the prefix: a stream) is protobuf, read with the scheme's
    /// [`ValueEncodings`]; input whose first non-blank character is `{` or `[` a sequence of JSON
    /// values; anything else YAML, whose empty and null documents are skipped. JSON and YAML
    /// objects of served kinds with nothing to report are decoded into their types as they
    /// are read. Stops at the first error, from the input or from `each`.
    ///
    /// # Errors
    ///
    /// The first [`ReadError`] (converted into `E`), or `each`'s error.
    pub fn read<E: From<ReadError>>(
        &self,
        reader: impl Read,
        limits: &Limits,
        each: impl FnMut(Input<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        read::read_each_in(self, reader, limits, true, each)
    }

    /// Like [`Scheme::read`], with every document built as a JSON value.
    ///
    /// # Errors
    ///
    /// As [`Scheme::read`].
    pub fn read_values<E: From<ReadError>>(
        &self,
        reader: impl Read,
        limits: &Limits,
        mut each: impl FnMut(Document) -> Result<(), E>,
    ) -> Result<(), E> {
        read::read_each_in(self, reader, limits, false, |input| {
            let index = input.index();
            each(input.into_document().map_err(|error| ReadError {
                document: index,
                error,
            })?)
        })
    }

    /// Every document of `bytes`, built as JSON values, with the default [`Limits`].
    ///
    /// # Errors
    ///
    /// The first document that does not read, or bytes that are not UTF-8 (for JSON and YAML).
    pub fn read_documents(&self, bytes: &[u8]) -> Result<Vec<Document>, InputError> {
        read::read_documents(self, bytes)
    }

    /// Reads the single JSON value `bytes` (blanks around it allowed) as [`Scheme::read`]
    /// would hand it over.
    ///
    /// ```
    /// # use apfkit_runtime::scheme::{Limits, Scheme};
    /// # let scheme: Scheme<()> = Scheme::new(&[]);
    /// let document = scheme.parse_json(br#"{"kind": "Other"}"#, &Limits::default()).unwrap();
    /// assert_eq!(document.kind.as_deref(), Some("Other"));
    /// ```
    ///
    /// # Errors
    ///
    /// Invalid JSON, trailing data, or a value over the limits.
    pub fn parse_json<'a>(
        &self,
        bytes: &'a [u8],
        limits: &Limits,
    ) -> Result<JsonDocument<'a>, InputError> {
        JsonDocument::parse(self, bytes, limits)
    }
}

/// Converting, defaulting and taking to the hub.
impl<H> Scheme<H> {
    /// Converts a document (an object, a typed list such as `FlowSchemaList`, or a `v1`
    /// `List`) to `target`, defaulting it in its own version first, and writes it as
    /// `encoding` says. An object the reader decoded into its type, or that decodes straight
    /// from its JSON bytes with nothing to report, is converted without a JSON value.
    ///
    /// # Errors
    ///
    /// A document that is not of a served kind, does not decode as its version's type, has
    /// fields its version lacks or repeated keys in `Strict` mode, or does not encode.
    pub fn convert(
        &self,
        input: Input<'_>,
        target: &Target,
        unknown: UnknownFields,
        encoding: Encoding,
    ) -> Result<Encoded, SchemeError> {
        match input {
            Input::Json(json) => {
                if let Some((codec, typed)) = self.typed_object(&json, unknown)
                    && let Some(hub) = codec.typed_to_hub(typed)
                {
                    return self.encode_converted(codec, hub, target, encoding, json.bytes.len());
                }
                self.through_value(built(&json)?, unknown, encoding, |value| {
                    self.convert_value(value, target, unknown)
                })
            }
            Input::Yaml(yaml) => {
                let (decoded, length) = yaml.into_decoded();
                let codec = decoded.codec::<H>()?;
                let hub = decoded.into_hub(codec)?;
                self.encode_converted(codec, hub, target, encoding, length)
            }
            Input::Value(document) => self.through_value(document, unknown, encoding, |value| {
                self.convert_value(value, target, unknown)
            }),
        }
    }

    /// Applies the defaults of a document's own version and writes it as `encoding` says; see
    /// [`Scheme::convert`].
    ///
    /// # Errors
    ///
    /// As [`Scheme::convert`].
    pub fn default(
        &self,
        input: Input<'_>,
        unknown: UnknownFields,
        encoding: Encoding,
    ) -> Result<Encoded, SchemeError> {
        match input {
            Input::Json(json) => {
                if let Some((codec, typed)) = self.typed_object(&json, unknown)
                    && let Some(bytes) = codec.default_typed(typed, encoding, json.bytes.len())
                {
                    return Ok(Encoded {
                        bytes: bytes?,
                        warnings: Vec::new(),
                    });
                }
                self.through_value(built(&json)?, unknown, encoding, |value| {
                    self.default_value(value, unknown)
                })
            }
            Input::Yaml(yaml) => {
                let (decoded, length) = yaml.into_decoded();
                let codec = decoded.codec::<H>()?;
                Ok(Encoded {
                    bytes: decoded.into_defaulted(codec, encoding, length)?,
                    warnings: Vec::new(),
                })
            }
            Input::Value(document) => self.through_value(document, unknown, encoding, |value| {
                self.default_value(value, unknown)
            }),
        }
    }

    /// Decodes and defaults every object of a document and returns their hub forms, in
    /// order, with what the caller should be told; see [`Scheme::convert`].
    ///
    /// # Errors
    ///
    /// As [`Scheme::convert`].
    pub fn to_hub(
        &self,
        input: Input<'_>,
        unknown: UnknownFields,
    ) -> Result<(Vec<H>, Vec<Warning>), SchemeError> {
        match input {
            Input::Json(json) => {
                if let Some((codec, typed)) = self.typed_object(&json, unknown)
                    && let Some(hub) = codec.typed_to_hub(typed)
                {
                    return Ok((vec![hub], Vec::new()));
                }
                self.document_to_hub(built(&json)?, unknown)
            }
            Input::Yaml(yaml) => {
                let (decoded, _) = yaml.into_decoded();
                let codec = decoded.codec::<H>()?;
                Ok((vec![decoded.into_hub(codec)?], Vec::new()))
            }
            Input::Value(document) => self.document_to_hub(document, unknown),
        }
    }

    /// [`Scheme::convert`] for a document a program holds as a JSON value, to a JSON value.
    ///
    /// # Errors
    ///
    /// As [`Scheme::convert`].
    pub fn convert_value(
        &self,
        document: &Value,
        target: &Target,
        unknown: UnknownFields,
    ) -> Result<Converted, SchemeError> {
        let mut warnings = Vec::new();
        let relabel = |api_version: &str, item_kind: &str| -> Result<String, SchemeError> {
            let codec = self.codec_for(api_version, &serde_json::json!({ "kind": item_kind }))?;
            Ok(self.resolve_target(codec, target)?.api_version())
        };
        let object = self.each_object(
            document,
            Some(&relabel),
            unknown,
            &mut warnings,
            &mut |object, gv, warnings| {
                let (codec, hub) = self.decode_to_hub(object, gv, unknown, warnings)?;
                let target_codec = self.resolve_target(codec, target)?;
                target_codec.encode(hub, warnings)
            },
        )?;
        Ok(Converted { object, warnings })
    }

    /// [`Scheme::default`] for a document a program holds as a JSON value, to a JSON value.
    ///
    /// # Errors
    ///
    /// As [`Scheme::convert`].
    pub fn default_value(
        &self,
        document: &Value,
        unknown: UnknownFields,
    ) -> Result<Converted, SchemeError> {
        let mut warnings = Vec::new();
        let object = self.each_object(
            document,
            None,
            unknown,
            &mut warnings,
            &mut |object, gv, warnings| {
                let codec = self.codec_for(gv, object)?;
                codec.default(object, unknown, warnings)
            },
        )?;
        Ok(Converted { object, warnings })
    }

    /// [`Scheme::to_hub`] for a document a program holds as a JSON value.
    ///
    /// # Errors
    ///
    /// As [`Scheme::convert`].
    pub fn to_hub_value(
        &self,
        document: &Value,
        unknown: UnknownFields,
    ) -> Result<(Vec<H>, Vec<Warning>), SchemeError> {
        let mut warnings = Vec::new();
        let mut objects = Vec::new();
        self.each_object(
            document,
            None,
            unknown,
            &mut warnings,
            &mut |object, gv, warnings| {
                let (_, hub) = self.decode_to_hub(object, gv, unknown, warnings)?;
                objects.push(hub);
                Ok(Value::Null)
            },
        )?;
        Ok((objects, warnings))
    }

    /// A hub object decoded by `codec`, converted to `target` and written as `encoding` says;
    /// `length` (of the input) sizes the output.
    fn encode_converted(
        &self,
        codec: &'static Codec<H>,
        hub: H,
        target: &Target,
        encoding: Encoding,
        length: usize,
    ) -> Result<Encoded, SchemeError> {
        let target_codec = self.resolve_target(codec, target)?;
        let mut warnings = Vec::new();
        let bytes = target_codec.encode_to(hub, encoding, length, &mut warnings)?;
        Ok(Encoded { bytes, warnings })
    }

    /// The value path of a document: what reading it found reported, then `handle`d and
    /// encoded.
    fn through_value(
        &self,
        document: Document,
        unknown: UnknownFields,
        encoding: Encoding,
        handle: impl FnOnce(&Value) -> Result<Converted, SchemeError>,
    ) -> Result<Encoded, SchemeError> {
        let mut warnings = document.reported_fields(unknown)?;
        let handled = handle(&document.value)?;
        warnings.extend(handled.warnings);
        let bytes = self.encode_value(&handled.object, encoding)?;
        Ok(Encoded { bytes, warnings })
    }

    /// The value path of `to_hub`: what reading the document found reported, then its hub
    /// objects.
    fn document_to_hub(
        &self,
        document: Document,
        unknown: UnknownFields,
    ) -> Result<(Vec<H>, Vec<Warning>), SchemeError> {
        let mut warnings = document.reported_fields(unknown)?;
        let (objects, more) = self.to_hub_value(&document.value, unknown)?;
        warnings.extend(more);
        Ok((objects, warnings))
    }

    /// The object of a JSON document in its version's type, with its codec, when nothing
    /// about it needs reporting: as the reader decoded it, or decoded now from an object (not
    /// a list) of a served kind without repeated keys, its fields the type lacks allowed only
    /// if `unknown` ignores them.
    fn typed_object(
        &self,
        document: &JsonDocument<'_>,
        unknown: UnknownFields,
    ) -> Option<(&'static Codec<H>, Typed)> {
        if let Some(decoded) = document.take_decoded() {
            let codec = decoded.codec::<H>().ok()?;
            return Some((codec, decoded.object));
        }
        if document.may_repeat_keys {
            return None;
        }
        let codec = self.find(document.api_version.as_deref()?, document.kind.as_deref()?)?;
        let guard = guard::Guard::checked(unknown == UnknownFields::Ignore);
        let text = std::str::from_utf8(document.bytes).ok()?;
        let (typed, end) = codec.decode_guarded(text, &guard)?;
        text[end..]
            .trim_ascii_start()
            .is_empty()
            .then_some((codec, typed))
    }
}

/// For a conversion webhook, which converts objects as they are: no defaulting, and an
/// object already in the requested version comes back unchanged.
impl<H> Scheme<H> {
    /// The codec of an object, by its `apiVersion` and `kind`.
    ///
    /// # Errors
    ///
    /// An object without a string `apiVersion` and `kind`, or of a kind not served.
    pub fn codec_of(&self, object: &Value) -> Result<&'static Codec<H>, SchemeError> {
        let (api_version, kind) = identity(object)?;
        self.find(api_version, kind).ok_or_else(|| {
            SchemeError::new(
                ErrorKind::UnsupportedKind,
                "",
                format!(
                    "no kind {kind:?} in apiVersion {api_version:?}; this scheme serves {}",
                    self.served()
                ),
            )
        })
    }

    /// `group/version Kind` of every codec, for messages.
    fn served(&self) -> String {
        let served: Vec<String> = self
            .codecs
            .iter()
            .map(|c| format!("{} {}", c.api_version(), c.kind))
            .collect();
        served.join(", ")
    }

    /// The codec of the hub object's kind in `api_version` (group and version both given, a
    /// bare version meaning the core group).
    fn codec_in(
        &self,
        kind: &Codec<H>,
        api_version: &str,
    ) -> Result<&'static Codec<H>, SchemeError> {
        let (group, version) = split_api_version(api_version);
        let target = Target {
            group: Some(group.to_owned()),
            version: version.to_owned(),
        };
        self.resolve_target(kind, &target)
    }

    /// Decodes an object of any served version, as it is, and converts it to the hub.
    ///
    /// # Errors
    ///
    /// As [`Scheme::codec_of`], or an object that does not decode as its version's type.
    pub fn object_to_hub(&self, object: Value) -> Result<H, SchemeError> {
        self.codec_of(&object)?.decode_as_is(&object)
    }

    /// Converts a hub object to `api_version` (of the hub kind's group) and encodes it.
    ///
    /// # Errors
    ///
    /// A hub object of a kind without codec, or a version not served.
    pub fn object_from_hub(&self, hub: H, api_version: &str) -> Result<Value, SchemeError> {
        let Some(kind) = self.codecs.iter().find(|c| (c.holds)(&hub)) else {
            return Err(SchemeError::new(
                ErrorKind::UnsupportedKind,
                "",
                "the hub object's kind has no codec",
            ));
        };
        self.codec_in(kind, api_version)?
            .encode(hub, &mut Vec::new())
    }

    /// Converts an object to `api_version` through the hub without defaulting it. An object
    /// already in that version is returned as it is, as kube-apiserver's converter does.
    ///
    /// # Errors
    ///
    /// As [`Scheme::object_to_hub`] and [`Scheme::object_from_hub`].
    pub fn convert_object(&self, object: Value, api_version: &str) -> Result<Value, SchemeError> {
        let source = self.codec_of(&object)?;
        let target = self.codec_in(source, api_version)?;
        if std::ptr::eq(source, target) {
            return Ok(object);
        }
        target.encode(source.decode_as_is(&object)?, &mut Vec::new())
    }
}

/// A JSON document built as a value, with its repeated keys' paths.
fn built(document: &JsonDocument<'_>) -> Result<Document, SchemeError> {
    document
        .to_document()
        .map_err(|e| SchemeError::new(ErrorKind::InvalidValue, "", e.to_string()))
}

/// The `apiVersion` and `kind` of an object.
fn identity(object: &Value) -> Result<(&str, &str), SchemeError> {
    let Value::Object(map) = object else {
        return Err(SchemeError::new(
            ErrorKind::InvalidValue,
            "",
            format!("expected an object, found {}", json_type(object)),
        ));
    };
    let field = |name: &str| match map.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.as_str()),
        Some(Value::String(_)) | None => Err(SchemeError::new(
            ErrorKind::InvalidValue,
            name,
            "Required value: must be set",
        )),
        Some(other) => Err(SchemeError::new(
            ErrorKind::InvalidValue,
            name,
            format!("expected a string, found {}", json_type(other)),
        )),
    };
    Ok((field("apiVersion")?, field("kind")?))
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

type Handler<'a> = dyn FnMut(&Value, &str, &mut Vec<Warning>) -> Result<Value, SchemeError> + 'a;
type Relabel<'a> = dyn Fn(&str, &str) -> Result<String, SchemeError> + 'a;

impl<H> Scheme<H> {
    /// Applies `handle` to the object, or to each item of a list, and rebuilds the list around the
    /// results. The items of a typed list take the list's group-version and item kind when they
    /// carry none; a `v1` `List` may mix kinds and versions. `relabel` gives a typed list its new
    /// `apiVersion` from its old one and its item kind. The list's own fields are decoded like an
    /// object's: `metadata` is a `ListMeta`, and other fields are unknown fields.
    fn each_object(
        &self,
        document: &Value,
        relabel: Option<&Relabel<'_>>,
        unknown: UnknownFields,
        warnings: &mut Vec<Warning>,
        handle: &mut Handler<'_>,
    ) -> Result<Value, SchemeError> {
        if depth(document) > MAX_DEPTH_LIMIT {
            return Err(SchemeError::new(
                ErrorKind::TooDeep,
                "",
                format!("document nested deeper than {MAX_DEPTH_LIMIT} levels"),
            ));
        }
        let (api_version, kind) = identity(document)?;
        let typed_list_item = kind
            .strip_suffix("List")
            .filter(|item| self.find(api_version, item).is_some());
        if !(api_version == "v1" && kind == "List") && typed_list_item.is_none() {
            return handle(document, api_version, warnings);
        }
        let mut list = list_envelope(document, unknown, warnings)?;
        let items = match document.get("items") {
            Some(Value::Array(items)) => items.as_slice(),
            None | Some(Value::Null) => &[],
            Some(other) => {
                return Err(SchemeError::new(
                    ErrorKind::InvalidValue,
                    "items",
                    format!("expected an array, found {}", json_type(other)),
                ));
            }
        };
        let mut converted = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let prefix = format!("items[{index}]");
            let mut item = item.clone();
            if let (Some(item_kind), Value::Object(map)) = (typed_list_item, &mut item) {
                for (field, expected) in [("apiVersion", api_version), ("kind", item_kind)] {
                    match map.get(field) {
                        None | Some(Value::Null) => {
                            map.insert(field.to_owned(), Value::from(expected));
                        }
                        Some(Value::String(found)) if found == expected => {}
                        Some(found) => {
                            return Err(SchemeError::new(
                                ErrorKind::InvalidValue,
                                format!("{prefix}.{field}"),
                                format!("expected {expected:?} in a {kind}, found {found}"),
                            ));
                        }
                    }
                }
            }
            let (item_api_version, _) = identity(&item).map_err(|e| e.prefixed(&prefix))?;
            let mut item_warnings = Vec::new();
            let result = handle(&item, item_api_version, &mut item_warnings)
                .map_err(|e| e.prefixed(&prefix))?;
            warnings.extend(item_warnings.into_iter().map(|w| w.prefixed(&prefix)));
            converted.push(result);
        }
        list.insert("items".to_owned(), Value::Array(converted));
        if let (Some(item_kind), Some(relabel)) = (typed_list_item, relabel) {
            list.insert(
                "apiVersion".to_owned(),
                Value::from(relabel(api_version, item_kind)?),
            );
        }
        Ok(Value::Object(list))
    }
}

/// A list's `apiVersion`, `kind` and `metadata` (decoded as a `ListMeta`), with its other
/// fields treated as unknown fields.
fn list_envelope(
    document: &Value,
    unknown: UnknownFields,
    warnings: &mut Vec<Warning>,
) -> Result<Map<String, Value>, SchemeError> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
    let Value::Object(fields) = document else {
        unreachable!("identity() accepted only objects");
    };
    let mut envelope = Map::new();
    let mut unknown_paths = Vec::new();
    for (key, value) in fields {
        match key.as_str() {
            "apiVersion" | "kind" => {
                envelope.insert(key.clone(), value.clone());
            }
            "items" => {}
            "metadata" => {
                let (meta, paths): (Option<ListMeta>, _) =
                    codec::decode_collecting(value).map_err(|e| e.prefixed("metadata"))?;
                unknown_paths.extend(paths.iter().map(|p| join("metadata", p)));
                if let Some(meta) = meta {
                    let meta = serde_json::to_value(meta).map_err(|e| {
                        SchemeError::new(ErrorKind::Encoding, "metadata", e.to_string())
                    })?;
                    envelope.insert(key.clone(), meta);
                }
            }
            other => unknown_paths.push(other.to_owned()),
        }
    }
    unknown.apply(codec::unknown_fields(unknown_paths), warnings)?;
    Ok(envelope)
}
