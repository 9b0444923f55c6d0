//! `widgets-apiserver` behind `apfkit serve`'s aggregator, as kube-aggregator puts an
//! extension server behind kube-apiserver: a Service without a selector and an EndpointSlice
//! written by hand point at it on loopback, its APIServices (with the CA of its certificate)
//! are created with kubectl, the aggregator finds it available and proxies widgets' requests
//! to it as the front proxy, with the user in X-Remote-* headers; stopped, it is unavailable
//! (upstream's reason) and requests get 503; started again it recovers; a wrong caBundle
//! fails its availability probe as kube-aggregator 1.36+'s does. kubectl must be on the PATH.

use std::time::Duration;

use apfkit_test_support::process::{curl_answer, kubectl, kubectl_ok, split_head};
use serde_json::Value;

use crate::aggregation::{
    available, eventually, free_port, register, start_aggregator, start_aggregator_with,
    start_widgets, start_widgets_with, stop,
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
    let message = failed_discovery_check(&kubeconfig, "v1.example.com unavailable");
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

    // A caBundle of another authority: kube-aggregator 1.36+ probes as its proxy connects,
    // verifying the certificate, so the APIService is unavailable with Go's x509 words and
    // its requests are answered 503.
    let other_ca = dir.path().join("other");
    apfkit_apiserver::tls::ensure(&other_ca, &[], apfkit_apiserver::tls::Flush::Never).unwrap();
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
    let message =
        failed_discovery_check(&kubeconfig, "v1.example.com unavailable for its caBundle");
    assert!(
        message.ends_with(
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        ),
        "{message}"
    );
    // Until the proxy's table has the condition (it follows the APIService's watch, as
    // kube-aggregator's handler follows its informer), a request still goes to the server and
    // is answered 503 with the handshake's error; then with the aggregator's own words.
    let failed = eventually(Duration::from_secs(20), "a 503 of the aggregator", || {
        let answer = aggregator.curl("/apis/example.com/v1/namespaces/default/widgets");
        assert!(answer.starts_with("HTTP/2 503"), "{answer}");
        answer
            .ends_with("\n\nservice unavailable\n")
            .then_some(answer)
    });
    assert!(failed.contains("content-type: text/plain"), "{failed}");
    stop(widgets);
}

/// Waits (45 s at most, `waiting_for` naming why) until `v1.example.com` is unavailable, and
/// holds its reason to kube-aggregator's for a failed probe; the condition's message.
fn failed_discovery_check(kubeconfig: &std::path::Path, waiting_for: &str) -> String {
    let (status, reason, message) = eventually(Duration::from_secs(45), waiting_for, || {
        Some(available(kubeconfig, "v1.example.com")).filter(|c| c.0 == "False")
    });
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "FailedDiscoveryCheck")
    );
    message
}

/// kubectl as `bob` (impersonated by the administrator), reading what it says.
fn as_bob(kubeconfig: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["--as", "bob"];
    all.extend_from_slice(args);
    kubectl(kubeconfig, &all, b"")
}

/// A GET sent straight to the extension server as the front proxy would send it, for
/// `user`: the extension's own answer (status line, headers, body).
fn as_front_proxy(
    aggregator_data: &std::path::Path,
    widgets_data: &std::path::Path,
    port: u16,
    path: &str,
    user: &str,
) -> String {
    let certificate = aggregator_data.join("front-proxy-client.crt");
    let key = aggregator_data.join("front-proxy-client.key");
    curl_answer(
        &widgets_data.join("ca.crt"),
        Some((&certificate, &key)),
        &[
            "-H",
            &format!("X-Remote-User: {user}"),
            "-H",
            "X-Remote-Group: system:authenticated",
            &format!("https://127.0.0.1:{port}{path}"),
        ],
    )
}

/// The extension server authorizes each request by asking the aggregator
/// (`--authorization-kubeconfig`, a SubjectAccessReview as `apfkit-user`, which kube's
/// `system:auth-delegator` lets create reviews): the aggregator's RBAC decides there too,
/// whoever forwards the request, and without the delegator's binding requests fail at the
/// extension with kube's 500. Through the aggregator kubectl applies, explains (the
/// extension's OpenAPI merged), watches and patches widgets as bob.
#[test]
fn widgets_are_authorized_by_the_aggregators_rbac_through_delegation() {
    let dir = tempfile::tempdir().unwrap();
    let aggregator = start_aggregator(&dir.path().join("apfkit"));
    let kubeconfig = aggregator.kubeconfig.clone();
    let data = aggregator.data().to_owned();
    // The extension's identity towards the aggregator: the data directory's plain user.
    let delegation = dir.path().join("delegation.kubeconfig");
    std::fs::copy(&kubeconfig, &delegation).unwrap();
    kubectl_ok(&delegation, &["config", "use-context", "apfkit-user"], b"");
    kubectl_ok(
        &kubeconfig,
        &[
            "create",
            "clusterrolebinding",
            "widgets-apiserver-auth-delegator",
            "--clusterrole=system:auth-delegator",
            "--user=apfkit-user",
        ],
        b"",
    );
    let widgets_data = dir.path().join("widgets");
    std::fs::create_dir(&widgets_data).unwrap();
    let port = free_port();
    let _widgets = start_widgets_with(
        &widgets_data,
        port,
        &data.join("front-proxy-ca.crt"),
        &[
            "--authorization-kubeconfig".as_ref(),
            delegation.as_os_str(),
        ],
    );
    register(&kubeconfig, &widgets_data, port);
    eventually(Duration::from_secs(20), "v1.example.com available", || {
        Some(available(&kubeconfig, "v1.example.com")).filter(|c| c.0 == "True")
    });

    // kubectl apply checks the widget with the extension's OpenAPI, read through the
    // aggregator's index; the administrator (system:masters) needs no review.
    let widget = r#"{"apiVersion":"example.com/v1","kind":"Widget",
        "metadata":{"name":"w1","namespace":"default"},"spec":{"replicas":2}}"#;
    eventually(Duration::from_secs(20), "widgets' OpenAPI merged", || {
        let output = kubectl(&kubeconfig, &["apply", "-f", "-"], widget.as_bytes());
        output.status.success().then_some(())
    });
    let index: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &["get", "--raw", "/openapi/v3"],
        b"",
    ))
    .unwrap();
    assert!(
        index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .starts_with("/openapi/v3/apis/example.com/v1?hash=")
    );
    assert!(index["paths"]["apis/flowcontrol.apiserver.k8s.io/v1"].is_object());
    let explained = kubectl_ok(&kubeconfig, &["explain", "widgets.spec.replicas"], b"");
    assert!(explained.contains("GROUP:      example.com"), "{explained}");
    assert!(explained.contains("replicas"), "{explained}");
    // A field the schema does not have is refused on kubectl's side.
    let unknown = r#"{"apiVersion":"example.com/v1","kind":"Widget",
        "metadata":{"name":"w2","namespace":"default"},"spec":{"replicas":2,"colour":"red"}}"#;
    let refused = kubectl(&kubeconfig, &["apply", "-f", "-"], unknown.as_bytes());
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("unknown field \"spec.colour\""),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );

    kubectl_ok(
        &kubeconfig,
        &[
            "create",
            "clusterrole",
            "widget-editor",
            "--verb=get,list,watch,patch",
            "--resource=widgets.example.com",
        ],
        b"",
    );
    kubectl_ok(
        &kubeconfig,
        &[
            "create",
            "clusterrolebinding",
            "widget-editor",
            "--clusterrole=widget-editor",
            "--user=bob",
        ],
        b"",
    );

    eventually(Duration::from_secs(20), "bob's role in force", || {
        let asked = as_bob(
            &kubeconfig,
            &[
                "auth",
                "can-i",
                "get",
                "widgets.example.com",
                "-n",
                "default",
            ],
        );
        asked.status.success().then_some(())
    });
    // Sent straight to the extension as the front proxy would send it: the aggregator's
    // RBAC decides, through the review.
    let path = "/apis/example.com/v1/namespaces/default/widgets/w1";
    let allowed = as_front_proxy(&data, &widgets_data, port, path, "bob");
    assert!(allowed.starts_with("HTTP/2 200"), "{allowed}");
    let carol = as_front_proxy(&data, &widgets_data, port, path, "carol");
    assert!(carol.starts_with("HTTP/2 403"), "{carol}");
    let status: Value = serde_json::from_str(carol.split("\n\n").nth(1).unwrap()).unwrap();
    assert_eq!(
        status["message"],
        "widgets.example.com \"w1\" is forbidden: User \"carol\" cannot get resource \
         \"widgets\" in API group \"example.com\" in the namespace \"default\""
    );

    // bob through the aggregator: a watch streamed back while a patch goes out.
    let mut watch = std::process::Command::new("kubectl");
    watch
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", dir.path())
        .args([
            "--as",
            "bob",
            "get",
            "widgets",
            "-n",
            "default",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut watching = watch.spawn().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut stdout = watching.stdout.take().unwrap();
    let reader = {
        let seen = seen.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(read @ 1..) = std::io::Read::read(&mut stdout, &mut chunk) {
                seen.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..read]));
            }
        })
    };
    eventually(Duration::from_secs(20), "the watch's ADDED event", || {
        seen.lock().unwrap().contains("\"ADDED\"").then_some(())
    });
    let patched = as_bob(
        &kubeconfig,
        &[
            "patch",
            "widget",
            "w1",
            "-n",
            "default",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"replicas":5}}"#,
        ],
    );
    assert!(
        patched.status.success(),
        "{}",
        String::from_utf8_lossy(&patched.stderr)
    );
    eventually(
        Duration::from_secs(20),
        "the watch's MODIFIED event",
        || seen.lock().unwrap().contains("\"MODIFIED\"").then_some(()),
    );
    let _ = watching.kill();
    let _ = watching.wait();
    reader.join().unwrap();
    assert!(
        seen.lock().unwrap().contains("\"replicas\":5}"),
        "{}",
        seen.lock().unwrap()
    );
    let got = as_bob(
        &kubeconfig,
        &[
            "get",
            "widget",
            "w1",
            "-n",
            "default",
            "-o",
            "jsonpath={.spec.replicas}",
        ],
    );
    assert_eq!(String::from_utf8_lossy(&got.stdout), "5");
    // What bob's role does not grant is refused at the aggregator, in kube's words.
    let deleted = as_bob(&kubeconfig, &["delete", "widget", "w1", "-n", "default"]);
    assert!(!deleted.status.success());
    assert!(
        String::from_utf8_lossy(&deleted.stderr).contains(
            "widgets.example.com \"w1\" is forbidden: User \"bob\" cannot delete resource \
             \"widgets\" in API group \"example.com\" in the namespace \"default\""
        ),
        "{}",
        String::from_utf8_lossy(&deleted.stderr)
    );

    // Without the delegator's binding the extension cannot ask: kube's 500, in its words.
    kubectl_ok(
        &kubeconfig,
        &[
            "delete",
            "clusterrolebinding",
            "widgets-apiserver-auth-delegator",
        ],
        b"",
    );
    eventually(Duration::from_secs(20), "the binding gone", || {
        let asked = kubectl(
            &kubeconfig,
            &[
                "auth",
                "can-i",
                "create",
                "subjectaccessreviews.authorization.k8s.io",
                "--as",
                "apfkit-user",
            ],
            b"",
        );
        (!asked.status.success()).then_some(())
    });
    let failed = as_front_proxy(&data, &widgets_data, port, path, "dave");
    assert!(failed.starts_with("HTTP/2 500"), "{failed}");
    assert!(
        failed.ends_with(&format!(
            "\n\nInternal Server Error: \"{path}\": subjectaccessreviews.authorization.k8s.io \
             is forbidden: User \"apfkit-user\" cannot create resource \"subjectaccessreviews\" \
             in API group \"authorization.k8s.io\" at the cluster scope\n"
        )),
        "{failed}"
    );
}

/// curl as the data directory's plain user (`user.crt`): status line and headers, body.
fn curl_as_user(data: &std::path::Path, url: &str, args: &[&str]) -> (String, String) {
    let (certificate, key) = (data.join("user.crt"), data.join("user.key"));
    let mut args = args.to_vec();
    args.push(url);
    let answer = curl_answer(&data.join("ca.crt"), Some((&certificate, &key)), &args);
    let (head, body) = split_head(&answer);
    (head.to_owned(), body.to_owned())
}

/// Proxied requests go through the aggregator's flow control and audit as its own do
/// (issue 40 §5, `DefaultBuildHandlerChain` with the proxy innermost): classified (their
/// answers name the level), limited (a level whose one seat a stalled proxied PUT holds
/// rejects the next with 429), and released once a long-running one has started (watches
/// through the proxy hold no seat); each is audited at the aggregator with what APF did.
#[test]
fn proxied_requests_are_flow_controlled_and_audited_at_the_aggregator() {
    let dir = tempfile::tempdir().unwrap();
    let apfkit = dir.path().join("apfkit");
    let widgets_data = dir.path().join("widgets");
    std::fs::create_dir(&widgets_data).unwrap();
    let port = free_port();
    {
        // The configuration first: read when the server starts.
        let first = start_aggregator(&apfkit);
        let kubeconfig = first.kubeconfig.clone();
        kubectl_ok(
            &kubeconfig,
            &["apply", "-f", "-"],
            apfkit_test_support::flow_control::ONE_SEAT_FOR_THE_PLAIN_USER.as_bytes(),
        );
        kubectl_ok(
            &kubeconfig,
            &[
                "create",
                "clusterrolebinding",
                "plain-admin",
                "--clusterrole=cluster-admin",
                "--user=apfkit-user",
            ],
            b"",
        );
        // Its certificates made by its first start, naming the Service.
        let widgets = start_widgets(&widgets_data, port, &apfkit.join("front-proxy-ca.crt"));
        register(&kubeconfig, &widgets_data, port);
        stop(widgets);
    }
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
    )
    .unwrap();
    let log = dir.path().join("audit.log");
    let aggregator = start_aggregator_with(&apfkit, |config| {
        config.bootstrap = true;
        config.max_requests_inflight = 10;
        config.max_mutating_requests_inflight = 0;
        config.audit.policy_file = Some(policy.clone());
        config.audit.log_path = Some(log.clone());
    });
    let kubeconfig = aggregator.kubeconfig.clone();
    let data = aggregator.data().to_owned();
    let _widgets = start_widgets(&widgets_data, port, &data.join("front-proxy-ca.crt"));
    eventually(Duration::from_secs(20), "v1.example.com available", || {
        Some(available(&kubeconfig, "v1.example.com")).filter(|c| c.0 == "True")
    });
    let widgets = format!(
        "{}/apis/example.com/v1/namespaces/default/widgets",
        aggregator.url
    );
    let widget = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"replicas":1}}"#;
    let (head, _) = curl_as_user(
        &data,
        &widgets,
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            widget,
        ],
    );
    assert!(head.starts_with("HTTP/2 201"), "{head}");
    let tiny: Value = serde_json::from_str(&kubectl_ok(
        &kubeconfig,
        &["get", "prioritylevelconfiguration", "tiny", "-o", "json"],
        b"",
    ))
    .unwrap();
    let tiny_uid = tiny["metadata"]["uid"].as_str().unwrap();
    assert!(
        head.to_lowercase()
            .contains(&format!("x-kubernetes-pf-prioritylevel-uid: {tiny_uid}")),
        "{head}"
    );

    // A PUT whose body never comes holds tiny's one seat at the aggregator...
    let host = aggregator.url.trim_start_matches("https://").to_owned();
    let mut stalled = std::process::Command::new("openssl")
        .args(["s_client", "-quiet", "-connect", &host, "-CAfile"])
        .arg(data.join("ca.crt"))
        .arg("-cert")
        .arg(data.join("user.crt"))
        .arg("-key")
        .arg(data.join("user.key"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let head_only = format!(
        "PUT /apis/example.com/v1/namespaces/default/widgets/w1 HTTP/1.1\r\nHost: {host}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{"
    );
    std::io::Write::write_all(stalled.stdin.as_mut().unwrap(), head_only.as_bytes()).unwrap();
    // Executing (the administrator's reads of the dump are exempt and take no seat of
    // tiny's), before any GET of the plain user's could take the seat first.
    eventually(
        Duration::from_secs(20),
        "the stalled PUT in tiny's seat",
        || {
            let dump = kubectl_ok(
                &kubeconfig,
                &[
                    "get",
                    "--raw",
                    "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1",
                ],
                b"",
            );
            dump.lines()
                .any(|row| row.starts_with("tiny") && row.contains("update"))
                .then_some(())
        },
    );
    let rejected = eventually(
        Duration::from_secs(20),
        "a 429 while the seat is held",
        || {
            let (head, body) = curl_as_user(&data, &format!("{widgets}/w1"), &[]);
            head.starts_with("HTTP/2 429").then_some(body)
        },
    );
    assert_eq!(rejected, "Too many requests, please try again later.\n");
    // ... and frees it when it goes.
    let _ = stalled.kill();
    let _ = stalled.wait();
    eventually(Duration::from_secs(20), "the seat free again", || {
        curl_as_user(&data, &format!("{widgets}/w1"), &[])
            .0
            .starts_with("HTTP/2 200")
            .then_some(())
    });

    // Watches through the proxy, more than the level has seats, hold none once started (one
    // at a time: a watch holds its seat while it starts, as kube's do); one over HTTP/1.1,
    // two over HTTP/2, each streamed its events.
    let streamed = |i: usize| dir.path().join(format!("watch-{i}.json"));
    let mut watches = Vec::new();
    for i in 0..3 {
        let watch = std::process::Command::new("curl")
            .args(["-sSN", "--max-time", "30", "--cacert"])
            .arg(data.join("ca.crt"))
            .arg("--cert")
            .arg(data.join("user.crt"))
            .arg("--key")
            .arg(data.join("user.key"))
            .arg(if i == 0 { "--http1.1" } else { "--http2" })
            .arg(format!("{widgets}?watch=1"))
            .stdout(std::fs::File::create(streamed(i)).unwrap())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        watches.push(watch);
        eventually(Duration::from_secs(20), "the watch's ADDED event", || {
            let events = std::fs::read_to_string(streamed(i)).unwrap_or_default();
            assert!(
                !events.starts_with("Too many requests"),
                "watch {i}: {events}"
            );
            events
                .contains(
                    r#"{"type":"ADDED","object":{"apiVersion":"example.com/v1","kind":"Widget""#,
                )
                .then_some(())
        });
    }
    let (head, _) = curl_as_user(&data, &format!("{widgets}/w1"), &[]);
    assert!(
        head.starts_with("HTTP/2 200"),
        "a GET beside three watches: {head}"
    );
    for mut watch in watches {
        let _ = watch.kill();
        let _ = watch.wait();
    }

    // Audited at the aggregator: who, what, and what APF did.
    let events: Vec<Value> = eventually(Duration::from_secs(20), "the proxied GET audited", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let events: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        events
            .iter()
            .any(|e| {
                e["verb"] == "get"
                    && e["objectRef"]["resource"] == "widgets"
                    && e["stage"] == "ResponseComplete"
                    && e["responseStatus"]["code"] == 200
            })
            .then_some(events)
    });
    let get = events
        .iter()
        .find(|e| {
            e["verb"] == "get"
                && e["objectRef"]["resource"] == "widgets"
                && e["stage"] == "ResponseComplete"
                && e["responseStatus"]["code"] == 200
        })
        .unwrap();
    assert_eq!(get["user"]["username"], "apfkit-user");
    assert_eq!(get["objectRef"]["apiGroup"], "example.com");
    assert_eq!(get["objectRef"]["name"], "w1");
    assert_eq!(
        get["annotations"]["flowcontrol.apfkit/priority-level"], "tiny",
        "{get}"
    );
    let refused = events
        .iter()
        .find(|e| e["objectRef"]["resource"] == "widgets" && e["responseStatus"]["code"] == 429)
        .expect("the 429 audited");
    assert_eq!(refused["user"]["username"], "apfkit-user");
}
