//! core/v1 Services and discovery.k8s.io/v1 EndpointSlices on `apfkit serve`, which
//! APIServices are resolved through: `kubectl create service` (protobuf, as client-go's
//! typed clients send it), `kubectl apply` of an EndpointSlice, kube-apiserver's defaults,
//! checks and columns, discovery of the core group, and loopback endpoints refused unless
//! `--allow-loopback-endpoints`.

use serde_json::Value;

use super::serve::Server;

const SLICE: &str = r#"{"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
  "metadata": {"name": "api-1", "namespace": "default",
               "labels": {"kubernetes.io/service-name": "api"}},
  "addressType": "IPv4",
  "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
  "ports": [{"name": "443-8443", "port": 8443}]}"#;

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn kubectl_creates_services_and_endpoint_slices_as_against_kube_apiserver() {
    let server = Server::start(&["--no-bootstrap", "--allow-loopback-endpoints"]);
    server.kubectl_ok(
        &["create", "service", "clusterip", "api", "--tcp=443:8443"],
        b"",
    );
    let service: Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "service", "api", "-o", "json"], b""))
            .unwrap();
    assert_eq!(service["apiVersion"], "v1");
    assert_eq!(
        service["spec"]["ports"],
        serde_json::json!([{"name": "443-8443", "port": 443, "protocol": "TCP",
                            "targetPort": 8443}])
    );
    assert_eq!(service["spec"]["sessionAffinity"], "None");
    assert_eq!(service["spec"]["type"], "ClusterIP");
    let table = server.kubectl_ok(&["get", "svc", "-o", "wide"], b"");
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines[0],
        [
            "NAME",
            "TYPE",
            "CLUSTER-IP",
            "EXTERNAL-IP",
            "PORT(S)",
            "AGE",
            "SELECTOR"
        ]
    );
    assert_eq!(
        lines[1][..5],
        ["api", "ClusterIP", "<none>", "<none>", "443/TCP"]
    );
    assert_eq!(lines[1][6], "app=api");

    server.kubectl_ok(&["apply", "-f", "-"], SLICE.as_bytes());
    let slices = server.kubectl_ok(&["get", "endpointslices"], b"");
    let row: Vec<&str> = slices.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..4], ["api-1", "IPv4", "8443", "127.0.0.1"]);

    // Discovery of the core group, as kubectl api-resources reads it.
    let resources = server.kubectl_ok(&["api-resources", "--no-headers"], b"");
    let names: Vec<Vec<&str>> = resources
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert!(
        names.contains(&vec!["services", "svc", "v1", "true", "Service"]),
        "{resources}"
    );
    assert!(
        names.contains(&vec![
            "endpointslices",
            "discovery.k8s.io/v1",
            "true",
            "EndpointSlice"
        ]),
        "{resources}"
    );
    let (code, versions) = server.curl_json("/api", &[], b"");
    assert_eq!(code, 200);
    assert_eq!(versions["versions"], serde_json::json!(["v1"]));
    let (code, list) = server.curl_json("/api/v1", &[], b"");
    assert_eq!(code, 200);
    assert_eq!(list["groupVersion"], "v1");
    // Nothing of the core group under /apis.
    let (code, _) = server.curl("/apis//v1/services", &[], b"");
    assert_eq!(code, 404);
}

#[test]
fn services_and_slices_kube_apiserver_refuses_are_refused_with_its_messages() {
    let server = Server::start(&["--no-bootstrap"]);
    // Loopback endpoints are kube-apiserver's refusal unless allowed.
    let refused = server.kubectl(&["apply", "-f", "-"], SLICE.as_bytes());
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains(
            "endpoints[0].addresses[0]: Invalid value: \"127.0.0.1\": may not be in the \
             loopback range (127.0.0.0/8, ::1/128)"
        ),
        "{}",
        stderr(&refused)
    );
    let (code, status) = server.curl_json(
        "/api/v1/namespaces/default/services",
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            "@-",
        ],
        br#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"Bad"},
             "spec":{"ports":[{"port":0}]}}"#,
    );
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    let causes: Vec<&str> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    // The target port defaults to the port, so it is refused too (as kube-apiserver does).
    assert_eq!(
        causes,
        [
            "metadata.name",
            "spec.ports[0].port",
            "spec.ports[0].targetPort"
        ],
        "{status}"
    );
    // Hostile bodies: garbage protobuf, a truncated message, a wrong type, deep nesting.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for (content_type, body) in [
        ("application/vnd.kubernetes.protobuf", b"k8s\0\x0a\x02v1\x12\x07Service\x1a\xff".to_vec()),
        ("application/vnd.kubernetes.protobuf", b"k8s\0garbage".to_vec()),
        ("application/json", br#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"x"},"spec":{"ports":"all"}}"#.to_vec()),
        ("application/json", deep.into_bytes()),
    ] {
        let (code, status) = server.curl_json(
            "/api/v1/namespaces/default/services",
            &["-X", "POST", "-H", &format!("Content-Type: {content_type}"), "--data-binary", "@-"],
            &body,
        );
        assert!(matches!(code, 400 | 415 | 422), "{code} {status}");
        assert_eq!(status["kind"], "Status");
    }
    let (_, list) = server.curl_json("/api/v1/services", &[], b"");
    assert_eq!(
        list["items"],
        serde_json::json!([]),
        "nothing stored half-way"
    );
}

/// A write to a Service's `/status` keeps what it changes of the metadata (kube's Service
/// status strategy resets only the spec), owned under the status subresource; a
/// deletecollection answers the objects as they were listed, as kube's `DeleteCollection`
/// does (the reference's answers, `every_verb_on_every_kind`).
#[test]
fn a_status_write_keeps_metadata_and_deletecollection_answers_the_listed_objects() {
    let server = Server::start(&[]);
    let services = "/api/v1/namespaces/default/services";
    for name in ["kept-a", "kept-b"] {
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"{name}",
            "labels":{{"case":"status"}}}},"spec":{{"clusterIP":"None","ports":[{{"port":80}}]}}}}"#
        );
        let (code, _) = server.send_json("POST", services, "application/json", body.as_bytes());
        assert_eq!(code, 201);
    }
    let (code, patched) = server.send_json(
        "PATCH",
        &format!("{services}/kept-a/status"),
        "application/merge-patch+json",
        br#"{"metadata":{"annotations":{"noted":"by-status"}},"spec":{"ports":[{"port":81}]}}"#,
    );
    assert_eq!(code, 200);
    assert_eq!(patched["metadata"]["annotations"]["noted"], "by-status");
    assert_eq!(patched["spec"]["ports"][0]["port"], 80, "the spec stays");
    let status_entry = patched["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["subresource"] == "status")
        .cloned()
        .unwrap();
    assert_eq!(
        status_entry["fieldsV1"],
        serde_json::json!({"f:metadata": {"f:annotations": {".": {}, "f:noted": {}}}})
    );
    let (_, listed) =
        server.curl_json(&format!("{services}?labelSelector=case%3Dstatus"), &[], b"");
    let (code, deleted) = server.curl_json(
        &format!("{services}?labelSelector=case%3Dstatus"),
        &["-X", "DELETE"],
        b"",
    );
    assert_eq!(code, 200);
    let versions = |list: &serde_json::Value| -> Vec<String> {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|item| {
                item["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(versions(&deleted), versions(&listed));
    assert_eq!(versions(&deleted).len(), 2);
}
