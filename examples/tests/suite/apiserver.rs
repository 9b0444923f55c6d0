//! `widgets-apiserver`, the Widget API served by Rust as an extension API server, against the
//! real kubectl: discovery, the versions converted through the hand-written hooks, merge
//! patches (strategic ones refused, as kube-apiserver refuses them for custom resources),
//! `apply` twice, `explain` from the CRD's schema, a delete that waits on a watch; and the
//! APIService objects that register it, valid as kube-aggregator validates them. kubectl must
//! be on the PATH (`.ci/run` installs it); a test that cannot run it fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use apfkit_test_support::process;
use base64::Engine as _;
use serde_json::Value;

/// A running `widgets-apiserver` on a free port; stopped when dropped.
struct Server {
    child: Child,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_widgets-apiserver"));
        command
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path());
        let (child, url) = apfkit_test_support::process::start_server(command);
        assert!(url.starts_with("https://127.0.0.1:"), "{url}");
        Server {
            child,
            kubeconfig: dir.path().join("kubeconfig"),
            dir,
        }
    }

    fn kubectl(&self, args: &[&str], stdin: &[u8]) -> Output {
        process::kubectl(&self.kubeconfig, args, stdin)
    }

    fn kubectl_ok(&self, args: &[&str], stdin: &[u8]) -> String {
        process::kubectl_ok(&self.kubeconfig, args, stdin)
    }

    fn get_json(&self, resource: &str) -> Value {
        let text = self.kubectl_ok(&["get", resource, "w", "-n", "team", "-o", "json"], b"");
        serde_json::from_str(&text).expect("JSON")
    }

    fn data_dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const OLD_WIDGET: &str = "\
apiVersion: example.com/v1alpha1
kind: Widget
metadata:
  name: w
  namespace: team
  annotations: {widgets.example.com/paused: 'true'}
spec:
  size: 3
  image: registry:5000/app:1.2
";

#[test]
fn kubectl_serves_every_version_of_the_widgets_through_the_hooks() {
    let server = Server::start();
    let resources = server.kubectl_ok(
        &[
            "api-resources",
            "--api-group",
            "example.com",
            "--no-headers",
        ],
        b"",
    );
    let row: Vec<&str> = resources.split_whitespace().collect();
    assert_eq!(
        row,
        ["widgets", "example.com/v1", "true", "Widget"],
        "{resources}"
    );

    server.kubectl_ok(&["create", "-f", "-"], OLD_WIDGET.as_bytes());
    // Stored in v1: the renamed field, the split image and the annotation became fields.
    let v1 = server.get_json("widgets.v1.example.com");
    assert_eq!(v1["apiVersion"], "example.com/v1");
    assert_eq!(v1["spec"]["replicas"], 3);
    assert_eq!(v1["spec"]["image"]["repository"], "registry:5000/app");
    assert_eq!(v1["spec"]["image"]["tag"], "1.2");
    assert_eq!(v1["spec"]["paused"], true);
    // And back, in every older version.
    for version in ["v1alpha1", "v1beta1"] {
        let old = server.get_json(&format!("widgets.{version}.example.com"));
        assert_eq!(old["apiVersion"], format!("example.com/{version}"));
        assert_eq!(old["spec"]["image"], "registry:5000/app:1.2", "{version}");
        assert_eq!(
            old["metadata"]["annotations"]["widgets.example.com/paused"], "true",
            "{version}"
        );
    }
    assert_eq!(
        server.get_json("widgets.v1alpha1.example.com")["spec"]["size"],
        3
    );
    assert_eq!(
        server.get_json("widgets.v1beta1.example.com")["spec"]["replicas"],
        3
    );

    // A merge patch in v1 shows in v1alpha1's renamed field.
    server.kubectl_ok(
        &[
            "patch",
            "widget",
            "w",
            "-n",
            "team",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"replicas":5}}"#,
        ],
        b"",
    );
    assert_eq!(
        server.get_json("widgets.v1alpha1.example.com")["spec"]["size"],
        5
    );
    // A strategic merge patch is refused for a custom resource, as kube-apiserver does.
    let strategic = server.kubectl(
        &[
            "patch",
            "widget",
            "w",
            "-n",
            "team",
            "--type",
            "strategic",
            "-p",
            r#"{"spec":{"replicas":6}}"#,
        ],
        b"",
    );
    assert!(!strategic.status.success());
    assert!(
        String::from_utf8_lossy(&strategic.stderr)
            .contains("the body of the request was in an unknown format"),
        "{}",
        String::from_utf8_lossy(&strategic.stderr)
    );

    // apply: created, then unchanged, then configured.
    let applied = "\
apiVersion: example.com/v1
kind: Widget
metadata: {name: applied, namespace: team}
spec: {replicas: 1, image: {repository: app}}
";
    assert!(
        server
            .kubectl_ok(&["apply", "-f", "-"], applied.as_bytes())
            .contains("created")
    );
    assert!(
        server
            .kubectl_ok(&["apply", "-f", "-"], applied.as_bytes())
            .contains("unchanged")
    );
    let changed = applied.replace("replicas: 1", "replicas: 2");
    assert!(
        server
            .kubectl_ok(&["apply", "-f", "-"], changed.as_bytes())
            .contains("configured")
    );

    // Server-side apply with the CRD's schema: a no-op the second time, a conflict for
    // another manager, and the fields of each manager.
    let server_side = "\
apiVersion: example.com/v1
kind: Widget
metadata: {name: ssa, namespace: team, labels: {tier: web}}
spec: {replicas: 2, image: {repository: app, tag: '1'}}
";
    for _ in 0..2 {
        assert!(
            server
                .kubectl_ok(
                    &["apply", "--server-side", "-f", "-"],
                    server_side.as_bytes()
                )
                .contains("serverside-applied")
        );
    }
    let scaled = server_side.replace("replicas: 2", "replicas: 3");
    let refused = server.kubectl(
        &[
            "apply",
            "--server-side",
            "--field-manager=scaler",
            "-f",
            "-",
        ],
        scaled.as_bytes(),
    );
    assert!(
        String::from_utf8_lossy(&refused.stderr)
            .contains("Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let object: Value = serde_json::from_str(&server.kubectl_ok(
        &[
            "get",
            "widget",
            "ssa",
            "-n",
            "team",
            "-o",
            "json",
            "--show-managed-fields",
        ],
        b"",
    ))
    .expect("JSON");
    assert_eq!(object["spec"]["replicas"], 2);
    assert_eq!(
        object["metadata"]["managedFields"][0]["fieldsV1"],
        serde_json::json!({
            "f:metadata": {"f:labels": {"f:tier": {}}},
            "f:spec": {"f:image": {"f:repository": {}, "f:tag": {}}, "f:replicas": {}},
        })
    );

    // explain reads the CRD's schema from the OpenAPI v3 documents.
    let explained = server.kubectl_ok(&["explain", "widgets.spec.image"], b"");
    assert!(explained.contains("repository"), "{explained}");

    // delete waits for the DELETED event of a watch on the name.
    let deleted = server.kubectl_ok(&["delete", "widget", "w", "-n", "team"], b"");
    assert!(deleted.contains("deleted"), "{deleted}");
    let gone = server.kubectl(&["get", "widget", "w", "-n", "team"], b"");
    assert!(String::from_utf8_lossy(&gone.stderr).contains("NotFound"));
}

#[test]
fn the_apiservices_register_the_server_as_kube_aggregator_validates_them() {
    let server = Server::start();
    let output = Command::new(env!("CARGO_BIN_EXE_widgets-apiserver"))
        .args([
            "--print-apiservice",
            "widgets-system/widgets-apiserver",
            "--data-dir",
        ])
        .arg(server.data_dir())
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let list: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let ca_pem = std::fs::read_to_string(server.data_dir().join("ca.crt")).expect("the CA");
    let items = list["items"].as_array().expect("items");
    let names: Vec<&str> = items
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "v1alpha1.example.com",
            "v1beta1.example.com",
            "v1.example.com"
        ]
    );
    for item in items {
        // The caBundle is the CA that signed the serving certificate.
        let bundle = base64::engine::general_purpose::STANDARD
            .decode(item["spec"]["caBundle"].as_str().expect("a caBundle"))
            .expect("base64");
        assert_eq!(String::from_utf8(bundle).unwrap(), ca_pem);
        assert_eq!(item["spec"]["service"]["name"], "widgets-apiserver");
        // Valid as kube-aggregator's validation has it.
        let (hubs, _) = apfkit_scheme::scheme::SCHEME
            .to_hub_value(item, apfkit_scheme::scheme::UnknownFields::Strict)
            .expect("an APIService");
        let errors = apfkit_scheme::validation::validate(&hubs[0], &Default::default());
        assert!(errors.is_empty(), "{errors:?}");
    }
    // A Service that is not NAMESPACE/NAME is a usage error.
    let refused = Command::new(env!("CARGO_BIN_EXE_widgets-apiserver"))
        .args(["--print-apiservice", "no-slash", "--data-dir"])
        .arg(server.data_dir())
        .output()
        .expect("runs");
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("expected NAMESPACE/NAME"));
}

/// The server checks widgets as kube-apiserver checks custom resources: the CRD's CEL rule
/// (no `latest` tag) on a create in v1, and its transition rule (the repository never
/// changes) on an update, each refused with kube-apiserver's 422 message; a widget sent in
/// v1alpha1, whose schema has no such rules, is taken.
#[test]
fn widgets_are_refused_by_the_crds_rules_as_kube_apiserver_refuses_them() {
    let server = Server::start();
    let latest = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: team}\n\
                  spec: {replicas: 1, image: {repository: registry/app, tag: latest}}\n";
    let refused = server.kubectl(&["create", "-f", "-"], latest.as_bytes());
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains(r#"The Widget "w" is invalid: spec.image.tag: Invalid value: pin a tag other than latest"#),
        "{stderr}"
    );

    server.kubectl_ok(
        &["create", "-f", "-"],
        latest.replace("latest", "'1.2'").as_bytes(),
    );
    let moved = server.kubectl(
        &[
            "patch",
            "widget.v1.example.com",
            "w",
            "-n",
            "team",
            "--type",
            "merge",
            "-p",
            r#"{"spec": {"image": {"repository": "registry/other"}}}"#,
        ],
        b"",
    );
    assert!(!moved.status.success());
    let stderr = String::from_utf8_lossy(&moved.stderr);
    assert!(
        stderr.contains(r#"spec.image.repository: Invalid value: "registry/other": the repository cannot change"#),
        "{stderr}"
    );
    server.kubectl_ok(
        &[
            "patch",
            "widget.v1.example.com",
            "w",
            "-n",
            "team",
            "--type",
            "merge",
            "-p",
            r#"{"spec": {"image": {"tag": "1.3"}}}"#,
        ],
        b"",
    );
}
