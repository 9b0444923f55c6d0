//! `apfkit simulate --audit-log` (issue 41 §2): audit logs replayed through the configuration
//! in force and a proposed one, on logs written by `apfkit serve` and on logs made by hand in
//! the form kube-apiserver writes them.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use serde_json::{Value, json};

use super::serve::Server;
use super::{apfkit, apfkit_within};

/// A proposal: the user `ci-runner` gets a level of its own, 5 shares, one queue of 10.
const PROPOSAL: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: ci
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    lendablePercent: 0
    limitResponse:
      type: Queue
      queuing:
        queues: 1
        handSize: 1
        queueLengthLimit: 10
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: ci-runner
spec:
  priorityLevelConfiguration:
    name: ci
  matchingPrecedence: 500
  distinguisherMethod:
    type: ByUser
  rules:
  - subjects:
    - kind: User
      user:
        name: ci-runner
    resourceRules:
    - verbs: ['*']
      apiGroups: ['*']
      resources: ['*']
      clusterScope: true
      namespaces: ['*']
";

/// Writes the embedded default configuration and the proposal beside it into `dir`; answers
/// the `-f` arguments of the proposed configuration.
fn proposal(dir: &Path) -> Vec<String> {
    let bootstrap = apfkit(&["bootstrap"], b"");
    assert!(bootstrap.status.success());
    std::fs::write(dir.join("bootstrap.yaml"), &bootstrap.stdout).unwrap();
    std::fs::write(dir.join("ci.yaml"), PROPOSAL).unwrap();
    ["bootstrap.yaml", "ci.yaml"]
        .iter()
        .flat_map(|file| ["-f".to_owned(), dir.join(file).display().to_string()])
        .collect()
}

fn replay(log: &Path, extra: &[String]) -> Output {
    let mut args = vec![
        "simulate".to_owned(),
        "--audit-log".to_owned(),
        log.display().to_string(),
    ];
    args.extend_from_slice(extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    apfkit_within(&args, b"", Duration::from_secs(120))
}

fn replay_json(log: &Path, extra: &[String]) -> Value {
    let mut extra = extra.to_vec();
    extra.extend(["-o".to_owned(), "json".to_owned()]);
    let output = replay(log, &extra);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The figures of the FlowSchema `name` under one side of a report.
fn schema<'a>(side: &'a Value, name: &str) -> &'a Value {
    side["flowSchemas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {side}"))
}

fn handled(figures: &Value) -> u64 {
    let rejected = &figures["rejected"];
    ["queueFull", "concurrencyLimit", "timeOut"]
        .iter()
        .map(|reason| rejected[reason].as_u64().unwrap())
        .sum::<u64>()
        + figures["executed"].as_u64().unwrap()
}

#[test]
fn a_log_written_by_apfkit_serve_replays_every_line_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let server = Server::start(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        log.to_str().unwrap(),
    ]);
    // 4 clients × 15 lists as ci-runner (the administrator impersonating it: flow control
    // classifies the impersonated user, and so does the replay), answered 403 after APF.
    std::thread::scope(|scope| {
        for _ in 0..4 {
            scope.spawn(|| {
                for _ in 0..15 {
                    let (status, _) = server.curl(
                        "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
                        &["-H", "Impersonate-User: ci-runner"],
                        b"",
                    );
                    assert_eq!(status, 403);
                }
            });
        }
    });
    // The log is written in batches: wait for the last completion.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while completions(&log, "ci-runner") < 60 {
        assert!(std::time::Instant::now() < deadline, "60 events in the log");
        std::thread::sleep(Duration::from_millis(100));
    }
    let report = replay_json(&log, &proposal(dir.path()));
    assert_eq!(report["log"]["unusable"], 0, "{}", report["log"]);
    assert!(report["log"]["passed"]["otherStage"].as_u64().unwrap() >= 60);
    assert_eq!(handled(schema(&report["proposed"], "ci-runner")), 60);
    assert!(handled(schema(&report["inForce"], "global-default")) >= 60);
    let text = replay(&log, &proposal(dir.path()));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.starts_with("Read "), "{text}");
    assert!(text.contains(" lines of "), "{text}");
}

/// The ResponseComplete events of `user`'s requests in `log` so far.
fn completions(log: &Path, user: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| {
            event["stage"] == "ResponseComplete" && event["impersonatedUser"]["username"] == user
        })
        .count()
}

/// `2026-11-28T10:00:00Z` plus `ms` milliseconds, as kube-apiserver writes a MicroTime.
fn micro_time(ms: u64) -> String {
    format!(
        "2026-11-28T10:{:02}:{:02}.{:03}000Z",
        ms / 60_000,
        ms / 1_000 % 60,
        ms % 1_000
    )
}

/// An event at `stage` as kube-apiserver's log backend writes one at level Metadata.
fn event(id: &str, stage: &str, user: &str, verb: &str, received: u64, logged: u64) -> Value {
    json!({
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": id,
        "stage": stage,
        "requestURI": "/api/v1/namespaces/ci/secrets",
        "verb": verb,
        "user": {"username": user, "groups": ["system:authenticated"]},
        "sourceIPs": ["10.0.0.7"],
        "userAgent": "kubectl/v1.35.0 (linux/amd64) kubernetes/abcdef",
        "objectRef": {"resource": "secrets", "namespace": "ci", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": 200},
        "requestReceivedTimestamp": micro_time(received),
        "stageTimestamp": micro_time(logged),
        "annotations": {"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""}
    })
}

/// A log as kube-apiserver writes it: ci-runner LISTs for 1 s each, 40 a second for 10 s
/// (their RequestReceived stage too); a kubelet's gets; a watch; an exec; a failed
/// authentication; a slow request with its queue wait noted; and one garbage line. In the
/// order the events were written.
fn kube_apiserver_log() -> String {
    let mut events: Vec<(u64, Value)> = Vec::new();
    for i in 0..400 {
        let at = 1_000 + i * 25;
        let id = format!("list-{i}");
        events.push((
            at,
            event(&id, "RequestReceived", "ci-runner", "list", at, at),
        ));
        events.push((
            at + 1_000,
            event(&id, "ResponseComplete", "ci-runner", "list", at, at + 1_000),
        ));
        if i % 10 == 0 {
            let mut get = event(
                &format!("get-{i}"),
                "ResponseComplete",
                "system:node:n1",
                "get",
                at,
                at + 5,
            );
            get["user"]["groups"] = json!(["system:nodes", "system:authenticated"]);
            events.push((at + 5, get));
        }
    }
    events.push((
        2_010,
        event("watch-1", "ResponseStarted", "alice", "watch", 2_000, 2_010),
    ));
    events.push((
        9_000,
        event(
            "watch-1",
            "ResponseComplete",
            "alice",
            "watch",
            2_000,
            9_000,
        ),
    ));
    let mut exec = event(
        "exec-1",
        "ResponseComplete",
        "alice",
        "create",
        3_000,
        8_000,
    );
    exec["objectRef"]["subresource"] = json!("exec");
    events.push((8_000, exec));
    let mut failed = event("anon-1", "ResponseStarted", "", "list", 4_000, 4_000);
    failed["user"] = json!({});
    failed["responseStatus"] = json!({"metadata": {}, "status": "Failure", "code": 401});
    events.push((4_000, failed));
    let mut slow = event("slow-1", "ResponseComplete", "bob", "get", 5_000, 7_000);
    slow["annotations"]["apiserver.latency.k8s.io/apf-queue-wait"] = json!("1.5s");
    slow["annotations"]["apiserver.latency.k8s.io/total"] = json!("2s");
    events.push((7_000, slow));
    events.sort_by_key(|(logged, _)| *logged);
    let mut text: String = events
        .iter()
        .map(|(_, event)| format!("{event}\n"))
        .collect();
    text.push_str("this is not JSON\n");
    text
}

#[test]
fn a_kube_apiserver_log_shows_who_a_proposal_would_queue_and_reject() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    std::fs::write(&log, kube_apiserver_log()).unwrap();
    let proposal = proposal(dir.path());
    let report = replay_json(&log, &proposal);
    let figures = &report["log"];
    // 400 RequestReceived, 1 watch end.
    assert_eq!(figures["passed"]["otherStage"], 401, "{figures}");
    assert_eq!(figures["passed"]["longRunning"], 1);
    assert_eq!(figures["passed"]["unauthenticated"], 1);
    assert_eq!(figures["unusable"], 1);
    assert_eq!(figures["unusableLines"][0]["line"], figures["lines"]);
    // 400 lists, 40 gets, the watch and bob's get.
    assert_eq!(report["requests"], 442);
    let users = report["users"].as_array().unwrap();
    assert_eq!(users.len(), 1, "only ci-runner is hurt: {users:?}");
    let runner = &users[0];
    assert_eq!(runner["user"], "ci-runner");
    assert_eq!(runner["inForce"]["flowSchemas"], json!(["global-default"]));
    assert_eq!(runner["inForce"]["queued"], 0);
    assert_eq!(runner["proposed"]["flowSchemas"], json!(["ci-runner"]));
    assert!(
        runner["proposed"]["queued"].as_u64().unwrap() > 0,
        "{runner}"
    );
    let rejected = &runner["proposed"]["rejected"];
    assert!(rejected["queueFull"].as_u64().unwrap() > 0, "{runner}");
    assert_eq!(handled(schema(&report["proposed"], "ci-runner")), 400);
    assert_eq!(handled(schema(&report["inForce"], "system-nodes")), 40);
    // The same run as text, and the unusable line named on standard error.
    let output = replay(&log, &proposal);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("Replayed 442 requests over"), "{text}");
    let runner_row = text.lines().find(|l| l.starts_with("ci-runner,")).unwrap();
    assert!(
        runner_row.contains("global-default") && runner_row.contains("ci-runner"),
        "{text}"
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines = figures["lines"].as_u64().unwrap();
    assert!(
        stderr.contains(&format!(
            "audit.log:{lines}: not an audit event: expected ident"
        )),
        "{stderr}"
    );
    // The configuration in force given as files gives the same report as the default.
    let bootstrap = dir.path().join("bootstrap.yaml").display().to_string();
    let mut with_files = proposal.clone();
    with_files.extend(["--in-force".to_owned(), bootstrap]);
    assert_eq!(replay_json(&log, &with_files), report);
    // Standard input reads the same.
    let output = apfkit_within(
        &[
            "simulate",
            "--audit-log",
            "-",
            &proposal[0],
            &proposal[1],
            &proposal[2],
            &proposal[3],
            "-o",
            "json",
        ],
        kube_apiserver_log().as_bytes(),
        Duration::from_secs(120),
    );
    let from_stdin: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(from_stdin["users"], report["users"]);
    assert_eq!(from_stdin["log"]["file"], "-");
}

#[test]
fn hostile_logs_are_read_to_the_end_naming_what_cannot_be_used() {
    let dir = tempfile::tempdir().unwrap();
    let whole = kube_apiserver_log();
    // Truncated in the middle of a line.
    let truncated = dir.path().join("truncated.log");
    std::fs::write(&truncated, &whole.as_bytes()[..whole.len() / 2 + 17]).unwrap();
    let report = replay_json(&truncated, &[]);
    assert_eq!(report["log"]["unusable"], 1, "{}", report["log"]);
    let reason = report["log"]["unusableLines"][0]["reason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("EOF"), "{reason}");
    // Every line twice: each request replays twice, the watch too (a log holds what it
    // holds).
    let doubled = dir.path().join("doubled.log");
    let twice: String = whole.lines().flat_map(|l| [l, "\n", l, "\n"]).collect();
    std::fs::write(&doubled, twice).unwrap();
    assert_eq!(replay_json(&doubled, &[])["requests"], 884);
    // Binary garbage, a line nested 100,000 deep, a line of 70 MB and an event amid them.
    let hostile = dir.path().join("hostile.log");
    let mut bytes = vec![0xff, 0xfe, 0x00, b'\n'];
    bytes.extend("[".repeat(100_000).as_bytes());
    bytes.push(b'\n');
    bytes.extend(std::iter::repeat_n(b'x', 70 << 20));
    bytes.push(b'\n');
    bytes.extend(whole.lines().nth(1).unwrap().as_bytes());
    bytes.push(b'\n');
    std::fs::write(&hostile, bytes).unwrap();
    let output = replay(&hostile, &[]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("hostile.log:1: not an audit event"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hostile.log:2: not an audit event"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hostile.log:3: longer than 67108864 bytes"),
        "{stderr}"
    );
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("Replayed 1 requests"), "{text}");
    // Nothing to replay, or no such file: a failure naming the file.
    let empty = dir.path().join("empty.log");
    std::fs::write(&empty, "\n\nnot json\n").unwrap();
    let output = replay(&empty, &[]);
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("empty.log: no request to replay in 3 lines (1 unusable)"),
        "{stderr}"
    );
    let output = replay(&dir.path().join("missing.log"), &[]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing.log"));
    // --audit-log does not mix with a workload, and --in-force needs it.
    let output = apfkit(&["simulate", "--audit-log", "x", "--workload", "y"], b"");
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot be used with"));
    let output = apfkit(&["simulate", "--in-force", "x"], b"");
    assert!(String::from_utf8_lossy(&output.stderr).contains("--audit-log"));
}

/// The guide's replay, run as written: a log written by `apfkit serve`, replayed against the
/// configuration in force read from files and from the live cluster.
#[test]
fn the_guides_replay_commands_work_as_written() {
    let (stdout, _) = super::serve::run_guide_section("apf-tools.md", "Replaying an audit log");
    // The text report: the level the proposal adds served the job's 20 lists, and the
    // configuration in force has no such level.
    let ci = stdout
        .lines()
        .find(|line| line.starts_with("ci,"))
        .unwrap_or_else(|| panic!("the ci level in\n{stdout}"));
    let cells: Vec<&str> = ci.split(',').map(str::trim).collect();
    assert_eq!(cells[1..4], ["-", "-", "-"], "{ci}");
    assert_eq!(cells[4], "20", "{ci}");
    // The JSON report against the live cluster's configuration.
    assert!(stdout.contains(r#"["ci-runner",20]"#), "{stdout}");
}

/// Replaying a log that takes over a second shows a progress bar on a terminal (a
/// pseudo-terminal from util-linux's `script`), by the share of the file read, and none when
/// standard error is a pipe.
#[test]
fn a_long_replay_shows_a_progress_bar_on_a_terminal_only() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("long.log");
    let mut text = String::new();
    for i in 0..160_000u64 {
        let (seconds, micros) = (i / 1_000, i % 1_000 * 1_000);
        let event = event(
            &format!("r{i}"),
            "ResponseComplete",
            &format!("user-{}", i % 100),
            "get",
            0,
            0,
        );
        let line = event.to_string().replace(
            "2026-11-28T10:00:00.000000Z",
            &format!(
                "2026-11-28T10:{:02}:{:02}.{micros:06}Z",
                seconds / 60,
                seconds % 60
            ),
        );
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(&log, text).unwrap();
    let run = format!(
        "{} simulate --audit-log {} > /dev/null",
        env!("CARGO_BIN_EXE_apfkit"),
        log.display()
    );
    super::simulate::progress_shows_on_a_terminal_only(&run, "replaying");
}
