//! test/e2e/apimachinery/crd_publish_openapi.go, its nine [Conformance] tests (Release
//! v1.16), with kubectl 1.32 against `apfkit serve` on the embedded store and on etcd: custom
//! resources created, applied and deleted through kubectl, `kubectl explain` of them and
//! their fields, and each served version's definition in the OpenAPI v3 documents (upstream
//! reads `/openapi/v2`; kubectl reads v3, which is what this server publishes): present with
//! the CRD's schema once created, under a renamed version once renamed, gone once unserved or
//! deleted. Upstream's explain patterns are kubectl's OpenAPI v2 layout (`RESOURCE:`); kubectl
//! 1.32 explains from v3 (`FIELD:`), and the patterns here are upstream's with that word.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::serve::{NO_APF, Server, on_both_stores};

const SCHEMA_FOO: &str = r#"description: Foo CRD for Testing
type: object
properties:
  spec:
    type: object
    description: Specification of Foo
    properties:
      bars:
        description: List of Bars and their specs.
        type: array
        items:
          type: object
          required:
          - name
          properties:
            name:
              description: Name of Bar.
              type: string
            age:
              description: Age of Bar.
              type: string
            feeling:
              description: Whether Bar is feeling great.
              type: string
              enum:
              - Great
              - Down
            bazs:
              description: List of Bazs.
              items:
                type: string
              type: array
  status:
    description: Status of Foo
    type: object
    properties:
      bars:
        description: List of Bars and their statuses.
        type: array
        items:
          type: object
          properties:
            name:
              description: Name of Bar.
              type: string
            available:
              description: Whether the Bar is installed.
              type: boolean
            quxType:
              description: Indicates to external qux type.
              pattern: in-tree|out-of-tree
              type: string"#;

const SCHEMA_WALDO: &str = r#"description: Waldo CRD for Testing
type: object
properties:
  spec:
    description: Specification of Waldo
    type: object
    properties:
      dummy:
        description: Dummy property.
        type: object
  status:
    description: Status of Waldo
    type: object
    properties:
      bars:
        description: List of Bars and their statuses.
        type: array
        items:
          type: object"#;

const SCHEMA_PRESERVE_ROOT: &str = r#"description: preserve-unknown-properties at root for Testing
x-kubernetes-preserve-unknown-fields: true
type: object
properties:
  spec:
    description: Specification of Waldo
    type: object
    properties:
      dummy:
        description: Dummy property.
        type: object
  status:
    description: Status of Waldo
    type: object
    properties:
      bars:
        description: List of Bars and their statuses.
        type: array
        items:
          type: object"#;

const SCHEMA_PRESERVE_NESTED: &str = r#"description: preserve-unknown-properties in nested field for Testing
type: object
properties:
  spec:
    description: Specification of Waldo
    type: object
    x-kubernetes-preserve-unknown-fields: true
    properties:
      dummy:
        description: Dummy property.
        type: object
  status:
    description: Status of Waldo
    type: object
    properties:
      bars:
        description: List of Bars and their statuses.
        type: array
        items:
          type: object"#;

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("a schema")
}

/// A CRD made as upstream's `setupCRD` makes it (`test/utils/crd`): namespaced, in the group
/// `crd-publish-openapi-test-<suffix>.example.com`, the first version stored, every version
/// with `schema` (an open object when there is none).
struct TestCrd {
    name: String,
    group: String,
    kind: String,
    plural: String,
}

impl TestCrd {
    fn create(
        server: &Server,
        serial: usize,
        schema: Option<&str>,
        suffix: &str,
        versions: &[&str],
    ) -> TestCrd {
        let group = format!("crd-publish-openapi-test-{suffix}.example.com");
        let kind = format!("E2e-test-crd-publish-openapi-{serial}-crd");
        let plural = format!("e2e-test-crd-publish-openapi-{serial}-crds");
        let name = format!("{plural}.{group}");
        let schema = schema.map_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            yaml,
        );
        let versions: Vec<Value> = versions
            .iter()
            .enumerate()
            .map(|(i, v)| {
                json!({"name": v, "served": true, "storage": i == 0,
                                 "schema": {"openAPIV3Schema": schema}})
            })
            .collect();
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": group, "scope": "Namespaced", "versions": versions,
                     "names": {"kind": kind, "plural": plural,
                               "singular": format!("e2e-test-crd-publish-openapi-{serial}-crd"),
                               "listKind": format!("{kind}List")}},
        });
        server.kubectl_ok(&["create", "-f", "-"], crd.to_string().as_bytes());
        TestCrd {
            name,
            group,
            kind,
            plural,
        }
    }

    /// kube-openapi's `ToRESTFriendlyName` of the kind in `version`.
    fn definition(&self, version: &str) -> String {
        let reversed: Vec<&str> = self.group.rsplit('.').collect();
        format!("{}.{version}.{}", reversed.join("."), self.kind)
    }

    /// `metaPattern` with a name, as JSON fields.
    fn meta(&self, version: &str, name: &str) -> String {
        format!(
            r#""kind":"{}","apiVersion":"{}/{version}","metadata":{{"name":"{name}"}}"#,
            self.kind, self.group
        )
    }

    fn delete(&self, server: &Server) {
        server.kubectl_ok(&["delete", "crd", &self.name], b"");
    }
}

/// The definition `name` of the group-version document `path`, if it is there.
fn definition(server: &Server, path: &str, name: &str) -> Option<Value> {
    // A document not (yet) served is a bare 404, as kube-openapi's handler answers it.
    let (code, body) = server.curl(&format!("/openapi/v3/{path}"), &[], b"");
    if code != 200 {
        return None;
    }
    let document: Value = serde_json::from_slice(&body).expect("an OpenAPI document");
    document["components"]["schemas"].get(name).cloned()
}

/// upstream's `waitForDefinition`: the definition of `crd` in `version` is served with
/// `expect` (after upstream's `dropDefaults`: the properties and extension the server adds).
fn wait_for_definition(server: &Server, crd: &TestCrd, version: &str, expect: &Value) {
    let path = format!("apis/{}/{version}", crd.group);
    let name = crd.definition(version);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut last = None;
    while Instant::now() < deadline {
        if let Some(mut found) = definition(server, &path, &name) {
            if let Some(properties) = found["properties"].as_object_mut() {
                for added in ["metadata", "apiVersion", "kind"] {
                    properties.remove(added);
                }
            }
            if let Some(object) = found.as_object_mut() {
                object.remove("x-kubernetes-group-version-kind");
                // apiequality.Semantic takes an empty map for none.
                if object.get("properties") == Some(&json!({})) {
                    object.remove("properties");
                }
            }
            if &found == expect {
                return;
            }
            last = Some(found);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("definition {name:?} not served with {expect}; last: {last:?}");
}

/// upstream's `waitForDefinitionCleanup`: the definition is no longer served.
fn wait_for_definition_cleanup(server: &Server, crd: &TestCrd, version: &str) {
    let path = format!("apis/{}/{version}", crd.group);
    let name = crd.definition(version);
    let deadline = Instant::now() + Duration::from_secs(60);
    while definition(server, &path, &name).is_some() {
        assert!(
            Instant::now() < deadline,
            "definition {name:?} still served"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `kubectl explain NAME` matches upstream's `(?s)A.*B.*…` pattern: the parts in order.
fn explains(server: &Server, name: &str, parts: &[&str]) {
    let output = server.kubectl_ok(&["explain", name], b"");
    let mut rest = output.as_str();
    for part in parts {
        let found = rest
            .find(part)
            .unwrap_or_else(|| panic!("kubectl explain {name}: no {part:?} in order in {output}"));
        rest = &rest[found + part.len()..];
    }
}

/// kubectl create, delete, apply and delete of a custom resource, each of which must work.
fn create_and_apply(server: &Server, crd: &TestCrd, body: &str, name: &str) {
    for verb in ["create", "apply"] {
        server.kubectl_ok(&["--namespace=default", verb, "-f", "-"], body.as_bytes());
        server.kubectl_ok(&["--namespace=default", "delete", &crd.plural, name], b"");
    }
}

fn crd_publish_openapi_holds(server: &Server) {
    let foo_schema = yaml(SCHEMA_FOO);
    let waldo_schema = yaml(SCHEMA_WALDO);
    let mut serial = 0;
    let mut setup = |schema: Option<&str>, suffix: &str, versions: &[&str]| {
        serial += 1;
        let crd = TestCrd::create(server, serial, schema, suffix, versions);
        let expect = schema.map_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            yaml,
        );
        for version in versions {
            wait_for_definition(server, &crd, version, &expect);
        }
        crd
    };
    let cleanup = |crd: &TestCrd, versions: &[&str]| {
        crd.delete(server);
        for version in versions {
            wait_for_definition_cleanup(server, crd, version);
        }
    };

    // "works for CRD with validation schema"
    let crd = setup(Some(SCHEMA_FOO), "foo", &["v1"]);
    let valid = format!(
        r#"{{{},"spec":{{"bars":[{{"name":"test-bar"}}]}}}}"#,
        crd.meta("v1", "test-foo")
    );
    create_and_apply(server, &crd, &valid, "test-foo");
    explains(
        server,
        &crd.plural,
        &[
            "DESCRIPTION:",
            "Foo CRD for Testing",
            "FIELDS:",
            "apiVersion",
            "<string>",
            "APIVersion defines",
            "spec",
            "<Object>",
            "Specification of Foo",
        ],
    );
    explains(
        server,
        &format!("{}.metadata", crd.plural),
        &[
            "DESCRIPTION:",
            "Standard object's metadata",
            "FIELDS:",
            "creationTimestamp",
            "<string>",
            "CreationTimestamp is a timestamp",
        ],
    );
    explains(
        server,
        &format!("{}.spec", crd.plural),
        &[
            "DESCRIPTION:",
            "Specification of Foo",
            "FIELDS:",
            "bars",
            "<[]Object>",
            "List of Bars and their specs",
        ],
    );
    explains(
        server,
        &format!("{}.spec.bars", crd.plural),
        &[
            "FIELD:",
            "bars",
            "<[]Object>",
            "DESCRIPTION:",
            "List of Bars and their specs",
            "FIELDS:",
            "bazs",
            "<[]string>",
            "List of Bazs",
            "name",
            "<string>",
            "Name of Bar",
        ],
    );
    let missing = server.kubectl(&["explain", &format!("{}.spec.bars2", crd.plural)], b"");
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains(r#"field "bars2" does not exist"#));
    cleanup(&crd, &["v1"]);

    // "works for CRD without validation schema"
    let crd = setup(None, "empty", &["v1"]);
    let random = format!(
        r#"{{{},"a":{{"b":[{{"c":"d"}}]}}}}"#,
        crd.meta("v1", "test-cr")
    );
    create_and_apply(server, &crd, &random, "test-cr");
    explains(server, &crd.plural, &["DESCRIPTION:", "<empty>"]);
    cleanup(&crd, &["v1"]);

    // "works for CRD preserving unknown fields at the schema root"
    let crd = setup(Some(SCHEMA_PRESERVE_ROOT), "unknown-at-root", &["v1"]);
    let random = format!(
        r#"{{{},"a":{{"b":[{{"c":"d"}}]}}}}"#,
        crd.meta("v1", "test-cr")
    );
    create_and_apply(server, &crd, &random, "test-cr");
    explains(server, &crd.plural, &["KIND:", &crd.kind]);
    cleanup(&crd, &["v1"]);

    // "works for CRD preserving unknown fields in an embedded object"
    let crd = setup(Some(SCHEMA_PRESERVE_NESTED), "unknown-in-nested", &["v1"]);
    let random = format!(
        r#"{{{},"spec":{{"a":null,"b":[{{"c":"d"}}]}}}}"#,
        crd.meta("v1", "test-cr")
    );
    create_and_apply(server, &crd, &random, "test-cr");
    explains(
        server,
        &crd.plural,
        &[
            "DESCRIPTION:",
            "preserve-unknown-properties in nested field for Testing",
        ],
    );
    cleanup(&crd, &["v1"]);

    // "works for multiple CRDs of different groups"
    let crd_foo = setup(Some(SCHEMA_FOO), "foo", &["v1"]);
    let crd_waldo = setup(Some(SCHEMA_WALDO), "waldo", &["v1beta1"]);
    assert_ne!(crd_foo.group, crd_waldo.group);
    wait_for_definition(server, &crd_waldo, "v1beta1", &waldo_schema);
    wait_for_definition(server, &crd_foo, "v1", &foo_schema);
    cleanup(&crd_foo, &["v1"]);
    cleanup(&crd_waldo, &["v1beta1"]);

    // "works for multiple CRDs of same group but different versions"
    let multi = setup(Some(SCHEMA_FOO), "multi-ver", &["v2", "v3"]);
    cleanup(&multi, &["v2", "v3"]);
    let crd_foo = setup(Some(SCHEMA_FOO), "common-group", &["v4"]);
    let crd_waldo = setup(Some(SCHEMA_WALDO), "common-group", &["v5"]);
    assert_eq!(crd_foo.group, crd_waldo.group);
    wait_for_definition(server, &crd_waldo, "v5", &waldo_schema);
    wait_for_definition(server, &crd_foo, "v4", &foo_schema);
    cleanup(&crd_foo, &["v4"]);
    cleanup(&crd_waldo, &["v5"]);

    // "works for multiple CRDs of same group and version but different kinds"
    let crd_foo = setup(Some(SCHEMA_FOO), "common-group", &["v6"]);
    let crd_waldo = setup(Some(SCHEMA_WALDO), "common-group", &["v6"]);
    wait_for_definition(server, &crd_waldo, "v6", &waldo_schema);
    wait_for_definition(server, &crd_foo, "v6", &foo_schema);
    cleanup(&crd_foo, &["v6"]);
    cleanup(&crd_waldo, &["v6"]);

    // "updates the published spec when one version gets renamed"
    let multi = setup(Some(SCHEMA_FOO), "multi-ver", &["v2", "v3"]);
    let rename = r#"[{"op":"test","path":"/spec/versions/1/name","value":"v3"},{"op":"replace","path":"/spec/versions/1/name","value":"v4"}]"#;
    server.kubectl_ok(
        &["patch", "crd", &multi.name, "--type=json", "-p", rename],
        b"",
    );
    wait_for_definition(server, &multi, "v4", &foo_schema);
    wait_for_definition_cleanup(server, &multi, "v3");
    wait_for_definition(server, &multi, "v2", &foo_schema);
    cleanup(&multi, &["v2", "v4"]);

    // "removes definition from spec when one version gets changed to not be served"
    let crd = setup(Some(SCHEMA_FOO), "multi-to-single-ver", &["v5", "v6alpha1"]);
    let unserve = r#"[{"op":"replace","path":"/spec/versions/1/served","value":false}]"#;
    server.kubectl_ok(
        &["patch", "crd", &crd.name, "--type=json", "-p", unserve],
        b"",
    );
    wait_for_definition_cleanup(server, &crd, "v6alpha1");
    wait_for_definition(server, &crd, "v5", &foo_schema);
    cleanup(&crd, &["v5", "v6alpha1"]);
}

on_both_stores!(
    crd_publish_openapi_holds:
    crd_publish_openapi_go_with_kubectl_on_the_embedded_store,
    crd_publish_openapi_go_with_kubectl_on_etcd; NO_APF
);
