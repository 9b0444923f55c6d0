//! The OpenAPI documents of custom resources, as apiextensions-apiserver builds them: each
//! served version's v3 document, and the CRD's paths and definitions in `/openapi/v2`
//! (upstream's e2e "CustomResourcePublishOpenAPI" reads them there), as versions stop being
//! served and CRDs go.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

use crate::routes::reached_from;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
/// The name kubectl's and client-go's `OpenAPISchema` ask `/openapi/v2` in protobuf by.
pub(crate) const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const GROUP_V1: &str = "/openapi/v3/apis/published.example.com/v1";
const GROUP_V2: &str = "/openapi/v3/apis/published.example.com/v2";

/// A namespaced kind with every feature the builder handles in its first version (status
/// and scale, an int-or-string, a nullable field, an embedded resource, a default, a list
/// map, rules, selectable fields), an open schema in its second, an unserved third.
fn foos() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.published.example.com"},
        "spec": {"group": "published.example.com", "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}, "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas"}},
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                    "schema": {"openAPIV3Schema": foo_schema()}},
                {"name": "v2", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}},
                {"name": "v3", "served": false, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
}

/// Foo's `v1` schema.
fn foo_schema() -> Value {
    json!({"description": "Foo CRD", "type": "object",
                        "properties": {
                            "spec": {"type": "object", "description": "Specification of Foo",
                                "required": ["color"],
                                "properties": {
                                    "color": {"type": "string", "enum": ["red", "blue"]},
                                    "replicas": {"type": "integer", "format": "int32",
                                        "default": 1, "minimum": 0, "maximum": 100},
                                    "ratio": {"type": "number", "maximum": 0.75},
                                    "age": {"type": "string", "nullable": true},
                                    "port": {"x-kubernetes-int-or-string": true},
                                    "template": {"type": "object",
                                        "x-kubernetes-embedded-resource": true,
                                        "x-kubernetes-preserve-unknown-fields": true},
                                    "bars": {"type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {"type": "object", "required": ["name"],
                                            "properties": {"name": {"type": "string"},
                                                "labels": {"type": "object",
                                                    "additionalProperties": {"type": "string"}}},
                                            "x-kubernetes-validations":
                                                [{"rule": "self.name != 'x'"}]}},
                                    "extra": {"type": "object",
                                        "x-kubernetes-preserve-unknown-fields": true,
                                        "properties": {"kept": {"type": "string"}}}}},
                            "status": {"type": "object", "properties": {
                                "replicas": {"type": "integer"},
                                "when": {"type": "string", "format": "date-time"}}}}})
}

/// A cluster-scoped kind of the same group and version, named with a vowel ("create an
/// Ostrich").
fn ostriches() -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "ostriches.published.example.com"},
        "spec": {"group": "published.example.com", "scope": "Cluster",
            "names": {"plural": "ostriches", "singular": "ostrich", "kind": "Ostrich"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "speed": {"type": "number"}}}}}}}]}})
}

/// The group's part of `/openapi/v2`: its paths, and the definitions and shared parameters
/// they reach.
fn published_part(document: &Value) -> Value {
    let paths = document["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(path, _)| path.contains("/published.example.com/"))
        .map(|(path, item)| (path.clone(), item.clone()))
        .collect();
    reached_from(document, paths)
}

/// The names of the group's definitions in `/openapi/v2`.
fn published_definitions(document: &Value) -> Vec<String> {
    document["definitions"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, _)| name.clone())
        .filter(|name| name.starts_with("com.example.published."))
        .collect()
}

/// Whether `bytes` are the v2 document `json` as gnostic's protobuf message, as kube-openapi
/// makes it of the JSON it serves: an operation's kind is a Go struct (group, version, kind)
/// in kube-aggregator's paths, a map (sorted) in kube-apiserver's and
/// apiextensions-apiserver's.
pub(crate) fn is_gnostics_message(json: &Value, bytes: &[u8]) -> bool {
    let kind_is_struct = |path: &str| path.starts_with("/apis/apiregistration.k8s.io/");
    apfkit_wire::gnostic::encode(json, kind_is_struct) == bytes
}

/// Each served version's v3 document and the group's part of v2 are kube's; a version no
/// longer served leaves v2, and a deleted CRD both.
async fn a_crds_openapi_documents_are_kubes(s: &mut Session) {
    s.send(Request::post(CRDS, &foos()).kind_only()).await;
    s.send(Request::post(CRDS, &ostriches()).kind_only()).await;
    s.wait_until(Request::get(GROUP_V1), |code, document| {
        code == 200
            && [
                "com.example.published.v1.Foo",
                "com.example.published.v1.Ostrich",
            ]
            .iter()
            .all(|name| document["components"]["schemas"].get(name).is_some())
    })
    .await;
    // Each version's document is built at each server's pace (under load, v2's after v1's).
    s.wait_until(Request::get(GROUP_V2), |code, document| {
        code == 200
            && document["components"]["schemas"]
                .get("com.example.published.v2.Foo")
                .is_some()
    })
    .await;
    s.send(Request::get("/openapi/v3/apis/published.example.com/v3"))
        .await;
    s.wait_until(
        Request::get("/openapi/v3").selecting(|index| {
            let listed: Vec<&String> = index["paths"]
                .as_object()
                .into_iter()
                .flat_map(|paths| paths.keys())
                .filter(|root| root.contains("published.example.com"))
                .collect();
            json!(listed)
        }),
        |_, index| {
            [
                "apis/published.example.com/v1",
                "apis/published.example.com/v2",
            ]
            .iter()
            .all(|root| index["paths"].get(*root).is_some())
        },
    )
    .await;
    s.wait_until(
        Request::get("/openapi/v2").selecting(published_part),
        |_, document| published_definitions(document).len() == 6,
    )
    .await;
    // In protobuf: gnostic's message of the JSON, the CRDs' paths included.
    s.agreeing(
        Request::get("/openapi/v2").selecting(published_part),
        Request::get("/openapi/v2").accept(V2_PROTOBUF),
        is_gnostics_message,
    )
    .await;
    s.send(
        Request::patch(
            &format!("{CRDS}/foos.published.example.com"),
            "application/json-patch+json",
            &json!([{"op": "replace", "path": "/spec/versions/1/served", "value": false}]),
        )
        .kind_only(),
    )
    .await;
    // kube-apiserver keeps serving the v3 document of a version no longer served until the
    // CRD goes (an upstream bug apfkit does not keep: docs/decisions.md), so only v2 is
    // compared here.
    s.wait_until(
        Request::get("/openapi/v2").selecting(published_part),
        |_, document| published_definitions(document).len() == 4,
    )
    .await;
    for name in ["foos", "ostriches"] {
        let crd = format!("{CRDS}/{name}.published.example.com");
        s.send(Request::delete(&crd).kind_only()).await;
        s.wait_until(Request::get(&crd).kind_only(), |code, _| code == 404)
            .await;
    }
    s.wait_until(Request::get(GROUP_V1), |code, _| code == 404)
        .await;
    s.wait_until(
        Request::get("/openapi/v2").selecting(published_part),
        |_, document| published_definitions(document).is_empty(),
    )
    .await;
}

crate::cases!(a_crds_openapi_documents_are_kubes);
