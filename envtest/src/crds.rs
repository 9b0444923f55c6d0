//! The CRD manifests of a file or directory, read within limits whatever the files are.

use std::path::{Path, PathBuf};

use apfkit_runtime::files::{FileError, read_at_most};
use apfkit_runtime::scheme::{Limits, ReadError, Scheme};

use crate::Error;

/// The most a file of CRDs may hold (the largest CRDs in the wild are a few MiB).
const FILE_LIMIT: u64 = 64 << 20;

/// The names a directory's CRD files end with.
const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Every CustomResourceDefinition of `path` (a file, or the files of a directory with
/// [`EXTENSIONS`], in name order), each with where it was read: `FILE (document N)`.
pub(crate) fn read(path: &Path) -> Result<Vec<(String, serde_json::Value)>, Error> {
    let fail = |path: &Path, message: String| Error::Crds {
        path: path.to_owned(),
        message,
    };
    let metadata = std::fs::metadata(path).map_err(|e| fail(path, e.to_string()))?;
    let files = if metadata.is_dir() {
        let mut files: Vec<PathBuf> = Vec::new();
        for entry in std::fs::read_dir(path).map_err(|e| fail(path, e.to_string()))? {
            let entry = entry.map_err(|e| fail(path, e.to_string()))?;
            let file = entry.path();
            let wanted = file
                .extension()
                .and_then(|extension| extension.to_str())
                .is_some_and(|extension| EXTENSIONS.contains(&extension));
            // Only regular files (through links): a FIFO or device among them is left alone.
            if wanted && std::fs::metadata(&file).is_ok_and(|m| m.is_file()) {
                files.push(file);
            }
        }
        files.sort();
        files
    } else if metadata.is_file() {
        vec![path.to_owned()]
    } else {
        return Err(fail(path, "not a regular file or a directory".to_owned()));
    };
    let mut manifests = Vec::new();
    for file in files {
        manifests.extend(read_file(&file)?);
    }
    Ok(manifests)
}

/// The CRDs of one file.
fn read_file(file: &Path) -> Result<Vec<(String, serde_json::Value)>, Error> {
    let fail = |message: String| Error::Crds {
        path: file.to_owned(),
        message,
    };
    let bytes = read_at_most(file, FILE_LIMIT).map_err(|error| match error {
        FileError::TooLarge(_) => fail(error.to_string()),
        other => fail(other.to_string()),
    })?;
    let scheme: Scheme<()> = Scheme::new(&[]);
    let mut manifests = Vec::new();
    scheme
        .read_values(bytes.as_slice(), &Limits::default(), |document| {
            if let Some(field) = document.duplicate_fields.first() {
                return Err(ReadFailure::Duplicate {
                    document: document.index,
                    field: field.clone(),
                });
            }
            let kind = document
                .value
                .get("kind")
                .and_then(serde_json::Value::as_str);
            if kind == Some("CustomResourceDefinition") {
                let location = format!("{} (document {})", file.display(), document.index + 1);
                manifests.push((location, document.value));
            }
            Ok(())
        })
        .map_err(|failure| match failure {
            ReadFailure::Read(error) => {
                fail(format!("document {}: {}", error.document + 1, error.error))
            }
            ReadFailure::Duplicate { document, field } => fail(format!(
                "document {}: {field}: the field is given more than once",
                document + 1
            )),
        })?;
    Ok(manifests)
}

/// Why a file's documents were not read.
enum ReadFailure {
    Read(ReadError),
    /// A key given twice in one object (kubectl refuses such a manifest).
    Duplicate {
        document: usize,
        field: String,
    },
}

impl From<ReadError> for ReadFailure {
    fn from(error: ReadError) -> Self {
        ReadFailure::Read(error)
    }
}
