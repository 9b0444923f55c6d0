//! Patches of every type, as kube-apiserver applies them.

use apfkit_differential::{Request, Session};
use serde_json::json;

const FLOW: &str = "/apis/flowcontrol.apiserver.k8s.io/v1";

/// A JSON patch `test` of an absent member against `null` passes: absent is null (item 3;
/// kube-rs's `finalizer()` sends exactly this).
async fn a_json_patch_test_of_an_absent_member_against_null_passes(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/json-patch-test");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": {"name": "json-patch-test"},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                "limitResponse": {"type": "Reject"}}}}),
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

/// What a JSON patch that does not apply is answered: 422 with the library's words as the
/// cause; one that is no patch, 400 (item 13).
async fn json_patches_that_do_not_apply_are_answered_in_the_librarys_words(s: &mut Session) {
    let path = format!("{FLOW}/prioritylevelconfigurations/json-patch-failures");
    s.send(Request::post(
        &format!("{FLOW}/prioritylevelconfigurations"),
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration", "metadata": {"name": "json-patch-failures"},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 5,
                "limitResponse": {"type": "Reject"}}}}),
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

crate::cases!(
    a_json_patch_test_of_an_absent_member_against_null_passes,
    json_patches_that_do_not_apply_are_answered_in_the_librarys_words,
);
