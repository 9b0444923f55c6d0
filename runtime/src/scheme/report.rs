//! What the scheme tells its caller: warnings about a document it handled, and errors with
//! the field path they are about.

use std::fmt;

/// Something the caller should know about a conversion that succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// A field the schema of the document's version does not have; it was dropped.
    UnknownField {
        /// Field path, such as `spec.limited.foo`.
        path: String,
    },
    /// A key that appears more than once in one JSON object; the last one was kept, as Go's
    /// decoder keeps it.
    DuplicateField {
        /// Field path, such as `metadata.name`.
        path: String,
    },
    /// A value the target version cannot keep: reading the output back gives something else.
    Lossy {
        /// Field path.
        path: String,
        /// What happens to the value.
        message: String,
    },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::UnknownField { path } => write!(f, "unknown field {path:?}"),
            Warning::DuplicateField { path } => write!(f, "duplicate field {path:?}"),
            Warning::Lossy { path, message } => write!(f, "{path}: {message}"),
        }
    }
}

impl Warning {
    /// The warning with its field path under `prefix` (`items[2]`).
    pub fn prefixed(self, prefix: &str) -> Warning {
        match self {
            Warning::UnknownField { path } => Warning::UnknownField {
                path: join(prefix, &path),
            },
            Warning::DuplicateField { path } => Warning::DuplicateField {
                path: join(prefix, &path),
            },
            Warning::Lossy { path, message } => Warning::Lossy {
                path: join(prefix, &path),
                message,
            },
        }
    }
}

/// What kind of failure a [`SchemeError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The document's `apiVersion` and `kind` are not served (or a hub object of another kind
    /// was given to a codec).
    UnsupportedKind,
    /// The target version names another API group than the object's.
    WrongGroup,
    /// The version is not served, or the target is not a version at all.
    UnknownVersion,
    /// Strict decoding found fields that the version does not have.
    UnknownFields,
    /// A value of the wrong type or out of its range; a malformed document.
    InvalidValue,
    /// The document nests deeper than the reader's depth limit.
    TooDeep,
    /// Writing the result failed.
    Encoding,
}

/// Why a document could not be handled; `path` is the field path inside the document, empty
/// for the document as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
pub struct SchemeError {
    /// What kind of failure it is.
    pub kind: ErrorKind,
    /// Field path, such as `spec.limited.nominalConcurrencyShares` or `items[2].kind`.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl SchemeError {
    /// An error of `kind` at `path`.
    pub fn new(kind: ErrorKind, path: impl Into<String>, message: impl Into<String>) -> Self {
        SchemeError {
            kind,
            path: path.into(),
            message: message.into(),
        }
    }

    /// The error with its field path under `prefix` (`items[2]`).
    pub fn prefixed(self, prefix: &str) -> Self {
        SchemeError {
            path: join(prefix, &self.path),
            ..self
        }
    }
}

/// `prefix.path`, either side possibly empty: the field path of `path` inside `prefix`.
pub fn join(prefix: &str, path: &str) -> String {
    match (prefix.is_empty(), path.is_empty()) {
        (true, _) => path.to_owned(),
        (false, true) => prefix.to_owned(),
        (false, false) => format!("{prefix}.{path}"),
    }
}
