//! Reading a multi-document YAML stream one document at a time: the stream is cut at its
//! document markers (`---` and `...` at the start of a line, which YAML forbids inside any
//! scalar), and each document's text is parsed by serde_yaml_ng (libyaml) into a JSON value.
//!
//! A document that starts with its `apiVersion` and `kind` (as kubectl and apfkit write YAML)
//! and is of a served kind is first decoded straight into its version's type under a guard
//! (see [`guard`](super::guard)), when the caller asks for that; a document the guard did not
//! like takes the value path, which finds what to report.
//!
//! Limits hold while reading: a document's text is refused once it passes
//! [`Limits::max_document_bytes`] (an endless line included), and its value is checked for
//! depth and nodes as it is built. serde_yaml_ng refuses alias bombs and nesting deeper than
//! 128 levels itself. Repeated keys are an error, as in kubectl.

use std::io::{BufRead, Read};

use serde::Deserialize;

use super::Scheme;
use super::codec::Decoded;
use super::document::{Checked, Document, InputError, Limits, Position, ReadError};
use super::guard::Guard;

/// Calls `each` with every non-empty document of `reader`, in order. `start` is where the
/// reader starts in the stream (after blanks the caller skipped), for line numbers. Objects of
/// served kinds are decoded into their types as they are read if a `scheme` is given.
pub(super) fn read_each<H, E: From<ReadError>>(
    mut reader: impl BufRead,
    scheme: Option<&Scheme<H>>,
    limits: &Limits,
    start: Position,
    mut each: impl FnMut(YamlRead<'_>) -> Result<(), E>,
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
                chunk.parse(scheme, limits, &mut index, &mut each)?;
                chunk = Chunk::new(line_number);
                chunk.push(text, true);
            }
            Some(Marker::Start) => chunk.push(text, true),
            Some(Marker::End) => {
                chunk.push(text, false);
                chunk.parse(scheme, limits, &mut index, &mut each)?;
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
    chunk.parse(scheme, limits, &mut index, &mut each)
}

/// A YAML document as the reader hands it over: an object of a served kind with nothing to
/// report, decoded into its type, or any other document built as a value.
#[derive(Debug)]
pub(super) enum YamlRead<'a> {
    /// Decoded into its version's type.
    Typed(YamlDocument<'a>),
    /// Built as a JSON value.
    Built(Document),
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

    /// Gives the document to `each`, unless it is empty or null: decoded into its type if
    /// a `scheme` is given and the guard allows, else as a JSON value.
    fn parse<H, E: From<ReadError>>(
        &self,
        scheme: Option<&Scheme<H>>,
        limits: &Limits,
        index: &mut usize,
        each: &mut impl FnMut(YamlRead<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.has_content {
            return Ok(());
        }
        check_nesting(&self.text, self.line, limits).map_err(|error| ReadError {
            document: *index,
            error,
        })?;
        if let Some(scheme) = scheme
            && let Some(decoded) = decoded(scheme, &self.text, limits)
        {
            let document = YamlDocument {
                index: *index,
                text: &self.text,
                line: self.line,
                limits: *limits,
                decoded,
            };
            *index += 1;
            return each(YamlRead::Typed(document));
        }
        let fail = |error| ReadError {
            document: *index,
            error,
        };
        let Some(checked) = value(&self.text, self.line, limits).map_err(fail)? else {
            return Ok(());
        };
        let document = checked.into_document(*index);
        *index += 1;
        each(YamlRead::Built(document))
    }
}

/// Refuses a document nested deeper than `limits` allow before libyaml reads it. libyaml's
/// scanner revisits every open flow level (`[`, `{`) for each token, so deep flow nesting
/// costs time quadratic in the document's size before any depth check can act: 60,000
/// levels in a 120 KB request body took 5.5 s (issue 39). A document with no more opening
/// brackets than the depth limit cannot nest deeper in flow style; any other is first walked by
/// serde-saphyr's streaming budget check (its parser keeps no such cost and stops at the
/// limit), so libyaml only ever sees flow nesting within the limit. go-yaml, which
/// kube-apiserver uses, caps flow nesting too (10,000 levels, `max_flow_level`).
fn check_nesting(text: &str, line: usize, limits: &Limits) -> Result<(), InputError> {
    // Counted no further than the limit, with memchr: one fast pass over most documents.
    if memchr::memchr2_iter(b'[', b'{', text.as_bytes())
        .nth(limits.max_depth)
        .is_none()
    {
        return Ok(());
    }
    // Only the depth is checked here: the other budgets are the value reader's.
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = limits.max_depth;
    // The scanner's own cap on open flow collections, which it reaches first when it looks
    // ahead: past the depth limit either way.
    budget.flow_nesting_limit = limits.max_depth + 1;
    budget.max_events = usize::MAX;
    budget.max_nodes = usize::MAX;
    budget.max_documents = usize::MAX;
    budget.max_aliases = usize::MAX;
    budget.max_anchors = usize::MAX;
    budget.max_total_scalar_bytes = usize::MAX;
    budget.max_merge_keys = usize::MAX;
    budget.enforce_alias_anchor_ratio = false;
    use granit_parser::ErrorKind;
    use serde_saphyr::budget::{BudgetBreach, EnforcingPolicy, check_yaml_budget};
    match check_yaml_budget(text, budget, EnforcingPolicy::PerDocument) {
        Ok(report) => match report.breached {
            None => Ok(()),
            Some(BudgetBreach::Depth { .. }) => Err(InputError::TooDeep {
                limit: limits.max_depth,
            }),
            Some(other) => Err(InputError::Yaml(format!(
                "{other:?} (document starting at line {line})"
            ))),
        },
        Err(error) if matches!(error.kind(), ErrorKind::RecursionLimitExceeded) => {
            Err(InputError::TooDeep {
                limit: limits.max_depth,
            })
        }
        // What libyaml would say cannot be known without the cost this check avoids.
        Err(error) => Err(InputError::Yaml(format!(
            "{error} (document starting at line {line})"
        ))),
    }
}

/// The object of a document of a served kind that starts with its identity, decoded into its
/// version's type, if the guard lets it through.
fn decoded<H>(scheme: &Scheme<H>, text: &str, limits: &Limits) -> Option<Decoded> {
    let (api_version, kind) = identity(text)?;
    let codec = scheme.find(api_version, kind)?;
    let object = codec.decode_yaml(text, &Guard::checking_yaml(limits))?;
    Some(Decoded::new(codec, object))
}

/// The `apiVersion` and `kind` of a document whose first two lines (after a `---` line,
/// blanks and comments) give them as plain words, in either order, as kubectl and apfkit
/// write YAML; `None` for any other start. Two such lines at the first column are two keys
/// of the top-level mapping with plain scalars.
fn identity(text: &str) -> Option<(&str, &str)> {
    let content = text.lines().filter(|line| {
        let line = line.trim_end();
        !(line.is_empty() || line == "---" || line.trim_start().starts_with('#'))
    });
    let (mut api_version, mut kind) = (None, None);
    for line in content.take(2) {
        let (key, value) = line.trim_end().split_once(": ")?;
        let word = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-');
        if value.is_empty() || !value.bytes().all(word) {
            return None;
        }
        match key {
            "apiVersion" if api_version.is_none() => api_version = Some(value),
            "kind" if kind.is_none() => kind = Some(value),
            _ => return None,
        }
    }
    Some((api_version?, kind?))
}

/// The one document of `text` as a checked JSON value; `None` if it is null. `line` is where
/// `text` starts in the stream.
fn value(text: &str, line: usize, limits: &Limits) -> Result<Option<Checked>, InputError> {
    // One document per chunk; a second one would be a marker the cut missed.
    let mut documents = serde_yaml_ng::Deserializer::from_str(text);
    let Some(document) = documents.next() else {
        return Ok(None);
    };
    let checked = Checked::deserialize(document).map_err(|e| error(&e, line))?;
    if let Some(extra) = documents.next() {
        return Err(match Checked::deserialize(extra) {
            Err(e) => error(&e, line),
            Ok(_) => InputError::Yaml("a second document without a --- marker".to_owned()),
        });
    }
    checked.check(limits)?;
    if let Some(path) = checked.duplicates.first() {
        return Err(InputError::Yaml(format!(
            "duplicate key {path:?} in a mapping (document starting at line {line})"
        )));
    }
    Ok((!checked.value.is_null()).then_some(checked))
}

/// A parse error of a document starting at `line`, with the line and column placed in the
/// stream.
fn error(error: &serde_yaml_ng::Error, line: usize) -> InputError {
    let text = error.to_string();
    let Some(location) = error.location() else {
        return InputError::Yaml(text);
    };
    let column = location.column();
    let here = format!("at line {} column {column}", location.line());
    let there = format!("at line {} column {column}", line + location.line() - 1);
    InputError::Yaml(if text.contains(&here) {
        text.replacen(&here, &there, 1)
    } else {
        format!("{text} {there}")
    })
}

/// One YAML document of a served kind, decoded into its version's type while it was read:
/// within the limits, without repeated keys or fields the type lacks, resolved as the value
/// path resolves it. Its text stays, for a caller that wants the JSON value.
#[derive(Debug)]
pub struct YamlDocument<'a> {
    /// Position among the non-empty documents of the stream (0-based).
    pub index: usize,
    text: &'a str,
    /// The stream line the document starts at.
    line: usize,
    limits: Limits,
    decoded: Decoded,
}

impl YamlDocument<'_> {
    /// The document as the value path reads it.
    ///
    /// # Errors
    ///
    /// None in practice: the guarded decode accepted the same text under the same limits.
    pub fn to_document(&self) -> Result<Document, InputError> {
        match value(self.text, self.line, &self.limits)? {
            Some(checked) => Ok(checked.into_document(self.index)),
            None => Err(InputError::Yaml("the document is null".to_owned())),
        }
    }

    /// The document's `apiVersion`.
    pub fn api_version(&self) -> String {
        self.decoded.api_version()
    }

    /// The decoded object, and the length of its text (to size the output).
    pub(super) fn into_decoded(self) -> (Decoded, usize) {
        (self.decoded, self.text.len())
    }
}

#[cfg(test)]
mod tests {
    use super::{Marker, identity, marker};

    #[test]
    fn the_identity_is_two_plain_lines_at_the_start() {
        let v1 = "flowcontrol.apiserver.k8s.io/v1";
        for (text, expected) in [
            ("apiVersion: v1\nkind: List\n", Some(("v1", "List"))),
            (
                "---\n# c\n\nkind: K\napiVersion: a/b\nx: 1\n",
                Some(("a/b", "K")),
            ),
            (
                "apiVersion: flowcontrol.apiserver.k8s.io/v1\r\nkind: FlowSchema\r\n",
                Some((v1, "FlowSchema")),
            ),
            ("apiVersion: v1\nmetadata: {}\nkind: K\n", None),
            ("apiVersion: v1\nkind: K # c\n", None),
            ("apiVersion: v1\nkind: \"K\"\n", None),
            ("apiVersion: v1\n  kind: K\n", None),
            ("apiVersion: v1\napiVersion: v2\n", None),
            ("apiVersion: v1\n", None),
            ("%YAML 1.2\n---\napiVersion: v1\nkind: K\n", None),
            ("--- apiVersion: v1\nkind: K\n", None),
            ("apiVersion:v1\nkind: K\n", None),
            ("", None),
        ] {
            assert_eq!(identity(text), expected, "{text:?}");
        }
    }

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
