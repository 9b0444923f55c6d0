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

use super::Scheme;
use super::document::{Document, InputError, Limits, MAX_DEPTH_LIMIT, Position, ReadError};
use super::json_input::{self, JsonDocument};
use super::protobuf_input;
use super::yaml_input::{self, YamlDocument, YamlRead};

/// Every document of `bytes` with the default [`Limits`], built as JSON values; the format is
/// sniffed as [`Scheme::read`] says.
pub(super) fn read_documents<H>(
    scheme: &Scheme<H>,
    bytes: &[u8],
) -> Result<Vec<Document>, InputError> {
    let protobuf = protobuf_input::sniff(&bytes[..bytes.len().min(protobuf_input::HEAD)]);
    if let (None, Err(e)) = (protobuf, std::str::from_utf8(bytes)) {
        return Err(InputError::Utf8 {
            offset: e.valid_up_to(),
        });
    }
    let mut documents = Vec::new();
    scheme
        .read_values(bytes, &Limits::default(), |document| {
            documents.push(document);
            Ok::<_, ReadError>(())
        })
        .map_err(|e| e.error)?;
    Ok(documents)
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
    /// A document a program built, as the reader would hand it over.
    pub fn from_value(value: serde_json::Value) -> Input<'static> {
        Input::Value(Document {
            index: 0,
            value,
            duplicate_fields: Vec::new(),
            unknown_fields: Vec::new(),
        })
    }

    /// The document built as a JSON value, with its repeated keys' paths.
    ///
    /// # Errors
    ///
    /// None for a document the reader gave; kept for documents built by hand.
    pub fn into_document(self) -> Result<Document, InputError> {
        match self {
            Input::Json(json) => json.to_document(),
            Input::Yaml(yaml) => yaml.to_document(),
            Input::Value(document) => Ok(document),
        }
    }

    /// The document's 0-based index in the stream.
    pub fn index(&self) -> usize {
        match self {
            Input::Json(json) => json.index,
            Input::Yaml(yaml) => yaml.index,
            Input::Value(document) => document.index,
        }
    }
}

/// [`Scheme::read`]; JSON and YAML objects of served kinds are decoded into their types as
/// they are read if `decode`, for a caller that will convert them.
pub(super) fn read_each_in<H, E: From<ReadError>>(
    scheme: &Scheme<H>,
    reader: impl Read,
    limits: &Limits,
    decode: bool,
    mut each: impl FnMut(Input<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let limits = within_depth_limit(limits);
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
        let encodings = scheme.encodings;
        return protobuf_input::read_each(reader, framing, encodings, &limits, |d| {
            each(Input::Value(d))
        });
    }
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let (first, skipped) = first_non_blank(&mut reader).map_err(|e| ReadError {
        document: 0,
        error: InputError::Io(e),
    })?;
    if first.is_some_and(|b| b == b'{' || b == b'[') {
        let scheme = decode.then_some(scheme);
        return json_input::read_each(reader, scheme, &limits, skipped, |d| each(Input::Json(d)));
    }
    let scheme = decode.then_some(scheme);
    yaml_input::read_each(reader, scheme, &limits, skipped, |read| match read {
        YamlRead::Typed(yaml) => each(Input::Yaml(yaml)),
        YamlRead::Built(document) => each(Input::Value(document)),
    })
}

/// The first non-empty document of `bytes` read as YAML whatever its first byte (JSON is YAML
/// too), as kube-apiserver reads a request body sent as YAML: go-yaml reads one document and
/// nothing after it. `None` when there is none.
///
/// ```
/// use apfkit_runtime::scheme::{Limits, read_first_yaml};
///
/// let first = read_first_yaml(b"{a: 1}\n--- [", &Limits::default()).unwrap();
/// assert_eq!(first.unwrap().value, serde_json::json!({"a": 1}));
/// ```
///
/// # Errors
///
/// The first document does not parse or passes `limits`.
pub fn read_first_yaml(bytes: &[u8], limits: &Limits) -> Result<Option<Document>, InputError> {
    /// Why the reading ended early.
    enum Stop {
        First(Document),
        Failed(InputError),
    }
    impl From<ReadError> for Stop {
        fn from(error: ReadError) -> Self {
            Stop::Failed(error.error)
        }
    }
    let limits = within_depth_limit(limits);
    let mut reader = BufReader::new(bytes);
    let (_, skipped) = first_non_blank(&mut reader).map_err(InputError::Io)?;
    let read = yaml_input::read_each::<(), Stop>(reader, None, &limits, skipped, |read| {
        Err(match read {
            YamlRead::Typed(yaml) => match yaml.to_document() {
                Ok(document) => Stop::First(document),
                Err(error) => Stop::Failed(error),
            },
            YamlRead::Built(document) => Stop::First(document),
        })
    });
    match read {
        Ok(()) => Ok(None),
        Err(Stop::First(document)) => Ok(Some(document)),
        Err(Stop::Failed(error)) => Err(error),
    }
}

/// `limits` with a depth no deeper than the readers allow ([`MAX_DEPTH_LIMIT`]).
fn within_depth_limit(limits: &Limits) -> Limits {
    Limits {
        max_depth: limits.max_depth.min(MAX_DEPTH_LIMIT),
        ..*limits
    }
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
