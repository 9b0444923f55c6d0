//! Reading documents: a stream of JSON values, or a multi-document YAML stream, into JSON values,
//! one document at a time from any reader, with limits that hold while reading.
//!
//! Each document is bounded by [`Limits`]: its size in bytes (checked as the bytes arrive, so a
//! 1 GB line is refused after `max_document_bytes`, not after it was buffered), its nesting
//! depth and its node count. The same limits apply to JSON and YAML, so whatever one format
//! accepts can be written in the other and read back. YAML alias bombs are refused by
//! serde_yaml_ng; duplicate keys are an error in YAML (as in kubectl) and are reported with
//! their paths for JSON, where kube-apiserver's field validation decides what they mean.
//!
//! JSON is cut into documents and scanned without building values (`json_input`), so that the
//! scheme can decode each straight into its type; YAML is cut at its markers and each document
//! parsed alone (`yaml_input`), a served object straight into its type when nothing about it
//! needs reporting; protobuf is framed (`protobuf_input`).

use std::io::{BufRead, BufReader, Read};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::json_input::{self, JsonDocument, Position};
use super::protobuf_input;
use super::yaml_input::{self, YamlDocument};

/// Per-document limits of the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one document (8 MiB by default; kube-apiserver refuses request bodies over
    /// 3 MiB). A YAML document is measured from its `---` marker line to the next marker.
    pub max_document_bytes: usize,
    /// Nesting of objects and arrays (64 by default, and at most [`MAX_DEPTH_LIMIT`]).
    pub max_depth: usize,
    /// Objects, arrays, keys and scalars of one document (1,000,000 by default).
    pub max_nodes: usize,
}

impl Limits {
    /// The depth and node limits, for the protobuf decoder.
    pub fn protobuf(&self) -> apfkit_types::wire::protobuf::Limits {
        apfkit_types::wire::protobuf::Limits {
            max_depth: self.max_depth,
            max_nodes: self.max_nodes,
        }
    }

    /// Whether a document of this nesting depth and node count is within the limits.
    pub(super) fn check_shape(&self, depth: usize, nodes: usize) -> Result<(), InputError> {
        if depth > self.max_depth {
            return Err(InputError::TooDeep {
                limit: self.max_depth,
            });
        }
        if nodes > self.max_nodes {
            return Err(InputError::TooManyNodes {
                limit: self.max_nodes,
            });
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_document_bytes: 8 << 20,
            max_depth: 64,
            max_nodes: 1_000_000,
        }
    }
}

/// The deepest nesting [`Limits::max_depth`] may allow: far deeper than Kubernetes objects, and
/// shallow enough for every reader's recursion on a 2 MiB thread stack.
pub const MAX_DEPTH_LIMIT: usize = 64;

/// Why input could not be read as documents.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The bytes are not UTF-8.
    #[error("not valid UTF-8 at byte {offset}")]
    Utf8 {
        /// Offset of the first bad byte.
        offset: usize,
    },
    /// JSON syntax error, nesting too deep for the parser, and the like.
    #[error("invalid JSON at line {line}, column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// YAML syntax error or an exceeded budget.
    #[error("invalid YAML: {0}")]
    Yaml(String),
    /// The document is larger than [`Limits::max_document_bytes`].
    #[error("document {}larger than {limit} bytes", line.map(|l| format!("starting at line {l} is ")).unwrap_or_default())]
    TooLarge {
        /// The limit.
        limit: usize,
        /// For YAML, the line where the document began (its `---` marker, or line 1). The YAML
        /// parser reads ahead, so the index of the error may lag behind this document.
        line: Option<u64>,
    },
    /// The document nests deeper than [`Limits::max_depth`].
    #[error("document nested deeper than {limit} levels")]
    TooDeep {
        /// The limit.
        limit: usize,
    },
    /// The document has more nodes than [`Limits::max_nodes`].
    #[error("document has more than {limit} nodes (objects, arrays, keys and values)")]
    TooManyNodes {
        /// The limit.
        limit: usize,
    },
    /// Kubernetes protobuf that does not decode, or a stream of it cut short.
    #[error("invalid protobuf: {0}")]
    Protobuf(String),
    /// Reading failed.
    #[error("{0}")]
    Io(std::io::Error),
}

/// An [`InputError`] and the index of the document it happened in.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct ReadError {
    /// Index of the document being read (0-based, among non-empty documents).
    pub document: usize,
    /// What went wrong.
    pub error: InputError,
}

/// One document of the input, with its 0-based index in the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Position among the non-empty documents of the input (the YAML parser drops empty ones).
    pub index: usize,
    /// The document.
    pub value: Value,
    /// Paths of keys that appear more than once in one JSON object (the last one is kept, as in
    /// Go). kube-apiserver's strict field validation rejects them, and warns in `Warn` mode.
    pub duplicate_fields: Vec<String>,
    /// For protobuf input: paths of the fields the object's schema does not have, which the
    /// decoder skipped (`spec.#9`: field number 9). JSON and YAML documents keep theirs in
    /// `value`, where conversion finds them.
    pub unknown_fields: Vec<String>,
}

/// Reads every document of `bytes` with the default [`Limits`]. Input that starts with
/// Kubernetes' protobuf prefix `k8s\0` is one protobuf object, and input that starts with a
/// length (4 bytes big-endian, or a varint) followed by the prefix is a stream of them; input
/// whose first non-blank character is `{` or `[` is read as a sequence of JSON values; anything
/// else as YAML. Empty and null YAML documents are skipped.
pub fn read_documents(bytes: &[u8]) -> Result<Vec<Document>, InputError> {
    let protobuf = protobuf_input::sniff(&bytes[..bytes.len().min(protobuf_input::HEAD)]);
    if let (None, Err(e)) = (protobuf, std::str::from_utf8(bytes)) {
        return Err(InputError::Utf8 {
            offset: e.valid_up_to(),
        });
    }
    let mut documents = Vec::new();
    read_each(bytes, &Limits::default(), |document| {
        documents.push(document);
        Ok::<_, ReadError>(())
    })
    .map_err(|e| e.error)?;
    Ok(documents)
}

/// Calls `each` with every document of `reader`, in order, holding one document at a time.
/// The format is sniffed as in [`read_documents`]. Stops at the first error, from the input or
/// from `each`.
pub fn read_each<E: From<ReadError>>(
    reader: impl Read,
    limits: &Limits,
    mut each: impl FnMut(Document) -> Result<(), E>,
) -> Result<(), E> {
    read_each_in(reader, limits, false, |input| match input {
        Input::Json(json) => each(json.to_document().map_err(|error| ReadError {
            document: json.index,
            error,
        })?),
        Input::Yaml(yaml) => each(yaml.to_document().map_err(|error| ReadError {
            document: yaml.index,
            error,
        })?),
        Input::Value(document) => each(document),
    })
}

/// One document as the reader hands it over: JSON still in its bytes, checked against the
/// limits (a served object with nothing to report already decoded into its typed form, which
/// the scheme takes), a YAML object of a served kind with nothing to report, decoded into its
/// typed form, or a built value (other YAML, and protobuf).
#[derive(Debug)]
pub enum Input<'a> {
    /// A JSON document.
    Json(JsonDocument<'a>),
    /// A YAML document decoded into its version's type.
    Yaml(YamlDocument<'a>),
    /// A YAML or protobuf document.
    Value(Document),
}

impl Input<'_> {
    /// The document's 0-based index in the stream.
    pub fn index(&self) -> usize {
        match self {
            Input::Json(json) => json.index,
            Input::Yaml(yaml) => yaml.index,
            Input::Value(document) => document.index,
        }
    }
}

/// Like [`read_each`], but JSON documents are handed over as bytes, unbuilt, and YAML objects
/// of served kinds with nothing to report decoded into their types: the one reader of every
/// format, for callers that convert without building values.
pub fn read_each_input<E: From<ReadError>>(
    reader: impl Read,
    limits: &Limits,
    each: impl FnMut(Input<'_>) -> Result<(), E>,
) -> Result<(), E> {
    read_each_in(reader, limits, true, each)
}

/// [`read_each_input`]; JSON and YAML objects of served kinds are decoded into their types as
/// they are read if `decode`, for a caller that will convert them.
fn read_each_in<E: From<ReadError>>(
    reader: impl Read,
    limits: &Limits,
    decode: bool,
    mut each: impl FnMut(Input<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let limits = Limits {
        max_depth: limits.max_depth.min(MAX_DEPTH_LIMIT),
        ..*limits
    };
    let mut reader = reader;
    let mut head = Vec::with_capacity(protobuf_input::HEAD);
    (&mut reader)
        .take(protobuf_input::HEAD as u64)
        .read_to_end(&mut head)
        .map_err(|e| ReadError {
            document: 0,
            error: InputError::Io(e),
        })?;
    let reader = std::io::Cursor::new(head).chain(reader);
    if let Some(framing) = protobuf_input::sniff(reader.get_ref().0.get_ref()) {
        return protobuf_input::read_each(reader, framing, &limits, |d| each(Input::Value(d)));
    }
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let (first, skipped) = first_non_blank(&mut reader).map_err(|e| ReadError {
        document: 0,
        error: InputError::Io(e),
    })?;
    if first.is_some_and(|b| b == b'{' || b == b'[') {
        return json_input::read_each(reader, &limits, skipped, decode, |d| each(Input::Json(d)));
    }
    yaml_input::read_each(reader, &limits, skipped, decode, each)
}

/// The first byte that is not whitespace or a UTF-8 byte-order mark, without consuming it, and
/// where it stands in the stream.
fn first_non_blank(reader: &mut impl BufRead) -> std::io::Result<(Option<u8>, Position)> {
    let mut position = Position::START;
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok((None, position));
        }
        let skip = if buffer.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
                Some(0) => return Ok((Some(buffer[0]), position)),
                Some(n) => n,
                None => buffer.len(),
            }
        };
        // Whitespace before a document is harmless to drop.
        position = position.after(&buffer[..skip]);
        reader.consume(skip);
    }
}

/// A JSON value with what the limits and field validation need to know about it, measured
/// while it is built.
pub(super) struct Checked {
    pub(super) value: Value,
    depth: usize,
    nodes: usize,
    /// Paths of keys repeated in one object.
    pub(super) duplicates: Vec<String>,
}

impl Checked {
    fn scalar(value: Value) -> Self {
        Checked {
            value,
            depth: 0,
            nodes: 1,
            duplicates: Vec::new(),
        }
    }

    /// Whether the value is within the depth and node limits.
    pub(super) fn check(&self, limits: &Limits) -> Result<(), InputError> {
        limits.check_shape(self.depth, self.nodes)
    }

    pub(super) fn into_document(self, index: usize) -> Document {
        Document {
            index,
            value: self.value,
            duplicate_fields: self.duplicates,
            unknown_fields: Vec::new(),
        }
    }
}

/// `parent` + `child` as a field path: `spec.rules[0].subjects`.
fn join_path(parent: &str, child: &str) -> String {
    if child.is_empty() {
        parent.to_owned()
    } else if child.starts_with('[') || parent.is_empty() {
        format!("{parent}{child}")
    } else {
        format!("{parent}.{child}")
    }
}

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Checked, E> {
        Ok(Checked::scalar(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Checked, E> {
        Ok(Checked::scalar(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Checked, E> {
        Ok(Checked::scalar(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Checked, E> {
        Ok(Checked::scalar(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Checked, E> {
        Ok(Checked::scalar(Value::String(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Checked, E> {
        Ok(Checked::scalar(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked::scalar(Value::Null))
    }

    fn visit_none<E>(self) -> Result<Checked, E> {
        Ok(Checked::scalar(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        let mut items = Vec::new();
        let (mut depth, mut nodes, mut duplicates) = (0, 1, Vec::new());
        while let Some(item) = seq.next_element::<Checked>()? {
            depth = depth.max(item.depth);
            nodes += item.nodes;
            let index = format!("[{}]", items.len());
            duplicates.extend(item.duplicates.iter().map(|p| join_path(&index, p)));
            items.push(item.value);
        }
        Ok(Checked {
            value: Value::Array(items),
            depth: depth + 1,
            nodes,
            duplicates,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Checked, A::Error> {
        let mut map = Map::new();
        let (mut depth, mut nodes, mut duplicates) = (0, 1, Vec::new());
        while let Some(key) = access.next_key::<String>()? {
            let item: Checked = access.next_value()?;
            depth = depth.max(item.depth);
            nodes += 1 + item.nodes;
            if map.contains_key(&key) {
                duplicates.push(key.clone());
            }
            duplicates.extend(item.duplicates.iter().map(|p| join_path(&key, p)));
            map.insert(key, item.value);
        }
        Ok(Checked {
            value: Value::Object(map),
            depth: depth + 1,
            nodes,
            duplicates,
        })
    }
}

/// The nesting depth of a value (0 for a scalar), measured without recursion so that a
/// caller-built value of any depth cannot overflow the stack.
pub fn depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        deepest = deepest.max(level + 1);
        stack.extend(children.map(|child| (child, level + 1)));
    }
    deepest
}
