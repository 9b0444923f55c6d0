//! Kubernetes protobuf for kinds a server holds as JSON (`apfkit-rbac`'s roles and bindings,
//! the aggregator's Services and EndpointSlices): a message described by a table of its
//! fields ([`Shape`]), read into and written from `serde_json` values as gogo-protobuf and
//! Go's JSON would. A Go value is always written and a pointer only when set; repeated fields
//! are one entry each; on reading, the Go values the wire left out are filled in as Go's JSON
//! writes them (a string without `omitempty` as `""`, a struct value as its empty form).
//!
//! ```
//! use apfkit_wire::shaped::{self, Holds, RootShape, Shape};
//! use serde_json::json;
//!
//! static PORT: Shape = Shape(&[
//!     (1, "name", Holds::Text { omit_empty: true }),
//!     (3, "port", Holds::Int32 { omit_zero: false }),
//!     (4, "targetPort", Holds::IntOrString),
//! ]);
//! struct Port;
//! impl RootShape for Port {
//!     const SHAPE: &'static Shape = &PORT;
//! }
//! let bytes = shaped::write(&PORT, &json!({"port": 443, "targetPort": "https"})).unwrap();
//! let (read, unknown) = shaped::read::<Port>(&bytes, &Default::default()).unwrap();
//! assert_eq!(serde_json::Value::Object(read), json!({"port": 443, "targetPort": "https"}));
//! assert!(unknown.is_empty());
//! ```

use std::marker::PhantomData;

use apfkit_runtime::scheme::{InputError, Limits, PROTOBUF_PREFIX};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, MicroTime, ObjectMeta, Time};
use serde_json::{Map, Value};

use super::envelope;
use super::protobuf::{self as pb, DecodeError, Decoder, Message, WireType};

/// What a field of a message holds.
#[derive(Debug, Clone, Copy)]
pub enum Holds {
    /// A Go `string`, always written; left out of the JSON when empty if `omit_empty`.
    Text {
        /// Whether Go's JSON leaves it out when empty.
        omit_empty: bool,
    },
    /// A `*string`, written when set.
    OptionalText,
    /// A `[]string`.
    Texts,
    /// A Go `int32`, always written; left out of the JSON when zero if `omit_zero`.
    Int32 {
        /// Whether Go's JSON leaves it out when zero.
        omit_zero: bool,
    },
    /// A `*int32`, written when set.
    OptionalInt32,
    /// A `*int64`, written when set.
    OptionalInt64,
    /// A `*float64`, written when set; a JSON number (a whole one without a fraction, as
    /// Go's JSON writes it).
    OptionalDouble,
    /// A `[]byte`, written when not empty; base64 text in JSON.
    Bytes,
    /// apiextensions' `JSON` message (`raw` 1: the value as JSON text), written when set; the
    /// value itself in JSON.
    Json,
    /// A repeated `JSON` message: a list of values.
    Jsons,
    /// A Go `int64`, always written; left out of the JSON when zero if `omit_zero`.
    Int64 {
        /// Whether Go's JSON leaves it out when zero.
        omit_zero: bool,
    },
    /// A Go `bool`, always written; left out of the JSON when false if `omit_false`.
    Bool {
        /// Whether Go's JSON leaves it out when false.
        omit_false: bool,
    },
    /// A `*bool`, written when set.
    OptionalBool,
    /// An `intstr.IntOrString` value (`type` 1, `intVal` 2, `strVal` 3), always written; a
    /// number or a string in JSON.
    IntOrString,
    /// A `metav1.Time` value, always written (Go's zero time as an empty message); an
    /// RFC 3339 string in JSON, left out when zero.
    Time,
    /// A `*metav1.MicroTime`, written when set; in JSON an RFC 3339 string with six digits of
    /// a second (`RFC3339Micro`), null when Go's zero time.
    MicroTime,
    /// A `metav1.MicroTime` value, always written (Go's zero time as an empty message); in
    /// JSON as [`Holds::MicroTime`], null when zero.
    MicroTimeValue,
    /// An embedded message: a Go struct value (`true`: always written) or a pointer.
    Message(&'static Shape, bool),
    /// A repeated message.
    Messages(&'static Shape),
    /// A `map<string, string>`.
    Map,
    /// A `map<string, bytes>` (Go writes its keys sorted): a JSON object of base64 text.
    BytesMap,
    /// A `map<string, Message>` (Go writes its keys sorted): a JSON object of messages.
    MessageMap(&'static Shape),
    /// A message whose fields are alternatives of one JSON value (apiextensions'
    /// `JSONSchemaPropsOrArray` and `JSONSchemaPropsOrBool`): in JSON, a list alternative
    /// that is not empty, else a message alternative that is set, else the bool alternative.
    /// Written from a JSON list, object or bool into the alternative of that type; an object
    /// also sets the bool alternative true, as Go's `UnmarshalJSON` does.
    Either(&'static Shape),
    /// `metav1.ObjectMeta`.
    ObjectMeta,
    /// `metav1.ListMeta`.
    ListMeta,
}

/// A message: its fields as (number, JSON name, what it holds), in number order.
#[derive(Debug)]
pub struct Shape(pub &'static [(u32, &'static str, Holds)]);

/// The message a kind's objects are read with, for [`read`].
pub trait RootShape {
    /// The kind's message.
    const SHAPE: &'static Shape;
}

static EMPTY: Shape = Shape(&[]);

/// core/v1's `ObjectReference` (k8s.io/api's `generated.proto`; every field a Go `string` with
/// `omitempty`), which several kinds hold (an EndpointSlice's `targetRef`, a
/// ServiceAccount's `secrets`).
pub static OBJECT_REFERENCE: Shape = Shape(&[
    (1, "kind", Holds::Text { omit_empty: true }),
    (2, "namespace", Holds::Text { omit_empty: true }),
    (3, "name", Holds::Text { omit_empty: true }),
    (4, "uid", Holds::Text { omit_empty: true }),
    (5, "apiVersion", Holds::Text { omit_empty: true }),
    (6, "resourceVersion", Holds::Text { omit_empty: true }),
    (7, "fieldPath", Holds::Text { omit_empty: true }),
]);

/// meta.k8s.io/v1's `PartialObjectMetadata` (apimachinery's `generated.proto`; v1beta1's is
/// the same type): an object's metadata alone, what metadata clients and informers read.
pub static PARTIAL_OBJECT_METADATA: Shape = Shape(&[(1, "metadata", Holds::ObjectMeta)]);

/// meta.k8s.io/v1's `PartialObjectMetadataList`.
pub static PARTIAL_OBJECT_METADATA_LIST: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "items", Holds::Messages(&PARTIAL_OBJECT_METADATA)),
]);

/// meta.k8s.io/v1beta1's `PartialObjectMetadataList`: v1's items (field 1) and list
/// metadata (field 2) the other way round.
pub static PARTIAL_OBJECT_METADATA_LIST_V1BETA1: Shape = Shape(&[
    (1, "items", Holds::Messages(&PARTIAL_OBJECT_METADATA)),
    (2, "metadata", Holds::ListMeta),
]);

/// apimachinery's `StatusCause` (every field a Go `string` with `omitempty`; `type` is
/// `reason` in JSON).
static STATUS_CAUSE: Shape = Shape(&[
    (1, "reason", Holds::Text { omit_empty: true }),
    (2, "message", Holds::Text { omit_empty: true }),
    (3, "field", Holds::Text { omit_empty: true }),
]);

/// apimachinery's `StatusDetails`.
static STATUS_DETAILS: Shape = Shape(&[
    (1, "name", Holds::Text { omit_empty: true }),
    (2, "group", Holds::Text { omit_empty: true }),
    (3, "kind", Holds::Text { omit_empty: true }),
    (4, "causes", Holds::Messages(&STATUS_CAUSE)),
    (5, "retryAfterSeconds", Holds::Int32 { omit_zero: true }),
    (6, "uid", Holds::Text { omit_empty: true }),
]);

/// meta/v1's `Status`, what an API server answers an error with (a client that asked for
/// protobuf gets it in protobuf).
pub static STATUS: Shape = Shape(&[
    (1, "metadata", Holds::ListMeta),
    (2, "status", Holds::Text { omit_empty: true }),
    (3, "message", Holds::Text { omit_empty: true }),
    (4, "reason", Holds::Text { omit_empty: true }),
    (5, "details", Holds::Message(&STATUS_DETAILS, false)),
    (6, "code", Holds::Int32 { omit_zero: true }),
]);

/// `intstr.IntOrString`'s message.
static INT_OR_STRING: Shape = Shape(&[
    (1, "type", Holds::Int64 { omit_zero: false }),
    (2, "intVal", Holds::Int32 { omit_zero: false }),
    (3, "strVal", Holds::Text { omit_empty: false }),
]);

/// A message being read: its shape and the JSON of the fields read so far.
#[derive(Debug)]
struct Node {
    shape: &'static Shape,
    value: Map<String, Value>,
}

impl Default for Node {
    fn default() -> Self {
        Node::of(&EMPTY)
    }
}

impl Node {
    fn of(shape: &'static Shape) -> Self {
        Node {
            shape,
            value: Map::new(),
        }
    }

    /// Appends `item` to the list field `name`.
    fn push(&mut self, name: &str, item: Value) {
        match self
            .value
            .entry(name.to_owned())
            .or_insert_with(|| Value::Array(Vec::new()))
        {
            Value::Array(items) => items.push(item),
            other => *other = Value::Array(vec![item]),
        }
    }

    /// Sets `key` of the map field `name` (a map entry's message read) to `value`.
    fn insert_entry(&mut self, name: &str, key: String, value: Value) {
        let entry = self
            .value
            .entry(name.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(map) = entry {
            map.insert(key, value);
        }
    }

    /// How many items the list field `name` holds.
    fn len(&self, name: &str) -> usize {
        self.value
            .get(name)
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }

    /// Sets `name` unless Go's JSON leaves the value out (`omit`).
    fn set(&mut self, name: &str, value: Value, omit: bool) {
        if omit {
            self.value.remove(name);
        } else {
            self.value.insert(name.to_owned(), value);
        }
    }

    /// The Go values the wire left out, as Go's JSON writes them.
    fn fill_go_values(&mut self) {
        for &(_, name, holds) in self.shape.0 {
            if self.value.contains_key(name) {
                continue;
            }
            let value = match holds {
                Holds::Text { omit_empty: false } => Value::String(String::new()),
                Holds::Int32 { omit_zero: false } | Holds::Int64 { omit_zero: false } => {
                    Value::from(0)
                }
                Holds::Bool { omit_false: false } => Value::Bool(false),
                Holds::IntOrString => Value::from(0),
                Holds::Message(shape, true) => {
                    let mut child = Node::of(shape);
                    child.fill_go_values();
                    Value::Object(child.value)
                }
                Holds::ObjectMeta | Holds::ListMeta => Value::Object(Map::new()),
                _ => continue,
            };
            self.value.insert(name.to_owned(), value);
        }
    }
}

/// A `double` as Go's JSON writes it: a whole number without a fraction; `None` for a value
/// JSON cannot hold (infinite, not a number).
fn go_number(number: f64) -> Option<Value> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if number.fract() == 0.0 && number.abs() < EXACT {
        #[allow(clippy::cast_possible_truncation)]
        return Some(Value::from(number as i64));
    }
    serde_json::Number::from_f64(number).map(Value::Number)
}

/// A `JSON` message's value: its `raw` text read as JSON (an empty message is null).
fn read_json(wire: WireType, buf: &mut &[u8], decoder: &mut Decoder) -> Result<Value, DecodeError> {
    let mut inner = pb::get_bytes(wire, buf, decoder)?;
    let mut raw: &[u8] = &[];
    while !inner.is_empty() {
        let (number, wire) =
            prost::encoding::decode_key(&mut inner).map_err(|e| decoder.error(e.to_string()))?;
        if number == 1 {
            raw = pb::get_bytes(wire, &mut inner, decoder)?;
        } else {
            decoder.unknown(number, wire, &mut inner)?;
        }
    }
    if raw.is_empty() {
        return Ok(Value::Null);
    }
    decoder.count(1)?;
    serde_json::from_slice(raw).map_err(|e| decoder.error(format!("raw JSON: {e}")))
}

/// The JSON of an [`Holds::Either`] message read as `fields`: a list alternative that is not
/// empty, else a message alternative that is set, else the bool alternative.
fn chosen_alternative(shape: &Shape, mut fields: Map<String, Value>) -> Value {
    let of = |wanted: fn(&Holds) -> bool| {
        shape
            .0
            .iter()
            .filter(move |(_, _, holds)| wanted(holds))
            .map(|(_, name, _)| *name)
    };
    for name in of(|h| matches!(h, Holds::Messages(_) | Holds::Texts)) {
        if fields
            .get(name)
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
        {
            return fields.remove(name).unwrap_or_default();
        }
    }
    for name in of(|h| matches!(h, Holds::Message(..))) {
        if let Some(message) = fields.remove(name) {
            return message;
        }
    }
    of(|h| matches!(h, Holds::Bool { .. }))
        .find_map(|name| fields.remove(name))
        .unwrap_or(Value::Null)
}

/// A `MicroTime` of `seconds` and `nanos` as its JSON text (`RFC3339Micro`, in UTC); `None`
/// outside the times it can hold.
fn micro_time_text(seconds: i64, nanos: i32) -> Option<String> {
    let time = k8s_openapi::jiff::Timestamp::new(seconds, nanos).ok()?;
    k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%S%.6fZ", time).ok()
}

/// A typed metadata value as JSON.
fn json_of<T: serde::Serialize>(value: &T, decoder: &Decoder) -> Result<Value, DecodeError> {
    serde_json::to_value(value).map_err(|e| decoder.error(e.to_string()))
}

impl Message for Node {
    /// Nodes are only read; [`write`] writes from JSON.
    fn encode_fields(&self, _buf: &mut Vec<u8>) -> Result<(), pb::EncodeError> {
        Ok(())
    }

    fn fields_len(&self) -> usize {
        0
    }

    fn merge_field(
        &mut self,
        number: u32,
        wire: WireType,
        buf: &mut &[u8],
        decoder: &mut Decoder,
    ) -> Result<(), DecodeError> {
        let Some(&(_, name, holds)) = self.shape.0.iter().find(|(n, ..)| *n == number) else {
            return decoder.unknown(number, wire, buf);
        };
        decoder.enter(name);
        match holds {
            Holds::Text { omit_empty } => {
                let text = pb::get_string(wire, buf, decoder)?;
                self.set(
                    name,
                    Value::from(text.as_str()),
                    omit_empty && text.is_empty(),
                );
            }
            Holds::OptionalText => {
                let text = pb::get_string(wire, buf, decoder)?;
                self.set(name, text.into(), false);
            }
            Holds::Texts => {
                let text = pb::get_string(wire, buf, decoder)?;
                self.push(name, text.into());
            }
            Holds::Int32 { omit_zero } => {
                let number = pb::get_int32(wire, buf, decoder)?;
                self.set(name, number.into(), omit_zero && number == 0);
            }
            Holds::OptionalInt32 => {
                let number = pb::get_int32(wire, buf, decoder)?;
                self.set(name, number.into(), false);
            }
            Holds::Int64 { omit_zero } => {
                let number = pb::get_int64(wire, buf, decoder)?;
                self.set(name, number.into(), omit_zero && number == 0);
            }
            Holds::OptionalInt64 => {
                let number = pb::get_int64(wire, buf, decoder)?;
                self.set(name, number.into(), false);
            }
            Holds::OptionalDouble => {
                let number = pb::get_double(wire, buf, decoder)?;
                let value = go_number(number).ok_or_else(|| {
                    decoder.error(format!("{number} is not a number JSON can hold"))
                })?;
                self.set(name, value, false);
            }
            Holds::Bytes => {
                let text = pb::get_base64(wire, buf, decoder)?;
                self.set(name, text.into(), false);
            }
            Holds::Json => {
                let value = read_json(wire, buf, decoder)?;
                let omit = value.is_null();
                self.set(name, value, omit);
            }
            Holds::Jsons => {
                let value = read_json(wire, buf, decoder)?;
                self.push(name, value);
            }
            Holds::Bool { omit_false } => {
                let flag = pb::get_bool(wire, buf, decoder)?;
                self.set(name, flag.into(), omit_false && !flag);
            }
            Holds::OptionalBool => {
                let flag = pb::get_bool(wire, buf, decoder)?;
                self.set(name, flag.into(), false);
            }
            Holds::IntOrString => {
                let mut child = Node::of(&INT_OR_STRING);
                pb::get_message(wire, buf, decoder, &mut child)?;
                let is_string = child.value.get("type").and_then(Value::as_i64) == Some(1);
                let value = if is_string {
                    child.value.remove("strVal").unwrap_or_default()
                } else {
                    child.value.remove("intVal").unwrap_or_else(|| 0.into())
                };
                self.set(name, value, false);
            }
            Holds::Time => match pb::get_time(wire, buf, decoder)? {
                Some(time) => {
                    let value = json_of(&time, decoder)?;
                    self.set(name, value, false);
                }
                None => {
                    self.value.remove(name);
                }
            },
            Holds::MicroTime | Holds::MicroTimeValue => {
                let value = match pb::get_micro_time(wire, buf, decoder)? {
                    Some((seconds, nanos)) => micro_time_text(seconds, nanos)
                        .map(Value::String)
                        .ok_or_else(|| {
                            decoder.error(format!(
                                "{seconds} seconds is outside the supported time range"
                            ))
                        })?,
                    None => Value::Null,
                };
                self.set(name, value, false);
            }
            Holds::Message(shape, _) => {
                let mut child = Node::of(shape);
                if let Some(Value::Object(seen)) = self.value.remove(name) {
                    child.value = seen;
                }
                pb::get_message(wire, buf, decoder, &mut child)?;
                self.value
                    .insert(name.to_owned(), Value::Object(child.value));
            }
            Holds::Messages(shape) => {
                decoder.enter_index(self.len(name));
                let mut child = Node::of(shape);
                pb::get_message(wire, buf, decoder, &mut child)?;
                decoder.leave();
                self.push(name, Value::Object(child.value));
            }
            Holds::Map => {
                let (key, value) = pb::get_string_entry(wire, buf, decoder)?;
                self.insert_entry(name, key, value.into());
            }
            Holds::BytesMap => {
                let (key, value) = pb::get_bytes_entry(wire, buf, decoder)?;
                self.insert_entry(name, key, value.into());
            }
            Holds::MessageMap(shape) => {
                let mut child = Node::of(shape);
                let key = pb::get_message_entry(wire, buf, decoder, &mut child)?;
                self.insert_entry(name, key, Value::Object(child.value));
            }
            Holds::Either(shape) => {
                let mut child = Node::of(shape);
                pb::get_message(wire, buf, decoder, &mut child)?;
                let chosen = chosen_alternative(shape, child.value);
                let omit = chosen.is_null();
                self.set(name, chosen, omit);
            }
            Holds::ObjectMeta => {
                let mut meta = ObjectMeta::default();
                pb::get_message(wire, buf, decoder, &mut meta)?;
                self.value.insert(name.to_owned(), json_of(&meta, decoder)?);
            }
            Holds::ListMeta => {
                let mut meta = ListMeta::default();
                pb::get_message(wire, buf, decoder, &mut meta)?;
                self.value.insert(name.to_owned(), json_of(&meta, decoder)?);
            }
        }
        decoder.leave();
        Ok(())
    }

    fn finish(&mut self) {
        self.fill_go_values();
    }
}

/// A whole object read from the top with `K`'s message.
struct Root<K>(Node, PhantomData<K>);

impl<K: RootShape> Default for Root<K> {
    fn default() -> Self {
        Root(Node::of(K::SHAPE), PhantomData)
    }
}

impl<K: RootShape> Message for Root<K> {
    fn encode_fields(&self, buf: &mut Vec<u8>) -> Result<(), pb::EncodeError> {
        self.0.encode_fields(buf)
    }
    fn fields_len(&self) -> usize {
        self.0.fields_len()
    }
    fn merge_field(
        &mut self,
        number: u32,
        wire: WireType,
        buf: &mut &[u8],
        decoder: &mut Decoder,
    ) -> Result<(), DecodeError> {
        self.0.merge_field(number, wire, buf, decoder)
    }
    fn finish(&mut self) {
        self.0.finish();
    }
}

/// A message of `K`'s shape (the bytes inside the envelope) as JSON, within `limits`, with
/// the paths of the fields the shape lacks (skipped).
///
/// # Errors
///
/// Bytes that are not such a message, or more nodes than the limits allow.
pub fn read<K: RootShape>(
    raw: &[u8],
    limits: &Limits,
) -> Result<(Map<String, Value>, Vec<String>), DecodeError> {
    pb::decode_within::<Root<K>>(raw, limits).map(|decoded| {
        let unknown = decoded.unknown.into_iter().map(|u| u.path).collect();
        (decoded.value.0.value, unknown)
    })
}

/// How one kind's message is read: [`read`] with the kind's [`RootShape`].
pub type Reader = fn(&[u8], &Limits) -> Result<(Map<String, Value>, Vec<String>), DecodeError>;

/// An object in Kubernetes protobuf (the `k8s\0` prefix and envelope included) as JSON with
/// its `apiVersion` and `kind`, and the paths of the fields its message lacks, when
/// `reader_of` reads its `apiVersion` and `kind`; `None` otherwise (another codec's).
pub fn read_enveloped(
    bytes: &[u8],
    limits: &Limits,
    reader_of: impl Fn(&str, &str) -> Option<Reader>,
) -> Option<Result<(Value, Vec<String>), InputError>> {
    let message = bytes.strip_prefix(PROTOBUF_PREFIX)?;
    let unknown = envelope::unwrap(message).ok()?;
    let type_meta = unknown.type_meta.unwrap_or_default();
    let (api_version, kind) = (
        type_meta.api_version.unwrap_or_default(),
        type_meta.kind.unwrap_or_default(),
    );
    let reader = reader_of(&api_version, &kind)?;
    let raw = unknown.raw.unwrap_or_default();
    Some(match reader(&raw, limits) {
        Ok((mut value, unknown)) => {
            value.insert("apiVersion".into(), api_version.into());
            value.insert("kind".into(), kind.into());
            Ok((Value::Object(value), unknown))
        }
        Err(source) => Err(envelope::input_error(envelope::EnvelopeError::Decode {
            api_version,
            kind,
            source,
        })),
    })
}

/// An object (JSON) in Kubernetes protobuf, prefix and envelope included, when `shape_of`
/// has a message for its `apiVersion` and `kind`; `None` otherwise.
pub fn write_enveloped(
    object: &Value,
    shape_of: impl Fn(&str, &str) -> Option<&'static Shape>,
) -> Option<Result<Vec<u8>, String>> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let shape = shape_of(api_version, kind)?;
    Some(write(shape, object).map(|raw| envelope::wrap(api_version, kind, &raw)))
}

/// `value` (a JSON object) as a message of `shape`, the bytes inside the envelope.
///
/// # Errors
///
/// A field whose JSON is not what the shape holds, naming its path.
pub fn write(shape: &Shape, value: &Value) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    write_message(shape, value, "", &mut buf)?;
    Ok(buf)
}

/// Why an object could not be written in protobuf.
fn shape_error(path: &str, message: impl Into<String>) -> String {
    format!("{path}: {}", message.into())
}

/// A `JSON` message holding `value` as JSON text.
fn put_json(buf: &mut Vec<u8>, number: u32, value: &Value) {
    let raw = serde_json::to_vec(value).unwrap_or_default();
    let mut message = Vec::new();
    put_len_delimited(&mut message, 1, &raw);
    put_len_delimited(buf, number, &message);
}

/// The fields of an [`Holds::Either`] message for `value`: a list in the list alternative,
/// an object in the message alternative (with the bool alternative true), a bool in the bool
/// alternative; `None` when it has no alternative of the value's type.
fn alternative_of(shape: &Shape, value: &Value) -> Option<Value> {
    let name_of = |wanted: fn(&Holds) -> bool| {
        shape
            .0
            .iter()
            .find(|(_, _, holds)| wanted(holds))
            .map(|(_, name, _)| *name)
    };
    let mut fields = Map::new();
    match value {
        Value::Array(_) => {
            let name = name_of(|h| matches!(h, Holds::Messages(_) | Holds::Texts))?;
            fields.insert(name.to_owned(), value.clone());
        }
        Value::Object(_) => {
            let name = name_of(|h| matches!(h, Holds::Message(..)))?;
            fields.insert(name.to_owned(), value.clone());
            if let Some(allows) = name_of(|h| matches!(h, Holds::Bool { .. })) {
                fields.insert(allows.to_owned(), Value::Bool(true));
            }
        }
        Value::Bool(_) => {
            let name = name_of(|h| matches!(h, Holds::Bool { .. }))?;
            fields.insert(name.to_owned(), value.clone());
        }
        _ => return None,
    }
    Some(Value::Object(fields))
}

/// The message of `value` in `shape`, as field `number` of `buf`.
fn put_message(
    buf: &mut Vec<u8>,
    number: u32,
    shape: &Shape,
    value: &Value,
    path: &str,
) -> Result<(), String> {
    let mut message = Vec::new();
    write_message(shape, value, path, &mut message)?;
    put_len_delimited(buf, number, &message);
    Ok(())
}

fn put_len_delimited(buf: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    prost::encoding::encode_key(number, WireType::LengthDelimited, buf);
    prost::encoding::encode_varint(bytes.len() as u64, buf);
    buf.extend_from_slice(bytes);
}

/// A JSON value read as the type `T`, or an error naming the field.
fn typed<T: serde::de::DeserializeOwned>(value: &Value, path: &str) -> Result<T, String> {
    serde_json::from_value(value.clone()).map_err(|e| shape_error(path, e.to_string()))
}

/// The message of `value` (a JSON object) in `shape`, appended to `buf`.
fn write_message(
    shape: &Shape,
    value: &Value,
    path: &str,
    buf: &mut Vec<u8>,
) -> Result<(), String> {
    let empty = Map::new();
    let object = match value {
        Value::Object(object) => object,
        Value::Null => &empty,
        _ => return Err(shape_error(path, "not an object")),
    };
    for &(number, name, holds) in shape.0 {
        let field = object.get(name).filter(|v| !v.is_null());
        let here = if path.is_empty() {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        };
        let list = |value: Option<&Value>| -> Result<Vec<Value>, String> {
            match value {
                None => Ok(Vec::new()),
                Some(Value::Array(items)) => Ok(items.clone()),
                Some(_) => Err(shape_error(&here, "not a list")),
            }
        };
        match holds {
            Holds::Text { .. } => {
                let value: String = field
                    .map(|v| typed(v, &here))
                    .transpose()?
                    .unwrap_or_default();
                pb::put_string(buf, number, &value);
            }
            Holds::OptionalText => {
                if let Some(value) = field {
                    pb::put_string(buf, number, &typed::<String>(value, &here)?);
                }
            }
            Holds::Texts => {
                for item in list(field)? {
                    pb::put_string(buf, number, &typed::<String>(&item, &here)?);
                }
            }
            Holds::Int32 { .. } => {
                let value: i32 = field
                    .map(|v| typed(v, &here))
                    .transpose()?
                    .unwrap_or_default();
                pb::put_int32(buf, number, value);
            }
            Holds::OptionalInt32 => {
                if let Some(value) = field {
                    pb::put_int32(buf, number, typed(value, &here)?);
                }
            }
            Holds::OptionalInt64 => {
                if let Some(value) = field {
                    pb::put_int64(buf, number, typed(value, &here)?);
                }
            }
            Holds::OptionalDouble => {
                if let Some(value) = field {
                    pb::put_double(buf, number, typed(value, &here)?);
                }
            }
            Holds::Bytes => {
                let text: String = field
                    .map(|v| typed(v, &here))
                    .transpose()?
                    .unwrap_or_default();
                if !text.is_empty() {
                    pb::put_base64(buf, number, "bytes", &text)
                        .map_err(|e| shape_error(&here, e.message))?;
                }
            }
            Holds::Json => {
                if let Some(value) = field {
                    put_json(buf, number, value);
                }
            }
            Holds::Jsons => {
                for item in list(field)? {
                    put_json(buf, number, &item);
                }
            }
            Holds::Int64 { .. } => {
                let value: i64 = field
                    .map(|v| typed(v, &here))
                    .transpose()?
                    .unwrap_or_default();
                pb::put_int64(buf, number, value);
            }
            Holds::Bool { .. } => {
                let value: bool = field
                    .map(|v| typed(v, &here))
                    .transpose()?
                    .unwrap_or_default();
                pb::put_bool(buf, number, value);
            }
            Holds::OptionalBool => {
                if let Some(value) = field {
                    pb::put_bool(buf, number, typed(value, &here)?);
                }
            }
            Holds::IntOrString => {
                let (kind, int, text) = match field {
                    None => (0, 0, String::new()),
                    Some(Value::String(text)) => (1, 0, text.clone()),
                    Some(number) => (0, typed::<i32>(number, &here)?, String::new()),
                };
                let mut bytes = Vec::new();
                pb::put_int64(&mut bytes, 1, kind);
                pb::put_int32(&mut bytes, 2, int);
                pb::put_string(&mut bytes, 3, &text);
                put_len_delimited(buf, number, &bytes);
            }
            Holds::Time => {
                let time: Option<Time> = field.map(|v| typed(v, &here)).transpose()?;
                pb::put_time(buf, number, time.as_ref());
            }
            Holds::MicroTime | Holds::MicroTimeValue => match field {
                Some(value) => {
                    let time: MicroTime = typed(value, &here)?;
                    pb::put_micro(buf, number, Some(&time));
                }
                None if matches!(holds, Holds::MicroTimeValue) => pb::put_time(buf, number, None),
                None => {}
            },
            Holds::Message(inner, required) => {
                if field.is_some() || required {
                    put_message(buf, number, inner, field.unwrap_or(&Value::Null), &here)?;
                }
            }
            Holds::Messages(inner) => {
                for (index, item) in list(field)?.iter().enumerate() {
                    put_message(buf, number, inner, item, &format!("{here}[{index}]"))?;
                }
            }
            Holds::Map => {
                if let Some(map) = field {
                    let map: std::collections::BTreeMap<String, String> = typed(map, &here)?;
                    pb::put_string_map(buf, number, map.iter());
                }
            }
            Holds::BytesMap => {
                if let Some(map) = field {
                    let map: std::collections::BTreeMap<String, String> = typed(map, &here)?;
                    pb::put_bytes_map(buf, number, "bytes", map.iter())
                        .map_err(|e| shape_error(&here, e.message))?;
                }
            }
            Holds::MessageMap(inner) => {
                let Some(map) = field else { continue };
                let Value::Object(map) = map else {
                    return Err(shape_error(&here, "not an object"));
                };
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                for key in keys {
                    let mut entry = Vec::new();
                    pb::put_string(&mut entry, 1, key);
                    put_message(&mut entry, 2, inner, &map[key], &format!("{here}.{key}"))?;
                    put_len_delimited(buf, number, &entry);
                }
            }
            Holds::Either(inner) => {
                if let Some(value) = field {
                    let fields = alternative_of(inner, value)
                        .ok_or_else(|| shape_error(&here, "not one of its alternatives"))?;
                    put_message(buf, number, inner, &fields, &here)?;
                }
            }
            Holds::ObjectMeta => {
                let meta: ObjectMeta = field
                    .map(|m| typed(m, &here))
                    .transpose()?
                    .unwrap_or_default();
                pb::put_message(buf, number, &meta).map_err(|e| e.to_string())?;
            }
            Holds::ListMeta => {
                let meta: ListMeta = field
                    .map(|m| typed(m, &here))
                    .transpose()?
                    .unwrap_or_default();
                pb::put_message(buf, number, &meta).map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}
