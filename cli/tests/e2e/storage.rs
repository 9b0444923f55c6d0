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
