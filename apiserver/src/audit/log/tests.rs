use std::sync::{Arc, Mutex};

use super::*;

fn line(n: usize, width: usize) -> Vec<u8> {
    let mut line = format!("{{\"n\":{n},\"pad\":\"").into_bytes();
    line.resize(width - 3, b'x');
    line.extend_from_slice(b"\"}\n");
    line
}

fn files_in(directory: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(directory)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

const MEGABYTE: usize = 1 << 20;

#[test]
fn a_file_is_renamed_with_its_time_before_a_write_would_take_it_past_its_size() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("logs/audit.log");
    let rotation = Rotation {
        max_megabytes: 1,
        ..Rotation::default()
    };
    let mut file = RotatingFile::open(path.clone(), rotation).unwrap();
    // Four lines of 300 KiB: the fourth does not fit in the first megabyte.
    let lines: Vec<Vec<u8>> = (0..4).map(|n| line(n, 300 << 10)).collect();
    for line in &lines {
        file.write_line(line).unwrap();
    }
    let names = files_in(&directory.path().join("logs"));
    assert_eq!(names.len(), 2, "{names:?}");
    let backup = names.iter().find(|n| *n != "audit.log").unwrap();
    // lumberjack's name: audit-2006-01-02T15-04-05.000.log
    assert_eq!(
        backup.len(),
        "audit-2006-01-02T15-04-05.000.log".len(),
        "{backup}"
    );
    assert!(
        backup.starts_with("audit-") && backup.ends_with(".log"),
        "{backup}"
    );
    let logs = directory.path().join("logs");
    let old = std::fs::read(logs.join(backup)).unwrap();
    let new = std::fs::read(logs.join("audit.log")).unwrap();
    assert_eq!(old, lines[..3].concat());
    assert_eq!(new, lines[3]);
    assert!(old.len() <= MEGABYTE);
}

#[cfg(unix)]
#[test]
fn the_log_and_its_directory_are_its_owners_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("made/audit.log");
    let mut file = RotatingFile::open(path.clone(), Rotation::default()).unwrap();
    file.write_line(b"{}\n").unwrap();
    file.rotate().unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
    for name in files_in(path.parent().unwrap()) {
        assert_eq!(mode(&path.with_file_name(&name)), 0o600, "{name}");
    }
}

#[test]
fn a_file_reopened_appends_and_counts_what_it_holds() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("audit.log");
    std::fs::write(&path, vec![b'a'; 900 << 10]).unwrap();
    let rotation = Rotation {
        max_megabytes: 1,
        ..Rotation::default()
    };
    let mut file = RotatingFile::open(path.clone(), rotation).unwrap();
    file.write_line(&line(1, 200 << 10)).unwrap();
    assert_eq!(
        files_in(directory.path()).len(),
        2,
        "900 KiB + 200 KiB rotates"
    );
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 200 << 10);
}

#[test]
fn a_line_longer_than_a_whole_file_is_refused() {
    let directory = tempfile::tempdir().unwrap();
    let rotation = Rotation {
        max_megabytes: 1,
        ..Rotation::default()
    };
    let mut file = RotatingFile::open(directory.path().join("audit.log"), rotation).unwrap();
    let error = file.write_line(&line(0, MEGABYTE + 1)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "write length {} exceeds maximum file size {MEGABYTE}",
            MEGABYTE + 1
        )
    );
}

#[test]
fn backups_past_the_count_or_the_age_are_removed_the_oldest_first() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("audit.log");
    // Backups of other times, as earlier runs left them, and a file that is not one.
    for name in [
        "audit-2020-01-01T00-00-00.000.log",
        "audit-2026-11-20T00-00-00.000.log",
        "audit-2026-11-21T00-00-00.000.log",
        "audit-notatime.log",
        "other.log",
    ] {
        std::fs::write(directory.path().join(name), b"old\n").unwrap();
    }
    let rotation = Rotation {
        max_megabytes: 1,
        max_backups: 0,
        max_age_days: 30,
    };
    let file = RotatingFile::open(path.clone(), rotation).unwrap();
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_000_000); // 2026-11-18
    file.remove_old_backups(now);
    let names = files_in(directory.path());
    assert!(!names.contains(&"audit-2020-01-01T00-00-00.000.log".to_owned()));
    assert!(names.contains(&"audit-2026-11-20T00-00-00.000.log".to_owned()));
    assert!(names.contains(&"audit-notatime.log".to_owned()));
    assert!(names.contains(&"other.log".to_owned()));

    let counted = RotatingFile {
        rotation: Rotation {
            max_backups: 1,
            ..rotation
        },
        ..file
    };
    counted.remove_old_backups(now);
    let names = files_in(directory.path());
    assert!(names.contains(&"audit-2026-11-21T00-00-00.000.log".to_owned()));
    assert!(!names.contains(&"audit-2026-11-20T00-00-00.000.log".to_owned()));
}

#[test]
fn backup_names_follow_lumberjack() {
    let time: k8s_openapi::jiff::Timestamp = "2026-11-27T21:46:20.123456Z".parse().unwrap();
    assert_eq!(
        backup_name(Path::new("/var/log/audit.log"), time),
        Path::new("/var/log/audit-2026-11-27T21-46-20.123.log")
    );
    assert_eq!(
        backup_name(Path::new("audit"), time),
        Path::new("audit-2026-11-27T21-46-20.123")
    );
    assert_eq!(
        backup_name(Path::new("/x/kube.audit.json"), time),
        Path::new("/x/kube.audit-2026-11-27T21-46-20.123.json")
    );
}

/// A writer that holds every write until it is let go, as a stalled disk does.
struct Stalled {
    gate: Arc<Mutex<()>>,
    written: Arc<Mutex<Vec<u8>>>,
}

impl std::io::Write for Stalled {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let _held = self.gate.lock().unwrap();
        self.written.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn event(n: usize) -> Event {
    Event {
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level: super::super::Level::Metadata,
        audit_id: format!("id-{n}"),
        stage: super::super::Stage::ResponseComplete,
        request_uri: "/healthz".into(),
        verb: "get".into(),
        user: super::super::UserInfo::default(),
        impersonated_user: None,
        authentication_metadata: None,
        source_ips: Vec::new(),
        user_agent: String::new(),
        object_ref: None,
        response_status: None,
        request_object: None,
        response_object: None,
        request_received_timestamp: String::new(),
        stage_timestamp: String::new(),
        annotations: std::collections::BTreeMap::new(),
    }
}

/// What [`Stalled`] has written.
type Written = Arc<Mutex<Vec<u8>>>;

/// A sink writing into memory through [`Stalled`] (its gate, and what was written).
fn sink_behind_a_gate(buffer: Buffer) -> (LogSink, Arc<Mutex<()>>, Written) {
    let gate = Arc::new(Mutex::new(()));
    let written = Arc::new(Mutex::new(Vec::new()));
    let sink = LogSink::with_writer(
        Writer::Stream(Box::new(Stalled {
            gate: gate.clone(),
            written: written.clone(),
        })),
        buffer,
    )
    .unwrap();
    (sink, gate, written)
}

#[test]
fn a_stalled_writer_drops_events_past_the_buffer_at_once_and_writes_the_rest_later() {
    let (sink, gate, written) = sink_behind_a_gate(Buffer {
        events: 4,
        mode: Mode::Batch,
        ..Buffer::default()
    });
    let held = gate.lock().unwrap();
    let started = std::time::Instant::now();
    let taken: Vec<bool> = (0..50).map(|n| sink.process(&event(n))).collect();
    assert!(started.elapsed() < Duration::from_secs(5), "never waits");
    // The writer holds one line and the queue four more; the rest are dropped.
    let kept = taken.iter().filter(|t| **t).count();
    assert!((4..=5).contains(&kept), "{taken:?}");
    assert!(!taken[49]);
    drop(held);
    drop(sink);
    // The thread writes what it took, then ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let lines = written.lock().unwrap().split(|b| *b == b'\n').count() - 1;
        if lines == kept {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{lines} of {kept} lines"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["auditID"], "id-0");
}

#[test]
fn a_full_disk_loses_lines_but_not_the_writer() {
    if !Path::new("/dev/full").exists() {
        panic!("/dev/full is needed to show a full disk");
    }
    let sink = LogSink::start(
        Destination::File(PathBuf::from("/dev/full"), Rotation::default()),
        Buffer {
            events: 8,
            ..Buffer::default()
        },
    )
    .unwrap();
    // Each write fails (ENOSPC); the writer says so and goes on taking events.
    for n in 0..3 {
        assert!(sink.process(&event(n)));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(sink.process(&event(3)), "the writer thread still runs");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(sink.take_failed_writes(), 4, "each failed write is counted");
    assert_eq!(sink.take_failed_writes(), 0, "and reported once");
}

/// An event at `level` carrying `object_bytes` of request object.
fn large_event(n: usize, level: super::super::Level, object_bytes: usize) -> Event {
    let mut event = event(n);
    event.level = level;
    let object = format!("{{\"data\":\"{}\"}}", "x".repeat(object_bytes));
    event.request_object = Some(serde_json::value::RawValue::from_string(object).unwrap());
    event
}

/// Issue 54, F9: a stalled log holds at most its bytes, however few events that is: 3 MB
/// events stop being taken once 8 MiB wait, at once.
#[test]
fn a_stalled_writer_holds_at_most_the_buffers_bytes() {
    let (sink, gate, _) = sink_behind_a_gate(Buffer {
        events: 10_000,
        bytes: 8 << 20,
        mode: Mode::Batch,
        max_event_bytes: None,
    });
    let held = gate.lock().unwrap();
    let started = std::time::Instant::now();
    let level = super::super::Level::RequestResponse;
    let taken: Vec<bool> = (0..60)
        .map(|n| sink.process(&large_event(n, level.clone(), 3_000_000)))
        .collect();
    assert!(started.elapsed() < Duration::from_secs(5), "never waits");
    let kept = taken.iter().filter(|t| **t).count();
    assert_eq!(kept, 2, "two 3 MB events fit in 8 MiB: {taken:?}");
    assert!(sink.queued.bytes.load(Ordering::SeqCst) <= 8 << 20);
    // Once written, the room is there again.
    drop(held);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while sink.queued.bytes.load(Ordering::SeqCst) > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the lines are written"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(sink.process(&large_event(60, level, 3_000_000)));
}

/// kube-apiserver's `truncate` plugin: an event over the size loses its request and response
/// objects and is annotated `audit.k8s.io/truncated`; one still over it (or at `Metadata`,
/// which has no objects to lose) is dropped and counted as the plugin's.
#[test]
fn events_over_the_size_are_truncated_or_dropped() {
    let (sink, _, written) = sink_behind_a_gate(Buffer {
        max_event_bytes: Some(DEFAULT_MAX_EVENT_BYTES),
        ..Buffer::default()
    });
    let request = super::super::Level::Request;
    assert!(sink.process(&large_event(0, request.clone(), 10)));
    assert!(sink.process(&large_event(1, request, 200_000)));
    let mut metadata = event(2);
    metadata
        .annotations
        .insert("note".to_owned(), "y".repeat(200_000));
    assert!(sink.process(&metadata), "not the buffer's drop");
    assert_eq!(sink.take_truncation_drops(), 1);
    assert_eq!(sink.take_truncation_drops(), 0);
    drop(sink);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let lines: Vec<serde_json::Value> = loop {
        let text = String::from_utf8(written.lock().unwrap().clone()).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        if lines.len() == 2 || std::time::Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["requestObject"]["data"], "x".repeat(10));
    assert!(lines[0]["annotations"].get(TRUNCATED_ANNOTATION).is_none());
    assert!(lines[1].get("requestObject").is_none());
    assert_eq!(lines[1]["annotations"][TRUNCATED_ANNOTATION], "true");
}

/// Holds `gate` on a thread of its own until the answer's sender is used or dropped: a
/// stalled writer for async tests, which hold no lock across an await.
fn hold(gate: &Arc<Mutex<()>>) -> std::sync::mpsc::Sender<()> {
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (locked, taken) = std::sync::mpsc::channel();
    let gate = gate.clone();
    std::thread::spawn(move || {
        let _held = gate.lock().unwrap();
        locked.send(()).unwrap();
        let _ = released.recv();
    });
    taken.recv().unwrap();
    release
}

/// kube-apiserver's default, `--audit-log-mode=blocking`: behind a stalled log a request
/// waits for room before it is served, the events of requests already admitted are taken
/// past the bound, and none is dropped; once the log is written, requests go on.
#[tokio::test]
async fn a_blocking_log_holds_requests_while_it_is_full_and_drops_nothing() {
    let (sink, gate, written) = sink_behind_a_gate(Buffer {
        events: 4,
        ..Buffer::default()
    });
    assert_eq!(sink.buffer.mode, Mode::Blocking);
    let release = hold(&gate);
    for n in 0..4 {
        tokio::time::timeout(Duration::from_secs(5), sink.room())
            .await
            .expect("room for the first four");
        assert!(sink.process(&event(n)));
    }
    let waited = tokio::time::timeout(Duration::from_millis(300), sink.room()).await;
    assert!(waited.is_err(), "a request waits while the log is full");
    assert!(
        sink.process(&event(4)),
        "an admitted request's event is taken"
    );
    drop(release);
    tokio::time::timeout(Duration::from_secs(10), sink.room())
        .await
        .expect("room once the log is written");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while written.lock().unwrap().split(|b| *b == b'\n').count() - 1 < 5 {
        assert!(
            std::time::Instant::now() < deadline,
            "every event is written"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
