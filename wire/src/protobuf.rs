//! Kubernetes' protobuf encoding of the typed structs, byte for byte as gogo-protobuf writes it.
//!
//! The per-type code ([`Message`] impls) is generated from the `x-apfkit-go` layout of each
//! schema; this module holds what it calls. The varint and key primitives are prost's.
//!
//! gogo's rules, as Kubernetes' `generated.pb.go` applies them:
//! - fields in field-number order;
//! - a Go value (string, number, bool, struct) is always written, even when empty or zero;
//! - a Go pointer is written when set, a `[]byte` when not nil;
//! - a repeated field writes one entry per element, nothing when empty;
//! - a map writes one entry per key, sorted by key, each entry with both its key and value;
//! - `metav1.Time` writes `seconds` and a zero `nanos`, and nothing at all for the zero time.
//!
//! Decoding accepts any valid protobuf: fields in any order, repeated scalars merged, unknown
//! fields skipped and reported by path.

use std::fmt;

pub use apfkit_runtime::scheme::Limits;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, MicroTime, Time};
use prost::encoding::{self as pe};

/// The wire type of a protobuf field (prost's).
pub use prost::encoding::WireType;

/// A type with a generated protobuf codec.
pub trait Message: Default {
    /// Appends the message's fields (without a key or length) to `buf`.
    ///
    /// # Errors
    ///
    /// When a `[]byte` field holds text that is not base64 (only possible for a value built in
    /// Rust: decoding checks it).
    fn encode_fields(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError>;

    /// The length [`Message::encode_fields`] writes.
    fn fields_len(&self) -> usize;

    /// Reads one field whose key has been read.
    ///
    /// # Errors
    ///
    /// When the value does not fit the field's type.
    fn merge_field(
        &mut self,
        number: u32,
        wire: WireType,
        buf: &mut &[u8],
        decoder: &mut Decoder,
    ) -> Result<(), DecodeError>;

    /// Turns the decoded Go values into this crate's representation: a Go value field that
    /// `encoding/json` would leave out (`omitempty` and zero) becomes `None`, a Go struct value
    /// that was absent becomes its empty value.
    fn finish(&mut self) {}
}

/// A protobuf message that cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct EncodeError {
    /// The Go field.
    pub field: &'static str,
    /// What is wrong.
    pub message: String,
}

/// A protobuf message that cannot be read, with the field path where reading stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DecodeError {
    /// Field path such as `spec.rules[0].subjects[1].kind`; empty for the message itself.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// Set when the message was refused for exceeding its limits, not for being malformed.
    pub exceeded: Option<Exceeded>,
}

/// Which limit a message exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// `Limits::max_depth`, with its value.
    Depth(usize),
    /// `Limits::max_nodes`, with its value.
    Nodes(usize),
}

impl Exceeded {
    /// The error for a message over this limit.
    pub fn error(self) -> DecodeError {
        let message = match self {
            Exceeded::Depth(limit) => format!("the object nests deeper than {limit} levels"),
            Exceeded::Nodes(limit) => {
                format!("the object has more than {limit} nodes (objects, arrays, keys and values)")
            }
        };
        DecodeError {
            path: String::new(),
            message,
            exceeded: Some(self),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// A field the schema does not have, skipped while decoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownField {
    /// Path of the message that holds it, then the field number: `spec.limited.#9`.
    pub path: String,
    /// Its wire type.
    pub wire: &'static str,
}

/// One step of a field path.
#[derive(Debug, Clone, Copy)]
enum Segment {
    Field(&'static str),
    Index(usize),
}

/// Decoding state: the path of the field being read (for errors), the unknown fields met, and
/// the nodes read so far against the limit.
#[derive(Debug)]
pub struct Decoder {
    path: Vec<Segment>,
    unknown: Vec<UnknownField>,
    skip: pe::DecodeContext,
    nodes: usize,
    max_nodes: usize,
    /// How many messages deep the field being read is.
    depth: usize,
    max_depth: usize,
}

impl Decoder {
    fn new(limits: &Limits) -> Decoder {
        Decoder {
            path: Vec::new(),
            unknown: Vec::new(),
            skip: pe::DecodeContext::default(),
            nodes: 0,
            max_nodes: limits.max_nodes,
            depth: 0,
            max_depth: limits.max_depth,
        }
    }

    /// Counts `nodes` more against `Limits::max_nodes`.
    pub(crate) fn count(&mut self, nodes: usize) -> Result<(), DecodeError> {
        self.nodes = self.nodes.saturating_add(nodes);
        if self.nodes > self.max_nodes {
            return Err(Exceeded::Nodes(self.max_nodes).error());
        }
        Ok(())
    }

    fn path(&self, extra: Option<u32>) -> String {
        let mut out = String::new();
        for segment in &self.path {
            match segment {
                Segment::Field(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Segment::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        if let Some(number) = extra {
            if !out.is_empty() {
                out.push('.');
            }
            out.push('#');
            out.push_str(&number.to_string());
        }
        out
    }

    /// An error at the current path.
    pub fn error(&self, message: impl Into<String>) -> DecodeError {
        DecodeError {
            path: self.path(None),
            message: message.into(),
            exceeded: None,
        }
    }

    /// Enters the field `name`.
    pub fn enter(&mut self, name: &'static str) {
        self.path.push(Segment::Field(name));
    }

    /// Enters element `index` of the current repeated field.
    pub fn enter_index(&mut self, index: usize) {
        self.path.push(Segment::Index(index));
    }

    /// Leaves the last field or element entered.
    pub fn leave(&mut self) {
        self.path.pop();
    }

    /// Skips a field the message does not have, and records it.
    ///
    /// # Errors
    ///
    /// When the field itself is malformed.
    pub fn unknown(
        &mut self,
        number: u32,
        wire: WireType,
        buf: &mut &[u8],
    ) -> Result<(), DecodeError> {
        self.count(1)?;
        pe::skip_field(wire, number, buf, self.skip.clone())
            .map_err(|e| self.error(format!("field {number}: {}", prost_message(&e))))?;
        self.unknown.push(UnknownField {
            path: self.path(Some(number)),
            wire: wire_name(wire),
        });
        Ok(())
    }
}

fn wire_name(wire: WireType) -> &'static str {
    match wire {
        WireType::Varint => "varint",
        WireType::SixtyFourBit => "64-bit",
        WireType::LengthDelimited => "length-delimited",
        WireType::StartGroup | WireType::EndGroup => "group",
        WireType::ThirtyTwoBit => "32-bit",
    }
}

/// prost's message without its "failed to decode Protobuf message: " prefix.
fn prost_message(error: &prost::DecodeError) -> String {
    let text = error.to_string();
    text.strip_prefix("failed to decode Protobuf message: ")
        .unwrap_or(&text)
        .to_owned()
}

/// The result of [`decode`]: the message and the unknown fields it carried.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded<T> {
    /// The message.
    pub value: T,
    /// Fields the schema does not have, skipped.
    pub unknown: Vec<UnknownField>,
}

/// Encodes `message` as gogo-protobuf does (the bytes of `runtime.Unknown.raw`).
///
/// # Errors
///
/// See [`Message::encode_fields`].
pub fn encode<M: Message>(message: &M) -> Result<Vec<u8>, EncodeError> {
    let mut buf = Vec::with_capacity(message.fields_len());
    message.encode_fields(&mut buf)?;
    Ok(buf)
}

/// Decodes a whole message within the document readers' default limits.
///
/// # Errors
///
/// When the bytes are not a valid message of this type, or hold more fields and messages than
/// the default node limit.
pub fn decode<M: Message>(bytes: &[u8]) -> Result<Decoded<M>, DecodeError> {
    decode_within(bytes, &Limits::default())
}

/// Decodes a whole message, refusing it as soon as the fields and messages read exceed
/// `limits.max_nodes` (so memory stays in proportion to the limit, not to the input).
///
/// The limits are the document readers' (`apfkit_runtime::scheme::Limits`; its byte limit is
/// the caller's to hold): every field read and every message entered counts as a node (a
/// protobuf field can be two bytes, so the count is taken as the bytes are read, before the
/// object grows). The decoded object is then measured as JSON would be ([`measure`]) before it
/// is turned into JSON: Go struct values that the wire leaves out appear there, so an object
/// can be larger than its message.
///
/// # Errors
///
/// When the bytes are not a valid message of this type, or exceed the node limit (the error's
/// `exceeded` says so).
pub fn decode_within<M: Message>(
    mut bytes: &[u8],
    limits: &Limits,
) -> Result<Decoded<M>, DecodeError> {
    let mut decoder = Decoder::new(limits);
    let mut value = M::default();
    merge_fields(&mut value, &mut bytes, &mut decoder)?;
    value.finish();
    Ok(Decoded {
        value,
        unknown: decoder.unknown,
    })
}

fn merge_fields<M: Message>(
    value: &mut M,
    buf: &mut &[u8],
    decoder: &mut Decoder,
) -> Result<(), DecodeError> {
    while !buf.is_empty() {
        let (number, wire) = pe::decode_key(buf).map_err(|e| decoder.error(prost_message(&e)))?;
        decoder.count(1)?;
        value.merge_field(number, wire, buf, decoder)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Writing. Every function writes the key of field `number` and the value.

/// Length of a key.
pub fn key_len(number: u32) -> usize {
    pe::key_len(number)
}

/// Writes a string (`bytes` on the wire).
pub fn put_string(buf: &mut Vec<u8>, number: u32, value: &str) {
    pe::encode_key(number, WireType::LengthDelimited, buf);
    pe::encode_varint(value.len() as u64, buf);
    buf.extend_from_slice(value.as_bytes());
}

/// Length of [`put_string`].
pub fn string_len(number: u32, value: &str) -> usize {
    key_len(number) + pe::encoded_len_varint(value.len() as u64) + value.len()
}

/// Writes an `int32` (negative numbers take ten bytes, as Go writes them).
pub fn put_int32(buf: &mut Vec<u8>, number: u32, value: i32) {
    put_int64(buf, number, i64::from(value));
}

/// Length of [`put_int32`].
pub fn int32_len(number: u32, value: i32) -> usize {
    int64_len(number, i64::from(value))
}

/// Writes an `int64`.
pub fn put_int64(buf: &mut Vec<u8>, number: u32, value: i64) {
    pe::encode_key(number, WireType::Varint, buf);
    pe::encode_varint(value as u64, buf);
}

/// Length of [`put_int64`].
pub fn int64_len(number: u32, value: i64) -> usize {
    key_len(number) + pe::encoded_len_varint(value as u64)
}

/// Writes a `bool`.
pub fn put_bool(buf: &mut Vec<u8>, number: u32, value: bool) {
    put_int64(buf, number, i64::from(value));
}

/// Length of [`put_bool`].
pub fn bool_len(number: u32, _value: bool) -> usize {
    key_len(number) + 1
}

/// Writes an embedded message.
///
/// # Errors
///
/// See [`Message::encode_fields`].
pub fn put_message<M: Message>(
    buf: &mut Vec<u8>,
    number: u32,
    value: &M,
) -> Result<(), EncodeError> {
    pe::encode_key(number, WireType::LengthDelimited, buf);
    pe::encode_varint(value.fields_len() as u64, buf);
    value.encode_fields(buf)
}

/// Length of [`put_message`].
pub fn message_len<M: Message>(number: u32, value: &M) -> usize {
    let len = value.fields_len();
    key_len(number) + pe::encoded_len_varint(len as u64) + len
}

/// Writes an empty embedded message: a Go struct value that Rust keeps as `None`.
pub fn put_empty(buf: &mut Vec<u8>, number: u32) {
    pe::encode_key(number, WireType::LengthDelimited, buf);
    buf.push(0);
}

/// Length of [`put_empty`].
pub fn empty_len(number: u32) -> usize {
    key_len(number) + 1
}

/// Writes a `map<string, string>` entry per key, in the map's (sorted) order.
pub fn put_string_map<'a>(
    buf: &mut Vec<u8>,
    number: u32,
    map: impl IntoIterator<Item = (&'a String, &'a String)>,
) {
    for (key, value) in map {
        let len = string_len(1, key) + string_len(2, value);
        pe::encode_key(number, WireType::LengthDelimited, buf);
        pe::encode_varint(len as u64, buf);
        put_string(buf, 1, key);
        put_string(buf, 2, value);
    }
}

/// Length of [`put_string_map`].
pub fn string_map_len<'a>(
    number: u32,
    map: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> usize {
    map_len(number, map, |value| string_len(2, value))
}

/// Length of the entries of a `map<string, V>`, each value's field as `value_len` counts it.
fn map_len<'a>(
    number: u32,
    map: impl IntoIterator<Item = (&'a String, &'a String)>,
    value_len: impl Fn(&str) -> usize,
) -> usize {
    map.into_iter()
        .map(|(key, value)| {
            let len = string_len(1, key) + value_len(value);
            key_len(number) + pe::encoded_len_varint(len as u64) + len
        })
        .sum()
}

/// Writes a `[]byte` kept as base64 text (`format: byte`).
///
/// # Errors
///
/// When `text` is not base64.
pub fn put_base64(
    buf: &mut Vec<u8>,
    number: u32,
    field: &'static str,
    text: &str,
) -> Result<(), EncodeError> {
    let bytes = base64_decode(text).map_err(|err| EncodeError {
        field,
        message: format!("not base64: {err}"),
    })?;
    pe::encode_key(number, WireType::LengthDelimited, buf);
    pe::encode_varint(bytes.len() as u64, buf);
    buf.extend_from_slice(&bytes);
    Ok(())
}

/// Length of [`put_base64`]; text that is not base64 counts as empty (writing it fails).
pub fn base64_len(number: u32, text: &str) -> usize {
    let len = base64_decode(text).map(|b| b.len()).unwrap_or(0);
    key_len(number) + pe::encoded_len_varint(len as u64) + len
}

fn base64_decode(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text)
}

/// The seconds of a `metav1.Time`, as Go's `ProtoTime` writes them.
fn time_seconds(time: &Time) -> i64 {
    time.0.as_second()
}

/// Writes a `metav1.Time`: `seconds` and a zero `nanos`; `None` is Go's zero time, an empty
/// message.
pub fn put_time(buf: &mut Vec<u8>, number: u32, time: Option<&Time>) {
    pe::encode_key(number, WireType::LengthDelimited, buf);
    match time {
        Some(time) => {
            let seconds = time_seconds(time);
            pe::encode_varint((int64_len(1, seconds) + int64_len(2, 0)) as u64, buf);
            put_int64(buf, 1, seconds);
            put_int64(buf, 2, 0);
        }
        None => buf.push(0),
    }
}

/// Length of [`put_time`].
pub fn time_len(number: u32, time: Option<&Time>) -> usize {
    let len = time.map_or(0, |t| int64_len(1, time_seconds(t)) + int64_len(2, 0));
    key_len(number) + pe::encoded_len_varint(len as u64) + len
}

/// Writes a `metav1.FieldsV1`: its one field `raw` holds the JSON text (compact, keys sorted
/// as the server writes field sets).
pub fn put_fields_v1(buf: &mut Vec<u8>, number: u32, fields: &FieldsV1) {
    let raw = fields_v1_raw(fields);
    pe::encode_key(number, WireType::LengthDelimited, buf);
    pe::encode_varint(
        (key_len(1) + pe::encoded_len_varint(raw.len() as u64) + raw.len()) as u64,
        buf,
    );
    pe::encode_key(1, WireType::LengthDelimited, buf);
    pe::encode_varint(raw.len() as u64, buf);
    buf.extend_from_slice(&raw);
}

/// Length of [`put_fields_v1`].
pub fn fields_v1_len(number: u32, fields: &FieldsV1) -> usize {
    let raw = fields_v1_raw(fields).len();
    let len = key_len(1) + pe::encoded_len_varint(raw as u64) + raw;
    key_len(number) + pe::encoded_len_varint(len as u64) + len
}

fn fields_v1_raw(fields: &FieldsV1) -> Vec<u8> {
    serde_json::to_vec(&fields.0).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Reading. Every function reads the value of a field whose key has just been read.

fn expect(wire: WireType, expected: WireType, decoder: &Decoder) -> Result<(), DecodeError> {
    if wire == expected {
        Ok(())
    } else {
        Err(decoder.error(format!(
            "wire type {} where {} was expected",
            wire_name(wire),
            wire_name(expected)
        )))
    }
}

fn varint(buf: &mut &[u8], decoder: &Decoder) -> Result<u64, DecodeError> {
    pe::decode_varint(buf).map_err(|e| decoder.error(prost_message(&e)))
}

/// The bytes of a length-delimited value.
fn delimited<'a>(
    wire: WireType,
    buf: &mut &'a [u8],
    decoder: &Decoder,
) -> Result<&'a [u8], DecodeError> {
    expect(wire, WireType::LengthDelimited, decoder)?;
    let len = varint(buf, decoder)?;
    let len = usize::try_from(len)
        .ok()
        .filter(|&len| len <= buf.len())
        .ok_or_else(|| {
            decoder.error(format!(
                "length {len} runs past the end of the message ({} bytes left)",
                buf.len()
            ))
        })?;
    let (value, rest) = buf.split_at(len);
    *buf = rest;
    Ok(value)
}

/// Reads a string.
///
/// # Errors
///
/// Wrong wire type, truncation or invalid UTF-8.
pub fn get_string(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &Decoder,
) -> Result<String, DecodeError> {
    let bytes = delimited(wire, buf, decoder)?;
    String::from_utf8(bytes.to_vec()).map_err(|_| decoder.error("string is not valid UTF-8"))
}

/// Reads an `int32` (Go keeps the low 32 bits of the varint).
///
/// # Errors
///
/// Wrong wire type or truncation.
pub fn get_int32(wire: WireType, buf: &mut &[u8], decoder: &Decoder) -> Result<i32, DecodeError> {
    expect(wire, WireType::Varint, decoder)?;
    Ok(varint(buf, decoder)? as i32)
}

/// Reads an `int64`.
///
/// # Errors
///
/// Wrong wire type or truncation.
pub fn get_int64(wire: WireType, buf: &mut &[u8], decoder: &Decoder) -> Result<i64, DecodeError> {
    expect(wire, WireType::Varint, decoder)?;
    Ok(varint(buf, decoder)? as i64)
}

/// Reads a `bool` (any non-zero varint is true).
///
/// # Errors
///
/// Wrong wire type or truncation.
pub fn get_bool(wire: WireType, buf: &mut &[u8], decoder: &Decoder) -> Result<bool, DecodeError> {
    expect(wire, WireType::Varint, decoder)?;
    Ok(varint(buf, decoder)? != 0)
}

/// Reads an embedded message into `value`, merging with what it already holds.
///
/// # Errors
///
/// Wrong wire type, truncation or an error inside the message.
pub fn get_message<M: Message>(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
    value: &mut M,
) -> Result<(), DecodeError> {
    let mut inner = delimited(wire, buf, decoder)?;
    decoder.count(1)?;
    // Messages that hold themselves (a CRD's schemas) nest as deep as their bytes allow:
    // held to `Limits::max_depth`, as the JSON they become is.
    if decoder.depth >= decoder.max_depth {
        return Err(Exceeded::Depth(decoder.max_depth).error());
    }
    decoder.depth += 1;
    let merged = merge_fields(value, &mut inner, decoder);
    decoder.depth -= 1;
    merged?;
    value.finish();
    Ok(())
}

/// Reads one element of a repeated message field and appends it.
///
/// # Errors
///
/// See [`get_message`].
pub fn get_element<M: Message>(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
    list: &mut Vec<M>,
) -> Result<(), DecodeError> {
    decoder.enter_index(list.len());
    let mut value = M::default();
    get_message(wire, buf, decoder, &mut value)?;
    decoder.leave();
    list.push(value);
    Ok(())
}

/// Reads one `map<string, string>` entry (a missing key or value is empty, as in Go).
///
/// # Errors
///
/// Wrong wire types, truncation or invalid UTF-8.
pub fn get_string_entry(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
) -> Result<(String, String), DecodeError> {
    get_entry(wire, buf, decoder, |wire, inner, decoder| {
        get_string(wire, inner, decoder)
    })
}

/// Reads one `map<string, bytes>` entry, its value as base64 text (a missing key or value is
/// empty, as in Go).
///
/// # Errors
///
/// Wrong wire types, truncation or a key that is not UTF-8.
pub fn get_bytes_entry(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
) -> Result<(String, String), DecodeError> {
    get_entry(wire, buf, decoder, |wire, inner, decoder| {
        get_base64(wire, inner, decoder)
    })
}

/// Reads one map entry whose key is a string and whose value `value` reads as text.
fn get_entry(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
    value: impl Fn(WireType, &mut &[u8], &mut Decoder) -> Result<String, DecodeError>,
) -> Result<(String, String), DecodeError> {
    let mut inner = delimited(wire, buf, decoder)?;
    let (mut key, mut text) = (String::new(), String::new());
    while !inner.is_empty() {
        let (number, wire) =
            pe::decode_key(&mut inner).map_err(|e| decoder.error(prost_message(&e)))?;
        match number {
            1 => key = get_string(wire, &mut inner, decoder)?,
            2 => text = value(wire, &mut inner, decoder)?,
            _ => decoder.unknown(number, wire, &mut inner)?,
        }
    }
    Ok((key, text))
}

/// Writes a `map<string, bytes>` entry per key, in the map's (sorted) order, each value given
/// as base64 text.
///
/// # Errors
///
/// When a value is not base64.
pub fn put_bytes_map<'a>(
    buf: &mut Vec<u8>,
    number: u32,
    field: &'static str,
    map: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Result<(), EncodeError> {
    for (key, text) in map {
        let mut entry = Vec::new();
        put_string(&mut entry, 1, key);
        put_base64(&mut entry, 2, field, text)?;
        pe::encode_key(number, WireType::LengthDelimited, buf);
        pe::encode_varint(entry.len() as u64, buf);
        buf.extend_from_slice(&entry);
    }
    Ok(())
}

/// Reads a `metav1.MicroTime` (a `Timestamp`: `seconds`, `nanos`) as its seconds and
/// nanoseconds, the nanoseconds truncated to microseconds as apimachinery's `Unmarshal`
/// truncates them; the empty message is Go's zero time, `None`.
///
/// # Errors
///
/// Malformed message.
pub fn get_micro_time(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
) -> Result<Option<(i64, i32)>, DecodeError> {
    Ok(get_timestamp(wire, buf, decoder)?.map(|(seconds, nanos)| (seconds, nanos - nanos % 1000)))
}

/// Reads a `Timestamp` message (`seconds`, `nanos`), what `metav1.Time` and `MicroTime` are
/// written as; the empty message is `None` (Go's zero time).
fn get_timestamp(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
) -> Result<Option<(i64, i32)>, DecodeError> {
    let mut inner = delimited(wire, buf, decoder)?;
    if inner.is_empty() {
        return Ok(None);
    }
    let (mut seconds, mut nanos) = (0i64, 0i32);
    while !inner.is_empty() {
        let (number, wire) =
            pe::decode_key(&mut inner).map_err(|e| decoder.error(prost_message(&e)))?;
        match number {
            1 => seconds = get_int64(wire, &mut inner, decoder)?,
            2 => nanos = get_int32(wire, &mut inner, decoder)?,
            _ => decoder.unknown(number, wire, &mut inner)?,
        }
    }
    Ok(Some((seconds, nanos)))
}

/// Writes a `metav1.MicroTime` of `seconds` and `nanos` (already whole microseconds).
pub fn put_micro_time(buf: &mut Vec<u8>, number: u32, seconds: i64, nanos: i32) {
    pe::encode_key(number, WireType::LengthDelimited, buf);
    pe::encode_varint((int64_len(1, seconds) + int32_len(2, nanos)) as u64, buf);
    put_int64(buf, 1, seconds);
    put_int32(buf, 2, nanos);
}

/// The seconds and whole microseconds (as nanoseconds) of a `metav1.MicroTime`, as Go's
/// `ProtoMicroTime` writes them once apimachinery has truncated them.
fn micro_parts(time: &MicroTime) -> (i64, i32) {
    let nanos = time.0.subsec_nanosecond();
    (time.0.as_second(), nanos - nanos % 1000)
}

/// Writes a `metav1.MicroTime` value; `None` is Go's zero time, an empty message.
pub fn put_micro(buf: &mut Vec<u8>, number: u32, time: Option<&MicroTime>) {
    match time.map(micro_parts) {
        Some((seconds, nanos)) => put_micro_time(buf, number, seconds, nanos),
        None => put_time(buf, number, None),
    }
}

/// Length of [`put_micro`].
pub fn micro_len(number: u32, time: Option<&MicroTime>) -> usize {
    let len = time.map(micro_parts).map_or(0, |(seconds, nanos)| {
        int64_len(1, seconds) + int32_len(2, nanos)
    });
    key_len(number) + pe::encoded_len_varint(len as u64) + len
}

/// Reads a `metav1.MicroTime` value ([`get_micro_time`]); the empty message is Go's zero
/// time, `None`.
///
/// # Errors
///
/// Malformed message or a time outside the representable range.
pub fn get_micro(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
) -> Result<Option<MicroTime>, DecodeError> {
    let Some((seconds, nanos)) = get_micro_time(wire, buf, decoder)? else {
        return Ok(None);
    };
    k8s_openapi::jiff::Timestamp::new(seconds, nanos)
        .map(|t| Some(MicroTime(t)))
        .map_err(|_| {
            decoder.error(format!(
                "{seconds} seconds is outside the supported time range"
            ))
        })
}

/// Length of [`put_bytes_map`]; values that are not base64 count as empty (writing them
/// fails).
pub fn bytes_map_len<'a>(
    number: u32,
    map: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> usize {
    map_len(number, map, |text| base64_len(2, text))
}

/// Reads one `map<string, Message>` entry: its key, its value merged into `value` (a missing
/// value is the message's empty form, as in Go).
///
/// # Errors
///
/// Wrong wire types, truncation, invalid UTF-8 or an error inside the value.
pub fn get_message_entry<M: Message>(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
    value: &mut M,
) -> Result<String, DecodeError> {
    let mut inner = delimited(wire, buf, decoder)?;
    let (mut key, mut seen) = (String::new(), false);
    while !inner.is_empty() {
        let (number, wire) =
            pe::decode_key(&mut inner).map_err(|e| decoder.error(prost_message(&e)))?;
        match number {
            1 => key = get_string(wire, &mut inner, decoder)?,
            2 => {
                get_message(wire, &mut inner, decoder, value)?;
                seen = true;
            }
            _ => decoder.unknown(number, wire, &mut inner)?,
        }
    }
    if !seen {
        value.finish();
    }
    Ok(key)
}

/// Reads a `bytes` field as it is.
///
/// # Errors
///
/// Wrong wire type or truncation.
pub fn get_bytes<'a>(
    wire: WireType,
    buf: &mut &'a [u8],
    decoder: &Decoder,
) -> Result<&'a [u8], DecodeError> {
    delimited(wire, buf, decoder)
}

/// Reads a `double` (8 bytes, little-endian).
///
/// # Errors
///
/// Wrong wire type or truncation.
pub fn get_double(wire: WireType, buf: &mut &[u8], decoder: &Decoder) -> Result<f64, DecodeError> {
    expect(wire, WireType::SixtyFourBit, decoder)?;
    let Some((bytes, rest)) = buf.split_first_chunk::<8>() else {
        return Err(decoder.error("a double runs past the end of the message"));
    };
    *buf = rest;
    Ok(f64::from_le_bytes(*bytes))
}

/// Writes a `double`.
pub fn put_double(buf: &mut Vec<u8>, number: u32, value: f64) {
    pe::encode_key(number, WireType::SixtyFourBit, buf);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// Reads a `[]byte` as base64 text.
///
/// # Errors
///
/// Wrong wire type or truncation.
pub fn get_base64(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &Decoder,
) -> Result<String, DecodeError> {
    use base64::Engine as _;
    let bytes = delimited(wire, buf, decoder)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Reads a `metav1.Time`; the empty message is Go's zero time, `None`. Nanoseconds outside
/// 0..=999,999,999 carry into the seconds as Go's `time.Unix` carries them (k8s.io/apimachinery
/// `pkg/apis/meta/v1/time_proto.go`: `time.Unix(p.Seconds, int64(p.Nanos))`); the rest of a
/// second is then dropped, as `metav1.Time`'s JSON keeps whole seconds.
///
/// # Errors
///
/// Malformed message or seconds outside the representable range.
pub fn get_time(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
) -> Result<Option<Time>, DecodeError> {
    let Some((seconds, nanos)) = get_timestamp(wire, buf, decoder)? else {
        return Ok(None);
    };
    let seconds = whole_seconds(seconds, nanos).ok_or_else(|| {
        decoder.error(format!(
            "{seconds} seconds and {nanos} nanoseconds is outside the supported time range"
        ))
    })?;
    k8s_openapi::jiff::Timestamp::from_second(seconds)
        .map(|t| Some(Time(t)))
        .map_err(|_| {
            decoder.error(format!(
                "{seconds} seconds is outside the supported time range"
            ))
        })
}

/// The whole seconds of Go's `time.Unix(seconds, nanos)`: nanoseconds carried into the seconds
/// by floor division, so -1 ns is one second earlier. `None` on overflow.
fn whole_seconds(seconds: i64, nanos: i32) -> Option<i64> {
    seconds.checked_add(i64::from(nanos).div_euclid(1_000_000_000))
}

/// Reads a `metav1.FieldsV1`: its `raw` field must hold JSON.
///
/// # Errors
///
/// Malformed message or `raw` that is not JSON.
pub fn get_fields_v1(
    wire: WireType,
    buf: &mut &[u8],
    decoder: &mut Decoder,
) -> Result<FieldsV1, DecodeError> {
    let mut inner = delimited(wire, buf, decoder)?;
    let mut raw: &[u8] = b"null";
    while !inner.is_empty() {
        let (number, wire) =
            pe::decode_key(&mut inner).map_err(|e| decoder.error(prost_message(&e)))?;
        match number {
            1 => raw = delimited(wire, &mut inner, decoder)?,
            _ => decoder.unknown(number, wire, &mut inner)?,
        }
    }
    let value: serde_json::Value =
        serde_json::from_slice(raw).map_err(|e| decoder.error(format!("raw is not JSON: {e}")))?;
    // The JSON inside counts too: a field set can hold as many nodes as its bytes allow.
    let limits = Limits {
        max_depth: usize::MAX,
        max_nodes: decoder.max_nodes,
        ..Limits::default()
    };
    let nodes = measure(&value, &limits).map_err(Exceeded::error)?.nodes;
    decoder.count(nodes)?;
    Ok(FieldsV1(value))
}

// ---------------------------------------------------------------------------------------------
// Measuring a decoded object as JSON, without building it.

/// The size of a value as JSON: its nodes (objects, arrays, keys and values, as the document
/// readers count them) and its nesting (an object or array is one level).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    /// Nodes.
    pub nodes: usize,
    /// Deepest nesting.
    pub depth: usize,
}

/// Measures `value` as it would be serialized to JSON, stopping at the first limit exceeded.
/// Nothing is allocated: the value is serialized into a counter.
///
/// # Errors
///
/// The limit exceeded.
pub fn measure<T: serde::Serialize + ?Sized>(
    value: &T,
    limits: &Limits,
) -> Result<Shape, Exceeded> {
    let mut counter = Counter {
        shape: Shape::default(),
        level: 0,
        in_key: false,
        limits: *limits,
        exceeded: None,
    };
    let result = {
        let mut serializer = serde_json::Serializer::with_formatter(std::io::sink(), &mut counter);
        value.serialize(&mut serializer)
    };
    match (counter.exceeded, result) {
        (Some(exceeded), _) => Err(exceeded),
        // A value that does not serialize has no JSON shape; the encoder reports why.
        (None, _) => Ok(counter.shape),
    }
}

/// A `serde_json` formatter that counts instead of writing.
struct Counter {
    shape: Shape,
    level: usize,
    in_key: bool,
    limits: Limits,
    exceeded: Option<Exceeded>,
}

impl Counter {
    fn stop(&mut self, exceeded: Exceeded) -> std::io::Result<()> {
        self.exceeded = Some(exceeded);
        Err(std::io::Error::other("limit exceeded"))
    }

    fn node(&mut self) -> std::io::Result<()> {
        if self.in_key {
            return Ok(());
        }
        self.shape.nodes += 1;
        if self.shape.nodes > self.limits.max_nodes {
            return self.stop(Exceeded::Nodes(self.limits.max_nodes));
        }
        Ok(())
    }

    fn open(&mut self) -> std::io::Result<()> {
        self.node()?;
        self.level += 1;
        self.shape.depth = self.shape.depth.max(self.level);
        if self.level > self.limits.max_depth {
            return self.stop(Exceeded::Depth(self.limits.max_depth));
        }
        Ok(())
    }
}

macro_rules! count_scalars {
    ($($method:ident: $type:ty),* $(,)?) => {$(
        fn $method<W: ?Sized + std::io::Write>(&mut self, _: &mut W, _: $type) -> std::io::Result<()> {
            self.node()
        }
    )*};
}

impl serde_json::ser::Formatter for &mut Counter {
    fn write_null<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.node()
    }

    count_scalars!(
        write_bool: bool, write_i8: i8, write_i16: i16, write_i32: i32, write_i64: i64,
        write_i128: i128, write_u8: u8, write_u16: u16, write_u32: u32, write_u64: u64,
        write_u128: u128, write_f32: f32, write_f64: f64, write_number_str: &str,
        write_raw_fragment: &str,
    );

    fn begin_string<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.node()
    }

    fn end_string<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        Ok(())
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        _: &mut W,
        _: &str,
    ) -> std::io::Result<()> {
        Ok(())
    }

    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        _: &mut W,
        _: serde_json::ser::CharEscape,
    ) -> std::io::Result<()> {
        Ok(())
    }

    fn begin_array<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.open()
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.level -= 1;
        Ok(())
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        _: &mut W,
        _: bool,
    ) -> std::io::Result<()> {
        Ok(())
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.open()
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.level -= 1;
        Ok(())
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        _: &mut W,
        _: bool,
    ) -> std::io::Result<()> {
        // The key is one node, whatever it is written as (a string, or a number in quotes).
        self.node()?;
        self.in_key = true;
        Ok(())
    }

    fn end_object_key<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.in_key = false;
        Ok(())
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        Ok(())
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        Ok(())
    }
}
