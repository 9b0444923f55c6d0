//! Reading a stream of JSON values without building them: the stream is cut into documents
//! in a buffer.
//!
//! An object that starts with its `apiVersion` and `kind` (as Go, kubectl and sorted keys
//! write it) and is of a served kind is decoded straight into its version's type, once,
//! under a guard that checks what a scan would (see [`guard`](super::guard)); the
//! decoded object travels with the document to the scheme. Any other document, and one the
//! guarded decode did not like, is scanned once, allocation-free, for what the limits and the
//! scheme need to know (nesting depth, node count, whether an object repeats a key, the
//! top-level `apiVersion` and `kind`). Its bytes then go to the scheme, or, when asked, are
//! built into a [`Document`](super::Document).
//!
//! Positions in syntax errors are the stream's (line and column), as if the whole stream had
//! been parsed at once.

use std::borrow::Cow;
use std::io::Read;
use std::sync::Mutex;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess};
use serde::de::{Error as _, Visitor};

use super::Scheme;
use super::codec::Decoded;
use super::document::{Document, InputError, KeyHashes, Limits, Position, ReadError};
use super::guard::Guard;

/// Bytes asked of the reader at a time, at least.
const CHUNK: usize = 64 << 10;

/// One JSON document of a stream: its bytes, and what a scan found in them (or the guarded
/// decode that took the scan's place, for a served object with nothing to report, which then
/// travels with the document). The document is within the reader's [`Limits`].
#[derive(Debug)]
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
    /// The object decoded into its version's type while it was read, until the scheme takes
    /// it.
    decoded: Mutex<Option<Decoded>>,
}

/// A copy holds the same bytes and scan, not the decoded object: the scheme decodes the copy
/// from its bytes.
impl Clone for JsonDocument<'_> {
    fn clone(&self) -> Self {
        JsonDocument {
            index: self.index,
            bytes: self.bytes,
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            may_repeat_keys: self.may_repeat_keys,
            decoded: Mutex::new(None),
        }
    }
}

impl<'a> JsonDocument<'a> {
    /// Scans the single JSON value `bytes` (blanks around it allowed) against `limits`, a
    /// served object decoded by `scheme`'s codec.
    ///
    /// # Errors
    ///
    /// Invalid JSON, trailing data, or a value over the limits.
    pub(super) fn parse<H>(
        scheme: &Scheme<H>,
        bytes: &'a [u8],
        limits: &Limits,
    ) -> Result<Self, InputError> {
        if bytes.len() > limits.max_document_bytes {
            return Err(too_large(limits));
        }
        if let Ok(text) = std::str::from_utf8(bytes)
            && let Some((end, document)) = JsonDocument::decoded(scheme, 0, text, limits)
            && end == bytes.trim_ascii_end().len()
        {
            return Ok(document);
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
    pub fn to_document(&self) -> Result<Document, InputError> {
        let checked: super::document::Checked =
            serde_json::from_slice(self.bytes).map_err(|e| json_error(&e, Position::START))?;
        Ok(checked.into_document(self.index))
    }

    /// The object decoded by the reader, if it was and nobody took it yet.
    pub(super) fn take_decoded(&self) -> Option<Decoded> {
        self.decoded.lock().ok()?.take()
    }

    /// The object `text` starts with, decoded into its version's type under the guard of
    /// `limits`, and the offset where it ends: if it starts with its served identity, ends
    /// within `text` and the size limit, and the guard lets it through. The parse finds the
    /// end; an object cut short by the end of `text` fails it and is left to the caller,
    /// which reads more and tries again.
    fn decoded<H>(
        scheme: &Scheme<H>,
        index: usize,
        text: &'a str,
        limits: &Limits,
    ) -> Option<(usize, Self)> {
        let (api_version, kind) = peek_identity(text)?;
        let codec = scheme.find(api_version, kind)?;
        let (object, end) = codec.decode_guarded(text, &Guard::checking(limits))?;
        if end > limits.max_document_bytes {
            return None;
        }
        let bytes = &text.as_bytes()[..end];
        let document = JsonDocument {
            index,
            bytes,
            api_version: Some(Cow::Borrowed(api_version)),
            kind: Some(Cow::Borrowed(kind)),
            may_repeat_keys: false,
            decoded: Mutex::new(Some(Decoded::new(codec, object))),
        };
        Some((end, document))
    }
}

/// The offset after the blanks at `from`.
fn skip_blanks(bytes: &[u8], from: usize) -> usize {
    bytes[from.min(bytes.len())..]
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map_or(bytes.len(), |n| from + n)
}

/// The offset of the first `"` or `\\` at or after `from`.
fn quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    Some(from + memchr::memchr2(b'"', b'\\', bytes.get(from..)?)?)
}

/// The `apiVersion` and `kind` of an object whose first two members they are, in either
/// order, as strings without escapes; `None` for anything else (the scan then finds them).
fn peek_identity(text: &str) -> Option<(&str, &str)> {
    let bytes = text.as_bytes();
    let mut at = skip_blanks(bytes, 0);
    let (mut api_version, mut kind) = (None, None);
    for separator in [b'{', b','] {
        if bytes.get(at) != Some(&separator) {
            return None;
        }
        let (key, after) = plain_string(text, skip_blanks(bytes, at + 1))?;
        at = skip_blanks(bytes, after);
        if bytes.get(at) != Some(&b':') {
            return None;
        }
        let (value, after) = plain_string(text, skip_blanks(bytes, at + 1))?;
        at = skip_blanks(bytes, after);
        match key {
            "apiVersion" if api_version.is_none() => api_version = Some(value),
            "kind" if kind.is_none() => kind = Some(value),
            _ => return None,
        }
    }
    Some((api_version?, kind?))
}

/// The string that starts at `at`, if it has no escapes, and the offset after it.
fn plain_string(text: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let end = quote_or_backslash(bytes, start)?;
    if bytes[end] != b'"' {
        return None;
    }
    // Both ends are at quotes, so at character boundaries.
    Some((text.get(start..end)?, end + 1))
}

/// The longest start of `bytes` that is UTF-8. `str::from_utf8` checks ASCII a word at a
/// time, several times faster than `utf8_chunks` on this input.
fn utf8_prefix(bytes: &[u8]) -> &str {
    match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(),
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
/// read ahead) at a time; objects of served kinds are decoded into their types as they are
/// read if a `scheme` is given. Stops at the first error, from the input or from `each`.
pub(super) fn read_each<H, E: From<ReadError>>(
    mut reader: impl Read,
    scheme: Option<&Scheme<H>>,
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
        // The part of `buffer` that is UTF-8, checked once per read for the decoding: up to
        // its first invalid byte, or a character cut by the end of what was read.
        let text = if scheme.is_some() {
            utf8_prefix(&buffer)
        } else {
            ""
        };
        // The documents of what was read, until one goes on past it.
        loop {
            let rest = &buffer[at..];
            if let Some(text) = text.get(at..)
                && let Some(scheme) = scheme
                && let Some((end, document)) = JsonDocument::decoded(scheme, index, text, limits)
            {
                each(document)?;
                at += end;
                index += 1;
                continue;
            }
            let mut stream = serde_json::Deserializer::from_slice(rest).into_iter::<Scanned>();
            let next = stream.next();
            let end = stream.byte_offset();
            let complete = match &next {
                // Only blanks are left.
                None => eof,
                // A value that ends where the bytes do may go on (a number), unless it is closed.
                Some(Ok(_)) => {
                    eof || end < rest.len()
                        || matches!(rest[..end].last(), Some(b'}' | b']' | b'"'))
                }
                Some(Err(e)) => eof || !e.is_eof(),
            };
            if !complete {
                if rest.len() > max {
                    return Err(fail(index, too_large(limits)).into());
                }
                break;
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
        // Keep only what is not consumed, then read at least as much again.
        position = position.after(&buffer[..at]);
        buffer.drain(..at);
        at = 0;
        let want = buffer.len().max(CHUNK);
        eof = fill(&mut reader, &mut buffer, want).map_err(|e| fail(index, InputError::Io(e)))?;
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

/// Appends `want` bytes from `reader` to `buffer`, fewer if the reader ends first; returns
/// whether it ended.
fn fill(reader: &mut impl Read, buffer: &mut Vec<u8>, want: usize) -> std::io::Result<bool> {
    // `read_to_end` reads into the spare capacity without zeroing it first.
    buffer.reserve(want);
    let read = reader.take(want as u64).read_to_end(buffer)?;
    Ok(read < want)
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
            decoded: Mutex::new(None),
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

#[cfg(test)]
mod tests {
    use super::super::test_kind::SCHEME;
    use super::{JsonDocument, Limits, peek_identity};

    #[test]
    fn served_objects_are_decoded_up_to_their_closing_brace() {
        let object =
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a}{[\"\\"}}"#;
        let limits = Limits::default();
        let end = |text: &str, limits: &Limits| {
            JsonDocument::decoded(&SCHEME, 0, text, limits).map(|d| d.0)
        };
        assert_eq!(end(&format!("{object} {{"), &limits), Some(object.len()));
        assert_eq!(
            end(&format!(" \n {object}"), &limits),
            Some(object.len() + 3)
        );
        // Cut short by the end of what was read: left to the caller.
        assert_eq!(end(&object[..object.len() - 1], &limits), None);
        // Over the size limit: left to the scan, which reports it.
        let small = Limits {
            max_document_bytes: object.len() - 1,
            ..Limits::default()
        };
        assert_eq!(end(object, &small), None);
        assert_eq!(end(r#"{"kind":"Widget"}"#, &limits), None);
    }

    #[test]
    fn identity_is_peeked_only_from_the_first_two_plain_members() {
        let v1 = "flowcontrol.apiserver.k8s.io/v1";
        for (text, identity) in [
            (
                r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema"}"#,
                Some((v1, "FlowSchema")),
            ),
            (
                "{\n  \"kind\" : \"FlowSchema\" ,\n  \"apiVersion\": \"flowcontrol.apiserver.k8s.io/v1\",\n  \"spec\": {}}",
                Some((v1, "FlowSchema")),
            ),
            (r#"{"kind":"A","kind":"B"}"#, None),
            (r#"{"kind":"Flow\u0053chema","apiVersion":"v1"}"#, None),
            (r#"{"metadata":{},"kind":"A","apiVersion":"v1"}"#, None),
            (r#"{"kind":"A" "apiVersion":"v1"}"#, None),
            (r#"{"kind":"A","#, None),
        ] {
            assert_eq!(peek_identity(text), identity, "{text}");
        }
    }

    #[test]
    fn served_objects_with_nothing_to_report_are_decoded_once() {
        let plain = br#"{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"a"}}"#;
        let document = JsonDocument::parse(&SCHEME, plain, &Limits::default()).unwrap();
        assert!(!document.may_repeat_keys);
        assert_eq!(document.kind.as_deref(), Some("Widget"));
        let decoded = document.take_decoded().expect("decoded while read");
        assert_eq!(decoded.api_version(), "example.com/v1");
        assert!(document.take_decoded().is_none(), "taken once");
        assert!(document.clone().take_decoded().is_none());
        let unknown = br#"{"kind":"Widget","apiVersion":"example.com/v1","colour":1}"#;
        let document = JsonDocument::parse(&SCHEME, unknown, &Limits::default()).unwrap();
        assert!(document.take_decoded().is_none(), "left to the scan");
        assert_eq!(document.kind.as_deref(), Some("Widget"));
    }
}
