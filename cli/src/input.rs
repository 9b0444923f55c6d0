//! Reading objects: `-f` paths (files, directories, `-`), streamed document by document so
//! that large inputs stay in bounded memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use apfkit_conversion::scheme::{self, HubObject, UnknownFields};
use serde_json::Value;

use crate::failure::{Failure, Location};

/// One input: a file or standard input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Standard input (`-`, or no `-f` at all).
    Stdin,
    /// A file.
    File(PathBuf),
}

impl Source {
    /// The name errors use.
    pub fn name(&self) -> String {
        match self {
            Source::Stdin => "-".to_owned(),
            Source::File(path) => path.display().to_string(),
        }
    }

    /// The file's path, if it is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Source::Stdin => None,
            Source::File(path) => Some(path),
        }
    }
}

const EXTENSIONS: [&str; 3] = ["yaml", "yml", "json"];

/// Expands `-f` values: files as given, directories to their `.yaml`, `.yml` and `.json` files
/// (recursively, in sorted order), `-` to standard input; none at all means standard input.
pub fn sources(paths: &[String]) -> Result<Vec<Source>, Failure> {
    if paths.is_empty() {
        return Ok(vec![Source::Stdin]);
    }
    let mut sources = Vec::new();
    for path in paths {
        if path == "-" {
            sources.push(Source::Stdin);
            continue;
        }
        let path = PathBuf::from(path);
        let metadata = std::fs::metadata(&path)
            .map_err(|e| Failure::Invalid(format!("{}: {e}", path.display())))?;
        if metadata.is_dir() {
            let mut found = Vec::new();
            walk(&path, &mut found)?;
            found.sort();
            sources.extend(found.into_iter().map(Source::File));
        } else {
            sources.push(Source::File(path));
        }
    }
    Ok(sources)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), Failure> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| Failure::Invalid(format!("{}: {e}", dir.display())))?;
    for entry in entries {
        let path = entry
            .map_err(|e| Failure::Invalid(format!("{}: {e}", dir.display())))?
            .path();
        if path.is_dir() {
            walk(&path, found)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| EXTENSIONS.contains(&e))
        {
            found.push(path);
        }
    }
    Ok(())
}

/// Calls `each` with every document of `source` and its location, in order, reading one
/// document at a time. Input whose first non-blank character is `{` or `[` is a stream of JSON
/// values; anything else is multi-document YAML (empty documents are skipped and not counted).
pub fn for_each_document(
    source: &Source,
    mut each: impl FnMut(Location, Value) -> Result<(), Failure>,
) -> Result<(), Failure> {
    let name = source.name();
    let whole = Location {
        file: name.clone(),
        document: None,
    };
    let reader: Box<dyn Read> = match source {
        Source::Stdin => Box::new(std::io::stdin().lock()),
        Source::File(path) => Box::new(File::open(path).map_err(|e| Failure::at(&whole, e))?),
    };
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let json = first_non_blank(&mut reader)
        .map_err(|e| Failure::at(&whole, e))?
        .is_some_and(|b| b == b'{' || b == b'[');
    let location = |index| Location {
        file: name.clone(),
        document: Some(index),
    };
    if json {
        let stream = serde_json::Deserializer::from_reader(reader).into_iter::<Value>();
        for (index, value) in stream.enumerate() {
            let value =
                value.map_err(|e| Failure::at(&location(index), format!("invalid JSON: {e}")))?;
            each(location(index), value)?;
        }
    } else {
        let mut index = 0;
        for value in serde_saphyr::read::<_, Value>(&mut reader) {
            let value =
                value.map_err(|e| Failure::at(&location(index), format!("invalid YAML: {e}")))?;
            if value.is_null() {
                continue;
            }
            each(location(index), value)?;
            index += 1;
        }
    }
    Ok(())
}

/// The first byte that is not whitespace or a UTF-8 byte-order mark, without consuming it.
fn first_non_blank(reader: &mut impl BufRead) -> std::io::Result<Option<u8>> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(None);
        }
        let skip = if buffer.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            match buffer.iter().position(|b| !b.is_ascii_whitespace()) {
                Some(0) => return Ok(Some(buffer[0])),
                Some(n) => n,
                None => buffer.len(),
            }
        };
        // Whitespace before a YAML document is harmless to drop.
        reader.consume(skip);
    }
}

/// Calls `each` with every object of `paths` decoded and defaulted to its hub form (each item
/// of a list), in order; unknown fields are reported on standard error.
pub fn for_each_hub_object(
    paths: &[String],
    mut each: impl FnMut(&Location, HubObject) -> Result<(), Failure>,
) -> Result<(), Failure> {
    for source in sources(paths)? {
        for_each_document(&source, |location, value| {
            let (objects, warnings) = scheme::to_hub(&value, UnknownFields::Warn)
                .map_err(|e| Failure::at(&location, e))?;
            for warning in warnings {
                eprintln!("{location}: warning: {warning}");
            }
            objects
                .into_iter()
                .try_for_each(|object| each(&location, object))
        })?;
    }
    Ok(())
}
