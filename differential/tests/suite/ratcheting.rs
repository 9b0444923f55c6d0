//! Validation ratcheting: an update keeps a custom resource's unchanged values that the CRD's
//! newer schema or rules refuse, where the old value correlates (a property, a map-list item
//! by its keys), and refuses changed ones and uncorrelatable ones (items of atomic lists and
//! sets), as upstream's e2e "CRDValidationRatcheting" tests expect.

use apfkit_differential::{Request, Session};
use serde_json::{Value, json};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const CRD: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ratchets.ratcheting.example.com";
const RATCHETS: &str = "/apis/ratcheting.example.com/v1/namespaces/default/ratchets";
const MERGE: &str = "application/merge-patch+json";

/// A string field refused unless it is "ok" once `strict`, by an enum or a rule (whose
/// error on an unchanged value is answered as a warning).
fn field(strict: bool, by_rule: bool) -> Value {
    match (strict, by_rule) {
        (false, _) => json!({"type": "string"}),
        (true, false) => json!({"type": "string", "enum": ["ok"]}),
        (true, true) => json!({"type": "string",
            "x-kubernetes-validations": [{"rule": "self == 'ok'"}]}),
    }
}

fn schema(strict: bool) -> Value {
    let enumerated = field(strict, false);
    let ruled = field(strict, true);
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "field": enumerated,
        "ruled": ruled,
        "other": {"type": "string"},
        "struct": {"type": "object", "properties": {"field": enumerated}},
        "list": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["key"],
            "items": {"type": "object", "required": ["key"],
                "properties": {"key": {"type": "string"}, "field": enumerated}}},
        "map": {"type": "object", "additionalProperties": {"type": "object",
            "properties": {"field": enumerated}}},
        "atomic": {"type": "array", "items": enumerated},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": enumerated},
    }}}})
}

fn crd(strict: bool) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "ratchets.ratcheting.example.com"},
        "spec": {"group": "ratcheting.example.com", "scope": "Namespaced",
            "names": {"plural": "ratchets", "singular": "ratchet", "kind": "Ratchet"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema(strict)}}]}})
}

/// Written while anything went, each value "no".
fn ratchet(name: &str) -> Value {
    json!({"apiVersion": "ratcheting.example.com/v1", "kind": "Ratchet",
        "metadata": {"name": name},
        "spec": {"field": "no", "ruled": "no", "other": "a",
            "struct": {"field": "no"},
            "list": [{"key": "a", "field": "no"}, {"key": "b", "field": "no"}],
            "map": {"a": {"field": "no"}},
            "atomic": ["no"], "set": ["no"]}})
}

async fn an_update_keeps_unchanged_values_a_newer_schema_refuses(s: &mut Session) {
    s.send(Request::post(CRDS, &crd(false)).kind_only()).await;
    s.wait_until(Request::get(RATCHETS), |code, _| code == 200)
        .await;
    s.send(Request::post(RATCHETS, &ratchet("kept"))).await;
    // The CRD's schema changes; each server takes it on at its own pace.
    s.send(
        Request::patch(
            CRD,
            MERGE,
            &json!({"spec": {"versions": [{"name": "v1",
        "served": true, "storage": true, "schema": {"openAPIV3Schema": schema(true)}}]}}),
        )
        .kind_only(),
    )
    .await;
    // One refused value only: kube-openapi reports several properties' errors in Go's
    // random map order.
    let probe = json!({"apiVersion": "ratcheting.example.com/v1", "kind": "Ratchet",
        "metadata": {"name": "probe"}, "spec": {"field": "no"}});
    s.wait_until(
        Request::post(&format!("{RATCHETS}?dryRun=All"), &probe),
        |code, _| code == 422,
    )
    .await;
    let kept = format!("{RATCHETS}/kept");
    // Only a label changes: every refused value is unchanged.
    s.send(Request::patch(
        &kept,
        MERGE,
        &json!({"metadata": {"labels": {"a": "b"}}}),
    ))
    .await;
    // A field beside them changes.
    s.send(Request::patch(
        &kept,
        MERGE,
        &json!({"spec": {"other": "b"}}),
    ))
    .await;
    // An item of a map list is added: the others correlate by their keys.
    s.send(Request::patch(
        &kept,
        MERGE,
        &json!({"spec": {"list": [{"key": "a", "field": "no"}, {"key": "b", "field": "no"},
            {"key": "c", "field": "ok"}]}}),
    ))
    .await;
    // Changed values are held to the new schema and rules (one at a time: kube-openapi
    // reports sibling properties' errors in Go's random map order, and the rules' warnings
    // come in it too, so one rule only warns here).
    for changed in [
        json!({"field": "still no"}),
        json!({"struct": {"field": "still no"}}),
        json!({"map": {"a": {"field": "still no"}}}),
        json!({"ruled": "still no"}),
    ] {
        s.send(Request::patch(&kept, MERGE, &json!({"spec": changed})))
            .await;
    }
    // Items of an atomic list and of a set do not correlate: a changed list is held whole.
    for list in ["atomic", "set"] {
        s.send(Request::patch(
            &kept,
            MERGE,
            &json!({"spec": {list: ["no", "ok"]}}),
        ))
        .await;
    }
    s.send(Request::delete(CRD).kind_only()).await;
    s.wait_until(Request::get(CRD), |code, _| code == 404).await;
}

crate::cases!(an_update_keeps_unchanged_values_a_newer_schema_refuses);
