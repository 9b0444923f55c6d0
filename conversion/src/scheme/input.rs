//! Reading documents: one or more JSON values, or a multi-document YAML stream, into JSON values.
//! Limits come from the parsers: serde_json stops at 128 levels of nesting; serde-saphyr's
//! budget bounds depth, nodes, aliases and expanded anchors, so alias bombs cannot blow up.

use serde_json::Value;

/// Why input could not be read as documents.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The bytes are not UTF-8.
    #[error("not valid UTF-8 at byte {offset}")]
    Utf8 {
        /// Offset of the first bad byte.
        offset: usize,
    },
    /// JSON syntax error, nesting too deep, and the like.
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
}

/// One document of the input, with its 0-based index in the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Position among the non-empty documents of the input (the YAML parser drops empty ones).
    pub index: usize,
    /// The document.
    pub value: Value,
}

/// Reads every document of `bytes`. Input whose first non-blank character is `{` or `[` is read
/// as a sequence of JSON values; anything else as YAML. Empty and null YAML documents are skipped.
pub fn read_documents(bytes: &[u8]) -> Result<Vec<Document>, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| InputError::Utf8 {
        offset: e.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim_start().starts_with(['{', '[']) {
        let mut documents = Vec::new();
        for (index, value) in serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .enumerate()
        {
            let value = value.map_err(|e| InputError::Json {
                line: e.line(),
                column: e.column(),
                message: e.to_string(),
            })?;
            documents.push(Document { index, value });
        }
        return Ok(documents);
    }
    let values: Vec<Value> =
        serde_saphyr::from_multiple(text).map_err(|e| InputError::Yaml(e.to_string()))?;
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(index, value)| Document { index, value })
        .collect())
}
