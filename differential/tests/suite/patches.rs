//! Patches of every type, as kube-apiserver applies them.

use apfkit_differential::{Request, Session};
use serde_json::json;

use crate::deletion::priority_level;

const FLOW: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

/// A JSON patch `test` of an absent member against `null` passes: absent is null (item 3;
/// kube-rs's `finalizer()` sends exactly this).
async fn a_json_patch_test_of_an_absent_member_against_null_passes(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/json-patch-test");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &priority_level("json-patch-test", json!({})),
    ))
    .await;
    s.send(Request::patch(
        &path,
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/metadata/finalizers", "value": null},
                {"op": "add", "path": "/metadata/finalizers", "value": ["example.com/x"]}]),
    ))
    .await;
    s.send(Request::patch(
        &path,
        "application/json-patch+json",
        &json!([{"op": "test", "path": "/metadata/finalizers", "value": null}]),
    ))
    .await;
    s.send(Request::patch(
        &path,
        "application/json-patch+json",
        &json!([{"op": "remove", "path": "/metadata/finalizers"}]),
    ))
    .await;
}

/// What a JSON patch that does not apply is answered: kube-apiserver's generic 422, without
/// the library's words; one that is no patch, 400 in the words of Go's decoder (item 13).
async fn json_patches_that_do_not_apply_are_answered_as_kube_answers_them(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/json-patch-failures");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &priority_level("json-patch-failures", json!({})),
    ))
    .await;
    for patch in [
        json!([{"op": "remove", "path": "/nothing"}]),
        json!([{"op": "add", "path": "/x/y", "value": 1}]),
        json!([{"op": "test", "path": "/metadata/name", "value": "other"}]),
        json!([{"op": "replace", "path": "/spec/limited/nothing", "value": 1}]),
        json!([{"op": "move", "path": "/a"}]),
        json!([{"op": "frob", "path": "/a"}]),
        json!([{"op": "add", "path": "/metadata/labels/-", "value": "x"}]),
        json!({"op": "add"}),
        json!(["add"]),
    ] {
        s.send(Request::patch(&path, "application/json-patch+json", &patch))
            .await;
    }
}

/// A patch that applies but leaves a value of the wrong type: kube answers 422 about `patch`,
/// the patched document its value (item 13).
async fn a_patch_whose_result_does_not_decode_is_invalid(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/patch-wrong-type");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &priority_level("patch-wrong-type", json!({})),
    ))
    .await;
    for (content_type, patch) in [
        (
            "application/merge-patch+json",
            json!({"spec": {"limited": {"nominalConcurrencyShares": "high"}}}),
        ),
        (
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"a": 1}}, "spec": {"type": "Limited"}}),
        ),
        ("application/merge-patch+json", json!({"spec": "text"})),
        (
            "application/json-patch+json",
            json!([{"op": "replace", "path": "/spec/limited/nominalConcurrencyShares",
                "value": "high"}]),
        ),
        (
            "application/json-patch+json",
            json!([{"op": "add", "path": "/metadata/labels", "value": {"a": true}}]),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"spec": {"limited": {"nominalConcurrencyShares": "high"}}}),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"metadata": {"labels": {"a": 1}}}),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"spec": {"limited": {"nominalConcurrencyShares": 1.5}}}),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"spec": {"limited": {"nominalConcurrencyShares": 7.0, "lendablePercent": [1]}}}),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"metadata": {"annotations": {"a": true}, "finalizers": "f"}}),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"spec": "text"}),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"spec": {"limited": {"nominalConcurrencyShares": 6.0}}}),
        ),
        (
            "application/merge-patch+json",
            json!({"spec": {"limited": {"nominalConcurrencyShares": 6.0}}}),
        ),
        (
            "application/strategic-merge-patch+json",
            json!({"spec": {"type": 1}}),
        ),
        (
            "application/merge-patch+json",
            json!({"metadata": {"annotations": {"note": "<b> & 'c'"}, "labels": {"x": 2}}}),
        ),
    ] {
        s.send(Request::patch(&path, content_type, &patch)).await;
    }
}

crate::cases!(
    a_json_patch_test_of_an_absent_member_against_null_passes,
    json_patches_that_do_not_apply_are_answered_as_kube_answers_them,
    a_patch_whose_result_does_not_decode_is_invalid,
);
