//! Errors of the generator. Each names the file and, where one exists, the JSON pointer.

use std::path::PathBuf;

/// Everything that can go wrong while reading documents or writing code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input is larger than the generator reads (see `Generator::with_max_input_size`).
    #[error("{file}: {size} bytes is more than the {limit}-byte limit on an input")]
    TooLarge {
        /// The input's name.
        file: String,
        /// Its size, or a lower bound of it.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{file}: not valid JSON: {source}")]
    Syntax {
        /// The document's file.
        file: String,
        /// The parser's error, with line and column.
        source: serde_json::Error,
    },
    /// The JSON does not have the shape of an OpenAPI document at `pointer`.
    #[error("{file}: {pointer}: {message}")]
    Malformed {
        /// The document's file.
        file: String,
        /// JSON pointer to the offending value.
        pointer: String,
        /// What is wrong.
        message: String,
    },
    /// The document is well formed but uses something the generator does not support.
    #[error("{file}: {pointer}: unsupported: {message}")]
    Unsupported {
        /// The document's file.
        file: String,
        /// JSON pointer to the offending value.
        pointer: String,
        /// What is not supported.
        message: String,
    },
    /// Two documents define the same schema differently.
    #[error("{file}: {pointer}: conflicts with the definition of the same name in {other}")]
    Conflict {
        /// The later document.
        file: String,
        /// JSON pointer to the definition.
        pointer: String,
        /// The earlier document.
        other: String,
    },
    /// The settings do not fit the documents: a replacement or hook path that is not a Rust
    /// path, a hub without the type a version needs, fields without counterpart and no hook.
    #[error("settings: {setting}: {message}")]
    Settings {
        /// The setting: `replacement for <definition>`, `defaulting hook`, `hooks of A → B`.
        setting: String,
        /// What is wrong.
        message: String,
    },
    /// The generated code did not parse; this is a bug in the generator.
    #[error("generated code for module {module} does not parse: {message}")]
    Internal {
        /// The Rust module being written.
        module: String,
        /// The parser's message.
        message: String,
    },
}

/// Result with the generator's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Escapes one reference token of a JSON pointer (RFC 6901).
pub(crate) fn escape_pointer_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Joins reference tokens into a JSON pointer.
pub(crate) fn pointer<'a>(tokens: impl IntoIterator<Item = &'a str>) -> String {
    tokens
        .into_iter()
        .map(|t| format!("/{}", escape_pointer_token(t)))
        .collect()
}
