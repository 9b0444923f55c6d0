//! API Priority and Fairness in front of `apfkit serve`: every answer names the FlowSchema
//! and priority level that classified the request (by uid, as kube-apiserver's headers do),
//! by the user its client certificate names; and a level with `Reject` answers 429 with
//! `Retry-After` once its seats are taken, while `system:masters` stays exempt.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::serve::{NO_APF, Server};

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";

/// The response headers of a GET of `path` with curl and `args`; answers the status and the
/// headers, lower-cased.
fn head(server: &Server, path: &str, args: &[&str]) -> (u16, Vec<(String, String)>) {
    let mut command = Command::new("curl");
    command
        .args([
            "--silent",
            "--show-error",
            "--output",
            "/dev/null",
            "--dump-header",
            "-",
            "--cacert",
        ])
        .arg(server.ca())
        .args(args)
        .arg(format!("{}{path}", server.url()));
    let output = super::run_within(command, b"", Duration::from_secs(30), |_| {});
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    assert_ne!(
        status,
        0,
        "no answer to {path} ({:?}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers)
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

fn uid(server: &Server, kind: &str, name: &str) -> String {
    server.kubectl_ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"], b"")
}

/// curl's arguments for the client certificate of `who` (`admin` or `user`).
pub(super) fn client(server: &Server, who: &str) -> Vec<String> {
    let dir = server.data_dir();
    vec![
        "--cert".into(),
        dir.join(format!("{who}.crt")).display().to_string(),
        "--key".into(),
        dir.join(format!("{who}.key")).display().to_string(),
    ]
}

#[test]
fn answers_name_the_flow_schema_and_level_of_who_asked() {
    let server = Server::start(&[]);
    server.grant_plain_user();
    for (who, path, schema, level) in [
        ("admin", FLOW_SCHEMAS, "exempt", "exempt"),
        ("user", FLOW_SCHEMAS, "global-default", "global-default"),
        ("user", "/healthz", "probes", "exempt"),
    ] {
        let args = client(&server, who);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (status, headers) = head(&server, path, &args);
        assert_eq!(status, 200, "{who} {path}");
        assert_eq!(
            header(&headers, "x-kubernetes-pf-flowschema-uid"),
            Some(uid(&server, "flowschema", schema).as_str()),
            "{who} {path}"
        );
        assert_eq!(
            header(&headers, "x-kubernetes-pf-prioritylevel-uid"),
            Some(uid(&server, "prioritylevelconfiguration", level).as_str()),
            "{who} {path}"
        );
    }
}

#[test]
fn a_level_that_rejects_answers_429_once_its_seat_is_taken() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    {
        // The configuration is read at start: store it, then start again.
        let first = Server::start_in(&dir, &[]);
        first.grant_plain_user();
        first.kubectl_ok(
            &["apply", "-f", "-"],
            apfkit_test_support::flow_control::ONE_SEAT_FOR_THE_PLAIN_USER.as_bytes(),
        );
    }
    // Ten seats in all: `tiny` gets one.
    let server = Server::start_in(
        &dir,
        &[
            "--max-requests-inflight",
            "10",
            "--max-mutating-requests-inflight",
            "0",
        ],
    );
    // The plain user takes tiny's seat with a PUT whose body never comes.
    let user = client(&server, "user");
    let (mut holder, writer) = stalled_put(&server, data.path(), &user);

    // `apfkit status` samples the server meanwhile (issue 41, item 1): three rejections.
    let kubeconfig = server.kubeconfig().to_owned();
    let page = data.path().join("status.html");
    let page_path = page.clone();
    let sampling = std::thread::spawn(move || {
        let kubeconfig = kubeconfig.to_str().unwrap();
        let args = [
            "status",
            "--kubeconfig",
            kubeconfig,
            "--interval",
            "3s",
            "--every",
            "500ms",
            "-o",
            "json",
            "--report",
            page_path.to_str().unwrap(),
        ];
        serde_json::from_str::<serde_json::Value>(&apfkit_ok(&args)).unwrap()
    });
    std::thread::sleep(Duration::from_millis(700));
    let args: Vec<&str> = user.iter().map(String::as_str).collect();
    for _ in 0..2 {
        assert_eq!(head(&server, FLOW_SCHEMAS, &args).0, 429);
    }
    let (status, headers) = head(&server, FLOW_SCHEMAS, &args);
    assert_eq!(status, 429, "{headers:?}");
    let sampled = sampling.join().unwrap();
    assert!(sampled["samples"].as_u64().unwrap() >= 6, "{sampled}");
    let levels = sampled["priorityLevels"].as_array().unwrap();
    let tiny = levels
        .iter()
        .find(|l| l["name"] == "tiny")
        .expect("tiny sampled");
    assert_eq!(tiny["rejected"]["concurrency-limit"], 3.0, "{tiny}");
    assert_eq!(tiny["executingSeats"]["max"], 1.0, "{tiny}");
    assert_eq!(tiny["saturated"], true, "{tiny}");
    // The live page (issue 41 §6): the same figures first, then tiny's charts over the run.
    let html = std::fs::read_to_string(&page).unwrap();
    let headline = html.find("What matters").unwrap();
    for expected in [
        "<li class=\"bad\">tiny: 3 requests rejected during the run (concurrency-limit 3).</li>",
        "<li class=\"warn\">tiny was saturated: seats in use reached its current limit.</li>",
        "<figure title=\"tiny: seats in use and limits\">",
        "<figure title=\"tiny: requests rejected (total so far)\">",
        "<td>tiny</td>",
    ] {
        let at = html
            .find(expected)
            .unwrap_or_else(|| panic!("{expected} in {html}"));
        assert!(at > headline, "{expected} after the headline");
    }
    assert!(!html.contains("<script"), "self-contained");
    // Its limits are the ones `apfkit limits` computes from the same cluster.
    let limits: serde_json::Value = serde_json::from_str(&apfkit_ok(&[
        "limits",
        "--kubeconfig",
        server.kubeconfig().to_str().unwrap(),
        "--server-concurrency",
        "10",
        "-o",
        "json",
    ]))
    .unwrap();
    for level in limits["priorityLevels"].as_array().unwrap() {
        let sampled = levels.iter().find(|l| l["name"] == level["name"]).unwrap();
        assert_eq!(
            sampled["nominalLimit"],
            level["nominalCL"].as_f64().unwrap(),
            "{level}"
        );
    }
    assert!(header(&headers, "retry-after").is_some_and(|s| s.parse::<u32>().is_ok()));
    assert_eq!(
        header(&headers, "x-kubernetes-pf-prioritylevel-uid"),
        Some(uid(&server, "prioritylevelconfiguration", "tiny").as_str())
    );
    // The administrator is exempt.
    let admin = client(&server, "admin");
    let args: Vec<&str> = admin.iter().map(String::as_str).collect();
    assert_eq!(head(&server, FLOW_SCHEMAS, &args).0, 200);

    // The body ends: the seat is free again.
    drop(writer);
    let _ = holder.wait();
    let args: Vec<&str> = user.iter().map(String::as_str).collect();
    assert_eq!(head(&server, FLOW_SCHEMAS, &args).0, 200);
}

/// A PUT of the plain user (`user`'s curl arguments) whose body never ends, streamed from a
/// FIFO in `dir`: it holds its place in the server until the writer is dropped. Answers the
/// curl process and the writer.
fn stalled_put(
    server: &Server,
    dir: &std::path::Path,
    user: &[String],
) -> (std::process::Child, std::fs::File) {
    let fifo = dir.join("body");
    apfkit_test_support::process::mkfifo(&fifo);
    let holder = Command::new("curl")
        .args(["--silent", "--max-time", "60", "--cacert"])
        .arg(server.ca())
        .args(user)
        .args([
            "-X",
            "PUT",
            "-H",
            "Content-Type: application/json",
            "-H",
            "Expect:",
        ])
        // Streamed from the FIFO (chunked), unlike --data-binary, which reads it all first.
        .arg("--upload-file")
        .arg(&fifo)
        .arg(format!("{}{FLOW_SCHEMAS}/plain-users", server.url()))
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    writer.write_all(b"{").unwrap();
    writer.flush().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    (holder, writer)
}

/// Without APF, kube-apiserver's max-in-flight filter (`WithMaxInFlightLimit`): a mutating
/// request past `--max-mutating-requests-inflight` is answered 429 at once, read-only requests
/// have their own limit, and system:masters is always served.
#[test]
fn without_priority_and_fairness_the_max_in_flight_limits_apply() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    {
        let first = Server::start_in(&dir, &[]);
        first.grant_plain_user();
    }
    let server = Server::start_in(
        &dir,
        &[
            "--enable-priority-and-fairness=false",
            "--max-requests-inflight",
            "10",
            "--max-mutating-requests-inflight",
            "1",
        ],
    );
    let user = client(&server, "user");
    let (mut holder, writer) = stalled_put(&server, data.path(), &user);
    let post = |who: &[String]| {
        let mut args: Vec<&str> = who.iter().map(String::as_str).collect();
        args.extend([
            // A 429 is answered before the body is read, as kube-apiserver's filter answers
            // it; over HTTP/2 the stream is then reset, and curl, when still sending, reports
            // a framing error instead of the answer (seen under a loaded machine).
            "--http1.1",
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data",
            r#"{"metadata":{"name":"in-flight"},"spec":{"priorityLevelConfiguration":{"name":"global-default"}}}"#,
        ]);
        head(&server, FLOW_SCHEMAS, &args)
    };
    let (status, headers) = post(&user);
    assert_eq!(status, 429, "{headers:?}");
    assert_eq!(header(&headers, "retry-after"), Some("1"));
    assert!(header(&headers, "x-kubernetes-pf-flowschema-uid").is_none());
    // Read-only requests have their own limit.
    let args: Vec<&str> = user.iter().map(String::as_str).collect();
    assert_eq!(head(&server, FLOW_SCHEMAS, &args).0, 200);
    // The administrator (system:masters) is served past the limit.
    let admin = client(&server, "admin");
    assert_eq!(post(&admin).0, 201);
    drop(writer);
    let _ = holder.wait();
    assert_eq!(post(&user).0, 409, "served again: the name is taken");
}

#[test]
fn priority_and_fairness_can_be_switched_off() {
    let server = Server::start(&["--enable-priority-and-fairness=false"]);
    let admin = client(&server, "admin");
    let admin: Vec<&str> = admin.iter().map(String::as_str).collect();
    let (status, headers) = head(&server, FLOW_SCHEMAS, &admin);
    assert_eq!(status, 200);
    assert!(header(&headers, "x-kubernetes-pf-flowschema-uid").is_none());
}

const PLAIN_USERS_LOW: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: plain-users}
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 100
  rules:
  - subjects: [{kind: User, user: {name: apfkit-user}}]
    resourceRules: [{verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*']}]
";

#[test]
fn applying_a_flow_schema_changes_how_the_next_requests_are_classified() {
    let server = Server::start(&[]);
    let user = client(&server, "user");
    let args: Vec<&str> = user.iter().map(String::as_str).collect();
    let schema_of = || {
        let (_, headers) = head(&server, FLOW_SCHEMAS, &args);
        header(&headers, "x-kubernetes-pf-flowschema-uid").map(str::to_owned)
    };
    assert_eq!(
        schema_of(),
        Some(uid(&server, "flowschema", "global-default"))
    );
    server.kubectl_ok(&["apply", "-f", "-"], PLAIN_USERS_LOW.as_bytes());
    let wanted = uid(&server, "flowschema", "plain-users");
    // The configuration controller picks the change up within moments.
    let started = std::time::Instant::now();
    while schema_of().as_deref() != Some(wanted.as_str()) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still classified by the old configuration"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, headers) = head(&server, FLOW_SCHEMAS, &args);
    assert_eq!(
        header(&headers, "x-kubernetes-pf-prioritylevel-uid"),
        Some(uid(&server, "prioritylevelconfiguration", "workload-low").as_str())
    );
    // And back, once it is deleted.
    server.kubectl_ok(&["delete", "flowschema", "plain-users"], b"");
    let global = uid(&server, "flowschema", "global-default");
    let started = std::time::Instant::now();
    while schema_of().as_deref() != Some(global.as_str()) {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the deletion was not seen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

const LOST: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: lost}
spec:
  priorityLevelConfiguration: {name: nowhere}
  matchingPrecedence: 600
";

const NOWHERE: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: nowhere}
spec:
  type: Limited
  limited: {nominalConcurrencyShares: 5, limitResponse: {type: Reject}}
";

/// The `Dangling` condition of a FlowSchema once it is `status`, within 10 s.
fn dangling_becomes(server: &Server, name: &str, status: &str) -> serde_json::Value {
    let started = std::time::Instant::now();
    loop {
        let text = server.kubectl_ok(&["get", "flowschema", name, "-o", "json"], b"");
        let object: serde_json::Value = serde_json::from_str(&text).unwrap();
        let condition = object["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Dangling"))
            .cloned();
        if let Some(condition) = condition.filter(|c| c["status"] == status) {
            return condition;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{name} is not Dangling={status}: {object}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn flow_schemas_say_whether_their_priority_level_is_missing() {
    let server = Server::start(&[]);
    // The bootstrap schemas find their levels.
    let exempt = dangling_becomes(&server, "exempt", "False");
    assert_eq!(exempt["reason"], "Found");
    server.kubectl_ok(&["apply", "-f", "-"], LOST.as_bytes());
    let lost = dangling_becomes(&server, "lost", "True");
    assert_eq!(lost["reason"], "NotFound");
    assert_eq!(
        lost["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"nowhere\" but there is no such object"
    );
    let columns = server.kubectl_ok(&["get", "flowschema", "lost", "--no-headers"], b"");
    assert!(columns.trim_end().ends_with("True"), "{columns}");
    server.kubectl_ok(&["apply", "-f", "-"], NOWHERE.as_bytes());
    let found = dangling_becomes(&server, "lost", "False");
    assert_eq!(found["reason"], "Found");
    // Written once per change: the objects settle.
    let version = |name: &str| {
        server.kubectl_ok(
            &[
                "get",
                "flowschema",
                name,
                "-o",
                "jsonpath={.metadata.resourceVersion}",
            ],
            b"",
        )
    };
    let before = (version("lost"), version("exempt"));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!((version("lost"), version("exempt")), before);
}

#[test]
fn the_priority_levels_are_dumped_as_kube_apiserver_dumps_them() {
    let server = Server::start(&[]);
    let path = "/debug/api_priority_and_fairness/dump_priority_levels";
    let (code, body) = server.curl(path, &[], b"");
    assert_eq!(code, 200);
    let text = String::from_utf8(body).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    assert_eq!(
        header,
        [
            "PriorityLevelName",
            "ActiveQueues",
            "IsIdle",
            "IsQuiescing",
            "WaitingRequests",
            "ExecutingRequests",
            "DispatchedRequests",
            "RejectedRequests",
            "TimedoutRequests",
            "CancelledRequests"
        ]
    );
    let levels: Vec<&str> = lines.map(|l| l.split(',').next().unwrap().trim()).collect();
    for level in ["catch-all", "exempt", "global-default", "workload-low"] {
        assert!(levels.contains(&level), "{level} in {text}");
    }
    // A row per queue: global-default has 128, exempt none.
    let (code, body) = server.curl("/debug/api_priority_and_fairness/dump_queues", &[], b"");
    assert_eq!(code, 200);
    let queues = String::from_utf8(body).unwrap();
    let header: Vec<&str> = queues
        .lines()
        .next()
        .unwrap()
        .split(',')
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        [
            "PriorityLevelName",
            "Index",
            "PendingRequests",
            "ExecutingRequests",
            "SeatsInUse",
            "NextDispatchR",
            "InitialSeatsSum",
            "MaxSeatsSum",
            "TotalWorkSum"
        ]
    );
    let rows_of = |level: &str| {
        queues
            .lines()
            .filter(|l| l.starts_with(&format!("{level},")))
            .count()
    };
    assert_eq!((rows_of("global-default"), rows_of("exempt")), (128, 0));
    // The dump of requests shows the one asking for it, executing on the exempt level
    // without a queue, and who it is when asked for details.
    let admin = client(&server, "admin");
    let admin: Vec<&str> = admin.iter().map(String::as_str).collect();
    let (code, body) = server.curl(
        "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1",
        &admin,
        b"",
    );
    assert_eq!(code, 200);
    let requests = String::from_utf8(body).unwrap();
    let rows: Vec<Vec<&str>> = requests
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::trim).collect())
        .collect();
    let own = rows
        .iter()
        .find(|r| r[12] == "/debug/api_priority_and_fairness/dump_requests")
        .unwrap_or_else(|| panic!("{requests}"));
    assert_eq!(&own[..4], ["exempt", "exempt", "-1", "-1"]);
    assert_eq!(&own[10..12], ["apfkit-admin", "get"]);
    let (_, body) = server.curl("/debug/api_priority_and_fairness/dump_requests", &[], b"");
    assert_eq!(
        String::from_utf8(body)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .split(',')
            .count(),
        10
    );
    // Hostile queries and methods: answered, never a panic.
    for (path, method, code) in [
        (
            "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=%ZZ&&=",
            "GET",
            200,
        ),
        (
            "/debug/api_priority_and_fairness/dump_queues?x=%FF%FE",
            "GET",
            200,
        ),
        ("/metrics?dryRun=%FF&watch=%", "GET", 200),
        ("/metrics", "POST", 405),
        (
            "/debug/api_priority_and_fairness/dump_priority_levels",
            "DELETE",
            405,
        ),
    ] {
        let (got, _) = server.curl(path, &["-X", method], b"");
        assert_eq!(got, code, "{method} {path}");
    }
    // Without APF there is nothing to dump.
    let plain = Server::start(&["--enable-priority-and-fairness=false"]);
    assert_eq!(plain.curl(path, &[], b"").0, 404);
}

/// Reads the Prometheus text format on standard input with Prometheus' own parser
/// (`prometheus_client`) and prints every sample as `[name, labels, value]`, with each
/// family's name and type.
const PARSE_METRICS: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
families = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    families[family.name] = {
        "type": family.type,
        "samples": [[s.name, s.labels, s.value] for s in family.samples],
    }
print(json.dumps(families))
"#;

/// `/metrics`, read as the admin (exempt, so that scrapes do not count in the flows they
/// read), parsed by Prometheus' Python client.
fn scrape(server: &Server) -> serde_json::Value {
    let admin = client(server, "admin");
    let admin: Vec<&str> = admin.iter().map(String::as_str).collect();
    let (code, body) = server.curl("/metrics", &admin, b"");
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let mut command = Command::new(super::serve_clients::python_with("prometheus_client"));
    command.args(["-c", PARSE_METRICS]);
    let output = super::run_within(command, &body, Duration::from_secs(60), |_| {});
    assert!(
        output.status.success(),
        "the parser refused the text: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The value of the sample `name` whose labels include `labels`.
fn value(
    families: &serde_json::Value,
    family: &str,
    name: &str,
    labels: &[(&str, &str)],
) -> Option<f64> {
    families[family]["samples"]
        .as_array()?
        .iter()
        .find(|sample| sample[0] == name && labels.iter().all(|(k, v)| sample[1][*k] == *v))
        .and_then(|sample| sample[2].as_f64())
}

#[test]
fn metrics_have_kube_apiservers_names_labels_and_buckets_and_parse_as_prometheus_text() {
    let server = Server::start(&[]);
    server.grant_plain_user();
    // Two LISTs as the plain user (global-default) and one 404 GET.
    let user = client(&server, "user");
    let user: Vec<&str> = user.iter().map(String::as_str).collect();
    for path in [
        FLOW_SCHEMAS,
        FLOW_SCHEMAS,
        &format!("{FLOW_SCHEMAS}/missing"),
    ] {
        head(&server, path, &user);
    }
    let families = scrape(&server);
    // Families without samples are left out, as client_golang leaves them out: nothing has
    // queued or been rejected here (the flood test reads those).
    for (family, kind) in [
        ("apiserver_flowcontrol_current_executing_requests", "gauge"),
        ("apiserver_flowcontrol_current_executing_seats", "gauge"),
        (
            "apiserver_flowcontrol_request_wait_duration_seconds",
            "histogram",
        ),
        (
            "apiserver_flowcontrol_request_execution_seconds",
            "histogram",
        ),
        ("apiserver_flowcontrol_dispatched_requests", "counter"),
        ("apiserver_flowcontrol_nominal_limit_seats", "gauge"),
        ("apiserver_flowcontrol_current_limit_seats", "gauge"),
        ("apiserver_flowcontrol_lower_limit_seats", "gauge"),
        ("apiserver_flowcontrol_upper_limit_seats", "gauge"),
        ("apiserver_flowcontrol_demand_seats", "histogram"),
        ("apiserver_request", "counter"),
        ("apiserver_request_duration_seconds", "histogram"),
    ] {
        assert_eq!(families[family]["type"], kind, "{family}");
    }
    let global = [
        ("priority_level", "global-default"),
        ("flow_schema", "global-default"),
    ];
    assert!(
        value(
            &families,
            "apiserver_flowcontrol_dispatched_requests",
            "apiserver_flowcontrol_dispatched_requests_total",
            &global
        )
        .unwrap()
            >= 3.0
    );
    assert_eq!(
        value(
            &families,
            "apiserver_flowcontrol_nominal_limit_seats",
            "apiserver_flowcontrol_nominal_limit_seats",
            &[("priority_level", "workload-low")]
        ),
        Some(245.0)
    );
    let list = [
        ("verb", "LIST"),
        ("dry_run", ""),
        ("group", "flowcontrol.apiserver.k8s.io"),
        ("version", "v1"),
        ("resource", "flowschemas"),
        ("subresource", ""),
        ("scope", "cluster"),
        ("component", "apiserver"),
    ];
    let with_code = |code| {
        let mut labels = list.to_vec();
        labels.push(("code", code));
        labels
    };
    assert_eq!(
        value(
            &families,
            "apiserver_request",
            "apiserver_request_total",
            &with_code("200")
        ),
        Some(2.0)
    );
    let get_missing = [
        ("verb", "GET"),
        ("scope", "resource"),
        ("code", "404"),
        ("resource", "flowschemas"),
    ];
    assert_eq!(
        value(
            &families,
            "apiserver_request",
            "apiserver_request_total",
            &get_missing
        ),
        Some(1.0)
    );
    // kube-apiserver's buckets, and the two LISTs counted.
    let bounds: Vec<String> = families["apiserver_request_duration_seconds"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s[0] == "apiserver_request_duration_seconds_bucket" && s[1]["verb"] == "LIST")
        .map(|s| s[1]["le"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        bounds.join(" "),
        // As client_golang writes them: `1`, not `1.0`.
        "0.005 0.025 0.05 0.1 0.2 0.4 0.6 0.8 1 1.25 1.5 2 3 4 5 6 8 10 15 20 30 45 60 +Inf"
    );
    assert_eq!(
        value(
            &families,
            "apiserver_request_duration_seconds",
            "apiserver_request_duration_seconds_count",
            &list
        ),
        Some(2.0)
    );
}

/// The stored `metadata.resourceVersion` and `spec.matchingPrecedence` of a FlowSchema, and
/// its auto-update annotation (`-` when missing, `none` when the object is).
fn schema_state(server: &Server, name: &str) -> (String, String, String) {
    let output = server.kubectl(
        &[
            "get",
            "flowschema",
            name,
            "-o",
            r#"jsonpath={.metadata.resourceVersion} {.spec.matchingPrecedence} {.metadata.annotations.apf\.kubernetes\.io/autoupdate-spec}"#,
        ],
        b"",
    );
    if !output.status.success() {
        return ("none".into(), "none".into(), "none".into());
    }
    let text = String::from_utf8(output.stdout).unwrap();
    let mut fields = text.split(' ');
    let mut next = || {
        fields
            .next()
            .filter(|f| !f.is_empty())
            .unwrap_or("-")
            .to_owned()
    };
    (next(), next(), next())
}

/// kube-apiserver's configuration producer, seen across a restart (it runs at start and then
/// every minute): mandatory objects restored, suggested ones restored while their annotation
/// is true, deleted ones created again, auto-updated leftovers deleted, and nothing written
/// when nothing changed.
#[test]
fn the_bootstrap_objects_are_kept_as_kube_apiserver_keeps_them() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    let names = [
        "exempt",
        "catch-all",
        "global-default",
        "system-leader-election",
        "probes",
    ];
    {
        let server = Server::start_in(&dir, &[NO_APF]);
        let before: Vec<_> = names.iter().map(|n| schema_state(&server, n)).collect();
        assert!(
            before.iter().all(|(_, _, annotation)| annotation == "true"),
            "{before:?}"
        );
        drop(server);
        // A start with nothing changed writes nothing.
        let server = Server::start_in(&dir, &[NO_APF]);
        let again: Vec<_> = names.iter().map(|n| schema_state(&server, n)).collect();
        assert_eq!(again, before);

        let patch = |name: &str, patch: &str| {
            server.kubectl_ok(
                &["patch", "flowschema", name, "--type=merge", "-p", patch],
                b"",
            );
        };
        patch("global-default", r#"{"spec":{"matchingPrecedence":9100}}"#);
        patch(
            "system-leader-election",
            r#"{"metadata":{"annotations":{"apf.kubernetes.io/autoupdate-spec":"false"}},"spec":{"matchingPrecedence":9200}}"#,
        );
        // The spec of a mandatory object cannot be changed (validation); its annotation can.
        patch(
            "catch-all",
            r#"{"metadata":{"annotations":{"apf.kubernetes.io/autoupdate-spec":"false"}}}"#,
        );
        server.kubectl_ok(&["delete", "flowschema", "probes"], b"");
        for (name, annotation) in [("retired", Some("true")), ("mine", None)] {
            let annotations = annotation
                .map(|a| format!("  annotations: {{apf.kubernetes.io/autoupdate-spec: \"{a}\"}}\n"))
                .unwrap_or_default();
            let manifest = format!(
                "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: {name}\n{annotations}spec:\n  priorityLevelConfiguration: {{name: global-default}}\n  matchingPrecedence: 5000\n"
            );
            server.kubectl_ok(&["create", "-f", "-"], manifest.as_bytes());
        }
    }
    let server = Server::start_in(&dir, &[NO_APF]);
    let precedence = |name: &str| schema_state(&server, name).1;
    assert_eq!(
        precedence("global-default"),
        "9900",
        "restored: its annotation is true"
    );
    assert_eq!(
        precedence("system-leader-election"),
        "9200",
        "kept: its annotation is false"
    );
    assert_eq!(
        schema_state(&server, "catch-all").1..=schema_state(&server, "catch-all").2,
        "10000".to_owned()..="true".to_owned(),
        "mandatory: restored and marked auto-updated"
    );
    assert_eq!(schema_state(&server, "probes").2, "true", "created again");
    assert_eq!(
        schema_state(&server, "retired").0,
        "none",
        "an auto-updated leftover is deleted"
    );
    assert_eq!(
        schema_state(&server, "mine").1,
        "5000",
        "an operator's own object stays"
    );
}

/// The estimated seats the metrics have seen for a flow: (count, sum).
fn estimated_seats(server: &Server, flow: &str) -> (f64, f64) {
    let families = scrape(server);
    let labels = [("priority_level", flow), ("flow_schema", flow)];
    let family = "apiserver_flowcontrol_work_estimated_seats";
    (
        value(&families, family, &format!("{family}_count"), &labels).unwrap_or(0.0),
        value(&families, family, &format!("{family}_sum"), &labels).unwrap_or(0.0),
    )
}

/// Work is estimated from the store as kube-apiserver's estimator does: a LIST of a
/// thousand stored objects takes several seats (their bytes over 100 kB a seat, at most the
/// level's cap), a GET one.
#[test]
fn a_list_of_many_stored_objects_is_estimated_at_several_seats() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().display().to_string();
    {
        let server = Server::start_in(&dir, &[NO_APF]);
        let manifests: String = (0..500)
            .map(|i| {
                format!(
                    "---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: many-{i:04}\n  labels: {{purpose: estimate-test}}\nspec:\n  priorityLevelConfiguration: {{name: workload-low}}\n  matchingPrecedence: {}\n  rules:\n  - subjects: [{{kind: User, user: {{name: nobody-{i}}}}}]\n    resourceRules: [{{verbs: [get], apiGroups: [''], resources: [configmaps], namespaces: ['*']}}]\n",
                    1000 + i
                )
            })
            .collect();
        server.kubectl_ok(&["create", "-f", "-"], manifests.as_bytes());
    }
    // The counts are read at start (and then every minute).
    let server = Server::start_in(&dir, &[]);
    let user = client(&server, "user");
    let user: Vec<&str> = user.iter().map(String::as_str).collect();
    let flow = "global-default";
    let before = estimated_seats(&server, flow);
    head(&server, &format!("{FLOW_SCHEMAS}/many-0001"), &user);
    let after_get = estimated_seats(&server, flow);
    assert_eq!(after_get.0 - before.0, 1.0);
    assert_eq!(after_get.1 - before.1, 1.0, "a GET is one seat");
    head(&server, FLOW_SCHEMAS, &user);
    let after_list = estimated_seats(&server, flow);
    assert_eq!(after_list.0 - after_get.0, 1.0);
    let seats = after_list.1 - after_get.1;
    // global-default's cap on a 600-seat server: min(ceil(49 × 0.15), 49 / 6) = 8.
    assert!(
        (3.0..=8.0).contains(&seats),
        "a LIST of 500 objects: {seats} seats"
    );
    // A LIST with limit=10 reads ten objects: one seat.
    head(&server, &format!("{FLOW_SCHEMAS}?limit=10"), &user);
    let after_page = estimated_seats(&server, flow);
    assert_eq!(after_page.1 - after_list.1, 1.0);
}

/// Runs `apfkit` with `args`; answers standard output, failing the test on an error.
fn apfkit_ok(args: &[&str]) -> String {
    String::from_utf8(super::success(args, b"")).unwrap()
}

/// Issue 41, §1: a live cluster's configuration compared with its release's bootstrap
/// objects (`apfkit bootstrap --diff --kubeconfig`): a suggested level an operator changed
/// (and kept from the configuration producer with `apf.kubernetes.io/autoupdate-spec:
/// "false"`), with the field that changed, and a FlowSchema of its own.
#[test]
fn a_live_clusters_configuration_is_compared_with_its_bootstrap_objects() {
    let server = Server::start(&[]);
    server.kubectl_ok(
        &[
            "annotate",
            "prioritylevelconfiguration",
            "global-default",
            "apf.kubernetes.io/autoupdate-spec=false",
            "--overwrite",
        ],
        b"",
    );
    server.kubectl_ok(
        &[
            "patch",
            "prioritylevelconfiguration",
            "global-default",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"limited":{"nominalConcurrencyShares":40}}}"#,
        ],
        b"",
    );
    server.kubectl_ok(
        &["apply", "-f", "-"],
        apfkit_test_support::flow_control::ONE_SEAT_FOR_THE_PLAIN_USER.as_bytes(),
    );
    let kubeconfig = server.kubeconfig().to_str().unwrap();
    let text = apfkit_ok(&["bootstrap", "--diff", "--kubeconfig", kubeconfig]);
    // The cluster's release is apfkit serve's (1.37), read from its /version.
    assert!(
        text.starts_with("Compared with Kubernetes 1.37's bootstrap configuration:"),
        "{text}"
    );
    for expected in [
        "PriorityLevelConfiguration global-default: changed\n  spec.limited.nominalConcurrencyShares: 20 -> 40\n",
        "PriorityLevelConfiguration tiny: added\n",
        "FlowSchema plain-users: added\n",
    ] {
        assert!(text.contains(expected), "{expected} in\n{text}");
    }
    assert!(!text.contains("missing"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&apfkit_ok(&[
        "bootstrap",
        "--diff",
        "--kubeconfig",
        kubeconfig,
        "-o",
        "json",
    ]))
    .unwrap();
    let exempt = json["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "exempt" && o["kind"] == "FlowSchema")
        .unwrap();
    assert_eq!(exempt["state"], "unchanged");
    assert_eq!(exempt["mandatory"], true);
    // -f and a cluster do not go together.
    let both = super::apfkit(
        &[
            "bootstrap",
            "--diff",
            "-f",
            "x.yaml",
            "--kubeconfig",
            kubeconfig,
        ],
        b"",
    );
    assert!(String::from_utf8_lossy(&both.stderr).contains("cannot be used with"));
}

/// Issue 41, §1: explain, limits, lint and simulate read a live cluster's configuration
/// (`--kubeconfig`, `--context`) in the newest version it serves, and `explain --uid` names
/// the objects behind the uids of a response's headers.
#[test]
fn the_apf_commands_read_a_live_cluster_and_explain_its_uids() {
    let server = Server::start(&[]);
    server.grant_plain_user();
    let kubeconfig = server.kubeconfig().to_str().unwrap().to_owned();
    let live = ["--kubeconfig", kubeconfig.as_str()];
    let request = [
        "--user",
        "apfkit-user",
        "--group",
        "system:authenticated",
        "--verb",
        "get",
        "--resource",
        "flowschemas",
        "--api-group",
        "flowcontrol.apiserver.k8s.io",
    ];
    let explain = |source: &[&str]| {
        let mut args = vec!["explain"];
        args.extend_from_slice(source);
        args.extend_from_slice(&request);
        apfkit_ok(&args)
    };
    // The server's bootstrap configuration is the embedded default: the same answer.
    assert_eq!(explain(&live), explain(&[]));
    assert!(explain(&live).starts_with("FlowSchema:     global-default\n"));

    // A schema created in the cluster is seen by every command that reads it, and only there.
    server.kubectl_ok(&["apply", "-f", "-"], PLAIN_USERS_LOW.as_bytes());
    assert!(
        explain(&live).starts_with("FlowSchema:     plain-users\nPriorityLevel:  workload-low\n")
    );
    assert!(explain(&[]).starts_with("FlowSchema:     global-default\n"));
    let json =
        |args: &[&str]| -> serde_json::Value { serde_json::from_str(&apfkit_ok(args)).unwrap() };
    // A schema whose level is missing: lint reads it from the cluster and says so.
    server.kubectl_ok(&["apply", "-f", "-"], LOST.as_bytes());
    let mut lint = vec!["lint", "-o", "json"];
    lint.extend_from_slice(&live);
    let output = super::apfkit(&lint, b"");
    let findings = String::from_utf8_lossy(&output.stdout);
    assert!(findings.contains("\"name\": \"lost\""), "{findings}");
    assert!(findings.contains("dangling-flow-schema"), "{findings}");
    // With the bootstrap of the cluster's own release, read from its /version (1.35, which
    // apfkit models: no warning).
    let mut with_bootstrap = lint.clone();
    with_bootstrap.push("--with-bootstrap");
    let output = super::apfkit(&with_bootstrap, b"");
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("dangling-flow-schema"));
    // A level created in the cluster: limits and simulate use it.
    server.kubectl_ok(&["apply", "-f", "-"], NOWHERE.as_bytes());
    let mut limits = vec!["limits", "-o", "json"];
    limits.extend_from_slice(&live);
    assert!(json(&limits).to_string().contains("nowhere"));
    let mut simulate = vec!["simulate", "-o", "json"];
    simulate.extend_from_slice(&live);
    assert!(json(&simulate).to_string().contains("nowhere"));
    // Another context of the same kubeconfig: the plain user's.
    let mut other = live.to_vec();
    other.extend(["--context", "apfkit-user"]);
    assert!(explain(&other).starts_with("FlowSchema:     plain-users\n"));

    // The uids of a response's headers, named: the plain user's GET went to plain-users.
    let user = client(&server, "user");
    let args: Vec<&str> = user.iter().map(String::as_str).collect();
    let (_, headers) = head(&server, FLOW_SCHEMAS, &args);
    let schema_uid = header(&headers, "x-kubernetes-pf-flowschema-uid")
        .unwrap()
        .to_owned();
    let level_uid = header(&headers, "x-kubernetes-pf-prioritylevel-uid")
        .unwrap()
        .to_owned();
    let mut by_uid = vec!["explain", "-o", "json", "--uid", schema_uid.as_str()];
    by_uid.extend_from_slice(&live);
    let schema = json(&by_uid);
    assert_eq!(schema["kind"], "FlowSchema");
    assert_eq!(schema["flowSchema"], "plain-users");
    assert_eq!(schema["priorityLevel"], "workload-low");
    assert_eq!(schema["matchingPrecedence"], 100);
    assert_eq!(
        schema["rules"][0]["subjects"][0]["user"]["name"],
        "apfkit-user"
    );
    let mut by_uid = vec!["explain", "--uid", level_uid.as_str()];
    by_uid.extend_from_slice(&live);
    let level = apfkit_ok(&by_uid);
    assert!(level.contains("PriorityLevel:  workload-low\n"), "{level}");
    assert!(level.contains("FlowSchemas:    "), "{level}");
    assert!(level.contains("plain-users"), "{level}");

    // What cannot be read is said, naming it; nothing panics.
    let refused = |args: &[&str], said: &str| {
        let output = super::apfkit(args, b"");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success() && stderr.contains(said),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    };
    let mut unknown = vec!["explain", "--uid", "no-such-uid"];
    unknown.extend_from_slice(&live);
    refused(
        &unknown,
        "no FlowSchema or PriorityLevelConfiguration has uid no-such-uid",
    );
    let mut missing = live.to_vec();
    missing.extend(["--context", "nowhere"]);
    let mut args = vec!["lint"];
    args.extend_from_slice(&missing);
    refused(&args, "nowhere");
    let garbage = server.data_dir().join("garbage.kubeconfig");
    std::fs::write(&garbage, "{[ not a kubeconfig").unwrap();
    let garbage = garbage.to_str().unwrap();
    refused(&["limits", "--kubeconfig", garbage], garbage);
    refused(
        &[
            "explain",
            "-f",
            "x.yaml",
            "--kubeconfig",
            garbage,
            "--uid",
            "a",
        ],
        "cannot be used with",
    );
}
