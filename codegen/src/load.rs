//! Reading documents from bytes or files, with errors that point into the document.

use crate::error::{Error, Result, escape_pointer_token};
use crate::openapi::Document;

/// One loaded document together with the name used in error messages.
#[derive(Debug, Clone)]
pub struct LoadedDocument {
    /// The file name or label given when loading.
    pub origin: String,
    /// The parsed document.
    pub document: Document,
}

/// Parses a document from bytes; `origin` names it in errors.
pub fn parse_document(origin: &str, bytes: &[u8]) -> Result<LoadedDocument> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|source| Error::Syntax {
            file: origin.to_owned(),
            source,
        })?;
    let document: Document = serde_path_to_error::deserialize(&value).map_err(|err| {
        let pointer = path_to_pointer(err.path());
        Error::Malformed {
            file: origin.to_owned(),
            pointer,
            message: err.into_inner().to_string(),
        }
    })?;
    if !document.openapi.starts_with("3.") {
        return Err(Error::Unsupported {
            file: origin.to_owned(),
            pointer: "/openapi".to_owned(),
            message: format!(
                "OpenAPI version {:?}; only 3.x documents are read",
                document.openapi
            ),
        });
    }
    Ok(LoadedDocument {
        origin: origin.to_owned(),
        document,
    })
}

fn path_to_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("/{index}")),
            Segment::Map { key } => out.push_str(&format!("/{}", escape_pointer_token(key))),
            Segment::Enum { variant } => {
                out.push_str(&format!("/{}", escape_pointer_token(variant)))
            }
            Segment::Unknown => out.push_str("/?"),
        }
    }
    if out.is_empty() { "/".to_owned() } else { out }
}
