//! The verb a request is authorized for is the verb it executes and the verb audited, on every
//! path family, as kube-apiserver's `RequestInfoFactory` reads the verb and its routes serve it
//! (`k8s.io/apiserver/pkg/endpoints/installer.go`: the deprecated `/watch/` paths take GET
//! only, status and scale take GET, PUT and PATCH, the all-namespaces path of a namespaced
//! resource only GET, and no `/proxy/` path is served).
//!
//! Each request is sent twice, impersonating a user allowed every verb but the one
//! kube-apiserver reads from it (refused: so it was authorized as that verb and no other) and
//! a user allowed only that verb (answered as kube-apiserver answers). What it did is read
//! from its answer (a watch's first event, a list, an object) and from the store afterwards;
//! its audit event names the verb.

use std::collections::BTreeMap;
use std::time::Duration;

use apfkit_server::{AuditConfig, Config, start};
use apfkit_test_support::crd;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};

use apfkit_test_support::requests::{self, Did, Sent, admin, client, send};

/// Every verb RBAC can grant that kube-apiserver reads from a resource request.
const VERBS: [&str; 9] = [
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "proxy",
];

const FLOW: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";
const WIDGETS: &str = "/apis/example.com/v1";

struct Row {
    method: &'static str,
    path: String,
    sent: Sent,
    /// The verb kube-apiserver reads, authorizes and audits.
    verb: &'static str,
    /// kube-apiserver's status code for a user allowed that verb.
    code: u16,
    did: Did,
}

fn row(method: &'static str, path: &str, verb: &'static str, code: u16, did: Did) -> Row {
    Row {
        method,
        path: path.to_owned(),
        sent: Sent::Nothing,
        verb,
        code,
        did,
    }
}

/// An answer of one object of `kind`; any kind when empty.
fn object(kind: &str) -> Did {
    Did::Object(kind.to_owned())
}

/// Whether `answered` did what `expected` says (`object("")`: any one object).
fn did_as_expected(answered: &Did, expected: &Did) -> bool {
    match (answered, expected) {
        (Did::Object(_), Did::Object(kind)) if kind.is_empty() => true,
        _ => answered == expected,
    }
}

fn sending(mut row: Row, sent: Sent) -> Row {
    row.sent = sent;
    row
}

fn flow_schema(name: &str) -> Value {
    json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
           "metadata": {"name": name},
           "spec": {"priorityLevelConfiguration": {"name": "workload-low"}}})
}

fn service(namespace: &str, name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": namespace},
           "spec": {"ports": [{"port": 80}]}})
}

fn widget_crd() -> Value {
    let replicas = json!({"type": "object", "properties": {"replicas": {"type": "integer"}}});
    let root = json!({"type": "object", "properties": {"spec": replicas, "status": replicas}});
    let mut v1 = crd::version("v1", true, root);
    v1["subresources"] = json!({"status": {}, "scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}});
    crd::definition("widgets.example.com", "Widget", json!([v1]))
}

/// The matrix: path families × methods, with kube-apiserver's verb, code and handler.
fn rows() -> Vec<Row> {
    use Did::{List, Refused, Watch};
    let fs = |rest: &str| format!("{FLOW}/{rest}");
    let labelled = || Sent::Merge(json!({"metadata": {"labels": {"patched": "yes"}}}));
    let scale = "namespaces/scale/widgets/w1/scale";
    vec![
        // A cluster-scoped resource.
        row("GET", &fs("flowschemas"), "list", 200, List),
        row("GET", &fs("flowschemas?watch=true"), "watch", 200, Watch),
        // apimachinery's query booleans: all but `false` and `0` are true.
        row("GET", &fs("flowschemas?watch=maybe"), "watch", 200, Watch),
        row("GET", &fs("flowschemas?watch=false"), "list", 200, List),
        row("GET", &fs("watch/flowschemas"), "watch", 200, Watch),
        row("GET", &fs("watch/flowschemas/f1"), "watch", 200, Watch),
        row(
            "GET",
            &fs("flowschemas/f1"),
            "get",
            200,
            object("FlowSchema"),
        ),
        row(
            "GET",
            &fs("flowschemas/f1?watch=true"),
            "get",
            200,
            object("FlowSchema"),
        ),
        row(
            "GET",
            &fs("flowschemas/watch"),
            "get",
            200,
            object("FlowSchema"),
        ),
        row(
            "GET",
            &fs("flowschemas/proxy"),
            "get",
            200,
            object("FlowSchema"),
        ),
        row(
            "GET",
            &fs("flowschemas/f1/status"),
            "get",
            200,
            object("FlowSchema"),
        ),
        sending(
            row(
                "PATCH",
                &fs("flowschemas/f1"),
                "patch",
                200,
                object("FlowSchema"),
            ),
            labelled(),
        ),
        sending(
            row(
                "PATCH",
                &fs("flowschemas/f1/status"),
                "patch",
                200,
                object("FlowSchema"),
            ),
            Sent::Merge(json!({})),
        ),
        sending(
            row(
                "POST",
                &fs("flowschemas"),
                "create",
                201,
                object("FlowSchema"),
            ),
            Sent::Json(flow_schema("f3")),
        ),
        row("DELETE", &fs("flowschemas/f2"), "delete", 200, object("")),
        // The deprecated watch paths take GET only.
        row("DELETE", &fs("watch/flowschemas/f1"), "watch", 405, Refused),
        sending(
            row("PUT", &fs("watch/flowschemas/f1"), "watch", 405, Refused),
            Sent::Json(flow_schema("f1")),
        ),
        sending(
            row("PATCH", &fs("watch/flowschemas/f1"), "watch", 405, Refused),
            labelled(),
        ),
        sending(
            row("POST", &fs("watch/flowschemas"), "watch", 405, Refused),
            Sent::Json(flow_schema("f4")),
        ),
        row("DELETE", &fs("watch/flowschemas"), "watch", 405, Refused),
        row(
            "GET",
            &fs("watch/flowschemas/f1/status"),
            "watch",
            404,
            Refused,
        ),
        // No `/proxy/` path is served.
        row("GET", &fs("proxy/flowschemas/f1"), "proxy", 404, Refused),
        row("DELETE", &fs("proxy/flowschemas/f1"), "proxy", 404, Refused),
        row("DELETE", &fs("proxy/flowschemas"), "proxy", 404, Refused),
        // The status subresource: GET, PUT and PATCH.
        row(
            "DELETE",
            &fs("flowschemas/f1/status"),
            "delete",
            405,
            Refused,
        ),
        sending(
            row("POST", &fs("flowschemas/f1/status"), "create", 405, Refused),
            Sent::Json(flow_schema("f1")),
        ),
        // Collection and item paths: their own methods.
        sending(
            row("POST", &fs("flowschemas/f1"), "create", 405, Refused),
            Sent::Json(flow_schema("f1")),
        ),
        sending(
            row("PUT", &fs("flowschemas"), "update", 405, Refused),
            Sent::Json(flow_schema("f1")),
        ),
        row(
            "DELETE",
            &fs("namespaces/default/flowschemas/f1"),
            "delete",
            404,
            Refused,
        ),
        // A namespaced resource, in namespaces named `watch`, `proxy` and `status`.
        row("GET", "/api/v1/services", "list", 200, List),
        row("GET", "/api/v1/watch/services", "watch", 200, Watch),
        row(
            "GET",
            "/api/v1/namespaces/watch/services",
            "list",
            200,
            List,
        ),
        row(
            "GET",
            "/api/v1/watch/namespaces/watch/services",
            "watch",
            200,
            Watch,
        ),
        row(
            "GET",
            "/api/v1/watch/namespaces/watch/services/s1",
            "watch",
            200,
            Watch,
        ),
        row(
            "GET",
            "/api/v1/namespaces/watch/services/s1",
            "get",
            200,
            object("Service"),
        ),
        row(
            "GET",
            "/api/v1/namespaces/watch/services/s1/status",
            "get",
            200,
            object("Service"),
        ),
        sending(
            row(
                "PATCH",
                "/api/v1/namespaces/watch/services/s1",
                "patch",
                200,
                object("Service"),
            ),
            labelled(),
        ),
        row(
            "DELETE",
            "/api/v1/namespaces/watch/services/s2",
            "delete",
            200,
            object(""),
        ),
        row(
            "DELETE",
            "/api/v1/watch/namespaces/watch/services/s1",
            "watch",
            405,
            Refused,
        ),
        sending(
            row(
                "PUT",
                "/api/v1/watch/namespaces/watch/services/s1",
                "watch",
                405,
                Refused,
            ),
            Sent::Json(service("watch", "s1")),
        ),
        row(
            "DELETE",
            "/api/v1/namespaces/watch/services/s1/status",
            "delete",
            405,
            Refused,
        ),
        row(
            "GET",
            "/api/v1/proxy/namespaces/watch/services/s1",
            "proxy",
            404,
            Refused,
        ),
        // The all-namespaces path serves GET only.
        sending(
            row("POST", "/api/v1/services", "create", 405, Refused),
            Sent::Json(service("watch", "s5")),
        ),
        row(
            "DELETE",
            "/api/v1/services",
            "deletecollection",
            405,
            Refused,
        ),
        row(
            "GET",
            "/api/v1/namespaces/proxy/services/s3",
            "get",
            200,
            object("Service"),
        ),
        row(
            "DELETE",
            "/api/v1/namespaces/proxy/services",
            "deletecollection",
            200,
            List,
        ),
        sending(
            row(
                "POST",
                "/api/v1/namespaces/status/services",
                "create",
                201,
                object("Service"),
            ),
            Sent::Json(service("status", "s4")),
        ),
        // The scale subresource of a custom resource.
        row(
            "GET",
            &format!("{WIDGETS}/{scale}"),
            "get",
            200,
            object("Scale"),
        ),
        sending(
            row(
                "PATCH",
                &format!("{WIDGETS}/{scale}"),
                "patch",
                200,
                object("Scale"),
            ),
            Sent::Merge(json!({"spec": {"replicas": 2}})),
        ),
        row(
            "DELETE",
            &format!("{WIDGETS}/{scale}"),
            "delete",
            405,
            Refused,
        ),
        row(
            "POST",
            &format!("{WIDGETS}/{scale}"),
            "create",
            405,
            Refused,
        ),
        row(
            "GET",
            &format!("{WIDGETS}/watch/{scale}"),
            "watch",
            404,
            Refused,
        ),
        row(
            "GET",
            &format!("{WIDGETS}/watch/namespaces/scale/widgets"),
            "watch",
            200,
            Watch,
        ),
    ]
}

/// Users `only-VERB` (bound to that verb on every resource) and `all-but-VERB` (every other
/// verb), and a wait until the authorizer knows them all.
async fn bind_users(client: &kube::Client) {
    for verb in VERBS {
        let others: Vec<&str> = VERBS.into_iter().filter(|v| *v != verb).collect();
        for (user, verbs) in [
            (format!("only-{verb}"), vec![verb]),
            (format!("all-but-{verb}"), others),
        ] {
            let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": user},
                "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": verbs}]});
            let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding", "metadata": {"name": user},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": user},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                              "name": user}]});
            let rbac = "/apis/rbac.authorization.k8s.io/v1";
            admin(
                client,
                "POST",
                &format!("{rbac}/clusterroles"),
                Sent::Json(role),
            )
            .await;
            admin(
                client,
                "POST",
                &format!("{rbac}/clusterrolebindings"),
                Sent::Json(binding),
            )
            .await;
        }
    }
    for verb in VERBS {
        let others = VERBS.into_iter().find(|v| *v != verb).unwrap();
        for (user, asked) in [
            (format!("only-{verb}"), verb),
            (format!("all-but-{verb}"), others),
        ] {
            let review = json!({"apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": {"user": user, "resourceAttributes":
                    {"group": "example.com", "resource": "widgets", "verb": asked}}});
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            loop {
                let answer = admin(
                    client,
                    "POST",
                    "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                    Sent::Json(review.clone()),
                )
                .await;
                let answer: Value = serde_json::from_str(&answer.body).unwrap();
                if answer["status"]["allowed"] == true {
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{user} never allowed {asked}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// The audit events' verbs, by audit ID, once every ID in `ids` has one (within 20 s).
async fn audited_verbs(log: &std::path::Path, ids: &[String]) -> BTreeMap<String, String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let verbs: BTreeMap<String, String> = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|event| {
                (
                    event["auditID"].as_str().unwrap_or_default().to_owned(),
                    event["verb"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        if ids.iter().all(|id| verbs.contains_key(id)) {
            return verbs;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "audit events missing after 20 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verb_authorized_is_the_verb_executed_and_audited_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n\
         rules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let mut config = Config::new(dir.path().join("data"));
    config.audit = AuditConfig {
        policy_file: Some(policy),
        log_path: Some(log.clone()),
        ..AuditConfig::default()
    };
    config.crds = vec![("widgets".to_owned(), widget_crd())];
    let server = start(config).await.unwrap();
    let client = client(server.kubeconfig(), "apfkit").await;

    requests::namespaces(&client, &["watch", "proxy", "status", "scale"]).await;
    for name in ["f1", "f2", "watch", "proxy"] {
        let path = format!("{FLOW}/flowschemas");
        admin(&client, "POST", &path, Sent::Json(flow_schema(name))).await;
    }
    for (namespace, name) in [("watch", "s1"), ("watch", "s2"), ("proxy", "s3")] {
        let path = format!("/api/v1/namespaces/{namespace}/services");
        admin(&client, "POST", &path, Sent::Json(service(namespace, name))).await;
    }
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w1", "namespace": "scale"},
                        "spec": {"replicas": 1}});
    let widgets = format!("{WIDGETS}/namespaces/scale/widgets");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while send(&client, "POST", &widgets, &Sent::Json(widget.clone()), None)
        .await
        .code
        != 201
    {
        assert!(std::time::Instant::now() < deadline, "widgets never served");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bind_users(&client).await;

    let mut ids = Vec::new();
    let mut failures = Vec::new();
    for row in rows() {
        let (method, path) = (row.method, row.path.as_str());
        let refused = send(
            &client,
            method,
            path,
            &row.sent,
            Some(&format!("all-but-{}", row.verb)),
        )
        .await;
        if refused.code != 403 {
            failures.push(format!(
                "{method} {path}: a user allowed every verb but {} got {}, not 403: {}",
                row.verb, refused.code, refused.body
            ));
        }
        let answered = send(
            &client,
            method,
            path,
            &row.sent,
            Some(&format!("only-{}", row.verb)),
        )
        .await;
        if answered.code != row.code || !did_as_expected(&answered.did, &row.did) {
            failures.push(format!(
                "{method} {path}: a user allowed only {} got {} {:?}, not {} {:?}: {}",
                row.verb,
                answered.code,
                answered.did,
                row.code,
                row.did,
                answered.body.chars().take(300).collect::<String>()
            ));
        }
        ids.push((refused.audit_id, row.verb, format!("{method} {path}")));
        ids.push((answered.audit_id, row.verb, format!("{method} {path}")));
    }

    // What the store holds after: only the requests kube-apiserver executes changed it.
    for (path, code, labelled) in [
        (format!("{FLOW}/flowschemas/f1"), 200, true),
        (format!("{FLOW}/flowschemas/f2"), 404, false),
        (format!("{FLOW}/flowschemas/f3"), 200, false),
        (format!("{FLOW}/flowschemas/f4"), 404, false),
        ("/api/v1/namespaces/watch/services/s1".to_owned(), 200, true),
        (
            "/api/v1/namespaces/watch/services/s2".to_owned(),
            404,
            false,
        ),
        (
            "/api/v1/namespaces/proxy/services/s3".to_owned(),
            404,
            false,
        ),
        (
            "/api/v1/namespaces/status/services/s4".to_owned(),
            200,
            false,
        ),
        (
            "/api/v1/namespaces/watch/services/s5".to_owned(),
            404,
            false,
        ),
    ] {
        let found = send(&client, "GET", &path, &Sent::Nothing, None).await;
        let patched = serde_json::from_str::<Value>(&found.body)
            .is_ok_and(|object| object["metadata"]["labels"]["patched"] == "yes");
        if found.code != code || patched != labelled {
            failures.push(format!(
                "afterwards {path}: {} (patched: {patched}), not {code} (patched: {labelled})",
                found.code
            ));
        }
    }
    let path = format!("{WIDGETS}/namespaces/scale/widgets/w1");
    let w1 = send(&client, "GET", &path, &Sent::Nothing, None).await;
    let w1: Value = serde_json::from_str(&w1.body).unwrap();
    if w1["spec"]["replicas"] != 2 {
        failures.push(format!("afterwards {path}: {w1}, not 2 replicas"));
    }

    let all: Vec<String> = ids.iter().map(|(id, _, _)| id.clone()).collect();
    let verbs = audited_verbs(&log, &all).await;
    for (id, verb, request) in &ids {
        if verbs[id] != *verb {
            failures.push(format!("{request}: audited as {}, not {verb}", verbs[id]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    server.shutdown().await;
}

/// kube-apiserver puts `/debug/*` behind authorization (cluster-admin's non-resource URLs):
/// the APF dumps, which name other users' requests, are refused to anonymous requests and to
/// users not granted the path, and served to those who are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apf_debug_dumps_are_served_only_to_users_granted_their_path() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new(dir.path().join("data"))).await.unwrap();
    let admin_client = client(server.kubeconfig(), "apfkit").await;
    let mut config = requests::config(server.kubeconfig(), "apfkit-user").await;
    let user = kube::Client::try_from(config.clone()).unwrap();
    config.auth_info = kube::config::AuthInfo::default();
    let anonymous = kube::Client::try_from(config).unwrap();

    let dumps = [
        "/debug/api_priority_and_fairness/dump_priority_levels",
        "/debug/api_priority_and_fairness/dump_queues",
        "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1",
    ];
    let read = |client: kube::Client, path: &'static str| async move {
        let request = http::Request::get(path)
            .body(kube::client::Body::empty())
            .unwrap();
        let response = client.send(request).await.unwrap();
        let code = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (code, String::from_utf8_lossy(&body).into_owned())
    };
    for (client, who) in [(&anonymous, "system:anonymous"), (&user, "apfkit-user")] {
        for path in dumps {
            let (code, body) = read(client.clone(), path).await;
            let bare = path.split('?').next().unwrap();
            assert_eq!(code, 403, "{who} {path}: {body}");
            assert!(
                body.contains(&format!(
                    "User \\\"{who}\\\" cannot get path \\\"{bare}\\\""
                )),
                "{who} {path}: {body}"
            );
        }
    }
    for path in dumps {
        let (code, body) = read(admin_client.clone(), path).await;
        assert_eq!(code, 200, "{path}: {body}");
    }
    // Granted the path, the plain user reads them.
    let grant = [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "apf-debugger"},
               "rules": [{"nonResourceURLs": ["/debug/api_priority_and_fairness/*"],
                          "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "apf-debugger"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                           "name": "apf-debugger"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                             "name": "apfkit-user"}]}),
    ];
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    for (object, plural) in grant
        .into_iter()
        .zip(["clusterroles", "clusterrolebindings"])
    {
        admin(
            &admin_client,
            "POST",
            &format!("{rbac}/{plural}"),
            Sent::Json(object),
        )
        .await;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let (code, body) = loop {
        let (code, body) = read(user.clone(), dumps[2]).await;
        if code != 403 || std::time::Instant::now() > deadline {
            break (code, body);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(code, 200, "{body}");
    // kube-apiserver's columns with details, and the request asking among those executing.
    assert!(body.starts_with("PriorityLevelName"), "{body}");
    assert!(
        body.contains("UserName") && body.contains("apfkit-user"),
        "{body}"
    );
    server.shutdown().await;
}
