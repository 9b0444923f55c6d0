//! `apfkit serve` over plain HTTPS with curl: hostile bodies, query parameters and headers
//! answered with kube-apiserver's statuses and nothing stored half-way, protobuf in and out
//! (client-go's default for built-in kinds), and HTTP/1.1 and HTTP/2.

use serde_json::Value;

use super::serve::{NO_APF, Server};
use super::success;

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";

fn flow_schema(name: &str, extra_spec: &str) -> String {
    format!(
        r#"{{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{{"name":"{name}"}},"spec":{{"priorityLevelConfiguration":{{"name":"global-default"}},"matchingPrecedence":500{extra_spec}}}}}"#
    )
}

fn post(server: &Server, path: &str, content_type: &str, body: &[u8]) -> (u16, Value) {
    let header = format!("Content-Type: {content_type}");
    server.curl_json(
        path,
        &["-X", "POST", "-H", &header, "--data-binary", "@-"],
        body,
    )
}

/// A JSON POST's status code and its answer with its `Warning` header last (curl prints it
/// before the code).
fn post_warned(server: &Server, path: &str, body: &str) -> (u16, String) {
    let (code, answered) = server.curl(
        path,
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
            "--write-out",
            "\n%header{warning}\n%{http_code}",
        ],
        body.as_bytes(),
    );
    (code, String::from_utf8_lossy(&answered).into_owned())
}

fn names(server: &Server) -> Vec<String> {
    let (code, list) = server.curl_json(FLOW_SCHEMAS, &[], b"");
    assert_eq!(code, 200);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_status(answer: &(u16, Value), code: u16, reason: &str, message: &str) {
    let (got, status) = answer;
    assert_eq!(*got, code, "{status}");
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["code"], code, "{status}");
    assert_eq!(status["reason"], reason, "{status}");
    let text = status["message"].as_str().unwrap_or_default();
    assert!(text.contains(message), "{text:?} lacks {message:?}");
}

#[test]
fn hostile_bodies_are_refused_and_nothing_is_stored_half_way() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    let json = "application/json";
    let valid = flow_schema("valid", "");
    // Truncated, garbage, deeply nested and oversized bodies.
    let truncated = &valid.as_bytes()[..valid.len() / 2];
    assert_status(
        &post(&server, FLOW_SCHEMAS, json, truncated),
        400,
        "BadRequest",
        "",
    );
    assert_status(
        &post(
            &server,
            FLOW_SCHEMAS,
            "application/vnd.kubernetes.protobuf",
            b"k8s\0\xff\xff\xff",
        ),
        400,
        "BadRequest",
        "",
    );
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let nested = valid.replace(
        r#""matchingPrecedence":500"#,
        &format!(r#""x":{deep},"matchingPrecedence":500"#),
    );
    assert_status(
        &post(&server, FLOW_SCHEMAS, json, nested.as_bytes()),
        400,
        "BadRequest",
        "",
    );
    let huge = valid.replace(
        "\"valid\"",
        &format!(
            "\"valid\",\"annotations\":{{\"a\":\"{}\"}}",
            "x".repeat(3 << 20)
        ),
    );
    assert_status(
        &post(&server, FLOW_SCHEMAS, json, huge.as_bytes()),
        413,
        "RequestEntityTooLarge",
        "Request entity too large: limit is 3145728",
    );
    // A body that disagrees with the URL.
    let level = r#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"x"},"spec":{"type":"Exempt"}}"#;
    assert_status(
        &post(&server, FLOW_SCHEMAS, json, level.as_bytes()),
        400,
        "BadRequest",
        "the kind in the data (PriorityLevelConfiguration) does not match the expected kind (FlowSchema)",
    );
    let older = valid.replace("/v1\"", "/v1beta3\"");
    assert_status(
        &post(&server, FLOW_SCHEMAS, json, older.as_bytes()),
        400,
        "BadRequest",
        "the API version in the data (flowcontrol.apiserver.k8s.io/v1beta3) does not match the expected API version (flowcontrol.apiserver.k8s.io/v1)",
    );
    // Unknown and repeated fields under each fieldValidation mode.
    let unknown = flow_schema("unknown", r#","bogus":1"#);
    let strict = format!("{FLOW_SCHEMAS}?fieldValidation=Strict");
    assert_status(
        &post(&server, &strict, json, unknown.as_bytes()),
        400,
        "BadRequest",
        r#"strict decoding error: unknown field "spec.bogus""#,
    );
    let repeated = valid.replace(r#""name":"valid""#, r#""name":"twice","name":"twice""#);
    assert_status(
        &post(&server, &strict, json, repeated.as_bytes()),
        400,
        "BadRequest",
        r#"duplicate field "metadata.name""#,
    );
    // Warn: created, with the field named in a Warning header; refused after decoding (a
    // precedence out of range), the warning still comes.
    let refused = flow_schema("refused", r#","bogus":1"#).replace(":500", ":20000");
    for (path, body, expected) in [
        (
            format!("{FLOW_SCHEMAS}?fieldValidation=Warn"),
            unknown.as_str(),
            201,
        ),
        (FLOW_SCHEMAS.to_owned(), refused.as_str(), 422),
    ] {
        let (code, warning) = post_warned(&server, &path, body);
        assert_eq!(code, expected, "{warning}");
        assert!(
            warning.ends_with(r#"299 - "unknown field \"spec.bogus\"""#),
            "{warning}"
        );
    }
    let ignored = flow_schema("ignored", r#","bogus":1"#);
    let (code, _) = post(
        &server,
        &format!("{FLOW_SCHEMAS}?fieldValidation=Ignore"),
        json,
        ignored.as_bytes(),
    );
    assert_eq!(code, 201);
    // Media types.
    assert_status(
        &post(&server, FLOW_SCHEMAS, "text/plain", valid.as_bytes()),
        415,
        "UnsupportedMediaType",
        "",
    );
    let (code, _) = server.curl(FLOW_SCHEMAS, &["-H", "Accept: text/html"], b"");
    assert_eq!(code, 406);
    // YAML is a body format too.
    let yaml = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: yaml}\nspec:\n  priorityLevelConfiguration: {name: global-default}\n";
    let (code, created) = post(&server, FLOW_SCHEMAS, "application/yaml", yaml.as_bytes());
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["matchingPrecedence"], 1000, "defaulted");
    // Deep flow nesting is refused at a cost linear in its size (issue 39: 60,000 levels in
    // 120 KB took 5.5 s of a worker before the 400).
    let deep = format!("{yaml}  x: {}{}\n", "[".repeat(60_000), "]".repeat(60_000));
    assert_status(
        &post(&server, FLOW_SCHEMAS, "application/yaml", deep.as_bytes()),
        400,
        "BadRequest",
        "document nested deeper than",
    );
    // YAML that does not parse: go-yaml v2's words and line, as kube-apiserver answers.
    let broken =
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: name: x\n";
    assert_status(
        &post(&server, FLOW_SCHEMAS, "application/yaml", broken.as_bytes()),
        400,
        "BadRequest",
        "the object provided is unrecognized (must be of type FlowSchema): yaml: line 3: \
         mapping values are not allowed in this context (61706956657273696f6e3a20666c6f77636f6e74726f6c2e617069736572 ...)",
    );
    // A flow mapping is YAML, not JSON; go-yaml reads the first document and no further.
    let flow = "{apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: FlowSchema, \
        metadata: {name: flow}, spec: {priorityLevelConfiguration: {name: global-default}}}\n\
        --- [not, read";
    let (code, created) = post(&server, FLOW_SCHEMAS, "application/yaml", flow.as_bytes());
    assert_eq!(code, 201, "{created}");
    // Only the valid creates were stored.
    assert_eq!(names(&server), ["flow", "ignored", "unknown", "yaml"]);
}

#[test]
fn hostile_queries_are_refused_with_kube_apiservers_words() {
    let server = Server::start(&[NO_APF]);
    for (query, message) in [
        ("labelSelector=a%20in%20(", "unable to parse requirement"),
        (
            "fieldSelector=spec.x%3D1",
            // apimachinery's default field label conversion, which flowcontrol's kinds use.
            "\"spec.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
        ),
        ("continue=bm90LWpzb24", "continue key is not valid"),
        ("limit=9223372036854775808", "limit"),
        ("resourceVersion=abc", "resourceVersion"),
    ] {
        let answer = server.curl_json(&format!("{FLOW_SCHEMAS}?{query}"), &[], b"");
        assert_status(&answer, 400, "BadRequest", message);
    }
    // `watch=perhaps` is no error: apimachinery reads any value but `false` and `0` as true,
    // so it is a watch (apfkit-server's routing matrix).
    // List options apimachinery's ValidateListOptions refuses are 422 about ListOptions.
    let answer = server.curl_json(
        &format!("{FLOW_SCHEMAS}?resourceVersionMatch=Exact"),
        &[],
        b"",
    );
    assert_status(
        &answer,
        422,
        "Invalid",
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: \
         resourceVersionMatch is forbidden unless resourceVersion is provided",
    );
    // The largest limit is just "everything".
    let (code, list) = server.curl_json(
        &format!("{FLOW_SCHEMAS}?limit=9223372036854775807"),
        &[],
        b"",
    );
    assert_eq!(code, 200);
    assert!(list["metadata"].get("continue").is_none());
    // A resourceVersion ahead of the store.
    let answer = server.curl_json(&format!("{FLOW_SCHEMAS}?resourceVersion=999999"), &[], b"");
    assert_status(&answer, 504, "Timeout", "Too large resource version");
    // Paths and methods nothing serves.
    let (code, _) = server.curl(
        "/apis/flowcontrol.apiserver.k8s.io/v9/flowschemas",
        &[],
        b"",
    );
    assert_eq!(code, 404);
    // kube-aggregator's `/apis` answers every method with the group list; `/version` only GET.
    let (code, _) = server.curl("/apis", &["-X", "DELETE"], b"");
    assert_eq!(code, 200);
    let (code, _) = server.curl("/version", &["-X", "DELETE"], b"");
    assert_eq!(code, 405);
    let (code, _) = server.curl(&format!("{FLOW_SCHEMAS}/exempt/scale"), &[], b"");
    assert_eq!(code, 404);
}

#[test]
fn lists_page_with_continue_tokens_and_counts() {
    let server = Server::start(&[NO_APF]);
    let all = names(&server);
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let path = format!("{FLOW_SCHEMAS}?limit=4&continue={token}");
        let (code, page) = server.curl_json(&path, &[], b"");
        assert_eq!(code, 200, "{page}");
        pages += 1;
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned()),
        );
        match page["metadata"]["continue"].as_str() {
            Some(next) => {
                assert_eq!(
                    page["metadata"]["remainingItemCount"],
                    all.len() - seen.len(),
                    "{page}"
                );
                token = next.to_owned();
            }
            None => break,
        }
    }
    assert_eq!(seen, all);
    assert_eq!(pages, all.len().div_ceil(4));
}

#[test]
fn protobuf_in_and_out_as_client_go_asks() {
    let server = Server::start(&[NO_APF]);
    let protobuf = "Accept: application/vnd.kubernetes.protobuf, application/json";
    let (code, object) = server.curl(&format!("{FLOW_SCHEMAS}/exempt"), &["-H", protobuf], b"");
    assert_eq!(code, 200);
    assert!(
        object.starts_with(b"k8s\0"),
        "{}",
        String::from_utf8_lossy(&object)
    );
    let (_, json) = server.curl_json(&format!("{FLOW_SCHEMAS}/exempt"), &[], b"");
    let decoded: Value =
        serde_json::from_slice(&success(&["convert", "--to", "v1", "-o", "json"], &object))
            .unwrap();
    assert_eq!(decoded, json);
    // A list in protobuf is a FlowSchemaList.
    let (code, list) = server.curl(FLOW_SCHEMAS, &["-H", protobuf], b"");
    assert_eq!(code, 200);
    assert!(list.starts_with(b"k8s\0"));
    assert!(list.windows(14).any(|w| w == b"FlowSchemaList"));
    // A protobuf body is read as JSON would be.
    let body = success(
        &["convert", "--to", "v1", "-o", "protobuf"],
        flow_schema("from-protobuf", "").as_bytes(),
    );
    let (code, created) = server.curl(
        FLOW_SCHEMAS,
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/vnd.kubernetes.protobuf",
            "--data-binary",
            "@-",
        ],
        &body,
    );
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&created));
    // A watch in protobuf: frames of a 4-byte length and a WatchEvent.
    let (code, frames) = server.curl(
        &format!("{FLOW_SCHEMAS}?watch=true&timeoutSeconds=1&fieldSelector=metadata.name%3Dexempt"),
        &["-H", protobuf],
        b"",
    );
    assert_eq!(code, 200);
    let length = u32::from_be_bytes(frames[..4].try_into().unwrap()) as usize;
    assert_eq!(
        frames.len(),
        4 + length,
        "one event: the object that exists"
    );
    assert_eq!(&frames[4..11], b"\x0a\x05ADDED");
}

#[test]
fn http_1_1_and_http_2_both_serve() {
    let server = Server::start(&[NO_APF]);
    for (flag, version) in [("--http1.1", "1.1"), ("--http2", "2")] {
        let (code, body) = server.curl(
            "/version",
            // The last --write-out wins: the version, then the code the helper reads.
            &[flag, "--write-out", "\n%{http_version}\n%{http_code}"],
            b"",
        );
        assert_eq!(code, 200);
        let text = String::from_utf8_lossy(&body);
        assert!(text.ends_with(&format!("\n{version}")), "{text}");
    }
}

#[test]
fn the_status_subresource_and_the_object_each_keep_the_others_fields() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    let json = "application/json";
    let (code, created) = post(&server, FLOW_SCHEMAS, json, flow_schema("s", "").as_bytes());
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["status"],
        serde_json::json!({}),
        "status cleared on create"
    );
    let put = |path: &str, object: &Value| {
        server.curl_json(
            path,
            &[
                "-X",
                "PUT",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                "@-",
            ],
            object.to_string().as_bytes(),
        )
    };
    // A write to /status changes the status only.
    let mut object = created.clone();
    object["status"] = serde_json::json!({"conditions": [{"type": "Dangling", "status": "False"}]});
    object["spec"]["matchingPrecedence"] = 9.into();
    let (code, written) = put(&format!("{FLOW_SCHEMAS}/s/status"), &object);
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["status"]["conditions"][0]["type"], "Dangling");
    assert_eq!(written["spec"]["matchingPrecedence"], 500, "spec kept");
    assert_eq!(
        written["metadata"]["generation"], 1,
        "a status write is no spec change"
    );
    // A write to the object keeps the stored status and bumps the generation.
    let mut object = written.clone();
    object["status"] = serde_json::json!({});
    object["spec"]["matchingPrecedence"] = 9.into();
    let (code, written) = put(&format!("{FLOW_SCHEMAS}/s"), &object);
    assert_eq!(code, 200, "{written}");
    assert_eq!(written["spec"]["matchingPrecedence"], 9);
    assert_eq!(
        written["status"]["conditions"][0]["type"], "Dangling",
        "status kept"
    );
    assert_eq!(written["metadata"]["generation"], 2);
    // A stale resourceVersion is a conflict; a name that is not the URL's a bad request.
    let mut stale = written.clone();
    stale["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    assert_status(
        &put(&format!("{FLOW_SCHEMAS}/s"), &stale),
        409,
        "Conflict",
        "the object has been modified; please apply your changes to the latest version and try again",
    );
    assert_status(
        &put(&format!("{FLOW_SCHEMAS}/other"), &written),
        400,
        "BadRequest",
        "the name of the object (s) does not match the name on the URL (other)",
    );
    // Delete with a failed precondition, then with the right one.
    let precondition = |uid: &str| format!(r#"{{"preconditions":{{"uid":"{uid}"}}}}"#);
    let delete = |body: String| {
        server.curl_json(
            &format!("{FLOW_SCHEMAS}/s"),
            &[
                "-X",
                "DELETE",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                "@-",
            ],
            body.as_bytes(),
        )
    };
    assert_status(
        &delete(precondition("not-it")),
        409,
        "Conflict",
        "the UID in the precondition (not-it) does not match the UID in record",
    );
    let (code, status) = delete(precondition(created["metadata"]["uid"].as_str().unwrap()));
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["details"]["name"], "s");
    assert_eq!(status["details"]["kind"], "flowschemas");
}

/// test/e2e/apimachinery/chunking.go, "should support continue listing from the last key if
/// the original version has been compacted away, though the list is inconsistent [Slow]", on
/// `apfkit serve` compacting every second (`--etcd-compaction-interval`): 400 FlowSchemas
/// listed `limit=40`; once the first page's revision is compacted its continue token gets 410
/// `Expired` with an inconsistent continue token in the Status, which lists exactly `limit`
/// items at a newer revision, and the pages after it keep that revision and reach the end.
fn a_compacted_continue_token_gets_an_inconsistent_one(server: &Server) {
    const OBJECTS: usize = 400;
    const LIMIT: usize = 40;
    for n in 0..OBJECTS {
        let (code, body) = post(
            server,
            FLOW_SCHEMAS,
            "application/json",
            flow_schema(&format!("template-{n:04}"), "").as_bytes(),
        );
        assert_eq!(code, 201, "{body}");
    }
    let (code, first) = server.curl_json(&format!("{FLOW_SCHEMAS}?limit={LIMIT}"), &[], b"");
    assert_eq!(code, 200);
    let first_rv: u64 = first["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    // Writes after the first page, then wait until compaction passes its revision.
    let mut expired = None;
    for attempt in 0..60 {
        let (code, body) = post(
            server,
            FLOW_SCHEMAS,
            "application/json",
            flow_schema(&format!("later-{attempt:02}"), "").as_bytes(),
        );
        assert_eq!(code, 201, "{body}");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let answer = server.curl_json(
            &format!("{FLOW_SCHEMAS}?limit={LIMIT}&continue={token}"),
            &[],
            b"",
        );
        if answer.0 == 410 {
            expired = Some(answer.1);
            break;
        }
        assert_eq!(answer.0, 200, "{}", answer.1);
    }
    let expired = expired.expect("the first page's revision was compacted within 30 s");
    assert_eq!(expired["reason"], "Expired");
    assert!(
        expired["message"]
            .as_str()
            .unwrap()
            .contains("use the continue token in this response to retrieve the remainder"),
        "{expired}"
    );
    let mut token = expired["metadata"]["continue"]
        .as_str()
        .expect("an inconsistent continue token")
        .to_owned();
    let mut listed = first["items"].as_array().unwrap().len();
    let mut revision = None;
    loop {
        let (code, page) = server.curl_json(
            &format!("{FLOW_SCHEMAS}?limit={LIMIT}&continue={token}"),
            &[],
            b"",
        );
        assert_eq!(code, 200, "{page}");
        let items = page["items"].as_array().unwrap();
        let rv: u64 = page["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        match revision {
            None => {
                assert_eq!(items.len(), LIMIT);
                assert!(rv > first_rv, "a newer revision: {rv} after {first_rv}");
                revision = Some(rv);
            }
            Some(first) => assert_eq!(rv, first, "the pages after keep its revision"),
        }
        listed += items.len();
        match page["metadata"]["continue"].as_str() {
            Some(next) => token = next.to_owned(),
            None => break,
        }
    }
    assert!(listed >= OBJECTS, "{listed} listed");
}

#[test]
fn chunking_continues_inconsistently_after_compaction_on_the_embedded_store() {
    let server = Server::start(&["--no-bootstrap", NO_APF, "--etcd-compaction-interval", "1s"]);
    a_compacted_continue_token_gets_an_inconsistent_one(&server);
}

#[test]
fn chunking_continues_inconsistently_after_compaction_on_etcd() {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    let server = Server::start(&[
        "--etcd-servers",
        &etcd.endpoint,
        "--no-bootstrap",
        NO_APF,
        "--etcd-compaction-interval",
        "1s",
    ]);
    a_compacted_continue_token_gets_an_inconsistent_one(&server);
}

/// Issue 39, §3: while etcd is down, a request waits for it until the request's deadline,
/// then gets kube-apiserver's 504 from its timeout filter (k8s.io/apiserver
/// `pkg/server/filters/timeout.go`), whatever the verb; never the etcd client's words, an
/// address or an operating system's error. The client's `?timeout=` shortens the wait. When
/// etcd is back, the same requests are answered.
#[test]
fn while_etcd_is_down_requests_time_out_as_kube_apiservers_do() {
    let mut etcd = apfkit_test_support::etcd::Etcd::start();
    let server = Server::start(&[
        "--etcd-servers",
        &etcd.endpoint,
        "--no-bootstrap",
        NO_APF,
        "--request-timeout",
        "3s",
    ]);
    assert_eq!(server.curl(FLOW_SCHEMAS, &[], b"").0, 200);
    etcd.stop();
    let timed_out = apfkit_test_support::status::allotted_timeout();
    let create = flow_schema("while-down", "");
    let asks: [(&str, &[&str], &[u8], u64); 3] = [
        ("?timeout=1s", &[], b"", 1),
        ("", &[], b"", 3),
        (
            "",
            &[
                "-X",
                "POST",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                "@-",
            ],
            create.as_bytes(),
            3,
        ),
    ];
    for (query, args, body, seconds) in asks {
        let started = std::time::Instant::now();
        let (code, answer) = server.curl(&format!("{FLOW_SCHEMAS}{query}"), args, body);
        let took = started.elapsed();
        let text = String::from_utf8_lossy(&answer);
        assert_eq!(code, 504, "{query} {args:?}: {text}");
        assert_eq!(serde_json::from_slice::<Value>(&answer).unwrap(), timed_out);
        assert!(
            took >= std::time::Duration::from_secs(seconds)
                && took < std::time::Duration::from_secs(seconds + 3),
            "{query} {args:?}: answered after {took:?}"
        );
    }
    let wrong = super::apfkit(&["serve", "--request-timeout", "1d"], b"");
    assert_eq!(wrong.status.code(), Some(2));
    let said = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        said.contains(r#"time: unknown unit "d" in duration "1d""#),
        "{said}"
    );

    etcd.restart();
    let (code, answer) = server.curl(&format!("{FLOW_SCHEMAS}?timeout=20s"), &[], b"");
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&answer));
    let again = flow_schema("after-restart", "");
    let (code, made) = post(&server, FLOW_SCHEMAS, "application/json", again.as_bytes());
    assert_eq!(code, 201, "{made}");
}
