//! The CRD corpora of apfkit's own tests, held to the reference: every CustomResourceDefinition
//! of the generator's fixtures, the widgets example and kubectl-validate's corpus created on
//! each server (accepted or refused alike, in the same words), then every custom resource of
//! those corpora created in the CRDs' kinds (defaults, pruning, schema and CEL errors), and
//! the CRDs deleted.

use std::path::{Path, PathBuf};

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const NAMESPACE: &str = "corpora";

/// The corpus files with CustomResourceDefinitions, from the workspace's root.
const DEFINITIONS: &[&str] = &[
    "codegen/tests/fixtures/crds/certificates.cert-manager.io.yaml",
    "codegen/tests/fixtures/crds/edge-cases.yaml",
    "codegen/tests/fixtures/crds/foos.tests.example.com.yaml",
    "codegen/tests/fixtures/crds/httproutes.gateway.networking.k8s.io.yaml",
    "codegen/tests/fixtures/crds/operations.ops.crossplane.io.yaml",
    "codegen/tests/fixtures/crds/podmonitors.monitoring.coreos.com.yaml",
    "codegen/tests/fixtures/crds/servers.policy.linkerd.io.yaml",
    "examples/widgets.crd.yaml",
    "crd/tests/fixtures/kubectl-validate/crds/cel_basic.yaml",
    "crd/tests/fixtures/kubectl-validate/crds/cert-manager.crds.yaml",
    "crd/tests/fixtures/kubectl-validate/crds/dnsendpoints.yaml",
    "crd/tests/fixtures/kubectl-validate/crds/jobset.yaml",
    "crd/tests/fixtures/kubectl-validate/manifests/error_crd_typo.yaml",
];

/// The corpus files with custom resources of those CRDs' kinds.
const RESOURCES: &[&str] = &[
    "codegen/tests/fixtures/crds/certificate.yaml",
    "codegen/tests/fixtures/crds/foo.yaml",
    "codegen/tests/fixtures/crds/httproute.yaml",
    "codegen/tests/fixtures/crds/podmonitor.yaml",
    "codegen/tests/fixtures/crds/server.yaml",
    "crd/tests/fixtures/kubectl-validate/manifests/error_cel_basic.yaml",
    "crd/tests/fixtures/kubectl-validate/manifests/error_cel_basic_multiple.yaml",
    "crd/tests/fixtures/kubectl-validate/manifests/error_x_list_map_default.yaml",
    "crd/tests/fixtures/kubectl-validate/manifests/jobset.yaml",
    "crd/tests/fixtures/kubectl-validate/manifests/multiple_resources.yaml",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace")
        .to_path_buf()
}

/// The documents of a corpus file, as JSON.
fn documents(file: &str) -> Vec<Value> {
    let path = workspace().join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_slice_multiple::<Value>(&bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .filter(|document| !document.is_null())
        .collect()
}

/// Where a kind's objects are made: its CRD's group, storage-independent plural and scope,
/// found among `crds` by `apiVersion` and `kind`.
fn collection(crds: &[Value], object: &Value) -> Option<String> {
    let api_version = object["apiVersion"].as_str()?;
    let (group, version) = api_version.split_once('/')?;
    let crd = crds.iter().find(|crd| {
        crd["spec"]["group"] == group && crd["spec"]["names"]["kind"] == object["kind"]
    })?;
    let plural = crd["spec"]["names"]["plural"].as_str()?;
    Some(if crd["spec"]["scope"] == "Namespaced" {
        format!("/apis/{group}/{version}/namespaces/{NAMESPACE}/{plural}")
    } else {
        format!("/apis/{group}/{version}/{plural}")
    })
}

/// Every CRD of the corpora created, then every custom resource, then the CRDs deleted.
async fn the_crd_corpora_are_accepted_and_refused_alike(s: &mut Session) {
    s.send(Request::post(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
    ))
    .await;
    let mut accepted = Vec::new();
    for file in DEFINITIONS {
        for crd in documents(file) {
            if crd["kind"] != "CustomResourceDefinition" {
                continue;
            }
            s.send(Request::post(CRDS, &crd).selecting(errors_in_any_order))
                .await;
            if s.last_code() == 201 {
                accepted.push(crd);
            }
        }
    }
    for crd in &accepted {
        let name = crd["metadata"]["name"].as_str().expect("a CRD's name");
        s.wait_until(
            Request::get(&format!("{CRDS}/{name}")).selecting(established),
            |_, crd| established(crd) == json!(true),
        )
        .await;
    }
    for file in RESOURCES {
        for object in documents(file) {
            let Some(collection) = collection(&accepted, &object) else {
                continue;
            };
            s.wait_until(Request::get(&collection), |code, _| code == 200)
                .await;
            s.send(Request::post(&collection, &object)).await;
        }
    }
    for crd in &accepted {
        let name = crd["metadata"]["name"].as_str().expect("a CRD's name");
        let path = format!("{CRDS}/{name}");
        s.send(Request::delete(&path).kind_only()).await;
        s.wait_until(Request::get(&path).kind_only(), |code, _| code == 404)
            .await;
    }
}

/// An answer with its causes sorted and, when it has them, without the message that lists
/// them: kube-apiserver finds a schema's errors walking Go maps, in random order.
pub(crate) fn errors_in_any_order(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(causes) = body
        .pointer_mut("/details/causes")
        .and_then(Value::as_array_mut)
    {
        causes.sort_by_key(ToString::to_string);
        body["message"] = json!("(the causes, in any order)");
    }
    body
}

/// Whether a CRD's `Established` condition is true.
fn established(crd: &Value) -> Value {
    json!(
        crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    )
}

/// A CRD of one version `v1` of `gadgets.<group>` whose schema is `schema`.
fn definition(group: &str, schema: Value) -> Value {
    use apfkit_test_support::crd;
    crd::definition(
        &format!("gadgets.{group}"),
        "Gadget",
        json!([crd::version("v1", true, schema)]),
    )
}

/// The errors of schemas refused for several reasons at once, in kube's order: structural
/// errors, then the schema's own, then its rules' (a node's rules compiled only when nothing
/// at or below it is wrong with the schema); each rule's cost, its `messageExpression`'s
/// compilation or cost, `optionalOldSelf`; the schema's total cost.
async fn schema_errors_come_in_kubes_order(s: &mut Session) {
    let not_structural = json!({"type": "object",
        "additionalProperties": {"type": "string"},
        "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string"},
                "labels": {"type": "object"}}},
            "spec": {"type": "object", "properties": {
                "untyped": {"description": "no type"},
                "list": {"type": "array"},
                "either": {"type": "string", "anyOf": [{"type": "string"}, {"maxLength": 3}]},
                "counted": {"type": "object", "x-kubernetes-list-type": "set"}}}}});
    s.send(Request::post(
        CRDS,
        &definition("structural.example.com", not_structural),
    ))
    .await;
    // Rules beside a node whose schema is wrong still compile; those above it do not.
    let beside = json!({"type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.size() < 20 &&"}],
        "properties": {"spec": {"type": "object", "properties": {
            "closed": {"type": "object", "additionalProperties": false,
                "properties": {"only": {"type": "string"}}},
            "open": {"type": "object", "additionalProperties": true,
                "properties": {"only": {"type": "string"}}},
            "checked": {"type": "object",
                "properties": {"every": {"type": "integer"}, "unit": {"type": "string"}},
                "x-kubernetes-validations": [
                    {"rule": "self.every > 0 &&", "messageExpression": "'x' +"},
                    {"rule": "self.every > 0", "messageExpression": "'got ' + string(self.every)"},
                    {"rule": "self.every > 0", "messageExpression": "self.nosuch"},
                    {"rule": "self.every < 60", "optionalOldSelf": true,
                        "messageExpression": "'x' +"},
                    {"rule": "self.unit.startsWith('a')", "message": "fine"}]}}}}});
    s.send(Request::post(
        CRDS,
        &definition("beside.example.com", beside),
    ))
    .await;
    // Each rule within its own limit, together over the schema's.
    let rules: Vec<Value> = (0..6)
        .map(|i| json!({"rule": format!("self.all(x, x.size() > {i})")}))
        .collect();
    let costly = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"names": {"type": "array", "maxItems": 2000,
            "items": {"type": "string", "maxLength": 4000},
            "x-kubernetes-validations": rules}}}}});
    s.send(Request::post(
        CRDS,
        &definition("costly.example.com", costly),
    ))
    .await;
}

/// apiextensions-apiserver's own cost cases (`apfkit_test_support::cel_costs`), each schema
/// with its rule in a CRD of its own, under a list long enough that the rule's estimated cost
/// times the list's length passes the limit by a factor kube prints to six decimals (between
/// 1.2 and 1.5 when the estimate is upstream's): the estimates of both servers compared to
/// seven digits. Those over the limit already are given as they are.
async fn cel_cost_estimates_are_kubes(s: &mut Session) {
    use apfkit_test_support::cel_costs::{Expect, cases};
    for (i, case) in cases().into_iter().enumerate() {
        for (variant, (schema, expect)) in [("u", case.unbounded), ("b", case.bounded)] {
            let mut schema = schema;
            schema["x-kubernetes-validations"] = json!([{"rule": case.rule}]);
            let field = match expect {
                Expect::OverLimit => schema,
                Expect::Cost(cost) => {
                    let times = 12_000_000_u64.div_ceil(cost.max(1));
                    json!({"type": "array", "maxItems": times, "items": schema})
                }
            };
            let group = format!("c{i}{variant}.costs.example.com");
            let crd = definition(
                &group,
                json!({"type": "object", "properties": {"spec": {"type": "object",
                    "properties": {"field": field}}}}),
            );
            s.send(Request::post(CRDS, &crd)).await;
            if s.last_code() == 201 {
                s.send(Request::delete(&format!("{CRDS}/gadgets.{group}")).kind_only())
                    .await;
            }
        }
    }
}

/// Rules reading `metadata.name`, `metadata.generateName`, `kind` at a resource's root (the
/// custom resource's, an embedded resource's): kube 1.37 sizes the names at 253 and 252
/// characters unless the schema declares less, or declares all four fields itself. Each rule
/// runs often enough that its estimate passes the limit, so both servers print it.
async fn names_at_a_resources_root_are_sized_as_kube_sizes_them(s: &mut Session) {
    let under_root = |i: &str, metadata: Value, extra: Value| {
        let mut schema = json!({"type": "object",
            "x-kubernetes-validations": [
                {"rule": format!("self.spec.items.all(i, {i}.contains(i))")}],
            "properties": {"metadata": metadata, "spec": {"type": "object", "properties": {
                "items": {"type": "array", "maxItems": 100_000,
                    "items": {"type": "string", "maxLength": 10}}}}}});
        if let (Value::Object(schema), Value::Object(extra)) = (&mut schema, extra) {
            schema["properties"].as_object_mut().unwrap().extend(extra);
        }
        schema
    };
    let string = json!({"type": "string"});
    let embedded = |rule: &str, metadata: Value| {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "items": {"type": "array", "maxItems": 100_000, "items": {"type": "object",
                "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"metadata": metadata},
                "x-kubernetes-validations": [{"rule": rule}]}}}}}})
    };
    let schemas = [
        under_root("self.metadata.name", json!({"type": "object"}), json!({})),
        under_root(
            "self.metadata.generateName",
            json!({"type": "object"}),
            json!({}),
        ),
        under_root(
            "self.metadata.name",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 20}}}),
            json!({}),
        ),
        under_root(
            "self.metadata.name",
            json!({"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 300},
                "generateName": {"type": "string", "maxLength": 5}}}),
            json!({}),
        ),
        // All four declared: read as the schema declares them, unbounded here.
        under_root(
            "self.metadata.name",
            json!({"type": "object", "properties": {"name": string, "generateName": string}}),
            json!({"kind": string, "apiVersion": string}),
        ),
        under_root("self.kind", json!({"type": "object"}), json!({})),
        embedded(
            "self.metadata.name.contains('x')",
            json!({"type": "object"}),
        ),
        embedded(
            "self.metadata.generateName.contains('x')",
            json!({"type": "object", "properties": {
                "generateName": {"type": "string", "maxLength": 40}}}),
        ),
        embedded("self.apiVersion.contains('x')", json!({"type": "object"})),
        // What kube declares of `metadata` there is `name` and `generateName` only; and
        // nothing of the three below a resource's root.
        embedded("has(self.metadata.labels)", json!({"type": "object"})),
        json!({"type": "object", "x-kubernetes-validations": [
            {"rule": "self.metadata.labels.size() > 0"}]}),
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"a": string},
            "x-kubernetes-validations": [{"rule": "self.kind == 'x'"}]}}}),
    ];
    for (i, schema) in schemas.into_iter().enumerate() {
        let group = format!("n{i}.names.example.com");
        s.send(Request::post(CRDS, &definition(&group, schema)))
            .await;
        if s.last_code() == 201 {
            s.send(Request::delete(&format!("{CRDS}/gadgets.{group}")).kind_only())
                .await;
        }
    }
}

crate::cases!(
    the_crd_corpora_are_accepted_and_refused_alike,
    schema_errors_come_in_kubes_order,
    cel_cost_estimates_are_kubes,
    names_at_a_resources_root_are_sized_as_kube_sizes_them
);
