//! Errors of the command, each naming where it happened, and the exit codes.

use std::fmt;

pub use apfkit_dispatcher::dispatch::printable;

/// Exit code for invalid input (and validation errors).
pub const EXIT_INVALID: i32 = 1;
/// Exit code for usage errors (as clap's own).
pub const EXIT_USAGE: i32 = 2;

/// Where in the input something happened: a file (`-` for standard input) and, when known,
/// the document in it, printed as `FILE: document N` with N counted from 1 among the
/// non-empty documents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as given (or found under a directory).
    pub file: String,
    /// The document's index among the file's non-empty documents.
    pub document: Option<usize>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = printable(&self.file);
        // "document 1" (counted from 1), so that it does not read like a line number.
        match self.document {
            Some(index) => write!(f, "{file}: document {}", index + 1),
            None => f.write_str(&file),
        }
    }
}

/// Prints a warning about the input at `location` on standard error, with control characters
/// of the input escaped.
pub fn warn(location: &Location, message: &str) {
    eprintln!("{location}: warning: {}", printable(message));
}

/// `text` for a terminal: every line's control characters escaped, the line breaks kept (for
/// messages such as a YAML parser's, which show the input line under the error).
pub fn for_terminal(text: &str) -> String {
    text.split('\n')
        .map(|line| printable(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Why the command failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// Bad input at a location; the message starts with the field path when there is one.
    #[error("{location}: {message}")]
    Input {
        /// Where.
        location: Location,
        /// What.
        message: String,
    },
    /// Bad input without a file, such as a flag's value.
    #[error("{0}")]
    Invalid(String),
    /// The flags do not make sense together.
    #[error("{0}")]
    Usage(String),
    /// Writing the output failed.
    #[error("{}: {source}", printable(path))]
    Output {
        /// The file being written.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Validation found errors; they were printed already.
    #[error("validation failed with {0} error(s)")]
    ValidationErrors(usize),
}

impl Failure {
    /// An input failure at `location`.
    pub fn at(location: &Location, message: impl fmt::Display) -> Self {
        Failure::Input {
            location: location.clone(),
            message: message.to_string(),
        }
    }

    /// A failure writing the output named `path`.
    pub fn output(path: &str, source: std::io::Error) -> Self {
        Failure::Output {
            path: path.to_owned(),
            source,
        }
    }

    /// The process exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Usage(_) => EXIT_USAGE,
            _ => EXIT_INVALID,
        }
    }
}
