//! Writing objects: YAML documents or JSON values, through a temporary file that is renamed
//! into place (or copied to standard output) only once everything succeeded.

use std::io::{BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use tempfile::NamedTempFile;

use crate::failure::Failure;

/// How objects are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// YAML documents separated by `---`.
    Yaml,
    /// Indented JSON values, one after another.
    Json,
}

impl Format {
    /// The format of a file name: JSON for `.json`, YAML otherwise.
    pub fn of_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => Format::Json,
            _ => Format::Yaml,
        }
    }
}

/// Where the output finally goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output.
    Stdout,
    /// A file, replaced atomically.
    File(PathBuf),
}

/// Documents written to a temporary file until [`Sink::commit`].
pub struct Sink {
    format: Format,
    destination: Destination,
    file: BufWriter<NamedTempFile>,
    written: usize,
}

impl Sink {
    /// A sink for `destination`; a file's temporary sibling is created in its directory so
    /// that the final rename stays on one file system.
    pub fn new(format: Format, destination: Destination) -> Result<Self, Failure> {
        let temporary = match &destination {
            Destination::Stdout => NamedTempFile::new(),
            Destination::File(path) => {
                let dir = path
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                NamedTempFile::new_in(dir)
            }
        }
        .map_err(|source| Failure::Output {
            path: destination.name(),
            source,
        })?;
        Ok(Sink {
            format,
            destination,
            file: BufWriter::new(temporary),
            written: 0,
        })
    }

    /// Appends one document.
    pub fn write(&mut self, value: &impl Serialize) -> Result<(), Failure> {
        let failure = |message: String| Failure::Output {
            path: self.destination.name(),
            source: std::io::Error::other(message),
        };
        let text = match self.format {
            Format::Yaml => {
                let mut text =
                    serde_saphyr::to_string(value).map_err(|e| failure(e.to_string()))?;
                if self.written > 0 {
                    text.insert_str(0, "---\n");
                }
                text
            }
            Format::Json => {
                let mut text =
                    serde_json::to_string_pretty(value).map_err(|e| failure(e.to_string()))?;
                text.push('\n');
                text
            }
        };
        self.file
            .write_all(text.as_bytes())
            .map_err(|source| Failure::Output {
                path: self.destination.name(),
                source,
            })?;
        self.written += 1;
        Ok(())
    }

    /// Moves the output into place: renames the file, or copies it to standard output.
    pub fn commit(self) -> Result<(), Failure> {
        let name = self.destination.name();
        let io = |source| Failure::Output {
            path: name.clone(),
            source,
        };
        let mut temporary = self.file.into_inner().map_err(|e| io(e.into_error()))?;
        match &self.destination {
            Destination::Stdout => {
                temporary.as_file_mut().rewind().map_err(io)?;
                let mut stdout = std::io::stdout().lock();
                match std::io::copy(temporary.as_file_mut(), &mut stdout)
                    .and_then(|_| stdout.flush())
                {
                    // A closed pipe (`apfkit ... | head`) ends the output quietly.
                    Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(io(e)),
                    _ => Ok(()),
                }
            }
            Destination::File(path) => {
                temporary.as_file().sync_all().map_err(io)?;
                temporary.persist(path).map(|_| ()).map_err(|e| io(e.error))
            }
        }
    }
}

impl Destination {
    fn name(&self) -> String {
        match self {
            Destination::Stdout => "-".to_owned(),
            Destination::File(path) => path.display().to_string(),
        }
    }
}
