//! Bodies a server cannot decode, answered in Go's words (issue 55, item 13): JSON cut
//! short or with text after it, a body that is not an object, `null` and `{}`, an
//! `apiVersion` or `kind` of the wrong type, YAML that is a list, on a built-in kind and a
//! core kind.

use apfkit_differential::{Request, Session};
use serde_json::json;

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const SERVICES: &str = "/api/v1/namespaces/default/services";

/// Bodies that are not JSON objects, or not JSON at all.
async fn bodies_that_do_not_decode_are_refused_in_gos_words(s: &mut Session) {
    for (path, body) in [
        (
            LEVELS,
            &b"{\"apiVersion\": \"flowcontrol.apiserver.k8s.io/v1\", \"kind\""[..],
        ),
        (LEVELS, b"[1, 2]"),
        (LEVELS, b"\"text\""),
        (LEVELS, b"null"),
        (LEVELS, b""),
        (LEVELS, b"{}"),
        (LEVELS, b"{\"kind\": 5}"),
        (
            SERVICES,
            b"{\"apiVersion\": \"v1\", \"kind\": \"Service\", \"metadata\": {",
        ),
        (
            SERVICES,
            b"{\"apiVersion\": \"v1\", \"kind\": \"Service\"} trailing",
        ),
    ] {
        s.send(Request::post(path, &json!(null)).raw("application/json", body))
            .await;
    }
    s.send(Request::post(LEVELS, &json!(null)).raw("application/yaml", b"- 1\n- 2\n"))
        .await;
}

/// A value of the wrong JSON type, at the top, in metadata, in a spec, in a list and in a
/// map: Go's `json: cannot unmarshal … into Go struct field …` with the field's path.
async fn values_of_the_wrong_type_are_refused_in_gos_words(s: &mut Session) {
    let level = |spec: serde_json::Value, metadata: serde_json::Value| {
        let mut metadata = metadata;
        metadata["name"] = json!("wrong-type");
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": metadata, "spec": spec})
    };
    let limited = |shares: serde_json::Value| {
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
            "limitResponse": {"type": "Reject"}}})
    };
    for body in [
        level(limited(json!("high")), json!({})),
        level(limited(json!(1.5)), json!({})),
        level(limited(json!(1e20)), json!({})),
        level(limited(json!(-1)), json!({})),
        level(limited(json!([1])), json!({})),
        level(json!("spec"), json!({})),
        level(json!({"type": 1}), json!({})),
        level(limited(json!(5)), json!({"labels": {"a": 1}})),
        level(limited(json!(5)), json!({"labels": ["a"]})),
        level(limited(json!(5)), json!({"finalizers": "a"})),
        level(limited(json!(5)), json!({"generation": "1"})),
        level(limited(json!(5)), json!({"creationTimestamp": 5})),
        level(limited(json!(5)), json!({"creationTimestamp": "yesterday"})),
        level(
            limited(json!(5)),
            json!({"creationTimestamp": "2026-02-30T00:00:00Z"}),
        ),
        level(limited(json!(5)), json!({"creationTimestamp": null})),
        level(limited(json!(5)), json!({"name": 7})),
    ] {
        s.send(Request::post(LEVELS, &body)).await;
    }
    s.send(Request::post(
        FLOW_SCHEMAS,
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "wrong-type"},
            "spec": {"priorityLevelConfiguration": {"name": "global-default"},
                "rules": [{"subjects": [{"kind": "User", "user": {"name": 3}}]}]}}),
    ))
    .await;
    s.send(Request::post(
        SERVICES,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wrong-type"},
            "spec": {"ports": [{"port": "80"}]}}),
    ))
    .await;
    s.send(Request::post(
        SERVICES,
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wrong-type"},
            "spec": {"selector": {"app": true}}}),
    ))
    .await;
}

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const HOLDERS: &str = "/apis/decoding.example.com/v1/namespaces/default/holders";
const MERGE_PATCH: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

/// A custom resource whose metadata, at its root or in an embedded resource
/// (`x-kubernetes-embedded-resource`), has a field of the wrong type, or is not an object;
/// and an embedded resource's `apiVersion` or `kind` that is not a string.
async fn a_custom_resources_metadata_of_the_wrong_type_is_refused(s: &mut Session) {
    let embedded = json!({"type": "object", "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "holders.decoding.example.com"},
        "spec": {"group": "decoding.example.com", "scope": "Namespaced",
            "names": {"plural": "holders", "singular": "holder", "kind": "Holder"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "template": embedded,
                        "items": {"type": "array", "items": embedded},
                        "byName": {"type": "object", "additionalProperties": embedded}}}}}}}]}});
    s.send(Request::post(CRDS, &crd).kind_only()).await;
    s.wait_until(Request::get(HOLDERS), |code, _| code == 200)
        .await;
    let holder = |metadata: serde_json::Value, spec: serde_json::Value| {
        json!({"apiVersion": "decoding.example.com/v1", "kind": "Holder",
            "metadata": metadata, "spec": spec})
    };
    let named = json!({"name": "holder"});
    for body in [
        holder(json!({"name": "holder", "generation": "one"}), json!({})),
        holder(json!({"name": "holder", "labels": ["a"]}), json!({})),
        holder(json!("holder"), json!({})),
        holder(
            named.clone(),
            json!({"template": {"metadata": {"name": "t", "generation": "one"}}}),
        ),
        holder(
            named.clone(),
            json!({"template": {"metadata": {"labels": {"a": 1}, "other": true}}}),
        ),
        holder(named.clone(), json!({"template": {"metadata": "t"}})),
        holder(named.clone(), json!({"template": {"metadata": null}})),
        holder(named.clone(), json!({"template": {"kind": 5}})),
        holder(named.clone(), json!({"template": {"apiVersion": ["v1"]}})),
        holder(
            named.clone(),
            json!({"items": [{"metadata": {"name": "ok"}}, {"metadata": {"finalizers": "f"}}]}),
        ),
        holder(
            named.clone(),
            json!({"byName": {"a": {"metadata": {"creationTimestamp": "yesterday"}}}}),
        ),
        holder(
            named.clone(),
            json!({"template": {"metadata": {"name": "t", "annotations": {"a": "b"}}},
                "items": [{"kind": "K", "metadata": {"namespace": "n"}}]}),
        ),
    ] {
        // kube walks a schema's properties in Go's map order: causes in any order.
        s.send(Request::post(HOLDERS, &body).selecting(crate::corpora::errors_in_any_order))
            .await;
        if s.last_code() == 201 {
            s.send(Request::delete(&format!("{HOLDERS}/holder"))).await;
        }
    }
    // A patch whose result does not decode: 422 about `patch`, the patched object quoted.
    s.send(Request::post(
        HOLDERS,
        &holder(json!({"name": "patched"}), json!({})),
    ))
    .await;
    let patched = format!("{HOLDERS}/patched");
    for (patch, body) in [
        (
            MERGE_PATCH,
            json!({"spec": {"template": {"metadata": {"generation": "one"}}}}),
        ),
        (MERGE_PATCH, json!({"metadata": {"labels": ["a"]}})),
        (
            JSON_PATCH,
            json!([{"op": "add", "path": "/metadata/finalizers", "value": "f"}]),
        ),
    ] {
        s.send(Request::patch(&patched, patch, &body)).await;
    }
}

/// An embedded resource's type and metadata held to kube's rules (apiextensions-apiserver's
/// `objectmeta.Validate`: `apiVersion` and `kind` required and well formed, the metadata to
/// `ValidateObjectMeta` with any name a path segment allows).
async fn an_embedded_resources_metadata_is_validated(s: &mut Session) {
    let embedded = json!({"type": "object", "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "templates.decoding.example.com"},
        "spec": {"group": "decoding.example.com", "scope": "Namespaced",
            "names": {"plural": "templates", "singular": "template", "kind": "Template"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "template": embedded,
                        "items": {"type": "array", "items": embedded}}}}}}}]}});
    const TEMPLATES: &str = "/apis/decoding.example.com/v1/namespaces/default/templates";
    s.send(Request::post(CRDS, &crd).kind_only()).await;
    s.wait_until(Request::get(TEMPLATES), |code, _| code == 200)
        .await;
    let with = |template: serde_json::Value| {
        json!({"apiVersion": "decoding.example.com/v1", "kind": "Template",
            "metadata": {"name": "template"}, "spec": {"template": template}})
    };
    let typed = |metadata: serde_json::Value| {
        with(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}))
    };
    for body in [
        with(json!({})),
        with(json!({"apiVersion": "", "kind": ""})),
        with(json!({"apiVersion": "a/b/c", "kind": "Bad_Kind"})),
        with(json!({"apiVersion": "apps/v1", "kind": "Deployment-1"})),
        typed(json!({"name": "a/b"})),
        typed(json!({"name": ".."})),
        typed(json!({"name": "UPPER.case_ok"})),
        typed(json!({"generateName": "x%", "namespace": "Bad_NS"})),
        typed(json!({"labels": {"bad key!": "v", "k": "bad value!"}})),
        typed(json!({"annotations": {"bad key!": "v"}})),
        typed(json!({"finalizers": ["bad finalizer", "orphan", "foregroundDeletion"]})),
        typed(json!({"generation": -1})),
        typed(json!({"ownerReferences": [{}]})),
        typed(json!({"ownerReferences": [
            {"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u", "controller": true},
            {"apiVersion": "v1", "kind": "K", "name": "m", "uid": "v", "controller": true}]})),
        typed(json!({"managedFields": [{"operation": "Delete", "fieldsType": "FieldsV2"}]})),
        typed(
            json!({"managedFields": [{"manager": "m", "operation": "Apply",
            "fieldsType": "FieldsV1", "apiVersion": "v1"}]}),
        ),
        typed(
            json!({"name": "ok", "namespace": "ns", "uid": "anything", "resourceVersion": "x",
            "creationTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": -5}),
        ),
        json!({"apiVersion": "decoding.example.com/v1", "kind": "Template",
            "metadata": {"name": "template"}, "spec": {"items": [
                {"apiVersion": "v1", "kind": "K", "metadata": {"name": "ok"}},
                {"kind": "K", "metadata": {"labels": {"-": "-"}}}]}}),
    ] {
        // kube finds an embedded resource's errors walking a Go map, in random order.
        s.send(Request::post(TEMPLATES, &body).selecting(crate::corpora::errors_in_any_order))
            .await;
        if s.last_code() == 201 {
            s.send(Request::delete(&format!("{TEMPLATES}/template")))
                .await;
        }
    }
}

/// A FlowSchema's and a custom resource's owner references and managed fields held to
/// `ValidateObjectMeta` (managed fields a request sends that do not decode are replaced by
/// the server's, as kube's field manager replaces them).
async fn owner_references_and_managed_fields_are_validated(s: &mut Session) {
    let schema = |name: &str, metadata: serde_json::Value| {
        let mut metadata = metadata;
        metadata["name"] = json!(name);
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": metadata,
            "spec": {"priorityLevelConfiguration": {"name": "global-default"}}})
    };
    let owner = |api_version: &str, kind: &str, name: &str, controller: bool| {
        json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": format!("uid-{name}"),
            "controller": controller})
    };
    for (name, metadata) in [
        ("owned-empty", json!({"ownerReferences": [{}]})),
        (
            "owned-twice",
            json!({"ownerReferences": [owner("v1", "K", "a", true), owner("a/b/c", "K", "b", true)]}),
        ),
        (
            "owned-event",
            json!({"ownerReferences": [owner("v1", "Event", "e", false)]}),
        ),
        (
            "owned-fine",
            json!({"ownerReferences": [owner("apps/v1", "Deployment", "d", true)]}),
        ),
        (
            "managed-bad",
            json!({"managedFields": [{"operation": "Delete", "fieldsType": "FieldsV2"}]}),
        ),
        (
            "managed-unprintable",
            json!({"managedFields": [{"manager": "a\u{7}b", "operation": "Update",
                "fieldsType": "FieldsV1", "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
                "fieldsV1": {"f:spec": {}}}]}),
        ),
    ] {
        s.send(Request::post(FLOW_SCHEMAS, &schema(name, metadata)))
            .await;
        if s.last_code() == 201 {
            s.send(Request::delete(&format!("{FLOW_SCHEMAS}/{name}")))
                .await;
        }
    }
}

/// YAML bodies that do not parse, answered in go-yaml v2's words and line numbering
/// (`yaml: line 2: mapping values are not allowed in this context`): scanner and parser
/// errors, on the first line and below it, in flow and block collections; JSON-like flow
/// collections read as YAML; nothing read after the first document. (Where go-yaml's older
/// libyaml and serde_yaml_ng's part, decision 267 lists.) A collection as a mapping key is
/// go-yaml's own refusal.
async fn yaml_that_does_not_parse_is_refused_in_go_yamls_words(s: &mut Session) {
    let head = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n";
    let bodies: Vec<String> = [
        "[1, 2",
        "{a: 1",
        "a: [1, 2\n",
        "a: b: c",
        "key: 'unclosed",
        "key: \"unclosed",
        "- a\nb: c",
        "a:\n  - b\n c: d",
        "@at",
        "`tick",
        "a: &x 1\nb: *y",
        "!<tag> a: 1",
        "a: |\n  text\n b",
        "a:\n\tb: 1",
        "? a\n? b\n: c: d",
        "[a, b]: c",
        "spec:\n  ? {x: 1, a: [2, null, true]}\n  : v",
        "---\na: 1\n--- x: [",
        "{apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: PriorityLevelConfiguration}",
    ]
    .into_iter()
    .flat_map(|body| [body.to_owned(), format!("{head}{body}")])
    .collect();
    for body in &bodies {
        s.send(Request::post(LEVELS, &json!(null)).raw("application/yaml", body.as_bytes()))
            .await;
    }
}

/// A write refused after its body decoded still carries the decoder's warnings (unknown
/// fields), on a create, an update and a patch, as kube's warning recorder writes them on any
/// answer.
async fn a_refused_writes_answer_keeps_the_decoders_warnings(s: &mut Session) {
    let level = |name: &str, spec: serde_json::Value| {
        json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": {"name": name, "bogus": 1},
            "spec": spec, "extra": true})
    };
    let limited = json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
        "limitResponse": {"type": "Reject"}}});
    s.send(Request::post(
        LEVELS,
        &level("warned", json!({"type": "Limited"})),
    ))
    .await;
    s.send(Request::post(LEVELS, &level("warned", limited.clone())))
        .await;
    let path = format!("{LEVELS}/warned");
    s.send(Request::put(
        &path,
        &level("warned", json!({"type": "Bogus"})),
    ))
    .await;
    s.send(Request::patch(
        &path,
        "application/merge-patch+json",
        &json!({"spec": {"type": "Exempt", "unknownHere": 1}}),
    ))
    .await;
    s.send(Request::delete(&path)).await;
}

crate::cases!(
    bodies_that_do_not_decode_are_refused_in_gos_words,
    values_of_the_wrong_type_are_refused_in_gos_words,
    a_custom_resources_metadata_of_the_wrong_type_is_refused,
    an_embedded_resources_metadata_is_validated,
    owner_references_and_managed_fields_are_validated,
    yaml_that_does_not_parse_is_refused_in_go_yamls_words,
    a_refused_writes_answer_keeps_the_decoders_warnings,
);
