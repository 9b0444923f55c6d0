use serde_json::{Value, json};

use super::*;

/// An event as kube-apiserver's log backend writes it (`Metadata` level), received at
/// 10:00:00 and written at 10:00:00.250.
fn event() -> Value {
    json!({
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "Metadata",
        "auditID": "8d5d6c8e-6f0e-4d59-9bd4-2a0d4c3f0c11",
        "stage": "ResponseComplete",
        "requestURI": "/api/v1/namespaces/default/configmaps?limit=500",
        "verb": "list",
        "user": {
            "username": "alice",
            "uid": "u1",
            "groups": ["developers", "system:authenticated"]
        },
        "sourceIPs": ["10.0.0.7"],
        "userAgent": "kubectl/v1.35.0 (linux/amd64) kubernetes/abcdef",
        "objectRef": {"resource": "configmaps", "namespace": "default", "apiVersion": "v1"},
        "responseStatus": {"metadata": {}, "code": 200},
        "requestReceivedTimestamp": "2026-11-28T10:00:00.000000Z",
        "stageTimestamp": "2026-11-28T10:00:00.250000Z",
        "annotations": {
            "authorization.k8s.io/decision": "allow",
            "authorization.k8s.io/reason": "RBAC: allowed by ClusterRoleBinding \"developers\""
        }
    })
}

fn read(value: &Value) -> Line {
    AuditLog::default().read(value.to_string().as_bytes())
}

fn request(value: &Value) -> TracedRequest {
    match read(value) {
        Line::Request(request) => *request,
        other => panic!("{other:?} from {value}"),
    }
}

fn unusable(line: &[u8]) -> String {
    match AuditLog::default().read(line) {
        Line::Unusable(reason) => reason,
        other => panic!("{other:?} from {}", String::from_utf8_lossy(line)),
    }
}

const TEN_O_CLOCK: u64 = 1_795_860_000; // 2026-11-28T10:00:00Z

#[test]
fn a_completed_request_is_taken_with_its_times_user_and_resource() {
    let request = request(&event());
    assert_eq!(request.received, Duration::from_secs(TEN_O_CLOCK));
    assert_eq!(
        request.logged,
        Duration::from_millis(TEN_O_CLOCK * 1_000 + 250)
    );
    assert_eq!(request.service, Duration::from_millis(250));
    assert_eq!(request.user, "alice");
    assert_eq!(request.groups, ["developers", "system:authenticated"]);
    assert_eq!(request.verb, "list");
    assert!(request.is_resource_request);
    assert_eq!(
        (request.api_group.as_str(), request.resource.as_str()),
        ("", "configmaps")
    );
    assert_eq!(request.namespace, "default");
    assert_eq!(request.seats, 1);
    assert_eq!(request.path, "");
}

#[test]
fn the_recorded_queue_wait_is_not_service_time() {
    // kube-apiserver notes the wait of requests slower than 500 ms (k8s.io/apiserver
    // pkg/endpoints/filters/audit.go, writeLatencyToAnnotation).
    let mut kube = event();
    kube["stageTimestamp"] = json!("2026-11-28T10:00:02.000000Z");
    kube["annotations"]["apiserver.latency.k8s.io/apf-queue-wait"] = json!("1.5s");
    kube["annotations"]["apiserver.latency.k8s.io/total"] = json!("2s");
    assert_eq!(request(&kube).service, Duration::from_millis(500));
    let mut apfkit = event();
    apfkit["annotations"]["flowcontrol.apfkit/queue-wait"] = json!("50ms");
    apfkit["annotations"]["flowcontrol.apfkit/seats"] = json!("7");
    let request = request(&apfkit);
    assert_eq!(request.service, Duration::from_millis(200));
    assert_eq!(request.seats, 7);
    // A wait longer than the whole request leaves no service time, never a negative one.
    let mut odd = event();
    odd["annotations"]["flowcontrol.apfkit/queue-wait"] = json!("1h");
    assert_eq!(self::request(&odd).service, Duration::ZERO);
    let mut many = event();
    many["annotations"]["flowcontrol.apfkit/seats"] = json!("18446744073709551615");
    assert_eq!(self::request(&many).seats, 1_000);
    many["annotations"]["flowcontrol.apfkit/seats"] = json!("0");
    assert_eq!(self::request(&many).seats, 1);
}

#[test]
fn an_impersonated_request_is_classified_as_the_impersonated_user() {
    let mut value = event();
    value["impersonatedUser"] = json!({"username": "system:serviceaccount:ci:bot",
        "groups": ["system:serviceaccounts", "system:authenticated"]});
    let request = request(&value);
    assert_eq!(request.user, "system:serviceaccount:ci:bot");
    assert_eq!(
        request.groups,
        ["system:serviceaccounts", "system:authenticated"]
    );
}

#[test]
fn a_non_resource_request_keeps_its_path_without_the_query() {
    let mut value = event();
    value.as_object_mut().unwrap().remove("objectRef");
    value["verb"] = json!("get");
    value["requestURI"] = json!("/readyz?verbose=1");
    let request = request(&value);
    assert!(!request.is_resource_request);
    assert_eq!(
        (request.verb.as_str(), request.path.as_str()),
        ("get", "/readyz")
    );
}

#[test]
fn a_watch_is_taken_when_its_response_starts_and_not_again_when_it_ends() {
    let mut log = AuditLog::default();
    let mut started = event();
    started["verb"] = json!("watch");
    started["stage"] = json!("ResponseStarted");
    started["stageTimestamp"] = json!("2026-11-28T10:00:00.010000Z");
    let Line::Request(watch) = log.read(started.to_string().as_bytes()) else {
        panic!("the watch's start is its request");
    };
    assert_eq!(watch.service, Duration::from_millis(10));
    let mut ended = started.clone();
    ended["stage"] = json!("ResponseComplete");
    ended["stageTimestamp"] = json!("2026-11-28T10:30:00.000000Z");
    assert_eq!(
        log.read(ended.to_string().as_bytes()),
        Line::Passed(Passed::OtherStage)
    );
    // A policy that omits ResponseStarted leaves only the end: the watch is taken there.
    let Line::Request(late) = log.read(ended.to_string().as_bytes()) else {
        panic!("a watch seen only at its end is taken there");
    };
    assert_eq!(late.service, Duration::from_secs(30 * 60));
}

#[test]
fn stages_and_requests_flow_control_never_sees_are_passed_over() {
    let mut received = event();
    received["stage"] = json!("RequestReceived");
    assert_eq!(read(&received), Line::Passed(Passed::OtherStage));
    let mut started = event();
    started["stage"] = json!("ResponseStarted");
    assert_eq!(read(&started), Line::Passed(Passed::OtherStage));
    // A failed authentication, as WithFailedAuthenticationAudit writes it.
    let mut unauthenticated = event();
    unauthenticated["stage"] = json!("ResponseStarted");
    unauthenticated["user"] = json!({});
    unauthenticated["responseStatus"] = json!({"code": 401, "status": "Failure"});
    assert_eq!(
        read(&unauthenticated),
        Line::Passed(Passed::Unauthenticated)
    );
    for subresource in ["exec", "attach", "portforward", "proxy", "log"] {
        let mut long = event();
        long["objectRef"]["subresource"] = json!(subresource);
        long["verb"] = json!("create");
        assert_eq!(
            read(&long),
            Line::Passed(Passed::LongRunning),
            "{subresource}"
        );
    }
    let mut proxy = event();
    proxy["verb"] = json!("proxy");
    assert_eq!(read(&proxy), Line::Passed(Passed::LongRunning));
    let mut status = event();
    status["objectRef"]["subresource"] = json!("status");
    assert!(matches!(read(&status), Line::Request(_)));
    let mut panicked = event();
    panicked["stage"] = json!("Panic");
    assert!(matches!(read(&panicked), Line::Request(_)));
    for blank in [&b""[..], b"   ", b"\r"] {
        assert_eq!(AuditLog::default().read(blank), Line::Passed(Passed::Blank));
    }
}

#[test]
fn hostile_lines_are_unusable_with_a_reason() {
    let whole = event().to_string();
    let truncated = &whole.as_bytes()[..whole.len() / 2];
    assert!(
        unusable(truncated).starts_with("not an audit event: EOF"),
        "{}",
        unusable(truncated)
    );
    assert!(unusable(b"\xff\xfe garbage").starts_with("not an audit event"));
    assert!(unusable(b"[1, 2, 3]").starts_with("not an audit event"));
    // A body nested 100,000 deep, in a field a replay skips (without recursion) or in one
    // it reads (refused at once).
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let mut nested = event();
    nested["requestObject"] = json!("placeholder");
    let nested = nested.to_string().replace(r#""placeholder""#, &deep);
    assert!(matches!(
        AuditLog::default().read(nested.as_bytes()),
        Line::Request(_)
    ));
    let reason = unusable(
        whole
            .replace(r#""verb":"list""#, &format!(r#""verb":{deep}"#))
            .as_bytes(),
    );
    assert!(reason.contains("invalid type: sequence"), "{reason}");
    let duplicated = whole.replacen(r#""verb":"list""#, r#""verb":"list","verb":"delete""#, 1);
    assert!(unusable(duplicated.as_bytes()).contains("duplicate field `verb`"));
    let mut missing = event();
    missing
        .as_object_mut()
        .unwrap()
        .remove("requestReceivedTimestamp");
    assert!(unusable(missing.to_string().as_bytes()).contains("missing field"));
    let mut kind = event();
    kind["kind"] = json!("EventList");
    assert_eq!(
        unusable(kind.to_string().as_bytes()),
        r#"kind "EventList" is not Event"#
    );
    let mut version = event();
    version["apiVersion"] = json!("audit.k8s.io/v1beta1");
    assert_eq!(
        unusable(version.to_string().as_bytes()),
        r#"apiVersion "audit.k8s.io/v1beta1" is not audit.k8s.io/v1"#
    );
    let mut stage = event();
    stage["stage"] = json!("Whenever");
    assert_eq!(
        unusable(stage.to_string().as_bytes()),
        r#"stage "Whenever" is not an audit stage"#
    );
    let mut time = event();
    time["stageTimestamp"] = json!("yesterday");
    assert!(unusable(time.to_string().as_bytes()).starts_with(r#"stageTimestamp "yesterday""#));
    let mut wait = event();
    wait["annotations"]["flowcontrol.apfkit/queue-wait"] = json!("soon");
    assert!(unusable(wait.to_string().as_bytes()).contains("queue wait \"soon\""));
    let mut seats = event();
    seats["annotations"]["flowcontrol.apfkit/seats"] = json!("-3");
    assert!(unusable(seats.to_string().as_bytes()).contains("flowcontrol.apfkit/seats \"-3\""));
}

#[test]
fn open_watches_remembered_are_bounded() {
    let mut log = AuditLog::default();
    let mut started = event();
    started["verb"] = json!("watch");
    started["stage"] = json!("ResponseStarted");
    for i in 0..MAX_OPEN_WATCHES + 5 {
        started["auditID"] = json!(format!("w{i}"));
        assert!(matches!(
            log.read(started.to_string().as_bytes()),
            Line::Request(_)
        ));
    }
    assert_eq!(log.open_watches.len(), MAX_OPEN_WATCHES);
    // A watch forgotten ends without being taken a second time.
    let mut ended = started.clone();
    ended["stage"] = json!("ResponseComplete");
    assert_eq!(
        log.read(ended.to_string().as_bytes()),
        Line::Passed(Passed::OtherStage)
    );
}
