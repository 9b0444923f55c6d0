//! `apfkit storage ls` against a real etcd started by the test.

use apfkit_storage::envelope::wrap;
use serde_json::Value;

use super::{apfkit, success};
use apfkit_test_support::etcd::Etcd;

/// Writes each (key, value) straight into etcd; keys may be any bytes.
fn put_all<K: AsRef<[u8]>>(etcd: &Etcd, values: &[(K, Vec<u8>)]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut client = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
            .await
            .unwrap();
        for (key, value) in values {
            client.put(key.as_ref(), value.clone(), None).await.unwrap();
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
    apfkit_storage::object::encode(&object, apfkit_runtime::scheme::StorageEncoding::Protobuf)
        .unwrap()
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

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Issue 24, item 2: a 1.4 MB stored value of 700,000 empty owner references took 1.18 GB in
/// `storage get` and 2.2 GB in `storage migrate --dry-run`, which planned it; it is now
/// refused with its key while it is decoded.
#[test]
fn values_over_the_node_limit_are_refused_in_little_memory() {
    let etcd = Etcd::start();
    let mut metadata = b"\x0a\x0bmany-owners".to_vec();
    metadata.extend(std::iter::repeat_n([0x6a, 0x00], 700_000).flatten());
    let mut raw = vec![0x0a];
    prost::encoding::encode_varint(metadata.len() as u64, &mut raw);
    raw.extend(metadata);
    let key = "/registry/flowschemas/many-owners";
    put_all(
        &etcd,
        &[(
            key,
            wrap("flowcontrol.apiserver.k8s.io/v1beta3", "FlowSchema", &raw),
        )],
    );
    let (output, get_peak) = super::apfkit_peak(
        &["storage", "get", key, "--endpoints", &etcd.endpoint],
        2048,
    );
    assert_eq!(output.status.code(), Some(1));
    let message = stderr_of(&output);
    assert!(
        message.starts_with(&format!("error: {key}: "))
            && message.contains("more than 1000000 nodes"),
        "{message}"
    );
    let (output, migrate_peak) = super::apfkit_peak(
        &[
            "storage",
            "migrate",
            "--to",
            "v1",
            "--dry-run",
            "--endpoints",
            &etcd.endpoint,
        ],
        2048,
    );
    assert_eq!(output.status.code(), Some(1));
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        report.contains(&format!("not migrated: {key}: "))
            && report.contains("more than 1000000 nodes"),
        "{report}"
    );
    assert!(report.contains("0 to migrate"), "{report}");
    for (command, peak) in [("get", get_peak), ("migrate", migrate_peak)] {
        assert!(peak < 256, "storage {command} peaked at {peak} MiB");
    }
}

/// Issue 24, item 7: keys holding ESC, a newline, a tab or bytes that are not UTF-8 are
/// printed escaped on one line wherever they reach a terminal, given exactly in JSON, and
/// read back by `storage get`.
#[test]
fn keys_are_escaped_and_read_back() {
    use base64::Engine as _;
    let etcd = Etcd::start();
    let keys: [&[u8]; 4] = [
        b"/registry/flowschemas/esc\x1b[31mred",
        b"/registry/flowschemas/new\nline",
        b"/registry/flowschemas/tab\there",
        b"/registry/flowschemas/bin\xff\xfe",
    ];
    let printed = [
        "/registry/flowschemas/esc\\u{1b}[31mred",
        "/registry/flowschemas/new\\nline",
        "/registry/flowschemas/tab\\there",
        "/registry/flowschemas/bin\\xff\\xfe",
    ];
    let values: Vec<(&[u8], Vec<u8>)> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| (*key, stored_flow_schema(&format!("fs-{i}"))))
        .collect();
    put_all(&etcd, &values);
    let endpoint = etcd.endpoint.as_str();

    let text = apfkit(&["storage", "ls", "--endpoints", endpoint], b"");
    assert!(text.status.success(), "{}", stderr_of(&text));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(!text.contains('\x1b'), "{text:?}");
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), 4, "{text:?}");
    let mut shown: Vec<&str> = lines
        .iter()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    shown.sort();
    let mut expected = printed.to_vec();
    expected.sort();
    assert_eq!(shown, expected);
    assert!(
        lines.iter().all(|l| l.split('\t').count() == 5),
        "{lines:?}"
    );

    let json = success(
        &["storage", "ls", "--endpoints", endpoint, "-o", "json"],
        b"",
    );
    let listed: Vec<Value> = serde_json::from_slice(&json).unwrap();
    let binary = listed
        .iter()
        .find(|e| e["key"].as_str().unwrap().ends_with("bin\u{fffd}\u{fffd}"))
        .unwrap();
    assert_eq!(
        binary["keyBase64"],
        base64::engine::general_purpose::STANDARD.encode(keys[3])
    );
    assert_eq!(
        listed
            .iter()
            .filter(|e| e.get("keyBase64").is_some())
            .count(),
        1
    );

    // What ls prints reads back, and so does the base64 form.
    let name_of = |key: &[&str]| {
        let args = [
            &["storage", "get"],
            key,
            &["--endpoints", endpoint, "-o", "json"],
        ]
        .concat();
        let object: Value = serde_json::from_slice(&success(&args, b"")).unwrap();
        object["metadata"]["name"].clone()
    };
    for (i, printed) in printed.iter().enumerate() {
        let encoded = base64::engine::general_purpose::STANDARD.encode(keys[i]);
        assert_eq!(name_of(&[printed]), format!("fs-{i}"), "{printed}");
        assert_eq!(
            name_of(&["--key-base64", &encoded]),
            format!("fs-{i}"),
            "{printed}"
        );
    }
    // An error about a key stays on one line.
    let missing = apfkit(
        &[
            "storage",
            "get",
            "/registry/flowschemas/no\\nsuch\\u{1b}",
            "--endpoints",
            endpoint,
        ],
        b"",
    );
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(
        stderr_of(&missing),
        "error: /registry/flowschemas/no\\nsuch\\u{1b}: no such key\n"
    );
    let bad = apfkit(
        &["storage", "get", "/registry/x\\q", "--endpoints", endpoint],
        b"",
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr_of(&bad));

    // The migration report: one line per key, escaped.
    let report = apfkit(
        &[
            "storage",
            "migrate",
            "--to",
            "v1",
            "--dry-run",
            "--endpoints",
            endpoint,
        ],
        b"",
    );
    assert!(report.status.success(), "{}", stderr_of(&report));
    let report = String::from_utf8(report.stdout).unwrap();
    assert!(!report.contains('\x1b'), "{report:?}");
    let planned: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("would migrate "))
        .collect();
    assert_eq!(planned.len(), 4, "{report:?}");
    for printed in printed {
        assert!(
            planned.contains(&format!("would migrate {printed} from flowcontrol.apiserver.k8s.io/v1beta3 to flowcontrol.apiserver.k8s.io/v1").as_str()),
            "{report:?}"
        );
    }
}

/// Issue 24, items 5, 6 and 8: a dead endpoint beside a live one, in either order; a prefix
/// written as kube-apiserver accepts it; a migration that finds nothing warns; a flag's file
/// is bounded.
#[test]
fn endpoints_prefixes_and_files_as_an_operator_gives_them() {
    let etcd = Etcd::start();
    put_all(
        &etcd,
        &[("/registry/flowschemas/a", stored_flow_schema("a"))],
    );
    let dead = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    for run in 0..6 {
        let endpoints = if run % 2 == 0 {
            format!("{},{dead}", etcd.endpoint)
        } else {
            format!("{dead},{}", etcd.endpoint)
        };
        let output = apfkit(
            &["storage", "ls", "--endpoints", &endpoints, "--timeout", "2"],
            b"",
        );
        assert!(output.status.success(), "run {run}: {}", stderr_of(&output));
        assert!(String::from_utf8_lossy(&output.stdout).contains("/registry/flowschemas/a\t"));
    }

    for prefix in ["registry", "//registry", "/registry/./"] {
        let output = apfkit(
            &[
                "storage",
                "migrate",
                "--to",
                "v1",
                "--dry-run",
                "--prefix",
                prefix,
                "--endpoints",
                &etcd.endpoint,
            ],
            b"",
        );
        assert!(output.status.success(), "{prefix}: {}", stderr_of(&output));
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("1 to migrate"),
            "{prefix}"
        );
        assert!(
            stderr_of(&output).is_empty(),
            "{prefix}: {}",
            stderr_of(&output)
        );
    }
    let nothing = apfkit(
        &[
            "storage",
            "migrate",
            "--to",
            "v1",
            "--prefix",
            "/elsewhere",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
    );
    assert!(nothing.status.success());
    assert_eq!(
        stderr_of(&nothing),
        "warning: no FlowSchema, PriorityLevelConfiguration or APIService is stored under \
         /elsewhere/; is that kube-apiserver's --etcd-prefix?\n"
    );

    let zero = super::apfkit_within(
        &[
            "storage",
            "ls",
            "--cacert",
            "/dev/zero",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
        std::time::Duration::from_secs(20),
    );
    assert_eq!(zero.status.code(), Some(1));
    assert_eq!(
        stderr_of(&zero),
        "error: --cacert /dev/zero: larger than 4 MiB; not a PEM file\n"
    );
    let key_only = apfkit(
        &[
            "storage",
            "ls",
            "--key",
            "/dev/null",
            "--endpoints",
            &etcd.endpoint,
        ],
        b"",
    );
    assert_eq!(key_only.status.code(), Some(1));
    assert_eq!(
        stderr_of(&key_only),
        "error: a client certificate needs both --cert and --key\n"
    );
}
