//! Reading a stream of JSON values without building them: the stream is cut into documents
//! in a buffer, and each document is scanned once, allocation-free, for what the limits and
//! the scheme need to know (nesting depth, node count, whether an object repeats a key, the
//! top-level `apiVersion` and `kind`). The document's bytes then go to the typed decoder, or,
//! when asked, are built into a [`Document`](super::Document).
//!
//! Positions in syntax errors are the stream's (line and column), as if the whole stream had
//! been parsed at once.

use std::borrow::Cow;
use std::io::Read;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess};
use serde::de::{Error as _, Visitor};

use super::input::{InputError, Limits, ReadError};

/// Bytes asked of the reader at a time, at least.
const CHUNK: usize = 64 << 10;

/// One JSON document of a stream: its bytes, and what a scan found in them. The document is
/// within the reader's [`Limits`].
#[derive(Debug, Clone)]
pub struct JsonDocument<'a> {
    /// Position among the documents of the stream (0-based).
    pub index: usize,
    /// The document's bytes (with the blanks before it).
    pub bytes: &'a [u8],
    /// The top-level `apiVersion`, when it is a string.
    pub api_version: Option<Cow<'a, str>>,
    /// The top-level `kind`, when it is a string.
    pub kind: Option<Cow<'a, str>>,
    /// Whether some object of the document may repeat a key. `false` is certain; `true` may
    /// be a hash collision, so whoever needs the duplicates' paths reads them again.
    pub may_repeat_keys: bool,
}

impl<'a> JsonDocument<'a> {
    /// Scans the single JSON value `bytes` (blanks around it allowed) against `limits`.
    ///
    /// # Errors
    ///
    /// Invalid JSON, trailing data, or a value over the limits.
    pub fn parse(bytes: &'a [u8], limits: &Limits) -> Result<Self, InputError> {
        if bytes.len() > limits.max_document_bytes {
            return Err(InputError::TooLarge {
                limit: limits.max_document_bytes,
                line: None,
            });
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let scanned = Scanned::deserialize(&mut de)
            .and_then(|s| de.end().map(|()| s))
            .map_err(|e| json_error(&e, Position::START))?;
        scanned.into_document(0, bytes, limits)
    }

    /// The document built as a JSON value, with its duplicate keys' paths.
    ///
    /// # Errors
    ///
    /// None for a document the stream reader gave; kept for documents built by hand.
    pub fn to_document(&self) -> Result<super::Document, InputError> {
        let checked: super::input::Checked =
            serde_json::from_slice(self.bytes).map_err(|e| json_error(&e, Position::START))?;
        Ok(checked.into_document(self.index))
    }
}

/// Where a byte of the stream is: its 1-based line and the bytes before it on that line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    pub(super) line: usize,
    column: usize,
}

impl Position {
    pub(super) const START: Position = Position { line: 1, column: 0 };

    /// The position after `bytes`, which start here.
    pub(super) fn after(self, bytes: &[u8]) -> Position {
        match bytes.iter().rposition(|&b| b == b'\n') {
            Some(last) => Position {
                line: self.line + bytes.iter().filter(|&&b| b == b'\n').count(),
                column: bytes.len() - last - 1,
            },
            None => Position {
                line: self.line,
                column: self.column + bytes.len(),
            },
        }
    }
}

/// A serde_json error from a parse that started at `start`, placed in the stream.
fn json_error(error: &serde_json::Error, start: Position) -> InputError {
    let (line, column) = match error.line() {
        0 => (0, 0),
        1 => (start.line, start.column + error.column()),
        n => (start.line + n - 1, error.column()),
    };
    let text = error.to_string();
    let bare = text
        .strip_suffix(&format!(
            " at line {} column {}",
            error.line(),
            error.column()
        ))
        .unwrap_or(&text);
    let message = if line == 0 {
        bare.to_owned()
    } else {
        format!("{bare} at line {line} column {column}")
    };
    InputError::Json {
        line,
        column,
        message,
    }
}

/// Calls `each` with every JSON document of `reader`, holding one document (and at most one
/// read ahead) at a time. Stops at the first error, from the input or from `each`.
pub(super) fn read_each<E: From<ReadError>>(
    mut reader: impl Read,
    limits: &Limits,
    start: Position,
    mut each: impl FnMut(JsonDocument<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let max = limits.max_document_bytes;
    let mut buffer: Vec<u8> = Vec::new();
    // `position` is where `buffer` starts in the stream; `at` is where the next document does.
    let (mut at, mut position, mut index, mut eof) = (0, start, 0, false);
    let fail = |index, error| ReadError {
        document: index,
        error,
    };
    loop {
        let rest = &buffer[at..];
        let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<Scanned>();
        let next = stream.next();
        let end = stream.byte_offset();
        let complete = match &next {
            // Only blanks are left.
            None => eof,
            // A value that ends where the bytes do may go on (a number), unless it is closed.
            Some(Ok(_)) => {
                eof || end < rest.len() || matches!(rest[..end].last(), Some(b'}' | b']' | b'"'))
            }
            Some(Err(e)) => eof || !e.is_eof(),
        };
        if !complete {
            if rest.len() > max {
                return Err(fail(index, too_large(limits)).into());
            }
            // Keep only what is not consumed, then read at least as much again.
            position = position.after(&buffer[..at]);
            buffer.drain(..at);
            at = 0;
            let want = buffer.len().max(CHUNK);
            eof =
                fill(&mut reader, &mut buffer, want).map_err(|e| fail(index, InputError::Io(e)))?;
            continue;
        }
        match next {
            None => return Ok(()),
            Some(Err(e)) => {
                let error = if error_offset(rest, &e) > max {
                    too_large(limits)
                } else {
                    json_error(&e, position.after(&buffer[..at]))
                };
                return Err(fail(index, error).into());
            }
            Some(Ok(_)) if end > max => return Err(fail(index, too_large(limits)).into()),
            Some(Ok(scanned)) => {
                let bytes = &rest[..end];
                let document = scanned
                    .into_document(index, bytes, limits)
                    .map_err(|e| fail(index, e))?;
                each(document)?;
                at += end;
                index += 1;
            }
        }
    }
}

fn too_large(limits: &Limits) -> InputError {
    InputError::TooLarge {
        limit: limits.max_document_bytes,
        line: None,
    }
}

/// The offset in `bytes` of the position a parse error names.
fn error_offset(bytes: &[u8], error: &serde_json::Error) -> usize {
    let line_start = if error.line() <= 1 {
        0
    } else {
        bytes
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'\n')
            .nth(error.line() - 2)
            .map_or(bytes.len(), |(i, _)| i + 1)
    };
    line_start + error.column()
}

/// Appends at least `want` bytes from `reader` to `buffer`, unless the reader ends first;
/// returns whether it ended.
fn fill(reader: &mut impl Read, buffer: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    let mut filled = buffer.len();
    buffer.resize(filled + want, 0);
    let result = loop {
        if filled == buffer.len() {
            break Ok(false);
        }
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break Ok(true),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    buffer.truncate(filled);
    result
}

/// What a scan of a JSON value found.
#[derive(Debug, Default)]
pub(super) struct Scanned<'de> {
    depth: usize,
    nodes: usize,
    may_repeat_keys: bool,
    /// A string value's text.
    text: Option<Cow<'de, str>>,
    /// The top-level identity, for an object.
    api_version: Option<Cow<'de, str>>,
    kind: Option<Cow<'de, str>>,
}

impl<'de> Scanned<'de> {
    fn into_document<'a>(
        self,
        index: usize,
        bytes: &'a [u8],
        limits: &Limits,
    ) -> Result<JsonDocument<'a>, InputError>
    where
        'de: 'a,
    {
        limits.check_shape(self.depth, self.nodes)?;
        Ok(JsonDocument {
            index,
            bytes,
            api_version: self.api_version,
            kind: self.kind,
            may_repeat_keys: self.may_repeat_keys,
        })
    }

    fn scalar() -> Self {
        Scanned {
            nodes: 1,
            ..Scanned::default()
        }
    }
}

impl<'de> Deserialize<'de> for Scanned<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScanVisitor)
    }
}

struct ScanVisitor;

impl<'de> Visitor<'de> for ScanVisitor {
    type Value = Scanned<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Scanned::scalar())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Scanned::scalar())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Scanned::scalar())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Scanned::scalar())
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scanned {
            text: Some(Cow::Borrowed(v)),
            ..Scanned::scalar()
        })
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scanned {
            text: Some(Cow::Owned(v.to_owned())),
            ..Scanned::scalar()
        })
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scanned::scalar())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut scanned = Scanned::scalar();
        let mut deepest = 0;
        while let Some(item) = seq.next_element::<Scanned>()? {
            deepest = deepest.max(item.depth);
            scanned.nodes += item.nodes;
            scanned.may_repeat_keys |= item.may_repeat_keys;
        }
        scanned.depth = deepest + 1;
        Ok(scanned)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Self::Value, A::Error> {
        let mut scanned = Scanned::scalar();
        let mut deepest = 0;
        let mut keys = KeyHashes::default();
        while let Some(key) = access.next_key_seed(KeySeed)? {
            let item: Scanned = access.next_value()?;
            deepest = deepest.max(item.depth);
            scanned.nodes += 1 + item.nodes;
            scanned.may_repeat_keys |= item.may_repeat_keys | !keys.insert(&key);
            match &*key {
                "apiVersion" => scanned.api_version = item.text,
                "kind" => scanned.kind = item.text,
                _ => {}
            }
        }
        scanned.depth = deepest + 1;
        Ok(scanned)
    }
}

/// A key, borrowed from the input unless it has escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Cow<'de, str>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Cow::Borrowed(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Cow::Owned(v.to_owned()))
            }
            fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
                Err(A::Error::custom("a key must be a string"))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The hashes of an object's keys, to tell (with false alarms on collisions) whether one
/// repeats; the first few are kept without allocating.
#[derive(Default)]
struct KeyHashes {
    inline: [u64; INLINE_KEYS],
    count: usize,
    /// Every hash, once an object has more than `INLINE_KEYS` keys.
    spilled: rustc_hash::FxHashSet<u64>,
}

const INLINE_KEYS: usize = 16;

impl KeyHashes {
    /// Records `key`; false if its hash was seen before.
    fn insert(&mut self, key: &str) -> bool {
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
