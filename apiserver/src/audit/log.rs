//! The audit log: events as JSON lines (kube-apiserver's `--audit-log-format=json`), to
//! standard output (`--audit-log-path=-`) or to a file rotated as kube-apiserver rotates it
//! with lumberjack (`--audit-log-maxsize`, `--audit-log-maxbackup`, `--audit-log-maxage`):
//! the file renamed `NAME-2006-01-02T15-04-05.000.EXT` (UTC) before a write would take it past
//! its size, the oldest backups removed past the count or the age.
//!
//! Each event is encoded on the request's path and queued; one thread writes the queue,
//! which is bounded in events (`--audit-log-batch-buffer-size`) and in bytes
//! ([`Buffer::bytes`]), so that a stalled log costs bounded memory whatever the events'
//! size. In [`Mode::Blocking`] (`--audit-log-mode=blocking`, kube-apiserver's default) a
//! request waits, before it is served, until the queue has room ([`LogSink`]'s
//! [`Sink::room`]): a slow disk slows requests and no event is dropped. In [`Mode::Batch`] a
//! full queue drops the event, which the auditor counts in
//! `apiserver_audit_error_total{plugin="buffered"}`: a request never waits for the disk. With truncation (`--audit-log-truncate-enabled`), an event larger than
//! `--audit-log-truncate-max-event-size` loses its request and response objects, as
//! kube-apiserver's `truncate` plugin cuts it, and is dropped if still larger (counted under
//! `plugin="truncate"`).

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::time::{Duration, SystemTime};

use super::{Event, Sink};

/// Events queued before more are dropped (kube-apiserver's `--audit-log-batch-buffer-size`
/// default).
pub const DEFAULT_BUFFER: usize = 10_000;

/// Bytes of events queued before more are dropped: what a stalled log may hold in memory.
pub const DEFAULT_BUFFER_BYTES: usize = 64 << 20;

/// kube-apiserver's `--audit-log-truncate-max-event-size` default (100 KiB).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 102_400;

/// The annotation of an event truncated (`audit.k8s.io/truncated`).
const TRUNCATED_ANNOTATION: &str = "audit.k8s.io/truncated";

/// What a full queue does (`--audit-log-mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// A request waits for room in the queue before it is served; no event is dropped
    /// (kube-apiserver's default).
    #[default]
    Blocking,
    /// An event that finds the queue full is dropped and counted; no request waits.
    Batch,
}

/// What the queue holds, what a full one does, and how large one event may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buffer {
    /// Events queued at most (`--audit-log-batch-buffer-size`).
    pub events: usize,
    /// Bytes of encoded events queued at most.
    pub bytes: usize,
    /// What a full queue does.
    pub mode: Mode,
    /// With truncation on (`--audit-log-truncate-enabled`), the largest event written
    /// (`--audit-log-truncate-max-event-size`).
    pub max_event_bytes: Option<usize>,
}

impl Default for Buffer {
    fn default() -> Self {
        Buffer {
            events: DEFAULT_BUFFER,
            bytes: DEFAULT_BUFFER_BYTES,
            mode: Mode::default(),
            max_event_bytes: None,
        }
    }
}

/// What is queued and not yet written, shared with the writer, which wakes the requests
/// waiting for room as it writes.
#[derive(Default)]
struct Queued {
    bytes: AtomicUsize,
    events: AtomicUsize,
    room: tokio::sync::Notify,
}

impl Queued {
    /// Counts a line of `bytes` in, answering whether the queue was full for it (at its
    /// events, or past its bytes with it).
    fn add(&self, bytes: usize, buffer: &Buffer) -> bool {
        let events = self.events.fetch_add(1, Ordering::AcqRel);
        let before = self.bytes.fetch_add(bytes, Ordering::AcqRel);
        events >= buffer.events.max(1) || before.saturating_add(bytes) > buffer.bytes
    }

    fn remove(&self, bytes: usize) {
        self.bytes.fetch_sub(bytes, Ordering::AcqRel);
        self.events.fetch_sub(1, Ordering::AcqRel);
        self.room.notify_waiters();
    }

    fn has_room(&self, buffer: &Buffer) -> bool {
        self.bytes.load(Ordering::Acquire) < buffer.bytes
            && self.events.load(Ordering::Acquire) < buffer.events.max(1)
    }
}

/// lumberjack's size when none is given (`--audit-log-maxsize=0`): 100 MB.
const DEFAULT_MAX_MEGABYTES: u64 = 100;

/// lumberjack's backup timestamp (`2006-01-02T15-04-05.000`).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// How a log file is rotated (`--audit-log-maxsize`, `--audit-log-maxbackup`,
/// `--audit-log-maxage`); zero means lumberjack's default: 100 MB, every backup, any age.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rotation {
    /// Megabytes (2^20 bytes) a file may reach before it is rotated.
    pub max_megabytes: u64,
    /// Backups kept.
    pub max_backups: usize,
    /// Days a backup is kept, by the time in its name.
    pub max_age_days: u64,
}

/// Where the log goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Standard output (`-`).
    Stdout,
    /// A file, rotated.
    File(PathBuf, Rotation),
}

impl Destination {
    /// `--audit-log-path`: `-` for standard output, else a file.
    pub fn of_path(path: &Path, rotation: Rotation) -> Self {
        if path.as_os_str() == "-" {
            Destination::Stdout
        } else {
            Destination::File(path.to_owned(), rotation)
        }
    }
}

/// Why the log could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("ensureLogFile: {path}: {source}")]
pub struct LogError {
    /// The file.
    pub path: PathBuf,
    /// The system's error.
    pub source: std::io::Error,
}

/// The buffered log: [`Sink`] for an [`super::Auditor`].
pub struct LogSink {
    queue: Sender<Vec<u8>>,
    queued: Arc<Queued>,
    buffer: Buffer,
    /// Lines the writer failed to write, not yet reported.
    failed: Arc<AtomicU64>,
    /// Events dropped as too large even truncated, not yet reported.
    too_large: AtomicU64,
}

impl std::fmt::Debug for LogSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSink").finish_non_exhaustive()
    }
}

impl LogSink {
    /// Opens the log (making its directory, mode 0700, and the file, mode 0600, as
    /// kube-apiserver's `ensureLogFile` does) and starts the thread writing it; at most
    /// what `buffer` says waits. The thread ends, with everything queued written, once the
    /// sink is dropped.
    ///
    /// # Errors
    ///
    /// The directory or the file cannot be made or opened.
    pub fn start(destination: Destination, buffer: Buffer) -> Result<LogSink, LogError> {
        let writer = match destination {
            Destination::Stdout => Writer::Stream(Box::new(std::io::stdout())),
            Destination::File(path, rotation) => Writer::File(
                RotatingFile::open(path, rotation)
                    .map_err(|(path, source)| LogError { path, source })?,
            ),
        };
        LogSink::with_writer(writer, buffer)
    }

    fn with_writer(mut writer: Writer, buffer: Buffer) -> Result<LogSink, LogError> {
        // The bounds are counted in `Queued`, by both modes: batch drops what finds the queue
        // full, blocking takes the events of the requests it admitted (which waited for room).
        let (queue, lines) = std::sync::mpsc::channel();
        let failed = Arc::new(AtomicU64::new(0));
        let queued = Arc::new(Queued::default());
        let (counted, written) = (failed.clone(), queued.clone());
        std::thread::Builder::new()
            .name("audit-log".to_owned())
            .spawn(move || write_lines(&lines, &mut writer, &counted, &written))
            .map_err(|source| LogError {
                path: PathBuf::from("audit-log thread"),
                source,
            })?;
        Ok(LogSink {
            queue,
            queued,
            buffer,
            failed,
            too_large: AtomicU64::new(0),
        })
    }

    /// The event as a line, truncated as kube-apiserver's `truncate` plugin truncates it
    /// when truncation is on: `None` when it is still too large.
    fn line_of(&self, event: &Event) -> Option<Vec<u8>> {
        let encode = |event: &Event| {
            let mut line = serde_json::to_vec(event).ok()?;
            line.push(b'\n');
            Some(line)
        };
        let line = encode(event)?;
        let Some(max) = self.buffer.max_event_bytes else {
            return Some(line);
        };
        if line.len() <= max {
            return Some(line);
        }
        let line = if event.level >= super::Level::Request {
            let mut truncated = event.clone();
            truncated.request_object = None;
            truncated.response_object = None;
            truncated
                .annotations
                .insert(TRUNCATED_ANNOTATION.to_owned(), "true".to_owned());
            encode(&truncated)?
        } else {
            line
        };
        (line.len() <= max).then_some(line)
    }
}

impl Sink for LogSink {
    fn process(&self, event: &Event) -> bool {
        let Some(line) = self.line_of(event) else {
            self.too_large.fetch_add(1, Ordering::Relaxed);
            // Dropped by truncation, not by the buffer: counted as `truncate`'s.
            return true;
        };
        let length = line.len();
        let full = self.queued.add(length, &self.buffer);
        let sent = !(full && self.buffer.mode == Mode::Batch) && self.queue.send(line).is_ok();
        if !sent {
            self.queued.remove(length);
        }
        sent
    }

    fn room(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if self.buffer.mode != Mode::Blocking {
                return;
            }
            loop {
                let mut notified = std::pin::pin!(self.queued.room.notified());
                notified.as_mut().enable();
                if self.queued.has_room(&self.buffer) {
                    return;
                }
                notified.await;
            }
        })
    }

    fn name(&self) -> &str {
        "buffered"
    }

    fn take_failed_writes(&self) -> u64 {
        self.failed.swap(0, Ordering::Relaxed)
    }

    fn take_truncation_drops(&self) -> u64 {
        self.too_large.swap(0, Ordering::Relaxed)
    }
}

enum Writer {
    /// Standard output (or, in tests, any stream).
    Stream(Box<dyn std::io::Write + Send>),
    File(RotatingFile),
}

impl Writer {
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        match self {
            Writer::Stream(out) => out.write_all(line),
            Writer::File(file) => file.write_line(line),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Writer::Stream(out) => out.flush(),
            Writer::File(_) => Ok(()),
        }
    }
}

/// Writes what is queued (a file line by line, as kube-apiserver's log backend writes each
/// event), flushing standard output whenever the queue is empty, until the sink is gone;
/// counts in `failed` the lines it could not write, and takes each line off `queued` once it
/// is done with it (waking the requests waiting for room).
fn write_lines(
    lines: &Receiver<Vec<u8>>,
    writer: &mut Writer,
    failed: &AtomicU64,
    queued: &Queued,
) {
    while let Ok(line) = lines.recv() {
        let mut next = Some(line);
        while let Some(line) = next {
            if let Err(error) = writer.write_line(&line) {
                tracing::error!("audit log: {error}");
                failed.fetch_add(1, Ordering::Relaxed);
            }
            queued.remove(line.len());
            next = lines.try_recv().ok();
        }
        if let Err(error) = writer.flush() {
            tracing::error!("audit log: {error}");
        }
    }
}

/// A file rotated as lumberjack rotates it.
struct RotatingFile {
    path: PathBuf,
    rotation: Rotation,
    file: File,
    size: u64,
}

impl RotatingFile {
    fn open(path: PathBuf, rotation: Rotation) -> Result<Self, (PathBuf, std::io::Error)> {
        let opened = (|| {
            if let Some(directory) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                make_private_directory(directory)?;
            }
            let file = open_private(&path, false)?;
            let size = file.metadata()?.len();
            Ok((file, size))
        })();
        let (file, size) = opened.map_err(|error| (path.clone(), error))?;
        Ok(RotatingFile {
            path,
            rotation,
            file,
            size,
        })
    }

    fn max_bytes(&self) -> u64 {
        let megabytes = match self.rotation.max_megabytes {
            0 => DEFAULT_MAX_MEGABYTES,
            n => n,
        };
        megabytes.saturating_mul(1 << 20)
    }

    /// lumberjack's `Write`: a line longer than a whole file is refused; one that would take
    /// the file past its size rotates it first.
    fn write_line(&mut self, line: &[u8]) -> std::io::Result<()> {
        let length = line.len() as u64;
        let max = self.max_bytes();
        if length > max {
            return Err(std::io::Error::other(format!(
                "write length {length} exceeds maximum file size {max}"
            )));
        }
        if self.size + length > max {
            self.rotate()?;
        }
        self.file.write_all(line)?;
        self.size += length;
        Ok(())
    }

    /// Renames the file to its backup name, starts a new one, and removes the backups past
    /// the count or the age.
    fn rotate(&mut self) -> std::io::Result<()> {
        let now = super::event::timestamp(SystemTime::now());
        std::fs::rename(&self.path, backup_name(&self.path, now))?;
        self.file = open_private(&self.path, true)?;
        self.size = 0;
        self.remove_old_backups(SystemTime::now());
        Ok(())
    }

    /// lumberjack's `millRunOnce` without compression: newest first, those past
    /// `max_backups`, then those older than `max_age_days`, removed.
    fn remove_old_backups(&self, now: SystemTime) {
        let mut backups = backups_of(&self.path);
        backups.sort_by_key(|backup| std::cmp::Reverse(backup.1));
        let mut remove = Vec::new();
        if self.rotation.max_backups > 0 && backups.len() > self.rotation.max_backups {
            remove.extend(backups.split_off(self.rotation.max_backups));
        }
        if self.rotation.max_age_days > 0 {
            let age = Duration::from_secs(self.rotation.max_age_days.saturating_mul(86_400));
            let cutoff = now.checked_sub(age).unwrap_or(SystemTime::UNIX_EPOCH);
            let cutoff = super::event::timestamp(cutoff);
            remove.extend(backups.into_iter().filter(|(_, time)| *time < cutoff));
        }
        for (path, _) in remove {
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::warn!("audit log: removing {}: {error}", path.display());
            }
        }
    }
}

/// `NAME-TIME.EXT` beside the file (`backupName`, in UTC).
fn backup_name(path: &Path, time: k8s_openapi::jiff::Timestamp) -> PathBuf {
    let (prefix, extension) = name_parts(path);
    let stamp = k8s_openapi::jiff::fmt::strtime::format(BACKUP_TIME_FORMAT, time)
        .unwrap_or_else(|_| time.as_millisecond().to_string());
    path.with_file_name(format!("{prefix}{stamp}{extension}"))
}

/// The file's name without its extension and `-`, and its extension (`filepath.Ext`).
fn name_parts(path: &Path) -> (String, String) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match name.rfind('.') {
        Some(dot) => (format!("{}-", &name[..dot]), name[dot..].to_owned()),
        None => (format!("{name}-"), String::new()),
    }
}

/// The backups of the file, with the time their names carry (`oldLogFiles`).
fn backups_of(path: &Path) -> Vec<(PathBuf, k8s_openapi::jiff::Timestamp)> {
    let (prefix, extension) = name_parts(path);
    let directory = match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(directory) => directory.to_owned(),
        None => PathBuf::from("."),
    };
    let Ok(entries) = std::fs::read_dir(&directory) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let stamp = name.strip_prefix(&prefix)?.strip_suffix(&extension)?;
            let time = k8s_openapi::jiff::fmt::strtime::parse(BACKUP_TIME_FORMAT, stamp)
                .ok()?
                .to_datetime()
                .ok()?
                .to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC)
                .ok()?
                .timestamp();
            Some((entry.path(), time))
        })
        .collect()
}

fn make_private_directory(directory: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder.create(directory)
}

/// The file for appending (mode 0600 when made), or made anew, truncated.
fn open_private(path: &Path, truncate: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true);
    if truncate {
        options.write(true).truncate(true);
    } else {
        options.append(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)
}

#[cfg(test)]
mod tests;
