//! Users' CustomResourceDefinitions served by `apfkit serve` (issue 29), driven by the real
//! kubectl: a CRD created through the API and then its objects, in every served version, with
//! kube-apiserver's pruning, defaults, schema and CEL validation, status subresource and
//! printer columns; the widgets example's CRD given with `--crd`, its versions converted by
//! the example's own webhook; CRDs kube-apiserver would refuse, refused the same way.

use std::time::{Duration, Instant};

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
      subresources: {status: {}}
      additionalPrinterColumns: &columns
        - {name: Replicas, type: integer, jsonPath: .spec.replicas}
        - {name: Color, type: string, jsonPath: .spec.color}
        - {name: Ready, type: integer, jsonPath: .status.ready}
    - name: v1
      served: true
      storage: true
      schema: *schema
      subresources: {status: {}}
      additionalPrinterColumns: *columns
"#;

/// Waits until `kubectl get <resource>` works: the CRD's resource is served.
fn wait_served(server: &Server, resource: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let output = server.kubectl(&["get", resource, "-A"], b"");
        if output.status.success() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{resource} not served: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
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
    let crd =
        json_of(&server.kubectl_ok(&["get", "crd", "gadgets.example.com", "-o", "json"], b""));
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
        let object = json_of(&server.kubectl_ok(
            &[
                "get",
                &format!("gadgets.{version}.example.com"),
                "g1",
                "-n",
                "default",
                "-o",
                "json",
            ],
            b"",
        ));
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
    let object =
        json_of(&server.kubectl_ok(&["get", "gd", "g1", "-n", "default", "-o", "json"], b""));
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

    // Deleting the CRD withdraws the resource and deletes its objects.
    server.kubectl_ok(&["delete", "crd", "gadgets.example.com"], b"");
    let deadline = Instant::now() + Duration::from_secs(20);
    while server
        .kubectl(&["get", "gadgets", "-A"], b"")
        .status
        .success()
    {
        assert!(Instant::now() < deadline, "gadgets still served");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.kubectl_ok(&["apply", "-f", "-"], GADGETS.as_bytes());
    wait_served(&server, "gadgets");
    let listed = json_of(&server.kubectl_ok(&["get", "gadgets", "-A", "-o", "json"], b""));
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
    let listed = json_of(&server.kubectl_ok(&["get", "crds", "-o", "json"], b""));
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
