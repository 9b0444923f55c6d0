//! Users' CustomResourceDefinitions served by `apfkit serve` (issue 29), driven by the real
//! kubectl: a CRD created through the API and then its objects, in every served version, with
//! kube-apiserver's pruning, defaults, schema and CEL validation, status subresource and
//! printer columns; the widgets example's CRD given with `--crd`, its versions converted by
//! the example's own webhook; CRDs kube-apiserver would refuse, refused the same way.

use std::time::Duration;

use serde_json::Value;

use super::serve::{NO_APF, Server};

/// Two versions with one schema and `None` conversion, a status subresource, printer
/// columns, a default and a CEL rule.
const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets, shortNames: [gd]}
  scope: Namespaced
  versions:
    - name: v1beta1
      served: true
      storage: false
      schema: &schema
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-validations:
                - rule: "self.minReplicas <= self.replicas"
                  message: replicas must be at least minReplicas
              properties:
                replicas: {type: integer, default: 1}
                minReplicas: {type: integer, default: 0}
                color: {type: string, enum: [red, blue]}
            status:
              type: object
              properties:
                ready: {type: integer}
                selector: {type: string}
      subresources: &subresources
        status: {}
        scale: {specReplicasPath: .spec.replicas, statusReplicasPath: .status.ready, labelSelectorPath: .status.selector}
      additionalPrinterColumns: &columns
        - {name: Replicas, type: integer, jsonPath: .spec.replicas}
        - {name: Color, type: string, jsonPath: .spec.color}
        - {name: Ready, type: integer, jsonPath: .status.ready}
    - name: v1
      served: true
      storage: true
      schema: *schema
      subresources: *subresources
      additionalPrinterColumns: *columns
"#;

/// Waits until `done` says so, within 20 s (the controller works after the write that
/// starts it); `what` names what was waited for.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let limit = Duration::from_secs(20);
    apfkit_test_support::process::eventually(limit, what, || done().then_some(()));
}

/// Waits until `kubectl get <resource>` works: the CRD's resource is served.
fn wait_served(server: &Server, resource: &str) {
    eventually(&format!("{resource} served"), || {
        server
            .kubectl(&["get", resource, "-A"], b"")
            .status
            .success()
    });
}

/// `kubectl get ARGS -o json`, read.
fn get_json(server: &Server, args: &[&str]) -> Value {
    let args = [&["get"][..], args, &["-o", "json"]].concat();
    json_of(&server.kubectl_ok(&args, b""))
}

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn stderr_of(output: &std::process::Output) -> String {
    assert!(!output.status.success(), "expected a failure");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_crd_applied_through_the_api_serves_its_objects_in_every_version() {
    let server = Server::start(&[NO_APF, "--no-bootstrap"]);
    server.kubectl_ok(&["apply", "-f", "-"], GADGETS.as_bytes());
    wait_served(&server, "gadgets");

    // The CRD's status, as kube-apiserver's controllers write it.
    let crd = get_json(&server, &["crd", "gadgets.example.com"]);
    let status = &crd["status"];
    assert_eq!(status["storedVersions"], serde_json::json!(["v1"]));
    assert_eq!(status["acceptedNames"]["listKind"], "GadgetList");
    assert_eq!(status["acceptedNames"]["singular"], "gadget");
    let conditions: Vec<(&str, &str)> = status["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        conditions,
        [("NamesAccepted", "True"), ("Established", "True")]
    );
    assert!(
        server
            .kubectl_ok(&["api-resources", "--api-group", "example.com"], b"")
            .contains("gadgets")
    );

    // Created in v1beta1 with an unknown field: refused in strict mode, pruned otherwise;
    // defaults applied.
    let gadget = "apiVersion: example.com/v1beta1\nkind: Gadget\nmetadata: {name: g1, namespace: default}\nspec: {color: red, bogus: 1}\n";
    let refused = stderr_of(&server.kubectl(&["create", "-f", "-"], gadget.as_bytes()));
    assert!(
        refused.contains(r#"strict decoding error: unknown field "spec.bogus""#),
        "{refused}"
    );
    let created = server.kubectl(&["create", "--validate=warn", "-f", "-"], gadget.as_bytes());
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    assert!(
        String::from_utf8_lossy(&created.stderr).contains(r#"unknown field "spec.bogus""#),
        "the warning: {}",
        String::from_utf8_lossy(&created.stderr)
    );
    for version in ["v1beta1", "v1"] {
        let object = get_json(
            &server,
            &[
                &format!("gadgets.{version}.example.com"),
                "g1",
                "-n",
                "default",
            ],
        );
        assert_eq!(object["apiVersion"], format!("example.com/{version}"));
        assert_eq!(
            object["spec"],
            serde_json::json!({"color": "red", "replicas": 1, "minReplicas": 0})
        );
    }

    // The schema and the CEL rule, with kube-apiserver's messages.
    let bad_enum = stderr_of(&server.kubectl(
        &[
            "patch",
            "gadget",
            "g1",
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"spec":{"color":"green"}}"#,
        ],
        b"",
    ));
    assert!(
        bad_enum
            .contains(r#"spec.color: Unsupported value: "green": supported values: "red", "blue""#),
        "{bad_enum}"
    );
    let bad_rule = stderr_of(&server.kubectl(
        &[
            "patch",
            "gadget",
            "g1",
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"spec":{"minReplicas":3}}"#,
        ],
        b"",
    ));
    assert!(
        bad_rule.contains(r#"The Gadget "g1" is invalid: spec: Invalid value: replicas must be at least minReplicas"#),
        "{bad_rule}"
    );

    // The status subresource: only /status writes the status, and it writes only that.
    server.kubectl_ok(
        &[
            "patch",
            "gadget",
            "g1",
            "-n",
            "default",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"ready":1},"spec":{"replicas":5}}"#,
        ],
        b"",
    );
    server.kubectl_ok(
        &[
            "patch",
            "gadget",
            "g1",
            "-n",
            "default",
            "--type=merge",
            "-p",
            r#"{"status":{"ready":9},"spec":{"replicas":2}}"#,
        ],
        b"",
    );
    let object = get_json(&server, &["gd", "g1", "-n", "default"]);
    assert_eq!(object["status"], serde_json::json!({"ready": 1}));
    assert_eq!(object["spec"]["replicas"], 2);

    // The printer columns.
    let table = server.kubectl_ok(&["get", "gadgets", "-n", "default"], b"");
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines[0], ["NAME", "REPLICAS", "COLOR", "READY"], "{table}");
    assert_eq!(lines[1], ["g1", "2", "red", "1"], "{table}");

    // The scale subresource: an autoscaling/v1 Scale of the replica paths; kubectl scale
    // writes the spec path, a stale resourceVersion is a conflict.
    server.kubectl_ok(
        &["scale", "gadget", "g1", "-n", "default", "--replicas=4"],
        b"",
    );
    let scale_path = "/apis/example.com/v1/namespaces/default/gadgets/g1/scale";
    let scale = json_of(&server.kubectl_ok(&["get", "--raw", scale_path], b""));
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"], serde_json::json!({"replicas": 4}));
    assert_eq!(scale["status"], serde_json::json!({"replicas": 1}));
    let object = get_json(&server, &["gd", "g1", "-n", "default"]);
    assert_eq!(object["spec"]["replicas"], 4);
    let mut stale = scale.clone();
    stale["metadata"]["resourceVersion"] = "1".into();
    stale["spec"]["replicas"] = 5.into();
    let conflict = stderr_of(&server.kubectl(
        &["replace", "--raw", scale_path, "-f", "-"],
        stale.to_string().as_bytes(),
    ));
    assert!(
        conflict.contains("the object has been modified"),
        "{conflict}"
    );
    let discovery = json_of(&server.kubectl_ok(&["get", "--raw", "/apis/example.com/v1"], b""));
    let names: Vec<&str> = discovery["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gadgets", "gadgets/status", "gadgets/scale"]);

    // Deleting the CRD withdraws the resource and deletes its objects.
    server.kubectl_ok(&["delete", "crd", "gadgets.example.com"], b"");
    eventually("gadgets withdrawn", || {
        !server
            .kubectl(&["get", "gadgets", "-A"], b"")
            .status
            .success()
    });
    server.kubectl_ok(&["apply", "-f", "-"], GADGETS.as_bytes());
    wait_served(&server, "gadgets");
    let listed = get_json(&server, &["gadgets", "-A"]);
    assert_eq!(listed["items"], serde_json::json!([]));
}

#[test]
fn crds_that_kube_apiserver_refuses_are_refused_with_its_causes() {
    let server = Server::start(&[NO_APF, "--no-bootstrap"]);
    // Two storage versions, and a name that is not <plural>.<group>.
    let bad = GADGETS
        .replace("storage: false", "storage: true")
        .replace("name: gadgets.example.com", "name: gadgets.example.org");
    let refused = stderr_of(&server.kubectl(&["apply", "-f", "-"], bad.as_bytes()));
    assert!(
        refused.contains(r#"The CustomResourceDefinition "gadgets.example.org" is invalid"#),
        "{refused}"
    );
    assert!(
        refused.contains("metadata.name: Invalid value"),
        "{refused}"
    );
    assert!(
        refused.contains("spec.versions: Invalid value"),
        "{refused}"
    );
    // Nothing was stored, nothing is served.
    let listed = get_json(&server, &["crds"]);
    assert_eq!(listed["items"], serde_json::json!([]));
    // A CRD file given with --crd that is not valid stops the server at start, naming it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    std::fs::write(&file, &bad).unwrap();
    let output = super::apfkit_within(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--no-bootstrap",
            "--data-dir",
            dir.path().to_str().unwrap(),
            "--crd",
            file.to_str().unwrap(),
        ],
        b"",
        Duration::from_secs(60),
    );
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("bad.yaml"), "{stderr}");
    assert!(stderr.contains("spec.versions: Invalid value"), "{stderr}");
}

/// The widgets example's conversion webhook, served on loopback with a certificate of its own
/// until dropped; answers the CRD of the example pointing at it.
struct WidgetsWebhook {
    runtime: Option<tokio::runtime::Runtime>,
    crd: String,
    _dir: tempfile::TempDir,
}

impl WidgetsWebhook {
    fn start() -> WidgetsWebhook {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let (cert, key_file, pem) = super::serve::loopback_certificate(dir.path());
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let config = apfkit_https::webhook::WebhookConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            &cert,
            &key_file,
        );
        let webhook = runtime
            .block_on(apfkit_https::webhook::Webhook::bind(
                config,
                &apfkit_example_widgets::api::SCHEME,
            ))
            .unwrap();
        let address = webhook.local_addr();
        runtime.spawn(webhook.serve(std::future::pending::<()>()));
        let bundle = base64::engine::general_purpose::STANDARD.encode(pem);
        let crd = include_str!("../../../examples/widgets.crd.yaml").replace(
            "service: {namespace: widgets-system, name: widgets-webhook, path: /convert}",
            &format!("{{url: \"https://{address}/convert\", caBundle: {bundle}}}"),
        );
        assert!(
            crd.contains("caBundle"),
            "the example's clientConfig changed"
        );
        WidgetsWebhook {
            runtime: Some(runtime),
            crd,
            _dir: dir,
        }
    }

    /// Stops serving: conversions fail from now on.
    fn stop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

#[test]
fn the_widgets_crd_given_on_the_command_line_converts_through_its_webhook() {
    let mut webhook = WidgetsWebhook::start();
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("widgets.crd.yaml");
    std::fs::write(&crd, &webhook.crd).unwrap();
    let server = Server::start(&[NO_APF, "--no-bootstrap", "--crd", crd.to_str().unwrap()]);
    wait_served(&server, "widgets");

    // Written in v1alpha1 (size, image as one string), read in every version: the webhook
    // renames size to replicas and splits the image in v1.
    let widget = "apiVersion: example.com/v1alpha1\nkind: Widget\nmetadata: {name: w1, namespace: default, labels: {app: demo}}\nspec: {size: 3, image: \"reg/app:1.2\"}\n";
    server.kubectl_ok(&["apply", "-f", "-"], widget.as_bytes());
    let read = |version: &str| {
        get_json(
            &server,
            &[
                &format!("widgets.{version}.example.com"),
                "w1",
                "-n",
                "default",
            ],
        )
    };
    let v1 = read("v1");
    assert_eq!(v1["apiVersion"], "example.com/v1");
    assert_eq!(v1["spec"]["replicas"], 3);
    assert_eq!(
        v1["spec"]["image"],
        serde_json::json!({"repository": "reg/app", "tag": "1.2"})
    );
    assert_eq!(v1["metadata"]["labels"], serde_json::json!({"app": "demo"}));
    let v1beta1 = read("v1beta1");
    assert_eq!(
        v1beta1["spec"],
        serde_json::json!({"replicas": 3, "image": "reg/app:1.2"})
    );
    let v1alpha1 = read("v1alpha1");
    assert_eq!(
        v1alpha1["spec"],
        serde_json::json!({"size": 3, "image": "reg/app:1.2"})
    );
    assert_eq!(v1alpha1["metadata"]["uid"], v1["metadata"]["uid"]);

    // v1's rules hold for objects written in v1; a list converts every item.
    let latest = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w2, namespace: default}\nspec: {image: {repository: reg/app, tag: latest}}\n";
    let refused = stderr_of(&server.kubectl(&["apply", "-f", "-"], latest.as_bytes()));
    assert!(
        refused.contains("spec.image.tag: Invalid value")
            && refused.contains("pin a tag other than latest"),
        "{refused}"
    );
    let listed = get_json(&server, &["widgets.v1alpha1.example.com", "-A"]);
    assert_eq!(listed["items"][0]["spec"]["size"], 3);

    // The webhook gone, a conversion fails as kube-apiserver fails it (answers written
    // before are kept per stored revision, so the object is one not read in that version
    // yet); the storage version still reads.
    let fresh = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w3, namespace: default}\nspec: {image: {repository: reg/app, tag: \"2\"}}\n";
    server.kubectl_ok(&["apply", "-f", "-"], fresh.as_bytes());
    webhook.stop();
    let failed = stderr_of(&server.kubectl(
        &[
            "get",
            "widgets.v1alpha1.example.com",
            "w3",
            "-n",
            "default",
            "-o",
            "json",
        ],
        b"",
    ));
    assert!(
        failed.contains("conversion webhook for example.com/v1, Kind=Widget failed: Post"),
        "{failed}"
    );
    // In Go's client's words, as kube-apiserver says it, and no more (issue 39).
    assert!(failed.contains(": connect: connection refused"), "{failed}");
    assert!(!failed.contains("os error"), "{failed}");
    assert_eq!(read("v1")["spec"]["replicas"], 3);
}

#[test]
fn on_etcd_crds_and_their_objects_are_kept_as_kube_apiserver_keeps_them() {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    let dir = tempfile::tempdir().unwrap();
    let crd = dir.path().join("gadgets.yaml");
    std::fs::write(&crd, GADGETS).unwrap();
    let data = dir.path().join("data");
    let args = [
        NO_APF,
        "--no-bootstrap",
        "--etcd-servers",
        &etcd.endpoint,
        "--crd",
        crd.to_str().unwrap(),
    ];
    {
        let server = Server::start_in(data.to_str().unwrap(), &args);
        wait_served(&server, "gadgets");
        let gadget = "apiVersion: example.com/v1beta1\nkind: Gadget\nmetadata: {name: g1, namespace: default}\nspec: {replicas: 2}\n";
        server.kubectl_ok(&["create", "-f", "-"], gadget.as_bytes());
    }
    let read = |key: &str| -> Value {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let value = runtime.block_on(async {
            let mut client = etcd_client::Client::connect([etcd.endpoint.as_str()], None)
                .await
                .unwrap();
            let got = client.get(key, None).await.unwrap();
            got.kvs().first().map(|kv| kv.value().to_vec())
        });
        let value = value.unwrap_or_else(|| panic!("{key} is not stored"));
        assert_eq!(
            value.last(),
            Some(&b'\n'),
            "JSON with a final newline, as Go writes it"
        );
        serde_json::from_slice(&value).unwrap()
    };
    let stored = read("/registry/example.com/gadgets/default/g1");
    assert_eq!(
        stored["apiVersion"], "example.com/v1",
        "stored in the storage version"
    );
    assert_eq!(
        stored["spec"],
        serde_json::json!({"replicas": 2, "minReplicas": 0})
    );
    assert!(stored["metadata"].get("resourceVersion").is_none());
    let definition =
        read("/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.com");
    assert_eq!(definition["kind"], "CustomResourceDefinition");
    assert_eq!(
        definition["status"]["storedVersions"],
        serde_json::json!(["v1"])
    );

    // Started again on the same etcd (without --crd), the CRD is served from what is stored.
    let server = Server::start_in(data.to_str().unwrap(), &args[..4]);
    wait_served(&server, "gadgets");
    let object = get_json(
        &server,
        &["gadgets.v1beta1.example.com", "g1", "-n", "default"],
    );
    assert_eq!(object["spec"]["replicas"], 2);
}

/// The stored `apiVersion` of every gadget in etcd, sorted by key.
fn stored_gadget_versions(endpoint: &str) -> Vec<String> {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let mut client = etcd_client::Client::connect([endpoint], None)
            .await
            .unwrap();
        let options = etcd_client::GetOptions::new().with_prefix();
        let got = client
            .get("/registry/example.com/gadgets/", Some(options))
            .await
            .unwrap();
        got.kvs()
            .iter()
            .map(|kv| {
                let value: Value = serde_json::from_slice(kv.value()).unwrap();
                value["apiVersion"].as_str().unwrap().to_owned()
            })
            .collect()
    })
}

#[test]
fn migrate_api_rewrites_a_crds_objects_then_trims_its_stored_versions() {
    let etcd = apfkit_test_support::etcd::Etcd::start();
    let server = Server::start(&[NO_APF, "--no-bootstrap", "--etcd-servers", &etcd.endpoint]);
    server.kubectl_ok(&["apply", "-f", "-"], GADGETS.as_bytes());
    wait_served(&server, "gadgets");
    let mut objects = String::new();
    for i in 0..30 {
        objects.push_str(&format!(
            "---\napiVersion: example.com/v1\nkind: Gadget\nmetadata: {{name: g{i}, namespace: default}}\nspec: {{replicas: {}}}\n",
            i % 5 + 1
        ));
    }
    server.kubectl_ok(&["create", "-f", "-"], objects.as_bytes());
    // The storage version moves to v1beta1: stored versions lists both, objects stay in v1.
    let moved = GADGETS
        .replacen("storage: false", "storage: STORAGE", 1)
        .replacen("storage: true", "storage: false", 1)
        .replacen("storage: STORAGE", "storage: true", 1);
    server.kubectl_ok(&["apply", "-f", "-"], moved.as_bytes());
    let stored_versions = || {
        let crd = get_json(&server, &["crd", "gadgets.example.com"]);
        crd["status"]["storedVersions"].clone()
    };
    eventually("stored versions [v1, v1beta1]", || {
        stored_versions() == serde_json::json!(["v1", "v1beta1"])
    });
    assert!(
        stored_gadget_versions(&etcd.endpoint)
            .iter()
            .all(|v| v == "example.com/v1")
    );

    let output = super::apfkit_within(
        &[
            "storage",
            "migrate-api",
            "--resource",
            "gadgets.example.com",
            "--page-size",
            "7",
            "--kubeconfig",
            server.kubeconfig().to_str().unwrap(),
        ],
        b"",
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("gadgets.example.com: 30 listed, 30 migrated"),
        "{stdout}"
    );
    assert!(
        stdout.contains("gadgets.example.com: v1 removed from the CRD's stored versions"),
        "{stdout}"
    );
    let versions = stored_gadget_versions(&etcd.endpoint);
    assert_eq!(versions.len(), 30);
    assert!(
        versions.iter().all(|v| v == "example.com/v1beta1"),
        "{versions:?}"
    );
    assert_eq!(stored_versions(), serde_json::json!(["v1beta1"]));

    // A storage version that changed since the run started: the stored versions are left.
    server.kubectl_ok(&["apply", "-f", "-"], GADGETS.as_bytes());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let error = runtime.block_on(async {
        let kubeconfig = kube::config::Kubeconfig::read_from(server.kubeconfig()).unwrap();
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .unwrap();
        let client = kube::Client::try_from(config).unwrap();
        apfkit_migrator::trim_stored_versions(&client, "gadgets.example.com", "v1beta1")
            .await
            .unwrap_err()
    });
    assert!(
        error
            .to_string()
            .contains("changed during the run (v1beta1 to v1)"),
        "{error}"
    );
    eventually("stored versions [v1beta1, v1]", || {
        stored_versions() == serde_json::json!(["v1beta1", "v1"])
    });
}

const PYTHON_CUSTOM_OBJECTS: &str = r#"
import json, sys
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
api = client.CustomObjectsApi()
group, plural = "example.com", "gadgets"
api.create_namespaced_custom_object(group, "v1beta1", "default", plural, {
    "apiVersion": "example.com/v1beta1", "kind": "Gadget",
    "metadata": {"name": "from-python"}, "spec": {"replicas": 2},
})
read = api.get_namespaced_custom_object(group, "v1", "default", plural, "from-python")
api.patch_namespaced_custom_object_scale(group, "v1", "default", plural, "from-python", {"spec": {"replicas": 3}})
scale = api.get_namespaced_custom_object_scale(group, "v1", "default", plural, "from-python")
events = []
stream = watch.Watch()
for event in stream.stream(api.list_namespaced_custom_object, group, "v1", "default", plural, timeout_seconds=10):
    events.append([event["type"], event["object"]["spec"]["replicas"]])
    if event["type"] == "ADDED":
        api.delete_namespaced_custom_object(group, "v1", "default", plural, "from-python")
    if event["type"] == "DELETED":
        stream.stop()
print(json.dumps({"apiVersion": read["apiVersion"], "spec": read["spec"], "scale": scale["spec"], "events": events}))
"#;

#[test]
fn the_python_client_reads_writes_scales_and_watches_custom_objects() {
    let server = Server::start(&[NO_APF, "--no-bootstrap"]);
    server.kubectl_ok(&["apply", "-f", "-"], GADGETS.as_bytes());
    wait_served(&server, "gadgets");
    let answer = super::serve_clients::run_python(&server, PYTHON_CUSTOM_OBJECTS);
    assert_eq!(answer["apiVersion"], "example.com/v1");
    assert_eq!(
        answer["spec"],
        serde_json::json!({"replicas": 2, "minReplicas": 0})
    );
    assert_eq!(answer["scale"], serde_json::json!({"replicas": 3}));
    assert_eq!(
        answer["events"],
        serde_json::json!([["ADDED", 3], ["DELETED", 3]])
    );
}

#[test]
fn the_guides_serving_commands_work_as_written() {
    let (stdout, _) =
        super::serve::run_guide_section("custom-resources.md", "Serving custom resources");
    let page = apfkit_test_support::guide::text("custom-resources.md");
    // The guide shows exactly what the commands print.
    assert!(page.contains(&format!("```text\n{stdout}```")), "{stdout}");
}

/// The APIServices `apfkit serve` holds now, by name: (label, group priority, version
/// priority, service, available).
fn api_services(
    server: &Server,
) -> std::collections::BTreeMap<String, (String, i64, i64, String, String)> {
    let list: serde_json::Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "apiservices", "-o", "json"], b""))
            .unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let available = item["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == "Available")
                .map(|c| {
                    format!(
                        "{}/{}",
                        c["status"].as_str().unwrap_or(""),
                        c["reason"].as_str().unwrap_or("")
                    )
                })
                .unwrap_or_default();
            (
                item["metadata"]["name"].as_str().unwrap().to_owned(),
                (
                    item["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    item["spec"]["groupPriorityMinimum"]
                        .as_i64()
                        .unwrap_or_default(),
                    item["spec"]["versionPriority"].as_i64().unwrap_or_default(),
                    item["spec"]["service"]["name"]
                        .as_str()
                        .unwrap_or("Local")
                        .to_owned(),
                    available,
                ),
            )
        })
        .collect()
}

/// kube-apiserver's autoregistration (kube-aggregator's `autoregister` controller): a local
/// APIService for each built-in group-version served, with kube's priorities, synced once on
/// start (one deleted stays deleted until the next start); one for each CRD group-version,
/// kept as desired and removed with the CRD (`crdRegistrationController`).
#[test]
fn local_apiservices_are_registered_for_the_groups_served() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap().to_owned();
    let server = Server::start_in(&data, &["--no-bootstrap"]);
    let onstart = |priority: i64, version: i64| {
        (
            "onstart".to_owned(),
            priority,
            version,
            "Local".to_owned(),
            "True/Local".to_owned(),
        )
    };
    eventually("the local APIServices registered and available", || {
        let listed = api_services(&server);
        listed.get("v1.rbac.authorization.k8s.io") == Some(&onstart(17000, 15))
            && listed.get("v1.") == Some(&onstart(18000, 1))
    });
    let listed = api_services(&server);
    assert_eq!(
        listed["v1.flowcontrol.apiserver.k8s.io"],
        onstart(16100, 21)
    );
    // kube-apiserver 1.37 serves flowcontrol's v1 alone, and so does apfkit by default.
    assert!(
        !listed.contains_key("v1beta3.flowcontrol.apiserver.k8s.io"),
        "{listed:?}"
    );
    assert_eq!(listed["v1.discovery.k8s.io"], onstart(16200, 15));
    assert_eq!(listed["v1.apiextensions.k8s.io"], onstart(16700, 15));
    assert_eq!(listed["v1.authorization.k8s.io"], onstart(17600, 15));
    assert!(
        !listed.contains_key("v1.apiregistration.k8s.io"),
        "{listed:?}"
    );

    // A CRD's versions: registered always, stomped back when changed, gone with the CRD.
    server.kubectl_ok(&["apply", "-f", "-"], GADGETS.as_bytes());
    let crd = || {
        (
            "true".to_owned(),
            1000,
            100,
            "Local".to_owned(),
            "True/Local".to_owned(),
        )
    };
    eventually("the CRD's APIServices", || {
        let listed = api_services(&server);
        listed.get("v1.example.com") == Some(&crd())
            && listed.get("v1beta1.example.com") == Some(&crd())
    });
    server.kubectl_ok(
        &[
            "patch",
            "apiservice",
            "v1.example.com",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"versionPriority":7}}"#,
        ],
        b"",
    );
    eventually("the CRD's APIService stomped back", || {
        api_services(&server)
            .get("v1.example.com")
            .is_some_and(|s| s.2 == 100)
    });
    server.kubectl_ok(&["delete", "crd", "gadgets.example.com"], b"");
    eventually("the CRD's APIServices removed", || {
        let listed = api_services(&server);
        !listed.contains_key("v1.example.com") && !listed.contains_key("v1beta1.example.com")
    });

    // An on-start one deleted stays deleted; the next start brings it back.
    server.kubectl_ok(&["delete", "apiservice", "v1.discovery.k8s.io"], b"");
    std::thread::sleep(Duration::from_secs(2));
    assert!(!api_services(&server).contains_key("v1.discovery.k8s.io"));
    drop(server);
    let again = Server::start_in(&data, &["--no-bootstrap"]);
    eventually("v1.discovery.k8s.io registered again", || {
        api_services(&again).get("v1.discovery.k8s.io") == Some(&onstart(16200, 15))
    });
}
