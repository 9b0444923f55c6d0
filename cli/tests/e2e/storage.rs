//! `apfkit storage ls` against a real etcd started by the test.

use apfkit_storage::envelope::wrap;
use serde_json::Value;

use super::apfkit;
use super::etcd_support::Etcd;

fn put_all(etcd: &Etcd, values: &[(&str, Vec<u8>)]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
            .await
            .unwrap();
        for (key, value) in values {
            client.put(*key, value.clone(), None).await.unwrap();
        }
    });
}

#[test]
fn ls_lists_stored_objects_as_text_and_json() {
    let etcd = Etcd::start();
    put_all(
        &etcd,
        &[
            (
                "/registry/flowschemas/catch-all",
                wrap(
                    "flowcontrol.apiserver.k8s.io/v1beta3",
                    "FlowSchema",
                    b"\x0a\x00",
                ),
            ),
            (
                "/registry/prioritylevelconfigurations/secret",
                b"k8s:enc:aescbc:v1:key1:\x01".to_vec(),
            ),
            (
                "/registry/apiregistration.k8s.io/apiservices/v1.apps",
                br#"{"kind":"APIService","apiVersion":"apiregistration.k8s.io/v1"}"#.to_vec(),
            ),
            (
                "/registry/prioritylevelconfigurations/junk",
                b"\x00junk".to_vec(),
            ),
        ],
    );
    let json = apfkit(
        &["storage", "ls", "--endpoints", &etcd.endpoint, "-o", "json"],
        b"",
    );
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let listed: Value = serde_json::from_slice(&json.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 4);
    assert_eq!(listed[0]["key"], "/registry/flowschemas/catch-all");
    assert_eq!(
        listed[0]["apiVersion"],
        "flowcontrol.apiserver.k8s.io/v1beta3"
    );
    assert_eq!(listed[0]["kind"], "FlowSchema");
    assert_eq!(listed[0]["encoding"], "protobuf");
    assert!(listed[0]["modRevision"].as_i64().unwrap() > 0);
    assert_eq!(listed[1]["encoding"], "unreadable");
    assert!(
        listed[1]["error"]
            .as_str()
            .unwrap()
            .starts_with("neither Kubernetes protobuf")
    );
    assert_eq!(listed[2]["encoding"], "encrypted (aescbc:v1:key1)");
    assert_eq!(listed[3]["resource"], "apiservices");
    assert_eq!(listed[3]["encoding"], "json");

    let text = apfkit(&["storage", "ls", "--endpoints", &etcd.endpoint], b"");
    assert!(text.status.success());
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(
        text.starts_with("KEY\tAPIVERSION\tENCODING\tSIZE\tREVISION\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "/registry/flowschemas/catch-all\tflowcontrol.apiserver.k8s.io/v1beta3\tprotobuf\t"
        ),
        "{text}"
    );
}

#[test]
fn an_unreachable_etcd_is_exit_code_1_with_the_endpoint() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let endpoint = format!("http://127.0.0.1:{closed}");
    let output = apfkit(
        &["storage", "ls", "--endpoints", &endpoint, "--timeout", "2"],
        b"",
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!("error: connecting to etcd at {endpoint}")),
        "{stderr}"
    );
}

/// A v1beta3 FlowSchema as stored protobuf.
fn stored_flow_schema(name: &str) -> Vec<u8> {
    let object = serde_json::json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3", "kind": "FlowSchema",
        "metadata": {"name": name, "uid": "u-1", "creationTimestamp": "2024-01-02T03:04:05Z"},
        "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 9900,
                 "distinguisherMethod": {"type": "ByUser"},
                 "rules": [{"subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}]}]}
    });
    apfkit_storage::object::encode(&object, apfkit_storage::object::Format::Protobuf).unwrap()
}

#[test]
fn get_decodes_a_stored_object_in_any_version_in_go_order() {
    let etcd = Etcd::start();
    put_all(
        &etcd,
        &[(
            "/registry/flowschemas/global-default",
            stored_flow_schema("global-default"),
        )],
    );
    let out = apfkit(
        &[
            "storage",
            "get",
            "--kind",
            "flowschema",
            "--name",
            "global-default",
            "--to",
            "v1",
            "-o",
            "json",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("{\n  \"kind\": \"FlowSchema\",\n  \"apiVersion\": \"flowcontrol.apiserver.k8s.io/v1\",\n  \"metadata\": {\n    \"name\": \"global-default\",\n    \"uid\": \"u-1\",\n    \"resourceVersion\": \""),
        "{text}"
    );
    // The resource version is the key's mod revision (the only write: revision 2).
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["metadata"]["resourceVersion"], "2");

    // By key, in its stored version, as YAML.
    let out = apfkit(
        &[
            "storage",
            "get",
            "/registry/flowschemas/global-default",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
    );
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("apiVersion: flowcontrol.apiserver.k8s.io/v1beta3")
    );

    let missing = apfkit(
        &[
            "storage",
            "get",
            "/registry/flowschemas/nope",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
    );
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("/registry/flowschemas/nope: no such key")
    );
}

#[test]
fn migrate_rewrites_reports_and_exits_1_when_something_was_left() {
    let etcd = Etcd::start();
    put_all(
        &etcd,
        &[
            ("/registry/flowschemas/a", stored_flow_schema("a")),
            ("/registry/flowschemas/b", stored_flow_schema("b")),
            (
                "/registry/prioritylevelconfigurations/secret",
                b"k8s:enc:kms:v2:provider:\x01".to_vec(),
            ),
        ],
    );
    let dry = apfkit(
        &[
            "storage",
            "migrate",
            "--to",
            "v1",
            "--dry-run",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(text.contains("would migrate /registry/flowschemas/a from flowcontrol.apiserver.k8s.io/v1beta3 to flowcontrol.apiserver.k8s.io/v1"), "{text}");
    assert!(text.contains("2 to migrate, 0 already current"), "{text}");

    let run = apfkit(
        &[
            "storage",
            "migrate",
            "--to",
            "v1",
            "--endpoints",
            &etcd.endpoint,
            "-o",
            "json",
        ],
        b"",
    );
    assert_eq!(run.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(summary["migrated"], 2);
    assert_eq!(
        summary["failed"][0]["key"],
        "/registry/prioritylevelconfigurations/secret"
    );
    assert!(
        summary["failed"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("encrypted at rest (kms:v2:provider)")
    );
    assert!(String::from_utf8_lossy(&run.stderr).contains("1 object(s) were not migrated"));

    let again = apfkit(
        &[
            "storage",
            "migrate",
            "--to",
            "flowcontrol.apiserver.k8s.io/v1",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 migrated, 2 already current"));

    let bad = apfkit(
        &[
            "storage",
            "migrate",
            "--to",
            "v9",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
    );
    assert_eq!(bad.status.code(), Some(2));
}
