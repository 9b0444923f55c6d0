//! What the readers produce, and the limits they hold every document to: the vocabulary that
//! the JSON, YAML and protobuf readers share, below all of them.

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::options::UnknownFields;
use super::report::{SchemeError, Warning};

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

impl Document {
    /// What the reader found about the document's fields (keys repeated in one object, and for
    /// protobuf the fields its type lacks), dropped, reported or refused as `unknown` says.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::UnknownFields`](super::ErrorKind::UnknownFields) in `Strict` mode.
    pub fn reported_fields(&self, unknown: UnknownFields) -> Result<Vec<Warning>, SchemeError> {
        let repeated = self
            .duplicate_fields
            .iter()
            .map(|path| Warning::DuplicateField { path: path.clone() });
        let lacking = self
            .unknown_fields
            .iter()
            .map(|path| Warning::UnknownField { path: path.clone() });
        let mut warnings = Vec::new();
        unknown.apply(repeated.chain(lacking).collect(), &mut warnings)?;
        Ok(warnings)
    }
}

/// Where a byte of the stream is: its 1-based line and the bytes before it on that line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    pub(super) line: usize,
    pub(super) column: usize,
}

impl Position {
    pub(super) const START: Position = Position { line: 1, column: 0 };

    /// The position after `bytes`, which start here.
    pub(super) fn after(self, bytes: &[u8]) -> Position {
        match memchr::memrchr(b'\n', bytes) {
            Some(last) => Position {
                line: self.line + memchr::memchr_iter(b'\n', bytes).count(),
                column: bytes.len() - last - 1,
            },
            None => Position {
                line: self.line,
                column: self.column + bytes.len(),
            },
        }
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

/// The hashes of an object's keys, to tell (with false alarms on collisions) whether one
/// repeats; the first few are kept without allocating.
#[derive(Default)]
pub(super) struct KeyHashes {
    inline: [u64; INLINE_KEYS],
    count: usize,
    /// Every hash, once an object has more than `INLINE_KEYS` keys.
    spilled: rustc_hash::FxHashSet<u64>,
}

const INLINE_KEYS: usize = 16;

impl KeyHashes {
    /// Records `key`; false if its hash was seen before.
    pub(super) fn insert(&mut self, key: &str) -> bool {
        use std::hash::BuildHasher;
        let hash = rustc_hash::FxBuildHasher.hash_one(key);
        if self.count < INLINE_KEYS {
            let seen = self.inline[..self.count].contains(&hash);
            self.inline[self.count] = hash;
            self.count += 1;
            return !seen;
        }
        if self.count == INLINE_KEYS {
            self.spilled.extend(self.inline);
        }
        self.count += 1;
        self.spilled.insert(hash)
    }
}
