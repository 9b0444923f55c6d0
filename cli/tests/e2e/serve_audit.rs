//! `apfkit serve` auditing (issue 39 §2, §4): a full disk never holds a request, and the audit
//! flags refuse what they cannot use, naming it.

use std::process::Command;
use std::time::Duration;

use super::serve::Server;

const POLICY: &str =
    "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n";

#[test]
fn a_full_disk_loses_events_but_never_holds_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let server = Server::start(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        "/dev/full",
    ]);
    let started = std::time::Instant::now();
    for _ in 0..20 {
        let (status, _) = server.curl(
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            &[],
            b"",
        );
        assert_eq!(status, 200);
    }
    assert!(started.elapsed() < Duration::from_secs(60));
    // Each lost event is counted as kube-apiserver counts a log's errors.
    let (status, metrics) = server.curl("/metrics", &[], b"");
    assert_eq!(status, 200);
    let metrics = String::from_utf8(metrics).unwrap();
    let failed: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("apiserver_audit_error_total{plugin=\"log\"} "))
        .unwrap_or_else(|| panic!("the log's errors in\n{metrics}"))
        .parse()
        .unwrap();
    assert!(failed >= 20.0, "{failed}");
    assert!(
        metrics.contains("apiserver_audit_level_total{level=\"RequestResponse\"}"),
        "{metrics}"
    );
}

#[test]
fn a_log_is_written_for_its_owner_only_with_the_flow_schema_of_each_request() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let log = dir.path().join("logs/audit.log");
    let server = Server::start(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        log.to_str().unwrap(),
    ]);
    let (status, _) = server.curl(
        "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations/exempt",
        &["-H", "Audit-Id: e2e-read"],
        b"",
    );
    assert_eq!(status, 200);
    let event = wait_for_event(&log, "e2e-read", "ResponseComplete");
    let annotations = &event["annotations"];
    assert_eq!(annotations["flowcontrol.apfkit/flow-schema"], "exempt");
    assert_eq!(annotations["flowcontrol.apfkit/priority-level"], "exempt");
    assert!(
        annotations["flowcontrol.apfkit/flow-schema-uid"]
            .as_str()
            .is_some_and(|uid| !uid.is_empty())
    );
    assert_eq!(annotations["authorization.k8s.io/decision"], "allow");
    assert_eq!(event["responseObject"]["metadata"]["name"], "exempt");
    assert_eq!(event["user"]["username"], "apfkit-admin");
    // An impersonated user with extras: `impersonatedUser` carries them.
    let (status, _) = server.curl(
        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
        &[
            "-H",
            "Audit-Id: e2e-impersonated",
            "-H",
            "Impersonate-User: dave",
            "-H",
            "Impersonate-Extra-Example.com%2Fteam: blue",
            "-H",
            "Impersonate-Extra-example.com%2fteam: green",
        ],
        b"",
    );
    assert_eq!(status, 403);
    let event = wait_for_event(&log, "e2e-impersonated", "ResponseComplete");
    assert_eq!(
        event["impersonatedUser"],
        serde_json::json!({"username": "dave", "groups": ["system:authenticated"],
                           "extra": {"example.com/team": ["blue", "green"]}})
    );
    // The impersonator's own extra is its certificate's credential id only.
    let extra: Vec<&String> = event["user"]["extra"]
        .as_object()
        .map(|extra| extra.keys().collect())
        .unwrap_or_default();
    assert_eq!(
        extra,
        ["authentication.kubernetes.io/credential-id"],
        "{event}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&log), 0o600);
        assert_eq!(mode(log.parent().unwrap()), 0o700);
    }
}

/// In `dir`: the policy (`RequestResponse` for all), and a FIFO for the log with a reader
/// that opened it and never reads (the process to kill at the end).
fn policy_and_stalled_log(
    dir: &std::path::Path,
) -> (std::path::PathBuf, std::path::PathBuf, std::process::Child) {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let fifo = dir.join("audit.log");
    apfkit_test_support::process::mkfifo(&fifo);
    let reader = Command::new("sh")
        .args(["-c", "exec sleep 600 < \"$0\"", fifo.to_str().unwrap()])
        .spawn()
        .unwrap();
    (policy, fifo, reader)
}

/// Issue 54, F9: in batch mode, a log whose reader stopped reading (a FIFO) holds no request
/// and holds the server to its buffer's bytes: 60 creates of 3 MB audited at `RequestResponse` (which took
/// it from 31 to 568 MB before the buffer was bounded in bytes) are answered at once, the
/// events past 64 MiB dropped and counted.
#[test]
fn a_stalled_log_holds_no_request_and_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (policy, fifo, mut reader) = policy_and_stalled_log(dir.path());
    let server = Server::start(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        fifo.to_str().unwrap(),
        "--audit-log-mode",
        "batch",
    ]);
    let before = server.resident_bytes();
    let body = format!(
        "{{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\
         \"metadata\":{{\"name\":\"big\",\"annotations\":{{\"a\":\"{}\"}}}},\
         \"spec\":{{\"priorityLevelConfiguration\":{{\"name\":\"workload-low\"}},\
         \"matchingPrecedence\":10001}}}}",
        "x".repeat(3_000_000)
    );
    let started = std::time::Instant::now();
    let mut peak = before;
    for _ in 0..60 {
        let (status, _) = server.curl(
            "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
            &[
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                "@-",
            ],
            body.as_bytes(),
        );
        assert_eq!(status, 422, "refused, but audited with its 3 MB body");
        peak = peak.max(server.resident_bytes());
    }
    assert!(started.elapsed() < Duration::from_secs(120));
    let grown = peak.saturating_sub(before);
    eprintln!(
        "a stalled log: {} MiB, at most {} MiB",
        before >> 20,
        peak >> 20
    );
    assert!(
        grown < 128 << 20,
        "the server grew by {} MiB ({} to {} MiB)",
        grown >> 20,
        before >> 20,
        peak >> 20
    );
    let (_, metrics) = server.curl("/metrics", &[], b"");
    let metrics = String::from_utf8(metrics).unwrap();
    let dropped: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("apiserver_audit_error_total{plugin=\"buffered\"} "))
        .unwrap_or_else(|| panic!("the buffer's drops in\n{metrics}"))
        .parse()
        .unwrap();
    assert!(dropped >= 30.0, "{dropped}");
    let _ = reader.kill();
    let _ = reader.wait();
}

/// kube-apiserver's default, `--audit-log-mode=blocking`: behind a log nobody reads (a FIFO
/// whose reader stopped), requests wait once the pipe and the buffer are full, and no event
/// is dropped; once the log is read again, requests are answered again.
#[test]
fn a_blocking_log_holds_requests_until_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let (policy, fifo, mut stalled) = policy_and_stalled_log(dir.path());
    let server = Server::start(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        fifo.to_str().unwrap(),
        "--audit-log-batch-buffer-size",
        "4",
    ]);
    let healthz = |max_time: &str| {
        let mut curl = Command::new("curl");
        curl.args(["--silent", "--output", "/dev/null", "--max-time", max_time])
            .arg("--cacert")
            .arg(server.ca())
            .arg(format!("{}/healthz", server.url()));
        super::run_within(curl, b"", Duration::from_secs(30), |_| {})
            .status
            .code()
    };
    // The pipe (64 KiB) and the buffer (4 events) fill, then a request waits.
    let held = (0..2000).find(|_| healthz("2") == Some(28));
    assert!(
        held.is_some_and(|n| n > 4),
        "a request is held once the log is full: {held:?}"
    );
    // The log is read again: requests are answered.
    let drained = dir.path().join("drained.log");
    let mut reader = Command::new("sh")
        .args([
            "-c",
            "exec cat \"$0\" > \"$1\"",
            fifo.to_str().unwrap(),
            drained.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    assert_eq!(healthz("10"), Some(0), "answered once the log is read");
    let (_, metrics) = server.curl("/metrics", &[], b"");
    let metrics = String::from_utf8(metrics).unwrap();
    assert!(
        !metrics
            .lines()
            .any(|line| line.starts_with("apiserver_audit_error_total{plugin=\"buffered\"}")),
        "no event dropped: {metrics}"
    );
    drop(server);
    for child in [&mut stalled, &mut reader] {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The event of `audit_id` at `stage` in the log, once the writer has written it.
fn wait_for_event(log: &std::path::Path, audit_id: &str, stage: &str) -> serde_json::Value {
    for _ in 0..100 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let found = text
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON lines"))
            .find(|event| event["auditID"] == audit_id && event["stage"] == stage);
        if let Some(event) = found {
            return event;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no {stage} event of {audit_id} in {}", log.display());
}

#[test]
fn bad_audit_flags_stop_the_server_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, contents: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    };
    let good = file("good.yaml", POLICY.as_bytes());
    let not_a_directory = file("plain", b"");
    let cases = [
        (
            file("garbage.yaml", b"\xff\xfe{{{"),
            dir.path().join("audit.log"),
            "failed decoding".to_owned(),
        ),
        (
            file("empty.yaml", b"apiVersion: audit.k8s.io/v1\nkind: Policy\n"),
            dir.path().join("audit.log"),
            "loaded illegal policy with 0 rules: from file".to_owned(),
        ),
        (
            file("beta.yaml", POLICY.replace("v1", "v1beta1").as_bytes()),
            dir.path().join("audit.log"),
            "unknown group version field audit.k8s.io/v1beta1, Kind=Policy in policy".to_owned(),
        ),
        (
            file(
                "bad-level.yaml",
                POLICY.replace("RequestResponse", "Everything").as_bytes(),
            ),
            dir.path().join("audit.log"),
            "rules[0].level: Unsupported value: \"Everything\"".to_owned(),
        ),
        (
            file("huge.yaml", &vec![b'#'; (1 << 20) + 1]),
            dir.path().join("audit.log"),
            "larger than 1 MiB".to_owned(),
        ),
        // An endless device is read up to the limit, not until memory runs out.
        (
            std::path::PathBuf::from("/dev/zero"),
            dir.path().join("audit.log"),
            "failed to read file path \"/dev/zero\": larger than 1 MiB".to_owned(),
        ),
        (
            dir.path().join("missing.yaml"),
            dir.path().join("audit.log"),
            "failed to read file path".to_owned(),
        ),
        (
            good.clone(),
            not_a_directory.join("audit.log"),
            "--audit-log-path: ensureLogFile:".to_owned(),
        ),
    ];
    for (policy, log, expected) in cases {
        let data = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_apfkit"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data.path())
            .arg("--audit-policy-file")
            .arg(&policy)
            .arg("--audit-log-path")
            .arg(&log);
        let output = super::run_within(command, b"", Duration::from_secs(30), |_| {});
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{expected}: {stderr}");
        assert!(stderr.contains(&expected), "{expected} in {stderr}");
        if expected.starts_with("--audit-log-path") {
            assert!(stderr.contains("plain"), "the path is named: {stderr}");
        } else {
            assert!(stderr.contains("--audit-policy-file"), "{stderr}");
        }
    }
}

/// Rotation under a full disk (issue 39 §4): the log on a 1.5 MiB tmpfs of its own (mounted in
/// a user and mount namespace of util-linux's `unshare`, so that no privilege is needed),
/// rotated at 1 MB with one backup. The first file fills and is rotated, the second meets the
/// full disk: its events are lost and counted, every request is still answered, and the server
/// goes on serving.
#[test]
fn a_full_disk_after_a_rotation_loses_events_counted_and_never_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, data) = (dir.path().join("logs"), dir.path().join("data"));
    std::fs::create_dir(&logs).unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=1536k tmpfs {logs} && exec {apfkit} serve --listen 127.0.0.1:0 \
         --data-dir {data} --audit-policy-file {policy} --audit-log-path {logs}/audit.log \
         --audit-log-maxsize 1 --audit-log-maxbackup 1",
        logs = logs.display(),
        apfkit = env!("CARGO_BIN_EXE_apfkit"),
        data = data.display(),
        policy = policy.display(),
    );
    let mut command = Command::new("unshare");
    command.args(["--user", "--map-root-user", "--mount", "sh", "-c", &script]);
    let (mut child, url) = apfkit_test_support::process::start_server(command);
    // The server's view of the log's directory (its own mount namespace).
    let seen_logs =
        std::path::PathBuf::from(format!("/proc/{}/root{}", child.id(), logs.display()));
    let credentials = |args: &mut Command| {
        args.args(["--silent", "--show-error", "--cacert"])
            .arg(data.join("ca.crt"))
            .arg("--cert")
            .arg(data.join("admin.crt"))
            .arg("--key")
            .arg(data.join("admin.key"));
    };
    // 150 LISTs of every FlowSchema on one connection, each logged with its response (about
    // 15 kB an event): more than the disk holds.
    let mut lists = Command::new("curl");
    credentials(&mut lists);
    lists.args(["--write-out", "%{http_code}\n"]);
    for _ in 0..150 {
        lists.args(["--output", "/dev/null"]).arg(format!(
            "{url}/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
        ));
    }
    let answered = super::run_within(lists, b"", Duration::from_secs(120), |_| {});
    let codes = String::from_utf8_lossy(&answered.stdout).into_owned();
    assert_eq!(
        codes.lines().filter(|c| *c == "200").count(),
        150,
        "{codes}"
    );
    // Rotated once, then full: the log and its one backup, nothing else.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let metrics = loop {
        let mut metrics = Command::new("curl");
        credentials(&mut metrics);
        metrics.arg(format!("{url}/metrics"));
        let text = String::from_utf8(
            super::run_within(metrics, b"", Duration::from_secs(60), |_| {}).stdout,
        )
        .unwrap();
        let failed = text
            .lines()
            .find_map(|l| l.strip_prefix("apiserver_audit_error_total{plugin=\"log\"} "))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        if failed > 0.0 || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut files: Vec<String> = std::fs::read_dir(&seen_logs)
        .unwrap_or_else(|e| panic!("{}: {e}", seen_logs.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files[0].starts_with("audit-") && files[0].ends_with(".log") && files[1] == "audit.log",
        "{files:?}"
    );
    let failed: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("apiserver_audit_error_total{plugin=\"log\"} "))
        .unwrap_or_else(|| panic!("the log's errors in\n{metrics}"))
        .parse()
        .unwrap();
    assert!(failed > 0.0, "events lost to the full disk are counted");
    // Still serving.
    let mut ready = Command::new("curl");
    credentials(&mut ready);
    ready.args(["--write-out", "%{http_code}", "--output", "/dev/null"]);
    ready.arg(format!("{url}/readyz"));
    let ready = super::run_within(ready, b"", Duration::from_secs(60), |_| {});
    assert_eq!(String::from_utf8_lossy(&ready.stdout), "200");
    let _ = child.kill();
    let _ = child.wait();
}
