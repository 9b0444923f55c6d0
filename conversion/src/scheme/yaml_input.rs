//! Reading a multi-document YAML stream one document at a time: the stream is cut at its
//! document markers (`---` and `...` at the start of a line, which YAML forbids inside any
//! scalar), and each document's text is parsed by serde_yaml_ng (libyaml) into a JSON value.
//!
//! Limits hold while reading: a document's text is refused once it passes
//! [`Limits::max_document_bytes`] (an endless line included), and its value is checked for
//! depth and nodes as it is built. serde_yaml_ng refuses alias bombs and nesting deeper than
//! 128 levels itself. Repeated keys are an error, as in kubectl.

use std::io::{BufRead, Read};

use serde::Deserialize;

use super::input::{Checked, Document, InputError, Limits, ReadError};
use super::json_input::Position;

/// Calls `each` with every non-empty document of `reader`, in order. `start` is where the
/// reader starts in the stream (after blanks the caller skipped), for line numbers.
pub(super) fn read_each<E: From<ReadError>>(
    mut reader: impl BufRead,
    limits: &Limits,
    start: Position,
    mut each: impl FnMut(Document) -> Result<(), E>,
) -> Result<(), E> {
    let max = limits.max_document_bytes;
    let mut chunk = Chunk::new(start.line);
    let (mut line_number, mut offset, mut index) = (start.line, 0usize, 0usize);
    let mut line = Vec::new();
    let fail = |index, error| ReadError {
        document: index,
        error,
    };
    loop {
        line.clear();
        // Room for the rest of the document, and for a marker line that ends it.
        let allowance = (max - chunk.text.len().min(max)) as u64 + MARKER_ROOM;
        let read = (&mut reader)
            .take(allowance)
            .read_until(b'\n', &mut line)
            .map_err(|e| fail(index, InputError::Io(e)))?;
        if read == 0 {
            break;
        }
        let kind = marker(&line);
        // The document this line belongs to, and its size with the line.
        let (size, starts_at) = match kind {
            Some(Marker::Start) if chunk.has_content => (line.len(), line_number),
            _ => (chunk.text.len() + line.len(), chunk.line),
        };
        if size > max {
            let error = InputError::TooLarge {
                limit: max,
                line: Some(starts_at as u64),
            };
            return Err(fail(index, error).into());
        }
        let text = std::str::from_utf8(&line).map_err(|e| {
            fail(
                index,
                InputError::Utf8 {
                    offset: offset + e.valid_up_to(),
                },
            )
        })?;
        offset += read;
        match kind {
            Some(Marker::Start) if chunk.has_content => {
                chunk.parse(limits, &mut index, &mut each)?;
                chunk = Chunk::new(line_number);
                chunk.push(text, true);
            }
            Some(Marker::Start) => chunk.push(text, true),
            Some(Marker::End) => {
                chunk.push(text, false);
                chunk.parse(limits, &mut index, &mut each)?;
                chunk = Chunk::new(line_number + 1);
            }
            None => {
                // Blanks, comments and (before the document) directives are not content.
                let blank = text.trim().is_empty() || text.trim_start().starts_with('#');
                let directive = text.starts_with('%') && !chunk.has_content;
                let content = !(blank || directive);
                chunk.push(text, content);
            }
        }
        line_number += usize::from(text.ends_with('\n'));
    }
    chunk.parse(limits, &mut index, &mut each)
}

/// Bytes a marker line may take beyond a full document (`--- ` and a line break).
const MARKER_ROOM: u64 = 8;

/// A document marker line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// `---`: a document starts (its content may follow on the same line).
    Start,
    /// `...`: the document ends.
    End,
}

fn marker(line: &[u8]) -> Option<Marker> {
    let kind = if line.starts_with(b"---") {
        Marker::Start
    } else if line.starts_with(b"...") {
        Marker::End
    } else {
        return None;
    };
    matches!(line.get(3), None | Some(b' ' | b'\t' | b'\r' | b'\n')).then_some(kind)
}

/// The text of one document, as it is gathered.
struct Chunk {
    text: String,
    /// The stream line it starts at.
    line: usize,
    /// Whether it has a marker or a node (not only blanks, comments and directives).
    has_content: bool,
}

impl Chunk {
    fn new(line: usize) -> Self {
        Chunk {
            text: String::new(),
            line,
            has_content: false,
        }
    }

    fn push(&mut self, text: &str, content: bool) {
        self.text.push_str(text);
        self.has_content |= content;
    }

    /// Parses the document and gives it to `each`, unless it is empty or null.
    fn parse<E: From<ReadError>>(
        &self,
        limits: &Limits,
        index: &mut usize,
        each: &mut impl FnMut(Document) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.has_content {
            return Ok(());
        }
        let fail = |error| ReadError {
            document: *index,
            error,
        };
        // One document per chunk; a second one would be a marker the cut missed.
        let mut documents = serde_yaml_ng::Deserializer::from_str(&self.text);
        let Some(document) = documents.next() else {
            return Ok(());
        };
        let checked = Checked::deserialize(document).map_err(|e| fail(self.error(&e)))?;
        if let Some(extra) = documents.next() {
            let error = match Checked::deserialize(extra) {
                Err(e) => self.error(&e),
                Ok(_) => InputError::Yaml("a second document without a --- marker".to_owned()),
            };
            return Err(fail(error).into());
        }
        checked.check(limits).map_err(fail)?;
        if let Some(path) = checked.duplicates.first() {
            return Err(fail(InputError::Yaml(format!(
                "duplicate key {path:?} in a mapping (document starting at line {})",
                self.line
            )))
            .into());
        }
        if checked.value.is_null() {
            return Ok(());
        }
        let document = checked.into_document(*index);
        *index += 1;
        each(document)
    }

    /// A parse error, with the line and column placed in the stream.
    fn error(&self, error: &serde_yaml_ng::Error) -> InputError {
        let text = error.to_string();
        let Some(location) = error.location() else {
            return InputError::Yaml(text);
        };
        let (line, column) = (location.line(), location.column());
        let here = format!("at line {line} column {column}");
        let there = format!("at line {} column {column}", self.line + line - 1);
        InputError::Yaml(if text.contains(&here) {
            text.replacen(&here, &there, 1)
        } else {
            format!("{text} {there}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Marker, marker};

    #[test]
    fn markers_are_three_characters_then_a_blank() {
        for (line, expected) in [
            ("---\n", Some(Marker::Start)),
            ("---", Some(Marker::Start)),
            ("--- |\n", Some(Marker::Start)),
            ("---\r\n", Some(Marker::Start)),
            ("...\n", Some(Marker::End)),
            ("----\n", None),
            ("---a\n", None),
            (" ---\n", None),
            ("-- \n", None),
            ("..\n", None),
        ] {
            assert_eq!(marker(line.as_bytes()), expected, "{line:?}");
        }
    }
}
