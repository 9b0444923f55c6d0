//! Auditing through HTTPS (issue 39 §2), after upstream's
//! `k8s.io/apiserver/pkg/endpoints/filters/audit_test.go` (`TestAudit`: the stages each kind
//! of request is written at, `TestAuditIDHttpHeader`, `TestAuditNoPanicOnNilUser`) and
//! `authn_audit_test.go` (`TestFailedAuthnAudit`, `TestFailedMultipleAuthnAudit`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use apfkit_apiserver::audit::{Auditor, Event, Sink, policy::Policy};
use apfkit_apiserver::authz::{AlwaysAllow, Attributes, Authorizer, Deciding, Decision, Verdict};
use apfkit_apiserver::storage::memory::MemoryBackend;
use serde_json::{Value, json};

use crate::support::{self, FLOW_SCHEMAS, Running};

/// Keeps every event as JSON; drops them all when `full`.
#[derive(Default)]
struct Kept {
    events: Mutex<Vec<Value>>,
    full: bool,
}

impl Sink for Kept {
    fn process(&self, event: &Event) -> bool {
        if self.full {
            return false;
        }
        let line = serde_json::to_string(event).expect("serializes");
        assert!(!line.contains('\n'), "one line: {line}");
        self.events
            .lock()
            .unwrap()
            .push(serde_json::from_str(&line).unwrap());
        true
    }

    fn name(&self) -> &str {
        "kept"
    }
}

impl Kept {
    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.events.lock().unwrap())
    }

    /// The events of one request, waiting a little for its last (written when its
    /// response body ends).
    async fn of(&self, audit_id: &str, count: usize) -> Vec<Value> {
        for _ in 0..200 {
            let events: Vec<Value> = self
                .events
                .lock()
                .unwrap()
                .iter()
                .filter(|e| e["auditID"] == audit_id)
                .cloned()
                .collect();
            if events.len() >= count {
                return events;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "{count} events of {audit_id}: {:?}",
            self.events.lock().unwrap()
        );
    }
}

/// Refuses FlowSchemas named `secret`, allows the rest.
struct NotSecret;

impl Authorizer for NotSecret {
    fn authorize<'a>(&'a self, attributes: &'a Attributes) -> Deciding<'a> {
        if attributes.name == "secret" {
            Verdict::because(Decision::Deny, "secrets are secret").ready()
        } else {
            Verdict::because(Decision::Allow, "allowed by test").ready()
        }
    }
}

fn policy(text: &str) -> Policy {
    Policy::from_bytes(format!("apiVersion: audit.k8s.io/v1\nkind: Policy\n{text}").as_bytes())
        .expect("a policy")
        .0
}

async fn audited(policy_text: &str, authorizer: Arc<dyn Authorizer>) -> (Running, Arc<Kept>) {
    audited_into(policy_text, authorizer, Arc::new(Kept::default()), None).await
}

async fn audited_into(
    policy_text: &str,
    authorizer: Arc<dyn Authorizer>,
    kept: Arc<Kept>,
    registry: Option<&prometheus::Registry>,
) -> (Running, Arc<Kept>) {
    let mut auditor = Auditor::new(policy(policy_text), kept.clone());
    if let Some(registry) = registry {
        auditor = auditor.with_metrics(registry).unwrap();
    }
    let auditor = Arc::new(auditor);
    let running = support::start_configured(MemoryBackend::default(), move |server| {
        server
            .with_authenticator(
                apfkit_apiserver::auth::Authenticator::new(true)
                    .with_token_file("secret-token,bob,42,\"dev,ops\"")
                    .unwrap(),
            )
            .with_authorizer(authorizer)
            .with_auditor(auditor)
    })
    .await;
    (running, kept)
}

/// Sends a request and answers its status, `Audit-Id` and body.
async fn request(
    running: &Running,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, String, Value) {
    use http_body_util::BodyExt as _;
    let mut all = vec![("content-type", "application/json")];
    all.extend_from_slice(headers);
    let response = running.send_with_headers(method, path, &all, body).await;
    let status = response.status().as_u16();
    let id = response
        .headers()
        .get("audit-id")
        .expect("every answer has an Audit-Id")
        .to_str()
        .unwrap()
        .to_owned();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        id,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn flow_schema(name: &str) -> Value {
    json!({
        "kind": "FlowSchema",
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "metadata": {"name": name},
        "spec": {"priorityLevelConfiguration": {"name": "global-default"}},
    })
}

fn stages(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_request_is_written_when_received_and_when_complete_with_who_asked_for_what() {
    let (running, kept) = audited("rules:\n- level: Metadata\n", Arc::new(NotSecret)).await;
    let agent = "kubectl/v1.35.0 (linux/amd64)";
    let (status, id, _) = request(
        &running,
        "GET",
        &format!("{FLOW_SCHEMAS}/missing?timeout=30s"),
        &[
            ("authorization", "Bearer secret-token"),
            ("user-agent", agent),
            ("x-forwarded-for", "10.0.0.1, not-an-ip, 10.0.0.2"),
        ],
        None,
    )
    .await;
    assert_eq!(status, 404);
    uuid::Uuid::parse_str(&id).expect("a new UUID");
    let events = kept.of(&id, 2).await;
    assert_eq!(stages(&events), ["RequestReceived", "ResponseComplete"]);
    let [received, complete] = [&events[0], &events[1]];
    assert_eq!(received["kind"], "Event");
    assert_eq!(received["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(received["level"], "Metadata");
    assert_eq!(received["verb"], "get");
    assert_eq!(
        received["requestURI"],
        format!("{FLOW_SCHEMAS}/missing?timeout=30s")
    );
    assert_eq!(
        received["user"],
        json!({"username": "bob", "uid": "42", "groups": ["dev", "ops", "system:authenticated"]})
    );
    assert_eq!(
        received["sourceIPs"],
        json!(["10.0.0.1", "10.0.0.2", "127.0.0.1"])
    );
    assert_eq!(received["userAgent"], agent);
    assert_eq!(
        received["objectRef"],
        json!({"resource": "flowschemas", "name": "missing",
               "apiGroup": "flowcontrol.apiserver.k8s.io", "apiVersion": "v1"})
    );
    assert_eq!(
        received["stageTimestamp"],
        received["requestReceivedTimestamp"]
    );
    assert!(received.get("responseStatus").is_none());
    // Written before authorization: no annotations yet.
    assert!(received.get("annotations").is_none());

    assert_eq!(complete["responseStatus"]["code"], 404);
    assert_eq!(complete["responseStatus"]["reason"], "NotFound");
    assert_eq!(complete["responseStatus"]["status"], "Failure");
    assert_eq!(complete["responseStatus"]["metadata"], json!({}));
    assert_eq!(
        complete["responseStatus"]["message"],
        "flowschemas.flowcontrol.apiserver.k8s.io \"missing\" not found"
    );
    assert_eq!(
        complete["annotations"],
        json!({"authorization.k8s.io/decision": "allow",
               "authorization.k8s.io/reason": "allowed by test"})
    );
    assert!(complete["stageTimestamp"].as_str() >= complete["requestReceivedTimestamp"].as_str());
    assert!(complete.get("requestObject").is_none());
    assert!(complete.get("responseObject").is_none());
}

#[tokio::test]
async fn the_level_says_which_bodies_are_written() {
    let rules = "rules:\n\
        - level: RequestResponse\n  users: [bob]\n\
        - level: Request\n  verbs: [create]\n\
        - level: Metadata\n";
    let (running, kept) = audited(rules, Arc::new(AlwaysAllow)).await;
    // Request: the object decoded from the body, with its defaults (`LogRequestObject`), no
    // response.
    let (status, id, _) =
        request(&running, "POST", FLOW_SCHEMAS, &[], Some(flow_schema("a"))).await;
    assert_eq!(status, 201);
    let events = kept.of(&id, 2).await;
    assert_eq!(events[1]["level"], "Request");
    // As Go writes the typed object: the status struct is there, empty.
    let mut defaulted = flow_schema("a");
    defaulted["spec"]["matchingPrecedence"] = json!(1000);
    defaulted["status"] = json!({});
    assert_eq!(events[1]["requestObject"], defaulted);
    // Its name and namespace fill the object reference a create's URL leaves without them.
    assert_eq!(events[1]["objectRef"]["name"], "a");
    assert!(events[1].get("responseObject").is_none());
    assert!(
        events[0].get("requestObject").is_none(),
        "read after RequestReceived"
    );
    assert_eq!(
        events[1]["responseStatus"],
        json!({"metadata": {}, "code": 201})
    );

    // RequestResponse: both bodies, the response as the server wrote it.
    let (status, id, written) = request(
        &running,
        "POST",
        FLOW_SCHEMAS,
        &[("authorization", "Bearer secret-token")],
        Some(flow_schema("b")),
    )
    .await;
    assert_eq!(status, 201);
    let events = kept.of(&id, 2).await;
    defaulted["metadata"]["name"] = json!("b");
    assert_eq!(events[1]["requestObject"], defaulted);
    assert_eq!(events[1]["responseObject"], written);
    assert_eq!(written["metadata"]["name"], "b");

    // Metadata: neither.
    let (_, id, _) = request(&running, "GET", &format!("{FLOW_SCHEMAS}/a"), &[], None).await;
    let events = kept.of(&id, 2).await;
    assert_eq!(events[1]["level"], "Metadata");
    assert!(events[1].get("requestObject").is_none());
    assert!(events[1].get("responseObject").is_none());
}

#[tokio::test]
async fn a_patch_is_written_as_sent() {
    let (running, kept) =
        audited("rules:\n- level: RequestResponse\n", Arc::new(AlwaysAllow)).await;
    request(&running, "POST", FLOW_SCHEMAS, &[], Some(flow_schema("p"))).await;
    let patch = json!({"metadata": {"labels": {"team": "a"}}});
    let answer = running
        .call_as(
            "PATCH",
            &format!("{FLOW_SCHEMAS}/p"),
            "application/merge-patch+json",
            Some(patch.clone()),
        )
        .await;
    assert_eq!(answer.status, 200);
    let events = kept.take();
    let patched = events
        .iter()
        .find(|e| e["verb"] == "patch" && e["stage"] == "ResponseComplete")
        .expect("the patch's event");
    assert_eq!(patched["requestObject"], patch);
    assert_eq!(
        patched["responseObject"]["metadata"]["labels"],
        json!({"team": "a"})
    );
}

#[tokio::test]
async fn a_watch_is_written_when_it_starts_and_when_it_ends() {
    let (running, kept) = audited("rules:\n- level: Metadata\n", Arc::new(AlwaysAllow)).await;
    let watch = running.watch(&format!("{FLOW_SCHEMAS}?watch=true")).await;
    let started = loop {
        let events = kept.events.lock().unwrap().clone();
        if let Some(started) = events.iter().find(|e| e["stage"] == "ResponseStarted") {
            break started.clone();
        }
        drop(events);
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(started["verb"], "watch");
    assert_eq!(started["responseStatus"]["code"], 200);
    let id = started["auditID"].as_str().unwrap().to_owned();
    assert_eq!(
        stages(&kept.of(&id, 2).await),
        ["RequestReceived", "ResponseStarted"]
    );
    drop(watch);
    // The server sees the client gone when it next writes to the watch.
    running.create("wake", 0).await;
    assert_eq!(
        stages(&kept.of(&id, 3).await),
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
}

#[tokio::test]
async fn omitted_stages_and_level_none_write_nothing_but_every_answer_has_its_id() {
    let rules = "omitStages: [RequestReceived]\nrules:\n\
        - level: None\n  nonResourceURLs: [/healthz*]\n\
        - level: Metadata\n";
    let (running, kept) = audited(rules, Arc::new(AlwaysAllow)).await;
    let (status, id, _) = request(&running, "GET", "/healthz", &[], None).await;
    assert_eq!(status, 200);
    assert!(!id.is_empty());
    // The client's own ID is kept.
    let (_, id, _) = request(
        &running,
        "GET",
        FLOW_SCHEMAS,
        &[("audit-id", "my-own-id")],
        None,
    )
    .await;
    assert_eq!(id, "my-own-id");
    let events = kept.of("my-own-id", 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(stages(&kept.take()), ["ResponseComplete"], "{events:?}");
}

#[tokio::test]
async fn a_refusal_is_written_with_its_decision_and_status() {
    let (running, kept) = audited("rules:\n- level: Metadata\n", Arc::new(NotSecret)).await;
    let (status, id, _) = request(
        &running,
        "GET",
        &format!("{FLOW_SCHEMAS}/secret"),
        &[],
        None,
    )
    .await;
    assert_eq!(status, 403);
    let events = kept.of(&id, 2).await;
    assert_eq!(
        events[1]["annotations"],
        json!({"authorization.k8s.io/decision": "forbid",
               "authorization.k8s.io/reason": "secrets are secret"})
    );
    assert_eq!(events[1]["responseStatus"]["reason"], "Forbidden");
    assert_eq!(events[1]["responseStatus"]["code"], 403);
    assert!(
        events[1]["responseStatus"]["message"]
            .as_str()
            .unwrap()
            .ends_with(": secrets are secret")
    );
}

/// An authorizer that cannot decide (a delegated one whose server is gone).
struct Unreachable;

impl Authorizer for Unreachable {
    fn authorize<'a>(&'a self, _: &'a Attributes) -> Deciding<'a> {
        Verdict {
            error: Some("dial tcp 127.0.0.1:1: connect: connection refused".into()),
            ..Verdict::new(Decision::NoOpinion)
        }
        .ready()
    }
}

/// k8s.io/apiserver `filters/authorization.go`: an authorizer's error is a 500 in
/// `responsewriters.InternalError`'s words, audited with the reason `internal error` and no
/// decision.
#[tokio::test]
async fn an_authorizer_that_cannot_decide_answers_500() {
    use http_body_util::BodyExt as _;
    let (running, kept) = audited("rules:\n- level: Metadata\n", Arc::new(Unreachable)).await;
    let path = format!("{FLOW_SCHEMAS}/x?pretty=1");
    let response = running
        .send_with_headers("GET", &path, &[("content-type", "application/json")], None)
        .await;
    assert_eq!(response.status().as_u16(), 500);
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; charset=utf-8"
    );
    let id = response.headers()["audit-id"].to_str().unwrap().to_owned();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        format!(
            "Internal Server Error: \"{path}\": dial tcp 127.0.0.1:1: connect: connection \
             refused\n"
        )
    );
    let events = kept.of(&id, 2).await;
    assert_eq!(
        events[1]["annotations"],
        json!({"authorization.k8s.io/reason": "internal error"})
    );
    assert_eq!(events[1]["responseStatus"]["code"], 500);
}

/// `TestFailedAuthnAudit`, `TestFailedMultipleAuthnAudit`.
#[tokio::test]
async fn a_failed_authentication_is_written_once_naming_what_was_tried() {
    let (running, kept) = audited("rules:\n- level: Metadata\n", Arc::new(AlwaysAllow)).await;
    let (status, id, _) = request(
        &running,
        "GET",
        FLOW_SCHEMAS,
        &[("authorization", "Bearer wrong")],
        None,
    )
    .await;
    assert_eq!(status, 401);
    let events = kept.of(&id, 1).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["stage"], "ResponseStarted");
    assert_eq!(events[0]["user"], json!({}));
    assert_eq!(
        events[0]["responseStatus"],
        json!({"metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401})
    );
}

#[tokio::test]
async fn an_impersonation_names_both_users() {
    let (running, kept) = audited("rules:\n- level: Metadata\n", Arc::new(AlwaysAllow)).await;
    let (status, id, _) = request(
        &running,
        "GET",
        FLOW_SCHEMAS,
        &[
            ("authorization", "Bearer secret-token"),
            ("impersonate-user", "alice"),
            ("impersonate-group", "team-a"),
        ],
        None,
    )
    .await;
    assert_eq!(status, 200);
    let events = kept.of(&id, 2).await;
    assert_eq!(events[0]["user"]["username"], "bob");
    assert!(
        events[0].get("impersonatedUser").is_none(),
        "impersonation comes after"
    );
    assert_eq!(
        events[1]["impersonatedUser"],
        json!({"username": "alice", "groups": ["team-a", "system:authenticated"]})
    );
}

#[tokio::test]
async fn events_and_levels_are_counted_and_a_full_sink_is_counted_as_errors() {
    let registry = prometheus::Registry::new();
    let full = Arc::new(Kept {
        events: Mutex::default(),
        full: true,
    });
    let (running, _) = audited_into(
        "rules:\n- level: None\n  nonResourceURLs: [/healthz]\n- level: Request\n",
        Arc::new(AlwaysAllow),
        full,
        Some(&registry),
    )
    .await;
    for _ in 0..3 {
        let (status, _, _) = request(&running, "GET", FLOW_SCHEMAS, &[], None).await;
        assert_eq!(status, 200, "a full sink holds no request");
    }
    request(&running, "GET", "/healthz", &[], None).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let text = prometheus::TextEncoder::new()
        .encode_to_string(&registry.gather())
        .unwrap();
    for line in [
        "apiserver_audit_event_total 6",
        "apiserver_audit_error_total{plugin=\"kept\"} 6",
        "apiserver_audit_level_total{level=\"Request\"} 3",
        "apiserver_audit_level_total{level=\"None\"} 1",
    ] {
        assert!(text.contains(line), "{line} in\n{text}");
    }
}

#[tokio::test]
async fn hostile_requests_are_written_within_bounds() {
    let (running, kept) =
        audited("rules:\n- level: RequestResponse\n", Arc::new(AlwaysAllow)).await;
    let long_agent = "é".repeat(1_000);
    let (_, id, _) = request(
        &running,
        "GET",
        FLOW_SCHEMAS,
        &[
            ("user-agent", &long_agent),
            ("x-forwarded-for", ",,,::1,999.1.1.1,"),
            ("x-real-ip", "garbage"),
        ],
        None,
    )
    .await;
    let events = kept.of(&id, 2).await;
    let agent = events[0]["userAgent"].as_str().unwrap();
    assert!(agent.ends_with("...TRUNCATED"));
    assert!(agent.len() <= 1024 + "...TRUNCATED".len());
    assert_eq!(events[0]["sourceIPs"], json!(["::1", "127.0.0.1"]));

    // A body over the server's limit: 413, and no body in the event.
    let big = json!({"metadata": {"name": "big"}, "pad": "x".repeat(4 << 20)});
    let (status, id, _) = request(&running, "POST", FLOW_SCHEMAS, &[], Some(big)).await;
    assert_eq!(status, 413);
    let events = kept.of(&id, 2).await;
    assert!(events[1].get("requestObject").is_none());
    assert_eq!(events[1]["responseStatus"]["code"], 413);
}

/// A field of one of upstream's Go structs, by its JSON tag.
struct GoField {
    json: String,
    go_type: String,
    omitempty: bool,
}

/// The structs of upstream's `pkg/apis/audit/v1/types.go` (`tests/fixtures/audit`), by name:
/// their fields' JSON names, Go types and `omitempty`; an inline struct's fields under its
/// JSON name `""`.
fn upstream_types() -> std::collections::HashMap<String, Vec<GoField>> {
    let text = include_str!("../fixtures/audit/types.go");
    let mut types = std::collections::HashMap::new();
    let mut current: Option<(String, Vec<GoField>)> = None;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line
            .strip_prefix("type ")
            .and_then(|rest| rest.strip_suffix(" struct {"))
        {
            current = Some((name.to_owned(), Vec::new()));
            continue;
        }
        if line == "}" {
            if let Some((name, fields)) = current.take() {
                types.insert(name, fields);
            }
            continue;
        }
        let Some((_, fields)) = current.as_mut() else {
            continue;
        };
        if line.starts_with("//") || !line.contains("json:\"") {
            continue;
        }
        let (declaration, tag) = line.split_once('`').expect("a tagged field");
        let words: Vec<&str> = declaration.split_whitespace().collect();
        let go_type = words.last().expect("a type").to_string();
        let json_tag = tag
            .split("json:\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .expect("a json tag");
        let mut parts = json_tag.split(',');
        let json = parts.next().unwrap_or_default().to_owned();
        let options: Vec<&str> = parts.collect();
        fields.push(GoField {
            json,
            go_type,
            omitempty: options.contains(&"omitempty") || options.contains(&"inline"),
        });
    }
    types
}

/// Checks `value` against upstream's struct `name`, field by field.
fn check_against(
    types: &std::collections::HashMap<String, Vec<GoField>>,
    name: &str,
    value: &Value,
    path: &str,
) {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("{path}: an object, not {value}"));
    let fields = &types[name];
    let mut known: Vec<&str> = fields.iter().map(|f| f.json.as_str()).collect();
    if fields.iter().any(|f| f.go_type == "metav1.TypeMeta") {
        known.extend(["kind", "apiVersion"]);
    }
    for key in object.keys() {
        assert!(
            known.contains(&key.as_str()),
            "{path}.{key} is not a field of upstream's {name}"
        );
    }
    for field in fields.iter().filter(|f| !f.json.is_empty()) {
        let at = format!("{path}.{}", field.json);
        let Some(value) = object.get(&field.json) else {
            assert!(field.omitempty, "{at}: upstream always writes it");
            continue;
        };
        check_shape(types, &field.go_type, value, &at);
    }
}

/// Checks that `value` has the JSON shape of the Go type `go_type`.
fn check_shape(
    types: &std::collections::HashMap<String, Vec<GoField>>,
    go_type: &str,
    value: &Value,
    path: &str,
) {
    let strings = |value: &Value| {
        value
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string))
    };
    let go_type = go_type.trim_start_matches('*');
    match go_type {
        "string" | "Level" | "Stage" | "types.UID" => {
            assert!(value.is_string(), "{path}: a string, not {value}");
        }
        "[]string" => assert!(strings(value), "{path}: strings, not {value}"),
        "map[string]string" => assert!(
            value
                .as_object()
                .is_some_and(|m| m.values().all(Value::is_string)),
            "{path}: a map of strings, not {value}"
        ),
        "metav1.MicroTime" => {
            let text = value.as_str().unwrap_or_default();
            let micro = text.len() == "2006-01-02T15:04:05.000000Z".len()
                && text.ends_with('Z')
                && text.as_bytes()[19] == b'.';
            assert!(micro, "{path}: a MicroTime, not {value}");
        }
        "authnv1.UserInfo" => {
            let user = value.as_object().expect("a user");
            for (key, field) in user {
                match key.as_str() {
                    "username" | "uid" => assert!(field.is_string(), "{path}.{key}"),
                    "groups" => assert!(strings(field), "{path}.{key}"),
                    "extra" => assert!(field.is_object(), "{path}.{key}"),
                    other => panic!("{path}.{other} is not a field of authentication/v1 UserInfo"),
                }
            }
        }
        "metav1.Status" => {
            let status = value.as_object().expect("a status");
            for (key, field) in status {
                match key.as_str() {
                    "kind" | "apiVersion" | "status" | "message" | "reason" => {
                        assert!(field.is_string(), "{path}.{key}");
                    }
                    "metadata" | "details" => assert!(field.is_object(), "{path}.{key}"),
                    "code" => assert!(field.is_i64(), "{path}.{key}"),
                    other => panic!("{path}.{other} is not a field of meta/v1 Status"),
                }
            }
        }
        // `runtime.Unknown` is written as the raw JSON it holds.
        "runtime.Unknown" => assert!(value.is_object() || value.is_array(), "{path}"),
        name if types.contains_key(name) => check_against(types, name, value, path),
        other => panic!("{path}: no check for upstream's type {other}"),
    }
}

/// Issue 39 §4: every kind of event the server writes read back against upstream's
/// `audit.k8s.io/v1` types, field by field.
#[tokio::test]
async fn events_match_upstreams_types_field_by_field() {
    let types = upstream_types();
    assert!(types["Event"].len() >= 17, "upstream's Event read");
    let (running, kept) = audited("rules:\n- level: RequestResponse\n", Arc::new(NotSecret)).await;
    let bob = ("authorization", "Bearer secret-token");
    request(
        &running,
        "POST",
        FLOW_SCHEMAS,
        &[bob],
        Some(flow_schema("t")),
    )
    .await;
    request(
        &running,
        "GET",
        &format!("{FLOW_SCHEMAS}/missing"),
        &[],
        None,
    )
    .await;
    request(
        &running,
        "GET",
        &format!("{FLOW_SCHEMAS}/secret"),
        &[],
        None,
    )
    .await;
    request(&running, "GET", "/healthz", &[], None).await;
    request(
        &running,
        "GET",
        FLOW_SCHEMAS,
        &[("authorization", "Bearer no")],
        None,
    )
    .await;
    request(
        &running,
        "GET",
        FLOW_SCHEMAS,
        &[bob, ("impersonate-user", "alice")],
        None,
    )
    .await;
    let watch = running.watch(&format!("{FLOW_SCHEMAS}?watch=true")).await;
    drop(watch);
    running.create("after-the-watch", 0).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let events = kept.take();
    let stages: std::collections::BTreeSet<&str> = events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        stages.into_iter().collect::<Vec<_>>(),
        ["RequestReceived", "ResponseComplete", "ResponseStarted"]
    );
    for (index, event) in events.iter().enumerate() {
        check_against(&types, "Event", event, &format!("event {index}"));
    }
    // Each optional part was there in at least one event, so each was checked.
    for field in [
        "impersonatedUser",
        "objectRef",
        "responseStatus",
        "requestObject",
        "responseObject",
        "annotations",
        "sourceIPs",
    ] {
        assert!(
            events.iter().any(|e| e.get(field).is_some()),
            "no event had {field}"
        );
    }
}
