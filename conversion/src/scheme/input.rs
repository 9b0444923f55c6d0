//! Reading documents: a stream of JSON values, or a multi-document YAML stream, into JSON values,
//! one document at a time from any reader, with limits that hold while reading.
//!
//! Each document is bounded by [`Limits`]: its size in bytes (checked as the bytes arrive, so a
//! 1 GB line is refused after `max_document_bytes`, not after it was buffered), its nesting
//! depth and its node count. The same limits apply to JSON and YAML, so whatever one format
//! accepts can be written in the other and read back. YAML alias bombs are bounded by
//! serde-saphyr's budget; duplicate keys are an error in YAML (as in kubectl) and are reported
//! with their paths for JSON, where kube-apiserver's field validation decides what they mean.

use std::cell::Cell;
use std::io::{BufRead, BufReader, Read};
use std::rc::Rc;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// Per-document limits of the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of one document (8 MiB by default; kube-apiserver refuses request bodies over
    /// 3 MiB). The YAML parser reads ahead, so a YAML document may exceed it by up to 64 KiB.
    pub max_document_bytes: usize,
    /// Nesting of objects and arrays (64 by default, serde-saphyr's default, and at most
    /// [`MAX_DEPTH_LIMIT`]).
    pub max_depth: usize,
    /// Objects, arrays, keys and scalars of one document (1,000,000 by default).
    pub max_nodes: usize,
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

/// The deepest nesting [`Limits::max_depth`] may allow: deeper YAML documents overflow a 2 MiB
/// thread stack in the YAML parser of an unoptimized build. Kubernetes objects are far
/// shallower.
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
    #[error("document larger than {limit} bytes (the limit can be raised)")]
    TooLarge {
        /// The limit.
        limit: usize,
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
}

/// Reads every document of `bytes` with the default [`Limits`]. Input whose first non-blank
/// character is `{` or `[` is read as a sequence of JSON values; anything else as YAML. Empty
/// and null YAML documents are skipped.
pub fn read_documents(bytes: &[u8]) -> Result<Vec<Document>, InputError> {
    if let Err(e) = std::str::from_utf8(bytes) {
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
    let limits = Limits {
        max_depth: limits.max_depth.min(MAX_DEPTH_LIMIT),
        ..*limits
    };
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let json = first_non_blank(&mut reader)
        .map_err(|e| ReadError {
            document: 0,
            error: InputError::Io(e),
        })?
        .is_some_and(|b| b == b'{' || b == b'[');
    let max_bytes = limits.max_document_bytes as u64;
    let slack = if json { 0 } else { YAML_READ_AHEAD };
    let allowance = Rc::new(Cell::new(max_bytes + slack));
    let taken = Rc::new(Cell::new(0));
    let mut metered = Metered {
        inner: reader,
        taken: Rc::clone(&taken),
        limit_at: Rc::clone(&allowance),
    };
    let too_large = || InputError::TooLarge {
        limit: limits.max_document_bytes,
    };
    let fail = |document, error| ReadError { document, error };
    if json {
        let mut stream = serde_json::Deserializer::from_reader(&mut metered).into_iter::<Checked>();
        let mut index = 0;
        while let Some(next) = stream.next() {
            let checked = next.map_err(|e| {
                let over = e.io_error_kind() == Some(std::io::ErrorKind::FileTooLarge);
                fail(index, if over { too_large() } else { json_error(&e) })
            })?;
            allowance.set(stream.byte_offset() as u64 + max_bytes);
            checked.check(&limits).map_err(|e| fail(index, e))?;
            each(checked.into_document(index))?;
            index += 1;
        }
        return Ok(());
    }
    let options = yaml_options(&limits);
    let mut index = 0;
    let documents = serde_saphyr::read_with_options::<_, Value>(&mut metered, options);
    for value in documents {
        let value = value.map_err(|e| {
            let error = match io_kind(&e) {
                Some(std::io::ErrorKind::FileTooLarge) => too_large(),
                _ => InputError::Yaml(e.to_string()),
            };
            fail(index, error)
        })?;
        if value.is_null() {
            continue;
        }
        each(Document {
            index,
            value,
            duplicate_fields: Vec::new(),
        })?;
        index += 1;
        // The parser reads ahead: the next document is measured from where the reader
        // stands now.
        allowance.set(taken.get() + max_bytes + slack);
    }
    Ok(())
}

fn json_error(error: &serde_json::Error) -> InputError {
    InputError::Json {
        line: error.line(),
        column: error.column(),
        message: error.to_string(),
    }
}

/// Whether a serde-saphyr error wraps an I/O error, and of which kind.
fn io_kind(error: &serde_saphyr::Error) -> Option<std::io::ErrorKind> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        source = current.source();
    }
    // serde-saphyr keeps the I/O error's text when it does not expose the error itself.
    error
        .to_string()
        .contains(DOCUMENT_TOO_LARGE)
        .then_some(std::io::ErrorKind::FileTooLarge)
}

fn yaml_options(limits: &Limits) -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = None;
    budget.max_depth = limits.max_depth;
    budget.max_nodes = limits.max_nodes;
    budget.max_events = limits.max_nodes.saturating_mul(2).saturating_add(16);
    budget.max_total_scalar_bytes = limits.max_document_bytes;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// How far serde-saphyr reads ahead of the document it yields (its 8 KiB buffered reader and
/// ring buffer, with room to spare): YAML documents are measured from where the reader stood
/// when the previous document was yielded, and may exceed the limit by this much.
const YAML_READ_AHEAD: u64 = 64 << 10;

const DOCUMENT_TOO_LARGE: &str = "apfkit: document over the byte limit";

/// A reader that fails once more bytes were taken than the current document may have.
struct Metered<R> {
    inner: R,
    /// Bytes taken from `inner` so far.
    taken: Rc<Cell<u64>>,
    /// The stream offset past which the current document is too large.
    limit_at: Rc<Cell<u64>>,
}

impl<R: Read> Read for Metered<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // One byte past the limit tells that there is more.
        let taken = self.taken.get();
        let allowed = self.limit_at.get().saturating_sub(taken).saturating_add(1);
        let take = buf
            .len()
            .min(usize::try_from(allowed).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..take])?;
        self.taken.set(taken + n as u64);
        if taken + n as u64 > self.limit_at.get() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                DOCUMENT_TOO_LARGE,
            ));
        }
        Ok(n)
    }
}

/// The first byte that is not whitespace or a UTF-8 byte-order mark, without consuming it.
fn first_non_blank(reader: &mut impl BufRead) -> std::io::Result<Option<u8>> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(None);
        }
        let skip = if buffer.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
                Some(0) => return Ok(Some(buffer[0])),
                Some(n) => n,
                None => buffer.len(),
            }
        };
        // Whitespace before a document is harmless to drop.
        reader.consume(skip);
    }
}

/// A JSON value with what the limits and field validation need to know about it, measured
/// while it is built.
struct Checked {
    value: Value,
    depth: usize,
    nodes: usize,
    duplicates: Vec<String>,
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

    fn check(&self, limits: &Limits) -> Result<(), InputError> {
        if self.depth > limits.max_depth {
            return Err(InputError::TooDeep {
                limit: limits.max_depth,
            });
        }
        if self.nodes > limits.max_nodes {
            return Err(InputError::TooManyNodes {
                limit: limits.max_nodes,
            });
        }
        Ok(())
    }

    fn into_document(self, index: usize) -> Document {
        Document {
            index,
            value: self.value,
            duplicate_fields: self.duplicates,
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
