//! Server-side apply and managed fields on `apfkit serve`, with kubectl 1.32 and curl:
//! `kubectl apply --server-side` twice (a no-op), a second manager's conflict and
//! `--force-conflicts`, kubectl's move from client-side to server-side apply, every write
//! recording its manager, and hostile apply requests answered as kube-apiserver answers them.

use serde_json::{Value, json};

use super::serve::{NO_APF, Server};

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";

const TEAM_A: &str = "\
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: team-a
  labels: {team: a}
spec:
  priorityLevelConfiguration: {name: global-default}
  matchingPrecedence: 500
  rules:
  - subjects:
    - kind: User
      user: {name: alice}
    nonResourceRules:
    - verbs: [get]
      nonResourceURLs: [/healthz]
";

/// The object as stored, managed fields included.
fn stored(server: &Server, name: &str) -> Value {
    let text = server.kubectl_ok(
        &[
            "get",
            "flowschema",
            name,
            "-o",
            "json",
            "--show-managed-fields",
        ],
        b"",
    );
    serde_json::from_str(&text).unwrap()
}

/// (manager, operation, fieldsV1) of each entry, in order.
fn managers(object: &Value) -> Vec<(String, String, Value)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_owned(),
                        e["operation"].as_str().unwrap_or_default().to_owned(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn apply_patch(server: &Server, path: &str, query: &str, body: &[u8]) -> (u16, Value) {
    server.curl_json(
        &format!("{path}?{query}"),
        &[
            "-X",
            "PATCH",
            "-H",
            "Content-Type: application/apply-patch+yaml",
            "--data-binary",
            "@-",
        ],
        body,
    )
}

fn assert_status(answer: &(u16, Value), code: u16, reason: &str, message: &str) {
    let (got, status) = answer;
    assert_eq!(*got, code, "{status}");
    assert_eq!(status["kind"], "Status", "{status}");
    // metav1.Status leaves an empty reason (StatusReasonUnknown) out.
    assert_eq!(status["reason"].as_str().unwrap_or(""), reason, "{status}");
    assert_eq!(status["message"], message, "{status}");
}

#[test]
fn kubectl_server_side_apply_is_a_no_op_the_second_time_and_records_its_fields() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    let first = server.kubectl_ok(&["apply", "--server-side", "-f", "-"], TEAM_A.as_bytes());
    assert_eq!(
        first,
        "flowschema.flowcontrol.apiserver.k8s.io/team-a serverside-applied\n"
    );
    let object = stored(&server, "team-a");
    assert_eq!(
        managers(&object),
        [(
            "kubectl".to_owned(),
            "Apply".to_owned(),
            json!({
                "f:metadata": {"f:labels": {"f:team": {}}},
                "f:spec": {
                    "f:matchingPrecedence": {},
                    "f:priorityLevelConfiguration": {"f:name": {}},
                    "f:rules": {},
                },
            })
        )]
    );
    let entry = &object["metadata"]["managedFields"][0];
    assert_eq!(entry["apiVersion"], "flowcontrol.apiserver.k8s.io/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    server.kubectl_ok(&["apply", "--server-side", "-f", "-"], TEAM_A.as_bytes());
    let again = stored(&server, "team-a");
    assert_eq!(again, object, "the second apply changed the object");
}

#[test]
fn a_second_manager_conflicts_then_forces_and_shares_equal_fields() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    server.kubectl_ok(&["apply", "--server-side", "-f", "-"], TEAM_A.as_bytes());
    let changed = TEAM_A.replace("matchingPrecedence: 500", "matchingPrecedence: 400");
    let refused = server.kubectl(
        &["apply", "--server-side", "--field-manager=tuner", "-f", "-"],
        changed.as_bytes(),
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.matchingPrecedence"
        ),
        "{stderr}"
    );
    assert_eq!(stored(&server, "team-a")["spec"]["matchingPrecedence"], 500);
    server.kubectl_ok(
        &[
            "apply",
            "--server-side",
            "--field-manager=tuner",
            "--force-conflicts",
            "-f",
            "-",
        ],
        changed.as_bytes(),
    );
    let object = stored(&server, "team-a");
    assert_eq!(object["spec"]["matchingPrecedence"], 400);
    let entries = managers(&object);
    let (kubectl, tuner) = (&entries[0], &entries[1]);
    assert_eq!((kubectl.0.as_str(), tuner.0.as_str()), ("kubectl", "tuner"));
    // Both set the same rules and labels: they share them; only the tuner holds the
    // precedence it took.
    assert!(kubectl.2["f:spec"].get("f:matchingPrecedence").is_none());
    assert!(tuner.2["f:spec"].get("f:matchingPrecedence").is_some());
    assert_eq!(kubectl.2["f:spec"]["f:rules"], json!({}));
    assert_eq!(tuner.2["f:spec"]["f:rules"], json!({}));
}

#[test]
fn server_side_apply_takes_over_from_client_side_apply() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    server.kubectl_ok(&["apply", "-f", "-"], TEAM_A.as_bytes());
    let before = stored(&server, "team-a");
    assert_eq!(managers(&before)[0].0, "kubectl-client-side-apply");
    let changed = TEAM_A.replace("matchingPrecedence: 500", "matchingPrecedence: 450");
    let applied = server.kubectl_ok(&["apply", "--server-side", "-f", "-"], changed.as_bytes());
    assert!(applied.contains("serverside-applied"), "{applied}");
    let object = stored(&server, "team-a");
    assert_eq!(object["spec"]["matchingPrecedence"], 450);
    let names: Vec<String> = managers(&object).into_iter().map(|m| m.0).collect();
    assert!(names.contains(&"kubectl".to_owned()), "{names:?}");
    assert!(
        !names.contains(&"kubectl-client-side-apply".to_owned()),
        "{names:?}"
    );
    // The server keeps kubectl's last-applied-configuration equal to what it applied.
    let last: Value = serde_json::from_str(
        object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["spec"]["matchingPrecedence"], 450);
}

#[test]
fn every_write_records_its_manager() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    server.kubectl_ok(&["create", "-f", "-"], TEAM_A.as_bytes());
    server.kubectl_ok(
        &[
            "patch",
            "flowschema",
            "team-a",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"matchingPrecedence":300}}"#,
        ],
        b"",
    );
    // Without a fieldManager, the user agent's first word: curl's.
    let mut object = stored(&server, "team-a");
    object["metadata"]["labels"]["team"] = json!("b");
    let (code, _) = server.curl_json(
        &format!("{FLOW_SCHEMAS}/team-a"),
        &[
            "-X",
            "PUT",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
        ],
        object.to_string().as_bytes(),
    );
    assert_eq!(code, 200);
    let written = stored(&server, "team-a");
    // Entries are sorted by operation, time (seconds), then manager.
    let mut entries = managers(&written);
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let names: Vec<(&str, &str)> = entries
        .iter()
        .map(|m| (m.0.as_str(), m.1.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("curl", "Update"),
            ("kubectl-create", "Update"),
            ("kubectl-patch", "Update"),
        ]
    );
    assert_eq!(
        entries[0].2,
        json!({"f:metadata": {"f:labels": {"f:team": {}}}})
    );
    assert_eq!(
        entries[2].2,
        json!({"f:spec": {"f:matchingPrecedence": {}}})
    );
}

#[test]
fn hostile_apply_requests_are_answered_as_kube_apiserver_answers_them() {
    let server = Server::start(&["--no-bootstrap", NO_APF]);
    let team_a = format!("{FLOW_SCHEMAS}/team-a");
    assert_status(
        &apply_patch(&server, &team_a, "", TEAM_A.as_bytes()),
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
    );
    assert_status(
        &apply_patch(&server, &team_a, "fieldManager=a%01b", TEAM_A.as_bytes()),
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: \"a\\x01b\": invalid character U+0001 (at position 1)",
    );
    let merge = server.curl_json(
        &format!("{team_a}?force=true"),
        &[
            "-X",
            "PATCH",
            "-H",
            "Content-Type: application/merge-patch+json",
            "--data-binary",
            "@-",
        ],
        b"{}",
    );
    assert_status(
        &merge,
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
    );
    let other_kind = TEAM_A.replace("kind: FlowSchema", "kind: PriorityLevelConfiguration");
    assert_status(
        &apply_patch(&server, &team_a, "fieldManager=m", other_kind.as_bytes()),
        400,
        "BadRequest",
        "invalid object type: flowcontrol.apiserver.k8s.io/v1, Kind=PriorityLevelConfiguration",
    );
    let with_managed = TEAM_A.replace("  labels: {team: a}\n", "  managedFields: []\n");
    assert_status(
        &apply_patch(&server, &team_a, "fieldManager=m", with_managed.as_bytes()),
        400,
        "BadRequest",
        "metadata.managedFields must be nil",
    );
    let undeclared = TEAM_A.replace(
        "  matchingPrecedence: 500\n",
        "  matchingPrecedence: 500\n  colour: red\n",
    );
    assert_status(
        &apply_patch(&server, &team_a, "fieldManager=m", undeclared.as_bytes()),
        500,
        "",
        "failed to create typed patch object (/team-a; flowcontrol.apiserver.k8s.io/v1, Kind=FlowSchema): .spec.colour: field not declared in schema",
    );
    let duplicated_owner = TEAM_A.replace(
        "  labels: {team: a}\n",
        "  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: x, uid: u1}\n  - {apiVersion: v1, kind: ConfigMap, name: y, uid: u1}\n",
    );
    assert_status(
        &apply_patch(
            &server,
            &team_a,
            "fieldManager=m",
            duplicated_owner.as_bytes(),
        ),
        500,
        "",
        "failed to create typed patch object (/team-a; flowcontrol.apiserver.k8s.io/v1, Kind=FlowSchema): .metadata.ownerReferences: duplicate entries for key [uid=\"u1\"]",
    );
    // Duplicate keys: YAML refuses them (go-yaml does too); in JSON they are what
    // fieldValidation says.
    let duplicate_key = TEAM_A.replace(
        "  labels: {team: a}\n",
        "  labels: {team: a}\n  labels: {team: b}\n",
    );
    let (code, status) = apply_patch(&server, &team_a, "fieldManager=m", duplicate_key.as_bytes());
    assert_eq!(code, 400, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .starts_with("error decoding YAML: "),
        "{status}"
    );
    let json_duplicate = br#"{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"team-a","name":"team-a"},"spec":{"matchingPrecedence":1}}"#;
    let (code, status) = apply_patch(
        &server,
        &team_a,
        "fieldManager=m&fieldValidation=Strict",
        json_duplicate,
    );
    // kube-apiserver's words: handlers/patch.go `applyPatcher` after yaml.UnmarshalStrict.
    assert_status(
        &(code, status),
        400,
        "BadRequest",
        "error strict decoding patch: error converting YAML to JSON: yaml: unmarshal errors:\n  \
         line 1: key \"name\" already set in map",
    );
    // (Truncated YAML is often still YAML; truncated JSON is not.)
    // An apply to one name of an object of another creates nothing.
    let other_name = TEAM_A.replace("name: team-a", "name: team-b");
    assert_status(
        &apply_patch(&server, &team_a, "fieldManager=m", other_name.as_bytes()),
        400,
        "BadRequest",
        "the name of the object (team-b) does not match the name on the URL (team-a)",
    );
    let (code, _) = server.curl_json(&format!("{FLOW_SCHEMAS}/team-b"), &[], b"");
    assert_eq!(code, 404);
    let truncated = &json_duplicate[..json_duplicate.len() / 2];
    let (code, status) = apply_patch(&server, &team_a, "fieldManager=m", truncated);
    assert_eq!(code, 400, "{status}");
    let deep = format!(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {{name: team-a}}\nspec: {}{}",
        "{a: ".repeat(2000),
        "}".repeat(2000)
    );
    let (code, status) = apply_patch(&server, &team_a, "fieldManager=m", deep.as_bytes());
    assert_eq!(code, 400, "{status}");
    // Nothing of these was stored.
    let (code, _) = server.curl_json(&team_a, &[], b"");
    assert_eq!(code, 404);

    // Apply creates (201), then a huge atomic list is one field.
    let (code, created) = apply_patch(&server, &team_a, "fieldManager=m", TEAM_A.as_bytes());
    assert_eq!(code, 201, "{created}");
    let mut rules = String::new();
    for i in 0..3000 {
        rules.push_str(&format!(
            "  - subjects: [{{kind: User, user: {{name: u{i}}}}}]\n    nonResourceRules: [{{verbs: [get], nonResourceURLs: [/x{i}]}}]\n"
        ));
    }
    let huge = TEAM_A.split("  rules:\n").next().unwrap().to_owned() + "  rules:\n" + &rules;
    let (code, applied) = apply_patch(&server, &team_a, "fieldManager=m", huge.as_bytes());
    assert_eq!(code, 200, "{applied}");
    assert_eq!(applied["spec"]["rules"].as_array().unwrap().len(), 3000);
    assert_eq!(
        applied["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:rules"],
        json!({})
    );

    // Managed fields a client sends with an update: garbage is ignored (the stored ones
    // stay), an empty list resets them.
    let mut garbage = applied.clone();
    garbage["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Delete"}]);
    garbage["metadata"]["labels"]["team"] = json!("z");
    let put = |body: &Value| {
        server.curl_json(
            &format!("{team_a}?fieldManager=editor"),
            &[
                "-X",
                "PUT",
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                "@-",
            ],
            body.to_string().as_bytes(),
        )
    };
    let (code, kept) = put(&garbage);
    assert_eq!(code, 200, "{kept}");
    let names: Vec<String> = managers(&kept).into_iter().map(|m| m.0).collect();
    assert_eq!(names, ["m", "editor"]);
    let mut reset = kept.clone();
    reset["metadata"]["managedFields"] = json!([]);
    reset["metadata"]["labels"]["team"] = json!("y");
    let (code, reset) = put(&reset);
    assert_eq!(code, 200, "{reset}");
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset}");
    // The server still serves.
    let (code, _) = server.curl(FLOW_SCHEMAS, &[], b"");
    assert_eq!(code, 200);
}
