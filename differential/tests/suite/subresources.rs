//! What a status write may change of the object (issue 55, item 9), and how a custom
//! resource's versions treat a field only one of them defines (item 17).

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

use crate::deletion::priority_level;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const MERGE: &str = "application/merge-patch+json";
const FLOW: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

/// A change of every part of an object that a status write might carry: labels,
/// annotations, finalizers, the spec and the status.
fn everything_changed(status: Value) -> Value {
    json!({"metadata": {"labels": {"a": "changed", "new": "1"},
        "annotations": {"x": "changed", "new": "1"}, "finalizers": ["example.com/f"]},
        "spec": {"size": 9}, "status": status})
}

/// A merge patch and an update of `…/status` that change labels, annotations, finalizers and
/// the spec beside the status: what each kind keeps of them, on a custom resource and on a
/// built-in kind.
async fn a_status_write_changes_what_its_kind_lets_it(s: &mut Session) {
    let group = "status.example.com";
    let widgets = format!("/apis/{group}/v1/namespaces/default/widgets");
    s.send(Request::post(
        CRDS,
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("widgets.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object",
                            "properties": {"size": {"type": "integer"}}},
                        "status": {"type": "object",
                            "properties": {"phase": {"type": "string"}}}}}}}]}}),
    ))
    .await;
    s.wait_until(Request::get(&widgets), |code, _| code == 200)
        .await;
    s.send(Request::post(
        &widgets,
        &json!({"apiVersion": format!("{group}/v1"), "kind": "Widget",
            "metadata": {"name": "w", "labels": {"a": "b"}, "annotations": {"x": "y"}},
            "spec": {"size": 1}}),
    ))
    .await;
    let status = format!("{widgets}/w/status");
    s.send(Request::patch(
        &status,
        MERGE,
        &everything_changed(json!({"phase": "Ready"})),
    ))
    .await;
    s.send(Request::get(&format!("{widgets}/w"))).await;
    let mut whole = everything_changed(json!({"phase": "Done"}));
    whole["apiVersion"] = json!(format!("{group}/v1"));
    whole["kind"] = json!("Widget");
    whole["metadata"]["name"] = json!("w");
    whole["metadata"]["annotations"] = json!({"only": "this"});
    // Without a resource version: custom resources allow no unconditional update.
    s.send(Request::put(&status, &whole)).await;
    let stored = s.send(Request::get(&format!("{widgets}/w"))).await;
    whole["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
    s.send(Request::put(&status, &whole)).await;
    s.send(Request::get(&format!("{widgets}/w"))).await;
    // The object itself without one, and with a stale one.
    whole["metadata"]["resourceVersion"] = json!(null);
    s.send(Request::put(&format!("{widgets}/w"), &whole)).await;
    whole["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"].clone();
    s.send(Request::put(&format!("{widgets}/w"), &whole)).await;
    s.send(Request::delete(&format!("{CRDS}/widgets.{group}")))
        .await;

    // A built-in kind: a PriorityLevelConfiguration's status.
    let levels = format!("{FLOW}/prioritylevelconfigurations");
    s.send(Request::post(
        &levels,
        &priority_level(
            "status-write",
            json!({"labels": {"a": "b"}, "annotations": {"x": "y"}}),
        ),
    ))
    .await;
    let level = format!("{levels}/status-write");
    s.send(Request::patch(
        &format!("{level}/status"),
        MERGE,
        &json!({"metadata": {"labels": {"a": "changed"}, "annotations": {"x": "changed"},
                "finalizers": ["example.com/f"]},
            "spec": {"limited": {"nominalConcurrencyShares": 9}},
            "status": {"conditions": [{"type": "Example", "status": "True"}]}}),
    ))
    .await;
    s.send(Request::get(&level)).await;
    s.send(Request::delete(&level)).await;
}

/// A CRD of two versions converted by `None`, where only `v2` (not the storage version)
/// defines `spec.extra`, an enum: a value outside it, one inside it written as `v2` and read
/// as each version, and the field sent as `v1`, which does not define it.
async fn a_field_only_one_version_defines(s: &mut Session) {
    let group = "versions.example.com";
    let extra = json!({"type": "string", "enum": ["a", "b"]});
    let schema = |with_extra: bool| {
        let mut properties = json!({"size": {"type": "integer"}});
        if with_extra {
            properties["extra"] = extra.clone();
        }
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": properties}}}})
    };
    s.send(Request::post(
        CRDS,
        &json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("gizmos.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "schema": schema(false)},
                    {"name": "v2", "served": true, "storage": false, "schema": schema(true)}]}}),
    ))
    .await;
    let gizmos = |version: &str| format!("/apis/{group}/{version}/namespaces/default/gizmos");
    s.wait_until(Request::get(&gizmos("v2")), |code, _| code == 200)
        .await;
    let gizmo = |version: &str, name: &str, extra: &str| {
        json!({"apiVersion": format!("{group}/{version}"), "kind": "Gizmo",
            "metadata": {"name": name}, "spec": {"size": 1, "extra": extra}})
    };
    s.send(Request::post(&gizmos("v2"), &gizmo("v2", "outside", "c")))
        .await;
    s.send(Request::post(&gizmos("v2"), &gizmo("v2", "inside", "a")))
        .await;
    s.send(Request::get(&format!("{}/inside", gizmos("v2"))))
        .await;
    s.send(Request::get(&format!("{}/inside", gizmos("v1"))))
        .await;
    s.send(Request::post(&gizmos("v1"), &gizmo("v1", "older", "c")))
        .await;
    s.send(Request::get(&format!("{}/older", gizmos("v2"))))
        .await;
    s.send(Request::patch(
        &format!("{}/inside", gizmos("v2")),
        MERGE,
        &json!({"spec": {"extra": "z"}}),
    ))
    .await;
    s.send(Request::delete(&format!("{CRDS}/gizmos.{group}")))
        .await;
}

crate::cases!(
    a_status_write_changes_what_its_kind_lets_it,
    a_field_only_one_version_defines,
);
