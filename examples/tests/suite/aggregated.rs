//! `widgets-apiserver` behind `apfkit serve`'s aggregator, as kube-aggregator puts an
//! extension server behind kube-apiserver: a Service without a selector and an EndpointSlice
//! written by hand point at it on loopback, its APIServices (with the CA of its certificate)
//! are created with kubectl, the aggregator finds it available and proxies widgets' requests
//! to it as the front proxy, with the user in X-Remote-* headers; stopped, it is unavailable
//! (upstream's reason) and requests get 503; started again it recovers; a wrong caBundle
//! fails as kube-aggregator's transport fails. kubectl must be on the PATH.

use std::time::Duration;

use serde_json::Value;

use crate::aggregation::{
    available, eventually, free_port, kubectl, kubectl_ok, register, start_aggregator,
    start_widgets, stop,
};

#[test]
fn widgets_are_served_through_the_aggregator_while_their_server_is_available() {
    let dir = tempfile::tempdir().unwrap();
    let aggregator = start_aggregator(&dir.path().join("apfkit"));
    let kubeconfig = aggregator.kubeconfig.clone();
    let front_proxy_ca = dir.path().join("apfkit/front-proxy-ca.crt");
    let widgets_data = dir.path().join("widgets");
    std::fs::create_dir(&widgets_data).unwrap();
    let port = free_port();
    let widgets = start_widgets(&widgets_data, port, &front_proxy_ca);

    // The Service, an EndpointSlice pointing at the server, and its APIServices.
    register(&kubeconfig, &widgets_data, port);
    // Available, with upstream's reason, as `kubectl get apiservices` shows it.
    let condition = eventually(Duration::from_secs(20), "v1.example.com available", || {
        Some(available(&kubeconfig, "v1.example.com")).filter(|c| c.0 == "True")
    });
    assert_eq!(
        condition,
        ("True".into(), "Passed".into(), "all checks passed".into())
    );
    let table = kubectl_ok(&kubeconfig, &["get", "apiservices", "v1.example.com"], b"");
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row[..3],
        ["v1.example.com", "widgets-system/widgets-apiserver", "True"]
    );

    // Requests of the group go to the extension server, through the proxy.
    let widget = r#"{"apiVersion":"example.com/v1","kind":"Widget",
        "metadata":{"name":"w1","namespace":"default"},"spec":{"replicas":2}}"#;
    let created = kubectl_ok(
        &kubeconfig,
        &[
            "create",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets",
            "-f",
            "-",
        ],
        widget.as_bytes(),
    );
    let created: Value = serde_json::from_str(&created).unwrap();
    assert_eq!(created["metadata"]["name"], "w1");
    let listed: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/example.com/v1beta1/namespaces/default/widgets",
        ],
        b"",
    ))
    .unwrap();
    assert_eq!(listed["kind"], "WidgetList");
    assert_eq!(listed["items"][0]["metadata"]["name"], "w1");
    let discovery: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &["get", "--raw", "/apis/example.com/v1"],
        b"",
    ))
    .unwrap();
    assert_eq!(discovery["groupVersion"], "example.com/v1");

    // Discovery merged: kubectl finds widgets as it would behind kube-apiserver.
    let found = eventually(Duration::from_secs(20), "widgets discovered", || {
        let output = kubectl(
            &kubeconfig,
            &["get", "widgets", "-n", "default", "-o", "name"],
            b"",
        );
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
    });
    assert_eq!(found.trim(), "widget.example.com/w1");
    let resources = kubectl_ok(
        &kubeconfig,
        &["api-resources", "--api-group", "example.com"],
        b"",
    );
    assert!(resources.contains("widgets"), "{resources}");
    let groups: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &["get", "--raw", "/apis/example.com"],
        b"",
    ))
    .unwrap();
    assert_eq!(groups["preferredVersion"]["groupVersion"], "example.com/v1");

    // Stopped: unavailable with upstream's reason, and its requests answered 503.
    stop(widgets);
    let (status, reason, message) = eventually(
        Duration::from_secs(45),
        "v1.example.com unavailable",
        || Some(available(&kubeconfig, "v1.example.com")).filter(|c| c.0 == "False"),
    );
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "FailedDiscoveryCheck")
    );
    assert!(
        message.starts_with(&format!(
            "failing or missing response from https://127.0.0.1:{port}/apis/example.com/v1: \
             Get \"https://127.0.0.1:{port}/apis/example.com/v1\": dial tcp 127.0.0.1:{port}: \
             connect: connection refused"
        )),
        "{message}"
    );
    let refused = kubectl(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets",
        ],
        b"",
    );
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("(ServiceUnavailable)"), "{said}");
    // The answer itself, as kube-aggregator writes it (`http.Error`).
    let answer = aggregator.curl("/apis/example.com/v1/namespaces/default/widgets");
    assert!(answer.starts_with("HTTP/2 503"), "{answer}");
    assert!(
        answer
            .to_lowercase()
            .contains("content-type: text/plain; charset=utf-8"),
        "{answer}"
    );
    assert!(answer.ends_with("\n\nservice unavailable\n"), "{answer}");

    // Discovery keeps what it read, marked stale.
    let aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let stale = eventually(Duration::from_secs(20), "example.com stale", || {
        let answer = aggregator.curl_accepting("/apis", aggregated);
        let body = answer.split("\n\n").nth(1).unwrap_or_default().to_owned();
        let list: Value = serde_json::from_str(&body).ok()?;
        let group = list["items"]
            .as_array()?
            .iter()
            .find(|item| item["metadata"]["name"] == "example.com")?
            .clone();
        (group["versions"][0]["freshness"] == "Stale").then_some(group)
    });
    assert_eq!(stale["versions"][0]["version"], "v1");
    assert_eq!(stale["versions"][0]["resources"][0]["resource"], "widgets");

    // Started again: available, and the widget is still there.
    let widgets = start_widgets(&widgets_data, port, &front_proxy_ca);
    eventually(
        Duration::from_secs(45),
        "v1.example.com available again",
        || Some(available(&kubeconfig, "v1.example.com")).filter(|c| c.0 == "True"),
    );
    let again = kubectl_ok(
        &kubeconfig,
        &[
            "get",
            "--raw",
            "/apis/example.com/v1/namespaces/default/widgets/w1",
        ],
        b"",
    );
    assert!(again.contains("\"w1\""), "{again}");

    // A caBundle of another authority: the discovery probe does not verify certificates
    // (kube-aggregator's neither), so it stays available, but proxied requests fail TLS.
    let other_ca = dir.path().join("other");
    apfkit_apiserver::tls::ensure(&other_ca, &[]).unwrap();
    let other_pem = std::fs::read_to_string(other_ca.join("ca.crt")).unwrap();
    use base64::Engine as _;
    let patch = serde_json::json!({"spec": {"caBundle":
        base64::engine::general_purpose::STANDARD.encode(other_pem)}});
    kubectl_ok(
        &kubeconfig,
        &[
            "patch",
            "apiservice",
            "v1.example.com",
            "--type",
            "merge",
            "-p",
            &patch.to_string(),
        ],
        b"",
    );
    let failed = eventually(Duration::from_secs(20), "a TLS failure", || {
        let answer = aggregator.curl("/apis/example.com/v1/namespaces/default/widgets");
        answer.contains("x509").then_some(answer)
    });
    assert!(failed.starts_with("HTTP/2 503"), "{failed}");
    assert!(
        failed.ends_with(
            "\n\ntls: failed to verify certificate: x509: certificate signed by unknown \
             authority\n"
        ),
        "{failed}"
    );
    stop(widgets);
}
