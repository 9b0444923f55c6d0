//! Writing objects: YAML documents or JSON values, held until everything succeeded and then
//! moved into place all at once.
//!
//! What is guaranteed:
//! - Standard output gets nothing unless every document converted. The output is held in
//!   memory up to 8 MiB, then in a temporary file in `$TMPDIR`, so small outputs need no
//!   writable `$TMPDIR`.
//! - A regular file is replaced atomically: written to a temporary file beside it, then renamed
//!   over it. The file keeps its mode and (where permitted) its owner and group; a symlink is
//!   followed and its target replaced, the link itself kept. A file with other hard links
//!   becomes a new file: the other links keep the old content (as with `sed -i`). A file
//!   without write permission (mode 0444, say) is refused.
//! - Anything else (a character device such as `/dev/null`, a FIFO, a socket, `/dev/stdout`)
//!   is opened and written like standard output, never replaced.
//! - With several files (`--in-place`), every file is checked to be replaceable before any is
//!   replaced, and files already replaced are put back if a later one still fails.

use std::fs::{File, Metadata, OpenOptions};
use std::io::{BufWriter, IsTerminal, Seek, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use apfkit_scheme::scheme::{Encoding, SCHEME};
use serde_json::Value;
use tempfile::NamedTempFile;

use crate::cleanup;
use crate::failure::Failure;
use crate::input;

/// How objects are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ObjectFormat {
    /// YAML documents separated by `---`.
    Yaml,
    /// JSON as kube-apiserver writes it: fields in Go's order, indented by two spaces.
    Json,
    /// Kubernetes protobuf as kube-apiserver stores it (k8s\0 + runtime.Unknown): one object
    /// as it is, several each after its length in 4 bytes, big-endian (Kubernetes' framing).
    Protobuf,
}

impl ObjectFormat {
    /// The format of a file name: JSON for `.json`, protobuf for `.pb`, YAML otherwise.
    pub fn of_path(path: &Path) -> ObjectFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => ObjectFormat::Json,
            Some("pb") => ObjectFormat::Protobuf,
            _ => ObjectFormat::Yaml,
        }
    }
}

/// Where the output finally goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output.
    Stdout,
    /// A path: a regular file is replaced atomically, anything else written.
    File(PathBuf),
}

impl Destination {
    fn name(&self) -> String {
        match self {
            Destination::Stdout => "-".to_owned(),
            Destination::File(path) => path.display().to_string(),
        }
    }
}

/// Output held in memory up to this size, then in a temporary file.
const MEMORY_LIMIT: usize = 8 << 20;

/// Bytes gathered before each write to a file: fewer, larger writes.
const WRITE_BUFFER: usize = 256 << 10;

/// Documents held until [`commit`].
pub struct Sink {
    format: ObjectFormat,
    name: String,
    target: Target,
    held: Held,
    written: usize,
    /// The first protobuf object, held back until it is known whether it is alone (written as
    /// it is) or the first of several (each framed by its length).
    first_protobuf: Option<Vec<u8>>,
}

/// What the destination turned out to be.
enum Target {
    /// Standard output.
    Stdout,
    /// Not a regular file: opened and written at commit.
    Special(PathBuf),
    /// A regular file (or none yet) at this path, symlinks resolved.
    Regular {
        path: PathBuf,
        existing: Option<Metadata>,
    },
}

/// Output held before the commit.
enum Held {
    Memory(Vec<u8>),
    File(BufWriter<Temporary>),
    /// A regular file's output, complete: closed, with the target's mode and owner.
    Closed(Temporary),
}

impl Sink {
    /// A sink for `destination`. A regular file is checked now (it must be writable), so that
    /// nothing is converted for an output that cannot be written.
    pub fn new(format: ObjectFormat, destination: Destination) -> Result<Self, Failure> {
        let name = destination.name();
        if format == ObjectFormat::Protobuf
            && destination == Destination::Stdout
            && std::io::stdout().is_terminal()
        {
            return Err(Failure::Usage(
                "refusing to write protobuf (binary) to a terminal: redirect standard output \
                 to a file, or choose -o yaml or -o json"
                    .to_owned(),
            ));
        }
        let io = |source| Failure::output(&name, source);
        let target = match destination {
            Destination::Stdout => Target::Stdout,
            Destination::File(path) => classify(&path).map_err(io)?,
        };
        let held = match &target {
            Target::Regular { path, existing } => {
                let temporary = Temporary::beside(path, existing.is_none()).map_err(io)?;
                Held::File(BufWriter::with_capacity(WRITE_BUFFER, temporary))
            }
            Target::Stdout | Target::Special(_) => Held::Memory(Vec::new()),
        };
        Ok(Sink {
            format,
            name,
            target,
            held,
            written: 0,
            first_protobuf: None,
        })
    }

    /// How this sink's documents are encoded.
    pub fn encoding(&self) -> Encoding {
        match self.format {
            ObjectFormat::Yaml => Encoding::Yaml,
            ObjectFormat::Json => Encoding::JsonPretty,
            ObjectFormat::Protobuf => Encoding::Protobuf,
        }
    }

    /// Appends one document given as a JSON value. A document larger than the reader's limit
    /// is refused, so that everything written can be read back.
    pub fn write(&mut self, value: &Value) -> Result<(), Failure> {
        let bytes = SCHEME
            .encode_value(value, self.encoding())
            .map_err(|e| self.encoding_failure(e.message))?;
        self.write_encoded(bytes)
    }

    /// The failure of a document that cannot be written in this sink's format.
    pub fn encoding_failure(&self, message: String) -> Failure {
        self.error(std::io::Error::other(message))
    }

    /// Appends one document already written in [`Sink::encoding`], as [`Sink::write`] does.
    pub fn write_encoded(&mut self, bytes: Vec<u8>) -> Result<(), Failure> {
        let (before, after): (&[u8], &[u8]) = match self.format {
            ObjectFormat::Yaml if self.written > 0 => (b"---\n", b""),
            ObjectFormat::Json => (b"", b"\n"),
            ObjectFormat::Yaml | ObjectFormat::Protobuf => (b"", b""),
        };
        let length = before.len() + bytes.len() + after.len();
        let limit = input::limits().max_document_bytes;
        if length > limit {
            return Err(self.encoding_failure(format!(
                "a document of the output has {length} bytes, more than the input limit of \
                 {limit} that reading it back would apply; raise --max-document-size"
            )));
        }
        if self.format == ObjectFormat::Protobuf {
            self.written += 1;
            if self.written == 1 {
                self.first_protobuf = Some(bytes);
                return Ok(());
            }
            if let Some(first) = self.first_protobuf.take() {
                self.append_frame(&first)?;
            }
            return self.append_frame(&bytes);
        }
        [before, &bytes, after]
            .into_iter()
            .try_for_each(|part| self.append(part))
            .map_err(|source| self.error(source))?;
        self.written += 1;
        Ok(())
    }

    /// Appends a protobuf object after its length (4 bytes, big-endian).
    fn append_frame(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        let length = u32::try_from(bytes.len())
            .map_err(|_| self.error(std::io::Error::other("an object over 4 GiB")))?;
        self.append(&length.to_be_bytes())
            .and_then(|()| self.append(bytes))
            .map_err(|source| self.error(source))
    }

    /// A failure writing this sink's output.
    fn error(&self, source: std::io::Error) -> Failure {
        Failure::output(&self.name, source)
    }

    /// Documents written so far.
    pub fn documents(&self) -> usize {
        self.written
    }

    /// Completes a regular file's output: flushed to disk with the target's mode and owner,
    /// and closed, so that many finished files hold no descriptors until [`commit`].
    pub fn close(&mut self) -> Result<(), Failure> {
        if let Some(alone) = self.first_protobuf.take() {
            self.append(&alone).map_err(|source| self.error(source))?;
        }
        let Target::Regular { existing, .. } = &self.target else {
            return Ok(());
        };
        self.held = match std::mem::replace(&mut self.held, Held::Memory(Vec::new())) {
            Held::File(file) => {
                let mut temporary = file.into_inner().map_err(|e| self.error(e.into_error()))?;
                temporary
                    .close(existing.as_ref())
                    .map_err(|e| self.error(e))?;
                Held::Closed(temporary)
            }
            other => other,
        };
        Ok(())
    }

    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if let Held::Memory(memory) = &mut self.held {
            if memory.len() + bytes.len() <= MEMORY_LIMIT {
                memory.extend_from_slice(bytes);
                return Ok(());
            }
            let mut spilled = Temporary::in_temp_dir().map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!(
                        "output over {} MiB is held in a temporary file, which could not be \
                         created in {} ({e}); set TMPDIR to a writable directory",
                        MEMORY_LIMIT >> 20,
                        std::env::temp_dir().display()
                    ),
                )
            })?;
            spilled.file_mut()?.write_all(memory)?;
            self.held = Held::File(BufWriter::with_capacity(WRITE_BUFFER, spilled));
        }
        match &mut self.held {
            Held::File(file) => file.write_all(bytes),
            Held::Memory(_) => unreachable!("spilled above"),
            Held::Closed(_) => Err(std::io::Error::other("the output was completed already")),
        }
    }
}

/// Moves every sink's output into place: regular files first, all or nothing (see the module
/// documentation), then standard output and special files in order.
pub fn commit(sinks: Vec<Sink>) -> Result<(), Failure> {
    let mut replacements = Vec::new();
    let mut streams = Vec::new();
    for sink in sinks {
        let name = sink.name.clone();
        let io = |source| Failure::output(&name, source);
        let mut sink = sink;
        sink.close()?;
        match (sink.target, sink.held) {
            (Target::Regular { path, .. }, Held::Closed(temporary)) => {
                replacements.push(Replacement {
                    name,
                    path,
                    temporary,
                    backup: None,
                });
            }
            (Target::Regular { .. }, _) => {
                return Err(io(std::io::Error::other("the output was not completed")));
            }
            (Target::Stdout, held) => streams.push((name, None, held)),
            (Target::Special(path), held) => streams.push((name, Some(path), held)),
        }
    }
    replace_all(replacements)?;
    for (name, path, held) in streams {
        write_stream(path.as_deref(), held).map_err(|source| Failure::output(&name, source))?;
    }
    Ok(())
}

/// What the path is: a regular file (or nothing yet) to replace, or something to write into.
fn classify(path: &Path) -> std::io::Result<Target> {
    let real = resolve_links(path)?;
    // /dev/stdout and /proc/self/fd/N name an open file of the process: write into it.
    if real.components().nth(1) == Some(Component::Normal("proc".as_ref())) {
        return Ok(Target::Special(path.to_owned()));
    }
    let existing = match std::fs::metadata(&real) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Target::Regular {
                path: real,
                existing: None,
            });
        }
        Err(e) => return Err(e),
    };
    if existing.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "is a directory, not a file to write",
        ));
    }
    if !existing.is_file() {
        return Ok(Target::Special(path.to_owned()));
    }
    if existing.permissions().mode() & 0o222 == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "the file is read-only (mode {:04o}); refusing to replace it",
                existing.permissions().mode() & 0o7777
            ),
        ));
    }
    // The permission check of the system itself, without changing the file.
    OpenOptions::new().write(true).open(&real)?;
    if existing.nlink() > 1 {
        eprintln!(
            "warning: {}: has {} hard links; it is replaced by a new file and the other links \
             keep the old content",
            path.display(),
            existing.nlink()
        );
    }
    Ok(Target::Regular {
        path: real,
        existing: Some(existing),
    })
}

/// `path` with symlinks of its last component followed (relative targets are relative to the
/// link's directory), up to 40 links as the kernel allows. The result may not exist.
fn resolve_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut current = path.to_owned();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)?;
                current = match current.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        "too many levels of symbolic links",
    ))
}

fn write_stream(path: Option<&Path>, held: Held) -> std::io::Result<()> {
    let mut out: Box<dyn Write> = match path {
        None => Box::new(std::io::stdout().lock()),
        Some(path) => Box::new(OpenOptions::new().write(true).truncate(true).open(path)?),
    };
    let result = match held {
        Held::Memory(memory) => out.write_all(&memory),
        Held::File(file) => {
            let mut temporary = file.into_inner().map_err(|e| e.into_error())?;
            let file = temporary.file_mut()?;
            file.rewind()?;
            std::io::copy(file, &mut out).map(|_| ())
        }
        Held::Closed(_) => Err(std::io::Error::other("a stream is never closed early")),
    };
    match result.and_then(|()| out.flush()) {
        // A closed pipe (`apfkit ... | head`) ends the output quietly.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// One regular file to replace.
struct Replacement {
    name: String,
    path: PathBuf,
    temporary: Temporary,
    /// A hard link to the file's old content, kept until every file is replaced.
    backup: Option<PathBuf>,
}

/// Replaces every file or none: first a hard link to each existing file's old content is made
/// beside it (which fails, before anything changed, for a file that cannot be replaced: an
/// immutable file, a bind-mounted file, a file on another mount); then each temporary file is
/// renamed over its target; a failure puts the old files back. The registry of temporary files
/// is held throughout, so a signal waits until the files are consistent.
fn replace_all(mut replacements: Vec<Replacement>) -> Result<(), Failure> {
    let mut live = cleanup::lock();
    let failed = |replacement: &Replacement, source| Failure::output(&replacement.name, source);
    for index in 0..replacements.len() {
        let replacement = &replacements[index];
        if !replacement.path.exists() {
            continue;
        }
        match backup_of(&replacement.path) {
            Ok(backup) => {
                live.insert(backup.clone());
                replacements[index].backup = Some(backup);
            }
            Err(e) => {
                let error = failed(
                    &replacements[index],
                    std::io::Error::new(
                        e.kind(),
                        format!("cannot be replaced ({e}); nothing was changed"),
                    ),
                );
                remove_backups(&replacements, &mut live, &[]);
                return Err(error);
            }
        }
    }
    for index in 0..replacements.len() {
        let replacement = &replacements[index];
        let from = replacement.temporary.path().unwrap_or(Path::new(""));
        if let Err(e) = std::fs::rename(from, &replacement.path) {
            // Renaming a backup over its target restores the old file atomically. Every
            // restore is tried; the backups of those that fail are kept.
            let mut kept = Vec::new();
            for done in &replacements[..index] {
                let restored = match &done.backup {
                    Some(backup) => std::fs::rename(backup, &done.path).is_ok(),
                    None => std::fs::remove_file(&done.path).is_ok(),
                };
                if !restored {
                    kept.extend(done.backup.clone());
                }
            }
            remove_backups(&replacements, &mut live, &kept);
            let outcome = if kept.is_empty() {
                "the files already replaced were restored".to_owned()
            } else {
                let kept: Vec<String> = kept.iter().map(|b| b.display().to_string()).collect();
                format!(
                    "restoring some files already replaced failed; their old content is in {}",
                    kept.join(", ")
                )
            };
            return Err(failed(
                replacement,
                std::io::Error::new(e.kind(), format!("{e}; {outcome}")),
            ));
        }
        replacements[index].temporary.persisted(&mut live);
    }
    remove_backups(&replacements, &mut live, &[]);
    Ok(())
}

/// Removes the backups (those renamed back are gone already), but those in `keep`, which
/// hold content that could not be restored; none stays registered for removal.
fn remove_backups(
    replacements: &[Replacement],
    live: &mut std::collections::BTreeSet<PathBuf>,
    keep: &[PathBuf],
) {
    for backup in replacements.iter().filter_map(|r| r.backup.as_ref()) {
        live.remove(backup);
        if !keep.contains(backup) {
            let _ = std::fs::remove_file(backup);
        }
    }
}

/// A hard link to `path` at a free name beside it, `.NAME.apfkit-XXXXXX.bak`.
fn backup_of(path: &Path) -> std::io::Result<PathBuf> {
    let backup = tempfile::Builder::new()
        .prefix(&format!(".{}.apfkit-", file_name(path)))
        .suffix(".bak")
        .make_in(parent_dir(path), |free| std::fs::hard_link(path, free))?;
    backup.into_temp_path().keep().map_err(|e| e.error)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// A registered temporary file, removed when dropped unless persisted. Once written and
/// prepared it is closed and kept by name only, so that converting thousands of files in place
/// holds no descriptor per file.
struct Temporary {
    state: TemporaryState,
}

enum TemporaryState {
    Open(NamedTempFile),
    Closed(tempfile::TempPath),
    Persisted,
}

impl Temporary {
    /// `.NAME.apfkit-XXXXXX.tmp` beside `target`; a new file gets the mode a newly created
    /// file would (0666 less the umask).
    fn beside(target: &Path, new_file: bool) -> std::io::Result<Self> {
        let prefix = format!(".{}.apfkit-", file_name(target));
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        if new_file {
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        Self::registered(|| builder.tempfile_in(parent_dir(target)))
    }

    /// `apfkit-XXXXXX.tmp` in `$TMPDIR`.
    fn in_temp_dir() -> std::io::Result<Self> {
        Self::registered(|| {
            tempfile::Builder::new()
                .prefix("apfkit-")
                .suffix(".tmp")
                .tempfile()
        })
    }

    /// Creates the file while holding the registry, so that a signal cannot come between the
    /// file's creation and its registration (the handler would miss it and exit).
    fn registered(
        create: impl FnOnce() -> std::io::Result<NamedTempFile>,
    ) -> std::io::Result<Self> {
        let mut live = cleanup::lock();
        let file = create()?;
        live.insert(file.path().to_owned());
        drop(live);
        Ok(Temporary {
            state: TemporaryState::Open(file),
        })
    }

    fn path(&self) -> Option<&Path> {
        match &self.state {
            TemporaryState::Open(file) => Some(file.path()),
            TemporaryState::Closed(path) => Some(path),
            TemporaryState::Persisted => None,
        }
    }

    fn file_mut(&mut self) -> std::io::Result<&mut File> {
        match &mut self.state {
            TemporaryState::Open(file) => Ok(file.as_file_mut()),
            _ => Err(std::io::Error::other("the temporary file is closed")),
        }
    }

    /// Gives the file the old file's mode, owner and group, flushes it to disk and closes it.
    fn close(&mut self, existing: Option<&Metadata>) -> std::io::Result<()> {
        let TemporaryState::Open(file) = &self.state else {
            return Ok(());
        };
        let handle = file.as_file();
        if let Some(old) = existing {
            handle.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
            // Only root may give a file away; others keep their own ownership.
            if std::os::unix::fs::fchown(handle, Some(old.uid()), Some(old.gid())).is_err() {
                let _ = std::os::unix::fs::fchown(handle, None, Some(old.gid()));
            }
            // chown clears set-user-ID and set-group-ID bits: set the mode again.
            handle.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
        }
        handle.sync_all()?;
        if let TemporaryState::Open(file) =
            std::mem::replace(&mut self.state, TemporaryState::Persisted)
        {
            self.state = TemporaryState::Closed(file.into_temp_path());
        }
        Ok(())
    }

    /// The file was renamed into place: nothing to remove any more.
    fn persisted(&mut self, live: &mut std::collections::BTreeSet<PathBuf>) {
        let path = match std::mem::replace(&mut self.state, TemporaryState::Persisted) {
            TemporaryState::Open(file) => file.into_temp_path(),
            TemporaryState::Closed(path) => path,
            TemporaryState::Persisted => return,
        };
        live.remove(&*path);
        // The name now belongs to the target; keep() stops the removal on drop.
        let _ = path.keep();
    }
}

impl Write for Temporary {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file_mut()?.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file_mut()?.flush()
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        let path = self.path().map(Path::to_owned);
        // Dropping the file or the path removes it.
        self.state = TemporaryState::Persisted;
        if let Some(path) = path {
            cleanup::unregister(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temporary_path(sink: &Sink) -> PathBuf {
        match &sink.held {
            Held::File(file) => file.get_ref().path().unwrap().to_owned(),
            Held::Closed(temporary) => temporary.path().unwrap().to_owned(),
            Held::Memory(_) => panic!("a regular file is held in a file"),
        }
    }

    /// A rename that fails after others succeeded puts the replaced files back.
    #[test]
    fn a_failed_rename_restores_the_files_already_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let names = ["a.yaml", "b.yaml", "c.yaml"];
        let mut sinks = Vec::new();
        for name in names {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("old {name}\n")).unwrap();
            let mut sink = Sink::new(ObjectFormat::Json, Destination::File(path)).unwrap();
            sink.write(&serde_json::json!({ "new": name })).unwrap();
            sinks.push(sink);
        }
        // The third rename fails: its temporary file is gone.
        std::fs::remove_file(temporary_path(&sinks[2])).unwrap();
        let error = commit(sinks).unwrap_err().to_string();
        assert!(error.contains("c.yaml"), "{error}");
        assert!(
            error.contains("the files already replaced were restored"),
            "{error}"
        );
        for name in names {
            let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
            assert_eq!(text, format!("old {name}\n"));
        }
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            left.len(),
            names.len(),
            "no temporary or backup file is left: {left:?}"
        );
        let registered = cleanup::lock().iter().any(|p| p.starts_with(dir.path()));
        assert!(
            !registered,
            "nothing of this directory is registered any more"
        );
    }

    /// JSON of a served kind is kube-apiserver's (Go's field order); any other document, kept
    /// when a file is rewritten in place, is written as it was read (keys sorted).
    #[test]
    fn json_is_in_gos_order_for_served_kinds_only() {
        let mut sink = Sink::new(ObjectFormat::Json, Destination::Stdout).unwrap();
        sink.write(&serde_json::json!({
            "metadata": {"name": "x"}, "kind": "APIService", "apiVersion": "apiregistration.k8s.io/v1"
        }))
        .unwrap();
        sink.write(&serde_json::json!({
            "metadata": {"name": "x"}, "kind": "ConfigMap", "apiVersion": "v1"
        }))
        .unwrap();
        let Held::Memory(text) = &sink.held else {
            panic!("small output stays in memory");
        };
        assert_eq!(
            String::from_utf8_lossy(text),
            concat!(
                "{\n  \"kind\": \"APIService\",\n  \"apiVersion\": \"apiregistration.k8s.io/v1\",\n",
                "  \"metadata\": {\n    \"name\": \"x\"\n  },\n  \"spec\": {\n    \"groupPriorityMinimum\": 0,\n",
                "    \"versionPriority\": 0\n  },\n  \"status\": {}\n}\n",
                "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"ConfigMap\",\n  \"metadata\": {\n",
                "    \"name\": \"x\"\n  }\n}\n",
            )
        );
    }

    /// Standard output is held in memory up to the limit, then in a registered temporary file.
    #[test]
    fn large_output_spills_to_a_temporary_file() {
        let mut sink = Sink::new(ObjectFormat::Json, Destination::Stdout).unwrap();
        let big = Value::String("x".repeat(1 << 20));
        for _ in 0..7 {
            sink.write(&big).unwrap();
        }
        assert!(matches!(sink.held, Held::Memory(_)));
        sink.write(&big).unwrap();
        sink.write(&big).unwrap();
        let path = match &sink.held {
            Held::File(file) => file.get_ref().path().unwrap().to_owned(),
            _ => panic!("spilled past 8 MiB"),
        };
        assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("apfkit-")
        );
        assert!(cleanup::lock().contains(&path));
        drop(sink);
        assert!(!path.exists() && !cleanup::lock().contains(&path));
    }
}
