//! The dynamic scheme: from a document (JSON value) to typed objects and back, by `apiVersion`
//! and `kind`, as kube-apiserver's codec does: decode in the document's version, report unknown
//! fields, default in that version, convert to the hub, convert to the requested version, and
//! report what the target version cannot keep.
//!
//! ```
//! use apfkit_conversion::scheme::{self, Target, UnknownFields};
//!
//! let document = serde_json::json!({
//!     "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta2",
//!     "kind": "PriorityLevelConfiguration",
//!     "metadata": {"name": "p"},
//!     "spec": {"type": "Limited", "limited": {"assuredConcurrencyShares": 0, "limitResponse": {"type": "Reject"}}}
//! });
//! let target: Target = "v1".parse().unwrap();
//! let converted = scheme::convert(&document, &target, UnknownFields::Strict).unwrap();
//! assert_eq!(converted.object["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
//! assert_eq!(converted.object["spec"]["limited"]["nominalConcurrencyShares"], 30);
//! ```

mod codec;
mod diff;
mod document;
mod encoding;
mod guard;
mod json_input;
mod protobuf_input;
mod read;
mod yaml_input;

use serde_json::{Map, Value};

pub use codec::{CODECS, Codec, HubObject, SchemeHub, supported};
pub use document::{Document, InputError, Limits, MAX_DEPTH_LIMIT, ReadError, depth};
pub use encoding::Encoding;
pub use json_input::JsonDocument;
pub use read::{Input, read_documents, read_each, read_each_input};
pub use yaml_input::YamlDocument;

use apfkit_runtime::scheme::join;
pub use apfkit_runtime::scheme::{ErrorKind, SchemeError, Target, UnknownFields, Warning};

/// Checks that some served kind has `target`'s version (in `target`'s group, when it names
/// one), so that a mistyped version is refused before any document is read.
pub fn check_target(target: &Target) -> Result<(), SchemeError> {
    let served = codec::CODECS.iter().any(|c| {
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
                supported()
            ),
        ))
    }
}

/// Whether a document is something the scheme handles: a served kind, a typed list of one, or
/// a `v1` `List` (whose items are checked when it is converted).
pub fn is_served(document: &Value) -> bool {
    identity(document).is_ok_and(|(api_version, kind)| serves(api_version, kind))
}

/// Whether a JSON document is something the scheme handles, as [`is_served`] tells of a value.
pub fn is_served_json(document: &JsonDocument<'_>) -> bool {
    match (document.api_version.as_deref(), document.kind.as_deref()) {
        (Some(api_version), Some(kind)) => serves(api_version, kind),
        _ => false,
    }
}

fn serves(api_version: &str, kind: &str) -> bool {
    !api_version.is_empty()
        && !kind.is_empty()
        && ((api_version == "v1" && kind == "List")
            || codec::serves(api_version, kind)
            || kind
                .strip_suffix("List")
                .is_some_and(|item| codec::serves(api_version, item)))
}

/// A converted or defaulted document with what the caller should be told about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// The resulting document.
    pub object: Value,
    /// Unknown fields and lossy values, with field paths.
    pub warnings: Vec<Warning>,
}

/// Converts a document (an object, a typed list such as `FlowSchemaList`, or a `v1` `List`)
/// to `target`, defaulting it in its own version first.
pub fn convert(
    document: &Value,
    target: &Target,
    unknown: UnknownFields,
) -> Result<Converted, SchemeError> {
    let mut warnings = Vec::new();
    let relabel = |api_version: &str, item_kind: &str| -> Result<String, SchemeError> {
        let codec = codec::find(api_version, &serde_json::json!({ "kind": item_kind }))?;
        Ok(codec::resolve_target(codec, target)?.api_version())
    };
    let object = each_object(
        document,
        Some(&relabel),
        unknown,
        &mut warnings,
        &mut |object, gv, warnings| {
            let (codec, hub) = codec::decode_to_hub(object, gv, unknown, warnings)?;
            let target_codec = codec::resolve_target(codec, target)?;
            target_codec.encode(hub, warnings)
        },
    )?;
    Ok(Converted { object, warnings })
}

/// Applies kube-apiserver's defaults to a document in its own version.
pub fn default(document: &Value, unknown: UnknownFields) -> Result<Converted, SchemeError> {
    let mut warnings = Vec::new();
    let object = each_object(
        document,
        None,
        unknown,
        &mut warnings,
        &mut |object, gv, warnings| {
            let codec = codec::find(gv, object)?;
            codec.default(object, unknown, warnings)
        },
    )?;
    Ok(Converted { object, warnings })
}

/// Decodes and defaults every object of a document and returns their hub forms, in order.
pub fn to_hub(
    document: &Value,
    unknown: UnknownFields,
) -> Result<(Vec<HubObject>, Vec<Warning>), SchemeError> {
    let mut warnings = Vec::new();
    let mut objects = Vec::new();
    each_object(
        document,
        None,
        unknown,
        &mut warnings,
        &mut |object, gv, warnings| {
            let (_, hub) = codec::decode_to_hub(object, gv, unknown, warnings)?;
            objects.push(hub);
            Ok(Value::Null)
        },
    )?;
    Ok((objects, warnings))
}

/// A document written in an [`Encoding`], with what the caller should be told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// The document's bytes.
    pub bytes: Vec<u8>,
    /// Repeated, unknown and lossy fields, with field paths.
    pub warnings: Vec<Warning>,
}

/// [`convert`] for a JSON document as the reader gives it, written as `encoding` says: the
/// bytes and warnings of converting its value and encoding the result, with its repeated keys
/// reported like unknown fields (kube-apiserver's field validation). An object of a served kind
/// with nothing to report is decoded straight from its bytes into its type, and no JSON value
/// is built.
///
/// ```
/// use apfkit_conversion::scheme::{self, Encoding, JsonDocument, Limits, UnknownFields};
///
/// let bytes = br#"{"apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
///     "metadata": {"name": "probes"}, "spec": {"priorityLevelConfiguration": {"name": "exempt"}}}"#;
/// let document = JsonDocument::parse(bytes, &Limits::default()).unwrap();
/// let target = "v1".parse().unwrap();
/// let converted =
///     scheme::convert_json(&document, &target, UnknownFields::Strict, Encoding::Json).unwrap();
/// assert!(converted.bytes.starts_with(br#"{"kind":"FlowSchema","apiVersion":"flowcontrol.apiserver.k8s.io/v1""#));
/// assert!(converted.warnings.is_empty());
/// ```
///
/// # Errors
///
/// As [`convert`], and [`ErrorKind::UnknownFields`] for repeated keys in `Strict` mode.
pub fn convert_json(
    document: &JsonDocument<'_>,
    target: &Target,
    unknown: UnknownFields,
    encoding: Encoding,
) -> Result<Encoded, SchemeError> {
    if let Some((codec, typed)) = typed_object(document, unknown)
        && let Some(hub) = codec.typed_to_hub(typed)
    {
        return encode_converted(codec, hub, target, encoding, document.bytes.len());
    }
    through_value(document, unknown, encoding, |value| {
        convert(value, target, unknown)
    })
}

/// A hub object decoded by `codec`, converted to `target` and written as `encoding` says;
/// `length` (of the input) sizes the output.
fn encode_converted(
    codec: &'static Codec,
    hub: HubObject,
    target: &Target,
    encoding: Encoding,
    length: usize,
) -> Result<Encoded, SchemeError> {
    let target_codec = codec::resolve_target(codec, target)?;
    let mut warnings = Vec::new();
    let bytes = target_codec.encode_to(hub, encoding, length, &mut warnings)?;
    Ok(Encoded { bytes, warnings })
}

/// [`convert`] for a YAML document the reader decoded into its type, written as `encoding`
/// says. Such a document has nothing to report: the only warnings are the conversion's.
///
/// # Errors
///
/// As [`convert`].
pub fn convert_yaml(
    document: YamlDocument<'_>,
    target: &Target,
    encoding: Encoding,
) -> Result<Encoded, SchemeError> {
    let (decoded, length) = document.into_decoded();
    let codec = decoded.codec;
    encode_converted(codec, decoded.into_hub()?, target, encoding, length)
}

/// [`default`] for a YAML document the reader decoded into its type; see [`convert_yaml`].
///
/// # Errors
///
/// As [`default`].
pub fn default_yaml(
    document: YamlDocument<'_>,
    encoding: Encoding,
) -> Result<Encoded, SchemeError> {
    let (decoded, length) = document.into_decoded();
    Ok(Encoded {
        bytes: decoded.into_defaulted(encoding, length)?,
        warnings: Vec::new(),
    })
}

/// [`to_hub`] for a YAML document the reader decoded into its type.
///
/// # Errors
///
/// None in practice (the object is of its codec's type).
pub fn to_hub_yaml(document: YamlDocument<'_>) -> Result<HubObject, SchemeError> {
    document.into_decoded().0.into_hub()
}

/// [`default`] for a JSON document as the reader gives it, written as `encoding` says; see
/// [`convert_json`].
///
/// # Errors
///
/// As [`default`], and [`ErrorKind::UnknownFields`] for repeated keys in `Strict` mode.
pub fn default_json(
    document: &JsonDocument<'_>,
    unknown: UnknownFields,
    encoding: Encoding,
) -> Result<Encoded, SchemeError> {
    if let Some((codec, typed)) = typed_object(document, unknown)
        && let Some(bytes) = codec.default_typed(typed, encoding, document.bytes.len())
    {
        return Ok(Encoded {
            bytes: bytes?,
            warnings: Vec::new(),
        });
    }
    through_value(document, unknown, encoding, |value| default(value, unknown))
}

/// The value path of a JSON document: built, its repeated keys reported, `handle`d, encoded.
fn through_value(
    document: &JsonDocument<'_>,
    unknown: UnknownFields,
    encoding: Encoding,
    handle: impl FnOnce(&Value) -> Result<Converted, SchemeError>,
) -> Result<Encoded, SchemeError> {
    let (value, mut warnings) = built(document, unknown)?;
    let handled = handle(&value)?;
    warnings.extend(handled.warnings);
    let bytes = encoding.encode_value(&handled.object)?;
    Ok(Encoded { bytes, warnings })
}

/// [`to_hub`] for a JSON document as the reader gives it; see [`convert_json`].
///
/// # Errors
///
/// As [`to_hub`], and [`ErrorKind::UnknownFields`] for repeated keys in `Strict` mode.
pub fn to_hub_json(
    document: &JsonDocument<'_>,
    unknown: UnknownFields,
) -> Result<(Vec<HubObject>, Vec<Warning>), SchemeError> {
    if let Some((codec, typed)) = typed_object(document, unknown)
        && let Some(hub) = codec.typed_to_hub(typed)
    {
        return Ok((vec![hub], Vec::new()));
    }
    let (value, mut warnings) = built(document, unknown)?;
    let (objects, more) = to_hub(&value, unknown)?;
    warnings.extend(more);
    Ok((objects, warnings))
}

/// The object of a JSON document in its version's type, with its codec, when nothing about
/// it needs reporting: as the reader decoded it, or decoded now from an object (not a list) of
/// a served kind without repeated keys, its fields the type lacks allowed only if `unknown`
/// ignores them.
fn typed_object(
    document: &JsonDocument<'_>,
    unknown: UnknownFields,
) -> Option<(&'static Codec, codec::Typed)> {
    if let Some(decoded) = document.take_decoded() {
        return Some((decoded.codec, decoded.object));
    }
    if document.may_repeat_keys {
        return None;
    }
    let codec = codec::lookup(document.api_version.as_deref()?, document.kind.as_deref()?)?;
    let guard = guard::Guard::checked(unknown == UnknownFields::Ignore);
    let text = std::str::from_utf8(document.bytes).ok()?;
    let (typed, end) = codec.decode_guarded(text, &guard)?;
    text[end..]
        .trim_ascii_start()
        .is_empty()
        .then_some((codec, typed))
}

/// A JSON document built as a value, its repeated keys reported as `unknown` says.
fn built(
    document: &JsonDocument<'_>,
    unknown: UnknownFields,
) -> Result<(Value, Vec<Warning>), SchemeError> {
    let built = document
        .to_document()
        .map_err(|e| SchemeError::new(ErrorKind::InvalidValue, "", e.to_string()))?;
    let mut warnings = Vec::new();
    let repeated = built.duplicate_fields.into_iter();
    codec::apply_unknown(
        repeated
            .map(|path| Warning::DuplicateField { path })
            .collect(),
        unknown,
        &mut warnings,
    )?;
    Ok((built.value, warnings))
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

/// Applies `handle` to the object, or to each item of a list, and rebuilds the list around the
/// results. The items of a typed list take the list's group-version and item kind when they
/// carry none; a `v1` `List` may mix kinds and versions. `relabel` gives a typed list its new
/// `apiVersion` from its old one and its item kind. The list's own fields are decoded like an
/// object's: `metadata` is a `ListMeta`, and other fields are unknown fields.
fn each_object(
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
        .filter(|item| codec::serves(api_version, item));
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
        let result =
            handle(&item, item_api_version, &mut item_warnings).map_err(|e| e.prefixed(&prefix))?;
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
    codec::apply_unknown(codec::unknown_fields(unknown_paths), unknown, warnings)?;
    Ok(envelope)
}
